/* report/json.c -- the JSON report of memory-model.md: one object on
 * stdout with every required field, plus a few extra ones (lower bound,
 * fragmentation, the arena's aligned lower bound and overhead, per-step
 * kinds of the chosen plan). Byte figures are
 * integers. Reads an Analysis; writes text only. */
#include <inttypes.h>
#include <string.h>

#include "report.h"

static void
put_key(FILE *out, const char *key)
{
	json_put_str(out, key);
	fputs(": ", out);
}

static void
header(const Analysis *an, FILE *out)
{
	const Graph *g = &an->g;
	const Settings *s = &g->settings;

	fputs("{\n  ", out);
	put_key(out, "file");
	json_put_str(out, g->file ? g->file : "");
	fprintf(out, ", \"mode\": \"%s\", \"opt_level\": %d,\n", g->train ? "train" : "infer",
	        an->goal.level);
	fprintf(out, "  \"optimizer\": \"%s\", \"precision\": \"%s\", \"accumulate\": %" PRId64 ",\n",
	        optimizer_name(s->optimizer), s->mixed ? "mixed" : "declared", s->accumulate);
	if (s->pytorch)
		fprintf(out, "  \"runtime\": \"%s\",\n", s->pytorch_cpu ? "pytorch-cpu" : "pytorch");
	fputs("  \"dims\": {", out);
	for (int i = 0; i < g->ndims; i++) {
		fputs(i ? ", " : "", out);
		put_key(out, g->dims[i].name);
		fprintf(out, "%" PRId64, g->dims[i].declared);
	}
	fputs("},\n", out);
	if (an->gpu)
		gpu_report_json(an, out);       /* --gpu: report/gpu.c */
}


/* --times: what the generated program measured (report.c's "measured"). */
static void
measured_json(const Measured *m, FILE *out)
{
	fputs("  \"measured\": {\"file\": ", out);
	json_put_str(out, m->file);
	fputs(", \"clock\": ", out);
	json_put_str(out, m->clock);
	fputs(", \"mode\": ", out);
	json_put_str(out, m->mode);
	fprintf(out, ",\n               \"forward_ms\": %.6f, \"backward_ms\": %.6f, "
	        "\"recompute_ms\": %.6f,\n               \"measured_peak\": %" PRId64
	        ", \"predicted_peak\": %" PRId64 ", \"ok\": %s},\n", m->forward_ms,
	        m->backward_ms, m->recompute_ms, m->measured_peak, m->predicted_peak,
	        m->ok ? "true" : "false");
}

static void
params_and_flops(const Analysis *an, FILE *out)
{
	const int64_t *p = an->d.persistent;
	ReportTotals rt = report_totals(an);
	int64_t count = rt.params, grads = rt.grad_bytes, fwd = rt.forward, bwd = rt.backward;
	int64_t frozen = rt.frozen;

	/* "frozen" only where there are frozen params: older reports keep
	 * their exact shape */
	fprintf(out, "  \"params\": {\"count\": %" PRId64, count);
	if (frozen)
		fprintf(out, ", \"frozen\": %" PRId64 ", \"trainable\": %" PRId64,
		        frozen, count - frozen);
	/* "buffers" likewise; "bytes" (the params category) includes them */
	if (rt.buffers)
		fprintf(out, ", \"buffers\": %" PRId64 ", \"buffer_bytes\": %" PRId64,
		        rt.buffers, rt.buffer_bytes);
	fprintf(out, ", \"bytes\": %" PRId64
	        ", \"master_bytes\": %" PRId64 ",\n             \"grad_bytes\": %" PRId64
	        ", \"optimizer_bytes\": %" PRId64 "},\n",
	        p[CAT_PARAMS], p[CAT_MASTER], grads, p[CAT_OPTIMIZER]);
	fprintf(out, "  \"flops\": {\"forward\": %" PRId64 ", \"backward\": %" PRId64
	        ", \"recompute\": %" PRId64 "},\n", fwd, bwd, an->ev.recompute_cost);
	if (an->measured)
		measured_json(an->measured, out);
}

