/* tests/unit/test_shape.c -- the op table's attributes (ir/net/optab.c) and
 * shape/dtype/FLOPs inference (passes/graph/shape.c), on graphs built by hand. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "graphkit.h"

static void
check_shape(int t, Dtype dt, int ndim, ...)
{
	va_list ap;

	assert_int_equal(g.t[t].ndim, ndim);
	assert_int_equal(g.t[t].dtype, dt);
	va_start(ap, ndim);
	int64_t n = 1;
	for (int i = 0; i < ndim; i++) {
		int64_t d = va_arg(ap, int);
		assert_int_equal(g.t[t].shape[i], d);
		n *= d;
	}
	va_end(ap);
	assert_int_equal(ir_numel(&g.t[t]), n);
	assert_int_equal(g.t[t].bytes, n * dtype_size(dt));
}

/* Infers one op and checks the single error it reports. */
static void
expect_error(int o, const char *msg)
{
	char want[512];

	assert_int_equal(shape_infer_op(&g, o, &diag), 1);
	snprintf(want, sizeof want, "t.net:2:5: error: %s\n", msg);
	assert_string_equal(said(), want);
	assert_int_equal(g.t[out(o)].ndim, -1);
}

static void
infer_ok(void)
{
	assert_int_equal(shape_infer(&g, &diag), 0);
	assert_string_equal(said(), "");
}

static AttrValue
av_int(int64_t i)
{
	return (AttrValue){.kind = AV_INT, .i = i};
}

/* ---- attributes */

static void
test_attr_errors(void **state)
{
	OpParams p;
	AttrValue r = {.kind = AV_REAL, .r = 0.5}, b = {.kind = AV_BOOL, .b = true};
	AttrValue one = av_int(1);
	(void)state;
	ir_params_default(&p);
	assert_string_equal(ir_set_attr(OP_RELU, &p, "p", 0, &r),
	                    "op 'relu' has no attribute 'p'");
	assert_string_equal(ir_set_attr(OP_DROPOUT, &p, "p", 0, &b),
	                    "attribute 'p' of 'dropout' must be a real");
	assert_string_equal(ir_set_attr(OP_SOFTMAX, &p, "axis", 0, &r),
	                    "attribute 'axis' of 'softmax' must be an integer");
	assert_string_equal(ir_set_attr(OP_ATTENTION, &p, "causal", 0, &one),
	                    "attribute 'causal' of 'attention' must be a boolean");
	assert_string_equal(ir_set_attr(OP_CAST, &p, "dtype", 0, &one),
	                    "attribute 'dtype' of 'cast' must be a dtype");
	assert_null(ir_set_attr(OP_DROPOUT, &p, "p", 0, &one));  /* int as real */
	assert_true(p.p == 1.0);
	assert_string_equal(ir_set_attr(OP_DROPOUT, &p, "p", 0, &r),
	                    "attribute 'p' of 'dropout' given twice");
	assert_string_equal(ir_set_attr(OP_RELU, &p, NULL, 0, &one),
	                    "op 'relu' takes no parameter after its tensor arguments");
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_TRANSPOSE, &p, NULL, 0, &one));
	assert_null(ir_set_attr(OP_TRANSPOSE, &p, NULL, 1, &one));
	assert_string_equal(ir_set_attr(OP_TRANSPOSE, &p, NULL, 2, &one),
	                    "op 'transpose' takes 2 parameters after its tensor arguments");
	ir_params_default(&p);
	assert_string_equal(ir_set_attr(OP_RESHAPE, &p, NULL, 0, &one),
	                    "parameter 'shape' of 'reshape' must be a list of at most 8 dimensions");
	assert_string_equal(ir_set_attr(OP_SPLIT, &p, NULL, 0, &r),
	                    "parameter 'n' of 'split' must be an integer");
}

static AttrValue
av_list(int n, ...)
{
	AttrValue v = {.kind = AV_LIST, .n = n};
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		v.list[i] = va_arg(ap, int);
	va_end(ap);
	return v;
}

/* Window settings: a scalar fills every axis; a list gives one value per
 * spatial axis, padding also each axis's begin and end; other lengths and
 * lists where the op takes none are errors. Axis lists for sum and mean. */
static void
test_attr_lists(void **state)
{
	OpParams p;
	AttrValue three = av_int(3), two = av_list(2, 2, 1), four = av_list(4, 1, 2, 3, 4);
	AttrValue one = av_list(1, 5), bad = av_list(3, 1, 1, 1), none = av_list(0);
	(void)state;
	ir_params_default(&p);
	assert_true(p.stride[0] == 1 && p.stride[1] == 1 && p.dilation[1] == 1);
	assert_null(ir_set_attr(OP_CONV2D, &p, "padding", 0, &three));
	for (int i = 0; i < 4; i++)
		assert_int_equal(p.pad[i], 3);
	assert_null(ir_set_attr(OP_CONV2D, &p, "stride", 0, &two));
	assert_true(p.stride[0] == 2 && p.stride[1] == 1);
	assert_null(ir_set_attr(OP_CONV2D, &p, "dilation", 0, &three));
	assert_true(p.dilation[0] == 3 && p.dilation[1] == 3);
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_CONV2D, &p, "padding", 0, &two));
	assert_true(p.pad[0] == 2 && p.pad[1] == 2 && p.pad[2] == 1 && p.pad[3] == 1);
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_MAXPOOL2D, &p, "padding", 0, &four));
	assert_true(p.pad[0] == 1 && p.pad[1] == 2 && p.pad[2] == 3 && p.pad[3] == 4);
	assert_null(ir_set_attr(OP_MAXPOOL2D, &p, "k", 0, &two));
	assert_true(p.k[0] == 2 && p.k[1] == 1);
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_CONV1D, &p, "padding", 0, &two));
	assert_true(p.pad[0] == 2 && p.pad[1] == 1);
	assert_null(ir_set_attr(OP_CONV1D, &p, "stride", 0, &one));
	assert_int_equal(p.stride[0], 5);
	ir_params_default(&p);
	assert_string_equal(ir_set_attr(OP_CONV1D, &p, "dilation", 0, &two),
	                    "attribute 'dilation' of 'conv1d' takes an integer or a list "
	                    "of 1 (one per spatial axis), not 2 values");
	assert_string_equal(ir_set_attr(OP_CONV2D, &p, "padding", 0, &bad),
	                    "attribute 'padding' of 'conv2d' takes an integer, a list of 2 "
	                    "(one per spatial axis) or of 4 (top, bottom, left, right), not 3 "
	                    "values");
	assert_string_equal(ir_set_attr(OP_CONV1D, &p, "padding", 0, &bad),
	                    "attribute 'padding' of 'conv1d' takes an integer, a list of 1 "
	                    "(one per spatial axis) or of 2 (left, right), not 3 values");
	assert_string_equal(ir_set_attr(OP_CONV2D, &p, "groups", 0, &two),
	                    "attribute 'groups' of 'conv2d' must be an integer");
	assert_string_equal(ir_set_attr(OP_AVGPOOL2D, &p, "dilation", 0, &two),
	                    "op 'avgpool2d' has no attribute 'dilation'");
	assert_string_equal(ir_set_attr(OP_TOPK, &p, "k", 0, &two),
	                    "attribute 'k' of 'topk' must be an integer");
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_SUM, &p, "axis", 0, &four));
	assert_true(p.has_axis && p.nlist == 4 && p.list[3] == 4);
	ir_params_default(&p);
	assert_string_equal(ir_set_attr(OP_SOFTMAX, &p, "axis", 0, &two),
	                    "attribute 'axis' of 'softmax' must be an integer");
	ir_params_default(&p);
	assert_string_equal(ir_set_attr(OP_MEAN, &p, "dim", 0, &none),
	                    "attribute 'axis' of 'mean' needs at least one axis");
}

