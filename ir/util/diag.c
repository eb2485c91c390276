/* ir/util/diag.c -- user diagnostics: "file:line:col: error: msg", the source
 * line and a caret, collected in order up to DIAG_MAX_ERRORS (warnings up
 * to DIAG_MAX_WARNINGS). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* The interned file names; index 0 is "no file". Process-wide, as the
 * names are: a Loc must print the same wherever it travels (a graph, its
 * DAG, a report), and no run uses more than a few. */
static char *loc_names[LOC_FILES_MAX + 2];
static int loc_nnames = 1;

int
loc_intern(const char *file)
{
	int i;

	if (!file)
		return 0;
	for (i = 1; i < loc_nnames; i++)
		if (!strcmp(loc_names[i], file))
			return i;
	if (loc_nnames > LOC_FILES_MAX) {
		/* the table is full: one shared entry that says so, never
		 * another file's name */
		if (loc_nnames == LOC_FILES_MAX + 1) {
			loc_names[loc_nnames] = xmalloc(sizeof LOC_FILE_OTHER);
			memcpy(loc_names[loc_nnames++], LOC_FILE_OTHER, sizeof LOC_FILE_OTHER);
		}
		return LOC_FILES_MAX + 1;
	}
	loc_names[loc_nnames] = xmalloc(strlen(file) + 1);
	strcpy(loc_names[loc_nnames], file);
	return loc_nnames++;
}

Loc
loc_at(int fid, long line, long col)
{
	Loc l;

	l.line = line < 0 ? 0 : line > INT_MAX ? INT_MAX : (int)line;
	l.col = col < 0 ? 0u : col > LOC_COL_MAX ? (unsigned)LOC_COL_MAX : (unsigned)col;
	l.fid = (unsigned)fid;
	return l;
}

Loc
loc_make(const char *file, long line, long col)
{
	return loc_at(loc_intern(file), line, col);
}

const char *
loc_file(Loc loc)
{
	return loc.fid ? loc_names[loc.fid] : NULL;
}

void
diag_init(Diag *d, const Source *src, FILE *out)
{
	memset(d, 0, sizeof *d);
	d->src = src;
	d->out = out ? out : stderr;
}

/* Echoes are bounded (docs/limits.md): a message prints at most
 * DIAG_MSG_MAX bytes and a source line at most DIAG_LINE_MAX characters
 * around the caret; what is cut is marked with "...". */
enum { DIAG_MSG_MAX = 400, DIAG_LINE_MAX = 160, DIAG_MAX_WARNINGS = 20 };

/* A line ends at "\n", "\r\n" or a lone "\r", as the scanner counts. */
static const char *
line_end(const char *p, const char *end)
{
	while (p < end && *p != '\n' && *p != '\r')
		p++;
	return p;
}

static const char *
next_line(const char *p, const char *end)
{
	p = line_end(p, end);
	if (p < end && *p++ == '\r' && p < end && *p == '\n')
		p++;
	return p;
}

/* A UTF-8 continuation byte does not start a character (column). */
static bool
starts_char(unsigned char c)
{
	return (c & 0xc0) != 0x80;
}

/* Prints [p, q) with control bytes shown as '?', so that NULs and stray
 * bytes neither cut nor garble the echo. */
static void
put_text(FILE *f, const char *p, const char *q)
{
	for (; p < q; p++)
		fputc((unsigned char)*p < ' ' && *p != '\t' ? '?' : *p, f);
}

/* The rest of f, NUL-terminated, up to the end of its line `lines` when
 * lines > 0 (line ends as next_line counts them), else all of it; NULL
 * on a read error, and NULL with errno EFBIG once more than max bytes
 * came (the buffer grows to max + 2 at most). */
static char *
read_lines(FILE *f, int lines, size_t max, size_t *len)
{
	size_t cap = 1 << 16, n, done = 0;
	int ends = 0;
	char *buf = xmalloc(cap);

	*len = 0;
	while ((lines <= 0 || ends < lines) && (n = fread(buf + *len, 1, cap - *len - 1, f)) > 0) {
		*len += n;
		if (*len > max) {
			free(buf);
			errno = EFBIG;
			return NULL;
		}
		/* a "\r" last in the buffer waits for the next read, which
		 * may bring its "\n" */
		for (; lines > 0 && done < *len && ends < lines; done++) {
			if (buf[done] == '\r' && done + 1 == *len)
				break;
			ends += buf[done] == '\n' || (buf[done] == '\r' && buf[done + 1] != '\n');
		}
		if (cap - *len - 1 == 0)
			buf = xrealloc(buf, cap = cap <= max / 2 ? 2 * cap : max + 2);
	}
	if (ferror(f)) {
		free(buf);
		return NULL;
	}
	buf[*len] = 0;
	return buf;
}

char *
read_all(FILE *f, size_t max, size_t *len)
{
	return read_lines(f, 0, max, len);
}

