/* frontend/checkmate/checkmate.c -- `remat --import checkmate`: reads a published
 * rematerialization benchmark graph (networkx node-link JSON, Checkmate or
 * Moccasin random-layered layout; ../shared/data/checkmate/README.md) into a
 * Dag. driver/cm_run.c plans it and reports peak, recompute cost and TDI.
 *
 * Every graph node becomes one recomputable Dag node with one output tensor
 * (CAT_ACTIVATIONS) whose inputs are its predecessors' outputs. base_order
 * is graph.order when given, else the order networkx's topological_sort
 * yields: Kahn generations, nodes in file order, successors in link order.
 * That order reproduces every reference peak of the README. Writes every
 * field of the Dag; persistent bytes are 0 (param_cost is not modelled by
 * the published results either). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "checkmate.h"

enum { CM_MAX_FILE = 256 << 20 };

typedef struct Cm {
	Arena *a;
	char *err;
	size_t errn;
	const char *path;
	const char **key;       /* [n] node id as "i:123" or "s:text" */
	int *sorted;            /* [n] node indices sorted by key */
	int n;
	const JrValue *at;      /* the value being read: errors give its line:col */
} Cm;

static int
cm_fail(Cm *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int
cm_fail(Cm *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vformat(c->err, c->errn, c->path, c->at ? c->at->line : 0,
	            c->at ? c->at->col : 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* Reads the whole file into the arena, NUL-terminated. */
static char *
read_file(Cm *c, size_t *len)
{
	FILE *f = fopen(c->path, "rb");
	size_t cap = 1 << 16, n = 0, got;
	char *buf, *text;

	if (!f) {
		cm_fail(c, "cannot open: %s", strerror(errno));
		return NULL;
	}
	buf = xmalloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n > CM_MAX_FILE)
			break;
		if (n == cap)
			buf = xrealloc(buf, cap *= 2);
	}
	if (ferror(f) || n > CM_MAX_FILE) {
		cm_fail(c, ferror(f) ? "cannot read the file" : "file larger than %d MiB",
		        CM_MAX_FILE >> 20);
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	text = ar_strndup(c->a, buf, n);
	free(buf);
	*len = n;
	return text;
}

/* A node id's key: integers and strings are distinct ids, as in networkx. */
static const char *
id_key(Cm *c, const JrValue *v)
{
	if (v && v->type == JR_NUM && v->is_int)
		return ar_printf(c->a, "i:%" PRId64, v->i);
	if (v && v->type == JR_STR)
		return ar_printf(c->a, "s:%s", v->str);
	return NULL;
}

static const Cm *sort_cm;

static int
cmp_key(const void *x, const void *y)
{
	return strcmp(sort_cm->key[*(const int *)x], sort_cm->key[*(const int *)y]);
}

/* The node with id v, or -1. */
static int
find_node(const Cm *c, const JrValue *v)
{
	const char *k = id_key((Cm *)c, v);
	int lo = 0, hi = c->n - 1;

	while (k && lo <= hi) {
		int mid = lo + (hi - lo) / 2, r = strcmp(k, c->key[c->sorted[mid]]);
		if (!r)
			return c->sorted[mid];
		if (r < 0)
			hi = mid - 1;
		else
			lo = mid + 1;
	}
	return -1;
}

/* A non-negative integer field of node i; -1 after an error. */
static int64_t
count_field(Cm *c, const JrValue *node, int i, const char *field)
{
	const JrValue *v = jr_get(node, field);

	if (!v) {
		cm_fail(c, "node %d: missing field '%s'", i, field);
		return -1;
	}
	if (v->type != JR_NUM || !v->is_int || v->i < 0 || v->i > ((int64_t)1 << 60)) {
		cm_fail(c, "node %d: '%s' must be a non-negative integer", i, field);
		return -1;
	}
	return v->i;
}

/* The node's name for schedules: "name" when it is a string, else the id. */
static const char *
node_name(Cm *c, const JrValue *node, const JrValue *id)
{
	const JrValue *nm = jr_get(node, "name");

	if (nm && nm->type == JR_STR)
		return nm->str;
	if (id->type == JR_STR)
		return id->str;
	return ar_printf(c->a, "%" PRId64, id->i);
}

/* nodes[i] -> Dag node i and tensor i. Checkmate nodes carry id, name,
 * backward, cost_cpu, cost_ram; random layered ones name (the id),
 * duration, out_cost. */
static int
read_node(Cm *c, const JrValue *node, int i, Dag *d)
{
	bool checkmate = jr_get(node, "cost_ram") || jr_get(node, "cost_cpu");
	const JrValue *id = jr_get(node, checkmate ? "id" : "name");
	const JrValue *bw = jr_get(node, "backward");
	DagNode *n = &d->node[i];
	DagTensor *t = &d->t[i];

	c->at = node;
	if (node->type != JR_OBJ)
		return cm_fail(c, "node %d is not an object", i);
	if (!id)
		return cm_fail(c, "node %d: missing field '%s'", i, checkmate ? "id" : "name");
	if (!(c->key[i] = id_key(c, id)))
		return cm_fail(c, "node %d: the id must be an integer or a string", i);
	if (bw && bw->type != JR_BOOL)
		return cm_fail(c, "node %d: 'backward' must be true or false", i);
	n->name = node_name(c, node, id);
	n->cost = count_field(c, node, i, checkmate ? "cost_cpu" : "duration");
	t->bytes = count_field(c, node, i, checkmate ? "cost_ram" : "out_cost");
	if (n->cost < 0 || t->bytes < 0)
		return -1;
	n->is_backward = bw && bw->b;
	n->nout = 1;
	n->out = ar_alloc(c->a, sizeof *n->out);
	n->out[0] = i;
	n->ir_op = -1;
	t->name = n->name;
	t->view_src = -1;
	t->cat = CAT_ACTIVATIONS;
	t->ir_tensor = -1;
	return 0;
}

static int
read_nodes(Cm *c, const JrValue *nodes, Dag *d)
{
	if (!nodes || nodes->type != JR_ARR)
		return cm_fail(c, "'nodes' must be an array");
	if (nodes->n == 0)
		return cm_fail(c, "the graph has no nodes");
	c->n = d->nnode = d->nt = nodes->n;
	d->node = ar_alloc(c->a, sizeof *d->node * (size_t)c->n);
	d->t = ar_alloc(c->a, sizeof *d->t * (size_t)c->n);
	c->key = ar_alloc(c->a, sizeof *c->key * (size_t)c->n);
	c->sorted = ar_alloc(c->a, sizeof *c->sorted * (size_t)c->n);
	for (int i = 0; i < c->n; i++)
		if (read_node(c, nodes->item[i], i, d))
			return -1;
	for (int i = 0; i < c->n; i++)
		c->sorted[i] = i;
	sort_cm = c;
	qsort(c->sorted, (size_t)c->n, sizeof *c->sorted, cmp_key);
	for (int i = 1; i < c->n; i++)
		if (!strcmp(c->key[c->sorted[i]], c->key[c->sorted[i - 1]]))
			return cm_fail(c, "node id '%s' appears twice", c->key[c->sorted[i]] + 2);
	return 0;
}

/* One end of link j: "source"/"target" (Checkmate) or "0"/"1" (random). */
static int
link_end(Cm *c, const JrValue *link, int j, int which)
{
	static const char *const names[2][2] = {{"source", "0"}, {"target", "1"}};
	const JrValue *v = jr_get(link, names[which][0]);
	int u;

	if (!v)
		v = jr_get(link, names[which][1]);
	if (!v)
		return cm_fail(c, "link %d: missing '%s'", j, names[which][0]);
	if ((u = find_node(c, v)) < 0)
		return cm_fail(c, "link %d: unknown node id in '%s'", j, names[which][0]);
	return u;
}

typedef struct Edge {
	int u, v, pos;
} Edge;

static int
cmp_edge(const void *x, const void *y)
{
	const Edge *a = x, *b = y;

	if (a->u != b->u)
		return a->u < b->u ? -1 : 1;
	if (a->v != b->v)
		return a->v < b->v ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* Reads the links into e[], in file order, without duplicates (networkx
 * DiGraph keeps one edge per pair, at its first position). Returns the
 * edge count, or -1. */
static int
read_links(Cm *c, const JrValue *links, Edge *e)
{
	Edge *by;
	bool *dup;
	int m = 0;

	for (int j = 0; j < links->n; j++) {
		const JrValue *l = links->item[j];
		c->at = l;
		if (l->type != JR_OBJ)
			return cm_fail(c, "link %d is not an object", j);
		if ((e[j].u = link_end(c, l, j, 0)) < 0 || (e[j].v = link_end(c, l, j, 1)) < 0)
			return -1;
		if (e[j].u == e[j].v)
			return cm_fail(c, "link %d: node '%s' depends on itself (a cycle)",
			               j, c->key[e[j].u] + 2);
		e[j].pos = j;
	}
	by = ar_alloc(c->a, sizeof *by * (size_t)(links->n + 1));
	dup = ar_alloc(c->a, sizeof *dup * (size_t)(links->n + 1));
	memcpy(by, e, sizeof *by * (size_t)links->n);
	qsort(by, (size_t)links->n, sizeof *by, cmp_edge);
	for (int j = 1; j < links->n; j++)
		if (by[j].u == by[j - 1].u && by[j].v == by[j - 1].v)
			dup[by[j].pos] = true;
	for (int j = 0; j < links->n; j++)
		if (!dup[j])
			e[m++] = e[j];
	return m;
}

/* node.in = predecessors' outputs, in link order. */
static void
set_inputs(Cm *c, Dag *d, const Edge *e, int m)
{
	for (int j = 0; j < m; j++)
		d->node[e[j].v].nin++;
	for (int v = 0; v < d->nnode; v++) {
		d->node[v].in = ar_alloc(c->a, sizeof(int) * (size_t)(d->node[v].nin + 1));
		d->node[v].nin = 0;
	}
	for (int j = 0; j < m; j++) {
		DagNode *n = &d->node[e[j].v];
		n->in[n->nin++] = e[j].u;
	}
}

/* networkx topological_sort: Kahn generations; the first holds the sources
 * in node order, each next one the nodes whose last predecessor was
 * removed, in the order that happened (successors in edge order). */
static int
kahn_order(Cm *c, Dag *d, const Edge *e, int m)
{
	int n = d->nnode, *indeg, *first, *next, *order, head = 0, tail = 0;

	indeg = ar_alloc(c->a, sizeof *indeg * (size_t)n);
	first = ar_alloc(c->a, sizeof *first * (size_t)n);
	next = ar_alloc(c->a, sizeof *next * (size_t)(m + 1));
	order = ar_alloc(c->a, sizeof *order * (size_t)n);
	for (int v = 0; v < n; v++)
		first[v] = -1;
	for (int j = m - 1; j >= 0; j--) {
		next[j] = first[e[j].u];
		first[e[j].u] = j;
		indeg[e[j].v]++;
	}
	for (int v = 0; v < n; v++)
		if (!indeg[v])
			order[tail++] = v;
	while (head < tail) {
		int u = order[head++];
		for (int j = first[u]; j >= 0; j = next[j])
			if (--indeg[e[j].v] == 0)
				order[tail++] = e[j].v;
	}
	if (tail < n)
		return cm_fail(c, "the graph has a cycle (%d of %d nodes cannot be ordered)",
		               n - tail, n);
	d->base_order = order;
	d->nbase = n;
	return 0;
}

/* graph.order: every node once, each after its predecessors. */
static int
given_order(Cm *c, Dag *d, const JrValue *order, const Edge *e, int m)
{
	int n = d->nnode, *pos;

	c->at = order;
	if (order->type != JR_ARR)
		return cm_fail(c, "'graph.order' must be an array");
	if (order->n != n)
		return cm_fail(c, "'graph.order' has %d entries for %d nodes", order->n, n);
	pos = ar_alloc(c->a, sizeof *pos * (size_t)n);
	d->base_order = ar_alloc(c->a, sizeof *d->base_order * (size_t)n);
	d->nbase = n;
	for (int v = 0; v < n; v++)
		pos[v] = -1;
	for (int i = 0; i < n; i++) {
		int v = find_node(c, c->at = order->item[i]);
		if (v < 0)
			return cm_fail(c, "'graph.order' entry %d is not a node id", i);
		if (pos[v] >= 0)
			return cm_fail(c, "'graph.order' lists node '%s' twice", c->key[v] + 2);
		pos[v] = i;
		d->base_order[i] = v;
	}
	for (int j = 0; j < m; j++)
		if (pos[e[j].u] > pos[e[j].v])
			return cm_fail(c, "'graph.order' puts '%s' before its predecessor '%s'",
			               c->key[e[j].v] + 2, c->key[e[j].u] + 2);
	return 0;
}

/* Builds d from the parsed document. */
static int
build(Cm *c, const JrValue *doc, Dag *d, CmInfo *g)
{
	const JrValue *graph, *links, *order, *nm, *dir;
	DagExcess x;
	Edge *e;
	int m;

	c->at = doc;
	if (doc->type != JR_OBJ)
		return cm_fail(c, "the document is not a JSON object");
	if ((dir = jr_get(doc, "directed")) && !(dir->type == JR_BOOL && dir->b))
		return cm_fail(c, "the graph is not directed");
	graph = jr_get(doc, "graph");
	if (graph && graph->type != JR_OBJ)
		return cm_fail(c, "'graph' must be an object");
	if (read_nodes(c, jr_get(doc, "nodes"), d))
		return -1;
	links = jr_get(doc, "links");
	if (!links)
		links = jr_get(doc, "edges");
	if (!links || links->type != JR_ARR)
		return cm_fail(c, "'links' must be an array");
	e = ar_alloc(c->a, sizeof *e * (size_t)(links->n + 1));
	if ((m = read_links(c, links, e)) < 0)
		return -1;
	c->at = NULL;
	set_inputs(c, d, e, m);
	order = jr_get(graph, "order");
	if (order ? given_order(c, d, order, e, m) : kahn_order(c, d, e, m))
		return -1;
	nm = jr_get(graph, "name");
	g->name = nm && nm->type == JR_STR ? nm->str : c->path;
	g->nedges = m;
	dag_finish(d);
	if (dag_excess(d, &x)) {        /* every later sum stays far from 2^63 */
		int k = x.tensor >= 0 ? x.tensor : x.node;
		c->at = k >= 0 ? jr_get(doc, "nodes")->item[k] : NULL;
		return cm_fail(c, "node %d ('%s'): the total of the graph's %s passes 2^60 "
		               "(see docs/limits.md)", k, k >= 0 ? d->node[k].name : "?",
		               x.what[0] == 'b' ? "cost_ram" : "cost");
	}
	return 0;
}

int
cm_import_info(const char *path, Dag *d, Arena *a, char *err, size_t errn, CmInfo *g)
{
	Cm c = {a, err, errn, path, NULL, NULL, 0, NULL};
	char jerr[200];
	const JrValue *doc;
	size_t len;
	char *text;

	memset(d, 0, sizeof *d);
	memset(g, 0, sizeof *g);
	if (errn)
		err[0] = 0;
	if (!(text = read_file(&c, &len)))
		return -1;
	if (!(doc = jr_parse(text, len, a, jerr, sizeof jerr))) {
		if (errn)
			snprintf(err, errn, "%s:%s", path, jerr);
		return -1;
	}
	return build(&c, doc, d, g);
}

int
cm_import(const char *path, Dag *d, Arena *a, char *err, size_t errn)
{
	CmInfo g;

	return cm_import_info(path, d, a, err, errn, &g);
}

