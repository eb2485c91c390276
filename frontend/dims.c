/* frontend/dims.c -- the top-level declarations that come before any tensor:
 * name tables, dimension arithmetic (64-bit, exact division), `def`s and the
 * recursion check, `dim`/`batch` with -D and accumulate, the `train` block
 * and flags, and custom `op`s. Writes Graph.dims, ndims, batch_dim and
 * settings; the CustomOps that OP_CUSTOM ops point to. */
#include <string.h>
#include <strings.h>

#include "inst.h"

/* ---------------------------------------------------------------- tables */

uint32_t
map_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t
keyhash(const char *name, int scope)
{
	return map_hash(name) ^ ((uint32_t)scope * 0x9e3779b1u);
}

int *
map_find(const Map *m, const char *name, int scope)
{
	uint32_t h;

	if (!m->n)      /* before hashing: most programs have no custom op,
	                   dim argument or loop index to look among */
		return NULL;
	h = keyhash(name, scope);
	for (int i = (int)(h & (uint32_t)(m->cap - 1));; i = (i + 1) & (m->cap - 1)) {
		MapEntry *e = &m->e[i];
		if (!e->name)
			return NULL;
		if (e->scope == scope && !strcmp(e->name, name))
			return &e->val;
	}
}

/* The new table is zeroed (ar_grow from nothing) and the old one given
 * back: a 300k-name table left every generation in the arena (115 MB). */
static void
map_rehash(Map *m, Arena *a)
{
	int cap = m->cap ? m->cap * 2 : 64;
	MapEntry *old = m->e, *e;

	m->e = ar_grow(a, NULL, 0, sizeof *m->e * (size_t)cap);
	for (int i = 0; i < m->cap; i++) {
		if (!old[i].name)
			continue;
		int j = (int)(keyhash(old[i].name, old[i].scope) & (uint32_t)(cap - 1));
		while (m->e[j].name)
			j = (j + 1) & (cap - 1);
		m->e[j] = old[i];
	}
	ar_release(a, old);
	m->cap = cap;
	(void)e;
}

/* Half full while small, three quarters once large: a 300k-name table
 * takes 2^19 slots (8 MB), not 2^20, and linear probing is still short at
 * 3/4. Small tables keep their layout, so the order in which
 * hints.c offers equally close names is the one it always was; past
 * MAP_DENSE_CAP slots that order (which name of a tie is suggested) is
 * another, as arbitrary. The keys of def calls that have returned are
 * deleted (map_del), so that order no longer depends on how many calls
 * ran before the misspelt name either. */
enum { MAP_DENSE_CAP = 1 << 16 };

static bool
map_full(const Map *m)
{
	return m->cap < MAP_DENSE_CAP ? 2 * (m->n + 1) > m->cap
	                              : 4 * (int64_t)(m->n + 1) > 3 * (int64_t)m->cap;
}

int *
map_put(Map *m, Arena *a, const char *name, int scope)
{
	int *v = map_find(m, name, scope);
	uint32_t h;
	int i;

	if (v)
		return v;
	if (map_full(m))
		map_rehash(m, a);
	h = keyhash(name, scope);
	for (i = (int)(h & (uint32_t)(m->cap - 1)); m->e[i].name; i = (i + 1) & (m->cap - 1))
		;
	/* keys of scope 0 are copied: a top-level statement's tree may be
	 * freed once it has run (net_parse_once), the table lives on. A def
	 * call's keys come from the def's tree, which is kept: copying them
	 * was a string for every name of every call. */
	m->e[i] = (MapEntry){scope ? name : ar_strdup(a, name), scope, -1};
	m->n++;
	return &m->e[i].val;
}

/* Backward-shift deletion: each entry after the hole that may move back
 * (its home slot is not in the cyclic range after the hole up to it)
 * fills it, so lookups need no tombstones and the table holds only the
 * live keys. */
void
map_del(Map *m, const char *name, int scope)
{
	int *v = map_find(m, name, scope);
	int mask = m->cap - 1, hole, i;

	if (!v)
		return;
	hole = (int)(((char *)v - (char *)m->e) / (ptrdiff_t)sizeof *m->e);
	for (i = (hole + 1) & mask; m->e[i].name; i = (i + 1) & mask) {
		int home = (int)(keyhash(m->e[i].name, m->e[i].scope) & (uint32_t)mask);
		/* home in (hole, i] cyclically: the entry stays */
		if (((i - home) & mask) < ((i - hole) & mask))
			continue;
		m->e[hole] = m->e[i];
		hole = i;
	}
	m->e[hole] = (MapEntry){NULL, 0, 0};
	m->n--;
}

