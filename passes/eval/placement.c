/* passes/eval/placement.c -- offsets for extents of fixed lifetimes: the
 * placements mp_plan tries after its linear scan (memplan.c), on a copy of
 * its extents (MpExtent: an aligned size and the steps it is live at). Each
 * sets every extent's off so that two extents live at a common step never
 * overlap, and returns the top (largest end offset). Work is counted, not
 * timed: every placed extent looked at, every tree node visited and every
 * skyline segment taken costs units of work, and a placement that runs
 * out returns -1, so a plan is deterministic on every machine.
 *
 * - Greedy by size and greedy by breadth (Pisarchyk & Lee, "Efficient
 *   memory management for deep neural net inference", 2020; TFLite's arena
 *   planner): extents in order of decreasing size, or by the breadth (bytes
 *   live) of the busiest step of their lifetime, then by size; each goes in
 *   a gap among the placed extents that share a step with it (the tightest:
 *   best fit, or the lowest: first fit), else above them. O(n^2) at most.
 * - Skyline (best-fit strip packing after Burke, Kendall & Whitwell 2004,
 *   as Sekiyama et al. 2018 apply it to DNN buffers): the placed extents
 *   form a skyline over the steps; its lowest segment takes the unplaced
 *   extent of highest priority (area, size or length) that lies within it,
 *   at the segment's height, or, when none does, is raised to its lower
 *   neighbour. It fills the memory bottom up, a step range at a time,
 *   rather than extent by extent, and reaches the floor on most training
 *   schedules where the greedy orders leave gaps (DenseNet -O2: +0.01%
 *   against +10% for the best greedy). The perturbed variant
 *   multiplies each priority by a factor in [0.85, 1.15) drawn from a seed:
 *   restarts that explore near the three fixed orders.
 * - The skyline under a bound: the skyline as a depth-first search that
 *   may not leave a gap (a lift) where the skyline plus the bytes still to
 *   place at some step would exceed a bound, and that backtracks to its
 *   latest choice instead (the next of the few best extents there). It
 *   starts from the best plan so far and halves the range between the floor
 *   and that plan's top, each bound tried by restarts of bounded length.
 *   On ResNet-50's Checkmate graph at -O2 it reaches the floor where every
 *   other placement stays 4.8% above it (a skyline restart that finds the
 *   floor needs a few backtracks, and only the bound tells where).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

/* Units of work, 1 to 5 ns each as measured: a placed extent looked at by
 * greedy is one, a node of the skyline's candidate tree visited NODE_COST,
 * a segment it takes (a heap pop, a binary search, a split or a lift)
 * SEG_COST. */
enum { NODE_COST = 12, SEG_COST = 64 };

/* The arrays every placement needs, sized for the extents once and used
 * again by each placement: the perturbed restarts would otherwise map and
 * fault in fresh pages every time. */
struct MpPlacer {
	MpExtent *b;
	int n;
	int64_t work;           /* units left */
	int lo, hi;             /* the steps the extents are live at */
	Arena *a;
	int *by_size, *by_breadth;      /* the greedy orders, made when first used */
	int *placed;            /* greedy: the placed extents by offset */
	int *bys;               /* skyline: extents by start */
	int m;                  /* leaves of the tree below, a power of 2 >= n */
	int *min_end;           /* [2m] a tree over bys: the earliest end of the
	                           unplaced extents below a node (INT_MAX: none) */
	int *top;               /* [2m] and the unplaced extent that goes first
	                           among them (-1: none) */
	double *prio;
	struct Seg *seg;
	struct SegKey *heap;
};

/* Takes k units; false when the work has run out. */
static bool
spend(MpPlacer *P, int64_t k)
{
	P->work -= k;
	return P->work >= 0;
}

static bool
share_step(const MpExtent *x, const MpExtent *y)
{
	return x->start <= y->end && y->start <= x->end;
}

/* ------------------------------------------------------------ greedy */

/* A sort key: ascending on k[0], k[1], k[2], then the extent's index (a
 * descending key is stored negated; sizes and loads are below 2^63). */
typedef struct Ord {
	int64_t k[3];
	int i;
} Ord;

static int
by_key(const void *pa, const void *pb)
{
	const Ord *a = pa, *b = pb;

	for (int j = 0; j < 3; j++)
		if (a->k[j] != b->k[j])
			return a->k[j] < b->k[j] ? -1 : 1;
	return (a->i > b->i) - (a->i < b->i);
}

/* The extents' indices sorted by the keys in ord (n of them), in a new
 * array of P's arena. */
