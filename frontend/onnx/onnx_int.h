/* frontend/onnx/onnx_int.h -- what import.c and ops.c share: the value
 * table and the text being written. Nothing outside frontend/onnx sees it. */
#ifndef REMAT_ONNX_INT_H
#define REMAT_ONNX_INT_H

#include <regex.h>
#include <setjmp.h>

#include "onnx.h"
#include "onnx_subset.pb-c.h"

/* The caps on what a model may hold (docs/limits.md, "ONNX models").
 * door.c checks every count and number of the unpacked model against them
 * before any of it is used, so that the arithmetic after (on dims of at
 * most 2^40 and counts of at most 2^22) cannot overflow; where a product
 * or sum could still pass 2^63 it is checked (ck_mul, ck_add). */
#define OX_MAXRANK IR_MAXDIM
#define OX_MAXSYM 16
#define OX_MAXDIM ((int64_t)1 << 40)    /* a dim, pad, stride, dilation, kernel */
#define OX_MAXELEMS ((int64_t)1 << 50)  /* elements of one value */
#define OX_MAXFOLD (1 << 20)    /* most elements a folded constant may hold */
#define OX_MAXFOLDALL (1 << 23) /* most elements folded in a whole model */
#define OX_MAXBLOCK 4096        /* most statements of a block written as a def */
#define OX_MAXCOUNT (1 << 22)   /* nodes; graph inputs, outputs, initializers */
#define OX_MAXIO 65536          /* inputs, or outputs, of one node */
#define OX_MAXATTR 1024         /* attributes of one node */
#define OX_MAXNAME 4096         /* bytes of any name or string */
#define OX_MAXOPSETS 256        /* opset imports */
#define OX_UNPACK_SLACK (32 << 20)      /* protobuf-c may allocate twice the
                                           file's size and this */

typedef Onnx__NodeProto Node;

enum { V_DATA, V_PARAM, V_BUFFER, V_ACT, V_CONST };

/* One ONNX value: its type, and either its .net name or its constant. */
typedef struct Val {
	const char *name;       /* ONNX name */
	int dt;                 /* ONNX TensorProto data type */
	int ndim;               /* axes (ONNX calls it the rank) */
	int64_t dim[OX_MAXRANK];
	int kind;
	double *k;              /* V_CONST: the values (at most OX_MAXFOLD) */
	const char *net;        /* .net name once it has one */
	int nuse;               /* consumers, for the pattern matchers */
	int nusers;             /* nodes that read it, one per input slot, */
	int *users;             /* ascending (check_order builds them once) */
	const Node *producer;
	const char **sym;       /* graph inputs with a dim_param: the .net
	                           dim of each axis (NULL: a number) */
} Val;

/* A set of names (names.c); tables xmalloc'd, freed by ox_names_free. */
typedef struct NameBase {
	const char *base;
	int next;               /* the next suffix to try: base_next */
} NameBase;

typedef struct Names {
	const char **tab;       /* open hashing, half full at most */
	size_t cap, n;
	NameBase *bases;        /* the names asked for by ox_names_fresh */
	size_t bcap, bn;
} Names;

/* A growable text buffer. */
typedef struct Buf {
	char *s;
	size_t n, cap;
} Buf;

typedef struct Imp {
	const char *file;
	Arena *a;               /* the import's own, freed when it ends */
	Arena *keep;            /* the caller's: what outlives the import */
	FILE *err;              /* for messages: OnnxOptions.err or stderr */
	const OnnxOptions *opt;
	NetOptions *net;
	struct { const char *onnx, *net; } sym[OX_MAXSYM];
	int nsym;
	bool has_batch;         /* a dim_param became the `batch` dim */
	int batch_sym;
	int64_t batch_value;
	jmp_buf fail;
	Onnx__GraphProto *g;
	Val **tab;              /* open hashing on the ONNX name */
	size_t cap, n;
	Names used;             /* .net names taken */
	Buf head, ops, body;    /* declarations, custom ops, statements */
	Buf defs;               /* blocks.c: defs of the repeated blocks */
	size_t *node_beg, *node_end;    /* each node's statements in body */
	int *node_order, nnoted;        /* the nodes in the order written */
	const char *labels;     /* --loss: the labels input's .net name */
	int ncustom, nconst;
	const char **custom_decl, **custom_kind, **custom_name;  /* ops.c: custom
	                           ops declared, by declaration (xmalloc) */
	int *custom_tab;        /* their indices by declaration, open hashing */
	size_t custom_cap;
	int64_t folded;         /* elements folded so far (OX_MAXFOLDALL) */
	int nbn_train, nbn_infer, ndropout;
	int64_t buffer_bytes;   /* BatchNorm running statistics */
	regex_t params_re;      /* --params, compiled: imp_free frees it when a
	                           failure jumps out before classify is done */
	bool params_re_live;
	bool *skip;             /* nodes folded into a fused op */
	const Node *cur;        /* node being translated, for messages */
} Imp;

/* import.c */
/* "PATH: error: node 'NAME' (OP): message" on stderr (the node part while
 * a node is being read), then back to onnx_translate, which returns 1. */
_Noreturn void ox_fail(Imp *I, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* s with control bytes as '?' (s itself when it has none): what a name
 * may put in a `#` comment of the text, which a newline would end. */
const char *ox_clean(Imp *I, const char *s);
void ox_printf(Buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
Val *ox_lookup(Imp *I, const char *name);
/* The importer's string hash (djb2 over n bytes), for its tables. */
size_t ox_hash(const char *s, size_t n);
/* Whether s is a .net keyword or dtype, which no name may be. */
bool ox_reserved(const char *s);
Val *ox_new(Imp *I, const char *name);
const char *ox_netname(Imp *I, const char *want);
const char *ox_dtype(Imp *I, int dt);
int64_t ox_numel(const Val *v);
void ox_shape(Buf *b, const Val *v);

/* names.c */
bool ox_names_has(const Names *s, const char *t);
void ox_names_add(Names *s, const char *t);
/* want when it is neither in s nor bad, else the first of want_2, want_3,
 * ... that is neither, made in a; not added to s. bad must say the same
 * of a name every time. */
const char *ox_names_fresh(Names *s, Arena *a, const char *want,
                           bool (*bad)(void *ctx, const char *t), void *ctx);
void ox_names_free(Names *s);

/* door.c */
/* Checks every count, name length, rank, dim and attribute list of the
 * unpacked model against the caps above; fails at the first one past. */
void ox_door(Imp *I, const Onnx__ModelProto *m);

/* ops.c */
void ox_node(Imp *I, int i);
void ox_const_tensor(Imp *I, Val *v, const Onnx__TensorProto *t);

/* blocks.c */
void ox_blocks_note(Imp *I, int i, size_t beg, size_t end);
void ox_blocks(Imp *I);

#endif
