/* codegen/emit.c -- writes a CUDA/C program that runs one schedule.
 *
 * Reads the Graph (ops, shapes, attributes), the Dag, the Schedule and the
 * MemEval (instances, step_prod, live_bytes, temp_bytes, offsets from
 * mp_plan); writes one self-contained file: the runtime prelude
 * (codegen/runtime.h, embedded verbatim), an instance table, then the
 * schedule as a straight sequence of calls, one { } group per step.
 *
 * Choices, documented for users of the output:
 * - Two memory modes, picked at run time: --tracked (default) allocates each
 *   buffer on its own with cudaMalloc (malloc on the host): every persistent
 *   buffer (each param's weight, master copy and optimizer state, one
 *   allocation each, for the whole run) and each instance at its producing
 *   step, freed after its last live step (views widen it). --arena makes one
 *   allocation of exactly arena_bytes (mp_plan's result, which is at least
 *   the predicted peak) and puts every persistent buffer, every instance and
 *   every step's temporary extent at the offset mp_plan gave it (layout:
 *   passes/eval/memplan.c); any buffer without an offset or ending past the
 *   arena stops the program. Both count persistent bytes, live instances
 *   and the step's temporaries exactly as the MemEval does, compare every
 *   step with the prediction, and exit 1 on any difference; both print the
 *   predicted and measured peak and the arena bytes. The device figure is
 *   the largest rise of cudaMemGetInfo's used bytes (allocator granularity
 *   and the context make it larger than the exact count).
 * - Persistent buffers are emitted in Dag order (dag.h: per param, weight,
 *   master copy, optimizer states); weights are the P[] tensors, master
 *   copies and optimizer state are allocated and counted only.
 * - Size: one line per allocation, kernel call and free, plus one table row
 *   per instance, so the file is linear in the schedule (GPT-2 small at -O2:
 *   ~0.4 MB; a 100k-op graph at -O0: ~100 MB). Steps are grouped into
 *   functions of CG_CHUNK steps to keep compile time linear too.
 * - Each use is bound to an instance by replaying "the most recent earlier
 *   production serves each use" over step_prod, in its order; the replay
 *   is checked against step_prod as it goes.
 * - Init: params and float inputs get hash(FNV-1a of the tensor id, element)
 *   mapped to [-0.1, 0.1); integer inputs get values in [0, range), range
 *   being the smallest that every consumer accepts (embedding: V rows,
 *   cross_entropy labels: C classes; otherwise 2 for u8/bool, 16 else).
 * - Dropout keeps element i of op o when splitmix64(o, i) >= p, so a
 *   recomputed mask is bit-identical to the original.
 * - Accumulation: a contribution to a gradient that already has an instance
 *   is computed into a temporary of the gradient's size (in the step's
 *   temporary extent) and added; the loss op's backward reads a constant 1 (RT_DT_ONE),
 *   held in no buffer. No optimizer update is applied: master and optimizer
 *   state are allocated and counted only; the program prints checksums of
 *   every param gradient (infer mode: every output) and the loss.
 * - Math: gelu is the tanh approximation; norms use eps 1e-5; avgpool
 *   divides by its window's size clipped to the padded input (padding
 *   counts as zero; PyTorch's count_include_pad, so KH*KW except for a
 *   ceil_mode window past the end pad); causal attention lets query i
 *   see keys j <= i; compute is in float (double when the graph has f64).
 *   Host and GPU results match bit for bit with nvcc -fmad=false except
 *   where libm and CUDA's exp/log/tanh differ in the last ulp (softmax,
 *   attention, gelu, silu, sigmoid, tanh, exp, log, cross_entropy) and in
 *   matmuls, which cuBLAS sums in its own order (runtime.h, "matmul").
 * - Timing: each step's rt_begin names its phase (RT_PH_ and the step
 *   kind), and the program prints the time of each phase.
 * - Custom ops run a placeholder: out = 0.5 * sum over floating arguments
 *   a of a[i mod n(a)], whose backward is its exact gradient; declared
 *   workspace is allocated in the step's extent and written (0x5a bytes).
 * - Data parallelism (g->settings.dist, the Dag distribute.c made): the
 *   program is one rank. Persistent buffers are shards (offloaded ones on
 *   the host, Dag.persistent_host); a DagXfer.comm step runs its
 *   collective (emit_comm_step; layouts in codegen/runtime_dist.h) and
 *   a reduce-scatter allocates the gradient shards it makes; under
 *   ZeRO-3 every read of a weight goes to its unit's gathered buffer that
 *   the step reads, and from ZeRO 2 the epilogue gathers the gradients
 *   from the shards for the checksums.
 * - Pipeline stages (g->settings.pipe, cg_emit_pipeline): one section per
 *   stage, each the one-rank program of that stage's plan with its
 *   file-scope names renamed by #define (section_names); main runs world
 *   rank w's stage. A stage's DAG is its whole schedule (pipeline.c), with
 *   M copies of each op: each step first binds the op's IR tensors to its
 *   copy's Dag tensors (bind). Boundary steps (emit_pipe_step) load a
 *   micro-batch's data, or send and receive activations and gradients
 *   (runtime_dist.h); the last stage records each micro-batch's loss.
 * - Checked by tests/unit/test_emit.c (finite differences, a miscounting
 *   program fails), tests/codegen/run.sh (every example at tiny dims,
 *   -O0, -O1, -O2 and a --budget, both modes, bit-identical checksums) and
 *   tests/mpi.sh (sharded and pipelined programs under mpirun).
 */
#include <math.h>
#include <ctype.h>
#include <stdarg.h>
#include <string.h>

#include "codegen.h"

extern const char cg_runtime_src[];     /* codegen/runtime_str.c, generated */

enum { CG_CHUNK = 64 };                 /* steps per emitted function */

typedef struct Em {
	const Graph *g;
	const Dag *d;
	const Schedule *s;
	const MemEval *ev;
	FILE *out;
	Arena a;
	int *dag_of;            /* IR tensor -> Dag tensor, or -1 */
	int *param_of;          /* IR tensor -> param number, or -1 */
	int *params;            /* param number -> IR tensor */
	int64_t *par_off;       /* param number -> arena offset of its weight */
	int nparam;
	int *cur;               /* Dag tensor -> serving instance, or -1 */
	int64_t *end;           /* instance -> last live step, views included */
	int *drop, *dnext;      /* step -> owning instances whose end it is */
	int64_t *range;         /* IR tensor -> integer init range */
	const DagNode *node;    /* the step being emitted */
	int step;
	int64_t *cstart;        /* this step's concat starts, or NULL */
	int *qhead;             /* IR tensor -> its first argument slot in the
	                           step's op, or -1 (emit_backward) */
	Arena refs;             /* this step's reference strings: any number
	                           of them, freed when the step is emitted */
	/* one rank of a data-parallel training step (g->settings.dist) */
	int ranks;
	bool dist, zero2, zero3;
	int *gnode;             /* Dag tensor -> the gather making it + 1, or 0 */
	/* a pipeline stage (g->settings.pipe): its section of the program */
	int stage, nstages, mbs;
	bool *held;             /* param number -> the stage holds it */
} Em;

enum { CG_REFLEN = 256 };       /* a reference: rt_ones of 8 dims fits */

