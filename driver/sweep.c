/* driver/sweep.c -- --sweep NAME=VALUES: analyzes the program once
 * per value of a dim (or the batch) and prints a table of the -O0 peak,
 * the planned peak, the recompute and whether it fits the --budget or
 * --max-batch size; with --plot, a chart of the peaks against the value.
 *
 * VALUES is a comma-separated list of items, each a number or a range:
 *   A..B*K   A, A*K, A*K^2, ... up to B (K >= 2)
 *   A..B+K   A, A+K, A+2K, ... up to B  (K >= 1)
 *   A:B:K    the same as A..B+K; A:B steps by 1
 * so "B=8..128*2", "S=128:1024:128" and "B=1,2,4..64*2" all work; at most
 * SWEEP_MAX values. Reads the parsed Program; writes the table and the SVG. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { SWEEP_MAX = 256 };

typedef struct Row {
	int64_t value, base, peak, recompute, forward;
	bool fits;              /* the plan met the --budget (or fits the size) */
} Row;

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

/* Analyzes at NAME=value; 0 or the analysis' exit status (3 is a row). */
static int
analyze_at(const SweepArgs *s, const char *name, int64_t value, Row *r)
{
	Analysis an;
	Arena a;
	int rc = analyze_probe(s->prog, s->file, s->net, name, value, s->goal,
	                       pass_checks_default(), NULL, &an, &a);

	if (rc == 0 || rc == 3) {
		*r = (Row){value, an.base.peak, rc == 3 ? an.plan.peak : an.ev.peak,
		           rc == 3 ? an.plan.recompute_cost : an.ev.recompute_cost,
		           an.d.forward_cost, rc == 0};
		if (!s->fit_is_budget)
			r->fits = s->fit < 0 || r->peak <= s->fit;
		rc = 0;
	}
	ar_free(&a);
	return rc;
}

static void
table(const SweepArgs *s, const char *name, const Row *r, int n, FILE *out)
{
	char b1[32], b2[32], fit[48];

	snprintf(fit, sizeof fit, "fits %s", s->fit >= 0 ? report_size(s->fit, b1) : "");
	fprintf(out, "sweep %s: %s, -O%d\n", name, s->file, s->goal->level);
	fprintf(out, "%10s  %12s  %12s  %10s%s%s\n", name, "-O0 peak", "planned peak", "recompute",
	        s->fit >= 0 ? "  " : "", s->fit >= 0 ? fit : "");
	for (int i = 0; i < n; i++) {
		fprintf(out, "%10" PRId64 "  %12s  %12s  %9.1f%%", r[i].value,
		        report_size(r[i].base, b1), report_size(r[i].peak, b2),
		        r[i].forward ? 100.0 * (double)r[i].recompute / (double)r[i].forward : 0.0);
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

typedef struct Chart {
	const SweepArgs *s;
	const char *name;
	const Row *r;
	int n;
} Chart;

static void
polyline(FILE *f, const Chart *c, const VizAxis *x, const VizAxis *y, bool base,
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
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"><title>%s=%" PRId64
		        ": %s %s</title></circle>\n", viz_map(x, i), viz_map(y, (double)v),
		        base ? "#222" : "#e15759", c->name, c->r[i].value, base ? "-O0 peak" : "planned peak",
		        report_size(v, b));
	}
}

