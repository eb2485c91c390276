/* driver/stages.c -- `--stages K`: one analysis per pipeline stage
 * (passes/graph/pipeline.c builds each stage's DAG), a row per stage for the
 * reports, and the full analysis of the stage with the largest peak, which
 * the reports then describe. --budget holds when every stage fits;
 * --max-batch asks for the largest peak of any stage. analyze_probe is the
 * one way the driver analyzes a copy of the job with another setting
 * (--max-batch, --sweep, --zero-table). Reads the Job; writes the
 * Analysis and the rows (in the caller's arena). */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* The job's stage s: a copy of the job whose pipeline stage is s. */
static Job
stage_job(const Job *job, int s)
{
	Job j = *job;

	j.net.pipe.stage = s;
	/* the K stages share one analysis's search work (rm_work_share) */
	j.goal.work_share = 1.0 / job->net.pipe.stages;
	return j;
}

/* The job without dumps: a stage analysed again prints none twice. */
static Job
quiet_job(const Job *job, int s)
{
	Job j = stage_job(job, s);

	j.passes.dump = 0;
	return j;
}

static void
fill_row(StageRow *r, const Analysis *an)
{
	memset(r, 0, sizeof *r);
	r->stage = an->pipe.stage;
	r->first_block = an->pipe.first_block;
	r->last_block = an->pipe.last_block;
	r->in_flight = an->pipe.in_flight;
	r->micro_batches = an->pipe.micro_batches;
	r->send_bytes = an->pipe.send_bytes;
	r->recv_bytes = an->pipe.recv_bytes;
	r->peak = an->ev.peak;
	r->peak_step = an->ev.peak_step;
	r->recompute_cost = an->ev.recompute_cost;
	memcpy(r->breakdown, an->ev.breakdown, sizeof r->breakdown);
}

Status
analyze_stages(const Job *job, Analysis *an, Arena *a, Diag *d)
{
	int K = job->net.pipe.stages;
	Status st = ST_OK;
	StageRow *rows;
	Arena *kept = NULL;     /* the largest peak's analysis so far */
	Analysis cur;

	if (K <= 1)
		return analyze(job, an, a, d);
	rows = ar_alloc(a, sizeof *rows * (size_t)K);
	/* each stage in an arena of its own; the one with the largest peak
	 * (the first on ties) stays for the reports, rather than being
	 * analyzed a second time: that was one analysis in K + 1 */
	for (int s = 0; s < K; s++) {
		Job js = stage_job(job, s);
		Arena *sa = ar_child(a);
		Status r = analyze(&js, &cur, sa, d);
		if (r == ST_ERROR || r == ST_INTERNAL) {
			ar_free(sa);
			return r;
		}
		if (r == ST_NO_FIT)
			st = ST_NO_FIT;
		fill_row(&rows[s], &cur);
		if (kept && cur.ev.peak <= an->ev.peak) {
			ar_free(sa);
			continue;
		}
		if (kept)
			ar_free(kept);
		kept = sa;
		*an = cur;
	}
	an->stage_rows = rows;
	an->nstage_rows = K;
	return st;
}

/* The program receives each activation's gradient from one later stage:
 * an activation that several later stages read is refused, clearly. */
static Status
one_gradient_sender(const Analysis *an)
{
	const Dag *d = &an->d;

	for (int v = 0; v < d->nnode; v++) {
		const DagXfer *x = dag_xfer(d, v);
		if (x->pipe == PIPE_RECV_GRAD && x->npeer > 1) {
			fprintf(stderr, "remat: -o --stages: stages %d and %d both read '%s' of stage %d "
			        "and send its gradient back; the program receives it from one stage "
			        "(move the cut with --stage-blocks)\n", x->peer[0],
			        x->peer[1], d->node[v].name, an->pipe.stage);
			return ST_ERROR;
		}
	}
	return ST_OK;
}

/* The stages' analyses live together until the program is written: codegen
 * reads each stage's plan, and every stage's section is in the one file. */
Status
stages_program(const Job *job, FILE *f)
{
	int K = job->net.pipe.stages, s;
	Arena *ar = xcalloc((size_t)K, sizeof *ar);
	Analysis *an = xcalloc((size_t)K, sizeof *an);
	CgStage *cs = xcalloc((size_t)K, sizeof *cs);
	Status st = ST_OK;
	Diag d;

	diag_init(&d, NULL, stderr);
	d.quiet_warnings = true;
	for (s = 0; s < K && st == ST_OK; s++) {
		Job js = quiet_job(job, s);
		Status r;
		js.verify = false;
		ar_init(&ar[s]);
		r = analyze(&js, &an[s], &ar[s], &d);
		st = r == ST_ERROR || r == ST_INTERNAL ? r : one_gradient_sender(&an[s]);
		cs[s] = (CgStage){&an[s].g, &an[s].d, &an[s].plan.sched, &an[s].ev,
		                  an[s].arena_bytes};
	}
	if (st == ST_OK && cg_emit_pipeline(cs, K, f))
		st = ST_INTERNAL;
	while (s-- > 0)
		ar_free(&ar[s]);
	free(ar);
	free(an);
	free(cs);
	return st;
}

Status
analyze_probe(const Job *job, const char *name, int64_t value, FILE *msgs,
              Analysis *an, Arena *a)
{
	const NetOptions *net = &job->net;
	Job j = *job;
	DimOverride *defs;
	Diag d;

	j.verify = false;
	j.passes = (PassOptions){0, NULL, job->passes.check, NULL};
	ar_init(a);
	if (name) {             /* NAME=value replaces or joins the -D overrides */
		defs = ar_alloc(a, sizeof *defs * (size_t)(net->ndefs + 1));
		j.net.ndefs = 0;
		for (int i = 0; i < net->ndefs; i++)
			if (strcmp(net->defs[i].name, name))
				defs[j.net.ndefs++] = net->defs[i];
		defs[j.net.ndefs++] = (DimOverride){name, value};
		j.net.defs = defs;
	}
	diag_init(&d, NULL, msgs ? msgs : stderr);
	d.quiet_warnings = true;
	return analyze_stages(&j, an, a, &d);
}
