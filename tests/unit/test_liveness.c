/* tests/unit/test_liveness.c -- lv_eval on small hand-built Dags, each
 * expected figure worked out step by step in the comments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "eval.h"
#include "randdag.h"

/* A tiny Dag builder: tensors and nodes appended in order. */
typedef struct Tb {
	Arena a;
	Dag d;
	DagTensor t[32];
	DagNode n[32];
} Tb;

static Tb *
tb_new(void)
{
	Tb *b = calloc(1, sizeof *b);
	ar_init(&b->a);
	b->d.t = b->t;
	b->d.node = b->n;
	return b;
}

static void
tb_free(Tb *b)
{
	ar_free(&b->a);
	free(b);
}

static int
tb_tensor(Tb *b, const char *name, int64_t bytes, MemCat cat)
{
	DagTensor *t = &b->t[b->d.nt];
	t->name = name;
	t->bytes = bytes;
	t->view_src = -1;
	t->cat = cat;
	t->ir_tensor = -1;
	return b->d.nt++;
}

static int *
tb_list(Tb *b, int *n, va_list *ap)
{
	int buf[16], k = 0, v;
	while ((v = va_arg(*ap, int)) >= 0)
		buf[k++] = v;
	*n = k;
	int *p = ar_alloc(&b->a, sizeof *p * (size_t)(k + 1));
	memcpy(p, buf, sizeof *p * (size_t)k);
	return p;
}

/* tb_node(b, name, cost, once, ins..., -1, outs..., -1) */
static int
tb_node(Tb *b, const char *name, int64_t cost, int once, ...)
{
	DagNode *n = &b->n[b->d.nnode];
	va_list ap;
	n->name = name;
	n->cost = cost;
	n->once = once;
	n->is_backward = once;
	n->ir_op = -1;
	va_start(ap, once);
	n->in = tb_list(b, &n->nin, &ap);
	n->out = tb_list(b, &n->nout, &ap);
	va_end(ap);
	n->acc = ar_alloc(&b->a, sizeof *n->acc * 4);
	return b->d.nnode++;
}

static void
tb_acc(Tb *b, int node, int t, int view_src)
{
	DagNode *n = &b->n[node];
	n->acc[n->nacc++] = (DagAcc){t, view_src};
}

/* Sets base_order to all nodes in index order and finishes the Dag. */
static void
tb_done(Tb *b)
{
	b->d.base_order = ar_alloc(&b->a, sizeof(int) * (size_t)b->d.nnode);
	for (int i = 0; i < b->d.nnode; i++)
		b->d.base_order[i] = i;
	b->d.nbase = b->d.nnode;
	dag_finish(&b->d);
}

static MemEval
tb_eval(Tb *b, int n, const int *steps)
{
	Schedule s = {n, (int *)steps};
	MemEval ev;
	lv_eval(&b->d, &s, &ev, &b->a);
	return ev;
}

static void
assert_live(const MemEval *ev, const int64_t *want, int n)
{
	assert_int_equal(ev->nsteps, n);
	for (int i = 0; i < n; i++)
		assert_int_equal(ev->live_bytes[i], want[i]);
}

/* x -> a -> b -> L, backward B_L, B_b, B_a. */
static Tb *
chain(void)
{
	Tb *b = tb_new();
	int x = tb_tensor(b, "x", 100, CAT_INPUTS);
	int a = tb_tensor(b, "a", 40, CAT_ACTIVATIONS);
	int bb = tb_tensor(b, "b", 20, CAT_ACTIVATIONS);
	int L = tb_tensor(b, "L", 4, CAT_ACTIVATIONS);
	int gb = tb_tensor(b, "grad(b)", 20, CAT_GRADIENTS);
	int ga = tb_tensor(b, "grad(a)", 40, CAT_GRADIENTS);
	b->t[x].from_start = true;
	tb_node(b, "a", 10, false, x, -1, a, -1);
	tb_node(b, "b", 20, false, a, -1, bb, -1);
	tb_node(b, "L", 5, false, bb, -1, L, -1);
	int bl = tb_node(b, "L", 1, true, bb, -1, -1);
	int bbn = tb_node(b, "b", 2, true, gb, a, -1, -1);
	tb_node(b, "a", 3, true, ga, x, -1, -1);
	tb_acc(b, bl, gb, -1);
	tb_acc(b, bbn, ga, -1);
	b->d.persistent[CAT_PARAMS] = 1000;
	tb_done(b);
	return b;
}

