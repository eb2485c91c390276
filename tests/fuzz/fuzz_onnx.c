/* tests/fuzz/fuzz_onnx.c -- libFuzzer target: ONNX models through the
 * importer (protobuf-c unpacking, the door's bounds, shape inference and
 * folding, defs, the .net text), then that text through the .net frontend
 * (parse, instantiate, shapes). Must never crash, hang or overrun; errors
 * are expected. Also linked into tests/fuzz/replay_onnx (make check).
 *
 * Byte mutations of a protobuf mostly make it fail to unpack, and never
 * reach a Gather of fifteen axes or an Expand to -5 (issue 29: 980k of
 * them found neither). So the mutator works on the model's structure: it
 * unpacks the input with protobuf-c, changes one to four things a model
 * holds -- an op type, a node added, copied, dropped or moved, an input
 * rewired, an attribute or a tensor dim or value set to an edge value (0,
 * -1, 2^31, 2^40 + 1, 2^63 - 1, ...), a graph input's shape, a node's name
 * (the block key, control bytes) -- and packs it again; a crossover splices
 * one model's nodes into another. Byte mutation stays for one input in
 * eight, and for inputs that do not unpack.
 *
 * What the importer writes must be .net: text that does not parse is a
 * bug (abort). Text that parses but fails to instantiate is a number the
 * importer let through unchecked: with FUZZ_ONNX_STRICT set in the
 * environment that aborts too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph.h"
#include "frontend.h"
#include "onnx.h"
#include "onnx_subset.pb-c.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2,
                                 size_t s2, uint8_t *out, size_t max, unsigned int seed);

/* Runs the .net text through the frontend; returns 1 on a parse error, 2
 * on an instantiate or shape error, 0 when it goes through. Its messages
 * go to msg (rewound each time). */
static int
check_net(const Source *src, FILE *msg)
{
	NetOptions o = {.max_tensors = 200000, .infer = true, .infer_set = true};
	Arena a;
	Diag d;
	Graph g;
	Program *p;
	int rc = 0;

	rewind(msg);
	ar_init(&a);
	diag_init(&d, src, msg);
	if (!(p = net_parse(src, &a, &d)))
		rc = 1;
	else {
		ir_graph_init(&g, &a, src->name);
		if (net_instantiate(p, &o, &g, &d) || shape_infer(&g, &d))
			rc = 2;
	}
	ar_free(&a);
	return rc;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t n)
{
	DimOverride defs[2] = {{"batch", 2}, {"seq", 8}};   /* renamed by the import */
	NetOptions net = {.defs = defs, .ndefs = 2, .infer = true, .infer_set = true};
	OnnxOptions o = {0};
	static FILE *null_err, *msg;
	Source out;
	Arena a;
	int rc;

	/* the training setups too, picked by the length: the loss and its
	 * labels are added to the text */
	if (n % 3) {
		net.infer = false;
		o.loss = n % 3 == 1 ? "cross_entropy" : "mse";
	}
	if (!null_err)
		null_err = fopen("/dev/null", "w");
	o.err = null_err;       /* the importer's messages: expected, many */
	ar_init(&a);
	rc = onnx_translate("fuzz.onnx", data, n, &o, &net, &a, &out);
	if (!msg)
		msg = tmpfile();
	if (rc == 0) {
		int net_rc = check_net(&out, msg);
		if (net_rc == 1 || (net_rc == 2 && getenv("FUZZ_ONNX_STRICT"))) {
			char buf[2000];
			size_t k = (size_t)ftell(msg);
			rewind(msg);
			k = fread(buf, 1, k < sizeof buf ? k : sizeof buf, msg);
			fprintf(stderr, "fuzz_onnx: the import wrote .net that %s:\n%.*s\n"
			        "fuzz_onnx: %.*s\n", net_rc == 1 ? "does not parse" :
			        "fails to instantiate", (int)(out.len < 4000 ? out.len : 4000),
			        out.text, (int)k, buf);
			abort();
		}
	}
	ar_free(&a);
	return 0;
}

/* ---------------------------------------------------------------- mutator */

