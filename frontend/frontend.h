/* frontend/frontend.h -- the .net frontend: source text to the network
 * graph. The reentrant scanner (lexer.l) and the pure parser (parser.y)
 * build the AST through the builders of ast.c (ast.h, private); the
 * instantiation (instantiate.c for scopes, statements and ids, dims.c for
 * names, dimension arithmetic and settings; inst.h, private) expands def
 * calls and repeats into the flat Graph of net.h.
 */
#ifndef REMAT_FRONTEND_H
#define REMAT_FRONTEND_H

#include "net.h"

typedef struct Program Program;         /* the AST: frontend/ast.h */

typedef struct DimOverride {
	const char *name;                   /* -D NAME=VALUE */
	int64_t value;
} DimOverride;

/* Command-line settings; each overrides the train block when its _set flag
 * is true. */
typedef struct NetOptions {
	DimOverride *defs;
	int ndefs;
	bool infer_set, infer;
	bool optimizer_set;
	Optimizer optimizer;
	bool precision_set, mixed;
	bool accumulate_set;
	int64_t accumulate;
	DistOptions dist;       /* --ranks, --zero, --bucket, --offload (ranks 0: 1) */
	PipeOptions pipe;       /* --stages, --micro-batches, --schedule */
	bool pytorch;           /* --runtime pytorch or pytorch-cpu */
	bool pytorch_cpu;       /* --runtime pytorch-cpu */
	int max_tensors;        /* cap on the graph's tensors; 0: the default (2^24) */
} NetOptions;

/* Parses a whole source; NULL after syntax errors (already reported). */
Program *net_parse(const Source *src, Arena *a, Diag *d);
/* The same, for a program instantiated once only: net_instantiate frees
 * the tree of each top-level statement (but declarations) once it has run,
 * so that the tree and the graph are not both whole at once. */
Program *net_parse_once(const Source *src, Arena *a, Diag *d);
/* Instantiates the program into g: dims (with -D and accumulate applied),
 * settings (train block, then flags), custom ops, params, inputs, every op
 * of every def call and repeat, in program order, with ids per language.md,
 * outputs, g->train and g->loss. Shapes are left to shape_infer. Returns the
 * number of errors. Can be called again on the same Program (--max-batch),
 * but for one from net_parse_once. */
int net_instantiate(const Program *p, const NetOptions *o, Graph *g, Diag *d);

#endif
