/* codegen/runtime.h -- the prelude of every program remat emits (copied verbatim).
 *
 * One source, two targets: with nvcc (GPU) kernels are __global__ grid-stride
 * loops; with -DREMAT_HOST (or any C compiler) the same kernels are plain
 * loops over the elements. Every kernel is deterministic: one thread per
 * output element (or row), each summing in a fixed order, no atomics.
 *
 * A tensor is an RtT descriptor: a base pointer, a storage dtype, a logical
 * shape, and a chain of index maps from the logical row-major element index
 * to the element index in the base buffer. Reshape keeps the chain (the
 * row-major order is unchanged); transpose, permute and slice compose a
 * strided map onto the chain, or push a new one after a reshape, so a reshape
 * of a transposed tensor still addresses the right elements without a copy.
 *
 * Values are loaded into rt_real (double when the network has f64 tensors,
 * else float) and stored back converted; f16, bf16 and f8 are raw bits with
 * software conversion (round to nearest even; f8e4m3 saturates at +-448).
 *
 * Sections, in order, each opening with a "------ name" comment line:
 * storage (dtype loads and stores), descriptors (RtT, views), launching,
 * elementwise, binary, matmul, conv2d, attention, norms, softmax, pooling,
 * reductions, losses, embedding, custom ops, init and checks, memory
 * (allocation registry, tracked and arena modes, steps, checksums,
 * rt_finish).
 *
 * Everything the program allocates is registered (rt_raw_alloc) and freed
 * by rt_finish, which also flushes stdout before the program exits, so a
 * leak checker (-fsanitize=address) sees no leak and loses no output.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__CUDACC__) && !defined(REMAT_HOST)
#define RT_GPU 1
#include <cuda_runtime.h>
#pragma nv_diag_suppress 177    /* prelude functions this graph does not use */
#define RT_DEV __host__ __device__
#define RT_K static __global__ void
#define RT_FOR(i, n) for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; \
                          i < (n); i += (int64_t)blockDim.x * gridDim.x)
#define RT_GO(k, n) k<<<rt_blocks(n), 256>>>
#else
#define RT_DEV
#define RT_K static inline void
#define RT_FOR(i, n) for (int64_t i = 0; i < (n); i++)
#define RT_GO(k, n) k
#endif
#define RT_FN static inline
#define RT_DFN static inline RT_DEV

#ifdef RT_F64
typedef double rt_real;
#define rt_exp exp
#define rt_log log
#define rt_sqrt sqrt
#define rt_tanh tanh
#else
typedef float rt_real;
#define rt_exp expf
#define rt_log logf
#define rt_sqrt sqrtf
#define rt_tanh tanhf
#endif

enum { RT_MAXDIM = 8, RT_MAXMAP = 4, RT_MAXDH = 256, RT_MAXARGS = 12 };
/* Storage dtypes. The generated tables name them (emit.c writes
 * RT_DT_<dtype name in capitals>, never a number), so this order is free;
 * RT_DT_ONE is the constant-1 gradient of the loss, held in no buffer. */
enum { RT_DT_F64, RT_DT_F32, RT_DT_BF16, RT_DT_F16, RT_DT_F8E4M3, RT_DT_F8E5M2,
       RT_DT_I64, RT_DT_I32, RT_DT_I8, RT_DT_U8, RT_DT_BOOL, RT_DT_ONE };
enum { RT_RELU, RT_GELU, RT_SILU, RT_SIGMOID, RT_TANH, RT_EXP, RT_LOG,
       RT_SQRT, RT_NEG, RT_SCALE, RT_CAST };
enum { RT_ADD, RT_SUB, RT_MUL, RT_DIV };

typedef struct RtMap {
	int nd;
	int64_t off;
	int64_t shape[RT_MAXDIM], stride[RT_MAXDIM];
} RtMap;

typedef struct RtT {
	void *p;
	int dt, nd, nmap;
	int64_t n;
	int64_t shape[RT_MAXDIM];
	RtMap map[RT_MAXMAP];
} RtT;

/* An instance as the program's tables describe it. */
typedef struct RtInst {
	int dt, nd;
	int64_t shape[RT_MAXDIM];
	int64_t owned, offset;
} RtInst;

/* ------------------------------------------------------------ storage */

RT_DFN float
rt_bits2f(uint32_t u)
{
	union { uint32_t u; float f; } c;
	c.u = u;
	return c.f;
}

RT_DFN uint32_t
rt_f2bits(float f)
{
	union { uint32_t u; float f; } c;
	c.f = f;
	return c.u;
}

/* A float format with E exponent and M mantissa bits; fn: no infinities,
 * all-ones is NaN (f8e4m3). */
RT_DFN float
rt_small2f(uint32_t h, int E, int M, int fn)
{
	uint32_t s = h >> (E + M) & 1, e = h >> M & ((1u << E) - 1), m = h & ((1u << M) - 1);
	int bias = (1 << (E - 1)) - 1;
	float v;
	if (e == 0)
		v = ldexpf((float)m, 1 - bias - M);
	else if (!fn && e == (1u << E) - 1)
		v = m ? NAN : INFINITY;
	else if (fn && e == (1u << E) - 1 && m == (1u << M) - 1)
		v = NAN;
	else
		v = ldexpf((float)(m | 1u << M), (int)e - bias - M);
	return s ? -v : v;
}

RT_DFN uint32_t
rt_f2small(float f, int E, int M, int fn)
{
	uint32_t s = (rt_f2bits(f) >> 31) << (E + M);
	int bias = (1 << (E - 1)) - 1, ex, emax = fn ? (1 << E) - 1 : (1 << E) - 2;
	float a = fabsf(f);
	if (a != a)
		return s | (fn ? (1u << (E + M)) - 1 : ((1u << E) - 1) << M | 1u << (M - 1));
	if (a == 0)
		return s;
	frexpf(a, &ex);
	ex -= 1;
	if (ex < 1 - bias)      /* subnormal; may round up into the normals */
		return s | (uint32_t)rintf(ldexpf(a, bias - 1 + M));
	float q = rintf(ldexpf(a, M - ex));
	if (q >= ldexpf(1, M + 1)) {
		q = ldexpf(1, M);
		ex++;
	}
	uint32_t m = (uint32_t)q - (1u << M);
	if (ex + bias > emax || (fn && ex + bias == emax && m == (1u << M) - 1)) {
		if (fn)
			return s | (uint32_t)emax << M | ((1u << M) - 2);
		return s | ((1u << E) - 1) << M;
	}
	return s | (uint32_t)(ex + bias) << M | m;
}

/* The element of t's base buffer that logical element i lives in. */
RT_DFN int64_t
rt_phys(const RtT *t, int64_t i)
{
	for (int m = 0; m < t->nmap; m++) {
		const RtMap *mp = &t->map[m];
		int64_t j = mp->off;
		for (int d = mp->nd - 1; d >= 0; d--) {
			j += i % mp->shape[d] * mp->stride[d];
			i /= mp->shape[d];
		}
		i = j;
	}
	return i;
}

/* The value of element j of t's base buffer. */
RT_DFN rt_real
rt_ld(const RtT *t, int64_t j)
{
	switch (t->dt) {
	case RT_DT_F64: return (rt_real)((const double *)t->p)[j];
	case RT_DT_F32: return ((const float *)t->p)[j];
	case RT_DT_BF16: return rt_small2f(((const uint16_t *)t->p)[j], 8, 7, 0);
	case RT_DT_F16: return rt_small2f(((const uint16_t *)t->p)[j], 5, 10, 0);
	case RT_DT_F8E4M3: return rt_small2f(((const uint8_t *)t->p)[j], 4, 3, 1);
	case RT_DT_F8E5M2: return rt_small2f(((const uint8_t *)t->p)[j], 5, 2, 0);
	case RT_DT_I64: return (rt_real)((const int64_t *)t->p)[j];
	case RT_DT_I32: return (rt_real)((const int32_t *)t->p)[j];
	case RT_DT_I8: return ((const int8_t *)t->p)[j];
	default: return ((const uint8_t *)t->p)[j];
	}
}

RT_DFN rt_real
rt_get(const RtT *t, int64_t i)
{
	if (t->dt == RT_DT_ONE)
		return 1;
	return rt_ld(t, rt_phys(t, i));
}

RT_DFN int64_t
rt_geti(const RtT *t, int64_t i)
{
	int64_t j = rt_phys(t, i);
	switch (t->dt) {
	case RT_DT_I64: return ((const int64_t *)t->p)[j];
	case RT_DT_I32: return ((const int32_t *)t->p)[j];
	case RT_DT_I8: return ((const int8_t *)t->p)[j];
	case RT_DT_U8: case RT_DT_BOOL: return ((const uint8_t *)t->p)[j];
	default: return (int64_t)rt_get(t, i);
	}
}

RT_DFN void
rt_put(const RtT *t, int64_t i, rt_real v)
{
	int64_t j = rt_phys(t, i);
	switch (t->dt) {
	case RT_DT_F64: ((double *)t->p)[j] = v; break;
	case RT_DT_F32: ((float *)t->p)[j] = (float)v; break;
	case RT_DT_BF16: ((uint16_t *)t->p)[j] = (uint16_t)rt_f2small((float)v, 8, 7, 0); break;
	case RT_DT_F16: ((uint16_t *)t->p)[j] = (uint16_t)rt_f2small((float)v, 5, 10, 0); break;
	case RT_DT_F8E4M3: ((uint8_t *)t->p)[j] = (uint8_t)rt_f2small((float)v, 4, 3, 1); break;
	case RT_DT_F8E5M2: ((uint8_t *)t->p)[j] = (uint8_t)rt_f2small((float)v, 5, 2, 0); break;
	case RT_DT_I64: ((int64_t *)t->p)[j] = (int64_t)v; break;
	case RT_DT_I32: ((int32_t *)t->p)[j] = (int32_t)v; break;
	case RT_DT_I8: ((int8_t *)t->p)[j] = (int8_t)v; break;
	case RT_DT_U8: ((uint8_t *)t->p)[j] = (uint8_t)v; break;
	default: ((uint8_t *)t->p)[j] = v != 0; break;
	}
}

/* dst = src, or dst += src (contributions into an existing gradient) */
RT_DFN void
rt_out(const RtT *t, int64_t i, rt_real v, int add)
{
	rt_put(t, i, add ? rt_get(t, i) + v : v);
}

/* Flat logical index of a multi-index over t's shape. */
RT_DFN int64_t
rt_at(const RtT *t, const int64_t *ix)
{
	int64_t f = 0;
	for (int d = 0; d < t->nd; d++)
		f = f * t->shape[d] + ix[d];
	return f;
}

RT_DFN void
rt_unravel(const RtT *t, int64_t i, int64_t *ix)
{
	for (int d = t->nd - 1; d >= 0; d--) {
		ix[d] = i % t->shape[d];
		i /= t->shape[d];
	}
}

/* Counter-based hash (splitmix64): init values and dropout masks depend on
 * (key, element) only, so recomputation is bit-identical. */
