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
saved_bytes(const RmModel *M, int v)
{
	const DagNode *n = &M->d->node[v];
	int64_t s = 0;

	for (int j = 0; j < n->nout; j++) {
		const DagTensor *t = &M->d->t[n->out[j]];
		if (M->longgap[n->out[j]] >= 0 && t->view_src < 0 &&
		    !t->persistent_view)
			s += t->bytes;
	}
	return s;
}

static bool
is_forward(const RmModel *M, int v)
{
	return !M->d->node[v].once && !M->d->node[v].is_backward;
}

/* The cut nodes in base order: no tensor made by an earlier forward node is
 * used by a forward node after them. wpre[i]: saved bytes of the forward
 * nodes before cut i; a[i]: cut i's own. Returns how many. */
static int
cut_nodes(const RmModel *M, int *cut, int64_t *wpre, int64_t *a, int64_t *wtotal)
{
	const Dag *d = M->d;
	Arena ar = {0};
	int *lastfwd = ar_alloc(&ar, ((size_t)d->nt + 1) * sizeof *lastfwd);
	int reach = -1, r = 0;
	int64_t w = 0;

	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		if (!is_forward(M, v))
			continue;
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++)
			lastfwd[M->use[k]] = x;
	}
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		if (!is_forward(M, v) || rm_is_gather(M, v))
			continue;
		if (reach <= x) {
			cut[r] = v;
			wpre[r] = w;
			a[r++] = saved_bytes(M, v);
		}
		w += saved_bytes(M, v);
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
rm_checkpoint_tensors(const RmModel *M, bool *keep_t, unsigned char *st)
{
	const Dag *d = M->d;

	for (int t = 0; t < d->nt; t++)
		for (int r = t; keep_t[t] && d->t[r].view_src >= 0; ) {
			r = d->t[r].view_src;
			keep_t[r] = true;
		}
	memset(st, GAP_KEEP, (size_t)M->ngap);
	for (int t = 0; t < d->nt; t++) {
		if (M->prod[t] < 0 || keep_t[t] || !is_forward(M, M->prod[t]))
			continue;
		if (M->longgap[t] >= 0)
			st[M->longgap[t]] = GAP_STICKY;
		st[rm_tail(M, t)] = GAP_STICKY;
	}
}

/* Keeps the outputs of the nodes in keep, drops every other forward tensor
 * (rm_checkpoint_tensors). */
void
rm_checkpoint_state(const RmModel *M, const bool *keep, unsigned char *st)
{
	Arena a = {0};
	bool *keep_t = ar_alloc(&a, ((size_t)M->d->nt + 1) * sizeof *keep_t);

	for (int t = 0; t < M->d->nt; t++)
		keep_t[t] = M->prod[t] >= 0 && keep[M->prod[t]];
	rm_checkpoint_tensors(M, keep_t, st);
	ar_free(&a);
}

typedef struct Cuts {
	int r;
	int *cut;
	int64_t *wpre, *a, w;
} Cuts;

/* The cuts, in ar; false when there is nothing to checkpoint. */
static bool
cuts_get(const RmModel *M, Cuts *k, Arena *ar)
{
	size_t nn = (size_t)M->d->nnode + 1;

	k->cut = ar_alloc(ar, nn * sizeof *k->cut);
	k->wpre = ar_alloc(ar, nn * sizeof *k->wpre);
	k->a = ar_alloc(ar, nn * sizeof *k->a);
	k->r = cut_nodes(M, k->cut, k->wpre, k->a, &k->w);
	return k->r > 0 && M->has_backward && k->w > 0;
}

/* -O1, Chen et al.: about sqrt(r) checkpoints among the r cuts (the
 * forward graph's articulation points), spaced evenly by the bytes
 * backward reads. False when there is nothing to checkpoint (no backward,
 * no cut). */
bool
rm_sqrtn_state(const RmModel *M, unsigned char *st)
{
	Cuts k;
	Arena ar = {0};
	bool *keep;

	if (!cuts_get(M, &k, &ar)) {
		ar_free(&ar);
		return false;
	}
	keep = ar_alloc(&ar, ((size_t)M->d->nnode + 1) * sizeof *keep);
	int m = (int)ceil(sqrt((double)k.r));
	int64_t seg = k.w / m + 1, last = 0;
	for (int i = 0; i < k.r; i++) {
		if (k.wpre[i] - last >= seg) {
			keep[k.cut[i]] = true;
			last = k.wpre[i] + k.a[i];
		}
	}
	rm_checkpoint_state(M, keep, st);
	ar_free(&ar);
	return true;
}

/* -O1: the sqrt(n) plan (the last in the pool when there is one). */
void
rm_plan_o1(RmScorer *S, RmPool *pool)
{
	Arena a = {0};
	unsigned char *st = rm_state_new(S->m, &a);

	if (rm_sqrtn_state(S->m, st))
		rm_pool_add(pool, S->m, st, rm_eval_state(S, st));
	ar_free(&a);
}
