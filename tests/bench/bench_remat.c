/* tests/bench/bench_remat.c -- `make bench-remat`: speed and quality of the
 * planners. Prints a table for networks written in the language (every
 * example, given the examples folder as argv[2]; a 1000-layer MLP; the
 * LLaMA-7B shape at B=16; transformer stacks of 10k and 100k ops): the peaks
 * at -O0, -O1 (sqrt(n) checkpoints) and -O2 (default cap, recompute <= 1x
 * forward), the lower bound, -O2's recompute as % of forward and its whole
 * analysis time (wall clock and CPU time). Then, for generated training chains (1000 layers up to a
 * 100k-node graph) and random layered DAGs, the -O0/-O1/-O2 peaks and
 * planning times; and for each Checkmate graph in the folder given as
 * argv[1] (skipped when absent), a table row per budget (0.9 and 0.8 x
 * the reference peak): the budget, -O2's planned peak and whether it fits,
 * its TDI, the best published TDI where there is one, and the solve time.
 * TDI = recompute cost / the cost of running every node once. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "driver.h"

/* The 1000-layer MLP of issue 9: relu(x @ w), B=2048, D=512, SGD. */
static const char mlp1000[] =
	"batch B = 2048;\ndim D = 512, L = 1000;\n"
	"train { optimizer = sgd; precision = declared; }\n"
	"input x : f32[B, D];\ninput y : f32[B, D];\n"
	"def layer(h) {\n  param w : f32[D, D];\n  return relu(h @ w);\n}\n"
	"h = x;\nrepeat L { h = layer(h); }\n"
	"loss = mse_loss(h, y);\noutput loss;\n";

/* A network row: a file in the examples folder (or text), -D flags and
 * gradient accumulation. */
typedef struct NetCase {
	const char *name, *file, *text;
	const char *defs;       /* "NAME=V NAME=V", or NULL */
	int accumulate;
} NetCase;

static const NetCase nets[] = {
	{"tiny", "tiny.net", NULL, NULL, 0},
	{"mlp (MNIST)", "mlp.net", NULL, NULL, 0},
	{"resnet50 B=32", "resnet50.net", NULL, NULL, 0},
	{"unet", "unet.net", NULL, NULL, 0},
	{"gpt2 small", "gpt2.net", NULL, NULL, 0},
	{"llama 0.95B", "llama.net", NULL, NULL, 0},
	{"llama 0.95B acc 2", "llama.net", NULL, NULL, 2},
	{"mlp 1000 layers", NULL, mlp1000, NULL, 0},
	{"llama-7B B=16 S=4096", "llama.net", NULL,
	 "D=4096 H=32 L=32 F=11008 S=4096 B=16", 0},
	{"transformer 10k ops", "gpt2.net", NULL,
	 "B=2 S=64 D=64 H=2 V=256 L=450", 0},
	{"transformer 100k ops", "gpt2.net", NULL,
	 "B=2 S=64 D=64 H=2 V=256 L=4500", 0},
};

/* Reads a whole file into the arena; NULL when it cannot. */
static char *
slurp(const char *path, Arena *a)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = ar_alloc(a, (size_t)n + 1);
	if (fread(buf, 1, (size_t)n, f) != (size_t)n)
		buf = NULL;
	fclose(f);
	return buf;
}

/* One analysis at level; false on errors (reported on stderr). */
static bool
analyze_at(const Program *prog, const NetCase *c, const NetOptions *o,
           int level, Analysis *an, Arena *a)
{
	Job job = {prog, c->name, *o, {level, 1.0, -1, false}, false,
	           {0, NULL, pass_checks_default(), NULL}};
	Diag d;

	diag_init(&d, NULL, stderr);
	return analyze(&job, an, a, &d) == ST_OK;
}

