/* frontend/onnx/ops.c -- one ONNX node to .net: shapes, folding, ops.
 *
 * Each node's outputs get a dtype and shape (the importer's own shape
 * inference, so that Shape and Reshape can be folded); a node whose inputs
 * are all constants is evaluated here (the exporter's shape arithmetic);
 * every other node becomes one or more .net statements on the op table's
 * ops, or a custom op declared for it where the table has no such op
 * (Where, Expand, Pad, Clip...). docs/onnx.md lists the mapping. Every
 * attribute and constant value is range-checked before it is computed
 * with, and what the .net op will ask of its operands (dtypes, vectors)
 * is checked here, so that an error names the node. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* ------------------------------------------------------------ attributes */

static Onnx__AttributeProto *
attr(const Node *n, const char *name)
{
	for (size_t i = 0; i < n->n_attribute; i++)
		if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
			return n->attribute[i];
	return NULL;
}

static int64_t
attr_i(const Node *n, const char *name, int64_t def)
{
	Onnx__AttributeProto *at = attr(n, name);
	return at && at->has_i ? at->i : def;
}

static double
attr_f(const Node *n, const char *name, double def)
{
	Onnx__AttributeProto *at = attr(n, name);
	return at && at->has_f ? at->f : def;
}

/* An INT attribute that must lie in [lo, hi]: checked here, before any
 * arithmetic or narrowing sees it. */
static int64_t
attr_in(Imp *I, const Node *n, const char *name, int64_t def, int64_t lo, int64_t hi)
{
	int64_t v = attr_i(n, name, def);

	if (v < lo || v > hi)
		ox_fail(I, "attribute '%s' is %lld, outside [%lld, %s]", name, (long long)v,
		        (long long)lo, hi == OX_MAXDIM ? "2^40" : ar_printf(I->a, "%lld",
		        (long long)hi));
	return v;
}

static bool
attr_bool(Imp *I, const Node *n, const char *name, bool def)
{
	return attr_in(I, n, name, def, 0, 1);
}

/* An INTS attribute into v[] (at most max); its length, or -1 if absent. */
static int
attr_ints(Imp *I, const Node *n, const char *name, int64_t *v, int max)
{
	Onnx__AttributeProto *at = attr(n, name);
	if (!at)
		return -1;
	if ((int)at->n_ints > max)
		ox_fail(I, "attribute '%s' has %zu values (at most %d)", name, at->n_ints, max);
	for (size_t i = 0; i < at->n_ints; i++)
		v[i] = at->ints[i];
	return (int)at->n_ints;
}

/* ------------------------------------------------------------ values */

static Val *
in(Imp *I, const Node *n, size_t k)
{
	if (k >= n->n_input || !*n->input[k])
		return NULL;
	return ox_lookup(I, n->input[k]);
}

static Val *
need(Imp *I, const Node *n, size_t k)
{
	Val *v = in(I, n, k);
	if (!v)
		ox_fail(I, "input %zu is missing", k);
	if (v->kind == V_BUFFER)
		ox_fail(I, "uses BatchNorm running statistic '%s' outside BatchNorm", v->name);
	return v;
}

static Val *
out(Imp *I, const Node *n, size_t k)
{
	if (k >= n->n_output || !*n->output[k])
		return NULL;
	return ox_lookup(I, n->output[k]);
}

/* Axis ax of a tensor of rank axes as an index in [0, rank): a scalar has
 * none (.net's concat or split of one fails at the generated line). */
static int
norm_axis(Imp *I, int64_t ax, int ndim)
{
	if (ax < -ndim || ax >= ndim)
		ox_fail(I, "axis %lld is out of range for rank %d", (long long)ax, ndim);
	return (int)(ax < 0 ? ax + ndim : ax);
}

static void
set_shape(Imp *I, Val *o, int dt, int ndim, const int64_t *dim)
{
	int64_t n = 1;
	if (ndim > OX_MAXRANK || ndim < 0)
		ox_fail(I, "result has %d axes (at most %d)", ndim, OX_MAXRANK);
	o->dt = dt;
	o->ndim = ndim;
	for (int i = 0; i < ndim; i++) {
		if (dim[i] < 0 || dim[i] > OX_MAXDIM)
			ox_fail(I, "result dimension %lld is out of range", (long long)dim[i]);
		if (!ck_mul(n, dim[i] ? dim[i] : 1, &n) || n > OX_MAXELEMS)
			ox_fail(I, "the result has more than 2^50 elements");
		o->dim[i] = dim[i];
	}
}

static bool
is_const(const Val *v)
{
	return v && v->kind == V_CONST && v->k;
}

static bool
is_float_dt(int dt)
{
	return dt == 1 || dt == 10 || dt == 11 || dt == 16;
}

/* What .net's op netop asks of its tensor arguments' dtypes (floating
 * point for most: ir_optab's float_in), and that two operands agree,
 * checked here where the error can name the node; the .net frontend would
 * find it too, but at a line of the generated text. */
static void
float_args(Imp *I, const char *netop, Val *const *args, int n, bool same)
{
	int k = ir_op_from_name(netop);

	for (int i = 0; i < n; i++) {
		if (!args[i])
			continue;
		if (k >= 0 && ir_optab[k].float_in && !is_float_dt(args[i]->dt))
			ox_fail(I, "%s needs floating point, and '%s' is %s", netop,
			        args[i]->name, ox_dtype(I, args[i]->dt));
		if (same && args[i]->dt != args[0]->dt)
			ox_fail(I, "'%s' is %s and '%s' is %s", args[0]->name,
			        ox_dtype(I, args[0]->dt), args[i]->name, ox_dtype(I, args[i]->dt));
	}
}

/* Fails unless v is a vector of d elements (a norm's scale, a bias). */
static void
need_vector(Imp *I, const Val *v, int64_t d, const char *what)
{
	if (v->ndim != 1 || v->dim[0] != d)
		ox_fail(I, "%s '%s' must be [%lld]", what, v->name, (long long)d);
}

/* A constant's values as int64s (a shape list, axes...), clamped to
 * +-2^41: no valid size or index is larger, and INT64_MAX "to the end"
 * slice bounds still clamp to the axis. A NaN has no integer value. */
static int64_t
kint(Imp *I, const Val *v, int64_t i)
{
	double x = v->k[i];
	const double lim = (double)((int64_t)1 << 41);

	if (x != x)
		ox_fail(I, "'%s' holds NaN where an integer is needed", v->name);
	return x > lim ? (int64_t)lim : x < -lim ? -(int64_t)lim : (int64_t)x;
}

/* x from kint for a message: the clamped ends say so. */
static const char *
knum(Imp *I, int64_t x)
{
	const int64_t lim = (int64_t)1 << 41;

	return x >= lim ? "2^41 or more" : x <= -lim ? "-2^41 or less"
	     : ar_printf(I->a, "%lld", (long long)x);
}

static void
make_const(Imp *I, Val *o, int dt, int ndim, const int64_t *dim, double *k)
{
	set_shape(I, o, dt, ndim, dim);
	o->kind = V_CONST;
	o->k = k;
}

/* Room for a folded constant of n elements. Each may hold OX_MAXFOLD and
 * all of them together OX_MAXFOLDALL: a few hundred bytes of Constant and
 * ConstantOfShape nodes would otherwise fold gigabytes. */
static double *
kalloc(Imp *I, int64_t n)
{
	if (n < 0 || n > OX_MAXFOLD)
		ox_fail(I, "constant of %lld elements is too large to fold", (long long)n);
	if ((I->folded += n) > OX_MAXFOLDALL)
		ox_fail(I, "the constants folded pass %d elements in all", OX_MAXFOLDALL);
	return ar_alloc(I->a, (size_t)(n ? n : 1) * sizeof(double));
}

/* The elements of a folded result of the given dims (in [0, 2^41] from
 * kint or a broadcast), checked before any is allocated: eight dims of
 * 2^41 multiply past 2^63. */
static int64_t
fold_elems(Imp *I, int ndim, const int64_t *dim)
{
	int64_t n = 1;

	for (int i = 0; i < ndim; i++)
		if (dim[i] < 0 || !ck_mul(n, dim[i], &n) || n > OX_MAXFOLD)
			ox_fail(I, "constant of more than %d elements is too large to fold",
			        OX_MAXFOLD);
	return n;
}

/* Reads a TensorProto's values; dims and data must agree. */
void
ox_const_tensor(Imp *I, Val *o, const Onnx__TensorProto *t)
{
	int64_t n = 1, have;
	size_t es;
	double *k;

	/* rank and dims in range: ox_door */
	for (size_t i = 0; i < t->n_dims; i++)
		if (!ck_mul(n, t->dims[i], &n) || n > OX_MAXELEMS)
			ox_fail(I, "constant has more than 2^50 elements");
	switch (t->data_type) {
	case 1: case 6: es = 4; break;
	case 7: case 11: es = 8; break;
	case 2: case 3: case 9: es = 1; break;
	case 10: case 16: es = 2; break;
	default: ox_dtype(I, t->data_type); es = 1;
	}
	have = t->raw_data.len ? (int64_t)(t->raw_data.len / es)
	     : t->n_float_data ? (int64_t)t->n_float_data
	     : t->n_int32_data ? (int64_t)t->n_int32_data
	     : t->n_int64_data ? (int64_t)t->n_int64_data : (int64_t)t->n_double_data;
	if (have != n || (t->raw_data.len && t->raw_data.len % es))
		ox_fail(I, "constant declares %lld elements (%lld bytes) but holds %lld",
		        (long long)n, (long long)(n * (int64_t)es), (long long)have);
	k = kalloc(I, n);
	for (int64_t i = 0; i < n; i++) {
		const uint8_t *p = t->raw_data.len ? t->raw_data.data + i * (int64_t)es : NULL;
		if (!p)
			k[i] = t->n_float_data ? t->float_data[i] : t->n_int32_data ? t->int32_data[i]
			     : t->n_int64_data ? (double)t->int64_data[i] : t->double_data[i];
		else if (t->data_type == 1) { float f; memcpy(&f, p, 4); k[i] = f; }
		else if (t->data_type == 11) memcpy(&k[i], p, 8);
		else if (t->data_type == 7) { int64_t x; memcpy(&x, p, 8); k[i] = (double)x; }
		else if (t->data_type == 6) { int32_t x; memcpy(&x, p, 4); k[i] = x; }
		else if (t->data_type == 3) k[i] = (int8_t)p[0];
		else if (es == 1) k[i] = p[0];
		else k[i] = 0;     /* f16/bf16 values are never needed for shapes */
	}
	int64_t dim[OX_MAXRANK];
	for (size_t i = 0; i < t->n_dims; i++)
		dim[i] = t->dims[i];
	make_const(I, o, t->data_type, (int)t->n_dims, dim, k);
}

/* Fails when v, about to become a .net tensor, has an axis of size 0: a
 * constant or a result may be empty, a .net tensor may not. */
static void
not_empty(Imp *I, const Val *v)
{
	for (int i = 0; i < v->ndim; i++)
		if (v->dim[i] < 1)
			ox_fail(I, "'%s' is empty (axis %d has size %lld): a tensor needs "
			        "sizes of at least 1", v->name, i, (long long)v->dim[i]);
}

/* The .net name of v, declaring a constant as an input on first use. */
static const char *
ref(Imp *I, Val *v)
{
	if (v->net)
		return v->net;
	if (v->kind != V_CONST)
		ox_fail(I, "value '%s' has no tensor (internal)", v->name);
	not_empty(I, v);
	v->net = ox_netname(I, v->name);
	ox_printf(&I->head, "input %s : %s", v->net, ox_dtype(I, v->dt));
	ox_shape(&I->head, v);
	ox_printf(&I->head, ";   # a constant of the model\n");
	return v->net;
}

/* Starts the statement that makes o: "name = ". */
static void
bind(Imp *I, Val *o)
{
	not_empty(I, o);
	o->net = ox_netname(I, o->name);
	o->kind = V_ACT;
	ox_printf(&I->body, "%s = ", o->net);
}

static void
alias(Val *o, Val *v)
{
	if (!o)
		return;
	*o = (Val){.name = o->name, .dt = v->dt, .ndim = v->ndim, .kind = v->kind,
	           .k = v->k, .net = v->net, .nuse = o->nuse, .nusers = o->nusers,
	           .users = o->users, .producer = o->producer};
	memcpy(o->dim, v->dim, sizeof o->dim);
}

static void
list(Imp *I, const int64_t *v, int n)
{
	ox_printf(&I->body, "[");
	for (int i = 0; i < n; i++)
		ox_printf(&I->body, "%s%lld", i ? ", " : "", (long long)v[i]);
	ox_printf(&I->body, "]");
}

/* o = reshape(v, o's shape), or o is v when the shapes agree. */
static void
reshape_to(Imp *I, Val *o, Val *v)
{
	if (o->ndim == v->ndim && !memcmp(o->dim, v->dim, sizeof(int64_t) * (size_t)v->ndim)) {
		const char *nm = ref(I, v);
		alias(o, v);
		o->net = nm;
		return;
	}
	const char *src = ref(I, v);
	bind(I, o);
	ox_printf(&I->body, "reshape(%s, ", src);
	list(I, o->dim, o->ndim);
	ox_printf(&I->body, ");\n");
}

/* The slot for declaration decl of kind in the table of custom ops: the
 * index + 1 of the op declared so, or 0 where it would go. */
static int *
custom_slot(Imp *I, const char *decl, const char *kind)
{
	size_t h = (ox_hash(decl, strlen(decl)) ^ ox_hash(kind, strlen(kind))) &
	           (I->custom_cap - 1);
	int k;

	for (; (k = I->custom_tab[h]); h = (h + 1) & (I->custom_cap - 1))
		if (!strcmp(I->custom_decl[k - 1], decl) && !strcmp(I->custom_kind[k - 1], kind))
			break;
	return &I->custom_tab[h];
}

/* A custom op: declared with o's type, `flops` forward and backward,
 * saving `saves` (an argument name, or NULL). Uses with the same
 * declaration share one op (so repeated blocks read the same), found in a
 * hash table: 40,000 Where nodes of distinct shapes would compare each
 * declaration with every one before it. */
