/* frontend/instantiate.c -- net_instantiate: the syntax tree to the flat
 * Graph. Unrolls repeats, instantiates every def call afresh, evaluates
 * attributes and shape lists, and names every tensor per language.md
 * ("Names of tensors"). Writes Graph.t (ids, kinds, scopes, locations; dtype
 * and shape of params and inputs only), Graph.op (kinds, inputs, outputs,
 * params, custom ops), outputs, output_loc, train and loss; dims and
 * settings come from frontend/dims.c.
 *
 * frontend/README-notes -- choices where language.md is silent:
 * - `dim`, `batch`, `def`, `op`, `train` and `output` are top-level
 *   statements, not allowed in a def or a repeat body; `return` is allowed
 *   only as the last statement of a def, and every def must end with one.
 *   `input` may appear in a def like `param` (then named `f.i.x`).
 * - Dims are evaluated in declaration order: a dim may use only the dims
 *   declared before it. Everything else (types, lists, repeat counts,
 *   custom ops) may use any dim. `accumulate` in a train block is a
 *   dimension expression over the declared dims.
 * - A -D override replaces the dim's definition, which is then not
 *   evaluated; with accumulate k the batch dim's value is its (overridden)
 *   declared value / k and every other dim is re-evaluated with it.
 * - A `param` or `input` may not take a name already bound in its scope
 *   (by a declaration, an argument or a binding): "duplicate param 'w'".
 *   Declarations count as the first binding of their name, like arguments.
 * - A def sees the top-level params and inputs declared before the call
 *   in program order, by their declared tensor even if the top level
 *   rebinds the name later.
 * - `/` is an error: between tensors, use div(a, b); by a number, scale(x,
 *   c=1/v) (frontend/habits.c says which). Numbers, lists and booleans are
 *   not tensors. A def called inside an expression gives its
 *   return value and makes no tensor; an unnamed return that is a call of
 *   another def also counts as a binding of `return`.
 * - Return values and operands must be single tensors; a multi-valued
 *   expression (split with n > 1, a def returning several values) can only
 *   be bound by `a, b = ...` with as many names as values.
 * - Custom ops need `flops`; `saves` defaults to nothing. Custom op
 *   arguments may not be named `out`. Custom op names may not be those of
 *   built-in ops or defs; they do not clash with tensor names.
 * - In train mode an output given by a name whose binding failed still
 *   counts as the one output (no second error).
 * - A repeat whose count is bad (error reported) runs its body once, to
 *   report errors in it and to bind its names; unrolling stops at the first
 *   iteration that reports an error. Def calls nest at most 256 deep, and
 *   the graph holds at most 2^24 tensors (NetOptions.max_tensors); the
 *   whole expansion is counted before it starts (frontend/bound.c,
 *   docs/limits.md).
 * - A def argument written `dim n` takes a dimension expression of the
 *   caller, evaluated at the call; it is seen by dim_eval in that call
 *   only (Inst.localdims), may not take a top-level dim's name,
 *   and no binding in the body may take its name.
 * - `repeat i in n { ... }` runs its body with i = 0, 1, ..., n - 1, a
 *   dimension value seen by dim_eval in the same scope instance only (a
 *   def called from the body must be passed it, like a `dim` argument).
 *   The index may not take the name of a dim, a def, a `dim` argument, an
 *   enclosing repeat's index or a tensor bound in the scope, and no
 *   binding in the body may take its name; after the repeat it is gone.
 * - `param w : T frozen;` marks Tensor.frozen; shape inference then gives
 *   w no needs_grad, and the lowering no master copy or optimizer state.
 *   `param m : T buffer;` is frozen too, and marks Tensor.buffer: the
 *   reports leave it out of the parameter count.
 */
#include <string.h>

#include "inst.h"

/* One call's scope (or the top level): its bindings are keyed by id. */
typedef struct Scope {
	int id;
	const char *prefix;     /* "" or "enc.1.conv.0." */
	bool top;
	int depth;              /* def calls nested */
} Scope;

/* A binding statement's names: the root op's outputs get ids[], every
 * other op it makes is named base~j in evaluation order. */
typedef struct Namer {
	const char *base;
	int j;
	const char *const *ids;
	int nids;
	Loc stmt;
} Namer;

static void exec_stmts(Inst *in, Scope *sc, const StmtList *l);
static Val eval(Inst *in, Scope *sc, const Expr *e, Namer *nm, bool root);

static const Val poison = {VK_POISON, -1, 0, NULL};

static Val
one(int t)
{
	return (Val){VK_ONE, t, 1, NULL};
}

/* ---------------------------------------------------------------- bindings */

static Bind *
find_bind(Inst *in, const Scope *sc, const char *name)
{
	int *k = map_find(&in->names, name, sc->id);

	return k ? &in->binds.v[*k] : NULL;
}

/* map_put of (name, sc) into m; a new key of a def call's scope is
 * logged, for leave_scope to drop. */
static int *
scope_put(Inst *in, Map *m, const Scope *sc, const char *name)
{
	int *k = map_put(m, &in->tmp, name, sc->id);

	if (*k < 0 && !sc->top) {
		in->undo = ar_fit(&in->tmp, in->undo, in->nundo, &in->capundo,
		                  sizeof *in->undo, 64);
		in->undo[in->nundo++] = (ScopeKey){m, name, sc->id};
	}
	return k;
}

