/* tests/unit/test_memory.c -- the -O0 memory analysis against numbers
 * computed by hand, step by step, from memory-model.md; plus properties
 * that must hold for any network. Each case runs all the passes
 * (parse, instantiate, shapes, autodiff, lower, liveness) on a source
 * string. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "driver.h"

typedef struct Case {
	Arena arena;
	Analysis an;
	Status rc;
} Case;

static NetOptions
no_flags(void)
{
	NetOptions o;
	memset(&o, 0, sizeof o);
	return o;
}

static void
run(Case *c, const char *text, const NetOptions *o, int level)
{
	Source src = {"t.net", text, strlen(text), false};
	PlanGoal goal = {level, 1.0, -1, false};
	Diag d;
	Program *p;

	ar_init(&c->arena);
	diag_init(&d, &src, stderr);
	d.quiet_warnings = true;
	p = net_parse(&src, &c->arena, &d);
	assert_non_null(p);
	c->rc = analyze(&(Job){p, "t.net", *o, goal, true, {0, NULL, true, NULL}}, &c->an,
	                &c->arena, &d);
	assert_int_equal(c->rc, ST_OK);
}

static void
check_steps(const MemEval *ev, const int64_t *want, int n)
{
	assert_int_equal(ev->nsteps, n);
	for (int i = 0; i < n; i++) {
		if (ev->live_bytes[i] != want[i])
			fail_msg("step %d: live_bytes %lld, expected %lld", i,
			         (long long)ev->live_bytes[i], (long long)want[i]);
	}
}

static const char *mlp_f32 =
	"batch B = 4;\n"
	"dim I = 8, H = 16, C = 4;\n"
	"input x : f32[B, I];\n"
	"input y : i64[B];\n"
	"param w1 : f32[I, H];\n"
	"param w2 : f32[H, C];\n"
	"h = relu(x @ w1);\n"
	"logits = h @ w2;\n"
	"loss = cross_entropy(logits, y);\n"
	"output loss;\n";

/* MLP, f32, AdamW, declared precision.
 * x f32[4,8] 128 B, y i64[4] 32 B; w1 512 B, w2 256 B: params 768 B,
 * 192 elements; AdamW 2 x 192 x 4 = 1536 B; persistent 2304 B.
 * h~1 = x@w1 256, h = relu 256, logits 64, loss 4, loss:lsm 64.
 * Saves: matmul(x, w1) -> x; relu -> h; matmul(h, w2) -> w2 (param), h;
 * cross_entropy -> lsm, y.
 * Steps: 0 fwd h~1, 1 fwd h, 2 fwd logits, 3 fwd loss, 4 bwd loss,
 * 5 bwd logits, 6 bwd h, 7 bwd h~1. Lifetimes: x -1..7, y -1..4,
 * h~1 0..1, h 1..6, logits 2..3, loss 3, lsm 3..4, grad(logits) 4..5,
 * grad(h) 5..6, grad(w2) 5..end, grad(h~1) 6..7, grad(w1) 7..end.
 *   0: x128 + y32 + h~1 256                      =  416
 *   1: + h 256                                   =  672
 *   2: x + y + h + logits 64                     =  480
 *   3: + loss 4 + lsm 64                         =  548
 *   4: x + y + h + lsm + grad(logits) 64         =  544
 *   5: x + h + g(logits) + g(h) 256 + g(w2) 256  =  960
 *   6: x + h + g(h) + g(w2) + g(h~1) 256         = 1152
 *   7: x + g(w2) + g(h~1) + g(w1) 512            = 1152
 * Peak 2304 + 1152 = 3456, first at step 6. */
static void
test_mlp_f32_adamw(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const int64_t want[] = {416, 672, 480, 548, 544, 960, 1152, 1152};
	int64_t steps[8];
	(void)state;

	run(&c, mlp_f32, &o, 0);
	for (int i = 0; i < 8; i++)
		steps[i] = 2304 + want[i];
	check_steps(&c.an.ev, steps, 8);
	assert_int_equal(c.an.ev.peak, 3456);
	assert_int_equal(c.an.ev.peak_step, 6);
	assert_int_equal(c.an.ev.breakdown[CAT_PARAMS], 768);
	assert_int_equal(c.an.ev.breakdown[CAT_MASTER], 0);
	assert_int_equal(c.an.ev.breakdown[CAT_OPTIMIZER], 1536);
	assert_int_equal(c.an.ev.breakdown[CAT_PARAM_GRADS], 256);
	assert_int_equal(c.an.ev.breakdown[CAT_INPUTS], 128);
	assert_int_equal(c.an.ev.breakdown[CAT_ACTIVATIONS], 256);
	assert_int_equal(c.an.ev.breakdown[CAT_GRADIENTS], 512);
	assert_int_equal(c.an.ev.breakdown[CAT_TEMPORARIES], 0);
	/* 4 (weights) + 4 (grads) + 8 (AdamW) = 16 B/param */
	assert_int_equal(c.an.d.persistent[CAT_PARAMS] / 192, 4);
	assert_int_equal(c.an.d.persistent[CAT_OPTIMIZER] / 192, 8);
	ar_free(&c.arena);
}

