/* passes/eval/memplan.c -- static memory planning: one arena, fixed offsets.
 *
 * Reads Dag.persistent_buf (and persistent[]), MemEval.inst (start, end,
 * owned, base) and MemEval.temp_bytes; writes MemEval.persistent_offset,
 * MemEval.offset for every owning instance (views keep -1: the emitter
 * addresses them through their base) and MemEval.temp_offset for every step
 * that has temporaries. Returns arena bytes.
 *
 * Arena layout, every offset a multiple of MP_ALIGN (256):
 *   [0, P)        the persistent buffers, live for the whole training step, one after
 *                 the other in Dag order (per param: weight, master copy,
 *                 optimizer states), each rounded up to 256 bytes; bytes of
 *                 persistent[] that the Dag does not list buffer by buffer
 *                 (Dags not made by passes/graph/lower.c) follow as one extent.
 *   [P, arena)    the instances and the per-step temporary extents, each live
 *                 over an interval of steps (an instance: from its producing
 *                 step through its last live step, widened over the views of
 *                 it; a step's temporaries -- workspace and accumulation
 *                 temporaries -- one extent live during that step only).
 * So the arena holds every byte the MemEval counts, and arena bytes >= peak:
 * fragmentation (arena - peak) is the alignment padding plus the gaps the
 * placement leaves.
 *
 * Placement, above P, is the smallest of several plans:
 * - A linear scan over time with best fit, always: extents in order of
 *   their first step (larger first within a step); before placing the
 *   extents that start at step s, every extent whose last step is before s is
 *   freed and its range merged with free neighbours; an extent takes the
 *   smallest free range that holds it (lowest offset on ties), else extends
 *   a free range that ends at the top, else goes on top. Free ranges are
 *   kept in a treap by (size, offset) for best fit and in two hashes by
 *   their start and end offsets for merging, the extents live in lists by
 *   last step: O(n log n) in the number of extents (a 1M-op graph, 3.1M
 *   extents, plans in about 0.4 s of CPU). The scan also sums the
 *   extents live at each step: the most, with P, is the floor
 *   (MemEval.arena_floor), below which no placement can go.
 * - When the scan is above the floor and there are at most MP_SEARCH_MAX
 *   extents, the placements of placement.c on a copy of the extents, in
 *   turn: the skyline by area, size and length; greedy by size and by
 *   breadth (Pisarchyk & Lee 2020), best and first fit; the skyline under a
 *   bound, a search from the best plan so far for one whose top is at most
 *   a bound halfway to the floor; then perturbed skylines, MP_RESTARTS at
 *   most. Each costs O(n^2) at worst, so they share a count of work linear
 *   in the extents (counted, not timed: the plan is the same on every
 *   machine), except greedy by size with best fit, which on up to
 *   MP_GREEDY_MAX extents always runs, as it did alone before the search:
 *   no arena is larger than that plan's. The search stops at the first
 *   plan that reaches the floor.
 * The smallest top wins (the earlier method on ties). On every example
 * (default dims and B=8, -O0, -O1 and -O2) it is within 0.4% of the peak,
 * and on the Checkmate graphs at the floor (ResNet-50 at -O2 too, +4.8%
 * before the bounded search) but for the random ones, whose bytes are so
 * few that 256-byte rounding puts the floor itself 6-9% over the peak, and
 * which stay up to 5.4% over the floor (make bench-arena). Scratch is 4 bytes a
 * extent (its instance or step), 4 a step while the extents are sorted, 4
 * an extent and 4 a step during the scan, about 64 a free range, and for
 * the search about 600 bytes an extent: sizes, starts and ends are read from the MemEval and
 * placements are made in place in MemEval.offset and temp_offset, so on a
 * 300k-op graph (no search) the planner is not the peak.
 */
#include <stdlib.h>
#include <string.h>

#include "eval.h"

/* The units of work the search may spend (placement.c: about 2.5 ns each):
 * MP_WORK, plus MP_WORK_EXTENT an extent, so that a skyline or two fit on a
 * large graph too -- at most about 0.2 s on the examples, 0.3 s on
 * MP_SEARCH_MAX extents, linear in the extents; only a graph whose plans
 * stay above the floor spends it all. 2^25 left DenseNet's -O2 plan with
 * its lower peak (the nested DP's second background) at +4.7% (B=8:
 * +7.9%) over its peak; 2^26 reaches +0.64% (+1.34%). */
