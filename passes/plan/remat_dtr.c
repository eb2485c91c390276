/* passes/plan/remat_dtr.c -- -O2's simulated candidates: Dynamic Tensor
 * Rematerialization (DTR, Kirisame et al., ICLR 2021) replayed over a
 * fixed order under a memory bound, then a local search that undoes
 * needless recomputes. Reads the Dag only; plans join the pool as explicit
 * schedules, each scored by lv_eval.
 *
 * The simulation runs the order step by step under a bound T. Before a
 * step, each input that is not resident is recomputed (its missing inputs
 * first, depth first; inputs and gradients past their last use are revived,
 * which lv_eval prices as a stretched life); before any computation,
 * resident tensors are evicted until its outputs, workspace and
 * temporaries fit. The victim minimizes cost / (bytes x distance): cost is
 * the recompute closure at the tensor's next use -- its node plus, up to
 * CLOSURE nodes, the producers of inputs that will be gone by then (DTR's
 * eviction neighbourhood) -- and distance is the number of steps to that
 * use: the order is static, so the future is known where DTR only has
 * staleness. Inputs of every computation in progress are pinned; a tensor
 * is freed after its last use. A static view holds its root: the root is
 * evicted with its last resident view, never alone. Gradients, kept-to-end
 * tensors and accumulation bases stay. The simulation only steers:
 * lv_eval scores the schedule. A simulation stops once its recompute cost
 * is twice the cheapest plan already known within T.
 *
 * The local search (undrop) deletes recompute steps, costliest first,
 * keeping a deletion when the schedule stays valid and within T (the uses
 * then stretch the older instance's life); polish() runs it alone on the
 * pool's cheapest plan within T. Work is counted (victim scans, closure
 * nodes, evaluated steps) and bounded per candidate by the graph's size,
 * never by a clock, so the result depends on the input alone.
 *
 * Orders (remat_order.c): the base order, the least-bytes order, and on
 * small graphs 15 random topological orders. Bounds: with a budget, a fixed ladder from the base peak down
 * to the lower bound, those within the budget -- the same plans whatever
 * the budget, so a larger budget sees a superset of fitting plans and
 * never pays more recompute; without one, a descent from the pool's best
 * peak within the recompute cap. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

enum { CLOSURE = 12 };

/* What one rm_plan_dtr call fixes for all its candidates. */
typedef struct Knobs {
	int64_t base;           /* the base order's peak */
	int ladder;             /* bounds per order */
	long tries;             /* evaluations per local search */
	long maxwork;           /* work per candidate */
	int nfixed;             /* see search() */
	bool polish;            /* also polish() the pool's plans (the model's
	                           order) */
} Knobs;

/* A tensor and its place in rlist (free_touched). */
typedef struct Place {
	int at, t;
} Place;

typedef struct Dtr {
	const RmModel *M;
	RmScorer *S;
	const Dag *d;
	int64_t room;           /* T minus persistent bytes */
	int64_t mem;            /* owned bytes of resident tensors */
	int *uofs, *upos;       /* CSR [nt]: base positions using t, ascending */
	int *unext;             /* [nt] how many of those uses are done */
	bool *res;              /* [nt] an instance is resident */
	bool *made;             /* [nt] produced at least once */
	bool *evictable;        /* [nt] */
	int *root;              /* [nt] owning tensor a static view aliases, or -1 */
	int *vcount;            /* [nt] resident views of an owning tensor */
	int *pin;               /* [nt] computations in progress reading t */
	int *rlist, *ridx, nres;/* resident evictable tensors */
	int *stk;
	int *sched, nsched, maxsched;
	int x;                  /* current base position */
	bool *ran;              /* [nnode] ran in this simulation */
	int nfixed;             /* pool entries that bound the cost (below) */
	int64_t simcost, costlim;       /* recompute cost so far, most allowed */
	long work, maxwork;     /* victim scans, closure nodes, evaluated
	                           steps: done for this candidate, and the
	                           most allowed */
	int *mark, *cstk, stamp;/* [nnode] recost's closure */
	int *touch, ntouch;     /* [nt] what this base step may have left
	                           freeable (free_touched) */
	int *tmark, tstamp;     /* [nt] touch's members */
	Place *tpos;            /* [nt] scratch: their places in rlist */
	/* local search scratch */
	int *buf, *order;
	bool *gone;
	Arena ar;               /* every array above: freed by dtr_free */
} Dtr;

