/* ir/util/escape.c -- one escaper per output language, so that a name or a
 * path, whatever bytes it holds (quotes, newlines, comment closers,
 * control bytes, invalid UTF-8), lands in every output as inert text that
 * still parses: JSON (and JSON inside an HTML <script>), XML (HTML, SVG),
 * DOT, CSV, Python, C, and the '#' comments of .net. The table of rules:
 * docs/limits.md, "Names and paths in the outputs". Reads a C string; writes text. */
#include <stdio.h>
#include <string.h>

#include "util.h"

/* U+FFFD, what an invalid UTF-8 byte becomes where the output must be
 * UTF-8 (JSON, XML, DOT, CSV). */
static const char replacement[] = "\xef\xbf\xbd";

size_t
utf8_len(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;
	unsigned lo = 0x80, hi = 0xbf;  /* the bounds of the second byte */

	if (*p < 0x80)
		return *p ? 1 : 0;
	if (*p >= 0xc2 && *p <= 0xdf)
		n = 2;
	else if (*p >= 0xe0 && *p <= 0xef) {
		n = 3;
		if (*p == 0xe0)
			lo = 0xa0;      /* no overlong form */
		else if (*p == 0xed)
			hi = 0x9f;      /* no UTF-16 surrogate */
	} else if (*p >= 0xf0 && *p <= 0xf4) {
		n = 4;
		if (*p == 0xf0)
			lo = 0x90;
		else if (*p == 0xf4)
			hi = 0x8f;      /* nothing past U+10FFFF */
	} else
		return 0;
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

/* The next character of *s, consumed: its UTF-8 bytes (*n of them) are at
 * the returned pointer, or n is 0 for an invalid byte, which is consumed
 * alone. */
static const char *
next_char(const char **s, size_t *n)
{
	const char *c = *s;

	*n = utf8_len(c);
	*s += *n ? *n : 1;
	return c;
}

size_t
json_plain_len(const char *s)
{
	const char *p = s;

	while ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x80 && *p != '"' && *p != '\\')
		p++;
	return (size_t)(p - s);
}

static void
json_body(FILE *f, const char *s, bool script)
{
	static const char hex[] = "0123456789abcdef";

	while (*s) {
		const char *r = s;
		size_t n;
		unsigned char c;

		/* a run that needs no escapes goes out whole */
		if (script)
			while ((unsigned char)*r >= 0x20 && (unsigned char)*r < 0x80 && *r != '"' &&
			       *r != '\\' && *r != '<' && *r != '>' && *r != '&')
				r++;
		else
			r += json_plain_len(r);
		if (r > s) {
			fwrite(s, 1, (size_t)(r - s), f);
			s = r;
			continue;
		}
		c = (unsigned char)*next_char(&s, &n);
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c == '<' || c == '>' || c == '&')
			fprintf(f, "\\u00%c%c", hex[c >> 4], hex[c & 15]);
		else if (n)
			fwrite(s - n, 1, n, f);
		else
			fputs("\\ufffd", f);
	}
}

void
esc_json(FILE *f, const char *s)
{
	json_body(f, s, false);
}

void
json_put_str(FILE *out, const char *s)
{
	fputc('"', out);
	json_body(out, s, false);
	fputc('"', out);
}

void
json_put_script_str(FILE *out, const char *s)
{
	fputc('"', out);
	json_body(out, s, true);
	fputc('"', out);
}

/* The code point of the n-byte UTF-8 character at c. */
static unsigned long
code_point(const char *c, size_t n)
{
	const unsigned char *p = (const unsigned char *)c;
	static const unsigned char lead_mask[] = {0, 0x7f, 0x1f, 0x0f, 0x07};
	unsigned long u = p[0] & lead_mask[n];

	for (size_t i = 1; i < n; i++)
		u = u << 6 | (p[i] & 0x3f);
	return u;
}

void
esc_xml(FILE *f, const char *s)
{
	while (*s) {
		size_t n;
		const char *c = next_char(&s, &n);

		switch (n == 1 ? *c : 0) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		case '\n': case '\t': fputc(*c, f); break;
		case '\r': fputs("&#13;", f); break;
		default:
			/* XML 1.0 has no other control character, nor U+FFFE
			 * and U+FFFF, even as a reference */
			if (n == 0 || (n == 1 && (unsigned char)*c < 0x20) ||
			    (n == 3 && code_point(c, n) >= 0xfffe))
				fputs(replacement, f);
			else
				fwrite(c, 1, n, f);
		}
	}
}

