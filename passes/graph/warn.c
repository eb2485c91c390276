/* passes/graph/warn.c -- warnings about a well-formed graph that probably
 * does not say what its author meant: an input that no op reads, and a
 * dead branch (ops whose outputs need grad but never reach the training
 * output). A branch gets ONE warning, at its first op, not one per op.
 * Reads Tensor.kind/producer/needs_grad and Op.has_backward (autodiff);
 * writes nothing but diagnostics. */
#include <stdlib.h>

#include "graph.h"

static int
find(int *up, int o)
{
	while (up[o] != o)
		o = up[o] = up[up[o]];
	return o;
}

static bool
is_dead(const Graph *g, const Op *op)
{
	bool need = false;

	for (int i = 0; i < op->nout; i++)
		need |= g->t[op->out[i]].needs_grad;
	return need && !op->has_backward;
}

/* Dead ops joined through the tensors one hands the other: each set is a
 * branch; its root is its first op in program order. */
static int *
dead_branches(const Graph *g)
{
	int *up = xmalloc(sizeof(int) * ((size_t)g->nop + 1));

	for (int o = 0; o < g->nop; o++)
		up[o] = is_dead(g, &g->op[o]) ? o : -1;
	for (int o = 0; o < g->nop; o++) {
		if (up[o] < 0)
			continue;
		for (int i = 0; i < g->op[o].nin; i++) {
			int p = g->t[g->op[o].in[i]].producer;
			if (p >= 0 && up[p] >= 0) {
				int a = find(up, p), b = find(up, o);
				up[a > b ? a : b] = a < b ? a : b;
			}
		}
	}
	return up;
}

void
graph_warn_dead(const Graph *g, Diag *d)
{
	int *up = dead_branches(g), *size = xmalloc(sizeof(int) * ((size_t)g->nop + 1));

	for (int o = 0; o < g->nop; o++)
		size[o] = 0;
	for (int o = 0; o < g->nop; o++)
		if (up[o] >= 0)
			size[find(up, o)]++;
	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		if (up[o] != o)
			continue;
		if (size[o] == 1)
			diag_warning(d, ir_op_loc(g, op), "'%s' needs grad but does not reach the "
			             "training output '%s'; it has no backward",
			             g->t[op->out[0]].id, g->t[g->loss].id);
		else
			diag_warning(d, ir_op_loc(g, op), "'%s' needs grad but does not reach the "
			             "training output '%s'; it and the %d later ops of its "
			             "branch have no backward", g->t[op->out[0]].id,
			             g->t[g->loss].id, size[o] - 1);
	}
	free(size);
	free(up);
}

void
graph_warn_unused_inputs(const Graph *g, Diag *d)
{
	bool *used = xmalloc(sizeof(bool) * ((size_t)g->nt + 1));

	for (int t = 0; t < g->nt; t++)
		used[t] = false;
	for (int o = 0; o < g->nop; o++)
		for (int i = 0; i < g->op[o].nin; i++)
			used[g->op[o].in[i]] = true;
	for (int i = 0; i < g->noutputs; i++)
		used[g->outputs[i]] = true;
	for (int t = 0; t < g->nt; t++)
		if (g->t[t].kind == TK_INPUT && !used[t])
			diag_warning(d, g->t[t].loc, "input '%s' is never used; it takes "
			             "no memory", g->t[t].id);
	free(used);
}
