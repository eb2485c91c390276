/* frontend/onnx/blocks.c -- defs for the model's repeated blocks.
 *
 * PyTorch's exporter names each node after the module that ran it:
 * "/layer1/layer1.0/conv1/Conv", "/blocks.3/attn/MatMul",
 * "/encoder/layers/encoder_layer_7/mlp/Add". The outermost part of that
 * path that ends in ".N" or "_N" names an occurrence of a repeated block
 * (layer1.0, blocks.3, encoder_layer_7). After the whole model has been
 * written as flat statements, ox_blocks cuts the body into runs of
 * consecutive statements of one occurrence, and writes each run as a def
 * body: the values it reads from outside become its arguments, the params
 * only it uses are declared inside, and its one value used after it is
 * returned. Names lose their occurrence prefix (layer1_layer1_0_conv1_Conv
 * becomes conv1_Conv, layer1_0_conv1_weight becomes conv1_weight). Runs
 * whose def text is the same, to the character (shapes included), share
 * one def; where a def has two or more occurrences, each run is replaced by
 * a call that binds the run's result to its old name, so the rest of the
 * program is unchanged. A run that reads or leaves anything else (two
 * results, say) stays flat. The analysis is the same: a def call is its
 * statements with prefixed names (docs/language.md). */
#include <stdlib.h>
#include <string.h>

#include "onnx_int.h"

/* A .net name of the flat program: a tensor, with its ONNX value. */
typedef struct Sym {
	const char *net;
	Val *v;
	int uses;               /* reads in the whole body */
	int mark, run_uses;     /* run being looked at, reads in that run */
	int named;              /* the run that gave it its local name */
	int role;               /* in that run */
	const char *local;      /* its name in the def */
	bool declared;          /* a param declared in the head */
	int buf_ix;             /* 1 + its index in Blk.buf, or 0 */
} Sym;

enum { R_NONE, R_LOCAL, R_PARAM, R_ARG };

typedef struct Run {
	size_t beg, end;        /* body text */
	const char *key;        /* occurrence: "layer1.0" */
	int nstmt;
	bool ok;
	const char *sig;        /* the def text after its name */
	const char *out;        /* the result's flat name */
	const char **args;      /* flat names of the arguments */
	int nargs;
	const char **params;    /* flat names of the params declared inside */
	int nparams;
	int def;                /* index of the first run with the same sig */
	const char *def_name;
	int nocc;
	int next, last;         /* the next run of the same def (-1: none); in
	                           the def's first run, the last one so far */
} Run;

typedef struct Blk {
	Imp *I;
	Sym **tab;
	size_t cap;
	Run *run;
	int nrun;
	Sym **buf;              /* buffer params no statement reads, in order */
	int nbuf;
	int *node_run;          /* [node] the run it is in, or -1 */
	int *run_buf, *run_buf_at;      /* 1 + indices in buf of the buffers
	                           that run r's BatchNorms read, ascending:
	                           run_buf[run_buf_at[r] .. run_buf_at[r + 1]) */
} Blk;

static Sym *
sym_find(Blk *B, const char *s, size_t n)
{
	for (size_t h = ox_hash(s, n) & (B->cap - 1); B->tab[h]; h = (h + 1) & (B->cap - 1))
		if (!strncmp(B->tab[h]->net, s, n) && !B->tab[h]->net[n])
			return B->tab[h];
	return NULL;
}

static void
sym_add(Blk *B, Val *v)
{
	size_t n = strlen(v->net), h;

	if (sym_find(B, v->net, n))
		return;
	Sym *s = ar_alloc(B->I->a, sizeof *s);
	s->net = v->net;
	s->v = v;
	s->mark = s->named = -1;
	for (h = ox_hash(v->net, n) & (B->cap - 1); B->tab[h]; h = (h + 1) & (B->cap - 1))
		;
	B->tab[h] = s;
}