RT_DFN uint64_t
rt_hash(uint64_t key, uint64_t i)
{
	uint64_t z = key * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

RT_DFN rt_real
rt_unit(uint64_t key, uint64_t i)
{
	return (rt_real)(rt_hash(key, i) >> 40) * (rt_real)(1.0 / 16777216.0);
}

/* ------------------------------------------------------------ descriptors */

RT_FN int64_t
rt_numel(int nd, const int64_t *shape)
{
	int64_t n = 1;
	for (int d = 0; d < nd; d++)
		n *= shape[d];
	return n;
}

RT_FN void
rt_die(const char *msg)
{
	fprintf(stderr, "remat runtime: %s\n", msg);
	exit(2);
}

RT_FN RtT
rt_desc(void *p, int dt, int nd, const int64_t *shape)
{
	RtT t;
	memset(&t, 0, sizeof t);
	t.p = p;
	t.dt = dt;
	t.nd = nd;
	memcpy(t.shape, shape, sizeof t.shape[0] * (size_t)nd);
	t.n = rt_numel(nd, shape);
	return t;
}

RT_FN RtT
rt_reshape(RtT t, int nd, const int64_t *shape)
{
	t.nd = nd;
	memcpy(t.shape, shape, sizeof t.shape[0] * (size_t)nd);
	return t;
}

RT_FN RtT
rt_reshape_as(RtT t, RtT like)
{
	return rt_reshape(t, like.nd, like.shape);
}

/* A map whose out axis d reads in axis ax[d] from element st[in axis] on:
 * composed onto the first map when it unravels exactly t's shape, else a
 * new map over t's row-major strides. */
RT_FN RtT
rt_strided(RtT t, int nd, const int *ax, const int64_t *shape, const int64_t *st)
{
	RtMap m, old;
	int64_t cs[RT_MAXDIM], c = 1;
	int fuse = t.nmap > 0 && t.map[0].nd == t.nd &&
	           !memcmp(t.map[0].shape, t.shape, sizeof t.shape[0] * (size_t)t.nd);
	for (int d = t.nd - 1; d >= 0; d--) {
		cs[d] = fuse ? t.map[0].stride[d] : c;
		c *= t.shape[d];
	}
	old = t.map[0];
	memset(&m, 0, sizeof m);
	m.nd = nd;
	m.off = fuse ? old.off : 0;
	for (int d = 0; d < t.nd; d++)
		m.off += st[d] * cs[d];
	for (int d = 0; d < nd; d++) {
		m.shape[d] = shape[d];
		m.stride[d] = cs[ax[d]];
	}
	if (!fuse) {
		if (t.nmap == RT_MAXMAP)
			rt_die("view chain too long");
		memmove(&t.map[1], &t.map[0], sizeof t.map[0] * (size_t)t.nmap);
		t.nmap++;
	}
	t.map[0] = m;
	t.nd = nd;
	memcpy(t.shape, shape, sizeof t.shape[0] * (size_t)nd);
	t.n = rt_numel(nd, shape);
	return t;
}

RT_FN RtT
rt_permute(RtT t, const int *perm)
{
	int64_t sh[RT_MAXDIM], st[RT_MAXDIM] = {0};
	for (int d = 0; d < t.nd; d++)
		sh[d] = t.shape[perm[d]];
	return rt_strided(t, t.nd, perm, sh, st);
}

RT_FN RtT
rt_transpose(RtT t, int i, int j)
{
	int perm[RT_MAXDIM];
	for (int d = 0; d < t.nd; d++)
		perm[d] = d;
	perm[i] = j;
	perm[j] = i;
	return rt_permute(t, perm);
}

RT_FN RtT
rt_permute8(RtT t, int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7)
{
	int perm[RT_MAXDIM] = {a0, a1, a2, a3, a4, a5, a6, a7};
	return rt_permute(t, perm);
}

/* The inverse permutation, for grad(x) of permute(x). */
RT_FN RtT
rt_unpermute8(RtT t, int a0, int a1, int a2, int a3, int a4, int a5, int a6, int a7)
{
	int perm[RT_MAXDIM] = {a0, a1, a2, a3, a4, a5, a6, a7}, inv[RT_MAXDIM];
	for (int d = 0; d < t.nd; d++)
		inv[perm[d]] = d;
	return rt_permute(t, inv);
}

RT_FN RtT
rt_narrow(RtT t, int axis, int64_t start, int64_t len)
{
	int ax[RT_MAXDIM];
	int64_t sh[RT_MAXDIM], st[RT_MAXDIM] = {0};
	for (int d = 0; d < t.nd; d++) {
		ax[d] = d;
		sh[d] = t.shape[d];
	}
	sh[axis] = len;
	st[axis] = start;
	return rt_strided(t, t.nd, ax, sh, st);
}

/* ------------------------------------------------------------ launching */

#ifdef RT_GPU
static RtT *rt_dargs;
static int
rt_blocks(int64_t n)
{
	int64_t b = (n + 255) / 256;
	return b < 1 ? 1 : b > 65535 ? 65535 : (int)b;
}

static void
rt_cuda(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "remat runtime: %s: %s\n", what, cudaGetErrorString(e));
		exit(2);
	}
}

/* Stream-ordered: the copy waits for the kernels before it. */
static const RtT *
rt_args(const RtT *a, int n)
{
	rt_cuda(cudaMemcpy(rt_dargs, a, sizeof *a * (size_t)n, cudaMemcpyHostToDevice), "args");
	return rt_dargs;
}
#define rt_after() rt_cuda(cudaGetLastError(), "launch")
#else
RT_FN const RtT *
rt_args(const RtT *a, int n)
{
	(void)n;
	return a;
}
#define rt_after() ((void)0)
#endif

/* ------------------------------------------------------------ elementwise */

RT_DFN rt_real
rt_gelu_k(void)
{
	return (rt_real)0.7978845608028654;    /* sqrt(2/pi): tanh approximation */
}

RT_DFN rt_real
rt_unary(int op, rt_real x, rt_real c)
{
	switch (op) {
	case RT_RELU: return x > 0 ? x : 0;
	case RT_GELU: return (rt_real)0.5 * x * (1 + rt_tanh(rt_gelu_k() * (x + (rt_real)0.044715 * x * x * x)));
	case RT_SILU: return x / (1 + rt_exp(-x));
	case RT_SIGMOID: return 1 / (1 + rt_exp(-x));
	case RT_TANH: return rt_tanh(x);
	case RT_EXP: return rt_exp(x);
	case RT_LOG: return rt_log(x);
	case RT_SQRT: return rt_sqrt(x);
	case RT_NEG: return -x;
	case RT_SCALE: return c * x;
	default: return x;
	}
}

/* d(op)/dx times g; s is what the op saves: out, or x (gelu, silu, log). */
RT_DFN rt_real
rt_unary_b(int op, rt_real s, rt_real g, rt_real c)
{
	rt_real t, e;
	switch (op) {
	case RT_RELU: return s > 0 ? g : 0;
	case RT_GELU:
		t = rt_tanh(rt_gelu_k() * (s + (rt_real)0.044715 * s * s * s));
		return g * ((rt_real)0.5 * (1 + t) + (rt_real)0.5 * s * (1 - t * t) *
		            rt_gelu_k() * (1 + 3 * (rt_real)0.044715 * s * s));
	case RT_SILU:
		e = 1 / (1 + rt_exp(-s));
		return g * e * (1 + s * (1 - e));
	case RT_SIGMOID: return g * s * (1 - s);
	case RT_TANH: return g * (1 - s * s);
	case RT_EXP: return g * s;
	case RT_LOG: return g / s;
	case RT_SQRT: return g / (2 * s);
	case RT_NEG: return -g;
	case RT_SCALE: return c * g;
	default: return g;
	}
}

RT_K
k_unary_f(const RtT *T, int64_t n, int op, double c)
{
	RT_FOR(i, n) rt_put(&T[1], i, rt_unary(op, rt_get(&T[0], i), (rt_real)c));
}

RT_K
k_unary_b(const RtT *T, int64_t n, int op, double c, int add)
{
	RT_FOR(i, n) {
		rt_real s = T[0].p ? rt_get(&T[0], i) : 0;
		rt_real g = rt_get(&T[1], T[1].dt == RT_DT_ONE ? 0 : i);
		rt_out(&T[2], i, rt_unary_b(op, s, g, (rt_real)c), add);
	}
}

/* y = x; x: out (relu...), x (gelu...) or nothing (neg, scale, cast) */
RT_FN void
rt_f_unary(int op, RtT x, RtT y, double c)
{
	RtT a[2] = {x, y};
	RT_GO(k_unary_f, y.n)(rt_args(a, 2), y.n, op, c);
	rt_after();
}

RT_FN void
rt_b_unary(int op, RtT s, RtT g, RtT dst, int add, double c)
{
	RtT a[3] = {s, g, dst};
	RT_GO(k_unary_b, dst.n)(rt_args(a, 3), dst.n, op, c, add);
	rt_after();
}

RT_FN RtT
rt_none(void)
{
	RtT t;
	memset(&t, 0, sizeof t);
	return t;
}

/* dst = src (+ dst): copies, accumulation, view-op backward, concat */
RT_K
k_copy(const RtT *T, int64_t n, int add)
{
	RT_FOR(i, n) rt_out(&T[1], i, rt_get(&T[0], T[0].dt == RT_DT_ONE ? 0 : i), add);
}

RT_FN void
rt_copy(RtT src, RtT dst, int add)
{
	RtT a[2] = {src, dst};
	RT_GO(k_copy, dst.n)(rt_args(a, 2), dst.n, add);
	rt_after();
}

RT_K
k_fill(const RtT *T, int64_t n, double v)
{
	RT_FOR(i, n) rt_put(&T[0], i, (rt_real)v);
}

RT_FN void
rt_fill(RtT t, double v)
{
	RT_GO(k_fill, t.n)(rt_args(&t, 1), t.n, v);
	rt_after();
}

RT_K
k_dropout_f(const RtT *T, int64_t n, double p, uint64_t key)
{
	RT_FOR(i, n) {
		int keep = rt_unit(key, (uint64_t)i) >= (rt_real)p;
		rt_put(&T[2], i, keep);
		rt_put(&T[1], i, keep ? rt_get(&T[0], i) / (1 - (rt_real)p) : 0);
	}
}

/* Dropout: element i of op `key` is kept when its hash >= p. */
RT_FN void
rt_f_dropout(RtT x, RtT y, RtT mask, double p, uint64_t key)
{
	RtT a[3] = {x, y, mask};
	RT_GO(k_dropout_f, y.n)(rt_args(a, 3), y.n, p, key);
	rt_after();
}

RT_K
k_dropout_b(const RtT *T, int64_t n, double p, int add)
{
	RT_FOR(i, n) rt_out(&T[2], i, rt_get(&T[1], T[1].dt == RT_DT_ONE ? 0 : i) *
	                    rt_get(&T[0], i) / (1 - (rt_real)p), add);
}

RT_FN void
rt_b_dropout(RtT mask, RtT g, RtT dst, int add, double p)
{
	RtT a[3] = {mask, g, dst};
	RT_GO(k_dropout_b, dst.n)(rt_args(a, 3), dst.n, p, add);
	rt_after();
}

/* ------------------------------------------------------------ binary */

/* The element of a that element i of o reads under broadcasting. */
RT_DFN int64_t
rt_bcast(const RtT *o, const RtT *a, int64_t i)
{
	int64_t j = 0, mul = 1;
	for (int d = o->nd - 1, e = a->nd - 1; d >= 0; d--, e--) {
		int64_t id = i % o->shape[d];
		i /= o->shape[d];
		if (e >= 0) {
			if (a->shape[e] != 1)
				j += id * mul;
			mul *= a->shape[e];
		}
	}
	return j;
}

RT_DFN rt_real
rt_binop(int op, rt_real a, rt_real b)
{
	switch (op) {
	case RT_ADD: return a + b;
	case RT_SUB: return a - b;
	case RT_MUL: return a * b;
	default: return a / b;
	}
}

RT_K
k_binary_f(const RtT *T, int64_t n, int op)
{
	RT_FOR(i, n) rt_put(&T[2], i, rt_binop(op, rt_get(&T[0], rt_bcast(&T[2], &T[0], i)),
	                                       rt_get(&T[1], rt_bcast(&T[2], &T[1], i))));
}

RT_FN void
rt_f_binary(int op, RtT x, RtT y, RtT out)
{
	RtT a[3] = {x, y, out};
	RT_GO(k_binary_f, out.n)(rt_args(a, 3), out.n, op);
	rt_after();
}

/* T: a, b (either may be absent when not saved), g, dst. Element j of dst
 * sums the contributions of every out element broadcast from it. */
