/* passes/json.c -- the JSON report of memory-model.md: one object on
 * stdout with every required field, plus a few extra ones (lower bound,
 * fragmentation, per-step kinds of the chosen plan). Byte figures are
 * integers. Reads an Analysis; writes text only. */
#include <inttypes.h>
#include <string.h>

#include "dag.h"

/* Writes the characters of s escaped for a JSON string. */
static void
put_escaped(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
}

static void
put_str(FILE *out, const char *s)
{
	fputc('"', out);
	put_escaped(out, s);
	fputc('"', out);
}

static void
put_key(FILE *out, const char *key)
{
	put_str(out, key);
	fputs(": ", out);
}

static void
header(const Analysis *an, FILE *out)
{
	const Graph *g = &an->g;
	const Settings *s = &g->settings;

	fputs("{\n  ", out);
	put_key(out, "file");
	put_str(out, g->file ? g->file : "");
	fprintf(out, ", \"mode\": \"%s\", \"opt_level\": %d,\n", g->train ? "train" : "infer",
	        an->goal.level);
	fprintf(out, "  \"optimizer\": \"%s\", \"precision\": \"%s\", \"accumulate\": %" PRId64 ",\n",
	        optimizer_name(s->optimizer), s->mixed ? "mixed" : "declared", s->accumulate);
	fputs("  \"dims\": {", out);
	for (int i = 0; i < g->ndims; i++) {
		fputs(i ? ", " : "", out);
		put_key(out, g->dims[i].name);
		fprintf(out, "%" PRId64, g->dims[i].declared);
	}
	fputs("},\n", out);
}

static void
params_and_flops(const Analysis *an, FILE *out)
{
	const Graph *g = &an->g;
	const int64_t *p = an->d.persistent;
	int64_t count = 0, grads = 0, fwd = 0, bwd = 0;

	for (int i = 0; i < g->nt; i++) {
		if (g->t[i].kind == TK_PARAM)
			count += g->t[i].numel;
		if (g->t[i].kind == TK_PARAM_GRAD)
			grads += g->t[i].bytes;
	}
	for (int o = 0; o < g->nop; o++) {
		fwd += g->op[o].flops;
		if (g->op[o].has_backward)
			bwd += g->op[o].bwd_flops;
	}
	fprintf(out, "  \"params\": {\"count\": %" PRId64 ", \"bytes\": %" PRId64
	        ", \"master_bytes\": %" PRId64 ",\n             \"grad_bytes\": %" PRId64
	        ", \"optimizer_bytes\": %" PRId64 "},\n",
	        count, p[CAT_PARAMS], p[CAT_MASTER], grads, p[CAT_OPTIMIZER]);
	fprintf(out, "  \"flops\": {\"forward\": %" PRId64 ", \"backward\": %" PRId64
	        ", \"recompute\": %" PRId64 "},\n", fwd, bwd, an->ev.recompute_cost);
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
	fputs("  \"breakdown_at_peak\": {", out);
	for (int c = 0; c < CAT_COUNT; c++)
		fprintf(out, "%s\"%s\": %" PRId64, c ? ", " : "", memcat_name((MemCat)c),
		        ev->breakdown[c]);
	fputs("},\n", out);
}

static void
tensor(const Graph *g, int i, FILE *out)
{
	const Tensor *t = &g->t[i];

	fputs("    {\"id\": ", out);
	put_str(out, t->id);
	fputs(", \"op\": ", out);
	put_str(out, ir_tensor_op(g, i));
	fprintf(out, ", \"dtype\": \"%s\", \"shape\": [", dtype_name(t->dtype));
	for (int d = 0; d < t->ndim; d++)
		fprintf(out, "%s%" PRId64, d ? ", " : "", t->shape[d]);
	fprintf(out, "], \"bytes\": %" PRId64 ", \"kind\": \"%s\", \"view_of\": ", t->bytes,
	        ir_kind_name(t->kind));
	if (t->view_of >= 0)
		put_str(out, g->t[t->view_of].id);
	else
		fputs("null", out);
	fputs(", \"loc\": \"", out);
	put_escaped(out, t->loc.file ? t->loc.file : "");
	fprintf(out, ":%d:%d\", \"saved\": %s}", t->loc.line, t->loc.col,
	        t->saved ? "true" : "false");
}

static void
tensors(const Analysis *an, FILE *out)
{
	const Graph *g = &an->g;
	bool first = true;

	fputs("  \"tensors\": [\n", out);
	for (int i = 0; i < g->nt; i++) {
		TensorKind k = g->t[i].kind;
		if (k == TK_GRAD || k == TK_PARAM_GRAD)
			continue;
		fputs(first ? "" : ",\n", out);
		tensor(g, i, out);
		first = false;
	}
	fputs("\n  ],\n", out);
}

static void
schedule(const Analysis *an, FILE *out)
{
	const MemEval *ev = &an->ev;

	fputs("  \"schedule\": [\n", out);
	for (int s = 0; s < ev->nsteps; s++) {
		fprintf(out, "    {\"kind\": \"%s\", \"op\": ", step_kind_name(ev->kind[s]));
		put_str(out, an->d.node[an->plan.sched.step[s]].name);
		fprintf(out, ", \"live_bytes\": %" PRId64 "}%s\n", ev->live_bytes[s],
		        s + 1 < ev->nsteps ? "," : "");
	}
	fputs("  ]\n}\n", out);
}

void
report_json(const Analysis *an, FILE *out)
{
	header(an, out);
	params_and_flops(an, out);
	peaks(an, out);
	tensors(an, out);
	schedule(an, out);
}