static void
out(Em *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
out(Em *e, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vfprintf(e->out, fmt, ap);
	va_end(ap);
}

/* A fresh buffer for one reference string, alive until the step ends (a
 * rotating set would let a call with many operands overwrite its own). */
static char *
nextbuf(Em *e)
{
	return ar_alloc(&e->refs, CG_REFLEN);
}

/* Runtime dtype names, not numbers: "RT_DT_" and the dtype's name. */
static const char *
dt_enum(Em *e, Dtype dt)
{
	char *b = nextbuf(e);
	int n = snprintf(b, CG_REFLEN, "RT_DT_%s", dtype_name(dt));

	for (int i = 6; i < n; i++)
		b[i] = (char)toupper((unsigned char)b[i]);
	return b;
}

/* rt_begin of step i with its temporary block of tb bytes: its phase is
 * named after the step's kind (RT_PH_FORWARD, RT_PH_RECOMPUTE,
 * RT_PH_BACKWARD), which the program times. */
static void
emit_begin(Em *e, int i, int64_t tb)
{
	char ph[32];
	const char *k = step_kind_name(e->ev->kind[i]);
	size_t n = 0;

	for (; k[n] && n + 1 < sizeof ph; n++)
		ph[n] = (char)toupper((unsigned char)k[n]);
	ph[n] = 0;
	out(e, "\trt_begin(%d, RT_PH_%s, %lld, %lld);\n", i, ph, (long long)tb,
	    (long long)(e->ev->temp_offset ? e->ev->temp_offset[i] : -1));
}

/* s inside a C comment, and as the body of a C string literal. */
static const char *
cmt(Em *e, const char *s)
{
	return esc_c_comment(&e->refs, s);
}

static const char *
str(Em *e, const char *s)
{
	return esc_c_str(&e->refs, s);
}

static const Tensor *
ten(Em *e, int t)
{
	return &e->g->t[t];
}

/* The storage dtype of Dag tensor t: the IR tensor's, unless its bytes say
 * otherwise (param grads are f32 under mixed precision). */
static int
inst_dtype(Em *e, int t)
{
	const DagTensor *dt = &e->d->t[t];
	const Tensor *it = ten(e, dt->ir_tensor);
	if (ir_numel(it) > 0 && !dt->persistent_view && dt->view_src < 0 &&
	    dt->bytes != ir_numel(it) * dtype_size(it->dtype)) {
		int64_t sz = dt->bytes / ir_numel(it);
		return sz == 8 ? DT_F64 : sz == 4 ? DT_F32 : sz == 2 ? DT_F16 : DT_U8;
	}
	return it->dtype;
}

static const char *view_ref(Em *e, int t);

/* ZeRO-3: param p's full weights, in the gathered buffer of its unit that
 * the step reads (each step that reads a weight reads its unit's gather;
 * in a pipeline stage each micro-batch's): the params of a unit lie
 * concatenated in the gather's order. */
static const char *
gathered_ref(Em *e, int p)
{
	char *b = nextbuf(e);
	for (int i = 0; i < e->node->nin; i++) {
		int t = e->node->in[i];
		const DagXfer *gn = e->gnode[t] ? dag_xfer(e->d, e->gnode[t] - 1) : NULL;
		int64_t off = 0;
		for (int j = 0; gn && j < gn->ncomm_params; j++) {
			if (gn->comm_params[j] == e->params[p]) {
				snprintf(b, CG_REFLEN, "rt_gathered(D[%d], %lld, &rt_par[%d])", e->cur[t],
				         (long long)off, p);
				return b;
			}
			off += ten(e, gn->comm_params[j])->bytes;
		}
	}
	ir_assert(!"a step reads a weight but not its unit's gather");
	return b;
}

/* A reference to IR tensor t as the step sees it: a param, or its serving
 * instance; in a backward step only tensors it uses (node.in), else none. */
static const char *
ref(Em *e, int t)
{
	char *b = nextbuf(e);
	if (t < 0) {
		strcpy(b, "rt_none()");
	} else if (e->zero3 && e->param_of[t] >= 0 && !ten(e, t)->buffer) {
		return gathered_ref(e, e->param_of[t]);
	} else if (e->param_of[t] >= 0) {
		snprintf(b, CG_REFLEN, "P[%d]", e->param_of[t]);
	} else if (e->zero3 && e->dag_of[t] >= 0 && e->d->t[e->dag_of[t]].persistent_view) {
		bool used = !e->node->is_backward;
		for (int i = 0; i < e->node->nin && !used; i++)
			used = e->node->in[i] == e->dag_of[t];
		return used ? view_ref(e, t) : "rt_none()";
	} else {
		int dt = e->dag_of[t], k = dt >= 0 ? e->cur[dt] : -1;
		bool used = !e->node->is_backward;
		for (int i = 0; i < e->node->nin && !used; i++)
			used = e->node->in[i] == dt;
		if (k < 0 || !used)
			strcpy(b, "rt_none()");
		else
			snprintf(b, CG_REFLEN, "D[%d]", k);
	}
	return b;
}

static int
axis_of(const Tensor *t, int64_t ax)
{
	return (int)(ax < 0 ? ax + t->ndim : ax);
}

/* "a0, ..., a7" of a permutation, normalized, padded with zeros */
static const char *
perm8(Em *e, const Op *o, const Tensor *x)
{
	char *b = nextbuf(e);
	int n = 0;
	for (int d = 0; d < IR_MAXDIM; d++)
		n += snprintf(b + n, CG_REFLEN - (size_t)n, "%s%d", d ? ", " : "",
		              d < o->p->nlist ? axis_of(x, o->p->list[d]) : 0);
	return b;
}

/* The view expression for output j (instance k) of view op o over src. */
static void
emit_view(Em *e, const Op *o, int j, int k, const char *src)
{
	const Tensor *x = ten(e, o->in[0]), *y = ten(e, o->out[j]);
	int ax = axis_of(x, o->p->axis_norm);
	switch (o->kind) {
	case OP_TRANSPOSE:
		out(e, "\tD[%d] = rt_transpose(%s, %d, %d);\n", k, src,
		    axis_of(x, o->p->i), axis_of(x, o->p->j));
		break;
	case OP_PERMUTE:
		out(e, "\tD[%d] = rt_permute8(%s, %s);\n", k, src, perm8(e, o, x));
		break;
	case OP_SLICE: {
		int64_t st = o->p->start < 0 ? o->p->start + x->shape[ax] : o->p->start;
		out(e, "\tD[%d] = rt_narrow(%s, %d, %lld, %lld);\n", k, src, ax,
		    (long long)st, (long long)y->shape[ax]);
		break;
	}
	case OP_SPLIT:
		out(e, "\tD[%d] = rt_narrow(%s, %d, %lld, %lld);\n", k, src, ax,
		    (long long)(j * y->shape[ax]), (long long)y->shape[ax]);
		break;
	case OP_EXPAND:
		out(e, "\tD[%d] = rt_expand_k(%s, &rt_inst[%d]);\n", k, src, k);
		break;
	default:                /* reshape, flatten: same row-major order */
		out(e, "\tD[%d] = rt_reshape_k(%s, &rt_inst[%d]);\n", k, src, k);
		break;
	}
}

/* ZeRO-3: a view of a param (a tied head's transpose(wte)) made again over
 * the gather the step reads: the instance made at the view's own step may
 * point into a gathered buffer that has been freed since. */
static const char *
view_ref(Em *e, int t)
{
	const Tensor *y = ten(e, t), *x = ten(e, y->view_of);
	const Op *o = &e->g->op[y->producer];
	const char *src = e->param_of[y->view_of] >= 0 ? ref(e, y->view_of) : view_ref(e, y->view_of);
	char *b = nextbuf(e);
	int ax = axis_of(x, o->p->axis_norm), j = 0;
	while (o->out[j] != t)
		j++;
	switch (o->kind) {
	case OP_TRANSPOSE:
		snprintf(b, CG_REFLEN, "rt_transpose(%s, %d, %d)", src, axis_of(x, o->p->i),
		         axis_of(x, o->p->j));
		break;
	case OP_PERMUTE:
		snprintf(b, CG_REFLEN, "rt_permute8(%s, %s)", src, perm8(e, o, x));
		break;
	case OP_SLICE:
		snprintf(b, CG_REFLEN, "rt_narrow(%s, %d, %lld, %lld)", src, ax,
		         (long long)(o->p->start < 0 ? o->p->start + x->shape[ax] : o->p->start),
		         (long long)y->shape[ax]);
		break;
	case OP_SPLIT:
		snprintf(b, CG_REFLEN, "rt_narrow(%s, %d, %lld, %lld)", src, ax,
		         (long long)(j * y->shape[ax]), (long long)y->shape[ax]);
		break;
	case OP_EXPAND:
		snprintf(b, CG_REFLEN, "rt_expand_k(%s, &rt_inst[%d])", src,
		         e->cur[e->dag_of[t]]);
		break;
	default:
		snprintf(b, CG_REFLEN, "rt_reshape_k(%s, &rt_inst[%d])", src,
		         e->cur[e->dag_of[t]]);
		break;
	}
	return b;
}

static const char *
unary_name(OpKind k)
{
	static const char *const names[] = {
		[OP_RELU] = "RT_RELU", [OP_GELU] = "RT_GELU", [OP_SILU] = "RT_SILU",
		[OP_SIGMOID] = "RT_SIGMOID", [OP_TANH] = "RT_TANH", [OP_EXP] = "RT_EXP",
		[OP_LOG] = "RT_LOG", [OP_SQRT] = "RT_SQRT", [OP_NEG] = "RT_NEG",
		[OP_SCALE] = "RT_SCALE", [OP_CAST] = "RT_CAST",
	};
	return names[k];
}

static const char *
binary_name(OpKind k)
{
	return k == OP_ADD ? "RT_ADD" : k == OP_SUB ? "RT_SUB" : k == OP_MUL ? "RT_MUL" : "RT_DIV";
}

/* The per-axis settings of a convolution after its tensors: conv1d runs
 * the 2-D kernels with its one spatial axis as W (H is 1 long, unstrided,
 * unpadded; rt_unsq2 gives its tensors that axis). Only the begin pads
 * reach the kernels: the end pads are in the output's shape. */
static const char *
conv_args(Em *e, const Op *o)
{
	const OpParams *p = o->p;
	char *b = nextbuf(e);

	if (o->kind == OP_CONV1D)
		snprintf(b, CG_REFLEN, "1, %lld, 0, %lld, 1, %lld, %lld", (long long)p->stride[0],
		         (long long)p->pad[0], (long long)p->dilation[0], (long long)p->groups);
	else
		snprintf(b, CG_REFLEN, "%lld, %lld, %lld, %lld, %lld, %lld, %lld",
		         (long long)p->stride[0], (long long)p->stride[1], (long long)p->pad[0],
		         (long long)p->pad[2], (long long)p->dilation[0], (long long)p->dilation[1],
		         (long long)p->groups);
	return b;
}

/* A conv1d tensor seen as 2-D (an axis of size 1 before its last). */
static const char *
conv_ref(Em *e, const Op *o, const char *r)
{
	char *b;

	if (o->kind != OP_CONV1D)
		return r;
	b = nextbuf(e);
	snprintf(b, CG_REFLEN, "rt_unsq2(%s)", r);
	return b;
}

/* A pool's window, strides, begin and end pads and dilations, per axis. */
static const char *
pool_args(Em *e, const Op *o)
{
	const OpParams *p = o->p;
	char *b = nextbuf(e);

	snprintf(b, CG_REFLEN, "%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld",
	         (long long)p->k[0], (long long)p->k[1], (long long)ir_pool_stride(o, 0),
	         (long long)ir_pool_stride(o, 1), (long long)p->pad[0], (long long)p->pad[2],
	         (long long)p->pad[1], (long long)p->pad[3], (long long)p->dilation[0],
	         (long long)p->dilation[1]);
	return b;
}

/* sum and mean over an axis list of two or more axes that leave some
 * axis: the kernels of one axis over a view of t (x, or the gradient's
 * destination) with the kept axes first, folded to [kept, reduced]. NULL
 * when one axis, or every axis, is reduced. */
static const char *
fold_ref(Em *e, const Op *o, const char *t)
{
	const Tensor *x = ten(e, o->in[0]);
	const OpParams *p = o->p;
	bool cut[IR_MAXDIM] = {false};
	int perm[IR_MAXDIM] = {0}, n = 0, ncut = 0;
	int64_t kept = 1;
	char *b;

	for (int i = 0; i < p->nlist; i++, ncut++)
		cut[axis_of(x, p->list[i])] = true;
	for (int d = 0; d < x->ndim; d++)
		if (!cut[d]) {
			perm[n++] = d;
			kept *= x->shape[d];
		}
	if (ncut < 2 || n == 0)
		return NULL;
	for (int d = 0; d < x->ndim; d++)
		if (cut[d])
			perm[n++] = d;
	b = nextbuf(e);
	snprintf(b, CG_REFLEN, "rt_rows2(rt_permute8(%s, %d, %d, %d, %d, %d, %d, %d, %d), %lld)",
	         t, perm[0], perm[1], perm[2], perm[3], perm[4], perm[5], perm[6], perm[7],
	         (long long)kept);
	return b;
}

/* The axis of a sum or mean for the kernels (ax, or 1 of a folded view);
 * -1 for every axis. */
static int
reduce_axis(Em *e, const Op *o, int ax)
{
	if (!o->p->has_axis)
		return -1;
	if (o->p->nlist < 2)
		return ax;
	return fold_ref(e, o, "") ? 1 : -1;
}

/* Where input q of a concat starts along the axis: prefix sums made once
 * per step (e->cstart), so a wide concat costs linear time. */
static int64_t
concat_start(Em *e, const Op *o, int q, int ax)
{
	if (!e->cstart) {
		e->cstart = ar_alloc(&e->refs, sizeof(int64_t) * ((size_t)o->nin + 1));
		for (int i = 0; i < o->nin; i++)
			e->cstart[i + 1] = e->cstart[i] + ten(e, o->in[i])->shape[ax];
	}
	return e->cstart[q];
}

/* ---- the ops added by issue 13 (kernels in codegen/runtime_ops.h) */

static const char *
act_name(OpKind k)
{
	return k == OP_RELU6 ? "RT_RELU6" : k == OP_CLAMP ? "RT_CLAMP" :
	       k == OP_HARDSWISH ? "RT_HARDSWISH" : "RT_HARDSIGMOID";
}

/* A bound of clamp as C: infinities have no %g spelling in C. */
static const char *
bound(Em *e, double v)
{
	char *b = nextbuf(e);
	if (v == INFINITY || v == -INFINITY)
		snprintf(b, 96, "%sINFINITY", v < 0 ? "-" : "");
	else
		snprintf(b, 96, "%.17g", v);
	return b;
}

/* Attention that needs the general kernel: a mask, dropout or GQA. */
static bool
attn_general(Em *e, const Op *o)
{
	return o->nin == 4 || o->nextra == 2 ||
	       ten(e, o->in[0])->shape[1] != ten(e, o->in[1])->shape[1];
}

/* 0: no mask, 1: boolean (zero excludes), 2: additive */
static int
attn_mkind(Em *e, const Op *o)
{
	if (o->nin < 4)
		return 0;
	return dtype_is_float(ten(e, o->in[3])->dtype) ? 2 : 1;
}

static bool
xent_ignores(const Op *o)
{
	return ir_attr_given(OP_CROSS_ENTROPY, o->p, "ignore_index");
}

/* The forward kernels of op o; outputs are already bound in cur. */
static void
emit_forward(Em *e, const Op *o, int64_t wsoff)
{
	const char *x = o->nin > 0 ? ref(e, o->in[0]) : "", *y = ref(e, o->out[0]);
	const char *x1 = o->nin > 1 ? ref(e, o->in[1]) : "", *x2 = o->nin > 2 ? ref(e, o->in[2]) : "";
	const char *e0 = o->nextra > 0 ? ref(e, ir_extra(o, 0)) : "", *e1 = o->nextra > 1 ? ref(e, ir_extra(o, 1)) : "";
	const OpParams *p = o->p;
	int ax = o->nin > 0 ? axis_of(ten(e, o->in[0]), p->axis_norm) : 0;
	switch (o->kind) {
	case OP_RELU: case OP_GELU: case OP_SILU: case OP_SIGMOID: case OP_TANH:
	case OP_EXP: case OP_LOG: case OP_SQRT: case OP_NEG: case OP_SCALE: case OP_CAST:
		out(e, "\trt_f_unary(%s, %s, %s, %.17g);\n", unary_name(o->kind), x, y, p->c);
		break;
	case OP_DROPOUT:
		out(e, "\trt_f_dropout(%s, %s, %s, %.17g, %d);\n", x, y, e0, p->p, (int)(o - e->g->op));
		break;
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
		out(e, "\trt_f_binary(%s, %s, %s, %s);\n", binary_name(o->kind), x, x1, y);
		break;
	case OP_MATMUL:
		out(e, "\trt_f_matmul(%s, %s, %s);\n", x, x1, y);
		break;
	case OP_CONV2D: case OP_CONV1D:
		out(e, "\trt_f_conv2d(%s, %s, %s, %s);\n", conv_ref(e, o, x), conv_ref(e, o, x1),
		    conv_ref(e, o, y), conv_args(e, o));
		break;
	case OP_ATTENTION:
		if (attn_general(e, o))
			out(e, "\trt_f_attn2(%s, %s, %s, %s, %s, %s, %s, %d, %d, %.17g, %d);\n", x, x1,
			    x2, o->nin == 4 ? ref(e, o->in[3]) : "rt_none()", y, e0, o->nextra == 2 ? e1 : "rt_none()",
			    p->causal, attn_mkind(e, o), p->dropout, (int)(o - e->g->op));
		else
			out(e, "\trt_f_attention(%s, %s, %s, %s, %s, %d);\n", x, x1, x2, y, e0, p->causal);
		break;
	case OP_RELU6: case OP_CLAMP: case OP_HARDSWISH: case OP_HARDSIGMOID:
		out(e, "\trt_f_act(%s, %s, %s, %s, %s);\n", act_name(o->kind), x, y, bound(e, p->cmin),
		    bound(e, p->cmax));
		break;
	case OP_GATHER:
		out(e, "\trt_f_gather(%s, %s, %s, %d);\n", x, x1, y, ax);
		break;
	case OP_INDEX_SELECT:
		out(e, "\trt_f_index_select(%s, %s, %s, %d);\n", x, x1, y, ax);
		break;
	case OP_SCATTER_ADD:
		out(e, "\trt_f_scatter_add(%s, %s, %s, %s, %d);\n", x, x1, x2, y, ax);
		break;
	case OP_TOPK:
		out(e, "\trt_f_topk(%s, %s, %s, %d, %lld);\n", x, y, ref(e, o->out[1]), ax, (long long)p->k[0]);
		break;
	case OP_LAYERNORM:
		out(e, "\trt_f_layernorm(%s, %s, %s, %s, %s, %s);\n", x, x1, x2, y, e0, e1);
		break;
	case OP_RMSNORM:
		out(e, "\trt_f_rmsnorm(%s, %s, %s, %s);\n", x, x1, y, e0);
		break;
	case OP_BATCHNORM:
		out(e, "\trt_f_batchnorm(%s, %s, %s, %s, %s, %s);\n", x, x1, x2, y, e0, e1);
		break;
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		out(e, "\trt_f_softmax(%s, %s, %d, %d);\n", x, y, ax, o->kind == OP_LOG_SOFTMAX);
		break;
	case OP_MAXPOOL2D: case OP_AVGPOOL2D:
		out(e, "\trt_f_pool(%s, %s, %s, %d, %s);\n", x, y,
		    o->kind == OP_MAXPOOL2D ? e0 : "rt_none()", o->kind == OP_AVGPOOL2D,
		    pool_args(e, o));
		break;
	case OP_GLOBAL_AVGPOOL:
		out(e, "\trt_f_gap(%s, %s);\n", x, y);
		break;
	case OP_UPSAMPLE2D:
		out(e, "\trt_upsample(%s, %s, %lld, 0, 0);\n", x, y, (long long)p->scale);
		break;
	case OP_SUM: case OP_MEAN: {
		const char *fx = fold_ref(e, o, x);
		out(e, "\trt_f_sum(%s, %s, %d, %d);\n", fx ? fx : x, y, reduce_axis(e, o, ax),
		    o->kind == OP_MEAN);
		break;
	}
	case OP_GROUPNORM:
		out(e, "\trt_f_groupnorm(%s, %s, %s, %s, %s, %s);\n", x, x1, x2, y, e0, e1);
		break;
	case OP_CROSS_ENTROPY:
		if (xent_ignores(o))
			out(e, "\trt_f_xent_ig(%s, %s, %s, %s, %lld);\n", x, x1, y, e0, (long long)p->ignore_index);
		else
			out(e, "\trt_f_xent(%s, %s, %s, %s);\n", x, x1, y, e0);
		break;
	case OP_MSE_LOSS:
		out(e, "\trt_f_mse(%s, %s, %s);\n", x, x1, y);
		break;
	case OP_EMBEDDING:
		out(e, "\trt_f_embedding(%s, %s, %s);\n", x, x1, y);
		break;
	case OP_CONCAT: {
		int64_t st = 0;         /* a running start: linear in the inputs */
		for (int q = 0; q < o->nin; q++) {
			out(e, "\trt_copy(%s, rt_narrow(%s, %d, %lld, %lld), 0);\n", ref(e, o->in[q]),
			    y, ax, (long long)st, (long long)ten(e, o->in[q])->shape[ax]);
			st += ten(e, o->in[q])->shape[ax];
		}
		break;
	}
	case OP_CUSTOM: {
		int first = 1;
		for (int q = 0; q < o->nin; q++)
			if (dtype_is_float(ten(e, o->in[q])->dtype)) {
				out(e, "\trt_f_custom(%s, %s, %d);\n", ref(e, o->in[q]), y, first);
				first = 0;
			}
		if (first)
			out(e, "\trt_fill(%s, 0);\n", y);
		out(e, "\trt_touch(%lld, %lld);\n", (long long)wsoff, (long long)ir_op_workspace(o));
		break;
	}
	default:                /* views: nothing to run */
		break;
	}
}

/* The backward of op o for argument slot q, into dst (add: += into it).
 * g[i] is the incoming gradient of output i. */
static void
emit_contrib(Em *e, const Op *o, int q, const char *const *g, const char *dst, int add)
{
	const OpParams *p = o->p;
	const Tensor *x = ten(e, o->in[0]);
	int ax = axis_of(x, p->axis_norm);
	const char *a = ref(e, o->in[0]), *b = o->nin > 1 ? ref(e, o->in[1]) : "";
	const char *c = o->nin > 2 ? ref(e, o->in[2]) : "", *y = ref(e, o->out[0]);
	const char *e0 = o->nextra > 0 ? ref(e, ir_extra(o, 0)) : "", *e1 = o->nextra > 1 ? ref(e, ir_extra(o, 1)) : "";
	switch (o->kind) {
	case OP_RELU: case OP_SIGMOID: case OP_TANH: case OP_EXP: case OP_SQRT:
		out(e, "\trt_b_unary(%s, %s, %s, %s, %d, 0);\n", unary_name(o->kind), y, g[0], dst, add);
		break;
	case OP_GELU: case OP_SILU: case OP_LOG:
		out(e, "\trt_b_unary(%s, %s, %s, %s, %d, 0);\n", unary_name(o->kind), a, g[0], dst, add);
		break;
	case OP_NEG: case OP_SCALE: case OP_CAST:
		out(e, "\trt_b_unary(%s, rt_none(), %s, %s, %d, %.17g);\n", unary_name(o->kind), g[0], dst, add, p->c);
		break;
	case OP_DROPOUT:
		out(e, "\trt_b_dropout(%s, %s, %s, %d, %.17g);\n", e0, g[0], dst, add, p->p);
		break;
	case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV:
		out(e, "\trt_b_binary(%s, %d, %s, %s, %s, %s, %d);\n", binary_name(o->kind), q, a, b, g[0], dst, add);
		break;
	case OP_MATMUL:
		out(e, "\trt_b_matmul(%d, %s, %s, %s, %s, %d);\n", q, a, b, g[0], dst, add);
		break;
	case OP_CONV2D: case OP_CONV1D:
		out(e, "\trt_b_conv2d(%d, %s, %s, %s, %s, %d, %s);\n", q, conv_ref(e, o, a),
		    conv_ref(e, o, b), conv_ref(e, o, g[0]), conv_ref(e, o, dst), add, conv_args(e, o));
		break;
	case OP_ATTENTION:
		if (attn_general(e, o))
			out(e, "\trt_b_attn2(%d, %s, %s, %s, %s, %s, %s, %s, %s, %s, %d, %d, %d, %.17g);\n", q, a,
			    b, c, o->nin == 4 ? ref(e, o->in[3]) : "rt_none()", y, e0,
			    o->nextra == 2 ? e1 : "rt_none()", g[0], dst, add, p->causal, attn_mkind(e, o),
			    p->dropout);
		else
			out(e, "\trt_b_attention(%d, %s, %s, %s, %s, %s, %s, %s, %d, %d);\n", q, a, b, c, y, e0,
			    g[0], dst, add, p->causal);
		break;
	case OP_RELU6:
		out(e, "\trt_b_act(%s, %s, %s, %s, %d, 0, 0);\n", act_name(o->kind), y, g[0], dst, add);
		break;
	case OP_CLAMP: case OP_HARDSWISH: case OP_HARDSIGMOID:
		out(e, "\trt_b_act(%s, %s, %s, %s, %d, %s, %s);\n", act_name(o->kind), a, g[0], dst, add,
		    bound(e, p->cmin), bound(e, p->cmax));
		break;
	case OP_GATHER:
		out(e, "\trt_b_gather(%s, %s, %s, %d, %d);\n", b, g[0], dst, add, ax);
		break;
	case OP_INDEX_SELECT:
		out(e, "\trt_b_index_select(%s, %s, %s, %d, %d);\n", b, g[0], dst, add, ax);
		break;
	case OP_SCATTER_ADD:
		if (q == 0)
			out(e, "\trt_copy(%s, %s, %d);\n", g[0], dst, add);
		else
			out(e, "\trt_b_scatter_add(%s, %s, %s, %d, %d);\n", b, g[0], dst, add, ax);
		break;
	case OP_TOPK:
		out(e, "\trt_b_topk(%s, %s, %s, %d, %d, %lld);\n", ref(e, o->out[1]), g[0], dst, add, ax,
		    (long long)p->k[0]);
		break;
	case OP_LAYERNORM:
		out(e, "\trt_b_norm(0, %d, %s, %s, %s, %s, %s, %s, %d);\n", q, a, b, e0, e1, g[0], dst, add);
		break;
	case OP_RMSNORM:
		out(e, "\trt_b_norm(1, %d, %s, %s, rt_none(), %s, %s, %s, %d);\n", q, a, b, e0, g[0], dst, add);
		break;
	case OP_BATCHNORM:
		out(e, "\trt_b_batchnorm(%d, %s, %s, %s, %s, %s, %s, %d);\n", q, a, b, e0, e1, g[0], dst, add);
		break;
	case OP_SOFTMAX: case OP_LOG_SOFTMAX:
		out(e, "\trt_b_softmax(%s, %s, %s, %d, %d, %d);\n", y, g[0], dst, add, ax,
		    o->kind == OP_LOG_SOFTMAX);
		break;
	case OP_MAXPOOL2D: case OP_AVGPOOL2D:
		out(e, "\trt_b_pool(%s, %s, %s, %d, %d, %s);\n",
		    o->kind == OP_MAXPOOL2D ? e0 : "rt_none()", g[0], dst, add, o->kind == OP_AVGPOOL2D,
		    pool_args(e, o));
		break;
	case OP_GLOBAL_AVGPOOL:
		out(e, "\trt_b_gap(%s, %s, %d);\n", g[0], dst, add);
		break;
	case OP_UPSAMPLE2D:
		out(e, "\trt_upsample(%s, %s, %lld, 1, %d);\n", g[0], dst, (long long)p->scale, add);
		break;
	case OP_SUM: case OP_MEAN: {
		const char *fd = fold_ref(e, o, dst);
		out(e, "\trt_b_sum(%s, %s, %d, %d, %d);\n", g[0], fd ? fd : dst, add,
		    reduce_axis(e, o, ax), o->kind == OP_MEAN);
		break;
	}
	case OP_GROUPNORM:
		out(e, "\trt_b_groupnorm(%d, %s, %s, %s, %s, %s, %s, %d);\n", q, a, b, e0, e1, g[0], dst,
		    add);
		break;
	case OP_EXPAND:
		out(e, "\trt_b_expand(%s, %s, %d);\n", g[0], dst, add);
		break;
	case OP_CROSS_ENTROPY:
		if (xent_ignores(o))
			out(e, "\trt_b_xent_ig(%s, %s, %s, %s, %d, %lld);\n", e0, b, g[0], dst, add,
			    (long long)p->ignore_index);
		else
			out(e, "\trt_b_xent(%s, %s, %s, %s, %d);\n", e0, b, g[0], dst, add);
		break;
	case OP_MSE_LOSS:
		out(e, "\trt_b_mse(%d, %s, %s, %s, %s, %d);\n", q, a, b, g[0], dst, add);
		break;
	case OP_EMBEDDING:
		out(e, "\trt_b_embedding(%s, %s, %s, %d);\n", a, g[0], dst, add);
		break;
	case OP_RESHAPE: case OP_FLATTEN:
		out(e, "\trt_copy(rt_reshape_as(%s, %s), %s, %d);\n", g[0], dst, dst, add);
		break;
	case OP_TRANSPOSE:
		out(e, "\trt_copy(rt_transpose(%s, %d, %d), %s, %d);\n", g[0], axis_of(x, p->i),
		    axis_of(x, p->j), dst, add);
		break;
	case OP_PERMUTE:
		out(e, "\trt_copy(rt_unpermute8(%s, %s), %s, %d);\n", g[0], perm8(e, o, x), dst, add);
		break;
	case OP_SLICE: case OP_SPLIT:
		if (!add)
			out(e, "\trt_fill(%s, 0);\n", dst);
		for (int i = 0; i < o->nout; i++) {
			int64_t len = ten(e, o->out[i])->shape[ax];
			int64_t st = o->kind == OP_SPLIT ? i * len :
			             p->start < 0 ? p->start + x->shape[ax] : p->start;
			if (strcmp(g[i], "rt_none()"))
				out(e, "\trt_copy(%s, rt_narrow(%s, %d, %lld, %lld), 1);\n", g[i], dst, ax,
				    (long long)st, (long long)len);
		}
		break;
	case OP_CONCAT:
		out(e, "\trt_copy(rt_narrow(%s, %d, %lld, %lld), %s, %d);\n", g[0], ax,
		    (long long)concat_start(e, o, q, ax), (long long)ten(e, o->in[q])->shape[ax], dst, add);
		break;
	default:                /* OP_CUSTOM */
		out(e, "\trt_b_custom(%s, %s, %d);\n", g[0], dst, add);
		break;
	}
}

/* The view grad(a) = view of g for the backward of view op o. */
static void
emit_grad_view(Em *e, const Op *o, int k, const char *g)
{
	const Tensor *x = ten(e, o->in[0]);
	if (o->kind == OP_TRANSPOSE)
		out(e, "\tD[%d] = rt_transpose(%s, %d, %d);\n", k, g, axis_of(x, o->p->i), axis_of(x, o->p->j));
	else if (o->kind == OP_PERMUTE)
		out(e, "\tD[%d] = rt_unpermute8(%s, %s);\n", k, g, perm8(e, o, x));
	else
		out(e, "\tD[%d] = rt_reshape_k(%s, &rt_inst[%d]);\n", k, g, k);
}

/* Incoming gradients of op o's outputs: instances, or the constant 1. */
static void
grads_in(Em *e, const Op *o, const char **g)
{
	for (int i = 0; i < o->nout; i++) {
		const Tensor *y = ten(e, o->out[i]);
		int gt = y->grad;
		if (o->out[i] == e->g->loss || gt < 0) {
			char *b = nextbuf(e);
			int n = snprintf(b, CG_REFLEN, "rt_ones(%d", y->ndim);
			for (int dd = 0; dd < IR_MAXDIM; dd++)
				n += snprintf(b + n, CG_REFLEN - (size_t)n, ", %lld", dd < y->ndim ? (long long)y->shape[dd] : 0LL);
			snprintf(b + n, CG_REFLEN - (size_t)n, ")");
			g[i] = o->out[i] == e->g->loss ? ar_strdup(&e->a, b) : "rt_none()";
		} else {
			g[i] = ar_strdup(&e->a, ref(e, gt));   /* outlives the ref ring */
		}
	}
}

/* The acc entries of a backward step: produce or accumulate each grad. */
static void
emit_backward(Em *e, const Op *o, int *next, const int64_t *toff)
{
	const DagNode *nd = e->node;
	const char *g[64];
	int *qnext = ar_alloc(&e->refs, sizeof(int) * ((size_t)o->nin + 1));
	ir_assert(o->nout <= 64);
	grads_in(e, o, g);
	/* each input's argument slots, in order: linear in the op's arity */
	for (int q = o->nin - 1; q >= 0; q--) {
		qnext[q] = e->qhead[o->in[q]];
		e->qhead[o->in[q]] = q;
	}
	for (int j = 0; j < nd->nacc; j++) {
		const DagAcc *ac = &nd->acc[j];
		int a = ten(e, e->d->t[ac->tensor].ir_tensor)->grad_of, k = -1, first = 1;
		char dst[96];
		if (toff[j] >= 0) {
			snprintf(dst, sizeof dst, "rt_tmp(D[%d], %s, %lld)", e->cur[ac->tensor],
			         dt_enum(e, inst_dtype(e, ac->tensor)), (long long)toff[j]);
			out(e, "\t{ RtT t%d = %s;\n", j, dst);
			snprintf(dst, sizeof dst, "t%d", j);
		} else {
			k = (*next)++;
			ir_assert(e->ev->inst[k].tensor == ac->tensor);
			if (ac->view_src >= 0) {
				emit_grad_view(e, o, k, g[0]);
				e->cur[ac->tensor] = k;
				continue;
			}
			out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", k, k,
			    cmt(e, e->d->t[ac->tensor].name));
			snprintf(dst, sizeof dst, "D[%d]", k);
		}
		for (int q = e->qhead[a]; q >= 0; q = qnext[q]) {
			emit_contrib(e, o, q, g, dst, !first);
			first = 0;
		}
		if (k < 0)
			out(e, "\trt_copy(t%d, D[%d], 1); }\n", j, e->cur[ac->tensor]);
		else
			e->cur[ac->tensor] = k;
	}
	for (int q = 0; q < o->nin; q++)
		e->qhead[o->in[q]] = -1;
}