enum {
	MP_WORK = 1 << 26,
	MP_WORK_EXTENT = 512,
	MP_RESTARTS = 64,       /* perturbed skylines at most */
};

static int64_t
align_up(int64_t n)
{
	return (n + MP_ALIGN - 1) / MP_ALIGN * MP_ALIGN;
}

/* ------------------------------------------------------------ free ranges */

/* The free ranges by size: a set of distinct keys (size, offset) (treap.c),
 * nodes in a pool. */
typedef struct Treap {
	TpNode *n;
	int nn, root;
	uint64_t seed;
	int cap, free;          /* pool size; erased nodes, linked through kid[0] */
	Arena *a;
} Treap;

static void
tr_insert(Treap *T, int64_t k1, int64_t k2)
{
	int x;
	uint64_t z = (T->seed += 0x9e3779b97f4a7c15ull);

	/* reuse erased nodes: the pool stays as large as the most free ranges
	 * at once, not the number of inserts */
	if (T->free >= 0) {
		x = T->free;
		T->free = T->n[x].kid[0];
	} else {
		T->n = ar_fit(T->a, T->n, T->nn, &T->cap, sizeof *T->n, 1024);
		x = T->nn++;
	}

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	T->n[x] = (TpNode){k1, k2, z ^ (z >> 31), {-1, -1}};
	tp_insert(T->n, &T->root, x);
}

static void
tr_unlink(Treap *T, int m)
{
	T->n[m].kid[0] = T->free;
	T->free = m;
}

static void
tr_erase(Treap *T, int64_t k1, int64_t k2)
{
	tr_unlink(T, tp_erase(T->n, &T->root, k1, k2));
}

/* The free ranges by their ends: an open-addressing hash (linear probing)
 * from a boundary offset to the range's other end. Merging a freed range
 * and growing the range that ends at the top only ask whether a free range
 * starts or ends exactly at an offset, so a hash answers in O(1) where an
 * ordered set by offset took a descent of a deep tree (a 1M-op graph keeps
 * 100k free ranges at once). Offsets are >= 0; a slot holds key + 1, 0
 * when empty, so a zeroed table is empty. */
typedef struct Bound {
	int64_t key1, other;
} Bound;

typedef struct Ends {
	Bound *slot;
	size_t mask, n;         /* capacity - 1 (a power of two); keys held */
	Arena *a;
} Ends;

enum { ENDS_MIN = 1024 };

static size_t
ends_home(const Ends *E, int64_t key)
{
	/* offsets are multiples of MP_ALIGN: Fibonacci hashing spreads them */
	return (size_t)(((uint64_t)key * 0x9e3779b97f4a7c15ull) >> 32) & E->mask;
}

/* The slot of key, or the empty slot where it would go. */
static size_t
ends_slot(const Ends *E, int64_t key)
{
	size_t i = ends_home(E, key);

	while (E->slot[i].key1 != 0 && E->slot[i].key1 != key + 1)
		i = (i + 1) & E->mask;
	return i;
}

/* The other end of the free range with boundary key, or -1. */
static int64_t
ends_get(const Ends *E, int64_t key)
{
	const Bound *b = E->slot ? &E->slot[ends_slot(E, key)] : NULL;

	return b && b->key1 != 0 ? b->other : -1;
}

static void
ends_put(Ends *E, int64_t key, int64_t other)
{
	size_t i;

	/* at most half full: probes stay short. Rehashed into a new table;
	 * the old one stays in the scratch arena, a geometric series */
	if (!E->slot || 2 * (E->n + 1) > E->mask + 1) {
		Bound *old = E->slot;
		size_t oldcap = old ? E->mask + 1 : 0;
		size_t cap = old ? 2 * oldcap : ENDS_MIN;
		E->slot = ar_array(E->a, cap, sizeof *E->slot);
		E->mask = cap - 1;
		for (size_t j = 0; j < oldcap; j++)
			if (old[j].key1 != 0)
				E->slot[ends_slot(E, old[j].key1 - 1)] = old[j];
	}
	i = ends_slot(E, key);
	E->n += E->slot[i].key1 == 0;
	E->slot[i] = (Bound){key + 1, other};
}

