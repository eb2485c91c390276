/* passes/graph/distribute.c -- data parallelism with ZeRO / FSDP sharding
 * and offload, as a rewrite of the lowered DAG into the DAG of ONE rank
 * (docs/distributed.md is the model in words). Every rank runs the same
 * schedule on its own micro-batch and holds shards of the same size (each
 * buffer padded to a multiple of the rank count), so one rank's DAG gives
 * every rank's exact peak, and the liveness evaluator, the planners, the
 * verifier and the memory planner need no new rule:
 *
 * - shards are buffers of ceil(elements / ranks) elements: persistent,
 *   the master copy and optimizer state from ZeRO-1 and the weights
 *   themselves at ZeRO-3; from ZeRO-2 a gradient shard per param, made by
 *   the first bucket that reduce-scatters into it and live to the end
 *   (persistent under accumulation or offload: grad_shards);
 * - gradient buckets are backward nodes: one per bucket of --bucket bytes,
 *   filled in the order the gradients are completed, placed right after the
 *   step that completes the bucket. The node reads the bucket's gradients
 *   (ZeRO-2 and 3: they die there, reduce-scattered into the shard;
 *   ZeRO-0 and 1: all-reduced in place, they live to the end) and its
 *   workspace is the flat communication buffer of the bucket's bytes;
 * - ZeRO-3 all-gathers: each unit (the params of a block, the node's
 *   block; the ops outside every def form one more unit) gets a
 *   gather node before its forward, whose output (the unit's full weights)
 *   its forward nodes read, and a second gather of the same tensor before
 *   its backward, read by its backward nodes. Liveness frees each instance
 *   when its last reader ran. A recompute of a unit's forward during
 *   backward reads the latest instance: the backward gather's once it ran,
 *   else the forward gather's, which the planner may recompute (it costs
 *   no FLOPs) or keep.
 *   --prefetch N places the gathers of the next N units ahead, before the
 *   running unit's first operation;
 * - a pipeline stage's DAG (pipeline.c) is rewritten the same way, per
 *   in-flight copy (DagNode.micro_batch): each copy gathers its own units,
 *   and under ZeRO-2/3 reduces its own full gradients;
 * - offload moves the master copy and optimizer state, from ZeRO-2 the
 *   gradient shard (ZeRO-Offload), and with "params" at ZeRO-3 the weight
 *   shards to host memory: they leave the device's persistent bytes and are
 *   reported as host bytes. The full gradients of a bucket stay on the
 *   device until it is reduced.
 *
 * Reads: the Graph (which params each op reads, their dtypes and sizes)
 * and the lowered Dag. Writes: the Dag (persistent buffers and their host
 * bytes, new tensors and nodes appended after the existing ones, marked
 * with the collective the generated program runs for them, a new base
 * order, param-gradient lifetimes) and the DistStats. */
#include <string.h>

#include "graph.h"

typedef struct Dist {
	const Graph *g;
	Dag *d;
	Arena *a;
	const DistOptions *o;
	DistStats *st;
	int *unit_of_param;     /* [ncopies * IR tensors]: (copy, param) -> unit
	                           + 1 of its first reader, 0 none */
	int ncopies;            /* a pipeline stage's in-flight copies, else 1 */
	int nblocks;            /* the largest block number of any node */
	int nunits;             /* units: blocks 1..nblocks, 0 for the root of
	                           copy 0, nblocks + c for the root of copy c,
	                           nblocks + ncopies + c for the head of copy c */
	bool *head;             /* [nhead] a root node after its copy's last
	                           block (its head), or its backward */
	int nhead;
	int64_t *unit_bytes;    /* [nunits] full weight bytes each unit gathers */
	int *unit_copy;         /* [nunits] the copy its nodes belong to */
	int **unit_list;        /* [nunits] its params, in IR order */
	int *unit_nparams;      /* [nunits] how many */
	int *gather_f, *gather_b;       /* [nunits] Dag node indices, or -1 */
	int *gathered;          /* [nunits] the unit's gathered weights, the
	                           output of both gathers */
	int *bucket_after;      /* [nnode] bucket node to run right after, or -1 */
	int cap_t, cap_n;
} Dist;

/* ---------------------------------------------------------------- shards */

/* Whether persistent buffer i is sharded (or offloaded) under the options. */
static void
shard_buffer(Dist *D, int i)
{
	Dag *d = D->d;
	const DistOptions *o = D->o;
	MemCat c = d->persistent_cat[i];
	const Tensor *t = &D->g->t[d->persistent_ir[i]];
	int64_t elem = ir_numel(t) ? d->persistent_buf[i] / ir_numel(t) : 0;
	bool state = c == CAT_MASTER || c == CAT_OPTIMIZER;
	/* buffers (BatchNorm's running statistics) stay whole on every rank,
	 * as FSDP and DeepSpeed keep module buffers out of the flat sharded
	 * (and offloaded) parameters */
	bool weight = c == CAT_PARAMS && !t->buffer;
	int64_t bytes = d->persistent_buf[i];

	if ((state && o->zero >= 1) || (weight && o->zero >= 3 && o->shard_weights != SHARD_WHOLE))
		bytes = dag_shard_elems(ir_numel(t), o->ranks) * elem;
	if ((state && o->offload_optimizer) || (weight && o->offload_params)) {
		D->st->host[c] += bytes;
		d->persistent_host[i] = bytes;
		bytes = 0;
	}
	d->persistent[c] += bytes - d->persistent_buf[i];
	d->persistent_buf[i] = bytes;
}