/* ---- one rank of a data-parallel training step (codegen/runtime_dist.h) */

/* A gather: each param of the unit into the gathered buffer (instance k). */
static void
emit_gather(Em *e, const DagXfer *nd, int k)
{
	int64_t off = 0;
	for (int j = 0; j < nd->ncomm_params; j++) {
		int p = e->param_of[nd->comm_params[j]];
		out(e, "\trt_gather(P[%d], D[%d], %lld, %lld);\n", p, k, (long long)off,
		    (long long)ir_numel(ten(e, nd->comm_params[j])));
		off += ten(e, nd->comm_params[j])->bytes;
	}
}

/* One dtype's region of a bucket at byte off (nd: the all-reduce, or the
 * pack node of a reduce-scatter, whose in[] are the gradients): pack
 * (unless comm is COMM_REDUCE_SCATTER: the pack step did), then sum and
 * unpack (unless comm is COMM_PACK); returns the region's bytes. */
static int64_t
emit_bucket_part(Em *e, const DagNode *nd, DagComm comm, Dtype dt, int64_t off)
{
	int64_t es = dtype_size(dt), pos = off;
	const char *rdt = dt_enum(e, dt);
	for (int r = 0; r < (comm == COMM_ALLREDUCE ? 1 : e->ranks); r++)
		for (int j = 0; j < nd->nin; j++) {
			int t = nd->in[j];
			int64_t n = ir_numel(ten(e, e->d->t[t].ir_tensor)), st = 0;
			if (inst_dtype(e, t) != (int)dt)
				continue;
			if (comm != COMM_ALLREDUCE) {
				st = r * dag_shard_elems(n, e->ranks);
				n = dag_shard_count(n, e->ranks, r);
			}
			if (n && comm != COMM_REDUCE_SCATTER)
				out(e, "\trt_pack(D[%d], %lld, %lld, %lld, 0);\n", e->cur[t], (long long)st,
				    (long long)n, (long long)pos);
			pos += n * es;
		}
	if (pos == off || comm == COMM_PACK)
		return pos - off;
	if (comm == COMM_ALLREDUCE) {
		out(e, "\trt_allreduce(%lld, %lld, %s);\n", (long long)off, (long long)((pos - off) / es), rdt);
		for (int j = 0, q = (int)off; j < nd->nin; j++) {
			int t = nd->in[j];
			int64_t n = ir_numel(ten(e, e->d->t[t].ir_tensor));
			if (inst_dtype(e, t) != (int)dt)
				continue;
			out(e, "\trt_pack(D[%d], 0, %lld, %d, 1);\n", e->cur[t], (long long)n, q);
			q += (int)(n * es);
		}
		return pos - off;
	}
	out(e, "\t{\n\t\tstatic const int64_t cnt[%d] = {", e->ranks);
	for (int r = 0; r < e->ranks; r++) {
		int64_t c = 0;
		for (int j = 0; j < nd->nin; j++)
			if (inst_dtype(e, nd->in[j]) == (int)dt)
				c += dag_shard_count(ir_numel(ten(e, e->d->t[nd->in[j]].ir_tensor)), e->ranks, r);
		out(e, "%s%lld", r ? ", " : "", (long long)c);
	}
	out(e, "};\n\t\tint64_t o = rt_reduce_scatter(%lld, cnt, %s);\n", (long long)off, rdt);
	for (int j = 0; j < nd->nin; j++) {
		const Tensor *gt = ten(e, e->d->t[nd->in[j]].ir_tensor);
		if (inst_dtype(e, nd->in[j]) == (int)dt)
			out(e, "\t\to = rt_unpack_shard(G[%d], o, %lld);\n", e->param_of[gt->grad_of],
			    (long long)ir_numel(gt));
	}
	out(e, "\t\t(void)o;\n\t}\n");
	return pos - off;
}

