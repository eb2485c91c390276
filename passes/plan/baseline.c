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

void
rm_pool_baselines(RmScorer *S, RmPool *pool)
{
	add_state(S, pool, rm_sqrtn_state);
	add_state(S, pool, rm_perblock_state);
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
		r.peak = pool.c[0].peak;
	if (pool.n == 1 && add_state(&C.s, &pool, make)) {
		ir_assert(rm_build(&C.s, pool.c[1].state));
		r.sched.n = C.s.b.nstep;
		r.sched.step = ar_alloc(a, sizeof *r.sched.step * (size_t)(C.s.b.nstep + 1));
		memcpy(r.sched.step, C.s.b.step, sizeof *r.sched.step * (size_t)C.s.b.nstep);
		r.peak = pool.c[1].peak;
		r.recompute_cost = pool.c[1].cost;
	}
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
		int t = j < n->nin ? n->in[j] : j < n->nin + n->nout ?
		        n->out[j - n->nin] : n->acc[j - n->nin - n->nout].tensor;
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
		int t = j < n->nout ? n->out[j] : n->acc[j - n->nout].tensor;
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
			int t = j < n->nout ? n->out[j] : n->acc[j - n->nout].tensor;
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

typedef struct Deps {
	int *pofs, *pred;       /* CSR [nnode]: nodes that run before each */
	int *sofs, *succ;       /* CSR [nnode]: the reverse */
	int *tpofs, *tprod;     /* CSR [nt]: nodes that make or add to t */
	int *trofs, *tread;     /* CSR [nt]: nodes that read t */
	int *seen, stamp;       /* [nnode] visited at stamp (before) or
	                           -stamp (after) */
	int *stack;
	bool *once_made;        /* [nt] every maker of t is a once node */
	int *nout;              /* [nt] nodes with t in out[] */
	int *cand, ncand;       /* the tensors live_across may count */
	unsigned char *kind;    /* [nt] their LA_* kinds */
} Deps;

/* The kinds of tensor that may live across a step (live_across). */
enum { LA_END = 1, LA_INPUT = 2, LA_GRAD = 4 };

/* CSR rows from (row, value) pairs counted by row. */
static void
csr_fill(int nrow, const int *rowof, const int *val, int n, int **ofs, int **out, Arena *a)
{
	*ofs = ar_alloc(a, sizeof **ofs * ((size_t)nrow + 2));
	*out = ar_alloc(a, sizeof **out * ((size_t)n + 1));
	for (int i = 0; i < n; i++)
		(*ofs)[rowof[i] + 2]++;
	for (int r = 0; r <= nrow; r++)
		(*ofs)[r + 1] += (*ofs)[r];
	for (int i = 0; i < n; i++)
		(*out)[(*ofs)[rowof[i] + 1]++] = val[i];
}

/* Whether every reader of t runs after each node that makes t. */
static bool
dep_edge(const Deps *D, const Dag *d, int t)
{
	int k = D->tpofs[t + 1] - D->tpofs[t];

	return (D->nout[t] == 1 && k == 1 && !d->t[t].from_start) ||
	       (D->nout[t] == 0 && k > 0);
}

/* The tensor tables and the dependency edges of d. */
static void
deps_init(Deps *D, const Dag *d, Arena *a)
{
	int ne = 0, np = 0, nr = 0;

	for (int v = 0; v < d->nnode; v++) {
		np += d->node[v].nout + d->node[v].nacc;
		nr += d->node[v].nin;
	}
	int *pr = ar_alloc(a, sizeof *pr * ((size_t)np + 1));
	int *pv = ar_alloc(a, sizeof *pv * ((size_t)np + 1));
	int *rr = ar_alloc(a, sizeof *rr * ((size_t)nr + 1));
	int *rv = ar_alloc(a, sizeof *rv * ((size_t)nr + 1));
	D->once_made = ar_alloc(a, (size_t)d->nt + 1);
	D->nout = ar_alloc(a, sizeof *D->nout * ((size_t)d->nt + 1));
	for (int t = 0; t < d->nt; t++)
		D->once_made[t] = true;
	np = nr = 0;
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		for (int j = 0; j < n->nout + n->nacc; j++) {
			int t = j < n->nout ? n->out[j] : n->acc[j - n->nout].tensor;
			pr[np] = t;
			pv[np++] = v;
			D->once_made[t] &= n->once;
			D->nout[t] += j < n->nout;
		}
		for (int j = 0; j < n->nin; j++) {
			rr[nr] = n->in[j];
			rv[nr++] = v;
		}
	}
	csr_fill(d->nt, pr, pv, np, &D->tpofs, &D->tprod, a);
	csr_fill(d->nt, rr, rv, nr, &D->trofs, &D->tread, a);
	/* edges: a reader after t's only producer (t made by out alone, and
	 * not there from the start), or after every contribution (t made by
	 * accumulation alone) */
	for (int i = 0; i < nr; i++)
		if (dep_edge(D, d, rr[i]))
			ne += D->tpofs[rr[i] + 1] - D->tpofs[rr[i]];
	int *eu = ar_alloc(a, sizeof *eu * ((size_t)ne + 1));
	int *ev = ar_alloc(a, sizeof *ev * ((size_t)ne + 1));
	ne = 0;
	for (int i = 0; i < nr; i++) {
		int t = rr[i];
		if (!dep_edge(D, d, t))
			continue;
		for (int p = D->tpofs[t]; p < D->tpofs[t + 1]; p++) {
			if (D->tprod[p] == rv[i])
				continue;
			eu[ne] = D->tprod[p];
			ev[ne++] = rv[i];
		}
	}
	csr_fill(d->nnode, ev, eu, ne, &D->pofs, &D->pred, a);
	csr_fill(d->nnode, eu, ev, ne, &D->sofs, &D->succ, a);
	D->seen = ar_alloc(a, sizeof *D->seen * ((size_t)d->nnode + 1));
	D->stack = ar_alloc(a, sizeof *D->stack * ((size_t)d->nnode + 1));
}

