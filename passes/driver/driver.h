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
#include "onnx.h"

/* ---------------------------------------------------------------- passes/driver/analyze.c */
/* --stages: one pipeline stage's figures, for the stage table. */
typedef struct StageRow {
	int stage, first_block, last_block, in_flight, micro_batches;
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
	Arena *tree;            /* the syntax tree's arena, or NULL: analyze frees
	                           it once the graph is instantiated (the graph
	                           keeps no pointer into it), when the caller
	                           will not analyze the program again */
} PassOptions;
/* Whether checks are on by default: in debug builds (REMAT_DEBUG) and when
 * the environment has REMAT_CHECK=1 (make check sets it). */
bool pass_checks_default(void);

/* Runs instantiate -> shape_infer -> autodiff -> lower -> plan -> liveness
 * -> memory plan. Returns an exit status: 0, 1 (errors in the input,
 * reported to d), 3 (no schedule fits the budget; an->plan holds the
 * smallest peak found). With verify, checks every evaluation with vf_check
 * and returns 4 on a mismatch. po may be NULL: no dumps, default checks. */
/* main: arena blocks mapped while the syntax tree lives (analyze.c) */
void heap_for_tree(void);
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
	int64_t frozen;         /* elements of `frozen` params (part of params) */
	int64_t buffers, buffer_bytes;  /* `buffer` params: elements and bytes
	                           (not in params; their bytes are in the
	                           params category of the memory) */
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

/* -o with --stages K: every stage analysed again (warnings quiet), the
 * program of the K stages written to f (codegen/emit.c). Returns analyze's
 * status, or 4 when writing fails. */
int stages_program(const Program *p, const char *file, const NetOptions *o,
                   const PlanGoal *goal, const PassOptions *po, FILE *f);

/* Analyzes p again with NAME=value among the -D overrides (none when name
 * is NULL), warnings quiet and diagnostics to msgs (stderr when NULL), into
 * an and the arena a, which it initialises and the caller frees. Returns
 * analyze_stages' status. */
int analyze_probe(const Program *p, const char *file, const NetOptions *net,
                  const char *name, int64_t value, const PlanGoal *goal, bool check,
                  FILE *msgs, Analysis *an, Arena *a);

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


/* ================================================================ pictures
 * Pictures and exports of one Analysis: the memory timeline as SVG (--plot)
 * and as a self-contained HTML page (--html), files for existing viewers
 * (--trace Chrome trace events, --memory-viz PyTorch snapshot pickle, --dot
 * Graphviz, --csv), sweeps over a dim or the batch (--sweep), the progress
 * line on a terminal, and the one helper every file writer goes through
 * (out_write: temporary file and rename, so an error leaves no partial
 * file). docs/visualize.md is the user's guide. */

/* ---------------------------------------------------------------- passes/driver/outfile.c */
/* Output files written safely (temporary file + rename for
 * regular files, in place for devices and pipes, "-" for stdout). Every
 * function prints the reason of a failure and returns 1. */
typedef struct OutFile {
	FILE *f;
	const char *path;       /* as given */
	char *target;           /* the real file renamed onto, or NULL */
	char *tmp;              /* the temporary file, or NULL */
} OutFile;

bool out_is_input(const char *out, const char *in); /* same inode */
int out_open(OutFile *o, const char *path);
int out_commit(OutFile *o);
void out_abort(OutFile *o);     /* removes the temporary file */

/* Writes path through a temporary file beside it: fn writes the contents
 * to f and returns non-zero on failure; the file appears (rename) only when
 * fn, the writes and the close all succeeded. Reports on stderr. Returns 0,
 * or 1 (the file cannot be created or written; the reason is printed). */
typedef int (*OutWriter)(FILE *f, const void *ctx);
int out_write(const char *path, OutWriter fn, const void *ctx);

/* ---------------------------------------------------------------- passes/driver/progress.c */
/* A progress line on stderr, only when stderr is a terminal: after a phase
 * has run for a second, "remat: LABEL... 2.3 s" is redrawn 4 times a second
 * (from a timer signal, so the planners need no hooks) until the label
 * changes or progress_end() erases it. */
void progress_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_end(void);

