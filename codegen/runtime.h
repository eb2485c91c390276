/* codegen/runtime.h -- the prelude of every program remat emits (copied verbatim).
 *
 * One source, two targets: with nvcc (GPU) kernels are __global__ grid-stride
 * loops; with -DREMAT_HOST (or any C compiler) the same kernels are plain
 * loops over the elements. Every kernel is deterministic, no atomics: one
 * thread per output element, or a block per reduction row summing in one
 * fixed tree that the host runs too (trees); matmuls are calls of one GEMM
 * interface, cuBLAS on the GPU and its C version on the host (matmul);
 * convolutions are implicit GEMMs, a tiled kernel on the GPU and its C
 * mirror on the host (conv2d).
 *
 * A tensor is an RtT descriptor: a base pointer, a storage dtype, a logical
 * shape, and a chain of index maps from the logical row-major element index
 * to the element index in the base buffer. Reshape keeps the chain (the
 * row-major order is unchanged); transpose, permute and slice compose a
 * strided map onto the chain, or push a new one after a reshape, so a reshape
 * of a transposed tensor still addresses the right elements without a copy.
 * A kernel gets the chains folded (rt_flat): a contiguous view has none, so
 * its elements are read without index arithmetic.
 *
 * Values are loaded into rt_real (double when the network has f64 tensors,
 * else float) and stored back converted; f16, bf16 and f8 are raw bits with
 * software conversion (round to nearest even; f8e4m3 saturates at +-448).
 *
 * Sections, in order, each opening with a "------ name" comment line:
 * storage (dtype loads and stores), descriptors (RtT, views, strided
 * sub-axes), launching, trees (reductions), elementwise, binary, matmul
 * (the GEMM interface), conv2d, attention, norms, softmax, pooling,
 * reductions, losses, embedding, custom ops, init and checks, memory
 * (allocation registry, tracked and arena modes, steps, timing, checksums,
 * rt_finish).
 *
 * Everything the program allocates is registered (rt_raw_alloc) and freed
 * by rt_finish, which also flushes stdout before the program exits, so a
 * leak checker (-fsanitize=address) sees no leak and loses no output. The
 * GPU build links cuBLAS (-lcublas) and gives it no workspace.
 */
#if !defined(_POSIX_C_SOURCE) && !defined(__CUDACC__)
#define _POSIX_C_SOURCE 200809L         /* clock_gettime under -std=c11 */
#endif
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__CUDACC__) && !defined(REMAT_HOST)
#define RT_GPU 1
#include <cuda_runtime.h>
#include <cublas_v2.h>
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

