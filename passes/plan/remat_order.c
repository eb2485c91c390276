/* passes/plan/remat_order.c -- other orders for the planners to work over,
 * over the spec's whole schedule space (memory-model.md, "Schedules"):
 * topological orders of the Dag's data edges (every contribution to a
 * gradient before it is read, a backward node after its forward node, the
 * contributions to one gradient in the base order's order (rm_acc_prev);
 * backward steps otherwise in any order, as the exact solver assumes),
 * chosen greedily by the bytes each step adds or at random; and a local
 * search that lowers a schedule's peak by moving steps (backward steps
 * too) and, for -O2's final plans, by recomputing what lives across the
 * peak right before its next use (with the recomputes its inputs need,
 * within the cap). On random layered graphs the least-bytes order alone
 * starts 2-20% below the reference order's peak, which the budget then
 * need not buy with recompute. Reads the Dag; every schedule is scored by
 * lv_eval; scratch lives in arenas per call. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* Recomputes one move may insert: a short chain first, a long one only
 * where no short move is left (each long chain that is valid costs an
 * evaluation); and all moves together. */
enum { RCHAIN_SHORT = 8, RCHAIN = 32, RTOTAL = 4 * RCHAIN };

/* An instance live across the peak, for sorting: its bytes and index;
 * and its tensor's next use after the peak, once order_step finds it. */
typedef struct Sel {
	int64_t owned;
	int k;
	int next;
	int vnext, view;        /* the first later step reading a view of it,
	                           and that view (order_view_uses) */
} Sel;

/* A schedule being improved: its steps, a buffer for a changed copy, its
 * key (the peak, then how many steps reach it) and the evaluations left. */
typedef struct Ord {
	const RmModel *M;
	RmScorer *S;
	int *s, *buf, m, capm;  /* capm: room in s and buf */
	int64_t peak;
	int npeak;
	long evals;
	double maxcost;         /* recompute allowed; < 0: any */
	bool remat;             /* may insert recomputes */
	int *maker;             /* [nt] the recomputable node making t, or -1 */
	Instance *inst;         /* the current schedule's instances */
	int ninst;
	Sel *sel;               /* those live across the peak step, largest first */
	int chain;              /* the most recomputes one move inserts */
	int longest;            /* ... where no move of RCHAIN_SHORT is left */
	int *last;              /* [nt] each tensor's last instance in inst, or -1 */
	int *prev;              /* [ninst] the tensor's instance before it, or -1 */
	unsigned char *tflag;   /* [nt] TF_ flags */
	int *vfirst, *vview;    /* [nt] order_view_uses' for the current peak,
	                           made on the first use (22 MB on a 1M-op
	                           chain, where no view lives across a peak) */
	Arena *a;
	int kill;               /* a chain recomputes this tensor even where it
	                           is live (order_try_chain), or -1 */
} Ord;

/* What a tensor has, for the moves that need it (Ord.tflag). */
enum {
	TF_VIEWED = 1,          /* some tensor is a view of its storage */
	TF_POSTPONABLE = 2,     /* some node only adds to it (adds_only_to) */
};

/* The peak of s[0..m) and how many steps reach it, by lv_eval (scratch
 * in S), or (fast) by rm_score_state's shortcut of it, which leaves the rest of
 * S->ev stale; false when s is invalid. */
static bool
order_key(RmScorer *S, const int *s, int m, int64_t *peak, int *npeak, bool fast)
{
	if (!(fast ? rm_score_steps(S, s, m) : rm_eval_steps(S, s, m)))
		return false;
	*peak = S->ev.peak;
	*npeak = 0;
	for (int i = 0; i < S->ev.nsteps; i++)
		*npeak += S->ev.live_bytes[i] == S->ev.peak;
	return true;
}

/* buf = s with the step at i moved to index j of the result. */
static void
order_move(const int *s, int m, int i, int j, int *buf)
{
	int k = 0;

	for (int x = 0; x < m; x++) {
		if (x == i)
			continue;
		if (k == j)
			buf[k++] = s[i];
		buf[k++] = s[x];
	}
	if (k == j)
		buf[k++] = s[i];
}

