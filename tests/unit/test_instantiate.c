/* tests/unit/test_instantiate.c -- net_instantiate: tensor ids per
 * language.md "Names of tensors", scopes, dims with -D and accumulate,
 * settings, modes, and the exact message of every frontend error class. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "frontend.h"
#include "inst.h"

typedef struct Run {
	Arena a;
	Graph g;
	Source src;
	char *err;              /* everything diagnostics printed */
	int nerr;
	bool parsed;
} Run;

static NetOptions noopts;

static Run *
run_opts(const char *text, const NetOptions *o)
{
	Run *r = calloc(1, sizeof *r);
	size_t n = 0;
	FILE *f = open_memstream(&r->err, &n);
	Diag d;
	Program *p;

	ar_init(&r->a);
	r->src = (Source){"t.net", text, strlen(text)};
	diag_init(&d, &r->src, f);
	ir_graph_init(&r->g, &r->a, "t.net");
	p = net_parse(&r->src, &r->a, &d);
	r->parsed = p != NULL;
	if (p)
		net_instantiate(p, o ? o : &noopts, &r->g, &d);
	r->nerr = d.nerrors;
	fclose(f);
	return r;
}

static Run *
run(const char *text)
{
	return run_opts(text, NULL);
}

static void
done(Run *r)
{
	ar_free(&r->a);
	free(r->err);
	free(r);
}

static int
tensor(const Run *r, const char *id)
{
	for (int i = 0; i < r->g.nt; i++)
		if (!strcmp(r->g.t[i].id, id))
			return i;
	return -1;
}

/* The ids of all tensors, space separated, for whole-program checks. */
static char *
ids(const Run *r)
{
	static char buf[8192];

	buf[0] = 0;
	for (int i = 0; i < r->g.nt; i++)
		snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", i ? " " : "",
		         r->g.t[i].id);
	return buf;
}

/* Checks that the program fails with exactly this first error line. */
static void
expect_error(const char *text, const char *first_line)
{
	Run *r = run(text);
	char *nl;

	assert_true(r->nerr > 0);
	nl = strchr(r->err, '\n');
	if (nl)
		*nl = 0;
	assert_string_equal(r->err, first_line);
	done(r);
}

static const char gpt[] =
	"batch B = 8;\n"
	"dim S = 16, D = 64, H = 4, L = 12, V = 100;\n"
	"input tokens : i64[B, S];\n"
	"input labels : i64[B, S];\n"
	"param wte    : f16[V, D];\n"
	"def block(x) {\n"
	"  param g1 : f16[D];  param b1 : f16[D];\n"
	"  param wqkv : f16[D, 3*D];  param wo : f16[D, D];\n"
	"  param g2 : f16[D];  param b2 : f16[D];\n"
	"  param w1 : f16[D, 4*D];  param w2 : f16[4*D, D];\n"
	"  h = layernorm(x, g1, b1);\n"
	"  q, k, v = split(h @ wqkv, 3, axis=-1);\n"
	"  q = transpose(reshape(q, [B, S, H, D/H]), 1, 2);\n"
	"  k = transpose(reshape(k, [B, S, H, D/H]), 1, 2);\n"
	"  v = transpose(reshape(v, [B, S, H, D/H]), 1, 2);\n"
	"  a = attention(q, k, v, causal=true);\n"
	"  a = reshape(transpose(a, 1, 2), [B, S, D]);\n"
	"  x = x + a @ wo;\n"
	"  m = gelu(layernorm(x, g2, b2) @ w1) @ w2;\n"
	"  return x + m;\n"
	"}\n"
	"h = embedding(tokens, wte);\n"
	"repeat L { h = block(h); }\n"
	"logits = h @ transpose(wte, 0, 1);\n"
	"loss = cross_entropy(logits, labels);\n"
	"output loss;\n";