/* issue 9: "baselines": the -O0, sqrt(n) and per-def checkpointing peaks
 * and recompute (null: does not apply), for -O1, -O2 and --budget; and
 * the model's lower bound and its parts, always (lower_bound_bytes is the
 * optimum under --exact). */
static void
baseline(FILE *out, const char *key, int64_t peak, int64_t cost, bool has)
{
	fprintf(out, "\"%s\": ", key);
	if (has)
		fprintf(out, "{\"peak_bytes\": %" PRId64 ", \"recompute\": %" PRId64 "}",
		        peak, cost);
	else
		fputs("null", out);
}

static void
baselines(const Analysis *an, FILE *out)
{
	const LowerBound *lb = &an->lb;

	if (an->has_baselines) {
		fputs("  \"baselines\": {", out);
		baseline(out, "O0", an->base.peak, 0, true);
		fputs(", ", out);
		baseline(out, "sqrt_n", an->sqrtn.peak, an->sqrtn.recompute_cost,
		         an->sqrtn.sched.n > 0);
		fputs(",\n                ", out);
		baseline(out, "per_def", an->perblock.peak,
		         an->perblock.recompute_cost, an->perblock.sched.n > 0);
		fputs("},\n", out);
	}
	fprintf(out, "  \"lower_bound\": {\"bytes\": %" PRId64 ", \"persistent\": %" PRId64
	        ", \"always_live\": %" PRId64 ", \"param_grads_at_end\": %" PRId64
	        ", \"last_step\": %" PRId64 ", \"largest_step\": %" PRId64
	        ", \"live_across\": %" PRId64
	        ", \"at_end\": %s},\n", lb->bytes, lb->persistent, lb->always,
	        lb->end_grads, lb->end_step, lb->step, lb->across,
	        lb->at_end ? "true" : "false");
}

static void
peaks(const Analysis *an, FILE *out)
{
	const MemEval *ev = &an->ev;

	fprintf(out, "  \"peak_bytes\": %" PRId64 ", \"baseline_peak_bytes\": %" PRId64
	        ", \"arena_bytes\": %" PRId64 ", \"peak_step\": %d,\n",
	        ev->peak, an->base.peak, an->arena_bytes, ev->peak_step);
	fprintf(out, "  \"lower_bound_bytes\": %" PRId64 ", \"fragmentation_bytes\": %" PRId64 ",\n",
	        an->plan.lower_bound, an->arena_bytes - ev->peak);
	fprintf(out, "  \"arena_lower_bound_bytes\": %" PRId64 ", \"arena_over_peak_percent\": %.4f,\n",
	        ev->arena_floor, report_over_peak(an->arena_bytes, ev->peak));
	baselines(an, out);
	fputs("  \"breakdown_at_peak\": {", out);
	for (int c = 0; c < CAT_COUNT; c++)
		fprintf(out, "%s\"%s\": %" PRId64, c ? ", " : "", memcat_name((MemCat)c),
		        ev->breakdown[c]);
	fputs("},\n", out);
}

/* The tensor and schedule arrays are a few lines per op, so they are
 * formatted into a buffer by hand: fprintf per field dominated the time of
 * a million-op report. The bytes are those fprintf would write. */
typedef struct Out {
	FILE *f;
	size_t n;
	char b[1 << 16];
} Out;

static void
o_flush(Out *o)
{
	fwrite(o->b, 1, o->n, o->f);
	o->n = 0;
}

static void
o_putc(Out *o, char c)
{
	if (o->n == sizeof o->b)
		o_flush(o);
	o->b[o->n++] = c;
}

static inline void
o_write(Out *o, const char *s, size_t n)
{
	if (sizeof o->b - o->n < n) {
		o_flush(o);
		if (n > sizeof o->b) {
			fwrite(s, 1, n, o->f);
			return;
		}
	}
	memcpy(o->b + o->n, s, n);
	o->n += n;
}

static void
o_puts(Out *o, const char *s)
{
	o_write(o, s, strlen(s));
}

/* A string literal: its length is known, so the copy is inlined. */
#define O_LIT(o, s) o_write((o), "" s, sizeof(s) - 1)

/* The body of a JSON string: what needs no escape straight into the
 * buffer, the rest through esc_json. */
