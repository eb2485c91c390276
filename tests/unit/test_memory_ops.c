/* tests/unit/test_memory_ops.c -- the -O0 memory analysis of the forms and
 * ops added by issue 13 against numbers computed by hand from
 * memory-model.md and the saves column of docs/ops-added.md: frozen params
 * (weights only, no grad, no optimizer state; no backward into what only
 * they feed), topk (saves its indices, not x), attention with a mask,
 * dropout and one k/v head (saves the mask and the u8 dropout mask),
 * relu6 (saves out) beside hardswish (saves x), scatter_add and
 * index_select (save their index), clamp (saves x), and a dim-parameterised def
 * (same bytes as the spelled-out network); and from issue 28, expand (a
 * view: no bytes of its own; its backward makes a buffer of the
 * gradient's size before summing it into x's) and groupnorm (saves x and
 * its f32 [N, G] statistics). */
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
} Case;

static void
run(Case *c, const char *text)
{
	Source src = {"t.net", text, strlen(text), false};
	PlanGoal goal = {0, 1.0, -1, false};
	NetOptions o;
	Diag d;
	Program *p;

	memset(&o, 0, sizeof o);
	ar_init(&c->arena);
	diag_init(&d, &src, stderr);
	d.quiet_warnings = true;
	p = net_parse(&src, &c->arena, &d);
	assert_non_null(p);
	assert_int_equal(analyze(&(Job){p, "t.net", o, goal, true, {0, NULL, true, NULL}},
	                         &c->an, &c->arena, &d), ST_OK);
}

/* live_bytes at every step = persistent + want[i] */
static void
check_steps(const Case *c, int64_t persistent, const int64_t *want, int n)
{
	assert_int_equal(c->an.ev.nsteps, n);
	for (int i = 0; i < n; i++)
		if (c->an.ev.live_bytes[i] != persistent + want[i])
			fail_msg("step %d: live_bytes %lld, expected %lld", i,
			         (long long)c->an.ev.live_bytes[i], (long long)(persistent + want[i]));
}

/* The MLP of test_memory.c with w1 frozen, AdamW.
 * Persistent: weights w1 512 + w2 256 = 768; AdamW state for w2 only,
 * 2 x 64 x 4 = 512; no state, grad or master for w1: 1280 B.
 * x needs no grad and w1 none, so h~1 = x @ w1 and h = relu(h~1) need
 * none: neither op has a backward, x is not saved, no grad(h).
 * matmul(h, w2) saves h (for grad(w2)); cross_entropy saves lsm and y.
 * Steps: 0 fwd h~1, 1 fwd h, 2 fwd logits, 3 fwd loss, 4 bwd loss,
 * 5 bwd logits. x -1..0, y -1..4, h~1 0..1, h 1..5, logits 2..3,
 * loss 3, lsm 3..4, grad(logits) 4..5, grad(w2) 5..end.
 *   0: x 128 + y 32 + h~1 256                = 416
 *   1: y + h~1 + h 256                       = 544
 *   2: y + h + logits 64                     = 352
 *   3: + loss 4 + lsm 64                     = 420
 *   4: y + h + lsm + grad(logits) 64         = 416
 *   5: h + grad(logits) + grad(w2) 256       = 576
 * Peak 1280 + 576 = 1856 at step 5. */
static void
test_frozen(void **state)
{
	Case c;
	const int64_t want[] = {416, 544, 352, 420, 416, 576};
	(void)state;
	run(&c, "batch B = 4; dim I = 8, H = 16, C = 4;\n"
	        "input x : f32[B, I]; input y : i64[B];\n"
	        "param w1 : f32[I, H] frozen;\n"
	        "param w2 : f32[H, C];\n"
	        "h = relu(x @ w1);\n"
	        "logits = h @ w2;\n"
	        "loss = cross_entropy(logits, y);\n"
	        "output loss;\n");
	check_steps(&c, 1280, want, 6);
	assert_int_equal(c.an.ev.peak, 1856);
	assert_int_equal(c.an.ev.peak_step, 5);
	assert_int_equal(c.an.d.persistent[CAT_PARAMS], 768);
	assert_int_equal(c.an.d.persistent[CAT_OPTIMIZER], 512);
	assert_int_equal(c.an.d.persistent[CAT_MASTER], 0);
	ar_free(&c.arena);
}