/* ---------------------------------------------------------------- dimension arithmetic */

static bool
arith(Inst *in, const Expr *e, int64_t a, int64_t b, int64_t *out)
{
	bool ovf = false;

	switch (e->op) {
	case '+': ovf = __builtin_add_overflow(a, b, out); break;
	case '-': ovf = __builtin_sub_overflow(a, b, out); break;
	case '*': ovf = __builtin_mul_overflow(a, b, out); break;
	case '/':
		if (b == 0) {
			diag_error(in->d, e->oploc, "division by zero: %lld / 0", (long long)a);
			return false;
		}
		if (a == INT64_MIN && b == -1) {
			ovf = true;
			break;
		}
		if (a % b) {
			diag_error(in->d, e->oploc, "'/' does not divide exactly: %lld / %lld",
			           (long long)a, (long long)b);
			return false;
		}
		*out = a / b;
		break;
	default:
		diag_error(in->d, e->oploc, "'%c' is not a dimension operator", e->op);
		return false;
	}
	if (ovf)
		diag_error(in->d, e->oploc, "dimension overflows 64 bits: %lld %c %lld",
		           (long long)a, e->op, (long long)b);
	return !ovf;
}

static bool
dim_name(Inst *in, const Expr *e, int64_t *out, IsTensorFn is_tensor, const void *scope)
{
	int *k = map_find(&in->dims, e->name, 0);

	if (scope && in->local_dim && in->local_dim(in, scope, e->name, out))
		return true;
	if (k) {
		if (in->dimstate[*k] == DIM_BAD)
			return false;
		if (in->dimstate[*k] == DIM_PENDING) {
			diag_error(in->d, e->loc, "dim '%s' is used before its declaration", e->name);
			return false;
		}
		*out = in->value_mode ? in->g->dims[*k].value : in->g->dims[*k].declared;
		return true;
	}
	for (int i = 0; i < in->nloops; i++)
		if (!strcmp(in->loops[i].name, e->name)) {
			diag_error(in->d, e->loc, "'%s' is the loop index of a repeat that "
			           "calls this def; pass it as a `dim` argument", e->name);
			return false;
		}
	if (map_find(&in->defs, e->name, 0))
		diag_error(in->d, e->loc, "'%s' is a def, not a dimension", e->name);
	else if (is_tensor && is_tensor(in, scope, e->name))
		diag_error(in->d, e->loc, "'%s' is a tensor, not a dimension", e->name);
	else {
		char hint[INST_HINTLEN];
		diag_error(in->d, e->loc, "undefined dim '%s'%s", e->name,
		           inst_hint_dim(in, e->name, hint, sizeof hint));
	}
	return false;
}

static const char *
kind_word(const Expr *e)
{
	switch (e->kind) {
	case EX_REAL: return "a real number";
	case EX_BOOL: return e->b ? "'true'" : "'false'";
	case EX_DTYPE: return "a dtype";
	case EX_CALL: return "a call";
	case EX_LIST: return "a list";
	case EX_TUPLE: return "a tuple";
	default: return "this";
	}
}

bool
dim_eval(Inst *in, const Expr *e, int64_t *out, IsTensorFn is_tensor, const void *scope)
{
	int64_t a, b;

	switch (e->kind) {
	case EX_INT:
		*out = e->i;
		return true;
	case EX_NAME:
		return dim_name(in, e, out, is_tensor, scope);
	case EX_NEG:
		if (!dim_eval(in, e->l, &a, is_tensor, scope))
			return false;
		if (a == INT64_MIN) {
			diag_error(in->d, e->loc, "dimension overflows 64 bits: -(%lld)", (long long)a);
			return false;
		}
		*out = -a;
		return true;
	case EX_BIN:
		if (e->op == '@') {
			diag_error(in->d, e->oploc, "'@' is not a dimension operator");
			return false;
		}
		/* both sides, so that both report their errors */
		bool okl = dim_eval(in, e->l, &a, is_tensor, scope);
		bool okr = dim_eval(in, e->r, &b, is_tensor, scope);
		if (!okl || !okr)
			return false;
		return arith(in, e, a, b, out);
	default:
		diag_error(in->d, e->loc, "expected a dimension expression, not %s", kind_word(e));
		return false;
	}
}