static void
test_attr_required(void **state)
{
	static const struct {
		OpKind k;
		const char *msg;
	} cases[] = {
		{OP_MAXPOOL2D, "op 'maxpool2d' needs attribute 'k'"},
		{OP_AVGPOOL2D, "op 'avgpool2d' needs attribute 'k'"},
		{OP_CAST, "op 'cast' needs attribute 'dtype'"},
		{OP_DROPOUT, "op 'dropout' needs attribute 'p'"},
		{OP_SCALE, "op 'scale' needs attribute 'c'"},
		{OP_UPSAMPLE2D, "op 'upsample2d' needs attribute 'scale'"},
		{OP_SLICE, "op 'slice' needs attribute 'axis'"},
		{OP_SPLIT, "op 'split' needs parameter 'n'"},
		{OP_TRANSPOSE, "op 'transpose' needs parameter 'i'"},
		{OP_RESHAPE, "op 'reshape' needs parameter 'shape'"},
		{OP_PERMUTE, "op 'permute' needs parameter 'axes'"},
		{OP_CONCAT, "op 'concat' needs attribute 'axis'"},
		{OP_GROUPNORM, "op 'groupnorm' needs attribute 'groups'"},
		{OP_EXPAND, "op 'expand' needs parameter 'shape'"},
	};
	OpParams p;
	AttrValue one = av_int(1);
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		ir_params_default(&p);
		assert_string_equal(ir_check_attrs(cases[i].k, &p, 0), cases[i].msg);
	}
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_SLICE, &p, "axis", 0, &one));
	assert_null(ir_set_attr(OP_SLICE, &p, "start", 0, &one));
	assert_string_equal(ir_check_attrs(OP_SLICE, &p, 0),
	                    "op 'slice' needs attribute 'end'");
	/* the frontend's own bitmask counts too */
	assert_null(ir_check_attrs(OP_SLICE, &p, 1u << 2));
	ir_params_default(&p);
	assert_null(ir_set_attr(OP_SPLIT, &p, NULL, 0, &one));
	assert_string_equal(ir_check_attrs(OP_SPLIT, &p, 0),
	                    "op 'split' needs attribute 'axis'");
	ir_params_default(&p);
	assert_null(ir_check_attrs(OP_CONV2D, &p, 0));
	assert_null(ir_check_attrs(OP_SUM, &p, 0));
	assert_null(ir_check_attrs(OP_FLATTEN, &p, 0));
	assert_int_equal(ir_op_from_name("log_softmax"), OP_LOG_SOFTMAX);
	assert_int_equal(ir_op_from_name("<custom>"), -1);
}

static void
test_attr_defaults(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 4, 2, 3, 8, 8);
	int o1 = mk(OP_MAXPOOL2D, "a", 1, x), o2 = mk(OP_AVGPOOL2D, "b", 1, x);
	int o3 = mk(OP_FLATTEN, "c", 1, x), o4 = mk(OP_SUM, "d", 1, x);
	int o5 = mk(OP_MEAN, "e", 1, x), o6 = mk(OP_CONV2D, "f", 2, x,
	         decl("w", TK_PARAM, DT_F32, 4, 5, 3, 3, 3));
	AttrValue two = av_int(2), one = av_int(1), m1 = av_int(-1);
	(void)state;
	assert_null(ir_set_attr(OP_MAXPOOL2D, g.op[o1].p, "k", 0, &two));
	assert_null(ir_set_attr(OP_AVGPOOL2D, g.op[o2].p, "k", 0, &two));
	assert_null(ir_set_attr(OP_AVGPOOL2D, g.op[o2].p, "stride", 0, &one));
	assert_null(ir_set_attr(OP_MEAN, g.op[o5].p, "axis", 0, &m1));
	assert_true(g.op[o5].p->has_axis);
	infer_ok();
	check_shape(out(o1), DT_F32, 4, 2, 3, 4, 4);     /* stride = k */
	check_shape(out(o2), DT_F32, 4, 2, 3, 7, 7);
	check_shape(out(o3), DT_F32, 2, 2, 192);         /* start = 1 */
	check_shape(out(o4), DT_F32, 0);                 /* all axes */
	check_shape(out(o5), DT_F32, 3, 2, 3, 8);
	check_shape(out(o6), DT_F32, 4, 2, 5, 6, 6);     /* stride 1, no pad */
}

/* ---- elementwise */

