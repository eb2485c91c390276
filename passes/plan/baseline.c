/* passes/plan/baseline.c -- the plans users write by hand, which every
 * report shows beside remat's and which -O2 must never lose to, and the
 * lower bound with its parts (issue 9).
 *
 * - sqrt(n) checkpointing (Chen et al.), which is -O1: remat_o1.c's
 *   rm_sqrtn_state.
 * - per-def checkpointing: torch.utils.checkpoint around every block (an
 *   outermost def call, DagNode.block_plus1, set by the lowering). Each
 *   block's inputs and outputs are kept; what it makes and only it reads is
 *   dropped after the forward and recomputed when its backward needs it.
 * - the lower bound: what coexists at some step under every schedule.
 *
 * Reads the Dag only. Both plans are gap states (remat_int.h) scored by
 * lv_eval; their schedules live in the caller's arena. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

bool
rm_perblock_state(const RmModel *M, unsigned char *st)
{
	const Dag *d = M->d;
	Arena a = {0};
	bool *keep_t, any = false;

	for (int v = 0; v < d->nnode; v++)
		any |= d->node[v].block_plus1 > 0 && !d->node[v].once;
	if (!any || !M->has_backward)
		return false;
	keep_t = ar_alloc(&a, ((size_t)d->nt + 1) * sizeof *keep_t);
	/* kept: what no def makes, and what a def makes that a node outside
	 * that call reads (its outputs) */
	for (int t = 0; t < d->nt; t++)
		keep_t[t] = M->prod[t] < 0 || d->node[M->prod[t]].block_plus1 == 0 ||
		            d->t[t].to_end;
	for (int v = 0; v < d->nnode; v++) {
		RmRow uses = rm_uses(M, v);
		for (int k = uses.lo; k < uses.hi; k++) {
			int t = M->use[k];
			if (M->prod[t] >= 0 &&
			    d->node[M->prod[t]].block_plus1 != d->node[v].block_plus1)
				keep_t[t] = true;
		}
	}
	rm_checkpoint_tensors(M, keep_t, st);
	ar_free(&a);
	return true;
}

/* Evaluates a baseline's states into the pool; false when none applies. */
static bool
add_state(RmScorer *S, RmPool *pool, bool (*make)(const RmModel *, unsigned char *))
{
	Arena a = {0};
	unsigned char *st = rm_state_new(S->m, &a);
	int n = pool->n;

	if (make(S->m, st))
		rm_pool_add(pool, S->m, st, rm_eval_state(S, st));
	ar_free(&a);
	return pool->n > n;
}

/* add_state, and r (unless NULL) that baseline as a PlanResult with lower
 * as its bound: the plan added, its schedule the one rm_eval_state left
 * built in S->b, or (none made) the peak of the pool's base plan. */
static void
add_baseline(RmScorer *S, RmPool *pool, bool (*make)(const RmModel *, unsigned char *),
             int64_t lower, PlanResult *r, Arena *a)
{
	bool made = add_state(S, pool, make);
	const RmCand *c = &pool->c[made ? pool->n - 1 : 0];

	if (!r)
		return;
	memset(r, 0, sizeof *r);
	r->fits = true;
	r->lower_bound = lower;
	r->peak = c->peak;
	if (made) {
		r->sched = rm_built_copy(S, a);
		r->recompute_cost = c->cost;
	}
}

void
rm_pool_baselines(RmScorer *S, RmPool *pool, int64_t lower, PlanBaselines *b, Arena *a)
{
	add_baseline(S, pool, rm_sqrtn_state, lower, b ? &b->sqrtn : NULL, a);
	add_baseline(S, pool, rm_perblock_state, lower, b ? &b->perblock : NULL, a);
	if (b)
		b->made = true;
}

static bool
has_backward(const Dag *d)
{
	for (int v = 0; v < d->nnode; v++)
		if (d->node[v].is_backward)
			return true;
	return false;
}

/* What rm_perblock_state checks first, on the Dag. */
bool
rm_perblock_applies(const Dag *d)
{
	bool any = false;

	for (int v = 0; v < d->nnode && !any; v++)
		any = d->node[v].block_plus1 > 0 && !d->node[v].once;
	return any && has_backward(d);
}

