/* tests/unit/test_ops_added.c -- the forms and ops added by issues 13 and
 * 28 through the front half of the passes (parse, instantiate, shapes,
 * autodiff): the parse tree of `dim` def arguments and `frozen` params,
 * dim arguments in shapes, attributes and repeat counts, and for every new
 * op its output shape and dtype, FLOPs, saves, backward FLOPs and which
 * gradients exist (docs/ops.md). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "ast.h"

static Arena arena;
static Graph g;

static Program *
parse(const char *text)
{
	static Source src;
	static Diag d;
	src = (Source){"t.net", text, strlen(text)};
	diag_init(&d, &src, stderr);
	return net_parse(&src, &arena, &d);
}

/* The whole front half; every stage must succeed. */
static void
build(const char *text)
{
	static Source src;
	Diag d;
	NetOptions o;
	memset(&o, 0, sizeof o);
	src = (Source){"t.net", text, strlen(text)};
	diag_init(&d, &src, stderr);
	d.quiet_warnings = true;
	Program *p = net_parse(&src, &arena, &d);
	assert_non_null(p);
	ir_graph_init(&g, &arena, "t.net");
	assert_int_equal(net_instantiate(p, &o, &g, &d), 0);
	assert_int_equal(shape_infer(&g, &d), 0);
	if (g.train)
		assert_int_equal(autodiff(&g, &d), 0);
}

static int
tensor(const char *id)
{
	for (int t = 0; t < g.nt; t++)
		if (!strcmp(g.t[t].id, id))
			return t;
	fail_msg("no tensor '%s'", id);
	return -1;
}

/* The op whose first output is id. */
static const Op *
op(const char *id)
{
	int t = tensor(id);
	assert_true(g.t[t].producer >= 0);
	return &g.op[g.t[t].producer];
}

static void
check_shape(const char *id, Dtype dt, int ndim, ...)
{
	const Tensor *t = &g.t[tensor(id)];
	va_list ap;
	assert_int_equal(t->dtype, dt);
	assert_int_equal(t->ndim, ndim);
	va_start(ap, ndim);
	for (int i = 0; i < ndim; i++)
		assert_int_equal(t->shape[i], va_arg(ap, int));
	va_end(ap);
}

/* The op's saves, as ids separated by spaces, in save order. */
static void
check_saves(const char *id, const char *want)
{
	const Op *o = op(id);
	char got[512] = "";
	for (int i = 0; i < o->nsaves; i++)
		snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s", i ? " " : "",
		         g.t[o->saves[i]].id);
	assert_string_equal(got, want);
}

static bool
has_grad(const char *id)
{
	return g.t[tensor(id)].grad >= 0;
}

static int
setup(void **st)
{
	(void)st;
	ar_init(&arena);
	return 0;
}

static int
teardown(void **st)
{
	(void)st;
	ar_free(&arena);
	return 0;
}

/* ---- parse trees */

static void
test_parse_forms(void **st)
{
	(void)st;
	Program *p = parse("def f(x, dim a, y, dim b) { return x; }\n"
	                   "param w : f32[4] frozen;\nparam v : f32[4];\n");
	assert_non_null(p);
	const Stmt *def = p->stmts->v[0];
	assert_int_equal(def->names->n, 4);
	assert_false(def->names->v[0].is_dim);
	assert_true(def->names->v[1].is_dim);
	assert_string_equal(def->names->v[1].s, "a");
	assert_false(def->names->v[2].is_dim);
	assert_true(def->names->v[3].is_dim);
	assert_true(p->stmts->v[1]->frozen);
	assert_false(p->stmts->v[2]->frozen);
}

/* dim arguments reach shapes, attributes, repeat counts and nested calls;
 * each instance has its own params. */
