/* ir/dag/dag.c -- small helpers on the Dag: names of memory categories and
 * step kinds, the cost totals (dag_finish), the base schedule, the kind
 * of a schedule step, a tensor's storage root (dag_root). Reads
 * Dag.node[].cost/once/is_backward and base_order; writes Dag.forward_cost
 * and Dag.total_cost. */
#include <string.h>

#include "dag.h"

static const char *const memcat_names[CAT_COUNT] = {
	"params", "master", "optimizer", "param_grads", "inputs",
	"activations", "gradients", "temporaries",
};

const char *
memcat_name(MemCat c)
{
	ir_assert(c >= 0 && c < CAT_COUNT);
	return memcat_names[c];
}

const char *
step_kind_name(StepKind k)
{
	switch (k) {
	case STEP_FORWARD:
		return "forward";
	case STEP_RECOMPUTE:
		return "recompute";
	case STEP_BACKWARD:
		return "backward";
	}
	ir_assert(0);
	return "";
}

void
dag_finish(Dag *d)
{
	d->forward_cost = 0;
	d->total_cost = 0;
	for (int i = 0; i < d->nnode; i++) {   /* saturating: dag_excess() reports */
		d->total_cost = ck_sat_add(d->total_cost, d->node[i].cost);
		if (!d->node[i].once)
			d->forward_cost = ck_sat_add(d->forward_cost, d->node[i].cost);
	}
}

/* Running totals of every byte the Dag can hold at once (persistent
 * buffers, every tensor, every node's workspace and accumulation
 * temporaries) and of every node's cost; the first place either passes
 * DAG_LIMIT. Below it, every sum the evaluators and planners form over a
 * schedule's steps stays far from 2^63. */
bool
dag_excess(const Dag *d, DagExcess *x)
{
	int64_t bytes = 0, cost = 0;

	*x = (DagExcess){NULL, -1, -1, -1};
	for (int i = 0; i < d->npersistent; i++)  /* persistent[] may saturate */
		if (!ck_add(bytes, d->persistent_buf[i], &bytes) || bytes > DAG_LIMIT) {
			x->what = "bytes";
			x->ir = d->persistent_ir[i];
			return true;
		}
	for (int t = 0; t < d->nt; t++)
		if (!ck_add(bytes, d->t[t].bytes, &bytes) || bytes > DAG_LIMIT) {
			x->what = "bytes";
			x->tensor = t;
			return true;
		}
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		bool ok = ck_add(bytes, dag_workspace(d, v), &bytes);
		for (int j = 0; j < n->nacc; j++)
			ok &= ck_add(bytes, d->t[n->acc[j].tensor].bytes, &bytes);
		x->node = v;
		if (!ok || bytes > DAG_LIMIT) {
			x->what = "bytes";
			return true;
		}
		if (!ck_add(cost, n->cost, &cost) || cost > DAG_LIMIT) {
			x->what = "FLOPs";
			return true;
		}
	}
	x->node = -1;
	return false;
}

Schedule
dag_base_schedule(const Dag *d, Arena *a)
{
	Schedule s;

	s.n = d->nbase;
	s.step = ar_alloc(a, sizeof *s.step * (size_t)(d->nbase + 1));
	if (d->nbase)
		memcpy(s.step, d->base_order, sizeof *s.step * (size_t)d->nbase);
	return s;
}

/* A node's first step is its forward (or backward) step; any later step is
 * a recompute. seen[v] tells whether node v ran before step i. */
StepKind
dag_step_kind(const Dag *d, const Schedule *s, int i, const bool *seen)
{
	int v = s->step[i];

	if (seen[v])
		return STEP_RECOMPUTE;
	return d->node[v].is_backward ? STEP_BACKWARD : STEP_FORWARD;
}

/* Both pushes grow their array by doubling (never below 64 entries) in the
 * arena, with ar_fit; *cap is the array's capacity, kept by the caller. */
DagTensor *
dag_push_tensor(Dag *d, int *cap, Arena *a)
{
	DagTensor *t;

	d->t = ar_fit(a, d->t, d->nt, cap, sizeof *d->t, 64);
	t = &d->t[d->nt++];
	memset(t, 0, sizeof *t);
	t->view_src = -1;
	t->ir_tensor = -1;
	return t;
}

DagNode *
dag_push_node(Dag *d, int *cap, Arena *a)
{
	DagNode *n;

	d->node = ar_fit(a, d->node, d->nnode, cap, sizeof *d->node, 64);
	if (d->nnode < d->nxfer)        /* the side arrays: a new node has none */
		memset(&d->xfer[d->nnode], 0, sizeof *d->xfer);
	if (d->nnode < d->nworkspace)
		d->workspace[d->nnode] = 0;
	n = &d->node[d->nnode++];
	memset(n, 0, sizeof *n);
	n->ir_op = -1;
	return n;
}

/* Grows a side array of the nodes (*arr, *n entries of size bytes) to
 * hold node v, by doubling, to at least d->nnode entries; the new entries
 * are zeroed, which reads as "none" for every side array. */
static void *
side_grow(const Dag *d, void *arr, int *n, size_t size, int v, Arena *a)
{
	int k = *n ? *n : 64;

	ir_assert(v >= 0 && v < d->nnode);
	if (v < *n)
		return arr;
	while (k <= v || k < d->nnode)
		k = k > INT32_MAX / 2 ? INT32_MAX : 2 * k;
	arr = ar_grow(a, arr, size * (size_t)*n, size * (size_t)k);
	memset((char *)arr + size * (size_t)*n, 0, size * (size_t)(k - *n));
	*n = k;
	return arr;
}

void
dag_set_workspace(Dag *d, int v, int64_t bytes, Arena *a)
{
	if (!bytes && v >= d->nworkspace)
		return;         /* reads as 0 already */
	d->workspace = side_grow(d, d->workspace, &d->nworkspace, sizeof *d->workspace, v, a);
	d->workspace[v] = bytes;
}

int
dag_root(const Dag *d, int t)
{
	for (int i = 0; i <= d->nt && t >= 0; i++) {
		if (d->t[t].persistent_view)
			return -1;
		if (d->t[t].view_src < 0)
			return t;
		t = d->t[t].view_src;
	}
	return t;
}

const DagXfer *
dag_xfer(const Dag *d, int v)
{
	static const DagXfer none;

	return v < d->nxfer ? &d->xfer[v] : &none;
}

int
dag_micro_batch(const Dag *d, const DagNode *n)
{
	return dag_xfer(d, (int)(n - d->node))->micro_batch;
}

DagXfer *
dag_xfer_set(Dag *d, int v, Arena *a)
{
	d->xfer = side_grow(d, d->xfer, &d->nxfer, sizeof *d->xfer, v, a);
	return &d->xfer[v];
}
