/* report/emit_torch.c -- a plan in PyTorch terms (issue 16): which
 * blocks (outermost def calls: modules) to wrap in
 * torch.utils.checkpoint, the per-op selective-checkpoint policy inside
 * them, and the peak PyTorch will reach with exactly that wrapping.
 * `--emit-torch FILE.py` writes it as a small Python helper
 * (docs/runtime-pytorch.md, "Plans in PyTorch terms"), whose text says
 * "call" for a block.
 *
 * remat's own schedule recomputes single ops, which whole-block wrapping
 * cannot express; so the wrapping is searched for directly (search()),
 * starting from the blocks remat's schedule recomputes in, with the plan's
 * goal (recompute cap, or budget). Each candidate is scored by the
 * liveness of the schedule torch.utils.checkpoint (reentrant, PyTorch 1.13)
 * runs: every op forward once (a wrapped block keeps only its inputs and
 * outputs), then the -O0 backward order, where the first backward node of a
 * wrapped block is preceded by a recomputation of the whole block, whose
 * outputs and their gradients stay held until the block's backward is done.
 *
 * Reads: Graph op scopes, the Dag, the plan. Writes: FILE.py, and one line
 * of the human report. */
#include <string.h>

#include "report.h"

/* Region of each op: index of its block among blocks, or -1. Fills
 * lo/hi (op ranges) and returns the number of blocks. */
static int
find_blocks(const Graph *g, int *region, int *lo, int *hi)
{
	int n = 0;

	for (int o = 0; o < g->nop; o++) {
		const char *sc = ir_op_scope(g, &g->op[o]);
		size_t len = ir_outer_scope_len(sc);
		region[o] = -1;
		if (!len)
			continue;
		if (n > 0 && !strncmp(ir_op_scope(g, &g->op[lo[n - 1]]), sc, len) &&
		    ir_outer_scope_len(ir_op_scope(g, &g->op[lo[n - 1]])) == len) {
			region[o] = n - 1;
			hi[n - 1] = o;
			continue;
		}
		lo[n] = hi[n] = o;
		region[o] = n++;
	}
	return n;
}

/* Which blocks the plan recomputes in. */
static void
wrapped_by_plan(const Analysis *an, const int *region, bool *wrap)
{
	const MemEval *ev = &an->ev;

	for (int i = 0; i < ev->nsteps; i++) {
		const DagNode *nd = &an->d.node[an->plan.sched.step[i]];
		if (ev->kind[i] == STEP_RECOMPUTE && nd->ir_op >= 0 && region[nd->ir_op] >= 0)
			wrap[region[nd->ir_op]] = true;
	}
}

/* The schedule torch.utils.checkpoint runs for the wrapped blocks. */
static Schedule
checkpoint_schedule(const Analysis *an, const int *region, const int *lo,
                    const int *hi, const bool *wrap, Arena *a)
{
	const Dag *d = &an->d;
	const Graph *g = &an->g;
	Schedule s = {0, ar_alloc(a, sizeof(int) * (size_t)(2 * d->nnode + 1))};
	bool *redone = ar_alloc(a, (size_t)g->nop + 1);

	for (int i = 0; i < d->nbase; i++) {
		int v = d->base_order[i], o = d->node[v].ir_op, r;
		if (d->node[v].is_backward && o >= 0 && (r = region[o]) >= 0 &&
		    wrap[r] && !redone[r]) {
			redone[r] = true;
			for (int p = lo[r]; p <= hi[r]; p++)
				s.step[s.n++] = p;      /* forward node p is op p */
		}
		s.step[s.n++] = v;
	}
	return s;
}

typedef struct TorchPlan TorchPlan;
static bool escapes(const Graph *g, const TorchPlan *tp, int r, int t);

struct TorchPlan {
	int nblocks, nwrapped;
	int *region, *lo, *hi;
	bool *wrap;
	int64_t peak;           /* PyTorch's peak with these blocks wrapped */
	int64_t all_peak;       /* ... with every block wrapped (per-block) */
	int64_t recompute;      /* FLOPs recomputed by the wrapping */
	int *last_use;          /* [nt] last forward op using each tensor */
};

/* Is tensor t, made in block r, used after it (or the loss)? */
static bool
escapes(const Graph *g, const TorchPlan *tp, int r, int t)
{
	return t == g->loss || tp->last_use[t] > tp->hi[r];
}

