/* report/report.c -- the human report: settings, bytes per parameter,
 * FLOPs, the peak with its breakdown, the tensors live at the peak, the
 * activation memory of each block (outermost call), and what -O1/-O2 chose
 * to keep and to recompute.
 *
 * Reads an Analysis (graph, Dag, chosen and baseline evaluations); writes
 * text only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report.h"

double
report_over_peak(int64_t arena, int64_t peak)
{
	return peak > 0 ? 100.0 * (double)(arena - peak) / (double)peak : 0.0;
}

char *
report_size(int64_t bytes, char *buf)
{
	static const char *suffix[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, 32, "%" PRId64 " B", bytes);
		return buf;
	}
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	snprintf(buf, 32, "%.2f %s", v, suffix[u]);
	return buf;
}

/* Prints a size, with the exact byte count when asked or when it matters. */
static void
put_size(FILE *out, const ReportOptions *ro, int64_t bytes, bool exact)
{
	char buf[32];

	fputs(report_size(bytes, buf), out);
	if ((exact || ro->exact_bytes) && bytes >= 1024)
		fprintf(out, " (%" PRId64 " bytes)", bytes);
}

static void
put_flops(FILE *out, int64_t f)
{
	static const char *prefix[] = {"", "K", "M", "G", "T", "P", "E"};
	double v = (double)f;
	int u = 0;

	while (v >= 1000 && u < 6) {
		v /= 1000;
		u++;
	}
	fprintf(out, u ? "%.2f %sFLOP" : "%.0f %sFLOP", v, prefix[u]);
}

static void
settings(const Analysis *an, FILE *out)
{
	const Graph *g = &an->g;
	const Settings *s = &g->settings;

	fprintf(out, "remat %s: %s", g->file, g->train ? "train" : "infer");
	if (g->train)
		fprintf(out, ", %s, %s precision, accumulate %" PRId64,
		        optimizer_name(s->optimizer), s->mixed ? "mixed" : "declared",
		        s->accumulate);
	else if (s->pytorch && s->mixed)        /* autocast's casts are in the graph */
		fputs(", mixed precision (autocast under inference_mode)", out);
	fprintf(out, ", -O%d%s\n", an->goal.level,
	        s->pytorch_cpu ? ", runtime pytorch-cpu" : s->pytorch ? ", runtime pytorch" : "");
	if (dist_active(&s->dist))
		dist_settings_line(&s->dist, out);
	if (an->nstage_rows)
		fprintf(out, "pipeline: %d stages, %d micro-batches, %s; every figure below is "
		        "stage %d's (the largest peak), blocks %d-%d, %d micro-batch%s in flight\n",
		        s->pipe.stages, s->pipe.micro_batches, s->pipe.gpipe ? "GPipe" : "1F1B",
		        an->pipe.stage, an->pipe.first_block, an->pipe.last_block,
		        an->pipe.in_flight, an->pipe.in_flight == 1 ? "" : "es");
	if (g->ndims) {
		fputs("dims:", out);
		for (int i = 0; i < g->ndims; i++)
			fprintf(out, " %s=%" PRId64 "%s", g->dims[i].name, g->dims[i].declared,
			        g->dims[i].is_batch ? " (batch)" : "");
		fputc('\n', out);
	}
	for (int i = 0; i < g->ndims && s->accumulate > 1; i++)
		if (g->dims[i].is_batch)
			fprintf(out, "micro-batch: %s=%" PRId64 " (the schedule is one of %" PRId64
			        " micro-batches)\n", g->dims[i].name, g->dims[i].value, s->accumulate);
}

static void
per_param_line(FILE *out, const char *what, int64_t bytes, int64_t count,
               const ReportOptions *ro)
{
	fprintf(out, "  %-10s ", what);
	put_size(out, ro, bytes, false);
	if (count > 0) {
		double per = (double)bytes / (double)count;
		fprintf(out, per == (double)(int64_t)per ? "  %.0f B/param\n" : "  %.2f B/param\n", per);
	} else {
		fputc('\n', out);
	}
}

/* A param's place in the totals: a buffer (persistent, not counted as a
 * parameter), or a parameter, frozen or not. */
static void
count_param(ReportTotals *r, const Tensor *t)
{
	if (t->buffer) {
		r->buffers += ir_numel(t);
		r->buffer_bytes += t->bytes;
		return;
	}
	r->params += ir_numel(t);
	r->frozen += t->frozen ? ir_numel(t) : 0;
}

