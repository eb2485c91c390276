/* tests/unit/test_attn.c -- the tiled (flash-style) attention kernels of
 * the generated programs' prelude (codegen/runtime_ops.h), in host mode:
 * the GPU runs the same kernel source with each step's items split over a
 * block's threads, so these tests check its tiling without a GPU.
 * - The forward (online softmax over key tiles) against the plain kernels
 *   (one thread per query row, one key at a time): out and lse within
 *   rounding, the dropout keep mask byte for byte.
 * - The backward (dq, dk, dv recomputed tile by tile from the saved lse)
 *   against the plain kernels bit for bit, written and added (+=).
 * - The gradients against central finite differences of the tiled forward
 *   along a random direction.
 * Cases: query and key counts that are no multiple of the tile, several
 *   tiles, causal, GQA and MQA, bool and additive masks (a row with every
 *   key masked), dropout, f32, f16 and bf16 storage, a head size (200)
 *   that makes the tile smaller than 16, and both launchers (plain
 *   attention and the general one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <cmocka.h>

#define REMAT_HOST 1
#include "runtime.h"
#include "runtime_ops.h"

typedef struct Case {
	int64_t B, H, Hk, S, Tk, Dh;
	int causal, mkind;
	double pd;
	int dt;
} Case;

static const Case cases[] = {
	{2, 2, 2, 37, 29, 20, 0, 0, 0, RT_DT_F32},      /* partial tiles */
	{1, 2, 2, 40, 40, 8, 1, 0, 0, RT_DT_F32},       /* causal, 3 tiles */
	{2, 4, 2, 19, 33, 12, 1, 1, 0, RT_DT_F32},      /* GQA, bool mask */
	{1, 3, 1, 17, 21, 16, 0, 2, 0, RT_DT_F32},      /* MQA, additive mask */
	{2, 2, 1, 18, 18, 8, 1, 0, 0.3, RT_DT_F32},     /* dropout */
	{1, 2, 2, 20, 35, 24, 0, 1, 0.2, RT_DT_F16},    /* f16 */
	{1, 2, 2, 23, 17, 32, 1, 2, 0, RT_DT_BF16},     /* bf16 */
	{1, 1, 1, 13, 27, 200, 0, 0, 0, RT_DT_F32},     /* tile 8 */
};

/* The tensors of one case, in the order of the kernels' T: q, k, v, mask,
 * out, lse, dmask, g, dst. */
typedef struct Bufs {
	RtT t[9];
	RtT dq, dk;     /* dst for slots 0 and 1, 2 */
} Bufs;

static RtT
tensor(int dt, int nd, const int64_t *shape, uint64_t key, double amp)
{
	int64_t n = rt_numel(nd, shape);
	void *p = calloc((size_t)(n ? n : 1), (size_t)rt_esize(dt));
	assert_non_null(p);
	RtT t = rt_desc(p, dt, nd, shape);
	for (int64_t i = 0; key && i < n; i++)
		rt_put(&t, i, (rt_real)(amp * (2 * rt_unit(key, (uint64_t)i) - 1)));
	return t;
}

static void
make(const Case *c, Bufs *b)
{
	int64_t qs[4] = {c->B, c->H, c->S, c->Dh}, ks[4] = {c->B, c->Hk, c->Tk, c->Dh};
	int64_t ls[3] = {c->B, c->H, c->S}, ds[4] = {c->B, c->H, c->S, c->Tk};
	b->t[0] = tensor(c->dt, 4, qs, 11, 1.5);
	b->t[1] = tensor(c->dt, 4, ks, 12, 1.5);
	b->t[2] = tensor(c->dt, 4, ks, 13, 1);
	b->t[3] = rt_none();
	if (c->mkind == 1) {    /* [S, Tk] u8, a quarter masked, row 1 wholly */
		int64_t ms[2] = {c->S, c->Tk};
		b->t[3] = tensor(RT_DT_U8, 2, ms, 0, 0);
		for (int64_t e = 0; e < c->S * c->Tk; e++)
			rt_put(&b->t[3], e, e / c->Tk != 1 && rt_unit(14, (uint64_t)e) >= 0.25);
	} else if (c->mkind == 2) {     /* [B, 1, S, Tk] added to the scores */
		int64_t ms[4] = {c->B, 1, c->S, c->Tk};
		b->t[3] = tensor(RT_DT_F32, 4, ms, 15, 2);
	}
	b->t[4] = tensor(c->dt, 4, qs, 0, 0);
	b->t[5] = tensor(RT_DT_F32, 3, ls, 0, 0);
	b->t[6] = c->pd != 0 ? tensor(RT_DT_U8, 4, ds, 0, 0) : rt_none();
	b->t[7] = tensor(c->dt, 4, qs, 16, 1);
	b->dq = tensor(RT_DT_F32, 4, qs, 17, 1);
	b->dk = tensor(RT_DT_F32, 4, ks, 18, 1);
}

