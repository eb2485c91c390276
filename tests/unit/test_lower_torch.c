/* tests/unit/test_lower_torch.c -- the kernels' saved bytes that
 * passes/graph/lower_torch.c gives --runtime pytorch (PyTorch >= 2.4 on
 * CUDA) and --runtime pytorch-cpu (1.13 on the CPU), on one graph built by
 * hand: SDPA's logsumexp (flash / cuDNN, or padded for the memory-efficient
 * kernel) with the RNG seed and offset and no dropout mask; its output's
 * transpose(1, 2).reshape as a view; layer_norm's statistics and dropout's
 * mask. Figures in the comments. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "graphkit.h"

/* The IR tensors the tests look at. */
typedef struct Net {
	int r, lse, lse2, dmask2, mean, mask;
} Net;

/* q, k, v f16 [2, 4, 40, 8]:
 *   a = attention(q, k, v, causal)          lse f32 [2, 4, 40]
 *   r = reshape(transpose(a, 1, 2), [2, 40, 32])
 *   b = attention(q, k, v, m, dropout=0.1)  m bool [2, 1, 1, 40]; dmask
 *                                           u8 [2, 4, 40, 40]
 *   d = dropout(layernorm(x, w, c), p=0.1)  x f16 [6, 32]
 *   loss = sum(r) + sum(b) + sum(d) */
static Net
build(bool cpu)
{
	Net n;
	int q = decl("q", TK_PARAM, DT_F16, 4, 2, 4, 40, 8);
	int k = decl("k", TK_PARAM, DT_F16, 4, 2, 4, 40, 8);
	int v = decl("v", TK_PARAM, DT_F16, 4, 2, 4, 40, 8);
	int m = decl("m", TK_INPUT, DT_BOOL, 4, 2, 1, 1, 40);
	int x = decl("x", TK_PARAM, DT_F16, 2, 6, 32);
	int w = decl("w", TK_PARAM, DT_F16, 1, 32);
	int c = decl("c", TK_PARAM, DT_F16, 1, 32);
	int oa = mk(OP_ATTENTION, "a", 3, q, k, v);
	int ot = mk(OP_TRANSPOSE, "t", 1, out(oa));
	int orr = mk(OP_RESHAPE, "r", 1, out(ot));
	int ob = mk(OP_ATTENTION, "b", 4, q, k, v, m);
	int on = mk(OP_LAYERNORM, "n", 3, x, w, c);
	int od = mk(OP_DROPOUT, "d", 1, out(on));
	int s1 = out(mk(OP_SUM, "s1", 1, out(orr)));
	int s2 = out(mk(OP_SUM, "s2", 1, out(ob)));
	int s3 = out(mk(OP_SUM, "s3", 1, out(od)));
	int l1 = out(mk(OP_ADD, "l1", 2, s1, s2));
	int loss = out(mk(OP_ADD, "loss", 2, l1, s3));

	g.op[oa].p->causal = true;
	g.op[ot].p->i = 1;
	g.op[ot].p->j = 2;
	set_list(orr, 3, 2, 40, 32);
	g.op[ob].p->dropout = 0.1;
	ir_add_extra(&g, ob, 1);
	g.op[od].p->p = 0.1;
	g.settings.pytorch = true;
	g.settings.pytorch_cpu = cpu;
	assert_int_equal(train(loss), 0);
	n.r = out(orr);
	n.lse = ir_extra(&g.op[oa], 0);
	n.lse2 = ir_extra(&g.op[ob], 0);
	n.dmask2 = ir_extra(&g.op[ob], 1);
	n.mean = ir_extra(&g.op[on], 0);
	n.mask = ir_extra(&g.op[od], 0);
	return n;
}

/* The Dag tensor that stands for IR tensor t. */
static const DagTensor *
dag_t(const Dag *d, int t)
{
	for (int i = 0; i < d->nt; i++)
		if (d->t[i].ir_tensor == t)
			return &d->t[i];
	fail_msg("IR tensor %d is not in the Dag", t);
	return NULL;
}

/* Lowers the graph under one runtime; checks whether the reshape views
 * and the bytes of lse, lse2, dmask2, mean and mask, in that order. */
static void
check(bool cpu, bool view, const int64_t want[5])
{
	Net n = build(cpu);
	int t[5] = {n.lse, n.lse2, n.dmask2, n.mean, n.mask};
	Dag d;

	lower_graph(&g, &d, &arena);
	assert_int_equal(dag_t(&d, n.r)->view_src >= 0, view);
	for (int i = 0; i < 5; i++)
		assert_int_equal(dag_t(&d, t[i])->bytes, want[i]);
}

/* CUDA: lse 2*4*40 f32 = 1280 B + seed and offset 16 = 1296; with a mask
 * the memory-efficient kernel pads S to 64: 2*4*64*4 + 16 = 2064; no
 * dropout mask (regenerated); f32 statistics 6*4 = 24; bool mask 6*32 =
 * 192; the output is [B, S, H, Dh] in memory, so the reshape views. */
