/* ir/ir.h -- the table of contents of remat.
 *
 * Every IR struct and enum lives here; prototypes are grouped under the
 * file that defines them. The pipeline (main.c) is:
 *
 *   parse -> instantiate -> infer shapes -> autodiff -> lower to a Dag
 *         -> plan (remat) -> liveness -> memory plan -> report / emit
 *
 * The graph is flat: def calls and repeats are instantiated away, tensors
 * and ops live in two arrays, and ops appear in program order. Indices, not
 * pointers, link them, so arrays may grow.
 */
#ifndef REMAT_IR_H
#define REMAT_IR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* harden (issue 15): checked arithmetic for every module; the lead folds
 * it into util.h. */
#include "checked.h"

#define IR_MAXDIM 8       /* most axes a tensor may have */
#define IR_MAXEXTRA 2     /* most extra outputs an op makes (mean, rstd) */

/* ---------------------------------------------------------------- ir/arena.c */

/* A bump allocator. Everything made for one compilation lives in one arena
 * and dies with it; passes use a scratch arena of their own. */
typedef struct ArenaBlock ArenaBlock;
typedef struct ArenaHeap ArenaHeap;
typedef struct Arena {
	ArenaBlock *head;
	ArenaHeap *heap;        /* large arrays grown by ar_grow, freed with it */
	size_t total;           /* bytes handed out, for the benchmarks */
} Arena;

void *xmalloc(size_t n);                 /* dies with a message on OOM */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
void ar_init(Arena *a);
void ar_free(Arena *a);                  /* frees every block */
void *ar_alloc(Arena *a, size_t n);      /* zeroed, 16-byte aligned */
void *ar_grow(Arena *a, void *old, size_t oldn, size_t newn); /* grow an array; old
                                 may be moved or freed; bytes past oldn are
                                 not necessarily zero: fill what you use */
char *ar_strdup(Arena *a, const char *s);
char *ar_strndup(Arena *a, const char *s, size_t n);
/* s1 s2 s3 joined: ar_printf("%s%s%s") without the formatting, for the
 * millions of ids a big graph has. */
char *ar_cat(Arena *a, const char *s1, const char *s2, const char *s3);
char *ar_printf(Arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Internal invariant failures: print __FILE__:__LINE__ and exit 4. */
#define ir_assert(c) ((c) ? (void)0 : ir_die(__FILE__, __LINE__, #c))
_Noreturn void ir_die(const char *file, int line, const char *what);

/* ---------------------------------------------------------------- ir/diag.c */

/* A place in a source file. line and col count from 1; col counts bytes. */
typedef struct Loc {
	const char *file;       /* as named on the command line ("-": <stdin>) */
	int line, col;
} Loc;

/* User diagnostics. Errors are collected in order and printed as
 *   file:line:col: error: message
 *   <the source line>
 *        ^
 * up to DIAG_MAX_ERRORS; then compilation stops. Warnings print the same
 * way with "warning:". Command-line errors use diag_usage() (exit 2). */
#define DIAG_MAX_ERRORS 20

typedef struct Source {
	const char *name;       /* file name for messages */
	const char *text;       /* whole file, NUL-terminated */
	size_t len;
} Source;

typedef struct Diag {
	const Source *src;      /* for printing source lines; may be NULL */
	FILE *out;              /* stderr, or a memstream in tests */
	int nerrors, nwarnings;
	bool quiet_warnings;
	bool silent;            /* count only: print nothing (dry evaluations) */
} Diag;

void diag_init(Diag *d, const Source *src, FILE *out);
void diag_error(Diag *d, Loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void diag_warning(Diag *d, Loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool diag_full(const Diag *d);          /* the error cap was reached */
_Noreturn void diag_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));  /* "remat: msg", exit 2 */

/* ---------------------------------------------------------------- ir/graph.c */

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

typedef struct Tensor {
	const char *id;         /* stable id: "block.3.h@1", "x:mask", "grad(h)" */
	TensorKind kind;
	Dtype dtype;            /* DT_NONE until shape inference (or on error) */
	int ndim;               /* -1 until shape inference (or on error) */
	int producer;           /* op index for TK_ACT/TK_EXTRA, else -1 (here
	                           to fill the hole before shape: a million-op
	                           graph has millions of tensors) */
	int64_t shape[IR_MAXDIM];
	int64_t numel;          /* elements */
	int64_t bytes;          /* numel * dtype_size: its logical size, also for views */
	int view_of;            /* views: the tensor whose storage it aliases, else -1 */
	bool needs_grad;        /* shape pass: floating and (a param or from one) */
	bool saved;             /* autodiff: some backward op saves it (per ops.md) */
	bool reaches_output;    /* autodiff: a grad-needing path leads to the loss */
	int grad;               /* autodiff: index of grad(this), or -1 */
	int grad_of;            /* for TK_GRAD/TK_PARAM_GRAD: the tensor it is grad of */
	const char *role;       /* extras: "mask", "mean", "rstd", "lse", "lsm", "indices" */
	const char *scope;      /* def instance prefix, "" at top level: "block.3." */
	Loc loc;                /* where the expression or declaration starts */
} Tensor;

/* Op kinds. The op library itself -- arity, attributes, shape rule, FLOPs,
 * saves, extras -- is one table in ir/optab.c, indexed by OpKind. */
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
	OP_CUSTOM,
	OP_COUNT
} OpKind;

