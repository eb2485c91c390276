/* frontend/onnx/import.c -- reads an ONNX model and writes it as .net text.
 *
 * The file is read up to its cap (--max-input) and unpacked by protobuf-c
 * (onnx_subset.proto) within an allocation budget; its counts, names and
 * dims are checked against the caps (door.c), then the rest (types, node
 * order, every input defined); its graph inputs are sorted into data
 * inputs, parameters and BatchNorm buffers, each node is translated by
 * ops.c, and the training loss is added. The text is the .net program the
 * rest of remat analyzes; the driver writes it as is for --emit-net. */
#include <errno.h>
#include <regex.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* Writes s to f with control bytes as '?', as esc_line, but without an
 * allocation: ox_fail may report that memory ran out. A name's newline
 * must not start a line of its own in the message. */
static void
put_clean(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < ' ' || *s == 0x7f ? '?' : *s, f);
}

const char *
ox_clean(Imp *I, const char *s)
{
	return s ? esc_line(I->a, s) : "";
}

_Noreturn void
ox_fail(Imp *I, const char *fmt, ...)
{
	enum { MSG_MAX = 400 };         /* as the .net diagnostics (docs/limits.md) */
	char msg[MSG_MAX + 1];
	va_list ap;
	int k = 0;

	if (I->cur)
		k = snprintf(msg, sizeof msg, "node '%.160s' (%.64s): ",
		             I->cur->name ? I->cur->name : "",
		             I->cur->op_type ? I->cur->op_type : "?");
	va_start(ap, fmt);
	if (k >= 0 && k < MSG_MAX &&
	    vsnprintf(msg + k, sizeof msg - (size_t)k, fmt, ap) > MSG_MAX - k)
		memcpy(msg + MSG_MAX - 3, "...", 4);
	va_end(ap);
	put_clean(I->err, I->file);
	fputs(": error: ", I->err);
	put_clean(I->err, msg);
	fputc('\n', I->err);
	longjmp(I->fail, 1);
}

void
ox_printf(Buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!b->s)
		b->s = xmalloc(b->cap = 4096);
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->n, b->cap - b->n, fmt, ap);
		va_end(ap);
		if ((size_t)n < b->cap - b->n)
			break;
		b->cap = 2 * b->cap + (size_t)n + 256;
		b->s = xrealloc(b->s, b->cap);
	}
	b->n += (size_t)n;
}

size_t
ox_hash(const char *s, size_t n)
{
	size_t h = 5381;
	for (size_t i = 0; i < n; i++)
		h = h * 33 + (unsigned char)s[i];
	return h;
}

static size_t
hash(const char *s)
{
	return ox_hash(s, strlen(s));
}

bool
ox_reserved(const char *s)
{
	static const char *const reserved[] = {"batch", "dim", "input", "param",
		"def", "return", "repeat", "op", "train", "output", "grad", "f64",
		"f32", "bf16", "f16", "f8e4m3", "f8e5m2", "i64", "i32", "i8", "u8",
		"bool", "true", "false", NULL};
	for (int i = 0; reserved[i]; i++)
		if (!strcmp(s, reserved[i]))
			return true;
	return false;
}

Val *
ox_lookup(Imp *I, const char *name)
{
	if (!I->cap)
		return NULL;
	for (size_t h = hash(name) & (I->cap - 1); I->tab[h]; h = (h + 1) & (I->cap - 1))
		if (!strcmp(I->tab[h]->name, name))
			return I->tab[h];
	return NULL;
}

/* A new value named name; a name defined twice is an error. */
Val *
ox_new(Imp *I, const char *name)
{
	size_t h;
	Val *v;

	if (!*name)
		ox_fail(I, "a value has an empty name");
	if (ox_lookup(I, name))
		ox_fail(I, "value '%s' is defined twice", name);
	if (2 * (I->n + 1) > I->cap) {
		Val **old = I->tab;
		size_t oc = I->cap;
		I->cap = oc ? 2 * oc : 1024;
		I->tab = ar_alloc(I->a, I->cap * sizeof *I->tab);
		for (size_t i = 0; i < oc; i++)
			if (old[i]) {
				for (h = hash(old[i]->name) & (I->cap - 1); I->tab[h]; h = (h + 1) & (I->cap - 1))
					;
				I->tab[h] = old[i];
			}
	}
	v = ar_alloc(I->a, sizeof *v);
	v->name = name;
	v->dt = 1;
	for (h = hash(name) & (I->cap - 1); I->tab[h]; h = (h + 1) & (I->cap - 1))
		;
	I->tab[h] = v;
	I->n++;
	return v;
}

