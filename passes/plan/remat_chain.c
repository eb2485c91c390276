/* passes/plan/remat_chain.c -- -O2's checkpoint chain: a peak-bounded DP
 * over the cut nodes of the forward graph (articulation points: nothing an
 * earlier forward node makes is read by a forward node after them) with
 * true costs, then each chosen checkpoint set as a plan in the pool.
 *
 * The forward splits at the cuts into pieces. Keeping cut k costs the bytes
 * its outputs keep alive (a view costs its base), whether or not backward
 * saves them. Back-propagating the segment between two kept cuts i < k
 * holds: the checkpoints kept up to i, cut k, the bytes backward saves from
 * the segment's nodes (each base counted once), and what else is live then
 * -- the background: the -O0 schedule's memory at each backward step less
 * every forward-made instance (param grads, gradients, workspace, logits'
 * gradient at the loss). So the plan's peak is about
 *   max over segments (i, k] of dp(i) + c(k) + W(i, k) + G(i, k),
 * dp(i) the checkpoint bytes kept up to i. For a bound P the DP finds the
 * checkpoint set that meets it with the fewest kept bytes (which is what
 * the later segments need too, so the minimum is exact); P is bisected to
 * the smallest it can meet, then swept up a little, and every distinct set
 * is scored by lv_eval (the model only steers).
 *
 * A plan keeps every gap of a kept cut's outputs and drops, for every other
 * forward tensor, the gap from its last forward use to backward and its
 * tail: a segment is recomputed from its checkpoint (the forward-only
 * tensors inside it only while recomputing), never from stale instances
 * left alive (Chen et al.'s segments). Reads the Dag and the gap table;
 * allocates from one arena per call. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

typedef struct Chain {
	const RmModel *M;
	RmScorer *S;            /* scores the background and the plans */
	RmRecipe *R;            /* capmet: a plan met the cap */
	Arena *a;
	int r;                  /* cuts; boundaries 0 (start) .. r + 1 (end) */
	int *cut;               /* [r + 2] boundary's node (-1 at 0, r + 1) */
	int64_t *c;             /* [r + 2] bytes a kept cut keeps alive */
	int64_t *sb;            /* [r + 2] of those, what backward saves anyway */
	int64_t *sw;            /* [r + 2] prefix: saved bytes of pieces 1..k */
	int64_t *g;             /* [r + 2] background while piece k runs backward */
	int64_t *gown;          /* [r + 2] g less what k's own saved bytes free
	                           by then (chain_background_own) */
	int64_t *dp;            /* [r + 2] the DP's kept bytes, INT64_MAX: none */
	int *par;               /* [r + 2] previous kept boundary */
	long work;              /* DP steps so far */
	int maxlen;             /* most pieces a segment may span */
	int *piece;             /* [nnode] forward node's piece, 0: none */
	int64_t *fc;            /* [r + 2] prefix: forward cost of pieces 1..k */
	bool *held;             /* [nnode] outputs kept though inside a segment */
	int64_t *obytes;        /* [nnode] bytes a forward node's outputs hold */
	int64_t top;            /* a bound every DP meets */
	int64_t base_peak;      /* the -O0 schedule's peak */
} Chain;

static bool
is_fwd(const RmModel *M, int v)
{
	return !M->d->node[v].once && !M->d->node[v].is_backward;
}

/* The cut nodes, by the reach of every earlier forward node's outputs over
 * later forward uses; piece[v] for every forward node. */
static void
find_cuts(Chain *K, int *piece)
{
	const RmModel *M = K->M;
	const Dag *d = M->d;
	int *lastfwd = ar_alloc(K->a, sizeof *lastfwd * ((size_t)d->nt + 1));
	int reach = -1;

	K->cut = ar_alloc(K->a, sizeof *K->cut * ((size_t)d->nnode + 2));
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; is_fwd(M, v) && k < uses.hi; k++)
			lastfwd[M->use[k]] = x;
	}
	K->r = 0;
	K->cut[0] = -1;
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		if (!is_fwd(M, v))
			continue;
		piece[v] = K->r + 1;
		if (rm_is_gather(M, v))
			continue;
		if (reach <= x)
			K->cut[++K->r] = v;
		for (int j = 0; j < d->node[v].nout; j++)
			if (lastfwd[d->node[v].out[j]] > reach)
				reach = lastfwd[d->node[v].out[j]];
	}
	/* a node after the last cut belongs to the end piece; a cut's node
	 * ends its piece */
	for (int k = 1; k <= K->r; k++)
		piece[K->cut[k]] = k;
	K->cut[K->r + 1] = -1;
}

/* Costs: c and sb per cut, sw per piece (each saved base once). */
static void
chain_costs(Chain *K, const int *piece)
{
	const RmModel *M = K->M;
	const Dag *d = M->d;
	bool *counted = ar_alloc(K->a, (size_t)d->nt + 1);
	int n2 = K->r + 2;

	K->c = ar_alloc(K->a, sizeof *K->c * (size_t)n2);
	K->sb = ar_alloc(K->a, sizeof *K->sb * (size_t)n2);
	K->sw = ar_alloc(K->a, sizeof *K->sw * (size_t)n2);
	for (int k = 1; k <= K->r; k++) {
		const DagNode *n = &d->node[K->cut[k]];
		for (int j = 0; j < n->nout; j++) {
			int t = n->out[j], rt = dag_root(d, t);
			RmRow gaps = rm_gaps(M, t);
			if (rt >= 0 && gaps.hi - gaps.lo > 1)
				K->c[k] += d->t[rt].bytes;
		}
	}
	for (int t = 0; t < d->nt; t++) {
		int rt = dag_root(d, t), p = M->prod[t];
		if (M->longgap[t] < 0 || rt < 0 || counted[rt] || p < 0 || !is_fwd(M, p))
			continue;
		counted[rt] = true;
		K->sw[piece[p]] += d->t[rt].bytes;
		if (piece[p] <= K->r && K->cut[piece[p]] == p)
			K->sb[piece[p]] += d->t[rt].bytes;
	}
	K->obytes = ar_alloc(K->a, sizeof *K->obytes * ((size_t)d->nnode + 1));
	for (int v = 0; v < d->nnode; v++)
		for (int j = 0; j < d->node[v].nout; j++)
			K->obytes[v] += dag_owned(d, d->node[v].out[j]);
	K->fc = ar_alloc(K->a, sizeof *K->fc * (size_t)n2);
	for (int v = 0; v < d->nnode; v++)
		if (piece[v] > 0)
			K->fc[piece[v]] += d->node[v].cost;
	for (int k = 1; k < n2; k++) {
		K->sw[k] += K->sw[k - 1];
		K->fc[k] += K->fc[k - 1];
	}
}

/* The background less what the piece's own saved tensors free while it
 * runs backward (K->gown): the most, over piece k's backward steps s, of
 * -O0's background at s plus the instances piece k's forward made that
 * are still live at s, less all k saves (sw's share of k). A segment's
 * model holds every saved byte of its pieces through the backward of
 * each, so its need, W + G, counts the bytes a piece's early backward
 * steps free as live at its late ones: on BERT the head's log-softmax
 * (1 GB) dies at the loss's backward, before the bias add's backward
 * holds two logit-sized gradients, and W + G overrated the head by that
 * gigabyte. At piece p's step s of a segment (i, j] the saved bytes live
 * are at most sw(i..j) less p's share plus p's instances live at s, so
 * W + the most of gown over the segment still bounds -O0's memory there
 * from above. At most g: the instances of k are at most its share. */
