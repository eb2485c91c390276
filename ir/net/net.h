/* ir/net/net.h -- the network graph: tensors, ops, the op table.
 *
 * The passes run from one function, analyze() in driver/analyze.c; each
 * module has one header that is its table of contents, bottom up:
 *
 *   ir/util/util.h             arenas, diagnostics, clock, JSON
 *   ir/net/net.h (this)        the network graph and the op table
 *   ir/dag/dag.h               the plain DAG, schedules, evaluations
 *   frontend/frontend.h        parse -> instantiate          (.net -> graph)
 *   frontend/onnx/onnx.h       ONNX model -> .net source
 *   frontend/checkmate/checkmate.h  benchmark graphs -> DAG
 *   passes/graph/graph.h       infer shapes -> autodiff -> lower to a Dag
 *   passes/eval/eval.h         liveness, verify, memory plan
 *   passes/plan/plan.h         plan (what to keep, what to recompute)
 *   codegen/codegen.h          emit the CUDA / host C program
 *   report/report.h            the writers of an analysis
 *   driver/driver.h            analyze(), the re-drivers, command line
 *
 * Every network-graph struct and enum lives here; prototypes are grouped
 * under the file that defines them. The graph is flat: def calls and
 * repeats are instantiated away, tensors and ops live in two arrays, and ops
 * appear in program order. Indices, not pointers, link them, so arrays may
 * grow. Below the lowering (ir/dag and the passes on it) nothing includes
 * this header: the build gives those modules no path to it.
 */
#ifndef REMAT_NET_H
#define REMAT_NET_H

#define IR_MAXDIM 8       /* most axes a tensor may have */
#define IR_MAXEXTRA 2     /* most extra outputs an op makes (mean, rstd) */

#include "util.h"

/* ---------------------------------------------------------------- ir/net/graph.c */

typedef enum Dtype {
	DT_F64, DT_F32, DT_BF16, DT_F16, DT_F8E4M3, DT_F8E5M2,
	DT_I64, DT_I32, DT_I8, DT_U8, DT_BOOL,
	DT_COUNT,
	DT_NONE = -1
} Dtype;

int dtype_size(Dtype t);
const char *dtype_name(Dtype t);
Dtype dtype_from_name(const char *s);   /* DT_NONE if unknown */
bool dtype_is_float(Dtype t);

typedef enum TensorKind {
	TK_INPUT,       /* `input` */
	TK_PARAM,       /* `param` */
	TK_ACT,         /* an op's output */
	TK_EXTRA,       /* an op's extra output: x:mask, h:mean, ... */
	TK_GRAD,        /* grad(t) for a non-param t (autodiff) */
	TK_PARAM_GRAD   /* grad(w) for a param w (autodiff) */
} TensorKind;

/* A million-op graph has millions of these, so every byte counts (16 B
 * is 4.8 MB at 300k tensors): 64 bytes, no padding. The small fields are
 * bit fields in one 32-bit word (nothing takes their address); the element
 * count is not kept but read from bytes (ir_numel: every dtype is a whole
 * number of bytes), an extra's role is an index into its op's row of the
 * op table (ir_role). The shape lives out of line, ndim elements in the
 * graph's arena: most tensors have two to four axes, and room for
 * IR_MAXDIM in every one was 64 of 144 bytes. */