static int *
sorted(MpPlacer *P, Ord *ord)
{
	int *out = ar_array(P->a, (size_t)P->n + 1, sizeof *out);

	qsort(ord, (size_t)P->n, sizeof *ord, by_key);
	for (int i = 0; i < P->n; i++)
		out[i] = ord[i].i;
	return out;
}

/* ------------------------------------------------------------ greedy */

/* The busiest of steps c and best (-1: none) by load; the earlier on ties. */
static int
busier(const int64_t *load, int c, int best)
{
	return best < 0 || load[c] > load[best] || (load[c] == load[best] && c < best) ? c : best;
}

/* Greedy by breadth's order: the step of each extent's lifetime with the
 * most bytes live (the first such), busiest first, earlier first, then
 * larger first. The bytes per step come from a difference array; the
 * busiest step of a lifetime from a segment tree of argmaxes. */
static int *
breadth_order(MpPlacer *P)
{
	const MpExtent *b = P->b;
	int t = P->hi - P->lo + 1, m = 1, lo = P->lo;
	while (m < t)
		m *= 2;
	Arena s;
	ar_init(&s);
	int64_t *load = ar_array(&s, (size_t)t + 1, sizeof *load);
	int *arg = ar_array(&s, 2 * (size_t)m, sizeof *arg);
	Ord *key = ar_array(&s, (size_t)P->n + 1, sizeof *key);
	int *ord;

	for (int i = 0; i < P->n; i++) {
		load[b[i].start - lo] += b[i].size;
		load[b[i].end - lo + 1] -= b[i].size;
	}
	for (int k = 1; k < t; k++)
		load[k] += load[k - 1];
	for (int k = 0; k < m; k++)
		arg[m + k] = k < t ? k : t - 1;
	for (int k = m - 1; k > 0; k--)
		arg[k] = busier(load, arg[2 * k + 1], arg[2 * k]);
	for (int i = 0; i < P->n; i++) {
		int best = -1;
		for (int l = b[i].start - lo + m, r = b[i].end - lo + m + 1; l < r; l /= 2, r /= 2) {
			if (l & 1)
				best = busier(load, arg[l++], best);
			if (r & 1)
				best = busier(load, arg[--r], best);
		}
		key[i] = (Ord){{-load[best], best, -b[i].size}, i};
	}
	ord = sorted(P, key);
	ar_free(&s);
	return ord;
}

/* Greedy by size's order: larger first, then earlier. */
static int *
size_order(MpPlacer *P)
{
	Ord *key = ar_array(P->a, (size_t)P->n + 1, sizeof *key);

	for (int i = 0; i < P->n; i++)
		key[i] = (Ord){{-P->b[i].size, P->b[i].start, 0}, i};
	return sorted(P, key);
}

/* Places the extents in the order ord: each in the tightest (best fit) or
 * the lowest (first fit) gap among the placed extents that share a step
 * with it, else above them. placed[] keeps the placed extents sorted by
 * offset, so one pass over it finds the gaps. Returns the top, or -1. */
static int64_t
greedy(MpPlacer *P, const int *ord, bool best_fit)
{
	MpExtent *b = P->b;
	int *placed = P->placed;
	int64_t top = 0;

	for (int i = 0; i < P->n; i++) {
		MpExtent *x = &b[ord[i]];
		int64_t at = -1, gap = INT64_MAX, end = 0;
		int lo = 0, hi = i;
		if (!spend(P, i + 1))
			return -1;
		for (int j = 0; j < i; j++) {
			const MpExtent *p = &b[placed[j]];
			if (!share_step(p, x))
				continue;
			if (p->off - end >= x->size && p->off - end < gap) {
				at = end;
				gap = p->off - end;
				if (!best_fit)
					break;
			}
			end = p->off + p->size > end ? p->off + p->size : end;
		}
		x->off = at >= 0 ? at : end;
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (b[placed[mid]].off <= x->off)
				lo = mid + 1;
			else
				hi = mid;
		}
		memmove(placed + lo + 1, placed + lo, sizeof *placed * (size_t)(i - lo));
		placed[lo] = ord[i];
		top = x->off + x->size > top ? x->off + x->size : top;
	}
	return top;
}

/* ------------------------------------------------------------ skyline */

/* A run of steps l..r at one height: the skyline is a list of them in
 * step order, no two neighbours at the same height. */
typedef struct Seg {
	int64_t h;
	int l, r;
	int prev, next;         /* neighbours in step order, -1 for none */
	unsigned ver;           /* bumped at every change: older heap entries
	                           of the segment are stale */
} Seg;

