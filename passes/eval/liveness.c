/* passes/eval/liveness.c -- the liveness evaluator: for one schedule of a Dag,
 * which instance serves each use, how long every instance lives, the memory
 * at every step and the peak (memory-model.md, "Liveness"; dag.h).
 *
 * One pass over the steps resolves uses and productions (cur[t] is the
 * instance a use of tensor t gets now); a second fixes the ends of views'
 * bases; per-step sums come from a difference array, so the whole is
 * O(steps + uses). Fills every field of MemEval; arrays live in the caller's
 * arena. The planners call it thousands of times.
 *
 * Most of those schedules are one schedule with a move applied: the steps
 * before the move are the same, and so is the first pass's state there
 * (which instance serves each tensor, each instance's end so far), as it
 * depends on the steps before alone. An anchor (LvAnchor) is one
 * evaluation that kept that state at a few steps (snapshots); lv_eval_from
 * restores the last snapshot within the prefix a schedule shares with the
 * anchor's and runs the first pass from there. The ends, the per-step sums
 * and the peak depend on later steps too, so the passes after the first
 * run in full; the result is lv_eval's, field for field, but for the
 * breakdown at the peak, which only a report reads (lv_breakdown). Its
 * instances, kinds, products and temporaries live in arrays the anchor
 * reuses, whose prefix up to the last resume is still the anchor's. */
#include <stdarg.h>
#include <string.h>

#include "eval.h"

typedef struct Lv {
	const Dag *d;
	const Schedule *s;
	MemEval *ev;
	int *cur;               /* [nt] instance serving a use of t now, or -1 */
	int *readat;            /* [nt] last step that read t, or -1 */
	bool *seen;             /* [nnode] node ran before the current step */
	int *pend;              /* [maxprod] bases of the current step's products */
	int *roots;             /* CSR by step: roots of the instances serving
	                           the step's inputs, then -1 - root of each
	                           gradient an out_of_place sum replaces; only
	                           lv_sum_phase reads them, so NULL when no
	                           step makes such a sum (2.4 MB of 300k ops) */
	int *roots_at;          /* [nsteps + 1], or NULL with roots */
	int nroots;
	Arena scratch;          /* the arrays above and the difference array */
	Arena *a;               /* the caller's: MemEval's arrays */
} Lv;

void
ev_fail(MemEval *ev, const char *fmt, ...)
{
	va_list ap;

	if (!ev->valid)
		return;
	ev->valid = false;
	va_start(ap, fmt);
	err_vformat(ev->error, sizeof ev->error, NULL, 0, 0, fmt, ap);
	va_end(ap);
}

/* Appends an instance of t produced at step (-1: before step 0). */
static int
lv_new(Lv *L, int t, int step, int base)
{
	MemEval *ev = L->ev;
	const DagTensor *dt = &L->d->t[t];
	Instance *in = &ev->inst[ev->ninst];
	int k = ev->ninst++;

	in->tensor = t;
	in->start = step;
	in->end = step;
	in->replaces = 0;
	in->to_end = dt->to_end;
	if (base >= 0) {
		in->owned = 0;
		in->base = base;
	} else {
		in->owned = dt->persistent_view ? 0 : dt->bytes;
		in->base = k;
	}
	return k;
}

/* A use of t at step i: the serving instance, or -1 (and the schedule is
 * invalid). The served instance lives at least through step i. */
static int
lv_use(Lv *L, int i, int t)
{
	int k = L->cur[t];

	if (k < 0) {
		ev_fail(L->ev, "step %d ('%s') uses '%s' before any step produces it",
		        i, L->d->node[L->s->step[i]].name, L->d->t[t].name);
		return -1;
	}
	L->ev->inst[k].end = i;
	L->readat[t] = i;
	return k;
}

/* The root instance a new view of tensor t made at step i aliases: -1 for
 * an owning tensor, -2 when the view has nothing to alias. */
static int
lv_view_base(Lv *L, int i, int t, int src)
{
	int k;

	if (src < 0 || L->d->t[t].persistent_view)
		return -1;
	k = lv_use(L, i, src);
	return k < 0 ? -2 : L->ev->inst[k].base;
}

