/* ir/net/dump.c -- --dump-ir: the IR after shape inference as text, one tensor
 * per line in creation order (inputs and params where declared, then each
 * op's outputs and extras). The golden tests compare this text. */
#include "net.h"

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
		return g->op[x->producer].p->custom->name;
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
		        t->needs_grad ? "yes" : "no", loc_file(t->loc), t->loc.line, (int)t->loc.col);
	}
}

/* -d autodiff: the backward decisions, one line per op in program order:
 * whether it has a backward, what that reads (its saves) and its FLOPs,
 * then each gradient tensor with its dtype and bytes. */
void
ir_dump_backward(const Graph *g, FILE *out)
{
	for (int o = 0; o < g->nop; o++) {
		const Op *op = &g->op[o];
		fprintf(out, "%s op=%s backward=%s", g->t[op->out[0]].id,
		        ir_tensor_op(g, op->out[0]), op->has_backward ? "yes" : "no");
		if (op->has_backward) {
			fprintf(out, " bwd_flops=%lld saves=[", (long long)op->bwd_flops);
			for (int i = 0; i < op->nsaves; i++)
				fprintf(out, "%s%s", i ? "," : "", g->t[op->saves[i]].id);
			fputc(']', out);
		}
		fputc('\n', out);
	}
	for (int i = 0; i < g->nt; i++) {
		const Tensor *t = &g->t[i];
		if (t->kind == TK_GRAD || t->kind == TK_PARAM_GRAD)
			fprintf(out, "%s kind=%s %s bytes=%lld\n", t->id, kind_name(t->kind),
			        dtype_name(t->dtype), (long long)t->bytes);
	}
}