/* The state before a def call's scope got its first key. */
typedef struct ScopeMark {
	int undo, binds, ld;
} ScopeMark;

static ScopeMark
scope_mark(const Inst *in)
{
	return (ScopeMark){in->nundo, in->binds.n, in->nld};
}

/* A def call has returned: its scope's keys, bindings and dim arguments
 * go (nested calls have dropped theirs already), since the scope's id
 * is never used again. The names table holds the live scopes only, not
 * eight keys of every call a million-op file makes. */
static void
leave_scope(Inst *in, ScopeMark mk)
{
	while (in->nundo > mk.undo) {
		const ScopeKey *k = &in->undo[--in->nundo];
		map_del(k->m, k->name, k->scope);
	}
	in->binds.n = mk.binds;
	in->nld = mk.ld;
}

/* Makes (or returns) the binding slot of name in sc, count 0 when new. */
static Bind *
put_bind(Inst *in, const Scope *sc, const char *name)
{
	int *k = scope_put(in, &in->names, sc, name);

	if (*k < 0) {
		Binds *bs = &in->binds;
		bs->v = ar_fit(&in->tmp, bs->v, bs->n, &bs->cap, sizeof *bs->v, 1024);
		*k = bs->n++;
		bs->v[*k] = (Bind){poison, 0, ST_ASSIGN};
	}
	return &in->binds.v[*k];
}

static bool
is_tensor_name(Inst *in, const void *scope, const char *name)
{
	const Scope *sc = scope;

	return find_bind(in, sc, name) || (!sc->top && map_find(&in->topdecl, name, 0));
}

/* The running repeat of the scope sc whose index is name, or NULL. */
static LoopIndex *
loop_of(Inst *in, const Scope *sc, const char *name)
{
	for (int k = in->nloops - 1; k >= 0; k--)
		if (in->loops[k].scope == sc->id && !strcmp(in->loops[k].name, name))
			return &in->loops[k];
	return NULL;
}

/* LocalDimFn: a loop index or a `dim` argument of the call whose scope is `scope`. */
static bool
local_dim(Inst *in, const void *scope, const char *name, int64_t *out)
{
	const Scope *sc = scope;
	const LoopIndex *li = loop_of(in, sc, name);
	int *k = li ? NULL : map_find(&in->localdims, name, sc->id);

	if (li)
		*out = li->value;
	else if (k)
		*out = in->ldval[*k];
	return li || k;
}

/* Binds the `dim` argument name to v in the call's scope sc. */
static void
bind_local_dim(Inst *in, const Scope *sc, const char *name, int64_t v)
{
	in->ldval = ar_fit(&in->tmp, in->ldval, in->nld, &in->capld, sizeof *in->ldval, 64);
	in->ldval[in->nld] = v;
	*scope_put(in, &in->localdims, sc, name) = in->nld++;
}

/* A tensor may not take the name of a dim, a def or a `dim` argument. */
static bool
name_free(Inst *in, const Scope *sc, const Name *n)
{
	const char *what = map_find(&in->dims, n->s, 0) ? "dim"
	                   : map_find(&in->defs, n->s, 0) ? "def"
	                   : map_find(&in->localdims, n->s, sc->id) ? "dim argument"
	                   : loop_of(in, sc, n->s) ? "loop index" : NULL;

	if (what)
		diag_error(in->d, n->loc, "'%s' is a %s; a tensor cannot take its name", n->s, what);
	return !what;
}

/* s1 s2 sep n tail, n >= 0 in decimal, in the graph's arena: what
 * ar_printf("%s%s@%d") and the like make, without vsnprintf, which was
 * most of the cost of the several ids that every op of a million-op
 * file takes. */
static const char *
id_num(Inst *in, const char *s1, const char *s2, char sep, int n, const char *tail)
{
	char buf[256], digits[16];
	size_t n1 = strlen(s1), n2 = strlen(s2), n3 = strlen(tail), nd = 0, len;
	unsigned u = (unsigned)n;

	do
		digits[nd++] = (char)('0' + u % 10);
	while (u /= 10);
	len = n1 + n2 + 1 + nd + n3;
	if (len >= sizeof buf)
		return ar_printf(in->g->arena, "%s%s%c%d%s", s1, s2, sep, n, tail);
	memcpy(buf, s1, n1);
	memcpy(buf + n1, s2, n2);
	buf[n1 + n2] = sep;
	for (size_t i = 0; i < nd; i++)
		buf[n1 + n2 + 1 + i] = digits[nd - 1 - i];
	memcpy(buf + n1 + n2 + 1 + nd, tail, n3);
	return ar_strndup(in->g->arena, buf, len);
}

/* The id of the next binding of name in sc: name, name@1, name@2, ... */
static const char *
next_id(Inst *in, const Scope *sc, const char *name)
{
	Bind *b = find_bind(in, sc, name);

	if (!b || !b->count)
		return ar_cat(in->g->arena, sc->prefix, name, "");
	return id_num(in, sc->prefix, name, '@', b->count, "");
}