static void
test_cuda(void **state)
{
	static const int64_t want[5] = {1296, 2064, 0, 24, 192};
	(void)state;
	check(false, true, want);
}

/* CPU 1.13: ops.md's attention Function (lse 1280 B, the u8 dropout mask
 * 2*4*40*40 = 12800 B), a contiguous output that the reshape copies,
 * statistics in f16 (12 B), a mask of x's dtype (384 B). */
static void
test_cpu(void **state)
{
	static const int64_t want[5] = {1280, 1280, 12800, 12, 384};
	(void)state;
	check(true, false, want);
}

/* precision = mixed is torch.autocast (passes/graph/autocast.c), on
 *   x input f16 [4, 8], w param f16 [8, 8], g, c params f16 [8]:
 *   a = x @ w;  n = layernorm(a, g, c);  m = n @ w;  loss = sum(m)
 * Every floating leaf becomes f32 (x 128 B, w 256 B, g and c 32 B, no
 * master copy). CUDA (f16, the params' declared half type): w and x are
 * cast for the matmul (w once: the cast of a weight is cached), a to f32
 * for layer_norm (fp32 list), n back to f16 for the second matmul, which
 * reuses w's cast; sum (fp32_set_opt_dtype) reads m as it is and returns
 * f32. CPU (bf16): layer_norm and sum are on no CPU list, so n and the
 * loss stay bf16 and only w and x are cast. */
/* Makes loss the graph's output and loss, under --runtime pytorch or
 * pytorch-cpu with precision = mixed, and runs shape inference, autocast
 * and (train) autodiff, as driver/analyze.c does. */
static void
autocast_graph(int loss, bool cpu, bool train)
{
	g.settings.pytorch = true;
	g.settings.pytorch_cpu = cpu;
	g.settings.mixed = true;
	set_loss(loss);
	g.train = train;
	assert_int_equal(shape_infer(&g, &diag), 0);
	assert_int_equal(autocast(&g, &diag), 0);
	if (train)
		assert_int_equal(autodiff(&g, &diag), 0);
}

typedef struct AcNet {
	int x, w, a, n, m, loss;
} AcNet;

static AcNet
build_autocast(bool cpu, bool train)
{
	AcNet n;
	int oa, on, om;

	n.x = decl("x", TK_INPUT, DT_F16, 2, 4, 8);
	n.w = decl("w", TK_PARAM, DT_F16, 2, 8, 8);
	int gg = decl("g", TK_PARAM, DT_F16, 1, 8);
	int c = decl("c", TK_PARAM, DT_F16, 1, 8);
	oa = mk(OP_MATMUL, "a", 2, n.x, n.w);
	on = mk(OP_LAYERNORM, "n", 3, out(oa), gg, c);
	om = mk(OP_MATMUL, "m", 2, out(on), n.w);
	n.loss = out(mk(OP_SUM, "loss", 1, out(om)));
	n.a = out(oa);
	n.n = out(on);
	n.m = out(om);
	autocast_graph(n.loss, cpu, train);
	return n;
}

/* How many casts the graph has. */
static int
ncasts(void)
{
	int k = 0;

	for (int o = 0; o < g.nop; o++)
		k += g.op[o].kind == OP_CAST;
	return k;
}

static bool
node_reads(const Dag *d, int v, const DagTensor *t)
{
	for (int j = 0; j < d->node[v].nin; j++)
		if (&d->t[d->node[v].in[j]] == t)
			return true;
	return false;
}

/* The op count, the casts among them and the dtypes of a, n and loss. */
static void
expect(const AcNet *n, int nop, int casts, Dtype a, Dtype nd, Dtype loss)
{
	assert_int_equal(g.nop, nop);
	assert_int_equal(ncasts(), casts);
	assert_int_equal(g.t[n->a].dtype, a);
	assert_int_equal(g.t[n->n].dtype, nd);
	assert_int_equal(g.t[n->loss].dtype, loss);
}

static void
test_autocast_cuda(void **state)
{
	AcNet n;
	Dag d;
	int wc;

	(void)state;
	n = build_autocast(false, true);
	/* cast(w), cast(x), a, cast(a), n, cast(n), m, loss */
	expect(&n, 8, 4, DT_F16, DT_F32, DT_F32);
	assert_int_equal(g.t[n.x].bytes, 128);
	assert_int_equal(g.t[n.w].bytes, 256);
	assert_int_equal(g.t[n.m].dtype, DT_F16);
	/* both matmuls read the one cached cast of w, 128 B of f16 */
	wc = g.op[g.t[n.a].producer].in[1];
	assert_int_equal(g.op[g.t[n.m].producer].in[1], wc);
	assert_true(g.t[wc].autocast_cached);
	assert_int_equal(g.t[wc].bytes, 128);
	lower_graph(&g, &d, &arena);
	assert_int_equal(d.persistent[CAT_PARAMS], 320);
	assert_int_equal(d.persistent[CAT_MASTER], 0);
	/* the cache holds w's cast to the end of forward: the last forward
	 * node (sum) reads it; layer_norm holds a while it casts it */
	assert_true(node_reads(&d, g.t[n.loss].producer, dag_t(&d, wc)));
	assert_true(node_reads(&d, g.t[n.n].producer, dag_t(&d, n.a)));
	/* the f32 param gradient (ToCopyBackward casts it back) */
	assert_int_equal(dag_t(&d, g.t[n.w].grad)->bytes, 256);
}

