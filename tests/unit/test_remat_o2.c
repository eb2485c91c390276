/* tests/unit/test_remat_o2.c -- properties of -O2 (passes/plan/remat_o2.c)
 * on generated graphs: random training DAGs (branches, skips, views, extra
 * outputs, workspace, params), long chains and transformer-like stacks.
 * For every cap: -O2's peak is at or below -O0's, and at or below -O1's
 * whenever -O1 stays within the cap; its recompute is within the cap; its
 * schedule replays through vf_check with the figures it claims. And the
 * regression of issue 9's first finding: checkpoint plans recompute each
 * segment from its checkpoint instead of keeping the segment's
 * forward-only tensors alive (a chain of matmul + relu pairs, where relu
 * saves its output, must reach about sqrt(n) segments' worth). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "dag.h"
#include "randdag.h"
#include "remat_int.h"

enum { MAXN = 4096 };

static PlanResult
plan(const Dag *d, int level, double cap, Arena *a)
{
	PlanGoal g = {level, cap, -1, false};
	return rm_plan(d, &g, a);
}

/* The plan replays through both evaluators with the figures it claims. */
static void
check_plan(const Dag *d, const PlanResult *r, Arena *a, const char *what)
{
	MemEval ev;
	char why[512];

	lv_eval(d, &r->sched, &ev, a);
	if (!ev.valid)
		fail_msg("%s: invalid schedule: %s", what, ev.error);
	if (!vf_check(d, &r->sched, &ev, why, sizeof why))
		fail_msg("%s: %s", what, why);
	if (ev.peak != r->peak || ev.recompute_cost != r->recompute_cost)
		fail_msg("%s: claims peak %lld cost %lld, schedule has %lld, %lld",
		         what, (long long)r->peak, (long long)r->recompute_cost,
		         (long long)ev.peak, (long long)ev.recompute_cost);
}

/* -O2 against -O0 and -O1 at caps 0.3, 1 and none. */
static void
check_baselines(const Dag *d, const char *name)
{
	static const double caps[] = {0.3, 1.0, -1};
	Arena a;
	char what[96];

	ar_init(&a);
	PlanResult r0 = plan(d, 0, 1.0, &a), r1 = plan(d, 1, 1.0, &a);
	snprintf(what, sizeof what, "%s -O1", name);
	check_plan(d, &r1, &a, what);
	for (int i = 0; i < 3; i++) {
		double cap = caps[i] < 0 ? -1 : caps[i] * (double)d->forward_cost;
		PlanResult r2 = plan(d, 2, caps[i], &a);
		snprintf(what, sizeof what, "%s -O2 cap %g", name, caps[i]);
		check_plan(d, &r2, &a, what);
		if (r2.peak > r0.peak)
			fail_msg("%s: peak %lld above -O0's %lld", what,
			         (long long)r2.peak, (long long)r0.peak);
		if ((cap < 0 || (double)r1.recompute_cost <= cap) && r2.peak > r1.peak)
			fail_msg("%s: peak %lld above -O1's %lld", what,
			         (long long)r2.peak, (long long)r1.peak);
		if (cap >= 0 && (double)r2.recompute_cost > cap)
			fail_msg("%s: recompute %lld over the cap %g", what,
			         (long long)r2.recompute_cost, cap);
	}
	ar_free(&a);
}

static void
test_random_dags(void **state)
{
	RdOptions o = {4, 14, true, true, true, true, true};
	uint64_t seed = 909;
	char name[32];
	(void)state;

	for (int k = 0; k < 200; k++) {
		Arena a;
		Dag d;
		ar_init(&a);
		o.train = k % 8 != 7;
		o.views = k % 3 != 2;
		rd_make(&d, &seed, &o, &a);
		snprintf(name, sizeof name, "graph %d", k);
		check_baselines(&d, name);
		ar_free(&a);
	}
}

