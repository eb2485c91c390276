/* codegen/codegen.h -- the code generator: one self-contained CUDA C
 * program (plain C with -DREMAT_HOST) that runs the planned step with real
 * kernels and measures its peak (emit.c), with the runtime prelude it
 * embeds verbatim (runtime.h, runtime_ops.h and, for one rank of a
 * data-parallel step, runtime_dist.h; compiled into runtime_str.c).
 */
#ifndef REMAT_CODEGEN_H
#define REMAT_CODEGEN_H

#include "net.h"
#include "dag.h"
#include "eval.h"

/* ---------------------------------------------------------------- codegen/emit.c */
/* Writes one self-contained CUDA C program (also plain C with -DREMAT_HOST)
 * that runs schedule s and checks the measured peak against ev.
 * Returns 0, or non-zero on an I/O error. */
int cg_emit(const Graph *g, const Dag *d, const Schedule *s, const MemEval *ev,
            int64_t arena_bytes, FILE *out);

/* One pipeline stage's plan (g->settings.pipe names the stage). */
typedef struct CgStage {
	const Graph *g;
	const Dag *d;
	const Schedule *s;
	const MemEval *ev;
	int64_t arena_bytes;
} CgStage;

/* The program of a K-stage pipeline (st[k]: stage k's plan), run as
 * K x N ranks under mpirun (docs/distributed.md, "Running a pipeline");
 * with K = 1, cg_emit's program. Returns 0, or non-zero on an I/O error. */
int cg_emit_pipeline(const CgStage *st, int K, FILE *out);


#endif