/* ---------------------------------------------------------------- defs */

typedef struct Edge {
	int to;
	Loc loc;
} Edge;

typedef struct Edges {
	Edge *v;
	int n, cap;
} Edges;

static void
add_edge(Inst *in, Edges *es, int to, Loc loc)
{
	es->v = ar_fit(&in->tmp, es->v, es->n, &es->cap, sizeof *es->v, 4);
	es->v[es->n++] = (Edge){to, loc};
}

static void
calls_expr(Inst *in, Edges *es, const Expr *e)
{
	int *k;

	if (!e)
		return;
	switch (e->kind) {
	case EX_CALL:
		if ((k = map_find(&in->defs, e->name, 0)))
			add_edge(in, es, *k, e->loc);
		for (int i = 0; i < e->args->n; i++)
			calls_expr(in, es, e->args->v[i].e);
		break;
	case EX_BIN:
	case EX_NEG:
		calls_expr(in, es, e->l);
		if (e->kind == EX_BIN)
			calls_expr(in, es, e->r);
		break;
	case EX_LIST:
	case EX_TUPLE:
		for (int i = 0; i < e->items->n; i++)
			calls_expr(in, es, e->items->v[i]);
		break;
	default:
		break;
	}
}

static void
calls_stmts(Inst *in, Edges *es, const StmtList *l)
{
	for (int i = 0; i < l->n; i++) {
		const Stmt *s = l->v[i];
		if (s->kind == ST_ASSIGN)
			calls_expr(in, es, s->e);
		else if (s->kind == ST_RETURN)
			for (int j = 0; j < s->exprs->n; j++)
				calls_expr(in, es, s->exprs->v[j]);
		else if (s->kind == ST_REPEAT)
			calls_stmts(in, es, s->body);
	}
}

/* Reports the cycle that closes at edge `e` of the def on top of the DFS
 * stack, and marks every def on it bad. */
static void
report_cycle(Inst *in, const int *stack, int sp, const Edge *e)
{
	int from = sp - 1;
	size_t len = 1;
	char *msg;

	while (stack[from] != e->to)
		from--;
	for (int i = from; i < sp; i++)
		len += strlen(in->def[stack[i]].s->name.s) + 4;
	len += strlen(in->def[e->to].s->name.s);
	msg = ar_alloc(&in->tmp, len);
	for (int i = from; i < sp; i++) {
		strcat(msg, in->def[stack[i]].s->name.s);
		strcat(msg, " -> ");
		in->def[stack[i]].bad = true;
	}
	strcat(msg, in->def[e->to].s->name.s);
	diag_error(in->d, e->loc, "recursive def: %s", msg);
}

/* Depth-first search over the static call graph, without recursion (a
 * chain of many defs must not overflow the C stack). */
static void
check_recursion(Inst *in, Edges *es)
{
	unsigned char *color = ar_alloc(&in->tmp, (size_t)in->ndef + 1);
	int *stack = ar_alloc(&in->tmp, sizeof(int) * ((size_t)in->ndef + 1));
	int *next = ar_alloc(&in->tmp, sizeof(int) * ((size_t)in->ndef + 1));

	for (int root = 0; root < in->ndef; root++) {
		int sp = 0;
		if (color[root])
			continue;
		stack[sp++] = root;
		color[root] = 1;
		next[root] = 0;
		while (sp) {
			int f = stack[sp - 1];
			if (next[f] == es[f].n) {
				color[f] = 2;
				sp--;
				continue;
			}
			const Edge *e = &es[f].v[next[f]++];
			if (color[e->to] == 1)
				report_cycle(in, stack, sp, e);
			else if (!color[e->to]) {
				color[e->to] = 1;
				next[e->to] = 0;
				stack[sp++] = e->to;
			}
		}
	}
}

static void
check_def(Inst *in, DefInfo *df)
{
	const Stmt *s = df->s;
	const StmtList *b = s->body;
	Map args = {0};

	for (int i = 0; i < s->names->n; i++) {
		int *v = map_put(&args, &in->tmp, s->names->v[i].s, 0);
		if (*v >= 0) {
			diag_error(in->d, s->names->v[i].loc, "duplicate argument '%s'",
			           s->names->v[i].s);
			df->bad = true;
		}
		*v = i;
	}
	if (!b->n || b->v[b->n - 1]->kind != ST_RETURN) {
		diag_error(in->d, s->name.loc, "def '%s' must end with a 'return'", s->name.s);
		df->bad = true;
	}
}