/* No .net name may be a keyword or a dtype. */
static bool
reserved(void *ctx, const char *s)
{
	(void)ctx;
	return ox_reserved(s);
}

/* A fresh .net identifier made from an ONNX name: "/layer1/layer1.0/conv1/
 * Conv_output_0" -> "layer1_layer1_0_conv1_Conv"; "_2", "_3" on clashes. */
const char *
ox_netname(Imp *I, const char *want)
{
	size_t n = strlen(want), j = 0;
	char *s = ar_alloc(I->a, n + 24);
	const char *t;

	if (n > 9 && !strcmp(want + n - 9, "_output_0"))
		n -= 9;
	for (size_t i = 0; i < n; i++) {
		char c = want[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '_';
		if (!ok)
			c = '_';
		if (c == '_' && (j == 0 || s[j - 1] == '_'))
			continue;
		s[j++] = c;
	}
	while (j && s[j - 1] == '_')
		j--;
	if (j == 0 || (s[0] >= '0' && s[0] <= '9')) {
		memmove(s + 1, s, j++);
		s[0] = 't';
	}
	s[j] = 0;
	t = ox_names_fresh(&I->used, I->a, s, reserved, NULL);
	ox_names_add(&I->used, t);
	return t;
}

const char *
ox_dtype(Imp *I, int dt)
{
	switch (dt) {
	case 1: return "f32";
	case 2: return "u8";
	case 3: return "i8";
	case 6: return "i32";
	case 7: return "i64";
	case 9: return "bool";
	case 10: return "f16";
	case 11: return "f64";
	case 16: return "bf16";
	}
	ox_fail(I, "data type %d is not supported (remat has f64 f32 bf16 f16 "
	        "i64 i32 i8 u8 bool)", dt);
}

/* Fails when v's dims multiply past 2^50 elements. */
static void
check_size(Imp *I, const Val *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->ndim; i++)
		if (!ck_mul(n, v->dim[i], &n) || n > OX_MAXELEMS)
			ox_fail(I, "'%s' has more than 2^50 elements", v->name);
}

/* The elements of v: its dims passed set_shape or check_size, so the
 * product is at most 2^50. */
int64_t
ox_numel(const Val *v)
{
	int64_t n = 1;
	for (int i = 0; i < v->ndim; i++)
		n *= v->dim[i];
	return n;
}

void
ox_shape(Buf *b, const Val *v)
{
	ox_printf(b, "[");
	for (int i = 0; i < v->ndim; i++)
		ox_printf(b, "%s%lld", i ? ", " : "", (long long)v->dim[i]);
	ox_printf(b, "]");
}

/* A -D value for the symbolic dim name, or -1. */
static int64_t
dim_override(Imp *I, const char *name)
{
	for (int i = 0; i < I->net->ndefs; i++)
		if (!strcmp(I->net->defs[i].name, name))
			return I->net->defs[i].value;
	return -1;
}

/* The .net dim for symbolic dim `name` (value from -D), declared on first
 * use: `batch` when it is a data input's first axis. The -D entry is renamed
 * to the .net name, so that instantiation applies it too. */
static const char *
symbol(Imp *I, const char *name, int64_t value, bool first_axis)
{
	const char *net;

	for (int i = 0; i < I->nsym; i++)
		if (!strcmp(I->sym[i].onnx, name))
			return I->sym[i].net;
	if (I->nsym == OX_MAXSYM)
		ox_fail(I, "more than %d symbolic dimensions", OX_MAXSYM);
	net = ox_netname(I, name);
	I->sym[I->nsym].onnx = name;
	I->sym[I->nsym++].net = net;
	ox_printf(&I->head, "%s %s = %lld;   # ONNX dim_param '%s'\n",
	          first_axis && !I->has_batch ? "batch" : "dim", net, (long long)value,
	          ox_clean(I, name));
	if (first_axis && !I->has_batch) {
		I->has_batch = true;
		I->batch_sym = I->nsym - 1;
		I->batch_value = value;
	}
	for (int i = 0; i < I->net->ndefs; i++)
		if (!strcmp(I->net->defs[i].name, name))
			I->net->defs[i].name = ar_strdup(I->keep, net);   /* outlives I->a */
	return net;
}

