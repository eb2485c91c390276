/* tests/unit/test_autodiff.c -- backward decisions (passes/graph/autodiff.c):
 * the training output, reachability, saves per ops.md, backward FLOPs and
 * gradient tensors, on graphs built by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "graphkit.h"



/* Checks op o's saves, in order. */
static void
check_saves(int o, int n, ...)
{
	va_list ap;

	assert_true(g.op[o].has_backward);
	assert_int_equal(g.op[o].nsaves, n);
	va_start(ap, n);
	for (int i = 0; i < n; i++) {
		int t = va_arg(ap, int);
		assert_int_equal(g.op[o].saves[i], t);
		assert_true(g.t[t].saved);
	}
	va_end(ap);
}

/* loss = sum(t) */
static int
sum_of(int t)
{
	return out(mk(OP_SUM, "l", 1, t));
}

static void
test_loss_not_scalar(void **state)
{
	int w = decl("w", TK_PARAM, DT_F32, 2, 8, 10);
	int y = out(mk(OP_RELU, "y", 1, w));
	(void)state;
	assert_int_equal(train(y), 1);
	assert_string_equal(said(), "t.net:9:1: error: training output 'y' must "
	                    "be a scalar, not [8, 10]\n");
}

static void
test_loss_not_float_or_no_param(void **state)
{
	int f = decl("f", TK_INPUT, DT_F32, 1, 8);
	int t = out(mk(OP_MEAN, "m", 1, f)), c = mk(OP_CAST, "l", 1, t);
	int s = out(c);
	(void)state;
	g.op[c].p->dtype = DT_I64;
	assert_int_equal(train(s), 1);
	g.loss = t;
	g.outputs[0] = t;
	assert_int_equal(autodiff(&g, &diag), 1);
	assert_string_equal(said(),
		"t.net:9:1: error: training output 'l' must be floating point, not i64\n"
		"t.net:9:1: error: training output 'm' does not depend on any param\n");
}

static void
test_two_outputs(void **state)
{
	int w = decl("w", TK_PARAM, DT_F32, 0);
	int a = out(mk(OP_RELU, "a", 1, w)), b = out(mk(OP_GELU, "b", 1, w));
	(void)state;
	assert_int_equal(shape_infer(&g, &diag), 0);
	g.outputs = ar_alloc(&arena, 2 * sizeof(int));
	g.output_loc = ar_alloc(&arena, 2 * sizeof(Loc));
	g.outputs[0] = a, g.outputs[1] = b;
	g.output_loc[0] = loc_make("t.net", 9, 1);
	g.output_loc[1] = loc_make("t.net", 10, 1);
	g.noutputs = 2;
	g.loss = a;
	assert_int_equal(autodiff(&g, &diag), 1);
	assert_string_equal(said(), "t.net:10:1: error: training takes exactly "
	                    "one output, not 2 (use --infer for several)\n");
}

static void
test_saves_unary(void **state)
{
	static const struct {
		OpKind k;
		int what;       /* 0 nothing, 1 x, 2 out, 3 extra 0 */
	} rows[] = {
		{OP_RELU, 2}, {OP_GELU, 1}, {OP_SILU, 1}, {OP_SIGMOID, 2},
		{OP_TANH, 2}, {OP_EXP, 2}, {OP_LOG, 1}, {OP_SQRT, 2}, {OP_NEG, 0},
		{OP_SCALE, 0}, {OP_CAST, 0}, {OP_DROPOUT, 3}, {OP_SOFTMAX, 2},
		{OP_LOG_SOFTMAX, 2}, {OP_SUM, 0}, {OP_MEAN, 0},
	};
	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		teardown(NULL);
		setup(NULL);
		int w = decl("w", TK_PARAM, DT_F32, 2, 4, 3);
		int o = mk(rows[i].k, "y", 1, w);
		if (rows[i].k == OP_CAST)
			g.op[o].p->dtype = DT_F16;
		int l = sum_of(out(o));
		assert_int_equal(train(l), 0);
		assert_int_equal(g.op[o].bwd_flops, g.op[o].flops);
		if (rows[i].what == 0)
			check_saves(o, 0);
		else
			check_saves(o, 1, rows[i].what == 1 ? w : rows[i].what == 2 ?
			            out(o) : ir_extra(&g.op[o], 0));
		assert_false(g.t[l].saved);
	}
}