/* ---------------------------------------------------------------- DAG growth */

static int
new_tensor(Dist *D, const char *name, int64_t bytes, MemCat cat)
{
	DagTensor *t = dag_push_tensor(D->d, &D->cap_t, D->a);

	t->name = name;
	t->bytes = bytes;
	t->cat = cat;
	return D->d->nt - 1;
}

static int
new_node(Dist *D, const char *name, bool backward)
{
	DagNode *n = dag_push_node(D->d, &D->cap_n, D->a);

	n->name = name;
	n->once = backward;
	n->is_backward = backward;
	return D->d->nnode - 1;
}

/* Appends tensor t to node v's inputs (a fresh array: the old one is
 * exact-size in the arena). */
static void
add_input(Dist *D, int v, int t)
{
	DagNode *n = &D->d->node[v];
	int *in = ar_alloc(D->a, sizeof(int) * (size_t)(n->nin + 1));

	for (int i = 0; i < n->nin; i++)
		if (n->in[i] == t)
			return;
	memcpy(in, n->in, sizeof(int) * (size_t)n->nin);
	in[n->nin] = t;
	n->in = in;
	n->nin++;
}

/* ---------------------------------------------------------------- ZeRO-3 */

/* The unit node v belongs to: its block, its copy's head (after the
 * copy's last block) or its copy's root (the rest). A pipeline stage's
 * copies already have blocks of their own (pipeline.c numbers them per
 * copy); their roots and heads are told apart by DagNode.micro_batch. */
static int
unit_of_node(const Dist *D, int v)
{
	const DagNode *n = &D->d->node[v];
	int mb = dag_micro_batch(D->d, n);

	if (n->block_plus1)
		return n->block_plus1;
	if (v < D->nhead && D->head[v])
		return D->nblocks + D->ncopies + mb;
	return mb ? D->nblocks + mb : 0;
}

/* Which root nodes are a head: forward nodes after the last forward node
 * of a block of their copy in the base order, and their backward nodes.
 * The operations outside every def before the blocks (the embeddings, a
 * stem) and after them (the final norm, the head, the loss) are two
 * units, as DeepSpeed gathers each module's parameters when that module
 * runs: with one unit for both, the backward gather made at the head's
 * backward would hold the embeddings' weights through the whole backward,
 * and a plan that recomputes the embeddings there would gather them a
 * second time. */
static void
find_heads(Dist *D)
{
	const Dag *d = D->d;
	int *last = ar_alloc(D->a, sizeof(int) * (size_t)D->ncopies);

	D->nhead = d->nnode;
	D->head = ar_alloc(D->a, (size_t)d->nnode + 1);
	for (int c = 0; c < D->ncopies; c++)
		last[c] = -1;
	for (int i = 0; i < d->nbase; i++) {
		const DagNode *n = &d->node[d->base_order[i]];
		if (!n->is_backward && n->block_plus1)
			last[dag_micro_batch(d, n)] = i;
	}
	for (int i = 0; i < d->nbase; i++) {
		const DagNode *n = &d->node[d->base_order[i]];
		int c = dag_micro_batch(d, n);
		if (!n->is_backward && !n->block_plus1 && last[c] >= 0 && i > last[c])
			D->head[d->base_order[i]] = true;
	}
	for (int v = 0; v < d->nnode; v++)
		if (d->node[v].is_backward && d->node[v].fwd_plus1)
			D->head[v] = D->head[d->node[v].fwd_plus1 - 1];
}

/* The slot of param p read by a node of copy c in unit_of_param. */
static int *
param_slot(const Dist *D, int c, int p)
{
	return &D->unit_of_param[(size_t)c * (size_t)D->g->nt + (size_t)p];
}

/* Which unit gathers each param in each copy: the unit of the first
 * forward op of that copy that reads it (the root for ops outside every
 * def); and each unit's bytes. Boundary nodes (send, recv) read no param. */
static void
find_units(Dist *D)
{
	const Graph *g = D->g;
	const Dag *d = D->d;

	D->ncopies = 1;
	for (int v = 0; v < d->nnode; v++) {
		int mb = dag_micro_batch(d, &d->node[v]);
		if (d->node[v].block_plus1 > D->nblocks)
			D->nblocks = d->node[v].block_plus1;
		if (mb + 1 > D->ncopies)
			D->ncopies = mb + 1;
	}
	D->nunits = D->nblocks + 2 * D->ncopies;
	find_heads(D);
	D->unit_of_param = ar_alloc(D->a, sizeof(int) * (size_t)D->ncopies * (size_t)(g->nt + 1));
	D->unit_bytes = ar_alloc(D->a, sizeof(int64_t) * (size_t)D->nunits);
	D->unit_copy = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	for (int v = 0; v < d->nnode; v++)
		D->unit_copy[unit_of_node(D, v)] = dag_micro_batch(d, &d->node[v]);
	for (int v = 0; v < d->nnode; v++) {
		const Op *op = d->node[v].ir_op >= 0 && !d->node[v].is_backward
		             ? &g->op[d->node[v].ir_op] : NULL;
		for (int i = 0; op && i < op->nin; i++) {
			int p = ir_storage_root(g, op->in[i]);
			int *slot = param_slot(D, dag_micro_batch(d, &d->node[v]), p);
			if (g->t[p].kind != TK_PARAM || g->t[p].buffer || *slot)
				continue;       /* a buffer is whole on every rank */
			*slot = unit_of_node(D, v) + 1;
			D->unit_bytes[*slot - 1] += g->t[p].bytes;
		}
	}
}