static void
test_gpt_ids(void **state)
{
	Run *r = run(gpt);
	int t, o;
	(void)state;

	assert_int_equal(r->nerr, 0);
	assert_true(tensor(r, "block.3.h") >= 0);
	assert_true(tensor(r, "block.3.wqkv") >= 0);
	assert_true(tensor(r, "block.11.return") >= 0);
	assert_true(tensor(r, "block.12.h") < 0);
	assert_true(tensor(r, "block.0.x@1~1") >= 0);      /* a @ wo */
	assert_true(tensor(r, "block.0.x@1") >= 0);
	assert_true(tensor(r, "block.0.q~1") >= 0);        /* h @ wqkv: after the first name */
	assert_true(tensor(r, "block.0.h:mean") >= 0);
	assert_true(tensor(r, "block.0.h:rstd") >= 0);
	assert_true(tensor(r, "block.0.a:lse") >= 0);
	assert_true(tensor(r, "h@1") < 0);                 /* h = block(h) makes no tensor */
	/* split: one op, three outputs q, k, v */
	t = tensor(r, "block.0.q");
	o = r->g.t[t].producer;
	assert_int_equal(r->g.op[o].kind, OP_SPLIT);
	assert_int_equal(r->g.op[o].nout, 3);
	assert_int_equal(r->g.op[o].p->n, 3);
	assert_int_equal(r->g.op[o].p->axis, -1);
	assert_string_equal(r->g.t[r->g.op[o].out[2]].id, "block.0.v");
	/* reshape list and transpose positions */
	t = tensor(r, "block.0.q@1~1");
	o = r->g.t[t].producer;
	assert_int_equal(r->g.op[o].kind, OP_RESHAPE);
	assert_int_equal(r->g.op[o].p->nlist, 4);
	assert_int_equal(r->g.op[o].p->list[3], 16);
	o = r->g.t[tensor(r, "block.0.q@1")].producer;
	assert_int_equal(r->g.op[o].p->i, 1);
	assert_int_equal(r->g.op[o].p->j, 2);
	assert_true(r->g.op[r->g.t[tensor(r, "block.0.a")].producer].p->causal);
	/* scopes, locations, mode */
	t = tensor(r, "block.3.h");
	assert_string_equal(r->g.t[t].scope, "block.3.");
	assert_string_equal(ir_op_scope(&r->g, &r->g.op[r->g.t[t].producer]), "block.3.");
	assert_int_equal(r->g.t[t].loc.line, 11);
	assert_int_equal(r->g.t[t].loc.col, 7);
	t = tensor(r, "block.0.x@1");                      /* x + a @ wo starts at x */
	assert_int_equal(r->g.t[t].loc.line, 18);
	assert_int_equal(r->g.t[t].loc.col, 7);
	t = tensor(r, "block.0.wqkv");                     /* a param: its statement */
	assert_int_equal(r->g.t[t].kind, TK_PARAM);
	assert_int_equal(r->g.t[t].loc.col, 3);
	assert_int_equal(r->g.t[t].ndim, 2);
	assert_int_equal(r->g.t[t].shape[1], 192);
	assert_int_equal(r->g.t[t].dtype, DT_F16);
	assert_true(r->g.train);
	assert_int_equal(r->g.loss, tensor(r, "loss"));
	assert_int_equal(r->g.noutputs, 1);
	assert_int_equal(r->g.output_loc[0].line, 26);
	done(r);
}

static void
test_intermediates(void **state)
{
	Run *r = run("dim D = 4;\ninput u : f32[D, D];\nparam w1 : f32[D, D];\n"
	             "param w2 : f32[D, D];\nm = gelu(u @ w1) @ w2;\noutput m;\n");
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "u w1 w2 m~1 m~2 m");
	assert_int_equal(r->g.op[0].kind, OP_MATMUL);
	assert_int_equal(r->g.op[1].kind, OP_GELU);
	assert_int_equal(r->g.op[2].kind, OP_MATMUL);
	assert_int_equal(r->g.t[tensor(r, "m~2")].loc.col, 5);
	assert_int_equal(r->g.t[tensor(r, "m~1")].loc.col, 10);
	done(r);
}

static void
test_rebinding_counts(void **state)
{
	/* k counts every binding statement, also those that made no tensor */
	Run *r = run("input x : f32[4];\nparam w : f32[4];\n"
	             "h = x;\nh = relu(h);\nh = x;\nh = h * w;\nh = -(h + w);\n"
	             "l = sum(h);\noutput l;\n");
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "x w h@1 h@3 h@4~1 h@4 l");
	assert_int_equal(r->g.op[1].kind, OP_MUL);
	assert_int_equal(r->g.op[3].kind, OP_NEG);
	done(r);
}

static void
test_def_args_and_returns(void **state)
{
	Run *r = run("input y : f32[4];\n"
	             "def f(x) { x = relu(x); return x, tanh(x) * x, x + x; }\n"
	             "a, b, c = f(y);\nd = b;\n");
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "y f.0.x@1 f.0.return~1 f.0.return f.0.return@1");
	assert_false(r->g.train);       /* no params: infer */
	assert_true(r->g.settings.infer);
	done(r);
}