/* Whether t is one of the k tensors ts or one that node n adds to. */
static bool
in_or_acc(const DagNode *n, const int *ts, int k, int t)
{
	for (int j = 0; j < k; j++)
		if (ts[j] == t)
			return true;
	for (int j = 0; j < n->nacc; j++)
		if (n->acc[j].tensor == t)
			return true;
	return false;
}

/* Whether node v uses t: reads it, or adds to it. */
static bool
node_uses(const Dag *d, int v, int t)
{
	return in_or_acc(&d->node[v], d->node[v].in, d->node[v].nin, t);
}

/* Whether node v makes t: produces it, or adds to it. */
static bool
node_makes(const Dag *d, int v, int t)
{
	return in_or_acc(&d->node[v], d->node[v].out, d->node[v].nout, t);
}

/* The earliest index step w could move to: after the latest earlier step
 * that makes a tensor it reads or a view base it needs, after its
 * forward node's step, and after the contributions that come before its
 * own (rm_acc_prev). lv_eval judges the rest (a contribution after a
 * read). */
static int
order_earliest(const RmModel *M, const int *s, int w)
{
	const Dag *d = M->d;
	const DagNode *n = &d->node[s[w]];
	RmRow ap = rm_row(M->aofs, s[w], M->nnode);

	for (int x = w - 1; x >= 0; x--) {
		if (s[x] == n->fwd_plus1 - 1)
			return x + 1;
		for (int k = ap.lo; k < ap.hi; k++)
			if (s[x] == M->aprev[k])
				return x + 1;
		for (int j = 0; j < n->nin; j++)
			if (node_makes(d, s[x], n->in[j]))
				return x + 1;
		for (int j = 0; j < n->nacc; j++)
			if (n->acc[j].view_src >= 0 && node_makes(d, s[x], n->acc[j].view_src))
				return x + 1;
	}
	return 0;
}

/* The first step after p that uses t, or -1. */
static int
order_next_use(const Dag *d, const int *s, int m, int p, int t)
{
	for (int x = p + 1; x < m; x++)
		if (node_uses(d, s[x], t))
			return x;
	return -1;
}

/* For each tensor with views, the first step after p that reads a view
 * of its storage (not the tensor itself) into vfirst, and that view into
 * vview; -1 where none does. An attention reads q, k and v as heads,
 * views of the projections: a projection's instance lives for the heads'
 * reads, which order_next_use does not see. One pass for all candidates
 * of a peak: a scan per candidate was a third of SD U-Net's -O2. */
static void
order_view_uses(const Dag *d, const int *s, int m, int p, int *vfirst, int *vview)
{
	for (int t = 0; t < d->nt; t++)
		vfirst[t] = -1;
	for (int x = p + 1; x < m; x++) {
		const DagNode *n = &d->node[s[x]];
		for (int j = 0; j < n->nin; j++) {
			int r = d->t[n->in[j]].view_src >= 0 ? dag_root(d, n->in[j]) : -1;
			if (r >= 0 && vfirst[r] < 0) {
				vfirst[r] = x;
				vview[r] = n->in[j];
			}
		}
	}
}

/* On Dags whose moves lv_eval scores in full, O->s becomes the anchor
 * they resume from (its prefix before the move). Bookkeeping, not an
 * evaluation of the search's. */
static void
order_anchor(Ord *O)
{
	long evals = O->S->evals;

	if (!O->M->simple)
		rm_eval_anchor(O->S, O->s, O->m);
	O->S->evals = evals;
}

/* Keeps O->buf[0..m) as O->s when its key is lower and its recompute
 * within the cap. */