static void
test_chain(void **state)
{
	(void)state;
	Tb *b = chain();
	/* x 100: from the start through its last use, step 5.
	 * a 40: made at 0, used at 1 and 4 -> 0..4.   b 20: 1..3 (used 2, 3).
	 * L 4: serves nothing -> step 2 only.  grad(b) 20: 3..4.  grad(a) 40: 4..5.
	 * s0 = 1000+100+40 = 1140      s1 = 1140+20 = 1160
	 * s2 = 1000+100+40+20+4 = 1164 s3 = 1000+100+40+20+20 = 1180
	 * s4 = 1000+100+40+20+40 = 1200 s5 = 1000+100+40 = 1140 */
	static const int steps[] = {0, 1, 2, 3, 4, 5};
	static const int64_t want[] = {1140, 1160, 1164, 1180, 1200, 1140};
	MemEval ev = tb_eval(b, 6, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 6);
	assert_int_equal(ev.peak, 1200);
	assert_int_equal(ev.peak_step, 4);
	assert_int_equal(ev.breakdown[CAT_PARAMS], 1000);
	assert_int_equal(ev.breakdown[CAT_INPUTS], 100);
	assert_int_equal(ev.breakdown[CAT_ACTIVATIONS], 40);
	assert_int_equal(ev.breakdown[CAT_GRADIENTS], 60);
	assert_int_equal(ev.breakdown[CAT_TEMPORARIES], 0);
	assert_int_equal(ev.recompute_cost, 0);
	assert_int_equal(ev.kind[2], STEP_FORWARD);
	assert_int_equal(ev.kind[3], STEP_BACKWARD);
	/* x first (from_start), then one instance per step. */
	static const int prod[] = {0, 1, 2, 3, 4, 5, 6, 6};
	for (int i = 0; i < 8; i++)
		assert_int_equal(ev.step_prod[i], prod[i]);
	assert_int_equal(ev.ninst, 6);
	assert_int_equal(ev.inst[0].start, -1);
	assert_int_equal(ev.inst[0].end, 5);
	assert_int_equal(ev.inst[1].end, 4);
	assert_int_equal(ev.inst[3].start, 2);
	assert_int_equal(ev.inst[3].end, 2);
	assert_int_equal(b->d.forward_cost, 35);
	assert_int_equal(b->d.total_cost, 41);
	tb_free(b);
}

static void
test_chain_recompute(void **state)
{
	(void)state;
	Tb *b = chain();
	/* a recomputed before B_b: a#1 serves step 1 only -> 0..1; a#2 made at
	 * 4 serves step 5 -> 4..5.  x: 0..6.  b: 1..3.  L: 2.  grad(b): 3..5.
	 * grad(a): 5..6.
	 * s0 = 1000+100+40 = 1140     s1 = 1000+100+40+20 = 1160
	 * s2 = 1000+100+20+4 = 1124   s3 = 1000+100+20+20 = 1140
	 * s4 = 1000+100+20+40 = 1160  s5 = 1000+100+20+40+40 = 1200
	 * s6 = 1000+100+40 = 1140 */
	static const int steps[] = {0, 1, 2, 3, 0, 4, 5};
	static const int64_t want[] = {1140, 1160, 1124, 1140, 1160, 1200, 1140};
	MemEval ev = tb_eval(b, 7, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 7);
	assert_int_equal(ev.peak, 1200);
	assert_int_equal(ev.peak_step, 5);
	assert_int_equal(ev.kind[4], STEP_RECOMPUTE);
	assert_int_equal(ev.recompute_cost, 10);
	tb_free(b);
}

