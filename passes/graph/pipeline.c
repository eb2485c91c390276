/* passes/graph/pipeline.c -- pipeline parallelism: the DAG of one stage
 * (docs/distributed.md, "Pipeline stages"). The blocks (outermost calls,
 * DagNode.block_plus1) are split into K contiguous stages; the
 * operations before the first block belong to stage 0, the ones after a
 * block to that block's stage (so the head and the loss to the last).
 *
 * Stage s keeps `w` micro-batches in flight: min(K - s, M) under 1F1B, M
 * under GPipe. Its DAG is the stage's whole training step: M copies of
 * the stage's forward and backward nodes, in its pipeline order. GPipe:
 * the M forwards, then the M backwards. 1F1B: K - s - 1 forwards (at most
 * M) to warm up, then a forward and the oldest backward in turn, then the
 * remaining backwards; so at most w micro-batches are ever in flight, and
 * the generated program runs exactly this order on the stage's ranks.
 * What crosses a stage boundary becomes a node of its own (DagXfer.pipe,
 * with the stages it exchanges with in DagXfer.peer):
 * - `recv` produces, per micro-batch, each activation (or data input) the
 *   stage reads but does not make, at the start of that micro-batch's
 *   forward; `send` reads each activation a later stage needs, right after
 *   it is made (the receiver keeps its own copy);
 * - `recv_grad` contributes, at the start of a micro-batch's backward, the
 *   gradient a later stage sends back for an activation of this stage;
 *   `send_grad` reads, at the end of it, each gradient this stage sends back.
 * The weights, master copies and optimizer state are those of the params
 * the stage reads (a param read by two stages, like a tied embedding, is
 * held by both); their gradients are shared by the copies and accumulate
 * over the micro-batches, as they do on one GPU (under ZeRO 2/3, each copy
 * has its own, reduce-scattered by distribute.c): they are made by the
 * stage's first backward. Every node records its copy in
 * DagNode.micro_batch.
 *
 * Reads the Graph (which params an op reads) and the lowered Dag; writes a
 * new Dag in the arena over *d, and the stage's PipeStats. */
#include <string.h>

#include "graph.h"

typedef struct Pipe {
	const Graph *g;
	const Dag *full;
	Dag *d;                 /* the stage's, being built */
	Arena *a;
	int K, stage, w, M;     /* w in flight, M micro-batches (copies) */
	bool gpipe;
	int cur;                /* the copy whose nodes are being added */
	bool grads_per_copy;    /* param gradients reduced per micro-batch */
	int *stage_of;          /* [full nnode] the stage of each node */
	int *producer;          /* [full nt] node making the tensor, or -1 */
	/* Only what the stage touches has a copy per micro-batch: the
	 * tables below are M x the stage's size, not M x the whole DAG's,
	 * and each micro-batch walks the stage's lists, not the DAG. */
	int *lt;                /* [full nt] the stage's index of a tensor, or -1 */
	int nlt;
	int *ln;                /* [full nnode] the stage's index of a forward node, or -1 */
	int nln;
	int *copy_t;            /* [M * nlt] stage tensor of (copy, tensor), or -1 */
	int *copy_n;            /* [M * nln] stage node of (copy, forward node) */
	int *fwd, nfwd;         /* the stage's forward nodes, in node order */
	int *bwd, nbwd;         /* its backward nodes, in base order */
	int *rg, nrg;           /* tensors whose gradient comes back (recv_grad) */
	int *sg, nsg;           /* received tensors whose gradient may go back */
	int **peer, *npeer;     /* [full nt] later stages reading a sent tensor */
	int cap_t, cap_n;
	PipeStats *st;
} Pipe;

/* ---------------------------------------------------------------- split */

/* The estimate a split balances: per block, the bytes its forward makes
 * (held once per micro-batch in flight) and the persistent bytes of the
 * params it reads first (held once); the operations outside every def add
 * theirs to the first stage (before the first block) or the last. */
typedef struct Costs {
	int64_t *act, *pers;    /* [nblocks + 2]: index 0 before, nblocks + 1 after */
} Costs;

