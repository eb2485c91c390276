/* tests/unit/test_memplan.c -- mp_plan on random interval sets, with
 * every placement method alone and with the whole search: aligned
 * offsets, no overlap between extents live at a common step, an arena at
 * least the aligned floor, itself at least the most bytes live at once;
 * small sets and a large one; hand-made sets where greedy by size beats
 * the linear scan and the skyline beats greedy by size; persistent
 * buffers first; the skyline under a bound on 1 to 65 steps; and on the
 * real pipeline for every example (tiny and real dims, -O0 to -O2):
 * peak <= floor <= arena <= 1.02 x floor. */
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

/* Each method alone on random sets: a sound plan at or above the floor;
 * and the search keeps the smallest of what it ran, never above the
 * linear scan, the same offsets every time. */
static void
test_random_methods(void **state)
{
	uint64_t seed = 4242;
	(void)state;
	for (int round = 0; round < 150; round++) {
		int n = 1 + (int)(rnd(&seed) % 80), steps = 2 + (int)(rnd(&seed) % 40);
		uint64_t s0 = seed;
		int64_t got[MP_METHOD_COUNT];
		for (int m = 0; m <= MP_ALL; m++) {
			Arena a;
			MemEval ev;
			MpStats st;
			ar_init(&a);
			seed = s0;      /* the same set for every method */
			random_eval(&ev, &a, &seed, n, steps);
			int64_t arena = mp_plan_with(NULL, &ev, &a, (MpMethod)m, &st);
			check_plan(&ev, arena);
			assert_int_equal(st.floor, ev.arena_floor);
			assert_true(arena >= ev.arena_floor);
			assert_int_equal(ev.arena_floor % 256, 0);
			if (m < MP_ALL) {
				/* nothing stops a single method: it ran to the end */
				assert_int_equal(st.arena[m], arena);
				assert_int_equal(st.chosen, (MpMethod)m);
				got[m] = arena;
				ar_free(&a);
				continue;
			}
			int64_t least = INT64_MAX;
			for (int k = 0; k < MP_METHOD_COUNT; k++)
				if (st.arena[k] >= 0 && st.arena[k] < least)
					least = st.arena[k];
			assert_int_equal(arena, least);
			assert_int_equal(st.arena[st.chosen], arena);
			assert_true(arena <= got[MP_LINEAR_SCAN]);
			/* the fixed orders run before any stop but the floor */
			for (int k = MP_SKYLINE_AREA; k <= MP_SKYLINE_LENGTH && arena > ev.arena_floor; k++)
				assert_int_equal(st.arena[k], got[k]);
			int64_t *off = malloc(sizeof *off * (size_t)n);
			memcpy(off, ev.offset, sizeof *off * (size_t)n);
			assert_int_equal(mp_plan_with(NULL, &ev, &a, MP_ALL, NULL), arena);
			assert_memory_equal(off, ev.offset, sizeof *off * (size_t)n);
			free(off);
			ar_free(&a);
		}
	}
}

/* n extents of `size` bytes at steps [start[i], end[i]], no temporaries. */
static void
extents_eval(MemEval *ev, Arena *a, int n, const int *start, const int *end,
            const int64_t *size)
{
	memset(ev, 0, sizeof *ev);
	ev->nsteps = 8;
	ev->ninst = n;
	ev->inst = ar_alloc(a, sizeof *ev->inst * (size_t)n);
	for (int k = 0; k < n; k++)
		ev->inst[k] = (Instance){.tensor = k, .start = start[k], .end = end[k],
		                         .owned = size[k], .base = k};
}

/* Greedy by size beats the linear scan: A [0,0] and B [0,2] of 256 bytes
 * start together; C [1,2] of 512 arrives when A's 256 bytes are free but
 * too small, and goes on top (1024). Placing C first, at 0, puts A below
 * nothing and B above C: 768, the floor. */
static void
test_size_beats_scan(void **state)
{
	static const int st[] = {0, 0, 1}, en[] = {0, 2, 2};
	static const int64_t sz[] = {256, 256, 512};
	Arena a;
	MemEval ev;
	MpStats s;
	(void)state;
	ar_init(&a);
	extents_eval(&ev, &a, 3, st, en, sz);
	assert_int_equal(mp_plan_with(NULL, &ev, &a, MP_LINEAR_SCAN, NULL), 1024);
	extents_eval(&ev, &a, 3, st, en, sz);
	assert_int_equal(mp_plan_with(NULL, &ev, &a, MP_SIZE_BEST_FIT, NULL), 768);
	check_plan(&ev, 768);
	assert_int_equal(ev_offset(&ev, 2), 0);
	assert_int_equal(ev_offset(&ev, 0), 0);
	assert_int_equal(ev_offset(&ev, 1), 512);
	extents_eval(&ev, &a, 3, st, en, sz);
	assert_int_equal(mp_plan_with(NULL, &ev, &a, MP_ALL, &s), 768);
	assert_int_equal(s.floor, 768);
	assert_true(s.chosen != MP_LINEAR_SCAN);
	ar_free(&a);
}

