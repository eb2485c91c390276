/* ir/net/graph.c -- dtypes, optimizers, and building the flat graph: tensors
 * and ops appended in program order, linked by index. */
#include <math.h>
#include <string.h>
#include <strings.h>

#include "net.h"

static const struct {
	const char *name;
	int size;
	bool is_float;
} dtypes[DT_COUNT] = {
	[DT_F64] = {"f64", 8, true},
	[DT_F32] = {"f32", 4, true},
	[DT_BF16] = {"bf16", 2, true},
	[DT_F16] = {"f16", 2, true},
	[DT_F8E4M3] = {"f8e4m3", 1, true},
	[DT_F8E5M2] = {"f8e5m2", 1, true},
	[DT_I64] = {"i64", 8, false},
	[DT_I32] = {"i32", 4, false},
	[DT_I8] = {"i8", 1, false},
	[DT_U8] = {"u8", 1, false},
	[DT_BOOL] = {"bool", 1, false},
};

int
dtype_size(Dtype t)
{
	ir_assert(t >= 0 && t < DT_COUNT);
	return dtypes[t].size;
}

const char *
dtype_name(Dtype t)
{
	return t >= 0 && t < DT_COUNT ? dtypes[t].name : "?";
}

Dtype
dtype_from_name(const char *s)
{
	for (int i = 0; i < DT_COUNT; i++)
		if (!strcmp(dtypes[i].name, s))
			return (Dtype)i;
	return DT_NONE;
}

bool
dtype_is_float(Dtype t)
{
	return t >= 0 && t < DT_COUNT && dtypes[t].is_float;
}

static const struct {
	const char *name;
	int states;
} optimizers[OPT_COUNT] = {
	[OPT_SGD] = {"sgd", 0},
	[OPT_MOMENTUM] = {"momentum", 1},
	[OPT_ADAGRAD] = {"adagrad", 1},
	[OPT_RMSPROP] = {"rmsprop", 1},
	[OPT_LION] = {"lion", 1},
	[OPT_ADAM] = {"adam", 2},
	[OPT_ADAMW] = {"adamw", 2},
};

const char *
optimizer_name(Optimizer o)
{
	return optimizers[o].name;
}

int
optimizer_from_name(const char *s)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (!strcasecmp(optimizers[i].name, s))  /* AdamW is adamw */
			return i;
	return -1;
}

const char *const optimizer_names[OPT_COUNT] = {
	"sgd", "momentum", "adagrad", "rmsprop", "lion", "adam", "adamw",
};

int
optimizer_states(Optimizer o)
{
	return optimizers[o].states;
}

void
ir_graph_init(Graph *g, Arena *a, const char *file)
{
	memset(g, 0, sizeof *g);
	g->arena = a;
	g->file = file;
	g->loss = -1;
	g->settings.optimizer = OPT_ADAMW;
	g->settings.accumulate = 1;
	g->train = true;
}

void
ir_params_default(OpParams *p)
{
	memset(p, 0, sizeof *p);
	p->axis = -1;
	p->stride[0] = p->stride[1] = 1;
	p->dilation[0] = p->dilation[1] = 1;
	p->groups = 1;
	p->start = 0;
	p->dtype = DT_NONE;
	p->cmin = -INFINITY;
	p->cmax = INFINITY;
	p->ignore_index = -100;
}

/* The defaults of ir_params_default, for ops that take no attributes: a
 * million elementwise ops need not carry 200 bytes of parameters each. */
const OpParams ir_no_params = {
	.axis = -1, .stride = {1, 1}, .dilation = {1, 1}, .groups = 1, .dtype = DT_NONE,
	.cmin = -INFINITY, .cmax = INFINITY, .ignore_index = -100,
};

void
ir_set_params(Graph *g, int o, const OpParams *p)
{
	Op *op = &g->op[o];

	if (op->p == &ir_no_params) {
		if (!memcmp(p, &ir_no_params, sizeof *p))
			return;
		op->p = ar_alloc(g->arena, sizeof *op->p);
	}
	*op->p = *p;
}

void
ir_set_custom(Graph *g, int o, const CustomOp *cu)
{
	OpParams p = *g->op[o].p;

	p.custom = cu;
	ir_set_params(g, o, &p);
}

void
ir_set_shape(Graph *g, Tensor *t, int ndim, const int64_t *shape)
{
	/* a scalar's shape: non-NULL, so that copying zero axes from it is
	 * well defined; nothing is ever written through a shape */
	static int64_t no_axes[1];
	int64_t *s;

	ir_assert(ndim >= -1 && ndim <= IR_MAXDIM);
	if (ndim > 0 && t->ndim == ndim && t->shape &&
	    !memcmp(t->shape, shape, sizeof *s * (size_t)ndim))
		return;         /* the shape it has: a pass run again */
	if (ndim <= 0) {
		t->ndim = ndim;
		if (ndim == 0)
			t->shape = no_axes;
		return;
	}
	s = ar_array(g->arena, (size_t)ndim, sizeof *s);
	memcpy(s, shape, sizeof *s * (size_t)ndim);
	t->shape = s;
	t->ndim = ndim;
}

