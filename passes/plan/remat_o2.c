/* passes/plan/remat_o2.c -- -O2: on graphs small enough, the exact search
 * (remat_exact.c) within a fixed work, whose plan, when it finishes, is
 * the optimum and ends the recipe. Else it fills the pool with -O1's plan, the checkpoint
 * chain's plans (remat_chain.c) and a greedy descent over gap states (any DAG, also
 * U-Nets with no cut nodes): it lowers a threshold on the peak in fixed
 * steps; for each, it drops the gaps that best cut the bytes over the
 * threshold per recompute cost, scoring the likeliest few exactly
 * (rm_score_state: lv_eval's rules; a shortcut on plain DAGs, and there
 * remat_delta.c's incremental form of it, which re-scores only the steps a
 * move changes), then undoes drops that turned out unneeded. A drop recomputes at the use that ends the gap
 * or, EARLY, inside it where the inputs are still there. The descent runs on
 * the base order and, when it starts lower, on the least-bytes topological
 * order (remat_dtr.c), which then gets most of the evaluations. Then the
 * simulated candidates (remat_dtr.c) and, on small graphs, the hill climb
 * (remat_ls.c); last, the best plans reordered (remat_order.c). Every
 * plan joins the pool; rm_plan picks from it. Nothing
 * but remat_dtr.c's fixed ladder of bounds sees the budget, and that
 * ladder is the same for every budget, so a larger budget never gets a
 * costlier plan. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

enum { TOPK = 12, WIDE = 4 * TOPK, UNDO = 48 };
/* the descent's estimate modes (bits): excess x bytes, or (EST_CAPPED) at
 * most the bytes off each step over the threshold; EST_STRETCH also takes
 * off what the recompute's inputs, kept past their last use, add */
enum { EST_CAPPED = 1, EST_STRETCH = 2 };
/* the descent's threshold steps: the start's peak / STEP, or / FINE_STEP */
enum { STEP = 200, FINE_STEP = 250 };
/* the descents from the base plan run without a budget when they have at
 * least this many evaluations per gap (base_ladders) */
enum { LADDER_EVALS_PER_GAP = 4 };

typedef struct Desc {
	const RmModel *M;
	RmScorer *S;
	RmRecipe *R;            /* capmet: a move met the cap */
	unsigned char *st;
	int64_t peak, cost, exc;
	double cap;             /* most recompute cost, < 0: none */
	long maxevals;
	int64_t *wsum;          /* [n + 1] prefix of excess by base position */
	int64_t *csum;          /* [n + 1] prefix count of steps over T */
	int mode;               /* estimate: 0 excess x bytes, 1 bytes capped */
	bool stretch;           /* estimate: less the inputs' stretched lives */
	RmDelta *X;             /* scores each move from the current plan's */
} Desc;

/* Whether cost is over the cap; R->capmet records that it was. */
static bool
over_cap(const Desc *D, int64_t cost)
{
	if (D->cap < 0 || (double)cost <= D->cap)
		return false;
	D->R->capmet = true;
	return true;
}

/* Evaluates D->st as the current plan. */
static bool
desc_load(Desc *D, int64_t T)
{
	const MemEval *ev = rm_delta_load(D->X, D->st, T);

	if (!ev)
		return false;
	D->peak = ev->peak;
	D->cost = ev->recompute_cost;
	D->exc = rm_excess(ev, T);
	return true;
}

/* Loads the changed D->st into the incremental scorer. Bookkeeping, not
 * a search's evaluation: S->evals, which bounds the searches, counts the
 * scores of candidate plans alone, as when each was scored in full. */
static void
desc_reload(Desc *D, int64_t T)
{
	long evals = D->S->evals;

	rm_delta_load(D->X, D->st, T);
	D->S->evals = evals;
}

typedef struct Move {
	double est;
	int gap;
	unsigned char to;
} Move;

/* The estimated excess cut of freeing bytes over base positions a+1..b:
 * mode 1: at most bytes off each step over T, at most the excess; mode 0
 * favours big tensors over long stretches. 0 when it cuts none. */