/* A heap entry: the segments by (height, first step), lowest first, stale
 * entries skipped when they surface. */
typedef struct SegKey {
	int64_t h;
	int l, seg;
	unsigned ver;
} SegKey;

typedef struct Sky {
	MpPlacer *P;
	Seg *seg;
	int nseg;
	SegKey *heap;
	int nheap;
} Sky;

static bool
key_below(const SegKey *x, const SegKey *y)
{
	return x->h < y->h || (x->h == y->h && x->l < y->l);
}

static void
heap_push(Sky *k, int g)
{
	SegKey e = {k->seg[g].h, k->seg[g].l, g, k->seg[g].ver};
	int i = k->nheap++;

	for (; i > 0 && key_below(&e, &k->heap[(i - 1) / 2]); i = (i - 1) / 2)
		k->heap[i] = k->heap[(i - 1) / 2];
	k->heap[i] = e;
}

/* The lowest segment (first step first among equals). */
static int
heap_pop(Sky *k)
{
	for (;;) {
		SegKey top = k->heap[0], last = k->heap[--k->nheap];
		int i = 0;
		for (int c; (c = 2 * i + 1) < k->nheap; i = c) {
			if (c + 1 < k->nheap && key_below(&k->heap[c + 1], &k->heap[c]))
				c++;
			if (!key_below(&k->heap[c], &last))
				break;
			k->heap[i] = k->heap[c];
		}
		k->heap[i] = last;
		if (k->seg[top.seg].ver == top.ver)
			return top.seg;
	}
}

/* Segment g absorbs its neighbour y (same height, adjacent). */
static void
seg_absorb(Sky *k, int g, int y)
{
	Seg *G = &k->seg[g], *Y = &k->seg[y];

	if (Y->l < G->l) {
		G->l = Y->l;
		G->prev = Y->prev;
		if (G->prev >= 0)
			k->seg[G->prev].next = g;
	} else {
		G->r = Y->r;
		G->next = Y->next;
		if (G->next >= 0)
			k->seg[G->next].prev = g;
	}
	Y->ver++;
}

/* Merges g with the neighbours at its height; queues it again. */
static void
seg_settle(Sky *k, int g)
{
	int p = k->seg[g].prev, q = k->seg[g].next;

	if (p >= 0 && k->seg[p].h == k->seg[g].h)
		seg_absorb(k, g, p);
	if (q >= 0 && k->seg[q].h == k->seg[g].h)
		seg_absorb(k, g, q);
	k->seg[g].ver++;
	heap_push(k, g);
}

/* A new segment l..r at height h, linked between p and q. */
static void
seg_new(Sky *k, int64_t h, int l, int r, int p, int q)
{
	int g = k->nseg++;

	k->seg[g] = (Seg){h, l, r, p, q, 0};
	if (p >= 0)
		k->seg[p].next = g;
	if (q >= 0)
		k->seg[q].prev = g;
	heap_push(k, g);
}

/* Extent x on segment g, at its height: g keeps the extent's steps, raised;
 * the steps of g either side of it stay at the old height. */
static void
sky_put(Sky *k, int g, MpExtent *x)
{
	Seg *G = &k->seg[g];

	x->off = G->h;
	if (x->start > G->l)
		seg_new(k, G->h, G->l, x->start - 1, G->prev, g);
	G = &k->seg[g];
	if (x->end < G->r)
		seg_new(k, G->h, x->end + 1, G->r, g, G->next);
	G = &k->seg[g];
	G->l = x->start;
	G->r = x->end;
	G->h += x->size;
	seg_settle(k, g);
}

/* No unplaced extent fits in g: raise it to its lower neighbour. Some
 * neighbour exists: a segment over every step holds any unplaced extent. */
static void
sky_lift(Sky *k, int g)
{
	Seg *G = &k->seg[g];
	int64_t hp = G->prev >= 0 ? k->seg[G->prev].h : INT64_MAX;
	int64_t hq = G->next >= 0 ? k->seg[G->next].h : INT64_MAX;

	ir_assert(hp != INT64_MAX || hq != INT64_MAX);
	G->h = hp < hq ? hp : hq;
	seg_settle(k, g);
}

/* Whether extent i goes before extent j (j < 0: none yet). */
static bool
sky_better(const MpPlacer *P, int i, int j)
{
	if (j < 0)
		return true;
	if (P->prio[i] != P->prio[j])
		return P->prio[i] > P->prio[j];
	if (P->b[i].size != P->b[j].size)
		return P->b[i].size > P->b[j].size;
	return i < j;
}