static void
custom(Imp *I, Val *o, const char *kind, Val **args, int nargs, int64_t flops,
       int saves)
{
	const char *name = NULL, *refs[4], *dt = ox_dtype(I, o->dt);
	Buf d = {0};
	int *slot;

	for (int i = 0; i < nargs; i++)
		refs[i] = ref(I, args[i]);
	ox_printf(&d, "(");
	for (int i = 0; i < nargs; i++)
		ox_printf(&d, "%sa%d", i ? ", " : "", i);
	ox_printf(&d, ") -> %s", dt);
	ox_shape(&d, o);
	ox_printf(&d, " { flops = %lld; backward_flops = %lld;",
	          (long long)flops, (long long)flops);
	if (saves >= 0)
		ox_printf(&d, " saves = (a%d);", saves);
	ox_printf(&d, " }   # ONNX %s\n", ox_clean(I, I->cur->op_type));
	if (2 * ((size_t)I->ncustom + 1) > I->custom_cap) {     /* rehash, half full */
		I->custom_cap = I->custom_cap ? 2 * I->custom_cap : 64;
		I->custom_tab = ar_alloc(I->a, I->custom_cap * sizeof *I->custom_tab);
		for (int i = 0; i < I->ncustom; i++)
			*custom_slot(I, I->custom_decl[i], I->custom_kind[i]) = i + 1;
	}
	if (*(slot = custom_slot(I, d.s, kind)))
		name = I->custom_name[*slot - 1];
	if (!name) {
		if (!(I->ncustom & (I->ncustom - 1))) {
			size_t n = (size_t)(I->ncustom ? 2 * I->ncustom : 1);
			I->custom_decl = xrealloc(I->custom_decl, n * sizeof *I->custom_decl);
			I->custom_kind = xrealloc(I->custom_kind, n * sizeof *I->custom_kind);
			I->custom_name = xrealloc(I->custom_name, n * sizeof *I->custom_name);
		}
		*slot = I->ncustom + 1;
		name = ox_netname(I, ar_printf(I->a, "%s_%d", kind, I->ncustom));
		I->custom_decl[I->ncustom] = ar_strndup(I->a, d.s, d.n);
		I->custom_kind[I->ncustom] = kind;
		I->custom_name[I->ncustom++] = name;
		ox_printf(&I->ops, "op %s%s", name, d.s);
	}
	free(d.s);
	bind(I, o);
	ox_printf(&I->body, "%s(", name);
	for (int i = 0; i < nargs; i++)
		ox_printf(&I->body, "%s%s", i ? ", " : "", refs[i]);
	ox_printf(&I->body, ");\n");
}

/* ------------------------------------------------------------ shapes */

static void
broadcast(Imp *I, const Val *a, const Val *b, int *ndim, int64_t *dim)
{
	*ndim = a->ndim > b->ndim ? a->ndim : b->ndim;
	for (int i = 0; i < *ndim; i++) {
		int ia = i - (*ndim - a->ndim), ib = i - (*ndim - b->ndim);
		int64_t da = ia >= 0 ? a->dim[ia] : 1, db = ib >= 0 ? b->dim[ib] : 1;
		if (da != db && da != 1 && db != 1)
			ox_fail(I, "cannot broadcast axis %d: %lld against %lld", i,
			        (long long)da, (long long)db);
		dim[i] = da == 1 ? db : da;
	}
}

/* Index of element `flat` of the broadcast result in v. */
static int64_t
bidx(const Val *v, int ndim, const int64_t *dim, int64_t flat)
{
	int64_t idx = 0, stride = 1;
	for (int i = ndim - 1; i >= 0; i--) {
		int64_t c = flat % dim[i];
		int iv = i - (ndim - v->ndim);
		flat /= dim[i];
		if (iv >= 0) {
			if (v->dim[iv] != 1)
				idx += c * stride;
			stride *= v->dim[iv];
		}
	}
	return idx;
}

/* x op y for binary node n folding operands of dtype dt. Mod: the sign of
 * the divisor for integers (Python's %), C's fmod for floats and fmod=1. */
static double
apply(Imp *I, const Node *n, int dt, double x, double y)
{
	const char *op = n->op_type;

	if (!strcmp(op, "Mod")) {
		if (y == 0)
			ox_fail(I, "constant modulo by zero");
		return attr_bool(I, n, "fmod", 0) || is_float_dt(dt) ? fmod(x, y)
		     : x - floor(x / y) * y;
	}
	if (!strcmp(op, "Xor")) return !x != !y;
	if (!strcmp(op, "LessOrEqual")) return x <= y;
	if (!strcmp(op, "GreaterOrEqual")) return x >= y;
	if (!strcmp(op, "Add")) return x + y;
	if (!strcmp(op, "Sub")) return x - y;
	if (!strcmp(op, "Mul")) return x * y;
	if (!strcmp(op, "Equal")) return x == y;
	if (!strcmp(op, "Less")) return x < y;
	if (!strcmp(op, "Greater")) return x > y;
	if (!strcmp(op, "And")) return x && y;
	if (!strcmp(op, "Or")) return x || y;
	if (!strcmp(op, "Pow")) return pow(x, y);
	if (!strcmp(op, "Max")) return x > y ? x : y;
	if (!strcmp(op, "Min")) return x < y ? x : y;
	if (y == 0)
		ox_fail(I, "constant division by zero");
	return trunc(x / y) == x / y || fabs(x) > 1e15 ? x / y : x / y;
}

static void
fold_binary(Imp *I, const Node *n, Val *a, Val *b, Val *o)
{
	int ndim, dt = a->dt;
	int64_t dim[OX_MAXRANK], nel;
	double *k;

	broadcast(I, a, b, &ndim, dim);
	nel = fold_elems(I, ndim, dim);
	k = kalloc(I, nel);
	for (int64_t i = 0; i < nel; i++) {
		k[i] = apply(I, n, dt, a->k[bidx(a, ndim, dim, i)], b->k[bidx(b, ndim, dim, i)]);
		if (!strcmp(n->op_type, "Div") && dt != 1 && dt != 10 && dt != 11 && dt != 16)
			k[i] = trunc(k[i]);
	}
	if (strstr("Equal Less Greater And Or Xor LessOrEqual GreaterOrEqual", n->op_type))
		dt = 9;
	make_const(I, o, dt, ndim, dim, k);
}

/* ------------------------------------------------------------ ops */

static void
op_binary(Imp *I, const Node *n)
{
	Val *a = need(I, n, 0), *b = need(I, n, 1), *o = out(I, n, 0);
	const char *op = n->op_type, *ra, *rb;
	int ndim;
	int64_t dim[OX_MAXRANK];

	if (is_const(a) && is_const(b)) {
		fold_binary(I, n, a, b, o);
		return;
	}
	broadcast(I, a, b, &ndim, dim);
	set_shape(I, o, a->kind == V_CONST ? b->dt : a->dt, ndim, dim);
	/* x * c and x / c with a scalar constant c: scale, which saves nothing
	 * (the backward needs only c) */
	if ((!strcmp(op, "Mul") || !strcmp(op, "Div")) && is_const(b) && ox_numel(b) == 1 &&
	    ndim == a->ndim) {
		double c = !strcmp(op, "Mul") ? b->k[0] : 1.0 / b->k[0];
		if (!isfinite(c))
			ox_fail(I, "scale by %g: the constant must be finite and, for Div, "
			        "not 0", c);
		float_args(I, "scale", &a, 1, false);
		ra = ref(I, a);
		bind(I, o);
		ox_printf(&I->body, "scale(%s, c=%.17g);\n", ra, c);
		return;
	}
	if (!strcmp(op, "Mul") && is_const(a) && ox_numel(a) == 1 && ndim == b->ndim) {
		if (!isfinite(a->k[0]))
			ox_fail(I, "scale by %g: the constant must be finite", a->k[0]);
		float_args(I, "scale", &b, 1, false);
		rb = ref(I, b);
		bind(I, o);
		ox_printf(&I->body, "scale(%s, c=%.17g);\n", rb, a->k[0]);
		return;
	}
	if (!strcmp(op, "Pow")) {
		if (!is_const(b) || ox_numel(b) != 1 || (b->k[0] != 2 && b->k[0] != 0.5))
			ox_fail(I, "Pow is supported with a constant exponent 2 or 0.5 "
			        "(declare a custom op in the emitted .net for others)");
		float_args(I, b->k[0] == 2 ? "mul" : "sqrt", &a, 1, false);
		ra = ref(I, a);
		bind(I, o);
		if (b->k[0] == 2)
			ox_printf(&I->body, "%s * %s;\n", ra, ra);
		else
			ox_printf(&I->body, "sqrt(%s);\n", ra);
		return;
	}
	if (a->dt != b->dt)
		ox_fail(I, "operands are %s and %s", ox_dtype(I, a->dt), ox_dtype(I, b->dt));
	float_args(I, !strcmp(op, "Add") ? "add" : !strcmp(op, "Sub") ? "sub" :
	           !strcmp(op, "Mul") ? "mul" : "div", (Val *[]){a, b}, 2, true);
	ra = ref(I, a);
	rb = ref(I, b);
	bind(I, o);
	ox_printf(&I->body, "%s(%s, %s);\n", !strcmp(op, "Add") ? "add" :
	          !strcmp(op, "Sub") ? "sub" : !strcmp(op, "Mul") ? "mul" : "div", ra, rb);
}

static void
op_unary(Imp *I, const Node *n, const char *netop)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	const char *r;

	if (!netop)
		ox_fail(I, "%s on a tensor is not supported", n->op_type);
	float_args(I, netop, &x, 1, false);
	set_shape(I, o, x->dt, x->ndim, x->dim);
	r = ref(I, x);
	bind(I, o);
	ox_printf(&I->body, "%s(%s);\n", netop, r);
}

static void
op_softmax(Imp *I, const Node *n, const char *netop)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int ax = norm_axis(I, attr_i(n, "axis", -1), x->ndim);
	const char *r;

	float_args(I, netop, &x, 1, false);
	r = ref(I, x);
	set_shape(I, o, x->dt, x->ndim, x->dim);
	bind(I, o);
	ox_printf(&I->body, "%s(%s, axis=%d);\n", netop, r, ax - x->ndim);
}

/* The window of a Conv or pool over its nsp (1 or 2) spatial axes, each
 * value range-checked: kernel, strides, dilations, and the begin and end
 * pad of every axis (ONNX's pads list all begins, then all ends). */
typedef struct Win {
	int nsp;
	int64_t k[2], s[2], d[2], pb[2], pe[2];
	bool ceil;
} Win;

/* An INTS window attribute with one value per spatial axis, each in
 * [lo, 2^40]; absent: def on every axis. */
static void
win_ints(Imp *I, const Node *n, const char *name, int64_t *v, int nsp, int64_t def,
         int64_t lo)
{
	int k = attr_ints(I, n, name, v, nsp);

	if (k < 0)
		for (k = 0; k < nsp; k++)
			v[k] = def;
	if (k != nsp)
		ox_fail(I, "'%s' has %d value%s for %d axes", name, k, k == 1 ? "" : "s", nsp);
	for (int a = 0; a < nsp; a++)
		if (v[a] < lo || v[a] > OX_MAXDIM)
			ox_fail(I, "'%s' is %lld, outside [%lld, 2^40]", name, (long long)v[a],
			        (long long)lo);
}

/* The window's strides, dilations and pads (w->k[] set by the caller);
 * auto_pad SAME_UPPER/SAME_LOWER become the explicit pads that keep
 * ceil(size / stride) positions, the extra one at the end (UPPER) or the
 * beginning (LOWER); x the input, for those sizes. */
static void
win_read(Imp *I, const Node *n, const Val *x, Win *w)
{
	int64_t p[4];
	int np = attr_ints(I, n, "pads", p, 2 * w->nsp);
	Onnx__AttributeProto *ap = attr(n, "auto_pad");
	const char *mode = ap && ap->s.len ? ar_strndup(I->a, (const char *)ap->s.data,
	                                                ap->s.len) : "NOTSET";

	win_ints(I, n, "strides", w->s, w->nsp, 1, 1);
	win_ints(I, n, "dilations", w->d, w->nsp, 1, 1);
	if (np >= 0 && np != 2 * w->nsp)
		ox_fail(I, "'pads' has %d values for %d axes (a begin and an end each)", np,
		        w->nsp);
	for (int a = 0; a < w->nsp; a++) {
		w->pb[a] = np > 0 ? p[a] : 0;
		w->pe[a] = np > 0 ? p[w->nsp + a] : 0;
		if (w->pb[a] < 0 || w->pb[a] > OX_MAXDIM || w->pe[a] < 0 || w->pe[a] > OX_MAXDIM)
			ox_fail(I, "pad %lld is outside [0, 2^40]", (long long)(w->pb[a] < 0 ||
			        w->pb[a] > OX_MAXDIM ? w->pb[a] : w->pe[a]));
	}
	if (!strcmp(mode, "NOTSET"))
		return;
	if (strcmp(mode, "VALID") && strcmp(mode, "SAME_UPPER") && strcmp(mode, "SAME_LOWER"))
		ox_fail(I, "auto_pad '%s' is not NOTSET, VALID, SAME_UPPER or SAME_LOWER",
		        ox_clean(I, mode));
	for (int a = 0; a < w->nsp; a++) {
		int64_t h = x->dim[2 + a], span, want, total;
		/* every operand is at most 2^40: only d * (k - 1) can overflow */
		if (!ck_mul(w->d[a], w->k[a] - 1, &span))
			ox_fail(I, "the window does not fit the input");
		/* (want - 1) * s < h <= 2^40; span may be near 2^63 */
		want = (h + w->s[a] - 1) / w->s[a];
		if (!ck_add((want - 1) * w->s[a] + 1, span, &total) || total - h > OX_MAXDIM)
			ox_fail(I, "the window does not fit the input");
		total = mode[0] == 'S' && total > h ? total - h : 0;
		w->pb[a] = mode[5] == 'L' ? total - total / 2 : total / 2;
		w->pe[a] = total - w->pb[a];
	}
}

/* The output size along spatial axis a: rounded down, or up under
 * ceil_mode, where (as in PyTorch and docs/ops.md) a last window that would
 * start past the input and its begin pad is dropped. */
static int64_t
win_out(Imp *I, const Win *w, int64_t h, int a)
{
	int64_t span, num, o;

	/* every operand is in [0, 2^40] (s, d, k at least 1): only
	 * d * (k - 1) can pass 2^63 */
	if (!ck_mul(w->d[a], w->k[a] - 1, &span) ||
	    (num = h + w->pb[a] + w->pe[a] - 1 - span) < 0)
		ox_fail(I, "the window does not fit the input");
	o = num / w->s[a] + (w->ceil && num % w->s[a]) + 1;
	if (w->ceil && (o - 1) * w->s[a] >= h + w->pb[a])
		o--;
	return o;
}

