/* passes/graph/check.c -- the invariant check of the network graph between
 * passes (QBE's ssacheck): what every later pass relies on, stated once and
 * checked after instantiation, shape inference and autodiff. It finds bugs
 * in remat, not in the user's source, so a failure names the pass and the
 * first broken tensor or op. Reads the whole Graph; writes nothing. */
#include "graph.h"


static bool
in_range(int i, int n)
{
	return i >= 0 && i < n;
}

/* Structure: indices in range, each activation made by the op that names it,
 * ops in program order (an op reads only what earlier ops or declarations
 * made). */
static bool
check_structure(const Graph *g, char *why, size_t n)
{
	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		if (op->nin < 0 || op->nout < 1 || op->nextra > IR_MAXEXTRA)
			return why_fail(why, n, "op %d has %d inputs, %d outputs, %d extras",
			            o, op->nin, op->nout, op->nextra);
		for (int i = 0; i < op->nin; i++) {
			int t = op->in[i];
			if (!in_range(t, g->nt))
				return why_fail(why, n, "op %d reads tensor %d of %d", o, t, g->nt);
			if (g->t[t].producer >= o)
				return why_fail(why, n, "op %d reads %s before op %d makes it",
				            o, g->t[t].id, g->t[t].producer);
		}
		for (int i = 0; i < op->nout + (int)op->nextra; i++) {
			int t = op->out[i];     /* the outputs, then the extras */
			if (!in_range(t, g->nt) || g->t[t].producer != o)
				return why_fail(why, n, "op %d's output %d is not marked as made by it", o, i);
		}
	}
	for (int t = 0; t < g->nt; t++) {
		const Tensor *x = &g->t[t];
		bool made = x->kind == TK_ACT || x->kind == TK_EXTRA;
		if (made != (x->producer >= 0) || x->producer >= g->nop)
			return why_fail(why, n, "tensor %s: kind %s with producer %d",
			            x->id, ir_kind_name(x->kind), x->producer);
		if (x->view_of >= t || x->view_of < -1)
			return why_fail(why, n, "tensor %s is a view of tensor %d", x->id, x->view_of);
	}
	for (int i = 0; i < g->noutputs; i++)
		if (!in_range(g->outputs[i], g->nt))
			return why_fail(why, n, "output %d names tensor %d", i, g->outputs[i]);
	return true;
}

/* Shapes: every tensor has a dtype, an ndim and exactly numel * size bytes
 * (poisoned ones cannot reach here: shape errors stop the passes). */
static bool
check_shapes(const Graph *g, char *why, size_t n)
{
	for (int t = 0; t < g->nt; t++) {
		const Tensor *x = &g->t[t];
		int64_t numel = 1;
		if (x->kind == TK_GRAD || x->kind == TK_PARAM_GRAD)
			continue;
		if (x->dtype == DT_NONE || x->ndim < 0 || x->ndim > IR_MAXDIM)
			return why_fail(why, n, "tensor %s has no dtype or rank", x->id);
		for (int k = 0; k < x->ndim; k++) {
			if (x->shape[k] < 0 || (x->shape[k] && numel > INT64_MAX / x->shape[k]))
				return why_fail(why, n, "tensor %s has axis %d of %lld", x->id, k,
				            (long long)x->shape[k]);
			numel *= x->shape[k];
		}
		if (x->bytes != numel * dtype_size(x->dtype))
			return why_fail(why, n, "tensor %s: %lld elements, %lld bytes",
			            x->id, (long long)numel, (long long)x->bytes);
		/* expand's view reads its base's elements more than once */
		if (x->view_of >= 0 && g->t[x->view_of].bytes < x->bytes &&
		    g->op[x->producer].kind != OP_EXPAND)
			return why_fail(why, n, "view %s is larger than its base", x->id);
	}
	return true;
}

/* Autodiff: grad links go both ways, a gradient has its tensor's shape, and
 * a backward reads only tensors of the forward graph. */
static bool
check_grads(const Graph *g, char *why, size_t n)
{
	for (int t = 0; t < g->nt; t++) {
		const Tensor *x = &g->t[t];
		bool is_grad = x->kind == TK_GRAD || x->kind == TK_PARAM_GRAD;
		if (is_grad) {
			const Tensor *of;
			if (!in_range(x->grad_of, g->nt))
				return why_fail(why, n, "gradient %s is of tensor %d", x->id, x->grad_of);
			of = &g->t[x->grad_of];
			if (of->grad != t || ir_numel(x) != ir_numel(of))
				return why_fail(why, n, "gradient %s does not match %s", x->id, of->id);
			if ((x->kind == TK_PARAM_GRAD) != (of->kind == TK_PARAM))
				return why_fail(why, n, "gradient %s has the wrong kind", x->id);
		} else if (x->grad >= 0 && (!in_range(x->grad, g->nt) || g->t[x->grad].grad_of != t)) {
			return why_fail(why, n, "tensor %s names gradient %d", x->id, x->grad);
		}
	}
	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		if (!op->has_backward && (op->nsaves || op->bwd_flops))
			return why_fail(why, n, "op %d saves tensors but has no backward", o);
		for (int i = 0; i < op->nsaves; i++) {
			int t = op->saves[i];
			if (!in_range(t, g->nt) || g->t[t].kind == TK_GRAD || g->t[t].kind == TK_PARAM_GRAD)
				return why_fail(why, n, "op %d saves tensor %d", o, t);
		}
	}
	return true;
}

bool
graph_check(const Graph *g, GraphStage after, char *why, size_t n)
{
	if (!check_structure(g, why, n))
		return false;
	if (after >= GS_SHAPED && !check_shapes(g, why, n))
		return false;
	if (after >= GS_DIFFERENTIATED && g->train && !check_grads(g, why, n))
		return false;
	return true;
}