/* A pipeline stage holds the params its operations read, and their
 * gradients. */
static void
stage_totals(const Analysis *an, ReportTotals *r)
{
	const Dag *d = &an->d;

	for (int i = 0; i < d->npersistent; i++)
		if (d->persistent_cat[i] == CAT_PARAMS)
			count_param(r, &an->g.t[d->persistent_ir[i]]);
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].cat == CAT_PARAM_GRADS)
			r->grad_bytes += d->t[t].bytes;
	/* the stage's FLOPs for one micro-batch: its DAG holds in_flight copies */
	r->forward = d->forward_cost / an->pipe.in_flight;
	r->backward = (d->total_cost - d->forward_cost) / an->pipe.in_flight;
}

/* The whole model's params, gradients and FLOPs. */
static void
model_totals(const Graph *g, ReportTotals *r)
{
	for (int i = 0; i < g->nt; i++) {
		if (g->t[i].kind == TK_PARAM)
			count_param(r, &g->t[i]);
		if (g->t[i].kind == TK_PARAM_GRAD)
			r->grad_bytes += g->t[i].bytes;
	}
	for (int o = 0; o < g->nop; o++) {
		r->forward += g->op[o].flops;
		if (g->op[o].has_backward)
			r->backward += g->op[o].bwd_flops;
	}
}

ReportTotals
report_totals(const Analysis *an)
{
	const Graph *g = &an->g;
	ReportTotals r = {0};

	if (g->settings.pipe.stages > 1)        /* the stage's own params */
		stage_totals(an, &r);
	else
		model_totals(g, &r);
	/* the shard; with --grad-sync last the full gradients held through
	 * the step are the larger state (the shards come at its end) */
	if (dist_grad_shards(&g->settings.dist) && !dist_sync_last(&g->settings))
		r.grad_bytes = an->dist.grad_shards;
	return r;
}

void
dist_settings_line(const DistOptions *o, FILE *out)
{
	char buf[32];

	fprintf(out, "data parallel: %d rank%s, ZeRO stage %d, buckets of %s", o->ranks,
	        o->ranks == 1 ? "" : "s", o->zero, report_size(o->bucket, buf));
	if (o->offload_optimizer || o->offload_params)
		fprintf(out, ", offload %s%s%s", o->offload_optimizer ? "optimizer" : "",
		        o->offload_optimizer && o->offload_params ? "," : "",
		        o->offload_params ? "params" : "");
	if (o->zero >= 2 && !dist_grad_shards(o))
		fputs(" (one rank, optimizer on the device: the gradients stay whole)", out);
	if (o->shard_weights == SHARD_WHOLE)     /* resolved at ZeRO-3 only */
		fputs(" (the weights kept whole: nothing is gathered)", out);
	else if (o->zero >= 3 && !dist_gathers(o))
		fputs(" (one rank, weights on the device: nothing is gathered)", out);
	fputs("; every figure is per rank\n", out);
}

/* --stages: one line per stage; with --ranks, each figure is one rank's of
 * the stage (every rank of a stage holds the same shards). */
static void
stages(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	int ranks = an->g.settings.dist.ranks;

	if (!an->nstage_rows)
		return;
	fprintf(out, "\npipeline stages (blocks are outermost def calls, 1 = the first)");
	if (dist_active(&an->g.settings.dist))
		fprintf(out, "; %d stages x %d rank%s, figures per rank", an->nstage_rows, ranks,
		        ranks == 1 ? "" : "s");
	fprintf(out, ":\n  %-6s %-9s %-9s %-22s %-8s %s\n", "stage", "blocks", "in flight",
	        "peak", "at step", "sends / receives per micro-batch");
	for (int i = 0; i < an->nstage_rows; i++) {
		const StageRow *r = &an->stage_rows[i];
		char blocks[32], buf[32], sb[32], rb[32];
		snprintf(blocks, sizeof blocks, "%d-%d", r->first_block, r->last_block);
		fprintf(out, "  %-6d %-9s %-9d %-22s %-8d %s / %s\n", r->stage, blocks, r->in_flight,
		        report_size(r->peak, buf), r->peak_step,
		        report_size(r->send_bytes / r->micro_batches, sb),
		        report_size(r->recv_bytes / r->micro_batches, rb));
	}
	(void)ro;
}