static Costs
block_costs(const Graph *g, const Dag *full, int nblocks, Arena *a)
{
	Costs c = {ar_alloc(a, sizeof(int64_t) * (size_t)(nblocks + 2)),
	           ar_alloc(a, sizeof(int64_t) * (size_t)(nblocks + 2))};
	int64_t *pers_of = ar_alloc(a, sizeof(int64_t) * (size_t)(g->nt + 1));
	bool *seen = ar_alloc(a, (size_t)g->nt + 1);
	int where = 0;

	for (int i = 0; i < full->npersistent; i++)
		pers_of[full->persistent_ir[i]] += full->persistent_buf[i];
	for (int v = 0; v < full->nnode; v++) {
		const DagNode *n = &full->node[v];
		const Op *op;
		if (n->is_backward)
			continue;
		where = n->block_plus1 ? n->block_plus1 : where ? nblocks + 1 : 0;
		for (int i = 0; i < n->nout; i++)
			if (full->t[n->out[i]].view_src < 0)
				c.act[where] += full->t[n->out[i]].bytes;
		op = n->ir_op >= 0 ? &g->op[n->ir_op] : NULL;
		for (int i = 0; op && i < op->nin; i++)
			if (g->t[op->in[i]].kind == TK_PARAM && !seen[op->in[i]]) {
				seen[op->in[i]] = true;
				c.pers[where] += pers_of[op->in[i]];
			}
	}
	return c;
}

/* Each stage's first block (first[K] = nblocks + 1): the stage-blocks
 * option, or the contiguous split that minimises the largest stage's
 * estimate "persistent bytes + in-flight micro-batches x activation bytes",
 * by dynamic programming over split points. For stage s ending at block
 * b, the candidates j (stage s holds blocks j+1..b) are scanned down from
 * b - 1: the stage's own estimate only grows as j falls, so the scan stops
 * once it passes the best found, and takes the first j reaching the best,
 * as the full scan did. The full scan was O(K nblocks^2), and each stage's
 * analysis makes it: 64 stages of 3,000 blocks took minutes; this one
 * looks at about a stage's worth of blocks per (s, b). */
static void
split_blocks(const Graph *g, const Dag *full, const PipeOptions *o, int nblocks,
             int *first, Arena *a)
{
	int K = o->stages, W = nblocks + 1;
	Costs c;
	int64_t *pa, *pp, *best;
	int *arg;

	if (o->nsplit == K) {
		first[0] = 1;
		for (int s = 0; s < K; s++)
			first[s + 1] = first[s] + o->split[s];
		return;
	}
	c = block_costs(g, full, nblocks, a);
	pa = ar_alloc(a, sizeof(int64_t) * (size_t)(W + 1));
	pp = ar_alloc(a, sizeof(int64_t) * (size_t)(W + 1));
	for (int b = 1; b <= nblocks; b++) {
		pa[b] = pa[b - 1] + c.act[b];
		pp[b] = pp[b - 1] + c.pers[b];
	}
	/* best[s][b]: the smallest largest-stage estimate with blocks 1..b on
	 * stages 0..s; stage s holds min(K - s, M) micro-batches (M: GPipe) */
	best = ar_alloc(a, sizeof(int64_t) * (size_t)(K * W));
	arg = ar_alloc(a, sizeof(int) * (size_t)(K * W));
	for (int s = 0; s < K; s++) {
		int64_t fl = o->gpipe ? o->micro_batches
		           : (K - s < o->micro_batches ? K - s : o->micro_batches);
		int64_t ra = (s == 0 ? c.act[0] : 0) + (s == K - 1 ? c.act[nblocks + 1] : 0);
		int64_t rp = (s == 0 ? c.pers[0] : 0) + (s == K - 1 ? c.pers[nblocks + 1] : 0);
		for (int b = s + 1; b <= nblocks; b++) {
			int64_t bestv = INT64_MAX;
			if (s == K - 1 && b != nblocks)
				continue;
			/* stage s holds blocks j+1..b; stage 0 all of 1..b */
			for (int j = s ? b - 1 : 0; j >= s; j--) {
				/* saturating: fl reaches 65,536 and the bytes 2^60 */
				int64_t here = ck_sat_add(ck_sat_mul(ck_sat_add(pa[b] - pa[j], ra), fl),
				                          ck_sat_add(pp[b] - pp[j], rp)), prev;
				if (here > bestv)
					break;
				prev = s ? best[(s - 1) * W + j] : (j ? INT64_MAX : 0);
				if (prev == INT64_MAX)
					continue;
				if ((here > prev ? here : prev) <= bestv && (here > prev ? here : prev) < INT64_MAX) {
					bestv = here > prev ? here : prev;
					arg[s * W + b] = j;
				}
			}
			best[s * W + b] = bestv;
		}
		for (int b = 0; b <= s && b <= nblocks; b++)
			best[s * W + b] = INT64_MAX;
	}
	first[K] = nblocks + 1;
	for (int s = K - 1, b = nblocks; s >= 0; s--) {
		int j = s ? arg[s * W + b] : 0;
		first[s] = j + 1;
		b = j;
	}
}

