/* frontend/parser.y -- the .net grammar (language.md). Pure, with
 * locations; every action is one call into the builders of frontend/ast.c.
 * Syntax errors say what was expected ("expected ';' before 'param'"), and
 * the parser recovers at the next ';' so one run reports several. The
 * parse tree lives in the Ast context's arena; the result is ast->prog. */
%define api.pure full
%define api.prefix {net_yy}
%define parse.error custom
%define parse.lac full
%locations
%expect 0
%param {yyscan_t scanner}
%parse-param {Ast *ast}

%code requires {
#include "ast.h"
}

%code provides {
int net_yylex(NET_YYSTYPE *lval, NET_YYLTYPE *lloc, yyscan_t scanner);
int net_yyparse(yyscan_t scanner, Ast *ast);
}

%code {
#include <string.h>

/* Deeper stacks only come from chains of unary minus. */
#define YYMAXDEPTH 2000
#define L(y) ast_loc(ast, (y).first_line, (y).first_column)
static void net_yyerror(NET_YYLTYPE *loc, yyscan_t scanner, Ast *ast, const char *msg);
}

%union {
	int64_t i;
	double r;
	const char *s;
	Dtype dt;
	Expr *e;
	ExprList *el;
	ArgList *al;
	NameList *nl;
	KvList *kl;
	Type *ty;
	Stmt *st;
	StmtList *sl;
}

%token <i> INT "integer"
%token <r> REAL "real number"
%token <s> IDENT "identifier"
%token <dt> DTYPE "dtype"
%token BATCH "'batch'" DIM "'dim'" INPUT "'input'" PARAM "'param'"
%token DEF "'def'" RETURN "'return'" REPEAT "'repeat'" OP "'op'"
%token TRAIN "'train'" OUTPUT "'output'" TRUE "'true'" FALSE "'false'"
%token ARROW "'->'"
%token <s> MEMBER "'.name'"

%type <e> expr primary
%type <el> exprs exprs_opt tuple
%type <al> args args_opt
%type <nl> names names_opt defargs defargs_opt
%type <kl> dimdefs items
%type <ty> type
%type <st> stmt
%type <sl> top stmts block

%left '+' '-'
%left '*' '@' '/'
%precedence NEG

%%

program: top				{ ast_program(ast, $1, ast_loc(ast, ast->line, ast->col)); }
	;

top: %empty				{ $$ = ast_top(ast, NULL, NULL); }
	| top stmt			{ $$ = ast_top(ast, $1, $2); }
	;

stmts: %empty				{ $$ = ast_stmts(ast, NULL, NULL); }
	| stmts stmt			{ $$ = ast_stmts(ast, $1, $2); }
	;

block: '{' stmts '}'			{ $$ = $2; }
	;

stmt: DIM dimdefs ';'			{ $$ = ast_dims(ast, L(@1), false, $2); }
	| BATCH IDENT '=' expr ';'	{ $$ = ast_dims(ast, L(@1), true, ast_kvs(ast, NULL, $2, L(@2), $4)); }
	| INPUT IDENT ':' type ';'	{ $$ = ast_decl(ast, L(@1), ST_INPUT, $2, L(@2), $4); }
	| PARAM IDENT ':' type ';'	{ $$ = ast_decl(ast, L(@1), ST_PARAM, $2, L(@2), $4); }
	| PARAM IDENT ':' type IDENT ';'
					{ $$ = ast_param_qualified(ast, L(@1), $2, L(@2), $4, $5, L(@5)); }
	| names '=' expr ';'		{ $$ = ast_assign(ast, L(@1), $1, $3); }
	| OUTPUT IDENT ';'		{ $$ = ast_output(ast, L(@1), $2, L(@2)); }
	| DEF IDENT '(' defargs_opt ')' block
					{ $$ = ast_def(ast, L(@1), $2, L(@2), $4, $6); }
	| REPEAT expr block		{ $$ = ast_repeat(ast, L(@1), $2, $3); }
	| REPEAT IDENT IDENT expr block	{ $$ = ast_repeat_index(ast, L(@1), $2, L(@2), $3, L(@3), $4, $5); }
	| OP IDENT '(' names_opt ')' ARROW type '{' items '}'
					{ $$ = ast_opdecl(ast, L(@1), $2, L(@2), $4, $7, $9); }
	| TRAIN '{' items '}'		{ $$ = ast_train(ast, L(@1), $3); }
	| RETURN exprs ';'		{ $$ = ast_return(ast, L(@1), $2); }
	| error ';'			{ $$ = NULL; if (diag_full(ast->d)) YYABORT; }
	;