static void
test_dim_args(void **st)
{
	(void)st;
	build("batch B = 2; dim C = 4;\n"
	      "input x : f32[B, C, 8, 8];\n"
	      "def inner(x, dim n) { repeat n { x = relu(x); } return x; }\n"
	      "def blk(x, dim cin, dim cout, dim s) {\n"
	      "  param w : f32[cout, cin/cin, 3, 3];\n"
	      "  h = conv2d(x, w, stride=s, padding=1, groups=cin);\n"
	      "  return inner(h, s + 1);\n"
	      "}\n"
	      "h = blk(x, C, 2*C, 2);\nh = blk(h, 2*C, 2*C, 1);\n"
	      "loss = mean(h); output loss;\n");
	check_shape("blk.0.w", DT_F32, 4, 8, 1, 3, 3);
	check_shape("blk.0.h", DT_F32, 4, 2, 8, 4, 4);
	assert_int_equal(op("blk.0.h")->p->groups, 4);
	assert_int_equal(op("blk.0.h")->p->stride[0], 2);
	assert_int_equal(op("blk.0.h")->p->stride[1], 2);
	check_shape("blk.1.w", DT_F32, 4, 8, 1, 3, 3);
	assert_int_equal(op("blk.1.h")->p->groups, 8);
	/* inner ran s + 1 relus: 3 in the first call, 2 in the second */
	tensor("blk.0.inner.0.x@3");
	tensor("blk.1.inner.0.x@2");
	for (int t = 0; t < g.nt; t++)
		assert_true(strcmp(g.t[t].id, "blk.1.inner.0.x@3"));
}

/* A frozen param needs no grad and gets none, but the grad of what feeds
 * it flows through it. */
static void
test_frozen(void **st)
{
	(void)st;
	build("batch B = 2; dim D = 4;\n"
	      "input x : f32[B, D];\n"
	      "param a : f32[D, D]; param w : f32[D, D] frozen;\n"
	      "h = x @ a;\nz = h @ w;\nloss = mean(z); output loss;\n");
	assert_true(g.t[tensor("w")].frozen);
	assert_false(g.t[tensor("w")].needs_grad);
	assert_false(has_grad("w"));
	assert_true(has_grad("h"));
	assert_true(has_grad("a"));
	/* z = h @ w: only h needs grad, so w is saved (for grad(h)) and h not */
	check_saves("z", "w");
	assert_int_equal(op("z")->bwd_flops, op("z")->flops);
}

/* ---- the ops */

static void
test_activations(void **st)
{
	(void)st;
	build("batch B = 2; dim D = 3;\n"
	      "param w : f16[B, D];\n"
	      "a = relu6(w);\nb = hardswish(w);\nc = hardsigmoid(w);\n"
	      "d = clamp(w, min=-1, max=0.5);\ne = clamp(w, max=2);\n"
	      "loss = mean(cast(a + b + c + d + e, dtype=f32)); output loss;\n");
	check_shape("a", DT_F16, 2, 2, 3);
	check_shape("d", DT_F16, 2, 2, 3);
	assert_int_equal(op("a")->flops, 2 * 6);
	assert_int_equal(op("b")->flops, 5 * 6);
	assert_int_equal(op("c")->flops, 4 * 6);
	assert_int_equal(op("d")->flops, 2 * 6);
	check_saves("a", "a");
	check_saves("b", "w");
	check_saves("c", "w");
	check_saves("d", "w");
	assert_true(op("d")->p->cmin == -1 && op("d")->p->cmax == 0.5);
	assert_true(op("e")->p->cmax == 2 && op("e")->p->cmin < -1e300);
	assert_int_equal(op("b")->bwd_flops, op("b")->flops);
}

static void
test_gather_index_select(void **st)
{
	(void)st;
	build("batch B = 4; dim D = 6;\n"
	      "param w : f32[B, D];\ninput i : i64[B, 2]; input j : i32[3];\n"
	      "a = gather(w, i, axis=-1);\nb = index_select(w, j, axis=0);\n"
	      "loss = mean(a) + mean(b); output loss;\n");
	check_shape("a", DT_F32, 2, 4, 2);
	check_shape("b", DT_F32, 2, 3, 6);
	assert_int_equal(op("a")->p->axis_norm, 1);
	assert_int_equal(op("a")->flops, 8);
	assert_int_equal(op("b")->flops, 18);
	check_saves("a", "i");
	check_saves("b", "j");
	assert_false(has_grad("i"));
	assert_true(has_grad("w"));
}