static void
o_escaped(Out *o, const char *s)
{
	size_t n = json_plain_len(s);

	o_write(o, s, n);
	if (s[n]) {
		o_flush(o);
		esc_json(o->f, s + n);
	}
}

static void
o_str(Out *o, const char *s)
{
	o_putc(o, '"');
	o_escaped(o, s);
	o_putc(o, '"');
}

/* As "%" PRId64, straight into the buffer. */
static void
o_int(Out *o, int64_t v)
{
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	size_t n = (v < 0) + 1;
	char *p;

	for (uint64_t x = u; x >= 10; x /= 10)
		n++;
	if (sizeof o->b - o->n < n)
		o_flush(o);
	p = o->b + o->n;
	o->n += n;
	if (v < 0)
		*p = '-';
	p += n;
	do {
		*--p = (char)('0' + u % 10);
		u /= 10;
	} while (u);
}

static void
tensor(const Graph *g, int i, Out *o)
{
	const Tensor *t = &g->t[i];

	O_LIT(o, "    {\"id\": ");
	o_str(o, t->id);
	O_LIT(o, ", \"op\": ");
	o_str(o, ir_tensor_op(g, i));
	O_LIT(o, ", \"dtype\": \"");
	o_puts(o, dtype_name(t->dtype));
	O_LIT(o, "\", \"shape\": [");
	for (int d = 0; d < t->ndim; d++) {
		if (d)
			O_LIT(o, ", ");
		o_int(o, t->shape[d]);
	}
	O_LIT(o, "], \"bytes\": ");
	o_int(o, t->bytes);
	O_LIT(o, ", \"kind\": \"");
	o_puts(o, ir_kind_name(t->kind));
	O_LIT(o, "\", \"view_of\": ");
	if (t->view_of >= 0)
		o_str(o, g->t[t->view_of].id);
	else
		O_LIT(o, "null");
	O_LIT(o, ", \"loc\": \"");
	o_escaped(o, loc_file(t->loc) ? loc_file(t->loc) : "");
	o_putc(o, ':');
	o_int(o, t->loc.line);
	o_putc(o, ':');
	o_int(o, t->loc.col);
	O_LIT(o, "\", \"saved\": ");
	o_puts(o, t->saved ? "true}" : "false}");
}

static void
tensors(const Analysis *an, Out *o)
{
	const Graph *g = &an->g;
	bool first = true;

	O_LIT(o, "  \"tensors\": [\n");
	for (int i = 0; i < g->nt; i++) {
		TensorKind k = g->t[i].kind;
		if (k == TK_GRAD || k == TK_PARAM_GRAD)
			continue;
		if (!first)
			O_LIT(o, ",\n");
		tensor(g, i, o);
		first = false;
	}
	O_LIT(o, "\n  ],\n");
}

static void
schedule(const Analysis *an, Out *o)
{
	const MemEval *ev = &an->ev;

	O_LIT(o, "  \"schedule\": [\n");
	for (int s = 0; s < ev->nsteps; s++) {
		O_LIT(o, "    {\"kind\": \"");
		o_puts(o, step_kind_name(ev->kind[s]));
		O_LIT(o, "\", \"op\": ");
		o_str(o, an->d.node[an->plan.sched.step[s]].name);
		O_LIT(o, ", \"live_bytes\": ");
		o_int(o, ev->live_bytes[s]);
		o_puts(o, s + 1 < ev->nsteps ? "},\n" : "}\n");
	}
	O_LIT(o, "  ]\n}\n");
}

/* --ranks/--zero/--offload: "ranks": the settings and what one rank
 * holds beyond the model of one GPU (every other byte figure is per rank). */
