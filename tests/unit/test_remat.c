/* tests/unit/test_remat.c -- the planners: every plan valid and scored as
 * lv_eval scores it, -O2 <= -O1 and -O0 on peak, the recompute cap, budget
 * monotonicity, the chain optimum against a brute force over checkpoint
 * sets, a U-Net (no cut nodes) improved by -O2, a budget only a reordering
 * meets without recompute, budgets on a chain of views, the searches'
 * shortcut scorer against lv_eval, an EARLY recompute by hand, and the
 * baselines' applicability decided on the Dag against the model's. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "randdag.h"
#include "remat_int.h"

enum { MAXF = 64 };

/* A forward graph: node i reads in[i][..] (earlier nodes; -1: the input x)
 * and makes bytes[i]; the last node is the loss. */
typedef struct Fwd {
	int n;
	int nin[MAXF], in[MAXF][4];
	int64_t bytes[MAXF], cost[MAXF];
} Fwd;

/* Lowers f like passes/graph/lower.c would: forward nodes, then backward nodes
 * in reverse; backward i reads grad(h_i) (not for the loss) and its
 * inputs, and contributes to the grads of its non-x inputs. */
static void
lower(const Fwd *f, Dag *d, Arena *a)
{
	int n = f->n, x = 0;

	memset(d, 0, sizeof *d);
	d->t = ar_alloc(a, sizeof *d->t * (size_t)(2 * n + 1));
	d->node = ar_alloc(a, sizeof *d->node * (size_t)(2 * n));
	d->base_order = ar_alloc(a, sizeof(int) * (size_t)(2 * n));
	d->t[x] = (DagTensor){"x", 64, -1, false, CAT_INPUTS, true, false, -1};
	for (int i = 0; i < n; i++) {
		d->t[1 + i] = (DagTensor){ar_printf(a, "h%d", i), f->bytes[i], -1,
		                          false, CAT_ACTIVATIONS, false, false, -1};
		d->t[1 + n + i] = (DagTensor){ar_printf(a, "grad(h%d)", i),
		                              f->bytes[i], -1, false, CAT_GRADIENTS,
		                              false, false, -1};
	}
	d->nt = 2 * n + 1;
	for (int k = 0; k < 2 * n; k++) {
		int i = k < n ? k : 2 * n - 1 - k;
		DagNode *v = &d->node[k];
		v->name = d->t[1 + i].name;
		v->once = v->is_backward = k >= n;
		v->cost = f->cost[i] * (k >= n ? 2 : 1);
		v->in = ar_alloc(a, sizeof(int) * 6);
		v->out = ar_alloc(a, sizeof(int));
		v->acc = ar_alloc(a, sizeof(DagAcc) * 4);
		v->ir_op = -1;
		if (k < n) {
			v->out[v->nout++] = 1 + i;
		} else if (i != n - 1) {
			v->in[v->nin++] = 1 + n + i;
		}
		for (int j = 0; j < f->nin[i]; j++) {
			int u = f->in[i][j];
			v->in[v->nin++] = u < 0 ? x : 1 + u;
			if (k >= n && u >= 0)
				v->acc[v->nacc++] = (DagAcc){1 + n + u, -1, false};
		}
		d->base_order[k] = k;
	}
	d->nnode = d->nbase = 2 * n;
	dag_finish(d);
}

static void
chain_fwd(Fwd *f, int n, const int64_t *bytes)
{
	memset(f, 0, sizeof *f);
	f->n = n;
	for (int i = 0; i < n; i++) {
		f->nin[i] = 1;
		f->in[i][0] = i - 1;
		f->bytes[i] = bytes ? bytes[i] : 100;
		f->cost[i] = 10;
	}
	f->bytes[n - 1] = 4;
}

/* A U-Net: down d0..d{k-1}, up u{k-1}..u0 where u_i reads u_{i+1} (or the
 * last down) and the skip d_i; then the loss. No node but the first down
 * and the loss is crossed by every path. */
