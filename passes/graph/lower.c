/* passes/graph/lower.c -- lowers the training graph onto the plain Dag that the
 * planners and the liveness evaluator work on (conventions: ir/dag/dag.h).
 *
 * Reads: Graph tensors (kind, bytes, view_of, grad, dtype), ops (in, out,
 * extra, saves, has_backward, flops, bwd_flops, workspace, scope: its
 * outermost def call is the node's block), settings.
 * Writes: a Dag in the given arena, with ir_op / ir_tensor back-links and
 * the list of persistent buffers (weights, master copies, optimizer state).
 */
#include <string.h>

#include "graph.h"

typedef struct Lowering {
	const Graph *g;
	Dag *d;
	Arena *a;
	int *dag_of;            /* IR tensor -> Dag tensor, -1 (params: none) */
	int cap_t, cap_n;
	const char *block;      /* the latest forward op's block: its call */
	size_t nblock_prefix;   /* prefix ("block.3."), and its length */
	int nblock;             /* blocks so far */
} Lowering;

static bool
is_param(const Graph *g, int t)
{
	return g->t[t].kind == TK_PARAM;
}

/* A view whose storage root is a param owns nothing and pins nothing. */
static bool
views_param(const Graph *g, int t)
{
	return g->t[t].view_of >= 0 && is_param(g, ir_storage_root(g, t));
}

static int
add_tensor(Lowering *L, int ir, MemCat cat)
{
	const Tensor *t = &L->g->t[ir];
	DagTensor *dt = dag_push_tensor(L->d, &L->cap_t, L->a);

	dt->name = t->id;
	dt->bytes = t->bytes;
	dt->cat = cat;
	dt->ir_tensor = ir;
	return L->dag_of[ir] = L->d->nt - 1;
}

static DagNode *
add_node(Lowering *L, int o, bool backward)
{
	const Op *op = &L->g->op[o];
	DagNode *n = dag_push_node(L->d, &L->cap_n, L->a);

	n->name = L->g->t[op->out[0]].id;
	n->cost = backward ? op->bwd_flops : op->flops;
	dag_set_workspace(L->d, L->d->nnode - 1, ir_op_workspace(op), L->a);
	n->once = backward;
	n->is_backward = backward;
	n->ir_op = o;
	return n;
}

/* Appends one persistent buffer and counts it in persistent[]. The count
 * saturates: params that nothing reads are not capped by the frontend,
 * and two of 2^62 bytes would wrap it; dag_excess() then names the param
 * whose buffer passes 2^60. */
static void
add_persistent(Lowering *L, int ir, MemCat cat, int64_t bytes)
{
	Dag *d = L->d;
	int i = d->npersistent++;

	d->persistent_buf[i] = bytes;
	d->persistent_cat[i] = cat;
	d->persistent_ir[i] = ir;
	d->persistent[cat] = ck_sat_add(d->persistent[cat], bytes);
}

/* The persistent buffers of param i, in the order dag.h documents: its
 * weight, master copy, then each optimizer state value. */
static void
param_buffers(Lowering *L, int i)
{
	const Graph *g = L->g;
	const Settings *s = &g->settings;
	const Tensor *t = &g->t[i];
	int nstates = g->train ? optimizer_states(s->optimizer) : 0;

	add_persistent(L, i, CAT_PARAMS, t->bytes);
	if (!g->train || t->frozen)     /* frozen: the weight only */
		return;
	if (s->mixed && t->dtype != DT_F32)
		add_persistent(L, i, CAT_MASTER, ir_numel(t) * 4);
	for (int k = 0; k < nstates; k++)
		add_persistent(L, i, CAT_OPTIMIZER,
		               ir_numel(t) * (s->mixed ? 4 : dtype_size(t->dtype)));
}

/* Creates the Dag tensors for every non-param forward tensor, in IR order,
 * and the persistent buffers of every param, in IR order: one pass over a
 * tensor array that may be hundreds of megabytes. */