typedef struct Tensor {
	const char *id;         /* stable id: "block.3.h@1", "x:mask", "grad(h)" */
	int64_t *shape;         /* [ndim], set by ir_set_shape only; NULL until
	                           the first shape is set. Tensors may share one
	                           array (a grad has its tensor's), so never
	                           write through it: set a new shape instead */
	int64_t bytes;          /* numel * dtype_size: its logical size, also for
	                           views; 0 until shape inference sized it */
	const char *scope;      /* call prefix, "" at top level: "block.3." */
	Loc loc;                /* where the expression or declaration starts */
	int producer;           /* op index for TK_ACT/TK_EXTRA, else -1 */
	int view_of;            /* views: the tensor whose storage it aliases, else -1 */
	int grad;               /* autodiff: index of grad(this), or -1 */
	int grad_of;            /* for TK_GRAD/TK_PARAM_GRAD: the tensor it is grad of */
	TensorKind kind : 3;
	Dtype dtype : 5;        /* DT_NONE until shape inference (or on error) */
	int ndim : 5;           /* -1 until shape inference (or on error); at
	                           most IR_MAXDIM */
	unsigned role : 2;      /* TK_EXTRA: 1 + k for the op table's
	                           extra_role[k] of its producer; else 0 */
	bool needs_grad : 1;    /* shape pass: floating and (a param or from one) */
	bool saved : 1;         /* autodiff: some backward op saves it (per ops.md) */
	bool frozen : 1;        /* a `frozen` param: no grad, master or optimizer
	                           state; its weight lives for the whole
	                           training step */
	bool buffer : 1;        /* a `buffer` param (also frozen): persistent state
	                           that is not a parameter (BatchNorm's running
	                           statistics); not in the parameter count */
	bool reaches_output : 1; /* autodiff: a grad-needing path leads to the loss */
	bool autocast_copy : 1; /* a cast autocast makes inside the op that
	                           reads it (passes/graph/autocast.c) */
	bool autocast_cached : 1; /* autocast's cast of a param (its cache of
	                           weight casts): held to the end of forward */
} Tensor;

/* 300k tensors x 16 B is 4.8 MB of issue 15's 100 MB: a field added here
 * must pay for itself. */
_Static_assert(sizeof(Tensor) == 64, "Tensor grew past 64 bytes");

/* Elements of t: bytes / dtype_size, exact since every dtype is a whole
 * number of bytes; 0 until shape inference sized it. */
static inline int64_t
ir_numel(const Tensor *t)
{
	return t->bytes && t->dtype != DT_NONE ? t->bytes / dtype_size(t->dtype) : 0;
}

/* Op kinds. The op library itself -- arity, attributes, shape rule, FLOPs,
 * saves, extras -- is one table in ir/net/optab.c, indexed by OpKind. */
typedef enum OpKind {
	OP_RELU, OP_GELU, OP_SILU, OP_SIGMOID, OP_TANH, OP_EXP, OP_LOG, OP_SQRT,
	OP_NEG, OP_SCALE, OP_CAST, OP_DROPOUT,
	OP_ADD, OP_SUB, OP_MUL, OP_DIV,
	OP_MATMUL, OP_CONV2D, OP_ATTENTION,
	OP_LAYERNORM, OP_RMSNORM, OP_BATCHNORM, OP_SOFTMAX, OP_LOG_SOFTMAX,
	OP_MAXPOOL2D, OP_AVGPOOL2D, OP_GLOBAL_AVGPOOL, OP_UPSAMPLE2D,
	OP_SUM, OP_MEAN, OP_CROSS_ENTROPY, OP_MSE_LOSS, OP_EMBEDDING,
	OP_RESHAPE, OP_FLATTEN, OP_TRANSPOSE, OP_PERMUTE, OP_SLICE, OP_SPLIT,
	OP_CONCAT,
	/* added for real networks (issue 13): activations, indexing, routing */
	OP_RELU6, OP_CLAMP, OP_HARDSWISH, OP_HARDSIGMOID,
	OP_GATHER, OP_INDEX_SELECT, OP_TOPK, OP_SCATTER_ADD,
	/* added for issue 28: 1-D convolution, group norm, broadcast-to */
	OP_CONV1D, OP_GROUPNORM, OP_EXPAND,
	OP_CUSTOM,
	OP_COUNT
} OpKind;

/* Resolved non-tensor arguments and attributes of one op. Which fields an op
 * uses is given by its row in the op table; the rest stay at their defaults
 * (set by ir_params_default). Axes are stored as written (may be negative);
 * shape inference normalizes them into the *_norm fields. */
