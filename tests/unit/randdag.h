/* tests/unit/randdag.h -- small random Dags for the tests: forward graphs
 * with mixed sizes and costs, branches, skip connections, views, extra
 * outputs and workspace, and optionally the backward part lowered as
 * passes/graph/lower.c does (dag.h), so that they look like training graphs. */
#ifndef REMAT_RANDDAG_H
#define REMAT_RANDDAG_H

#include "dag.h"

typedef struct RdOptions {
	int min_ops, max_ops;   /* forward ops, inclusive */
	bool train;             /* add backward nodes and gradients */
	bool views;             /* some ops are views of their input */
	bool extras;            /* some ops have a second (extra) output */
	bool workspace;         /* some ops need workspace */
	bool persistent;        /* params: persistent bytes and param grads */
} RdOptions;

/* The next pseudo-random number of a splitmix64 sequence. */
uint64_t rd_next(uint64_t *seed);
/* A number in [lo, hi]. */
int64_t rd_range(uint64_t *seed, int64_t lo, int64_t hi);
/* Fills d with a random graph per o; base_order is the -O0 schedule and
 * dag_finish has run. Everything lives in a. */
void rd_make(Dag *d, uint64_t *seed, const RdOptions *o, Arena *a);
/* The base schedule with random recomputations of forward nodes inserted
 * (each after the node's first step), so still valid. */
Schedule rd_schedule(const Dag *d, uint64_t *seed, int nrecompute, Arena *a);

#endif
