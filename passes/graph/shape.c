/* passes/graph/shape.c -- shape and dtype inference, in program order.
 *
 * Reads: Graph.t[] (declared dtype/shape of params and inputs), Graph.op[]
 * (kind, in, out, extra, p, custom) and the op table (ir/net/optab.c).
 * Writes: Tensor.dtype, ndim, shape, numel, bytes, view_of, needs_grad of
 * every param, input, output and extra; Op.flops and Op.p.axis_norm. (A
 * custom op's workspace is read from its CustomOp, ir_op_workspace, and is
 * charged in inference too.)
 *
 * Choices where ops.md is silent:
 * - Both matmul operands need at least 2 dimensions; a 1-D operand is an
 *   error (reshape it). Batch dims broadcast like NumPy, so a 2-D b (or a)
 *   is shared across the other's batch; FLOPs count the broadcast batch.
 * - Negative axes (axis=, transpose's i and j, permute's list, flatten's
 *   start) count from the end; out-of-range ones are errors.
 * - slice: negative start/end count from the end of the axis (Python);
 *   after that 0 <= start < end <= size must hold, with no clamping, so an
 *   empty or out-of-range slice is an error. axis, start and end have no
 *   default. split's and concat's axis have no default either.
 * - Windows (conv1d, conv2d, pools): H' = (H + pb + pe - d(k - 1) - 1)/stride
 *   + 1 rounded down (up under a pool's ceil_mode, dropping a last window
 *   that would start past H + pb, as PyTorch does) must be at least 1; pb
 *   and pe are the axis's begin and end pads. maxpool2d takes a dilation,
 *   avgpool2d none (as in PyTorch). A pool's pads are at most half its
 *   (dilated) window, PyTorch's rule, so that no window holds padding
 *   only. Convolutions also need the output channels O to divide by
 *   groups.
 * - Elementwise math, matmul, conv2d, attention, norms, softmax, pools,
 *   reductions and mse_loss take floating-point tensors only; add, sub,
 *   mul and div take any dtype (both the same); cast, embedding's table and
 *   the shape ops take any dtype. cross_entropy's logits are floating point
 *   and its labels exactly i64; embedding's indices any integer dtype (not
 *   bool).
 * - Binary ops, matmul, conv2d, attention, norm weights, mse_loss and
 *   concat need equal dtypes; the output takes that dtype.
 * - Every dimension must be at least 1: a declared tensor with a size-0 or
 *   negative dimension is an error, and no op makes an empty tensor.
 * - reshape's list may hold one -1; every other entry must be >= 1. A
 *   reshape to [] gives a scalar when x has one element.
 * - dropout's p must lie in [0, 1); conv/pool strides, kernel, dilation,
 *   groups and upsample's scale must be >= 1, paddings >= 0.
 * - Issue 28's ops: groupnorm needs C to divide by its groups; expand's
 *   shape has at least x's rank, new axes in front, -1 only for an axis of
 *   x, which must be 1 or the new size; an axis list names each axis once
 *   (at least one).
 * - A split must bind exactly n outputs.
 * - Odd FLOP counts never arise from halving: causal attention's 4BHSTDh is
 *   even.
 * - Added ops (docs/ops-added.md): gather's index has x's ndim and x's
 *   sizes off the axis (no smaller index as in PyTorch); scatter_add's src
 *   likewise, its index src's shape or 1 on any axis (broadcast);
 *   index_select's index is 1-D; indices are any integer dtype but bool.
 *   topk binds exactly two names. attention's k/v heads divide q's; the
 *   mask broadcasts to [B, H, S, T], is bool/u8/floating and needs no
 *   grad; dropout in [0, 1). clamp needs min or max, and min <= max.
 * - shape_infer_op returns 0 on success, 1 after reporting an error, and -1
 *   for an op skipped because an input is poisoned (nothing reported).
 */
#include <stdarg.h>
#include <string.h>

#include "graph.h"

#define MAXBYTES ((int64_t)1 << 62)

typedef struct Ctx {
	Graph *g;
	Op *op;
	Diag *d;
} Ctx;

/* Shape strings for messages: a few rotating buffers, so one message can
 * print several shapes. */
static const char *
dims_str(const int64_t *s, int n)
{
	static char buf[4][IR_MAXDIM * 24 + 4];
	static int next;
	char *b = buf[next++ % 4];
	size_t used = 0;

	used += (size_t)snprintf(b, sizeof buf[0], "[");
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(b + used, sizeof buf[0] - used, "%s%lld",
		                         i ? ", " : "", (long long)s[i]);
	snprintf(b + used, sizeof buf[0] - used, "]");
	return b;
}

static const char *
shp(const Tensor *t)
{
	return dims_str(t->shape, t->ndim);
}

static const char *
op_name(const Op *op)
{
	if (op->kind == OP_CUSTOM && op->p->custom)
		return op->p->custom->name;
	return ir_optab[op->kind].name;
}