static double
estimate(const Desc *D, int a, int b, double bytes)
{
	double w = (double)(D->wsum[b + 1] - D->wsum[a + 1]);
	double cw = (double)(D->csum[b + 1] - D->csum[a + 1]) * bytes;

	if (w <= 0)
		return 0;
	return D->mode ? (cw < w ? cw : w) : w * bytes;
}

/* The estimated excess that recomputing node p before base position b
 * adds by stretching its inputs' lives from their last use to b. */
static double
stretch(const Desc *D, int p, int b)
{
	const RmModel *M = D->M;
	double e = 0;

	RmRow uses = rm_uses(M, p);
	for (int k = uses.lo; k < uses.hi; k++) {
		int s = M->use[k], tail, last;
		if (M->prod[s] < 0)
			continue;
		tail = rm_tail(M, s);
		last = rm_gap_start(M, tail);
		if (D->st[tail] == GAP_KEEP && last < b)
			e += estimate(D, last, b - 1, (double)M->d->t[s].bytes);
	}
	return e;
}

/* Keeps m[0..*nm) the WIDE moves with the best estimates, best first. */
static void
offer(Move *m, int *nm, double est, int g, unsigned char to)
{
	if (est <= 0 || (*nm == WIDE && m[WIDE - 1].est >= est))
		return;
	int i = *nm < WIDE ? (*nm)++ : WIDE - 1;
	for (; i > 0 && m[i - 1].est < est; i--)
		m[i] = m[i - 1];
	m[i] = (Move){est, g, to};
}

/* The WIDE moves with the best estimated excess cut per cost, from the
 * excess by base position of the current plan (in S->ev). */
static int
moves(Desc *D, int64_t T, Move *m)
{
	const RmModel *M = D->M;
	RmScorer *S = D->S;
	const MemEval *ev = &S->ev;
	int nm = 0;

	memset(D->wsum, 0, sizeof *D->wsum * (size_t)(M->n + 1));
	memset(D->csum, 0, sizeof *D->csum * (size_t)(M->n + 1));
	for (int s = 0; s < ev->nsteps; s++) {
		if (ev->live_bytes[s] > T) {
			D->wsum[S->b.posof[s] + 1] = ck_sat_add(D->wsum[S->b.posof[s] + 1],
			                                      ev->live_bytes[s] - T);
			D->csum[S->b.posof[s] + 1]++;
		}
	}
	for (int x = 0; x < M->n; x++) {
		D->wsum[x + 1] = ck_sat_add(D->wsum[x + 1], D->wsum[x]);
		D->csum[x + 1] += D->csum[x];
	}
	for (int g = 0; g < M->ngap; g++) {
		int t = M->gtensor[g], a = rm_gap_start(M, g), b = M->gend[g];
		if (D->st[g] == GAP_TRANSIENT || D->st[g] == GAP_EARLY ||
		    b - a < 2 || b >= M->n || M->d->t[t].persistent_view)
			continue;
		double c = (double)(M->d->node[M->prod[t]].cost + M->c0);
		double bytes = (double)M->d->t[t].bytes;
		if (D->st[g] == GAP_STICKY) {
			offer(m, &nm, 0.25 * estimate(D, a, b, bytes) / c, g,
			      GAP_TRANSIENT);
			continue;
		}
		double gain = estimate(D, a, b, bytes);
		if (D->stretch)
			gain -= stretch(D, M->prod[t], b);
		offer(m, &nm, gain / c, g, GAP_STICKY);
		if (M->gearly[g] >= 0)
			offer(m, &nm, estimate(D, a, M->gearly[g] - 1, bytes) / c,
			      g, GAP_EARLY);
	}
	return nm;
}

/* Applies move m (variant 1 also drops the tails of the recomputed node's
 * inputs that are past their last use, so that they are recomputed rather
 * than stretched), saving what it changed in undo[]. */