RT_K
k_binary_b(const RtT *T, int64_t n, int op, int slot, int add)
{
	const RtT *G = &T[2], *D = &T[3];
	RT_FOR(j, n) {
		int64_t ai[RT_MAXDIM], cnt = G->n / D->n;
		rt_real s = 0;
		rt_unravel(D, j, ai);
		for (int64_t r = 0; r < cnt; r++) {
			int64_t rr = r, oi = 0, mul = 1;
			for (int d = G->nd - 1; d >= 0; d--) {
				int e = d - (G->nd - D->nd);
				int64_t id;
				if (e >= 0 && D->shape[e] == G->shape[d])
					id = ai[e];
				else {
					id = rr % G->shape[d];
					rr /= G->shape[d];
				}
				oi += id * mul;
				mul *= G->shape[d];
			}
			rt_real g = rt_get(G, G->dt == RT_DT_ONE ? 0 : oi), v;
			if (op == RT_ADD)
				v = g;
			else if (op == RT_SUB)
				v = slot ? -g : g;
			else if (op == RT_MUL)
				v = g * rt_get(&T[1 - slot], rt_bcast(G, &T[1 - slot], oi));
			else {
				rt_real b = rt_get(&T[1], rt_bcast(G, &T[1], oi));
				v = slot ? -g * rt_get(&T[0], rt_bcast(G, &T[0], oi)) / (b * b) : g / b;
			}
			s += v;
		}
		rt_out(D, j, s, add);
	}
}

RT_FN void
rt_b_binary(int op, int slot, RtT x, RtT y, RtT g, RtT dst, int add)
{
	RtT a[4] = {x, y, g, dst};
	RT_GO(k_binary_b, dst.n)(rt_args(a, 4), dst.n, op, slot, add);
	rt_after();
}

/* ------------------------------------------------------------ matmul */

/* Flat batch index in a (batch dims ab[0..na)) of output batch b over
 * the output's batch dims ob[0..no), broadcasting like NumPy. */
RT_DFN int64_t
rt_batch(int64_t b, const int64_t *ob, int no, const int64_t *ab, int na)
{
	int64_t j = 0, mul = 1;
	for (int d = no - 1, e = na - 1; d >= 0; d--, e--) {
		int64_t id = b % ob[d];
		b /= ob[d];
		if (e >= 0) {
			if (ab[e] != 1)
				j += id * mul;
			mul *= ab[e];
		}
	}
	return j;
}

#if !defined(RT_GPU) && !defined(RT_NAIVE)
/* The host's matmul: the same sums as k_matmul_f and k_matmul_b, element
 * by element in the same order (so the results are bit-identical; build
 * with -DRT_NAIVE for the plain kernels), on operands packed into
 * contiguous rows first, and 4 x 4 outputs at a time so that 16 independent
 * sums are in flight. y[r, c] = sum over t of p[r, t] q[c, t]; each y[r, c]
 * starts from 0 and adds t = 0, 1, ... in order. */
RT_FN void
rt_dot_rows(const rt_real *p, const rt_real *q, int64_t R, int64_t C, int64_t T,
            rt_real *y)
{
	int64_t r = 0;
	for (; r + 4 <= R; r += 4) {
		const rt_real *p0 = p + r * T, *p1 = p0 + T, *p2 = p1 + T, *p3 = p2 + T;
		int64_t c = 0;
		for (; c + 4 <= C; c += 4) {
			const rt_real *q0 = q + c * T, *q1 = q0 + T, *q2 = q1 + T, *q3 = q2 + T;
			rt_real s00 = 0, s01 = 0, s02 = 0, s03 = 0, s10 = 0, s11 = 0, s12 = 0, s13 = 0;
			rt_real s20 = 0, s21 = 0, s22 = 0, s23 = 0, s30 = 0, s31 = 0, s32 = 0, s33 = 0;
			for (int64_t t = 0; t < T; t++) {
				rt_real a0 = p0[t], a1 = p1[t], a2 = p2[t], a3 = p3[t];
				rt_real b0 = q0[t], b1 = q1[t], b2 = q2[t], b3 = q3[t];
				s00 += a0 * b0; s01 += a0 * b1; s02 += a0 * b2; s03 += a0 * b3;
				s10 += a1 * b0; s11 += a1 * b1; s12 += a1 * b2; s13 += a1 * b3;
				s20 += a2 * b0; s21 += a2 * b1; s22 += a2 * b2; s23 += a2 * b3;
				s30 += a3 * b0; s31 += a3 * b1; s32 += a3 * b2; s33 += a3 * b3;
			}
			rt_real *y0 = y + r * C + c, *y1 = y0 + C, *y2 = y1 + C, *y3 = y2 + C;
			y0[0] = s00; y0[1] = s01; y0[2] = s02; y0[3] = s03;
			y1[0] = s10; y1[1] = s11; y1[2] = s12; y1[3] = s13;
			y2[0] = s20; y2[1] = s21; y2[2] = s22; y2[3] = s23;
			y3[0] = s30; y3[1] = s31; y3[2] = s32; y3[3] = s33;
		}
		for (; c < C; c++)
			for (int64_t i = 0; i < 4; i++) {
				rt_real s = 0;
				for (int64_t t = 0; t < T; t++)
					s += p[(r + i) * T + t] * q[c * T + t];
				y[(r + i) * C + c] = s;
			}
	}
	for (; r < R; r++)
		for (int64_t c = 0; c < C; c++) {
			rt_real s = 0;
			for (int64_t t = 0; t < T; t++)
				s += p[r * T + t] * q[c * T + t];
			y[r * C + c] = s;
		}
}

/* Scratch rows for rt_dot_rows: plain malloc, not counted (a kernel's
 * registers, not a tensor of the model), freed at once. */
RT_FN rt_real *
rt_scratch(int64_t n)
{
	rt_real *p = (rt_real *)malloc(sizeof *p * (size_t)(n ? n : 1));
	if (!p)
		rt_die("out of memory (matmul scratch)");
	return p;
}

/* dst[0..n) = t's logical elements start, start + 1, ... (rt_get's values):
 * a tensor with at most one index map is walked without divisions. */
RT_FN void
rt_read_run(const RtT *t, int64_t start, int64_t n, rt_real *dst)
{
	if (t->dt == RT_DT_ONE || t->nmap > 1) {
		for (int64_t i = 0; i < n; i++)
			dst[i] = rt_get(t, start + i);
		return;
	}
	const float *f = t->dt == RT_DT_F32 ? (const float *)t->p : NULL;
	if (t->nmap == 0) {
		for (int64_t i = 0; i < n; i++)
			dst[i] = f ? f[start + i] : rt_ld(t, start + i);
		return;
	}
	const RtMap *m = &t->map[0];
	int64_t ix[RT_MAXDIM], j = m->off, r = start;
	for (int d = m->nd - 1; d >= 0; d--) {
		ix[d] = r % m->shape[d];
		r /= m->shape[d];
		j += ix[d] * m->stride[d];
	}
	for (int64_t i = 0; i < n; i++) {
		dst[i] = f ? f[j] : rt_ld(t, j);
		for (int d = m->nd - 1; d >= 0; d--) {   /* the next index */
			j += m->stride[d];
			if (++ix[d] < m->shape[d])
				break;
			j -= ix[d] * m->stride[d];
			ix[d] = 0;
		}
	}
}

/* dst[c * R + r] = t's element (r, c) of the [R, C] matrix at logical
 * offset start: t with its last two axes swapped (a view) gathered in
 * order, or through tmp when the view chain is full. */
RT_FN void
rt_read_run_t(const RtT *t, int64_t start, int64_t R, int64_t C, rt_real *dst, rt_real *tmp)
{
	if (t->nd >= 2 && t->nmap < RT_MAXMAP && t->dt != RT_DT_ONE) {
		RtT u = rt_transpose(*t, t->nd - 2, t->nd - 1);
		rt_read_run(&u, start, R * C, dst);
		return;
	}
	rt_read_run(t, start, R * C, tmp);
	for (int64_t r = 0; r < R; r++)
		for (int64_t c = 0; c < C; c++)
			dst[c * R + r] = tmp[r * C + c];
}

/* t's logical elements [start, start + n) = src (or += with add), as
 * rt_out stores them. */
RT_FN void
rt_scatter(const RtT *t, int64_t start, int64_t n, const rt_real *src, int add)
{
	if (t->dt == RT_DT_F32 && t->nmap == 0) {
		float *f = (float *)t->p + start;
		for (int64_t i = 0; i < n; i++)
			f[i] = add ? (float)((rt_real)f[i] + src[i]) : (float)src[i];
		return;
	}
	for (int64_t i = 0; i < n; i++)
		rt_out(t, start + i, src[i], add);
}

/* y = a @ b, batch by batch: p = a's [M, K] rows, q = b's columns as rows. */
RT_FN void
rt_host_matmul_f(const RtT *A, const RtT *B, const RtT *Y)
{
	int64_t M = A->shape[A->nd - 2], K = A->shape[A->nd - 1], N = B->shape[B->nd - 1];
	int64_t nbatch = Y->n / (M * N);
	rt_real *p = rt_scratch(M * K), *q = rt_scratch(N * K), *y = rt_scratch(M * N);
	rt_real *tmp = rt_scratch(K * N);

	for (int64_t yb = 0; yb < nbatch; yb++) {
		int64_t ab = rt_batch(yb, Y->shape, Y->nd - 2, A->shape, A->nd - 2);
		int64_t bb = rt_batch(yb, Y->shape, Y->nd - 2, B->shape, B->nd - 2);
		rt_read_run(A, ab * M * K, M * K, p);
		rt_read_run_t(B, bb * K * N, K, N, q, tmp);
		rt_dot_rows(p, q, M, N, K, y);
		rt_scatter(Y, yb * M * N, M * N, y, 0);
	}
	free(p);
	free(q);
	free(y);
	free(tmp);
}

/* da (slot 0) or db (slot 1), as k_matmul_b: for each batch of dst, the
 * sum runs over the output batches that map to it, in order, and within
 * each over n (da[m, k] = sum g[m, n] b[k, n]) or m (db[k, n] = sum a[m, k]
 * g[m, n]); t walks (batch, n) or (batch, m) in that order. */
RT_FN void
rt_host_matmul_b(const RtT *T4, int slot, int add)
{
	const RtT *G = &T4[2], *D = &T4[3], *O = &T4[1 - slot];
	int nb = G->nd - 2;
	int64_t M = G->shape[nb], N = G->shape[nb + 1];
	int64_t K = slot ? D->shape[D->nd - 2] : D->shape[D->nd - 1];
	int64_t nbatch = G->n / (M * N), R = D->shape[D->nd - 2], C = D->shape[D->nd - 1];
	int64_t ndb = D->n / (R * C), inner = slot ? M : N;
	int64_t *match = (int64_t *)malloc(sizeof *match * (size_t)nbatch);
	rt_real *y = rt_scratch(R * C), *p = NULL, *q = NULL;
	rt_real *tg = rt_scratch(M * N), *to = rt_scratch(K * (slot ? M : N));
	rt_real *tn = rt_scratch(M * N), *tt = rt_scratch(M * (N > K ? N : K));

	if (!match)
		rt_die("out of memory (matmul scratch)");
	for (int64_t db = 0; db < ndb; db++) {
		int64_t nm = 0;
		for (int64_t yb = 0; yb < nbatch; yb++)
			if (rt_batch(yb, G->shape, nb, D->shape, D->nd - 2) == db)
				match[nm++] = yb;
		int64_t Tn = nm * inner;
		free(p);
		free(q);
		p = rt_scratch(R * Tn);
		q = rt_scratch(C * Tn);
		for (int64_t j = 0; j < nm; j++) {
			int64_t yb = match[j];
			int64_t ob = rt_batch(yb, G->shape, nb, O->shape, O->nd - 2);
			if (slot == 0) {        /* r = m, c = k, u = n */
				rt_read_run(G, yb * M * N, M * N, tg);
				rt_read_run(O, ob * K * N, K * N, to);
				for (int64_t r = 0; r < R; r++)
					memcpy(p + r * Tn + j * N, tg + r * N, sizeof *p * (size_t)N);
				for (int64_t c = 0; c < C; c++)
					memcpy(q + c * Tn + j * N, to + c * N, sizeof *q * (size_t)N);
			} else {                /* r = k, c = n, u = m */
				rt_read_run_t(O, ob * M * K, M, K, to, tt);
				for (int64_t r = 0; r < R; r++)
					memcpy(p + r * Tn + j * M, to + r * M, sizeof *p * (size_t)M);
				rt_read_run_t(G, yb * M * N, M, N, tn, tt);
				for (int64_t c = 0; c < C; c++)
					memcpy(q + c * Tn + j * M, tn + c * M, sizeof *q * (size_t)M);
			}
		}
		rt_dot_rows(p, q, R, C, Tn, y);
		rt_scatter(D, db * R * C, R * C, y, add);
	}
	free(match);
	free(p);
	free(q);
	free(y);
	free(tg);
	free(to);
	free(tn);
	free(tt);
}
#endif