/* Reports "<op>: <message>" at the op; returns 1 for `return err(...)`. */
static int
err(Ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
err(Ctx *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	diag_error(c->d, ir_op_loc(c->g, c->op), "%s: %s", op_name(c->op), buf);
	return 1;
}

static Tensor *
in(Ctx *c, int i)
{
	return &c->g->t[c->op->in[i]];
}

/* *acc *= x; false on overflow. */
static bool
mul64(int64_t *acc, int64_t x)
{
	return !__builtin_mul_overflow(*acc, x, acc);
}

/* bytes from shape; false when it overflows or passes 2^62. */
static bool
size_tensor(Tensor *t)
{
	int64_t n = 1, b;

	for (int i = 0; i < t->ndim; i++)
		if (!mul64(&n, t->shape[i]))
			return false;
	b = n;
	if (!mul64(&b, dtype_size(t->dtype)) || b > MAXBYTES)
		return false;
	t->bytes = b;
	return true;
}

/* Gives x the shape, sharing the array of an input that has the same one
 * (most ops keep a shape): 300k chained ops would otherwise hold 300k
 * copies of it. */
static void
set_shape(Ctx *c, Tensor *x, int ndim, const int64_t *shape)
{
	for (int i = 0; i < c->op->nin; i++) {
		const Tensor *a = in(c, i);

		if (a->ndim == ndim && a->shape &&
		    !memcmp(a->shape, shape, sizeof(int64_t) * (size_t)ndim)) {
			ir_share_shape(x, a);
			return;
		}
	}
	ir_set_shape(c->g, x, ndim, shape);
}

/* Gives tensor t its type; reports a tensor too large to hold. */
static int
set_type(Ctx *c, int t, Dtype dt, int ndim, const int64_t *shape)
{
	Tensor *x = &c->g->t[t];

	ir_assert(ndim >= 0 && ndim <= IR_MAXDIM);
	x->dtype = dt;
	set_shape(c, x, ndim, shape);
	if (!size_tensor(x)) {
		x->ndim = -1;
		return err(c, "'%s' %s %s is larger than 2^62 bytes", x->id,
		           dtype_name(dt), dims_str(shape, ndim));
	}
	return 0;
}

static int
set_out(Ctx *c, int i, Dtype dt, int ndim, const int64_t *shape)
{
	return set_type(c, c->op->out[i], dt, ndim, shape);
}

static int
set_extra(Ctx *c, int i, Dtype dt, int ndim, const int64_t *shape)
{
	return set_type(c, ir_extra(c->op, i), dt, ndim, shape);
}

/* Normalizes a possibly negative axis into [0, ndim); false if outside. */
static bool
norm_axis(int64_t *axis, int ndim)
{
	if (*axis < 0)
		*axis += ndim;
	return *axis >= 0 && *axis < ndim;
}

static int
axis_of(Ctx *c, const Tensor *x, int64_t *axis)
{
	int64_t a = *axis;

	if (!norm_axis(axis, x->ndim))
		return err(c, "axis %lld is out of range for %s", (long long)a, shp(x));
	return 0;
}

static int
same_dtype(Ctx *c, const Tensor *a, const Tensor *b)
{
	if (a->dtype != b->dtype)
		return err(c, "dtypes differ: %s and %s (use cast)",
		           dtype_name(a->dtype), dtype_name(b->dtype));
	return 0;
}

static int
need_rank(Ctx *c, const Tensor *x, const char *what, int ndim, const char *form)
{
	if (x->ndim != ndim)
		return err(c, "%s must be %s, got %s", what, form, shp(x));
	return 0;
}

static int
at_least(Ctx *c, const char *what, int64_t v, int64_t min)
{
	if (v < min)
		return err(c, "%s must be at least %lld, not %lld", what,
		           (long long)min, (long long)v);
	return 0;
}

/* ---- elementwise */

static int
rule_unary(Ctx *c)
{
	Tensor *x = in(c, 0);

	return set_out(c, 0, x->dtype, x->ndim, x->shape);
}

static int
rule_cast(Ctx *c)
{
	Tensor *x = in(c, 0);

	if (c->op->p->dtype < 0 || c->op->p->dtype >= DT_COUNT)
		return err(c, "needs attribute 'dtype'");
	return set_out(c, 0, c->op->p->dtype, x->ndim, x->shape);
}

static int
rule_dropout(Ctx *c)
{
	Tensor *x = in(c, 0);
	double p = c->op->p->p;

	if (!(p >= 0 && p < 1))
		return err(c, "p must be in [0, 1), not %g", p);
	return set_out(c, 0, x->dtype, x->ndim, x->shape) ||
	       set_extra(c, 0, DT_U8, x->ndim, x->shape);
}

/* NumPy broadcasting of a and b's shapes into s; false if they clash. */
static bool
broadcast(const int64_t *a, int na, const int64_t *b, int nb, int64_t *s, int *ns)
{
	int n = na > nb ? na : nb;

	for (int i = 0; i < n; i++) {
		int64_t da = i < n - na ? 1 : a[i - (n - na)];
		int64_t db = i < n - nb ? 1 : b[i - (n - nb)];
		if (da != db && da != 1 && db != 1)
			return false;
		s[i] = da == 1 ? db : da;
	}
	*ns = n;
	return true;
}

static int
rule_binary(Ctx *c)
{
	Tensor *a = in(c, 0), *b = in(c, 1);
	int64_t s[IR_MAXDIM];
	int n;

	if (same_dtype(c, a, b))
		return 1;
	if (!broadcast(a->shape, a->ndim, b->shape, b->ndim, s, &n))
		return err(c, "shapes %s and %s do not broadcast", shp(a), shp(b));
	return set_out(c, 0, a->dtype, n, s);
}

/* ---- linear algebra */

static int
rule_matmul(Ctx *c)
{
	Tensor *a = in(c, 0), *b = in(c, 1);
	int64_t s[IR_MAXDIM];
	int n;

	if (a->ndim < 2 || b->ndim < 2)
		return err(c, "operands need at least 2 dimensions: %s @ %s",
		           shp(a), shp(b));
	if (same_dtype(c, a, b))
		return 1;
	if (a->shape[a->ndim - 1] != b->shape[b->ndim - 2])
		return err(c, "inner dimensions differ: %s @ %s", shp(a), shp(b));
	if (!broadcast(a->shape, a->ndim - 2, b->shape, b->ndim - 2, s, &n))
		return err(c, "batch dimensions do not broadcast: %s @ %s",
		           shp(a), shp(b));
	s[n] = a->shape[a->ndim - 2];
	s[n + 1] = b->shape[b->ndim - 1];
	return set_out(c, 0, a->dtype, n + 2, s);
}

/* One spatial output size of a convolution or pool: window k with stride
 * s and dilation d over h plus pads pb before and pe after, rounded down,
 * or up under ceil mode, where (as in PyTorch) a last window that would
 * start past the input and the begin pad is dropped; -1 when empty or on
 * overflow. */
static int64_t
conv_size(int64_t h, int64_t k, int64_t s, int64_t pb, int64_t pe, int64_t d,
          bool ceil)
{
	int64_t span, num, out;

	if (__builtin_mul_overflow(d, k - 1, &span) ||
	    __builtin_add_overflow(span, 1, &span) ||
	    __builtin_add_overflow(h, pb, &num) ||
	    __builtin_add_overflow(num, pe, &num) ||
	    __builtin_sub_overflow(num, span, &num) || num < 0)
		return -1;
	out = num / s + (ceil && num % s ? 1 : 0) + 1;
	if (ceil && (out - 1) * s >= h + pb)
		out--;
	return out;
}

/* A window setting for messages: "2" when every value is 2, else the list. */
static const char *
vals_str(const int64_t *v, int n)
{
	static char buf[4][24];
	static int next;
	char *b = buf[next++ % 4];

	for (int i = 1; i < n; i++)
		if (v[i] != v[0])
			return dims_str(v, n);
	snprintf(b, sizeof buf[0], "%lld", (long long)v[0]);
	return b;
}

/* Strides, dilations and pads of a window op over nsp spatial axes. */
static int
window_params(Ctx *c, int nsp, const int64_t *stride)
{
	const OpParams *p = c->op->p;

	for (int a = 0; a < nsp; a++)
		if (at_least(c, "stride", stride[a], 1) ||
		    at_least(c, "dilation", p->dilation[a], 1) ||
		    at_least(c, "padding", p->pad[2 * a], 0) ||
		    at_least(c, "padding", p->pad[2 * a + 1], 0))
			return 1;
	return 0;
}

/* conv1d, conv2d: x [N, C, *S], w [O, C/groups, *K] -> [N, O, *S']. */
static int
rule_conv(Ctx *c)
{
	Tensor *x = in(c, 0), *w = in(c, 1);
	const OpParams *p = c->op->p;
	int nsp = ir_optab[c->op->kind].nspatial, nd = nsp + 2;
	int64_t s[4], ch, gr = p->groups;
	bool fits = true;

	if (need_rank(c, x, "x", nd, nsp == 1 ? "[N, C, L]" : "[N, C, H, W]") ||
	    need_rank(c, w, "w", nd, nsp == 1 ? "[O, C/groups, K]" :
	              "[O, C/groups, KH, KW]") ||
	    same_dtype(c, x, w) || window_params(c, nsp, p->stride) ||
	    at_least(c, "groups", gr, 1))
		return 1;
	ch = x->shape[1];
	if (ch % gr)
		return err(c, "%lld input channels of x %s do not divide into %lld "
		           "groups", (long long)ch, shp(x), (long long)gr);
	if (w->shape[0] % gr)
		return err(c, "%lld output channels of w %s do not divide into "
		           "%lld groups", (long long)w->shape[0], shp(w), (long long)gr);
	if (w->shape[1] != ch / gr)
		return err(c, "channels differ: x %s has %lld per group, w %s "
		           "expects %lld", shp(x), (long long)(ch / gr), shp(w),
		           (long long)w->shape[1]);
	s[0] = x->shape[0];
	s[1] = w->shape[0];
	for (int a = 0; a < nsp; a++) {
		s[2 + a] = conv_size(x->shape[2 + a], w->shape[2 + a], p->stride[a],
		                     p->pad[2 * a], p->pad[2 * a + 1], p->dilation[a],
		                     false);
		fits &= s[2 + a] >= 1;
	}
	if (!fits)
		return err(c, "kernel of w %s does not fit x %s (stride %s, "
		           "padding %s, dilation %s)", shp(w), shp(x),
		           vals_str(p->stride, nsp), vals_str(p->pad, 2 * nsp),
		           vals_str(p->dilation, nsp));
	return set_out(c, 0, x->dtype, nd, s);
}

/* q [B, H, S, Dh], k and v [B, Hkv, T, Dh] with Hkv dividing H (GQA/MQA);
 * an optional mask broadcasts to [B, H, S, T]: bool/u8 (true: attend) or
 * floating (added to the scores), needing no grad. */
static int
rule_attention(Ctx *c)
{
	Tensor *q = in(c, 0), *k = in(c, 1), *v = in(c, 2);
	const char *form = "[B, H, S, Dh]";
	double dp = c->op->p->dropout;

	for (int i = 0; i < 3; i++)
		if (!dtype_is_float(in(c, i)->dtype))
			return err(c, "expects floating-point q, k and v, not %s",
			           dtype_name(in(c, i)->dtype));
	if (need_rank(c, q, "q", 4, form) ||
	    need_rank(c, k, "k", 4, "[B, Hkv, T, Dh]") ||
	    need_rank(c, v, "v", 4, "[B, Hkv, T, Dh]") ||
	    same_dtype(c, q, k) || same_dtype(c, q, v))
		return 1;
	if (memcmp(k->shape, v->shape, sizeof(int64_t) * 4))
		return err(c, "k and v shapes differ: %s and %s", shp(k), shp(v));
	if (q->shape[0] != k->shape[0] || q->shape[3] != k->shape[3])
		return err(c, "q %s and k %s differ in B, H or Dh", shp(q), shp(k));
	if (q->shape[1] % k->shape[1])
		return err(c, "k/v heads (%lld) must divide q heads (%lld)",
		           (long long)k->shape[1], (long long)q->shape[1]);
	if (!(dp >= 0 && dp < 1))
		return err(c, "dropout must be in [0, 1), not %g", dp);
	if (c->op->nin == 4) {
		Tensor *m = in(c, 3);
		int64_t full[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
		bool ok = m->ndim <= 4;
		for (int i = 0; ok && i < m->ndim; i++)
			ok = m->shape[i] == 1 || m->shape[i] == full[4 - m->ndim + i];
		if (!ok)
			return err(c, "mask %s does not broadcast to %s", shp(m),
			           dims_str(full, 4));
		if (!dtype_is_float(m->dtype) && m->dtype != DT_BOOL && m->dtype != DT_U8)
			return err(c, "mask must be bool, u8 or floating point, not %s",
			           dtype_name(m->dtype));
		if (m->needs_grad)
			return err(c, "mask '%s' needs grad; attention takes no gradient "
			           "to its mask", m->id);
	}
	if (c->op->nextra == 2) {
		int64_t full[4] = {q->shape[0], q->shape[1], q->shape[2], k->shape[2]};
		if (set_extra(c, 1, DT_U8, 4, full))
			return 1;
	}
	return set_out(c, 0, q->dtype, 4, q->shape) ||
	       set_extra(c, 0, DT_F32, 3, q->shape);
}

/* ---- normalization, pooling, losses */

/* Norm weight i must be [n] in x's dtype. */
static int
norm_weight(Ctx *c, int i, int64_t n)
{
	Tensor *x = in(c, 0), *w = in(c, i);
	const char *name = i == 1 ? "g" : "b";

	if (w->ndim != 1 || w->shape[0] != n)
		return err(c, "%s must be %s, got %s", name, dims_str(&n, 1), shp(w));
	if (w->dtype != x->dtype)
		return err(c, "%s must be %s like x, not %s", name,
		           dtype_name(x->dtype), dtype_name(w->dtype));
	return 0;
}

/* layernorm, rmsnorm: over the last axis. */
static int
rule_norm(Ctx *c)
{
	Tensor *x = in(c, 0);
	int i;

	if (x->ndim < 1)
		return err(c, "x must have at least one axis, got %s", shp(x));
	for (i = 1; i < c->op->nin; i++)
		if (norm_weight(c, i, x->shape[x->ndim - 1]))
			return 1;
	if (set_out(c, 0, x->dtype, x->ndim, x->shape))
		return 1;
	for (i = 0; i < c->op->nextra; i++)
		if (set_extra(c, i, DT_F32, x->ndim - 1, x->shape))
			return 1;
	return 0;
}

static int
rule_batchnorm(Ctx *c)
{
	Tensor *x = in(c, 0);

	if (x->ndim < 2)
		return err(c, "x must be [N, C, ...], got %s", shp(x));
	if (norm_weight(c, 1, x->shape[1]) || norm_weight(c, 2, x->shape[1]))
		return 1;
	return set_out(c, 0, x->dtype, x->ndim, x->shape) ||
	       set_extra(c, 0, DT_F32, 1, &x->shape[1]) ||
	       set_extra(c, 1, DT_F32, 1, &x->shape[1]);
}

static int
rule_softmax(Ctx *c)
{
	Tensor *x = in(c, 0);

	c->op->p->axis_norm = c->op->p->axis;
	if (axis_of(c, x, &c->op->p->axis_norm))
		return 1;
	return set_out(c, 0, x->dtype, x->ndim, x->shape);
}

/* maxpool2d, avgpool2d: x [N, C, H, W] -> [N, C, H', W']. */
static int
rule_pool(Ctx *c)
{
	Tensor *x = in(c, 0);
	const OpParams *p = c->op->p;
	int64_t s[4], st[2] = {ir_pool_stride(c->op, 0), ir_pool_stride(c->op, 1)};
	bool fits = true;

	if (need_rank(c, x, "x", 4, "[N, C, H, W]") ||
	    at_least(c, "k", p->k[0], 1) || at_least(c, "k", p->k[1], 1) ||
	    window_params(c, 2, st))
		return 1;
	for (int a = 0; a < 4; a++) {
		int64_t span = p->dilation[a / 2] * (p->k[a / 2] - 1) + 1;
		if (p->pad[a] > span / 2)
			return err(c, "padding %s is more than half of window %s (PyTorch's "
			           "rule: every window must hold some of x)", vals_str(p->pad, 4),
			           vals_str(p->k, 2));
	}
	s[0] = x->shape[0];
	s[1] = x->shape[1];
	for (int a = 0; a < 2; a++) {
		s[2 + a] = conv_size(x->shape[2 + a], p->k[a], st[a], p->pad[2 * a],
		                     p->pad[2 * a + 1], p->dilation[a], p->ceil_mode);
		fits &= s[2 + a] >= 1;
	}
	if (!fits)
		return err(c, "window %s does not fit x %s (stride %s, padding %s%s%s%s)",
		           vals_str(p->k, 2), shp(x), vals_str(st, 2), vals_str(p->pad, 4),
		           p->dilation[0] != 1 || p->dilation[1] != 1 ? ", dilation " : "",
		           p->dilation[0] != 1 || p->dilation[1] != 1 ?
		           vals_str(p->dilation, 2) : "", p->ceil_mode ? ", ceil_mode" : "");
	if (set_out(c, 0, x->dtype, 4, s))
		return 1;
	return c->op->nextra ? set_extra(c, 0, DT_I64, 4, s) : 0;
}

static int
rule_global_pool(Ctx *c)
{
	Tensor *x = in(c, 0);

	if (need_rank(c, x, "x", 4, "[N, C, H, W]"))
		return 1;
	return set_out(c, 0, x->dtype, 2, x->shape);
}

static int
rule_upsample(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[4], sc = c->op->p->scale;

	if (need_rank(c, x, "x", 4, "[N, C, H, W]") ||
	    at_least(c, "scale", sc, 1))
		return 1;
	memcpy(s, x->shape, sizeof s);
	if (!mul64(&s[2], sc) || !mul64(&s[3], sc))
		return err(c, "x %s scaled by %lld overflows", shp(x), (long long)sc);
	return set_out(c, 0, x->dtype, 4, s);
}

/* sum, mean: remove the axis, the axes of a list, or every axis without
 * one; keepdim leaves each reduced axis with size 1. */
static int
rule_reduce(Ctx *c)
{
	Tensor *x = in(c, 0);
	OpParams *p = c->op->p;
	int64_t s[IR_MAXDIM], a;
	bool cut[IR_MAXDIM] = {false};
	int n = 0;

	if (!p->has_axis) {
		for (int i = 0; i < x->ndim; i++)
			s[i] = 1;
		return set_out(c, 0, x->dtype, p->keepdim ? x->ndim : 0, s);
	}
	for (int k = 0; k < (p->nlist ? p->nlist : 1); k++) {
		a = p->nlist ? p->list[k] : p->axis;
		if (axis_of(c, x, &a))
			return 1;
		if (cut[a])
			return err(c, "axis %lld appears twice in %s", (long long)a,
			           dims_str(p->list, p->nlist));
		cut[a] = true;
		p->axis_norm = a;
	}
	for (int i = 0; i < x->ndim; i++)
		if (!cut[i] || p->keepdim)
			s[n++] = cut[i] ? 1 : x->shape[i];
	return set_out(c, 0, x->dtype, n, s);
}

static int
rule_cross_entropy(Ctx *c)
{
	Tensor *x = in(c, 0), *y = in(c, 1);

	if (!dtype_is_float(x->dtype))
		return err(c, "logits must be floating point, not %s",
		           dtype_name(x->dtype));
	if (y->dtype != DT_I64)
		return err(c, "labels must be i64, not %s", dtype_name(y->dtype));
	if (x->ndim < 1)
		return err(c, "logits must be [..., C], got %s", shp(x));
	if (y->ndim != x->ndim - 1 ||
	    memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)y->ndim))
		return err(c, "labels %s do not match logits %s (expected %s)",
		           shp(y), shp(x), dims_str(x->shape, x->ndim - 1));
	return set_out(c, 0, DT_F32, 0, x->shape) ||
	       set_extra(c, 0, x->dtype, x->ndim, x->shape);
}

