/* report/dot.c -- --dot: the forward graph (with --dot-backward the
 * backward ops too) for Graphviz. Ops are boxes; tensors are ellipses
 * filled with their category's colour and sized by their bytes (area grows
 * with the size, relative to the largest). Their outline says what the
 * plan does with them: bold = kept from the forward pass for backward,
 * dashed red = recomputed, dotted = a view (owns no bytes); the label says
 * "saved" when a backward op reads it.
 *
 * The calls of one def that make the same ops (a `repeat`, or a def
 * called from several places) are one cluster, "block x12", with the first
 * call's ops drawn once: a later call's tensor is drawn as the first
 * call's, so the edges out of the cluster stay, and a later call's input
 * from outside (its call site) is an edge into the first call's op. A
 * tensor's marks count its calls ("kept in 4 of 12 calls"), and its label
 * says where the calls' shapes differ (DenseNet's growing dense layers). A
 * real network is then a few hundred nodes whatever its depth, which
 * Graphviz lays out in seconds; drawn in full (--dot-full), GPT-2 with its
 * backward kept Graphviz busy for more than 5 minutes. Reads an Analysis
 * (graph, Dag, chosen MemEval); writes text. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

/* The calls of one def drawn as one cluster. */
typedef struct Group {
	int layer;              /* its first call (report_layers) */
	int ncalls;
	int member, tail;       /* its first and last node in Dot.mem, or -1 */
} Group;

/* A node of a cluster: 'f' forward op, 'b' backward node, 't' tensor. */
typedef struct Member {
	char kind;
	int id, next;
} Member;

