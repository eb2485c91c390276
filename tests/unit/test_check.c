/* tests/unit/test_check.c -- the invariant checks between passes
 * (passes/graph/check.c, ir/dag/check.c): they accept what the passes make
 * and name the first violation of each invariant when a graph, DAG or
 * schedule is broken on purpose. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "graphkit.h"
#include "randdag.h"

static char why[256];

/* x -> relu -> matmul(w) -> mean: a graph through shapes and autodiff. */
static void
build_graph(void)
{
	int x = decl("x", TK_INPUT, DT_F32, 2, 4, 3);
	int w = decl("w", TK_PARAM, DT_F32, 2, 3, 5);
	int r = mk(OP_RELU, "r", 1, x);
	int m = mk(OP_MATMUL, "m", 2, out(r), w);
	int l = mk(OP_MEAN, "loss", 1, out(m));

	g.train = true;
	g.loss = out(l);
	assert_int_equal(shape_infer(&g, &diag), 0);
	assert_true(graph_check(&g, GS_SHAPED, why, sizeof why));
	assert_int_equal(autodiff(&g, &diag), 0);
	assert_true(graph_check(&g, GS_DIFFERENTIATED, why, sizeof why));
}

static void
test_graph_check(void **state)
{
	int m;

	(void)state;
	build_graph();
	m = g.t[g.loss].producer - 1;                   /* the matmul */
	g.t[g.op[m].out[0]].producer = 0;               /* claimed by relu */
	assert_false(graph_check(&g, GS_INSTANTIATED, why, sizeof why));
	assert_non_null(strstr(why, "not marked as made by it"));
	g.t[g.op[m].out[0]].producer = m;
	g.t[g.op[m].out[0]].bytes++;                    /* bytes != numel * 4 */
	assert_true(graph_check(&g, GS_INSTANTIATED, why, sizeof why));
	assert_false(graph_check(&g, GS_SHAPED, why, sizeof why));
	assert_non_null(strstr(why, "bytes"));
	g.t[g.op[m].out[0]].bytes--;
	g.t[g.t[g.op[m].out[0]].grad].grad_of = 0;      /* a grad of the input */
	assert_false(graph_check(&g, GS_DIFFERENTIATED, why, sizeof why));
	assert_non_null(strstr(why, "gradient"));
}

static void
make_dag(Dag *d, Arena *a)
{
	uint64_t seed = 7;
	RdOptions o = {12, 12, true, true, true, true, true};

	rd_make(d, &seed, &o, a);
	assert_true(dag_check(d, a, why, sizeof why));
}

static void
test_dag_check(void **state)
{
	Arena a;
	Dag d;
	int v, t;

	(void)state;
	ar_init(&a);
	make_dag(&d, &a);
	d.forward_cost++;
	assert_false(dag_check(&d, &a, why, sizeof why));
	assert_non_null(strstr(why, "cost totals"));
	d.forward_cost--;
	v = d.base_order[1];
	t = d.node[v].out[0];
	d.node[d.base_order[0]].out[0] = t;             /* two producers */
	assert_false(dag_check(&d, &a, why, sizeof why));
	assert_non_null(strstr(why, "two producers"));
	ar_free(&a);
}

static void
test_schedule_check(void **state)
{
	Arena a;
	Dag d;
	Schedule s;
	int last;

	(void)state;
	ar_init(&a);
	make_dag(&d, &a);
	s.n = d.nbase;
	s.step = ar_alloc(&a, sizeof *s.step * (size_t)s.n);
	memcpy(s.step, d.base_order, sizeof *s.step * (size_t)s.n);
	assert_true(dag_check_schedule(&d, &s, &a, why, sizeof why));
	s.n--;                                          /* a node never runs */
	assert_false(dag_check_schedule(&d, &s, &a, why, sizeof why));
	assert_non_null(strstr(why, "never runs"));
	s.n++;
	last = s.step[s.n - 1];                         /* a backward node */
	s.step[s.n - 1] = s.step[0];
	s.step[0] = last;                               /* now runs first */
	assert_false(dag_check_schedule(&d, &s, &a, why, sizeof why));
	assert_true(strstr(why, "before its forward") || strstr(why, "before it is made"));
	ar_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_graph_check, setup, teardown),
		cmocka_unit_test(test_dag_check),
		cmocka_unit_test(test_schedule_check),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
