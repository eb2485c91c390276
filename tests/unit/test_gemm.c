/* tests/unit/test_gemm.c -- the GEMM interface of the generated programs'
 * prelude (codegen/runtime.h), in host mode: the GPU build passes the same
 * arguments to cuBLAS, so these tests check the mapping from views to
 * arguments without a GPU.
 * - rt_subaxes: every view chain's sub-axes address exactly the elements
 *   rt_phys does (random chains of permutes, slices and reshapes).
 * - rt_gemm, the host's C version of cublasGemmStridedBatchedEx, against a
 *   triple loop over cuBLAS's column-major contract: every ta/tb, leading
 *   dimensions above the rows, batch strides (0 included), beta 0 (C not
 *   read) and 1, f32, f16 and bf16 (C in f32 too).
 * - Every matmul form the op table allows (batched, broadcast on either
 *   side and across batch axes, transposed and sliced operands, reshapes of
 *   permuted tensors), forward and both gradients, with and without +=:
 *   rt_mm equals the plain kernels (k_matmul_f, k_matmul_b) bit for bit
 *   where the summed axes merge, and within rounding where the calls add
 *   into C; the forms that must be GEMM calls are, and one view that is
 *   not strided takes the general kernel. The arguments of a weight shared
 *   over the batch (one call, m = N, n = B M) are checked one by one. */
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

/* A buffer of n elements of dtype dt, its element i = a hash of (key, i)
 * in [-1, 1). */
static void *
filled(int dt, int64_t n, uint64_t key)
{
	void *p = calloc((size_t)(n ? n : 1), (size_t)rt_esize(dt));
	int64_t one = n;
	RtT t = rt_desc(p, dt, 1, &one);
	assert_non_null(p);
	for (int64_t i = 0; i < n; i++)
		rt_put(&t, i, 2 * rt_unit(key, (uint64_t)i) - 1);
	return p;
}

/* ---- rt_subaxes against rt_phys */

static uint64_t rng = 0x1234567;

static int
pick(int n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (int)((rng >> 33) % (uint64_t)n);
}

/* Every logical element of t: base element off + digits . strides, as
 * rt_phys finds it. */
static void
check_sub(const RtT *t, const RtSub *u)
{
	for (int64_t i = 0; i < t->n; i++) {
		int64_t j = u->off, r = i;
		for (int d = t->nd - 1; d >= 0; d--) {
			int64_t id = r % t->shape[d];
			r /= t->shape[d];
			for (int k = u->first[d + 1] - 1; k >= u->first[d]; k--) {
				j += id % u->sz[k] * u->st[k];
				id /= u->sz[k];
			}
			assert_int_equal(id, 0);
		}
		assert_int_equal(j, rt_phys(t, i));
	}
}

/* A random view of a [2, 3, 4, 5] buffer: up to 4 steps of permute,
 * narrow and reshape (merging two axes, or splitting one). */
static RtT
random_view(void)
{
	int64_t sh[4] = {2, 3, 4, 5};
	RtT t = rt_desc((void *)&rng, RT_DT_F32, 4, sh);
	int steps = 1 + pick(4);
	for (int s = 0; s < steps && t.nmap < RT_MAXMAP; s++) {
		int k = pick(3), perm[RT_MAXDIM];
		if (k == 0) {
			for (int d = 0; d < t.nd; d++)
				perm[d] = d;
			for (int d = t.nd - 1; d > 0; d--) {
				int e = pick(d + 1), z = perm[d];
				perm[d] = perm[e];
				perm[e] = z;
			}
			t = rt_permute(t, perm);
		} else if (k == 1) {
			int ax = pick(t.nd);
			if (t.shape[ax] > 1) {
				int64_t len = 1 + pick((int)t.shape[ax] - 1);
				t = rt_narrow(t, ax, pick((int)(t.shape[ax] - len) + 1), len);
			}
		} else if (t.nd > 1 && pick(2)) {
			int ax = pick(t.nd - 1);
			int64_t ns[RT_MAXDIM];
			int n = 0;
			for (int d = 0; d < t.nd; d++)
				ns[n++] = d == ax ? t.shape[d] * t.shape[d + 1] : t.shape[d + (d > ax)];
			t = rt_reshape(t, t.nd - 1, ns);
		} else if (t.nd < RT_MAXDIM) {
			int ax = pick(t.nd);
			int64_t ns[RT_MAXDIM], f = t.shape[ax] % 2 == 0 ? 2 : t.shape[ax] % 3 == 0 ? 3 : 1;
			for (int d = 0, n = 0; d < t.nd; d++) {
				if (d == ax) {
					ns[n++] = f;
					ns[n++] = t.shape[d] / f;
				} else {
					ns[n++] = t.shape[d];
				}
			}
			t = rt_reshape(t, t.nd + 1, ns);
		}
	}
	return t;
}

