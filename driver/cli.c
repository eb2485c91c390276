/* driver/cli.c -- the remat command line: the options, their values
 * (sizes, counts, -D NAME=VALUE, -d PASS), and the checks that refuse
 * a combination with no meaning (usage errors, exit 2) or warn of a flag
 * that has no effect. Reads argv; writes Options (driver.h). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "driver.h"

enum { MAX_DEFS = 256 };

enum {
	OPT_INFER = 256, OPT_OPTIMIZER, OPT_PRECISION, OPT_ACCUMULATE,
	OPT_DUMP_IR, OPT_JSON, OPT_MAX_RECOMPUTE, OPT_BUDGET, OPT_EXACT,
	OPT_VERIFY, OPT_MAX_BATCH, OPT_IMPORT, OPT_TOP, OPT_BYTES, OPT_STATS, OPT_HELP,
	OPT_VERSION, OPT_CHECK, OPT_RANKS, OPT_ZERO, OPT_BUCKET, OPT_OFFLOAD, OPT_ZERO_TABLE,
	OPT_STAGES, OPT_MICRO_BATCHES, OPT_SCHEDULE, OPT_STAGE_BLOCKS,
	OPT_RUNTIME, OPT_GRAPH_JSON, OPT_GPU, OPT_RESERVE, OPT_EMIT_TORCH,
	OPT_PARAMS, OPT_LOSS, OPT_EMIT_NET, OPT_PREFETCH, OPT_PLOT, OPT_HTML, OPT_TRACE,
	OPT_MEMVIZ, OPT_DOT, OPT_DOT_BACKWARD, OPT_DOT_FULL, OPT_CSV, OPT_SWEEP, OPT_MAX_INPUT,
	OPT_TIMES, OPT_GRAD_SYNC, OPT_SHARD_WEIGHTS
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
	{"grad-sync", required_argument, NULL, OPT_GRAD_SYNC},
	{"shard-weights", required_argument, NULL, OPT_SHARD_WEIGHTS},
	{"stages", required_argument, NULL, OPT_STAGES},
	{"micro-batches", required_argument, NULL, OPT_MICRO_BATCHES},
	{"schedule", required_argument, NULL, OPT_SCHEDULE},
	{"stage-blocks", required_argument, NULL, OPT_STAGE_BLOCKS},
	{"runtime", required_argument, NULL, OPT_RUNTIME},
	{"graph-json", no_argument, NULL, OPT_GRAPH_JSON},
	{"gpu", required_argument, NULL, OPT_GPU},
	{"reserve", required_argument, NULL, OPT_RESERVE},
	{"emit-torch", required_argument, NULL, OPT_EMIT_TORCH},
	{"plot", required_argument, NULL, OPT_PLOT},
	{"html", required_argument, NULL, OPT_HTML},
	{"trace", required_argument, NULL, OPT_TRACE},
	{"memory-viz", required_argument, NULL, OPT_MEMVIZ},
	{"dot", required_argument, NULL, OPT_DOT},
	{"dot-backward", no_argument, NULL, OPT_DOT_BACKWARD},
	{"dot-full", no_argument, NULL, OPT_DOT_FULL},
	{"csv", required_argument, NULL, OPT_CSV},
	{"sweep", required_argument, NULL, OPT_SWEEP},
	{"params", required_argument, NULL, OPT_PARAMS},
	{"loss", required_argument, NULL, OPT_LOSS},
	{"emit-net", required_argument, NULL, OPT_EMIT_NET},
	{"max-input", required_argument, NULL, OPT_MAX_INPUT},
	{"times", required_argument, NULL, OPT_TIMES},
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
	      "  --max-batch [SIZE]     print the largest batch that fits, as --gpu's\n"
	      "                         verdict judges (simulated reserved memory): in\n"
	      "                         SIZE, or without SIZE on the --gpu card less\n"
	      "                         --reserve\n"
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
	      "  --grad-sync each|last|auto\n"
	      "                         ZeRO 2/3 with --accumulate: each micro-batch\n"
	      "                         reduces its gradients, the last reduces them\n"
	      "                         all, or the lower peak (default auto)\n"
	      "  --shard-weights auto|always\n"
	      "                         ZeRO 3: shard the weights always (FSDP), or keep\n"
	      "                         them whole where their one gathered unit peaks\n"
	      "                         no lower sharded (default auto)\n"
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
	      "  --import FORMAT        checkmate | onnx: read a Checkmate JSON graph or\n"
	      "                         an ONNX model instead of a .net program\n"
	      "  --loss KIND[:OUT]      ONNX: add a cross_entropy or mse loss on output OUT\n"
	      "  --params REGEX         ONNX: graph inputs that are parameters (docs/onnx.md)\n"
	      "  --emit-net FILE.net    ONNX: also write the imported model as .net\n"
	      "  -o FILE.cu             emit a CUDA C program that runs the schedule\n"
	      "  --times FILE.json      show what that program measured (its --times)\n"
	      "                         beside the plan's FLOPs\n"
	      "  --runtime R            remat | pytorch | pytorch-cpu: whose allocations\n"
	      "                         to count (default remat; pytorch: >= 2.4 on CUDA,\n"
	      "                         pytorch-cpu: 1.13 on the CPU; docs/runtime-pytorch.md)\n"
	      "  --graph-json           print the graph's ops and tensors as JSON\n"
	      "  --gpu NAME|SIZE        say whether the step fits on a card: A100-40GB\n"
	      "                         A100-80GB H100-80GB H200 H20 B200 RTX4090\n"
	      "                         RTX3090 A6000 L40S L40 A10 L4 T4 V100-16GB\n"
	      "                         V100-32GB, or a card of SIZE (e.g. 48GiB)\n"
	      "  --reserve SIZE         memory the card keeps for the CUDA context and\n"
	      "                         workspaces (default 1GiB)\n"
	      "  --emit-torch FILE.py   write the plan as torch.utils.checkpoint wrapping\n"
	      "  --plot FILE.svg        memory timeline (with --sweep: peak per value)\n"
	      "  --html FILE.html       self-contained page: timeline, layers, plan\n"
	      "  --trace FILE.json      Chrome trace events (Perfetto, chrome://tracing)\n"
	      "  --memory-viz FILE.pickle  snapshot for PyTorch's memory_viz\n"
	      "  --dot FILE.dot         graph for Graphviz, a def's repeated calls drawn once\n"
	      "  --dot-backward         with --dot: the backward ops as well\n"
	      "  --dot-full             with --dot: every call, none collapsed\n"
	      "  --csv FILE.csv         one row per step, bytes per category\n"
	      "  --sweep NAME=VALUES    analyze each value of a dim or the batch:\n"
	      "                         8,16,32 | 8..128*2 | 128..1024+128 | 128:1024:128\n"
	      "  --help, --version\n"
	      "\n"
	      "SIZE takes K M G T or KiB MiB GiB TiB (powers of 1024), KB MB GB TB\n"
	      "(powers of 1000), B, or plain bytes (at least 1 MiB without a unit);\n"
	      "units are case-blind. An output FILE '-' is stdout, and the report then\n"
	      "goes to stderr; no output overwrites the input (remat(1), OUTPUT FILES).\n"
	      "See remat(1) and docs/ in the source tree.\n"
	      "Exit status: 0 ok, 1 errors in the input, 2 usage, 3 budget unmet,\n"
	      "4 internal error.\n", f);
}

/* parse_size: "12GiB", "1.5G", "800MB", "80gb", "4096" -> bytes; -1 if
 * malformed. Units are case-blind; *suffix says whether one was written. */