typedef struct OpParams {
	int64_t axis;           /* split, concat, slice, softmax, sum, mean */
	int64_t n;              /* split: number of parts */
	int64_t i, j;           /* transpose */
	int64_t start, end;     /* slice; flatten uses start */
	/* Windows (conv1d, conv2d, the pools), per spatial axis in axis order
	 * (conv1d has one: [0]); a scalar attribute fills every axis. */
	int64_t stride[2], dilation[2];
	int64_t pad[4];         /* begin and end of each axis: top, bottom, left,
	                           right (conv1d: left, right) */
	int64_t k[2];           /* pools: the window; topk: k[0] */
	int64_t groups;         /* conv1d, conv2d, groupnorm */
	int64_t scale;          /* upsample2d */
	double p;               /* dropout */
	double c;               /* scale */
	double dropout;         /* attention: dropout on the probabilities */
	double cmin, cmax;      /* clamp: bounds (-inf, inf when not given) */
	int64_t ignore_index;   /* cross_entropy: labels equal to it count for
	                           nothing (default -100) */
	Dtype dtype;            /* cast */
	int nlist;              /* reshape, expand: shape; permute: axes; sum,
	                           mean: the axes of an axis list */
	int64_t list[IR_MAXDIM];
	int64_t axis_norm;      /* shape pass: axis in [0, ndim) */
	unsigned given;         /* ir_set_attr: bit i = the i-th name of
	                           OpInfo.attrs was given, bit IR_POS_BIT + k =
	                           the k-th positional parameter; decides the
	                           defaults that depend on others (pool stride = k,
	                           flatten start = 1) */
	bool has_axis;          /* sum/mean: false means "all axes"; with an
	                           axis list, the axes are in list (nlist) */
	bool causal;            /* attention */
	bool ceil_mode;         /* pools: round the output size up */
	bool keepdim;           /* sum, mean: reduced axes stay, of size 1 */
	const struct CustomOp *custom; /* OP_CUSTOM only (ir_set_custom): here
	                           rather than in Op, so only those ops pay */
} OpParams;

#define IR_POS_BIT 16

/* A custom op declared with `op name(a, b) -> T { ... }`, after its dimension
 * expressions were evaluated. */
typedef struct CustomOp {
	const char *name;
	int nargs;
	const char **argnames;
	Dtype out_dtype;
	int out_ndim;
	int64_t out_shape[IR_MAXDIM];
	int64_t flops, backward_flops, workspace;
	bool saves_out;
	bool *saves_arg;        /* [nargs] */
	Loc loc;
} CustomOp;

/* 64 bytes, no padding: a 300k-op graph holds 300k of these. The small
 * fields share a word; extra outputs follow the outputs in out[] (ir_extra);
 * the op's source location is its outputs' (ir_op_loc);
 * a custom op's declaration hangs off its OpParams (ops other than
 * OP_CUSTOM share ir_no_params, whose custom is NULL); its scratch bytes
 * are read from there (ir_op_workspace) and an op's call prefix
 * from its first output (ir_op_scope), rather than kept in every op. */
typedef struct Op {
	OpKind kind : 8;
	unsigned nextra : 2;    /* at most IR_MAXEXTRA */
	bool has_backward : 1;  /* autodiff */
	int nin;
	int nout;               /* 1, or n for split */
	int nsaves;             /* autodiff */
	int *in;                /* tensor indices, in argument order */
	int *out;               /* [nout + nextra]: the outputs, out[0] names the
	                           op in schedules, then the extra outputs */
	OpParams *p;            /* ops that take attributes own one, and custom
	                           ops; every other op shares ir_no_params
	                           (read-only) */
	int64_t flops;          /* shape pass: forward FLOPs */
	int64_t bwd_flops;      /* autodiff */
	int *saves;             /* autodiff: tensor indices the backward reads */
} Op;

/* 300k ops x 8 B is 2.4 MB of issue 15's 100 MB: a field added here must
 * pay for itself. */
_Static_assert(sizeof(Op) == 64, "Op grew past 64 bytes");

/* Op o's k-th extra output (k < o->nextra): x:mask, h:mean, ... */
static inline int
ir_extra(const Op *o, int k)
{
	return o->out[o->nout + k];
}