/* The same MLP in f16 under mixed precision: params 384 B, master 192 x 4
 * = 768, AdamW in f32 1536, param grads in f32 (w1 512, w2 256):
 * 2 + 4 + 4 + 8 = 18 B/param. Persistent 384 + 768 + 1536 = 2688.
 * x 64, y 32, h~1 128, h 128, logits 32, loss 4 (f32), lsm 32 (f16),
 * grad(logits) 32, grad(h) 128, grad(h~1) 128.
 *   0: 64 + 32 + 128 = 224       4: x + y + h + lsm + g(logits) = 288
 *   1: + h 128 = 352             5: x + h + g(logits) + g(h) + g(w2) = 608
 *   2: x + y + h + logits = 256  6: x + h + g(h) + g(w2) + g(h~1) = 704
 *   3: + loss 4 + lsm 32 = 292   7: x + g(w2) + g(h~1) + g(w1) = 960
 * Peak 2688 + 960 = 3648 at step 7. */
static void
test_mlp_mixed_adamw(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const char *src =
		"batch B = 4;\n"
		"dim I = 8, H = 16, C = 4;\n"
		"train { optimizer = adamw; precision = mixed; }\n"
		"input x : f16[B, I];\n"
		"input y : i64[B];\n"
		"param w1 : f16[I, H];\n"
		"param w2 : f16[H, C];\n"
		"h = relu(x @ w1);\n"
		"logits = h @ w2;\n"
		"loss = cross_entropy(logits, y);\n"
		"output loss;\n";
	const int64_t want[] = {224, 352, 256, 292, 288, 608, 704, 960};
	int64_t steps[8];
	(void)state;

	run(&c, src, &o, 0);
	for (int i = 0; i < 8; i++)
		steps[i] = 2688 + want[i];
	check_steps(&c.an.ev, steps, 8);
	assert_int_equal(c.an.ev.peak, 3648);
	assert_int_equal(c.an.ev.peak_step, 7);
	assert_int_equal(c.an.d.persistent[CAT_PARAMS], 384);
	assert_int_equal(c.an.d.persistent[CAT_MASTER], 768);
	assert_int_equal(c.an.d.persistent[CAT_OPTIMIZER], 1536);
	assert_int_equal(c.an.ev.breakdown[CAT_PARAM_GRADS], 768);
	ar_free(&c.arena);
}

/* A residual block: h feeds relu and the add, so grad(h) gets two
 * contributions; the second pays a temporary of 32 B.
 * x 32, w 64 (16 elements, AdamW 128): persistent 192.
 * h 32, r~1 = relu(h) 32, r = r~1 + h 32, loss 4.
 * Steps: 0 fwd h, 1 fwd r~1, 2 fwd r, 3 fwd loss, 4 bwd loss (-> grad(r)),
 * 5 bwd r (-> grad(r~1), grad(h)), 6 bwd r~1 (adds into grad(h) + temp 32),
 * 7 bwd h (-> grad(w)).
 *   0: x + h = 64            4: x + r~1 + g(r) = 96
 *   1: + r~1 = 96            5: x + r~1 + g(r) + g(r~1) + g(h) = 160
 *   2: + r = 128             6: x + r~1 + g(r~1) + g(h) + temp 32 = 160
 *   3: x + r~1 + r + loss 4 = 100   7: x + g(h) + g(w) 64 = 128
 * Peak 192 + 160 = 352, first at step 5. */
static void
test_residual_accumulation(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const char *src =
		"batch B = 2;\n"
		"dim D = 4;\n"
		"input x : f32[B, D];\n"
		"param w : f32[D, D];\n"
		"h = x @ w;\n"
		"r = relu(h) + h;\n"
		"loss = mean(r);\n"
		"output loss;\n";
	const int64_t want[] = {64, 96, 128, 100, 96, 160, 160, 128};
	int64_t steps[8];
	(void)state;

	run(&c, src, &o, 0);
	for (int i = 0; i < 8; i++)
		steps[i] = 192 + want[i];
	check_steps(&c.an.ev, steps, 8);
	assert_int_equal(c.an.ev.peak, 352);
	assert_int_equal(c.an.ev.peak_step, 5);
	assert_int_equal(c.an.ev.temp_bytes[6], 32);
	ar_free(&c.arena);
}