/* One window setting in .net: the number where every axis has it, else the
 * list (docs/ops.md, "Windows"). */
static void
win_val(Imp *I, const int64_t *v, int nsp)
{
	if (nsp == 1 || v[0] == v[1])
		ox_printf(&I->body, "%lld", (long long)v[0]);
	else
		ox_printf(&I->body, "[%lld, %lld]", (long long)v[0], (long long)v[1]);
}

/* padding=: one number, one per axis, or each axis's begin and end. */
static void
win_pad(Imp *I, const Win *w)
{
	bool sym = w->pb[0] == w->pe[0] && (w->nsp == 1 || w->pb[1] == w->pe[1]);

	ox_printf(&I->body, "padding=");
	if (sym && w->nsp == 1)
		ox_printf(&I->body, "%lld", (long long)w->pb[0]);
	else if (sym)
		win_val(I, w->pb, w->nsp);
	else if (w->nsp == 1)
		ox_printf(&I->body, "[%lld, %lld]", (long long)w->pb[0], (long long)w->pe[0]);
	else
		ox_printf(&I->body, "[%lld, %lld, %lld, %lld]", (long long)w->pb[0],
		          (long long)w->pe[0], (long long)w->pb[1], (long long)w->pe[1]);
}

/* conv1d/conv2d(x, w, stride=, padding=, dilation=, groups=) for o. */
static void
conv_call(Imp *I, Val *o, const char *rx, const char *rw, const Win *w, int64_t g)
{
	bind(I, o);
	ox_printf(&I->body, "%s(%s, %s, stride=", w->nsp == 1 ? "conv1d" : "conv2d", rx, rw);
	win_val(I, w->s, w->nsp);
	ox_printf(&I->body, ", ");
	win_pad(I, w);
	ox_printf(&I->body, ", dilation=");
	win_val(I, w->d, w->nsp);
	ox_printf(&I->body, ", groups=%lld);\n", (long long)g);
}

static void
op_conv(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *w = need(I, n, 1), *b = in(I, n, 2), *o = out(I, n, 0);
	int64_t g = attr_in(I, n, "group", 1, 1, OX_MAXDIM), dim[4], ks[2] = {0, 0};
	Win win = {.nsp = x->ndim - 2};
	const char *rx, *rw;
	int nk;

	if ((x->ndim != 3 && x->ndim != 4) || w->ndim != x->ndim)
		ox_fail(I, "only 1-D and 2-D convolutions are supported");
	float_args(I, win.nsp == 1 ? "conv1d" : "conv2d", (Val *[]){x, w, b}, 3, true);
	if (b)
		need_vector(I, b, w->dim[0], "the bias");
	if (x->dim[1] % g || w->dim[0] % g || w->dim[1] != x->dim[1] / g)
		ox_fail(I, "x has %lld channels and w is [%lld, %lld, ...]: not %lld "
		        "groups", (long long)x->dim[1], (long long)w->dim[0],
		        (long long)w->dim[1], (long long)g);
	if ((nk = attr_ints(I, n, "kernel_shape", ks, 2)) >= 0 &&
	    (nk != win.nsp || ks[0] != w->dim[2] || (nk == 2 && ks[1] != w->dim[3])))
		ox_fail(I, "kernel_shape [%lld, %lld] is not w's [%lld, %lld]", (long long)ks[0],
		        (long long)ks[1], (long long)w->dim[2],
		        (long long)(win.nsp == 2 ? w->dim[3] : 0));
	for (int a = 0; a < win.nsp; a++)
		win.k[a] = w->dim[2 + a];
	win_read(I, n, x, &win);
	dim[0] = x->dim[0];
	dim[1] = w->dim[0];
	for (int a = 0; a < win.nsp; a++)
		dim[2 + a] = win_out(I, &win, x->dim[2 + a], a);
	set_shape(I, o, x->dt, x->ndim, dim);
	rx = ref(I, x);
	rw = ref(I, w);
	if (b) {
		/* conv2d has no bias: the bias is a broadcast add, which makes one
		 * more buffer of the output's size (docs/onnx.md) */
		Val *c = ar_alloc(I->a, sizeof *c);
		*c = *o;
		c->name = ar_printf(I->a, "%s_nobias", n->name ? n->name : o->name);
		conv_call(I, c, rx, rw, &win, g);
		const char *rb = ref(I, b);
		bind(I, o);
		ox_printf(&I->body, "%s + reshape(%s, [%lld, 1%s]);\n", c->net, rb,
		          (long long)dim[1], win.nsp == 2 ? ", 1" : "");
		return;
	}
	conv_call(I, o, rx, rw, &win, g);
}

static void
op_pool(Imp *I, const Node *n, const char *netop)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	Win w = {.nsp = 2};
	bool maxp = !strcmp(netop, "maxpool2d");
	int64_t dim[4];
	const char *r;

	if (x->ndim != 4 || !attr(n, "kernel_shape"))
		ox_fail(I, "only 2-D pooling with a kernel_shape is supported");
	win_ints(I, n, "kernel_shape", w.k, 2, 0, 1);
	win_read(I, n, x, &w);
	w.ceil = attr_bool(I, n, "ceil_mode", 0);
	if (!maxp && (w.d[0] != 1 || w.d[1] != 1))
		ox_fail(I, "AveragePool with dilations is not supported (PyTorch's "
		        "avg_pool2d has none)");
	float_args(I, netop, &x, 1, false);
	dim[0] = x->dim[0];
	dim[1] = x->dim[1];
	for (int a = 0; a < 2; a++) {
		/* win_out checked that d * (k - 1) fits; PyTorch's rule, which
		 * avgpool2d and maxpool2d keep: no window of padding only */
		int64_t half = (w.d[a] * (w.k[a] - 1) + 1) / 2;
		dim[2 + a] = win_out(I, &w, x->dim[2 + a], a);
		if (w.pb[a] > half || w.pe[a] > half)
			ox_fail(I, "pad %lld is more than half of the window (%lld) on axis %d",
			        (long long)(w.pb[a] > half ? w.pb[a] : w.pe[a]),
			        (long long)w.k[a], a + 2);
	}
	set_shape(I, o, x->dt, 4, dim);
	r = ref(I, x);
	bind(I, o);
	ox_printf(&I->body, "%s(%s, k=", netop, r);
	win_val(I, w.k, 2);
	ox_printf(&I->body, ", stride=");
	win_val(I, w.s, 2);
	ox_printf(&I->body, ", ");
	win_pad(I, &w);
	if (w.d[0] != 1 || w.d[1] != 1) {
		ox_printf(&I->body, ", dilation=");
		win_val(I, w.d, 2);
	}
	ox_printf(&I->body, "%s);\n", w.ceil ? ", ceil_mode=true" : "");
}

static void
op_global_pool(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int64_t dim[4] = {x->dim[0], x->dim[1], 1, 1};
	Val *t = ar_alloc(I->a, sizeof *t);
	const char *r;

	if (x->ndim != 4)
		ox_fail(I, "GlobalAveragePool needs a 4-D input");
	float_args(I, "global_avgpool", &x, 1, false);
	r = ref(I, x);
	t->name = ar_printf(I->a, "%s_2d", o->name);
	set_shape(I, t, x->dt, 2, dim);
	bind(I, t);
	ox_printf(&I->body, "global_avgpool(%s);\n", r);
	set_shape(I, o, x->dt, 4, dim);
	reshape_to(I, o, t);
}

static void
op_matmul(Imp *I, const Node *n)
{
	Val *a = need(I, n, 0), *b = need(I, n, 1), *o = out(I, n, 0);
	int64_t dim[OX_MAXRANK];
	int ndim;
	Val ba = *a, bb = *b;
	const char *ra, *rb;

	if (a->ndim < 2 || b->ndim < 2)
		ox_fail(I, "MatMul of 1-D tensors is not supported");
	float_args(I, "matmul", (Val *[]){a, b}, 2, true);
	if (a->dim[a->ndim - 1] != b->dim[b->ndim - 2])
		ox_fail(I, "inner dimensions %lld and %lld differ",
		        (long long)a->dim[a->ndim - 1], (long long)b->dim[b->ndim - 2]);
	ba.ndim -= 2;
	bb.ndim -= 2;
	broadcast(I, &ba, &bb, &ndim, dim);
	dim[ndim] = a->dim[a->ndim - 2];
	dim[ndim + 1] = b->dim[b->ndim - 1];
	set_shape(I, o, a->dt, ndim + 2, dim);
	ra = ref(I, a);
	rb = ref(I, b);
	bind(I, o);
	ox_printf(&I->body, "%s @ %s;\n", ra, rb);
}

/* ---- Einsum: the two-operand contractions that are a batched matmul */

/* The letters of one Einsum operand (spaces dropped), at most OX_MAXRANK,
 * each once (no diagonals); its count. */
static int
einsum_letters(Imp *I, const char *s, size_t len, char *out)
{
	int n = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == ' ')
			continue;
		if (c == '.')
			ox_fail(I, "Einsum with '...' is not supported (name every axis)");
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
			ox_fail(I, "Einsum equation has '%c' where a letter belongs", c);
		if (n == OX_MAXRANK || memchr(out, c, (size_t)n))
			ox_fail(I, n == OX_MAXRANK ? "Einsum operand with more than %d axes"
			        : "Einsum letter repeated in one operand (a diagonal) is not "
			        "supported", OX_MAXRANK);
		out[n++] = c;
	}
	return n;
}

/* The axis letter c names in letters l[0..n), -1 when none does. */
static int
einsum_at(const char *l, int n, char c)
{
	const char *p = memchr(l, c, (size_t)n);

	return p ? (int)(p - l) : -1;
}

/* A new value named o's name + suffix, of x's dtype and the given dims. */
static Val *
einsum_tmp(Imp *I, const Val *o, const char *suffix, const Val *x, int ndim,
           const int64_t *dim)
{
	Val *t = ar_alloc(I->a, sizeof *t);

	t->name = ar_printf(I->a, "%s_%s", o->name, suffix);
	set_shape(I, t, x->dt, ndim, dim);
	return t;
}

/* x with its axes in the order perm (x itself when that is the order). */
static Val *
einsum_permute(Imp *I, const Val *o, const char *suffix, Val *x, const int64_t *perm)
{
	int64_t dim[OX_MAXRANK];
	bool moved = false;

	for (int i = 0; i < x->ndim; i++) {
		dim[i] = x->dim[perm[i]];
		moved |= perm[i] != i;
	}
	if (!moved)
		return x;
	Val *t = einsum_tmp(I, o, suffix, x, x->ndim, dim);
	const char *r = ref(I, x);
	bind(I, t);
	ox_printf(&I->body, "permute(%s, ", r);
	list(I, perm, x->ndim);
	ox_printf(&I->body, ");\n");
	return t;
}

/* x reshaped to dims (x itself when they are its dims). */
static Val *
einsum_reshape(Imp *I, const Val *o, const char *suffix, Val *x, int ndim, const int64_t *dim)
{
	Val *t = einsum_tmp(I, o, suffix, x, ndim, dim);

	reshape_to(I, t, x);
	return t;
}

/* Einsum of two operands whose every letter is a batch axis (in both and
 * in the output), a contracted one (in both, not in the output) or a free
 * one of one operand (and in the output): A is permuted to [batch, free A,
 * contracted] and B to [batch, contracted, free B], each group flattened
 * to one axis, multiplied, and the product unflattened and permuted to
 * the output's order. That covers attention's "bhid,bhjd->bhij" and
 * "bhij,bhjd->bhid" in any letters; sums over one operand, diagonals and
 * broadcasting are errors. */
