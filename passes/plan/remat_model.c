/* passes/plan/remat_model.c -- the planning model every planner shares
 * (remat_int.h): the gap table over the base order, the builder that turns
 * gap states into a schedule, the scoring through lv_eval (and rm_score,
 * its shortcut on plain DAGs), and the pool of scored candidates -- gap
 * states, or explicit schedules from remat_dtr.c and remat_ls.c. It calls
 * no planner: the planners call it, and remat.c's dispatcher calls them.
 * Reads the Dag only. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* Tensors each node reads: in[], views' sources, accumulation view sources. */
static void
ctx_uses(RmCtx *C)
{
	const Dag *d = C->d;
	int *mark = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *mark);
	int total = 0, k = 0;

	for (int v = 0; v < d->nnode; v++)
		total += d->node[v].nin + d->node[v].nout + d->node[v].nacc;
	C->uofs = ar_alloc(&C->mem, ((size_t)d->nnode + 1) * sizeof *C->uofs);
	C->use = ar_alloc(&C->mem, ((size_t)total + 1) * sizeof *C->use);
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		C->uofs[v] = k;
#define ADD(t) do { int t_ = (t); if (t_ >= 0 && mark[t_] != v + 1) \
		{ mark[t_] = v + 1; C->use[k++] = t_; } } while (0)
		for (int j = 0; j < n->nin; j++)
			ADD(n->in[j]);
		for (int j = 0; j < n->nout; j++)
			ADD(d->t[n->out[j]].view_src);
		for (int j = 0; j < n->nacc; j++)
			ADD(n->acc[j].view_src);
#undef ADD
	}
	C->uofs[d->nnode] = k;
}

/* The gaps of every recomputable tensor, from the base order. */
static void
ctx_gaps(RmCtx *C)
{
	const Dag *d = C->d;
	int *cnt = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *cnt);

	C->gofs = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->gofs);
	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++) {
			int t = C->use[k];
			if (C->prod[t] >= 0 && C->pos[C->prod[t]] < x)
				cnt[t]++;
		}
	}
	for (int t = 0; t < d->nt; t++)
		C->gofs[t + 1] = C->gofs[t] + cnt[t] + (C->prod[t] >= 0);
	C->ngap = C->gofs[d->nt];
	C->gend = ar_alloc(&C->mem, ((size_t)C->ngap + 1) * sizeof *C->gend);
	C->gtensor = ar_alloc(&C->mem, ((size_t)C->ngap + 1) * sizeof *C->gtensor);
	memset(cnt, 0, sizeof *cnt * (size_t)d->nt);
	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++) {
			int t = C->use[k];
			if (C->prod[t] < 0 || C->pos[C->prod[t]] >= x)
				continue;
			C->gend[C->gofs[t] + cnt[t]] = x;
			C->gtensor[C->gofs[t] + cnt[t]++] = t;
		}
	}
	for (int t = 0; t < d->nt; t++) {
		if (C->prod[t] < 0)
			continue;
		C->gend[C->gofs[t + 1] - 1] = C->n;
		C->gtensor[C->gofs[t + 1] - 1] = t;
	}
}

/* longgap[t]: the first gap of a forward tensor that ends at a backward
 * node -- what Chen's checkpointing drops. */
static void
ctx_longgaps(RmCtx *C)
{
	const Dag *d = C->d;

	C->longgap = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->longgap);
	for (int t = 0; t < d->nt; t++) {
		C->longgap[t] = -1;
		if (C->prod[t] < 0 || d->node[C->prod[t]].is_backward)
			continue;
		for (int g = C->gofs[t]; g < C->gofs[t + 1] - 1; g++) {
			if (d->node[d->base_order[C->gend[g]]].is_backward) {
				C->longgap[t] = g;
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
ctx_early(RmCtx *C)
{
	const Dag *d = C->d;
	int *cnt = ar_alloc(&C->mem, ((size_t)d->nt + 2) * sizeof *cnt);
	int *uofs = ar_alloc(&C->mem, ((size_t)d->nt + 2) * sizeof *uofs);
	int *upos = ar_alloc(&C->mem, ((size_t)C->uofs[d->nnode] + 1) * sizeof *upos);

	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++)
			uofs[C->use[k] + 1]++;
	}
	for (int t = 0; t < d->nt; t++)
		uofs[t + 1] += uofs[t];
	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++) {
			int t = C->use[k];
			upos[uofs[t] + cnt[t]++] = x;
		}
	}
	C->gearly = ar_alloc(&C->mem, ((size_t)C->ngap + 1) * sizeof *C->gearly);
	C->eofs = ar_alloc(&C->mem, ((size_t)C->n + 2) * sizeof *C->eofs);
	for (int g = 0; g < C->ngap; g++) {
		int t = C->gtensor[g], p = C->prod[t], b = C->gend[g], s = b;
		int a = g == C->gofs[t] ? C->pos[p] : C->gend[g - 1];
		for (int k = C->uofs[p]; k < C->uofs[p + 1] && b < C->n; k++) {
			int u = C->use[k];
			if (d->t[u].to_end)
				continue;
			int y = last_upto(upos + uofs[u], uofs[u + 1] - uofs[u], b);
			if (y < s)
				s = y;
		}
		C->gearly[g] = b < C->n && s > a + 1 && s < b ? s : -1;
		if (C->gearly[g] >= 0)
			C->eofs[C->gearly[g] + 1]++;
	}
	for (int x = 0; x < C->n; x++)
		C->eofs[x + 1] += C->eofs[x];
	C->egap = ar_alloc(&C->mem, ((size_t)C->eofs[C->n] + 1) * sizeof *C->egap);
	cnt = ar_alloc(&C->mem, ((size_t)C->n + 1) * sizeof *cnt);
	for (int g = 0; g < C->ngap; g++)
		if (C->gearly[g] >= 0)
			C->egap[C->eofs[C->gearly[g]] + cnt[C->gearly[g]]++] = g;
}