/* A lowered training graph from forward nodes: node i makes out[i] from
 * in[i][..] (earlier nodes; -1: the input); backward in reverse reads
 * grad(out) (not for the loss) and what saves[i] says (bit 0: the inputs,
 * bit 1: the output), and adds to the grads of its non-input inputs. The
 * last node is the loss. Each forward node carries a param: persistent
 * bytes, and a param grad made by its backward that lives to the end. */
typedef struct Net {
	int n;
	int nin[MAXN], in[MAXN][4], saves[MAXN];
	int64_t bytes[MAXN], cost[MAXN], param[MAXN];
} Net;

static int
tensor(Dag *d, const char *name, int64_t bytes, MemCat cat, bool start,
       bool end)
{
	d->t[d->nt] = (DagTensor){name, bytes, -1, false, cat, start, end, -1};
	return d->nt++;
}

static void
net_lower(const Net *f, Dag *d, Arena *a)
{
	int n = f->n, x, h[MAXN], g[MAXN], pg;

	memset(d, 0, sizeof *d);
	d->t = ar_alloc(a, sizeof *d->t * (size_t)(3 * n + 2));
	d->node = ar_alloc(a, sizeof *d->node * (size_t)(2 * n));
	d->base_order = ar_alloc(a, sizeof(int) * (size_t)(2 * n));
	x = tensor(d, "x", 64, CAT_INPUTS, true, false);
	for (int i = 0; i < n; i++) {
		h[i] = tensor(d, ar_printf(a, "h%d", i), f->bytes[i],
		              CAT_ACTIVATIONS, false, false);
		g[i] = tensor(d, ar_printf(a, "grad(h%d)", i), f->bytes[i],
		              CAT_GRADIENTS, false, false);
		d->persistent[CAT_PARAMS] += f->param[i];
	}
	for (int k = 0; k < 2 * n; k++) {
		int i = k < n ? k : 2 * n - 1 - k;
		DagNode *v = &d->node[k];
		v->name = d->t[h[i]].name;
		v->once = v->is_backward = k >= n;
		v->fwd_plus1 = k >= n ? i + 1 : 0;
		v->cost = f->cost[i] * (k >= n ? 2 : 1);
		v->in = ar_alloc(a, sizeof(int) * 8);
		v->out = ar_alloc(a, sizeof(int) * 2);
		v->acc = ar_alloc(a, sizeof(DagAcc) * 4);
		v->ir_op = -1;
		d->base_order[k] = k;
		if (k < n) {
			v->out[v->nout++] = h[i];
			for (int j = 0; j < f->nin[i]; j++)
				v->in[v->nin++] = f->in[i][j] < 0 ? x : h[f->in[i][j]];
			continue;
		}
		if (i != n - 1)
			v->in[v->nin++] = g[i];
		if (f->saves[i] & 2)
			v->in[v->nin++] = h[i];
		for (int j = 0; j < f->nin[i]; j++) {
			int u = f->in[i][j];
			if ((f->saves[i] & 1) || i == n - 1)
				v->in[v->nin++] = u < 0 ? x : h[u];
			if (u >= 0)
				v->acc[v->nacc++] = (DagAcc){g[u], -1, false};
		}
		if (f->param[i] > 0) {
			pg = tensor(d, ar_printf(a, "grad(w%d)", i), f->param[i],
			            CAT_PARAM_GRADS, false, true);
			v->out[v->nout++] = pg;
		}
	}
	d->nnode = d->nbase = 2 * n;
	dag_finish(d);
}

static void
add(Net *f, int64_t bytes, int64_t cost, int saves, int64_t param, int nin, ...)
{
	va_list ap;
	int i = f->n++;

	va_start(ap, nin);
	f->nin[i] = nin;
	for (int j = 0; j < nin; j++)
		f->in[i][j] = va_arg(ap, int);
	va_end(ap);
	f->bytes[i] = bytes;
	f->cost[i] = cost;
	f->saves[i] = saves;
	f->param[i] = param;
}

/* L layers of z = h @ w (saves its input), h = relu(z) (saves its
 * output), then the loss. */