static int
rule_mse(Ctx *c)
{
	Tensor *a = in(c, 0), *b = in(c, 1);

	if (same_dtype(c, a, b))
		return 1;
	if (a->ndim != b->ndim ||
	    memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim))
		return err(c, "shapes differ: %s and %s", shp(a), shp(b));
	return set_out(c, 0, DT_F32, 0, a->shape);
}

static int
rule_embedding(Ctx *c)
{
	Tensor *idx = in(c, 0), *tab = in(c, 1);
	int64_t s[IR_MAXDIM];

	if (dtype_is_float(idx->dtype) || idx->dtype == DT_BOOL)
		return err(c, "indices must be an integer tensor, not %s",
		           dtype_name(idx->dtype));
	if (need_rank(c, tab, "table", 2, "[V, D]"))
		return 1;
	if (idx->ndim + 1 > IR_MAXDIM)
		return err(c, "indices %s leave no room for the embedding axis "
		           "(at most %d axes)", shp(idx), IR_MAXDIM);
	memcpy(s, idx->shape, sizeof(int64_t) * (size_t)idx->ndim);
	s[idx->ndim] = tab->shape[1];
	return set_out(c, 0, tab->dtype, idx->ndim + 1, s);
}

/* ---- shape ops: views of argument 0 */