static int64_t
parse_size_suffix(const char *s, bool *suffix)
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
	*suffix = *end != 0;
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
	bool suffix = false;
	int64_t v = parse_size_suffix(s, &suffix);

	if (v < 0)
		diag_usage("%s: cannot read size '%s' (e.g. %s)", opt, s, example);
	if (!suffix && v < ((int64_t)1 << 20))
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
	if (o->job.net.ndefs == MAX_DEFS)
		diag_usage("too many -D options (at most %d)", MAX_DEFS);
	*eq = 0;                /* the name ends here: argv is ours to edit */
	o->job.net.defs[o->job.net.ndefs].name = arg;
	o->job.net.defs[o->job.net.ndefs].value = v;
	o->job.net.ndefs++;
}

/* --stage-blocks N0,N1,...: blocks per stage. */
static void
parse_stage_blocks(Options *o, char *arg)
{
	PipeOptions *p = &o->job.net.pipe;

	p->nsplit = 0;
	for (char *w = strtok(arg, ","); w; w = strtok(NULL, ",")) {
		if (p->nsplit == PIPE_MAXSTAGES)
			diag_usage("--stage-blocks: at most %d stages", PIPE_MAXSTAGES);
		p->split[p->nsplit++] = (int)parse_count("--stage-blocks", w, 1, 1 << 20);
	}
}

