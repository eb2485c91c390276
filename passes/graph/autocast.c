/* passes/graph/autocast.c -- `precision = mixed` under --runtime pytorch and
 * pytorch-cpu: the program is f32 params and inputs, run under
 * torch.autocast (docs/runtime-pytorch.md, "precision = mixed is
 * autocast"). Runs after shape_infer and before autodiff, so that autodiff
 * sees the casts autocast makes as ops of their own (they are autograd ops
 * in PyTorch: ToCopyBackward casts the gradient back) and the ops' saved
 * inputs are the cast copies, as PyTorch saves them.
 *
 * Reads: Graph tensors (kind, dtype, bytes, needs_grad), ops, settings.
 * Writes: the dtype and bytes of every floating param and input (f32) and of
 * every op's outputs; a new OP_CAST op before an op for each input that
 * autocast casts; Tensor.autocast_cached on the casts of params that
 * autocast caches (lower_torch keeps them to the end of forward); on CUDA,
 * cross_entropy's extra lsm_f32 (nll_loss's f32 copy of half log-probs).
 *
 * The op lists are PyTorch's (aten/src/ATen/autocast_mode.h and .cpp, as
 * torch 2.15 has them), per device: CUDA's, or the CPU's for
 * pytorch-cpu. An op's policy says what happens to its floating inputs
 * (f64 is never cast): */
#include <string.h>

#include "graph.h"

typedef enum Policy {
	AC_NONE,        /* runs as called: the widest input dtype, no copy */
	AC_LOW,         /* lower_precision_fp: inputs cast to f16/bf16 */
	AC_F32,         /* fp32: inputs cast to f32 */
	AC_F32_OPT,     /* fp32_set_opt_dtype: called with dtype=f32 */
	AC_PROMOTE      /* promote: inputs cast to the widest input dtype */
} Policy;

static Policy
policy(OpKind k, bool cpu)
{
	switch (k) {
	case OP_MATMUL: case OP_CONV1D: case OP_CONV2D: case OP_ATTENTION:
		return AC_LOW;          /* matmul, conv1d/2d, SDPA: both lists */
	case OP_MSE_LOSS:
		return AC_F32;          /* both lists */
	case OP_CROSS_ENTROPY:
		/* CPU lists cross_entropy_loss; CUDA does not: its
		 * log_softmax keeps the logits' dtype (called with
		 * self.scalar_type()) and nll_loss, on the fp32 list, casts
		 * the log-probs (lower_torch counts that copy) */
		return cpu ? AC_F32 : AC_NONE;
	case OP_EXP: case OP_LOG: case OP_LAYERNORM: case OP_GROUPNORM:
	case OP_UPSAMPLE2D:
		return cpu ? AC_NONE : AC_F32;
	case OP_SOFTMAX: case OP_LOG_SOFTMAX: case OP_SUM:
		return cpu ? AC_NONE : AC_F32_OPT;
	case OP_SCATTER_ADD:
		return cpu ? AC_NONE : AC_PROMOTE;
	case OP_CONCAT:
		return cpu ? AC_PROMOTE : AC_NONE;
	default:
		return AC_NONE;
	}
}

typedef struct Ac {
	Graph *g;
	Diag *d;
	bool cpu;
	Dtype low;              /* the autocast dtype */
	int *cached;            /* [nt before the pass] a param's cached cast, or -1 */
	Dtype *was;             /* [the most inputs of an op]: infer_as's */
	int errors;
} Ac;

/* Retypes t, keeping its element count. */
static void
retype(Tensor *t, Dtype dt)
{
	int64_t n = ir_numel(t);

	t->dtype = dt;
	t->bytes = n * dtype_size(dt);
}

/* The dtype PyTorch's type promotion gives two floating dtypes. */
static Dtype
wider(Dtype a, Dtype b)
{
	if (a == DT_NONE || a == b)
		return b;
	if (dtype_size(a) != dtype_size(b))
		return dtype_size(a) > dtype_size(b) ? a : b;
	return DT_F32;          /* f16 with bf16 */
}

static bool
castable(const Tensor *t)
{
	return dtype_is_float(t->dtype) && t->dtype != DT_F64;
}

