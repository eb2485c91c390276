/* driver/cm_run.c -- `remat --import checkmate FILE.json`: imports a
 * published benchmark graph (frontend/checkmate/checkmate.c) as the DAG of
 * an Analysis, runs analyze_dag on it (the reference order is the base
 * schedule) and prints the human or JSON report with peak, arena, recompute
 * cost and TDI. */
#include <inttypes.h>

#include "driver.h"

typedef struct CmReport {
	const char *path;
	CmInfo g;
	const Analysis *an;     /* the reference peak is an->base's */
} CmReport;

/* TDI: the extra cost of the schedule over computing every node once. */
static double
tdi_percent(const Dag *d, int64_t recompute)
{
	return d->total_cost ? 100.0 * (double)recompute / (double)d->total_cost : 0.0;
}

/* "12.5% of the reference"; a zero reference (every cost_ram 0) has no
 * percentage, never a nan. */
static const char *
of_ref(int64_t v, int64_t ref, char *buf, size_t n)
{
	if (ref > 0)
		snprintf(buf, n, "%.1f%% of the reference", 100.0 * (double)v / (double)ref);
	else
		snprintf(buf, n, "the reference is 0 bytes");
	return buf;
}

static void
print_human(const CmReport *r, FILE *out)
{
	const Analysis *an = r->an;
	const Dag *d = &an->d;
	const PlanGoal *goal = &an->goal;
	int64_t ref = an->base.peak;
	char pct[64];

	fprintf(out, "graph: %s (%s)\n", r->g.name, r->path);
	fprintf(out, "nodes: %d, edges: %d\n", d->nnode, r->g.nedges);
	fprintf(out, "reference peak: %" PRId64 " bytes\n", ref);
	if (goal->budget >= 0)
		fprintf(out, "budget: %" PRId64 " bytes (%s)\n", goal->budget,
		        of_ref(goal->budget, ref, pct, sizeof pct));
	else if (goal->max_recompute < 0)
		fprintf(out, "budget: none (minimize the peak, any recompute)\n");
	else
		fprintf(out, "budget: none (minimize the peak, recompute <= %g x forward cost)\n",
		        goal->max_recompute);
	fprintf(out, "planned peak: %" PRId64 " bytes (%s)\n", an->ev.peak,
	        of_ref(an->ev.peak, ref, pct, sizeof pct));
	fprintf(out, "arena: %" PRId64 " bytes (+%.2f%% over the peak), aligned lower bound: %" PRId64
	        " bytes\n", an->arena_bytes, report_over_peak(an->arena_bytes, an->ev.peak),
	        an->ev.arena_floor);
	fprintf(out, "recompute cost: %" PRId64 "\n", an->ev.recompute_cost);
	fprintf(out, "base cost: %" PRId64 "\n", d->total_cost);
	fprintf(out, "TDI: %.2f%%\n", tdi_percent(d, an->ev.recompute_cost));
	fprintf(out, "steps: %d\n", an->ev.nsteps);
	fprintf(out, "solve time: %.3f s\n", an->seconds);
}

static void
print_json(const CmReport *r, FILE *out)
{
	const Analysis *an = r->an;
	const Dag *d = &an->d;
	const MemEval *ev = &an->ev;

	fputs("{\n  \"file\": ", out);
	json_put_str(out, r->path);
	fputs(", \"graph\": ", out);
	json_put_str(out, r->g.name);
	fprintf(out, ",\n  \"nodes\": %d, \"edges\": %d, \"opt_level\": %d,\n",
	        d->nnode, r->g.nedges, an->goal.level);
	fprintf(out, "  \"reference_peak_bytes\": %" PRId64 ", \"budget_bytes\": ",
	        an->base.peak);
	if (an->goal.budget >= 0)
		fprintf(out, "%" PRId64, an->goal.budget);
	else
		fputs("null", out);
	fprintf(out, ",\n  \"peak_bytes\": %" PRId64 ", \"peak_step\": %d, \"fits\": %s,\n",
	        ev->peak, ev->peak_step, an->plan.fits ? "true" : "false");
	fprintf(out, "  \"arena_bytes\": %" PRId64 ", \"arena_lower_bound_bytes\": %" PRId64
	        ", \"arena_over_peak_percent\": %.4f,\n", an->arena_bytes, ev->arena_floor,
	        report_over_peak(an->arena_bytes, ev->peak));
	fprintf(out, "  \"recompute_cost\": %" PRId64 ", \"base_cost\": %" PRId64
	        ", \"tdi_percent\": %.4f, \"solve_seconds\": %.6f,\n",
	        ev->recompute_cost, d->total_cost, tdi_percent(d, ev->recompute_cost),
	        an->seconds);
	fputs("  \"schedule\": [", out);
	for (int i = 0; i < ev->nsteps; i++) {
		fputs(i ? ",\n    " : "\n    ", out);
		fprintf(out, "{\"kind\": \"%s\", \"node\": ", step_kind_name(ev->kind[i]));
		json_put_str(out, d->node[an->plan.sched.step[i]].name);
		fprintf(out, ", \"live_bytes\": %" PRId64 "}", ev->live_bytes[i]);
	}
	fputs("\n  ]\n}\n", out);
}

Status
cm_run(const Job *job, bool json, FILE *out)
{
	Analysis an = {0};
	CmReport r = {job->file, {NULL, 0}, &an};
	char err[512];
	double t0;
	Arena a;
	Status st;

	ar_init(&a);
	if (cm_import_info(job->file, &an.d, &a, err, sizeof err, &r.g)) {
		fprintf(stderr, "remat: %s\n", err);
		st = ST_ERROR;
	} else if (job->passes.check && !dag_check(&an.d, &a, err, sizeof err)) {
		fprintf(stderr, "remat: internal error: after import: %s\n", err);
		st = ST_INTERNAL;
	} else {
		t0 = util_now();
		st = analyze_dag(job, &an, &a);
		an.seconds = util_now() - t0;
	}
	if (st == ST_NO_FIT)
		no_fit_error(&an);
	if (st == ST_OK) {
		if (json)
			print_json(&r, out);
		else
			print_human(&r, out);
		st = fflush(out) ? ST_INTERNAL : ST_OK;
	}
	ar_free(&a);
	return st;
}
