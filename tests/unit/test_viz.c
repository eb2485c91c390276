/* tests/unit/test_viz.c -- the timeline behind the pictures and exports
 * (report/timeline.c) on random training graphs with random
 * recomputations, against brute force: the cursor's categories sum to
 * live_bytes and match the breakdown at the peak; downsampled points tile
 * the steps, keep each bucket's largest step (so the peak survives) and
 * list the largest live instances; the -O0 curve keeps the -O0 peak. And
 * the --sweep value lists (sweep.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "driver.h"
#include "randdag.h"

/* An Analysis with only what the timeline reads: Dag, schedule, MemEvals. */
static void
random_analysis(Analysis *an, uint64_t *seed, Arena *a)
{
	RdOptions o = {3, 14, true, true, true, true, true};
	Schedule base;

	memset(an, 0, sizeof *an);
	rd_make(&an->d, seed, &o, a);
	base = dag_base_schedule(&an->d, a);
	an->plan.sched = rd_schedule(&an->d, seed, (int)rd_range(seed, 0, 12), a);
	an->goal.level = 2;
	lv_eval(&an->d, &base, &an->base, a);
	lv_eval(&an->d, &an->plan.sched, &an->ev, a);
	if (!an->ev.valid)
		fail_msg("%s", an->ev.error);
	assert_true(an->base.valid);
}

static void
cursor_matches_live_bytes(void **state)
{
	uint64_t seed = 11;

	(void)state;
	for (int it = 0; it < 300; it++) {
		Arena a;
		Analysis an;
		VizCursor c;
		int64_t cat[CAT_COUNT];
		int s, n = 0;

		ar_init(&a);
		random_analysis(&an, &seed, &a);
		viz_cursor_init(&c, &an.d, &an.ev, &a);
		while ((s = viz_cursor_step(&c, cat)) >= 0) {
			int64_t sum = 0, want[CAT_COUNT] = {0};
			assert_int_equal(s, n++);
			for (int k = 0; k < CAT_COUNT; k++) {
				assert_true(cat[k] >= 0);
				sum += cat[k];
			}
			assert_int_equal(sum, an.ev.live_bytes[s]);
			/* brute force: every instance live at s */
			for (int k = 0; k < CAT_COUNT; k++)
				want[k] = an.d.persistent[k];
			for (int k = 0; k < an.ev.ninst; k++) {
				const Instance *in = &an.ev.inst[k];
				if (in->owned && in->start <= s && s <= in->end)
					want[an.d.t[in->tensor].cat] += in->owned;
			}
			want[CAT_TEMPORARIES] += ev_temp(&an.ev, s);
			assert_memory_equal(cat, want, sizeof want);
			if (s == an.ev.peak_step)
				assert_memory_equal(cat, an.ev.breakdown, sizeof want);
		}
		assert_int_equal(n, an.ev.nsteps);
		ar_free(&a);
	}
}

static int64_t
nth_largest_live(const MemEval *ev, int s, int j)
{
	int *live = malloc(sizeof *live * (size_t)(ev->ninst + 1));
	int n = viz_live_at(ev, s, live, 0);
	int64_t r = j < n ? ev->inst[live[j]].owned : -1;

	free(live);
	return r;
}

static void
points_keep_the_peak(void **state)
{
	uint64_t seed = 5;

	(void)state;
	for (int it = 0; it < 300; it++) {
		Arena a;
		Analysis an;
		VizTimeline tl;
		int maxpts = (int)rd_range(&seed, 1, 12), ntop = (int)rd_range(&seed, 1, 4);
		int64_t base_max = -1;

		ar_init(&a);
		random_analysis(&an, &seed, &a);
		viz_timeline(&an, maxpts, ntop, &tl, &a);
		assert_true(tl.n <= maxpts && tl.n == (an.ev.nsteps < maxpts ? an.ev.nsteps : maxpts));
		assert_true(tl.has_base);
		for (int b = 0; b < tl.n; b++) {
			const VizPoint *p = &tl.p[b];
			int64_t best = -1;
			assert_int_equal(p->lo, b ? tl.p[b - 1].hi : 0);
			assert_true(p->lo < p->hi);
			for (int s = p->lo; s < p->hi; s++)
				if (an.ev.live_bytes[s] > best)
					best = an.ev.live_bytes[s];
			assert_int_equal(p->total, best);
			assert_int_equal(an.ev.live_bytes[p->step], best);
			if (p->lo <= an.ev.peak_step && an.ev.peak_step < p->hi)
				assert_int_equal(p->total, an.ev.peak);
			for (int j = 0; j < ntop; j++) {
				int64_t want = nth_largest_live(&an.ev, p->step, j);
				if (want < 0) {
					assert_int_equal(p->top[j], -1);
					continue;
				}
				const Instance *in = &an.ev.inst[p->top[j]];
				assert_int_equal(in->owned, want);
				assert_true(in->start <= p->step && p->step <= in->end);
			}
			if (p->base > base_max)
				base_max = p->base;
		}
		assert_int_equal(tl.p[tl.n - 1].hi, an.ev.nsteps);
		assert_int_equal(base_max, an.base.peak);
		ar_free(&a);
	}
}

static void
sweep_values(void **state)
{
	int64_t v[300];
	char err[160];

	(void)state;
	assert_int_equal(sweep_parse("8,16,32", v, 300, err, sizeof err), 3);
	assert_int_equal(v[2], 32);
	assert_int_equal(sweep_parse("8..128*2", v, 300, err, sizeof err), 5);
	assert_int_equal(v[4], 128);
	assert_int_equal(sweep_parse("8..130*2", v, 300, err, sizeof err), 5);
	assert_int_equal(sweep_parse("128..1024+128", v, 300, err, sizeof err), 8);
	assert_int_equal(v[7], 1024);
	assert_int_equal(sweep_parse("128:1024:128", v, 300, err, sizeof err), 8);
	assert_int_equal(sweep_parse("3:5", v, 300, err, sizeof err), 3);
	assert_int_equal(v[0] + v[1] + v[2], 12);
	assert_int_equal(sweep_parse("1,2,4..16*2,100", v, 300, err, sizeof err), 6);
	assert_int_equal(v[5], 100);
	assert_int_equal(sweep_parse("7", v, 300, err, sizeof err), 1);
	assert_int_equal(sweep_parse("1..256+1", v, 300, err, sizeof err), 256);
	assert_int_equal(sweep_parse("1..257+1", v, 256, err, sizeof err), -1);
	assert_non_null(strstr(err, "more than 256"));
	static const char *const bad[] = {
		"", "0", "-8", "8..4*2", "8..64", "8..64*1", "8..64+0", "8,,16", "8,", "x",
		"8.64*2", "8:4", "8:16:0", "8 16", "99999999999999999999",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		err[0] = 0;
		assert_int_equal(sweep_parse(bad[i], v, 300, err, sizeof err), -1);
		assert_true(err[0] != 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(cursor_matches_live_bytes),
		cmocka_unit_test(points_keep_the_peak),
		cmocka_unit_test(sweep_values),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
