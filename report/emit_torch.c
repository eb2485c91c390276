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
 * liveness of what torch.utils.checkpoint(use_reentrant=False,
 * preserve_rng_state=True) runs (checkpoint_schedule, checkpoint_dag):
 * every op forward once, a wrapped block keeping what leaves it, its
 * inputs and its RNG stash; then the -O0 backward order, where the block's
 * first saving backward node is preceded by its recompute (up to its last
 * saving op on PyTorch >= 2.1). The selective policy for PyTorch >= 2.4
 * (selective()) keeps the ops remat's schedule keeps where the policy can
 * tell their aten calls apart (anchor()), and is scored the same way.
 *
 * Reads: Graph op scopes, the Dag, the plan. Writes: FILE.py, and one or
 * two lines of the human report. */
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

typedef struct TorchPlan TorchPlan;

/* What one torch.utils.checkpoint run does (use_reentrant=False, the
 * only form PyTorch >= 2.4 keeps without a warning): how the recompute
 * ends, and which ops a selective policy caches instead of rerunning. */
typedef struct CkRun {
	bool early_stop;        /* PyTorch >= 2.1: the recompute stops after
	                           the block's last op that saves a tensor */
	const bool *keep;       /* [nop] selective: ops whose outputs the
	                           forward caches (MUST_SAVE); NULL: none */
	int64_t rng_bytes;      /* RNG state each wrapped block keeps */
} CkRun;

struct TorchPlan {
	int nblocks, nwrapped;
	int *region, *lo, *hi;
	bool *wrap;
	int64_t peak;           /* PyTorch's peak with these blocks wrapped */
	int64_t all_peak;       /* ... with every block wrapped (per-block) */
	int64_t recompute;      /* FLOPs recomputed by the wrapping */
	int *last_use;          /* [nt] last forward op using each tensor */
	bool *saves;            /* [nop] the op's backward node reads a saved
	                           tensor: autograd packs one in its forward */
	int *first_bwd, *last_bwd; /* [nblocks] the first and the last backward
	                           node (-O0 order) of a saving op, or -1 */
	int *stop;              /* [nblocks] the last saving op, or lo - 1 */
	int **bin;              /* [nblocks] the block's inputs (Dag tensors) */
	int *nbin;
	int *dag_of;            /* [nt] the Dag tensor of each IR tensor, or -1 */
	CkRun run;              /* this runtime's checkpoint */
};

/* The nodes checkpoint_dag adds: the RNG state checkpoint keeps, and where
 * a selective policy's cache hands back what it kept. */
typedef struct Added {
	int *stash, *fork, *join;       /* [nblocks] node, or -1 */
	int *cached;                    /* [nop] node, or -1 */
} Added;

/* The schedule torch.utils.checkpoint runs for the wrapped blocks: every op
 * once forward, then the -O0 backward order; the first backward node of a
 * wrapped block that unpacks a saved tensor is preceded by the block's
 * recompute (up to its last saving op with early stop; without the ops a
 * selective policy cached, whose cache nodes stand there instead); the
 * RNG nodes run before the block's forward and around its recompute. */
static Schedule
checkpoint_schedule(const Analysis *an, const TorchPlan *tp, const bool *wrap,
                    const CkRun *run, const Added *add, Arena *a)
{
	const Dag *d = &an->d;
	/* a cached op's node stands where the op would rerun: no more steps */
	Schedule s = {0, ar_alloc(a, sizeof(int) * (size_t)(2 * d->nnode + 3 * tp->nblocks + 1))};
	bool *redone = ar_alloc(a, (size_t)tp->nblocks + 1);

	for (int i = 0; i < d->nbase; i++) {
		int v = d->base_order[i], o = d->node[v].ir_op, r;
		r = o >= 0 ? tp->region[o] : -1;
		if (r >= 0 && wrap[r] && !d->node[v].is_backward && o == tp->lo[r] &&
		    add->stash[r] >= 0)
			s.step[s.n++] = add->stash[r];
		if (r >= 0 && wrap[r] && d->node[v].is_backward && tp->saves[o] && !redone[r]) {
			int end = run->early_stop ? tp->stop[r] : tp->hi[r];
			redone[r] = true;
			if (add->fork[r] >= 0)
				s.step[s.n++] = add->fork[r];
			for (int p = tp->lo[r]; p <= end; p++)
				if (!run->keep || !run->keep[p])
					s.step[s.n++] = p;      /* forward node p is op p */
				else if (add->cached[p] >= 0)
					s.step[s.n++] = add->cached[p];
			if (add->join[r] >= 0)
				s.step[s.n++] = add->join[r];
		}
		s.step[s.n++] = v;
	}
	return s;
}