/* Whether node v, at its step in the base order, reads a tensor marked in
 * made: its inputs, its outputs' view sources and its accumulations' view
 * sources (the model's uses, remat_model.c). */
static bool
reads_made(const Dag *d, int v, const uint8_t *made)
{
	const DagNode *n = &d->node[v];

	for (int j = 0; j < n->nin; j++)
		if (made[n->in[j]])
			return true;
	for (int j = 0; j < n->nout; j++)
		if (d->t[n->out[j]].view_src >= 0 && made[d->t[n->out[j]].view_src])
			return true;
	for (int j = 0; j < n->nacc; j++)
		if (n->acc[j].view_src >= 0 && made[n->acc[j].view_src])
			return true;
	return false;
}

/* rm_sqrtn_state's test (remat_o1.c, cuts_get: the forward nodes' saved
 * bytes are not 0) on the Dag: a tensor that owns bytes, made by a
 * forward node, is read at a later step by a backward node (it has a
 * "long gap"). One pass over the base order, a byte a tensor. */
bool
rm_sqrtn_applies(const Dag *d)
{
	uint8_t *made = xcalloc((size_t)d->nt + 1, 1);
	bool found = false;

	for (int x = 0; x < d->nbase && !found; x++) {
		int v = d->base_order[x];
		const DagNode *n = &d->node[v];
		if (n->is_backward && reads_made(d, v, made))
			found = true;
		for (int j = 0; j < n->nout && !n->once && !n->is_backward; j++) {
			const DagTensor *t = &d->t[n->out[j]];
			made[n->out[j]] = !t->from_start && t->view_src < 0 && !t->persistent_view &&
			                  t->bytes > 0;
		}
	}
	free(made);
	return found;
}

int64_t
rm_base_peak(const Dag *d)
{
	Arena a;
	Schedule s;
	MemEval ev;

	ar_init(&a);
	s = dag_base_schedule(d, &a);
	lv_eval(d, &s, &ev, &a);
	ar_free(&a);
	return ev.valid ? ev.peak : -1;
}

/* A baseline that does not apply: r with the -O0 peak, found without the
 * planner's model (on a graph of 300k ops, 60 MB that would be made and
 * dropped twice). */
static PlanResult
base_only(const Dag *d, PlanResult r)
{
	int64_t peak = rm_base_peak(d);

	r.peak = peak < 0 ? 0 : peak;   /* lv_eval's peak of an invalid one */
	return r;
}

/* One baseline as a PlanResult; sched.n 0 and the -O0 peak when it does
 * not apply. */
static PlanResult
plan_one(const Dag *d, Arena *a, bool (*applies)(const Dag *),
         bool (*make)(const RmModel *, unsigned char *))
{
	RmCtx C;
	RmPool pool = {0};
	PlanResult r;
	unsigned char *st;

	memset(&r, 0, sizeof r);
	r.fits = true;
	r.lower_bound = rm_lower_bound_parts(d).bytes;
	if (!applies(d))
		return base_only(d, r);
	rm_ctx_init(&C, d);
	st = rm_state_new(&C.m, &C.r.mem);
	rm_pool_add(&pool, &C.m, st, rm_eval_state(&C.s, st));
	if (pool.n == 1)
		add_baseline(&C.s, &pool, make, r.lower_bound, &r, a);
	rm_pool_free(&pool);
	rm_ctx_free(&C);
	return r;
}

PlanResult
rm_plan_sqrtn(const Dag *d, Arena *a)
{
	return plan_one(d, a, rm_sqrtn_applies, rm_sqrtn_state);
}

PlanResult
rm_plan_perblock(const Dag *d, Arena *a)
{
	return plan_one(d, a, rm_perblock_applies, rm_perblock_state);
}

/* ------------------------------------------------------------ lower bound */

/* The tensor whose storage t's instances use: through static views and
 * accumulation views. -1 for what owns nothing (views of params). */
static int
root_of(const Dag *d, const int *alias, int t)
{
	for (int i = 0; i <= d->nt && t >= 0; i++) {
		if (d->t[t].persistent_view)
			return -1;
		if (alias[t] < 0)
			return t;
		t = alias[t];
	}
	return t;
}

/* The j-th tensor node n makes: out[] first, then acc[]. */
static int
made_by(const DagNode *n, int j)
{
	return j < n->nout ? n->out[j] : n->acc[j - n->nout].tensor;
}