/* How many of the top-level statements are of kind k: the def and op
 * tables get room for those only (one record per top-level statement was
 * 4.8 MB of zeroes for a 300k-statement file). */
static int
count_stmts(const StmtList *top, StmtKind k)
{
	int n = 0;

	for (int i = 0; i < top->n; i++)
		n += top->v[i]->kind == k;
	return n;
}

/* Collects every top-level def (a def may be called before it appears),
 * checks names and arguments, and refuses recursion. */
void
inst_defs(Inst *in)
{
	const StmtList *top = in->p->stmts;
	Edges *es;

	in->def = ar_alloc(&in->tmp,
	                   sizeof *in->def * ((size_t)count_stmts(top, ST_DEF) + 1));
	for (int i = 0; i < top->n; i++) {
		const Stmt *s = top->v[i];
		if (s->kind != ST_DEF)
			continue;
		if (ir_op_from_name(s->name.s) >= 0) {
			diag_error(in->d, s->name.loc, "def '%s' has the name of a built-in op",
			           s->name.s);
			continue;
		}
		int *v = map_put(&in->defs, &in->tmp, s->name.s, 0);
		if (*v >= 0) {
			diag_error(in->d, s->name.loc, "'%s' is already a def", s->name.s);
			continue;
		}
		*v = in->ndef;
		in->def[in->ndef] = (DefInfo){s, false};
		check_def(in, &in->def[in->ndef++]);
	}
	es = ar_alloc(&in->tmp, sizeof *es * ((size_t)in->ndef + 1));
	for (int i = 0; i < in->ndef; i++)
		calls_stmts(in, &es[i], in->def[i].s->body);
	check_recursion(in, es);
}

/* ---------------------------------------------------------------- dims */

static bool
eval_const(Inst *in, const Expr *e, int64_t *out)
{
	return dim_eval(in, e, out, NULL, NULL);
}

/* Registers every dim name in declaration order, before any is evaluated,
 * so that a forward reference gets a clear message. */
/* Name's slot in m (in->dims or in->customs) for a new dim or custom op, or
 * NULL, reported, where a def or an earlier one of m has the name. */
static int *
claim_name(Inst *in, Map *m, const char *name, Loc loc)
{
	int *v;

	if (map_find(&in->defs, name, 0)) {
		diag_error(in->d, loc, "'%s' is already a def", name);
		return NULL;
	}
	v = map_put(m, &in->tmp, name, 0);
	if (*v < 0)
		return v;
	if (m == &in->dims)
		diag_error(in->d, loc, "duplicate dim '%s'", name);
	else
		diag_error(in->d, loc, "op '%s' is already declared", name);
	return NULL;
}

static void
collect_dims(Inst *in)
{
	const StmtList *top = in->p->stmts;
	Graph *g = in->g;
	int n = 0;

	for (int i = 0; i < top->n; i++)
		if (top->v[i]->kind == ST_DIM || top->v[i]->kind == ST_BATCH)
			n += top->v[i]->kvs->n;
	g->dims = ar_alloc(g->arena, sizeof *g->dims * ((size_t)n + 1));
	in->dimstate = ar_alloc(&in->tmp, (size_t)n + 1);
	in->dimexpr = ar_alloc(&in->tmp, sizeof *in->dimexpr * ((size_t)n + 1));
	for (int i = 0; i < top->n; i++) {
		const Stmt *s = top->v[i];
		if (s->kind != ST_DIM && s->kind != ST_BATCH)
			continue;
		if (s->kind == ST_BATCH && g->batch_dim) {
			diag_error(in->d, s->loc, "only one 'batch' dimension is allowed (already '%s')",
			           g->batch_dim);
			continue;
		}
		for (int j = 0; j < s->kvs->n; j++) {
			const Kv *kv = &s->kvs->v[j];
			int *v = claim_name(in, &in->dims, kv->key.s, kv->key.loc);
			if (!v)
				continue;
			/* the graph outlives the syntax tree (the driver may
			 * free it once instantiated): names are copied */
			const char *name = ar_strdup(g->arena, kv->key.s);
			*v = g->ndims;
			g->dims[g->ndims] = (Dim){name, 0, 0, s->kind == ST_BATCH, kv->key.loc};
			in->dimexpr[g->ndims++] = kv->e;
			if (s->kind == ST_BATCH)
				g->batch_dim = name;
		}
	}
}