/* Each unit's params, in IR order (the order its gathered buffer
 * concatenates them in, which the generated program's all-gather follows):
 * a unit belongs to one copy (pipeline micro-batch), so they are that
 * copy's slots. One count pass and one fill pass over each copy's slots. */
static void
unit_params(Dist *D)
{
	const Graph *g = D->g;

	D->unit_list = ar_alloc(D->a, sizeof(int *) * (size_t)D->nunits);
	D->unit_nparams = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	for (int c = 0; c < D->ncopies; c++)
		for (int p = 0; p < g->nt; p++)
			if (*param_slot(D, c, p))
				D->unit_nparams[*param_slot(D, c, p) - 1]++;
	for (int u = 0; u < D->nunits; u++) {
		D->unit_list[u] = ar_alloc(D->a, sizeof(int) * (size_t)(D->unit_nparams[u] + 1));
		D->unit_nparams[u] = 0;
	}
	for (int c = 0; c < D->ncopies; c++)
		for (int p = 0; p < g->nt; p++) {
			int u = *param_slot(D, c, p) - 1;
			if (u >= 0)
				D->unit_list[u][D->unit_nparams[u]++] = p;
		}
}

/* The gather nodes and their output, and the reads of every node whose op
 * reads a weight of the unit. Both gathers of a unit make the same tensor
 * (the one Dag tensor with two producers, dag.h): by the liveness rule a
 * use is served by the latest gather, so the forward's instance dies
 * after its last forward reader, and a recompute of the unit's forward
 * that runs after the backward gather reads the backward's instance, as
 * FSDP and DeepSpeed run it on the one unsharded copy they hold, rather
 * than a second gathered copy. A recompute before the backward gather
 * (a segment spanning two units) gathers again (gather_f recomputed). */
static void
gathers(Dist *D)
{
	const Graph *g = D->g;
	int nold = D->d->nnode;

	D->gather_f = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	D->gather_b = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	D->gathered = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	for (int u = 0; u < D->nunits; u++) {
		int hc = u - D->nblocks - D->ncopies;   /* a head's copy */
		const char *nm = !u ? "allgather(root)"
		               : u <= D->nblocks ? ar_printf(D->a, "allgather(unit %d)", u)
		               : hc == 0 ? "allgather(head)"
		               : hc > 0 ? ar_printf(D->a, "allgather(head, micro-batch %d)", hc)
		               : ar_printf(D->a, "allgather(root, micro-batch %d)", u - D->nblocks);
		D->gather_f[u] = D->gather_b[u] = -1;
		if (!D->unit_bytes[u])
			continue;
		D->gathered[u] = new_tensor(D, nm, D->unit_bytes[u], CAT_PARAMS);
		D->gather_f[u] = new_node(D, nm, false);
		D->gather_b[u] = new_node(D, nm, true);
		for (int k = 0; k < 2; k++) {   /* the node array is final now */
			int v = k ? D->gather_b[u] : D->gather_f[u];
			DagNode *n = &D->d->node[v];
			DagXfer *x = dag_xfer_set(D->d, v, D->a);
			n->block_plus1 = u <= D->nblocks ? u : 0;
			x->micro_batch = D->unit_copy[u];
			n->out = ar_alloc(D->a, sizeof(int));
			n->out[0] = D->gathered[u];
			n->nout = 1;
			x->comm = COMM_ALLGATHER;
			x->comm_params = D->unit_list[u];
			x->ncomm_params = D->unit_nparams[u];
		}
		D->st->nunits++;
		if (D->st->max_gather < D->unit_bytes[u])
			D->st->max_gather = D->unit_bytes[u];
	}
	for (int v = 0; v < nold; v++) {
		const DagNode *n = &D->d->node[v];
		const Op *op = n->ir_op >= 0 ? &g->op[n->ir_op] : NULL;
		for (int i = 0; op && i < op->nin; i++) {
			int u = *param_slot(D, dag_micro_batch(D->d, n), ir_storage_root(g, op->in[i])) - 1;
			if (u < 0 || D->gather_f[u] < 0)
				continue;
			add_input(D, v, D->gathered[u]);
		}
	}
}

/* ---------------------------------------------------------------- buckets */

/* ZeRO-0 and 1: bucket k, all-reduced in place through its flat buffer
 * (the step's workspace); its gradients live on. Returns the node. */
static int
all_reduce(Dist *D, int k, const int *members, int nm, int64_t bytes)
{
	Dag *d = D->d;
	int v = new_node(D, ar_printf(D->a, "allreduce(bucket %d)", k), true);

	d->node[v].in = ar_alloc(D->a, sizeof(int) * (size_t)nm);
	memcpy(d->node[v].in, members, sizeof(int) * (size_t)nm);
	d->node[v].nin = nm;
	dag_set_workspace(d, v, bytes, D->a);
	dag_xfer_set(d, v, D->a)->comm = COMM_ALLREDUCE;
	return v;
}

