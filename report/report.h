/* report/report.h -- the writers of an analysis: the human report
 * (report.c), JSON (json.c), the graph as JSON (graph_json.c), the GPU
 * verdict (gpu.c), the torch.utils.checkpoint helper (emit_torch.c), and the
 * pictures and exports: the timeline (timeline.c) drawn as SVG (svg.c) and
 * HTML (html.c), Chrome trace events (trace.c), PyTorch's memory_viz
 * snapshot (memviz.c), Graphviz (dot.c) and CSV (csv.c). Every writer is
 * handed an Analysis and a FILE *; none opens a file (the driver does, through
 * driver/outfile.c). docs/visualize.md is the user's guide to the pictures.
 */
#ifndef REMAT_REPORT_H
#define REMAT_REPORT_H

#include "net.h"
#include "dag.h"
#include "graph.h"
#include "eval.h"
#include "plan.h"

/* ---------------------------------------------------------------- the analysis */
/* --stages: one pipeline stage's figures, for the stage table. */
typedef struct StageRow {
	int stage, first_block, last_block, in_flight, micro_batches;
	int64_t peak, recompute_cost, send_bytes, recv_bytes;
	int peak_step;
	int64_t breakdown[CAT_COUNT];
} StageRow;

/* One compilation: the graph, its Dag, the plan and what liveness found. */
/* What a generated program measured (its --times FILE.json, read by
 * driver/times.c): shown beside the plan's FLOPs. */
typedef struct Measured {
	const char *file;
	const char *clock;      /* "CUDA events" or "host monotonic clock" */
	const char *mode;       /* "arena" or "tracked" */
	int64_t predicted_peak, measured_peak, arena;
	double forward_ms, backward_ms, recompute_ms;
	int64_t gemm_calls;
	bool ok;                /* measured = predicted, checksums sane */
} Measured;

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
	int64_t sharded_peak;   /* ZeRO-3 under --shard-weights auto, the
	                           weights kept whole: the peak of the plan
	                           with them sharded; else 0 */
	PipeStats pipe;         /* --stages: the stage this analysis is of */
	const StageRow *stage_rows;     /* --stages: every stage (this is the */
	int nstage_rows;                /* one with the largest peak), or 0 */
	const struct GpuCheck *gpu;     /* --gpu: verdict in the reports, or NULL;
	                                   set by main after analyze */
	int64_t arena_bytes;
	double seconds;         /* wall time of the whole analysis */
	const Measured *measured;       /* --times: set by main, or NULL */
} Analysis;

/* ---------------------------------------------------------------- report/report.c */
typedef struct ReportOptions {
	int top;                /* tensors listed at the peak */
	bool exact_bytes;       /* print every size in bytes too */
} ReportOptions;

void report_human(const Analysis *an, const ReportOptions *ro, FILE *out);

/* Parameter elements, param-gradient bytes and FLOPs of one training
 * step, as both reports print them. */
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
/* How far the arena is above the peak, in percent (0 for a zero peak). */
double report_over_peak(int64_t arena, int64_t peak);
/* "data parallel: 8 ranks, ZeRO stage 3, ...": the settings line. */
void dist_settings_line(const DistOptions *o, FILE *out);

/* ---------------------------------------------------------------- report/layers.c */
/* Activations per layer, as every writer shows them (one computation, so
 * the human report, --json and --html agree). A layer is a run of
 * activations in program order with the same outermost scope: a def call
 * ("block.3"), or a "(top level)" run outside every def. */
typedef struct ReportLayer {
	const char *name;       /* the scope of its first activation */
	size_t len;             /* of the outermost scope in name, with its
	                           '.'; 0: a top-level run */
	int64_t saved;          /* storage held by backward's saved tensors:
	                           a saved view holds its base's storage,
	                           counted once, in the base's layer */
	int64_t at_peak;        /* owned bytes live at the peak step */
	int64_t kept, recomputed;       /* bytes of the activations the plan */
	int nkept, nrec;                /* keeps for backward / recomputes */
} ReportLayer;
typedef struct ReportLayers {
	int n;
	ReportLayer *l;         /* [n] in program order */
	int *of;                /* [g.nt] layer of an IR tensor, or -1 */
	unsigned char *status;  /* [d.nt] viz_tensor_status */
} ReportLayers;
void report_layers(const Analysis *an, ReportLayers *ly, Arena *a);
/* "block.3", or "(top level)". */
const char *report_layer_name(const ReportLayer *y, Arena *a);

/* ---------------------------------------------------------------- report/json.c */
/* --json: the report of memory-model.md as one JSON object. */
void report_json(const Analysis *an, FILE *out);


/* ---------------------------------------------------------------- report/gpu.c */
/* "Fits on my card": card presets, the schedule through the caching
 * allocator's model, and the verdict line (docs/runtime-pytorch.md).
 * gpu_fits is the one test of "does the step fit" behind the verdict,
 * --max-batch and --sweep's column. */
