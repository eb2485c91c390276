/* passes/dag.h -- the plain DAG that schedules are planned and evaluated on.
 *
 * Nothing here knows about .net: passes/lower.c builds a Dag from the
 * training graph (forward ops, backward ops, gradients) and passes/checkmate.c
 * builds one from a published benchmark graph. The liveness evaluator, the
 * planners (-O1, -O2, --exact), the verifier and the memory planner only see
 * this, so they can be tested on any graph.
 *
 * Semantics (memory-model.md, "Liveness"), stated for the Dag:
 * - A schedule is a list of steps; each step runs one node. A node's first
 *   step is its "forward" step; later steps of a recomputable node are
 *   "recompute" steps; a node with once=true appears exactly once.
 * - A step USES each tensor in node.in, and each DagAcc target that already
 *   has a live instance (see below). Each use is served by the most recent
 *   earlier production of that tensor; a use with none makes the schedule
 *   invalid (tensors with from_start=true are produced "before step 0").
 * - A step PRODUCES a new instance of each tensor in node.out.
 * - An instance is live from its producing step through the last step it
 *   serves, both included; one that serves no step is live only during its
 *   producing step. A from_start instance that serves no step and is not
 *   to_end occupies no memory at all. A to_end instance stays live through
 *   the last step.
 * - Views own no bytes. A tensor with view_src >= 0 is a view: the instance a
 *   step produces aliases the instance of view_src that served that same
 *   step (followed to its root, so views of views alias the root), and that
 *   base instance stays live as long as the view instance is.
 * - Accumulation (gradients): for each DagAcc {t, view_src} of a step: if an
 *   instance of t was produced earlier (or t is from_start), the step uses
 *   it and pays a temporary of t.bytes during the step; otherwise the step
 *   produces t -- as a view of view_src's serving instance when
 *   acc.view_src >= 0, else as an owning instance. (The spec says "when a
 *   live instance exists"; gradients are never recomputed and the
 *   contribution itself uses the instance, so an earlier instance is live.)
 * - Memory at a step = persistent bytes + owned bytes of live instances +
 *   the step's temporaries (node.workspace + accumulation temporaries).
 *   Peak = max over steps; peak_step = the first step reaching it.
 *
 * How passes/lower.c maps a training graph onto a Dag:
 * - params are not Dag tensors: their bytes (and master copy, optimizer
 *   state) are persistent[], listed buffer by buffer in persistent_buf[]
 *   (order: see Dag); a view of a param is a DagTensor with
 *   persistent_view set. Each IR input is a from_start tensor (CAT_INPUTS).
 * - forward op o (program order) -> one node, once=false, name = id of
 *   o.out[0], cost = o.flops, workspace = o.workspace, in = o's distinct
 *   non-param inputs, out = o.out[] then o.extra[] (CAT_ACTIVATIONS).
 * - backward of o (for ops with has_backward, reverse program order) -> one
 *   node, once=true, is_backward=true, fwd_plus1 = o's forward node + 1,
 *   same name, cost = o.bwd_flops,
 *   workspace = o.workspace; in = grad(out[i]) for each output that has a
 *   grad (none for the loss op), then o.saves[] minus params; acc = one
 *   entry per distinct input a that needs grad, {grad(a), view_src =
 *   grad(o.out[0]) when o is reshape/flatten/transpose/permute and a is not
 *   a param, else -1}. grad(param) is CAT_PARAM_GRADS and to_end (and
 *   from_start when accumulate > 1); other grads are CAT_GRADIENTS.
 * - base_order: forward nodes in program order, then backward nodes in
 *   reverse program order (the -O0 schedule). In infer mode there are no
 *   backward nodes and every `output` is to_end.
 * - DagNode.ir_op and DagTensor.ir_tensor point back into the Graph (for a
 *   gradient, ir_tensor is the TK_GRAD/TK_PARAM_GRAD tensor).
 */
#ifndef REMAT_DAG_H
#define REMAT_DAG_H

#include "ir.h"