/* Appends tensor x to node n's inputs unless it is there (in has room). */
static void
add_in(DagNode *n, int *in, int x)
{
	for (int j = 0; j < n->nin; j++)
		if (in[j] == x)
			return;
	in[n->nin++] = x;
}

/* A node that runs once and makes nothing, or (bytes > 0) makes a tensor
 * of that many bytes; returns its index. */
static int
once_node(Dag *d, int *ncap, int *tcap, const char *name, int64_t bytes, Arena *a)
{
	DagNode *n;
	int t = -1;

	if (bytes > 0) {
		DagTensor *x = dag_push_tensor(d, tcap, a);
		x->name = name;
		x->bytes = bytes;
		x->cat = CAT_ACTIVATIONS;
		t = d->nt - 1;
	}
	n = dag_push_node(d, ncap, a);
	n->name = name;
	n->once = true;
	if (t >= 0) {
		n->out = ar_alloc(a, sizeof(int));
		n->out[0] = t;
		n->nout = 1;
	}
	return d->nnode - 1;
}

/* The Dag torch.utils.checkpoint runs: a wrapped block's checkpoint frame
 * holds the block's inputs and the stashed RNG state until the last saved
 * tensor of the block is released, after its last saving backward node;
 * so that node also uses them. The stash is a tensor of its own, made by
 * a node (add->stash[r]) that runs once, before the block. While the
 * block is recomputed, torch.random.fork_rng keeps the state it replaces:
 * another such tensor, made by add->fork[r] before the recompute and
 * released by add->join[r] after it. A selective policy's cache holds
 * every output of an op it keeps until the recompute reaches the op: a
 * node there (add->cached[o]) reads them. */
static Dag
checkpoint_dag(const Analysis *an, const TorchPlan *tp, const bool *wrap,
               const CkRun *run, Added *add, Arena *a)
{
	Dag d = an->d;
	int ncap = d.nnode, tcap = d.nt, n = tp->nblocks;

	add->stash = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	add->fork = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	add->join = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	add->cached = ar_alloc(a, sizeof(int) * (size_t)(an->g.nop + 1));
	d.node = ar_alloc(a, sizeof *d.node * (size_t)(d.nnode + 1));
	memcpy(d.node, an->d.node, sizeof *d.node * (size_t)d.nnode);
	for (int o = 0; o < an->g.nop; o++) {
		const Op *op = &an->g.op[o];
		int v;
		add->cached[o] = -1;
		if (!run->keep || !run->keep[o] || !wrap[tp->region[o]])
			continue;
		v = add->cached[o] = once_node(&d, &ncap, &tcap, "sac_cache", 0, a);
		d.node[v].in = ar_alloc(a, sizeof(int) * (size_t)(op->nout + op->nextra + 1));
		for (int k = 0; k < op->nout + (int)op->nextra; k++)
			if (tp->dag_of[op->out[k]] >= 0)
				d.node[v].in[d.node[v].nin++] = tp->dag_of[op->out[k]];
	}
	for (int r = 0; r < n; r++) {
		add->stash[r] = add->fork[r] = add->join[r] = -1;
		if (!wrap[r] || tp->last_bwd[r] < 0 || run->rng_bytes <= 0)
			continue;
		add->stash[r] = once_node(&d, &ncap, &tcap, "rng_state", run->rng_bytes, a);
		add->fork[r] = once_node(&d, &ncap, &tcap, "fork_rng", run->rng_bytes, a);
		add->join[r] = once_node(&d, &ncap, &tcap, "fork_rng_end", 0, a);
		d.node[add->join[r]].in = ar_alloc(a, sizeof(int));
		d.node[add->join[r]].in[0] = d.node[add->fork[r]].out[0];
		d.node[add->join[r]].nin = 1;
	}
	for (int r = 0; r < n; r++) {
		DagNode *nd;
		int *in;
		if (!wrap[r] || tp->last_bwd[r] < 0)
			continue;
		nd = &d.node[tp->last_bwd[r]];
		in = ar_alloc(a, sizeof(int) * (size_t)(nd->nin + tp->nbin[r] + 2));
		memcpy(in, nd->in, sizeof(int) * (size_t)nd->nin);
		for (int j = 0; j < tp->nbin[r]; j++)
			add_in(nd, in, tp->bin[r][j]);
		if (add->stash[r] >= 0)
			add_in(nd, in, d.node[add->stash[r]].out[0]);
		nd->in = in;
	}
	return d;
}

