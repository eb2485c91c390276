/* passes/plan/remat_ls.c -- -O2's last candidate on small graphs: a hill climb
 * over explicit schedules that lowers the peak.
 *
 * It starts from the pool's smallest-peak plan within the recompute cap
 * (none with a budget) and tries, in a fixed order, three kinds of move:
 * delete a recompute step; move a step elsewhere (once-only steps keep
 * their base relative order: a narrower space than the exact solver's,
 * which also reorders backward steps -- remat_order.c's rm_reorder_pool
 * does that for -O2 afterwards); insert a
 * recompute of a recomputable node before a step; move a step with a
 * recompute of one of its inputs right before it. lv_eval scores each move;
 * the first that is valid, within the cap and lowers (peak, recompute
 * cost) lexicographically is kept and the scan resumes after it. The climb
 * stops when a whole round of moves finds nothing or after a number of
 * evaluations fixed by the graph's size, so the result depends on the
 * input alone; it does not depend on the budget, so a larger budget still
 * sees a superset of the fitting plans. Large graphs skip it: the moves
 * grow with the square of the schedule's length.
 *
 * On tiny graphs (remat_o2.c's KICK_NODES) an iterated local search
 * follows, for plans that need compound moves (a reorder plus a recompute
 * chain at once): a kick applies one to three random edits (a fixed-seed
 * generator, so deterministic) -- delete a recompute, insert a recompute
 * chain, move a run of recomputable steps -- and the climb runs again;
 * the walk moves on from any local optimum no higher than where it stands
 * and keeps the best. Once-only steps stay in base order, each after its
 * forward node's first step. Its evaluations are a fixed number too. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

typedef struct Climb {
	const RmModel *M;
	RmScorer *S;
	int *cur, ncur;         /* the current schedule */
	int *buf, nbuf;         /* the candidate */
	int cap;                /* capacity of cur and buf */
	int64_t peak, cost;
	double maxcost;         /* < 0: no cap */
	long left;              /* evaluations left */
	uint8_t *kind;          /* [cap] the current schedule's StepKinds */
	int *fwd;               /* [nnode] once nodes: the recomputable node
	                           of the same name, or -1 */
	int *mark;              /* [nnode] scratch */
} Climb;

/* Whether buf keeps once-only steps in base order, each after the first
 * step of its forward node. */
static bool
order_ok(const Climb *K)
{
	const RmModel *M = K->M;
	int last = -1;

	memset(K->mark, 0, sizeof *K->mark * (size_t)M->d->nnode);
	for (int x = 0; x < K->nbuf; x++) {
		int v = K->buf[x];
		K->mark[v] = 1;
		if (!M->d->node[v].once)
			continue;
		if (M->pos[v] < last || (K->fwd[v] >= 0 && !K->mark[K->fwd[v]]))
			return false;
		last = M->pos[v];
	}
	return true;
}

/* Evaluates buf into S->ev; true when it is valid and within the cap. */
static bool
eval_buf(Climb *K)
{
	const MemEval *ev = rm_eval_steps(K->S, K->buf, K->nbuf);
	return ev && (K->maxcost < 0 || (double)ev->recompute_cost <= K->maxcost);
}

/* Makes the evaluated buf the current schedule. */
static void
adopt_buf(Climb *K)
{
	RmScorer *S = K->S;

	K->peak = S->ev.peak;
	K->cost = S->ev.recompute_cost;
	memcpy(K->cur, K->buf, sizeof *K->cur * (size_t)K->nbuf);
	K->ncur = K->nbuf;
	memcpy(K->kind, S->ev.kind, sizeof *K->kind * (size_t)K->nbuf);
}

/* Scores buf; true when it beats the current schedule, which it becomes. */
static bool
try_buf(Climb *K)
{
	RmScorer *S = K->S;

	K->left--;
	if (K->fwd && !order_ok(K))
		return false;
	if (!eval_buf(K))
		return false;
	if (S->ev.peak > K->peak ||
	    (S->ev.peak == K->peak && S->ev.recompute_cost >= K->cost))
		return false;
	adopt_buf(K);
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
	const Dag *d = K->M->d;

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
	const RmModel *M = K->M;
	int v = K->cur[i];

	RmRow uses = rm_uses(M, v);
	for (int k = uses.lo; k < uses.hi && K->left > 0; k++) {
		int t = M->use[k], p = M->prod[t];
		if (p < 0 || M->d->node[p].once)
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
	const Dag *d = K->M->d;
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

static uint64_t
ls_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ z >> 30) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ z >> 27) * 0x94d049bb133111ebULL;
	return z ^ z >> 31;
}