/* The stage of every node: forward nodes by block (roots follow the block
 * before them, stage 0 before the first), backward nodes by their forward. */
static void
assign_stages(Pipe *P, const int *first, int K)
{
	const Dag *f = P->full;
	int cur = 0;

	for (int v = 0; v < f->nnode; v++) {
		const DagNode *n = &f->node[v];
		if (n->is_backward) {
			P->stage_of[v] = n->fwd_plus1 ? P->stage_of[n->fwd_plus1 - 1] : K - 1;
			continue;
		}
		if (n->block_plus1)
			while (cur < K - 1 && n->block_plus1 >= first[cur + 1])
				cur++;
		P->stage_of[v] = cur;
	}
}

/* ---------------------------------------------------------------- building */

static int
add_t(Pipe *P, const DagTensor *src, const char *name)
{
	DagTensor *t = dag_push_tensor(P->d, &P->cap_t, P->a);

	*t = *src;
	t->name = name;
	t->view_src = -1;
	return P->d->nt - 1;
}

static int
add_n(Pipe *P, const char *name, bool backward, int nin, int nout, int nacc)
{
	DagNode *n = dag_push_node(P->d, &P->cap_n, P->a);

	n->name = name;
	n->once = true;
	n->is_backward = backward;
	n->in = ar_alloc(P->a, sizeof(int) * (size_t)(nin + 1));
	n->out = ar_alloc(P->a, sizeof(int) * (size_t)(nout + 1));
	n->acc = ar_alloc(P->a, sizeof(DagAcc) * (size_t)(nacc + 1));
	if (P->cur)
		dag_xfer_set(P->d, P->d->nnode - 1, P->a)->micro_batch = P->cur;
	return P->d->nnode - 1;
}

static const char *
copy_name(Pipe *P, int c, const char *name)
{
	return P->M > 1 ? ar_printf(P->a, "mb%d:%s", c, name) : name;
}

/* Whether full tensor t is made inside the stage. */
static bool
local(const Pipe *P, int t)
{
	return P->producer[t] >= 0 && P->stage_of[P->producer[t]] == P->stage;
}

/* The slot of full tensor t in copy c, or NULL when the stage never
 * touches t. */
static int *
slot_of(const Pipe *P, int c, int t)
{
	return P->lt[t] < 0 ? NULL : &P->copy_t[(size_t)c * (size_t)P->nlt + (size_t)P->lt[t]];
}

/* Whether full tensor t has a copy c yet. */
static bool
has_copy(const Pipe *P, int c, int t)
{
	const int *slot = slot_of(P, c, t);

	return slot && *slot >= 0;
}

/* The stage tensor of full tensor t in copy c, made on first use. Param
 * gradients are shared by every copy, as they accumulate over the
 * micro-batches, unless ZeRO 2/3 reduce-scatters each micro-batch's
 * gradients into the shard (as --accumulate does). */
static int
tensor_of(Pipe *P, int c, int t)
{
	const DagTensor *src = &P->full->t[t];
	int *slot;

	bool shared = src->cat == CAT_PARAM_GRADS && !P->grads_per_copy;

	if (shared)
		c = 0;
	slot = slot_of(P, c, t);
	ir_assert(slot);
	if (*slot < 0) {
		int x = add_t(P, src, shared ? src->name : copy_name(P, c, src->name));
		*slot = x;
		/* a view of a tensor of the stage stays a view of that tensor's
		 * copy; what arrives from another stage is a buffer of its own */
		if (src->view_src >= 0 && local(P, t))
			P->d->t[x].view_src = tensor_of(P, c, src->view_src);
	}
	return *slot;
}

