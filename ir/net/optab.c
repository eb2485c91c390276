/* ir/net/optab.c -- the op library of ops.md as one table: one row per op.
 *
 * A row gives an op's arity, attributes (and which have no default), its
 * shape rule, forward FLOPs, saves column and backward factor; the passes
 * read only this. passes/graph/shape.c implements the shape rules and counts the
 * FLOPs, passes/graph/autodiff.c applies the saves and backward factors.
 *
 * ir_set_attr() and ir_check_attrs() store an op's non-tensor arguments into
 * OpParams (fields axis .. list, has_axis, ceil_mode, keepdim and given);
 * the frontend calls them. A window setting (stride, padding, dilation, a
 * pool's k) may be a list of one value per spatial axis, padding also of
 * each axis's begin and end; sum's and mean's axis may be a list of axes. */
#include <stddef.h>
#include <string.h>

#include "net.h"

/* Unary elementwise op: like x, `k` x n FLOPs, saves `sv`. */
#define UN(nm, k, ...) {.name = nm, .min_args = 1, .max_args = 1, .attrs = "", \
	.shape = SR_UNARY, .float_in = true, .flops = FL_IN, .flops_k = k, \
	.saves = {__VA_ARGS__}, .bwd_factor = 1}
/* An empty saves column. */
#define NOTHING {SV_END, 0, -1}
/* Binary broadcasting op. */
#define BIN(nm, pg, ...) {.name = nm, .min_args = 2, .max_args = 2, .attrs = "", \
	.shape = SR_BINARY, .flops = FL_OUT, .flops_k = 1, \
	.saves = {__VA_ARGS__}, .bwd_factor = 1, .per_grad = pg}
/* Shape op: a view of argument 0, no FLOPs. */
#define VIEW(nm, sr, npos_, pn, at, req) {.name = nm, .min_args = 1, \
	.max_args = 1, .npos = npos_, .pos_names = pn, .attrs = at, \
	.required = req, .is_view = true, .shape = sr, .flops = FL_ZERO, \
	.bwd_factor = 1}

/* Convolution over nsp spatial axes: x [N, C, ...], w [O, C/groups, ...]. */
#define CONV(nm, nsp) {.name = nm, .min_args = 2, .max_args = 2, \
	.attrs = "stride padding dilation groups", \
	.lists = "stride padding dilation", .nspatial = nsp, .shape = SR_CONV, \
	.float_in = true, .flops = FL_CONV, .flops_k = 1, \
	.saves = {SAVE_ARG_IF(1, 0), SAVE_ARG_IF(0, 1)}, .bwd_factor = 1, \
	.per_grad = true}
/* sum, mean: over one axis, an axis list, or everything. */
#define REDUCE(nm) {.name = nm, .min_args = 1, .max_args = 1, \
	.attrs = "axis keepdim", .lists = "axis", .shape = SR_REDUCE, \
	.float_in = true, .flops = FL_IN, .flops_k = 1, .bwd_factor = 1}