/* The value of a keyword option: its index among the n words, which
 * name the option's enum in order; else a usage error listing them. */
static int
parse_word(const char *opt, const char *arg, const char *const *words, int n)
{
	char list[128] = "";

	for (int i = 0; i < n; i++) {
		if (!strcmp(arg, words[i]))
			return i;
		snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "",
		         words[i]);
	}
	diag_usage("%s: unknown '%s' (%s)", opt, arg, list);
}

/* --offload optimizer|params|optimizer,params */
static void
parse_offload(Options *o, char *arg)
{
	for (char *w = strtok(arg, ","); w; w = strtok(NULL, ",")) {
		if (!strcmp(w, "optimizer"))
			o->job.net.dist.offload_optimizer = true;
		else if (!strcmp(w, "params"))
			o->job.net.dist.offload_params = true;
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
		o->job.passes.dump |= 1u << p;
	}
}

/* --max-batch [SIZE]: a value that does not start with a digit is not
 * its size but the next argument (`--max-batch --gpu L4`, `--max-batch
 * FILE.net`; own says the value is a word of its own, not `=VALUE`),
 * handed back to getopt; then the answer is for --gpu's card
 * (check_pytorch). arg is NULL when --max-batch is the last word. */
static void
parse_max_batch(Options *o, const char *arg, bool own)
{
	if (arg && strchr("0123456789", arg[0]) && arg[0]) {
		if ((o->max_batch = parse_size("--max-batch", arg, "80GiB")) == MAX_BATCH_CARD)
			diag_usage("--max-batch %s: no batch fits in nothing", arg);
		return;
	}
	if (arg && !own)
		diag_usage("--max-batch=%s: a size, e.g. 80GiB (or no value: the --gpu card's)", arg);
	if (arg)
		optind--;       /* the next argument is not ours */
	o->max_batch = MAX_BATCH_CARD;
}

/* --gpu NAME | SIZE: a preset, or a card of SIZE bytes (of unknown
 * generation, GPU_SM_UNKNOWN). */
