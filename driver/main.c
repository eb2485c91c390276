/* driver/main.c -- remat: read the input, analyze it, write what was
 * asked. Every output is a row of the table below: the option that asks
 * for it, what it needs (the source text, the parsed program, the shaped
 * graph or the whole analysis) and its writer; report/ writes to a FILE *,
 * and every file is written through outfile.c. The command line is read by
 * cli.c; the pipeline is analyze() in driver/analyze.c. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "driver.h"

/* What an output needs before its writer runs. */
typedef enum Need {
	NEED_SOURCE,    /* the .net text (an ONNX model's translation) */
	NEED_PROGRAM,   /* the parsed program: the writer analyzes it itself */
	NEED_SHAPES,    /* the graph instantiated and shaped, not analyzed */
	NEED_ANALYSIS,  /* the job analyzed (analyze_stages) */
} Need;

/* One run of remat: what the writers read. */
typedef struct Run {
	Options *o;
	const Source *src;
	Analysis an;
	Arena *a;
	FILE *rep;      /* the report: stdout, or stderr when a file "-" takes
	                   stdout (the output policy: one document on stdout) */
	Measured measured;      /* --times */
} Run;

/* The outputs, in the order they are written. */
enum {
	OUT_EMIT_NET, OUT_GRAPH_JSON, OUT_DUMP_IR, OUT_SWEEP, OUT_DUMPS, OUT_ZERO_TABLE,
	OUT_MAX_BATCH, OUT_CUDA, OUT_PLOT, OUT_HTML, OUT_TRACE, OUT_MEMVIZ, OUT_DOT, OUT_CSV,
	OUT_JSON, OUT_HUMAN, OUT_TORCH, OUT_COUNT
};

typedef struct Output {
	const char *option;     /* what asks for it (asked() reads Options) */
	Need need;
	bool alone;             /* replaces the outputs after it */
	/* the writer: a function handed the option's argument, or a writer
	 * of report/ that reads only the analysis, to the file named by it */
	Status (*write)(Run *r, const char *arg);
	OutWriter file;
} Output;

/* The argument of the option that asks for output k ("" for a flag), or
 * NULL when none does. */
static const char *
asked(const Options *o, int k)
{
	const char *flag = "";

	switch (k) {
	case OUT_EMIT_NET: return o->onnx_opt.emit_net;
	case OUT_GRAPH_JSON: return o->graph_json ? flag : NULL;
	case OUT_DUMP_IR: return o->dump_ir ? flag : NULL;
	case OUT_SWEEP: return o->sweep;
	case OUT_DUMPS: return o->job.passes.dump ? flag : NULL;
	case OUT_ZERO_TABLE: return o->zero_table ? flag : NULL;
	case OUT_MAX_BATCH: return o->max_batch >= 0 ? flag : NULL;
	case OUT_CUDA: return o->out;
	case OUT_PLOT: return o->plot;
	case OUT_HTML: return o->html;
	case OUT_TRACE: return o->trace;
	case OUT_MEMVIZ: return o->memviz;
	case OUT_DOT: return o->dot;
	case OUT_CSV: return o->csv;
	case OUT_JSON: return o->json ? flag : NULL;
	case OUT_HUMAN: return o->json ? NULL : flag;
	case OUT_TORCH:         /* the file, or the human report's pytorch line */
		return o->emit_torch ? o->emit_torch
		       : o->job.net.pytorch && o->job.goal.level > 0 && !o->json ? flag : NULL;
	}
	return NULL;
}

/* --emit-net: the .net text that is analyzed. */
static int
net_text(FILE *f, const void *ctx)
{
	const Source *src = ctx;

	return fwrite(src->text, 1, src->len, f) != src->len;
}

static Status
write_net(Run *r, const char *path)
{
	return out_write(path, net_text, r->src);
}

static Status
write_graph_json(Run *r, const char *arg)
{
	(void)arg;
	graph_json(&r->an.g, stdout);
	return ST_OK;
}

static Status
write_ir(Run *r, const char *arg)
{
	(void)arg;
	ir_dump(&r->an.g, stdout);
	return ST_OK;
}

static Status
write_sweep(Run *r, const char *spec)
{
	return sweep_run(&r->o->job, spec, &r->o->gpu, r->o->max_batch, r->o->plot, r->rep);
}

static Status
write_zero_table(Run *r, const char *arg)
{
	(void)arg;
	return zero_table(&r->o->job, r->rep);
}

static Status
write_max_batch(Run *r, const char *arg)
{
	(void)arg;
	return max_batch(&r->o->job, &r->o->gpu, r->o->max_batch, &r->an, r->rep);
}

/* -o: the generated program; with --stages, every stage analysed again. */
static int
cuda(FILE *f, const void *ctx)
{
	const Run *r = ctx;
	const Analysis *an = &r->an;

	if (r->o->job.net.pipe.stages > 1)
		return stages_program(&r->o->job, f) != ST_OK;
	return cg_emit(&an->g, &an->d, &an->plan.sched, &an->ev, an->arena_bytes, f);
}