static void
chain_background_own(Chain *K, const int *piece, const MemEval *ev,
                     const int64_t *fw)
{
	const RmModel *M = K->M;
	const Dag *d = M->d;
	int np = K->r + 2;
	/* CSR over pieces of their backward steps (ascending), with one
	 * extra slot per piece for the difference array's ends */
	int *ofs = ar_alloc(K->a, sizeof *ofs * ((size_t)np + 1));
	int *pos = ar_alloc(K->a, sizeof *pos * ((size_t)M->n + 1));
	int *cnt = ar_alloc(K->a, sizeof *cnt * ((size_t)np + 1));
	int64_t *own = ar_alloc(K->a, sizeof *own * ((size_t)M->n + (size_t)np + 1));

	K->gown = ar_alloc(K->a, sizeof *K->gown * (size_t)np);
	for (int s = 0; s < M->n; s++) {
		int f = d->node[d->base_order[s]].fwd_plus1 - 1;
		if (f >= 0 && piece[f] > 0)
			ofs[piece[f] + 1]++;
	}
	for (int k = 0; k < np; k++)
		ofs[k + 1] += ofs[k];
	for (int s = 0; s < M->n; s++) {
		int f = d->node[d->base_order[s]].fwd_plus1 - 1;
		if (f >= 0 && piece[f] > 0)
			pos[ofs[piece[f]] + cnt[piece[f]]++] = s;
	}
	for (int i = 0; i < ev->ninst; i++) {
		const Instance *in = &ev->inst[i];
		int p = M->prod[in->tensor];
		if (in->owned <= 0 || p < 0 || !is_fwd(M, p) || piece[p] <= 0)
			continue;
		int k = piece[p], lo = ofs[k], hi = ofs[k + 1], a = lo, b;
		/* the first of k's backward steps at or after the start, and
		 * the first after the end */
		for (int h = hi; a < h;) {
			int m = a + (h - a) / 2;
			if (pos[m] < in->start)
				a = m + 1;
			else
				h = m;
		}
		b = a;
		for (int h = hi; b < h;) {
			int m = b + (h - b) / 2;
			if (pos[m] <= in->end)
				b = m + 1;
			else
				h = m;
		}
		own[a + k] += in->owned;
		own[b + k] -= in->owned;
	}
	for (int k = 1; k < np; k++) {
		int64_t run = 0, best = 0, share = K->sw[k] - K->sw[k - 1];
		for (int x = ofs[k]; x < ofs[k + 1]; x++) {
			int s = pos[x];
			run += own[x + k];
			int64_t v = ev->live_bytes[s] - fw[s] + run - share;
			best = x == ofs[k] || v > best ? v : best;
		}
		K->gown[k] = best < 0 ? 0 : best < K->g[k] ? best : K->g[k];
	}
}

/* The background: -O0's memory at each backward node less the forward-made
 * instances, the most over the backward nodes of each piece. */
static bool
chain_background(Chain *K, const int *piece)
{
	const RmModel *M = K->M;
	const Dag *d = M->d;
	unsigned char *st = ar_alloc(K->a, (size_t)M->ngap + 1);
	const MemEval *ev = rm_eval_state(K->S, st);

	K->g = ar_alloc(K->a, sizeof *K->g * ((size_t)K->r + 2));
	if (!ev || ev->nsteps != M->n)
		return false;
	K->base_peak = ev->peak;
	int64_t *fw = ar_alloc(K->a, sizeof *fw * ((size_t)M->n + 2));
	for (int i = 0; i < ev->ninst; i++) {
		const Instance *in = &ev->inst[i];
		int p = M->prod[in->tensor];
		if (in->owned <= 0 || p < 0 || !is_fwd(M, p))
			continue;
		fw[in->start < 0 ? 0 : in->start] += in->owned;
		fw[in->end + 1] -= in->owned;
	}
	for (int s = 1; s <= M->n; s++)
		fw[s] += fw[s - 1];
	for (int s = 0; s < M->n; s++) {
		const DagNode *n = &d->node[d->base_order[s]];
		int f = n->fwd_plus1 - 1;
		if (f < 0 || piece[f] <= 0)
			continue;
		int64_t bg = ev->live_bytes[s] - fw[s];
		if (bg > K->g[piece[f]])
			K->g[piece[f]] = bg;
	}
	chain_background_own(K, piece, ev, fw);
	return true;
}

/* On a long chain, only one cut in every m may be kept: the cheapest to
 * keep (smallest c) of each run of m. The DP costs r x maxlen per bound,
 * r^1.5, and a chain of 400,000 pieces took minutes; with m about
 * sqrt(r) / 16 it works over 16 sqrt(r) boundaries, r^0.75, and a
 * segment of the optimum's about sqrt(r) pieces still has some 16
 * boundaries to choose from. A boundary's piece absorbs the pieces since
 * the previous one: sw and fc are prefixes (read at the kept boundary),
 * g and gown the most over the absorbed pieces. Chains of up to 1,023 cuts (every
 * example) keep every cut. */
static void
chain_coarsen(Chain *K)
{
	int m = (int)(sqrt((double)K->r) / 16), nr = 0, prev = 0;

	if (m < 2)
		return;
	/* boundary nr (at most the old index it takes, so reads stay ahead
	 * of writes): the cheapest cut of each run, then the end */
	for (int lo = 1; lo <= K->r + 1; lo += m) {
		int best = lo;
		int64_t gm = 0, go = 0;
		if (lo > K->r)
			best = K->r + 1;
		for (int k = lo + 1; lo <= K->r && k < lo + m && k <= K->r; k++)
			if (K->c[k] < K->c[best])
				best = k;
		for (int k = prev + 1; k <= best; k++) {
			gm = K->g[k] > gm ? K->g[k] : gm;
			go = K->gown[k] > go ? K->gown[k] : go;
		}
		nr++;
		K->cut[nr] = K->cut[best];
		K->c[nr] = K->c[best];
		K->sb[nr] = K->sb[best];
		K->sw[nr] = K->sw[best];
		K->fc[nr] = K->fc[best];
		K->g[nr] = gm;
		K->gown[nr] = go;
		prev = best;
		if (best == K->r + 1)
			break;
		if (lo + m > K->r + 1)     /* the end after the last run */
			lo = K->r + 1 - m;
	}
	K->r = nr - 1;
}

/* The DP for bound P; true when the end boundary is reachable. */
static bool
chain_dp(Chain *K, int64_t P)
{
	int end = K->r + 1;

	K->dp[0] = 0;
	for (int k = 1; k <= end; k++) {
		int64_t gmax = 0, best = INT64_MAX, fixed = K->c[k] - K->sb[k];
		int bi = -1;
		K->dp[k] = INT64_MAX;
		for (int i = k - 1; i >= 0 && i >= k - K->maxlen; i--) {
			K->work++;
			if (K->g[i + 1] > gmax)
				gmax = K->g[i + 1];
			int64_t need = fixed + K->sw[k] - K->sw[i] + gmax;
			if (need > P)
				break;
			if (K->dp[i] != INT64_MAX && K->dp[i] < best &&
			    K->dp[i] + need <= P) {
				best = K->dp[i];
				bi = i;
			}
		}
		if (bi >= 0) {
			K->dp[k] = best + K->c[k];
			K->par[k] = bi;
		}
	}
	return K->dp[end] != INT64_MAX;
}

/* The plan keeping the DP's checkpoints (see the file comment) and the
 * outputs of held nodes. */
static void
chain_keep(const Chain *K, bool *keep)
{
	memset(keep, 0, (size_t)K->M->d->nnode + 1);
	for (int k = K->par[K->r + 1]; k > 0; k = K->par[k])
		keep[K->cut[k]] = true;
}