static void
test_unary_flops(void **state)
{
	static const struct {
		OpKind k;
		int64_t per;
	} rows[] = {
		{OP_RELU, 1}, {OP_GELU, 8}, {OP_SILU, 4}, {OP_SIGMOID, 4},
		{OP_TANH, 4}, {OP_EXP, 1}, {OP_LOG, 1}, {OP_SQRT, 1}, {OP_NEG, 1},
		{OP_SCALE, 1}, {OP_SOFTMAX, 5}, {OP_LOG_SOFTMAX, 5},
	};
	int x = decl("x", TK_PARAM, DT_BF16, 2, 4, 6);
	int ops[16];
	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		ops[i] = mk(rows[i].k, ir_optab[rows[i].k].name, 1, x);
	infer_ok();
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		check_shape(out(ops[i]), DT_BF16, 2, 4, 6);
		assert_int_equal(g.op[ops[i]].flops, rows[i].per * 24);
		assert_true(g.t[out(ops[i])].needs_grad);
		assert_int_equal(g.t[out(ops[i])].view_of, -1);
	}
}

static void
test_unary_needs_float(void **state)
{
	int x = decl("x", TK_INPUT, DT_I64, 1, 4);
	int o = mk(OP_GELU, "y", 1, x);
	(void)state;
	expect_error(o, "gelu: expects floating-point tensors, not i64");
}

static void
test_cast(void **state)
{
	int x = decl("x", TK_PARAM, DT_F32, 2, 4, 3);
	int o1 = mk(OP_CAST, "h", 1, x), o2 = mk(OP_CAST, "i", 1, x);
	(void)state;
	g.op[o1].p->dtype = DT_F16;
	g.op[o2].p->dtype = DT_I32;
	infer_ok();
	check_shape(out(o1), DT_F16, 2, 4, 3);
	check_shape(out(o2), DT_I32, 2, 4, 3);
	assert_int_equal(g.op[o1].flops, 12);
	assert_true(g.t[out(o1)].needs_grad);
	assert_false(g.t[out(o2)].needs_grad);     /* not floating */
}

static void
test_cast_needs_dtype(void **state)
{
	int o = mk(OP_CAST, "h", 1, decl("x", TK_INPUT, DT_F32, 1, 4));
	(void)state;
	expect_error(o, "cast: needs attribute 'dtype'");
}

static void
test_dropout(void **state)
{
	int x = decl("x", TK_PARAM, DT_F16, 2, 4, 3);
	int o = mk(OP_DROPOUT, "y", 1, x);
	(void)state;
	g.op[o].p->p = 0.1;
	infer_ok();
	check_shape(out(o), DT_F16, 2, 4, 3);
	check_shape(ir_extra(&g.op[o], 0), DT_U8, 2, 4, 3);
	assert_string_equal(g.t[ir_extra(&g.op[o], 0)].id, "y:mask");
	assert_string_equal(ir_role(&g, &g.t[ir_extra(&g.op[o], 0)]), "mask");
	assert_null(ir_role(&g, &g.t[g.op[o].out[0]]));
	assert_false(g.t[ir_extra(&g.op[o], 0)].needs_grad);
	assert_int_equal(g.op[o].flops, 24);
}

static void
test_dropout_bad_p(void **state)
{
	int o = mk(OP_DROPOUT, "y", 1, decl("x", TK_INPUT, DT_F32, 1, 4));
	(void)state;
	g.op[o].p->p = 1;
	expect_error(o, "dropout: p must be in [0, 1), not 1");
}

/* ---- broadcasting */

static void
test_broadcast(void **state)
{
	int a = decl("a", TK_INPUT, DT_F32, 2, 4, 3);
	int b = decl("b", TK_PARAM, DT_F32, 1, 3);
	int c = decl("c", TK_INPUT, DT_F32, 3, 2, 1, 3);
	int d = decl("d", TK_INPUT, DT_F32, 2, 4, 1);
	int s = decl("s", TK_INPUT, DT_F32, 0);
	int o1 = mk(OP_ADD, "o1", 2, a, b), o2 = mk(OP_MUL, "o2", 2, c, d);
	int o3 = mk(OP_SUB, "o3", 2, s, a), o4 = mk(OP_DIV, "o4", 2, d, b);
	(void)state;
	infer_ok();
	check_shape(out(o1), DT_F32, 2, 4, 3);
	check_shape(out(o2), DT_F32, 3, 2, 4, 3);
	check_shape(out(o3), DT_F32, 2, 4, 3);
	check_shape(out(o4), DT_F32, 2, 4, 3);
	assert_int_equal(g.op[o2].flops, 24);
	assert_true(g.t[out(o1)].needs_grad);
	assert_false(g.t[out(o2)].needs_grad);
}

static void
test_broadcast_error(void **state)
{
	int o = mk(OP_ADD, "y", 2, decl("a", TK_INPUT, DT_F32, 2, 4, 3),
	           decl("b", TK_INPUT, DT_F32, 1, 5));
	(void)state;
	expect_error(o, "add: shapes [4, 3] and [5] do not broadcast");
}

static void
test_binary_dtype_error(void **state)
{
	int o = mk(OP_MUL, "y", 2, decl("a", TK_INPUT, DT_F16, 1, 3),
	           decl("b", TK_INPUT, DT_F32, 1, 3));
	(void)state;
	expect_error(o, "mul: dtypes differ: f16 and f32 (use cast)");
}

static void
test_binary_ints(void **state)
{
	int o = mk(OP_ADD, "y", 2, decl("a", TK_INPUT, DT_I32, 1, 3),
	           decl("b", TK_INPUT, DT_I32, 0));
	(void)state;
	infer_ok();
	check_shape(out(o), DT_I32, 1, 3);
}

/* ---- linear algebra */

static void
test_matmul(void **state)
{
	int a = decl("a", TK_INPUT, DT_F16, 4, 2, 3, 4, 5);
	int w = decl("w", TK_PARAM, DT_F16, 2, 5, 6);
	int b = decl("b", TK_INPUT, DT_F16, 4, 2, 1, 4, 5);
	int c = decl("c", TK_INPUT, DT_F16, 3, 3, 5, 7);
	int x = decl("x", TK_INPUT, DT_F16, 2, 8, 768);
	int v = decl("v", TK_PARAM, DT_F16, 2, 768, 10);
	int o1 = mk(OP_MATMUL, "o1", 2, a, w), o2 = mk(OP_MATMUL, "o2", 2, b, c);
	int o3 = mk(OP_MATMUL, "o3", 2, x, v);
	int u = decl("u", TK_PARAM, DT_F16, 2, 4, 5);
	int o4 = mk(OP_MATMUL, "o4", 2, u, c);  /* a 2-D a is shared too */
	(void)state;
	infer_ok();
	check_shape(out(o1), DT_F16, 4, 2, 3, 4, 6);
	assert_int_equal(g.op[o1].flops, 2LL * 4 * 6 * 5 * 6);
	check_shape(out(o2), DT_F16, 4, 2, 3, 4, 7);
	assert_int_equal(g.op[o2].flops, 2LL * 4 * 7 * 5 * 6);
	check_shape(out(o3), DT_F16, 2, 8, 10);
	assert_int_equal(g.op[o3].flops, 2LL * 8 * 10 * 768);
	check_shape(out(o4), DT_F16, 3, 3, 4, 7);
	assert_true(g.t[out(o3)].needs_grad);
	assert_false(g.t[out(o2)].needs_grad);
}

