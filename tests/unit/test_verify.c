/* tests/unit/test_verify.c -- the independent evaluator (vf_eval) on
 * hand-computed cases for every rule of dag.h, and vf_check against lv_eval
 * on random training graphs with random recomputations. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "plan.h"
#include "randdag.h"

/* A Dag built by hand: up to 16 tensors and 16 nodes. */
typedef struct Hand {
	Dag d;
	DagTensor t[16];
	DagNode n[16];
	int in[16][4], out[16][2];
	DagAcc acc[16][2];
	int order[16];
} Hand;

static Hand *
hand_new(void)
{
	Hand *h = calloc(1, sizeof *h);

	h->d.t = h->t;
	h->d.node = h->n;
	h->d.base_order = h->order;
	return h;
}

static int
tensor(Hand *h, const char *name, int64_t bytes)
{
	int t = h->d.nt++;

	h->t[t] = (DagTensor){name, bytes, -1, false, CAT_ACTIVATIONS, false, false, -1};
	return t;
}

/* A node with inputs in[] (-1 terminated) and at most one output. */
static int
node(Hand *h, const char *name, int64_t cost, int out, const int *in)
{
	int v = h->d.nnode++;
	DagNode *n = &h->n[v];

	n->name = name;
	n->cost = cost;
	n->in = h->in[v];
	n->out = h->out[v];
	n->acc = h->acc[v];
	n->ir_op = -1;
	for (; in && *in >= 0; in++)
		n->in[n->nin++] = *in;
	if (out >= 0)
		n->out[n->nout++] = out;
	h->order[h->d.nbase++] = v;
	return v;
}

static void
acc(Hand *h, int v, int t, int view_src)
{
	h->n[v].acc[h->n[v].nacc++] = (DagAcc){t, view_src};
}

/* Evaluates steps[] (-1 terminated) with vf_eval and, where it exists,
 * checks lv_eval agrees. */
static MemEval
eval(Hand *h, const int *steps, Arena *a)
{
	Schedule s = {0, ar_alloc(a, sizeof(int) * 64)};
	MemEval mine, theirs;
	char why[512];

	for (; *steps >= 0; steps++)
		s.step[s.n++] = *steps;
	dag_finish(&h->d);
	vf_eval(&h->d, &s, &mine, a);
	lv_eval(&h->d, &s, &theirs, a);
	if (!vf_check(&h->d, &s, &theirs, why, sizeof why))
		fail_msg("lv_eval disagrees: %s", why);
	return mine;
}

static void
expect_live(const MemEval *ev, const int64_t *live, int n)
{
	assert_true(ev->valid);
	assert_int_equal(ev->nsteps, n);
	for (int i = 0; i < n; i++)
		if (ev->live_bytes[i] != live[i])
			fail_msg("step %d: live %lld, expected %lld", i,
			         (long long)ev->live_bytes[i], (long long)live[i]);
}

static void
test_chain(void **state)
{
	Hand *h = hand_new();
	Arena a;
	(void)state;
	ar_init(&a);
	int ta = tensor(h, "a", 10), tb = tensor(h, "b", 20), tc = tensor(h, "c", 30);
	node(h, "a", 1, ta, NULL);
	node(h, "b", 1, tb, (int[]){ta, -1});
	node(h, "c", 1, tc, (int[]){tb, -1});
	MemEval ev = eval(h, (int[]){0, 1, 2, -1}, &a);
	expect_live(&ev, (int64_t[]){10, 30, 50}, 3);
	assert_int_equal(ev.peak, 50);
	assert_int_equal(ev.peak_step, 2);
	ar_free(&a);
	free(h);
}

/* A, B, A again, C(a, b): the recomputed a serves C, the first a dies
 * after B. Peak ties go to the first step. */