static void
parse_gpu(Options *o, char *arg)
{
	static GpuPreset sized;
	char hint[96];
	Suggest sg;

	if ((o->gpu.preset = gpu_preset(arg)))
		return;
	if (strchr("0123456789", arg[0]) && arg[0]) {
		sized = (GpuPreset){arg, parse_size("--gpu", arg, "48GiB"), GPU_SM_UNKNOWN};
		if (!sized.bytes)
			diag_usage("--gpu %s: a card needs some memory", arg);
		o->gpu.preset = &sized;
		return;
	}
	suggest_init(&sg, arg);
	for (int i = 0; gpu_preset_at(i); i++)
		suggest_add(&sg, gpu_preset_at(i)->name);
	diag_usage("--gpu: unknown card '%s'%s (%s, or a size such as 48GiB)", arg,
	           suggest_hint(&sg, hint, sizeof hint), gpu_preset_names());
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
		o->job.goal.level = arg[0] - '0';
		o->level_set = true;
		break;
	case 'o': o->out = arg; break;
	case OPT_INFER: o->job.net.infer_set = o->job.net.infer = true; break;
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
		o->job.net.optimizer_set = true;
		o->job.net.optimizer = (Optimizer)k;
		break;
	case OPT_PRECISION:
		if (strcasecmp(arg, "declared") && strcasecmp(arg, "mixed"))
			diag_usage("--precision must be 'declared' or 'mixed', not '%s'", arg);
		o->job.net.precision_set = true;
		o->job.net.mixed = !strcasecmp(arg, "mixed");
		break;
	case OPT_ACCUMULATE:
		o->job.net.accumulate_set = true;
		o->job.net.accumulate = parse_count("--accumulate", arg, 1, INT64_MAX);
		break;
	case OPT_DUMP_IR: o->dump_ir = true; break;
	case 'd': parse_dumps(o, arg); break;
	case OPT_CHECK: o->job.passes.check = true; break;
	case OPT_RANKS: o->job.net.dist.ranks = (int)parse_count("--ranks", arg, 1, 1 << 20); break;
	case OPT_ZERO: o->job.net.dist.zero = (int)parse_count("--zero", arg, 0, 3); break;
	case OPT_BUCKET:
		if ((o->job.net.dist.bucket = parse_size("--bucket", arg, "25MiB")) <= 0)
			diag_usage("--bucket: must be at least one byte");
		break;
	case OPT_OFFLOAD: parse_offload(o, arg); break;
	case OPT_ZERO_TABLE: o->zero_table = true; break;
	case OPT_GRAD_SYNC: {
		static const char *const syncs[] = {"auto", "each", "last"};    /* GradSync */
		o->job.net.dist.grad_sync = (GradSync)parse_word("--grad-sync", arg, syncs, 3);
		break;
	}
	case OPT_SHARD_WEIGHTS: {
		static const char *const shard[] = {"auto", "always"};          /* ShardWeights */
		o->job.net.dist.shard_weights =
			(ShardWeights)parse_word("--shard-weights", arg, shard, 2);
		o->shard_weights_set = true;
		break;
	}
	case OPT_PREFETCH:
		o->prefetch_set = true;
		o->job.net.dist.prefetch = (int)parse_count("--prefetch", arg, 0, 1 << 20);
		break;
	case OPT_STAGES:
		o->job.net.pipe.stages = (int)parse_count("--stages", arg, 1, PIPE_MAXSTAGES);
		break;
	case OPT_MICRO_BATCHES:
		o->job.net.pipe.micro_batches = (int)parse_count("--micro-batches", arg, 1, 1 << 16);
		break;
	case OPT_SCHEDULE:
		if (strcmp(arg, "1f1b") && strcmp(arg, "gpipe"))
			diag_usage("--schedule: '1f1b' or 'gpipe', got '%s'", arg);
		o->job.net.pipe.gpipe = !strcmp(arg, "gpipe");
		break;
	case OPT_STAGE_BLOCKS: parse_stage_blocks(o, arg); break;
	case OPT_JSON: o->json = true; break;
	case OPT_BYTES: o->report.exact_bytes = o->bytes_set = true; break;
	case OPT_MAX_RECOMPUTE: {
		char *end;
		o->max_recompute_set = true;
		if (!strcmp(arg, "inf")) {
			o->job.goal.max_recompute = -1;
			break;
		}
		errno = 0;
		o->job.goal.max_recompute = strtod(arg, &end);
		if (!arg[0] || !strchr("0123456789.", arg[0]) || strpbrk(arg, "xXnN") ||
		    *end || errno || !(o->job.goal.max_recompute >= 0) ||
		    isinf(o->job.goal.max_recompute))
			diag_usage("--max-recompute expects a ratio >= 0 or 'inf', not '%s'", arg);
		break;
	}
	case OPT_BUDGET:
		o->job.goal.budget = parse_size("--budget", arg, "12GiB, 800MB, 4096B");
		break;
	case OPT_EXACT: o->job.goal.exact = true; break;
	case OPT_VERIFY: o->job.verify = true; break;
	case OPT_IMPORT:
		if (strcmp(arg, "checkmate") && strcmp(arg, "onnx"))
			diag_usage("--import: unknown format '%s' (checkmate or onnx)", arg);
		o->checkmate = !strcmp(arg, "checkmate");
		o->onnx = !o->checkmate;
		break;
	case OPT_PARAMS: o->onnx_opt.params = arg; break;
	case OPT_LOSS: o->onnx_opt.loss = arg; break;
	case OPT_EMIT_NET: o->onnx_opt.emit_net = arg; break;
	case OPT_TIMES: o->times = arg; break;
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
		if (strcmp(arg, "remat") && strcmp(arg, "pytorch") && strcmp(arg, "pytorch-cpu"))
			diag_usage("--runtime must be 'remat', 'pytorch' or 'pytorch-cpu', not '%s'", arg);
		o->job.net.pytorch = strcmp(arg, "remat") != 0;
		o->job.net.pytorch_cpu = !strcmp(arg, "pytorch-cpu");
		break;
	case OPT_GRAPH_JSON: o->graph_json = true; break;
	case OPT_GPU: parse_gpu(o, arg); break;
	case OPT_EMIT_TORCH: o->emit_torch = arg; break;
	case OPT_RESERVE:
		o->gpu.reserve = parse_size("--reserve", arg, "1GiB, 800MB");
		break;
	case OPT_HELP: usage(stdout); exit(0);
	case OPT_VERSION: puts("remat " PACKAGE_VERSION); exit(0);
	case OPT_PLOT: o->plot = arg; break;
	case OPT_HTML: o->html = arg; break;
	case OPT_TRACE: o->trace = arg; break;
	case OPT_MEMVIZ: o->memviz = arg; break;
	case OPT_DOT: o->dot = arg; break;
	case OPT_DOT_BACKWARD: o->dot_backward = true; break;
	case OPT_DOT_FULL: o->dot_full = true; break;
	case OPT_CSV: o->csv = arg; break;
	case OPT_SWEEP: o->sweep = arg; break;
	default: diag_usage("unknown option");
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
	if (o->max_recompute_set && o->job.goal.budget >= 0)
		fprintf(stderr, "remat: warning: --max-recompute has no effect with "
		        "--budget (a budget has no recompute cap)\n");
	else if (o->max_recompute_set && o->job.goal.level < 2)
		fprintf(stderr, "remat: warning: --max-recompute has no effect at -O%d "
		        "(it caps -O2 and -O3)\n", o->job.goal.level);
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
		const char *flag = o->job.net.ndefs ? "-D" : o->job.net.infer_set ? "--infer"
		                   : o->job.net.optimizer_set ? "--optimizer"
		                   : o->job.net.precision_set ? "--precision"
		                   : o->job.net.accumulate_set ? "--accumulate"
		                   : o->top_set ? "--top" : o->bytes_set ? "--bytes"
		                   : o->dump_ir ? "--dump-ir" : o->max_batch >= 0 ? "--max-batch"
		                   : NULL;
		if (flag)
			diag_usage("%s has no effect with --import checkmate", flag);
	}
	if (o->dump_ir) {
		const char *flag = o->json ? "--json" : o->level_set ? "-O"
		                   : o->job.goal.budget >= 0 ? "--budget" : o->job.goal.exact ? "--exact"
		                   : o->job.verify ? "--verify" : o->max_batch >= 0 ? "--max-batch"
		                   : o->top_set ? "--top" : o->bytes_set ? "--bytes" : NULL;
		if (flag)
			diag_usage("%s has no effect with --dump-ir", flag);
	}
	if (o->times && (mode || o->zero_table || o->sweep))
		diag_usage("--times has no effect with %s", mode ? mode
		           : o->zero_table ? "--zero-table" : "--sweep");
	if (o->max_batch >= 0) {
		const char *flag = o->json ? "--json" : o->top_set ? "--top"
		                   : o->bytes_set ? "--bytes" : NULL;
		if (flag)
			diag_usage("%s has no effect with --max-batch", flag);
	}
}