static void
mlp(Net *f, int L)
{
	memset(f, 0, sizeof *f);
	for (int l = 0; l < L; l++) {
		add(f, 1000, 100, 1, 50, 1, f->n - 1);
		add(f, 1000, 1, 2, 0, 1, f->n - 1);
	}
	add(f, 4, 1, 1, 0, 1, f->n - 1);
}

/* L pre-norm blocks: n = norm(x); q, k, v from n; a = attn(q, k, v) with a
 * big workspace-like output; x += proj(a); then an MLP with a wide hidden
 * layer; x += out. */
static void
stack(Net *f, int L)
{
	memset(f, 0, sizeof *f);
	add(f, 1000, 10, 1, 0, 1, -1);
	for (int l = 0; l < L; l++) {
		int x = f->n - 1;
		add(f, 1000, 5, 1, 2, 1, x);
		int nrm = f->n - 1;
		add(f, 1000, 100, 1, 100, 1, nrm);
		add(f, 1000, 100, 1, 100, 1, nrm);
		add(f, 1000, 100, 1, 100, 1, nrm);
		add(f, 3000, 300, 3, 0, 3, nrm + 1, nrm + 2, nrm + 3);
		add(f, 1000, 100, 1, 100, 1, f->n - 1);
		add(f, 1000, 1, 0, 0, 2, x, f->n - 1);
		x = f->n - 1;
		add(f, 1000, 5, 1, 2, 1, x);
		add(f, 4000, 400, 1, 400, 1, f->n - 1);
		add(f, 4000, 10, 1, 0, 1, f->n - 1);
		add(f, 1000, 400, 1, 400, 1, f->n - 1);
		add(f, 1000, 1, 0, 0, 2, x, f->n - 1);
	}
	add(f, 8000, 100, 1, 100, 1, f->n - 1);
	add(f, 4, 1, 1, 0, 1, f->n - 1);
}

static void
test_chains_and_stacks(void **state)
{
	static Net f;
	char name[32];
	(void)state;

	for (int L = 2; L <= 100; L += L < 10 ? 1 : 13) {
		Arena a;
		Dag d;
		ar_init(&a);
		mlp(&f, L);
		net_lower(&f, &d, &a);
		snprintf(name, sizeof name, "mlp %d", L);
		check_baselines(&d, name);
		ar_free(&a);
	}
	for (int L = 1; L <= 20; L += L < 4 ? 1 : 5) {
		Arena a;
		Dag d;
		ar_init(&a);
		stack(&f, L);
		net_lower(&f, &d, &a);
		snprintf(name, sizeof name, "stack %d", L);
		check_baselines(&d, name);
		ar_free(&a);
	}
}

/* A pipeline stage's share of the work (PlanGoal.work_share, 1/K): the
 * plan is still valid, within the cap and at or below -O0; a share of 0
 * or 1 (or out of range) is the whole work, the same plan as none given. */
static void
test_work_share(void **state)
{
	static Net f;
	static const double shares[] = {0, 1, 2, -0.5};
	(void)state;

	ir_assert(rm_work_share(&(PlanGoal){.work_share = 0.25}) == 0.25);
	for (size_t i = 0; i < sizeof shares / sizeof shares[0]; i++)
		assert_true(rm_work_share(&(PlanGoal){.work_share = shares[i]}) == 1);
	for (int which = 0; which < 2; which++) {
		Arena a;
		Dag d;
		ar_init(&a);
		if (which)
			stack(&f, 12);
		else
			mlp(&f, 60);
		net_lower(&f, &d, &a);
		PlanGoal whole = {.level = 2, .max_recompute = 1.0, .budget = -1};
		PlanGoal one = whole, eighth = whole;
		one.work_share = 1;
		eighth.work_share = 0.125;
		PlanResult r0 = plan(&d, 0, 1.0, &a), rw = rm_plan(&d, &whole, &a);
		PlanResult r1 = rm_plan(&d, &one, &a), r8 = rm_plan(&d, &eighth, &a);
		check_plan(&d, &r8, &a, "-O2 at an eighth of the work");
		assert_true(r8.peak <= r0.peak);
		assert_true((double)r8.recompute_cost <= (double)d.forward_cost);
		assert_int_equal(rw.peak, r1.peak);
		assert_int_equal(rw.sched.n, r1.sched.n);
		assert_memory_equal(rw.sched.step, r1.sched.step, sizeof *rw.sched.step * (size_t)rw.sched.n);
		ar_free(&a);
	}
}