/* Element j of t's base buffer = v, converted to t's dtype. */
RT_DFN void
rt_st(const RtT *t, int64_t j, rt_real v)
{
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

RT_DFN void
rt_put(const RtT *t, int64_t i, rt_real v)
{
	rt_st(t, rt_phys(t, i), v);
}

/* Bytes per element of dtype dt. */
RT_DFN int64_t
rt_esize(int dt)
{
	switch (dt) {
	case RT_DT_F64: case RT_DT_I64: return 8;
	case RT_DT_F32: case RT_DT_I32: return 4;
	case RT_DT_BF16: case RT_DT_F16: return 2;
	default: return 1;
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

/* t's logical axes as strided sub-axes: axis d is the product of
 * sub-axes first[d] .. first[d + 1] - 1 (outer first; none when its size
 * is 1), sub-axis k of size sz[k] and stride st[k] in base elements, from
 * base element off on. */
enum { RT_MAXSUB = 16 };
typedef struct RtSub {
	int first[RT_MAXDIM + 1];
	int64_t sz[RT_MAXSUB], st[RT_MAXSUB], off;
} RtSub;

/* The sub-axes of t (rt_affine's contract, axes split where needed): 0
 * when the view chain is not strided, or needs more than RT_MAXSUB
 * sub-axes. Each map of the chain unravels its input index over its shape:
 * its axes form runs (neighbours whose strides merge), run r of size sz[r]
 * at flat stride fl[r]. A sub-axis of flat stride q fl[r] (q < sz[r])
 * lands in run r with stride q times the run's; one that would carry past
 * the run splits there, when q divides the run, into sz[r] / q steps and
 * the rest, which goes to the runs above. Nothing may carry: per run, the
 * offset's digit plus every sub-axis's last step stays below its size. */
RT_FN int
rt_subaxes(const RtT *t, RtSub *u)
{
	int64_t c = 1, cs[RT_MAXDIM];
	int n = 0;
	for (int d = t->nd - 1; d >= 0; d--) {       /* row-major: the flat index */
		cs[d] = c;
		c *= t->shape[d];
	}
	for (int d = 0; d < t->nd; d++) {
		u->first[d] = n;
		if (t->shape[d] != 1) {
			u->sz[n] = t->shape[d];
			u->st[n++] = cs[d];
		}
	}
	u->first[t->nd] = n;
	u->off = 0;
	for (int m = 0; m < t->nmap; m++) {
		const RtMap *mp = &t->map[m];
		int64_t sz[RT_MAXDIM], fl[RT_MAXDIM], ps[RT_MAXDIM], top[RT_MAXDIM], f = 1;
		int64_t nsz[RT_MAXSUB], nst[RT_MAXSUB];
		int nr = 0, nn = 0, nfirst[RT_MAXDIM + 1];
		for (int e = mp->nd - 1; e >= 0; e--) {      /* runs, innermost first */
			if (mp->shape[e] == 1)
				continue;
			if (nr > 0 && mp->stride[e] == sz[nr - 1] * ps[nr - 1]) {
				sz[nr - 1] *= mp->shape[e];
			} else {
				sz[nr] = mp->shape[e];
				fl[nr] = f;
				ps[nr] = mp->stride[e];
				nr++;
			}
			f *= mp->shape[e];
		}
		int64_t no = mp->off;
		for (int r = 0; r < nr; r++) {
			top[r] = u->off / fl[r] % sz[r];
			no += top[r] * ps[r];
		}
		for (int d = 0; d < t->nd; d++) {
			nfirst[d] = nn;
			for (int k = u->first[d]; k < u->first[d + 1]; k++) {
				int64_t psz[RT_MAXDIM], pst[RT_MAXDIM], z = u->sz[k], fs = u->st[k];
				int np = 0;
				while (z > 1) {         /* pieces, inner first */
					int r = 0;
					while (r < nr && !(fs >= fl[r] && fs < fl[r] * sz[r] && fs % fl[r] == 0))
						r++;
					if (r == nr || np == RT_MAXDIM)
						return 0;
					int64_t q = fs / fl[r], z1 = z;
					if (q * (z - 1) >= sz[r]) {     /* carries: split at the run's end */
						if (sz[r] % q || z % (sz[r] / q))
							return 0;
						z1 = sz[r] / q;
					}
					top[r] += q * (z1 - 1);
					psz[np] = z1;
					pst[np++] = q * ps[r];
					z /= z1;
					fs *= z1;
				}
				if (nn + np > RT_MAXSUB)
					return 0;
				for (int i = np - 1; i >= 0; i--) {
					nsz[nn] = psz[i];
					nst[nn++] = pst[i];
				}
			}
		}
		nfirst[t->nd] = nn;
		for (int r = 0; r < nr; r++)
			if (top[r] >= sz[r])
				return 0;
		/* neighbours of one axis that merge, merged */
		n = 0;
		for (int d = 0; d < t->nd; d++) {
			u->first[d] = n;
			for (int k = nfirst[d]; k < nfirst[d + 1]; k++) {
				if (n > u->first[d] && u->st[n - 1] == nsz[k] * nst[k]) {
					u->sz[n - 1] *= nsz[k];
					u->st[n - 1] = nst[k];
				} else {
					u->sz[n] = nsz[k];
					u->st[n++] = nst[k];
				}
			}
		}
		u->first[t->nd] = n;
		u->off = no;
	}
	return 1;
}

/* Whether t's view chain is one strided map: logical element (i_0, ...,
 * i_nd-1) is base element *off + sum of i_d st[d] (st[d] = 0 on size-1
 * axes). Conservative: 0 when it cannot show that (the callers then take
 * the general path). */
RT_FN int
rt_affine(const RtT *t, int64_t *off, int64_t *st)
{
	RtSub u;
	if (!rt_subaxes(t, &u))
		return 0;
	for (int d = 0; d < t->nd; d++) {
		int k = u.first[d];
		if (u.first[d + 1] - k > 1)
			return 0;
		st[d] = u.first[d + 1] > k ? u.st[k] : 0;
	}
	*off = u.off;
	return 1;
}

/* t with its view chain folded: a contiguous view becomes its base pointer
 * moved to the view's first element (no index map: rt_phys is the
 * identity), any other strided chain one map over t's own shape. */
RT_FN void
rt_flat(RtT *t)
{
	int64_t off, st[RT_MAXDIM], c = 1;
	int contig = 1;
	if (!t->p || t->nmap == 0 || t->dt == RT_DT_ONE || !rt_affine(t, &off, st))
		return;
	for (int d = t->nd - 1; d >= 0; d--) {
		contig &= t->shape[d] == 1 || st[d] == c;
		c *= t->shape[d];
	}
	if (contig) {
		t->p = (unsigned char *)t->p + off * rt_esize(t->dt);
		t->nmap = 0;
		return;
	}
	t->nmap = 1;
	t->map[0].nd = t->nd;
	t->map[0].off = off;
	memcpy(t->map[0].shape, t->shape, sizeof t->shape[0] * (size_t)t->nd);
	memcpy(t->map[0].stride, st, sizeof st[0] * (size_t)t->nd);
}

/* ------------------------------------------------------------ launching */

#ifdef RT_GPU
/* The runtime's own device buffers, made by rt_start before the device
 * figure's baseline: the kernel descriptors and rt_reduce's partial sums
 * (2 RT_NL + 2 doubles). */
static RtT *rt_dargs;
static double *rt_dred;
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

/* A kernel's descriptors, view chains folded (rt_flat), on the device.
 * Stream-ordered: the copy waits for the kernels before it. */
static const RtT *
rt_args(RtT *a, int n)
{
	for (int i = 0; i < n; i++)
		rt_flat(&a[i]);
	rt_cuda(cudaMemcpy(rt_dargs, a, sizeof *a * (size_t)n, cudaMemcpyHostToDevice), "args");
	return rt_dargs;
}
#define rt_after() rt_cuda(cudaGetLastError(), "launch")
#else
RT_FN const RtT *
rt_args(RtT *a, int n)
{
	for (int i = 0; i < n; i++)
		rt_flat(&a[i]);
	return a;
}
#define rt_after() ((void)0)
#endif
/* One launch: kernel k over n (go: RT_GO or RT_RGO) on the tensors ts, a
 * parenthesized list, then the kernel's arguments; then the launch check. */
#define RT_LIST(...) __VA_ARGS__
#define RT_RUN(go, k, n, ts, ...) do { \
		RtT rt_ts_[] = {RT_LIST ts}; \
		go(k, n)(rt_args(rt_ts_, (int)(sizeof rt_ts_ / sizeof rt_ts_[0])), __VA_ARGS__); \
		rt_after(); \
	} while (0)

/* ------------------------------------------------------------ trees */

/* Every reduction sums in one fixed tree, the same in both builds, so the
 * host and the GPU, and one run and the next, get the same bits (up to the
 * last-ulp differences of exp/log/tanh between libm and CUDA). A row of L
 * terms has RT_NL lanes: lane l adds terms l, l + RT_NL, ... in order, then
 * the lanes are summed pairwise in double (lane i += lane i + s, s = RT_NL /
 * 2, ..., 1).
 * On the GPU a row is one block of RT_NL threads (RT_ROWS: the rows, one
 * block each; RT_LANES: this thread's lane; RT_LANE0: one thread) and the
 * pairs are summed in shared memory; on the host the same loops run one
 * after another. A whole tensor has RT_NL blocks of RT_NL lanes at most
 * (rt_reduce). */
enum { RT_NL = 256 };
#ifdef RT_GPU
#define RT_SHARED(type, name) __shared__ type name[RT_NL]
#define RT_ROWS(r, n) for (int64_t r = blockIdx.x; r < (n); r += gridDim.x)
#define RT_LANES(l) for (int l = (int)threadIdx.x; l < RT_NL; l += RT_NL)
#define RT_LANE0 if (threadIdx.x == 0)
#define RT_RGO(k, n) k<<<rt_rblocks(n), RT_NL>>>
static int
rt_rblocks(int64_t rows)
{
	return rows < 1 ? 1 : rows > (1 << 30) ? 1 << 30 : (int)rows;
}
#else
#define RT_SHARED(type, name) type name[RT_NL]
#define RT_ROWS(r, n) for (int64_t r = 0; r < (n); r++)
#define RT_LANES(l) for (int l = 0; l < RT_NL; l++)
#define RT_LANE0
#define RT_RGO(k, n) k
#endif

/* The lanes' values in sh summed pairwise (max: their largest), in double
 * whatever the lanes added in; every lane gets the result, and sh may be
 * written again after. */
RT_DFN double
rt_tree(double *sh, int max)
{
#ifdef __CUDA_ARCH__
	int i = (int)threadIdx.x;
	__syncthreads();
	for (int s = RT_NL / 2; s > 0; s >>= 1) {
		if (i < s)
			sh[i] = max ? (sh[i + s] > sh[i] ? sh[i + s] : sh[i]) : sh[i] + sh[i + s];
		__syncthreads();
	}
	double v = sh[0];
	__syncthreads();
	return v;
#else
	for (int s = RT_NL / 2; s > 0; s >>= 1)
		for (int i = 0; i < s; i++)
			sh[i] = max ? (sh[i + s] > sh[i] ? sh[i + s] : sh[i]) : sh[i] + sh[i + s];
	return sh[0];
#endif
}

/* A whole-tensor reduction: kind, terms, and what the kind needs. Term i
 * is two numbers (rt_red_terms), each summed in double. */
enum { RT_RED_SUM, RT_RED_MEAN, RT_RED_CKSUM, RT_RED_DIRGRAD, RT_RED_MSE, RT_RED_XENT,
       RT_RED_XENT_IG };
typedef struct RtRed {
	int kind;
	int64_t n;              /* terms */
	uint64_t key;           /* RT_RED_DIRGRAD: the param's direction key */
	int64_t ign;            /* RT_RED_XENT_IG: the ignored label */
} RtRed;

/* sum, mean: T = x; checksum: the values and the values weighted by 1 +
 * i mod 7; dirgrad: T = grad, times its direction; mse: T = a, b; cross
 * entropy, one term per row: T = logits, labels, y, lsm, the -log p of the
 * label (0 outside [0, C)) and whether the row counts (its label is not
 * ign). */
RT_DFN void
rt_red_terms(const RtT *T, RtRed c, int64_t i, double *v)
{
	v[1] = 0;
	switch (c.kind) {
	case RT_RED_SUM: case RT_RED_MEAN:
		v[0] = rt_get(&T[0], i);
		return;
	case RT_RED_CKSUM:
		v[0] = rt_get(&T[0], i);
		v[1] = v[0] * (double)(1 + i % 7);
		return;
	case RT_RED_DIRGRAD:
		v[0] = (double)rt_get(&T[0], i) * (double)(2 * rt_unit(~c.key, (uint64_t)i) - 1);
		return;
	case RT_RED_MSE: {
		rt_real d = rt_get(&T[0], i) - rt_get(&T[1], i);
		v[0] = d * d;
		return;
	}
	default: {
		int64_t C = T[0].shape[T[0].nd - 1], lab = rt_geti(&T[1], i);
		int take = c.kind == RT_RED_XENT || lab != c.ign;
		v[0] = take && lab >= 0 && lab < C ? -(double)rt_get(&T[3], i * C + lab) : 0;
		v[1] = take;
	}
	}
}

/* The op's value from the two sums: the sum, the mean over the terms, or
 * cross entropy's mean over the rows that count. */
RT_DFN double
rt_red_value(RtRed c, double s0, double s1)
{
	switch (c.kind) {
	case RT_RED_SUM: return s0;
	case RT_RED_XENT_IG: return s1 != 0 ? s0 / s1 : 0;
	default: return s0 / (double)c.n;
	}
}

/* Level 1: block b's lane l adds terms b RT_NL + l, then nb RT_NL further
 * on, in order; the block's lanes summed pairwise go to part[b] and
 * part[RT_NL + b]. */
RT_K
k_reduce1(const RtT *T, RtRed c, int64_t nb, double *part)
{
	RT_SHARED(double, s0);
	RT_SHARED(double, s1);
	RT_ROWS(b, nb) {
		RT_LANES(l) {
			double a0 = 0, a1 = 0, v[2];
			for (int64_t i = b * RT_NL + l; i < c.n; i += nb * RT_NL) {
				rt_red_terms(T, c, i, v);
				a0 += v[0];
				a1 += v[1];
			}
			s0[l] = a0;
			s1[l] = a1;
		}
		double t0 = rt_tree(s0, 0), t1 = rt_tree(s1, 0);
		RT_LANE0 {
			part[b] = t0;
			part[RT_NL + b] = t1;
		}
	}
}

/* Level 2: the nb block sums, then zeros, summed pairwise into out[0], out[1];
 * post >= 0: the op's value stored into T[post]. */
RT_K
k_reduce2(const RtT *T, RtRed c, int64_t nb, const double *part, double *out, int post)
{
	RT_SHARED(double, s0);
	RT_SHARED(double, s1);
	RT_ROWS(r, 1) {
		RT_LANES(l) {
			s0[l] = l < nb ? part[l] : 0;
			s1[l] = l < nb ? part[RT_NL + l] : 0;
		}
		double t0 = rt_tree(s0, 0), t1 = rt_tree(s1, 0);
		RT_LANE0 {
			out[0] = t0;
			out[1] = t1;
			if (post >= 0)
				rt_put(&T[post], 0, (rt_real)rt_red_value(c, t0, t1));
		}
	}
}

/* Reduction c over the descriptors a[0..na): blocks of 64 RT_NL terms, at
 * most RT_NL of them (a function of the size only, so the tree is fixed);
 * res (may be NULL) gets the two sums, post as k_reduce2. */
RT_FN void
rt_reduce(RtT *a, int na, RtRed c, int post, double *res)
{
	int64_t nb = (c.n + 64 * RT_NL - 1) / (64 * RT_NL);
	nb = nb < 1 ? 1 : nb > RT_NL ? RT_NL : nb;
	const RtT *d = rt_args(a, na);
#ifdef RT_GPU
	k_reduce1<<<(int)nb, RT_NL>>>(d, c, nb, rt_dred);
	rt_after();
	k_reduce2<<<1, RT_NL>>>(d, c, nb, rt_dred, rt_dred + 2 * RT_NL, post);
	rt_after();
	if (res)
		rt_cuda(cudaMemcpy(res, rt_dred + 2 * RT_NL, 2 * sizeof *res, cudaMemcpyDeviceToHost),
		        "reduce");
#else
	double part[2 * RT_NL + 2];
	k_reduce1(d, c, nb, part);
	k_reduce2(d, c, nb, part, part + 2 * RT_NL, post);
	if (res)
		memcpy(res, part + 2 * RT_NL, 2 * sizeof *res);
#endif
}

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
	RT_RUN(RT_GO, k_unary_f, y.n, (x, y), y.n, op, c);
}

RT_FN void
rt_b_unary(int op, RtT s, RtT g, RtT dst, int add, double c)
{
	RT_RUN(RT_GO, k_unary_b, dst.n, (s, g, dst), dst.n, op, c, add);
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
	RT_RUN(RT_GO, k_copy, dst.n, (src, dst), dst.n, add);
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
	RT_RUN(RT_GO, k_dropout_f, y.n, (x, y, mask), y.n, p, key);
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
	RT_RUN(RT_GO, k_dropout_b, dst.n, (mask, g, dst), dst.n, p, add);
}

/* ------------------------------------------------------------ binary */

/* The element of a that element i of o reads under broadcasting. */
RT_DFN int64_t
rt_bcast(const RtT *o, const RtT *a, int64_t i)
{
	int64_t j = 0, mul = 1;
	if (a->n == o->n)       /* nothing broadcast: the same element */
		return i;
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
	RT_RUN(RT_GO, k_binary_f, out.n, (x, y, out), out.n, op);
}

/* T: a, b (either may be absent when not saved), g, dst. The contribution
 * to element j of dst (its multi-index ai) of the r-th out element
 * broadcast from it. */
RT_DFN rt_real
rt_binb_term(const RtT *T, int op, int slot, int64_t j, const int64_t *ai, int64_t r)
{
	const RtT *G = &T[2], *D = &T[3];
	int64_t oi = j, mul = 1;
	if (G->n != D->n) {     /* else nothing broadcast: out element j */
		oi = 0;
		for (int d = G->nd - 1; d >= 0; d--) {
			int e = d - (G->nd - D->nd);
			int64_t id;
			if (e >= 0 && D->shape[e] == G->shape[d])
				id = ai[e];
			else {
				id = r % G->shape[d];
				r /= G->shape[d];
			}
			oi += id * mul;
			mul *= G->shape[d];
		}
	}
	rt_real g = rt_get(G, G->dt == RT_DT_ONE ? 0 : oi);
	if (op == RT_ADD)
		return g;
	if (op == RT_SUB)
		return slot ? -g : g;
	if (op == RT_MUL)
		return g * rt_get(&T[1 - slot], rt_bcast(G, &T[1 - slot], oi));
	rt_real b = rt_get(&T[1], rt_bcast(G, &T[1], oi));
	return slot ? -g * rt_get(&T[0], rt_bcast(G, &T[0], oi)) / (b * b) : g / b;
}

/* Element j of dst sums the cnt contributions of the out elements
 * broadcast from it, in order (few of them: cnt < RT_BTREE). */
RT_K
k_binary_b(const RtT *T, int64_t n, int op, int slot, int add)
{
	const RtT *D = &T[3];
	RT_FOR(j, n) {
		int64_t ai[RT_MAXDIM], cnt = T[2].n / D->n;
		rt_real s = 0;
		rt_unravel(D, j, ai);
		for (int64_t r = 0; r < cnt; r++)
			s += rt_binb_term(T, op, slot, j, ai, r);
		rt_out(D, j, s, add);
	}
}

/* The same as a tree per element of dst (a bias gradient: many out
 * elements per element). */
RT_K
k_binary_bt(const RtT *T, int64_t n, int op, int slot, int add)
{
	const RtT *D = &T[3];
	int64_t cnt = T[2].n / D->n;
	RT_SHARED(double, sh);
	RT_ROWS(j, n) {
		int64_t ai[RT_MAXDIM];
		rt_unravel(D, j, ai);
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t r = l; r < cnt; r += RT_NL)
				s += rt_binb_term(T, op, slot, j, ai, r);
			sh[l] = s;
		}
		rt_real s = (rt_real)rt_tree(sh, 0);
		RT_LANE0 rt_out(D, j, s, add);
	}
}

/* Sums of RT_BTREE terms or more take the tree (both builds decide alike). */
enum { RT_BTREE = 32 };