/* Removes key, which must be there. Linear probing deletes by shifting
 * back the entries after it that would no longer be found, so no
 * tombstones build up over millions of frees. */
static void
ends_del(Ends *E, int64_t key)
{
	size_t i = ends_slot(E, key), j = i;

	ir_assert(E->slot[i].key1 != 0);
	for (;;) {
		j = (j + 1) & E->mask;
		if (E->slot[j].key1 == 0)
			break;
		size_t h = ends_home(E, E->slot[j].key1 - 1);
		/* j's entry may move to i unless its home lies in (i, j] */
		if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
			continue;
		E->slot[i] = E->slot[j];
		i = j;
	}
	E->slot[i].key1 = 0;
	E->n--;
}

typedef struct Space {
	Treap by_size;          /* keys (size, offset) */
	Ends starts;            /* offset -> end of the range starting there */
	Ends ends;              /* end offset -> offset of the range ending there */
	int64_t top;            /* highest end offset handed out so far */
} Space;

static void
gap_add(Space *sp, int64_t off, int64_t end)
{
	tr_insert(&sp->by_size, end - off, off);
	ends_put(&sp->starts, off, end);
	ends_put(&sp->ends, end, off);
}

static void
gap_del(Space *sp, int64_t off, int64_t end)
{
	tr_erase(&sp->by_size, end - off, off);
	ends_del(&sp->starts, off);
	ends_del(&sp->ends, end);
}

/* Best fit, else the free range ending at the top grown, else the top. */
static int64_t
sp_alloc(Space *sp, int64_t size)
{
	int g = tp_erase_ceil(sp->by_size.n, &sp->by_size.root, size, INT64_MIN);
	int64_t off;

	if (g >= 0) {
		int64_t gsize = sp->by_size.n[g].k1;
		off = sp->by_size.n[g].k2;
		tr_unlink(&sp->by_size, g);
		ends_del(&sp->starts, off);
		if (gsize > size) {
			/* the rest of the range keeps its end */
			ends_put(&sp->starts, off + size, off + gsize);
			ends_put(&sp->ends, off + gsize, off + size);
			tr_insert(&sp->by_size, gsize - size, off + size);
		} else {
			ends_del(&sp->ends, off + gsize);
		}
		return off;
	}
	off = ends_get(&sp->ends, sp->top);
	if (off >= 0)
		gap_del(sp, off, sp->top);
	else
		off = sp->top;
	sp->top = off + size;
	return off;
}

/* Returns [off, off + size) to the free ranges, merged with neighbours. */
static void
sp_free(Space *sp, int64_t off, int64_t size)
{
	int64_t end = off + size, r = ends_get(&sp->starts, end);
	int64_t l = ends_get(&sp->ends, off);

	if (r >= 0) {
		gap_del(sp, end, r);
		end = r;
	}
	if (l >= 0) {
		/* grow the left neighbour: its start stays */
		tr_erase(&sp->by_size, off - l, l);
		ends_del(&sp->ends, off);
		ends_put(&sp->starts, l, end);
		ends_put(&sp->ends, end, l);
		tr_insert(&sp->by_size, end - l, l);
		return;
	}
	gap_add(sp, off, end);
}

/* ------------------------------------------------------------ the plan */

/* The extents to place, 4 bytes each on a big graph: extent i is an owning
 * instance (id[i] = its index) or a step's temporaries (id[i] = -1 -
 * step). Size and start are read from the MemEval, and so is the end while
 * it is parked in MemEval.offset (see mp_widen_ends); the placement made is
 * then kept in the extent's own destination (MemEval.offset,
 * temp_offset[s]), base added at the end. The extents are in the order the
 * linear scan takes them: by start, larger first within a start, then by
 * rank. */
typedef struct Extents {
	MemEval *ev;
	int *id;                /* [n] */
	int lo, hi;             /* the steps extents start and end at */
	int n;
} Extents;