/* The priorities: area (bytes x steps), size or length, each times a
 * factor in [0.85, 1.15) drawn from the seed when perturbed (the seed also
 * picks which of the three). */
static void
sky_prio(MpPlacer *P, MpMethod m, uint64_t seed)
{
	int mode = m == MP_SKYLINE_PERTURBED ? (int)(seed % 3) : m - MP_SKYLINE_AREA;
	uint64_t z = seed * 0x9e3779b97f4a7c15ull;

	for (int i = 0; i < P->n; i++) {
		const MpExtent *x = &P->b[i];
		double len = (double)x->end - (double)x->start + 1;
		double p = mode == 0 ? (double)x->size * len : mode == 1 ? (double)x->size : len;
		if (m == MP_SKYLINE_PERTURBED) {
			uint64_t r = (z += 0x9e3779b97f4a7c15ull);
			r = (r ^ (r >> 30)) * 0xbf58476d1ce4e5b9ull;
			r = (r ^ (r >> 27)) * 0x94d049bb133111ebull;
			r ^= r >> 31;
			p *= 0.85 + 0.3 * (double)(r >> 11) / 9007199254740992.0;
		}
		P->prio[i] = p;
	}
}

/* The first position of the start order whose extent starts at l or later. */
static int
first_from(const MpPlacer *P, int l)
{
	int a = 0, z = P->n;

	while (a < z) {
		int mid = a + (z - a) / 2;
		if (P->b[P->bys[mid]].start < l)
			a = mid + 1;
		else
			z = mid;
	}
	return a;
}

/* Node x of the tree from its children. */
static void
tree_pull(MpPlacer *P, int x)
{
	int l = 2 * x, r = 2 * x + 1;

	P->min_end[x] = P->min_end[l] < P->min_end[r] ? P->min_end[l] : P->min_end[r];
	P->top[x] = P->top[r] < 0 || (P->top[l] >= 0 && sky_better(P, P->top[l], P->top[r]))
	            ? P->top[l] : P->top[r];
}

/* Every extent unplaced: the leaves in start order, then the nodes. */
static void
tree_build(MpPlacer *P)
{
	for (int p = 0; p < P->m; p++) {
		int i = p < P->n ? P->bys[p] : -1;
		P->min_end[P->m + p] = i >= 0 ? P->b[i].end : INT_MAX;
		P->top[P->m + p] = i;
	}
	for (int x = P->m - 1; x > 0; x--)
		tree_pull(P, x);
}

/* The extent at position p of the start order is placed. */
static void
tree_remove(MpPlacer *P, int p)
{
	int x = P->m + p;

	P->min_end[x] = INT_MAX;
	P->top[x] = -1;
	for (x /= 2; x > 0; x /= 2)
		tree_pull(P, x);
}

/* The unplaced extent that goes first among those at positions >= a of the
 * start order that end by step r (those start at or after the segment's
 * first step and, ending by r, lie within it), or better than *pick: a
 * descent that skips every subtree whose earliest end is after r or whose
 * first extent goes after *pick, and takes a subtree's first extent at once
 * when it fits. *pos is its position; false when out of work. */
static bool
tree_pick(MpPlacer *P, int x, int lo, int hi, int a, int r, int *pick, int *pos)
{
	if (hi <= a || P->min_end[x] > r || (*pick >= 0 && !sky_better(P, P->top[x], *pick)))
		return true;
	if (!spend(P, NODE_COST))
		return false;
	if (lo >= a && P->b[P->top[x]].end <= r) {
		/* the first of the subtree fits: nothing below goes before it */
		*pick = P->top[x];
		while (x < P->m)        /* its position: down to its leaf */
			x = P->top[2 * x] == *pick ? 2 * x : 2 * x + 1;
		*pos = x - P->m;
		return true;
	}
	int mid = lo + (hi - lo) / 2, l = 2 * x, rr = 2 * x + 1;
	/* the child whose first extent goes first, first: the other is then
	 * more often pruned */
	if (P->top[rr] >= 0 && (P->top[l] < 0 || sky_better(P, P->top[rr], P->top[l])))
		return tree_pick(P, rr, mid, hi, a, r, pick, pos) &&
		       tree_pick(P, l, lo, mid, a, r, pick, pos);
	return tree_pick(P, l, lo, mid, a, r, pick, pos) &&
	       tree_pick(P, rr, mid, hi, a, r, pick, pos);
}