static void
chain_nocap(RmScorer *S, RmRecipe *R, RmPool *pool)
{
	rm_chain_plans(S, R, pool, -1);
}

static void
nested_nocap(RmScorer *S, RmRecipe *R, RmPool *pool)
{
	RmPool np[RM_NEST_POOLS] = {{0}};

	rm_chain_nested_plans(S, R, np, -1);
	for (int p = 0; p < RM_NEST_POOLS; p++) {
		for (int i = 0; i < np[p].n; i++) {
			MemEval ev = {.peak = np[p].c[i].peak,
			              .recompute_cost = np[p].c[i].cost};
			rm_pool_add_sched(pool, np[p].c[i].sched, np[p].c[i].nsched, &ev);
		}
		rm_pool_free(&np[p]);
	}
}

/* The smallest peak among the plans gen adds to a fresh pool on d. */
static int64_t
best_of(const Dag *d, void (*gen)(RmScorer *, RmRecipe *, RmPool *))
{
	RmEffort eff = {.chain_work = 100000000, .chain_fine = 12,
	                .chain_coarse = 24, .nest_trims = 48};
	RmCtx C;
	RmPool pool = {0};
	int64_t best = INT64_MAX;

	rm_ctx_init(&C, d);
	C.r.eff = &eff;
	gen(&C.s, &C.r, &pool);
	for (int i = 0; i < pool.n; i++)
		if (pool.c[i].peak < best)
			best = pool.c[i].peak;
	rm_pool_free(&pool);
	rm_ctx_free(&C);
	return best;
}

/* Issue 9, finding 1: on 120 matmul + relu layers (1000 bytes each; relu
 * saves its output, matmul its input), the chain DP's plans hold about
 * 2 sqrt(n) layers' activations at their peak: ~11 checkpoints, one
 * ~11-layer segment recomputed, gradients in flight, and the param grads.
 * Plans that release only each tensor's forward-to-backward gap keep every
 * matmul output alive through its tail (the relu recompute reads the old
 * instance), so they cannot go below the 120 matmul outputs. */
/* The chain plans' best peak on an mlp of L layers, lowered into *d,
 * which must hold at most `layers` layers' activations beyond the params
 * and their gradients. */
static int64_t
mlp_chain_within(int L, int layers, Dag *d, Arena *a)
{
	static Net f;

	mlp(&f, L);
	net_lower(&f, d, a);
	int64_t bound = d->persistent[CAT_PARAMS] + L * 50 + layers * 1000;
	int64_t chain = best_of(d, chain_nocap);
	if (chain > bound)
		fail_msg("mlp %d: the chain plans' best peak %lld over %lld: segments are "
		         "not recomputed from their checkpoints", L, (long long)chain,
		         (long long)bound);
	return chain;
}

static void
test_segments_recompute_from_checkpoints(void **state)
{
	Arena a;
	Dag d;
	(void)state;

	ar_init(&a);
	int64_t chain = mlp_chain_within(120, 30, &d, &a);
	PlanResult r2 = plan(&d, 2, 1.0, &a);
	assert_true(r2.peak <= chain);
	check_plan(&d, &r2, &a, "mlp 120 -O2");
	ar_free(&a);
}

/* Issue 29: past 1,023 cuts the chain DP keeps only the cheapest cut of
 * each run of sqrt(r)/16 (remat_chain.c). On 1,500 layers (3,000 cuts,
 * runs of 3) its best plan must still hold no more than sqrt(n) layers'
 * activations beyond the params and their gradients (it holds 21). */