typedef enum Optimizer {
	OPT_SGD, OPT_MOMENTUM, OPT_ADAGRAD, OPT_RMSPROP, OPT_LION, OPT_ADAM, OPT_ADAMW,
	OPT_COUNT
} Optimizer;

const char *optimizer_name(Optimizer o);
int optimizer_from_name(const char *s);  /* -1 if unknown; case-blind */
extern const char *const optimizer_names[OPT_COUNT]; /* for "did you mean" */
int optimizer_states(Optimizer o);       /* values per param element */

/* When the gradients of accumulated micro-batches are reduced, from ZeRO-2
 * on (--grad-sync): EACH micro-batch reduce-scatters its own into
 * persistent shards (DeepSpeed ZeRO-2/3), or the micro-batches accumulate
 * full gradients and the LAST one reduce-scatters them (FSDP's no_sync);
 * AUTO is the one whose plan peaks lower, chosen by the driver (the
 * distribute pass reads it as EACH). */
typedef enum GradSync { SYNC_AUTO, SYNC_EACH, SYNC_LAST } GradSync;

/* Whether ZeRO-3 shards the weights (--shard-weights): AUTO keeps them
 * whole where that peaks no higher, which only a model whose weights form
 * one gathered unit can (the driver decides, docs/distributed.md, "One
 * gathered unit"); ALWAYS shards them, as FSDP does; WHOLE is what AUTO
 * resolves to when it keeps them whole: the step is ZeRO-2's, nothing is
 * gathered. */
typedef enum ShardWeights { SHARD_AUTO, SHARD_ALWAYS, SHARD_WHOLE } ShardWeights;

/* Data parallelism (docs/distributed.md): ranks, the ZeRO stage, the
 * gradient bucket size and what is offloaded to the host. Every rank holds
 * the same shard sizes and runs the same schedule on its own micro-batch. */
typedef struct DistOptions {
	int ranks;              /* data-parallel ranks, default 1 */
	int zero;               /* 0..3: what is sharded (1 optimizer state and
	                           master copy, 2 also gradients, 3 also weights) */
	int64_t bucket;         /* gradient bucket bytes (default 25 MB, DDP's) */
	bool offload_optimizer; /* master copy and optimizer state on the host */
	bool offload_params;    /* weight shards on the host (ZeRO-3) */
	int prefetch;           /* ZeRO-3: units gathered ahead of the one
	                           running (--prefetch), default 0 */
	GradSync grad_sync;     /* --grad-sync, under --accumulate from ZeRO-2 */
	ShardWeights shard_weights;     /* --shard-weights, ZeRO-3 */
} DistOptions;

/* Whether ZeRO-3 gathers weights: they are sharded over several ranks or
 * kept on the host (so distribution is active: dist_active), and not kept
 * whole (SHARD_WHOLE: the step is ZeRO-2's). One rank with
 * its weights on the device has nothing to gather, so ZeRO-3 is ZeRO-2
 * there (FSDP runs NO_SHARD at world size 1); a copy per unit would make
 * the higher stage cost more. */
static inline bool
dist_gathers(const DistOptions *o)
{
	return o->zero >= 3 && (o->ranks > 1 || o->offload_params) &&
	       o->shard_weights != SHARD_WHOLE;
}

/* Whether gradients go to shards (ZeRO-2 and 3), reduced bucket by bucket:
 * over several ranks, or at one rank into the host's copy (ZeRO-Offload);
 * true only where dist_active is.
 * At one rank with the optimizer on the device the shard would be the
 * whole gradient, made beside it, so the gradients stay as under ZeRO-1. */
static inline bool
dist_grad_shards(const DistOptions *o)
{
	return o->zero >= 2 && (o->ranks > 1 || o->offload_optimizer);
}

/* Pipeline parallelism (docs/distributed.md): K stages of contiguous
 * blocks, M micro-batches, 1F1B or GPipe order. */