static void
bench_net(const NetCase *c, const char *dir)
{
	Arena a;
	Source src;
	Diag d;
	NetOptions o = {0};
	DimOverride defs[8];
	Analysis an[3];
	char *text, path[4096];

	ar_init(&a);
	snprintf(path, sizeof path, "%s/%s", dir, c->file ? c->file : "");
	text = c->text ? (char *)c->text : slurp(path, &a);
	if (!text) {
		printf("%-22s %s not found, skipped\n", c->name, path);
		ar_free(&a);
		return;
	}
	src = (Source){c->name, text, strlen(text), false};
	if (c->defs) {
		char *s = ar_printf(&a, "%s", c->defs), *tok;
		for (tok = strtok(s, " "); tok && o.ndefs < 8; tok = strtok(NULL, " ")) {
			char *eq = strchr(tok, '=');
			*eq = 0;
			defs[o.ndefs++] = (DimOverride){tok, atoll(eq + 1)};
		}
		o.defs = defs;
	}
	if (c->accumulate > 1) {
		o.accumulate_set = true;
		o.accumulate = c->accumulate;
	}
	diag_init(&d, &src, stderr);
	Program *prog = net_parse(&src, &a, &d);
	double cpu = 0;
	for (int l = 0; l < 3; l++) {
		clock_t t0 = clock();
		bool ok = prog && analyze_at(prog, c, &o, l, &an[l], &a);
		cpu = (double)(clock() - t0) / CLOCKS_PER_SEC;
		if (!ok) {
			printf("%-22s analysis failed\n", c->name);
			ar_free(&a);
			return;
		}
	}
	int64_t fwd = an[2].d.forward_cost ? an[2].d.forward_cost : 1;
	printf("%-22s %9.3f %9.3f %9.3f %9.3f %6.3f %7.1f%% %8.3f %8.3f\n", c->name,
	       (double)an[0].plan.peak / 1e9, (double)an[1].plan.peak / 1e9,
	       (double)an[2].plan.peak / 1e9, (double)an[2].plan.lower_bound / 1e9,
	       (double)an[2].plan.peak / (double)an[2].plan.lower_bound,
	       100.0 * (double)an[2].plan.recompute_cost / (double)fwd,
	       an[2].seconds, cpu);
	ar_free(&a);
}

static void
bench_nets(const char *dir)
{
	printf("%-22s %9s %9s %9s %9s %6s %8s %8s %8s\n", "network (peaks in GB)",
	       "-O0", "-O1", "-O2", "bound", "O2/lb", "recomp", "O2 wall", "O2 cpu");
	for (size_t i = 0; i < sizeof nets / sizeof nets[0]; i++)
		bench_net(&nets[i], dir);
	printf("\n");
}

static uint64_t rng = 88172645463325252ull;

static int
rnd(int n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (int)(rng % (uint64_t)n);
}

static int
add_tensor(Dag *d, Arena *a, int64_t bytes, MemCat cat, bool from_start)
{
	DagTensor *t = &d->t[d->nt];
	t->name = ar_printf(a, "t%d", d->nt);
	t->bytes = bytes;
	t->view_src = -1;
	t->cat = cat;
	t->from_start = from_start;
	t->ir_tensor = -1;
	return d->nt++;
}

static DagNode *
add_node(Dag *d, Arena *a, int64_t cost, bool once, int nin, int nout)
{
	DagNode *n = &d->node[d->nnode];
	n->name = ar_printf(a, "n%d", d->nnode);
	n->cost = cost;
	n->once = once;
	n->is_backward = once;
	n->in = ar_alloc(a, sizeof(int) * (size_t)(nin + 1));
	n->out = ar_alloc(a, sizeof(int) * (size_t)(nout + 1));
	n->acc = ar_alloc(a, sizeof(DagAcc) * 2);
	n->ir_op = -1;
	d->base_order[d->nbase++] = d->nnode;
	return &d->node[d->nnode++];
}

/* A lowered training chain of L layers with varied sizes: forward h_i =
 * f(h_{i-1}); backward i uses grad(h_i) and h_{i-1}, makes grad(h_{i-1}). */