static void
unet_fwd(Fwd *f, int k)
{
	memset(f, 0, sizeof *f);
	for (int i = 0; i < k; i++) {
		f->nin[i] = 1;
		f->in[i][0] = i - 1;
		f->bytes[i] = 400 >> (i < 3 ? i : 3);
		f->cost[i] = 10 + i;
	}
	for (int i = k - 1; i >= 0; i--) {
		int u = f->n = 2 * k - 1 - i;
		f->nin[u] = 2;
		f->in[u][0] = u - 1;
		f->in[u][1] = i;
		f->bytes[u] = 400 >> (i < 3 ? i : 3);
		f->cost[u] = 20;
	}
	f->n = 2 * k + 1;
	f->nin[2 * k] = 1;
	f->in[2 * k][0] = 2 * k - 1;
	f->bytes[2 * k] = 4;
	f->cost[2 * k] = 1;
}

static PlanResult
plan(const Dag *d, int level, double cap, int64_t budget, Arena *a)
{
	PlanGoal g = {level, cap, budget, false};
	return rm_plan(d, &g, a);
}

/* The plan is valid and its figures are lv_eval's. */
static void
check_plan(const Dag *d, const PlanResult *r, Arena *a)
{
	MemEval ev;
	lv_eval(d, &r->sched, &ev, a);
	if (!ev.valid)
		fail_msg("invalid plan: %s", ev.error);
	assert_int_equal(ev.peak, r->peak);
	assert_int_equal(ev.recompute_cost, r->recompute_cost);
	assert_true(r->lower_bound <= r->peak);
}

static void
check_levels(const Dag *d)
{
	Arena a;
	ar_init(&a);
	PlanResult r0 = plan(d, 0, 1.0, -1, &a);
	PlanResult r1 = plan(d, 1, 1.0, -1, &a);
	PlanResult r2 = plan(d, 2, 1.0, -1, &a);
	check_plan(d, &r0, &a);
	check_plan(d, &r1, &a);
	check_plan(d, &r2, &a);
	assert_int_equal(r0.recompute_cost, 0);
	assert_true(r2.peak <= r0.peak);
	if (r1.recompute_cost <= d->forward_cost)
		assert_true(r2.peak <= r1.peak);
	assert_true(r2.recompute_cost <= d->forward_cost);
	ar_free(&a);
}

static void
test_chain_levels(void **state)
{
	(void)state;
	static const int64_t bytes[24] = {300, 100, 200, 50, 400, 100, 100, 250,
	                                  80, 90, 300, 120, 60, 500, 70, 100,
	                                  100, 100, 220, 40, 90, 130, 310, 4};
	Arena a;
	Fwd f;
	Dag d;
	ar_init(&a);
	chain_fwd(&f, 24, bytes);
	lower(&f, &d, &a);
	check_levels(&d);
	PlanResult r0 = plan(&d, 0, 1.0, -1, &a);
	PlanResult r1 = plan(&d, 1, 1.0, -1, &a);
	assert_true(r1.peak < r0.peak);         /* -O1 checkpoints a long chain */
	ar_free(&a);
}

static void
test_unet_improved(void **state)
{
	(void)state;
	Arena a;
	Fwd f;
	Dag d;
	ar_init(&a);
	unet_fwd(&f, 6);
	lower(&f, &d, &a);
	check_levels(&d);
	PlanResult r0 = plan(&d, 0, 1.0, -1, &a);
	PlanResult r2 = plan(&d, 2, 1.0, -1, &a);
	assert_true(r2.peak < r0.peak);
	ar_free(&a);
}

static void
test_recompute_cap(void **state)
{
	(void)state;
	Arena a;
	Fwd f;
	Dag d;
	ar_init(&a);
	chain_fwd(&f, 20, NULL);
	lower(&f, &d, &a);
	PlanResult r0 = plan(&d, 0, 1.0, -1, &a);
	PlanResult none = plan(&d, 2, 0.0, -1, &a);
	check_plan(&d, &none, &a);
	assert_int_equal(none.recompute_cost, 0);
	assert_int_equal(none.peak, r0.peak);
	int64_t last = r0.peak;
	static const double caps[] = {0.1, 0.25, 0.5, 1.0, 2.0, -1};
	for (int i = 0; i < 6; i++) {
		PlanResult r = plan(&d, 2, caps[i], -1, &a);
		check_plan(&d, &r, &a);
		if (caps[i] >= 0)
			assert_true((double)r.recompute_cost <=
			            caps[i] * (double)d.forward_cost);
		assert_true(r.peak <= last);    /* a looser cap never hurts */
		last = r.peak;
	}
	ar_free(&a);
}