/* Base positions of every use; which tensors may be evicted. */
static void
dtr_init(Dtr *D, RmScorer *S)
{
	const RmModel *M = S->m;
	const Dag *d = M->d;
	int nt = d->nt, total = M->nuses;
	bool *isbase;

	memset(D, 0, sizeof *D);
	ar_init(&D->ar);
	isbase = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *isbase);
	D->M = M;
	D->S = S;
	D->d = d;
	D->uofs = ar_alloc(&D->ar, ((size_t)nt + 2) * sizeof *D->uofs);
	D->upos = ar_alloc(&D->ar, ((size_t)total + 1) * sizeof *D->upos);
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++)
			D->uofs[M->use[k] + 2]++;
	}
	for (int t = 0; t < nt; t++)
		D->uofs[t + 2] += D->uofs[t + 1];
	for (int x = 0; x < M->n; x++) {
		int v = d->base_order[x];
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++)
			D->upos[D->uofs[M->use[k] + 1]++] = x;
	}
	D->root = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->root);
	D->vcount = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->vcount);
	for (int t = 0; t < nt; t++) {
		int r = dag_root(d, t);
		D->root[t] = r != t ? r : -1;
	}
	for (int v = 0; v < d->nnode; v++)
		for (int j = 0; j < d->node[v].nacc; j++)
			if (d->node[v].acc[j].view_src >= 0)
				isbase[d->node[v].acc[j].view_src] = true;
	D->evictable = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->evictable);
	for (int t = 0; t < nt; t++)
		D->evictable[t] = M->prod[t] >= 0 && !d->t[t].to_end && !isbase[t] &&
		                  (dag_owned(d, t) > 0 || (D->root[t] >= 0 &&
		                   M->prod[D->root[t]] >= 0));
	D->unext = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->unext);
	D->res = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->res);
	D->made = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->made);
	D->pin = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->pin);
	D->rlist = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->rlist);
	D->ridx = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->ridx);
	D->stk = ar_alloc(&D->ar, ((size_t)d->nnode + 1) * sizeof *D->stk);
	D->ran = ar_alloc(&D->ar, ((size_t)d->nnode + 1) * sizeof *D->ran);
	D->mark = ar_alloc(&D->ar, ((size_t)d->nnode + 1) * sizeof *D->mark);
	D->cstk = ar_alloc(&D->ar, ((size_t)d->nnode + 1) * sizeof *D->cstk);
	D->touch = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->touch);
	D->tmark = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->tmark);
	D->tpos = ar_alloc(&D->ar, ((size_t)nt + 1) * sizeof *D->tpos);
	D->maxsched = 16 * M->n + 1024;
	D->sched = ar_alloc(&D->ar, ((size_t)D->maxsched) * sizeof *D->sched);
	D->buf = ar_alloc(&D->ar, ((size_t)D->maxsched) * sizeof *D->buf);
	D->order = ar_alloc(&D->ar, ((size_t)D->maxsched) * sizeof *D->order);
	D->gone = ar_alloc(&D->ar, ((size_t)D->maxsched) * sizeof *D->gone);
}

/* The base positions using t: upos[lo..hi) (remat_int.h, rm_row). */
static inline RmRow
uses_at(const Dtr *D, int t)
{
	return rm_row(D->uofs, t, D->M->nt);
}

static void
dtr_free(Dtr *D)
{
	ar_free(&D->ar);
}

/* Base position of t's next use, INT_MAX when none is left. */
static inline int
next_use(const Dtr *D, int t)
{
	RmRow at = uses_at(D, t);
	int k = at.lo + D->unext[t];

	return k < at.hi ? D->upos[k] : INT_MAX;
}

