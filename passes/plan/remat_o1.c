/* passes/plan/remat_o1.c -- checkpointing along the forward chain: the cut
 * nodes (articulation points of the forward part, which every path
 * crosses) and -O1's checkpoints about every sqrt(n) of them (Chen et
 * al.), which the sqrt(n) baseline is too (baseline.c). A plan keeps the checkpoints' outputs
 * and drops every other forward tensor after the forward, its tail too
 * (rm_checkpoint_tensors): backward recomputes each segment from its
 * checkpoint once, right before it first needs it, and only what the
 * segment's backward reads (and what that needs). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* Bytes of node v's outputs that backward needs later (what holding them
 * until the backward costs). */
static int64_t
saved_bytes(const RmCtx *C, int v)
{
	const DagNode *n = &C->d->node[v];
	int64_t s = 0;

	for (int j = 0; j < n->nout; j++) {
		const DagTensor *t = &C->d->t[n->out[j]];
		if (C->longgap[n->out[j]] >= 0 && t->view_src < 0 &&
		    !t->persistent_view)
			s += t->bytes;
	}
	return s;
}

static bool
is_forward(const RmCtx *C, int v)
{
	return !C->d->node[v].once && !C->d->node[v].is_backward;
}

/* The cut nodes in base order: no tensor made by an earlier forward node is
 * used by a forward node after them. wpre[i]: saved bytes of the forward
 * nodes before cut i; a[i]: cut i's own. Returns how many. */
static int
cut_nodes(const RmCtx *C, int *cut, int64_t *wpre, int64_t *a, int64_t *wtotal)
{
	const Dag *d = C->d;
	Arena ar = {0};
	int *lastfwd = ar_alloc(&ar, ((size_t)d->nt + 1) * sizeof *lastfwd);
	int reach = -1, r = 0;
	int64_t w = 0;

	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		if (!is_forward(C, v))
			continue;
		for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++)
			lastfwd[C->use[k]] = x;
	}
	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		if (!is_forward(C, v))
			continue;
		if (reach <= x) {
			cut[r] = v;
			wpre[r] = w;
			a[r++] = saved_bytes(C, v);
		}
		w += saved_bytes(C, v);
		for (int j = 0; j < d->node[v].nout; j++)
			if (lastfwd[d->node[v].out[j]] > reach)
				reach = lastfwd[d->node[v].out[j]];
	}
	*wtotal = w;
	ar_free(&ar);
	return r;
}

/* Keeps every gap of the tensors marked in keep_t (and of the bases of
 * kept views: a view pins its base); drops every other forward tensor for
 * good after the forward: its gap to the first backward use (STICKY: the
 * recomputed instance then serves the rest of the backward) and its tail
 * after its last use, so that a recompute that needs it recomputes it too
 * instead of stretching the old instance (Chen: a segment is recomputed
 * from its checkpoint, not from what the forward left alive). keep_t is
 * changed: the kept views' bases are marked too. */
void
rm_checkpoint_tensors(const RmCtx *C, bool *keep_t, unsigned char *st)
{
	const Dag *d = C->d;

	for (int t = 0; t < d->nt; t++)
		for (int r = t; keep_t[t] && d->t[r].view_src >= 0; ) {
			r = d->t[r].view_src;
			keep_t[r] = true;
		}
	memset(st, GAP_KEEP, (size_t)C->ngap);
	for (int t = 0; t < d->nt; t++) {
		if (C->prod[t] < 0 || keep_t[t] || !is_forward(C, C->prod[t]))
			continue;
		if (C->longgap[t] >= 0)
			st[C->longgap[t]] = GAP_STICKY;
		st[C->gofs[t + 1] - 1] = GAP_STICKY;
	}
}

/* Keeps the outputs of the nodes in keep, drops every other forward tensor
 * (rm_checkpoint_tensors). */
void
rm_checkpoint_state(const RmCtx *C, const bool *keep, unsigned char *st)
{
	Arena a = {0};
	bool *keep_t = ar_alloc(&a, ((size_t)C->d->nt + 1) * sizeof *keep_t);

	for (int t = 0; t < C->d->nt; t++)
		keep_t[t] = C->prod[t] >= 0 && keep[C->prod[t]];
	rm_checkpoint_tensors(C, keep_t, st);
	ar_free(&a);
}

typedef struct Cuts {
	int r;
	int *cut;
	int64_t *wpre, *a, w;
} Cuts;

/* The cuts, in ar; false when there is nothing to checkpoint. */
static bool
cuts_get(const RmCtx *C, Cuts *k, Arena *ar)
{
	size_t nn = (size_t)C->d->nnode + 1;

	k->cut = ar_alloc(ar, nn * sizeof *k->cut);
	k->wpre = ar_alloc(ar, nn * sizeof *k->wpre);
	k->a = ar_alloc(ar, nn * sizeof *k->a);
	k->r = cut_nodes(C, k->cut, k->wpre, k->a, &k->w);
	return k->r > 0 && C->has_backward && k->w > 0;
}

/* -O1, Chen et al.: about sqrt(r) checkpoints among the r cuts (the
 * forward graph's articulation points), spaced evenly by the bytes
 * backward reads. False when there is nothing to checkpoint (no backward,
 * no cut). */
bool
rm_sqrtn_state(RmCtx *C, unsigned char *st)
{
	Cuts k;
	Arena ar = {0};
	bool *keep;

	if (!cuts_get(C, &k, &ar)) {
		ar_free(&ar);
		return false;
	}
	keep = ar_alloc(&ar, ((size_t)C->d->nnode + 1) * sizeof *keep);
	int m = (int)ceil(sqrt((double)k.r));
	int64_t seg = k.w / m + 1, last = 0;
	for (int i = 0; i < k.r; i++) {
		if (k.wpre[i] - last >= seg) {
			keep[k.cut[i]] = true;
			last = k.wpre[i] + k.a[i];
		}
	}
	rm_checkpoint_state(C, keep, st);
	ar_free(&ar);
	return true;
}

/* -O1: the sqrt(n) plan (the last in the pool when there is one). */
void
rm_plan_o1(RmCtx *C, RmPool *pool)
{
	Arena a = {0};
	unsigned char *st = rm_state_new(C, &a);

	if (rm_sqrtn_state(C, st))
		rm_pool_add(pool, C, st, rm_eval(C, st));
	ar_free(&a);
}