static void
test_saves_mul_div(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 2, 4, 3), w = decl("w", TK_PARAM, DT_F32, 1, 3);
	int v = decl("v", TK_PARAM, DT_F32, 2, 4, 3);
	int o1 = mk(OP_MUL, "a", 2, x, w), o2 = mk(OP_MUL, "b", 2, w, v);
	int o3 = mk(OP_DIV, "c", 2, x, w), o4 = mk(OP_DIV, "d", 2, v, x);
	int o5 = mk(OP_MUL, "e", 2, v, v), o6 = mk(OP_DIV, "f", 2, v, w);
	int s = out(o1);
	(void)state;
	for (int o = o2; o <= o6; o++)
		s = out(mk(OP_ADD, "s", 2, s, out(o)));
	assert_int_equal(train(sum_of(s)), 0);
	check_saves(o1, 1, x);          /* a if b */
	check_saves(o2, 2, v, w);       /* b if a, a if b */
	check_saves(o3, 2, x, w);       /* a and b if b */
	check_saves(o4, 1, x);          /* b if a */
	check_saves(o5, 1, v);          /* x * x saved once */
	check_saves(o6, 2, w, v);
	assert_int_equal(g.op[o1].bwd_flops, 12);
	assert_int_equal(g.op[o2].bwd_flops, 24);   /* 1 per grad */
	assert_int_equal(g.op[o5].bwd_flops, 12);   /* one distinct grad */
	assert_int_equal(g.op[o6].bwd_flops, 24);
	assert_false(g.t[out(o1)].saved);
}

static void
test_saves_linear(void **state)
{
	int x = decl("x", TK_INPUT, DT_F16, 2, 8, 16), w = decl("w", TK_PARAM, DT_F16, 2, 16, 16);
	int img = decl("img", TK_INPUT, DT_F16, 4, 2, 3, 8, 8);
	int k = decl("k", TK_PARAM, DT_F16, 4, 4, 3, 3, 3);
	int o1 = mk(OP_MATMUL, "h", 2, x, w), o2 = mk(OP_MATMUL, "h2", 2, out(o1), w);
	int o3 = mk(OP_CONV2D, "c", 2, img, k);
	int q = out(mk(OP_RESHAPE, "q", 1, out(o2)));
	int o4 = mk(OP_ATTENTION, "a", 3, q, q, q);
	int s1 = out(mk(OP_SUM, "s1", 1, out(o3))), s2 = out(mk(OP_SUM, "s2", 1, out(o4)));
	(void)state;
	set_list(g.t[q].producer, 4, 1, 2, 8, 8);
	assert_int_equal(train(out(mk(OP_ADD, "l", 2, s1, s2))), 0);
	check_saves(o1, 1, x);
	check_saves(o2, 2, w, out(o1));
	check_saves(o3, 1, img);
	check_saves(o4, 3, q, out(o4), ir_extra(&g.op[o4], 0));
	assert_int_equal(g.op[o1].bwd_flops, g.op[o1].flops);
	assert_int_equal(g.op[o2].bwd_flops, 2 * g.op[o2].flops);
	assert_int_equal(g.op[o3].bwd_flops, g.op[o3].flops);
	assert_int_equal(g.op[o4].bwd_flops, g.op[o4].flops * 5 / 2);
	assert_int_equal(g.op[g.t[q].producer].bwd_flops, 0);
}