/* Views and a dropout mask. t = transpose(h) owns nothing and keeps h
 * alive; grad(t) is a real buffer (made by the matmul's backward), so the
 * transpose's backward adds into the existing grad(h) with a temporary.
 * x 32, w 64 (+ AdamW 128: persistent 192); h~1 32, h 32, h:mask 8 (u8),
 * t 0, loss~1 = t @ h [4,4] 64, loss 4.
 * Steps: 0 fwd h~1, 1 fwd h, 2 fwd t, 3 fwd loss~1, 4 fwd loss, 5 bwd loss,
 * 6 bwd loss~1, 7 bwd t, 8 bwd h, 9 bwd h~1.
 *   0: x + h~1 = 64                      5: x + h + mask + g(loss~1) 64 = 136
 *   1: + h + mask = 104                  6: + g(t) 32 + g(h) 32 = 200
 *   2: x + h + mask = 72                 7: x + mask + g(t) + g(h) + temp 32 = 136
 *   3: + loss~1 64 = 136                 8: x + mask + g(h) + g(h~1) = 104
 *   4: + loss 4 = 140                    9: x + g(h~1) + g(w) 64 = 128
 * Peak 192 + 200 = 392 at step 6: activations h + mask = 40, gradients
 * 64 + 32 + 32 = 128. */
static void
test_views_and_dropout(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const char *src =
		"batch B = 2;\n"
		"dim D = 4;\n"
		"input x : f32[B, D];\n"
		"param w : f32[D, D];\n"
		"h = dropout(x @ w, p=0.5);\n"
		"t = transpose(h, 0, 1);\n"
		"loss = sum(t @ h);\n"
		"output loss;\n";
	const int64_t want[] = {64, 104, 72, 136, 140, 136, 200, 136, 104, 128};
	int64_t steps[10];
	(void)state;

	run(&c, src, &o, 0);
	for (int i = 0; i < 10; i++)
		steps[i] = 192 + want[i];
	check_steps(&c.an.ev, steps, 10);
	assert_int_equal(c.an.ev.peak, 392);
	assert_int_equal(c.an.ev.peak_step, 6);
	assert_int_equal(c.an.ev.breakdown[CAT_ACTIVATIONS], 40);
	assert_int_equal(c.an.ev.breakdown[CAT_GRADIENTS], 128);
	ar_free(&c.arena);
}

/* The view rule for gradients: reshape's backward runs before any other
 * contribution to grad(h), so grad(h) becomes a view of grad(t) (0 bytes).
 * x 32, persistent 192; h 32, t view, loss 4; grad(t) 32, grad(w) 64.
 * Steps: 0 fwd h, 1 fwd t, 2 fwd loss, 3 bwd loss, 4 bwd t, 5 bwd h.
 *   0: x + h = 64   1: 64   2: + loss = 68   3: x + g(t) = 64
 *   4: x + g(t) (+ g(h), a view: 0) = 64   5: x + g(t) + g(w) = 128 */
static void
test_grad_view(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const char *src =
		"batch B = 2;\n"
		"dim D = 4;\n"
		"input x : f32[B, D];\n"
		"param w : f32[D, D];\n"
		"h = x @ w;\n"
		"t = reshape(h, [8]);\n"
		"loss = sum(t);\n"
		"output loss;\n";
	const int64_t want[] = {64, 64, 68, 64, 64, 128};
	int64_t steps[6];
	(void)state;

	run(&c, src, &o, 0);
	for (int i = 0; i < 6; i++)
		steps[i] = 192 + want[i];
	check_steps(&c.an.ev, steps, 6);
	ar_free(&c.arena);
}

/* Inference: no grads, no optimizer state; the output lives to the end.
 * Persistent = params 768. x dies after step 0.
 *   0: x128 + y32 + h~1 256 = 416   2: y + h + logits 64 = 352
 *   1: y + h~1 + h 256 = 544        3: y + logits + loss 4 + lsm 64 = 164
 * Peak 768 + 544 = 1312 at step 1. */
static void
test_infer(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const int64_t want[] = {416, 544, 352, 164};
	int64_t steps[4];
	(void)state;

	o.infer_set = o.infer = true;
	run(&c, mlp_f32, &o, 0);
	assert_false(c.an.g.train);
	for (int i = 0; i < 4; i++)
		steps[i] = 768 + want[i];
	check_steps(&c.an.ev, steps, 4);
	assert_int_equal(c.an.ev.peak, 1312);
	ar_free(&c.arena);
}