static int
apply(Desc *D, const Move *m, int variant, int *undo_g, unsigned char *undo_s)
{
	const RmModel *M = D->M;
	int nu = 0, p = M->prod[M->gtensor[m->gap]], b = M->gend[m->gap];

	undo_g[nu] = m->gap;
	undo_s[nu++] = D->st[m->gap];
	D->st[m->gap] = m->to;
	RmRow uses = rm_uses(M, p);
	for (int k = uses.lo; variant && nu < 64 && k < uses.hi; k++) {
		int s = M->use[k], tail;
		if (M->prod[s] < 0)
			continue;
		tail = rm_tail(M, s);
		if (rm_gap_start(M, tail) >= b || D->st[tail] != GAP_KEEP)
			continue;
		undo_g[nu] = tail;
		undo_s[nu++] = D->st[tail];
		D->st[tail] = GAP_TRANSIENT;
	}
	return nu;
}

static void
revert(Desc *D, int nu, const int *undo_g, const unsigned char *undo_s)
{
	while (nu-- > 0)
		D->st[undo_g[nu]] = undo_s[nu];
}

/* One greedy step: applies the move with the best exact excess cut per
 * added cost, trying TOPK candidates at a time. False when none of WIDE
 * cuts the excess. */
static bool
desc_step(Desc *D, int64_t T)
{
	const RmModel *M = D->M;
	RmScorer *S = D->S;
	Move m[WIDE];
	int nm = moves(D, T, m), best = -1, bestv = 0, nu;
	int ug[64];
	unsigned char us[64];
	double bestr = 0;

	for (int i = 0; i < nm && S->evals < D->maxevals; i++) {
		if (i % TOPK == 0 && best >= 0)
			break;
		for (int v = 0; v < (m[i].to == GAP_EARLY ? 1 : 2); v++) {
			nu = apply(D, &m[i], v, ug, us);
			if (v == 1 && nu == 1) {
				revert(D, nu, ug, us);
				continue;
			}
			RmScore sc;
			bool ok = rm_delta_gaps(D->X, D->st, ug, nu, &sc);
			revert(D, nu, ug, us);
			if (!ok || over_cap(D, sc.cost))
				continue;
			int64_t cut = ck_sat_sub(D->exc, sc.exc);
			int64_t dc = sc.cost - D->cost;
			double r = (double)cut / (double)ck_sat_add(dc > 0 ? dc : 0, M->c0);
			if (cut > 0 && r > bestr) {
				bestr = r;
				best = i;
				bestv = v;
			}
		}
	}
	if (best < 0)
		return false;
	apply(D, &m[best], bestv, ug, us);
	return desc_load(D, T);
}

/* Greedy moves until the peak is at most T. */
static bool
descend(Desc *D, int64_t T)
{
	if (!desc_load(D, T))
		return false;
	while (D->peak > T) {
		if (D->S->evals >= D->maxevals || !desc_step(D, T))
			return false;
	}
	return true;
}

static const RmModel *sort_model;

/* Dropped gaps, costliest producer first, then by index. */
static int
by_cost(const void *pa, const void *pb)
{
	const RmModel *M = sort_model;
	int a = *(const int *)pa, b = *(const int *)pb;
	int64_t ca = M->d->node[M->prod[M->gtensor[a]]].cost;
	int64_t cb = M->d->node[M->prod[M->gtensor[b]]].cost;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	return a - b;
}

/* Undoes the costliest drops that the peak <= T does not need. */
static void
undo(Desc *D, int64_t T, int *buf)
{
	const RmModel *M = D->M;
	RmScorer *S = D->S;
	int nb = 0;

	for (int g = 0; g < M->ngap; g++)
		if (D->st[g] != GAP_KEEP &&
		    M->d->node[M->prod[M->gtensor[g]]].cost > 0)
			buf[nb++] = g;
	sort_model = M;
	qsort(buf, (size_t)nb, sizeof *buf, by_cost);
	for (int i = 0; i < nb && i < UNDO && S->evals < D->maxevals; i++) {
		unsigned char old = D->st[buf[i]];
		D->st[buf[i]] = old == GAP_TRANSIENT ? GAP_STICKY : GAP_KEEP;
		RmScore sc;
		if (rm_delta_gaps(D->X, D->st, &buf[i], 1, &sc) && sc.peak <= T &&
		    sc.cost < D->cost) {
			D->peak = sc.peak;
			D->cost = sc.cost;
			desc_reload(D, T);
		} else {
			D->st[buf[i]] = old;
		}
	}
}