/* Frozen under mixed precision: f16 w (frozen) gets no master copy, the
 * trainable f16 v gets one (f32) and f32 AdamW state.
 * w f16[8, 8] 128 B, v f16[8, 8] 128 B: weights 256; master(v) 256;
 * AdamW(v) 2 x 64 x 4 = 512: persistent 1024. */
static void
test_frozen_mixed(void **state)
{
	Case c;
	(void)state;
	run(&c, "batch B = 2; dim D = 8;\n"
	        "train { precision = mixed; }\n"
	        "input x : f16[B, D];\n"
	        "param w : f16[D, D] frozen; param v : f16[D, D];\n"
	        "loss = mean(cast((x @ v) @ w, dtype=f32));\n"
	        "output loss;\n");
	assert_int_equal(c.an.d.persistent[CAT_PARAMS], 256);
	assert_int_equal(c.an.d.persistent[CAT_MASTER], 256);
	assert_int_equal(c.an.d.persistent[CAT_OPTIMIZER], 512);
	ar_free(&c.arena);
}

/* topk saves its indices, not x. SGD, w f32[8, 8] 256 B persistent.
 * h = x @ w f32[4, 8] 128 (matmul saves x: w needs grad); v f32[4, 2] 32,
 * i i64[4, 2] 64; loss 4.
 * Steps: 0 fwd h, 1 fwd topk, 2 fwd loss, 3 bwd loss, 4 bwd topk,
 * 5 bwd h. x -1..5, h 0..1, v 1..2, i 1..4, loss 2, grad(v) 3..4,
 * grad(h) 4..5, grad(w) 5..end.
 *   0: x 128 + h 128                 = 256
 *   1: + v 32 + i 64                 = 352
 *   2: x + v + i + loss 4            = 228
 *   3: x + i + grad(v) 32            = 224
 *   4: + grad(h) 128                 = 352
 *   5: x + grad(h) + grad(w) 256     = 512
 * Peak 256 + 512 = 768 at step 5. */
static void
test_topk(void **state)
{
	Case c;
	const int64_t want[] = {256, 352, 228, 224, 352, 512};
	(void)state;
	run(&c, "batch B = 4; dim E = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input x : f32[B, E];\n"
	        "param w : f32[E, E];\n"
	        "h = x @ w;\n"
	        "v, i = topk(h, k=2);\n"
	        "loss = mean(v);\n"
	        "output loss;\n");
	check_steps(&c, 256, want, 6);
	assert_int_equal(c.an.ev.peak, 768);
	ar_free(&c.arena);
}

/* Attention with a bool mask, dropout and one k/v head (MQA). SGD.
 * q f32[1, 2, 4, 8] 256, k f32[1, 1, 4, 8] 128: persistent 384.
 * m bool[4, 4] 16; a 256; a:lse f32[1, 2, 4] 32; a:dmask u8[1, 2, 4, 4] 32.
 * Saves: q, k (params), out, lse, mask, dmask.
 * Steps: 0 fwd a, 1 fwd loss, 2 bwd loss, 3 bwd a.
 *   0: m 16 + a 256 + lse 32 + dmask 32     = 336
 *   1: + loss 4                             = 340
 *   2: m + a + lse + dmask + grad(a) 256    = 592
 *   3: + grad(q) 256 + grad(k) 128          = 976
 * Peak 384 + 976 = 1360 at step 3.
 * FLOPs: 4 B H S T Dh = 1024, + n(scores) 32 for the mask, + 2 x 32 for
 * dropout = 1120; backward 2.5 x = 2800. */
static void
test_attention_mask_dropout(void **state)
{
	Case c;
	const int64_t want[] = {336, 340, 592, 976};
	(void)state;
	run(&c, "batch B = 1; dim H = 2, S = 4, Dh = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input m : bool[S, S];\n"
	        "param q : f32[B, H, S, Dh]; param k : f32[B, 1, S, Dh];\n"
	        "a = attention(q, k, k, m, dropout=0.5);\n"
	        "loss = mean(a);\n"
	        "output loss;\n");
	check_steps(&c, 384, want, 4);
	assert_int_equal(c.an.ev.peak, 1360);
	assert_int_equal(c.an.g.op[0].flops, 1120);
	assert_int_equal(c.an.g.op[0].bwd_flops, 2800);
	ar_free(&c.arena);
}