/* ZeRO-2 and 3: bucket k in two steps, so that no step holds the full
 * gradients and the shards they make together (DeepSpeed copies each
 * gradient into its bucket and frees it before the reduce-scatter): a
 * pack step, the gradients' last reader, fills the flat buffer (a tensor
 * of the bucket's bytes), then the reduce-scatter (the next node, which
 * grad_shards gives the shards) reads it. Returns the pack node. */
static int
pack_and_scatter(Dist *D, int k, const int *members, int nm, int64_t bytes)
{
	Dag *d = D->d;
	int buf = new_tensor(D, ar_printf(D->a, "bucket %d", k), bytes, CAT_TEMPORARIES);
	int v = new_node(D, ar_printf(D->a, "pack(bucket %d)", k), true);
	int w = new_node(D, ar_printf(D->a, "reduce_scatter(bucket %d)", k), true);

	d->node[v].in = ar_alloc(D->a, sizeof(int) * (size_t)nm);
	memcpy(d->node[v].in, members, sizeof(int) * (size_t)nm);
	d->node[v].nin = nm;
	d->node[v].out = ar_alloc(D->a, sizeof(int));
	d->node[v].out[0] = buf;
	d->node[v].nout = 1;
	dag_xfer_set(d, v, D->a)->comm = COMM_PACK;
	d->node[w].in = ar_alloc(D->a, sizeof(int));
	d->node[w].in[0] = buf;
	d->node[w].nin = 1;
	dag_xfer_set(d, w, D->a)->comm = COMM_REDUCE_SCATTER;
	return v;
}

/* One rank, from ZeRO-2 (reached with offload): bucket k adds each of its
 * gradients straight into that param's shard, which is the whole gradient
 * there. With no collective to run there is no flat buffer to fill, so the
 * bucket holds nothing beyond the gradients it frees; a pack would make
 * ZeRO-2 cost more than ZeRO-1, whose gradients simply stay. Returns the
 * node, a COMM_REDUCE_SCATTER with no pack before it. */
static int
copy_to_shards(Dist *D, int k, const int *members, int nm)
{
	Dag *d = D->d;
	int v = new_node(D, ar_printf(D->a, "to_shards(bucket %d)", k), true);

	d->node[v].in = ar_alloc(D->a, sizeof(int) * (size_t)nm);
	memcpy(d->node[v].in, members, sizeof(int) * (size_t)nm);
	d->node[v].nin = nm;
	dag_xfer_set(d, v, D->a)->comm = COMM_REDUCE_SCATTER;
	return v;
}

/* Buckets of param gradients in the order the base schedule completes them
 * (the step of each one's last contribution); a bucket closes once it holds
 * o->bucket bytes, at the end of a pipeline copy's backward (under ZeRO
 * 2/3 each copy reduces its own gradients), and after the last gradient. */
static void
buckets(Dist *D)
{
	Dag *d = D->d;
	int nold = d->nnode, *last = ar_alloc(D->a, sizeof(int) * (size_t)(d->nt + 1));
	int *members = ar_alloc(D->a, sizeof(int) * (size_t)(d->nt + 1)), nm = 0, k = 0;
	int64_t bytes = 0;
	bool reduce_scatter = dist_grad_shards(D->o);

	D->bucket_after = ar_alloc(D->a, sizeof(int) * (size_t)(nold + 1));
	for (int t = 0; t < d->nt; t++)
		last[t] = -1;
	for (int i = 0; i < d->nbase; i++) {
		const DagNode *n = &d->node[d->base_order[i]];
		D->bucket_after[d->base_order[i]] = -1;
		for (int j = 0; j < n->nacc; j++)
			if (d->t[n->acc[j].tensor].cat == CAT_PARAM_GRADS)
				last[n->acc[j].tensor] = i;
	}
	for (int i = 0; i < d->nbase; i++) {
		const DagNode *n = &d->node[d->base_order[i]];
		for (int j = 0; j < n->nacc; j++) {
			int t = n->acc[j].tensor;
			if (d->t[t].cat != CAT_PARAM_GRADS || last[t] != i)
				continue;
			members[nm++] = t;
			bytes += d->t[t].bytes;
		}
		if (nm && (bytes >= D->o->bucket || i == d->nbase - 1 ||
		           dag_micro_batch(d, &d->node[d->base_order[i + 1]]) != dag_micro_batch(d, n))) {
			D->bucket_after[d->base_order[i]] =
			        !reduce_scatter ? all_reduce(D, k++, members, nm, bytes)
			        : D->o->ranks > 1 ? pack_and_scatter(D, k++, members, nm, bytes)
			        : copy_to_shards(D, k++, members, nm);
			if (D->st->max_bucket < bytes)
				D->st->max_bucket = bytes;
			nm = 0;
			bytes = 0;
		}
	}
	D->st->nbuckets = k;
}

/* ---------------------------------------------------------------- gradient shards */

