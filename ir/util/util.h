/* ir/util/util.h -- the support module: what every layer uses and that
 * knows no tensors. Arenas (arena.c), diagnostics with source locations
 * (diag.c), a monotonic clock (clock.c), the escapers of every output
 * language (escape.c) and a small JSON reader (json_read.c).
 */
#ifndef REMAT_UTIL_H
#define REMAT_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---------------------------------------------------------------- ir/util/arena.c */

/* A bump allocator over chunks taken from malloc. Everything made for one
 * compilation lives in one arena and dies with it; passes use a scratch
 * arena of their own. */
typedef struct ArenaChunk ArenaChunk;
typedef struct ArenaHeap ArenaHeap;
typedef struct Arena Arena;
struct Arena {
	ArenaChunk *head;
	ArenaHeap *heap;        /* large arrays grown by ar_grow, freed with it */
	size_t total;           /* bytes handed out, for the benchmarks */
	Arena *kids;            /* ar_child's arenas, freed with this one */
	Arena *next_kid;
};

void *xmalloc(size_t n);                 /* dies with a message on OOM */
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
void ar_init(Arena *a);
void ar_free(Arena *a);                  /* frees every chunk (and child);
                                            again is harmless; a large chunk
                                            is kept for the next arena */
void ar_trim(void);                      /* frees the chunks kept */
/* A new arena that can be freed on its own, early, and that dies with a
 * anyway: pieces of a tree that go while the rest stays. */
Arena *ar_child(Arena *a);
void *ar_alloc(Arena *a, size_t n);      /* zeroed, 16-byte aligned */
/* n zeroed elements of the given size, aligned as that size allows (at
 * most 16): the one-int input and output lists of a million ops would
 * otherwise take 16 bytes each. */
void *ar_array(Arena *a, size_t n, size_t size);
/* ar_array, not zeroed: for an array its caller writes before it reads
 * (the liveness evaluator's instances: zeroing them was 3% of -O2). */
void *ar_array_raw(Arena *a, size_t n, size_t size);
void *ar_grow(Arena *a, void *old, size_t oldn, size_t newn); /* grow an array; old
                                 may be moved or freed; bytes past oldn are
                                 not necessarily zero: fill what you use;
                                 aligned as newn allows (at most 16), as
                                 ar_array */
/* Gives back an array that ar_grow put on the heap (a large one), now;
 * anything else stays until ar_free. For tables rebuilt in a new array
 * rather than grown in place. */
void ar_release(Arena *a, void *p);
/* The appending idiom: returns v (an array of *cap elements of size bytes,
 * from ar_grow or NULL) grown with ar_grow so that element n fits. When n
 * has reached *cap, the capacity doubles, to at least min (the first
 * size), and *cap says so. */
void *ar_fit(Arena *a, void *v, int n, int *cap, size_t size, int min);
char *ar_strdup(Arena *a, const char *s);
char *ar_strndup(Arena *a, const char *s, size_t n);
/* s1 s2 s3 joined: ar_printf("%s%s%s") without the formatting, for the
 * millions of ids a big graph has. */