/* Every allocation of one mutation, freed together: the unpacked model's
 * (through protobuf-c's allocator) and the mutator's own. */
typedef struct Pool {
	void **p;
	size_t n, cap;
} Pool;

static void *
pool_alloc(void *data, size_t n)
{
	Pool *pl = data;
	void *p = calloc(1, n ? n : 1);

	if (!p)
		return NULL;
	if (pl->n == pl->cap) {
		pl->cap = pl->cap ? 2 * pl->cap : 256;
		pl->p = realloc(pl->p, pl->cap * sizeof *pl->p);
	}
	return pl->p[pl->n++] = p;
}

static void
pool_nofree(void *data, void *p)
{
	(void)data, (void)p;    /* all go in pool_free */
}

static void
pool_free(Pool *pl)
{
	for (size_t i = 0; i < pl->n; i++)
		free(pl->p[i]);
	free(pl->p);
}

typedef struct Mut {
	Pool pool;
	ProtobufCAllocator pa;
	uint64_t rng;
	Onnx__ModelProto *m;
	Onnx__GraphProto *g;
} Mut;

static uint64_t
rnd(Mut *u, uint64_t n)
{
	u->rng ^= u->rng << 13;
	u->rng ^= u->rng >> 7;
	u->rng ^= u->rng << 17;
	return n ? u->rng % n : 0;
}

static void *
alloc(Mut *u, size_t n)
{
	return pool_alloc(&u->pool, n);
}

static char *
str(Mut *u, const char *s)
{
	char *t = alloc(u, strlen(s) + 1);
	return strcpy(t, s);
}

/* Numbers at the edges of what an importer checks. */
static int64_t
edge(Mut *u)
{
	static const int64_t v[] = {
		0, 1, -1, 2, 3, 4, 7, 8, 9, -2, 16, 64, 65, 255, 256, 1 << 20,
		(1 << 20) + 1, INT32_MAX, (int64_t)INT32_MAX + 1, (int64_t)1 << 32,
		((int64_t)1 << 32) + 1, (int64_t)1 << 40, ((int64_t)1 << 40) + 1,
		(int64_t)1 << 41, (int64_t)1 << 50, (int64_t)1 << 62, INT64_MAX,
		INT64_MIN, INT64_MIN + 1, -((int64_t)1 << 40), -5,
	};
	return rnd(u, 4) ? (int64_t)rnd(u, 10) - 2 : v[rnd(u, sizeof v / sizeof v[0])];
}

static const char *const ops[] = {
	"Add", "Sub", "Mul", "Div", "Pow", "Equal", "Less", "Greater", "And", "Or",
	"Max", "Min", "Relu", "Sigmoid", "Tanh", "Sqrt", "Exp", "Log", "Neg",
	"Gelu", "Not", "Erf", "Softmax", "LogSoftmax", "Conv", "MaxPool",
	"AveragePool", "GlobalAveragePool", "MatMul", "Einsum", "Gemm", "BatchNormalization",
	"LayerNormalization", "Dropout", "Identity", "Cast", "Squeeze", "Unsqueeze",
	"Reshape", "Flatten", "Transpose", "Concat", "Split", "Slice", "Gather",
	"Shape", "Constant", "ConstantOfShape", "Range", "Trilu", "Where", "Expand",
	"Pad", "Clip", "ReduceMean", "HardSwish", "HardSigmoid", "ReduceSum",
	"Mod", "ScatterND", "Tile", "Floor", "Xor", "Size", "RandomUniformLike",
};

static const char *const attr_names[] = {
	"axis", "axes", "perm", "pads", "strides", "dilations", "group",
	"kernel_shape", "to", "keepdims", "allowzero", "upper", "transA",
	"transB", "training_mode", "ceil_mode", "start", "end", "ratio", "alpha",
	"beta", "value", "value_int", "value_ints", "value_float", "auto_pad",
	"noop_with_empty_axes", "fmod", "reduction", "steps", "dtype",
};