static void
test_matmul_inner(void **state)
{
	int o = mk(OP_MATMUL, "y", 2, decl("a", TK_INPUT, DT_F32, 2, 8, 768),
	           decl("b", TK_PARAM, DT_F32, 2, 512, 10));
	(void)state;
	expect_error(o, "matmul: inner dimensions differ: [8, 768] @ [512, 10]");
}

static void
test_matmul_1d(void **state)
{
	int o = mk(OP_MATMUL, "y", 2, decl("a", TK_INPUT, DT_F32, 1, 768),
	           decl("b", TK_PARAM, DT_F32, 2, 768, 10));
	(void)state;
	expect_error(o, "matmul: operands need at least 2 dimensions: [768] @ [768, 10]");
}

static void
test_matmul_batch(void **state)
{
	int o = mk(OP_MATMUL, "y", 2, decl("a", TK_INPUT, DT_F32, 3, 2, 4, 5),
	           decl("b", TK_INPUT, DT_F32, 3, 3, 5, 6));
	(void)state;
	expect_error(o, "matmul: batch dimensions do not broadcast: [2, 4, 5] @ [3, 5, 6]");
}

static int
conv(int x, int w, int stride, int pad, int dil, int groups)
{
	int o = mk(OP_CONV2D, "y", 2, x, w);

	for (int a = 0; a < 2; a++) {
		g.op[o].p->stride[a] = stride;
		g.op[o].p->dilation[a] = dil;
		g.op[o].p->pad[2 * a] = g.op[o].p->pad[2 * a + 1] = pad;
	}
	g.op[o].p->groups = groups;
	return o;
}

static void
test_conv2d(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 4, 8, 3, 32, 32);
	int w = decl("w", TK_PARAM, DT_F32, 4, 16, 3, 3, 3);
	int wg = decl("wg", TK_PARAM, DT_F32, 4, 6, 1, 5, 5);
	int o1 = conv(x, w, 1, 1, 1, 1), o2 = conv(x, w, 2, 0, 1, 1);
	int o3 = conv(x, wg, 3, 2, 2, 3);
	(void)state;
	infer_ok();
	check_shape(out(o1), DT_F32, 4, 8, 16, 32, 32);
	assert_int_equal(g.op[o1].flops, 2LL * 8 * 16 * 32 * 32 * 3 * 3 * 3);
	check_shape(out(o2), DT_F32, 4, 8, 16, 15, 15);   /* (32-3)/2+1 */
	/* (32 + 4 - 2*4 - 1)/3 + 1 = 10 */
	check_shape(out(o3), DT_F32, 4, 8, 6, 10, 10);
	assert_int_equal(g.op[o3].flops, 2LL * 8 * 6 * 10 * 10 * 1 * 5 * 5);
}

static void
test_conv2d_errors(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 4, 8, 3, 4, 4);
	int w = decl("w", TK_PARAM, DT_F32, 4, 16, 2, 3, 3);
	int w3 = decl("w3", TK_PARAM, DT_F32, 4, 16, 3, 5, 5);
	int w1 = decl("w1", TK_PARAM, DT_F32, 4, 16, 1, 3, 3);
	int v = decl("v", TK_PARAM, DT_F32, 3, 16, 3, 3);
	(void)state;
	expect_error(conv(x, w, 1, 0, 1, 1), "conv2d: channels differ: x [8, 3, 4, 4] "
	             "has 3 per group, w [16, 2, 3, 3] expects 2");
	reset_msgs();
	expect_error(conv(x, w, 1, 0, 1, 2), "conv2d: 3 input channels of x "
	             "[8, 3, 4, 4] do not divide into 2 groups");
	reset_msgs();
	expect_error(conv(x, w1, 1, 0, 1, 3), "conv2d: 16 output channels of w "
	             "[16, 1, 3, 3] do not divide into 3 groups");
	reset_msgs();
	expect_error(conv(x, w3, 1, 0, 1, 1), "conv2d: kernel of w [16, 3, 5, 5] "
	             "does not fit x [8, 3, 4, 4] (stride 1, padding 0, dilation 1)");
	reset_msgs();
	expect_error(conv(x, w3, 0, 0, 1, 1), "conv2d: stride must be at least 1, not 0");
	reset_msgs();
	expect_error(conv(x, v, 1, 0, 1, 1), "conv2d: w must be [O, C/groups, KH, KW], "
	             "got [16, 3, 3]");
}

static void
test_attention(void **state)
{
	int q = decl("q", TK_PARAM, DT_F16, 4, 2, 4, 16, 8);
	int k = decl("k", TK_INPUT, DT_F16, 4, 2, 4, 32, 8);
	int o1 = mk(OP_ATTENTION, "a", 3, q, k, k);
	int o2 = mk(OP_ATTENTION, "b", 3, q, k, k);
	(void)state;
	g.op[o2].p->causal = true;
	infer_ok();
	check_shape(out(o1), DT_F16, 4, 2, 4, 16, 8);
	check_shape(ir_extra(&g.op[o1], 0), DT_F32, 3, 2, 4, 16);
	assert_string_equal(g.t[ir_extra(&g.op[o1], 0)].id, "a:lse");
	assert_int_equal(g.op[o1].flops, 4LL * 2 * 4 * 16 * 32 * 8);
	assert_int_equal(g.op[o2].flops, 2LL * 2 * 4 * 16 * 32 * 8);
}