/* Memory categories, in report order. */
typedef enum MemCat {
	CAT_PARAMS, CAT_MASTER, CAT_OPTIMIZER, CAT_PARAM_GRADS, CAT_INPUTS,
	CAT_ACTIVATIONS, CAT_GRADIENTS, CAT_TEMPORARIES,
	CAT_COUNT
} MemCat;

const char *memcat_name(MemCat c);      /* "params", "master", ... (JSON keys) */

typedef struct DagTensor {
	const char *name;
	int64_t bytes;          /* logical size; a view instance owns 0 */
	int view_src;           /* static view: tensor it aliases, else -1 */
	bool persistent_view;   /* a view of a param (transpose(wte)): owns
	                           nothing and keeps nothing alive */
	MemCat cat;
	bool from_start;        /* produced before step 0 (inputs; param grads
	                           under accumulation) */
	bool to_end;            /* once produced, live through the last step
	                           (infer outputs, param grads) */
	int ir_tensor;          /* the IR tensor it stands for, or -1 */
} DagTensor;

typedef struct DagAcc {
	int tensor;             /* the gradient contributed to */
	int view_src;           /* produce as a view of this tensor's serving
	                           instance when no live instance exists, or -1 */
} DagAcc;

typedef struct DagNode {
	const char *name;       /* schedules name ops by their first output */
	int64_t cost;           /* FLOPs (or Checkmate cost_cpu) */
	int64_t workspace;      /* temporary bytes while it runs */
	bool once;              /* runs exactly once, never recomputed (backward) */
	bool is_backward;       /* labelled "backward" in schedules */
	int nin;
	int *in;                /* tensors used (deduplicated) */
	int nout;
	int *out;               /* tensors produced */
	int nacc;
	DagAcc *acc;            /* gradient contributions */
	int ir_op;              /* the IR op it stands for, or -1 */
	int fwd_plus1;          /* a backward node: its forward node + 1, which
	                           must run before it (memory-model.md); 0 when
	                           there is none (zeroed nodes stay valid) */
} DagNode;

typedef struct Dag {
	DagTensor *t;
	int nt;
	DagNode *node;
	int nnode;
	int *base_order;        /* the -O0 / reference schedule: every node once */
	int nbase;
	int64_t persistent[CAT_COUNT]; /* params, master, optimizer */
	/* The persistent buffers one by one, live for the whole step, as
	 * passes/lower.c lists them: for each param in IR order, its weight
	 * (CAT_PARAMS); then, in train mode, its f32 master copy (CAT_MASTER;
	 * mixed precision and a param not declared f32) and one buffer per
	 * optimizer state value (CAT_OPTIMIZER; none for sgd). Per category
	 * they sum to persistent[]. A Dag built elsewhere may list none
	 * (npersistent 0); the memory planner then places persistent[] as one
	 * block. */
	int npersistent;
	int64_t *persistent_buf;        /* [npersistent] bytes */
	MemCat *persistent_cat;         /* [npersistent] */
	int *persistent_ir;             /* [npersistent] the param's IR tensor */
	int64_t forward_cost;   /* sum of cost over recomputable (!once) nodes */
	int64_t total_cost;     /* sum of cost over all nodes */
} Dag;

/* A schedule: node indices in execution order. */
typedef struct Schedule {
	int n;
	int *step;
} Schedule;

typedef enum StepKind { STEP_FORWARD, STEP_RECOMPUTE, STEP_BACKWARD } StepKind;
const char *step_kind_name(StepKind k); /* "forward", "recompute", "backward" */

/* One produced instance of a tensor. */
typedef struct Instance {
	int tensor;
	int start, end;         /* live steps, inclusive; start -1: from before step 0 */
	int64_t owned;          /* bytes it owns (0 for views) */
	int base;               /* views: root instance it aliases, else itself */
	int64_t offset;         /* memory planner: arena offset, or -1 */
} Instance;