/* --ranks/--zero/--offload: what one rank holds beyond one GPU's model. */
static void
distributed(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	const DistStats *st = &an->dist;
	int64_t host = 0;

	if (!dist_active(&an->g.settings.dist) || !an->g.train)
		return;
	for (int c = 0; c < CAT_COUNT; c++)
		host += st->host[c];
	fputs("\ndistributed (per rank):\n", out);
	fprintf(out, "  gradient buckets   %d, the largest ", st->nbuckets);
	put_size(out, ro, st->max_bucket, true);
	fputc('\n', out);
	if (dist_sync_choice(&an->g.settings))
		fputs(dist_sync_last(&an->g.settings)
		      ? "  gradient sync      the last micro-batch reduces the full gradients "
		        "all accumulated\n"
		      : "  gradient sync      each micro-batch reduces its gradients into the "
		        "shards\n", out);
	if (st->nunits) {
		fprintf(out, "  gathered units     %d, the largest ", st->nunits);
		put_size(out, ro, st->max_gather, true);
		fputc('\n', out);
	}
	if (an->sharded_peak) {
		fputs("  weights whole      their one gathered unit, sharded, peaks at ", out);
		put_size(out, ro, an->sharded_peak, true);
		fputs(" (--shard-weights always)\n", out);
	}
	/* ZeRO-3 under a checkpointing plan: the all-gathers its recomputes
	 * run again, which the FLOPs of the recompute leave out (an
	 * all-gather costs none) but the interconnect carries */
	int regathers = 0;
	int64_t regathered = 0;
	for (int s = 0; s < an->ev.nsteps && s < an->plan.sched.n; s++) {
		int v = an->plan.sched.step[s];
		if (an->ev.kind[s] != STEP_RECOMPUTE ||
		    dag_xfer(&an->d, v)->comm != COMM_ALLGATHER)
			continue;
		regathers++;
		regathered += an->d.t[an->d.node[v].out[0]].bytes;
	}
	if (regathers) {
		fprintf(out, "  re-gathered        %d all-gathers in recomputes, ", regathers);
		put_size(out, ro, regathered, true);
		fputc('\n', out);
	}
	fputs("  host (offloaded)   ", out);
	put_size(out, ro, host, true);
	fputc('\n', out);
}


static void
parameters(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	const Graph *g = &an->g;
	const int64_t *p = an->d.persistent;
	ReportTotals rt = report_totals(an);
	int64_t count = rt.params, grads = rt.grad_bytes, total;

	int64_t frozen = rt.frozen;

	/* buffers are in the params category of the memory, not in the count */
	int64_t weights = p[CAT_PARAMS] - rt.buffer_bytes;
	total = weights + p[CAT_MASTER] + grads + p[CAT_OPTIMIZER];

	if (frozen)
		fprintf(out, "\nparameters: %" PRId64 " elements, %" PRId64 " trainable, %"
		        PRId64 " frozen (weights only: no grad, master or optimizer state)\n",
		        count, count - frozen, frozen);
	else
		fprintf(out, "\nparameters: %" PRId64 " elements\n", count);
	per_param_line(out, "weights", weights, count, ro);
	if (g->train) {
		per_param_line(out, "master", p[CAT_MASTER], count, ro);
		per_param_line(out, "grads", grads, count, ro);
		per_param_line(out, "optimizer", p[CAT_OPTIMIZER], count, ro);
		per_param_line(out, "total", total, count, ro);
	}
	if (rt.buffers) {
		fprintf(out, "buffers: %" PRId64 " elements, ", rt.buffers);
		put_size(out, ro, rt.buffer_bytes, false);
		fputs(" (persistent, not parameters: no grad, master or optimizer state)\n", out);
	}
}

static void
flops(const Analysis *an, FILE *out)
{
	ReportTotals rt = report_totals(an);
	int64_t fwd = rt.forward, bwd = rt.backward, rec = an->ev.recompute_cost;

	fputs("\nflops: forward ", out);
	put_flops(out, fwd);
	fputs(", backward ", out);
	put_flops(out, bwd);
	fputs(", recompute ", out);
	put_flops(out, rec);
	fprintf(out, " (%.1f%% of forward, %.1f%% of the step)\n",
	        fwd ? 100.0 * (double)rec / (double)fwd : 0.0,
	        fwd + bwd ? 100.0 * (double)rec / (double)(fwd + bwd) : 0.0);
}

/* --times: the generated program's times beside the FLOPs, and the rate
 * each phase ran at. */