/* T: a [..., M, K], b [..., K, N], y [..., M, N] */
RT_K
k_matmul_f(const RtT *T, int64_t n)
{
	const RtT *A = &T[0], *B = &T[1], *Y = &T[2];
	int64_t M = A->shape[A->nd - 2], K = A->shape[A->nd - 1], N = B->shape[B->nd - 1];
	RT_FOR(i, n) {
		int64_t nn = i % N, m = i / N % M, yb = i / (N * M);
		int64_t ab = rt_batch(yb, Y->shape, Y->nd - 2, A->shape, A->nd - 2);
		int64_t bb = rt_batch(yb, Y->shape, Y->nd - 2, B->shape, B->nd - 2);
		rt_real s = 0;
		for (int64_t k = 0; k < K; k++)
			s += rt_get(A, (ab * M + m) * K + k) * rt_get(B, (bb * K + k) * N + nn);
		rt_put(Y, i, s);
	}
}

RT_FN void
rt_f_matmul(RtT x, RtT w, RtT y)
{
	RtT a[3] = {x, w, y};
#if !defined(RT_GPU) && !defined(RT_NAIVE)
	rt_host_matmul_f(&a[0], &a[1], &a[2]);
	return;
#endif
	RT_GO(k_matmul_f, y.n)(rt_args(a, 3), y.n);
	rt_after();
}

/* T: a, b (the one not being differentiated), g [..., M, N], dst. slot 0:
 * da = g b^T, slot 1: db = a^T g, summed over broadcast batches. */
RT_K
k_matmul_b(const RtT *T, int64_t n, int slot, int add)
{
	const RtT *G = &T[2], *D = &T[3], *O = &T[1 - slot];
	int nb = G->nd - 2;
	int64_t M = G->shape[nb], N = G->shape[nb + 1];
	int64_t K = slot ? D->shape[D->nd - 2] : D->shape[D->nd - 1];
	int64_t nbatch = G->n / (M * N);
	RT_FOR(i, n) {
		int64_t c = i % D->shape[D->nd - 1], r = i / D->shape[D->nd - 1] % D->shape[D->nd - 2];
		int64_t db = i / (D->shape[D->nd - 1] * D->shape[D->nd - 2]);
		rt_real s = 0;
		for (int64_t yb = 0; yb < nbatch; yb++) {
			if (rt_batch(yb, G->shape, nb, D->shape, D->nd - 2) != db)
				continue;
			int64_t ob = rt_batch(yb, G->shape, nb, O->shape, O->nd - 2);
			if (slot == 0)          /* da[r=m, c=k] = sum_n g[m, n] b[k, n] */
				for (int64_t nn = 0; nn < N; nn++)
					s += rt_get(G, (yb * M + r) * N + nn) * rt_get(O, (ob * K + c) * N + nn);
			else                    /* db[r=k, c=n] = sum_m a[m, k] g[m, n] */
				for (int64_t m = 0; m < M; m++)
					s += rt_get(O, (ob * M + m) * K + r) * rt_get(G, (yb * M + m) * N + c);
		}
		rt_out(D, i, s, add);
	}
}

RT_FN void
rt_b_matmul(int slot, RtT x, RtT w, RtT g, RtT dst, int add)
{
	RtT a[4] = {x, w, g, dst};
#if !defined(RT_GPU) && !defined(RT_NAIVE)
	rt_host_matmul_b(a, slot, add);
	return;
#endif
	RT_GO(k_matmul_b, dst.n)(rt_args(a, 4), dst.n, slot, add);
	rt_after();
}

/* ------------------------------------------------------------ conv2d */

/* Per axis (H, W): strides, begin pads, dilations; groups. The end pads
 * are in the output's shape. conv1d runs these kernels with H of size 1. */
typedef struct RtConv { int64_t sh, sw, ph, pw, dh, dw, g; } RtConv;

/* T: x [N, C, H, W], w [O, C/g, KH, KW], y [N, O, OH, OW] */
RT_K
k_conv_f(const RtT *T, int64_t n, RtConv c)
{
	const RtT *X = &T[0], *Wt = &T[1], *Y = &T[2];
	int64_t C = X->shape[1], H = X->shape[2], W = X->shape[3];
	int64_t O = Wt->shape[0], Cg = Wt->shape[1], KH = Wt->shape[2], KW = Wt->shape[3];
	int64_t OH = Y->shape[2], OW = Y->shape[3];
	RT_FOR(i, n) {
		int64_t ow = i % OW, oh = i / OW % OH, o = i / (OW * OH) % O, b = i / (OW * OH * O);
		int64_t grp = o / (O / c.g);
		rt_real s = 0;
		for (int64_t ci = 0; ci < Cg; ci++)
			for (int64_t kh = 0; kh < KH; kh++)
				for (int64_t kw = 0; kw < KW; kw++) {
					int64_t h = oh * c.sh - c.ph + kh * c.dh, w = ow * c.sw - c.pw + kw * c.dw;
					if (h < 0 || h >= H || w < 0 || w >= W)
						continue;
					s += rt_get(X, ((b * C + grp * Cg + ci) * H + h) * W + w) *
					     rt_get(Wt, ((o * Cg + ci) * KH + kh) * KW + kw);
				}
		rt_put(Y, i, s);
	}
}

#if !defined(RT_GPU) && !defined(RT_NAIVE)
/* The host's conv2d without padding (every window in bounds, so nothing
 * is skipped): k_conv_f's forward and k_conv_b's weight gradient as
 * rt_dot_rows over im2col rows, the same sums in the same order. Padded
 * convolutions take the plain kernels. */
RT_FN int
rt_host_conv_ok(const RtT *X, const RtT *Wt, const RtT *Y, RtConv c)
{
	return c.ph == 0 && c.pw == 0 &&
	       (Y->shape[2] - 1) * c.sh + (Wt->shape[2] - 1) * c.dh < X->shape[2] &&
	       (Y->shape[3] - 1) * c.sw + (Wt->shape[3] - 1) * c.dw < X->shape[3];
}

/* rows[(oh, ow) or (b, oh, ow)][(ci, kh, kw)] of x (gathered in xs) for
 * the group's channels; b_only >= 0: that image only, rows (oh, ow);
 * else all images, rows (b, oh, ow), and the result transposed:
 * cols[(ci, kh, kw)][(b, oh, ow)]. */
RT_FN void
rt_im2col(const rt_real *xs, const RtT *X, const RtT *Wt, const RtT *Y, RtConv c,
          int64_t grp, int64_t b_only, rt_real *dst)
{
	int64_t C = X->shape[1], H = X->shape[2], W = X->shape[3];
	int64_t Cg = Wt->shape[1], KH = Wt->shape[2], KW = Wt->shape[3];
	int64_t OH = Y->shape[2], OW = Y->shape[3], Tk = Cg * KH * KW;
	int64_t b0 = b_only >= 0 ? b_only : 0, b1 = b_only >= 0 ? b_only + 1 : X->shape[0];
	int64_t npos = (b1 - b0) * OH * OW;

	for (int64_t b = b0; b < b1; b++)
		for (int64_t oh = 0; oh < OH; oh++)
			for (int64_t ow = 0; ow < OW; ow++) {
				int64_t pos = ((b - b0) * OH + oh) * OW + ow;
				for (int64_t ci = 0; ci < Cg; ci++)
					for (int64_t kh = 0; kh < KH; kh++)
						for (int64_t kw = 0; kw < KW; kw++) {
							int64_t t = (ci * KH + kh) * KW + kw;
							rt_real v = xs[((b * C + grp * Cg + ci) * H + oh * c.sh +
							                kh * c.dh) * W + ow * c.sw + kw * c.dw];
							if (b_only >= 0)
								dst[pos * Tk + t] = v;
							else
								dst[t * npos + pos] = v;
						}
			}
}

RT_FN void
rt_host_conv_f(const RtT *X, const RtT *Wt, const RtT *Y, RtConv c)
{
	int64_t N = X->shape[0], O = Wt->shape[0], Og = O / c.g;
	int64_t Tk = Wt->shape[1] * Wt->shape[2] * Wt->shape[3];
	int64_t OH = Y->shape[2], OW = Y->shape[3], P = OH * OW;
	rt_real *xs = rt_scratch(X->n), *ws = rt_scratch(Wt->n);
	rt_real *rows = rt_scratch(P * Tk), *y = rt_scratch(P * Og);

	rt_read_run(X, 0, X->n, xs);
	rt_read_run(Wt, 0, Wt->n, ws);
	for (int64_t b = 0; b < N; b++)
		for (int64_t grp = 0; grp < c.g; grp++) {
			rt_im2col(xs, X, Wt, Y, c, grp, b, rows);
			rt_dot_rows(rows, ws + grp * Og * Tk, P, Og, Tk, y);
			for (int64_t pos = 0; pos < P; pos++)
				for (int64_t ol = 0; ol < Og; ol++)
					rt_put(Y, (b * O + grp * Og + ol) * P + pos, y[pos * Og + ol]);
		}
	free(xs);
	free(ws);
	free(rows);
	free(y);
}

/* dw[o, (cc, kh, kw)] = sum over (b, oh, ow) of g[b, o, oh, ow] x[...] */
RT_FN void
rt_host_conv_dw(const RtT *X, const RtT *G, const RtT *D, RtConv c, int add)
{
	int64_t N = X->shape[0], O = D->shape[0], Og = O / c.g;
	int64_t Tk = D->shape[1] * D->shape[2] * D->shape[3];
	int64_t P = G->shape[2] * G->shape[3], T = N * P;
	rt_real *xs = rt_scratch(X->n), *gs = rt_scratch(G->n);
	rt_real *gr = rt_scratch(Og * T), *cols = rt_scratch(Tk * T), *y = rt_scratch(Og * Tk);

	rt_read_run(X, 0, X->n, xs);
	rt_read_run(G, 0, G->n, gs);
	for (int64_t grp = 0; grp < c.g; grp++) {
		for (int64_t ol = 0; ol < Og; ol++)
			for (int64_t b = 0; b < N; b++)
				memcpy(gr + ol * T + b * P, gs + (b * O + grp * Og + ol) * P,
				       sizeof *gr * (size_t)P);
		rt_im2col(xs, X, D, G, c, grp, -1, cols);
		rt_dot_rows(gr, cols, Og, Tk, T, y);
		for (int64_t i = 0; i < Og * Tk; i++)
			rt_out(D, grp * Og * Tk + i, y[i], add);
	}
	free(xs);
	free(gs);
	free(gr);
	free(cols);
	free(y);
}
#endif

RT_FN void
rt_f_conv2d(RtT x, RtT w, RtT y, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
            int64_t dh, int64_t dw, int64_t g)
{
	RtT a[3] = {x, w, y};
	RtConv c = {sh, sw, ph, pw, dh, dw, g};
#if !defined(RT_GPU) && !defined(RT_NAIVE)
	if (rt_host_conv_ok(&a[0], &a[1], &a[2], c)) {
		rt_host_conv_f(&a[0], &a[1], &a[2], c);
		return;
	}
#endif
	RT_GO(k_conv_f, y.n)(rt_args(a, 3), y.n, c);
	rt_after();
}

