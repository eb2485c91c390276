/* tests/bench/bench_checkmate.c -- make bench-checkmate: every published
 * graph of ../shared/data/checkmate at budgets ceil(0.9 x reference peak)
 * and ceil(0.8 x ...), planned by rm_plan -O2 and checked by vf_check;
 * prints the planned peak, TDI, solve time and the best published TDI
 * (README table) beside it. Exits 1 when a plan fails the check. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

static const struct {
	const char *file;
	const char *published;  /* best published TDI at 0.9 / 0.8, or "" */
} graphs[] = {
	{"vgg16_b256_train.json", ""},
	{"vgg19_b256_train.json", ""},
	{"vgg_unet_b32_train.json", ""},
	{"fcn8_vgg_b32_train.json", "0.0% / 0.1%"},
	{"segnet_b32_train.json", ""},
	{"mobilenet_b512_train.json", ""},
	{"resnet50_b256_train.json", "0.1% / 0.3%"},
	{"random_layered_n100.json", ""},
	{"random_layered_n250.json", "0.9% / 4.9%"},
	{"random_layered_n500.json", ""},
	{"random_layered_n1000.json", "0.7% / 3.4%"},
};

/* Plans one graph at one budget fraction; prints a row. 0, or 1 when the
 * plan does not check. */
static int
bench_one(const Dag *d, const char *file, int64_t ref, double frac, const char *pub)
{
	int64_t budget = (int64_t)ceil((double)ref * frac);
	PlanGoal goal = {2, 1.0, budget, false};
	char why[512];
	MemEval ev;
	Arena a;
	double t0, dt;
	int bad = 0;

	ar_init(&a);
	t0 = util_now();
	PlanResult r = rm_plan(d, &goal, &a);
	dt = util_now() - t0;
	lv_eval(d, &r.sched, &ev, &a);
	if (!ev.valid || !vf_check(d, &r.sched, &ev, why, sizeof why)) {
		fprintf(stderr, "%s: plan does not check: %s\n", file, ev.valid ? why : ev.error);
		bad = 1;
	}
	printf("%-28s %.1f %14" PRId64 " %14" PRId64 " %5s %8.3f%% %9.3f  %s\n", file, frac,
	       budget, ev.peak, ev.peak <= budget ? "yes" : "NO",
	       100.0 * (double)ev.recompute_cost / (double)d->total_cost, dt, pub);
	ar_free(&a);
	return bad;
}

int
main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "../shared/data/checkmate";
	char path[4096], err[512];
	int bad = 0;

	if (access(dir, R_OK)) {
		printf("bench-checkmate: %s not found; skipped\n", dir);
		return 0;
	}
	printf("%-28s %3s %14s %14s %5s %9s %9s  %s\n", "graph", "b", "budget", "peak",
	       "fits", "TDI", "time(s)", "best published TDI 0.9 / 0.8");
	for (size_t i = 0; i < sizeof graphs / sizeof graphs[0]; i++) {
		Arena a;
		Dag d;
		MemEval ref;
		ar_init(&a);
		snprintf(path, sizeof path, "%s/%s", dir, graphs[i].file);
		if (cm_import(path, &d, &a, err, sizeof err)) {
			fprintf(stderr, "%s\n", err);
			return 1;
		}
		Schedule base = dag_base_schedule(&d, &a);
		lv_eval(&d, &base, &ref, &a);
		bad |= bench_one(&d, graphs[i].file, ref.peak, 0.9, graphs[i].published);
		bad |= bench_one(&d, graphs[i].file, ref.peak, 0.8, "");
		ar_free(&a);
	}
	return bad;
}
