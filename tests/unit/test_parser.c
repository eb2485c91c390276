/* tests/unit/test_parser.c -- the .net grammar: every statement form,
 * operator precedence, error recovery with several errors in one run, the
 * expected-token messages, PyTorch's member syntax answered with the .net
 * form, and deep inputs that must fail cleanly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "ast.h"

static Arena arena;
static char *errs;

static Program *
parse(const char *text)
{
	static Source src;
	size_t n = 0;
	FILE *f = open_memstream(&errs, &n);
	Diag d;
	Program *p;

	src = (Source){"p.net", text, strlen(text)};
	diag_init(&d, &src, f);
	p = net_parse(&src, &arena, &d);
	fclose(f);
	return p;
}

static int
setup(void **state)
{
	(void)state;
	ar_init(&arena);
	errs = NULL;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	ar_free(&arena);
	free(errs);
	return 0;
}

static void
test_every_statement(void **state)
{
	Program *p = parse(
		"dim N = 4, M = N * 2;\n"
		"batch B = 8;\n"
		"input x : f32[B, N];\n"
		"param w : bf16[];\n"
		"a = x;\n"
		"a, b = split(x, 2, axis=-1);\n"
		"output a;\n"
		"def f(u, v) { param k : f32[N]; return u, v * k; }\n"
		"repeat 3 { repeat N { a = f(a, b); } }\n"
		"op g(s, t) -> f16[B, M] { flops = 2*B; saves = (s, out); workspace = 0;"
		" backward_flops = 4; }\n"
		"train { optimizer = adamw; precision = mixed; accumulate = 4; }\n");
	StmtKind kinds[] = {ST_DIM, ST_BATCH, ST_INPUT, ST_PARAM, ST_ASSIGN, ST_ASSIGN,
	                    ST_OUTPUT, ST_DEF, ST_REPEAT, ST_OP, ST_TRAIN};
	const Stmt *s;
	(void)state;

	assert_non_null(p);
	assert_int_equal(p->stmts->n, 11);
	for (int i = 0; i < 11; i++)
		assert_int_equal(p->stmts->v[i]->kind, kinds[i]);
	s = p->stmts->v[0];
	assert_int_equal(s->kvs->n, 2);
	assert_string_equal(s->kvs->v[1].key.s, "M");
	assert_int_equal(s->kvs->v[1].key.loc.col, 12);
	s = p->stmts->v[3];
	assert_int_equal(s->type->dt, DT_BF16);
	assert_int_equal(s->type->dims->n, 0);
	s = p->stmts->v[5];
	assert_int_equal(s->names->n, 2);
	assert_int_equal(s->e->kind, EX_CALL);
	assert_int_equal(s->e->args->n, 3);
	assert_string_equal(s->e->args->v[2].key, "axis");
	assert_int_equal(s->e->args->v[2].e->kind, EX_NEG);
	s = p->stmts->v[7];
	assert_int_equal(s->names->n, 2);
	assert_int_equal(s->body->n, 2);
	assert_int_equal(s->body->v[1]->kind, ST_RETURN);
	assert_int_equal(s->body->v[1]->exprs->n, 2);
	s = p->stmts->v[8];
	assert_int_equal(s->body->v[0]->kind, ST_REPEAT);
	s = p->stmts->v[9];
	assert_int_equal(s->kvs->n, 4);
	assert_int_equal(s->kvs->v[1].e->kind, EX_TUPLE);
	assert_int_equal(s->kvs->v[1].e->items->n, 2);
	assert_int_equal(s->type->dt, DT_F16);
	assert_int_equal(p->stmts->v[10]->kvs->n, 3);
}

static void
test_precedence(void **state)
{
	/* a - b * c @ d + -e  ==  (a - ((b * c) @ d)) + (-e) */
	Program *p = parse("y = a - b * c @ d + -e;\nz = (a + b) * c;\n");
	const Expr *e, *m;
	(void)state;

	assert_non_null(p);
	e = p->stmts->v[0]->e;
	assert_int_equal(e->op, '+');
	assert_int_equal(e->r->kind, EX_NEG);
	assert_int_equal(e->l->op, '-');
	m = e->l->r;
	assert_int_equal(m->op, '@');
	assert_int_equal(m->l->op, '*');
	assert_string_equal(m->r->name, "d");
	assert_int_equal(e->loc.col, 5);
	assert_int_equal(e->oploc.col, 19);
	e = p->stmts->v[1]->e;
	assert_int_equal(e->op, '*');
	assert_int_equal(e->loc.col, 5);        /* starts at the '(' */
	assert_int_equal(e->l->op, '+');
	assert_int_equal(e->l->loc.col, 6);
}

