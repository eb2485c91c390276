/* tests/unit/test_conv.c -- the implicit-GEMM convolution of the generated
 * programs' prelude (codegen/runtime.h), in host mode: the GPU build
 * launches its tiled kernel with the same RtCg arguments and the same
 * index mapping (rt_cg_ix, rt_cg_at), so these tests check that mapping
 * without a GPU.
 * - The forward, grad(x) and grad(w) of rt_f_conv2d and rt_b_conv2d equal
 *   the plain kernels (k_conv_f, k_conv_b) element for element, both
 *   summing the same terms in the same order: fixed cases (odd sizes,
 *   strides 2 and 3, dilation 2, asymmetric pads, groups, 1-D as H = 1,
 *   more than one tile along u, v and k) and 300 random ones, in f32, f16
 *   and bf16, with and without += into the gradient.
 * - The fixed cases take the implicit GEMM exactly where they should (a
 *   depthwise convolution, a 3-channel grad(x) and a view that is not
 *   contiguous take the plain kernels).
 * - The gradients are the forward's adjoints: <conv(x, w), g> = <x,
 *   grad(x)> = <w, grad(w)>, which for this bilinear op is the
 *   directional derivative along x and along w (the finite-difference
 *   check of the generated programs, tests/unit/test_emit_ops.c, runs it
 *   end to end). */
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

/* A convolution: x [N, C, H, W], w [O, C/G, KH, KW], begin pads pt, pl,
 * end pads pb, pr; gemm[m]: whether mode m (0 forward, 1 grad(x), 2
 * grad(w)) must be an implicit GEMM (-1: not checked). */
typedef struct Case {
	int64_t N, C, H, W, O, G, KH, KW, sh, sw, pt, pb, pl, pr, dh, dw;
	int gemm[3];
} Case;

static const Case cases[] = {
	/* 3x3, pad 1: the common case, more than one u tile */
	{2, 8, 7, 9, 12, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, {1, 1, 1}},
	/* odd sizes, stride 2, a 3x5 kernel, asymmetric pads */
	{1, 9, 11, 10, 10, 1, 3, 5, 2, 2, 1, 0, 2, 1, 1, 1, {1, 1, 1}},
	/* dilation 2 */
	{2, 8, 9, 9, 8, 1, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, {1, 1, 1}},
	/* two groups of 8, stride 2 */
	{2, 16, 8, 7, 16, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, {1, 1, 1}},
	/* 1-D (H = 1): stride 2, dilation 2, pads [2, 1] */
	{2, 8, 1, 17, 9, 1, 1, 5, 1, 2, 0, 0, 2, 1, 1, 2, {1, 1, 1}},
	/* a stem: 7x7, stride 2, pad 3, 3 channels (grad(x) 3 wide: plain) */
	{1, 3, 13, 12, 16, 1, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, {1, 0, 1}},
	/* depthwise: the plain kernels */
	{2, 8, 6, 6, 8, 8, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, {0, 0, 0}},
	/* 1x1 of stride 2 (not a matmul), two v tiles (O = 70) */
	{2, 8, 9, 8, 70, 1, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, {1, 1, 1}},
	/* stride 3 over a 2x2 kernel: rows and columns no window reads */
	{1, 10, 10, 11, 8, 1, 2, 2, 3, 3, 2, 0, 0, 2, 1, 1, {1, 1, 1}},
	/* K = 40 * 9: many k steps, two groups of 20 */
	{1, 40, 5, 6, 40, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, {1, 1, 1}},
};

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static int64_t
pick(int64_t lo, int64_t hi)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return lo + (int64_t)((rng >> 33) % (uint64_t)(hi - lo + 1));
}

static int64_t
out_size(int64_t n, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d)
{
	return (n + pb + pe - d * (k - 1) - 1) / s + 1;
}

