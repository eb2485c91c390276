/* passes/eval/memplan.c -- static memory planning: one arena, fixed offsets.
 *
 * Reads Dag.persistent_buf (and persistent[]), MemEval.inst (start, end,
 * owned, base) and MemEval.temp_bytes; writes MemEval.persistent_offset,
 * Instance.offset for every owning instance (views keep -1: the emitter
 * addresses them through their base) and MemEval.temp_offset for every step
 * that has temporaries. Returns arena bytes.
 *
 * Arena layout, every offset a multiple of MP_ALIGN (256):
 *   [0, P)        the persistent buffers, live for the whole step, one after
 *                 the other in Dag order (per param: weight, master copy,
 *                 optimizer states), each rounded up to 256 bytes; bytes of
 *                 persistent[] that the Dag does not list buffer by buffer
 *                 (Dags not made by passes/graph/lower.c) follow as one block.
 *   [P, arena)    the instances and the per-step temporary blocks, each live
 *                 over an interval of steps (an instance: from its producing
 *                 step through its last live step, widened over the views of
 *                 it; a step's temporaries -- workspace and accumulation
 *                 temporaries -- one block live during that step only).
 * So the arena holds every byte the MemEval counts, and arena bytes >= peak:
 * fragmentation (arena - peak) is the alignment padding plus the gaps the
 * placement leaves.
 *
 * Placement, above P, is the better of two plans:
 * - A linear scan over time with best fit, always: blocks in order of
 *   their first step (larger first within a step); before placing the
 *   blocks that start at step s, every block whose last step is before s is
 *   freed and its range merged with free neighbours; a block takes the
 *   smallest free range that holds it (lowest offset on ties), else extends
 *   a free range that ends at the top, else goes on top. Free ranges are
 *   kept in two treaps, by (size, offset) for best fit and by offset for
 *   merging: O(n log n) in the number of blocks (a 100k-op graph, 300k
 *   blocks, plans in a fraction of a second).
 * - Greedy by size with best fit (Pisarchyk & Lee 2020), when there are at
 *   most MP_GREEDY_MAX blocks: usually tighter on schedules with
 *   recomputation (GPT-2 -O2: 252 B of fragmentation against 60 MB), but
 *   O(n^2), so bounded to ~10^8 simple steps (GPT-2 small at -O2 has ~1,100
 *   blocks and takes milliseconds).
 * The smaller arena wins (the greedy one on ties). Both are deterministic.
 */
#include <stdlib.h>
#include <string.h>

#include "eval.h"

enum { MP_ALIGN = 256 };

enum { MP_GREEDY_MAX = 16384 }; /* most blocks greedy_by_size is tried on */

typedef struct Block {
	int64_t size;           /* rounded up to MP_ALIGN */
	int start, end;         /* live steps, inclusive */
	int64_t off;            /* the placement being made */
	int64_t *dst;           /* where the chosen offset goes */
} Block;

static int64_t
align_up(int64_t n)
{
	return (n + MP_ALIGN - 1) / MP_ALIGN * MP_ALIGN;
}

/* ------------------------------------------------------------ treaps */

/* A treap of distinct keys (k1, k2), nodes in a pool, -1 for none. */
typedef struct Tnode {
	int64_t k1, k2;
	uint64_t pri;
	int l, r;
} Tnode;

typedef struct Treap {
	Tnode *n;
	int nn, root;
	uint64_t seed;
	int cap, free;          /* pool size; erased nodes, linked through l */
	Arena *a;
} Treap;

static bool
key_lt(const Tnode *x, int64_t k1, int64_t k2)
{
	return x->k1 < k1 || (x->k1 == k1 && x->k2 < k2);
}

/* Splits t into keys < (k1, k2) and keys >= (k1, k2). */
static void
tr_split(Treap *T, int t, int64_t k1, int64_t k2, int *l, int *r)
{
	if (t < 0) {
		*l = *r = -1;
	} else if (key_lt(&T->n[t], k1, k2)) {
		tr_split(T, T->n[t].r, k1, k2, &T->n[t].r, r);
		*l = t;
	} else {
		tr_split(T, T->n[t].l, k1, k2, l, &T->n[t].l);
		*r = t;
	}
}

/* Joins a and b, every key of a below every key of b. */
static int
tr_merge(Treap *T, int a, int b)
{
	if (a < 0 || b < 0)
		return a < 0 ? b : a;
	if (T->n[a].pri > T->n[b].pri) {
		T->n[a].r = tr_merge(T, T->n[a].r, b);
		return a;
	}
	T->n[b].l = tr_merge(T, a, T->n[b].l);
	return b;
}