static void
test_residual_accumulation(void **state)
{
	(void)state;
	Tb *b = tb_new();
	int x = tb_tensor(b, "x", 8, CAT_INPUTS);
	int u = tb_tensor(b, "u", 16, CAT_ACTIVATIONS);
	int v = tb_tensor(b, "v", 16, CAT_ACTIVATIONS);
	int y = tb_tensor(b, "y", 16, CAT_ACTIVATIONS);
	int L = tb_tensor(b, "L", 4, CAT_ACTIVATIONS);
	int gy = tb_tensor(b, "grad(y)", 16, CAT_GRADIENTS);
	int gu = tb_tensor(b, "grad(u)", 16, CAT_GRADIENTS);
	int gv = tb_tensor(b, "grad(v)", 16, CAT_GRADIENTS);
	b->t[x].from_start = true;
	tb_node(b, "u", 1, false, x, -1, u, -1);
	tb_node(b, "v", 1, false, u, -1, v, -1);
	tb_node(b, "y", 1, false, u, v, -1, y, -1);
	tb_node(b, "L", 1, false, y, -1, L, -1);
	int b3 = tb_node(b, "L", 1, true, y, -1, -1);
	int b2 = tb_node(b, "y", 1, true, gy, -1, -1);
	int b1 = tb_node(b, "v", 1, true, gv, u, -1, -1);
	tb_node(b, "u", 1, true, gu, x, -1, -1);
	tb_acc(b, b3, gy, -1);
	tb_acc(b, b2, gu, -1);
	tb_acc(b, b2, gv, -1);
	tb_acc(b, b1, gu, -1);          /* grad(u) exists: add through a temporary */
	dag_set_workspace(&b->d, b1, 5, &b->a);
	tb_done(b);
	/* x 8: 0..7.  u 16: used 1, 2, 6 -> 0..6.  v: 1..2.  y: 2..4.  L: 3.
	 * grad(y): 4..5.  grad(u): made at 5, used 6 (accumulation), 7 -> 5..7.
	 * grad(v): 5..6.
	 * s0 = 8+16 = 24           s1 = 8+16+16 = 40
	 * s2 = 8+16+16+16 = 56     s3 = 8+16+16+4 = 44
	 * s4 = 8+16+16+16 = 56     s5 = 8+16+16+16+16 = 72
	 * s6 = 8+16+16+16 + temporary 16 + workspace 5 = 77
	 * s7 = 8+16 = 24 */
	static const int steps[] = {0, 1, 2, 3, 4, 5, 6, 7};
	static const int64_t want[] = {24, 40, 56, 44, 56, 72, 77, 24};
	MemEval ev = tb_eval(b, 8, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 8);
	assert_int_equal(ev.peak, 77);
	assert_int_equal(ev.peak_step, 6);
	assert_int_equal(ev.temp_bytes[6], 21);
	assert_int_equal(ev.breakdown[CAT_INPUTS], 8);
	assert_int_equal(ev.breakdown[CAT_ACTIVATIONS], 16);
	assert_int_equal(ev.breakdown[CAT_GRADIENTS], 32);
	assert_int_equal(ev.breakdown[CAT_TEMPORARIES], 21);
	/* step 5 produces grad(u) then grad(v), in acc order; step 6 nothing. */
	assert_int_equal(ev.step_prod[5 + 1], 6);
	assert_int_equal(ev.step_prod[5 + 2], 8);
	assert_int_equal(ev.step_prod[6 + 2], 8);
	assert_int_equal(ev.inst[6].tensor, gu);
	assert_int_equal(ev.inst[7].tensor, gv);
	tb_free(b);
}

/* x -> a -> r = view(a) -> c (to_end). */
static Tb *
viewed(void)
{
	Tb *b = tb_new();
	int x = tb_tensor(b, "x", 8, CAT_INPUTS);
	int a = tb_tensor(b, "a", 32, CAT_ACTIVATIONS);
	int r = tb_tensor(b, "r", 32, CAT_ACTIVATIONS);
	int r2 = tb_tensor(b, "r2", 32, CAT_ACTIVATIONS);
	int c = tb_tensor(b, "c", 4, CAT_ACTIVATIONS);
	b->t[x].from_start = true;
	b->t[r].view_src = a;
	b->t[r2].view_src = r;
	b->t[c].to_end = true;
	tb_node(b, "a", 7, false, x, -1, a, -1);
	tb_node(b, "r", 0, false, a, -1, r, -1);
	tb_node(b, "r2", 0, false, r, -1, r2, -1);
	tb_node(b, "c", 1, false, r2, -1, c, -1);
	tb_done(b);
	return b;
}