/* Fills v's dtype and shape from a graph input or output's type. */
static void
read_type(Imp *I, Val *v, const Onnx__ValueInfoProto *vi)
{
	const Onnx__TypeProto__Tensor *t;
	const Onnx__TensorShapeProto *s;

	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
		ox_fail(I, "graph value '%s' is not a tensor", vi->name);
	t = vi->type->tensor_type;
	v->dt = t->has_elem_type ? t->elem_type : 0;
	ox_dtype(I, v->dt);
	if (!(s = t->shape))
		ox_fail(I, "graph value '%s' has no shape", vi->name);
	if (s->n_dim > OX_MAXRANK)
		ox_fail(I, "graph value '%s' has %zu axes (at most %d)", vi->name,
		        s->n_dim, OX_MAXRANK);
	v->ndim = (int)s->n_dim;
	for (size_t i = 0; i < s->n_dim; i++) {
		const Onnx__TensorShapeProto__Dimension *d = s->dim[i];
		if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE)
			v->dim[i] = d->dim_value;
		else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM) {
			if ((v->dim[i] = dim_override(I, d->dim_param)) < 0)
				ox_fail(I, "input '%s' has symbolic dimension '%s': give its "
				        "value with -D%s=N", vi->name, d->dim_param, d->dim_param);
			if (!v->sym)
				v->sym = ar_alloc(I->a, OX_MAXRANK * sizeof *v->sym);
			v->sym[i] = symbol(I, d->dim_param, v->dim[i], i == 0);
		}
		else if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE__NOT_SET)
			ox_fail(I, "input '%s' has an unknown dimension %zu", vi->name, i);
		if (v->dim[i] <= 0 || v->dim[i] > OX_MAXDIM)
			ox_fail(I, "input '%s' has dimension %lld out of range", vi->name,
			        (long long)v->dim[i]);
	}
	check_size(I, v);
}

static bool
is_float(int dt)
{
	return dt == 1 || dt == 10 || dt == 11 || dt == 16;
}

/* Which role each graph input plays: BatchNorm running statistics are
 * buffers; initializers and inputs matching --params are parameters;
 * without --params, the first input and every non-float input are data and
 * the other float inputs are parameters (PyTorch lists the model's
 * arguments first, then its parameters). */
static void
classify(Imp *I, regex_t *re)
{
	Onnx__GraphProto *g = I->g;

	for (size_t i = 0; i < g->n_node; i++) {
		Node *n = g->node[i];
		if (n->op_type && !strcmp(n->op_type, "BatchNormalization"))
			for (size_t k = 3; k < n->n_input && k < 5; k++) {
				Val *v = ox_lookup(I, n->input[k]);
				if (!v || v->producer || (v->kind != V_DATA && v->kind != V_PARAM))
					continue;       /* a node's output, or a constant */
				if (!is_float(v->dt))
					ox_fail(I, "BatchNorm statistic '%s' is %s: it must be "
					        "floating point", v->name, ox_dtype(I, v->dt));
				v->kind = V_BUFFER;
			}
	}
	for (size_t i = 0; i < g->n_input; i++) {
		Val *v = ox_lookup(I, g->input[i]->name);
		if (v->kind == V_BUFFER || v->kind == V_PARAM)
			continue;
		if (re)
			v->kind = regexec(re, v->name, 0, NULL, 0) ? V_DATA : V_PARAM;
		else
			v->kind = i > 0 && is_float(v->dt) ? V_PARAM : V_DATA;
		if (v->kind == V_PARAM && !is_float(v->dt))
			ox_fail(I, "parameter '%s' is %s: parameters must be floating "
			        "point (check --params)", v->name, ox_dtype(I, v->dt));
	}
}