/* A random case whose output has at least one position per axis. */
static Case
random_case(void)
{
	Case c;
	for (;;) {
		c.G = pick(1, 3);
		c.C = c.G * pick(1, 10);
		c.O = c.G * pick(1, 10);
		c.N = pick(1, 2);
		c.H = pick(1, 3) == 1 ? 1 : pick(2, 9);
		c.W = pick(2, 11);
		c.KH = c.H == 1 ? 1 : pick(1, 3);
		c.KW = pick(1, 4);
		c.sh = pick(1, 3);
		c.sw = pick(1, 3);
		c.dh = pick(1, 2);
		c.dw = pick(1, 2);
		c.pt = c.H == 1 ? 0 : pick(0, 2);
		c.pb = c.H == 1 ? 0 : pick(0, 2);
		c.pl = pick(0, 2);
		c.pr = pick(0, 2);
		c.gemm[0] = c.gemm[1] = c.gemm[2] = -1;
		if ((c.H + c.pt + c.pb - c.dh * (c.KH - 1) - 1) >= 0 &&
		    (c.W + c.pl + c.pr - c.dw * (c.KW - 1) - 1) >= 0)
			return c;
	}
}

/* A tensor of dtype dt and shape sh, its element i = a hash of (key, i)
 * in [-1, 1). */
static RtT
filled(int dt, int64_t n0, int64_t n1, int64_t n2, int64_t n3, uint64_t key)
{
	int64_t sh[4] = {n0, n1, n2, n3};
	int64_t n = n0 * n1 * n2 * n3;
	RtT t = rt_desc(calloc((size_t)n, (size_t)rt_esize(dt)), dt, 4, sh);
	assert_non_null(t.p);
	for (int64_t i = 0; i < n; i++)
		rt_put(&t, i, 2 * rt_unit(key, (uint64_t)i) - 1);
	return t;
}

static RtT
copy_of(RtT t)
{
	RtT c = t;
	size_t bytes = (size_t)t.n * (size_t)rt_esize(t.dt);
	c.p = malloc(bytes);
	assert_non_null(c.p);
	memcpy(c.p, t.p, bytes);
	return c;
}

/* a and b hold the same values (compared as numbers: the implicit GEMM
 * adds the padding's products, +-0, which the plain kernels skip). */
static void
assert_same(const RtT *a, const RtT *b, const char *what, int ci)
{
	for (int64_t i = 0; i < a->n; i++)
		if (rt_get(a, i) != rt_get(b, i)) {
			fprintf(stderr, "case %d %s dtype %d: element %lld: %.9g != %.9g\n", ci, what,
			        a->dt, (long long)i, (double)rt_get(a, i), (double)rt_get(b, i));
			fail();
		}
}

static double
dot(const RtT *a, const RtT *b, double *scale)
{
	double s = 0;
	for (int64_t i = 0; i < a->n; i++) {
		double v = (double)rt_get(a, i) * (double)rt_get(b, i);
		s += v;
		*scale += fabs(v);
	}
	return s;
}

/* Case k at dtype dt: the three modes against the plain kernels, with
 * add (the gradients += into random values) or not; with view, x is a
 * transposed view of its buffer (the plain kernels). Returns the number
 * of implicit GEMMs run. */
