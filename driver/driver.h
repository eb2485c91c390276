/* driver/driver.h -- the command line and the passes. One compilation
 * is a Job. analyze.c runs every pass on it in order: analyze_graph (the
 * network to its DAG), then analyze_dag (the DAG to a plan, its
 * evaluation, the baselines and the memory plan). The re-drivers analyze
 * a copy of the job with one field changed: stages.c (each pipeline
 * stage), sweep.c, zero_table.c and max_batch.c; cm_run.c runs an imported
 * Checkmate DAG through analyze_dag. cli.c reads the command line into
 * Options; main.c reads the input, analyzes it and writes what was asked
 * (its table of outputs), every file through outfile.c; progress.c draws
 * the progress line.
 */
#ifndef REMAT_DRIVER_H
#define REMAT_DRIVER_H

#include "frontend.h"
#include "checkmate.h"
#include "codegen.h"
#include "onnx.h"
#include "report.h"

/* ---------------------------------------------------------------- driver/analyze.c */
/* The passes, in pass order, as -d names them. */
typedef enum Pass {
	PASS_INSTANTIATE, PASS_SHAPE, PASS_AUTODIFF, PASS_LOWER, PASS_PLAN,
	PASS_LIVENESS, PASS_MEMPLAN, PASS_COUNT
} Pass;
const char *pass_name(Pass p);          /* "instantiate", ... */
int pass_from_name(const char *s);      /* -1 if unknown */

/* What analyze does between passes: dumps (bit 1 << Pass each, to
 * dump_out, stdout when NULL) and the invariant checks (graph_check,
 * dag_check, dag_check_schedule; a violation is ST_INTERNAL). */
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

/* One compilation: what to analyze and how. */
typedef struct Job {
	const Program *prog;    /* the parsed source; NULL for --import checkmate */
	const char *file;       /* the input's name in reports and messages */
	NetOptions net;         /* -D, --infer, ..., --ranks, --stages */
	PlanGoal goal;          /* -O, --budget, --max-recompute, --exact */
	bool verify;            /* replay every evaluation through vf_check */
	PassOptions passes;     /* -d, --check */
	struct SeedMemo *seeds; /* analyze_choice: the stage-below plans its
	                           two analyses share; NULL: none */
	bool no_arena;          /* analyze_choice: no memory plan yet; only
	                           the plan kept gets one */
} Job;

/* main: arena chunks mapped while the syntax tree lives */
void heap_for_tree(void);

/* instantiate -> shape_infer -> autodiff -> lower (with the pipeline
 * stage and the ranks' share): an->g and an->d, an->pipe, an->dist. */
Status analyze_graph(const Job *job, Analysis *an, Arena *a, Diag *d);
/* The base evaluation and lower bound, the plan for job->goal, its
 * evaluation, the baselines and (unless job->no_arena) the memory plan,
 * from an->d. ST_NO_FIT when no schedule meets the budget (an->plan holds
 * the smallest peak found); ST_INTERNAL on a broken invariant or, with
 * job->verify, a disagreement of the evaluators. */
Status analyze_dag(const Job *job, Analysis *an, Arena *a);
/* Both, timed in an->seconds; errors in the input go to d. */
Status analyze(const Job *job, Analysis *an, Arena *a, Diag *d);
/* --dump-ir and --graph-json: the graph instantiated and shaped, and its
 * loss checked, without autodiff. */
Status analyze_shapes(const Job *job, Graph *g, Arena *a, Diag *d);
/* The one message for ST_NO_FIT, on stderr: the budget, the smallest peak. */
void no_fit_error(const Analysis *an);

/* ---------------------------------------------------------------- driver/stages.c */
/* analyze(), and with --stages K one analysis per stage: fills an with the
 * stage whose peak is largest and an->stage_rows with every stage.
 * ST_NO_FIT when some stage misses the budget. */
Status analyze_stages(const Job *job, Analysis *an, Arena *a, Diag *d);
/* -o with --stages K: every stage analysed again (warnings quiet), the
 * program of the K stages written to f (codegen/emit.c). ST_INTERNAL when
 * writing fails. */
Status stages_program(const Job *job, FILE *f);
/* analyze_stages of the job again with NAME=value among the -D overrides
 * (none when name is NULL), without dumps or --verify, warnings quiet and
 * diagnostics to msgs (stderr when NULL), into an and the arena a, which
 * it initialises and the caller frees. */
Status analyze_probe(const Job *job, const char *name, int64_t value, FILE *msgs,
                     Analysis *an, Arena *a);

/* ---------------------------------------------------------------- driver/zero_table.c */
/* --zero-table: the per-rank peak for ZeRO stages 0-3 and ranks 1, 2, 4,
 * ... up to max(8, --ranks), each a whole analysis at the job's level.
 * ST_ERROR when an analysis fails. */
Status zero_table(const Job *job, FILE *out);

/* ---------------------------------------------------------------- driver/sweep.c */
/* Parses a sweep's values into out (at most max); returns the count, or -1
 * with a message in err. */
int sweep_parse(const char *values, int64_t *out, int max, char *err, size_t n);
/* --sweep NAME=VALUES: analyzes the job at each value and prints the table
 * on out, whose last column says whether each fits the goal's --budget,
 * or without one the card of --gpu or the --max-batch size as --max-batch
 * judges them (fit_target; size -1: neither, no column); with plot, the
 * chart of the peaks through out_write. */