static void
make_resident(Dtr *D, int t, int64_t bytes)
{
	D->res[t] = true;
	D->made[t] = true;
	D->mem += bytes;
	if (D->root[t] >= 0)
		D->vcount[D->root[t]]++;
	if (D->evictable[t]) {
		D->ridx[t] = D->nres;
		D->rlist[D->nres++] = t;
	}
}

static void
drop(Dtr *D, int t)
{
	if (!D->res[t])
		return;
	D->res[t] = false;
	D->mem -= dag_owned(D->d, t);
	if (D->evictable[t]) {
		int last = D->rlist[--D->nres];
		D->rlist[D->ridx[t]] = last;
		D->ridx[last] = D->ridx[t];
	}
	if (D->root[t] >= 0)
		D->vcount[D->root[t]]--;
}

/* Frees t when nothing will read it again. */
static void
maybe_free(Dtr *D, int t)
{
	if (D->res[t] && D->pin[t] == 0 && !D->d->t[t].to_end &&
	    D->vcount[t] == 0 && next_use(D, t) == INT_MAX) {
		drop(D, t);
		if (D->root[t] >= 0)
			maybe_free(D, D->root[t]);
	}
}

/* Whether t will still be there at base position when: resident and read
 * by the base order at or after it (else freed after its last use). */
static bool
kept(const Dtr *D, int t, int when)
{
	RmRow at = uses_at(D, t);

	return D->M->prod[t] < 0 || (D->res[t] && at.hi > at.lo &&
	                             D->upos[at.hi - 1] >= when);
}

/* What recomputing t would cost later: its node and, transitively, the
 * producers of inputs that will not be kept (DTR's eviction
 * neighbourhood), up to CLOSURE nodes. */
static int64_t
recost(Dtr *D, int t)
{
	const RmModel *M = D->M;
	int sp = 0, seen = 0, when = next_use(D, t);
	int64_t c = 0;

	D->stamp++;
	D->cstk[sp++] = M->prod[t];
	D->mark[M->prod[t]] = D->stamp;
	while (sp > 0) {
		int p = D->cstk[--sp];
		c = ck_sat_add(c, ck_sat_add(D->d->node[p].cost, M->c0));
		D->work++;
		if (++seen > CLOSURE)
			return ck_sat_mul(c, 4);
		RmRow uses = rm_uses(M, p);
		for (int k = uses.lo; k < uses.hi; k++) {
			int u = M->use[k], q = M->prod[u];
			if (kept(D, u, when) || D->mark[q] == D->stamp)
				continue;
			D->mark[q] = D->stamp;
			D->cstk[sp++] = q;
		}
	}
	return c;
}

/* What evicting t frees: its bytes, or for a view its root's when the
 * view is the root's last resident holder and the root is not pinned
 * (both go); 0 when a resident view holds t. */
static int64_t
gain(const Dtr *D, int t)
{
	int r = D->root[t];

	if (D->vcount[t] > 0)
		return 0;
	if (r < 0)
		return dag_owned(D->d, t);
	if (D->res[r] && D->vcount[r] == 1 && D->pin[r] == 0 && D->evictable[r])
		return dag_owned(D->d, r);
	return 0;
}

/* The resident, unpinned tensor cheapest to lose, or -1. The node's own
 * cost bounds the score from below, so the closure is only walked for
 * tensors that could win. */
static int
victim(Dtr *D)
{
	int best = -1;
	double bs = 0;

	for (int i = 0; i < D->nres; i++) {
		int t = D->rlist[i];
		int64_t g = gain(D, t);
		if (D->pin[t] || g == 0)
			continue;
		int nu = next_use(D, t);
		if (D->root[t] >= 0 && next_use(D, D->root[t]) < nu)
			nu = next_use(D, D->root[t]);
		double w = (double)g * (nu == INT_MAX ? 1e9 : (double)(nu - D->x + 1));
		double lo = (double)(D->d->node[D->M->prod[t]].cost + D->M->c0) / w;
		D->work++;
		if (best >= 0 && (lo > bs || (lo == bs && t > best)))
			continue;
		double s = (double)recost(D, t) / w;
		if (best < 0 || s < bs || (s == bs && t < best)) {
			best = t;
			bs = s;
		}
	}
	return best;
}