/* accumulate = 4 on B = 4: one micro-batch of 1. Param grads (768 B) live
 * at every step and every contribution pays a temporary.
 * x 32, y 8, h~1 64, h 64, logits 16, loss 4, lsm 16, g(logits) 16,
 * g(h) 64, g(h~1) 64.
 *   0: x + y + h~1 + pg = 872       4: x + y + h + lsm + g(logits) + pg = 904
 *   1: + h = 936                    5: x + h + g(logits) + g(h) + pg + temp 256 = 1200
 *   2: x + y + h + logits + pg = 888   6: x + h + g(h) + g(h~1) + pg = 992
 *   3: + loss + lsm = 908           7: x + g(h~1) + pg + temp 512 = 1376
 * Peak 2304 + 1376 = 3680 at step 7. */
static void
test_accumulate_4(void **state)
{
	Case c;
	NetOptions o = no_flags();
	const int64_t want[] = {872, 936, 888, 908, 904, 1200, 992, 1376};
	int64_t steps[8];
	(void)state;

	o.accumulate_set = true;
	o.accumulate = 4;
	run(&c, mlp_f32, &o, 0);
	for (int i = 0; i < 8; i++)
		steps[i] = 2304 + want[i];
	check_steps(&c.an.ev, steps, 8);
	assert_int_equal(c.an.ev.peak, 3680);
	assert_int_equal(c.an.g.dims[0].declared, 4);
	assert_int_equal(c.an.g.dims[0].value, 1);
	ar_free(&c.arena);
}

static int64_t
max_live(const MemEval *ev)
{
	int64_t m = 0;
	for (int i = 0; i < ev->nsteps; i++)
		m = ev->live_bytes[i] > m ? ev->live_bytes[i] : m;
	return m;
}

static int64_t
persistent(const Dag *d)
{
	int64_t p = 0;
	for (int c = 0; c < CAT_COUNT; c++)
		p += d->persistent[c];
	return p;
}

/* Properties over a few networks: peak >= persistent; infer <= train; the
 * peak is the maximum of live_bytes; accumulation shrinks activations. */
static void
test_properties(void **state)
{
	const char *srcs[] = {mlp_f32};
	(void)state;

	for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
		Case train, infer, acc;
		NetOptions o = no_flags();
		run(&train, srcs[i], &o, 0);
		assert_true(train.an.ev.peak >= persistent(&train.an.d));
		assert_int_equal(train.an.ev.peak, max_live(&train.an.ev));
		o.infer_set = o.infer = true;
		run(&infer, srcs[i], &o, 0);
		assert_true(infer.an.ev.peak <= train.an.ev.peak);
		o = no_flags();
		o.accumulate_set = true;
		o.accumulate = 2;
		run(&acc, srcs[i], &o, 0);
		assert_true(acc.an.base.breakdown[CAT_ACTIVATIONS] <=
		            train.an.base.breakdown[CAT_ACTIVATIONS]);
		ar_free(&train.arena);
		ar_free(&infer.arena);
		ar_free(&acc.arena);
	}
}

/* memory-model.md: "recompute o and backward o may only come after
 * forward o". A backward node that reads nothing (a loss of constant
 * gradient) would otherwise slip through the use-before-production rule. */
static void
test_backward_before_forward(void **state)
{
	DagTensor t[1] = {{.name = "x", .bytes = 8, .view_src = -1,
	                   .cat = CAT_ACTIVATIONS, .ir_tensor = -1}};
	int out0 = 0;
	DagNode n[2] = {
		{.name = "x", .cost = 1, .nout = 1, .out = &out0, .ir_op = -1},
		{.name = "x", .cost = 1, .once = true, .is_backward = true,
		 .ir_op = -1, .fwd_plus1 = 1},
	};
	int order[2] = {1, 0}, good[2] = {0, 1};
	Dag d = {.t = t, .nt = 1, .node = n, .nnode = 2, .base_order = good, .nbase = 2};
	Schedule bad = {2, order}, ok = {2, good};
	MemEval ev;
	char why[256];
	Arena a;
	(void)state;

	ar_init(&a);
	dag_finish(&d);
	lv_eval(&d, &bad, &ev, &a);
	assert_false(ev.valid);
	assert_non_null(strstr(ev.error, "before its forward"));
	assert_true(vf_check(&d, &bad, &ev, why, sizeof why));
	lv_eval(&d, &ok, &ev, &a);
	assert_true(ev.valid);
	assert_int_equal(ev.peak, 8);
	assert_true(vf_check(&d, &ok, &ev, why, sizeof why));
	ar_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp_f32_adamw),
		cmocka_unit_test(test_mlp_mixed_adamw),
		cmocka_unit_test(test_residual_accumulation),
		cmocka_unit_test(test_views_and_dropout),
		cmocka_unit_test(test_grad_view),
		cmocka_unit_test(test_infer),
		cmocka_unit_test(test_accumulate_4),
		cmocka_unit_test(test_properties),
		cmocka_unit_test(test_backward_before_forward),
	};
	return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
