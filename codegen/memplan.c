/* codegen/memplan.c -- static memory planning: one arena, fixed offsets.
 *
 * Reads MemEval.inst (start, end, owned, base) and MemEval.temp_bytes;
 * writes Instance.offset for every owning instance (views keep -1: the
 * emitter addresses them through their base) and MemEval.temp_offset for
 * every step that has temporaries. A step's temporaries (workspace and
 * accumulation temporaries) are planned as one block live during that step
 * only, so that arena mode places every byte the MemEval counts.
 *
 * The algorithm is greedy by size with best fit (Pisarchyk & Lee, "Efficient
 * memory management for deep neural net inference", 2020): blocks in order
 * of decreasing size; each goes into the smallest gap, among the blocks
 * already placed that are live at some common step, that fits it. That is
 * quadratic in the number of blocks, fine for the few thousand instances of
 * GPT-2-sized graphs.
 */
#include <stdlib.h>
#include <string.h>

#include "ir.h"
#include "dag.h"

enum { MP_ALIGN = 256 };

typedef struct Block {
	int64_t size;           /* rounded up to MP_ALIGN */
	int start, end;         /* live steps, inclusive */
	int64_t off;            /* result, or -1 while unplaced */
	int64_t *dst;           /* where the offset goes */
} Block;

static int64_t
align_up(int64_t n)
{
	return (n + MP_ALIGN - 1) / MP_ALIGN * MP_ALIGN;
}

static int
by_size(const void *pa, const void *pb)
{
	const Block *a = pa, *b = pb;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->dst > b->dst) - (a->dst < b->dst);
}

static int
by_off(const void *pa, const void *pb)
{
	const Block *a = *(const Block *const *)pa, *b = *(const Block *const *)pb;
	return (a->off > b->off) - (a->off < b->off);
}

/* The lowest-waste offset for b among the placed blocks live with it. */
static int64_t
best_fit(Block *b, Block *placed, int nplaced, Block **tmp)
{
	int n = 0;
	for (int i = 0; i < nplaced; i++)
		if (placed[i].start <= b->end && b->start <= placed[i].end)
			tmp[n++] = &placed[i];
	qsort(tmp, (size_t)n, sizeof *tmp, by_off);
	int64_t best = -1, bestgap = INT64_MAX, top = 0;
	for (int i = 0; i < n; i++) {
		int64_t gap = tmp[i]->off - top;
		if (gap >= b->size && gap < bestgap) {
			best = top;
			bestgap = gap;
		}
		if (tmp[i]->off + tmp[i]->size > top)
			top = tmp[i]->off + tmp[i]->size;
	}
	return best >= 0 ? best : top;
}

/* Views keep their base alive: widen each base's interval to cover them. */
static void
widen_bases(const MemEval *ev, int *end)
{
	for (int k = 0; k < ev->ninst; k++)
		end[k] = ev->inst[k].end;
	for (int k = 0; k < ev->ninst; k++) {
		int b = ev->inst[k].base;
		if (b >= 0 && b != k && b < ev->ninst && end[k] > end[b])
			end[b] = end[k];
	}
}

int64_t
mp_plan(const Dag *d, MemEval *ev, Arena *a)
{
	(void)d;
	int *end = ar_alloc(a, sizeof *end * (size_t)(ev->ninst + 1));
	Block *bl = ar_alloc(a, sizeof *bl * (size_t)(ev->ninst + ev->nsteps + 1));
	int n = 0;
	widen_bases(ev, end);
	for (int k = 0; k < ev->ninst; k++) {
		Instance *in = &ev->inst[k];
		in->offset = -1;
		if (in->owned > 0)
			bl[n++] = (Block){align_up(in->owned), in->start, end[k], -1,
			                  &in->offset};
	}
	ev->temp_offset = ar_alloc(a, sizeof *ev->temp_offset * (size_t)(ev->nsteps + 1));
	for (int s = 0; s < ev->nsteps; s++) {
		ev->temp_offset[s] = -1;
		if (ev->temp_bytes && ev->temp_bytes[s] > 0)
			bl[n++] = (Block){align_up(ev->temp_bytes[s]), s, s, -1,
			                  &ev->temp_offset[s]};
	}
	qsort(bl, (size_t)n, sizeof *bl, by_size);
	Block **tmp = ar_alloc(a, sizeof *tmp * (size_t)(n + 1));
	int64_t arena = 0;
	for (int i = 0; i < n; i++) {
		bl[i].off = best_fit(&bl[i], bl, i, tmp);
		*bl[i].dst = bl[i].off;
		if (bl[i].off + bl[i].size > arena)
			arena = bl[i].off + bl[i].size;
	}
	return arena;
}

/* Which acc entries of step `step` produce their gradient: the instances
 * the step produces after node.out name them (dag.h, step_prod order). */
static bool
acc_produces(const MemEval *ev, const DagNode *nd, int step, int t)
{
	for (int k = ev->step_prod[step + 1] + nd->nout; k < ev->step_prod[step + 2]; k++)
		if (ev->inst[k].tensor == t)
			return true;
	return false;
}

int64_t
mp_temp_layout(const Dag *d, const MemEval *ev, const Schedule *s,
               int step, int64_t *off)
{
	const DagNode *nd = &d->node[s->step[step]];
	int64_t pos = 0;
	for (int j = 0; j < nd->nacc; j++)
		off[j] = -1;
	/* element sizes 8, 4, 2, 1 in turn; bytes of a tensor are a multiple
	 * of its element size, so each part stays naturally aligned */
	for (int esz = 8; esz >= 1; esz /= 2)
		for (int j = 0; j < nd->nacc; j++) {
			const DagTensor *t = &d->t[nd->acc[j].tensor];
			int64_t e = t->bytes % 8 == 0 ? 8 : t->bytes % 4 == 0 ? 4 :
			            t->bytes % 2 == 0 ? 2 : 1;
			if (e != esz || acc_produces(ev, nd, step, nd->acc[j].tensor))
				continue;
			off[j] = pos;
			pos += t->bytes;
		}
	off[nd->nacc] = pos;
	return pos + nd->workspace;
}