static void
test_autocast_cpu(void **state)
{
	AcNet n;
	Dag d;

	(void)state;
	n = build_autocast(true, true);
	/* cast(w), cast(x), a, n, m, loss */
	expect(&n, 6, 2, DT_BF16, DT_BF16, DT_BF16);
	lower_graph(&g, &d, &arena);
	/* layer_norm of bf16 x with f32 weights is mixed-type: f32
	 * statistics, 4 x 4 B */
	assert_int_equal(dag_t(&d, ir_extra(&g.op[g.t[n.n].producer], 0))->bytes, 16);
}

/* --infer under CUDA autocast is torch.inference_mode, where autocast
 * caches no weight cast: each matmul casts w itself (cast(w), cast(x), a,
 * cast(a), n, cast(w), cast(n), m, loss), and each cast of w dies with the
 * matmul that reads it. */
static void
test_autocast_infer(void **state)
{
	AcNet n;
	Dag d;
	int wa, wm;

	(void)state;
	n = build_autocast(false, false);
	expect(&n, 9, 5, DT_F16, DT_F32, DT_F32);
	wa = g.op[g.t[n.a].producer].in[1];
	wm = g.op[g.t[n.m].producer].in[1];
	assert_int_not_equal(wa, wm);
	assert_false(g.t[wa].autocast_cached);
	assert_false(g.t[wm].autocast_cached);
	assert_int_equal(g.t[wa].bytes, 128);
	lower_graph(&g, &d, &arena);
	assert_int_equal(d.persistent[CAT_PARAMS], 320);
	assert_false(node_reads(&d, g.t[n.loss].producer, dag_t(&d, wa)));
	assert_false(node_reads(&d, g.t[n.loss].producer, dag_t(&d, wm)));
}

/* cross_entropy under autocast, on x input f16 [4, 8], w param f16 [8, 8],
 * y input i64 [4]: loss = cross_entropy(x @ w, y). CUDA: cross_entropy is
 * on no list, log_softmax keeps the half logits' dtype (lsm f16, 64 B) and
 * nll_loss casts the log-probs to its own f32 copy, the extra lsm_f32
 * (128 B), which its backward reads beside lsm. CPU: the logits are cast
 * to f32 first (fp32 list: a cast op), so lsm is f32 and there is no copy. */
static void
check_ce(bool cpu)
{
	int x = decl("x", TK_INPUT, DT_F16, 2, 4, 8);
	int w = decl("w", TK_PARAM, DT_F16, 2, 8, 8);
	int y = decl("y", TK_INPUT, DT_I64, 1, 4);
	int loss = out(mk(OP_CROSS_ENTROPY, "loss", 2, out(mk(OP_MATMUL, "z", 2, x, w)), y));
	const Op *ce;
	int v = -1;
	Dag d;

	autocast_graph(loss, cpu, true);
	ce = &g.op[g.t[loss].producer];
	assert_int_equal(ce->nextra, cpu ? 1 : 2);
	assert_int_equal(g.t[ir_extra(ce, 0)].dtype, cpu ? DT_F32 : DT_F16);
	assert_int_equal(g.t[ir_extra(ce, 0)].bytes, cpu ? 128 : 64);
	lower_graph(&g, &d, &arena);
	if (cpu)
		return;
	assert_string_equal(g.t[ir_extra(ce, 1)].id, "loss:lsm_f32");
	assert_int_equal(g.t[ir_extra(ce, 1)].dtype, DT_F32);
	assert_int_equal(dag_t(&d, ir_extra(ce, 0))->bytes, 64);
	assert_int_equal(dag_t(&d, ir_extra(ce, 1))->bytes, 128);
	for (int i = 0; i < d.nnode; i++)
		if (d.node[i].is_backward && d.node[i].ir_op == g.t[loss].producer)
			v = i;
	assert_true(v >= 0);
	assert_true(node_reads(&d, v, dag_t(&d, ir_extra(ce, 0))));
	assert_true(node_reads(&d, v, dag_t(&d, ir_extra(ce, 1))));
}

static void
test_autocast_ce_cuda(void **state)
{
	(void)state;
	check_ce(false);
}

static void
test_autocast_ce_cpu(void **state)
{
	(void)state;
	check_ce(true);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cuda, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_autocast_cuda, setup, teardown),
		cmocka_unit_test_setup_teardown(test_autocast_cpu, setup, teardown),
		cmocka_unit_test_setup_teardown(test_autocast_infer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_autocast_ce_cuda, setup, teardown),
		cmocka_unit_test_setup_teardown(test_autocast_ce_cpu, setup, teardown),
	};
	return cmocka_run_group_tests_name("lower_torch", tests, NULL, NULL);
}