static void
chain_state(const Chain *K, const bool *keep, unsigned char *st)
{
	const RmModel *M = K->M;
	const Dag *d = M->d;

	memset(st, GAP_KEEP, (size_t)M->ngap);
	for (int t = 0; t < d->nt; t++) {
		int p = M->prod[t];
		if (p < 0 || !is_fwd(M, p) || keep[p] || K->held[p])
			continue;
		if (M->longgap[t] >= 0)
			st[M->longgap[t]] = GAP_STICKY;
		st[rm_tail(M, t)] = GAP_TRANSIENT;
	}
}

static const Chain *sort_chain;

/* Forward nodes, most recompute cost per byte their outputs hold first. */
static int
by_worth(const void *pa, const void *pb)
{
	const Chain *K = sort_chain;
	int a = *(const int *)pa, b = *(const int *)pb;
	double ra = (double)K->M->d->node[a].cost / (double)(K->obytes[a] + 1);
	double rb = (double)K->M->d->node[b].cost / (double)(K->obytes[b] + 1);

	if (ra != rb)
		return ra > rb ? -1 : 1;
	return a - b;
}

/* Under a recompute cap: holds (keeps instead of recomputing) the outputs
 * of the forward nodes inside segments that cost the most recompute per
 * byte -- the matmuls before the elementwise ops -- until the estimate
 * (every other forward node in a segment recomputed once) is within the
 * cap, with a margin for the estimate's error. A plan over the cap is
 * repaired rather than dropped. */
static void
chain_fit_cap(Chain *K, const bool *keep, double cap, int *buf)
{
	const Dag *d = K->M->d;
	int64_t est = 0;
	int n = 0;

	memset(K->held, 0, (size_t)d->nnode + 1);
	if (cap < 0)
		return;
	for (int v = 0; v < d->nnode; v++) {
		if (K->piece[v] <= 0 || keep[v])
			continue;
		est += d->node[v].cost;
		buf[n++] = v;
	}
	if ((double)est <= cap)
		return;
	K->R->capmet = true;
	sort_chain = K;
	qsort(buf, (size_t)n, sizeof *buf, by_worth);
	for (int i = 0; i < n && (double)est > 0.97 * cap; i++) {
		K->held[buf[i]] = true;
		est -= d->node[buf[i]].cost;
	}
}

/* The smallest bound the DP meets (to 1/4096), doubling up from 1 and
 * then bisecting, so that no DP scans segments much longer than the
 * answer's; -1 when even top fails. */
static int64_t
chain_min_bound(Chain *K, int64_t top)
{
	int64_t lo = 0, hi = 1;

	while (!chain_dp(K, hi)) {
		if (hi >= top)
			return -1;
		lo = hi;
		hi = hi < top - hi ? 2 * hi : top;
	}
	while (hi - lo > 1 + hi / 4096) {
		int64_t mid = lo + (hi - lo) / 2;
		if (chain_dp(K, mid))
			hi = mid;
		else
			lo = mid;
	}
	return hi;
}

/* Scratch for chain_add: the last plan's sets, to skip repeats. */
typedef struct Last {
	bool *keep, *prev, *held;
	unsigned char *st;
	int *buf;
} Last;

static Last
last_init(Chain *K)
{
	size_t nn = (size_t)K->M->d->nnode + 1;
	Last l = {ar_alloc(K->a, nn), ar_alloc(K->a, nn), ar_alloc(K->a, nn),
	          ar_alloc(K->a, (size_t)K->M->ngap + 1),
	          ar_alloc(K->a, sizeof *l.buf * nn)};

	l.prev[0] = true;       /* no plan yet: differs from any set */
	return l;
}

/* The plan of l->keep and K->held as a plan in the pool, unless it is the
 * last one again. */
static void
last_add(Chain *K, RmPool *pool, Last *l)
{
	size_t nn = (size_t)K->M->d->nnode + 1;

	if (memcmp(l->keep, l->prev, nn) == 0 && memcmp(K->held, l->held, nn) == 0)
		return;
	chain_state(K, l->keep, l->st);
	memcpy(l->prev, l->keep, nn);
	memcpy(l->held, K->held, nn);
	rm_pool_add(pool, K->M, l->st, rm_eval_state(K->S, l->st));
}

/* The DP's set for bound P, fitted to the cap, as a plan in the pool,
 * unless it is the last one again. */
static void
chain_add(Chain *K, RmPool *pool, int64_t P, double cap, Last *l)
{
	if (!chain_dp(K, P))
		return;
	chain_keep(K, l->keep);
	chain_fit_cap(K, l->keep, cap, l->buf);
	last_add(K, pool, l);
}

/* The DP's segment length and a bound every DP meets, for the cuts as
 * they are now. */
static void
chain_limits(Chain *K)
{
	/* segments of up to 8 sqrt(r) pieces: the optimum's are about sqrt(r)
	 * on uniform chains, and longer ones would make the DP quadratic */
	K->maxlen = 8 * (int)sqrt((double)K->r) + 64;
	int64_t hi = K->sw[K->r + 1], gmax = 0;
	for (int k = 0; k <= K->r + 1; k++) {
		hi = ck_sat_add(hi, K->c[k]);
		gmax = K->g[k] > gmax ? K->g[k] : gmax;
	}
	K->top = ck_sat_add(ck_sat_mul(2, ck_sat_add(hi, gmax)), 1);
}

/* The cuts, their costs and the background of the graph S scores, in a;
 * false (a freed) when there is no chain: no backward, no cut, or no
 * -O0 evaluation. */
static bool
chain_init(Chain *K, RmScorer *S, RmRecipe *R, Arena *a)
{
	const RmModel *M = S->m;
	size_t nn = (size_t)M->d->nnode + 1;

	if (!M->has_backward)
		return false;
	ar_init(a);
	K->M = M;
	K->S = S;
	K->R = R;
	K->a = a;
	K->piece = ar_alloc(a, sizeof *K->piece * nn);
	find_cuts(K, K->piece);
	chain_costs(K, K->piece);
	if (K->r == 0 || !chain_background(K, K->piece)) {
		ar_free(a);
		return false;
	}
	K->dp = ar_alloc(a, sizeof *K->dp * ((size_t)K->r + 2));
	K->par = ar_alloc(a, sizeof *K->par * ((size_t)K->r + 2));
	K->held = ar_alloc(a, nn);
	chain_limits(K);
	return true;
}

/* ----------------------------------------------------------------- nested */
/* The DP above keeps each checkpoint from the forward to its segment's
 * backward and recomputes a segment once: Chen's one level. With room for
 * more recompute, a checkpoint may itself be recomputed from an earlier
 * one while the segments after it are back-propagated (Revolve; rotor's
 * DP of Beaumont et al.): the checkpoints held at once then fall from
 * about sqrt(n) to a few. rm_nest_dp is that DP over the boundaries
 * (remat_int.h says what it computes); chain_nested builds its inputs from
 * the chain's costs and turns its answers into explicit schedules that
 * lv_eval scores (the DP's memory is the model's estimate, rounded up to
 * units, and only steers). */
enum {
	NEST_MAXB = 80,         /* boundaries: the DP is O(nb^3 q) */
	NEST_UNITS = 160,       /* memory units up to the reference bound */
	NEST_PLANS = 8,         /* budgets tried, from the smallest within the cap */
	NEST_VARIANTS = 4,      /* longest leaves allowed: any, 4, 2, 1 pieces */
	NEST_HASHES = 40,       /* at least the plans of every variant, both
	                           backgrounds */
	NEST_TRIMS = 48         /* nest_trim's most tries per plan (the
	                           effort's nest_trims: fewer on large graphs) */
};

