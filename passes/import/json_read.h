/* passes/json_read.h -- a small JSON reader (RFC 8259) for the benchmark
 * importer: parses a whole text into a tree in an arena, or fails with
 * "line:col: message". It never reads past the given length and limits
 * nesting depth, so malformed or hostile input gives an error, not a crash. */
#ifndef REMAT_JSON_READ_H
#define REMAT_JSON_READ_H

#include "ir.h"

enum { JR_MAX_DEPTH = 200 };

typedef enum JrType { JR_NULL, JR_BOOL, JR_NUM, JR_STR, JR_ARR, JR_OBJ } JrType;

typedef struct JrValue JrValue;
struct JrValue {
	JrType type;
	bool b;                 /* JR_BOOL */
	double num;             /* JR_NUM */
	bool is_int;            /* JR_NUM written without fraction or exponent
	                           and within int64 range: i holds it exactly */
	int64_t i;
	const char *str;        /* JR_STR: NUL-terminated copy, escapes decoded */
	size_t len;             /* JR_STR: bytes (may contain NULs from \u0000) */
	int n;                  /* JR_ARR, JR_OBJ: number of entries */
	JrValue **item;         /* JR_ARR, JR_OBJ: values */
	const char **key;       /* JR_OBJ: keys */
	int line, col;          /* where the value starts */
};

/* Parses text[0..len) as one JSON value. Returns NULL and writes
 * "line:col: message" to err on malformed input. */
JrValue *jr_parse(const char *text, size_t len, Arena *a, char *err, size_t errn);
/* The value of key in an object (the last one if repeated), or NULL. */
const JrValue *jr_get(const JrValue *obj, const char *key);
const char *jr_type_name(JrType t);

#endif
