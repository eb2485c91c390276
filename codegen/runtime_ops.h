/* runtime_ops.h -- kernels of the ops added for real networks (issues 13
 * and 28), embedded right after runtime.h in every emitted program (same rules:
 * one thread per output element or row, sums in a fixed order, no
 * atomics, host and GPU alike).
 *
 * Index tensors (gather, index_select, scatter_add) hold element numbers
 * along the axis; one outside [0, size) reads 0 and contributes nothing
 * (the generated program initialises them inside the range). */

/* ------------------------------------------------------------ activations */

enum { RT_RELU6, RT_CLAMP, RT_HARDSWISH, RT_HARDSIGMOID };

RT_DFN rt_real
rt_act(int op, rt_real x, rt_real lo, rt_real hi)
{
	switch (op) {
	case RT_RELU6: return x < 0 ? 0 : x > 6 ? 6 : x;
	case RT_CLAMP: return x < lo ? lo : x > hi ? hi : x;
	case RT_HARDSWISH: return x <= -3 ? 0 : x >= 3 ? x : x * (x + 3) / 6;
	default: return x <= -3 ? 0 : x >= 3 ? 1 : x / 6 + (rt_real)0.5;
	}
}

/* d(op)/dx times g; s is what the op saves: out (relu6) or x. */
RT_DFN rt_real
rt_act_b(int op, rt_real s, rt_real g, rt_real lo, rt_real hi)
{
	switch (op) {
	case RT_RELU6: return s > 0 && s < 6 ? g : 0;
	case RT_CLAMP: return s >= lo && s <= hi ? g : 0;
	case RT_HARDSWISH: return s <= -3 ? 0 : s >= 3 ? g : g * (2 * s + 3) / 6;
	default: return s > -3 && s < 3 ? g / 6 : 0;
	}
}

RT_K
k_act_f(const RtT *T, int64_t n, int op, double lo, double hi)
{
	RT_FOR(i, n) rt_put(&T[1], i, rt_act(op, rt_get(&T[0], i), (rt_real)lo, (rt_real)hi));
}

RT_K
k_act_b(const RtT *T, int64_t n, int op, double lo, double hi, int add)
{
	RT_FOR(i, n) {
		rt_real g = rt_get(&T[1], T[1].dt == RT_DT_ONE ? 0 : i);
		rt_out(&T[2], i, rt_act_b(op, rt_get(&T[0], i), g, (rt_real)lo, (rt_real)hi), add);
	}
}

RT_FN void
rt_f_act(int op, RtT x, RtT y, double lo, double hi)
{
	RT_RUN(RT_GO, k_act_f, y.n, (x, y), y.n, op, lo, hi);
}

RT_FN void
rt_b_act(int op, RtT s, RtT g, RtT dst, int add, double lo, double hi)
{
	RT_RUN(RT_GO, k_act_b, dst.n, (s, g, dst), dst.n, op, lo, hi, add);
}

/* ------------------------------------------------------------ indexing */

/* The element of idx that element ix (over a tensor of idx's rank) reads,
 * where idx's size-1 axes broadcast. */
RT_DFN int64_t
rt_bidx(const RtT *idx, const int64_t *ix)
{
	int64_t f = 0;
	for (int d = 0; d < idx->nd; d++)
		f = f * idx->shape[d] + (idx->shape[d] == 1 ? 0 : ix[d]);
	return f;
}

/* gather and index_select, T: x, idx, y. y[ix] = x[ix with axis = k],
 * where k = idx[ix] for gather and idx[ix[axis]] for index_select (sel,
 * its idx is 1-D); an index out of range reads 0. */
RT_K
k_take_f(const RtT *T, int64_t n, int ax, int sel)
{
	RT_FOR(i, n) {
		int64_t ix[RT_MAXDIM], k;
		rt_unravel(&T[2], i, ix);
		k = rt_geti(&T[1], sel ? ix[ax] : i);
		if (k < 0 || k >= T[0].shape[ax]) {
			rt_put(&T[2], i, 0);
			continue;
		}
		ix[ax] = k;
		rt_put(&T[2], i, rt_get(&T[0], rt_at(&T[0], ix)));
	}
}

/* Their backward, T: idx, g (y's shape), dst (x's shape): dst[ix] = sum
 * over the positions p along the axis whose index (idx[ix with axis = p],
 * or idx[p] for index_select) is ix[axis]. */
RT_K
k_take_b(const RtT *T, int64_t n, int ax, int add, int sel)
{
	RT_FOR(i, n) {
		int64_t ix[RT_MAXDIM], own;
		rt_real s = 0;
		rt_unravel(&T[2], i, ix);
		own = ix[ax];
		for (int64_t p = 0; p < (sel ? T[0].n : T[0].shape[ax]); p++) {
			ix[ax] = p;
			if (rt_geti(&T[0], sel ? p : rt_at(&T[0], ix)) == own)
				s += rt_get(&T[1], T[1].dt == RT_DT_ONE ? 0 : rt_at(&T[1], ix));
		}
		rt_out(&T[2], i, s, add);
	}
}

RT_FN void
rt_f_take(RtT x, RtT idx, RtT y, int ax, int sel)
{
	RT_RUN(RT_GO, k_take_f, y.n, (x, idx, y), y.n, ax, sel);
}

RT_FN void
rt_b_take(RtT idx, RtT g, RtT dst, int add, int ax, int sel)
{
	RT_RUN(RT_GO, k_take_b, dst.n, (idx, g, dst), dst.n, ax, add, sel);
}

