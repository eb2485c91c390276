/* report/html.c -- --html: one self-contained page (inline SVG, CSS
 * and a short script; nothing is fetched) with the summary, the timeline
 * (hover shows a point's step, op, source line and largest live tensors),
 * the tensors at the peak, a per-block table ("per layer" on the page),
 * the plan (kept and recomputed activations per block) and the baselines
 * (-O0 against the plan). The page is well-formed XML as well as HTML, so xmllint checks
 * it; the script sits in a CDATA section and its data escapes '<' and '>'.
 * Reads an Analysis; writes text. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

enum { MAXPTS = 800, HOVER_TOP = 8, PEAK_ROWS = 25, LIST_MAX = 40 };

static const char css[] =
	"body{font-family:sans-serif;margin:24px;color:#222;max-width:1200px}"
	"h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:14px}"
	"table{border-collapse:collapse;font-size:13px}"
	"td,th{padding:3px 10px;border-bottom:1px solid #eee;text-align:left}"
	"td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
	".sw{display:inline-block;width:10px;height:10px;margin-right:4px}"
	"#chart{position:relative}"
	"#tip{position:absolute;background:#fff;border:1px solid #999;padding:6px 8px;"
	"font-size:12px;pointer-events:none;box-shadow:2px 2px 6px #0003;min-width:220px}"
	".muted{color:#777}.names{font-family:monospace;font-size:12px}";

static void
size_td(FILE *f, int64_t bytes)
{
	char b[32];

	fprintf(f, "<td class=\"n\" title=\"%" PRId64 " bytes\">%s</td>", bytes, report_size(bytes, b));
}

static void
summary(const Analysis *an, FILE *f)
{
	const MemEval *ev = &an->ev;
	ReportTotals rt = report_totals(an);
	double fwd = (double)an->d.forward_cost;
	char b[32];

	fputs("<section id=\"summary\"><h2>Summary</h2><table>", f);
	fputs("<tr><th>peak</th>", f);
	size_td(f, ev->peak);
	fprintf(f, "<td>at step %d of %d: %s ", ev->peak_step, ev->nsteps,
	        ev->nsteps ? step_kind_name(ev->kind[ev->peak_step]) : "");
	if (ev->nsteps)
		esc_xml(f, an->d.node[an->plan.sched.step[ev->peak_step]].name);
	fprintf(f, " (line %d)</td></tr>", ev->nsteps ? viz_step_line(an, ev->peak_step) : 0);
	fputs("<tr><th>-O0 peak</th>", f);
	size_td(f, an->base.peak);
	fputs("<td>every activation saved</td></tr><tr><th>lower bound</th>", f);
	size_td(f, an->plan.lower_bound);
	fputs("<td>no schedule can do better</td></tr><tr><th>arena</th>", f);
	size_td(f, an->arena_bytes);
	fprintf(f, "<td>memory plan: %+.2f%% over the peak (aligned lower bound %s)</td></tr>",
	        report_over_peak(an->arena_bytes, ev->peak), report_size(ev->arena_floor, b));
	if (an->goal.budget >= 0) {
		fputs("<tr><th>budget</th>", f);
		size_td(f, an->goal.budget);
		fprintf(f, "<td>%s</td></tr>", an->plan.fits ? "met" : "not met");
	}
	fprintf(f, "<tr><th>parameters</th><td class=\"n\">%" PRId64 "</td><td>elements</td></tr>",
	        rt.params);
	fprintf(f, "<tr><th>recompute</th><td class=\"n\">%.1f%%</td><td>of forward FLOPs "
	        "(%" PRId64 " of %" PRId64 ")</td></tr></table>\n",
	        fwd > 0 ? 100.0 * (double)ev->recompute_cost / fwd : 0.0, ev->recompute_cost,
	        an->d.forward_cost);
	fputs("<h3>breakdown at the peak</h3><table>", f);
	for (int c = 0; c < CAT_COUNT; c++) {
		fprintf(f, "<tr><td><span class=\"sw\" style=\"background:%s\"></span>%s</td>",
		        viz_cat_color((MemCat)c), memcat_name((MemCat)c));
		size_td(f, ev->breakdown[c]);
		fputs("</tr>", f);
	}
	fputs("</table></section>\n", f);
}

/* The hover data: one array per point. */
static void
points_js(const Analysis *an, const VizTimeline *tl, FILE *f)
{
	fputs("var P=[", f);
	for (int b = 0; b < tl->n; b++) {
		const VizPoint *p = &tl->p[b];
		fprintf(f, "%s\n[%d,%d,%d,\"%s\",", b ? "," : "", p->lo, p->hi, p->step,
		        step_kind_name(an->ev.kind[p->step]));
		json_put_script_str(f, an->d.node[an->plan.sched.step[p->step]].name);
		fprintf(f, ",%d,%" PRId64 ",%" PRId64 ",[", viz_step_line(an, p->step), p->total, p->base);
		for (int c = 0; c < CAT_COUNT; c++)
			fprintf(f, "%s%" PRId64, c ? "," : "", p->cat[c]);
		fputs("],[", f);
		for (int j = 0; j < tl->ntop && p->top[j] >= 0; j++) {
			const Instance *in = &an->ev.inst[p->top[j]];
			fputs(j ? ",[" : "[", f);
			json_put_script_str(f, an->d.t[in->tensor].name);
			fprintf(f, ",%" PRId64 ",%d,%d]", in->owned, viz_tensor_line(an, in->tensor),
			        (int)an->d.t[in->tensor].cat);
		}
		fputs("]]", f);
	}
	fputs("];\nvar CATS=[", f);
	for (int c = 0; c < CAT_COUNT; c++)
		fprintf(f, "%s\"%s\"", c ? "," : "", memcat_name((MemCat)c));
	fputs("];\n", f);
}