enum { PIPE_MAXSTAGES = 256 };
typedef struct PipeOptions {
	int stages;             /* K; 0 or 1: no pipeline */
	int micro_batches;      /* M, default K */
	bool gpipe;             /* GPipe (all M in flight) instead of 1F1B */
	int stage;              /* which stage's DAG to build */
	int nsplit;             /* --stage-blocks: blocks per stage, or 0 */
	int split[PIPE_MAXSTAGES];
} PipeOptions;

/* Training settings: the train block's, overridden by flags. */
typedef struct Settings {
	bool infer;             /* --infer, or forced when there are no params */
	Optimizer optimizer;    /* default adamw */
	bool mixed;             /* precision = mixed */
	int64_t accumulate;     /* default 1 */
	DistOptions dist;       /* --ranks, --zero, --bucket, --offload */
	PipeOptions pipe;       /* --stages, --micro-batches, --schedule */
	bool pytorch;           /* --runtime pytorch: lower with PyTorch eager
	                           autograd's allocations (docs/runtime-pytorch.md) */
	bool pytorch_cpu;       /* --runtime pytorch-cpu: those of the CPU kernels
	                           of PyTorch 1.13 (pytorch is set too); else
	                           CUDA's, PyTorch >= 2.4 */
} Settings;

/* Whether --grad-sync has a choice to make: accumulated micro-batches on
 * several ranks whose gradients go to shards on the device (with the
 * optimizer on the host, each micro-batch's go there, costing the device
 * nothing), outside a pipeline (whose micro-batches are its own). */
static inline bool
dist_sync_choice(const Settings *s)
{
	return s->accumulate > 1 && s->dist.ranks > 1 && dist_grad_shards(&s->dist) &&
	       !s->dist.offload_optimizer && s->pipe.stages <= 1;
}

/* Whether the gradients are accumulated whole and reduced by the last
 * micro-batch (--grad-sync last where it has a choice). */
static inline bool
dist_sync_last(const Settings *s)
{
	return dist_sync_choice(s) && s->dist.grad_sync == SYNC_LAST;
}

/* A `dim` or `batch` constant. */
typedef struct Dim {
	const char *name;
	int64_t declared;       /* after -D overrides; what the JSON reports */
	int64_t value;          /* used in shapes: batch/accumulate for the batch dim
	                           and every dim whose definition mentions it */
	bool is_batch;
	Loc loc;
} Dim;

typedef struct Graph {
	Arena *arena;           /* owns everything below */
	const char *file;
	Tensor *t;
	int nt, capt;
	Op *op;
	int nop, capop;
	int *outputs;           /* tensors named by `output` */
	Loc *output_loc;        /* [noutputs] where each `output` statement is */
	int noutputs;
	Dim *dims;
	int ndims;
	const char *batch_dim;  /* name, or NULL when there is no `batch` */
	Settings settings;
	bool train;             /* mode: train (true) or infer */
	int loss;               /* the training output tensor, or -1 */
} Graph;

void ir_graph_init(Graph *g, Arena *a, const char *file);
/* Appends a tensor with the given id and kind; shape unknown (ndim -1). */
int ir_add_tensor(Graph *g, const char *id, TensorKind kind, Loc loc);
/* Appends an op with nin inputs (copied) and no outputs yet. */
int ir_add_op(Graph *g, OpKind kind, const int *in, int nin);
/* Creates op `o`'s nout >= 1 outputs (ids given) and its extras (ids
 * "<out0>:<role>", roles from the op table), setting producer, kind, scope
 * (the call prefix, "" at top level) and loc, where the op's
 * expression starts: the op keeps none of its own (ir_op_loc). */
void ir_set_outputs(Graph *g, int o, const char *const *ids, int nout, const char *scope,
                    Loc loc);
/* Where op o's expression starts: its outputs' location. */
Loc ir_op_loc(const Graph *g, const Op *o);
/* The call prefix op o was made in ("" at top level): its
 * outputs'. */
const char *ir_op_scope(const Graph *g, const Op *o);
/* Gives t (a tensor of g) ndim axes of the given sizes (copied into g's
 * arena), or ndim -1: unknown. */
void ir_set_shape(Graph *g, Tensor *t, int ndim, const int64_t *shape);
/* Gives t from's shape, sharing its array: an elementwise op's output,
 * a tensor's grad. */
