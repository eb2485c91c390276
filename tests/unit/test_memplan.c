/* tests/unit/test_memplan.c -- mp_plan on random interval sets: aligned
 * offsets, no overlap between blocks live at a common step, and an arena
 * at least as large as the most bytes live at once; small sets (where the
 * greedy-by-size placement is tried) and a large one (linear scan only);
 * persistent buffers first; and on the real pipeline for every example
 * (tiny and real dims, -O0 to -O2): arena bytes >= peak. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "driver.h"

static void check_plan(const MemEval *ev, int64_t arena);

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
			assert_int_equal(ev_offset(ev, k), -1);
			continue;
		}
		off[m] = ev_offset(ev, k);
		sz[m] = ev->inst[k].owned;
		st[m] = ev->inst[k].start;
		en[m++] = end_of(ev, k);
	}
	for (int s = 0; s < ev->nsteps; s++) {
		if (ev_temp(ev, s) == 0) {
			assert_true(!ev->temp_offset || ev->temp_offset[s] == -1);
			continue;
		}
		assert_non_null(ev->temp_offset);
		off[m] = ev->temp_offset[s];
		sz[m] = ev_temp(ev, s);
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

/* A large random set (more blocks than greedy_by_size takes), checked by a
 * sweep: each block against the blocks live when it starts. */
static void
test_large(void **state)
{
	enum { N = 20000, STEPS = 4000 };
	Arena a;
	MemEval ev;
	uint64_t seed = 7;
	int64_t most = 0;
	(void)state;
	ar_init(&a);
	memset(&ev, 0, sizeof ev);
	ev.nsteps = STEPS;
	ev.ninst = N;
	ev.inst = ar_alloc(&a, sizeof *ev.inst * N);
	ev.temp_bytes = ar_alloc(&a, sizeof *ev.temp_bytes * STEPS);
	for (int k = 0; k < N; k++) {
		int st = (int)(rnd(&seed) % STEPS);
		int en = st + (int)(rnd(&seed) % 60);
		ev.inst[k] = (Instance){.tensor = k, .start = st, .end = en < STEPS ? en : STEPS - 1,
		                        .owned = 1 + (int64_t)(rnd(&seed) % 100000), .base = k};
	}
	int64_t arena = mp_plan(NULL, &ev, &a);
	int *act = calloc(N, sizeof *act), nact = 0;
	for (int s = 0; s < STEPS; s++) {
		int64_t live = 0;
		int m = 0;
		for (int j = 0; j < nact; j++)          /* drop what ended */
			if (ev.inst[act[j]].end >= s)
				act[m++] = act[j];
		nact = m;
		for (int k = 0; k < N; k++) {
			const Instance *x = &ev.inst[k];
			int64_t xo = ev_offset(&ev, k);
			if (x->start != s)
				continue;
			assert_int_equal(xo % 256, 0);
			assert_true(xo >= 0 && xo + x->owned <= arena);
			for (int j = 0; j < nact; j++) {
				const Instance *y = &ev.inst[act[j]];
				int64_t yo = ev_offset(&ev, act[j]);
				assert_true(xo + x->owned <= yo || yo + y->owned <= xo);
			}
			act[nact++] = k;
		}
		for (int j = 0; j < nact; j++)
			live += ev.inst[act[j]].owned;
		most = live > most ? live : most;
	}
	assert_true(arena >= most);
	free(act);
	ar_free(&a);
}

/* Persistent buffers come first, each 256-aligned, in Dag order; bytes of
 * persistent[] that the Dag does not list follow as one block. */