/* Appends `src.to(dt)` before the op being moved (whose scope and
 * location it takes); the cast of a param that needs grad is made once and
 * reused (autocast's cache of weight casts: leaves that require grad).
 * --infer is torch.inference_mode, under which autocast caches nothing
 * (cached_cast's !InferenceMode::is_enabled(), torch 2.15): every cast is
 * made inside the op that reads it and freed when that op returns. */
static int
add_cast(Ac *A, int src, Dtype dt, const char *scope, Loc loc)
{
	Graph *g = A->g;
	bool cache = g->train && g->t[src].kind == TK_PARAM && g->t[src].needs_grad &&
	             dt == A->low;
	const char *id;
	OpParams p;
	int o, t;

	if (cache && A->cached[src] >= 0)
		return A->cached[src];
	o = ir_add_op(g, OP_CAST, &src, 1);
	p = *g->op[o].p;
	p.dtype = dt;
	ir_set_params(g, o, &p);
	id = ar_printf(g->arena, "%s(%s)@%d", dtype_name(dt), g->t[src].id, g->nt);
	ir_set_outputs(g, o, &id, 1, scope, loc);
	A->errors += shape_infer_op(g, o, A->d) != 0;
	t = g->op[o].out[0];
	g->t[t].autocast_copy = true;
	if (cache) {
		A->cached[src] = t;
		g->t[t].autocast_cached = true;
	}
	return t;
}

/* Infers op o with its floating inputs from the first-th on temporarily
 * of dtype `as` (the dtype the kernel computes in; DT_NONE: as they are),
 * then restores them: shape.c's rules want one dtype, PyTorch's kernels
 * promote. */
static void
infer_as(Ac *A, int o, Dtype as, int first)
{
	Graph *g = A->g;
	Op *op = &g->op[o];
	Dtype *was = A->was;
	int n = op->nin;

	for (int i = first; i < n; i++) {
		Tensor *t = &g->t[op->in[i]];
		was[i] = t->dtype;
		if (as != DT_NONE && castable(t))
			retype(t, as);
	}
	A->errors += shape_infer_op(g, o, A->d) != 0;
	for (int i = first; i < n; i++)
		if (g->t[op->in[i]].dtype != was[i])
			retype(&g->t[op->in[i]], was[i]);
}

static bool
is_norm(OpKind k)
{
	return k == OP_LAYERNORM || k == OP_GROUPNORM || k == OP_BATCHNORM;
}

/* The dtype an op that autocast leaves alone computes in. */
static Dtype
natural(const Graph *g, const Op *op)
{
	Dtype w = DT_NONE;

	if (is_norm(op->kind))
		/* mixed-type kernels: half x with f32 weights gives x's
		 * dtype (lower_torch sizes the statistics) */
		return g->t[op->in[0]].dtype;
	if (op->kind == OP_CAST || op->kind == OP_CUSTOM || op->kind == OP_EMBEDDING)
		return DT_NONE; /* the declared dtype, or the table's */
	/* TensorIterator's promotion; rmsnorm (an autograd.Function:
	 * `normed.to(x.dtype) * g`) gives the same */
	for (int i = 0; i < op->nin; i++)
		if (dtype_is_float(g->t[op->in[i]].dtype))
			w = wider(w, g->t[op->in[i]].dtype);
	return w;
}

/* CUDA's cross_entropy of half logits: log_softmax keeps their dtype and
 * nll_loss, on the fp32 list, casts the log-probs to an f32 copy, which it
 * saves beside log_softmax's half ones (NllLossBackward and
 * LogSoftmaxBackward each hold theirs). The copy is the op's extra
 * `lsm_f32`, so that reports show both tensors at their own dtype. */
static void
nll_copy(Ac *A, int o)
{
	Graph *g = A->g;
	Tensor *lsm = &g->t[ir_extra(&g->op[o], 0)], *c;

	if (!castable(lsm) || lsm->dtype == DT_F32)
		return;
	ir_add_extra(g, o, 1);
	lsm = &g->t[ir_extra(&g->op[o], 0)];    /* g->t may have moved */
	c = &g->t[ir_extra(&g->op[o], 1)];
	ir_set_shape(g, c, lsm->ndim, lsm->shape);
	c->dtype = DT_F32;
	c->bytes = ir_numel(lsm) * 4;
}

/* Moves op `old` (a copy) to the end of g's op list, casting its inputs
 * as its policy says, and infers its outputs' dtypes. */
