/* frontend/ast.c -- builders for the syntax tree (frontend/ast.h). The
 * parser's actions call them; so do the tests, without a parser. All nodes
 * live in the builder's arena. Writes no IR; reports "expression nested too
 * deeply" through the builder's Diag. */
#include <string.h>

#include "ast.h"

void
ast_init(Ast *ast, Arena *a, Diag *d, const char *file)
{
	memset(ast, 0, sizeof *ast);
	ast->a = a;
	ast->d = d;
	ast->file = file;
	ast->fid = loc_intern(file);
	ast->line = 1;
	ast->col = 1;
}

Loc
ast_loc(const Ast *ast, int line, int col)
{
	return loc_at(ast->fid, line, col);
}

static Expr *
node(Ast *ast, ExprKind kind, Loc loc)
{
	Expr *e = ar_array(ast->a, 1, sizeof *e);

	e->kind = kind;
	e->loc = loc;
	e->depth = 1;
	return e;
}

/* Deep trees would make the recursive passes overflow the C stack, and a
 * thousand nested operators is no real network: refuse them once. */
static void
set_depth(Ast *ast, Expr *e, int below)
{
	e->depth = below < AST_MAXDEPTH ? below + 1 : AST_MAXDEPTH + 1;
	if (e->depth > AST_MAXDEPTH && !ast->deep_reported) {
		ast->deep_reported = true;
		diag_error(ast->d, e->loc, "expression nested too deeply (more than %d levels)",
		           AST_MAXDEPTH);
	}
}

Expr *
ast_int(Ast *ast, Loc loc, int64_t v)
{
	Expr *e = node(ast, EX_INT, loc);

	e->i = v;
	return e;
}

Expr *
ast_real(Ast *ast, Loc loc, double v)
{
	Expr *e = node(ast, EX_REAL, loc);

	e->real = v;
	return e;
}

Expr *
ast_bool(Ast *ast, Loc loc, bool v)
{
	Expr *e = node(ast, EX_BOOL, loc);

	e->b = v;
	return e;
}

Expr *
ast_dtype(Ast *ast, Loc loc, Dtype dt)
{
	Expr *e = node(ast, EX_DTYPE, loc);

	e->dt = dt;
	return e;
}

Expr *
ast_name(Ast *ast, Loc loc, const char *name)
{
	Expr *e = node(ast, EX_NAME, loc);

	e->name = name;
	return e;
}

Expr *
ast_bin(Ast *ast, Loc loc, Loc oploc, int op, Expr *l, Expr *r)
{
	Expr *e = node(ast, EX_BIN, loc);

	e->oploc = oploc;
	e->op = op;
	e->l = l;
	e->r = r;
	set_depth(ast, e, l->depth > r->depth ? l->depth : r->depth);
	return e;
}

Expr *
ast_neg(Ast *ast, Loc loc, Expr *l)
{
	Expr *e = node(ast, EX_NEG, loc);

	e->l = l;
	set_depth(ast, e, l->depth);
	return e;
}

static int
list_depth(const ExprList *l)
{
	int d = 0;

	for (int i = 0; i < l->n; i++)
		if (l->v[i]->depth > d)
			d = l->v[i]->depth;
	return d;
}

Expr *
ast_call(Ast *ast, Loc loc, const char *name, ArgList *args)
{
	Expr *e = node(ast, EX_CALL, loc);
	int d = 0;

	e->name = name;
	e->args = args ? args : ar_alloc(ast->a, sizeof *args);
	for (int i = 0; i < e->args->n; i++)
		if (e->args->v[i].e->depth > d)
			d = e->args->v[i].e->depth;
	set_depth(ast, e, d);
	return e;
}

Expr *
ast_list(Ast *ast, Loc loc, ExprList *items)
{
	Expr *e = node(ast, EX_LIST, loc);

	e->items = items ? items : ar_alloc(ast->a, sizeof *items);
	set_depth(ast, e, list_depth(e->items));
	return e;
}

Expr *
ast_tuple(Ast *ast, Loc loc, ExprList *items)
{
	Expr *e = ast_list(ast, loc, items);

	e->kind = EX_TUPLE;
	return e;
}