static void
apply_overrides(Inst *in)
{
	for (int i = 0; i < in->o->ndefs; i++) {
		const DimOverride *ov = &in->o->defs[i];
		int *k = map_find(&in->dims, ov->name, 0);
		if (!k) {
			diag_error(in->d, loc_make(in->p->file, 0, 0),
			           "-D %s=%lld: no dim or batch named '%s'", ov->name,
			           (long long)ov->value, ov->name);
			continue;
		}
		in->dimexpr[*k] = NULL;
		in->g->dims[*k].declared = in->g->dims[*k].value = ov->value;
	}
}

/* One pass over the dims in order: declared values, or (value_mode) the
 * values shapes use, where the batch dim is divided by accumulate. */
static void
eval_dims(Inst *in, int64_t k)
{
	Graph *g = in->g;

	for (int i = 0; i < g->ndims; i++) {
		Dim *dm = &g->dims[i];
		int64_t v;
		if (in->dimstate[i] == DIM_BAD)
			continue;
		if (in->value_mode && dm->is_batch)
			dm->value = dm->declared / k;
		else if (in->dimexpr[i] && !eval_const(in, in->dimexpr[i], &v))
			in->dimstate[i] = DIM_BAD;
		else if (in->dimexpr[i] && in->value_mode)
			dm->value = v;
		else if (in->dimexpr[i])
			dm->declared = dm->value = v;
		if (in->dimstate[i] != DIM_BAD)
			in->dimstate[i] = DIM_OK;
	}
}

/* ---------------------------------------------------------------- train */

static const char *
name_value(Inst *in, const Kv *kv)
{
	if (kv->e->kind == EX_NAME)
		return kv->e->name;
	diag_error(in->d, kv->e->loc, "'%s' takes a name", kv->key.s);
	return NULL;
}

static void
train_setting(Inst *in, const Kv *kv, Settings *st, Loc *accloc)
{
	const char *v;
	int64_t k;

	static const char *const keys[] = {"optimizer", "precision", "accumulate"};
	static const char *const precisions[] = {"declared", "mixed"};
	char hint[INST_HINTLEN];

	if (!strcmp(kv->key.s, "optimizer")) {
		if ((v = name_value(in, kv)) && optimizer_from_name(v) < 0)
			diag_error(in->d, kv->e->loc, "unknown optimizer '%s'%s (expected sgd, "
			           "momentum, adagrad, rmsprop, lion, adam or adamw)", v,
			           inst_hint_word(optimizer_names, OPT_COUNT, v, hint, sizeof hint));
		else if (v)
			st->optimizer = (Optimizer)optimizer_from_name(v);
	} else if (!strcmp(kv->key.s, "precision")) {
		if ((v = name_value(in, kv)) && strcasecmp(v, "declared") && strcasecmp(v, "mixed"))
			diag_error(in->d, kv->e->loc,
			           "unknown precision '%s'%s (expected declared or mixed)", v,
			           inst_hint_word(precisions, 2, v, hint, sizeof hint));
		else if (v)
			st->mixed = !strcasecmp(v, "mixed");
	} else if (!strcmp(kv->key.s, "accumulate")) {
		if (!eval_const(in, kv->e, &k))
			return;
		if (k < 1)
			diag_error(in->d, kv->e->loc, "accumulate must be at least 1, got %lld",
			           (long long)k);
		else {
			st->accumulate = k;
			*accloc = kv->e->loc;
		}
	} else
		diag_error(in->d, kv->key.loc, "unknown train setting '%s'%s (expected "
		           "optimizer, precision or accumulate)", kv->key.s,
		           inst_hint_word(keys, 3, kv->key.s, hint, sizeof hint));
}

