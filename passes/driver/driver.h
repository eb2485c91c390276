/* passes/driver/driver.h -- the driver: the pipeline (analyze.c, the one
 * function that runs every pass in order), the reports (report.c for
 * people, json.c for programs), the Checkmate run (cm_run.c) and the
 * command line (main.c).
 */
#ifndef REMAT_DRIVER_H
#define REMAT_DRIVER_H

#include "ir.h"
#include "dag.h"
#include "frontend.h"
#include "graphpass.h"
#include "eval.h"
#include "plan.h"
#include "import.h"
#include "codegen.h"

/* ---------------------------------------------------------------- passes/driver/analyze.c */
/* --stages: one pipeline stage's figures, for the stage table. */
typedef struct StageRow {
	int stage, first_block, last_block, in_flight;
	int64_t peak, recompute_cost, send_bytes, recv_bytes;
	int peak_step;
	int64_t breakdown[CAT_COUNT];
} StageRow;

/* One compilation: the graph, its Dag, the plan and what liveness found. */
typedef struct Analysis {
	Graph g;
	Dag d;
	PlanGoal goal;
	PlanResult plan;
	MemEval ev;             /* the chosen schedule */
	MemEval base;           /* the -O0 schedule, for baseline_peak_bytes */
	/* the baselines beside -O1/-O2/--budget plans (has_baselines); a
	 * baseline with sched.n 0 does not apply to the graph */
	bool has_baselines;
	PlanResult sqrtn, perblock;
	LowerBound lb;
	DistStats dist;         /* --ranks/--zero/--offload: what one rank holds */
	PipeStats pipe;         /* --stages: the stage this analysis is of */
	const StageRow *stage_rows;     /* --stages: every stage (this is the */
	int nstage_rows;                /* one with the largest peak), or 0 */
	const struct GpuCheck *gpu;     /* --gpu: verdict in the reports, or NULL;
	                                   set by main after analyze */
	int64_t arena_bytes;
	double seconds;         /* wall time of the whole analysis */
} Analysis;

/* The passes, in pipeline order, as -d names them. */
typedef enum Pass {
	PASS_INSTANTIATE, PASS_SHAPE, PASS_AUTODIFF, PASS_LOWER, PASS_PLAN,
	PASS_LIVENESS, PASS_MEMPLAN, PASS_COUNT
} Pass;
const char *pass_name(Pass p);          /* "instantiate", ... */
int pass_from_name(const char *s);      /* -1 if unknown */

/* What analyze does between passes: dumps (bit 1 << Pass each, to
 * dump_out) and the invariant checks (graph_check, dag_check,
 * dag_check_schedule; a violation is an internal error, exit 4). */
typedef struct PassOptions {
	unsigned dump;
	FILE *dump_out;
	bool check;
} PassOptions;
/* Whether checks are on by default: in debug builds (REMAT_DEBUG) and when
 * the environment has REMAT_CHECK=1 (make check sets it). */
bool pass_checks_default(void);

/* Runs instantiate -> shape_infer -> autodiff -> lower -> plan -> liveness
 * -> memory plan. Returns an exit status: 0, 1 (errors in the input,
 * reported to d), 3 (no schedule fits the budget; an->plan holds the
 * smallest peak found). With verify, checks every evaluation with vf_check
 * and returns 4 on a mismatch. po may be NULL: no dumps, default checks. */
int analyze(const Program *p, const char *file, const NetOptions *o,
            const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d,
            const PassOptions *po);

/* ---------------------------------------------------------------- passes/driver/report.c */
typedef struct ReportOptions {
	int top;                /* tensors listed at the peak */
	bool exact_bytes;       /* print every size in bytes too */
} ReportOptions;

void report_human(const Analysis *an, const ReportOptions *ro, FILE *out);

/* Parameter elements, param-gradient bytes and FLOPs of one step, as both
 * reports print them. */
typedef struct ReportTotals {
	int64_t params, grad_bytes, forward, backward;
} ReportTotals;
ReportTotals report_totals(const Analysis *an);
/* Human size: "1.50 GiB", "512 B". buf needs 32 bytes. */
char *report_size(int64_t bytes, char *buf);
/* "data parallel: 8 ranks, ZeRO stage 3, ...": the settings line. */
void dist_settings_line(const DistOptions *o, FILE *out);

/* ---------------------------------------------------------------- passes/driver/json.c */
/* --json: the report of memory-model.md as one JSON object. */
void report_json(const Analysis *an, FILE *out);


/* ---------------------------------------------------------------- passes/driver/gpu.c */
/* "Fits on my card": card presets, the caching allocator's rounding
 * estimate, and the verdict line (docs/runtime-pytorch.md). */
typedef struct GpuPreset {
	const char *name;       /* "H100-80GB" */
	int64_t bytes;          /* total memory, vendor's figure */
} GpuPreset;
typedef struct GpuCheck {
	const GpuPreset *preset;
	int64_t reserve;        /* CUDA context and library workspaces */
} GpuCheck;
#define GPU_DEFAULT_RESERVE ((int64_t)1 << 30)  /* 1 GiB */
const GpuPreset *gpu_preset(const char *name);  /* NULL if unknown */
const char *gpu_preset_names(void);
int64_t gpu_round(int64_t bytes);       /* one caching-allocator block */
int64_t gpu_reserved(const Dag *d, const MemEval *ev);
void gpu_report_human(const Analysis *an, FILE *out);
void gpu_report_json(const Analysis *an, FILE *out);

/* ---------------------------------------------------------------- passes/driver/emit_torch.c */
/* The plan as torch.utils.checkpoint wrapping of def calls; writes path (a
 * Python helper) unless NULL, and one report line to report unless NULL.
 * Returns an exit status. */
int emit_torch(const Analysis *an, const char *path, FILE *report, Arena *a);

/* ---------------------------------------------------------------- passes/driver/graph_json.c */
/* --graph-json: the instantiated graph (ops with inputs and attributes,
 * tensors with shapes) as one JSON object. */
void graph_json(const Graph *g, FILE *out);

/* ---------------------------------------------------------------- passes/driver/stages.c */
/* analyze(), and with --stages K one analysis per stage: fills an with the
 * stage whose peak is largest and an->stage_rows with every stage. Exit
 * status as analyze's (3 when some stage misses the budget). */
int analyze_stages(const Program *p, const char *file, const NetOptions *o,
                   const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d,
                   const PassOptions *po);

/* ---------------------------------------------------------------- passes/driver/zero_table.c */
/* --zero-table: the per-rank peak for ZeRO stages 0-3 and ranks 1, 2, 4,
 * ... up to max(8, --ranks), each a whole analysis at goal's level.
 * Returns 0, or 1 when an analysis fails. */
int zero_table(const Program *prog, const char *file, const NetOptions *net,
               const PlanGoal *goal, bool check, FILE *out);

/* ---------------------------------------------------------------- passes/driver/cm_run.c */
/* remat --import checkmate FILE.json: imports, plans for goal, prints the
 * human report (or JSON with json=true) to out, checks with vf_check when
 * verify is set. Returns the exit status (0, 1 bad file, 3 budget unmet, 4). */
int cm_run(const char *path, const PlanGoal *goal, bool json, bool verify,
           FILE *out);


#endif