static void
test_subaxes(void **state)
{
	int strided = 0, split = 0, general = 0;
	(void)state;
	for (int r = 0; r < 3000; r++) {
		RtT t = random_view();
		RtSub u;
		int64_t off, st[RT_MAXDIM];
		if (!rt_subaxes(&t, &u)) {
			general++;
			continue;
		}
		check_sub(&t, &u);
		strided++;
		if (rt_affine(&t, &off, st)) {
			RtSub v = u;
			for (int d = 0; d < t.nd; d++) {       /* one sub-axis per axis */
				v.first[d] = d;
				v.sz[d] = t.shape[d];
				v.st[d] = st[d];
			}
			v.first[t.nd] = t.nd;
			v.off = off;
			check_sub(&t, &v);
		} else {
			split++;
		}
	}
	/* every case occurs: plain strided, axes split in sub-axes, neither */
	assert_true(strided > 1000 && split > 50 && general > 20);

	/* a reshape of a permuted [2, 4, 3] to [2, 12]: the 12 = (4, 3) axis
	 * is two sub-axes of strides 1 and 4 */
	float buf[24];
	int64_t sh[3] = {2, 3, 4}, rs[2] = {2, 12};
	RtT t = rt_reshape(rt_permute8(rt_desc(buf, RT_DT_F32, 3, sh), 0, 2, 1, 0, 0, 0, 0, 0), 2, rs);
	RtSub u;
	assert_true(rt_subaxes(&t, &u));
	assert_int_equal(u.first[1] - u.first[0], 1);
	assert_int_equal(u.first[2] - u.first[1], 2);
	assert_int_equal(u.sz[1], 4);
	assert_int_equal(u.st[1], 1);
	assert_int_equal(u.sz[2], 3);
	assert_int_equal(u.st[2], 4);
	check_sub(&t, &u);
}

/* ---- rt_gemm against cuBLAS's contract */

/* C(x, y) = alpha sum op(A)(x, p) op(B)(p, y) + beta C(x, y), in double. */
static double
contract(const RtGemm *g, const RtT *a, const RtT *b, const RtT *c, int64_t i, int64_t x,
         int64_t y)
{
	double s = 0;
	for (int64_t p = 0; p < g->k; p++)
		s += (double)rt_ld(a, i * g->sa + (g->ta ? p + x * g->lda : x + p * g->lda)) *
		     (double)rt_ld(b, i * g->sb + (g->tb ? y + p * g->ldb : p + y * g->ldb));
	s *= g->alpha;
	if (g->beta != 0)
		s += g->beta * (double)rt_ld(c, i * g->sc + x + y * g->ldc);
	return s;
}