dimdefs: IDENT '=' expr			{ $$ = ast_kvs(ast, NULL, $1, L(@1), $3); }
	| dimdefs ',' IDENT '=' expr	{ $$ = ast_kvs(ast, $1, $3, L(@3), $5); }
	;

names: IDENT				{ $$ = ast_names(ast, NULL, $1, L(@1)); }
	| names ',' IDENT		{ $$ = ast_names(ast, $1, $3, L(@3)); }
	;

names_opt: %empty			{ $$ = NULL; }
	| names
	;

defargs: IDENT				{ $$ = ast_defarg(ast, NULL, $1, L(@1), false); }
	| DIM IDENT			{ $$ = ast_defarg(ast, NULL, $2, L(@2), true); }
	| defargs ',' IDENT		{ $$ = ast_defarg(ast, $1, $3, L(@3), false); }
	| defargs ',' DIM IDENT		{ $$ = ast_defarg(ast, $1, $4, L(@4), true); }
	;

defargs_opt: %empty			{ $$ = NULL; }
	| defargs
	;

items: %empty				{ $$ = NULL; }
	| items IDENT '=' expr ';'	{ $$ = ast_kvs(ast, $1, $2, L(@2), $4); }
	| items error ';'		{ $$ = $1; if (diag_full(ast->d)) YYABORT; }
	;

type: DTYPE '[' exprs_opt ']'		{ $$ = ast_type(ast, L(@1), $1, $3); }
	;

expr: expr '+' expr			{ $$ = ast_bin(ast, L(@$), L(@2), '+', $1, $3); }
	| expr '-' expr			{ $$ = ast_bin(ast, L(@$), L(@2), '-', $1, $3); }
	| expr '*' expr			{ $$ = ast_bin(ast, L(@$), L(@2), '*', $1, $3); }
	| expr '@' expr			{ $$ = ast_bin(ast, L(@$), L(@2), '@', $1, $3); }
	| expr '/' expr			{ $$ = ast_bin(ast, L(@$), L(@2), '/', $1, $3); }
	| '-' expr %prec NEG		{ $$ = ast_neg(ast, L(@1), $2); }
	| primary
	;

primary: INT				{ $$ = ast_int(ast, L(@1), $1); }
	| REAL				{ $$ = ast_real(ast, L(@1), $1); }
	| TRUE				{ $$ = ast_bool(ast, L(@1), true); }
	| FALSE				{ $$ = ast_bool(ast, L(@1), false); }
	| DTYPE				{ $$ = ast_dtype(ast, L(@1), $1); }
	| IDENT				{ $$ = ast_name(ast, L(@1), $1); }
	| IDENT '(' args_opt ')'	{ $$ = ast_call(ast, L(@1), $1, $3); }
	| '(' expr ')'			{ $$ = $2; }
	| '(' ')'			{ $$ = ast_tuple(ast, L(@1), NULL); }
	| '(' tuple ')'			{ $$ = ast_tuple(ast, L(@1), $2); }
	| '[' exprs_opt ']'		{ $$ = ast_list(ast, L(@1), $2); }
	| primary MEMBER		{ $$ = ast_member(ast, L(@2), $1, $2, false); }
	| primary MEMBER '(' args_opt ')'	{ $$ = ast_member(ast, L(@2), $1, $2, true); }
	;

exprs: expr				{ $$ = ast_exprs(ast, NULL, $1); }
	| exprs ',' expr		{ $$ = ast_exprs(ast, $1, $3); }
	;

tuple: expr ',' expr			{ $$ = ast_exprs(ast, ast_exprs(ast, NULL, $1), $3); }
	| tuple ',' expr		{ $$ = ast_exprs(ast, $1, $3); }
	;

exprs_opt: %empty			{ $$ = NULL; }
	| exprs
	;

args: expr				{ $$ = ast_args(ast, NULL, NULL, L(@1), $1); }
	| IDENT '=' expr		{ $$ = ast_args(ast, NULL, $1, L(@1), $3); }
	| args ',' expr			{ $$ = ast_args(ast, $1, NULL, L(@3), $3); }
	| args ',' IDENT '=' expr	{ $$ = ast_args(ast, $1, $3, L(@3), $5); }
	| DIM '=' expr			{ $$ = ast_args(ast, NULL, "dim", L(@1), $3); }
	| args ',' DIM '=' expr		{ $$ = ast_args(ast, $1, "dim", L(@3), $5); }
	;

args_opt: %empty			{ $$ = NULL; }
	| args
	;

%%

