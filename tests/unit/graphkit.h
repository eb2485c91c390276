/* tests/unit/graphkit.h -- a Graph built by hand for the unit tests of
 * passes/graph/shape.c and passes/graph/autodiff.c: one graph, its arena and a Diag
 * whose messages are kept in memory, reset by the cmocka setup/teardown
 * below, and helpers that add tensors and ops to it. */
#ifndef REMAT_GRAPHKIT_H
#define REMAT_GRAPHKIT_H

#include <stdio.h>

#include "graph.h"

extern Arena arena;
extern Graph g;
extern Diag diag;

/* cmocka group fixtures: a fresh, empty graph "t.net" and diagnostics. */
int setup(void **state);
int teardown(void **state);
/* What diagnostics said so far. */
const char *said(void);
/* Forgets what diagnostics said. */
void reset_msgs(void);
/* A declared tensor: decl("x", TK_INPUT, DT_F32, 2, 4, 3). */
int decl(const char *id, TensorKind k, Dtype dt, int ndim, ...);
/* An op at line 2 with one output named `out`: returns the op index. */
int mk(OpKind k, const char *out, int nin, ...);
/* Op o's first output tensor. */
int out(int o);
/* Sets op o's shape or axes list: set_list(o, 3, 2, 4, -1). */
void set_list(int o, int n, ...);
/* Makes t the graph's one output (declared at line 9) and its loss, in
 * train mode. */
void set_loss(int t);
/* set_loss(t), then shape inference (which must succeed) and autodiff;
 * autodiff's error count. */
int train(int t);

#endif