/* The j-th tensor node n names: its inputs, then what it makes. */
static int
named_by(const DagNode *n, int j)
{
	return j < n->nin ? n->in[j] : made_by(n, j - n->nin);
}

typedef struct Bound {
	const Dag *d;
	int *alias;             /* [nt] view or accumulation-view source, or -1 */
	int *mark;              /* [nt] scratch: last node that counted t */
	bool *counted;          /* [nt] in persistent, always or end_grads */
	int *nprod;             /* [nt] steps that can produce t */
	bool *read_once;        /* [nt] a backward (once) node reads it */
} Bound;

/* Bytes of node v's own step: workspace and the storage of its inputs,
 * outputs and accumulation targets, each root once, less what is counted
 * already. Any step running v holds at least these. */
static int64_t
step_bytes(Bound *B, int v)
{
	const Dag *d = B->d;
	const DagNode *n = &d->node[v];
	int64_t sum = dag_workspace(d, v);
	int nt = n->nin + n->nout + n->nacc;

	for (int j = 0; j < nt; j++) {
		int t = named_by(n, j);
		int r = root_of(d, B->alias, t);
		if (r < 0 || B->mark[r] == v + 1 || B->counted[r])
			continue;
		B->mark[r] = v + 1;
		sum = ck_sat_add(sum, d->t[r].bytes);
	}
	return sum;
}

/* Whether once-node v may run after every other once node: no other once
 * node reads a tensor that only v makes. */
static bool
may_end(const Bound *B, int v)
{
	const DagNode *n = &B->d->node[v];

	for (int j = 0; j < n->nout + n->nacc; j++) {
		int t = made_by(n, j);
		if (B->nprod[t] == 1 && B->read_once[t])
			return false;
	}
	return true;
}

static void
bound_tables(Bound *B)
{
	const Dag *d = B->d;

	for (int t = 0; t < d->nt; t++)
		B->alias[t] = d->t[t].view_src;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		for (int j = 0; j < n->nacc; j++) {
			B->nprod[n->acc[j].tensor]++;
			if (n->acc[j].view_src >= 0)
				B->alias[n->acc[j].tensor] = n->acc[j].view_src;
		}
		for (int j = 0; j < n->nout; j++)
			B->nprod[n->out[j]]++;
		for (int j = 0; j < n->nin && n->once; j++)
			B->read_once[n->in[j]] = true;
	}
}

/* Owning tensors alive through the whole training step: from_start and to_end. */
static int64_t
always_live(Bound *B)
{
	const Dag *d = B->d;
	int64_t s = 0;

	for (int t = 0; t < d->nt; t++)
		if (d->t[t].from_start && d->t[t].to_end &&
		    root_of(d, B->alias, t) == t) {
			B->counted[t] = true;
			s = ck_sat_add(s, d->t[t].bytes);
		}
	return s;
}

/* to_end tensors that once nodes make (param grads): all made by the time
 * the last once node runs, and live from then to the end. */
static int64_t
end_grads(Bound *B)
{
	const Dag *d = B->d;
	int64_t s = 0;

	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		for (int j = 0; n->once && j < n->nout + n->nacc; j++) {
			int t = made_by(n, j);
			if (d->t[t].to_end && !d->t[t].from_start && !B->counted[t] &&
			    root_of(d, B->alias, t) == t) {
				B->counted[t] = true;
				s = ck_sat_add(s, d->t[t].bytes);
			}
		}
	}
	return s;
}

/* ------------------------------------------------- what lives across a step */
/* Part (1) counts a step's own bytes only. But at the step of a backward
 * node deep in the chain, every param grad made by the backward nodes
 * that must run before it is live (to_end), and so are the gradients made
 * before it and read after it (a gradient is never recomputed) and the
 * inputs read after it: on the LLaMA-7B shape the param grads alone are
 * 24 GiB at the last block's MLP backward, where the step's own bytes are
 * 6.7 GiB. So for a few of the largest steps (LB_CANDIDATES, the latest
 * in the base order first among equal ones), the nodes that run before v
 * and after v's first step in every valid schedule are found
 * (dependencies: a node reading t runs after t's only producer, or after
 * every contribution to a gradient, since a contribution after a read is
 * invalid; docs/planning.md says why each counted tensor is live). */