/* Appends x to the array *a of *n pointers (pool memory). */
static void
push(Mut *u, void ***a, size_t *n, void *x)
{
	void **b = alloc(u, (*n + 1) * sizeof *b);

	if (*n)
		memcpy(b, *a, *n * sizeof *b);
	b[(*n)++] = x;
	*a = b;
}

/* A value name of the graph, or a made-up one now and then. */
static char *
any_value(Mut *u)
{
	Onnx__GraphProto *g = u->g;
	size_t total = g->n_input + g->n_initializer;

	for (size_t i = 0; i < g->n_node; i++)
		total += g->node[i]->n_output;
	if (!total || !rnd(u, 16))
		return str(u, rnd(u, 2) ? "" : "nowhere");
	size_t k = rnd(u, total);
	if (k < g->n_input)
		return g->input[k]->name ? g->input[k]->name : str(u, "");
	k -= g->n_input;
	if (k < g->n_initializer)
		return g->initializer[k]->name ? g->initializer[k]->name : str(u, "");
	k -= g->n_initializer;
	for (size_t i = 0; i < g->n_node; i++) {
		if (k < g->node[i]->n_output)
			return g->node[i]->output[k];
		k -= g->node[i]->n_output;
	}
	return str(u, "");
}

static int64_t *
ints_copy(Mut *u, const int64_t *v, size_t n, size_t extra)
{
	int64_t *w = alloc(u, (n + extra + 1) * sizeof *w);

	if (n)
		memcpy(w, v, n * sizeof *w);
	return w;
}

/* A tensor's dims, data type or values pushed to the edges. */
static void
mutate_tensor(Mut *u, Onnx__TensorProto *t)
{
	switch (rnd(u, 6)) {
	case 0:         /* one dim */
		if (t->n_dims) {
			t->dims = ints_copy(u, t->dims, t->n_dims, 0);
			t->dims[rnd(u, t->n_dims)] = edge(u);
			break;
		}
		/* fall through */
	case 1:         /* one dim more or less */
		t->dims = ints_copy(u, t->dims, t->n_dims, 1);
		if (rnd(u, 2) || !t->n_dims)
			t->dims[t->n_dims++] = rnd(u, 2) ? 1 : edge(u);
		else
			t->n_dims--;
		break;
	case 2: {
		static const int32_t dts[] = {0, 1, 2, 3, 5, 6, 7, 9, 10, 11, 16, 99, -1};
		t->has_data_type = 1;
		t->data_type = dts[rnd(u, sizeof dts / sizeof dts[0])];
		break;
	}
	case 3:         /* an int64 value */
		if (t->n_int64_data) {
			t->int64_data = ints_copy(u, t->int64_data, t->n_int64_data, 0);
			t->int64_data[rnd(u, t->n_int64_data)] = edge(u);
		} else if (t->raw_data.len >= 8) {
			uint8_t *r = alloc(u, t->raw_data.len);
			int64_t v = edge(u);
			memcpy(r, t->raw_data.data, t->raw_data.len);
			memcpy(r + 8 * rnd(u, t->raw_data.len / 8), &v, 8);
			t->raw_data.data = r;
		}
		break;
	case 4: {       /* int64 values, as many as the dims say (or one off) */
		int64_t n = 1;
		for (size_t i = 0; i < t->n_dims && n <= 64; i++)
			n *= t->dims[i] >= 0 && t->dims[i] <= 64 ? t->dims[i] : 65;
		if (n > 64)
			n = (int64_t)rnd(u, 9);
		n += (int64_t)rnd(u, 3) - 1;
		if (n < 0)
			n = 0;
		t->int64_data = alloc(u, ((size_t)n + 1) * sizeof *t->int64_data);
		for (int64_t i = 0; i < n; i++)
			t->int64_data[i] = rnd(u, 3) ? (int64_t)rnd(u, 6) - 1 : edge(u);
		t->n_int64_data = (size_t)n;
		t->n_float_data = t->n_int32_data = t->n_double_data = 0;
		t->has_raw_data = 0;
		t->raw_data = (ProtobufCBinaryData){0, NULL};
		t->has_data_type = 1;
		t->data_type = 7;
		break;
	}
	default:        /* a float value: NaN, infinity, 0 */
		if (t->n_float_data) {
			static const float fv[] = {0.0f, -0.0f, 1.0f, 0.5f, 2.0f, -1.0f,
				1e30f, -1e30f, __builtin_inff(), __builtin_nanf("")};
			float *f = alloc(u, t->n_float_data * sizeof *f);
			memcpy(f, t->float_data, t->n_float_data * sizeof *f);
			f[rnd(u, t->n_float_data)] = fv[rnd(u, sizeof fv / sizeof fv[0])];
			t->float_data = f;
		}
	}
}