/* A boundary node of kind k and its peers: the producer's stage of full
 * tensor t (receiving an activation, sending its gradient back) or every
 * later stage whose forward reads t (sending it, receiving the gradients). */
static int
add_boundary(Pipe *P, DagPipe k, const char *name, int t, bool backward)
{
	int x = add_n(P, name, backward, 1, 1, 1);
	DagXfer *n = dag_xfer_set(P->d, x, P->a);

	n->pipe = k;
	n->peer = ar_alloc(P->a, sizeof(int) * (size_t)(k == PIPE_SEND || k == PIPE_RECV_GRAD
	                                                ? P->K + 1 : 1));
	if (k == PIPE_LOAD)
		return x;
	if (k == PIPE_RECV || k == PIPE_SEND_GRAD) {
		n->peer[n->npeer++] = P->stage_of[P->producer[t]];
		return x;
	}
	n->npeer = P->npeer[t];
	if (n->npeer)
		memcpy(n->peer, P->peer[t], sizeof(int) * (size_t)n->npeer);
	return x;
}

/* One micro-batch's forward: recv/load nodes for what the stage reads but
 * does not make, then its nodes, each followed by the sends of what a later
 * stage reads. */
static void
forward_copy(Pipe *P, int c, int *order, int *n, const bool *sent_later)
{
	const Dag *f = P->full;

	for (int k = 0; k < P->nfwd; k++) {
		const DagNode *fn = &f->node[P->fwd[k]];
		for (int i = 0; i < fn->nin; i++) {
			int t = fn->in[i], x;
			if (local(P, t) || has_copy(P, c, t))
				continue;
			x = add_boundary(P, P->producer[t] < 0 ? PIPE_LOAD : PIPE_RECV,
			                 ar_printf(P->a, "%s(%s)", P->producer[t] < 0 ? "load" : "recv",
			                           copy_name(P, c, f->t[t].name)), t, false);
			P->d->node[x].out[P->d->node[x].nout++] = tensor_of(P, c, t);
			P->d->t[tensor_of(P, c, t)].from_start = false;
			order[(*n)++] = x;
			P->st->recv_bytes += P->producer[t] < 0 ? 0 : f->t[t].bytes;
		}
	}
	for (int k = 0; k < P->nfwd; k++) {
		int v = P->fwd[k];
		const DagNode *fn = &f->node[v];
		DagNode *nn;
		int x;
		x = add_n(P, copy_name(P, c, fn->name), false, fn->nin, fn->nout, 0);
		P->copy_n[(size_t)c * (size_t)P->nln + (size_t)P->ln[v]] = x;
		nn = &P->d->node[x];
		nn->cost = fn->cost;
		dag_set_workspace(P->d, x, dag_workspace(f, v), P->a);
		nn->once = fn->once;
		nn->ir_op = fn->ir_op;
		nn->block_plus1 = fn->block_plus1 ? c * P->st->nblocks + fn->block_plus1 : 0;
		for (int i = 0; i < fn->nin; i++)
			push_unique(nn->in, &nn->nin, tensor_of(P, c, fn->in[i]));
		for (int i = 0; i < fn->nout; i++)
			nn->out[nn->nout++] = tensor_of(P, c, fn->out[i]);
		order[(*n)++] = x;
		for (int i = 0; i < fn->nout; i++) {
			int s;
			if (!sent_later[fn->out[i]])
				continue;
			s = add_boundary(P, PIPE_SEND, ar_printf(P->a, "send(%s)",
			                 copy_name(P, c, f->t[fn->out[i]].name)), fn->out[i], false);
			P->d->node[s].in[P->d->node[s].nin++] = tensor_of(P, c, fn->out[i]);
			order[(*n)++] = s;
			P->st->send_bytes += f->t[fn->out[i]].bytes;
		}
	}
}

/* One micro-batch's backward: recv_grad for the gradients later stages
 * send back, the stage's backward nodes in order, then send_grad for the
 * gradients of what this stage received. */
