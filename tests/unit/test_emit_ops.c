/* tests/unit/test_emit_ops.c -- generated programs for the ops added by
 * issue 13 (relu6, clamp, hardswish, hardsigmoid, gather, index_select,
 * topk, scatter_add, cross_entropy(ignore_index=), attention with GQA, a
 * mask, causal and dropout) and issue 28 (conv1d, per-axis and asymmetric
 * windows, pools with dilation and ceil_mode, groupnorm, expand, sum and
 * mean over axis lists, keepdim): each network is emitted, compiled in host mode
 * and run in both memory modes and with everything recomputed (the measured
 * peak equals the prediction, results are bit-identical), and its gradient
 * agrees with central finite differences along a random direction. The
 * networks are f64 with an f64 loss (mean), so the check is tight; each
 * isolates a few ops so that a wrong backward cannot hide behind another.
 * The harness is tests/unit/emitkit.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "emitkit.h"

/* Activations over a wide range of inputs (scale spreads them to about
 * [-5, 5], across every kink). */
static const char *act_net =
	"batch B = 3; dim D = 6;\n"
	"input x : f64[B, D];\n"
	"param w : f64[D, D]; param w2 : f64[D, D];\n"
	"h = scale(x @ w, c=300.0) + scale(x, c=30.0);\n"
	"a = relu6(scale(h, c=2.0)) + hardswish(h) + hardsigmoid(h);\n"
	"b = clamp(h, min=-1.5, max=2.0) + clamp(h, max=0.5) + clamp(h, min=-0.25);\n"
	"loss = mean(sum((a + b) @ w2, axis=1));\n"
	"output loss;\n";

/* MoE-style routing: topk over experts, scatter into a dense gate matrix,
 * index_select of tokens, gather back, scatter_add into a residual. */
static const char *route_net =
	"batch T = 5; dim D = 4, E = 3, K = 2, C = 3;\n"
	"input x : f64[T, D];\n"
	"param wr : f64[D, E]; param we : f64[D, D]; param wo : f64[E, D];\n"
	"p = softmax(x @ wr);\n"
	"v, i = topk(p, k=K);\n"
	"g = scatter_add(scale(p, c=0.5), i, v, axis=1);\n"
	"r = gather(g, i, axis=1);\n"
	"gw, tok = topk(reshape(slice(transpose(g, 0, 1), axis=0, start=1, end=2), [T]), k=C);\n"
	"xe = index_select(x, tok, axis=0);\n"
	"he = tanh(xe @ we) * reshape(gw, [C, 1]);\n"
	"y = scatter_add(x @ we, reshape(tok, [C, 1]), he, axis=0);\n"
	"loss = mean(sum(y, axis=1)) + mean(sum(r @ slice(wo, axis=0, start=0, end=2), axis=1));\n"
	"output loss;\n";

/* Grouped-query attention (4 q heads, 2 k/v heads), causal, with a bool
 * mask [S, S] and an additive f64 mask [B, 1, 1, S]. */
static const char *gqa_net =
	"batch B = 2; dim S = 4, Dh = 4, H = 4, G = 2;\n"
	"input x : f64[B, S, H*Dh]; input m : bool[S, S]; input bias : f64[B, 1, 1, S];\n"
	"param wq : f64[H*Dh, H*Dh]; param wk : f64[H*Dh, G*Dh]; param wv : f64[H*Dh, G*Dh];\n"
	"q = transpose(reshape(x @ wq, [B, S, H, Dh]), 1, 2);\n"
	"k = transpose(reshape(x @ wk, [B, S, G, Dh]), 1, 2);\n"
	"v = transpose(reshape(x @ wv, [B, S, G, Dh]), 1, 2);\n"
	"a = attention(q, k, v, m, causal=true);\n"
	"c = attention(q, k, v, bias);\n"
	"loss = mean(sum(reshape(a + scale(c, c=0.5), [B, S*H*Dh]), axis=1));\n"
	"output loss;\n";

/* Multi-query attention with dropout on the probabilities. */
static const char *drop_net =
	"batch B = 2; dim S = 5, Dh = 4, H = 2;\n"
	"input x : f64[B, S, H*Dh];\n"
	"param wq : f64[H*Dh, H*Dh]; param wk : f64[H*Dh, Dh]; param wv : f64[H*Dh, Dh];\n"
	"q = transpose(reshape(x @ wq, [B, S, H, Dh]), 1, 2);\n"
	"k = reshape(x @ wk, [B, 1, S, Dh]);\n"
	"v = reshape(x @ wv, [B, 1, S, Dh]);\n"
	"a = attention(q, k, v, causal=true, dropout=0.3);\n"
	"loss = mean(sum(reshape(a, [B, S*H*Dh]), axis=1));\n"
	"output loss;\n";

/* cross_entropy with ignored labels (labels are initialised in [0, C), so
 * class 1 is ignored about a third of the time); the loss is f32. */