static void
test_long_chain_coarsened(void **state)
{
	Arena a;
	Dag d;
	(void)state;

	ar_init(&a);
	mlp_chain_within(1500, 55, &d, &a);
	ar_free(&a);
}

/* The nested chain DP (rm_nest_dp) against brute force on small random
 * chains: every split tree of (0, end] (leaves, and splits whose right
 * part is solved first with the split's checkpoint held), its recompute
 * and its peak over the leaves (the checkpoints held then, up to the
 * leaf's start, plus the leaf's need), enumerated; for every budget q the
 * least recompute of a tree whose peak is within q must be the DP's. And
 * the DP's own tree, read back with rm_nest_split and simulated with
 * an explicit set of held checkpoints, must cost that and fit q. */
enum { NEST_NB = 7, NEST_Q = 24, NEST_TREES = 4096 };

typedef struct NestTree {
	int64_t cost;
	int peak;
} NestTree;

static int
nest_trees(const RmNest *N, int i, int j, bool first, NestTree *out)
{
	int n = 0;
	int64_t leaf = first ? 0 : N->fc[j] - N->fc[i] - N->own[j];

	if (N->maxleaf == 0 || j - i <= N->maxleaf)
		out[n++] = (NestTree){leaf, N->need[i * N->nb + j]};
	for (int k = i + 1; k < j; k++) {
		NestTree *r = malloc(sizeof *r * NEST_TREES);
		NestTree *l = malloc(sizeof *l * NEST_TREES);
		int nr = nest_trees(N, k, j, first, r), nl = nest_trees(N, i, k, false, l);
		for (int a = 0; a < nr; a++)
			for (int b = 0; b < nl; b++) {
				int pk = N->cu[k] + r[a].peak > l[b].peak ? N->cu[k] + r[a].peak : l[b].peak;
				assert_true(n < NEST_TREES);
				out[n++] = (NestTree){(first ? 0 : N->fc[k] - N->fc[i]) +
				                      r[a].cost + l[b].cost, pk};
			}
		free(r);
		free(l);
	}
	return n;
}

/* The DP's tree for (i, j] with q units, simulated: held[h] marks the
 * checkpoints held; returns its recompute, *peak the most at a leaf. */
static int64_t
nest_walk(const RmNest *N, int i, int j, int q, bool first, bool *held, int *peak)
{
	int k = rm_nest_split(N, i, j, q, first);

	if (k < 0) {
		int m = N->need[i * N->nb + j];
		for (int h = 0; h <= i; h++)
			m += held[h] ? N->cu[h] : 0;
		*peak = m > *peak ? m : *peak;
		return first ? 0 : N->fc[j] - N->fc[i] - N->own[j];
	}
	held[k] = true;
	int64_t c = nest_walk(N, k, j, q - N->cu[k], first, held, peak);
	held[k] = false;
	return c + (first ? 0 : N->fc[k] - N->fc[i]) +
	       nest_walk(N, i, k, q, false, held, peak);
}

