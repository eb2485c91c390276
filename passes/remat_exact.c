/* passes/remat_exact.c -- rm_plan_exact: the true optimum under the memory
 * model, by exhaustive search, for small graphs (tests and --exact).
 *
 * Search space: every schedule in which once nodes keep their base_order
 * relative order and recomputable nodes run any number of times at any
 * point after their inputs exist (first computations in any topological
 * order). Two dominated shapes are left out: a recomputation none of whose
 * outputs is used before it dies, and running a node again while a view
 * still holds the previous copy of one of its outputs (the old copy could
 * have served instead).
 *
 * A search state is (C, R): the nodes that ran at least once and the
 * tensors whose current instance is resident. An instance dies right after
 * its last use, so after each step the search decides, for each tensor that
 * step touched, whether it stays resident (a later step will use it) or is
 * dropped; tensors no future step can use are dropped at once, tensors a
 * pending step must read and nothing can make again are kept, a view keeps
 * its root resident. The memory of a step is then persistent + owned bytes
 * of R + what the step makes + its temporaries, exactly what the liveness
 * rule gives for the schedule the path spells.
 *
 * feasible(P, rem) is a depth-first search over states with every step's
 * memory <= P and recompute cost <= rem, memoizing failed states with the
 * largest budget they failed with (a failure that depended on cutting a
 * cycle back into a state still on the stack is not memoized). Failures
 * also report the smallest step memory above P they met, which is the next
 * peak worth trying. Without a budget: bisection on P for the smallest peak
 * with recompute <= max_recompute x forward_cost, then bisection on the
 * recompute budget at that peak. With a budget: bisection on the recompute
 * budget at P = budget; if nothing fits, the smallest peak with unlimited
 * recompute. The work is bounded (EX_MAX_STATES); beyond it, or for graphs
 * over 64 nodes or 128 tensors, PlanResult.error says so. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "dag.h"

enum {
	EX_MAX_NODES = 64,
	EX_MAX_TENSORS = 128,
	EX_MAX_STATES = 1 << 20,        /* memo entries per probe */
	EX_MAX_FREE = 12,               /* free drop choices after one step */
};
static const long long EX_MAX_EXPANSIONS = 20000000;

#define INF INT64_MAX

typedef struct Set {
	uint64_t w[2];
} Set;

static bool
has(const Set *s, int t)
{
	return s->w[t >> 6] >> (t & 63) & 1;
}

static void
put(Set *s, int t)
{
	s->w[t >> 6] |= (uint64_t)1 << (t & 63);
}

static void
del(Set *s, int t)
{
	s->w[t >> 6] &= ~((uint64_t)1 << (t & 63));
}

static uint64_t
bit(int v)
{
	return (uint64_t)1 << v;
}

/* A memo entry: a state, the largest budget it failed with (-1: none
 * yet), and its depth while it is on the DFS stack (-1 otherwise). */
typedef struct Memo {
	uint64_t c;
	Set r;
	int64_t failrem;
	int depth;
	bool used;
} Memo;

typedef struct Ex {
	const Dag *d;
	Arena *a;
	int n, nt;
	uint64_t all;           /* every node */
	uint64_t recomputable;  /* !once nodes */
	uint64_t *users;        /* [nt] nodes that use t (read, view, add) */
	uint64_t *readers;      /* [nt] nodes that read t as an input */
	int *producer;          /* [nt] the node with t in out, or -1 */
	uint64_t *makers;       /* [nt] nodes that produce t (out or acc) */
	int *once_seq;          /* once nodes in base order */
	int nonce;
	int *once_pos;          /* [n] position in once_seq, or -1 */
	int64_t persistent;
	int *root;              /* [nt] root tensor of t's current instance */
	/* the probe */
	int64_t P;
	int64_t next_p;         /* smallest step memory above P met */
	Memo *memo;
	size_t memo_cap, memo_n;
	long long expansions;
	bool gave_up;
	int *path, npath, maxpath;
	int *best, nbest;       /* the schedule found */
} Ex;