RT_FN void
rt_b_binary(int op, int slot, RtT x, RtT y, RtT g, RtT dst, int add)
{
	RtT a[4] = {x, y, g, dst};
	if (g.n / dst.n >= RT_BTREE)
		RT_RGO(k_binary_bt, dst.n)(rt_args(a, 4), dst.n, op, slot, add);
	else
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

#ifndef RT_GPU
/* y[r, c] = sum over t of p[r, t] q[c, t], p and q contiguous rows; each
 * y[r, c] starts from 0 and adds t = 0, 1, ... in order (the plain
 * kernels' order, so results are the same bits), 4 x 4 outputs at a time
 * so that 16 independent sums are in flight. The host's GEMM and its
 * implicit-GEMM convolutions. */
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

#endif

/* One call of the GEMM interface: cuBLAS's cublasGemmStridedBatchedEx,
 * column-major. For each of `batch` matrices, the i-th at A + i sa (B + i
 * sb, C + i sc): C(x, y) = alpha (sum over p < k of op(A)(x, p) op(B)(p,
 * y)) + beta C(x, y) for x < m, y < n, with C(x, y) at x + y ldc, op(A)(x,
 * p) at x + p lda (ta = 0) or p + x lda (ta = 1: A transposed), op(B)(p,
 * y) at p + y ldb (tb = 0) or y + p ldb (tb = 1). Offsets and strides count
 * elements of each operand's dtype; beta = 0 does not read C. The GPU
 * build passes these to cuBLAS, the host build to rt_gemm's C version:
 * the same calls with the same arguments, so the host tests check the
 * mapping from views to arguments (tests/unit/test_gemm.c). */
typedef struct RtGemm {
	int ta, tb;
	int64_t m, n, k, lda, ldb, ldc, sa, sb, sc, batch;
	double alpha, beta;
} RtGemm;

/* Matmuls run as GEMM calls and by the general kernel (rt_finish prints
 * them). */
static int64_t rt_ngemm, rt_ngeneral;

/* The dtypes a GEMM takes: A and B alike, C alike or f32; f32, f16, bf16
 * computed in f32, or, in a program with f64 tensors (whose host build
 * computes in double), f64 only. */
RT_FN int
rt_gemm_dt(int a, int b, int c)
{
#ifdef RT_F64
	return a == RT_DT_F64 && b == a && c == a;
#else
	return a == b && (a == RT_DT_F32 || a == RT_DT_F16 || a == RT_DT_BF16) &&
	       (c == a || c == RT_DT_F32);
#endif
}

#ifdef RT_GPU
static cublasHandle_t rt_blas;

RT_FN cudaDataType_t
rt_cuda_dt(int dt)
{
	switch (dt) {
	case RT_DT_F64: return CUDA_R_64F;
	case RT_DT_F16: return CUDA_R_16F;
	case RT_DT_BF16: return CUDA_R_16BF;
	default: return CUDA_R_32F;
	}
}

/* cuBLAS: f16 and bf16 on the tensor cores accumulating in f32, f32 in
 * plain f32 (CUBLAS_COMPUTE_32F: no TF32), f64 in f64. The handle has no
 * workspace (rt_start), so the call allocates nothing. */
RT_FN void
rt_gemm(const RtGemm *g, const void *A, int adt, const void *B, int bdt, void *C, int cdt)
{
	float fa = (float)g->alpha, fb = (float)g->beta;
	int f64 = adt == RT_DT_F64;
	cublasStatus_t st = cublasGemmStridedBatchedEx(rt_blas,
		g->ta ? CUBLAS_OP_T : CUBLAS_OP_N, g->tb ? CUBLAS_OP_T : CUBLAS_OP_N,
		(int)g->m, (int)g->n, (int)g->k, f64 ? (const void *)&g->alpha : (const void *)&fa,
		A, rt_cuda_dt(adt), (int)g->lda, (long long)g->sa,
		B, rt_cuda_dt(bdt), (int)g->ldb, (long long)g->sb,
		f64 ? (const void *)&g->beta : (const void *)&fb,
		C, rt_cuda_dt(cdt), (int)g->ldc, (long long)g->sc, (int)g->batch,
		f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
	if (st != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "remat runtime: cublasGemmStridedBatchedEx: %s\n",
		        cublasGetStatusString(st));
		exit(2);
	}
}
#else
/* op(X)(x, p) of a GEMM operand, packed: dst[x * k + p], x < rows. */
RT_FN void
rt_gemm_pack(const void *X, int dt, int t, int64_t ld, int64_t rows, int64_t k, rt_real *dst)
{
	int64_t one = 1;
	RtT d = rt_desc((void *)X, dt, 1, &one);
	for (int64_t x = 0; x < rows; x++)
		for (int64_t p = 0; p < k; p++) {
			int64_t j = t ? p + x * ld : x + p * ld;
			dst[x * k + p] = dt == RT_DT_F32 ? ((const float *)X)[j] : rt_ld(&d, j);
		}
}

/* The host's GEMM: the same contract in rt_real, each C(x, y) summed from
 * 0 over p = 0, 1, ... in order (rt_dot_rows on op(A)'s rows and op(B)'s
 * columns), then times alpha, plus beta C(x, y), stored as rt_put stores:
 * with alpha 1 and beta 0 or 1, the plain kernels' bits. */
RT_FN void
rt_gemm(const RtGemm *g, const void *A, int adt, const void *B, int bdt, void *C, int cdt)
{
	int64_t one = 1;
	RtT c = rt_desc(C, cdt, 1, &one);
	rt_real *pa = rt_scratch(g->m * g->k), *pb = rt_scratch(g->n * g->k);
	rt_real *y = rt_scratch(g->m * g->n);
	int es_a = (int)rt_esize(adt), es_b = (int)rt_esize(bdt);

	for (int64_t i = 0; i < g->batch; i++) {
		int64_t co = i * g->sc;
		/* op(B)(p, y) packed by y: op(B) transposed is op(B^T) */
		rt_gemm_pack((const unsigned char *)A + i * g->sa * es_a, adt, g->ta, g->lda, g->m,
		             g->k, pa);
		rt_gemm_pack((const unsigned char *)B + i * g->sb * es_b, bdt, !g->tb, g->ldb, g->n,
		             g->k, pb);
		rt_dot_rows(pa, pb, g->m, g->n, g->k, y);
		for (int64_t x = 0; x < g->m; x++)
			for (int64_t yy = 0; yy < g->n; yy++) {
				int64_t j = co + x + yy * g->ldc;
				rt_real v = (rt_real)g->alpha * y[x * g->n + yy];
				if (g->beta != 0)
					v += (rt_real)g->beta * rt_ld(&c, j);
				rt_st(&c, j, v);
			}
	}
	free(pa);
	free(pb);
	free(y);
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

/* A matmul or a gradient of one as GEMM calls: the first call and its
 * operands' element offsets, then the axes that no call covers, each a
 * loop of calls (its size and the strides of A, B and C); the last nsum
 * loops are summed axes, whose calls add into C (beta 1) in order. */
enum { RT_MAXAX = 3 * RT_MAXSUB + RT_MAXDIM + 3 };
typedef struct RtMM {
	RtGemm g;
	const RtT *A, *B, *C;
	int64_t oa, ob, oc;
	int nloop, nsum;
	int64_t lsz[RT_MAXAX], la[RT_MAXAX], lb[RT_MAXAX], lc[RT_MAXAX];
} RtMM;

/* An axis of a matmul: its size, its strides in the two factors X, Y and
 * the result C (0: not along it); its role: a batch of all three, a row
 * of X and C, a column of Y and C, or summed (X and Y only). */
enum { RT_AX_BATCH, RT_AX_ROW, RT_AX_COL, RT_AX_SUM };
typedef struct RtAx {
	int64_t n, s[3];
} RtAx;

/* Appends to ax, with role, one logical axis of size n: operand k's axis
 * dim[k] (-1: the operand does not vary along it) as its sub-axes u[k],
 * cut wherever any operand's sub-axes are cut, outer pieces first, each
 * with every operand's stride. 0 when the cuts do not nest (each inner
 * product dividing the next). */
RT_FN int
rt_mm_axis(const RtSub *u, const int *dim, int64_t n, int role, RtAx *ax, int *roles, int *na)
{
	int64_t cut[3 * RT_MAXSUB + 1];
	int nc = 0;
	cut[nc++] = n;
	for (int k = 0; k < 3; k++) {
		int64_t c = 1;
		for (int j = dim[k] < 0 ? -1 : u[k].first[dim[k] + 1] - 1;
		     dim[k] >= 0 && j > u[k].first[dim[k]]; j--) {
			c *= u[k].sz[j];
			cut[nc++] = c;
		}
	}
	for (int i = 1; i < nc; i++)            /* ascending */
		for (int j = i; j > 0 && cut[j - 1] > cut[j]; j--) {
			int64_t z = cut[j];
			cut[j] = cut[j - 1];
			cut[j - 1] = z;
		}
	for (int i = 1; i < nc; i++)
		if (cut[i] % cut[i - 1])
			return 0;
	for (int i = nc - 1; i >= 0; i--) {
		int64_t lo = i ? cut[i - 1] : 1;
		if (cut[i] == lo)
			continue;
		ax[*na].n = cut[i] / lo;
		for (int k = 0; k < 3; k++) {
			int64_t c = 1;
			ax[*na].s[k] = 0;
			for (int j = dim[k] < 0 ? -1 : u[k].first[dim[k] + 1] - 1;
			     dim[k] >= 0 && j >= u[k].first[dim[k]]; j--) {
				if (lo < c * u[k].sz[j]) {
					ax[*na].s[k] = u[k].st[j] * (lo / c);
					break;
				}
				c *= u[k].sz[j];
			}
		}
		roles[(*na)++] = role;
	}
	return 1;
}

/* op(X), nr x nc with X(r, c) at r sr + c sc, as a GEMM operand: not
 * transposed (X(r, c) at r + c ld) or, when can_t, transposed (at c + r
 * ld), with ld at least the rows stored as cuBLAS wants; 0 when neither
 * layout fits. */
RT_FN int
rt_mm_ld(int64_t nr, int64_t sr, int64_t nc, int64_t sc, int can_t, int *t, int64_t *ld)
{
	if (nr == 1 || sr == 1) {
		*t = 0;
		*ld = nc == 1 ? (nr > 1 ? nr : 1) : sc;
		if (*ld >= nr && *ld >= 1 && *ld <= 2147483647)
			return 1;
	}
	if (can_t && (nc == 1 || sc == 1)) {
		*t = 1;
		*ld = nr == 1 ? (nc > 1 ? nc : 1) : sr;
		if (*ld >= nc && *ld >= 1 && *ld <= 2147483647)
			return 1;
	}
	return 0;
}

/* The GEMM calls of matmul slot (T: a, b, g, dst; slot -1: dst = a b, 0:
 * dst = g b^T, 1: dst = a^T g, summed over the batches broadcast into
 * dst), or 0 where some operand is not strided or of a dtype no GEMM
 * takes. C[i, j] = sum over p of X[i, p] Y[p, j] per batch: every axis of
 * the output's batch shape and the matrix axes i, j, p, cut into the
 * operands' strided sub-axes (rt_subaxes, rt_mm_axis), get a role; axes of
 * one role merge where all three strides allow it (a weight shared by
 * every batch element makes the batch axes rows: one large GEMM). The
 * innermost row, column and summed axes are the call's m, n and k; its
 * batch is the largest batch axis, or of the other row or column axes
 * (the operand that does not vary along it has stride 0); the other axes
 * are loops of calls. When the summed axes (broadcast batches in order,
 * then p) merge into one, each element is summed in the plain kernels'
 * order; else (a reshape of a permuted tensor, say) the calls of the outer
 * summed axes add into C in order, when C is f32 or f64. C is computed as C^T = Y^T X^T when its
 * rows are contiguous (cuBLAS is column-major). */
RT_FN int
rt_mm_plan(const RtT *T, int slot, int add, RtMM *p)
{
	const RtT *Gf = slot < 0 ? &T[3] : &T[2];
	const RtT *op[3] = {slot == 0 ? &T[2] : &T[0], slot == 1 ? &T[2] : &T[1], &T[3]};
	int swap[3] = {slot == 1, slot == 0, 0}, nb = Gf->nd - 2;
	RtSub u[3];
	RtAx ax[RT_MAXAX], grp[4][RT_MAXAX];
	int role[RT_MAXAX], na = 0, ng[4] = {0, 0, 0, 0};

	for (int k = 0; k < 3; k++) {
		const RtT *t = op[k];
		if (!t->p || t->dt == RT_DT_ONE || t->nd < 2 || !rt_subaxes(t, &u[k]))
			return 0;
	}
	if (!rt_gemm_dt(op[0]->dt, op[1]->dt, op[2]->dt))
		return 0;
	for (int f = 0; f < nb; f++) {
		int dim[3], r;
		for (int k = 0; k < 3; k++) {
			int e = f - (nb - (op[k]->nd - 2));
			dim[k] = e >= 0 && op[k]->shape[e] != 1 ? e : -1;
		}
		if (dim[2] < 0)
			r = RT_AX_SUM;
		else if (dim[0] >= 0 && dim[1] >= 0)
			r = RT_AX_BATCH;
		else if (dim[0] >= 0 || dim[1] >= 0)
			r = dim[0] >= 0 ? RT_AX_ROW : RT_AX_COL;
		else if (Gf->shape[f] == 1)
			continue;
		else
			return 0;
		if (!rt_mm_axis(u, dim, Gf->shape[f], r, ax, role, &na))
			return 0;
	}
	int n0 = op[0]->nd, n1 = op[1]->nd, n2 = op[2]->nd;
	int di[3] = {n0 - 2 + swap[0], -1, n2 - 2}, dj[3] = {-1, n1 - 1 - swap[1], n2 - 1};
	int dp[3] = {n0 - 1 - swap[0], n1 - 2 + swap[1], -1};
	if (!rt_mm_axis(u, di, op[2]->shape[n2 - 2], RT_AX_ROW, ax, role, &na) ||
	    !rt_mm_axis(u, dj, op[2]->shape[n2 - 1], RT_AX_COL, ax, role, &na) ||
	    !rt_mm_axis(u, dp, op[0]->shape[dp[0]], RT_AX_SUM, ax, role, &na))
		return 0;
	for (int i = 0; i < na; i++) {
		RtAx *g = ng[role[i]] ? &grp[role[i]][ng[role[i]] - 1] : NULL;
		int merge = g != NULL;
		for (int k = 0; k < 3 && g; k++)
			merge &= g->s[k] == ax[i].n * ax[i].s[k];
		if (merge) {
			g->n *= ax[i].n;
			memcpy(g->s, ax[i].s, sizeof g->s);
		} else {
			grp[role[i]][ng[role[i]]++] = ax[i];
		}
	}
	/* the call's axes (size 1, strides 0, where a role has none) */
	RtAx one = {1, {0, 0, 0}}, *bi = &one, *ri = &one, *ci = &one, *si = &one;
	if (ng[RT_AX_ROW])
		ri = &grp[RT_AX_ROW][ng[RT_AX_ROW] - 1];
	if (ng[RT_AX_COL])
		ci = &grp[RT_AX_COL][ng[RT_AX_COL] - 1];
	if (ng[RT_AX_SUM])
		si = &grp[RT_AX_SUM][ng[RT_AX_SUM] - 1];
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < ng[r]; i++)
			if (&grp[r][i] != ri && &grp[r][i] != ci && grp[r][i].n > bi->n)
				bi = &grp[r][i];
	/* C^T = Y^T X^T (A = Y, B = X), else C = X Y (A = X, B = Y) */
	RtGemm *g = &p->g;
	int tc, ia;
	int64_t ldc;
	if (rt_mm_ld(ci->n, ci->s[2], ri->n, ri->s[2], 0, &tc, &ldc) &&
	    rt_mm_ld(ci->n, ci->s[1], si->n, si->s[1], 1, &g->ta, &g->lda) &&
	    rt_mm_ld(si->n, si->s[0], ri->n, ri->s[0], 1, &g->tb, &g->ldb)) {
		ia = 1;
		g->m = ci->n;
		g->n = ri->n;
	} else if (rt_mm_ld(ri->n, ri->s[2], ci->n, ci->s[2], 0, &tc, &ldc) &&
	           rt_mm_ld(ri->n, ri->s[0], si->n, si->s[0], 1, &g->ta, &g->lda) &&
	           rt_mm_ld(si->n, si->s[1], ci->n, ci->s[1], 1, &g->tb, &g->ldb)) {
		ia = 0;
		g->m = ri->n;
		g->n = ci->n;
	} else {
		return 0;
	}
	if (g->m > 2147483647 || g->n > 2147483647 || si->n > 2147483647 || bi->n > 2147483647)
		return 0;
	/* calls that add into C keep the f32 accumulation only when C is f32
	 * (or f64): an f16 or bf16 C would round each partial sum */
	if (ng[RT_AX_SUM] > 1 && op[2]->dt != RT_DT_F32 && op[2]->dt != RT_DT_F64)
		return 0;
	g->k = si->n;
	g->ldc = ldc;
	g->batch = bi->n;
	g->sa = bi->s[ia];
	g->sb = bi->s[1 - ia];
	g->sc = bi->s[2];
	g->alpha = 1;
	g->beta = add ? 1 : 0;
	p->A = op[ia];
	p->B = op[1 - ia];
	p->C = op[2];
	p->oa = u[ia].off;
	p->ob = u[1 - ia].off;
	p->oc = u[2].off;
	p->nloop = 0;
	p->nsum = ng[RT_AX_SUM] > 1 ? ng[RT_AX_SUM] - 1 : 0;
	for (int r = 0; r < 4; r++)
		for (int i = 0; i < ng[r]; i++) {
			const RtAx *x = &grp[r][i];
			if (x == bi || x == ri || x == ci || x == si)
				continue;
			p->lsz[p->nloop] = x->n;
			p->la[p->nloop] = x->s[ia];
			p->lb[p->nloop] = x->s[1 - ia];
			p->lc[p->nloop] = x->s[2];
			p->nloop++;
		}
	return 1;
}

/* Every call of plan p, the loops in order (the summed ones innermost:
 * after the first, each call adds into C). */
RT_FN void
rt_mm_run(const RtMM *p)
{
	int64_t ix[RT_MAXAX] = {0};
	int64_t ea = rt_esize(p->A->dt), eb = rt_esize(p->B->dt), ec = rt_esize(p->C->dt);
	RtGemm g = p->g;
	for (;;) {
		int64_t oa = p->oa, ob = p->ob, oc = p->oc;
		int l = p->nloop - 1, first = 1;
		for (int i = 0; i < p->nloop; i++) {
			oa += ix[i] * p->la[i];
			ob += ix[i] * p->lb[i];
			oc += ix[i] * p->lc[i];
			if (i >= p->nloop - p->nsum)
				first &= ix[i] == 0;
		}
		g.beta = first ? p->g.beta : 1;
		rt_gemm(&g, (const unsigned char *)p->A->p + oa * ea, p->A->dt,
		        (const unsigned char *)p->B->p + ob * eb, p->B->dt,
		        (unsigned char *)p->C->p + oc * ec, p->C->dt);
		rt_ngemm++;
		while (l >= 0 && ++ix[l] == p->lsz[l])
			ix[l--] = 0;
		if (l < 0)
			return;
	}
}

#if defined(RT_GPU) && !defined(RT_NAIVE)
enum { RT_TILE = 16 };

/* Factor q (0: P, 1: Q) of term t of element (r, c) of dst, batch b of its
 * tensor: forward P = a[r, t], Q = b[t, c]; slot 0 P = g[r, t], Q = b[c,
 * t]; slot 1 P = a[t, r], Q = g[t, c] (k_matmul_f's and k_matmul_b's
 * factors). (i, j) is (r, t) for P, (t, c) for Q. */
static __device__ rt_real
rt_mm_factor(const RtT *T, int slot, int q, int64_t b, int64_t i, int64_t j, int64_t M,
             int64_t N, int64_t K)
{
	if (slot < 0)
		return q ? rt_get(&T[1], (b * K + i) * N + j) : rt_get(&T[0], (b * M + i) * K + j);
	if (slot == 0)
		return q ? rt_get(&T[1], (b * K + j) * N + i) : rt_get(&T[2], (b * M + i) * N + j);
	return q ? rt_get(&T[2], (b * M + i) * N + j) : rt_get(&T[0], (b * M + j) * K + i);
}

/* The general matmul on the GPU: RT_TILE x RT_TILE elements of dst per
 * block, both factors staged in shared memory a tile of terms at a time;
 * each element sums the same terms in the same order as the plain kernels
 * (batches, then terms). T: a, b, g, dst; dst is [ndb, R, Cn], Tn terms. */
static __global__ void
k_mm_tiled(const RtT *T, int slot, int add, int64_t R, int64_t Cn, int64_t Tn)
{
	__shared__ rt_real ps[RT_TILE][RT_TILE + 1], qs[RT_TILE][RT_TILE + 1];
	const RtT *D = &T[3], *G = slot < 0 ? &T[3] : &T[2];
	int nb = G->nd - 2, tx = (int)threadIdx.x, ty = (int)threadIdx.y;
	int64_t M = slot < 0 ? T[0].shape[T[0].nd - 2] : G->shape[nb];
	int64_t N = slot < 0 ? T[1].shape[T[1].nd - 1] : G->shape[nb + 1];
	int64_t K = slot < 0 ? T[0].shape[T[0].nd - 1] : slot ? R : Cn;
	int64_t nbatch = G->n / (M * N), ndb = D->n / (R * Cn);
	for (int64_t db = blockIdx.z; db < ndb; db += gridDim.z)
	for (int64_t r0 = (int64_t)blockIdx.y * RT_TILE; r0 < R; r0 += (int64_t)gridDim.y * RT_TILE)
	for (int64_t c0 = (int64_t)blockIdx.x * RT_TILE; c0 < Cn; c0 += (int64_t)gridDim.x * RT_TILE) {
		rt_real s = 0;
		for (int64_t yb = slot < 0 ? db : 0; yb < (slot < 0 ? db + 1 : nbatch); yb++) {
			if (slot >= 0 && rt_batch(yb, G->shape, nb, D->shape, D->nd - 2) != db)
				continue;
			const RtT *Pt = slot == 0 ? &T[2] : &T[0], *Qt = slot == 1 ? &T[2] : &T[1];
			int64_t pb = Pt == G ? yb : rt_batch(yb, G->shape, nb, Pt->shape, Pt->nd - 2);
			int64_t qb = Qt == G ? yb : rt_batch(yb, G->shape, nb, Qt->shape, Qt->nd - 2);
			for (int64_t t0 = 0; t0 < Tn; t0 += RT_TILE) {
				ps[ty][tx] = r0 + ty < R && t0 + tx < Tn ?
				             rt_mm_factor(T, slot, 0, pb, r0 + ty, t0 + tx, M, N, K) : 0;
				qs[ty][tx] = t0 + ty < Tn && c0 + tx < Cn ?
				             rt_mm_factor(T, slot, 1, qb, t0 + ty, c0 + tx, M, N, K) : 0;
				__syncthreads();
				for (int u = 0; u < RT_TILE && t0 + u < Tn; u++)
					s += ps[ty][u] * qs[u][tx];
				__syncthreads();
			}
		}
		if (r0 + ty < R && c0 + tx < Cn)
			rt_out(D, (db * R + r0 + ty) * Cn + c0 + tx, s, add);
	}
}
#endif

/* A matmul no GEMM call expresses: on the GPU the tiled kernel, on the
 * host (and with -DRT_NAIVE) the plain kernels. */
RT_FN void
rt_mm_general(RtT *T, int slot, int add)
{
	const RtT *D = &T[3];
	rt_ngeneral++;
#if defined(RT_GPU) && !defined(RT_NAIVE)
	int64_t R = D->shape[D->nd - 2], Cn = D->shape[D->nd - 1];
	int64_t Tn = slot < 0 ? T[0].shape[T[0].nd - 1] : T[2].shape[T[2].nd - 1 - slot];
	int64_t ndb = D->n / (R * Cn), gx = (Cn + RT_TILE - 1) / RT_TILE, gy = (R + RT_TILE - 1) / RT_TILE;
	dim3 grid((unsigned)(gx < 65535 ? gx : 65535), (unsigned)(gy < 65535 ? gy : 65535),
	          (unsigned)(ndb < 65535 ? ndb : 65535));
	k_mm_tiled<<<grid, dim3(RT_TILE, RT_TILE)>>>(rt_args(T, 4), slot, add, R, Cn, Tn);
#else
	if (slot < 0) {
		RtT f[3] = {T[0], T[1], T[3]};
		RT_GO(k_matmul_f, D->n)(rt_args(f, 3), D->n);
	} else {
		RT_GO(k_matmul_b, D->n)(rt_args(T, 4), D->n, slot, add);
	}
#endif
	rt_after();
}

/* Matmul (slot -1) and its gradients (slots 0, 1; add: += into dst),
 * T: a, b, g (none in the forward), dst: GEMM calls where rt_mm_plan finds
 * them (not with -DRT_NAIVE), else the general kernel. */
RT_FN void
rt_mm(RtT *T, int slot, int add)
{
#ifndef RT_NAIVE
	RtMM p;
	if (rt_mm_plan(T, slot, add, &p)) {
		rt_mm_run(&p);
		return;
	}
#endif
	rt_mm_general(T, slot, add);
}

RT_FN void
rt_f_matmul(RtT x, RtT w, RtT y)
{
	RtT a[4] = {x, w, rt_none(), y};
	rt_mm(a, -1, 0);
}

RT_FN void
rt_b_matmul(int slot, RtT x, RtT w, RtT g, RtT dst, int add)
{
	RtT a[4] = {x, w, g, dst};
	rt_mm(a, slot, add);
}

/* ------------------------------------------------------------ conv2d */

/* Per axis (H, W): strides, begin pads, dilations; groups. The end pads
 * are in the output's shape. conv1d runs these kernels with H of size 1. */
typedef struct RtConv { int64_t sh, sw, ph, pw, dh, dw, g; } RtConv;

/* The element of x [N, C, H, W] that output position (oh, ow) reads
 * through tap (kh, kw) in plane bc (= b * C + channel), or -1 where the
 * tap falls in the padding. */
RT_DFN int64_t
rt_conv_tap(const RtT *X, RtConv c, int64_t bc, int64_t oh, int64_t ow, int64_t kh, int64_t kw)
{
	int64_t H = X->shape[2], W = X->shape[3];
	int64_t h = oh * c.sh - c.ph + kh * c.dh, w = ow * c.sw - c.pw + kw * c.dw;
	if (h < 0 || h >= H || w < 0 || w >= W)
		return -1;
	return (bc * H + h) * W + w;
}

/* T: x [N, C, H, W], w [O, C/g, KH, KW], y [N, O, OH, OW] */
RT_K
k_conv_f(const RtT *T, int64_t n, RtConv c)
{
	const RtT *X = &T[0], *Wt = &T[1], *Y = &T[2];
	int64_t C = X->shape[1];
	int64_t O = Wt->shape[0], Cg = Wt->shape[1], KH = Wt->shape[2], KW = Wt->shape[3];
	int64_t OH = Y->shape[2], OW = Y->shape[3];
	RT_FOR(i, n) {
		int64_t ow = i % OW, oh = i / OW % OH, o = i / (OW * OH) % O, b = i / (OW * OH * O);
		int64_t grp = o / (O / c.g);
		rt_real s = 0;
		for (int64_t ci = 0; ci < Cg; ci++)
			for (int64_t kh = 0; kh < KH; kh++)
				for (int64_t kw = 0; kw < KW; kw++) {
					int64_t at = rt_conv_tap(X, c, b * C + grp * Cg + ci, oh, ow, kh, kw);
					if (at >= 0)
						s += rt_get(X, at) *
						     rt_get(Wt, ((o * Cg + ci) * KH + kh) * KW + kw);
				}
		rt_put(Y, i, s);
	}
}

/* Implicit GEMM. A convolution and its two gradients are GEMMs whose
 * gathered operand is read from the tensor as the tiles fill (no im2col
 * buffer, nothing allocated): per group, D(u, v) = sum over k < K of
 * X(u, k) P(v, k), X gathered, P plain, in one of three modes:
 *   0 forward:  u = (b, oh, ow), v = o, k = (ci, kh, kw); X = x, P = w, D = y
 *   1 grad(x):  u = (b, h, w), v = ci, k = (o, kh, kw); X = g, P = w, D = dx
 *   2 grad(w):  u = (ci, kh, kw), v = o, k = (b, oh, ow); X = x, P = g, D = dw
 * (o and ci within the group). Each D(u, v) is summed from 0 over k = 0,
 * 1, ... in order: the plain kernels' order, the same on the GPU (a tiled
 * kernel) and on the host (rt_dot_rows over packed tiles), run after run.
 * X(u, k) is where a position (u in modes 0 and 1, k in mode 2) meets a
 * tap (the other index): both decode to an RtCgIx once per tile row or
 * column (rt_cg_ix), and rt_cg_at combines them; the padding, a stride
 * that skips a grad(x) tap and the rows past the end read 0. P(v, k) and
 * D(u, v) are an index's `other` offset plus v times a stride (sp, so).
 * Indices are int: the plan takes tensors of fewer than 2^31 elements. */
typedef struct RtCg {
	int mode, U, V, K, G, add;
	int C, H, W, O, Cg, Og, KH, KW, OH, OW;
	int sh, sw, ph, pw, dh, dw;
	int sp, so;             /* P(v, k) = ix(k).other + v sp, D(u, v) = ix(u).other + v so */
} RtCg;

/* A decoded position or tap: base, h, w as rt_cg_at combines them, and
 * the offset in the other tensor (see RtCg); base -1: past the end. */
typedef struct RtCgIx { int base, h, w, other; } RtCgIx;

/* Convolutions run as implicit GEMMs (tests/unit/test_conv counts them). */
static int64_t rt_nconvgemm;

/* Terms per step of the GPU kernel; u rows per tile it packs on the host
 * (the GPU's tiles are 16 R x 16 R, R = 4, 2 or 1: k_conv_gemm). */
enum { RT_CG_BK = 16, RT_CG_BU = 64 };

/* Index i of group grp along u (side 0) or k (side 1), decoded. A
 * position of y (modes 0 and 2: (b, oh, ow)) holds the top-left input
 * element its window starts at; one of dx (mode 1: (b, h, w)) holds
 * (h, w) plus the begin pads, whose difference with a tap's offsets is
 * the output position times the stride. A tap (ci, kh, kw) of x, or (o,
 * kh, kw) of g in mode 1, holds its channel's plane and dilated offsets. */
RT_DFN RtCgIx
rt_cg_ix(const RtCg *g, int grp, int side, int64_t i)
{
	RtCgIx x = {-1, 0, 0, 0};
	int pos = side == (g->mode == 2), KK = g->KH * g->KW;
	if (i >= (side ? g->K : g->U))
		return x;
	int j = (int)i;
	if (pos && g->mode == 1) {
		int HW = g->H * g->W, b = j / HW, r = j % HW;
		x.base = (b * g->O + grp * g->Og) * g->OH * g->OW;
		x.h = r / g->W + g->ph;
		x.w = r % g->W + g->pw;
		x.other = (b * g->C + grp * g->Cg) * HW + r;
	} else if (pos) {
		int P = g->OH * g->OW, b = j / P, r = j % P;
		x.base = (b * g->C + grp * g->Cg) * g->H * g->W;
		x.h = r / g->OW * g->sh - g->ph;
		x.w = r % g->OW * g->sw - g->pw;
		x.other = (b * g->O + grp * g->Og) * P + r;
	} else {
		int ch = j / KK, r = j % KK;
		x.h = r / g->KW * g->dh;
		x.w = r % g->KW * g->dw;
		if (g->mode == 1) {
			x.base = ch * g->OH * g->OW;
			x.other = (grp * g->Og + ch) * g->Cg * KK + r;
		} else {
			x.base = ch * g->H * g->W;
			x.other = grp * g->Og * g->Cg * KK + j;
		}
	}
	return x;
}

/* The element of X where position p meets tap t, or -1 (padding, a
 * skipped grad(x) tap, past the end). */
RT_DFN int
rt_cg_at(const RtCg *g, RtCgIx p, RtCgIx t)
{
	if (p.base < 0 || t.base < 0)
		return -1;
	if (g->mode != 1) {
		int h = p.h + t.h, w = p.w + t.w;
		if (h < 0 || h >= g->H || w < 0 || w >= g->W)
			return -1;
		return p.base + t.base + h * g->W + w;
	}
	int th = p.h - t.h, tw = p.w - t.w;
	if (th < 0 || tw < 0 || th % g->sh || tw % g->sw || th / g->sh >= g->OH ||
	    tw / g->sw >= g->OW)
		return -1;
	return p.base + t.base + th / g->sh * g->OW + tw / g->sw;
}

/* X(u, k) from the decoded u and k. */
RT_DFN rt_real
rt_cg_x(const RtCg *g, const RtT *X, RtCgIx u, RtCgIx k)
{
	int at = g->mode == 2 ? rt_cg_at(g, k, u) : rt_cg_at(g, u, k);
	return at < 0 ? 0 : rt_ld(X, at);
}

/* The implicit GEMM of convolution mode m (0: forward, 1: grad(x), 2:
 * grad(w); add: += into dst) with x, w, the output-shaped y (the forward's
 * result or the gradient g) and dst, into g and T (X, P, D, views
 * folded), or 0 where the plain kernels run instead: a view that is not
 * contiguous, a tensor of 2^31 elements or more, more than 65535 groups,
 * or a GEMM under 8 wide along u or v (a depthwise convolution: its one
 * output channel per group would fill 1/16 of a tile's columns at best,
 * so it keeps the plain kernel, a thread per element). */
RT_FN int
rt_cg_plan(RtT x, RtT w, RtT y, RtT dst, RtConv c, int m, int add, RtCg *g, RtT *T)
{
	RtT t[3] = {m == 1 ? y : x, m == 2 ? y : w, dst};
	int64_t U, V, K;
	for (int i = 0; i < 3; i++) {
		rt_flat(&t[i]);
		if (!t[i].p || t[i].dt == RT_DT_ONE || t[i].nmap || t[i].n > 2147483647)
			return 0;
		T[i] = t[i];
	}
	if (x.n > 2147483647 || w.n > 2147483647 || y.n > 2147483647 || c.g > 65535)
		return 0;
	memset(g, 0, sizeof *g);
	g->mode = m;
	g->add = add;
	g->G = (int)c.g;
	g->C = (int)x.shape[1];
	g->H = (int)x.shape[2];
	g->W = (int)x.shape[3];
	g->O = (int)w.shape[0];
	g->Cg = (int)w.shape[1];
	g->KH = (int)w.shape[2];
	g->KW = (int)w.shape[3];
	g->OH = (int)y.shape[2];
	g->OW = (int)y.shape[3];
	g->Og = g->O / g->G;
	g->sh = (int)c.sh;
	g->sw = (int)c.sw;
	g->ph = (int)c.ph;
	g->pw = (int)c.pw;
	g->dh = (int)c.dh;
	g->dw = (int)c.dw;
	int64_t N = x.shape[0], KK = w.shape[2] * w.shape[3], P = y.shape[2] * y.shape[3];
	if (m == 0) {
		U = N * P, V = g->Og, K = g->Cg * KK;
		g->sp = (int)K;
		g->so = (int)P;
	} else if (m == 1) {
		U = N * g->H * g->W, V = g->Cg, K = g->Og * KK;
		g->sp = (int)KK;
		g->so = g->H * g->W;
	} else {
		U = g->Cg * KK, V = g->Og, K = N * P;
		g->sp = (int)P;
		g->so = g->Cg * (int)KK;
	}
	if (U < 8 || V < 8)
		return 0;
	g->U = (int)U;
	g->V = (int)V;
	g->K = (int)K;
	return 1;
}

#if defined(RT_GPU) && !defined(RT_NAIVE)
/* The tiled implicit GEMM: a block of 256 threads computes a 16 R x 16 R
 * tile of D (grid: v tiles, u tiles, groups), each thread R x R elements
 * (u = ty + 16 i, v = tx + 16 j) in registers. Per step of RT_CG_BK terms
 * the block decodes the step's k indices, gathers X's and loads P's tile
 * into shared memory (along k where consecutive k are neighbours in
 * memory: P always, X's x in mode 2; else along u), then each thread adds
 * the step's terms in order: the tile size changes which thread sums an
 * element, not the order of its terms. T: X, P, D. */
template <int R>
static __global__ void __launch_bounds__(256)
k_conv_gemm(const RtT *T, RtCg g)
{
	enum { B = 16 * R };
	__shared__ rt_real xs[RT_CG_BK][B + 1], ps[RT_CG_BK][B + 1];
	__shared__ RtCgIx ui[B], ki[RT_CG_BK];
	const RtT *X = &T[0], *P = &T[1], *D = &T[2];
	int t = (int)threadIdx.x, tx = t % 16, ty = t / 16, grp = (int)blockIdx.z;
	for (int64_t u0 = (int64_t)blockIdx.y * B; u0 < g.U; u0 += (int64_t)gridDim.y * B)
	for (int64_t v0 = (int64_t)blockIdx.x * B; v0 < g.V; v0 += (int64_t)gridDim.x * B) {
		rt_real acc[R][R];
		#pragma unroll
		for (int i = 0; i < R; i++)
			#pragma unroll
			for (int j = 0; j < R; j++)
				acc[i][j] = 0;
		__syncthreads();        /* the last tile's stores have read ui */
		if (t < B)
			ui[t] = rt_cg_ix(&g, grp, 0, u0 + t);
		for (int64_t k0 = 0; k0 < g.K; k0 += RT_CG_BK) {
			__syncthreads();        /* the last step's terms are added */
			if (t < RT_CG_BK)
				ki[t] = rt_cg_ix(&g, grp, 1, k0 + t);
			__syncthreads();
			#pragma unroll
			for (int q = 0; q < R; q++) {   /* 16 B elements of each tile */
				int e = t + 256 * q, kk = e % RT_CG_BK, v = e / RT_CG_BK;
				int xk = g.mode == 2 ? kk : e / B, xu = g.mode == 2 ? v : e % B;
				xs[xk][xu] = rt_cg_x(&g, X, ui[xu], ki[xk]);
				ps[kk][v] = v0 + v < g.V && ki[kk].base >= 0 ?
				            rt_ld(P, ki[kk].other + (v0 + v) * g.sp) : 0;
			}
			__syncthreads();
			int kn = g.K - k0 < RT_CG_BK ? (int)(g.K - k0) : RT_CG_BK;
			for (int kk = 0; kk < kn; kk++) {
				rt_real a[R], b[R];
				#pragma unroll
				for (int i = 0; i < R; i++) {
					a[i] = xs[kk][ty + 16 * i];
					b[i] = ps[kk][tx + 16 * i];
				}
				#pragma unroll
				for (int i = 0; i < R; i++)
					#pragma unroll
					for (int j = 0; j < R; j++)
						acc[i][j] += a[i] * b[j];
			}
		}
		#pragma unroll
		for (int i = 0; i < R; i++)
			#pragma unroll
			for (int j = 0; j < R; j++) {
				RtCgIx u = ui[ty + 16 * i];
				int64_t v = v0 + tx + 16 * j;
				if (u.base < 0 || v >= g.V)
					continue;
				int at = u.other + (int)v * g.so;
				rt_st(D, at, g.add ? rt_ld(D, at) + acc[i][j] : acc[i][j]);
			}
	}
}

/* Blocks of a 16 R x 16 R tiling (per group, times the groups). */
RT_FN int64_t
rt_cg_tiles(const RtCg *g, int R)
{
	int64_t b = 16 * R;
	return ((int64_t)g->U + b - 1) / b * (((int64_t)g->V + b - 1) / b) * g->G;
}

/* One launch, grid (v tiles, u tiles up to 65535, groups): 64 x 64 tiles
 * (R = 4) where they make two blocks per multiprocessor, else 32 x 32 or
 * 16 x 16 tiles, so that a GEMM with few outputs and many terms (grad(w)
 * of an early layer: 64 x 576 outputs, N H W terms) still spreads over the
 * GPU without splitting any element's sum. */
RT_FN void
rt_conv_gemm(const RtCg *g, RtT *T)
{
	static int nsm;
	if (!nsm) {
		int dev;
		rt_cuda(cudaGetDevice(&dev), "cudaGetDevice");
		rt_cuda(cudaDeviceGetAttribute(&nsm, cudaDevAttrMultiProcessorCount, dev),
		        "cudaDeviceGetAttribute");
	}
	int R = rt_cg_tiles(g, 4) >= 2 * nsm ? 4 : rt_cg_tiles(g, 2) >= 2 * nsm ? 2 : 1;
	int64_t gu = ((int64_t)g->U + 16 * R - 1) / (16 * R), gv = ((int64_t)g->V + 16 * R - 1) / (16 * R);
	dim3 grid((unsigned)(gv < 65535 ? gv : 65535), (unsigned)(gu < 65535 ? gu : 65535),
	          (unsigned)g->G);
	const RtT *a = rt_args(T, 3);
	if (R == 4)
		k_conv_gemm<4><<<grid, 256>>>(a, *g);
	else if (R == 2)
		k_conv_gemm<2><<<grid, 256>>>(a, *g);
	else
		k_conv_gemm<1><<<grid, 256>>>(a, *g);
	rt_nconvgemm++;
	rt_after();
}
#elif !defined(RT_GPU)
/* The host's mirror of k_conv_gemm, the same interface and arguments, the
 * same index mapping (rt_cg_ix, rt_cg_at, sp, so) and the same order of
 * terms: per group, P's rows (v, k) packed once, X's rows packed
 * RT_CG_BU u at a time, rt_dot_rows on the two, each element stored as
 * the kernel stores it. */
RT_FN void
rt_conv_gemm(const RtCg *g, RtT *T)
{
	const RtT *X = &T[0], *P = &T[1], *D = &T[2];
	int64_t K = g->K, V = g->V;
	rt_real *pv = rt_scratch(V * K), *xu = rt_scratch(RT_CG_BU * K);
	rt_real *y = rt_scratch(RT_CG_BU * V);
	RtCgIx *ki = (RtCgIx *)malloc(sizeof *ki * (size_t)K), ui[RT_CG_BU];
	if (!ki)
		rt_die("out of memory (convolution scratch)");
	for (int grp = 0; grp < g->G; grp++) {
		for (int64_t k = 0; k < K; k++)
			ki[k] = rt_cg_ix(g, grp, 1, k);
		for (int64_t v = 0; v < V; v++)
			for (int64_t k = 0; k < K; k++)
				pv[v * K + k] = rt_ld(P, ki[k].other + v * g->sp);
		for (int64_t u0 = 0; u0 < g->U; u0 += RT_CG_BU) {
			int64_t nu = g->U - u0 < RT_CG_BU ? g->U - u0 : RT_CG_BU;
			for (int64_t u = 0; u < nu; u++) {
				ui[u] = rt_cg_ix(g, grp, 0, u0 + u);
				for (int64_t k = 0; k < K; k++)
					xu[u * K + k] = rt_cg_x(g, X, ui[u], ki[k]);
			}
			rt_dot_rows(xu, pv, nu, V, K, y);
			for (int64_t u = 0; u < nu; u++)
				for (int64_t v = 0; v < V; v++) {
					int64_t at = ui[u].other + v * g->so;
					rt_st(D, at, g->add ? rt_ld(D, at) + y[u * V + v] : y[u * V + v]);
				}
		}
	}
	rt_nconvgemm++;
	free(pv);
	free(xu);
	free(y);
	free(ki);
}
#endif

/* A 1x1 convolution of stride 1, no padding, one group (kern: its weight)
 * is a matmul: y [N, O, H W] = w [O, C] @ x [N, C, H W], the weight shared
 * by the batch, and its gradients the matmul's (dx: slot 1, dw: slot 0),
 * so it runs as GEMM calls (rt_mm), in the plain kernels' order but for
 * dw's calls adding into an f32 result. */
RT_FN int
rt_conv_1x1(RtT kern, RtConv c)
{
	return kern.shape[2] == 1 && kern.shape[3] == 1 && c.sh == 1 && c.sw == 1 && c.ph == 0 &&
	       c.pw == 0 && c.g == 1;
}

/* An activation [N, C, H, W] as [N, C, H W], a weight [O, C, 1, 1] as
 * [O, C]: views for rt_mm. */
RT_FN RtT
rt_conv_as_mm(RtT t, int weight)
{
	int64_t sh[3] = {t.shape[0], t.shape[1], t.shape[2] * t.shape[3]};
	return rt_reshape(t, weight ? 2 : 3, sh);
}

RT_FN void
rt_f_conv2d(RtT x, RtT w, RtT y, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
            int64_t dh, int64_t dw, int64_t g)
{
	RtT a[3] = {x, w, y};
	RtConv c = {sh, sw, ph, pw, dh, dw, g};
#ifndef RT_NAIVE
	if (rt_conv_1x1(w, c)) {
		RtT m[4] = {rt_conv_as_mm(w, 1), rt_conv_as_mm(x, 0), rt_none(), rt_conv_as_mm(y, 0)};
		rt_mm(m, -1, 0);
		return;
	}
	RtCg cg;
	RtT t[3];
	if (rt_cg_plan(x, w, y, y, c, 0, 0, &cg, t)) {
		rt_conv_gemm(&cg, t);
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
						int64_t at = rt_conv_tap(X, c, b * C + ci, oh, ow, kh, kw);
						if (at >= 0)
							s += rt_get(G, ((b * O + o) * OH + oh) * OW + ow) *
							     rt_get(X, at);
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
#ifndef RT_NAIVE
	if (rt_conv_1x1(slot ? dst : w, c)) {   /* the operand a slot does not read: dst */
		RtT wm = rt_conv_as_mm(slot ? dst : w, 1), dm = rt_conv_as_mm(dst, slot);
		RtT m[4] = {wm, slot ? rt_conv_as_mm(x, 0) : dm, rt_conv_as_mm(g, 0), dm};
		rt_mm(m, !slot, add);
		return;
	}
	RtCg cg;
	RtT t[3];
	if (rt_cg_plan(slot ? x : dst, slot ? dst : w, g, dst, c, slot + 1, add, &cg, t)) {
		rt_conv_gemm(&cg, t);
		return;
	}
#endif
	RT_GO(k_conv_b, dst.n)(rt_args(a, 4), dst.n, c, slot, add);
	rt_after();
}

/* ------------------------------------------------------------ attention */

/* The plain kernels: one thread per row. The programs run them with
 * -DRT_NAIVE only, else the tiled kernels (runtime_ops.h, with the
 * launchers rt_f_attention and rt_b_attention); tests compare the two. */

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

/* One key of the online softmax: its score s rescales the running max m,
 * sum l and output row acc, then adds its weight (times w) of V's row vr. */
RT_DFN void
rt_online(rt_real *acc, rt_real *m, rt_real *l, rt_real s, rt_real w, const RtT *V, int64_t vr,
          int64_t Dh)
{
	if (s > *m) {
		rt_real corr = rt_exp(*m - s);
		*l *= corr;
		for (int64_t d = 0; d < Dh; d++)
			acc[d] *= corr;
		*m = s;
	}
	rt_real p = rt_exp(s - *m);
	*l += p;
	for (int64_t d = 0; d < Dh; d++)
		acc[d] += p * w * rt_get(V, vr * Dh + d);
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
		for (int64_t j = 0; j < kend; j++)
			rt_online(acc, &m, &l, rt_score(Q, K, r, bh * Tk + j, Dh), 1, V, bh * Tk + j, Dh);
		for (int64_t d = 0; d < Dh; d++)
			rt_put(&T[3], r * Dh + d, acc[d] / l);
		rt_put(&T[4], r, m + rt_log(l));
	}
}

/* The query rows of q [B, H, S, Dh], one thread each; a row's Dh values
 * must fit the kernels' RT_MAXDH accumulators. */
RT_FN int64_t
rt_attn_rows(RtT q)
{
	if (q.shape[3] > RT_MAXDH)
		rt_die("attention head size above RT_MAXDH");
	return q.n / q.shape[3];
}

/* Query row qi's and key row kj's term of attention's backward, added to
 * acc; P: q, k, v, out, g; p: the softmax weight, w: its dropout weight.
 * Slot 2 (dv) adds p w g[qi]; slots 0, 1 (dq, dk) add ds times k[kj] or
 * q[qi], where ds = p (w g[qi].v[kj] - g[qi].out[qi]) sc. */
RT_DFN void
rt_attn_bterm(rt_real *acc, const RtT *const *P, int slot, int64_t qi, int64_t kj, rt_real p,
              rt_real w, rt_real sc, int64_t Dh)
{
	const RtT *Q = P[0], *K = P[1], *V = P[2], *O = P[3], *G = P[4];
	if (slot == 2) {
		for (int64_t d = 0; d < Dh; d++)
			acc[d] += p * w * rt_get(G, qi * Dh + d);
		return;
	}
	rt_real ds = p * (w * rt_dot(G, qi, V, kj, Dh) - rt_dot(G, qi, O, qi, Dh)) * sc;
	for (int64_t d = 0; d < Dh; d++)
		acc[d] += ds * (slot ? rt_get(Q, qi * Dh + d) : rt_get(K, kj * Dh + d));
}

/* T: q, k, v, out, lse, g, dst. slot 0: one thread per query row (dq);
 * slots 1, 2: one thread per key row (dk, dv). */
RT_K
k_attn_b(const RtT *T, int64_t rows, int causal, int slot, int add)
{
	const RtT *Q = &T[0], *K = &T[1], *L = &T[4], *D = &T[6];
	const RtT *P[5] = {Q, K, &T[2], &T[3], &T[5]};
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
			rt_attn_bterm(acc, P, slot, qi, kj, p, 1, sc, Dh);
		}
		for (int64_t d = 0; d < Dh; d++)
			rt_out(D, r * Dh + d, acc[d], add);
	}
}