typedef struct GpuPreset {
	const char *name;       /* "H100-80GB", or a size as given ("48GiB") */
	int64_t bytes;          /* total memory, vendor's figure */
	int sm;                 /* compute capability, major * 10 + minor, or
	                           GPU_SM_UNKNOWN for a card given by its size */
} GpuPreset;
#define GPU_SM_UNKNOWN 0
typedef struct GpuCheck {
	const GpuPreset *preset;
	int64_t reserve;        /* CUDA context and library workspaces */
	CaOptions alloc;        /* PYTORCH_CUDA_ALLOC_CONF (gpu_alloc_conf) */
} GpuCheck;
#define GPU_DEFAULT_RESERVE ((int64_t)1 << 30)  /* 1 GiB */
const GpuPreset *gpu_preset(const char *name);  /* NULL if unknown */
const GpuPreset *gpu_preset_at(int i);  /* the i-th preset, NULL past the end */
const char *gpu_preset_names(void);     /* "A100-40GB A100-80GB ..." */
int64_t gpu_usable(const GpuCheck *g);  /* the card's memory less the reserve */
/* Parses PYTORCH_CUDA_ALLOC_CONF's text into o; false + why when PyTorch
 * would refuse it. */
bool gpu_alloc_conf(const char *conf, CaOptions *o, char *why, size_t n);
typedef struct GpuSim {
	CaReplay run;           /* with the device unlimited */
	bool fits;              /* run.reserved within the card less reserve */
	bool fits_by_freeing;   /* not, but with the card's memory as the
	                           limit no request fails (PyTorch frees its
	                           cached segments and retries) */
} GpuSim;
void gpu_simulate(const Analysis *an, GpuSim *sim);     /* an->gpu set */
/* gpu_simulate, and whether the verdict says "fits" (with or without
 * freeing cached segments). */
bool gpu_fits(const Analysis *an, GpuSim *sim);
void gpu_report_human(const Analysis *an, FILE *out);
void gpu_report_json(const Analysis *an, FILE *out);

/* ---------------------------------------------------------------- report/emit_torch.c */
/* The plan as torch.utils.checkpoint wrapping of def calls: writes the
 * Python helper to py unless NULL, and one report line to report unless
 * NULL (the caller checks py for write errors). */
void emit_torch(const Analysis *an, FILE *py, FILE *report, Arena *a);

/* ---------------------------------------------------------------- report/graph_json.c */
/* --graph-json: the instantiated graph (ops with inputs and attributes,
 * tensors with shapes) as one JSON object. */
void graph_json(const Graph *g, FILE *out);

/* ================================================================ pictures */
/* ---------------------------------------------------------------- report/timeline.c */
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
	int *repl_base;         /* [ninst] for an out_of_place sum (Instance.
	                           replaces): the root of the instance it
	                           replaced; NULL when no instance is a sum */
} VizCursor;

void viz_cursor_init(VizCursor *c, const Dag *d, const MemEval *ev, Arena *a);
/* Fills cat[] with step c->next's bytes per category (persistent buffers,
 * live instances by their tensor's category, the step's temporaries; at a
 * step with out_of_place sums, those viz_counted counts); they sum to
 * ev->live_bytes of that step. Returns the step, or -1 at the end. */
int viz_cursor_step(VizCursor *c, int64_t cat[CAT_COUNT]);
/* A step that makes out_of_place gradient sums (dag.h, DagAcc.out_of_place)
 * counts one of two phases in live_bytes: first its products without the
 * sums; then, with its dying inputs freed (viz_dying: the roots ending there
 * that it did not make and that no sum replaced), its largest sum
 * (viz_largest_sum, -1 when it makes none), in the second phase when that
 * is larger (viz_second_phase). viz_counted: is instance k, live at step
 * s, among what live_bytes[s] counts? */
int viz_largest_sum(const VizCursor *c, int s);
bool viz_dying(const VizCursor *c, int s, int k);
bool viz_second_phase(const VizCursor *c, int s);
bool viz_counted(const VizCursor *c, int s, int k);

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

/* ---------------------------------------------------------------- report/svg.c */
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
const char *viz_cat_color(MemCat c);

/* ---------------------------------------------------------------- the writers */
int viz_write_plot(FILE *f, const void *an);     /* svg.c */
int viz_write_html(FILE *f, const void *an);     /* html.c */
int viz_write_trace(FILE *f, const void *an);    /* trace.c */
int viz_write_memviz(FILE *f, const void *an);   /* memviz.c */
int viz_write_csv(FILE *f, const void *an);      /* csv.c */
int viz_write_dot(FILE *f, const void *ctx);     /* dot.c: ctx is VizDot */
typedef struct VizDot {
	const Analysis *an;
	bool backward;
	bool full;              /* --dot-full: every call drawn; by default the
	                           repeated calls of a def are one cluster */
} VizDot;

#endif