Status sweep_run(const Job *job, const char *spec, const GpuCheck *gpu, int64_t size,
                 const char *plot, FILE *out);

/* ---------------------------------------------------------------- driver/max_batch.c */
/* What every batch question is judged by (gpu_fits): --gpu's card
 * (gpu->preset set, size 0), that card with SIZE for tensors (size > 0),
 * or without --gpu a card of SIZE bytes, no reserve, of unknown
 * generation. g.preset points into the struct: it stays where it is made. */
typedef struct FitTarget {
	GpuCheck g;
	GpuPreset card;
	char name[32];
} FitTarget;
void fit_target(const GpuCheck *gpu, int64_t size, FitTarget *t);
/* --max-batch: the largest batch that fits fit_target(gpu, size), printed
 * on out; an is the analysis at the source's batch. ST_NO_FIT when none
 * fits. */
Status max_batch(const Job *job, const GpuCheck *gpu, int64_t size, const Analysis *an,
                 FILE *out);

/* ---------------------------------------------------------------- driver/cm_run.c */
/* remat --import checkmate FILE.json: imports job->file, plans it for
 * job->goal (analyze_dag) and prints the human report (or JSON with json)
 * on out. */
Status cm_run(const Job *job, bool json, FILE *out);

/* ---------------------------------------------------------------- driver/outfile.c */
/* The output policy (docs/limits.md, "Output files"): files written safely (temporary file
 * + rename for regular files, symlinks followed; in place for devices and
 * pipes; "-" for stdout; a signal ignored at start stays ignored). Every
 * function prints the reason of a failure and returns ST_ERROR. */
typedef struct OutFile {
	FILE *f;
	const char *path;       /* as given */
	char *target;           /* the real file renamed onto, or NULL */
	char *tmp;              /* the temporary file, or NULL */
} OutFile;

/* Whether out is the regular file that is the input in (same device and
 * inode: a symlink or a hard link to it counts; in "-" is stdin's
 * descriptor). */
bool out_is_input(const char *out, const char *in);
/* Whether a and b name one regular file: an existing one by inode, a new
 * one by its directory's inode and its name ("x" and "./x" are one). */
bool out_same_file(const char *a, const char *b);
Status out_open(OutFile *o, const char *path);
Status out_commit(OutFile *o);
void out_abort(OutFile *o);     /* removes the temporary file */

/* Writes path through a temporary file beside it: fn writes the contents
 * to f and returns non-zero on failure; the file appears (rename) only when
 * fn, the writes and the close all succeeded. */
typedef int (*OutWriter)(FILE *f, const void *ctx);
Status out_write(const char *path, OutWriter fn, const void *ctx);

/* ---------------------------------------------------------------- driver/progress.c */
/* A progress line on stderr, only when stderr is a terminal: after a phase
 * has run for a second, "remat: LABEL... 2.3 s" is redrawn 4 times a second
 * (from a timer signal, so the planners need no hooks) until the label
 * changes or progress_end() erases it. */
void progress_begin(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void progress_end(void);

/* ---------------------------------------------------------------- driver/times.c */
/* --times FILE.json: what a generated program measured. times_read checks
 * every field (located errors on stderr, at most max bytes, 1 MiB cap);
 * times_check warns when the file is of another plan or reported a
 * MISMATCH. */
Status times_read(const char *path, size_t max, Arena *a, Measured *m);
void times_check(const Measured *m, const Analysis *an);

/* ---------------------------------------------------------------- driver/cli.c */
/* The command line, read and checked. */
typedef struct Options {
	const char *input;      /* the input file as given, "-" for stdin */
	Job job;                /* -D ..., -O ..., --verify, -d, --check; main
	                           sets prog and file once the input is read */
	bool checkmate;         /* --import checkmate */
	bool onnx;              /* --import onnx: frontend/onnx */
	OnnxOptions onnx_opt;   /* --params, --loss, --emit-net, --max-input */
	size_t max_input;       /* --max-input SIZE: the .net reader's cap */
	bool stats;             /* --stats: time and peak RSS on stderr */
	/* the outputs (main.c's table) */
	bool dump_ir, graph_json, json, zero_table;
	const char *out;        /* -o: generated CUDA C */
	const char *emit_torch; /* --emit-torch FILE.py */
	const char *plot, *html, *trace, *memviz, *dot, *csv;
	bool stdout_taken;      /* an output file is "-": the report (human or
	                           --json, or the --sweep, --zero-table or
	                           --max-batch table) goes to stderr */
	bool dot_backward;      /* --dot-backward: the backward ops too */
	bool dot_full;          /* --dot-full: every def call, none collapsed */
	const char *sweep;      /* --sweep NAME=VALUES */
	const char *times;      /* --times FILE.json: a program's measured times */
	int64_t max_batch;      /* --max-batch SIZE, MAX_BATCH_CARD without a
	                           size (the --gpu card's), or -1 */
	ReportOptions report;   /* --top, --bytes */
	GpuCheck gpu;           /* --gpu, --reserve; preset NULL: none */
	/* flags given, for cli.c's checks */
	bool level_set, prefetch_set, shard_weights_set, top_set, bytes_set, max_recompute_set;
} Options;

#define MAX_BATCH_CARD 0
/* Reads argv into o; a usage error exits 2 with a message, --help and
 * --version exit 0. */
void cli_parse(Options *o, int argc, char **argv);

#endif