/* ---------------------------------------------------------------- memo */

static uint64_t
state_hash(uint64_t c, const Set *r)
{
	uint64_t h = c * 0x9e3779b97f4a7c15ull;

	h ^= r->w[0] + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
	h ^= r->w[1] + 0x94d049bb133111ebull + (h << 6) + (h >> 2);
	return h ^ (h >> 29);
}

/* The entry for (c, r), made if new; NULL when the table is full. */
static Memo *
memo_get(Ex *x, uint64_t c, const Set *r)
{
	size_t i = state_hash(c, r) & (x->memo_cap - 1);

	for (;; i = (i + 1) & (x->memo_cap - 1)) {
		Memo *m = &x->memo[i];
		if (!m->used) {
			if (x->memo_n * 2 >= x->memo_cap)
				return NULL;
			m->used = true;
			m->c = c;
			m->r = *r;
			m->failrem = -1;
			m->depth = -1;
			x->memo_n++;
			return m;
		}
		if (m->c == c && m->r.w[0] == r->w[0] && m->r.w[1] == r->w[1])
			return m;
	}
}

static void
memo_reset(Ex *x)
{
	memset(x->memo, 0, sizeof *x->memo * x->memo_cap);
	x->memo_n = 0;
}

/* Doubles the table, rehashing every entry (no entry pointer survives). */
static bool
memo_grow(Ex *x)
{
	Memo *old = x->memo;
	size_t oldcap = x->memo_cap;

	if (oldcap >= EX_MAX_STATES)
		return false;
	x->memo_cap = oldcap * 2;
	x->memo = xcalloc(x->memo_cap, sizeof *x->memo);
	x->memo_n = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i].used) {
			Memo *m = memo_get(x, old[i].c, &old[i].r);
			m->failrem = old[i].failrem;
			m->depth = old[i].depth;
		}
	free(old);
	return true;
}

/* memo_get, growing the table when needed; NULL when it is at its limit. */
static Memo *
memo_find(Ex *x, uint64_t c, const Set *r)
{
	Memo *m = memo_get(x, c, r);

	while (!m && memo_grow(x))
		m = memo_get(x, c, r);
	return m;
}

/* ---------------------------------------------------------------- moves */

/* Nodes that may still run: those never run, and recomputable ones whose
 * outputs such a node uses, to a fixed point. */
static uint64_t
may_run(const Ex *x, uint64_t c)
{
	uint64_t N = x->all & ~c;
	bool grew = true;

	while (grew) {
		grew = false;
		for (int v = 0; v < x->n; v++) {
			const DagNode *nd = &x->d->node[v];
			if ((N & bit(v)) || !(x->recomputable & bit(v)))
				continue;
			for (int j = 0; j < nd->nout; j++)
				if (x->users[nd->out[j]] & N) {
					N |= bit(v);
					grew = true;
					break;
				}
		}
	}
	return N;
}

/* Bytes t's current instance owns. */
static int64_t
owned(const Ex *x, int t)
{
	const DagTensor *dt = &x->d->t[t];

	return dt->persistent_view || x->root[t] != t ? 0 : dt->bytes;
}

static int64_t
resident_bytes(const Ex *x, const Set *R)
{
	int64_t b = x->persistent;

	for (int t = 0; t < x->nt; t++)
		if (has(R, t))
			b += owned(x, t);
	return b;
}

static bool
produced_before(const Ex *x, int t, uint64_t c)
{
	return x->d->t[t].from_start || (x->makers[t] & c);
}

/* Can node v run now? Its inputs, view bases and existing gradients must be
 * resident, its outputs not (their last copy is dead). */