/* What the liveness evaluator finds for one schedule. */
typedef struct MemEval {
	bool valid;
	char error[256];        /* why it is invalid */
	int nsteps;
	StepKind *kind;         /* [nsteps] */
	int64_t *live_bytes;    /* [nsteps] memory at each step */
	int64_t *temp_bytes;    /* [nsteps] temporaries at each step */
	int64_t peak;
	int peak_step;
	int64_t breakdown[CAT_COUNT];   /* at peak_step */
	int64_t recompute_cost; /* cost of recompute steps */
	Instance *inst;
	int ninst;
	int *step_prod;         /* [nsteps + 2] CSR: instances produced by step s
	                           are inst[step_prod[s+1] .. step_prod[s+2]);
	                           from_start instances (s = -1) come first, in
	                           inst[step_prod[0] .. step_prod[1]). Within a
	                           step: node.out order, then the acc entries
	                           that produce, in node.acc order. */
	int64_t *temp_offset;   /* memory planner: [nsteps] arena offset of the
	                           step's temporary block (mp_temp_layout), or
	                           -1 when the step has no temporaries */
	int64_t *persistent_offset; /* memory planner: [Dag.npersistent] arena
	                           offset of each persistent buffer */
} MemEval;

/* ---------------------------------------------------------------- passes/dag.c */
void dag_finish(Dag *d);                /* computes forward_cost, total_cost */
Schedule dag_base_schedule(const Dag *d, Arena *a);
StepKind dag_step_kind(const Dag *d, const Schedule *s, int i, const bool *seen);
double dag_now(void);                   /* monotonic clock, in seconds */

/* ---------------------------------------------------------------- passes/lower.c */
/* Builds the Dag of g's training step (or inference pass), per the
 * conventions above. g has been through shape_infer and autodiff. */
void lower_graph(const Graph *g, Dag *d, Arena *a);

/* ---------------------------------------------------------------- passes/liveness.c */
/* Evaluates a schedule in O(steps + uses). Fills *ev (arrays in a). */
void lv_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a);

/* ---------------------------------------------------------------- passes/verify.c */
/* An independent, simple (quadratic) evaluator for --verify. Returns true
 * when it agrees with ev on validity, every step's live_bytes, the peak and
 * peak_step; otherwise writes the first disagreement to why. */
bool vf_check(const Dag *d, const Schedule *s, const MemEval *ev,
              char *why, size_t n);
/* The verifier's own evaluator: fills valid, error, nsteps, kind,
 * live_bytes, temp_bytes, peak, peak_step and recompute_cost of ev (arrays
 * in a); inst, step_prod and breakdown stay empty. */
void vf_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a);
/* Evaluates s into ev with lv_eval; with verify, replays it through
 * vf_check. Reports an invalid schedule or a disagreement on stderr and
 * returns 4; otherwise 0. */
int vf_evaluate(const Dag *d, const Schedule *s, MemEval *ev, bool verify,
                Arena *a);

/* ---------------------------------------------------------------- passes/remat*.c */
typedef struct PlanGoal {
	int level;              /* 0: base schedule; 1: -O1; 2, 3: -O2 */
	double max_recompute;   /* recompute cost <= this x forward_cost; <0: inf */
	int64_t budget;         /* minimize recompute s.t. peak <= budget; -1: none */
	bool exact;             /* --exact: exhaustive search (small graphs) */
} PlanGoal;

typedef struct PlanResult {
	Schedule sched;
	int64_t peak;           /* as lv_eval finds it */
	int64_t recompute_cost;
	bool fits;              /* budget met (always true without a budget) */
	int64_t lower_bound;    /* a peak no schedule can beat */
	const char *error;      /* NULL, or why no schedule was made (set by
	                           rm_plan_exact: graph too large, work limit);
	                           sched.n is 0 then */
} PlanResult;

/* Plans a schedule for the goal. Without a budget: minimizes peak subject to
 * the recompute cap. With a budget: minimizes recompute subject to peak <=
 * budget; when nothing fits, fits=false and sched/peak are the smallest-peak
 * schedule found. */
PlanResult rm_plan(const Dag *d, const PlanGoal *goal, Arena *a);
int64_t rm_lower_bound(const Dag *d);
/* passes/remat_exact.c: the true optimum under the model, by exhaustive
 * search with pruning; for small graphs (tests, --exact). */
PlanResult rm_plan_exact(const Dag *d, const PlanGoal *goal, Arena *a);