static void
train_chain(Dag *d, Arena *a, int L)
{
	int h[L + 1], g[L + 1];

	memset(d, 0, sizeof *d);
	d->t = ar_alloc(a, sizeof *d->t * (size_t)(2 * L + 4));
	d->node = ar_alloc(a, sizeof *d->node * (size_t)(2 * L + 4));
	d->base_order = ar_alloc(a, sizeof(int) * (size_t)(2 * L + 4));
	h[0] = add_tensor(d, a, 1 << 20, CAT_INPUTS, true);
	for (int i = 1; i <= L; i++) {
		h[i] = add_tensor(d, a, (int64_t)(1 + rnd(4)) << 20, CAT_ACTIVATIONS, false);
		DagNode *n = add_node(d, a, 100 + rnd(900), false, 1, 1);
		n->in[n->nin++] = h[i - 1];
		n->out[n->nout++] = h[i];
	}
	for (int i = 1; i <= L; i++)
		g[i] = add_tensor(d, a, d->t[h[i]].bytes, CAT_GRADIENTS, false);
	DagNode *n = add_node(d, a, 1, true, 1, 0);
	n->in[n->nin++] = h[L];
	n->acc[n->nacc++] = (DagAcc){g[L], -1, false};
	for (int i = L; i >= 1; i--) {
		n = add_node(d, a, 2 * d->node[i - 1].cost, true, 2, 0);
		n->in[n->nin++] = g[i];
		n->in[n->nin++] = h[i - 1];
		if (i > 1)
			n->acc[n->nacc++] = (DagAcc){g[i - 1], -1, false};
	}
	dag_finish(d);
}

/* A random layered DAG in the Moccasin style: every node recomputable,
 * edges to the next few layers, base order layer by layer. */
static void
layered(Dag *d, Arena *a, int n, int width)
{
	memset(d, 0, sizeof *d);
	d->t = ar_alloc(a, sizeof *d->t * (size_t)n);
	d->node = ar_alloc(a, sizeof *d->node * (size_t)n);
	d->base_order = ar_alloc(a, sizeof(int) * (size_t)n);
	for (int v = 0; v < n; v++) {
		int nin = v == 0 ? 0 : 1 + rnd(4);
		int layer = v / width;
		DagNode *nd = add_node(d, a, 1 + rnd(100), false, nin, 1);
		nd->out[nd->nout++] = add_tensor(d, a, 1 + rnd(1000), CAT_ACTIVATIONS, false);
		for (int k = 0; k < nin; k++) {
			int lo = (layer > 3 ? layer - 3 : 0) * width;
			int u = lo + rnd(v - lo > 0 ? v - lo : 1);
			if (u >= v)
				u = v - 1;
			bool dup = false;
			for (int j = 0; j < nd->nin; j++)
				dup |= nd->in[j] == u;
			if (!dup)
				nd->in[nd->nin++] = u;
		}
	}
	dag_finish(d);
}

static PlanResult
plan(const Dag *d, int level, int64_t budget, double *secs, Arena *a)
{
	PlanGoal g = {level, 1.0, budget, false};
	double t0 = util_now();
	PlanResult r = rm_plan(d, &g, a);
	*secs = util_now() - t0;
	return r;
}

static void
bench_generated(const char *what, Dag *d)
{
	Arena a;
	double s0, s1, s2;

	ar_init(&a);
	PlanResult r0 = plan(d, 0, -1, &s0, &a);
	PlanResult r1 = plan(d, 1, -1, &s1, &a);
	PlanResult r2 = plan(d, 2, -1, &s2, &a);
	printf("%-28s %7d nodes  O0 %12lld  O1 %12lld (%6.3f s)  O2 %12lld "
	       "(%6.3f s, recompute %.2f x fwd)  bound %lld\n",
	       what, d->nnode, (long long)r0.peak, (long long)r1.peak, s1,
	       (long long)r2.peak, s2,
	       (double)r2.recompute_cost / (double)(d->forward_cost ? d->forward_cost : 1),
	       (long long)r2.lower_bound);
	ar_free(&a);
}

