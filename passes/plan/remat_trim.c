/* passes/plan/remat_trim.c -- the trim search, --budget's last planner on
 * plain DAGs (the Checkmate graphs, random layered graphs): trims the
 * recompute cost of the pool's plans under a fixed peak bound, in
 * Checkmate's model of a schedule (what its paper calls stages, slots
 * here: "stage" is a pipeline stage elsewhere in remat).
 *
 * A plan is a topological order (the first run of every node) and a set of
 * recomputes (v, k): node v runs again right before the order's k-th node
 * (slot k; a slot's recomputes in order position). Any such set is a
 * valid schedule: every input of v already ran before v's first run. The
 * gap states of remat_model.c and the explicit schedules of the other
 * planners are such plans (a repeated step belongs to the slot of the
 * next first run), so any pool plan can be a start.
 *
 * A candidate recompute frees a tensor alive across a step over the bound
 * without being read there: its producer at the slot of its next use
 * (alone, or with the inputs whose lives it would otherwise stretch across
 * that step), at the latest slot where its inputs are all still there, or
 * at the slot right after the step. Under each bound, the start first
 * drops every recompute the bound does not need (costliest first); then
 * two depth-first branch and bounds from no recompute, pruned by the best
 * cost so far (at first the start's) and by a fractional-knapsack bound on
 * what the step being branched on still needs: one branches on every
 * candidate at the peak step, each branch leaving out what its earlier
 * siblings took (so no set is visited twice); one on the BNB_K with the
 * most bytes over the bound cut per cost at the step over the bound with
 * the fewest candidates. Last, on plans with few recomputes, remove and
 * repair (repair()): a recompute and its neighbours out, the branch and
 * bound to put back cheaper ones. All work is counted in evaluations
 * (RmEffort.trim_work and trim_repair / size), never in time.
 *
 * The bounds form a fixed ladder, ceil(p x j / 100) for the base plan's
 * peak p and j a multiple of RUNG, from the pool's smallest peak up to the
 * budget, each started from the cheaper of the pool's cheapest plan under
 * it and the rung below's result. The ladder and its starts do not depend
 * on the budget (rm_plan_o2 calls this before anything that does), so a
 * larger budget sees every plan a smaller one does; a budget between two
 * rungs gets the lower one's plan. Scoring is rm_score_state's shortcut of
 * lv_eval's rules, so only simple Dags (remat_model.c) take part; each
 * rung's plan joins the pool scored by lv_eval. Reads the Dag only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* The ladder's step (percent of the base plan's peak); the branch and
 * bound's depth and, when narrow, its branches per node; the work of each
 * branch and bound at each rung is RmEffort.trim_work (evaluations x size). */
enum { RUNG = 5, BNB_DEPTH = 16, BNB_K = 4 };
/* remove and repair: the slots around a recompute taken out with it, and
 * the most recomputes a plan may have for it to run (more: a rung far
 * below any budget the papers use, where it only spends work) */
enum { REPAIR_WIN = 3, REPAIR_PAIRS = 12 };

/* A recompute of node v before the order's k-th node. */
typedef struct Pair {
	int k, v;
} Pair;

typedef struct Plan {
	Pair *p;
	int np, cap;
	int64_t peak, cost;
} Plan;

typedef struct Trim {
	const RmModel *M;
	RmScorer *S;
	const Dag *d;
	int n;                  /* order length (= nnode: simple Dags) */
	int *ord, *at;          /* the order, and each node's position in it */
	int *step, *slot;       /* the built schedule, each step's slot */
	bool *re;               /* [step] a recompute */
	int nstep, capstep;
	int *birth, *last;      /* [nt] the current instance */
	int *ihead, *inext;     /* per tensor, its instances (newest first) */
	int *it, *ib, *il;      /* instance tensor, birth step, last step */
	int ninst, maxout;
	int *iuse;              /* [inst] its first read in rstep/rnext, or -1 */
	int *ufirst, *ulast;    /* [nt] the current instance's reads */
	int *rstep, *rnext, nread, capread; /* reads, chained by instance */
	double *lbr;            /* step_bound's scratch, [caplb] */
	int64_t *lbb;
	int caplb;
	int *idx, capidx;       /* prune's scratch */
	Pair *xp;               /* [capidx] the pairs in that order */
	int *ban, nban, capban; /* bnb: candidates (k, v, with inputs) an
	                           earlier sibling branch took, as 3 ints */
	int64_t *diff, *live;   /* [capstep + 1] */
	int peak_step;          /* the last scored plan's */
	long left;              /* evaluations left */
	Arena mem;
} Trim;