static void
declare(Imp *I, Val *v)
{
	if (!v->nuse || v->net || v->kind == V_CONST)
		return;
	/* at most 2^53 bytes each, but four million of them pass 2^63 */
	if (v->kind == V_BUFFER &&
	    (!ck_add(I->buffer_bytes, ox_numel(v) * (v->dt == 11 ? 8 : v->dt == 1 ? 4 : 2),
	             &I->buffer_bytes) || I->buffer_bytes > CK_LIMIT))
		ox_fail(I, "the BatchNorm running statistics pass 2^62 bytes at '%s'", v->name);
	v->net = ox_netname(I, v->name);
	ox_printf(&I->head, "%s %s : %s", v->kind == V_DATA ? "input" : "param",
	          v->net, ox_dtype(I, v->dt));
	ox_printf(&I->head, "[");
	for (int i = 0; i < v->ndim; i++)
		ox_printf(&I->head, "%s%s", i ? ", " : "", v->sym && v->sym[i] ? v->sym[i]
		          : ar_printf(I->a, "%lld", (long long)v->dim[i]));
	ox_printf(&I->head, "]%s;\n", v->kind == V_BUFFER ? " buffer" : "");
}

/* Declares every graph input and initializer in the header. */
static void
declare_inputs(Imp *I)
{
	Onnx__GraphProto *g = I->g;

	for (size_t i = 0; i < g->n_input; i++)
		declare(I, ox_lookup(I, g->input[i]->name));
	for (size_t i = 0; i < g->n_initializer; i++)
		declare(I, ox_lookup(I, g->initializer[i]->name ? g->initializer[i]->name : ""));
}

/* Adds the initializers as parameters (their data is never read). */
static void
read_initializers(Imp *I)
{
	Onnx__GraphProto *g = I->g;

	for (size_t i = 0; i < g->n_initializer; i++) {
		Onnx__TensorProto *t = g->initializer[i];
		Val *v = ox_lookup(I, t->name ? t->name : "");
		if (v) {        /* a graph input's default, or named twice: one type */
			bool same = v->dt == t->data_type && v->ndim == (int)t->n_dims;
			for (size_t k = 0; same && k < t->n_dims; k++)
				same = v->dim[k] == t->dims[k];
			if (!same)
				ox_fail(I, "initializer '%s' differs in type or shape from the "
				        "graph input or initializer of that name", v->name);
		} else {
			v = ox_new(I, t->name ? t->name : "");
		}
		v->ndim = (int)t->n_dims;   /* at most OX_MAXRANK: ox_door */
		v->dt = t->data_type;
		ox_dtype(I, v->dt);
		for (size_t k = 0; k < t->n_dims; k++)
			if ((v->dim[k] = t->dims[k]) <= 0 || v->dim[k] > OX_MAXDIM)
				ox_fail(I, "initializer '%s' has dimension %lld out of range",
				        v->name, (long long)v->dim[k]);
		check_size(I, v);
		v->kind = is_float(v->dt) ? V_PARAM : V_DATA;
		if (!is_float(v->dt) && (t->raw_data.len || t->n_int64_data || t->n_int32_data))
			ox_const_tensor(I, v, t);   /* shape data: folded like a Constant */
	}
}

/* Checks that every node input is defined before the node, counting uses;
 * a value defined later means a cycle (or an unsorted graph). Then lists
 * each value's readers (ascending node indices), so that the pattern
 * matchers find a value's consumer without scanning the graph. */
static void
check_order(Imp *I)
{
	Onnx__GraphProto *g = I->g;

	for (size_t i = 0; i < g->n_node; i++) {
		Node *n = g->node[i];
		if (!n->op_type || !*n->op_type)
			ox_fail(I, "node %zu has no op type", i);
		/* every op reads its result as output 0; the fused patterns look
		 * at nodes ox_node never visits */
		I->cur = n;
		if (!n->n_output || !*n->output[0])
			ox_fail(I, "the node's first output has no name");
	}
	I->cur = NULL;
	for (size_t i = 0; i < g->n_node; i++) {
		Node *n = g->node[i];
		I->cur = n;
		for (size_t k = 0; k < n->n_input; k++) {
			Val *v;
			if (!*n->input[k])
				continue;
			if (!(v = ox_lookup(I, n->input[k]))) {
				for (size_t j = i + 1; j < g->n_node; j++)
					for (size_t o = 0; o < g->node[j]->n_output; o++)
						if (!strcmp(g->node[j]->output[o], n->input[k]))
							ox_fail(I, "input '%s' is made by a later node '%s': "
							        "the graph has a cycle or is not in "
							        "topological order", n->input[k],
							        g->node[j]->name ? g->node[j]->name : "");
				ox_fail(I, "input '%s' is not defined (not a graph input, "
				        "initializer or node output)", n->input[k]);
			}
			v->nuse++;      /* at most 2^22 nodes x 2^16 inputs: an int */
		}
		for (size_t o = 0; o < n->n_output; o++)
			if (*n->output[o])
				ox_new(I, n->output[o])->producer = n;
	}
	I->cur = NULL;
	for (size_t i = 0; i < g->n_node; i++) {
		Node *n = g->node[i];
		for (size_t k = 0; k < n->n_input; k++) {
			Val *v = *n->input[k] ? ox_lookup(I, n->input[k]) : NULL;
			if (!v)
				continue;
			if (!v->users)
				v->users = ar_array(I->a, (size_t)v->nuse, sizeof *v->users);
			v->users[v->nusers++] = (int)i;
		}
	}
	for (size_t i = 0; i < g->n_output; i++)
		if (!ox_lookup(I, g->output[i]->name))
			ox_fail(I, "graph output '%s' is not defined", g->output[i]->name);
		else
			ox_lookup(I, g->output[i]->name)->nuse++;
}