/* ZeRO-2 and 3: one gradient shard per param (in the param's gradient
 * dtype), however many pipeline copies have a full gradient of it, into
 * which each bucket holding one of those gradients reduce-scatters. The
 * shard is made by the first such bucket and lives to the end of the step
 * (the optimizer reads it): DeepSpeed allocates its partitioned gradients
 * at the first reduction and FSDP sets the sharded .grad in its
 * post-backward hook, and both drop them after the optimizer step
 * (zero_grad with set_to_none), so nothing holds them during the forward
 * (docs/distributed.md, "Lifetimes"). Two cases keep the whole step:
 * - under gradient accumulation (--grad-sync each) the shard sums every
 *   micro-batch of the step, so the last micro-batch, which the DAG stands
 *   for, finds it made (a persistent buffer); with --grad-sync last the
 *   full gradients sum them instead, and the shard is made as above;
 * - ZeRO-Offload keeps it in host memory (a host buffer, 0 device bytes).
 * A param's shard in shard_tensor[param]: its Dag tensor + 1, 0 none yet
 * (1 for a persistent one). */
static void
persistent_shard(Dist *D, const Tensor *gt, int64_t bytes)
{
	Dag *d = D->d;
	int n = d->npersistent;

	d->persistent_buf = ar_grow(D->a, d->persistent_buf, sizeof(int64_t) * (size_t)(n + 1),
	                            sizeof(int64_t) * (size_t)(n + 2));
	d->persistent_cat = ar_grow(D->a, d->persistent_cat, sizeof(MemCat) * (size_t)(n + 1),
	                            sizeof(MemCat) * (size_t)(n + 2));
	d->persistent_ir = ar_grow(D->a, d->persistent_ir, sizeof(int) * (size_t)(n + 1),
	                           sizeof(int) * (size_t)(n + 2));
	d->persistent_host = ar_grow(D->a, d->persistent_host, sizeof(int64_t) * (size_t)(n + 1),
	                             sizeof(int64_t) * (size_t)(n + 2));
	d->persistent_buf[n] = bytes;
	d->persistent_cat[n] = CAT_PARAM_GRADS;
	d->persistent_ir[n] = gt->grad_of;
	d->persistent_host[n] = 0;
	if (D->o->offload_optimizer) {  /* ZeRO-Offload: the shard is the host's */
		D->st->host[CAT_PARAM_GRADS] += bytes;
		d->persistent_host[n] = bytes;
		d->persistent_buf[n] = 0;
	}
	d->persistent[CAT_PARAM_GRADS] += d->persistent_buf[n];
	D->st->grad_shards += d->persistent_buf[n];
	d->npersistent = n + 1;
}

/* Reduce-scatter node v's shards (its bucket's gradients are the inputs
 * of the pack node before it, or its own at one rank): a new one as an
 * output (its param in the node's comm_params, parallel to out[]), one an
 * earlier bucket made as an input (after the gradients). */
static void
bucket_shards(Dist *D, int v, int *shard_tensor)
{
	Dag *d = D->d;
	const Graph *g = D->g;
	/* pack_and_scatter's pair, or copy_to_shards' node itself (add_input
	 * below appends to its inputs: the first nin stay the gradients) */
	const DagNode *pack = &d->node[dag_xfer(d, v - 1)->comm == COMM_PACK ? v - 1 : v];
	int nin = pack->nin;
	int *out = ar_alloc(D->a, sizeof(int) * (size_t)(nin + 1));
	int *params = ar_alloc(D->a, sizeof(int) * (size_t)(nin + 1)), nout = 0;
	DagXfer *x;

	for (int j = 0; j < nin; j++) {
		const Tensor *gt = &g->t[d->t[pack->in[j]].ir_tensor];
		int *s = &shard_tensor[gt->grad_of];
		int64_t elem = ir_numel(gt) ? gt->bytes / ir_numel(gt) : 0;
		int64_t bytes = dag_shard_elems(ir_numel(gt), D->o->ranks) * elem;
		bool mine = false;      /* made by this very node */
		if (!*s) {
			*s = new_tensor(D, ar_printf(D->a, "grad_shard(%s)", g->t[gt->grad_of].id),
			                bytes, CAT_PARAM_GRADS) + 1;
			d->t[*s - 1].to_end = true;
			D->st->grad_shards += bytes;
			params[nout] = gt->grad_of;
			out[nout++] = *s - 1;
			continue;
		}
		for (int k = 0; k < nout; k++)
			mine |= out[k] == *s - 1;
		if (!mine)
			add_input(D, v, *s - 1);
	}
	d->node[v].out = out;
	d->node[v].nout = nout;
	x = dag_xfer_set(d, v, D->a);
	x->comm_params = params;
	x->ncomm_params = nout;
}

/* The full gradients now live only until their bucket is reduced; the
 * shards are persistent buffers (in the order of the gradients' Dag
 * tensors) for the whole step, or the buckets, in the base order that
 * made them, make them. */
