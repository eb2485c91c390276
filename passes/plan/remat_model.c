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
	C->tst = ar_alloc(&C->mem, (size_t)d->nt + 1);
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
		C->nws[v] = d->node[v].workspace;
	}
	C->oofs[d->nnode] = nout;
	C->gcur = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->gcur);
	C->grp = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->grp);
	C->emitted = ar_alloc(&C->mem, (2 * (size_t)d->nnode + 2) * sizeof *C->emitted);
	C->stack = ar_alloc(&C->mem, ((size_t)C->uofs[d->nnode] + (size_t)d->nnode + 1) * sizeof *C->stack);
	C->capstep = 2 * C->n + 16;
	C->step = ar_alloc(&C->mem, ((size_t)C->capstep) * sizeof *C->step);
	C->posof = ar_alloc(&C->mem, ((size_t)C->capstep) * sizeof *C->posof);
	C->simple = dag_simple(d);
	C->birth = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->birth);
	C->lastuse = ar_alloc(&C->mem, ((size_t)d->nt + 1) * sizeof *C->lastuse);
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

/* Appends a step at base position x; false past the size limit. */
static bool
emit(RmCtx *C, int v, int x)
{
	if (C->nstep >= 16 * C->n + 1024)
		return false;
	if (C->nstep == C->capstep) {
		size_t old = sizeof *C->step * (size_t)C->capstep;
		C->capstep *= 2;
		C->step = ar_grow(&C->mem, C->step, old, 2 * old);
		C->posof = ar_grow(&C->mem, C->posof, old, 2 * old);
	}
	C->step[C->nstep] = v;
	C->posof[C->nstep++] = x;
	return true;
}

static bool
missing(const RmCtx *C, int t)
{
	return (C->tst[t] & (TS_RECOMP | TS_MADE | TS_AVAIL)) == (TS_RECOMP | TS_MADE);
}

/* Recomputes node p before base position x, first recomputing (post-order)
 * every dropped input it needs. */
static bool
recompute(RmCtx *C, int p, int x)
{
	const Dag *d = C->d;
	int *expanded = C->emitted + d->nnode + 1;
	int sp = 0;

	C->stack[sp++] = p;
	while (sp > 0) {
		int q = C->stack[sp - 1];
		if (C->emitted[q] == C->stamp) {
			sp--;
			continue;
		}
		if (expanded[q] != C->stamp) {
			expanded[q] = C->stamp;
			for (int k = C->uofs[q]; k < C->uofs[q + 1]; k++)
				if (missing(C, C->use[k]))
					C->stack[sp++] = C->prod[C->use[k]];
			continue;
		}
		sp--;
		if (!emit(C, q, x))
			return false;
		C->emitted[q] = C->stamp;
		for (int j = 0; j < d->node[q].nout; j++) {
			int t = d->node[q].out[j];
			if ((C->tst[t] & (TS_RECOMP | TS_AVAIL)) == TS_RECOMP) {
				C->tst[t] |= TS_AVAIL;
				C->grp[C->ngrp++] = t;
			}
		}
	}
	return true;
}

/* After base step x: a use ends the gap before it; the state of the gap
 * after it decides whether the instance is kept. */
static void
after_step(RmCtx *C, const unsigned char *state, int v)
{
	const Dag *d = C->d;

	for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++) {
		int t = C->use[k];
		if ((C->tst[t] & (TS_RECOMP | TS_MADE)) != (TS_RECOMP | TS_MADE))
			continue;
		int g = ++C->gcur[t];
		if (g < C->gofs[t + 1] && state[g] != GAP_KEEP)
			C->tst[t] &= (unsigned char)~TS_AVAIL;
	}
	for (int j = C->oofs[v]; j < C->oofs[v + 1] && !d->node[v].once; j++) {
		int t = C->out[j];
		if ((C->tst[t] & (TS_RECOMP | TS_MADE)) != TS_RECOMP)
			continue;
		C->tst[t] = TS_RECOMP | TS_MADE;
		if (C->gofs[t] == C->gofs[t + 1] || state[C->gofs[t]] == GAP_KEEP)
			C->tst[t] |= TS_AVAIL;
	}
	for (int i = 0; i < C->ngrp; i++) {
		int t = C->grp[i];
		int g = C->gcur[t];
		if (g < C->gofs[t + 1] && state[g] == GAP_TRANSIENT)
			C->tst[t] &= (unsigned char)~TS_AVAIL;
	}
}

