/* driver/driver.h -- the command line and the pipeline: analyze.c (the
 * one function that runs every pass in order), the re-drivers that analyze
 * a program again with one setting changed (stages.c, sweep.c,
 * zero_table.c), the Checkmate run (cm_run.c), output files (outfile.c),
 * the progress line (progress.c), the picture options (viz.c) and main.c.
 */
#ifndef REMAT_DRIVER_H
#define REMAT_DRIVER_H

#include "frontend.h"
#include "checkmate.h"
#include "codegen.h"
#include "onnx.h"
#include "report.h"

/* ---------------------------------------------------------------- driver/analyze.c */
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

/* ---------------------------------------------------------------- driver/stages.c */
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

/* ---------------------------------------------------------------- driver/zero_table.c */
/* --zero-table: the per-rank peak for ZeRO stages 0-3 and ranks 1, 2, 4,
 * ... up to max(8, --ranks), each a whole analysis at goal's level.
 * Returns 0, or 1 when an analysis fails. */
int zero_table(const Program *prog, const char *file, const NetOptions *net,
               const PlanGoal *goal, bool check, FILE *out);

/* ---------------------------------------------------------------- driver/cm_run.c */
/* remat --import checkmate FILE.json: imports, plans for goal, prints the
 * human report (or JSON with json=true) to out, checks with vf_check when
 * verify is set. Returns the exit status (0, 1 bad file, 3 budget unmet, 4). */
int cm_run(const char *path, const PlanGoal *goal, bool json, bool verify,
           FILE *out);


/* ---------------------------------------------------------------- driver/outfile.c */
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

/* ---------------------------------------------------------------- driver/progress.c */
/* A progress line on stderr, only when stderr is a terminal: after a phase
 * has run for a second, "remat: LABEL... 2.3 s" is redrawn 4 times a second
 * (from a timer signal, so the planners need no hooks) until the label
 * changes or progress_end() erases it. */
void progress_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_end(void);

/* ---------------------------------------------------------------- driver/viz.c */
/* The CLI side of the pictures: which files to write after one analysis. */
typedef struct VizOptions {
	const char *plot, *html, *trace, *memviz, *dot, *csv;
	bool dot_backward;      /* --dot-backward: the backward ops too */
	const char *sweep;      /* --sweep NAME=VALUES */
} VizOptions;

/* ---------------------------------------------------------------- driver/viz.c */
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

/* ---------------------------------------------------------------- driver/sweep.c */
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