/* Step i runs node v: uses, accumulation temporaries, productions. */
static void
lv_step(Lv *L, int i, int v)
{
	const DagNode *n = &L->d->node[v];
	MemEval *ev = L->ev;
	int64_t temp = dag_workspace(L->d, v);
	int np = 0;

	if (L->roots)
		L->roots_at[i] = L->nroots;
	for (int j = 0; j < n->nin; j++) {
		int k = lv_use(L, i, n->in[j]);
		if (k >= 0 && L->roots)
			L->roots[L->nroots++] = ev->inst[k].base;
	}
	for (int j = 0; j < n->nout; j++) {
		int t = n->out[j];
		L->pend[np++] = lv_view_base(L, i, t, L->d->t[t].view_src);
	}
	for (int j = 0; j < n->nacc; j++) {
		const DagAcc *ac = &n->acc[j];
		int t = ac->tensor;
		if (L->cur[t] < 0) {
			L->pend[np++] = lv_view_base(L, i, t, ac->view_src);
			continue;
		}
		if (L->readat[t] >= 0 && L->readat[t] < i)
			ev_fail(L->ev, "step %d ('%s') contributes to '%s' after step %d read it",
			        i, n->name, L->d->t[t].name, L->readat[t]);
		ev->inst[L->cur[t]].end = i;
		if (!ac->out_of_place || ac->view_src < 0)
			temp = ck_sat_add(temp, L->d->t[t].bytes);  /* lv_sum checks */
		if (ac->out_of_place) {
			L->pend[np++] = -3;     /* the sum: a new owning instance */
			L->roots[L->nroots++] = -1 - ev->inst[L->cur[t]].base;
		}
	}
	for (int j = 0; j < np; j++)
		if (L->pend[j] == -2)
			ev_fail(L->ev, "step %d ('%s') makes a view with no base", i, n->name);
	if (!ev->valid)
		return;
	np = 0;
	for (int j = 0; j < n->nout; j++) {
		int t = n->out[j];
		L->cur[t] = lv_new(L, t, i, L->pend[np++]);
	}
	for (int j = 0; j < n->nacc; j++) {
		int t = n->acc[j].tensor;
		if (L->cur[t] < 0) {
			L->cur[t] = lv_new(L, t, i, L->pend[np++]);
		} else if (n->acc[j].out_of_place) {
			np++;
			L->cur[t] = lv_new(L, t, i, -1);
			ev->inst[L->cur[t]].replaces = 1;
		}
	}
	if (temp > 0) {
		if (!ev->temp_bytes)    /* the first step with any */
			ev->temp_bytes = ar_alloc(L->a, sizeof *ev->temp_bytes * (size_t)(ev->nsteps + 1));
		ev->temp_bytes[i] = temp;
	}
}

/* Checks step i's node and labels the step. */
static bool
lv_check_step(Lv *L, int i)
{
	const Dag *d = L->d;
	int v = L->s->step[i];

	if (v < 0 || v >= d->nnode) {
		ev_fail(L->ev, "step %d names node %d, which does not exist", i, v);
		return false;
	}
	if (d->node[v].once && L->seen[v]) {
		ev_fail(L->ev, "step %d runs '%s' again, but it runs once", i,
		        d->node[v].name);
		return false;
	}
	if (d->node[v].fwd_plus1 > 0 && !L->seen[d->node[v].fwd_plus1 - 1]) {
		ev_fail(L->ev, "step %d runs the backward of '%s' before its forward", i,
		        d->node[v].name);
		return false;
	}
	L->ev->kind[i] = dag_step_kind(d, L->s, i, L->seen);
	if (L->ev->kind[i] == STEP_RECOMPUTE)
		L->ev->recompute_cost = ck_sat_add(L->ev->recompute_cost, d->node[v].cost);
	L->seen[v] = true;
	return true;
}

/* The first step at which in's owned bytes count, or -1: at none. */
static int
lv_counted_from(const Instance *in)
{
	int lo = in->start < 0 ? 0 : in->start;

	return in->owned == 0 || in->end < lo ? -1 : lo;
}

/* Ends of to_end instances, of views' bases, and unused inputs, then each
 * instance's bytes into the difference array diff (lv_sum), in one pass
 * from the last instance down: a view comes after its base, so an
 * instance's end is final when the pass reaches it. Returns the sum of
 * the bytes put in, or -1 past 2^63: then diff is lv_diff_checked's to
 * make. Under that sum no entry of diff nor any prefix sum of it wraps,
 * so lv_sum need not check each step (a tenth of the evaluation). */
static int64_t
lv_fix_ends(Lv *L, int64_t *diff)
{
	MemEval *ev = L->ev;
	int last = ev->nsteps - 1, nfrom = ev->step_prod[1];
	int64_t total = 0;
	bool ok = true;

	for (int k = ev->ninst - 1; k >= 0; k--) {
		Instance *in = &ev->inst[k];
		if (in->to_end)
			in->end = last;
		if (in->base != k && ev->inst[in->base].end < in->end)
			ev->inst[in->base].end = in->end;
		if (k < nfrom && in->end < 0)
			in->owned = 0;
		int lo = lv_counted_from(in);
		if (lo < 0)
			continue;
		ok &= ck_add(total, in->owned, &total);
		/* wraps only where the sum passed 2^63, and then is redone */
		diff[lo] = (int64_t)((uint64_t)diff[lo] + (uint64_t)in->owned);
		diff[in->end + 1] = (int64_t)((uint64_t)diff[in->end + 1] - (uint64_t)in->owned);
	}
	return ok ? total : -1;
}

/* lv_fix_ends' difference array again, each sum checked; false: one
 * passed 2^63. */