/* Grows a plan to hold n pairs. */
static void
plan_reserve(Trim *T, Plan *P, int n)
{
	if (n <= P->cap)
		return;
	int cap = P->cap ? P->cap : 16;
	while (cap < n)
		cap *= 2;
	P->p = ar_grow(&T->mem, P->p, sizeof *P->p * (size_t)P->cap,
	               sizeof *P->p * (size_t)cap);
	P->cap = cap;
}

static void
plan_copy(Trim *T, Plan *to, const Plan *from)
{
	plan_reserve(T, to, from->np);
	if (from->np)   /* an empty plan may have no array: memcpy needs one */
		memcpy(to->p, from->p, sizeof *to->p * (size_t)from->np);
	to->np = from->np;
	to->peak = from->peak;
	to->cost = from->cost;
}

/* Whether a sorts before b: by slot, then order position. */
static bool
before(const Trim *T, Pair a, Pair b)
{
	return a.k != b.k ? a.k < b.k : T->at[a.v] < T->at[b.v];
}

/* Inserts (k, v) in order; false when it is there already. */
static bool
plan_add(Trim *T, Plan *P, int k, int v)
{
	Pair x = {k, v};
	int i = P->np;

	while (i > 0 && before(T, x, P->p[i - 1]))
		i--;
	if (i > 0 && P->p[i - 1].k == k && P->p[i - 1].v == v)
		return false;
	plan_reserve(T, P, P->np + 1);
	memmove(&P->p[i + 1], &P->p[i], sizeof *P->p * (size_t)(P->np - i));
	P->p[i] = x;
	P->np++;
	return true;
}

static void
plan_del(Plan *P, int i)
{
	memmove(&P->p[i], &P->p[i + 1], sizeof *P->p * (size_t)(P->np - i - 1));
	P->np--;
}

static void
close_inst(Trim *T, int t)
{
	int i = T->ninst++;

	T->diff[T->birth[t]] += T->d->t[t].bytes;
	T->diff[T->last[t] + 1] -= T->d->t[t].bytes;
	T->it[i] = t;
	T->ib[i] = T->birth[t];
	T->il[i] = T->last[t];
	T->inext[i] = T->ihead[t];
	T->ihead[t] = i;
	T->iuse[i] = T->ufirst[t];
}

/* Builds P's schedule and scores it by liveness (rm_score_state's rules); sets
 * P->peak and P->cost. */