/* T: x, w (the saved one), g [N, O, OH, OW], dst (dx or dw). */
RT_K
k_conv_b(const RtT *T, int64_t n, RtConv c, int slot, int add)
{
	const RtT *G = &T[2], *D = &T[3], *X = slot ? &T[0] : D, *Wt = slot ? D : &T[1];
	int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
	int64_t O = Wt->shape[0], Cg = Wt->shape[1], KH = Wt->shape[2], KW = Wt->shape[3];
	int64_t OH = G->shape[2], OW = G->shape[3], Og = O / c.g;
	RT_FOR(i, n) {
		rt_real s = 0;
		if (slot == 0) {        /* dx[b, ci, h, w] */
			int64_t w = i % W, h = i / W % H, ci = i / (W * H) % C, b = i / (W * H * C);
			int64_t grp = ci / Cg, cc = ci % Cg;
			for (int64_t o = grp * Og; o < (grp + 1) * Og; o++)
				for (int64_t kh = 0; kh < KH; kh++)
					for (int64_t kw = 0; kw < KW; kw++) {
						int64_t th = h + c.ph - kh * c.dh, tw = w + c.pw - kw * c.dw;
						if (th < 0 || tw < 0 || th % c.sh || tw % c.sw)
							continue;
						int64_t oh = th / c.sh, ow = tw / c.sw;
						if (oh >= OH || ow >= OW)
							continue;
						s += rt_get(G, ((b * O + o) * OH + oh) * OW + ow) *
						     rt_get(Wt, ((o * Cg + cc) * KH + kh) * KW + kw);
					}
		} else {                /* dw[o, cc, kh, kw] */
			int64_t kw = i % KW, kh = i / KW % KH, cc = i / (KW * KH) % Cg, o = i / (KW * KH * Cg);
			int64_t ci = o / Og * Cg + cc;
			for (int64_t b = 0; b < N; b++)
				for (int64_t oh = 0; oh < OH; oh++)
					for (int64_t ow = 0; ow < OW; ow++) {
						int64_t h = oh * c.sh - c.ph + kh * c.dh, w = ow * c.sw - c.pw + kw * c.dw;
						if (h < 0 || h >= H || w < 0 || w >= W)
							continue;
						s += rt_get(G, ((b * O + o) * OH + oh) * OW + ow) *
						     rt_get(X, ((b * C + ci) * H + h) * W + w);
					}
		}
		rt_out(D, i, s, add);
	}
}

RT_FN void
rt_b_conv2d(int slot, RtT x, RtT w, RtT g, RtT dst, int add, int64_t sh, int64_t sw,
            int64_t ph, int64_t pw, int64_t dh, int64_t dw, int64_t gr)
{
	RtT a[4] = {x, w, g, dst};
	RtConv c = {sh, sw, ph, pw, dh, dw, gr};
#if !defined(RT_GPU) && !defined(RT_NAIVE)
	if (slot == 1 && rt_host_conv_ok(&a[0], &a[3], &a[2], c)) {
		rt_host_conv_dw(&a[0], &a[2], &a[3], c, add);
		return;
	}
#endif
	RT_GO(k_conv_b, dst.n)(rt_args(a, 4), dst.n, c, slot, add);
	rt_after();
}

/* ------------------------------------------------------------ attention */

/* Score of query row qi against key row kj, both [.., Dh], scaled. */
RT_DFN rt_real
rt_score(const RtT *Q, const RtT *K, int64_t qi, int64_t kj, int64_t Dh)
{
	rt_real s = 0;
	for (int64_t d = 0; d < Dh; d++)
		s += rt_get(Q, qi * Dh + d) * rt_get(K, kj * Dh + d);
	return s / rt_sqrt((rt_real)Dh);
}

RT_DFN rt_real
rt_dot(const RtT *A, int64_t ai, const RtT *B, int64_t bi, int64_t Dh)
{
	rt_real s = 0;
	for (int64_t d = 0; d < Dh; d++)
		s += rt_get(A, ai * Dh + d) * rt_get(B, bi * Dh + d);
	return s;
}

/* T: q, k, v, out, lse. One thread per query row; causal keeps keys j <= i. */
RT_K
k_attn_f(const RtT *T, int64_t rows, int causal)
{
	const RtT *Q = &T[0], *K = &T[1], *V = &T[2];
	int64_t S = Q->shape[2], Tk = K->shape[2], Dh = Q->shape[3];
	RT_FOR(r, rows) {
		rt_real acc[RT_MAXDH], m = -INFINITY, l = 0;
		int64_t i = r % S, bh = r / S, kend = causal && i + 1 < Tk ? i + 1 : Tk;
		for (int64_t d = 0; d < Dh; d++)
			acc[d] = 0;
		for (int64_t j = 0; j < kend; j++) {
			rt_real s = rt_score(Q, K, r, bh * Tk + j, Dh);
			if (s > m) {
				rt_real corr = rt_exp(m - s);
				l *= corr;
				for (int64_t d = 0; d < Dh; d++)
					acc[d] *= corr;
				m = s;
			}
			rt_real p = rt_exp(s - m);
			l += p;
			for (int64_t d = 0; d < Dh; d++)
				acc[d] += p * rt_get(V, (bh * Tk + j) * Dh + d);
		}
		for (int64_t d = 0; d < Dh; d++)
			rt_put(&T[3], r * Dh + d, acc[d] / l);
		rt_put(&T[4], r, m + rt_log(l));
	}
}

RT_FN void
rt_f_attention(RtT q, RtT k, RtT v, RtT y, RtT lse, int causal)
{
	RtT a[5] = {q, k, v, y, lse};
	int64_t rows = q.n / q.shape[3];
	if (q.shape[3] > RT_MAXDH)
		rt_die("attention head size above RT_MAXDH");
	RT_GO(k_attn_f, rows)(rt_args(a, 5), rows, causal);
	rt_after();
}

/* T: q, k, v, out, lse, g, dst. slot 0: one thread per query row (dq);
 * slots 1, 2: one thread per key row (dk, dv). */
RT_K
k_attn_b(const RtT *T, int64_t rows, int causal, int slot, int add)
{
	const RtT *Q = &T[0], *K = &T[1], *V = &T[2], *O = &T[3], *L = &T[4], *G = &T[5], *D = &T[6];
	int64_t S = Q->shape[2], Tk = K->shape[2], Dh = Q->shape[3];
	rt_real sc = 1 / rt_sqrt((rt_real)Dh);
	RT_FOR(r, rows) {
		rt_real acc[RT_MAXDH];
		int64_t own = slot ? r % Tk : r % S, bh = slot ? r / Tk : r / S;
		int64_t lo = slot == 0 ? 0 : causal ? own : 0;
		int64_t hi = slot == 0 ? (causal && own + 1 < Tk ? own + 1 : Tk) : S;
		for (int64_t d = 0; d < Dh; d++)
			acc[d] = 0;
		for (int64_t x = lo; x < hi; x++) {
			int64_t qi = slot ? bh * S + x : r, kj = slot ? r : bh * Tk + x;
			rt_real p = rt_exp(rt_score(Q, K, qi, kj, Dh) - rt_get(L, qi));
			if (slot == 2) {
				for (int64_t d = 0; d < Dh; d++)
					acc[d] += p * rt_get(G, qi * Dh + d);
				continue;
			}
			rt_real ds = p * (rt_dot(G, qi, V, kj, Dh) - rt_dot(G, qi, O, qi, Dh)) * sc;
			for (int64_t d = 0; d < Dh; d++)
				acc[d] += ds * (slot ? rt_get(Q, qi * Dh + d) : rt_get(K, kj * Dh + d));
		}
		for (int64_t d = 0; d < Dh; d++)
			rt_out(D, r * Dh + d, acc[d], add);
	}
}

RT_FN void
rt_b_attention(int slot, RtT q, RtT k, RtT v, RtT y, RtT lse, RtT g, RtT dst,
               int add, int causal)
{
	RtT a[7] = {q, k, v, y, lse, g, dst};
	int64_t rows = dst.n / dst.shape[3];
	RT_GO(k_attn_b, rows)(rt_args(a, 7), rows, causal, slot, add);
	rt_after();
}

/* ------------------------------------------------------------ norms */

#define RT_EPS ((rt_real)1e-5)

/* T: x, g, b, y, mean, rstd over rows of the last axis. rms: no mean, no b. */
RT_K
k_norm_f(const RtT *T, int64_t rows, int rms)
{
	const RtT *X = &T[0];
	int64_t C = X->shape[X->nd - 1];
	RT_FOR(r, rows) {
		rt_real mean = 0, var = 0;
		for (int64_t c = 0; c < C; c++)
			mean += rt_get(X, r * C + c);
		mean = rms ? 0 : mean / C;
		for (int64_t c = 0; c < C; c++) {
			rt_real x = rt_get(X, r * C + c) - mean;
			var += x * x;
		}
		rt_real rstd = 1 / rt_sqrt(var / C + RT_EPS);
		for (int64_t c = 0; c < C; c++) {
			rt_real xh = (rt_get(X, r * C + c) - mean) * rstd;
			rt_put(&T[3], r * C + c, xh * rt_get(&T[1], c) + (rms ? 0 : rt_get(&T[2], c)));
		}
		if (!rms)
			rt_put(&T[4], r, mean);
		rt_put(&T[5], r, rstd);
	}
}

RT_FN void
rt_f_layernorm(RtT x, RtT g, RtT b, RtT y, RtT mean, RtT rstd)
{
	RtT a[6] = {x, g, b, y, mean, rstd};
	int64_t rows = x.n / x.shape[x.nd - 1];
	RT_GO(k_norm_f, rows)(rt_args(a, 6), rows, 0);
	rt_after();
}

RT_FN void
rt_f_rmsnorm(RtT x, RtT g, RtT y, RtT rstd)
{
	RtT a[6] = {x, g, rt_none(), y, rt_none(), rstd};
	int64_t rows = x.n / x.shape[x.nd - 1];
	RT_GO(k_norm_f, rows)(rt_args(a, 6), rows, 1);
	rt_after();
}

/* T: x, gamma, mean, rstd, g, dst. slot 0: dx by row; slot 1: dgamma and
 * slot 2: dbeta by column, rows summed in order. */
RT_K
k_norm_b(const RtT *T, int64_t n, int rms, int slot, int add)
{
	const RtT *X = &T[0], *Gm = &T[1], *G = &T[4], *D = &T[5];
	int64_t C = X->shape[X->nd - 1], R = X->n / C;
	RT_FOR(i, n) {
		if (slot == 0) {
			rt_real m1 = 0, m2 = 0, mean = rms ? 0 : rt_get(&T[2], i), rstd = rt_get(&T[3], i);
			for (int64_t c = 0; c < C; c++) {
				rt_real xh = (rt_get(X, i * C + c) - mean) * rstd;
				rt_real dxh = rt_get(G, i * C + c) * rt_get(Gm, c);
				m1 += dxh;
				m2 += dxh * xh;
			}
			m1 = rms ? 0 : m1 / C;
			m2 /= C;
			for (int64_t c = 0; c < C; c++) {
				rt_real xh = (rt_get(X, i * C + c) - mean) * rstd;
				rt_real dxh = rt_get(G, i * C + c) * rt_get(Gm, c);
				rt_out(D, i * C + c, rstd * (dxh - m1 - xh * m2), add);
			}
			continue;
		}
		rt_real s = 0;
		for (int64_t r = 0; r < R; r++) {
			rt_real g = rt_get(G, r * C + i);
			if (slot == 1)
				g *= (rt_get(X, r * C + i) - (rms ? 0 : rt_get(&T[2], r))) * rt_get(&T[3], r);
			s += g;
		}
		rt_out(D, i, s, add);
	}
}

RT_FN void
rt_b_norm(int rms, int slot, RtT x, RtT gamma, RtT mean, RtT rstd, RtT g, RtT dst, int add)
{
	RtT a[6] = {x, gamma, mean, rstd, g, dst};
	int64_t n = slot ? dst.n : x.n / x.shape[x.nd - 1];
	RT_GO(k_norm_b, n)(rt_args(a, 6), n, rms, slot, add);
	rt_after();
}

/* Batchnorm over axis 1: channel c holds elements (b * C + c) * R + r. */
RT_DFN int64_t
rt_bn_at(const RtT *X, int64_t c, int64_t k)
{
	int64_t C = X->shape[1], R = X->n / (X->shape[0] * C);
	return (k / R * C + c) * R + k % R;
}