/* From start, lowers the threshold by step (the start's peak / div) until
 * stuck, adding each threshold's plan to the pool. */
static void
ladder(RmScorer *S, RmRecipe *R, RmPool *pool, const unsigned char *start,
       double cap, long evals, int mode, int div)
{
	const RmModel *M = S->m;
	Desc D = {0};
	Arena a = {0};
	int *buf = ar_alloc(&a, sizeof *buf * ((size_t)M->ngap + 1));

	D.M = M;
	D.S = S;
	D.R = R;
	D.mode = mode & EST_CAPPED;
	D.stretch = mode & EST_STRETCH;
	D.cap = cap;
	D.maxevals = S->evals + evals;
	D.wsum = ar_alloc(&a, sizeof *D.wsum * ((size_t)M->n + 2));
	D.csum = ar_alloc(&a, sizeof *D.csum * ((size_t)M->n + 2));
	D.X = rm_delta_new(S, &a);
	D.st = ar_alloc(&a, (size_t)M->ngap + 1);
	memcpy(D.st, start, (size_t)M->ngap);
	if (desc_load(&D, 0)) {
		int64_t step = D.peak / div + 1;
		int64_t T = D.peak - step;
		while (T > 0 && descend(&D, T)) {
			undo(&D, T, buf);
			rm_pool_add(pool, M, D.st, rm_eval_state(S, D.st));
			T = (D.peak < T ? D.peak : T) - step;
		}
	}
	ar_free(&a);
}

/* The descent over another order ord instead of the base order, once in
 * each estimate mode m whose bit (1 << m) is set in modes, when that
 * order's peak is below the base order's; its plans join the pool as
 * explicit schedules. False when it did not run. */
static bool
ladder_reordered(const RmModel *M, RmRecipe *R, RmPool *pool, double cap,
                 long evals, const int *ord, int modes, int div)
{
	bool ran = false;
	Dag d2 = *M->d;
	RmModel M2;
	RmScorer S2;
	RmPool p2 = {0};
	Arena a = {0};

	d2.base_order = (int *)ord;
	rm_model_init(&M2, &d2);
	rm_scorer_init(&S2, &M2);
	unsigned char *st = rm_state_new(&M2, &a);
	rm_pool_add(&p2, &M2, st, rm_eval_state(&S2, st));
	if (p2.n > 0 && p2.c[0].peak < pool->c[0].peak) {
		ran = true;
		for (int m = 0; m <= (EST_CAPPED | EST_STRETCH); m++)
			if (modes >> m & 1)
				ladder(&S2, R, &p2, p2.c[0].state, cap, evals, m, div);
	}
	/* each plan joined p2 scored by rm_eval_state; its steps are rebuilt */
	for (int i = 0; i < p2.n; i++) {
		MemEval ev = {0};
		ev.peak = p2.c[i].peak;
		ev.recompute_cost = p2.c[i].cost;
		if (rm_build(&S2, p2.c[i].state))
			rm_pool_add_sched(pool, S2.b.step, S2.b.nstep, &ev);
	}
	rm_pool_free(&p2);
	rm_scorer_free(&S2);
	rm_model_free(&M2);
	ar_free(&a);
	return ran;
}

/* The pool's smallest peak within the cap among the gap-state plans (the
 * first is one), so that the descent can go on from it. */
static int
best_within(const RmPool *pool, double cap)
{
	int b = 0;

	for (int i = 1; i < pool->n; i++)
		if (pool->c[i].state && (cap < 0 || (double)pool->c[i].cost <= cap) &&
		    (pool->c[i].peak < pool->c[b].peak ||
		     ((double)pool->c[b].cost > cap && cap >= 0)))
			b = i;
	return b;
}