static int
rule_reshape(Ctx *c)
{
	Tensor *x = in(c, 0);
	const OpParams *p = c->op->p;
	int64_t s[IR_MAXDIM], known = 1;
	int hole = -1;

	for (int i = 0; i < p->nlist; i++) {
		s[i] = p->list[i];
		if (s[i] == -1 && hole < 0)
			hole = i;
		else if (s[i] == -1)
			return err(c, "more than one -1 in %s", dims_str(p->list, p->nlist));
		else if (s[i] < 1)
			return err(c, "invalid dimension %lld in %s", (long long)s[i],
			           dims_str(p->list, p->nlist));
		else if (!mul64(&known, s[i]))
			known = -1;
	}
	if (known > 0 && hole >= 0 && ir_numel(x) % known == 0)
		s[hole] = ir_numel(x) / known;
	else if (known < 0 || hole >= 0 || known != ir_numel(x))
		return err(c, "cannot reshape %s (%lld elements) into %s", shp(x),
		           (long long)ir_numel(x), dims_str(p->list, p->nlist));
	return set_out(c, 0, x->dtype, p->nlist, s);
}

static int
rule_flatten(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[IR_MAXDIM], st0, st;

	st0 = ir_attr_given(OP_FLATTEN, c->op->p, "start") ? c->op->p->start : 1;
	st = st0;
	if (x->ndim < 1)
		return err(c, "cannot flatten a scalar");
	if (!norm_axis(&st, x->ndim))
		return err(c, "start %lld is out of range for %s", (long long)st0,
		           shp(x));
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)st);
	s[st] = 1;
	for (int i = (int)st; i < x->ndim; i++)
		s[st] *= x->shape[i];   /* bounded by numel: no overflow */
	c->op->p->axis_norm = st;
	return set_out(c, 0, x->dtype, (int)st + 1, s);
}