/* A gradient bucket: its dtypes' regions, 8-byte dtypes first (each part
 * stays aligned), in the block rt_tblock points at: the all-reduce's
 * temporary extent, or the flat buffer a pack step makes and its
 * reduce-scatter reads (nd: that pack node); returns its bytes. */
static int64_t
emit_bucket(Em *e, const DagNode *nd, DagComm comm)
{
	int64_t off = 0;
	for (int64_t es = 8; es >= 1; es /= 2)
		for (int dt = 0; dt < DT_COUNT; dt++)
			if (dtype_size((Dtype)dt) == es)
				off += emit_bucket_part(e, nd, comm, (Dtype)dt, off);
	return off;
}

/* The gradient shards a reduce-scatter makes (its out[], the params in
 * comm_params; instances k on), zero before the bucket adds into them;
 * a shard an earlier bucket made is G[] already. */
static void
emit_shards(Em *e, const DagNode *nd, const DagXfer *x, int k)
{
	for (int j = 0; j < nd->nout; j++) {
		const Tensor *t = ten(e, x->comm_params[j]);
		int p = e->param_of[x->comm_params[j]];
		ir_assert(x->ncomm_params == nd->nout && e->ev->inst[k + j].tensor == nd->out[j]);
		e->cur[nd->out[j]] = k + j;
		out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", k + j, k + j, cmt(e, e->d->t[nd->out[j]].name));
		out(e, "\tG[%d] = rt_shard(D[%d].p, %s, %lld);\n\trt_fill(G[%d], 0);\n", p, k + j,
		    dt_enum(e, inst_dtype(e, e->dag_of[t->grad])), (long long)dag_shard_elems(ir_numel(t), e->ranks), p);
	}
}

