/* passes/eval/verify.c -- the independent evaluator behind --verify.
 *
 * Written straight from the rules in dag.h and memory-model.md, with no
 * cleverness, so that it can check lv_eval: a table of instances is built in
 * step order, every use looks up its serving instance as the newest one of
 * its tensor made before the step (each instance links to the previous one
 * of its tensor), each instance's end is its last use or its views' (a
 * view's base is always a root), and the memory at each step is every
 * instance's bytes added over its steps. All of it is linear in the steps
 * and instances, so that --verify (and the fuzzer, which verifies every
 * input) stays fast on big graphs; an earlier version scanned the table per
 * use and per step, and took over 10 s on 20,000-tensor inputs. vf_check
 * compares its result with a MemEval: validity, each step's live_bytes, the
 * peak, the peak step and the recompute cost. Reads the Dag and the
 * schedule only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "eval.h"

typedef struct VfInst {
	int tensor;
	int step;               /* producing step; -1: before step 0 */
	int last_use;           /* last step it serves, or -1 */
	int base;               /* root instance a view aliases, else itself */
	int64_t owned;
	bool sum;               /* an out_of_place sum (DagAcc) */
} VfInst;

typedef struct Vf {
	const Dag *d;
	const Schedule *s;
	MemEval *ev;
	VfInst *inst;
	int ninst;
	int *last;              /* [nt] the newest instance of each tensor, or -1 */
	int *prev;              /* [instances] the one of its tensor before it */
	int *runs;              /* [nnode] how often each node ran so far */
	int *first_read;        /* [nt] first step reading it, or -1 */
} Vf;

/* The most recent instance of t produced before step i, or -1. Instances
 * are appended in step order, so the first one back along t's chain made
 * before i wins. */
static int
latest(const Vf *V, int t, int i)
{
	int k = V->last[t];

	while (k >= 0 && V->inst[k].step >= i)
		k = V->prev[k];
	return k;
}

/* Step i uses t: the serving instance lives through i. -1 if none. A use
 * named by what is a read; contributions to a gradient (what NULL) are not. */
static int
use(Vf *V, int i, int t, const char *what)
{
	int k = latest(V, t, i);

	if (k < 0) {
		ev_fail(V->ev, "step %d uses %s '%s', which no earlier step produced",
		        i, what ? what : "gradient", V->d->t[t].name);
		return -1;
	}
	if (V->inst[k].last_use < i)
		V->inst[k].last_use = i;
	if (what && V->first_read[t] < 0)
		V->first_read[t] = i;
	return k;
}

/* Did some step before i read t, as an input or as the base of a view? */
static bool
read_before(const Vf *V, int t, int i)
{
	return V->first_read[t] >= 0 && V->first_read[t] < i;
}

/* A pending production of step i: tensor t, aliasing the root of instance
 * src (a view) or owning its bytes (src < 0). */
typedef struct Prod {
	int tensor, src;
	bool sum;               /* an out_of_place sum */
} Prod;

/* A production of t at step i as a view of src_tensor (or owning when
 * src_tensor < 0 or t is a view of a param). */
static Prod
produce(Vf *V, int i, int t, int src_tensor)
{
	Prod p = {t, -1, false};

	if (src_tensor >= 0 && !V->d->t[t].persistent_view) {
		p.src = use(V, i, src_tensor, "the base of a view,");
		if (p.src < 0)
			p.src = -2;
	}
	return p;
}

static void
add_inst(Vf *V, int i, Prod p)
{
	const DagTensor *t = &V->d->t[p.tensor];
	VfInst *in = &V->inst[V->ninst];

	in->tensor = p.tensor;
	in->step = i;
	in->last_use = -1;
	in->sum = p.sum;
	if (p.src >= 0) {
		in->base = V->inst[p.src].base;
		in->owned = 0;
	} else {
		in->base = V->ninst;
		in->owned = t->persistent_view ? 0 : t->bytes;
	}
	V->prev[V->ninst] = V->last[p.tensor];
	V->last[p.tensor] = V->ninst;
	V->ninst++;
}