/* ------------------------------------------------------------ norms */

#define RT_EPS ((rt_real)1e-5)

/* T: x, g, b, y, mean, rstd over rows of the last axis. rms: no mean, no b.
 * One tree per row (RT_ROWS) for the mean, one for the variance. */
RT_K
k_norm_f(const RtT *T, int64_t rows, int rms)
{
	const RtT *X = &T[0];
	int64_t C = X->shape[X->nd - 1];
	RT_SHARED(double, sh);
	RT_ROWS(r, rows) {
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t c = l; c < C; c += RT_NL)
				s += rt_get(X, r * C + c);
			sh[l] = s;
		}
		rt_real mean = (rt_real)rt_tree(sh, 0) / C;
		mean = rms ? 0 : mean;
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t c = l; c < C; c += RT_NL) {
				rt_real x = rt_get(X, r * C + c) - mean;
				s += x * x;
			}
			sh[l] = s;
		}
		rt_real rstd = 1 / rt_sqrt((rt_real)rt_tree(sh, 0) / C + RT_EPS);
		RT_LANES(l)
			for (int64_t c = l; c < C; c += RT_NL) {
				rt_real xh = (rt_get(X, r * C + c) - mean) * rstd;
				rt_put(&T[3], r * C + c, xh * rt_get(&T[1], c) + (rms ? 0 : rt_get(&T[2], c)));
			}
		RT_LANE0 {
			if (!rms)
				rt_put(&T[4], r, mean);
			rt_put(&T[5], r, rstd);
		}
	}
}

