/* frontend/bound.c -- inst_bound: decides, before anything is expanded,
 * whether unrolling the program stays within the expansion limit
 * (docs/limits.md). It counts, with saturating arithmetic, the work that
 * instantiation would do: one piece per statement run, per op created,
 * per declared tensor and per repeat iteration (so an empty body counts),
 * with every def call costing its body. Def costs are computed once each, in
 * post-order of the (acyclic, checked by inst_defs) call graph, without
 * recursion over defs, so the time is proportional to the source whatever
 * the expansion would be -- except that a repeat with a loop index whose
 * body holds a repeat counted by that index is costed round by round,
 * stopping once the cost passes the limit (at most limit rounds, each at
 * least one unit). Reads dims (for repeat counts); writes nothing but
 * diagnostics. */
#include <string.h>

#include "inst.h"

typedef struct Bound {
	Inst *in;
	int64_t *cost;          /* per def: one call's work, -1: unknown */
	int *calls;             /* collect mode: callees found, or NULL */
	int ncalls, capcalls;
	LoopIndex idx[64];      /* the indices of the repeats being costed
	                           round by round, innermost last */
	int nidx;
} Bound;

static int64_t stmts_cost(Bound *b, const StmtList *l);

/* The expansion limit: a quarter of the tensor cap, 2^22 units by default
 * (a 1M-op network takes about 2.4M; docs/limits.md). */
static int64_t
limit(const Inst *in)
{
	return in->max_tensors / 4 > 0 ? in->max_tensors / 4 : 1;
}

/* The def index of a call, or -1 (an op, a custom op or a bad def). */
static int
def_index(Bound *b, const Expr *e)
{
	int *k = map_find(&b->in->defs, e->name, 0);

	return k && !b->in->def[*k].bad ? *k : -1;
}

static void
note_call(Bound *b, int k)
{
	b->calls = ar_fit(&b->in->tmp, b->calls, b->ncalls, &b->capcalls,
	                  sizeof *b->calls, 16);
	b->calls[b->ncalls++] = k;
}

/* Work to evaluate e: one per op it makes, plus its def calls' bodies. */
static int64_t
expr_cost(Bound *b, const Expr *e)
{
	int64_t c = 0;
	int k;

	switch (e->kind) {
	case EX_BIN:
		c = ck_sat_add(expr_cost(b, e->l), expr_cost(b, e->r));
		return ck_sat_add(c, 1);
	case EX_NEG:
		return ck_sat_add(expr_cost(b, e->l), 1);
	case EX_CALL:
		for (int i = 0; i < e->args->n; i++)
			c = ck_sat_add(c, expr_cost(b, e->args->v[i].e));
		if ((k = def_index(b, e)) >= 0) {
			if (b->calls)
				note_call(b, k);
			else
				c = ck_sat_add(c, b->cost[k]);
		}
		return ck_sat_add(c, 1);
	default:
		return 0;
	}
}

/* LocalDimFn while costing: the loop indices of Bound.idx. */
static bool
index_value(Inst *in, const void *scope, const char *name, int64_t *out)
{
	const Bound *b = scope;

	(void)in;
	for (int k = b->nidx - 1; k >= 0; k--)
		if (!strcmp(b->idx[k].name, name)) {
			*out = b->idx[k].value;
			return true;
		}
	return false;
}

/* A repeat's count, evaluated without messages (instantiation reports any
 * error in it); 1 when it cannot be evaluated or is not positive. */
static int64_t
repeat_count(Bound *b, const Expr *e)
{
	Diag quiet, *d = b->in->d;
	LocalDimFn local = b->in->local_dim;
	int64_t n = 1;

	diag_init(&quiet, NULL, NULL);
	quiet.silent = true;
	b->in->d = &quiet;
	b->in->local_dim = index_value;
	if (!dim_eval(b->in, e, &n, NULL, b) || n <= 0)
		n = 1;
	b->in->d = d;
	b->in->local_dim = local;
	return n;
}

static bool
mentions(const Expr *e, const char *name)
{
	switch (e->kind) {
	case EX_NAME:
		return !strcmp(e->name, name);
	case EX_NEG:
		return mentions(e->l, name);
	case EX_BIN:
		return mentions(e->l, name) || mentions(e->r, name);
	default:
		return false;
	}
}

/* Whether a repeat nested in l (not through a def call) counts by name. */
static bool
counts_by(const StmtList *l, const char *name)
{
	for (int i = 0; i < l->n; i++)
		if (l->v[i]->kind == ST_REPEAT &&
		    (mentions(l->v[i]->e, name) || counts_by(l->v[i]->body, name)))
			return true;
	return false;
}

