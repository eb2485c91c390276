/* driver/main.c -- the remat command line: options, reading the source, and
 * handing the result to a report or the code generator. The pipeline
 * itself is analyze() in driver/analyze.c. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "driver.h"

enum { MAX_DEFS = 256 };

typedef struct Options {
	const char *file;
	const char *out;        /* -o: generated CUDA C */
	NetOptions net;
	PlanGoal goal;
	bool level_set;
	bool dump_ir, json, verify;
	PassOptions passes;     /* -d PASS, --check */
	bool zero_table;        /* --zero-table */
	bool prefetch_set;      /* --prefetch */
	bool graph_json;        /* --graph-json */
	GpuCheck gpu;           /* --gpu, --reserve; preset NULL: none */
	const char *emit_torch; /* --emit-torch FILE.py */
	bool stats;             /* --stats: time and peak RSS on stderr */
	bool checkmate;
	bool onnx;              /* --import onnx: frontend/onnx */
	OnnxOptions onnx_opt;   /* --params, --loss, --emit-net, --max-input */
	size_t max_input;       /* --max-input SIZE: the .net reader's cap */
	int64_t max_batch;      /* --max-batch SIZE, or -1 */
	bool top_set, bytes_set;
	ReportOptions report;
	/* flags given, for the no-effect warnings of warn_no_effect() */
	bool max_recompute_set;
	VizOptions viz;         /* --plot, --html, ..., --sweep (viz.c) */
} Options;

enum {
	OPT_INFER = 256, OPT_OPTIMIZER, OPT_PRECISION, OPT_ACCUMULATE,
	OPT_DUMP_IR, OPT_JSON, OPT_MAX_RECOMPUTE, OPT_BUDGET, OPT_EXACT,
	OPT_VERIFY, OPT_MAX_BATCH, OPT_IMPORT, OPT_TOP, OPT_BYTES, OPT_STATS, OPT_HELP,
	OPT_VERSION, OPT_CHECK, OPT_RANKS, OPT_ZERO, OPT_BUCKET, OPT_OFFLOAD, OPT_ZERO_TABLE,
	OPT_STAGES, OPT_MICRO_BATCHES, OPT_SCHEDULE, OPT_STAGE_BLOCKS,
	OPT_RUNTIME, OPT_GRAPH_JSON, OPT_GPU, OPT_RESERVE, OPT_EMIT_TORCH,
	OPT_PARAMS, OPT_LOSS, OPT_EMIT_NET, OPT_PREFETCH, OPT_MAX_INPUT
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
	{"check", no_argument, NULL, OPT_CHECK},
	{"ranks", required_argument, NULL, OPT_RANKS},
	{"zero", required_argument, NULL, OPT_ZERO},
	{"bucket", required_argument, NULL, OPT_BUCKET},
	{"offload", required_argument, NULL, OPT_OFFLOAD},
	{"zero-table", no_argument, NULL, OPT_ZERO_TABLE},
	{"prefetch", required_argument, NULL, OPT_PREFETCH},
	{"stages", required_argument, NULL, OPT_STAGES},
	{"micro-batches", required_argument, NULL, OPT_MICRO_BATCHES},
	{"schedule", required_argument, NULL, OPT_SCHEDULE},
	{"stage-blocks", required_argument, NULL, OPT_STAGE_BLOCKS},
	{"runtime", required_argument, NULL, OPT_RUNTIME},
	{"graph-json", no_argument, NULL, OPT_GRAPH_JSON},
	{"gpu", required_argument, NULL, OPT_GPU},
	{"reserve", required_argument, NULL, OPT_RESERVE},
	{"emit-torch", required_argument, NULL, OPT_EMIT_TORCH},
	VIZ_LONG_OPTIONS,
	{"params", required_argument, NULL, OPT_PARAMS},
	{"loss", required_argument, NULL, OPT_LOSS},
	{"emit-net", required_argument, NULL, OPT_EMIT_NET},
	{"max-input", required_argument, NULL, OPT_MAX_INPUT},
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
	      "  -d PASS[,PASS...]      print the state after each PASS instead of the\n"
	      "                         report: instantiate shape autodiff lower plan\n"
	      "                         liveness memplan\n"
	      "  --check                check the invariants after every pass\n"
	      "  --ranks N              data-parallel ranks; figures are per rank\n"
	      "  --zero 0|1|2|3         ZeRO stage: shard optimizer state and master\n"
	      "                         (1), gradients (2), weights (3)\n"
	      "  --bucket SIZE          gradient bucket size (default 25MiB)\n"
	      "  --offload WHAT         optimizer | params | optimizer,params: keep them\n"
	      "                         on the host (params needs --zero 3)\n"
	      "  --prefetch N           ZeRO 3: gather the next N units' weights ahead\n"
	      "                         of the running one (default 0)\n"
	      "  --zero-table           per-rank peak for every ZeRO stage and rank count\n"
	      "  --stages K             pipeline stages of contiguous outermost def calls;\n"
	      "                         figures are per stage (the largest one reported);\n"
	      "                         with --ranks N, per rank of a stage (K x N ranks)\n"
	      "  --micro-batches M      micro-batches per step in the pipeline (default K)\n"
	      "  --schedule S           1f1b (default) | gpipe\n"
	      "  --stage-blocks N,...   def calls per stage (default: balanced by memory)\n"
	      "  --top N                tensors listed at the peak (default 10)\n"
	      "  --bytes                print exact byte counts everywhere\n"
	      "  --stats                print wall time and peak RSS on stderr\n"
	      "  --max-input SIZE       the largest input file read (default 64MiB)\n"
	      "  --loss KIND[:OUT]      ONNX: add a cross_entropy or mse loss on output OUT\n"
	      "  --params REGEX         ONNX: graph inputs that are parameters (docs/onnx.md)\n"
	      "  --emit-net FILE.net    ONNX: also write the imported model as .net\n"
	      "  -o FILE.cu             emit a CUDA C program that runs the schedule\n"
	      "  --runtime R            remat | pytorch: whose allocations to count\n"
	      "                         (default remat; docs/runtime-pytorch.md)\n"
	      "  --graph-json           print the graph's ops and tensors as JSON\n"
	      "  --gpu NAME             say whether the step fits on a card: A100-40GB\n"
	      "                         A100-80GB H100-80GB H200 RTX4090 RTX3090 L4 T4\n"
	      "                         V100-16GB V100-32GB\n"
	      "  --reserve SIZE         memory the card keeps for the CUDA context and\n"
	      "                         workspaces (default 1GiB)\n"
	      "  --emit-torch FILE.py   write the plan as torch.utils.checkpoint wrapping\n"
	      VIZ_USAGE
	      "  --help, --version\n"
	      "\n"
	      "SIZE takes K M G T or KiB MiB GiB TiB (powers of 1024), KB MB GB TB\n"
	      "(powers of 1000), B, or plain bytes (at least 1 MiB without a unit);\n"
	      "units are case-blind. See remat(1) and docs/ in the source tree.\n"
	      "Exit status: 0 ok, 1 errors in the input, 2 usage, 3 budget unmet,\n"
	      "4 internal error.\n", f);
}

