/* passes/plan/remat_model.c -- the planning model every planner shares
 * (remat_int.h): the gap table over the base order (RmModel, read only
 * once built), the builder that turns gap states into a schedule, the
 * scorer (RmScorer: lv_eval, and rm_score_state, its shortcut on plain DAGs),
 * and the pool of scored candidates -- gap states, or explicit schedules
 * from remat_dtr.c and remat_ls.c. It calls
 * no planner: the planners call it, and remat.c's dispatcher calls them.
 * Reads the Dag only. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* Whether ofs[0..n] are the offsets of an n-row CSR table over a list of
 * total entries, which makes rm_row's lo and hi in bounds. */
static void
csr_check(const int *ofs, int n, int total)
{
	ir_assert(ofs[0] == 0 && ofs[n] == total);
	for (int i = 0; i < n; i++)
		ir_assert(ofs[i] <= ofs[i + 1]);
}

/* Tensors each node reads: in[], views' sources, accumulation view sources. */
static void
model_uses(RmModel *M)
{
	const Dag *d = M->d;
	int *mark = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *mark);
	int total = 0, k = 0;

	for (int v = 0; v < d->nnode; v++)
		total += d->node[v].nin + d->node[v].nout + d->node[v].nacc;
	M->uofs = ar_alloc(&M->mem, ((size_t)d->nnode + 1) * sizeof *M->uofs);
	M->use = ar_alloc(&M->mem, ((size_t)total + 1) * sizeof *M->use);
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		M->uofs[v] = k;
#define ADD(t) do { int t_ = (t); if (t_ >= 0 && mark[t_] != v + 1) \
		{ mark[t_] = v + 1; M->use[k++] = t_; } } while (0)
		for (int j = 0; j < n->nin; j++)
			ADD(n->in[j]);
		for (int j = 0; j < n->nout; j++)
			ADD(d->t[n->out[j]].view_src);
		for (int j = 0; j < n->nacc; j++)
			ADD(n->acc[j].view_src);
#undef ADD
	}
	M->uofs[d->nnode] = M->nuses = k;
	csr_check(M->uofs, d->nnode, k);
}

/* Whether the use of t at base position x ends a gap: after t's
 * production, before a once node makes t again. */
static bool
gap_use(const RmModel *M, int t, int x)
{
	return M->prod[t] >= 0 && M->pos[M->prod[t]] < x && x < M->reprod[t];
}

/* reprod and relast: a ZeRO-3 unit's backward gather makes its gathered
 * weights again, and the backward's uses (and a recompute after it) read
 * that instance; the plan's gaps cover the forward gather's alone, as if
 * the backward read a tensor of its own, and its tail gap runs from the
 * last forward use on. */
static void
model_reprod(RmModel *M)
{
	const Dag *d = M->d;

	M->reprod = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *M->reprod);
	M->relast = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *M->relast);
	for (int t = 0; t < d->nt; t++) {
		M->reprod[t] = M->n;
		M->relast[t] = -1;
	}
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++)
			M->relast[M->use[k]] = x;
		for (int j = 0; d->node[v].once && j < d->node[v].nout; j++) {
			int t = d->node[v].out[j];
			if (M->prod[t] >= 0 && M->reprod[t] == M->n)
				M->reprod[t] = x;
		}
	}
}

/* The gaps of every recomputable tensor, from the base order. */
static void
model_gaps(RmModel *M)
{
	const Dag *d = M->d;
	int *cnt = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *cnt);

	M->gofs = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *M->gofs);
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++) {
			int t = M->use[k];
			if (gap_use(M, t, x))
				cnt[t]++;
		}
	}
	for (int t = 0; t < d->nt; t++)
		M->gofs[t + 1] = M->gofs[t] + cnt[t] + (M->prod[t] >= 0);
	M->ngap = M->gofs[d->nt];
	csr_check(M->gofs, d->nt, M->ngap);
	M->gend = ar_alloc(&M->mem, ((size_t)M->ngap + 1) * sizeof *M->gend);
	M->gtensor = ar_alloc(&M->mem, ((size_t)M->ngap + 1) * sizeof *M->gtensor);
	memset(cnt, 0, sizeof *cnt * (size_t)d->nt);
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++) {
			int t = M->use[k];
			if (!gap_use(M, t, x))
				continue;
			M->gend[M->gofs[t] + cnt[t]] = x;
			M->gtensor[M->gofs[t] + cnt[t]++] = t;
		}
	}
	for (int t = 0; t < d->nt; t++) {
		if (M->prod[t] < 0)
			continue;
		M->gend[M->gofs[t + 1] - 1] = M->n;
		M->gtensor[M->gofs[t + 1] - 1] = t;
	}
}

/* longgap[t]: the first gap of a forward tensor that ends at a backward
 * node -- what Chen's checkpointing drops. */