static void
test_nested_def_numbering(void **state)
{
	Run *r = run("input x : f32[4];\n"
	             "def conv(a) { param k : f32[4]; y = a * k; return y; }\n"
	             "def enc(a) { b = conv(a); c = conv(b); return c; }\n"
	             "h = enc(x);\nh = enc(h);\noutput h;\n");
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "x enc.0.conv.0.k enc.0.conv.0.y enc.0.conv.1.k "
	                    "enc.0.conv.1.y enc.1.conv.0.k enc.1.conv.0.y enc.1.conv.1.k "
	                    "enc.1.conv.1.y");
	assert_string_equal(r->g.t[tensor(r, "enc.1.conv.0.y")].scope, "enc.1.conv.0.");
	assert_int_equal(r->g.loss, tensor(r, "enc.1.conv.1.y"));
	done(r);
}

static void
test_repeat_nesting(void **state)
{
	Run *r = run("dim N = 2;\ninput x : f32[4];\nparam w : f32[4];\nh = x;\n"
	             "repeat N { repeat N + 1 { h = h * w; } g = relu(h); }\n"
	             "l = sum(g);\noutput l;\n");
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "x w h@1 h@2 h@3 g h@4 h@5 h@6 g@1 l");
	done(r);
}

/* The loop index: its value in shapes, attributes, def dim arguments and
 * nested counts, round by round; ids as without one; scope rules. */
static void
test_repeat_index(void **state)
{
	Run *r = run("dim N = 3;\ninput x : f32[2, 4];\n"
	             "def f(h, dim k) { param w : f32[4, 4 + k]; return h @ w; }\n"
	             "repeat i in N {\n"
	             "  y = f(x, 2 * i);\n"
	             "  s = sum(x, axis=i - 2);\n"
	             "  repeat j in i + 1 { e = expand(reshape(x, [1, 2, 4]), [j + 1, 2, 4]); }\n"
	             "}\noutput s;\n");
	int w2;
	(void)state;
	assert_int_equal(r->nerr, 0);
	/* y binds each call's unnamed return: no tensor of its own */
	assert_string_equal(ids(r), "x f.0.w f.0.return s e~1 e f.1.w f.1.return s@1 e@1~1 "
	                    "e@1 e@2~1 e@2 f.2.w f.2.return s@2 e@3~1 e@3 e@4~1 e@4 e@5~1 "
	                    "e@5");
	w2 = tensor(r, "f.2.w");
	assert_int_equal(r->g.t[w2].shape[1], 8);
	assert_int_equal(r->g.op[r->g.t[tensor(r, "s@1")].producer].p->axis, -1);
	assert_int_equal(r->g.op[r->g.t[tensor(r, "e@5")].producer].p->list[0], 3);
	assert_int_equal(r->g.op[r->g.t[tensor(r, "e@4")].producer].p->list[0], 2);
	done(r);
	expect_error("input x : f32[2];\nrepeat i in 2 { y = relu(x); }\nz = reshape(x, [i]);\n",
	             "t.net:3:17: error: undefined dim 'i'");
	expect_error("input x : f32[2];\nrepeat x in 2 { }\n",
	             "t.net:2:8: error: loop index 'x' is the name of a tensor");
	expect_error("input x : f32[2];\nrepeat i in 2 { i = relu(x); }\n",
	             "t.net:2:17: error: 'i' is a loop index; a tensor cannot take its name");
	expect_error("dim N = 2;\nrepeat N in 2 { }\n",
	             "t.net:2:8: error: loop index 'N' is the name of a dim");
	expect_error("input x : f32[2];\ndef f(h) { return reshape(h, [i + 2]); }\n"
	             "repeat i in 2 { y = f(x); }\n",
	             "t.net:2:31: error: 'i' is the loop index of a repeat that calls this "
	             "def; pass it as a `dim` argument");
	/* after the repeat the name is free again */
	r = run("input x : f32[2];\nrepeat i in 2 { y = relu(x); }\ni = relu(x);\n");
	assert_int_equal(r->nerr, 0);
	done(r);
}