static bool
can_run(const Ex *x, int v, uint64_t c, const Set *R, uint64_t N)
{
	const DagNode *nd = &x->d->node[v];
	bool again = c & bit(v), useful = !again;

	if (nd->once && (again || x->once_seq[__builtin_popcountll(c & ~x->recomputable)] != v))
		return false;
	for (int j = 0; j < nd->nin; j++)
		if (!has(R, nd->in[j]))
			return false;
	for (int j = 0; j < nd->nout; j++) {
		int t = nd->out[j], src = x->d->t[t].view_src;
		if (has(R, t) || (src >= 0 && !x->d->t[t].persistent_view && !has(R, src)))
			return false;
		if (x->users[t] & N)
			useful = true;
	}
	for (int j = 0; j < nd->nacc; j++) {
		int t = nd->acc[j].tensor, src = nd->acc[j].view_src;
		if (produced_before(x, t, c)) {
			if (!has(R, t) || (x->readers[t] & c))
				return false;
		} else if (src >= 0 && !x->d->t[t].persistent_view && !has(R, src))
			return false;
	}
	return useful;
}

/* Memory while v runs from resident set R holding rbytes. */
static int64_t
step_memory(const Ex *x, int v, uint64_t c, int64_t rbytes)
{
	const DagNode *nd = &x->d->node[v];
	int64_t m = rbytes + nd->workspace;

	for (int j = 0; j < nd->nout; j++) {
		const DagTensor *t = &x->d->t[nd->out[j]];
		if (t->persistent_view || t->view_src < 0)
			m += t->persistent_view ? 0 : t->bytes;
	}
	for (int j = 0; j < nd->nacc; j++) {
		const DagTensor *t = &x->d->t[nd->acc[j].tensor];
		if (produced_before(x, nd->acc[j].tensor, c))
			m += t->bytes;
		else if (t->persistent_view || nd->acc[j].view_src < 0)
			m += t->persistent_view ? 0 : t->bytes;
	}
	return m;
}

/* What running v changes: resident outputs and their roots. old[] keeps
 * the previous roots for undo. Returns how many were saved. */
static int
apply(Ex *x, int v, uint64_t c, Set *R, int *old)
{
	const DagNode *nd = &x->d->node[v];
	int k = 0;

	for (int j = 0; j < nd->nout; j++) {
		int t = nd->out[j], src = x->d->t[t].view_src;
		old[k++] = x->root[t];
		x->root[t] = src >= 0 && !x->d->t[t].persistent_view ? x->root[src] : t;
		put(R, t);
	}
	for (int j = 0; j < nd->nacc; j++) {
		int t = nd->acc[j].tensor, src = nd->acc[j].view_src;
		old[k++] = x->root[t];
		if (produced_before(x, t, c))
			continue;
		x->root[t] = src >= 0 && !x->d->t[t].persistent_view ? x->root[src] : t;
		put(R, t);
	}
	return k;
}

static void
undo(Ex *x, int v, const int *old)
{
	const DagNode *nd = &x->d->node[v];
	int k = 0;

	for (int j = 0; j < nd->nout; j++)
		x->root[nd->out[j]] = old[k++];
	for (int j = 0; j < nd->nacc; j++)
		x->root[nd->acc[j].tensor] = old[k++];
}

/* ---------------------------------------------------------------- search */

static bool dfs(Ex *x, uint64_t c, const Set *R, int64_t rem, int depth, int *low);

/* The tensors step v touched (read, made, added to, view bases) and their
 * roots: the only ones whose last use can be this step. */
static int
touched(const Ex *x, int v, int *cand)
{
	const DagNode *nd = &x->d->node[v];
	int k = 0, n0;

	for (int j = 0; j < nd->nin; j++)
		cand[k++] = nd->in[j];
	for (int j = 0; j < nd->nout; j++) {
		cand[k++] = nd->out[j];
		if (x->d->t[nd->out[j]].view_src >= 0)
			cand[k++] = x->d->t[nd->out[j]].view_src;
	}
	for (int j = 0; j < nd->nacc; j++) {
		cand[k++] = nd->acc[j].tensor;
		if (nd->acc[j].view_src >= 0)
			cand[k++] = nd->acc[j].view_src;
	}
	n0 = k;
	for (int j = 0; j < n0; j++)
		cand[k++] = x->root[cand[j]];
	/* dedupe */
	n0 = 0;
	for (int j = 0; j < k; j++) {
		int i = 0;
		while (i < n0 && cand[i] != cand[j])
			i++;
		if (i == n0)
			cand[n0++] = cand[j];
	}
	return n0;
}