static void
test_attention_errors(void **state)
{
	int q = decl("q", TK_PARAM, DT_F16, 4, 2, 4, 16, 8);
	int k = decl("k", TK_INPUT, DT_F16, 4, 2, 4, 32, 8);
	int v = decl("v", TK_INPUT, DT_F16, 4, 2, 4, 31, 8);
	int k2 = decl("k2", TK_INPUT, DT_F16, 4, 2, 4, 32, 16);
	(void)state;
	expect_error(mk(OP_ATTENTION, "a", 3, q, k, v),
	             "attention: k and v shapes differ: [2, 4, 32, 8] and [2, 4, 31, 8]");
	reset_msgs();
	expect_error(mk(OP_ATTENTION, "b", 3, q, k2, k2),
	             "attention: q [2, 4, 16, 8] and k [2, 4, 32, 16] differ in B, H or Dh");
}

/* ---- normalization, pooling, losses */

static void
test_norms(void **state)
{
	int x = decl("x", TK_INPUT, DT_F16, 3, 2, 5, 8);
	int gw = decl("g", TK_PARAM, DT_F16, 1, 8), b = decl("b", TK_PARAM, DT_F16, 1, 8);
	int img = decl("img", TK_INPUT, DT_BF16, 4, 2, 3, 4, 4);
	int gc = decl("gc", TK_PARAM, DT_BF16, 1, 3), bc = decl("bc", TK_PARAM, DT_BF16, 1, 3);
	int o1 = mk(OP_LAYERNORM, "h", 3, x, gw, b), o2 = mk(OP_RMSNORM, "r", 2, x, gw);
	int o3 = mk(OP_BATCHNORM, "n", 3, img, gc, bc);
	(void)state;
	infer_ok();
	check_shape(out(o1), DT_F16, 3, 2, 5, 8);
	check_shape(ir_extra(&g.op[o1], 0), DT_F32, 2, 2, 5);
	check_shape(ir_extra(&g.op[o1], 1), DT_F32, 2, 2, 5);
	assert_string_equal(g.t[ir_extra(&g.op[o1], 1)].id, "h:rstd");
	assert_string_equal(ir_role(&g, &g.t[ir_extra(&g.op[o1], 1)]), "rstd");
	assert_int_equal(g.op[o1].flops, 5 * 80);
	check_shape(out(o2), DT_F16, 3, 2, 5, 8);
	check_shape(ir_extra(&g.op[o2], 0), DT_F32, 2, 2, 5);
	assert_int_equal(g.op[o2].flops, 4 * 80);
	check_shape(out(o3), DT_BF16, 4, 2, 3, 4, 4);
	check_shape(ir_extra(&g.op[o3], 0), DT_F32, 1, 3);
	assert_int_equal(g.op[o3].flops, 5 * 96);
	assert_true(g.t[out(o1)].needs_grad);
	assert_false(g.t[ir_extra(&g.op[o1], 0)].needs_grad);
}

static void
test_norm_errors(void **state)
{
	int x = decl("x", TK_INPUT, DT_F16, 2, 5, 8);
	int g4 = decl("g4", TK_PARAM, DT_F16, 1, 4), g32 = decl("g32", TK_PARAM, DT_F32, 1, 8);
	int x1 = decl("x1", TK_INPUT, DT_F16, 1, 8);
	(void)state;
	expect_error(mk(OP_RMSNORM, "a", 2, x, g4), "rmsnorm: g must be [8], got [4]");
	reset_msgs();
	expect_error(mk(OP_LAYERNORM, "b", 3, x, g32, g32),
	             "layernorm: g must be f16 like x, not f32");
	reset_msgs();
	expect_error(mk(OP_BATCHNORM, "c", 3, x1, g4, g4),
	             "batchnorm: x must be [N, C, ...], got [8]");
}

static void
test_softmax_axis(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 2, 4, 3);
	int o1 = mk(OP_SOFTMAX, "a", 1, x), o2 = mk(OP_LOG_SOFTMAX, "b", 1, x);
	(void)state;
	g.op[o1].p->axis = -2;
	g.op[o2].p->axis = 2;
	assert_int_equal(shape_infer_op(&g, o1, &diag), 0);
	assert_int_equal(g.op[o1].p->axis_norm, 0);
	expect_error(o2, "log_softmax: axis 2 is out of range for [4, 3]");
}

static void
test_pools(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 4, 2, 3, 9, 9);
	int o1 = mk(OP_MAXPOOL2D, "m", 1, x), o2 = mk(OP_AVGPOOL2D, "a", 1, x);
	int o3 = mk(OP_GLOBAL_AVGPOOL, "g", 1, x), o4 = mk(OP_UPSAMPLE2D, "u", 1, x);
	(void)state;
	g.op[o1].p->k[0] = g.op[o1].p->k[1] = 3;
	g.op[o2].p->k[0] = g.op[o2].p->k[1] = 2;
	for (int i = 0; i < 4; i++)
		g.op[o2].p->pad[i] = 1;
	g.op[o4].p->scale = 2;
	infer_ok();
	check_shape(out(o1), DT_F32, 4, 2, 3, 3, 3);
	check_shape(ir_extra(&g.op[o1], 0), DT_I64, 4, 2, 3, 3, 3);
	assert_string_equal(g.t[ir_extra(&g.op[o1], 0)].id, "m:indices");
	assert_int_equal(g.op[o1].flops, 54 * 9);
	check_shape(out(o2), DT_F32, 4, 2, 3, 5, 5);    /* (9+2-2)/2+1 */
	assert_int_equal(g.op[o2].flops, 150 * 4);
	check_shape(out(o3), DT_F32, 2, 2, 3);
	assert_int_equal(g.op[o3].flops, 486);
	check_shape(out(o4), DT_F32, 4, 2, 3, 18, 18);
	assert_int_equal(g.op[o4].flops, 2 * 3 * 18 * 18);
}

static void
test_pool_errors(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 4, 2, 3, 2, 2);
	int x3 = decl("x3", TK_INPUT, DT_F32, 3, 3, 2, 2);
	int o1 = mk(OP_MAXPOOL2D, "m", 1, x), o2 = mk(OP_UPSAMPLE2D, "u", 1, x);
	int o3 = mk(OP_GLOBAL_AVGPOOL, "g", 1, x3), o4 = mk(OP_AVGPOOL2D, "a", 1, x);
	(void)state;
	g.op[o1].p->k[0] = g.op[o1].p->k[1] = 3;
	expect_error(o1, "maxpool2d: window 3 does not fit x [2, 3, 2, 2] (stride 3, padding 0)");
	reset_msgs();
	expect_error(o2, "upsample2d: scale must be at least 1, not 0");
	reset_msgs();
	expect_error(o3, "global_avgpool: x must be [N, C, H, W], got [3, 2, 2]");
	reset_msgs();
	expect_error(o4, "avgpool2d: k must be at least 1, not 0");
}