static void
model_longgaps(RmModel *M)
{
	const Dag *d = M->d;

	M->longgap = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *M->longgap);
	for (int t = 0; t < d->nt; t++) {
		M->longgap[t] = -1;
		if (M->prod[t] < 0 || d->node[M->prod[t]].is_backward)
			continue;
		RmRow gaps = rm_gaps(M, t);
		for (int g = gaps.lo; g < gaps.hi - 1; g++) {
			if (d->node[d->base_order[M->gend[g]]].is_backward) {
				M->longgap[t] = g;
				break;
			}
		}
	}
}

/* The largest of the sorted u[0..n) that is <= b, or -1. */
static int
last_upto(const int *u, int n, int b)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (u[mid] <= b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 ? u[lo - 1] : -1;
}

/* gearly[g]: the last base position inside gap g (not its first step)
 * before which every input of the tensor's node is still used later or
 * right there, so recomputing it then needs no input to live longer;
 * -1 when there is none, or for a tail gap. Then the gaps by position. */
static void
model_early(RmModel *M)
{
	const Dag *d = M->d;
	int *cnt = ar_alloc(&M->mem, ((size_t)d->nt + 2) * sizeof *cnt);
	int *uofs = ar_alloc(&M->mem, ((size_t)d->nt + 2) * sizeof *uofs);
	int *upos = ar_alloc(&M->mem, ((size_t)M->nuses + 1) * sizeof *upos);

	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++)
			uofs[M->use[k] + 1]++;
	}
	for (int t = 0; t < d->nt; t++)
		uofs[t + 1] += uofs[t];
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++) {
			int t = M->use[k];
			upos[uofs[t] + cnt[t]++] = x;
		}
	}
	M->gearly = ar_alloc(&M->mem, ((size_t)M->ngap + 1) * sizeof *M->gearly);
	M->eofs = ar_alloc(&M->mem, ((size_t)M->n + 2) * sizeof *M->eofs);
	for (int g = 0; g < M->ngap; g++) {
		int t = M->gtensor[g], p = M->prod[t], b = M->gend[g], s = b;
		int a = rm_gap_start(M, g);
		RmRow uses = rm_uses(M, p);
		for (int k = uses.lo; k < uses.hi && b < M->n; k++) {
			int u = M->use[k];
			if (d->t[u].to_end)
				continue;
			RmRow at = rm_row(uofs, u, d->nt);
			int y = last_upto(upos + at.lo, at.hi - at.lo, b);
			if (y < s)
				s = y;
		}
		M->gearly[g] = b < M->n && s > a + 1 && s < b ? s : -1;
		if (M->gearly[g] >= 0)
			M->eofs[M->gearly[g] + 1]++;
	}
	for (int x = 0; x < M->n; x++)
		M->eofs[x + 1] += M->eofs[x];
	csr_check(M->eofs, M->n, M->eofs[M->n]);
	M->egap = ar_alloc(&M->mem, ((size_t)M->eofs[M->n] + 1) * sizeof *M->egap);
	cnt = ar_alloc(&M->mem, ((size_t)M->n + 1) * sizeof *cnt);
	for (int g = 0; g < M->ngap; g++)
		if (M->gearly[g] >= 0)
			M->egap[M->eofs[M->gearly[g]] + cnt[M->gearly[g]]++] = g;
}

int
rm_acc_prev(const Dag *d, int **ofs, int **prev, Arena *a)
{
	int *last = ar_alloc(a, ((size_t)d->nt + 1) * sizeof *last);
	int total = 0, k = 0;

	for (int v = 0; v < d->nnode; v++)
		total += d->node[v].nacc;
	*ofs = ar_alloc(a, ((size_t)d->nnode + 1) * sizeof **ofs);
	*prev = ar_alloc(a, ((size_t)total + 1) * sizeof **prev);
	for (int t = 0; t < d->nt; t++)
		last[t] = -1;
	/* rows filled in base order, each node's row at its own index: the
	 * count of entries before node v is not known until v is reached, so
	 * first count per node, then fill */
	int *cnt = ar_alloc(a, ((size_t)d->nnode + 1) * sizeof *cnt);
	for (int x = 0; x < d->nbase; x++) {
		const DagNode *n = &d->node[d->base_order[x]];
		for (int j = 0; j < n->nacc; j++) {
			int t = n->acc[j].tensor;
			if (last[t] >= 0 && last[t] != d->base_order[x])
				cnt[d->base_order[x]]++;
			last[t] = d->base_order[x];
		}
	}
	for (int v = 0; v < d->nnode; v++) {
		(*ofs)[v] = k;
		k += cnt[v];
		cnt[v] = (*ofs)[v];
	}
	(*ofs)[d->nnode] = k;
	for (int t = 0; t < d->nt; t++)
		last[t] = -1;
	for (int x = 0; x < d->nbase; x++) {
		int v = d->base_order[x];
		const DagNode *n = &d->node[v];
		for (int j = 0; j < n->nacc; j++) {
			int t = n->acc[j].tensor;
			if (last[t] >= 0 && last[t] != v)
				(*prev)[cnt[v]++] = last[t];
			last[t] = v;
		}
	}
	csr_check(*ofs, d->nnode, k);
	return k;
}