static bool
lv_diff_checked(const MemEval *ev, int64_t *diff)
{
	bool ok = true;

	memset(diff, 0, sizeof *diff * (size_t)(ev->nsteps + 1));
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		int lo = lv_counted_from(in);
		if (lo < 0)
			continue;
		ok &= ck_add(diff[lo], in->owned, &diff[lo]);
		ok &= ck_sub(diff[in->end + 1], in->owned, &diff[in->end + 1]);
	}
	return ok;
}

/* Is x among list[lo..hi)? The lists are a step's inputs: a handful. */
static bool
lv_listed(const int *list, int lo, int hi, int x)
{
	for (int j = lo; j < hi; j++)
		if (list[j] == x)
			return true;
	return false;
}

/* dag.h, DagAcc.out_of_place: step i's sums are made after its inputs
 * that die at i are freed, except the gradients being summed. live counts
 * every instance; returns the larger of the two phases. */
static int64_t
lv_sum_phase(Lv *L, int i, int64_t live)
{
	const MemEval *ev = L->ev;
	int64_t total = 0, most = 0, dying = 0;
	int lo, hi;

	if (!L->roots)          /* no step makes a sum: nothing replaces */
		return live;
	for (int k = ev->step_prod[i + 1]; k < ev->step_prod[i + 2]; k++)
		if (ev->inst[k].replaces) {
			total += ev->inst[k].owned;
			if (ev->inst[k].owned > most)
				most = ev->inst[k].owned;
		}
	if (total == 0)
		return live;
	lo = L->roots_at[i];    /* a sum replaced something: the roots exist */
	hi = L->roots_at[i + 1];
	for (int j = lo; j < hi; j++) {
		int r = L->roots[j];
		if (r < 0 || lv_listed(L->roots, lo, j, r) || lv_listed(L->roots, lo, hi, -1 - r))
			continue;
		if (ev->inst[r].end == i)
			dying += ev->inst[r].owned;
	}
	live -= total;
	return live - dying + most > live ? live - dying + most : live;
}

/* live_bytes from the difference array of owned bytes lv_fix_ends made in
 * live_bytes itself (step i's difference is read before its sum is
 * written there; a separate array was 2.4 MB of 300k steps at the
 * evaluation's peak), whose bytes add up to total (-1: past 2^63); peak. */
static void
lv_sum(Lv *L, int64_t total)
{
	MemEval *ev = L->ev;
	int n = ev->nsteps;
	int64_t *diff = ev->live_bytes;
	int64_t pers = 0, run = 0;
	bool ok = true, fast;

	/* checked: a Dag within DAG_LIMIT never overflows, any other is
	 * refused rather than given a wrapped peak */
	ok &= ev->recompute_cost < INT64_MAX;
	for (int c = 0; c < CAT_COUNT; c++)
		ok &= ck_add(pers, L->d->persistent[c], &pers);
	int64_t most;   /* the most any step's owned bytes can come to */
	fast = total >= 0 && ck_add(pers, total, &most);
	if (ok && !fast)
		ok = lv_diff_checked(ev, diff);
	ev->peak = pers;
	ev->peak_step = 0;
	for (int i = 0; i < n && ok; i++) {
		int64_t sum;
		if (fast) {
			run += diff[i];
			sum = pers + run;
		} else {
			ok &= ck_add(run, diff[i], &run);
			ok &= ck_add(pers, run, &sum);
		}
		if (ev->temp_bytes)
			ok &= ck_add(sum, ev->temp_bytes[i], &sum);
		ev->live_bytes[i] = lv_sum_phase(L, i, sum);
		if (ev->live_bytes[i] > ev->peak || i == 0) {
			ev->peak = ev->live_bytes[i];
			ev->peak_step = i;
		}
	}
	diff[n] = 0;
	if (!ok) {
		memset(ev->live_bytes, 0, sizeof *ev->live_bytes * (size_t)(n + 1));
		ev_fail(L->ev, "memory or recompute cost passes 2^63 (see docs/limits.md)");
		ev->peak = 0;
		ev->peak_step = 0;
		return;
	}
}

void
lv_breakdown(const Dag *d, MemEval *ev)
{
	int n = ev->nsteps;

	memset(ev->breakdown, 0, sizeof ev->breakdown);
	if (!ev->valid)
		return;
	for (int c = 0; c < CAT_COUNT; c++)
		ev->breakdown[c] = d->persistent[c];
	/* instances are made in step order: those after the peak step's
	 * products start after it */
	for (int k = 0; n > 0 && k < ev->step_prod[ev->peak_step + 2]; k++) {
		Instance *in = &ev->inst[k];
		if (in->owned && in->start <= ev->peak_step && ev->peak_step <= in->end)
			ev->breakdown[d->t[in->tensor].cat] += in->owned;
	}
	if (n > 0)
		ev->breakdown[CAT_TEMPORARIES] += ev_temp(ev, ev->peak_step);
	/* a peak in the second phase of an out_of_place step: the breakdown
	 * lists the first phase's instances; the sum that replaces the dying
	 * inputs is a gradient */
	int64_t listed = 0;
	for (int c = 0; c < CAT_COUNT; c++)
		listed += ev->breakdown[c];
	if (n > 0)
		ev->breakdown[CAT_GRADIENTS] += ev->peak - listed;
}