static size_t
nest_at(const RmNest *N, int i, int j, int q)
{
	return ((size_t)i * (size_t)N->nb + (size_t)j) * (size_t)(N->q + 1) + (size_t)q;
}

/* Split k for every budget q: right[q - c] (k held, c units) and then
 * left[q], after a run costing run; best takes it where cheaper (which
 * split won is found again by rm_nest_split, only for the cells a plan
 * reads: a table of them, stored here, was a quarter of the DP's time).
 * Every entry is at most RM_NEST_NONE (none) and run at most
 * nest_clamp's, so the sum cannot overflow and one with a missing part
 * is never below a real one: no branch but the select. Four q at a time
 * where the compiler has vector types (GCC, clang), in AVX2 where the
 * machine has it, chosen when the program loads: GPT-2 with 50 blocks at
 * 8 stages spent 17% of -O2 in the DP, 7% so. */
#if defined(__GNUC__) && defined(__has_attribute)
#if __has_attribute(vector_size)
#define NEST_VEC
typedef int64_t NestVec __attribute__((vector_size(32)));
#endif
#if __has_attribute(target_clones) && defined(__x86_64__) && defined(__ELF__)
__attribute__((target_clones("avx2", "default")))
#endif
#endif
static void
nest_split(int64_t *best, const int64_t *right, const int64_t *left, int c, int Q,
           int64_t run, int from)
{
	int q = c > from ? c : from;
#ifdef NEST_VEC
	NestVec r = {run, run, run, run};

	for (; q + 3 <= Q; q += 4) {
		NestVec a, b, o;
		memcpy(&a, &right[q - c], sizeof a);
		memcpy(&b, &left[q], sizeof b);
		memcpy(&o, &best[q], sizeof o);
		NestVec v = r + a + b;
		NestVec m = v < o;      /* all ones where v is cheaper */
		o = (v & m) | (o & ~m);
		memcpy(&best[q], &o, sizeof o);
	}
#endif
	for (; q <= Q; q++) {
		int64_t v = run + right[q - c] + left[q];
		best[q] = v < best[q] ? v : best[q];
	}
}

/* The first q of row[0..Q] that is not RM_NEST_NONE, Q + 1: none. */
static short
nest_first(const int64_t *row, int Q)
{
	int q = 0;

	while (q <= Q && row[q] >= RM_NEST_NONE)
		q++;
	return (short)q;
}

/* Where a split at k of a segment may start: below the first finite q of
 * its left part, or c + that of its right part, the sum is at least
 * RM_NEST_NONE and never taken (every best is at most that), so skipping
 * those q changes nothing (BERT with 32 layers at 8 ZeRO-3 ranks: -O2
 * 0.91 -> 0.87 s of CPU, the same plan). */
static int
nest_from(const RmNest *N, int left, int right, int c)
{
	if (!N->lo)
		return 0;
	int a = N->lo[left], b = c + N->lo[right];

	return a > b ? a : b;
}

/* A cost the DP adds: at most RM_NEST_NONE / (2 nb), so that a tree's
 * (at most nb leaves and nb runs) stays below RM_NEST_NONE. */
static int64_t
nest_clamp(const RmNest *N, int64_t x)
{
	int64_t lim = RM_NEST_NONE / (2 * N->nb + 2);

	return x < 0 ? 0 : x > lim ? lim : x;
}

/* The cell of (i, j] with q units and its splits' operands: their left
 * and right rows (right: the row of (k, j]; first: of the outermost
 * level), the run before k, and where nest_from lets a split start. */
static int64_t *
nest_row(const RmNest *N, int i, int j, bool first)
{
	return first ? &N->top[(size_t)i * (size_t)(N->q + 1)] : &N->f[nest_at(N, i, j, 0)];
}

static int64_t
nest_run_cost(const RmNest *N, int i, int k, bool first)
{
	return first ? 0 : nest_clamp(N, N->fc[k] - N->fc[i]);
}

static int
nest_split_from(const RmNest *N, int i, int j, int k, bool first)
{
	int nb = N->nb;

	return nest_from(N, i * nb + k, first ? nb * nb + k : k * nb + j, N->cu[k]);
}

/* (i, j] before its splits: its leaf's cost, from q = *need on (none
 * where no leaf is allowed). */
static int64_t
nest_leaf_cost(const RmNest *N, int i, int j, bool first, int *need)
{
	bool short_leaf = N->maxleaf == 0 || j - i <= N->maxleaf;

	*need = short_leaf ? N->need[i * N->nb + j] : N->q + 1;
	return first ? 0 : nest_clamp(N, N->fc[j] - N->fc[i] - N->own[j]);
}

/* (i, j] for every q (first: j is the end, after the original forward,
 * whose run to a checkpoint costs nothing): the leaf, then each split k
 * in increasing order with q inner, both tables read along q; a later k
 * replaces an earlier one only when strictly cheaper. */
static void
nest_cell(RmNest *N, int i, int j, bool first)
{
	int Q = N->q, need;
	int64_t *best = nest_row(N, i, j, first);
	int64_t leaf = nest_leaf_cost(N, i, j, first, &need);

	for (int q = 0; q <= Q; q++)
		best[q] = need <= q ? leaf : RM_NEST_NONE;
	for (int k = i + 1; k < j; k++)
		nest_split(best, nest_row(N, k, j, first), nest_row(N, i, k, false), N->cu[k], Q,
		           nest_run_cost(N, i, k, first), nest_split_from(N, i, j, k, first));
	if (N->lo)
		N->lo[first ? N->nb * N->nb + i : i * N->nb + j] = nest_first(best, Q);
}

void
rm_nest_dp(RmNest *N)
{
	int nb = N->nb;

	/* by end j, then start i down: (i, j] reads (i, k], made at an earlier
	 * end, and (k, j], made just before; the rows (k, j] of one j stay in
	 * cache for every i (by length, each cell read rows far apart: the
	 * DP's share of -O2 on GPT-2 with 50 blocks at 8 stages 17.5 ->
	 * 15.5%) */
	for (int j = 1; j < nb; j++)
		for (int i = j - 1; i >= 0; i--)
			nest_cell(N, i, j, false);
	for (int i = nb - 2; i >= 0; i--)
		nest_cell(N, i, nb - 1, true);
}

int
rm_nest_split(const RmNest *N, int i, int j, int q, bool first)
{
	int need;
	int64_t best = nest_leaf_cost(N, i, j, first, &need);
	int arg = -1;

	if (need > q)
		best = RM_NEST_NONE;

	for (int k = i + 1; k < j; k++) {
		int c = N->cu[k], from = nest_split_from(N, i, j, k, first);
		if (q < c || q < from)
			continue;
		int64_t v = nest_run_cost(N, i, k, first) + nest_row(N, k, j, first)[q - c] +
		            nest_row(N, i, k, false)[q];
		if (v < best) {
			best = v;
			arg = k;
		}
	}
	return arg;
}

/* The nested plans' context: the DP, the boundaries as the chain's
 * indices, each node's segment, and the recompute runs to emit before
 * each segment's backward. */
typedef struct Nest {
	Chain *K;
	RmNest N;
	int *bk;                /* [nb] the chain's boundary index */
	int *seg;               /* [nnode] segment 1..nb-1 of a forward or
	                           backward node, 0: none */
	int *fofs, *fnode;      /* CSR [nb]: forward nodes of each segment */
	int *bofs, *bnode;      /* CSR [nb]: backward nodes of each segment */
	bool *mark;             /* [nnode] scratch */
	int *run, *runseg;      /* recompute steps and the segment each precedes */
	int nrun, caprun;
	int *steps, nsteps;     /* the schedule */
	uint64_t hash[NEST_HASHES]; /* the schedules made so far (FNV-1a):
	                           one the DP makes again is skipped */
	int nhash;
	int trims;              /* > 0: nest_plans also tries budgets below the
	                           cap's, and nest_trim tries as many of each
	                           plan's repeated runs */
	RmPool *below;          /* with trims: the plans below the cap's budget */
	int *tbuf;              /* [RM_MAXSTEP + 1] nest_trim's trial */
	bool *tdrop;            /* [RM_MAXSTEP + 1] steps it dropped */
} Nest;