/* Evicts t, and a view's root with it. */
static void
evict(Dtr *D, int t)
{
	int r = D->root[t];

	drop(D, t);
	if (r >= 0 && D->vcount[r] == 0)
		drop(D, r);
}

/* t may be freeable once this base step is done. */
static void
touch(Dtr *D, int t)
{
	if (D->tmark[t] != D->tstamp) {
		D->tmark[t] = D->tstamp;
		D->touch[D->ntouch++] = t;
	}
}

/* Pins q's inputs (by 1) or unpins them (-1: then they may be freeable). */
static void
pin_uses(Dtr *D, int q, int by)
{
	const RmModel *M = D->M;

	RmRow uses = rm_uses(M, q);
	for (int k = uses.lo; k < uses.hi; k++) {
		int t = M->use[k];
		D->pin[t] += by;
		if (by < 0)
			touch(D, t);
	}
}

/* Runs node q: makes room, appends the step, makes its outputs. */
static bool
exec(Dtr *D, int q)
{
	const Dag *d = D->d;
	const DagNode *n = &d->node[q];
	int64_t need = dag_workspace(d, q);

	if (D->nsched == D->maxsched)
		return false;
	if (D->ran[q] && (D->simcost += n->cost) > D->costlim)
		return false;
	D->ran[q] = true;
	for (int j = 0; j < n->nout; j++)
		if (!D->res[n->out[j]])
			need += dag_owned(d, n->out[j]);
	for (int j = 0; j < n->nacc; j++) {
		int t = n->acc[j].tensor;
		need += D->made[t] || n->acc[j].view_src < 0 ? d->t[t].bytes : 0;
	}
	while (D->mem + need > D->room) {
		int t = victim(D);
		if (t < 0)
			break;          /* over T: lv_eval will tell by how much */
		evict(D, t);
	}
	D->sched[D->nsched++] = q;
	for (int j = 0; j < n->nout; j++) {
		if (!D->res[n->out[j]])
			make_resident(D, n->out[j], dag_owned(d, n->out[j]));
		touch(D, n->out[j]);
	}
	for (int j = 0; j < n->nacc; j++) {
		int t = n->acc[j].tensor;
		if (!D->made[t])
			make_resident(D, t, n->acc[j].view_src < 0 ? d->t[t].bytes : 0);
		touch(D, t);
	}
	return true;
}

/* Whether t is in rlist: resident and evictable. */
static bool
listed(const Dtr *D, int t)
{
	return D->res[t] && D->evictable[t];
}

static int
by_place_down(const void *pa, const void *pb)
{
	const Place *a = pa, *b = pb;

	return (a->at < b->at) - (a->at > b->at);
}

/* maybe_free on the resident evictable tensors from the last of rlist
 * down, as a scan of all of rlist does, but only on those this base step
 * touched: after the step before, none was freeable, and a tensor becomes
 * freeable only when a step unpins it (pin_uses by -1, which the base
 * node's last reads are too), makes it, or frees its last view (and
 * maybe_free frees the root then). A tensor dropped is replaced in rlist
 * by the last one, which the scan has passed unless a root went too: a
 * touched tensor moved that way is visited at its new place, as the scan
 * would, so the drops and rlist's order are the scan's (the scan was 6%
 * of -O2 on GPT-2 with 50 blocks at 8 stages). Debug builds check that
 * none is left freeable. */