static void
gemm_case(int ta, int tb, int adt, int cdt, int64_t sa_zero, double beta)
{
	RtGemm g = {ta, tb, 5, 7, 6, 0, 0, 0, 0, 0, 0, 3, 1.0, beta};
	g.lda = (ta ? g.k : g.m) + 2;          /* leading dimensions above the rows */
	g.ldb = (tb ? g.n : g.k) + 1;
	g.ldc = g.m + 3;
	g.sa = sa_zero ? 0 : g.lda * (ta ? g.m : g.k) + 4;
	g.sb = g.ldb * (tb ? g.k : g.n);
	g.sc = g.ldc * g.n + 1;
	int64_t na = g.sa * g.batch + g.lda * 8, nb = g.sb * g.batch + g.ldb * 8, nc = g.sc * g.batch;
	int64_t one = 1;
	void *pa = filled(adt, na, 1), *pb = filled(adt, nb, 2), *pc = filled(cdt, nc, 3);
	void *pc0 = malloc((size_t)(nc * rt_esize(cdt)));
	RtT a = rt_desc(pa, adt, 1, &one), b = rt_desc(pb, adt, 1, &one);
	RtT c = rt_desc(pc, cdt, 1, &one), c0 = rt_desc(pc0, cdt, 1, &one);
	assert_non_null(pc0);
	if (beta == 0)          /* never read: NaN there would show */
		for (int64_t i = 0; i < nc; i++)
			rt_st(&c, i, NAN);
	memcpy(pc0, pc, (size_t)(nc * rt_esize(cdt)));
	rt_gemm(&g, pa, adt, pb, adt, pc, cdt);
	double tol = cdt == RT_DT_F32 ? 1e-5 : cdt == RT_DT_F16 ? 2e-3 : 2e-2;
	for (int64_t i = 0; i < g.batch; i++)
		for (int64_t x = 0; x < g.m; x++)
			for (int64_t y = 0; y < g.n; y++) {
				double want = contract(&g, &a, &b, &c0, i, x, y);
				double got = (double)rt_ld(&c, i * g.sc + x + y * g.ldc);
				assert_true(fabs(got - want) <= tol * (1 + fabs(want)));
			}
	/* nothing outside the matrices is written */
	for (int64_t i = 0; i < nc; i++)
		if (i % g.sc >= g.ldc * g.n || i % g.sc % g.ldc >= g.m) {
			double v0 = (double)rt_ld(&c0, i), v1 = (double)rt_ld(&c, i);
			assert_true(v0 == v1 || (v0 != v0 && v1 != v1));
		}
	free(pa);
	free(pb);
	free(pc);
	free(pc0);
}

static void
test_gemm_contract(void **state)
{
	const int dts[3][2] = {{RT_DT_F32, RT_DT_F32}, {RT_DT_F16, RT_DT_F16}, {RT_DT_BF16, RT_DT_F32}};
	(void)state;
	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++)
			for (int d = 0; d < 3; d++)
				for (int z = 0; z < 2; z++) {
					gemm_case(ta, tb, dts[d][0], dts[d][1], z, 0);
					gemm_case(ta, tb, dts[d][0], dts[d][1], z, 1);
				}
	assert_true(rt_gemm_dt(RT_DT_F16, RT_DT_F16, RT_DT_F32));
	assert_false(rt_gemm_dt(RT_DT_F32, RT_DT_F16, RT_DT_F32));
	assert_false(rt_gemm_dt(RT_DT_F8E4M3, RT_DT_F8E4M3, RT_DT_F32));
	assert_false(rt_gemm_dt(RT_DT_F32, RT_DT_F32, RT_DT_F16));
}

/* ---- matmul forms: rt_mm against the plain kernels */

enum { GEMM, GENERAL };

/* One operand: a buffer of its own and a view of it. */
typedef struct Opnd {
	void *p;
	RtT t;
} Opnd;

/* Operand view of logical shape sh (nd axes): stored as sh, or stored
 * with its last two axes swapped and transposed back (tr), or stored with
 * axis `ax` 3 longer and narrowed from 1 (ax >= 0). */
static Opnd
operand(int dt, int nd, const int64_t *sh, int tr, int ax, uint64_t key)
{
	int64_t st[RT_MAXDIM];
	Opnd o;
	memcpy(st, sh, sizeof st[0] * (size_t)nd);
	if (ax >= 0)
		st[ax] += 3;
	if (tr) {
		int64_t z = st[nd - 1];
		st[nd - 1] = st[nd - 2];
		st[nd - 2] = z;
	}
	o.p = filled(dt, rt_numel(nd, st), key);
	o.t = rt_desc(o.p, dt, nd, st);
	if (tr)
		o.t = rt_transpose(o.t, nd - 2, nd - 1);
	if (ax >= 0)
		o.t = rt_narrow(o.t, ax, 1, sh[ax]);
	return o;
}