/* Marks (seen = mark) every node reachable from v over the rows (ofs,
 * adj), v not. */
static void
deps_reach(Deps *D, int v, const int *ofs, const int *adj, int mark)
{
	int n = 0;

	D->stack[n++] = v;
	while (n > 0) {
		int u = D->stack[--n];
		for (int e = ofs[u]; e < ofs[u + 1]; e++) {
			int w = adj[e];
			if (D->seen[w] == mark || w == v)
				continue;
			D->seen[w] = mark;
			D->stack[n++] = w;
		}
	}
}

/* Whether some node of row t of (ofs, list) is marked mark. */
static bool
any_marked(const Deps *D, const int *ofs, const int *list, int t, int mark)
{
	for (int p = ofs[t]; p < ofs[t + 1]; p++)
		if (D->seen[list[p]] == mark)
			return true;
	return false;
}

/* What is live at v's first step besides its own bytes (B->mark holds
 * v + 1 for those) and what part (1) counts always: owning tensors (no
 * view, never an accumulation view) that are (a) to_end and made by a
 * node before v; (b) inputs (from_start, made by none) read by a node
 * after v; (c) made by once nodes alone (gradients), by a node before v,
 * and read by a node after v. Only the tensors of those kinds are looked
 * at (D->cand, found once by la_candidates): on a 1M-op chain the rest,
 * two thirds, cost 16 scans of every tensor. */
static int64_t
live_across(Bound *B, Deps *D, int v)
{
	int before = 2 * D->stamp + 1, after = 2 * D->stamp + 2;
	int64_t s = 0;

	D->stamp++;
	deps_reach(D, v, D->pofs, D->pred, before);
	deps_reach(D, v, D->sofs, D->succ, after);
	for (int i = 0; i < D->ncand; i++) {
		int t = D->cand[i], k = D->kind[t];
		if (B->mark[t] == v + 1)
			continue;
		bool made = (k & (LA_END | LA_GRAD)) &&
		            any_marked(D, D->tpofs, D->tprod, t, before);
		bool read = (k & (LA_INPUT | LA_GRAD)) &&
		            any_marked(D, D->trofs, D->tread, t, after);
		if (((k & LA_END) && made) || ((k & LA_INPUT) && read) ||
		    ((k & LA_GRAD) && made && read))
			s = ck_sat_add(s, B->d->t[t].bytes);
	}
	return s;
}

/* The tensors live_across may count, with their kinds. */
static void
la_candidates(const Bound *B, Deps *D, Arena *a)
{
	const Dag *d = B->d;

	D->cand = ar_alloc(a, sizeof *D->cand * ((size_t)d->nt + 1));
	D->kind = ar_alloc(a, (size_t)d->nt + 1);
	D->ncand = 0;
	for (int t = 0; t < d->nt; t++) {
		const DagTensor *x = &d->t[t];
		int k = D->tpofs[t + 1] - D->tpofs[t];
		if (B->alias[t] >= 0 || x->persistent_view || B->counted[t])
			continue;
		D->kind[t] = (x->to_end ? LA_END : 0) |
		             (x->from_start && !x->to_end && k == 0 ? LA_INPUT : 0) |
		             (!x->from_start && !x->to_end && k > 0 && D->once_made[t] &&
		              (D->nout[t] == 0 || (D->nout[t] == 1 && k == 1)) ? LA_GRAD : 0);
		if (D->kind[t])
			D->cand[D->ncand++] = t;
	}
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
 * LB_CANDIDATES largest steps; into lb->step, step_node, across. */
static void
step_across(Bound *B, LowerBound *lb, Arena *a)
{
	const Dag *d = B->d;
	Deps D = {0};
	int cand[LB_CANDIDATES], ncand = 0;
	int64_t *own = ar_alloc(a, sizeof *own * ((size_t)d->nnode + 1));
	int *pos = ar_alloc(a, sizeof *pos * ((size_t)d->nnode + 1));

	for (int v = 0; v < d->nnode; v++)
		pos[v] = -1;
	for (int x = 0; x < d->nbase; x++)
		pos[d->base_order[x]] = x;
	/* the LB_CANDIDATES first steps, by insertion: a sort of every node
	 * was 3% of -O0 on a 1M-op chain */
	for (int v = 0; v < d->nnode; v++) {
		int i;
		own[v] = step_bytes(B, v);
		if (ncand == LB_CANDIDATES && !step_first(own, pos, v, cand[ncand - 1]))
			continue;
		if (ncand < LB_CANDIDATES)
			ncand++;
		for (i = ncand - 1; i > 0 && step_first(own, pos, v, cand[i - 1]); i--)
			cand[i] = cand[i - 1];
		cand[i] = v;
	}
	deps_init(&D, d, a);
	la_candidates(B, &D, a);
	for (int i = 0; i < ncand; i++) {
		int v = cand[i];
		/* marks are v + 1: v's own tensors are the only ones that hold
		 * it, once step_bytes has run again */
		step_bytes(B, v);
		int64_t x = live_across(B, &D, v);
		if (ck_sat_add(own[v], x) > ck_sat_add(lb->step, lb->across)) {
			lb->step = own[v];
			lb->step_node = v;
			lb->across = x;
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
	for (int v = 0; v < d->nnode; v++) {
		int64_t s = step_bytes(&B, v);
		if (lb.step_node < 0 || s > lb.step) {
			lb.step = s;
			lb.step_node = v;
		}
	}
	int64_t largest = lb.step;
	step_across(&B, &lb, &a);
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