/* The best published TDI (%) at budgets 0.9 and 0.8 of the reference peak
 * (../shared/data/checkmate/README.md: the better of Checkmate's MILP and
 * Moccasin), or -1 where none is published. */
static const struct {
	const char *file;
	double tdi[2];
} published[] = {
	{"fcn8_vgg_b32_train.json", {0.0, 0.1}},
	{"resnet50_b256_train.json", {0.1, 0.3}},
	{"random_layered_n250.json", {0.9, 4.9}},
	{"random_layered_n1000.json", {0.7, 3.4}},
};

static double
published_tdi(const char *name, int i)
{
	for (size_t k = 0; k < sizeof published / sizeof published[0]; k++)
		if (!strcmp(published[k].file, name))
			return published[k].tdi[i];
	return -1;
}

/* One table row per budget: graph, budget, planned peak, TDI, best
 * published TDI, solve time. */
static void
bench_checkmate_file(const char *path, const char *name)
{
	Arena a;
	Dag d;
	char err[512], pub[16], gname[32];
	double s0;

	ar_init(&a);
	if (cm_import(path, &d, &a, err, sizeof err) != 0) {
		printf("%s: %s\n", name, err);
		ar_free(&a);
		return;
	}
	dag_finish(&d);
	snprintf(gname, sizeof gname, "%.*s", (int)strcspn(name, "."), name);
	PlanResult r0 = plan(&d, 0, -1, &s0, &a);
	static const double frac[] = {0.9, 0.8};
	for (int i = 0; i < 2; i++) {
		double s, p = published_tdi(name, i);
		int64_t b = (int64_t)ceil((double)r0.peak * frac[i]);
		PlanResult r = plan(&d, 2, b, &s, &a);
		if (p >= 0)
			snprintf(pub, sizeof pub, "%.1f%%", p);
		else
			snprintf(pub, sizeof pub, "-");
		printf("%-22s %4.1f %14lld %14lld %-4s %8.3f%% %9s %9.0f\n", gname,
		       frac[i], (long long)b, (long long)r.peak, r.fits ? "fits" : "MISS",
		       100.0 * (double)r.recompute_cost / (double)d.total_cost, pub,
		       1000 * s);
	}
	ar_free(&a);
}

static int
cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static void
bench_checkmate(const char *dir)
{
	DIR *dp = opendir(dir);
	struct dirent *e;
	char *names[64];
	int n = 0;

	if (!dp) {
		printf("checkmate graphs: %s not found, skipped\n", dir);
		return;
	}
	while ((e = readdir(dp)) && n < 64)
		if (strstr(e->d_name, ".json"))
			names[n++] = strdup(e->d_name);
	closedir(dp);
	qsort(names, (size_t)n, sizeof *names, cmp_str);
	printf("\n%-22s %4s %14s %14s %-4s %9s %9s %9s\n", "graph", "frac",
	       "budget", "planned peak", "", "TDI", "best pub", "solve ms");
	for (int i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		bench_checkmate_file(path, names[i]);
		free(names[i]);
	}
}

int
main(int argc, char **argv)
{
	static const int layers[] = {1000, 12500, 25000, 50000};
	Arena a;
	Dag d;

	bench_nets(argc > 2 ? argv[2] : "examples");
	for (int i = 0; i < 4; i++) {
		ar_init(&a);
		train_chain(&d, &a, layers[i]);
		bench_generated(ar_printf(&a, "chain %d layers", layers[i]), &d);
		ar_free(&a);
	}
	ar_init(&a);
	layered(&d, &a, 1000, 12);
	bench_generated("random layered 1000", &d);
	ar_free(&a);
	if (argc > 1)
		bench_checkmate(argv[1]);
	return 0;
}