static int
ls_range(uint64_t *x, int n)
{
	return n > 0 ? (int)(ls_next(x) % (uint64_t)n) : 0;
}

/* Appends to ins (post-order, each node once) the recomputable producers
 * of v's inputs up to depth levels deep, then v. */
static void
chain(const RmModel *M, int v, int depth, int *seen, int *ins, int *m)
{
	seen[v] = 1;
	RmRow uses = rm_uses(M, v);
	for (int k = uses.lo; depth > 0 && k < uses.hi; k++) {
		int p = M->prod[M->use[k]];
		if (p >= 0 && !M->d->node[p].once && !seen[p])
			chain(M, p, depth - 1, seen, ins, m);
	}
	if (*m < 63)
		ins[(*m)++] = v;
}

/* buf = cur with one to three random edits (a compound move): delete a
 * recompute step, insert a recompute of a node (with recomputes of its
 * inputs' producers, up to 3 levels, right before it, or not) or move a
 * run of recomputable steps. Once-only steps are never moved. False when nothing changed. */
static bool
kick(Climb *K, uint64_t *seed)
{
	const RmModel *M = K->M;
	RmScorer *S = K->S;
	const Dag *d = M->d;
	int edits = 1 + ls_range(seed, 3), done = 0;
	int *seen = S->b.emitted;         /* scratch, [2 nnode + 2] */

	memcpy(K->buf, K->cur, sizeof *K->buf * (size_t)K->ncur);
	K->nbuf = K->ncur;
	for (int e = 0; e < edits; e++) {
		int kind = ls_range(seed, 3);
		if (kind == 0) {
			/* delete a step that is not a node's first */
			int nr = 0, pick;
			memset(seen, 0, sizeof *seen * (size_t)d->nnode);
			for (int x = 0; x < K->nbuf; x++)
				nr += seen[K->buf[x]]++ > 0;
			if (nr == 0)
				continue;
			pick = ls_range(seed, nr);
			memset(seen, 0, sizeof *seen * (size_t)d->nnode);
			for (int x = 0; x < K->nbuf; x++) {
				if (seen[K->buf[x]]++ > 0 && pick-- == 0) {
					memmove(K->buf + x, K->buf + x + 1, sizeof *K->buf *
					        (size_t)(K->nbuf - x - 1));
					K->nbuf--;
					done++;
					break;
				}
			}
		} else if (kind == 1) {
			int v = ls_range(seed, d->nnode), j, m = 0, ins[64];
			if (d->node[v].once || M->pos[v] < 0)
				continue;
			memset(seen, 0, sizeof *seen * (size_t)d->nnode);
			chain(M, v, ls_range(seed, 4), seen, ins, &m);
			if (K->nbuf + m >= K->cap)
				continue;
			j = 1 + ls_range(seed, K->nbuf);
			memmove(K->buf + j + m, K->buf + j, sizeof *K->buf *
			        (size_t)(K->nbuf - j));
			memcpy(K->buf + j, ins, sizeof *ins * (size_t)m);
			K->nbuf += m;
			done++;
		} else {
			/* move a run of up to 4 recomputable steps */
			int i = ls_range(seed, K->nbuf), len = 1 + ls_range(seed, 4);
			int j, seg[4], l = 0;
			while (l < len && i + l < K->nbuf && !d->node[K->buf[i + l]].once) {
				seg[l] = K->buf[i + l];
				l++;
			}
			if (l == 0)
				continue;
			memmove(K->buf + i, K->buf + i + l, sizeof *K->buf *
			        (size_t)(K->nbuf - i - l));
			j = ls_range(seed, K->nbuf - l + 1);
			memmove(K->buf + j + l, K->buf + j, sizeof *K->buf *
			        (size_t)(K->nbuf - l - j));
			memcpy(K->buf + j, seg, sizeof *seg * (size_t)l);
			done++;
		}
	}
	return done > 0;
}