/* A new tensor: a Constant's value or an initializer. */
static Onnx__TensorProto *
new_tensor(Mut *u, const char *name)
{
	Onnx__TensorProto *t = alloc(u, sizeof *t);
	size_t rank = rnd(u, 4), n = 1;
	bool vec = !rnd(u, 2);  /* a shape list or axes: [k] of k up to 10 */

	onnx__tensor_proto__init(t);
	t->name = name ? str(u, name) : NULL;
	t->n_dims = vec ? 1 : rank;
	t->dims = alloc(u, (t->n_dims + 1) * sizeof *t->dims);
	if (vec)
		n = (size_t)(t->dims[0] = (int64_t)rnd(u, 11));
	else
		for (size_t i = 0; i < rank; i++)
			n *= (size_t)(t->dims[i] = (int64_t)rnd(u, 4) + 1);
	t->has_data_type = 1;
	if (vec || rnd(u, 2)) {
		t->data_type = 7;
		t->n_int64_data = n;
		t->int64_data = alloc(u, n * sizeof *t->int64_data);
		for (size_t i = 0; i < n; i++)
			t->int64_data[i] = rnd(u, 4) ? (int64_t)rnd(u, 5) - 1 : edge(u);
	} else {
		t->data_type = 1;
		t->n_float_data = n;
		t->float_data = alloc(u, n * sizeof *t->float_data);
		for (size_t i = 0; i < n; i++)
			t->float_data[i] = (float)rnd(u, 5) - 1.0f;
	}
	if (!rnd(u, 4))
		mutate_tensor(u, t);
	return t;
}

static Onnx__AttributeProto *
new_attr(Mut *u)
{
	Onnx__AttributeProto *at = alloc(u, sizeof *at);
	const char *nm = attr_names[rnd(u, sizeof attr_names / sizeof attr_names[0])];

	onnx__attribute_proto__init(at);
	at->name = str(u, nm);
	at->has_type = 1;
	if (!strcmp(nm, "value")) {
		at->t = new_tensor(u, NULL);
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR;
	} else if (!strcmp(nm, "ratio") || !strcmp(nm, "alpha") || !strcmp(nm, "beta") ||
	           !strcmp(nm, "value_float")) {
		static const float fv[] = {0.0f, 0.5f, 1.0f, -1.0f, 2.0f, __builtin_nanf("")};
		at->has_f = 1;
		at->f = fv[rnd(u, sizeof fv / sizeof fv[0])];
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT;
	} else if (!strcmp(nm, "auto_pad")) {
		static const char *const pads[] = {"NOTSET", "SAME_UPPER", "VALID", ""};
		const char *p = pads[rnd(u, 4)];
		at->has_s = 1;
		at->s = (ProtobufCBinaryData){strlen(p), (uint8_t *)str(u, p)};
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING;
	} else if (rnd(u, 2)) {
		at->has_i = 1;
		at->i = edge(u);
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
	} else {
		at->n_ints = rnd(u, 10);
		at->ints = alloc(u, (at->n_ints + 1) * sizeof *at->ints);
		for (size_t i = 0; i < at->n_ints; i++)
			at->ints[i] = rnd(u, 2) ? (int64_t)rnd(u, 4) : edge(u);
		at->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS;
	}
	return at;
}

/* A node's attribute: a value or list entry to an edge, an entry more or
 * less, a tensor's dims, or a new attribute. */