/* The Dag torch.utils.checkpoint (reentrant, PyTorch 1.13) runs: a wrapped
 * block's backward holds the recomputed outputs and their gradients until
 * the whole block's backward is done, so the block's last backward node
 * (that of its first op) also uses them. */
static Dag
checkpoint_dag(const Analysis *an, const TorchPlan *tp, const bool *wrap, Arena *a)
{
	const Graph *g = &an->g;
	Dag d = an->d;
	int *dag_of = ar_alloc(a, sizeof(int) * (size_t)(g->nt + 1));
	int *last = ar_alloc(a, sizeof(int) * (size_t)(tp->nblocks + 1));

	d.node = ar_alloc(a, sizeof *d.node * (size_t)(d.nnode + 1));
	memcpy(d.node, an->d.node, sizeof *d.node * (size_t)d.nnode);
	for (int i = 0; i < g->nt; i++)
		dag_of[i] = -1;
	for (int t = 0; t < d.nt; t++)
		if (d.t[t].ir_tensor >= 0)
			dag_of[d.t[t].ir_tensor] = t;
	for (int r = 0; r < tp->nblocks; r++)
		last[r] = -1;
	for (int i = 0; i < d.nbase; i++) {
		int v = d.base_order[i], o = d.node[v].ir_op;
		if (d.node[v].is_backward && o >= 0 && tp->region[o] >= 0)
			last[tp->region[o]] = v;
	}
	for (int r = 0; r < tp->nblocks; r++) {
		DagNode *n;
		int *in, cap;
		if (!wrap[r] || last[r] < 0)
			continue;
		n = &d.node[last[r]];
		cap = n->nin;
		for (int o = tp->lo[r]; o <= tp->hi[r]; o++)
			cap += 2 * g->op[o].nout;
		in = ar_alloc(a, sizeof(int) * (size_t)(cap + 1));
		memcpy(in, n->in, sizeof(int) * (size_t)n->nin);
		for (int o = tp->lo[r]; o <= tp->hi[r]; o++)
			for (int k = 0; k < g->op[o].nout; k++) {
				int t = g->op[o].out[k], gt = g->t[t].grad;
				if (!escapes(g, tp, r, t))
					continue;
				if (dag_of[t] >= 0)
					in[n->nin++] = dag_of[t];
				if (gt >= 0 && dag_of[gt] >= 0)
					in[n->nin++] = dag_of[gt];
			}
		n->in = in;
	}
	return d;
}

/* PyTorch's peak with the blocks in wrap checkpointed, and the FLOPs the
 * wrapping recomputes (in *recompute); -1 if the schedule is invalid. */
static int64_t
peak_of(const Analysis *an, const TorchPlan *tp, const bool *wrap,
        int64_t *recompute)
{
	Arena a;
	Schedule s;
	Dag d;
	MemEval ev;
	int64_t peak;

	ar_init(&a);
	s = checkpoint_schedule(an, tp->region, tp->lo, tp->hi, wrap, &a);
	d = checkpoint_dag(an, tp, wrap, &a);
	lv_eval(&d, &s, &ev, &a);
	if (recompute)
		*recompute = ev.recompute_cost;
	peak = ev.valid ? ev.peak : -1;
	ar_free(&a);
	return peak;
}

/* Does (peak, rec) serve the goal better than (bpeak, brec)? Without a
 * budget: the smaller peak within the recompute cap; with one: the least
 * recompute within the budget, else the smaller peak. */
static bool
better(const Analysis *an, int64_t peak, int64_t rec, int64_t bpeak, int64_t brec)
{
	const PlanGoal *gl = &an->goal;
	double cap = gl->max_recompute < 0 ? -1 : gl->max_recompute * (double)an->d.forward_cost;

	if (peak < 0)
		return false;
	if (gl->budget >= 0) {
		bool fits = peak <= gl->budget, bfits = bpeak >= 0 && bpeak <= gl->budget;
		if (fits != bfits)
			return fits;
		if (fits)
			return rec < brec || (rec == brec && peak < bpeak);
		return peak < bpeak;
	}
	if (cap >= 0 && (double)rec > cap)
		return false;
	return bpeak < 0 || peak < bpeak || (peak == bpeak && rec < brec);
}

/* Local search over which blocks to wrap: from the best of wrapping none,
 * the blocks the plan recomputes in, and every block, flip the one block
 * that helps most until none helps (at most TP_MAX_EVALS evaluations). */