static bool
order_keep(Ord *O, int m)
{
	int64_t pk;
	int np;

	O->evals--;
	if (!order_key(O->S, O->buf, m, &pk, &np, true) ||
	    pk > O->peak || (pk == O->peak && np >= O->npeak) ||
	    (O->maxcost >= 0 && (double)O->S->ev.recompute_cost > O->maxcost))
		return false;
	memcpy(O->s, O->buf, sizeof *O->s * (size_t)m);
	O->m = m;
	O->peak = pk;
	O->npeak = np;
	/* S->ev describes O->s in full again (the moves read its instances),
	 * when the shortcut scored it; not an evaluation of the search's,
	 * which S->evals counts */
	if (O->M->simple) {
		long evals = O->S->evals;
		order_key(O->S, O->s, m, &pk, &np, false);
		O->S->evals = evals;
	} else {
		order_anchor(O);
	}
	return true;
}

/* Tries O->s with step i moved to index j. */
static bool
order_try(Ord *O, int i, int j)
{
	order_move(O->s, O->m, i, j, O->buf);
	return order_keep(O, O->m);
}

/* The end of the latest instance of t made before step x (the first of
 * those made at one step), or -1. The instances are in step order. */
static int
order_end_before(const Ord *O, int t, int x)
{
	int best = -1;

	for (int k = O->last[t]; k >= 0; k = O->prev[k]) {
		if (O->inst[k].start >= x)
			continue;
		if (best >= 0 && O->inst[k].start < O->inst[best].start)
			break;
		best = k;
	}
	return best >= 0 ? O->inst[best].end : -1;
}

/* Appends to chain[0..*n) the recomputes node v needs before step x:
 * v after the producers of its inputs that are not live at step p (their
 * instances died before it), recursively. False past O->chain or at an
 * input nothing can make again; depth counts the nodes waiting on v. */
static bool
order_chain(const Ord *O, int v, int x, int p, int *chain, int *n, int depth)
{
	const DagNode *nd = &O->M->d->node[v];

	for (int k = 0; k < *n; k++)
		if (chain[k] == v)
			return true;
	if (nd->once || *n + depth >= O->chain)
		return false;
	for (int j = 0; j < nd->nin; j++) {
		int t = nd->in[j];
		if (O->M->d->t[t].from_start ||
		    (t != O->kill && order_end_before(O, t, x) >= p))
			continue;
		if (O->maker[t] < 0 ||
		    !order_chain(O, O->maker[t], x, p, chain, n, depth + 1))
			return false;
	}
	chain[(*n)++] = v;
	return true;
}

/* Tries recomputing node v right before step x after p, with the
 * recomputes its inputs need (more than longer_than of them), and kill
 * (>= 0) among them although it is live, so that the tensor v makes (or
 * kill, whose view v makes) need not live across p. */
static bool
order_try_chain(Ord *O, int v, int kill, int p, int x, int longer_than)
{
	int chain[RCHAIN], n = 0;
	bool ok;

	if (!O->remat || v < 0 || O->m + O->chain > O->capm)
		return false;
	O->kill = kill;
	ok = order_chain(O, v, x, p, chain, &n, 0);
	O->kill = -1;
	if (!ok || n <= longer_than)
		return false;
	memcpy(O->buf, O->s, sizeof *O->buf * (size_t)x);
	memcpy(O->buf + x, chain, sizeof *O->buf * (size_t)n);
	memcpy(O->buf + x + n, O->s + x, sizeof *O->buf * (size_t)(O->m - x));
	return order_keep(O, O->m + n);
}

/* Whether node v only adds to t: a contribution that nothing else waits
 * for (a cast of a tied weight's gradient into its f32 grad, an
 * embedding's scatter), so it may run any time before t's next use. */
static bool
adds_only_to(const Dag *d, int v, int t)
{
	const DagNode *n = &d->node[v];

	return n->once && n->nout == 0 && n->nacc == 1 && n->acc[0].tensor == t;
}