static void
test_topk(void **st)
{
	(void)st;
	build("batch B = 4; dim E = 8;\n"
	      "param w : f32[B, E];\n"
	      "v, i = topk(w, k=3);\nu, k = topk(w, k=1, axis=0);\n"
	      "loss = mean(v) + mean(u); output loss;\n");
	check_shape("v", DT_F32, 2, 4, 3);
	check_shape("i", DT_I64, 2, 4, 3);
	check_shape("u", DT_F32, 2, 1, 8);
	check_shape("k", DT_I64, 2, 1, 8);
	/* n(x) ceil(log2(k + 1)): 32 x 2, 32 x 1 */
	assert_int_equal(op("v")->flops, 64);
	assert_int_equal(op("u")->flops, 32);
	check_saves("v", "i");
	assert_false(g.t[tensor("i")].needs_grad);
	assert_int_equal(op("v")->bwd_flops, 64);
}

static void
test_scatter_add(void **st)
{
	(void)st;
	build("batch T = 5; dim D = 4;\n"
	      "param x : f32[T, D]; param s : f32[3, D];\ninput i : i64[3, 1];\n"
	      "y = scatter_add(x, i, s, axis=0);\n"
	      "loss = mean(y); output loss;\n");
	check_shape("y", DT_F32, 2, 5, 4);
	assert_int_equal(op("y")->flops, 12);   /* n(src) */
	check_saves("y", "i");
	assert_true(has_grad("x"));
	assert_true(has_grad("s"));
}

static void
test_cross_entropy_ignore(void **st)
{
	(void)st;
	build("batch B = 4; dim C = 5;\n"
	      "param w : f32[B, C]; input y : i64[B];\n"
	      "loss = cross_entropy(w, y, ignore_index=0); output loss;\n");
	assert_int_equal(op("loss")->p->ignore_index, 0);
	assert_int_equal(op("loss")->flops, 5 * 20);
	check_saves("loss", "loss:lsm y");
	build("batch B = 4; dim C = 5;\n"
	      "param w : f32[B, C]; input y : i64[B];\n"
	      "loss = cross_entropy(w, y); output loss;\n");
	assert_int_equal(op("loss")->p->ignore_index, -100);
}

/* GQA with a broadcast additive mask, causal and dropout. */
static void
test_attention_added(void **st)
{
	(void)st;
	build("batch B = 2; dim H = 4, G = 2, S = 8, T = 6, Dh = 16;\n"
	      "param q : f16[B, H, S, Dh]; param k : f16[B, G, T, Dh];\n"
	      "param v : f16[B, G, T, Dh];\ninput m : f16[B, 1, 1, T]; input bm : bool[S, T];\n"
	      "a = attention(q, k, v, m);\n"
	      "b = attention(q, k, v, bm, causal=true, dropout=0.1);\n"
	      "c = attention(q, k, v);\n"
	      "loss = mean(cast(a + b + c, dtype=f32)); output loss;\n");
	check_shape("a", DT_F16, 4, 2, 4, 8, 16);
	check_shape("a:lse", DT_F32, 3, 2, 4, 8);
	check_shape("b:dmask", DT_U8, 4, 2, 4, 8, 6);
	assert_int_equal(op("a")->nextra, 1);
	assert_int_equal(op("b")->nextra, 2);
	int64_t base = 4LL * 2 * 4 * 8 * 6 * 16, sc = 2LL * 4 * 8 * 6;
	assert_int_equal(op("c")->flops, base);
	assert_int_equal(op("a")->flops, base + sc);
	assert_int_equal(op("b")->flops, base / 2 + 3 * sc);
	check_saves("a", "q k v a a:lse m");
	check_saves("b", "q k v b b:lse bm b:dmask");
	check_saves("c", "q k v c c:lse");
	assert_int_equal(op("b")->bwd_flops, (base / 2 + 3 * sc) * 5 / 2);
	assert_false(has_grad("m"));
}

