/* passes/graph/lower_torch.c -- --runtime pytorch and pytorch-cpu:
 * rewrites the Dag that lower_graph built so that it counts what PyTorch
 * eager autograd allocates, read at operator boundaries: PyTorch >= 2.4 on
 * CUDA (pytorch), or PyTorch 1.13 with the CPU allocator (pytorch-cpu,
 * what tests/pytorch measures). Every difference from the remat runtime is
 * one rule below; docs/runtime-pytorch.md lists them op by op.
 *
 * Reads: Graph ops (kind, in, out, extra), tensors (shape, dtype, view_of,
 * grad, kind), g->loss, g->settings.pytorch_cpu. Writes: DagTensor bytes /
 * view_src / to_end, DagNode in / workspace, DagAcc view_src /
 * out_of_place.
 *
 * Strides are simulated (forward tensors and gradients) only to decide
 * where `reshape`/`flatten` copies instead of viewing: PyTorch views when
 * the strides allow it and copies otherwise. Gradient layouts follow the
 * -O0 backward order (the first contribution in that order makes the
 * buffer; a later one makes a contiguous sum). */
#include <string.h>

#include "graph.h"

typedef struct Torch {
	const Graph *g;
	Dag *d;
	Arena *a;
	int *dag_of;            /* IR tensor -> Dag tensor, or -1 */
	int64_t (*st)[IR_MAXDIM]; /* strides of each IR tensor (and grad) */
	bool *made;             /* gradient buffer made (backward order) */
	bool cuda;              /* --runtime pytorch, not pytorch-cpu */
} Torch;

static void
contiguous(const Tensor *t, int64_t *st)
{
	int64_t s = 1;

	for (int i = t->ndim - 1; i >= 0; i--) {
		st[i] = s;
		s *= t->shape[i] > 1 ? t->shape[i] : 1;
	}
}

/* Can a tensor of shape os / strides ost be viewed with shape ns? Fills
 * nst. The chunk rule PyTorch's view() follows: each run of dims that is
 * contiguous in memory may be re-split freely, runs may not merge. */
static bool
view_strides(const int64_t *os, const int64_t *ost, int on,
             const int64_t *ns, int nn, int64_t *nst)
{
	int64_t numel = 1, tnum = 1, vnum = 1, base;
	int vd = nn - 1;

	for (int i = 0; i < on; i++)
		numel *= os[i];
	if (numel == 0 || on == 0) {
		for (int i = nn - 1, s = 1; i >= 0; s *= (int)(ns[i] ? ns[i] : 1), i--)
			nst[i] = s;
		return true;
	}
	base = ost[on - 1];
	for (int td = on - 1; td >= 0; td--) {
		tnum *= os[td];
		if (td > 0 && (os[td - 1] == 1 || ost[td - 1] == tnum * base))
			continue;
		while (vd >= 0 && (vnum < tnum || ns[vd] == 1)) {
			nst[vd] = vnum * base;
			vnum *= ns[vd];
			vd--;
		}
		if (vnum != tnum)
			return false;
		if (td > 0) {
			base = ost[td - 1];
			tnum = vnum = 1;
		}
	}
	return vd == -1;
}

static void
permute_strides(const Op *op, const int64_t *in, int n, int64_t *out)
{
	const OpParams *p = op->p;

	memcpy(out, in, sizeof *out * (size_t)n);
	if (op->kind == OP_TRANSPOSE) {
		int64_t i = p->i < 0 ? p->i + n : p->i, j = p->j < 0 ? p->j + n : p->j;
		out[i] = in[j];
		out[j] = in[i];
	} else {
		for (int k = 0; k < n && k < p->nlist; k++)
			out[k] = in[p->list[k] < 0 ? p->list[k] + n : p->list[k]];
	}
}

static bool
is_reshape(OpKind k)
{
	return k == OP_RESHAPE || k == OP_FLATTEN;
}

/* expand's view: x's strides, 0 for the new leading axes and for the
 * size-1 axes that grow. */
static void
expand_strides(const Tensor *x, const int64_t *xst, const Tensor *y, int64_t *st)
{
	int lead = y->ndim - x->ndim;

	for (int i = 0; i < y->ndim; i++)
		st[i] = i < lead || x->shape[i - lead] != y->shape[i] ? 0 : xst[i - lead];
}

/* Autocast (precision = mixed) on the CPU is PyTorch >= 2.4's, whose
 * attention is SDPA: without dropout, with or without a mask, its CPU
 * flash kernel (ScaledDotProductFlashAttentionForCpuBackward, torch 2.15),
 * which lays its output out as the CUDA kernels do for the usual
 * transposed q. */