static void
free_touched(Dtr *D)
{
	int m = 0;

	for (int i = 0; i < D->ntouch; i++)
		if (listed(D, D->touch[i]))
			D->tpos[m++] = (Place){D->ridx[D->touch[i]], D->touch[i]};
	qsort(D->tpos, (size_t)m, sizeof *D->tpos, by_place_down);
	for (int a = 0; a < m;) {
		int t = D->tpos[a].t;
		if (!listed(D, t)) {
			a++;
			continue;
		}
		if (D->ridx[t] != D->tpos[a].at) {      /* moved down: its new place */
			Place moved = {D->ridx[t], t};
			int b = a;
			for (; b + 1 < m && D->tpos[b + 1].at > moved.at; b++)
				D->tpos[b] = D->tpos[b + 1];
			D->tpos[b] = moved;
			continue;
		}
		maybe_free(D, t);
		a++;
	}
#ifdef REMAT_DEBUG
	for (int i = 0; i < D->nres; i++) {
		int t = D->rlist[i];
		if (D->pin[t] == 0 && !D->d->t[t].to_end && D->vcount[t] == 0 &&
		    next_use(D, t) == INT_MAX)
			abort();        /* free_touched missed a freeable tensor */
	}
#endif
}

/* Base step x: recomputes missing inputs depth first, then runs it. */
static bool
base_step(Dtr *D, int x)
{
	const RmModel *M = D->M;
	const DagNode *n;
	int v = D->d->base_order[x], sp = 0;

	D->x = x;
	D->tstamp++;
	D->ntouch = 0;
	D->stk[sp++] = v;
	pin_uses(D, v, 1);
	for (;;) {
		int q = D->stk[sp - 1], miss = -1;
		RmRow uses = rm_uses(M, q);
		for (int k = uses.lo; k < uses.hi && miss < 0; k++)
			if (!D->res[M->use[k]])
				miss = M->use[k];
		if (miss >= 0) {
			if (M->prod[miss] < 0) {
				/* an input or gradient past its last use: the
				 * old instance lives on (lv_eval stretches it) */
				if (!D->made[miss])
					return false;
				make_resident(D, miss, dag_owned(D->d, miss));
				continue;
			}
			D->stk[sp++] = M->prod[miss];
			pin_uses(D, M->prod[miss], 1);
			continue;
		}
		if (!exec(D, q))
			return false;
		if (sp == 1)
			break;
		sp--;
		pin_uses(D, q, -1);
	}
	RmRow uses = rm_uses(M, v);
	for (int k = uses.lo; k < uses.hi; k++)
		D->unext[M->use[k]]++;
	pin_uses(D, v, -1);
	for (int k = uses.lo; k < uses.hi; k++)
		maybe_free(D, M->use[k]);
	n = &D->d->node[v];
	for (int j = 0; j < n->nout; j++)
		maybe_free(D, n->out[j]);
	for (int j = 0; j < n->nacc; j++)
		maybe_free(D, n->acc[j].tensor);
	if (x == 0) {           /* the tensors from the start too */
		for (int i = D->nres - 1; i >= 0; i--)
			if (i < D->nres)
				maybe_free(D, D->rlist[i]);
	} else {
		free_touched(D);
	}
	return true;
}

/* Simulates the base order under bound T into D->sched. */
static bool
simulate(Dtr *D, int64_t T)
{
	const Dag *d = D->d;
	int nt = d->nt;
	int64_t pers = 0;

	for (int c = 0; c < CAT_COUNT; c++)
		pers += d->persistent[c];
	D->room = T - pers;
	D->mem = 0;
	D->nres = 0;
	D->nsched = 0;
	D->simcost = 0;
	memset(D->ran, 0, sizeof *D->ran * (size_t)d->nnode);
	memset(D->unext, 0, sizeof *D->unext * (size_t)nt);
	memset(D->res, 0, sizeof *D->res * (size_t)nt);
	memset(D->made, 0, sizeof *D->made * (size_t)nt);
	memset(D->pin, 0, sizeof *D->pin * (size_t)nt);
	memset(D->vcount, 0, sizeof *D->vcount * (size_t)nt);
	for (int t = 0; t < nt; t++) {
		RmRow at = uses_at(D, t);
		if (d->t[t].from_start && (at.hi > at.lo || d->t[t].to_end))
			make_resident(D, t, dag_owned(d, t));
		D->made[t] = d->t[t].from_start;
	}
	for (int x = 0; x < D->M->n; x++)
		if (D->work > D->maxwork || !base_step(D, x))
			return false;
	return true;
}