/* The names the generated step calls */
#define rt_f_gather(x, idx, y, ax) rt_f_take(x, idx, y, ax, 0)
#define rt_f_index_select(x, idx, y, ax) rt_f_take(x, idx, y, ax, 1)
#define rt_b_gather(idx, g, dst, add, ax) rt_b_take(idx, g, dst, add, ax, 0)
#define rt_b_index_select(idx, g, dst, add, ax) rt_b_take(idx, g, dst, add, ax, 1)

/* scatter_add, T: x, idx, src, y. y[ix] = x[ix] + the src elements at the
 * positions p along the axis whose index (broadcast) is ix[axis]. */
RT_K
k_scatter_f(const RtT *T, int64_t n, int ax)
{
	RT_FOR(i, n) {
		int64_t ix[RT_MAXDIM], own;
		rt_real s = rt_get(&T[0], i);
		rt_unravel(&T[3], i, ix);
		own = ix[ax];
		for (int64_t p = 0; p < T[2].shape[ax]; p++) {
			ix[ax] = p;
			if (rt_geti(&T[1], rt_bidx(&T[1], ix)) == own)
				s += rt_get(&T[2], rt_at(&T[2], ix));
		}
		rt_put(&T[3], i, s);
	}
}

RT_FN void
rt_f_scatter_add(RtT x, RtT idx, RtT src, RtT y, int ax)
{
	RT_RUN(RT_GO, k_scatter_f, y.n, (x, idx, src, y), y.n, ax);
}

/* scatter_add backward for src, T: idx, g (x's shape), dst (src's shape):
 * dst[ix] = g[ix with axis = idx[ix]]. (grad x is g itself: rt_copy.) */
RT_K
k_scatter_b(const RtT *T, int64_t n, int ax, int add)
{
	RT_FOR(i, n) {
		int64_t ix[RT_MAXDIM], k;
		rt_real v = 0;
		rt_unravel(&T[2], i, ix);
		k = rt_geti(&T[0], rt_bidx(&T[0], ix));
		if (k >= 0 && k < T[1].shape[ax]) {
			ix[ax] = k;
			v = rt_get(&T[1], T[1].dt == RT_DT_ONE ? 0 : rt_at(&T[1], ix));
		}
		rt_out(&T[2], i, v, add);
	}
}

RT_FN void
rt_b_scatter_add(RtT idx, RtT g, RtT dst, int add, int ax)
{
	RT_RUN(RT_GO, k_scatter_b, dst.n, (idx, g, dst), dst.n, ax, add);
}

/* topk, T: x, values, indices; one thread per row along the axis: the k
 * largest, largest first, ties to the lower position. */
RT_K
k_topk_f(const RtT *T, int64_t rows, RtAxis a, int64_t k)
{
	RT_FOR(r, rows) {
		rt_real prev = INFINITY;
		int64_t prevl = -1;
		for (int64_t t = 0; t < k; t++) {
			int64_t best = -1;
			rt_real bv = 0;
			for (int64_t l = 0; l < a.L; l++) {
				rt_real v = rt_get(&T[0], rt_row(a, r, l));
				/* strictly after (prev, prevl) in the order */
				if (v > prev || (v == prev && l <= prevl))
					continue;
				if (best < 0 || v > bv) {
					best = l;
					bv = v;
				}
			}
			RtAxis o = {k, a.inner};
			rt_put(&T[1], rt_row(o, r, t), bv);
			rt_put(&T[2], rt_row(o, r, t), (rt_real)best);
			prev = bv;
			prevl = best;
		}
	}
}

RT_FN void
rt_f_topk(RtT x, RtT vals, RtT idx, int ax, int64_t k)
{
	RtT a[3] = {x, vals, idx};
	RtAxis ra = rt_axis(x, ax);
	int64_t rows = x.n / ra.L;
	RT_GO(k_topk_f, rows)(rt_args(a, 3), rows, ra, k);
	rt_after();
}

/* topk backward, T: indices, g (values' shape), dst (x's shape). */
RT_K
k_topk_b(const RtT *T, int64_t n, RtAxis a, int64_t k, int add)
{
	RT_FOR(i, n) {
		int64_t r = i / (a.L * a.inner) * a.inner + i % a.inner;
		int64_t l = i / a.inner % a.L;
		RtAxis o = {k, a.inner};
		rt_real s = 0;
		for (int64_t t = 0; t < k; t++)
			if (rt_geti(&T[0], rt_row(o, r, t)) == l)
				s += rt_get(&T[1], T[1].dt == RT_DT_ONE ? 0 : rt_row(o, r, t));
		rt_out(&T[2], i, s, add);
	}
}

RT_FN void
rt_b_topk(RtT idx, RtT g, RtT dst, int add, int ax, int64_t k)
{
	RT_RUN(RT_GO, k_topk_b, dst.n, (idx, g, dst), dst.n, rt_axis(dst, ax), k, add);
}

/* ------------------------------------------------------------ cross_entropy(ignore_index=) */

/* T: logits, labels, y, lsm: lsm row by row, then the mean over the rows
 * whose label is not ign (rt_reduce). */
RT_FN void
rt_f_xent_ig(RtT logits, RtT labels, RtT y, RtT lsm, int64_t ign)
{
	RtT a[4] = {logits, labels, y, lsm};
	int64_t rows = logits.n / logits.shape[logits.nd - 1];
	RtRed c = {RT_RED_XENT_IG, rows, 0, ign};
	rt_f_softmax(logits, lsm, logits.nd - 1, 1);
	rt_reduce(a, 4, c, 2, NULL);
}

/* T: lsm, labels, g, dst; ignored rows get no gradient; cnt: the rows that
 * count. */
