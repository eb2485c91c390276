/* tests/unit/test_memplan.c -- mp_plan on random interval sets: aligned
 * offsets, no overlap between blocks live at a common step, and an arena
 * at least as large as the most bytes live at once. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "ir.h"
#include "dag.h"

static uint64_t
rnd(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A MemEval with n random instances (some views) over nsteps steps. */
static void
random_eval(MemEval *ev, Arena *a, uint64_t *seed, int n, int nsteps)
{
	memset(ev, 0, sizeof *ev);
	ev->nsteps = nsteps;
	ev->ninst = n;
	ev->inst = ar_alloc(a, sizeof *ev->inst * (size_t)n);
	ev->temp_bytes = ar_alloc(a, sizeof *ev->temp_bytes * (size_t)nsteps);
	for (int k = 0; k < n; k++) {
		Instance *in = &ev->inst[k];
		in->start = (int)(rnd(seed) % (uint64_t)(nsteps + 1)) - 1;
		in->end = in->start + (int)(rnd(seed) % (uint64_t)(nsteps - in->start));
		if (in->end < 0)
			in->end = 0;
		in->owned = 1 + (int64_t)(rnd(seed) % 5000);
		in->base = k;
		if (k > 0 && rnd(seed) % 5 == 0) {
			in->base = (int)(rnd(seed) % (uint64_t)k);
			while (ev->inst[in->base].base != in->base)
				in->base = ev->inst[in->base].base;
			in->owned = 0;
			in->start = ev->inst[in->base].start;
		}
	}
	for (int s = 0; s < nsteps; s++)
		ev->temp_bytes[s] = rnd(seed) % 3 == 0 ? (int64_t)(rnd(seed) % 3000) : 0;
}

/* Live interval of instance k, widened over its views. */
static int
end_of(const MemEval *ev, int k)
{
	int e = ev->inst[k].end;
	for (int v = 0; v < ev->ninst; v++)
		if (ev->inst[v].base == k && ev->inst[v].end > e)
			e = ev->inst[v].end;
	return e;
}

static void
check_plan(const MemEval *ev, int64_t arena)
{
	int n = ev->ninst + ev->nsteps, m = 0;
	int64_t *off = calloc((size_t)n, sizeof *off), *sz = calloc((size_t)n, sizeof *sz);
	int *st = calloc((size_t)n, sizeof *st), *en = calloc((size_t)n, sizeof *en);
	for (int k = 0; k < ev->ninst; k++) {
		if (ev->inst[k].owned == 0) {
			assert_int_equal(ev->inst[k].offset, -1);
			continue;
		}
		off[m] = ev->inst[k].offset;
		sz[m] = ev->inst[k].owned;
		st[m] = ev->inst[k].start;
		en[m++] = end_of(ev, k);
	}
	for (int s = 0; s < ev->nsteps; s++) {
		if (ev->temp_bytes[s] == 0) {
			assert_int_equal(ev->temp_offset[s], -1);
			continue;
		}
		off[m] = ev->temp_offset[s];
		sz[m] = ev->temp_bytes[s];
		st[m] = en[m] = s;
		m++;
	}
	for (int i = 0; i < m; i++) {
		assert_true(off[i] >= 0);
		assert_int_equal(off[i] % 256, 0);
		assert_true(off[i] + sz[i] <= arena);
		for (int j = 0; j < i; j++)
			if (st[i] <= en[j] && st[j] <= en[i])
				assert_true(off[i] + sz[i] <= off[j] || off[j] + sz[j] <= off[i]);
	}
	/* the arena holds at least the most bytes live at one step */
	for (int s = -1; s < ev->nsteps; s++) {
		int64_t live = 0;
		for (int i = 0; i < m; i++)
			if (st[i] <= s && s <= en[i])
				live += sz[i];
		assert_true(arena >= live);
	}
	free(off);
	free(sz);
	free(st);
	free(en);
}

static void
test_random_intervals(void **state)
{
	uint64_t seed = 42;
	(void)state;
	for (int round = 0; round < 200; round++) {
		Arena a;
		MemEval ev;
		ar_init(&a);
		random_eval(&ev, &a, &seed, 1 + (int)(rnd(&seed) % 60), 2 + (int)(rnd(&seed) % 30));
		int64_t arena = mp_plan(NULL, &ev, &a);
		check_plan(&ev, arena);
		ar_free(&a);
	}
}

/* Disjoint lifetimes share memory: a chain of same-sized buffers, each
 * live for two steps, needs two slots. */
static void
test_reuse(void **state)
{
	Arena a;
	MemEval ev;
	(void)state;
	ar_init(&a);
	memset(&ev, 0, sizeof ev);
	ev.nsteps = 10;
	ev.ninst = 10;
	ev.inst = ar_alloc(&a, sizeof *ev.inst * 10);
	ev.temp_bytes = ar_alloc(&a, sizeof *ev.temp_bytes * 10);
	for (int k = 0; k < 10; k++)
		ev.inst[k] = (Instance){.tensor = k, .start = k, .end = k + 1 < 10 ? k + 1 : k,
		                        .owned = 1000, .base = k};
	int64_t arena = mp_plan(NULL, &ev, &a);
	assert_int_equal(arena, 2 * 1024);
	check_plan(&ev, arena);
	ar_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_intervals),
		cmocka_unit_test(test_reuse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