void ir_share_shape(Tensor *t, const Tensor *from);
void ir_params_default(OpParams *p);
extern const OpParams ir_no_params;     /* the defaults, shared read-only */
/* Stores p as op o's parameters (allocating them if o shared the defaults). */
void ir_set_params(Graph *g, int o, const OpParams *p);
/* Makes op o (an OP_CUSTOM) the declared custom op cu: gives it OpParams
 * of its own to hold it. */
void ir_set_custom(Graph *g, int o, const CustomOp *cu);
/* Scratch bytes op o needs while it runs: a custom op's declared
 * workspace, 0 for every built-in op. */
int64_t ir_op_workspace(const Op *o);
/* An extra's role ("mask", "mean", "rstd", "lse", "dmask", "lsm",
 * "indices": the op table's name for it); NULL for every other tensor. */
const char *ir_role(const Graph *g, const Tensor *t);
/* The tensor whose storage t really uses: follows view_of to the root. */
int ir_storage_root(const Graph *g, int t);
/* Shape as "[8, 1024, 768]" into buf; returns buf. */
char *ir_shape_str(const Tensor *t, char *buf, size_t n);
/* Length of the block's prefix in a scope (its outermost call):
 * "block.3.attn.0." -> 8 ("block.3."); 0 at top level. The report's
 * per-layer table, pipeline stages, ZeRO-3 units and per-block
 * checkpointing all group by it. */
size_t ir_outer_scope_len(const char *scope);

/* Appends an optional extra output (role from the op table's extra_role[k],
 * k == op's nextra) to op o: attention's dropout mask. */
void ir_add_extra(Graph *g, int o, int k);

/* ---------------------------------------------------------------- ir/net/optab.c */

/* Shape rules, one per family of ops; passes/graph/shape.c implements each. */
typedef enum ShapeRule {
	SR_UNARY, SR_CAST, SR_DROPOUT, SR_BINARY, SR_MATMUL, SR_CONV,
	SR_ATTENTION, SR_NORM, SR_BATCHNORM, SR_SOFTMAX, SR_POOL, SR_GLOBAL_POOL,
	SR_UPSAMPLE, SR_REDUCE, SR_CROSS_ENTROPY, SR_MSE, SR_EMBEDDING,
	SR_RESHAPE, SR_FLATTEN, SR_TRANSPOSE, SR_PERMUTE, SR_SLICE, SR_SPLIT,
	SR_CONCAT, SR_CUSTOM,
	SR_CLAMP, SR_GATHER, SR_INDEX_SELECT, SR_TOPK, SR_SCATTER_ADD,
	SR_GROUPNORM, SR_EXPAND
} ShapeRule;

/* Forward FLOPs, before the row's factor flops_k. */
typedef enum FlopsRule {
	FL_ZERO,        /* views */
	FL_IN,          /* n(argument 0) */
	FL_OUT,         /* n(out) */
	FL_MATMUL,      /* 2 M N K batch */
	FL_CONV,        /* 2 n(out) (C/groups) (kernel size): conv1d, conv2d */
	FL_ATTENTION,   /* 4 B H S T Dh, halved when causal */
	FL_POOL,        /* n(out) KH KW */
	FL_CUSTOM,      /* declared */
	FL_TOPK,        /* n(x) ceil(log2(k + 1)): a heap of k per row */
	FL_LAST         /* n(last argument): scatter_add's adds */
} FlopsRule;

/* One entry of an op's saves column. */
typedef enum SaveKind { SV_END, SV_ARG, SV_ARG_IF, SV_OUT, SV_EXTRA } SaveKind;
typedef struct SaveRule {
	SaveKind kind;
	int i;                  /* argument or extra index */
	int cond;               /* SV_ARG_IF: the argument that must need grad */
} SaveRule;
#define IR_MAXSAVE 7
#define SAVE_ARG(a) {SV_ARG, (a), -1}
#define SAVE_ARG_IF(a, b) {SV_ARG_IF, (a), (b)}
#define SAVE_OUT {SV_OUT, 0, -1}
#define SAVE_OUTN(k) {SV_OUT, (k), -1}      /* output k of a multi-output op */
#define SAVE_EXTRA(k) {SV_EXTRA, (k), -1}