RT_K
k_xent_ig_b(const RtT *T, int64_t n, int64_t ign, int64_t cnt, int add)
{
	int64_t C = T[3].shape[T[3].nd - 1];
	RT_FOR(i, n) {
		int64_t lab = rt_geti(&T[1], i / C);
		rt_real p = 0;
		if (lab != ign)
			p = (rt_exp(rt_get(&T[0], i)) - (lab == i % C ? 1 : 0)) *
			    rt_get(&T[2], 0) / (rt_real)cnt;
		rt_out(&T[3], i, p, add);
	}
}

RT_FN void
rt_b_xent_ig(RtT lsm, RtT labels, RtT g, RtT dst, int add, int64_t ign)
{
	RtT a[4] = {lsm, labels, g, dst};
	double cnt[2];
	RtRed c = {RT_RED_XENT_IG, dst.n / dst.shape[dst.nd - 1], 0, ign};
	RtT r[4] = {lsm, labels, rt_none(), lsm};
	rt_reduce(r, 4, c, -1, cnt);    /* the rows that count, in cnt[1] */
	RT_GO(k_xent_ig_b, dst.n)(rt_args(a, 4), dst.n, ign, (int64_t)cnt[1], add);
	rt_after();
}

/* ------------------------------------------------------------ attention, general */

/* Attention with what the plain kernels lack: k/v with fewer heads than q
 * (head h reads k/v head h / (H / Hkv)), a mask broadcast to [B, H, S, T]
 * (mkind 1: bool/u8, zero excludes the key; 2: added to the score), and
 * dropout on the probabilities (the u8 keep mask is written to dmask; the
 * element (r, j) of op `key` is kept when its hash >= pd, so a recomputed
 * mask is bit-identical). lse is of the undropped softmax; a row with no
 * key left gets out 0 and lse +inf (every probability 0).
 * T: q, k, v, mask, out, lse, dmask. */
typedef struct RtAttn {
	int causal, mkind;
	double pd;
	uint64_t key;
} RtAttn;

/* Score s of query row r (b, h, i of q [B, H, S, Dh]) and key j with the
 * mask applied: -inf when the mask excludes the key. */
RT_DFN rt_real
rt_amask(const RtT *M, RtAttn c, int64_t r, int64_t S, int64_t H, int64_t j, rt_real s)
{
	if (c.mkind) {
		int64_t ix[4] = {r / S / H, r / S % H, r % S, j}, f = 0;
		for (int d = 0; d < M->nd; d++)
			f = f * M->shape[d] + (M->shape[d] == 1 ? 0 : ix[4 - M->nd + d]);
		if (c.mkind == 1 && rt_geti(M, f) == 0)
			return -INFINITY;
		if (c.mkind == 2)
			s += rt_get(M, f);
	}
	return s;
}

/* The score of query row r (b, h, i) and key j, or -inf when excluded. */
RT_DFN rt_real
rt_ascore(const RtT *T, RtAttn c, int64_t r, int64_t j)
{
	const RtT *Q = &T[0], *K = &T[1];
	int64_t S = Q->shape[2], H = Q->shape[1], Hk = K->shape[1], Tk = K->shape[2];
	int64_t i = r % S, h = r / S % H, b = r / S / H;
	int64_t kr = (b * Hk + h / (H / Hk)) * Tk + j;
	if (c.causal && j > i)
		return -INFINITY;
	return rt_amask(&T[3], c, r, S, H, j, rt_score(Q, K, r, kr, Q->shape[3]));
}

/* The dropout weight of (r, j): keep / (1 - pd), from dmask when given. */
RT_DFN rt_real
rt_akeep(const RtT *D, RtAttn c, int64_t e)
{
	if (c.pd == 0)
		return 1;
	return rt_get(D, e) != 0 ? 1 / (1 - (rt_real)c.pd) : 0;
}

/* ------------------------------------------------------------ attention, tiled */

/* Flash-style attention, the kernels of both attention calls (but with
 * -DRT_NAIVE, which keeps the plain ones above): a block per (b, h, tile
 * of t query rows) in the forward and in dq, per (b, k/v head, tile of t
 * key rows) in dk and dv, its tiles of q, k, v and dO staged in shared
 * memory, rows Dh + 1 apart (the threads of one score step read distinct
 * banks). The forward keeps each row's online softmax across the key
 * tiles: the tile's scores raise the running max m once, rescale the sum
 * l and the output row by exp(m_old - m_new), then add the tile's terms.
 * It writes out and lse only (docs/ops.md: what attention saves). The
 * backward recomputes each tile's probabilities exp(s - lse) from the
 * saved lse and adds its terms key by key (dq: D = rowsum(dO * out) once
 * per row) or query by query (dk, dv: the query tiles, and the q heads
 * sharing a k/v head, looped over inside the block), in the order of the
 * plain kernels, so its results equal theirs bit for bit. Every sum is one
 * thread's loop: no atomics, the same bits every run.
 * One source serves both builds: a kernel is a sequence of steps, each a
 * loop over independent items (RT_STEP) that the GPU splits over the
 * block's RT_ANT threads and the host runs in full, with a barrier
 * (RT_BAR) between steps; what lives from one step to the next is in the
 * shared buffer (RT_ASH: dynamic shared memory; a static buffer on the
 * host). */
enum { RT_ANT = 128, RT_ASHB = 48 * 1024 };
#ifdef RT_GPU
#define RT_STEP(e, n) for (int64_t e = threadIdx.x; e < (n); e += blockDim.x)
#define RT_BAR() __syncthreads()
#define RT_ASH(sh) extern __shared__ double sh##_d[]; rt_real *sh = (rt_real *)sh##_d
#define RT_AGO(k, nb, t, dh) k<<<rt_rblocks(nb), RT_ANT, (size_t)rt_ashb(t, dh)>>>
#else
#define RT_STEP(e, n) for (int64_t e = 0; e < (n); e++)
#define RT_BAR() ((void)0)
#define RT_ASH(sh) static double sh##_d[RT_ASHB / sizeof(double)]; rt_real *sh = (rt_real *)sh##_d
#define RT_AGO(k, nb, t, dh) k
#endif