enum { LB_CANDIDATES = 16 };

/* A set of candidate steps: bit i is the i-th. All candidates are found
 * in one pass each way (below), not one search per candidate: 32 searches
 * of a 1M-op chain were 16% of -O0. */
typedef uint16_t CandSet;
_Static_assert(LB_CANDIDATES <= 16, "CandSet has a bit per candidate step");

/* The kinds of tensor that may live across a step (live_across). */
enum { LA_END = 1, LA_INPUT = 2, LA_GRAD = 4 };

typedef struct Across {
	const Dag *d;
	CandSet *self;          /* [nnode] the candidate a node is, if any */
	CandSet *before;        /* [nnode] candidates the node runs before */
	CandSet *after;         /* [nnode] candidates it runs after */
	uint8_t *nmake, *nout;  /* [nt] nodes making t, and those with t in
	                           out[], counted up to 2 */
	bool *once_made;        /* [nt] every maker of t is a once node */
} Across;

/* Whether each reader of t runs after each node that makes it, in every
 * valid schedule: after t's only producer (t made by out alone, and not
 * there from the start), or after every contribution (t made by
 * accumulation alone: a contribution after a read is invalid). */
static bool
orders(const Across *A, int t)
{
	return (A->nout[t] == 1 && A->nmake[t] == 1 && !A->d->t[t].from_start) ||
	       (A->nout[t] == 0 && A->nmake[t] > 0);
}

static void
count_makers(Across *A, Arena *a)
{
	const Dag *d = A->d;

	A->nmake = ar_alloc(a, (size_t)d->nt + 1);
	A->nout = ar_alloc(a, (size_t)d->nt + 1);
	A->once_made = ar_alloc(a, (size_t)d->nt + 1);
	for (int t = 0; t < d->nt; t++)
		A->once_made[t] = true;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		for (int j = 0; j < n->nout + n->nacc; j++) {
			int t = made_by(n, j);
			A->once_made[t] &= n->once;
			A->nmake[t] += A->nmake[t] < 2;
			A->nout[t] += j < n->nout && A->nout[t] < 2;
		}
	}
}

/* before[u]: the candidates u must run before, over the dependencies, by
 * one pass in reverse base order (the -O0 schedule, valid, so every
 * reader of what u makes comes later); after[u] likewise forward. Each
 * bit stands for a real chain of dependencies, so a node missing from
 * the base order only leaves bits out: the bound stays a bound. */
static void
order_sets(Across *A, Arena *a)
{
	const Dag *d = A->d;
	CandSet *rd = ar_alloc(a, sizeof *rd * ((size_t)d->nt + 1));
	CandSet *mk = ar_alloc(a, sizeof *mk * ((size_t)d->nt + 1));

	for (int x = d->nbase - 1; x >= 0; x--) {
		int u = d->base_order[x];
		const DagNode *n = &d->node[u];
		CandSet s = 0;
		for (int j = 0; j < n->nout + n->nacc; j++)
			if (orders(A, made_by(n, j)))
				s |= rd[made_by(n, j)];
		A->before[u] = s;
		for (int j = 0; j < n->nin; j++)
			rd[n->in[j]] |= s | A->self[u];
	}
	for (int x = 0; x < d->nbase; x++) {
		int u = d->base_order[x];
		const DagNode *n = &d->node[u];
		CandSet s = 0;
		for (int j = 0; j < n->nin; j++)
			if (orders(A, n->in[j]))
				s |= mk[n->in[j]];
		A->after[u] = s;
		for (int j = 0; j < n->nout + n->nacc; j++)
			mk[made_by(n, j)] |= s | A->self[u];
	}
}

/* The kind of tensor t that live_across counts, or 0: owning tensors (no
 * view, never an accumulation view) that are (a) to_end; (b) there from
 * the start and not to the end: inputs (made by none), and gradients the
 * earlier micro-batches accumulated (--grad-sync last), which once nodes
 * only add to, all before any read (orders), so they live until a read;
 * (c) made by once nodes alone (gradients). */
