/* main.c -- the remat command line: options, reading the source, and
 * handing the result to a report or the code generator. The pipeline
 * itself is analyze() in passes/analyze.c. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "dag.h"
#include "onnx.h"

enum { MAX_DEFS = 256 };

typedef struct Options {
	const char *file;
	const char *out;        /* -o: generated CUDA C */
	NetOptions net;
	PlanGoal goal;
	bool level_set;
	bool dump_ir, json, verify;
	bool stats;             /* --stats: time and peak RSS on stderr */
	bool checkmate;
	bool onnx;              /* --import onnx: frontend/onnx */
	OnnxOptions onnx_opt;   /* --params, --loss, --emit-net */
	int64_t max_batch;      /* --max-batch SIZE, or -1 */
	ReportOptions report;
} Options;

enum {
	OPT_INFER = 256, OPT_OPTIMIZER, OPT_PRECISION, OPT_ACCUMULATE,
	OPT_DUMP_IR, OPT_JSON, OPT_MAX_RECOMPUTE, OPT_BUDGET, OPT_EXACT,
	OPT_VERIFY, OPT_MAX_BATCH, OPT_IMPORT, OPT_TOP, OPT_BYTES, OPT_STATS, OPT_HELP,
	OPT_VERSION, OPT_PARAMS, OPT_LOSS, OPT_EMIT_NET
};

static const struct option long_options[] = {
	{"infer", no_argument, NULL, OPT_INFER},
	{"optimizer", required_argument, NULL, OPT_OPTIMIZER},
	{"precision", required_argument, NULL, OPT_PRECISION},
	{"accumulate", required_argument, NULL, OPT_ACCUMULATE},
	{"dump-ir", no_argument, NULL, OPT_DUMP_IR},
	{"json", no_argument, NULL, OPT_JSON},
	{"max-recompute", required_argument, NULL, OPT_MAX_RECOMPUTE},
	{"budget", required_argument, NULL, OPT_BUDGET},
	{"exact", no_argument, NULL, OPT_EXACT},
	{"verify", no_argument, NULL, OPT_VERIFY},
	{"max-batch", required_argument, NULL, OPT_MAX_BATCH},
	{"import", required_argument, NULL, OPT_IMPORT},
	{"top", required_argument, NULL, OPT_TOP},
	{"bytes", no_argument, NULL, OPT_BYTES},
	{"stats", no_argument, NULL, OPT_STATS},
	{"help", no_argument, NULL, OPT_HELP},
	{"version", no_argument, NULL, OPT_VERSION},
	{"params", required_argument, NULL, OPT_PARAMS},
	{"loss", required_argument, NULL, OPT_LOSS},
	{"emit-net", required_argument, NULL, OPT_EMIT_NET},
	{NULL, 0, NULL, 0},
};

static void
usage(FILE *f)
{
	fputs("usage: remat [options] FILE.net        (FILE '-' reads stdin)\n"
	      "       remat --import checkmate [options] FILE.json\n"
	      "       remat --import onnx [--loss KIND[:OUT]] [--params RE] [--emit-net F.net] [options] MODEL.onnx\n"
	      "\n"
	      "Analyzes the training memory of a network and plans rematerialization.\n"
	      "\n"
	      "  -D NAME=VALUE          override a dim or batch (repeatable)\n"
	      "  -O0 | -O1 | -O2 | -O3  save everything | sqrt(n) checkpoints |\n"
	      "                         minimize peak (default -O0)\n"
	      "  --max-recompute R      -O2 recompute cap, R x forward FLOPs or 'inf'\n"
	      "                         (default 1.0)\n"
	      "  --budget SIZE          minimize recompute with peak <= SIZE (implies -O2)\n"
	      "  --exact                exhaustive search (small graphs only)\n"
	      "  --verify               replay the plan through an independent evaluator\n"
	      "  --infer                analyze inference only\n"
	      "  --optimizer NAME       sgd momentum adagrad rmsprop lion adam adamw\n"
	      "  --precision P          declared | mixed\n"
	      "  --accumulate K         gradient accumulation steps (K divides the batch)\n"
	      "  --max-batch SIZE       print the largest batch whose peak fits in SIZE\n"
	      "  --json                 print the JSON report\n"
	      "  --dump-ir              print every tensor after shape inference\n"
	      "  --top N                tensors listed at the peak (default 10)\n"
	      "  --bytes                print exact byte counts everywhere\n"
	      "  --stats                print wall time and peak RSS on stderr\n"
	      "  --loss KIND[:OUT]      ONNX: add a cross_entropy or mse loss on output OUT\n"
	      "  --params REGEX         ONNX: graph inputs that are parameters (docs/onnx.md)\n"
	      "  --emit-net FILE.net    ONNX: also write the imported model as .net\n"
	      "  -o FILE.cu             emit a CUDA C program that runs the schedule\n"
	      "  --help, --version\n"
	      "\n"
	      "SIZE takes K M G T or KiB MiB GiB TiB (powers of 1024), KB MB GB TB\n"
	      "(powers of 1000), or plain bytes.\n"
	      "Exit status: 0 ok, 1 errors in the input, 2 usage, 3 budget unmet,\n"
	      "4 internal error.\n", f);
}