static void
grad_shards(Dist *D, int nold)
{
	Dag *d = D->d;
	int ntold = d->nt;
	int *shard_tensor = ar_alloc(D->a, sizeof(int) * (size_t)(D->g->nt + 1));
	/* --grad-sync last: the gradients the earlier micro-batches accumulated
	 * are there at the start (from_start, as lowered), and the last one
	 * reduces them as a step without accumulation does */
	Settings set = D->g->settings;
	set.dist = *D->o;       /* a stage below the graph's (stage_below_seed) */
	bool last = dist_sync_last(&set);
	bool whole_step = D->o->offload_optimizer || (set.accumulate > 1 && !last);

	for (int t = 0; t < ntold; t++) {
		const Tensor *gt;
		if (d->t[t].cat != CAT_PARAM_GRADS)
			continue;
		d->t[t].to_end = false;
		d->t[t].from_start &= last;
		gt = &D->g->t[d->t[t].ir_tensor];
		if (whole_step && !shard_tensor[gt->grad_of]) {
			shard_tensor[gt->grad_of] = 1;
			persistent_shard(D, gt, dag_shard_elems(ir_numel(gt), D->o->ranks) *
			                 (ir_numel(gt) ? gt->bytes / ir_numel(gt) : 0));
		}
	}
	for (int v = nold; v < d->nnode && !whole_step; v++)
		if (dag_xfer(d, v)->comm == COMM_REDUCE_SCATTER)
			bucket_shards(D, v, shard_tensor);
}

/* ---------------------------------------------------------------- order */

/* The units with a gather in one direction, in the order the base
 * schedule enters them, and which of them ran their gather. A unit is
 * entered at its first operation of that direction (FSDP's pre-forward
 * and pre-backward hooks of the unit), or earlier where an operation of
 * another unit reads its weights first: a tied head reads the root's
 * embedding in the forward, and its backward runs before the root's.
 * Boundary nodes (send, recv), which read no weight, enter none. */
typedef struct Seq {
	const int *gather;      /* gather_f or gather_b */
	int *unit, n;           /* the units in order */
	int *pos;               /* [nunits] index in unit[], or -1 */
	bool *done;             /* [nunits] gather placed */
	int *head;              /* [nbase] the first unit entered at that base
	                           index, or -1 */
	int *next;              /* [nunits] the next unit entered there */
} Seq;

static Seq
sequence(const Dist *D, bool bwd)
{
	const Dag *d = D->d;
	const int *gathered = D->gathered;
	int *gunit = ar_alloc(D->a, sizeof(int) * (size_t)(d->nt + 1));
	int *first_read = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	int *first_op = ar_alloc(D->a, sizeof(int) * (size_t)D->nunits);
	Seq q = {bwd ? D->gather_b : D->gather_f,
	         ar_alloc(D->a, sizeof(int) * (size_t)D->nunits), 0,
	         ar_alloc(D->a, sizeof(int) * (size_t)D->nunits),
	         ar_alloc(D->a, (size_t)D->nunits),
	         ar_alloc(D->a, sizeof(int) * (size_t)(d->nbase + 1)),
	         ar_alloc(D->a, sizeof(int) * (size_t)D->nunits)};

	for (int u = 0; u < D->nunits; u++) {
		q.pos[u] = first_read[u] = first_op[u] = -1;
		if (q.gather[u] >= 0)
			gunit[gathered[u]] = u + 1;
	}
	for (int i = 0; i < d->nbase; i++) {
		int v = d->base_order[i], u = unit_of_node(D, v);
		const DagNode *n = &d->node[v];
		q.head[i] = -1;
		if (n->is_backward != bwd || n->ir_op < 0)
			continue;
		if (q.gather[u] >= 0 && first_op[u] < 0)
			first_op[u] = i;
		for (int j = 0; j < n->nin; j++)
			if (gunit[n->in[j]] && first_read[gunit[n->in[j]] - 1] < 0)
				first_read[gunit[n->in[j]] - 1] = i;
	}
	/* each base index's units in unit order: pushed from the last */
	for (int u = D->nunits - 1; u >= 0; u--) {
		int i = first_read[u] < 0 ? first_op[u]
		      : first_op[u] < 0 ? first_read[u]
		      : first_read[u] < first_op[u] ? first_read[u] : first_op[u];
		if (i < 0)
			continue;
		q.next[u] = q.head[i];
		q.head[i] = u;
	}
	for (int i = 0; i < d->nbase; i++)
		for (int u = q.head[i]; u >= 0; u = q.next[u]) {
			q.pos[u] = q.n;
			q.unit[q.n++] = u;
		}
	return q;
}

/* Entering unit u: its gather and, with --prefetch N, those of the next N
 * units of the sequence, unless they already ran. */
static void
enter(const Dist *D, Seq *q, int u, int *order, int *n)
{
	for (int i = q->pos[u]; i >= 0 && i < q->n && i <= q->pos[u] + D->o->prefetch; i++)
		if (!q->done[q->unit[i]]) {
			q->done[q->unit[i]] = true;
			order[(*n)++] = q->gather[q->unit[i]];
		}
}

/* The new base order: each unit's forward gather right before the
 * operation that enters it in the forward (sequence; or up to --prefetch
 * units earlier), its backward gather likewise in the backward, and each
 * bucket node right after the step that completes its bucket. */
