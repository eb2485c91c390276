/* report/timeline.c -- the memory timeline behind every picture and
 * export: bytes per category at each step (a cursor over the instances of
 * a MemEval, O(steps + instances) for the whole walk), its downsampling to
 * a bounded number of points (each bucket keeps its largest step, so the
 * peak always shows), the -O0 curve placed at the plan steps that run the
 * same ops, and the largest live tensors of each point.
 *
 * Reads an Analysis (Dag, the chosen and -O0 MemEvals, the graph's source
 * lines); writes nothing but the VizTimeline it fills. */
#include <stdlib.h>
#include <string.h>

#include "report.h"

void
viz_cursor_init(VizCursor *c, const Dag *d, const MemEval *ev, Arena *a)
{
	int n = ev->nsteps;

	memset(c, 0, sizeof *c);
	c->d = d;
	c->ev = ev;
	c->end_head = ar_alloc(a, sizeof *c->end_head * (size_t)(n + 1));
	c->end_next = ar_alloc(a, sizeof *c->end_next * (size_t)(ev->ninst + 1));
	for (int s = 0; s < n; s++)
		c->end_head[s] = -1;
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		int lo = in->start < 0 ? 0 : in->start;
		if (in->owned == 0 || in->end < lo || in->end >= n)
			continue;
		c->end_next[k] = c->end_head[in->end];
		c->end_head[in->end] = k;
	}
	for (int k = 0; k < ev->ninst && !c->repl_base; k++)
		if (ev->inst[k].replaces)
			c->repl_base = ar_alloc(a, sizeof *c->repl_base * (size_t)(ev->ninst + 1));
	if (c->repl_base) {
		/* instances come in creation order, so the latest one of a
		 * tensor before a sum is the one the sum replaced */
		int *latest = ar_alloc(a, sizeof *latest * (size_t)(d->nt + 1));
		for (int t = 0; t < d->nt; t++)
			latest[t] = -1;
		for (int k = 0; k < ev->ninst; k++) {
			const Instance *in = &ev->inst[k];
			c->repl_base[k] = -1;
			if (in->replaces && latest[in->tensor] >= 0)
				c->repl_base[k] = ev->inst[latest[in->tensor]].base;
			latest[in->tensor] = k;
		}
	}
}

/* Did an out_of_place sum made at step s replace an instance of root k? */
static bool
replaced_at(const VizCursor *c, int s, int k)
{
	const MemEval *ev = c->ev;

	for (int j = ev->step_prod[s + 1]; j < ev->step_prod[s + 2]; j++)
		if (ev->inst[j].replaces && c->repl_base[j] == k)
			return true;
	return false;
}

int
viz_largest_sum(const VizCursor *c, int s)
{
	const MemEval *ev = c->ev;
	int most = -1;

	for (int k = c->repl_base ? ev->step_prod[s + 1] : 0;
	     c->repl_base && k < ev->step_prod[s + 2]; k++)
		if (ev->inst[k].replaces && (most < 0 || ev->inst[k].owned > ev->inst[most].owned))
			most = k;
	return most;
}

bool
viz_dying(const VizCursor *c, int s, int k)
{
	const Instance *in = &c->ev->inst[k];

	return in->owned > 0 && in->end == s && in->start < s && in->base == k &&
	       !replaced_at(c, s, k);
}

bool
viz_second_phase(const VizCursor *c, int s)
{
	int most = viz_largest_sum(c, s);
	int64_t dying = 0;

	if (most < 0)
		return false;
	for (int k = c->end_head[s]; k >= 0; k = c->end_next[k])
		if (viz_dying(c, s, k))
			dying += c->ev->inst[k].owned;
	return c->ev->inst[most].owned > dying;
}

bool
viz_counted(const VizCursor *c, int s, int k)
{
	const Instance *in = &c->ev->inst[k];
	int most = viz_largest_sum(c, s);

	if (most < 0)
		return true;
	if (in->replaces && in->start == s)
		return k == most && viz_second_phase(c, s);
	return !(viz_dying(c, s, k) && viz_second_phase(c, s));
}

/* Moves cat[], which counts every live instance of step s, to the phase
 * liveness counts when s makes out_of_place sums (viz_counted). */
static void
sum_phase(const VizCursor *c, int s, int64_t cat[CAT_COUNT])
{
	const MemEval *ev = c->ev;
	int most = viz_largest_sum(c, s);
	bool second;

	if (most < 0)
		return;
	second = viz_second_phase(c, s);
	for (int k = ev->step_prod[s + 1]; k < ev->step_prod[s + 2]; k++)
		if (ev->inst[k].replaces && !(second && k == most))
			cat[c->d->t[ev->inst[k].tensor].cat] -= ev->inst[k].owned;
	for (int k = c->end_head[s]; second && k >= 0; k = c->end_next[k])
		if (viz_dying(c, s, k))
			cat[c->d->t[ev->inst[k].tensor].cat] -= ev->inst[k].owned;
}

