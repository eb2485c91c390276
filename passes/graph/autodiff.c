/* passes/graph/autodiff.c -- which ops have a backward, what each saves, its
 * FLOPs, and the gradient tensors (train mode only).
 *
 * Reads: Graph.loss, outputs, output_loc, settings.mixed; Tensor.dtype,
 * shape, needs_grad (from passes/graph/shape.c); Op.in, out, extra, flops, custom
 * and the op table's saves, bwd_factor and per_grad (ir/net/optab.c).
 * Writes: Tensor.reaches_output, saved, grad, grad_of; Op.has_backward,
 * saves, nsaves, bwd_flops, workspace; appends grad(t) tensors.
 *
 * Choices where ops.md is silent:
 * - A training output that does not depend on any param (needs no grad) is
 *   an error: there would be nothing to train.
 * - A custom op without backward_flops (CustomOp.backward_flops < 0) costs
 *   2 x flops in backward, whatever the number of grads.
 * - grad(t) is created for t needing grad and reaching the loss, except the
 *   loss itself; for split, only the outputs that reach the loss get one.
 */
#include <stdlib.h>
#include <string.h>

#include "graph.h"

/* Finds where the training output is declared, for messages. */
static Loc
loss_loc(const Graph *g)
{
	for (int i = 0; i < g->noutputs; i++)
		if (g->outputs[i] == g->loss && g->output_loc)
			return g->output_loc[i];
	return loc_make(g->file, 0, 0);
}

/* Checks the training output; 0 when backward can start from it. */
static int
check_loss(const Graph *g, Diag *d)
{
	const Tensor *t;
	char buf[IR_MAXDIM * 24 + 4];

	if (g->noutputs > 1 && g->output_loc) {
		diag_error(d, g->output_loc[1], "training takes exactly one output, "
		           "not %d (use --infer for several)", g->noutputs);
		return 1;
	}
	if (g->loss < 0) {
		diag_error(d, loc_make(g->file, 0, 0), "training needs an output");
		return 1;
	}
	t = &g->t[g->loss];
	if (t->ndim < 0)
		return 1;       /* already reported */
	if (t->ndim != 0) {
		diag_error(d, loss_loc(g), "training output '%s' must be a scalar, "
		           "not %s", t->id, ir_shape_str(t, buf, sizeof buf));
		return 1;
	}
	if (!dtype_is_float(t->dtype)) {
		diag_error(d, loss_loc(g), "training output '%s' must be floating "
		           "point, not %s", t->id, dtype_name(t->dtype));
		return 1;
	}
	if (!t->needs_grad) {
		int params = 0, frozen = 0;
		for (int i = 0; i < g->nt; i++) {
			params += g->t[i].kind == TK_PARAM && !g->t[i].buffer;
			frozen += g->t[i].kind == TK_PARAM && !g->t[i].buffer && g->t[i].frozen;
		}
		diag_error(d, loss_loc(g), "training output '%s' does not depend on "
		           "any param%s", t->id, params && frozen == params ?
		           " (every param is frozen)" : "");
		return 1;
	}
	return 0;
}

/* Walks ops backwards from the loss: has_backward and reaches_output. */
static void
mark_reach(Graph *g)
{
	for (int t = 0; t < g->nt; t++)
		g->t[t].reaches_output = false;
	g->t[g->loss].reaches_output = true;
	for (int o = g->nop - 1; o >= 0; o--) {
		Op *op = &g->op[o];
		bool reach = false;
		for (int i = 0; i < op->nout; i++) {
			const Tensor *t = &g->t[op->out[i]];
			reach |= t->needs_grad && t->reaches_output;
		}
		op->has_backward = reach;
		if (!reach)
			continue;
		for (int i = 0; i < op->nin; i++)
			if (g->t[op->in[i]].needs_grad)
				g->t[op->in[i]].reaches_output = true;
	}
}

/* Op.saves per the saves column (or a custom op's declaration), gathered
 * in s (room for nin + 1 + IR_MAXSAVE) and kept at its exact length: the
 * room each op could need, zeroed in the graph's arena, was 48 bytes an op
 * where most save one or two tensors (48 MB of a 1M-op graph). */
static void
find_saves(Graph *g, Op *op, int *s)
{
	const OpInfo *info = &ir_optab[op->kind];
	int n = 0;

	if (op->kind == OP_CUSTOM) {
		for (int i = 0; i < op->nin; i++)
			if (op->p->custom->saves_arg && op->p->custom->saves_arg[i])
				push_unique(s, &n, op->in[i]);
		if (op->p->custom->saves_out)
			push_unique(s, &n, op->out[0]);
	}
	for (int k = 0; op->kind != OP_CUSTOM && k < IR_MAXSAVE; k++) {
		const SaveRule *r = &info->saves[k];
		if (r->kind == SV_END)
			break;
		/* optional arguments and extras that this op lacks */
		if (((r->kind == SV_ARG || r->kind == SV_ARG_IF) && r->i >= op->nin) ||
		    (r->kind == SV_EXTRA && r->i >= op->nextra))
			continue;
		if (r->kind == SV_ARG)
			push_unique(s, &n, op->in[r->i]);
		else if (r->kind == SV_ARG_IF && g->t[op->in[r->cond]].needs_grad)
			push_unique(s, &n, op->in[r->i]);
		else if (r->kind == SV_OUT)
			push_unique(s, &n, op->out[r->i]);
		else if (r->kind == SV_EXTRA)
			push_unique(s, &n, ir_extra(op, r->i));
	}
	op->saves = ar_array(g->arena, (size_t)n, sizeof *op->saves);
	memcpy(op->saves, s, sizeof *s * (size_t)n);
	op->nsaves = n;
	for (int i = 0; i < n; i++)
		g->t[s[i]].saved = true;
}