static int64_t
b_size(const Extents *B, int i)
{
	int id = B->id[i];
	return align_up(id >= 0 ? B->ev->inst[id].owned : B->ev->temp_bytes[-1 - id]);
}

static int
b_start(const Extents *B, int i)
{
	return B->id[i] >= 0 ? B->ev->inst[B->id[i]].start : -1 - B->id[i];
}

/* Extent i's last live step, widened over its views: only while the ends
 * are parked in MemEval.offset, before any placement. */
static int
b_parked_end(const Extents *B, int i)
{
	return B->id[i] >= 0 ? (int)B->ev->offset[B->id[i]] : -1 - B->id[i];
}

static int64_t *
b_off(const Extents *B, int i)
{
	int id = B->id[i];
	return id >= 0 ? &B->ev->offset[id] : &B->ev->temp_offset[-1 - id];
}

/* The tie-break of extents of one size and start: the instances in index
 * order, then the temporaries in step order. */
static int64_t
b_rank(const Extents *B, int i)
{
	return B->id[i] >= 0 ? B->id[i] : (int64_t)B->ev->ninst - 1 - B->id[i];
}

/* Counting-sort buckets for steps lo..hi: pos[k - lo] is where key k's
 * first goes. Zeroed by the caller. */
static void
bucket_starts(int *pos, int lo, int hi)
{
	for (int k = lo; k < hi; k++)
		pos[k - lo + 1] += pos[k - lo];
}

/* Insertion sort of a few extents of one start, larger first, then rank. */
static void
sort_run(Extents *B, int lo, int hi)
{
	for (int i = lo + 1; i < hi; i++) {
		int x = B->id[i], j = i;
		int64_t sx, rx;
		sx = b_size(B, i);
		rx = b_rank(B, i);
		for (; j > lo; j--) {
			int64_t sp = b_size(B, j - 1);
			if (sp > sx || (sp == sx && b_rank(B, j - 1) < rx))
				break;
			B->id[j] = B->id[j - 1];
		}
		B->id[j] = x;
	}
}

/* Frees the extents of the list that starts at f (linked through next[]);
 * returns the empty list. */
static int
free_list(const Extents *B, Space *sp, const int *next, int f, int64_t *bytes)
{
	for (; f >= 0; f = next[f]) {
		int64_t size = b_size(B, f);
		sp_free(sp, *b_off(B, f), size);
		*bytes -= size;
	}
	return -1;
}

/* Linear scan over time with best fit: sets every extent's placement;
 * returns the top, and in *most the most bytes live at one step (extents
 * rounded up). Before the extents of a start are placed, every extent that
 * ended earlier is freed; the order of those frees does not matter, freed
 * ranges merge with their neighbours whatever it is. The extents placed
 * and not yet freed are kept in lists by last step (head[e - lo], linked
 * through next[]), drained in step order: O(1) an extent, where a heap by
 * last step cost a sift through the 800k extents a 1M-op graph keeps live
 * at once. An extent that ended before its own start (none does in a Dag
 * the liveness evaluator made, but the scan takes any) waits in `late`
 * for the next placement. Each extent's end is read where mp_widen_ends
 * parked it, just before its placement replaces it. */
static int64_t
linear_scan(const Extents *B, int64_t *most, Arena *a)
{
	Space sp = {{NULL, 0, -1, 1, 0, -1, a}, {NULL, 0, 0, a}, {NULL, 0, 0, a}, 0};
	int *head = ar_array(a, (size_t)B->hi - (size_t)B->lo + 1, sizeof *head);
	int *next = ar_array(a, (size_t)B->n + 1, sizeof *next);
	int late = -1, drained = B->lo;    /* lists of the steps before it are empty */
	int64_t bytes = 0;      /* live now: after the frees and placements
	                           of a start, what is live at that step */

	for (int e = B->lo; e <= B->hi; e++)
		head[e - B->lo] = -1;
	*most = 0;
	for (int i = 0; i < B->n; i++) {
		int st = b_start(B, i), end = b_parked_end(B, i);
		if (late >= 0)
			late = free_list(B, &sp, next, late, &bytes);
		for (; drained < st; drained++)
			head[drained - B->lo] = free_list(B, &sp, next, head[drained - B->lo], &bytes);
		*b_off(B, i) = sp_alloc(&sp, b_size(B, i));
		if (end < drained) {
			next[i] = late;
			late = i;
		} else {
			next[i] = head[end - B->lo];
			head[end - B->lo] = i;
		}
		bytes += b_size(B, i);
		*most = bytes > *most ? bytes : *most;
	}
	return sp.top;
}