static int
rule_transpose(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[IR_MAXDIM], i = c->op->p->i, j = c->op->p->j, t;

	if (axis_of(c, x, &i) || axis_of(c, x, &j))
		return 1;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	t = s[i];
	s[i] = s[j];
	s[j] = t;
	return set_out(c, 0, x->dtype, x->ndim, s);
}

static int
rule_permute(Ctx *c)
{
	Tensor *x = in(c, 0);
	const OpParams *p = c->op->p;
	int64_t s[IR_MAXDIM], a;
	bool seen[IR_MAXDIM] = {false};

	if (p->nlist != x->ndim)
		return err(c, "axes %s do not match %s", dims_str(p->list, p->nlist),
		           shp(x));
	for (int i = 0; i < p->nlist; i++) {
		a = p->list[i];
		if (!norm_axis(&a, x->ndim) || seen[a])
			return err(c, "axes %s are not a permutation of the axes of %s",
			           dims_str(p->list, p->nlist), shp(x));
		seen[a] = true;
		s[i] = x->shape[a];
	}
	return set_out(c, 0, x->dtype, x->ndim, s);
}

static int
rule_slice(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[IR_MAXDIM], a = c->op->p->axis, lo = c->op->p->start,
	        hi = c->op->p->end, n;

	if (axis_of(c, x, &a))
		return 1;
	n = x->shape[a];
	if (lo < 0)
		lo += n;
	if (hi < 0)
		hi += n;
	if (lo < 0 || lo >= hi || hi > n)
		return err(c, "range %lld:%lld is empty or outside axis %lld of %s",
		           (long long)c->op->p->start, (long long)c->op->p->end,
		           (long long)a, shp(x));
	c->op->p->axis_norm = a;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	s[a] = hi - lo;
	return set_out(c, 0, x->dtype, x->ndim, s);
}