RT_FN void
rt_f_layernorm(RtT x, RtT g, RtT b, RtT y, RtT mean, RtT rstd)
{
	RtT a[6] = {x, g, b, y, mean, rstd};
	int64_t rows = x.n / x.shape[x.nd - 1];
	RT_RGO(k_norm_f, rows)(rt_args(a, 6), rows, 0);
	rt_after();
}

RT_FN void
rt_f_rmsnorm(RtT x, RtT g, RtT y, RtT rstd)
{
	RtT a[6] = {x, g, rt_none(), y, rt_none(), rstd};
	int64_t rows = x.n / x.shape[x.nd - 1];
	RT_RGO(k_norm_f, rows)(rt_args(a, 6), rows, 1);
	rt_after();
}

/* T: x, gamma, mean, rstd, g, dst. slot 0: dx, a row's two sums as trees;
 * slot 1: dgamma and slot 2: dbeta, a column's sum over the rows as a
 * tree. */
RT_K
k_norm_b(const RtT *T, int64_t n, int rms, int slot, int add)
{
	const RtT *X = &T[0], *Gm = &T[1], *G = &T[4], *D = &T[5];
	int64_t C = X->shape[X->nd - 1], R = X->n / C;
	RT_SHARED(double, s1);
	RT_SHARED(double, s2);
	RT_ROWS(i, n) {
		if (slot == 0) {
			rt_real mean = rms ? 0 : rt_get(&T[2], i), rstd = rt_get(&T[3], i);
			RT_LANES(l) {
				rt_real m1 = 0, m2 = 0;
				for (int64_t c = l; c < C; c += RT_NL) {
					rt_real xh = (rt_get(X, i * C + c) - mean) * rstd;
					rt_real dxh = rt_get(G, i * C + c) * rt_get(Gm, c);
					m1 += dxh;
					m2 += dxh * xh;
				}
				s1[l] = m1;
				s2[l] = m2;
			}
			rt_real m1 = (rt_real)rt_tree(s1, 0), m2 = (rt_real)rt_tree(s2, 0);
			m1 = rms ? 0 : m1 / C;
			m2 /= C;
			RT_LANES(l)
				for (int64_t c = l; c < C; c += RT_NL) {
					rt_real xh = (rt_get(X, i * C + c) - mean) * rstd;
					rt_real dxh = rt_get(G, i * C + c) * rt_get(Gm, c);
					rt_out(D, i * C + c, rstd * (dxh - m1 - xh * m2), add);
				}
			continue;
		}
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t r = l; r < R; r += RT_NL) {
				rt_real g = rt_get(G, r * C + i);
				if (slot == 1)
					g *= (rt_get(X, r * C + i) - (rms ? 0 : rt_get(&T[2], r))) * rt_get(&T[3], r);
				s += g;
			}
			s1[l] = s;
		}
		rt_real s = (rt_real)rt_tree(s1, 0);
		RT_LANE0 rt_out(D, i, s, add);
	}
}