/* parse_size: "12GiB", "1.5G", "800MB", "80gb", "4096" -> bytes; -1 if
 * malformed. Units are case-blind; *unit says whether one was written. */
static int64_t
parse_size_unit(const char *s, bool *unit)
{
	static const struct { const char *suffix; double mult; } units[] = {
		{"", 1}, {"B", 1},
		{"K", 1024.0}, {"M", 1048576.0}, {"G", 1073741824.0}, {"T", 1099511627776.0},
		{"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	};
	size_t digits = strspn(s, "0123456789.");
	char *end;
	double v;

	/* plain decimal digits only: no sign, hex, exponent, inf or nan */
	if (!digits || strchr(s, '.') != strrchr(s, '.') || !strchr("0123456789", s[0]))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (end != s + digits || errno || !(v >= 0) || isinf(v))
		return -1;
	*unit = *end != 0;
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (strcasecmp(end, units[i].suffix))
			continue;
		v = ceil(v * units[i].mult);
		return v < 9.2e18 ? (int64_t)v : -1;
	}
	return -1;
}

/* A size flag's value. A number without a unit is bytes, but `--budget 80`
 * almost always means 80 GiB: below 1 MiB, plain bytes must say "B". */
static int64_t
parse_size(const char *opt, const char *s, const char *example)
{
	bool unit = false;
	int64_t v = parse_size_unit(s, &unit);

	if (v < 0)
		diag_usage("%s: cannot read size '%s' (e.g. %s)", opt, s, example);
	if (!unit && v < ((int64_t)1 << 20))
		diag_usage("%s %s: a size needs a unit (e.g. %sGiB, %sGB, or %sB for "
		           "bytes)", opt, s, s, s, s);
	return v;
}

/* A decimal integer in [min, max]: digits only (no sign, no spaces). */
static int64_t
parse_count(const char *opt, const char *s, int64_t min, int64_t max)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	if (!strchr("0123456789", s[0]) || !s[0] || *end || errno || v < min || v > max)
		diag_usage("%s: expected an integer from %lld to %lld, got '%s'", opt,
		           (long long)min, (long long)max, s);
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
	if (!eq[1] || !strchr("0123456789", eq[1]) || *end || errno || v <= 0)
		diag_usage("-D %s: the value must be a positive integer", arg);
	if (o->net.ndefs == MAX_DEFS)
		diag_usage("too many -D options (at most %d)", MAX_DEFS);
	*eq = 0;                /* the name ends here: argv is ours to edit */
	o->net.defs[o->net.ndefs].name = arg;
	o->net.defs[o->net.ndefs].value = v;
	o->net.ndefs++;
}