const OpInfo ir_optab[OP_COUNT] = {
	[OP_RELU] = UN("relu", 1, SAVE_OUT),
	[OP_GELU] = UN("gelu", 8, SAVE_ARG(0)),
	[OP_SILU] = UN("silu", 4, SAVE_ARG(0)),
	[OP_SIGMOID] = UN("sigmoid", 4, SAVE_OUT),
	[OP_TANH] = UN("tanh", 4, SAVE_OUT),
	[OP_EXP] = UN("exp", 1, SAVE_OUT),
	[OP_LOG] = UN("log", 1, SAVE_ARG(0)),
	[OP_SQRT] = UN("sqrt", 1, SAVE_OUT),
	[OP_NEG] = UN("neg", 1, NOTHING),
	[OP_SCALE] = {.name = "scale", .min_args = 1, .max_args = 1, .attrs = "c",
		.required = "c", .shape = SR_UNARY, .float_in = true,
		.flops = FL_IN, .flops_k = 1, .bwd_factor = 1},
	[OP_CAST] = {.name = "cast", .min_args = 1, .max_args = 1,
		.attrs = "dtype", .required = "dtype", .shape = SR_CAST,
		.flops = FL_IN, .flops_k = 1, .bwd_factor = 1},
	[OP_DROPOUT] = {.name = "dropout", .min_args = 1, .max_args = 1,
		.attrs = "p", .required = "p", .nextra = 1, .extra_role = {"mask"},
		.shape = SR_DROPOUT, .float_in = true, .flops = FL_IN, .flops_k = 2,
		.saves = {SAVE_EXTRA(0)}, .bwd_factor = 1},
	[OP_ADD] = BIN("add", false, NOTHING),
	[OP_SUB] = BIN("sub", false, NOTHING),
	[OP_MUL] = BIN("mul", true, SAVE_ARG_IF(1, 0), SAVE_ARG_IF(0, 1)),
	[OP_DIV] = BIN("div", true, SAVE_ARG_IF(1, 0), SAVE_ARG_IF(0, 1),
	               SAVE_ARG_IF(1, 1)),
	[OP_MATMUL] = {.name = "matmul", .min_args = 2, .max_args = 2,
		.attrs = "", .shape = SR_MATMUL, .float_in = true,
		.flops = FL_MATMUL, .flops_k = 1,
		.saves = {SAVE_ARG_IF(1, 0), SAVE_ARG_IF(0, 1)},
		.bwd_factor = 1, .per_grad = true},
	[OP_CONV2D] = CONV("conv2d", 2),
	[OP_ATTENTION] = {.name = "attention", .min_args = 3, .max_args = 4,
		.attrs = "causal dropout", .nextra = 1,
		.extra_role = {"lse", "dmask"},
		.shape = SR_ATTENTION, .float_in = false, .flops = FL_ATTENTION,
		.flops_k = 1,
		.saves = {SAVE_ARG(0), SAVE_ARG(1), SAVE_ARG(2), SAVE_OUT,
		          SAVE_EXTRA(0), SAVE_ARG(3), SAVE_EXTRA(1)},
		.bwd_factor = 2.5},
	[OP_LAYERNORM] = {.name = "layernorm", .min_args = 3, .max_args = 3,
		.attrs = "", .nextra = 2, .extra_role = {"mean", "rstd"},
		.shape = SR_NORM, .float_in = true, .flops = FL_IN, .flops_k = 5,
		.saves = {SAVE_ARG(0), SAVE_EXTRA(0), SAVE_EXTRA(1)},
		.bwd_factor = 1},
	[OP_RMSNORM] = {.name = "rmsnorm", .min_args = 2, .max_args = 2,
		.attrs = "", .nextra = 1, .extra_role = {"rstd"},
		.shape = SR_NORM, .float_in = true, .flops = FL_IN, .flops_k = 4,
		.saves = {SAVE_ARG(0), SAVE_EXTRA(0)}, .bwd_factor = 1},
	[OP_BATCHNORM] = {.name = "batchnorm", .min_args = 3, .max_args = 3,
		.attrs = "", .nextra = 2, .extra_role = {"mean", "rstd"},
		.shape = SR_BATCHNORM, .float_in = true, .flops = FL_IN,
		.flops_k = 5, .saves = {SAVE_ARG(0), SAVE_EXTRA(0), SAVE_EXTRA(1)},
		.bwd_factor = 1},
	[OP_SOFTMAX] = {.name = "softmax", .min_args = 1, .max_args = 1,
		.attrs = "axis", .shape = SR_SOFTMAX, .float_in = true,
		.flops = FL_IN, .flops_k = 5, .saves = {SAVE_OUT}, .bwd_factor = 1},
	[OP_LOG_SOFTMAX] = {.name = "log_softmax", .min_args = 1, .max_args = 1,
		.attrs = "axis", .shape = SR_SOFTMAX, .float_in = true,
		.flops = FL_IN, .flops_k = 5, .saves = {SAVE_OUT}, .bwd_factor = 1},
	[OP_MAXPOOL2D] = {.name = "maxpool2d", .min_args = 1, .max_args = 1,
		.attrs = "k stride padding dilation ceil_mode", .required = "k",
		.lists = "k stride padding dilation", .nspatial = 2, .nextra = 1,
		.extra_role = {"indices"}, .shape = SR_POOL, .float_in = true,
		.flops = FL_POOL, .flops_k = 1,
		.saves = {SAVE_ARG(0), SAVE_EXTRA(0)}, .bwd_factor = 1},
	[OP_AVGPOOL2D] = {.name = "avgpool2d", .min_args = 1, .max_args = 1,
		.attrs = "k stride padding ceil_mode", .required = "k",
		.lists = "k stride padding", .nspatial = 2, .shape = SR_POOL,
		.float_in = true, .flops = FL_POOL, .flops_k = 1, .bwd_factor = 1},
	[OP_GLOBAL_AVGPOOL] = {.name = "global_avgpool", .min_args = 1,
		.max_args = 1, .attrs = "", .shape = SR_GLOBAL_POOL,
		.float_in = true, .flops = FL_IN, .flops_k = 1, .bwd_factor = 1},
	[OP_UPSAMPLE2D] = {.name = "upsample2d", .min_args = 1, .max_args = 1,
		.attrs = "scale", .required = "scale", .shape = SR_UPSAMPLE,
		.float_in = true, .flops = FL_OUT, .flops_k = 1, .bwd_factor = 1},
	[OP_SUM] = REDUCE("sum"),
	[OP_MEAN] = REDUCE("mean"),
	[OP_CROSS_ENTROPY] = {.name = "cross_entropy", .min_args = 2,
		.max_args = 2, .attrs = "ignore_index", .nextra = 1,
		/* lsm_f32: autocast's f32 copy of half log-probs, which
		 * nll_loss saves under --runtime pytorch (passes/graph/autocast.c) */
		.extra_role = {"lsm", "lsm_f32"},
		.shape = SR_CROSS_ENTROPY, .flops = FL_IN, .flops_k = 5,
		.saves = {SAVE_EXTRA(0), SAVE_ARG(1), SAVE_EXTRA(1)}, .bwd_factor = 1},
	[OP_MSE_LOSS] = {.name = "mse_loss", .min_args = 2, .max_args = 2,
		.attrs = "", .shape = SR_MSE, .float_in = true, .flops = FL_IN,
		.flops_k = 3, .saves = {SAVE_ARG(0), SAVE_ARG(1)}, .bwd_factor = 1},
	[OP_EMBEDDING] = {.name = "embedding", .min_args = 2, .max_args = 2,
		.attrs = "", .shape = SR_EMBEDDING, .flops = FL_OUT, .flops_k = 1,
		.saves = {SAVE_ARG(0)}, .bwd_factor = 1},
	[OP_RESHAPE] = VIEW("reshape", SR_RESHAPE, 1, "shape", "", ""),
	[OP_FLATTEN] = VIEW("flatten", SR_FLATTEN, 0, "", "start", ""),
	[OP_TRANSPOSE] = VIEW("transpose", SR_TRANSPOSE, 2, "i j", "", ""),
	[OP_PERMUTE] = VIEW("permute", SR_PERMUTE, 1, "axes", "", ""),
	[OP_SLICE] = VIEW("slice", SR_SLICE, 0, "", "axis start end",
	                  "axis start end"),
	[OP_SPLIT] = VIEW("split", SR_SPLIT, 1, "n", "axis", "axis"),
	[OP_CONCAT] = {.name = "concat", .min_args = 1, .max_args = -1,
		.attrs = "axis", .required = "axis", .shape = SR_CONCAT,
		.flops = FL_OUT, .flops_k = 1, .bwd_factor = 1},
	/* added for real networks (issue 13) */
	[OP_RELU6] = UN("relu6", 2, SAVE_OUT),
	[OP_CLAMP] = {.name = "clamp", .min_args = 1, .max_args = 1,
		.attrs = "min max", .shape = SR_CLAMP, .float_in = true,
		.flops = FL_IN, .flops_k = 2, .saves = {SAVE_ARG(0)},
		.bwd_factor = 1},
	[OP_HARDSWISH] = UN("hardswish", 5, SAVE_ARG(0)),
	[OP_HARDSIGMOID] = UN("hardsigmoid", 4, SAVE_ARG(0)),
	[OP_GATHER] = {.name = "gather", .min_args = 2, .max_args = 2,
		.attrs = "axis", .required = "axis", .shape = SR_GATHER,
		.flops = FL_OUT, .flops_k = 1, .saves = {SAVE_ARG(1)},
		.bwd_factor = 1},
	[OP_INDEX_SELECT] = {.name = "index_select", .min_args = 2,
		.max_args = 2, .attrs = "axis", .required = "axis",
		.shape = SR_INDEX_SELECT, .flops = FL_OUT, .flops_k = 1,
		.saves = {SAVE_ARG(1)}, .bwd_factor = 1},
	[OP_TOPK] = {.name = "topk", .min_args = 1, .max_args = 1,
		.attrs = "k axis", .required = "k", .shape = SR_TOPK,
		.float_in = true, .flops = FL_TOPK, .flops_k = 1,
		.saves = {SAVE_OUTN(1)}, .bwd_factor = 1, .nout = 2},
	[OP_SCATTER_ADD] = {.name = "scatter_add", .min_args = 3, .max_args = 3,
		.attrs = "axis", .required = "axis", .shape = SR_SCATTER_ADD,
		.flops = FL_LAST, .flops_k = 1, .saves = {SAVE_ARG(1)},
		.bwd_factor = 1},
	/* added for issue 28 */
	[OP_CONV1D] = CONV("conv1d", 1),
	[OP_GROUPNORM] = {.name = "groupnorm", .min_args = 3, .max_args = 3,
		.attrs = "groups", .required = "groups", .nextra = 2,
		.extra_role = {"mean", "rstd"}, .shape = SR_GROUPNORM,
		.float_in = true, .flops = FL_IN, .flops_k = 5,
		.saves = {SAVE_ARG(0), SAVE_EXTRA(0), SAVE_EXTRA(1)},
		.bwd_factor = 1},
	[OP_EXPAND] = VIEW("expand", SR_EXPAND, 1, "shape", "", ""),
	[OP_CUSTOM] = {.name = "<custom>", .min_args = 0, .max_args = -1,
		.attrs = "", .shape = SR_CUSTOM, .flops = FL_CUSTOM, .flops_k = 1,
		.bwd_factor = 1},
};