static void
test_recovery_several_errors(void **state)
{
	Program *p = parse("dim N = 4\nparam w : f32[N];\nx = relu(w;\ny = = 3;\n"
	                   "input z : f32[2] ;\nq = relu(z) )\n");
	(void)state;

	assert_null(p);
	assert_string_equal(errs,
		"p.net:2:1: error: expected ';' or ',' before 'param'\n"
		"param w : f32[N];\n^\n"
		"p.net:3:11: error: expected '=', '(', ')' or ',' before ';'\n"
		"x = relu(w;\n          ^\n"
		"p.net:4:5: error: expected an expression before '='\n"
		"y = = 3;\n    ^\n"
		"p.net:6:13: error: expected ';' before ')'\n"
		"q = relu(z) )\n            ^\n");
}

static void
test_expected_messages(void **state)
{
	(void)state;
	assert_null(parse("def f(a { return a; }\n"));
	assert_string_equal(errs, "p.net:1:9: error: expected ')' or ',' before '{'\n"
	                    "def f(a { return a; }\n        ^\n");
	free(errs);
	assert_null(parse("x = relu(y);\n}\n"));
	assert_string_equal(errs, "p.net:2:1: error: expected a statement or end of file "
	                    "before '}'\n}\n^\n");
	free(errs);
	assert_null(parse("def f(a) { return a;\n"));
	/* how diag shows the empty last line is diag's business */
	assert_ptr_equal(strstr(errs, "p.net:2:1: error: expected a statement or '}' "
	                        "before end of file\n"), errs);
	free(errs);
	assert_null(parse("param w : f32[2]\n"));
	/* an identifier may follow a param's type: the `frozen` qualifier */
	assert_ptr_equal(strstr(errs, "p.net:2:1: error: expected identifier or ';' before "
	                        "end of file\n"), errs);
	free(errs);
	assert_null(parse("param 3 : f32[2];\n"));
	assert_string_equal(errs, "p.net:1:7: error: expected identifier before '3'\n"
	                    "param 3 : f32[2];\n      ^\n");
}

/* PyTorch's member syntax is one error per chain, with the .net form, and
 * the parse goes on after it (no syntax error follows); '.name' is never
 * offered as an expected token; a real is still one token, and a dot after
 * an integer is no member. Each case: the source, then its exact errors. */
static void
test_pytorch_members(void **state)
{
	static const char *const cases[][2] = {
		{"y = x.view(B, -1).t() @ w;\nz = nn.Linear(D, D);\n",
		 "p.net:1:6: error: 'x.view(...)' is PyTorch, not .net: write reshape(x, "
		 "[d0, d1, ...]) (one entry may be -1)\ny = x.view(B, -1).t() @ w;\n     ^\n"
		 "p.net:2:5: error: 'nn.Linear' is PyTorch, not .net (there are no modules): "
		 "declare 'param w : f32[IN, OUT];' and 'param b : f32[OUT];' and write "
		 "'x @ w + b'\nz = nn.Linear(D, D);\n    ^\n"},
		{"y = relu(x) w;\n",
		 "p.net:1:13: error: expected ';' before 'w'\ny = relu(x) w;\n            ^\n"},
		{"y = scale(x, c=1.e3);\n",
		 "p.net:1:17: error: malformed number (write reals as 1.5 or 1e3)\n"
		 "y = scale(x, c=1.e3);\n                ^\n"},
	};
	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		assert_null(parse(cases[i][0]));
		assert_string_equal(errs, cases[i][1]);
		free(errs);
		errs = NULL;
	}
	assert_non_null(parse("y = scale(x, c=1.5);\n"));
}