static void
distributed(const Analysis *an, FILE *out)
{
	const DistOptions *o = &an->g.settings.dist;
	const DistStats *st = &an->dist;

	if (!dist_active(o))
		return;
	fprintf(out, "  \"ranks\": {\"count\": %d, \"zero\": %d, \"bucket_bytes\": %" PRId64
	        ", \"offload_optimizer\": %s, \"offload_params\": %s, \"grad_sync\": %s,\n"
	        "            \"buckets\": %d, \"largest_bucket_bytes\": %" PRId64
	        ", \"units\": %d, \"largest_gather_bytes\": %" PRId64 ",\n"
	        "            \"weights_whole\": %s, \"sharded_peak_bytes\": %" PRId64 ",\n"
	        "            \"host_bytes\": {",
	        o->ranks, o->zero, o->bucket, o->offload_optimizer ? "true" : "false",
	        o->offload_params ? "true" : "false",
	        !dist_sync_choice(&an->g.settings) ? "null"
	        : dist_sync_last(&an->g.settings) ? "\"last\"" : "\"each\"", st->nbuckets, st->max_bucket,
	        st->nunits, st->max_gather,
	        o->shard_weights == SHARD_WHOLE ? "true" : "false", an->sharded_peak);
	for (int c = 0; c < CAT_COUNT; c++)
		fprintf(out, "%s\"%s\": %" PRId64, c ? ", " : "", memcat_name((MemCat)c), st->host[c]);
	fputs("}},\n", out);
}

/* --stages: "pipeline" and one object per stage (with --ranks, the figures
 * of one rank of the stage); the rest of the report is the stage with the
 * largest peak. */
static void
stages(const Analysis *an, FILE *out)
{
	const PipeOptions *po = &an->g.settings.pipe;

	if (!an->nstage_rows)
		return;
	fprintf(out, "  \"pipeline\": {\"stages\": %d, \"micro_batches\": %d, \"schedule\": "
	        "\"%s\", \"reported_stage\": %d, \"ranks_per_stage\": %d},\n  \"stages\": [\n",
	        po->stages, po->micro_batches, po->gpipe ? "gpipe" : "1f1b", an->pipe.stage,
	        an->g.settings.dist.ranks);
	for (int i = 0; i < an->nstage_rows; i++) {
		const StageRow *r = &an->stage_rows[i];
		fprintf(out, "    {\"stage\": %d, \"first_block\": %d, \"last_block\": %d, "
		        "\"in_flight\": %d, \"peak_bytes\": %" PRId64 ", \"peak_step\": %d, "
		        "\"recompute\": %" PRId64 ", \"send_bytes\": %" PRId64
		        ", \"recv_bytes\": %" PRId64 ",\n     \"breakdown_at_peak\": {",
		        r->stage, r->first_block, r->last_block, r->in_flight, r->peak,
		        r->peak_step, r->recompute_cost, r->send_bytes, r->recv_bytes);
		for (int c = 0; c < CAT_COUNT; c++)
			fprintf(out, "%s\"%s\": %" PRId64, c ? ", " : "", memcat_name((MemCat)c),
			        r->breakdown[c]);
		fprintf(out, "}}%s\n", i + 1 < an->nstage_rows ? "," : "");
	}
	fputs("  ],\n", out);
}

/* Activations per layer, from report_layers like the human report and the
 * HTML page (top-level runs too, named "(top level)"). */
static void
layers(const Analysis *an, FILE *out)
{
	ReportLayers ly;
	Arena a;

	ar_init(&a);
	report_layers(an, &ly, &a);
	fputs("  \"layers\": [", out);
	for (int i = 0; i < ly.n; i++) {
		const ReportLayer *y = &ly.l[i];
		fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", out);
		json_put_str(out, report_layer_name(y, &a));
		fprintf(out, ", \"saved_bytes\": %" PRId64 ", \"live_at_peak_bytes\": %" PRId64
		        ", \"kept\": %d, \"kept_bytes\": %" PRId64 ", \"recomputed\": %d"
		        ", \"recomputed_bytes\": %" PRId64 "}", y->saved, y->at_peak, y->nkept,
		        y->kept, y->nrec, y->recomputed);
	}
	fputs(ly.n ? "\n  ],\n" : "],\n", out);
	ar_free(&a);
}

void
report_json(const Analysis *an, FILE *out)
{
	header(an, out);
	params_and_flops(an, out);
	distributed(an, out);
	stages(an, out);
	peaks(an, out);
	layers(an, out);
	static Out o;   /* 64 KiB: not on the stack */

	o.f = out;
	o.n = 0;
	tensors(an, &o);
	schedule(an, &o);
	o_flush(&o);
}