/* The labels' shape: out's first ndim axes; the first is the batch dim
 * when the model declares one of that size (it scales with -D). */
static void
labels_shape(Imp *I, const Val *out, int ndim)
{
	ox_printf(&I->head, "[");
	for (int i = 0; i < ndim; i++)
		if (i == 0 && I->has_batch && out->dim[0] == I->batch_value)
			ox_printf(&I->head, "%s", I->sym[I->batch_sym].net);
		else
			ox_printf(&I->head, "%s%lld", i ? ", " : "", (long long)out->dim[i]);
	ox_printf(&I->head, "];\n");
}

/* The loss named by --loss, or the outputs in inference. */
static void
add_outputs(Imp *I)
{
	Onnx__GraphProto *g = I->g;
	const char *kind = I->opt->loss, *colon, *loss;
	char *k;
	Val *out = NULL;

	if (I->net->infer || !kind) {
		if (!I->net->infer) {
			Val *v = ox_lookup(I, g->output[0]->name);
			if (v->ndim != 0)
				ox_fail(I, "output '%s' is not a scalar loss: add one with "
				        "--loss cross_entropy or --loss mse, or analyze "
				        "inference with --infer", v->name);
		}
		int nout = 0;
		for (size_t i = 0; i < g->n_output; i++) {
			Val *v = ox_lookup(I, g->output[i]->name);
			if (v->kind != V_CONST && v->net)
				ox_printf(&I->body, "output %s;\n", v->net), nout++;
		}
		if (!nout)
			ox_fail(I, "no graph output is a tensor (each is folded to a "
			        "constant): the model computes nothing to analyze");
		return;
	}
	colon = strchr(kind, ':');
	k = ar_strndup(I->a, kind, colon ? (size_t)(colon - kind) : strlen(kind));
	if (strcmp(k, "cross_entropy") && strcmp(k, "mse"))
		ox_fail(I, "--loss: unknown kind '%s' (cross_entropy or mse)", k);
	if (colon)
		out = ox_lookup(I, colon + 1);
	else if (g->n_output == 1)
		out = ox_lookup(I, g->output[0]->name);
	else
		ox_fail(I, "the model has %zu outputs: name one with --loss %s:OUTPUT",
		        g->n_output, k);
	if (!out || !out->net)
		ox_fail(I, "--loss: no tensor output '%s'", colon ? colon + 1 : "");
	/* named as the model's values are: a model may have its own "labels"
	 * or "loss", which then keep their names */
	if (strcmp(k, "mse") && (out->ndim < 1 || !is_float(out->dt)))
		ox_fail(I, "--loss cross_entropy needs float logits [..., C]");
	if (!strcmp(k, "mse") && !is_float(out->dt))
		ox_fail(I, "--loss mse needs a floating-point output, and '%s' is %s",
		        out->name, ox_dtype(I, out->dt));
	I->labels = ox_netname(I, "labels");
	loss = ox_netname(I, "loss");
	if (!strcmp(k, "mse")) {
		ox_printf(&I->head, "input %s : %s", I->labels, ox_dtype(I, out->dt));
		labels_shape(I, out, out->ndim);
		ox_printf(&I->body, "%s = mse_loss(%s, %s);\n", loss, out->net, I->labels);
	} else {
		ox_printf(&I->head, "input %s : i64", I->labels);
		labels_shape(I, out, out->ndim - 1);
		ox_printf(&I->body, "%s = cross_entropy(%s, %s);\n", loss, out->net, I->labels);
	}
	ox_printf(&I->body, "output %s;\n", loss);
}