static void
test_view_keeps_original_base(void **state)
{
	(void)state;
	Tb *b = viewed();
	/* a is recomputed after the views were made from a#1: they keep a#1
	 * (not a#2) alive until c uses r2 at step 4.
	 * x: used 0, 3 -> 0..3.  a#1: 0..1, extended by r, r2 (to 4) -> 0..4.
	 * a#2: serves nothing -> 3 only.  c: to_end, 4.
	 * s0 = 8+32 = 40  s1 = 40  s2 = 40  s3 = 8+32+32 = 72  s4 = 32+4 = 36 */
	static const int steps[] = {0, 1, 2, 0, 3};
	static const int64_t want[] = {40, 40, 40, 72, 36};
	MemEval ev = tb_eval(b, 5, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 5);
	assert_int_equal(ev.peak, 72);
	assert_int_equal(ev.peak_step, 3);
	assert_int_equal(ev.recompute_cost, 7);
	/* inst: x, a#1, r, r2, a#2, c. r2's base is the root a#1, not r. */
	assert_int_equal(ev.inst[2].base, 1);
	assert_int_equal(ev.inst[3].base, 1);
	assert_int_equal(ev.inst[3].owned, 0);
	assert_int_equal(ev.inst[1].end, 4);
	assert_int_equal(ev.inst[4].end, 3);
	tb_free(b);
}

static void
test_view_of_recomputed_base(void **state)
{
	(void)state;
	Tb *b = viewed();
	/* a recomputed before the views: they alias a#2, and a#1 serves
	 * nothing (live at step 0 only).
	 * x: 0..1.  a#1: 0.  a#2: 1..2, extended to 4 by the views.  c: 4.
	 * s0 = 8+32 = 40  s1 = 8+32 = 40  s2 = 32  s3 = 32  s4 = 32+4 = 36 */
	static const int steps[] = {0, 0, 1, 2, 3};
	static const int64_t want[] = {40, 40, 32, 32, 36};
	MemEval ev = tb_eval(b, 5, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 5);
	assert_int_equal(ev.peak, 40);
	assert_int_equal(ev.peak_step, 0);
	assert_int_equal(ev.inst[3].base, 2);
	assert_int_equal(ev.inst[4].base, 2);
	assert_int_equal(ev.inst[1].end, 0);
	tb_free(b);
}

static void
test_acc_view(void **state)
{
	(void)state;
	Tb *b = tb_new();
	int x = tb_tensor(b, "x", 8, CAT_INPUTS);
	int a = tb_tensor(b, "a", 16, CAT_ACTIVATIONS);
	int r = tb_tensor(b, "r", 16, CAT_ACTIVATIONS);
	int L = tb_tensor(b, "L", 4, CAT_ACTIVATIONS);
	int gr = tb_tensor(b, "grad(r)", 16, CAT_GRADIENTS);
	int ga = tb_tensor(b, "grad(a)", 16, CAT_GRADIENTS);
	b->t[x].from_start = true;
	b->t[r].view_src = a;
	tb_node(b, "a", 1, false, x, -1, a, -1);
	tb_node(b, "r", 0, false, a, -1, r, -1);
	tb_node(b, "L", 1, false, r, -1, L, -1);
	int bl = tb_node(b, "L", 1, true, r, -1, -1);
	int br = tb_node(b, "r", 0, true, gr, -1, -1);
	tb_node(b, "a", 1, true, ga, x, -1, -1);
	tb_acc(b, bl, gr, -1);
	tb_acc(b, br, ga, gr);          /* grad(a) is a view of grad(r) */
	tb_done(b);
	/* x: 0..5.  a: 0..1, kept by r (used 2, 3) -> 0..3.  L: 2.
	 * grad(r): 3..4, kept by its view grad(a) (used 5) -> 3..5.
	 * s0 = 8+16 = 24  s1 = 24  s2 = 8+16+4 = 28  s3 = 8+16+16 = 40
	 * s4 = 8+16 = 24  s5 = 24 */
	static const int steps[] = {0, 1, 2, 3, 4, 5};
	static const int64_t want[] = {24, 24, 28, 40, 24, 24};
	MemEval ev = tb_eval(b, 6, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 6);
	assert_int_equal(ev.peak, 40);
	assert_int_equal(ev.peak_step, 3);
	assert_int_equal(ev.inst[5].tensor, ga);
	assert_int_equal(ev.inst[5].base, 4);
	assert_int_equal(ev.inst[5].owned, 0);
	assert_int_equal(ev.inst[4].end, 5);
	tb_free(b);
}

