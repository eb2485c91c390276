/* report/layers.c -- activations per layer: the one computation behind the
 * human report's "activations per layer" table, the HTML page's layer and
 * plan tables and --json's "layers", so that they cannot disagree. A layer
 * is a run of activations in program order with the same outermost scope
 * (a def call: "block.3"); activations outside every def form "(top level)"
 * runs. Reads an Analysis; writes nothing. */
#include <string.h>

#include "report.h"

/* The layers, in program order: returns how many. of[i] is the layer of
 * IR tensor i. With l NULL (and of) it only counts them, so that l is
 * sized by the layers, not by the tensors: 56 bytes a tensor were 60 MB
 * of zeroed pages on a 1M-op graph of 100k layers. */
static int
find_layers(const Graph *g, ReportLayer *l, int *of)
{
	int n = 0;
	const char *name = NULL;        /* the current layer's */
	size_t cur = 0;

	for (int i = 0; i < g->nt; i++) {
		const Tensor *t = &g->t[i];
		size_t len;
		if (of)
			of[i] = -1;
		if (t->kind != TK_ACT && t->kind != TK_EXTRA)
			continue;
		len = ir_outer_scope_len(t->scope);
		if (!n || cur != len || strncmp(name, t->scope, len)) {
			name = t->scope;
			cur = len;
			if (l)
				l[n] = (ReportLayer){.name = name, .len = len};
			n++;
		}
		if (of)
			of[i] = n - 1;
	}
	return n;
}

/* Saved for backward: the storage that backward's saved tensors hold (per
 * ops.md). A view owns no bytes but holds its base's storage alive
 * (memory-model.md), so a saved view counts its storage root, and a root
 * that several saved tensors hold counts once, in the root's own layer. */
static void
saved_bytes(const Graph *g, ReportLayers *ly, Arena *a)
{
	unsigned char *held = ar_alloc(a, (size_t)g->nt + 1);

	for (int i = 0; i < g->nt; i++)
		if (g->t[i].saved)
			held[ir_storage_root(g, i)] = 1;
	for (int i = 0; i < g->nt; i++)
		if (held[i] && ly->of[i] >= 0)
			ly->l[ly->of[i]].saved += g->t[i].bytes;
}

void
report_layers(const Analysis *an, ReportLayers *ly, Arena *a)
{
	const Graph *g = &an->g;
	const MemEval *ev = &an->ev;

	ly->l = ar_alloc(a, sizeof *ly->l * ((size_t)find_layers(g, NULL, NULL) + 1));
	ly->of = ar_alloc(a, sizeof *ly->of * ((size_t)g->nt + 1));
	ly->n = find_layers(g, ly->l, ly->of);
	ly->status = viz_tensor_status(an, a);
	saved_bytes(g, ly, a);
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		int ir = an->d.t[in->tensor].ir_tensor;
		if (ir >= 0 && ly->of[ir] >= 0 && in->start <= ev->peak_step && ev->peak_step <= in->end)
			ly->l[ly->of[ir]].at_peak += in->owned;
	}
	for (int t = 0; t < an->d.nt; t++) {
		int ir = an->d.t[t].ir_tensor;
		ReportLayer *y;
		if (ir < 0 || ly->of[ir] < 0)
			continue;
		y = &ly->l[ly->of[ir]];
		if (ly->status[t] & VIZ_KEPT)
			y->kept += an->d.t[t].bytes, y->nkept++;
		if (ly->status[t] & VIZ_RECOMPUTED)
			y->recomputed += an->d.t[t].bytes, y->nrec++;
	}
}

const char *
report_layer_name(const ReportLayer *y, Arena *a)
{
	return y->len ? ar_printf(a, "%.*s", (int)y->len - 1, y->name) : "(top level)";
}