static void
backward_copy(Pipe *P, int c, int *order, int *n, const int *grad_of_t)
{
	const Dag *f = P->full;

	for (int k = 0; k < P->nrg; k++) {
		int t = P->rg[k], g = grad_of_t[t], x;
		x = add_boundary(P, PIPE_RECV_GRAD, ar_printf(P->a, "recv_grad(%s)",
		                 copy_name(P, c, f->t[t].name)), t, true);
		P->d->node[x].acc[0] = (DagAcc){tensor_of(P, c, g), -1, false};
		P->d->node[x].nacc = 1;
		order[(*n)++] = x;
	}
	for (int i = 0; i < P->nbwd; i++) {
		int v = P->bwd[i], x;
		const DagNode *fn = &f->node[v];
		DagNode *nn;
		x = add_n(P, copy_name(P, c, fn->name), true, fn->nin, 0, fn->nacc);
		nn = &P->d->node[x];
		nn->cost = fn->cost;
		dag_set_workspace(P->d, x, dag_workspace(f, v), P->a);
		nn->ir_op = fn->ir_op;
		nn->block_plus1 = fn->block_plus1 ? c * P->st->nblocks + fn->block_plus1 : 0;
		nn->fwd_plus1 = fn->fwd_plus1
		              ? P->copy_n[(size_t)c * (size_t)P->nln + (size_t)P->ln[fn->fwd_plus1 - 1]] + 1 : 0;
		for (int k = 0; k < fn->nin; k++)
			push_unique(nn->in, &nn->nin, tensor_of(P, c, fn->in[k]));
		for (int k = 0; k < fn->nacc; k++) {
			int vs = fn->acc[k].view_src;
			nn->acc[nn->nacc].tensor = tensor_of(P, c, fn->acc[k].tensor);
			nn->acc[nn->nacc].view_src = vs >= 0 && has_copy(P, c, vs)
			                           ? tensor_of(P, c, vs) : -1;
			nn->nacc++;
		}
		order[(*n)++] = x;
	}
	for (int k = 0; k < P->nsg; k++) {
		int t = P->sg[k], g = grad_of_t[t], x;
		if (!has_copy(P, c, g))
			continue;
		x = add_boundary(P, PIPE_SEND_GRAD, ar_printf(P->a, "send_grad(%s)",
		                 copy_name(P, c, f->t[t].name)), t, true);
		P->d->node[x].in[P->d->node[x].nin++] = tensor_of(P, c, g);
		order[(*n)++] = x;
	}
}

/* The gradient tensor of each full tensor (from the IR's grad links), or -1. */
static int *
grads_by_tensor(const Pipe *P)
{
	const Dag *f = P->full;
	int *dag_of_ir = ar_alloc(P->a, sizeof(int) * (size_t)(P->g->nt + 1));
	int *grad = ar_alloc(P->a, sizeof(int) * (size_t)(f->nt + 1));

	for (int i = 0; i < P->g->nt; i++)
		dag_of_ir[i] = -1;
	for (int t = 0; t < f->nt; t++)
		if (f->t[t].ir_tensor >= 0)
			dag_of_ir[f->t[t].ir_tensor] = t;
	for (int t = 0; t < f->nt; t++) {
		int ir = f->t[t].ir_tensor, gi;
		grad[t] = -1;
		if (ir < 0 || f->t[t].cat == CAT_PARAM_GRADS || f->t[t].cat == CAT_GRADIENTS)
			continue;
		gi = P->g->t[ir].grad;
		if (gi >= 0)
			grad[t] = dag_of_ir[gi];
	}
	return grad;
}

/* The persistent buffers of the params the stage's ops read. */
static void
stage_persistent(Pipe *P)
{
	const Dag *f = P->full;
	Dag *d = P->d;
	bool *reads = ar_alloc(P->a, (size_t)P->g->nt + 1);

	for (int v = 0; v < f->nnode; v++) {
		const Op *op;
		if (P->stage_of[v] != P->stage || f->node[v].ir_op < 0)
			continue;
		op = &P->g->op[f->node[v].ir_op];
		for (int i = 0; i < op->nin; i++)
			if (P->g->t[op->in[i]].kind == TK_PARAM)
				reads[op->in[i]] = true;
	}
	d->persistent_buf = ar_alloc(P->a, sizeof(int64_t) * (size_t)(f->npersistent + 1));
	d->persistent_cat = ar_alloc(P->a, sizeof(MemCat) * (size_t)(f->npersistent + 1));
	d->persistent_ir = ar_alloc(P->a, sizeof(int) * (size_t)(f->npersistent + 1));
	for (int i = 0; i < f->npersistent; i++) {
		if (!reads[f->persistent_ir[i]])
			continue;
		d->persistent_buf[d->npersistent] = f->persistent_buf[i];
		d->persistent_cat[d->npersistent] = f->persistent_cat[i];
		d->persistent_ir[d->npersistent] = f->persistent_ir[i];
		d->persistent[f->persistent_cat[i]] += f->persistent_buf[i];
		d->npersistent++;
	}
}

