/* ir/dag/dag.h -- the plain DAG that schedules are planned and evaluated on.
 *
 * Nothing here knows about .net: passes/graph/lower.c builds a Dag from the
 * training graph (forward ops, backward ops, gradients) and frontend/checkmate/checkmate.c
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
 * - A step PRODUCES a new instance of each tensor in node.out. One node
 *   makes each tensor, except ZeRO-3's gathered weights of a unit
 *   (passes/graph/distribute.c): its forward all-gather and its backward
 *   all-gather (once) make the same tensor, so a use after the backward
 *   gather is served by that instance.
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
 *   the step's temporaries (the node's workspace + accumulation temporaries).
 *   Peak = max over steps; peak_step = the first step reaching it.
 *
 * How passes/graph/lower.c maps a training graph onto a Dag:
 * - params are not Dag tensors: their bytes (and master copy, optimizer
 *   state) are persistent[], listed buffer by buffer in persistent_buf[]
 *   (order: see Dag); a view of a param is a DagTensor with
 *   persistent_view set. Each IR input is a from_start tensor (CAT_INPUTS).
 * - forward op o (program order) -> one node, once=false, name = id of
 *   o.out[0], cost = o.flops, workspace = ir_op_workspace(o), in = o's distinct
 *   non-param inputs, out = o.out[] then o.extra[] (CAT_ACTIVATIONS).
 * - backward of o (for ops with has_backward, reverse program order) -> one
 *   node, once=true, is_backward=true, fwd_plus1 = o's forward node + 1,
 *   same name, cost = o.bwd_flops,
 *   workspace = ir_op_workspace(o); in = grad(out[i]) for each output that has a
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

#include "util.h"

/* Memory categories, in report order. */
typedef enum MemCat {
	CAT_PARAMS, CAT_MASTER, CAT_OPTIMIZER, CAT_PARAM_GRADS, CAT_INPUTS,
	CAT_ACTIVATIONS, CAT_GRADIENTS, CAT_TEMPORARIES,
	CAT_COUNT
} MemCat;

const char *memcat_name(MemCat c);      /* "params", "master", ... (JSON keys) */

/* One per activation and gradient of a big graph: cat is a byte so that
 * the flags pack with it and the struct takes 32 bytes, not 40, while the
 * fields keep their order (tests build tensors positionally). */
typedef struct DagTensor {
	const char *name;
	int64_t bytes;          /* logical size; a view instance owns 0 */
	int view_src;           /* static view: tensor it aliases, else -1 */
	bool persistent_view;   /* a view of a param (transpose(wte)): owns
	                           nothing and keeps nothing alive */
	uint8_t cat;            /* a MemCat */
	bool from_start;        /* produced before step 0 (inputs; param grads
	                           under accumulation) */
	bool to_end;            /* once produced, live through the last step
	                           (infer outputs, param grads) */
	int ir_tensor;          /* the IR tensor it stands for, or -1 */
} DagTensor;

_Static_assert(sizeof(void *) != 8 || sizeof(DagTensor) == 32,
               "DagTensor grew: one per activation and gradient, keep it unpadded");

typedef struct DagAcc {
	int tensor;             /* the gradient contributed to */
	int view_src;           /* produce as a view of this tensor's serving
	                           instance when no live instance exists, or -1 */
	/* --runtime pytorch (autograd's InputBuffer): when an instance of
	 * tensor exists, the step uses it and produces the sum as a NEW owning
	 * instance (the old one, or a view's base, is freed once nothing else
	 * holds it); the contribution is a temporary of tensor's bytes during
	 * the step, except when view_src >= 0 (the contribution then is
	 * view_src's buffer, an input of the step). False: the model above
	 * (in place through one temporary). */
	bool out_of_place;
} DagAcc;

/* A communication step of one data-parallel rank (passes/graph/distribute.c;
 * the generated program runs it as a collective). */