/* The output policy's checks on the paths themselves, before any work:
 * no output onto the input (nor a symlink or hard link to it), no two
 * outputs into one file, and stdout carries one document. "-" as a file
 * takes stdout, so the report moves to stderr (o->stdout_taken); the
 * outputs that are themselves stdout documents cannot share it. */
static void
check_outputs(Options *o)
{
	const struct { const char *flag, *path; } files[] = {
		{"-o", o->out}, {"--plot", o->plot}, {"--html", o->html},
		{"--trace", o->trace}, {"--memory-viz", o->memviz}, {"--dot", o->dot},
		{"--csv", o->csv}, {"--emit-torch", o->emit_torch},
		{"--emit-net", o->onnx_opt.emit_net},
	};
	const char *dash = NULL;
	const size_t n = sizeof files / sizeof files[0];

	for (size_t i = 0; i < n; i++) {
		const char *f = files[i].flag, *p = files[i].path;
		if (!p)
			continue;
		if (!*p)
			diag_usage("%s: the file name is empty", f);
		if (out_is_input(p, o->input))
			diag_usage("%s '%s' is the input file; refusing to overwrite it", f, p);
		if (!strcmp(p, "-")) {
			if (dash)
				diag_usage("%s - and %s - both ask for stdout (it carries one document)",
				           dash, f);
			dash = f;
			continue;
		}
		for (size_t j = 0; j < i; j++)
			if (files[j].path && strcmp(files[j].path, "-") && out_same_file(files[j].path, p))
				diag_usage("%s and %s both write '%s'", files[j].flag, f, p);
	}
	if (dash && (o->graph_json || o->dump_ir || o->job.passes.dump))
		diag_usage("%s - and %s both print on stdout (it carries one document)", dash,
		           o->graph_json ? "--graph-json" : o->dump_ir ? "--dump-ir" : "-d");
	o->stdout_taken = dash != NULL;
}