/* ---------------------------------------------------------------- passes/checkmate.c */
/* Reads a Checkmate/Moccasin node-link JSON graph. Returns 0, or -1 with a
 * message in err. */
int cm_import(const char *path, Dag *d, Arena *a, char *err, size_t errn);
/* remat --import checkmate FILE.json: imports, plans for goal, prints the
 * human report (or JSON with json=true) to out, checks with vf_check when
 * verify is set. Returns the exit status (0, 1 bad file, 3 budget unmet, 4). */
int cm_run(const char *path, const PlanGoal *goal, bool json, bool verify,
           FILE *out);

/* ---------------------------------------------------------------- codegen/memplan.c */
/* Assigns 256-byte-aligned offsets to every persistent buffer (first, for
 * the whole step; d may be NULL for none), every owning instance and every
 * step's temporary block, so that two blocks overlap only when never live at
 * the same step. Returns arena bytes (largest end offset), which is at least
 * the peak of ev. O(n log n) in the number of blocks. */
int64_t mp_plan(const Dag *d, MemEval *ev, Arena *a);
/* codegen/memplan.c: the layout of step s's temporary block, which holds
 * ev->temp_bytes[s] bytes exactly: the accumulation temporaries by element
 * size, largest first (so each is naturally aligned without padding), then
 * the workspace. off[j] (j < node.nacc) is acc j's offset in the block, or
 * -1 when that entry produces its gradient; off[nacc] is the workspace's.
 * Returns the block's bytes. mp_plan plans the blocks too
 * (ev->temp_offset), so the arena covers every byte the MemEval counts. */
int64_t mp_temp_layout(const Dag *d, const MemEval *ev, const Schedule *s,
                       int step, int64_t *off);

/* ---------------------------------------------------------------- codegen/emit.c */
/* Writes one self-contained CUDA C program (also plain C with -DREMAT_HOST)
 * that runs schedule s and checks the measured peak against ev.
 * Returns 0, or non-zero on an I/O error. */
int cg_emit(const Graph *g, const Dag *d, const Schedule *s, const MemEval *ev,
            int64_t arena_bytes, FILE *out);

/* ---------------------------------------------------------------- passes/analyze.c */
/* One compilation: the graph, its Dag, the plan and what liveness found. */
typedef struct Analysis {
	Graph g;
	Dag d;
	PlanGoal goal;
	PlanResult plan;
	MemEval ev;             /* the chosen schedule */
	MemEval base;           /* the -O0 schedule, for baseline_peak_bytes */
	int64_t arena_bytes;
	double seconds;         /* wall time of the whole analysis */
} Analysis;

/* Runs instantiate -> shape_infer -> autodiff -> lower -> plan -> liveness
 * -> memory plan. Returns an exit status: 0, 1 (errors in the input,
 * reported to d), 3 (no schedule fits the budget; an->plan holds the
 * smallest peak found). With verify, checks every evaluation with vf_check
 * and returns 4 on a mismatch. */
int analyze(const Program *p, const char *file, const NetOptions *o,
            const PlanGoal *goal, bool verify, Analysis *an, Arena *a, Diag *d);

/* ---------------------------------------------------------------- passes/report.c */
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

/* ---------------------------------------------------------------- passes/json.c */
void report_json(const Analysis *an, FILE *out);
/* Writes s as a JSON string: quoted, with '"', '\\' and control
 * characters escaped. */
void json_put_str(FILE *out, const char *s);

/* ---------------------------------------------------------------- ir/dag/dag.c (harden) */
/* The cap on a Dag's byte total and cost total (docs/limits.md): 2^60. */
#define DAG_LIMIT ((int64_t)1 << 60)
typedef struct DagExcess {
	const char *what;       /* "bytes" or "FLOPs" */
	int tensor, node;       /* where the total passes; both -1: persistent */
} DagExcess;
bool dag_excess(const Dag *d, DagExcess *x);    /* true when past DAG_LIMIT */

/* ---------------------------------------------------------------- passes/driver/outfile.c */
/* harden (issue 15): -o written safely (temporary file + rename for
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

#endif