static void
release(Bufs *b)
{
	for (int i = 0; i < 8; i++)
		free(b->t[i].p);
	free(b->dq.p);
	free(b->dk.p);
}

static RtAttn
conf(const Case *c)
{
	RtAttn a = {c->causal, c->mkind, c->pd, 77};
	return a;
}

/* A copy of t's buffer, f32 or u8. */
static RtT
copy(RtT t)
{
	size_t sz = (size_t)(t.n * rt_esize(t.dt));
	void *p = malloc(sz ? sz : 1);
	assert_non_null(p);
	memcpy(p, t.p, sz);
	t.p = p;
	return t;
}

static double
maxdiff(const RtT *a, const RtT *b)
{
	double m = 0;
	for (int64_t i = 0; i < a->n; i++) {
		double d = fabs((double)rt_get(a, i) - (double)rt_get(b, i));
		m = d > m || d != d ? d : m;
	}
	return m;
}

/* The plain forward of case c into b (the general kernel, or the plain
 * attention's when usable: both are the references). */
static void
plain_f(const Case *c, Bufs *b, int general)
{
	RtT *t = b->t;
	int64_t rows = t[0].n / c->Dh;
	if (general) {
		RT_RUN(RT_GO, k_attn2_f, rows, (t[0], t[1], t[2], t[3], t[4], t[5], t[6]), rows,
		       conf(c));
	} else {
		RT_RUN(RT_GO, k_attn_f, rows, (t[0], t[1], t[2], t[4], t[5]), rows, c->causal);
	}
}

static void
tiled_f(const Case *c, Bufs *b, int general)
{
	RtT *t = b->t;
	if (general)
		rt_f_attn2(t[0], t[1], t[2], t[3], t[4], t[5], t[6], c->causal, c->mkind, c->pd, 77);
	else
		rt_f_attention(t[0], t[1], t[2], t[4], t[5], c->causal);
}

static int
plain_ok(const Case *c)
{
	return c->H == c->Hk && c->mkind == 0 && c->pd == 0;
}

/* check(case, its number, its tensors, general) for every case and both
 * launchers (the plain attention's where the case needs no more). */
static void
each_case(void (*check)(const Case *, size_t, Bufs *, int))
{
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++)
	for (int general = 0; general < 2; general++) {
		const Case *c = &cases[ci];
		if (!general && !plain_ok(c))
			continue;
		Bufs b;
		make(c, &b);
		check(c, ci, &b, general);
		release(&b);
	}
}

static void
check_forward(const Case *c, size_t ci, Bufs *b, int general)
{
	plain_f(c, b, general);
	RtT out = copy(b->t[4]), lse = copy(b->t[5]), dm = b->t[6].p ? copy(b->t[6]) : rt_none();
	memset(b->t[4].p, 0, (size_t)(b->t[4].n * rt_esize(b->t[4].dt)));
	tiled_f(c, b, general);
	double tol = c->dt == RT_DT_F32 ? 2e-6 : c->dt == RT_DT_F16 ? 2e-3 : 1.6e-2;
	double dout = maxdiff(&out, &b->t[4]), dlse = 0;
	for (int64_t i = 0; i < lse.n; i++) {
		double x = rt_get(&lse, i), y = rt_get(&b->t[5], i);
		if (x != y)     /* +inf (no key left) must match exactly */
			dlse = fmax(dlse, fabs(x - y));
	}
	if (dout > tol || dlse > 2e-6) {
		fprintf(stderr, "case %zu%s: out differs by %g, lse by %g\n", ci,
		        general ? " (general)" : "", dout, dlse);
		fail();
	}
	if (dm.p)
		assert_memory_equal(dm.p, b->t[6].p, (size_t)dm.n);
	free(out.p);
	free(lse.p);
	free(dm.p);
}

static void
test_forward(void **st)
{
	(void)st;
	each_case(check_forward);
}