/* dst of a matmul step: a buffer holding its logical elements, filled
 * (for +=) or not. */
static Opnd
result(int dt, int nd, const int64_t *sh, uint64_t key)
{
	Opnd o;
	o.p = filled(dt, rt_numel(nd, sh), key);
	o.t = rt_desc(o.p, dt, nd, sh);
	return o;
}

/* slot -1, 0, 1 of a @ b (T: a, b, g, dst; dst of dtype cdt) by rt_mm
 * and by the plain kernels: by GEMM calls or by the general kernel as
 * `want` says; the same bits unless the calls add into C (RtMM.nsum), and
 * then within rounding. */
static void
check_slot(const char *name, RtT a, RtT b, RtT g, int slot, int add, int cdt, int want)
{
	const RtT *shape = slot < 0 ? &g : slot == 0 ? &a : &b;
	Opnd d1 = result(cdt, shape->nd, shape->shape, 77), d2 = result(cdt, shape->nd, shape->shape, 77);
	RtT T1[4] = {a, b, slot < 0 ? rt_none() : g, d1.t}, T2[4] = {a, b, g, d2.t};
	int64_t n0 = rt_ngemm, g0 = rt_ngeneral;
	RtMM plan;
	int exact = !rt_mm_plan(T1, slot, add, &plan) || plan.nsum == 0;

	rt_mm(T1, slot, add);
	if (slot < 0) {
		RtT f[3] = {a, b, d2.t};
		k_matmul_f(f, d2.t.n);
	} else {
		k_matmul_b(T2, d2.t.n, slot, add);
	}
	if ((rt_ngeneral == g0) != (want == GEMM))
		fprintf(stderr, "%s slot %d add %d: %s\n", name, slot, add,
		        want == GEMM ? "not GEMM calls" : "not the general kernel");
	if (want == GENERAL) {
		assert_int_equal(rt_ngeneral, g0 + 1);
		assert_int_equal(rt_ngemm, n0);
	} else {
		assert_int_equal(rt_ngeneral, g0);
		assert_true(rt_ngemm > n0);
	}
	for (int64_t i = 0; i < d1.t.n; i++) {
		double x = (double)rt_get(&d1.t, i), y = (double)rt_get(&d2.t, i);
		if (exact ? x != y : fabs(x - y) > 1e-5 * (1 + fabs(y))) {
			fprintf(stderr, "%s slot %d add %d: element %lld: %.9g, plain %.9g\n", name, slot,
			        add, (long long)i, x, y);
			fail();
		}
	}
	free(d1.p);
	free(d2.p);
}

/* A form: a [na dims] @ b, with views as operand() makes them; every slot,
 * with and without +=. */
static void
form(const char *name, int dt, int nda, const int64_t *sa, int tra, int axa, int ndb,
     const int64_t *sb, int trb, int axb, int want)
{
	Opnd a = operand(dt, nda, sa, tra, axa, 11), b = operand(dt, ndb, sb, trb, axb, 12);
	int64_t sy[RT_MAXDIM];
	int ny = nda > ndb ? nda : ndb;
	for (int d = 0; d < ny - 2; d++) {     /* NumPy broadcasting of the batch axes */
		int ea = d - (ny - nda), eb = d - (ny - ndb);
		int64_t x = ea >= 0 ? sa[ea] : 1, z = eb >= 0 ? sb[eb] : 1;
		sy[d] = x > z ? x : z;
	}
	sy[ny - 2] = sa[nda - 2];
	sy[ny - 1] = sb[ndb - 1];
	Opnd g = result(dt, ny, sy, 13);
	for (int slot = -1; slot <= 1; slot++)
		for (int add = 0; add < (slot < 0 ? 1 : 2); add++)
			check_slot(name, a.t, b.t, g.t, slot, add, dt, want);
	free(a.p);
	free(b.p);
	free(g.p);
}