static void
test_budget_monotone(void **state)
{
	(void)state;
	Arena a;
	Fwd f;
	Dag d;
	ar_init(&a);
	unet_fwd(&f, 5);
	lower(&f, &d, &a);
	PlanResult r0 = plan(&d, 0, 1.0, -1, &a);
	int64_t lb = rm_lower_bound(&d), prev = -1;
	bool fitted = false;
	for (int64_t b = lb - 10; b <= r0.peak + 10; b += (r0.peak - lb) / 40 + 1) {
		PlanResult r = plan(&d, 2, 1.0, b, &a);
		check_plan(&d, &r, &a);
		assert_int_equal(r.fits, r.peak <= b);
		if (b < lb)
			assert_false(r.fits);
		if (b >= r0.peak) {
			assert_true(r.fits);
			assert_int_equal(r.recompute_cost, 0);
		}
		if (r.fits && prev >= 0)
			assert_true(r.recompute_cost <= prev);
		if (r.fits) {
			prev = r.recompute_cost;
			fitted = true;
		}
	}
	assert_true(fitted);
	ar_free(&a);
}

/* Chen's schedule for checkpoint set keep (bit i: keep h_i), built
 * directly: forward, then backward segment by segment from the end, each
 * recomputed (from its checkpoint) right before its first backward step. */
static Schedule
chen(int n, unsigned keep, Arena *a)
{
	Schedule s = {0, ar_alloc(a, sizeof(int) * (size_t)(4 * n))};
	for (int i = 0; i < n; i++)
		s.step[s.n++] = i;
	int hi = n - 1;
	while (hi >= 0) {
		int lo = hi;
		while (lo > 0 && !(keep >> (lo - 1) & 1))
			lo--;
		/* segment lo..hi: backward of node k reads h_{k-1}, so recompute
		 * the dropped h_lo..h_{hi-1}, then backward hi..lo. */
		for (int k = lo; k < hi; k++)
			if (!(keep >> k & 1))
				s.step[s.n++] = k;
		for (int k = hi; k >= lo; k--)
			s.step[s.n++] = 2 * n - 1 - k;
		hi = lo - 1;
	}
	return s;
}

static void
test_chain_brute_force(void **state)
{
	(void)state;
	static const int64_t bytes[8] = {100, 100, 100, 100, 100, 100, 100, 4};
	static const int64_t hetero[8] = {500, 60, 60, 300, 60, 60, 240, 4};
	const int64_t *sets[2] = {bytes, hetero};
	for (int k = 0; k < 2; k++) {
		Arena a;
		Fwd f;
		Dag d;
		ar_init(&a);
		chain_fwd(&f, 8, sets[k]);
		lower(&f, &d, &a);
		int64_t best = INT64_MAX;
		for (unsigned keep = 0; keep < 1u << 7; keep++) {
			Schedule s = chen(8, keep, &a);
			MemEval ev;
			lv_eval(&d, &s, &ev, &a);
			assert_true(ev.valid);
			if (ev.recompute_cost <= d.forward_cost && ev.peak < best)
				best = ev.peak;
		}
		PlanResult r = plan(&d, 2, 1.0, -1, &a);
		check_plan(&d, &r, &a);
		assert_true(r.peak <= best);
		ar_free(&a);
	}
}

/* A forward-only graph (infer style) whose base order computes the kept
 * output A first: x -> A (1000 bytes, kept to the end); x -> B (100) -> C
 * (2000) -> D (10, kept). Running A last lowers the peak from about 3100
 * to 2100 with no recompute, which only a reordering finds. */