static void
test_reductions(void **state)
{
	int x = decl("x", TK_PARAM, DT_F32, 3, 2, 3, 4);
	int o1 = mk(OP_SUM, "s", 1, x), o2 = mk(OP_MEAN, "m", 1, x);
	int o3 = mk(OP_SUM, "t", 1, x);
	(void)state;
	g.op[o2].p->axis = -1, g.op[o2].p->has_axis = true;
	g.op[o3].p->axis = 3, g.op[o3].p->has_axis = true;
	assert_int_equal(shape_infer_op(&g, o1, &diag), 0);
	assert_int_equal(shape_infer_op(&g, o2, &diag), 0);
	check_shape(out(o1), DT_F32, 0);
	check_shape(out(o2), DT_F32, 2, 2, 3);
	assert_int_equal(g.op[o1].flops, 24);
	assert_int_equal(g.op[o2].flops, 24);
	expect_error(o3, "sum: axis 3 is out of range for [2, 3, 4]");
}

static void
test_cross_entropy(void **state)
{
	int x = decl("x", TK_PARAM, DT_F16, 3, 2, 5, 10);
	int y = decl("y", TK_INPUT, DT_I64, 2, 2, 5);
	int o = mk(OP_CROSS_ENTROPY, "loss", 2, x, y);
	(void)state;
	infer_ok();
	check_shape(out(o), DT_F32, 0);
	check_shape(ir_extra(&g.op[o], 0), DT_F16, 3, 2, 5, 10);
	assert_string_equal(g.t[ir_extra(&g.op[o], 0)].id, "loss:lsm");
	assert_int_equal(g.op[o].flops, 500);
	assert_true(g.t[out(o)].needs_grad);
}

static void
test_cross_entropy_errors(void **state)
{
	int x = decl("x", TK_PARAM, DT_F16, 3, 2, 5, 10);
	int y = decl("y", TK_INPUT, DT_I64, 1, 2), y32 = decl("y32", TK_INPUT, DT_I32, 2, 2, 5);
	(void)state;
	expect_error(mk(OP_CROSS_ENTROPY, "a", 2, x, y),
	             "cross_entropy: labels [2] do not match logits [2, 5, 10] (expected [2, 5])");
	reset_msgs();
	expect_error(mk(OP_CROSS_ENTROPY, "b", 2, x, y32),
	             "cross_entropy: labels must be i64, not i32");
}

static void
test_mse_and_embedding(void **state)
{
	int a = decl("a", TK_PARAM, DT_F16, 2, 4, 3), b = decl("b", TK_INPUT, DT_F16, 2, 4, 3);
	int idx = decl("idx", TK_INPUT, DT_I32, 2, 8, 16), tab = decl("tab", TK_PARAM, DT_BF16, 2, 100, 32);
	int o1 = mk(OP_MSE_LOSS, "l", 2, a, b), o2 = mk(OP_EMBEDDING, "e", 2, idx, tab);
	(void)state;
	infer_ok();
	check_shape(out(o1), DT_F32, 0);
	assert_int_equal(g.op[o1].flops, 36);
	check_shape(out(o2), DT_BF16, 3, 8, 16, 32);
	assert_int_equal(g.op[o2].flops, 8 * 16 * 32);
	assert_true(g.t[out(o2)].needs_grad);
}

static void
test_mse_and_embedding_errors(void **state)
{
	int a = decl("a", TK_PARAM, DT_F16, 2, 4, 3), b = decl("b", TK_INPUT, DT_F16, 1, 3);
	int fi = decl("fi", TK_INPUT, DT_F32, 1, 8), tab = decl("tab", TK_PARAM, DT_F32, 1, 100);
	int ii = decl("ii", TK_INPUT, DT_I64, 1, 8);
	(void)state;
	expect_error(mk(OP_MSE_LOSS, "l", 2, a, b), "mse_loss: shapes differ: [4, 3] and [3]");
	reset_msgs();
	expect_error(mk(OP_EMBEDDING, "e", 2, fi, tab),
	             "embedding: indices must be an integer tensor, not f32");
	reset_msgs();
	expect_error(mk(OP_EMBEDDING, "f", 2, ii, tab), "embedding: table must be [V, D], got [100]");
}

/* ---- shape ops */


static void
test_views(void **state)
{
	int x = decl("x", TK_PARAM, DT_F16, 3, 2, 6, 4);
	int y = decl("y", TK_INPUT, DT_F16, 2, 1, 1);
	int o1 = mk(OP_RESHAPE, "r", 1, x), o2 = mk(OP_TRANSPOSE, "t", 1, x);
	int o3 = mk(OP_PERMUTE, "p", 1, x), o4 = mk(OP_SLICE, "s", 1, x);
	int o5 = mk(OP_FLATTEN, "f", 1, x), o6 = mk(OP_RESHAPE, "r2", 1, out(o2));
	int o7 = mk(OP_RESHAPE, "sc", 1, y);
	(void)state;
	set_list(o1, 3, 4, -1, 2);
	g.op[o2].p->i = 0, g.op[o2].p->j = -1;
	set_list(o3, 3, 2, 0, -2);
	g.op[o4].p->axis = 1, g.op[o4].p->start = -4, g.op[o4].p->end = 5;
	set_list(o6, 1, 48);
	set_list(o7, 0);
	infer_ok();
	for (int o = o1; o <= o5; o++) {
		assert_int_equal(g.t[out(o)].view_of, x);
		assert_int_equal(g.op[o].flops, 0);
		assert_true(g.t[out(o)].needs_grad);
	}
	check_shape(out(o6), DT_F16, 1, 48);
	assert_int_equal(g.t[out(o6)].view_of, out(o2));
	assert_int_equal(ir_storage_root(&g, out(o6)), x);
	check_shape(out(o7), DT_F16, 0);
	assert_false(g.t[out(o7)].needs_grad);
}