/* Tries postponing the contributions to to_end tensor t made at steps up
 * to p by nodes that only add to t, in their order, to just before t's
 * next use after p (fu), or to the end: then t is not live across p,
 * while their inputs are (Whisper's tied embedding: its f32 gradient,
 * 152 MiB, made at the head's backward, against the head's f16
 * contribution, 76 MiB, and the decoder embedding's). The order of the
 * contributions to every gradient stays as it was. */
static bool
order_try_postpone(Ord *O, int t, int p, int fu)
{
	const Dag *d = O->M->d;
	int to = fu > p ? fu : O->m, k = 0, nmv = 0;

	for (int x = 0; x < to; x++)
		if (!(x <= p && adds_only_to(d, O->s[x], t)))
			O->buf[k++] = O->s[x];
	for (int x = 0; x <= p && x < to; x++)
		if (adds_only_to(d, O->s[x], t)) {
			O->buf[k++] = O->s[x];
			nmv++;
		}
	memcpy(O->buf + k, O->s + to, sizeof *O->buf * (size_t)(O->m - to));
	return nmv > 0 && order_keep(O, O->m);
}

/* sc's first later read through a view of t (tensor with TF_VIEWED), from
 * order_view_uses, run once a peak (*done) into arrays made on the first
 * call. */
static void
view_use(Ord *O, Sel *sc, int t, int p, bool *done)
{
	const Dag *d = O->M->d;

	if (!O->vfirst) {
		O->vfirst = ar_alloc(O->a, sizeof *O->vfirst * ((size_t)d->nt + 1));
		O->vview = ar_alloc(O->a, sizeof *O->vview * ((size_t)d->nt + 1));
	}
	if (!*done)
		order_view_uses(d, O->s, O->m, p, O->vfirst, O->vview);
	*done = true;
	sc->vnext = O->vfirst[t];
	sc->view = O->vview[t];
}

/* Largest first, then by index (what the moves try first). */
static int
by_owned(const void *pa, const void *pb)
{
	const Sel *a = pa, *b = pb;

	if (a->owned != b->owned)
		return a->owned > b->owned ? -1 : 1;
	return (a->k > b->k) - (a->k < b->k);
}

/* Selects in O->sel the owning instances live across step p of the
 * current evaluation (in S->ev, copied to O->inst), largest first. A
 * sort, not insertion: a 10k-step stack has a thousand instances live
 * across its peak, and every move sorts them again. */
static int
order_select(Ord *O, int p)
{
	const MemEval *ev = &O->S->ev;
	int ni = 0;

	memcpy(O->inst, ev->inst, sizeof *O->inst * (size_t)ev->ninst);
	O->ninst = ev->ninst;
	for (int t = 0; t < O->M->d->nt; t++)
		O->last[t] = -1;
	for (int k = 0; k < ev->ninst; k++) {
		O->prev[k] = O->last[O->inst[k].tensor];
		O->last[O->inst[k].tensor] = k;
	}
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &O->inst[k];
		if (in->start >= 0 && in->start <= p && in->end > p && in->owned > 0)
			O->sel[ni++] = (Sel){in->owned, k, -1, -1, -1};
	}
	qsort(O->sel, (size_t)ni, sizeof *O->sel, by_owned);
	return ni;
}

/* One improving move around the first peak step, or false: for the
 * instances live across it, largest first, the step making one moves to
 * just before its next use after the peak, or the step last using one to
 * the earliest index it may take, when that is not after the peak, or
 * (O->remat) it is recomputed before that next use with a short chain;
 * where none of those is left, with a longer chain (the stem of Whisper's
 * encoder recomputed after its first layer's backward; LLaMA's first
 * layer from the embedding). */