ExprList *
ast_exprs(Ast *ast, ExprList *l, Expr *e)
{
	if (!l)
		l = ar_alloc(ast->a, sizeof *l);
	l->v = ar_fit(ast->a, l->v, l->n, &l->cap, sizeof *l->v, 1);
	l->v[l->n++] = e;
	return l;
}

ArgList *
ast_args(Ast *ast, ArgList *l, const char *key, Loc keyloc, Expr *e)
{
	if (!l)
		l = ar_alloc(ast->a, sizeof *l);
	l->v = ar_fit(ast->a, l->v, l->n, &l->cap, sizeof *l->v, 1);
	l->v[l->n++] = (Arg){key, keyloc, e};
	return l;
}

NameList *
ast_names(Ast *ast, NameList *l, const char *s, Loc loc)
{
	if (!l)
		l = ar_alloc(ast->a, sizeof *l);
	l->v = ar_fit(ast->a, l->v, l->n, &l->cap, sizeof *l->v, 1);
	l->v[l->n++] = (Name){s, loc, false};
	return l;
}

NameList *
ast_defarg(Ast *ast, NameList *l, const char *s, Loc loc, bool is_dim)
{
	l = ast_names(ast, l, s, loc);
	l->v[l->n - 1].is_dim = is_dim;
	return l;
}

KvList *
ast_kvs(Ast *ast, KvList *l, const char *key, Loc keyloc, Expr *e)
{
	if (!l)
		l = ar_alloc(ast->a, sizeof *l);
	l->v = ar_fit(ast->a, l->v, l->n, &l->cap, sizeof *l->v, 1);
	l->v[l->n++] = (Kv){{key, keyloc, false}, e};
	return l;
}

StmtList *
ast_stmts(Ast *ast, StmtList *l, Stmt *s)
{
	if (!l)
		l = ar_alloc(ast->a, sizeof *l);
	if (!s)
		return l;
	l->v = ar_fit(ast->a, l->v, l->n, &l->cap, sizeof *l->v, 1);
	l->v[l->n++] = s;
	return l;
}

enum { PIECE_BYTES = 1 << 20 };

static void
new_piece(Ast *ast)
{
	int last = ast->npieces ? ast->pieces[ast->npieces - 1].last : -1;

	ast->pieces = ar_fit(ast->pin, ast->pieces, ast->npieces, &ast->cappieces,
	                     sizeof *ast->pieces, 16);
	ast->a = ar_child(ast->pin);
	ast->pieces[ast->npieces++] = (TreePiece){ast->a, last, false};
}

void
ast_pieces(Ast *ast)
{
	ast->pin = ast->a;
	new_piece(ast);
}

StmtList *
ast_top(Ast *ast, StmtList *l, Stmt *s)
{
	Arena *cur = ast->a;
	TreePiece *p;

	if (!ast->pin)
		return ast_stmts(ast, l, s);
	ast->a = ast->pin;
	l = ast_stmts(ast, l, s);
	ast->a = cur;
	if (!s)
		return l;
	p = &ast->pieces[ast->npieces - 1];
	p->last = l->n - 1;
	p->keep |= s->kind == ST_DIM || s->kind == ST_BATCH || s->kind == ST_DEF ||
	           s->kind == ST_OP || s->kind == ST_TRAIN;
	if (cur->total >= PIECE_BYTES)
		new_piece(ast);
	return l;
}

Type *
ast_type(Ast *ast, Loc loc, Dtype dt, ExprList *dims)
{
	Type *t = ar_alloc(ast->a, sizeof *t);

	t->dt = dt;
	t->loc = loc;
	t->dims = dims ? dims : ar_alloc(ast->a, sizeof *dims);
	return t;
}

static Stmt *
stmt(Ast *ast, StmtKind kind, Loc loc)
{
	Stmt *s = ar_array(ast->a, 1, sizeof *s);

	s->kind = kind;
	s->loc = loc;
	return s;
}

Stmt *
ast_dims(Ast *ast, Loc loc, bool batch, KvList *defs)
{
	Stmt *s = stmt(ast, batch ? ST_BATCH : ST_DIM, loc);

	s->kvs = defs ? defs : ar_alloc(ast->a, sizeof *defs);
	return s;
}