int
ir_op_from_name(const char *name)
{
	for (int k = 0; k < OP_CUSTOM; k++)
		if (!strcmp(ir_optab[k].name, name))
			return k;
	return -1;
}

/* Every non-tensor parameter name, the kind of value it takes and where it
 * goes in OpParams; a window setting (spread > 0) is an array of `spread`
 * values that a scalar fills, and that a list fills per axis. */
static const struct {
	const char *name;
	AttrKind kind;
	size_t off;
	int spread;
} slots[] = {
	{"axis", AV_INT, offsetof(OpParams, axis), 0},
	{"n", AV_INT, offsetof(OpParams, n), 0},
	{"i", AV_INT, offsetof(OpParams, i), 0},
	{"j", AV_INT, offsetof(OpParams, j), 0},
	{"start", AV_INT, offsetof(OpParams, start), 0},
	{"end", AV_INT, offsetof(OpParams, end), 0},
	{"stride", AV_INT, offsetof(OpParams, stride), 2},
	{"padding", AV_INT, offsetof(OpParams, pad), 4},
	{"dilation", AV_INT, offsetof(OpParams, dilation), 2},
	{"groups", AV_INT, offsetof(OpParams, groups), 0},
	{"k", AV_INT, offsetof(OpParams, k), 2},
	{"ceil_mode", AV_BOOL, offsetof(OpParams, ceil_mode), 0},
	{"keepdim", AV_BOOL, offsetof(OpParams, keepdim), 0},
	{"scale", AV_INT, offsetof(OpParams, scale), 0},
	{"p", AV_REAL, offsetof(OpParams, p), 0},
	{"c", AV_REAL, offsetof(OpParams, c), 0},
	{"causal", AV_BOOL, offsetof(OpParams, causal), 0},
	{"dropout", AV_REAL, offsetof(OpParams, dropout), 0},
	{"min", AV_REAL, offsetof(OpParams, cmin), 0},
	{"max", AV_REAL, offsetof(OpParams, cmax), 0},
	{"ignore_index", AV_INT, offsetof(OpParams, ignore_index), 0},
	{"dtype", AV_DTYPE, offsetof(OpParams, dtype), 0},
	{"shape", AV_LIST, 0, 0},
	{"axes", AV_LIST, 0, 0},
};