/* Adds the owned instances in inst[from, to) that are live at all. */
static void
cursor_add(VizCursor *c, int from, int to)
{
	for (int k = from; k < to; k++) {
		const Instance *in = &c->ev->inst[k];
		int lo = in->start < 0 ? 0 : in->start;
		if (in->owned > 0 && in->end >= lo)
			c->run[c->d->t[in->tensor].cat] += in->owned;
	}
}

int
viz_cursor_step(VizCursor *c, int64_t cat[CAT_COUNT])
{
	const MemEval *ev = c->ev;
	int s = c->next;
	int64_t sum = 0;

	if (s >= ev->nsteps)
		return -1;
	if (s == 0)
		cursor_add(c, ev->step_prod[0], ev->step_prod[1]);
	cursor_add(c, ev->step_prod[s + 1], ev->step_prod[s + 2]);
	for (int k = 0; k < CAT_COUNT; k++)
		cat[k] = c->d->persistent[k] + c->run[k];
	cat[CAT_TEMPORARIES] += ev_temp(ev, s);
	sum_phase(c, s, cat);
	for (int k = 0; k < CAT_COUNT; k++)
		sum += cat[k];
	ir_assert(sum == ev->live_bytes[s]);
	for (int k = c->end_head[s]; k >= 0; k = c->end_next[k])
		c->run[c->d->t[ev->inst[k].tensor].cat] -= ev->inst[k].owned;
	c->next++;
	return s;
}

int
viz_step_line(const Analysis *an, int step)
{
	int op = an->d.node[an->plan.sched.step[step]].ir_op;

	return op >= 0 && op < an->g.nop ? ir_op_loc(&an->g, &an->g.op[op]).line : 0;
}

int
viz_tensor_line(const Analysis *an, int dag_tensor)
{
	int ir = an->d.t[dag_tensor].ir_tensor;

	return ir >= 0 && ir < an->g.nt ? an->g.t[ir].loc.line : 0;
}

char *
viz_settings(const Analysis *an, Arena *a)
{
	const Graph *g = &an->g;
	const Settings *s = &g->settings;
	const char *base = g->file ? strrchr(g->file, '/') : NULL;
	char *r = ar_printf(a, "%s: %s", base ? base + 1 : g->file ? g->file : "?",
	                    g->train ? "train" : "infer");

	if (g->train)
		r = ar_printf(a, "%s, %s, %s precision", r, optimizer_name(s->optimizer),
		              s->mixed ? "mixed" : "declared");
	if (g->train && s->accumulate > 1)
		r = ar_printf(a, "%s, accumulate %lld", r, (long long)s->accumulate);
	r = ar_printf(a, "%s, -O%d", r, an->goal.level);
	for (int i = 0; i < g->ndims; i++)
		r = ar_printf(a, "%s%s%s=%lld", r, i ? " " : ", ", g->dims[i].name,
		              (long long)g->dims[i].declared);
	return r;
}

static const MemEval *cmp_ev;

static int
by_owned_desc(const void *a, const void *b)
{
	const Instance *x = &cmp_ev->inst[*(const int *)a];
	const Instance *y = &cmp_ev->inst[*(const int *)b];

	if (x->owned != y->owned)
		return x->owned < y->owned ? 1 : -1;
	return *(const int *)a - *(const int *)b;
}

int
viz_live_at(const MemEval *ev, int s, int *out, int n)
{
	int m = 0;

	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		if (in->owned > 0 && in->start <= s && s <= in->end)
			out[m++] = k;
	}
	cmp_ev = ev;
	qsort(out, (size_t)m, sizeof *out, by_owned_desc);
	return n > 0 && m > n ? n : m;
}

/* Buckets of the chosen schedule: each keeps its largest step's categories. */
static void
fill_points(const Analysis *an, VizTimeline *tl, Arena *a)
{
	const MemEval *ev = &an->ev;
	int n = ev->nsteps, nb = tl->n;
	int64_t cat[CAT_COUNT];
	VizCursor c;
	int s;

	for (int b = 0; b < nb; b++) {
		tl->p[b].lo = (int)((int64_t)b * n / nb);
		tl->p[b].hi = (int)((int64_t)(b + 1) * n / nb);
		tl->p[b].step = -1;
		tl->p[b].base = -1;
	}
	viz_cursor_init(&c, &an->d, ev, a);
	for (int b = 0; (s = viz_cursor_step(&c, cat)) >= 0;) {
		VizPoint *p;
		while (s >= tl->p[b].hi)
			b++;
		p = &tl->p[b];
		p->kinds |= 1u << ev->kind[s];
		if (p->step < 0 || ev->live_bytes[s] > p->total) {
			p->step = s;
			p->total = ev->live_bytes[s];
			memcpy(p->cat, cat, sizeof cat);
		}
		if (p->total > tl->ymax)
			tl->ymax = p->total;
	}
}