/* Whether the contributions in step[0..n) come in the base order's order
 * (M->aofs/aprev): each contributor's first step after its predecessors'. */
static bool
acc_ordered(RmScorer *S, const int *step, int n)
{
	const RmModel *M = S->m;

	S->ranstamp++;
	for (int i = 0; i < n; i++) {
		int v = step[i];
		if (S->ran[v] == S->ranstamp)
			continue;
		RmRow p = rm_row(M->aofs, v, M->nnode);
		for (int k = p.lo; k < p.hi; k++)
			if (S->ran[M->aprev[k]] != S->ranstamp)
				return false;
		S->ran[v] = S->ranstamp;
	}
	return true;
}

/* Whether lv_eval's rules reduce to rm_score_state's on d: one instance owns
 * each tensor's bytes from its step through its last use, and the base
 * order runs every node. */
static bool
dag_simple(const Dag *d)
{
	if (d->nbase != d->nnode)
		return false;
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].view_src >= 0 || d->t[t].persistent_view ||
		    d->t[t].from_start || d->t[t].to_end)
			return false;
	for (int v = 0; v < d->nnode; v++)
		if (d->node[v].nacc > 0 || d->node[v].fwd_plus1 > 0)
			return false;
	return true;
}

void
rm_model_init(RmModel *M, const Dag *d)
{
	memset(M, 0, sizeof *M);
	ar_init(&M->mem);
	M->d = d;
	M->nnode = d->nnode;
	M->nt = d->nt;
	M->n = d->nbase;
	M->pos = ar_alloc(&M->mem, ((size_t)d->nnode + 1) * sizeof *M->pos);
	M->prod = ar_alloc(&M->mem, ((size_t)d->nt + 1) * sizeof *M->prod);
	for (int v = 0; v < d->nnode; v++)
		M->pos[v] = -1;
	for (int x = 0; x < M->n; x++)
		M->pos[d->base_order[x]] = x;
	for (int t = 0; t < d->nt; t++)
		M->prod[t] = -1;
	for (int v = 0; v < d->nnode; v++) {
		if (d->node[v].is_backward)
			M->has_backward = true;
		if (d->node[v].once || M->pos[v] < 0)
			continue;
		for (int j = 0; j < d->node[v].nout; j++)
			if (!d->t[d->node[v].out[j]].from_start)
				M->prod[d->node[v].out[j]] = v;
	}
	model_uses(M);
	model_reprod(M);
	model_gaps(M);
	model_longgaps(M);
	model_early(M);
	M->naprev = rm_acc_prev(d, &M->aofs, &M->aprev, &M->mem);
	M->c0 = d->total_cost / 100000 + 1;
	M->tinit = ar_alloc(&M->mem, (size_t)d->nt + 1);
	for (int t = 0; t < d->nt; t++)
		M->tinit[t] = M->prod[t] >= 0 ? TS_RECOMP : 0;
	M->oofs = ar_alloc(&M->mem, ((size_t)d->nnode + 1) * sizeof *M->oofs);
	M->ncost = ar_alloc(&M->mem, ((size_t)d->nnode + 1) * sizeof *M->ncost);
	M->nws = ar_alloc(&M->mem, ((size_t)d->nnode + 1) * sizeof *M->nws);
	int nout = 0;
	for (int v = 0; v < d->nnode; v++)
		nout += d->node[v].nout;
	M->out = ar_alloc(&M->mem, ((size_t)nout + 1) * sizeof *M->out);
	nout = 0;
	for (int v = 0; v < d->nnode; v++) {
		M->oofs[v] = nout;
		for (int j = 0; j < d->node[v].nout; j++)
			M->out[nout++] = d->node[v].out[j];
		M->ncost[v] = d->node[v].cost;
		M->nws[v] = dag_workspace(d, v);
	}
	M->oofs[d->nnode] = M->nouts = nout;
	csr_check(M->oofs, d->nnode, nout);
	M->simple = dag_simple(d);
}

bool
rm_is_gather(const RmModel *M, int v)
{
	return dag_xfer(M->d, v)->comm == COMM_ALLGATHER;
}

void
rm_model_free(RmModel *M)
{
	ar_free(&M->mem);
}