static void
rebind(Inst *in, const Scope *sc, const char *name, Val v, StmtKind decl)
{
	Bind *b = put_bind(in, sc, name);

	b->v = v;
	b->count++;
	b->decl = decl;
}

/* ---------------------------------------------------------------- graph */

static bool
room(Inst *in, int more)
{
	if (in->too_big)
		return false;
	if (in->g->nt + more <= in->max_tensors)
		return true;
	diag_error(in->d, in->at, "network too large: more than %d tensors (see "
	           "docs/limits.md)", in->max_tensors);
	in->too_big = true;
	return false;
}

/* Appends op kind over ins and names its nout outputs; a root op takes the
 * statement's ids, any other op the next intermediate name. */
static Val
make_op(Inst *in, Scope *sc, OpKind kind, const int *ins, int nin, const Expr *e,
        Namer *nm, bool root, int nout, const char *what)
{
	Graph *g = in->g;
	const char *mid[1];
	int o;

	if (root && nout != nm->nids) {
		diag_error(in->d, nm->stmt, "cannot bind %d value%s to %d name%s", nout,
		           nout == 1 ? "" : "s", nm->nids, nm->nids == 1 ? "" : "s");
		return poison;
	}
	if (!root && nout != 1) {
		diag_error(in->d, e->loc, "'%s' gives %d values where one is expected", what, nout);
		return poison;
	}
	if (!room(in, nout + IR_MAXEXTRA))
		return poison;
	if (!root)
		mid[0] = id_num(in, nm->base, "", '~', ++nm->j, "");
	o = ir_add_op(g, kind, ins, nin);
	ir_set_outputs(g, o, root ? nm->ids : mid, nout, sc->prefix, e->loc);
	if (nout == 1)
		return one(g->op[o].out[0]);
	return (Val){VK_MULTI, -1, nout, g->op[o].out};
}

/* ---------------------------------------------------------------- names and operands */

static Val
lookup(Inst *in, Scope *sc, const Expr *e)
{
	Bind *b = find_bind(in, sc, e->name);
	int *t;

	if (b)
		return b->v;
	if (!sc->top && (t = map_find(&in->topdecl, e->name, 0)))
		return one(*t);
	if (map_find(&in->localdims, e->name, sc->id))
		diag_error(in->d, e->loc, "'%s' is a dim argument, not a tensor", e->name);
	else if (loop_of(in, sc, e->name))
		diag_error(in->d, e->loc, "'%s' is a loop index, not a tensor", e->name);
	else if (map_find(&in->dims, e->name, 0))
		diag_error(in->d, e->loc, "'%s' is a dim, not a tensor", e->name);
	else if (map_find(&in->defs, e->name, 0))
		diag_error(in->d, e->loc, "'%s' is a def, not a tensor", e->name);
	else if (!sc->top && map_find(&in->names, e->name, 0))
		diag_error(in->d, e->loc, "undefined name '%s' (a def does not see "
		           "top-level bindings)", e->name);
	else {
		char hint[INST_HINTLEN];
		diag_error(in->d, e->loc, "undefined name '%s'%s", e->name,
		           inst_hint_name(in, sc->id, sc->top, e->name, hint, sizeof hint));
	}
	return poison;
}

/* An operand: one tensor, or poison. */
static Val
operand(Inst *in, Scope *sc, const Expr *e, Namer *nm)
{
	Val v = eval(in, sc, e, nm, false);

	if (v.kind == VK_MULTI) {
		diag_error(in->d, e->loc, "'%s' gives %d values where one is expected",
		           e->kind == EX_CALL ? e->name : "expression", v.n);
		return poison;
	}
	return v;
}

static bool
dims_of(Inst *in, Scope *sc, const Expr *e, int64_t *out)
{
	return dim_eval(in, e, out, is_tensor_name, sc);
}

/* ---------------------------------------------------------------- calls */

/* An attribute or positional parameter's value, by its form. */
static bool
attr_value(Inst *in, Scope *sc, const Expr *e, AttrValue *v)
{
	bool ok = true;

	memset(v, 0, sizeof *v);
	if (e->kind == EX_REAL || (e->kind == EX_NEG && e->l->kind == EX_REAL)) {
		v->kind = AV_REAL;
		v->r = e->kind == EX_REAL ? e->real : -e->l->real;
	} else if (e->kind == EX_BOOL) {
		v->kind = AV_BOOL;
		v->b = e->b;
	} else if (e->kind == EX_DTYPE) {
		v->kind = AV_DTYPE;
		v->dt = e->dt;
	} else if (e->kind == EX_LIST) {
		v->kind = AV_LIST;
		if (e->items->n > IR_MAXDIM) {
			diag_error(in->d, e->loc, "a list has at most %d elements, not %d",
			           IR_MAXDIM, e->items->n);
			return false;
		}
		v->n = e->items->n;
		for (int i = 0; i < v->n; i++)
			ok &= dims_of(in, sc, e->items->v[i], &v->list[i]);
	} else {
		v->kind = AV_INT;
		ok = dims_of(in, sc, e, &v->i);
	}
	return ok;
}