/* --stage-blocks N0,N1,...: outermost def calls per stage. */
static void
parse_stage_blocks(Options *o, char *arg)
{
	PipeOptions *p = &o->net.pipe;

	p->nsplit = 0;
	for (char *w = strtok(arg, ","); w; w = strtok(NULL, ",")) {
		if (p->nsplit == PIPE_MAXSTAGES)
			diag_usage("--stage-blocks: at most %d stages", PIPE_MAXSTAGES);
		p->split[p->nsplit++] = (int)parse_count("--stage-blocks", w, 1, 1 << 20);
	}
}

/* --offload optimizer|params|optimizer,params */
static void
parse_offload(Options *o, char *arg)
{
	for (char *w = strtok(arg, ","); w; w = strtok(NULL, ",")) {
		if (!strcmp(w, "optimizer"))
			o->net.dist.offload_optimizer = true;
		else if (!strcmp(w, "params"))
			o->net.dist.offload_params = true;
		else
			diag_usage("--offload: unknown '%s' (optimizer, params)", w);
	}
}

/* -d PASS[,PASS...]: which passes' dumps to print. */
static void
parse_dumps(Options *o, char *arg)
{
	for (char *name = strtok(arg, ","); name; name = strtok(NULL, ",")) {
		int p = pass_from_name(name);
		if (p < 0)
			diag_usage("-d: unknown pass '%s' (instantiate shape autodiff lower "
			           "plan liveness memplan)", name);
		o->passes.dump |= 1u << p;
	}
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
		if ((k = optimizer_from_name(arg)) < 0) {
			char hint[96];
			Suggest sg;
			suggest_init(&sg, arg);
			for (int i = 0; i < OPT_COUNT; i++)
				suggest_add(&sg, optimizer_names[i]);
			diag_usage("unknown optimizer '%s'%s (sgd momentum adagrad rmsprop lion adam adamw)",
			           arg, suggest_hint(&sg, hint, sizeof hint));
		}
		o->net.optimizer_set = true;
		o->net.optimizer = (Optimizer)k;
		break;
	case OPT_PRECISION:
		if (strcasecmp(arg, "declared") && strcasecmp(arg, "mixed"))
			diag_usage("--precision must be 'declared' or 'mixed', not '%s'", arg);
		o->net.precision_set = true;
		o->net.mixed = !strcasecmp(arg, "mixed");
		break;
	case OPT_ACCUMULATE:
		o->net.accumulate_set = true;
		o->net.accumulate = parse_count("--accumulate", arg, 1, INT64_MAX);
		break;
	case OPT_DUMP_IR: o->dump_ir = true; break;
	case 'd': parse_dumps(o, arg); break;
	case OPT_CHECK: o->passes.check = true; break;
	case OPT_RANKS: o->net.dist.ranks = (int)parse_count("--ranks", arg, 1, 1 << 20); break;
	case OPT_ZERO: o->net.dist.zero = (int)parse_count("--zero", arg, 0, 3); break;
	case OPT_BUCKET:
		if ((o->net.dist.bucket = parse_size("--bucket", arg, "25MiB")) <= 0)
			diag_usage("--bucket: must be at least one byte");
		break;
	case OPT_OFFLOAD: parse_offload(o, arg); break;
	case OPT_ZERO_TABLE: o->zero_table = true; break;
	case OPT_PREFETCH:
		o->prefetch_set = true;
		o->net.dist.prefetch = (int)parse_count("--prefetch", arg, 0, 1 << 20);
		break;
	case OPT_STAGES: o->net.pipe.stages = (int)parse_count("--stages", arg, 1, PIPE_MAXSTAGES); break;
	case OPT_MICRO_BATCHES:
		o->net.pipe.micro_batches = (int)parse_count("--micro-batches", arg, 1, 1 << 16);
		break;
	case OPT_SCHEDULE:
		if (strcmp(arg, "1f1b") && strcmp(arg, "gpipe"))
			diag_usage("--schedule: '1f1b' or 'gpipe', got '%s'", arg);
		o->net.pipe.gpipe = !strcmp(arg, "gpipe");
		break;
	case OPT_STAGE_BLOCKS: parse_stage_blocks(o, arg); break;
	case OPT_JSON: o->json = true; break;
	case OPT_BYTES: o->report.exact_bytes = o->bytes_set = true; break;
	case OPT_MAX_RECOMPUTE: {
		char *end;
		o->max_recompute_set = true;
		if (!strcmp(arg, "inf")) {
			o->goal.max_recompute = -1;
			break;
		}
		errno = 0;
		o->goal.max_recompute = strtod(arg, &end);
		if (!arg[0] || !strchr("0123456789.", arg[0]) || strpbrk(arg, "xXnN") ||
		    *end || errno || !(o->goal.max_recompute >= 0) ||
		    isinf(o->goal.max_recompute))
			diag_usage("--max-recompute expects a ratio >= 0 or 'inf', not '%s'", arg);
		break;
	}
	case OPT_BUDGET:
		o->goal.budget = parse_size("--budget", arg, "12GiB, 800MB, 4096B");
		break;
	case OPT_EXACT: o->goal.exact = true; break;
	case OPT_VERIFY: o->verify = true; break;
	case OPT_MAX_BATCH:
		o->max_batch = parse_size("--max-batch", arg, "80GiB");
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
	case OPT_MAX_INPUT:
		if ((o->onnx_opt.max_input = o->max_input = (size_t)parse_size("--max-input",
		     arg, "512MiB")) < 1)
			diag_usage("--max-input: must be at least one byte");
		break;
	case OPT_TOP:
		o->report.top = (int)parse_count("--top", arg, 0, 1 << 20);
		o->top_set = true;
		break;
	case OPT_STATS: o->stats = true; break;
	case OPT_RUNTIME:
		if (strcmp(arg, "remat") && strcmp(arg, "pytorch"))
			diag_usage("--runtime must be 'remat' or 'pytorch', not '%s'", arg);
		o->net.pytorch = !strcmp(arg, "pytorch");
		break;
	case OPT_GRAPH_JSON: o->graph_json = true; break;
	case OPT_GPU:
		if (!(o->gpu.preset = gpu_preset(arg)))
			diag_usage("--gpu: unknown card '%s' (%s)", arg, gpu_preset_names());
		break;
	case OPT_EMIT_TORCH: o->emit_torch = arg; break;
	case OPT_RESERVE:
		o->gpu.reserve = parse_size("--reserve", arg, "1GiB, 800MB");
		break;
	case OPT_HELP: usage(stdout); exit(0);
	case OPT_VERSION: puts("remat " PACKAGE_VERSION); exit(0);
	default:
		if (!viz_option(&o->viz, c, arg))
			diag_usage("unknown option");
	}
}

