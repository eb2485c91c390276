/* passes/plan/remat_exact.c -- rm_plan_exact: the true optimum under the memory
 * model, by exhaustive search, for small graphs (tests and --exact).
 *
 * Search space: the spec's (memory-model.md, "Schedules"): every schedule
 * that runs each once-only (backward) node exactly once and recomputable
 * nodes any number of times, in any order the data edges allow: a node
 * runs once its inputs exist, a backward node after its forward node, and
 * a node that reads a gradient only after every contribution to it. One
 * restriction the spec does not make: the contributions to one gradient
 * come in the base order's order (rm_acc_prev), so that every level sums
 * a gradient's terms alike and gets bit-identical results; the first one
 * produces it, possibly as a view. -O2 searches the same space. Two
 * dominated shapes are left out: a recomputation none of whose outputs is
 * used before it dies, and running a node again while a view still holds
 * the previous copy of one of its outputs (the old copy could have served
 * instead). Accumulation must come from once-only nodes.
 *
 * A search state is (C, R, F): the nodes that ran at least once, the
 * tensors whose current instance is resident, and, for each gradient
 * whose contributors would make it differently (as a view of different
 * tensors, or not as a view), which contributor ran first: the one fact
 * about the order so far that C does not tell and later memory depends
 * on. An instance dies right after
 * its last use, so after each step the search decides, for each tensor that
 * step touched, whether it stays resident (a later step will use it) or is
 * dropped: an explicit drop decision. Tensors no future step can use are
 * dropped at once, tensors a pending step must read and nothing can make
 * again are kept, and a view keeps its root resident. The memory of a step
 * is then persistent + owned bytes of R + what the step makes + its
 * temporaries, exactly what the liveness rule gives for the schedule the
 * path spells (and never less, on any path).
 *
 * cheapest(P) is a uniform-cost (Dijkstra) search over the states whose
 * steps all fit in P: the least recompute cost of a complete schedule with
 * peak <= P, every state expanded once, nodes tried in index order, so the
 * result is deterministic. When none exists it also reports
 * the smallest step memory above P it met: the next peak worth trying.
 * Without a budget: the smallest P whose cheapest cost is within
 * max_recompute x forward_cost, from a bottleneck search (min_peak) and
 * then probes that climb and bisect (jumping to that next peak).
 * With a budget: cheapest(budget); if nothing fits, the smallest peak with
 * unlimited recompute. The found schedule is re-evaluated by vf_eval. The
 * work is bounded (EX_MAX_STATES states per probe, EX_MAX_EXPANSIONS in
 * all; under -O2, rm_exact_within's limit on state look-ups too); past
 * it, or over 64 nodes or 128 tensors, or when the first
 * contributors need more than 64 bits, PlanResult.error says why and no
 * schedule is returned. The states, their hash and the heap grow in one
 * arena per call. */
#include <inttypes.h>
#include <string.h>

#include "remat_int.h"

enum {
	EX_MAX_NODES = 64,
	EX_MAX_TENSORS = 128,
	EX_MAX_STATES = 1 << 21,        /* states per probe */
	EX_MAX_FREE = 12,               /* free drop choices after one step */
};
static const long long EX_MAX_EXPANSIONS = 4000000;

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

/* One search state, its cheapest known cost and how it was reached. */
typedef struct St {
	uint64_t c;
	Set r;
	uint64_t f;             /* first contributors (Ex.fshift) */
	int64_t g;
	int64_t cost;           /* minimax: the recompute of the path to it */
	int parent;             /* state index, -1 for the start */
	int node;               /* the step that led here */
	bool closed;
} St;

typedef struct HeapItem {
	int64_t g;
	int st;
} HeapItem;