Stmt *
ast_decl(Ast *ast, Loc loc, StmtKind kind, const char *name, Loc nameloc, Type *type)
{
	Stmt *s = stmt(ast, kind, loc);

	s->name = (Name){name, nameloc, false};
	s->type = type;
	return s;
}

Stmt *
ast_param_qualified(Ast *ast, Loc loc, const char *name, Loc nameloc, Type *type,
                    const char *qual, Loc qualloc)
{
	Stmt *s = ast_decl(ast, loc, ST_PARAM, name, nameloc, type);

	if (!strcmp(qual, "buffer"))
		s->buffer = true;
	else if (strcmp(qual, "frozen"))
		diag_error(ast->d, qualloc, "unknown param qualifier '%s' (expected "
		           "'frozen', 'buffer' or ';')", qual);
	s->frozen = true;
	return s;
}

Stmt *
ast_assign(Ast *ast, Loc loc, NameList *names, Expr *e)
{
	Stmt *s = stmt(ast, ST_ASSIGN, loc);

	s->names = names;
	s->e = e;
	return s;
}

Stmt *
ast_output(Ast *ast, Loc loc, const char *name, Loc nameloc)
{
	Stmt *s = stmt(ast, ST_OUTPUT, loc);

	s->name = (Name){name, nameloc, false};
	return s;
}

Stmt *
ast_def(Ast *ast, Loc loc, const char *name, Loc nameloc, NameList *args, StmtList *body)
{
	Stmt *s = stmt(ast, ST_DEF, loc);

	s->name = (Name){name, nameloc, false};
	s->names = args ? args : ar_alloc(ast->a, sizeof *args);
	s->body = body ? body : ar_alloc(ast->a, sizeof *body);
	return s;
}

Stmt *
ast_repeat(Ast *ast, Loc loc, Expr *count, StmtList *body)
{
	Stmt *s = stmt(ast, ST_REPEAT, loc);

	s->e = count;
	s->body = body ? body : ar_alloc(ast->a, sizeof *body);
	return s;
}

/* repeat NAME in COUNT { ... } -- `in` is a word of this form only, not a
 * reserved one (a tensor may still be called `in`). */
Stmt *
ast_repeat_index(Ast *ast, Loc loc, const char *index, Loc indexloc, const char *word,
                 Loc wordloc, Expr *count, StmtList *body)
{
	Stmt *s = ast_repeat(ast, loc, count, body);

	if (strcmp(word, "in"))
		diag_error(ast->d, wordloc, "expected 'in' after the loop index '%s', not '%s' "
		           "(repeat %s in COUNT { ... })", index, word, index);
	s->name = (Name){index, indexloc, true};
	return s;
}

Stmt *
ast_opdecl(Ast *ast, Loc loc, const char *name, Loc nameloc, NameList *args,
           Type *type, KvList *settings)
{
	Stmt *s = stmt(ast, ST_OP, loc);

	s->name = (Name){name, nameloc, false};
	s->names = args ? args : ar_alloc(ast->a, sizeof *args);
	s->type = type;
	s->kvs = settings ? settings : ar_alloc(ast->a, sizeof *settings);
	return s;
}

Stmt *
ast_train(Ast *ast, Loc loc, KvList *settings)
{
	Stmt *s = stmt(ast, ST_TRAIN, loc);

	s->kvs = settings ? settings : ar_alloc(ast->a, sizeof *settings);
	return s;
}

Stmt *
ast_return(Ast *ast, Loc loc, ExprList *values)
{
	Stmt *s = stmt(ast, ST_RETURN, loc);

	s->exprs = values ? values : ar_alloc(ast->a, sizeof *values);
	return s;
}

Program *
ast_program(Ast *ast, StmtList *stmts, Loc end)
{
	Arena *a = ast->pin ? ast->pin : ast->a;
	Program *p = ar_alloc(a, sizeof *p);

	p->file = ast->file;
	p->stmts = stmts ? stmts : ar_alloc(a, sizeof *stmts);
	p->end = end;
	p->pieces = ast->pieces;
	p->npieces = ast->npieces;
	ast->prog = p;
	return p;
}