static bool
order_step(Ord *O)
{
	const Dag *d = O->M->d;
	int p = O->S->ev.peak_step, ni = order_select(O, p);
	bool vdone = false;     /* order_view_uses ran for this peak */

	O->chain = RCHAIN_SHORT;
	for (int c = 0; c < ni && O->evals > 0; c++) {
		const Instance *in = &O->inst[O->sel[c].k];
		int fu = order_next_use(d, O->s, O->m, p, in->tensor), early;
		Sel *sc = &O->sel[c];
		sc->next = fu;
		if (fu > p && fu - 1 > in->start && order_try(O, in->start, fu - 1))
			return true;
		if (fu > p && O->evals > 0 &&
		    order_try_chain(O, O->s[in->start], -1, p, fu, 0))
			return true;
		if ((O->tflag[in->tensor] & TF_VIEWED) && O->remat)
			view_use(O, sc, in->tensor, p, &vdone);
		if (sc->vnext > p && O->evals > 0 &&
		    order_try_chain(O, O->maker[sc->view], in->tensor, p, sc->vnext, 0))
			return true;
		if (d->t[in->tensor].to_end && (O->tflag[in->tensor] & TF_POSTPONABLE) &&
		    O->evals > 0 &&
		    order_try_postpone(O, in->tensor, p, fu))
			return true;
		if (d->t[in->tensor].to_end || O->evals <= 0)
			continue;
		early = order_earliest(O->M, O->s, in->end);
		if (early <= p && early < in->end && order_try(O, in->end, early))
			return true;
	}
	/* the loop above went through every candidate (else no evaluation
	 * is left), so each one's next use is known */
	O->chain = O->longest;
	for (int c = 0; O->chain > RCHAIN_SHORT && c < ni && O->evals > 0; c++) {
		const Sel *sc = &O->sel[c];
		if (sc->next > p && order_try_chain(O, O->s[O->inst[sc->k].start], -1, p,
		                                    sc->next, RCHAIN_SHORT))
			return true;
		if (sc->vnext > p && O->evals > 0 &&
		    order_try_chain(O, O->maker[sc->view], O->inst[sc->k].tensor, p,
		                    sc->vnext, RCHAIN_SHORT))
			return true;
	}
	return false;
}

/* Each tensor's TF_ flags. */
static unsigned char *
order_flags(const Dag *d, Arena *a)
{
	unsigned char *f = ar_alloc(a, (size_t)d->nt + 1);

	for (int t = 0; t < d->nt; t++) {
		int r = d->t[t].view_src >= 0 ? dag_root(d, t) : -1;
		if (r >= 0)
			f[r] |= TF_VIEWED;
	}
	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		if (n->nacc == 1 && adds_only_to(d, v, n->acc[0].tensor))
			f[n->acc[0].tensor] |= TF_POSTPONABLE;
	}
	return f;
}

/* The recomputable node making each tensor, or -1. */
static int *
order_makers(const Dag *d, Arena *a)
{
	int *maker = ar_alloc(a, sizeof *maker * ((size_t)d->nt + 1));

	for (int t = 0; t < d->nt; t++)
		maker[t] = -1;
	for (int v = d->nnode - 1; v >= 0; v--)
		for (int j = 0; !d->node[v].once && j < d->node[v].nout; j++)
			maker[d->node[v].out[j]] = v;
	return maker;
}

/* Lowers the peak of the schedule s[0..*m) by moving single steps (any
 * step: each node runs as often as before, so the recompute cost stays)
 * and, with chain > 0, by recomputing what lives across the peak before
 * its next use within maxcost (>= 0, or -1: any), at most chain steps a
 * move (RCHAIN_SHORT while such a move is left); keeps the first change that lowers
 * (peak, steps at the peak), with at most evals evaluations. The result
 * lives in a (*m updated); NULL when s is invalid. S->ev describes it. */
