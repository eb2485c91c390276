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
	Schedule seed;          /* -O2 without a budget: a schedule that joins
	                           the candidates (ZeRO-3: the ZeRO-2 plan,
	                           dist_seed); n 0: none */
	double work_share;      /* the share of -O2's search work this graph
	                           gets, in (0, 1) (a pipeline stage: 1/K);
	                           0 or 1: all of it */
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
/* The checkpointing baselines (below) of one Dag. */
typedef struct PlanBaselines {
	bool made;              /* set by rm_plan_search where it made them */
	PlanResult sqrtn, perblock;
} PlanBaselines;
/* What a caller of rm_plan_search has made already for the same Dag, so
 * that the search does not make it again (NULL: it has not), and where
 * the baselines go back. */
typedef struct PlanShare {
	const struct LowerBound *lb;    /* rm_lower_bound_parts(d) */
	const MemEval *base;    /* lv_eval of the base schedule */
	PlanBaselines baselines;
} PlanShare;
/* rm_plan without its first test, at -O2, of whether the base schedule
 * meets the lower bound (then it is the plan, and no model is built): for
 * a caller that made that test with the base's evaluation in hand, so
 * that the base is not evaluated a second time. With share, the search
 * takes its lower bound and base evaluation, and, where it scores the
 * baselines as candidates (-O2 without --exact, on a valid base), gives
 * them back in share->baselines as rm_plan_sqrtn and rm_plan_perblock would
 * make them, from its own model and evaluations: at -O2, two models,
 * three lower bounds and five evaluations fewer. */
PlanResult rm_plan_search(const Dag *d, const PlanGoal *goal, PlanShare *share,
                          Arena *a);
int64_t rm_lower_bound(const Dag *d);

/* ---------------------------------------------------------------- passes/plan/baseline.c */
/* The checkpointing baselines and what the lower bound is made of. */
/* Chen et al.'s sqrt(n) checkpointing, which -O1 is: about sqrt(n) of the
 * forward graph's articulation points kept, each segment recomputed from
 * its checkpoint right before its backward. sched.n is 0 (and peak the
 * -O0 peak) on a graph with no backward or no cut. */
PlanResult rm_plan_sqrtn(const Dag *d, Arena *a);
/* torch.utils.checkpoint around every block (outermost def call,
 * DagNode.block_plus1): each block's inputs and outputs kept, its inside
 * recomputed during its backward. sched.n is 0 when no node is in a def. */
PlanResult rm_plan_perblock(const Dag *d, Arena *a);
/* Whether each baseline has a plan to make (sched.n > 0), decided from the
 * Dag alone: its planner's model of the Dag is about 200 bytes a node, too
 * much to build only to find nothing to checkpoint (300k forward nodes
 * that backward never reads). sqrt(n): some owning tensor a forward node
 * makes is read by a later backward node. Per-def: a recomputable node is
 * in a def call and some node is backward. */
bool rm_sqrtn_applies(const Dag *d);
bool rm_perblock_applies(const Dag *d);
/* goal->work_share as a factor in (0, 1]. */
double rm_work_share(const PlanGoal *goal);

/* A peak no schedule can beat, and its parts: the larger of "persistent +
 * always-live + the largest single step" and "persistent + always-live +
 * every to_end tensor that backward makes (param grads) + the cheapest
 * step that can end the backward". */
typedef struct LowerBound {
	int64_t bytes;          /* = rm_lower_bound(d) */
	int64_t persistent;     /* params, master, optimizer */
	int64_t always;         /* from_start and to_end tensors */
	int64_t end_grads;      /* to_end tensors backward makes */
	int64_t end_step;       /* the cheapest last backward step's own bytes */
	int end_node;           /* that step's node, or -1 (no backward) */
	int64_t step;           /* a step's own bytes: the largest, or the one
	                           whose own bytes and across are the most */
	int step_node;          /* that step's node, or -1 */
	int64_t across;         /* what else lives at that step in every
	                           schedule: param grads and gradients made
	                           before it, inputs and gradients read after */
	bool at_end;            /* the end of backward is the larger */
	int64_t ladder;         /* the bound without across (as before issue
	                           27): where -O2's fixed ladders of bounds
	                           (remat_dtr.c) start, so their rungs and
	                           plans do not move with it */
} LowerBound;
LowerBound rm_lower_bound_parts(const Dag *d);
/* passes/plan/remat_exact.c: the true optimum under the model, by exhaustive
 * search with pruning; for small graphs (tests, --exact). */
PlanResult rm_plan_exact(const Dag *d, const PlanGoal *goal, Arena *a);


#endif
