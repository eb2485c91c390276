/* passes/remat_ls.c -- -O2's last candidate on small graphs: a hill climb
 * over explicit schedules that lowers the peak.
 *
 * It starts from the pool's smallest-peak plan within the recompute cap
 * (none with a budget) and tries, in a fixed order, three kinds of move:
 * delete a recompute step; move a step elsewhere (once-only steps keep
 * their relative order, as the exact solver's search space does); insert a
 * recompute of a recomputable node before a step; move a step with a
 * recompute of one of its inputs right before it. lv_eval scores each move;
 * the first that is valid, within the cap and lowers (peak, recompute
 * cost) lexicographically is kept and the scan resumes after it. The climb
 * stops when a whole round of moves finds nothing or after a number of
 * evaluations fixed by the graph's size, so the result depends on the
 * input alone; it does not depend on the budget, so a larger budget still
 * sees a superset of the fitting plans. Large graphs skip it: the moves
 * grow with the square of the schedule's length. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

typedef struct Climb {
	RmCtx *C;
	int *cur, ncur;         /* the current schedule */
	int *buf, nbuf;         /* the candidate */
	int cap;                /* capacity of cur and buf */
	int64_t peak, cost;
	double maxcost;         /* < 0: no cap */
	long left;              /* evaluations left */
	StepKind *kind;         /* [cap] the current schedule's step kinds */
} Climb;

/* Scores buf; true when it beats the current schedule, which it becomes. */
static bool
try_buf(Climb *K)
{
	RmCtx *C = K->C;
	Schedule s = {K->nbuf, K->buf};

	K->left--;
	ar_free(&C->scratch);
	lv_eval(C->d, &s, &C->ev, &C->scratch);
	C->evals++;
	if (!C->ev.valid || (K->maxcost >= 0 && (double)C->ev.recompute_cost > K->maxcost))
		return false;
	if (C->ev.peak > K->peak ||
	    (C->ev.peak == K->peak && C->ev.recompute_cost >= K->cost))
		return false;
	K->peak = C->ev.peak;
	K->cost = C->ev.recompute_cost;
	memcpy(K->cur, K->buf, sizeof *K->cur * (size_t)K->nbuf);
	K->ncur = K->nbuf;
	memcpy(K->kind, C->ev.kind, sizeof *K->kind * (size_t)K->nbuf);
	return true;
}

/* buf = cur with step i deleted and nodes w (unless < 0), then v,
 * inserted before position j of the result (i < 0: delete nothing; v < 0:
 * insert nothing). */
static void
make2(Climb *K, int i, int w, int v, int j)
{
	K->nbuf = 0;
	for (int x = 0; x <= K->ncur; x++) {
		if (v >= 0 && K->nbuf == j) {
			if (w >= 0)
				K->buf[K->nbuf++] = w;
			K->buf[K->nbuf++] = v;
		}
		if (x < K->ncur && x != i)
			K->buf[K->nbuf++] = K->cur[x];
	}
}

static void
make(Climb *K, int i, int v, int j)
{
	make2(K, i, -1, v, j);
}

/* Whether moving step i to just before position j of cur-without-i keeps
 * once-only steps in order. */
static bool
keeps_once_order(const Climb *K, int i, int j)
{
	const Dag *d = K->C->d;

	if (!d->node[K->cur[i]].once)
		return true;
	/* positions of cur-without-i: x < i map to x, x > i to x - 1 */
	int lo = j <= i ? j : i + 1, hi = j <= i ? i : j + 1;
	for (int x = lo; x < hi; x++)
		if (x != i && d->node[K->cur[x]].once)
			return false;
	return true;
}

/* Moves step i to position j with a recompute of one of its inputs'
 * producers right before it; true when one was kept. */
static bool
move_with_inputs(Climb *K, int i, int j)
{
	const RmCtx *C = K->C;
	int v = K->cur[i];

	for (int k = C->uofs[v]; k < C->uofs[v + 1] && K->left > 0; k++) {
		int t = C->use[k], p = C->prod[t];
		if (p < 0 || C->d->node[p].once)
			continue;
		make2(K, i, p, v, j);
		if (try_buf(K))
			return true;
	}
	return false;
}

/* One round of moves; true when some move was kept. */
static bool
round_of_moves(Climb *K)
{
	const Dag *d = K->C->d;
	bool any = false;

	for (int i = 0; i < K->ncur && K->left > 0; i++) {
		if (K->kind[i] != STEP_RECOMPUTE)
			continue;
		make(K, i, -1, 0);
		any |= try_buf(K);
	}
	for (int i = 0; i < K->ncur && K->left > 0; i++) {
		for (int j = 0; j < K->ncur && K->left > 0; j++) {
			if (j == i || !keeps_once_order(K, i, j))
				continue;
			make(K, i, K->cur[i], j);
			any |= try_buf(K);
			if (K->ncur + 1 < K->cap)
				any |= move_with_inputs(K, i, j);
		}
	}
	if (K->ncur + 1 >= K->cap)
		return any;
	for (int v = 0; v < d->nnode && K->left > 0; v++) {
		if (d->node[v].once)
			continue;
		for (int j = 1; j <= K->ncur && K->left > 0 && K->ncur + 1 < K->cap; j++) {
			make(K, -1, v, j);
			any |= try_buf(K);
		}
	}
	return any;
}

void
rm_climb(RmCtx *C, RmPool *pool, double maxcost, long evals)
{
	Climb K = {0};
	int b = -1;

	for (int i = 0; i < pool->n; i++) {
		const RmCand *c = &pool->c[i];
		if (maxcost >= 0 && (double)c->cost > maxcost)
			continue;
		if (b < 0 || c->peak < pool->c[b].peak ||
		    (c->peak == pool->c[b].peak && c->cost < pool->c[b].cost))
			b = i;
	}
	if (b < 0)
		return;
	K.C = C;
	K.maxcost = maxcost;
	K.left = evals;
	K.cap = 3 * C->n + 16;
	K.cur = xcalloc((size_t)K.cap + 1, sizeof *K.cur);
	K.buf = xcalloc((size_t)K.cap + 2, sizeof *K.buf);
	K.kind = xcalloc((size_t)K.cap + 1, sizeof *K.kind);
	if (pool->c[b].sched && pool->c[b].nsched < K.cap) {
		K.nbuf = pool->c[b].nsched;
		memcpy(K.buf, pool->c[b].sched, sizeof *K.buf * (size_t)K.nbuf);
	} else if (!pool->c[b].sched && rm_build(C, pool->c[b].state) &&
	           C->nstep < K.cap) {
		K.nbuf = C->nstep;
		memcpy(K.buf, C->step, sizeof *K.buf * (size_t)K.nbuf);
	}
	K.peak = INT64_MAX;
	K.cost = INT64_MAX;
	if (K.nbuf > 0 && try_buf(&K)) {
		while (K.left > 0 && round_of_moves(&K))
			;
		Schedule s = {K.ncur, K.cur};
		ar_free(&C->scratch);
		lv_eval(C->d, &s, &C->ev, &C->scratch);
		rm_pool_add_sched(pool, K.cur, K.ncur, C->ev.valid ? &C->ev : NULL);
	}
	free(K.cur);
	free(K.buf);
	free(K.kind);
}