static void
op_einsum(Imp *I, const Node *n)
{
	Onnx__AttributeProto *ap = attr(n, "equation");
	Val *a, *b, *o = out(I, n, 0);
	char la[OX_MAXRANK], lb[OX_MAXRANK], lo[OX_MAXRANK];
	int na, nb, no;

	if (!ap || !ap->s.len)
		ox_fail(I, "Einsum without an equation");
	const char *eq = (const char *)ap->s.data, *arrow = NULL, *comma = NULL;
	size_t len = ap->s.len;
	for (size_t i = 0; i + 1 < len && !arrow; i++)
		if (eq[i] == '-' && eq[i + 1] == '>')
			arrow = eq + i;
	for (const char *p = eq; p < (arrow ? arrow : eq + len); p++)
		if (*p == ',')
			comma = comma ? eq + len : p;      /* a second comma: too many */
	if (n->n_input != 2 || !comma || comma == eq + len || !arrow)
		ox_fail(I, "only Einsum of two operands with an explicit '->' is supported");
	a = need(I, n, 0);
	b = need(I, n, 1);
	na = einsum_letters(I, eq, (size_t)(comma - eq), la);
	nb = einsum_letters(I, comma + 1, (size_t)(arrow - comma - 1), lb);
	no = einsum_letters(I, arrow + 2, len - (size_t)(arrow + 2 - eq), lo);
	if (na != a->ndim || nb != b->ndim)
		ox_fail(I, "Einsum equation names %d and %d axes for operands of %d and %d",
		        na, nb, a->ndim, b->ndim);
	float_args(I, "matmul", (Val *[]){a, b}, 2, true);

	/* the groups, as axis numbers of a and b, in the output's order
	 * (batch, free) or a's order (contracted) */
	int64_t pa[OX_MAXRANK], pb[OX_MAXRANK], dim[OX_MAXRANK];
	int bat[OX_MAXRANK], fa[OX_MAXRANK], fb[OX_MAXRANK], con[OX_MAXRANK];
	int nbat = 0, nfa = 0, nfb = 0, ncon = 0;
	for (int i = 0; i < no; i++) {
		const char *ia = memchr(la, lo[i], (size_t)na), *ib = memchr(lb, lo[i], (size_t)nb);
		if (!ia && !ib)
			ox_fail(I, "Einsum output letter '%c' is in no operand", lo[i]);
		if (ia && ib) {
			if (a->dim[ia - la] != b->dim[ib - lb])
				ox_fail(I, "Einsum axis '%c' is %lld and %lld (broadcasting is not "
				        "supported)", lo[i], (long long)a->dim[ia - la],
				        (long long)b->dim[ib - lb]);
			bat[nbat++] = (int)(ia - la);
		} else if (ia) {
			fa[nfa++] = (int)(ia - la);
		} else {
			fb[nfb++] = (int)(ib - lb);
		}
	}
	for (int i = 0; i < na; i++) {
		if (memchr(lo, la[i], (size_t)no))
			continue;
		const char *ib = memchr(lb, la[i], (size_t)nb);
		if (!ib)
			ox_fail(I, "Einsum sums axis '%c' of one operand alone (not supported)", la[i]);
		if (a->dim[i] != b->dim[ib - lb])
			ox_fail(I, "Einsum contracts axis '%c' of sizes %lld and %lld", la[i],
			        (long long)a->dim[i], (long long)b->dim[ib - lb]);
		con[ncon++] = i;
	}
	for (int i = 0; i < nb; i++)
		if (!memchr(lo, lb[i], (size_t)no) && !memchr(la, lb[i], (size_t)na))
			ox_fail(I, "Einsum sums axis '%c' of one operand alone (not supported)", lb[i]);
	if (ncon == 0)
		ox_fail(I, "Einsum without a contracted axis (an outer product) is not supported");

	/* A -> [batch, free A, contracted], B -> [batch, contracted, free B] */
	int k = 0, kb = 0;
	for (int i = 0; i < nbat; i++) {
		pa[k++] = bat[i];
		pb[kb++] = einsum_at(lb, nb, la[bat[i]]);      /* a batch letter is in both */
	}
	for (int i = 0; i < nfa; i++)
		pa[k++] = fa[i];
	for (int i = 0; i < ncon; i++) {
		pa[k++] = con[i];
		pb[kb++] = einsum_at(lb, nb, la[con[i]]);
	}
	for (int i = 0; i < nfb; i++)
		pb[kb++] = fb[i];
	int64_t m = 1, kk = 1, nn = 1;
	for (int i = 0; i < nfa; i++)
		m *= a->dim[fa[i]];
	for (int i = 0; i < ncon; i++)
		kk *= a->dim[con[i]];
	for (int i = 0; i < nfb; i++)
		nn *= b->dim[fb[i]];
	Val *ta = einsum_permute(I, o, "a", a, pa), *tb = einsum_permute(I, o, "b", b, pb);
	for (int i = 0; i < nbat; i++)
		dim[i] = a->dim[bat[i]];
	dim[nbat] = m;
	dim[nbat + 1] = kk;
	ta = einsum_reshape(I, o, "a2", ta, nbat + 2, dim);
	dim[nbat] = kk;
	dim[nbat + 1] = nn;
	tb = einsum_reshape(I, o, "b2", tb, nbat + 2, dim);

	/* the product [batch, M, N], unflattened to [batch, free A, free B] */
	dim[nbat] = m;
	dim[nbat + 1] = nn;
	Val *p = einsum_tmp(I, o, "mm", a, nbat + 2, dim);
	const char *ra = ref(I, ta), *rb = ref(I, tb);
	bind(I, p);
	ox_printf(&I->body, "%s @ %s;\n", ra, rb);
	char lp[OX_MAXRANK];
	int np = 0;
	for (int i = 0; i < nbat; i++)
		lp[np] = la[bat[i]], dim[np++] = a->dim[bat[i]];
	for (int i = 0; i < nfa; i++)
		lp[np] = la[fa[i]], dim[np++] = a->dim[fa[i]];
	for (int i = 0; i < nfb; i++)
		lp[np] = lb[fb[i]], dim[np++] = b->dim[fb[i]];
	p = einsum_reshape(I, o, "mm2", p, np, dim);
	int64_t po[OX_MAXRANK];
	for (int i = 0; i < no; i++)
		po[i] = einsum_at(lp, np, lo[i]);
	p = einsum_permute(I, o, "out", p, po);
	alias(o, p);
}

static void
op_gemm(Imp *I, const Node *n)
{
	Val *a = need(I, n, 0), *b = need(I, n, 1), *c = in(I, n, 2), *o = out(I, n, 0);
	bool ta = attr_bool(I, n, "transA", 0), tb = attr_bool(I, n, "transB", 0);
	int64_t dim[2];
	const char *ra, *rb, *rc = NULL;

	if (a->ndim != 2 || b->ndim != 2)
		ox_fail(I, "Gemm needs 2-D operands");
	float_args(I, "matmul", (Val *[]){a, b, c}, 3, true);
	if (attr_f(n, "alpha", 1) != 1 || (c && attr_f(n, "beta", 1) != 1))
		ox_fail(I, "Gemm with alpha or beta other than 1 is not supported");
	dim[0] = a->dim[ta ? 1 : 0];
	dim[1] = b->dim[tb ? 0 : 1];
	if (a->dim[ta ? 0 : 1] != b->dim[tb ? 1 : 0])
		ox_fail(I, "inner dimensions differ");
	set_shape(I, o, a->dt, 2, dim);
	if (c) {        /* + c broadcasts c to the product, not the other way */
		int ndim;
		int64_t bd[OX_MAXRANK];
		broadcast(I, o, c, &ndim, bd);
		if (ndim != 2 || bd[0] != dim[0] || bd[1] != dim[1])
			ox_fail(I, "C does not broadcast to [%lld, %lld]", (long long)dim[0],
			        (long long)dim[1]);
	}
	ra = ref(I, a);
	rb = ref(I, b);
	if (c)
		rc = ref(I, c);
	bind(I, o);
	ox_printf(&I->body, ta ? "transpose(%s, 0, 1) @ " : "%s @ ", ra);
	ox_printf(&I->body, tb ? "transpose(%s, 0, 1)" : "%s", rb);
	if (c)
		ox_printf(&I->body, " + %s", rc);
	ox_printf(&I->body, ";\n");
}

static void
op_norm(Imp *I, const Node *n, bool batch)
{
	Val *x = need(I, n, 0), *g = need(I, n, 1), *b = need(I, n, 2), *o = out(I, n, 0);
	const char *rx, *rg, *rb;

	if (batch) {
		if (attr_bool(I, n, "training_mode", n->n_output > 1))
			I->nbn_train++;
		else
			I->nbn_infer++;
		if (x->ndim != 4)
			ox_fail(I, "BatchNormalization needs a 4-D input");
	} else if (norm_axis(I, attr_i(n, "axis", -1), x->ndim) != x->ndim - 1) {
		ox_fail(I, "LayerNormalization over axes other than the last is not supported");
	}
	if (g->kind != V_PARAM || b->kind != V_PARAM)
		ox_fail(I, "scale and bias must be parameters (see --params)");
	float_args(I, batch ? "batchnorm" : "layernorm", (Val *[]){x, g, b}, 3, true);
	need_vector(I, g, x->dim[batch ? 1 : x->ndim - 1], "the scale");
	need_vector(I, b, x->dim[batch ? 1 : x->ndim - 1], "the bias");
	set_shape(I, o, x->dt, x->ndim, x->dim);
	rx = ref(I, x);
	rg = ref(I, g);
	rb = ref(I, b);
	bind(I, o);
	ox_printf(&I->body, "%s(%s, %s, %s);\n", batch ? "batchnorm" : "layernorm", rx, rg, rb);
}

static void
op_dropout(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *r = in(I, n, 1), *t = in(I, n, 2), *o = out(I, n, 0);
	double p = r ? (is_const(r) ? r->k[0] : -1) : attr_f(n, "ratio", 0.5);
	bool train = t && is_const(t) && t->k[0] != 0;
	const char *rx;

	if (t && !is_const(t))
		ox_fail(I, "Dropout's training_mode must be a constant");
	if (!train || p == 0) {
		alias(o, x);
		return;
	}
	if (p < 0 && r && !is_const(r))
		ox_fail(I, "Dropout's ratio must be a constant");
	if (!(p >= 0 && p < 1))
		ox_fail(I, "Dropout's ratio %g is outside [0, 1)", p);
	float_args(I, "dropout", &x, 1, false);
	I->ndropout++;
	set_shape(I, o, x->dt, x->ndim, x->dim);
	rx = ref(I, x);
	bind(I, o);
	ox_printf(&I->body, "dropout(%s, p=%.17g);\n", rx, p);
}

static void
op_cast(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int to = (int)attr_in(I, n, "to", 0, 0, 64);   /* past ONNX's dtypes */
	const char *r;

	ox_dtype(I, to);
	if (to == x->dt) {      /* (constants cast in fold_node) */
		alias(o, x);
		return;
	}
	set_shape(I, o, to, x->ndim, x->dim);
	r = ref(I, x);
	bind(I, o);
	ox_printf(&I->body, "cast(%s, dtype=%s);\n", r, ox_dtype(I, to));
}

/* The axes of Squeeze/Unsqueeze/ReduceMean: input 1 (opset 13+) or attr. */
static int
axes_of(Imp *I, const Node *n, size_t k, int64_t *ax)
{
	Val *a = in(I, n, k);
	if (a) {
		if (!is_const(a) || ox_numel(a) > OX_MAXRANK)
			ox_fail(I, "axes must be a constant");
		for (int64_t i = 0; i < ox_numel(a); i++)
			ax[i] = kint(I, a, i);
		return (int)ox_numel(a);
	}
	return attr_ints(I, n, "axes", ax, OX_MAXRANK);
}

/* Marks axis a, which axes may name once only. */
static void
mark_axis(Imp *I, bool *mark, int a)
{
	if (mark[a])
		ox_fail(I, "axes name axis %d twice", a);
	mark[a] = true;
}

static void
op_squeeze(Imp *I, const Node *n, bool un)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int64_t ax[OX_MAXRANK], dim[OX_MAXRANK];
	int na = axes_of(I, n, 1, ax), ndim = un ? x->ndim + na : 0;
	bool mark[OX_MAXRANK + 1] = {0};

	if (un) {
		if (ndim > OX_MAXRANK || na < 0)
			ox_fail(I, "Unsqueeze needs axes and at most %d axes", OX_MAXRANK);
		for (int i = 0; i < na; i++)
			mark_axis(I, mark, norm_axis(I, ax[i], ndim));
		for (int i = 0, j = 0; i < ndim; i++)
			dim[i] = mark[i] ? 1 : x->dim[j++];
	} else {
		for (int i = 0; i < na; i++)
			mark_axis(I, mark, norm_axis(I, ax[i], x->ndim));
		for (int i = 0; i < x->ndim; i++)
			if (na < 0 ? x->dim[i] != 1 : !mark[i])
				dim[ndim++] = x->dim[i];
			else if (x->dim[i] != 1)
				ox_fail(I, "cannot squeeze axis %d of size %lld", i,
				        (long long)x->dim[i]);
	}
	if (is_const(x)) {
		make_const(I, o, x->dt, ndim, dim, x->k);
		return;
	}
	set_shape(I, o, x->dt, ndim, dim);
	reshape_to(I, o, x);
}

static void
op_reshape(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *s = need(I, n, 1), *o = out(I, n, 0);
	int64_t dim[OX_MAXRANK], known = 1;
	int ndim = (int)ox_numel(s), minus = -1;

	if (!is_const(s) || ndim > OX_MAXRANK)
		ox_fail(I, "the target shape must fold to a constant of at most %d values", OX_MAXRANK);
	for (int i = 0; i < ndim; i++) {
		dim[i] = kint(I, s, i);
		if (dim[i] == 0 && !attr_bool(I, n, "allowzero", 0))
			dim[i] = i < x->ndim ? x->dim[i] : 0;
		if (dim[i] < -1 || dim[i] > OX_MAXDIM)
			ox_fail(I, "target dimension %s is out of range", knum(I, dim[i]));
		if (dim[i] == -1) {
			if (minus >= 0)
				ox_fail(I, "two -1 in the target shape");
			minus = i;
		} else if (dim[i] && known > ((int64_t)1 << 50) / dim[i]) {
			ox_fail(I, "the target shape is too large");
		} else {
			known *= dim[i];
		}
	}
	if (minus >= 0) {
		if (known == 0 || ox_numel(x) % known)
			ox_fail(I, "cannot infer the -1 in the target shape");
		dim[minus] = ox_numel(x) / known;
	}
	set_shape(I, o, x->dt, ndim, dim);
	if (ox_numel(o) != ox_numel(x))
		ox_fail(I, "reshape of %lld elements to %lld", (long long)ox_numel(x),
		        (long long)ox_numel(o));
	if (is_const(x)) {
		o->kind = V_CONST;
		o->k = x->k;
		return;
	}
	reshape_to(I, o, x);
}

static void
op_flatten(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int ax = norm_axis(I, attr_i(n, "axis", 1), x->ndim + 1);
	int64_t dim[2] = {1, 1};

	for (int i = 0; i < x->ndim; i++)
		dim[i >= ax] *= x->dim[i];
	set_shape(I, o, x->dt, 2, dim);
	reshape_to(I, o, x);
}

/* Transpose node n's perm of x's axes into p (reversed when absent),
 * checked, and the result's dims into dim. */
static void
perm_of(Imp *I, const Node *n, const Val *x, int64_t *p, int64_t *dim)
{
	int np = attr_ints(I, n, "perm", p, OX_MAXRANK);

	if (np < 0)
		for (np = 0; np < x->ndim; np++)
			p[np] = x->ndim - 1 - np;
	if (np != x->ndim)
		ox_fail(I, "perm has %d entries for rank %d", np, x->ndim);
	for (int i = 0; i < np; i++) {
		if (p[i] < 0 || p[i] >= x->ndim)
			ox_fail(I, "perm entry %lld is out of range", (long long)p[i]);
		for (int j = 0; j < i; j++)
			if (p[j] == p[i])
				ox_fail(I, "perm names axis %lld twice", (long long)p[i]);
		dim[i] = x->dim[p[i]];
	}
}

/* (constants transpose in fold_transpose) */
static void
op_transpose(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int64_t p[OX_MAXRANK] = {0}, dim[OX_MAXRANK] = {0};
	int np = x->ndim, moved = 0, a = -1, b = -1;
	const char *r;

	perm_of(I, n, x, p, dim);
	for (int i = 0; i < np; i++) {
		if (p[i] != i) {
			moved++;
			b = i;
			if (a < 0)
				a = i;
		}
	}
	set_shape(I, o, x->dt, np, dim);
	if (!moved) {
		alias(o, x);
		return;
	}
	r = ref(I, x);
	bind(I, o);
	if (moved == 2 && p[a] == b)
		ox_printf(&I->body, "transpose(%s, %d, %d);\n", r, a, b);
	else {
		ox_printf(&I->body, "permute(%s, ", r);
		list(I, p, np);
		ox_printf(&I->body, ");\n");
	}
}