static void
forward_tensors(Lowering *L)
{
	const Graph *g = L->g;

	for (int i = 0; i < g->nt; i++) {
		const Tensor *t = &g->t[i];
		int dt;

		if (t->kind == TK_PARAM) {
			param_buffers(L, i);
		} else if (t->kind == TK_INPUT) {
			dt = add_tensor(L, i, CAT_INPUTS);
			L->d->t[dt].from_start = true;
		} else if (t->kind == TK_ACT || t->kind == TK_EXTRA) {
			dt = add_tensor(L, i, CAT_ACTIVATIONS);
			if (views_param(g, i))
				L->d->t[dt].persistent_view = true;
			else if (t->view_of >= 0)
				L->d->t[dt].view_src = L->dag_of[t->view_of];
		}
	}
	for (int i = 0; i < g->noutputs && !g->train; i++)
		if (L->dag_of[g->outputs[i]] >= 0)
			L->d->t[L->dag_of[g->outputs[i]]].to_end = true;
}

static void
grad_tensors(Lowering *L)
{
	const Graph *g = L->g;
	bool accumulating = g->settings.accumulate > 1;

	for (int i = 0; i < g->nt; i++) {
		const Tensor *t = &g->t[i];
		int dt;

		if (t->kind == TK_PARAM_GRAD) {
			dt = add_tensor(L, i, CAT_PARAM_GRADS);
			L->d->t[dt].to_end = true;
			L->d->t[dt].from_start = accumulating;
		} else if (t->kind == TK_GRAD) {
			add_tensor(L, i, CAT_GRADIENTS);
		}
	}
}


/* The node's block (outermost call) + 1, or 0. A call's ops are
 * instantiated together, so they are consecutive in program order: a new
 * prefix is a new block. */
static int
block_of(Lowering *L, const Op *op)
{
	const char *scope = ir_op_scope(L->g, op);
	size_t k = ir_outer_scope_len(scope);

	if (k == 0)
		return 0;
	if (!L->block || k != L->nblock_prefix || strncmp(scope, L->block, k)) {
		L->block = scope;
		L->nblock_prefix = k;
		L->nblock++;
	}
	return L->nblock;
}

/* A node's in, out and acc lists (room for nin, nout and nacc entries) in
 * one arena allocation, aligned as an int (a DagAcc is three ints' worth):
 * separately, each small list would take a 16-byte aligned piece of its
 * own, and even together a 16-byte rounding costs a 300k-op chain 2.4 MB. */
static void
node_lists(Lowering *L, DagNode *n, int nin, int nout, int nacc)
{
	_Static_assert(sizeof(DagAcc) % sizeof(int) == 0 && _Alignof(DagAcc) <= _Alignof(int),
	               "a DagAcc must sit on an int boundary");
	size_t words = sizeof(DagAcc) / sizeof(int) * (size_t)nacc + (size_t)nin + (size_t)nout;
	unsigned char *p = ar_array(L->a, words ? words : 1, sizeof(int));

	n->acc = (DagAcc *)(void *)p;
	n->in = (int *)(void *)(p + sizeof(DagAcc) * (size_t)nacc);
	n->out = n->in + nin;
}

static void
forward_node(Lowering *L, int o)
{
	const Op *op = &L->g->op[o];
	DagNode *n = add_node(L, o, false);

	n->block_plus1 = block_of(L, op);

	node_lists(L, n, op->nin, op->nout + op->nextra, 0);
	for (int i = 0; i < op->nin; i++)
		if (!is_param(L->g, op->in[i]))
			push_unique(n->in, &n->nin, L->dag_of[op->in[i]]);
	for (int i = 0; i < op->nout; i++)
		n->out[n->nout++] = L->dag_of[op->out[i]];
	for (int i = 0; i < op->nextra; i++)
		n->out[n->nout++] = L->dag_of[ir_extra(op, i)];
}

static bool
grad_is_view_op(OpKind k)
{
	return k == OP_RESHAPE || k == OP_FLATTEN || k == OP_TRANSPOSE || k == OP_PERMUTE;
}

