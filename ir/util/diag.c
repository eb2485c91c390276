/* ir/util/diag.c -- user diagnostics: "file:line:col: error: msg", the source
 * line and a caret, collected in order up to DIAG_MAX_ERRORS. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void
diag_init(Diag *d, const Source *src, FILE *out)
{
	memset(d, 0, sizeof *d);
	d->src = src;
	d->out = out ? out : stderr;
}

/* Prints the source line `line` and a caret under byte column `col`,
 * keeping tabs so the caret lines up. */
static void
show_line(Diag *d, Loc loc)
{
	const char *p, *end, *text;
	int line = 1, i;

	if (!d->src || !d->src->text || loc.line < 1)
		return;
	text = d->src->text;
	end = text + d->src->len;
	for (p = text; p < end && line < loc.line; p++)
		if (*p == '\n')
			line++;
	if (line != loc.line || p >= end)
		return;         /* past the last line (end of file): no text to show */
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	if (!eol)
		eol = end;
	fprintf(d->out, "%.*s\n", (int)(eol - p), p);
	for (i = 1; i < loc.col && p + i - 1 < eol; i++)
		fputc(p[i - 1] == '\t' ? '\t' : ' ', d->out);
	fputs("^\n", d->out);
}

static void
report(Diag *d, Loc loc, const char *what, const char *fmt, va_list ap)
{
	if (loc.file && loc.line > 0)
		fprintf(d->out, "%s:%d:%d: %s: ", loc.file, loc.line, loc.col, what);
	else if (loc.file)
		fprintf(d->out, "%s: %s: ", loc.file, what);
	else
		fprintf(d->out, "remat: %s: ", what);
	vfprintf(d->out, fmt, ap);
	fputc('\n', d->out);
	show_line(d, loc);
}

void
diag_error(Diag *d, Loc loc, const char *fmt, ...)
{
	va_list ap;

	if (d->nerrors++ >= DIAG_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	report(d, loc, "error", fmt, ap);
	va_end(ap);
	if (d->nerrors == DIAG_MAX_ERRORS)
		fprintf(d->out, "remat: too many errors, stopping\n");
}

void
diag_warning(Diag *d, Loc loc, const char *fmt, ...)
{
	va_list ap;

	d->nwarnings++;
	if (d->quiet_warnings || d->nerrors >= DIAG_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	report(d, loc, "warning", fmt, ap);
	va_end(ap);
}

bool
diag_full(const Diag *d)
{
	return d->nerrors >= DIAG_MAX_ERRORS;
}

void
diag_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("remat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\nTry 'remat --help' for more information.\n", stderr);
	exit(2);
}
