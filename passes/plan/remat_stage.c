/* passes/plan/remat_stage.c -- --budget's last planner on plain DAGs (the
 * Checkmate graphs, random layered graphs): re-minimizes the recompute cost
 * of the pool's plans under a fixed peak bound, in Checkmate's stage model.
 *
 * A plan is a topological order (the first run of every node) and a set of
 * recomputes (v, k): node v runs again right before the order's k-th node
 * (stage k; a stage's recomputes in order position). Any such set is a
 * valid schedule: every input of v already ran before v's first run. The
 * gap states of remat_model.c and the explicit schedules of the other
 * planners are such plans (a repeated step belongs to the stage of the
 * next first run), so any pool plan can be a start.
 *
 * A candidate recompute frees a tensor alive across a step over the bound
 * without being read there: its producer at the stage of its next use
 * (alone, or with the inputs whose lives it would otherwise stretch across
 * that step), at the latest stage where its inputs are all still there, or
 * at the stage right after the step. Under each bound, the start first
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
 * (RmEffort.stage_work and stage_repair / size), never in time.
 *
 * The bounds form a fixed ladder, ceil(p x j / 100) for the base plan's
 * peak p and j a multiple of RUNG, from the pool's smallest peak up to the
 * budget, each started from the cheaper of the pool's cheapest plan under
 * it and the rung below's result. The ladder and its starts do not depend
 * on the budget (rm_plan_o2 calls this before anything that does), so a
 * larger budget sees every plan a smaller one does; a budget between two
 * rungs gets the lower one's plan. Scoring is rm_score's shortcut of
 * lv_eval's rules, so only simple Dags (remat_model.c) take part; each
 * rung's plan joins the pool scored by lv_eval. Reads the Dag only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* The ladder's step (percent of the base plan's peak); the branch and
 * bound's depth and, when narrow, its branches per node; the work of each
 * branch and bound at each rung is RmEffort.stage_work (evaluations x size). */
enum { RUNG = 5, BNB_DEPTH = 16, BNB_K = 4 };
/* remove and repair: the stages around a recompute taken out with it, and
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

typedef struct Stage {
	RmCtx *C;
	const Dag *d;
	int n;                  /* order length (= nnode: simple Dags) */
	int *ord, *at;          /* the order, and each node's position in it */
	int *step, *stg;        /* the built schedule, each step's stage */
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
} Stage;

/* Grows a plan to hold n pairs. */
static void
plan_reserve(Stage *S, Plan *P, int n)
{
	if (n <= P->cap)
		return;
	int cap = P->cap ? P->cap : 16;
	while (cap < n)
		cap *= 2;
	P->p = ar_grow(&S->mem, P->p, sizeof *P->p * (size_t)P->cap,
	               sizeof *P->p * (size_t)cap);
	P->cap = cap;
}

static void
plan_copy(Stage *S, Plan *to, const Plan *from)
{
	plan_reserve(S, to, from->np);
	if (from->np)   /* an empty plan may have no array: memcpy needs one */
		memcpy(to->p, from->p, sizeof *to->p * (size_t)from->np);
	to->np = from->np;
	to->peak = from->peak;
	to->cost = from->cost;
}

/* Whether a sorts before b: by stage, then order position. */
static bool
before(const Stage *S, Pair a, Pair b)
{
	return a.k != b.k ? a.k < b.k : S->at[a.v] < S->at[b.v];
}