/* The axis of Concat node n and its result's dims: the inputs' with their
 * sizes along the axis added (checked: one rank, equal other axes). */
static int
concat_dims(Imp *I, const Node *n, int64_t *dim)
{
	Val *x0 = need(I, n, 0);
	int ax = norm_axis(I, attr_i(n, "axis", 0), x0->ndim);

	memcpy(dim, x0->dim, sizeof(int64_t) * OX_MAXRANK);
	dim[ax] = 0;
	for (size_t i = 0; i < n->n_input; i++) {
		Val *v = need(I, n, i);
		if (v->ndim != x0->ndim)
			ox_fail(I, "inputs of different ranks");
		for (int k = 0; k < v->ndim; k++)
			if (k != ax && v->dim[k] != x0->dim[k])
				ox_fail(I, "'%s' and '%s' differ on axis %d", x0->name, v->name, k);
		dim[ax] += v->dim[ax];  /* 2^16 inputs of 2^40: no overflow */
	}
	return ax;
}

/* (constants concatenate in fold_concat) */
static void
op_concat(Imp *I, const Node *n)
{
	Val *o = out(I, n, 0), *x0 = need(I, n, 0);
	int64_t dim[OX_MAXRANK];
	int ax = concat_dims(I, n, dim);

	set_shape(I, o, x0->dt, x0->ndim, dim);
	for (size_t i = 0; i < n->n_input; i++)
		float_args(I, "concat", (Val *[]){x0, need(I, n, i)}, 2, true);
	const char **r = ar_alloc(I->a, n->n_input * sizeof *r);
	for (size_t i = 0; i < n->n_input; i++)
		r[i] = ref(I, need(I, n, i));
	bind(I, o);
	ox_printf(&I->body, "concat(");
	for (size_t i = 0; i < n->n_input; i++)
		ox_printf(&I->body, "%s, ", r[i]);
	ox_printf(&I->body, "axis=%d);\n", ax);
}

/* o = x[start:end] on axis ax, a view. */
static void
slice1(Imp *I, Val *o, Val *x, int ax, int64_t start, int64_t end)
{
	int64_t dim[OX_MAXRANK];
	const char *r = ref(I, x);

	memcpy(dim, x->dim, sizeof dim);
	dim[ax] = end - start;
	set_shape(I, o, x->dt, x->ndim, dim);
	if (start == 0 && end == x->dim[ax]) {
		alias(o, x);
		return;
	}
	bind(I, o);
	ox_printf(&I->body, "slice(%s, axis=%d, start=%lld, end=%lld);\n", r, ax,
	          (long long)start, (long long)end);
}

/* o = x[s : : k] on axis ax, cnt elements, as views: PyTorch's strided
 * slice is a view, and so is this chain. The cnt groups of k elements that
 * hold them, from a start j at most k - 1 before s (which needs cnt * k
 * elements of the axis), are reshaped to [cnt, k], and the one at j taken:
 * slice, reshape, slice, reshape. */
static void
slice_step(Imp *I, Val *o, Val *x, int ax, int64_t s, int64_t cnt, int64_t k)
{
	Val *t[3];
	int64_t d = x->dim[ax], j, dim[OX_MAXRANK];

	if (cnt > d / k)
		ox_fail(I, "a slice of %lld elements with step %lld needs %lld of the "
		        "axis's %lld as views", (long long)cnt, (long long)k,
		        (long long)(cnt * k), (long long)d);
	if (x->ndim + 1 > OX_MAXRANK)
		ox_fail(I, "a stepped slice of a %d-axis tensor needs %d axes (at most %d)",
		        x->ndim, x->ndim + 1, OX_MAXRANK);
	j = s + cnt * k > d ? s + cnt * k - d : 0;      /* <= s, < k */
	for (int i = 0; i < 3; i++) {
		t[i] = ar_alloc(I->a, sizeof *t[i]);
		t[i]->name = ar_printf(I->a, "%s_step%d", o->name, i);
	}
	slice1(I, t[0], x, ax, s - j, s - j + cnt * k);
	memcpy(dim, x->dim, sizeof dim);
	memmove(dim + ax + 1, dim + ax, sizeof(int64_t) * (size_t)(x->ndim - ax));
	dim[ax] = cnt;
	dim[ax + 1] = k;
	set_shape(I, t[1], x->dt, x->ndim + 1, dim);
	reshape_to(I, t[1], t[0]);
	slice1(I, t[2], t[1], ax + 1, j, j + 1);
	memmove(dim + ax + 1, dim + ax + 2, sizeof(int64_t) * (size_t)(x->ndim - ax - 1));
	set_shape(I, o, x->dt, x->ndim, dim);
	reshape_to(I, o, t[2]);
}

static void
op_split(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *s = in(I, n, 1);
	int ax = norm_axis(I, attr_i(n, "axis", 0), x->ndim);
	int64_t sz[64], at = 0, no = (int64_t)n->n_output;
	bool equal = true;

	if (no > 64)
		ox_fail(I, "too many outputs");
	for (int64_t i = 0; i < no; i++)
		if (!out(I, n, (size_t)i))
			ox_fail(I, "output %lld has no name", (long long)i);
	for (int64_t i = 0; i < no; i++) {
		if (s && (!is_const(s) || ox_numel(s) != no))
			ox_fail(I, "split sizes must be a constant with one size per output");
		if ((sz[i] = s ? kint(I, s, i) : x->dim[ax] / no) < 0)
			ox_fail(I, "split size %s is negative", knum(I, sz[i]));
		equal &= sz[i] == sz[0];
		at += sz[i];
	}
	if (at != x->dim[ax] || (!s && x->dim[ax] % no))
		ox_fail(I, "the split sizes do not add up to the axis (%lld)", (long long)x->dim[ax]);
	if (equal && no > 1) {
		const char *r = ref(I, x);
		for (int64_t i = 0; i < no; i++) {
			Val *o = out(I, n, (size_t)i);
			int64_t dim[OX_MAXRANK];
			memcpy(dim, x->dim, sizeof dim);
			dim[ax] = sz[0];
			set_shape(I, o, x->dt, x->ndim, dim);
			o->net = ox_netname(I, o->name);
			o->kind = V_ACT;
			ox_printf(&I->body, "%s%s", i ? ", " : "", o->net);
		}
		ox_printf(&I->body, " = split(%s, %lld, axis=%d);\n", r, (long long)no, ax);
		return;
	}
	at = 0;
	for (int64_t i = 0; i < no; i++) {
		slice1(I, out(I, n, (size_t)i), x, ax, at, at + sz[i]);
		at += sz[i];
	}
}

static int64_t
clampi(int64_t v, int64_t d)
{
	if (v < 0)
		v += d;
	return v < 0 ? 0 : v > d ? d : v;
}

static void
op_slice(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *st = need(I, n, 1), *en = need(I, n, 2);
	Val *axv = in(I, n, 3), *stp = in(I, n, 4), *o = out(I, n, 0), *cur = x;
	int64_t na = ox_numel(st);

	if (!is_const(st) || !is_const(en) || (axv && !is_const(axv)) ||
	    (stp && !is_const(stp)) || ox_numel(en) != na ||
	    (axv && ox_numel(axv) != na) || (stp && ox_numel(stp) != na))
		ox_fail(I, "starts, ends, axes and steps must be constants of one length");
	/* one statement per axis: a constant of 2^20 starts would write as
	 * many, for every Slice reading it */
	if (na > x->ndim)
		ox_fail(I, "%lld starts for rank %d", (long long)na, x->ndim);
	if (na == 0) {
		alias(o, x);
		return;
	}
	for (int64_t i = 0; i < na; i++) {
		int ax = norm_axis(I, axv ? kint(I, axv, i) : i, x->ndim);
		int64_t s = clampi(kint(I, st, i), cur->dim[ax]), e = clampi(kint(I, en, i), cur->dim[ax]);
		Val *t = i == na - 1 ? o : ar_alloc(I->a, sizeof *t);
		int64_t k = stp ? kint(I, stp, i) : 1;
		if (k < 1)
			ox_fail(I, "slices of a tensor with a step below 1 are not supported");
		if (e < s)
			e = s;
		if (t != o)
			t->name = ar_printf(I->a, "%s_%lld", o->name, (long long)i);
		if (k > 1 && (e - s + k - 1) / k > 1)
			slice_step(I, t, cur, ax, s, (e - s + k - 1) / k, k);
		else
			slice1(I, t, cur, ax, s, k > 1 && e > s ? s + 1 : e);
		cur = t;
	}
}

/* Gather's result dims into dim: d's axes but ax, then ix's in its place
 * (two 8-D operands would make 15, past dim[]); its rank. */
static int
gather_dims(Imp *I, const Val *d, const Val *ix, int ax, int64_t *dim)
{
	int ndim = 0;

	if (d->ndim - 1 + ix->ndim > OX_MAXRANK)
		ox_fail(I, "the result would have %d axes (at most %d)",
		        d->ndim - 1 + ix->ndim, OX_MAXRANK);
	for (int i = 0; i < d->ndim; i++)
		if (i == ax)
			for (int j = 0; j < ix->ndim; j++)
				dim[ndim++] = ix->dim[j];
		else
			dim[ndim++] = d->dim[i];
	return ndim;
}

/* (constants gather in fold_gather) */
static void
op_gather(Imp *I, const Node *n)
{
	Val *d = need(I, n, 0), *ix = need(I, n, 1), *o = out(I, n, 0);
	int ax = norm_axis(I, attr_i(n, "axis", 0), d->ndim);
	int64_t dim[OX_MAXRANK];
	int ndim = gather_dims(I, d, ix, ax, dim);

	if (is_const(ix) && ox_numel(ix) == 1) {
		/* x[..., i, ...]: a one-element slice, then the axis dropped */
		Val *t = ar_alloc(I->a, sizeof *t);
		int64_t i0 = kint(I, ix, 0) < 0 ? kint(I, ix, 0) + d->dim[ax] : kint(I, ix, 0);
		t->name = ar_printf(I->a, "%s_slice", o->name);
		if (i0 < 0 || i0 >= d->dim[ax])
			ox_fail(I, "index %lld is out of range", (long long)kint(I, ix, 0));
		slice1(I, t, d, ax, i0, i0 + 1);
		set_shape(I, o, d->dt, ndim, dim);
		reshape_to(I, o, t);
		return;
	}
	if (ax != 0 || d->ndim != 2 || (ix->dt != 7 && ix->dt != 6))
		ox_fail(I, "only embedding lookups (Gather of a 2-D table on axis 0 "
		        "with integer indices) are supported");
	set_shape(I, o, d->dt, ndim, dim);
	const char *ri = ref(I, ix), *rd = ref(I, d);
	bind(I, o);
	ox_printf(&I->body, "embedding(%s, %s);\n", ri, rd);
}

static void
op_shape(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int64_t r = x->ndim, s = attr_i(n, "start", 0), e = attr_i(n, "end", r);
	double *k;

	s = clampi(s, r);
	e = clampi(e, r);
	if (e < s)
		e = s;
	k = kalloc(I, e - s);
	for (int64_t i = s; i < e; i++)
		k[i - s] = (double)x->dim[i];
	int64_t d = e - s;
	make_const(I, o, 7, 1, &d, k);
}

static void
op_constant_of_shape(Imp *I, const Node *n)
{
	Val *s = need(I, n, 0), *o = out(I, n, 0);
	Onnx__AttributeProto *v = attr(n, "value");
	int64_t dim[OX_MAXRANK], nel;
	double fill = 0, *k;
	int dt = 1;

	if (!is_const(s) || ox_numel(s) > OX_MAXRANK)
		ox_fail(I, "the shape must fold to a constant");
	if (v && v->t) {
		Val tmp = {.name = o->name};
		ox_const_tensor(I, &tmp, v->t);
		fill = ox_numel(&tmp) ? tmp.k[0] : 0;
		dt = tmp.dt;
	}
	for (int64_t i = 0; i < ox_numel(s); i++)
		if ((dim[i] = kint(I, s, i)) < 0)
			ox_fail(I, "dimension %s is out of range", knum(I, dim[i]));
	nel = fold_elems(I, (int)ox_numel(s), dim);
	k = kalloc(I, nel);
	for (int64_t i = 0; i < nel; i++)
		k[i] = fill;
	make_const(I, o, dt, (int)ox_numel(s), dim, k);
}

static void
op_range(Imp *I, const Node *n)
{
	Val *s = need(I, n, 0), *l = need(I, n, 1), *d = need(I, n, 2), *o = out(I, n, 0);
	int64_t cnt;
	double *k;

	if (!is_const(s) || !is_const(l) || !is_const(d) || d->k[0] == 0)
		ox_fail(I, "Range needs constant start, limit and a nonzero delta");
	double c = ceil((l->k[0] - s->k[0]) / d->k[0]);
	if (!(c <= OX_MAXFOLD))
		ox_fail(I, "Range of more than %d elements", OX_MAXFOLD);
	cnt = c > 0 ? (int64_t)c : 0;
	k = kalloc(I, cnt);
	for (int64_t i = 0; i < cnt; i++)
		k[i] = s->k[0] + (double)i * d->k[0];
	make_const(I, o, s->dt, 1, &cnt, k);
}

static void
op_trilu(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *kv = in(I, n, 1), *o = out(I, n, 0);
	int64_t kk = kv && is_const(kv) ? kint(I, kv, 0) : 0, r, c;
	bool upper = attr_bool(I, n, "upper", 1);
	double *k;

	if (!is_const(x) || x->ndim < 2)
		ox_fail(I, "Trilu is supported on constants only");
	r = x->dim[x->ndim - 2];
	c = x->dim[x->ndim - 1];
	k = kalloc(I, ox_numel(x));
	for (int64_t i = 0; i < ox_numel(x); i++) {
		int64_t row = i / c % r, col = i % c;
		bool keep = upper ? col - row >= kk : col - row <= kk;
		k[i] = keep ? x->k[i] : 0;
	}
	make_const(I, o, x->dt, x->ndim, x->dim, k);
}