const char *
ir_op_scope(const Graph *g, const Op *o)
{
	return o->nout > 0 ? g->t[o->out[0]].scope : "";
}

Loc
ir_op_loc(const Graph *g, const Op *o)
{
	return g->t[o->out[0]].loc;
}

int64_t
ir_op_workspace(const Op *o)
{
	return o->p->custom ? o->p->custom->workspace : 0;
}

void
ir_share_shape(Tensor *t, const Tensor *from)
{
	t->shape = from->shape;
	t->ndim = from->ndim;
}

int
ir_add_tensor(Graph *g, const char *id, TensorKind kind, Loc loc)
{
	g->t = ar_fit(g->arena, g->t, g->nt, &g->capt, sizeof *g->t, 256);
	g->t[g->nt] = (Tensor){
		.id = id, .kind = kind, .dtype = DT_NONE, .ndim = -1, .scope = "",
		.loc = loc, .producer = -1, .view_of = -1, .grad = -1, .grad_of = -1,
	};
	return g->nt++;
}

int
ir_add_op(Graph *g, OpKind kind, const int *in, int nin)
{
	Op *op;

	g->op = ar_fit(g->arena, g->op, g->nop, &g->capop, sizeof *g->op, 256);
	op = &g->op[g->nop];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->nin = nin;
	op->in = ar_array(g->arena, (size_t)(nin ? nin : 1), sizeof(int));
	if (nin)
		memcpy(op->in, in, sizeof(int) * (size_t)nin);
	if (ir_optab[kind].npos || (ir_optab[kind].attrs && ir_optab[kind].attrs[0])) {
		op->p = ar_alloc(g->arena, sizeof *op->p);
		ir_params_default(op->p);
	} else {
		op->p = (OpParams *)&ir_no_params;      /* never written: see net.h */
	}
	return g->nop++;
}

void
ir_set_outputs(Graph *g, int o, const char *const *ids, int nout, const char *scope,
               Loc loc)
{
	const OpInfo *info = &ir_optab[g->op[o].kind];
	int i, t, nextra;

	g->op[o].out = ar_array(g->arena, (size_t)nout + (size_t)info->nextra, sizeof(int));
	g->op[o].nout = nout;
	for (i = 0; i < nout; i++) {
		t = ir_add_tensor(g, ids[i], TK_ACT, loc);
		g->t[t].producer = o;
		g->t[t].scope = scope;
		g->op[o].out[i] = t;
	}
	nextra = info->nextra;
	for (i = 0; i < nextra; i++) {
		const char *id = ar_cat(g->arena, ids[0], ":", info->extra_role[i]);
		t = ir_add_tensor(g, id, TK_EXTRA, loc);
		g->t[t].producer = o;
		g->t[t].role = (unsigned)i + 1;
		g->t[t].scope = scope;
		g->op[o].out[nout + i] = t;
	}
	g->op[o].nextra = (unsigned)nextra;
}

void
ir_add_extra(Graph *g, int o, int k)
{
	const OpInfo *info = &ir_optab[g->op[o].kind];
	int t, *out;

	ir_assert(k == g->op[o].nextra && k < IR_MAXEXTRA && info->extra_role[k]);
	t = ir_add_tensor(g, ar_cat(g->arena, g->t[g->op[o].out[0]].id, ":",
	                            info->extra_role[k]), TK_EXTRA,
	                  ir_op_loc(g, &g->op[o]));
	g->t[t].producer = o;
	g->t[t].role = (unsigned)k + 1;
	g->t[t].scope = ir_op_scope(g, &g->op[o]);
	/* out[] is exact-size in the arena: a fresh one with room for t */
	out = ar_array(g->arena, (size_t)g->op[o].nout + (size_t)k + 1, sizeof(int));
	memcpy(out, g->op[o].out, sizeof(int) * ((size_t)g->op[o].nout + (size_t)k));
	out[g->op[o].nout + k] = t;
	g->op[o].out = out;
	g->op[o].nextra = (unsigned)k + 1;
}

const char *
ir_role(const Graph *g, const Tensor *t)
{
	if (!t->role)
		return NULL;
	return ir_optab[g->op[t->producer].kind].extra_role[t->role - 1];
}

int
ir_storage_root(const Graph *g, int t)
{
	while (g->t[t].view_of >= 0)
		t = g->t[t].view_of;
	return t;
}

char *
ir_shape_str(const Tensor *t, char *buf, size_t n)
{
	size_t used = 0;

	if (n == 0)
		return buf;
	buf[0] = 0;
	if (t->ndim < 0) {
		snprintf(buf, n, "[?]");
		return buf;
	}
	used += (size_t)snprintf(buf + used, n - used, "[");
	for (int i = 0; i < t->ndim && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%lld", i ? ", " : "",
		                         (long long)t->shape[i]);
	if (used < n)
		snprintf(buf + used, n - used, "]");
	return buf;
}

size_t
ir_outer_scope_len(const char *scope)
{
	const char *dot = scope ? strchr(scope, '.') : NULL;

	if (!dot || !(dot = strchr(dot + 1, '.')))
		return scope ? strlen(scope) : 0;
	return (size_t)(dot - scope + 1);
}