/* Frees --params' compiled expression once: after classify, or in
 * imp_free when a failure jumped out before. */
static void
params_re_free(Imp *I)
{
	if (I->params_re_live)
		regfree(&I->params_re);
	I->params_re_live = false;
}

static void
setup(Imp *I, Onnx__ModelProto *m)
{
	Onnx__GraphProto *g = m->graph;
	int rc;

	ox_door(I, m);
	if (!g)
		ox_fail(I, "the model has no graph");
	if (g->n_output == 0)
		ox_fail(I, "the graph has no outputs");
	for (size_t i = 0; i < m->n_opset_import; i++) {
		const char *dom = m->opset_import[i]->domain;
		if (dom && *dom && strcmp(dom, "ai.onnx"))
			continue;
		if (m->opset_import[i]->version < 7)
			ox_fail(I, "opset %lld is too old (7 or later)",
			        (long long)m->opset_import[i]->version);
	}
	I->g = g;
	for (size_t i = 0; i < g->n_input; i++)
		if (!g->input[i]->name || !*g->input[i]->name)
			ox_fail(I, "graph input %zu has no name", i);
	for (size_t i = 0; i < g->n_output; i++)
		if (!g->output[i]->name || !*g->output[i]->name)
			ox_fail(I, "graph output %zu has no name", i);
	for (size_t i = 0; i < g->n_initializer; i++)
		if (!g->initializer[i]->name || !*g->initializer[i]->name)
			ox_fail(I, "initializer %zu has no name", i);
	for (size_t i = 0; i < g->n_input; i++)
		read_type(I, ox_new(I, g->input[i]->name ? g->input[i]->name : ""), g->input[i]);
	read_initializers(I);
	check_order(I);
	if (I->opt->params && (rc = regcomp(&I->params_re, I->opt->params, REG_EXTENDED | REG_NOSUB))) {
		char msg[128];
		regerror(rc, &I->params_re, msg, sizeof msg);
		ox_fail(I, "--params: bad regular expression '%s': %s", I->opt->params, msg);
	}
	I->params_re_live = I->opt->params != NULL;
	classify(I, I->opt->params ? &I->params_re : NULL);
	params_re_free(I);
	declare_inputs(I);
}

/* The finished program: header comment, declarations, custom ops, body. */
static void
assemble(Imp *I, Onnx__ModelProto *m, Buf *out)
{
	ox_printf(out, "# %s -- imported from ONNX by remat", ox_clean(I, I->file));
	if (m->producer_name)
		ox_printf(out, " (producer %s %s)", ox_clean(I, m->producer_name),
		          ox_clean(I, m->producer_version));
	ox_printf(out, "\n# %zu nodes; %d BatchNorm in training mode, %d in "
	          "inference mode; %d Dropout.\n", I->g->n_node, I->nbn_train,
	          I->nbn_infer, I->ndropout);
	if (I->buffer_bytes)
		ox_printf(out, "# BatchNorm running statistics: %lld bytes, declared "
		          "`buffer` (persistent; no grad, not parameters).\n",
		          (long long)I->buffer_bytes);
	ox_printf(out, "\n%.*s\n%.*s%s%.*s%.*s", (int)I->head.n, I->head.s,
	          (int)I->ops.n, I->ops.s, I->ops.n ? "\n" : "", (int)I->defs.n,
	          I->defs.s, (int)I->body.n, I->body.s);
}

static void
note_inference(Imp *I)
{
	if (I->nbn_infer || (!I->nbn_train && !I->ndropout && I->g->n_initializer))
		fprintf(I->err, "remat: note: %s looks like an inference export (%s); "
		        "export with training=torch.onnx.TrainingMode.TRAINING to "
		        "keep BatchNorm and Dropout as trained\n", I->file,
		        I->nbn_infer ? "BatchNorm in inference mode"
		                     : "weights as initializers, no BatchNorm or Dropout");
}

/* protobuf-c's allocations, within a budget: what the file says is
 * allocated before ox_door can look at it, and two bytes of file make an
 * empty NodeProto of about a hundred. */
typedef struct Budget {
	size_t used, max;
	bool over;              /* an allocation was refused */
} Budget;