RT_FN void
rt_b_norm(int rms, int slot, RtT x, RtT gamma, RtT mean, RtT rstd, RtT g, RtT dst, int add)
{
	RtT a[6] = {x, gamma, mean, rstd, g, dst};
	int64_t n = slot ? dst.n : x.n / x.shape[x.nd - 1];
	RT_RGO(k_norm_b, n)(rt_args(a, 6), n, rms, slot, add);
	rt_after();
}

/* Batchnorm over axis 1: channel c holds elements (b * C + c) * R + r. */
RT_DFN int64_t
rt_bn_at(const RtT *X, int64_t c, int64_t k)
{
	int64_t C = X->shape[1], R = X->n / (X->shape[0] * C);
	return (k / R * C + c) * R + k % R;
}

/* T: x, g, b, y, mean, rstd; a tree per channel for the mean and one for
 * the variance. */
RT_K
k_bn_f(const RtT *T, int64_t C)
{
	const RtT *X = &T[0];
	int64_t cnt = X->n / C;
	RT_SHARED(double, sh);
	RT_ROWS(c, C) {
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t k = l; k < cnt; k += RT_NL)
				s += rt_get(X, rt_bn_at(X, c, k));
			sh[l] = s;
		}
		rt_real mean = (rt_real)rt_tree(sh, 0) / cnt;
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t k = l; k < cnt; k += RT_NL) {
				rt_real x = rt_get(X, rt_bn_at(X, c, k)) - mean;
				s += x * x;
			}
			sh[l] = s;
		}
		rt_real rstd = 1 / rt_sqrt((rt_real)rt_tree(sh, 0) / cnt + RT_EPS);
		RT_LANES(l)
			for (int64_t k = l; k < cnt; k += RT_NL) {
				int64_t j = rt_bn_at(X, c, k);
				rt_put(&T[3], j, (rt_get(X, j) - mean) * rstd * rt_get(&T[1], c) +
				       rt_get(&T[2], c));
			}
		RT_LANE0 {
			rt_put(&T[4], c, mean);
			rt_put(&T[5], c, rstd);
		}
	}
}

