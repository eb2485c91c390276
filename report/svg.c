/* report/svg.c -- --plot: the memory timeline as one SVG file.
 * Bytes stacked by category over the schedule (downsampled, keeping each
 * bucket's largest step), the forward / recompute / backward phases
 * shaded, the peak marked with its figure and the tensors that make it,
 * the -O0 curve when a plan is shown, a budget line, axes in binary units,
 * a legend and a title with the settings. Also the axis and text helpers
 * the HTML page and the sweep chart share. Reads an Analysis; writes text. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

enum { W = 980, H = 520, LEFT = 78, RIGHT = 250, TOP = 64, BOTTOM = 56,
       MAXPTS = 800, PEAK_TENSORS = 6 };

static const char *const cat_colors[CAT_COUNT] = {
	"#4e79a7", "#a0cbe8", "#f28e2b", "#ffbe7d", "#59a14f", "#e15759",
	"#b07aa1", "#9c755f",
};
static const char *const kind_colors[3] = {"#eaf1fb", "#fde3c8", "#f1ebf7"};

const char *
viz_cat_color(MemCat c)
{
	return cat_colors[c];
}

double
viz_map(const VizAxis *ax, double v)
{
	if (ax->hi <= ax->lo)
		return ax->px0;
	return ax->px0 + (v - ax->lo) / (ax->hi - ax->lo) * (ax->px1 - ax->px0);
}

/* A tick spacing: 1, 2 or 5 times a power of ten, at least raw. */
static double
nice_spacing(double raw)
{
	double p = pow(10, floor(log10(raw))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

void
viz_svg_begin(FILE *f, int w, int h, const char *title, bool prolog)
{
	if (prolog)
		fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
	        "viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
	        w, h, w, h);
	fputs("<title>", f);
	esc_xml(f, title);
	fputs("</title>\n", f);
	fprintf(f, "<rect width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", w, h);
}

/* Byte ticks in the largest binary suffix below the top of the axis. */
void
viz_svg_yaxis(FILE *f, const VizAxis *y, double x0, double x1)
{
	static const char *suffix[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
	double scale = 1, top = y->hi > 0 ? y->hi : 1, spacing;
	int u = 0;

	while (top / scale >= 1024 && u < 5) {
		scale *= 1024;
		u++;
	}
	spacing = nice_spacing(top / scale / 6) * scale;
	for (double v = 0; v <= top * 1.0000001; v += spacing) {
		double py = viz_map(y, v);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"#000\" stroke-opacity=\"0.12\"/>\n", x0, py, x1, py);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\" "
		        "dominant-baseline=\"middle\">%g %s</text>\n", x0 - 6, py,
		        round(v / scale * 1000) / 1000, suffix[u]);
	}
}

void
viz_svg_xaxis(FILE *f, const VizAxis *x, double y0, const char *label)
{
	double span = x->hi - x->lo;
	double spacing = nice_spacing(span > 1 ? span / 8 : 1);

	if (spacing < 1)
		spacing = 1;
	fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
	        x->px0, y0, x->px1, y0);
	for (double v = ceil(x->lo / spacing) * spacing; v <= x->hi;
	     v += spacing) {
		double px = viz_map(x, v);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
		        px, y0, px, y0 + 4);
		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
		        px, y0 + 17, v);
	}
	fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x->px0 + x->px1) / 2,
	        y0 + 36);
	esc_xml(f, label);
	fputs("</text>\n", f);
}

/* The dominant kind of a bucket: recompute shows whenever present. */
static int
bucket_kind(unsigned kinds)
{
	if (kinds & (1u << STEP_RECOMPUTE))
		return STEP_RECOMPUTE;
	return kinds & (1u << STEP_BACKWARD) ? STEP_BACKWARD : STEP_FORWARD;
}

static void
phases(const VizTimeline *tl, const VizAxis *x, const VizAxis *y, FILE *f)
{
	fputs("<g id=\"phases\">\n", f);
	for (int b = 0; b < tl->n;) {
		int k = bucket_kind(tl->p[b].kinds), e = b;
		while (e < tl->n && bucket_kind(tl->p[e].kinds) == k)
			e++;
		double x0 = viz_map(x, tl->p[b].lo), x1 = viz_map(x, tl->p[e - 1].hi);
		fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
		        "fill=\"%s\"/>\n", step_kind_name((StepKind)k), x0, y->px1, x1 - x0,
		        y->px0 - y->px1, kind_colors[k]);
		b = e;
	}
	fputs("</g>\n", f);
}