static void
mutate_attr(Mut *u, Onnx__NodeProto *nd)
{
	Onnx__AttributeProto *at, *copy;
	size_t k;

	if (!nd->n_attribute || !rnd(u, 3)) {
		push(u, (void ***)&nd->attribute, &nd->n_attribute, new_attr(u));
		return;
	}
	k = rnd(u, nd->n_attribute);
	copy = alloc(u, sizeof *copy);
	*copy = *nd->attribute[k];
	at = copy;
	if (at->t) {
		Onnx__TensorProto *t = alloc(u, sizeof *t);
		*t = *at->t;
		mutate_tensor(u, t);
		at->t = t;
	} else if (at->has_i || (!at->n_ints && rnd(u, 2))) {
		at->has_i = 1;
		at->i = edge(u);
	} else if (at->has_f) {
		static const float fv[] = {0.0f, 1.0f, -1.0f, 1e30f, __builtin_nanf("")};
		at->f = fv[rnd(u, sizeof fv / sizeof fv[0])];
	} else {
		at->ints = ints_copy(u, at->ints, at->n_ints, 1);
		if (at->n_ints && rnd(u, 2))
			at->ints[rnd(u, at->n_ints)] = edge(u);
		else if (rnd(u, 2) || !at->n_ints)
			at->ints[at->n_ints++] = rnd(u, 2) ? (int64_t)rnd(u, 4) : edge(u);
		else
			at->n_ints--;
	}
	Onnx__AttributeProto **a = alloc(u, nd->n_attribute * sizeof *a);
	memcpy(a, nd->attribute, nd->n_attribute * sizeof *a);
	a[k] = at;
	nd->attribute = a;
}

/* A copy of node nd that may be changed without changing nd. */
static Onnx__NodeProto *
node_copy(Mut *u, const Onnx__NodeProto *nd)
{
	Onnx__NodeProto *c = alloc(u, sizeof *c);

	*c = *nd;
	c->input = alloc(u, (nd->n_input + 1) * sizeof *c->input);
	if (nd->n_input)
		memcpy(c->input, nd->input, nd->n_input * sizeof *c->input);
	c->output = alloc(u, (nd->n_output + 1) * sizeof *c->output);
	if (nd->n_output)
		memcpy(c->output, nd->output, nd->n_output * sizeof *c->output);
	return c;
}

/* Node i replaced by its changed copy. */
static Onnx__NodeProto *
own_node(Mut *u, size_t i)
{
	Onnx__NodeProto **a = alloc(u, u->g->n_node * sizeof *a);

	memcpy(a, u->g->node, u->g->n_node * sizeof *a);
	u->g->node = a;
	return a[i] = node_copy(u, a[i]);
}

static void
insert_node(Mut *u, Onnx__NodeProto *nd, size_t at)
{
	Onnx__GraphProto *g = u->g;
	Onnx__NodeProto **a = alloc(u, (g->n_node + 1) * sizeof *a);

	if (g->n_node) {
		memcpy(a, g->node, at * sizeof *a);
		memcpy(a + at + 1, g->node + at, (g->n_node - at) * sizeof *a);
	}
	a[at] = nd;
	g->node = a;
	g->n_node++;
}

