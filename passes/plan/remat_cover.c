/* passes/plan/remat_cover.c -- the covering plans, --budget's knapsack:
 * which forward tensors to drop from their forward pass to their first
 * backward use, chosen as the least-cost cover of the steps over the
 * budget.
 *
 * With every gap kept (the -O0 plan, one step per base position), the
 * steps over the budget form a window [lo, hi]. A forward tensor whose
 * long gap (remat_model.c: from its last forward event to its first
 * backward use) starts before lo and ends after hi frees its bytes at
 * every step of the window when that gap alone is dropped: it is
 * recomputed right before that backward use, from inputs kept as they
 * are (their tails stay kept, so a recompute stretches them instead of
 * recomputing them too). Choosing what to drop is then a knapsack cover:
 * the least total producer cost whose bytes reach the window's largest
 * excess. It is solved exactly by a depth-first branch and bound (the
 * least cost per byte first, a fractional bound) within a counted work.
 *
 * The estimate leaves out what the late recomputes hold (their stretched
 * inputs, the recomputed instances), so each plan is scored by lv_eval;
 * when its peak is still over the budget, the cover is solved again for
 * that much more, a few times. Every scored plan joins the pool, where
 * the trim search (remat_trim.c) and the descent start from the cheapest
 * under the budget. The plans that the searches built from the base plan
 * by single moves stopped at 0.311% TDI on Checkmate's ResNet-50 at 0.8:
 * they dropped two 411 MB tensors of the third stage (300 cost) where
 * one 822 MB tensor of the second stage does (170); this cover is 0.279%.
 * Reads the Dag only; the work is counted, never timed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* The branch and bound's work per solve (a node, and each item its bound
 * looks at, is a unit: at most a few ms); the solves per rung (the first,
 * then one per overshoot the scoring finds). */
enum { COVER_WORK = 1000000, COVER_TRIES = 4, COVER_FINE = 50000, COVER_SIZE = 400000 };

typedef struct Item {
	int64_t bytes, cost;
	int t;
} Item;

typedef struct Cover {
	const Item *it;
	int n;
	bool *take, *best;
	int64_t best_cost;
	long left;
} Cover;

/* Least cost per byte first (cross-multiplied in double: the products of
 * two int64 can overflow), then the larger first, then the lower index. */
static int
by_ratio(const void *pa, const void *pb)
{
	const Item *a = pa, *b = pb;
	double x = (double)a->cost * (double)b->bytes, y = (double)b->cost * (double)a->bytes;

	if (x != y)
		return x < y ? -1 : 1;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return a->t - b->t;
}

/* The least cost to add for need more bytes from items i.. (fractional:
 * the items are in ratio order, the last one taken in part); each item
 * looked at is a unit of the work. */
static double
frac_bound(Cover *C, int i, int64_t need)
{
	double c = 0;

	for (; i < C->n && need > 0; i++, C->left--) {
		int64_t take = C->it[i].bytes < need ? C->it[i].bytes : need;
		c += (double)C->it[i].cost * (double)take / (double)C->it[i].bytes;
		need -= take;
	}
	return need > 0 ? -1 : c;
}

/* Item i taken or not, cost so far, need left. */
static void
cover_bnb(Cover *C, int i, int64_t cost, int64_t need)
{
	if (C->left-- <= 0)
		return;
	if (need <= 0) {
		if (C->best_cost < 0 || cost < C->best_cost) {
			C->best_cost = cost;
			memcpy(C->best, C->take, (size_t)C->n);
		}
		return;
	}
	double lb = frac_bound(C, i, need);
	if (lb < 0 || i >= C->n ||
	    (C->best_cost >= 0 && (double)cost + lb >= (double)C->best_cost * (1 - 1e-12)))
		return;
	C->take[i] = true;
	cover_bnb(C, i + 1, ck_sat_add(cost, C->it[i].cost), need - C->it[i].bytes);
	C->take[i] = false;
	cover_bnb(C, i + 1, cost, need);
}

/* The window [*lo, *hi] of base positions over L in the kept plan's
 * steps live[0..n), and its largest excess; 0 when none is over. */