static void
op_where(Imp *I, const Node *n)
{
	Val *c = need(I, n, 0), *x = need(I, n, 1), *y = need(I, n, 2), *o = out(I, n, 0);
	int ndim, r2;
	int64_t dim[OX_MAXRANK], d2[OX_MAXRANK];
	Val t;

	broadcast(I, x, y, &ndim, dim);
	t = *x;
	t.ndim = ndim;
	memcpy(t.dim, dim, sizeof dim);
	broadcast(I, c, &t, &r2, d2);
	if (is_const(c) && is_const(x) && is_const(y)) {
		int64_t nel = fold_elems(I, r2, d2);
		double *k = kalloc(I, nel);
		for (int64_t i = 0; i < nel; i++)
			k[i] = c->k[bidx(c, r2, d2, i)] ? x->k[bidx(x, r2, d2, i)] : y->k[bidx(y, r2, d2, i)];
		make_const(I, o, x->dt, r2, d2, k);
		return;
	}
	set_shape(I, o, x->kind == V_CONST ? y->dt : x->dt, r2, d2);
	/* masked_fill with a constant mask and fill: the mask stays with the
	 * model, so the op reads one activation and saves nothing of it */
	if (c->kind == V_CONST && (x->kind == V_CONST) != (y->kind == V_CONST)) {
		Val *a = x->kind == V_CONST ? y : x;
		if (a->ndim == r2 && !memcmp(a->dim, d2, sizeof(int64_t) * (size_t)r2)) {
			custom(I, o, "masked_fill", &a, 1, ox_numel(o), -1);
			return;
		}
	}
	Val *args[3] = {c, x, y};
	custom(I, o, "where", args, 3, ox_numel(o), 0);
}

static void
op_expand(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *s = need(I, n, 1), *o = out(I, n, 0);
	Val t = {.ndim = (int)ox_numel(s)};
	int ndim;
	int64_t dim[OX_MAXRANK];

	if (!is_const(s) || t.ndim > OX_MAXRANK)
		ox_fail(I, "the target shape must fold to a constant of at most %d values",
		        OX_MAXRANK);
	for (int i = 0; i < t.ndim; i++)
		if ((t.dim[i] = kint(I, s, i)) < 0 || t.dim[i] > OX_MAXDIM)
			ox_fail(I, "target dimension %s is out of range", knum(I, t.dim[i]));
	broadcast(I, x, &t, &ndim, dim);
	if (is_const(x)) {
		int64_t nel = fold_elems(I, ndim, dim);
		double *k = kalloc(I, nel);
		for (int64_t i = 0; i < nel; i++)
			k[i] = x->k[bidx(x, ndim, dim, i)];
		make_const(I, o, x->dt, ndim, dim, k);
		return;
	}
	set_shape(I, o, x->dt, ndim, dim);
	if (ox_numel(o) == ox_numel(x)) {
		reshape_to(I, o, x);
		return;
	}
	custom(I, o, "expand", &x, 1, ox_numel(o), -1);
}

static void
op_pad(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *p = in(I, n, 1), *o = out(I, n, 0);
	int64_t dim[OX_MAXRANK];

	if (!p || !is_const(p) || ox_numel(p) != 2 * x->ndim)
		ox_fail(I, "pads must be a constant with two values per axis");
	for (int i = 0; i < x->ndim; i++)
		if ((dim[i] = x->dim[i] + kint(I, p, i) + kint(I, p, i + x->ndim)) < 0)
			ox_fail(I, "negative padded size");
	set_shape(I, o, x->dt, x->ndim, dim);
	custom(I, o, "pad", &x, 1, ox_numel(o), -1);
}

static void
op_clip(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);

	set_shape(I, o, x->dt, x->ndim, x->dim);
	/* relu6 and friends: the backward masks by the input, which it saves */
	custom(I, o, "clip", &x, 1, ox_numel(o), 0);
}

static void
op_erf(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);

	set_shape(I, o, x->dt, x->ndim, x->dim);
	custom(I, o, "erf", &x, 1, 4 * ox_numel(o), 0);
}

/* ReduceMean, ReduceSum over a list of axes (all when none is given),
 * as `mean`/`sum` with axis=[...] (+ a reshape view for keepdims). */
static void
op_reduce(Imp *I, const Node *n, const char *netop)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int64_t ax[OX_MAXRANK], dim[OX_MAXRANK];
	int na = axes_of(I, n, 1, ax), nr = 0, nk = 0;
	bool keep = attr_bool(I, n, "keepdims", 1), mark[OX_MAXRANK] = {0};
	Val *t = ar_alloc(I->a, sizeof *t);
	const char *r;

	/* no axes to reduce (a scalar has none): the same tensor */
	if (na <= 0 && (attr_bool(I, n, "noop_with_empty_axes", 0) || x->ndim == 0)) {
		alias(o, x);
		return;
	}
	if (na <= 0)
		for (na = 0; na < x->ndim; na++)
			ax[na] = na;
	for (int i = 0; i < na; i++)
		mark_axis(I, mark, norm_axis(I, ax[i], x->ndim));
	for (int i = 0; i < x->ndim; i++)
		if (!mark[i])
			dim[nk++] = x->dim[i];
	float_args(I, netop, &x, 1, false);
	t->name = keep ? ar_printf(I->a, "%s_r", o->name) : o->name;
	set_shape(I, keep ? t : o, x->dt, nk, dim);
	r = ref(I, x);
	bind(I, keep ? t : o);
	ox_printf(&I->body, "%s(%s, axis=%s", netop, r, na > 1 ? "[" : "");
	for (int i = 0; i < x->ndim; i++)
		if (mark[i])
			ox_printf(&I->body, "%s%d", nr++ ? ", " : "", i - x->ndim);
	ox_printf(&I->body, "%s);\n", na > 1 ? "]" : "");
	if (keep) {
		for (int i = 0; i < x->ndim; i++)
			dim[i] = mark[i] ? 1 : x->dim[i];
		set_shape(I, o, x->dt, x->ndim, dim);
		reshape_to(I, o, t);
	}
}

/* ReduceL2 of a tensor (F.normalize in Swin V2's cosine attention): a
 * custom op that saves x, as PyTorch's vector norm does (it also keeps its
 * small result); keepdims as the op's own shape. */
static void
op_reduce_l2(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	int64_t ax[OX_MAXRANK], dim[OX_MAXRANK];
	int na = axes_of(I, n, 1, ax), ndim = 0;
	bool keep = attr_bool(I, n, "keepdims", 1), mark[OX_MAXRANK] = {0};

	float_args(I, "sum", &x, 1, false);
	for (int i = 0; i < (na <= 0 ? x->ndim : na); i++)
		mark_axis(I, mark, na <= 0 ? i : norm_axis(I, ax[i], x->ndim));
	for (int i = 0; i < x->ndim; i++)
		if (!mark[i] || keep)
			dim[ndim++] = mark[i] ? 1 : x->dim[i];
	set_shape(I, o, x->dt, ndim, dim);
	custom(I, o, "reduce_l2", &x, 1, 2 * ox_numel(x), 0);
}

/* HardSigmoid max(0, min(1, alpha x + beta)): PyTorch's (alpha 1/6, beta
 * 1/2) is hardsigmoid(x), which saves x; another alpha with beta 1/2 is
 * hardsigmoid of x scaled by 6 alpha (the scaled tensor is what it saves). */
static void
op_hardsigmoid(Imp *I, const Node *n)
{
	Val *x = need(I, n, 0), *o = out(I, n, 0);
	double al = attr_f(n, "alpha", 0.2), be = attr_f(n, "beta", 0.5);
	const char *r;

	if (fabs(be - 0.5) > 1e-6 || !isfinite(al) || al == 0)
		ox_fail(I, "HardSigmoid with alpha %g and beta %g: only beta 0.5 and a "
		        "nonzero alpha map to hardsigmoid (declare a custom op for others)",
		        al, be);
	float_args(I, "hardsigmoid", &x, 1, false);
	set_shape(I, o, x->dt, x->ndim, x->dim);
	r = ref(I, x);
	if (fabs(al * 6 - 1) > 1e-6) {
		Val *t = ar_alloc(I->a, sizeof *t);
		*t = *o;
		t->name = ar_printf(I->a, "%s_scaled", o->name);
		bind(I, t);
		ox_printf(&I->body, "scale(%s, c=%.17g);\n", r, 6 * al);
		r = t->net;
	}
	bind(I, o);
	ox_printf(&I->body, "hardsigmoid(%s);\n", r);
}

static void
op_constant(Imp *I, const Node *n)
{
	Val *o = out(I, n, 0);
	Onnx__AttributeProto *at = n->n_attribute ? n->attribute[0] : NULL;

	if (!at || !at->name)
		ox_fail(I, "Constant has no value");
	if (at->t)
		ox_const_tensor(I, o, at->t);
	else if (!strcmp(at->name, "value_float") || !strcmp(at->name, "value_int")) {
		double *k = kalloc(I, 1);
		k[0] = at->name[6] == 'f' ? at->f : (double)at->i;
		make_const(I, o, at->name[6] == 'f' ? 1 : 7, 0, NULL, k);
	} else if (!strcmp(at->name, "value_ints") || !strcmp(at->name, "value_floats")) {
		int64_t d = at->name[6] == 'f' ? (int64_t)at->n_floats : (int64_t)at->n_ints;
		double *k = kalloc(I, d);
		for (int64_t i = 0; i < d; i++)
			k[i] = at->name[6] == 'f' ? at->floats[i] : (double)at->ints[i];
		make_const(I, o, at->name[6] == 'f' ? 1 : 7, 1, &d, k);
	} else
		ox_fail(I, "Constant with attribute '%s' is not supported", at->name);
}

/* ------------------------------------------------------------ folding */

/* The exporter's shape and mask arithmetic (swin_t's window padding and
 * shifted-window masks: Mod, ScatterND, stepped Slices, Transposes of
 * constants...) reads only constants and the static shapes, so it is
 * evaluated here, on doubles, within the folding caps (kalloc). */

/* x as a value of dtype dt: integers truncate toward zero, bool is x != 0,
 * f32 rounds to float. */
static double
cast_value(Imp *I, double x, int dt)
{
	if (dt == 9)
		return x != 0;
	if (dt == 1)
		return (float)x;
	if (is_float_dt(dt))
		return x;
	if (x != x)
		ox_fail(I, "cannot cast NaN to an integer");
	return trunc(x);
}

/* y = op(x) for the elementwise ops that fold; false for other ops. */
static bool
unary_value(const char *op, double x, double *y)
{
	static const char *const name[] = {"Neg", "Abs", "Floor", "Ceil", "Round",
		"Sqrt", "Exp", "Log", "Reciprocal", "Sign", "Not", "Relu", "Sigmoid",
		"Tanh"};
	int k = 0;

	while (k < (int)(sizeof name / sizeof *name) && strcmp(name[k], op))
		k++;
	switch (k) {
	case 0: *y = -x; break;
	case 1: *y = fabs(x); break;
	case 2: *y = floor(x); break;
	case 3: *y = ceil(x); break;
	case 4: *y = nearbyint(x); break;   /* ties to even, as ONNX's Round */
	case 5: *y = sqrt(x); break;
	case 6: *y = exp(x); break;
	case 7: *y = log(x); break;
	case 8: *y = 1 / x; break;
	case 9: *y = (x > 0) - (x < 0); break;
	case 10: *y = !x; break;
	case 11: *y = x > 0 ? x : 0; break;
	case 12: *y = 1 / (1 + exp(-x)); break;
	case 13: *y = tanh(x); break;
	default: return false;
	}
	return true;
}

/* The coordinates of flat index f in dims dim[rank] (row-major). */
static void
coords(int64_t f, int ndim, const int64_t *dim, int64_t *c)
{
	for (int i = ndim - 1; i >= 0; i--) {
		c[i] = dim[i] ? f % dim[i] : 0;
		f = dim[i] ? f / dim[i] : 0;
	}
}

/* The flat index of coordinates c in dims dim[rank]. */
static int64_t
flat(int ndim, const int64_t *dim, const int64_t *c)
{
	int64_t f = 0;

	for (int i = 0; i < ndim; i++)
		f = f * dim[i] + c[i];
	return f;
}

static void
fold_transpose(Imp *I, const Node *n, Val *x, Val *o)
{
	int64_t p[OX_MAXRANK] = {0}, dim[OX_MAXRANK] = {0}, c[OX_MAXRANK], src[OX_MAXRANK];
	int np = x->ndim;
	double *k = kalloc(I, ox_numel(x));

	perm_of(I, n, x, p, dim);
	for (int64_t f = 0; f < ox_numel(x); f++) {
		coords(f, np, dim, c);
		for (int i = 0; i < np; i++)
			src[p[i]] = c[i];
		k[f] = x->k[flat(np, x->dim, src)];
	}
	make_const(I, o, x->dt, np, dim, k);
}

static void
fold_concat(Imp *I, const Node *n, Val *o)
{
	Val *x0 = need(I, n, 0);
	int64_t dim[OX_MAXRANK], outer = 1, at = 0, nel;
	int ax = concat_dims(I, n, dim);
	double *k;

	nel = fold_elems(I, x0->ndim, dim);
	k = kalloc(I, nel);
	for (int a = 0; a < ax; a++)
		outer *= dim[a];
	/* each input's rows of (its axis) x (the axes after) in turn */
	for (size_t i = 0; i < n->n_input; i++) {
		Val *v = need(I, n, i);
		int64_t row = outer ? ox_numel(v) / outer : 0, stride = outer ? nel / outer : 0;
		for (int64_t r = 0; r < outer; r++)
			memcpy(k + r * stride + at, v->k + r * row, (size_t)row * sizeof *k);
		at += row;
	}
	make_const(I, o, x0->dt, x0->ndim, dim, k);
}

static void
fold_gather(Imp *I, const Node *n, Val *d, Val *ix, Val *o)
{
	int ax = norm_axis(I, attr_i(n, "axis", 0), d->ndim);
	int64_t dim[OX_MAXRANK] = {0}, c[OX_MAXRANK], sc[OX_MAXRANK], nel;
	int ndim = gather_dims(I, d, ix, ax, dim);
	double *k;

	nel = fold_elems(I, ndim, dim);
	k = kalloc(I, nel);
	for (int64_t f = 0; f < nel; f++) {
		coords(f, ndim, dim, c);
		int64_t j = kint(I, ix, flat(ix->ndim, ix->dim, c + ax));
		if (j < -d->dim[ax] || j >= d->dim[ax])
			ox_fail(I, "index %lld is out of range for %lld values", (long long)j,
			        (long long)d->dim[ax]);
		for (int i = 0; i < d->ndim; i++)
			sc[i] = i < ax ? c[i] : i == ax ? (j < 0 ? j + d->dim[ax] : j)
			      : c[i - 1 + ix->ndim];
		k[f] = d->k[flat(d->ndim, d->dim, sc)];
	}
	make_const(I, o, d->dt, ndim, dim, k);
}