/* A graph input's shape or type. */
static void
mutate_input(Mut *u)
{
	Onnx__GraphProto *g = u->g;
	Onnx__ValueInfoProto *vi;
	Onnx__TypeProto *ty;
	Onnx__TypeProto__Tensor *tt;
	Onnx__TensorShapeProto *sh;

	if (!g->n_input)
		return;
	size_t k = rnd(u, g->n_input);
	vi = alloc(u, sizeof *vi);
	*vi = *g->input[k];
	ty = alloc(u, sizeof *ty);
	tt = alloc(u, sizeof *tt);
	sh = alloc(u, sizeof *sh);
	if (vi->type && vi->type->value_case == ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE &&
	    vi->type->tensor_type) {
		*ty = *vi->type;
		*tt = *vi->type->tensor_type;
		if (tt->shape)
			*sh = *tt->shape;
		else
			onnx__tensor_shape_proto__init(sh);
	} else {
		onnx__type_proto__init(ty);
		onnx__type_proto__tensor__init(tt);
		onnx__tensor_shape_proto__init(sh);
		ty->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
		tt->has_elem_type = 1;
		tt->elem_type = 1;
	}
	ty->tensor_type = tt;
	tt->shape = sh;
	vi->type = ty;
	Onnx__ValueInfoProto **ins = alloc(u, g->n_input * sizeof *ins);
	memcpy(ins, g->input, g->n_input * sizeof *ins);
	ins[k] = vi;
	g->input = ins;
	switch (rnd(u, 4)) {
	case 0: {
		static const int32_t et[] = {1, 7, 6, 9, 10, 11, 16, 2, 3, 0, 13};
		tt->elem_type = et[rnd(u, sizeof et / sizeof et[0])];
		break;
	}
	case 1:         /* a dim more or less, or a new rank of small dims */
		if (!rnd(u, 3)) {
			size_t r = rnd(u, 10);
			Onnx__TensorShapeProto__Dimension **d = alloc(u, (r + 1) * sizeof *d);
			for (size_t j = 0; j < r; j++) {
				d[j] = alloc(u, sizeof *d[j]);
				onnx__tensor_shape_proto__dimension__init(d[j]);
				d[j]->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
				d[j]->dim_value = (int64_t)rnd(u, 3) + 1;
			}
			sh->dim = d;
			sh->n_dim = r;
			break;
		}
		if (sh->n_dim && rnd(u, 2)) {
			sh->n_dim--;
			break;
		}
		/* fall through */
	default: {      /* a dim to an edge value or a symbolic one */
		Onnx__TensorShapeProto__Dimension **d = alloc(u, (sh->n_dim + 1) * sizeof *d);
		Onnx__TensorShapeProto__Dimension *x = alloc(u, sizeof *x);
		size_t j;
		if (sh->n_dim)
			memcpy(d, sh->dim, sh->n_dim * sizeof *d);
		onnx__tensor_shape_proto__dimension__init(x);
		if (rnd(u, 4)) {
			x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
			x->dim_value = rnd(u, 2) ? (int64_t)rnd(u, 8) + 1 : edge(u);
		} else {
			static const char *const sym[] = {"batch", "seq", "other", ""};
			x->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
			x->dim_param = str(u, sym[rnd(u, 4)]);
		}
		j = sh->n_dim && rnd(u, 2) ? rnd(u, sh->n_dim) : sh->n_dim++;
		d[j] = x;
		sh->dim = d;
	}
	}
}