/* After v ran (state c, R): sort the touched resident tensors into forced
 * drops and free choices. Returns the number of free ones, or -1 when
 * there are too many to enumerate. */
static int
classify(const Ex *x, int v, uint64_t c, const Set *R, Set *forced, int *freet)
{
	int cand[4 * EX_MAX_TENSORS], k = touched(x, v, cand), nfree = 0;
	uint64_t N = may_run(x, c);

	memset(forced, 0, sizeof *forced);
	for (int j = 0; j < k; j++) {
		int t = cand[j], p = x->producer[t];
		bool again = p >= 0 && !x->d->node[p].once;
		if (!has(R, t) || x->d->t[t].to_end)
			continue;
		if (!(x->users[t] & N))
			put(forced, t);
		else if (again || !(x->users[t] & ~c))
			freet[nfree++] = t;
	}
	return nfree > EX_MAX_FREE ? -1 : nfree;
}

/* Drops forced and the free tensors chosen by mask from R. A root a
 * resident view still aliases stays: if it was a free choice, the mask is
 * redundant (false). */
static bool
drop(const Ex *x, Set *R, const Set *forced, const int *freet, int nfree,
     unsigned mask)
{
	Set pinned = {{0, 0}};

	for (int j = 0; j < nfree; j++)
		if (mask >> j & 1)
			del(R, freet[j]);
	for (int w = 0; w < 2; w++)
		R->w[w] &= ~forced->w[w];
	for (int t = 0; t < x->nt; t++)
		if (has(R, t) && x->root[t] != t)
			put(&pinned, x->root[t]);
	for (int j = 0; j < nfree; j++)
		if ((mask >> j & 1) && has(&pinned, freet[j]))
			return false;
	for (int w = 0; w < 2; w++)
		R->w[w] |= forced->w[w] & pinned.w[w];
	return true;
}

/* Runs v from (c, R) and tries every way of dropping what it touched. */
static bool
step(Ex *x, int v, uint64_t c, const Set *R, int64_t rem, int depth, int *low)
{
	const DagNode *nd = &x->d->node[v];
	bool again = c & bit(v), ok = false;
	int old[2 * EX_MAX_TENSORS], freet[4 * EX_MAX_TENSORS], nfree;
	uint64_t c2 = c | bit(v);
	Set R1 = *R, forced;

	apply(x, v, c, &R1, old);
	nfree = classify(x, v, c2, &R1, &forced, freet);
	if (nfree < 0)
		x->gave_up = true;
	x->path[x->npath++] = v;
	for (unsigned mask = nfree < 0 ? 0 : (1u << nfree); !ok && mask-- > 0;) {
		Set R2 = R1;
		bool kept = !again;
		if (!drop(x, &R2, &forced, freet, nfree, mask))
			continue;
		for (int j = 0; j < nd->nout; j++)
			kept |= has(&R2, nd->out[j]);
		if (kept)
			ok = dfs(x, c2, &R2, again && rem != INF ? rem - nd->cost : rem,
			         depth + 1, low);
	}
	if (!ok)
		x->npath--;
	undo(x, v, old);
	return ok;
}

/* Tries every node that can run next: the next once node and first
 * computations before recomputations. */