static void
test_persistent(void **state)
{
	Arena a;
	MemEval ev;
	Dag d;
	int64_t buf[3] = {100, 512, 4};
	MemCat cat[3] = {CAT_PARAMS, CAT_MASTER, CAT_OPTIMIZER};
	int ir[3] = {0, 0, 0};
	(void)state;
	ar_init(&a);
	memset(&d, 0, sizeof d);
	d.npersistent = 3;
	d.persistent_buf = buf;
	d.persistent_cat = cat;
	d.persistent_ir = ir;
	d.persistent[CAT_PARAMS] = 100 + 300;   /* 300 unlisted */
	d.persistent[CAT_MASTER] = 512;
	d.persistent[CAT_OPTIMIZER] = 4;
	memset(&ev, 0, sizeof ev);
	ev.nsteps = 2;
	ev.ninst = 1;
	ev.inst = ar_alloc(&a, sizeof *ev.inst);
	ev.temp_bytes = ar_alloc(&a, sizeof *ev.temp_bytes * 2);
	ev.inst[0] = (Instance){.start = 0, .end = 1, .owned = 10, .base = 0};
	int64_t arena = mp_plan(&d, &ev, &a);
	assert_int_equal(ev.persistent_offset[0], 0);
	assert_int_equal(ev.persistent_offset[1], 256);
	assert_int_equal(ev.persistent_offset[2], 768);
	assert_int_equal(ev_offset(&ev, 0), 768 + 256 + 512);
	assert_int_equal(arena, 768 + 256 + 512 + 256);
	ar_free(&a);
}

/* All the passes on one example: the arena holds the peak, persistent
 * buffers sit below every other block, and the plan is sound. */
static void
check_example(const char *name, const char *flags, int level)
{
	char path[1024], *text, *defs = strdup(flags), *save = NULL;
	const char *srcdir = getenv("SRCDIR");
	DimOverride dv[IR_MAXDIM];
	NetOptions o;
	Arena a;
	Analysis an;
	Diag dg;
	PlanGoal goal = {level, 1.0, -1, false};
	memset(&o, 0, sizeof o);
	o.defs = dv;
	for (char *tok = strtok_r(defs, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		char *eq = strchr(tok, '=');
		*eq = 0;
		dv[o.ndefs++] = (DimOverride){tok + 2, atoll(eq + 1)};
	}
	snprintf(path, sizeof path, "%s/examples/%s.net", srcdir ? srcdir : ".", name);
	FILE *f = fopen(path, "r");
	assert_non_null(f);
	text = calloc(1, 1 << 20);
	size_t len = fread(text, 1, (1 << 20) - 1, f);
	fclose(f);
	Source src = {path, text, len, false};
	ar_init(&a);
	diag_init(&dg, &src, stderr);
	dg.quiet_warnings = true;
	Program *p = net_parse(&src, &a, &dg);
	assert_non_null(p);
	assert_int_equal(analyze(&(Job){p, path, o, goal, false, {0, NULL, true, NULL}}, &an,
	                         &a, &dg), ST_OK);
	if (an.arena_bytes < an.ev.peak)
		fail_msg("%s %s -O%d: arena %lld < peak %lld", name, flags, level,
		         (long long)an.arena_bytes, (long long)an.ev.peak);
	int64_t pend = 0, sum = 0, total = 0;
	for (int i = 0; i < an.d.npersistent; i++) {
		assert_int_equal(an.ev.persistent_offset[i], pend);
		pend += (an.d.persistent_buf[i] + 255) / 256 * 256;
		sum += an.d.persistent_buf[i];
	}
	for (int c = 0; c < CAT_COUNT; c++)
		total += an.d.persistent[c];
	assert_int_equal(sum, total);
	for (int k = 0; k < an.ev.ninst; k++)
		assert_true(an.ev.inst[k].owned == 0 || ev_offset(&an.ev, k) >= pend);
	if (an.ev.ninst < 3000)
		check_plan(&an.ev, an.arena_bytes);
	ar_free(&a);
	free(text);
	free(defs);
}

static void
test_examples(void **state)
{
	static const char *const ex[][2] = {
		{"tiny", ""},
		{"mlp", "-DB=4 -DHW=4 -DHID=16 -DK=3"},
		{"resnet50", "-DB=2 -DHW=32 -DW=4 -DK=10"},
		{"gpt2", "-DB=2 -DS=16 -DD=32 -DH=2 -DL=2 -DV=64"},
		{"unet", "-DB=2 -DHW=32 -DW=4"},
		{"llama", "-DB=1 -DS=16 -DD=32 -DH=2 -DL=2 -DF=64 -DV=64"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof ex / sizeof ex[0]; i++)
		for (int level = 0; level <= 2; level++) {
			check_example(ex[i][0], ex[i][1], level);
			check_example(ex[i][0], "", level);     /* real dims */
		}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_intervals),
		cmocka_unit_test(test_reuse),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_persistent),
		cmocka_unit_test(test_examples),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