static void
test_view_shapes(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 3, 2, 6, 4);
	int o1 = mk(OP_RESHAPE, "r", 1, x), o2 = mk(OP_TRANSPOSE, "t", 1, x);
	int o3 = mk(OP_PERMUTE, "p", 1, x), o4 = mk(OP_SLICE, "s", 1, x);
	int o5 = mk(OP_FLATTEN, "f", 1, x), o6 = mk(OP_FLATTEN, "f2", 1, x);
	(void)state;
	set_list(o1, 3, 4, -1, 2);
	g.op[o2].p->i = 0, g.op[o2].p->j = -1;
	set_list(o3, 3, 2, 0, -2);
	g.op[o4].p->axis = 1, g.op[o4].p->start = -4, g.op[o4].p->end = 5;
	g.op[o5].p->start = -2, g.op[o5].p->given = 1;
	infer_ok();
	check_shape(out(o1), DT_F32, 3, 4, 6, 2);
	check_shape(out(o2), DT_F32, 3, 4, 6, 2);
	check_shape(out(o3), DT_F32, 3, 4, 2, 6);
	check_shape(out(o4), DT_F32, 3, 2, 3, 4);
	check_shape(out(o5), DT_F32, 2, 2, 24);
	check_shape(out(o6), DT_F32, 2, 2, 24);
	assert_false(g.t[out(o1)].needs_grad);
}

static void
test_view_errors(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 2, 8, 768);
	int o1 = mk(OP_RESHAPE, "a", 1, x), o2 = mk(OP_RESHAPE, "b", 1, x);
	int o3 = mk(OP_RESHAPE, "c", 1, x), o4 = mk(OP_PERMUTE, "d", 1, x);
	int o5 = mk(OP_PERMUTE, "e", 1, x), o6 = mk(OP_SLICE, "f", 1, x);
	int o7 = mk(OP_TRANSPOSE, "g", 1, x), o8 = mk(OP_FLATTEN, "h", 1, x);
	int o9 = mk(OP_RESHAPE, "i", 1, x);
	(void)state;
	set_list(o1, 2, 8, 100);
	set_list(o2, 2, -1, -1);
	set_list(o3, 2, 0, 8);
	set_list(o4, 1, 0);
	set_list(o5, 2, 1, -1);
	g.op[o6].p->axis = 0, g.op[o6].p->start = 5, g.op[o6].p->end = 2;
	g.op[o7].p->i = 0, g.op[o7].p->j = 2;
	g.op[o8].p->start = 2, g.op[o8].p->given = 1;
	set_list(o9, 2, -1, 7);
	assert_int_equal(shape_infer(&g, &diag), 9);
	assert_string_equal(said(),
		"t.net:2:5: error: reshape: cannot reshape [8, 768] (6144 elements) into [8, 100]\n"
		"t.net:2:5: error: reshape: more than one -1 in [-1, -1]\n"
		"t.net:2:5: error: reshape: invalid dimension 0 in [0, 8]\n"
		"t.net:2:5: error: permute: axes [0] do not match [8, 768]\n"
		"t.net:2:5: error: permute: axes [1, -1] are not a permutation of the axes of [8, 768]\n"
		"t.net:2:5: error: slice: range 5:2 is empty or outside axis 0 of [8, 768]\n"
		"t.net:2:5: error: transpose: axis 2 is out of range for [8, 768]\n"
		"t.net:2:5: error: flatten: start 2 is out of range for [8, 768]\n"
		"t.net:2:5: error: reshape: cannot reshape [8, 768] (6144 elements) into [-1, 7]\n");
}

static void
test_split(void **state)
{
	int x = decl("x", TK_PARAM, DT_F16, 2, 4, 12);
	int in[1] = {x};
	const char *ids[3] = {"q", "k", "v"};
	int o = ir_add_op(&g, OP_SPLIT, in, 1);
	(void)state;
	ir_set_outputs(&g, o, ids, 3, "", loc_make("t.net", 2, 5));
	g.op[o].p->n = 3, g.op[o].p->axis = -1;
	infer_ok();
	for (int i = 0; i < 3; i++) {
		check_shape(g.op[o].out[i], DT_F16, 2, 4, 4);
		assert_int_equal(g.t[g.op[o].out[i]].view_of, x);
		assert_true(g.t[g.op[o].out[i]].needs_grad);
	}
	assert_int_equal(g.op[o].p->axis_norm, 1);
}

static void
test_split_errors(void **state)
{
	int x = decl("x", TK_INPUT, DT_F16, 2, 4, 12);
	int in[1] = {x};
	const char *ids[3] = {"q", "k", "v"};
	int o1 = ir_add_op(&g, OP_SPLIT, in, 1);
	int o2 = ir_add_op(&g, OP_SPLIT, in, 1);
	(void)state;
	ir_set_outputs(&g, o1, ids, 3, "", loc_make("t.net", 2, 5));
	ir_set_outputs(&g, o2, ids, 2, "", loc_make("t.net", 2, 5));
	g.op[o1].p->n = 3, g.op[o1].p->axis = 0;
	g.op[o2].p->n = 3, g.op[o2].p->axis = 1;
	assert_int_equal(shape_infer(&g, &diag), 2);
	assert_string_equal(said(),
		"t.net:2:5: error: split: axis 0 of [4, 12] does not divide into 3 parts\n"
		"t.net:2:5: error: split: makes 3 parts, but 2 are bound\n");
}

static void
test_concat(void **state)
{
	int a = decl("a", TK_INPUT, DT_F32, 2, 4, 3), b = decl("b", TK_PARAM, DT_F32, 2, 4, 5);
	int c = decl("c", TK_INPUT, DT_F32, 2, 5, 3), h = decl("h", TK_INPUT, DT_F16, 2, 4, 3);
	int o1 = mk(OP_CONCAT, "o", 3, a, b, a), o2 = mk(OP_CONCAT, "p", 2, a, c);
	int o3 = mk(OP_CONCAT, "q", 2, a, h);
	(void)state;
	g.op[o1].p->axis = -1;
	g.op[o2].p->axis = 1;
	g.op[o3].p->axis = 0;
	assert_int_equal(shape_infer(&g, &diag), 2);
	check_shape(out(o1), DT_F32, 2, 4, 11);
	assert_int_equal(g.op[o1].flops, 44);
	assert_int_equal(g.t[out(o1)].view_of, -1);
	assert_true(g.t[out(o1)].needs_grad);
	assert_string_equal(said(),
		"t.net:2:5: error: concat: shapes [4, 3] and [5, 3] differ outside axis 1\n"
		"t.net:2:5: error: concat: dtypes differ: f32 and f16 (use cast)\n");
}

