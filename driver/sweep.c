/* driver/sweep.c -- --sweep NAME=VALUES: analyzes the program once
 * per value of a dim (or the batch) and prints a table of the -O0 peak,
 * the planned peak, the recompute and whether it fits the --budget, or
 * else the card of --gpu / the --max-batch size as --max-batch judges it
 * (fit_target and gpu_fits: the simulated reserved memory, which the table
 * shows too); with --plot, a chart of the peaks against the value.
 *
 * VALUES is a comma-separated list of items, each a number or a range:
 *   A..B*K   A, A*K, A*K^2, ... up to B (K >= 2)
 *   A..B+K   A, A+K, A+2K, ... up to B  (K >= 1)
 *   A:B:K    the same as A..B+K; A:B has stride 1
 * so "B=8..128*2", "S=128:1024:128" and "B=1,2,4..64*2" all work; at most
 * SWEEP_MAX values. Reads the Job; writes the table and the SVG. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { SWEEP_MAX = 256 };

typedef struct Row {
	int64_t value, base, peak, recompute, forward;
	int64_t reserved;       /* simulated, when the column is a card's */
	bool fits;              /* the plan met the --budget (or fits the card) */
} Row;

typedef struct Sweep {
	const Job *job;
	const char *name;       /* the swept dim or batch */
	int64_t fit;            /* --budget, or the card's usable bytes, or -1 */
	bool fit_is_budget;
	const FitTarget *card;  /* without --budget: what --max-batch judges by */
	char fit_name[48];      /* the column's head: "fits RTX4090", "fits 4.00 GiB" */
	Row r[SWEEP_MAX];
	int n;
} Sweep;

static bool
read_int(const char **p, int64_t *v)
{
	char *end;

	errno = 0;
	if (**p < '0' || **p > '9')
		return false;
	*v = strtoll(*p, &end, 10);
	*p = end;
	return !errno && *v > 0;
}

/* One item of the list: a number or a range; returns the new count. */
static int
parse_item(const char **p, int64_t *out, int n, int max, char *err, size_t en)
{
	int64_t a, b, k = 1;
	bool mul = false;

	if (!read_int(p, &a))
		return snprintf(err, en, "expected a positive integer at '%s'", *p), -1;
	if (**p != '.' && **p != ':') {
		if (n == max)
			return snprintf(err, en, "more than %d values", max), -1;
		out[n] = a;
		return n + 1;
	}
	bool colon = **p == ':';
	*p += colon ? 1 : (*p)[1] == '.' ? 2 : 0;
	if (!colon && (*p)[-1] != '.')
		return snprintf(err, en, "expected '..' in a range"), -1;
	if (!read_int(p, &b) || b < a)
		return snprintf(err, en, "a range needs an end >= its start"), -1;
	if (colon ? **p == ':' : (**p == '*' || **p == '+')) {
		mul = **p == '*';
		(*p)++;
		if (!read_int(p, &k) || (mul && k < 2))
			return snprintf(err, en, mul ? "a '*' step must be an integer >= 2" :
			                "a step must be a positive integer"), -1;
	} else if (!colon) {
		return snprintf(err, en, "a range A..B needs a step: A..B*K or A..B+K"), -1;
	}
	for (int64_t v = a; v <= b; v = mul ? v * k : v + k) {
		if (n == max)
			return snprintf(err, en, "more than %d values", max), -1;
		out[n++] = v;
		if (v > INT64_MAX / k - k)
			break;
	}
	return n;
}

int
sweep_parse(const char *values, int64_t *out, int max, char *err, size_t n)
{
	const char *p = values;
	int count = 0;

	for (;;) {
		if ((count = parse_item(&p, out, count, max, err, n)) < 0)
			return -1;
		if (!*p)
			return count;
		if (*p != ',') {
			snprintf(err, n, "unexpected '%s'", p);
			return -1;
		}
		p++;
	}
}