/* The skyline beats greedy by size: A [1,1] 768, B [1,2] 256, C [2,3] 512,
 * D [3,3] 768 (the floor: C + D = 1280). By size, A and D go at 0, C on D
 * at 768, and B, live with A and C, finds no gap between them: 1536. The
 * skyline fills the lowest segment first and reaches 1280. */
static void
test_skyline_beats_size(void **state)
{
	static const int st[] = {1, 1, 2, 3}, en[] = {1, 2, 3, 3};
	static const int64_t sz[] = {768, 256, 512, 768};
	Arena a;
	MemEval ev;
	(void)state;
	ar_init(&a);
	for (int m = MP_SIZE_BEST_FIT; m <= MP_SIZE_FIRST_FIT; m++) {
		extents_eval(&ev, &a, 4, st, en, sz);
		assert_int_equal(mp_plan_with(NULL, &ev, &a, (MpMethod)m, NULL), 1536);
	}
	extents_eval(&ev, &a, 4, st, en, sz);
	assert_int_equal(mp_plan_with(NULL, &ev, &a, MP_SKYLINE_AREA, NULL), 1280);
	check_plan(&ev, 1280);
	assert_int_equal(ev.arena_floor, 1280);
	ar_free(&a);
}

/* mp_place on its own: out of work, a placement says so (-1) instead of
 * returning a partial plan; the skyline under a bound keeps the one it
 * started from. */
static void
test_out_of_work(void **state)
{
	MpExtent b[64];
	uint64_t seed = 9;
	Arena a;
	(void)state;
	for (int i = 0; i < 64; i++) {
		int s = (int)(rnd(&seed) % 20);
		b[i] = (MpExtent){256 * (1 + (int64_t)(rnd(&seed) % 8)), 0, s, s + (int)(rnd(&seed) % 5)};
	}
	for (int m = MP_SIZE_BEST_FIT; m < MP_METHOD_COUNT; m++) {
		if (m == MP_SKYLINE_BOUNDED)
			continue;
		ar_init(&a);
		MpPlacer *P = mp_placer(b, 64, 100, &a);
		assert_int_equal(mp_place(P, (MpMethod)m, 1), -1);
		assert_true(mp_work_left(P) < 0);
		P = mp_placer(b, 64, 1 << 20, &a);
		assert_true(mp_place(P, (MpMethod)m, 1) > 0);
		ar_free(&a);
	}
	/* the skyline under a bound starts from a placement: out of work, it
	 * keeps it; with work, it may only lower the top, and stays sound */
	ar_init(&a);
	int64_t t0 = mp_place(mp_placer(b, 64, 1 << 20, &a), MP_BREADTH_FIRST_FIT, 1);
	int64_t off[64];
	for (int i = 0; i < 64; i++)
		off[i] = b[i].off;
	assert_int_equal(mp_place(mp_placer(b, 64, 100, &a), MP_SKYLINE_BOUNDED, 1), t0);
	for (int i = 0; i < 64; i++)
		assert_int_equal(b[i].off, off[i]);
	int64_t t1 = mp_place(mp_placer(b, 64, 1 << 20, &a), MP_SKYLINE_BOUNDED, 1);
	assert_true(t1 > 0 && t1 <= t0);
	for (int i = 0; i < 64; i++) {
		assert_true(b[i].off >= 0 && b[i].off % 256 == 0 && b[i].off + b[i].size <= t1);
		for (int j = 0; j < i; j++)
			assert_true(b[i].start > b[j].end || b[j].start > b[i].end ||
			            b[i].off >= b[j].off + b[j].size || b[j].off >= b[i].off + b[i].size);
	}
	ar_free(&a);
}

/* The skyline under a bound on few steps, where its segment trees over the
 * steps are smallest and every step is an edge of them: 1 to 17 steps and
 * around 32 and 64 (a tree's leaves are the least power of 2 above the
 * steps), lifetimes off step 0. From a greedy placement it finds a sound
 * one no higher and at least the floor, the same one every time. */