/* relu6 saves its output, hardswish its input: x @ w (f32[4, 8], 128 B,
 * "h~1") dies once relu6 ran but lives on for hardswish. SGD, w 256.
 * relu6 net: 0 fwd h~1, 1 fwd h, 2 fwd loss, 3 bwd loss, 4 bwd h,
 * 5 bwd h~1. x -1..5 (saved by the matmul), h~1 0..1, h 1..4.
 *   0: x 128 + h~1 128 = 256; 1: + h 128 = 384; 2: x + h + loss 4 = 260;
 *   3: x + h + grad(h) 128 = 384; 4: + grad(h~1) 128 = 512;
 *   5: x + grad(h~1) + grad(w) 256 = 512.
 * hardswish: h~1 lives to step 4 instead of h (h dies after the loss):
 *   0: 256; 1: 384; 2: x + h~1 + h + loss = 388; 3: x + h~1 + grad(h) = 384;
 *   4: 512; 5: 512. */
static void
test_relu6_hardswish(void **state)
{
	Case c;
	const int64_t r6[] = {256, 384, 260, 384, 512, 512};
	const int64_t hs[] = {256, 384, 388, 384, 512, 512};
	(void)state;
	run(&c, "batch B = 4; dim E = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input x : f32[B, E]; param w : f32[E, E];\n"
	        "h = relu6(x @ w);\nloss = mean(h);\noutput loss;\n");
	check_steps(&c, 256, r6, 6);
	ar_free(&c.arena);
	run(&c, "batch B = 4; dim E = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input x : f32[B, E]; param w : f32[E, E];\n"
	        "h = hardswish(x @ w);\nloss = mean(h);\noutput loss;\n");
	check_steps(&c, 256, hs, 6);
	ar_free(&c.arena);
}

/* scatter_add saves only its index. SGD; x f32[4, 8] 128 + s f32[2, 8] 64
 * = 192 persistent. i i64[2, 1] 16, y 128, loss 4.
 * Steps: 0 fwd y, 1 fwd loss, 2 bwd loss, 3 bwd y (grad(x), grad(s)).
 *   0: i 16 + y 128                               = 144
 *   1: + loss 4                                   = 148
 *   2: i + grad(y) 128                            = 144
 *   3: + grad(x) 128 + grad(s) 64                 = 336
 * Peak 192 + 336 = 528 at step 3. */
static void
test_scatter_add(void **state)
{
	Case c;
	const int64_t want[] = {144, 148, 144, 336};
	(void)state;
	run(&c, "batch T = 4; dim D = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input i : i64[2, 1];\n"
	        "param x : f32[T, D]; param s : f32[2, D];\n"
	        "y = scatter_add(x, i, s, axis=0);\n"
	        "loss = mean(y);\noutput loss;\n");
	check_steps(&c, 192, want, 4);
	assert_int_equal(c.an.ev.peak, 528);
	assert_int_equal(c.an.ev.peak_step, 3);
	ar_free(&c.arena);
}

/* index_select saves its index, clamp its input. SGD; w f32[4, 8] 128.
 * j i64[2] 16; a = index_select f32[2, 8] 64; b = clamp 64; loss 4.
 * Steps: 0 fwd a, 1 fwd b, 2 fwd loss, 3 bwd loss, 4 bwd b, 5 bwd a.
 * j -1..5, a 0..4, b 1..2, grad(b) 3..4, grad(a) 4..5, grad(w) 5..end.
 *   0: j 16 + a 64                    =  80
 *   1: + b 64                         = 144
 *   2: + loss 4                       = 148
 *   3: j + a + grad(b) 64             = 144
 *   4: + grad(a) 64                   = 208
 *   5: j + grad(a) + grad(w) 128      = 208
 * Peak 128 + 208 = 336, first at step 4. */
static void
test_index_select_clamp(void **state)
{
	Case c;
	const int64_t want[] = {80, 144, 148, 144, 208, 208};
	(void)state;
	run(&c, "batch B = 4; dim D = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input j : i64[2];\nparam w : f32[B, D];\n"
	        "a = index_select(w, j, axis=0);\n"
	        "b = clamp(a, min=0.0);\n"
	        "loss = mean(b);\noutput loss;\n");
	check_steps(&c, 128, want, 6);
	assert_int_equal(c.an.ev.peak, 336);
	assert_int_equal(c.an.ev.peak_step, 4);
	ar_free(&c.arena);
}

/* A def with dim arguments gives the bytes of the same network written
 * out by hand. */