/* The number of distinct inputs that need grad. */
static int
count_grads(const Graph *g, const Op *op)
{
	int n = 0;

	for (int i = 0; i < op->nin; i++) {
		bool dup = false;
		for (int j = 0; j < i; j++)
			dup |= op->in[j] == op->in[i];
		n += !dup && g->t[op->in[i]].needs_grad;
	}
	return n;
}

/* Op.bwd_flops: forward x factor (x grads); false on overflow. */
static bool
backward_flops(const Graph *g, Op *op)
{
	const OpInfo *info = &ir_optab[op->kind];
	int64_t f = op->flops, twice = (int64_t)(info->bwd_factor * 2);

	if (op->kind == OP_CUSTOM) {
		f = op->p->custom->backward_flops;
		if (f < 0 && __builtin_mul_overflow(op->flops, 2, &f))
			return false;
		op->bwd_flops = f;
		return true;
	}
	if (info->per_grad && __builtin_mul_overflow(f, count_grads(g, op), &f))
		return false;
	/* factors are whole or halves (attention's 2.5) */
	if (__builtin_mul_overflow(f / 2, twice, &op->bwd_flops) ||
	    __builtin_add_overflow(op->bwd_flops, f % 2 * twice / 2, &op->bwd_flops))
		return false;
	return true;
}

/* Appends grad(t); false when it would be larger than 2^62 bytes. */
static bool
make_grad(Graph *g, int t)
{
	const Tensor *x = &g->t[t];
	bool param = x->kind == TK_PARAM;
	const char *id = ar_cat(g->arena, "grad(", x->id, ")");
	int gt = ir_add_tensor(g, id, param ? TK_PARAM_GRAD : TK_GRAD, x->loc);
	Tensor *gr = &g->t[gt];

	x = &g->t[t];   /* g->t may have moved */
	gr->dtype = param && g->settings.mixed ? DT_F32 : x->dtype;
	ir_share_shape(gr, x);
	gr->scope = x->scope;
	gr->grad_of = t;
	g->t[t].grad = gt;
	return !__builtin_mul_overflow(ir_numel(x), dtype_size(gr->dtype), &gr->bytes) &&
	       gr->bytes <= ((int64_t)1 << 62);
}

/* Whether t receives a gradient: it needs one and reaches the loss. */
static bool
gets_grad(const Graph *g, int t)
{
	return t != g->loss && g->t[t].needs_grad && g->t[t].reaches_output;
}

/* Grows the tensor array once for every grad, so that a big graph is not
 * copied by repeated doubling. */
static void
reserve_grads(Graph *g)
{
	int n = 0;

	for (int t = 0; t < g->nt; t++)
		n += gets_grad(g, t);
	if (n == 0 || g->capt - g->nt >= n)
		return;
	ir_assert(n <= INT32_MAX - g->nt);
	g->t = ar_grow(g->arena, g->t, sizeof *g->t * (size_t)g->capt,
	               sizeof *g->t * (size_t)(g->nt + n));
	g->capt = g->nt + n;
}

int
autodiff(Graph *g, Diag *d)
{
	int before = d->nerrors, nt;
	int *saves = NULL;      /* find_saves' room, as large as the most inputs */
	size_t room = 0;

	if (!g->train)
		return 0;
	if (check_loss(g, d))
		return d->nerrors - before;
	mark_reach(g);
	graph_warn_dead(g, d);
	for (int o = 0; o < g->nop; o++) {
		Op *op = &g->op[o];
		size_t need = (size_t)op->nin + 1 + IR_MAXSAVE;
		if (!op->has_backward)
			continue;
		if (need > room) {
			saves = xrealloc(saves, sizeof *saves * need);
			room = need;
		}
		find_saves(g, op, saves);
		if (!backward_flops(g, op))
			diag_error(d, ir_op_loc(g, op), "%s: backward FLOP count overflows 64 bits",
			           op->kind == OP_CUSTOM ? op->p->custom->name :
			           ir_optab[op->kind].name);
	}
	free(saves);
	nt = g->nt;
	reserve_grads(g);
	for (int t = 0; t < nt; t++)
		if (gets_grad(g, t) && !make_grad(g, t))
			diag_error(d, g->t[t].loc, "grad('%s') is larger than 2^62 bytes",
			           g->t[t].id);
	return d->nerrors - before;
}

int
autodiff_check_loss(const Graph *g, Diag *d)
{
	return g->train ? check_loss(g, d) : 0;
}