/* T: x, g, b, y, mean, rstd; one thread per channel. */
RT_K
k_bn_f(const RtT *T, int64_t C)
{
	const RtT *X = &T[0];
	int64_t cnt = X->n / C;
	RT_FOR(c, C) {
		rt_real mean = 0, var = 0;
		for (int64_t k = 0; k < cnt; k++)
			mean += rt_get(X, rt_bn_at(X, c, k));
		mean /= cnt;
		for (int64_t k = 0; k < cnt; k++) {
			rt_real x = rt_get(X, rt_bn_at(X, c, k)) - mean;
			var += x * x;
		}
		rt_real rstd = 1 / rt_sqrt(var / cnt + RT_EPS);
		for (int64_t k = 0; k < cnt; k++) {
			int64_t j = rt_bn_at(X, c, k);
			rt_put(&T[3], j, (rt_get(X, j) - mean) * rstd * rt_get(&T[1], c) + rt_get(&T[2], c));
		}
		rt_put(&T[4], c, mean);
		rt_put(&T[5], c, rstd);
	}
}

RT_FN void
rt_f_batchnorm(RtT x, RtT g, RtT b, RtT y, RtT mean, RtT rstd)
{
	RtT a[6] = {x, g, b, y, mean, rstd};
	RT_GO(k_bn_f, x.shape[1])(rt_args(a, 6), x.shape[1]);
	rt_after();
}

/* T: x, gamma, mean, rstd, g, dst; one thread per channel for every slot. */
RT_K
k_bn_b(const RtT *T, int64_t C, int slot, int add)
{
	const RtT *X = &T[0], *G = &T[4], *D = &T[5];
	int64_t cnt = X->n / C;
	RT_FOR(c, C) {
		rt_real mean = rt_get(&T[2], c), rstd = rt_get(&T[3], c), m1 = 0, m2 = 0;
		rt_real gm = rt_get(&T[1], c);
		for (int64_t k = 0; k < cnt; k++) {
			int64_t j = rt_bn_at(X, c, k);
			rt_real xh = (rt_get(X, j) - mean) * rstd, g = rt_get(G, j);
			m1 += slot == 0 ? g * gm : g;
			m2 += slot == 0 ? g * gm * xh : g * xh;
		}
		if (slot) {
			rt_out(D, c, slot == 1 ? m2 : m1, add);
			continue;
		}
		m1 /= cnt;
		m2 /= cnt;
		for (int64_t k = 0; k < cnt; k++) {
			int64_t j = rt_bn_at(X, c, k);
			rt_real xh = (rt_get(X, j) - mean) * rstd;
			rt_out(D, j, rstd * (rt_get(G, j) * gm - m1 - xh * m2), add);
		}
	}
}

RT_FN void
rt_b_batchnorm(int slot, RtT x, RtT gamma, RtT mean, RtT rstd, RtT g, RtT dst, int add)
{
	RtT a[6] = {x, gamma, mean, rstd, g, dst};
	RT_GO(k_bn_b, x.shape[1])(rt_args(a, 6), x.shape[1], slot, add);
	rt_after();
}

/* ------------------------------------------------------------ softmax */

/* Rows along axis: element l of row (o, in) is (o * L + l) * inner + in. */
typedef struct RtAxis { int64_t L, inner; } RtAxis;

RT_FN RtAxis
rt_axis(RtT t, int axis)
{
	RtAxis a = {t.shape[axis], 1};
	for (int d = axis + 1; d < t.nd; d++)
		a.inner *= t.shape[d];
	return a;
}

RT_DFN int64_t
rt_row(RtAxis a, int64_t r, int64_t l)
{
	return (r / a.inner * a.L + l) * a.inner + r % a.inner;
}

/* T: x, y */
RT_K
k_softmax_f(const RtT *T, int64_t rows, RtAxis a, int lg)
{
	RT_FOR(r, rows) {
		rt_real m = -INFINITY, s = 0;
		for (int64_t l = 0; l < a.L; l++) {
			rt_real x = rt_get(&T[0], rt_row(a, r, l));
			m = x > m ? x : m;
		}
		for (int64_t l = 0; l < a.L; l++)
			s += rt_exp(rt_get(&T[0], rt_row(a, r, l)) - m);
		for (int64_t l = 0; l < a.L; l++) {
			rt_real x = rt_get(&T[0], rt_row(a, r, l)) - m;
			rt_put(&T[1], rt_row(a, r, l), lg ? x - rt_log(s) : rt_exp(x) / s);
		}
	}
}

RT_FN void
rt_f_softmax(RtT x, RtT y, int axis, int lg)
{
	RtT t[2] = {x, y};
	RtAxis a = rt_axis(x, axis);
	int64_t rows = x.n / (a.L ? a.L : 1);
	RT_GO(k_softmax_f, rows)(rt_args(t, 2), rows, a, lg);
	rt_after();
}

/* T: y, g, dst */
RT_K
k_softmax_b(const RtT *T, int64_t rows, RtAxis a, int lg, int add)
{
	RT_FOR(r, rows) {
		rt_real s = 0;
		for (int64_t l = 0; l < a.L; l++) {
			int64_t j = rt_row(a, r, l);
			s += lg ? rt_get(&T[1], j) : rt_get(&T[1], j) * rt_get(&T[0], j);
		}
		for (int64_t l = 0; l < a.L; l++) {
			int64_t j = rt_row(a, r, l);
			rt_real y = rt_get(&T[0], j), g = rt_get(&T[1], j);
			rt_out(&T[2], j, lg ? g - rt_exp(y) * s : y * (g - s), add);
		}
	}
}

RT_FN void
rt_b_softmax(RtT y, RtT g, RtT dst, int add, int axis, int lg)
{
	RtT t[3] = {y, g, dst};
	RtAxis a = rt_axis(y, axis);
	int64_t rows = y.n / (a.L ? a.L : 1);
	RT_GO(k_softmax_b, rows)(rt_args(t, 3), rows, a, lg, add);
	rt_after();
}

/* ------------------------------------------------------------ pooling */

/* Per axis (H, W): window, stride, begin and end pads, dilation (max
 * only). */
typedef struct RtPool { int64_t kh, kw, sh, sw, ph, pw, eh, ew, dh, dw; } RtPool;

/* An average's divisor: the window clipped to the padded input (PyTorch's
 * count_include_pad), KH*KW except for a ceil_mode window past the end
 * pad. */
RT_DFN rt_real
rt_pool_div(RtPool pl, int64_t oh, int64_t ow, int64_t H, int64_t W)
{
	int64_t h0 = oh * pl.sh - pl.ph, w0 = ow * pl.sw - pl.pw;
	int64_t h1 = h0 + pl.kh < H + pl.eh ? h0 + pl.kh : H + pl.eh;
	int64_t w1 = w0 + pl.kw < W + pl.ew ? w0 + pl.kw : W + pl.ew;
	return (rt_real)((h1 - h0) * (w1 - w0));
}

/* Whether position h is tap k of the window that starts at h0, dilation d. */
RT_DFN int
rt_pool_tap(int64_t h, int64_t h0, int64_t k, int64_t d)
{
	return h >= h0 && (h - h0) % d == 0 && (h - h0) / d < k;
}

/* T: x, y, indices (max) -- padding never wins a max and counts as zero in
 * an average. indices: h * W + w within the plane. */
RT_K
k_pool_f(const RtT *T, int64_t n, RtPool pl, int avg)
{
	const RtT *X = &T[0], *Y = &T[1];
	int64_t H = X->shape[2], W = X->shape[3], OH = Y->shape[2], OW = Y->shape[3];
	RT_FOR(i, n) {
		int64_t ow = i % OW, oh = i / OW % OH, plane = i / (OW * OH);
		rt_real best = -INFINITY, s = 0;
		int64_t arg = 0;
		for (int64_t kh = 0; kh < pl.kh; kh++)
			for (int64_t kw = 0; kw < pl.kw; kw++) {
				int64_t h = oh * pl.sh - pl.ph + kh * pl.dh, w = ow * pl.sw - pl.pw + kw * pl.dw;
				if (h < 0 || h >= H || w < 0 || w >= W)
					continue;
				rt_real x = rt_get(X, (plane * H + h) * W + w);
				s += x;
				if (x > best) {
					best = x;
					arg = h * W + w;
				}
			}
		rt_put(Y, i, avg ? s / rt_pool_div(pl, oh, ow, H, W) : best);
		if (!avg)
			rt_put(&T[2], i, (rt_real)arg);
	}
}

RT_FN void
rt_f_pool(RtT x, RtT y, RtT idx, int avg, int64_t kh, int64_t kw, int64_t sh, int64_t sw,
          int64_t ph, int64_t pw, int64_t eh, int64_t ew, int64_t dh, int64_t dw)
{
	RtT a[3] = {x, y, idx};
	RtPool pl = {kh, kw, sh, sw, ph, pw, eh, ew, dh, dw};
	RT_GO(k_pool_f, y.n)(rt_args(a, 3), y.n, pl, avg);
	rt_after();
}

/* T: indices (max) or none, g, dst. Every window that covers (h, w). */
RT_K
k_pool_b(const RtT *T, int64_t n, RtPool pl, int avg, int add)
{
	const RtT *G = &T[1], *D = &T[2];
	int64_t H = D->shape[2], W = D->shape[3], OH = G->shape[2], OW = G->shape[3];
	RT_FOR(i, n) {
		int64_t w = i % W, h = i / W % H, plane = i / (W * H);
		rt_real s = 0;
		for (int64_t oh = 0; oh < OH; oh++) {
			if (!rt_pool_tap(h, oh * pl.sh - pl.ph, pl.kh, pl.dh))
				continue;
			for (int64_t ow = 0; ow < OW; ow++) {
				int64_t j = (plane * OH + oh) * OW + ow;
				if (!rt_pool_tap(w, ow * pl.sw - pl.pw, pl.kw, pl.dw))
					continue;
				if (avg)
					s += rt_get(G, j) / rt_pool_div(pl, oh, ow, H, W);
				else if (rt_geti(&T[0], j) == h * W + w)
					s += rt_get(G, j);
			}
		}
		rt_out(D, i, s, add);
	}
}

RT_FN void
rt_b_pool(RtT idx, RtT g, RtT dst, int add, int avg, int64_t kh, int64_t kw, int64_t sh,
          int64_t sw, int64_t ph, int64_t pw, int64_t eh, int64_t ew, int64_t dh, int64_t dw)
{
	RtT a[3] = {idx, g, dst};
	RtPool pl = {kh, kw, sh, sw, ph, pw, eh, ew, dh, dw};
	RT_GO(k_pool_b, dst.n)(rt_args(a, 3), dst.n, pl, avg, add);
	rt_after();
}

/* Global average pool [N, C, H, W] -> [N, C] and nearest upsampling; T: src, dst */
RT_K
k_gap_f(const RtT *T, int64_t n)
{
	int64_t hw = T[0].n / n;
	RT_FOR(i, n) {
		rt_real s = 0;
		for (int64_t k = 0; k < hw; k++)
			s += rt_get(&T[0], i * hw + k);
		rt_put(&T[1], i, s / (rt_real)hw);
	}
}

RT_K
k_gap_b(const RtT *T, int64_t n, int add)
{
	int64_t hw = n / T[0].n;
	RT_FOR(i, n) rt_out(&T[1], i, rt_get(&T[0], T[0].dt == RT_DT_ONE ? 0 : i / hw) / (rt_real)hw, add);
}

RT_FN void
rt_f_gap(RtT x, RtT y)
{
	RtT a[2] = {x, y};
	RT_GO(k_gap_f, y.n)(rt_args(a, 2), y.n);
	rt_after();
}

RT_FN void
rt_b_gap(RtT g, RtT dst, int add)
{
	RtT a[2] = {g, dst};
	RT_GO(k_gap_b, dst.n)(rt_args(a, 2), dst.n, add);
	rt_after();
}