/* ---------------------------------------------------------------- passes/driver/timeline.c */
/* Per-step bytes by category, step by step, without a per-step scan of the
 * instances: a cursor adds the instances a step produces and drops those
 * whose last step has passed (a bucket list by end step), so one walk over
 * the schedule costs O(steps + instances). */
typedef struct VizCursor {
	const Dag *d;
	const MemEval *ev;
	int next;               /* the step viz_cursor_step returns next */
	int *end_head;          /* [nsteps] first instance ending there, or -1 */
	int *end_next;          /* [ninst] next instance with the same end */
	int64_t run[CAT_COUNT]; /* owned bytes of the live instances */
} VizCursor;

void viz_cursor_init(VizCursor *c, const Dag *d, const MemEval *ev, Arena *a);
/* Fills cat[] with step c->next's bytes per category (persistent buffers,
 * live instances by their tensor's category, the step's temporaries); they
 * sum to ev->live_bytes of that step. Returns the step, or -1 at the end. */
int viz_cursor_step(VizCursor *c, int64_t cat[CAT_COUNT]);

/* One point of a downsampled timeline: the steps [lo, hi) in one bucket,
 * represented by the step with the most memory, so the peak survives. */
typedef struct VizPoint {
	int lo, hi;             /* steps in the bucket */
	int step;               /* the bucket's largest step */
	int64_t cat[CAT_COUNT]; /* its bytes per category */
	int64_t total;          /* its live_bytes */
	int64_t base;           /* most -O0 memory in the bucket, the -O0
	                           schedule stretched to this one's length; -1:
	                           no -O0 curve (or no -O0 step lands here) */
	unsigned kinds;         /* bit StepKind: kinds of steps in the bucket */
	int *top;               /* [ntop] largest live instances at .step, or -1 */
} VizPoint;

typedef struct VizTimeline {
	int n;                  /* points */
	VizPoint *p;
	int nsteps;
	bool has_base;          /* a plan is shown: the -O0 curve is drawn */
	int ntop;               /* tensors listed per point (0: none) */
	int64_t ymax;           /* largest value drawn (peaks, budget) */
} VizTimeline;

/* The timeline of an's chosen schedule in at most maxpts points, with the
 * -O0 curve when the plan differs from it (goal.level > 0), and the ntop
 * largest live instances of each point's step. */
void viz_timeline(const Analysis *an, int maxpts, int ntop, VizTimeline *tl,
                  Arena *a);

/* Where a step's op comes from: the .net line of its IR op, or 0. */
int viz_step_line(const Analysis *an, int step);
/* The .net line of the tensor an instance holds, or 0. */
int viz_tensor_line(const Analysis *an, int dag_tensor);
/* Label of the settings for titles: "tiny.net: train, sgd, declared
 * precision, -O2, B=8 IN=8". */
char *viz_settings(const Analysis *an, Arena *a);
/* The instances of step s with owned bytes, largest first (at most n,
 * n <= 0: all); returns the count; out holds instance indices. */
int viz_live_at(const MemEval *ev, int s, int *out, int n);

/* What the chosen schedule does with each activation (Dag tensor index):
 * VIZ_KEPT, its forward instance lives into the backward pass (a
 * checkpoint); VIZ_RECOMPUTED, a recompute step makes it again. */
enum { VIZ_KEPT = 1, VIZ_RECOMPUTED = 2 };
unsigned char *viz_tensor_status(const Analysis *an, Arena *a);

/* ---------------------------------------------------------------- passes/driver/svg.c */
typedef struct VizStyle {
	int64_t budget;         /* a dashed line, or -1 */
	bool html;              /* inside the HTML page: ids for the script, no
	                           XML prolog */
} VizStyle;
/* The timeline chart: stacked categories, shaded phases, the peak marked,
 * the -O0 curve and the budget line. */
void viz_svg_timeline(const Analysis *an, const VizTimeline *tl,
                      const VizStyle *st, FILE *f);