static int
attr_bit(const char *attrs, const char *key)
{
	size_t n = strlen(key);

	for (int bit = 0; *attrs; bit++) {
		const char *end = strchr(attrs, ' ');
		size_t len = end ? (size_t)(end - attrs) : strlen(attrs);
		if (len == n && !strncmp(attrs, key, n))
			return bit;
		if (!end)
			break;
		attrs = end + 1;
	}
	return -1;
}

static int
npositional(const Expr *e)
{
	int n = 0;

	for (int i = 0; i < e->args->n; i++)
		n += e->args->v[i].key == NULL;
	return n;
}

static bool
check_arity(Inst *in, const Expr *e, const OpInfo *info, int p)
{
	int lo = info->min_args + info->npos, hi = info->max_args + info->npos;

	if (p >= lo && (info->max_args < 0 || p <= hi))
		return true;
	if (info->max_args < 0)
		diag_error(in->d, e->loc, "op '%s' takes at least %d argument%s, got %d",
		           e->name, lo, lo == 1 ? "" : "s", p);
	else if (lo == hi)
		diag_error(in->d, e->loc, "op '%s' takes %d argument%s, got %d", e->name, lo,
		           lo == 1 ? "" : "s", p);
	else
		diag_error(in->d, e->loc, "op '%s' takes %d to %d arguments, got %d", e->name,
		           lo, hi, p);
	return false;
}

/* Positional parameters and attributes of a built-in op into p. */
static bool
op_params(Inst *in, Scope *sc, const Expr *e, OpKind k, int ntensor, OpParams *p)
{
	const OpInfo *info = &ir_optab[k];
	unsigned given = 0;
	bool ok = true;
	int pos = 0, seen = 0;

	ir_params_default(p);
	for (int i = 0; i < e->args->n; i++) {
		const Arg *a = &e->args->v[i];
		AttrValue v;
		const char *msg;
		if (!a->key && seen++ < ntensor)
			continue;
		for (int j = 0; a->key && j < i; j++)
			if (e->args->v[j].key && !strcmp(e->args->v[j].key, a->key)) {
				diag_error(in->d, a->keyloc, "duplicate attribute '%s'", a->key);
				ok = false;
				goto next;
			}
		if (!attr_value(in, sc, a->e, &v)) {
			ok = false;
			continue;
		}
		if ((msg = ir_set_attr(k, p, a->key, a->key ? -1 : pos, &v))) {
			diag_error(in->d, a->key ? a->keyloc : a->e->loc, "%s", msg);
			ok = false;
		} else if (a->key && attr_bit(info->attrs, a->key) >= 0)
			given |= 1u << attr_bit(info->attrs, a->key);
		pos += !a->key;
	next:;
	}
	const char *msg = ok ? ir_check_attrs(k, p, given) : NULL;
	if (msg)
		diag_error(in->d, e->loc, "%s", msg);
	return ok && !msg;
}

enum { FEW_ARGS = 4 };

/* Evaluates the first n positional arguments as operands, into few (room
 * for FEW_ARGS, the caller's) when they fit: make_op copies them, and an
 * array in the arena for every call was 4.8 MB of a 300k-call file. */
static const int *
tensor_args(Inst *in, Scope *sc, const Expr *e, int n, Namer *nm, bool *ok, int *few)
{
	int *ts = n <= FEW_ARGS ? few : ar_array(&in->tmp, (size_t)n + 1, sizeof(int));
	int k = 0;

	for (int i = 0; i < e->args->n && k < n; i++) {
		if (e->args->v[i].key)
			continue;
		Val v = operand(in, sc, e->args->v[i].e, nm);
		*ok &= v.kind == VK_ONE;
		ts[k++] = v.t;
	}
	return ts;
}

static Val
call_builtin(Inst *in, Scope *sc, const Expr *e, OpKind k, Namer *nm, bool root)
{
	const OpInfo *info = &ir_optab[k];
	int p = npositional(e), nt = p - info->npos, nout = 1;
	bool ok = true;
	OpParams prm;
	const int *ts;
	int few[FEW_ARGS] = {0};

	if (!check_arity(in, e, info, p))
		return poison;
	ts = tensor_args(in, sc, e, nt, nm, &ok, few);
	if (!op_params(in, sc, e, k, nt, &prm) || !ok)
		return poison;
	if (k == OP_SPLIT) {
		if (prm.n < 1) {
			diag_error(in->d, e->loc, "split needs at least 1 part, got %lld",
			           (long long)prm.n);
			return poison;
		}
		nout = prm.n > 1 << 20 ? 1 << 20 : (int)prm.n;
	}
	if (info->nout)
		nout = info->nout;
	Val v = make_op(in, sc, k, ts, nt, e, nm, root, nout, e->name);
	if (v.kind != VK_POISON)
		ir_set_params(in->g, in->g->nop - 1, &prm);
	/* attention's dropout mask exists only with dropout */
	if (v.kind != VK_POISON && k == OP_ATTENTION && prm.dropout != 0)
		ir_add_extra(in->g, in->g->nop - 1, 1);
	return v;
}

static bool
no_attrs(Inst *in, const Expr *e, const char *what)
{
	for (int i = 0; i < e->args->n; i++)
		if (e->args->v[i].key) {
			diag_error(in->d, e->args->v[i].keyloc, "%s '%s' takes no attributes",
			           what, e->name);
			return false;
		}
	return true;
}