/* The boundaries: every cut when they fit in NEST_MAXB, else the cheapest
 * to keep of each run (as chain_coarsen). */
static int
nest_bounds(Nest *X)
{
	const Chain *K = X->K;
	int r = K->r, m = (r + NEST_MAXB - 3) / (NEST_MAXB - 2), nb = 0;

	X->bk[nb++] = 0;
	for (int lo = 1; lo <= r; lo += m) {
		int best = lo;
		for (int k = lo + 1; k < lo + m && k <= r; k++)
			if (K->c[k] < K->c[best])
				best = k;
		X->bk[nb++] = best;
	}
	X->bk[nb++] = r + 1;
	return nb;
}

/* Each forward node's segment by base position (the boundaries' nodes end
 * theirs), each backward node's by its forward node's (one without: the
 * backward node's before it), and the CSR lists of both. */
static void
nest_segments(Nest *X)
{
	const RmModel *M = X->K->M;
	const Dag *d = M->d;
	int nb = X->N.nb, s = 1, bs = nb - 1;
	int *cnt;

	X->fofs = ar_alloc(X->K->a, sizeof *X->fofs * ((size_t)nb + 1));
	X->bofs = ar_alloc(X->K->a, sizeof *X->bofs * ((size_t)nb + 1));
	X->fnode = ar_alloc(X->K->a, sizeof *X->fnode * ((size_t)M->n + 1));
	X->bnode = ar_alloc(X->K->a, sizeof *X->bnode * ((size_t)M->n + 1));
	cnt = ar_alloc(X->K->a, sizeof *cnt * ((size_t)nb + 1));
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		if (is_fwd(M, v)) {
			X->seg[v] = s;
			if (s < nb - 1 && v == X->K->cut[X->bk[s]])
				s++;
			X->fofs[X->seg[v]]++;
		} else if (d->node[v].is_backward) {
			int f = d->node[v].fwd_plus1 - 1;
			if (f >= 0 && X->seg[f] > 0)
				bs = X->seg[f];
			X->seg[v] = bs;
			X->bofs[bs]++;
		}
	}
	/* prefix sums: segment k's nodes are [ofs[k - 1], ofs[k]) */
	for (int k = 1; k <= nb; k++) {
		X->fofs[k] += X->fofs[k - 1];
		X->bofs[k] += X->bofs[k - 1];
	}
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x], k = X->seg[v];
		if (k == 0)
			continue;
		if (is_fwd(M, v))
			X->fnode[X->fofs[k - 1] + cnt[k]++] = v;
	}
	memset(cnt, 0, sizeof *cnt * ((size_t)nb + 1));
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x], k = X->seg[v];
		if (k > 0 && !is_fwd(M, v))
			X->bnode[X->bofs[k - 1] + cnt[k]++] = v;
	}
}

static void
nest_push(Nest *X, int v, int before)
{
	if (X->nrun == X->caprun) {
		int cap = X->caprun ? 2 * X->caprun : 1024;
		int *run = ar_alloc(X->K->a, sizeof *run * (size_t)cap);
		int *rs = ar_alloc(X->K->a, sizeof *rs * (size_t)cap);
		if (X->nrun) {
			memcpy(run, X->run, sizeof *run * (size_t)X->nrun);
			memcpy(rs, X->runseg, sizeof *rs * (size_t)X->nrun);
		}
		X->run = run;
		X->runseg = rs;
		X->caprun = cap;
	}
	X->run[X->nrun] = v;
	X->runseg[X->nrun++] = before;
}

/* Runs again, before segment `before`'s backward, the forward nodes of
 * segments (i, j] that the marks need: marked ones, and transitively the
 * producers of their inputs in (i, j]; skip (j's node when it is held)
 * never. Marks are cleared. */
static void
nest_run(Nest *X, int i, int j, int skip, int before)
{
	const RmModel *M = X->K->M;
	int lo = X->fofs[i], hi = X->fofs[j];

	for (int x = hi - 1; x >= lo; x--) {
		int v = X->fnode[x];
		if (!X->mark[v] || v == skip)
			continue;
		RmRow uses = rm_uses(M, v);
		for (int u = uses.lo; u < uses.hi; u++) {
			int p = M->prod[M->use[u]];
			if (p >= 0 && X->seg[p] > i && X->seg[p] <= j && is_fwd(M, p))
				X->mark[p] = true;
		}
	}
	for (int x = lo; x < hi; x++) {
		int v = X->fnode[x];
		if (X->mark[v] && v != skip)
			nest_push(X, v, before);
		X->mark[v] = false;
	}
}

/* A leaf (i, j] run again before its backward: what its backward nodes
 * read from its forward nodes, j's held node not. */
static void
nest_leaf(Nest *X, int i, int j)
{
	const RmModel *M = X->K->M;
	int skip = j < X->N.nb - 1 ? X->K->cut[X->bk[j]] : -1;

	for (int x = X->bofs[i]; x < X->bofs[j]; x++) {
		RmRow uses = rm_uses(M, X->bnode[x]);
		for (int u = uses.lo; u < uses.hi; u++) {
			int p = M->prod[M->use[u]];
			if (p >= 0 && X->seg[p] > i && X->seg[p] <= j && is_fwd(M, p))
				X->mark[p] = true;
		}
	}
	nest_run(X, i, j, skip, j);
}

/* The DP's answer for (i, j] with q units as recompute runs; first: its
 * forward is the original pass. */
static void
nest_emit(Nest *X, int i, int j, int q, bool first)
{
	const RmNest *N = &X->N;
	int k = rm_nest_split(N, i, j, q, first);

	if (k < 0) {
		if (!first)
			nest_leaf(X, i, j);
		return;
	}
	if (!first) {
		X->mark[X->K->cut[X->bk[k]]] = true;
		nest_run(X, i, k, -1, j);
	}
	nest_emit(X, k, j, q - N->cu[k], first);
	nest_emit(X, i, k, q, false);
}

/* The schedule: the base order, each segment's recompute runs (stable by
 * segment) before the first backward node of it or of an earlier one. */
static bool
nest_schedule(Nest *X)
{
	const RmModel *M = X->K->M;
	const Dag *d = M->d;
	int nb = X->N.nb, done = nb;
	int *ofs = ar_alloc(X->K->a, sizeof *ofs * ((size_t)nb + 2));
	int *byseg = ar_alloc(X->K->a, sizeof *byseg * ((size_t)X->nrun + 1));

	if ((long)M->n + X->nrun > (long)RM_MAXSTEP(M))
		return false;
	for (int r = 0; r < X->nrun; r++)
		ofs[X->runseg[r] + 1]++;
	for (int k = 0; k <= nb; k++)
		ofs[k + 1] += ofs[k];
	for (int r = 0; r < X->nrun; r++)
		byseg[ofs[X->runseg[r]]++] = X->run[r];
	for (int k = nb; k > 0; k--)
		ofs[k] = ofs[k - 1];
	ofs[0] = 0;
	X->nsteps = 0;
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		while (!is_fwd(M, v) && done > X->seg[v] && X->seg[v] > 0) {
			done--;
			for (int r = ofs[done]; r < ofs[done + 1]; r++)
				X->steps[X->nsteps++] = byseg[r];
		}
		X->steps[X->nsteps++] = v;
	}
	return true;
}