static Status
write_cuda(Run *r, const char *path)
{
	return out_write(path, cuda, r);
}

static Status
write_dot(Run *r, const char *path)
{
	return out_write(path, viz_write_dot, &(VizDot){&r->an, r->o->dot_backward, r->o->dot_full});
}

static Status
write_json(Run *r, const char *arg)
{
	(void)arg;
	report_json(&r->an, r->rep);
	return ST_OK;
}

static Status
write_human(Run *r, const char *arg)
{
	(void)arg;
	report_human(&r->an, &r->o->report, r->rep);
	return ST_OK;
}

/* --emit-torch: the helper through a temporary file, and the human
 * report's pytorch line (alone with --runtime pytorch, for a training
 * graph). */
static Status
write_torch(Run *r, const char *path)
{
	FILE *line = r->o->json ? NULL : r->rep;
	OutFile of;
	Status st;

	if (!*path) {
		if (r->an.g.train)
			emit_torch(&r->an, NULL, line, r->a);
		return ST_OK;
	}
	if ((st = out_open(&of, path)))
		return st;
	emit_torch(&r->an, of.f, line, r->a);
	return out_commit(&of);         /* says why when a write failed */
}

static const Output outputs[OUT_COUNT] = {
	[OUT_EMIT_NET] = {"--emit-net", NEED_SOURCE, false, write_net, NULL},
	[OUT_GRAPH_JSON] = {"--graph-json", NEED_SHAPES, true, write_graph_json, NULL},
	[OUT_DUMP_IR] = {"--dump-ir", NEED_SHAPES, true, write_ir, NULL},
	[OUT_SWEEP] = {"--sweep", NEED_PROGRAM, true, write_sweep, NULL},
	/* the passes printed their dumps during the analysis */
	[OUT_DUMPS] = {"-d", NEED_ANALYSIS, true, NULL, NULL},
	[OUT_ZERO_TABLE] = {"--zero-table", NEED_ANALYSIS, true, write_zero_table, NULL},
	[OUT_MAX_BATCH] = {"--max-batch", NEED_ANALYSIS, true, write_max_batch, NULL},
	[OUT_CUDA] = {"-o", NEED_ANALYSIS, false, write_cuda, NULL},
	[OUT_PLOT] = {"--plot", NEED_ANALYSIS, false, NULL, viz_write_plot},
	[OUT_HTML] = {"--html", NEED_ANALYSIS, false, NULL, viz_write_html},
	[OUT_TRACE] = {"--trace", NEED_ANALYSIS, false, NULL, viz_write_trace},
	[OUT_MEMVIZ] = {"--memory-viz", NEED_ANALYSIS, false, NULL, viz_write_memviz},
	[OUT_DOT] = {"--dot", NEED_ANALYSIS, false, write_dot, NULL},
	[OUT_CSV] = {"--csv", NEED_ANALYSIS, false, NULL, viz_write_csv},
	[OUT_JSON] = {"--json", NEED_ANALYSIS, false, write_json, NULL},
	[OUT_HUMAN] = {"(the default)", NEED_ANALYSIS, false, write_human, NULL},
	[OUT_TORCH] = {"--emit-torch", NEED_ANALYSIS, false, write_torch, NULL},
};

/* Whether an output that needs n is asked for. */
static bool
needs(const Options *o, Need n)
{
	for (int k = 0; k < OUT_COUNT; k++)
		if (outputs[k].need == n && asked(o, k))
			return true;
	return false;
}

/* Writes the outputs asked for that need n, in the table's order, until
 * one fails or one stands alone. */
static Status
write_asked(Run *r, Need n)
{
	for (int k = 0; k < OUT_COUNT; k++) {
		const Output *w = &outputs[k];
		const char *arg = asked(r->o, k);
		Status st;
		if (w->need != n || !arg)
			continue;
		st = w->file ? out_write(arg, w->file, &r->an) : w->write ? w->write(r, arg) : ST_OK;
		if (st != ST_OK)
			return st;
		if (w->alone)
			break;
	}
	return ST_OK;
}

/* An output that stands alone ends the run: a file asked of an output
 * after it would silently not be written, so asking for one is a usage
 * error (--sweep writes its own --plot). */
static void
check_reached(const Options *o)
{
	for (int k = 0; k < OUT_COUNT; k++) {
		if (!outputs[k].alone || !asked(o, k))
			continue;
		for (int j = k + 1; j < OUT_COUNT; j++) {
			const char *arg = asked(o, j);
			if (arg && *arg && !(k == OUT_SWEEP && j == OUT_PLOT))
				diag_usage("%s has no effect with %s", outputs[j].option,
				           outputs[k].option);
		}
		return;
	}
}