static void
move_op(Ac *A, const Op *old)
{
	Graph *g = A->g;
	Policy pol = policy(old->kind, A->cpu);
	const char *scope = ir_op_scope(g, old);
	Loc loc = ir_op_loc(g, old);
	int *in = ar_array(g->arena, (size_t)(old->nin ? old->nin : 1), sizeof(int));
	Dtype to = DT_NONE, as = DT_NONE;
	int o;

	memcpy(in, old->in, sizeof(int) * (size_t)old->nin);
	if (pol == AC_LOW)
		to = A->low;
	else if (pol == AC_F32)
		to = DT_F32;
	else if (pol == AC_PROMOTE)
		for (int i = 0; i < old->nin; i++)
			if (castable(&g->t[in[i]]))
				to = wider(to, g->t[in[i]].dtype);
	if (pol == AC_F32_OPT && castable(&g->t[in[0]]) && g->t[in[0]].dtype != DT_F32) {
		/* sum(x, dtype=f32) reads x as it is; softmax and log_softmax
		 * read it as it is only on CUDA for f16 (half_to_float), and
		 * else convert it first (a copy, SoftMax.cpp) */
		if (old->kind == OP_SUM || g->t[in[0]].dtype == DT_F16)
			as = DT_F32;
		else
			to = DT_F32;
	}
	/* last argument first: the autocast wrappers cast their arguments
	 * in a C++ parameter pack, which gcc's builds evaluate right to left */
	for (int i = old->nin - 1; to != DT_NONE && i >= 0; i--)
		if (castable(&g->t[in[i]]) && g->t[in[i]].dtype != to)
			in[i] = add_cast(A, in[i], to, scope, loc);
	/* then SDPA turns a bool mask into an additive one of the query's
	 * dtype (convert_boolean_attn_mask), which the CPU flash kernel
	 * (no dropout: lower_torch.c's cpu_flash) saves */
	if (old->kind == OP_ATTENTION && A->cpu && old->nin > 3 && old->p->dropout == 0 &&
	    g->t[in[3]].dtype == DT_BOOL)
		in[3] = add_cast(A, in[3], g->t[in[0]].dtype, scope, loc);
	g->op = ar_fit(g->arena, g->op, g->nop, &g->capop, sizeof *g->op, 256);
	o = g->nop++;
	g->op[o] = *old;
	g->op[o].in = in;
	for (int k = 0; k < old->nout + (int)old->nextra; k++)
		g->t[old->out[k]].producer = o;
	if (pol == AC_NONE)
		as = natural(g, &g->op[o]);
	/* a norm's weights are read as x's dtype; every other op's inputs as
	 * the dtype it computes in */
	infer_as(A, o, as, pol == AC_NONE && is_norm(old->kind));
	if (old->kind == OP_CROSS_ENTROPY && !A->cpu)
		nll_copy(A, o);
}

int
autocast(Graph *g, Diag *d)
{
	Ac A = {g, d, g->settings.pytorch_cpu, DT_F16, NULL, NULL, 0};
	Op *old = g->op;
	int nold = g->nop, most = 1;

	for (int o = 0; o < nold; o++)
		most = old[o].nin > most ? old[o].nin : most;
	A.was = ar_array(g->arena, (size_t)most, sizeof *A.was);

	/* torch.autocast's default dtype on CUDA is f16; a net written with
	 * bf16 params asks for bf16. The CPU's is bf16. */
	for (int i = 0; i < g->nt; i++)
		if (g->t[i].kind == TK_PARAM && g->t[i].dtype == DT_BF16)
			A.low = DT_BF16;
	if (A.cpu)
		A.low = DT_BF16;
	A.cached = ar_array(g->arena, (size_t)g->nt + 1, sizeof(int));
	for (int i = 0; i < g->nt; i++) {
		A.cached[i] = -1;
		if ((g->t[i].kind == TK_PARAM || g->t[i].kind == TK_INPUT) &&
		    castable(&g->t[i]) && g->t[i].dtype != DT_F32)
			retype(&g->t[i], DT_F32);
	}
	g->op = NULL;
	g->nop = g->capop = 0;
	for (int o = 0; o < nold; o++)
		move_op(&A, &old[o]);
	return A.errors;
}