static void
tr_insert(Treap *T, int64_t k1, int64_t k2)
{
	int l, r, x, *link;
	uint64_t z = (T->seed += 0x9e3779b97f4a7c15ull);

	/* reuse erased nodes: the pool stays as large as the most free ranges
	 * at once, not the number of inserts */
	if (T->free >= 0) {
		x = T->free;
		T->free = T->n[x].l;
	} else {
		if (T->nn == T->cap) {
			int cap = T->cap ? 2 * T->cap : 1024;
			T->n = ar_grow(T->a, T->n, sizeof *T->n * (size_t)T->cap,
			               sizeof *T->n * (size_t)cap);
			T->cap = cap;
		}
		x = T->nn++;
	}

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	T->n[x] = (Tnode){k1, k2, z ^ (z >> 31), -1, -1};
	/* descend to where x's priority puts it, then split only the subtree
	 * below: the same treap as splitting and merging at the root */
	link = &T->root;
	while (*link >= 0 && T->n[*link].pri > T->n[x].pri)
		link = key_lt(&T->n[*link], k1, k2) ? &T->n[*link].r : &T->n[*link].l;
	tr_split(T, *link, k1, k2, &l, &r);
	T->n[x].l = l;
	T->n[x].r = r;
	*link = x;
}

static void
tr_erase(Treap *T, int64_t k1, int64_t k2)
{
	int *link = &T->root, m;

	while (*link >= 0 && (T->n[*link].k1 != k1 || T->n[*link].k2 != k2))
		link = key_lt(&T->n[*link], k1, k2) ? &T->n[*link].r : &T->n[*link].l;
	ir_assert(*link >= 0);
	m = *link;
	*link = tr_merge(T, T->n[m].l, T->n[m].r);
	T->n[m].l = T->free;
	T->free = m;
}

/* The node with key (k1, k2), which must be there. Its key may be changed
 * in place while it keeps its place in the order. */
static Tnode *
tr_find(Treap *T, int64_t k1, int64_t k2)
{
	int t = T->root;

	while (t >= 0 && (T->n[t].k1 != k1 || T->n[t].k2 != k2))
		t = key_lt(&T->n[t], k1, k2) ? T->n[t].r : T->n[t].l;
	ir_assert(t >= 0);
	return &T->n[t];
}

/* The smallest key >= (k1, k2), or NULL. */
static const Tnode *
tr_ceil(const Treap *T, int64_t k1, int64_t k2)
{
	const Tnode *best = NULL;

	for (int t = T->root; t >= 0;) {
		if (key_lt(&T->n[t], k1, k2)) {
			t = T->n[t].r;
		} else {
			best = &T->n[t];
			t = T->n[t].l;
		}
	}
	return best;
}

/* The largest key < (k1, k2), or NULL. */
static const Tnode *
tr_below(const Treap *T, int64_t k1, int64_t k2)
{
	const Tnode *best = NULL;

	for (int t = T->root; t >= 0;) {
		if (key_lt(&T->n[t], k1, k2)) {
			best = &T->n[t];
			t = T->n[t].r;
		} else {
			t = T->n[t].l;
		}
	}
	return best;
}

/* ------------------------------------------------------------ free ranges */

typedef struct Space {
	Treap by_size;          /* keys (size, offset) */
	Treap by_off;           /* keys (offset, size) */
	int64_t top;            /* highest end offset handed out so far */
} Space;

static void
gap_add(Space *sp, int64_t off, int64_t size)
{
	tr_insert(&sp->by_size, size, off);
	tr_insert(&sp->by_off, off, size);
}

static void
gap_del(Space *sp, int64_t off, int64_t size)
{
	tr_erase(&sp->by_size, size, off);
	tr_erase(&sp->by_off, off, size);
}

/* Best fit, else the free range ending at the top grown, else the top. */
static int64_t
sp_alloc(Space *sp, int64_t size)
{
	const Tnode *g = tr_ceil(&sp->by_size, size, INT64_MIN);
	int64_t off, gsize;

	if (g) {
		off = g->k2;
		gsize = g->k1;
		tr_erase(&sp->by_size, gsize, off);
		if (gsize > size) {
			/* the rest of the range keeps its place by offset */
			Tnode *x = tr_find(&sp->by_off, off, gsize);
			x->k1 = off + size;
			x->k2 = gsize - size;
			tr_insert(&sp->by_size, gsize - size, off + size);
		} else {
			tr_erase(&sp->by_off, off, gsize);
		}
		return off;
	}
	g = tr_below(&sp->by_off, sp->top, INT64_MIN);
	if (g && g->k1 + g->k2 == sp->top) {
		off = g->k1;
		gap_del(sp, off, g->k2);
	} else {
		off = sp->top;
	}
	sp->top = off + size;
	return off;
}