/* Scores buf and makes it the current schedule when valid and within the
 * cap, better or not. */
static bool
take_buf(Climb *K)
{
	K->left--;
	if (!order_ok(K) || !eval_buf(K))
		return false;
	adopt_buf(K);
	return true;
}

void
rm_climb(RmScorer *S, RmPool *pool, double maxcost, long evals, long kicks)
{
	const RmModel *M = S->m;
	Climb K = {0};
	Arena a = {0};
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
	K.M = M;
	K.S = S;
	K.maxcost = maxcost;
	K.left = evals;
	K.cap = 3 * M->n + 16;
	K.cur = ar_alloc(&a, ((size_t)K.cap + 1) * sizeof *K.cur);
	K.buf = ar_alloc(&a, ((size_t)K.cap + 2) * sizeof *K.buf);
	K.kind = ar_alloc(&a, ((size_t)K.cap + 1) * sizeof *K.kind);
	if (pool->c[b].sched && pool->c[b].nsched < K.cap) {
		K.nbuf = pool->c[b].nsched;
		memcpy(K.buf, pool->c[b].sched, sizeof *K.buf * (size_t)K.nbuf);
	} else if (!pool->c[b].sched && rm_build(S, pool->c[b].state) &&
	           S->b.nstep < K.cap) {
		K.nbuf = S->b.nstep;
		memcpy(K.buf, S->b.step, sizeof *K.buf * (size_t)K.nbuf);
	}
	K.peak = INT64_MAX;
	K.cost = INT64_MAX;
	if (K.nbuf > 0 && try_buf(&K)) {
		while (K.left > 0 && round_of_moves(&K))
			;
		/* iterated local search: kick the best plan with a compound
		 * move, climb again, keep what beats it */
		int *best = ar_alloc(&a, ((size_t)K.cap + 1) * sizeof *best);
		int nbest = K.ncur;
		int64_t bpeak = K.peak, bcost = K.cost;
		uint64_t seed = 0x5eedULL;
		const Dag *d = M->d;
		K.fwd = ar_alloc(&a, ((size_t)d->nnode + 1) * sizeof *K.fwd);
		K.mark = ar_alloc(&a, ((size_t)d->nnode + 1) * sizeof *K.mark);
		for (int v = 0; v < d->nnode; v++) {
			K.fwd[v] = -1;
			for (int u = 0; d->node[v].once && u < d->nnode; u++)
				if (!d->node[u].once && d->node[u].name && d->node[v].name &&
				    strcmp(d->node[u].name, d->node[v].name) == 0)
					K.fwd[v] = u;
		}
		memcpy(best, K.cur, sizeof *best * (size_t)nbest);
		int *home = ar_alloc(&a, ((size_t)K.cap + 1) * sizeof *home);
		int nhome = nbest;
		int64_t hpeak = bpeak;
		memcpy(home, best, sizeof *home * (size_t)nhome);
		K.left = kicks;
		while (K.left > 0) {
			memcpy(K.cur, home, sizeof *K.cur * (size_t)nhome);
			K.ncur = nhome;
			if (!kick(&K, &seed)) {
				K.left--;
				continue;
			}
			if (!take_buf(&K))
				continue;
			while (K.left > 0 && round_of_moves(&K))
				;
			/* the walk goes on from any local optimum no higher
			 * than where it stands (across plateaus) */
			if (K.peak <= hpeak) {
				hpeak = K.peak;
				nhome = K.ncur;
				memcpy(home, K.cur, sizeof *home * (size_t)nhome);
			}
			if (K.peak < bpeak || (K.peak == bpeak && K.cost < bcost)) {
				bpeak = K.peak;
				bcost = K.cost;
				nbest = K.ncur;
				memcpy(best, K.cur, sizeof *best * (size_t)nbest);
			}
		}
		K.ncur = nbest;
		memcpy(K.cur, best, sizeof *best * (size_t)nbest);
		K.fwd = K.mark = NULL;
		Schedule s = {K.ncur, K.cur};
		ar_free(&S->scratch);
		S->nlast = -1;
		lv_eval(M->d, &s, &S->ev, &S->scratch);
		rm_pool_add_sched(pool, K.cur, K.ncur, S->ev.valid ? &S->ev : NULL);
	}
	ar_free(&a);
}