/* The DP's inputs from the chain's costs and the background bg (K->g or
 * K->gown), in units of the reference bound Pref (above the least of
 * K->g, which every segment holds). */
static void
nest_inputs(Nest *X, int64_t Pref, const int64_t *bg)
{
	const Chain *K = X->K;
	RmNest *N = &X->N;
	int nb = N->nb;
	int64_t gfloor = INT64_MAX;
	int *cu = ar_alloc(K->a, sizeof *cu * (size_t)nb);
	int *need = ar_alloc(K->a, sizeof *need * (size_t)nb * (size_t)nb);
	int64_t *fc = ar_alloc(K->a, sizeof *fc * (size_t)nb);
	int64_t *own = ar_alloc(K->a, sizeof *own * (size_t)nb);

	/* pieces with no backward node (the end's) have none */
	for (int k = 1; k <= K->r + 1; k++)
		if (K->g[k] > 0 && K->g[k] < gfloor)
			gfloor = K->g[k];
	if (gfloor == INT64_MAX || gfloor >= Pref)
		gfloor = 0;
	double unit = (double)(Pref - gfloor) / NEST_UNITS;
	if (unit < 1)
		unit = 1;
	for (int a = 0; a < nb; a++) {
		int ka = X->bk[a];
		bool mid = a > 0 && a < nb - 1;
		cu[a] = mid ? (int)ceil((double)K->c[ka] / unit) : 0;
		fc[a] = K->fc[ka];
		own[a] = mid ? K->M->d->node[K->cut[ka]].cost : 0;
		int64_t gmax = 0;
		for (int b = 0; b < nb; b++) {
			int kb = X->bk[b];
			need[a * nb + b] = INT_MAX;
			if (b <= a)
				continue;
			for (int p = X->bk[b - 1] + 1; p <= kb; p++)
				gmax = bg[p] > gmax ? bg[p] : gmax;
			bool bmid = b < nb - 1;
			double v = (double)((bmid ? K->c[kb] - K->sb[kb] : 0) +
			                    K->sw[kb] - K->sw[ka] + gmax - gfloor);
			v = ceil((v > 0 ? v : 0) / unit);
			need[a * nb + b] = v > N->q ? N->q + 1 : (int)v;
		}
	}
	N->cu = cu;
	N->need = need;
	N->fc = fc;
	N->own = own;
}

static void nest_plans(Nest *X, RmPool *pool, double cap, int n);

/* The nested plans: the DP over the chain's boundaries, then its answers
 * from the smallest budget whose recompute estimate is within the cap up,
 * each as a schedule that lv_eval scores. */
static void
chain_nested(Chain *K, RmPool *np, double cap, int64_t Pref)
{
	const RmModel *M = K->M;
	Nest X = {.K = K};
	RmNest *N = &X.N;
	size_t nn = (size_t)M->d->nnode + 1;

	if (K->r < 2 || Pref <= 0)
		return;
	X.bk = ar_alloc(K->a, sizeof *X.bk * (NEST_MAXB + 2));
	N->nb = nest_bounds(&X);
	N->q = NEST_UNITS + NEST_UNITS / 4;
	size_t cells = (size_t)N->nb * (size_t)N->nb * (size_t)(N->q + 1);
	N->f = ar_alloc(K->a, sizeof *N->f * cells);
	N->top = ar_alloc(K->a, sizeof *N->top * (size_t)N->nb * (size_t)(N->q + 1));
	N->lo = ar_alloc(K->a, sizeof *N->lo * ((size_t)N->nb * (size_t)N->nb + (size_t)N->nb));
	X.seg = ar_alloc(K->a, sizeof *X.seg * nn);
	X.mark = ar_alloc(K->a, nn);
	nest_segments(&X);
	X.steps = ar_alloc(K->a, sizeof *X.steps * ((size_t)RM_MAXSTEP(M) + 1));
	/* leaves of any length, then of at most 4, 2 and 1 pieces: where the
	 * model overrates the segment that binds (BERT's head: its
	 * background counts more than lv_eval finds there), the DP is free
	 * to make the other leaves as long as that, and they are the true
	 * peak; short leaves hold less at once whatever the model's error */
	static const int maxleaf[NEST_VARIANTS] = {0, 4, 2, 1};
	nest_inputs(&X, Pref, K->g);
	for (int v = 0; v < NEST_VARIANTS; v++) {
		N->maxleaf = maxleaf[v];
		rm_nest_dp(N);
		nest_plans(&X, &np[v > 0], cap, v == 0 ? NEST_PLANS : NEST_PLANS / 2);
	}
	/* then leaves of any length again under the background less what
	 * each piece's own saved bytes free by then (K->gown): BERT's head is
	 * no longer overrated by its log-softmax, so under the default cap
	 * the DP holds 4 checkpoints at the loss instead of 7 (3.72 -> 3.64
	 * GB). The short leaves under gown found nothing more on the
	 * examples. These plans are trimmed, and budgets below the cap's
	 * tried too (nest_plans): BERT's plan with 3 checkpoints, 1.8% over
	 * the cap as emitted, is 1.5% under it once its head transform runs
	 * once instead of three times (3.62 GB). The plans above stay as
	 * they were, in pools of their own, so no pick gets worse. */
	bool differs = false;
	for (int k = 0; k <= K->r + 1; k++)
		differs |= K->gown[k] != K->g[k];
	if (differs) {
		nest_inputs(&X, Pref, K->gown);
		/* data-parallel steps too: the trimmed plans, found at some ZeRO
		 * stage and not at the next, broke the monotone stages
		 * (tests/zero_monotone.sh: GPT-2 at 8 ranks, 2,095 MB at ZeRO-1,
		 * 2,108 MB at ZeRO-2) until each stage from 2 took the plan of
		 * the stage below as a candidate (driver/analyze.c) */
		X.trims = K->R->eff->nest_trims < NEST_TRIMS ?
		          K->R->eff->nest_trims : NEST_TRIMS;
		X.below = &np[3];
		X.tbuf = ar_alloc(K->a, sizeof *X.tbuf * ((size_t)RM_MAXSTEP(M) + 1));
		X.tdrop = ar_alloc(K->a, (size_t)RM_MAXSTEP(M) + 1);
		N->maxleaf = 0;
		rm_nest_dp(N);
		nest_plans(&X, &np[2], cap, NEST_PLANS);
	}
}

/* Drops, costliest node first, each recompute step of X->steps (a run
 * of a node that ran before) whose removal leaves the schedule valid
 * with its peak no higher: its readers then read the instance before,
 * kept alive instead. A leaf's run is emitted whole, so a node that a
 * later leaf or split runs again (BERT's head transform: three runs of
 * a 19 GFLOP matmul) is often still there, away from the peak. X->trims
 * tries at most (NEST_TRIMS or fewer), each one evaluation. Returns the
 * evaluation of the result: ev when there is nothing to try, else made
 * again (the tries overwrite the scorer's). */