void
mp_widen_ends(const MemEval *ev, int64_t *end)
{
	for (int k = 0; k < ev->ninst; k++)
		end[k] = ev->inst[k].end;
	for (int k = 0; k < ev->ninst; k++) {
		int b = ev->inst[k].base;
		if (b >= 0 && b != k && b < ev->ninst && end[k] > end[b])
			end[b] = end[k];
	}
}

/* The persistent buffers at [0, P), in Dag order; returns P. */
static int64_t
place_persistent(const Dag *d, MemEval *ev, Arena *a)
{
	int np = d ? d->npersistent : 0;
	int64_t pos = 0, listed = 0, total = 0;

	ev->persistent_offset = ar_alloc(a, sizeof *ev->persistent_offset * (size_t)(np + 1));
	for (int i = 0; i < np; i++) {
		ev->persistent_offset[i] = pos;
		pos += align_up(d->persistent_buf[i]);
		listed += d->persistent_buf[i];
	}
	for (int c = 0; d && c < CAT_COUNT; c++)
		total += d->persistent[c];
	ir_assert(listed <= total);
	return pos + align_up(total - listed);
}

static bool
has_temp(const MemEval *ev, int s)
{
	return ev->temp_bytes && ev->temp_bytes[s] > 0;
}

/* The step range [lo, hi] of the extents' starts and ends. */
static void
step_range(const MemEval *ev, int *lo, int *hi)
{
	bool any = false;

	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		if (in->owned <= 0)
			continue;
		int end = (int)ev->offset[k];
		int x = in->start < end ? in->start : end;
		int y = in->start > end ? in->start : end;
		*lo = any && *lo < x ? *lo : x;
		*hi = any && *hi > y ? *hi : y;
		any = true;
	}
	for (int s = 0; s < ev->nsteps; s++)
		if (has_temp(ev, s)) {
			*lo = any && *lo < s ? *lo : s;
			*hi = any && *hi > s ? *hi : s;
			any = true;
		}
}

/* Fills B->id in linear-scan order: a counting sort by start, the extents
 * of a start sorted by size. pos is zeroed scratch for steps lo..hi. */
static void
order_extents(Extents *B, int *pos)
{
	MemEval *ev = B->ev;
	int lo = B->lo, hi = B->hi;

	for (int k = 0; k < ev->ninst; k++)
		if (ev->inst[k].owned > 0)
			pos[ev->inst[k].start - lo + 1]++;
	for (int s = 0; s < ev->nsteps; s++)
		pos[s - lo + 1] += has_temp(ev, s);
	bucket_starts(pos, lo, hi);
	for (int k = 0; k < ev->ninst; k++)
		if (ev->inst[k].owned > 0)
			B->id[pos[ev->inst[k].start - lo]++] = k;
	for (int s = 0; s < ev->nsteps; s++)
		if (has_temp(ev, s))
			B->id[pos[s - lo]++] = -1 - s;
	for (int i = 0, j; i < B->n; i = j) {
		for (j = i + 1; j < B->n && b_start(B, j) == b_start(B, i); j++)
			;
		if (j - i > 1)
			sort_run(B, i, j);
	}
}

/* The extents as placement.c takes them, while their ends are parked. */
static MpExtent *
search_extents(const Extents *B, Arena *a)
{
	MpExtent *bl = ar_array(a, (size_t)B->n + 1, sizeof *bl);

	for (int i = 0; i < B->n; i++)
		bl[i] = (MpExtent){b_size(B, i), 0, b_start(B, i), b_parked_end(B, i)};
	return bl;
}