/* Whether lv_eval's rules reduce to rm_score's on d: one instance owns
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
rm_ctx_init(RmCtx *C, const Dag *d)
{
	memset(C, 0, sizeof *C);
	ar_init(&C->mem);
	C->d = d;
	C->n = d->nbase;
	C->pos = ar_alloc(&C->mem, ((size_t)d->nnode + 1) * sizeof *C->pos);
	C->prod = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->prod);
	for (int v = 0; v < d->nnode; v++)
		C->pos[v] = -1;
	for (int x = 0; x < C->n; x++)
		C->pos[d->base_order[x]] = x;
	for (int t = 0; t < d->nt; t++)
		C->prod[t] = -1;
	for (int v = 0; v < d->nnode; v++) {
		if (d->node[v].is_backward)
			C->has_backward = true;
		if (d->node[v].once || C->pos[v] < 0)
			continue;
		for (int j = 0; j < d->node[v].nout; j++)
			if (!d->t[d->node[v].out[j]].from_start)
				C->prod[d->node[v].out[j]] = v;
	}
	ctx_uses(C);
	ctx_gaps(C);
	ctx_longgaps(C);
	ctx_early(C);
	C->c0 = d->total_cost / 100000 + 1;
	C->tinit = ar_alloc(&C->mem, (size_t)d->nt + 1);
	for (int t = 0; t < d->nt; t++)
		C->tinit[t] = C->prod[t] >= 0 ? TS_RECOMP : 0;
	C->oofs = ar_alloc(&C->mem, ((size_t)d->nnode + 1) * sizeof *C->oofs);
	C->ncost = ar_alloc(&C->mem, ((size_t)d->nnode + 1) * sizeof *C->ncost);
	C->nws = ar_alloc(&C->mem, ((size_t)d->nnode + 1) * sizeof *C->nws);
	int nout = 0;
	for (int v = 0; v < d->nnode; v++)
		nout += d->node[v].nout;
	C->out = ar_alloc(&C->mem, ((size_t)nout + 1) * sizeof *C->out);
	nout = 0;
	for (int v = 0; v < d->nnode; v++) {
		C->oofs[v] = nout;
		for (int j = 0; j < d->node[v].nout; j++)
			C->out[nout++] = d->node[v].out[j];
		C->ncost[v] = d->node[v].cost;
		C->nws[v] = dag_workspace(d, v);
	}
	C->oofs[d->nnode] = nout;
	rm_bld_init(C, &C->b, &C->mem);
	C->simple = dag_simple(d);
	C->birth = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->birth);
	C->lastuse = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->lastuse);
	C->ran = ar_alloc(&C->mem, ((size_t)d->nnode + 1) * sizeof *C->ran);
	ar_init(&C->scratch);
}

void
rm_ctx_free(RmCtx *C)
{
	ar_free(&C->mem);
	ar_free(&C->scratch);
}

unsigned char *
rm_state_new(const RmCtx *C, Arena *a)
{
	return ar_alloc(a, (size_t)C->ngap + 1);
}

void
rm_bld_init(const RmCtx *C, RmBld *B, Arena *a)
{
	const Dag *d = C->d;

	memset(B, 0, sizeof *B);
	B->mem = a;
	B->tst = ar_alloc(a, (size_t)d->nt + 1);
	B->gcur = ar_alloc(a, ((size_t)d->nt + 1) * sizeof *B->gcur);
	B->grp = ar_alloc(a, ((size_t)d->nt + 1) * sizeof *B->grp);
	B->emitted = ar_alloc(a, (2 * (size_t)d->nnode + 2) * sizeof *B->emitted);
	B->stack = ar_alloc(a, ((size_t)C->uofs[d->nnode] + (size_t)d->nnode + 1) * sizeof *B->stack);
	B->capstep = 2 * C->n + 16;
	B->step = ar_alloc(a, ((size_t)B->capstep) * sizeof *B->step);
	B->posof = ar_alloc(a, ((size_t)B->capstep) * sizeof *B->posof);
}

/* Appends a step at base position x; false past the size limit. */
static bool
emit(const RmCtx *C, RmBld *B, int v, int x)
{
	if (B->skip + B->nstep >= RM_MAXSTEP(C))
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
recompute(const RmCtx *C, RmBld *B, int p, int x)
{
	const Dag *d = C->d;
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
			for (int k = C->uofs[q]; k < C->uofs[q + 1]; k++)
				if (missing(B, C->use[k]))
					B->stack[sp++] = C->prod[C->use[k]];
			continue;
		}
		sp--;
		if (!emit(C, B, q, x))
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
after_step(const RmCtx *C, RmBld *B, const unsigned char *state, int v)
{
	const Dag *d = C->d;

	for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++) {
		int t = C->use[k];
		if ((B->tst[t] & (TS_RECOMP | TS_MADE)) != (TS_RECOMP | TS_MADE))
			continue;
		int g = ++B->gcur[t];
		if (g < C->gofs[t + 1] && state[g] != GAP_KEEP)
			set_tst(B, t, B->tst[t] & (unsigned char)~TS_AVAIL);
	}
	for (int j = C->oofs[v]; j < C->oofs[v + 1] && !d->node[v].once; j++) {
		int t = C->out[j];
		if ((B->tst[t] & (TS_RECOMP | TS_MADE)) != TS_RECOMP)
			continue;
		set_tst(B, t, TS_RECOMP | TS_MADE |
		        (C->gofs[t] == C->gofs[t + 1] || state[C->gofs[t]] == GAP_KEEP ?
		         TS_AVAIL : 0));
	}
	for (int i = 0; i < B->ngrp; i++) {
		int t = B->grp[i];
		int g = B->gcur[t];
		if (g < C->gofs[t + 1] && state[g] == GAP_TRANSIENT)
			set_tst(B, t, B->tst[t] & (unsigned char)~TS_AVAIL);
	}
}