/* One structural change to u->m. */
static void
mutate_once(Mut *u)
{
	Onnx__GraphProto *g = u->g;
	Onnx__NodeProto *nd;
	size_t i = g->n_node ? rnd(u, g->n_node) : 0;

	switch (g->n_node ? rnd(u, 16) : 0) {
	case 0: {       /* a new node on existing values */
		nd = alloc(u, sizeof *nd);
		onnx__node_proto__init(nd);
		nd->op_type = str(u, ops[rnd(u, sizeof ops / sizeof ops[0])]);
		nd->name = str(u, rnd(u, 2) ? "fz" : "/blocks.1/fz");
		nd->n_input = rnd(u, 4);
		nd->input = alloc(u, (nd->n_input + 1) * sizeof *nd->input);
		for (size_t k = 0; k < nd->n_input; k++)
			nd->input[k] = any_value(u);
		nd->n_output = 1 + rnd(u, 2);
		nd->output = alloc(u, (nd->n_output + 1) * sizeof *nd->output);
		for (size_t k = 0; k < nd->n_output; k++) {
			char buf[40];
			snprintf(buf, sizeof buf, "fz%u_%zu", (unsigned)rnd(u, 1000000), k);
			nd->output[k] = str(u, buf);
		}
		if (!strcmp(nd->op_type, "Constant") || rnd(u, 2))
			mutate_attr(u, nd);
		insert_node(u, nd, g->n_node ? rnd(u, g->n_node + 1) : 0);
		break;
	}
	case 1:         /* a node's op type */
		own_node(u, i)->op_type = str(u, ops[rnd(u, sizeof ops / sizeof ops[0])]);
		break;
	case 2:         /* a node dropped */
		memmove(g->node + i, g->node + i + 1, (g->n_node - i - 1) * sizeof *g->node);
		g->n_node--;
		break;
	case 3: case 4: /* an input rewired, added or dropped */
		nd = own_node(u, i);
		if (nd->n_input && rnd(u, 4))
			nd->input[rnd(u, nd->n_input)] = any_value(u);
		else if (rnd(u, 2) && nd->n_input)
			nd->n_input--;
		else {
			char **in = alloc(u, (nd->n_input + 1) * sizeof *in);
			if (nd->n_input)
				memcpy(in, nd->input, nd->n_input * sizeof *in);
			in[nd->n_input++] = any_value(u);
			nd->input = in;
		}
		break;
	case 5: case 6: case 7: /* an attribute */
		mutate_attr(u, own_node(u, i));
		break;
	case 8:         /* a node copied, reading what it read, new outputs */
		nd = node_copy(u, g->node[i]);
		for (size_t k = 0; k < nd->n_output; k++) {
			char buf[40];
			snprintf(buf, sizeof buf, "fz%u_%zu", (unsigned)rnd(u, 1000000), k);
			nd->output[k] = str(u, buf);
		}
		insert_node(u, nd, i + 1 + rnd(u, g->n_node - i));
		break;
	case 9:         /* two nodes swapped (order broken, or not) */
		if (g->n_node > 1) {
			size_t j = rnd(u, g->n_node);
			Onnx__NodeProto **a = alloc(u, g->n_node * sizeof *a);
			memcpy(a, g->node, g->n_node * sizeof *a);
			nd = a[i], a[i] = a[j], a[j] = nd;
			g->node = a;
		}
		break;
	case 10: {      /* a node's name: a block key, control bytes, long */
		static const char *const names[] = {"/blocks.0/x/Relu", "/blocks.1/x/Relu",
			"/layer1/layer1.0/conv1/Conv", "a\nb", "", "/a_7/b/c", "/x.0/"};
		own_node(u, i)->name = str(u, names[rnd(u, sizeof names / sizeof names[0])]);
		break;
	}
	case 11: {      /* an initializer's dims or values */
		if (g->n_initializer) {
			size_t k = rnd(u, g->n_initializer);
			Onnx__TensorProto **a = alloc(u, g->n_initializer * sizeof *a);
			Onnx__TensorProto *t = alloc(u, sizeof *t);
			memcpy(a, g->initializer, g->n_initializer * sizeof *a);
			*t = *a[k];
			mutate_tensor(u, t);
			a[k] = t;
			g->initializer = a;
		} else {
			push(u, (void ***)&g->initializer, &g->n_initializer,
			     new_tensor(u, any_value(u)));
		}
		break;
	}
	case 12:        /* a graph output renamed to another value */
		if (g->n_output) {
			Onnx__ValueInfoProto **a = alloc(u, g->n_output * sizeof *a);
			Onnx__ValueInfoProto *vi = alloc(u, sizeof *vi);
			size_t k = rnd(u, g->n_output);
			memcpy(a, g->output, g->n_output * sizeof *a);
			*vi = *a[k];
			vi->name = any_value(u);
			a[k] = vi;
			g->output = a;
		}
		break;
	case 14: {      /* an op fed by new constants (a shape, axes, pads...) */
		char cn[2][40];
		size_t at = g->n_node ? rnd(u, g->n_node + 1) : 0;
		for (int k = 0; k < 2; k++) {
			snprintf(cn[k], sizeof cn[k], "fzc%u", (unsigned)rnd(u, 1000000));
			nd = alloc(u, sizeof *nd);
			onnx__node_proto__init(nd);
			nd->op_type = str(u, "Constant");
			nd->name = str(u, cn[k]);
			nd->n_output = 1;
			nd->output = alloc(u, sizeof *nd->output);
			nd->output[0] = str(u, cn[k]);
			nd->n_attribute = 1;
			nd->attribute = alloc(u, sizeof *nd->attribute);
			nd->attribute[0] = alloc(u, sizeof **nd->attribute);
			onnx__attribute_proto__init(nd->attribute[0]);
			nd->attribute[0]->name = str(u, "value");
			nd->attribute[0]->t = new_tensor(u, NULL);
			insert_node(u, nd, at++);
		}
		nd = alloc(u, sizeof *nd);
		onnx__node_proto__init(nd);
		nd->op_type = str(u, ops[rnd(u, sizeof ops / sizeof ops[0])]);
		nd->name = str(u, "fzk");
		nd->n_input = 1 + rnd(u, 3);
		nd->input = alloc(u, (nd->n_input + 1) * sizeof *nd->input);
		for (size_t k = 0; k < nd->n_input; k++)
			nd->input[k] = rnd(u, 2) ? str(u, cn[rnd(u, 2)]) : any_value(u);
		nd->n_output = 1;
		nd->output = alloc(u, 2 * sizeof *nd->output);
		snprintf(cn[0], sizeof cn[0], "fzk%u", (unsigned)rnd(u, 1000000));
		nd->output[0] = str(u, cn[0]);
		if (rnd(u, 2))
			mutate_attr(u, nd);
		insert_node(u, nd, at);
		if (g->n_output && rnd(u, 2)) {         /* and the graph's result */
			Onnx__ValueInfoProto **a = alloc(u, g->n_output * sizeof *a);
			memcpy(a, g->output, g->n_output * sizeof *a);
			a[0] = alloc(u, sizeof *a[0]);
			*a[0] = *g->output[0];
			a[0]->name = nd->output[0];
			g->output = a;
		}
		break;
	}
	default:
		mutate_input(u);
	}
}