/* n rounds of repeat s's body, the index taking each value in turn:
 * stops once past the limit. */
static int64_t
rounds_cost(Bound *b, const Stmt *s, int64_t n)
{
	int64_t c = 0, lim = limit(b->in);

	b->idx[b->nidx++] = (LoopIndex){s->name.s, 0, 0};
	for (int64_t i = 0; i < n && c <= lim; i++) {
		b->idx[b->nidx - 1].value = i;
		c = ck_sat_add(c, ck_sat_add(stmts_cost(b, s->body), 1));
	}
	b->nidx--;
	return c;
}

static int64_t
stmt_cost(Bound *b, const Stmt *s)
{
	int64_t c = 0;

	switch (s->kind) {
	case ST_ASSIGN:
		return expr_cost(b, s->e);
	case ST_INPUT:
	case ST_PARAM:
		return 1;
	case ST_RETURN:
		for (int i = 0; i < s->exprs->n; i++)
			c = ck_sat_add(c, expr_cost(b, s->exprs->v[i]));
		return c;
	case ST_REPEAT:
		if (!b->calls && s->name.s && b->nidx < 64 && counts_by(s->body, s->name.s))
			return rounds_cost(b, s, repeat_count(b, s->e));
		c = ck_sat_add(stmts_cost(b, s->body), 1);  /* the iteration itself */
		return b->calls ? c : ck_sat_mul(repeat_count(b, s->e), c);
	default:
		return 0;       /* top-level kinds run once, elsewhere */
	}
}

static int64_t
stmts_cost(Bound *b, const StmtList *l)
{
	int64_t c = 0;

	for (int i = 0; i < l->n; i++)
		c = ck_sat_add(c, ck_sat_add(stmt_cost(b, l->v[i]), 1));
	return c;
}

/* The callees of def f, as a list in the scratch arena. */
static int *
callees(Bound *b, int f, int *n)
{
	b->calls = NULL;
	b->ncalls = b->capcalls = 0;
	note_call(b, -1);       /* never NULL, even with no callee */
	b->ncalls = 0;
	stmts_cost(b, b->in->def[f].s->body);
	*n = b->ncalls;
	int *v = b->calls;
	b->calls = NULL;
	return v;
}

/* Every def's cost, callees first (iterative depth-first post-order). */
static void
def_costs(Bound *b)
{
	Inst *in = b->in;
	int nd = in->ndef, sp;
	int **out = ar_alloc(&in->tmp, sizeof *out * ((size_t)nd + 1));
	int *nout = ar_alloc(&in->tmp, sizeof(int) * ((size_t)nd + 1));
	int *stack = ar_alloc(&in->tmp, sizeof(int) * ((size_t)nd + 1));
	int *next = ar_alloc(&in->tmp, sizeof(int) * ((size_t)nd + 1));
	unsigned char *seen = ar_alloc(&in->tmp, (size_t)nd + 1);

	b->cost = ar_alloc(&in->tmp, sizeof(int64_t) * ((size_t)nd + 1));
	for (int f = 0; f < nd; f++) {
		b->cost[f] = 0;
		if (!in->def[f].bad)
			out[f] = callees(b, f, &nout[f]);
		else
			nout[f] = 0;
	}
	for (int root = 0; root < nd; root++) {
		if (seen[root])
			continue;
		sp = 0;
		stack[sp++] = root;
		seen[root] = 1;
		next[root] = 0;
		while (sp) {
			int f = stack[sp - 1];
			if (next[f] < nout[f]) {
				int g = out[f][next[f]++];
				if (!seen[g]) {
					seen[g] = 1;
					next[g] = 0;
					stack[sp++] = g;
				}
				continue;
			}
			sp--;
			if (!in->def[f].bad)
				b->cost[f] = stmts_cost(b, in->def[f].s->body);
		}
	}
}

bool
inst_bound(Inst *in)
{
	const StmtList *top = in->p->stmts;
	Bound b = {.in = in};
	int64_t total = 0, lim = limit(in);

	def_costs(&b);
	for (int i = 0; i < top->n; i++) {
		const Stmt *s = top->v[i];
		int64_t c = ck_sat_add(stmt_cost(&b, s), 1);
		if (!ck_add(total, c, &total) || total > lim) {
			diag_error(in->d, s->loc, "network too large: %s would expand to more "
			           "than %lld ops, tensors and repeat iterations (see docs/limits.md)",
			           c > lim ? "this statement" : "the program up to here",
			           (long long)lim);
			in->too_big = true;
			return false;
		}
	}
	return true;
}