/* Inserts (k, v) in order; false when it is there already. */
static bool
plan_add(Stage *S, Plan *P, int k, int v)
{
	Pair x = {k, v};
	int i = P->np;

	while (i > 0 && before(S, x, P->p[i - 1]))
		i--;
	if (i > 0 && P->p[i - 1].k == k && P->p[i - 1].v == v)
		return false;
	plan_reserve(S, P, P->np + 1);
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
close_inst(Stage *S, int t)
{
	int i = S->ninst++;

	S->diff[S->birth[t]] += S->d->t[t].bytes;
	S->diff[S->last[t] + 1] -= S->d->t[t].bytes;
	S->it[i] = t;
	S->ib[i] = S->birth[t];
	S->il[i] = S->last[t];
	S->inext[i] = S->ihead[t];
	S->ihead[t] = i;
	S->iuse[i] = S->ufirst[t];
}

/* Builds P's schedule and scores it by liveness (rm_score's rules); sets
 * P->peak and P->cost. */
static void
score(Stage *S, Plan *P)
{
	const Dag *d = S->d;
	int ns = S->n + P->np, j = 0;
	int64_t run = 0;

	if (ns > S->capstep) {
		size_t o = (size_t)S->capstep + 1, nn = (size_t)ns + 1;
		S->step = ar_grow(&S->mem, S->step, sizeof *S->step * o, sizeof *S->step * nn);
		S->stg = ar_grow(&S->mem, S->stg, sizeof *S->stg * o, sizeof *S->stg * nn);
		S->re = ar_grow(&S->mem, S->re, sizeof *S->re * o, sizeof *S->re * nn);
		S->diff = ar_grow(&S->mem, S->diff, sizeof *S->diff * o, sizeof *S->diff * nn);
		S->live = ar_grow(&S->mem, S->live, sizeof *S->live * o, sizeof *S->live * nn);
		o *= (size_t)S->maxout;
		nn *= (size_t)S->maxout;
		S->it = ar_grow(&S->mem, S->it, sizeof *S->it * o, sizeof *S->it * nn);
		S->ib = ar_grow(&S->mem, S->ib, sizeof *S->ib * o, sizeof *S->ib * nn);
		S->il = ar_grow(&S->mem, S->il, sizeof *S->il * o, sizeof *S->il * nn);
		S->inext = ar_grow(&S->mem, S->inext, sizeof *S->inext * o, sizeof *S->inext * nn);
		S->iuse = ar_grow(&S->mem, S->iuse, sizeof *S->iuse * o, sizeof *S->iuse * nn);
		S->capstep = ns;
	}
	S->nstep = 0;
	for (int x = 0; x < S->n; x++) {
		for (; j < P->np && P->p[j].k == x; j++) {
			S->step[S->nstep] = P->p[j].v;
			S->stg[S->nstep] = x;
			S->re[S->nstep++] = true;
		}
		S->step[S->nstep] = S->ord[x];
		S->stg[S->nstep] = x;
		S->re[S->nstep++] = false;
	}
	memset(S->diff, 0, sizeof *S->diff * (size_t)(S->nstep + 1));
	memset(S->birth, 0xff, sizeof *S->birth * (size_t)d->nt);
	memset(S->ihead, 0xff, sizeof *S->ihead * (size_t)d->nt);
	S->ninst = 0;
	S->nread = 0;
	P->cost = 0;
	for (int i = 0; i < S->nstep; i++) {
		const DagNode *v = &d->node[S->step[i]];
		if (S->nread + v->nin > S->capread) {
			int cap = 2 * (S->nread + v->nin) + 64;
			S->rstep = ar_grow(&S->mem, S->rstep, sizeof *S->rstep * (size_t)S->capread,
			                   sizeof *S->rstep * (size_t)cap);
			S->rnext = ar_grow(&S->mem, S->rnext, sizeof *S->rnext * (size_t)S->capread,
			                   sizeof *S->rnext * (size_t)cap);
			S->capread = cap;
		}
		for (int q = 0; q < v->nin; q++) {
			int u = v->in[q], r = S->nread++;
			S->last[u] = i;
			S->rstep[r] = i;
			S->rnext[r] = -1;
			if (S->ufirst[u] < 0)
				S->ufirst[u] = r;
			else
				S->rnext[S->ulast[u]] = r;
			S->ulast[u] = r;
		}
		for (int q = 0; q < v->nout; q++) {
			int t = v->out[q];
			if (S->birth[t] >= 0)
				close_inst(S, t);
			S->birth[t] = S->last[t] = i;
			S->ufirst[t] = -1;
		}
		if (S->re[i])
			P->cost += v->cost;
		S->diff[i] += dag_workspace(d, S->step[i]);
		S->diff[i + 1] -= dag_workspace(d, S->step[i]);
	}
	for (int t = 0; t < d->nt; t++)
		if (S->birth[t] >= 0)
			close_inst(S, t);
	P->peak = -1;
	for (int i = 0; i < S->nstep; i++) {
		run += S->diff[i];
		S->live[i] = run;
		if (run > P->peak) {
			P->peak = run;
			S->peak_step = i;
		}
	}
	S->left--;
}

static int64_t
excess(const Stage *S, int64_t L)
{
	int64_t e = 0;

	for (int i = 0; i < S->nstep; i++)
		if (S->live[i] > L)
			e += S->live[i] - L;
	return e;
}

/* Whether step i reads t. */
static bool
reads(const Stage *S, int i, int t)
{
	const DagNode *v = &S->d->node[S->step[i]];

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
 * each tensor alive across it, unread there, its producer at the stage of
 * the next use (alone, then with the inputs whose current instances would
 * otherwise stretch across s), at the latest stage before that where its
 * inputs are all still there, and at the stage after s. */
static int
candidates(Stage *S, int s, Cand *c, int max)
{
	const Dag *d = S->d;
	RmCtx *C = S->C;
	int nc = 0;

	S->left--;              /* a scan of the instances costs about one evaluation */
	for (int i = 0; i < S->ninst && nc + 4 <= max; i++) {
		int t = S->it[i], p = C->prod[t], f;
		if (p < 0 || S->ib[i] >= s || S->il[i] <= s || reads(S, s, t))
			continue;
		int r = S->iuse[i];
		while (r >= 0 && S->rstep[r] <= s)
			r = S->rnext[r];
		if (r < 0)
			continue;
		f = S->rstep[r];
		if (S->stg[f] <= S->stg[s])
			continue;
		Cand a = {S->stg[f], p, 0, {0}};
		int kl = S->stg[f];
		c[nc++] = a;
		for (int q = 0; q < d->node[p].nin; q++) {
			int u = d->node[p].in[q], best = -1;
			for (int h = S->ihead[u]; h >= 0; h = S->inext[h])
				if (S->ib[h] < f && (best < 0 || S->ib[h] > S->ib[best]))
					best = h;
			if (best < 0)
				continue;
			if (S->stg[S->il[best]] < kl)
				kl = S->stg[S->il[best]];
			if (C->prod[u] >= 0 && S->il[best] < s && a.ninp < 8)
				a.inp[a.ninp++] = C->prod[u];
		}
		if (a.ninp > 0)
			c[nc++] = a;
		/* where every input is still there, as late as that is */
		if (kl > S->stg[s] && kl < S->stg[f]) {
			Cand e = {kl, p, 0, {0}};
			c[nc++] = e;
		}
		if (S->stg[s] + 1 < S->stg[f] && S->stg[s] + 1 != kl) {
			Cand e = {S->stg[s] + 1, p, 0, {0}};
			c[nc++] = e;
		}
	}
	return nc;
}

static const Stage *sort_stage;
static const Plan *sort_plan;

/* Pair indices, costliest node first, then later stage first. */
static int
by_cost(const void *pa, const void *pb)
{
	const Pair *a = &sort_plan->p[*(const int *)pa], *b = &sort_plan->p[*(const int *)pb];
	int64_t ca = sort_stage->d->node[a->v].cost, cb = sort_stage->d->node[b->v].cost;

	if (ca != cb)
		return ca > cb ? -1 : 1;
	return *(const int *)pb - *(const int *)pa;
}

/* Drops every recompute whose removal keeps the peak at most L,
 * costliest first, in rounds until one drops none. P is feasible on entry
 * and scored on return. */
static void
prune(Stage *S, Plan *P, Plan *tmp, int64_t L)
{
	bool changed = true;
	int *idx;
	Pair *x;

	if (P->np > S->capidx) {
		S->idx = ar_grow(&S->mem, S->idx, sizeof *S->idx * (size_t)S->capidx,
		                 sizeof *S->idx * (size_t)P->np);
		S->xp = ar_grow(&S->mem, S->xp, sizeof *S->xp * (size_t)S->capidx,
		                sizeof *S->xp * (size_t)P->np);
		S->capidx = P->np;
	}
	idx = S->idx;
	x = S->xp;
	while (changed && S->left > 0) {
		int n = P->np;
		changed = false;
		for (int i = 0; i < n; i++)
			idx[i] = i;
		sort_stage = S;
		sort_plan = P;
		qsort(idx, (size_t)n, sizeof *idx, by_cost);
		for (int i = 0; i < n; i++)
			x[i] = P->p[idx[i]];
		for (int i = 0; i < n && S->left > 0; i++) {
			plan_copy(S, tmp, P);
			for (int j = 0; j < tmp->np; j++)
				if (tmp->p[j].k == x[i].k && tmp->p[j].v == x[i].v) {
					plan_del(tmp, j);
					break;
				}
			score(S, tmp);
			if (tmp->peak <= L) {
				plan_copy(S, P, tmp);
				changed = true;
			}
		}
	}
	score(S, P);
}

/* A lower bound on the recompute cost to add before step s is at most L:
 * only tensors alive across s, unread there, can leave it, each for at
 * least its producer's cost; the cheapest bytes first, the last one in
 * part (the fractional knapsack). */
static int64_t
step_bound(Stage *S, int s, int64_t L)
{
	const Dag *d = S->d;
	int64_t need = S->live[s] - L;
	double lb = 0;
	int n = 0;
	double *r = S->lbr;
	int64_t *b = S->lbb;

	for (int i = 0; i < S->ninst; i++) {
		int t = S->it[i], p = S->C->prod[t];
		if (p < 0 || S->ib[i] >= s || S->il[i] <= s || d->t[t].bytes <= 0 ||
		    reads(S, s, t))
			continue;
		if (n == S->caplb)
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
banned(const Stage *S, const Cand *x)
{
	for (int i = 0; i < S->nban; i++)
		if (S->ban[3 * i] == x->k && S->ban[3 * i + 1] == x->v &&
		    S->ban[3 * i + 2] == (x->ninp > 0))
			return true;
	return false;
}

static void
ban_push(Stage *S, const Cand *x)
{
	if (S->nban == S->capban) {
		int cap = S->capban ? 2 * S->capban : 64;
		S->ban = ar_grow(&S->mem, S->ban, sizeof *S->ban * 3 * (size_t)S->capban,
		                 sizeof *S->ban * 3 * (size_t)cap);
		S->capban = cap;
	}
	S->ban[3 * S->nban] = x->k;
	S->ban[3 * S->nban + 1] = x->v;
	S->ban[3 * S->nban + 2] = x->ninp > 0;
	S->nban++;
}

/* Adds candidate x to P; false when it adds nothing. */
static bool
cand_add(Stage *S, Plan *P, const Cand *x)
{
	bool any = plan_add(S, P, x->k, x->v);

	for (int j = 0; j < x->ninp; j++)
		any |= plan_add(S, P, x->k, x->inp[j]);
	return any;
}

/* Depth-first branch and bound from P: while some step is over L, it
 * branches on the candidates there (the peak step; narrow: the step over L
 * with the fewest candidates, and only its BNB_K best), best exact excess
 * cut per cost first; a branch leaves out what its earlier siblings took,
 * so no set of recomputes is visited twice. best holds the cheapest plan
 * found (best->cost < 0: none). */
static void
bnb(Stage *S, Plan *P, int64_t L, Plan *best, int depth, bool narrow)
{
	Cand c[96], all[96];
	double r[96];
	int nc = 0, ord[96], s = -1, nban0 = S->nban;
	RmCtx *C = S->C;

	score(S, P);
	if (P->peak <= L) {
		if (best->cost < 0 || P->cost < best->cost)
			plan_copy(S, best, P);
		return;
	}
	if (depth == 0 || S->left <= 0)
		return;
	for (int i = narrow ? 0 : S->peak_step; i < S->nstep && S->left > 0; i++) {
		if (S->live[i] <= L)
			continue;
		if (best->cost >= 0 && P->cost + step_bound(S, i, L) >= best->cost)
			return;
		int m = candidates(S, i, all, 96), mm = 0;
		for (int j = 0; j < m; j++)
			if (!banned(S, &all[j]))
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
	int64_t exc = excess(S, L), cost0 = P->cost;
	int k = 0;
	for (int i = 0; i < nc && S->left > 0; i++) {
		Plan q = {0};
		int64_t add = S->d->node[c[i].v].cost;
		for (int j = 0; j < c[i].ninp; j++)
			add += S->d->node[c[i].inp[j]].cost;
		if (best->cost >= 0 && cost0 + add >= best->cost)
			continue;
		plan_copy(S, &q, P);
		if (!cand_add(S, &q, &c[i]))
			continue;
		score(S, &q);
		if (best->cost >= 0 && q.cost >= best->cost)
			continue;
		int64_t cut = exc - excess(S, L);
		if (cut <= 0)
			continue;
		c[k] = c[i];
		r[k] = (double)cut / (double)(q.cost - cost0 + C->c0);
		ord[k] = k;
		k++;
	}
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && r[ord[j]] > r[ord[j - 1]]; j--) {
			int t = ord[j];
			ord[j] = ord[j - 1];
			ord[j - 1] = t;
		}
	for (int i = 0; i < k && (!narrow || i < BNB_K) && S->left > 0; i++) {
		Plan q = {0};
		const Cand *x = &c[ord[i]];
		plan_copy(S, &q, P);
		cand_add(S, &q, x);
		bnb(S, &q, L, best, depth - 1, narrow);
		if (!narrow)
			ban_push(S, x);
	}
	S->nban = nban0;
}

/* Remove and repair: takes out of P a recompute (costliest first) with
 * every other one within REPAIR_WIN stages of it, and lets the branch and
 * bound (as deep as what it took out) put back cheaper ones under L;
 * keeps the first cheaper plan, prunes it and starts again, until a round
 * finds none or the work runs out. What it finds are compound moves, such
 * as two recomputes traded for one earlier (mobilenet at 0.8: 650 to 600,
 * the optimum), which the branch and bound from no recompute reaches only
 * with about 100x its work. */
static void
repair(Stage *S, Plan *P, Plan *tmp, int64_t L)
{
	bool better = true;
	Plan q = {0}, b2 = {0};

	while (better && S->left > 0) {
		int n = P->np;
		better = false;
		if (n > S->capidx) {
			S->idx = ar_grow(&S->mem, S->idx, sizeof *S->idx * (size_t)S->capidx,
			                 sizeof *S->idx * (size_t)n);
			S->xp = ar_grow(&S->mem, S->xp, sizeof *S->xp * (size_t)S->capidx,
			                sizeof *S->xp * (size_t)n);
			S->capidx = n;
		}
		for (int i = 0; i < n; i++)
			S->idx[i] = i;
		sort_stage = S;
		sort_plan = P;
		qsort(S->idx, (size_t)n, sizeof *S->idx, by_cost);
		for (int i = 0; i < n; i++)
			S->xp[i] = P->p[S->idx[i]];
		for (int i = 0; i < n && S->left > 0 && !better; i++) {
			int out = 0;
			plan_copy(S, &q, P);
			for (int j = 0; j < q.np; j++)
				if (abs(q.p[j].k - S->xp[i].k) <= REPAIR_WIN) {
					plan_del(&q, j--);
					out++;
				}
			plan_copy(S, &b2, P);
			S->nban = 0;
			bnb(S, &q, L, &b2, out, false);
			if (b2.cost < P->cost) {
				plan_copy(S, P, &b2);
				prune(S, P, tmp, L);
				better = true;
			}
		}
	}
}

/* Loads an explicit schedule (first runs in order = the plan's order) as a
 * plan; false when its first runs are not every node once. */
static bool
load(Stage *S, Plan *P, const int *step, int n)
{
	int x = 0, *rep = ar_alloc(&S->mem, sizeof *rep * ((size_t)n + 1));
	int nrep = 0;

	memset(S->at, 0xff, sizeof *S->at * (size_t)S->d->nnode);
	P->np = 0;
	for (int i = 0; i < n; i++) {
		int v = step[i];
		if (S->at[v] >= 0) {
			rep[nrep++] = v;
			continue;
		}
		S->at[v] = x;
		S->ord[x++] = v;
		for (int j = 0; j < nrep; j++)
			plan_add(S, P, x - 1, rep[j]);
		nrep = 0;
	}
	if (x != S->n || nrep > 0)
		return false;
	score(S, P);
	return true;
}

/* Adds P (at the order in S) to the pool, scored by lv_eval. */
static void
add_plan(Stage *S, RmPool *pool, Plan *P)
{
	score(S, P);
	const MemEval *ev = rm_eval_steps(S->C, S->step, S->nstep);
	if (ev)
		rm_pool_add_sched(pool, S->step, S->nstep, ev);
}

void
rm_stage_plans(RmCtx *C, RmPool *pool, int64_t budget)
{
	const Dag *d = C->d;
	Stage S;
	Plan cur = {0}, best = {0}, tmp = {0};
	int64_t p0, pmin;
	int np0 = pool->n, *bord, *bat;
	long size = C->eff->size;

	if (!C->simple || budget < 0 || pool->n == 0 || size > 20000)
		return;
	memset(&S, 0, sizeof S);
	ar_init(&S.mem);
	S.C = C;
	S.d = d;
	S.n = C->n;
	S.ord = ar_alloc(&S.mem, sizeof *S.ord * ((size_t)d->nnode + 1));
	S.at = ar_alloc(&S.mem, sizeof *S.at * ((size_t)d->nnode + 1));
	bord = ar_alloc(&S.mem, sizeof *bord * ((size_t)d->nnode + 1));
	bat = ar_alloc(&S.mem, sizeof *bat * ((size_t)d->nnode + 1));
	S.birth = ar_alloc(&S.mem, sizeof *S.birth * ((size_t)d->nt + 1));
	S.last = ar_alloc(&S.mem, sizeof *S.last * ((size_t)d->nt + 1));
	S.ihead = ar_alloc(&S.mem, sizeof *S.ihead * ((size_t)d->nt + 1));
	S.capstep = -1;
	S.ufirst = ar_alloc(&S.mem, sizeof *S.ufirst * ((size_t)d->nt + 1));
	S.ulast = ar_alloc(&S.mem, sizeof *S.ulast * ((size_t)d->nt + 1));
	S.caplb = 4096;
	S.lbr = ar_alloc(&S.mem, sizeof *S.lbr * (size_t)S.caplb);
	S.lbb = ar_alloc(&S.mem, sizeof *S.lbb * (size_t)S.caplb);
	S.maxout = 1;
	for (int v = 0; v < d->nnode; v++)
		if (d->node[v].nout > S.maxout)
			S.maxout = d->node[v].nout;
	p0 = pool->c[0].peak;
	pmin = p0;
	for (int i = 0; i < np0; i++)
		if (pool->c[i].peak < pmin)
			pmin = pool->c[i].peak;
	int j0 = (int)ceil(100.0 * (double)pmin / (double)p0 / RUNG) * RUNG;
	long per_rung = C->eff->stage_work / size;
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
			const int *st = rm_cand_steps(C, &pool->c[bi], &n);
			if (!st)
				continue;
			if (!load(&S, &cur, st, n))
				continue;
		} else {
			memcpy(S.ord, bord, sizeof *S.ord * (size_t)S.n);
			memcpy(S.at, bat, sizeof *S.at * (size_t)d->nnode);
			plan_copy(&S, &cur, &best);
			score(&S, &cur);
		}
		if (cur.peak > L)
			continue;
		S.left = per_rung;
		prune(&S, &cur, &tmp, L);
		for (int mode = 0; mode < 2; mode++) {
			Plan e = {0}, b2 = {0};
			plan_copy(&S, &b2, &cur);
			S.left = per_rung;
			bnb(&S, &e, L, &b2, BNB_DEPTH, mode == 1);
			if (b2.cost < cur.cost)
				plan_copy(&S, &cur, &b2);
		}
		if (cur.np <= REPAIR_PAIRS) {
			S.left = C->eff->stage_repair / size;
			repair(&S, &cur, &tmp, L);
		}
		plan_copy(&S, &best, &cur);
		memcpy(bord, S.ord, sizeof *bord * (size_t)S.n);
		memcpy(bat, S.at, sizeof *bat * (size_t)d->nnode);
		prev_cost = cur.cost;
		add_plan(&S, pool, &cur);
		if (cur.cost == 0)
			break;
	}
	ar_free(&S.mem);
}