/* What lv_init_from sizes the arrays by, summed over some steps. */
typedef struct LvCount {
	int cap;                /* instances the steps produce */
	int nuse;               /* uses and contributions */
	int maxprod;            /* the most one step produces */
	bool sums;              /* some step makes an out_of_place sum */
	bool nosums;            /* no node of the Dag makes one: no need to look */
} LvCount;

/* What lv_count reads of each node, LV_SIZES ints a node: an anchor's
 * (each evaluation resumed from it counts its steps again, and a DagNode
 * read for each was a cache miss: 5% of -O2 on DenseNet at 8 ZeRO-3
 * ranks). */
enum { LV_PROD, LV_USES, LV_SUMS, LV_SIZES };

static int *
lv_sizes(const Dag *d, Arena *a)
{
	int *sz = ar_array(a, (size_t)d->nnode * LV_SIZES + 1, sizeof *sz);

	for (int v = 0; v < d->nnode; v++) {
		const DagNode *n = &d->node[v];
		sz[LV_SIZES * v + LV_PROD] = n->nout + n->nacc;
		sz[LV_SIZES * v + LV_USES] = n->nin + n->nacc;
		for (int j = 0; j < n->nacc; j++)
			sz[LV_SIZES * v + LV_SUMS] |= n->acc[j].out_of_place;
	}
	return sz;
}

/* c plus steps [from, to) of s, read from sz (lv_sizes) or else the Dag;
 * summed in locals (through c, every step stored them: c may alias sz). */
static void
lv_count(const Dag *d, const Schedule *s, int from, int to, const int *sz, LvCount *c)
{
	int cap = c->cap, nuse = c->nuse, maxprod = c->maxprod;
	bool sums = c->sums, look = !c->sums && !c->nosums;

	for (int i = from; i < to; i++) {
		int v = s->step[i];
		if (v < 0 || v >= d->nnode)
			continue;
		const DagNode *n = &d->node[v];
		const int *z = sz ? sz + LV_SIZES * v : NULL;
		int np = z ? z[LV_PROD] : n->nout + n->nacc;
		cap += np;
		nuse += z ? z[LV_USES] : n->nin + n->nacc;
		maxprod = np > maxprod ? np : maxprod;
		if (!look || sums)
			continue;
		if (z)
			sums = z[LV_SUMS];
		for (int j = 0; !z && !sums && j < n->nacc; j++)
			sums |= n->acc[j].out_of_place;
	}
	c->cap = cap;
	c->nuse = nuse;
	c->maxprod = maxprod;
	c->sums = sums;
}

/* The instances made before step 0. */
static int
lv_from_start(const Dag *d)
{
	int n = 0;

	for (int t = 0; t < d->nt; t++)
		n += d->t[t].from_start;
	return n;
}

/* Allocates ev's arrays and L's scratch for schedule s, whose steps
 * [0, from) count as c says (from 0: c zeroed). An anchor's sz (lv_sizes)
 * and nfrom (lv_from_start), or NULL and -1. From a step after 0 the
 * first pass's state is then restored (lv_restore), not set here. */
static void lv_work_arrays(LvAnchor *W, MemEval *ev, int cap, int n);

static void
lv_init_from(Lv *L, const Dag *d, const Schedule *s, MemEval *ev, Arena *a, int from,
             LvCount c, const int *sz, int nfrom, LvAnchor *work)
{
	int n = s->n, cap, maxprod, nuse;
	bool sums;

	memset(ev, 0, sizeof *ev);
	memset(L, 0, sizeof *L);
	L->d = d;
	L->s = s;
	L->ev = ev;
	L->a = a;
	ev->valid = true;
	ev->nsteps = n;
	lv_count(d, s, from, n, sz, &c);
	cap = c.cap + (nfrom >= 0 ? nfrom : lv_from_start(d));
	nuse = c.nuse;
	maxprod = c.maxprod > 1 ? c.maxprod : 1;
	sums = c.sums;
	/* kind and step_prod: every step writes its entry (lv_restore those
	 * before from), lv_run zeroes the rest of an invalid schedule's; not
	 * zeroed first (with the arrays below, 3% of -O2 on SD U-Net at 8
	 * ZeRO-3 ranks); live_bytes is lv_fix_ends' difference array */
	ev->live_bytes = ar_alloc(a, sizeof *ev->live_bytes * (size_t)(n + 1));
	if (work) {
		lv_work_arrays(work, ev, cap + 1, n);
	} else {
		ev->kind = ar_array_raw(a, (size_t)n + 1, sizeof *ev->kind);
		ev->step_prod = ar_array_raw(a, (size_t)n + 2, sizeof *ev->step_prod);
		ev->inst = ar_array_raw(a, (size_t)cap + 1, sizeof *ev->inst);  /* lv_new fills */
	}
	ar_init(&L->scratch);
	/* from a later step, lv_restore fills them */
	void *(*arr)(Arena *, size_t, size_t) = from > 0 ? ar_array_raw : ar_array;
	L->cur = arr(&L->scratch, (size_t)d->nt + 1, sizeof *L->cur);
	L->readat = arr(&L->scratch, (size_t)d->nt + 1, sizeof *L->readat);
	L->seen = arr(&L->scratch, (size_t)d->nnode + 1, sizeof *L->seen);
	/* written before they are read: each step's products, its roots */
	L->pend = ar_array_raw(&L->scratch, (size_t)maxprod, sizeof *L->pend);
	if (sums) {
		L->roots = ar_array_raw(&L->scratch, (size_t)nuse + 1, sizeof *L->roots);
		L->roots_at = ar_array_raw(&L->scratch, (size_t)n + 1, sizeof *L->roots_at);
	}
	for (int t = 0; from == 0 && t < d->nt; t++) {
		L->cur[t] = -1;
		L->readat[t] = -1;
	}
}