static int64_t
window(const int64_t *live, int n, int64_t L, int *lo, int *hi)
{
	int64_t need = 0;

	*lo = *hi = -1;
	for (int s = 0; s < n; s++)
		if (live[s] > L) {
			if (*lo < 0)
				*lo = s;
			*hi = s;
			if (live[s] - L > need)
				need = live[s] - L;
		}
	return need;
}

/* The tensors whose long gap spans [lo, hi] and that own what they free
 * (no view of them, not a view, bytes > 0), in ratio order; *sum: their
 * bytes. */
static int
items(const RmModel *M, const bool *viewed, int lo, int hi, Item *it, int64_t *sum)
{
	const Dag *d = M->d;
	int n = 0;

	*sum = 0;
	for (int t = 0; t < d->nt; t++) {
		int g = M->longgap[t];
		if (g < 0 || viewed[t] || d->t[t].view_src >= 0 || d->t[t].bytes <= 0 ||
		    rm_gap_start(M, g) >= lo || M->gend[g] <= hi)
			continue;
		it[n++] = (Item){d->t[t].bytes, d->node[M->prod[t]].cost + M->c0, t};
		*sum = ck_sat_add(*sum, d->t[t].bytes);
	}
	qsort(it, (size_t)n, sizeof *it, by_ratio);
	return n;
}

/* The cover of need bytes, scored, into the pool; again for the
 * overshoot while its peak is over L. */
static void
solve(RmScorer *S, RmPool *pool, Cover *C, unsigned char *st, int64_t need, int64_t L)
{
	const RmModel *M = S->m;

	for (int try = 0; try < COVER_TRIES; try++) {
		C->best_cost = -1;
		C->left = COVER_WORK;
		memset(C->take, 0, (size_t)C->n);
		cover_bnb(C, 0, 0, need);
		if (C->best_cost < 0)
			return;
		memset(st, GAP_KEEP, (size_t)M->ngap);
		for (int i = 0; i < C->n; i++)
			if (C->best[i])
				st[M->longgap[C->it[i].t]] = GAP_STICKY;
		const MemEval *ev = rm_eval_state(S, st);
		if (!ev)
			return;
		rm_pool_add(pool, M, st, ev);
		if (ev->peak <= L)
			return;
		need = ck_sat_add(need, ev->peak - L);
	}
}

/* The covers at a fixed ladder of bounds, every 1% of the kept plan's
 * peak (5% on graphs of size over COVER_FINE, none over COVER_SIZE: each
 * rung costs up to COVER_TRIES evaluations), from the lowest any cover can
 * meet up to the budget: the rungs do not depend on the budget, so a
 * larger budget sees every plan a smaller one does (recompute never rises
 * with the budget: tests/budget_sweep.sh). A budget between two rungs
 * gets the lower one's plan, as in the trim search. */
void
rm_cover_plans(RmScorer *S, RmPool *pool, int64_t budget, long size)
{
	const RmModel *M = S->m;
	const Dag *d = M->d;
	Arena a = {0};
	int lo, hi, step = size > COVER_FINE ? 5 : 1;

	if (budget < 0 || !M->has_backward || size > COVER_SIZE)
		return;
	unsigned char *st = rm_state_new(M, &a);
	const MemEval *ev = rm_eval_state(S, st);
	if (!ev || ev->nsteps != M->n)
		return (void)ar_free(&a);
	int n = ev->nsteps;
	int64_t p0 = ev->peak, *live = ar_alloc(&a, sizeof *live * ((size_t)n + 1));
	memcpy(live, ev->live_bytes, sizeof *live * (size_t)n);
	bool *viewed = ar_alloc(&a, (size_t)d->nt + 1);
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].view_src >= 0)
			viewed[d->t[t].view_src] = true;
	Item *it = ar_alloc(&a, sizeof *it * ((size_t)d->nt + 1));
	Cover C = {it, 0, ar_alloc(&a, (size_t)d->nt + 1), ar_alloc(&a, (size_t)d->nt + 1), -1, 0};
	for (int j = step; j < 100; j += step) {
		int64_t L = (int64_t)ceil((double)p0 * j / 100.0), sum;
		if (L > budget)
			break;
		int64_t need = window(live, n, L, &lo, &hi);
		if (need <= 0)
			break;
		C.n = items(M, viewed, lo, hi, it, &sum);
		if (sum < need)
			continue;
		solve(S, pool, &C, st, need, L);
	}
	ar_free(&a);
}
