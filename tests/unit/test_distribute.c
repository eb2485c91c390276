/* tests/unit/test_distribute.c -- data parallelism (passes/graph/
 * distribute.c): per-rank model states against DeepSpeed's estimator
 * formulas, alone and per pipeline stage, buckets, ZeRO-3 gathers, their
 * lifetimes and prefetching, offload. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "driver.h"

/* Three layers of bf16 [64, 64] weights under mixed-precision AdamW:
 * P = 3 * 4096 = 12288 params, divisible by every rank count used, so no
 * shard is padded. */
static const char *net3 =
	"batch B = 4;\n"
	"dim D = 64;\n"
	"train { optimizer = adamw; precision = mixed; }\n"
	"input x : bf16[B, D];\n"
	"def layer(h) { param w : bf16[D, D]; return relu(h @ w); }\n"
	"h = x;\n"
	"repeat 3 { h = layer(h); }\n"
	"loss = mean(h);\n"
	"output loss;\n";
enum { P = 3 * 64 * 64 };

/* The same layers, four of them: two pipeline stages of P4 / 2 params;
 * a larger batch, so that activations make the peak at the start of the
 * backward pass, while weights are gathered. */
static const char *net4 =
	"batch B = 256;\n"
	"dim D = 64;\n"
	"train { optimizer = adamw; precision = mixed; }\n"
	"input x : bf16[B, D];\n"
	"def layer(h) { param w : bf16[D, D]; return relu(h @ w); }\n"
	"h = x;\n"
	"repeat 4 { h = layer(h); }\n"
	"loss = mean(h);\n"
	"output loss;\n";
enum { P4 = 4 * 64 * 64 };

typedef struct Run {
	Arena a;
	Analysis an;
} Run;

/* The analysis of net under o at -O`level`. */
static void
run_at(Run *r, const char *net, const NetOptions *o, int level)
{
	Source src = {"t.net", net, strlen(net), false};
	PlanGoal goal = {level, 1.0, -1, false, {0, NULL}};
	Program *p;
	Diag d;

	ar_init(&r->a);
	diag_init(&d, &src, stderr);
	d.quiet_warnings = true;
	p = net_parse(&src, &r->a, &d);
	assert_non_null(p);
	assert_int_equal(analyze(&(Job){p, "t.net", *o, goal, true, {0, NULL, true, NULL}},
	                         &r->an, &r->a, &d), ST_OK);
}

static void
run_net(Run *r, const char *net, const NetOptions *o)
{
	run_at(r, net, o, 0);
}

static void
run(Run *r, int ranks, int zero, bool off_opt, bool off_par, int64_t bucket)
{
	NetOptions o;

	memset(&o, 0, sizeof o);
	o.dist = (DistOptions){ranks, zero, bucket, off_opt, off_par, 0, SYNC_AUTO};
	run_net(r, net3, &o);
}

/* Stage `stage` of 2 (two layers each, M = 2 micro-batches, 1F1B) of
 * net4, each data parallel over `ranks` ranks. */
static void
run_stage(Run *r, int stage, int ranks, int zero, bool off_opt, bool off_par)
{
	NetOptions o;

	memset(&o, 0, sizeof o);
	o.dist = (DistOptions){ranks, zero, 25 << 20, off_opt, off_par, 0, SYNC_AUTO};
	o.pipe.stages = 2;
	o.pipe.stage = stage;
	o.pipe.micro_batches = 2;
	o.pipe.nsplit = 2;      /* two layers each */
	o.pipe.split[0] = o.pipe.split[1] = 2;
	run_net(r, net4, &o);
}

/* The model states a rank holds on the device: its persistent buffers and
 * its gradient shards (from ZeRO-2, made by their first bucket, or
 * persistent under offload and accumulation: dist.grad_shards counts
 * both). */
static int64_t
model_states(const Run *r)
{
	const int64_t *p = r->an.d.persistent;

	return p[CAT_PARAMS] + p[CAT_MASTER] + p[CAT_OPTIMIZER] + r->an.dist.grad_shards;
}

