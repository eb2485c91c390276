/* tests/unit/test_pipeline.c -- pipeline stages (passes/graph/pipeline.c):
 * the split, micro-batches in flight under 1F1B and GPipe, the boundary
 * nodes, the params each stage holds, and that the stages together do the
 * work of the whole training step once per micro-batch. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "driver.h"

/* Four blocks of f32 [32, 32] weights, then a mean as the loss. */
static const char *net4 =
	"batch B = 4;\n"
	"dim D = 32;\n"
	"train { optimizer = sgd; }\n"
	"input x : f32[B, D];\n"
	"def layer(h) { param w : f32[D, D]; return relu(h @ w); }\n"
	"h = x;\n"
	"repeat 4 { h = layer(h); }\n"
	"loss = mean(h);\n"
	"output loss;\n";

static Status
run(Analysis *an, Arena *a, int stages, int stage, int mb, bool gpipe, int nsplit,
    const int *split)
{
	Source src = {"t.net", net4, strlen(net4), false};
	PlanGoal goal = {0, 1.0, -1, false};
	NetOptions o;
	Program *p;
	Diag d;

	memset(&o, 0, sizeof o);
	o.pipe.stages = stages;
	o.pipe.stage = stage;
	o.pipe.micro_batches = mb;
	o.pipe.gpipe = gpipe;
	o.pipe.nsplit = nsplit;
	for (int i = 0; i < nsplit; i++)
		o.pipe.split[i] = split[i];
	ar_init(a);
	diag_init(&d, &src, stderr);
	d.quiet_warnings = true;
	p = net_parse(&src, a, &d);
	assert_non_null(p);
	return analyze(&(Job){p, "t.net", o, goal, true, {0, NULL, true, NULL}}, an, a, &d);
}

static int
count_nodes(const Dag *d, const char *prefix)
{
	int n = 0;

	for (int v = 0; v < d->nnode; v++)
		n += !strncmp(d->node[v].name, prefix, strlen(prefix));
	return n;
}

/* Equal blocks split evenly; stage s of K holds min(K - s, M) micro-batches
 * under 1F1B and M under GPipe; a stage holds only its blocks' weights. */
static void
test_split_and_in_flight(void **state)
{
	Analysis an, whole;
	Arena a, b;
	int64_t pers = 0, fwd = 0;

	(void)state;
	assert_int_equal(run(&whole, &b, 1, 0, 1, false, 0, NULL), 0);
	for (int s = 0; s < 2; s++) {
		assert_int_equal(run(&an, &a, 2, s, 4, false, 0, NULL), 0);
		assert_int_equal(an.pipe.first_block, 1 + 2 * s);
		assert_int_equal(an.pipe.last_block, 2 + 2 * s);
		assert_int_equal(an.pipe.in_flight, 2 - s);
		pers += an.d.persistent[CAT_PARAMS];
		fwd += an.d.forward_cost / 4;
		/* the whole training step: one send (stage 0) or receive
		 * (stage 1) per micro-batch */
		assert_int_equal(count_nodes(&an.d, s ? "recv(" : "send("), 4);
		assert_int_equal(count_nodes(&an.d, s ? "send_grad(" : "recv_grad("), 4);
		ar_free(&a);
		assert_int_equal(run(&an, &a, 2, s, 4, true, 0, NULL), 0);
		assert_int_equal(an.pipe.in_flight, 4);
		ar_free(&a);
	}
	assert_int_equal(pers, whole.d.persistent[CAT_PARAMS]);
	assert_int_equal(fwd, whole.d.forward_cost);
	ar_free(&b);
}

/* More micro-batches in flight never lower a stage's peak: GPipe (all M)
 * is at least 1F1B, and 1F1B's first stage at least its last. */
static void
test_gpipe_holds_more(void **state)
{
	Analysis an;
	Arena a;
	int64_t f1b[2], gp;

	(void)state;
	for (int s = 0; s < 2; s++) {
		assert_int_equal(run(&an, &a, 2, s, 4, false, 0, NULL), 0);
		f1b[s] = an.ev.peak;
		ar_free(&a);
		assert_int_equal(run(&an, &a, 2, s, 4, true, 0, NULL), 0);
		gp = an.ev.peak;
		ar_free(&a);
		assert_true(gp >= f1b[s]);
	}
	assert_true(f1b[0] >= f1b[1]);
}

