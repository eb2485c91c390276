/* frontend/habits.c -- PyTorch spellings that are not .net, answered with
 * the .net form: methods and attributes (`x.view(...)`, `x.T`), modules
 * (`nn.Linear(...)`, `F.relu(x)`), `x / 2`, and a param declared directly
 * in a repeat body. The scanner and the grammar only hand the pieces over;
 * the recognition and the wording live here, beside the other hints.
 * Writes diagnostics only. */
#include <ctype.h>
#include <string.h>

#include "inst.h"

/* Methods whose .net form is an op, maybe under another name or with
 * another argument order: "write PRE<receiver>POST". */
static const struct {
	const char *method, *pre, *post;
} methods[] = {
	{"view", "reshape(", ", [d0, d1, ...]) (one entry may be -1)"},
	{"reshape", "reshape(", ", [d0, d1, ...]) (one entry may be -1)"},
	{"view_as", "reshape(", ", [d0, d1, ...]) with the other tensor's shape"},
	{"unsqueeze", "reshape(", ", [d0, d1, ...]) with the new axis of size 1"},
	{"squeeze", "reshape(", ", [d0, d1, ...]) without the axis of size 1"},
	{"T", "transpose(", ", 0, 1)"},
	{"t", "transpose(", ", 0, 1)"},
	{"mT", "transpose(", ", -2, -1)"},
	{"transpose", "transpose(", ", i, j)"},
	{"swapaxes", "transpose(", ", i, j)"},
	{"permute", "permute(", ", [a0, a1, ...])"},
	{"flatten", "flatten(", ", start=1)"},
	{"matmul", "", " @ w"},
	{"mm", "", " @ w"},
	{"bmm", "", " @ w"},
	{"div", "scale(", ", c=...) to divide by a number, div(a, b) by a tensor"},
};

/* The last component of a dotted path ("nn.functional.relu" -> "relu"). */
static const char *
last_part(const char *path)
{
	const char *dot = strrchr(path, '.');
	return dot ? dot + 1 : path;
}

/* name lower-cased into buf, for the op table ("Conv2d" -> "conv2d"). */
static const char *
lower(const char *name, char *buf, size_t n)
{
	size_t i = 0;

	for (; name[i] && i + 1 < n; i++)
		buf[i] = (char)tolower((unsigned char)name[i]);
	buf[i] = 0;
	return buf;
}

/* A receiver that names a Python module rather than a tensor. */
static bool
is_module(const Expr *recv)
{
	static const char *const mods[] = {"torch", "nn", "F", "functional", "math",
	                                   "np", "numpy", "init"};

	if (recv->kind != EX_NAME)
		return false;
	for (size_t i = 0; i < sizeof mods / sizeof mods[0]; i++)
		if (!strcmp(recv->name, mods[i]))
			return true;
	return false;
}

/* Names in the messages are cut to 64 characters: a path may be as long as
 * the file. */
Expr *
ast_member(Ast *ast, Loc dot, Expr *recv, const char *path, bool call)
{
	const char *name = last_part(path), *self;
	const char *what = call ? "(...)" : "";
	char low[32];

	/* x.view(a).transpose(0, 1): one error for the chain */
	if (recv == ast->habit)
		return recv;
	ast->habit = recv;
	if (recv->kind == EX_INT || recv->kind == EX_REAL) {
		diag_error(ast->d, dot, "malformed number (write reals as 1.5 or 1e3)");
		return recv;
	}
	if (is_module(recv) || strchr(path, '.')) {
		const char *mod = recv->kind == EX_NAME ? recv->name : "";
		if (!strcmp(name, "Linear"))
			diag_error(ast->d, recv->loc, "'%.64s.%.64s' is PyTorch, not .net (there are no "
			           "modules): declare 'param w : f32[IN, OUT];' and 'param b : "
			           "f32[OUT];' and write 'x @ w + b'", mod, path);
		else if (ir_op_from_name(lower(name, low, sizeof low)) >= 0 && isupper((unsigned char)name[0]))
			diag_error(ast->d, recv->loc, "'%.64s.%.64s' is PyTorch, not .net (there are no "
			           "modules): call %s(...), its weights declared with 'param'",
			           mod, path, low);
		else if (ir_op_from_name(name) >= 0)
			diag_error(ast->d, recv->loc, "'%.64s.%.64s%s' is PyTorch, not .net: ops are "
			           "functions, write %.64s(...)", mod, path, what, name);
		else
			diag_error(ast->d, recv->loc, "'%.64s.%.64s' is PyTorch, not .net: there are no "
			           "modules; write the layer with the ops of docs/ops.md and "
			           "declare its weights with 'param' (in a def)", mod, path);
		return recv;
	}
	self = recv->kind == EX_NAME ? recv->name : "x";
	for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
		if (!strcmp(name, methods[i].method)) {
			diag_error(ast->d, dot, "'%.64s.%.64s%s' is PyTorch, not .net: write %s%.64s%s",
			           self, name, what, methods[i].pre, self, methods[i].post);
			return recv;
		}
	if (!strcmp(name, "contiguous"))
		diag_error(ast->d, dot, "'%.64s.%.64s%s' is PyTorch, not .net: tensors have no "
		           "memory layout here, so drop it", self, name, what);
	else if (ir_op_from_name(name) >= 0)
		diag_error(ast->d, dot, "'%.64s.%.64s%s' is PyTorch, not .net: ops are functions, "
		           "write %s(%.64s, ...)", self, name, what, name, self);
	else
		diag_error(ast->d, dot, "'%.64s.%.64s%s' is not .net: tensors have no methods or "
		           "attributes; ops are functions (docs/ops.md)", self, name, what);
	return recv;
}

/* The number e stands for, through a unary minus; false if it is none. */
static bool
number_of(const Expr *e, double *v)
{
	double sign = 1;

	if (e->kind == EX_NEG) {
		sign = -1;
		e = e->l;
	}
	if (e->kind == EX_INT)
		*v = sign * (double)e->i;
	else if (e->kind == EX_REAL)
		*v = sign * e->real;
	else
		return false;
	return true;
}

void
inst_habit_divide(Inst *in, const Expr *e)
{
	const char *self = e->l->kind == EX_NAME ? e->l->name : "x";
	double v;

	if (e->op == '/' && number_of(e->r, &v) && v == 0)
		diag_error(in->d, e->oploc, "'/' is not a tensor operator, and a division "
		           "by zero has no value");
	else if (e->op == '/' && number_of(e->r, &v))
		diag_error(in->d, e->oploc, "'/' is not a tensor operator (to divide by %g, "
		           "write scale(%.64s, c=%.6g))", v, self, 1 / v);
	else
		diag_error(in->d, e->oploc, "'%c' is not a tensor operator (use div(a, b))",
		           e->op);
}

void
inst_habit_redeclared(Inst *in, const Stmt *s)
{
	diag_error(in->d, s->name.loc, "%s '%.64s' is declared again by each round of the "
	           "repeat (declare it in a def and call the def in the repeat: each "
	           "call has its own)", s->kind == ST_PARAM ? "param" : "input", s->name.s);
}