static const char script[] =
	"function sz(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;"
	"while(b>=1024&&i<4){b/=1024;i++;}return (i?b.toFixed(2):b)+' '+u[i];}\n"
	"function esc(s){return String(s).replace(/[&\\x3c\\x3e]/g,function(c){"
	"return '&#'+c.charCodeAt(0)+';';});}\n"
	"(function(){var svg=document.querySelector('#chart svg'),g=document.getElementById('plot'),"
	"tip=document.getElementById('tip'),cur=document.getElementById('cursor');"
	"if(!svg||!g)return;var x0=+g.getAttribute('data-x0'),x1=+g.getAttribute('data-x1'),"
	"n=+g.getAttribute('data-steps');"
	"svg.addEventListener('mousemove',function(e){var pt=svg.createSVGPoint();"
	"pt.x=e.clientX;pt.y=e.clientY;var q=pt.matrixTransform(svg.getScreenCTM().inverse());"
	"if(q.x<x0||q.x>x1){tip.hidden=true;cur.setAttribute('visibility','hidden');return;}"
	"var s=Math.floor((q.x-x0)/(x1-x0)*n),lo=0,hi=P.length-1;"
	"while(lo<hi){var m=(lo+hi)>>1;if(P[m][1]<=s)lo=m+1;else hi=m;}var p=P[lo];"
	"var h='<b>step '+p[2]+'</b>'+(p[1]-p[0]>1?' <span class=\"muted\">(largest of steps '+p[0]+"
	"'..'+(p[1]-1)+')</span>':'')+'<br/>'+p[3]+' <b>'+esc(p[4])+'</b>, line '+p[5]+"
	"'<br/>live: <b>'+sz(p[6])+'</b>'+(p[7]>=0?' (-O0: '+sz(p[7])+')':'')+'<table>';"
	"for(var c=CATS.length-1;c>=0;c--)if(p[8][c])h+='<tr><td>'+CATS[c]+'</td><td class=\"n\">'+"
	"sz(p[8][c])+'</td></tr>';h+='</table>largest live tensors:<table>';"
	"for(var j=0;j<p[9].length;j++){var t=p[9][j];h+='<tr><td>'+esc(t[0])+'</td><td class=\"n\">'+"
	"sz(t[1])+'</td><td class=\"muted\">line '+t[2]+', '+CATS[t[3]]+'</td></tr>';}"
	"tip.innerHTML=h+'</table>';tip.hidden=false;var r=svg.getBoundingClientRect();"
	"var left=e.clientX-r.left+14;if(left>r.width-260)left=e.clientX-r.left-270;"
	"tip.style.left=left+'px';tip.style.top=(e.clientY-r.top+10)+'px';"
	"var cx=x0+(p[2]+0.5)/n*(x1-x0);cur.setAttribute('x1',cx);cur.setAttribute('x2',cx);"
	"cur.setAttribute('visibility','visible');});"
	"svg.addEventListener('mouseleave',function(){tip.hidden=true;"
	"cur.setAttribute('visibility','hidden');});"
	"document.body.setAttribute('data-ready','1');})();\n";