static void
make_reorder(Dag *d, Arena *a)
{
	static const int64_t bytes[] = {1000, 100, 2000, 10};
	static const char *const names[] = {"A", "B", "C", "D"};
	static const int src[] = {-1, -1, 2, 3};        /* tensor read, -1: x */

	memset(d, 0, sizeof *d);
	d->t = ar_alloc(a, sizeof *d->t * 5);
	d->node = ar_alloc(a, sizeof *d->node * 4);
	d->base_order = ar_alloc(a, sizeof(int) * 4);
	d->t[0] = (DagTensor){"x", 64, -1, false, CAT_INPUTS, true, false, -1};
	for (int v = 0; v < 4; v++) {
		DagNode *n = &d->node[v];
		d->t[v + 1] = (DagTensor){names[v], bytes[v], -1, false, CAT_ACTIVATIONS,
		                          false, v == 0 || v == 3, -1};
		n->name = names[v];
		n->cost = 10;
		n->in = ar_alloc(a, sizeof(int));
		n->in[n->nin++] = src[v] < 0 ? 0 : src[v];
		n->out = ar_alloc(a, sizeof(int));
		n->out[n->nout++] = v + 1;
		n->ir_op = -1;
		d->base_order[v] = v;
	}
	d->nt = 5;
	d->nnode = d->nbase = 4;
	dag_finish(d);
}

static void
test_reorder_fits(void **state)
{
	(void)state;
	Arena a;
	Dag d;
	ar_init(&a);
	make_reorder(&d, &a);
	PlanResult r0 = plan(&d, 0, 1.0, -1, &a);
	assert_true(r0.peak >= 3100);
	PlanResult r = plan(&d, 2, 1.0, 2200, &a);
	check_plan(&d, &r, &a);
	assert_true(r.fits);
	assert_int_equal(r.recompute_cost, 0);
	PlanResult m = plan(&d, 2, 0.0, -1, &a);   /* no recompute allowed */
	check_plan(&d, &m, &a);
	assert_true(m.peak <= 2200);
	ar_free(&a);
}

/* Budgets on a chain whose saved tensors are views of their producers'
 * outputs (a reshape after every layer): every plan valid, monotone in the
 * budget, and a budget between the bound and the -O0 peak is met. */
static void
test_views_budget(void **state)
{
	(void)state;
	Arena a;
	Fwd f;
	Dag d;
	ar_init(&a);
	chain_fwd(&f, 12, NULL);
	lower(&f, &d, &a);
	for (int t = 2; t <= 12; t += 2)        /* h1, h3, ...: views of h0, h2 */
		d.t[t].view_src = t - 1;
	dag_finish(&d);
	PlanResult r0 = plan(&d, 0, 1.0, -1, &a);
	check_plan(&d, &r0, &a);
	int64_t prev = -1;
	for (int k = 1; k <= 8; k++) {
		int64_t b = r0.peak - (r0.peak - r0.lower_bound) * (9 - k) / 10;
		PlanResult r = plan(&d, 2, 1.0, b, &a);
		check_plan(&d, &r, &a);
		assert_int_equal(r.fits, r.peak <= b);
		if (r.fits && prev >= 0)
			assert_true(r.recompute_cost <= prev);
		if (r.fits)
			prev = r.recompute_cost;
	}
	assert_true(prev >= 0);
	ar_free(&a);
}

static void
test_lower_bound(void **state)
{
	(void)state;
	Arena a;
	Fwd f;
	Dag d;
	ar_init(&a);
	chain_fwd(&f, 5, NULL);
	lower(&f, &d, &a);
	d.persistent[CAT_PARAMS] = 1000;
	/* backward of h2 reads grad(h2) 100 and h1 100, contributes to
	 * grad(h1) 100: 300 + persistent 1000; and the input x (64), which
	 * backward of h0 reads after it, is live across it in every
	 * schedule (issue 27) */
	assert_int_equal(rm_lower_bound(&d), 1364);
	ar_free(&a);
}

/* A Checkmate-like plain DAG (as frontend/checkmate/checkmate.c imports them): node i
 * makes one tensor and reads 1-3 earlier ones, node 0 reads none; random
 * bytes, costs and sometimes workspace. */