/* Slice of a constant, any steps (ONNX's clamping: for a negative step the
 * start clamps to [0, d - 1] and the end to [-1, d - 1]). */
static void
fold_slice(Imp *I, const Node *n, Val *x, Val *o)
{
	Val *st = need(I, n, 1), *en = need(I, n, 2), *axv = in(I, n, 3), *stp = in(I, n, 4);
	int64_t na = ox_numel(st), b[OX_MAXRANK], s[OX_MAXRANK], dim[OX_MAXRANK];
	int64_t c[OX_MAXRANK], nel;
	bool mark[OX_MAXRANK] = {0};
	double *k;

	if (ox_numel(en) != na || (axv && ox_numel(axv) != na) ||
	    (stp && ox_numel(stp) != na) || na > x->ndim)
		ox_fail(I, "starts, ends, axes and steps must be constants of one length "
		        "(at most the rank)");
	for (int a = 0; a < x->ndim; a++)
		b[a] = 0, s[a] = 1, dim[a] = x->dim[a];
	for (int64_t i = 0; i < na; i++) {
		int a = norm_axis(I, axv ? kint(I, axv, i) : i, x->ndim);
		int64_t d = x->dim[a], lo, hi, e;
		mark_axis(I, mark, a);
		if (!(s[a] = stp ? kint(I, stp, i) : 1))
			ox_fail(I, "a slice step of 0");
		lo = kint(I, st, i);
		e = kint(I, en, i);
		lo += lo < 0 ? d : 0;
		e += e < 0 ? d : 0;
		if (s[a] > 0) {
			lo = lo < 0 ? 0 : lo > d ? d : lo;
			hi = e < 0 ? 0 : e > d ? d : e;
			dim[a] = hi > lo ? (hi - lo + s[a] - 1) / s[a] : 0;
		} else {
			lo = lo < 0 ? -1 : lo > d - 1 ? d - 1 : lo;
			hi = e < -1 ? -1 : e > d - 1 ? d - 1 : e;
			dim[a] = lo > hi ? (lo - hi - s[a] - 1) / -s[a] : 0;
		}
		b[a] = lo;
	}
	nel = fold_elems(I, x->ndim, dim);
	k = kalloc(I, nel);
	for (int64_t f = 0; f < nel; f++) {
		coords(f, x->ndim, dim, c);
		for (int a = 0; a < x->ndim; a++)
			c[a] = b[a] + c[a] * s[a];
		k[f] = x->k[flat(x->ndim, x->dim, c)];
	}
	make_const(I, o, x->dt, x->ndim, dim, k);
}

static void
fold_tile(Imp *I, Val *x, Val *r, Val *o)
{
	int64_t dim[OX_MAXRANK], c[OX_MAXRANK], nel;
	double *k;

	if (ox_numel(r) != x->ndim)
		ox_fail(I, "repeats has %lld values for rank %d", (long long)ox_numel(r), x->ndim);
	for (int a = 0; a < x->ndim; a++)
		if (kint(I, r, a) < 0 || !ck_mul(x->dim[a], kint(I, r, a), &dim[a]))
			ox_fail(I, "repeat %s is out of range", knum(I, kint(I, r, a)));
	nel = fold_elems(I, x->ndim, dim);
	k = kalloc(I, nel);
	for (int64_t f = 0; f < nel; f++) {
		coords(f, x->ndim, dim, c);
		for (int a = 0; a < x->ndim; a++)
			c[a] %= x->dim[a];
		k[f] = x->k[flat(x->ndim, x->dim, c)];
	}
	make_const(I, o, x->dt, x->ndim, dim, k);
}

/* ScatterND: a copy of data with the slices that indices name set to (or,
 * with reduction add/mul/max/min, combined with) the updates. */
static void
fold_scatter_nd(Imp *I, const Node *n, Val *d, Val *ix, Val *u, Val *o)
{
	Onnx__AttributeProto *ra = attr(n, "reduction");
	const char *rs = ra && ra->s.len ? ar_strndup(I->a, (const char *)ra->s.data,
	                                              ra->s.len) : "none";
	char red = rs[1];       /* nOne, aDd, mUl, mAx, mIn */
	int q = ix->ndim, kk = q ? (int)ix->dim[q - 1] : 0;
	int64_t nidx = 1, slice = 1, c[OX_MAXRANK];
	double *k = kalloc(I, ox_numel(d));

	if (q < 1 || kk > d->ndim || u->ndim != q - 1 + d->ndim - kk)
		ox_fail(I, "indices [..., %d] and updates of rank %d do not fit data of "
		        "rank %d", kk, u->ndim, d->ndim);
	for (int i = 0; i < q - 1; i++)
		if (u->dim[i] != ix->dim[i])
			ox_fail(I, "updates' axis %d is %lld, indices' %lld", i,
			        (long long)u->dim[i], (long long)ix->dim[i]);
		else
			nidx *= ix->dim[i];
	for (int i = kk; i < d->ndim; i++)
		if (u->dim[q - 1 + i - kk] != d->dim[i])
			ox_fail(I, "updates do not match data's trailing axes");
		else
			slice *= d->dim[i];
	if (strcmp(rs, "none") && strcmp(rs, "add") && strcmp(rs, "mul") &&
	    strcmp(rs, "max") && strcmp(rs, "min"))
		ox_fail(I, "ScatterND reduction '%s' is not none, add, mul, max or min",
		        ox_clean(I, rs));
	memcpy(k, d->k, (size_t)ox_numel(d) * sizeof *k);
	for (int64_t t = 0; t < nidx; t++) {
		for (int j = 0; j < d->ndim; j++)
			c[j] = 0;
		for (int j = 0; j < kk; j++) {
			int64_t v = kint(I, ix, t * kk + j);
			if (v < -d->dim[j] || v >= d->dim[j])
				ox_fail(I, "index %lld is out of range for %lld values",
				        (long long)v, (long long)d->dim[j]);
			c[j] = v < 0 ? v + d->dim[j] : v;
		}
		int64_t at = flat(d->ndim, d->dim, c);
		for (int64_t e = 0; e < slice; e++) {
			double *p = &k[at + e], v = u->k[t * slice + e];
			*p = red == 'o' ? v : red == 'd' ? *p + v : red == 'u' ? *p * v
			   : red == 'a' ? (v > *p ? v : *p) : (v < *p ? v : *p);
		}
	}
	make_const(I, o, d->dt, d->ndim, d->dim, k);
}

/* ReduceSum/Mean/Prod/Max/Min of a constant over its axes (all when none
 * is given). */
static void
fold_reduce(Imp *I, const Node *n, Val *x, Val *o)
{
	int64_t ax[OX_MAXRANK], dim[OX_MAXRANK], c[OX_MAXRANK], nel, cnt = 1;
	int na = axes_of(I, n, 1, ax);
	bool keep = attr_bool(I, n, "keepdims", 1), mark[OX_MAXRANK] = {0};
	char op = n->op_type[7];     /* sUm, mEan, pRod, mAx, mIn */
	double *k;

	if (na <= 0 && attr_bool(I, n, "noop_with_empty_axes", 0)) {
		alias(o, x);
		return;
	}
	for (int i = 0; i < (na <= 0 ? x->ndim : na); i++)
		mark_axis(I, mark, na <= 0 ? i : norm_axis(I, ax[i], x->ndim));
	for (int a = 0; a < x->ndim; a++) {
		dim[a] = mark[a] ? 1 : x->dim[a];
		cnt *= mark[a] ? x->dim[a] : 1;
	}
	nel = fold_elems(I, x->ndim, dim);
	k = kalloc(I, nel);
	for (int64_t f = 0; f < nel; f++)
		k[f] = op == 'u' || op == 'e' ? 0 : op == 'r' ? 1 : op == 'a' ? -INFINITY : INFINITY;
	for (int64_t f = 0; f < ox_numel(x); f++) {
		coords(f, x->ndim, x->dim, c);
		for (int a = 0; a < x->ndim; a++)
			if (mark[a])
				c[a] = 0;
		double *p = &k[flat(x->ndim, dim, c)], v = x->k[f];
		*p = op == 'u' || op == 'e' ? *p + v : op == 'r' ? *p * v
		   : op == 'a' ? (v > *p ? v : *p) : (v < *p ? v : *p);
	}
	for (int64_t f = 0; op == 'e' && f < nel; f++)
		k[f] = cnt ? k[f] / (double)cnt : NAN;
	if (!keep) {
		int r = 0;
		for (int a = 0; a < x->ndim; a++)
			if (!mark[a])
				dim[r++] = x->dim[a];
		make_const(I, o, x->dt, r, dim, k);
		return;
	}
	make_const(I, o, x->dt, x->ndim, dim, k);
}

/* RandomUniform(Like), RandomNormal(Like), Bernoulli: values drawn at each
 * step, of which remat needs only the shape and dtype; they fold to the
 * distribution's mean (Bernoulli: its input, the probability), so the
 * stochastic-depth and dropout masks built from them are constants of the
 * model (inputs of their size) and the arithmetic after them folds. */
static void
fold_random(Imp *I, const Node *n, Val *x, Val *o)
{
	const char *t = n->op_type;
	bool like = strstr(t, "Like") != NULL, bern = !strcmp(t, "Bernoulli");
	int64_t dim[OX_MAXRANK] = {0}, nel;
	int ndim = 0, dt = (int)attr_in(I, n, "dtype", like || bern ? x->dt : 1, 0, 64);
	double mean = t[6] == 'U' ? (attr_f(n, "low", 0) + attr_f(n, "high", 1)) / 2
	            : attr_f(n, "mean", 0), *k;

	ox_dtype(I, dt);
	if (like || bern) {
		ndim = x->ndim;
		memcpy(dim, x->dim, sizeof dim);
	} else if ((ndim = attr_ints(I, n, "shape", dim, OX_MAXRANK)) < 0) {
		ox_fail(I, "%s needs a shape", t);
	}
	nel = fold_elems(I, ndim, dim);
	k = kalloc(I, nel);
	for (int64_t i = 0; i < nel; i++)
		k[i] = bern ? (is_const(x) ? x->k[i] : 0.5) : mean;
	make_const(I, o, dt, ndim, dim, k);
}

/* Node n evaluated at import when every input it has is a constant (the
 * random ops, Size: whatever their input); false when n is not an op that
 * folds here (the shape ops fold in their own translations above). */
static bool
fold_node(Imp *I, const Node *n)
{
	const char *t = n->op_type;
	Val *o = out(I, n, 0), *x = in(I, n, 0);
	double y;

	if (!strcmp(t, "Size") && x) {
		double *k = kalloc(I, 1);
		k[0] = (double)ox_numel(x);
		make_const(I, o, 7, 0, NULL, k);
		return true;
	}
	if (strstr(t, "Random") == t || !strcmp(t, "Bernoulli")) {
		if (strstr(t, "Like") || !strcmp(t, "Bernoulli"))
			need(I, n, 0);
		fold_random(I, n, x, o);
		return true;
	}
	for (size_t i = 0; i < n->n_input; i++)
		if (*n->input[i] && !is_const(need(I, n, i)))
			return false;
	if (!x)
		return false;
	if (!strcmp(t, "Cast")) {
		int to = (int)attr_in(I, n, "to", 0, 0, 64);
		double *k = kalloc(I, ox_numel(x));
		ox_dtype(I, to);
		for (int64_t i = 0; i < ox_numel(x); i++)
			k[i] = cast_value(I, x->k[i], to);
		make_const(I, o, to, x->ndim, x->dim, k);
	} else if (unary_value(t, 0, &y)) {
		double *k = kalloc(I, ox_numel(x));
		for (int64_t i = 0; i < ox_numel(x); i++)
			unary_value(t, x->k[i], &k[i]);
		make_const(I, o, strcmp(t, "Not") ? x->dt : 9, x->ndim, x->dim, k);
	} else if (!strcmp(t, "Mod") || !strcmp(t, "Xor") || !strcmp(t, "LessOrEqual") ||
	           !strcmp(t, "GreaterOrEqual")) {
		fold_binary(I, n, x, need(I, n, 1), o);
	} else if (!strcmp(t, "Transpose")) {
		fold_transpose(I, n, x, o);
	} else if (!strcmp(t, "Concat")) {
		fold_concat(I, n, o);
	} else if (!strcmp(t, "Gather")) {
		fold_gather(I, n, x, need(I, n, 1), o);
	} else if (!strcmp(t, "Slice")) {
		fold_slice(I, n, x, o);
	} else if (!strcmp(t, "Tile")) {
		fold_tile(I, x, need(I, n, 1), o);
	} else if (!strcmp(t, "ScatterND")) {
		fold_scatter_nd(I, n, x, need(I, n, 1), need(I, n, 2), o);
	} else if (!strcmp(t, "ReduceSum") || !strcmp(t, "ReduceMean") ||
	           !strcmp(t, "ReduceProd") || !strcmp(t, "ReduceMax") || !strcmp(t, "ReduceMin")) {
		fold_reduce(I, n, x, o);
	} else {
		return false;
	}
	return true;
}

/* ScatterND into a tensor (Swin V2 zeroes the middle third of its qkv bias
 * with one): a copy with the indexed slices replaced, which PyTorch's
 * index_put makes; the backward masks the gradient by the indices, a
 * constant, and passes the updates' part on, so it saves nothing. */
static void
op_scatter_nd(Imp *I, const Node *n)
{
	Val *d = need(I, n, 0), *ix = need(I, n, 1), *u = need(I, n, 2), *o = out(I, n, 0);
	Val *args[2] = {d, u};
	Onnx__AttributeProto *ra = attr(n, "reduction");

	if (!is_const(ix))
		ox_fail(I, "ScatterND needs constant indices");
	if (ra && ra->s.len && strncmp((const char *)ra->s.data, "none", ra->s.len))
		ox_fail(I, "ScatterND with a reduction is supported on constants only");
	if (u->dt != d->dt)
		ox_fail(I, "updates are %s and data %s", ox_dtype(I, u->dt), ox_dtype(I, d->dt));
	set_shape(I, o, d->dt, d->ndim, d->dim);
	custom(I, o, "scatter_nd", args, is_const(u) ? 1 : 2, ox_numel(o), -1);
}