/* Analyzes at NAME=value; a plan that misses the budget is a row too. */
static Status
analyze_at(const Sweep *s, int64_t value, Row *r)
{
	Analysis an;
	Arena a;
	Status st = analyze_probe(s->job, s->name, value, NULL, &an, &a);

	if (st == ST_OK || st == ST_NO_FIT) {
		bool fits = st == ST_OK;
		*r = (Row){.value = value, .base = an.base.peak,
		           .peak = fits ? an.ev.peak : an.plan.peak,
		           .recompute = fits ? an.ev.recompute_cost : an.plan.recompute_cost,
		           .forward = an.d.forward_cost, .fits = fits};
		if (s->card) {
			GpuSim sim;
			an.gpu = &s->card->g;
			r->fits = gpu_fits(&an, &sim);
			r->reserved = sim.run.reserved;
		}
		st = ST_OK;
	}
	ar_free(&a);
	return st;
}

static void
table(const Sweep *s, FILE *out)
{
	const char *name = s->name;
	const Row *r = s->r;
	int n = s->n;
	char b1[32], b2[32];

	fprintf(out, "sweep %s: %s, -O%d\n", name, s->job->file, s->job->goal.level);
	fprintf(out, "%10s  %12s  %12s  %10s%s%s%s%s\n", name, "-O0 peak", "planned peak",
	        "recompute", s->card ? "  " : "", s->card ? "    reserved" : "",
	        s->fit >= 0 ? "  " : "", s->fit_name);
	for (int i = 0; i < n; i++) {
		fprintf(out, "%10" PRId64 "  %12s  %12s  %9.1f%%", r[i].value,
		        report_size(r[i].base, b1), report_size(r[i].peak, b2),
		        r[i].forward ? 100.0 * (double)r[i].recompute / (double)r[i].forward : 0.0);
		if (s->card)
			fprintf(out, "  %12s", r[i].reserved ? report_size(r[i].reserved, b1) : "-");
		if (s->fit >= 0)
			fputs(r[i].fits ? "  yes" : "  no", out);
		fputc('\n', out);
	}
	for (int i = 0; s->fit >= 0 && i < n; i++)
		if (!r[i].fits) {
			fprintf(out, "first value that does not fit in %s: %s=%" PRId64 "\n",
			        report_size(s->fit, b1), name, r[i].value);
			break;
		}
}

static void
polyline(FILE *f, const Sweep *c, const VizAxis *x, const VizAxis *y, bool base,
         const char *style)
{
	fprintf(f, "<polyline fill=\"none\" %s points=\"", style);
	for (int i = 0; i < c->n; i++)
		fprintf(f, "%s%.1f,%.1f", i ? " " : "", viz_map(x, i),
		        viz_map(y, (double)(base ? c->r[i].base : c->r[i].peak)));
	fputs("\"/>\n", f);
	for (int i = 0; i < c->n; i++) {
		char b[32];
		int64_t v = base ? c->r[i].base : c->r[i].peak;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>",
		        viz_map(x, i), viz_map(y, (double)v), base ? "#222" : "#e15759");
		esc_xml(f, c->name);
		fprintf(f, "=%" PRId64 ": %s %s</title></circle>\n", c->r[i].value,
		        base ? "-O0 peak" : "planned peak", report_size(v, b));
	}
}