static Val
call_custom(Inst *in, Scope *sc, const Expr *e, const CustomInfo *ci, Namer *nm, bool root)
{
	int n = ci->s->names->n, p = npositional(e);
	bool ok = no_attrs(in, e, "custom op");
	const int *ts;
	int few[FEW_ARGS] = {0};
	Val v;

	if (p != n) {
		diag_error(in->d, e->loc, "op '%s' takes %d argument%s, got %d", e->name, n,
		           n == 1 ? "" : "s", p);
		return poison;
	}
	ts = tensor_args(in, sc, e, n, nm, &ok, few);
	if (!ok || !ci->op)
		return poison;
	v = make_op(in, sc, OP_CUSTOM, ts, n, e, nm, root, 1, e->name);
	if (v.kind != VK_POISON)
		ir_set_custom(in->g, in->g->nop - 1, ci->op);
	return v;
}

/* The call's number among the calls of def from the scope sc. */
static int
call_number(Inst *in, const Scope *sc, const char *def)
{
	int *k = scope_put(in, &in->calls, sc, def);

	*k = *k < 0 ? 1 : *k + 1;
	return *k;
}

static Val
def_return(Inst *in, Scope *sc, const Stmt *ret)
{
	int n = ret->exprs->n;
	int *ts = ar_alloc(in->g->arena, sizeof(int) * (size_t)n);
	bool ok = true;

	for (int i = 0; i < n; i++) {
		const Expr *x = ret->exprs->v[i];
		Val v;
		if (x->kind == EX_NAME)
			v = lookup(in, sc, x);
		else {
			const char *id = next_id(in, sc, "return");
			Namer nm = {id, 0, &id, 1, x->loc};
			v = eval(in, sc, x, &nm, true);
			rebind(in, sc, "return", poison, ST_ASSIGN);
			if (v.kind == VK_MULTI) {
				diag_error(in->d, x->loc, "a return value must be one tensor, not %d", v.n);
				v = poison;
			}
		}
		ok &= v.kind == VK_ONE;
		ts[i] = v.t;
	}
	if (!ok)
		return poison;
	return n == 1 ? one(ts[0]) : (Val){VK_MULTI, -1, n, ts};
}

/* A def's arguments in order: tensors into ts, `dim` ones into dv. */
static bool
def_args(Inst *in, Scope *sc, const Expr *e, const NameList *params, int *ts,
         int64_t *dv, Namer *nm)
{
	bool ok = true;
	int k = 0;

	for (int i = 0; i < e->args->n && k < params->n; i++) {
		const Expr *x = e->args->v[i].e;
		if (e->args->v[i].key)
			continue;
		if (params->v[k].is_dim) {
			ok &= dims_of(in, sc, x, &dv[k]);
		} else {
			Val v = operand(in, sc, x, nm);
			ok &= v.kind == VK_ONE;
			ts[k] = v.t;
		}
		k++;
	}
	return ok;
}

static Val
call_def(Inst *in, Scope *sc, const Expr *e, const DefInfo *df, Namer *nm)
{
	const Stmt *s = df->s;
	int n = s->names->n, p = npositional(e);
	int i = call_number(in, sc, s->name.s) - 1;
	bool ok = no_attrs(in, e, "def");
	int *ts, few_ts[FEW_ARGS] = {0};
	int64_t *dv, few_dv[FEW_ARGS] = {0};
	Scope inner;
	ScopeMark mk;
	Val v = poison;

	if (p != n) {
		diag_error(in->d, e->loc, "def '%s' takes %d argument%s, got %d", s->name.s, n,
		           n == 1 ? "" : "s", p);
		return poison;
	}
	/* on the stack when few, like tensor_args: 32 bytes of the scratch
	 * arena, which lives as long as the instantiation, for every call */
	ts = n < FEW_ARGS ? few_ts : ar_alloc(&in->tmp, sizeof(int) * ((size_t)n + 1));
	dv = n < FEW_ARGS ? few_dv : ar_alloc(&in->tmp, sizeof(int64_t) * ((size_t)n + 1));
	ok &= def_args(in, sc, e, s->names, ts, dv, nm);
	if (!ok || df->bad || in->too_big)
		return poison;
	if (sc->depth >= INST_MAXCALLS) {
		diag_error(in->d, e->loc, "def calls nested more than %d deep", INST_MAXCALLS);
		return poison;
	}
	inner = (Scope){++in->nscopes, id_num(in, sc->prefix, s->name.s, '.', i, "."),
	                false, sc->depth + 1};
	mk = scope_mark(in);
	for (int a = 0; a < n && ok; a++) {
		const Name *an = &s->names->v[a];
		if (!an->is_dim) {
			if (name_free(in, &inner, an))
				rebind(in, &inner, an->s, one(ts[a]), ST_ASSIGN);
		} else if (map_find(&in->dims, an->s, 0)) {
			diag_error(in->d, an->loc, "dim argument '%s' has the name of a dim", an->s);
			ok = false;
		} else {
			bind_local_dim(in, &inner, an->s, dv[a]);
		}
	}
	if (ok)
		exec_stmts(in, &inner, s->body);
	if (ok && !in->too_big && !diag_full(in->d))
		v = def_return(in, &inner, s->body->v[s->body->n - 1]);
	leave_scope(in, mk);
	return v;
}