void
rm_bld_start(const RmCtx *C, RmBld *B)
{
	B->nstep = 0;
	memcpy(B->tst, C->tinit, (size_t)C->d->nt);
	memcpy(B->gcur, C->gofs, sizeof *B->gcur * (size_t)C->d->nt);
}

bool
rm_bld_pos(const RmCtx *C, RmBld *B, const unsigned char *state, int x)
{
	int v = C->d->base_order[x];

	B->ngrp = 0;
	B->stamp++;
	for (int k = C->eofs[x]; k < C->eofs[x + 1]; k++) {
		int g = C->egap[k], t = C->gtensor[g];
		if (state[g] == GAP_EARLY && missing(B, t) && B->gcur[t] == g &&
		    !recompute(C, B, C->prod[t], x))
			return false;
	}
	for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++)
		if (missing(B, C->use[k]) && !recompute(C, B, C->prod[C->use[k]], x))
			return false;
	if (!emit(C, B, v, x))
		return false;
	after_step(C, B, state, v);
	return true;
}

bool
rm_build(RmCtx *C, const unsigned char *state)
{
	rm_bld_start(C, &C->b);
	for (int x = 0; x < C->n; x++)
		if (!rm_bld_pos(C, &C->b, state, x))
			return false;
	return true;
}

/* Builds and evaluates; NULL when the plan grows past the size limit or
 * is invalid. The result lives until the next call. */
const MemEval *
rm_eval(RmCtx *C, const unsigned char *state)
{
	if (!rm_build(C, state))
		return NULL;
	return rm_eval_steps(C, C->b.step, C->b.nstep);
}

const MemEval *
rm_eval_steps(RmCtx *C, const int *step, int n)
{
	Schedule s = {n, (int *)step};

	ar_free(&C->scratch);
	lv_eval(C->d, &s, &C->ev, &C->scratch);
	C->evals++;
	return C->ev.valid ? &C->ev : NULL;
}

const int *
rm_cand_steps(RmCtx *C, const RmCand *c, int *n)
{
	if (c->sched) {
		*n = c->nsched;
		return c->sched;
	}
	if (!rm_build(C, c->state))
		return NULL;
	*n = C->b.nstep;
	return C->b.step;
}

/* The instance of t made at birth[t] owns its bytes through lastuse[t];
 * false on overflow. */
static bool
close_instance(RmCtx *C, int t)
{
	int64_t *lo = &C->diff[C->birth[t]], *hi = &C->diff[C->lastuse[t] + 1];

	return ck_add(*lo, C->d->t[t].bytes, lo) &
	       ck_sub(*hi, C->d->t[t].bytes, hi);
}

