/* frontend/inst.h -- state shared by the two halves of net_instantiate:
 * frontend/dims.c (name tables, dimension arithmetic, dims, train
 * settings, custom ops) and frontend/instantiate.c (scopes, statements,
 * tensor expressions, ids). Private to the frontend. */
#ifndef REMAT_INST_H
#define REMAT_INST_H

#include "ast.h"

#define INST_MAXCALLS 256          /* def calls nested at once */
#define INST_MAXTENSORS (1 << 24)  /* default cap on the graph's tensors */

/* An open-addressing table from (scope, name) to an int. */
/* 16 bytes: the hash is not kept (map_rehash computes it again), which
 * was a third of a 300k-name table. */
typedef struct MapEntry {
	const char *name;
	int scope;
	int val;
} MapEntry;

typedef struct Map {
	MapEntry *e;
	int cap, n;
} Map;

/* What an expression evaluated to: nothing (an error was reported, or an
 * input of it was poisoned), one tensor, or several (split, multi-return). */
typedef enum ValKind { VK_POISON, VK_ONE, VK_MULTI } ValKind;
typedef struct Val {
	ValKind kind;
	int t;                  /* VK_ONE */
	int n;                  /* VK_MULTI */
	const int *ts;
} Val;

enum { DIM_PENDING, DIM_OK, DIM_BAD };

/* A name's binding in one scope. */
typedef struct Bind {
	Val v;
	int count;              /* binding statements of this name so far */
	StmtKind decl;          /* ST_PARAM/ST_INPUT for declarations, else ST_ASSIGN */
} Bind;

typedef struct Binds {
	Bind *v;
	int n, cap;
} Binds;

typedef struct DefInfo {
	const Stmt *s;
	bool bad;               /* reported once; calls give poison quietly */
} DefInfo;

typedef struct CustomInfo {
	const Stmt *s;
	CustomOp *op;           /* NULL when its declaration had errors */
} CustomInfo;

/* The loop index of a repeat that is running, in one scope instance. */
typedef struct LoopIndex {
	const char *name;
	int scope;
	int64_t value;
} LoopIndex;

/* A key that a def call's scope added to a table (names, localdims,
 * calls): the call's keys are dropped when it returns, since no scope id
 * is used again, so the tables hold the live scopes only. */
typedef struct ScopeKey {
	Map *m;
	const char *name;
	int scope;
} ScopeKey;

typedef struct Inst Inst;
/* A def's `dim` argument of this name in the scope, into *out. */
typedef bool (*LocalDimFn)(Inst *in, const void *scope, const char *name,
                           int64_t *out);

struct Inst {
	const Program *p;
	const NetOptions *o;
	Graph *g;
	Diag *d;
	Arena tmp;              /* tables and scratch; dies with the call */
	Map dims, defs, customs;
	Map builtins;           /* built-in op name -> OpKind: a call's op is
	                           found by hash, not by comparing it with
	                           every name of ir_optab */
	Map names;              /* (scope, name) -> binding */
	Map topdecl;            /* top-level params and inputs, seen by defs */
	Map calls;              /* (scope, def) -> calls made so far */
	Binds binds;
	unsigned char *dimstate;
	const Expr **dimexpr;   /* NULL when -D gave the value */
	bool value_mode;        /* dim names read Dim.value, not Dim.declared */
	DefInfo *def;
	int ndef;
	CustomInfo *custom;
	int ncustom;
	int nscopes;
	int max_tensors;
	bool too_big;           /* the tensor cap was hit: stop everything */
	Loc at;                 /* the statement being run, for the cap's error */
	int outcap;             /* capacity of Graph.outputs */
	/* parameterised defs: (scope, name) -> index in ldval */
	Map localdims;
	int64_t *ldval;
	int nld, capld;
	LocalDimFn local_dim;   /* set by instantiate.c; dim_eval asks it first */
	LoopIndex *loops;       /* the repeats running now with an index, the
	                           innermost last */
	int nloops, caploops;
	ScopeKey *undo;         /* keys of the def calls running now, in order */
	int nundo, capundo;
};

int *map_find(const Map *m, const char *name, int scope);
/* new: -1. A key of scope 0 is copied; one of any other scope (a def
 * call's) is kept as given and must live as long as the table. */
int *map_put(Map *m, Arena *a, const char *name, int scope);
void map_del(Map *m, const char *name, int scope);
uint32_t map_hash(const char *s);

/* Evaluates a dimension expression; false after an error (reported) or
 * when it reads a poisoned dim (quiet). `tensor_at` says, for a name
 * that is no dim, whether it names a tensor in the caller's scope, for a
 * better message; it may be NULL. */
typedef bool (*IsTensorFn)(struct Inst *in, const void *scope, const char *name);
bool dim_eval(Inst *in, const Expr *e, int64_t *out, IsTensorFn is_tensor,
              const void *scope);

/* frontend/dims.c: the top-level declarations, before any tensor. */
void inst_defs(Inst *in);
void inst_dims_and_settings(Inst *in);
void inst_customs(Inst *in);

/* frontend/hints.c: " (did you mean 'X'?)" into buf, or "" when no known
 * word is close: a tensor name visible in scope `scope`, an op
 * (built-in, def or custom), a dim, or one of a fixed list of words. */
#define INST_HINTLEN 96
const char *inst_hint_name(Inst *in, int scope, bool top, const char *word,
                           char *buf, size_t n);
const char *inst_hint_op(Inst *in, const char *word, char *buf, size_t n);
const char *inst_hint_dim(Inst *in, const char *word, char *buf, size_t n);
const char *inst_hint_word(const char *const *words, int nwords, const char *word,
                           char *buf, size_t n);
/* frontend/habits.c: PyTorch habits answered with the .net form.
 * inst_habit_divide reports the binary '/' e (by a number: scale(x, c=1/v));
 * inst_habit_redeclared a param or input statement s that a repeat runs
 * again in the same scope. */
void inst_habit_divide(Inst *in, const Expr *e);
void inst_habit_redeclared(Inst *in, const Stmt *s);
/* frontend/bound.c: false (reported, too_big set) when expanding the
 * program would pass the limit in docs/limits.md. */
bool inst_bound(Inst *in);

#endif