static void
train_block(Inst *in, Settings *st, Loc *accloc)
{
	const StmtList *top = in->p->stmts;
	const Stmt *seen = NULL;

	for (int i = 0; i < top->n; i++) {
		const Stmt *s = top->v[i];
		if (s->kind != ST_TRAIN)
			continue;
		if (seen) {
			diag_error(in->d, s->loc, "duplicate train block");
			continue;
		}
		seen = s;
		for (int j = 0; j < s->kvs->n; j++) {
			bool dup = false;
			for (int m = 0; m < j; m++)
				dup |= !strcmp(s->kvs->v[m].key.s, s->kvs->v[j].key.s);
			if (dup)
				diag_error(in->d, s->kvs->v[j].key.loc, "duplicate train setting '%s'",
				           s->kvs->v[j].key.s);
			else
				train_setting(in, &s->kvs->v[j], st, accloc);
		}
	}
}

/* Checks that the batch dim divides by k; returns the k to use (1 after an
 * error, so that later dims are not reported again). */
static int64_t
check_accumulate(Inst *in, int64_t k, Loc accloc)
{
	Graph *g = in->g;
	int *b;

	if (k <= 1)
		return 1;
	if (!g->batch_dim) {
		diag_error(in->d, accloc, "accumulate = %lld needs a 'batch' dimension to split",
		           (long long)k);
		return 1;
	}
	b = map_find(&in->dims, g->batch_dim, 0);
	if (in->dimstate[*b] == DIM_BAD)
		return 1;
	if (g->dims[*b].declared % k) {
		diag_error(in->d, g->dims[*b].loc,
		           "batch %s = %lld is not divisible by accumulate = %lld",
		           g->batch_dim, (long long)g->dims[*b].declared, (long long)k);
		return 1;
	}
	return k;
}

/* Dims (declared, then with B/k), the train block and the flags. */
void
inst_dims_and_settings(Inst *in)
{
	const NetOptions *o = in->o;
	Settings *st = &in->g->settings;
	Loc accloc = loc_make(in->p->file, 0, 0);
	int64_t k;

	st->optimizer = OPT_ADAMW;
	st->mixed = false;
	st->accumulate = 1;
	st->dist = o->dist;
	st->pipe = o->pipe;
	if (st->pipe.micro_batches < 1)
		st->pipe.micro_batches = st->pipe.stages > 1 ? st->pipe.stages : 1;
	if (st->dist.ranks < 1)
		st->dist.ranks = 1;
	if (st->dist.bucket <= 0)
		st->dist.bucket = 25 << 20;     /* DDP's bucket_cap_mb = 25 */
	collect_dims(in);
	apply_overrides(in);
	in->value_mode = false;
	eval_dims(in, 1);
	train_block(in, st, &accloc);
	if (o->optimizer_set)
		st->optimizer = o->optimizer;
	if (o->precision_set)
		st->mixed = o->mixed;
	st->pytorch = o->pytorch;
	st->pytorch_cpu = o->pytorch_cpu;
	if (o->accumulate_set) {
		accloc = loc_make(in->p->file, 0, 0);
		if (o->accumulate < 1)
			diag_error(in->d, accloc, "--accumulate %lld: must be at least 1",
			           (long long)o->accumulate);
		else
			st->accumulate = o->accumulate;
	}
	k = check_accumulate(in, st->accumulate, accloc);
	in->value_mode = true;
	eval_dims(in, k);
}

/* ---------------------------------------------------------------- custom ops */

static bool
custom_saves(Inst *in, CustomOp *c, const Expr *e)
{
	const Expr *one[1] = {e};
	const Expr *const *items = one;
	int n = 1;
	bool ok = true;

	if (e->kind == EX_TUPLE) {
		items = (const Expr *const *)e->items->v;
		n = e->items->n;
	}
	for (int i = 0; i < n; i++) {
		const Expr *x = items[i];
		int a = -1;
		if (x->kind == EX_NAME && !strcmp(x->name, "out")) {
			c->saves_out = true;
			continue;
		}
		for (int j = 0; x->kind == EX_NAME && j < c->nargs; j++)
			if (!strcmp(c->argnames[j], x->name))
				a = j;
		if (a < 0) {
			diag_error(in->d, x->loc, "'saves' lists arguments of '%s' and 'out'", c->name);
			ok = false;
		} else
			c->saves_arg[a] = true;
	}
	return ok;
}

