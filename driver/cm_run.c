/* driver/cm_run.c -- `remat --import checkmate FILE.json`: imports a
 * published benchmark graph (frontend/checkmate/checkmate.c), plans it for the
 * goal and prints the human or JSON report with peak, recompute cost and
 * TDI. */
#include <inttypes.h>
#include <string.h>

#include "driver.h"

typedef struct CmReport {
	const char *path;
	CmInfo g;
	const Dag *d;
	const PlanGoal *goal;
	int64_t ref_peak;
	PlanResult plan;
	MemEval ev;
	double seconds;
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
	const Dag *d = r->d;
	char pct[64];

	fprintf(out, "graph: %s (%s)\n", r->g.name, r->path);
	fprintf(out, "nodes: %d, edges: %d\n", d->nnode, r->g.nedges);
	fprintf(out, "reference peak: %" PRId64 " bytes\n", r->ref_peak);
	if (r->goal->budget >= 0)
		fprintf(out, "budget: %" PRId64 " bytes (%s)\n", r->goal->budget,
		        of_ref(r->goal->budget, r->ref_peak, pct, sizeof pct));
	else if (r->goal->max_recompute < 0)
		fprintf(out, "budget: none (minimize the peak, any recompute)\n");
	else
		fprintf(out, "budget: none (minimize the peak, recompute <= %g x forward cost)\n",
		        r->goal->max_recompute);
	fprintf(out, "planned peak: %" PRId64 " bytes (%s)\n", r->ev.peak,
	        of_ref(r->ev.peak, r->ref_peak, pct, sizeof pct));
	fprintf(out, "recompute cost: %" PRId64 "\n", r->ev.recompute_cost);
	fprintf(out, "base cost: %" PRId64 "\n", d->total_cost);
	fprintf(out, "TDI: %.2f%%\n", tdi_percent(d, r->ev.recompute_cost));
	fprintf(out, "steps: %d\n", r->ev.nsteps);
	fprintf(out, "solve time: %.3f s\n", r->seconds);
}

static void
print_json(const CmReport *r, FILE *out)
{
	const Dag *d = r->d;

	fputs("{\n  \"file\": ", out);
	json_put_str(out, r->path);
	fputs(", \"graph\": ", out);
	json_put_str(out, r->g.name);
	fprintf(out, ",\n  \"nodes\": %d, \"edges\": %d, \"opt_level\": %d,\n",
	        d->nnode, r->g.nedges, r->goal->level);
	fprintf(out, "  \"reference_peak_bytes\": %" PRId64 ", \"budget_bytes\": ", r->ref_peak);
	if (r->goal->budget >= 0)
		fprintf(out, "%" PRId64, r->goal->budget);
	else
		fputs("null", out);
	fprintf(out, ",\n  \"peak_bytes\": %" PRId64 ", \"peak_step\": %d, \"fits\": %s,\n",
	        r->ev.peak, r->ev.peak_step, r->plan.fits ? "true" : "false");
	fprintf(out, "  \"recompute_cost\": %" PRId64 ", \"base_cost\": %" PRId64
	        ", \"tdi_percent\": %.4f, \"solve_seconds\": %.6f,\n",
	        r->ev.recompute_cost, d->total_cost, tdi_percent(d, r->ev.recompute_cost),
	        r->seconds);
	fputs("  \"schedule\": [", out);
	for (int i = 0; i < r->ev.nsteps; i++) {
		fputs(i ? ",\n    " : "\n    ", out);
		fprintf(out, "{\"kind\": \"%s\", \"node\": ", step_kind_name(r->ev.kind[i]));
		json_put_str(out, d->node[r->plan.sched.step[i]].name);
		fprintf(out, ", \"live_bytes\": %" PRId64 "}", r->ev.live_bytes[i]);
	}
	fputs("\n  ]\n}\n", out);
}

/* Imports, evaluates the reference order, plans; fills r. */
static int
cm_solve(CmReport *r, Dag *d, bool verify, Arena *a)
{
	Schedule base = dag_base_schedule(d, a);
	bool check = pass_checks_default();
	char why[256];
	MemEval ref;
	double t0;
	int rc;

	if (check && !dag_check(d, a, why, sizeof why)) {
		fprintf(stderr, "remat: internal error: after import: %s\n", why);
		return 4;
	}
	if ((rc = vf_evaluate(d, &base, &ref, verify, a)))
		return rc;
	r->ref_peak = ref.peak;
	t0 = util_now();
	r->plan = rm_plan(d, r->goal, a);       /* --exact goes to rm_plan_exact */
	r->seconds = util_now() - t0;
	if (r->plan.sched.n == 0 && d->nnode > 0) {
		fprintf(stderr, "remat: %s: no schedule: %s\n", r->path,
		        r->plan.error ? r->plan.error : "the planner made none");
		return r->plan.error ? 1 : 4;
	}
	if (check && !dag_check_schedule(d, &r->plan.sched, a, why, sizeof why)) {
		fprintf(stderr, "remat: internal error: after plan: %s\n", why);
		return 4;
	}
	return vf_evaluate(d, &r->plan.sched, &r->ev, verify, a);
}

int
cm_run(const char *path, const PlanGoal *goal, bool json, bool verify, FILE *out)
{
	CmReport r;
	char err[512];
	Arena a;
	Dag d;
	int rc;

	memset(&r, 0, sizeof r);
	r.path = path;
	r.goal = goal;
	r.d = &d;
	ar_init(&a);
	if (cm_import_info(path, &d, &a, err, sizeof err, &r.g)) {
		fprintf(stderr, "remat: %s\n", err);
		ar_free(&a);
		return 1;
	}
	rc = cm_solve(&r, &d, verify, &a);
	if (rc == 0 && goal->budget >= 0 && (!r.plan.fits || r.ev.peak > goal->budget)) {
		fprintf(stderr, "error: no schedule fits in %" PRId64 " bytes; smallest peak"
		        " found: %" PRId64 " bytes (%.2f GiB)\n", goal->budget, r.ev.peak,
		        (double)r.ev.peak / (1024.0 * 1024.0 * 1024.0));
		rc = 3;
	}
	if (rc == 0) {
		if (json)
			print_json(&r, out);
		else
			print_human(&r, out);
		rc = fflush(out) ? 4 : 0;
	}
	ar_free(&a);
	return rc;
}