static void
score_plan(Trim *T, Plan *P)
{
	const Dag *d = T->d;
	int ns = T->n + P->np, j = 0;
	int64_t run = 0;

	if (ns > T->capstep) {
		size_t o = (size_t)T->capstep + 1, nn = (size_t)ns + 1;
		T->step = ar_grow(&T->mem, T->step, sizeof *T->step * o, sizeof *T->step * nn);
		T->slot = ar_grow(&T->mem, T->slot, sizeof *T->slot * o, sizeof *T->slot * nn);
		T->re = ar_grow(&T->mem, T->re, sizeof *T->re * o, sizeof *T->re * nn);
		T->diff = ar_grow(&T->mem, T->diff, sizeof *T->diff * o, sizeof *T->diff * nn);
		T->live = ar_grow(&T->mem, T->live, sizeof *T->live * o, sizeof *T->live * nn);
		o *= (size_t)T->maxout;
		nn *= (size_t)T->maxout;
		T->it = ar_grow(&T->mem, T->it, sizeof *T->it * o, sizeof *T->it * nn);
		T->ib = ar_grow(&T->mem, T->ib, sizeof *T->ib * o, sizeof *T->ib * nn);
		T->il = ar_grow(&T->mem, T->il, sizeof *T->il * o, sizeof *T->il * nn);
		T->inext = ar_grow(&T->mem, T->inext, sizeof *T->inext * o, sizeof *T->inext * nn);
		T->iuse = ar_grow(&T->mem, T->iuse, sizeof *T->iuse * o, sizeof *T->iuse * nn);
		T->capstep = ns;
	}
	T->nstep = 0;
	for (int x = 0; x < T->n; x++) {
		for (; j < P->np && P->p[j].k == x; j++) {
			T->step[T->nstep] = P->p[j].v;
			T->slot[T->nstep] = x;
			T->re[T->nstep++] = true;
		}
		T->step[T->nstep] = T->ord[x];
		T->slot[T->nstep] = x;
		T->re[T->nstep++] = false;
	}
	memset(T->diff, 0, sizeof *T->diff * (size_t)(T->nstep + 1));
	memset(T->birth, 0xff, sizeof *T->birth * (size_t)d->nt);
	memset(T->ihead, 0xff, sizeof *T->ihead * (size_t)d->nt);
	T->ninst = 0;
	T->nread = 0;
	P->cost = 0;
	for (int i = 0; i < T->nstep; i++) {
		const DagNode *v = &d->node[T->step[i]];
		if (T->nread + v->nin > T->capread) {
			int cap = 2 * (T->nread + v->nin) + 64;
			T->rstep = ar_grow(&T->mem, T->rstep, sizeof *T->rstep * (size_t)T->capread,
			                   sizeof *T->rstep * (size_t)cap);
			T->rnext = ar_grow(&T->mem, T->rnext, sizeof *T->rnext * (size_t)T->capread,
			                   sizeof *T->rnext * (size_t)cap);
			T->capread = cap;
		}
		for (int q = 0; q < v->nin; q++) {
			int u = v->in[q], r = T->nread++;
			T->last[u] = i;
			T->rstep[r] = i;
			T->rnext[r] = -1;
			if (T->ufirst[u] < 0)
				T->ufirst[u] = r;
			else
				T->rnext[T->ulast[u]] = r;
			T->ulast[u] = r;
		}
		for (int q = 0; q < v->nout; q++) {
			int t = v->out[q];
			if (T->birth[t] >= 0)
				close_inst(T, t);
			T->birth[t] = T->last[t] = i;
			T->ufirst[t] = -1;
		}
		if (T->re[i])
			P->cost += v->cost;
		T->diff[i] += dag_workspace(d, T->step[i]);
		T->diff[i + 1] -= dag_workspace(d, T->step[i]);
	}
	for (int t = 0; t < d->nt; t++)
		if (T->birth[t] >= 0)
			close_inst(T, t);
	P->peak = -1;
	for (int i = 0; i < T->nstep; i++) {
		run += T->diff[i];
		T->live[i] = run;
		if (run > P->peak) {
			P->peak = run;
			T->peak_step = i;
		}
	}
	T->left--;
}

static int64_t
excess(const Trim *T, int64_t L)
{
	int64_t e = 0;

	for (int i = 0; i < T->nstep; i++)
		if (T->live[i] > L)
			e += T->live[i] - L;
	return e;
}

/* Whether step i reads t. */
static bool
reads(const Trim *T, int i, int t)
{
	const DagNode *v = &T->d->node[T->step[i]];

	for (int q = 0; q < v->nin; q++)
		if (v->in[q] == t)
			return true;
	return false;
}

typedef struct Cand {
	int k, v, ninp;
	int inp[8];             /* inputs' producers recomputed with it */
} Cand;

/* The candidate recomputes against step s of the plan just scored: for
 * each tensor alive across it, unread there, its producer at the slot of
 * the next use (alone, then with the inputs whose current instances would
 * otherwise stretch across s), at the latest slot before that where its
 * inputs are all still there, and at the slot after s. */