/* The search after the scan (or method `only` alone): each placement of
 * placement.c in turn on bl, and whenever one beats the best top so far,
 * its offsets replace the extents' placements. Stops at the floor (`most`,
 * the most bytes live at once). Greedy by size with best fit runs on up to
 * MP_GREEDY_MAX extents whatever the work left (granted its n(n+1)/2 units
 * on top); the others share MP_WORK, greedy not begun when it cannot end,
 * and once a placement runs out, only that granted one still runs.
 * Returns the top kept. */
static int64_t
search(const Extents *B, MpExtent *bl, int64_t top, int64_t most, MpMethod only, MpStats *st,
       double share, Arena *a)
{
	static const MpMethod order[] = {
		MP_SKYLINE_AREA, MP_SKYLINE_SIZE, MP_SKYLINE_LENGTH, MP_SIZE_BEST_FIT,
		MP_SIZE_FIRST_FIT, MP_BREADTH_BEST_FIT, MP_BREADTH_FIRST_FIT, MP_SKYLINE_BOUNDED,
		MP_SKYLINE_PERTURBED,
	};
	int64_t work = (int64_t)(share * (double)(MP_WORK + (int64_t)MP_WORK_EXTENT * B->n));
	MpPlacer *P = mp_placer(bl, B->n, work, a);
	int64_t best = only == MP_ALL ? top : INT64_MAX;
	int64_t greedy_cost = (int64_t)B->n * (B->n + 1) / 2;

	for (size_t j = 0; j < sizeof order / sizeof order[0] && best > most; j++) {
		MpMethod m = order[j];
		bool granted = m == MP_SIZE_BEST_FIT && B->n <= MP_GREEDY_MAX;
		int64_t left = mp_work_left(P);
		if ((only != MP_ALL && only != m) || (!granted && left <= 0) ||
		    (!granted && m < MP_SKYLINE_AREA && greedy_cost > left))
			continue;
		if (granted)
			mp_work_set(P, (left > 0 ? left : 0) + greedy_cost);
		/* the skyline under a bound starts from the best plan so far */
		if (m == MP_SKYLINE_BOUNDED)
			for (int i = 0; i < B->n; i++)
				bl[i].off = *b_off(B, i);
		for (int r = 1; r <= (m == MP_SKYLINE_PERTURBED ? MP_RESTARTS : 1) && best > most; r++) {
			int64_t before = mp_work_left(P);
			int64_t t = mp_place(P, m, (uint64_t)r);
			st->work += before - mp_work_left(P);
			if (t < 0) {
				mp_work_set(P, 0);      /* out: only the granted greedy now */
				break;
			}
			st->runs++;
			if (st->arena[m] < 0 || t < st->arena[m])
				st->arena[m] = t;
			if (t < best) {
				best = t;
				st->chosen = m;
				for (int i = 0; i < B->n; i++)
					*b_off(B, i) = bl[i].off;
			}
		}
	}
	return best == INT64_MAX ? top : best;
}

const char *
mp_method_name(MpMethod m)
{
	static const char *const name[MP_METHOD_COUNT] = {
		"linear scan", "greedy by size (best fit)", "greedy by size (first fit)",
		"greedy by breadth (best fit)", "greedy by breadth (first fit)",
		"skyline by area", "skyline by size", "skyline by length",
		"skyline, perturbed", "skyline under a bound",
	};
	return (unsigned)m < MP_METHOD_COUNT ? name[m] : "?";
}