void
dot_put_str(FILE *f, const char *s)
{
	fputc('"', f);
	while (*s) {
		size_t n;
		const char *c = next_char(&s, &n);

		if (n == 1 && *c == '\n')
			fputs("\\n", f);        /* a line break of the label */
		else if (n == 1 && (*c == '"' || *c == '\\'))
			fprintf(f, "\\%c", *c); /* "\\" also stops \N, \G, \l ... */
		else if (n == 0 || (n == 1 && (unsigned char)*c < 0x20))
			fputs(replacement, f);
		else
			fwrite(c, 1, n, f);
	}
	fputc('"', f);
}

void
csv_put_field(FILE *f, const char *s)
{
	/* A spreadsheet runs a cell that starts with = + - @ (or a tab or CR
	 * before one) as a formula: such a field is quoted and starts with
	 * an apostrophe, which shows the text as text. */
	bool formula = strchr("=+-@\t\r", *s) && *s;
	bool quote = formula;

	for (const char *p = s; *p && !quote; p++)
		quote = *p == ',' || *p == '"' || *p == '\n' || *p == '\r' ||
		        (unsigned char)*p >= 0x80;
	if (!quote) {
		fputs(s, f);
		return;
	}
	fputs(formula ? "\"'" : "\"", f);
	while (*s) {
		size_t n;
		const char *c = next_char(&s, &n);

		if (n == 1 && *c == '"')
			fputs("\"\"", f);
		else if (n)
			fwrite(c, 1, n, f);
		else
			fputs(replacement, f);
	}
	fputc('"', f);
}

void
py_put_body(FILE *f, const char *s)
{
	while (*s) {
		size_t n;
		const char *c = next_char(&s, &n);
		unsigned char b = (unsigned char)*c;

		if (n == 1 && (b == '"' || b == '\'' || b == '\\'))
			fprintf(f, "\\%c", b);
		else if (n == 1 && b == '\n')
			fputs("\\n", f);
		else if (n == 1 && (b < 0x20 || b == 0x7f))
			fprintf(f, "\\x%02x", b);
		else if (n)
			fwrite(c, 1, n, f);
		else    /* Python's surrogateescape: os.fsencode gives b back */
			fprintf(f, "\\udc%02x", b);
	}
}

void
py_put_str(FILE *f, const char *s)
{
	fputc('"', f);
	py_put_body(f, s);
	fputc('"', f);
}

/* C text: in a string literal, quotes, backslashes, '?' (no trigraph)
 * and bytes outside printable ASCII escaped, in octal where needed; in a
 * comment, those bytes as '?' and neither "*" "/" (the end) nor "/" "*"
 * (-Wcomment). A comment holds no line end, so a trigraph "??/" splices
 * nothing. */
static const char *
c_text(Arena *a, const char *s, bool comment)
{
	size_t n = strlen(s);
	char *b = ar_alloc(a, 4 * n + 1), *q = b;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		bool odd = c < ' ' || c >= 127;

		if (comment) {
			*q++ = odd ? '?' : (char)c;
			if ((c == '*' && s[i + 1] == '/') || (c == '/' && s[i + 1] == '*'))
				*q++ = ' ';
		} else if (c == '"' || c == '\\')
			q += sprintf(q, "\\%c", c);
		else if (odd || c == '?')
			q += sprintf(q, "\\%03o", c);
		else
			*q++ = (char)c;
	}
	*q = 0;
	return b;
}

const char *
esc_c_str(Arena *a, const char *s)
{
	return c_text(a, s, false);
}

const char *
esc_c_comment(Arena *a, const char *s)
{
	return c_text(a, s, true);
}

/* The bytes of the character at s that esc_line keeps, or 0: printable
 * ASCII and valid UTF-8 stay, control bytes and invalid UTF-8 do not. */
static size_t
line_char(const char *s)
{
	size_t n = utf8_len(s);

	return n == 1 && ((unsigned char)*s < ' ' || *s == 0x7f) ? 0 : n;
}

const char *
esc_line(Arena *a, const char *s)
{
	const char *p = s;
	char *t, *q;
	size_t n;

	while (*p && (n = line_char(p)) > 0)
		p += n;
	if (!*p)
		return s;       /* the common case: no copy */
	t = ar_strdup(a, s);
	for (q = t + (p - s); *q; q += n ? n : 1)
		if ((n = line_char(q)) == 0)
			*q = '?';
	return t;
}