static const char *kind_word[] = {
	[AV_INT] = "an integer", [AV_REAL] = "a real", [AV_BOOL] = "a boolean",
	[AV_DTYPE] = "a dtype", [AV_LIST] = "a list",
};

/* Messages live here until the next call; the frontend copies them. */
static char msg[256];

/* The index of word `w` in the space-separated list `list`, or -1. */
static int
word_index(const char *list, const char *w)
{
	size_t n = strlen(w);
	int i = 0;

	for (const char *p = list; *p; i++) {
		size_t len = strcspn(p, " ");
		if (len == n && !memcmp(p, w, n))
			return i;
		p += len;
		p += strspn(p, " ");
	}
	return -1;
}

/* The i-th word of `list` into buf. */
static const char *
word_at(const char *list, int i, char *buf, size_t n)
{
	const char *p = list;

	for (; i > 0 && *p; i--) {
		p += strcspn(p, " ");
		p += strspn(p, " ");
	}
	snprintf(buf, n, "%.*s", (int)strcspn(p, " "), p);
	return buf;
}

static int
slot_of(const char *name)
{
	for (size_t s = 0; s < sizeof slots / sizeof slots[0]; s++)
		if (!strcmp(slots[s].name, name))
			return (int)s;
	ir_die(__FILE__, __LINE__, "an op table attribute without a slot");
}