/* --ranks, --zero, --offload, --stages and their company. */
static void
check_parallel(const Options *o)
{
	if (o->job.net.dist.offload_params && o->job.net.dist.zero != 3)
		diag_usage("--offload params needs --zero 3 (the weights must be sharded)");
	if (o->out && o->job.net.infer && dist_gathers(&o->job.net.dist))
		diag_usage("-o: --zero 3 with --infer shards the weights of a pass that gathers "
		           "none; the program cannot run it");
	if (o->prefetch_set && o->job.net.dist.zero != 3)
		diag_usage("--prefetch needs --zero 3 (only sharded weights are gathered)");
	if (o->shard_weights_set && o->job.net.dist.zero != 3 && !o->zero_table)
		diag_usage("--shard-weights needs --zero 3 (below, the weights stay whole)");
	if (o->job.net.dist.grad_sync != SYNC_AUTO && !o->zero_table && o->job.net.dist.zero < 2)
		diag_usage("--grad-sync needs --zero 2 or 3 (below, the gradients stay whole)");
	if (o->job.net.dist.grad_sync == SYNC_LAST && o->job.net.dist.offload_optimizer)
		diag_usage("--grad-sync last: with --offload optimizer each micro-batch's "
		           "gradients go to the host");
	if (o->job.net.dist.grad_sync != SYNC_AUTO && o->job.net.pipe.stages > 1)
		diag_usage("--grad-sync: a pipeline's micro-batches reduce as their stage "
		           "does (see docs/distributed.md)");
	if (o->job.net.pipe.stages > 1) {
		if (o->job.net.accumulate_set)
			diag_usage("--stages: the pipeline's --micro-batches replace --accumulate "
			           "(give the micro-batch count with --micro-batches M)");
		if (o->job.net.pipe.nsplit && o->job.net.pipe.nsplit != o->job.net.pipe.stages)
			diag_usage("--stage-blocks: %d counts for %d stages", o->job.net.pipe.nsplit,
			           o->job.net.pipe.stages);
		if (o->checkmate || o->dump_ir)
			diag_usage("--stages cannot be combined with --import or --dump-ir");
	} else if (o->job.net.pipe.micro_batches || o->job.net.pipe.gpipe || o->job.net.pipe.nsplit) {
		diag_usage("--micro-batches, --schedule and --stage-blocks need --stages K (K > 1)");
	}
	if (o->zero_table && (o->checkmate || o->dump_ir || o->json || o->out))
		diag_usage("--zero-table cannot be combined with --import, --dump-ir, --json or -o");
	if (o->job.passes.dump && (o->checkmate || o->dump_ir || o->max_batch >= 0 || o->out))
		diag_usage("-d cannot be combined with --import, --dump-ir, --max-batch or -o");
}