static void
base_order(Dist *D, int nold)
{
	Dag *d = D->d;
	int *order = ar_alloc(D->a, sizeof(int) * (size_t)(d->nnode + 1)), n = 0;
	Seq f = {0}, b = {0};

	if (D->gather_f) {
		f = sequence(D, false);
		b = sequence(D, true);
	}
	for (int i = 0; i < d->nbase; i++) {
		int v = d->base_order[i];
		for (int u = D->gather_f ? f.head[i] : -1; u >= 0; u = f.next[u])
			enter(D, &f, u, order, &n);
		for (int u = D->gather_f ? b.head[i] : -1; u >= 0; u = b.next[u])
			enter(D, &b, u, order, &n);
		order[n++] = v;
		if (D->bucket_after && D->bucket_after[v] >= 0) {
			order[n++] = D->bucket_after[v];
			if (dag_xfer(d, D->bucket_after[v])->comm == COMM_PACK)
				order[n++] = D->bucket_after[v] + 1;    /* its reduce-scatter */
		}
	}
	/* a gather no operation of its direction entered still runs (the DAG
	 * runs every node): at the end */
	for (int u = 0; D->gather_f && u < D->nunits; u++) {
		if (D->gather_f[u] >= 0 && !f.done[u])
			order[n++] = D->gather_f[u];
		if (D->gather_b[u] >= 0 && !b.done[u])
			order[n++] = D->gather_b[u];
	}
	ir_assert(n == d->nnode && nold <= d->nnode);
	d->base_order = order;
	d->nbase = n;
}

/* The first node distribute appended (a collective), or nnode. */
static int
first_comm(const Dag *d)
{
	int v = 0;

	while (v < d->nnode && dag_xfer(d, v)->comm == COMM_NONE)
		v++;
	return v;
}

/* Why: a ZeRO-3 step only shards the weights and adds their gathers, so
 * the ZeRO-2 plan, with each unit gathered for the run of steps that
 * reads it, holds per step its ZeRO-2 bytes less the weights' unsharded
 * part plus the units gathered then; -O2 takes it as a candidate so that
 * its plan is no worse than that (docs/distributed.md). */
bool
dist_seed(const Dag *d3, const Dag *d2, const Schedule *s2, Schedule *out, Arena *a)
{
	int first = first_comm(d2), ng = 0, n = 0, gsteps = 0;
	int *gf = ar_alloc(a, sizeof(int) * (size_t)(d3->nt + 1));
	int *gb = ar_alloc(a, sizeof(int) * (size_t)(d3->nt + 1));
	int *lastread = ar_alloc(a, sizeof(int) * (size_t)(d3->nt + 1));
	bool *bdone = ar_alloc(a, (size_t)d3->nt + 1), bwd = false;

	for (int t = 0; t < d3->nt; t++)
		gf[t] = gb[t] = lastread[t] = -1;
	for (int v = first; v < d3->nnode; v++) {
		const DagNode *nd = &d3->node[v];
		if (dag_xfer(d3, v)->comm != COMM_ALLGATHER)
			break;
		*(nd->once ? &gb[nd->out[0]] : &gf[nd->out[0]]) = v;
		ng++;
	}
	if (first != first_comm(d3) || d2->nnode + ng != d3->nnode)
		return false;
	for (int v = 0; v < d2->nnode; v++)
		if (strcmp(d2->node[v].name, d3->node[v < first ? v : v + ng].name))
			return false;
	out->step = ar_alloc(a, sizeof(int) * (size_t)(s2->n + 2 * d3->nt + 1));
	for (int i = 0; i < s2->n; i++) {
		int v = s2->step[i] < first ? s2->step[i] : s2->step[i] + ng;
		const DagNode *nd = &d3->node[v];
		bool reads = false;
		bwd |= nd->is_backward;
		for (int j = 0; j < nd->nin; j++) {
			int t = nd->in[j];
			if (gf[t] < 0)
				continue;
			if (lastread[t] != gsteps) {    /* a new run of the unit */
				bool b = bwd && gb[t] >= 0 && !bdone[t];
				out->step[n++] = b ? gb[t] : gf[t];
				bdone[t] |= b;
			}
			reads = true;
		}
		for (int j = 0; reads && j < nd->nin; j++)
			if (gf[nd->in[j]] >= 0)
				lastread[nd->in[j]] = gsteps + 1;
		gsteps += reads;
		out->step[n++] = v;
	}
	/* a backward gather no backward step needed still runs once */
	for (int t = 0; t < d3->nt; t++)
		if (gb[t] >= 0 && !bdone[t])
			out->step[n++] = gb[t];
	out->n = n;
	return true;
}

bool
dist_active(const DistOptions *o)
{
	return o->ranks > 1 || o->offload_optimizer || o->offload_params;
}

void
distribute(const Graph *g, Dag *d, const DistOptions *o, DistStats *st, Arena *a)
{
	Dist D = {.g = g, .d = d, .a = a, .o = o, .st = st, .cap_t = d->nt, .cap_n = d->nnode};
	int nold = d->nnode;

	memset(st, 0, sizeof *st);
	if (!dist_active(o))
		return;
	d->persistent_host = ar_alloc(a, sizeof(int64_t) * (size_t)(d->npersistent + 1));
	for (int i = 0; i < d->npersistent; i++)
		shard_buffer(&D, i);
	if (!g->train) {
		dag_finish(d);
		return;
	}
	if (dist_gathers(o)) {
		find_units(&D);
		unit_params(&D);
		gathers(&D);
	}
	/* from ZeRO-2 the buckets move the gradients into their shards, at
	 * one rank a copy to the host's (ZeRO-Offload) */
	if (o->ranks > 1 || dist_grad_shards(o))
		buckets(&D);
	if (dist_grad_shards(o))
		grad_shards(&D, nold);
	base_order(&D, nold);
	dag_finish(d);
}