/* rm_score's rules over steps step[0..n): a step recomputes when posof
 * gives it another base position than its node's, or (posof NULL) when
 * its node ran before (lv_eval's rule). NULL when lv_eval would refuse
 * the steps, and then *sure tells whether it surely would (false: a sum
 * passed 2^63, which lv_eval may treat otherwise). */
static const MemEval *
score_steps(RmCtx *C, const int *step, int n, const int *posof, bool *sure)
{
	const Dag *d = C->d;
	MemEval *ev = &C->ev;
	int64_t pers = 0, run = 0;
	bool ok = true;         /* no sum passed 2^63 */

	*sure = true;
	if (C->capdiff < n + 1) {
		size_t old = sizeof *C->diff * (size_t)C->capdiff;
		size_t m = sizeof *C->diff * (size_t)(n + 1);
		C->diff = ar_grow(&C->mem, C->diff, old, m);
		C->live = ar_grow(&C->mem, C->live, old, m);
		C->capdiff = n + 1;
	}
	memset(C->diff, 0, sizeof *C->diff * (size_t)(n + 1));
	memset(C->birth, 0xff, sizeof *C->birth * (size_t)d->nt);
	memset(ev, 0, sizeof *ev);
	if (!posof)
		C->ranstamp++;
	/* on simple Dags a node's uses are its in[] (no views, no
	 * accumulations), in order */
	for (int i = 0; i < n; i++) {
		int v = step[i];
		bool re;
		for (int j = C->uofs[v]; j < C->uofs[v + 1]; j++) {
			if (C->birth[C->use[j]] < 0)
				return NULL;
			C->lastuse[C->use[j]] = i;
		}
		for (int j = C->oofs[v]; j < C->oofs[v + 1]; j++) {
			int t = C->out[j];
			if (C->birth[t] >= 0)
				ok &= close_instance(C, t);
			C->birth[t] = C->lastuse[t] = i;
		}
		if (posof) {
			re = C->pos[v] != posof[i];
		} else {
			re = C->ran[v] == C->ranstamp;
			if (re && d->node[v].once)
				return NULL;
			C->ran[v] = C->ranstamp;
		}
		if (re)
			ok &= ck_add(ev->recompute_cost, C->ncost[v], &ev->recompute_cost);
		ok &= ck_add(C->diff[i], C->nws[v], &C->diff[i]);
		ok &= ck_sub(C->diff[i + 1], C->nws[v], &C->diff[i + 1]);
	}
	for (int v = 0; !posof && v < d->nnode; v++)
		if (C->ran[v] != C->ranstamp)
			return NULL;
	for (int t = 0; t < d->nt; t++)
		if (C->birth[t] >= 0)
			ok &= close_instance(C, t);
	for (int c = 0; c < CAT_COUNT; c++)
		ok &= ck_add(pers, d->persistent[c], &pers);
	ok &= ev->recompute_cost < INT64_MAX;
	*sure = ok;
	if (!ok)
		return NULL;
	ev->valid = true;
	ev->nsteps = n;
	ev->live_bytes = C->live;
	ev->peak = pers;
	for (int i = 0; i < n; i++) {
		if (!ck_add(run, C->diff[i], &run) || !ck_add(pers, run, &C->live[i])) {
			*sure = false;
			return NULL;
		}
		if (C->live[i] > ev->peak || i == 0) {
			ev->peak = C->live[i];
			ev->peak_step = i;
		}
	}
	return ev;
}

const MemEval *
rm_score(RmCtx *C, const unsigned char *state)
{

	if (!C->simple)
		return rm_eval(C, state);
	if (!rm_build(C, state))
		return NULL;
	return rm_score_built(C);
}

const MemEval *
rm_score_built(RmCtx *C)
{
	bool sure;
	const MemEval *ev = score_steps(C, C->b.step, C->b.nstep, C->b.posof, &sure);

	if (ev)
		C->evals++;
	return ev;
}

const MemEval *
rm_score_steps(RmCtx *C, const int *step, int n)
{
	const MemEval *ev;
	bool sure;

	if (!C->simple)
		return rm_eval_steps(C, step, n);
	ev = score_steps(C, step, n, NULL, &sure);
	if (!ev && !sure)
		return rm_eval_steps(C, step, n);
	C->evals++;
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
rm_pool_add(RmPool *p, const RmCtx *C, const unsigned char *state,
            const MemEval *ev)
{
	RmCand *c;

	if (!ev)
		return;
	c = pool_slot(p);
	c->state = ar_alloc(&p->mem, (size_t)C->ngap + 1);
	memcpy(c->state, state, (size_t)C->ngap);
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