static void
test_bounded_steps(void **state)
{
	static const int nsteps[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65};
	enum { N = 48 };
	MpExtent b[N];
	int64_t off[N];
	uint64_t seed = 77;
	(void)state;
	for (size_t k = 0; k < sizeof nsteps / sizeof nsteps[0]; k++)
		for (int round = 0; round < 12; round++) {
			int n = 1 + (int)(rnd(&seed) % N), steps = nsteps[k];
			int base = (int)(rnd(&seed) % 4);
			for (int i = 0; i < n; i++) {
				int s = (int)(rnd(&seed) % (uint64_t)steps);
				int w = rnd(&seed) % 2 ? steps - s : 3;   /* long or short */
				int e = s + (int)(rnd(&seed) % (uint64_t)w);
				b[i] = (MpExtent){256 * (1 + (int64_t)(rnd(&seed) % 8)), 0, base + s,
				                  base + (e < steps ? e : steps - 1)};
			}
			Arena a;
			ar_init(&a);
			int64_t t0 = mp_place(mp_placer(b, n, 1 << 20, &a), MP_SIZE_FIRST_FIT, 0);
			assert_true(t0 > 0);
			for (int i = 0; i < n; i++)
				off[i] = b[i].off;
			int64_t t1 = mp_place(mp_placer(b, n, 1 << 22, &a), MP_SKYLINE_BOUNDED, 0);
			int64_t top = 0;
			assert_true(t1 <= t0);
			for (int i = 0; i < n; i++) {
				assert_true(b[i].off >= 0 && b[i].off % 256 == 0);
				top = b[i].off + b[i].size > top ? b[i].off + b[i].size : top;
				for (int j = 0; j < i; j++)
					assert_true(b[i].start > b[j].end || b[j].start > b[i].end ||
					            b[i].off >= b[j].off + b[j].size ||
					            b[j].off >= b[i].off + b[i].size);
			}
			assert_int_equal(top, t1);
			for (int t = base; t < base + steps; t++) {
				int64_t live = 0;
				for (int i = 0; i < n; i++)
					live += b[i].start <= t && t <= b[i].end ? b[i].size : 0;
				assert_true(t1 >= live);
			}
			/* again from the same start: the same offsets */
			int64_t got[N];
			for (int i = 0; i < n; i++) {
				got[i] = b[i].off;
				b[i].off = off[i];
			}
			assert_int_equal(mp_place(mp_placer(b, n, 1 << 22, &a), MP_SKYLINE_BOUNDED, 0), t1);
			for (int i = 0; i < n; i++)
				assert_int_equal(b[i].off, got[i]);
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

/* A large random set (the search runs out of work on it), checked by a
 * sweep: each extent against the extents live when it starts. */
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

/* The linear scan's rule, plainly: extents by start, larger first, then
 * instances by index and temporaries by step; before each, every placed
 * extent whose last step is before its start is freed; it takes the
 * smallest free range that holds it (lowest offset on ties), else grows
 * the free range that ends at the top, else goes on top. Free ranges in an
 * array, O(n) each. Sets off[] (instances, then temporaries by step);
 * returns the top. */
typedef struct RefExtent {
	int64_t size;
	int start, end, rank;
} RefExtent;

static int
ref_order(const void *x, const void *y)
{
	const RefExtent *a = x, *b = y;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int64_t
ref_scan(const MemEval *ev, int64_t *off)
{
	int n = 0, nfree = 0, nlive = 0;
	RefExtent *x = calloc((size_t)(ev->ninst + ev->nsteps), sizeof *x);
	int64_t (*gap)[2] = calloc((size_t)(ev->ninst + ev->nsteps + 1), sizeof *gap);
	int *live = calloc((size_t)(ev->ninst + ev->nsteps), sizeof *live);
	int64_t top = 0;

	for (int k = 0; k < ev->ninst; k++)
		if (ev->inst[k].owned > 0)
			x[n++] = (RefExtent){(ev->inst[k].owned + 255) / 256 * 256, ev->inst[k].start,
			                     end_of(ev, k), k};
	for (int s = 0; s < ev->nsteps; s++)
		if (ev->temp_bytes && ev->temp_bytes[s] > 0)
			x[n++] = (RefExtent){(ev->temp_bytes[s] + 255) / 256 * 256, s, s,
			                     ev->ninst + s};
	qsort(x, (size_t)n, sizeof *x, ref_order);
	for (int i = 0; i < n; i++) {
		int m = 0, best = -1;
		for (int j = 0; j < nlive; j++) {
			const RefExtent *f = &x[live[j]];
			int64_t lo = off[f->rank], hi = lo + f->size;
			if (f->end >= x[i].start) {
				live[m++] = live[j];
				continue;
			}
			/* merge with the free ranges that touch it */
			for (int g = 0; g < nfree; g++)
				if (gap[g][1] == lo || gap[g][0] == hi) {
					lo = gap[g][0] < lo ? gap[g][0] : lo;
					hi = gap[g][1] > hi ? gap[g][1] : hi;
					memcpy(gap[g], gap[--nfree], sizeof gap[g]);
					g = -1;
				}
			gap[nfree][0] = lo;
			gap[nfree++][1] = hi;
		}
		nlive = m;
		for (int g = 0; g < nfree; g++) {
			int64_t gs = gap[g][1] - gap[g][0];
			int64_t bs = best < 0 ? 0 : gap[best][1] - gap[best][0];
			if (gs >= x[i].size && (best < 0 || gs < bs ||
			                        (gs == bs && gap[g][0] < gap[best][0])))
				best = g;
		}
		if (best >= 0) {
			off[x[i].rank] = gap[best][0];
			gap[best][0] += x[i].size;
			if (gap[best][0] == gap[best][1])
				memcpy(gap[best], gap[--nfree], sizeof gap[best]);
		} else {
			int64_t at = top;
			for (int g = 0; g < nfree; g++)
				if (gap[g][1] == top) {
					at = gap[g][0];
					memcpy(gap[g], gap[--nfree], sizeof gap[g]);
					break;
				}
			off[x[i].rank] = at;
			top = at + x[i].size;
		}
		live[nlive++] = i;
	}
	free(x);
	free(gap);
	free(live);
	return top;
}

/* The linear scan places exactly as its rule says, on small sets and on
 * large ones that keep some 700 free ranges at once (the planner's hashes
 * of range ends grow past their first size), and with instances that end
 * before they start (freed before the next placement). */
static void
test_scan_reference(void **state)
{
	uint64_t seed = 2718;
	(void)state;
	for (int round = 0; round < 54; round++) {
		Arena a;
		MemEval ev;
		int n = round < 50 ? 1 + (int)(rnd(&seed) % 300) : 20000;
		int steps = round < 50 ? 2 + (int)(rnd(&seed) % 60) : 4000;
		ar_init(&a);
		random_eval(&ev, &a, &seed, n, steps);
		for (int k = 0; round >= 50 && k < n; k++) {
			/* half live a few steps, half some 600, growing over
			 * time: the short ones leave holes between the long ones
			 * too small for what comes next, some 700 free at once */
			Instance *in = &ev.inst[k];
			int end = in->start + (int)(rnd(&seed) % (k % 2 ? 4 : 1200));
			in->end = in->start < 0 ? 0 : end < steps ? end : steps - 1;
			if (in->owned > 0)
				in->owned = 256 * (int64_t)(in->start + 2) + (int64_t)(rnd(&seed) % 256);
		}
		for (int k = 0; k < n; k++)
			if (rnd(&seed) % 17 == 0 && ev.inst[k].owned > 0 && ev.inst[k].start > 0)
				ev.inst[k].end = ev.inst[k].start - 1;
		int64_t *off = calloc((size_t)(n + steps), sizeof *off);
		int64_t top = ref_scan(&ev, off);
		assert_int_equal(mp_plan_with(NULL, &ev, &a, MP_LINEAR_SCAN, NULL), top);
		for (int k = 0; k < n; k++)
			assert_int_equal(ev_offset(&ev, k), ev.inst[k].owned > 0 ? off[k] : -1);
		for (int s = 0; s < steps; s++)
			if (ev.temp_bytes[s] > 0)
				assert_int_equal(ev.temp_offset[s], off[n + s]);
		free(off);
		ar_free(&a);
	}
}

/* Persistent buffers come first, each 256-aligned, in Dag order; bytes of
 * persistent[] that the Dag does not list follow as one extent. */
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

/* The whole pipeline on one example: the arena holds the peak, persistent
 * buffers sit below every other extent, and the plan is sound. */
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
	if (an.arena_bytes < an.ev.arena_floor || an.ev.arena_floor < an.ev.peak)
		fail_msg("%s %s -O%d: arena %lld, floor %lld, peak %lld", name, flags, level,
		         (long long)an.arena_bytes, (long long)an.ev.arena_floor,
		         (long long)an.ev.peak);
	/* issue 26's target: within 2% of the peak, or of the aligned floor
	 * where 256-byte rounding alone is more (tiny dims) */
	if ((double)an.arena_bytes > 1.02 * (double)an.ev.arena_floor)
		fail_msg("%s %s -O%d: arena %lld is %.2f%% over the floor %lld (peak %lld)", name,
		         flags, level, (long long)an.arena_bytes,
		         100.0 * (double)(an.arena_bytes - an.ev.arena_floor) /
		         (double)an.ev.arena_floor,
		         (long long)an.ev.arena_floor, (long long)an.ev.peak);
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
		cmocka_unit_test(test_random_methods),
		cmocka_unit_test(test_size_beats_scan),
		cmocka_unit_test(test_skyline_beats_size),
		cmocka_unit_test(test_out_of_work),
		cmocka_unit_test(test_bounded_steps),
		cmocka_unit_test(test_reuse),
		cmocka_unit_test(test_large),
		cmocka_unit_test(test_scan_reference),
		cmocka_unit_test(test_persistent),
		cmocka_unit_test(test_examples),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