static bool
custom_setting(Inst *in, CustomOp *c, const Kv *kv, bool *has_bwd)
{
	int64_t v;

	if (!strcmp(kv->key.s, "saves"))
		return custom_saves(in, c, kv->e);
	if (strcmp(kv->key.s, "flops") && strcmp(kv->key.s, "backward_flops") &&
	    strcmp(kv->key.s, "workspace")) {
		diag_error(in->d, kv->key.loc, "unknown custom op setting '%s' (expected "
		           "flops, backward_flops, saves or workspace)", kv->key.s);
		return false;
	}
	if (!eval_const(in, kv->e, &v))
		return false;
	if (v < 0) {
		diag_error(in->d, kv->e->loc, "'%s' must not be negative, got %lld", kv->key.s,
		           (long long)v);
		return false;
	}
	if (!strcmp(kv->key.s, "flops"))
		c->flops = v;
	else if (!strcmp(kv->key.s, "workspace"))
		c->workspace = v;
	else {
		c->backward_flops = v;
		*has_bwd = true;
	}
	return true;
}

static bool
custom_type(Inst *in, CustomOp *c, const Type *t)
{
	bool ok = true;

	c->out_dtype = t->dt;
	if (t->dims->n > IR_MAXDIM) {
		diag_error(in->d, t->loc, "a tensor has at most %d dimensions, not %d",
		           IR_MAXDIM, t->dims->n);
		return false;
	}
	c->out_ndim = t->dims->n;
	for (int i = 0; i < t->dims->n; i++)
		ok &= eval_const(in, t->dims->v[i], &c->out_shape[i]);
	return ok;
}

static CustomOp *
custom_eval(Inst *in, const Stmt *s)
{
	CustomOp *c = ar_alloc(in->g->arena, sizeof *c);
	bool ok = true, has_flops = false, has_bwd = false;

	c->name = ar_strdup(in->g->arena, s->name.s);    /* outlives the tree */
	c->loc = s->loc;
	c->nargs = s->names->n;
	c->argnames = ar_alloc(in->g->arena, sizeof *c->argnames * ((size_t)c->nargs + 1));
	c->saves_arg = ar_alloc(in->g->arena, (size_t)c->nargs + 1);
	for (int i = 0; i < c->nargs; i++) {
		const Name *a = &s->names->v[i];
		bool dup = !strcmp(a->s, "out");
		for (int j = 0; j < i; j++)
			dup |= !strcmp(c->argnames[j], a->s);
		if (dup) {
			diag_error(in->d, a->loc, !strcmp(a->s, "out")
			           ? "an argument may not be named '%s'" : "duplicate argument '%s'", a->s);
			ok = false;
		}
		c->argnames[i] = ar_strdup(in->g->arena, a->s);
	}
	ok &= custom_type(in, c, s->type);
	for (int i = 0; i < s->kvs->n; i++) {
		const Kv *kv = &s->kvs->v[i];
		bool dup = false;
		for (int j = 0; j < i; j++)
			dup |= !strcmp(s->kvs->v[j].key.s, kv->key.s);
		if (dup) {
			diag_error(in->d, kv->key.loc, "duplicate setting '%s'", kv->key.s);
			ok = false;
			continue;
		}
		has_flops |= !strcmp(kv->key.s, "flops");
		ok &= custom_setting(in, c, kv, &has_bwd);
	}
	if (!has_flops) {
		diag_error(in->d, s->name.loc, "custom op '%s' needs 'flops'", c->name);
		ok = false;
	}
	if (ok && !has_bwd && __builtin_mul_overflow(c->flops, 2, &c->backward_flops)) {
		diag_error(in->d, s->name.loc, "backward FLOPs of '%s' overflow 64 bits", c->name);
		ok = false;
	}
	return ok ? c : NULL;
}

/* Collects and evaluates every top-level `op` declaration. */
void
inst_customs(Inst *in)
{
	const StmtList *top = in->p->stmts;

	in->custom = ar_alloc(&in->tmp,
	                      sizeof *in->custom * ((size_t)count_stmts(top, ST_OP) + 1));
	for (int i = 0; i < top->n; i++) {
		const Stmt *s = top->v[i];
		if (s->kind != ST_OP)
			continue;
		if (ir_op_from_name(s->name.s) >= 0) {
			diag_error(in->d, s->name.loc, "op '%s' is already a built-in op", s->name.s);
			continue;
		}
		int *v = claim_name(in, &in->customs, s->name.s, s->name.loc);
		if (!v)
			continue;
		*v = in->ncustom;
		in->custom[in->ncustom].s = s;
		in->custom[in->ncustom++].op = custom_eval(in, s);
	}
}