/* "unknown option '--bugdet' (did you mean '--budget'?)" */
static _Noreturn void
unknown_option(const char *arg)
{
	char word[64], hint[96];
	Suggest sg;

	snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
	suggest_init(&sg, word);
	for (const struct option *lo = long_options; lo->name; lo++) {
		char cand[64];
		snprintf(cand, sizeof cand, "--%s", lo->name);
		suggest_add(&sg, cand);
	}
	diag_usage("unknown option '%s'%s", word, suggest_hint(&sg, hint, sizeof hint));
}

/* Flags that the chosen level or output makes moot: said, not fatal. */
static void
warn_no_effect(const Options *o)
{
	if (o->max_recompute_set && o->goal.budget >= 0)
		fprintf(stderr, "remat: warning: --max-recompute has no effect with "
		        "--budget (a budget has no recompute cap)\n");
	else if (o->max_recompute_set && o->goal.level < 2)
		fprintf(stderr, "remat: warning: --max-recompute has no effect at -O%d "
		        "(it caps -O2 and -O3)\n", o->goal.level);
	/* with --dump-ir and --max-batch these are usage errors (check_modes) */
	if (o->json && (o->top_set || o->report.exact_bytes))
		fprintf(stderr, "remat: warning: %s has no effect with --json (it shapes "
		        "the human report)\n", o->top_set ? "--top" : "--bytes");
}