/* T: x [N, C, H, W], y [N, C, H*s, W*s] (forward) or g, dst (backward) */
RT_K
k_upsample(const RtT *T, int64_t n, int64_t sc, int bwd, int add)
{
	const RtT *Big = bwd ? &T[0] : &T[1], *D = &T[1];
	int64_t OW = Big->shape[3], OH = Big->shape[2], W = OW / sc, H = OH / sc;
	RT_FOR(i, n) {
		if (!bwd) {
			int64_t ow = i % OW, oh = i / OW % OH, pl = i / (OW * OH);
			rt_put(D, i, rt_get(&T[0], (pl * H + oh / sc) * W + ow / sc));
			continue;
		}
		int64_t w = i % W, h = i / W % H, pl = i / (W * H);
		rt_real s = 0;
		for (int64_t a = 0; a < sc; a++)
			for (int64_t b = 0; b < sc; b++)
				s += rt_get(Big, (pl * OH + h * sc + a) * OW + w * sc + b);
		rt_out(D, i, s, add);
	}
}

RT_FN void
rt_upsample(RtT src, RtT dst, int64_t sc, int bwd, int add)
{
	RtT a[2] = {src, dst};
	RT_GO(k_upsample, dst.n)(rt_args(a, 2), dst.n, sc, bwd, add);
	rt_after();
}

/* ------------------------------------------------------------ reductions */

/* T: x, y. Sum (or mean) over one axis, or over everything (one thread). */
RT_K
k_sum_f(const RtT *T, int64_t n, RtAxis a, int mean)
{
	RT_FOR(r, n) {
		rt_real s = 0;
		for (int64_t l = 0; l < a.L; l++)
			s += rt_get(&T[0], rt_row(a, r, l));
		rt_put(&T[1], r, mean ? s / (rt_real)a.L : s);
	}
}

RT_FN void
rt_f_sum(RtT x, RtT y, int axis, int mean)
{
	RtT t[2] = {x, y};
	RtAxis a = {x.n, 1};
	if (axis >= 0)
		a = rt_axis(x, axis);
	RT_GO(k_sum_f, y.n)(rt_args(t, 2), y.n, a, mean);
	rt_after();
}

/* T: g, dst */
RT_K
k_sum_b(const RtT *T, int64_t n, RtAxis a, int mean, int add)
{
	RT_FOR(i, n) {
		int64_t r = i / (a.L * a.inner) * a.inner + i % a.inner;
		rt_real g = rt_get(&T[0], T[0].dt == RT_DT_ONE ? 0 : r);
		rt_out(&T[1], i, mean ? g / (rt_real)a.L : g, add);
	}
}

RT_FN void
rt_b_sum(RtT g, RtT dst, int add, int axis, int mean)
{
	RtT t[2] = {g, dst};
	RtAxis a = {dst.n, 1};
	if (axis >= 0)
		a = rt_axis(dst, axis);
	RT_GO(k_sum_b, dst.n)(rt_args(t, 2), dst.n, a, mean, add);
	rt_after();
}

/* ------------------------------------------------------------ losses */

/* T: logits, labels, loss, lsm. One thread per row for lsm, then one thread
 * sums the rows in order. Labels outside [0, C) contribute nothing. */
RT_K
k_xent_rows(const RtT *T, int64_t rows)
{
	RtAxis a = {T[0].shape[T[0].nd - 1], 1};
	RT_FOR(r, rows) {
		rt_real m = -INFINITY, s = 0;
		for (int64_t l = 0; l < a.L; l++) {
			rt_real x = rt_get(&T[0], r * a.L + l);
			m = x > m ? x : m;
		}
		for (int64_t l = 0; l < a.L; l++)
			s += rt_exp(rt_get(&T[0], r * a.L + l) - m);
		for (int64_t l = 0; l < a.L; l++)
			rt_put(&T[3], r * a.L + l, rt_get(&T[0], r * a.L + l) - m - rt_log(s));
	}
}

RT_K
k_xent_loss(const RtT *T, int64_t rows)
{
	int64_t C = T[0].shape[T[0].nd - 1];
	RT_FOR(i, 1) {
		rt_real s = 0;
		for (int64_t r = 0; r < rows; r++) {
			int64_t lab = rt_geti(&T[1], r);
			if (lab >= 0 && lab < C)
				s -= rt_get(&T[3], r * C + lab);
		}
		rt_put(&T[2], i, s / (rt_real)rows);
	}
}

RT_FN void
rt_f_xent(RtT logits, RtT labels, RtT y, RtT lsm)
{
	RtT a[4] = {logits, labels, y, lsm};
	int64_t rows = logits.n / logits.shape[logits.nd - 1];
	const RtT *d = rt_args(a, 4);
	RT_GO(k_xent_rows, rows)(d, rows);
	rt_after();
	RT_GO(k_xent_loss, 1)(d, rows);
	rt_after();
}

/* T: lsm, labels, g, dst */
RT_K
k_xent_b(const RtT *T, int64_t n, int add)
{
	int64_t C = T[3].shape[T[3].nd - 1], rows = n / C;
	RT_FOR(i, n) {
		int64_t lab = rt_geti(&T[1], i / C);
		rt_real p = rt_exp(rt_get(&T[0], i)) - (lab == i % C ? 1 : 0);
		rt_out(&T[3], i, p * rt_get(&T[2], 0) / (rt_real)rows, add);
	}
}

RT_FN void
rt_b_xent(RtT lsm, RtT labels, RtT g, RtT dst, int add)
{
	RtT a[4] = {lsm, labels, g, dst};
	RT_GO(k_xent_b, dst.n)(rt_args(a, 4), dst.n, add);
	rt_after();
}

/* T: a, b, y: mean of squared differences, one thread, in order */
RT_K
k_mse_f(const RtT *T, int64_t n)
{
	RT_FOR(i, 1) {
		rt_real s = 0;
		for (int64_t k = 0; k < n; k++) {
			rt_real d = rt_get(&T[0], k) - rt_get(&T[1], k);
			s += d * d;
		}
		rt_put(&T[2], i, s / (rt_real)n);
	}
}

RT_FN void
rt_f_mse(RtT x, RtT y, RtT out)
{
	RtT a[3] = {x, y, out};
	RT_GO(k_mse_f, 1)(rt_args(a, 3), x.n);
	rt_after();
}

/* T: a, b, g, dst */
RT_K
k_mse_b(const RtT *T, int64_t n, int slot, int add)
{
	RT_FOR(i, n) {
		rt_real d = 2 * (rt_get(&T[0], i) - rt_get(&T[1], i)) / (rt_real)n * rt_get(&T[2], 0);
		rt_out(&T[3], i, slot ? -d : d, add);
	}
}

RT_FN void
rt_b_mse(int slot, RtT x, RtT y, RtT g, RtT dst, int add)
{
	RtT a[4] = {x, y, g, dst};
	RT_GO(k_mse_b, dst.n)(rt_args(a, 4), dst.n, slot, add);
	rt_after();
}

/* ------------------------------------------------------------ embedding */

/* T: idx, table [V, D], y [..., D]. Indices outside [0, V) read zeros. */
RT_K
k_embed_f(const RtT *T, int64_t n)
{
	int64_t V = T[1].shape[0], D = T[1].shape[1];
	RT_FOR(i, n) {
		int64_t v = rt_geti(&T[0], i / D);
		rt_put(&T[2], i, v >= 0 && v < V ? rt_get(&T[1], v * D + i % D) : 0);
	}
}

RT_FN void
rt_f_embedding(RtT idx, RtT table, RtT y)
{
	RtT a[3] = {idx, table, y};
	RT_GO(k_embed_f, y.n)(rt_args(a, 3), y.n);
	rt_after();
}

/* T: idx, g, dst [V, D]. One thread per table row scans every position in
 * order: deterministic without atomics. */
RT_K
k_embed_b(const RtT *T, int64_t V, int add)
{
	int64_t D = T[2].shape[1], P = T[0].n;
	RT_FOR(v, V) {
		if (!add)
			for (int64_t d = 0; d < D; d++)
				rt_put(&T[2], v * D + d, 0);
		for (int64_t p = 0; p < P; p++)
			if (rt_geti(&T[0], p) == v)
				for (int64_t d = 0; d < D; d++)
					rt_put(&T[2], v * D + d, rt_get(&T[2], v * D + d) + rt_get(&T[1], p * D + d));
	}
}

RT_FN void
rt_b_embedding(RtT idx, RtT g, RtT dst, int add)
{
	RtT a[3] = {idx, g, dst};
	RT_GO(k_embed_b, dst.shape[0])(rt_args(a, 3), dst.shape[0], add);
	rt_after();
}

/* ------------------------------------------------------------ custom ops */

/* The placeholder for a custom op: y += c * a[i mod n(a)] for each floating
 * argument a (first: y = ...), so that its backward, g summed over the
 * elements that read a[j], is its true gradient. T: a, y */
RT_K
k_custom_f(const RtT *T, int64_t n, int first)
{
	RT_FOR(i, n) rt_put(&T[1], i, (first ? 0 : rt_get(&T[1], i)) +
	                    (rt_real)0.5 * rt_get(&T[0], i % T[0].n));
}

RT_FN void
rt_f_custom(RtT x, RtT y, int first)
{
	RtT a[2] = {x, y};
	RT_GO(k_custom_f, y.n)(rt_args(a, 2), y.n, first);
	rt_after();
}

/* T: g, dst */
RT_K
k_custom_b(const RtT *T, int64_t n, int add)
{
	int64_t ny = T[0].dt == RT_DT_ONE ? 1 : T[0].n;
	RT_FOR(j, n) {
		rt_real s = 0;
		for (int64_t i = j; i < ny; i += n)
			s += rt_get(&T[0], i);
		rt_out(&T[1], j, (rt_real)0.5 * s, add);
	}
}

RT_FN void
rt_b_custom(RtT g, RtT dst, int add)
{
	RtT a[2] = {g, dst};
	RT_GO(k_custom_b, dst.n)(rt_args(a, 2), dst.n, add);
	rt_after();
}

/* ------------------------------------------------------------ init, checks */

/* Params and float inputs: [-0.1, 0.1); integer inputs: [0, range). */
RT_K
k_init(const RtT *T, int64_t n, uint64_t key, int64_t range)
{
	RT_FOR(i, n) {
		if (range > 0)
			rt_put(&T[0], i, (rt_real)(rt_hash(key, (uint64_t)i) % (uint64_t)range));
		else
			rt_put(&T[0], i, (rt_real)0.2 * rt_unit(key, (uint64_t)i) - (rt_real)0.1);
	}
}

RT_FN void
rt_init(RtT t, uint64_t key, int64_t range)
{
	RT_GO(k_init, t.n)(rt_args(&t, 1), t.n, key, range);
	rt_after();
}

/* sum and position-weighted sum of t, in element order, in double */
RT_K
k_cksum(const RtT *T, int64_t n, double *out)
{
	RT_FOR(i, 1) {
		double s = 0, w = 0;
		for (int64_t k = 0; k < n; k++) {
			double v = (double)rt_get(&T[0], k);
			s += v;
			w += v * (double)(1 + k % 7);
		}
		out[i] = s;
		out[i + 1] = w;
	}
}

/* A param's finite-difference direction: another hash of its elements. */
RT_K
k_perturb(const RtT *T, int64_t n, uint64_t key, double eps)
{
	RT_FOR(i, n) rt_put(&T[0], i, rt_get(&T[0], i) + (rt_real)eps *
	                    (2 * rt_unit(~key, (uint64_t)i) - 1));
}

/* sum over i of direction[i] * grad[i], in order, in double */
RT_K
k_dirgrad(const RtT *T, int64_t n, uint64_t key, double *out)
{
	RT_FOR(i, 1) {
		double s = 0;
		for (int64_t k = 0; k < n; k++)
			s += (double)rt_get(&T[0], k) * (double)(2 * rt_unit(~key, (uint64_t)k) - 1);
		out[i] = s;
	}
}