static void
timeline(const Analysis *an, FILE *f, Arena *a)
{
	VizStyle st = {an->goal.budget, true};
	VizTimeline tl;

	viz_timeline(an, MAXPTS, HOVER_TOP, &tl, a);
	fputs("<section id=\"timeline\"><h2>Memory over the schedule</h2>"
	      "<p class=\"muted\">Hover for a step's op, source line and largest live tensors. "
	      "Long schedules are shown in buckets of steps, each drawn at its largest step.</p>"
	      "<div id=\"chart\">", f);
	viz_svg_timeline(an, &tl, &st, f);
	fputs("<div id=\"tip\" hidden=\"hidden\"></div></div></section>\n", f);
	fputs("<script>//<![CDATA[\n", f);
	points_js(an, &tl, f);
	fputs(script, f);
	fputs("//]]></script>\n", f);
}

static void
peak_tensors(const Analysis *an, FILE *f)
{
	const MemEval *ev = &an->ev;
	int *live = xmalloc(sizeof *live * (size_t)(ev->ninst + 1));
	int n = ev->nsteps ? viz_live_at(ev, ev->peak_step, live, 0) : 0;
	char shape[256];

	fprintf(f, "<section id=\"peak-tensors\"><h2>Tensors live at the peak (%d, largest "
	        "first)</h2><table><tr><th>tensor</th><th>op</th><th>type</th><th class=\"n\">"
	        "size</th><th>category</th><th>line</th><th></th></tr>\n", n);
	for (int i = 0; i < n && i < PEAK_ROWS; i++) {
		const Instance *in = &ev->inst[live[i]];
		const DagTensor *dt = &an->d.t[in->tensor];
		const Tensor *t = dt->ir_tensor >= 0 ? &an->g.t[dt->ir_tensor] : NULL;
		fputs("<tr><td>", f);
		esc_xml(f, dt->name);
		fputs("</td><td>", f);
		esc_xml(f, t ? ir_tensor_op(&an->g, dt->ir_tensor) : "");
		fputs("</td><td>", f);
		if (t) {
			fputs(dtype_name(t->dtype), f);
			esc_xml(f, ir_shape_str(t, shape, sizeof shape));
		}
		fputs("</td>", f);
		size_td(f, in->owned);
		fprintf(f, "<td><span class=\"sw\" style=\"background:%s\"></span>%s</td><td>%d</td>"
		        "<td>%s</td></tr>\n", viz_cat_color(dt->cat), memcat_name(dt->cat),
		        viz_tensor_line(an, in->tensor),
		        in->start >= 0 && ev->kind[in->start] == STEP_RECOMPUTE ? "recomputed" : "");
	}
	if (n > PEAK_ROWS)
		fprintf(f, "<tr><td colspan=\"7\" class=\"muted\">... and %d more</td></tr>\n",
		        n - PEAK_ROWS);
	fputs("</table></section>\n", f);
	free(live);
}

/* The Dag tensors of each layer in order: head[layer] is the first,
 * next[t] the one after t, -1 at the end. */
static void
layer_lists(const Analysis *an, const ReportLayers *ly, int *head, int *next)
{
	for (int i = 0; i < ly->n; i++)
		head[i] = -1;
	for (int t = an->d.nt - 1; t >= 0; t--) {
		int ir = an->d.t[t].ir_tensor;
		if (ir < 0 || ly->of[ir] < 0)
			continue;
		next[t] = head[ly->of[ir]];
		head[ly->of[ir]] = t;
	}
}

static void
count_td(FILE *f, int n, int64_t bytes)
{
	char b[32];

	fprintf(f, "<td class=\"n\">%d%s%s%s</td>", n, n ? " (" : "", n ? report_size(bytes, b) : "",
	        n ? ")" : "");
}

static void
block_table(const ReportLayers *ly, FILE *f, Arena *a)
{
	fputs("<section id=\"layers\"><h2>Activations per layer</h2><table><tr><th>layer</th>"
	      "<th class=\"n\">saved for backward</th><th class=\"n\">live at the peak</th>"
	      "<th class=\"n\">kept</th><th class=\"n\">recomputed</th></tr>\n", f);
	for (int i = 0; i < ly->n; i++) {
		const ReportLayer *y = &ly->l[i];
		fputs("<tr><td>", f);
		esc_xml(f, report_layer_name(y, a));
		fputs("</td>", f);
		size_td(f, y->saved);
		size_td(f, y->at_peak);
		count_td(f, y->nkept, y->kept);
		count_td(f, y->nrec, y->recomputed);
		fputs("</tr>\n", f);
	}
	fputs("</table></section>\n", f);
}