static void
plain_dag(Dag *d, uint64_t *seed, int n, Arena *a)
{
	memset(d, 0, sizeof *d);
	d->nt = d->nnode = d->nbase = n;
	d->t = ar_alloc(a, sizeof *d->t * (size_t)n);
	d->node = ar_alloc(a, sizeof *d->node * (size_t)n);
	d->base_order = ar_alloc(a, sizeof(int) * (size_t)n);
	for (int i = 0; i < n; i++) {
		char *name = ar_alloc(a, 16);
		int *in = ar_alloc(a, sizeof(int) * 3), nin = 0;
		snprintf(name, 16, "n%d", i);
		for (int k = 0; i > 0 && k < 1 + (int)(rd_next(seed) % 3); k++) {
			int u = (int)(rd_next(seed) % (uint64_t)i), dup = 0;
			for (int j = 0; j < nin; j++)
				dup |= in[j] == u;
			if (!dup)
				in[nin++] = u;
		}
		int *out = ar_alloc(a, sizeof(int));
		out[0] = i;
		d->t[i] = (DagTensor){name, 8 + (int64_t)(rd_next(seed) % 500), -1,
		                      false, CAT_ACTIVATIONS, false, false, -1};
		int64_t cost = (int64_t)(rd_next(seed) % 100);
		int64_t ws = rd_next(seed) % 4 ? 0 : 64;
		d->node[i] = (DagNode){.name = name, .cost = cost, .nin = nin, .in = in,
		                       .nout = 1, .out = out, .ir_op = -1};
		dag_set_workspace(d, i, ws, a);
		d->base_order[i] = i;
	}
	dag_finish(d);
}

/* A random training DAG with views (randdag.c), or (!train) a plain one
 * of n nodes. */
static void
train_or_plain_dag(Dag *d, uint64_t *seed, bool train, int n, Arena *a)
{
	RdOptions o = {3, 12, true, true, true, true, false};

	if (train)
		rd_make(d, seed, &o, a);
	else
		plain_dag(d, seed, n, a);
}

/* The gap descent's incremental scorer (remat_delta.c) gives rm_score_state's
 * peak, recompute cost and excess over a threshold for every plan that
 * changes one to three gaps of the loaded one (any states, EARLY
 * included), and tells the plans rm_score_state refuses. */
static void
test_delta_matches_score(void **state)
{
	(void)state;
	uint64_t seed = 11;
	long compared = 0;

	for (int iter = 0; iter < 200; iter++) {
		Arena a;
		Dag d;
		RmCtx C;
		ar_init(&a);
		/* every fourth a training graph with views, which rm_score_state
		 * (and so the scorer) hands to lv_eval */
		train_or_plain_dag(&d, &seed, iter % 4 == 3, 5 + iter % 60, &a);
		rm_ctx_init(&C, &d);
		RmDelta *X = rm_delta_new(&C.s, &a);
		unsigned char *st = rm_state_new(&C.m, &a);
		for (int g = 0; g < C.m.ngap; g++)
			st[g] = rd_next(&seed) % 3 ? GAP_KEEP :
			        (unsigned char)(rd_next(&seed) % 3);
		const MemEval *ev = rm_delta_load(X, st, 0);
		assert_non_null(ev);
		int64_t T = ev->peak - ev->peak / (1 + (int64_t)(rd_next(&seed) % 8));
		assert_non_null(rm_delta_load(X, st, T));
		for (int k = 0; k < 30 && C.m.ngap > 0; k++) {
			int gap[3], ng = 1 + (int)(rd_next(&seed) % 3);
			unsigned char old[3];
			RmScore sc;
			for (int i = 0; i < ng; i++) {
				gap[i] = (int)(rd_next(&seed) % (uint64_t)C.m.ngap);
				old[i] = st[gap[i]];
			}
			for (int i = 0; i < ng; i++) {
				st[gap[i]] = (unsigned char)(rd_next(&seed) % 3);
				if (C.m.gearly[gap[i]] >= 0 && rd_next(&seed) % 2)
					st[gap[i]] = GAP_EARLY;
			}
			bool ok = rm_delta_gaps(X, st, gap, ng, &sc);
			const MemEval *full = rm_score_state(&C.s, st);
			assert_int_equal(ok, full != NULL);
			if (full) {
				int64_t e = 0;
				for (int i = 0; i < full->nsteps; i++)
					if (full->live_bytes[i] > T)
						e += full->live_bytes[i] - T;
				assert_int_equal(sc.peak, full->peak);
				assert_int_equal(sc.cost, full->recompute_cost);
				assert_int_equal(sc.exc, e);
				compared++;
			}
			/* now and then the changed plan becomes the loaded one */
			if (rd_next(&seed) % 4 == 0) {
				assert_non_null(rm_delta_load(X, st, T));
			} else {
				for (int i = ng - 1; i >= 0; i--)
					st[gap[i]] = old[i];
			}
		}
		rm_ctx_free(&C);
		ar_free(&a);
	}
	assert_true(compared > 3000);
}