static void
test_dim_args(void **state)
{
	Case a, b;
	(void)state;
	run(&a, "batch B = 2; dim C = 4;\n"
	        "input x : f32[B, C, 8, 8];\n"
	        "def blk(x, dim cin, dim cout, dim s) {\n"
	        "  param w : f32[cout, cin, 3, 3];\n"
	        "  return relu(conv2d(x, w, stride=s, padding=1));\n"
	        "}\n"
	        "h = blk(x, C, 2*C, 2); h = blk(h, 2*C, 3*C, 1);\n"
	        "loss = mean(h); output loss;\n");
	run(&b, "batch B = 2; dim C = 4;\n"
	        "input x : f32[B, C, 8, 8];\n"
	        "param w0 : f32[8, 4, 3, 3]; param w1 : f32[12, 8, 3, 3];\n"
	        "h = relu(conv2d(x, w0, stride=2, padding=1));\n"
	        "h = relu(conv2d(h, w1, stride=1, padding=1));\n"
	        "loss = mean(h); output loss;\n");
	assert_int_equal(a.an.ev.nsteps, b.an.ev.nsteps);
	for (int i = 0; i < a.an.ev.nsteps; i++)
		assert_int_equal(a.an.ev.live_bytes[i], b.an.ev.live_bytes[i]);
	assert_int_equal(a.an.ev.peak, b.an.ev.peak);
	ar_free(&a.arena);
	ar_free(&b.arena);
}

/* expand of a param, SGD. Persistent: c f32[1, 8] 32.
 * x f32[4, 8] 128 (an input: live from the start to its last use); e a
 * view of c (owns nothing); h 128; loss 4; grad(h), grad(e) 128 each;
 * grad(c) 32. mul saves x (for grad(e)); mean and expand save nothing.
 * Steps: 0 fwd e, 1 fwd h, 2 fwd loss, 3 bwd loss, 4 bwd h, 5 bwd e.
 *   0: x                                     = 128
 *   1: x + h                                 = 256
 *   2: x + h + loss                          = 260
 *   3: x + grad(h)                           = 256
 *   4: x + grad(h) + grad(e)                 = 384
 *   5: grad(e) + grad(c)                     = 160
 * Peak 32 + 384 = 416 at step 4. */
static void
test_expand(void **state)
{
	Case c;
	const int64_t want[] = {128, 256, 260, 256, 384, 160};
	(void)state;
	run(&c, "batch B = 4; dim D = 8;\n"
	        "train { optimizer = sgd; }\n"
	        "input x : f32[B, D];\n"
	        "param c : f32[1, D];\n"
	        "e = expand(c, [B, D]);\n"
	        "h = x * e;\n"
	        "loss = mean(h);\n"
	        "output loss;\n");
	check_steps(&c, 32, want, 6);
	assert_int_equal(c.an.ev.peak, 416);
	ar_free(&c.arena);
}

/* groupnorm, SGD. Persistent: g, b f32[4] 32. x f32[2, 4, 2, 2] 128,
 * y 128, y:mean and y:rstd f32[2, 2] 16 each; saves x, mean, rstd (x
 * needs no grad, but g and b do).
 * Steps: 0 fwd y, 1 fwd loss, 2 bwd loss, 3 bwd y.
 *   0: x + y + mean + rstd                   = 288
 *   1: + loss 4                              = 292
 *   2: x + mean + rstd + grad(y) 128         = 288
 *   3: + grad(g) 16 + grad(b) 16             = 320
 * Peak 32 + 320 = 352 at step 3. */
static void
test_groupnorm(void **state)
{
	Case c;
	const int64_t want[] = {288, 292, 288, 320};
	(void)state;
	run(&c, "batch B = 2; dim C = 4;\n"
	        "train { optimizer = sgd; }\n"
	        "input x : f32[B, C, 2, 2];\n"
	        "param g : f32[C]; param b : f32[C];\n"
	        "y = groupnorm(x, g, b, groups=2);\n"
	        "loss = mean(y);\n"
	        "output loss;\n");
	check_steps(&c, 32, want, 4);
	assert_int_equal(c.an.ev.peak, 352);
	ar_free(&c.arena);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frozen),
		cmocka_unit_test(test_frozen_mixed),
		cmocka_unit_test(test_topk),
		cmocka_unit_test(test_attention_mask_dropout),
		cmocka_unit_test(test_relu6_hardswish),
		cmocka_unit_test(test_scatter_add),
		cmocka_unit_test(test_index_select_clamp),
		cmocka_unit_test(test_dim_args),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_groupnorm),
	};
	return cmocka_run_group_tests_name("memory_ops", tests, NULL, NULL);
}