/* The shared bytes of tile t: five tiles of t rows, a t x t tile of
 * scores or weights, two values per row. */
RT_DFN int64_t
rt_ashb(int64_t t, int64_t Dh)
{
	return (5 * t * (Dh + 1) + t * t + 2 * t) * (int64_t)sizeof(rt_real);
}

/* The tile: 16 rows, halved until the buffer fits the 48 KiB a block gets
 * without opting in (Dh <= RT_MAXDH: 8 rows at 256 in float, 4 in double).
 * It depends on Dh and rt_real only, so the host and the GPU tile alike. */
RT_FN int
rt_atile(int64_t Dh)
{
	int t = 16;
	while (t > 1 && rt_ashb(t, Dh) > RT_ASHB)
		t /= 2;
	return t;
}

/* The dot product of two staged rows, in rt_dot's order. */
RT_DFN rt_real
rt_sdot(const rt_real *a, const rt_real *b, int64_t Dh)
{
	rt_real s = 0;
	for (int64_t d = 0; d < Dh; d++)
		s += a[d] * b[d];
	return s;
}

/* The score of staged query row qs (q row r) and key row ks (key j), as
 * rt_ascore computes it, or -inf when causal or the mask excludes it. */
RT_DFN rt_real
rt_tscore(const RtT *T, RtAttn c, const rt_real *qs, const rt_real *ks, int64_t r, int64_t j)
{
	int64_t S = T[0].shape[2], Dh = T[0].shape[3];
	if (c.causal && j > r % S)
		return -INFINITY;
	return rt_amask(&T[3], c, r, S, T[0].shape[1], j, rt_sdot(qs, ks, Dh) / rt_sqrt((rt_real)Dh));
}

/* n rows of t from row r0 of X [.., Dh] into sh, rows Dh + 1 apart. */
#define RT_ALOAD(sh, X, r0, n, Dh) \
	RT_STEP(e_, (n) * (Dh)) (sh)[e_ / (Dh) * ((Dh) + 1) + e_ % (Dh)] = rt_get(X, (r0) * (Dh) + e_)

/* The forward. T: q, k, v, mask, out, lse, dmask; nb blocks, tile t. */
RT_K
k_attn_tf(const RtT *T, int64_t nb, RtAttn c, int t)
{
	const RtT *Q = &T[0], *K = &T[1];
	int64_t S = Q->shape[2], H = Q->shape[1], Hk = K->shape[1], Tk = K->shape[2];
	int64_t Dh = Q->shape[3], ld = Dh + 1, nqt = (S + t - 1) / t;
	RT_ASH(sh);
	rt_real *qs = sh, *kv = sh + t * ld, *acc = sh + 2 * t * ld, *p = sh + 5 * t * ld;
	rt_real *m = p + t * t, *l = m + t;
	RT_ROWS(blk, nb) {
		int64_t bh = blk / nqt, i0 = blk % nqt * t, nq = S - i0 < t ? S - i0 : t;
		int64_t r0 = bh * S + i0, kb = (bh / H * Hk + bh % H / (H / Hk)) * Tk;
		int64_t kend = c.causal && i0 + nq < Tk ? i0 + nq : Tk;
		RT_ALOAD(qs, Q, r0, nq, Dh);
		RT_STEP(e, nq * Dh) acc[e / Dh * ld + e % Dh] = 0;
		RT_STEP(i, nq) {
			m[i] = -INFINITY;
			l[i] = 0;
		}
		/* the keep mask of every (row, key), skipped causal tiles too */
		if (c.pd != 0)
			RT_STEP(e, nq * Tk) rt_put(&T[6], r0 * Tk + e,
			                           rt_unit(c.key, (uint64_t)(r0 * Tk + e)) >= (rt_real)c.pd);
		for (int64_t j0 = 0; j0 < kend; j0 += t) {
			int64_t nk = kend - j0 < t ? kend - j0 : t;
			RT_BAR();       /* the last tile's v read, the first loads done */
			RT_ALOAD(kv, K, kb + j0, nk, Dh);
			RT_BAR();
			RT_STEP(e, nq * nk) p[e / nk * t + e % nk] =
				rt_tscore(T, c, qs + e / nk * ld, kv + e % nk * ld, r0 + e / nk, j0 + e % nk);
			RT_BAR();
			RT_ALOAD(kv, &T[2], kb + j0, nk, Dh);
			/* p: the scores become the weights p w; l sums the undropped p */
			RT_STEP(i, nq) {
				rt_real mx = m[i], sum = 0, *pi = p + i * t;
				for (int64_t j = 0; j < nk; j++)
					mx = pi[j] > mx ? pi[j] : mx;
				for (int64_t j = 0; j < nk; j++) {
					rt_real e = pi[j] == -INFINITY ? 0 : rt_exp(pi[j] - mx), w = 1;
					if (c.pd != 0)
						w = rt_unit(c.key, (uint64_t)((r0 + i) * Tk + j0 + j)) >=
						    (rt_real)c.pd ? 1 / (1 - (rt_real)c.pd) : 0;
					sum += e;
					pi[j] = e * w;
				}
				/* the old terms' factor, in the row's pad column */
				rt_real corr = mx == -INFINITY ? 1 : rt_exp(m[i] - mx);
				m[i] = mx;
				l[i] = l[i] * corr + sum;
				acc[i * ld + Dh] = corr;
			}
			RT_BAR();
			RT_STEP(e, nq * Dh) {
				int64_t i = e / Dh, d = e % Dh;
				rt_real a = acc[i * ld + d] * acc[i * ld + Dh];
				for (int64_t j = 0; j < nk; j++)
					if (p[i * t + j] != 0)  /* a masked key adds nothing */
						a += p[i * t + j] * kv[j * ld + d];
				acc[i * ld + d] = a;
			}
		}
		RT_BAR();
		RT_STEP(e, nq * Dh) {
			int64_t i = e / Dh;
			rt_put(&T[4], r0 * Dh + e, l[i] > 0 ? acc[i * ld + e % Dh] / l[i] : 0);
		}
		RT_STEP(i, nq) rt_put(&T[5], r0 + i, l[i] > 0 ? m[i] + rt_log(l[i]) : INFINITY);
		RT_BAR();       /* the next block's loads overwrite the buffer */
	}
}