/* rm_memo_state gives rm_score_state's peak and cost and the excess over
 * T, whether it remembers the state (same T), scored it at another T, or
 * has no room left, and counts one evaluation each time. */
static void
test_memo_matches_score(void **state)
{
	(void)state;
	uint64_t seed = 23;
	long hits = 0, calls = 0;

	for (int iter = 0; iter < 60; iter++) {
		Arena a;
		Dag d;
		RmCtx C;
		ar_init(&a);
		train_or_plain_dag(&d, &seed, iter % 2, 5 + iter % 40, &a);
		rm_ctx_init(&C, &d);
		/* a third of the graphs: room for two states only */
		if (iter % 3 == 2)
			C.s.memo.limit = 2 * (size_t)C.m.ngap;
		enum { NST = 5 };
		unsigned char *st[NST];
		for (int k = 0; k < NST; k++) {
			st[k] = rm_state_new(&C.m, &a);
			for (int g = 0; g < C.m.ngap; g++)
				st[k][g] = rd_next(&seed) % 2 ? GAP_KEEP :
				           (unsigned char)(rd_next(&seed) % 4);
		}
		for (int k = 0; k < 80; k++) {
			const unsigned char *x = st[rd_next(&seed) % NST];
			int64_t T = (int64_t)(rd_next(&seed) % 3) * 200;
			long e0 = C.s.evals, h0 = C.s.memo.hits;
			RmScore sc;
			bool ok = rm_memo_state(&C.s, x, T, &sc);
			assert_int_equal(C.s.evals, e0 + 1);
			hits += C.s.memo.hits - h0;
			calls++;
			assert_true(C.s.memo.n <= (iter % 3 == 2 ? 2 : NST));
			const MemEval *full = rm_score_state(&C.s, x);
			assert_int_equal(ok, full != NULL);
			if (full) {
				assert_int_equal(sc.peak, full->peak);
				assert_int_equal(sc.cost, full->recompute_cost);
				assert_int_equal(sc.exc, rm_excess(full, T));
			}
		}
		rm_ctx_free(&C);
		ar_free(&a);
	}
	/* a quarter of the calls (5 states, 3 thresholds, 80 calls a graph,
	 * fewer where there is room for two) are answered from memory */
	assert_true(hits > calls / 5);
}

/* rm_score_steps, the order search's shortcut, scores explicit steps as
 * lv_eval does, and refuses what it refuses (a use before its tensor is
 * made, a node that never runs). */
static void
test_score_steps_matches_eval(void **state)
{
	(void)state;
	uint64_t seed = 5;

	for (int iter = 0; iter < 200; iter++) {
		Arena a;
		Dag d;
		RmCtx C;
		ar_init(&a);
		plain_dag(&d, &seed, 5 + iter % 40, &a);
		rm_ctx_init(&C, &d);
		unsigned char *st = rm_state_new(&C.m, &a);
		for (int g = 0; g < C.m.ngap; g++)
			st[g] = (unsigned char)(rd_next(&seed) % 3);
		assert_true(rm_build(&C.s, st));
		int n = C.s.b.nstep;
		int *s = ar_alloc(&a, sizeof *s * (size_t)(n + 1));
		memcpy(s, C.s.b.step, sizeof *s * (size_t)n);
		/* a random move of one step, valid or not */
		int i = (int)(rd_next(&seed) % (uint64_t)n), j = (int)(rd_next(&seed) % (uint64_t)n);
		int v = s[i];
		memmove(s + i, s + i + 1, sizeof *s * (size_t)(n - i - 1));
		memmove(s + j + 1, s + j, sizeof *s * (size_t)(n - 1 - j));
		s[j] = v;
		int m = iter % 7 == 0 ? n - 1 : n;      /* drops the last step */
		const MemEval *fast = rm_score_steps(&C.s, s, m);
		bool fok = fast != NULL;
		int64_t peak = fok ? fast->peak : 0, cost = fok ? fast->recompute_cost : 0;
		const MemEval *ev = rm_eval_steps(&C.s, s, m);
		assert_int_equal(fok, ev != NULL);
		if (ev) {
			assert_int_equal(ev->peak, peak);
			assert_int_equal(ev->recompute_cost, cost);
		}
		rm_ctx_free(&C);
		ar_free(&a);
	}
}