/* Unpacks data into u (pool memory), or returns false. */
static bool
mut_open(Mut *u, const uint8_t *data, size_t size, unsigned int seed)
{
	*u = (Mut){.rng = 0x9e3779b97f4a7c15ull ^ seed};
	u->pa = (ProtobufCAllocator){pool_alloc, pool_nofree, &u->pool};
	rnd(u, 1);
	if (!(u->m = onnx__model_proto__unpack(&u->pa, size, data)) || !u->m->graph) {
		pool_free(&u->pool);
		return false;
	}
	u->g = u->m->graph;
	return true;
}

/* Packs u->m into out (at most max bytes): its size, or 0 if too large. */
static size_t
mut_close(Mut *u, uint8_t *out, size_t max)
{
	size_t n = onnx__model_proto__get_packed_size(u->m);

	n = n <= max ? onnx__model_proto__pack(u->m, out) : 0;
	pool_free(&u->pool);
	return n;
}

size_t
LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	Mut u;
	size_t n;

	if (seed % 8 == 0 || !mut_open(&u, data, size, seed))
		return LLVMFuzzerMutate(data, size, max);
	for (uint64_t k = 1 + rnd(&u, 4); k > 0; k--)
		mutate_once(&u);
	n = mut_close(&u, data, max);
	return n ? n : LLVMFuzzerMutate(data, size, max);
}

/* d1's model with some of d2's nodes spliced in at a random place. */
size_t
LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2,
                          size_t s2, uint8_t *out, size_t max, unsigned int seed)
{
	Mut a, b;
	size_t n;

	if (!mut_open(&a, d1, s1, seed))
		return 0;
	if (!mut_open(&b, d2, s2, seed + 1)) {
		pool_free(&a.pool);
		return 0;
	}
	if (b.g->n_node) {
		size_t from = rnd(&a, b.g->n_node), cnt = 1 + rnd(&a, b.g->n_node - from);
		if (cnt > 64)
			cnt = 64;
		for (size_t k = 0; k < cnt; k++)
			insert_node(&a, b.g->node[from + k], a.g->n_node ?
			            rnd(&a, a.g->n_node + 1) : 0);
	}
	n = mut_close(&a, out, max);
	pool_free(&b.pool);
	return n;
}