static void *
budget_alloc(void *data, size_t n)
{
	Budget *b = data;

	if (n > b->max - b->used) {
		b->over = true;
		return NULL;    /* protobuf-c then fails the unpack, freeing all */
	}
	b->used += n;
	return malloc(n);
}

static void
budget_free(void *data, void *p)
{
	(void)data;
	free(p);
}

/* Frees what the import holds outside the caller's arena: the unpacked
 * model, the importer's own arena, names and buffers, and the text. */
static void
imp_free(Imp *I, Onnx__ModelProto *m, ProtobufCAllocator *pa, Buf *text)
{
	onnx__model_proto__free_unpacked(m, pa);
	params_re_free(I);
	ar_free(I->a);
	ox_names_free(&I->used);
	free(I->head.s), free(I->ops.s), free(I->defs.s), free(I->body.s), free(text->s);
	free(I->custom_decl), free(I->custom_kind), free(I->custom_name);
}

int
onnx_translate(const char *name, const uint8_t *data, size_t len,
               const OnnxOptions *o, NetOptions *net, Arena *a,
               Source *out)
{
	Onnx__ModelProto *volatile m;
	/* the importer's tables die with it, before the analysis of its text */
	Imp I = {.file = name, .a = ar_child(a), .keep = a, .opt = o, .net = net,
	         .err = o->err ? o->err : stderr};
	Buf text = {0};
	/* the model's data once (raw_data is copied), its structures twice
	 * over, and room for a small model's (tests/onnx's take 2 MiB at most) */
	Budget bud = {0, len <= SIZE_MAX / 4 ? 2 * len + OX_UNPACK_SLACK : SIZE_MAX, false};
	ProtobufCAllocator pa = {budget_alloc, budget_free, &bud};

	m = onnx__model_proto__unpack(&pa, len, data);
	if (!m) {
		if (bud.over)
			fprintf(I.err, "%s: error: the model unpacks to more than %zu "
			        "bytes (twice the file's size and %d MiB)\n", name, bud.max,
			        OX_UNPACK_SLACK >> 20);
		else
			fprintf(I.err, "%s: error: not a valid ONNX model (the protobuf "
			        "data is truncated or malformed)\n", name);
		return 1;
	}
	if (setjmp(I.fail)) {
		imp_free(&I, m, &pa, &text);
		return 1;
	}
	setup(&I, m);
	I.skip = ar_alloc(a, I.g->n_node + 1);
	/* Constants first: they depend on nothing, and the pattern matchers
	 * look at constants that the exporter placed after their first use */
	for (size_t i = 0; i < I.g->n_node; i++)
		if (!strcmp(I.g->node[i]->op_type, "Constant")) {
			size_t b = I.body.n;
			ox_node(&I, (int)i);
			ox_blocks_note(&I, (int)i, b, I.body.n);
			I.skip[i] = true;
		}
	for (size_t i = 0; i < I.g->n_node; i++)
		if (!I.skip[i]) {
			size_t b = I.body.n;
			ox_node(&I, (int)i);
			ox_blocks_note(&I, (int)i, b, I.body.n);
		}
	I.cur = NULL;
	add_outputs(&I);
	ox_blocks(&I);
	note_inference(&I);
	assemble(&I, m, &text);
	/* named as --emit-net's file, so that reports on the import and on
	 * that file are the same bytes ("<stdin>" for "-": the name remat
	 * gives the text when it is piped back in) */
	out->name = !o->emit_net ? ar_printf(a, "%s.net", name)
	            : strcmp(o->emit_net, "-") ? o->emit_net : "<stdin>";
	out->text = ar_strndup(a, text.s, text.n);
	out->len = text.n;
	out->reread = false;    /* the text is generated, not the file */
	imp_free(&I, m, &pa, &text);
	return 0;
}

int
onnx_import(const char *path, const OnnxOptions *o, NetOptions *net,
            Arena *a, Source *out)
{
	size_t max = o->max_input ? o->max_input : READ_MAX_DEFAULT, len;
	FILE *f = fopen(path, "rb");
	char *buf;
	int rc;

	if (!f) {
		fprintf(stderr, "remat: cannot open '%s': %s\n", path, strerror(errno));
		return 1;
	}
	buf = read_all(f, max, &len);
	if (!buf) {
		read_fail(path, max);
		fclose(f);
		return 1;
	}
	fclose(f);
	rc = onnx_translate(path, (const uint8_t *)buf, len, o, net, a, out);
	free(buf);
	return rc;
}
