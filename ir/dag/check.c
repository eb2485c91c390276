/* ir/dag/check.c -- the invariant checks of the plain DAG and of a schedule
 * on it, run after lowering (or import) and after planning: indices in
 * range, one producer per tensor (two all-gathers for ZeRO-3's gathered
 * weights), views of earlier-made tensors, a base
 * order that runs every node once with each use served, backward steps
 * after their forward steps. Linear in the DAG's size. They find bugs in
 * remat; the user's input is checked before. Reads a Dag and a Schedule;
 * writes nothing. */
#include "dag.h"


static bool
check_tensors(const Dag *d, char *why, size_t n)
{
	for (int t = 0; t < d->nt; t++) {
		const DagTensor *x = &d->t[t];
		if (x->bytes < 0 || x->cat >= CAT_COUNT)       /* cat is unsigned */
			return why_fail(why, n, "tensor %s: %lld bytes, category %d", x->name,
			            (long long)x->bytes, (int)x->cat);
		if (x->view_src < -1 || x->view_src >= d->nt || x->view_src == t)
			return why_fail(why, n, "tensor %s is a view of %d", x->name, x->view_src);
	}
	return true;
}

/* Each tensor has at most one producing node (or comes from the start),
 * and producer[] records it. The one exception is ZeRO-3's gathered
 * weights: a unit's forward all-gather and its backward all-gather (a
 * once node, after it in node order) make the same tensor (dag.h). */
static bool
second_gather(const Dag *d, int first, int v)
{
	return dag_xfer(d, first)->comm == COMM_ALLGATHER && !d->node[first].once &&
	       dag_xfer(d, v)->comm == COMM_ALLGATHER && d->node[v].once;
}

static bool
check_nodes(const Dag *d, int *producer, char *why, size_t n)
{
	for (int t = 0; t < d->nt; t++)
		producer[t] = -1;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *nd = &d->node[v];
		if (nd->cost < 0 || dag_workspace(d, v) < 0 || nd->nin < 0 || nd->nout < 0 || nd->nacc < 0)
			return why_fail(why, n, "node %s has negative counts", nd->name);
		if (nd->fwd_plus1 < 0 || nd->fwd_plus1 > d->nnode || nd->fwd_plus1 == v + 1)
			return why_fail(why, n, "node %s follows node %d", nd->name, nd->fwd_plus1 - 1);
		for (int i = 0; i < nd->nin; i++)
			if (nd->in[i] < 0 || nd->in[i] >= d->nt)
				return why_fail(why, n, "node %s uses tensor %d", nd->name, nd->in[i]);
		for (int i = 0; i < nd->nacc; i++)
			if (nd->acc[i].tensor < 0 || nd->acc[i].tensor >= d->nt
			    || nd->acc[i].view_src < -1 || nd->acc[i].view_src >= d->nt)
				return why_fail(why, n, "node %s contributes to tensor %d", nd->name,
				            nd->acc[i].tensor);
		for (int i = 0; i < nd->nout; i++) {
			int t = nd->out[i];
			if (t < 0 || t >= d->nt)
				return why_fail(why, n, "node %s makes tensor %d", nd->name, t);
			if ((producer[t] >= 0 && !second_gather(d, producer[t], v)) ||
			    d->t[t].from_start)
				return why_fail(why, n, "tensor %s has two producers", d->t[t].name);
			producer[t] = v;        /* a third gather fails: once */
		}
	}
	return true;
}

bool
dag_check(const Dag *d, Arena *scratch, char *why, size_t n)
{
	int *producer = ar_alloc(scratch, sizeof *producer * (size_t)(d->nt + 1));
	int64_t fwd = 0, total = 0;

	if (!check_tensors(d, why, n) || !check_nodes(d, producer, why, n))
		return false;
	for (int v = 0; v < d->nnode; v++) {
		total += d->node[v].cost;
		if (!d->node[v].once)
			fwd += d->node[v].cost;
	}
	if (fwd != d->forward_cost || total != d->total_cost)
		return why_fail(why, n, "cost totals %lld/%lld, nodes sum to %lld/%lld",
		            (long long)d->forward_cost, (long long)d->total_cost,
		            (long long)fwd, (long long)total);
	if (d->nbase != d->nnode)
		return why_fail(why, n, "the base order has %d steps for %d nodes", d->nbase, d->nnode);
	return dag_check_schedule(d, &(Schedule){d->nbase, d->base_order}, scratch, why, n);
}

/* A schedule: every node runs, once-nodes exactly once, each input was made
 * by an earlier step (or comes from the start), and a backward step comes
 * after its forward step. */
bool
dag_check_schedule(const Dag *d, const Schedule *s, Arena *scratch, char *why, size_t n)
{
	int *runs = ar_alloc(scratch, sizeof *runs * (size_t)(d->nnode + 1));
	bool *made = ar_alloc(scratch, sizeof *made * (size_t)(d->nt + 1));

	for (int t = 0; t < d->nt; t++)
		made[t] = d->t[t].from_start;
	for (int i = 0; i < s->n; i++) {
		int v = s->step[i];
		const DagNode *nd;
		if (v < 0 || v >= d->nnode)
			return why_fail(why, n, "step %d runs node %d of %d", i, v, d->nnode);
		nd = &d->node[v];
		if (nd->once && runs[v])
			return why_fail(why, n, "step %d runs %s a second time", i, nd->name);
		if (nd->fwd_plus1 && !runs[nd->fwd_plus1 - 1])
			return why_fail(why, n, "step %d runs backward %s before its forward", i, nd->name);
		for (int k = 0; k < nd->nin; k++)
			if (!made[nd->in[k]])
				return why_fail(why, n, "step %d (%s) uses %s before it is made", i,
				            nd->name, d->t[nd->in[k]].name);
		for (int k = 0; k < nd->nout; k++)
			made[nd->out[k]] = true;
		for (int k = 0; k < nd->nacc; k++)
			made[nd->acc[k].tensor] = true;
		runs[v]++;
	}
	for (int v = 0; v < d->nnode; v++)
		if (!runs[v])
			return why_fail(why, n, "node %s never runs", d->node[v].name);
	return true;
}