/* The -O0 curve, stretched over the plan's steps: -O0 step i of m is drawn
 * at plan step i * n / m. (Placing each op where the plan runs it would
 * follow the plan's reordering: a view the plan hoists to step 0 would drag
 * its late -O0 memory to the left edge.) */
static void
fill_base(const Analysis *an, VizTimeline *tl)
{
	const MemEval *bev = &an->base;
	int64_t n = an->plan.sched.n, m = bev->nsteps;
	int nb = tl->n;

	for (int64_t i = 0; i < m && n > 0; i++) {
		int x = (int)(i * n / m);
		int b = (int)((int64_t)x * nb / n);
		while (b + 1 < nb && x >= tl->p[b].hi)
			b++;
		while (b > 0 && x < tl->p[b].lo)
			b--;
		if (bev->live_bytes[i] > tl->p[b].base)
			tl->p[b].base = bev->live_bytes[i];
		if (bev->live_bytes[i] > tl->ymax)
			tl->ymax = bev->live_bytes[i];
	}
}

/* Largest live instances at each point's step, ntop each. Instances are
 * taken largest first and handed to the points in their live range that
 * still have room; a "next point with room" link (path-compressed) skips the
 * full ones, so the work is O(instances log instances + points x ntop). */
static int
next_open(int *nxt, int b)
{
	int r = b;

	while (nxt[r] != r)
		r = nxt[r];
	while (nxt[b] != r) {
		int t = nxt[b];
		nxt[b] = r;
		b = t;
	}
	return r;
}

static void
fill_top(const Analysis *an, VizTimeline *tl, Arena *a)
{
	const MemEval *ev = &an->ev;
	int nb = tl->n, m = 0;
	int *order = ar_alloc(a, sizeof *order * (size_t)(ev->ninst + 1));
	int *nxt = ar_alloc(a, sizeof *nxt * (size_t)(nb + 1));
	int *cnt = ar_alloc(a, sizeof *cnt * (size_t)(nb + 1));
	int *steps = ar_alloc(a, sizeof *steps * (size_t)(nb + 1));

	for (int b = 0; b <= nb; b++)
		nxt[b] = b;     /* nb: the sentinel past the end */
	for (int b = 0; b < nb; b++) {
		tl->p[b].top = ar_alloc(a, sizeof(int) * (size_t)tl->ntop);
		steps[b] = tl->p[b].step;
	}
	for (int k = 0; k < ev->ninst; k++)
		if (ev->inst[k].owned > 0)
			order[m++] = k;
	cmp_ev = ev;
	qsort(order, (size_t)m, sizeof *order, by_owned_desc);
	for (int i = 0; i < m; i++) {
		const Instance *in = &ev->inst[order[i]];
		int lo = 0, hi = nb;    /* first point whose step >= start */
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (steps[mid] < in->start)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (int b = next_open(nxt, lo); b < nb && steps[b] <= in->end;
		     b = next_open(nxt, b + 1)) {
			tl->p[b].top[cnt[b]++] = order[i];
			if (cnt[b] == tl->ntop)
				nxt[b] = b + 1;
		}
	}
	for (int b = 0; b < nb; b++)
		for (int j = cnt[b]; j < tl->ntop; j++)
			tl->p[b].top[j] = -1;
}

void
viz_timeline(const Analysis *an, int maxpts, int ntop, VizTimeline *tl, Arena *a)
{
	int n = an->ev.nsteps;

	memset(tl, 0, sizeof *tl);
	tl->nsteps = n;
	tl->n = n < maxpts ? n : maxpts;
	tl->ntop = ntop;
	tl->p = ar_alloc(a, sizeof *tl->p * (size_t)(tl->n + 1));
	if (!tl->n)
		return;
	fill_points(an, tl, a);
	tl->has_base = an->goal.level > 0 || an->goal.budget >= 0;
	if (tl->has_base)
		fill_base(an, tl);
	if (ntop > 0)
		fill_top(an, tl, a);
}

unsigned char *
viz_tensor_status(const Analysis *an, Arena *a)
{
	const MemEval *ev = &an->ev;
	unsigned char *st = ar_alloc(a, (size_t)an->d.nt + 1);
	int first_bwd = ev->nsteps;

	for (int s = 0; s < ev->nsteps && first_bwd == ev->nsteps; s++)
		if (ev->kind[s] == STEP_BACKWARD)
			first_bwd = s;
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		if (in->start < 0 || an->d.t[in->tensor].cat != CAT_ACTIVATIONS)
			continue;
		if (ev->kind[in->start] == STEP_RECOMPUTE)
			st[in->tensor] |= VIZ_RECOMPUTED;
		else if (ev->kind[in->start] == STEP_FORWARD && in->end >= first_bwd && in->owned > 0)
			st[in->tensor] |= VIZ_KEPT;
	}
	return st;
}