enum { TP_MAX_EVALS = 4000 };

static void
search(const Analysis *an, TorchPlan *tp, bool *plan_set, Arena *a)
{
	int n = tp->nblocks, evals = 0;
	bool *cand = ar_alloc(a, (size_t)n + 1);
	int64_t peak, rec;

	tp->peak = peak_of(an, tp, tp->wrap, &tp->recompute);   /* none */
	if (an->goal.level == 0 && an->goal.budget < 0) {
		for (int r = 0; r < n; r++)
			cand[r] = true;
		tp->all_peak = peak_of(an, tp, cand, NULL);
		return;                 /* -O0: save everything, wrap nothing */
	}
	for (int k = 0; k < 2; k++) {
		for (int r = 0; r < n; r++)
			cand[r] = k == 0 ? plan_set[r] : true;
		peak = peak_of(an, tp, cand, &rec);
		if (k == 1)
			tp->all_peak = peak;
		if (better(an, peak, rec, tp->peak, tp->recompute)) {
			memcpy(tp->wrap, cand, (size_t)n);
			tp->peak = peak;
			tp->recompute = rec;
		}
	}
	for (bool moved = true; moved && evals < TP_MAX_EVALS;) {
		int best = -1;
		int64_t bp = tp->peak, br = tp->recompute;
		moved = false;
		for (int r = 0; r < n && evals < TP_MAX_EVALS; r++, evals++) {
			tp->wrap[r] = !tp->wrap[r];
			peak = peak_of(an, tp, tp->wrap, &rec);
			tp->wrap[r] = !tp->wrap[r];
			if (better(an, peak, rec, bp, br)) {
				best = r;
				bp = peak;
				br = rec;
			}
		}
		if (best >= 0) {
			tp->wrap[best] = !tp->wrap[best];
			tp->peak = bp;
			tp->recompute = br;
			moved = true;
		}
	}
}

static void
torch_plan(const Analysis *an, TorchPlan *tp, Arena *a)
{
	const Graph *g = &an->g;
	bool *plan_set;

	memset(tp, 0, sizeof *tp);
	tp->region = ar_alloc(a, sizeof(int) * (size_t)(g->nop + 1));
	tp->lo = ar_alloc(a, sizeof(int) * (size_t)(g->nop + 1));
	tp->hi = ar_alloc(a, sizeof(int) * (size_t)(g->nop + 1));
	tp->nblocks = find_blocks(g, tp->region, tp->lo, tp->hi);
	tp->last_use = ar_alloc(a, sizeof(int) * (size_t)(g->nt + 1));
	for (int i = 0; i < g->nt; i++)
		tp->last_use[i] = -1;
	for (int o = 0; o < g->nop; o++)
		for (int k = 0; k < g->op[o].nin; k++)
			tp->last_use[g->op[o].in[k]] = o;
	tp->wrap = ar_alloc(a, (size_t)tp->nblocks + 1);
	plan_set = ar_alloc(a, (size_t)tp->nblocks + 1);
	wrapped_by_plan(an, tp->region, plan_set);
	search(an, tp, plan_set, a);
	for (int r = 0; r < tp->nblocks; r++)
		tp->nwrapped += tp->wrap[r];
}

static void
put_block(FILE *f, const Graph *g, const TorchPlan *tp, int r)
{
	const char *sc = ir_op_scope(g, &g->op[tp->lo[r]]);

	fprintf(f, "%.*s", (int)ir_outer_scope_len(sc), sc);
}

/* The per-op policy of wrapped block r: MUST_SAVE for the ops the plan did
 * not recompute, PREFER_RECOMPUTE for those it did. */
static void
put_policy(FILE *f, const Analysis *an, const TorchPlan *tp, int r, const bool *redo)
{
	const Graph *g = &an->g;
	const char *sep = "";

	fputs("    \"", f);
	put_block(f, g, tp, r);
	fputs("\": {", f);
	for (int o = tp->lo[r]; o <= tp->hi[r]; o++) {
		fprintf(f, "%s\"%s\": %s", sep, g->t[g->op[o].out[0]].id,
		        redo[o] ? "PREFER_RECOMPUTE" : "MUST_SAVE");
		sep = ", ";
	}
	fputs("},\n", f);
}