static Val
call(Inst *in, Scope *sc, const Expr *e, Namer *nm, bool root)
{
	int *k;

	if ((k = map_find(&in->defs, e->name, 0)))
		return call_def(in, sc, e, &in->def[*k], nm);
	if ((k = map_find(&in->customs, e->name, 0)))
		return call_custom(in, sc, e, &in->custom[*k], nm, root);
	if ((k = map_find(&in->builtins, e->name, 0)))
		return call_builtin(in, sc, e, (OpKind)*k, nm, root);
	char hint[INST_HINTLEN];
	diag_error(in->d, e->loc, "unknown op '%s'%s", e->name,
	           inst_hint_op(in, e->name, hint, sizeof hint));
	return poison;
}

/* ---------------------------------------------------------------- expressions */

static Val
binop(Inst *in, Scope *sc, const Expr *e, Namer *nm, bool root)
{
	static const char ops[] = "+-*@";
	static const OpKind kinds[] = {OP_ADD, OP_SUB, OP_MUL, OP_MATMUL};
	const char *c = strchr(ops, e->op);
	int ts[2];

	if (!c) {
		inst_habit_divide(in, e);
		return poison;
	}
	Val l = operand(in, sc, e->l, nm), r = operand(in, sc, e->r, nm);
	if (l.kind != VK_ONE || r.kind != VK_ONE)
		return poison;
	ts[0] = l.t;
	ts[1] = r.t;
	return make_op(in, sc, kinds[c - ops], ts, 2, e, nm, root, 1, NULL);
}

/* Evaluates a tensor expression; when root, the op it makes (if any) takes
 * the statement's ids. */
static Val
eval(Inst *in, Scope *sc, const Expr *e, Namer *nm, bool root)
{
	switch (e->kind) {
	case EX_NAME:
		return lookup(in, sc, e);
	case EX_CALL:
		return call(in, sc, e, nm, root);
	case EX_BIN:
		return binop(in, sc, e, nm, root);
	case EX_NEG: {
		Val v = operand(in, sc, e->l, nm);
		if (v.kind != VK_ONE)
			return poison;
		return make_op(in, sc, OP_NEG, &v.t, 1, e, nm, root, 1, NULL);
	}
	case EX_INT:
	case EX_REAL:
		diag_error(in->d, e->loc, "a number is not a tensor (use scale(x, c=...) "
		           "to multiply by a constant)");
		return poison;
	case EX_BOOL:
		diag_error(in->d, e->loc, "'%s' is not a tensor", e->b ? "true" : "false");
		return poison;
	case EX_DTYPE:
		diag_error(in->d, e->loc, "a dtype is not a tensor");
		return poison;
	case EX_LIST:
		diag_error(in->d, e->loc, "a list is not a tensor");
		return poison;
	case EX_TUPLE:
		diag_error(in->d, e->loc, "a tuple is not a tensor");
		return poison;
	}
	return poison;
}

/* ---------------------------------------------------------------- statements */

/* names = expr; -- the ids of a few names are kept on the stack: the
 * scratch arena lives as long as the whole instantiation, and 32 bytes for
 * every statement of a 300k-statement file added 10 MB to its peak. */
static void
assign(Inst *in, Scope *sc, const Stmt *s)
{
	enum { FEW = 4 };
	int n = s->names->n;
	const char *few_ids[FEW];
	bool few_ok[FEW];
	const char **ids = n <= FEW ? few_ids : ar_alloc(&in->tmp, sizeof *ids * (size_t)n);
	bool *ok = n <= FEW ? few_ok : ar_alloc(&in->tmp, (size_t)n);
	Namer nm;
	Val v;

	for (int i = 0; i < n; i++) {
		ok[i] = name_free(in, sc, &s->names->v[i]);
		ids[i] = next_id(in, sc, s->names->v[i].s);
	}
	nm = (Namer){ids[0], 0, ids, n, s->loc};
	v = eval(in, sc, s->e, &nm, true);
	if (v.kind != VK_POISON && v.n != n) {
		diag_error(in->d, s->loc, "cannot bind %d value%s to %d name%s", v.n,
		           v.n == 1 ? "" : "s", n, n == 1 ? "" : "s");
		v = poison;
	}
	for (int i = 0; i < n; i++) {
		Val vi = v.kind == VK_POISON ? poison : v.kind == VK_ONE ? v : one(v.ts[i]);
		if (ok[i])
			rebind(in, sc, s->names->v[i].s, vi, ST_ASSIGN);
	}
}

static void
decl_type(Inst *in, Scope *sc, Tensor *t, const Type *ty)
{
	bool ok = true;
	int64_t shape[IR_MAXDIM];

	t->dtype = ty->dt;
	if (ty->dims->n > IR_MAXDIM) {
		diag_error(in->d, ty->loc, "a tensor has at most %d dimensions, not %d",
		           IR_MAXDIM, ty->dims->n);
		return;
	}
	for (int i = 0; i < ty->dims->n; i++)
		ok &= dims_of(in, sc, ty->dims->v[i], &shape[i]);
	if (!ok)
		return;
	ir_set_shape(in->g, t, ty->dims->n, shape);
}