static void
test_saves_norm_pool_loss(void **state)
{
	int x = decl("x", TK_PARAM, DT_F32, 4, 2, 3, 4, 4);
	int gc = decl("gc", TK_PARAM, DT_F32, 1, 3), gl = decl("gl", TK_PARAM, DT_F32, 1, 4);
	int lab = decl("lab", TK_INPUT, DT_I64, 3, 2, 3, 4);
	int idx = decl("idx", TK_INPUT, DT_I64, 1, 5);
	int tab = decl("tab", TK_PARAM, DT_F32, 2, 10, 4);
	int o1 = mk(OP_BATCHNORM, "bn", 3, x, gc, gc);
	int o2 = mk(OP_LAYERNORM, "ln", 3, out(o1), gl, gl);
	int o3 = mk(OP_RMSNORM, "rn", 2, out(o2), gl);
	int o4 = mk(OP_MAXPOOL2D, "mp", 1, out(o3));
	int o5 = mk(OP_AVGPOOL2D, "ap", 1, out(o3));
	int o6 = mk(OP_CROSS_ENTROPY, "ce", 2, out(o3), lab);
	int o7 = mk(OP_EMBEDDING, "em", 2, idx, tab);
	int o8 = mk(OP_MSE_LOSS, "ms", 2, out(o7), out(o7));
	int o9 = mk(OP_UPSAMPLE2D, "up", 1, out(o4));
	int o10 = mk(OP_GLOBAL_AVGPOOL, "gp", 1, out(o5));
	int s = out(o6);
	(void)state;
	g.op[o4].p->k[0] = g.op[o4].p->k[1] = 2;
	g.op[o5].p->k[0] = g.op[o5].p->k[1] = 2;
	g.op[o9].p->scale = 2;
	s = out(mk(OP_ADD, "s1", 2, s, out(o8)));
	s = out(mk(OP_ADD, "s2", 2, s, sum_of(out(o9))));
	s = out(mk(OP_ADD, "s3", 2, s, sum_of(out(o10))));
	assert_int_equal(train(s), 0);
	check_saves(o1, 3, x, ir_extra(&g.op[o1], 0), ir_extra(&g.op[o1], 1));
	check_saves(o2, 3, out(o1), ir_extra(&g.op[o2], 0), ir_extra(&g.op[o2], 1));
	check_saves(o3, 2, out(o2), ir_extra(&g.op[o3], 0));
	check_saves(o4, 2, out(o3), ir_extra(&g.op[o4], 0));
	check_saves(o5, 0);
	check_saves(o6, 2, ir_extra(&g.op[o6], 0), lab);
	check_saves(o7, 1, idx);
	check_saves(o8, 1, out(o7));
	check_saves(o9, 0);
	check_saves(o10, 0);
	assert_true(g.t[out(o3)].saved);
}

/* Issue 28's ops: conv1d saves like conv2d (the weight only for grad(x),
 * x only for grad(w)); groupnorm x and its statistics; expand and a sum
 * over an axis list nothing. The params under expand and conv1d get grads. */
static void
test_saves_issue28(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 3, 2, 4, 8), w = decl("w", TK_PARAM, DT_F32, 3, 4, 4, 3);
	int gc = decl("gc", TK_PARAM, DT_F32, 1, 4), c = decl("c", TK_PARAM, DT_F32, 2, 4, 1);
	int o1 = mk(OP_CONV1D, "cv", 2, x, w);
	int o2 = mk(OP_GROUPNORM, "gn", 3, out(o1), gc, gc);
	int o3 = mk(OP_EXPAND, "ex", 1, c);
	int o4 = mk(OP_MUL, "m", 2, out(o2), out(o3));
	int o5 = mk(OP_SUM, "sl", 1, out(o4));
	(void)state;
	g.op[o2].p->groups = 2;
	set_list(o3, 3, 2, 4, 6);
	g.op[o5].p->has_axis = true;
	set_list(o5, 2, 0, 2);
	assert_int_equal(train(sum_of(out(o5))), 0);
	check_saves(o1, 1, x);          /* x needs no grad: only grad(w) */
	assert_int_equal(g.op[o1].bwd_flops, g.op[o1].flops);
	check_saves(o2, 3, out(o1), ir_extra(&g.op[o2], 0), ir_extra(&g.op[o2], 1));
	check_saves(o3, 0);
	check_saves(o5, 0);
	assert_int_equal(g.op[o3].bwd_flops, 0);
	assert_true(g.t[c].grad >= 0 && g.t[out(o3)].grad >= 0);
	assert_true(g.t[w].grad >= 0 && g.t[x].grad < 0);
}

static void
test_unreachable_warning(void **state)
{
	int w = decl("w", TK_PARAM, DT_F32, 1, 4), x = decl("x", TK_INPUT, DT_F32, 1, 4);
	int h = out(mk(OP_RELU, "h", 1, w));
	int o2 = mk(OP_GELU, "u", 1, w), o3 = mk(OP_RELU, "v", 1, x);
	(void)state;
	assert_int_equal(train(sum_of(h)), 0);
	assert_string_equal(said(), "t.net:2:5: warning: 'u' needs grad but does "
	                    "not reach the training output 'l'; it has no backward\n");
	assert_false(g.op[o2].has_backward);
	assert_int_equal(g.op[o2].nsaves, 0);
	assert_false(g.t[w].saved);     /* gelu's save does not count */
	assert_false(g.op[o3].has_backward);
	assert_int_equal(g.t[out(o2)].grad, -1);
	assert_true(g.t[h].reaches_output);
	assert_false(g.t[out(o2)].reaches_output);
}