/* ---- issue 28 */

static void
test_conv1d(void **st)
{
	(void)st;
	build("batch B = 2; dim C = 4, L = 16;\n"
	      "input x : f32[B, C, L]; param w : f32[8, 2, 3]; param v : f32[8, 8, 1];\n"
	      "h = conv1d(x, w, stride=2, padding=[1, 0], dilation=2, groups=2);\n"
	      "y = conv1d(h, v);\n"
	      "loss = mean(y); output loss;\n");
	/* (16 + 1 + 0 - 2*2 - 1)/2 + 1 = 7 */
	check_shape("h", DT_F32, 3, 2, 8, 7);
	check_shape("y", DT_F32, 3, 2, 8, 7);
	assert_int_equal(op("h")->flops, 2 * 112 * 2 * 3);
	assert_int_equal(op("y")->flops, 2 * 112 * 8);
	/* x needs no grad: only w is differentiated, which needs x */
	check_saves("h", "x");
	assert_int_equal(op("h")->bwd_flops, op("h")->flops);
	check_saves("y", "v h");
	assert_int_equal(op("y")->bwd_flops, 2 * op("y")->flops);
}

static void
test_windows(void **st)
{
	(void)st;
	build("batch B = 2; dim C = 3;\n"
	      "input x : f32[B, C, 9, 10]; param w : f32[C, C, 3, 1];\n"
	      "y = conv2d(x, w, stride=[2, 1], padding=[0, 1, 2, 0], dilation=[1, 3]);\n"
	      "m = maxpool2d(y, k=[3, 2], stride=2, dilation=[1, 2], ceil_mode=true);\n"
	      "a = avgpool2d(y, k=2, padding=[1, 0], ceil_mode=true);\n"
	      "f = avgpool2d(y, k=2);\n"
	      "loss = mean(m) + mean(a) + mean(f); output loss;\n");
	/* H (9 + 0 + 1 - 3)/2 + 1 = 4, W (10 + 2 + 0 - 1)/1 + 1 = 12 */
	check_shape("y", DT_F32, 4, 2, 3, 4, 12);
	assert_true(op("y")->p->pad[1] == 1 && op("y")->p->pad[2] == 2);
	/* H ceil((4 - 3)/2) + 1 = 2; W ceil((12 - 3)/2) + 1 = 6 */
	check_shape("m", DT_F32, 4, 2, 3, 2, 6);
	check_shape("m:indices", DT_I64, 4, 2, 3, 2, 6);
	assert_int_equal(op("m")->flops, 72 * 6);
	/* H ceil((4 + 2 - 2)/2) + 1 = 3; W ceil((12 - 2)/2) + 1 = 6, and the
	 * last window would start at 10 >= 12 + 0? no: 6 */
	check_shape("a", DT_F32, 4, 2, 3, 3, 6);
	/* floor: H (4 - 2)/2 + 1 = 2, W 6 */
	check_shape("f", DT_F32, 4, 2, 3, 2, 6);
	check_saves("m", "y m:indices");
	assert_int_equal(op("a")->nsaves, 0);
	assert_true(op("m")->p->ceil_mode && !op("f")->p->ceil_mode);
}

/* PyTorch drops a ceil_mode window that would start past the input and
 * its begin pad: 5 wide, k 2, stride 2, padding 1 gives ceil(4/2) + 1 = 3,
 * not 4. */
static void
test_ceil_mode_last_window(void **st)
{
	(void)st;
	build("batch B = 1;\ninput x : f32[B, 1, 5, 5]; param w : f32[1, 1, 1, 1];\n"
	      "m = maxpool2d(conv2d(x, w), k=2, padding=1, ceil_mode=true);\n"
	      "n = maxpool2d(conv2d(x, w), k=2, stride=3, padding=1, ceil_mode=true);\n"
	      "loss = mean(m) + mean(n); output loss;\n");
	check_shape("m", DT_F32, 4, 1, 1, 3, 3);
	/* ceil((5 + 2 - 2)/3) + 1 = 3, and 2 * 3 = 6 >= 5 + 1: 2 */
	check_shape("n", DT_F32, 4, 1, 1, 2, 2);
}