/* One category's band: its top edge left to right, its bottom edge back. */
static void
band(const VizTimeline *tl, int c, const VizAxis *x, const VizAxis *y, FILE *f)
{
	int64_t any = 0;

	for (int b = 0; b < tl->n; b++)
		any |= tl->p[b].cat[c];
	if (!any)
		return;
	fprintf(f, "<path class=\"cat\" data-cat=\"%s\" fill=\"%s\" d=\"", memcat_name((MemCat)c),
	        cat_colors[c]);
	for (int b = 0; b < tl->n; b++) {
		int64_t up = 0;
		for (int k = 0; k <= c; k++)
			up += tl->p[b].cat[k];
		fprintf(f, "%s%.2f %.2fH%.2f", b ? "L" : "M", viz_map(x, tl->p[b].lo),
		        viz_map(y, (double)up), viz_map(x, tl->p[b].hi));
	}
	for (int b = tl->n - 1; b >= 0; b--) {
		int64_t low = 0;
		for (int k = 0; k < c; k++)
			low += tl->p[b].cat[k];
		fprintf(f, "L%.2f %.2fH%.2f", viz_map(x, tl->p[b].hi), viz_map(y, (double)low),
		        viz_map(x, tl->p[b].lo));
	}
	fputs("Z\"/>\n", f);
}

static void
base_curve(const VizTimeline *tl, const VizAxis *x, const VizAxis *y, FILE *f)
{
	bool first = true;

	fputs("<path id=\"baseline\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\" "
	      "stroke-dasharray=\"5 3\" d=\"", f);
	for (int b = 0; b < tl->n; b++) {
		if (tl->p[b].base < 0)
			continue;
		fprintf(f, "%s%.2f %.2fH%.2f", first ? "M" : "L", viz_map(x, tl->p[b].lo),
		        viz_map(y, (double)tl->p[b].base), viz_map(x, tl->p[b].hi));
		first = false;
	}
	fputs(first ? "M0 0\"/>\n" : "\"/>\n", f);
}

static void
budget_line(int64_t budget, const VizAxis *x, const VizAxis *y, FILE *f)
{
	char buf[32];
	double py = viz_map(y, (double)budget);

	fprintf(f, "<g id=\"budget\"><line x1=\"%.1f\" y1=\"%.2f\" x2=\"%.1f\" y2=\"%.2f\" "
	        "stroke=\"#c00\" stroke-width=\"1.5\" stroke-dasharray=\"8 4\"/>\n", x->px0, py,
	        x->px1, py);
	fprintf(f, "<text x=\"%.1f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#c00\">budget %s</text></g>\n",
	        x->px1 - 4, py - 4, report_size(budget, buf));
}

static void
legend_row(FILE *f, int *y, const char *color, const char *dash, const char *label)
{
	int x = W - RIGHT + 16;

	if (dash)
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
		        "stroke-width=\"2\" stroke-dasharray=\"%s\"/>\n", x, *y + 5, x + 14, *y + 5,
		        color, dash);
	else
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\" "
		        "stroke=\"#0003\"/>\n", x, *y, color);
	fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 20, *y + 9);
	esc_xml(f, label);
	fputs("</text>\n", f);
	*y += 16;
}

static void
legend(const Analysis *an, const VizTimeline *tl, const VizStyle *st, FILE *f, int *y)
{
	static const char *const kinds[3] = {"forward", "recompute", "backward"};

	fprintf(f, "<g id=\"legend\"><text x=\"%d\" y=\"%d\" font-weight=\"bold\">categories</text>\n",
	        W - RIGHT + 16, *y);
	*y += 8;
	for (int c = CAT_COUNT - 1; c >= 0; c--)
		legend_row(f, y, cat_colors[c], NULL, memcat_name((MemCat)c));
	*y += 4;
	for (int k = 0; k < 3; k++)
		if (k != STEP_RECOMPUTE || an->ev.recompute_cost > 0 || tl->has_base)
			legend_row(f, y, kind_colors[k], NULL, kinds[k]);
	if (tl->has_base)
		legend_row(f, y, "#222", "5 3", "-O0 (no remat)");
	if (st->budget >= 0)
		legend_row(f, y, "#c00", "8 4", "budget");
	fputs("</g>\n", f);
}