/* PyTorch's peak with the blocks in wrap checkpointed as run says, and
 * the FLOPs the wrapping recomputes (in *recompute); -1 if the schedule is
 * invalid. */
static int64_t
peak_run(const Analysis *an, const TorchPlan *tp, const bool *wrap,
         const CkRun *run, int64_t *recompute)
{
	Arena a;
	Schedule s;
	Dag d;
	MemEval ev;
	int64_t peak;
	Added add;

	ar_init(&a);
	d = checkpoint_dag(an, tp, wrap, run, &add, &a);
	s = checkpoint_schedule(an, tp, wrap, run, &add, &a);
	lv_eval(&d, &s, &ev, &a);
	if (recompute)
		*recompute = ev.recompute_cost;
	peak = ev.valid ? ev.peak : -1;
	ar_free(&a);
	return peak;
}

/* ... under this runtime's checkpoint, whole blocks. */
static int64_t
peak_of(const Analysis *an, const TorchPlan *tp, const bool *wrap,
        int64_t *recompute)
{
	return peak_run(an, tp, wrap, &tp->run, recompute);
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
 * that helps most until none helps. Each flip is a whole evaluation, linear
 * in the DAG, and a sweep flips every block: at most TP_MAX_EVALS of them
 * and TP_MAX_WORK nodes and steps evaluated in all, so that a 30k-op chain
 * of 3,000 blocks (44 s for 4,000 evaluations) costs about what -O2 does. */
enum { TP_MAX_EVALS = 4000, TP_MAX_WORK = 1 << 23 };

static void
search(const Analysis *an, TorchPlan *tp, bool *plan_set, Arena *a)
{
	int n = tp->nblocks, evals = 0;
	int64_t per = (int64_t)an->d.nnode + an->d.nbase + 1;
	int max_evals = TP_MAX_WORK / per < TP_MAX_EVALS ? (int)(TP_MAX_WORK / per) : TP_MAX_EVALS;
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
	for (bool moved = true; moved && evals < max_evals;) {
		int best = -1;
		int64_t bp = tp->peak, br = tp->recompute;
		moved = false;
		for (int r = 0; r < n && evals < max_evals; r++, evals++) {
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

/* Per block: the ops that save a tensor (their backward node reads one
 * that is not a gradient, or the op saves a param), the first and last of
 * their backward nodes, the last of them, and the block's inputs. */
static void
block_facts(const Analysis *an, TorchPlan *tp, Arena *a)
{
	const Graph *g = &an->g;
	const Dag *d = &an->d;
	int n = tp->nblocks;
	int *dag_of = tp->dag_of = ar_alloc(a, sizeof(int) * (size_t)(g->nt + 1));
	int *made = ar_alloc(a, sizeof(int) * (size_t)(g->nt + 1));

	tp->saves = ar_alloc(a, (size_t)g->nop + 1);
	tp->first_bwd = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	tp->last_bwd = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	tp->stop = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	tp->bin = ar_alloc(a, sizeof(int *) * (size_t)(n + 1));
	tp->nbin = ar_alloc(a, sizeof(int) * (size_t)(n + 1));
	for (int i = 0; i < g->nt; i++)
		dag_of[i] = made[i] = -1;
	for (int t = 0; t < d->nt; t++)
		if (d->t[t].ir_tensor >= 0)
			dag_of[d->t[t].ir_tensor] = t;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *nd = &d->node[v];
		if (!nd->is_backward || nd->ir_op < 0)
			continue;
		tp->saves[nd->ir_op] = g->op[nd->ir_op].nsaves > 0;
		for (int j = 0; j < nd->nin; j++)
			if (d->t[nd->in[j]].cat != CAT_GRADIENTS && d->t[nd->in[j]].cat != CAT_PARAM_GRADS)
				tp->saves[nd->ir_op] = true;
	}
	for (int r = 0; r < n; r++) {
		tp->first_bwd[r] = tp->last_bwd[r] = -1;
		tp->stop[r] = tp->lo[r] - 1;
		for (int p = tp->lo[r]; p <= tp->hi[r]; p++)
			if (tp->saves[p])
				tp->stop[r] = p;
	}
	for (int i = 0; i < d->nbase; i++) {
		int v = d->base_order[i], o = d->node[v].ir_op, r;
		if (!d->node[v].is_backward || o < 0 || (r = tp->region[o]) < 0 || !tp->saves[o])
			continue;
		if (tp->first_bwd[r] < 0)
			tp->first_bwd[r] = v;
		tp->last_bwd[r] = v;
	}
	for (int o = 0; o < g->nop; o++)
		for (int k = 0; k < g->op[o].nout + (int)g->op[o].nextra; k++)
			made[g->op[o].out[k]] = tp->region[o];
	for (int r = 0; r < n; r++) {
		int cap = 0;
		for (int p = tp->lo[r]; p <= tp->hi[r]; p++)
			cap += g->op[p].nin;
		tp->bin[r] = ar_alloc(a, sizeof(int) * (size_t)(cap + 1));
		for (int p = tp->lo[r]; p <= tp->hi[r]; p++)
			for (int k = 0; k < g->op[p].nin; k++) {
				int t = g->op[p].in[k], x = dag_of[t];
				bool dup = false;
				if (made[t] == r || x < 0 || d->t[x].persistent_view)
					continue;
				for (int j = 0; j < tp->nbin[r] && !dup; j++)
					dup = tp->bin[r][j] == x;
				if (!dup)
					tp->bin[r][tp->nbin[r]++] = x;
			}
	}
}

/* torch.get_rng_state(): the CPU generator's mt19937 state, a 5056-byte
 * ByteTensor, which checkpoint stashes per call (preserve_rng_state).
 * On CUDA the stash is host memory too (the CPU state, and 16 bytes of
 * Philox seed and offset per CUDA tensor argument): no device bytes. */
enum { CPU_RNG_STATE_BYTES = 5056 };

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
	block_facts(an, tp, a);
	/* pytorch-cpu is PyTorch 1.13, whose checkpoint reruns the whole
	 * block; pytorch is >= 2.4, which stops early */
	tp->run.early_stop = !g->settings.pytorch_cpu;
	tp->run.rng_bytes = g->settings.pytorch_cpu ? CPU_RNG_STATE_BYTES : 0;
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

/* How a selective policy sees op o (PyTorch >= 2.4, the harness's
 * translation, which is what users write): cls, the class of the aten
 * call that makes its output, as the helper counts calls (ATEN_CLASS
 * there; NULL for a view, which makes only view calls); why, when the op
 * cannot be cached; emits, for an op made of several aten calls, the
 * classes of those calls ("*": unknown), whose counts it disturbs. */
typedef struct Anchor {
	const char *cls, *why, *emits;
} Anchor;

/* The aten class of the ops whose name in .net is not their aten name. */
static const struct {
	OpKind kind;
	const char *cls;
} aten_class[] = {
	{OP_SCALE, "mul"}, {OP_MUL, "mul"},
	{OP_CONV2D, "convolution"}, {OP_LAYERNORM, "native_layer_norm"},
	{OP_BATCHNORM, "batch_norm"}, {OP_SOFTMAX, "_softmax"},
	{OP_LOG_SOFTMAX, "_log_softmax"}, {OP_MAXPOOL2D, "max_pool2d_with_indices"},
	{OP_AVGPOOL2D, "avg_pool2d"}, {OP_GLOBAL_AVGPOOL, "mean"},
	{OP_UPSAMPLE2D, "upsample_nearest2d"}, {OP_CONCAT, "cat"},
	{OP_RELU6, "hardtanh"},
};

static Anchor
anchor(const Analysis *an, int o, int dag_out)
{
	const Graph *g = &an->g;
	const Op *op = &g->op[o];
	static const char *const random = "random: caching it would shift the RNG "
		"stream of the random ops rerun after it";
	bool view = dag_out >= 0 && (an->d.t[dag_out].view_src >= 0 || an->d.t[dag_out].persistent_view);

	switch (op->kind) {
	case OP_TRANSPOSE: case OP_PERMUTE: case OP_SLICE: case OP_SPLIT:
		return (Anchor){NULL, "a view", NULL};
	case OP_RESHAPE: case OP_FLATTEN:
		return view ? (Anchor){NULL, "a view", NULL} : (Anchor){"clone", NULL, NULL};
	case OP_DROPOUT:
		return (Anchor){"dropout", random, NULL};
	case OP_ATTENTION:
		/* with dropout, the CPU takes SDPA's math path, which makes
		 * these calls (CUDA's fused kernels take dropout) */
		if (op->p->dropout > 0)
			return (Anchor){"sdpa", random, "_to_copy mul bmm add _safe_softmax"};
		return (Anchor){"sdpa", NULL, NULL};
	case OP_MATMUL:
		return (Anchor){g->t[op->in[1]].ndim <= 2 ? "mm" : "bmm", NULL, NULL};
	case OP_CAST:
		/* a bool attention mask made additive by SDPA (autocast.c):
		 * torch.where, not a copy */
		return (Anchor){g->t[op->in[0]].dtype == DT_BOOL ? "where" : "_to_copy",
		                NULL, NULL};
	case OP_RMSNORM:
		return (Anchor){NULL, "an autograd.Function of several aten calls",
		                "_to_copy pow mean add rsqrt mul"};
	case OP_CROSS_ENTROPY:
		/* under CUDA autocast, nll_loss casts half log-probs to f32
		 * (the extra lsm_f32): a _to_copy between the two */
		return (Anchor){NULL, "two aten calls, and the saved log-probabilities "
		                "come from the first", op->nextra > 1 ?
		                "_log_softmax _to_copy nll_loss_forward" :
		                "_log_softmax nll_loss_forward"};
	case OP_CUSTOM:
		return (Anchor){NULL, "a custom op: an autograd.Function whose aten calls "
		                "are unknown", "*"};
	default:
		for (size_t i = 0; i < sizeof aten_class / sizeof aten_class[0]; i++)
			if (aten_class[i].kind == op->kind)
				return (Anchor){aten_class[i].cls, NULL, NULL};
		/* the op's own name: relu, add, sum, topk, ... */
		return (Anchor){ir_optab[op->kind].name, NULL, NULL};
	}
}

/* Is class cls among the space-separated classes of list? */
static bool
in_classes(const char *list, const char *cls)
{
	size_t n = strlen(cls);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, " ");
		if (k == 1 && *p == '*')
			return true;
		if (k == n && !strncmp(p, cls, n))
			return true;
		p += k + (p[k] == ' ');
	}
	return false;
}

/* Why op o of block r cannot be cached selectively, or NULL: its anchor's
 * reason, or another op of the block that makes aten calls of o's class
 * in numbers the policy cannot count. */
static const char *
uncacheable(const Analysis *an, const TorchPlan *tp, int r, int o)
{
	const Graph *g = &an->g;
	Anchor ap = anchor(an, o, tp->dag_of[g->op[o].out[0]]);

	if (!ap.cls || ap.why)
		return ap.why ? ap.why : "a view";
	for (int p = tp->lo[r]; p <= tp->hi[r]; p++)
		if (in_classes(anchor(an, p, tp->dag_of[g->op[p].out[0]]).emits, ap.cls))
			return "another op of the call makes aten calls of its class, so "
			       "its calls cannot be told apart";
	return NULL;
}

/* The selective policy of the wrapped blocks: keep[o] (MUST_SAVE) for an
 * op remat's schedule does not recompute, that the block's recompute
 * reaches (up to its last saving op), whose output the recompute or a
 * backward node reads, and that a policy can cache (anchor()) without
 * another op of the block disturbing the count of its class. Decided from
 * the block's last op up, since an op is read by the recompute only if a
 * later op that reads it is rerun. */
static bool *
selective(const Analysis *an, const TorchPlan *tp, const bool *redo, Arena *a)
{
	const Graph *g = &an->g;
	const Dag *d = &an->d;
	bool *keep = ar_alloc(a, (size_t)g->nop + 1);
	bool *bwd_reads = ar_alloc(a, (size_t)g->nt + 1);

	for (int v = 0; v < d->nnode; v++)
		for (int j = 0; d->node[v].is_backward && j < d->node[v].nin; j++)
			if (d->t[d->node[v].in[j]].ir_tensor >= 0)
				bwd_reads[d->t[d->node[v].in[j]].ir_tensor] = true;
	for (int r = 0; r < tp->nblocks; r++)
		for (int p = tp->stop[r]; tp->wrap[r] && p >= tp->lo[r]; p--) {
			const Op *op = &g->op[p];
			bool needed = false;
			if (redo[p] || uncacheable(an, tp, r, p))
				continue;
			for (int k = 0; k < op->nout + (int)op->nextra && !needed; k++) {
				int t = op->out[k];
				needed = bwd_reads[t];
				for (int q = p + 1; q <= tp->stop[r] && !needed; q++)
					for (int j = 0; j < g->op[q].nin && !keep[q]; j++)
						needed |= g->op[q].in[j] == t;
			}
			keep[p] = needed;
		}
	return keep;
}

/* The per-op policy of wrapped block r, one entry per .net op in program
 * order: (op id, class, decision). A comment says why an op that remat's
 * schedule keeps is recomputed with the call all the same. */
static void
put_policy(FILE *f, const Analysis *an, const TorchPlan *tp, int r, const bool *redo,
           const bool *keep)
{
	const Graph *g = &an->g;

	fputs("    \"", f);
	put_block(f, g, tp, r);
	fputs("\": [\n", f);
	for (int o = tp->lo[r]; o <= tp->hi[r]; o++) {
		Anchor ap = anchor(an, o, tp->dag_of[g->op[o].out[0]]);
		const char *id = g->t[g->op[o].out[0]].id, *kind = g->op[o].kind == OP_CUSTOM ?
		                 g->op[o].p->custom->name : ir_optab[g->op[o].kind].name;
		const char *why = uncacheable(an, tp, r, o);
		/* a view costs nothing to redo; past the last saving op, the
		 * recompute never reaches the op */
		if (!keep[o] && !redo[o] && why && strcmp(why, "a view") && o <= tp->stop[r])
			fprintf(f, "        # %s (%s): remat keeps it, but it cannot be cached "
			        "selectively (%s): recomputed with the call\n", id, kind, why);
		fputs("        (", f);
		py_put_str(f, id);
		fputs(", ", f);
		if (ap.cls)
			py_put_str(f, ap.cls);
		else
			fputs("None", f);
		fprintf(f, ", %s),\n", keep[o] ? "MUST_SAVE" : "PREFER_RECOMPUTE");
	}
	fputs("    ],\n", f);
}

static const char torch_helper[] =
"\n"
"# aten overloads (their packet names) that make the same kind of output\n"
"ATEN_CLASS = {\n"
"    \"native_batch_norm\": \"batch_norm\", \"cudnn_batch_norm\": \"batch_norm\",\n"
"    \"miopen_batch_norm\": \"batch_norm\", \"_native_batch_norm_legit\": \"batch_norm\",\n"
"    \"_batch_norm_with_update\": \"batch_norm\",\n"
"    \"_scaled_dot_product_flash_attention\": \"sdpa\",\n"
"    \"_scaled_dot_product_efficient_attention\": \"sdpa\",\n"
"    \"_scaled_dot_product_cudnn_attention\": \"sdpa\",\n"
"    \"_scaled_dot_product_flash_attention_for_cpu\": \"sdpa\",\n"
"}\n"
"# dropout on the CPU is empty_like, bernoulli_, div_ and mul; CUDA's is\n"
"# one native_dropout\n"
"DEVICE_CLASS = {\"cpu\": {\"dropout\": \"mul\"}, \"\": {\"dropout\": \"native_dropout\"}}\n"
"_WARNED = set()\n"
"\n"
"\n"
"def _torch_at_least(major, minor):\n"
"    import torch\n"
"    v = torch.__version__.split(\"+\")[0].split(\".\")\n"
"    return (int(v[0]), int(v[1])) >= (major, minor)\n"
"\n"
"\n"
"def selective_in_use():\n"
"    \"\"\"Whether checkpoint_call applies POLICY: SELECTIVE, and PyTorch >= 2.4\n"
"    (create_selective_checkpoint_contexts). Otherwise calls are recomputed\n"
"    whole.\"\"\"\n"
"    import torch.utils.checkpoint as cp\n"
"    return (SELECTIVE and _torch_at_least(2, 4) and\n"
"            hasattr(cp, \"create_selective_checkpoint_contexts\"))\n"
"\n"
"\n"
"def _predicted_peak():\n"
"    import torch.utils.checkpoint as cp\n"
"    if selective_in_use():\n"
"        return PEAK_SELECTIVE\n"
"    # PyTorch >= 2.1 stops a recompute after the call's last saved tensor\n"
"    return PEAK_WHOLE if hasattr(cp, \"set_checkpoint_early_stop\") else PEAK_WHOLE_NO_EARLY_STOP\n"
"\n"
"\n"
"PREDICTED_PEAK = _predicted_peak()\n"
"\n"
"\n"
"def _saved(call, device):\n"
"    \"\"\"Per aten class, in call order: does the policy save that call?\"\"\"\n"
"    rename = DEVICE_CLASS.get(device, DEVICE_CLASS[\"\"])\n"
"    table = {}\n"
"    for _, cls, decision in POLICY.get(call, []):\n"
"        if cls is not None:\n"
"            table.setdefault(rename.get(cls, cls), []).append(decision == MUST_SAVE)\n"
"    return table\n"
"\n"
"\n"
"def checkpoint_call(call, fn, *args):\n"
"    \"\"\"Runs fn(*args), the def call `call` (e.g. \"block.3.\"), as the plan\n"
"    says: directly when it is not wrapped; else under\n"
"    torch.utils.checkpoint (use_reentrant=False, the RNG state kept, so a\n"
"    recomputed dropout draws the same mask), with POLICY where\n"
"    selective_in_use(), else recomputing the whole call. POLICY's ops are\n"
"    told apart by their aten call's class and its rank among the call's\n"
"    calls of that class, counted afresh in the forward and in the\n"
"    recompute, so views, in-place ops and other calls in between do not\n"
"    move them.\"\"\"\n"
"    import torch.utils.checkpoint as cp\n"
"    if call not in CHECKPOINT:\n"
"        return fn(*args)\n"
"    if not selective_in_use():\n"
"        return cp.checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=True)\n"
"    import functools\n"
"    import warnings\n"
"    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts\n"
"    device = next((a.device.type for a in args if hasattr(a, \"device\")), \"cpu\")\n"
"    table = _saved(call, device)\n"
"    seen = {False: {}, True: {}}\n"
"\n"
"    def policy_fn(ctx, func, *a, **k):\n"
"        # an OpOverload's packet name (aten.mm.default: mm)\n"
"        name = getattr(getattr(func, \"overloadpacket\", None), \"__name__\", str(func))\n"
"        cls = ATEN_CLASS.get(name, name)\n"
"        count = seen[bool(getattr(ctx, \"is_recompute\", False))]\n"
"        i = count.get(cls, 0)\n"
"        count[cls] = i + 1\n"
"        keep = table.get(cls, ())\n"
"        return (CheckpointPolicy.MUST_SAVE if i < len(keep) and keep[i]\n"
"                else CheckpointPolicy.PREFER_RECOMPUTE)\n"
"    out = cp.checkpoint(fn, *args, use_reentrant=False, preserve_rng_state=True,\n"
"                        context_fn=functools.partial(create_selective_checkpoint_contexts,\n"
"                                                     policy_fn))\n"
"    wrong = sorted(cls for cls, keep in table.items()\n"
"                   if any(keep) and seen[False].get(cls, 0) != len(keep))\n"
"    if wrong and call not in _WARNED:\n"
"        _WARNED.add(call)\n"
"        warnings.warn(\"remat plan: %s made %s aten calls of class %s where the plan \"\n"
"                      \"expects %s; the selective policy may save other calls than \"\n"
"                      \"remat chose, and PREDICTED_PEAK may not hold\" % (\n"
"                          call, [seen[False].get(c, 0) for c in wrong], wrong,\n"
"                          [len(table[c]) for c in wrong]))\n"
"    return out\n";

/* The figures of the chosen wrapping under each checkpoint PyTorch runs,
 * and the selective policy. */
typedef struct Figures {
	bool *redo;             /* [nop] ops remat's schedule recomputes */
	bool *keep;             /* [nop] ops the selective policy caches */
	bool any;               /* it caches some op */
	bool use_sel;           /* and serves the goal at least as well */
	int64_t whole, nostop, sel;
} Figures;

static Figures
figures(const Analysis *an, const TorchPlan *tp, Arena *a)
{
	const Graph *g = &an->g;
	Figures fg = {ar_alloc(a, (size_t)g->nop + 1), NULL, false, false, 0, 0, 0};
	CkRun whole = {true, NULL, tp->run.rng_bytes}, sel;
	CkRun no_stop = {false, NULL, tp->run.rng_bytes};
	int64_t r_whole, r_sel;

	for (int i = 0; i < an->ev.nsteps; i++)
		if (an->ev.kind[i] == STEP_RECOMPUTE && an->d.node[an->plan.sched.step[i]].ir_op >= 0)
			fg.redo[an->d.node[an->plan.sched.step[i]].ir_op] = true;
	fg.keep = selective(an, tp, fg.redo, a);
	for (int o = 0; o < g->nop; o++)
		fg.any |= fg.keep[o];
	sel = (CkRun){true, fg.keep, tp->run.rng_bytes};
	fg.whole = peak_run(an, tp, tp->wrap, &whole, &r_whole);
	fg.nostop = peak_run(an, tp, tp->wrap, &no_stop, NULL);
	fg.sel = peak_run(an, tp, tp->wrap, &sel, &r_sel);
	fg.use_sel = fg.any && fg.sel >= 0 && !better(an, fg.whole, r_whole, fg.sel, r_sel);
	return fg;
}

static void
write_py(FILE *f, const Analysis *an, const TorchPlan *tp, const Figures *fg)
{
	const Graph *g = &an->g;

	/* the path, escaped, cannot end the docstring nor hold a bad escape */
	fputs("\"\"\"Checkpoint plan for ", f);
	py_put_body(f, g->file);
	fprintf(f, ", written by remat --emit-torch.\n\n"
	        "Wrap each def call named in CHECKPOINT with checkpoint_call(); the\n"
	        "step then peaks at PREDICTED_PEAK bytes under PyTorch eager\n"
	        "(remat --runtime %s accounting), for the PyTorch that imports this.\n\"\"\"\n\n",
	        g->settings.pytorch_cpu ? "pytorch-cpu" : "pytorch");
	fputs("MUST_SAVE = \"must_save\"\nPREFER_RECOMPUTE = \"prefer_recompute\"\n", f);
	fprintf(f, "# CHECKPOINT recomputed whole, PyTorch >= 2.1 (the recompute stops after\n"
	        "# a call's last saved tensor), and PyTorch 1.13 (it reruns the whole call)\n"
	        "PEAK_WHOLE = %lld\nPEAK_WHOLE_NO_EARLY_STOP = %lld\n"
	        "# CHECKPOINT with POLICY, PyTorch >= 2.4\nPEAK_SELECTIVE = %lld\n"
	        "# every call wrapped whole; remat's own schedule (single-op recomputes)\n"
	        "PER_BLOCK_PEAK = %lld\nPLAN_PEAK = %lld\n",
	        (long long)fg->whole, (long long)fg->nostop, (long long)fg->sel,
	        (long long)tp->all_peak, (long long)an->ev.peak);
	fprintf(f, "# device bytes of the RNG state each wrapped call keeps (on CUDA the\n"
	        "# stash is host memory)\nRNG_STATE_BYTES = %lld\n", (long long)tp->run.rng_bytes);
	if (!fg->any)
		fputs("# no op of a wrapped call is worth caching: the calls are recomputed whole\n", f);
	else if (!fg->use_sel)
		fputs("# the policy does not serve the goal better than recomputing the calls whole\n", f);
	fprintf(f, "SELECTIVE = %s\n", fg->use_sel ? "True" : "False");
	fputs("CHECKPOINT = [", f);
	for (int r = 0, k = 0; r < tp->nblocks; r++)
		if (tp->wrap[r]) {
			fputs(k++ ? ", \"" : "\"", f);
			put_block(f, g, tp, r);
			fputc('"', f);
		}
	fputs("]\n# per def call, per .net op: (op id, aten class of its output or None\n"
	      "# for a view, MUST_SAVE or PREFER_RECOMPUTE)\nPOLICY = {\n", f);
	for (int r = 0; r < tp->nblocks; r++)
		if (tp->wrap[r])
			put_policy(f, an, tp, r, fg->redo, fg->keep);
	fputs("}\n", f);
	fputs(torch_helper, f);
}

void
emit_torch(const Analysis *an, FILE *py, FILE *report, Arena *a)
{
	TorchPlan tp;
	Figures fg;
	char b1[32], b2[32], b3[32];

	torch_plan(an, &tp, a);
	fg = figures(an, &tp, a);
	if (py)
		write_py(py, an, &tp, &fg);
	if (!report)
		return;
	fprintf(report, "\npytorch: wrap %d of %d def calls in torch.utils.checkpoint: "
	        "peak %s (remat's schedule %s, every call wrapped %s)\n", tp.nwrapped, tp.nblocks,
	        report_size(tp.peak, b1), report_size(an->ev.peak, b2),
	        report_size(tp.all_peak, b3));
	if (fg.use_sel && !an->g.settings.pytorch_cpu)
		fprintf(report, "  with the per-op policy (create_selective_checkpoint_contexts): "
		        "peak %s\n", report_size(fg.sel, b1));
}