/* FNV-1a of a tensor id: the init key, stable across schedules. */
RT_FN uint64_t
rt_key(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* ------------------------------------------------------------ memory */

static int rt_arena_mode;
static unsigned char *rt_arena;
static int64_t rt_arena_size;
static int64_t rt_live, rt_peak, rt_peak_step = -1, rt_bad = -1, rt_step_now;
#ifdef RT_GPU
static int64_t rt_dev_base, rt_dev_peak;
#endif
static double rt_loss_value = NAN;
static double rt_fd_eps, rt_dirsum;
static unsigned char *rt_tblock;
static int64_t rt_tbytes, rt_toff;
/* Data parallelism (runtime_dist.h): this rank, the rank count, the rank
 * whose data the inputs hold (--data-rank R runs rank R's data in one
 * process), the prefix of every line a rank prints, and the bytes of the
 * buffers offloaded to the host, which the device figures leave out. */
static int rt_rank, rt_nranks = 1;
static int64_t rt_data_rank;
static char rt_who[32];
static int64_t rt_host_bytes;

/* The registry of live raw allocations: an open-addressing set of
 * pointers (deleted slots hold RT_GONE), so that rt_finish can free what
 * the program still holds (params, persistent buffers, outputs). */
#define RT_GONE ((void *)&rt_reg_n)
static void **rt_reg;
static int64_t rt_reg_cap, rt_reg_n, rt_reg_used;

RT_FN int64_t
rt_reg_slot(void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
	return (int64_t)(h >> 20) & (rt_reg_cap - 1);
}

RT_FN void
rt_reg_put(void *p)
{
	if (2 * (rt_reg_used + 1) > rt_reg_cap) {       /* rebuild, twice as large */
		void **old = rt_reg;
		int64_t oldcap = rt_reg_cap;
		rt_reg_cap = rt_reg_cap ? 2 * rt_reg_cap : 64;
		while (4 * rt_reg_n > rt_reg_cap)
			rt_reg_cap *= 2;
		rt_reg = (void **)calloc((size_t)rt_reg_cap, sizeof *rt_reg);
		if (!rt_reg)
			rt_die("out of memory");
		rt_reg_n = rt_reg_used = 0;
		for (int64_t i = 0; i < oldcap; i++)
			if (old[i] && old[i] != RT_GONE)
				rt_reg_put(old[i]);
		free(old);
	}
	int64_t i = rt_reg_slot(p);
	while (rt_reg[i])
		i = (i + 1) & (rt_reg_cap - 1);
	rt_reg[i] = p;
	rt_reg_n++;
	rt_reg_used++;
}

RT_FN void
rt_reg_del(void *p)
{
	int64_t i = rt_reg_slot(p);
	while (rt_reg[i] != p) {
		if (!rt_reg[i])
			rt_die("freeing a buffer that is not allocated");
		i = (i + 1) & (rt_reg_cap - 1);
	}
	rt_reg[i] = RT_GONE;
	rt_reg_n--;
}

RT_FN void *
rt_raw_alloc(int64_t bytes)
{
	void *p = NULL;
#ifdef RT_GPU
	rt_cuda(cudaMalloc(&p, (size_t)(bytes ? bytes : 1)), "cudaMalloc");
#else
	p = malloc((size_t)(bytes ? bytes : 1));
	if (!p)
		rt_die("out of memory");
#endif
	rt_reg_put(p);
	return p;
}

RT_FN void
rt_raw_free(void *p)
{
	rt_reg_del(p);
#ifdef RT_GPU
	rt_cuda(cudaFree(p), "cudaFree");
#else
	free(p);
#endif
}

/* Frees every registered allocation (and the registry). */
RT_FN void
rt_free_all(void)
{
	for (int64_t i = 0; i < rt_reg_cap; i++)
		if (rt_reg[i] && rt_reg[i] != RT_GONE) {
#ifdef RT_GPU
			cudaFree(rt_reg[i]);
#else
			free(rt_reg[i]);
#endif
		}
	free(rt_reg);
	rt_reg = NULL;
	rt_reg_cap = rt_reg_n = rt_reg_used = 0;
#ifdef RT_GPU
	cudaFree(rt_dargs);
#endif
}

/* Counted allocation: tracked mode asks the allocator for every buffer,
 * arena mode hands out the planned offset in the one allocation made at
 * start (a buffer of bytes > 0 with no offset is an error there); both
 * count the same bytes. */
RT_FN void *
rt_alloc(int64_t bytes, int64_t offset)
{
	rt_live += bytes;
	if (!rt_arena_mode)
		return rt_raw_alloc(bytes);
	if (offset < 0 && bytes > 0)
		rt_die("arena mode: a buffer has no planned offset");
	if (offset + bytes > rt_arena_size)
		rt_die("arena mode: a buffer ends past the arena");
	return rt_arena + (offset > 0 ? offset : 0);
}

RT_FN void
rt_release(void *p, int64_t bytes, int64_t offset)
{
	(void)offset;
	rt_live -= bytes;
	if (!rt_arena_mode)
		rt_raw_free(p);
}

RT_FN void
rt_device_sample(void)
{
#ifdef RT_GPU
	size_t fr, tot;
	rt_cuda(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
	if ((int64_t)(tot - fr) - rt_dev_base > rt_dev_peak)
		rt_dev_peak = (int64_t)(tot - fr) - rt_dev_base;
#endif
}

RT_FN void
rt_start(int argc, char **argv, int64_t arena_bytes)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--arena"))
			rt_arena_mode = 1;
		else if (!strcmp(argv[i], "--tracked"))
			rt_arena_mode = 0;
		else if (!strcmp(argv[i], "--fd") && i + 1 < argc)
			rt_fd_eps = atof(argv[++i]);
		else if (!strcmp(argv[i], "--data-rank") && i + 1 < argc && rt_nranks == 1)
			rt_data_rank = atoll(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--tracked | --arena] [--fd EPS] [--data-rank R]\n",
			        argv[0]);
			exit(2);
		}
	}
#ifdef RT_GPU
	size_t fr, tot;
	rt_cuda(cudaMalloc((void **)&rt_dargs, sizeof(RtT) * RT_MAXARGS), "args");
	rt_cuda(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
	rt_dev_base = (int64_t)(tot - fr);
#endif
	rt_arena_size = arena_bytes;
	if (rt_arena_mode)
		rt_arena = (unsigned char *)rt_raw_alloc(arena_bytes);
}

/* The init key of input `name`: each data rank's inputs differ (rank 0's
 * are the single-process program's). */
RT_FN uint64_t
rt_dkey(const char *name)
{
	return rt_key(name) + (uint64_t)rt_data_rank * 0xD1B54A32D192ED03ull;
}

/* An owning instance, allocated now: at its planned offset in arena mode. */
RT_FN RtT
rt_make(const RtInst *in)
{
	return rt_desc(rt_alloc(in->owned, in->offset), in->dt, in->nd, in->shape);
}

RT_FN void
rt_drop(RtT t, const RtInst *in)
{
	rt_release(t.p, in->owned, in->offset);
}

RT_FN RtT
rt_reshape_k(RtT t, const RtInst *in)
{
	return rt_reshape(t, in->nd, in->shape);
}

/* The constant-1 gradient of the loss, shaped like it. */
RT_FN RtT
rt_ones(int nd, int64_t s0, int64_t s1, int64_t s2, int64_t s3, int64_t s4,
        int64_t s5, int64_t s6, int64_t s7)
{
	int64_t s[RT_MAXDIM] = {s0, s1, s2, s3, s4, s5, s6, s7};
	return rt_desc(NULL, RT_DT_ONE, nd, s);
}

/* A step begins: its temporary block (planned at toff in the arena). */
RT_FN void
rt_begin(int64_t step, int64_t tbytes, int64_t toff)
{
	rt_step_now = step;
	rt_tbytes = tbytes;
	rt_toff = toff;
	rt_tblock = tbytes ? (unsigned char *)rt_alloc(tbytes, toff) : NULL;
}

/* A temporary shaped like t at byte off of the step's block. */
RT_FN RtT
rt_tmp(RtT like, int dt, int64_t off)
{
	RtT t = rt_desc(rt_tblock + off, dt, like.nd, like.shape);
	return t;
}

/* A custom op's workspace: written so that it is really touched. */
RT_FN void
rt_touch(int64_t off, int64_t bytes)
{
	if (bytes <= 0)
		return;
#ifdef RT_GPU
	rt_cuda(cudaMemset(rt_tblock + off, 0x5a, (size_t)bytes), "workspace");
#else
	memset(rt_tblock + off, 0x5a, (size_t)bytes);
#endif
}

/* A step ends: memory now is what the evaluator predicted, or the step is
 * reported; the temporaries go. */
RT_FN void
rt_end(int64_t predicted)
{
	rt_device_sample();
	if (rt_live > rt_peak) {
		rt_peak = rt_live;
		rt_peak_step = rt_step_now;
	}
	if (rt_live != predicted && rt_bad < 0) {
		rt_bad = rt_step_now;
		fprintf(stderr, "%sstep %lld: measured %lld bytes, predicted %lld\n",
		        rt_who, (long long)rt_step_now, (long long)rt_live, (long long)predicted);
	}
	if (rt_tbytes)
		rt_release(rt_tblock, rt_tbytes, rt_toff);
	rt_tbytes = 0;
}

RT_FN void
rt_cksum(const char *name, RtT t)
{
	double h[2];
#ifdef RT_GPU
	double *d;
	rt_cuda(cudaMalloc((void **)&d, sizeof h), "cksum");
	RT_GO(k_cksum, 1)(rt_args(&t, 1), t.n, d);
	rt_after();
	rt_cuda(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "cksum");
	cudaFree(d);
#else
	k_cksum(&t, t.n, h);
#endif
	printf("%schecksum %s: %.17g %.17g\n", rt_who, name, h[0], h[1]);
}


/* Param init; --fd EPS moves every param by EPS along its direction so
 * that (loss(+EPS) - loss(-EPS)) / 2 EPS can be checked against dirgrad. */
RT_FN void
rt_param(RtT t, uint64_t key)
{
	rt_init(t, key, 0);
	if (rt_fd_eps != 0) {
		RT_GO(k_perturb, t.n)(rt_args(&t, 1), t.n, key, rt_fd_eps);
		rt_after();
	}
}

RT_FN void
rt_dirgrad(RtT g, uint64_t key)
{
	double h[1];
#ifdef RT_GPU
	double *d;
	rt_cuda(cudaMalloc((void **)&d, sizeof h), "dirgrad");
	RT_GO(k_dirgrad, 1)(rt_args(&g, 1), g.n, key, d);
	rt_after();
	rt_cuda(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "dirgrad");
	cudaFree(d);
#else
	k_dirgrad(&g, g.n, key, h);
#endif
	rt_dirsum += h[0];
}

RT_FN void
rt_loss(RtT t)
{
	double h[2];
#ifdef RT_GPU
	double *d;
	rt_cuda(cudaMalloc((void **)&d, sizeof h), "loss");
	RT_GO(k_cksum, 1)(rt_args(&t, 1), t.n, d);
	rt_after();
	rt_cuda(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost), "loss");
	cudaFree(d);
#else
	k_cksum(&t, t.n, h);
#endif
	if (rt_loss_value != rt_loss_value)
		rt_loss_value = h[0];
}

RT_FN int
rt_finish(int64_t predicted, int64_t arena_bytes)
{
#ifdef RT_GPU
	rt_cuda(cudaDeviceSynchronize(), "sync");
#endif
	const char *w = rt_who;
	printf("%smode: %s\n", w, rt_arena_mode ? "arena" : "tracked");
	printf("%spredicted peak: %lld bytes\n", w, (long long)predicted);
	printf("%smeasured peak: %lld bytes (step %lld)\n", w, (long long)rt_peak,
	       (long long)rt_peak_step);
	printf("%sarena: %lld bytes\n", w, (long long)arena_bytes);
	if (rt_host_bytes)
		printf("%shost (offloaded): %lld bytes\n", w, (long long)rt_host_bytes);
#ifdef RT_GPU
	printf("%sdevice peak (cudaMemGetInfo, above start): %lld bytes\n", w, (long long)rt_dev_peak);
#else
	printf("%sdevice peak: n/a (host build)\n", w);
#endif
	printf("%sloss: %.17g\n", w, rt_loss_value);
	printf("%sdirgrad: %.17g\n", w, rt_dirsum);
	int bad = rt_peak != predicted || rt_bad >= 0;
	printf(bad ? "%sMISMATCH\n" : "%sOK\n", w);
	rt_free_all();
	if (fflush(stdout))
		return 1;
	return bad;
}