static bool
is_id0(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_id(char c)
{
	return is_id0(c) || (c >= '0' && c <= '9');
}

/* The next tensor name in s[*i..n), or NULL at the end; *at is where it
 * starts. Op names (followed by '(') and attribute names (followed by
 * '=') are skipped, and so are numbers ("1e-05"), and comments. */
static Sym *
next_ref(Blk *B, const char *s, size_t n, size_t *i, size_t *at)
{
	while (*i < n) {
		char c = s[*i];
		if (c == '#') {
			while (*i < n && s[*i] != '\n')
				(*i)++;
		} else if ((c >= '0' && c <= '9') || (c == '.' && *i + 1 < n &&
		           s[*i + 1] >= '0' && s[*i + 1] <= '9')) {
			while (*i < n && (is_id(s[*i]) || s[*i] == '.' ||
			       ((s[*i] == '-' || s[*i] == '+') && (s[*i - 1] == 'e' || s[*i - 1] == 'E'))))
				(*i)++;
		} else if (is_id0(c)) {
			size_t b = *i;
			while (*i < n && is_id(s[*i]))
				(*i)++;
			if (*i < n && (s[*i] == '(' || s[*i] == '='))
				continue;
			Sym *y = sym_find(B, s + b, *i - b);
			if (y) {
				*at = b;
				return y;
			}
		} else {
			(*i)++;
		}
	}
	return NULL;
}

/* The occurrence of a repeated block a node belongs to: the outermost part of
 * its scope path ending in ".N" or "_N", or NULL. */
static const char *
occurrence_key(Imp *I, const Node *n)
{
	const char *s = n->name, *last;

	if (!s || *s != '/' || !(last = strrchr(s, '/')))
		return NULL;
	for (const char *p = s + 1; p < last;) {
		const char *e = strchr(p, '/');
		const char *d = e;
		while (d > p && d[-1] >= '0' && d[-1] <= '9')
			d--;
		if (d < e && d - p >= 2 && (d[-1] == '.' || d[-1] == '_'))
			return ox_clean(I, ar_strndup(I->a, p, (size_t)(e - p)));  /* for # */
		p = e + 1;
	}
	return NULL;
}

/* The statements' text [beg, end) of node i, as ox_blocks was told. */
void
ox_blocks_note(Imp *I, int i, size_t beg, size_t end)
{
	if (!I->node_beg) {
		I->node_beg = ar_alloc(I->a, (I->g->n_node + 1) * sizeof *I->node_beg);
		I->node_end = ar_alloc(I->a, (I->g->n_node + 1) * sizeof *I->node_end);
		I->node_order = ar_alloc(I->a, (I->g->n_node + 1) * sizeof *I->node_order);
	}
	I->node_beg[i] = beg;
	I->node_end[i] = end;
	I->node_order[I->nnoted++] = i;
}

/* The name in the def of flat name net: what follows the occurrence key
 * (as a .net name: "layer1_0") in it, as in layer1_layer1_0_conv1_Conv and
 * layer1_0_conv1_weight; "v1", "v2"... where the key is not in it. From
 * the flat name, not the ONNX one: values that alias one tensor (an
 * Identity's input and output) share the flat name. */
static const char *
strip_key(Imp *I, const char *net, const char *key)
{
	size_t kn = strlen(key), j = 0;
	char *k = ar_alloc(I->a, kn + 1);

	for (size_t i = 0; i < kn; i++) {
		char c = is_id(key[i]) ? key[i] : '_';
		if (c == '_' && j && k[j - 1] == '_')
			continue;
		k[j++] = c;
	}
	kn = j;
	for (const char *q = strstr(net, k); q; q = strstr(q + 1, k))
		if ((q == net || q[-1] == '_') && q[kn] == '_' && is_id0(q[kn + 1]))
			return q + kn + 1;
	return NULL;
}

static const char *
local_name(Imp *I, const char *net, const char *key, int *fresh)
{
	const char *s = strip_key(I, net, key);
	return s ? s : ar_printf(I->a, "v%d", (*fresh)++);
}

/* What no name in a def may be: a keyword, a dim, or a name ending in
 * "block" (a def's, see ox_blocks). A def's names may be those of tensors
 * outside it. */
static bool
def_bad(void *ctx, const char *t)
{
	Imp *I = ctx;
	size_t len = strlen(t);

	for (int i = 0; i < I->nsym; i++)
		if (!strcmp(t, I->sym[i].net))
			return true;
	return ox_reserved(t) || (len >= 5 && !strcmp(t + len - 5, "block"));
}

/* name, or name_2, name_3...: free in the def's names so far, which it
 * joins. */
static const char *
unique(Blk *B, Names *names, const char *name)
{
	const char *t = ox_names_fresh(names, B->I->a, name, def_bad, B->I);

	ox_names_add(names, t);
	return t;
}

/* params, with room for n more (arena) */
static const char **
xrealloc_params(Imp *I, const char **p, int have, int n)
{
	const char **q = ar_alloc(I->a, sizeof *q * (size_t)(n + 1));
	memcpy(q, p, sizeof *q * (size_t)have);
	return q;
}

/* Fills r->sig (the def text after its name), r->out, r->args and
 * r->params; leaves r->ok false where the run cannot be a def. */
static void
analyze_run(Blk *B, int ri)
{
	Imp *I = B->I;
	Run *r = &B->run[ri];
	const char *s = I->body.s;
	size_t i, at;
	Sym *y;
	int fresh = 0, nout = 0;
	size_t nref = 0;        /* names read or bound in the run */
	Names names = {0};      /* the def's: its locals, params, arguments */
	Buf sig = {0};

	/* reads inside the run; statement heads (what it binds) are locals */
	for (i = r->beg; i < r->end;) {
		size_t eq = i, stop = i;
		while (stop < r->end && s[stop] != '\n')
			stop++;
		while (eq + 2 < stop && !(s[eq] == ' ' && s[eq + 1] == '=' && s[eq + 2] == ' '))
			eq++;
		if (eq + 2 >= stop || stop == r->end)
			return;         /* not a binding: left flat */
		for (size_t j = i; (y = next_ref(B, s, eq, &j, &at)); nref++) {
			if (y->mark != ri) {
				y->mark = ri;
				y->run_uses = 0;
			}
			y->role = R_LOCAL;
		}
		for (size_t j = eq; (y = next_ref(B, s, stop, &j, &at)); nref++) {
			if (y->mark != ri) {
				y->mark = ri;
				y->run_uses = 0;
				y->role = R_NONE;
			}
			y->run_uses++;
		}
		r->nstmt++;
		i = stop + 1;
	}
	if (r->nstmt > OX_MAXBLOCK)     /* a def that long is no block */
		return;
	/* names: locals and params from the ONNX names, arguments x, x1, ... */
	r->args = ar_alloc(I->a, sizeof *r->args * (nref + 1));
	r->params = ar_alloc(I->a, sizeof *r->params * (nref + 1));
	for (i = r->beg; (y = next_ref(B, s, r->end, &i, &at));) {
		if (y->named == ri)
			continue;
		y->named = ri;
		if (y->role == R_NONE) {
			bool own = (y->v->kind == V_PARAM || y->v->kind == V_BUFFER) &&
			           y->uses == y->run_uses;
			y->role = own ? R_PARAM : R_ARG;
			if (own)
				r->params[r->nparams++] = y->net;
			else
				r->args[r->nargs++] = y->net;
		}
		y->local = NULL;
		if (y->role != R_ARG)
			y->local = unique(B, &names, local_name(I, y->net, r->key, &fresh));
		if (y->role == R_LOCAL && y->uses > y->run_uses) {
			r->out = y->net;
			nout++;
		}
	}
	/* the occurrence's buffers (BatchNorm running statistics), which no
	 * statement reads, move into the def too: those its BatchNorms read */
	r->params = xrealloc_params(I, r->params, r->nparams, r->nparams +
	                            B->run_buf_at[ri + 1] - B->run_buf_at[ri]);
	for (int k = B->run_buf_at[ri]; k < B->run_buf_at[ri + 1]; k++) {
		Sym *b = B->buf[B->run_buf[k] - 1];
		const char *l = strip_key(I, b->net, r->key);
		if (!l || b->named == ri)
			continue;
		b->named = ri;
		b->local = unique(B, &names, l);
		r->params[r->nparams++] = b->net;
	}
	int nact = 0, kact = 0;
	for (int k = 0; k < r->nargs; k++) {
		Sym *a = sym_find(B, r->args[k], strlen(r->args[k]));
		nact += a->v->kind != V_CONST || !strip_key(I, a->net, r->key);
	}
	for (int k = 0; k < r->nargs; k++) {
		Sym *a = sym_find(B, r->args[k], strlen(r->args[k]));
		/* the block's own constants keep their names; activations are x... */
		const char *want = strip_key(I, a->net, r->key);
		if (!want || a->v->kind != V_CONST)
			want = nact == 1 ? "x" : ar_printf(I->a, "x%d", ++kact);
		a->local = unique(B, &names, want);
	}
	ox_names_free(&names);
	if (nout != 1 || r->nstmt < 2 || r->nargs == 0)
		return;
	/* the def's text after its name */
	ox_printf(&sig, "(");
	for (int k = 0; k < r->nargs; k++)
		ox_printf(&sig, "%s%s", k ? ", " : "", sym_find(B, r->args[k], strlen(r->args[k]))->local);
	ox_printf(&sig, ") {\n");
	for (int k = 0; k < r->nparams; k++) {
		Val *v = sym_find(B, r->params[k], strlen(r->params[k]))->v;
		ox_printf(&sig, "  param %s : %s", sym_find(B, v->net, strlen(v->net))->local,
		          ox_dtype(I, v->dt));
		ox_shape(&sig, v);
		ox_printf(&sig, "%s;\n", v->kind == V_BUFFER ? " buffer" : "");
	}
	for (i = r->beg; i < r->end;) {
		size_t from = i, stop = i;
		while (stop < r->end && s[stop] != '\n')
			stop++;
		ox_printf(&sig, "  ");
		for (size_t j = i; (y = next_ref(B, s, stop, &j, &at));) {
			ox_printf(&sig, "%.*s%s", (int)(at - from), s + from, y->local);
			from = j;
		}
		ox_printf(&sig, "%.*s\n", (int)(stop - from), s + from);
		i = stop + 1;
	}
	ox_printf(&sig, "  return %s;\n}\n", sym_find(B, r->out, strlen(r->out))->local);
	r->sig = ar_strndup(I->a, sig.s, sig.n);
	free(sig.s);
	r->ok = true;
}

static int
cmp_pair(const void *a, const void *b)
{
	const int *x = a, *y = b;

	return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* B->run_buf: per run, the unread buffers its BatchNorm nodes read (inputs
 * 3 and 4), in the head's order. Each buffer is offered to the run of its
 * reader only: offering every buffer to every run was a product of the
 * two, 256 MB of lists for 4,000 blocks. */
static void
run_buffers(Blk *B)
{
	Imp *I = B->I;
	size_t np = 0;
	int *pair = ar_array(I->a, 2 * (2 * I->g->n_node + 1), sizeof *pair);

	for (size_t n = 0; n < I->g->n_node; n++) {
		const Node *nd = I->g->node[n];
		if (B->node_run[n] < 0 || strcmp(nd->op_type, "BatchNormalization"))
			continue;
		for (size_t k = 3; k < 5 && k < nd->n_input; k++) {
			Val *v = *nd->input[k] ? ox_lookup(I, nd->input[k]) : NULL;
			Sym *y = v && v->net ? sym_find(B, v->net, strlen(v->net)) : NULL;
			if (y && y->buf_ix) {
				pair[2 * np] = B->node_run[n];
				pair[2 * np++ + 1] = y->buf_ix;
			}
		}
	}
	qsort(pair, np, 2 * sizeof *pair, cmp_pair);
	B->run_buf = ar_array(I->a, np + 1, sizeof *B->run_buf);
	B->run_buf_at = ar_array(I->a, (size_t)B->nrun + 1, sizeof *B->run_buf_at);
	for (size_t i = 0; i < np; i++) {
		B->run_buf[i] = pair[2 * i + 1];
		B->run_buf_at[pair[2 * i] + 1]++;
	}
	for (int r = 0; r < B->nrun; r++)
		B->run_buf_at[r + 1] += B->run_buf_at[r];
}

/* Drops the head's declarations of the params that moved into defs. */
static void
prune_head(Blk *B)
{
	Imp *I = B->I;
	Buf h = {0};
	size_t i = 0;

	while (i < I->head.n) {
		size_t e = i;
		while (e < I->head.n && I->head.s[e] != '\n')
			e++;
		bool drop = false;
		if (!strncmp(I->head.s + i, "param ", 6)) {
			size_t b = i + 6, k = b;
			while (k < e && is_id(I->head.s[k]))
				k++;
			Sym *y = sym_find(B, I->head.s + b, k - b);
			drop = y && y->declared;
		}
		if (!drop)
			ox_printf(&h, "%.*s\n", (int)(e - i), I->head.s + i);
		i = e + 1;
	}
	free(I->head.s);
	I->head = h;
}

void
ox_blocks(Imp *I)
{
	Blk B = {.I = I};
	Buf body = {0};
	size_t pos = 0;
	int ndefs = 0;

	if (!I->nnoted || !I->body.n)
		return;
	/* runs: consecutive nodes with text, of one occurrence (a node of no
	 * occurrence ends a run and starts none); a model without any, as a
	 * flat one, needs none of the tables below */
	size_t rcap = 0;
	B.node_run = ar_array(I->a, I->g->n_node + 1, sizeof *B.node_run);
	for (size_t n = 0; n < I->g->n_node; n++)
		B.node_run[n] = -1;
	for (int k = 0; k < I->nnoted; k++) {
		int n = I->node_order[k];
		const char *key;
		if (I->node_beg[n] == I->node_end[n] || !(key = occurrence_key(I, I->g->node[n])))
			continue;
		Run *last = B.nrun ? &B.run[B.nrun - 1] : NULL;
		if (last && last->end == I->node_beg[n] && !strcmp(last->key, key))
			last->end = I->node_end[n];
		else {
			if ((size_t)B.nrun == rcap) {   /* as many as the blocks */
				B.run = ar_grow(I->a, B.run, rcap * sizeof *B.run,
				                (rcap ? 2 * rcap : 64) * sizeof *B.run);
				rcap = rcap ? 2 * rcap : 64;
			}
			B.run[B.nrun++] = (Run){.beg = I->node_beg[n], .end = I->node_end[n],
			                        .key = key};
		}
		B.node_run[n] = B.nrun - 1;
	}
	if (!B.nrun)
		return;
	/* room for every value and every name the lines bind (one per line
	 * and comma at most), half full at most */
	size_t lines = 0;
	for (size_t i = 0; i < I->body.n; i++)
		lines += I->body.s[i] == '\n' || I->body.s[i] == ',';
	for (B.cap = 1024; B.cap < 2 * (I->n + lines + 2); B.cap *= 2)
		;
	B.tab = ar_alloc(I->a, B.cap * sizeof *B.tab);
	for (size_t h = 0; h < I->cap; h++)
		if (I->tab[h] && I->tab[h]->net)
			sym_add(&B, I->tab[h]);
	if (I->labels && !sym_find(&B, I->labels, strlen(I->labels))) {
		Val *v = ar_alloc(I->a, sizeof *v);     /* the loss's labels input */
		v->name = v->net = I->labels;
		v->kind = V_DATA;
		sym_add(&B, v);
	}
	/* reads: what follows " = " on each line (all of "output x;") */
	for (size_t i = 0, at; i < I->body.n;) {
		const char *s = I->body.s;
		size_t stop = i, from;
		while (stop < I->body.n && s[stop] != '\n')
			stop++;
		for (from = i; from + 2 < stop && !(s[from] == ' ' && s[from + 1] == '=' &&
		     s[from + 2] == ' '); from++)
			;
		if (from + 2 >= stop) {
			from = i;
		} else {        /* names bound here that no ONNX value has */
			for (size_t j = i; j < from;) {
				size_t b = j;
				while (j < from && is_id(s[j]))
					j++;
				if (j > b && is_id0(s[b]) && !sym_find(&B, s + b, j - b)) {
					Val *v = ar_alloc(I->a, sizeof *v);
					v->name = v->net = ar_strndup(I->a, s + b, j - b);
					v->kind = V_ACT;
					sym_add(&B, v);
				}
				j += j == b;
			}
		}
		for (Sym *y; (y = next_ref(&B, s, stop, &from, &at));)
			y->uses++;
		i = stop + 1;
	}

	/* buffers no statement reads, in the head's order */
	B.buf = ar_alloc(I->a, sizeof *B.buf * (I->n + 1));
	for (size_t i = 0; i < I->head.n;) {
		size_t e = i, k = i + 6;
		while (e < I->head.n && I->head.s[e] != '\n')
			e++;
		if (!strncmp(I->head.s + i, "param ", 6) && e > 8 &&
		    !strncmp(I->head.s + e - 8, " buffer;", 8)) {
			while (k < e && is_id(I->head.s[k]))
				k++;
			Sym *y = sym_find(&B, I->head.s + i + 6, k - i - 6);
			if (y && !y->uses && !y->buf_ix) {
				B.buf[B.nbuf++] = y;
				y->buf_ix = B.nbuf;
			}
		}
		i = e + 1;
	}
	run_buffers(&B);

	/* runs with the same def text share the first one's def (a table of
	 * the first runs by text) */
	size_t scap = 64;
	while (scap < 2 * (size_t)B.nrun)
		scap *= 2;
	int *first = ar_alloc(I->a, scap * sizeof *first);
	for (size_t h = 0; h < scap; h++)
		first[h] = -1;
	for (int r = 0; r < B.nrun; r++) {
		analyze_run(&B, r);
		B.run[r].def = r;
		if (B.run[r].ok) {
			size_t h = ox_hash(B.run[r].sig, strlen(B.run[r].sig)) & (scap - 1);
			for (; first[h] >= 0; h = (h + 1) & (scap - 1))
				if (!strcmp(B.run[first[h]].sig, B.run[r].sig))
					break;
			if (first[h] >= 0)
				B.run[r].def = first[h];
			else
				first[h] = r;
		}
		Run *d = &B.run[B.run[r].def];
		B.run[r].next = -1;
		if (d->nocc++)
			B.run[d->last].next = r;
		d->last = r;
	}
	/* the defs, named after their first occurrence's key without its
	 * number; the comment line above each says "instances" */
	for (int r = 0; r < B.nrun; r++) {
		Run *d = &B.run[B.run[r].def];
		if (!B.run[r].ok || d->nocc < 2)
			continue;
		if (!d->def_name) {
			size_t n = strlen(d->key);
			while (n && d->key[n - 1] >= '0' && d->key[n - 1] <= '9')
				n--;
			d->def_name = ox_netname(I, ar_printf(I->a, "%.*sblock", (int)n, d->key));
			ox_printf(&I->defs, "# %d instances:", d->nocc);
			for (int q = r; q >= 0; q = B.run[q].next)
				ox_printf(&I->defs, " %s", B.run[q].key);
			ox_printf(&I->defs, "\ndef %s%s\n", d->def_name, d->sig);
			ndefs++;
		}
		for (int k = 0; k < B.run[r].nparams; k++)
			sym_find(&B, B.run[r].params[k], strlen(B.run[r].params[k]))->declared = true;
	}
	if (!ndefs)
		return;
	for (int r = 0; r < B.nrun; r++) {
		Run *x = &B.run[r], *d = &B.run[x->def];
		if (!x->ok || d->nocc < 2)
			continue;
		ox_printf(&body, "%.*s", (int)(x->beg - pos), I->body.s + pos);
		ox_printf(&body, "%s = %s(", x->out, d->def_name);
		for (int k = 0; k < x->nargs; k++)
			ox_printf(&body, "%s%s", k ? ", " : "", x->args[k]);
		ox_printf(&body, ");   # %s\n", x->key);
		pos = x->end;
	}
	ox_printf(&body, "%.*s", (int)(I->body.n - pos), I->body.s + pos);
	free(I->body.s);
	I->body = body;
	prune_head(&B);
}