static int
candidates(Trim *T, int s, Cand *c, int max)
{
	const Dag *d = T->d;
	const RmModel *M = T->M;
	int nc = 0;

	T->left--;              /* a scan of the instances costs about one evaluation */
	for (int i = 0; i < T->ninst && nc + 4 <= max; i++) {
		int t = T->it[i], p = M->prod[t], f;
		if (p < 0 || T->ib[i] >= s || T->il[i] <= s || reads(T, s, t))
			continue;
		int r = T->iuse[i];
		while (r >= 0 && T->rstep[r] <= s)
			r = T->rnext[r];
		if (r < 0)
			continue;
		f = T->rstep[r];
		if (T->slot[f] <= T->slot[s])
			continue;
		Cand a = {T->slot[f], p, 0, {0}};
		int kl = T->slot[f];
		c[nc++] = a;
		for (int q = 0; q < d->node[p].nin; q++) {
			int u = d->node[p].in[q], best = -1;
			for (int h = T->ihead[u]; h >= 0; h = T->inext[h])
				if (T->ib[h] < f && (best < 0 || T->ib[h] > T->ib[best]))
					best = h;
			if (best < 0)
				continue;
			if (T->slot[T->il[best]] < kl)
				kl = T->slot[T->il[best]];
			if (M->prod[u] >= 0 && T->il[best] < s && a.ninp < 8)
				a.inp[a.ninp++] = M->prod[u];
		}
		if (a.ninp > 0)
			c[nc++] = a;
		/* where every input is still there, as late as that is */
		if (kl > T->slot[s] && kl < T->slot[f]) {
			Cand e = {kl, p, 0, {0}};
			c[nc++] = e;
		}
		if (T->slot[s] + 1 < T->slot[f] && T->slot[s] + 1 != kl) {
			Cand e = {T->slot[s] + 1, p, 0, {0}};
			c[nc++] = e;
		}
	}
	return nc;
}

static const Trim *sort_trim;
static const Plan *sort_plan;

/* Pair indices, costliest node first, then later slot first. */
static int
by_cost(const void *pa, const void *pb)
{
	const Pair *a = &sort_plan->p[*(const int *)pa], *b = &sort_plan->p[*(const int *)pb];
	int64_t ca = sort_trim->d->node[a->v].cost, cb = sort_trim->d->node[b->v].cost;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	return *(const int *)pb - *(const int *)pa;
}

/* Drops every recompute whose removal keeps the peak at most L,
 * costliest first, in rounds until one drops none. P is feasible on entry
 * and scored on return. */
static void
prune(Trim *T, Plan *P, Plan *tmp, int64_t L)
{
	bool changed = true;
	int *idx;
	Pair *x;

	if (P->np > T->capidx) {
		T->idx = ar_grow(&T->mem, T->idx, sizeof *T->idx * (size_t)T->capidx,
		                 sizeof *T->idx * (size_t)P->np);
		T->xp = ar_grow(&T->mem, T->xp, sizeof *T->xp * (size_t)T->capidx,
		                sizeof *T->xp * (size_t)P->np);
		T->capidx = P->np;
	}
	idx = T->idx;
	x = T->xp;
	while (changed && T->left > 0) {
		int n = P->np;
		changed = false;
		for (int i = 0; i < n; i++)
			idx[i] = i;
		sort_trim = T;
		sort_plan = P;
		qsort(idx, (size_t)n, sizeof *idx, by_cost);
		for (int i = 0; i < n; i++)
			x[i] = P->p[idx[i]];
		for (int i = 0; i < n && T->left > 0; i++) {
			plan_copy(T, tmp, P);
			for (int j = 0; j < tmp->np; j++)
				if (tmp->p[j].k == x[i].k && tmp->p[j].v == x[i].v) {
					plan_del(tmp, j);
					break;
				}
			score_plan(T, tmp);
			if (tmp->peak <= L) {
				plan_copy(T, P, tmp);
				changed = true;
			}
		}
	}
	score_plan(T, P);
}

/* A lower bound on the recompute cost to add before step s is at most L:
 * only tensors alive across s, unread there, can leave it, each for at
 * least its producer's cost; the cheapest bytes first, the last one in
 * part (the fractional knapsack). */