static void
measured(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	const Measured *m = an->measured;
	ReportTotals rt = report_totals(an);
	struct { const char *name; double ms; int64_t flops; } ph[] = {
		{"forward", m->forward_ms, rt.forward},
		{"backward", m->backward_ms, rt.backward},
		{"recompute", m->recompute_ms, an->ev.recompute_cost},
	};

	fprintf(out, "measured (%s, %s mode, %s): forward %.3f ms, backward %.3f ms, "
	        "recompute %.3f ms, step %.3f ms\n", m->clock, m->mode, m->file,
	        m->forward_ms, m->backward_ms, m->recompute_ms,
	        m->forward_ms + m->backward_ms + m->recompute_ms);
	fputs("  rate:", out);
	for (size_t i = 0; i < sizeof ph / sizeof ph[0]; i++) {
		fprintf(out, "%s %s ", i ? "," : "", ph[i].name);
		if (ph[i].ms > 0 && ph[i].flops > 0) {
			put_flops(out, (int64_t)((double)ph[i].flops / (ph[i].ms / 1000)));
			fputs("/s", out);
		} else {
			fputs("-", out);
		}
	}
	fputs("\n  peak: measured ", out);
	put_size(out, ro, m->measured_peak, false);
	fprintf(out, ", %s\n", m->measured_peak == m->predicted_peak ? "= predicted"
	        : "NOT the predicted peak");
}

static const char *
step_label(const Analysis *an, int s, char *buf, size_t n)
{
	const MemEval *ev = &an->ev;
	const DagNode *node = &an->d.node[an->plan.sched.step[s]];

	snprintf(buf, n, "step %d of %d, %s %s", s, ev->nsteps,
	         step_kind_name(ev->kind[s]), node->name);
	return buf;
}

/* issue 9: one baseline's peak and recompute, beside the plan. */
static void
baseline_line(const Analysis *an, const ReportOptions *ro, const char *what,
              const PlanResult *b, const char *none, FILE *out)
{
	int64_t fwd = an->d.forward_cost;

	fprintf(out, "  %s: ", what);
	if (b->sched.n == 0) {
		fprintf(out, "n/a (%s)\n", none);
		return;
	}
	put_size(out, ro, b->peak, true);
	fputs(", recompute ", out);
	put_flops(out, b->recompute_cost);
	fprintf(out, " (%.1f%% of forward)\n",
	        fwd ? 100.0 * (double)b->recompute_cost / (double)fwd : 0.0);
}

static void
baseline_lines(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	if (!an->has_baselines)
		return;
	baseline_line(an, ro, "sqrt(n) checkpointing (-O1)", &an->sqrtn,
	              "no backward or no articulation point", out);
	baseline_line(an, ro, "per-def checkpointing", &an->perblock,
	              "no backward or no def call", out);
}

/* The bound, and in one line what it is made of. Under --exact the
 * printed bound is the optimum the search proved; the line then gives the
 * model's bound beside it. */
static void
lower_bound_lines(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	const LowerBound *lb = &an->lb;
	char buf[32];

	fputs("  lower bound: ", out);
	put_size(out, ro, an->plan.lower_bound, true);
	fputs("\n    = ", out);
	if (an->plan.lower_bound != lb->bytes)
		fprintf(out, "the optimum --exact proves; any schedule holds %s = ",
		        report_size(lb->bytes, buf));
	fprintf(out, "persistent %s", report_size(lb->persistent, buf));
	if (lb->always)
		fprintf(out, " + tensors live throughout (inputs, accumulated grads) %s",
		        report_size(lb->always, buf));
	if (lb->at_end) {
		fprintf(out, " + param grads at the end of backward %s",
		        report_size(lb->end_grads, buf));
		fprintf(out, " + the last backward step (backward %s) %s\n",
		        an->d.node[lb->end_node].name, report_size(lb->end_step, buf));
	} else if (lb->step_node >= 0 && lb->across > 0) {
		const DagNode *n = &an->d.node[lb->step_node];
		fprintf(out, " + the step (%s %s) %s",
		        n->is_backward ? "backward" : "forward", n->name,
		        report_size(lb->step, buf));
		fprintf(out, " + what lives across it (grads made before it, "
		        "inputs and gradients read after it) %s\n",
		        report_size(lb->across, buf));
	} else if (lb->step_node >= 0) {
		const DagNode *n = &an->d.node[lb->step_node];
		fprintf(out, " + the largest step (%s %s) %s\n",
		        n->is_backward ? "backward" : "forward", n->name,
		        report_size(lb->step, buf));
	} else {
		fputc('\n', out);
	}
}