/* Returns [off, off + size) to the free ranges, merged with neighbours. */
static void
sp_free(Space *sp, int64_t off, int64_t size)
{
	const Tnode *l = tr_below(&sp->by_off, off, INT64_MIN);
	const Tnode *r = tr_ceil(&sp->by_off, off + size, INT64_MIN);
	int64_t end = off + size;

	if (r && r->k1 == end) {
		int64_t rs = r->k2;
		gap_del(sp, end, rs);
		end += rs;
	}
	if (l && l->k1 + l->k2 == off) {
		/* grow the left neighbour: its place by offset stays */
		Tnode *x = (Tnode *)l;
		tr_erase(&sp->by_size, x->k2, x->k1);
		x->k2 = end - x->k1;
		tr_insert(&sp->by_size, x->k2, x->k1);
		return;
	}
	gap_add(sp, off, end - off);
}

/* ------------------------------------------------------------ the plan */

static int
by_size(const void *pa, const void *pb)
{
	const Block *a = *(const Block *const *)pa, *b = *(const Block *const *)pb;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a > b) - (a < b);
}

static Block **
sorted(Block *bl, int n, int (*cmp)(const void *, const void *), Arena *a)
{
	Block **p = ar_alloc(a, sizeof *p * (size_t)(n + 1));
	for (int i = 0; i < n; i++)
		p[i] = &bl[i];
	qsort(p, (size_t)n, sizeof *p, cmp);
	return p;
}

/* Indices of bl in order of start or end, ties in array (address) order,
 * by a counting sort in linear time. */
static int *
sorted_by_step(const Block *bl, int n, bool end, Arena *a)
{
	int *p = ar_alloc(a, sizeof *p * (size_t)(n + 1));
	int lo = 0, hi = 0, *pos;

	for (int i = 0; i < n; i++) {
		int k = end ? bl[i].end : bl[i].start;
		if (i == 0 || k < lo)
			lo = k;
		if (i == 0 || k > hi)
			hi = k;
	}
	pos = ar_alloc(a, sizeof *pos * ((size_t)hi - (size_t)lo + 2));
	for (int i = 0; i < n; i++)
		pos[(end ? bl[i].end : bl[i].start) - lo + 1]++;
	for (int k = lo; k < hi; k++)
		pos[k - lo + 1] += pos[k - lo];
	for (int i = 0; i < n; i++)
		p[pos[(end ? bl[i].end : bl[i].start) - lo]++] = i;
	return p;
}

/* Insertion sort of a few indices of bl in by_start order. */
static void
sort_run(const Block *bl, int *p, int n)
{
	for (int i = 1; i < n; i++) {
		int x = p[i], j = i;
		for (; j > 0; j--) {
			const Block *a = &bl[p[j - 1]], *b = &bl[x];
			if (a->size > b->size || (a->size == b->size && p[j - 1] < x))
				break;
			p[j] = p[j - 1];
		}
		p[j] = x;
	}
}

/* The order of sorted() with by_start: by start (counting sort), then each
 * run of equal starts -- a step's few blocks -- by size. */
static int *
sorted_by_start(const Block *bl, int n, Arena *a)
{
	int *p = sorted_by_step(bl, n, false, a);

	for (int i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && bl[p[j]].start == bl[p[i]].start; j++)
			;
		if (j - i > 1)
			sort_run(bl, p + i, j - i);
	}
	return p;
}

/* Linear scan over time with best fit: sets every off; returns the top. */
static int64_t
linear_scan(Block *bl, int n, Arena *a)
{
	Space sp = {{NULL, 0, -1, 1, 0, -1, a}, {NULL, 0, -1, 2, 0, -1, a}, 0};
	int *st = sorted_by_start(bl, n, a), *ends = sorted_by_step(bl, n, true, a);
	int nf = 0;

	for (int i = 0; i < n; i++) {
		for (; nf < n && bl[ends[nf]].end < bl[st[i]].start; nf++)
			sp_free(&sp, bl[ends[nf]].off, bl[ends[nf]].size);
		bl[st[i]].off = sp_alloc(&sp, bl[st[i]].size);
	}
	return sp.top;
}

/* Greedy by size with best fit (Pisarchyk & Lee, "Efficient memory
 * management for deep neural net inference", 2020): blocks in order of
 * decreasing size; each goes into the smallest gap, among the placed blocks
 * live at some common step, that holds it, else above them all. Placed
 * blocks are kept sorted by offset, so it is O(n^2) simple steps: mp_plan
 * runs it only up to MP_GREEDY_MAX blocks. Sets every off; returns the top. */
