/* passes/plan/remat_int.h -- what the planners (remat*.c) share, not part
 * of the pipeline's interface. Calls go one way (tests/plan_layers.sh
 * checks it): remat.c (the dispatcher) -> remat_o2.c (the -O2 recipe) ->
 * the planners (baseline.c, remat_exact.c, remat_trim.c) -> the
 * candidate generators (remat_o1.c, remat_chain.c, remat_dtr.c,
 * remat_ls.c) -> remat_order.c and remat_delta.c (the descent's
 * incremental scorer) -> the model (remat_model.c).
 *
 * A plan is a state per "gap" over the base order: for every tensor that a
 * recomputable node makes, gap j runs from its j-th event (production, then
 * uses) to the use after it. KEEP holds the instance across the gap; a
 * dropped gap frees it after the event (liveness does that once nothing
 * serves from it) and the use that ends the gap, or any earlier recompute
 * needing it, recomputes it (recursively recomputing dropped inputs).
 * STICKY keeps a recomputed instance until the next dropped gap (Chen's
 * segments); TRANSIENT frees one made only to feed another recompute right
 * after that base step (Revolve's deeper levels); EARLY recomputes it
 * inside the gap, at the last base position where its node's inputs are
 * all still there (gearly), and keeps it to the gap's end: no input needs
 * to live longer for it (Moccasin's recompute intervals need not end at
 * a use). Each such tensor also
 * has a tail gap after its last use (ending at n): KEEP lets a later
 * recompute use the old instance (stretching its life), a drop makes it
 * recompute that too. rm_build turns states into a schedule; every plan
 * in the pool is scored by lv_eval (the searches may use rm_score_state,
 * its shortcut on plain DAGs). Planners that reorder or simulate
 * (remat_dtr.c, remat_ls.c) add explicit schedules to the pool instead. */
#ifndef REMAT_INT_H
#define REMAT_INT_H

#include "plan.h"

enum { GAP_KEEP, GAP_STICKY, GAP_TRANSIENT, GAP_EARLY };

/* Every work budget of -O2, filled in one place (rm_effort in remat_o2.c,
 * whose rm_plan_o2 is the whole recipe) from the graph's size: counts,
 * never clocks, so a plan depends on its input alone. */
typedef struct RmEffort {
	long size;              /* base steps + uses: what one evaluation costs */
	long chain_work;        /* remat_chain.c: DP steps before the coarse
	                           bounds stop */
	long chain_budget_work; /* rm_chain_budget_plans: labels tried */
	int chain_fine;         /* bounds tried just above the smallest met */
	int chain_coarse;       /* then geometrically up to no checkpoint */
	long desc_size;         /* larger graphs skip the gap descent */
	long desc_evals;        /* the descent's evaluations per ladder */
	long climb_size;        /* remat_ls.c: graphs up to this size climb */
	long climb_evals, kicks;/* its evaluations, and the kicked search's */
	long dtr_size;          /* remat_dtr.c: larger graphs skip DTR */
	long dtr_work;          /* its work (victim scans, closure nodes,
	                           evaluated steps), shared by its candidates */
	int dtr_ladder;         /* bounds per order */
	int dtr_orders;         /* random orders besides the two fixed ones */
	long dtr_tries;         /* evaluations per local search */
	long order_work;        /* remat_order.c: moves improving an order */
	long reorder_work;      /* ... -O2's final plans (rm_reorder_pool) */
	long lborder_work;      /* ... the least-bytes order */
	int reorder_plans;      /* the best plans the final reordering takes */
	int nest_trims;         /* remat_chain.c: nest_trim's tries per plan
	                           (whole evaluations; 0: none) */
	long trim_work;         /* remat_trim.c: evaluations per rung of its
	                           ladder (divided by the size) */
	long trim_repair;       /* ... and of its remove-and-repair pass */
	long exact_work;        /* remat_exact.c: state look-ups of each of
	                           -O2's exact searches (docs/planner.md) */
} RmEffort;

/* rm_build's state of a tensor: it has a producer to recompute it, its
 * first instance was made, an instance is there now */
enum { TS_RECOMP = 1, TS_MADE = 2, TS_AVAIL = 4 };