static const char *xent_net =
	"batch B = 6; dim D = 4, C = 3;\n"
	"input x : f64[B, D]; input y : i64[B];\n"
	"param w : f64[D, C];\n"
	"loss = cross_entropy(x @ w, y, ignore_index=1);\n"
	"output loss;\n";

/* conv1d (stride, asymmetric pads, dilation, groups) and conv2d with
 * per-axis strides, dilations and asymmetric pads, each feeding the
 * other's branch of the loss. */
static const char *conv_net =
	"batch B = 2; dim C = 4, L = 11;\n"
	"input x : f64[B, C, L]; input img : f64[B, C, 7, 6];\n"
	"param w1 : f64[6, 2, 3]; param w2 : f64[4, C, 3, 2]; param w3 : f64[C, 6, 2];\n"
	"h = conv1d(x, w1, stride=2, padding=[2, 1], dilation=2, groups=2);\n"
	"h = conv1d(tanh(h), w3, padding=[0, 1]);\n"
	"y = conv2d(img, w2, stride=[2, 1], padding=[1, 0, 0, 2], dilation=[1, 2]);\n"
	"loss = mean(sum(tanh(h), axis=2)) + mean(sum(reshape(tanh(y), [B, 72]), axis=1));\n"
	"output loss;\n";

/* The same windows 8 channels wide or more per group, so that every
 * convolution, forward, grad(x) and grad(w), is an implicit GEMM
 * (codegen/runtime.h): a grouped, strided, dilated conv1d with
 * asymmetric pads, and a conv2d with per-axis strides and dilations, each
 * fed by another convolution so that its grad(x) runs too. */
static const char *convgemm_net =
	"batch B = 2; dim C = 16, L = 13;\n"
	"input x : f64[B, C, L]; input img : f64[B, 8, 7, 6];\n"
	"param w4 : f64[C, C, 3]; param w1 : f64[C, 8, 3]; param w3 : f64[8, C, 2];\n"
	"param w0 : f64[8, 8, 3, 3]; param w2 : f64[8, 8, 3, 2];\n"
	"h = conv1d(tanh(conv1d(x, w4, padding=1)), w1, stride=2, padding=[2, 1], dilation=2,\n"
	"           groups=2);\n"
	"h = conv1d(tanh(h), w3, padding=[0, 1]);\n"
	"y = conv2d(tanh(conv2d(img, w0, padding=1)), w2, stride=[2, 1], padding=[1, 0, 0, 2],\n"
	"           dilation=[1, 2]);\n"
	"loss = mean(sum(tanh(h), axis=2)) + mean(sum(reshape(tanh(y), [B, 144]), axis=1));\n"
	"output loss;\n";

/* Pools: per-axis windows and strides, maxpool2d's dilation, ceil_mode
 * (an avgpool2d window past the end pad divides by less than KH*KW),
 * asymmetric pads. */
static const char *pool_net =
	"batch B = 2; dim C = 3;\n"
	"input img : f64[B, C, 7, 8];\n"
	"param w : f64[C, C, 1, 1];\n"
	"y = conv2d(img, w);\n"
	"m = maxpool2d(y, k=[3, 2], stride=[2, 3], dilation=[1, 2], ceil_mode=true);\n"
	"a = avgpool2d(y, k=[2, 3], stride=2, padding=[0, 0, 0, 1], ceil_mode=true);\n"
	"p = maxpool2d(y, k=3, stride=2, padding=[1, 0, 1, 1]);\n"
	"loss = mean(m) + mean(scale(a, c=2.0)) + mean(tanh(p));\n"
	"output loss;\n";

/* groupnorm over [B, C, H, W] and over [B, C, L], weights trained. */
static const char *gn_net =
	"batch B = 2; dim C = 6;\n"
	"input img : f64[B, C, 3, 2]; input seq : f64[B, C, 5];\n"
	"param w : f64[C, C, 1, 1]; param g : f64[C]; param b : f64[C];\n"
	"param g2 : f64[C]; param b2 : f64[C];\n"
	"y = groupnorm(conv2d(img, w), g, b, groups=3);\n"
	"z = groupnorm(seq, g2, b2, groups=2);\n"
	"loss = mean(tanh(y)) + mean(tanh(scale(z, c=3.0)));\n"
	"output loss;\n";

/* expand (new leading axes, size-1 axes that grow, -1) of a param and of
 * an activation; sum and mean over axis lists, with keepdim, and over
 * every axis. */
static const char *expand_net =
	"batch B = 2; dim S = 3, D = 4;\n"
	"input x : f64[B, S, D];\n"
	"param cls : f64[1, D]; param w : f64[D, D];\n"
	"e = expand(cls, [B, S, -1]);\n"
	"h = tanh(x @ w + e);\n"
	"f = expand(sum(h, axis=1, keepdim=true), [B, S, D]);\n"
	"u = mean(h * f, axis=[0, 2]);\n"
	"v = sum(tanh(h), axis=[-1, 0], keepdim=true);\n"
	"loss = sum(u) + mean(v, axis=[0, 1, 2]) + mean(sum(h, axis=[2, 1, 0]) * sum(e));\n"
	"output loss;\n";