/* Slot s of the backward into dst, plain (k_attn_b, k_attn2_b) or tiled. */
static void
backward(const Case *c, Bufs *b, int slot, RtT dst, int add, int general, int tiled)
{
	RtT *t = b->t;
	int64_t rows = dst.n / c->Dh;
	if (tiled && general)
		rt_b_attn2(slot, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], dst, add, c->causal,
		           c->mkind, c->pd);
	else if (tiled)
		rt_b_attention(slot, t[0], t[1], t[2], t[4], t[5], t[7], dst, add, c->causal);
	else if (general)
		RT_RUN(RT_GO, k_attn2_b, rows, (t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], dst),
		       rows, conf(c), slot, add);
	else
		RT_RUN(RT_GO, k_attn_b, rows, (t[0], t[1], t[2], t[4], t[5], t[7], dst), rows,
		       c->causal, slot, add);
}

static void
check_backward(const Case *c, size_t ci, Bufs *b, int general)
{
	tiled_f(c, b, general);
	for (int slot = 0; slot < 3; slot++)
	for (int add = 0; add < 2; add++) {
		RtT base = slot ? b->dk : b->dq, ref = copy(base), got = copy(base);
		backward(c, b, slot, ref, add, general, 0);
		backward(c, b, slot, got, add, general, 1);
		if (memcmp(ref.p, got.p, (size_t)(ref.n * 4)) != 0) {
			fprintf(stderr, "case %zu%s slot %d add %d: differs by %g\n", ci,
			        general ? " (general)" : "", slot, add, maxdiff(&ref, &got));
			fail();
		}
		free(ref.p);
		free(got.p);
	}
}

static void
test_backward(void **st)
{
	(void)st;
	each_case(check_backward);
}

/* sum(out * g) in double, after the tiled forward. */
static double
loss(const Case *c, Bufs *b)
{
	double s = 0;
	tiled_f(c, b, 1);
	for (int64_t i = 0; i < b->t[4].n; i++)
		s += (double)rt_get(&b->t[4], i) * (double)rt_get(&b->t[7], i);
	return s;
}

/* x += h * dir (dir: a hash of (key, i) in [-1, 1)). */
static void
nudge(RtT *x, double h, uint64_t key)
{
	for (int64_t i = 0; i < x->n; i++)
		rt_put(x, i, (rt_real)(rt_get(x, i) + h * (2 * rt_unit(key, (uint64_t)i) - 1)));
}

static void
test_finite_differences(void **st)
{
	(void)st;
	for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
		const Case *c = &cases[ci];
		if (c->dt != RT_DT_F32)         /* 16-bit inputs cannot take a small step */
			continue;
		Bufs b;
		double dg = 0, h = 1e-2;
		make(c, &b);
		loss(c, &b);
		for (int slot = 0; slot < 3; slot++) {
			RtT dst = slot ? b.dk : b.dq;
			backward(c, &b, slot, dst, 0, 1, 1);
			for (int64_t i = 0; i < dst.n; i++)
				dg += (double)rt_get(&dst, i) * (2 * rt_unit(40 + (uint64_t)slot, (uint64_t)i) - 1);
		}
		for (int slot = 0; slot < 3; slot++)
			nudge(&b.t[slot], h, 40 + (uint64_t)slot);
		double lp = loss(c, &b);
		for (int slot = 0; slot < 3; slot++)
			nudge(&b.t[slot], -2 * h, 40 + (uint64_t)slot);
		double lm = loss(c, &b), fd = (lp - lm) / (2 * h);
		if (!(fabs(dg) > 1e-3) || fabs(fd - dg) > 1e-2 * fabs(dg) + 1e-3) {
			fprintf(stderr, "case %zu: finite difference %.8g, gradient %.8g\n", ci, fd, dg);
			fail();
		}
		release(&b);
	}
}

/* The tile fits the 48 KiB of shared memory at every head size, and the
 * cases above take both a 16-row and a smaller tile. */
static void
test_tile(void **st)
{
	(void)st;
	for (int64_t dh = 1; dh <= RT_MAXDH; dh++) {
		int t = rt_atile(dh);
		assert_true(t >= 1 && rt_ashb(t, dh) <= RT_ASHB);
		assert_true(t == 16 || rt_ashb(2 * t, dh) > RT_ASHB);
	}
	assert_int_equal(rt_atile(20), 16);
	assert_int_equal(rt_atile(200), 8);
}

int
main(void)
{
	(void)rt_rank;          /* runtime_dist.h's, not included here */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tile),
		cmocka_unit_test(test_forward),
		cmocka_unit_test(test_backward),
		cmocka_unit_test(test_finite_differences),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