static const MemEval *
nest_trim(Nest *X, const MemEval *ev)
{
	Chain *K = X->K;
	const Dag *d = K->M->d;
	int n = X->nsteps, nc = 0, *cand = ar_alloc(K->a, sizeof *cand * ((size_t)n + 1));
	int64_t peak = ev->peak;
	bool dropped = false;

	for (int x = 0; x < n; x++) {
		int v = X->steps[x];
		X->tdrop[x] = false;
		if (X->mark[v])
			cand[nc++] = x;
		X->mark[v] = true;
	}
	for (int x = 0; x < n; x++)
		X->mark[X->steps[x]] = false;
	/* the costliest X->trims, costliest first (insertion: few kept) */
	int nk = 0;
	for (int c = 0; c < nc; c++) {
		int64_t w = d->node[X->steps[cand[c]]].cost;
		if (w <= 0 || (nk == X->trims &&
		    w <= d->node[X->steps[cand[nk - 1]]].cost))
			continue;
		int i = nk < X->trims ? nk++ : X->trims - 1, x = cand[c];
		for (; i > 0 && d->node[X->steps[cand[i - 1]]].cost < w; i--)
			cand[i] = cand[i - 1];
		cand[i] = x;
	}
	for (int c = 0; c < nk; c++) {
		int m = 0;
		for (int x = 0; x < n; x++)
			if (!X->tdrop[x] && x != cand[c])
				X->tbuf[m++] = X->steps[x];
		const MemEval *t = rm_eval_steps(K->S, X->tbuf, m);
		if (t && t->peak <= peak) {
			X->tdrop[cand[c]] = true;
			dropped = true;
		}
	}
	if (nk == 0)
		return ev;
	if (!dropped)
		return rm_eval_steps(K->S, X->steps, n);
	int m = 0;
	for (int x = 0; x < n; x++)
		if (!X->tdrop[x])
			X->steps[m++] = X->steps[x];
	X->nsteps = m;
	return rm_eval_steps(K->S, X->steps, m);
}

/* The DP's answers from the smallest budget whose recompute estimate is
 * within the cap up, the first n of a fixed ladder above it (the units'
 * rounding, then wider), each as a schedule in the pool unless it is the
 * last one again. With X->trims, each is trimmed (nest_trim), and the
 * ladder goes below that budget too, as far, into X->below: the
 * estimate counts every run whole, so a plan the DP puts over the cap
 * may fit once trimmed (pick holds the cap). */
static void
nest_plans(Nest *X, RmPool *pool, double cap, int n)
{
	const RmNest *N = &X->N;
	Chain *K = X->K;
	int q0 = 0;
	static const int step[NEST_PLANS] = {0, 1, 2, 3, 5, 8, 12, 18};

	while (q0 <= N->q && (N->top[q0] == RM_NEST_NONE ||
	       (cap >= 0 && (double)N->top[q0] > cap)))
		q0++;
	for (int t = 0; t < (X->trims > 0 ? 2 * n - 1 : n); t++) {
		int q = t < n ? q0 + step[t] : q0 - step[t - n + 1];
		if (q < 0 || q > N->q || N->top[q] == RM_NEST_NONE)
			continue;
		X->nrun = 0;
		nest_emit(X, 0, N->nb - 1, q, true);
		if (!nest_schedule(X))
			continue;
		uint64_t h = 1469598103934665603ULL;
		bool seen = false;
		for (int x = 0; x < X->nsteps; x++)
			h = (h ^ (uint64_t)X->steps[x]) * 1099511628211ULL;
		for (int x = 0; x < X->nhash; x++)
			seen |= X->hash[x] == h;
		if (seen || X->nhash == NEST_HASHES)
			continue;
		X->hash[X->nhash++] = h;
		const MemEval *ev = rm_eval_steps(K->S, X->steps, X->nsteps);
		if (ev && X->trims > 0)
			ev = nest_trim(X, ev);
		rm_pool_add_sched(t < n || !X->below ? pool : X->below,
		                  X->steps, X->nsteps, ev);
	}
}

/* The chain of the graph S scores, its cuts coarsened past 1,023
 * (chain_coarsen), and in *P0 the smallest bound the DP meets (-1: none);
 * false (a freed) when there is no chain. */
static bool
chain_ready(Chain *K, RmScorer *S, RmRecipe *R, Arena *a, int64_t *P0)
{
	if (!chain_init(K, S, R, a))
		return false;
	chain_coarsen(K);
	chain_limits(K);
	*P0 = chain_min_bound(K, K->top);
	return true;
}

void
rm_chain_plans(RmScorer *S, RmRecipe *R, RmPool *pool, double cap)
{
	const RmEffort *e = R->eff;
	Arena a;
	Chain K = {0};
	int64_t P0;

	if (!chain_ready(&K, S, R, &a, &P0))
		return;
	int64_t top = K.top;
	Last l = last_init(&K);
	/* finely just above the smallest bound (where the model's error
	 * matters), then geometrically up to one segment: the cheaper plans
	 * that --budget may want, while the DP's work lasts (a larger bound
	 * scans longer segments) */
	for (int i = 0; P0 >= 0 && i < e->chain_fine; i++)
		chain_add(&K, pool, ck_sat_add(P0, P0 / 500 * i), cap, &l);
	double ratio = P0 > 0 ? pow((double)top / (double)P0,
	                            1.0 / (e->chain_coarse + 1)) : 1;
	double P = (double)P0;
	int64_t Pi;
	for (int i = 0; P0 > 0 && i < e->chain_coarse && K.work < e->chain_work; i++) {
		P *= ratio;
		if (!ck_from_double(P, 0, INT64_MAX, &Pi))
			break;          /* top near 2^63 (a saturated sum) */
		chain_add(&K, pool, Pi, cap, &l);
	}
	ar_free(&a);
}

void
rm_chain_nested_plans(RmScorer *S, RmRecipe *R, RmPool np[RM_NEST_POOLS],
                      double cap)
{
	Arena a;
	Chain K = {0};
	int64_t P0;

	if (!chain_ready(&K, S, R, &a, &P0))
		return;
	/* the single-level DP's smallest bound: the units' reference */
	if (P0 > 0)
		chain_nested(&K, np, cap, P0);
	ar_free(&a);
}

/* ---------------------------------------------------------------- --budget */
/* Under a budget the question is the other way round: the least recompute
 * whose peak stays under a bound. The DP above keeps the fewest bytes,
 * which at a loose bound still drops every segment's inside and
 * recomputes it (0.74x the forward on a 1000-layer MLP at any budget,
 * where dropping every other layer needs 0.08-0.38x). So a second DP over
 * the same boundaries and costs minimizes the recompute estimate: a
 * segment (i, k] recomputes its forward nodes but cut k, and a piece may
 * also be kept whole (its inside held, no recompute, all its saved bytes
 * kept), which is what per-block checkpointing with some blocks left
 * unwrapped does. The state is the kept bytes as well as the boundary, so
 * each boundary holds a Pareto front of (kept bytes, recompute) labels,
 * the best per bucket of kept bytes (NBUCKET buckets of the bound). */
enum { NBUCKET = 32, BUDGET_RUNGS = 16 };

typedef struct Label {
	int64_t kb;             /* checkpoint bytes kept up to the boundary */
	int64_t rc;             /* recompute estimate so far */
	int from;               /* the boundary before, -1 at the start */
	int fl;                 /* its label (index in from's front) */
	bool whole;             /* the piece before this boundary kept whole */
} Label;

typedef struct Front {
	Label *lab;             /* [(r + 2) * NBUCKET]: boundary k's front at k * NBUCKET */
	int *n;                 /* [r + 2] labels of each front, kb ascending, rc descending */
	int64_t *inner;         /* [r + 2] forward cost of piece k but its cut */
	int64_t *cb;            /* [r + 2] bytes a kept cut keeps into backward */
	int *lastsaved;         /* [r + 2] the last piece <= k whose nodes make a
	                           tensor backward reads, 0: none */
	bool *whole;            /* [r + 2] chain_keep_rec: pieces kept whole */
	long work, maxwork;     /* labels tried, and the cap on them */
} Front;