/* rm_score_state, the searches' shortcut, scores every plan -- any mix of gap
 * states, EARLY recomputes included -- exactly as lv_eval does. */
static void
test_score_matches_eval(void **state)
{
	(void)state;
	uint64_t seed = 7;
	long early = 0, compared = 0;

	for (int iter = 0; iter < 300; iter++) {
		Arena a;
		Dag d;
		RmCtx C;
		ar_init(&a);
		plain_dag(&d, &seed, 5 + iter % 40, &a);
		rm_ctx_init(&C, &d);
		assert_true(C.m.simple);
		unsigned char *st = rm_state_new(&C.m, &a);
		for (int round = 0; round < 5; round++) {
			for (int g = 0; g < C.m.ngap; g++) {
				st[g] = (unsigned char)(rd_next(&seed) % 3);
				if (C.m.gearly[g] >= 0 && rd_next(&seed) % 2) {
					st[g] = GAP_EARLY;
					early++;
				}
			}
			const MemEval *fast = rm_score_state(&C.s, st);
			assert_non_null(fast);
			int64_t peak = fast->peak, cost = fast->recompute_cost;
			int n = fast->nsteps;
			int64_t *live = malloc(sizeof *live * (size_t)n);
			memcpy(live, fast->live_bytes, sizeof *live * (size_t)n);
			const MemEval *ev = rm_eval_state(&C.s, st);
			assert_non_null(ev);
			assert_int_equal(ev->peak, peak);
			assert_int_equal(ev->recompute_cost, cost);
			assert_int_equal(ev->nsteps, n);
			for (int i = 0; i < n; i++)
				assert_int_equal(ev->live_bytes[i], live[i]);
			free(live);
			compared++;
		}
		rm_ctx_free(&C);
		ar_free(&a);
	}
	assert_int_equal(compared, 1500);
	assert_true(early > 100);
}

/* EARLY recomputes t inside its gap, at the last step that still reads
 * the input of t's node, rather than at t's next use (which would keep
 * that input alive until then). The nodes, their bytes and what they read:
 *   0: n0 1   1: n1 200 (n0)   2: t 50 (n1)   3: n3 1 (t)   4: n4 300 (n3)
 *   5: n5 1 (n4)   6: n6 1 (n1 n5)   7: n7 450 (n6)   8: n8 1 (t n7)
 * Kept: steps 4 and 5 hold n1 + t + 300 + 1 = 551 (the peak); 7 and 8 hold
 * t + 450 + 1 = 501. Dropping t's gap 3..8, sticky: t is recomputed
 * before step 8, so n1 lives on from step 6: 200 + 450 + 50 at that
 * recompute = 700. EARLY: recomputed before step 6, where n1 is still
 * read: 4 and 5 hold 501, 6 holds 252, 7 and 8 501 -- peak 501. */
static void
test_early_recompute(void **state)
{
	(void)state;
	static const int64_t bytes[9] = {1, 200, 50, 1, 300, 1, 1, 450, 1};
	static const int reads[9][2] = {{-1, -1}, {0, -1}, {1, -1}, {2, -1},
	                                {3, -1}, {4, -1}, {1, 5}, {6, -1},
	                                {2, 7}};
	Arena a;
	Dag d;
	RmCtx C;
	ar_init(&a);
	memset(&d, 0, sizeof d);
	d.nt = d.nnode = d.nbase = 9;
	d.t = ar_alloc(&a, sizeof *d.t * 9);
	d.node = ar_alloc(&a, sizeof *d.node * 9);
	d.base_order = ar_alloc(&a, sizeof(int) * 9);
	for (int i = 0; i < 9; i++) {
		int *in = ar_alloc(&a, sizeof(int) * 2), nin = 0;
		int *out = ar_alloc(&a, sizeof(int));
		for (int j = 0; j < 2; j++)
			if (reads[i][j] >= 0)
				in[nin++] = reads[i][j];
		out[0] = i;
		d.t[i] = (DagTensor){"t", bytes[i], -1, false, CAT_ACTIVATIONS,
		                     false, false, -1};
		d.node[i] = (DagNode){.name = "n", .cost = 10 + i, .nin = nin, .in = in,
		                      .nout = 1, .out = out, .ir_op = -1};
		d.base_order[i] = i;
	}
	dag_finish(&d);
	rm_ctx_init(&C, &d);
	unsigned char *st = rm_state_new(&C.m, &a);
	int g = C.m.gofs[2] + 1;          /* t's gap from step 3 to step 8 */
	assert_int_equal(C.m.gend[g], 8);
	assert_int_equal(C.m.gearly[g], 6);
	assert_int_equal(rm_eval_state(&C.s, st)->peak, 551);
	st[g] = GAP_STICKY;
	assert_int_equal(rm_eval_state(&C.s, st)->peak, 700);
	st[g] = GAP_EARLY;
	const MemEval *ev = rm_eval_state(&C.s, st);
	assert_int_equal(ev->peak, 501);
	assert_int_equal(ev->recompute_cost, 12);
	assert_int_equal(C.s.b.nstep, 10);
	assert_int_equal(C.s.b.step[6], 2);         /* t, right before n6 */
	assert_int_equal(C.s.b.step[7], 6);
	rm_ctx_free(&C);
	ar_free(&a);
}

