/* frontend/onnx/onnx_int.h -- what import.c and ops.c share: the value
 * table and the text being written. Nothing outside frontend/onnx sees it. */
#ifndef REMAT_ONNX_INT_H
#define REMAT_ONNX_INT_H

#include <setjmp.h>

#include "onnx.h"
#include "onnx_subset.pb-c.h"

#define OX_MAXRANK IR_MAXDIM
#define OX_MAXSYM 16
#define OX_MAXFOLD (1 << 20)    /* most elements a folded constant may hold */
#define OX_MAXBLOCK 4096        /* most statements of a block written as a def */

typedef Onnx__NodeProto Node;

enum { V_DATA, V_PARAM, V_BUFFER, V_ACT, V_CONST };

/* One ONNX value: its type, and either its .net name or its constant. */
typedef struct Val {
	const char *name;       /* ONNX name */
	int dt;                 /* ONNX TensorProto data type */
	int rank;
	int64_t dim[OX_MAXRANK];
	int kind;
	double *k;              /* V_CONST: the values (at most OX_MAXFOLD) */
	const char *net;        /* .net name once it has one */
	int nuse;               /* consumers, for the pattern matchers */
	const Node *producer;
	const char *sym[OX_MAXRANK];    /* graph inputs: .net dim of a dim_param */
} Val;

/* A growable text buffer. */
typedef struct Buf {
	char *s;
	size_t n, cap;
} Buf;

typedef struct Imp {
	const char *file;
	Arena *a;
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
	const char **used;      /* .net names taken, open hashing */
	size_t ucap, un;
	Buf head, ops, body;    /* declarations, custom ops, statements */
	Buf defs;               /* blocks.c: defs of the repeated blocks */
	size_t *node_beg, *node_end;    /* each node's statements in body */
	int *node_order, nnoted;        /* the nodes in the order written */
	int ncustom, nconst;
	const char **custom_decl, **custom_kind, **custom_name;  /* ops.c: custom
	                           ops declared, by declaration (xmalloc) */
	int nbn_train, nbn_infer, ndropout;
	int64_t buffer_bytes;   /* BatchNorm running statistics */
	bool *skip;             /* nodes folded into a fused op */
	const Node *cur;        /* node being translated, for messages */
} Imp;

/* import.c */
_Noreturn void ox_fail(Imp *I, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
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

/* ops.c */
void ox_node(Imp *I, int i);
void ox_const_tensor(Imp *I, Val *v, const Onnx__TensorProto *t);

/* blocks.c */
void ox_blocks_note(Imp *I, int i, size_t beg, size_t end);
void ox_blocks(Imp *I);

#endif