void
rm_scorer_init(RmScorer *S, const RmModel *M)
{
	const Dag *d = M->d;

	memset(S, 0, sizeof *S);
	ar_init(&S->mem);
	ar_init(&S->scratch);
	S->m = M;
	rm_bld_init(M, &S->b, &S->mem);
	S->birth = ar_alloc(&S->mem, ((size_t)d->nt + 1) * sizeof *S->birth);
	S->lastuse = ar_alloc(&S->mem, ((size_t)d->nt + 1) * sizeof *S->lastuse);
	S->ran = ar_alloc(&S->mem, ((size_t)d->nnode + 1) * sizeof *S->ran);
	S->anchor = lv_anchor_new(&S->mem);
	S->nlast = -1;
	S->memo.limit = RM_MEMO_BYTES;
}

void
rm_scorer_free(RmScorer *S)
{
	lv_anchor_free(S->anchor);
	ar_free(&S->mem);
	ar_free(&S->scratch);
	ar_free(&S->memo.mem);
}

void
rm_ctx_init(RmCtx *C, const Dag *d)
{
	rm_model_init(&C->m, d);
	rm_scorer_init(&C->s, &C->m);
	memset(&C->r, 0, sizeof C->r);
	ar_init(&C->r.mem);
}

void
rm_ctx_free(RmCtx *C)
{
	rm_scorer_free(&C->s);
	rm_model_free(&C->m);
	ar_free(&C->r.mem);
}

unsigned char *
rm_state_new(const RmModel *M, Arena *a)
{
	return ar_alloc(a, (size_t)M->ngap + 1);
}

void
rm_bld_init(const RmModel *M, RmBld *B, Arena *a)
{
	const Dag *d = M->d;

	memset(B, 0, sizeof *B);
	B->mem = a;
	B->tst = ar_alloc(a, (size_t)d->nt + 1);
	B->gcur = ar_alloc(a, ((size_t)d->nt + 1) * sizeof *B->gcur);
	B->grp = ar_alloc(a, ((size_t)d->nt + 1) * sizeof *B->grp);
	B->emitted = ar_alloc(a, (2 * (size_t)d->nnode + 2) * sizeof *B->emitted);
	B->stack = ar_alloc(a, ((size_t)M->nuses + (size_t)d->nnode + 1) * sizeof *B->stack);
	B->capstep = 2 * M->n + 16;
	B->step = ar_alloc(a, ((size_t)B->capstep) * sizeof *B->step);
	B->posof = ar_alloc(a, ((size_t)B->capstep) * sizeof *B->posof);
}

/* Appends a step at base position x; false past the size limit. */
static bool
emit(const RmModel *M, RmBld *B, int v, int x)
{
	if (B->skip + B->nstep >= RM_MAXSTEP(M))
		return false;
	if (B->nstep == B->capstep) {
		size_t old = sizeof *B->step * (size_t)B->capstep;
		B->capstep *= 2;
		B->step = ar_grow(B->mem, B->step, old, 2 * old);
		B->posof = ar_grow(B->mem, B->posof, old, 2 * old);
	}
	B->step[B->nstep] = v;
	B->posof[B->nstep++] = x;
	return true;
}

static bool
missing(const RmBld *B, int t)
{
	return (B->tst[t] & (TS_RECOMP | TS_MADE | TS_AVAIL)) == (TS_RECOMP | TS_MADE);
}

/* Sets t's bits, noting t in the log when one is kept. */
static void
set_tst(RmBld *B, int t, unsigned char bits)
{
	B->tst[t] = bits;
	if (B->log)
		B->log[B->nlog++] = t;
}

/* Recomputes node p before base position x, first recomputing (post-order)
 * every dropped input it needs. */
static bool
recompute(const RmModel *M, RmBld *B, int p, int x)
{
	const Dag *d = M->d;
	int *expanded = B->emitted + d->nnode + 1;
	int sp = 0;

	B->stack[sp++] = p;
	while (sp > 0) {
		int q = B->stack[sp - 1];
		if (B->emitted[q] == B->stamp) {
			sp--;
			continue;
		}
		if (expanded[q] != B->stamp) {
			expanded[q] = B->stamp;
			RmRow uses = rm_uses(M, q);
			for (int k = uses.lo; k < uses.hi; k++)
				if (missing(B, M->use[k]))
					B->stack[sp++] = M->prod[M->use[k]];
			continue;
		}
		sp--;
		if (!emit(M, B, q, x))
			return false;
		B->emitted[q] = B->stamp;
		for (int j = 0; j < d->node[q].nout; j++) {
			int t = d->node[q].out[j];
			if ((B->tst[t] & (TS_RECOMP | TS_AVAIL)) == TS_RECOMP) {
				set_tst(B, t, B->tst[t] | TS_AVAIL);
				B->grp[B->ngrp++] = t;
			}
		}
	}
	return true;
}