static int64_t
skyline(MpPlacer *P, MpMethod m, uint64_t seed)
{
	Sky k = {P, P->seg, 0, P->heap, 0};
	MpExtent *b = P->b;
	int left = P->n;
	int64_t top = 0;

	sky_prio(P, m, seed);
	tree_build(P);
	seg_new(&k, 0, P->lo, P->hi, -1, -1);
	while (left > 0) {
		int g = heap_pop(&k), pick = -1, at = -1;
		int l = k.seg[g].l, r = k.seg[g].r;
		if (!spend(P, SEG_COST))
			return -1;
		if (!tree_pick(P, 1, 0, P->m, first_from(P, l), r, &pick, &at))
			return -1;
		if (pick < 0) {
			sky_lift(&k, g);
			continue;
		}
		sky_put(&k, g, &b[pick]);
		tree_remove(P, at);
		left--;
		top = b[pick].off + b[pick].size > top ? b[pick].off + b[pick].size : top;
	}
	return top;
}

/* ------------------------------------------------------------ skyline under a bound */

/* A value per step (0 .. m-1, m a power of 2) under range adds: a segment
 * tree whose node x holds the least and the most value below it, counting
 * the adds at x and below but not those above it. Leaf t is node m + t.
 * The operations run bottom up or along one path, without recursion: they
 * are the inner loop of the search. */
typedef struct Range {
	int64_t *mn, *mx, *add;
	int m;
} Range;

/* Step t holds v[t] (0 when v is NULL) for t < n, the steps after it `pad`. */
static void
rg_build(Range *R, const int64_t *v, int n, int64_t pad)
{
	for (int t = 0; t < R->m; t++) {
		R->mn[R->m + t] = R->mx[R->m + t] = t >= n ? pad : v ? v[t] : 0;
		R->add[R->m + t] = 0;
	}
	for (int x = R->m - 1; x > 0; x--) {
		R->add[x] = 0;
		R->mn[x] = R->mn[2 * x] < R->mn[2 * x + 1] ? R->mn[2 * x] : R->mn[2 * x + 1];
		R->mx[x] = R->mx[2 * x] > R->mx[2 * x + 1] ? R->mx[2 * x] : R->mx[2 * x + 1];
	}
}

/* Adds v to the whole of node x. */
static inline void
rg_bump(Range *R, int x, int64_t v)
{
	R->mn[x] += v;
	R->mx[x] += v;
	R->add[x] += v;
}

/* Node x's least and most value again from its children's; false when
 * they stay the same. */
static inline bool
rg_pull(Range *R, int x)
{
	int64_t a = R->mn[2 * x], b = R->mn[2 * x + 1], c = R->mx[2 * x], d = R->mx[2 * x + 1];
	int64_t mn = R->add[x] + (a < b ? a : b), mx = R->add[x] + (c > d ? c : d);
	bool changed = mn != R->mn[x] || mx != R->mx[x];

	R->mn[x] = mn;
	R->mx[x] = mx;
	return changed;
}

/* Adds v to steps l..r (l <= r), bottom up: to the nodes inside l..r whose
 * parents are not (where a recursive descent stops, so add[] holds what it
 * always held), then pulls the nodes partly inside, the ancestors of leaf
 * l that start before l and those of leaf r that end after r, level by
 * level. Above the node where those two paths meet only the path changes:
 * a node that stays the same leaves the ones above it the same. */
static void
rg_add(Range *R, int l, int r, int64_t v)
{
	int a = R->m + l, b = R->m + r + 1;     /* the leaves a .. b - 1 */

	for (int lo = a, hi = b; lo < hi; lo /= 2, hi /= 2) {
		if (lo & 1)
			rg_bump(R, lo++, v);
		if (hi & 1)
			rg_bump(R, --hi, v);
	}
	for (int i = 1; a >> i > 0; i++) {
		int x = a >> i, y = (b - 1) >> i;
		bool px = (x << i) != a, py = ((b >> i) << i) != b;
		if (x == y) {
			if ((px || py) && !rg_pull(R, x))
				break;
			continue;
		}
		if (px)
			rg_pull(R, x);
		if (py)
			rg_pull(R, y);
	}
}

/* The most value at steps l..r (l <= r): over the nodes rg_add would add
 * to, bottom up, a the most of those taken from the left so far and b of
 * those from the right, each counting the adds up to the node that holds
 * them all (lo - 1, and hi), then, once the ends meet, the adds above it.
 * INT64_MIN: none taken yet (no step holds it). */
