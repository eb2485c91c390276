/* frontend/onnx/onnx.h -- the ONNX importer: a model file in, a .net
 * program out.
 *
 * onnx_import() reads an ONNX model (protobuf, through protobuf-c and the
 * subset of the schema in onnx_subset.proto), infers every value's shape,
 * folds the shape arithmetic, and writes the model as .net source text,
 * which the ordinary frontend then parses: what --emit-net writes is
 * exactly what is analyzed. docs/onnx.md is the user's guide. */
#ifndef REMAT_ONNX_H
#define REMAT_ONNX_H

#include "frontend.h"

typedef struct OnnxOptions {
	const char *params;     /* --params REGEX, or NULL for the default rule */
	const char *loss;       /* --loss KIND[:OUTPUT], or NULL */
	const char *emit_net;   /* --emit-net FILE.net, or NULL */
	size_t max_input;       /* --max-input: the file's cap in bytes, or 0
	                           for READ_MAX_DEFAULT */
	FILE *err;              /* where onnx_translate's messages go, or NULL
	                           for stderr (the fuzzer's /dev/null) */
} OnnxOptions;

/* ---------------------------------------------------------------- import.c */

/* Translates the model at path into .net text in *out, named "path.net",
 * or --emit-net's file when given (the driver writes that file), using
 * net's -D values for symbolic dims and its infer flag. On a bad model (or
 * one larger than o->max_input) prints "path: error: ..." to stderr and
 * returns 1; returns 0 on success. A -D naming a symbolic dim is renamed
 * to its .net dim. Without protobuf-c (none.c) it says so and returns 1. */
int onnx_import(const char *path, const OnnxOptions *o, NetOptions *net,
                Arena *a, Source *out);

/* Translates an in-memory model; what onnx_import and the fuzzer call. */
int onnx_translate(const char *name, const uint8_t *data, size_t len,
                   const OnnxOptions *o, NetOptions *net, Arena *a,
                   Source *out);

#endif