typedef struct Dot {
	const Analysis *an;
	FILE *f;
	int *dag_of;            /* [g.nt] Dag tensor of an IR tensor, or -1 */
	unsigned char *status;  /* [d.nt] KEPT | RECOMPUTED */
	bool *drawn;            /* [g.nt] node already written */
	int64_t maxbytes;
	Arena *a;
	/* collapsed calls (all identity and -1 with --dot-full) */
	int *rep;               /* [g.nop] the op drawn for op o: o, or the op
	                           at the same place in its group's first call */
	int *group;             /* [g.nop] the group of a call's op, or -1 */
	ReportLayers ly;
	Group *grp;
	int ngrp;
	Member *mem;
	int nmem;
	int *nkept, *nrec;      /* [g.nt] a collapsed group's tensor: in how
	                           many of its calls the plan keeps it, and
	                           recomputes it */
	bool *varies;           /* [g.nt] its calls' shapes differ */
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

/* ---- collapsing calls */

/* Length of the def's name in a call's scope: "block" of "block.3.". */
static size_t
def_len(const ReportLayer *y)
{
	const char *dot = memchr(y->name, '.', y->len);

	return dot ? (size_t)(dot - y->name) : y->len;
}

static bool
same_tensor_shape(const Tensor *x, const Tensor *y)
{
	if (x->dtype != y->dtype || x->ndim != y->ndim)
		return false;
	for (int i = 0; i < x->ndim; i++)
		if (x->shape[i] != y->shape[i])
			return false;
	return true;
}

/* The plan's mark on IR tensor t: kept, recomputed, or neither. */
static unsigned
plan_status(const Dot *D, int t)
{
	return D->dag_of[t] >= 0 ? D->status[D->dag_of[t]] : 0;
}

/* Do calls k and l (layers whose ops are op0[.] .. op0[.] + nops[.] - 1)
 * call one def and make the same ops? Their shapes may differ (the drawn
 * tensor says so), and the plan may treat them differently (the drawn
 * tensor counts its calls' marks). */
static bool
same_call(const Dot *D, int l, int k, const int *op0, const int *nops)
{
	const Graph *g = &D->an->g;
	const ReportLayer *x = &D->ly.l[l], *y = &D->ly.l[k];
	size_t n = def_len(x);

	if (!y->len || nops[k] != nops[l] || def_len(y) != n || strncmp(x->name, y->name, n))
		return false;
	for (int j = 0; j < nops[l]; j++) {
		const Op *a = &g->op[op0[l] + j], *b = &g->op[op0[k] + j];
		if (a->kind != b->kind || a->nin != b->nin || a->nout != b->nout ||
		    a->nextra != b->nextra)
			return false;
	}
	return true;
}

/* The groups: a def call whose ops are contiguous (they are, as calls are
 * instantiated in program order) joins the first group of its def whose
 * first call same_call matches, or starts one. */
static void
find_groups(Dot *D)
{
	const Graph *g = &D->an->g;
	const ReportLayers *ly = &D->ly;
	int *op0 = ar_alloc(D->a, sizeof *op0 * ((size_t)ly->n + 1));
	int *nops = ar_alloc(D->a, sizeof *nops * ((size_t)ly->n + 1));
	bool *broken = ar_alloc(D->a, (size_t)ly->n + 1);

	for (int o = 0; o < g->nop; o++) {
		int l = ly->of[g->op[o].out[0]];
		if (l < 0)
			continue;
		if (!nops[l])
			op0[l] = o;
		else if (op0[l] + nops[l] != o)
			broken[l] = true;
		nops[l]++;
	}
	D->grp = ar_alloc(D->a, sizeof *D->grp * ((size_t)ly->n + 1));
	for (int c = 0; c < ly->n; c++) {
		int k = 0, l;
		if (!ly->l[c].len || !nops[c] || broken[c])
			continue;
		while (k < D->ngrp && !same_call(D, D->grp[k].layer, c, op0, nops))
			k++;
		if (k == D->ngrp)
			D->grp[D->ngrp++] = (Group){c, 0, -1, -1};
		D->grp[k].ncalls++;
		l = D->grp[k].layer;
		for (int j = 0; j < nops[l]; j++) {
			const Op *p = &g->op[op0[c] + j], *r = &g->op[op0[l] + j];
			D->rep[op0[c] + j] = op0[l] + j;
			D->group[op0[c] + j] = k;
			for (int i = 0; i < p->nout + p->nextra; i++) {
				unsigned st = plan_status(D, p->out[i]);
				if (!same_tensor_shape(&g->t[p->out[i]], &g->t[r->out[i]]))
					D->varies[r->out[i]] = true;
				D->nkept[r->out[i]] += (st & VIZ_KEPT) != 0;
				D->nrec[r->out[i]] += (st & VIZ_RECOMPUTED) != 0;
			}
		}
	}
}

/* The tensor drawn for IR tensor t: an output of a call that is not drawn
 * stands for the same output of its group's first call, and its gradient
 * for that output's gradient. */
static int
drawn_tensor(const Dot *D, int t)
{
	const Graph *g = &D->an->g;
	const Tensor *x = &g->t[t];

	if ((x->kind == TK_GRAD || x->kind == TK_PARAM_GRAD) && x->grad_of >= 0) {
		int m = drawn_tensor(D, x->grad_of);
		return m != x->grad_of && g->t[m].grad >= 0 ? g->t[m].grad : t;
	}
	if ((x->kind == TK_ACT || x->kind == TK_EXTRA) && x->producer >= 0 &&
	    D->rep[x->producer] != x->producer) {
		const Op *p = &g->op[x->producer], *r = &g->op[D->rep[x->producer]];
		for (int i = 0; i < p->nout + p->nextra; i++)
			if (p->out[i] == t)
				return r->out[i];
	}
	return t;
}

static void
add_member(Dot *D, int k, char kind, int id)
{
	if (k < 0)
		return;
	D->mem[D->nmem] = (Member){kind, id, -1};
	if (D->grp[k].tail >= 0)
		D->mem[D->grp[k].tail].next = D->nmem;
	else
		D->grp[k].member = D->nmem;
	D->grp[k].tail = D->nmem++;
}

/* The group a drawn tensor is in: its producer's (a gradient: its
 * tensor's producer's); a param or input declared in a call, the group of
 * the node that uses it (hint) when that group's first call declared it. */
static int
tensor_group(const Dot *D, int t, int hint)
{
	const Graph *g = &D->an->g;
	const Tensor *x = &g->t[t];
	const ReportLayer *y;

	if ((x->kind == TK_GRAD || x->kind == TK_PARAM_GRAD) && x->grad_of >= 0)
		x = &g->t[x->grad_of];
	if ((x->kind == TK_ACT || x->kind == TK_EXTRA) && x->producer >= 0)
		return D->group[x->producer];
	if (hint < 0)
		return -1;
	y = &D->ly.l[D->grp[hint].layer];
	return y->len && !strncmp(x->scope, y->name, y->len) ? hint : -1;
}

/* ---- drawing */

/* ", kept" when all n calls have the mark, ", kept in m of n calls" when
 * some do, "" when none does. */
static const char *
mark(const Dot *D, const char *what, int m, int n)
{
	if (!m)
		return "";
	return m == n ? what : ar_printf(D->a, "%s in %d of %d calls", what, m, n);
}

static void
tensor_node(Dot *D, int t, int hint)
{
	const Tensor *x = &D->an->g.t[t];
	unsigned st = plan_status(D, t);
	double w = 0.6 + 1.6 * sqrt((double)x->bytes / (double)D->maxbytes);
	char size[32], shape[256];
	const char *kept = st & VIZ_KEPT ? ", kept" : "";
	const char *rec = st & VIZ_RECOMPUTED ? ", recomputed" : "";
	const char *varies = "";
	int k;

	if (D->drawn[t])
		return;
	D->drawn[t] = true;
	k = tensor_group(D, t, hint);
	add_member(D, k, 't', t);
	if (k >= 0 && D->nkept && x->producer >= 0) {
		/* the marks of every call: "kept in 3 of 12 calls" where they differ */
		int n = D->grp[k].ncalls;
		kept = mark(D, ", kept", D->nkept[t], n);
		rec = mark(D, ", recomputed", D->nrec[t], n);
		st = (D->nkept[t] ? VIZ_KEPT : 0) | (D->nrec[t] ? VIZ_RECOMPUTED : 0);
		if (D->varies[t])
			varies = ar_printf(D->a, "\nshape varies by call, %s's shown",
			                   report_layer_name(&D->ly.l[D->grp[k].layer], D->a));
	}
	fprintf(D->f, "  t%d [label=", t);
	ir_shape_str(x, shape, sizeof shape);
	dot_put_str(D->f, ar_printf(D->a, "%s\n%s%s %s%s%s%s%s", x->id, dtype_name(x->dtype), shape,
	           report_size(x->bytes, size), varies, x->saved ? "\nsaved" : "", kept, rec));
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

/* An edge from tensor t, the i-th of ins, to node op/o of group k. Two
 * tensors of different calls drawn as one give one edge. */
static void
edge_in(Dot *D, const int *ins, int i, const char *op, int o, int k)
{
	int t = drawn_tensor(D, ins[i]);

	for (int j = 0; j < i; j++)
		if (ins[j] != ins[i] && drawn_tensor(D, ins[j]) == t)
			return;
	tensor_node(D, t, k);
	fprintf(D->f, "  t%d -> %s%d;\n", t, op, o);
}

static void
edge_out(Dot *D, const char *op, int o, int t, int k)
{
	t = drawn_tensor(D, t);
	tensor_node(D, t, k);
	fprintf(D->f, "  %s%d -> t%d;\n", op, o, t);
}

/* A later call's input from outside its group (the call site of a def
 * called between other code): an edge into the op drawn for it, once. */
static void
call_site(Dot *D, const Op *op, int o, int *head, Member *seen, int *nseen)
{
	const Graph *g = &D->an->g;
	const Op *r = &g->op[D->rep[o]];

	for (int i = 0; i < op->nin; i++) {
		int t = drawn_tensor(D, op->in[i]), p = g->t[t].producer, m;
		if (p < 0 || t == drawn_tensor(D, r->in[i]) || D->group[p] == D->group[o] ||
		    (g->t[t].kind != TK_ACT && g->t[t].kind != TK_EXTRA))
			continue;
		for (m = head[D->rep[o]]; m >= 0 && seen[m].id != t; m = seen[m].next)
			;
		if (m >= 0)
			continue;
		seen[*nseen] = (Member){'t', t, head[D->rep[o]]};
		head[D->rep[o]] = (*nseen)++;
		tensor_node(D, t, -1);
		fprintf(D->f, "  t%d -> f%d;\n", t, D->rep[o]);
	}
}

static void
forward(Dot *D)
{
	const Graph *g = &D->an->g;
	int *head = ar_alloc(D->a, sizeof *head * ((size_t)g->nop + 1)), nseen = 0, nin = 0;
	Member *seen;

	for (int o = 0; o < g->nop; o++) {
		head[o] = -1;
		nin += g->op[o].nin;
	}
	seen = ar_alloc(D->a, sizeof *seen * ((size_t)nin + 1));
	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		int k = D->group[o];
		if (D->rep[o] != o) {
			call_site(D, op, o, head, seen, &nseen);
			continue;
		}
		add_member(D, k, 'f', o);
		fprintf(D->f, "  f%d [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f4f4\", label=", o);
		dot_put_str(D->f, ar_printf(D->a, "%s = %s\nline %d", g->t[op->out[0]].id, ir_tensor_op(g, op->out[0]),
		                           ir_op_loc(g, op).line));
		fputs("];\n", D->f);
		for (int i = 0; i < op->nin; i++)
			edge_in(D, op->in, i, "f", o, k);
		for (int i = 0; i < op->nout; i++)
			edge_out(D, "f", o, op->out[i], k);
		for (int i = 0; i < op->nextra; i++)
			edge_out(D, "f", o, ir_extra(op, i), k);
	}
}

static void
backward(Dot *D)
{
	const Dag *d = &D->an->d;
	int *ins = ar_alloc(D->a, sizeof *ins * ((size_t)d->nt + 1));

	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		int fwd = n->fwd_plus1 - 1, o = fwd >= 0 ? d->node[fwd].ir_op : -1, k = -1, m = 0;
		if (!n->is_backward || (o >= 0 && D->rep[o] != o))
			continue;
		if (o >= 0)
			k = D->group[o];
		add_member(D, k, 'b', v);
		fprintf(D->f, "  b%d [shape=box, style=\"rounded,filled\", fillcolor=\"#e9e2f3\", label=", v);
		dot_put_str(D->f, ar_printf(D->a, "backward %s", n->name));
		fputs("];\n", D->f);
		for (int i = 0; i < n->nin; i++)
			if (d->t[n->in[i]].ir_tensor >= 0)
				ins[m++] = d->t[n->in[i]].ir_tensor;
		for (int i = 0; i < m; i++)
			edge_in(D, ins, i, "b", v, k);
		for (int i = 0; i < n->nacc; i++)
			if (d->t[n->acc[i].tensor].ir_tensor >= 0)
				edge_out(D, "b", v, d->t[n->acc[i].tensor].ir_tensor, k);
	}
}