typedef struct Ex {
	const Dag *d;
	Arena *a;
	int n, nt;
	uint64_t all;           /* every node */
	uint64_t recomputable;  /* !once nodes */
	uint64_t *users;        /* [nt] nodes that use t (read, view, add) */
	uint64_t *readers;      /* [nt] nodes that read t or make a view of it */
	int *producer;          /* [nt] the node with t in out, or -1 */
	uint64_t *makers;       /* [nt] nodes that produce t (out or acc) */
	uint64_t *accm;         /* [nt] nodes that add to t */
	uint64_t *accbefore;    /* [n] nodes that must add to v's gradients
	                           before v does (rm_acc_prev) */
	int *accofs;            /* [nt + 1] CSR: t's contributors, by index */
	int *accnode, *accview; /* the contributor and its entry's view_src */
	int *fshift, *fbits;    /* [nt] where F holds the index of t's first
	                           contributor: only when it decides t's root */
	int64_t persistent;
	int *root;              /* [nt] root tensor of t's current instance */
	Arena mem;              /* the states, their hash and the heap */
	/* the probe */
	int64_t P;
	bool minimax;           /* the key is the path's peak, not its cost */
	int64_t step_m;         /* the memory of the step being expanded */
	int64_t next_p;         /* smallest step memory above P met */
	St *st;
	int nst, capst;
	int *slot;              /* hash of states: index + 1, 0 empty */
	size_t capslot;
	HeapItem *heap;
	int nheap, capheap;
	long long expansions;
	long long max_expansions;       /* the call's limit on expansions */
	long long relaxes, max_relaxes; /* state look-ups made, and their
	                                   limit (0: none): -O2's work limit,
	                                   which also counts the work of an
	                                   expansion with many successors */
	size_t max_states;              /* states per probe */
	bool gave_up;
} Ex;

/* ---------------------------------------------------------------- states */

/* The slot of a state: each word mixed in whole. (The earlier hash let a
 * high bit of a word reach only the high bits of the result, above the
 * slot mask, so states differing only in tensors 49-63 or 113-127 shared
 * a probe chain: under ZeRO-3, whose shards and gathers are the last
 * tensors, -O2 spent 2.2 s in the chains on a 64-step graph.) */
static uint64_t
state_hash(uint64_t c, const Set *r, uint64_t f)
{
	uint64_t h = rm_mix64(c ^ 0x9e3779b97f4a7c15ull);

	h = rm_mix64(h ^ f);
	h = rm_mix64(h ^ r->w[0]);
	return rm_mix64(h ^ r->w[1]);
}

static void
slot_insert(Ex *x, int i)
{
	size_t k = state_hash(x->st[i].c, &x->st[i].r, x->st[i].f) & (x->capslot - 1);

	while (x->slot[k])
		k = (k + 1) & (x->capslot - 1);
	x->slot[k] = i + 1;
}

/* Doubles the hash of states and inserts them again. */
static void
slot_grow(Ex *x)
{
	size_t n = x->capslot * 2;

	x->slot = ar_grow(&x->mem, x->slot, sizeof *x->slot * x->capslot,
	                  sizeof *x->slot * n);
	x->capslot = n;
	memset(x->slot, 0, sizeof *x->slot * n);
	for (int i = 0; i < x->nst; i++)
		slot_insert(x, i);
}

/* The index of state (c, r, f), made with cost INF if new; -1 when full. */
static int
state_get(Ex *x, uint64_t c, const Set *r, uint64_t f)
{
	size_t k;

	if ((size_t)x->nst * 2 >= x->capslot) {
		if (x->capslot >= 2 * x->max_states)
			return -1;
		slot_grow(x);
	}
	for (k = state_hash(c, r, f) & (x->capslot - 1); x->slot[k]; k = (k + 1) & (x->capslot - 1)) {
		St *s = &x->st[x->slot[k] - 1];
		if (s->c == c && s->f == f && s->r.w[0] == r->w[0] && s->r.w[1] == r->w[1])
			return x->slot[k] - 1;
	}
	if (x->nst == x->capst) {
		x->st = ar_grow(&x->mem, x->st, sizeof *x->st * (size_t)x->capst,
		                sizeof *x->st * (size_t)x->capst * 2);
		x->capst *= 2;
	}
	x->st[x->nst] = (St){c, *r, f, INF, INF, -1, -1, false};
	x->slot[k] = ++x->nst;
	return x->nst - 1;
}

static void
heap_push(Ex *x, int64_t g, int st)
{
	int i;

	if (x->nheap == x->capheap) {
		x->heap = ar_grow(&x->mem, x->heap, sizeof *x->heap * (size_t)x->capheap,
		                  sizeof *x->heap * (size_t)x->capheap * 2);
		x->capheap *= 2;
	}
	for (i = x->nheap++; i > 0 && x->heap[(i - 1) / 2].g > g; i = (i - 1) / 2)
		x->heap[i] = x->heap[(i - 1) / 2];
	x->heap[i] = (HeapItem){g, st};
}