/* rm_sqrtn_applies and rm_perblock_applies, which decide from the Dag
 * alone, agree with the baselines' own tests on the planner's model
 * (rm_sqrtn_state, rm_perblock_state) on random training and inference
 * DAGs: some with every forward tensor dropped from the backward nodes'
 * inputs (nothing to checkpoint), some with forward nodes in def calls.
 * Both answers occur, for both baselines. */
static void
test_baselines_apply(void **state)
{
	(void)state;
	uint64_t seed = 23;
	int yes[2] = {0, 0}, no[2] = {0, 0};

	for (int iter = 0; iter < 300; iter++) {
		RdOptions o = {1, 10, iter % 5 != 0, iter % 2 == 0, iter % 3 == 0, true, iter % 4 != 0};
		Arena a;
		Dag d;
		RmCtx C;
		ar_init(&a);
		rd_make(&d, &seed, &o, &a);
		bool *fwd_made = ar_alloc(&a, (size_t)d.nt + 1);
		for (int v = 0; v < d.nnode; v++)
			for (int j = 0; j < d.node[v].nout && !d.node[v].once; j++)
				fwd_made[d.node[v].out[j]] = true;
		for (int v = 0; iter % 3 == 1 && v < d.nnode; v++) {
			DagNode *n = &d.node[v];
			int k = 0;
			for (int j = 0; n->is_backward && j < n->nin; j++)
				if (!fwd_made[n->in[j]])
					n->in[k++] = n->in[j];
			if (n->is_backward)
				n->nin = k;
		}
		for (int v = 0; iter % 2 == 1 && v < d.nnode; v++)
			if (!d.node[v].once && rd_next(&seed) % 3)
				d.node[v].block_plus1 = 1 + (int)(rd_next(&seed) % 3);
		rm_ctx_init(&C, &d);
		bool sq = rm_sqrtn_state(&C.m, rm_state_new(&C.m, &a));
		bool pb = rm_perblock_state(&C.m, rm_state_new(&C.m, &a));
		assert_int_equal(rm_sqrtn_applies(&d), sq);
		assert_int_equal(rm_perblock_applies(&d), pb);
		(sq ? yes : no)[0]++;
		(pb ? yes : no)[1]++;
		rm_ctx_free(&C);
		ar_free(&a);
	}
	assert_true(yes[0] > 0 && no[0] > 0 && yes[1] > 0 && no[1] > 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain_levels),
		cmocka_unit_test(test_unet_improved),
		cmocka_unit_test(test_recompute_cap),
		cmocka_unit_test(test_budget_monotone),
		cmocka_unit_test(test_chain_brute_force),
		cmocka_unit_test(test_lower_bound),
		cmocka_unit_test(test_reorder_fits),
		cmocka_unit_test(test_views_budget),
		cmocka_unit_test(test_score_matches_eval),
		cmocka_unit_test(test_delta_matches_score),
		cmocka_unit_test(test_memo_matches_score),
		cmocka_unit_test(test_score_steps_matches_eval),
		cmocka_unit_test(test_early_recompute),
		cmocka_unit_test(test_baselines_apply),
	};
	return cmocka_run_group_tests_name("remat", tests, NULL, NULL);
}