/* The peak: a marker on the chart and, beside it, what it is made of. */
static void
peak_mark(const Analysis *an, const VizAxis *x, const VizAxis *y, FILE *f, int ty)
{
	const MemEval *ev = &an->ev;
	int ps = ev->peak_step, *live = xmalloc(sizeof *live * (size_t)(ev->ninst + 1));
	int n = viz_live_at(ev, ps, live, PEAK_TENSORS), tx = W - RIGHT + 16;
	double px = viz_map(x, ps + 0.5), py = viz_map(y, (double)ev->peak);
	char buf[32], name[64];

	fprintf(f, "<g id=\"peak\"><line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" "
	        "stroke=\"#000\" stroke-dasharray=\"2 2\"/>\n", px, y->px0, px, y->px1);
	fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"#000\"/>\n", px, py);
	fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"%s\" font-weight=\"bold\" stroke=\"#fff\" stroke-width=\"3\" paint-order=\"stroke\">peak %s</text>\n",
	        px + (px > (x->px0 + x->px1) / 2 ? -6 : 6), py - 8,
	        px > (x->px0 + x->px1) / 2 ? "end" : "start", report_size(ev->peak, buf));
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-weight=\"bold\">peak %s</text>\n", tx, ty,
	        report_size(ev->peak, buf));
	fprintf(f, "<text x=\"%d\" y=\"%d\">step %d: %s ", tx, ty + 16, ps,
	        step_kind_name(ev->kind[ps]));
	esc_xml(f, an->d.node[an->plan.sched.step[ps]].name);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"%d\">line %d; largest live:</text>\n", tx, ty + 32,
	        viz_step_line(an, ps));
	for (int i = 0; i < n; i++) {
		const Instance *in = &ev->inst[live[i]];
		fprintf(f, "<text x=\"%d\" y=\"%d\"><tspan fill=\"%s\">&#9632;</tspan> ", tx + 4,
		        ty + 48 + 15 * i, cat_colors[an->d.t[in->tensor].cat]);
		snprintf(name, sizeof name, "%s", an->d.t[in->tensor].name);
		if (strlen(name) > 26)
			strcpy(name + 24, "..");  /* the box is 230 pixels wide */
		esc_xml(f, name);
		fprintf(f, " %s</text>\n", report_size(in->owned, buf));
	}
	fputs("</g>\n", f);
	free(live);
}

static void
titles(const Analysis *an, FILE *f, Arena *a)
{
	char p[32], b[32];

	fputs("<text x=\"16\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", f);
	esc_xml(f, viz_settings(an, a));
	fputs("</text>\n<text x=\"16\" y=\"44\" fill=\"#444\">", f);
	fprintf(f, "memory over one training step: peak %s at step %d of %d", report_size(an->ev.peak, p),
	        an->ev.peak_step, an->ev.nsteps);
	if (an->goal.level > 0 || an->goal.budget >= 0)
		fprintf(f, "; -O0 peak %s; recompute %.1f%% of forward FLOPs",
		        report_size(an->base.peak, b),
		        an->d.forward_cost ? 100.0 * (double)an->ev.recompute_cost /
		        (double)an->d.forward_cost : 0.0);
	fputs("</text>\n", f);
}

void
viz_svg_timeline(const Analysis *an, const VizTimeline *tl, const VizStyle *st, FILE *f)
{
	VizAxis x = {0, tl->nsteps, LEFT, W - RIGHT};
	double top = (double)tl->ymax;
	int ly = TOP + 4;
	Arena a;

	ar_init(&a);
	if (st->budget > 0 && (double)st->budget > top)
		top = (double)st->budget;
	VizAxis y = {0, top * 1.08 + 1, H - BOTTOM, TOP};
	viz_svg_begin(f, W, H, viz_settings(an, &a), !st->html);
	if (st->html)
		fprintf(f, "<g id=\"plot\" data-x0=\"%d\" data-x1=\"%d\" data-steps=\"%d\">\n", LEFT,
		        W - RIGHT, tl->nsteps);
	titles(an, f, &a);
	phases(tl, &x, &y, f);
	viz_svg_yaxis(f, &y, LEFT, W - RIGHT);
	for (int c = 0; c < CAT_COUNT; c++)
		band(tl, c, &x, &y, f);
	if (tl->has_base)
		base_curve(tl, &x, &y, f);
	if (st->budget >= 0)
		budget_line(st->budget, &x, &y, f);
	viz_svg_xaxis(f, &x, H - BOTTOM, "schedule step");
	legend(an, tl, st, f, &ly);
	if (tl->n)
		peak_mark(an, &x, &y, f, ly + 14);
	if (st->html)
		fprintf(f, "<line id=\"cursor\" x1=\"0\" y1=\"%d\" x2=\"0\" y2=\"%d\" stroke=\"#000\" "
		        "visibility=\"hidden\"/>\n</g>\n", TOP, H - BOTTOM);
	fputs("</svg>\n", f);
	ar_free(&a);
}

int
viz_write_plot(FILE *f, const void *ctx)
{
	const Analysis *an = ctx;
	VizStyle st = {an->goal.budget, false};
	VizTimeline tl;
	Arena a;

	ar_init(&a);
	viz_timeline(an, MAXPTS, 0, &tl, &a);
	viz_svg_timeline(an, &tl, &st, f);
	ar_free(&a);
	return 0;
}