/* One subgraph per group, naming the nodes drawn for it. */
static void
clusters(Dot *D)
{
	for (int k = 0; k < D->ngrp; k++) {
		const Group *gr = &D->grp[k];
		const ReportLayer *x = &D->ly.l[gr->layer];
		const char *label = gr->ncalls == 1 ? report_layer_name(x, D->a) :
		                    ar_printf(D->a, "%.*s \xc3\x97" "%d (%s shown)", (int)def_len(x), x->name,
		                              gr->ncalls, report_layer_name(x, D->a));
		fprintf(D->f, "  subgraph cluster_%d {\n    label=", k);
		dot_put_str(D->f, label);
		fputs("; style=\"rounded,dashed\"; color=\"#888888\";\n   ", D->f);
		for (int m = gr->member; m >= 0; m = D->mem[m].next)
			fprintf(D->f, " %c%d;", D->mem[m].kind, D->mem[m].id);
		fputs("\n  }\n", D->f);
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
	Dot D = {.an = an, .f = f, .maxbytes = 1};
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
	D.rep = ar_alloc(&a, sizeof *D.rep * (size_t)(an->g.nop + 1));
	D.group = ar_alloc(&a, sizeof *D.group * (size_t)(an->g.nop + 1));
	for (int o = 0; o < an->g.nop; o++) {
		D.rep[o] = o;
		D.group[o] = -1;
	}
	if (!vd->full) {
		report_layers(an, &D.ly, &a);
		D.nkept = ar_alloc(&a, sizeof *D.nkept * ((size_t)an->g.nt + 1));
		D.nrec = ar_alloc(&a, sizeof *D.nrec * ((size_t)an->g.nt + 1));
		D.varies = ar_alloc(&a, (size_t)an->g.nt + 1);
		find_groups(&D);
		/* every drawn op, backward node and tensor is a member at most once */
		D.mem = ar_alloc(&a, sizeof *D.mem * ((size_t)an->g.nop + (size_t)an->d.nnode +
		                                      (size_t)an->g.nt + 1));
	}
	fputs("digraph remat {\n  rankdir=TB;\n  node [fontname=\"sans-serif\", fontsize=10, "
	      "style=filled];\n  edge [color=\"#666666\"];\n  label=", f);
	dot_put_str(f, viz_settings(an, &a));
	fputs(";\n  labelloc=t;\n", f);
	legend(f);
	forward(&D);
	if (vd->backward)
		backward(&D);
	clusters(&D);
	fputs("}\n", f);
	ar_free(&a);
	return 0;
}