static bool
same_loc(Loc a, Loc b)
{
	return a.line == b.line && a.col == b.col && a.fid == b.fid;
}

/* param w : T;  input x : T; */
static void
declare(Inst *in, Scope *sc, const Stmt *s)
{
	const char *what = s->kind == ST_PARAM ? "param" : "input";
	Bind *b = find_bind(in, sc, s->name.s);
	int t;

	if (b && (b->decl == ST_PARAM || b->decl == ST_INPUT)) {
		/* declared by this very statement: a repeat runs it again */
		if (b->v.kind == VK_ONE && same_loc(in->g->t[b->v.t].loc, s->loc))
			inst_habit_redeclared(in, s);
		else
			diag_error(in->d, s->name.loc, "duplicate %s '%s'", what, s->name.s);
		return;
	}
	if (b) {
		diag_error(in->d, s->name.loc, "%s '%s' would rebind a name bound in this scope",
		           what, s->name.s);
		return;
	}
	if (!name_free(in, sc, &s->name) || !room(in, 1))
		return;
	if (s->kind == ST_PARAM && !dtype_is_float(s->type->dt))
		diag_error(in->d, s->type->loc, "param '%s' must be floating point, not %s",
		           s->name.s, dtype_name(s->type->dt));
	t = ir_add_tensor(in->g, ar_cat(in->g->arena, sc->prefix, s->name.s, ""),
	                  s->kind == ST_PARAM ? TK_PARAM : TK_INPUT, s->loc);
	in->g->t[t].scope = sc->prefix;
	in->g->t[t].frozen = s->frozen;
	in->g->t[t].buffer = s->buffer;
	decl_type(in, sc, &in->g->t[t], s->type);
	if (s->kind == ST_PARAM && !dtype_is_float(s->type->dt))
		in->g->t[t].ndim = -1;
	rebind(in, sc, s->name.s, one(t), s->kind);
	if (sc->top)
		*map_put(&in->topdecl, &in->tmp, s->name.s, 0) = t;
}

/* Reports a loop index that takes a name in use in scope sc. */
static void
check_index(Inst *in, const Scope *sc, const Name *n)
{
	const char *what = map_find(&in->dims, n->s, 0) ? "the name of a dim"
	                   : map_find(&in->defs, n->s, 0) ? "the name of a def"
	                   : map_find(&in->localdims, n->s, sc->id) ? "the name of a dim argument"
	                   : loop_of(in, sc, n->s) ? "the index of an enclosing repeat"
	                   : is_tensor_name(in, sc, n->s) ? "the name of a tensor" : NULL;

	if (what)
		diag_error(in->d, n->loc, "loop index '%s' is %s", n->s, what);
}

/* repeat COUNT { ... } and repeat i in COUNT { ... }: the index is pushed
 * even when its name clashes (reported), so that the body's uses of it do
 * not add errors of their own. */
static void
repeat(Inst *in, Scope *sc, const Stmt *s)
{
	int64_t n = 1;
	bool idx = s->name.s != NULL;

	/* a count that failed to evaluate (error reported) may hold a partial
	 * value: the body runs once, as bound.c costed it, or an empty body
	 * would spin through a wrapped count of 10^18 */
	if (!dims_of(in, sc, s->e, &n))
		n = 1;
	else if (n <= 0) {
		diag_error(in->d, s->e->loc, "repeat count must be positive, got %lld",
		           (long long)n);
		n = 1;
	}
	if (idx) {
		check_index(in, sc, &s->name);
		if (in->nloops == in->caploops) {
			int cap = in->caploops ? in->caploops * 2 : 8;
			in->loops = ar_grow(&in->tmp, in->loops,
			                    sizeof *in->loops * (size_t)in->caploops,
			                    sizeof *in->loops * (size_t)cap);
			in->caploops = cap;
		}
		in->loops[in->nloops++] = (LoopIndex){s->name.s, sc->id, 0};
	}
	for (int64_t i = 0; i < n && !in->too_big && !diag_full(in->d); i++) {
		int before = in->d->nerrors;
		if (idx)
			in->loops[in->nloops - 1].value = i;
		exec_stmts(in, sc, s->body);
		if (in->d->nerrors > before)
			break;
	}
	if (idx)
		in->nloops--;
}

/* output x; the train-mode count is checked at the end. */
static void
output(Inst *in, Scope *sc, const Stmt *s, int *nstmts, Loc *second)
{
	Expr e = {.kind = EX_NAME, .loc = s->name.loc, .name = s->name.s};
	Graph *g = in->g;
	Val v = lookup(in, sc, &e);

	if (++*nstmts == 2)
		*second = s->loc;
	if (v.kind != VK_ONE)
		return;
	if (g->noutputs == in->outcap) {        /* doubling: linear in the outputs */
		int cap = in->outcap ? in->outcap * 2 : 4;
		g->outputs = ar_grow(g->arena, g->outputs, sizeof(int) * (size_t)g->noutputs,
		                     sizeof(int) * (size_t)cap);
		g->output_loc = ar_grow(g->arena, g->output_loc, sizeof(Loc) * (size_t)g->noutputs,
		                        sizeof(Loc) * (size_t)cap);
		in->outcap = cap;
	}
	g->output_loc[g->noutputs] = s->loc;
	g->outputs[g->noutputs++] = v.t;
}