/* The node from `from` on that consumes v, when v (NULL: an unnamed
 * output) has exactly one consumer, graph outputs counted; else -1. From
 * v's readers (check_order): the matchers run at every node, and a scan
 * of the graph from each made 80,000 Sigmoids take 40 s. */
static int
only_user(Imp *I, const Val *v, int from)
{
	(void)I;
	if (!v || v->nuse != 1 || v->nusers != 1 || v->users[0] < from)
		return -1;
	return v->users[0];
}

static bool
is_op(Imp *I, int i, const char *op)
{
	return i >= 0 && !strcmp(I->g->node[i]->op_type, op);
}

/* GELU as exported before opset 20: y = (x * 0.5?) * (1 + erf(x / sqrt 2)),
 * as Div -> Erf -> Add(1) -> Mul(x) -> Mul(0.5). The model ran one gelu
 * (PyTorch's F.gelu saves x), so it becomes gelu(x) when every
 * intermediate has the one consumer the pattern names. */
static bool
match_gelu(Imp *I, int i)
{
	const Node *dv = I->g->node[i], *mn;
	Val *x, *c, *e, *p, *m, *half, *o;
	int ie, ia, im, im2;
	const char *r;

	if (!is_op(I, i, "Div") || !(x = in(I, dv, 0)) || !(c = in(I, dv, 1)) ||
	    !is_const(c) || fabs(c->k[0] - sqrt(2.0)) > 1e-3 || x->kind == V_CONST ||
	    !is_float_dt(x->dt))
		return false;
	if (!is_op(I, ie = only_user(I, ox_lookup(I, dv->output[0]), i + 1), "Erf"))
		return false;
	e = out(I, I->g->node[ie], 0);
	if (!is_op(I, ia = only_user(I, e, ie + 1), "Add"))
		return false;
	p = out(I, I->g->node[ia], 0);
	if (!is_op(I, im = only_user(I, p, ia + 1), "Mul"))
		return false;
	m = out(I, I->g->node[im], 0);
	mn = I->g->node[im];
	if (mn->n_input != 2 || (strcmp(mn->input[0], x->name) && strcmp(mn->input[1], x->name)))
		return false;
	if (!is_op(I, im2 = only_user(I, m, im + 1), "Mul") || I->g->node[im2]->n_input != 2)
		return false;
	half = in(I, I->g->node[im2], 1);
	if (!half || !is_const(half) || ox_numel(half) != 1 || half->k[0] != 0.5) {
		half = in(I, I->g->node[im2], 0);
		if (!half || !is_const(half) || ox_numel(half) != 1 || half->k[0] != 0.5)
			return false;
	}
	o = out(I, I->g->node[im2], 0);
	r = ref(I, x);
	set_shape(I, o, x->dt, x->ndim, x->dim);
	bind(I, o);
	ox_printf(&I->body, "gelu(%s);\n", r);
	I->skip[ie] = I->skip[ia] = I->skip[im] = I->skip[im2] = true;
	return true;
}

/* The first node from `from` on that reads v and has op type op, or -1
 * (v's readers ascend). */
static int
find_user(Imp *I, const Val *v, int from, const char *op)
{
	for (int k = 0; v && k < v->nusers; k++)
		if (v->users[k] >= from && is_op(I, v->users[k], op))
			return v->users[k];
	return -1;
}

/* Is node i a ReduceMean of its input 0 over the last axis, keeping it? */
static bool
mean_last(Imp *I, int i, const Val *x)
{
	const Node *n = I->g->node[i];
	int64_t ax[OX_MAXRANK];
	Val *in0 = in(I, n, 0);

	return x && in0 == x && attr_i(n, "keepdims", 1) == 1 && axes_of(I, n, 1, ax) == 1 &&
	       (ax[0] == -1 || ax[0] == x->ndim - 1);
}

/* The other input of binary node i (not v): a parameter of shape [D]? */
static Val *
vec_param(Imp *I, int i, const Val *v, int64_t d)
{
	const Node *n = I->g->node[i];
	Val *a = in(I, n, 0), *b = in(I, n, 1);
	Val *p = a == v ? b : a;

	if (n->n_input != 2 || (a != v && b != v) || !p || p->kind != V_PARAM ||
	    p->ndim != 1 || p->dim[0] != d || p->dt != v->dt)
		return NULL;
	return p;
}

/* LayerNorm as exported before opset 17: m = ReduceMean(x); d = x - m;
 * v = ReduceMean(d^2); y = d / Sqrt(v + eps) * g + b. The model ran one
 * layer_norm (which saves x, mean and rstd), so it becomes layernorm(x, g,
 * b) when each intermediate has only the consumers the pattern names. */
static bool
match_layernorm(Imp *I, int i)
{
	Val *x = in(I, I->g->node[i], 0), *d, *g, *b, *o;
	int is, ip, iv, ia, iq, id, im, ib;
	const char *r;

	if (!is_op(I, i, "ReduceMean") || !x || x->kind == V_CONST || x->ndim < 1 ||
	    !is_float_dt(x->dt) || !mean_last(I, i, x))
		return false;
	if (!is_op(I, is = only_user(I, out(I, I->g->node[i], 0), i + 1), "Sub") ||
	    in(I, I->g->node[is], 0) != x)
		return false;
	d = out(I, I->g->node[is], 0);
	if (!d || d->nuse != 2 || (ip = find_user(I, d, is + 1, "Pow")) < 0 ||
	    (id = find_user(I, d, is + 1, "Div")) < 0)
		return false;
	Val *two = in(I, I->g->node[ip], 1);
	if (in(I, I->g->node[ip], 0) != d || !is_const(two) || two->k[0] != 2 ||
	    !is_op(I, iv = only_user(I, out(I, I->g->node[ip], 0), ip + 1), "ReduceMean") ||
	    !mean_last(I, iv, out(I, I->g->node[ip], 0)))
		return false;
	if (!is_op(I, ia = only_user(I, out(I, I->g->node[iv], 0), iv + 1), "Add") ||
	    !is_op(I, iq = only_user(I, out(I, I->g->node[ia], 0), ia + 1), "Sqrt") ||
	    only_user(I, out(I, I->g->node[iq], 0), iq + 1) != id ||
	    in(I, I->g->node[id], 0) != d)
		return false;
	if (!is_op(I, im = only_user(I, out(I, I->g->node[id], 0), id + 1), "Mul") ||
	    !(g = vec_param(I, im, out(I, I->g->node[id], 0), x->dim[x->ndim - 1])) ||
	    !is_op(I, ib = only_user(I, out(I, I->g->node[im], 0), im + 1), "Add") ||
	    !(b = vec_param(I, ib, out(I, I->g->node[im], 0), x->dim[x->ndim - 1])))
		return false;
	o = out(I, I->g->node[ib], 0);
	r = ref(I, x);
	const char *rg = ref(I, g), *rb = ref(I, b);
	set_shape(I, o, x->dt, x->ndim, x->dim);
	bind(I, o);
	ox_printf(&I->body, "layernorm(%s, %s, %s);\n", r, rg, rb);
	I->skip[is] = I->skip[ip] = I->skip[iv] = I->skip[ia] = I->skip[iq] = true;
	I->skip[id] = I->skip[im] = I->skip[ib] = true;
	return true;
}

/* SiLU as exported: Sigmoid(x) -> Mul(x, s). F.silu saves only x; the
 * decomposed pair would also keep s, so it becomes silu(x) when s has no
 * other consumer. */
static bool
match_silu(Imp *I, int i)
{
	const Node *sg = I->g->node[i], *mn;
	Val *x, *s, *o;
	int im;
	const char *r;

	if (!is_op(I, i, "Sigmoid") || !(x = in(I, sg, 0)) || x->kind == V_CONST ||
	    !is_float_dt(x->dt))
		return false;
	s = out(I, sg, 0);
	if (!is_op(I, im = only_user(I, s, i + 1), "Mul"))
		return false;
	mn = I->g->node[im];
	if (mn->n_input != 2 || strcmp(mn->input[!strcmp(mn->input[0], s->name)], x->name))
		return false;
	o = out(I, mn, 0);
	r = ref(I, x);
	set_shape(I, o, x->dt, x->ndim, x->dim);
	bind(I, o);
	ox_printf(&I->body, "silu(%s);\n", r);
	I->skip[im] = true;
	return true;
}

void
ox_node(Imp *I, int i)
{
	const Node *n = I->g->node[i];
	const char *t = n->op_type;

	I->cur = n;
	if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))
		ox_fail(I, "operator domain '%s' is not supported; declare a custom "
		        "op for it in the emitted .net", n->domain);
	for (size_t k = 0; k < n->n_output; k++)
		if (*n->output[k] && !ox_lookup(I, n->output[k]))
			ox_fail(I, "output '%s' unknown (internal)", n->output[k]);
	if (fold_node(I, n) || match_gelu(I, i) || match_silu(I, i) || match_layernorm(I, i))
		return;
	if (!strcmp(t, "Add") || !strcmp(t, "Sub") || !strcmp(t, "Mul") ||
	    !strcmp(t, "Div") || !strcmp(t, "Pow") || !strcmp(t, "Equal") ||
	    !strcmp(t, "Less") || !strcmp(t, "Greater") || !strcmp(t, "And") ||
	    !strcmp(t, "Or") || !strcmp(t, "Max") || !strcmp(t, "Min")) {
		if (strstr("Equal Less Greater And Or Max Min", t) && !(is_const(need(I, n, 0)) && is_const(need(I, n, 1))))
			ox_fail(I, "%s is supported on constants only (declare a custom op)", t);
		op_binary(I, n);
	}
	else if (!strcmp(t, "Relu")) op_unary(I, n, "relu");
	else if (!strcmp(t, "Sigmoid")) op_unary(I, n, "sigmoid");
	else if (!strcmp(t, "Tanh")) op_unary(I, n, "tanh");
	else if (!strcmp(t, "Sqrt")) op_unary(I, n, "sqrt");
	else if (!strcmp(t, "Exp")) op_unary(I, n, "exp");
	else if (!strcmp(t, "Log")) op_unary(I, n, "log");
	else if (!strcmp(t, "Neg")) op_unary(I, n, "neg");
	else if (!strcmp(t, "Gelu")) op_unary(I, n, "gelu");
	else if (!strcmp(t, "Not")) op_unary(I, n, NULL);
	else if (!strcmp(t, "Erf")) op_erf(I, n);
	else if (!strcmp(t, "Softmax")) op_softmax(I, n, "softmax");
	else if (!strcmp(t, "LogSoftmax")) op_softmax(I, n, "log_softmax");
	else if (!strcmp(t, "Conv")) op_conv(I, n);
	else if (!strcmp(t, "MaxPool")) op_pool(I, n, "maxpool2d");
	else if (!strcmp(t, "AveragePool")) op_pool(I, n, "avgpool2d");
	else if (!strcmp(t, "GlobalAveragePool")) op_global_pool(I, n);
	else if (!strcmp(t, "MatMul")) op_matmul(I, n);
	else if (!strcmp(t, "Einsum")) op_einsum(I, n);
	else if (!strcmp(t, "Gemm")) op_gemm(I, n);
	else if (!strcmp(t, "BatchNormalization")) op_norm(I, n, true);
	else if (!strcmp(t, "LayerNormalization")) op_norm(I, n, false);
	else if (!strcmp(t, "Dropout")) op_dropout(I, n);
	else if (!strcmp(t, "Identity")) alias(out(I, n, 0), need(I, n, 0));
	else if (!strcmp(t, "Cast")) op_cast(I, n);
	else if (!strcmp(t, "Squeeze")) op_squeeze(I, n, false);
	else if (!strcmp(t, "Unsqueeze")) op_squeeze(I, n, true);
	else if (!strcmp(t, "Reshape")) op_reshape(I, n);
	else if (!strcmp(t, "Flatten")) op_flatten(I, n);
	else if (!strcmp(t, "Transpose")) op_transpose(I, n);
	else if (!strcmp(t, "Concat")) op_concat(I, n);
	else if (!strcmp(t, "Split")) op_split(I, n);
	else if (!strcmp(t, "Slice")) op_slice(I, n);
	else if (!strcmp(t, "Gather")) op_gather(I, n);
	else if (!strcmp(t, "Shape")) op_shape(I, n);
	else if (!strcmp(t, "Constant")) op_constant(I, n);
	else if (!strcmp(t, "ConstantOfShape")) op_constant_of_shape(I, n);
	else if (!strcmp(t, "Range")) op_range(I, n);
	else if (!strcmp(t, "Trilu")) op_trilu(I, n);
	else if (!strcmp(t, "Where")) op_where(I, n);
	else if (!strcmp(t, "Expand")) op_expand(I, n);
	else if (!strcmp(t, "Pad")) op_pad(I, n);
	else if (!strcmp(t, "Clip")) op_clip(I, n);
	else if (!strcmp(t, "ReduceMean")) op_reduce(I, n, "mean");
	else if (!strcmp(t, "ReduceSum")) op_reduce(I, n, "sum");
	else if (!strcmp(t, "ReduceL2")) op_reduce_l2(I, n);
	else if (!strcmp(t, "HardSwish")) op_unary(I, n, "hardswish");
	else if (!strcmp(t, "HardSigmoid")) op_hardsigmoid(I, n);
	else if (!strcmp(t, "ScatterND")) op_scatter_nd(I, n);
	else if (!strcmp(t, "Mod") || !strcmp(t, "Xor") || !strcmp(t, "LessOrEqual") ||
	         !strcmp(t, "GreaterOrEqual") ||
	         !strcmp(t, "Tile") || !strcmp(t, "Floor") || !strcmp(t, "Ceil") ||
	         !strcmp(t, "Round") || !strcmp(t, "Abs") || !strcmp(t, "Sign") ||
	         !strcmp(t, "Reciprocal") || !strcmp(t, "ReduceProd") ||
	         !strcmp(t, "ReduceMax") || !strcmp(t, "ReduceMin"))
		ox_fail(I, "%s is supported on constants and shapes only (they fold at "
		        "import); declare a custom op for it in the emitted .net", t);
	else
		ox_fail(I, "op type '%s' is not supported; hint: write the model in "
		        ".net and declare it as a custom op (`op name(x) -> T "
		        "{ flops = ...; saves = (x); }`, see docs/onnx.md)", t);
}