static void
peak(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	const MemEval *ev = &an->ev;
	char buf[512];

	fputs("\npeak: ", out);
	put_size(out, ro, ev->peak, true);
	fprintf(out, " at %s\n", step_label(an, ev->peak_step, buf, sizeof buf));
	if (an->goal.level > 0) {
		fputs("  before remat (-O0): ", out);
		put_size(out, ro, an->base.peak, true);
		fputc('\n', out);
	}
	baseline_lines(an, ro, out);
	lower_bound_lines(an, ro, out);
	fputs("  arena: ", out);
	put_size(out, ro, an->arena_bytes, true);
	fprintf(out, ", %+.2f%% over the peak, fragmentation ",
	        report_over_peak(an->arena_bytes, ev->peak));
	put_size(out, ro, an->arena_bytes - ev->peak, false);
	/* the peak with each block rounded up to 256 bytes: no placement of
	 * these blocks does better */
	fputs("\n    aligned lower bound: ", out);
	put_size(out, ro, ev->arena_floor, true);
	if (an->gpu)
		gpu_report_human(an, out);      /* --gpu: report/gpu.c */
	fputs("\n\nbreakdown at the peak:\n", out);
	for (int c = 0; c < CAT_COUNT; c++) {
		fprintf(out, "  %-12s ", memcat_name((MemCat)c));
		put_size(out, ro, ev->breakdown[c], false);
		fputc('\n', out);
	}
}

static int
by_owned_desc(const void *a, const void *b)
{
	const Instance *x = *(Instance *const *)a, *y = *(Instance *const *)b;

	if (x->owned != y->owned)
		return x->owned < y->owned ? 1 : -1;
	return x->tensor - y->tensor;
}

/* Restores the heap h[0..k) below r: each entry sorts after its children
 * (by_owned_desc), so the root is the one that sorts last. */
static void
sift_down(Instance **h, int k, int r)
{
	for (;;) {
		int c = 2 * r + 1;
		if (c >= k)
			return;
		if (c + 1 < k && by_owned_desc(&h[c + 1], &h[c]) > 0)
			c++;
		if (by_owned_desc(&h[c], &h[r]) <= 0)
			return;
		Instance *x = h[r];
		h[r] = h[c];
		h[c] = x;
		r = c;
	}
}

/* Moves the k first of live[0..n) by by_owned_desc, sorted, into
 * live[0..k): a heap of the k first so far, so a peak with 1M tensors
 * live is not sorted whole for the ten it prints. */
static void
first_k(Instance **live, int n, int k)
{
	if (k > n)
		k = n;
	if (k <= 0)
		return;
	for (int r = k / 2 - 1; r >= 0; r--)
		sift_down(live, k, r);
	for (int i = k; i < n; i++) {
		if (by_owned_desc(&live[i], &live[0]) >= 0)
			continue;
		Instance *x = live[0];
		live[0] = live[i];
		live[i] = x;
		sift_down(live, k, 0);
	}
	qsort(live, (size_t)k, sizeof *live, by_owned_desc);
}

static bool
is_live_at(const Instance *in, int step)
{
	return in->owned > 0 && in->start <= step && step <= in->end;
}

static void
top_tensors(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	const MemEval *ev = &an->ev;
	int n = 0, ps = ev->peak_step;
	Instance **live;
	char shape[256];

	/* sized by what is live at the peak, not by every instance: a
	 * 300k-op chain has a handful live */
	for (int i = 0; i < ev->ninst; i++)
		n += is_live_at(&ev->inst[i], ps);
	live = xmalloc(sizeof *live * ((size_t)n + 1));
	n = 0;
	for (int i = 0; i < ev->ninst; i++)
		if (is_live_at(&ev->inst[i], ps))
			live[n++] = (Instance *)&ev->inst[i];
	first_k(live, n, ro->top);
	fprintf(out, "\ntensors live at the peak (%d, largest first):\n", n);
	for (int i = 0; i < n && i < ro->top; i++) {
		const DagTensor *dt = &an->d.t[live[i]->tensor];
		const Tensor *t;
		if (dt->ir_tensor < 0) {        /* a communication buffer (--zero 3) */
			fprintf(out, "  %-28s %-14s %-24s ", dt->name, "collective", "");
			put_size(out, ro, live[i]->owned, false);
			fputc('\n', out);
			continue;
		}
		t = &an->g.t[dt->ir_tensor];
		fprintf(out, "  %-28s %-14s %s%-20s ", t->id, ir_tensor_op(&an->g, dt->ir_tensor),
		        dtype_name(t->dtype), ir_shape_str(t, shape, sizeof shape));
		put_size(out, ro, live[i]->owned, false);
		fprintf(out, "  line %d", t->loc.line);
		if (live[i]->start >= 0 && ev->kind[live[i]->start] == STEP_RECOMPUTE)
			fputs(" (recomputed)", out);
		fputc('\n', out);
	}
	if (n > ro->top)
		fprintf(out, "  ... and %d more\n", n - ro->top);
	free(live);
}