static void
test_recompute(void **state)
{
	Hand *h = hand_new();
	Arena a;
	(void)state;
	ar_init(&a);
	int ta = tensor(h, "a", 10), tb = tensor(h, "b", 20), tc = tensor(h, "c", 5);
	node(h, "A", 7, ta, NULL);
	node(h, "B", 1, tb, (int[]){ta, -1});
	node(h, "C", 1, tc, (int[]){ta, tb, -1});
	MemEval ev = eval(h, (int[]){0, 1, 0, 2, -1}, &a);
	expect_live(&ev, (int64_t[]){10, 30, 30, 35}, 4);
	assert_int_equal(ev.recompute_cost, 7);
	assert_int_equal(ev.kind[2], STEP_RECOMPUTE);
	assert_int_equal(ev.peak_step, 3);
	ev = eval(h, (int[]){0, 1, 2, -1}, &a);
	expect_live(&ev, (int64_t[]){10, 30, 35}, 3);
	ar_free(&a);
	free(h);
}

/* A view owns nothing but keeps its base alive; an input used by nobody
 * occupies nothing; workspace counts during its step; persistent bytes
 * count everywhere. */
static void
test_view_keeps_base(void **state)
{
	Hand *h = hand_new();
	Arena a;
	(void)state;
	ar_init(&a);
	int x = tensor(h, "x", 100), v = tensor(h, "v", 100), w = tensor(h, "w", 7);
	int y = tensor(h, "y", 10), unused = tensor(h, "u", 1000);
	h->t[x].from_start = h->t[unused].from_start = true;
	h->t[v].view_src = x;
	h->d.persistent[CAT_PARAMS] = 1000;
	node(h, "v", 0, v, (int[]){x, -1});
	node(h, "w", 1, w, NULL);
	node(h, "y", 1, y, (int[]){v, -1});
	dag_set_workspace(&h->d, 1, 3, &a);
	MemEval ev = eval(h, (int[]){0, 1, 2, -1}, &a);
	expect_live(&ev, (int64_t[]){1100, 1110, 1110}, 3);
	assert_int_equal(ev.peak_step, 1);
	ar_free(&a);
	free(h);
}

/* A view made from a recomputed base aliases that copy, not the first. */
static void
test_view_of_recomputed_base(void **state)
{
	Hand *h = hand_new();
	Arena a;
	(void)state;
	ar_init(&a);
	int ta = tensor(h, "a", 40), tv = tensor(h, "v", 40), tz = tensor(h, "z", 1);
	h->t[tv].view_src = ta;
	node(h, "A", 5, ta, NULL);
	node(h, "V", 0, tv, (int[]){ta, -1});
	node(h, "Z", 1, tz, (int[]){tv, ta, -1});
	/* A, V (v -> a1), A (a2), Z(v, a2): a1 lives through Z by the view. */
	MemEval ev = eval(h, (int[]){0, 1, 0, 2, -1}, &a);
	expect_live(&ev, (int64_t[]){40, 40, 80, 81}, 4);
	ar_free(&a);
	free(h);
}

/* Gradients: the first contribution produces, later ones add through a
 * temporary; an acc with view_src produces a view; to_end lives on. */
static void
test_accumulation(void **state)
{
	Hand *h = hand_new();
	Arena a;
	(void)state;
	ar_init(&a);
	int g = tensor(h, "g", 50), p = tensor(h, "p", 40), hv = tensor(h, "h", 40);
	int pg = tensor(h, "grad(w)", 8), r = tensor(h, "r", 2);
	h->t[pg].to_end = true;
	h->t[pg].cat = CAT_PARAM_GRADS;
	int b1 = node(h, "b1", 1, -1, NULL);
	int b2 = node(h, "b2", 1, -1, NULL);
	node(h, "b3", 1, -1, (int[]){g, -1});
	node(h, "P", 1, p, NULL);
	int Q = node(h, "Q", 1, -1, (int[]){p, -1});
	node(h, "R", 1, r, (int[]){hv, -1});
	acc(h, b1, g, -1);
	acc(h, b2, g, -1);
	acc(h, b2, pg, -1);
	acc(h, Q, hv, p);
	for (int v = 0; v < 3; v++)
		h->n[v].once = h->n[v].is_backward = true;
	MemEval ev = eval(h, (int[]){0, 1, 2, 3, 4, 5, -1}, &a);
	/* b1: g; b2: g + temp g + pg; b3: g + pg; P: pg + p; Q: p, h view;
	 * R: p (kept by h) + r + pg */
	expect_live(&ev, (int64_t[]){50, 108, 58, 48, 48, 50}, 6);
	assert_int_equal(ev.peak, 108);
	assert_int_equal(ev.kind[0], STEP_BACKWARD);
	ar_free(&a);
	free(h);
}