typedef enum DagComm {
	COMM_NONE,
	COMM_ALLGATHER,         /* ZeRO-3: out[0] = the full weights of
	                           comm_params, concatenated in that order */
	COMM_ALLREDUCE,         /* a gradient bucket (in[]), summed in place */
	COMM_REDUCE_SCATTER,    /* a gradient bucket (in[0], the flat buffer
	                           of the COMM_PACK node right before it),
	                           summed into each param's gradient shard:
	                           the ones it makes are out[] (their params
	                           comm_params), the ones an earlier bucket
	                           made are in[] too; at one rank
	                           no pack: in[] are the gradients,
	                           added straight into the shards */
	COMM_PACK               /* a reduce-scatter's bucket: its gradients
	                           (in[]) into the flat buffer out[0] */
} DagComm;

/* A pipeline stage's boundary node (passes/graph/pipeline.c; the generated
 * program sends and receives it through MPI, codegen/runtime_dist.h). */
typedef enum DagPipe {
	PIPE_NONE,
	PIPE_LOAD,              /* out[0]: a data input of micro_batch */
	PIPE_RECV,              /* out[0]: an activation from stage peer[0] */
	PIPE_SEND,              /* in[0]: an activation to each stage of peer[] */
	PIPE_RECV_GRAD,         /* acc[0]: the gradient stages peer[] send back */
	PIPE_SEND_GRAD          /* in[0]: a gradient back to stage peer[0] */
} DagPipe;

/* A node's size matters: lowering makes one per op and backward op (300k
 * ops: 600k nodes), so DagNode keeps only what every node has, ordered
 * without padding (pointers and int64_t first, then ints, then the two
 * flags: 64 bytes). What only some nodes have is in side arrays of the
 * Dag: a communication or pipeline boundary node's DagXfer (dag_xfer), a
 * custom op's or a bucket's workspace (dag_workspace). */
typedef struct DagNode {
	const char *name;       /* schedules name ops by their first output */
	int64_t cost;           /* FLOPs (or Checkmate cost_cpu) */
	int *in;                /* tensors used (deduplicated) */
	int *out;               /* tensors produced */
	DagAcc *acc;            /* gradient contributions */
	int nin;
	int nout;
	int nacc;
	int ir_op;              /* the IR op it stands for, or -1 */
	int fwd_plus1;          /* a backward node: its forward node + 1, which
	                           must run before it (memory-model.md); 0 when
	                           there is none (zeroed nodes stay valid) */
	int block_plus1 : 30;   /* issue 9: the block (outermost call) the
	                           node belongs to + 1 (a backward node: its
	                           forward node's), for per-block checkpointing;
	                           0 outside every def (zeroed nodes: none) */
	bool once : 1;          /* runs exactly once, never recomputed (backward) */
	bool is_backward : 1;   /* labelled "backward" in schedules */
} DagNode;

_Static_assert(sizeof(void *) != 8 || sizeof(DagNode) == 64,
               "DagNode grew: one per op and backward op, keep it unpadded");

/* The fields of a communication step (passes/graph/distribute.c) or a
 * pipeline boundary node (passes/graph/pipeline.c), one per node in
 * Dag.xfer when some node has them. */
typedef struct DagXfer {
	DagComm comm;           /* a communication step, or COMM_NONE */
	int ncomm_params;
	int *comm_params;       /* COMM_ALLGATHER: the IR params it gathers;
	                           COMM_REDUCE_SCATTER: the param of each
	                           gradient shard in out[] */
	DagPipe pipe;           /* a pipeline boundary step, or PIPE_NONE */
	int npeer;
	int *peer;              /* the stages it exchanges with */
	int micro_batch;        /* a pipeline stage's in-flight copy the node
	                           belongs to (0 outside pipelines), so that
	                           distribute.c gathers and reduces per copy;
	                           here, not in DagNode: only pipelines have it */
} DagXfer;