/* DeepSpeed 0.19's estimate_zero2_model_states_mem_needs and
 * estimate_zero3_model_states_mem_needs (deepspeed/runtime/zero/
 * stage_1_and_2.py and stage3.py), per GPU, mixed-precision Adam:
 *   zero2, no offload:  2P + 18P/N  (16-bit params; 16-bit grads, 32-bit
 *                        grads, 32-bit master, 8 B of Adam state, sharded)
 *   zero2, offload:     2P
 *   zero3, no offload:  4 * largest_layer + 18P/N
 *   zero3, offload optimizer: 4 * largest_layer + 2P/N
 *   zero3, offload both:      4 * largest_layer
 * Our persistent model states must equal the sharded terms; the
 * largest-layer term is what we count as gather buffers and full gradients
 * at the steps they are live, not as persistent bytes. Our zero2 keeps one
 * gradient shard in f32 (the memory model's gradient dtype under mixed
 * precision), DeepSpeed a 16-bit and a 32-bit one: 2P/N less. */
static void
test_deepspeed_formulas(void **state)
{
	static const int ranks[] = {2, 4, 8};
	Run r;

	(void)state;
	for (int i = 0; i < 3; i++) {
		int64_t n = ranks[i];
		run(&r, (int)n, 2, false, false, 25 << 20);
		assert_int_equal(model_states(&r), 2 * P + 18 * P / n - 2 * P / n);
		ar_free(&r.a);
		run(&r, (int)n, 2, true, false, 25 << 20);
		assert_int_equal(model_states(&r), 2 * P);
		ar_free(&r.a);
		run(&r, (int)n, 3, false, false, 25 << 20);
		assert_int_equal(model_states(&r), 18 * P / n);
		ar_free(&r.a);
		run(&r, (int)n, 3, true, false, 25 << 20);
		assert_int_equal(model_states(&r), 2 * P / n);
		assert_int_equal(r.an.dist.host[CAT_MASTER] + r.an.dist.host[CAT_OPTIMIZER]
		                 + r.an.dist.host[CAT_PARAM_GRADS], 16 * P / n);
		ar_free(&r.a);
		run(&r, (int)n, 3, true, true, 25 << 20);
		assert_int_equal(model_states(&r), 0);
		ar_free(&r.a);
	}
}

/* ZeRO 1 shards master and optimizer state only; a shard is padded to a
 * whole element count per rank: 4096 elements over 3 ranks is 1366. */
static void
test_zero1_padding(void **state)
{
	Run r;

	(void)state;
	run(&r, 3, 1, false, false, 25 << 20);
	assert_int_equal(r.an.d.persistent[CAT_PARAMS], 2 * P);
	assert_int_equal(r.an.d.persistent[CAT_MASTER], 3 * 1366 * 4);
	assert_int_equal(r.an.d.persistent[CAT_OPTIMIZER], 3 * 1366 * 8);
	ar_free(&r.a);
}

static int
find_node(const Dag *d, const char *prefix)
{
	int n = 0;

	for (int v = 0; v < d->nnode; v++)
		n += !strncmp(d->node[v].name, prefix, strlen(prefix));
	return n;
}

/* A 1-byte bucket closes after every gradient: one reduce per param. At
 * ZeRO-2 the full gradients die at their bucket's pack step, and its
 * reduce-scatter makes each param's shard, which lives to the end; at
 * ZeRO-0 they live to the end and the reduce is an all-reduce. Its
 * workspace is the bucket. */