/* Stores v into the slot, if it is of the slot's kind (an int is accepted
 * where a real is expected). */
static bool
store(OpParams *p, int s, const AttrValue *v)
{
	char *at = (char *)p + slots[s].off;
	AttrKind want = slots[s].kind;
	double r;

	if (v->kind != want && !(want == AV_REAL && v->kind == AV_INT))
		return false;
	switch (want) {
	case AV_INT:
		memcpy(at, &v->i, sizeof v->i);
		return true;
	case AV_REAL:
		r = v->kind == AV_INT ? (double)v->i : v->r;
		memcpy(at, &r, sizeof r);
		return true;
	case AV_BOOL:
		memcpy(at, &v->b, sizeof v->b);
		return true;
	case AV_DTYPE:
		memcpy(at, &v->dt, sizeof v->dt);
		return true;
	case AV_LIST:
		if (v->n < 0 || v->n > IR_MAXDIM)
			return false;
		p->nlist = v->n;
		memcpy(p->list, v->list, sizeof(int64_t) * (size_t)v->n);
		return true;
	}
	return false;
}

static const char *
set_positional(OpKind k, OpParams *p, int pos, const AttrValue *v)
{
	const OpInfo *info = &ir_optab[k];
	char name[32];

	if (pos < 0 || pos >= info->npos) {
		if (info->npos == 0)
			snprintf(msg, sizeof msg, "op '%s' takes no parameter "
			         "after its tensor arguments", info->name);
		else
			snprintf(msg, sizeof msg, "op '%s' takes %d parameter%s "
			         "after its tensor arguments", info->name, info->npos,
			         info->npos == 1 ? "" : "s");
		return msg;
	}
	word_at(info->pos_names, pos, name, sizeof name);
	if (p->given & (1u << (IR_POS_BIT + pos))) {
		snprintf(msg, sizeof msg, "parameter '%s' of '%s' given twice",
		         name, info->name);
		return msg;
	}
	int s = slot_of(name);
	if (!store(p, s, v)) {
		snprintf(msg, sizeof msg, "parameter '%s' of '%s' must be %s%s",
		         name, info->name, kind_word[slots[s].kind],
		         slots[s].kind == AV_LIST ? " of at most 8 dimensions" : "");
		return msg;
	}
	p->given |= 1u << (IR_POS_BIT + pos);
	return NULL;
}

/* PyTorch spells `axis=` as `dim=`: an op with an axis takes either. */
static const char *
attr_alias(const OpInfo *info, const char *name)
{
	if (!strcmp(name, "dim") && word_index(info->attrs, "axis") >= 0)
		return "axis";
	return name;
}

/* "op 'softmax' has no attribute 'axs' (did you mean 'axis'?)" */
static const char *
no_attr(const OpInfo *info, const char *name)
{
	char hint[96];
	Suggest sg;

	suggest_init(&sg, name);
	for (const char *a = info->attrs; *a; a += strspn(a, " ")) {
		size_t len = strcspn(a, " ");
		suggest_addn(&sg, a, len);
		a += len;
	}
	snprintf(msg, sizeof msg, "op '%s' has no attribute '%s'%s",
	         info->name, name, suggest_hint(&sg, hint, sizeof hint));
	return msg;
}

/* A list where the op's row allows one (OpInfo.lists): sum's and mean's
 * axes, or a window setting with one value per spatial axis, or for
 * padding two, each axis's begin and end. */
