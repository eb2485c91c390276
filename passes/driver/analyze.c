/* passes/analyze.c -- the pipeline, as a straight list of calls:
 * instantiate -> infer shapes -> autodiff -> lower -> plan -> liveness ->
 * baselines -> memory plan. Reading analyze() tells the whole design. */
#include <string.h>

#include "dag.h"

/* issue 9: the lower bound's parts, and for a planned level the plans
 * users write by hand (sqrt(n) and per-def checkpointing), replayed
 * through the verifier with --verify. */
static int
baselines(Analysis *an, const PlanGoal *goal, bool verify, Arena *a)
{
	PlanResult *b[2] = {&an->sqrtn, &an->perblock};
	MemEval ev;
	int rc;

	an->lb = rm_lower_bound_parts(&an->d);
	if (goal->level == 0)
		return 0;
	an->has_baselines = true;
	an->sqrtn = rm_plan_sqrtn(&an->d, a);
	an->perblock = rm_plan_perblock(&an->d, a);
	for (int i = 0; i < 2 && verify; i++)
		if (b[i]->sched.n > 0 &&
		    (rc = vf_evaluate(&an->d, &b[i]->sched, &ev, true, a)))
			return rc;
	return 0;
}

int
analyze(const Program *p, const char *file, const NetOptions *o,
        const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d)
{
	double t0 = dag_now();
	Schedule base;
	int rc;

	memset(an, 0, sizeof *an);
	an->goal = *goal;
	ir_graph_init(&an->g, a, file);
	if (net_instantiate(p, o, &an->g, d) || shape_infer(&an->g, d))
		return 1;
	if (an->g.train && autodiff(&an->g, d))
		return 1;
	lower_graph(&an->g, &an->d, a);
	base = dag_base_schedule(&an->d, a);
	if ((rc = vf_evaluate(&an->d, &base, &an->base, verify, a)))
		return rc;
	if (goal->level == 0 && goal->budget < 0 && !goal->exact) {
		/* -O0 is the base schedule: no planning, no second evaluation */
		an->plan.sched = base;
		an->plan.peak = an->base.peak;
		an->plan.fits = true;
		an->plan.lower_bound = rm_lower_bound(&an->d);
		an->ev = an->base;
	} else {
		an->plan = rm_plan(&an->d, goal, a);
		if (an->plan.error) {   /* --exact on a graph too large to search */
			fprintf(stderr, "remat: %s\n", an->plan.error);
			return 1;
		}
		if ((rc = vf_evaluate(&an->d, &an->plan.sched, &an->ev, verify, a)))
			return rc;
	}
	if ((rc = baselines(an, goal, verify, a)))
		return rc;
	an->arena_bytes = mp_plan(&an->d, &an->ev, a);
	an->seconds = dag_now() - t0;
	return an->plan.fits ? 0 : 3;
}