static bool
cpu_flash(const Torch *T, const Op *op)
{
	return !T->cuda && T->g->settings.mixed && op->p->dropout == 0;
}

/* Forward strides in program order; a reshape/flatten that cannot view
 * its input copies it (the output owns its bytes). */
static void
forward_layouts(Torch *T)
{
	const Graph *g = T->g;

	for (int i = 0; i < g->nt; i++)
		contiguous(&g->t[i], T->st[i]);
	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		const Tensor *x = &g->t[op->in[0]], *y = &g->t[op->out[0]];
		int out = op->out[0];

		if (op->kind == OP_ATTENTION && y->ndim == 4 && (T->cuda || cpu_flash(T, op))) {
			/* SDPA's fused kernels write [B, S, H, Dh] and return it
			 * transposed to [B, H, S, Dh]: out.transpose(1, 2) is
			 * contiguous, and the usual reshape to [B, S, D] views */
			T->st[out][3] = 1;
			T->st[out][1] = y->shape[3];
			T->st[out][2] = y->shape[1] * y->shape[3];
			T->st[out][0] = y->shape[2] * T->st[out][2];
		} else if (op->kind == OP_TRANSPOSE || op->kind == OP_PERMUTE) {
			permute_strides(op, T->st[op->in[0]], x->ndim, T->st[out]);
		} else if (op->kind == OP_SLICE || op->kind == OP_SPLIT) {
			for (int k = 0; k < op->nout; k++)
				memcpy(T->st[op->out[k]], T->st[op->in[0]], sizeof T->st[0]);
		} else if (op->kind == OP_EXPAND) {
			expand_strides(x, T->st[op->in[0]], y, T->st[out]);
		} else if (is_reshape(op->kind) && y->view_of >= 0) {
			if (!view_strides(x->shape, T->st[op->in[0]], x->ndim, y->shape,
			                  y->ndim, T->st[out]) && T->dag_of[out] >= 0) {
				T->d->t[T->dag_of[out]].view_src = -1;
				contiguous(y, T->st[out]);
			}
		}
	}
}

/* What SDPA's fused CUDA kernels save (PyTorch >= 2.4): the output, the
 * f32 logsumexp and the Philox RNG seed and offset (two int64 tensors,
 * counted with the logsumexp), not the dropout mask, which the backward
 * regenerates from them. The flash and cuDNN kernels (half inputs, no
 * mask) keep lse [B, H, S]; the memory-efficient one (a mask, or f32
 * inputs) pads S to a multiple of 32. */
static void
sdpa_saves(Torch *T, const Op *op)
{
	const Graph *g = T->g;
	const Tensor *q = &g->t[op->in[0]];
	bool efficient = op->nin > 3 || q->dtype == DT_F32;
	int lse = T->dag_of[ir_extra(op, 0)];

	if (lse >= 0 && q->ndim == 4) {
		int64_t s = efficient ? (q->shape[2] + 31) / 32 * 32 : q->shape[2];
		T->d->t[lse].bytes = q->shape[0] * q->shape[1] * s * 4 + 2 * 8;
	}
	if (op->nextra > 1 && T->dag_of[ir_extra(op, 1)] >= 0)
		T->d->t[T->dag_of[ir_extra(op, 1)]].bytes = 0;
}

/* Under autocast on CUDA, cross_entropy of half logits: log_softmax keeps
 * their dtype and nll_loss casts its log-probs to f32, the op's extra
 * lsm_f32 (autocast.c). */
static bool
autocast_ce(const Torch *T, const Op *op)
{
	return op->nextra > 1 && T->dag_of[ir_extra(op, 1)] >= 0;
}

/* Bytes that PyTorch's CPU kernels (1.13) allocate differently:
 * layer_norm keeps mean/rstd in the input dtype; dropout's mask is a
 * tensor of x's dtype (the CPU path multiplies by a scaled noise tensor).
 * On CUDA, layer_norm keeps f32 statistics and dropout a bool mask, as the
 * remat runtime does. Both: group_norm keeps mean/rstd in the input dtype
 * (native_group_norm allocates them with the input's type on either
 * device); mse_loss returns its mean as a 0-dim view of the unreduced
 * [n(a)] loss, which it keeps. */