static bool
moves(Ex *x, uint64_t c, const Set *R, int64_t rem, int depth, int *low)
{
	uint64_t N = may_run(x, c);
	int64_t rbytes = resident_bytes(x, R);

	for (int pass = 0; pass < 2; pass++)
		for (int v = 0; v < x->n; v++) {
			int64_t m;
			if (((c & bit(v)) != 0) != (pass == 1) || !can_run(x, v, c, R, N))
				continue;
			if (pass == 1 && rem != INF && x->d->node[v].cost > rem)
				continue;
			if ((m = step_memory(x, v, c, rbytes)) > x->P) {
				if (m < x->next_p)
					x->next_p = m;
				continue;
			}
			if (step(x, v, c, R, rem, depth, low))
				return true;
			if (x->gave_up)
				return false;
		}
	return false;
}

/* Is there a way from (c, R) to every node run, within P and rem? low
 * gets the smallest stack depth of a state this search cut a cycle at. */
static bool
dfs(Ex *x, uint64_t c, const Set *R, int64_t rem, int depth, int *low)
{
	Memo *m;
	int mylow = depth + 1;
	bool ok;

	if (c == x->all) {
		memcpy(x->best, x->path, sizeof *x->best * (size_t)x->npath);
		x->nbest = x->npath;
		return true;
	}
	if (x->gave_up || x->npath >= x->maxpath || ++x->expansions > EX_MAX_EXPANSIONS ||
	    !(m = memo_find(x, c, R))) {
		x->gave_up = true;
		return false;
	}
	if (m->depth >= 0) {
		if (m->depth < *low)
			*low = m->depth;
		return false;
	}
	if (m->failrem >= rem)
		return false;
	m->depth = depth;
	ok = moves(x, c, R, rem, depth, &mylow);
	if (x->gave_up)
		return false;
	m = memo_find(x, c, R);
	m->depth = -1;
	if (!ok && mylow >= depth && rem > m->failrem)
		m->failrem = rem;
	if (mylow < *low)
		*low = mylow;
	return ok;
}

/* ---------------------------------------------------------------- drivers */

/* A schedule of the search, as found by the independent evaluator. */
typedef struct Found {
	Schedule s;
	int64_t peak, cost;
} Found;

/* Is there a schedule with peak <= P and recompute <= rem? 1 yes (into
 * *f), 0 no (x->next_p: the next peak worth trying), -1 gave up. */
static int
probe(Ex *x, int64_t P, int64_t rem, Found *f)
{
	Set R = {{0, 0}};
	int low = 0;
	MemEval ev;

	if (P != x->P) {
		memo_reset(x);
		x->P = P;
	}
	x->next_p = INF;
	x->npath = 0;
	for (int t = 0; t < x->nt; t++) {
		x->root[t] = t;
		if (x->d->t[t].from_start && (x->users[t] || x->d->t[t].to_end))
			put(&R, t);
	}
	if (!dfs(x, 0, &R, rem, 0, &low))
		return x->gave_up ? -1 : 0;
	f->s.n = x->nbest;
	f->s.step = ar_alloc(x->a, sizeof *f->s.step * (size_t)(x->nbest + 1));
	memcpy(f->s.step, x->best, sizeof *f->s.step * (size_t)x->nbest);
	vf_eval(x->d, &f->s, &ev, x->a);
	ir_assert(ev.valid && ev.peak <= P && (rem == INF || ev.recompute_cost <= rem));
	f->peak = ev.peak;
	f->cost = ev.recompute_cost;
	return 1;
}

/* The smallest peak in [lo, f->peak] with recompute <= rem, by bisection;
 * f holds a schedule achieving its peak (or none: f->peak INF). */
static int
min_peak(Ex *x, int64_t lo, int64_t rem, Found *f)
{
	while (lo < f->peak) {
		int64_t mid = lo + (f->peak - lo) / 2;
		Found g;
		int r = probe(x, mid, rem, &g);
		if (r < 0)
			return -1;
		if (r)
			*f = g;
		else
			lo = x->next_p > mid + 1 ? x->next_p : mid + 1;
	}
	return 0;
}