/* A builder turning gap states into steps, one base position at a time
 * (rm_build runs its scorer's b over every position; remat_delta.c runs
 * two from a saved position to re-score a changed plan). */
typedef struct RmBld {
	unsigned char *tst;     /* [nt] TS_ bits of each tensor */
	int *gcur;              /* [nt] gofs[t] + the uses of t done so far */
	int *step, *posof;      /* the steps, and each one's base position */
	int nstep, capstep;
	int *grp, ngrp;         /* tensors recomputed at this position */
	int *emitted, stamp;    /* [2 nnode + 2] marks for this position */
	int *stack;
	int *log, nlog;         /* tensors whose bits changed (NULL: none kept;
	                           the caller empties it) */
	int skip;               /* steps before step[0], counted against
	                           RM_MAXSTEP */
	Arena *mem;             /* where step and posof grow */
} RmBld;

/* The planners' context comes in three parts, so that a signature says
 * what a function may change: the model (const RmModel *: read only), the
 * scorer (RmScorer *: its scratch changes with every plan it builds or
 * scores) and the recipe's state (RmRecipe *, const where only read).
 * RmCtx holds the three for rm_plan and the tests. */

/* The model: what rm_model_init derives from the Dag and its base order
 * (the gap table, the uses, the costs); read only after that. */
typedef struct RmModel {
	const Dag *d;
	int nnode, nt;          /* d's, for the bounds checks */
	int n;                  /* base order length */
	int *pos;               /* [nnode] position in the base order */
	int *prod;              /* [nt] recomputable node making t, or -1 */
	int *uofs, *use;        /* CSR [nnode]: tensors each node reads */
	int *oofs, *out;        /* CSR [nnode]: tensors each node makes */
	int nuses, nouts;       /* the lengths of use and out */
	int *gofs;              /* [nt + 1] CSR: gaps of t (none if prod < 0) */
	int *gend;              /* [ngap] base position of the use ending a gap */
	int *gtensor;           /* [ngap] the tensor a gap belongs to */
	int ngap;
	int *gearly;            /* [ngap] EARLY's base position, or -1 */
	int *eofs, *egap;       /* CSR [n]: gaps whose gearly is each position */
	int *longgap;           /* [nt] gap from forward to backward use, or -1 */
	int *reprod;            /* [nt] base position of a once node that makes
	                           t again (ZeRO-3's backward gather, dag.h),
	                           else n: the uses after it are its, not gaps */
	int *relast;            /* [nt] t's last use in the base order, or -1 */
	int *aofs, *aprev;      /* CSR [nnode]: rm_acc_prev's */
	int naprev;             /* the length of aprev; 0: no order to keep */
	bool has_backward;      /* some node is a backward node */
	bool simple;            /* no views, accumulations, from_start or
	                           to_end tensors: rm_score_state's fast path */
	int64_t c0;             /* cost floor for benefit / cost ratios */
	unsigned char *tinit;   /* [nt] tst at the start: TS_RECOMP or 0 */
	int64_t *ncost, *nws;   /* [nnode] each node's cost and workspace */
	Arena mem;              /* everything above: freed by rm_model_free */
} RmModel;

/* splitmix64's finalizer: every input bit moves every output bit (the
 * planner's hashes of states: remat_exact.c, rm_memo_state). */