/* lv_eval of the steps not gone; NULL when invalid. */
static const MemEval *
eval_kept(Dtr *D, int n)
{
	const RmModel *M = D->M;
	Schedule s = {0, D->buf};

	for (int i = 0; i < n; i++)
		if (!D->gone[i])
			D->buf[s.n++] = D->sched[i];
	const MemEval *ev = rm_eval_steps(D->S, s.step, s.n);
	D->work += s.n + M->d->nt;
	return ev;
}

static const Dtr *sort_dtr;

/* Recompute steps, costliest first, then earliest. */
static int
by_step_cost(const void *pa, const void *pb)
{
	const Dtr *D = sort_dtr;
	int a = *(const int *)pa, b = *(const int *)pb;
	int64_t ca = D->d->node[D->sched[a]].cost, cb = D->d->node[D->sched[b]].cost;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	return a - b;
}

/* Deletes recompute steps that the bound T does not need, at most tries
 * evaluations; compacts D->sched. */
static void
undrop(Dtr *D, int64_t T, long tries)
{
	const MemEval *ev;
	int n = D->nsched, nr = 0;

	memset(D->gone, 0, sizeof *D->gone * (size_t)n);
	ev = eval_kept(D, n);
	if (!ev)
		return;
	for (int i = 0; i < n; i++)
		if (ev->kind[i] == STEP_RECOMPUTE && D->d->node[D->sched[i]].cost > 0)
			D->order[nr++] = i;
	sort_dtr = D;
	qsort(D->order, (size_t)nr, sizeof *D->order, by_step_cost);
	for (int i = 0; i < nr && i < tries && D->work < D->maxwork; i++) {
		D->gone[D->order[i]] = true;
		ev = eval_kept(D, n);
		if (!ev || ev->peak > T)
			D->gone[D->order[i]] = false;
	}
	int k = 0;
	for (int i = 0; i < n; i++)
		if (!D->gone[i])
			D->sched[k++] = D->sched[i];
	D->nsched = k;
}

/* One candidate at bound T: simulation, local search, into the pool.
 * Returns the candidate's evaluation (valid until the next one), or NULL. */
static const MemEval *
candidate(Dtr *D, RmPool *pool, int64_t T, long tries, double cap)
{
	const MemEval *ev;

	D->costlim = INT64_MAX / 4;
	for (int i = 0; i < D->nfixed; i++)
		if (pool->c[i].peak <= T && ck_sat_mul(2, pool->c[i].cost) < D->costlim)
			D->costlim = 2 * pool->c[i].cost;
	if (cap >= 0 && (double)D->costlim > 2 * cap)
		D->costlim = (int64_t)(2 * cap);
	D->work = 0;
	if (!simulate(D, T))
		return NULL;
	undrop(D, T, tries);
	memset(D->gone, 0, sizeof *D->gone * (size_t)D->nsched);
	ev = eval_kept(D, D->nsched);
	if (ev)
		rm_pool_add_sched(pool, D->sched, D->nsched, ev);
	return ev;
}

/* The local search alone, from the cheapest of the pool's first nfixed
 * plans within T (gap-state plans are the model's). */
static void
polish(Dtr *D, RmPool *pool, int64_t T, long tries)
{
	int b = -1;

	for (int i = 0; i < D->nfixed; i++)
		if (pool->c[i].peak <= T && pool->c[i].cost > 0 &&
		    (b < 0 || pool->c[i].cost < pool->c[b].cost))
			b = i;
	if (b < 0)
		return;
	int n;
	const int *st = rm_cand_steps(D->S, &pool->c[b], &n);
	if (!st || n > D->maxsched)
		return;
	D->nsched = n;
	memcpy(D->sched, st, sizeof *D->sched * (size_t)n);
	D->work = 0;
	undrop(D, T, tries);
	memset(D->gone, 0, sizeof *D->gone * (size_t)D->nsched);
	rm_pool_add_sched(pool, D->sched, D->nsched, eval_kept(D, D->nsched));
}

