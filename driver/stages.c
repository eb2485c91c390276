/* driver/stages.c -- `--stages K`: one analysis per pipeline stage
 * (passes/graph/pipeline.c builds each stage's DAG), a row per stage for the
 * reports, and the full analysis of the stage with the largest peak, which
 * the reports then describe. --budget holds when every stage fits;
 * --max-batch asks for the largest peak of any stage. analyze_probe is the
 * one way the driver analyzes the same program again with another setting
 * (--max-batch, --sweep, --zero-table). Reads the Program and options;
 * writes the Analysis and the rows (in the caller's arena). */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

static int
run_stage(const Program *p, const char *file, const NetOptions *o, int s,
          const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d,
          const PassOptions *po)
{
	NetOptions os = *o;

	os.pipe.stage = s;
	return analyze(p, file, &os, goal, verify, an, a, d, po);
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

int
analyze_stages(const Program *p, const char *file, const NetOptions *o,
               const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d,
               const PassOptions *po)
{
	int K = o->pipe.stages, worst = 0, rc = 0;
	StageRow *rows;
	int64_t peak = -1;

	if (K <= 1)
		return analyze(p, file, o, goal, verify, an, a, d, po);
	rows = ar_alloc(a, sizeof *rows * (size_t)K);
	for (int s = 0; s < K; s++) {
		Arena sa;
		int r;
		ar_init(&sa);
		r = run_stage(p, file, o, s, goal, verify, an, &sa, d, po);
		if (r == 1 || r == 4) {
			ar_free(&sa);
			return r;
		}
		if (r == 3)
			rc = 3;
		fill_row(&rows[s], an);
		if (an->ev.peak > peak) {
			peak = an->ev.peak;
			worst = s;
		}
		ar_free(&sa);
	}
	/* the dumps, if any, were printed per stage: not again */
	PassOptions quiet = po ? *po : (PassOptions){0, NULL, pass_checks_default(), NULL};
	quiet.dump = 0;
	if (run_stage(p, file, o, worst, goal, verify, an, a, d, &quiet) == 4)
		return 4;
	an->stage_rows = rows;
	an->nstage_rows = K;
	return rc;
}

/* The program receives each activation's gradient from one later stage:
 * an activation that several later stages read is refused, clearly. */
static int
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
			return 1;
		}
	}
	return 0;
}

/* The stages' analyses live together until the program is written: codegen
 * reads each stage's plan, and every stage's section is in the one file. */
int
stages_program(const Program *p, const char *file, const NetOptions *o,
               const PlanGoal *goal, const PassOptions *po, FILE *f)
{
	int K = o->pipe.stages, rc = 0, s;
	Arena *ar = xcalloc((size_t)K, sizeof *ar);
	Analysis *an = xcalloc((size_t)K, sizeof *an);
	CgStage *st = xcalloc((size_t)K, sizeof *st);
	PassOptions quiet = po ? *po : (PassOptions){0, NULL, pass_checks_default(), NULL};
	Diag d;

	quiet.dump = 0;
	diag_init(&d, NULL, stderr);
	d.quiet_warnings = true;
	for (s = 0; s < K && rc == 0; s++) {
		int r;
		ar_init(&ar[s]);
		r = run_stage(p, file, o, s, goal, false, &an[s], &ar[s], &d, &quiet);
		rc = r == 1 || r == 4 ? r : one_gradient_sender(&an[s]);
		st[s] = (CgStage){&an[s].g, &an[s].d, &an[s].plan.sched, &an[s].ev,
		                  an[s].arena_bytes};
	}
	if (rc == 0 && cg_emit_pipeline(st, K, f))
		rc = 4;
	while (s-- > 0)
		ar_free(&ar[s]);
	free(ar);
	free(an);
	free(st);
	return rc;
}

int
analyze_probe(const Program *p, const char *file, const NetOptions *net,
              const char *name, int64_t value, const PlanGoal *goal, bool check,
              FILE *msgs, Analysis *an, Arena *a)
{
	NetOptions o = *net;
	DimOverride *defs;
	Diag d;

	ar_init(a);
	if (name) {             /* NAME=value replaces or joins the -D overrides */
		defs = ar_alloc(a, sizeof *defs * (size_t)(o.ndefs + 1));
		o.ndefs = 0;
		for (int i = 0; i < net->ndefs; i++)
			if (strcmp(net->defs[i].name, name))
				defs[o.ndefs++] = net->defs[i];
		defs[o.ndefs++] = (DimOverride){name, value};
		o.defs = defs;
	}
	diag_init(&d, NULL, msgs ? msgs : stderr);
	d.quiet_warnings = true;
	return analyze_stages(p, file, &o, goal, false, an, a, &d,
	                      &(PassOptions){0, NULL, check, NULL});
}