static int64_t
step_bound(Trim *T, int s, int64_t L)
{
	const Dag *d = T->d;
	int64_t need = T->live[s] - L;
	double lb = 0;
	int n = 0;
	double *r = T->lbr;
	int64_t *b = T->lbb;

	for (int i = 0; i < T->ninst; i++) {
		int t = T->it[i], p = T->M->prod[t];
		if (p < 0 || T->ib[i] >= s || T->il[i] <= s || d->t[t].bytes <= 0 ||
		    reads(T, s, t))
			continue;
		if (n == T->caplb)
			return 0;       /* too many to sort here: no bound */
		double x = (double)d->node[p].cost / (double)d->t[t].bytes;
		int j = n++;
		for (; j > 0 && r[j - 1] > x; j--) {
			r[j] = r[j - 1];
			b[j] = b[j - 1];
		}
		r[j] = x;
		b[j] = d->t[t].bytes;
	}
	for (int j = 0; j < n && need > 0; j++) {
		int64_t take = b[j] < need ? b[j] : need;
		lb += r[j] * (double)take;
		need -= take;
	}
	if (need > 0)
		return INT64_MAX / 4;   /* cannot be met by adding recomputes */
	return (int64_t)floor(lb * (1 - 1e-9));
}

/* Whether bnb's earlier sibling branches took candidate x. */
static bool
banned(const Trim *T, const Cand *x)
{
	for (int i = 0; i < T->nban; i++)
		if (T->ban[3 * i] == x->k && T->ban[3 * i + 1] == x->v &&
		    T->ban[3 * i + 2] == (x->ninp > 0))
			return true;
	return false;
}

static void
ban_push(Trim *T, const Cand *x)
{
	if (T->nban == T->capban) {
		int cap = T->capban ? 2 * T->capban : 64;
		T->ban = ar_grow(&T->mem, T->ban, sizeof *T->ban * 3 * (size_t)T->capban,
		                 sizeof *T->ban * 3 * (size_t)cap);
		T->capban = cap;
	}
	T->ban[3 * T->nban] = x->k;
	T->ban[3 * T->nban + 1] = x->v;
	T->ban[3 * T->nban + 2] = x->ninp > 0;
	T->nban++;
}

/* Adds candidate x to P; false when it adds nothing. */
static bool
cand_add(Trim *T, Plan *P, const Cand *x)
{
	bool any = plan_add(T, P, x->k, x->v);

	for (int j = 0; j < x->ninp; j++)
		any |= plan_add(T, P, x->k, x->inp[j]);
	return any;
}

/* Depth-first branch and bound from P: while some step is over L, it
 * branches on the candidates there (the peak step; narrow: the step over L
 * with the fewest candidates, and only its BNB_K best), best exact excess
 * cut per cost first; a branch leaves out what its earlier siblings took,
 * so no set of recomputes is visited twice. best holds the cheapest plan
 * found (best->cost < 0: none). */
static void
bnb(Trim *T, Plan *P, int64_t L, Plan *best, int depth, bool narrow)
{
	Cand c[96], all[96];
	double r[96];
	int nc = 0, ord[96], s = -1, nban0 = T->nban;
	const RmModel *M = T->M;

	score_plan(T, P);
	if (P->peak <= L) {
		if (best->cost < 0 || P->cost < best->cost)
			plan_copy(T, best, P);
		return;
	}
	if (depth == 0 || T->left <= 0)
		return;
	for (int i = narrow ? 0 : T->peak_step; i < T->nstep && T->left > 0; i++) {
		if (T->live[i] <= L)
			continue;
		if (best->cost >= 0 && P->cost + step_bound(T, i, L) >= best->cost)
			return;
		int m = candidates(T, i, all, 96), mm = 0;
		for (int j = 0; j < m; j++)
			if (!banned(T, &all[j]))
				all[mm++] = all[j];
		if (mm == 0)
			return;
		if (s < 0 || mm < nc) {
			s = i;
			nc = mm;
			memcpy(c, all, sizeof *c * (size_t)mm);
		}
		if (!narrow)
			break;
	}
	int64_t exc = excess(T, L), cost0 = P->cost;
	int k = 0;
	for (int i = 0; i < nc && T->left > 0; i++) {
		Plan q = {0};
		int64_t add = T->d->node[c[i].v].cost;
		for (int j = 0; j < c[i].ninp; j++)
			add += T->d->node[c[i].inp[j]].cost;
		if (best->cost >= 0 && cost0 + add >= best->cost)
			continue;
		plan_copy(T, &q, P);
		if (!cand_add(T, &q, &c[i]))
			continue;
		score_plan(T, &q);
		if (best->cost >= 0 && q.cost >= best->cost)
			continue;
		int64_t cut = exc - excess(T, L);
		if (cut <= 0)
			continue;
		c[k] = c[i];
		r[k] = (double)cut / (double)(q.cost - cost0 + M->c0);
		ord[k] = k;
		k++;
	}
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && r[ord[j]] > r[ord[j - 1]]; j--) {
			int t = ord[j];
			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	for (int i = 0; i < k && (!narrow || i < BNB_K) && T->left > 0; i++) {
		Plan q = {0};
		const Cand *x = &c[ord[i]];
		plan_copy(T, &q, P);
		cand_add(T, &q, x);
		bnb(T, &q, L, best, depth - 1, narrow);
		if (!narrow)
			ban_push(T, x);
	}
	T->nban = nban0;
}