static void test_conv(void **st) { (void)st; check_net(conv_net, "conv"); }
static void test_convgemm(void **st) { (void)st; check_net(convgemm_net, "convgemm"); }
static void test_pool(void **st) { (void)st; check_net(pool_net, "pool"); }
static void test_gn(void **st) { (void)st; check_net(gn_net, "gn"); }
static void test_expand(void **st) { (void)st; check_net(expand_net, "expand"); }
static void test_fd_conv(void **st) { (void)st; check_fd(conv_net, "conv_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_convgemm(void **st)
{
	(void)st;
	check_fd(convgemm_net, "convgemm_fd", 1e-6, 1e-5, 1e-9);
}
static void test_fd_pool(void **st) { (void)st; check_fd(pool_net, "pool_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_gn(void **st) { (void)st; check_fd(gn_net, "gn_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_expand(void **st) { (void)st; check_fd(expand_net, "expand_fd", 1e-6, 1e-5, 1e-9); }

static void test_act(void **st) { (void)st; check_net(act_net, "act"); }
static void test_route(void **st) { (void)st; check_net(route_net, "route"); }
static void test_gqa(void **st) { (void)st; check_net(gqa_net, "gqa"); }
static void test_drop(void **st) { (void)st; check_net(drop_net, "drop"); }
static void test_xent(void **st) { (void)st; check_net(xent_net, "xent"); }
static void test_fd_act(void **st) { (void)st; check_fd(act_net, "act_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_route(void **st) { (void)st; check_fd(route_net, "route_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_gqa(void **st) { (void)st; check_fd(gqa_net, "gqa_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_drop(void **st) { (void)st; check_fd(drop_net, "drop_fd", 1e-6, 1e-5, 1e-9); }
static void test_fd_xent(void **st) { (void)st; check_fd(xent_net, "xent_fd", 1e-3, 5e-3, 1e-9); }

/* The dropout mask really drops: the loss differs from dropout=0's. */
static void
test_dropout_drops(void **st)
{
	Net a, b;
	char o1[1 << 14], o2[1 << 14];
	(void)st;
	char *nodrop = strdup(drop_net);
	char *at = strstr(nodrop, "dropout=0.3");
	assert_non_null(at);
	memcpy(at, "dropout=0.0", 11);
	build(&a, drop_net);
	build(&b, nodrop);
	Schedule sa = dag_base_schedule(&a.d, &a.a), sb = dag_base_schedule(&b.d, &b.a);
	assert_int_equal(run(emit_compile(&a, &sa, "drop_on"), "", o1, sizeof o1), 0);
	assert_int_equal(run(emit_compile(&b, &sb, "drop_off"), "", o2, sizeof o2), 0);
	assert_true(field(o1, "loss: ") != field(o2, "loss: "));
	free(nodrop);
	ar_free(&a.a);
	ar_free(&b.a);
}

/* The general attention kernel, the calls that conv1d, expand and axis
 * lists make (views built on the host) and the implicit-GEMM convolution
 * kernel compile as CUDA too (compile only). */
static void
test_nvcc(void **st)
{
	static const char *const progs[] = {"gqa", "conv", "convgemm", "expand"};
	char cmd[2048];
	const char *nvcc = getenv("NVCC");
	(void)st;
	for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
		snprintf(cmd, sizeof cmd, "%s -fmad=false -x cu -c %s/%s_o0.c -o %s/%s.o",
		         nvcc, tmpdir, progs[i], tmpdir, progs[i]);
		assert_int_equal(system(cmd), 0);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_act),
		cmocka_unit_test(test_route),
		cmocka_unit_test(test_gqa),
		cmocka_unit_test(test_drop),
		cmocka_unit_test(test_xent),
		cmocka_unit_test(test_fd_act),
		cmocka_unit_test(test_fd_route),
		cmocka_unit_test(test_fd_gqa),
		cmocka_unit_test(test_fd_drop),
		cmocka_unit_test(test_fd_xent),
		cmocka_unit_test(test_dropout_drops),
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_convgemm),
		cmocka_unit_test(test_pool),
		cmocka_unit_test(test_gn),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_fd_conv),
		cmocka_unit_test(test_fd_convgemm),
		cmocka_unit_test(test_fd_pool),
		cmocka_unit_test(test_fd_gn),
		cmocka_unit_test(test_fd_expand),
		cmocka_unit_test(test_nvcc),
	};
	snprintf(tmpdir, sizeof tmpdir, "%s", "/tmp/remat-emitops-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	/* test_nvcc comes last; without nvcc it is left out, not failed (the
	 * TAP driver counts cmocka's "not ok # SKIP" as a failure) */
	size_t n = sizeof tests / sizeof tests[0];
	const char *nvcc = getenv("NVCC");
	if (!nvcc || !*nvcc) {
		printf("# skipped test_nvcc: configure found no nvcc\n");
		n--;
	}
	int rc = _cmocka_run_group_tests("emit_ops", tests, n, NULL, NULL);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s %s", getenv("REMAT_KEEP") ? "echo" : "rm -rf", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return rc;
}