static void
test_from_start_to_end(void **state)
{
	(void)state;
	Tb *b = tb_new();
	int x = tb_tensor(b, "x", 8, CAT_INPUTS);
	int y = tb_tensor(b, "y", 100, CAT_INPUTS);
	int g = tb_tensor(b, "grad(w)", 12, CAT_PARAM_GRADS);
	int a = tb_tensor(b, "a", 16, CAT_ACTIVATIONS);
	int pv = tb_tensor(b, "wT", 50, CAT_ACTIVATIONS);
	int o = tb_tensor(b, "o", 4, CAT_ACTIVATIONS);
	b->t[x].from_start = true;
	b->t[y].from_start = true;      /* never used: occupies nothing */
	b->t[g].from_start = true;
	b->t[g].to_end = true;
	b->t[pv].persistent_view = true;
	b->t[o].to_end = true;
	int n0 = tb_node(b, "a", 1, false, x, -1, a, pv, -1);
	tb_node(b, "o", 1, false, a, pv, -1, o, -1);
	tb_acc(b, n0, g, -1);           /* grad(w) exists from the start */
	b->d.persistent[CAT_OPTIMIZER] = 3;
	tb_done(b);
	/* x: 0.  y: nothing.  grad(w): -1..1.  a: 0..1.  wT owns nothing.
	 * o: to_end, 1.
	 * s0 = 3 + 8 + 12 + 16 + temporary 12 = 51
	 * s1 = 3 + 12 + 16 + 4 = 35 */
	static const int steps[] = {0, 1};
	static const int64_t want[] = {51, 35};
	MemEval ev = tb_eval(b, 2, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 2);
	assert_int_equal(ev.peak_step, 0);
	assert_int_equal(ev.breakdown[CAT_OPTIMIZER], 3);
	assert_int_equal(ev.breakdown[CAT_INPUTS], 8);
	assert_int_equal(ev.breakdown[CAT_PARAM_GRADS], 12);
	assert_int_equal(ev.breakdown[CAT_TEMPORARIES], 12);
	assert_int_equal(ev.step_prod[1], 3);   /* x, y, grad(w) */
	assert_int_equal(ev.inst[1].owned, 0);
	assert_int_equal(ev.inst[2].end, 1);
	assert_int_equal(ev.inst[4].owned, 0);  /* wT */
	tb_free(b);
}

static void
expect_invalid(Tb *b, int n, const int *steps, const char *what)
{
	MemEval ev = tb_eval(b, n, steps);
	assert_false(ev.valid);
	if (!strstr(ev.error, what))
		fail_msg("error '%s' does not mention '%s'", ev.error, what);
}

static void
test_invalid(void **state)
{
	(void)state;
	Tb *b = chain();
	static const int early[] = {1, 0, 2, 3, 4, 5};
	expect_invalid(b, 6, early, "uses 'a' before");
	static const int twice[] = {0, 1, 2, 3, 4, 4, 5};
	expect_invalid(b, 7, twice, "runs once");
	static const int missing[] = {0, 1, 2, 3, 4};
	expect_invalid(b, 5, missing, "never runs");
	static const int bogus[] = {0, 1, 2, 3, 4, 9};
	expect_invalid(b, 6, bogus, "does not exist");
	tb_free(b);
	b = tb_new();
	int x = tb_tensor(b, "x", 8, CAT_INPUTS);
	int g = tb_tensor(b, "grad(x)", 8, CAT_GRADIENTS);
	b->t[x].from_start = true;
	int p = tb_node(b, "p", 1, true, x, -1, -1);
	int q = tb_node(b, "q", 1, true, x, -1, -1);
	tb_node(b, "r", 1, true, g, -1, -1);
	tb_acc(b, p, g, -1);
	tb_acc(b, q, g, -1);
	tb_done(b);
	/* r reads grad(x) before q's contribution arrives. */
	static const int late[] = {0, 2, 1};
	expect_invalid(b, 3, late, "after step 1 read it");
	static const int ok[] = {0, 1, 2};
	MemEval ev = tb_eval(b, 3, ok);
	assert_true(ev.valid);
	tb_free(b);
}

/* x -> a -> s1 -> b -> s2 -> c, a b c of 2^62 - 1 bytes each, never two
 * at once: the bytes put in add up past 2^63 while no step's do, so the
 * sums are made again checked one by one (lv_diff_checked), and the peak
 * is exact; with a and b live together and persistent bytes on top, the
 * step's sum passes 2^63 and the schedule is refused. */