/* Every work budget of -O2, from the graph's size. Training graphs have
 * the chain DP's plans to start from; general DAGs rely on the descent
 * alone and get more evaluations.
 *
 * The evaluation-bound searches (the descent, the reorderings, the
 * nested plans' trims) get a fixed work up to a size, so each takes about
 * the same time there; past it the work shrinks as 1/size, so that -O2's
 * time falls as a graph grows, until the descent stops (desc_size),
 * rather than doubling on the way. Training graphs from 4,000 (the trims
 * from 8,000), general DAGs from 10,000 (Checkmate's largest,
 * random_layered_n1000, is 6,876): at 8 ZeRO-3 ranks BERT with 64 layers
 * took 1.45 s of CPU with the full work, 0.80 s now, its peak 1.6%
 * higher; every example's peak is the same. A seeded search (ZeRO-2 and
 * 3 start from the stage below's plan, which a search of its own found)
 * takes half the descent's and the final reordering's work: sd_unet at
 * ZeRO-3 took 1.15 s with the full work, with every example's peak the
 * same (half the nested plans' reordering too lost LLaMA's best plan at
 * 8 ZeRO-3 ranks with no cap, 1.040 -> 1.050 of the bound). */
enum { EFFORT_FULL_TRAIN = 4000, EFFORT_FULL_DAG = 10000 };

/* A pipeline's K stages share one analysis's work (PlanGoal.work_share =
 * 1/K): each stage of a 1F1B pipeline with K micro-batches is about the
 * size of the whole model, so with the full work each, GPT-2 with 24
 * blocks took 2.7 s of CPU at 8 stages and 0.38 s unpipelined. */
double
rm_work_share(const PlanGoal *goal)
{
	double s = goal->work_share;

	return s > 0 && s < 1 ? s : 1;
}

static RmEffort
rm_effort(const RmModel *M, const PlanGoal *goal)
{
	RmEffort e = {0};
	long size = M->n + 1 + (M->has_backward ? M->nuses : 0);
	long dsize = M->n + M->nuses + 1;
	long full = M->has_backward ? EFFORT_FULL_TRAIN : EFFORT_FULL_DAG;
	double share = rm_work_share(goal);
	double f = share * (dsize <= full ? 1 : (double)full / (double)dsize);
	double ft = share * (dsize <= 2 * full ? 1 : 2 * (double)full / (double)dsize);
	double fs = goal->seed.n > 0 && goal->budget < 0 ? f / 2 : f;

	e.size = dsize;
	e.chain_work = 30000000;
	e.chain_budget_work = 60000000;
	/* each chain plan is a whole evaluation: on the largest chains (a
	 * 50,000-step one is about 450,000) six of each keep -O2 within
	 * about 5x of -O0 */
	e.chain_fine = dsize < 200000 ? 12 : 6;
	e.chain_coarse = dsize < 50000 ? 24 : dsize < 200000 ? 12 : 6;
	e.desc_size = 20000;
	e.desc_evals = (long)(fs * (double)((M->has_backward ? 10000000L : 6000000L) / size));
	if (e.desc_evals > 20000)
		e.desc_evals = 20000;
	e.climb_size = 400;
	e.climb_evals = size < e.climb_size ? 400000 / size : 0;
	e.kicks = M->d->nnode <= 24 ? 10000 : 0;
	e.dtr_size = 40000;
	/* about 0.1 s, shared evenly by the simulation's candidates */
	e.dtr_work = 4000000L;
	e.dtr_ladder = dsize < 4000 ? 48 : dsize < 20000 ? 12 : 4;
	/* random orders move backward steps too; on tiny graphs 16 left
	 * one of test_exact's 200 random graphs 6% above the optimum */
	e.dtr_orders = dsize < 200 ? 48 : 1;
	e.dtr_tries = 1000000L / dsize < 8 ? 8 : 1000000L / dsize;
	e.order_work = (long)(f * 40000000.0);
	e.reorder_work = (long)(fs * 40000000.0);
	/* improving the least-bytes order before the descent runs on it: a
	 * quarter of that on training graphs, whose plans keep to the base
	 * order's structure (no example's peak changes; sd_unet at ZeRO-3
	 * 0.98 -> 0.85 s) */
	e.lborder_work = M->has_backward ? e.order_work / 4 : e.order_work;
	e.reorder_plans = 4;
	/* fewer than 8 tries do not pay for the plans they evaluate again */
	e.nest_trims = (int)(ft * 48);
	if (e.nest_trims < 8)
		e.nest_trims = 0;
	/* the trim search's branch and bounds, per rung of its ladder */
	e.trim_work = 1000000L;
	/* its remove and repair: 5x on small graphs (mobilenet at 0.8 needs
	 * that for its optimum); none on large ones, where the time goes to
	 * the descent (random layered n1000 at 0.9 would gain 1690 -> 1677
	 * for about 0.05 s) */
	e.trim_repair = dsize < 2000 ? 5000000L : 0;
	e.exact_work = RM_EXACT_WORK;
	return e;
}

