/* frontend/onnx/door.c -- bounds at the door: the unpacked model's counts,
 * name lengths, ranks and dims against the caps of onnx_int.h, checked
 * once before anything reads them.
 *
 * protobuf-c hands over whatever the file says: four million attributes
 * on one node, a name of a hundred megabytes, a tensor of nine axes or a
 * dim of -2^63. Past this pass, a list has at most its cap's entries, a
 * rank is at most OX_MAXRANK and every tensor dim is in [0, OX_MAXDIM], so
 * that the per-op code may index fixed arrays and multiply dims with the
 * checked helpers only where products of several are formed. What only an
 * op knows (a stride must be at least 1, a Gather's result rank) is
 * checked by that op, before it computes with the number. */
#include <string.h>

#include "onnx_int.h"

/* Fails when s (NULL allowed) is longer than OX_MAXNAME bytes. */
static void
name_ok(Imp *I, const char *s, const char *what)
{
	if (s && strnlen(s, OX_MAXNAME + 1) > OX_MAXNAME)
		ox_fail(I, "%s is longer than %d bytes", what, OX_MAXNAME);
}

static void
count_ok(Imp *I, size_t n, size_t max, const char *what)
{
	if (n > max)
		ox_fail(I, "%zu %s (at most %zu)", n, what, max);
}

/* A tensor's rank and dims; kind and name say whose ("initializer 'w'"). */
static void
tensor_ok(Imp *I, const Onnx__TensorProto *t, const char *kind, const char *name)
{
	name_ok(I, t->name, "a tensor name");
	if (t->n_dims > OX_MAXRANK)
		ox_fail(I, "%s '%s' has %zu axes (at most %d)", kind, name, t->n_dims,
		        OX_MAXRANK);
	for (size_t i = 0; i < t->n_dims; i++)
		if (t->dims[i] < 0 || t->dims[i] > OX_MAXDIM)
			ox_fail(I, "%s '%s' has dimension %lld, outside [0, 2^40]", kind, name,
			        (long long)t->dims[i]);
}

/* A graph input's or output's name and declared shape. */
static void
value_info_ok(Imp *I, const Onnx__ValueInfoProto *vi)
{
	const Onnx__TensorShapeProto *s;

	name_ok(I, vi->name, "a graph input or output name");
	if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE ||
	    !(s = vi->type->tensor_type->shape))
		return;         /* read_type says what is missing, for inputs */
	if (s->n_dim > OX_MAXRANK)
		ox_fail(I, "graph value '%s' has %zu axes (at most %d)",
		        vi->name ? vi->name : "", s->n_dim, OX_MAXRANK);
	for (size_t i = 0; i < s->n_dim; i++)
		if (s->dim[i]->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM)
			name_ok(I, s->dim[i]->dim_param, "a dim_param");
}

static void
node_ok(Imp *I, const Node *n)
{
	I->cur = n;
	name_ok(I, n->name, "the node name");
	name_ok(I, n->op_type, "the op type");
	name_ok(I, n->domain, "the domain");
	count_ok(I, n->n_input, OX_MAXIO, "inputs");
	count_ok(I, n->n_output, OX_MAXIO, "outputs");
	count_ok(I, n->n_attribute, OX_MAXATTR, "attributes");
	for (size_t k = 0; k < n->n_input; k++)
		name_ok(I, n->input[k], "an input name");
	for (size_t k = 0; k < n->n_output; k++)
		name_ok(I, n->output[k], "an output name");
	for (size_t k = 0; k < n->n_attribute; k++) {
		const Onnx__AttributeProto *at = n->attribute[k];
		const char *an = at->name ? at->name : "";
		name_ok(I, at->name, "an attribute name");
		if (at->n_ints > OX_MAXFOLD || at->n_floats > OX_MAXFOLD)
			ox_fail(I, "attribute '%s' has %zu values (at most %d)", an,
			        at->n_ints > at->n_floats ? at->n_ints : at->n_floats, OX_MAXFOLD);
		if (at->s.len > OX_MAXNAME)
			ox_fail(I, "attribute '%s' is a string of %zu bytes (at most %d)", an,
			        at->s.len, OX_MAXNAME);
		if (at->t)
			tensor_ok(I, at->t, "attribute", an);
	}
	I->cur = NULL;
}

void
ox_door(Imp *I, const Onnx__ModelProto *m)
{
	const Onnx__GraphProto *g = m->graph;

	name_ok(I, m->producer_name, "producer_name");
	name_ok(I, m->producer_version, "producer_version");
	count_ok(I, m->n_opset_import, OX_MAXOPSETS, "opset imports");
	for (size_t i = 0; i < m->n_opset_import; i++)
		name_ok(I, m->opset_import[i]->domain, "an opset domain");
	if (!g)
		return;         /* setup says so */
	count_ok(I, g->n_node, OX_MAXCOUNT, "nodes");
	count_ok(I, g->n_input, OX_MAXCOUNT, "graph inputs");
	count_ok(I, g->n_output, OX_MAXCOUNT, "graph outputs");
	count_ok(I, g->n_initializer, OX_MAXCOUNT, "initializers");
	for (size_t i = 0; i < g->n_input; i++)
		value_info_ok(I, g->input[i]);
	for (size_t i = 0; i < g->n_output; i++)
		value_info_ok(I, g->output[i]);
	for (size_t i = 0; i < g->n_initializer; i++)
		tensor_ok(I, g->initializer[i], "initializer",
		          g->initializer[i]->name ? g->initializer[i]->name : "");
	for (size_t i = 0; i < g->n_node; i++)
		node_ok(I, g->node[i]);
}