/* x * k / n, truncated, without forming x * k: bytes near the Dag's cap
 * times a ladder step pass 2^63. */
static int64_t
mul_div(int64_t x, int k, int n)
{
	return x / n * k + x % n * k / n;
}

/* The plans of one base order (S's model's): with a budget, at each bound of a
 * fixed ladder from the base peak down that fits it; without, lowering the
 * bound from the best peak within the cap (none: cap < 0). A simulation
 * stops once its recompute cost is twice that of the cheapest plan among
 * the pool's first nfixed within the bound: it could not win. */
static void
search(RmScorer *S, const RmRecipe *R, RmPool *pool, int64_t budget, double cap,
       const Knobs *K)
{
	Dtr D;
	int64_t lb = R->lower;

	dtr_init(&D, S);
	D.maxwork = K->maxwork;
	D.nfixed = K->nfixed;
	if (budget >= 0) {
		for (int k = 1; k < K->ladder; k++) {
			int64_t T = K->base - mul_div(K->base - lb, k, K->ladder);
			if (T > budget)
				continue;
			candidate(&D, pool, T, K->tries, -1);
			if (K->polish)
				polish(&D, pool, T, K->tries);
		}
	} else {
		int64_t T = K->base;
		for (int i = 0; i < pool->n; i++)
			if ((cap < 0 || (double)pool->c[i].cost <= cap) && pool->c[i].peak < T)
				T = pool->c[i].peak;
		int64_t step = (T - lb) / 4 + 1;
		/* down to 2^-16 of the base peak: the same rungs whatever the
		 * scale of the bytes (halving to 0 took 57 failed rungs per order
		 * on a graph with bytes near 2^57, 0.2 s on 40 nodes) */
		int64_t least = K->base >> 16;
		for (int k = 0; k < 2 * K->ladder && step > least && T - step >= lb; k++) {
			const MemEval *ev = candidate(&D, pool, T - step, K->tries, cap);
			if (ev && ev->peak < T &&
			    (cap < 0 || (double)ev->recompute_cost <= cap))
				T = ev->peak;
			else
				step /= 2;
		}
	}
	dtr_free(&D);
}

void
rm_plan_dtr(RmScorer *S, RmRecipe *R, RmPool *pool, int64_t budget, double cap)
{
	const RmModel *M = S->m;
	const RmEffort *e = R->eff;
	int orders = e->dtr_orders;
	Arena a = {0};
	int *ord = ar_alloc(&a, ((size_t)M->d->nnode + 1) * sizeof *ord);
	Knobs K;

	K.base = pool->c[0].peak;
	K.ladder = e->dtr_ladder;
	K.tries = e->dtr_tries;
	K.maxwork = e->dtr_work / (2 * K.ladder * (orders + 1)) + 1000;
	K.nfixed = pool->n;
	K.polish = false;
	if (e->size > e->dtr_size)
		orders = -1;
	for (int i = 0; i <= orders; i++) {
		/* i = 0: the least-bytes order; 1: the base order; then random */
		if (i == 1) {
			K.polish = true;
			search(S, R, pool, budget, cap, &K);
			K.polish = false;
			continue;
		}
		if (i == 0 && rm_least_bytes_order(S, R))
			memcpy(ord, R->lborder, sizeof *ord * (size_t)M->d->nnode);
		else if (i == 0 || !rm_topo_order(M, (uint64_t)i * 0x9e3779b97f4a7c15ull, ord))
			continue;
		Dag d2 = *M->d;
		RmModel M2;
		RmScorer S2;
		d2.base_order = ord;
		rm_model_init(&M2, &d2);
		rm_scorer_init(&S2, &M2);
		search(&S2, R, pool, budget, cap, &K);
		rm_scorer_free(&S2);
		rm_model_free(&M2);
	}
	ar_free(&a);
}