/* The first Dag node of each gradient bucket of d from its first
 * collective on (a pack, whose reduce-scatter follows; a one-rank
 * reduce-scatter; an all-reduce) into first_node[], their count in *nb;
 * false when d has any other collective (a gather). */
static bool
bucket_nodes(const Dag *d, int first, int *first_node, int *nb)
{
	*nb = 0;
	for (int v = first; v < d->nnode; v++) {
		DagComm c = dag_xfer(d, v)->comm;
		if (c == COMM_REDUCE_SCATTER && dag_xfer(d, v - 1)->comm == COMM_PACK)
			continue;
		if (c != COMM_PACK && c != COMM_REDUCE_SCATTER && c != COMM_ALLREDUCE)
			return false;
		first_node[(*nb)++] = v;
	}
	return true;
}

/* Why: from ZeRO-1 to ZeRO-2 only the buckets change. Bucket k's
 * all-reduce (at one rank nothing: the gradients stay to the end) becomes
 * a pack and a reduce-scatter into the shards (at one rank a copy into the
 * host's). Run where ZeRO-1's all-reduce ran, or at one rank right after
 * the step that completes the bucket's last gradient, each step of the
 * ZeRO-1 plan holds no more than it did: the flat buffer takes the
 * all-reduce's workspace's place, the shards the full gradients'. -O2
 * takes it as a candidate, so that its ZeRO-2 plan is never above its
 * ZeRO-1 plan (docs/distributed.md). Not so under --accumulate with
 * --grad-sync each, where the shard lives the whole step and the pack holds
 * a bucket's gradients and its buffer at once: one bucket of most
 * gradients costs the shard more (--grad-sync auto then keeps last's). */
bool
dist_shard_seed(const Dag *d2, const Dag *d1, const Schedule *s1, Schedule *out, Arena *a)
{
	int first = first_comm(d1), nb = 0, na = 0, n = 0;
	int *bucket = ar_alloc(a, sizeof(int) * (size_t)(d2->nnode + 1));
	int *ar = ar_alloc(a, sizeof(int) * (size_t)(d1->nnode + 1));
	int *of = ar_alloc(a, sizeof(int) * (size_t)(d2->nt + 1));     /* gradient -> bucket */
	int *last = ar_alloc(a, sizeof(int) * (size_t)(d2->nnode + 1)); /* bucket -> s1 index */

	if (first != first_comm(d2) || !bucket_nodes(d2, first, bucket, &nb) ||
	    !bucket_nodes(d1, first, ar, &na) || (na && na != nb))
		return false;
	for (int v = 0; v < first; v++)
		if (strcmp(d1->node[v].name, d2->node[v].name))
			return false;
	for (int t = 0; t < d2->nt; t++)
		of[t] = -1;
	for (int k = 0; k < nb; k++) {
		const DagNode *b = &d2->node[bucket[k]];
		if (na && (dag_xfer(d1, ar[k])->comm != COMM_ALLREDUCE || d1->node[ar[k]].nin != b->nin ||
		           memcmp(d1->node[ar[k]].in, b->in, sizeof(int) * (size_t)b->nin)))
			return false;
		for (int j = 0; j < b->nin; j++)
			if (d2->t[b->in[j]].ir_tensor >= 0)     /* not a shard */
				of[b->in[j]] = k;
		last[k] = -1;
	}
	for (int i = 0; !na && i < s1->n; i++) {
		const DagNode *nd = &d1->node[s1->step[i]];
		for (int j = 0; j < nd->nout; j++)
			if (nd->out[j] < d2->nt && of[nd->out[j]] >= 0)
				last[of[nd->out[j]]] = i;
		for (int j = 0; j < nd->nacc; j++)
			if (nd->acc[j].tensor < d2->nt && of[nd->acc[j].tensor] >= 0)
				last[of[nd->acc[j].tensor]] = i;
	}
	/* one rank: the buckets completed at each step, in bucket order */
	int *at = ar_alloc(a, sizeof(int) * (size_t)(s1->n + 1));
	int *after = ar_alloc(a, sizeof(int) * (size_t)(nb + 1));
	for (int i = 0; i < s1->n; i++)
		at[i] = -1;
	for (int k = nb - 1; k >= 0; k--)
		if (last[k] >= 0) {
			after[k] = at[last[k]];
			at[last[k]] = k;
		}
	out->step = ar_alloc(a, sizeof(int) * (size_t)(s1->n + 2 * nb + 1));
	for (int i = 0; i < s1->n; i++) {
		int v = s1->step[i];
		if (v >= first) {       /* all-reduce k: bucket k in its place */
			int k = v - first;
			out->step[n++] = bucket[k];
			if (dag_xfer(d2, bucket[k])->comm == COMM_PACK)
				out->step[n++] = bucket[k] + 1;
			continue;
		}
		out->step[n++] = v;
		for (int k = at[i]; k >= 0; k = after[k])
			out->step[n++] = bucket[k];
	}
	for (int k = 0; !na && k < nb; k++)    /* a bucket nothing completed */
		if (last[k] < 0)
			out->step[n++] = bucket[k];
	out->n = n;
	return true;
}
