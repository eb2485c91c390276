/* frontend/parse.c -- net_parse: runs the scanner and parser of
 * frontend/lexer.l and frontend/parser.y over a whole source. The tree
 * lives in the caller's arena (net_parse_once: in pieces, children of it,
 * that net_instantiate frees as it goes). Writes no IR; reports through
 * the Diag. */
#include <limits.h>

#include "ast.h"

/* From the generated scanner and parser. */
int net_yylex_init_extra(Ast *extra, yyscan_t *sc);
int net_yylex_destroy(yyscan_t sc);
int net_yyparse(yyscan_t sc, Ast *ast);

static Program *
parse(const Source *src, Arena *a, Diag *d, bool pieces)
{
	Ast ast;
	yyscan_t sc;
	int before = d->nerrors, rc;

	ast_init(&ast, a, d, src->name);
	if (pieces)
		ast_pieces(&ast);
	if (src->len > INT_MAX / 2) {
		diag_error(d, loc_make(src->name, 0, 0), "file too large (%zu bytes)", src->len);
		return NULL;
	}
	ast.src = src->text ? src->text : "";
	ast.srclen = src->text ? src->len : 0;
	if (net_yylex_init_extra(&ast, &sc))
		ir_die(__FILE__, __LINE__, "cannot start the scanner");
	rc = net_yyparse(sc, &ast);     /* the scanner reads ast.src (lex_input) */
	net_yylex_destroy(sc);
	if (rc != 0 || d->nerrors > before || !ast.prog)
		return NULL;
	return ast.prog;
}

Program *
net_parse(const Source *src, Arena *a, Diag *d)
{
	return parse(src, a, d, false);
}

Program *
net_parse_once(const Source *src, Arena *a, Diag *d)
{
	return parse(src, a, d, true);
}
