/* report/dot.c -- --dot: the forward graph (with --dot-backward the
 * backward ops too) for Graphviz. Ops are boxes; tensors are ellipses
 * filled with their category's colour and sized by their bytes (area grows
 * with the size, relative to the largest). Their outline says what the
 * plan does with them: bold = kept from the forward pass for backward,
 * dashed red = recomputed, dotted = a view (owns no bytes); the label says
 * "saved" when a backward op reads it. Reads an Analysis (graph, Dag,
 * chosen MemEval); writes text. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

typedef struct Dot {
	const Analysis *an;
	FILE *f;
	int *dag_of;            /* [g.nt] Dag tensor of an IR tensor, or -1 */
	unsigned char *status;  /* [d.nt] KEPT | RECOMPUTED */
	bool *drawn;            /* [g.nt] node already written */
	int64_t maxbytes;
	Arena *a;
} Dot;

static MemCat
ir_cat(const Dot *D, int t)
{
	const Tensor *x = &D->an->g.t[t];

	if (D->dag_of[t] >= 0)
		return D->an->d.t[D->dag_of[t]].cat;
	return x->kind == TK_PARAM ? CAT_PARAMS : x->kind == TK_PARAM_GRAD ? CAT_PARAM_GRADS :
	       x->kind == TK_INPUT ? CAT_INPUTS : x->kind == TK_GRAD ? CAT_GRADIENTS :
	       CAT_ACTIVATIONS;
}

static void
tensor_node(Dot *D, int t)
{
	const Tensor *x = &D->an->g.t[t];
	int dt = D->dag_of[t];
	unsigned st = dt >= 0 ? D->status[dt] : 0;
	double w = 0.6 + 1.6 * sqrt((double)x->bytes / (double)D->maxbytes);
	char size[32], shape[256];

	if (D->drawn[t])
		return;
	D->drawn[t] = true;
	fprintf(D->f, "  t%d [label=", t);
	ir_shape_str(x, shape, sizeof shape);
	dot_put_str(D->f, ar_printf(D->a, "%s\n%s%s %s%s%s%s", x->id, dtype_name(x->dtype), shape,
	           report_size(x->bytes, size), x->saved ? "\nsaved" : "",
	           st & VIZ_KEPT ? ", kept" : "", st & VIZ_RECOMPUTED ? ", recomputed" : ""));
	fprintf(D->f, ", fillcolor=\"%s\", width=%.2f, height=%.2f", viz_cat_color(ir_cat(D, t)),
	        w, w * 0.45);
	if (x->view_of >= 0)
		fputs(", style=\"filled,dotted\"", D->f);
	else if (st & VIZ_RECOMPUTED)
		fputs(", style=\"filled,dashed\", color=\"#c00000\", penwidth=2.5", D->f);
	else if (st & VIZ_KEPT)
		fputs(", style=\"filled,bold\", penwidth=3", D->f);
	fputs("];\n", D->f);
}

static void
edge_in(Dot *D, int t, const char *op, int o)
{
	tensor_node(D, t);
	fprintf(D->f, "  t%d -> %s%d;\n", t, op, o);
}

static void
edge_out(Dot *D, const char *op, int o, int t)
{
	tensor_node(D, t);
	fprintf(D->f, "  %s%d -> t%d;\n", op, o, t);
}

static void
forward(Dot *D)
{
	const Graph *g = &D->an->g;

	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		fprintf(D->f, "  f%d [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f4f4\", label=", o);
		dot_put_str(D->f, ar_printf(D->a, "%s = %s\nline %d", g->t[op->out[0]].id, ir_tensor_op(g, op->out[0]),
		                           ir_op_loc(g, op).line));
		fputs("];\n", D->f);
		for (int i = 0; i < op->nin; i++)
			edge_in(D, op->in[i], "f", o);
		for (int i = 0; i < op->nout; i++)
			edge_out(D, "f", o, op->out[i]);
		for (int i = 0; i < op->nextra; i++)
			edge_out(D, "f", o, ir_extra(op, i));
	}
}

static void
backward(Dot *D)
{
	const Dag *d = &D->an->d;

	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		if (!n->is_backward)
			continue;
		fprintf(D->f, "  b%d [shape=box, style=\"rounded,filled\", fillcolor=\"#e9e2f3\", label=", v);
		dot_put_str(D->f, ar_printf(D->a, "backward %s", n->name));
		fputs("];\n", D->f);
		for (int i = 0; i < n->nin; i++)
			if (d->t[n->in[i]].ir_tensor >= 0)
				edge_in(D, d->t[n->in[i]].ir_tensor, "b", v);
		for (int i = 0; i < n->nacc; i++)
			if (d->t[n->acc[i].tensor].ir_tensor >= 0)
				edge_out(D, "b", v, d->t[n->acc[i].tensor].ir_tensor);
	}
}

static void
legend(FILE *f)
{
	fputs("  legend [shape=plaintext, label=<<table border=\"0\" cellborder=\"1\" "
	      "cellspacing=\"0\" cellpadding=\"3\"><tr><td colspan=\"2\"><b>categories</b></td></tr>", f);
	for (int c = 0; c < CAT_COUNT; c++)
		fprintf(f, "<tr><td bgcolor=\"%s\">  </td><td>%s</td></tr>", viz_cat_color((MemCat)c),
		        memcat_name((MemCat)c));
	fputs("<tr><td colspan=\"2\">bold: kept for backward<br/>dashed red: recomputed<br/>"
	      "dotted: view</td></tr></table>>];\n", f);
}

int
viz_write_dot(FILE *f, const void *ctx)
{
	const VizDot *vd = ctx;
	const Analysis *an = vd->an;
	Dot D = {an, f, NULL, NULL, NULL, 1, NULL};
	Arena a;

	ar_init(&a);
	D.a = &a;
	D.dag_of = ar_alloc(&a, sizeof *D.dag_of * (size_t)(an->g.nt + 1));
	D.drawn = ar_alloc(&a, (size_t)an->g.nt + 1);
	for (int t = 0; t < an->g.nt; t++) {
		D.dag_of[t] = -1;
		if (an->g.t[t].bytes > D.maxbytes)
			D.maxbytes = an->g.t[t].bytes;
	}
	for (int i = 0; i < an->d.nt; i++)
		if (an->d.t[i].ir_tensor >= 0)
			D.dag_of[an->d.t[i].ir_tensor] = i;
	D.status = viz_tensor_status(an, &a);
	fputs("digraph remat {\n  rankdir=TB;\n  node [fontname=\"sans-serif\", fontsize=10, "
	      "style=filled];\n  edge [color=\"#666666\"];\n  label=", f);
	dot_put_str(f, viz_settings(an, &a));
	fputs(";\n  labelloc=t;\n", f);
	legend(f);
	forward(&D);
	if (vd->backward)
		backward(&D);
	fputs("}\n", f);
	ar_free(&a);
	return 0;
}