static void
test_buckets(void **state)
{
	Run r;
	int shards = 0;

	(void)state;
	run(&r, 2, 2, false, false, 1);
	assert_int_equal(r.an.dist.nbuckets, 3);
	assert_int_equal(find_node(&r.an.d, "reduce_scatter(bucket"), 3);
	assert_int_equal(r.an.dist.max_bucket, 64 * 64 * 4);
	for (int i = 0; i < r.an.ev.ninst; i++) {
		const Instance *in = &r.an.ev.inst[i];
		const DagTensor *t = &r.an.d.t[in->tensor];
		const char *last;
		if (t->cat != CAT_PARAM_GRADS)
			continue;
		if (t->ir_tensor < 0) {         /* a shard: its bucket to the end */
			const char *first = r.an.d.node[r.an.plan.sched.step[in->start]].name;
			assert_true(!strncmp(first, "reduce_scatter", 14));
			assert_int_equal(in->end, r.an.ev.nsteps - 1);
			assert_int_equal(in->owned, 64 * 64 * 4 / 2);
			shards++;
			continue;
		}
		last = r.an.d.node[r.an.plan.sched.step[in->end]].name;
		assert_true(!strncmp(last, "pack(bucket", 11));
	}
	assert_int_equal(shards, 3);
	assert_int_equal(find_node(&r.an.d, "pack(bucket"), 3);
	assert_int_equal(r.an.d.persistent[CAT_PARAM_GRADS], 0);
	assert_int_equal(r.an.dist.grad_shards, 3 * 64 * 64 * 4 / 2);
	ar_free(&r.a);
	run(&r, 2, 0, false, false, 25 << 20);
	assert_int_equal(r.an.dist.nbuckets, 1);
	assert_int_equal(find_node(&r.an.d, "allreduce(bucket"), 1);
	assert_int_equal(r.an.dist.max_bucket, 3 * 64 * 64 * 4);
	ar_free(&r.a);
}

/* ZeRO-3: one gather before each block's forward and one before its
 * backward; the forward gather is freed when the block's forward is done,
 * before the next block's gather, so at most one unit is gathered at a time
 * in the forward pass. */
static void
test_gathers(void **state)
{
	Run r;
	const MemEval *ev;
	int live_fwd_gathers, maxlive = 0;

	(void)state;
	run(&r, 4, 3, false, false, 25 << 20);
	assert_int_equal(r.an.dist.nunits, 3);         /* the root has no params */
	assert_int_equal(find_node(&r.an.d, "allgather(unit"), 6);
	assert_int_equal(r.an.dist.max_gather, 64 * 64 * 2);
	ev = &r.an.ev;
	for (int s = 0; s < ev->nsteps; s++) {
		live_fwd_gathers = 0;
		for (int i = 0; i < ev->ninst; i++) {
			const Instance *in = &ev->inst[i];
			if (!strncmp(r.an.d.t[in->tensor].name, "allgather", 9) &&
			    in->start <= s && s <= in->end)
				live_fwd_gathers++;
		}
		if (live_fwd_gathers > maxlive)
			maxlive = live_fwd_gathers;
	}
	assert_int_equal(maxlive, 1);
	ar_free(&r.a);
}

/* Params outside every def, before the blocks (an embedding) and after
 * them (a head, with the loss), are two units: the root and the head.
 * The head's backward gather runs right before the loss's backward, the
 * head's first; the root's after every block's backward, not at the
 * start of the backward as one unit of both would. At -O0 no step holds
 * one unit's weights twice. */
static void
test_root_and_head(void **state)
{
	static const char *net =
		"batch B = 4;\n"
		"dim D = 64;\n"
		"train { optimizer = adamw; precision = mixed; }\n"
		"input x : bf16[B, D];\n"
		"param we : bf16[D, D];\n"
		"param wh : bf16[D, D];\n"
		"def layer(h) { param w : bf16[D, D]; return relu(h @ w); }\n"
		"h = x @ we;\n"
		"repeat 3 { h = layer(h); }\n"
		"loss = mean(h @ wh);\n"
		"output loss;\n";
	const Schedule *s;
	const Dag *d;
	NetOptions o;
	Run r;
	int root_b = -1, head_b = -1, last_block_b = -1, loss_b = -1;

	(void)state;
	memset(&o, 0, sizeof o);
	o.dist = (DistOptions){4, 3, 25 << 20, false, false, 0, SYNC_AUTO};
	run_net(&r, net, &o);
	d = &r.an.d;
	s = &r.an.plan.sched;
	assert_int_equal(r.an.dist.nunits, 5);
	assert_int_equal(find_node(d, "allgather(root)"), 2);
	assert_int_equal(find_node(d, "allgather(head)"), 2);
	for (int i = 0; i < s->n; i++) {
		const DagNode *n = &d->node[s->step[i]];
		if (!n->is_backward)
			continue;
		if (!strcmp(n->name, "allgather(root)"))
			root_b = i;
		else if (!strcmp(n->name, "allgather(head)"))
			head_b = i;
		else if (n->block_plus1)
			last_block_b = i;
		else if (!strcmp(n->name, "loss"))
			loss_b = i;
	}
	assert_true(head_b >= 0 && loss_b == head_b + 1);
	assert_true(last_block_b > head_b && root_b > last_block_b);
	for (int i = 0; i < r.an.ev.ninst; i++)
		for (int j = 0; j < i; j++) {
			const Instance *a = &r.an.ev.inst[i], *b = &r.an.ev.inst[j];
			if (strncmp(d->t[a->tensor].name, "allgather(", 10) ||
			    strcmp(d->t[a->tensor].name, d->t[b->tensor].name))
				continue;
			assert_true(a->end < b->start || b->end < a->start);
		}
	ar_free(&r.a);
}