static void
test_nest_dp_brute(void **state)
{
	(void)state;
	srand(27);
	for (int iter = 0; iter < 200; iter++) {
		int nb = 3 + iter % (NEST_NB - 2), Q = NEST_Q;
		int cu[NEST_NB], need[NEST_NB * NEST_NB];
		int64_t fc[NEST_NB], own[NEST_NB];
		static int64_t f[NEST_NB * NEST_NB * (NEST_Q + 1)], top[NEST_NB * (NEST_Q + 1)];
		static NestTree t[NEST_TREES];
		fc[0] = 0;
		for (int k = 0; k < nb; k++) {
			cu[k] = k > 0 && k < nb - 1 ? 1 + rand() % 4 : 0;
			own[k] = k > 0 && k < nb - 1 ? 1 + rand() % 3 : 0;
			if (k > 0)
				fc[k] = fc[k - 1] + own[k] + rand() % 5;
		}
		/* a leaf holds its pieces' saved bytes and j's checkpoint */
		for (int i = 0; i < nb; i++)
			for (int j = 0; j < nb; j++)
				need[i * nb + j] = j > i ? cu[j] + 2 * (j - i) + rand() % 3 : Q + 1;
		static int64_t f0[NEST_NB * NEST_NB * (NEST_Q + 1)], top0[NEST_NB * (NEST_Q + 1)];
		static short lo[NEST_NB * NEST_NB + NEST_NB];
		/* every q scanned, then the splits from their first reachable q
		 * (lo): the same tables, split for split */
		RmNest N0 = {.nb = nb, .q = Q, .maxleaf = iter % 3, .cu = cu, .need = need,
		             .fc = fc, .own = own, .f = f0, .top = top0};
		rm_nest_dp(&N0);
		RmNest N = N0;
		N.f = f;
		N.top = top;
		N.lo = lo;
		rm_nest_dp(&N);
		size_t cells = (size_t)nb * (size_t)nb * (size_t)(Q + 1), row = (size_t)nb * (size_t)(Q + 1);
		assert_memory_equal(f, f0, sizeof *f * cells);
		assert_memory_equal(top, top0, sizeof *top * row);
		for (int i = 0; i < nb; i++)
			for (int j = i + 1; j < nb; j++)
				for (int q = 0; q <= Q; q++) {
					assert_int_equal(rm_nest_split(&N, i, j, q, false),
					                 rm_nest_split(&N0, i, j, q, false));
					if (j == nb - 1)
						assert_int_equal(rm_nest_split(&N, i, j, q, true),
						                 rm_nest_split(&N0, i, j, q, true));
				}
		int nt = nest_trees(&N, 0, nb - 1, true, t);
		for (int q = 0; q <= Q; q++) {
			int64_t best = RM_NEST_NONE;
			for (int x = 0; x < nt; x++)
				if (t[x].peak <= q && t[x].cost < best)
					best = t[x].cost;
			if (top[q] != best)
				fail_msg("nb %d q %d: DP %lld, brute force %lld", nb, q,
				         (long long)top[q], (long long)best);
			if (best == RM_NEST_NONE)
				continue;
			bool held[NEST_NB] = {false};
			int peak = 0;
			int64_t c = nest_walk(&N, 0, nb - 1, q, true, held, &peak);
			if (c != best || peak > q)
				fail_msg("nb %d q %d: the DP's tree costs %lld peak %d", nb, q,
				         (long long)c, peak);
		}
	}
}

/* With no recompute cap, the nested plans hold a few checkpoints at once
 * instead of about sqrt(n): on 120 matmul + relu layers the chain's best
 * plan must hold at most 12 layers' activations beyond the params and
 * their gradients (Chen's one level needs about 2 sqrt(120), 22). */
static void
test_nested_chain(void **state)
{
	static Net f;
	Arena a;
	Dag d;
	(void)state;

	ar_init(&a);
	mlp(&f, 120);
	net_lower(&f, &d, &a);
	int64_t bound = d.persistent[CAT_PARAMS] + 120 * 50 + 12 * 1000;
	int64_t nested = best_of(&d, nested_nocap);
	if (nested > bound)
		fail_msg("mlp 120: the nested plans' best peak %lld over %lld",
		         (long long)nested, (long long)bound);
	PlanResult r2 = plan(&d, 2, -1, &a);
	assert_true(r2.peak <= nested);
	check_plan(&d, &r2, &a, "mlp 120 -O2 inf");
	ar_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_dags),
		cmocka_unit_test(test_chains_and_stacks),
		cmocka_unit_test(test_work_share),
		cmocka_unit_test(test_segments_recompute_from_checkpoints),
		cmocka_unit_test(test_long_chain_coarsened),
		cmocka_unit_test(test_nest_dp_brute),
		cmocka_unit_test(test_nested_chain),
	};
	return cmocka_run_group_tests_name("remat_o2", tests, NULL, NULL);
}