static int
rule_split(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[IR_MAXDIM], a = c->op->p->axis, n = c->op->p->n;

	if (at_least(c, "n", n, 1) || axis_of(c, x, &a))
		return 1;
	if (x->shape[a] % n)
		return err(c, "axis %lld of %s does not divide into %lld parts",
		           (long long)a, shp(x), (long long)n);
	if (c->op->nout != n)
		return err(c, "makes %lld parts, but %d are bound", (long long)n,
		           c->op->nout);
	c->op->p->axis_norm = a;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	s[a] /= n;
	for (int i = 0; i < c->op->nout; i++)
		if (set_out(c, i, x->dtype, x->ndim, s))
			return 1;
	return 0;
}

static int
rule_concat(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[IR_MAXDIM], a = c->op->p->axis;

	if (axis_of(c, x, &a))
		return 1;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	for (int k = 1; k < c->op->nin; k++) {
		Tensor *y = in(c, k);
		if (same_dtype(c, x, y))
			return 1;
		bool ok = y->ndim == x->ndim;
		for (int i = 0; ok && i < x->ndim; i++)
			ok = i == a || y->shape[i] == x->shape[i];
		if (!ok)
			return err(c, "shapes %s and %s differ outside axis %lld",
			           shp(x), shp(y), (long long)a);
		if (__builtin_add_overflow(s[a], y->shape[a], &s[a]))
			return err(c, "axis %lld overflows", (long long)a);
	}
	c->op->p->axis_norm = a;
	return set_out(c, 0, x->dtype, x->ndim, s);
}

static int
rule_custom(Ctx *c)
{
	const CustomOp *cu = c->op->p->custom;

	for (int i = 0; i < cu->out_ndim; i++)
		if (cu->out_shape[i] < 1)
			return err(c, "declared output %s has a dimension less than 1",
			           dims_str(cu->out_shape, cu->out_ndim));
	return set_out(c, 0, cu->out_dtype, cu->out_ndim, cu->out_shape);
}

/* ---- added for real networks (issue 13) */

static int
rule_clamp(Ctx *c)
{
	Tensor *x = in(c, 0);
	const OpParams *p = c->op->p;

	if (!ir_attr_given(OP_CLAMP, p, "min") && !ir_attr_given(OP_CLAMP, p, "max"))
		return err(c, "needs attribute 'min' or 'max'");
	if (p->cmin > p->cmax)
		return err(c, "min %g is greater than max %g", p->cmin, p->cmax);
	return set_out(c, 0, x->dtype, x->ndim, x->shape);
}

static bool
is_index(const Tensor *t)
{
	return !dtype_is_float(t->dtype) && t->dtype != DT_BOOL;
}

static int
need_index(Ctx *c, const Tensor *t, const char *what)
{
	if (!is_index(t))
		return err(c, "%s must be an integer tensor, not %s", what,
		           dtype_name(t->dtype));
	return 0;
}

/* idx has x's ndim and, off the axis, x's sizes (or 1 where bcast). */
static int
index_fits(Ctx *c, const Tensor *idx, const Tensor *x, int64_t a, bool bcast,
           const char *what)
{
	bool ok = idx->ndim == x->ndim;

	for (int i = 0; ok && i < x->ndim; i++)
		ok = i == a || idx->shape[i] == x->shape[i] ||
		     (bcast && idx->shape[i] == 1);
	if (!ok)
		return err(c, "%s %s must have the rank of %s and its sizes off axis "
		           "%lld%s", what, shp(idx), shp(x), (long long)a,
		           bcast ? " (or 1)" : "");
	return 0;
}

/* gather(x, idx, axis=a): out[..i..] = x[..idx[..i..]..] along a. */
static int
rule_gather(Ctx *c)
{
	Tensor *x = in(c, 0), *idx = in(c, 1);
	int64_t a = c->op->p->axis;

	if (need_index(c, idx, "index") || axis_of(c, x, &a) ||
	    index_fits(c, idx, x, a, false, "index"))
		return 1;
	c->op->p->axis_norm = a;
	return set_out(c, 0, x->dtype, idx->ndim, idx->shape);
}

/* index_select(x, idx, axis=a): idx 1-D; axis a becomes n(idx) long. */
static int
rule_index_select(Ctx *c)
{
	Tensor *x = in(c, 0), *idx = in(c, 1);
	int64_t s[IR_MAXDIM], a = c->op->p->axis;

	if (need_index(c, idx, "index") || need_rank(c, idx, "index", 1, "[N]") ||
	    axis_of(c, x, &a))
		return 1;
	c->op->p->axis_norm = a;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	s[a] = idx->shape[0];
	return set_out(c, 0, x->dtype, x->ndim, s);
}

/* values, indices = topk(x, k=, axis=-1): the k largest along the axis. */
static int
rule_topk(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t s[IR_MAXDIM], a = c->op->p->axis, k = c->op->p->k[0];

	if (c->op->nout != 2)
		return err(c, "gives 2 values (values, indices), but %d %s bound",
		           c->op->nout, c->op->nout == 1 ? "is" : "are");
	if (axis_of(c, x, &a) || at_least(c, "k", k, 1))
		return 1;
	if (k > x->shape[a])
		return err(c, "k %lld is larger than axis %lld of %s", (long long)k,
		           (long long)a, shp(x));
	c->op->p->axis_norm = a;
	memcpy(s, x->shape, sizeof(int64_t) * (size_t)x->ndim);
	s[a] = k;
	return set_out(c, 0, x->dtype, x->ndim, s) ||
	       set_out(c, 1, DT_I64, x->ndim, s);
}

/* scatter_add(x, idx, src, axis=a): out = x, then out[..idx..] += src;
 * idx broadcasts to src's shape (a size-1 axis is repeated). */