/* The stage's training step in its pipeline order: GPipe runs every
 * forward, then every backward; 1F1B warms up with K - s - 1 forwards,
 * then runs the next forward and the oldest backward in turn, and cools
 * down with the backwards left. Each micro-batch's backward follows its
 * forward, and stage s + 1 runs micro-batch m's forward (backward) only
 * after stage s sent it (before it needs it back): with buffered sends,
 * no rank of the pipeline waits on another forever. */
static void
pipeline_order(Pipe *P, int *order, int *n, const int *grad,
               const bool *sent_later)
{
	int warm = P->gpipe || !P->g->train ? P->M : P->w - 1, b = 0;

	for (P->cur = 0; P->cur < warm; P->cur++)
		forward_copy(P, P->cur, order, n, sent_later);
	for (int f = warm; f < P->M; f++, b++) {     /* 1F1B's steady state */
		P->cur = f;
		forward_copy(P, f, order, n, sent_later);
		P->cur = b;
		backward_copy(P, b, order, n, grad);
	}
	for (P->cur = b; P->g->train && P->cur < P->M; P->cur++)
		backward_copy(P, P->cur, order, n, grad);
}

/* The stage's sends and receives keep the pipeline order: each runs after
 * the one before it (DagNode.fwd_plus1, which every planner honours). A
 * plan is free to move a receive, which reads nothing, to the start; then
 * stage 0 would wait for micro-batch 0's gradient before sending its
 * activation, and the pipeline would deadlock. */
static void
chain_boundaries(Dag *d)
{
	int prev = -1;

	for (int i = 0; i < d->nbase; i++) {
		DagPipe k = dag_xfer(d, d->base_order[i])->pipe;
		if (k == PIPE_NONE || k == PIPE_LOAD)
			continue;
		d->node[d->base_order[i]].fwd_plus1 = prev + 1;
		prev = d->base_order[i];
	}
}

int
pipeline_blocks(const Dag *d)
{
	int nb = 0;

	for (int v = 0; v < d->nnode; v++)
		if (d->node[v].block_plus1 > nb)
			nb = d->node[v].block_plus1;
	return nb;
}

/* Gives full tensor t, and the tensors it is a view of, a stage index. */
static void
touch(Pipe *P, int t)
{
	for (; t >= 0 && P->lt[t] < 0; t = P->full->t[t].view_src)
		P->lt[t] = P->nlt++;
}

/* The stage's nodes, the tensors they touch, the boundary candidates and
 * each sent tensor's peers, found once (a micro-batch walks these lists,
 * in the order the whole DAG would give them). */
static void
stage_lists(Pipe *P, const int *grad, const bool *sent_later)
{
	const Dag *f = P->full;
	Arena *a = P->a;

	P->lt = ar_alloc(a, sizeof(int) * (size_t)(f->nt + 1));
	P->ln = ar_alloc(a, sizeof(int) * (size_t)(f->nnode + 1));
	P->fwd = ar_alloc(a, sizeof(int) * (size_t)(f->nnode + 1));
	P->bwd = ar_alloc(a, sizeof(int) * (size_t)(f->nnode + 1));
	P->rg = ar_alloc(a, sizeof(int) * (size_t)(f->nt + 1));
	P->sg = ar_alloc(a, sizeof(int) * (size_t)(f->nt + 1));
	P->peer = ar_alloc(a, sizeof(int *) * (size_t)(f->nt + 1));
	P->npeer = ar_alloc(a, sizeof(int) * (size_t)(f->nt + 1));
	for (int t = 0; t < f->nt; t++)
		P->lt[t] = -1;
	for (int v = 0; v < f->nnode; v++) {
		const DagNode *n = &f->node[v];
		P->ln[v] = -1;
		if (!n->is_backward && P->stage_of[v] > P->stage)
			for (int i = 0; i < n->nin; i++) {
				int t = n->in[i];
				if (!sent_later[t])
					continue;
				if (!P->peer[t])
					P->peer[t] = ar_alloc(a, sizeof(int) * (size_t)(P->K + 1));
				push_unique(P->peer[t], &P->npeer[t], P->stage_of[v]);
			}
		if (P->stage_of[v] != P->stage)
			continue;
		if (!n->is_backward) {
			P->ln[v] = P->nln++;
			P->fwd[P->nfwd++] = v;
		}
		for (int i = 0; i < n->nin; i++)
			touch(P, n->in[i]);
		for (int i = 0; i < n->nout; i++)
			touch(P, n->out[i]);
		for (int i = 0; i < n->nacc; i++) {
			touch(P, n->acc[i].tensor);
			touch(P, n->acc[i].view_src);
		}
	}
	for (int i = 0; i < f->nbase; i++) {
		int v = f->base_order[i];
		if (P->stage_of[v] == P->stage && f->node[v].is_backward)
			P->bwd[P->nbwd++] = v;
	}
	for (int t = 0; t < f->nt; t++) {
		if (grad[t] < 0)
			continue;
		if (sent_later[t] && local(P, t)) {
			P->rg[P->nrg++] = t;
			touch(P, grad[t]);
		} else if (!local(P, t)) {
			P->sg[P->nsg++] = t;
		}
	}
}