static HeapItem
heap_pop(Ex *x)
{
	HeapItem top = x->heap[0], last = x->heap[--x->nheap];
	int i = 0;

	for (;;) {
		int k = 2 * i + 1;
		if (k >= x->nheap)
			break;
		if (k + 1 < x->nheap && x->heap[k + 1].g < x->heap[k].g)
			k++;
		if (x->heap[k].g >= last.g)
			break;
		x->heap[i] = x->heap[k];
		i = k;
	}
	if (x->nheap > 0)
		x->heap[i] = last;
	return top;
}

/* Key g (a cost, or with x->minimax a peak) reaches (c, r, f) from state
 * parent by running node, with recompute cost so far (minimax: the lower
 * wins between equal peaks). */
static void
relax(Ex *x, uint64_t c, const Set *r, uint64_t f, int64_t g, int64_t cost,
      int parent, int node)
{
	int i;

	if (x->max_relaxes && ++x->relaxes > x->max_relaxes) {
		x->gave_up = true;
		return;
	}
	if ((i = state_get(x, c, r, f)) < 0) {
		x->gave_up = true;
		return;
	}
	if (g > x->st[i].g || (g == x->st[i].g && (!x->minimax || x->st[i].closed ||
	                                           cost >= x->st[i].cost)))
		return;
	x->st[i].cost = cost;
	if (g == x->st[i].g) {  /* a cheaper path at the same peak */
		x->st[i].parent = parent;
		x->st[i].node = node;
		return;
	}
	x->st[i].g = g;
	x->st[i].parent = parent;
	x->st[i].node = node;
	heap_push(x, g, i);
}

/* ---------------------------------------------------------------- moves */

static bool
produced_before(const Ex *x, int t, uint64_t c)
{
	return x->d->t[t].from_start || (x->makers[t] & c);
}


/* The view_src of the entry that made gradient t (some contributor in c
 * ran): the first contributor's, which F records when it matters. */
static int
first_view(const Ex *x, int t, uint64_t f)
{
	RmRow r = rm_row(x->accofs, t, x->nt);
	int k = 0;

	if (x->fbits[t])
		k = (int)(f >> x->fshift[t] & (bit(x->fbits[t]) - 1));
	ir_assert(k < r.hi - r.lo);
	return x->accview[r.lo + k];
}

/* The root of t's current instance once the nodes in c ran, first
 * contributors f: through static views, and through the accumulation
 * view that made a gradient. */
static int
root_in(const Ex *x, int t, uint64_t c, uint64_t f, int depth)
{
	const DagTensor *dt = &x->d->t[t];
	int src;

	if (dt->persistent_view || depth > x->nt)
		return t;
	if (dt->view_src >= 0)
		return root_in(x, dt->view_src, c, f, depth + 1);
	if (!dt->from_start && (x->accm[t] & c) && (src = first_view(x, t, f)) >= 0)
		return root_in(x, src, c, f, depth + 1);
	return t;
}

static void
set_roots(Ex *x, uint64_t c, uint64_t f)
{
	for (int t = 0; t < x->nt; t++)
		x->root[t] = root_in(x, t, c, f, 0);
}

/* f once v ran after the nodes in c: v is the first contributor of each
 * gradient it adds to that nothing made yet. */
static uint64_t
note_first(const Ex *x, int v, uint64_t c, uint64_t f)
{
	const DagNode *nd = &x->d->node[v];

	for (int j = 0; j < nd->nacc; j++) {
		int t = nd->acc[j].tensor;
		RmRow r = rm_row(x->accofs, t, x->nt);
		int k = r.lo;
		if (!x->fbits[t] || produced_before(x, t, c))
			continue;
		while (x->accnode[k] != v) {
			k++;
			ir_assert(k < r.hi);
		}
		f &= ~((bit(x->fbits[t]) - 1) << x->fshift[t]);
		f |= (uint64_t)(k - r.lo) << x->fshift[t];
	}
	return f;
}

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

