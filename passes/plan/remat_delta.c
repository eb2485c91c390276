/* passes/plan/remat_delta.c -- the gap descent's incremental scorer: the
 * peak, recompute cost and excess over a threshold of a plan that differs
 * from a loaded one in a few gaps, exactly as rm_score_state gives
 * them, without building and scoring the whole plan again.
 *
 * The builder emits the same steps for both plans at a base position
 * unless one of them reads there a tensor whose state differs between
 * them, or a changed gap: so only the positions where the loaded plan's
 * steps use or make such a tensor (or where an EARLY gap of one is
 * checked) are built again ("events"), from the loaded plan's builder
 * state kept up to date by replaying what its build changed at the
 * positions in between. The new plan is then the loaded one with those
 * positions' steps replaced. Its memory differs from the loaded plan's
 * only by the instances of the tensors that those steps use or make (the
 * others keep their births and uses), so the scorer compares their
 * instances in both plans and re-scores only the steps where the bytes
 * differ; elsewhere it reads the loaded plan's excess (prefix sums) and
 * peak (a range-maximum table). When something falls outside these rules
 * (a Dag rm_score_state cannot shortcut, a use with no instance, a sum near
 * 2^63) it asks rm_score_state. Reads the Dag only. */
#include <stdlib.h>
#include <string.h>

#include "remat_int.h"

/* A point where the difference of bytes (new less loaded) changes. */
typedef struct Pt {
	int at;                 /* a step of the new plan */
	int64_t by;
} Pt;

struct RmDelta {
	RmScorer *S;             /* scores what the shortcut does not cover */
	const RmModel *M;       /* S's */
	Arena *a;
	bool ok;                /* a plan is loaded */
	int64_t T, peak, cost, exc;
	unsigned char *st0;     /* [ngap] the loaded plan */
	int *step, *posof;      /* [cap] its steps */
	int nstep, cap, lg;
	int64_t *live;          /* [cap] its memory by step */
	int64_t *pexc, *pmax;   /* [cap + 1] excess over T, peak of steps < i */
	int64_t *sexc, *smax;   /* [cap + 1] ... of steps >= i */
	int64_t *rmq;           /* [lg][cap] max of live[i .. i + 2^k) */
	int64_t *prc;           /* [cap + 1] recompute cost of steps < i */
	int *start;             /* [n + 1] first step of each base position */
	int *iofs, *ibirth, *ilast;     /* CSR [nt]: t's instances, in order */
	int *tuofs, *tuse;      /* CSR [nt]: the steps using t, in order */
	int *clofs, *clt;       /* CSR [n]: tensors whose state the build */
	unsigned char *clb;     /* changed at each position, and to what */
	int clcap;
	int every;              /* saved builder states every so many positions */
	unsigned char *snapt;   /* [n / every + 1][nt] */
	int *snapg;
	bool gsaved;            /* snapg is filled (by the first full build) */
	unsigned char *ot;      /* [nt] the loaded plan's states (replayed) */
	RmBld nb;               /* the new plan's builder */
	int *dl, ndl;           /* tensors whose states differ */
	unsigned char *indl;    /* [nt] on dl */
	unsigned char *cnew;    /* [nt] dl's new states, while skipping */
	int *ex, *exs, *exn, nex;       /* events: position, nb steps */
	int *evat;              /* [n] an event's index at its position, or -1 */
	int *sh;                /* [nex + 1] new less loaded steps before each */
	int *tch, ntch, *tmark, stamp;  /* tensors the events use or make */
	int *tix;               /* [nt] a touched tensor's index in tch */
	int *occ, *oofs, nocc;  /* per touched tensor: its event steps */
	Pt *pt;
	int npt, cappt;
	int *iv, niv, capiv;    /* a tensor's new instances (birth, last) */
	/* on other Dags (no shortcut): the loaded plan's build, kept to
	 * resume a move's build from (RmBldAt) */
	int *astep, *aposof, nastep, capastep;  /* its steps */
	int *snapn;             /* [n / every + 1] its steps before each snapshot */
	int *tofs, *tpos, captpos;      /* CSR [nt]: base positions where its
	                                   steps use or make each tensor */
	int *tlast, *tcur;      /* [nt] scratch: the last one listed, the next
	                           entry to fill */
	int keep[RM_JUMP_KEEP]; /* a jump's tensors (RmBldAt.keep) */
};

/* The rows of the tables above (remat_int.h, rm_row): t's instances in
 * the loaded plan, ibirth and ilast[lo..hi); the loaded plan's steps
 * using t, tuse[lo..hi); what its build changed at base position x,
 * clt and clb[lo..hi); touched tensor i's event steps, occ[lo..hi). */
static inline RmRow
inst_row(const RmDelta *X, int t)
{
	return rm_row(X->iofs, t, X->M->nt);
}

static inline RmRow
use_row(const RmDelta *X, int t)
{
	return rm_row(X->tuofs, t, X->M->nt);
}

static inline RmRow
change_row(const RmDelta *X, int x)
{
	return rm_row(X->clofs, x, X->M->n);
}

static inline RmRow
occ_row(const RmDelta *X, int i)
{
	return rm_row(X->oofs, i, X->ntch);
}

/* The snapshots a move's build resumes from where no shortcut scores it:
 * 16 at most, as lv_eval_from's (the builder's state is a byte and an
 * int a tensor). */