static void
extras(Torch *T)
{
	const Graph *g = T->g;

	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		int esz = dtype_size(g->t[op->in[0]].dtype);

		/* the statistics take the weights' dtype: x's, except under
		 * autocast, whose f32 weights make the kernels mixed-type,
		 * which keep f32 statistics (torch 2.15 on the CPU) */
		if ((op->kind == OP_LAYERNORM || op->kind == OP_GROUPNORM) && op->nin > 1)
			esz = dtype_size(g->t[op->in[1]].dtype);

		if (op->kind == OP_MSE_LOSS && T->dag_of[op->out[0]] >= 0)
			/* the mean is a 0-dim view of the unreduced loss */
			T->d->t[T->dag_of[op->out[0]]].bytes = ir_numel(&g->t[op->in[0]]) * esz;
		if (op->kind == OP_ATTENTION && T->cuda)
			sdpa_saves(T, op);
		if (op->kind != OP_GROUPNORM &&
		    (T->cuda || (op->kind != OP_LAYERNORM && op->kind != OP_DROPOUT)))
			continue;
		for (int k = 0; k < op->nextra; k++) {
			int dt = T->dag_of[ir_extra(op, k)];
			if (dt >= 0)
				T->d->t[dt].bytes = ir_numel(&g->t[ir_extra(op, k)]) * esz;
		}
	}
}

/* Appends Dag tensor x to node v's inputs (a fresh array: lower_graph
 * sized them exactly). */
static void
add_input(Torch *T, DagNode *n, int x)
{
	int *in;

	if (x < 0)
		return;
	for (int j = 0; j < n->nin; j++)
		if (n->in[j] == x)
			return;
	in = ar_alloc(T->a, sizeof *in * (size_t)(n->nin + 1));
	memcpy(in, n->in, sizeof *in * (size_t)n->nin);
	in[n->nin++] = x;
	n->in = in;
}

/* Node n reads x instead of old (a different saved tensor). */
static void
replace_input(Torch *T, DagNode *n, int old, int x)
{
	int *in = ar_alloc(T->a, sizeof *in * (size_t)(n->nin + 1)), k = 0;

	for (int j = 0; j < n->nin; j++)
		if (n->in[j] != old)
			in[k++] = n->in[j];
	n->in = in;
	n->nin = k;
	add_input(T, n, x);
}

/* The contribution of backward node n to gradient tensor ga (IR index)
 * of input a: whether it aliases grad(out) (returns the view's strides in
 * st) or is a new contiguous buffer. */
static bool
aliases_grad_out(Torch *T, const Op *op, int a, int gout, int64_t *st)
{
	const Graph *g = T->g;
	const Tensor *x = &g->t[a], *y = &g->t[op->out[0]];

	if (gout < 0 || g->t[a].kind == TK_PARAM)
		return false;
	if (x->dtype != y->dtype)       /* under autocast: the engine casts the
	                                 * gradient to the input's dtype, a copy */
		return false;
	switch (op->kind) {
	case OP_TRANSPOSE: case OP_PERMUTE:
		if (op->kind == OP_TRANSPOSE) {
			permute_strides(op, T->st[gout], y->ndim, st);
		} else {        /* the inverse permutation */
			for (int k = 0; k < y->ndim && k < op->p->nlist; k++) {
				int64_t ax = op->p->list[k] < 0 ? op->p->list[k] + y->ndim : op->p->list[k];
				st[ax] = T->st[gout][k];
			}
		}
		return true;
	case OP_RESHAPE: case OP_FLATTEN:
		return view_strides(y->shape, T->st[gout], y->ndim, x->shape, x->ndim, st);
	case OP_EXPAND:
		/* ExpandBackward's sum_to_size returns the gradient itself when
		 * nothing was broadcast (new axes of size 1 at most) */
		return ir_numel(x) == ir_numel(y) &&
		       view_strides(y->shape, T->st[gout], y->ndim, x->shape, x->ndim, st);
	case OP_ADD: case OP_SUB:
		/* AddBackward returns grad itself for each same-shaped input
		 * (SubBackward for the first only); a broadcast input gets a
		 * reduced new buffer */
		if (ir_numel(x) != ir_numel(y) || (op->kind == OP_SUB && a != op->in[0]))
			return false;
		memcpy(st, T->st[gout], sizeof T->st[0]);
		return true;
	case OP_CONCAT:         /* CatBackward returns narrow() views */
		memcpy(st, T->st[gout], sizeof T->st[0]);
		return true;
	default:
		return false;
	}
}

/* Backward nodes in the -O0 order: aliasing, out-of-place sums, and what
 * the nodes save beyond the remat runtime. */