RT_FN void
rt_f_batchnorm(RtT x, RtT g, RtT b, RtT y, RtT mean, RtT rstd)
{
	RT_RUN(RT_RGO, k_bn_f, x.shape[1], (x, g, b, y, mean, rstd), x.shape[1]);
}

/* T: x, gamma, mean, rstd, g, dst; a channel's two sums as trees for every
 * slot. */
RT_K
k_bn_b(const RtT *T, int64_t C, int slot, int add)
{
	const RtT *X = &T[0], *G = &T[4], *D = &T[5];
	int64_t cnt = X->n / C;
	RT_SHARED(double, s1);
	RT_SHARED(double, s2);
	RT_ROWS(c, C) {
		rt_real mean = rt_get(&T[2], c), rstd = rt_get(&T[3], c);
		rt_real gm = rt_get(&T[1], c);
		RT_LANES(l) {
			rt_real m1 = 0, m2 = 0;
			for (int64_t k = l; k < cnt; k += RT_NL) {
				int64_t j = rt_bn_at(X, c, k);
				rt_real xh = (rt_get(X, j) - mean) * rstd, g = rt_get(G, j);
				m1 += slot == 0 ? g * gm : g;
				m2 += slot == 0 ? g * gm * xh : g * xh;
			}
			s1[l] = m1;
			s2[l] = m2;
		}
		rt_real m1 = (rt_real)rt_tree(s1, 0), m2 = (rt_real)rt_tree(s2, 0);
		if (slot) {
			RT_LANE0 rt_out(D, c, slot == 1 ? m2 : m1, add);
			continue;
		}
		m1 /= cnt;
		m2 /= cnt;
		RT_LANES(l)
			for (int64_t k = l; k < cnt; k += RT_NL) {
				int64_t j = rt_bn_at(X, c, k);
				rt_real xh = (rt_get(X, j) - mean) * rstd;
				rt_out(D, j, rstd * (rt_get(G, j) * gm - m1 - xh * m2), add);
			}
	}
}

RT_FN void
rt_b_batchnorm(int slot, RtT x, RtT gamma, RtT mean, RtT rstd, RtT g, RtT dst, int add)
{
	RT_RUN(RT_RGO, k_bn_b, x.shape[1], (x, gamma, mean, rstd, g, dst), x.shape[1], slot,
	       add);
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
	if (a.inner == 1)
		return r * a.L + l;
	return (r / a.inner * a.L + l) * a.inner + r % a.inner;
}

/* T: x, y; a row's max and its sum of exponentials as trees. */
RT_K
k_softmax_f(const RtT *T, int64_t rows, RtAxis a, int lg)
{
	RT_SHARED(double, sh);
	RT_ROWS(r, rows) {
		RT_LANES(l) {
			rt_real m = -INFINITY;
			for (int64_t k = l; k < a.L; k += RT_NL) {
				rt_real x = rt_get(&T[0], rt_row(a, r, k));
				m = x > m ? x : m;
			}
			sh[l] = m;
		}
		rt_real m = (rt_real)rt_tree(sh, 1);
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t k = l; k < a.L; k += RT_NL)
				s += rt_exp(rt_get(&T[0], rt_row(a, r, k)) - m);
			sh[l] = s;
		}
		rt_real s = (rt_real)rt_tree(sh, 0);
		RT_LANES(l)
			for (int64_t k = l; k < a.L; k += RT_NL) {
				rt_real x = rt_get(&T[0], rt_row(a, r, k)) - m;
				rt_put(&T[1], rt_row(a, r, k), lg ? x - rt_log(s) : rt_exp(x) / s);
			}
	}
}

RT_FN void
rt_f_softmax(RtT x, RtT y, int axis, int lg)
{
	RtT t[2] = {x, y};
	RtAxis a = rt_axis(x, axis);
	int64_t rows = x.n / (a.L ? a.L : 1);
	RT_RGO(k_softmax_f, rows)(rt_args(t, 2), rows, a, lg);
	rt_after();
}

/* T: y, g, dst; a row's sum as a tree. */
RT_K
k_softmax_b(const RtT *T, int64_t rows, RtAxis a, int lg, int add)
{
	RT_SHARED(double, sh);
	RT_ROWS(r, rows) {
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t k = l; k < a.L; k += RT_NL) {
				int64_t j = rt_row(a, r, k);
				s += lg ? rt_get(&T[1], j) : rt_get(&T[1], j) * rt_get(&T[0], j);
			}
			sh[l] = s;
		}
		rt_real s = (rt_real)rt_tree(sh, 0);
		RT_LANES(l)
			for (int64_t k = l; k < a.L; k += RT_NL) {
				int64_t j = rt_row(a, r, k);
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
	RT_RGO(k_softmax_b, rows)(rt_args(t, 3), rows, a, lg, add);
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
	RT_RUN(RT_GO, k_gap_f, y.n, (x, y), y.n);
}

RT_FN void
rt_b_gap(RtT g, RtT dst, int add)
{
	RT_RUN(RT_GO, k_gap_b, dst.n, (g, dst), dst.n, add);
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
	RT_RUN(RT_GO, k_upsample, dst.n, (src, dst), dst.n, sc, bwd, add);
}

/* ------------------------------------------------------------ reductions */

/* T: x, y. Sum (or mean) over one axis, a tree per output element; over
 * everything, rt_reduce. */
RT_K
k_sum_f(const RtT *T, int64_t n, RtAxis a, int mean)
{
	RT_SHARED(double, sh);
	RT_ROWS(r, n) {
		RT_LANES(l) {
			rt_real s = 0;
			for (int64_t k = l; k < a.L; k += RT_NL)
				s += rt_get(&T[0], rt_row(a, r, k));
			sh[l] = s;
		}
		rt_real s = (rt_real)rt_tree(sh, 0);
		RT_LANE0 rt_put(&T[1], r, mean ? s / (rt_real)a.L : s);
	}
}