/* One rank's bucket (distribute.c's copy_to_shards): each gradient added
 * straight into its shard, the whole gradient there, with no flat buffer;
 * the inputs without an IR tensor are shards an earlier bucket made. */
static void
emit_to_shards(Em *e, const DagNode *nd)
{
	for (int j = 0; j < nd->nin; j++) {
		int t = nd->in[j];
		const Tensor *gt;
		if (e->d->t[t].ir_tensor < 0)
			continue;
		gt = ten(e, e->d->t[t].ir_tensor);
		out(e, "\trt_tblock = (unsigned char *)D[%d].p;\n", e->cur[t]);
		out(e, "\t(void)rt_unpack_shard(G[%d], 0, %lld);\n", e->param_of[gt->grad_of],
		    (long long)ir_numel(gt));
	}
}

/* Step i of a communication node: its buffer, the collective, the check. */
static void
emit_comm_step(Em *e, int i)
{
	const DagNode *nd = &e->d->node[e->s->step[i]];
	const DagXfer *x = dag_xfer(e->d, e->s->step[i]);
	int k = e->ev->step_prod[i + 1];
	int64_t tb = ev_temp(e->ev, i);
	out(e, "\t/* step %d: %s %s */\n", i, step_kind_name(e->ev->kind[i]), cmt(e, nd->name));
	emit_begin(e, i, tb);
	if (x->comm == COMM_ALLGATHER) {
		ir_assert(nd->nout == 1 && e->ev->inst[k].tensor == nd->out[0]);
		e->cur[nd->out[0]] = k;
		out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", k, k, cmt(e, nd->name));
		emit_gather(e, x, k);
	} else if (x->comm == COMM_ALLREDUCE) {
		ir_assert(emit_bucket(e, nd, x->comm) == dag_workspace(e->d, e->s->step[i]));
	} else if (x->comm == COMM_PACK) {    /* the flat buffer, a tensor */
		ir_assert(nd->nout == 1 && e->ev->inst[k].tensor == nd->out[0]);
		e->cur[nd->out[0]] = k;
		out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", k, k, cmt(e, nd->name));
		out(e, "\trt_tblock = (unsigned char *)D[%d].p;\n", k);
		ir_assert(emit_bucket(e, nd, x->comm) == e->d->t[nd->out[0]].bytes);
	} else if (dag_xfer(e->d, e->s->step[i] - 1)->comm != COMM_PACK) {
		ir_assert(x->comm == COMM_REDUCE_SCATTER && e->ranks == 1);
		emit_shards(e, nd, x, k);
		emit_to_shards(e, nd);
	} else {        /* COMM_REDUCE_SCATTER, right after its pack node */
		int v = e->s->step[i] - 1;
		ir_assert(dag_xfer(e->d, v)->comm == COMM_PACK && e->d->node[v].out[0] == nd->in[0]);
		emit_shards(e, nd, x, k);
		out(e, "\trt_tblock = (unsigned char *)D[%d].p;\n", e->cur[nd->in[0]]);
		ir_assert(emit_bucket(e, &e->d->node[v], x->comm) == e->d->t[nd->in[0]].bytes);
	}
	out(e, "\trt_end(%lld);\n", (long long)e->ev->live_bytes[i]);
	for (int q = e->drop[i]; q >= 0; q = e->dnext[q])
		out(e, "\trt_drop(D[%d], &rt_inst[%d]);\n", q, q);
	ar_free(&e->refs);
	ar_init(&e->refs);
}