static RmDelta *
resume_new(RmDelta *X)
{
	const RmModel *M = X->M;
	size_t nt = (size_t)M->d->nt + 1;

	X->every = M->n / 16 + 1;
	size_t ns = (size_t)(M->n / X->every + 1);
	X->snapt = ar_alloc(X->a, ns * nt);
	X->snapg = ar_alloc(X->a, ns * nt * sizeof *X->snapg);
	X->snapn = ar_alloc(X->a, ns * sizeof *X->snapn);
	X->tofs = ar_alloc(X->a, (nt + 1) * sizeof *X->tofs);
	X->tlast = ar_alloc(X->a, nt * sizeof *X->tlast);
	X->tcur = ar_alloc(X->a, nt * sizeof *X->tcur);
	return X;
}

/* Lists base position x for t, once (cur NULL: counts it). */
static inline void
list_touch(RmDelta *X, int t, int x, int *cur)
{
	if (X->tlast[t] == x)
		return;
	X->tlast[t] = x;
	if (cur)
		X->tpos[cur[t]++] = x;
	else
		X->tofs[t + 1]++;
}

/* Step i of the loaded plan touches what rm_bld_pos reads or sets the
 * bits of when it runs that node: its uses and its outputs. */
static void
touch_step(RmDelta *X, int i, int *cur)
{
	const RmModel *M = X->M;
	int v = X->astep[i], x = X->aposof[i];
	RmRow u = rm_uses(M, v), o = rm_outs(M, v);

	for (int k = u.lo; k < u.hi; k++)
		list_touch(X, M->use[k], x, cur);
	for (int k = o.lo; k < o.hi; k++)
		list_touch(X, M->out[k], x, cur);
}

/* The loaded plan's touches by tensor (tofs, tpos): each base position
 * once, in order. */
static void
resume_touches(RmDelta *X)
{
	int nt = X->M->d->nt;

	memset(X->tofs, 0, sizeof *X->tofs * (size_t)(nt + 1));
	memset(X->tlast, 0xff, sizeof *X->tlast * (size_t)nt);
	for (int i = 0; i < X->nastep; i++)
		touch_step(X, i, NULL);
	for (int t = 0; t < nt; t++)
		X->tofs[t + 1] += X->tofs[t];
	if (X->tofs[nt] > X->captpos) {
		X->captpos = 2 * X->tofs[nt];
		X->tpos = ar_alloc(X->a, sizeof *X->tpos * (size_t)X->captpos);
	}
	memcpy(X->tcur, X->tofs, sizeof *X->tcur * (size_t)nt);
	memset(X->tlast, 0xff, sizeof *X->tlast * (size_t)nt);
	for (int i = 0; i < X->nastep; i++)
		touch_step(X, i, X->tcur);
}

/* The first base position after p where the loaded plan's build reads
 * or sets t's bits or its gaps' states: a step using or making it, or an
 * EARLY position of its gaps; M->n: none. */
