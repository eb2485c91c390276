/* frontend/ast.h -- the syntax tree of a .net file, and the builders that
 * make it (frontend/ast.c). The parser's actions are one-line calls to these
 * builders; tests call them directly to make programs without the parser.
 *
 * Everything in the tree lives in the Arena given to the builder context.
 * The tree knows nothing about the graph: net_instantiate reads it and
 * writes the Graph. Reads nothing of the IR but Loc, Dtype and Arena.
 */
#ifndef REMAT_AST_H
#define REMAT_AST_H

#include "frontend.h"

#define AST_MAXNEST 256         /* brackets open at once */
#define AST_MAXDEPTH 1000       /* depth of one expression tree */

typedef struct Expr Expr;
typedef struct Stmt Stmt;

typedef enum ExprKind {
	EX_INT, EX_REAL, EX_BOOL, EX_DTYPE, EX_NAME,
	EX_BIN,         /* op: '+' '-' '*' '/' '@' */
	EX_NEG,         /* unary minus of l */
	EX_CALL,        /* name(args) */
	EX_LIST,        /* [a, b, ...]: shape lists */
	EX_TUPLE        /* (a, b, ...) or (): only `saves` uses it */
} ExprKind;

typedef struct ExprList {
	Expr **v;
	int n, cap;
} ExprList;

/* One call argument: positional when key is NULL, else key=e. */
typedef struct Arg {
	const char *key;
	Loc keyloc;
	Expr *e;
} Arg;

typedef struct ArgList {
	Arg *v;
	int n, cap;
} ArgList;

/* The fields of one kind share storage with the others' (read only those
 * of e->kind): a 300k-statement file makes 600k expressions, at 40 bytes
 * each instead of 112. */
struct Expr {
	ExprKind kind : 8;
	int op : 8;             /* EX_BIN: '+' '-' '*' '/' '@' */
	int depth : 16;         /* 1 for a leaf; saturates at AST_MAXDEPTH + 1,
	                           which is reported */
	Loc loc;                /* where the expression starts */
	Loc oploc;              /* EX_BIN: the operator, for arithmetic errors */
	union {
		int64_t i;      /* EX_INT */
		double real;    /* EX_REAL */
		bool b;         /* EX_BOOL */
		Dtype dt;       /* EX_DTYPE */
		struct {
			const char *name;       /* EX_NAME; EX_CALL: the callee */
			ArgList *args;          /* EX_CALL (never NULL) */
		};
		struct {
			Expr *l, *r;            /* EX_BIN; EX_NEG uses l */
		};
		ExprList *items;        /* EX_LIST, EX_TUPLE (never NULL) */
	};
};

typedef struct Name {
	const char *s;
	Loc loc;
	bool is_dim;            /* a def's `dim NAME` argument, a repeat's loop
	                           index: an integer */
} Name;

typedef struct NameList {
	Name *v;
	int n, cap;
} NameList;

/* `key = e`: dim definitions, train settings, custom op settings. */
typedef struct Kv {
	Name key;
	Expr *e;
} Kv;

typedef struct KvList {
	Kv *v;
	int n, cap;
} KvList;

/* dtype[d0, d1, ...] */
typedef struct Type {
	Dtype dt;
	Loc loc;                /* the dtype name */
	ExprList *dims;
} Type;

typedef struct StmtList {
	Stmt **v;
	int n, cap;
} StmtList;

typedef enum StmtKind {
	ST_DIM, ST_BATCH, ST_INPUT, ST_PARAM, ST_ASSIGN, ST_OUTPUT,
	ST_DEF, ST_REPEAT, ST_OP, ST_TRAIN, ST_RETURN
} StmtKind;

/* Which fields a statement uses:
 *   dim/batch   kvs (batch: exactly one)
 *   input/param name, type
 *   assign      names, e
 *   output      name
 *   def         name, names (arguments; Name.is_dim marks `dim` ones), body
 *   repeat      e (the count), body; name: the loop index (name.s NULL
 *               without one)
 *   op          name, names (arguments), type, kvs
 *   train       kvs
 *   return      exprs
 */
/* No kind uses both fields of a union (72 bytes, not 96: a 300k-statement
 * file has 300k of them); read only the fields of s->kind. */
struct Stmt {
	StmtKind kind : 8;
	bool frozen;            /* param: `frozen` (no grad, no optimizer state) */
	bool buffer;            /* param: `buffer` (frozen, and not a parameter) */
	Loc loc;                /* the statement's first token */
	Name name;
	NameList *names;
	Expr *e;
	union {
		Type *type;     /* input, param, op */
		StmtList *body; /* def, repeat */
	};
	union {
		KvList *kvs;    /* dim, batch, op, train */
		ExprList *exprs; /* return */
	};
};

/* net_parse_once's tree comes in pieces: the top-level statements after the
 * previous piece's up to `last`, in an arena of their own that
 * net_instantiate frees once it has run them (and the next statement,
 * whose first token the parser may have read into it), unless the piece
 * holds a declaration (dim, batch, def, op, train), which later statements
 * read. A 300k-statement tree is larger than the graph made from it. */
typedef struct TreePiece {
	Arena *ar;
	int last;
	bool keep;
} TreePiece;

struct Program {
	const char *file;
	StmtList *stmts;
	Loc end;                /* end of file, for "missing output" */
	TreePiece *pieces;      /* net_parse_once; NULL: one tree, kept */
	int npieces;
};