/* Can node v run now? A backward node runs once, after its forward node
 * and after the contributions that come before its own;
 * its inputs, view bases and existing gradients must be resident, every
 * contribution to a gradient it reads made, its outputs not resident
 * (their last copy is dead). */
static bool
can_run(const Ex *x, int v, uint64_t c, const Set *R, uint64_t N)
{
	const DagNode *nd = &x->d->node[v];
	bool again = c & bit(v), useful = !again;

	if (nd->once && (again || (nd->fwd_plus1 > 0 && !(c & bit(nd->fwd_plus1 - 1)))))
		return false;
	if (x->accbefore[v] & ~c)
		return false;
	for (int j = 0; j < nd->nin; j++)
		if (!has(R, nd->in[j]) || (x->accm[nd->in[j]] & ~c))
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
	int64_t m = rbytes + dag_workspace(x->d, v);

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

/* Runs v from state i and relaxes every way of dropping what it touched. */
static void
step(Ex *x, int i, int v)
{
	const DagNode *nd = &x->d->node[v];
	uint64_t c = x->st[i].c, c2 = c | bit(v), f2 = note_first(x, v, c, x->st[i].f);
	bool again = c & bit(v);
	/* saturated: a bottleneck search follows paths of any cost, and a
	 * Checkmate graph's costs may be near 2^63 */
	int64_t cost = again ? ck_sat_add(x->st[i].cost, nd->cost) : x->st[i].cost;
	int64_t g = !x->minimax ? cost : x->st[i].g > x->step_m ? x->st[i].g : x->step_m;
	int freet[4 * EX_MAX_TENSORS], nfree;
	Set R1 = x->st[i].r, forced;

	for (int j = 0; j < nd->nout; j++)
		put(&R1, nd->out[j]);
	for (int j = 0; j < nd->nacc; j++)
		put(&R1, nd->acc[j].tensor);
	set_roots(x, c2, f2);
	if ((nfree = classify(x, v, c2, &R1, &forced, freet)) < 0) {
		x->gave_up = true;
		return;
	}
	for (unsigned mask = 1u << nfree; mask-- > 0;) {
		Set R2 = R1;
		bool kept = !again;
		if (!drop(x, &R2, &forced, freet, nfree, mask))
			continue;
		for (int j = 0; j < nd->nout; j++)
			kept |= has(&R2, nd->out[j]);
		if (kept)
			relax(x, c2, &R2, f2, g, cost, i, v);
	}
}

/* Expands state i: every node that can run next within P. */
static void
expand(Ex *x, int i)
{
	uint64_t c = x->st[i].c, f = x->st[i].f, N = may_run(x, c);
	Set R = x->st[i].r;
	int64_t rbytes;

	set_roots(x, c, f);
	rbytes = resident_bytes(x, &R);
	for (int v = 0; v < x->n && !x->gave_up; v++) {
		int64_t m;
		if (!can_run(x, v, c, &R, N))
			continue;
		if ((m = step_memory(x, v, c, rbytes)) > x->P) {
			if (m < x->next_p)
				x->next_p = m;
			continue;
		}
		x->step_m = m;
		step(x, i, v);
		set_roots(x, c, f);
	}
}

/* The start: from_start tensors that something uses or that live to the
 * end are resident. */
static Set
start_set(const Ex *x)
{
	Set R = {{0, 0}};

	for (int t = 0; t < x->nt; t++)
		if (x->d->t[t].from_start && (x->users[t] || x->d->t[t].to_end))
			put(&R, t);
	return R;
}

/* Uniform-cost search for the cheapest schedule with peak <= P and
 * recompute <= rem; with x->minimax, for the schedule of least peak <= P
 * whatever its recompute (the key is the largest step memory so far; the
 * cheaper path is kept between equal peaks, rem is not used). Returns
 * the goal state, -1 (x->next_p: the next peak worth trying), or -2 when
 * it gave up. */
static int
cheapest(Ex *x, int64_t P, int64_t rem)
{
	Set R = start_set(x);

	x->P = P;
	x->next_p = INF;
	x->nst = x->nheap = 0;
	memset(x->slot, 0, sizeof *x->slot * x->capslot);
	relax(x, 0, &R, 0, 0, 0, -1, -1);
	while (x->nheap > 0 && !x->gave_up) {
		HeapItem h = heap_pop(x);
		St *s = &x->st[h.st];
		if (s->closed || h.g > s->g)
			continue;
		if (!x->minimax && h.g > rem)
			break;
		s->closed = true;
		if (s->c == x->all)
			return h.st;
		if (++x->expansions > x->max_expansions)
			x->gave_up = true;
		else
			expand(x, h.st);
	}
	return x->gave_up ? -2 : -1;
}

/* ---------------------------------------------------------------- drivers */

/* A schedule of the search, as found by the independent evaluator. */
typedef struct Found {
	Schedule s;
	int64_t peak, cost;
	int64_t key;            /* the search's cost or (minimax) peak */
} Found;

/* Is there a schedule with peak <= P and recompute <= rem? 1 yes (the
 * cheapest, into *f), 0 no (x->next_p: the next peak worth trying), -1
 * gave up. */
static int
probe(Ex *x, int64_t P, int64_t rem, Found *f)
{
	int goal = cheapest(x, P, rem), n = 0;
	MemEval ev;

	if (goal < 0)
		return goal == -1 ? 0 : -1;
	for (int i = goal; x->st[i].parent >= 0; i = x->st[i].parent)
		n++;
	f->s.n = n;
	f->s.step = ar_alloc(x->a, sizeof *f->s.step * (size_t)(n + 1));
	for (int i = goal; x->st[i].parent >= 0; i = x->st[i].parent)
		f->s.step[--n] = x->st[i].node;
	vf_eval(x->d, &f->s, &ev, x->a);
	/* a path's memory is never below its schedule's, and equal along
	 * the path of its best drops: the least key is the least peak */
	ir_assert(ev.valid && ev.peak <= P &&
	          (x->st[goal].cost == INF || ev.recompute_cost == x->st[goal].cost) &&
	          (!x->minimax || ev.peak == x->st[goal].g));
	f->key = x->st[goal].g;
	f->peak = ev.peak;
	f->cost = ev.recompute_cost;
	return 1;
}

/* The smallest peak in [lo, f->peak] with recompute <= rem; f holds a
 * schedule achieving its peak (or none: f->peak INF). Every schedule a
 * probe returns is the cheapest of those of peak <= its P, so the last
 * one found is also the cheapest at the least peak.
 * Bisection on the peak from the bounds alone made about ten probes of
 * about equal work. First, one bottleneck search (x->minimax) gives the
 * least peak whatever the recompute; where its schedule is within rem,
 * the cheapest schedule at that peak is the answer, two searches in all.
 * Otherwise the answer is usually just above it (the cap binds by
 * little), so probes climb from it in steps that double from 1/128 of it,
 * each failure a new lower bound; after the first fit, the lower bound
 * itself (a cheaper schedule than the bottleneck search's may fit there);
 * then bisection. A schedule that fits comes early that way, which is
 * what -O2 keeps when its work runs out. */
static int
min_peak(Ex *x, int64_t lo, int64_t rem, Found *f)
{
	enum { CLIMB, AT_LOW, BISECT } phase = CLIMB;
	int64_t step;
	Found m;
	int rc;

	x->minimax = true;
	rc = probe(x, f->peak, INF, &m);
	x->minimax = false;
	if (rc < 0)
		return -1;
	if (rc && m.key > lo)
		lo = m.key;
	if (rc && m.cost <= rem) {
		Found c;
		/* the cheapest at that peak; the bottleneck search's own
		 * schedule should a saturated cost hide every path from it */
		if ((rc = probe(x, lo, rem, &c)) < 0)
			return -1;
		*f = rc ? c : m;
		return 0;
	}
	step = lo / 128 > 0 ? lo / 128 : 1;
	while (lo < f->peak) {
		int64_t mid = phase == AT_LOW ? lo
		              : phase == CLIMB && f->peak - lo > step ? lo + step
		              : lo + (f->peak - lo) / 2;
		if ((rc = probe(x, mid, rem, &m)) < 0)
			return -1;
		if (rc) {
			*f = m;
			phase = phase == CLIMB ? AT_LOW : BISECT;
		} else {
			lo = x->next_p > mid + 1 ? x->next_p : mid + 1;
			if (phase == CLIMB && step < INF / 4)
				step *= 2;
			else if (phase == AT_LOW)
				phase = BISECT;
		}
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
		int64_t m = x->persistent + dag_workspace(d, v);
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

/* Records node v in the users, readers, makers and producer tables. */
static void
add_uses(Ex *x, int v)
{
	const DagNode *nd = &x->d->node[v];

	if (!nd->once)
		x->recomputable |= bit(v);
	for (int j = 0; j < nd->nin; j++) {
		x->users[nd->in[j]] |= bit(v);
		x->readers[nd->in[j]] |= bit(v);
	}
	for (int j = 0; j < nd->nout; j++) {
		int t = nd->out[j], src = x->d->t[t].view_src;
		if (x->producer[t] < 0)
			x->producer[t] = v;
		x->makers[t] |= bit(v);
		if (src >= 0 && !x->d->t[t].persistent_view) {
			x->users[src] |= bit(v);
			x->readers[src] |= bit(v);
		}
	}
	for (int j = 0; j < nd->nacc; j++) {
		int t = nd->acc[j].tensor, src = nd->acc[j].view_src;
		x->users[t] |= bit(v);
		x->makers[t] |= bit(v);
		x->accm[t] |= bit(v);
		x->accofs[t + 1]++;
		if (src >= 0) {
			x->users[src] |= bit(v);
			x->readers[src] |= bit(v);
		}
	}
}

/* The contributors of each gradient, by node index (CSR). */
static void
list_contributors(Ex *x)
{
	int *fill = ar_alloc(x->a, sizeof *fill * (size_t)(x->nt + 1));

	for (int t = 0; t < x->nt; t++)
		x->accofs[t + 1] += x->accofs[t];
	x->accnode = ar_alloc(x->a, sizeof *x->accnode * (size_t)(x->accofs[x->nt] + 1));
	x->accview = ar_alloc(x->a, sizeof *x->accview * (size_t)(x->accofs[x->nt] + 1));
	for (int v = 0; v < x->n; v++)
		for (int j = 0; j < x->d->node[v].nacc; j++) {
			const DagAcc *ac = &x->d->node[v].acc[j];
			int k = x->accofs[ac->tensor] + fill[ac->tensor]++;
			x->accnode[k] = v;
			x->accview[k] = ac->view_src;
		}
}

/* Places in F the index of the first contributor of every gradient whose
 * contributors would make it with different roots (views of different
 * tensors, or a view and an owning instance); false when they need more
 * than 64 bits. */
static bool
place_firsts(Ex *x)
{
	int used = 0;

	for (int t = 0; t < x->nt; t++) {
		RmRow r = rm_row(x->accofs, t, x->nt);
		int a = r.lo, n = r.hi - r.lo, w = 0;
		bool differ = false;
		for (int k = 1; k < n; k++)
			differ |= x->accview[a + k] != x->accview[a];
		if (!differ || x->d->t[t].from_start)
			continue;
		while (bit(w) < (uint64_t)n)
			w++;
		if (used + w > 64)
			return false;
		x->fshift[t] = used;
		x->fbits[t] = w;
		used += w;
	}
	return true;
}

/* Fills the tables; NULL or why the graph is not supported. */
static const char *
ex_init(Ex *x, const Dag *d, Arena *a)
{
	const char *why = unsupported(d, a);
	size_t nt1 = (size_t)d->nt + 1;

	memset(x, 0, sizeof *x);
	if (why)
		return why;
	x->d = d;
	x->a = a;
	x->n = d->nnode;
	x->nt = d->nt;
	x->all = x->n == 64 ? ~(uint64_t)0 : bit(x->n) - 1;
	x->users = ar_alloc(a, sizeof *x->users * nt1);
	x->readers = ar_alloc(a, sizeof *x->readers * nt1);
	x->makers = ar_alloc(a, sizeof *x->makers * nt1);
	x->accm = ar_alloc(a, sizeof *x->accm * nt1);
	x->accofs = ar_alloc(a, sizeof *x->accofs * (nt1 + 1));
	x->fshift = ar_alloc(a, sizeof *x->fshift * nt1);
	x->fbits = ar_alloc(a, sizeof *x->fbits * nt1);
	x->producer = ar_alloc(a, sizeof *x->producer * nt1);
	x->root = ar_alloc(a, sizeof *x->root * nt1);
	for (int t = 0; t < x->nt; t++)
		x->producer[t] = -1;
	for (int c = 0; c < CAT_COUNT; c++)
		x->persistent += d->persistent[c];
	for (int v = 0; v < x->n; v++)
		add_uses(x, v);
	list_contributors(x);
	int *aofs, *aprev;
	rm_acc_prev(d, &aofs, &aprev, a);
	x->accbefore = ar_alloc(a, sizeof *x->accbefore * ((size_t)x->n + 1));
	for (int v = 0; v < x->n; v++) {
		RmRow p = rm_row(aofs, v, x->n);
		for (int k = p.lo; k < p.hi; k++)
			x->accbefore[v] |= bit(aprev[k]);
	}
	if (!place_firsts(x))
		return "too many gradients whose first contribution decides their"
		       " memory for the exact search";
	ar_init(&x->mem);
	x->capst = 1 << 12;
	x->st = ar_grow(&x->mem, NULL, 0, sizeof *x->st * (size_t)x->capst);
	x->capslot = 1 << 13;
	x->slot = ar_grow(&x->mem, NULL, 0, sizeof *x->slot * x->capslot);
	x->capheap = 1 << 12;
	x->heap = ar_grow(&x->mem, NULL, 0, sizeof *x->heap * (size_t)x->capheap);
	return NULL;
}

/* The base schedule as the first candidate (peak INF if it is invalid). */
static Found
base_found(const Dag *d, Arena *a)
{
	Found f = {dag_base_schedule(d, a), INF, 0, 0};
	MemEval ev;

	vf_eval(d, &f.s, &ev, a);
	if (ev.valid) {
		f.peak = ev.peak;
		f.cost = ev.recompute_cost;
	}
	return f;
}

/* Solves for goal into r; 0, or -1 when the search gave up or no
 * schedule exists. *best is the best schedule found so far (at first the
 * base schedule): without a budget, one within the recompute cap. */
static int
solve(Ex *x, const PlanGoal *goal, PlanResult *r, Found *best)
{
	const Dag *d = x->d;
	int64_t lb = static_lower_bound(x), cap = INF;
	Found f = base_found(d, x->a);
	const int *base;
	int rc;

	if (goal->budget < 0 && goal->max_recompute >= 0)
		cap = (int64_t)(goal->max_recompute * (double)d->forward_cost + 1e-6);
	r->fits = true;
	r->lower_bound = lb;
	if (goal->budget >= 0) {
		Found g;
		if ((rc = probe(x, goal->budget, INF, &g)) < 0)
			return -1;
		if (rc) {
			f = g;
			goto done;
		}
		r->fits = false;
		lb = x->next_p;
	}
	base = f.s.step;
	*best = f;
	rc = min_peak(x, lb, cap, best);
	f = *best;
	if (best->s.step == base)
		best->peak = INF;       /* still the base schedule */
	if (rc || f.peak == INF)
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
	return rm_exact_within(d, goal, 0, NULL, a);
}

PlanResult
rm_exact_within(const Dag *d, const PlanGoal *goal, long long work, Schedule *found,
                Arena *a)
{
	PlanResult r;
	Found best = {{0, NULL}, INF, 0, 0};
	Ex x;

	memset(&r, 0, sizeof r);
	if (found)
		*found = (Schedule){0, NULL};
	if ((r.error = ex_init(&x, d, a)))
		return r;
	x.max_expansions = EX_MAX_EXPANSIONS;
	x.max_relaxes = work;
	/* each look-up makes at most one state */
	x.max_states = work > 0 && work < EX_MAX_STATES ? (size_t)work : (size_t)EX_MAX_STATES;
	if (solve(&x, goal, &r, &best)) {
		if (found && x.gave_up && goal->budget < 0 && best.peak < INF)
			*found = best.s;
		memset(&r, 0, sizeof r);
		r.error = x.gave_up ? ar_printf(a, "the exact search gave up after %lld"
		                                " states (graph too large for --exact)",
		                                x.expansions)
		                    : "no valid schedule exists";
	}
	ar_free(&x.mem);
	return r;
}