static int64_t
greedy_by_size(Block *bl, int n, Arena *a)
{
	Block **ord = sorted(bl, n, by_size, a);
	Block **placed = ar_alloc(a, sizeof *placed * (size_t)(n + 1));
	int64_t arena = 0;

	for (int i = 0; i < n; i++) {
		Block *b = ord[i];
		int64_t best = -1, bestgap = INT64_MAX, top = 0;
		int lo = 0, hi = i;
		for (int j = 0; j < i; j++) {
			const Block *p = placed[j];
			if (p->start > b->end || b->start > p->end)
				continue;
			if (p->off - top >= b->size && p->off - top < bestgap) {
				best = top;
				bestgap = p->off - top;
			}
			if (p->off + p->size > top)
				top = p->off + p->size;
		}
		b->off = best >= 0 ? best : top;
		while (lo < hi) {       /* keep placed[] sorted by offset */
			int mid = lo + (hi - lo) / 2;
			if (placed[mid]->off <= b->off)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(placed + lo + 1, placed + lo, sizeof *placed * (size_t)(i - lo));
		placed[lo] = b;
		if (b->off + b->size > arena)
			arena = b->off + b->size;
	}
	return arena;
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

/* The persistent buffers at [0, P), in Dag order; returns P. */
static int64_t
place_persistent(const Dag *d, MemEval *ev, Arena *a)
{
	int np = d ? d->npersistent : 0;
	int64_t pos = 0, listed = 0, total = 0;

	ev->persistent_offset = ar_alloc(a, sizeof *ev->persistent_offset * (size_t)(np + 1));
	for (int i = 0; i < np; i++) {
		ev->persistent_offset[i] = pos;
		pos += align_up(d->persistent_buf[i]);
		listed += d->persistent_buf[i];
	}
	for (int c = 0; d && c < CAT_COUNT; c++)
		total += d->persistent[c];
	ir_assert(listed <= total);
	return pos + align_up(total - listed);
}

int64_t
mp_plan(const Dag *d, MemEval *ev, Arena *a)
{
	Arena scratch;          /* blocks, sort orders, treaps: gone on return */
	int *end, n = 0, ntemp = 0;
	Block *bl;
	int64_t *lin;
	int64_t base = place_persistent(d, ev, a), top;

	ar_init(&scratch);
	end = ar_alloc(&scratch, sizeof *end * (size_t)(ev->ninst + 1));
	for (int k = 0; k < ev->ninst; k++)   /* size bl exactly: it is large */
		n += ev->inst[k].owned > 0;
	for (int s = 0; s < ev->nsteps; s++)
		ntemp += ev->temp_bytes && ev->temp_bytes[s] > 0;
	n += ntemp;
	bl = ar_alloc(&scratch, sizeof *bl * (size_t)(n + 1));
	n = 0;

	widen_bases(ev, end);
	for (int k = 0; k < ev->ninst; k++) {
		Instance *in = &ev->inst[k];
		in->offset = -1;
		if (in->owned > 0)
			bl[n++] = (Block){align_up(in->owned), in->start, end[k], 0, &in->offset};
	}
	/* no step with temporaries (an inference chain): no array of -1s */
	ev->temp_offset = ntemp ? ar_alloc(a, sizeof *ev->temp_offset * (size_t)(ev->nsteps + 1))
	                        : NULL;
	for (int s = 0; ntemp && s < ev->nsteps; s++) {
		ev->temp_offset[s] = -1;
		if (ev->temp_bytes && ev->temp_bytes[s] > 0)
			bl[n++] = (Block){align_up(ev->temp_bytes[s]), s, s, 0, &ev->temp_offset[s]};
	}
	top = linear_scan(bl, n, &scratch);
	if (n <= MP_GREEDY_MAX) {
		lin = ar_alloc(&scratch, sizeof *lin * (size_t)(n + 1));
		for (int i = 0; i < n; i++)
			lin[i] = bl[i].off;
		int64_t gtop = greedy_by_size(bl, n, &scratch);
		if (gtop <= top)
			top = gtop;
		else
			for (int i = 0; i < n; i++)
				bl[i].off = lin[i];
	}
	for (int i = 0; i < n; i++)
		*bl[i].dst = base + bl[i].off;
	ar_free(&scratch);
	return base + top;
}

/* Which acc entries of step `step` produce their gradient: the instances
 * the step produces after node.out name them (dag.h, step_prod order). An
 * out-of-place sum that replaced an earlier instance (Instance.replaces)
 * still needs a slot for its contribution unless that aliases view_src. */
static bool
acc_produces(const MemEval *ev, const DagNode *nd, int step, int j)
{
	int t = nd->acc[j].tensor;

	for (int k = ev->step_prod[step + 1] + nd->nout; k < ev->step_prod[step + 2]; k++)
		if (ev->inst[k].tensor == t)
			return !ev->inst[k].replaces || nd->acc[j].view_src >= 0;
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
			if (e != esz || acc_produces(ev, nd, step, j))
				continue;
			off[j] = pos;
			pos += t->bytes;
		}
	off[nd->nacc] = pos;
	return pos + nd->workspace;
}