static void
backward_rules(Torch *T)
{
	const Graph *g = T->g;
	Dag *d = T->d;

	for (int v = 0; v < d->nnode; v++) {
		DagNode *n = &d->node[v];
		const Op *op;
		int gout;

		if (!n->is_backward)
			continue;
		op = &g->op[n->ir_op];
		gout = g->t[op->out[0]].grad;
		if (op->kind == OP_AVGPOOL2D)   /* AvgPool2DBackward saves self */
			add_input(T, n, T->dag_of[op->in[0]]);
		if (op->kind == OP_CONV1D || op->kind == OP_CONV2D) {
			/* ConvolutionBackward saves input and weight whatever
			 * needs a gradient (one formula makes all three): the
			 * first conv of a net keeps its weight, autocast's cast
			 * of it under precision = mixed */
			add_input(T, n, T->dag_of[op->in[0]]);
			add_input(T, n, T->dag_of[op->in[1]]);
		}
		if (op->kind == OP_RELU6)       /* F.relu6 is hardtanh, whose
		                                 * HardtanhBackward saves self, not out */
			replace_input(T, n, T->dag_of[op->out[0]], T->dag_of[op->in[0]]);
		if (op->kind == OP_CROSS_ENTROPY && autocast_ce(T, op)) {
			/* NllLossBackward's dense f32 gradient, beside both
			 * saved log-probs (lsm and lsm_f32, inputs of the step),
			 * is the node's largest boundary; the step counts those
			 * and grad(logits) (half), so the workspace is the f32
			 * gradient less grad(logits) */
			const Tensor *l = &g->t[ir_extra(op, 0)];
			dag_set_workspace(d, v, dag_workspace(d, v) + ir_numel(l) *
			                  (4 - dtype_size(l->dtype)), T->a);
		} else if (op->kind == OP_CROSS_ENTROPY) {
			/* NllLossBackward's dense [N, C] gradient of the log-probs,
			 * live while LogSoftmaxBackward makes grad(logits) */
			dag_set_workspace(d, v, dag_workspace(d, v) +
			                  d->t[T->dag_of[ir_extra(op, 0)]].bytes, T->a);
		}
		for (int j = 0; j < n->nacc; j++) {
			DagAcc *ac = &n->acc[j];
			int ga = d->t[ac->tensor].ir_tensor, a = g->t[ga].grad_of;
			int64_t st[IR_MAXDIM];
			bool alias;

			if (d->t[ac->tensor].cat == CAT_PARAM_GRADS)
				continue;       /* AccumulateGrad: .grad += new, in place */
			ac->out_of_place = true;
			alias = aliases_grad_out(T, op, a, gout, st);
			ac->view_src = alias ? T->dag_of[gout] : -1;
			if (T->made[ga])
				contiguous(&g->t[ga], T->st[ga]);
			else if (alias)
				memcpy(T->st[ga], st, sizeof st);
			else
				contiguous(&g->t[ga], T->st[ga]);
			T->made[ga] = true;
		}
	}
}

void
lower_torch(const Graph *g, Dag *d, Arena *a)
{
	Arena scratch;
	Torch T = {g, d, a, NULL, NULL, NULL, !g->settings.pytorch_cpu};

	ar_init(&scratch);
	T.dag_of = ar_alloc(&scratch, sizeof *T.dag_of * (size_t)(g->nt + 1));
	T.st = ar_alloc(&scratch, sizeof *T.st * (size_t)(g->nt + 1));
	T.made = ar_alloc(&scratch, sizeof *T.made * (size_t)(g->nt + 1));
	for (int i = 0; i < g->nt; i++)
		T.dag_of[i] = -1;
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].ir_tensor >= 0)
			T.dag_of[d->t[t].ir_tensor] = t;
	forward_layouts(&T);
	extras(&T);
	if (g->train)
		backward_rules(&T);
	/* autocast casts inside the op that reads the copy, so the caller's
	 * tensor is still held while that op runs */
	for (int v = 0; v < d->nnode; v++) {
		const Op *op;

		if (d->node[v].is_backward || d->node[v].ir_op < 0)
			continue;
		op = &g->op[d->node[v].ir_op];
		for (int i = 0; i < op->nin; i++) {
			const Tensor *c = &g->t[op->in[i]];
			if (c->autocast_copy && !c->autocast_cached)
				add_input(&T, &d->node[v], T.dag_of[g->op[c->producer].in[0]]);
		}
	}
	/* autocast's cache holds its casts of the weights until the autocast
	 * region ends, after the last forward op */
	for (int v = d->nnode - 1; v >= 0; v--) {
		if (d->node[v].is_backward)
			continue;
		for (int t = 0; t < d->nt; t++)
			if (d->t[t].ir_tensor >= 0 && g->t[d->t[t].ir_tensor].autocast_cached)
				add_input(&T, &d->node[v], t);
		break;
	}
	/* the caller holds its inputs and the loss through the whole training
	 * step */
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].cat == CAT_INPUTS ||
		    (g->loss >= 0 && d->t[t].ir_tensor == g->loss))
			d->t[t].to_end = true;
	ar_free(&scratch);
}