static void
test_grads_mixed(void **state)
{
	int x = decl("x", TK_INPUT, DT_F16, 2, 4, 8), w = decl("w", TK_PARAM, DT_F16, 2, 8, 8);
	int h = out(mk(OP_MATMUL, "h", 2, x, w));
	int l = sum_of(h);
	(void)state;
	g.settings.mixed = true;
	assert_int_equal(train(l), 0);
	int gw = g.t[w].grad, gh = g.t[h].grad;
	assert_true(gw >= 0 && gh >= 0);
	assert_string_equal(g.t[gw].id, "grad(w)");
	assert_int_equal(g.t[gw].kind, TK_PARAM_GRAD);
	assert_int_equal(g.t[gw].dtype, DT_F32);
	assert_int_equal(g.t[gw].bytes, 64 * 4);
	assert_int_equal(g.t[gw].grad_of, w);
	assert_string_equal(g.t[gh].id, "grad(h)");
	assert_int_equal(g.t[gh].kind, TK_GRAD);
	assert_int_equal(g.t[gh].dtype, DT_F16);
	assert_int_equal(g.t[gh].ndim, 2);
	assert_int_equal(g.t[gh].shape[1], 8);
	assert_int_equal(g.t[gh].bytes, 64);
	assert_int_equal(g.t[x].grad, -1);
	assert_int_equal(g.t[l].grad, -1);
}

static void
test_grads_declared(void **state)
{
	int w = decl("w", TK_PARAM, DT_BF16, 1, 8);
	int l = sum_of(w);
	(void)state;
	assert_int_equal(train(l), 0);
	assert_int_equal(g.t[g.t[w].grad].dtype, DT_BF16);
	assert_int_equal(g.t[g.t[w].grad].bytes, 16);
}

static void
test_split_concat(void **state)
{
	int w = decl("w", TK_PARAM, DT_F32, 2, 4, 6);
	int in[1] = {w};
	const char *ids[3] = {"q", "k", "v"};
	int sp = ir_add_op(&g, OP_SPLIT, in, 1);
	ir_set_outputs(&g, sp, ids, 3, "", loc_make("t.net", 2, 5));
	g.op[sp].p->n = 3, g.op[sp].p->axis = 1;
	int q = g.op[sp].out[0], k = g.op[sp].out[1];
	int c = mk(OP_CONCAT, "c", 2, q, q);
	(void)state;
	g.op[c].p->axis = 0;
	assert_int_equal(train(sum_of(out(c))), 0);
	assert_true(g.op[sp].has_backward);
	assert_int_equal(g.op[sp].bwd_flops, 0);
	assert_int_equal(g.op[c].bwd_flops, 16);
	check_saves(c, 0);
	assert_true(g.t[q].grad >= 0);
	assert_int_equal(g.t[k].grad, -1);
	assert_true(g.t[w].grad >= 0);
	assert_string_equal(said(), "");
}

static void
test_custom(void **state)
{
	bool sv[2] = {true, false};
	CustomOp cu = {.name = "fused", .nargs = 2, .out_dtype = DT_F32,
	               .out_ndim = 0, .flops = 100, .backward_flops = -1,
	               .workspace = 64, .saves_out = true, .saves_arg = sv};
	int x = decl("x", TK_INPUT, DT_F32, 1, 8), w = decl("w", TK_PARAM, DT_F32, 1, 8);
	int o = mk(OP_CUSTOM, "y", 2, x, w);
	(void)state;
	ir_set_custom(&g, o, &cu);
	assert_int_equal(train(out(o)), 0);
	check_saves(o, 2, x, out(o));
	assert_int_equal(g.op[o].bwd_flops, 200);
	assert_int_equal(ir_op_workspace(&g.op[o]), 64);
	assert_true(g.t[w].grad >= 0);
	cu.backward_flops = 7;
	g.op[o].has_backward = false;
	assert_int_equal(autodiff(&g, &diag), 0);
	assert_int_equal(g.op[o].bwd_flops, 7);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_loss_not_scalar), T(test_loss_not_float_or_no_param), T(test_two_outputs),
		T(test_saves_unary), T(test_saves_mul_div), T(test_saves_linear),
		T(test_saves_norm_pool_loss), T(test_saves_issue28),
		T(test_unreachable_warning),
		T(test_grads_mixed), T(test_grads_declared), T(test_split_concat),
		T(test_custom),
	};
	return cmocka_run_group_tests_name("autodiff", tests, NULL, NULL);
}