/* persistent_view tensors own nothing and keep nothing alive. */
static void
test_persistent_view(void **state)
{
	Hand *h = hand_new();
	Arena a;
	(void)state;
	ar_init(&a);
	int wt = tensor(h, "wt", 500), y = tensor(h, "y", 10);
	h->t[wt].persistent_view = true;
	node(h, "wt", 0, wt, NULL);
	node(h, "y", 1, y, (int[]){wt, -1});
	MemEval ev = eval(h, (int[]){0, 1, -1}, &a);
	expect_live(&ev, (int64_t[]){0, 10}, 2);
	ar_free(&a);
	free(h);
}

static void
expect_invalid(Hand *h, const int *steps, const char *what)
{
	Arena a;
	MemEval ev;

	ar_init(&a);
	ev = eval(h, steps, &a);
	assert_false(ev.valid);
	if (!strstr(ev.error, what))
		fail_msg("error '%s' does not mention '%s'", ev.error, what);
	ar_free(&a);
}

static void
test_invalid(void **state)
{
	Hand *h = hand_new();
	(void)state;
	int ta = tensor(h, "a", 10), tb = tensor(h, "b", 20), g = tensor(h, "g", 4);
	node(h, "A", 1, ta, NULL);
	node(h, "B", 1, tb, (int[]){ta, -1});
	int r = node(h, "R", 1, -1, (int[]){g, -1});
	int c = node(h, "C", 1, -1, NULL);
	int c0 = node(h, "C0", 1, -1, NULL);
	acc(h, c, g, -1);
	acc(h, c0, g, -1);
	h->n[r].once = true;
	expect_invalid(h, (int[]){1, 0, 4, 2, 3, -1}, "'a'");
	expect_invalid(h, (int[]){0, 1, 4, 2, 2, 3, -1}, "second time");
	expect_invalid(h, (int[]){0, 1, 4, 2, -1}, "never");
	expect_invalid(h, (int[]){0, 1, 4, 2, 3, -1}, "read");
	expect_invalid(h, (int[]){0, 1, 4, 9, -1}, "does not exist");
	free(h);
}

/* vf_check agrees with lv_eval on random training graphs and schedules,
 * and catches a tampered result. */
static void
test_random_agreement(void **state)
{
	RdOptions o = {3, 14, true, true, true, true, true};
	uint64_t seed = 42;
	char why[512];
	(void)state;
	for (int k = 0; k < 300; k++) {
		Arena a;
		Dag d;
		MemEval ev;
		ar_init(&a);
		o.train = k % 4 != 3;
		rd_make(&d, &seed, &o, &a);
		Schedule s = rd_schedule(&d, &seed, (int)rd_range(&seed, 0, 8), &a);
		lv_eval(&d, &s, &ev, &a);
		assert_true(ev.valid);
		if (!vf_check(&d, &s, &ev, why, sizeof why))
			fail_msg("graph %d: %s", k, why);
		ev.live_bytes[rd_range(&seed, 0, s.n - 1)] += 16;
		assert_false(vf_check(&d, &s, &ev, why, sizeof why));
		ar_free(&a);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_recompute),
		cmocka_unit_test(test_view_keeps_base),
		cmocka_unit_test(test_view_of_recomputed_base),
		cmocka_unit_test(test_accumulation),
		cmocka_unit_test(test_persistent_view),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_random_agreement),
	};
	return cmocka_run_group_tests_name("verify", tests, NULL, NULL);
}