static int
la_kind(const Bound *B, const Across *A, int t)
{
	const DagTensor *x = &B->d->t[t];
	int k = A->nmake[t];

	if (B->alias[t] >= 0 || x->persistent_view || B->counted[t])
		return 0;
	return (x->to_end ? LA_END : 0) |
	       (x->from_start && !x->to_end &&
	        (k == 0 || (A->nout[t] == 0 && A->once_made[t])) ? LA_INPUT : 0) |
	       (!x->from_start && !x->to_end && k > 0 && A->once_made[t] &&
	        (A->nout[t] == 0 || (A->nout[t] == 1 && k == 1)) ? LA_GRAD : 0);
}

/* Under ZeRO-2/3 a param gradient made before v is live until its
 * bucket's pack, whose flat buffer (the bytes of all its gradients) is
 * live until the reduce-scatter, which makes the params' shards, live to
 * the end. Where the order of v and the bucket is not fixed, neither the
 * gradient nor the shard is counted above, yet at v one of the three
 * holds at least min(the gradients made before v, the shards it makes):
 * at ZeRO-3 on 8 ranks that is most of the shards at the last block's
 * backward, 37 MiB on ViT-B. Bits where the order is fixed (pack after v:
 * the gradients count; buffer made before and read after; reduce-scatter
 * before v: the shards count) and any bucket tensor v holds itself are
 * left to the counts above. */
static void
bucket_across(const Bound *B, const Across *A, const CandSet *made, const CandSet *read,
              const CandSet *own, int ncand, int64_t *across)
{
	const Dag *d = B->d;

	for (int r = 1; r < d->nnode; r++) {
		const DagNode *R = &d->node[r], *P = &d->node[r - 1];
		if (dag_xfer(d, r)->comm != COMM_REDUCE_SCATTER || dag_xfer(d, r - 1)->comm != COMM_PACK ||
		    R->nin < 1 || P->nout != 1 || R->in[0] != P->out[0] || !la_kind(B, A, R->in[0]))
			continue;
		unsigned skip = A->after[r - 1] | A->before[r] | (A->before[r - 1] & A->after[r]) |
		                own[R->in[0]];
		int64_t shards = 0;
		for (int j = 0; j < R->nout; j++) {
			int s = R->out[j];
			skip |= la_kind(B, A, s) & LA_END ? own[s] : ~0u;
			shards = ck_sat_add(shards, d->t[s].bytes);
		}
		int64_t grads[LB_CANDIDATES] = {0};
		for (int j = 0; j < P->nin; j++) {
			int g = P->in[j];
			if (!(la_kind(B, A, g) & LA_GRAD))
				continue;
			/* made before v, not counted by (c) nor v's own */
			unsigned m = made[g] & ~((unsigned)(made[g] & read[g]) | own[g]);
			for (; m; m &= m - 1)
				grads[__builtin_ctz(m)] = ck_sat_add(grads[__builtin_ctz(m)], d->t[g].bytes);
		}
		for (unsigned m = ~skip & ((1u << ncand) - 1); m; m &= m - 1) {
			int i = __builtin_ctz(m);
			across[i] = ck_sat_add(across[i], grads[i] < shards ? grads[i] : shards);
		}
	}
}

/* A backward node u whose order against v is not fixed either way, that
 * reads gradients made before v or inputs, which nothing after v is sure
 * to read, and adds to param grads that nothing before v is sure to make:
 * run after v, u holds what it reads across v; run before, what it makes
 * (to the end). Either way the smaller of the two is live at v and
 * counted by none of (a)-(c): a tied embedding's f16 gradient from the
 * head, 76 MiB, against its f32 grad, 152 MiB (Whisper's decoder embedding,
 * which nothing in the encoder's backward waits for). A tensor counts in
 * one such pair at most, so no byte counts twice; communication nodes are
 * bucket_across's. */
