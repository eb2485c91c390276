/* tests/bench/bench_checkmate.c -- make bench-checkmate: every published
 * graph of ../shared/data/checkmate at budgets ceil(0.9 x reference peak)
 * and ceil(0.8 x ...), planned by rm_plan -O2 and checked by vf_check;
 * prints the planned peak, TDI, solve time and the best known TDI
 * (published, or the optimum Moccasin's CP-SAT proves) beside it; time
 * both by the clock and in CPU seconds (what a quiet machine's clock would
 * show: the planner is single-threaded). Exits 1 when a plan fails the
 * check. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

static const struct {
	const char *file;
	const char *published;  /* best known TDI at 0.9 / 0.8 (published, or
	                           the optimum Moccasin's CP-SAT proves), or "" */
} graphs[] = {
	{"vgg16_b256_train.json", "1.968% / -"},
	{"vgg19_b256_train.json", "0.104% / 2.756%"},
	{"vgg_unet_b32_train.json", "1.129% / 1.984%"},
	{"fcn8_vgg_b32_train.json", "0.029% / 0.136%"},
	{"segnet_b32_train.json", "0.103% / 0.207%"},
	{"mobilenet_b512_train.json", "0.163% / 0.370%"},
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
	PlanGoal goal = {.level = 2, .max_recompute = 1.0, .budget = budget};
	char why[512];
	MemEval ev;
	Arena a;
	double t0, dt, c0, dc;
	int bad = 0;

	ar_init(&a);
	t0 = util_now();
	c0 = (double)clock() / CLOCKS_PER_SEC;
	PlanResult r = rm_plan(d, &goal, &a);
	dt = util_now() - t0;
	dc = (double)clock() / CLOCKS_PER_SEC - c0;
	lv_eval(d, &r.sched, &ev, &a);
	if (!ev.valid || !vf_check(d, &r.sched, &ev, why, sizeof why)) {
		fprintf(stderr, "%s: plan does not check: %s\n", file, ev.valid ? why : ev.error);
		bad = 1;
	}
	printf("%-28s %.1f %14" PRId64 " %14" PRId64 " %5s %8.3f%% %8.3f %8.3f  %s\n", file,
	       frac, budget, ev.peak, ev.peak <= budget ? "yes" : "NO",
	       100.0 * (double)ev.recompute_cost / (double)d->total_cost, dt, dc, pub);
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
	printf("%-28s %3s %14s %14s %5s %9s %8s %8s  %s\n", "graph", "b", "budget", "peak",
	       "fits", "TDI", "wall(s)", "cpu(s)", "best known TDI 0.9 / 0.8");
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