static int
rule_scatter_add(Ctx *c)
{
	Tensor *x = in(c, 0), *idx = in(c, 1), *src = in(c, 2);
	int64_t a = c->op->p->axis;

	if (need_index(c, idx, "index") || same_dtype(c, x, src) ||
	    axis_of(c, x, &a) || index_fits(c, src, x, a, false, "src"))
		return 1;
	bool ok = idx->ndim == src->ndim;
	for (int i = 0; ok && i < src->ndim; i++)
		ok = idx->shape[i] == src->shape[i] || idx->shape[i] == 1;
	if (!ok)
		return err(c, "index %s does not broadcast to src %s", shp(idx), shp(src));
	c->op->p->axis_norm = a;
	return set_out(c, 0, x->dtype, x->ndim, x->shape);
}

/* ---- added for issue 28 */

/* groupnorm(x, g, b, groups=G): x [N, C, ...] normalized over each group of
 * C/G channels (with their spatial axes); g, b [C]; mean, rstd f32 [N, G]. */
static int
rule_groupnorm(Ctx *c)
{
	Tensor *x = in(c, 0);
	int64_t gr = c->op->p->groups, st[2];

	if (x->ndim < 2)
		return err(c, "x must be [N, C, ...], got %s", shp(x));
	if (at_least(c, "groups", gr, 1))
		return 1;
	if (x->shape[1] % gr)
		return err(c, "%lld channels of x %s do not divide into %lld groups",
		           (long long)x->shape[1], shp(x), (long long)gr);
	if (norm_weight(c, 1, x->shape[1]) || norm_weight(c, 2, x->shape[1]))
		return 1;
	st[0] = x->shape[0];
	st[1] = gr;
	return set_out(c, 0, x->dtype, x->ndim, x->shape) ||
	       set_extra(c, 0, DT_F32, 2, st) || set_extra(c, 1, DT_F32, 2, st);
}

/* expand(x, [d...]): a view of x broadcast to the shape, aligned at the
 * right; new axes go in front; -1 keeps one of x's sizes; an axis of x
 * must equal its new size or be 1. */
static int
rule_expand(Ctx *c)
{
	Tensor *x = in(c, 0);
	const OpParams *p = c->op->p;
	int64_t s[IR_MAXDIM];
	int lead = p->nlist - x->ndim;

	if (lead < 0)
		return err(c, "cannot expand %s to %s: fewer axes than x", shp(x),
		           dims_str(p->list, p->nlist));
	for (int i = 0; i < p->nlist; i++) {
		int64_t d = p->list[i], have = i < lead ? -1 : x->shape[i - lead];
		if (d == -1 && have < 0)
			return err(c, "cannot expand %s to %s: -1 for new axis %d", shp(x),
			           dims_str(p->list, p->nlist), i);
		s[i] = d == -1 ? have : d;
		if (s[i] < 1)
			return err(c, "invalid dimension %lld in %s", (long long)d,
			           dims_str(p->list, p->nlist));
		if (have >= 0 && have != 1 && have != s[i])
			return err(c, "cannot expand %s to %s: axis %d has size %lld, not "
			           "1 or %lld", shp(x), dims_str(p->list, p->nlist), i,
			           (long long)have, (long long)s[i]);
	}
	return set_out(c, 0, x->dtype, p->nlist, s);
}

static int (*const rules[])(Ctx *) = {
	[SR_UNARY] = rule_unary, [SR_CAST] = rule_cast,
	[SR_DROPOUT] = rule_dropout, [SR_BINARY] = rule_binary,
	[SR_MATMUL] = rule_matmul, [SR_CONV] = rule_conv,
	[SR_ATTENTION] = rule_attention, [SR_NORM] = rule_norm,
	[SR_BATCHNORM] = rule_batchnorm, [SR_SOFTMAX] = rule_softmax,
	[SR_POOL] = rule_pool, [SR_GLOBAL_POOL] = rule_global_pool,
	[SR_UPSAMPLE] = rule_upsample, [SR_REDUCE] = rule_reduce,
	[SR_CROSS_ENTROPY] = rule_cross_entropy, [SR_MSE] = rule_mse,
	[SR_EMBEDDING] = rule_embedding, [SR_RESHAPE] = rule_reshape,
	[SR_FLATTEN] = rule_flatten, [SR_TRANSPOSE] = rule_transpose,
	[SR_PERMUTE] = rule_permute, [SR_SLICE] = rule_slice,
	[SR_SPLIT] = rule_split, [SR_CONCAT] = rule_concat,
	[SR_CUSTOM] = rule_custom,
	[SR_CLAMP] = rule_clamp, [SR_GATHER] = rule_gather,
	[SR_INDEX_SELECT] = rule_index_select, [SR_TOPK] = rule_topk,
	[SR_SCATTER_ADD] = rule_scatter_add,
	[SR_GROUPNORM] = rule_groupnorm, [SR_EXPAND] = rule_expand,
};

/* ---- FLOPs */

