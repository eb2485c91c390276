/* passes/eval/eval.h -- the evaluators of a schedule on the plain DAG:
 * the linear liveness evaluator every level uses (liveness.c), the
 * independent verifier behind --verify (verify.c), and the memory planner
 * that gives every instance an arena offset (memplan.c). DAG only: nothing
 * here knows .net.
 */
#ifndef REMAT_EVAL_H
#define REMAT_EVAL_H

#include "dag.h"

/* ---------------------------------------------------------------- passes/eval/liveness.c */
/* Evaluates a schedule in O(steps + uses). Fills *ev (arrays in a). */
void lv_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a);

/* ---------------------------------------------------------------- passes/eval/verify.c */
/* An independent, simple (linear) evaluator for --verify. Returns true
 * when it agrees with ev on validity, every step's live_bytes, the peak and
 * peak_step; otherwise writes the first disagreement to why. */
bool vf_check(const Dag *d, const Schedule *s, const MemEval *ev,
              char *why, size_t n);
/* The verifier's own evaluator: fills valid, error, nsteps, kind,
 * live_bytes, temp_bytes, peak, peak_step and recompute_cost of ev (arrays
 * in a); inst, step_prod and breakdown stay empty. */
void vf_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a);
/* Evaluates s into ev with lv_eval; with verify, replays it through
 * vf_check. Reports an invalid schedule or a disagreement on stderr and
 * returns 4; otherwise 0. */
int vf_evaluate(const Dag *d, const Schedule *s, MemEval *ev, bool verify,
                Arena *a);

/* ---------------------------------------------------------------- passes/eval/memplan.c */
/* The placements the memory planner knows (docs/memory-model.md, "The
 * arena"): the linear scan runs on every graph, the others (placement.c)
 * on at most MP_SEARCH_MAX blocks and within a count of work. */
typedef enum MpMethod {
	MP_LINEAR_SCAN,         /* by start, best fit: O(n log n) */
	MP_SIZE_BEST_FIT, MP_SIZE_FIRST_FIT,    /* greedy by size */
	MP_BREADTH_BEST_FIT, MP_BREADTH_FIRST_FIT,      /* greedy by breadth */
	MP_SKYLINE_AREA, MP_SKYLINE_SIZE, MP_SKYLINE_LENGTH,
	MP_SKYLINE_PERTURBED,   /* skyline restarts, priorities perturbed */
	MP_METHOD_COUNT,
	MP_ALL = MP_METHOD_COUNT        /* mp_plan_with: the smallest of them all */
} MpMethod;

enum {
	MP_ALIGN = 256,                 /* every offset and block size */
	MP_SEARCH_MAX = 1 << 16,        /* most blocks the search takes */
	MP_GREEDY_MAX = 1 << 14,        /* most blocks on which greedy by size
	                                   (best fit) runs whatever the work it
	                                   costs, so that no arena is larger
	                                   than the scan-or-greedy plan before
	                                   the search */
};

/* What one plan tried. */
typedef struct MpStats {
	int64_t floor;          /* the aligned lower bound (MemEval.arena_floor) */
	int64_t arena[MP_METHOD_COUNT]; /* each method's best arena; -1 when it
	                           did not run or ran out of work */
	MpMethod chosen;        /* the one whose offsets were kept */
	int nblocks;            /* instances and temporary blocks placed */
	int runs;               /* placements tried, restarts included */
	int64_t work;           /* units of work the search spent */
} MpStats;

/* Assigns 256-byte-aligned offsets to every persistent buffer (first, for
 * the whole step; d may be NULL for none), every owning instance and every
 * step's temporary block, so that two blocks overlap only when never live at
 * the same step. Returns arena bytes (largest end offset), which is at least
 * ev->arena_floor (set here: the persistent bytes and the most bytes live
 * at one step, each block rounded up to 256), itself at least the peak of
 * ev. The linear scan is O(n log n) in the number of blocks; the search
 * after it stops at the floor and is bounded by a count of work. */
int64_t mp_plan(const Dag *d, MemEval *ev, Arena *a);
/* mp_plan with one method only (MP_ALL: the search as mp_plan runs it);
 * st, when not NULL, receives what was tried. A single method that cannot
 * run (too many blocks, out of work) leaves the linear scan's offsets. */
int64_t mp_plan_with(const Dag *d, MemEval *ev, Arena *a, MpMethod only, MpStats *st);
const char *mp_method_name(MpMethod m);  /* "skyline by area", ... */

/* ---------------------------------------------------------------- passes/eval/placement.c */
/* A block to place: size a multiple of MP_ALIGN, live at steps start..end. */
typedef struct MpBlock {
	int64_t size;
	int64_t off;            /* out */
	int start, end;
} MpBlock;
/* The placements' state for n blocks (arrays sized once, in a, and used
 * again by every placement) and the units of work they may spend. */
typedef struct MpPlacer MpPlacer;
MpPlacer *mp_placer(MpBlock *b, int n, int64_t work, Arena *a);
/* Places the blocks by method m (not MP_LINEAR_SCAN; seed picks the
 * perturbation of MP_SKYLINE_PERTURBED): sets every off so that blocks
 * that share a step do not overlap, and returns the top (largest end), or
 * -1 when the work ran out before every block was placed. Deterministic;
 * ties go to the lower index. */
int64_t mp_place(MpPlacer *p, MpMethod m, uint64_t seed);
int64_t mp_work_left(const MpPlacer *p);
void mp_work_set(MpPlacer *p, int64_t work);     /* the units left, now */

/* passes/eval/memplan.c: the layout of step s's temporary block, which holds
 * ev->temp_bytes[s] bytes exactly: the accumulation temporaries by element
 * size, largest first (so each is naturally aligned without padding), then
 * the workspace. off[j] (j < node.nacc) is acc j's offset in the block, or
 * -1 when that entry produces its gradient; off[nacc] is the workspace's.
 * Returns the block's bytes. mp_plan plans the blocks too
 * (ev->temp_offset), so the arena covers every byte the MemEval counts. */
int64_t mp_temp_layout(const Dag *d, const MemEval *ev, const Schedule *s,
                       int step, int64_t *off);


#endif