/* The smallest recompute cost with peak <= P, f holding a schedule within
 * P; bisection on the cost budget. */
static int
min_cost(Ex *x, int64_t P, Found *f)
{
	int64_t lo = 0;

	while (lo < f->cost) {
		int64_t mid = lo + (f->cost - lo) / 2;
		Found g;
		int r = probe(x, P, mid, &g);
		if (r < 0)
			return -1;
		if (r)
			*f = g;
		else
			lo = mid + 1;
	}
	return 0;
}

/* A peak no schedule beats: every node needs its inputs and what it makes
 * (views and gradients that may be views counted as 0). */
static int64_t
static_lower_bound(const Ex *x)
{
	const Dag *d = x->d;
	bool *maybe_view = ar_alloc(x->a, sizeof *maybe_view * (size_t)(d->nt + 1));
	int64_t best = x->persistent;

	for (int v = 0; v < d->nnode; v++)
		for (int j = 0; j < d->node[v].nacc; j++)
			if (d->node[v].acc[j].view_src >= 0)
				maybe_view[d->node[v].acc[j].tensor] = true;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *nd = &d->node[v];
		Set seen = {{0, 0}};
		int64_t m = x->persistent + nd->workspace;
		for (int j = 0; j < nd->nin + nd->nout; j++) {
			int t = j < nd->nin ? nd->in[j] : nd->out[j - nd->nin];
			const DagTensor *dt = &d->t[t];
			if (has(&seen, t) || dt->view_src >= 0 || dt->persistent_view || maybe_view[t])
				continue;
			put(&seen, t);
			m += dt->bytes;
		}
		if (m > best)
			best = m;
	}
	return best;
}

/* ---------------------------------------------------------------- setup */

/* Why the search cannot take d, or NULL. */
static const char *
unsupported(const Dag *d, Arena *a)
{
	if (d->nnode > EX_MAX_NODES || d->nt > EX_MAX_TENSORS)
		return ar_printf(a, "graph too large for the exact search (%d nodes, %d"
		                 " tensors; at most %d and %d)", d->nnode, d->nt,
		                 EX_MAX_NODES, EX_MAX_TENSORS);
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *nd = &d->node[v];
		if (nd->nacc && !nd->once)
			return ar_printf(a, "node '%s' adds to a gradient but may be"
			                 " recomputed; the exact search needs such nodes once-only",
			                 nd->name);
		if (nd->nin + 2 * nd->nout + 2 * nd->nacc > 2 * EX_MAX_TENSORS)
			return ar_printf(a, "node '%s' touches too many tensors", nd->name);
	}
	return NULL;
}