/* A flag that has no effect in the chosen mode is a usage error, never
 * silently ignored (docs/limits.md). */
static void
check_modes(const Options *o)
{
	const char *mode = o->checkmate ? "--import" : o->dump_ir ? "--dump-ir"
	                   : o->max_batch >= 0 ? "--max-batch" : NULL;

	if (o->out && mode)
		diag_usage("-o has no effect with %s", mode);
	if (o->checkmate) {
		const char *flag = o->net.ndefs ? "-D" : o->net.infer_set ? "--infer"
		                   : o->net.optimizer_set ? "--optimizer"
		                   : o->net.precision_set ? "--precision"
		                   : o->net.accumulate_set ? "--accumulate"
		                   : o->top_set ? "--top" : o->bytes_set ? "--bytes"
		                   : o->dump_ir ? "--dump-ir" : o->max_batch >= 0 ? "--max-batch"
		                   : NULL;
		if (flag)
			diag_usage("%s has no effect with --import checkmate", flag);
	}
	if (o->dump_ir) {
		const char *flag = o->json ? "--json" : o->level_set ? "-O"
		                   : o->goal.budget >= 0 ? "--budget" : o->goal.exact ? "--exact"
		                   : o->verify ? "--verify" : o->max_batch >= 0 ? "--max-batch"
		                   : o->top_set ? "--top" : o->bytes_set ? "--bytes" : NULL;
		if (flag)
			diag_usage("%s has no effect with --dump-ir", flag);
	}
	if (o->max_batch >= 0) {
		const char *flag = o->json ? "--json" : o->top_set ? "--top"
		                   : o->bytes_set ? "--bytes" : NULL;
		if (flag)
			diag_usage("%s has no effect with --max-batch", flag);
	}
	if (o->out && out_is_input(o->out, o->file))
		diag_usage("-o '%s' is the input file; refusing to overwrite it", o->out);
}

/* --ranks, --zero, --offload, --stages and their company. */
static void
check_parallel(const Options *o)
{
	if (o->net.dist.offload_params && o->net.dist.zero != 3)
		diag_usage("--offload params needs --zero 3 (the weights must be sharded)");
	if (o->out && o->net.infer && o->net.dist.zero == 3 && dist_active(&o->net.dist))
		diag_usage("-o: --zero 3 with --infer shards the weights of a pass that gathers "
		           "none; the program cannot run it");
	if (o->prefetch_set && o->net.dist.zero != 3)
		diag_usage("--prefetch needs --zero 3 (only sharded weights are gathered)");
	if (o->net.pipe.stages > 1) {
		if (o->net.accumulate_set)
			diag_usage("--stages: the pipeline's --micro-batches replace --accumulate "
			           "(give the micro-batch count with --micro-batches M)");
		if (o->net.pipe.nsplit && o->net.pipe.nsplit != o->net.pipe.stages)
			diag_usage("--stage-blocks: %d counts for %d stages", o->net.pipe.nsplit,
			           o->net.pipe.stages);
		if (o->checkmate || o->dump_ir)
			diag_usage("--stages cannot be combined with --import or --dump-ir");
	} else if (o->net.pipe.micro_batches || o->net.pipe.gpipe || o->net.pipe.nsplit) {
		diag_usage("--micro-batches, --schedule and --stage-blocks need --stages K (K > 1)");
	}
	if (o->zero_table && (o->checkmate || o->dump_ir || o->json || o->out))
		diag_usage("--zero-table cannot be combined with --import, --dump-ir, --json or -o");
	if (o->passes.dump && (o->checkmate || o->dump_ir || o->max_batch >= 0 || o->out))
		diag_usage("-d cannot be combined with --import, --dump-ir, --max-batch or -o");
}