/* The first pass's state before step `at` that the anchor's final arrays
 * do not hold. */
typedef struct LvSnap {
	Arena mem;              /* the arrays below */
	int at, ninst, nroots;
	int64_t recompute_cost;
	LvCount count;          /* of steps [0, at) */
	int *cur, *readat;      /* [nt] */
	bool *seen;             /* [nnode] */
	int *end;               /* [ninst] each instance's end so far */
} LvSnap;

/* Snapshots every LV_SNAP_EVERY steps at least, LV_SNAPS at most, on
 * schedules of LV_ANCHOR_MAX steps at most (each costs about 9 bytes a
 * tensor and 4 an instance; the planners' moves are scored on far
 * shorter ones). */
enum { LV_SNAPS = 16, LV_SNAP_EVERY = 32, LV_ANCHOR_MAX = 1 << 20 };

struct LvAnchor {
	Arena mem;              /* sz: kept while d is */
	Arena keep;             /* the arrays step to roots_at: lv_keep's */
	const Dag *d;
	int n;
	int *step;              /* [n] the anchor's schedule */
	uint8_t *kind;          /* [n] */
	int *step_prod;         /* [n + 2] */
	Instance *inst;         /* [ninst] before lv_fix_ends */
	int64_t *temp;          /* [n] its temp_bytes, or NULL */
	int first_temp;         /* the first step with any, or n */
	int *roots, *roots_at;  /* Lv's, or NULL */
	bool sums;              /* some node of the Dag makes an out_of_place sum */
	int *sz, nfrom;         /* lv_sizes and lv_from_start of d */
	int every, nsnap;
	LvSnap snap[LV_SNAPS];
	/* lv_eval_from's arrays, reused: their first work_inst instances,
	 * work_steps steps' kinds and products and work_temp steps'
	 * temporaries are the anchor's (but
	 * the instances' ends and owned bytes, which an evaluation changes
	 * and lv_restore sets), so a resume copies only past those
	 * (copying the instances was 7% of -O2 on SD U-Net at 8 ZeRO-3
	 * ranks); an evaluation from them lives until the next one */
	Arena work;
	Instance *winst;
	uint8_t *wkind;
	int *wprod;
	int64_t *wtemp;                 /* the temporaries: work_temp steps */
	int wcap_inst, wcap_steps;      /* room: instances, steps */
	int work_inst, work_steps, work_temp;
};

static void
lv_snap(Lv *L, LvAnchor *A, int at)
{
	const Dag *d = L->d;
	LvSnap *p = &A->snap[A->nsnap];
	int ni = L->ev->ninst;

	p->count = A->nsnap ? A->snap[A->nsnap - 1].count : (LvCount){.nosums = !A->sums};
	lv_count(d, L->s, A->nsnap ? A->snap[A->nsnap - 1].at : 0, at, A->sz, &p->count);
	A->nsnap++;
	p->at = at;
	p->ninst = ni;
	p->nroots = L->nroots;
	p->recompute_cost = L->ev->recompute_cost;
	/* filled below: not zeroed first (4% of -O2 on MoE at 8 ZeRO-3 ranks) */
	ar_free(&p->mem);
	p->cur = ar_array_raw(&p->mem, (size_t)d->nt + 1, sizeof *p->cur);
	p->readat = ar_array_raw(&p->mem, (size_t)d->nt + 1, sizeof *p->readat);
	p->seen = ar_array_raw(&p->mem, (size_t)d->nnode + 1, sizeof *p->seen);
	p->end = ar_array_raw(&p->mem, (size_t)ni + 1, sizeof *p->end);
	memcpy(p->cur, L->cur, sizeof *p->cur * (size_t)d->nt);
	memcpy(p->readat, L->readat, sizeof *p->readat * (size_t)d->nt);
	memcpy(p->seen, L->seen, sizeof *p->seen * (size_t)d->nnode);
	for (int k = 0; k < ni; k++)
		p->end[k] = L->ev->inst[k].end;
}