static int
loaded_touch(const RmDelta *X, int t, int p)
{
	const RmModel *M = X->M;
	int lo = X->tofs[t], hi = X->tofs[t + 1], e = M->n;

	while (lo < hi) {       /* the first entry after p */
		int mid = lo + (hi - lo) / 2;
		if (X->tpos[mid] <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < X->tofs[t + 1])
		e = X->tpos[lo];
	RmRow g = rm_gaps(M, t);
	for (int k = g.lo; k < g.hi; k++)
		if (M->gearly[k] > p && M->gearly[k] < e)
			e = M->gearly[k];
	return e;
}

RmDelta *
rm_delta_new(RmScorer *S, Arena *a)
{
	const RmModel *M = S->m;
	const Dag *d = M->d;
	RmDelta *X = ar_alloc(a, sizeof *X);
	size_t nt = (size_t)d->nt + 1, n = (size_t)M->n + 2;

	memset(X, 0, sizeof *X);
	X->S = S;
	X->M = M;
	X->a = a;
	if (!M->simple)
		return resume_new(X);
	rm_bld_init(M, &X->nb, a);
	size_t logcap = 3 * nt + (size_t)M->nuses + (size_t)M->nouts + 16;
	X->nb.log = ar_alloc(a, logcap * sizeof *X->nb.log);
	X->st0 = ar_alloc(a, (size_t)M->ngap + 1);
	X->start = ar_alloc(a, n * sizeof *X->start);
	X->clofs = ar_alloc(a, n * sizeof *X->clofs);
	X->iofs = ar_alloc(a, (nt + 1) * sizeof *X->iofs);
	X->tuofs = ar_alloc(a, (nt + 1) * sizeof *X->tuofs);
	X->ot = ar_alloc(a, nt);
	X->dl = ar_alloc(a, nt * sizeof *X->dl);
	X->indl = ar_alloc(a, nt);
	X->cnew = ar_alloc(a, nt);
	X->ex = ar_alloc(a, n * sizeof *X->ex);
	X->exs = ar_alloc(a, n * sizeof *X->exs);
	X->exn = ar_alloc(a, n * sizeof *X->exn);
	X->evat = ar_alloc(a, n * sizeof *X->evat);
	memset(X->evat, 0xff, n * sizeof *X->evat);
	X->sh = ar_alloc(a, (n + 1) * sizeof *X->sh);
	X->tch = ar_alloc(a, nt * sizeof *X->tch);
	X->tmark = ar_alloc(a, nt * sizeof *X->tmark);
	X->tix = ar_alloc(a, nt * sizeof *X->tix);
	X->oofs = ar_alloc(a, (nt + 2) * sizeof *X->oofs);
	X->every = 8;
	while ((long)X->every * X->every < M->n / 4)
		X->every *= 2;
	size_t ns = (size_t)(M->n / X->every + 1);
	X->snapt = ar_alloc(a, ns * nt);
	X->snapg = ar_alloc(a, ns * nt * sizeof *X->snapg);
	return X;
}

/* Room for a plan of n steps. */
static void
delta_room(RmDelta *X, int n)
{
	if (n < X->cap)
		return;
	size_t c = 2 * (size_t)n + 16;
	X->cap = (int)c;
	X->lg = 1;
	while ((size_t)1 << X->lg < c)
		X->lg++;
	X->step = ar_alloc(X->a, c * sizeof *X->step);
	X->posof = ar_alloc(X->a, c * sizeof *X->posof);
	X->live = ar_alloc(X->a, c * sizeof *X->live);
	X->pexc = ar_alloc(X->a, (c + 1) * sizeof *X->pexc);
	X->pmax = ar_alloc(X->a, (c + 1) * sizeof *X->pmax);
	X->sexc = ar_alloc(X->a, (c + 1) * sizeof *X->sexc);
	X->smax = ar_alloc(X->a, (c + 1) * sizeof *X->smax);
	X->prc = ar_alloc(X->a, (c + 1) * sizeof *X->prc);
	X->rmq = ar_alloc(X->a, (size_t)X->lg * c * sizeof *X->rmq);
}

/* Each tensor's instances (birth, last use) and the steps using it. */
static void
delta_instances(RmDelta *X)
{
	const RmModel *M = X->M;
	int nt = M->d->nt, nb = 0, nu = 0;

	memset(X->iofs, 0, sizeof *X->iofs * (size_t)(nt + 1));
	memset(X->tuofs, 0, sizeof *X->tuofs * (size_t)(nt + 1));
	for (int i = 0; i < X->nstep; i++) {
		int v = X->step[i];
		RmRow outs = rm_outs(M, v);
		for (int j = outs.lo; j < outs.hi; j++)
			X->iofs[M->out[j] + 1]++, nb++;
		RmRow uses = rm_uses(M, v);
		for (int j = uses.lo; j < uses.hi; j++)
			X->tuofs[M->use[j] + 1]++, nu++;
	}
	for (int t = 0; t < nt; t++) {
		X->iofs[t + 1] += X->iofs[t];
		X->tuofs[t + 1] += X->tuofs[t];
	}
	X->ibirth = ar_alloc(X->a, ((size_t)nb + 1) * sizeof *X->ibirth);
	X->ilast = ar_alloc(X->a, ((size_t)nb + 1) * sizeof *X->ilast);
	X->tuse = ar_alloc(X->a, ((size_t)nu + 1) * sizeof *X->tuse);
	/* fill counters: tch (the current instance), tmark (the next use) */
	int *bi = X->tch, *ui = X->tmark;
	for (int t = 0; t < nt; t++) {
		bi[t] = X->iofs[t] - 1;
		ui[t] = X->tuofs[t];
	}
	for (int i = 0; i < X->nstep; i++) {
		int v = X->step[i];
		RmRow uses = rm_uses(M, v);
		for (int j = uses.lo; j < uses.hi; j++) {
			int t = M->use[j];
			X->tuse[ui[t]++] = i;
			if (bi[t] >= X->iofs[t])
				X->ilast[bi[t]] = i;
		}
		RmRow outs = rm_outs(M, v);
		for (int j = outs.lo; j < outs.hi; j++) {
			int t = M->out[j], k = ++bi[t];
			X->ibirth[k] = X->ilast[k] = i;
		}
	}
	memset(X->tmark, 0, sizeof *X->tmark * (size_t)nt);
	X->stamp = 0;
}

/* Appends (t, bits) to the change log. */
static void
log_change(RmDelta *X, int *n, int t, unsigned char bits)
{
	if (*n == X->clcap) {
		size_t o = (size_t)X->clcap, c = o ? 2 * o : 4096;
		int *nt = ar_alloc(X->a, c * sizeof *nt);
		unsigned char *nb = ar_alloc(X->a, c);
		if (o) {
			memcpy(nt, X->clt, o * sizeof *nt);
			memcpy(nb, X->clb, o);
		}
		X->clt = nt;
		X->clb = nb;
		X->clcap = (int)c;
	}
	X->clt[*n] = t;
	X->clb[(*n)++] = bits;
}

/* Keeps B's state before base position x, every every-th one: its bits,
 * its gap counters (which do not depend on the plan: once, the first
 * time a build gets through) and, where kept, its step count. */
static void
keep_snapshot(RmDelta *X, const RmBld *B, int x)
{
	size_t nt = (size_t)X->M->d->nt, k = (size_t)(x / X->every);

	if (x % X->every)
		return;
	memcpy(X->snapt + k * nt, B->tst, nt);
	if (!X->gsaved)
		memcpy(X->snapg + k * nt, B->gcur, nt * sizeof *B->gcur);
	if (X->snapn)
		X->snapn[k] = B->nstep;
}

/* Snapshot k of the loaded plan (a Dag with no shortcut). */
static RmBldSnap
snapshot(const RmDelta *X, size_t k)
{
	size_t nt = (size_t)X->M->d->nt;

	ir_assert(X->snapn[k] <= X->nastep);
	return (RmBldSnap){(int)k * X->every, X->snapn[k], X->snapt + k * nt, X->snapg + k * nt};
}

/* Builds the plan to load into S->b (as rm_build), keeping the builder
 * states before every every-th base position and what each position
 * changed. */
static bool
delta_build(RmDelta *X)
{
	const RmModel *M = X->M;
	RmScorer *S = X->S;
	RmBld *B = &S->b;
	int n = 0;
	bool ok = true;

	B->log = X->nb.log;
	rm_bld_start(M, B);
	for (int x = 0; x < M->n && ok; x++) {
		keep_snapshot(X, B, x);
		B->nlog = 0;
		ok = rm_bld_pos(M, B, X->st0, x);
		X->clofs[x] = n;
		for (int i = 0; ok && i < B->nlog; i++)
			log_change(X, &n, B->log[i], B->tst[B->log[i]]);
	}
	X->clofs[M->n] = n;
	B->log = NULL;
	X->gsaved |= ok;
	return ok;
}

/* Builds st into S->b (as rm_build) as the loaded plan of a Dag with no
 * shortcut, keeping its steps and the builder's state before every
 * every-th base position. */
static bool
resume_build(RmDelta *X, const unsigned char *st)
{
	const RmModel *M = X->M;
	RmBld *B = &X->S->b;
	bool ok = true;

	rm_bld_start(M, B);
	for (int x = 0; x < M->n && ok; x++) {
		keep_snapshot(X, B, x);
		ok = rm_bld_pos(M, B, st, x);
	}
	X->gsaved |= ok;
	if (!ok)
		return false;
	if (B->nstep > X->capastep) {
		size_t c = 2 * (size_t)B->nstep;
		X->astep = ar_alloc(X->a, c * sizeof *X->astep);
		X->aposof = ar_alloc(X->a, c * sizeof *X->aposof);
		X->capastep = (int)c;
	}
	memcpy(X->astep, B->step, sizeof *X->astep * (size_t)B->nstep);
	memcpy(X->aposof, B->posof, sizeof *X->aposof * (size_t)B->nstep);
	X->nastep = B->nstep;
	resume_touches(X);
	return true;
}

const MemEval *
rm_delta_load(RmDelta *X, const unsigned char *st, int64_t T)
{
	const RmModel *M = X->M;
	RmScorer *S = X->S;
	const MemEval *ev;
	int n;

	X->ok = false;
	X->T = T;
	/* elsewhere each move is scored in full, resumed from this plan */
	if (!M->simple) {
		X->ok = resume_build(X, st);
		return X->ok ? rm_eval_anchor(S, S->b.step, S->b.nstep) : NULL;
	}
	memcpy(X->st0, st, (size_t)M->ngap);
	if (!delta_build(X) || !(ev = rm_score_built(S)))
		return NULL;
	n = X->nstep = S->b.nstep;
	delta_room(X, n);
	memcpy(X->step, S->b.step, sizeof *X->step * (size_t)n);
	memcpy(X->posof, S->b.posof, sizeof *X->posof * (size_t)n);
	memcpy(X->live, ev->live_bytes, sizeof *X->live * (size_t)n);
	X->T = T;
	X->peak = ev->peak;
	X->cost = ev->recompute_cost;
	int x = 0;
	for (int i = 0; i < n; i++)
		while (x <= X->posof[i])
			X->start[x++] = i;
	while (x <= M->n)
		X->start[x++] = n;
	X->pexc[0] = 0;
	X->pmax[0] = INT64_MIN;
	X->prc[0] = 0;
	for (int i = 0; i < n; i++) {
		int64_t l = X->live[i];
		int v = X->step[i];
		X->pexc[i + 1] = l > T ? ck_sat_add(X->pexc[i], l - T) : X->pexc[i];
		X->pmax[i + 1] = l > X->pmax[i] ? l : X->pmax[i];
		X->prc[i + 1] = X->prc[i] + (M->pos[v] != X->posof[i] ? M->ncost[v] : 0);
		X->rmq[i] = l;
	}
	for (int k = 1; k < X->lg; k++) {
		int64_t *lo = X->rmq + (size_t)(k - 1) * (size_t)X->cap;
		int64_t *hi = lo + X->cap;
		for (int i = 0; i + (1 << k) <= n; i++)
			hi[i] = lo[i] > lo[i + (1 << (k - 1))] ? lo[i] : lo[i + (1 << (k - 1))];
	}
	X->sexc[n] = 0;
	X->smax[n] = INT64_MIN;
	for (int i = n - 1; i >= 0; i--) {
		int64_t l = X->live[i];
		X->sexc[i] = l > T ? ck_sat_add(X->sexc[i + 1], l - T) : X->sexc[i + 1];
		X->smax[i] = l > X->smax[i + 1] ? l : X->smax[i + 1];
	}
	X->exc = X->pexc[n];
	delta_instances(X);
	X->ok = X->exc < INT64_MAX && X->prc[n] < INT64_MAX;
	return ev;
}

/* The largest live[i] of the loaded plan over i in [lo, hi). */
static int64_t
range_max(const RmDelta *X, int lo, int hi)
{
	int k = 0;

	if (lo >= hi)
		return INT64_MIN;
	while ((2 << k) <= hi - lo)
		k++;
	const int64_t *r = X->rmq + (size_t)k * (size_t)X->cap;
	return r[lo] > r[hi - (1 << k)] ? r[lo] : r[hi - (1 << k)];
}

/* The first of the sorted u[lo..hi) that is >= b (hi when none). */
static int
lower_bound(const int *u, int lo, int hi, int b)
{
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (u[mid] < b)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The first base position after x where the loaded plan's steps use or
 * make t, or where an EARLY gap of t (in either plan) is checked; n when
 * none. */
static int
next_touch(const RmDelta *X, const unsigned char *st, int t, int x)
{
	const RmModel *M = X->M;
	RmRow us = use_row(X, t), is = inst_row(X, t);
	int s = X->start[x + 1], y = M->n;
	int u = lower_bound(X->tuse, us.lo, us.hi, s);
	int b = lower_bound(X->ibirth, is.lo, is.hi, s);

	if (u < us.hi)
		y = X->posof[X->tuse[u]];
	if (b < is.hi && X->posof[X->ibirth[b]] < y)
		y = X->posof[X->ibirth[b]];
	RmRow gaps = rm_gaps(M, t);
	for (int g = gaps.lo; g < gaps.hi; g++)
		if (M->gearly[g] > x && M->gearly[g] < y &&
		    (st[g] == GAP_EARLY || X->st0[g] == GAP_EARLY))
			y = M->gearly[g];
	return y;
}

/* The first base position after x where the builder may read changed gap
 * g: until its end, where t's steps or EARLY check are; for a tail gap,
 * its start and where the loaded plan makes t again (TRANSIENT frees it
 * then); n when none. */
static int
next_read(const RmDelta *X, const unsigned char *st, int g, int x)
{
	const RmModel *M = X->M;
	int t = M->gtensor[g];

	if (g < rm_tail(M, t)) {
		int y = next_touch(X, st, t, x);
		return y < M->gend[g] ? y : M->n;
	}
	RmRow is = inst_row(X, t);
	int b = lower_bound(X->ibirth, is.lo, is.hi, X->start[x + 1]);
	int s = rm_gap_start(M, g);
	int y = b < is.hi ? X->posof[X->ibirth[b]] : M->n;
	return s > x && s < y ? s : y;
}

/* Replays the loaded plan's changes at position x into ot, and into the
 * new builder's states (with its gap counters) when it skips x. */
static void
replay(RmDelta *X, int x, bool skip)
{
	const RmModel *M = X->M;
	int v = M->d->base_order[x];
	RmRow ch = change_row(X, x);

	for (int i = ch.lo; i < ch.hi; i++) {
		X->ot[X->clt[i]] = X->clb[i];
		if (skip)
			X->nb.tst[X->clt[i]] = X->clb[i];
	}
	RmRow uses = rm_uses(M, v);
	for (int k = uses.lo; skip && k < uses.hi; k++) {
		int t = M->use[k];
		if (M->prod[t] >= 0 && M->pos[M->prod[t]] < x)
			X->nb.gcur[t]++;
	}
}

/* Brings both plans' states from before position x to before y > x,
 * where no step of either reads a tensor on dl: through the saved state
 * at or before y when that is after x (dl's new states kept). Returns y. */
static int
skip_to(RmDelta *X, int x, int y)
{
	const RmModel *M = X->M;
	size_t nt = (size_t)M->d->nt;
	int k = y / X->every;

	if (k * X->every > x) {
		for (int i = 0; i < X->ndl; i++)
			X->cnew[i] = X->nb.tst[X->dl[i]];
		memcpy(X->ot, X->snapt + (size_t)k * nt, nt);
		memcpy(X->nb.tst, X->ot, nt);
		memcpy(X->nb.gcur, X->snapg + (size_t)k * nt, nt * sizeof *X->nb.gcur);
		for (int i = 0; i < X->ndl; i++)
			X->nb.tst[X->dl[i]] = X->cnew[i];
		x = k * X->every;
	}
	for (; x < y; x++)
		replay(X, x, true);
	return y;
}

/* Notes t on dl when its states differ. */
static void
note(RmDelta *X, int t)
{
	if (!X->indl[t] && X->ot[t] != X->nb.tst[t]) {
		X->indl[t] = 1;
		X->dl[X->ndl++] = t;
	}
}

/* Builds the new plan's steps at each event from a on; false when it
 * cannot be built (as rm_build would fail). */
static bool
delta_events(RmDelta *X, const unsigned char *st, const int *gap, int ng, int a)
{
	const RmModel *M = X->M;
	size_t nt = (size_t)M->d->nt;
	size_t k = (size_t)(a / X->every);
	RmBld *nb = &X->nb;

	memcpy(X->ot, X->snapt + k * nt, nt);
	memcpy(nb->tst, X->ot, nt);
	memcpy(nb->gcur, X->snapg + k * nt, nt * sizeof *nb->gcur);
	for (int x = (int)k * X->every; x < a; x++)
		replay(X, x, true);
	nb->nstep = 0;
	nb->skip = 0;
	X->nex = 0;
	for (int x = a; x < M->n;) {
		nb->nlog = 0;
		X->ex[X->nex] = x;
		X->exs[X->nex] = nb->nstep;
		if (!rm_bld_pos(M, nb, st, x))
			return false;
		X->exn[X->nex] = nb->nstep - X->exs[X->nex];
		X->evat[x] = X->nex++;
		replay(X, x, false);
		for (int i = 0; i < nb->nlog; i++)
			note(X, nb->log[i]);
		RmRow ch = change_row(X, x);
		for (int i = ch.lo; i < ch.hi; i++)
			note(X, X->clt[i]);
		/* the next event: drop the tensors that agree again */
		int y = M->n, m = 0;
		for (int i = 0; i < X->ndl; i++) {
			int t = X->dl[i];
			if (X->ot[t] == nb->tst[t]) {
				X->indl[t] = 0;
				continue;
			}
			X->dl[m++] = t;
			int z = next_touch(X, st, t, x);
			if (z < y)
				y = z;
		}
		X->ndl = m;
		for (int i = 0; i < ng; i++) {
			int z = next_read(X, st, gap[i], x);
			if (z < y)
				y = z;
		}
		if (y >= M->n)
			break;
		x = skip_to(X, x + 1, y);
	}
	for (int i = 0; i < X->ndl; i++)
		X->indl[X->dl[i]] = 0;
	X->ndl = 0;
	return true;
}

/* Marks t as touched by an event. */
static void
touch(RmDelta *X, int t)
{
	if (X->tmark[t] != X->stamp) {
		X->tmark[t] = X->stamp;
		X->tix[t] = X->ntch;
		X->tch[X->ntch++] = t;
	}
}

static void
add_pt(RmDelta *X, int at, int64_t by)
{
	if (X->npt == X->cappt) {
		size_t o = (size_t)X->cappt, c = o ? 2 * o : 256;
		Pt *p = ar_alloc(X->a, c * sizeof *p);
		if (o)
			memcpy(p, X->pt, o * sizeof *p);
		X->pt = p;
		X->cappt = (int)c;
	}
	X->pt[X->npt++] = (Pt){at, by};
}

/* The event at base position x, or -1 (ev: the events before x). */
static int
event_at(const RmDelta *X, int x, int *ev)
{
	int lo = 0, hi = X->nex;

	if (X->evat[x] >= 0) {
		*ev = X->evat[x];
		return X->evat[x];
	}
	if (hi <= 8) {
		/* a few events (the usual case): a scan is quicker */
		while (lo < hi && X->ex[lo] < x)
			lo++;
		*ev = lo;
		return -1;
	}

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (X->ex[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ev = lo;
	return lo < X->nex && X->ex[lo] == x ? lo : -1;
}

/* Loaded step i in the new plan: the first new step standing for it or
 * after it (hi false), or the last standing for it or before (hi true).
 * A replaced position's new steps all stand for its first loaded step. */
static int
map_step(const RmDelta *X, int i, bool hi)
{
	int b, e = event_at(X, X->posof[i], &b);
	int base = X->start[X->posof[i]] + X->sh[b];

	if (e < 0)
		return i + X->sh[b];
	if (hi)
		return base + X->exn[e] - 1;
	return i == X->start[X->posof[i]] ? base : base + X->exn[e];
}

/* The new plan's step j of event e. */
static int
new_index(const RmDelta *X, int e, int j)
{
	return X->start[X->ex[e]] + X->sh[e] + j;
}

/* Appends t's new instance [b, l] to the interval buffer. */
static void
add_iv(RmDelta *X, int b, int l)
{
	if (X->niv == X->capiv) {
		size_t o = (size_t)X->capiv, c = o ? 2 * o : 64;
		int *p = ar_alloc(X->a, 2 * c * sizeof *p);
		if (o)
			memcpy(p, X->iv, 2 * o * sizeof *p);
		X->iv = p;
		X->capiv = (int)c;
	}
	X->iv[2 * X->niv] = b;
	X->iv[2 * X->niv++ + 1] = l;
}

/* t's instances in the new plan (its loaded births and uses outside the
 * events, mapped, and its event steps' ones) into the interval buffer,
 * from its loaded instance i0 up to i1 (the others are the same in both
 * plans). False on a use with no instance. */
static bool
new_instances(RmDelta *X, int t, int ti, int i0, int i1)
{
	RmRow is = inst_row(X, t), us = use_row(X, t), os = occ_row(X, ti);
	int bi = i0, oi = os.lo;
	int ui = i0 < is.hi ? lower_bound(X->tuse, us.lo, us.hi, X->ibirth[i0]) : us.lo;
	int u1 = i1 < is.hi ? lower_bound(X->tuse, ui, us.hi, X->ibirth[i1]) : us.hi;
	int b = -1, l = -1;

	X->niv = 0;
	for (;;) {
		int ob = bi < i1 ? X->ibirth[bi] : -1;
		int ou = ui < u1 ? X->tuse[ui] : -1;
		int o = ob < 0 ? ou : ou < 0 ? ob : ob < ou ? ob : ou;
		if (o >= 0 && X->evat[X->posof[o]] >= 0) {
			if (o == ob)
				bi++;
			else
				ui++;
			continue;
		}
		int on = o >= 0 ? map_step(X, o, false) : -1;
		int en = oi < os.hi ? X->occ[oi] >> 1 : -1;
		bool birth;
		int at;
		if (on >= 0 && (en < 0 || on < en)) {
			at = on;
			birth = o == ob;
			if (birth)
				bi++;
			else
				ui++;
		} else if (en >= 0) {
			at = en;
			birth = X->occ[oi++] & 1;
		} else {
			break;
		}
		if (birth) {
			if (b >= 0)
				add_iv(X, b, l);
			b = l = at;
		} else {
			if (b < 0)
				return false;
			l = at;
		}
	}
	if (b >= 0)
		add_iv(X, b, l);
	return true;
}

/* Points where t's bytes differ: its loaded instances, mapped, less, its
 * new ones more, leaving out the ones that are the same in both. False
 * on a use with no instance. */
static bool
tensor_points(RmDelta *X, int t, int ti)
{
	int64_t by = X->M->d->t[t].bytes;
	RmRow is = inst_row(X, t);
	int sa = X->start[X->ex[0]], sz = X->start[X->ex[X->nex - 1] + 1];
	int i = lower_bound(X->ibirth, is.lo, is.hi, sa) - 1;
	int i1 = lower_bound(X->ibirth, is.lo, is.hi, sz), j = 0;

	/* the instances born before t's last one before the first event, or
	 * after the last event, are the same in both plans */
	if (i < is.lo)
		i = is.lo;
	if (!new_instances(X, t, ti, i, i1))
		return false;
	while (i < i1 || j < X->niv) {
		int ob = -1, ol = -1;
		if (i < i1) {
			ob = map_step(X, X->ibirth[i], false);
			ol = map_step(X, X->ilast[i], true);
		}
		if (j < X->niv && ob == X->iv[2 * j] && ol == X->iv[2 * j + 1]) {
			i++, j++;
			continue;
		}
		if (j >= X->niv || (ob >= 0 && ob <= X->iv[2 * j])) {
			add_pt(X, ob, -by);
			add_pt(X, ol + 1, by);
			i++;
		} else {
			add_pt(X, X->iv[2 * j], by);
			add_pt(X, X->iv[2 * j + 1] + 1, -by);
			j++;
		}
	}
	return true;
}

static int
by_at(const void *pa, const void *pb)
{
	const Pt *a = pa, *b = pb;

	return (a->at > b->at) - (a->at < b->at);
}

/* The tensors that the events' steps (loaded and new) use or make, and
 * per touched tensor its new event steps (occ: step << 1 | is a birth). */
static void
delta_touched(RmDelta *X)
{
	const RmModel *M = X->M;
	int n = 0;

	X->stamp++;
	X->ntch = 0;
	for (int e = 0; e < X->nex; e++) {
		int x = X->ex[e];
		for (int i = X->start[x]; i < X->start[x + 1]; i++) {
			int v = X->step[i];
			RmRow uses = rm_uses(M, v);
			for (int j = uses.lo; j < uses.hi; j++)
				touch(X, M->use[j]);
			RmRow outs = rm_outs(M, v);
			for (int j = outs.lo; j < outs.hi; j++)
				touch(X, M->out[j]);
		}
		for (int j = X->exs[e]; j < X->exs[e] + X->exn[e]; j++) {
			int v = X->nb.step[j];
			RmRow uses = rm_uses(M, v), outs = rm_outs(M, v);
			n += uses.hi - uses.lo + outs.hi - outs.lo;
			for (int k = uses.lo; k < uses.hi; k++)
				touch(X, M->use[k]);
			for (int k = outs.lo; k < outs.hi; k++)
				touch(X, M->out[k]);
		}
	}
	if (n + 1 > X->nocc) {
		X->nocc = 2 * n + 16;
		X->occ = ar_alloc(X->a, (size_t)X->nocc * sizeof *X->occ);
	}
	memset(X->oofs, 0, sizeof *X->oofs * (size_t)(X->ntch + 2));
	for (int e = 0; e < X->nex; e++) {
		for (int j = X->exs[e]; j < X->exs[e] + X->exn[e]; j++) {
			int v = X->nb.step[j];
			RmRow uses = rm_uses(M, v);
			for (int k = uses.lo; k < uses.hi; k++)
				X->oofs[X->tix[M->use[k]] + 2]++;
			RmRow outs = rm_outs(M, v);
			for (int k = outs.lo; k < outs.hi; k++)
				X->oofs[X->tix[M->out[k]] + 2]++;
		}
	}
	for (int i = 0; i < X->ntch; i++)
		X->oofs[i + 2] += X->oofs[i + 1];
	/* oofs[i + 1] counts up as tensor i's steps are filled in: after
	 * this it is where tensor i's list ends, oofs[i] where it starts */
	for (int e = 0; e < X->nex; e++) {
		for (int j = 0; j < X->exn[e]; j++) {
			int v = X->nb.step[X->exs[e] + j], at = new_index(X, e, j);
			RmRow uses = rm_uses(M, v);
			for (int k = uses.lo; k < uses.hi; k++)
				X->occ[X->oofs[X->tix[M->use[k]] + 1]++] = at << 1;
			RmRow outs = rm_outs(M, v);
			for (int k = outs.lo; k < outs.hi; k++)
				X->occ[X->oofs[X->tix[M->out[k]] + 1]++] = at << 1 | 1;
		}
	}
}

/* Excess over T and peak of the new plan's steps [s, e), which stand for
 * the loaded steps from m on (one each) with d more bytes. */
static bool
span(const RmDelta *X, int m, int len, int64_t d, int64_t *exc, int64_t *peak)
{
	if (len <= 0)
		return true;
	if (d == 0) {
		int64_t mx = range_max(X, m, m + len);
		*exc = ck_sat_add(*exc, X->pexc[m + len] - X->pexc[m]);
		if (mx > *peak)
			*peak = mx;
		return true;
	}
	for (int i = m; i < m + len; i++) {
		int64_t l;
		if (!ck_add(X->live[i], d, &l))
			return false;
		if (l > X->T)
			*exc = ck_sat_add(*exc, l - X->T);
		if (l > *peak)
			*peak = l;
	}
	return true;
}

/* Scores the new plan from the events and the points, into *out. */
static bool
delta_sweep(RmDelta *X, RmScore *out)
{
	const RmModel *M = X->M;
	int np = 0, e = 0, i;
	int64_t d = 0, exc, peak;
	int total = X->nstep + X->sh[X->nex];

	if (X->npt <= 64) {
		for (int k = 1; k < X->npt; k++) {
			Pt p = X->pt[k];
			int j = k;
			for (; j > 0 && X->pt[j - 1].at > p.at; j--)
				X->pt[j] = X->pt[j - 1];
			X->pt[j] = p;
		}
	} else {
		qsort(X->pt, (size_t)X->npt, sizeof *X->pt, by_at);
	}
	for (int k = 0; k < X->npt; k++) {
		if (np > 0 && X->pt[np - 1].at == X->pt[k].at)
			X->pt[np - 1].by += X->pt[k].by;
		else
			X->pt[np++] = X->pt[k];
	}
	/* the new steps before the first point or event are the loaded ones */
	i = np > 0 ? X->pt[0].at : total;
	if (X->nex > 0 && new_index(X, 0, 0) < i)
		i = new_index(X, 0, 0);
	exc = X->pexc[i];
	peak = X->pmax[i];
	for (int k = 0; i < total;) {
		while (k < np && X->pt[k].at <= i)
			d += X->pt[k++].by;
		int ev = e < X->nex ? new_index(X, e, 0) : total;
		if (i == ev) {
			/* a replaced position: the loaded memory before its first
			 * step less that step's workspace, plus the new step's */
			int x = X->ex[e], m = X->start[x];
			int64_t base = X->live[m] - M->nws[X->step[m]];
			for (int j = 0; j < X->exn[e]; j++, i++) {
				int64_t l;
				while (k < np && X->pt[k].at <= i)
					d += X->pt[k++].by;
				if (!ck_add(base, d, &l) ||
				    !ck_add(l, M->nws[X->nb.step[X->exs[e] + j]], &l))
					return false;
				if (l > X->T)
					exc = ck_sat_add(exc, l - X->T);
				if (l > peak)
					peak = l;
			}
			e++;
			continue;
		}
		if (d == 0 && k == np && e == X->nex) {
			/* the rest is the loaded plan's */
			int m = i - X->sh[e];
			exc = ck_sat_add(exc, X->sexc[m]);
			if (X->smax[m] > peak)
				peak = X->smax[m];
			break;
		}
		int stop = k < np && X->pt[k].at < ev ? X->pt[k].at : ev;
		if (!span(X, i - X->sh[e], stop - i, d, &exc, &peak))
			return false;
		i = stop;
	}
	int64_t cost = X->cost;
	for (int k = 0; k < X->nex; k++) {
		int x = X->ex[k];
		cost -= X->prc[X->start[x + 1]] - X->prc[X->start[x]];
		for (int j = X->exs[k]; j < X->exs[k] + X->exn[k]; j++) {
			int v = X->nb.step[j];
			if (M->pos[v] != x && !ck_add(cost, M->ncost[v], &cost))
				return false;
		}
	}
	out->peak = peak;
	out->cost = cost;
	out->exc = exc;
	return exc < INT64_MAX && cost < INT64_MAX;
}

/* rm_score_state's answer, for what the shortcut does not cover
 * (remembered: descents from one start try many of the same plans). */
static bool
delta_full(RmDelta *X, const unsigned char *st, RmScore *out)
{
	return rm_memo_state(X->S, st, X->T, out);
}

/* The jump of a build resumed at `at` for the loaded plan with gap[0..ng)
 * changed, a the first position one is read: after position a, the
 * builds differ in the bits of those gaps' tensors alone until the
 * loaded plan's build next touches one (loaded_touch), so the build may go
 * on from the loaded plan's last snapshot before that, those bits taken
 * along. On a dropped activation's gap that skips the forward after its
 * last use and the backward up to its next read. */
static void
resume_jump(RmDelta *X, RmBldAt *at, int a, const int *gap, int ng)
{
	const RmModel *M = X->M;
	int e = M->n - 1;

	if (ng > RM_JUMP_KEEP)
		return;
	for (int i = 0; i < ng; i++) {
		int t = M->gtensor[gap[i]], x = loaded_touch(X, t, a);
		e = x < e ? x : e;
	}
	if (e / X->every * X->every <= a)
		return;
	at->jump = true;
	at->until = a;
	at->to = snapshot(X, (size_t)(e / X->every));
	at->nkeep = ng;
	at->keep = X->keep;
	for (int i = 0; i < ng; i++)
		X->keep[i] = M->gtensor[gap[i]];
}

/* rm_memo_state's answer on a Dag with no shortcut, the build resumed from
 * the loaded plan's last snapshot before the first base position where a
 * changed gap is read (rm_gap_start): the builds agree up to there. */
static bool
resume_full(RmDelta *X, const unsigned char *st, const int *gap, int ng, RmScore *out)
{
	const RmModel *M = X->M;
	int a = M->n - 1;

	if (!X->ok || M->n == 0)
		return delta_full(X, st, out);
	for (int i = 0; i < ng; i++) {
		int s = rm_gap_start(M, gap[i]);
		if (s < a)
			a = s;
	}
	RmBldAt at = {.from = snapshot(X, (size_t)(a / X->every)), .step = X->astep,
	              .posof = X->aposof};
	resume_jump(X, &at, a, gap, ng);
	return rm_memo_state_at(X->S, st, X->T, out, &at);
}

bool
rm_delta_gaps(RmDelta *X, const unsigned char *st, const int *gap, int ng,
              RmScore *out)
{
	const RmModel *M = X->M;
	RmScorer *S = X->S;
	int a = M->n;

	if (!M->simple)
		return resume_full(X, st, gap, ng, out);
	if (!X->ok)
		return delta_full(X, st, out);
	for (int i = 0; i < ng; i++) {
		int s = rm_gap_start(M, gap[i]);
		if (s < a)
			a = s;
	}
	if (a >= M->n)
		return delta_full(X, st, out);
	if (!delta_events(X, st, gap, ng, a)) {
		for (int e = 0; e < X->nex; e++)
			X->evat[X->ex[e]] = -1;
		return false;
	}
	X->sh[0] = 0;
	for (int e = 0; e < X->nex; e++) {
		int x = X->ex[e];
		X->sh[e + 1] = X->sh[e] + X->exn[e] - (X->start[x + 1] - X->start[x]);
	}
	if ((long)X->nstep + X->sh[X->nex] > RM_MAXSTEP(M)) {
		for (int e = 0; e < X->nex; e++)
			X->evat[X->ex[e]] = -1;
		return false;
	}
	delta_touched(X);
	X->npt = 0;
	bool ok = true;
	for (int i = 0; i < X->ntch && ok; i++)
		ok = tensor_points(X, X->tch[i], i);
	ok = ok && delta_sweep(X, out);
	for (int e = 0; e < X->nex; e++)
		X->evat[X->ex[e]] = -1;
	if (!ok)
		return delta_full(X, st, out);
	S->evals++;
	return true;
}