/* ---- a pipeline stage's boundary (layouts: codegen/runtime_dist.h) */

/* The message tag of Dag tensor t in the node's micro-batch: both ends
 * name the same IR tensor (an activation, or its gradient). */
static long long
pipe_tag(Em *e, int t)
{
	return (long long)e->d->t[t].ir_tensor * e->mbs + dag_micro_batch(e->d, e->node);
}

/* A recv_grad: the gradient into a new instance, or into the step's
 * temporary and added, as a backward step's contribution is. */
static void
emit_recv_grad(Em *e, int i, const DagXfer *x, int *next)
{
	const DagNode *nd = e->node;
	int t = nd->acc[0].tensor;
	int64_t toff[2];

	ir_assert(nd->nacc == 1 && x->npeer == 1 && nd->acc[0].view_src < 0);
	mp_temp_layout(e->d, e->ev, e->s, i, toff);
	if (toff[0] >= 0) {
		out(e, "\t{ RtT t0 = rt_tmp(D[%d], %s, %lld);\n", e->cur[t],
		    dt_enum(e, inst_dtype(e, t)), (long long)toff[0]);
		out(e, "\trt_recv(t0, %d, %lld, 0);\n\trt_copy(t0, D[%d], 1); }\n", x->peer[0],
		    pipe_tag(e, t), e->cur[t]);
		return;
	}
	e->cur[t] = (*next)++;
	ir_assert(e->ev->inst[e->cur[t]].tensor == t);
	out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", e->cur[t], e->cur[t],
	    cmt(e, e->d->t[t].name));
	out(e, "\trt_recv(D[%d], %d, %lld, 0);\n", e->cur[t], x->peer[0], pipe_tag(e, t));
}

/* Step i of a boundary node: a micro-batch's data, an activation or a
 * gradient from or to another stage. */
static void
emit_pipe_step(Em *e, int i)
{
	const DagNode *nd = &e->d->node[e->s->step[i]];
	const DagXfer *x = dag_xfer(e->d, e->s->step[i]);
	int next = e->ev->step_prod[i + 1];
	e->node = nd;
	out(e, "\t/* step %d: %s %s */\n", i, step_kind_name(e->ev->kind[i]), cmt(e, nd->name));
	emit_begin(e, i, ev_temp(e->ev, i));
	if (x->pipe == PIPE_LOAD || x->pipe == PIPE_RECV) {
		int t = nd->out[0], k = next++;
		const DagTensor *dt = &e->d->t[t];
		ir_assert(e->ev->inst[k].tensor == t);
		e->cur[t] = k;
		out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", k, k, cmt(e, dt->name));
		if (x->pipe == PIPE_LOAD)
			out(e, "\trt_init(D[%d], rt_dkey_mb(\"%s\", %d), %lld);\n", k,
			    str(e, ten(e, dt->ir_tensor)->id), dag_micro_batch(e->d, nd),
			    (long long)e->range[dt->ir_tensor]);
		else
			out(e, "\trt_recv(D[%d], %d, %lld, 1);\n", k, x->peer[0], pipe_tag(e, t));
	} else if (x->pipe == PIPE_RECV_GRAD) {
		emit_recv_grad(e, i, x, &next);
	} else {
		for (int j = 0; j < x->npeer; j++)
			out(e, "\trt_send(D[%d], %d, %lld);\n", e->cur[nd->in[0]], x->peer[j],
			    pipe_tag(e, nd->in[0]));
	}
	ir_assert(next == e->ev->step_prod[i + 2]);
	out(e, "\trt_end(%lld);\n", (long long)e->ev->live_bytes[i]);
	for (int q = e->drop[i]; q >= 0; q = e->dnext[q])
		out(e, "\trt_drop(D[%d], &rt_inst[%d]);\n", q, q);
	ar_free(&e->refs);
	ar_init(&e->refs);
}

/* A pipeline stage runs M copies of each op: the IR tensors of the step's
 * op name the Dag tensors of the step's copy. */
static void
bind(Em *e, const DagNode *nd)
{
	for (int j = 0; j < nd->nin; j++)
		e->dag_of[e->d->t[nd->in[j]].ir_tensor] = nd->in[j];
	for (int j = 0; j < nd->nout; j++)
		e->dag_of[e->d->t[nd->out[j]].ir_tensor] = nd->out[j];
	for (int j = 0; j < nd->nacc; j++) {
		e->dag_of[e->d->t[nd->acc[j].tensor].ir_tensor] = nd->acc[j].tensor;
		if (nd->acc[j].view_src >= 0)
			e->dag_of[e->d->t[nd->acc[j].view_src].ir_tensor] = nd->acc[j].view_src;
	}
}

/* Step i: allocations, kernels, the memory check, the frees. */
static void
emit_step(Em *e, int i)
{
	const DagNode *nd = &e->d->node[e->s->step[i]];
	const DagXfer *x = dag_xfer(e->d, e->s->step[i]);
	if (x->comm != COMM_NONE) {
		emit_comm_step(e, i);
		return;
	}
	if (x->pipe != PIPE_NONE) {
		emit_pipe_step(e, i);
		return;
	}
	if (e->nstages > 1)
		bind(e, nd);
	const Op *o = &e->g->op[nd->ir_op];
	int64_t *toff = ar_alloc(&e->a, sizeof *toff * (size_t)(nd->nacc + 1));
	int64_t tb = mp_temp_layout(e->d, e->ev, e->s, i, toff);
	int next = e->ev->step_prod[i + 1];
	e->node = nd;
	e->step = i;
	ir_assert(tb == ev_temp(e->ev, i));
	out(e, "\t/* step %d: %s %s (%s) */\n", i, step_kind_name(e->ev->kind[i]), cmt(e, nd->name),
	    cmt(e, o->kind == OP_CUSTOM ? o->p->custom->name : ir_optab[o->kind].name));
	emit_begin(e, i, tb);
	for (int j = 0; j < nd->nout; j++) {
		int k = next++, t = nd->out[j];
		const DagTensor *dt = &e->d->t[t];
		const Tensor *it = ten(e, dt->ir_tensor);
		ir_assert(e->ev->inst[k].tensor == t);
		if (it->view_of >= 0) {
			const char *src = ref(e, it->view_of);
			e->cur[t] = k;
			int oj = 0;
			while (o->out[oj] != dt->ir_tensor)
				oj++;
			emit_view(e, o, oj, k, src);
		} else {
			e->cur[t] = k;
			out(e, "\tD[%d] = rt_make(&rt_inst[%d]);  /* %s */\n", k, k, cmt(e, dt->name));
		}
	}
	if (nd->is_backward)
		emit_backward(e, o, &next, toff);
	else
		emit_forward(e, o, toff[nd->nacc]);
	if (nd->is_backward && o->kind == OP_CUSTOM)
		out(e, "\trt_touch(%lld, %lld);\n", (long long)toff[nd->nacc],
		    (long long)dag_workspace(e->d, e->s->step[i]));
	ir_assert(next == e->ev->step_prod[i + 2]);
	for (int j = 0; j < nd->nout && e->g->loss >= 0; j++)
		if (e->d->t[nd->out[j]].ir_tensor == e->g->loss && e->nstages > 1)
			out(e, "\trt_loss_mb(D[%d], %d);\n", e->cur[nd->out[j]], dag_micro_batch(e->d, nd));
		else if (e->d->t[nd->out[j]].ir_tensor == e->g->loss)
			out(e, "\trt_loss(D[%d]);\n", e->cur[nd->out[j]]);
	out(e, "\trt_end(%lld);\n", (long long)e->ev->live_bytes[i]);
	for (int k = e->drop[i]; k >= 0; k = e->dnext[k])
		out(e, "\trt_drop(D[%d], &rt_inst[%d]);\n", k, k);
	ar_free(&e->refs);
	ar_init(&e->refs);
	e->cstart = NULL;
}