/* The weight of (q row r, key j) in the backward, into the tile: 0 when
 * excluded, else slot 2 (dv) p w, slots 0, 1 (dq, dk) ds = p (w dO.v - D)
 * sc, the plain kernels' rt_attn_bterm terms. qs, ks, gs, vs: the staged
 * rows; dr: D = rowsum(dO * out) of row r, lr its lse. */
RT_DFN rt_real
rt_tweight(const RtT *T, RtAttn c, int slot, const rt_real *qs, const rt_real *ks,
           const rt_real *gs, const rt_real *vs, int64_t r, int64_t j, rt_real dr, rt_real lr)
{
	int64_t Dh = T[0].shape[3];
	rt_real s = rt_tscore(T, c, qs, ks, r, j), w;
	if (s == -INFINITY)
		return 0;
	rt_real p = rt_exp(s - lr);
	w = rt_akeep(&T[6], c, r * T[1].shape[2] + j);
	if (slot == 2)
		return p * w;
	return p * (w * rt_sdot(gs, vs, Dh) - dr) * (1 / rt_sqrt((rt_real)Dh));
}

/* dq. T: q, k, v, mask, out, lse, dmask, g, dst; a block per query tile
 * (as the forward), the key tiles in order; each element of dq adds its
 * terms key by key, one thread's loop. */
RT_K
k_attn_tbq(const RtT *T, int64_t nb, RtAttn c, int t, int add)
{
	const RtT *Q = &T[0], *K = &T[1], *G = &T[7];
	int64_t S = Q->shape[2], H = Q->shape[1], Hk = K->shape[1], Tk = K->shape[2];
	int64_t Dh = Q->shape[3], ld = Dh + 1, nqt = (S + t - 1) / t;
	RT_ASH(sh);
	rt_real *qs = sh, *gs = sh + t * ld, *ks = sh + 2 * t * ld, *vs = sh + 3 * t * ld;
	rt_real *acc = sh + 4 * t * ld, *p = sh + 5 * t * ld, *dd = p + t * t, *lq = dd + t;
	RT_ROWS(blk, nb) {
		int64_t bh = blk / nqt, i0 = blk % nqt * t, nq = S - i0 < t ? S - i0 : t;
		int64_t r0 = bh * S + i0, kb = (bh / H * Hk + bh % H / (H / Hk)) * Tk;
		int64_t kend = c.causal && i0 + nq < Tk ? i0 + nq : Tk;
		RT_ALOAD(qs, Q, r0, nq, Dh);
		RT_ALOAD(gs, G, r0, nq, Dh);
		RT_STEP(e, nq * Dh) acc[e / Dh * ld + e % Dh] = 0;
		RT_STEP(i, nq) {
			dd[i] = rt_dot(G, r0 + i, &T[4], r0 + i, Dh);
			lq[i] = rt_get(&T[5], r0 + i);
		}
		for (int64_t j0 = 0; j0 < kend; j0 += t) {
			int64_t nk = kend - j0 < t ? kend - j0 : t;
			RT_BAR();
			RT_ALOAD(ks, K, kb + j0, nk, Dh);
			RT_ALOAD(vs, &T[2], kb + j0, nk, Dh);
			RT_BAR();
			RT_STEP(e, nq * nk) {
				int64_t i = e / nk, j = e % nk;
				p[i * t + j] = rt_tweight(T, c, 0, qs + i * ld, ks + j * ld, gs + i * ld,
				                          vs + j * ld, r0 + i, j0 + j, dd[i], lq[i]);
			}
			RT_BAR();
			RT_STEP(e, nq * Dh) {
				int64_t i = e / Dh, d = e % Dh;
				rt_real a = acc[i * ld + d];
				/* a zero term leaves the sum's bits as they are (it never
				 * holds -0), so skipping the excluded keys is exact */
				for (int64_t j = 0; j < nk; j++)
					if (p[i * t + j] != 0)
						a += p[i * t + j] * ks[j * ld + d];
				acc[i * ld + d] = a;
			}
		}
		RT_BAR();
		RT_STEP(e, nq * Dh) rt_out(&T[8], r0 * Dh + e, acc[e / Dh * ld + e % Dh], add);
		RT_BAR();
	}
}

/* dk (slot 1) and dv (slot 2). T as k_attn_tbq's; a block per (b, k/v
 * head hk, key tile), looping over the q heads sharing hk and, in each,
 * the query tiles (causal: from the key tile's first key on); each
 * element adds its terms query by query, one thread's loop. */