/* Pipeline stages combined with data parallelism: each stage of 2 holds
 * Ps = P4 / 2 params (2 layers; the loss reads none) and shards them over
 * its N ranks, so its model states per rank are DeepSpeed's formulas (see
 * test_deepspeed_formulas) with Ps in place of P; ZeRO 1 shards master
 * and Adam state only (2Ps + 12Ps/N; its f32 gradients are not
 * persistent). The same terms are in the breakdown at the stage's peak. */
static void
test_stages_with_ranks(void **state)
{
	static const int ranks[] = {2, 4};
	const int64_t Ps = P4 / 2;
	Run r;

	(void)state;
	for (int s = 0; s < 2; s++)
		for (int i = 0; i < 2; i++) {
			int64_t n = ranks[i];
			run_stage(&r, s, (int)n, 1, false, false);
			assert_int_equal(model_states(&r), 2 * Ps + 12 * Ps / n);
			assert_int_equal(r.an.ev.breakdown[CAT_MASTER] + r.an.ev.breakdown[CAT_OPTIMIZER],
			                 12 * Ps / n);
			ar_free(&r.a);
			run_stage(&r, s, (int)n, 2, false, false);
			assert_int_equal(model_states(&r), 2 * Ps + 18 * Ps / n - 2 * Ps / n);
			ar_free(&r.a);
			run_stage(&r, s, (int)n, 2, true, false);
			assert_int_equal(model_states(&r), 2 * Ps);
			ar_free(&r.a);
			run_stage(&r, s, (int)n, 3, false, false);
			assert_int_equal(model_states(&r), 18 * Ps / n);
			ar_free(&r.a);
			run_stage(&r, s, (int)n, 3, true, false);
			assert_int_equal(model_states(&r), 2 * Ps / n);
			ar_free(&r.a);
			run_stage(&r, s, (int)n, 3, true, true);
			assert_int_equal(model_states(&r), 0);
			ar_free(&r.a);
		}
}

/* ZeRO 3 in a pipeline stage gathers per micro-batch in flight: stage 0 of
 * 2 holds both micro-batches, so each of its 2 layers is gathered 2 x 2
 * times (forward and backward of each copy); under ZeRO 2 each copy
 * reduce-scatters its own gradients, one bucket each. */
static void
test_stage_units(void **state)
{
	Run r;

	(void)state;
	run_stage(&r, 0, 2, 3, false, false);
	assert_int_equal(r.an.pipe.in_flight, 2);
	assert_int_equal(find_node(&r.an.d, "allgather(unit"), 8);
	assert_int_equal(r.an.dist.max_gather, 64 * 64 * 2);
	ar_free(&r.a);
	run_stage(&r, 0, 2, 2, false, false);
	assert_int_equal(r.an.dist.nbuckets, 2);
	ar_free(&r.a);
}

/* ZeRO-3 with --prefetch N: N more units' gathered weights are live with
 * the running one's, and the peak grows by exactly one unit's weights per
 * prefetched unit (the peak step has a next unit to prefetch). */