static void
test_deep_inputs_fail_cleanly(void **state)
{
	size_t n = 200000;
	char *text = malloc(3 * n + 16);
	(void)state;

	/* a chain of unary minus: the parser stack is bounded */
	strcpy(text, "y = ");
	memset(text + 4, '-', n);
	strcpy(text + 4 + n, "x;");
	assert_null(parse(text));
	assert_non_null(strstr(errs, "expression nested too deeply"));
	free(errs);
	/* a long left-associative chain: the tree depth is bounded */
	strcpy(text, "y = x");
	for (size_t i = 0; i < 5000; i++)
		memcpy(text + 5 + 2 * i, "+x", 3);
	strcat(text, ";");
	assert_null(parse(text));
	assert_non_null(strstr(errs, "expression nested too deeply (more than 1000 levels)"));
	free(text);
}

static void
test_builders_without_parser(void **state)
{
	Ast ast;
	Diag d;
	Loc l = {"b.net", 1, 1};
	Expr *e;
	(void)state;

	diag_init(&d, NULL, stderr);
	ast_init(&ast, &arena, &d, "b.net");
	e = ast_bin(&ast, l, l, '*', ast_int(&ast, l, 3), ast_name(&ast, l, "D"));
	assert_int_equal(e->depth, 2);
	assert_int_equal(e->l->i, 3);
	ArgList *args = ast_args(&ast, NULL, NULL, l, e);
	args = ast_args(&ast, args, "axis", l, ast_neg(&ast, l, ast_int(&ast, l, 1)));
	e = ast_call(&ast, l, "split", args);
	assert_int_equal(e->args->n, 2);
	assert_int_equal(e->depth, 3);
	StmtList *sl = ast_stmts(&ast, NULL, ast_assign(&ast, l,
	                         ast_names(&ast, NULL, "q", l), e));
	Program *p = ast_program(&ast, sl, l);
	assert_int_equal(p->stmts->n, 1);
	assert_ptr_equal(ast.prog, p);
}

/* repeat with a loop index: `in` is a word of the form, not a reserved
 * one; another word there is reported at it. */
static void
test_repeat_index(void **state)
{
	Program *p = parse("dim L = 3;\ninput in : f32[2];\n"
	                   "repeat i in L { repeat j in i + 1 { h = relu(in); } }\n"
	                   "repeat 2 { g = in; }\n");
	const Stmt *s;
	(void)state;

	assert_non_null(p);
	assert_null(errs && *errs ? errs : NULL);
	s = p->stmts->v[2];
	assert_int_equal(s->kind, ST_REPEAT);
	assert_string_equal(s->name.s, "i");
	assert_int_equal(s->name.loc.col, 8);
	assert_int_equal(s->e->kind, EX_NAME);
	assert_string_equal(s->body->v[0]->name.s, "j");
	assert_int_equal(s->body->v[0]->e->kind, EX_BIN);
	assert_null(p->stmts->v[3]->name.s);
	free(errs);
	errs = NULL;
	parse("repeat i of 3 { }\n");
	assert_string_equal(errs, "p.net:1:10: error: expected 'in' after the loop index "
	                    "'i', not 'of' (repeat i in COUNT { ... })\n"
	                    "repeat i of 3 { }\n         ^\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_every_statement, setup, teardown),
		cmocka_unit_test_setup_teardown(test_precedence, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovery_several_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_expected_messages, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pytorch_members, setup, teardown),
		cmocka_unit_test_setup_teardown(test_deep_inputs_fail_cleanly, setup, teardown),
		cmocka_unit_test_setup_teardown(test_builders_without_parser, setup, teardown),
		cmocka_unit_test_setup_teardown(test_repeat_index, setup, teardown),
	};
	return cmocka_run_group_tests_name("parser", tests, NULL, NULL);
}