RT_FN void
rt_f_sum(RtT x, RtT y, int axis, int mean)
{
	RtT t[2] = {x, y};
	if (axis < 0) {
		RtRed c = {mean ? RT_RED_MEAN : RT_RED_SUM, x.n, 0, 0};
		rt_reduce(t, 2, c, 1, NULL);
		return;
	}
	RT_RGO(k_sum_f, y.n)(rt_args(t, 2), y.n, rt_axis(x, axis), mean);
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

/* T: logits, labels, loss, lsm. lsm row by row (k_softmax_f), then the
 * loss summed over the rows (rt_reduce). Labels outside [0, C) contribute
 * nothing. */
RT_FN void
rt_f_xent(RtT logits, RtT labels, RtT y, RtT lsm)
{
	RtT a[4] = {logits, labels, y, lsm};
	int64_t rows = logits.n / logits.shape[logits.nd - 1];
	RtRed c = {RT_RED_XENT, rows, 0, 0};
	rt_f_softmax(logits, lsm, logits.nd - 1, 1);
	rt_reduce(a, 4, c, 2, NULL);
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
	RT_RUN(RT_GO, k_xent_b, dst.n, (lsm, labels, g, dst), dst.n, add);
}

/* T: a, b, y: the mean of squared differences (rt_reduce) */
RT_FN void
rt_f_mse(RtT x, RtT y, RtT out)
{
	RtT a[3] = {x, y, out};
	RtRed c = {RT_RED_MSE, x.n, 0, 0};
	rt_reduce(a, 3, c, 2, NULL);
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
	RT_RUN(RT_GO, k_mse_b, dst.n, (x, y, g, dst), dst.n, slot, add);
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
	RT_RUN(RT_GO, k_embed_f, y.n, (idx, table, y), y.n);
}

/* T: idx, g, dst [V, D]. One thread per table row scans every position in
 * order: deterministic without atomics (the host's; k_embed_bt on the
 * GPU). */
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

#ifdef RT_GPU
/* The same on the GPU, a block per table row: the lanes test RT_NL
 * positions at a time and list the ones that hold v in order (a ballot per
 * warp), then add their rows, lanes over D, position after position: each
 * element gets k_embed_b's sums in k_embed_b's order. */
static __global__ void
k_embed_bt(const RtT *T, int64_t V, int add)
{
	__shared__ int64_t hit[RT_NL];
	__shared__ int wc[RT_NL / 32];
	int64_t D = T[2].shape[1], P = T[0].n;
	int l = (int)threadIdx.x, w = l / 32, lane = l % 32;
	RT_ROWS(v, V) {
		if (!add)
			for (int64_t d = l; d < D; d += RT_NL)
				rt_put(&T[2], v * D + d, 0);
		for (int64_t p0 = 0; p0 < P; p0 += RT_NL) {
			int h = p0 + l < P && rt_geti(&T[0], p0 + l) == v, at = 0, nh = 0;
			unsigned b = __ballot_sync(0xffffffffu, h);
			if (lane == 0)
				wc[w] = __popc(b);
			__syncthreads();
			for (int i = 0; i < RT_NL / 32; i++) {
				at += i < w ? wc[i] : 0;
				nh += wc[i];
			}
			if (h)
				hit[at + __popc(b & ((1u << lane) - 1))] = p0 + l;
			__syncthreads();
			for (int i = 0; i < nh; i++)
				for (int64_t d = l; d < D; d += RT_NL)
					rt_put(&T[2], v * D + d, rt_get(&T[2], v * D + d) +
					       rt_get(&T[1], hit[i] * D + d));
			__syncthreads();
		}
	}
}
#endif

RT_FN void
rt_b_embedding(RtT idx, RtT g, RtT dst, int add)
{
	RtT a[3] = {idx, g, dst};
#ifdef RT_GPU
	k_embed_bt<<<rt_rblocks(dst.shape[0]), RT_NL>>>(rt_args(a, 3), dst.shape[0], add);
#else
	k_embed_b(rt_args(a, 3), dst.shape[0], add);
#endif
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
	RT_RUN(RT_GO, k_custom_f, y.n, (x, y), y.n, first);
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
	RT_RUN(RT_GO, k_custom_b, dst.n, (g, dst), dst.n, add);
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

/* A param's finite-difference direction: another hash of its elements. */
RT_K
k_perturb(const RtT *T, int64_t n, uint64_t key, double eps)
{
	RT_FOR(i, n) rt_put(&T[0], i, rt_get(&T[0], i) + (rt_real)eps *
	                    (2 * rt_unit(~key, (uint64_t)i) - 1));
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
static int rt_who_rank = -1;    /* the world rank named by rt_who, or -1 */
static int64_t rt_host_bytes;
/* --times FILE: where rt_finish writes the measured figures as JSON, for
 * `remat --times FILE` to show beside the plan's FLOPs. */
static const char *rt_times_path;

/* Time per phase of the step (RT_PH_*, the kinds of steps): each change
 * of phase is marked, with a CUDA event on the GPU (summed after the run),
 * with the monotonic clock on the host. */
enum { RT_PH_FORWARD, RT_PH_RECOMPUTE, RT_PH_BACKWARD, RT_NPH };
static int rt_phase_now = -1;
static double rt_phase_ms[RT_NPH];
#ifdef RT_GPU
static cudaEvent_t *rt_ev;
static int *rt_ev_ph;
static int64_t rt_nev, rt_evcap;
#else
static double rt_phase_t0;
#endif

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

/* bytes (at least one) of device memory, or of pinned host memory
 * (pinned); the host build has only malloc. Dies when none is left. */
RT_FN void *
rt_sys_alloc(int64_t bytes, int pinned)
{
	void *p = NULL;
	size_t b = (size_t)(bytes ? bytes : 1);
#ifdef RT_GPU
	if (pinned)
		rt_cuda(cudaMallocHost(&p, b), "cudaMallocHost");
	else
		rt_cuda(cudaMalloc(&p, b), "cudaMalloc");
#else
	(void)pinned;
	p = malloc(b);
	if (!p)
		rt_die("out of memory");
#endif
	return p;
}

/* Gives back what rt_sys_alloc (with the same pinned) returned. */
RT_FN void
rt_sys_free(void *p, int pinned)
{
#ifdef RT_GPU
	if (pinned)
		cudaFreeHost(p);
	else
		cudaFree(p);
#else
	(void)pinned;
	free(p);
#endif
}

RT_FN void *
rt_raw_alloc(int64_t bytes)
{
	void *p = rt_sys_alloc(bytes, 0);
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
		if (rt_reg[i] && rt_reg[i] != RT_GONE)
			rt_sys_free(rt_reg[i], 0);
	free(rt_reg);
	rt_reg = NULL;
	rt_reg_cap = rt_reg_n = rt_reg_used = 0;
#ifdef RT_GPU
	cudaFree(rt_dargs);
	cudaFree(rt_dred);
	cublasDestroy(rt_blas);
	for (int64_t i = 0; i < rt_nev; i++)
		cudaEventDestroy(rt_ev[i]);
	free(rt_ev);
	free(rt_ev_ph);
	rt_ev = NULL;
	rt_ev_ph = NULL;
	rt_nev = 0;
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
		else if (!strcmp(argv[i], "--times") && i + 1 < argc)
			rt_times_path = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--tracked | --arena] [--fd EPS] [--data-rank R]"
			        " [--times FILE.json]\n", argv[0]);
			exit(2);
		}
	}
#ifdef RT_GPU
	/* The runtime's fixed state, before the baseline: the descriptor block,
	 * the partial sums, the cuBLAS handle. cuBLAS gets no workspace (the
	 * default pool size is zero, and the handle's workspace is set to none),
	 * so a GEMM allocates nothing that the plan does not count. */
	size_t fr, tot;
	rt_cuda(cudaMalloc((void **)&rt_dargs, sizeof(RtT) * RT_MAXARGS), "args");
	rt_cuda(cudaMalloc((void **)&rt_dred, sizeof(double) * (2 * RT_NL + 2)), "reduce");
	setenv("CUBLAS_WORKSPACE_CONFIG", ":0:0", 1);
	if (cublasCreate(&rt_blas) != CUBLAS_STATUS_SUCCESS ||
	    cublasSetWorkspace(rt_blas, NULL, 0) != CUBLAS_STATUS_SUCCESS)
		rt_die("cannot set up cuBLAS");
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

/* Phase ph begins (-1: the step is over). */
RT_FN void
rt_mark(int ph)
{
	if (ph == rt_phase_now)
		return;
#ifdef RT_GPU
	if (rt_nev == rt_evcap) {
		rt_evcap = rt_evcap ? 2 * rt_evcap : 16;
		rt_ev = (cudaEvent_t *)realloc(rt_ev, sizeof *rt_ev * (size_t)rt_evcap);
		rt_ev_ph = (int *)realloc(rt_ev_ph, sizeof *rt_ev_ph * (size_t)rt_evcap);
		if (!rt_ev || !rt_ev_ph)
			rt_die("out of memory");
	}
	rt_cuda(cudaEventCreate(&rt_ev[rt_nev]), "cudaEventCreate");
	rt_cuda(cudaEventRecord(rt_ev[rt_nev], 0), "cudaEventRecord");
	rt_ev_ph[rt_nev++] = ph;
#else
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	double now = (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
	if (rt_phase_now >= 0)
		rt_phase_ms[rt_phase_now] += now - rt_phase_t0;
	rt_phase_t0 = now;
#endif
	rt_phase_now = ph;
}

/* A step of phase ph begins: its temporary block (planned at toff in the
 * arena). */
RT_FN void
rt_begin(int64_t step, int ph, int64_t tbytes, int64_t toff)
{
	rt_mark(ph);
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

/* The sum and the position-weighted sum of t, in double (rt_reduce). */
RT_FN void
rt_cksum(const char *name, RtT t)
{
	double h[2];
	RtRed c = {RT_RED_CKSUM, t.n, 0, 0};
	rt_reduce(&t, 1, c, -1, h);
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

/* The sum over i of direction[i] * grad[i], in double (rt_reduce). */
RT_FN void
rt_dirgrad(RtT g, uint64_t key)
{
	double h[2];
	RtRed c = {RT_RED_DIRGRAD, g.n, key, 0};
	rt_reduce(&g, 1, c, -1, h);
	rt_dirsum += h[0];
}

RT_FN void
rt_loss(RtT t)
{
	double h[2];
	RtRed c = {RT_RED_SUM, t.n, 0, 0};
	rt_reduce(&t, 1, c, -1, h);
	if (rt_loss_value != rt_loss_value)
		rt_loss_value = h[0];
}

/* --times: the figures rt_finish prints, as one JSON object (the format
 * docs/codegen.md gives; `remat --times` reads it). A rank of a
 * distributed program writes FILE.R, R its world rank. Returns 0, or 1
 * when the file cannot be written (said on stderr). */
static int
rt_write_times(const char *clk, int64_t predicted, int64_t arena_bytes, int ok)
{
	char path[4096];
	int n = rt_who_rank >= 0 ? snprintf(path, sizeof path, "%s.%d", rt_times_path, rt_who_rank)
	                         : snprintf(path, sizeof path, "%s", rt_times_path);
	FILE *f = n > 0 && (size_t)n < sizeof path ? fopen(path, "w") : NULL;

	if (!f) {
		fprintf(stderr, "%scannot write --times file '%s'\n", rt_who, rt_times_path);
		return 1;
	}
	fprintf(f, "{\"remat_times\": 1, \"clock\": \"%s\", \"mode\": \"%s\",\n", clk,
	        rt_arena_mode ? "arena" : "tracked");
	fprintf(f, " \"predicted_peak\": %lld, \"measured_peak\": %lld, \"arena\": %lld,\n",
	        (long long)predicted, (long long)rt_peak, (long long)arena_bytes);
	fprintf(f, " \"forward_ms\": %.6f, \"backward_ms\": %.6f, \"recompute_ms\": %.6f,\n",
	        rt_phase_ms[RT_PH_FORWARD], rt_phase_ms[RT_PH_BACKWARD], rt_phase_ms[RT_PH_RECOMPUTE]);
	fprintf(f, " \"gemm_calls\": %lld, \"ok\": %s}\n", (long long)rt_ngemm, ok ? "true" : "false");
	if (fclose(f)) {
		fprintf(stderr, "%scannot write --times file '%s'\n", rt_who, path);
		return 1;
	}
	return 0;
}

RT_FN int
rt_finish(int64_t predicted, int64_t arena_bytes)
{
	rt_mark(-1);
#ifdef RT_GPU
	rt_cuda(cudaDeviceSynchronize(), "sync");
	for (int64_t i = 0; i + 1 < rt_nev; i++) {
		float ms;
		rt_cuda(cudaEventElapsedTime(&ms, rt_ev[i], rt_ev[i + 1]), "cudaEventElapsedTime");
		rt_phase_ms[rt_ev_ph[i]] += ms;
	}
	const char *clk = "CUDA events";
#else
	const char *clk = "host monotonic clock";
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
	printf("%stime (%s): forward %.3f ms, backward %.3f ms, recompute %.3f ms, step %.3f ms\n",
	       w, clk, rt_phase_ms[RT_PH_FORWARD], rt_phase_ms[RT_PH_BACKWARD],
	       rt_phase_ms[RT_PH_RECOMPUTE],
	       rt_phase_ms[RT_PH_FORWARD] + rt_phase_ms[RT_PH_BACKWARD] + rt_phase_ms[RT_PH_RECOMPUTE]);
	printf("%smatmul: %lld GEMM calls, %lld by the general kernel\n", w, (long long)rt_ngemm,
	       (long long)rt_ngeneral);
	printf("%sloss: %.17g\n", w, rt_loss_value);
	printf("%sdirgrad: %.17g\n", w, rt_dirsum);
	int bad = rt_peak != predicted || rt_bad >= 0;
	printf(bad ? "%sMISMATCH\n" : "%sOK\n", w);
	if (rt_times_path && rt_write_times(clk, predicted, arena_bytes, !bad))
		bad = 1;
	rt_free_all();
	if (fflush(stdout))
		return 1;
	return bad;
}