static int64_t
plan_share(const Dag *d, MemEval *ev, Arena *a, MpMethod only, MpStats *st, double share)
{
	Arena scratch, buckets; /* extent lists, sort orders, treaps: gone on return */
	Extents B = {ev, NULL, 0, 0, 0};
	MpExtent *bl = NULL;
	MpStats mine;
	int ntemp = 0;
	int64_t base = place_persistent(d, ev, a), top, most;

	st = st ? st : &mine;
	memset(st, 0, sizeof *st);
	for (int m = 0; m < MP_METHOD_COUNT; m++)
		st->arena[m] = -1;
	ar_init(&scratch);
	for (int k = 0; k < ev->ninst; k++)   /* size the lists exactly: they are large */
		B.n += ev->inst[k].owned > 0;
	for (int s = 0; s < ev->nsteps; s++)
		ntemp += has_temp(ev, s);
	B.n += ntemp;
	/* no step with temporaries (an inference chain): no array of -1s */
	ev->temp_offset = ntemp ? ar_alloc(a, sizeof *ev->temp_offset * (size_t)(ev->nsteps + 1))
	                        : NULL;
	for (int s = 0; ntemp && s < ev->nsteps; s++)
		ev->temp_offset[s] = -1;
	ev->offset = ar_array(a, (size_t)ev->ninst + 1, sizeof *ev->offset);
	/* parked in MemEval.offset: the placement is made only after the
	 * extents have copied it */
	mp_widen_ends(ev, ev->offset);
	step_range(ev, &B.lo, &B.hi);
	B.id = ar_array(&scratch, (size_t)B.n + 1, sizeof *B.id);
	ar_init(&buckets);      /* a step's worth each: freed for the scan to reuse */
	order_extents(&B, ar_array(&buckets, (size_t)B.hi - (size_t)B.lo + 2, sizeof(int)));
	ar_free(&buckets);
	if (B.n <= MP_SEARCH_MAX && only != MP_LINEAR_SCAN)
		bl = search_extents(&B, &scratch);
	for (int k = 0; k < ev->ninst; k++)     /* views: no placement */
		if (ev->inst[k].owned <= 0)
			ev->offset[k] = -1;
	top = linear_scan(&B, &most, &scratch);
	st->arena[MP_LINEAR_SCAN] = top;
	if (bl && (only != MP_ALL || top > most))
		top = search(&B, bl, top, most, only, st, share, &scratch);
	for (int i = 0; i < B.n; i++)
		*b_off(&B, i) += base;
	ar_free(&scratch);
	st->nextents = B.n;
	st->floor = ev->arena_floor = base + most;
	for (int m = 0; m < MP_METHOD_COUNT; m++)
		st->arena[m] += st->arena[m] >= 0 ? base : 0;
	return base + top;
}

int64_t
mp_plan(const Dag *d, MemEval *ev, Arena *a)
{
	return plan_share(d, ev, a, MP_ALL, NULL, 1);
}

int64_t
mp_plan_share(const Dag *d, MemEval *ev, double share, Arena *a)
{
	return plan_share(d, ev, a, MP_ALL, NULL, share);
}

int64_t
mp_plan_with(const Dag *d, MemEval *ev, Arena *a, MpMethod only, MpStats *st)
{
	return plan_share(d, ev, a, only, st, 1);
}

/* Which acc entries of step `step` produce their gradient: the instances
 * the step produces after node.out name them (dag.h, step_prod order). An
 * out-of-place sum that replaced an earlier instance (Instance.replaces)
 * still needs a slot for its contribution unless that aliases view_src. */
static bool
acc_produces(const MemEval *ev, const DagNode *nd, int step, int j)
{
	int t = nd->acc[j].tensor;

	for (int k = ev->step_prod[step + 1] + nd->nout; k < ev->step_prod[step + 2]; k++)
		if (ev->inst[k].tensor == t)
			return !ev->inst[k].replaces || nd->acc[j].view_src >= 0;
	return false;
}

int64_t
mp_temp_layout(const Dag *d, const MemEval *ev, const Schedule *s,
               int step, int64_t *off)
{
	const DagNode *nd = &d->node[s->step[step]];
	int64_t pos = 0;
	for (int j = 0; j < nd->nacc; j++)
		off[j] = -1;
	/* element sizes 8, 4, 2, 1 in turn; bytes of a tensor are a multiple
	 * of its element size, so each part stays naturally aligned */
	for (int esz = 8; esz >= 1; esz /= 2)
		for (int j = 0; j < nd->nacc; j++) {
			const DagTensor *t = &d->t[nd->acc[j].tensor];
			int64_t e = t->bytes % 8 == 0 ? 8 : t->bytes % 4 == 0 ? 4 :
			            t->bytes % 2 == 0 ? 2 : 1;
			if (e != esz || acc_produces(ev, nd, step, j))
				continue;
			off[j] = pos;
			pos += t->bytes;
		}
	off[nd->nacc] = pos;
	return pos + dag_workspace(d, s->step[step]);
}