/* parse_size: "12GiB", "1.5G", "800MB", "4096" -> bytes; -1 if malformed. */
static int64_t
parse_size(const char *s)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{"", 1}, {"B", 1},
		{"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}, {"T", 1099511627776.0},
		{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	};
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || isinf(v))
		return -1;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		v = ceil(v * units[i].mult);
		return v < 9.2e18 ? (int64_t)v : -1;
	}
	return -1;
}

static int64_t
parse_count(const char *opt, const char *s, int64_t min)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < min)
		diag_usage("%s: expected an integer >= %lld, got '%s'", opt, (long long)min, s);
	return v;
}

static void
parse_define(Options *o, char *arg)
{
	char *eq = strchr(arg, '='), *end;
	long long v;

	if (!eq || eq == arg)
		diag_usage("-D expects NAME=VALUE, got '%s'", arg);
	errno = 0;
	v = strtoll(eq + 1, &end, 10);
	if (end == eq + 1 || *end || errno || v <= 0)
		diag_usage("-D %s: the value must be a positive integer", arg);
	if (o->net.ndefs == MAX_DEFS)
		diag_usage("too many -D options (at most %d)", MAX_DEFS);
	*eq = 0;                /* the name ends here: argv is ours to edit */
	o->net.defs[o->net.ndefs].name = arg;
	o->net.defs[o->net.ndefs].value = v;
	o->net.ndefs++;
}

static void
parse_option(Options *o, int c, char *arg)
{
	int k;

	switch (c) {
	case 'D': parse_define(o, arg); break;
	case 'O':
		if (strlen(arg) != 1 || arg[0] < '0' || arg[0] > '3')
			diag_usage("unknown optimization level '-O%s' (use -O0 to -O3)", arg);
		o->goal.level = arg[0] - '0';
		o->level_set = true;
		break;
	case 'o': o->out = arg; break;
	case OPT_INFER: o->net.infer_set = o->net.infer = true; break;
	case OPT_OPTIMIZER:
		if ((k = optimizer_from_name(arg)) < 0)
			diag_usage("unknown optimizer '%s' (sgd momentum adagrad rmsprop lion adam adamw)", arg);
		o->net.optimizer_set = true;
		o->net.optimizer = (Optimizer)k;
		break;
	case OPT_PRECISION:
		if (strcmp(arg, "declared") && strcmp(arg, "mixed"))
			diag_usage("--precision must be 'declared' or 'mixed', not '%s'", arg);
		o->net.precision_set = true;
		o->net.mixed = !strcmp(arg, "mixed");
		break;
	case OPT_ACCUMULATE:
		o->net.accumulate_set = true;
		o->net.accumulate = parse_count("--accumulate", arg, 1);
		break;
	case OPT_DUMP_IR: o->dump_ir = true; break;
	case OPT_JSON: o->json = true; break;
	case OPT_MAX_RECOMPUTE: {
		char *end;
		if (!strcmp(arg, "inf")) {
			o->goal.max_recompute = -1;
			break;
		}
		errno = 0;
		o->goal.max_recompute = strtod(arg, &end);
		if (end == arg || *end || errno || !(o->goal.max_recompute >= 0) ||
		    isinf(o->goal.max_recompute))
			diag_usage("--max-recompute expects a ratio >= 0 or 'inf', not '%s'", arg);
		break;
	}
	case OPT_BUDGET:
		if ((o->goal.budget = parse_size(arg)) < 0)
			diag_usage("--budget: cannot read size '%s' (e.g. 12GiB, 800MB, 4096)", arg);
		break;
	case OPT_EXACT: o->goal.exact = true; break;
	case OPT_VERIFY: o->verify = true; break;
	case OPT_MAX_BATCH:
		if ((o->max_batch = parse_size(arg)) < 0)
			diag_usage("--max-batch: cannot read size '%s' (e.g. 80GiB)", arg);
		break;
	case OPT_IMPORT:
		if (strcmp(arg, "checkmate") && strcmp(arg, "onnx"))
			diag_usage("--import: unknown format '%s' (checkmate or onnx)", arg);
		o->checkmate = !strcmp(arg, "checkmate");
		o->onnx = !o->checkmate;
		break;
	case OPT_PARAMS: o->onnx_opt.params = arg; break;
	case OPT_LOSS: o->onnx_opt.loss = arg; break;
	case OPT_EMIT_NET: o->onnx_opt.emit_net = arg; break;
	case OPT_TOP: o->report.top = (int)parse_count("--top", arg, 0); break;
	case OPT_BYTES: o->report.exact_bytes = true; break;
	case OPT_STATS: o->stats = true; break;
	case OPT_HELP: usage(stdout); exit(0);
	case OPT_VERSION: puts("remat " PACKAGE_VERSION); exit(0);
	default: diag_usage("unknown option");
	}
}

