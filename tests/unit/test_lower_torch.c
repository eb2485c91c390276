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

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_cuda, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cpu, setup, teardown),
	};
	return cmocka_run_group_tests_name("lower_torch", tests, NULL, NULL);
}