typedef struct Dag {
	DagTensor *t;
	int nt;
	DagNode *node;
	int nnode;
	int *base_order;        /* the -O0 / reference schedule: every node once */
	int nbase;
	int64_t persistent[CAT_COUNT]; /* params, master, optimizer */
	/* The persistent buffers one by one, live for the whole training
	 * step, as passes/graph/lower.c lists them: for each param in IR
	 * order, its weight (CAT_PARAMS); then, in train mode, its f32 master
	 * copy (CAT_MASTER; mixed precision and a param not declared f32) and
	 * one buffer per optimizer state value (CAT_OPTIMIZER; none for sgd).
	 * Per category they sum to persistent[]. A Dag built elsewhere may
	 * list none (npersistent 0); the memory planner then places
	 * persistent[] as one extent. */
	int npersistent;
	int64_t *persistent_buf;        /* [npersistent] bytes */
	MemCat *persistent_cat;         /* [npersistent] */
	int *persistent_ir;             /* [npersistent] the param's IR tensor */
	/* distribute.c: [npersistent] bytes of each buffer offloaded to the
	 * host (its persistent_buf is then 0), or NULL when none is */
	int64_t *persistent_host;
	/* [nxfer] the DagXfer of each node, or NULL while no node
	 * communicates: read it through dag_xfer, write it through
	 * dag_xfer_set */
	DagXfer *xfer;
	int nxfer;
	/* [nworkspace] each node's workspace, the temporary bytes it needs
	 * while it runs (custom ops, gradient buckets), or NULL while no node
	 * has any: read it through dag_workspace, write it through
	 * dag_set_workspace */
	int64_t *workspace;
	int nworkspace;
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

/* One produced instance of a tensor (24 bytes: one per op of a big graph,
 * so no padding between the fields, `replaces` and `to_end` are bits of
 * the tensor index, which lv_eval keeps below 2^30, and the arena offset,
 * which only the memory planner sets, is in MemEval.offset). */
typedef struct Instance {
	int64_t owned;          /* bytes it owns (0 for views) */
	unsigned tensor : 30;
	unsigned replaces : 1;  /* an out_of_place sum (DagAcc): it replaced an
	                           earlier instance of its tensor at its start */
	unsigned to_end : 1;    /* its tensor is DagTensor.to_end (lv_eval's copy,
	                           read with the ends it fixes) */
	int start, end;         /* live steps, inclusive; start -1: from before step 0 */
	int base;               /* views: root instance it aliases, else itself */
} Instance;
_Static_assert(sizeof(Instance) == 24, "Instance is one per op of a big graph: keep it 24 bytes");

/* The most tensors a Dag may have for lv_eval: Instance.tensor is 31 bits. */
#define INST_TENSOR_MAX ((1 << 30) - 1)

/* What the liveness evaluator finds for one schedule. */
typedef struct MemEval {
	bool valid;
	char error[256];        /* why it is invalid */
	int nsteps;
	uint8_t *kind;          /* [nsteps] each step's StepKind, a byte: the
	                           per-step arrays add up on a big graph */
	int64_t *live_bytes;    /* [nsteps] memory at each step */
	int64_t *temp_bytes;    /* [nsteps] temporaries at each step, or NULL
	                           when no step has any: read it through ev_temp */
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
	int64_t *offset;        /* memory planner: [ninst] each owning instance's
	                           arena offset, -1 for a view (the emitter
	                           addresses it through its base); NULL until
	                           the planner runs: read it through ev_offset */
	int64_t *temp_offset;   /* memory planner: [nsteps] arena offset of the
	                           step's temporary extent (mp_temp_layout), or
	                           -1 when the step has no temporaries; NULL
	                           when no step has any */
	int64_t *persistent_offset; /* memory planner: [Dag.npersistent] arena
	                           offset of each persistent buffer */
	int64_t arena_floor;    /* memory planner: the least arena its blocks
	                           allow -- the persistent buffers and the most
	                           bytes live at one step, every block rounded
	                           up to 256 -- so peak <= floor <= arena */
} MemEval;

/* Instance k's arena offset, -1 for a view or before the memory planner. */
static inline int64_t
ev_offset(const MemEval *ev, int k)
{
	return ev->offset ? ev->offset[k] : -1;
}

/* Step s's temporary bytes (MemEval.temp_bytes may be NULL). */
static inline int64_t
ev_temp(const MemEval *ev, int s)
{
	return ev->temp_bytes ? ev->temp_bytes[s] : 0;
}

/* ---------------------------------------------------------------- ir/dag/dag.c */
void dag_finish(Dag *d);                /* computes forward_cost, total_cost */
Schedule dag_base_schedule(const Dag *d, Arena *a);
StepKind dag_step_kind(const Dag *d, const Schedule *s, int i, const bool *seen);

/* Appends a zeroed tensor (view_src and ir_tensor -1) or node (ir_op -1)
 * to d, growing its array in a; *cap is the array's capacity. */
DagTensor *dag_push_tensor(Dag *d, int *cap, Arena *a);
DagNode *dag_push_node(Dag *d, int *cap, Arena *a);

/* Node v's DagXfer (an all-zero one, COMM_NONE and PIPE_NONE, when it
 * has none); dag_xfer_set makes or grows the side array in a so that v's
 * can be written (v < d->nnode). */
const DagXfer *dag_xfer(const Dag *d, int v);
int dag_micro_batch(const Dag *d, const DagNode *n);    /* dag_xfer's, of n */
DagXfer *dag_xfer_set(Dag *d, int v, Arena *a);

/* Node v's workspace: temporary bytes while it runs (0 for most nodes). */
static inline int64_t
dag_workspace(const Dag *d, int v)
{
	return v < d->nworkspace ? d->workspace[v] : 0;
}

/* Sets node v's workspace (v < d->nnode), making or growing the side
 * array in a, as dag_xfer_set does, when bytes is not 0. */
void dag_set_workspace(Dag *d, int v, int64_t bytes, Arena *a);

/* The bytes tensor t's own storage holds: 0 for a static view (of another
 * tensor, or of a param), else its bytes. */
static inline int64_t
dag_owned(const Dag *d, int t)
{
	return d->t[t].view_src >= 0 || d->t[t].persistent_view ? 0 : d->t[t].bytes;
}

/* The tensor owning the storage that t's instances use, its static views
 * (view_src) followed to their end; -1 when that storage is a param's
 * (a persistent_view owns nothing). At most nt links, so that a cycle,
 * which dag_check does not rule out, ends. */
int dag_root(const Dag *d, int t);

/* ---------------------------------------------------------------- ir/dag/check.c */
/* The DAG's invariants (indices, one producer per tensor, views, cost
 * totals, a base order that is a valid schedule). false + why on the first
 * violation. scratch holds temporary arrays. */
bool dag_check(const Dag *d, Arena *scratch, char *why, size_t n);
/* A valid schedule: every node runs, once-nodes once, uses served, each
 * backward step after its forward step. */
bool dag_check_schedule(const Dag *d, const Schedule *s, Arena *scratch,
                        char *why, size_t n);

/* ---------------------------------------------------------------- ir/dag/dump.c */
/* Stable text dumps (remat -d PASS): the DAG, a schedule, an evaluation
 * (with arena offsets when offsets is set). */
void dag_dump(const Dag *d, FILE *out);
void schedule_dump(const Dag *d, const Schedule *s, Arena *scratch, FILE *out);
void eval_dump(const Dag *d, const MemEval *ev, bool offsets, FILE *out);

/* ---------------------------------------------------------------- ir/dag/dag.c */
/* The cap on a Dag's byte total and cost total (docs/limits.md): 2^60. */
#define DAG_LIMIT ((int64_t)1 << 60)
typedef struct DagExcess {
	const char *what;       /* "bytes" or "FLOPs" */
	int tensor, node;       /* where the total passes, or -1 */
	int ir;                 /* else the IR param whose persistent buffer passes it */
} DagExcess;
bool dag_excess(const Dag *d, DagExcess *x);    /* true when past DAG_LIMIT */

/* The data-parallel shard layout (docs/distributed.md), shared by the
 * distribution pass and the program it is run by: a tensor of n elements
 * splits into ceil(n / ranks)-element shards, the last ones padded; rank
 * r holds shard_count of them. */
static inline int64_t
dag_shard_elems(int64_t n, int ranks)
{
	return n / ranks + (n % ranks != 0);
}

static inline int64_t
dag_shard_count(int64_t n, int ranks, int r)
{
	int64_t s = dag_shard_elems(n, ranks), c = n - (int64_t)r * s;
	return c < 0 ? 0 : c > s ? s : c;
}

#endif