/* The names in one block's list with status want, up to LIST_MAX. */
static void
names(const Analysis *an, int t, const int *next, const unsigned char *st, int want, FILE *f)
{
	int n = 0;

	for (; t >= 0; t = next[t]) {
		if (!(st[t] & want) || n++ >= LIST_MAX)
			continue;
		fputs(n > 1 ? ", " : "", f);
		esc_xml(f, an->d.t[t].name);
	}
	if (n > LIST_MAX)
		fprintf(f, " ... (%d in all)", n);
}

static void
plan_table(const Analysis *an, const ReportLayers *ly, const int *head, const int *next,
           FILE *f, Arena *a)
{
	fputs("<section id=\"plan\"><h2>Plan</h2>", f);
	if (an->goal.level == 0 && an->goal.budget < 0) {
		fputs("<p>-O0: no plan; every activation is kept from the forward pass for backward "
		      "(try -O2 or --budget).</p></section>\n", f);
		return;
	}
	fputs("<table><tr><th>layer</th><th>kept from the forward pass</th><th>recomputed"
	      "</th></tr>\n", f);
	for (int i = 0; i < ly->n; i++) {
		fputs("<tr><td>", f);
		esc_xml(f, report_layer_name(&ly->l[i], a));
		fputs("</td><td class=\"names\">", f);
		names(an, head[i], next, ly->status, VIZ_KEPT, f);
		fputs("</td><td class=\"names\">", f);
		names(an, head[i], next, ly->status, VIZ_RECOMPUTED, f);
		fputs("</td></tr>\n", f);
	}
	fputs("</table></section>\n", f);
}

static void
block_section(const Analysis *an, FILE *f, Arena *a)
{
	ReportLayers ly;
	int *next = ar_alloc(a, sizeof *next * (size_t)(an->d.nt + 1));
	int *head;

	report_layers(an, &ly, a);
	head = ar_alloc(a, sizeof *head * (size_t)(ly.n + 1));
	layer_lists(an, &ly, head, next);
	block_table(&ly, f, a);
	plan_table(an, &ly, head, next, f, a);
}

/* A checkpointing baseline's row, when the analysis made it (a planned
 * level) and it applies to the graph. */
static void
baseline_row(const Analysis *an, const PlanResult *b, const char *what, FILE *f)
{
	double fwd = (double)an->d.forward_cost;

	if (!an->has_baselines || b->sched.n == 0)
		return;
	fprintf(f, "<tr><td>%s</td>", what);
	size_td(f, b->peak);
	fprintf(f, "<td class=\"n\">%.1f%%</td></tr>",
	        fwd > 0 ? 100.0 * (double)b->recompute_cost / fwd : 0.0);
}

static void
baselines(const Analysis *an, FILE *f)
{
	double fwd = (double)an->d.forward_cost;

	fputs("<section id=\"baselines\"><h2>Baselines</h2><table><tr><th>schedule</th>"
	      "<th class=\"n\">peak</th><th class=\"n\">recompute (of forward)</th></tr>"
	      "<tr><td>-O0: save every activation</td>", f);
	size_td(f, an->base.peak);
	fputs("<td class=\"n\">0.0%</td></tr>", f);
	baseline_row(an, &an->sqrtn, "sqrt(n) checkpointing (-O1)", f);
	baseline_row(an, &an->perblock, "per-def checkpointing (torch.utils.checkpoint per block)", f);
	fprintf(f, "<tr><td>this run: -O%d%s</td>", an->goal.level,
	        an->goal.budget >= 0 ? " with --budget" : "");
	size_td(f, an->ev.peak);
	fprintf(f, "<td class=\"n\">%.1f%%</td></tr><tr><td>lower bound</td>",
	        fwd > 0 ? 100.0 * (double)an->ev.recompute_cost / fwd : 0.0);
	size_td(f, an->plan.lower_bound);
	fputs("<td></td></tr></table></section>\n", f);
}

int
viz_write_html(FILE *f, const void *ctx)
{
	const Analysis *an = ctx;
	Arena a;
	char *title;

	ar_init(&a);
	title = viz_settings(an, &a);
	fputs("<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\"><head>"
	      "<meta charset=\"utf-8\"/><title>remat: ", f);
	esc_xml(f, title);
	fprintf(f, "</title><style>%s</style></head><body>\n<h1>remat: ", css);
	esc_xml(f, title);
	fputs("</h1>\n", f);
	summary(an, f);
	timeline(an, f, &a);
	peak_tensors(an, f);
	block_section(an, f, &a);
	baselines(an, f);
	fputs("<p class=\"muted\">Made by remat " PACKAGE_VERSION ".</p></body></html>\n", f);
	ar_free(&a);
	return 0;
}