static int64_t
rg_max(const Range *R, int l, int r)
{
	int64_t a = INT64_MIN, b = INT64_MIN;
	int lo = R->m + l, hi = R->m + r + 1;

	while (lo < hi) {
		if (lo & 1) {
			a = R->mx[lo] > a ? R->mx[lo] : a;
			lo++;
		}
		if (hi & 1) {
			hi--;
			b = R->mx[hi] > b ? R->mx[hi] : b;
		}
		lo /= 2, hi /= 2;
		if (a != INT64_MIN && lo > 1)   /* lo 1: a is the root's */
			a += R->add[lo - 1];
		if (b != INT64_MIN)
			b += R->add[hi];
	}
	for (int x = (lo - 1) / 2; a != INT64_MIN && x > 0; x /= 2)
		a += R->add[x];
	for (int x = hi / 2; b != INT64_MIN && x > 0; x /= 2)
		b += R->add[x];
	return a > b ? a : b;
}

/* The first step at or after l whose value is above h, every value being
 * at least h (-1: none): down the path to leaf l, keeping each right
 * sibling off it with the adds over it; then leaf l, else the deepest of
 * those siblings that holds such a step, and down it to the first one. */
static int
rg_above(const Range *R, int l, int64_t h)
{
	int sib[32], n = 0, x = 1;     /* a level each: m is an int */
	int64_t over[32], above = 0;

	for (int half = R->m / 2; half > 0; half /= 2) {
		above += R->add[x];
		x *= 2;
		if (l & half)
			x++;
		else
			sib[n] = x + 1, over[n++] = above;
	}
	if (R->mx[x] + above > h)
		return l;
	while (n > 0 && R->mx[sib[n - 1]] + over[n - 1] <= h)
		n--;
	if (n-- == 0)
		return -1;
	for (x = sib[n], above = over[n]; x < R->m;) {
		above += R->add[x];
		x = R->mx[2 * x] + above > h ? 2 * x : 2 * x + 1;
	}
	return x - R->m;
}

/* The value at step t. */
static int64_t
rg_get(const Range *R, int t)
{
	int64_t v = R->mn[R->m + t];

	for (int x = (R->m + t) / 2; x > 0; x /= 2)
		v += R->add[x];
	return v;
}

enum {
	BRANCH = 4,             /* extents tried on a segment, best first */
	TRY_NODES = 8,          /* a try's decisions: TRY_NODES n + 64 at most */
	ATTEMPT_RESTARTS = 32,  /* tries that fail a bound */
};

/* A decision of the search: on the lowest segment l..r of the skyline at
 * height h, one of the best extents that lie within it, or else a lift. */
typedef struct Frame {
	int l, r;
	int64_t h;
	int cand[BRANCH];
	int nc, next;
	int put;                /* the extent placed now, or -1 */
	int64_t lift;           /* the lift applied now, or 0 */
	bool lifted;            /* the lift was tried */
} Frame;

typedef struct Bounded {
	MpPlacer *P;
	Range sky;              /* the skyline's height at each step */
	Range need;             /* the height plus the unplaced bytes live at
	                           each step: what the top will be at least */
	int64_t *load;          /* [steps] the bytes live at each step */
	char *placed;
	Frame *f;
	int nf, left;
} Bounded;

/* A frame on the lowest segment of the skyline, with its candidates: the
 * unplaced extents that start and end within it, best first. */
static bool
bd_push(Bounded *B)
{
	MpPlacer *P = B->P;
	int l = 0, x = 1;
	int64_t h = B->sky.mn[1], above = 0;

	while (x < B->sky.m) {  /* down to the first lowest step */
		above += B->sky.add[x];
		x = B->sky.mn[2 * x] + above == h ? 2 * x : 2 * x + 1;
	}
	l = x - B->sky.m;
	int r = rg_above(&B->sky, l, h) - 1;
	Frame *F = &B->f[B->nf++];
	*F = (Frame){l, r, h, {0}, 0, 0, -1, 0, false};
	for (int p = first_from(P, l + P->lo); p < P->n; p++) {
		int i = P->bys[p];
		if (P->b[i].start - P->lo > r)
			break;
		if (!spend(P, 1))
			return false;
		if (B->placed[i] || P->b[i].end - P->lo > r ||
		    (F->nc == BRANCH && !sky_better(P, i, F->cand[BRANCH - 1])))
			continue;
		int k = F->nc < BRANCH ? F->nc++ : BRANCH - 1;
		for (; k > 0 && sky_better(P, i, F->cand[k - 1]); k--)
			F->cand[k] = F->cand[k - 1];
		F->cand[k] = i;
	}
	return true;
}