/* Keeps what the anchor's snapshots resume with, from its first pass. */
static void
lv_keep(Lv *L, LvAnchor *A)
{
	const MemEval *ev = L->ev;
	int n = ev->nsteps;

	ar_free(&A->keep);
	A->temp = NULL;
	A->roots = A->roots_at = NULL;
	A->work_inst = A->work_steps = A->work_temp = 0;        /* the old anchor's */
	A->n = n;
	A->step = ar_array_raw(&A->keep, (size_t)n + 1, sizeof *A->step);
	A->kind = ar_array_raw(&A->keep, (size_t)n + 1, sizeof *A->kind);
	A->step_prod = ar_array_raw(&A->keep, (size_t)n + 2, sizeof *A->step_prod);
	A->inst = ar_array_raw(&A->keep, (size_t)ev->ninst + 1, sizeof *A->inst);
	memcpy(A->step, L->s->step, sizeof *A->step * (size_t)n);
	memcpy(A->kind, ev->kind, sizeof *A->kind * (size_t)n);
	memcpy(A->step_prod, ev->step_prod, sizeof *A->step_prod * (size_t)(n + 2));
	memcpy(A->inst, ev->inst, sizeof *A->inst * (size_t)ev->ninst);
	A->first_temp = 0;
	if (ev->temp_bytes) {
		A->temp = ar_array_raw(&A->keep, (size_t)n + 1, sizeof *A->temp);
		memcpy(A->temp, ev->temp_bytes, sizeof *A->temp * (size_t)n);
	}
	while (A->first_temp < n && ev_temp(ev, A->first_temp) == 0)
		A->first_temp++;
	if (L->roots) {
		A->roots = ar_array_raw(&A->keep, (size_t)L->nroots + 1, sizeof *A->roots);
		A->roots_at = ar_array_raw(&A->keep, (size_t)n + 1, sizeof *A->roots_at);
		memcpy(A->roots, L->roots, sizeof *A->roots * (size_t)L->nroots);
		memcpy(A->roots_at, L->roots_at, sizeof *A->roots_at * (size_t)(n + 1));
	}
}

/* The first pass over steps [from, n), snapshotting into A when non-NULL
 * (after its snapshot at from, if any), then the passes after it. */
static void
lv_run(Lv *L, int from, LvAnchor *A)
{
	const Dag *d = L->d;
	const Schedule *s = L->s;
	MemEval *ev = L->ev;
	int i;

	for (i = from; i < s->n && ev->valid; i++) {
		if (A && i > from && i % A->every == 0 && A->nsnap < LV_SNAPS)
			lv_snap(L, A, i);
		if (lv_check_step(L, i))
			lv_step(L, i, s->step[i]);
		else
			ev->kind[i] = 0;
		ev->step_prod[i + 2] = ev->ninst;
	}
	if (!ev->valid) {       /* the steps never reached, as lv_eval gave them */
		memset(ev->kind + i, 0, sizeof *ev->kind * (size_t)(s->n + 1 - i));
		memset(ev->step_prod + i + 2, 0, sizeof *ev->step_prod * (size_t)(s->n - i));
	}
	if (L->roots)
		L->roots_at[s->n] = L->nroots;
	for (int v = 0; v < d->nnode && ev->valid; v++)
		if (!L->seen[v])
			ev_fail(L->ev, "node '%s' never runs", d->node[v].name);
	if (!ev->valid) {
		ev->peak = 0;
		ev->peak_step = 0;
		return;
	}
	if (A)
		lv_keep(L, A);
	lv_sum(L, lv_fix_ends(L, ev->live_bytes));    /* [n + 1], zeroed */
}

/* The first pass's start: an instance of every from_start tensor. */
static void
lv_begin(Lv *L)
{
	const Dag *d = L->d;
	MemEval *ev = L->ev;

	if (d->nt > INST_TENSOR_MAX)    /* Instance.tensor would not hold it */
		ev_fail(ev, "%d tensors: more than %d (see docs/limits.md)", d->nt,
		        INST_TENSOR_MAX);
	for (int t = 0; t < d->nt && ev->valid; t++)
		if (d->t[t].from_start)
			L->cur[t] = lv_new(L, t, -1, -1);
	ev->step_prod[0] = 0;
	ev->step_prod[1] = ev->ninst;
}

/* lv_eval but the breakdown. */
static void
lv_eval_steps(const Dag *d, const Schedule *s, MemEval *ev, Arena *a)
{
	Lv L;

	lv_init_from(&L, d, s, ev, a, 0, (LvCount){0}, NULL, -1, NULL);
	lv_begin(&L);
	lv_run(&L, 0, NULL);
	ar_free(&L.scratch);
}