/* The peaks against the swept value (values evenly spaced, labelled). */
static int
write_chart(FILE *f, const void *ctx)
{
	const Chart *c = ctx;
	int64_t top = c->s->fit;
	char title[256], b[32];

	for (int i = 0; i < c->n; i++) {
		if (c->r[i].base > top)
			top = c->r[i].base;
		if (c->r[i].peak > top)
			top = c->r[i].peak;
	}
	VizAxis x = {-0.5, c->n - 0.5, 80, 700}, y = {0, (double)top * 1.08 + 1, 400, 60};
	snprintf(title, sizeof title, "peak memory against %s: %s, -O%d", c->name, c->s->file,
	         c->s->goal->level);
	viz_svg_begin(f, 900, 460, title, true);
	fputs("<text x=\"16\" y=\"26\" font-size=\"16\" font-weight=\"bold\">", f);
	viz_xml(f, title);
	fputs("</text>\n", f);
	viz_svg_yaxis(f, &y, 80, 700);
	fprintf(f, "<line x1=\"80\" y1=\"400\" x2=\"700\" y2=\"400\" stroke=\"#333\"/>\n");
	for (int i = 0; i < c->n; i++)
		if (c->n <= 24 || i % ((c->n + 23) / 24) == 0)
			fprintf(f, "<text x=\"%.1f\" y=\"418\" text-anchor=\"middle\">%" PRId64 "</text>\n",
			        viz_map(&x, i), c->r[i].value);
	fprintf(f, "<text x=\"390\" y=\"442\" text-anchor=\"middle\">");
	viz_xml(f, c->name);
	fputs("</text>\n", f);
	polyline(f, c, &x, &y, true, "stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"5 3\"");
	if (c->s->goal->level > 0 || c->s->goal->budget >= 0)
		polyline(f, c, &x, &y, false, "stroke=\"#e15759\" stroke-width=\"2\"");
	if (c->s->fit >= 0)
		fprintf(f, "<line x1=\"80\" y1=\"%.1f\" x2=\"700\" y2=\"%.1f\" stroke=\"#c00\" "
		        "stroke-dasharray=\"8 4\"/>\n<text x=\"696\" y=\"%.1f\" text-anchor=\"end\" "
		        "fill=\"#c00\">%s %s</text>\n", viz_map(&y, (double)c->s->fit),
		        viz_map(&y, (double)c->s->fit), viz_map(&y, (double)c->s->fit) - 4,
		        c->s->fit_is_budget ? "budget" : "size", report_size(c->s->fit, b));
	fputs("<line x1=\"720\" y1=\"80\" x2=\"740\" y2=\"80\" stroke=\"#222\" stroke-width=\"1.5\" "
	      "stroke-dasharray=\"5 3\"/><text x=\"746\" y=\"84\">-O0 peak</text>\n", f);
	if (c->s->goal->level > 0 || c->s->goal->budget >= 0)
		fprintf(f, "<line x1=\"720\" y1=\"100\" x2=\"740\" y2=\"100\" stroke=\"#e15759\" "
		        "stroke-width=\"2\"/><text x=\"746\" y=\"104\">-O%d peak</text>\n",
		        c->s->goal->level);
	fputs("</svg>\n", f);
	return 0;
}

int
sweep_run(const SweepArgs *s, FILE *out)
{
	const char *eq = strchr(s->spec, '=');
	int64_t vals[SWEEP_MAX];
	Row rows[SWEEP_MAX];
	char err[160], *name;
	int n, rc = 0;

	if (!eq || eq == s->spec)
		diag_usage("--sweep expects NAME=VALUES, got '%s'", s->spec);
	if ((n = sweep_parse(eq + 1, vals, SWEEP_MAX, err, sizeof err)) < 0)
		diag_usage("--sweep %s: %s", s->spec, err);
	name = xmalloc((size_t)(eq - s->spec) + 1);
	memcpy(name, s->spec, (size_t)(eq - s->spec));
	name[eq - s->spec] = 0;
	for (int i = 0; i < n && !rc; i++) {
		progress_begin("--sweep: analyzing %s=%" PRId64 " (%d of %d)", name, vals[i], i + 1, n);
		rc = analyze_at(s, name, vals[i], &rows[i]);
	}
	progress_end();
	if (!rc) {
		table(s, name, rows, n, out);
		if (s->plot)
			rc = out_write(s->plot, write_chart, &(Chart){s, name, rows, n});
	}
	free(name);
	return rc;
}
