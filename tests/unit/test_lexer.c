/* tests/unit/test_lexer.c -- the .net scanner: tokens, locations, integers
 * with '_', reals, comments, keywords and dtypes, bad characters. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "ast.h"
#include "libparser_a-parser.h"

struct yy_buffer_state;
int net_yylex_init_extra(Ast *extra, yyscan_t *sc);
struct yy_buffer_state *net_yy_scan_bytes(const char *bytes, int len, yyscan_t sc);
int net_yylex_destroy(yyscan_t sc);

typedef struct Tok {
	int kind, line, col;
	NET_YYSTYPE v;
} Tok;

/* Scans text (n bytes) into toks; returns the count, errors into *err. */
static int
scan(const char *text, size_t n, Tok *toks, int max, char **err)
{
	Arena a;
	Diag d;
	Ast ast;
	yyscan_t sc;
	size_t len = 0;
	FILE *f = open_memstream(err, &len);
	Source src = {"m.net", text, n};
	int k = 0;

	ar_init(&a);
	diag_init(&d, &src, f);
	ast_init(&ast, &a, &d, "m.net");
	net_yylex_init_extra(&ast, &sc);
	net_yy_scan_bytes(text, (int)n, sc);
	for (;;) {
		NET_YYLTYPE l;
		Tok t;
		t.kind = net_yylex(&t.v, &l, sc);
		t.line = l.first_line;
		t.col = l.first_column;
		if (t.kind == IDENT)    /* the arena dies below */
			t.v.s = strcmp(t.v.s, "h") ? "?" : "h";
		if (k < max)
			toks[k++] = t;
		if (t.kind == NET_YYEOF)
			break;
	}
	net_yylex_destroy(sc);
	fclose(f);
	ar_free(&a);
	return k;
}

static void
test_tokens_and_locations(void **state)
{
	const char *text = "dim N = 50_304; # comment\n  h -> x@y(3)\n";
	Tok t[32];
	char *err;
	int n = scan(text, strlen(text), t, 32, &err);
	int kinds[] = {DIM, IDENT, '=', INT, ';', IDENT, ARROW, IDENT, '@', IDENT, '(',
	               INT, ')', NET_YYEOF};
	(void)state;

	assert_int_equal(n, 14);
	for (int i = 0; i < n; i++)
		assert_int_equal(t[i].kind, kinds[i]);
	assert_int_equal(t[3].v.i, 50304);
	assert_int_equal(t[5].line, 2);
	assert_int_equal(t[5].col, 3);
	assert_string_equal(t[5].v.s, "h");
	assert_int_equal(t[6].col, 5);
	assert_int_equal(t[11].v.i, 3);
	assert_int_equal(t[13].line, 3);
	assert_string_equal(err, "");
	free(err);
}

static void
test_reals_keywords_dtypes(void **state)
{
	const char *text = "0.1 1e-5 2.5E3 batch input param def return repeat op "
	                   "train output true false f8e4m3 bool f32x";
	Tok t[32];
	char *err;
	int n = scan(text, strlen(text), t, 32, &err);
	int kinds[] = {REAL, REAL, REAL, BATCH, INPUT, PARAM, DEF, RETURN, REPEAT, OP,
	               TRAIN, OUTPUT, TRUE, FALSE, DTYPE, DTYPE, IDENT, NET_YYEOF};
	(void)state;

	assert_int_equal(n, 18);
	for (int i = 0; i < n; i++)
		assert_int_equal(t[i].kind, kinds[i]);
	assert_true(t[0].v.r == 0.1);
	assert_true(t[1].v.r == 1e-5);
	assert_true(t[2].v.r == 2500.0);
	assert_int_equal(t[14].v.dt, DT_F8E4M3);
	assert_int_equal(t[15].v.dt, DT_BOOL);
	free(err);
}

static void
test_bad_characters(void **state)
{
	const char text[] = "a $ b\n\x01 \0c";
	Tok t[16];
	char *err;
	int n = scan(text, sizeof text - 1, t, 16, &err);
	(void)state;

	assert_int_equal(n, 4);         /* a b c EOF */
	assert_string_equal(err,
		"m.net:1:3: error: stray '$' in program\na $ b\n  ^\n"
		"m.net:2:1: error: stray byte 0x01 in program\n? ?c\n^\n"
		"m.net:2:3: error: stray byte 0x00 in program\n? ?c\n  ^\n");
	free(err);
}

static void
test_bad_numbers(void **state)
{
	const char *text = "9223372036854775807 9223372036854775808 12ab 1_";
	Tok t[16];
	char *err;
	int n = scan(text, strlen(text), t, 16, &err);
	(void)state;

	assert_int_equal(n, 5);
	assert_int_equal(t[0].v.i, INT64_MAX);
	assert_int_equal(t[1].v.i, 0);
	assert_non_null(strstr(err, "m.net:1:21: error: integer literal "
	                       "'9223372036854775808' is too large"));
	assert_non_null(strstr(err, "m.net:1:41: error: malformed number '12ab'"));
	assert_non_null(strstr(err, "m.net:1:46: error: malformed number '1_'"));
	free(err);
}

static void
test_nesting_bound(void **state)
{
	char text[600];
	Tok t[600];
	char *err;
	int n;
	(void)state;

	memset(text, '(', 300);
	text[300] = 0;
	n = scan(text, 300, t, 600, &err);
	assert_int_equal(n, AST_MAXNEST + 1);
	assert_int_equal(t[n - 1].kind, NET_YYEOF);
	assert_non_null(strstr(err, "m.net:1:257: error: brackets nested too deeply "
	                       "(more than 256 levels)"));
	free(err);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tokens_and_locations),
		cmocka_unit_test(test_reals_keywords_dtypes),
		cmocka_unit_test(test_bad_characters),
		cmocka_unit_test(test_bad_numbers),
		cmocka_unit_test(test_nesting_bound),
	};
	return cmocka_run_group_tests_name("lexer", tests, NULL, NULL);
}