static int64_t
check_case(const Case *k, int ci, int dt, int add, int view)
{
	RtConv c = {k->sh, k->sw, k->pt, k->pl, k->dh, k->dw, k->G};
	int64_t OH = out_size(k->H, k->KH, k->sh, k->pt, k->pb, k->dh);
	int64_t OW = out_size(k->W, k->KW, k->sw, k->pl, k->pr, k->dw);
	uint64_t seed = (uint64_t)ci * 977 + (uint64_t)dt * 31 + (uint64_t)add;
	RtT x = view ? filled(dt, k->N, k->C, k->W, k->H, seed + 1) :
	               filled(dt, k->N, k->C, k->H, k->W, seed + 1);
	RtT xv = view ? rt_transpose(x, 2, 3) : x;
	RtT w = filled(dt, k->O, k->C / k->G, k->KH, k->KW, seed + 2);
	RtT g = filled(dt, k->N, k->O, OH, OW, seed + 3);
	RtT y = filled(dt, k->N, k->O, OH, OW, seed + 4);
	RtT dx = filled(dt, k->N, k->C, k->H, k->W, seed + 5);
	RtT dw = filled(dt, k->O, k->C / k->G, k->KH, k->KW, seed + 6);
	RtT y2 = copy_of(y), dx2 = copy_of(dx), dw2 = copy_of(dw);
	int64_t n0 = rt_nconvgemm, used[3];

	rt_f_conv2d(xv, w, y, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.g);
	used[0] = rt_nconvgemm - n0;
	rt_b_conv2d(0, rt_none(), w, g, dx, add, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.g);
	used[1] = rt_nconvgemm - n0 - used[0];
	rt_b_conv2d(1, xv, rt_none(), g, dw, add, c.sh, c.sw, c.ph, c.pw, c.dh, c.dw, c.g);
	used[2] = rt_nconvgemm - n0 - used[0] - used[1];
	{
		RtT f[3] = {xv, w, y2}, b0[4] = {rt_none(), w, g, dx2}, b1[4] = {xv, rt_none(), g, dw2};
		k_conv_f(rt_args(f, 3), y2.n, c);
		k_conv_b(rt_args(b0, 4), dx2.n, c, 0, add);
		k_conv_b(rt_args(b1, 4), dw2.n, c, 1, add);
	}
	assert_same(&y, &y2, "forward", ci);
	assert_same(&dx, &dx2, "grad(x)", ci);
	assert_same(&dw, &dw2, "grad(w)", ci);
	for (int m = 0; m < 3; m++)
		if (k->gemm[m] >= 0 && used[m] != (view && m != 1 ? 0 : k->gemm[m])) {
			fprintf(stderr, "case %d mode %d: %lld implicit GEMMs\n", ci, m, (long long)used[m]);
			fail();
		}
	if (dt == RT_DT_F32 && !add) {  /* the adjoint identity */
		double s0 = 0, s1 = 0, s2 = 0;
		double a = dot(&y, &g, &s0), b = dot(&xv, &dx, &s1), d = dot(&w, &dw, &s2);
		assert_true(fabs(a - b) <= 1e-5 * (s0 + s1) + 1e-9);
		assert_true(fabs(a - d) <= 1e-5 * (s0 + s2) + 1e-9);
	}
	RtT all[] = {x, w, g, y, dx, dw, y2, dx2, dw2};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		free(all[i].p);
	return used[0] + used[1] + used[2];
}

static const int dtypes[] = {RT_DT_F32, RT_DT_F16, RT_DT_BF16};

static void
test_fixed(void **state)
{
	(void)state;
	for (int ci = 0; ci < (int)(sizeof cases / sizeof cases[0]); ci++)
		for (int d = 0; d < 3; d++)
			for (int add = 0; add < 2; add++)
				check_case(&cases[ci], ci, dtypes[d], add, 0);
}

/* A transposed x is not contiguous: the plain kernels for the forward and
 * grad(w) (grad(x) reads no x), the same results. */
static void
test_view(void **state)
{
	(void)state;
	check_case(&cases[1], 1, RT_DT_F32, 0, 1);
	check_case(&cases[3], 3, RT_DT_F16, 1, 1);
}

static void
test_random(void **state)
{
	int64_t gemms = 0;
	(void)state;
	for (int r = 0; r < 300; r++) {
		Case k = random_case();
		gemms += check_case(&k, 100 + r, dtypes[r % 3], r % 2, 0);
	}
	/* a quarter of the 900 calls at least are 8 wide along u and v */
	assert_true(gemms >= 150);
}

int
main(void)
{
	(void)rt_rank;          /* runtime_dist.h's, not included here */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fixed),
		cmocka_unit_test(test_view),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