static void
test_extras_and_attrs(void **state)
{
	Run *r = run("input x : f32[2, 8];\n"
	             "y = dropout(x, p=0.1);\nz = cast(y, dtype=bf16);\n"
	             "s = sum(z, axis=-1);\nq = scale(x, c=-2);\n");
	int o;
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "x y y:mask z s q");
	assert_true(r->g.op[0].p->p > 0.09 && r->g.op[0].p->p < 0.11);
	assert_int_equal(r->g.op[1].p->dtype, DT_BF16);
	o = r->g.t[tensor(r, "s")].producer;
	assert_int_equal(r->g.op[o].p->axis, -1);
	assert_true(r->g.op[o].p->has_axis);
	assert_true(r->g.op[3].p->c < -1.9);
	assert_int_equal(r->g.t[tensor(r, "y:mask")].kind, TK_EXTRA);
	done(r);
}

static void
test_custom_op(void **state)
{
	Run *r = run("batch B = 2;\ndim S = 3, D = 4, F = 8;\n"
	             "op fused(x, w) -> f16[B, S, F] { flops = 2*B*S*D*F; saves = (x, out); }\n"
	             "op other(x) -> f32[] { flops = 1; backward_flops = 5; workspace = 64; saves = (); }\n"
	             "input x : f16[B, S, D];\nparam w : f16[D, F];\n"
	             "y = fused(x, w);\nl = other(y);\noutput l;\n");
	const Op *op;
	(void)state;
	assert_int_equal(r->nerr, 0);
	op = &r->g.op[0];
	assert_int_equal(op->kind, OP_CUSTOM);
	assert_string_equal(op->p->custom->name, "fused");
	assert_int_equal(op->p->custom->flops, 2 * 2 * 3 * 4 * 8);
	assert_int_equal(op->p->custom->backward_flops, 4 * 2 * 3 * 4 * 8);
	assert_true(op->p->custom->saves_arg[0]);
	assert_false(op->p->custom->saves_arg[1]);
	assert_true(op->p->custom->saves_out);
	assert_int_equal(op->p->custom->out_ndim, 3);
	assert_int_equal(op->p->custom->out_shape[2], 8);
	op = &r->g.op[1];
	assert_int_equal(op->p->custom->backward_flops, 5);
	assert_int_equal(op->p->custom->workspace, 64);
	assert_int_equal(ir_op_workspace(op), 64);
	assert_int_equal(op->p->custom->out_ndim, 0);
	done(r);
}

static void
test_dims_overrides_accumulate(void **state)
{
	DimOverride defs[] = {{"S", 32}};
	NetOptions o = {.defs = defs, .ndefs = 1, .accumulate_set = true, .accumulate = 4};
	Run *r = run_opts("batch B = 8;\ndim S = 16, T = B * S, D = 64;\n"
	                  "train { optimizer = sgd; precision = mixed; accumulate = 2; }\n"
	                  "input x : f32[B, T];\n", &o);
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_int_equal(r->g.ndims, 4);
	assert_string_equal(r->g.batch_dim, "B");
	assert_true(r->g.dims[0].is_batch);
	assert_int_equal(r->g.dims[0].declared, 8);
	assert_int_equal(r->g.dims[0].value, 2);
	assert_int_equal(r->g.dims[1].declared, 32);
	assert_int_equal(r->g.dims[2].declared, 256);
	assert_int_equal(r->g.dims[2].value, 64);
	assert_int_equal(r->g.t[0].shape[0], 2);
	assert_int_equal(r->g.t[0].shape[1], 64);
	assert_int_equal(r->g.settings.accumulate, 4);
	assert_int_equal(r->g.settings.optimizer, OPT_SGD);
	assert_true(r->g.settings.mixed);
	done(r);
}

static void
test_settings_defaults_and_flags(void **state)
{
	NetOptions o = {.optimizer_set = true, .optimizer = OPT_LION, .precision_set = true,
	                .mixed = false, .infer_set = true, .infer = true};
	Run *r = run("train { optimizer = adam; precision = mixed; }\nparam w : f32[2];\n"
	             "a = relu(w);\nb = tanh(w);\noutput a;\noutput b;\n");
	(void)state;
	assert_int_equal(r->nerr, 1);   /* two outputs in training */
	assert_int_equal(r->g.settings.optimizer, OPT_ADAM);
	assert_true(r->g.settings.mixed);
	assert_int_equal(r->g.settings.accumulate, 1);
	done(r);
	r = run_opts("train { optimizer = adam; precision = mixed; }\nparam w : f32[2];\n"
	             "a = relu(w);\nb = tanh(w);\noutput a;\noutput b;\n", &o);
	assert_int_equal(r->nerr, 0);
	assert_int_equal(r->g.settings.optimizer, OPT_LION);
	assert_false(r->g.settings.mixed);
	assert_false(r->g.train);
	assert_int_equal(r->g.noutputs, 2);
	assert_int_equal(r->g.loss, -1);
	done(r);
}