RT_K
k_attn_tbk(const RtT *T, int64_t nb, RtAttn c, int t, int slot, int add)
{
	const RtT *Q = &T[0], *K = &T[1], *G = &T[7];
	int64_t S = Q->shape[2], H = Q->shape[1], Hk = K->shape[1], Tk = K->shape[2];
	int64_t Dh = Q->shape[3], ld = Dh + 1, nkt = (Tk + t - 1) / t, grp = H / Hk;
	RT_ASH(sh);
	rt_real *ks = sh, *vs = sh + t * ld, *qs = sh + 2 * t * ld, *gs = sh + 3 * t * ld;
	rt_real *acc = sh + 4 * t * ld, *p = sh + 5 * t * ld, *dd = p + t * t, *lq = dd + t;
	RT_ROWS(blk, nb) {
		int64_t bk = blk / nkt, j0 = blk % nkt * t, nk = Tk - j0 < t ? Tk - j0 : t;
		int64_t qh = (bk / Hk * H + bk % Hk * grp) * S;   /* the group's first q row */
		RT_ALOAD(ks, K, bk * Tk + j0, nk, Dh);
		if (slot == 1)
			RT_ALOAD(vs, &T[2], bk * Tk + j0, nk, Dh);
		RT_STEP(e, nk * Dh) acc[e / Dh * ld + e % Dh] = 0;
		/* causal: the rows before j0 see none of these keys */
		for (int64_t g = 0; g < grp; g++)
		for (int64_t i0 = c.causal ? j0 : 0; i0 < S; i0 += t) {
			int64_t nq = S - i0 < t ? S - i0 : t, r0 = qh + g * S + i0;
			RT_BAR();
			RT_ALOAD(qs, Q, r0, nq, Dh);
			RT_ALOAD(gs, G, r0, nq, Dh);
			RT_STEP(i, nq) {
				dd[i] = slot == 1 ? rt_dot(G, r0 + i, &T[4], r0 + i, Dh) : 0;
				lq[i] = rt_get(&T[5], r0 + i);
			}
			RT_BAR();
			RT_STEP(e, nq * nk) {
				int64_t i = e / nk, j = e % nk;
				p[i * t + j] = rt_tweight(T, c, slot, qs + i * ld, ks + j * ld, gs + i * ld,
				                          vs + j * ld, r0 + i, j0 + j, dd[i], lq[i]);
			}
			RT_BAR();
			RT_STEP(e, nk * Dh) {
				int64_t j = e / Dh, d = e % Dh;
				const rt_real *f = slot == 2 ? gs : qs;
				rt_real a = acc[j * ld + d];
				for (int64_t i = 0; i < nq; i++)    /* exact: see k_attn_tbq */
					if (p[i * t + j] != 0)
						a += p[i * t + j] * f[i * ld + d];
				acc[j * ld + d] = a;
			}
		}
		RT_BAR();
		RT_STEP(e, nk * Dh) rt_out(&T[8], (bk * Tk + j0) * Dh + e, acc[e / Dh * ld + e % Dh], add);
		RT_BAR();
	}
}

/* The forward on the tiled kernel. a: q, k, v, mask, out, lse, dmask. */
RT_FN void
rt_f_attn_t(RtT *a, RtAttn c)
{
	int64_t S = a[0].shape[2], Dh = a[0].shape[3];
	int t = rt_atile(Dh);
	int64_t nb = a[0].n / (S * Dh) * ((S + t - 1) / t);
	RT_AGO(k_attn_tf, nb, t, Dh)(rt_args(a, 7), nb, c, t);
	rt_after();
}

/* Slot 0, 1, 2 (dq, dk, dv) on the tiled kernels. a: q, k, v, mask, out,
 * lse, dmask, g, dst. */
RT_FN void
rt_b_attn_t(RtT *a, RtAttn c, int slot, int add)
{
	int64_t S = a[0].shape[2], Tk = a[1].shape[2], Dh = a[0].shape[3];
	int t = rt_atile(Dh);
	if (slot == 0) {
		int64_t nb = a[0].n / (S * Dh) * ((S + t - 1) / t);
		RT_AGO(k_attn_tbq, nb, t, Dh)(rt_args(a, 9), nb, c, t, add);
	} else {
		int64_t nb = a[1].n / (Tk * Dh) * ((Tk + t - 1) / t);
		RT_AGO(k_attn_tbk, nb, t, Dh)(rt_args(a, 9), nb, c, t, slot, add);
	}
	rt_after();
}

RT_K
k_attn2_f(const RtT *T, int64_t rows, RtAttn c)
{
	const RtT *Q = &T[0], *K = &T[1], *V = &T[2];
	int64_t S = Q->shape[2], H = Q->shape[1], Hk = K->shape[1], Tk = K->shape[2];
	int64_t Dh = Q->shape[3];
	RT_FOR(r, rows) {
		rt_real acc[RT_MAXDH], m = -INFINITY, l = 0;
		int64_t kb = (r / S / H * Hk + r / S % H / (H / Hk)) * Tk;
		for (int64_t d = 0; d < Dh; d++)
			acc[d] = 0;
		for (int64_t j = 0; j < Tk; j++) {
			rt_real s = rt_ascore(T, c, r, j), w = 1;
			if (c.pd != 0) {
				int keep = rt_unit(c.key, (uint64_t)(r * Tk + j)) >= (rt_real)c.pd;
				rt_put(&T[6], r * Tk + j, keep);
				w = keep ? 1 / (1 - (rt_real)c.pd) : 0;
			}
			if (s != -INFINITY)
				rt_online(acc, &m, &l, s, w, V, kb + j, Dh);
		}
		for (int64_t d = 0; d < Dh; d++)
			rt_put(&T[4], r * Dh + d, l > 0 ? acc[d] / l : 0);
		rt_put(&T[5], r, l > 0 ? m + rt_log(l) : INFINITY);
	}
}

RT_FN void
rt_f_attn2(RtT q, RtT k, RtT v, RtT mask, RtT y, RtT lse, RtT dmask,
           int causal, int mkind, double pd, uint64_t key)
{
	RtAttn c = {causal, mkind, pd, key};
	int64_t rows = rt_attn_rows(q);
#ifdef RT_NAIVE
	RT_RUN(RT_GO, k_attn2_f, rows, (q, k, v, mask, y, lse, dmask), rows, c);
#else
	RtT a[] = {q, k, v, mask, y, lse, dmask};
	(void)rows;
	rt_f_attn_t(a, c);
#endif
}