/* The builder context, also the scanner's and parser's state. */
typedef struct Ast {
	Arena *a;               /* where nodes go: pin, or the current piece */
	Arena *pin;             /* in pieces: the Program, the top-level list and
	                           the pieces' records; else NULL */
	TreePiece *pieces;
	int npieces, cappieces;
	Diag *d;
	const char *file;
	int fid;                /* file's loc_intern index, for ast_loc */
	Program *prog;          /* set by the start rule */
	/* scanner */
	const char *src;        /* the source text, handed to flex a buffer at
	                           a time (lex_input): a copy of a whole 7 MB
	                           file was most of the parse's peak */
	size_t srclen, srcpos;
	int line, col;          /* position of the next byte */
	int nest;               /* brackets open now */
	bool stop;              /* a fatal scan error: quiet the parser */
	bool deep_reported;
	char tok[40];           /* text of the last token, for messages */
	int toklen;
	const Expr *habit;      /* the receiver of the last PyTorch member
	                           reported (ast_member): one error a chain */
} Ast;

void ast_init(Ast *ast, Arena *a, Diag *d, const char *file);
Loc ast_loc(const Ast *ast, int line, int col);

Expr *ast_int(Ast *ast, Loc loc, int64_t v);
Expr *ast_real(Ast *ast, Loc loc, double v);
Expr *ast_bool(Ast *ast, Loc loc, bool v);
Expr *ast_dtype(Ast *ast, Loc loc, Dtype dt);
Expr *ast_name(Ast *ast, Loc loc, const char *name);
Expr *ast_bin(Ast *ast, Loc loc, Loc oploc, int op, Expr *l, Expr *r);
Expr *ast_neg(Ast *ast, Loc loc, Expr *e);
Expr *ast_call(Ast *ast, Loc loc, const char *name, ArgList *args);
Expr *ast_list(Ast *ast, Loc loc, ExprList *items);
Expr *ast_tuple(Ast *ast, Loc loc, ExprList *items);
/* recv.path or recv.path(...) (call), PyTorch's attribute, method or
 * module syntax, which .net does not have: reports it with the .net form
 * (frontend/habits.c, which reads the op table's names) and returns recv,
 * so that the parse goes on. path is dotted ("nn.functional.relu"); dot
 * is the first '.'. */
Expr *ast_member(Ast *ast, Loc dot, Expr *recv, const char *path, bool call);

/* The list builders append to l, making it when l is NULL. */
ExprList *ast_exprs(Ast *ast, ExprList *l, Expr *e);
ArgList *ast_args(Ast *ast, ArgList *l, const char *key, Loc keyloc, Expr *e);
NameList *ast_names(Ast *ast, NameList *l, const char *s, Loc loc);
/* A def argument: a tensor, or with is_dim an integer (`dim NAME`). */
NameList *ast_defarg(Ast *ast, NameList *l, const char *s, Loc loc, bool is_dim);
KvList *ast_kvs(Ast *ast, KvList *l, const char *key, Loc keyloc, Expr *e);
StmtList *ast_stmts(Ast *ast, StmtList *l, Stmt *s);  /* s NULL: no-op */
/* The top-level list: ast_stmts, and in pieces (ast_pieces) the list stays
 * in the pinned arena and s closes the current piece once it is large. */
StmtList *ast_top(Ast *ast, StmtList *l, Stmt *s);
/* Makes the tree in pieces (see TreePiece); call before parsing. */
void ast_pieces(Ast *ast);

Type *ast_type(Ast *ast, Loc loc, Dtype dt, ExprList *dims);
Stmt *ast_dims(Ast *ast, Loc loc, bool batch, KvList *defs);
Stmt *ast_decl(Ast *ast, Loc loc, StmtKind kind, const char *name, Loc nameloc,
               Type *type);
/* param NAME : T QUALIFIER; -- `frozen`, or `buffer` (frozen, not counted
 * as a parameter: BatchNorm's running statistics). */
Stmt *ast_param_qualified(Ast *ast, Loc loc, const char *name, Loc nameloc,
                          Type *type, const char *qual, Loc qualloc);
Stmt *ast_assign(Ast *ast, Loc loc, NameList *names, Expr *e);
Stmt *ast_output(Ast *ast, Loc loc, const char *name, Loc nameloc);
Stmt *ast_def(Ast *ast, Loc loc, const char *name, Loc nameloc, NameList *args,
              StmtList *body);
Stmt *ast_repeat(Ast *ast, Loc loc, Expr *count, StmtList *body);
/* repeat NAME in COUNT { ... }: the body sees NAME, the round's number
 * from 0, as a dimension value. */
Stmt *ast_repeat_index(Ast *ast, Loc loc, const char *index, Loc indexloc,
                       const char *word, Loc wordloc, Expr *count, StmtList *body);
Stmt *ast_opdecl(Ast *ast, Loc loc, const char *name, Loc nameloc,
                 NameList *args, Type *type, KvList *settings);
Stmt *ast_train(Ast *ast, Loc loc, KvList *settings);
Stmt *ast_return(Ast *ast, Loc loc, ExprList *values);
Program *ast_program(Ast *ast, StmtList *stmts, Loc end);

/* frontend/lexer.l, for frontend/parse.c and the tests */
typedef void *yyscan_t;

#endif