/* Resolved non-tensor arguments and attributes of one op. Which fields an op
 * uses is given by its row in the op table; the rest stay at their defaults
 * (set by ir_params_default). Axes are stored as written (may be negative);
 * shape inference normalizes them into the *_norm fields. */
typedef struct OpParams {
	int64_t axis;           /* split, concat, slice, softmax, sum, mean */
	bool has_axis;          /* sum/mean: false means "all axes" */
	int64_t n;              /* split: number of parts */
	int64_t i, j;           /* transpose */
	int64_t start, end;     /* slice; flatten uses start */
	int64_t stride, padding, dilation, groups; /* conv2d; pools use stride, padding */
	int64_t k;              /* pools: kernel size */
	int64_t scale;          /* upsample2d */
	double p;               /* dropout */
	double c;               /* scale */
	bool causal;            /* attention */
	Dtype dtype;            /* cast */
	int nlist;              /* reshape shape / permute axes */
	int64_t list[IR_MAXDIM];
	int64_t axis_norm;      /* shape pass: axis in [0, ndim) */
	unsigned given;         /* ir_set_attr: bit i = the i-th name of
	                           OpInfo.attrs was given, bit IR_POS_BIT + k =
	                           the k-th positional parameter; decides the
	                           defaults that depend on others (pool stride = k,
	                           flatten start = 1) */
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

typedef struct Op {
	OpKind kind;
	int nin;
	int *in;                /* tensor indices, in argument order */
	int nout;               /* 1, or n for split */
	int nextra;
	int *out;               /* out[0] names the op in schedules */
	int extra[IR_MAXEXTRA]; /* extra output tensors */
	OpParams *p;            /* ops that take attributes own one; every other
	                           op shares ir_no_params (read-only) */
	const CustomOp *custom; /* OP_CUSTOM only */
	int64_t flops;          /* shape pass: forward FLOPs */
	/* autodiff */
	bool has_backward;
	int nsaves;
	int64_t bwd_flops;
	int *saves;             /* tensor indices the backward reads */
	int64_t workspace;      /* custom ops: scratch bytes, forward and backward */
	const char *scope;      /* def instance prefix, "" at top level */
	Loc loc;
} Op;

typedef enum Optimizer {
	OPT_SGD, OPT_MOMENTUM, OPT_ADAGRAD, OPT_RMSPROP, OPT_LION, OPT_ADAM, OPT_ADAMW,
	OPT_COUNT
} Optimizer;

const char *optimizer_name(Optimizer o);
int optimizer_from_name(const char *s);  /* -1 if unknown */
int optimizer_states(Optimizer o);       /* values per param element */

/* Training settings: the train block's, overridden by flags. */
typedef struct Settings {
	bool infer;             /* --infer, or forced when there are no params */
	Optimizer optimizer;    /* default adamw */
	bool mixed;             /* precision = mixed */
	int64_t accumulate;     /* default 1 */
} Settings;

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
int ir_add_op(Graph *g, OpKind kind, const int *in, int nin, Loc loc);
/* Creates op `o`'s outputs (ids given) and its extras (ids "<out0>:<role>",
 * roles from the op table), setting producer and kind. */
void ir_set_outputs(Graph *g, int o, const char *const *ids, int nout);
void ir_params_default(OpParams *p);
extern const OpParams ir_no_params;     /* the defaults, shared read-only */
/* Stores p as op o's parameters (allocating them if o shared the defaults). */
void ir_set_params(Graph *g, int o, const OpParams *p);
int64_t ir_numel(const Tensor *t);
/* The tensor whose storage t really uses: follows view_of to the root. */
int ir_storage_root(const Graph *g, int t);
/* Shape as "[8, 1024, 768]" into buf; returns buf. */
char *ir_shape_str(const Tensor *t, char *buf, size_t n);

/* ---------------------------------------------------------------- ir/optab.c */

/* Shape rules, one per family of ops; passes/shape.c implements each. */
typedef enum ShapeRule {
	SR_UNARY, SR_CAST, SR_DROPOUT, SR_BINARY, SR_MATMUL, SR_CONV2D,
	SR_ATTENTION, SR_NORM, SR_BATCHNORM, SR_SOFTMAX, SR_POOL, SR_GLOBAL_POOL,
	SR_UPSAMPLE, SR_REDUCE, SR_CROSS_ENTROPY, SR_MSE, SR_EMBEDDING,
	SR_RESHAPE, SR_FLATTEN, SR_TRANSPOSE, SR_PERMUTE, SR_SLICE, SR_SPLIT,
	SR_CONCAT, SR_CUSTOM
} ShapeRule;

/* Forward FLOPs, before the row's factor flops_k. */
typedef enum FlopsRule {
	FL_ZERO,        /* views */
	FL_IN,          /* n(argument 0) */
	FL_OUT,         /* n(out) */
	FL_MATMUL,      /* 2 M N K batch */
	FL_CONV2D,      /* 2 N O H' W' (C/groups) KH KW */
	FL_ATTENTION,   /* 4 B H S T Dh, halved when causal */
	FL_POOL,        /* n(out) k^2 */
	FL_CUSTOM       /* declared */
} FlopsRule;

/* One entry of an op's saves column. */
typedef enum SaveKind { SV_END, SV_ARG, SV_ARG_IF, SV_OUT, SV_EXTRA } SaveKind;
typedef struct SaveRule {
	SaveKind kind;
	int i;                  /* argument or extra index */
	int cond;               /* SV_ARG_IF: the argument that must need grad */
} SaveRule;
#define IR_MAXSAVE 5
#define SAVE_ARG(a) {SV_ARG, (a), -1}
#define SAVE_ARG_IF(a, b) {SV_ARG_IF, (a), (b)}
#define SAVE_OUT {SV_OUT, 0, -1}
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
	/* added with passes/shape.c and passes/autodiff.c: */
	const char *pos_names;  /* names of the positional params, space separated */
	const char *required;   /* attributes that have no default */
	ShapeRule shape;        /* how passes/shape.c infers the output */
	bool float_in;          /* every tensor argument must be floating point */
	FlopsRule flops;        /* forward FLOPs = flops_k x the rule's count */
	int64_t flops_k;
	SaveRule saves[IR_MAXSAVE]; /* ends at the first SV_END */
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

/* ---------------------------------------------------------------- frontend/ */

typedef struct Program Program;         /* the AST: frontend/ast.h */

typedef struct DimOverride {
	const char *name;                   /* -D NAME=VALUE */
	int64_t value;
} DimOverride;

/* Command-line settings; each overrides the train block when its _set flag
 * is true. */
typedef struct NetOptions {
	DimOverride *defs;
	int ndefs;
	bool infer_set, infer;
	bool optimizer_set;
	Optimizer optimizer;
	bool precision_set, mixed;
	bool accumulate_set;
	int64_t accumulate;
	int max_tensors;        /* cap on the graph's tensors; 0: the default (2^24) */
} NetOptions;

/* Parses a whole source; NULL after syntax errors (already reported). */
Program *net_parse(const Source *src, Arena *a, Diag *d);
/* Instantiates the program into g: dims (with -D and accumulate applied),
 * settings (train block, then flags), custom ops, params, inputs, every op
 * of every def call and repeat, in program order, with ids per language.md,
 * outputs, g->train and g->loss. Shapes are left to shape_infer. Returns the
 * number of errors. Can be called again on the same Program (--max-batch). */
int net_instantiate(const Program *p, const NetOptions *o, Graph *g, Diag *d);

/* ---------------------------------------------------------------- passes/shape.c */

/* Infers dtype, shape, bytes, needs_grad and forward FLOPs for every op in
 * program order, reporting errors at the op's location. An op with a
 * poisoned input (ndim -1) is skipped silently and poisons its outputs.
 * Returns the number of errors. */
int shape_infer(Graph *g, Diag *d);
int shape_infer_op(Graph *g, int o, Diag *d);  /* one op; 0 on success */

/* ---------------------------------------------------------------- passes/autodiff.c */

/* Decides which ops have a backward, what each saves (Op.saves,
 * Tensor.saved), its FLOPs, and creates grad(t) tensors (Tensor.grad).
 * Warns about grad-needing outputs that cannot reach the loss. */
int autodiff(Graph *g, Diag *d);
/* harden (issue 15): the training-output checks alone (one output, a
 * float scalar that depends on a param), for --dump-ir; errors reported. */
int autodiff_check_loss(const Graph *g, Diag *d);

/* ---------------------------------------------------------------- ir/dump.c */

/* --dump-ir: one line per tensor, stable order. */
void ir_dump(const Graph *g, FILE *out);
const char *ir_tensor_op(const Graph *g, int t);  /* "matmul", "input", "grad" */
const char *ir_kind_name(TensorKind k);            /* "activation", ... */

#endif