/* Drops the double quotes bison keeps around a token's alias. */
static const char *
symname(yysymbol_kind_t k, char *buf, size_t n)
{
	const char *s = yysymbol_name(k);
	size_t len = strlen(s);

	if (len >= 2 && s[0] == '"' && s[len - 1] == '"') {
		snprintf(buf, n, "%.*s", (int)(len - 2), s + 1);
		return buf;
	}
	return s;
}

static bool
has_all(const bool *set, const yysymbol_kind_t *ks, int n)
{
	for (int i = 0; i < n; i++)
		if (!set[ks[i]])
			return false;
	return true;
}

/* Bison numbers character tokens itself: find them by name. */
static yysymbol_kind_t
charsym(const char *name)
{
	for (int k = 0; k < YYNTOKENS; k++)
		if (!strcmp(yysymbol_name((yysymbol_kind_t)k), name))
			return (yysymbol_kind_t)k;
	return YYSYMBOL_YYUNDEF;
}

/* Folds the expected tokens into words a user reads: "a statement" for the
 * tokens that start one, "an expression" likewise; lists up to five. */
static void
expected_str(const yypcontext_t *ctx, char *out, size_t n)
{
	static const yysymbol_kind_t stmt_start[] = {
		YYSYMBOL_DIM, YYSYMBOL_BATCH, YYSYMBOL_INPUT, YYSYMBOL_PARAM,
		YYSYMBOL_OUTPUT, YYSYMBOL_DEF, YYSYMBOL_REPEAT, YYSYMBOL_OP,
		YYSYMBOL_TRAIN, YYSYMBOL_RETURN};
	const yysymbol_kind_t expr_start[] = {
		YYSYMBOL_INT, YYSYMBOL_REAL, YYSYMBOL_TRUE, YYSYMBOL_FALSE,
		YYSYMBOL_DTYPE, YYSYMBOL_IDENT, charsym("'('"), charsym("'['"),
		charsym("'-'")};
	yysymbol_kind_t exp[YYNTOKENS];
	bool set[YYNTOKENS] = {0};
	const char *words[YYNTOKENS + 2];
	char bufs[YYNTOKENS][24];
	int ne = yypcontext_expected_tokens(ctx, exp, YYNTOKENS), nw = 0;

	for (int i = 0; i < ne; i++)
		set[exp[i]] = true;
	if (has_all(set, stmt_start, 10)) {
		words[nw++] = "a statement";
		for (int i = 0; i < 10; i++)
			set[stmt_start[i]] = false;
		set[YYSYMBOL_IDENT] = false;
	}
	if (has_all(set, expr_start, 9)) {
		words[nw++] = "an expression";
		for (int i = 0; i < 9; i++)
			set[expr_start[i]] = false;
	}
	/* an operator may follow any expression: naming them is noise */
	for (const char *op = "+-*/@"; *op; op++) {
		char name[4] = {'\'', *op, '\'', 0};
		set[charsym(name)] = false;
	}
	set[YYSYMBOL_YYUNDEF] = false;
	set[YYSYMBOL_MEMBER] = false;   /* only PyTorch habits, reported apart */
	for (int k = 0; k < YYNTOKENS; k++)
		if (set[k])
			words[nw++] = k == YYSYMBOL_YYEOF ? "end of file"
			              : symname((yysymbol_kind_t)k, bufs[k], sizeof bufs[k]);
	out[0] = 0;
	if (nw == 0 || nw > 5)
		return;
	for (int i = 0; i < nw; i++)
		snprintf(out + strlen(out), n - strlen(out), "%s%s",
		         i == 0 ? "" : i == nw - 1 ? " or " : ", ", words[i]);
}

static int
yyreport_syntax_error(const yypcontext_t *ctx, yyscan_t scanner, Ast *ast)
{
	char exp[256], got[64];
	const NET_YYLTYPE *l = yypcontext_location(ctx);
	Loc loc = L(*l);

	(void)scanner;
	if (ast->stop)
		return 0;
	if (yypcontext_token(ctx) == YYSYMBOL_YYEOF)
		snprintf(got, sizeof got, "end of file");
	else
		snprintf(got, sizeof got, "'%s'", ast->tok);
	expected_str(ctx, exp, sizeof exp);
	if (exp[0])
		diag_error(ast->d, loc, "expected %s before %s", exp, got);
	else
		diag_error(ast->d, loc, "unexpected %s", got);
	return 0;
}

static void
net_yyerror(NET_YYLTYPE *loc, yyscan_t scanner, Ast *ast, const char *msg)
{
	(void)scanner;
	if (ast->stop)
		return;
	if (!strcmp(msg, "memory exhausted"))
		msg = "expression nested too deeply";
	diag_error(ast->d, L(*loc), "%s", msg);
}