/* T: q, k, v, mask, out, lse, dmask, g, dst. slot 0: one thread per query
 * row (dq); slots 1, 2: one thread per k/v row (dk, dv), summing over the
 * query heads that share it. */
RT_K
k_attn2_b(const RtT *T, int64_t rows, RtAttn c, int slot, int add)
{
	const RtT *Q = &T[0], *K = &T[1], *L = &T[5], *DM = &T[6], *D = &T[8];
	const RtT *P[5] = {Q, K, &T[2], &T[4], &T[7]};
	int64_t S = Q->shape[2], H = Q->shape[1], Hk = K->shape[1], Tk = K->shape[2];
	int64_t Dh = Q->shape[3], grp = H / Hk;
	rt_real sc = 1 / rt_sqrt((rt_real)Dh);
	RT_FOR(r, rows) {
		rt_real acc[RT_MAXDH];
		int64_t nq = slot ? grp * S : Tk;
		for (int64_t d = 0; d < Dh; d++)
			acc[d] = 0;
		for (int64_t x = 0; x < nq; x++) {
			int64_t qi, kr, j;
			if (slot) {     /* r = (b, hk, j); x = (h in the group, i) */
				int64_t b = r / Tk / Hk, hk = r / Tk % Hk;
				j = r % Tk;
				qi = (b * H + hk * grp + x / S) * S + x % S;
				kr = r;
			} else {
				j = x;
				qi = r;
				kr = (r / S / H * Hk + r / S % H / grp) * Tk + j;
			}
			rt_real s = rt_ascore(T, c, qi, j);
			if (s == -INFINITY)
				continue;
			rt_attn_bterm(acc, P, slot, qi, kr, rt_exp(s - rt_get(L, qi)),
			              rt_akeep(DM, c, qi * Tk + j), sc, Dh);
		}
		for (int64_t d = 0; d < Dh; d++)
			rt_out(D, r * Dh + d, acc[d], add);
	}
}

RT_FN void
rt_b_attn2(int slot, RtT q, RtT k, RtT v, RtT mask, RtT y, RtT lse, RtT dmask,
           RtT g, RtT dst, int add, int causal, int mkind, double pd)
{
	RtAttn c = {causal, mkind, pd, 0};
#ifdef RT_NAIVE
	int64_t rows = dst.n / dst.shape[3];
	RT_RUN(RT_GO, k_attn2_b, rows, (q, k, v, mask, y, lse, dmask, g, dst), rows, c, slot, add);
#else
	RtT a[] = {q, k, v, mask, y, lse, dmask, g, dst};
	rt_b_attn_t(a, c, slot, add);
#endif
}

/* Attention without mask, dropout or GQA (runtime.h's plain kernels). */
RT_FN void
rt_f_attention(RtT q, RtT k, RtT v, RtT y, RtT lse, int causal)
{
	int64_t rows = rt_attn_rows(q);
#ifdef RT_NAIVE
	RT_RUN(RT_GO, k_attn_f, rows, (q, k, v, y, lse), rows, causal);
#else
	RtAttn c = {causal, 0, 0, 0};
	RtT a[] = {q, k, v, rt_none(), y, lse, rt_none()};
	(void)rows;
	rt_f_attn_t(a, c);
#endif
}

RT_FN void
rt_b_attention(int slot, RtT q, RtT k, RtT v, RtT y, RtT lse, RtT g, RtT dst,
               int add, int causal)
{
#ifdef RT_NAIVE
	int64_t rows = dst.n / dst.shape[3];
	RT_RUN(RT_GO, k_attn_b, rows, (q, k, v, y, lse, g, dst), rows, causal, slot, add);
#else
	RtAttn c = {causal, 0, 0, 0};
	RtT a[] = {q, k, v, rt_none(), y, lse, rt_none(), g, dst};
	rt_b_attn_t(a, c, slot, add);
#endif
}

/* ------------------------------------------------------------ issue 28: views for conv1d, axis lists, expand */

/* A conv1d tensor [N, C, L] as [N, C, 1, L], for the 2-D kernels. */
RT_FN RtT
rt_unsq2(RtT t)
{
	int64_t sh[RT_MAXDIM] = {t.shape[0], t.shape[1], 1, t.shape[2]};
	return rt_reshape(t, 4, sh);
}

/* t as [rows, n(t)/rows]: a sum over an axis list reduces axis 1 of a
 * permuted view folded this way. */
RT_FN RtT
rt_rows2(RtT t, int64_t rows)
{
	int64_t sh[RT_MAXDIM] = {rows, t.n / rows};
	return rt_reshape(t, 2, sh);
}

/* expand: t seen with the instance's shape, aligned at the right; new
 * leading axes and size-1 axes that grow are read with stride 0. */
RT_FN RtT
rt_expand_k(RtT t, const RtInst *in)
{
	int ax[RT_MAXDIM] = {0}, lead = in->nd - t.nd;
	int64_t one[RT_MAXDIM], st[RT_MAXDIM] = {0};
	RtT v;
	for (int d = 0; d < in->nd; d++) {
		one[d] = d < lead ? 1 : t.shape[d - lead];
		ax[d] = d;
	}
	v = rt_strided(rt_reshape(t, in->nd, one), in->nd, ax, in->shape, st);
	for (int d = 0; d < in->nd; d++)
		if (one[d] == 1)
			v.map[0].stride[d] = 0;
	return v;
}

/* expand backward, T: g (out's shape), dst (x's shape): each element of
 * dst sums g over the positions that read it, in row-major order of the
 * broadcast axes. */