char *ar_cat(Arena *a, const char *s1, const char *s2, const char *s3);
char *ar_printf(Arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Internal invariant failures: print __FILE__:__LINE__ and exit 4. */
#define ir_assert(c) ((c) ? (void)0 : ir_die(__FILE__, __LINE__, #c))
_Noreturn void ir_die(const char *file, int line, const char *what);

/* ---------------------------------------------------------------- ir/util/diag.c */

/* A place in a source file. line and col count from 1; col counts bytes.
 * Eight bytes, not sixteen: every tensor, op and syntax node carries one,
 * and a run names only a handful of files (the source, <stdin>, -D, an
 * ONNX or Checkmate input), so the file is an index into a table of
 * interned names (loc_intern) instead of a pointer. Make one with loc_make
 * or loc_at, read the file back with loc_file. */
typedef struct Loc {
	int line;
	unsigned col : 24;      /* saturates at LOC_COL_MAX */
	unsigned fid : 8;       /* 0: no file; else loc_intern's index */
} Loc;

#define LOC_COL_MAX 0xffffff    /* a column past this (a line over 16 MiB)
                                   is reported as this */
#define LOC_FILES_MAX 254       /* distinct names; past that, every new one
                                   shares LOC_FILE_OTHER (see loc_intern) */
#define LOC_FILE_OTHER "<more than 254 files>"

/* The index of file in the table of names (added on first use, copied);
 * 0 for NULL. A run that names more than LOC_FILES_MAX files gets one
 * last index whose name is LOC_FILE_OTHER: messages about those files say
 * so rather than name another file. */
int loc_intern(const char *file);
Loc loc_at(int fid, long line, long col);       /* fid from loc_intern */
Loc loc_make(const char *file, long line, long col);
const char *loc_file(Loc loc);                  /* NULL: no file */

/* User diagnostics. Errors are collected in order and printed as
 *   file:line:col: error: message
 *   <the source line>
 *        ^
 * up to DIAG_MAX_ERRORS; then compilation stops. Warnings print the same
 * way with "warning:". Command-line errors use diag_usage() (exit 2). */
#define DIAG_MAX_ERRORS 20

typedef struct Source {
	const char *name;       /* file name for messages */
	const char *text;       /* whole file, NUL-terminated; NULL once dropped */
	size_t len;
	bool reread;            /* text dropped after the parse: an echo reads
	                           the file (name) again */
} Source;

typedef struct Diag {
	const Source *src;      /* for printing source lines; may be NULL */
	FILE *out;              /* stderr, or a memstream in tests */
	int nerrors, nwarnings;
	bool quiet_warnings;
	bool silent;            /* count only: print nothing (dry evaluations) */
} Diag;

void diag_init(Diag *d, const Source *src, FILE *out);
/* The rest of f, NUL-terminated (*len bytes before the NUL), malloc'd;
 * NULL on a read error (errno says why), and NULL with errno EFBIG past
 * max bytes, having read max + 1 of them (a stream such as /dev/zero
 * never ends). */
char *read_all(FILE *f, size_t max, size_t *len);
/* The input cap of every reader (.net, ONNX) unless --max-input says
 * otherwise (docs/limits.md). */
#define READ_MAX_DEFAULT ((size_t)64 << 20)
/* Says on stderr why read_all(f, max, ...) failed on the file name: past
 * the cap ("name: error: larger than ...") or errno's reason. */
void read_fail(const char *name, size_t max);
void diag_error(Diag *d, Loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void diag_warning(Diag *d, Loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool diag_full(const Diag *d);          /* the error cap was reached */
/* Writes a message into why[n] and returns false: the invariant checks'
 * "fail with the first violation". */
bool why_fail(char *why, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The one-message error of a reader or an evaluator that stops at its
 * first error and hands it back as a string (the JSON reader, the
 * Checkmate importer, the liveness evaluator and its verifier): writes
 * "file:line:col: message" into buf[n], leaving out "file:" when file is
 * NULL and "line:col:" when line is 0; truncated to fit, nothing written
 * when n is 0. */
void err_vformat(char *buf, size_t n, const char *file, int line, int col,
                 const char *fmt, va_list ap)
	__attribute__((format(printf, 6, 0)));
_Noreturn void diag_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));  /* "remat: msg", exit 2 */

/* How a pass or the pipeline ended, the reason already reported. Only
 * remat's main turns a Status into an exit status (0, 1, 3, 4; a usage
 * error, 2, exits from diag_usage). */
typedef enum Status {
	ST_OK,
	ST_ERROR,       /* the input is wrong, or a file cannot be written */
	ST_NO_FIT,      /* no schedule fits the budget */
	ST_INTERNAL,    /* a broken invariant, evaluators that disagree */
} Status;

/* ---------------------------------------------------------------- ir/util/suggest.c */

/* "did you mean": feed the known words to suggest_add(), then
 * suggest_hint() gives " (did you mean 'X'?)" for the nearest one within a
 * few edits (letters compared case-blind), or "" when none is close. */
typedef struct Suggest {
	const char *word;       /* the unknown word */
	char best[64];          /* the nearest candidate so far, or "" */
	int dist;
} Suggest;

void suggest_init(Suggest *s, const char *word);
void suggest_add(Suggest *s, const char *cand);
void suggest_addn(Suggest *s, const char *cand, size_t len); /* not NUL-ended */
const char *suggest_hint(const Suggest *s, char *buf, size_t n);

/* ---------------------------------------------------------------- ir/util/clock.c */

double util_now(void);                  /* monotonic clock, in seconds */

/* ---------------------------------------------------------------- ir/util/escape.c */

/* Every writer puts a name or a path through one of these (the rules per
 * output: docs/limits.md, "Names and paths in the outputs"). Where the
 * output is UTF-8, an invalid byte becomes U+FFFD. */
size_t utf8_len(const char *s);         /* bytes of the valid UTF-8 char at s, or 0 */
void json_put_str(FILE *out, const char *s);        /* "s", JSON */
void esc_json(FILE *out, const char *s);            /* a JSON string's body */
/* The bytes at the start of s that esc_json writes as they are (for a
 * writer with a buffer of its own: copy those, esc_json the rest). */
size_t json_plain_len(const char *s);
/* "s", JSON that may sit in an HTML <script> or CDATA: '<', '>' and '&'
 * as \u003c, \u003e, \u0026 too, so neither "</" nor "]]>" appears. */
void json_put_script_str(FILE *out, const char *s);
void esc_xml(FILE *out, const char *s);  /* XML text or attribute value */
void dot_put_str(FILE *out, const char *s);         /* "s", a DOT quoted ID */
void csv_put_field(FILE *out, const char *s);       /* RFC 4180 field, no formula */
/* Python: the body of a '...', "..." or """...""" literal (quotes,
 * backslashes and line ends escaped; an invalid byte as \udcXX, the
 * surrogateescape form), and "s" whole. */
void py_put_body(FILE *out, const char *s);
void py_put_str(FILE *out, const char *s);
/* C: the body of a string literal (quotes, backslashes, '?' and
 * non-printable bytes in octal), and the text of a block comment
 * (non-printable bytes as '?', "*" "/" and "/" "*" split). In arena a. */
const char *esc_c_str(Arena *a, const char *s);
const char *esc_c_comment(Arena *a, const char *s);
/* s on one line of UTF-8, for a '#' comment of .net: control bytes and
 * invalid UTF-8 bytes as '?'. s itself when it has none, else a copy in a. */
const char *esc_line(Arena *a, const char *s);

/* ---------------------------------------------------------------- ir/util/json_read.c */

/* A small JSON reader (RFC 8259) for the benchmark importer: parses a
 * whole text into a tree in an arena, or fails with "line:col: message". It
 * never reads past the given length and limits nesting depth, so malformed
 * or hostile input gives an error, not a crash. */
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

/* ---------------------------------------------------------------- int lists (inline) */

/* Appends x to list[*n] unless it is already there. For the short lists of
 * a node's inputs, an op's saves, a node's peers: a handful long, so the
 * linear check keeps the whole build linear. */
static inline void
push_unique(int *list, int *n, int x)
{
	for (int i = 0; i < *n; i++)
		if (list[i] == x)
			return;
	list[(*n)++] = x;
}

/* ---------------------------------------------------------------- checked arithmetic (inline) */
/* Checked 64-bit arithmetic (checked.h, inline), the one helper family
 * every module uses where bytes, elements, FLOPs or costs are summed or
 * multiplied. Two forms:
 *  - ck_add/ck_sub/ck_mul store the exact result and return true, or store
 *    the saturated value (INT64_MAX or INT64_MIN) and return false;
 *  - ck_sat_* return the saturated result, for running totals whose
 *    overflow is reported once at the end (a saturated total never wraps
 *    back into a plausible wrong number).
 * CK_LIMIT (2^62) is the documented cap on any byte or FLOP total that
 * reaches a report (docs/limits.md): sums of values under it never wrap. */

#define CK_LIMIT ((int64_t)1 << 62)

static inline int64_t
ck_saturate(bool negative)
{
	return negative ? INT64_MIN : INT64_MAX;
}

static inline bool
ck_add(int64_t a, int64_t b, int64_t *r)
{
	if (!__builtin_add_overflow(a, b, r))
		return true;
	*r = ck_saturate(a < 0);
	return false;
}

static inline bool
ck_sub(int64_t a, int64_t b, int64_t *r)
{
	if (!__builtin_sub_overflow(a, b, r))
		return true;
	*r = ck_saturate(a < 0);
	return false;
}

static inline bool
ck_mul(int64_t a, int64_t b, int64_t *r)
{
	if (!__builtin_mul_overflow(a, b, r))
		return true;
	*r = ck_saturate((a < 0) != (b < 0));
	return false;
}

/* op's result, saturated where it overflows (op: ck_add, ck_sub, ck_mul) */
static inline int64_t
ck_sat(bool (*op)(int64_t, int64_t, int64_t *), int64_t a, int64_t b)
{
	int64_t r;

	op(a, b, &r);
	return r;
}

#define ck_sat_add(a, b) ck_sat(ck_add, (a), (b))
#define ck_sat_sub(a, b) ck_sat(ck_sub, (a), (b))
#define ck_sat_mul(a, b) ck_sat(ck_mul, (a), (b))

/* A finite double in [lo, hi] to int64 (rounded toward zero); false for
 * NaN, infinities and anything out of range, which C leaves undefined. */
static inline bool
ck_from_double(double v, int64_t lo, int64_t hi, int64_t *r)
{
	if (!(v >= (double)lo && v <= (double)hi) || v >= 9223372036854775807.0)
		return false;
	*r = (int64_t)v;
	return true;
}

#endif