/* --runtime, --gpu, --reserve, --emit-torch, --graph-json. */
static void
check_pytorch(Options *o)
{
	char why[160];

	if (o->checkmate && (o->job.net.pytorch || o->gpu.preset || o->emit_torch || o->graph_json))
		diag_usage("--runtime, --gpu, --emit-torch and --graph-json need a .net file, not --import");
	if (o->gpu.reserve >= 0 && !o->gpu.preset)
		diag_usage("--reserve needs --gpu NAME|SIZE");
	if (o->gpu.reserve < 0)
		o->gpu.reserve = GPU_DEFAULT_RESERVE;
	if (o->gpu.preset && o->gpu.reserve >= o->gpu.preset->bytes)
		diag_usage("--reserve: %lld bytes leave nothing of %s", (long long)o->gpu.reserve,
		           o->gpu.preset->name);
	if (o->max_batch == MAX_BATCH_CARD && !o->gpu.preset)
		diag_usage("--max-batch needs a SIZE, or --gpu NAME|SIZE to answer for a card");
	if (o->max_batch > 0 && o->gpu.preset && o->max_batch > gpu_usable(&o->gpu)) {
		char b1[32], b2[32], b3[32], b4[32];
		diag_usage("--max-batch %s: %s leaves %s for the step (%s less the --reserve of "
		           "%s); leave out the size to ask for the card", report_size(o->max_batch, b1),
		           o->gpu.preset->name, report_size(gpu_usable(&o->gpu), b2),
		           report_size(o->gpu.preset->bytes, b3), report_size(o->gpu.reserve, b4));
	}
	/* what --max-batch and --sweep judge by is the verdict's model */
	if ((o->gpu.preset || o->max_batch >= 0) &&
	    !gpu_alloc_conf(getenv("PYTORCH_CUDA_ALLOC_CONF"), &o->gpu.alloc, why, sizeof why))
		diag_usage("PYTORCH_CUDA_ALLOC_CONF: %s", why);
	if (o->job.net.pytorch && o->out)
		diag_usage("-o emits the remat runtime's program; it cannot run a --runtime pytorch plan");
}

static bool
any_picture(const Options *o)
{
	return o->plot || o->html || o->trace || o->memviz || o->dot || o->csv;
}

/* The pictures, --sweep and --max-batch's single line. */
static void
check_pictures(const Options *o)
{
	if (o->checkmate && (any_picture(o) || o->sweep))
		diag_usage("--plot, --html, --trace, --memory-viz, --dot, --csv and --sweep need a .net file");
	if (o->sweep && (o->json || o->out ||
	                 ((o->max_batch >= 0 || o->gpu.preset) && o->job.goal.budget >= 0) ||
	                 o->html || o->trace || o->memviz || o->dot || o->csv))
		diag_usage("--sweep prints a table and takes only --plot of the outputs, and "
		           "--budget or else --max-batch/--gpu for its last column");
	if (o->max_batch >= 0 && !o->sweep && any_picture(o))
		diag_usage("--max-batch prints one line and writes no file (--sweep charts the batch)");
	if (!o->dot && (o->dot_backward || o->dot_full))
		diag_usage("%s has no effect without --dot FILE.dot",
		           o->dot_backward ? "--dot-backward" : "--dot-full");
}

void
cli_parse(Options *o, int argc, char **argv)
{
	static DimOverride defs[MAX_DEFS];
	int c;

	memset(o, 0, sizeof *o);
	o->job.net.defs = defs;
	o->job.goal.max_recompute = 1.0;
	o->job.goal.budget = -1;
	o->max_batch = -1;
	o->gpu.reserve = -1;
	o->report.top = 10;
	o->job.passes.check = pass_checks_default();
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":D:O:o:d:", long_options, NULL)) != -1) {
		if (c == '?')
			unknown_option(argv[optind - 1]);
		if (c == ':' && optopt == OPT_MAX_BATCH)
			parse_max_batch(o, NULL, false);
		else if (c == ':')
			diag_usage("option '%s' needs a value", argv[optind - 1]);
		else if (c == OPT_MAX_BATCH)
			parse_max_batch(o, optarg, optarg == argv[optind - 1]);
		else
			parse_option(o, c, optarg);
	}
	if (optind != argc - 1)
		diag_usage(optind == argc ? "no input file" : "exactly one input file expected");
	o->input = argv[optind];
	check_modes(o);
	check_outputs(o);
	if (!o->onnx && (o->onnx_opt.params || o->onnx_opt.loss || o->onnx_opt.emit_net))
		diag_usage("--params, --loss and --emit-net need --import onnx");
	if (o->job.goal.budget >= 0 && o->job.goal.level < 2)
		o->job.goal.level = 2;      /* --budget implies -O2 unless higher */
	if (o->job.goal.exact && o->job.goal.level < 2)
		o->job.goal.level = 2;
	check_parallel(o);
	check_pytorch(o);
	check_pictures(o);
	warn_no_effect(o);
}