static void
unordered_across(const Bound *B, const Across *A, const CandSet *made, const CandSet *read,
                 const CandSet *own, int ncand, int64_t *across, Arena *a)
{
	const Dag *d = B->d;
	CandSet *used = ar_alloc(a, sizeof *used * ((size_t)d->nt + 1));
	int most = 0;

	for (int u = 0; u < d->nnode; u++) {
		int k = d->node[u].nin + d->node[u].nout + d->node[u].nacc;
		most = k > most ? k : most;
	}
	/* per tensor u names: the candidates where it counts */
	unsigned *cnt = ar_alloc(a, sizeof *cnt * ((size_t)most + 1));
	for (int u = 0; u < d->nnode; u++) {
		const DagNode *n = &d->node[u];
		unsigned fr = ((1u << ncand) - 1) & ~(unsigned)(A->before[u] | A->after[u] | A->self[u]);
		int nnamed = n->nin + n->nout + n->nacc;
		if (!fr || !n->once || n->nacc == 0 || dag_xfer(d, u)->comm != COMM_NONE)
			continue;
		int64_t sx[LB_CANDIDATES] = {0}, sy[LB_CANDIDATES] = {0};
		for (int j = 0; j < nnamed; j++) {
			int t = named_by(n, j), k = la_kind(B, A, t);
			unsigned live = j >= n->nin ? (k & LA_END ? ~(unsigned)made[t] : 0) :
			                k & LA_GRAD ? made[t] & ~(unsigned)read[t] :
			                k & LA_INPUT ? ~(unsigned)read[t] : 0;
			cnt[j] = fr & live & ~(unsigned)(own[t] | used[t]);
			for (int i = 0; i < j; i++)     /* a tensor u names twice: once */
				if (named_by(n, i) == t)
					cnt[j] = 0;
			for (unsigned m = cnt[j]; m; m &= m - 1) {
				int64_t *s = j < n->nin ? sx : sy;
				s[__builtin_ctz(m)] = ck_sat_add(s[__builtin_ctz(m)], d->t[t].bytes);
			}
		}
		unsigned both = 0;
		for (int i = 0; i < ncand; i++)
			if (sx[i] > 0 && sy[i] > 0) {
				both |= 1u << i;
				across[i] = ck_sat_add(across[i], sx[i] < sy[i] ? sx[i] : sy[i]);
			}
		for (int j = 0; both && j < nnamed; j++)
			used[named_by(n, j)] |= (CandSet)(cnt[j] & both);
	}
}

/* What is live at each candidate v's first step besides its own bytes
 * and what part (1) counts always: the tensors of la_kind (a) made by a
 * node before v, (b) read by a node after v, (c) made before v and read
 * after it. Into across[i] for cand[i]. */
static void
live_across(Bound *B, const int *cand, int ncand, int64_t *across, Arena *a)
{
	const Dag *d = B->d;
	Across A = {.d = d};
	CandSet *made = ar_alloc(a, sizeof *made * ((size_t)d->nt + 1));
	CandSet *read = ar_alloc(a, sizeof *read * ((size_t)d->nt + 1));
	CandSet *own = ar_alloc(a, sizeof *own * ((size_t)d->nt + 1));

	A.self = ar_alloc(a, sizeof *A.self * ((size_t)d->nnode + 1));
	A.before = ar_alloc(a, sizeof *A.before * ((size_t)d->nnode + 1));
	A.after = ar_alloc(a, sizeof *A.after * ((size_t)d->nnode + 1));
	count_makers(&A, a);
	for (int i = 0; i < ncand; i++) {
		const DagNode *n = &d->node[cand[i]];
		A.self[cand[i]] |= (CandSet)(1u << i);
		/* v's own tensors are in step_bytes already */
		for (int j = 0; j < n->nin + n->nout + n->nacc; j++) {
			int t = named_by(n, j);
			int r = root_of(d, B->alias, t);
			if (r >= 0)
				own[r] |= (CandSet)(1u << i);
		}
	}
	order_sets(&A, a);
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		for (int j = 0; j < n->nout + n->nacc; j++)
			made[made_by(n, j)] |= A.before[v];
		for (int j = 0; j < n->nin; j++)
			read[n->in[j]] |= A.after[v];
	}
	for (int t = 0; t < d->nt; t++) {
		int k = la_kind(B, &A, t);
		if (!k)
			continue;
		unsigned m = ((k & LA_END) ? made[t] : 0) | ((k & LA_INPUT) ? read[t] : 0) |
		             ((k & LA_GRAD) ? made[t] & read[t] : 0);
		for (m &= ~(unsigned)own[t]; m; m &= m - 1)
			across[__builtin_ctz(m)] = ck_sat_add(across[__builtin_ctz(m)], d->t[t].bytes);
	}
	bucket_across(B, &A, made, read, own, ncand, across);
	unordered_across(B, &A, made, read, own, ncand, across, a);
}

