/* report/graph_json.c -- --graph-json: the instantiated network
 * graph as one JSON object (tensors with shapes and dtypes, ops with their
 * inputs, outputs, extras and attributes, in program order), so that other
 * tools can rebuild the network op by op. tests/pytorch/harness.py turns it
 * into PyTorch ops.
 *
 * Reads: Graph (after shape inference). Writes: stdout only. */
#include <math.h>

#include "report.h"

static const char *
kind_name(TensorKind k)
{
	static const char *const names[] = {"input", "param", "activation",
	                                    "extra", "grad", "param_grad"};
	return names[k];
}

static void
put_list(FILE *out, const int *v, int n)
{
	fputc('[', out);
	for (int i = 0; i < n; i++)
		fprintf(out, "%s%d", i ? ", " : "", v[i]);
	fputc(']', out);
}

/* A real, or null when it is infinite (JSON has no infinity). */
static void
put_real(FILE *out, double v)
{
	if (isinf(v))
		fputs("null", out);
	else
		fprintf(out, "%.17g", v);
}

static void
put_tensor(const Graph *g, int i, FILE *out)
{
	const Tensor *t = &g->t[i];

	fputs("    {\"id\": ", out);
	json_put_str(out, t->id);
	fprintf(out, ", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": [",
	        kind_name(t->kind), t->dtype == DT_NONE ? "none" : dtype_name(t->dtype));
	for (int k = 0; k < t->ndim; k++)
		fprintf(out, "%s%lld", k ? ", " : "", (long long)t->shape[k]);
	fprintf(out, "], \"view_of\": %d, \"needs_grad\": %s}", t->view_of,
	        t->needs_grad ? "true" : "false");
}

static void
put_ints(FILE *out, const char *key, const int64_t *v, int n)
{
	fprintf(out, ", \"%s\": [", key);
	for (int k = 0; k < n; k++)
		fprintf(out, "%s%lld", k ? ", " : "", (long long)v[k]);
	fputc(']', out);
}

/* Every attribute, whether the op uses it or not: readers pick by op.
 * Window settings are per spatial axis (padding: each axis's begin and
 * end); "list" is reshape's and expand's shape, permute's axes, or the
 * axes of a sum or mean over an axis list. */
static void
put_params(const Op *op, FILE *out)
{
	const OpParams *p = op->p;

	fprintf(out, "\"axis\": %lld, \"has_axis\": %s, \"n\": %lld, \"i\": %lld, "
	        "\"j\": %lld, \"start\": %lld, \"end\": %lld",
	        (long long)p->axis_norm, p->has_axis ? "true" : "false",
	        (long long)p->n, (long long)p->i, (long long)p->j,
	        (long long)p->start, (long long)p->end);
	put_ints(out, "stride", p->stride, 2);
	put_ints(out, "padding", p->pad, 4);
	put_ints(out, "dilation", p->dilation, 2);
	put_ints(out, "window", p->k, 2);
	fprintf(out, ", \"groups\": %lld, \"k\": %lld, \"scale\": %lld, \"p\": %.17g, "
	        "\"c\": %.17g, \"causal\": %s, \"ceil_mode\": %s, \"keepdim\": %s, "
	        "\"dtype\": \"%s\", \"list\": [",
	        (long long)p->groups, (long long)p->k[0], (long long)p->scale, p->p, p->c,
	        p->causal ? "true" : "false", p->ceil_mode ? "true" : "false",
	        p->keepdim ? "true" : "false",
	        p->dtype == DT_NONE ? "none" : dtype_name(p->dtype));
	for (int k = 0; k < p->nlist; k++)
		fprintf(out, "%s%lld", k ? ", " : "", (long long)p->list[k]);
	fputc(']', out);
}

static void
put_op(const Graph *g, int o, FILE *out)
{
	const Op *op = &g->op[o];

	fputs("    {\"op\": ", out);
	json_put_str(out, op->kind == OP_CUSTOM ? op->p->custom->name : ir_optab[op->kind].name);
	fprintf(out, ", \"custom\": %s, \"in\": ", op->kind == OP_CUSTOM ? "true" : "false");
	put_list(out, op->in, op->nin);
	fputs(", \"out\": ", out);
	put_list(out, op->out, op->nout);
	fputs(", \"extra\": ", out);
	put_list(out, op->out + op->nout, op->nextra);
	fputs(", \"scope\": ", out);
	json_put_str(out, ir_op_scope(g, op));
	/* the defaults that depend on other attributes, resolved */
	if (op->kind == OP_MAXPOOL2D || op->kind == OP_AVGPOOL2D) {
		int64_t st[2] = {ir_pool_stride(op, 0), ir_pool_stride(op, 1)};
		put_ints(out, "pool_stride", st, 2);
	}
	if (op->kind == OP_FLATTEN)
		fprintf(out, ", \"flatten_start\": %lld", (long long)(
		        ir_attr_given(op->kind, op->p, "start") ? op->p->start : 1));
	/* the attributes the op table's fields above do not hold: clamp's
	 * bounds (null: unbounded), attention's dropout, cross_entropy's
	 * ignored label, and what a custom op saves (its arguments' positions;
	 * "out": its output) and its workspace */
	fputs(", \"min\": ", out);
	put_real(out, op->p->cmin);
	fputs(", \"max\": ", out);
	put_real(out, op->p->cmax);
	fprintf(out, ", \"dropout\": %.17g, \"ignore_index\": %lld", op->p->dropout,
	        (long long)op->p->ignore_index);
	if (op->kind == OP_CUSTOM) {
		const CustomOp *c = op->p->custom;
		const char *sep = "";
		fputs(", \"saves\": [", out);
		for (int k = 0; k < c->nargs; k++)
			if (c->saves_arg[k]) {
				fprintf(out, "%s%d", sep, k);
				sep = ", ";
			}
		if (c->saves_out)
			fprintf(out, "%s\"out\"", sep);
		fprintf(out, "], \"workspace\": %lld", (long long)c->workspace);
	}
	fputs(", ", out);
	put_params(op, out);
	fputc('}', out);
}

void
graph_json(const Graph *g, FILE *out)
{
	fputs("{\n  \"file\": ", out);
	json_put_str(out, g->file ? g->file : "");
	fprintf(out, ",\n  \"train\": %s,\n  \"loss\": %d,\n  \"outputs\": ",
	        g->train ? "true" : "false", g->loss);
	put_list(out, g->outputs, g->noutputs);
	fputs(",\n  \"tensors\": [\n", out);
	for (int i = 0; i < g->nt; i++) {
		put_tensor(g, i, out);
		fputs(i + 1 < g->nt ? ",\n" : "\n", out);
	}
	fputs("  ],\n  \"ops\": [\n", out);
	for (int o = 0; o < g->nop; o++) {
		put_op(g, o, out);
		fputs(o + 1 < g->nop ? ",\n" : "\n", out);
	}
	fputs("  ]\n}\n", out);
}
