/* passes/analyze.c -- the pipeline, as a straight list of calls:
 * instantiate -> infer shapes -> autodiff -> lower -> plan -> liveness ->
 * memory plan. Reading analyze() tells the whole design. */
#include <string.h>
#include <time.h>

#include "dag.h"

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Evaluates s into ev; with verify, replays it through the independent
 * evaluator and reports any disagreement. Returns 0 or 4. */
static int
evaluate(const Dag *d, const Schedule *s, MemEval *ev, bool verify, Arena *a)
{
	char why[512];

	lv_eval(d, s, ev, a);
	if (!ev->valid) {
		fprintf(stderr, "remat: internal error: invalid schedule: %s\n", ev->error);
		return 4;
	}
	if (verify && !vf_check(d, s, ev, why, sizeof why)) {
		fprintf(stderr, "remat: verify: evaluators disagree: %s\n", why);
		return 4;
	}
	return 0;
}

int
analyze(const Program *p, const char *file, const NetOptions *o,
        const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d)
{
	double t0 = now();
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
	if ((rc = evaluate(&an->d, &base, &an->base, verify, a)))
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
		if ((rc = evaluate(&an->d, &an->plan.sched, &an->ev, verify, a)))
			return rc;
	}
	an->arena_bytes = mp_plan(&an->d, &an->ev, a);
	an->seconds = now() - t0;
	return an->plan.fits ? 0 : 3;
}