/* The exact search's plan joins the pool when the search finishes within
 * its work (without a budget; under one, only when the search without
 * it finished, so that whether it runs does not depend on the budget);
 * true then: it is optimal for the goal (the least peak within the cap,
 * the cheapest at that peak; or the cheapest within the budget, else the
 * least peak), so no other plan can beat it. */
static bool
exact_plan(RmScorer *S, RmRecipe *R, RmPool *pool, const PlanGoal *goal)
{
	const Dag *d = S->m->d;
	Arena a = {0};
	PlanResult r;
	Schedule found;
	const MemEval *ev, *best;

	if (goal->budget >= 0 && !R->exact_done)
		return false;
	r = rm_exact_within(d, goal, R->eff->exact_work, &found, &a);
	ev = r.error ? NULL : rm_eval_steps(S, r.sched.step, r.sched.n);
	if (ev && ev->peak == r.peak && ev->recompute_cost == r.recompute_cost)
		rm_pool_add_sched(pool, r.sched.step, r.sched.n, ev);
	else
		ev = NULL;
	/* where it gave up, its best schedule so far is a candidate all the
	 * same (the steps below run as usual) */
	if (found.n && (best = rm_eval_steps(S, found.step, found.n)))  /* NULL: refused */
		rm_pool_add_sched(pool, found.step, found.n, best);
	if (goal->budget < 0)
		R->exact_done = ev != NULL;
	ar_free(&a);
	return ev != NULL;
}

/* The nested chain's plans (remat_chain.c), last and in pools of their
 * own (leaves of any length; short leaves; leaves of any length under
 * the background less each piece's freed bytes, and those below the
 * cap's budget), each reordered there (reorder) as the final reordering
 * does the best plans: the searches before them see the same pool as
 * without them, so adding them can only lower the pick. */
static void
nested_plans(RmScorer *S, RmRecipe *R, RmPool *pool, double cap, bool reorder)
{
	RmPool np[RM_NEST_POOLS] = {{0}};

	rm_chain_nested_plans(S, R, np, cap);
	/* the best 4 of each, with 1/16 of the final reordering's work (with
	 * a quarter it took 0.3 s of CPU on sd_unet, where no nested plan
	 * wins): a reordered peak does not follow the peak before, and at 8
	 * ZeRO-3 ranks with no cap LLaMA's best came from a third plan
	 * (2,853,981,696 -> 2,826,710,528 bytes, 1.050 -> 1.040 of the bound;
	 * with the best 2 a cap of 2 did better than none). Every example's
	 * peak at the default cap is the same as with 2. */
	for (int p = 0; p < RM_NEST_POOLS; p++) {
		if (reorder && np[p].n > 0)
			rm_reorder_pool(S, R, &np[p], cap, 4, 0, R->eff->order_work / 16);
		for (int i = 0; i < np[p].n; i++) {
			MemEval ev = {0};
			ev.peak = np[p].c[i].peak;
			ev.recompute_cost = np[p].c[i].cost;
			rm_pool_add_sched(pool, np[p].c[i].sched, np[p].c[i].nsched, &ev);
		}
		rm_pool_free(&np[p]);
	}
}