/* Fills the tables; NULL or why the graph is not supported. */
static const char *
ex_init(Ex *x, const Dag *d, Arena *a)
{
	const char *why = unsupported(d, a);

	memset(x, 0, sizeof *x);
	if (why)
		return why;
	x->d = d;
	x->a = a;
	x->n = d->nnode;
	x->nt = d->nt;
	x->all = x->n == 64 ? ~(uint64_t)0 : bit(x->n) - 1;
	x->users = ar_alloc(a, sizeof *x->users * (size_t)(x->nt + 1));
	x->readers = ar_alloc(a, sizeof *x->readers * (size_t)(x->nt + 1));
	x->makers = ar_alloc(a, sizeof *x->makers * (size_t)(x->nt + 1));
	x->producer = ar_alloc(a, sizeof *x->producer * (size_t)(x->nt + 1));
	x->root = ar_alloc(a, sizeof *x->root * (size_t)(x->nt + 1));
	x->once_seq = ar_alloc(a, sizeof *x->once_seq * (size_t)(x->n + 1));
	for (int t = 0; t < x->nt; t++)
		x->producer[t] = -1;
	for (int c = 0; c < CAT_COUNT; c++)
		x->persistent += d->persistent[c];
	for (int v = 0; v < x->n; v++) {
		const DagNode *nd = &d->node[v];
		if (!nd->once)
			x->recomputable |= bit(v);
		for (int j = 0; j < nd->nin; j++)
			x->users[nd->in[j]] |= bit(v), x->readers[nd->in[j]] |= bit(v);
		for (int j = 0; j < nd->nout; j++) {
			int t = nd->out[j], src = d->t[t].view_src;
			if (x->producer[t] < 0)
				x->producer[t] = v;
			x->makers[t] |= bit(v);
			if (src >= 0 && !d->t[t].persistent_view)
				x->users[src] |= bit(v), x->readers[src] |= bit(v);
		}
		for (int j = 0; j < nd->nacc; j++) {
			x->users[nd->acc[j].tensor] |= bit(v);
			x->makers[nd->acc[j].tensor] |= bit(v);
			if (nd->acc[j].view_src >= 0)
				x->users[nd->acc[j].view_src] |= bit(v),
				x->readers[nd->acc[j].view_src] |= bit(v);
		}
	}
	for (int i = 0; i < d->nbase; i++)
		if (d->base_order[i] >= 0 && d->base_order[i] < x->n &&
		    d->node[d->base_order[i]].once)
			x->once_seq[x->nonce++] = d->base_order[i];
	if (x->nonce != __builtin_popcountll(x->all & ~x->recomputable))
		return "the base order does not list every once-only node exactly once";
	x->maxpath = 8 * x->n + 64;
	x->path = ar_alloc(a, sizeof *x->path * (size_t)x->maxpath);
	x->best = ar_alloc(a, sizeof *x->best * (size_t)x->maxpath);
	x->memo_cap = 1 << 12;
	x->memo = xcalloc(x->memo_cap, sizeof *x->memo);
	x->P = -1;
	return NULL;
}

/* The base schedule as the first candidate (peak INF if it is invalid). */
static Found
base_found(const Dag *d, Arena *a)
{
	Found f = {dag_base_schedule(d, a), INF, 0};
	MemEval ev;

	vf_eval(d, &f.s, &ev, a);
	if (ev.valid) {
		f.peak = ev.peak;
		f.cost = ev.recompute_cost;
	}
	return f;
}

/* Solves for goal into r; 0, or -1 when the search gave up. */
static int
solve(Ex *x, const PlanGoal *goal, PlanResult *r)
{
	const Dag *d = x->d;
	int64_t lb = static_lower_bound(x), cap = INF;
	Found f = base_found(d, x->a);
	int rc;

	if (goal->budget < 0 && goal->max_recompute >= 0)
		cap = (int64_t)(goal->max_recompute * (double)d->forward_cost + 1e-6);
	r->fits = true;
	if (goal->budget >= 0) {
		Found g;
		rc = probe(x, goal->budget, INF, &g);
		if (rc < 0)
			return -1;
		if (rc) {
			r->lower_bound = lb;
			if (min_cost(x, goal->budget, &g))
				return -1;
			f = g;
			goto done;
		}
		r->fits = false;
		lb = x->next_p;
	}
	if (min_peak(x, lb, cap, &f) || f.peak == INF || min_cost(x, f.peak, &f))
		return -1;
	r->lower_bound = f.peak;
done:
	r->sched = f.s;
	r->peak = f.peak;
	r->recompute_cost = f.cost;
	return 0;
}

PlanResult
rm_plan_exact(const Dag *d, const PlanGoal *goal, Arena *a)
{
	PlanResult r;
	Ex x;

	memset(&r, 0, sizeof r);
	if ((r.error = ex_init(&x, d, a)))
		return r;
	if (solve(&x, goal, &r)) {
		memset(&r, 0, sizeof r);
		r.error = x.gave_up ? ar_printf(a, "the exact search gave up after %lld"
		                                " states (graph too large for --exact)",
		                                x.expansions)
		                    : "no valid schedule exists";
	}
	free(x.memo);
	return r;
}