RT_K
k_expand_b(const RtT *T, int64_t n, int add)
{
	const RtT *G = &T[0], *D = &T[1];
	int lead = G->nd - D->nd;
	int64_t m = G->n / n;
	RT_FOR(i, n) {
		int64_t dx[RT_MAXDIM], ix[RT_MAXDIM];
		rt_real s = 0;
		rt_unravel(D, i, dx);
		for (int64_t j = 0; j < m; j++) {
			int64_t r = j;
			for (int d = G->nd - 1; d >= 0; d--) {
				if (d >= lead && D->shape[d - lead] == G->shape[d]) {
					ix[d] = dx[d - lead];
					continue;
				}
				ix[d] = r % G->shape[d];
				r /= G->shape[d];
			}
			s += rt_get(G, G->dt == RT_DT_ONE ? 0 : rt_at(G, ix));
		}
		rt_out(D, i, s, add);
	}
}

RT_FN void
rt_b_expand(RtT g, RtT dst, int add)
{
	RT_RUN(RT_GO, k_expand_b, dst.n, (g, dst), dst.n, add);
}

/* ------------------------------------------------------------ issue 28: groupnorm */

/* x [N, C, ...] in N * G rows of M = (C/G) * R elements each (R: the
 * spatial size): row r holds channels (r % G) * cpg .. + cpg - 1 of image
 * r / G, contiguously. */
typedef struct RtGn { int64_t rows, M, R, cpg, G; } RtGn;

RT_FN RtGn
rt_gn(RtT x, RtT mean)
{
	RtGn q;
	q.G = mean.shape[1];
	q.rows = mean.n;
	q.M = x.n / q.rows;
	q.cpg = x.shape[1] / q.G;
	q.R = q.M / q.cpg;
	return q;
}

/* T: x, g, b, y, mean, rstd; one thread per row. */
RT_K
k_gn_f(const RtT *T, RtGn q)
{
	const RtT *X = &T[0];
	RT_FOR(r, q.rows) {
		rt_real mean = 0, var = 0;
		for (int64_t k = 0; k < q.M; k++)
			mean += rt_get(X, r * q.M + k);
		mean /= (rt_real)q.M;
		for (int64_t k = 0; k < q.M; k++) {
			rt_real x = rt_get(X, r * q.M + k) - mean;
			var += x * x;
		}
		rt_real rstd = 1 / rt_sqrt(var / (rt_real)q.M + RT_EPS);
		for (int64_t k = 0; k < q.M; k++) {
			int64_t c = r % q.G * q.cpg + k / q.R, j = r * q.M + k;
			rt_put(&T[3], j, (rt_get(X, j) - mean) * rstd * rt_get(&T[1], c) + rt_get(&T[2], c));
		}
		rt_put(&T[4], r, mean);
		rt_put(&T[5], r, rstd);
	}
}

RT_FN void
rt_f_groupnorm(RtT x, RtT g, RtT b, RtT y, RtT mean, RtT rstd)
{
	RtT a[6] = {x, g, b, y, mean, rstd};
	RtGn q = rt_gn(x, mean);
	RT_GO(k_gn_f, q.rows)(rt_args(a, 6), q);
	rt_after();
}

/* T: x, gamma, mean, rstd, g, dst. slot 0 (dx): one thread per row,
 * dx = rstd (g gamma - mean(g gamma) - xhat mean(g gamma xhat)) over the
 * row; slots 1 (dgamma: sum of g xhat) and 2 (dbeta: sum of g): one
 * thread per channel, over the images and the spatial positions. */
RT_K
k_gn_b(const RtT *T, int64_t n, RtGn q, int slot, int add)
{
	const RtT *X = &T[0], *G = &T[4], *D = &T[5];
	int64_t C = q.cpg * q.G, N = q.rows / q.G;
	RT_FOR(i, n) {
		rt_real m1 = 0, m2 = 0;
		if (slot) {             /* i: a channel */
			for (int64_t b = 0; b < N; b++) {
				int64_t r = b * q.G + i / q.cpg;
				rt_real mean = rt_get(&T[2], r), rstd = rt_get(&T[3], r);
				for (int64_t k = 0; k < q.R; k++) {
					int64_t j = (b * C + i) * q.R + k;
					m1 += slot == 1 ? rt_get(G, j) * (rt_get(X, j) - mean) * rstd
					                : rt_get(G, j);
				}
			}
			rt_out(D, i, m1, add);
			continue;
		}
		rt_real mean = rt_get(&T[2], i), rstd = rt_get(&T[3], i);
		for (int64_t k = 0; k < q.M; k++) {
			int64_t j = i * q.M + k;
			rt_real gg = rt_get(G, j) * rt_get(&T[1], i % q.G * q.cpg + k / q.R);
			m1 += gg;
			m2 += gg * (rt_get(X, j) - mean) * rstd;
		}
		m1 /= (rt_real)q.M;
		m2 /= (rt_real)q.M;
		for (int64_t k = 0; k < q.M; k++) {
			int64_t j = i * q.M + k;
			rt_real gg = rt_get(G, j) * rt_get(&T[1], i % q.G * q.cpg + k / q.R);
			rt_out(D, j, rstd * (gg - m1 - (rt_get(X, j) - mean) * rstd * m2), add);
		}
	}
}

RT_FN void
rt_b_groupnorm(int slot, RtT x, RtT gamma, RtT mean, RtT rstd, RtT g, RtT dst, int add)
{
	RtT a[6] = {x, gamma, mean, rstd, g, dst};
	RtGn q = rt_gn(x, mean);
	int64_t n = slot ? dst.n : q.rows;
	RT_GO(k_gn_b, n)(rt_args(a, 6), n, q, slot, add);
	rt_after();
}