/* Axis helpers shared by the timeline and the sweep chart. */
typedef struct VizAxis {
	double lo, hi;          /* data range */
	double px0, px1;        /* pixels */
} VizAxis;
double viz_map(const VizAxis *ax, double v);
void viz_svg_begin(FILE *f, int w, int h, const char *title, bool prolog);
void viz_svg_yaxis(FILE *f, const VizAxis *y, double x0, double x1);
void viz_svg_xaxis(FILE *f, const VizAxis *x, double y0, const char *label);
/* Writes s escaped for XML text or attributes. */
void viz_xml(FILE *f, const char *s);
const char *viz_cat_color(MemCat c);

/* ---------------------------------------------------------------- the writers */
typedef struct VizOptions {
	const char *plot, *html, *trace, *memviz, *dot, *csv;
	bool dot_backward;      /* --dot-backward: the backward ops too */
	const char *sweep;      /* --sweep NAME=VALUES */
} VizOptions;

int viz_write_plot(FILE *f, const void *an);     /* svg.c */
int viz_write_html(FILE *f, const void *an);     /* html.c */
int viz_write_trace(FILE *f, const void *an);    /* trace.c */
int viz_write_memviz(FILE *f, const void *an);   /* memviz.c */
int viz_write_csv(FILE *f, const void *an);      /* csv.c */
int viz_write_dot(FILE *f, const void *ctx);     /* dot.c: ctx is VizDot */
typedef struct VizDot {
	const Analysis *an;
	bool backward;
} VizDot;

/* ---------------------------------------------------------------- passes/driver/viz.c */
/* The CLI: option codes main.c lists in its getopt table, their parsing,
 * and writing every file asked for after one analysis. */
enum {
	VIZ_OPT_PLOT = 700, VIZ_OPT_HTML, VIZ_OPT_TRACE, VIZ_OPT_MEMVIZ,
	VIZ_OPT_DOT, VIZ_OPT_DOT_BACKWARD, VIZ_OPT_CSV, VIZ_OPT_SWEEP
};
#define VIZ_LONG_OPTIONS \
	{"plot", required_argument, NULL, VIZ_OPT_PLOT}, \
	{"html", required_argument, NULL, VIZ_OPT_HTML}, \
	{"trace", required_argument, NULL, VIZ_OPT_TRACE}, \
	{"memory-viz", required_argument, NULL, VIZ_OPT_MEMVIZ}, \
	{"dot", required_argument, NULL, VIZ_OPT_DOT}, \
	{"dot-backward", no_argument, NULL, VIZ_OPT_DOT_BACKWARD}, \
	{"csv", required_argument, NULL, VIZ_OPT_CSV}, \
	{"sweep", required_argument, NULL, VIZ_OPT_SWEEP}
#define VIZ_USAGE \
	"  --plot FILE.svg        memory timeline (with --sweep: peak per value)\n" \
	"  --html FILE.html       self-contained page: timeline, layers, plan\n" \
	"  --trace FILE.json      Chrome trace events (Perfetto, chrome://tracing)\n" \
	"  --memory-viz FILE.pickle  snapshot for PyTorch's memory_viz\n" \
	"  --dot FILE.dot         graph for Graphviz (--dot-backward: with backward)\n" \
	"  --csv FILE.csv         one row per step, bytes per category\n" \
	"  --sweep NAME=VALUES    analyze each value of a dim or the batch:\n" \
	"                         8,16,32 | 8..128*2 | 128..1024+128 | 128:1024:128\n"

/* Returns true when c is a viz option (stored in v). */
bool viz_option(VizOptions *v, int c, const char *arg);
bool viz_any_file(const VizOptions *v);
/* Writes every file v asks for; returns 0 or the first failure's status. */
int viz_write_files(const VizOptions *v, const Analysis *an);

/* ---------------------------------------------------------------- passes/driver/sweep.c */
typedef struct SweepArgs {
	const Program *prog;
	const char *file;
	const NetOptions *net;
	const PlanGoal *goal;
	int64_t fit;            /* --budget or --max-batch size, or -1 */
	bool fit_is_budget;
	const char *spec;       /* NAME=VALUES */
	const char *plot;       /* --plot, or NULL */
} SweepArgs;
/* Parses a sweep's values into out (at most max); returns the count, or -1
 * with a message in err. */
int sweep_parse(const char *values, int64_t *out, int max, char *err, size_t n);
/* Runs the sweep, prints its table on out; returns an exit status. */
int sweep_run(const SweepArgs *s, FILE *out);

#endif