static void
test_sums_near_2_63(void **state)
{
	(void)state;
	const int64_t big = ((int64_t)1 << 62) - 1;
	Tb *b = tb_new();
	int x = tb_tensor(b, "x", 8, CAT_INPUTS);
	int a = tb_tensor(b, "a", big, CAT_ACTIVATIONS);
	int s1 = tb_tensor(b, "s1", 16, CAT_ACTIVATIONS);
	int bb = tb_tensor(b, "b", big, CAT_ACTIVATIONS);
	int s2 = tb_tensor(b, "s2", 32, CAT_ACTIVATIONS);
	int c = tb_tensor(b, "c", big, CAT_ACTIVATIONS);
	b->t[x].from_start = true;
	tb_node(b, "a", 1, false, x, -1, a, -1);
	tb_node(b, "s1", 1, false, a, -1, s1, -1);
	tb_node(b, "b", 1, false, s1, -1, bb, -1);
	tb_node(b, "s2", 1, false, bb, -1, s2, -1);
	tb_node(b, "c", 1, false, s2, -1, c, -1);
	tb_done(b);
	static const int steps[] = {0, 1, 2, 3, 4};
	/* x lives to its last use, step 0 */
	static const int64_t want[] = {8 + big, big + 16, 16 + big, big + 32, 32 + big};
	MemEval ev = tb_eval(b, 5, steps);
	assert_true(ev.valid);
	assert_live(&ev, want, 5);
	assert_int_equal(ev.peak, 32 + big);
	assert_int_equal(ev.peak_step, 3);
	tb_free(b);

	b = tb_new();
	x = tb_tensor(b, "x", 8, CAT_INPUTS);
	a = tb_tensor(b, "a", big, CAT_ACTIVATIONS);
	bb = tb_tensor(b, "b", big, CAT_ACTIVATIONS);
	b->t[x].from_start = true;
	tb_node(b, "a", 1, false, x, -1, a, -1);
	tb_node(b, "b", 1, false, a, -1, bb, -1);
	b->d.persistent[CAT_PARAMS] = 4;
	tb_done(b);
	static const int two[] = {0, 1};
	expect_invalid(b, 2, two, "passes 2^63");
	tb_free(b);
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(memcat_name(CAT_PARAM_GRADS), "param_grads");
	assert_string_equal(memcat_name(CAT_TEMPORARIES), "temporaries");
	assert_string_equal(step_kind_name(STEP_RECOMPUTE), "recompute");
	Tb *b = chain();
	Schedule s = dag_base_schedule(&b->d, &b->a);
	assert_int_equal(s.n, 6);
	assert_int_equal(s.step[5], 5);
	tb_free(b);
}

/* lv_eval_from equals lv_eval field by field. */
static void
expect_same_eval(const MemEval *a, const MemEval *b)
{
	assert_int_equal(a->valid, b->valid);
	assert_string_equal(a->error, b->error);
	assert_int_equal(a->nsteps, b->nsteps);
	assert_int_equal(a->peak, b->peak);
	if (!a->valid)
		return;
	assert_int_equal(a->peak_step, b->peak_step);
	assert_int_equal(a->recompute_cost, b->recompute_cost);
	assert_int_equal(a->ninst, b->ninst);
	assert_memory_equal(a->breakdown, b->breakdown, sizeof a->breakdown);
	assert_memory_equal(a->kind, b->kind, (size_t)a->nsteps);
	assert_memory_equal(a->live_bytes, b->live_bytes, sizeof *a->live_bytes * (size_t)a->nsteps);
	assert_memory_equal(a->step_prod, b->step_prod, sizeof *a->step_prod * (size_t)(a->nsteps + 2));
	assert_memory_equal(a->inst, b->inst, sizeof *a->inst * (size_t)a->ninst);
	assert_int_equal(a->temp_bytes == NULL, b->temp_bytes == NULL);
	if (a->temp_bytes)
		assert_memory_equal(a->temp_bytes, b->temp_bytes, sizeof *a->temp_bytes * (size_t)a->nsteps);
}

/* lv_eval_from(A) of s is lv_eval's; whether s is valid. */
static bool
resumes_alike(LvAnchor *A, const Dag *d, const Schedule *s)
{
	Arena sa = {0}, sb = {0};
	MemEval ea, eb;

	lv_eval_from(A, d, s, &ea, &sa);
	lv_eval(d, s, &eb, &sb);
	lv_breakdown(d, &ea);
	expect_same_eval(&eb, &ea);
	ar_free(&sa);
	ar_free(&sb);
	return eb.valid;
}