/* What an op's backward saves, as flags over its arguments and out.
 * SAVE_ARG(i) is saved always; SAVE_ARG_IF(i, j) only when argument j
 * needs grad; SAVE_OUT, SAVE_EXTRA(k). The rows follow ops.md exactly. */
typedef struct OpInfo {
	const char *name;       /* as written in .net */
	int min_args, max_args; /* tensor arguments; max -1: any number (concat) */
	int npos;               /* positional non-tensor params after the tensors */
	const char *attrs;      /* allowed attribute names, space separated */
	bool is_view;           /* output aliases input 0 */
	int nextra;
	const char *extra_role[IR_MAXEXTRA];
	double bwd_factor;      /* backward FLOPs = forward x this (x grads if per_grad) */
	bool per_grad;
	/* added with passes/graph/shape.c and passes/graph/autodiff.c: */
	const char *pos_names;  /* names of the positional params, space separated */
	const char *required;   /* attributes that have no default */
	ShapeRule shape;        /* how passes/graph/shape.c infers the output */
	bool float_in;          /* every tensor argument must be floating point */
	FlopsRule flops;        /* forward FLOPs = flops_k x the rule's count */
	int64_t flops_k;
	SaveRule saves[IR_MAXSAVE]; /* ends at the first SV_END; a rule
	                           naming an absent optional argument or extra
	                           (attention's mask, dropout mask) is skipped */
	int nout;               /* fixed number of outputs (topk: 2); 0: one,
	                           or split's n */
	int nspatial;           /* windows: spatial axes (conv1d 1, conv2d and
	                           pools 2), the length of a per-axis list */
	const char *lists;      /* attributes that also take a list: per-axis
	                           window settings, sum's and mean's axes */
} OpInfo;

extern const OpInfo ir_optab[OP_COUNT];

/* A non-tensor argument or attribute value as written in the source, after
 * its dimension expression was evaluated. */
typedef enum AttrKind { AV_INT, AV_REAL, AV_BOOL, AV_DTYPE, AV_LIST } AttrKind;
typedef struct AttrValue {
	AttrKind kind;
	int64_t i;
	double r;
	bool b;
	Dtype dt;
	int n;
	int64_t list[IR_MAXDIM];
} AttrValue;

/* Stores attribute `name`, or the pos-th positional non-tensor parameter
 * when name is NULL, into p. An int is accepted where a real is expected.
 * Returns NULL, or a message for the user, e.g.
 * "op 'relu' has no attribute 'p'" or "attribute 'p' of 'dropout' must be
 * a real". */
const char *ir_set_attr(OpKind k, OpParams *p, const char *name, int pos,
                        const AttrValue *v);
/* Checks that the attributes an op cannot do without were given (e.g.
 * maxpool2d's k, cast's dtype); `given` is a bitmask of attribute names by
 * their position in OpInfo.attrs. Returns NULL or a message. */
const char *ir_check_attrs(OpKind k, const OpParams *p, unsigned given);

int ir_op_from_name(const char *name);  /* -1 if not built in */
/* Whether ir_set_attr stored attribute `name` of op kind k into p. */
bool ir_attr_given(OpKind k, const OpParams *p, const char *name);
/* A pool's stride along spatial axis a: the window's size there unless
 * `stride` was given. */
int64_t ir_pool_stride(const Op *o, int a);

/* ---------------------------------------------------------------- ir/net/dump.c */

/* --dump-ir: one line per tensor, stable order. */
void ir_dump(const Graph *g, FILE *out);
/* -d autodiff: each op's backward (saves, FLOPs), then the gradients. */
void ir_dump_backward(const Graph *g, FILE *out);
const char *ir_tensor_op(const Graph *g, int t);  /* "matmul", "input", "grad" */
const char *ir_kind_name(TensorKind k);            /* "activation", ... */

#endif