void
lv_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a)
{
	lv_eval_steps(d, s, ev, a);
	lv_breakdown(d, ev);
}

static void
lv_work_free(LvAnchor *A)
{
	ar_free(&A->work);
	A->winst = NULL;
	A->wkind = NULL;
	A->wprod = NULL;
	A->wtemp = NULL;
	A->wcap_inst = A->wcap_steps = 0;
	A->work_inst = A->work_steps = A->work_temp = 0;
}

/* ev's kinds, products and instances in W's reused arrays, grown (and
 * then holding nothing of the anchor's) to cap instances and n steps. */
static void
lv_work_arrays(LvAnchor *W, MemEval *ev, int cap, int n)
{
	if (cap > W->wcap_inst || n > W->wcap_steps) {
		int ci = cap > W->wcap_inst ? cap : W->wcap_inst;
		int cs = n > W->wcap_steps ? n : W->wcap_steps;
		lv_work_free(W);
		W->wcap_inst = ci + ci / 4;
		W->wcap_steps = cs + cs / 4;
		W->winst = ar_array_raw(&W->work, (size_t)W->wcap_inst, sizeof *W->winst);
		W->wkind = ar_array_raw(&W->work, (size_t)W->wcap_steps + 1, sizeof *W->wkind);
		W->wprod = ar_array_raw(&W->work, (size_t)W->wcap_steps + 2, sizeof *W->wprod);
		W->wtemp = ar_array_raw(&W->work, (size_t)W->wcap_steps + 1, sizeof *W->wtemp);
	}
	ev->inst = W->winst;
	ev->kind = W->wkind;
	ev->step_prod = W->wprod;
}

LvAnchor *
lv_anchor_new(Arena *a)
{
	LvAnchor *A = ar_alloc(a, sizeof *A);     /* zeroed: empty arenas */

	ar_init(&A->mem);
	ar_init(&A->keep);
	ar_init(&A->work);
	for (int k = 0; k < LV_SNAPS; k++)
		ar_init(&A->snap[k].mem);
	return A;
}

void
lv_anchor_free(LvAnchor *A)
{
	if (!A)
		return;
	ar_free(&A->mem);
	ar_free(&A->keep);
	lv_work_free(A);
	for (int k = 0; k < LV_SNAPS; k++)
		ar_free(&A->snap[k].mem);
	A->d = NULL;
	A->nsnap = 0;
	A->sz = NULL;
	A->roots = A->roots_at = NULL;
	A->temp = NULL;
}

/* Whether some node makes an out_of_place sum (sz: lv_sizes of its Dag):
 * then an anchor keeps the roots that a schedule resumed from it may
 * need, whether or not its own steps make one (lv_sum_phase finds no sum
 * all the same). */
static bool
sizes_have_sums(const int *sz, int nnode)
{
	for (int v = 0; v < nnode; v++)
		if (sz[LV_SIZES * v + LV_SUMS])
			return true;
	return false;
}

/* How many steps a[0..n) and b[0..n) share from the start: blocks by
 * memcmp, then one by one in the block that differs (the schedules
 * resumed share thousands of steps). */
static int
lv_shared(const int *a, const int *b, int n)
{
	enum { BLOCK = 64 };
	int q = 0;

	while (q + BLOCK <= n && !memcmp(a + q, b + q, sizeof *a * BLOCK))
		q += BLOCK;
	while (q < n && a[q] == b[q])
		q++;
	return q;
}

/* The last snapshot of A within the steps s shares with A's schedule, or
 * NULL. */
static const LvSnap *
lv_resume_point(const LvAnchor *A, const Dag *d, const Schedule *s)
{
	int n, p, k;

	if (!A || A->d != d || A->nsnap == 0)
		return NULL;
	n = s->n < A->n ? s->n : A->n;
	p = lv_shared(s->step, A->step, n);
	for (k = A->nsnap - 1; k >= 0 && A->snap[k].at > p; k--)
		;
	return k >= 0 ? &A->snap[k] : NULL;
}