static void
test_custom(void **state)
{
	CustomOp cu = {.name = "fused_mlp", .nargs = 2, .out_dtype = DT_F16,
	               .out_ndim = 2, .out_shape = {8, 32}, .flops = 1234,
	               .backward_flops = -1, .workspace = 4096};
	int x = decl("x", TK_INPUT, DT_F16, 2, 8, 16), w = decl("w", TK_PARAM, DT_F16, 2, 16, 32);
	int o1 = mk(OP_CUSTOM, "y", 2, x, w), o2 = mk(OP_CUSTOM, "z", 1, x);
	(void)state;
	ir_set_custom(&g, o1, &cu);
	ir_set_custom(&g, o2, &cu);
	assert_int_equal(shape_infer(&g, &diag), 1);
	check_shape(out(o1), DT_F16, 2, 8, 32);
	assert_int_equal(g.op[o1].flops, 1234);
	assert_int_equal(ir_op_workspace(&g.op[o1]), 4096);
	assert_true(g.t[out(o1)].needs_grad);
	assert_string_equal(said(), "t.net:2:5: error: fused_mlp: takes 2 arguments, not 1\n");
	reset_msgs();
	cu.out_shape[1] = 0;
	expect_error(o1, "fused_mlp: declared output [8, 0] has a dimension less than 1");
}

/* ---- graph-wide rules */

static void
test_poison_no_cascade(void **state)
{
	int a = decl("a", TK_INPUT, DT_F32, 2, 4, 3), b = decl("b", TK_INPUT, DT_F32, 1, 5);
	int o1 = mk(OP_ADD, "s", 2, a, b), o2 = mk(OP_RELU, "r", 1, out(o1));
	int o3 = mk(OP_MATMUL, "m", 2, out(o2), a), o4 = mk(OP_RELU, "ok", 1, a);
	(void)state;
	assert_int_equal(shape_infer(&g, &diag), 1);
	assert_int_equal(g.t[out(o2)].ndim, -1);
	assert_int_equal(g.t[out(o3)].ndim, -1);
	assert_int_equal(shape_infer_op(&g, o3, &diag), -1);
	check_shape(out(o4), DT_F32, 2, 4, 3);
	assert_string_equal(said(), "t.net:2:5: error: add: shapes [4, 3] and [5] do not broadcast\n");
}

static void
test_needs_grad(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 2, 4, 3), w = decl("w", TK_PARAM, DT_F32, 2, 3, 3);
	int ids = decl("ids", TK_INPUT, DT_I64, 1, 4);
	int o1 = mk(OP_RELU, "a", 1, x), o2 = mk(OP_MATMUL, "b", 2, out(o1), w);
	int o3 = mk(OP_RELU, "c", 1, out(o2)), o4 = mk(OP_ADD, "d", 2, ids, ids);
	(void)state;
	infer_ok();
	assert_true(g.t[w].needs_grad);
	assert_false(g.t[x].needs_grad);
	assert_false(g.t[out(o1)].needs_grad);
	assert_true(g.t[out(o2)].needs_grad);
	assert_true(g.t[out(o3)].needs_grad);
	assert_false(g.t[out(o4)].needs_grad);
	check_shape(w, DT_F32, 2, 3, 3);
	check_shape(ids, DT_I64, 1, 4);
}

static void
test_too_large(void **state)
{
	int x = decl("x", TK_INPUT, DT_F32, 2, 1 << 30, 1 << 30);
	int y = decl("y", TK_INPUT, DT_F32, 3, 1 << 30, 1 << 30, 4);
	int z = decl("z", TK_INPUT, DT_F32, 1, 0);
	int o = mk(OP_UPSAMPLE2D, "u", 1, decl("i", TK_INPUT, DT_F32, 4, 1, 1, 1 << 20, 1 << 20));
	(void)state;
	(void)x;
	g.op[o].p->scale = 1 << 11;
	assert_int_equal(shape_infer(&g, &diag), 3);
	assert_int_equal(g.t[y].ndim, -1);
	assert_int_equal(g.t[z].ndim, -1);
	assert_int_equal(g.t[x].bytes, (int64_t)1 << 62);
	assert_string_equal(said(),
		"t.net:1:1: error: 'y' f32 [1073741824, 1073741824, 4] is larger than 2^62 bytes\n"
		"t.net:1:1: error: 'z' [0] has a dimension less than 1\n"
		"t.net:2:5: error: upsample2d: 'u' f32 [1, 1, 2147483648, 2147483648] is larger than 2^62 bytes\n");
}

static void
test_long_chain(void **state)
{
	enum { N = 100000 };
	int t = decl("x", TK_PARAM, DT_F32, 2, 64, 64);
	(void)state;
	for (int i = 0; i < N; i++)
		t = out(mk(i % 2 ? OP_RELU : OP_GELU, "h", 1, t));
	infer_ok();
	assert_int_equal(g.op[N - 1].flops, 4096);
	assert_true(g.t[t].needs_grad);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_attr_errors), T(test_attr_lists), T(test_attr_required),
		T(test_attr_defaults),
		T(test_unary_flops), T(test_unary_needs_float), T(test_cast),
		T(test_cast_needs_dtype), T(test_dropout), T(test_dropout_bad_p),
		T(test_broadcast), T(test_broadcast_error), T(test_binary_dtype_error),
		T(test_binary_ints), T(test_matmul), T(test_matmul_inner),
		T(test_matmul_1d), T(test_matmul_batch), T(test_conv2d),
		T(test_conv2d_errors), T(test_attention), T(test_attention_errors),
		T(test_norms), T(test_norm_errors), T(test_softmax_axis),
		T(test_pools), T(test_pool_errors), T(test_reductions),
		T(test_cross_entropy), T(test_cross_entropy_errors),
		T(test_mse_and_embedding), T(test_mse_and_embedding_errors),
		T(test_views), T(test_view_shapes), T(test_view_errors),
		T(test_split), T(test_split_errors), T(test_concat), T(test_custom),
		T(test_poison_no_cascade), T(test_needs_grad), T(test_too_large),
		T(test_long_chain),
	};
	return cmocka_run_group_tests_name("shape", tests, NULL, NULL);
}