static int *
order_improve(RmScorer *S, const int *s, int *m, long evals, double maxcost,
              int chain, Arena *a)
{
	const RmModel *M = S->m;
	Arena step = {0};               /* each move's */
	bool remat = chain > 0;
	Ord O = {M, S, NULL, NULL, *m, *m + (remat ? RTOTAL : 0), 0, 0, evals,
	         maxcost, remat, NULL, NULL, 0, NULL, RCHAIN_SHORT, chain, NULL, NULL,
	         NULL, NULL, NULL, NULL, -1};

	O.s = ar_alloc(a, sizeof *O.s * ((size_t)O.capm + 1));
	O.buf = ar_alloc(a, sizeof *O.buf * ((size_t)O.capm + 1));
	O.maker = order_makers(M->d, a);
	O.tflag = order_flags(M->d, a);
	O.a = a;
	memcpy(O.s, s, sizeof *O.s * (size_t)*m);
	order_anchor(&O);       /* then order_key reads its evaluation */
	if (!order_key(S, O.s, O.m, &O.peak, &O.npeak, false))
		return NULL;
	while (O.evals > 0) {
		/* order_select fills them before any read: not zeroed */
		O.inst = ar_array_raw(&step, (size_t)S->ev.ninst + 1, sizeof *O.inst);
		O.sel = ar_array_raw(&step, (size_t)S->ev.ninst + 1, sizeof *O.sel);
		O.prev = ar_array_raw(&step, (size_t)S->ev.ninst + 1, sizeof *O.prev);
		O.last = ar_array_raw(&step, (size_t)M->d->nt + 1, sizeof *O.last);
		bool moved = order_step(&O);
		ar_free(&step);
		if (!moved)
			break;
	}
	order_key(S, O.s, O.m, &O.peak, &O.npeak, false);      /* S->ev describes it */
	*m = O.m;
	return O.s;
}

/* The bytes ready node v adds when it runs now: its outputs less the
 * inputs it reads last (rd: each tensor's reads left). */
static int64_t
ready_bytes(const RmModel *M, const int *rd, int v)
{
	const Dag *d = M->d;
	const DagNode *n = &d->node[v];
	int64_t dl = 0;

	for (int j = 0; j < n->nout; j++)
		dl += dag_owned(d, n->out[j]);
	RmRow uses = rm_uses(M, v);
	for (int u = uses.lo; u < uses.hi; u++)
		if (rd[M->use[u]] == 1 && !d->t[M->use[u]].to_end)
			dl -= dag_owned(d, M->use[u]);
	return dl;
}

/* Tensor t has one read left: its reader (cnt: edges it waits for, -1
 * once it ran), when ready, now frees t when it runs (ready_bytes). */
static void
last_read(const RmModel *M, const int *rofs, const int *reader,
          const int *cnt, int64_t *dl, int t)
{
	const Dag *d = M->d;

	if (d->t[t].to_end)
		return;
	RmRow rs = rm_row(rofs, t, d->nt);
	for (int i = rs.lo; i < rs.hi; i++)
		if (cnt[reader[i]] >= 0) {
			if (cnt[reader[i]] == 0)
				dl[reader[i]] -= dag_owned(d, t);
			return;
		}
}

/* Another order of d's nodes for the simulation: a topological order of
 * the data edges (every contribution to a gradient before its reads, a
 * backward node after its forward node, the contributions to a gradient
 * in base order: the space the exact solver searches too), taking at each step the ready node that adds the
 * fewest bytes (seed 0; ties by base position), or a random ready node.
 * False on a cycle. */