static void
test_def_sees_top_params(void **state)
{
	Run *r = run("param w : f32[4];\ninput x : f32[4];\nh = relu(x);\n"
	             "def f(a) { return a * w; }\nl = sum(f(h));\noutput l;\n");
	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_string_equal(ids(r), "w x h f.0.return l");
	assert_int_equal(r->g.op[1].in[1], tensor(r, "w"));
	done(r);
	expect_error("param w : f32[4];\nh = relu(w);\ndef f(a) { return a * h; }\n"
	             "l = sum(f(w));\noutput l;\n",
	             "t.net:3:23: error: undefined name 'h' (a def does not see top-level bindings)");
}

static void
test_errors_names(void **state)
{
	(void)state;
	expect_error("x = relu(y);\n", "t.net:1:10: error: undefined name 'y'");
	expect_error("input x : f32[2];\ninput x : f32[2];\n",
	             "t.net:2:7: error: duplicate input 'x'");
	expect_error("param w : f32[2];\nrepeat 2 { param v : f32[2]; }\n",
	             "t.net:2:18: error: param 'v' is declared again by each round of "
	             "the repeat (declare it in a def and call the def in the repeat: "
	             "each call has its own)");
	/* two declarations in one round are a plain duplicate */
	expect_error("repeat 2 { param v : f32[2]; param v : f32[2]; }\n",
	             "t.net:1:36: error: duplicate param 'v'");
	expect_error("dim D = 2;\ninput x : f32[D];\nD = relu(x);\n",
	             "t.net:3:1: error: 'D' is a dim; a tensor cannot take its name");
	expect_error("input x : f32[2];\ndef f(a) { return a; }\nf = relu(x);\n",
	             "t.net:3:1: error: 'f' is a def; a tensor cannot take its name");
	expect_error("dim D = 2, D = 3;\n", "t.net:1:12: error: duplicate dim 'D'");
	expect_error("dim D = 2;\ninput x : f32[D];\ny = relu(D);\n",
	             "t.net:3:10: error: 'D' is a dim, not a tensor");
	expect_error("input x : f32[2];\ny = reshape(x, [x]);\n",
	             "t.net:2:17: error: 'x' is a tensor, not a dimension");
	expect_error("def f(a, a) { return a; }\n", "t.net:1:10: error: duplicate argument 'a'");
	expect_error("def relu(a) { return a; }\n",
	             "t.net:1:5: error: def 'relu' has the name of a built-in op");
}

static void
test_errors_calls(void **state)
{
	(void)state;
	expect_error("input x : f32[2];\ny = frob(x);\n", "t.net:2:5: error: unknown op 'frob'");
	expect_error("input x : f32[2];\ny = relu(x, p=0.5);\n",
	             "t.net:2:13: error: op 'relu' has no attribute 'p'");
	expect_error("input x : f32[2];\ny = transpose(x, 1);\n",
	             "t.net:2:5: error: op 'transpose' takes 3 arguments, got 2");
	expect_error("input x : f32[2];\ny = concat();\n",
	             "t.net:2:5: error: op 'concat' takes at least 1 argument, got 0");
	expect_error("input x : f32[2];\ndef f(a, b) { return a; }\ny = f(x);\n",
	             "t.net:3:5: error: def 'f' takes 2 arguments, got 1");
	expect_error("input x : f32[2];\ny = softmax(x, axis=1, axis=2);\n",
	             "t.net:2:24: error: duplicate attribute 'axis'");
	expect_error("input x : f32[2];\na, b = relu(x);\n",
	             "t.net:2:1: error: cannot bind 1 value to 2 names");
	expect_error("input x : f32[2];\na, b = split(x, 3, axis=0);\n",
	             "t.net:2:1: error: cannot bind 3 values to 2 names");
	expect_error("input x : f32[2];\ny = relu(split(x, 2, axis=0));\n",
	             "t.net:2:10: error: 'split' gives 2 values where one is expected");
	expect_error("input x : f32[2];\ndef f(a) { return a, a; }\ny = f(x);\n",
	             "t.net:3:1: error: cannot bind 2 values to 1 name");
	expect_error("input x : f32[2];\ny = x / x;\n",
	             "t.net:2:7: error: '/' is not a tensor operator (use div(a, b))");
	expect_error("input x : f32[2];\ny = x / 4;\n",
	             "t.net:2:7: error: '/' is not a tensor operator (to divide by 4, "
	             "write scale(x, c=0.25))");
	expect_error("input x : f32[2];\ny = x * 2;\n",
	             "t.net:2:9: error: a number is not a tensor (use scale(x, c=...) to "
	             "multiply by a constant)");
	expect_error("def f(a) { return g(a); }\ndef g(a) { return f(a); }\n",
	             "t.net:2:19: error: recursive def: f -> g -> f");
	expect_error("def f(a) { b = f(a); return b; }\n",
	             "t.net:1:16: error: recursive def: f -> f");
}