bool
rm_build(RmCtx *C, const unsigned char *state)
{
	const Dag *d = C->d;

	C->nstep = 0;
	memcpy(C->tst, C->tinit, (size_t)d->nt);
	memcpy(C->gcur, C->gofs, sizeof *C->gcur * (size_t)d->nt);
	for (int x = 0; x < C->n; x++) {
		int v = d->base_order[x];
		C->ngrp = 0;
		C->stamp++;
		for (int k = C->eofs[x]; k < C->eofs[x + 1]; k++) {
			int g = C->egap[k], t = C->gtensor[g];
			if (state[g] == GAP_EARLY && missing(C, t) &&
			    C->gcur[t] == g &&
			    !recompute(C, C->prod[t], x))
				return false;
		}
		for (int k = C->uofs[v]; k < C->uofs[v + 1]; k++)
			if (missing(C, C->use[k]) &&
			    !recompute(C, C->prod[C->use[k]], x))
				return false;
		if (!emit(C, v, x))
			return false;
		after_step(C, state, v);
	}
	return true;
}

/* Builds and evaluates; NULL when the plan grows past the size limit or
 * is invalid. The result lives until the next call. */
const MemEval *
rm_eval(RmCtx *C, const unsigned char *state)
{
	if (!rm_build(C, state))
		return NULL;
	return rm_eval_steps(C, C->step, C->nstep);
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
	*n = C->nstep;
	return C->step;
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

const MemEval *
rm_score(RmCtx *C, const unsigned char *state)
{
	const Dag *d = C->d;
	MemEval *ev = &C->ev;
	int64_t pers = 0, run = 0;
	bool ok = true;         /* no sum passed 2^63: as lv_eval, which
	                           refuses the plan then */

	if (!C->simple)
		return rm_eval(C, state);
	if (!rm_build(C, state))
		return NULL;
	if (C->capdiff < C->capstep + 1) {
		size_t old = sizeof *C->diff * (size_t)C->capdiff;
		size_t n = sizeof *C->diff * (size_t)(C->capstep + 1);
		C->diff = ar_grow(&C->mem, C->diff, old, n);
		C->live = ar_grow(&C->mem, C->live, old, n);
		C->capdiff = C->capstep + 1;
	}
	memset(C->diff, 0, sizeof *C->diff * (size_t)(C->nstep + 1));
	memset(C->birth, 0xff, sizeof *C->birth * (size_t)d->nt);
	memset(ev, 0, sizeof *ev);
	/* on simple Dags a node's uses are its in[] (no views, no
	 * accumulations), in order */
	for (int i = 0; i < C->nstep; i++) {
		int v = C->step[i];
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
		if (C->pos[v] != C->posof[i])
			ok &= ck_add(ev->recompute_cost, C->ncost[v], &ev->recompute_cost);
		ok &= ck_add(C->diff[i], C->nws[v], &C->diff[i]);
		ok &= ck_sub(C->diff[i + 1], C->nws[v], &C->diff[i + 1]);
	}
	for (int t = 0; t < d->nt; t++)
		if (C->birth[t] >= 0)
			ok &= close_instance(C, t);
	for (int c = 0; c < CAT_COUNT; c++)
		ok &= ck_add(pers, d->persistent[c], &pers);
	ok &= ev->recompute_cost < INT64_MAX;
	if (!ok)
		return NULL;
	ev->valid = true;
	ev->nsteps = C->nstep;
	ev->live_bytes = C->live;
	ev->peak = pers;
	for (int i = 0; i < C->nstep; i++) {
		if (!ck_add(run, C->diff[i], &run) || !ck_add(pers, run, &C->live[i]))
			return NULL;
		if (C->live[i] > ev->peak || i == 0) {
			ev->peak = C->live[i];
			ev->peak_step = i;
		}
	}
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