static void
test_prefetch(void **state)
{
	int64_t peak[3];
	Run r;

	(void)state;
	for (int k = 0; k < 3; k++) {
		NetOptions o;
		memset(&o, 0, sizeof o);
		o.dist = (DistOptions){4, 3, 25 << 20, false, false, k, SYNC_AUTO};
		run_net(&r, net4, &o);
		peak[k] = r.an.ev.peak;
		ar_free(&r.a);
	}
	assert_int_equal(peak[1] - peak[0], 64 * 64 * 2);
	assert_int_equal(peak[2] - peak[1], 64 * 64 * 2);
}

/* What the generated program runs (codegen/emit.c): every communication
 * node is marked; each param is in exactly one forward and one backward
 * gather, whose output holds exactly the bytes of its comm_params; the
 * offloaded bytes are listed buffer by buffer. */
static void
test_comm_nodes(void **state)
{
	Run r;
	const Dag *d;
	int fwd[8], nfwd = 0, nbwd = 0, nbucket = 0;
	int64_t host = 0, want = 0;

	(void)state;
	run(&r, 4, 3, true, true, 1);
	d = &r.an.d;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		const DagXfer *x = dag_xfer(d, v);
		int64_t bytes = 0;
		if (!strncmp(n->name, "reduce_scatter", 14))
			assert_int_equal(x->comm, COMM_REDUCE_SCATTER);
		if (!strncmp(n->name, "reduce_scatter", 14))
			nbucket++;
		if (strncmp(n->name, "allgather", 9)) {
			assert_true(x->comm != COMM_ALLGATHER);
			continue;
		}
		assert_int_equal(x->comm, COMM_ALLGATHER);
		for (int j = 0; j < x->ncomm_params; j++) {
			const Tensor *t = &r.an.g.t[x->comm_params[j]];
			assert_int_equal(t->kind, TK_PARAM);
			bytes += t->bytes;
			if (!n->is_backward) {
				assert_true(nfwd < 8);
				fwd[nfwd++] = x->comm_params[j];
			}
			else
				nbwd++;
		}
		assert_int_equal(n->nout, 1);
		assert_int_equal(d->t[n->out[0]].bytes, bytes);
	}
	assert_int_equal(nfwd, 3);
	assert_int_equal(nbwd, 3);
	assert_int_equal(nbucket, 3);
	assert_true(fwd[0] != fwd[1] && fwd[1] != fwd[2] && fwd[0] != fwd[2]);
	for (int i = 0; i < d->npersistent; i++)
		host += d->persistent_host[i];
	for (int c = 0; c < CAT_COUNT; c++)
		want += r.an.dist.host[c];
	assert_true(want > 0);
	assert_int_equal(host, want);
	ar_free(&r.a);
}

/* The largest number of live instances of one unit's gathered weights
 * (tensors of one name: up to the version before, each gather made a
 * tensor of its own) at any step of the analysis's plan. */
static int
most_copies(const Run *r)
{
	const MemEval *ev = &r->an.ev;
	int most = 0;

	for (int s = 0; s < ev->nsteps; s++)
		for (int t = 0; t < r->an.d.nt; t++) {
			int n = 0;
			if (strncmp(r->an.d.t[t].name, "allgather", 9))
				continue;
			for (int i = 0; i < ev->ninst; i++)
				n += !strcmp(r->an.d.t[ev->inst[i].tensor].name, r->an.d.t[t].name) &&
				     ev->inst[i].start <= s && s <= ev->inst[i].end;
			if (n > most)
				most = n;
		}
	return most;
}

/* Both gathers of a unit make one tensor: under a checkpointing plan that
 * recomputes a unit's forward inside its backward, the recompute reads
 * the backward gather's instance, so no step holds a unit's weights
 * twice (per-def and -O2); and -O2's ZeRO-3 plan is at most its ZeRO-2
 * plan, which it gets replayed with the gathers (dist_seed), at 2 and 4
 * ranks. */