static void
backward_node(Lowering *L, int o)
{
	const Graph *g = L->g;
	const Op *op = &g->op[o];
	DagNode *n = add_node(L, o, true);
	int grad_out = g->t[op->out[0]].grad;

	n->fwd_plus1 = o + 1;   /* forward nodes come first, one per op in order */
	n->block_plus1 = L->d->node[o].block_plus1;

	node_lists(L, n, op->nout + op->nsaves, 0, op->nin);
	for (int i = 0; i < op->nout; i++) {
		int gt = g->t[op->out[i]].grad;
		if (gt >= 0)
			push_unique(n->in, &n->nin, L->dag_of[gt]);
	}
	for (int i = 0; i < op->nsaves; i++)
		if (!is_param(g, op->saves[i]))
			push_unique(n->in, &n->nin, L->dag_of[op->saves[i]]);
	for (int i = 0; i < op->nin; i++) {
		int a = op->in[i], ga = g->t[a].grad, j;
		if (!g->t[a].needs_grad || ga < 0)
			continue;
		for (j = 0; j < n->nacc && n->acc[j].tensor != L->dag_of[ga]; j++)
			;
		if (j < n->nacc)
			continue;
		n->acc[n->nacc].tensor = L->dag_of[ga];
		n->acc[n->nacc].view_src = grad_is_view_op(op->kind) && !is_param(g, a) &&
		                           grad_out >= 0 ? L->dag_of[grad_out] : -1;
		n->nacc++;
	}
}

/* Sizes the Dag's tensor and node arrays and the persistent buffer lists
 * exactly, in one pass: a million-op graph is then neither copied by
 * doubling nor left with unused capacity. */
static void
reserve(Lowering *L)
{
	const Graph *g = L->g;
	Dag *d = L->d;
	int nt = 0, nn = g->nop;
	int nstates = g->train ? optimizer_states(g->settings.optimizer) : 0;
	size_t np = 0;

	for (int i = 0; i < g->nt; i++) {
		TensorKind k = g->t[i].kind;
		if (k == TK_PARAM)
			np += 2 + (size_t)nstates;
		else if (k == TK_INPUT || k == TK_ACT || k == TK_EXTRA ||
		         (g->train && (k == TK_GRAD || k == TK_PARAM_GRAD)))
			nt++;
	}
	for (int o = 0; g->train && o < g->nop; o++)
		nn += g->op[o].has_backward;
	L->cap_t = nt ? nt : 1;
	L->cap_n = nn ? nn : 1;
	d->t = ar_grow(L->a, NULL, 0, sizeof *d->t * (size_t)L->cap_t);
	d->node = ar_grow(L->a, NULL, 0, sizeof *d->node * (size_t)L->cap_n);
	d->persistent_buf = ar_alloc(L->a, sizeof *d->persistent_buf * (np + 1));
	d->persistent_cat = ar_alloc(L->a, sizeof *d->persistent_cat * (np + 1));
	d->persistent_ir = ar_alloc(L->a, sizeof *d->persistent_ir * (np + 1));
}

void
lower_graph(const Graph *g, Dag *d, Arena *a)
{
	Lowering L = {g, d, a, NULL, 0, 0, NULL, 0, 0};
	Arena scratch;          /* dag_of: gone on return */

	memset(d, 0, sizeof *d);
	ar_init(&scratch);
	L.dag_of = ar_alloc(&scratch, sizeof(int) * (size_t)(g->nt + 1));
	for (int i = 0; i < g->nt; i++)
		L.dag_of[i] = -1;
	reserve(&L);
	forward_tensors(&L);
	if (g->train)
		grad_tensors(&L);
	for (int o = 0; o < g->nop; o++)
		forward_node(&L, o);
	for (int o = g->nop - 1; g->train && o >= 0; o--)
		if (g->op[o].has_backward)
			backward_node(&L, o);
	d->nbase = d->nnode;
	d->base_order = ar_alloc(a, sizeof(int) * (size_t)(d->nnode + 1));
	for (int i = 0; i < d->nnode; i++)
		d->base_order[i] = i;
	if (g->settings.pytorch)
		lower_torch(g, d, a);   /* --runtime pytorch: passes/graph/lower_torch.c */
	dag_finish(d);
	ar_free(&scratch);
}