/* Reads the whole file (or stdin for "-"), at most max bytes, into a
 * malloc'd text (the caller frees it unless source_drop did). */
static Status
read_source(const char *path, size_t max, Source *src)
{
	FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
	struct stat st;

	*src = (Source){strcmp(path, "-") ? path : "<stdin>", NULL, 0, false};
	if (!f) {
		fprintf(stderr, "remat: cannot open '%s': %s\n", path, strerror(errno));
		return ST_ERROR;
	}
	if (!max)
		max = READ_MAX_DEFAULT;
	if (!(src->text = read_all(f, max, &src->len))) {
		read_fail(src->name, max);
		if (f != stdin)
			fclose(f);
		return ST_ERROR;
	}
	/* a regular file can be read again for an echo (source_drop) */
	src->reread = f != stdin && !fstat(fileno(f), &st) && S_ISREG(st.st_mode);
	if (f != stdin)
		fclose(f);
	return ST_OK;
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

/* Whether the program is analyzed once only, so that its syntax tree can
 * go once the graph is made (--stages, --max-batch, --zero-table and
 * --sweep instantiate it again). */
static bool
analyzed_once(const Options *o)
{
	return o->job.net.pipe.stages <= 1 && o->max_batch < 0 && !o->zero_table && !o->sweep;
}

/* Everything after reading the source; the caller frees the arena. The
 * syntax tree has an arena of its own (tree), freed by analyze() when the
 * program is analyzed once, else by the caller. */
static Status
compile(Run *r, Source *src, Arena *tree)
{
	Options *o = r->o;
	Job *job = &o->job;
	Diag d;
	Status st;

	diag_init(&d, src, stderr);
	if (analyzed_once(o))
		heap_for_tree();
	job->prog = analyzed_once(o) ? net_parse_once(src, tree, &d) : net_parse(src, tree, &d);
	if (!job->prog || d.nerrors)
		return ST_ERROR;
	source_drop(src);
	job->file = src->name;
	if (analyzed_once(o))
		job->passes.tree = tree;
	if (needs(o, NEED_SHAPES)) {
		if ((st = analyze_shapes(job, &r->an.g, r->a, &d)))
			return st;
		return write_asked(r, NEED_SHAPES);
	}
	if (needs(o, NEED_PROGRAM))
		return write_asked(r, NEED_PROGRAM);
	progress_begin("planning");
	st = analyze_stages(job, &r->an, r->a, &d);
	progress_end();
	if (st == ST_NO_FIT)
		no_fit_error(&r->an);
	if (st != ST_OK)
		return st;
	if (o->gpu.preset)
		r->an.gpu = &o->gpu;
	if (o->times) {
		times_check(&r->measured, &r->an);
		r->an.measured = &r->measured;
	}
	return write_asked(r, NEED_ANALYSIS);
}

static Status
run_net(Options *o)
{
	Arena a, tree;
	Source src = {NULL, NULL, 0, false};
	/* with -o - (any file "-") that file is on stdout: the report goes to
	 * stderr */
	Run r = {.o = o, .src = &src, .a = &a, .rep = o->stdout_taken ? stderr : stdout};
	Status st;

	ar_init(&a);
	ar_init(&tree);
	/* a bad --times file fails before the analysis, not after it */
	if (o->times && (st = times_read(o->times, o->max_input, &a, &r.measured))) {
		ar_free(&tree);
		ar_free(&a);
		return st;
	}
	if (o->onnx)
		st = onnx_import(o->input, &o->onnx_opt, &o->job.net, &a, &src) ? ST_ERROR : ST_OK;
	else
		st = read_source(o->input, o->max_input, &src);
	if (st == ST_OK)
		st = write_asked(&r, NEED_SOURCE);
	if (st == ST_OK)
		st = compile(&r, &src, &tree);
	if (!o->onnx)
		free((char *)(uintptr_t)src.text);      /* NULL once dropped */
	ar_free(&tree);
	ar_free(&a);
	if (fflush(stdout) && st == ST_OK)
		st = ST_INTERNAL;
	return st;
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

/* The exit status (remat(1)): 0 ok, 1 errors in the input, 3 budget unmet,
 * 4 internal error; 2, a usage error, exits from cli.c. */
static int
exit_status(Status st)
{
	static const int code[] = {
		[ST_OK] = 0, [ST_ERROR] = 1, [ST_NO_FIT] = 3, [ST_INTERNAL] = 4,
	};

	return code[st];
}

int
main(int argc, char **argv)
{
	struct timespec t0;
	Options o;
	Status st;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cli_parse(&o, argc, argv);
	check_reached(&o);
	if (o.checkmate) {
		o.job.file = o.input;
		st = cm_run(&o.job, o.json, stdout);
	} else {
		st = run_net(&o);
	}
	if (o.stats)
		print_stats(&t0);
	return exit_status(st);
}