/* Activation memory per layer (def instance), as report_layers counts it
 * for every writer: what backward's saved tensors hold, and what this
 * schedule holds at its peak. Top-level runs are left out: the table is
 * about def calls, and a 300k-op graph without a def prints none. */
static void
block_memory(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	ReportLayers ly;
	Arena a;
	bool any = false;

	ar_init(&a);
	report_layers(an, &ly, &a);
	for (int i = 0; i < ly.n; i++) {
		const ReportLayer *y = &ly.l[i];
		if (!y->len)
			continue;
		if (!any)
			fputs("\nactivations per layer (def instance):  saved for backward  /  live at the peak\n", out);
		any = true;
		fprintf(out, "  %-24s ", report_layer_name(y, &a));
		put_size(out, ro, y->saved, false);
		fputs("  /  ", out);
		put_size(out, ro, y->at_peak, false);
		fputc('\n', out);
	}
	ar_free(&a);
}

enum { LIST_MAX = 60, LIST_WIDTH = 78 };

/* Prints a word of a wrapped, indented list; returns the new column. */
static int
put_word(FILE *out, const char *w, int col)
{
	int n = (int)strlen(w);

	if (col > 0 && col + 1 + n > LIST_WIDTH) {
		fputc('\n', out);
		col = 0;
	}
	fprintf(out, col ? " %s" : "  %s", w);
	return col + n + (col ? 1 : 2);
}

static void
list_end(FILE *out, int n)
{
	if (n > LIST_MAX)
		fprintf(out, "\n  ... (%d in all)", n);
	fputs(n ? "\n" : "  none\n", out);
}

/* -O1 and up: which saved activations are kept from the forward pass and
 * which are recomputed. */
static void
remat_summary(const Analysis *an, FILE *out)
{
	const MemEval *ev = &an->ev;
	int first_bwd = ev->nsteps, nkept = 0, nrec = 0;
	char *recomputed = xcalloc((size_t)an->d.nt + 1, 1);

	if (an->goal.level == 0) {
		free(recomputed);
		return;
	}
	for (int s = 0; s < ev->nsteps && first_bwd == ev->nsteps; s++)
		if (ev->kind[s] == STEP_BACKWARD)
			first_bwd = s;
	for (int i = 0; i < ev->ninst; i++)
		if (ev->inst[i].start >= 0 && ev->kind[ev->inst[i].start] == STEP_RECOMPUTE)
			recomputed[ev->inst[i].tensor] = 1;
	fputs("\ncheckpoints (kept from the forward pass for backward):\n", out);
	for (int i = 0, col = 0; i < ev->ninst; i++) {
		const Instance *in = &ev->inst[i];
		const DagTensor *dt = &an->d.t[in->tensor];
		if (dt->cat != CAT_ACTIVATIONS || in->start < 0 ||
		    ev->kind[in->start] != STEP_FORWARD || in->end < first_bwd || in->owned == 0)
			continue;
		if (nkept++ < LIST_MAX)
			col = put_word(out, dt->name, col);
	}
	list_end(out, nkept);
	fputs("recomputed:\n", out);
	for (int t = 0, col = 0; t < an->d.nt; t++) {
		if (!recomputed[t])
			continue;
		if (nrec++ < LIST_MAX)
			col = put_word(out, an->d.t[t].name, col);
	}
	list_end(out, nrec);
	free(recomputed);
}

void
report_human(const Analysis *an, const ReportOptions *ro, FILE *out)
{
	settings(an, out);
	parameters(an, ro, out);
	distributed(an, ro, out);
	stages(an, ro, out);
	flops(an, out);
	if (an->measured)
		measured(an, ro, out);
	peak(an, ro, out);
	top_tensors(an, ro, out);
	block_memory(an, ro, out);
	remat_summary(an, out);
}