/* The most recompute cost the searches may spend: the cap without a
 * budget (under one, none); < 0: no limit. */
static double
recompute_cap(const RmModel *M, const PlanGoal *goal)
{
	if (goal->budget >= 0 || goal->max_recompute < 0)
		return -1;
	return goal->max_recompute * (double)M->d->forward_cost;
}

/* The descents from the base plan (keep everything). On a training graph
 * without a budget they run only where they have LADDER_EVALS_PER_GAP
 * evaluations or more per gap: with fewer their plans end far above the
 * chain DP's and the descent from the best of those (DenseNet at 8 ZeRO-3
 * ranks with --accumulate 2, 2.1 a gap: 1.15 GB after all their
 * evaluations, against 466 MB; 45% of -O2's instructions there), and no
 * example's peak rises without them. With more they reach the bottom, and
 * there the plan they stop at is often the cheapest of the least peak:
 * on the Checkmate graphs (8-152 a gap), where the peak is one op's
 * working set, skipping them kept every peak but recomputed 1.1-6.5x more
 * (VGG19 1,729,995 against 264,240), and ResNet-50's other plan needs an
 * arena 2.4% over its peak. A budget's run picks among plans of every
 * peak, and the cheapest fitting one may be one of theirs: where the plain
 * run left them, it runs them first, with the cap and work the plain run
 * had. */
static void
base_ladders(RmScorer *S, RmRecipe *R, RmPool *pool, double cap, long evals)
{
	ladder(S, R, pool, pool->c[0].state, cap, evals, 0, STEP);
	ladder(S, R, pool, pool->c[0].state, cap, evals, EST_CAPPED, STEP);
}

/* Every search of the recipe but the exact one (steps 1-5 of
 * docs/planner.md). */