/* After base step x: a use ends the gap before it; the state of the gap
 * after it decides whether the instance is kept. */
static void
after_step(const RmModel *M, RmBld *B, const unsigned char *state, int v)
{
	const Dag *d = M->d;

	RmRow uses = rm_uses(M, v);
	for (int k = uses.lo; k < uses.hi; k++) {
		int t = M->use[k];
		if ((B->tst[t] & (TS_RECOMP | TS_MADE)) != (TS_RECOMP | TS_MADE))
			continue;
		if (M->pos[v] > M->reprod[t]) {
			/* the once node's instance: freed after its last use, so
			 * that a recompute after that gathers again */
			if (M->pos[v] == M->relast[t])
				set_tst(B, t, B->tst[t] & (unsigned char)~TS_AVAIL);
			continue;
		}
		int g = ++B->gcur[t];
		if (g < rm_gaps(M, t).hi && state[g] != GAP_KEEP)
			set_tst(B, t, B->tst[t] & (unsigned char)~TS_AVAIL);
	}
	RmRow outs = rm_outs(M, v);
	for (int j = outs.lo; j < outs.hi; j++) {
		int t = M->out[j];
		/* a once node making a recomputable tensor (ZeRO-3's backward
		 * gather, dag.h): a new instance, kept to the next use at least */
		if (d->node[v].once) {
			if ((B->tst[t] & (TS_RECOMP | TS_MADE)) == (TS_RECOMP | TS_MADE))
				set_tst(B, t, B->tst[t] | TS_AVAIL);
			continue;
		}
		if ((B->tst[t] & (TS_RECOMP | TS_MADE)) != TS_RECOMP)
			continue;
		RmRow gaps = rm_gaps(M, t);
		set_tst(B, t, TS_RECOMP | TS_MADE |
		        (gaps.lo == gaps.hi || state[gaps.lo] == GAP_KEEP ?
		         TS_AVAIL : 0));
	}
	for (int i = 0; i < B->ngrp; i++) {
		int t = B->grp[i];
		int g = B->gcur[t];
		if (g < rm_gaps(M, t).hi && state[g] == GAP_TRANSIENT)
			set_tst(B, t, B->tst[t] & (unsigned char)~TS_AVAIL);
	}
}

void
rm_bld_start(const RmModel *M, RmBld *B)
{
	B->nstep = 0;
	memcpy(B->tst, M->tinit, (size_t)M->d->nt);
	memcpy(B->gcur, M->gofs, sizeof *B->gcur * (size_t)M->d->nt);
}

bool
rm_bld_pos(const RmModel *M, RmBld *B, const unsigned char *state, int x)
{
	int v = M->d->base_order[x];

	B->ngrp = 0;
	B->stamp++;
	RmRow early = rm_early(M, x);
	for (int k = early.lo; k < early.hi; k++) {
		int g = M->egap[k], t = M->gtensor[g];
		if (state[g] == GAP_EARLY && missing(B, t) && B->gcur[t] == g &&
		    !recompute(M, B, M->prod[t], x))
			return false;
	}
	RmRow uses = rm_uses(M, v);
	for (int k = uses.lo; k < uses.hi; k++)
		if (missing(B, M->use[k]) && !recompute(M, B, M->prod[M->use[k]], x))
			return false;
	if (!emit(M, B, v, x))
		return false;
	after_step(M, B, state, v);
	return true;
}

bool
rm_build(RmScorer *S, const unsigned char *state)
{
	const RmModel *M = S->m;

	rm_bld_start(M, &S->b);
	for (int x = 0; x < M->n; x++)
		if (!rm_bld_pos(M, &S->b, state, x))
			return false;
	return true;
}

/* Builds and evaluates; NULL when the plan grows past the size limit or
 * is invalid. The result lives until the next call. */
const MemEval *
rm_eval_state(RmScorer *S, const unsigned char *state)
{
	if (!rm_build(S, state))
		return NULL;
	return rm_eval_steps(S, S->b.step, S->b.nstep);
}

/* rm_eval_steps, and (anchor) the steps become S's anchor. The steps of
 * the latest evaluation again give its result as it is: an undo or a
 * move that builds the very plan it was made from (an undo in the
 * descent on BERT at 8 ZeRO-3 ranks, one evaluation in ten) costs no
 * evaluation then, but counts as one, so that the searches go as they
 * did. */