static void
test_errors_dims(void **state)
{
	(void)state;
	expect_error("dim A = 10, B = A / 3;\n",
	             "t.net:1:19: error: '/' does not divide exactly: 10 / 3");
	expect_error("dim A = 9_223_372_036_854_775_807, B = A + 1;\n",
	             "t.net:1:42: error: dimension overflows 64 bits: 9223372036854775807 + 1");
	expect_error("dim A = 4 / (2 - 2);\n", "t.net:1:11: error: division by zero: 4 / 0");
	expect_error("dim A = B, B = 2;\n",
	             "t.net:1:9: error: dim 'B' is used before its declaration");
	expect_error("input x : f32[Q];\n", "t.net:1:15: error: undefined dim 'Q'");
	expect_error("input x : f32[2];\nrepeat 2 - 2 { y = relu(x); }\n",
	             "t.net:2:8: error: repeat count must be positive, got 0");
	expect_error("param w : i64[2];\n",
	             "t.net:1:11: error: param 'w' must be floating point, not i64");
	expect_error("input x : f32[1, 2, 3, 4, 5, 6, 7, 8, 9];\n",
	             "t.net:1:11: error: a tensor has at most 8 dimensions, not 9");
}

static void
test_errors_settings(void **state)
{
	DimOverride defs[] = {{"Q", 4}};
	NetOptions o = {.defs = defs, .ndefs = 1};
	NetOptions acc = {.accumulate_set = true, .accumulate = 3};
	Run *r;
	(void)state;

	r = run_opts("dim N = 2;\n", &o);
	assert_string_equal(r->err, "t.net: error: -D Q=4: no dim or batch named 'Q'\n");
	done(r);
	r = run_opts("batch B = 8;\n", &acc);
	assert_string_equal(r->err, "t.net:1:7: error: batch B = 8 is not divisible by "
	                    "accumulate = 3\nbatch B = 8;\n      ^\n");
	done(r);
	expect_error("dim N = 2;\ntrain { accumulate = 2; }\n",
	             "t.net:2:22: error: accumulate = 2 needs a 'batch' dimension to split");
	expect_error("train { optimizer = adamx; }\n",
	             "t.net:1:21: error: unknown optimizer 'adamx' (did you mean 'adam'?) (expected sgd, momentum, "
	             "adagrad, rmsprop, lion, adam or adamw)");
	expect_error("train { precision = half; }\n",
	             "t.net:1:21: error: unknown precision 'half' (expected declared or mixed)");
	expect_error("train { speed = 2; }\n",
	             "t.net:1:9: error: unknown train setting 'speed' (expected optimizer, "
	             "precision or accumulate)");
	expect_error("train { accumulate = 0; }\n",
	             "t.net:1:22: error: accumulate must be at least 1, got 0");
	expect_error("param w : f32[2];\n",
	             "t.net:2:1: error: training needs an 'output' (the loss); use --infer "
	             "for a forward pass only");
	expect_error("op f(x) -> f32[] { saves = (x); }\n",
	             "t.net:1:4: error: custom op 'f' needs 'flops'");
	expect_error("op f(x) -> f32[] { flops = 1; saves = (y); }\n",
	             "t.net:1:40: error: 'saves' lists arguments of 'f' and 'out'");
	expect_error("op f(x) -> f32[] { flops = 1; speed = 2; }\n",
	             "t.net:1:31: error: unknown custom op setting 'speed' (expected flops, "
	             "backward_flops, saves or workspace)");
}

static void
test_errors_placement(void **state)
{
	(void)state;
	expect_error("def f(a) { dim N = 2; return a; }\n",
	             "t.net:1:12: error: 'dim' is only allowed at the top level");
	expect_error("return x;\n", "t.net:1:1: error: 'return' outside a def");
	expect_error("def f(a) { return a; b = a; }\n",
	             "t.net:1:12: error: 'return' must be the last statement of a def");
	expect_error("def f(a) { b = a; }\n",
	             "t.net:1:5: error: def 'f' must end with a 'return'");
}