static void
exec_stmts(Inst *in, Scope *sc, const StmtList *l)
{
	for (int i = 0; i < l->n && !in->too_big && !diag_full(in->d); i++) {
		const Stmt *s = l->v[i];
		in->at = s->loc;
		switch (s->kind) {
		case ST_ASSIGN: assign(in, sc, s); break;
		case ST_INPUT:
		case ST_PARAM: declare(in, sc, s); break;
		case ST_REPEAT: repeat(in, sc, s); break;
		default: break; /* top-level kinds run elsewhere; misplaced ones were reported */
		}
	}
}

/* ---------------------------------------------------------------- placement */

static const char *const stmt_word[] = {
	[ST_DIM] = "dim", [ST_BATCH] = "batch", [ST_INPUT] = "input",
	[ST_PARAM] = "param", [ST_ASSIGN] = "binding", [ST_OUTPUT] = "output",
	[ST_DEF] = "def", [ST_REPEAT] = "repeat", [ST_OP] = "op",
	[ST_TRAIN] = "train", [ST_RETURN] = "return",
};

/* Reports statements out of place, once, before anything runs: top-level
 * kinds inside a def or repeat, and `return` anywhere but the end of a def. */
static void
check_placement(Inst *in, const StmtList *l, bool top, bool def_body)
{
	for (int i = 0; i < l->n; i++) {
		const Stmt *s = l->v[i];
		switch (s->kind) {
		case ST_DIM: case ST_BATCH: case ST_DEF: case ST_OP: case ST_TRAIN: case ST_OUTPUT:
			if (!top)
				diag_error(in->d, s->loc, "'%s' is only allowed at the top level",
				           stmt_word[s->kind]);
			if (s->kind == ST_DEF)
				check_placement(in, s->body, false, true);
			break;
		case ST_RETURN:
			if (!def_body || i != l->n - 1)
				diag_error(in->d, s->loc, top || !def_body ? "'return' outside a def"
				           : "'return' must be the last statement of a def");
			break;
		case ST_REPEAT:
			check_placement(in, s->body, false, false);
			break;
		default:
			break;
		}
	}
}

/* ---------------------------------------------------------------- entry */

/* After top-level statement i has run: frees the tree pieces of
 * net_parse_once whose statements have all run, the one after the last
 * included (its first token may be in the piece), but declarations'. */
static void
drop_pieces(Inst *in, int i, int *done)
{
	const Program *p = in->p;

	for (; *done < p->npieces && p->pieces[*done].last < i; ++*done)
		if (!p->pieces[*done].keep)
			ar_free(p->pieces[*done].ar);
}

static void
top_level(Inst *in)
{
	Scope top = {0, "", true, 0};
	const StmtList *l = in->p->stmts;
	Graph *g = in->g;
	int nout = 0, nparams = 0, done = 0;
	Loc second = {0};

	for (int i = 0; i < l->n && !in->too_big && !diag_full(in->d); i++) {
		if (l->v[i]->kind == ST_OUTPUT)
			output(in, &top, l->v[i], &nout, &second);
		else {
			StmtList single = {&l->v[i], 1, 1};
			exec_stmts(in, &top, &single);
		}
		drop_pieces(in, i, &done);
	}
	for (int t = 0; t < g->nt; t++)
		nparams += g->t[t].kind == TK_PARAM;
	g->train = !(in->o->infer_set && in->o->infer) && nparams > 0;
	g->settings.infer = !g->train;
	g->loss = -1;
	if (!g->train || in->too_big || diag_full(in->d))
		return;
	if (nout == 0)
		diag_error(in->d, in->p->end, "training needs an 'output' (the loss); "
		           "use --infer for a forward pass only");
	else if (nout > 1)
		diag_error(in->d, second, "training takes exactly one 'output'; several "
		           "are allowed with --infer");
	else if (g->noutputs == 1)
		g->loss = g->outputs[0];
}

int
net_instantiate(const Program *p, const NetOptions *o, Graph *g, Diag *d)
{
	Inst in = {.p = p, .o = o, .g = g, .d = d};
	int before = d->nerrors;

	ar_init(&in.tmp);
	in.local_dim = local_dim;
	in.max_tensors = o->max_tensors > 0 ? o->max_tensors : INST_MAXTENSORS;
	for (int k = 0; k < OP_CUSTOM; k++) {
		int *v = map_put(&in.builtins, &in.tmp, ir_optab[k].name, 0);
		if (*v < 0)     /* the first of a name, as ir_op_from_name finds */
			*v = k;
	}
	if (!g->file)
		g->file = p->file;
	if (!p->stmts->n)       /* no line to point at: the whole file is empty */
		diag_error(d, loc_make(p->file, 0, 0), "no statements (the file is empty or "
		           "only comments)");
	check_placement(&in, p->stmts, true, false);
	inst_defs(&in);
	inst_dims_and_settings(&in);
	inst_customs(&in);
	if (inst_bound(&in))
		top_level(&in);
	ar_free(&in.tmp);
	return d->nerrors - before;
}