static void
parse_args(Options *o, int argc, char **argv)
{
	static DimOverride defs[MAX_DEFS];
	int c;

	memset(o, 0, sizeof *o);
	o->net.defs = defs;
	o->goal.max_recompute = 1.0;
	o->goal.budget = -1;
	o->max_batch = -1;
	o->report.top = 10;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":D:O:o:", long_options, NULL)) != -1) {
		if (c == '?')
			diag_usage("unknown option '%s'", argv[optind - 1]);
		if (c == ':')
			diag_usage("option '%s' needs a value", argv[optind - 1]);
		parse_option(o, c, optarg);
	}
	if (optind != argc - 1)
		diag_usage(optind == argc ? "no input file" : "exactly one input file expected");
	o->file = argv[optind];
	if (!o->onnx && (o->onnx_opt.params || o->onnx_opt.loss || o->onnx_opt.emit_net))
		diag_usage("--params, --loss and --emit-net need --import onnx");
	if (o->goal.budget >= 0 && o->goal.level < 2)
		o->goal.level = 2;      /* --budget implies -O2 unless higher */
	if (o->goal.exact && o->goal.level < 2)
		o->goal.level = 2;
}

/* Reads the whole file (or stdin for "-"); exits 1 with a message. */
static Source
read_source(const char *path, Arena *a)
{
	Source src = {strcmp(path, "-") ? path : "<stdin>", NULL, 0};
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	size_t cap = 1 << 16, n;
	char *buf;

	if (!f) {
		fprintf(stderr, "remat: cannot open '%s': %s\n", path, strerror(errno));
		exit(1);
	}
	buf = xmalloc(cap);
	while ((n = fread(buf + src.len, 1, cap - src.len - 1, f)) > 0) {
		src.len += n;
		if (cap - src.len - 1 == 0)
			buf = xrealloc(buf, cap *= 2);
	}
	if (ferror(f)) {
		fprintf(stderr, "remat: cannot read '%s': %s\n", path, strerror(errno));
		free(buf);
		exit(1);
	}
	if (f != stdin)
		fclose(f);
	buf[src.len] = 0;
	src.text = ar_strndup(a, buf, src.len);
	free(buf);
	return src;
}

/* Writes the generated program to path through a temporary file, so that a
 * failure leaves no partial output. */
static int
emit_file(const Analysis *an, const char *path, Arena *a)
{
	char *tmp = ar_printf(a, "%s.tmp%ld", path, (long)getpid());
	FILE *f = fopen(tmp, "w");
	int bad;

	if (!f) {
		fprintf(stderr, "remat: cannot write '%s': %s\n", path, strerror(errno));
		return 1;
	}
	bad = cg_emit(&an->g, &an->d, &an->plan.sched, &an->ev, an->arena_bytes, f);
	bad |= ferror(f);
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		fprintf(stderr, "remat: cannot write '%s'\n", path);
		remove(tmp);
		return 4;
	}
	return 0;
}

static void
set_batch(NetOptions *net, const char *name, int64_t value)
{
	for (int i = 0; i < net->ndefs; i++)
		if (!strcmp(net->defs[i].name, name)) {
			net->defs[i].value = value;
			return;
		}
	if (net->ndefs == MAX_DEFS)
		diag_usage("too many -D options (at most %d)", MAX_DEFS);
	net->defs[net->ndefs].name = name;
	net->defs[net->ndefs++].value = value;
}