/* A failed binding poisons its name: later uses stay quiet. */
static void
test_poison_and_many_errors(void **state)
{
	Run *r = run("input x : f32[2];\ny = frob(x);\nz = relu(y);\nw = relu(q);\n"
	             "a, b = relu(x);\nc = a + b;\n");
	(void)state;
	assert_int_equal(r->nerr, 3);
	assert_non_null(strstr(r->err, "unknown op 'frob'"));
	assert_non_null(strstr(r->err, "undefined name 'q'"));
	assert_non_null(strstr(r->err, "cannot bind 1 value to 2 names"));
	done(r);
}

static void
test_reinstantiate_and_cap(void **state)
{
	Arena a;
	Diag d;
	Graph g1, g2;
	Source src = {"t.net", gpt, sizeof gpt - 1};
	NetOptions o = {.max_tensors = 100};
	Program *p;
	FILE *f = fopen("/dev/null", "w");
	(void)state;

	ar_init(&a);
	diag_init(&d, &src, f);
	p = net_parse(&src, &a, &d);
	assert_non_null(p);
	ir_graph_init(&g1, &a, "t.net");
	ir_graph_init(&g2, &a, "t.net");
	assert_int_equal(net_instantiate(p, &noopts, &g1, &d), 0);
	assert_int_equal(net_instantiate(p, &noopts, &g2, &d), 0);
	assert_int_equal(g1.nt, g2.nt);
	assert_int_equal(g1.nop, g2.nop);
	ir_graph_init(&g2, &a, "t.net");
	assert_int_equal(net_instantiate(p, &o, &g2, &d), 1);
	assert_true(g2.nt <= 100);
	fclose(f);
	ar_free(&a);
}

/* PyTorch spellings: dim= for axis= (negative too), True/False, AdamW and
 * MIXED in any case; and the did-you-mean hints of the frontend. */
static void
test_pytorch_habits(void **state)
{
	Run *r = run("dim B = 2, H = 2, S = 4, E = 8;\n"
	             "train { optimizer = AdamW; precision = MIXED; }\n"
	             "param q : f16[B, H, S, E];\n"
	             "a = attention(q, q, q, causal=True);\n"
	             "b = attention(q, q, q, causal=False);\n"
	             "s = softmax(a + b, dim=-2);\n"
	             "m = mean(s, dim=1);\n"
	             "loss = sum(m);\n"
	             "output loss;\n");
	const Op *op;

	(void)state;
	assert_int_equal(r->nerr, 0);
	assert_int_equal(r->g.settings.optimizer, OPT_ADAMW);
	assert_true(r->g.settings.mixed);
	op = &r->g.op[r->g.t[tensor(r, "a")].producer];
	assert_true(op->p->causal);
	op = &r->g.op[r->g.t[tensor(r, "b")].producer];
	assert_false(op->p->causal);
	op = &r->g.op[r->g.t[tensor(r, "s")].producer];
	assert_int_equal(op->p->axis, -2);
	op = &r->g.op[r->g.t[tensor(r, "m")].producer];
	assert_int_equal(op->p->axis, 1);
	assert_true(op->p->has_axis);
	done(r);
	expect_error("param w : f32[4];\nx = softmax(w, axis=0, dim=0);\n",
	             "t.net:2:24: error: attribute 'axis' of 'softmax' given twice");
	expect_error("param w : f32[4];\nx = relu(w, dim=0);\n",
	             "t.net:2:13: error: op 'relu' has no attribute 'dim'");
	expect_error("param weight : f32[4];\nx = relu(wieght);\n",
	             "t.net:2:10: error: undefined name 'wieght' (did you mean 'weight'?)");
	expect_error("def block(x) { return x; }\nparam w : f32[4];\nx = blok(w);\n",
	             "t.net:3:5: error: unknown op 'blok' (did you mean 'block'?)");
	expect_error("param w : f32[4];\nx = Softmax(w);\n",
	             "t.net:2:5: error: unknown op 'Softmax' (did you mean 'softmax'?)");
	expect_error("dim Hidden = 4;\nparam w : f32[Hiden];\n",
	             "t.net:2:15: error: undefined dim 'Hiden' (did you mean 'Hidden'?)");
	expect_error("param w : f32[4];\nx = frobnicate(w);\n",
	             "t.net:2:5: error: unknown op 'frobnicate'");
}