/* Remove and repair: takes out of P a recompute (costliest first) with
 * every other one within REPAIR_WIN slots of it, and lets the branch and
 * bound (as deep as what it took out) put back cheaper ones under L;
 * keeps the first cheaper plan, prunes it and starts again, until a round
 * finds none or the work runs out. What it finds are compound moves, such
 * as two recomputes traded for one earlier (mobilenet at 0.8: 650 to 600,
 * the optimum), which the branch and bound from no recompute reaches only
 * with about 100x its work. */
static void
repair(Trim *T, Plan *P, Plan *tmp, int64_t L)
{
	bool better = true;
	Plan q = {0}, b2 = {0};

	while (better && T->left > 0) {
		int n = P->np;
		better = false;
		if (n > T->capidx) {
			T->idx = ar_grow(&T->mem, T->idx, sizeof *T->idx * (size_t)T->capidx,
			                 sizeof *T->idx * (size_t)n);
			T->xp = ar_grow(&T->mem, T->xp, sizeof *T->xp * (size_t)T->capidx,
			                sizeof *T->xp * (size_t)n);
			T->capidx = n;
		}
		for (int i = 0; i < n; i++)
			T->idx[i] = i;
		sort_trim = T;
		sort_plan = P;
		qsort(T->idx, (size_t)n, sizeof *T->idx, by_cost);
		for (int i = 0; i < n; i++)
			T->xp[i] = P->p[T->idx[i]];
		for (int i = 0; i < n && T->left > 0 && !better; i++) {
			int out = 0;
			plan_copy(T, &q, P);
			for (int j = 0; j < q.np; j++)
				if (abs(q.p[j].k - T->xp[i].k) <= REPAIR_WIN) {
					plan_del(&q, j--);
					out++;
				}
			plan_copy(T, &b2, P);
			T->nban = 0;
			bnb(T, &q, L, &b2, out, false);
			if (b2.cost < P->cost) {
				plan_copy(T, P, &b2);
				prune(T, P, tmp, L);
				better = true;
			}
		}
	}
}

/* Loads an explicit schedule (first runs in order = the plan's order) as a
 * plan; false when its first runs are not every node once. */
static bool
load(Trim *T, Plan *P, const int *step, int n)
{
	int x = 0, *rep = ar_alloc(&T->mem, sizeof *rep * ((size_t)n + 1));
	int nrep = 0;

	memset(T->at, 0xff, sizeof *T->at * (size_t)T->d->nnode);
	P->np = 0;
	for (int i = 0; i < n; i++) {
		int v = step[i];
		if (T->at[v] >= 0) {
			rep[nrep++] = v;
			continue;
		}
		T->at[v] = x;
		T->ord[x++] = v;
		for (int j = 0; j < nrep; j++)
			plan_add(T, P, x - 1, rep[j]);
		nrep = 0;
	}
	if (x != T->n || nrep > 0)
		return false;
	score_plan(T, P);
	return true;
}

/* Adds P (at the order in T) to the pool, scored by lv_eval. */
static void
add_plan(Trim *T, RmPool *pool, Plan *P)
{
	score_plan(T, P);
	const MemEval *ev = rm_eval_steps(T->S, T->step, T->nstep);
	if (ev)
		rm_pool_add_sched(pool, T->step, T->nstep, ev);
}