/* Whether step a comes before step b among the candidates: the larger
 * own bytes, then the later in the base order (deeper in backward: more
 * param grads made), then the lower index. */
static bool
step_first(const int64_t *own, const int *pos, int a, int b)
{
	if (own[a] != own[b])
		return own[a] > own[b];
	if (pos[a] != pos[b])
		return pos[a] > pos[b];
	return a < b;
}

/* The best of part (1) with what lives across the step, over the
 * LB_CANDIDATES largest steps (own: each node's step_bytes); into
 * lb->step, step_node, across. */
static void
step_across(Bound *B, const int64_t *own, LowerBound *lb, Arena *a)
{
	const Dag *d = B->d;
	int cand[LB_CANDIDATES], ncand = 0;
	int *pos = ar_alloc(a, sizeof *pos * ((size_t)d->nnode + 1));

	for (int v = 0; v < d->nnode; v++)
		pos[v] = -1;
	for (int x = 0; x < d->nbase; x++)
		pos[d->base_order[x]] = x;
	/* the LB_CANDIDATES first steps, by insertion: a sort of every node
	 * was 3% of -O0 on a 1M-op chain */
	for (int v = 0; v < d->nnode; v++) {
		int i;
		if (ncand == LB_CANDIDATES && !step_first(own, pos, v, cand[ncand - 1]))
			continue;
		if (ncand < LB_CANDIDATES)
			ncand++;
		for (i = ncand - 1; i > 0 && step_first(own, pos, v, cand[i - 1]); i--)
			cand[i] = cand[i - 1];
		cand[i] = v;
	}
	int64_t across[LB_CANDIDATES] = {0};
	live_across(B, cand, ncand, across, a);
	for (int i = 0; i < ncand; i++) {
		int v = cand[i];
		if (ck_sat_add(own[v], across[i]) > ck_sat_add(lb->step, lb->across)) {
			lb->step = own[v];
			lb->step_node = v;
			lb->across = across[i];
		}
	}
}

/* Under every schedule: (1) each node runs at some step, which holds its
 * own bytes besides what is always there, and what lives across it
 * (step_across); (2) the step of the last once
 * node (the end of backward) holds every param grad besides its own. */
LowerBound
rm_lower_bound_parts(const Dag *d)
{
	size_t nt = (size_t)d->nt + 1;
	Arena a = {0};
	Bound B = {d, ar_alloc(&a, nt * sizeof(int)), ar_alloc(&a, nt * sizeof(int)),
	           ar_alloc(&a, nt * sizeof(bool)), ar_alloc(&a, nt * sizeof(int)),
	           ar_alloc(&a, nt * sizeof(bool))};
	LowerBound lb;

	memset(&lb, 0, sizeof lb);
	lb.end_node = lb.step_node = -1;
	for (int c = 0; c < CAT_COUNT; c++)
		lb.persistent = ck_sat_add(lb.persistent, d->persistent[c]);
	bound_tables(&B);
	lb.always = always_live(&B);
	int64_t *own = ar_alloc(&a, sizeof *own * ((size_t)d->nnode + 1));
	for (int v = 0; v < d->nnode; v++) {
		own[v] = step_bytes(&B, v);
		if (lb.step_node < 0 || own[v] > lb.step) {
			lb.step = own[v];
			lb.step_node = v;
		}
	}
	int64_t largest = lb.step;
	step_across(&B, own, &lb, &a);
	lb.end_grads = end_grads(&B);
	memset(B.mark, 0, sizeof(int) * nt);
	for (int v = 0; v < d->nnode; v++) {
		if (!d->node[v].once || !may_end(&B, v))
			continue;
		int64_t s = step_bytes(&B, v);
		if (lb.end_node < 0 || s < lb.end_step) {
			lb.end_step = s;
			lb.end_node = v;
		}
	}
	int64_t base = ck_sat_add(lb.persistent, lb.always);
	int64_t end = ck_sat_add(lb.end_grads, lb.end_step);
	int64_t step = ck_sat_add(lb.step, lb.across);
	lb.at_end = lb.end_node >= 0 && end > step;
	lb.bytes = ck_sat_add(base, lb.at_end ? end : step);
	lb.ladder = ck_sat_add(base, end > largest && lb.end_node >= 0 ? end : largest);
	ar_free(&a);
	return lb;
}