/* --runtime, --gpu, --reserve, --emit-torch, --graph-json. */
static void
check_pytorch(Options *o)
{
	if (o->checkmate && (o->net.pytorch || o->gpu.preset || o->emit_torch || o->graph_json))
		diag_usage("--runtime, --gpu, --emit-torch and --graph-json need a .net file, not --import");
	if (o->gpu.reserve >= 0 && !o->gpu.preset)
		diag_usage("--reserve needs --gpu NAME");
	if (o->gpu.reserve < 0)
		o->gpu.reserve = GPU_DEFAULT_RESERVE;
	if (o->gpu.preset && o->gpu.reserve >= o->gpu.preset->bytes)
		diag_usage("--reserve: %lld bytes leave nothing of %s", (long long)o->gpu.reserve,
		           o->gpu.preset->name);
	if (o->net.pytorch && o->out)
		diag_usage("-o emits the remat runtime's program; it cannot run a --runtime pytorch plan");
}

/* The pictures, --sweep and --max-batch's single line. */
static void
check_pictures(const Options *o)
{
	if (o->checkmate && (viz_any_file(&o->viz) || o->viz.sweep))
		diag_usage("--plot, --html, --trace, --memory-viz, --dot, --csv and --sweep need a .net file");
	if (o->viz.sweep && (o->json || o->out || (o->max_batch >= 0 && o->goal.budget >= 0) ||
	                     o->viz.html || o->viz.trace || o->viz.memviz || o->viz.dot || o->viz.csv))
		diag_usage("--sweep prints a table and takes only --plot of the outputs, and one of --budget and --max-batch");
	if (o->max_batch >= 0 && !o->viz.sweep && viz_any_file(&o->viz))
		diag_usage("--max-batch prints one line and writes no file (--sweep charts the batch)");
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
	o->gpu.reserve = -1;
	o->report.top = 10;
	o->passes.check = pass_checks_default();
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":D:O:o:d:", long_options, NULL)) != -1) {
		if (c == '?')
			unknown_option(argv[optind - 1]);
		if (c == ':')
			diag_usage("option '%s' needs a value", argv[optind - 1]);
		parse_option(o, c, optarg);
	}
	if (optind != argc - 1)
		diag_usage(optind == argc ? "no input file" : "exactly one input file expected");
	o->file = argv[optind];
	check_modes(o);
	if (!o->onnx && (o->onnx_opt.params || o->onnx_opt.loss || o->onnx_opt.emit_net))
		diag_usage("--params, --loss and --emit-net need --import onnx");
	if (o->goal.budget >= 0 && o->goal.level < 2)
		o->goal.level = 2;      /* --budget implies -O2 unless higher */
	if (o->goal.exact && o->goal.level < 2)
		o->goal.level = 2;
	check_parallel(o);
	check_pytorch(o);
	check_pictures(o);
	warn_no_effect(o);
}

/* Reads the whole file (or stdin for "-"), at most max bytes, into a
 * malloc'd text (the caller frees it unless source_drop did); exits 1
 * with a message. */
static Source
read_source(const char *path, size_t max)
{
	Source src = {strcmp(path, "-") ? path : "<stdin>", NULL, 0, false};
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	struct stat st;
	char *text;

	if (!f) {
		fprintf(stderr, "remat: cannot open '%s': %s\n", path, strerror(errno));
		exit(1);
	}
	if (!(text = read_all(f, max ? max : READ_MAX_DEFAULT, &src.len))) {
		read_fail(src.name, max ? max : READ_MAX_DEFAULT);
		exit(1);
	}
	/* a regular file can be read again for an echo (source_drop) */
	src.reread = f != stdin && !fstat(fileno(f), &st) && S_ISREG(st.st_mode);
	if (f != stdin)
		fclose(f);
	src.text = text;
	return src;
}

/* After the parse only the lines that diagnostics echo are needed: a
 * regular file's text goes (7 MB of 300k statements, resident to the end
 * otherwise) and an echo reads the file again. */
static void
source_drop(Source *src)
{
	if (src->reread) {
		free((char *)(uintptr_t)src->text);
		src->text = NULL;
	}
}

/* What -o writes from: the analysis, and for a pipeline the program and
 * options to analyse every stage again. */
typedef struct OutCtx {
	const Analysis *an;
	const Program *prog;
	const Options *o;
} OutCtx;