static void
test_one_gathered_copy(void **state)
{
	/* the backward of a block's second matmul reads the first one's
	 * relu, which a checkpointing plan recomputes from the block's input
	 * with the block's weights */
	static const char *net =
		"batch B = 256;\n"
		"dim D = 64;\n"
		"train { optimizer = adamw; precision = mixed; }\n"
		"input x : bf16[B, D];\n"
		"def layer(h) { param w1 : bf16[D, D]; param w2 : bf16[D, D];\n"
		"  return relu(relu(h @ w1) @ w2); }\n"
		"h = x;\n"
		"repeat 4 { h = layer(h); }\n"
		"loss = mean(h);\n"
		"output loss;\n";
	NetOptions o;
	Run r, r2;
	Dag d2;
	Schedule s;
	PlanResult pd;

	(void)state;
	for (int ranks = 2; ranks <= 4; ranks += 2) {
		memset(&o, 0, sizeof o);
		o.dist = (DistOptions){ranks, 3, 25 << 20, false, false, 0, SYNC_AUTO};
		run_at(&r, net, &o, 2);
		assert_true(r.an.plan.recompute_cost > 0);
		assert_int_equal(most_copies(&r), 1);
		pd = rm_plan_perblock(&r.an.d, &r.a);
		assert_true(pd.sched.n > 0);
		assert_int_equal(vf_evaluate(&r.an.d, &pd.sched, &r.an.ev, true, &r.a), ST_OK);
		assert_int_equal(most_copies(&r), 1);
		o.dist.zero = 2;
		run_at(&r2, net, &o, 2);
		assert_true(r.an.plan.peak <= r2.an.plan.peak);
		/* a Dag with its gathers is no ZeRO-2 Dag to replay */
		assert_false(dist_seed(&r.an.d, &r.an.d, &r.an.plan.sched, &s, &r.a));
		d2 = r2.an.d;
		assert_true(dist_seed(&r.an.d, &d2, &r2.an.plan.sched, &s, &r.a));
		assert_true(s.n >= r2.an.plan.sched.n + 2 * r.an.dist.nunits);
		ar_free(&r2.a);
		ar_free(&r.a);
	}
}

/* One rank. With the optimizer offloaded, ZeRO-2's buckets copy the
 * gradients straight into the host's shards: a reduce-scatter node with
 * no pack before it, no workspace, every gradient read by one bucket and
 * none living to the end. With the optimizer on the device (ZeRO-3,
 * params offloaded) the gradients stay whole: no bucket. ZeRO-3 with
 * nothing offloaded but the optimizer gathers nothing. At -O2 the ZeRO-2
 * plan is at most the ZeRO-1 one, which it gets replayed with the buckets
 * (dist_shard_seed), and that replay is a valid schedule of its Dag. */
static void
test_one_rank(void **state)
{
	NetOptions o;
	Run r, r1;
	Schedule s;
	MemEval ev;
	int nbucket = 0, ngrad = 0;

	(void)state;
	run(&r, 1, 2, true, false, 4096);
	for (int v = 0; v < r.an.d.nnode; v++) {
		const DagNode *n = &r.an.d.node[v];
		if (dag_xfer(&r.an.d, v)->comm == COMM_NONE)
			continue;
		assert_int_equal(dag_xfer(&r.an.d, v)->comm, COMM_REDUCE_SCATTER);
		assert_int_equal(dag_xfer(&r.an.d, v - 1)->comm == COMM_PACK, false);
		assert_int_equal(dag_workspace(&r.an.d, v), 0);
		nbucket++;
		ngrad += n->nin;
	}
	assert_int_equal(nbucket, 3);   /* one 8 KiB gradient each */
	for (int t = 0; t < r.an.d.nt; t++)
		if (r.an.d.t[t].cat == CAT_PARAM_GRADS && r.an.d.t[t].ir_tensor >= 0) {
			assert_false(r.an.d.t[t].to_end);
			ngrad--;
		}
	assert_int_equal(ngrad, 0);
	ar_free(&r.a);

	run(&r, 1, 3, false, true, 4096);
	assert_int_equal(r.an.dist.nbuckets, 0);
	assert_int_equal(r.an.dist.grad_shards, 0);
	assert_true(r.an.dist.nunits > 0);
	ar_free(&r.a);
	run(&r, 1, 3, true, false, 4096);
	assert_int_equal(r.an.dist.nunits, 0);
	ar_free(&r.a);

	memset(&o, 0, sizeof o);
	o.dist = (DistOptions){1, 2, 4096, true, false, 0, SYNC_AUTO};
	run_at(&r, net4, &o, 2);
	o.dist.zero = 1;
	run_at(&r1, net4, &o, 2);
	assert_true(r.an.plan.peak <= r1.an.plan.peak);
	assert_true(dist_shard_seed(&r.an.d, &r1.an.d, &r1.an.plan.sched, &s, &r.a));
	assert_int_equal(s.n, r1.an.plan.sched.n + 4);
	assert_int_equal(vf_evaluate(&r.an.d, &s, &ev, true, &r.a), ST_OK);
	assert_true(ev.peak <= r1.an.plan.peak);
	/* a Dag with no buckets is no ZeRO-2 Dag to replay onto */
	assert_false(dist_shard_seed(&r1.an.d, &r.an.d, &r.an.plan.sched, &s, &r.a));
	ar_free(&r1.a);
	ar_free(&r.a);
}

