/* passes/plan/plan.h -- the rematerialization planners on the plain DAG:
 * what to keep and what to recompute, for -O1, -O2, --budget and --exact.
 * remat_int.h is the planners' private shared model. DAG only: nothing here
 * knows .net.
 */
#ifndef REMAT_PLAN_H
#define REMAT_PLAN_H

#include "dag.h"
#include "eval.h"

/* ---------------------------------------------------------------- passes/plan/remat*.c */
typedef struct PlanGoal {
	int level;              /* 0: base schedule; 1: -O1; 2, 3: -O2 */
	double max_recompute;   /* recompute cost <= this x forward_cost; <0: inf */
	int64_t budget;         /* minimize recompute s.t. peak <= budget; -1: none */
	bool exact;             /* --exact: exhaustive search (small graphs) */
} PlanGoal;

typedef struct PlanResult {
	Schedule sched;
	int64_t peak;           /* as lv_eval finds it */
	int64_t recompute_cost;
	bool fits;              /* budget met (always true without a budget) */
	int64_t lower_bound;    /* a peak no schedule can beat */
	const char *error;      /* NULL, or why no schedule was made (set by
	                           rm_plan_exact: graph too large, work limit);
	                           sched.n is 0 then */
} PlanResult;

/* Plans a schedule for the goal. Without a budget: minimizes peak subject to
 * the recompute cap. With a budget: minimizes recompute subject to peak <=
 * budget; when nothing fits, fits=false and sched/peak are the smallest-peak
 * schedule found. */
PlanResult rm_plan(const Dag *d, const PlanGoal *goal, Arena *a);
int64_t rm_lower_bound(const Dag *d);
/* passes/plan/remat_exact.c: the true optimum under the model, by exhaustive
 * search with pruning; for small graphs (tests, --exact). */
PlanResult rm_plan_exact(const Dag *d, const PlanGoal *goal, Arena *a);


#endif
