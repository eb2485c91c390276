/* ir/net/dump.c -- --dump-ir: the IR after shape inference as text, one tensor
 * per line in creation order (inputs and params where declared, then each
 * op's outputs and extras). The golden tests compare this text. */
#include "ir.h"

static const char *
kind_name(TensorKind k)
{
	static const char *names[] = {
		[TK_INPUT] = "input", [TK_PARAM] = "param", [TK_ACT] = "activation",
		[TK_EXTRA] = "extra", [TK_GRAD] = "grad", [TK_PARAM_GRAD] = "param_grad",
	};
	return names[k];
}

/* The op type that made tensor t, as the JSON report names it. */
const char *
ir_tensor_op(const Graph *g, int t)
{
	const Tensor *x = &g->t[t];

	if (x->kind == TK_INPUT || x->kind == TK_PARAM)
		return kind_name(x->kind);
	if (x->kind == TK_GRAD || x->kind == TK_PARAM_GRAD)
		return "grad";
	if (g->op[x->producer].kind == OP_CUSTOM)
		return g->op[x->producer].custom->name;
	return ir_optab[g->op[x->producer].kind].name;
}

const char *
ir_kind_name(TensorKind k)
{
	return kind_name(k);
}

void
ir_dump(const Graph *g, FILE *out)
{
	char shape[256];

	for (int i = 0; i < g->nt; i++) {
		const Tensor *t = &g->t[i];
		if (t->kind == TK_GRAD || t->kind == TK_PARAM_GRAD)
			continue;
		fprintf(out, "%s op=%s %s%s bytes=%lld kind=%s view_of=%s grad=%s loc=%s:%d:%d\n",
		        t->id, ir_tensor_op(g, i), dtype_name(t->dtype),
		        ir_shape_str(t, shape, sizeof shape), (long long)t->bytes,
		        kind_name(t->kind), t->view_of >= 0 ? g->t[t->view_of].id : "-",
		        t->needs_grad ? "yes" : "no", t->loc.file, t->loc.line, t->loc.col);
	}
}