/* -o: the generated program (written through out_write, viz.h). */
static int
write_cuda(FILE *f, const void *ctx)
{
	const OutCtx *c = ctx;
	const Analysis *an = c->an;

	if (c->o->net.pipe.stages > 1)
		return stages_program(c->prog, c->o->file, &c->o->net, &c->o->goal, &c->o->passes, f);
	return cg_emit(&an->g, &an->d, &an->plan.sched, &an->ev, an->arena_bytes, f);
}

/* --emit-torch: the helper through a temporary file (out_open), and the
 * report's pytorch line on rep unless NULL. */
static int
write_torch(const Analysis *an, const char *path, FILE *rep, Arena *a)
{
	OutFile of;

	if (!path) {
		emit_torch(an, NULL, rep, a);
		return 0;
	}
	if (out_open(&of, path))
		return 1;
	emit_torch(an, of.f, rep, a);
	return out_commit(&of);         /* says why when a write failed */
}

/* Peak at batch b, or -1 when the analysis fails at that batch; then why[]
 * holds its first diagnostic line (the messages are not printed). */
static int64_t
peak_at(const Program *prog, Options *o, const char *bname, int64_t b, char *why,
        size_t nwhy)
{
	Arena a;
	Analysis an;
	PlanGoal goal = o->goal;
	int64_t peak;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int rc;

	progress_begin("--max-batch: analyzing %s=%lld", bname, (long long)b);
	goal.budget = -1;
	rc = analyze_probe(prog, o->file, &o->net, bname, b, &goal, o->passes.check, mem,
	                   &an, &a);
	peak = rc == 0 ? an.ev.peak : -1;
	ar_free(&a);
	if (mem)
		fclose(mem);
	snprintf(why, nwhy, "%.*s", text ? (int)strcspn(text, "\n") : 0, text ? text : "");
	if (!why[0] && rc)
		snprintf(why, nwhy, "the analysis fails (status %d)", rc);
	free(text);
	return peak;
}

/* --max-batch: the largest batch (a multiple of the accumulation steps)
 * whose peak fits, by doubling then bisection. The peak grows with the
 * batch in every graph we know; probes that contradict it are reported. A
 * batch the analysis rejects (sizes past 2^62 bytes, FLOPs past 2^63)
 * bounds the search: the answer states it as an upper limit. */
static int
max_batch(const Program *prog, Options *o, const Analysis *an)
{
	const char *bname = an->g.batch_dim;
	int64_t step = an->g.settings.accumulate, lo = 0, hi, p, last = -1, failed = -1;
	bool monotone = true;
	char buf[32], why[512], firstwhy[512] = "";

	if (!bname) {
		fprintf(stderr, "remat: --max-batch: %s declares no `batch` dimension\n", o->file);
		return 1;
	}
	for (hi = step;; ) {
		p = peak_at(prog, o, bname, hi, why, sizeof why);
		if (p < 0 && failed < 0) {
			failed = hi;
			snprintf(firstwhy, sizeof firstwhy, "%s", why);
		}
		if (p < 0 || p > o->max_batch)
			break;
		if (p < last)
			monotone = false;
		last = p;
		lo = hi;
		if (!ck_mul(hi, 2, &hi)) {
			hi = lo;        /* every batch up to 2^63 fits */
			break;
		}
	}
	while (hi - lo > step) {
		int64_t mid = lo + (hi - lo) / step / 2 * step;
		p = peak_at(prog, o, bname, mid, why, sizeof why);
		if (p < 0 && (failed < 0 || mid < failed)) {
			failed = mid;
			snprintf(firstwhy, sizeof firstwhy, "%s", why);
		}
		if (p >= 0 && p <= o->max_batch)
			lo = mid;
		else
			hi = mid;
	}
	p = peak_at(prog, o, bname, lo ? lo : step, why, sizeof why);
	progress_end();          /* before printing on the same terminal */
	if (lo == 0) {
		if (failed == step) {   /* the analysis fails at the smallest batch */
			fprintf(stderr, "remat: --max-batch: batch %lld cannot be analyzed: %s\n",
			        (long long)step, firstwhy);
			return 1;
		}
		printf("no batch fits in %s (%lld bytes): batch %lld needs %lld bytes\n",
		       report_size(o->max_batch, buf), (long long)o->max_batch,
		       (long long)step, (long long)p);
		return 3;
	}
	printf("max batch %s = %lld: peak %s (%lld bytes) fits in %lld bytes\n",
	       bname, (long long)lo, report_size(p, buf), (long long)p,
	       (long long)o->max_batch);
	if (failed >= 0 && failed == hi)
		printf("note: an upper limit: batch %lld cannot be analyzed (%s)\n",
		       (long long)failed, firstwhy);
	if (!monotone)
		printf("note: the peak was not monotone in the batch at the probed sizes\n");
	return 0;
}

