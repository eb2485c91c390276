/* passes/analyze.c -- the pipeline, as a straight list of calls:
 * instantiate -> infer shapes -> autodiff -> lower -> plan -> liveness ->
 * memory plan. Reading analyze() tells the whole design. */
#include <string.h>

#include "dag.h"

int
analyze(const Program *p, const char *file, const NetOptions *o,
        const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d)
{
	double t0 = dag_now();
	Schedule base;
	DagExcess x;
	int rc;

	memset(an, 0, sizeof *an);
	an->goal = *goal;
	ir_graph_init(&an->g, a, file);
	if (net_instantiate(p, o, &an->g, d) || shape_infer(&an->g, d))
		return 1;
	if (an->g.train && autodiff(&an->g, d))
		return 1;
	lower_graph(&an->g, &an->d, a);
	if (dag_excess(&an->d, &x)) {
		const Dag *dg = &an->d;
		Loc at = x.tensor >= 0 && dg->t[x.tensor].ir_tensor >= 0
		         ? an->g.t[dg->t[x.tensor].ir_tensor].loc
		         : x.node >= 0 && dg->node[x.node].ir_op >= 0
		         ? an->g.op[dg->node[x.node].ir_op].loc : (Loc){file, 0, 0};
		diag_error(d, at, "network too large: the total of its %s passes 2^60 at '%s' (see "
		           "docs/limits.md)", x.what, x.tensor >= 0 ? dg->t[x.tensor].name
		           : x.node >= 0 ? dg->node[x.node].name : "the parameters");
		return 1;
	}
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
	an->arena_bytes = mp_plan(&an->d, &an->ev, a);
	an->seconds = dag_now() - t0;
	return an->plan.fits ? 0 : 3;
}