bool
rm_topo_order(const RmModel *M, uint64_t seed, int *out)
{
	const Dag *d = M->d;
	Arena a = {0};          /* the call's scratch */
	int nn = d->nnode, nt = d->nt, ne = 0, k = 0;
	int *maker = ar_alloc(&a, ((size_t)nt + 1) * sizeof *maker);
	int *cnt = ar_alloc(&a, ((size_t)nn + 1) * sizeof *cnt);
	int *rd = ar_alloc(&a, ((size_t)nt + 1) * sizeof *rd);
	int *ready = ar_alloc(&a, ((size_t)nn + 1) * sizeof *ready);
	int *eofs = ar_alloc(&a, ((size_t)nn + 2) * sizeof *eofs);
	int *edge, nready = 0;
	bool ok;

	/* edges: maker of a used tensor -> user; contributor -> readers;
	 * contributor -> the next contributor to the same gradient */
	for (int t = 0; t < nt; t++)
		maker[t] = -1;
	for (int v = 0; v < nn; v++)
		for (int j = 0; j < d->node[v].nout; j++)
			maker[d->node[v].out[j]] = v;
	for (int i = 0; i < M->nuses; i++)
		rd[M->use[i]]++;
	/* readers of each tensor, CSR */
	int *rofs = ar_alloc(&a, ((size_t)nt + 2) * sizeof *rofs);
	int *reader = ar_alloc(&a, ((size_t)M->nuses + 1) * sizeof *reader);
	for (int t = 0; t < nt; t++)
		rofs[t + 1] = rofs[t] + rd[t];
	for (int v = 0; v < nn; v++) {
		RmRow uses = rm_uses(M, v);
		for (int i = uses.lo; i < uses.hi; i++)
			reader[rofs[M->use[i] + 1] - rd[M->use[i]]--] = v;
	}
	for (int i = 0; i < M->nuses; i++)
		rd[M->use[i]]++;
	for (int v = 0; v < nn; v++) {
		RmRow uses = rm_uses(M, v);
		for (int i = uses.lo; i < uses.hi; i++)
			ne += maker[M->use[i]] >= 0;
		for (int j = 0; j < d->node[v].nacc; j++)
			ne += rd[d->node[v].acc[j].tensor];
	}
	ne += nn + M->naprev;
	edge = ar_alloc(&a, ((size_t)ne + 1) * sizeof *edge);
	int *efrom = ar_alloc(&a, ((size_t)ne + 1) * sizeof *efrom);
	ne = 0;
	for (int v = 0; v < nn; v++) {
		if (d->node[v].fwd_plus1 > 0) {
			efrom[ne] = d->node[v].fwd_plus1 - 1;
			edge[ne++] = v;
		}
		RmRow uses = rm_uses(M, v);
		for (int i = uses.lo; i < uses.hi; i++)
			if (maker[M->use[i]] >= 0 && maker[M->use[i]] != v) {
				efrom[ne] = maker[M->use[i]];
				edge[ne++] = v;
			}
		RmRow ap = rm_row(M->aofs, v, nn);
		for (int i = ap.lo; i < ap.hi; i++) {
			efrom[ne] = M->aprev[i];
			edge[ne++] = v;
		}
		for (int j = 0; j < d->node[v].nacc; j++) {
			RmRow rs = rm_row(rofs, d->node[v].acc[j].tensor, nt);
			for (int i = rs.lo; i < rs.hi; i++)
				if (reader[i] != v) {
					efrom[ne] = v;
					edge[ne++] = reader[i];
				}
		}
	}
	int *sorted = ar_alloc(&a, ((size_t)ne + 1) * sizeof *sorted);
	for (int e = 0; e < ne; e++) {
		eofs[efrom[e] + 2]++;
		cnt[edge[e]]++;
	}
	for (int v = 0; v < nn; v++)
		eofs[v + 2] += eofs[v + 1];
	for (int e = 0; e < ne; e++)
		sorted[eofs[efrom[e] + 1]++] = edge[e];
	/* each ready node's ready_bytes, kept as the reads left fall (seed 0):
	 * the greedy pick reads them for every ready node at every step (6%
	 * of -O2 on MoE at 8 ZeRO-3 ranks when computed there) */
	int64_t *dl = ar_alloc(&a, ((size_t)nn + 1) * sizeof *dl);
	for (int v = 0; v < nn; v++)
		if (cnt[v] == 0) {
			dl[v] = seed ? 0 : ready_bytes(M, rd, v);
			ready[nready++] = v;
		}
	while (nready > 0) {
		int bi = 0;
		if (seed) {
			seed ^= seed << 13;
			seed ^= seed >> 7;
			seed ^= seed << 17;
			bi = (int)(seed % (uint64_t)nready);
		} else {
			int64_t bd = 0;
			for (int i = 0; i < nready; i++) {
				int64_t di = dl[ready[i]];
				if (i == 0 || di < bd || (di == bd &&
				    M->pos[ready[i]] < M->pos[ready[bi]])) {
					bd = di;
					bi = i;
				}
			}
		}
		int v = ready[bi];
		ready[bi] = ready[--nready];
		out[k++] = v;
		cnt[v] = -1;            /* ran: no edge into it is left */
		RmRow uses = rm_uses(M, v);
		for (int u = uses.lo; u < uses.hi; u++)
			if (--rd[M->use[u]] == 1 && !seed)
				last_read(M, rofs, reader, cnt, dl, M->use[u]);
		RmRow succ = rm_row(eofs, v, nn);
		for (int e = succ.lo; e < succ.hi; e++)
			if (--cnt[sorted[e]] == 0) {
				dl[sorted[e]] = seed ? 0 : ready_bytes(M, rd, sorted[e]);
				ready[nready++] = sorted[e];
			}
	}
	ok = k == nn && nn == d->nbase;
	ar_free(&a);
	return ok;
}