/* The peaks against the swept value (values evenly spaced, labelled). */
static int
write_chart(FILE *f, const void *ctx)
{
	const Sweep *c = ctx;
	int64_t top = c->fit;
	char title[256], b[32];

	for (int i = 0; i < c->n; i++) {
		if (c->r[i].base > top)
			top = c->r[i].base;
		if (c->r[i].peak > top)
			top = c->r[i].peak;
	}
	VizAxis x = {-0.5, c->n - 0.5, 80, 700}, y = {0, (double)top * 1.08 + 1, 400, 60};
	snprintf(title, sizeof title, "peak memory against %s: %s, -O%d", c->name, c->job->file,
	         c->job->goal.level);
	viz_svg_begin(f, 900, 460, title, true);
	fputs("<text x=\"16\" y=\"26\" font-size=\"16\" font-weight=\"bold\">", f);
	esc_xml(f, title);
	fputs("</text>\n", f);
	viz_svg_yaxis(f, &y, 80, 700);
	fprintf(f, "<line x1=\"80\" y1=\"400\" x2=\"700\" y2=\"400\" stroke=\"#333\"/>\n");
	for (int i = 0; i < c->n; i++)
		if (c->n <= 24 || i % ((c->n + 23) / 24) == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"418\" text-anchor=\"middle\">%" PRId64 "</text>\n",
			        viz_map(&x, i), c->r[i].value);
	fprintf(f, "<text x=\"390\" y=\"442\" text-anchor=\"middle\">");
	esc_xml(f, c->name);
	fputs("</text>\n", f);
	polyline(f, c, &x, &y, true, "stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
	if (c->job->goal.level > 0 || c->job->goal.budget >= 0)
		polyline(f, c, &x, &y, false, "stroke=\"#e15759\" stroke-width=\"2\"");
	if (c->fit >= 0)
		fprintf(f, "<line x1=\"80\" y1=\"%.1f\" x2=\"700\" y2=\"%.1f\" stroke=\"#c00\" "
		        "stroke-dasharray=\"8 4\"/>\n<text x=\"696\" y=\"%.1f\" text-anchor=\"end\" "
		        "fill=\"#c00\">%s %s</text>\n", viz_map(&y, (double)c->fit),
		        viz_map(&y, (double)c->fit), viz_map(&y, (double)c->fit) - 4,
		        c->fit_is_budget ? "budget" : "size", report_size(c->fit, b));
	fputs("<line x1=\"720\" y1=\"80\" x2=\"740\" y2=\"80\" stroke=\"#222\" stroke-width=\"1.5\" "
	      "stroke-dasharray=\"5 3\"/><text x=\"746\" y=\"84\">-O0 peak</text>\n", f);
	if (c->job->goal.level > 0 || c->job->goal.budget >= 0)
		fprintf(f, "<line x1=\"720\" y1=\"100\" x2=\"740\" y2=\"100\" stroke=\"#e15759\" "
		        "stroke-width=\"2\"/><text x=\"746\" y=\"104\">-O%d peak</text>\n",
		        c->job->goal.level);
	fputs("</svg>\n", f);
	return 0;
}

Status
sweep_run(const Job *job, const char *spec, const GpuCheck *gpu, int64_t size,
          const char *plot, FILE *out)
{
	const char *eq = strchr(spec, '=');
	int64_t vals[SWEEP_MAX];
	Sweep s;
	FitTarget card;
	char err[160], *name;
	Status st = ST_OK;

	if (!eq || eq == spec)
		diag_usage("--sweep expects NAME=VALUES, got '%s'", spec);
	if ((s.n = sweep_parse(eq + 1, vals, SWEEP_MAX, err, sizeof err)) < 0)
		diag_usage("--sweep %s: %s", spec, err);
	name = xmalloc((size_t)(eq - spec) + 1);
	memcpy(name, spec, (size_t)(eq - spec));
	name[eq - spec] = 0;
	s.job = job;
	s.name = name;
	s.fit_is_budget = job->goal.budget >= 0;
	s.card = NULL;
	s.fit = job->goal.budget;
	if (!s.fit_is_budget && (gpu->preset || size > 0)) {
		fit_target(gpu, size, &card);
		s.card = &card;
		s.fit = gpu_usable(&card.g);
	}
	s.fit_name[0] = 0;
	if (s.fit >= 0)
		snprintf(s.fit_name, sizeof s.fit_name, "fits %s", gpu->preset && size <= 0 && s.card
		         ? card.card.name : report_size(s.fit, err));
	for (int i = 0; i < s.n && !st; i++) {
		progress_begin("--sweep: analyzing %s=%" PRId64 " (%d of %d)", name, vals[i], i + 1,
		               s.n);
		st = analyze_at(&s, vals[i], &s.r[i]);
	}
	progress_end();
	if (!st) {
		table(&s, out);
		if (plot)
			st = out_write(plot, write_chart, &s);
	}
	free(name);
	return st;
}