static const MemEval *
eval_steps(RmScorer *S, const int *step, int n, bool anchor)
{
	const RmModel *M = S->m;
	Schedule s = {n, (int *)step};

	if (!anchor && n == S->nlast && !memcmp(step, S->last, sizeof *step * (size_t)n)) {
		S->evals++;
		return S->ev.valid ? &S->ev : NULL;
	}
	if (n > S->caplast) {
		int cap = n > 2 * S->caplast ? n : 2 * S->caplast;
		S->last = ar_grow(&S->mem, S->last, sizeof *S->last * (size_t)S->caplast,
		                  sizeof *S->last * (size_t)cap);
		S->caplast = cap;
	}
	memcpy(S->last, step, sizeof *step * (size_t)n);
	S->nlast = n;
	ar_free(&S->scratch);
	if (anchor)
		lv_eval_anchor(S->anchor, M->d, &s, &S->ev, &S->scratch);
	else
		lv_eval_from(S->anchor, M->d, &s, &S->ev, &S->scratch);
	S->evals++;
	if (S->ev.valid && M->naprev > 0 && !acc_ordered(S, step, n))
		S->ev.valid = false;
	return S->ev.valid ? &S->ev : NULL;
}

const MemEval *
rm_eval_steps(RmScorer *S, const int *step, int n)
{
	return eval_steps(S, step, n, false);
}

const MemEval *
rm_eval_known(RmScorer *S, const int *step, int n, const MemEval *ev)
{
	S->evals++;
	if (!ev->valid || (S->m->naprev > 0 && !acc_ordered(S, step, n)))
		return NULL;
	return ev;
}

const MemEval *
rm_eval_anchor(RmScorer *S, const int *step, int n)
{
	return eval_steps(S, step, n, true);
}

const int *
rm_cand_steps(RmScorer *S, const RmCand *c, int *n)
{
	if (c->sched) {
		*n = c->nsched;
		return c->sched;
	}
	if (!rm_build(S, c->state))
		return NULL;
	*n = S->b.nstep;
	return S->b.step;
}

Schedule
rm_built_copy(const RmScorer *S, Arena *a)
{
	Schedule s = {S->b.nstep, ar_alloc(a, sizeof *s.step * ((size_t)S->b.nstep + 1))};

	memcpy(s.step, S->b.step, sizeof *s.step * (size_t)s.n);
	return s;
}

/* The instance of t made at birth[t] owns its bytes through lastuse[t];
 * false on overflow. */
static bool
close_instance(RmScorer *S, int t)
{
	const RmModel *M = S->m;
	int64_t *lo = &S->diff[S->birth[t]], *hi = &S->diff[S->lastuse[t] + 1];
	bool born = ck_add(*lo, M->d->t[t].bytes, lo);
	bool dies = ck_sub(*hi, M->d->t[t].bytes, hi);

	return born && dies;
}

/* rm_score_state's rules over steps step[0..n): a step recomputes when posof
 * gives it another base position than its node's, or (posof NULL) when
 * its node ran before (lv_eval's rule). NULL when lv_eval would refuse
 * the steps, and then *sure tells whether it surely would (false: a sum
 * passed 2^63, which lv_eval may treat otherwise). */
static const MemEval *
score_steps(RmScorer *S, const int *step, int n, const int *posof, bool *sure)
{
	const RmModel *M = S->m;
	const Dag *d = M->d;
	MemEval *ev = &S->ev;
	int64_t pers = 0, run = 0;
	bool ok = true;         /* no sum passed 2^63 */

	*sure = true;
	if (S->capdiff < n + 1) {
		size_t old = sizeof *S->diff * (size_t)S->capdiff;
		size_t m = sizeof *S->diff * (size_t)(n + 1);
		S->diff = ar_grow(&S->mem, S->diff, old, m);
		S->live = ar_grow(&S->mem, S->live, old, m);
		S->capdiff = n + 1;
	}
	memset(S->diff, 0, sizeof *S->diff * (size_t)(n + 1));
	memset(S->birth, 0xff, sizeof *S->birth * (size_t)d->nt);
	memset(ev, 0, sizeof *ev);
	S->nlast = -1;
	if (!posof)
		S->ranstamp++;
	/* on simple Dags a node's uses are its in[] (no views, no
	 * accumulations), in order */
	for (int i = 0; i < n; i++) {
		int v = step[i];
		bool re;
		RmRow uses = rm_uses(M, v);
		for (int j = uses.lo; j < uses.hi; j++) {
			if (S->birth[M->use[j]] < 0)
				return NULL;
			S->lastuse[M->use[j]] = i;
		}
		RmRow outs = rm_outs(M, v);
		for (int j = outs.lo; j < outs.hi; j++) {
			int t = M->out[j];
			if (S->birth[t] >= 0)
				ok &= close_instance(S, t);
			S->birth[t] = S->lastuse[t] = i;
		}
		if (posof) {
			re = M->pos[v] != posof[i];
		} else {
			re = S->ran[v] == S->ranstamp;
			if (re && d->node[v].once)
				return NULL;
			S->ran[v] = S->ranstamp;
		}
		if (re)
			ok &= ck_add(ev->recompute_cost, M->ncost[v], &ev->recompute_cost);
		ok &= ck_add(S->diff[i], M->nws[v], &S->diff[i]);
		ok &= ck_sub(S->diff[i + 1], M->nws[v], &S->diff[i + 1]);
	}
	for (int v = 0; !posof && v < d->nnode; v++)
		if (S->ran[v] != S->ranstamp)
			return NULL;
	for (int t = 0; t < d->nt; t++)
		if (S->birth[t] >= 0)
			ok &= close_instance(S, t);
	for (int c = 0; c < CAT_COUNT; c++)
		ok &= ck_add(pers, d->persistent[c], &pers);
	ok &= ev->recompute_cost < INT64_MAX;
	*sure = ok;
	if (!ok)
		return NULL;
	ev->valid = true;
	ev->nsteps = n;
	ev->live_bytes = S->live;
	ev->peak = pers;
	for (int i = 0; i < n; i++) {
		if (!ck_add(run, S->diff[i], &run) || !ck_add(pers, run, &S->live[i])) {
			*sure = false;
			return NULL;
		}
		if (S->live[i] > ev->peak || i == 0) {
			ev->peak = S->live[i];
			ev->peak_step = i;
		}
	}
	return ev;
}