static inline uint64_t
rm_mix64(uint64_t h)
{
	h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

/* A plan's score against a threshold T: peak, recompute cost, and excess
 * (the sum over steps of the bytes live above T). */
typedef struct RmScore {
	int64_t peak, cost, exc;
} RmScore;

/* rm_memo_state's memory: the states scored before, by hash (open
 * addressing, a power of two of slots), each kept to compare with, up to
 * limit bytes of them (n states of ngap bytes); T and the score are the
 * latest scoring's. */
typedef struct RmMemoEnt {
	uint64_t hash;
	unsigned char *state;   /* [ngap]; NULL: an empty slot */
	int64_t T;
	RmScore sc;
	bool valid;             /* rm_score_state did not refuse it */
} RmMemoEnt;
typedef struct RmMemo {
	RmMemoEnt *slot;
	int cap, n;
	long hits;              /* scores given from memory */
	size_t limit;           /* RM_MEMO_BYTES */
	Arena mem;
} RmMemo;
enum { RM_MEMO_BYTES = 32 << 20 };

/* The scorer: builds a model's plans (rm_build) and scores them
 * (rm_eval_*, rm_score_*) into its own scratch, counting the evaluations
 * that bound the searches. */
typedef struct RmScorer {
	const RmModel *m;
	RmBld b;                /* rm_build's: its schedule, b.step[0..b.nstep) */
	int *birth, *lastuse;   /* [nt] rm_score_state: current instance of t */
	int64_t *diff, *live;   /* [capdiff] rm_score_state's memory by step */
	int *ran, ranstamp;     /* [nnode] rm_score_steps: ran at this stamp */
	int capdiff;
	Arena mem;              /* everything above: freed by rm_scorer_free */
	Arena scratch;          /* the latest evaluation */
	MemEval ev;             /* the latest evaluation or score */
	LvAnchor *anchor;       /* rm_eval_anchor's: rm_eval_steps resumes
	                           from its prefix (liveness.c) */
	int *last;              /* [caplast] the steps ev is lv_eval's result
	                           for, nlast of them; -1 when ev is another's */
	int nlast, caplast;
	RmMemo memo;            /* rm_memo_state's */
	long evals;
} RmScorer;

/* The recipe's state: what rm_plan and rm_plan_o2 hand the generators
 * besides the model, and what the generators tell them back. */
typedef struct RmRecipe {
	int64_t lower;          /* the lower bound without what lives across
	                           the step (LowerBound.ladder; set by
	                           rm_plan), or 0: the ladders' anchor */
	const RmEffort *eff;    /* -O2's budgets (set by rm_plan_o2) */
	int *lborder;           /* rm_least_bytes_order's, or NULL */
	bool lborder_done;
	bool capmet;            /* a descent or chain plan met its recompute cap */
	bool o2_shared;         /* rm_plan_o2 without a budget: its searches
	                           that ignore the budget met no cap, so that
	                           uncapped they would repeat themselves */
	bool o2_reordered;      /* ... and the least-bytes order's descent ran */
	bool o2_deferred;       /* ... and left its descents from the base
	                           plan to a budget's run (o2_searches) */
	bool exact_done;        /* rm_plan_o2 without a budget: the exact
	                           search finished within its work */
	Arena mem;              /* lborder and the caller's plans: freed by
	                           rm_ctx_free */
} RmRecipe;

typedef struct RmCtx {
	RmModel m;
	RmScorer s;             /* s.m is &m */
	RmRecipe r;
} RmCtx;

/* The CSR tables (RmModel's, and the planners' own) are read through
 * rm_row: row i of a table of n rows is its list's entries [lo, hi). Its
 * assert is the bounds check of every planner's row index; each of the
 * model's tables is checked once when rm_model_init makes it (offsets
 * from 0, nondecreasing, to the list's length), so lo and hi are in
 * bounds too. */
typedef struct RmRow {
	int lo, hi;
} RmRow;

static inline RmRow
rm_row(const int *ofs, int i, int n)
{
	ir_assert((unsigned)i < (unsigned)n);
	return (RmRow){ofs[i], ofs[i + 1]};
}

/* The tensors node v uses: M->use[lo..hi). */
static inline RmRow
rm_uses(const RmModel *M, int v)
{
	return rm_row(M->uofs, v, M->nnode);
}

/* The tensors node v makes: M->out[lo..hi). */
static inline RmRow
rm_outs(const RmModel *M, int v)
{
	return rm_row(M->oofs, v, M->nnode);
}

/* Tensor t's gaps, lo..hi - 1, its tail gap last; none when no
 * recomputable node makes t. */
static inline RmRow
rm_gaps(const RmModel *M, int t)
{
	return rm_row(M->gofs, t, M->nt);
}

/* t's tail gap (after its last use); t has gaps. */
static inline int
rm_tail(const RmModel *M, int t)
{
	RmRow g = rm_gaps(M, t);

	ir_assert(g.hi > g.lo);
	return g.hi - 1;
}

/* The base position where gap g starts: its tensor's production, or the
 * use that ends the gap before. */
static inline int
rm_gap_start(const RmModel *M, int g)
{
	int t = M->gtensor[g];

	return g == rm_gaps(M, t).lo ? M->pos[M->prod[t]] : M->gend[g - 1];
}

/* The gaps whose EARLY position is base position x: M->egap[lo..hi). */
static inline RmRow
rm_early(const RmModel *M, int x)
{
	return rm_row(M->eofs, x, M->n);
}

/* One scored plan: gap states, or an explicit schedule (remat_dtr.c). */
typedef struct RmCand {
	unsigned char *state;   /* [ngap] in the pool's arena; NULL when sched is set */
	int *sched, nsched;     /* explicit steps in the pool's arena, or NULL */
	int64_t peak, cost;
	bool valid;
} RmCand;

typedef struct RmPool {
	RmCand *c;
	int n, cap;
	Arena mem;              /* c and its plans (a zeroed Arena is empty) */
} RmPool;


/* passes/plan/remat_model.c (the model; calls no planner) */
/* The order every plan keeps among the contributions to one gradient:
 * the base order's (the -O0 schedule's), so that each gradient sums its
 * terms in one order at every level and the results are bit-identical
 * (a float sum depends on the order of its terms; the spec would allow
 * any). Row v of the CSR table (*ofs, *prev) (nnode rows, in a) lists,
 * for each gradient v adds to, the node adding to it just before v in the
 * base order; v may run only after them. Returns the entries' count. */
int rm_acc_prev(const Dag *d, int **ofs, int **prev, Arena *a);
void rm_model_init(RmModel *M, const Dag *d);
void rm_model_free(RmModel *M);
/* Whether node v is a ZeRO-3 all-gather (DagXfer.comm): it reads nothing
 * of the Dag, only the persistent weight shards, so a recompute can
 * gather its output again at any step with nothing kept for it. The
 * checkpoint finders (remat_o1.c, remat_chain.c) make no such node a cut
 * and let its output join no forward steps into one segment: the root
 * unit's weights, read by the embedding and by the head, would otherwise
 * leave no cut in the whole forward. */
bool rm_is_gather(const RmModel *M, int v);
void rm_scorer_init(RmScorer *S, const RmModel *M);
void rm_scorer_free(RmScorer *S);
/* The three parts on d, the recipe's empty; rm_ctx_free frees them. */
void rm_ctx_init(RmCtx *C, const Dag *d);
void rm_ctx_free(RmCtx *C);
bool rm_build(RmScorer *S, const unsigned char *state);
/* The most steps a build may emit: a plan past it is refused. */
#define RM_MAXSTEP(M) (16 * (M)->n + 1024)
/* A builder's arrays in a; then its start (every tensor as before base
 * position 0), and base position x built after the ones before it; false
 * past RM_MAXSTEP. */
void rm_bld_init(const RmModel *M, RmBld *B, Arena *a);
void rm_bld_start(const RmModel *M, RmBld *B);
bool rm_bld_pos(const RmModel *M, RmBld *B, const unsigned char *state, int x);
/* A builder's state before base position x of one plan's build (what
 * rm_bld_pos keeps across positions; its first nstep steps are the
 * plan's). remat_delta.c keeps a few of the plan it loaded. */
typedef struct RmBldSnap {
	int x, nstep;
	const unsigned char *tst;       /* [nt] */
	const int *gcur;                /* [nt] */
} RmBldSnap;
/* Where a build resumes, for a plan that differs from that loaded plan
 * (its steps step, posof) only in gaps read from base position
 * `from.x` on (rm_gap_start): the builds agree up to there. With a jump,
 * after base position `until` they differ only in the bits of tensors
 * keep[0..nkeep) until the loaded plan's build next touches one, so the
 * build goes on from `to`, taking those bits along. */
enum { RM_JUMP_KEEP = 16 };
typedef struct RmBldAt {
	RmBldSnap from;
	const int *step, *posof;
	bool jump;
	int until;
	RmBldSnap to;
	int nkeep;                      /* at most RM_JUMP_KEEP */
	const int *keep;
} RmBldAt;
/* The scorers are named rm_<how>_<what>. How: eval, lv_eval itself (the
 * whole MemEval in S->ev, its scratch in S); score, lv_eval's peak,
 * recompute cost and live bytes only (the rest of S->ev stale), by a
 * shortcut of its rules on simple Dags and by lv_eval on the others;
 * delta, a score relative to a loaded plan (remat_delta.c); memo, a
 * score remembered from an earlier one of the same plan. What: state,
 * gap states that rm_build builds first; steps, an explicit schedule;
 * built, the plan S->b holds; gaps, the loaded plan with a few gaps
 * changed. Each counts its evaluations in S->evals, which bound the
 * searches, and gives NULL (false) for a plan that lv_eval refuses or
 * that grows past RM_MAXSTEP. The searches score; a plan joins the pool
 * evaluated. Static helpers in the planners follow the rule
 * (eval_buf, eval_kept, score_plan). */
const MemEval *rm_eval_state(RmScorer *S, const unsigned char *state);
const MemEval *rm_eval_steps(RmScorer *S, const int *step, int n);
/* rm_eval_steps where the caller has lv_eval's evaluation ev of those very
 * steps on S's Dag (the driver's of the base schedule): counted and
 * checked as rm_eval_steps does, not evaluated again. */
const MemEval *rm_eval_known(RmScorer *S, const int *step, int n, const MemEval *ev);
/* rm_eval_steps, and the steps become the anchor that later evaluations
 * resume from (the moves of a search are scored against the plan they
 * move from: that plan is the anchor). */
const MemEval *rm_eval_anchor(RmScorer *S, const int *step, int n);
const MemEval *rm_score_state(RmScorer *S, const unsigned char *state);
/* rm_score_state's peak and cost of state, and its excess over T, as
 * the latest scoring of the same state at the same T gave them where
 * there was one (the descent's moves on LLaMA at 8 ZeRO-3 ranks: 43% are
 * plans that an earlier descent from the same start scored); counted as
 * an evaluation either way, so that the searches go as they would. */
bool rm_memo_state(RmScorer *S, const unsigned char *state, int64_t T, RmScore *out);
/* rm_memo_state, its build resumed from at (NULL: from the start); the
 * same answer and count. */
bool rm_memo_state_at(RmScorer *S, const unsigned char *state, int64_t T, RmScore *out,
                      const RmBldAt *at);
/* The excess of ev's steps over T. */
int64_t rm_excess(const MemEval *ev, int64_t T);
const MemEval *rm_score_steps(RmScorer *S, const int *step, int n);
/* simple Dags only */
const MemEval *rm_score_built(RmScorer *S);
/* A pool plan's steps: its schedule, or rm_build's S->b.step (valid until
 * the next build); NULL when it cannot be built. */
const int *rm_cand_steps(RmScorer *S, const RmCand *c, int *n);
/* A copy in a of the schedule rm_build left in S->b. */
Schedule rm_built_copy(const RmScorer *S, Arena *a);
void rm_pool_add(RmPool *p, const RmModel *M, const unsigned char *state,
                 const MemEval *ev);
void rm_pool_add_sched(RmPool *p, const int *step, int n, const MemEval *ev);
void rm_pool_free(RmPool *p);
/* A plan keeping every gap, in a. */
unsigned char *rm_state_new(const RmModel *M, Arena *a);

/* passes/plan/remat_delta.c */
/* The gap descent's incremental scorer: rm_score_state's peak, recompute cost
 * and excess over T of a plan differing from the loaded one in a few gaps
 * (remat_delta.c says how). */
typedef struct RmDelta RmDelta;
RmDelta *rm_delta_new(RmScorer *S, Arena *a);
/* rm_score_state(S, st), and st loaded as the plan the next scores change. */
const MemEval *rm_delta_load(RmDelta *X, const unsigned char *st, int64_t T);
/* Scores st, the loaded plan with gap[0..ng) changed, as rm_score_state
 * would (false where it gives NULL), and counts it as that does. */
bool rm_delta_gaps(RmDelta *X, const unsigned char *st, const int *gap, int ng,
                   RmScore *out);

/* passes/plan/remat_o1.c */
void rm_checkpoint_state(const RmModel *M, const bool *keep, unsigned char *st);
/* issue 9: a checkpoint plan by tensors; the sqrt(n) plan's states */
void rm_checkpoint_tensors(const RmModel *M, bool *keep_t, unsigned char *st);
bool rm_sqrtn_state(const RmModel *M, unsigned char *st);
void rm_plan_o1(RmScorer *S, RmPool *pool);

/* passes/plan/baseline.c */
/* The base schedule's peak, evaluated without the planner's model; -1
 * when that schedule is invalid. */
int64_t rm_base_peak(const Dag *d);
/* The per-def plan's states; false when no node is in a def. */
bool rm_perblock_state(const RmModel *M, unsigned char *st);
/* Adds the sqrt(n) and per-def plans to the pool, whose first plan is
 * the base: -O2 picks from it, so it is never above them (pick() applies
 * the cap and the budget). b, unless NULL, gets them as PlanResults with
 * lower as their bound (their schedules in a). */
void rm_pool_baselines(RmScorer *S, RmPool *pool, int64_t lower, PlanBaselines *b,
                       Arena *a);

/* passes/plan/remat_chain.c */
/* Checkpoint plans from the peak-bounded chain DP with true costs, each
 * fitted to the recompute cap (< 0: none) by storing whole segments; sets
 * R->capmet when one met the cap. Budgets from R->eff. */
void rm_chain_plans(RmScorer *S, RmRecipe *R, RmPool *pool, double cap);
/* The nested chain DP (Revolve / rotor style; docs/planner.md, step 2):
 * over boundaries 0 (the start) .. nb - 1 (the end), with memory in units
 * 0..q. A segment (i, j] is back-propagated from a held checkpoint i with
 * q units beyond the checkpoints up to i either as a leaf (its forward run
 * again from i, all it saves kept: need[i * nb + j] units, j's checkpoint
 * included) or split at i < k < j: the forward from i run up to k's node,
 * k held (cu[k] units) while (k, j] is solved with q - cu[k], then (i, k]
 * with q. Recompute is counted at every level: a leaf costs
 * fc[j] - fc[i] - own[j] (j is held), a split's run fc[k] - fc[i]. In
 * top, the segments (i, nb - 1] whose forward is the original pass (no
 * cost), as the outermost level is. The caller fills nb, q, maxleaf, cu,
 * need, fc, own and the output arrays' storage. */
typedef struct RmNest {
	int nb, q;
	int maxleaf;            /* most pieces a leaf spans, 0: any */
	const int *cu;          /* [nb] units holding boundary k (cu[0] = 0) */
	const int *need;        /* [nb * nb] a leaf's units, > q: none */
	const int64_t *fc;      /* [nb] forward cost up to boundary k's node */
	const int64_t *own;     /* [nb] boundary k's node's cost, 0 at the ends */
	int64_t *f;             /* [nb * nb * (q + 1)] least recompute of (i, j]
	                           with q' units, RM_NEST_NONE: none (costs are
	                           clamped to RM_NEST_NONE / (2 nb + 2)) */
	int64_t *top;           /* [nb * (q + 1)] (i, nb - 1], original forward */
	short *lo;              /* [nb * nb + nb] scratch: the first q of f (then
	                           of top) that is not RM_NEST_NONE, q + 1: none;
	                           NULL: splits scan every q */
} RmNest;
#define RM_NEST_NONE (INT64_MAX / 4)
/* Fills f and top (O(nb^3 q) steps). */
void rm_nest_dp(RmNest *N);
/* After rm_nest_dp: the split k of (i, j] with q units (first: of top, j
 * is nb - 1), -1: a leaf (O(nb) steps). */
int rm_nest_split(const RmNest *N, int i, int j, int q, bool first);
/* The nested DP's plans (rm_nest_dp over the chain's boundaries) as
 * explicit schedules, from the smallest budget whose recompute estimate
 * is within cap (< 0: none) up, into np: [0] leaves of any length, [1]
 * short leaves, under -O0's background; [2] leaves of any length under
 * the background less what each piece's own saved bytes free by then,
 * their repeated runs trimmed, and [3] those of the budgets below the
 * cap's (remat_chain.c). */
enum { RM_NEST_POOLS = 4 };
void rm_chain_nested_plans(RmScorer *S, RmRecipe *R, RmPool np[RM_NEST_POOLS],
                           double cap);
/* --budget: the chain's least-recompute plans (a DP over kept bytes and
 * recompute) at a fixed ladder of bounds up to just above budget. */
void rm_chain_budget_plans(RmScorer *S, RmRecipe *R, RmPool *pool, int64_t budget);

/* passes/plan/remat_trim.c */
/* Plans re-minimizing recompute at a fixed ladder of peak bounds up to the
 * budget, from the pool's plans; simple Dags only. Budgets from R->eff. */
void rm_trim_plans(RmScorer *S, const RmRecipe *R, RmPool *pool, int64_t budget);
/* passes/plan/remat_cover.c */
/* --budget: the least-cost sets of forward tensors to drop across the
 * steps over a fixed ladder of bounds up to the budget (knapsack covers),
 * scored, into the pool; size: RmEffort.size. */
void rm_cover_plans(RmScorer *S, RmPool *pool, int64_t budget, long size);

/* passes/plan/remat_o2.c */
void rm_plan_o2(RmScorer *S, RmRecipe *R, RmPool *pool, const PlanGoal *goal);
/* After rm_plan_o2 without a budget: the best plan within the cap of
 * those that joined at index from or later (the baselines, the seed),
 * improved as rm_plan_o2 improves its own best plans (rm_reorder_pool),
 * also where a searched plan is lower: a reordered baseline may still
 * beat it. */
void rm_plan_o2_late(RmScorer *S, RmRecipe *R, RmPool *pool, int from, const PlanGoal *goal);

/* passes/plan/remat_exact.c */
/* rm_plan_exact with at most work state look-ups (0: none but
 * --exact's limits): -O2's exact plan on graphs small enough for it, with
 * RM_EXACT_WORK (RmEffort.exact_work; docs/planner.md). When it gives up
 * without a budget, *found (if not NULL) is the best schedule within the
 * recompute cap it met, not a proven optimum ({0, NULL} if none beat the
 * base schedule). */
enum { RM_EXACT_WORK = 500000 };
PlanResult rm_exact_within(const Dag *d, const PlanGoal *goal, long long work,
                           Schedule *found, Arena *a);

/* passes/plan/remat_dtr.c */
/* Adds the simulation's plans: with budget >= 0, at a fixed ladder of
 * bounds up to the budget; else the descent from the pool's best peak
 * within cap (< 0: none). Budget-independent when budget < 0. Budgets
 * from R->eff; the least-bytes order is cached in R. */
void rm_plan_dtr(RmScorer *S, RmRecipe *R, RmPool *pool, int64_t budget, double cap);

/* passes/plan/remat_order.c */
/* A topological order (seed 0: least bytes added first, ties by base
 * position; else random); false on a cycle. */
bool rm_topo_order(const RmModel *M, uint64_t seed, int *out);
/* The least-bytes order, its peak lowered by moves (no recompute); cached
 * in R; NULL when there is none. */
const int *rm_least_bytes_order(RmScorer *S, RmRecipe *R);
/* The k best plans within cap (< 0: none) among those at pool index
 * from or later, their steps moved (backward steps too, where the
 * spec allows) and what lives across their peak recomputed before its
 * next use (within cap; up to 8 recomputes a move, or 32 where no such
 * move is left), to lower the peak, with work shared by the k (the
 * effort's order_work or a share of it); each one lowered joins the pool
 * as a schedule. */
void rm_reorder_pool(RmScorer *S, const RmRecipe *R, RmPool *pool, double cap, int k, int from,
                     long work);

/* passes/plan/remat_ls.c */
/* The hill climb from the pool's best plan within maxcost, with evals
 * evaluations, then an iterated local search with kicks more (0: none). */
void rm_climb(RmScorer *S, RmPool *pool, double maxcost, long evals, long kicks);

#endif