void
pipeline_stage(const Graph *g, Dag *d, const PipeOptions *o, int stage, PipeStats *st,
               Arena *a)
{
	Dag full = *d;
	Pipe P = {.g = g, .full = &full, .d = d, .a = a, .stage = stage, .st = st};
	int K = o->stages, nb = pipeline_blocks(&full), *first, *order, n = 0, *grad;
	bool *sent_later;
	size_t nct;

	memset(st, 0, sizeof *st);
	st->nblocks = nb;
	first = ar_alloc(a, sizeof(int) * (size_t)(K + 1));
	split_blocks(g, &full, o, nb, first, a);
	P.w = o->gpipe ? o->micro_batches
	      : (K - stage < o->micro_batches ? K - stage : o->micro_batches);
	P.K = K;
	P.M = o->micro_batches;
	P.gpipe = o->gpipe;
	P.grads_per_copy = dist_grad_shards(&g->settings.dist);
	P.stage_of = ar_alloc(a, sizeof(int) * (size_t)(full.nnode + 1));
	assign_stages(&P, first, K);
	P.producer = ar_alloc(a, sizeof(int) * (size_t)(full.nt + 1));
	sent_later = ar_alloc(a, (size_t)full.nt + 1);
	for (int t = 0; t < full.nt; t++)
		P.producer[t] = -1;
	for (int v = 0; v < full.nnode; v++)
		for (int i = 0; i < full.node[v].nout; i++)
			P.producer[full.node[v].out[i]] = v;
	for (int v = 0; v < full.nnode; v++)   /* read by a later stage's forward */
		for (int i = 0; !full.node[v].is_backward && i < full.node[v].nin; i++)
			if (P.stage_of[v] > stage && local(&P, full.node[v].in[i]))
				sent_later[full.node[v].in[i]] = true;
	grad = grads_by_tensor(&P);
	stage_lists(&P, grad, sent_later);
	nct = (size_t)P.M * (size_t)P.nlt;
	P.copy_t = ar_alloc(a, sizeof(int) * (nct + 1));
	P.copy_n = ar_alloc(a, sizeof(int) * ((size_t)P.M * (size_t)P.nln + 1));
	for (size_t i = 0; i < nct; i++)
		P.copy_t[i] = -1;
	memset(d, 0, sizeof *d);
	stage_persistent(&P);
	/* per micro-batch: the stage's nodes, a receive or load per tensor
	 * read, a send per tensor made, and the gradient transfers */
	order = ar_alloc(a, sizeof(int) * ((size_t)P.M * (size_t)(P.nfwd + P.nbwd + 2 * P.nlt
	                                                          + P.nrg + P.nsg) + 1));
	pipeline_order(&P, order, &n, grad, sent_later);
	ir_assert(n == d->nnode);
	d->base_order = order;
	d->nbase = n;
	chain_boundaries(d);
	st->stage = stage;
	st->first_block = first[stage];
	st->last_block = first[stage + 1] - 1;
	st->in_flight = P.w;
	st->micro_batches = P.M;
	dag_finish(d);
}
