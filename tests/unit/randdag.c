/* tests/unit/randdag.c -- random Dags for the tests (randdag.h). The
 * forward part is a chain with branches (an op may read any earlier tensor)
 * and skip connections (a second input); the last op is a loss reading every
 * otherwise unused output, so every tensor reaches it. The backward part
 * follows dag.h's lowering: one once-only node per forward op in reverse
 * order, reading grad(out) and what the op saves, contributing to the
 * gradients of its inputs through acc entries (views make grad(a) a view of
 * grad(out)), and to param grads (to_end). */
#include <string.h>

#include "randdag.h"

uint64_t
rd_next(uint64_t *seed)
{
	uint64_t z = (*seed += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int64_t
rd_range(uint64_t *seed, int64_t lo, int64_t hi)
{
	return lo + (int64_t)(rd_next(seed) % (uint64_t)(hi - lo + 1));
}

static bool
chance(uint64_t *seed, int percent)
{
	return rd_range(seed, 1, 100) <= percent;
}

/* Mixed sizes: mostly small, some ten times larger. */
static int64_t
rand_bytes(uint64_t *seed)
{
	int64_t b = 16 * rd_range(seed, 1, 64);

	return chance(seed, 20) ? 10 * b : b;
}

typedef struct Rd {
	Dag *d;
	Arena *a;
	uint64_t *seed;
	const RdOptions *o;
	int capt, capn;
	int *op_node;           /* forward op -> node */
	bool *is_view;          /* forward op is a view */
	int *param;             /* forward op -> param-grad tensor, or -1 */
	int *grad;              /* tensor -> its gradient tensor, or -1 */
} Rd;

static int
add_tensor(Rd *r, const char *name, int64_t bytes, MemCat cat)
{
	DagTensor *t = &r->d->t[r->d->nt];

	ir_assert(r->d->nt < r->capt);
	t->name = name;
	t->bytes = bytes;
	t->view_src = -1;
	t->cat = cat;
	t->ir_tensor = -1;
	r->grad[r->d->nt] = -1;
	return r->d->nt++;
}

static int
add_node(Rd *r, const char *name, int64_t cost)
{
	DagNode *n = &r->d->node[r->d->nnode];

	ir_assert(r->d->nnode < r->capn);
	n->name = name;
	n->cost = cost;
	n->ir_op = -1;
	n->in = ar_alloc(r->a, sizeof *n->in * 8);
	n->out = ar_alloc(r->a, sizeof *n->out * 2);
	/* a backward node contributes to each of its forward's inputs (the
	 * loss takes up to 8) and to the op's param */
	n->acc = ar_alloc(r->a, sizeof *n->acc * 9);
	return r->d->nnode++;
}

static void
add_in(DagNode *n, int t)
{
	for (int j = 0; j < n->nin; j++)
		if (n->in[j] == t)
			return;
	ir_assert(n->nin < 8);
	n->in[n->nin++] = t;
}

/* Forward op i reads x (and maybe a skip input) and makes its output. */
static void
forward_op(Rd *r, int i, int nops, int *used)
{
	Dag *d = r->d;
	uint64_t *s = r->seed;
	int x = i == 0 ? 0 : d->node[r->op_node[i - 1]].out[0], v, t;
	bool loss = i == nops - 1 && r->o->train;

	if (i > 0 && chance(s, 20))     /* a branch off an earlier tensor */
		x = d->node[r->op_node[rd_range(s, 0, i - 1)]].out[0];
	r->is_view[i] = r->o->views && i > 0 && !loss && chance(s, 12);
	v = add_node(r, ar_printf(r->a, "op%d", i), r->is_view[i] ? 0 : rd_range(s, 1, 100));
	r->op_node[i] = v;
	add_in(&d->node[v], x);
	if (!r->is_view[i] && i > 1 && chance(s, 30))   /* a skip connection */
		add_in(&d->node[v], d->node[r->op_node[rd_range(s, 0, i - 2)]].out[0]);
	t = add_tensor(r, d->node[v].name, r->is_view[i] ? d->t[x].bytes :
	               loss ? 4 : rand_bytes(s), CAT_ACTIVATIONS);
	if (r->is_view[i])
		d->t[t].view_src = x;
	d->node[v].out[d->node[v].nout++] = t;
	if (r->o->extras && !r->is_view[i] && !loss && chance(s, 15)) {
		t = add_tensor(r, ar_printf(r->a, "op%d:mean", i), 16 * rd_range(s, 1, 8),
		               CAT_ACTIVATIONS);
		d->node[v].out[d->node[v].nout++] = t;
	}
	if (r->o->workspace && !r->is_view[i] && chance(s, 20))
		dag_set_workspace(d, v, 16 * rd_range(s, 1, 32), r->a);
	if (r->o->persistent && !r->is_view[i] && chance(s, 40)) {
		r->param[i] = add_tensor(r, ar_printf(r->a, "grad(w%d)", i),
		                         16 * rd_range(s, 1, 16), CAT_PARAM_GRADS);
		d->t[r->param[i]].to_end = true;
		d->persistent[CAT_PARAMS] += 4 * d->t[r->param[i]].bytes;
	}
	for (int j = 0; j < d->node[v].nin; j++)
		used[d->node[v].in[j]] = 1;
}

/* The loss reads every output nothing else reads. */
static void
loss_reads_everything(Rd *r, int nops, const int *used)
{
	DagNode *loss = &r->d->node[r->op_node[nops - 1]];

	for (int i = 0; i < nops - 1; i++) {
		int t = r->d->node[r->op_node[i]].out[0];
		if (!used[t] && loss->nin < 8)
			add_in(loss, t);
	}
}

/* grad(t), made on first need. */
static int
grad_of(Rd *r, int t)
{
	if (r->grad[t] < 0)
		r->grad[t] = add_tensor(r, ar_printf(r->a, "grad(%s)", r->d->t[t].name),
		                        r->d->t[t].bytes, CAT_GRADIENTS);
	return r->grad[t];
}

/* The backward node of forward op i. */
static void
backward_op(Rd *r, int i, int nops)
{
	Dag *d = r->d;
	const DagNode *f = &d->node[r->op_node[i]];
	int fout = f->out[0], b, g = -1;
	DagNode *n;

	if (i < nops - 1)
		g = grad_of(r, fout);
	b = add_node(r, f->name, 2 * f->cost);
	n = &d->node[b];
	f = &d->node[r->op_node[i]];
	n->once = n->is_backward = true;
	n->fwd_plus1 = r->op_node[i] + 1;       /* after its forward, as lowered */
	dag_set_workspace(d, b, dag_workspace(d, r->op_node[i]), r->a);
	if (g >= 0)
		add_in(n, g);
	for (int j = 0; j < f->nin && !r->is_view[i]; j++)
		if (chance(r->seed, 60))
			add_in(n, f->in[j]);
	if (!r->is_view[i] && chance(r->seed, 40))
		add_in(n, fout);
	if (f->nout > 1)
		add_in(n, f->out[1]);
	for (int j = 0; j < f->nin; j++) {
		int a = f->in[j];
		if (d->t[a].from_start)
			continue;       /* inputs need no grad */
		n->acc[n->nacc].tensor = grad_of(r, a);
		n->acc[n->nacc++].view_src = r->is_view[i] ? g : -1;
	}
	if (r->param[i] >= 0)
		n->acc[n->nacc++] = (DagAcc){r->param[i], -1};
	ir_assert(n->nacc <= 9);
}

void
rd_make(Dag *d, uint64_t *seed, const RdOptions *o, Arena *a)
{
	int nops = (int)rd_range(seed, o->min_ops, o->max_ops);
	Rd r = {d, a, seed, o, 4 * nops + 8, 2 * nops + 2, NULL, NULL, NULL, NULL};
	int *used;

	memset(d, 0, sizeof *d);
	d->t = ar_alloc(a, sizeof *d->t * (size_t)r.capt);
	d->node = ar_alloc(a, sizeof *d->node * (size_t)r.capn);
	r.op_node = ar_alloc(a, sizeof *r.op_node * (size_t)nops);
	r.is_view = ar_alloc(a, sizeof *r.is_view * (size_t)nops);
	r.param = ar_alloc(a, sizeof *r.param * (size_t)nops);
	r.grad = ar_alloc(a, sizeof *r.grad * (size_t)r.capt);
	used = ar_alloc(a, sizeof *used * (size_t)r.capt);
	for (int i = 0; i < nops; i++)
		r.param[i] = -1;
	add_tensor(&r, "x", rand_bytes(seed), CAT_INPUTS);
	d->t[0].from_start = true;
	for (int i = 0; i < nops; i++)
		forward_op(&r, i, nops, used);
	if (o->train)
		loss_reads_everything(&r, nops, used);
	else
		for (int i = 0; i < nops; i++)
			if (!used[d->node[r.op_node[i]].out[0]])
				d->t[d->node[r.op_node[i]].out[0]].to_end = true;
	for (int i = nops - 1; o->train && i >= 0; i--)
		backward_op(&r, i, nops);
	if (o->persistent)
		d->persistent[CAT_OPTIMIZER] = d->persistent[CAT_PARAMS] / 2;
	d->nbase = d->nnode;
	d->base_order = ar_alloc(a, sizeof *d->base_order * (size_t)d->nnode);
	for (int v = 0; v < d->nnode; v++)
		d->base_order[v] = v;
	dag_finish(d);
}

Schedule
rd_schedule(const Dag *d, uint64_t *seed, int nrecompute, Arena *a)
{
	Schedule s = {d->nbase, ar_alloc(a, sizeof(int) * (size_t)(d->nbase + nrecompute + 1))};

	memcpy(s.step, d->base_order, sizeof(int) * (size_t)d->nbase);
	for (int k = 0; k < nrecompute; k++) {
		int v = s.step[rd_range(seed, 0, s.n - 1)], first = 0, pos;
		if (d->node[v].once)
			continue;
		while (s.step[first] != v)
			first++;
		pos = (int)rd_range(seed, first + 1, s.n);
		memmove(s.step + pos + 1, s.step + pos, sizeof(int) * (size_t)(s.n - pos));
		s.step[pos] = v;
		s.n++;
	}
	return s;
}