void
read_fail(const char *name, size_t max)
{
	if (errno == EFBIG)
		fprintf(stderr, "%s: error: larger than %zu bytes, the input cap "
		        "(--max-input SIZE raises it)\n", name, max);
	else
		fprintf(stderr, "remat: cannot read '%s': %s\n", name, strerror(errno));
}

/* The file again for an echo, when its text was dropped after the parse,
 * read up to the end of line `line` only (an echo near the top of a large
 * file reads little). A file changed since shows as it is now; one gone
 * shows nothing. */
static char *
text_again(const Source *src, int line, size_t *len)
{
	FILE *f = fopen(src->name, "rb");
	char *text;

	if (!f)
		return NULL;
	text = read_lines(f, line, SIZE_MAX / 2, len);   /* read once already */
	fclose(f);
	return text;
}

static void echo_line(Diag *d, Loc loc, const char *p, const char *eol);

/* Prints the source line `line` and a caret under character column `col`
 * (columns count characters, not bytes), keeping tabs so the caret lines
 * up; a long line is cut to a window around the caret. */
static void
show_line(Diag *d, Loc loc)
{
	const char *p, *end, *text;
	char *again = NULL;
	size_t len;
	int line = 1;

	if (!d->src || loc.line < 1)
		return;
	text = d->src->text;
	len = d->src->len;
	if (!text && d->src->reread)
		text = again = text_again(d->src, loc.line, &len);
	if (!text)
		return;
	end = text + len;
	for (p = text; p < end && line < loc.line; line++)
		p = next_line(p, end);
	/* past the last line (end of file): no text to show */
	if (line == loc.line && p < end)
		echo_line(d, loc, p, line_end(p, end));
	free(again);
}

/* The echo of the line [p, eol) with its caret. */
static void
echo_line(Diag *d, Loc loc, const char *p, const char *eol)
{
	const char *from, *to, *at;
	int c;

	/* at: the caret's byte; from/to: the window shown */
	for (at = p, c = 1; at < eol && c < loc.col; c++)
		do
			at++;
		while (at < eol && !starts_char((unsigned char)*at));
	from = p;
	for (c = 0; from < at && c < (loc.col - 1) - DIAG_LINE_MAX / 2; from++)
		c += starts_char((unsigned char)*from);
	while (from < at && !starts_char((unsigned char)*from))
		from++;
	for (to = from, c = 0; to < eol && c < DIAG_LINE_MAX; to++)
		c += starts_char((unsigned char)*to);
	while (to < eol && !starts_char((unsigned char)*to))
		to++;
	fputs(from > p ? "..." : "", d->out);
	put_text(d->out, from, to);
	fputs(to < eol ? "...\n" : "\n", d->out);
	if (from > p)
		fputs("   ", d->out);
	for (const char *q = from; q < at; q++)
		if (starts_char((unsigned char)*q))
			fputc(*q == '\t' ? '\t' : ' ', d->out);
	fputs("^\n", d->out);
}

static void
report(Diag *d, Loc loc, const char *what, const char *fmt, va_list ap)
{
	char msg[DIAG_MSG_MAX + 1];
	const char *file = loc_file(loc);
	int n;

	if (file && loc.line > 0)
		fprintf(d->out, "%s:%d:%d: %s: ", file, loc.line, (int)loc.col, what);
	else if (file)
		fprintf(d->out, "%s: %s: ", file, what);
	else
		fprintf(d->out, "remat: %s: ", what);
	n = vsnprintf(msg, sizeof msg, fmt, ap);
	put_text(d->out, msg, msg + strlen(msg));
	fputs(n > DIAG_MSG_MAX ? "...\n" : "\n", d->out);
	show_line(d, loc);
}

void
diag_error(Diag *d, Loc loc, const char *fmt, ...)
{
	va_list ap;

	if (d->nerrors++ >= DIAG_MAX_ERRORS || d->silent)
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
	if (d->quiet_warnings || d->silent || d->nerrors >= DIAG_MAX_ERRORS ||
	    d->nwarnings > DIAG_MAX_WARNINGS)
		return;
	va_start(ap, fmt);
	report(d, loc, "warning", fmt, ap);
	va_end(ap);
	if (d->nwarnings == DIAG_MAX_WARNINGS)
		fprintf(d->out, "remat: too many warnings; further warnings are not shown\n");
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

bool
why_fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	err_vformat(why, n, NULL, 0, 0, fmt, ap);
	va_end(ap);
	return false;
}

void
err_vformat(char *buf, size_t n, const char *file, int line, int col,
            const char *fmt, va_list ap)
{
	int k;

	if (!n)
		return;
	if (file && line > 0)
		k = snprintf(buf, n, "%s:%d:%d: ", file, line, col);
	else if (file)
		k = snprintf(buf, n, "%s: ", file);
	else if (line > 0)
		k = snprintf(buf, n, "%d:%d: ", line, col);
	else
		k = 0;
	if (k >= 0 && (size_t)k < n)
		vsnprintf(buf + k, n - (size_t)k, fmt, ap);
}