/* Integer inputs get the smallest range every consumer accepts. */
static void
int_ranges(Em *e)
{
	const Graph *g = e->g;
	for (int t = 0; t < g->nt; t++)
		e->range[t] = dtype_is_float(g->t[t].dtype) ? 0 :
		              g->t[t].dtype == DT_U8 || g->t[t].dtype == DT_BOOL ? 2 : 16;
	for (int i = 0; i < g->nop; i++) {
		const Op *o = &g->op[i];
		int t = -1;
		int64_t r = 0;
		if (o->kind == OP_EMBEDDING) {
			t = o->in[0];
			r = g->t[o->in[1]].shape[0];
		} else if (o->kind == OP_CROSS_ENTROPY) {
			const Tensor *l = &g->t[o->in[0]];
			t = o->in[1];
			r = l->shape[l->ndim - 1];
		} else if (o->kind == OP_GATHER || o->kind == OP_INDEX_SELECT ||
		           o->kind == OP_SCATTER_ADD) {
			const Tensor *x = &g->t[o->in[0]];
			t = o->in[1];
			r = x->ndim > 0 ? x->shape[o->p->axis_norm] : 0;
		}
		if (t < 0)
			continue;
		t = ir_storage_root(g, t);
		if (r > 0 && (e->range[t] == 0 || r < e->range[t]))
			e->range[t] = r;
	}
}

/* Last live step of each instance, widened over the views of it, and the
 * per-step lists of owning instances to free. */
static void
lifetimes(Em *e)
{
	const MemEval *ev = e->ev;
	mp_widen_ends(ev, e->end);
	for (int i = 0; i < ev->nsteps; i++)
		e->drop[i] = -1;
	for (int k = ev->ninst - 1; k >= 0; k--) {
		int s = (int)e->end[k];
		e->dnext[k] = -1;
		/* to_end instances stay for the checksums */
		if (ev->inst[k].owned > 0 && s >= 0 && s < ev->nsteps &&
		    !e->d->t[ev->inst[k].tensor].to_end) {
			e->dnext[k] = e->drop[s];
			e->drop[s] = k;
		}
	}
}

/* Each param's weight buffer and its arena offset, and which params the
 * program holds; checks that the Dag lists every persistent byte. */
static void
persistent_offsets(Em *e)
{
	const Dag *d = e->d;
	int64_t sum[CAT_COUNT] = {0};
	e->par_off = ar_alloc(&e->a, sizeof *e->par_off * (size_t)(e->nparam + 1));
	e->held = ar_alloc(&e->a, (size_t)e->nparam + 1);
	for (int p = 0; p < e->nparam; p++)
		e->par_off[p] = -1;
	for (int i = 0; i < d->npersistent; i++) {
		sum[d->persistent_cat[i]] += d->persistent_buf[i];
		if (d->persistent_cat[i] == CAT_PARAMS) {
			e->par_off[e->param_of[d->persistent_ir[i]]] = e->ev->persistent_offset[i];
			e->held[e->param_of[d->persistent_ir[i]]] = true;
		}
	}
	for (int c = 0; c < CAT_COUNT; c++)
		ir_assert(sum[c] == d->persistent[c]);
	/* a pipeline stage holds the params its ops read; without stages, all */
	for (int p = 0; p < e->nparam; p++)
		ir_assert(e->held[p] || e->nstages > 1);
}

/* One rank of a data-parallel training step: its settings, and the
 * gather making each gathered buffer (ZeRO-3). */
static void
dist_setup(Em *e)
{
	const DistOptions *o = &e->g->settings.dist;
	e->ranks = o->ranks > 1 ? o->ranks : 1;
	e->dist = e->ranks > 1 || o->offload_optimizer || o->offload_params || e->nstages > 1;
	e->zero2 = dist_grad_shards(o) && e->g->train;     /* both imply e->dist */
	e->zero3 = dist_gathers(o) && e->g->train;
	e->gnode = ar_alloc(&e->a, sizeof(int) * (size_t)(e->d->nt + 1));
	for (int v = 0; v < e->d->nnode; v++)
		if (dag_xfer(e->d, v)->comm == COMM_ALLGATHER)
			e->gnode[e->d->node[v].out[0]] = v + 1;
}

static void
setup(Em *e)
{
	const Graph *g = e->g;
	const Dag *d = e->d;
	ar_init(&e->a);
	e->nstages = g->settings.pipe.stages > 1 ? g->settings.pipe.stages : 1;
	e->stage = g->settings.pipe.stage;
	e->mbs = g->settings.pipe.micro_batches;
	e->dag_of = ar_alloc(&e->a, sizeof(int) * (size_t)(g->nt + 1));
	e->param_of = ar_alloc(&e->a, sizeof(int) * (size_t)(g->nt + 1));
	e->params = ar_alloc(&e->a, sizeof(int) * (size_t)(g->nt + 1));
	e->range = ar_alloc(&e->a, sizeof(int64_t) * (size_t)(g->nt + 1));
	e->qhead = ar_alloc(&e->a, sizeof(int) * (size_t)(g->nt + 1));
	for (int t = 0; t < g->nt; t++)
		e->qhead[t] = -1;
	e->cur = ar_alloc(&e->a, sizeof(int) * (size_t)(d->nt + 1));
	e->end = ar_alloc(&e->a, sizeof *e->end * (size_t)(e->ev->ninst + 1));
	e->dnext = ar_alloc(&e->a, sizeof(int) * (size_t)(e->ev->ninst + 1));
	e->drop = ar_alloc(&e->a, sizeof(int) * (size_t)(e->ev->nsteps + 1));
	for (int t = 0; t < g->nt; t++) {
		e->dag_of[t] = -1;
		e->param_of[t] = -1;
		if (g->t[t].kind == TK_PARAM) {
			e->param_of[t] = e->nparam;
			e->params[e->nparam++] = t;
		}
	}
	for (int t = 0; t < d->nt; t++) {
		e->cur[t] = -1;
		if (d->t[t].ir_tensor >= 0)
			e->dag_of[d->t[t].ir_tensor] = t;
	}
	int_ranges(e);
	lifetimes(e);
	persistent_offsets(e);
	dist_setup(e);
}

static void
emit_shape(Em *e, Dtype dt, const Tensor *t)
{
	out(e, "{%s, %d, {", dt_enum(e, dt), t->ndim);
	for (int i = 0; i < t->ndim; i++)
		out(e, "%s%lld", i ? ", " : "", (long long)t->shape[i]);
	out(e, "}");
}

static void
emit_tables(Em *e)
{
	const MemEval *ev = e->ev;
	out(e, "\nstatic const RtInst rt_inst[%d] = {\n", ev->ninst + 1);
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		out(e, "\t");
		if (e->d->t[in->tensor].ir_tensor < 0)   /* a gathered buffer: bytes */
			out(e, "{RT_DT_U8, 1, {%lld}", (long long)e->d->t[in->tensor].bytes);
		else
			emit_shape(e, inst_dtype(e, in->tensor), ten(e, e->d->t[in->tensor].ir_tensor));
		out(e, ", %lld, %lld},  /* %d: %s, steps %d..%d */\n", (long long)in->owned,
		    (long long)ev_offset(ev, k), k, cmt(e, e->d->t[in->tensor].name), in->start, (int)e->end[k]);
	}
	out(e, "\t{0, 0, {0}, 0, -1}\n};\n");
	out(e, "\nstatic const RtInst rt_par[%d] = {\n", e->nparam + 1);
	for (int p = 0; p < e->nparam; p++) {
		const Tensor *t = ten(e, e->params[p]);
		out(e, "\t");
		emit_shape(e, t->dtype, t);
		out(e, ", %lld, %lld},  /* %d: %s */\n", (long long)t->bytes,
		    (long long)e->par_off[p], p, cmt(e, t->id));
	}
	out(e, "\t{0, 0, {0}, 0, -1}\n};\n");
	out(e, "\nstatic RtT D[%d], P[%d];\n", ev->ninst + 1, e->nparam + 1);
	if (e->zero2)
		out(e, "static RtT G[%d];  /* gradient shards */\n", e->nparam + 1);
}

/* Where persistent buffer i lives: on the device at its arena offset, or
 * on the host when it is offloaded. */
static const char *
dist_place(Em *e, int i)
{
	const Dag *d = e->d;
	char *b = nextbuf(e);
	if (d->persistent_host && d->persistent_host[i])
		snprintf(b, CG_REFLEN, "rt_host_alloc(%lld)", (long long)d->persistent_host[i]);
	else
		snprintf(b, CG_REFLEN, "rt_alloc(%lld, %lld)", (long long)d->persistent_buf[i],
		         (long long)e->ev->persistent_offset[i]);
	return b;
}

/* Persistent buffer i of one data-parallel rank: a weight (its shard from
 * ZeRO-3; a `buffer` param whole), a shard of master copy or optimizer
 * state, a gradient shard kept for the whole step (accumulation,
 * offload). */
static void
emit_dist_buffer(Em *e, int i)
{
	const Dag *d = e->d;
	const Tensor *t = ten(e, d->persistent_ir[i]);
	int p = e->param_of[d->persistent_ir[i]];
	MemCat c = d->persistent_cat[i];
	if (c == CAT_PARAMS && (!e->zero3 || t->buffer)) {     /* whole */
		out(e, "\tP[%d] = rt_desc(%s, rt_par[%d].dt, rt_par[%d].nd, rt_par[%d].shape);\n",
		    p, dist_place(e, i), p, p, p);
		out(e, "\trt_param(P[%d], rt_key(\"%s\"));\n", p, str(e, t->id));
	} else if (c == CAT_PARAMS) {
		out(e, "\tP[%d] = rt_shard(%s, %s, %lld);\n", p, dist_place(e, i), dt_enum(e, t->dtype),
		    (long long)dag_shard_elems(ir_numel(t), e->ranks));
		out(e, "\trt_param_shard(P[%d], rt_key(\"%s\"), %lld);\n", p, str(e, t->id),
		    (long long)ir_numel(t));
	} else if (c == CAT_PARAM_GRADS) {
		out(e, "\tG[%d] = rt_shard(%s, %s, %lld);\n\trt_fill(G[%d], 0);\n", p, dist_place(e, i),
		    dt_enum(e, inst_dtype(e, e->dag_of[t->grad])), (long long)dag_shard_elems(ir_numel(t), e->ranks), p);
	} else {
		out(e, "\t(void)%s;  /* %s of %s */\n", dist_place(e, i),
		    c == CAT_MASTER ? "master copy" : "optimizer state", cmt(e, t->id));
	}
}