void
rm_trim_plans(RmScorer *S, const RmRecipe *R, RmPool *pool, int64_t budget)
{
	const RmModel *M = S->m;
	const Dag *d = M->d;
	Trim T;
	Plan cur = {0}, best = {0}, tmp = {0};
	int64_t p0, pmin;
	int np0 = pool->n, *bord, *bat;
	long size = R->eff->size;

	if (!M->simple || budget < 0 || pool->n == 0 || size > 20000)
		return;
	memset(&T, 0, sizeof T);
	ar_init(&T.mem);
	T.M = M;
	T.S = S;
	T.d = d;
	T.n = M->n;
	T.ord = ar_alloc(&T.mem, sizeof *T.ord * ((size_t)d->nnode + 1));
	T.at = ar_alloc(&T.mem, sizeof *T.at * ((size_t)d->nnode + 1));
	bord = ar_alloc(&T.mem, sizeof *bord * ((size_t)d->nnode + 1));
	bat = ar_alloc(&T.mem, sizeof *bat * ((size_t)d->nnode + 1));
	T.birth = ar_alloc(&T.mem, sizeof *T.birth * ((size_t)d->nt + 1));
	T.last = ar_alloc(&T.mem, sizeof *T.last * ((size_t)d->nt + 1));
	T.ihead = ar_alloc(&T.mem, sizeof *T.ihead * ((size_t)d->nt + 1));
	T.capstep = -1;
	T.ufirst = ar_alloc(&T.mem, sizeof *T.ufirst * ((size_t)d->nt + 1));
	T.ulast = ar_alloc(&T.mem, sizeof *T.ulast * ((size_t)d->nt + 1));
	T.caplb = 4096;
	T.lbr = ar_alloc(&T.mem, sizeof *T.lbr * (size_t)T.caplb);
	T.lbb = ar_alloc(&T.mem, sizeof *T.lbb * (size_t)T.caplb);
	T.maxout = 1;
	for (int v = 0; v < d->nnode; v++)
		if (d->node[v].nout > T.maxout)
			T.maxout = d->node[v].nout;
	p0 = pool->c[0].peak;
	pmin = p0;
	for (int i = 0; i < np0; i++)
		if (pool->c[i].peak < pmin)
			pmin = pool->c[i].peak;
	int j0 = (int)ceil(100.0 * (double)pmin / (double)p0 / RUNG) * RUNG;
	long per_rung = R->eff->trim_work / size;
	int64_t prev_cost = -1;
	for (int j = j0; j <= 100; j += RUNG) {
		int64_t L = (int64_t)ceil((double)p0 * j / 100.0);
		int bi = -1, n;
		if (L > budget)
			break;
		for (int i = 0; i < np0; i++)
			if (pool->c[i].peak <= L &&
			    (bi < 0 || pool->c[i].cost < pool->c[bi].cost))
				bi = i;
		if (bi < 0 && prev_cost < 0)
			continue;
		bool from_pool = bi >= 0 && (prev_cost < 0 || pool->c[bi].cost < prev_cost);
		if (from_pool) {
			const int *st = rm_cand_steps(S, &pool->c[bi], &n);
			if (!st)
				continue;
			if (!load(&T, &cur, st, n))
				continue;
		} else {
			memcpy(T.ord, bord, sizeof *T.ord * (size_t)T.n);
			memcpy(T.at, bat, sizeof *T.at * (size_t)d->nnode);
			plan_copy(&T, &cur, &best);
			score_plan(&T, &cur);
		}
		if (cur.peak > L)
			continue;
		T.left = per_rung;
		prune(&T, &cur, &tmp, L);
		for (int mode = 0; mode < 2; mode++) {
			Plan e = {0}, b2 = {0};
			plan_copy(&T, &b2, &cur);
			T.left = per_rung;
			bnb(&T, &e, L, &b2, BNB_DEPTH, mode == 1);
			if (b2.cost < cur.cost)
				plan_copy(&T, &cur, &b2);
		}
		if (cur.np <= REPAIR_PAIRS) {
			T.left = R->eff->trim_repair / size;
			repair(&T, &cur, &tmp, L);
		}
		plan_copy(&T, &best, &cur);
		memcpy(bord, T.ord, sizeof *bord * (size_t)T.n);
		memcpy(bat, T.at, sizeof *bat * (size_t)d->nnode);
		prev_cost = cur.cost;
		add_plan(&T, pool, &cur);
		if (cur.cost == 0)
			break;
	}
	ar_free(&T.mem);
}