static void
test_forms(void **state)
{
	const int64_t m2[2] = {5, 6}, k2[2] = {6, 7}, bm[3] = {3, 5, 6}, bk[3] = {3, 6, 7};
	const int64_t b1m[4] = {2, 1, 5, 6}, hk[4] = {1, 3, 6, 7}, m1[3] = {1, 5, 6};
	(void)state;
	form("2-D", RT_DT_F32, 2, m2, 0, -1, 2, k2, 0, -1, GEMM);
	form("batched", RT_DT_F32, 3, bm, 0, -1, 3, bk, 0, -1, GEMM);
	form("shared weight", RT_DT_F32, 3, bm, 0, -1, 2, k2, 0, -1, GEMM);
	form("shared left", RT_DT_F32, 2, m2, 0, -1, 3, bk, 0, -1, GEMM);
	form("broadcast both", RT_DT_F32, 4, b1m, 0, -1, 4, hk, 0, -1, GEMM);
	form("size-1 batch", RT_DT_F32, 3, m1, 0, -1, 3, bk, 0, -1, GEMM);
	form("a transposed", RT_DT_F32, 3, bm, 1, -1, 2, k2, 0, -1, GEMM);
	form("b transposed", RT_DT_F32, 3, bm, 0, -1, 3, bk, 1, -1, GEMM);
	form("both transposed", RT_DT_F32, 2, m2, 1, -1, 3, bk, 1, -1, GEMM);
	form("a sliced rows", RT_DT_F32, 3, bm, 0, 1, 2, k2, 0, -1, GEMM);
	form("a sliced inner", RT_DT_F32, 3, bm, 0, 2, 2, k2, 0, -1, GEMM);
	form("b sliced cols", RT_DT_F32, 3, bm, 0, -1, 3, bk, 0, 2, GEMM);
	form("sliced batch", RT_DT_F32, 3, bm, 1, 0, 3, bk, 0, 0, GEMM);
	form("f16", RT_DT_F16, 3, bm, 0, -1, 2, k2, 1, -1, GEMM);
	form("bf16", RT_DT_BF16, 3, bm, 1, -1, 3, bk, 0, 1, GEMM);
}

/* The attention output: [B, H, S, Dh] permuted to [B, S, H, Dh] and
 * reshaped to [B, S, H Dh], times a weight. Its rows are not strided (the
 * H Dh axis is two sub-axes): the forward and the weight's gradient add
 * the calls of one head (of one batch element) into C when C is f32, and
 * take the general kernel when C is f16; the input's gradient is one
 * call. */
static void
heads(int dt)
{
	int64_t sh[4] = {2, 3, 4, 5}, rs[3] = {2, 4, 15}, sw[2] = {15, 6}, sy[3] = {2, 4, 6};
	void *pa = filled(dt, 120, 21);
	RtT a = rt_reshape(rt_permute8(rt_desc(pa, dt, 4, sh), 0, 2, 1, 3, 0, 0, 0, 0), 3, rs);
	Opnd w = result(dt, 2, sw, 22), g = result(dt, 3, sy, 23);
	RtT T[4] = {a, w.t, g.t, w.t};
	RtMM p;
	int want = dt == RT_DT_F32 ? GEMM : GENERAL;
	check_slot("heads", a, w.t, g.t, -1, 0, dt, want);
	check_slot("heads", a, w.t, g.t, 0, 1, dt, GEMM);
	check_slot("heads", a, w.t, g.t, 1, 0, dt, want);
	check_slot("heads", a, w.t, g.t, 1, 1, RT_DT_F32, GEMM);     /* an f32 weight gradient */
	if (dt == RT_DT_F32) {  /* dw: heads the batch, the B calls of S summed */
		assert_true(rt_mm_plan(T, 1, 0, &p));
		assert_int_equal(p.nsum, 1);
		assert_int_equal(p.nloop, 1);
		assert_int_equal(p.lsz[0], 2);
		assert_int_equal(p.g.batch, 3);
		assert_int_equal(p.g.k, 4);
	}
	free(pa);
	free(w.p);
	free(g.p);
}

static void
test_heads(void **state)
{
	(void)state;
	heads(RT_DT_F32);
	heads(RT_DT_F16);
}

/* Views that are not strided, and dtypes no GEMM takes: the general
 * kernel, with the plain kernels' results. */