static const char *
store_list(const OpInfo *info, OpParams *p, const char *name, int s,
           const AttrValue *v)
{
	int64_t *at = (int64_t *)(void *)((char *)p + slots[s].off);
	int nsp = info->nspatial, per = slots[s].spread / 2;

	if (!slots[s].spread) {
		if (v->n < 1) {
			snprintf(msg, sizeof msg, "attribute '%s' of '%s' needs at "
			         "least one axis", name, info->name);
			return msg;
		}
		p->nlist = v->n;
		memcpy(p->list, v->list, sizeof(int64_t) * (size_t)v->n);
		return NULL;
	}
	if (v->n == nsp)
		for (int a = 0; a < nsp; a++)
			for (int r = 0; r < per; r++)
				at[a * per + r] = v->list[a];
	else if (per == 2 && v->n == 2 * nsp)
		memcpy(at, v->list, sizeof(int64_t) * (size_t)v->n);
	else if (per == 2) {
		snprintf(msg, sizeof msg, "attribute '%s' of '%s' takes an integer, "
		         "a list of %d (one per spatial axis) or of %d (%s), not %d "
		         "value%s", name, info->name, nsp, 2 * nsp,
		         nsp == 1 ? "left, right" : "top, bottom, left, right",
		         v->n, v->n == 1 ? "" : "s");
		return msg;
	} else {
		snprintf(msg, sizeof msg, "attribute '%s' of '%s' takes an integer "
		         "or a list of %d (one per spatial axis), not %d value%s",
		         name, info->name, nsp, v->n, v->n == 1 ? "" : "s");
		return msg;
	}
	return NULL;
}

const char *
ir_set_attr(OpKind k, OpParams *p, const char *name, int pos,
            const AttrValue *v)
{
	const OpInfo *info;
	int idx, s;

	ir_assert(k >= 0 && k < OP_COUNT);
	info = &ir_optab[k];
	if (!name)
		return set_positional(k, p, pos, v);
	name = attr_alias(info, name);
	idx = word_index(info->attrs, name);
	if (idx < 0)
		return no_attr(info, name);
	if (p->given & (1u << idx)) {
		snprintf(msg, sizeof msg, "attribute '%s' of '%s' given twice",
		         name, info->name);
		return msg;
	}
	s = slot_of(name);
	if (v->kind == AV_LIST && info->lists && word_index(info->lists, name) >= 0) {
		if (store_list(info, p, name, s, v))
			return msg;
	} else if (!store(p, s, v)) {
		snprintf(msg, sizeof msg, "attribute '%s' of '%s' must be %s",
		         name, info->name, kind_word[slots[s].kind]);
		return msg;
	} else {        /* a scalar window setting holds for every axis */
		int64_t *at = (int64_t *)(void *)((char *)p + slots[s].off);
		for (int i = 1; i < slots[s].spread; i++)
			at[i] = at[0];
	}
	if (!strcmp(name, "axis"))
		p->has_axis = true;
	p->given |= 1u << idx;
	return NULL;
}

bool
ir_attr_given(OpKind k, const OpParams *p, const char *name)
{
	int idx = word_index(ir_optab[k].attrs, attr_alias(&ir_optab[k], name));

	return idx >= 0 && (p->given & (1u << idx));
}

int64_t
ir_pool_stride(const Op *o, int a)
{
	return ir_attr_given(o->kind, o->p, "stride") ? o->p->stride[a] : o->p->k[a];
}

const char *
ir_check_attrs(OpKind k, const OpParams *p, unsigned given)
{
	const OpInfo *info;
	char w[32];
	int i;

	ir_assert(k >= 0 && k < OP_COUNT);
	info = &ir_optab[k];
	given |= p->given;
	for (i = 0; i < info->npos; i++)
		if (!(given & (1u << (IR_POS_BIT + i)))) {
			snprintf(msg, sizeof msg, "op '%s' needs parameter '%s'",
			         info->name, word_at(info->pos_names, i, w, sizeof w));
			return msg;
		}
	if (!info->required)
		return NULL;
	for (i = 0; word_at(info->required, i, w, sizeof w)[0]; i++) {
		int idx = word_index(info->attrs, w);
		ir_assert(idx >= 0);
		if (!(given & (1u << idx))) {
			snprintf(msg, sizeof msg, "op '%s' needs attribute '%s'",
			         info->name, w);
			return msg;
		}
	}
	return NULL;
}