/* s with one of these changes at a random step: a step moved (valid or
 * not), a forward step recomputed again, a step dropped, or none. */
static Schedule
moved(const Schedule *s, uint64_t *seed, Arena *a)
{
	Schedule m = {s->n + 1, ar_array(a, (size_t)s->n + 2, sizeof(int))};
	int i = (int)rd_range(seed, 0, s->n - 1), j = (int)rd_range(seed, 0, s->n - 1), k = 0;

	switch (rd_range(seed, 0, 3)) {
	case 0:         /* step i moved to index j */
		for (int x = 0; x < s->n; x++) {
			if (x == i)
				continue;
			if (k == j)
				m.step[k++] = s->step[i];
			m.step[k++] = s->step[x];
		}
		if (k == j)
			m.step[k++] = s->step[i];
		break;
	case 1:         /* step i's node again before index j > i */
		for (int x = 0; x < s->n; x++) {
			if (x == j && j > i)
				m.step[k++] = s->step[i];
			m.step[k++] = s->step[x];
		}
		break;
	case 2:         /* step i dropped */
		for (int x = 0; x < s->n; x++)
			if (x != i)
				m.step[k++] = s->step[x];
		break;
	default:
		memcpy(m.step, s->step, sizeof *m.step * (size_t)s->n);
		k = s->n;
	}
	m.n = k;
	return m;
}

/* Schedules resumed from an anchor on random training Dags (views,
 * extra outputs, workspace, params; out_of_place sums on half of them)
 * give lv_eval's MemEval exactly, valid or not; so does an anchor that
 * is another Dag's, emptied, or invalid itself, and one re-anchored on a
 * moved schedule again and again (from its snapshot, lv_reanchor). */
static void
test_resume_from_anchor(void **state)
{
	(void)state;
	uint64_t seed = 0x5eed;
	int valid = 0;
	Arena other = {0};
	Dag prev = {0};
	Schedule prev_s = {0};

	for (int g = 0; g < 200; g++) {
		Arena a = {0}, sa = {0}, sb = {0};
		Dag d;
		RdOptions o = {20, 48, true, true, true, true, true};
		rd_make(&d, &seed, &o, &a);
		if (g % 2)
			for (int v = 0; v < d.nnode; v++)
				for (int j = 0; j < d.node[v].nacc; j++)
					d.node[v].acc[j].out_of_place = rd_range(&seed, 0, 1);
		LvAnchor *A = lv_anchor_new(&a);
		Schedule s = rd_schedule(&d, &seed, (int)rd_range(&seed, 0, 8), &a);
		MemEval ea, eb;
		lv_eval_anchor(A, &d, &s, &ea, &sa);
		lv_eval(&d, &s, &eb, &sb);
		lv_breakdown(&d, &ea);
		expect_same_eval(&eb, &ea);
		for (int r = 0; r < 40; r++) {
			Schedule m = moved(&s, &seed, &a);
			valid += resumes_alike(A, &d, &m);
			if (r % 10 == 5) {      /* a moved schedule as the anchor:
			                           from a snapshot where it shares one */
				Arena sc = {0};
				ar_free(&sa);
				lv_eval_anchor(A, &d, &m, &ea, &sa);
				lv_eval(&d, &m, &eb, &sc);
				lv_breakdown(&d, &ea);
				expect_same_eval(&eb, &ea);
				ar_free(&sc);
				if (ea.valid)
					s = m;
			}
		}
		if (g > 0) {    /* anchored on another Dag: resumes nothing */
			resumes_alike(A, &prev, &prev_s);
			ar_free(&other);
		}
		lv_anchor_free(A);      /* emptied: lv_eval */
		resumes_alike(A, &d, &s);
		ar_free(&sa);
		ar_free(&sb);
		other = a;      /* the next Dag's "other" */
		prev = d;
		prev_s = s;
	}
	ar_free(&other);
	assert_true(valid > 1000);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_chain_recompute),
		cmocka_unit_test(test_residual_accumulation),
		cmocka_unit_test(test_view_keeps_original_base),
		cmocka_unit_test(test_view_of_recomputed_base),
		cmocka_unit_test(test_acc_view),
		cmocka_unit_test(test_from_start_to_end),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_sums_near_2_63),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_resume_from_anchor),
	};
	return cmocka_run_group_tests_name("liveness", tests, NULL, NULL);
}