/* B's state at snapshot p, its steps from step and posof (NULL: those B
 * holds, to be replaced). */
static void
bld_restore(const RmModel *M, RmBld *B, const RmBldSnap *p, const int *step, const int *posof)
{
	size_t nt = (size_t)M->d->nt;

	memcpy(B->tst, p->tst, nt);
	memcpy(B->gcur, p->gcur, sizeof *B->gcur * nt);
	if (step) {
		memcpy(B->step, step, sizeof *B->step * (size_t)p->nstep);
		memcpy(B->posof, posof, sizeof *B->posof * (size_t)p->nstep);
	}
	B->nstep = p->nstep;
}

/* rm_build, resumed at `at` (NULL: from the start). With a jump, the
 * steps built up to at->until are dropped for the loaded plan's. */
static bool
build_at(RmScorer *S, const unsigned char *state, const RmBldAt *at)
{
	const RmModel *M = S->m;
	RmBld *B = &S->b;
	unsigned char bits[RM_JUMP_KEEP];

	if (!at || at->from.nstep > B->capstep || (at->jump && at->to.nstep > B->capstep))
		return rm_build(S, state);
	int x = at->from.x;
	if (at->jump) {
		bld_restore(M, B, &at->from, NULL, NULL);
		for (; x <= at->until; x++)
			if (!rm_bld_pos(M, B, state, x))
				return false;
		for (int i = 0; i < at->nkeep; i++)
			bits[i] = B->tst[at->keep[i]];
		bld_restore(M, B, &at->to, at->step, at->posof);
		for (int i = 0; i < at->nkeep; i++)
			B->tst[at->keep[i]] = bits[i];
		x = at->to.x;
	} else {
		bld_restore(M, B, &at->from, at->step, at->posof);
	}
	for (; x < M->n; x++)
		if (!rm_bld_pos(M, B, state, x))
			return false;
	return true;
}

/* rm_score_state, its build resumed from at. */
static const MemEval *
score_state_at(RmScorer *S, const unsigned char *state, const RmBldAt *at)
{
	if (!build_at(S, state, at))
		return NULL;
	if (!S->m->simple)
		return rm_eval_steps(S, S->b.step, S->b.nstep);
	return rm_score_built(S);
}

const MemEval *
rm_score_state(RmScorer *S, const unsigned char *state)
{
	return score_state_at(S, state, NULL);
}

int64_t
rm_excess(const MemEval *ev, int64_t T)
{
	int64_t e = 0;

	for (int s = 0; s < ev->nsteps; s++)
		if (ev->live_bytes[s] > T)
			e = ck_sat_add(e, ev->live_bytes[s] - T);
	return e;
}

/* The state's 64-bit words, each mixed in whole. */
static uint64_t
state_hash(const unsigned char *st, int n)
{
	uint64_t h = rm_mix64((uint64_t)n ^ 0x9e3779b97f4a7c15u);

	for (int i = 0; i < n; i += 8) {
		uint64_t w = 0;
		memcpy(&w, st + i, (size_t)(n - i < 8 ? n - i : 8));
		h = rm_mix64(h ^ w);
	}
	return h;
}

/* The slot holding state (its hash h), or the empty slot it would take. */
static RmMemoEnt *
memo_slot(const RmMemo *m, const unsigned char *st, int n, uint64_t h)
{
	for (size_t i = h & (size_t)(m->cap - 1);; i = (i + 1) & (size_t)(m->cap - 1)) {
		RmMemoEnt *e = &m->slot[i];
		if (!e->state || (e->hash == h && !memcmp(e->state, st, (size_t)n)))
			return e;
	}
}