static void
o2_searches(RmScorer *S, RmRecipe *R, RmPool *pool, const PlanGoal *goal)
{
	const RmModel *M = S->m;
	double cap = recompute_cap(M, goal);
	RmEffort eff = rm_effort(M, goal);
	long size = M->n + 1 + (M->has_backward ? M->nuses : 0);
	long evals = eff.desc_evals;

	R->eff = &eff;

	/* Under a budget, after the plain run (rm_plan) whose searches below
	 * met no cap: the same searches without a cap would make the same
	 * plans again, which are in the pool already. */
	bool again = goal->budget >= 0 && R->o2_shared;
	R->capmet = false;
	if (goal->budget >= 0 && R->o2_deferred) {
		PlanGoal plain = *goal;         /* the plain run's cap and work */
		plain.budget = -1;
		R->o2_deferred = false;
		base_ladders(S, R, pool, recompute_cap(M, &plain),
		             rm_effort(M, &plain).desc_evals);
		again = again && !R->capmet;
		R->capmet = false;
	}
	if (!again) {
		rm_plan_o1(S, pool);
		rm_chain_plans(S, R, pool, cap);
	}
	if (goal->budget >= 0) {
		rm_chain_budget_plans(S, R, pool, goal->budget);
		rm_cover_plans(S, pool, goal->budget, eff.size);
	}
	if (M->n > eff.desc_size) {
		if (!again)
			nested_plans(S, R, pool, cap, false);
		R->eff = NULL;
		return;
	}
	/* On general DAGs the descent gets most evaluations on the orders that
	 * start lower: the least-bytes order improved by moves (its plans are
	 * the cheapest at moderate budgets), and that order as built, with
	 * only the excess x bytes estimate (it gets furthest down). There the
	 * estimates that count the inputs' stretched lives do best: on random
	 * layered graphs a recompute's inputs are mostly gone by the time it
	 * runs, and the moves that ignore it come first and fail (n1000 at
	 * 0.8: TDI 5.85% without, 2.79% with). Training graphs keep them on
	 * the base order, whose gaps match the forward/backward structure,
	 * and so does the search for the smallest peak (no budget), where the
	 * base order's descent goes further. */
	const int *lb = rm_least_bytes_order(S, R);
	bool re = again ? R->o2_reordered :
	          lb && ladder_reordered(M, R, pool, cap, M->has_backward ?
	                                 evals / 2 : evals / 4, lb,
	                                 M->has_backward ? 1 << 0 | 1 << EST_CAPPED :
	                                 1 << 0 | 1 << EST_STRETCH |
	                                 1 << (EST_STRETCH | EST_CAPPED), STEP);
	if (re && !M->has_backward && goal->budget >= 0) {
		Arena a = {0};
		int *plain = ar_alloc(&a, sizeof *plain * ((size_t)M->d->nnode + 1));
		/* the plain order's descent in finer steps (more plans near any
		 * budget) takes the base order's share: its plans were never
		 * the cheapest fitting ones here */
		if (rm_topo_order(M, 0, plain))
			ladder_reordered(M, R, pool, cap, 3 * evals / 5, plain,
			                 1 << EST_STRETCH, FINE_STEP);
		ar_free(&a);
	} else if (!again && goal->budget < 0 && M->has_backward &&
	           evals < LADDER_EVALS_PER_GAP * (long)M->ngap) {
		R->o2_deferred = true;
	} else if (!again) {
		base_ladders(S, R, pool, cap, evals);
	}
	if (goal->budget < 0) {
		R->o2_shared = !R->capmet;
		R->o2_reordered = re;
		int b = best_within(pool, cap);
		if (b != 0) {
			Arena a = {0};
			unsigned char *st = ar_alloc(&a, (size_t)M->ngap + 1);
			memcpy(st, pool->c[b].state, (size_t)M->ngap);
			ladder(S, R, pool, st, cap, evals / 2, 0, STEP);
			ar_free(&a);
		}
	}
	/* every plan so far ignores the budget; so do these, on small graphs
	 * (the smallest peaks, with no cap under a budget) */
	if (goal->budget < 0 || size < eff.climb_size)
		rm_plan_dtr(S, R, pool, -1, cap);
	if (size < eff.climb_size)
		rm_climb(S, pool, cap, eff.climb_evals, eff.kicks);
	/* a fixed ladder of bounds up to the budget: each plan is the same
	 * whatever the budget, so a larger budget sees a superset */
	if (goal->budget >= 0) {
		rm_trim_plans(S, R, pool, goal->budget);
		rm_plan_dtr(S, R, pool, goal->budget, -1);
	}
	/* the best plans with their steps reordered where the spec allows
	 * (backward steps too) and what lives across their peak recomputed
	 * within the cap; not under a budget, so that every budget sees the
	 * same plans */
	if (goal->budget < 0)
		rm_reorder_pool(S, R, pool, cap, eff.reorder_plans, 0, eff.reorder_work);
	if (!again)
		nested_plans(S, R, pool, cap, goal->budget < 0);
	R->eff = NULL;
}

void
rm_plan_o2(RmScorer *S, RmRecipe *R, RmPool *pool, const PlanGoal *goal)
{
	RmEffort eff = rm_effort(S->m, goal);
	bool found;

	/* small graphs: the optimum, when the exact search finds it within a
	 * fixed work (counted, not timed: the plan depends on the graph
	 * alone) */
	R->eff = &eff;
	found = exact_plan(S, R, pool, goal);
	R->eff = NULL;
	if (found)
		return;
	if (goal->budget >= 0 && R->exact_done) {
		/* the run without the budget stopped at its exact plan, and the
		 * budget's searches build on what its searches make (and skip
		 * what they would repeat): those come first, as without the
		 * exact search */
		PlanGoal plain = *goal;
		plain.budget = -1;
		o2_searches(S, R, pool, &plain);
	}
	o2_searches(S, R, pool, goal);
}

void
rm_plan_o2_late(RmScorer *S, RmRecipe *R, RmPool *pool, int from, const PlanGoal *goal)
{
	RmEffort eff = rm_effort(S->m, goal);
	double cap = recompute_cap(S->m, goal);

	/* one of rm_reorder_pool's plans' share of the work */
	R->eff = &eff;
	rm_reorder_pool(S, R, pool, cap, 1, from, eff.reorder_work / eff.reorder_plans);
	R->eff = NULL;
}