/* --accumulate 2 at 2 ranks, ZeRO-2, one bucket of every gradient: with
 * --grad-sync each the shards are persistent and the micro-batch's full
 * gradients are made in the backward; with last the full gradients are
 * there from the start (the micro-batch before accumulated into them),
 * the bucket makes the shards, and the lower bound counts the full
 * gradients until the pack; auto keeps the lower plan. */
static void
test_grad_sync(void **state)
{
	NetOptions o;
	Run r[3];
	const GradSync mode[3] = {SYNC_EACH, SYNC_LAST, SYNC_AUTO};
	int64_t grads = 0;

	(void)state;
	memset(&o, 0, sizeof o);
	o.accumulate = 2;
	o.accumulate_set = true;
	for (int m = 0; m < 3; m++) {
		o.dist = (DistOptions){2, 2, 1 << 20, false, false, 0, mode[m]};
		run_at(&r[m], net3, &o, 2);
	}
	const Dag *de = &r[0].an.d, *dl = &r[1].an.d;
	assert_int_equal(de->persistent[CAT_PARAM_GRADS], P * 4 / 2);   /* f32 shards */
	assert_int_equal(dl->persistent[CAT_PARAM_GRADS], 0);
	for (int t = 0; t < de->nt; t++)
		if (de->t[t].cat == CAT_PARAM_GRADS && de->t[t].ir_tensor >= 0)
			assert_false(de->t[t].from_start || de->t[t].to_end);
	for (int t = 0; t < dl->nt; t++) {
		if (dl->t[t].cat != CAT_PARAM_GRADS)
			continue;
		if (dl->t[t].ir_tensor >= 0) {
			assert_true(dl->t[t].from_start);
			assert_false(dl->t[t].to_end);
			grads += dl->t[t].bytes;
		} else {
			assert_true(dl->t[t].to_end);   /* a shard the bucket makes */
		}
	}
	assert_int_equal(grads, P * 4);
	int64_t persistent = 0;
	for (int c = 0; c < CAT_COUNT; c++)
		persistent += dl->persistent[c];
	assert_true(r[1].an.lb.bytes >= persistent + grads);
	assert_true(r[1].an.plan.peak >= r[1].an.lb.bytes);
	int keep = r[1].an.plan.peak < r[0].an.plan.peak;
	assert_int_equal(r[2].an.plan.peak, r[keep].an.plan.peak);
	assert_int_equal(r[2].an.g.settings.dist.grad_sync, mode[keep]);
	for (int m = 0; m < 3; m++)
		ar_free(&r[m].a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_deepspeed_formulas),
		cmocka_unit_test(test_zero1_padding),
		cmocka_unit_test(test_buckets),
		cmocka_unit_test(test_gathers),
		cmocka_unit_test(test_root_and_head),
		cmocka_unit_test(test_stages_with_ranks),
		cmocka_unit_test(test_stage_units),
		cmocka_unit_test(test_prefetch),
		cmocka_unit_test(test_comm_nodes),
		cmocka_unit_test(test_one_gathered_copy),
		cmocka_unit_test(test_one_rank),
		cmocka_unit_test(test_grad_sync),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