/* Peak at batch b, or -1 when the analysis fails at that batch. */
static int64_t
peak_at(const Program *prog, Options *o, const char *bname, int64_t b)
{
	Arena a;
	Analysis an;
	Diag d;
	int64_t peak;
	int rc;

	set_batch(&o->net, bname, b);
	ar_init(&a);
	diag_init(&d, NULL, stderr);
	d.quiet_warnings = true;
	PlanGoal goal = o->goal;
	goal.budget = -1;
	rc = analyze(prog, o->file, &o->net, &goal, false, &an, &a, &d);
	peak = rc == 0 ? an.ev.peak : -1;
	ar_free(&a);
	return peak;
}

/* --max-batch: the largest batch (a multiple of the accumulation steps)
 * whose peak fits, by doubling then bisection. The peak grows with the
 * batch in every graph we know; probes that contradict it are reported. */
static int
max_batch(const Program *prog, Options *o, const Analysis *an)
{
	const char *bname = an->g.batch_dim;
	int64_t step = an->g.settings.accumulate, lo = 0, hi, p, last = -1;
	bool monotone = true;
	char buf[32];

	if (!bname) {
		fprintf(stderr, "remat: --max-batch: %s declares no `batch` dimension\n", o->file);
		return 1;
	}
	for (hi = step; (p = peak_at(prog, o, bname, hi)) >= 0 && p <= o->max_batch; hi *= 2) {
		if (p < last)
			monotone = false;
		last = p;
		lo = hi;
		if (hi > ((int64_t)1 << 40))
			break;
	}
	while (hi - lo > step) {
		int64_t mid = lo + (hi - lo) / step / 2 * step;
		p = peak_at(prog, o, bname, mid);
		if (p >= 0 && p <= o->max_batch)
			lo = mid;
		else
			hi = mid;
	}
	if (lo == 0) {
		printf("no batch fits in %s (%lld bytes): batch %lld needs %lld bytes\n",
		       report_size(o->max_batch, buf), (long long)o->max_batch,
		       (long long)step, (long long)peak_at(prog, o, bname, step));
		return 3;
	}
	p = peak_at(prog, o, bname, lo);
	printf("max batch %s = %lld: peak %s (%lld bytes) fits in %lld bytes\n",
	       bname, (long long)lo, report_size(p, buf), (long long)p,
	       (long long)o->max_batch);
	if (!monotone)
		printf("note: the peak was not monotone in the batch at the probed sizes\n");
	return 0;
}

/* Everything after reading the source; the caller frees the arena. */
static int
compile(Options *o, const Source *src, Arena *a)
{
	Program *prog;
	Analysis an;
	Diag d;
	int rc;

	diag_init(&d, src, stderr);
	prog = net_parse(src, a, &d);
	if (!prog || d.nerrors)
		return 1;
	if (o->dump_ir) {
		ir_graph_init(&an.g, a, src->name);
		if (net_instantiate(prog, &o->net, &an.g, &d) || shape_infer(&an.g, &d))
			return 1;
		ir_dump(&an.g, stdout);
		return 0;
	}
	rc = analyze(prog, src->name, &o->net, &o->goal, o->verify, &an, a, &d);
	if (rc == 1 || rc == 4)
		return rc;
	if (rc == 3) {
		fprintf(stderr, "error: no schedule fits in %lld bytes; smallest peak found: %lld bytes\n",
		        (long long)o->goal.budget, (long long)an.plan.peak);
		return 3;
	}
	if (o->max_batch >= 0)
		return max_batch(prog, o, &an);
	if (o->out && (rc = emit_file(&an, o->out, a)))
		return rc;
	if (o->json)
		report_json(&an, stdout);
	else
		report_human(&an, &o->report, stdout);
	return 0;
}

static int
run_net(Options *o)
{
	Arena a;
	Source src;
	int rc;

	ar_init(&a);
	if (o->onnx)
		rc = onnx_import(o->file, &o->onnx_opt, &o->net, &a, &src);
	else
		src = read_source(o->file, &a), rc = 0;
	if (rc == 0)
		rc = compile(o, &src, &a);
	ar_free(&a);
	if (fflush(stdout) && rc == 0)
		rc = 4;
	return rc;
}

static void
print_stats(const struct timespec *t0)
{
	struct timespec t1;
	struct rusage ru;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(stderr, "stats: %.3f s wall, %ld KiB peak RSS\n",
	        (double)(t1.tv_sec - t0->tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0->tv_nsec),
	        ru.ru_maxrss);
}

int
main(int argc, char **argv)
{
	struct timespec t0;
	Options o;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	parse_args(&o, argc, argv);
	if (o.checkmate)
		rc = cm_run(o.file, &o.goal, o.json, o.verify, stdout);
	else
		rc = run_net(&o);
	if (o.stats)
		print_stats(&t0);
	return rc;
}