static const char torch_helper[] =
"\n"
"def policy(call, op_id):\n"
"    \"\"\"The selective-checkpoint decision for one op of a wrapped call.\"\"\"\n"
"    return POLICY.get(call, {}).get(op_id, MUST_SAVE)\n"
"\n"
"\n"
"def checkpoint_call(call, fn, *args):\n"
"    \"\"\"Runs fn(*args), the def call `call` (e.g. \"block.3.\"), as the plan\n"
"    says: directly when it is not wrapped; else under torch.utils.checkpoint,\n"
"    with the per-op policy where create_selective_checkpoint_contexts exists\n"
"    (PyTorch >= 2.4), otherwise (PyTorch 1.13 here) the whole call is\n"
"    recomputed, which is what PREDICTED_PEAK assumes.\"\"\"\n"
"    import torch.utils.checkpoint as cp\n"
"    if call not in CHECKPOINT:\n"
"        return fn(*args)\n"
"    sel = getattr(cp, \"create_selective_checkpoint_contexts\", None)\n"
"    if sel is not None and SELECTIVE:\n"
"        import functools\n"
"        from torch.utils.checkpoint import CheckpointPolicy\n"
"        names = OP_NAMES.get(call, [])\n"
"        it = iter(names)\n"
"\n"
"        def pol(ctx, func, *a, **k):\n"
"            name = next(it, None)\n"
"            p = policy(call, name) if name else MUST_SAVE\n"
"            return (CheckpointPolicy.PREFER_RECOMPUTE if p == PREFER_RECOMPUTE\n"
"                    else CheckpointPolicy.MUST_SAVE)\n"
"        return cp.checkpoint(fn, *args, use_reentrant=False,\n"
"                             context_fn=functools.partial(sel, pol))\n"
"    return cp.checkpoint(fn, *args, preserve_rng_state=False)\n";

static void
write_py(FILE *f, const Analysis *an, const TorchPlan *tp, Arena *a)
{
	const Graph *g = &an->g;
	bool *redo = ar_alloc(a, (size_t)g->nop + 1);

	for (int i = 0; i < an->ev.nsteps; i++)
		if (an->ev.kind[i] == STEP_RECOMPUTE && an->d.node[an->plan.sched.step[i]].ir_op >= 0)
			redo[an->d.node[an->plan.sched.step[i]].ir_op] = true;
	fprintf(f, "\"\"\"Checkpoint plan for %s, written by remat --emit-torch.\n\n"
	        "Wrap each def call named in CHECKPOINT with checkpoint_call(); the\n"
	        "step then peaks at PREDICTED_PEAK bytes under PyTorch eager\n"
	        "(remat --runtime pytorch accounting).\n\"\"\"\n\n", g->file);
	fputs("MUST_SAVE = \"must_save\"\nPREFER_RECOMPUTE = \"prefer_recompute\"\n", f);
	fprintf(f, "PREDICTED_PEAK = %lld\nPER_BLOCK_PEAK = %lld\nPLAN_PEAK = %lld\n",
	        (long long)tp->peak, (long long)tp->all_peak, (long long)an->ev.peak);
	fprintf(f, "SELECTIVE = %s\n", "False");
	fputs("CHECKPOINT = [", f);
	for (int r = 0, k = 0; r < tp->nblocks; r++)
		if (tp->wrap[r]) {
			fputs(k++ ? ", \"" : "\"", f);
			put_block(f, g, tp, r);
			fputc('"', f);
		}
	fputs("]\nPOLICY = {\n", f);
	for (int r = 0; r < tp->nblocks; r++)
		if (tp->wrap[r])
			put_policy(f, an, tp, r, redo);
	fputs("}\nOP_NAMES = {call: list(ops) for call, ops in POLICY.items()}\n", f);
	fputs(torch_helper, f);
}

void
emit_torch(const Analysis *an, FILE *py, FILE *report, Arena *a)
{
	TorchPlan tp;
	char b1[32], b2[32], b3[32];

	torch_plan(an, &tp, a);
	if (py)
		write_py(py, an, &tp, a);
	if (report)
		fprintf(report, "\npytorch: wrap %d of %d def calls in torch.utils.checkpoint: "
		        "peak %s (remat's schedule %s, every call wrapped %s)\n", tp.nwrapped, tp.nblocks,
		        report_size(tp.peak, b1), report_size(an->ev.peak, b2),
		        report_size(tp.all_peak, b3));
}