/* Persistent buffers, in Dag order at their arena offsets, and the
 * instances that exist before step 0. */
static void
emit_prologue(Em *e)
{
	const Dag *d = e->d;
	out(e, "\nstatic void\nrt_prologue(void)\n{\n");
	for (int i = 0; i < d->npersistent; i++) {
		const Tensor *t = ten(e, d->persistent_ir[i]);
		int p = e->param_of[d->persistent_ir[i]];
		if (e->dist) {
			emit_dist_buffer(e, i);
		} else if (d->persistent_cat[i] == CAT_PARAMS) {
			out(e, "\tP[%d] = rt_make(&rt_par[%d]);\n", p, p);
			out(e, "\trt_param(P[%d], rt_key(\"%s\"));\n", p, str(e, t->id));
		} else {
			out(e, "\trt_alloc(%lld, %lld);  /* %s of %s */\n",
			    (long long)d->persistent_buf[i], (long long)e->ev->persistent_offset[i],
			    d->persistent_cat[i] == CAT_MASTER ? "master copy" : "optimizer state",
			    cmt(e, t->id));
		}
	}
	for (int k = 0; k < e->ev->step_prod[1]; k++) {
		const Instance *in = &e->ev->inst[k];
		const DagTensor *dt = &d->t[in->tensor];
		e->cur[in->tensor] = k;
		if (e->end[k] < 0 && !dt->to_end)
			continue;       /* serves no step: occupies no memory */
		out(e, "\tD[%d] = rt_make(&rt_inst[%d]);\n", k, k);
		if (dt->cat == CAT_INPUTS)
			out(e, "\trt_init(D[%d], rt_dkey(\"%s\"), %lld);\n", k, str(e, dt->name),
			    (long long)e->range[dt->ir_tensor]);
		else
			out(e, "\trt_fill(D[%d], 0);  /* %s */\n", k, cmt(e, dt->name));
	}
	out(e, "}\n");
}

static void
emit_epilogue(Em *e)
{
	const Graph *g = e->g;
	out(e, "\nstatic void\nrt_epilogue(void)\n{\n");
	if (g->train) {
		for (int p = 0; p < e->nparam; p++) {
			int gt = ten(e, e->params[p])->grad;
			int dt = gt >= 0 && e->held[p] ? e->dag_of[gt] : -1;
			if (dt >= 0 && e->zero2)
				out(e, "\trt_cksum_shards(\"%s\", G[%d], %lld, rt_key(\"%s\"));\n",
				    str(e, ten(e, gt)->id), p, (long long)ir_numel(ten(e, e->params[p])),
				    str(e, ten(e, e->params[p])->id));
			else if (dt >= 0 && e->cur[dt] >= 0)
				out(e, "\trt_cksum(\"%s\", D[%d]);\n\trt_dirgrad(D[%d], rt_key(\"%s\"));\n",
				    str(e, e->d->t[dt].name), e->cur[dt], e->cur[dt],
				    str(e, ten(e, e->params[p])->id));
		}
	}
	/* every output; a pipeline stage's, of each micro-batch (mb<m>:name) */
	for (int dt = 0; !g->train && dt < e->d->nt; dt++) {
		bool output = false;
		for (int i = 0; i < g->noutputs; i++)
			output |= e->d->t[dt].ir_tensor == g->outputs[i];
		if (output && e->cur[dt] >= 0)
			out(e, "\trt_cksum(\"%s\", D[%d]);\n", str(e, e->d->t[dt].name), e->cur[dt]);
	}
	out(e, "}\n");
}

static bool
has_f64(const Graph *g)
{
	for (int t = 0; t < g->nt; t++)
		if (g->t[t].dtype == DT_F64)
			return true;
	return false;
}

/* What a pipeline stage sends over its step: bytes and messages, for the
 * send buffer (runtime_dist.h). */
static void
send_totals(Em *e, int64_t *bytes, int64_t *n)
{
	*bytes = *n = 0;
	for (int i = 0; i < e->ev->nsteps; i++) {
		const DagNode *nd = &e->d->node[e->s->step[i]];
		const DagXfer *x = dag_xfer(e->d, e->s->step[i]);
		if (x->pipe == PIPE_SEND || x->pipe == PIPE_SEND_GRAD) {
			*bytes += x->npeer * e->d->t[nd->in[0]].bytes;
			*n += x->npeer;
		}
	}
}

/* The file-scope names of a section: in a pipeline's program each stage
 * has its section, these names renamed by #define to the stage's own. */
static const char *const section_names[] = {
	"rt_inst", "rt_par", "D", "P", "G", "rt_prologue", "rt_epilogue", "rt_main",
};

/* The tables, the steps and rt_main, which runs the step and returns
 * rt_finish's status. */
static void
emit_section(Em *e, int64_t arena_bytes)
{
	const MemEval *ev = e->ev;
	int n = (int)(sizeof section_names / sizeof *section_names);
	for (int j = 0; j < n && e->nstages > 1; j++)
		out(e, "\n#define %s %s_s%d", section_names[j], section_names[j], e->stage);
	out(e, "%s", e->nstages > 1 ? "\n" : "");
	emit_tables(e);
	emit_prologue(e);
	for (int c = 0; c * CG_CHUNK < ev->nsteps; c++) {
		out(e, "\nstatic void\nrt_run_s%d_%d(void)\n{\n", e->stage, c);
		for (int i = c * CG_CHUNK; i < ev->nsteps && i < (c + 1) * CG_CHUNK; i++)
			emit_step(e, i);
		out(e, "}\n");
	}
	emit_epilogue(e);
	out(e, "\nstatic int\nrt_main(int argc, char **argv)\n{\n");
	out(e, "\trt_start(argc, argv, %lld);\n", (long long)arena_bytes);
	if (e->nstages > 1) {
		int64_t bytes, nsend;
		send_totals(e, &bytes, &nsend);
		out(e, "\trt_pipe_setup(%d, %lld, %lld);\n", e->mbs, (long long)bytes, (long long)nsend);
	}
	out(e, "\trt_prologue();\n");
	for (int c = 0; c * CG_CHUNK < ev->nsteps; c++)
		out(e, "\trt_run_s%d_%d();\n", e->stage, c);
	out(e, "\trt_mark(-1);\n\trt_epilogue();\n%s", e->nstages > 1 ? "\trt_pipe_losses();\n" : "");
	out(e, "\treturn rt_finish(%lldLL, %lldLL);\n}\n", (long long)ev->peak, (long long)arena_bytes);
	for (int j = 0; j < n && e->nstages > 1; j++)
		out(e, "#undef %s\n", section_names[j]);
}

static bool
any_f64(const CgStage *st, int n)
{
	for (int i = 0; i < n; i++)
		if (has_f64(st[i].g))
			return true;
	return false;
}

int
cg_emit(const Graph *g, const Dag *d, const Schedule *s, const MemEval *ev,
        int64_t arena_bytes, FILE *f)
{
	CgStage st = {g, d, s, ev, arena_bytes};
	return cg_emit_pipeline(&st, 1, f);
}

int
cg_emit_pipeline(const CgStage *st, int K, FILE *f)
{
	Em e = {.g = st[0].g, .d = st[0].d, .s = st[0].s, .ev = st[0].ev, .out = f};
	int ranks = st[0].g->settings.dist.ranks > 1 ? st[0].g->settings.dist.ranks : 1;
	ar_init(&e.refs);
	setup(&e);
	out(&e, "/* %s -- generated by remat: %d steps, %d instances.\n"
	    " * Build: nvcc -fmad=false -x cu FILE -lcublas,\n"
	    " * or cc -x c -std=c11 -O1 -DREMAT_HOST FILE -lm.\n"
	    " * Run: ./a.out [--tracked | --arena] */\n", cmt(&e, e.g->file ? e.g->file : "-"),
	    e.ev->nsteps, e.ev->ninst);
	if (K > 1)
		out(&e, "/* %d pipeline stages of %d rank%s each (docs/distributed.md, \"Running a\n"
		    " * pipeline\"): build with -DREMAT_MPI, with mpicc (host mode) or nvcc and\n"
		    " * -lmpi -lnccl -lcublas; run: mpirun -np %d ./a.out. World rank w runs\n"
		    " * stage w / %d. */\n",
		    K, ranks, ranks > 1 ? "s" : "", K * ranks, ranks);
	else if (e.dist)
		out(&e, "/* One rank of %d (docs/distributed.md): build with -DREMAT_MPI, with mpicc\n"
		    " * (host mode) or nvcc and -lmpi -lnccl -lcublas; run: mpirun -np %d ./a.out */\n",
		    e.ranks, e.ranks);
	if (any_f64(st, K))
		out(&e, "#define RT_F64 1\n");
	fputs(cg_runtime_src, f);
	for (int k = 0; k < K; k++) {
		if (k) {
			ar_free(&e.a);
			e = (Em){.g = st[k].g, .d = st[k].d, .s = st[k].s, .ev = st[k].ev, .out = f,
			         .refs = e.refs};
			setup(&e);
		}
		emit_section(&e, st[k].arena_bytes);
	}
	out(&e, "\nint\nmain(int argc, char **argv)\n{\n");
	if (K > 1) {
		out(&e, "\tswitch (rt_dist_start(&argc, &argv, %d, %d)) {\n", ranks, K);
		for (int k = 0; k < K; k++)
			out(&e, "\tcase %d: return rt_dist_end(rt_main_s%d(argc, argv));\n", k, k);
		out(&e, "\t}\n\treturn 2;\n}\n");
	} else if (e.dist) {
		out(&e, "\trt_dist_start(&argc, &argv, %d, 1);\n", e.ranks);
		out(&e, "\treturn rt_dist_end(rt_main(argc, argv));\n}\n");
	} else {
		out(&e, "\treturn rt_main(argc, argv);\n}\n");
	}
	ar_free(&e.a);
	ar_free(&e.refs);
	return ferror(f) ? 1 : 0;
}