/* The first pass's state before step p->at, from the anchor. */
static void
lv_restore(Lv *L, LvAnchor *A, const LvSnap *p)
{
	const Dag *d = L->d;
	MemEval *ev = L->ev;
	int at = p->at;

	bool work = ev->inst == A->winst;      /* in A's arrays (lv_work_arrays) */
	int ki = 0, ks = 0;     /* held already there */

	if (work) {
		ki = A->work_inst < p->ninst ? A->work_inst : p->ninst;
		ks = A->work_steps < at ? A->work_steps : at;
		for (int k = 0; k < ki && k < A->nfrom; k++)    /* lv_fix_ends' */
			ev->inst[k].owned = A->inst[k].owned;
	}
	memcpy(ev->inst + ki, A->inst + ki, sizeof *ev->inst * (size_t)(p->ninst - ki));
	for (int k = 0; k < p->ninst; k++)
		ev->inst[k].end = p->end[k];
	ev->ninst = p->ninst;
	memcpy(ev->kind + ks, A->kind + ks, sizeof *ev->kind * (size_t)(at - ks));
	memcpy(ev->step_prod + ks, A->step_prod + ks, sizeof *ev->step_prod * (size_t)(at + 2 - ks));
	ev->recompute_cost = p->recompute_cost;
	if (A->first_temp < at) {
		int n = ev->nsteps, kt = 0;
		if (work) {     /* its room is the kinds' */
			ev->temp_bytes = A->wtemp;
			kt = A->work_temp < at ? A->work_temp : at;
			A->work_temp = at;
		} else {
			ev->temp_bytes = ar_array_raw(L->a, (size_t)n + 1, sizeof *ev->temp_bytes);
		}
		memcpy(ev->temp_bytes + kt, A->temp + kt, sizeof *ev->temp_bytes * (size_t)(at - kt));
		memset(ev->temp_bytes + at, 0, sizeof *ev->temp_bytes * (size_t)(n + 1 - at));
	}
	memcpy(L->cur, p->cur, sizeof *L->cur * (size_t)d->nt);
	memcpy(L->readat, p->readat, sizeof *L->readat * (size_t)d->nt);
	memcpy(L->seen, p->seen, sizeof *L->seen * (size_t)d->nnode);
	if (L->roots) {
		memcpy(L->roots, A->roots, sizeof *L->roots * (size_t)p->nroots);
		memcpy(L->roots_at, A->roots_at, sizeof *L->roots_at * (size_t)at);
		L->nroots = p->nroots;
	}
}

/* lv_eval's first pass from A's snapshot p, which s shares the steps
 * before with A's schedule, snapshotting into `into` when non-NULL, else
 * in A's work arrays. */
static void
lv_resume(LvAnchor *A, const LvSnap *p, const Dag *d, const Schedule *s,
          MemEval *ev, Arena *a, LvAnchor *into)
{
	Lv L;

	lv_init_from(&L, d, s, ev, a, p->at, p->count, A->sz, A->nfrom, into ? NULL : A);
	lv_restore(&L, A, p);
	if (!into) {    /* what the evaluation leaves of the anchor's */
		A->work_inst = p->ninst;
		A->work_steps = p->at;
	}
	lv_run(&L, p->at, into);
	ar_free(&L.scratch);
}

void
lv_eval_from(LvAnchor *A, const Dag *d, const Schedule *s, MemEval *ev, Arena *a)
{
	const LvSnap *p = lv_resume_point(A, d, s);

	if (p)
		lv_resume(A, p, d, s, ev, a, NULL);
	else
		lv_eval_steps(d, s, ev, a);
}

/* A's first pass again from its snapshot p, which s shares the steps
 * before with A's schedule: the snapshots up to p stay, and so does
 * A->every (the snapshots only place where later evaluations resume). A
 * kept move of the final reordering changes the steps of its span alone,
 * so this skips the pass over the steps before it (DenseNet at 8 ZeRO-3
 * ranks with --accumulate 2: re-anchoring from step 0 was 18% of -O2). */
static void
lv_reanchor(LvAnchor *A, const Dag *d, const Schedule *s, MemEval *ev, Arena *a,
            const LvSnap *p)
{
	int kept = (int)(p - A->snap) + 1;

	for (int k = kept; k < A->nsnap; k++)     /* lv_resume reads p alone */
		ar_free(&A->snap[k].mem);
	A->nsnap = kept;
	lv_resume(A, p, d, s, ev, a, A);
	if (!ev->valid)
		lv_anchor_free(A);
}

void
lv_eval_anchor(LvAnchor *A, const Dag *d, const Schedule *s, MemEval *ev, Arena *a)
{
	const LvSnap *p;
	Lv L;

	if (s->n > LV_ANCHOR_MAX || s->n < 2 * LV_SNAP_EVERY) {
		lv_anchor_free(A);
		lv_eval_steps(d, s, ev, a);
		return;
	}
	if ((p = lv_resume_point(A, d, s))) {
		lv_reanchor(A, d, s, ev, a, p);
		return;
	}
	lv_anchor_free(A);
	A->every = s->n / (LV_SNAPS + 1) + 1;
	if (A->every < LV_SNAP_EVERY)
		A->every = LV_SNAP_EVERY;
	A->sz = lv_sizes(d, &A->mem);
	A->sums = sizes_have_sums(A->sz, d->nnode);
	A->nfrom = lv_from_start(d);
	lv_init_from(&L, d, s, ev, a, 0, (LvCount){.sums = A->sums}, A->sz, A->nfrom, NULL);
	lv_begin(&L);
	lv_run(&L, 0, A);
	ar_free(&L.scratch);
	if (ev->valid)
		A->d = d;
	else
		lv_anchor_free(A);
}

