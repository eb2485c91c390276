/* ir/dag/dag.c -- small helpers on the Dag: names of memory categories and
 * step kinds, the cost totals (dag_finish), the base schedule, the kind
 * of a schedule step. Reads
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
	for (int i = 0; i < d->nnode; i++) {
		d->total_cost += d->node[i].cost;
		if (!d->node[i].once)
			d->forward_cost += d->node[i].cost;
	}
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