const int *
rm_least_bytes_order(RmScorer *S, RmRecipe *R)
{
	const RmModel *M = S->m;
	long size = R->eff->size, work = R->eff->lborder_work;

	if (R->lborder_done)
		return R->lborder;
	R->lborder_done = true;
	R->lborder = ar_alloc(&R->mem, sizeof *R->lborder * ((size_t)M->d->nnode + 1));
	if (!rm_topo_order(M, 0, R->lborder)) {
		R->lborder = NULL;
		return NULL;
	}
	Arena a = {0};
	int m = M->n, *s = order_improve(S, R->lborder, &m, work / size + 1, 0,
	                                 0, &a);

	if (s)
		memcpy(R->lborder, s, sizeof *s * (size_t)m);
	ar_free(&a);
	return R->lborder;
}

/* Whether plan a comes before plan b: smaller peak, then cost. */
static bool
plan_before(const RmCand *a, const RmCand *b)
{
	return a->peak < b->peak || (a->peak == b->peak && a->cost < b->cost);
}

/* Up to k valid plans of the pool from its from'th on within cap (< 0:
 * none), the best first, each (peak, cost) once, into pick; how many. */
static int
best_plans(const RmPool *pool, int from, double cap, int k, int *pick)
{
	int np = 0;

	for (int i = from; i < pool->n; i++) {
		const RmCand *c = &pool->c[i];
		bool dup = false;
		int j;
		if (!c->valid || (cap >= 0 && (double)c->cost > cap))
			continue;
		for (j = 0; j < np && !plan_before(c, &pool->c[pick[j]]); j++)
			if ((dup = c->peak == pool->c[pick[j]].peak &&
			           c->cost == pool->c[pick[j]].cost))
				break;
		if (dup || j >= k)
			continue;
		if (np < k)
			np++;
		memmove(pick + j + 1, pick + j, sizeof *pick * (size_t)(np - 1 - j));
		pick[j] = i;
	}
	return np;
}

void
rm_reorder_pool(RmScorer *S, const RmRecipe *R, RmPool *pool, double cap, int k, int from,
                long work)
{
	Arena a = {0};
	int *pick = ar_alloc(&a, sizeof *pick * ((size_t)k + 1));
	int np = best_plans(pool, from, cap, k, pick);

	for (int i = 0; i < np; i++) {
		int m = 0;
		const int *st = rm_cand_steps(S, &pool->c[pick[i]], &m);
		long evals = work / (k * ((long)m + R->eff->size)) + 1;
		int *s;
		/* order_improve copies st first, so a build's S->b.step is safe */
		if (st && (s = order_improve(S, st, &m, evals, cap, RCHAIN, &a)) &&
		    S->ev.peak < pool->c[pick[i]].peak)
			rm_pool_add_sched(pool, s, m, &S->ev);
	}
	ar_free(&a);
}