static void
test_general(void **state)
{
	int64_t sh[2] = {4, 6}, sw[2] = {6, 3}, sy[2] = {4, 3}, s8[2] = {4, 6};
	(void)state;
	/* [4, 6] transposed to [6, 4] and reshaped to [4, 6]: a row of 6 runs
	 * over 1.5 rows of 4 */
	void *pa = filled(RT_DT_F32, 24, 31);
	RtT a = rt_reshape(rt_transpose(rt_desc(pa, RT_DT_F32, 2, sh), 0, 1), 2, sh);
	RtSub u;
	assert_false(rt_subaxes(&a, &u));
	Opnd w = result(RT_DT_F32, 2, sw, 32), g = result(RT_DT_F32, 2, sy, 33);
	for (int slot = -1; slot <= 1; slot++)  /* slot 0 does not read a */
		check_slot("not strided", a, w.t, g.t, slot, slot > 0, RT_DT_F32,
		           slot == 0 ? GEMM : GENERAL);
	free(pa);
	free(w.p);
	free(g.p);
	/* f8 has no GEMM */
	Opnd x = result(RT_DT_F8E4M3, 2, s8, 34), y = result(RT_DT_F8E4M3, 2, sw, 35);
	Opnd o = result(RT_DT_F8E4M3, 2, sy, 36);
	for (int slot = -1; slot <= 1; slot++)
		check_slot("f8", x.t, y.t, o.t, slot, 0, RT_DT_F8E4M3, GENERAL);
	free(x.p);
	free(y.p);
	free(o.p);
}

/* p is one call (no loops) with these arguments: ta, tb, m, n, k, lda,
 * ldb, ldc, batch, beta. */
static void
one_call(const RtMM *p, const int64_t *want)
{
	const int64_t got[10] = {p->g.ta, p->g.tb, p->g.m, p->g.n, p->g.k, p->g.lda, p->g.ldb,
	                         p->g.ldc, p->g.batch, (int64_t)p->g.beta};
	assert_int_equal(p->nloop, 0);
	assert_true(p->g.alpha == 1);
	for (int i = 0; i < 10; i++)
		assert_int_equal(got[i], want[i]);
}

/* A weight shared by every batch element: one call over all B M rows,
 * computed as C^T = W^T X^T: m = N, n = B M, k = K, nothing transposed,
 * lda = N, ldb = K, ldc = N; its gradient one call summing over B M. */
static void
test_arguments(void **state)
{
	int64_t sx[3] = {3, 5, 6}, sw[2] = {6, 7}, sy[3] = {3, 5, 7};
	Opnd x = result(RT_DT_F32, 3, sx, 41), w = result(RT_DT_F32, 2, sw, 42);
	Opnd y = result(RT_DT_F32, 3, sy, 43), dw = result(RT_DT_F32, 2, sw, 44);
	RtT T[4] = {x.t, w.t, rt_none(), y.t}, B[4] = {x.t, w.t, y.t, dw.t};
	const int64_t fwd[10] = {0, 0, 7, 15, 6, 7, 6, 7, 1, 0};
	/* dw += x^T g: C^T = g^T x, m = N, n = K, k = B M, x read transposed */
	const int64_t bwd[10] = {0, 1, 7, 6, 15, 7, 6, 7, 1, 1};
	RtMM p;
	(void)state;
	assert_true(rt_mm_plan(T, -1, 0, &p));
	assert_true(p.A == &T[1] && p.B == &T[0] && p.C == &T[3]);
	one_call(&p, fwd);
	assert_true(rt_mm_plan(B, 1, 1, &p));
	assert_true(p.A == &B[2] && p.B == &B[0] && p.C == &B[3]);
	one_call(&p, bwd);
	free(x.p);
	free(w.p);
	free(y.p);
	free(dw.p);
}

int
main(void)
{
	(void)rt_rank;          /* runtime_dist.h's, not included here */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_subaxes),
		cmocka_unit_test(test_gemm_contract),
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_heads),
		cmocka_unit_test(test_general),
		cmocka_unit_test(test_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