/* One depth-first search for a placement with every step at most bound
 * high, within `nodes` decisions: true when found (the offsets in P->b). */
static bool
bd_search(Bounded *B, int64_t bound, int64_t nodes)
{
	MpPlacer *P = B->P;
	int steps = P->hi - P->lo + 1;

	rg_build(&B->sky, NULL, steps, INT64_MAX / 4);   /* beyond the steps: never lowest */
	rg_build(&B->need, B->load, steps, 0);
	memset(B->placed, 0, (size_t)P->n);
	B->nf = 0;
	B->left = P->n;
	if (!bd_push(B))
		return false;
	while (B->nf > 0 && B->left > 0 && nodes-- > 0) {
		Frame *F = &B->f[B->nf - 1];
		if (!spend(P, SEG_COST))
			return false;
		if (F->put >= 0) {      /* undo the last decision here */
			MpExtent *x = &P->b[F->put];
			rg_add(&B->sky, x->start - P->lo, x->end - P->lo, -x->size);
			B->placed[F->put] = 0;
			B->left++;
			F->put = -1;
		}
		if (F->lift) {
			rg_add(&B->sky, F->l, F->r, -F->lift);
			rg_add(&B->need, F->l, F->r, -F->lift);
			F->lift = 0;
		}
		if (F->next < F->nc) {
			int i = F->cand[F->next++];
			MpExtent *x = &P->b[i];
			x->off = F->h;
			rg_add(&B->sky, x->start - P->lo, x->end - P->lo, x->size);
			B->placed[i] = 1;
			B->left--;
			F->put = i;
			if (B->left > 0 && !bd_push(B))
				return false;
			continue;
		}
		if (!F->lifted) {
			/* no extent fits, or none led to a placement: raise the
			 * segment to its lower neighbour, unless some step of it
			 * would then need more than the bound */
			F->lifted = true;
			int64_t hp = F->l > 0 ? rg_get(&B->sky, F->l - 1) : INT64_MAX;
			int64_t hq = F->r + 1 < steps ? rg_get(&B->sky, F->r + 1) : INT64_MAX;
			int64_t to = hp < hq ? hp : hq;
			if (to != INT64_MAX &&
			    rg_max(&B->need, F->l, F->r) + (to - F->h) <= bound) {
				F->lift = to - F->h;
				rg_add(&B->sky, F->l, F->r, F->lift);
				rg_add(&B->need, F->l, F->r, F->lift);
				if (!bd_push(B))
					return false;
				continue;
			}
		}
		B->nf--;
	}
	return B->left == 0;
}

/* The skyline under a bound: starts from the placement in P->b (the best
 * so far, top t) and looks for one whose top is at most a bound between
 * the floor f (the most bytes live at one step) and t, halving [f, t) on
 * each answer. Under a bound the skyline rises over a segment only when no
 * step of it then needs more than the bound (its height plus the unplaced
 * bytes live there), and when it cannot, the search backtracks to the
 * latest decision and tries the next of the BRANCH best extents there.
 * Each try is a depth-first search of at most TRY_NODES n + 64 decisions
 * (a path holds n placements and at most 2n + 1 lifts: 4n + 4 frames), with
 * priorities by area, size, length and then perturbed as the skyline's
 * restarts; ATTEMPT_RESTARTS tries fail a bound. O(log steps) a decision,
 * plus the extents that start within the segment. Returns the least top
 * found, its offsets in P->b. */