/* Step i runs its node: uses first, then the new instances, so nothing a
 * step makes can serve that same step. */
static void
run_step(Vf *V, int i, Prod *prod)
{
	const DagNode *n = &V->d->node[V->s->step[i]];
	int np = 0;

	V->ev->temp_bytes[i] = dag_workspace(V->d, V->s->step[i]);
	for (int j = 0; j < n->nin; j++)
		use(V, i, n->in[j], "tensor");
	for (int j = 0; j < n->nout; j++)
		prod[np++] = produce(V, i, n->out[j], V->d->t[n->out[j]].view_src);
	for (int j = 0; j < n->nacc; j++) {
		int t = n->acc[j].tensor;
		if (latest(V, t, i) < 0) {
			prod[np++] = produce(V, i, t, n->acc[j].view_src);
			continue;
		}
		if (read_before(V, t, i))
			ev_fail(V->ev, "step %d adds to '%s' after an earlier step read it",
			        i, V->d->t[t].name);
		use(V, i, t, NULL);
		if (!n->acc[j].out_of_place || n->acc[j].view_src < 0)
			V->ev->temp_bytes[i] += V->d->t[t].bytes;
		if (n->acc[j].out_of_place)     /* the sum owns a new buffer */
			prod[np++] = (Prod){t, -1, true};
	}
	for (int j = 0; j < np; j++)
		if (prod[j].src == -2)
			return;
	for (int j = 0; j < np; j++)
		add_inst(V, i, prod[j]);
}

/* Node index, once-ness and the step's label. */
static bool
check_node(Vf *V, int i)
{
	const Dag *d = V->d;
	int v = V->s->step[i];

	if (v < 0 || v >= d->nnode) {
		ev_fail(V->ev, "step %d runs node %d, which does not exist", i, v);
		return false;
	}
	if (d->node[v].once && V->runs[v] > 0) {
		ev_fail(V->ev, "step %d runs once-only node '%s' a second time", i,
		        d->node[v].name);
		return false;
	}
	if (d->node[v].fwd_plus1 > 0 && V->runs[d->node[v].fwd_plus1 - 1] == 0) {
		ev_fail(V->ev, "step %d runs backward '%s' before its forward step", i,
		        d->node[v].name);
		return false;
	}
	if (V->runs[v] > 0) {
		V->ev->kind[i] = STEP_RECOMPUTE;
		V->ev->recompute_cost = ck_sat_add(V->ev->recompute_cost, d->node[v].cost);
	} else
		V->ev->kind[i] = d->node[v].is_backward ? STEP_BACKWARD : STEP_FORWARD;
	V->runs[v]++;
	return true;
}

/* The last step instance k is live at by its own uses: its last use, at
 * least its own step, the end for to_end tensors. */
static int
own_end(const Vf *V, int k)
{
	const VfInst *in = &V->inst[k];
	int end = in->last_use > in->step ? in->last_use : in->step;

	return V->d->t[in->tensor].to_end ? V->ev->nsteps - 1 : end;
}

/* [ninst] the last step each instance is live at: its own end, and a root
 * as long as any view of it (a view's base is a root, never a view). */
static int *
inst_ends(const Vf *V, Arena *a)
{
	int *end = ar_alloc(a, sizeof *end * (size_t)(V->ninst + 1));

	for (int k = 0; k < V->ninst; k++)
		end[k] = own_end(V, k);
	for (int k = 0; k < V->ninst; k++) {
		int r = V->inst[k].base;
		if (r != k && end[k] > end[r])
			end[r] = end[k];
	}
	return end;
}

/* Is root instance r, the base of what serves one of step i's inputs,
 * among the roots already counted in list[0..n)? */
static bool
listed(const int *list, int n, int r)
{
	for (int j = 0; j < n; j++)
		if (list[j] == r)
			return true;
	return false;
}

/* dag.h, DagAcc.out_of_place: the sums of step i are made after the
 * step's inputs that die at i are freed (but not the gradients being
 * summed). live: the memory at i counting every instance; total and most:
 * the bytes of the step's sums, and of its largest; end: inst_ends.
 * Returns the larger of the two phases. */
