/* passes/plan/remat.c -- the planners' entry point (rm_plan): builds the
 * shared model (remat_model.c), runs the planner the goal asks for, picks
 * from the pool of scored candidates, and the lower bound. The only file
 * that calls the planners; none of them calls back into it. Reads the Dag
 * only; the result's schedule lives in the caller's arena. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* Whether cost is within the goal's recompute cap. */
static bool
within_cap(const Dag *d, const PlanGoal *g, int64_t cost)
{
	if (g->budget >= 0 || g->max_recompute < 0)
		return true;
	return (double)cost <= g->max_recompute * (double)d->forward_cost;
}

/* With a budget: the cheapest fitting candidate, else the smallest peak.
 * Without: the smallest peak within the cap. Ties go to the earlier. */
static int
pick(const Dag *d, const RmPool *p, const PlanGoal *g)
{
	int best = -1;

	for (int i = 0; i < p->n; i++) {
		const RmCand *c = &p->c[i], *b = best >= 0 ? &p->c[best] : NULL;
		if (g->budget >= 0 && c->peak <= g->budget) {
			if (!b || b->peak > g->budget || c->cost < b->cost ||
			    (c->cost == b->cost && c->peak < b->peak))
				best = i;
		} else if (g->budget >= 0) {
			if (!b || (b->peak > g->budget && (c->peak < b->peak ||
			    (c->peak == b->peak && c->cost < b->cost))))
				best = i;
		} else if (within_cap(d, g, c->cost)) {
			if (!b || c->peak < b->peak ||
			    (c->peak == b->peak && c->cost < b->cost))
				best = i;
		}
	}
	return best;
}

/* The -O0 schedule as it is, also when it is invalid. */
static PlanResult
plan_base(const Dag *d, const PlanGoal *goal, Arena *a)
{
	PlanResult r;
	MemEval ev;
	Arena s;

	memset(&r, 0, sizeof r);
	r.sched = dag_base_schedule(d, a);
	ar_init(&s);
	lv_eval(d, &r.sched, &ev, &s);
	r.peak = ev.peak;
	r.fits = ev.valid && (goal->budget < 0 || ev.peak <= goal->budget);
	r.lower_bound = rm_lower_bound(d);
	ar_free(&s);
	return r;
}

/* Whether the base schedule, valid, meets the lower bound; it is then
 * optimal for any goal (no peak is smaller, no recompute cheaper than its
 * none) and *r is its plan. An inference chain is such a graph: the
 * search's model of the DAG (about 200 bytes a node) is not built. */
static bool
base_at_bound(const Dag *d, const PlanGoal *goal, Arena *a, PlanResult *r)
{
	int64_t peak = rm_base_peak(d);

	if (peak < 0 || peak != rm_lower_bound(d))
		return false;
	memset(r, 0, sizeof *r);
	r->sched = dag_base_schedule(d, a);
	r->peak = peak;
	r->fits = goal->budget < 0 || peak <= goal->budget;
	r->lower_bound = peak;
	return true;
}

PlanResult
rm_plan(const Dag *d, const PlanGoal *goal, Arena *a)
{
	PlanResult r;

	if (!goal->exact && goal->level >= 2 && base_at_bound(d, goal, a, &r))
		return r;
	return rm_plan_search(d, goal, NULL, a);
}

/* The evaluation of the plan keeping every gap (st): the caller's of the
 * base schedule (known) when that plan is the base schedule itself. */
static const MemEval *
eval_base(RmScorer *S, const unsigned char *st, const MemEval *known)
{
	const Dag *d = S->m->d;

	if (!rm_build(S, st))
		return NULL;
	if (known && S->b.nstep == d->nbase &&
	    !memcmp(S->b.step, d->base_order, sizeof *S->b.step * (size_t)d->nbase))
		return rm_eval_known(S, S->b.step, S->b.nstep, known);
	return rm_eval_steps(S, S->b.step, S->b.nstep);      /* rm_eval_state's */
}

PlanResult
rm_plan_search(const Dag *d, const PlanGoal *goal, PlanShare *share, Arena *a)
{
	RmCtx C;
	RmPool pool = {0};
	PlanResult r;
	unsigned char *st;
	int k;

	if (goal->exact)
		return rm_plan_exact(d, goal, a);
	rm_ctx_init(&C, d);
	LowerBound lb = share && share->lb ? *share->lb : rm_lower_bound_parts(d);
	/* the ladders' anchor (LowerBound.ladder), not the tighter bound */
	C.r.lower = lb.ladder;
	st = rm_state_new(&C.m, &C.r.mem);
	rm_pool_add(&pool, &C.m, st, eval_base(&C.s, st, share ? share->base : NULL));
	if (pool.n == 0) {
		rm_ctx_free(&C);
		return plan_base(d, goal, a);
	}
	k = 0;
	if (goal->level == 1) {
		rm_plan_o1(&C.s, &pool);
		k = pool.n - 1;
	} else if (goal->level >= 2) {
		/* issue 9 (planner-base): the checkpointing baselines join the
		 * pool, so -O2 is never above them within the cap. Under a budget
		 * the pool first gets exactly what plain -O2 (same cap) builds,
		 * so that any budget at or above -O2's peak fits; none of it
		 * depends on the budget, so a larger one never costs more. */
		PlanGoal plain = *goal;
		plain.budget = -1;
		rm_plan_o2(&C.s, &C.r, &pool, &plain);
		int searched = pool.n;
		rm_pool_baselines(&C.s, &pool, lb.bytes, share ? &share->baselines : NULL, a);
		if (goal->seed.n > 0 && goal->budget < 0)
			rm_pool_add_sched(&pool, goal->seed.step, goal->seed.n,
			                  rm_eval_steps(&C.s, goal->seed.step, goal->seed.n));
		/* the best baseline or seed gets the improvement the searched
		 * plans had, and may then beat them (Whisper with no cap: per-def
		 * reordered, 4.80 -> 4.62 GB, the default cap's plan) */
		rm_plan_o2_late(&C.s, &C.r, &pool, searched, &plain);
		if (goal->budget >= 0)
			rm_plan_o2(&C.s, &C.r, &pool, goal);
		k = pick(d, &pool, goal);
		if (k < 0)
			k = 0;
	}
	memset(&r, 0, sizeof r);
	if (pool.c[k].sched) {
		r.sched.n = pool.c[k].nsched;
		r.sched.step = ar_alloc(a, sizeof *r.sched.step * (size_t)(r.sched.n + 1));
		memcpy(r.sched.step, pool.c[k].sched, sizeof *r.sched.step * (size_t)r.sched.n);
	} else {
		ir_assert(rm_build(&C.s, pool.c[k].state));
		r.sched = rm_built_copy(&C.s, a);
	}
	r.peak = pool.c[k].peak;
	r.recompute_cost = pool.c[k].cost;
	r.fits = goal->budget < 0 || r.peak <= goal->budget;
	r.lower_bound = lb.bytes;
	rm_pool_free(&pool);
	rm_ctx_free(&C);
	return r;
}

/* issue 9: the bound and its parts are in baseline.c. */
int64_t
rm_lower_bound(const Dag *d)
{
	return rm_lower_bound_parts(d).bytes;
}