static int64_t
bounded(MpPlacer *P)
{
	Arena s;
	ar_init(&s);
	int n = P->n, steps = P->hi - P->lo + 1;
	Bounded B = {P, {NULL, NULL, NULL, 1}, {NULL, NULL, NULL, 1}, NULL, NULL, NULL, 0, 0};
	int64_t *best = ar_array(&s, (size_t)n + 1, sizeof *best), top = 0;
	int64_t lo = 0;         /* the floor, then the least bound not failed */
	uint64_t seed = 0;

	while (B.sky.m < steps + 1)     /* a step beyond the last, for rg_above */
		B.sky.m *= 2;
	B.need.m = B.sky.m;
	for (int k = 0; k < 2; k++) {
		Range *R = k ? &B.need : &B.sky;
		R->mn = ar_array(&s, 2 * (size_t)R->m, sizeof *R->mn);
		R->mx = ar_array(&s, 2 * (size_t)R->m, sizeof *R->mx);
		R->add = ar_array(&s, 2 * (size_t)R->m, sizeof *R->add);
	}
	B.load = ar_array(&s, (size_t)steps + 1, sizeof *B.load);
	for (int i = 0; i < n; i++) {
		B.load[P->b[i].start - P->lo] += P->b[i].size;
		B.load[P->b[i].end - P->lo + 1] -= P->b[i].size;
	}
	for (int t = 0; t < steps; t++) {
		B.load[t] += t ? B.load[t - 1] : 0;
		lo = B.load[t] > lo ? B.load[t] : lo;
	}
	B.placed = ar_alloc(&s, (size_t)n + 1);
	B.f = ar_array(&s, 4 * (size_t)n + 4, sizeof *B.f);
	for (int i = 0; i < n; i++) {
		best[i] = P->b[i].off;
		top = P->b[i].off + P->b[i].size > top ? P->b[i].off + P->b[i].size : top;
	}
	while (lo < top && P->work > 0) {
		int64_t bound = lo + (top - lo) / 2 / MP_ALIGN * MP_ALIGN;
		bool found = false;
		for (int r = 0; r < ATTEMPT_RESTARTS && !found && P->work > 0; r++, seed++) {
			sky_prio(P, seed < 3 ? (MpMethod)(MP_SKYLINE_AREA + (int)seed) : MP_SKYLINE_PERTURBED,
			         seed);
			found = bd_search(&B, bound, TRY_NODES * (int64_t)n + 64);
		}
		if (!found) {
			lo = bound + MP_ALIGN;
			continue;
		}
		top = 0;
		for (int i = 0; i < n; i++) {
			best[i] = P->b[i].off;
			top = P->b[i].off + P->b[i].size > top ? P->b[i].off + P->b[i].size : top;
		}
	}
	for (int i = 0; i < n; i++)
		P->b[i].off = best[i];
	ar_free(&s);
	return top;
}

/* ------------------------------------------------------------ entry */

MpPlacer *
mp_placer(MpExtent *b, int n, int64_t work, Arena *a)
{
	MpPlacer *P = ar_alloc(a, sizeof *P);
	Ord *key = ar_array(a, (size_t)n + 1, sizeof *key);

	*P = (MpPlacer){.b = b, .n = n, .work = work, .a = a};
	P->lo = n ? b[0].start : 0;
	P->hi = n ? b[0].end : 0;
	for (int i = 0; i < n; i++) {
		P->lo = b[i].start < P->lo ? b[i].start : P->lo;
		P->hi = b[i].end > P->hi ? b[i].end : P->hi;
		key[i] = (Ord){{b[i].start, 0, 0}, i};
	}
	P->placed = ar_array(a, (size_t)n + 1, sizeof *P->placed);
	P->bys = sorted(P, key);
	for (P->m = 1; P->m < n; P->m *= 2)
		;
	P->min_end = ar_array(a, 2 * (size_t)P->m, sizeof *P->min_end);
	P->top = ar_array(a, 2 * (size_t)P->m, sizeof *P->top);
	P->prio = ar_array(a, (size_t)n + 1, sizeof *P->prio);
	/* a placement adds at most two segments and three heap entries, a
	 * lift removes a segment and adds an entry: 2n + 1 segments, 5n + 1
	 * entries */
	P->seg = ar_array(a, 2 * (size_t)n + 1, sizeof *P->seg);
	P->heap = ar_array(a, 5 * (size_t)n + 2, sizeof *P->heap);
	return P;
}

int64_t
mp_work_left(const MpPlacer *P)
{
	return P->work;
}

void
mp_work_set(MpPlacer *P, int64_t work)
{
	P->work = work;
}

int64_t
mp_place(MpPlacer *P, MpMethod m, uint64_t seed)
{
	ir_assert(m > MP_LINEAR_SCAN && m < MP_METHOD_COUNT);
	if (P->n == 0)
		return 0;
	if (m == MP_SKYLINE_BOUNDED)
		return bounded(P);
	if (m >= MP_SKYLINE_AREA)
		return skyline(P, m, seed);
	if (m == MP_SIZE_BEST_FIT || m == MP_SIZE_FIRST_FIT) {
		P->by_size = P->by_size ? P->by_size : size_order(P);
		return greedy(P, P->by_size, m == MP_SIZE_BEST_FIT);
	}
	P->by_breadth = P->by_breadth ? P->by_breadth : breadth_order(P);
	return greedy(P, P->by_breadth, m == MP_BREADTH_BEST_FIT);
}