static int64_t
sum_phase(Vf *V, int i, int64_t live, int64_t total, int64_t most, const int *end)
{
	const DagNode *n = &V->d->node[V->s->step[i]];
	int64_t dying = 0;
	int *keep, nkeep = 0, *seen, nseen = 0;

	if (total == 0)
		return live;
	keep = xmalloc(sizeof *keep * (size_t)(n->nacc + n->nin + 1));
	seen = keep + n->nacc;
	for (int j = 0; j < n->nacc; j++) {
		int k = latest(V, n->acc[j].tensor, i);
		if (k >= 0)
			keep[nkeep++] = V->inst[k].base;
	}
	for (int j = 0; j < n->nin; j++) {
		int k = latest(V, n->in[j], i), r;
		if (k < 0)
			continue;
		r = V->inst[k].base;
		if (listed(seen, nseen, r) || listed(keep, nkeep, r))
			continue;
		seen[nseen++] = r;
		if (end[r] == i)
			dying += V->inst[r].owned;
	}
	free(keep);
	live -= total;
	return live - dying + most > live ? live - dying + most : live;
}

/* Memory at every step: persistent bytes, every owning instance live then,
 * the step's temporaries. */
static void
sum_steps(Vf *V, Arena *a)
{
	MemEval *ev = V->ev;
	int64_t pers = 0, run = 0;
	int n = ev->nsteps, *end = inst_ends(V, a);
	/* per step: the change in owned bytes there (an instance adds its bytes
	 * at its first step and takes them off after its end), its sums' bytes
	 * and the largest sum */
	int64_t *delta = ar_alloc(a, sizeof *delta * (size_t)(n + 1));
	int64_t *total = ar_alloc(a, sizeof *total * (size_t)(n + 1));
	int64_t *most = ar_alloc(a, sizeof *most * (size_t)(n + 1));

	for (int c = 0; c < CAT_COUNT; c++)
		pers += V->d->persistent[c];
	memset(delta, 0, sizeof *delta * (size_t)(n + 1));
	memset(total, 0, sizeof *total * (size_t)(n + 1));
	memset(most, 0, sizeof *most * (size_t)(n + 1));
	for (int k = 0; k < V->ninst; k++) {
		const VfInst *in = &V->inst[k];
		int from = in->step < 0 ? 0 : in->step;
		if (in->owned && from <= end[k]) {
			delta[from] += in->owned;
			delta[end[k] + 1] -= in->owned;
		}
		if (in->sum && in->step >= 0) {
			total[in->step] += in->owned;
			if (in->owned > most[in->step])
				most[in->step] = in->owned;
		}
	}
	for (int i = 0; i < n; i++) {
		run += delta[i];
		ev->live_bytes[i] = sum_phase(V, i, pers + ev->temp_bytes[i] + run, total[i],
		                              most[i], end);
	}
	ev->peak = pers;
	ev->peak_step = 0;
	for (int i = 0; i < ev->nsteps; i++)
		if (i == 0 || ev->live_bytes[i] > ev->peak) {
			ev->peak = ev->live_bytes[i];
			ev->peak_step = i;
		}
}