/* The entry of state, or NULL. */
static RmMemoEnt *
memo_find(const RmMemo *m, const unsigned char *st, int n, uint64_t h)
{
	RmMemoEnt *e = m->cap ? memo_slot(m, st, n, h) : NULL;

	return e && e->state ? e : NULL;
}

/* A new entry for state (not there), the table doubled first when half
 * full; NULL when one more state would pass the limit. */
static RmMemoEnt *
memo_insert(RmMemo *m, const unsigned char *st, int n, uint64_t h)
{
	if ((size_t)(m->n + 1) * (size_t)n > m->limit)
		return NULL;
	if (2 * (m->n + 1) > m->cap) {
		RmMemo g = *m;
		g.cap = m->cap ? 2 * m->cap : 256;
		g.slot = ar_alloc(&g.mem, sizeof *g.slot * (size_t)g.cap);      /* zeroed */
		for (int i = 0; i < m->cap; i++)
			if (m->slot[i].state)
				*memo_slot(&g, m->slot[i].state, n, m->slot[i].hash) = m->slot[i];
		*m = g;
	}
	RmMemoEnt *e = memo_slot(m, st, n, h);
	e->state = ar_alloc(&m->mem, (size_t)n + 1);
	memcpy(e->state, st, (size_t)n);
	e->hash = h;
	m->n++;
	return e;
}

bool
rm_memo_state(RmScorer *S, const unsigned char *state, int64_t T, RmScore *out)
{
	return rm_memo_state_at(S, state, T, out, NULL);
}

bool
rm_memo_state_at(RmScorer *S, const unsigned char *state, int64_t T, RmScore *out,
                 const RmBldAt *at)
{
	RmMemo *m = &S->memo;
	int n = S->m->ngap;
	uint64_t h = state_hash(state, n);
	RmMemoEnt *e = memo_find(m, state, n, h);

	if (e && e->T == T) {
		S->evals++;
		m->hits++;
		*out = e->sc;
		return e->valid;
	}
	const MemEval *ev = score_state_at(S, state, at);
	RmScore sc = {0, 0, 0};
	if (ev) {
		sc.peak = ev->peak;
		sc.cost = ev->recompute_cost;
		sc.exc = rm_excess(ev, T);
	}
	if (e || (e = memo_insert(m, state, n, h))) {
		e->T = T;
		e->sc = sc;
		e->valid = ev != NULL;
	}
	*out = sc;
	return ev != NULL;
}

const MemEval *
rm_score_built(RmScorer *S)
{
	bool sure;
	const MemEval *ev = score_steps(S, S->b.step, S->b.nstep, S->b.posof, &sure);

	if (ev)
		S->evals++;
	return ev;
}

const MemEval *
rm_score_steps(RmScorer *S, const int *step, int n)
{
	const RmModel *M = S->m;
	const MemEval *ev;
	bool sure;

	if (!M->simple)
		return rm_eval_steps(S, step, n);
	ev = score_steps(S, step, n, NULL, &sure);
	if (!ev && !sure)
		return rm_eval_steps(S, step, n);
	S->evals++;
	return ev;
}

/* A new zeroed slot at the pool's end. */
static RmCand *
pool_slot(RmPool *p)
{
	if (p->n == p->cap) {
		size_t old = sizeof *p->c * (size_t)p->cap;
		p->cap = p->cap ? 2 * p->cap : 16;
		p->c = ar_grow(&p->mem, p->c, old, sizeof *p->c * (size_t)p->cap);
	}
	memset(&p->c[p->n], 0, sizeof p->c[p->n]);
	return &p->c[p->n++];
}

void
rm_pool_add(RmPool *p, const RmModel *M, const unsigned char *state,
            const MemEval *ev)
{
	RmCand *c;

	if (!ev)
		return;
	c = pool_slot(p);
	c->state = ar_alloc(&p->mem, (size_t)M->ngap + 1);
	memcpy(c->state, state, (size_t)M->ngap);
	c->peak = ev->peak;
	c->cost = ev->recompute_cost;
	c->valid = true;
}

void
rm_pool_add_sched(RmPool *p, const int *step, int n, const MemEval *ev)
{
	RmCand *c;

	if (!ev)
		return;
	c = pool_slot(p);
	c->sched = ar_alloc(&p->mem, sizeof *c->sched * (size_t)(n + 1));
	memcpy(c->sched, step, sizeof *c->sched * (size_t)n);
	c->nsched = n;
	c->peak = ev->peak;
	c->cost = ev->recompute_cost;
	c->valid = true;
}

void
rm_pool_free(RmPool *p)
{
	ar_free(&p->mem);
	p->c = NULL;
	p->n = p->cap = 0;
}