/* Whether the program is analyzed once only, so that its syntax tree can
 * go once the graph is made (--stages, --max-batch, --zero-table and
 * --sweep instantiate it again). */
static bool
analyzed_once(const Options *o)
{
	return o->net.pipe.stages <= 1 && o->max_batch < 0 && !o->zero_table && !o->viz.sweep;
}

/* Everything after reading the source; the caller frees the arena. The
 * syntax tree has an arena of its own (tree), freed by analyze() when the
 * program is analyzed once, else here. */
static int
compile(Options *o, Source *src, Arena *a, Arena *tree)
{
	Program *prog;
	Analysis an;
	Diag d;
	int rc;

	diag_init(&d, src, stderr);
	if (analyzed_once(o))
		heap_for_tree();
	prog = analyzed_once(o) ? net_parse_once(src, tree, &d) : net_parse(src, tree, &d);
	if (!prog || d.nerrors)
		return 1;
	source_drop(src);
	if (analyzed_once(o))
		o->passes.tree = tree;
	if (o->dump_ir || o->graph_json) {
		ir_graph_init(&an.g, a, src->name);
		if (net_instantiate(prog, &o->net, &an.g, &d) || shape_infer(&an.g, &d) ||
		    autodiff_check_loss(&an.g, &d))
			return 1;
		if (o->graph_json)
			graph_json(&an.g, stdout);
		else
			ir_dump(&an.g, stdout);
		return 0;
	}
	if (o->viz.sweep)
		return sweep_run(&(SweepArgs){prog, src->name, &o->net, &o->goal,
		                 o->goal.budget >= 0 ? o->goal.budget : o->max_batch,
		                 o->goal.budget >= 0, o->viz.sweep, o->viz.plot}, stdout);
	progress_begin("planning");
	rc = analyze_stages(prog, src->name, &o->net, &o->goal, o->verify, &an, a, &d, &o->passes);
	progress_end();
	if (rc == 1 || rc == 4)
		return rc;
	if (rc == 3) {
		fprintf(stderr, "error: no schedule fits in %lld bytes; smallest peak found: %lld bytes (%.2f GiB)\n",
		        (long long)o->goal.budget, (long long)an.plan.peak,
		        (double)an.plan.peak / (1024.0 * 1024.0 * 1024.0));
		return 3;
	}
	if (o->passes.dump)
		return 0;       /* the dumps replace the report */
	if (o->zero_table)
		return zero_table(prog, o->file, &o->net, &o->goal, o->passes.check, stdout);
	if (o->max_batch >= 0)
		return max_batch(prog, o, &an);
	if (o->gpu.preset)
		an.gpu = &o->gpu;
	if (o->out && (rc = out_write(o->out, write_cuda, &(OutCtx){&an, prog, o})))
		return rc;
	if ((rc = viz_write_files(&o->viz, &an)))
		return rc;
	/* with -o - the program is on stdout: the report goes to stderr */
	FILE *rep = o->out && !strcmp(o->out, "-") ? stderr : stdout;
	if (o->json)
		report_json(&an, rep);
	else
		report_human(&an, &o->report, rep);
	if (o->emit_torch || (o->net.pytorch && an.goal.level > 0 && an.g.train && !o->json))
		return write_torch(&an, o->emit_torch, o->json ? NULL : rep, a);
	return 0;
}

static int
run_net(Options *o)
{
	Arena a, tree;
	Source src = {NULL, NULL, 0, false};
	int rc;

	ar_init(&a);
	ar_init(&tree);
	if (o->onnx)
		rc = onnx_import(o->file, &o->onnx_opt, &o->net, &a, &src);
	else
		src = read_source(o->file, o->max_input), rc = 0;
	if (rc == 0)
		rc = compile(o, &src, &a, &tree);
	if (!o->onnx)
		free((char *)(uintptr_t)src.text);      /* NULL once dropped */
	ar_free(&tree);
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