void
vf_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a)
{
	Vf V = {d, s, ev, NULL, 0, NULL, NULL, NULL, NULL};
	int cap = d->nt, maxprod = 1;
	Prod *prod;

	memset(ev, 0, sizeof *ev);
	ev->valid = true;
	ev->nsteps = s->n;
	for (int i = 0; i < s->n; i++)
		if (s->step[i] >= 0 && s->step[i] < d->nnode) {
			const DagNode *n = &d->node[s->step[i]];
			cap += n->nout + n->nacc;
			if (n->nout + n->nacc > maxprod)
				maxprod = n->nout + n->nacc;
		}
	V.inst = ar_alloc(a, sizeof *V.inst * (size_t)(cap + 1));
	V.prev = ar_alloc(a, sizeof *V.prev * (size_t)(cap + 1));
	V.last = ar_alloc(a, sizeof *V.last * (size_t)(d->nt + 1));
	V.runs = ar_alloc(a, sizeof *V.runs * (size_t)(d->nnode + 1));
	V.first_read = ar_alloc(a, sizeof *V.first_read * (size_t)(d->nt + 1));
	for (int t = 0; t < d->nt; t++)
		V.first_read[t] = V.last[t] = -1;
	prod = ar_alloc(a, sizeof *prod * (size_t)maxprod);
	ev->kind = ar_alloc(a, sizeof *ev->kind * (size_t)(s->n + 1));
	ev->live_bytes = ar_alloc(a, sizeof *ev->live_bytes * (size_t)(s->n + 1));
	ev->temp_bytes = ar_alloc(a, sizeof *ev->temp_bytes * (size_t)(s->n + 1));
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].from_start)
			add_inst(&V, -1, (Prod){t, -1, false});
	for (int i = 0; i < s->n && ev->valid; i++)
		if (check_node(&V, i))
			run_step(&V, i, prod);
	for (int v = 0; v < d->nnode && ev->valid; v++)
		if (!V.runs[v])
			ev_fail(V.ev, "node '%s' is never run", d->node[v].name);
	/* A from_start instance that serves nothing and is not to_end owns
	 * nothing (an input no step uses). */
	for (int k = 0; k < V.ninst && V.inst[k].step < 0; k++)
		if (V.inst[k].last_use < 0 && !d->t[V.inst[k].tensor].to_end)
			V.inst[k].owned = 0;
	if (ev->valid)
		sum_steps(&V, a);
	else {
		ev->peak = 0;
		ev->peak_step = 0;
	}
}

bool
vf_check(const Dag *d, const Schedule *s, const MemEval *ev, char *why, size_t n)
{
	MemEval mine;
	Arena a;
	bool ok = true;

	ar_init(&a);
	vf_eval(d, s, &mine, &a);
	if (mine.valid != ev->valid)
		ok = why_fail(why, n, "validity: verifier says %s (%s), evaluator says %s (%s)",
		              mine.valid ? "valid" : "invalid", mine.error,
		              ev->valid ? "valid" : "invalid", ev->error);
	else if (!mine.valid)
		ok = true;
	else if (mine.nsteps != ev->nsteps)
		ok = why_fail(why, n, "steps: verifier %d, evaluator %d", mine.nsteps, ev->nsteps);
	else {
		for (int i = 0; ok && i < mine.nsteps; i++)
			if (mine.live_bytes[i] != ev->live_bytes[i])
				ok = why_fail(why, n, "live_bytes at step %d ('%s'): verifier %" PRId64
				              ", evaluator %" PRId64, i, d->node[s->step[i]].name,
				              mine.live_bytes[i], ev->live_bytes[i]);
		if (ok && mine.peak != ev->peak)
			ok = why_fail(why, n, "peak: verifier %" PRId64 ", evaluator %" PRId64,
			              mine.peak, ev->peak);
		if (ok && mine.peak_step != ev->peak_step)
			ok = why_fail(why, n, "peak_step: verifier %d, evaluator %d",
			              mine.peak_step, ev->peak_step);
		if (ok && mine.recompute_cost != ev->recompute_cost)
			ok = why_fail(why, n, "recompute cost: verifier %" PRId64 ", evaluator %" PRId64,
			              mine.recompute_cost, ev->recompute_cost);
	}
	ar_free(&a);
	return ok;
}

/* lv_eval, then vf_check when verify is set; a failure goes to stderr. */
Status
vf_evaluate(const Dag *d, const Schedule *s, MemEval *ev, bool verify, Arena *a)
{
	char why[512];

	lv_eval(d, s, ev, a);
	if (!ev->valid) {
		fprintf(stderr, "remat: internal error: invalid schedule: %s\n", ev->error);
		return ST_INTERNAL;
	}
	if (verify && !vf_check(d, s, ev, why, sizeof why)) {
		fprintf(stderr, "remat: verify: evaluators disagree: %s\n", why);
		return ST_INTERNAL;
	}
	return ST_OK;
}