/* What keeping cut k costs from its forward to its backward: the bytes of
 * its outputs that backward reads (a view's base once). K->c also counts
 * outputs that only the forward reads, which a kept cut frees at -O0's
 * time anyway (the matmul before a relu): the least-bytes DP was tuned
 * with that, this one needs the bytes that stay. */
static int64_t
cut_backward_bytes(const Chain *K, int k)
{
	const Dag *d = K->M->d;
	const DagNode *n = &d->node[K->cut[k]];
	int64_t b = 0;

	for (int j = 0; j < n->nout; j++) {
		int t = n->out[j], rt = dag_root(d, t);
		bool seen = false;
		for (int q = 0; q < j; q++)
			seen |= dag_root(d, n->out[q]) == rt;
		if (rt >= 0 && !seen && K->M->longgap[t] >= 0)
			b += d->t[rt].bytes;
	}
	return b;
}

/* Offers (kb, rc) to the bucket table tab of bound P. */
static void
offer(Label *tab, int64_t P, Label x)
{
	int b = (int)((double)x.kb / ((double)P + 1) * NBUCKET);
	Label *t = &tab[b < NBUCKET ? b : NBUCKET - 1];

	if (t->from == -2 || x.rc < t->rc || (x.rc == t->rc && x.kb < t->kb))
		*t = x;
}

/* The bucket table as boundary k's front: the labels no other beats on
 * both kept bytes and recompute, kb ascending. */
static void
front_set(Front *F, int k, const Label *tab)
{
	Label *out = &F->lab[(size_t)k * NBUCKET];
	int n = 0;

	for (int b = 0; b < NBUCKET; b++) {
		if (tab[b].from == -2)
			continue;
		while (n && out[n - 1].kb >= tab[b].kb && out[n - 1].rc >= tab[b].rc)
			n--;
		if (!n || tab[b].rc < out[n - 1].rc)
			out[n++] = tab[b];
	}
	F->n[k] = n;
}

/* The recompute-minimizing DP for bound P; true when the end is reached. */
static bool
chain_dp_rec(Chain *K, Front *F, int64_t P)
{
	int end = K->r + 1, maxlen = 4 * (int)sqrt((double)K->r) + 16;
	Label tab[NBUCKET];

	F->lab[0] = (Label){0, 0, -1, 0, false};
	F->n[0] = 1;
	for (int k = 1; k <= end; k++) {
		int64_t gmax = 0, fixed = F->cb[k] - K->sb[k];
		bool seen = false;      /* the boundary before k is behind */
		for (int b = 0; b < NBUCKET; b++)
			tab[b].from = -2;
		/* a cut whose outputs backward never reads checkpoints nothing:
		 * recompute cannot start from it */
		if (k <= K->r && F->cb[k] == 0) {
			F->n[k] = 0;
			continue;
		}
		for (int i = k - 1; i >= 0 && i >= k - maxlen; i--) {
			if (K->g[i + 1] > gmax)
				gmax = K->g[i + 1];
			int64_t need = fixed + K->sw[k] - K->sw[i] + gmax;
			if (need > P)
				break;
			/* what backward reads from pieces i+1..k-1 is recomputed, with
			 * every node before it in the segment (a chain's ancestors);
			 * the nodes after the last such piece are not needed */
			int q = F->lastsaved[k - 1];
			int64_t rec = (q > i ? K->fc[q] - K->fc[i] : 0) + F->inner[k];
			const Label *src = &F->lab[(size_t)i * NBUCKET];
			F->work += F->n[i];
			/* the pieces since the boundary before kept whole: no
			 * recompute, all they save kept (a block left unwrapped) */
			bool whole = !seen;
			seen |= i == 0 || F->cb[i] > 0;
			whole &= seen;
			for (int j = 0; j < F->n[i] && src[j].kb + need <= P; j++) {
				offer(tab, P, (Label){src[j].kb + F->cb[k], src[j].rc + rec, i, j, false});
				if (whole)
					offer(tab, P, (Label){src[j].kb + fixed + K->sw[k] - K->sw[i],
					                      src[j].rc, i, j, true});
			}
		}
		front_set(F, k, tab);
		if (F->work > F->maxwork)
			return false;
	}
	return F->n[end] > 0;
}

/* The least-recompute label's plan: its cuts kept, whole pieces held. */
static void
chain_keep_rec(Chain *K, const Front *F, bool *keep)
{
	const Dag *d = K->M->d;
	int end = K->r + 1, k = end, l = 0;
	bool *whole = F->whole;

	for (int j = 1; j < F->n[end]; j++)
		if (F->lab[(size_t)end * NBUCKET + j].rc < F->lab[(size_t)end * NBUCKET + l].rc)
			l = j;
	memset(keep, 0, (size_t)d->nnode + 1);
	memset(whole, 0, (size_t)K->r + 2);
	while (k > 0) {
		const Label *x = &F->lab[(size_t)k * NBUCKET + l];
		if (k <= K->r)
			keep[K->cut[k]] = true;
		for (int p = x->from + 1; p <= k; p++)
			whole[p] = x->whole;
		k = x->from;
		l = x->fl;
	}
	for (int v = 0; v < d->nnode; v++)
		K->held[v] = K->piece[v] > 0 && whole[K->piece[v]];
}

void
rm_chain_budget_plans(RmScorer *S, RmRecipe *R, RmPool *pool, int64_t budget)
{
	Arena a;
	Chain K = {0};

	if (!chain_init(&K, S, R, &a))
		return;
	Last l = last_init(&K);
	Front F = {.lab = ar_alloc(&a, sizeof *F.lab * ((size_t)K.r + 2) * NBUCKET),
	           .n = ar_alloc(&a, sizeof *F.n * ((size_t)K.r + 2)),
	           .inner = ar_alloc(&a, sizeof *F.inner * ((size_t)K.r + 2)),
	           .cb = ar_alloc(&a, sizeof *F.cb * ((size_t)K.r + 2)),
	           .lastsaved = ar_alloc(&a, sizeof *F.lastsaved * ((size_t)K.r + 2)),
	           .whole = ar_alloc(&a, (size_t)K.r + 2),
	           .maxwork = R->eff->chain_budget_work};
	for (int k = 1; k <= K.r + 1; k++) {
		bool saves = K.sw[k] > K.sw[k - 1];
		F.cb[k] = k <= K.r ? cut_backward_bytes(&K, k) : 0;
		/* the inside of piece k is recomputed when it makes what backward
		 * reads (beside the cut's own outputs) */
		F.inner[k] = K.sw[k] - K.sw[k - 1] > K.sb[k] ?
		             K.fc[k] - K.fc[k - 1] - (k <= K.r ? K.M->d->node[K.cut[k]].cost : 0) : 0;
		F.lastsaved[k] = saves ? k : F.lastsaved[k - 1];
	}
	/* bounds on a fixed ladder (the multiples of 1% of the -O0 peak):
	 * the BUDGET_RUNGS highest up to just above the budget (the model's
	 * peak is an estimate), while the work lasts. A lower bound's plan
	 * recomputes no less in the model, so the rungs nearest the budget
	 * are the ones that can win; below the smallest bound the DP meets,
	 * a rung fails at once. */
	int64_t step = K.base_peak / 100 > 0 ? K.base_peak / 100 : 1;
	int64_t limit = ck_sat_add(budget, budget / 50);
	for (int64_t j = limit / step, j0 = j; j > 0 && j > j0 - BUDGET_RUNGS &&
	     F.work <= F.maxwork; j--) {
		if (!chain_dp_rec(&K, &F, j * step))
			continue;
		chain_keep_rec(&K, &F, l.keep);
		last_add(&K, pool, &l);
	}
	ar_free(&a);
}