/* --stage-blocks places the cut where it says; too many stages for the
 * blocks is an error. */
static void
test_explicit_split(void **state)
{
	static const int split[2] = {3, 1};
	Analysis an;
	Arena a;

	(void)state;
	assert_int_equal(run(&an, &a, 2, 1, 2, false, 2, split), 0);
	assert_int_equal(an.pipe.first_block, 4);
	assert_int_equal(an.pipe.last_block, 4);
	ar_free(&a);
	assert_int_equal(run(&an, &a, 5, 0, 5, false, 0, NULL), ST_ERROR);
	ar_free(&a);
}

/* The stage's step in its schedule's order, as a string of F<m> and B<m>
 * (a micro-batch's forward, backward), one per change of phase. */
static void
phases(const Dag *d, char *buf, size_t n)
{
	int last = -1;
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; i < d->nbase; i++) {
		const DagNode *nd = &d->node[d->base_order[i]];
		int key = dag_micro_batch(d, nd) * 2 + nd->is_backward;
		if (key == last)
			continue;
		last = key;
		len += (size_t)snprintf(buf + len, n - len, "%c%d ", nd->is_backward ? 'B' : 'F',
		                        dag_micro_batch(d, nd));
		assert_true(len < n);
	}
}

/* 1F1B on stage 0 of 2 with M = 4: one forward to warm up, then a forward
 * and the oldest backward in turn, then the last backward; stage 1 runs
 * each micro-batch's backward right after its forward; GPipe runs every
 * forward first. The accumulated gradients are made by the first backward,
 * never live from the start. */
static void
test_schedule_order(void **state)
{
	Analysis an;
	Arena a;
	char got[128];

	(void)state;
	assert_int_equal(run(&an, &a, 2, 0, 4, false, 0, NULL), 0);
	phases(&an.d, got, sizeof got);
	assert_string_equal(got, "F0 F1 B0 F2 B1 F3 B2 B3 ");
	for (int t = 0; t < an.d.nt; t++)
		assert_false(an.d.t[t].cat == CAT_PARAM_GRADS && an.d.t[t].from_start);
	ar_free(&a);
	assert_int_equal(run(&an, &a, 2, 1, 4, false, 0, NULL), 0);
	phases(&an.d, got, sizeof got);
	assert_string_equal(got, "F0 B0 F1 B1 F2 B2 F3 B3 ");
	ar_free(&a);
	assert_int_equal(run(&an, &a, 2, 1, 3, true, 0, NULL), 0);
	phases(&an.d, got, sizeof got);
	assert_string_equal(got, "F0 F1 F2 B0 B1 B2 ");
	ar_free(&a);
}

/* The boundary nodes say what they exchange with which stage (stage 0
 * sends to 1 and receives gradients from it; stage 1 the reverse; loads
 * have no peer), and each send or receive follows the one before it in
 * the schedule (fwd_plus1), so that no plan reorders the messages. */
static void
test_boundary_nodes(void **state)
{
	Analysis an;
	Arena a;

	(void)state;
	for (int s = 0; s < 2; s++) {
		int prev = -1, nb = 0;
		assert_int_equal(run(&an, &a, 2, s, 3, false, 0, NULL), 0);
		for (int i = 0; i < an.d.nbase; i++) {
			int v = an.d.base_order[i];
			const DagNode *nd = &an.d.node[v];
			const DagXfer *x = dag_xfer(&an.d, v);
			if (x->pipe == PIPE_NONE)
				continue;
			if (x->pipe == PIPE_LOAD) {
				assert_int_equal(x->npeer, 0);
				continue;
			}
			nb++;
			assert_int_equal(x->npeer, 1);
			assert_int_equal(x->peer[0], 1 - s);
			assert_true(s ? x->pipe == PIPE_RECV || x->pipe == PIPE_SEND_GRAD
			              : x->pipe == PIPE_SEND || x->pipe == PIPE_RECV_GRAD);
			assert_int_equal(nd->fwd_plus1, prev + 1);
			prev = v;
		}
		assert_int_equal(nb, 2 * 3);    /* one each way per micro-batch */
		ar_free(&a);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_and_in_flight),
		cmocka_unit_test(test_gpipe_holds_more),
		cmocka_unit_test(test_explicit_split),
		cmocka_unit_test(test_schedule_order),
		cmocka_unit_test(test_boundary_nodes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