/* map_del against a plain list of the live keys: random puts and deletes
 * over few names and many scopes (long probe runs, wrapping round the
 * table's end), small and past the dense size; every live key keeps its
 * value and every deleted one is gone. */
static void
test_map_delete(void **state)
{
	static const char *const names[] = {"h", "a", "m", "return", "w1", "w2", "g", "b"};
	enum { NNAME = 8, NOPS = 200000 };
	static unsigned char live[NNAME][NOPS / 2 + 2];  /* scopes 1 .. NOPS / 2 */
	Arena a;
	Map m = {0};
	unsigned x = 12345;
	int n = 0;
	(void)state;

	ar_init(&a);
	memset(live, 0, sizeof live);
	for (int op = 0; op < NOPS; op++) {
		x = x * 1103515245u + 12345u;
		int k = (int)(x >> 16) % NNAME;
		/* scopes grow, so the table does too, while deletes keep some
		 * old ones: at most op / 2 + 1 scopes */
		int sc = 1 + (int)((x >> 4) % (unsigned)(op / 2 + 1));
		if ((x >> 8) % 3) {
			int *v = map_put(&m, &a, names[k], sc);
			n += *v < 0;
			*v = sc * NNAME + k;
			live[k][sc] = 1;
		} else {
			n -= live[k][sc];
			map_del(&m, names[k], sc);
			live[k][sc] = 0;
		}
		assert_int_equal(m.n, n);
		if (op % 4999 == 0 || op == NOPS - 1)
			for (int j = 0; j < NNAME; j++)
				for (int s = 1; s <= op / 2 + 1; s++) {
					int *v = map_find(&m, names[j], s);
					assert_int_equal(v != NULL, live[j][s]);
					if (v)
						assert_int_equal(*v, s * NNAME + j);
				}
	}
	assert_true(m.cap > (1 << 16));
	ar_free(&a);
}

/* The keys of a def call go when it returns: a misspelt name's hint among
 * equally close names is the same after one call or two hundred. */
static void
test_calls_leave_no_keys(void **state)
{
	char text[2][512];
	Run *r[2];
	(void)state;

	for (int i = 0; i < 2; i++) {
		snprintf(text[i], sizeof text[i],
		         "dim D = 4;\ninput x : f32[D];\n"
		         "def g(a) { c = relu(a); return c; }\n"
		         "def f(a) { b = g(a); return relu(b); }\n"
		         "y = x;\nrepeat %d { y = f(y); }\n"
		         "ab = relu(x); ac = relu(x); ae = relu(x); af = relu(x);\n"
		         "ag = relu(x); ah = relu(x); aj = relu(x); ak = relu(x);\n"
		         "q = relu(ad);\n", i ? 200 : 1);
		r[i] = run(text[i]);
		assert_int_equal(r[i]->nerr, 1);
		assert_non_null(strstr(r[i]->err, "undefined name 'ad' (did you mean 'a"));
	}
	assert_string_equal(r[0]->err, r[1]->err);
	assert_true(tensor(r[1], "f.199.g.0.c") >= 0);
	assert_true(tensor(r[1], "f.199.return") >= 0);
	done(r[0]);
	done(r[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gpt_ids),
		cmocka_unit_test(test_intermediates),
		cmocka_unit_test(test_rebinding_counts),
		cmocka_unit_test(test_def_args_and_returns),
		cmocka_unit_test(test_nested_def_numbering),
		cmocka_unit_test(test_repeat_nesting),
		cmocka_unit_test(test_repeat_index),
		cmocka_unit_test(test_extras_and_attrs),
		cmocka_unit_test(test_custom_op),
		cmocka_unit_test(test_dims_overrides_accumulate),
		cmocka_unit_test(test_settings_defaults_and_flags),
		cmocka_unit_test(test_def_sees_top_params),
		cmocka_unit_test(test_errors_names),
		cmocka_unit_test(test_errors_calls),
		cmocka_unit_test(test_errors_dims),
		cmocka_unit_test(test_errors_settings),
		cmocka_unit_test(test_errors_placement),
		cmocka_unit_test(test_poison_and_many_errors),
		cmocka_unit_test(test_reinstantiate_and_cap),
		cmocka_unit_test(test_pytorch_habits),
		cmocka_unit_test(test_map_delete),
		cmocka_unit_test(test_calls_leave_no_keys),
	};
	return cmocka_run_group_tests_name("instantiate", tests, NULL, NULL);
}