static void
test_groupnorm(void **st)
{
	(void)st;
	build("batch B = 2; dim C = 8;\n"
	      "input x : f16[B, C, 4, 4]; param g : f16[C]; param b : f16[C];\n"
	      "param w : f16[C, C, 1, 1];\n"
	      "y = groupnorm(conv2d(x, w), g, b, groups=4);\n"
	      "loss = mean(cast(y, dtype=f32)); output loss;\n");
	check_shape("y", DT_F16, 4, 2, 8, 4, 4);
	check_shape("y:mean", DT_F32, 2, 2, 4);
	check_shape("y:rstd", DT_F32, 2, 2, 4);
	assert_int_equal(op("y")->flops, 5 * 256);
	check_saves("y", "y~1 y:mean y:rstd");
	assert_int_equal(op("y")->bwd_flops, op("y")->flops);
	assert_true(has_grad("g") && has_grad("b") && has_grad("y~1"));
}

/* expand is a view (no FLOPs, no bytes of its own) whose backward sums
 * the gradient into a buffer of x's shape. */
static void
test_expand(void **st)
{
	(void)st;
	build("batch B = 3; dim S = 4, D = 5;\n"
	      "param cls : f32[1, D]; input x : f32[B, S, D];\n"
	      "e = expand(cls, [B, S, -1]);\n"
	      "loss = mean(x * e); output loss;\n");
	check_shape("e", DT_F32, 3, 3, 4, 5);
	assert_int_equal(g.t[tensor("e")].view_of, tensor("cls"));
	assert_int_equal(op("e")->flops, 0);
	assert_int_equal(op("e")->nsaves, 0);
	assert_true(has_grad("e") && has_grad("cls"));
}

static void
test_reduce_lists(void **st)
{
	(void)st;
	build("batch B = 2; dim C = 3, H = 4, W = 5;\n"
	      "param x : f32[B, C, H, W];\n"
	      "a = mean(x, axis=[2, 3]);\n"
	      "b = sum(x, dim=[-1, 1], keepdim=true);\n"
	      "c = mean(x, axis=1, keepdim=true);\n"
	      "d = sum(x, keepdim=true);\n"
	      "loss = mean(a) + mean(b) + mean(c) + mean(d); output loss;\n");
	check_shape("a", DT_F32, 2, 2, 3);
	check_shape("b", DT_F32, 4, 2, 1, 4, 1);
	check_shape("c", DT_F32, 4, 2, 1, 4, 5);
	check_shape("d", DT_F32, 4, 1, 1, 1, 1);
	assert_int_equal(op("a")->flops, 120);
	assert_int_equal(op("b")->p->nlist, 2);
	assert_int_equal(op("a")->nsaves, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_parse_forms, setup, teardown),
		cmocka_unit_test_setup_teardown(test_dim_args, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frozen, setup, teardown),
		cmocka_unit_test_setup_teardown(test_activations, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gather_index_select, setup, teardown),
		cmocka_unit_test_setup_teardown(test_topk, setup, teardown),
		cmocka_unit_test_setup_teardown(test_scatter_add, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cross_entropy_ignore, setup, teardown),
		cmocka_unit_test_setup_teardown(test_attention_added, setup, teardown),
		cmocka_unit_test_setup_teardown(test_conv1d, setup, teardown),
		cmocka_unit_test_setup_teardown(test_windows, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ceil_mode_last_window, setup, teardown),
		cmocka_unit_test_setup_teardown(test_groupnorm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expand, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reduce_lists, setup, teardown),
	};
	return cmocka_run_group_tests_name("ops_added", tests, NULL, NULL);
}
