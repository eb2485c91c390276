/* tests/unit/graphkit.c -- the hand-built test graph of graphkit.h.
 * Diagnostics go to an in-memory stream that said() reads. */
#include <stdarg.h>
#include <stdlib.h>

#include "graphkit.h"

Arena arena;
Graph g;
Diag diag;
static char *msgs;
static size_t msglen;
static FILE *msgf;

int
setup(void **state)
{
	(void)state;
	ar_init(&arena);
	ir_graph_init(&g, &arena, "t.net");
	msgf = open_memstream(&msgs, &msglen);
	diag_init(&diag, NULL, msgf);
	return 0;
}

int
teardown(void **state)
{
	(void)state;
	fclose(msgf);
	free(msgs);
	ar_free(&arena);
	return 0;
}

const char *
said(void)
{
	fflush(msgf);
	return msgs ? msgs : "";
}

void
reset_msgs(void)
{
	fclose(msgf);
	free(msgs);
	msgs = NULL;
	msgf = open_memstream(&msgs, &msglen);
	diag.out = msgf;
}

int
decl(const char *id, TensorKind k, Dtype dt, int ndim, ...)
{
	int t = ir_add_tensor(&g, id, k, loc_make("t.net", 1, 1));
	int64_t shape[IR_MAXDIM];
	va_list ap;

	g.t[t].dtype = dt;
	va_start(ap, ndim);
	for (int i = 0; i < ndim; i++)
		shape[i] = va_arg(ap, int);
	va_end(ap);
	ir_set_shape(&g, &g.t[t], ndim, shape);
	return t;
}

int
mk(OpKind k, const char *out, int nin, ...)
{
	int in[16], o;
	va_list ap;

	va_start(ap, nin);
	for (int i = 0; i < nin; i++)
		in[i] = va_arg(ap, int);
	va_end(ap);
	o = ir_add_op(&g, k, in, nin);
	ir_set_outputs(&g, o, &out, 1, "", loc_make("t.net", 2, 5));
	return o;
}

int
out(int o)
{
	return g.op[o].out[0];
}

void
set_list(int o, int n, ...)
{
	va_list ap;

	va_start(ap, n);
	g.op[o].p->nlist = n;
	for (int i = 0; i < n; i++)
		g.op[o].p->list[i] = va_arg(ap, int);
	va_end(ap);
}

void
set_loss(int t)
{
	g.outputs = ar_alloc(&arena, sizeof(int));
	g.output_loc = ar_alloc(&arena, sizeof(Loc));
	g.outputs[0] = t;
	g.output_loc[0] = loc_make("t.net", 9, 1);
	g.noutputs = 1;
	g.loss = t;
	g.train = true;
}

int
train(int t)
{
	set_loss(t);
	if (shape_infer(&g, &diag) != 0) {
		fprintf(stderr, "train: shape inference failed: %s\n", said());
		abort();
	}
	return autodiff(&g, &diag);
}