/* Forward FLOPs per the op's row; false on overflow. */
static bool
count_flops(Ctx *c, int64_t *f)
{
	const OpInfo *info = &ir_optab[c->op->kind];
	const Tensor *out = &c->g->t[c->op->out[0]];
	const Tensor *x = c->op->nin ? in(c, 0) : NULL;
	int64_t k = c->op->p->k[0];

	*f = info->flops_k;
	switch (info->flops) {
	case FL_ZERO:
		*f = 0;
		return true;
	case FL_IN:
		return mul64(f, ir_numel(x));
	case FL_OUT:
		return mul64(f, ir_numel(out));
	case FL_MATMUL:         /* 2 M N K batch = 2 n(out) K */
		return mul64(f, 2) && mul64(f, ir_numel(out)) &&
		       mul64(f, x->shape[x->ndim - 1]);
	case FL_CONV: {         /* 2 N O *S' (C/groups) *K = 2 n(out) n(w)/O */
		const Tensor *w = in(c, 1);
		if (!mul64(f, 2) || !mul64(f, ir_numel(out)))
			return false;
		for (int i = 1; i < w->ndim; i++)
			if (!mul64(f, w->shape[i]))
				return false;
		return true;
	}
	case FL_ATTENTION:      /* 4 B H S T Dh = 4 n(q) T */
		if (!(mul64(f, 4) && mul64(f, ir_numel(x)) && mul64(f, in(c, 1)->shape[2])))
			return false;
		if (c->op->p->causal)
			*f /= 2;
		{       /* + n(scores) for a mask, + 2 n(scores) for dropout */
			int64_t sc = ir_numel(x) / x->shape[3] * in(c, 1)->shape[2], m = 0;
			m += c->op->nin == 4 ? 1 : 0;
			m += c->op->nextra == 2 ? 2 : 0;
			return !m || (mul64(&sc, m) && !__builtin_add_overflow(*f, sc, f));
		}
	case FL_POOL:
		return mul64(f, ir_numel(out)) && mul64(f, c->op->p->k[0]) &&
		       mul64(f, c->op->p->k[1]);
	case FL_CUSTOM:
		*f = c->op->p->custom->flops;
		return true;
	case FL_TOPK: {
		int64_t lg = 0;
		while (lg < 63 && ((int64_t)1 << lg) < k + 1)
			lg++;
		return mul64(f, ir_numel(x)) && mul64(f, lg);
	}
	case FL_LAST:
		return mul64(f, ir_numel(in(c, c->op->nin - 1)));
	}
	return false;
}

/* ---- driver */

/* A param's or input's declared type: checks sizes, sets needs_grad. */
static int
infer_decl(Graph *g, int t, Diag *d)
{
	Tensor *x = &g->t[t];

	if (x->ndim < 0 || x->dtype == DT_NONE)
		return 0;
	for (int i = 0; i < x->ndim; i++)
		if (x->shape[i] < 1) {
			diag_error(d, x->loc, "'%s' %s has a dimension less than 1",
			           x->id, shp(x));
			x->ndim = -1;
			return 1;
		}
	if (!size_tensor(x)) {
		diag_error(d, x->loc, "'%s' %s %s is larger than 2^62 bytes", x->id,
		           dtype_name(x->dtype), shp(x));
		x->ndim = -1;
		return 1;
	}
	x->needs_grad = x->kind == TK_PARAM && dtype_is_float(x->dtype) && !x->frozen;
	return 0;
}


/* Whether an input has no type; types declared inputs not yet sized. */
static bool
poisoned(Ctx *c)
{
	for (int i = 0; i < c->op->nin; i++)
		if ((in(c, i)->kind == TK_INPUT || in(c, i)->kind == TK_PARAM) &&
		    ir_numel(in(c, i)) == 0)
			infer_decl(c->g, c->op->in[i], c->d);
	for (int i = 0; i < c->op->nin; i++)
		if (in(c, i)->ndim < 0)
			return true;
	return false;
}

/* Arity and the float-only rule, before the op's own rule. */
static int
check_args(Ctx *c)
{
	const OpInfo *info = &ir_optab[c->op->kind];
	int n = c->op->nin, lo = info->min_args, hi = info->max_args;

	if (c->op->kind == OP_CUSTOM) {
		ir_assert(c->op->p->custom);
		lo = hi = c->op->p->custom->nargs;
	}
	if (n < lo || (hi >= 0 && n > hi)) {
		if (lo == hi)
			return err(c, "takes %d argument%s, not %d", lo,
			           lo == 1 ? "" : "s", n);
		return err(c, "takes at least %d argument%s, not %d", lo,
		           lo == 1 ? "" : "s", n);
	}
	if (!info->float_in)
		return 0;
	for (int i = 0; i < n; i++)
		if (!dtype_is_float(in(c, i)->dtype))
			return err(c, "expects floating-point tensors, not %s",
			           dtype_name(in(c, i)->dtype));
	return 0;
}

static void
poison_outputs(Ctx *c)
{
	for (int i = 0; i < c->op->nout; i++) {
		c->g->t[c->op->out[i]].ndim = -1;
		c->g->t[c->op->out[i]].dtype = DT_NONE;
	}
	for (int i = 0; i < c->op->nextra; i++) {
		c->g->t[ir_extra(c->op, i)].ndim = -1;
		c->g->t[ir_extra(c->op, i)].dtype = DT_NONE;
	}
}

/* needs_grad of outputs, view_of of views. */
static void
mark_outputs(Ctx *c)
{
	bool grad = false;

	for (int i = 0; i < c->op->nin; i++)
		grad |= in(c, i)->needs_grad;
	for (int i = 0; i < c->op->nout; i++) {
		Tensor *t = &c->g->t[c->op->out[i]];
		t->needs_grad = grad && dtype_is_float(t->dtype);
		t->view_of = ir_optab[c->op->kind].is_view ? c->op->in[0] : -1;
	}
	for (int i = 0; i < c->op->nextra; i++)
		c->g->t[ir_extra(c->op, i)].needs_grad = false;
}

int
shape_infer_op(Graph *g, int o, Diag *d)
{
	Ctx c = {g, &g->op[o], d};
	int64_t f;

	ir_assert(c.op->nout >= 1 && c.op->kind >= 0 && c.op->kind < OP_COUNT);
	if (poisoned(&c)) {
		poison_outputs(&c);
		return -1;
	}
	if (check_args(&c) || rules[ir_optab[c.op->kind].shape](&c)) {
		poison_outputs(&c);
		return 1;
	}
	if (!count_flops(&c, &f)) {
		poison_outputs(&c);
		return err(&c, "FLOP count overflows 64 bits");
	}
	c.op->flops = f;
	mark_outputs(&c);
	return 0;
}

int
shape_infer(Graph *g, Diag *d)
{
	int before = d->nerrors;

	for (int t = 0; t < g->nt; t++)
		if (g->t[t].kind == TK_INPUT || g->t[t].kind == TK_PARAM)
			infer_decl(g, t, d);
	for (int o = 0; o < g->nop && !diag_full(d); o++)
		shape_infer_op(g, o, d);
	return d->nerrors - before;
}
