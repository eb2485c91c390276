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
/* Marks ev invalid with the message, unless it is invalid already: the
 * first error wins (lv_eval's and vf_eval's). */
void ev_fail(MemEval *ev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

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
 * returns ST_INTERNAL; otherwise ST_OK. */
Status vf_evaluate(const Dag *d, const Schedule *s, MemEval *ev, bool verify,
                   Arena *a);

/* ---------------------------------------------------------------- passes/eval/memplan.c */
/* Assigns 256-byte-aligned offsets to every persistent buffer (first, for
 * the whole training step; d may be NULL for none), every owning instance
 * and every step's temporary extent, so that two extents overlap only when
 * never live at the same step. Returns arena bytes (largest end offset),
 * which is at least the peak of ev. O(n log n) in the number of extents. */
int64_t mp_plan(const Dag *d, MemEval *ev, Arena *a);
/* passes/eval/memplan.c: the layout of step s's temporary extent, which holds
 * ev->temp_bytes[s] bytes exactly: the accumulation temporaries by element
 * size, largest first (so each is naturally aligned without padding), then
 * the workspace. off[j] (j < node.nacc) is acc j's offset in the extent, or
 * -1 when that entry produces its gradient; off[nacc] is the workspace's.
 * Returns the extent's bytes. mp_plan plans the extents too
 * (ev->temp_offset), so the arena covers every byte the MemEval counts. */
int64_t mp_temp_layout(const Dag *d, const MemEval *ev, const Schedule *s,
                       int step, int64_t *off);


#endif
