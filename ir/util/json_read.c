/* ir/util/json_read.c -- a strict recursive-descent JSON reader (RFC 8259)
 * for cm_import. Every read checks the remaining length first, nesting is
 * capped at JR_MAX_DEPTH, and the first error stops the parse with a
 * "line:col: message". Values, keys and decoded strings live in the
 * caller's arena; growing child lists use a temporary heap buffer. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

typedef struct Jr {
	const char *s;
	size_t len, pos;
	int line;
	size_t line_start;
	Arena *a;
	char *err;
	size_t errn;
	bool failed;
} Jr;

static void
jr_fail(Jr *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
jr_fail(Jr *p, const char *fmt, ...)
{
	va_list ap;

	if (p->failed)
		return;
	p->failed = true;
	va_start(ap, fmt);
	err_vformat(p->err, p->errn, NULL, p->line, (int)(p->pos - p->line_start) + 1,
	            fmt, ap);
	va_end(ap);
}

/* The current byte, or -1 at the end. */
static int
peek(const Jr *p)
{
	return p->pos < p->len ? (unsigned char)p->s[p->pos] : -1;
}

static void
advance(Jr *p)
{
	if (p->pos >= p->len)
		return;
	if (p->s[p->pos] == '\n') {
		p->line++;
		p->line_start = p->pos + 1;
	}
	p->pos++;
}

static void
skip_ws(Jr *p)
{
	int c;

	while ((c = peek(p)) == ' ' || c == '\t' || c == '\n' || c == '\r')
		advance(p);
}

static JrValue *
new_value(Jr *p, JrType t)
{
	JrValue *v = ar_alloc(p->a, sizeof *v);

	v->type = t;
	v->line = p->line;
	v->col = (int)(p->pos - p->line_start) + 1;
	return v;
}

/* Matches the literal word (true, false, null) at the current position. */
static bool
literal(Jr *p, const char *word)
{
	size_t n = strlen(word);

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n)) {
		jr_fail(p, "invalid literal");
		return false;
	}
	p->pos += n;
	return true;
}

static size_t
digits(Jr *p)
{
	size_t n = 0;
	int c;

	while ((c = peek(p)) >= '0' && c <= '9') {
		advance(p);
		n++;
	}
	return n;
}

/* number -> '-'? int frac? exp?, checked against the grammar before
 * strtod sees a bounded copy. */
static JrValue *
number(Jr *p)
{
	JrValue *v = new_value(p, JR_NUM);
	size_t start = p->pos, n;
	bool integral = true;
	char buf[512];

	if (peek(p) == '-')
		advance(p);
	if (peek(p) == '0')
		advance(p);
	else if (digits(p) == 0) {
		jr_fail(p, "invalid number");
		return NULL;
	}
	if (peek(p) == '.') {
		advance(p);
		integral = false;
		if (digits(p) == 0) {
			jr_fail(p, "digits expected after '.'");
			return NULL;
		}
	}
	if (peek(p) == 'e' || peek(p) == 'E') {
		advance(p);
		integral = false;
		if (peek(p) == '+' || peek(p) == '-')
			advance(p);
		if (digits(p) == 0) {
			jr_fail(p, "digits expected in exponent");
			return NULL;
		}
	}
	n = p->pos - start;
	if (n >= sizeof buf) {
		jr_fail(p, "number too long");
		return NULL;
	}
	memcpy(buf, p->s + start, n);
	buf[n] = 0;
	v->num = strtod(buf, NULL);
	if (!isfinite(v->num)) {
		jr_fail(p, "number out of range");
		return NULL;
	}
	if (integral) {
		char *end;
		errno = 0;
		v->i = strtoll(buf, &end, 10);
		v->is_int = errno == 0 && *end == 0;
	}
	return v;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Reads the 4 hex digits after "\u"; -1 on error. */
static long
hex4(Jr *p)
{
	long u = 0;

	for (int k = 0; k < 4; k++) {
		int h = hexval(peek(p));
		if (h < 0) {
			jr_fail(p, "4 hex digits expected after \\u");
			return -1;
		}
		u = u * 16 + h;
		advance(p);
	}
	return u;
}

/* Appends code point u as UTF-8; out has room for 4 bytes. */
static size_t
put_utf8(char *out, long u)
{
	if (u < 0x80) {
		out[0] = (char)u;
		return 1;
	}
	if (u < 0x800) {
		out[0] = (char)(0xc0 | (u >> 6));
		out[1] = (char)(0x80 | (u & 0x3f));
		return 2;
	}
	if (u < 0x10000) {
		out[0] = (char)(0xe0 | (u >> 12));
		out[1] = (char)(0x80 | ((u >> 6) & 0x3f));
		out[2] = (char)(0x80 | (u & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (u >> 18));
	out[1] = (char)(0x80 | ((u >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((u >> 6) & 0x3f));
	out[3] = (char)(0x80 | (u & 0x3f));
	return 4;
}

/* escape -> '\' ( ["\/bfnrt] | 'u' hex4 ); a high surrogate must be followed
 * by a low one. Writes the decoded bytes to out (room for 4). */
static size_t
escape(Jr *p, char *out)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e;
	int c = peek(p);
	long u, lo;

	if (c > 0 && (e = strchr(from, c))) {
		advance(p);
		out[0] = to[e - from];
		return 1;
	}
	if (c != 'u') {
		jr_fail(p, "invalid escape");
		return 0;
	}
	advance(p);
	if ((u = hex4(p)) < 0)
		return 0;
	if (u >= 0xdc00 && u <= 0xdfff) {
		jr_fail(p, "unpaired low surrogate");
		return 0;
	}
	if (u >= 0xd800 && u <= 0xdbff) {
		if (peek(p) != '\\' || p->pos + 1 >= p->len || p->s[p->pos + 1] != 'u') {
			jr_fail(p, "unpaired high surrogate");
			return 0;
		}
		advance(p);
		advance(p);
		if ((lo = hex4(p)) < 0)
			return 0;
		if (lo < 0xdc00 || lo > 0xdfff) {
			jr_fail(p, "invalid low surrogate");
			return 0;
		}
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	}
	return put_utf8(out, u);
}

/* string -> '"' char* '"'. The decoded text is never longer than the
 * source, so one buffer of the remaining length bounds it. */
static JrValue *
string(Jr *p)
{
	JrValue *v = new_value(p, JR_STR);
	size_t start, n = 0;
	char *buf;
	int c;

	advance(p);
	start = p->pos;
	while (p->pos < p->len && p->s[p->pos] != '"')
		p->pos += p->s[p->pos] == '\\' && p->pos + 1 < p->len ? 2 : 1;
	buf = ar_alloc(p->a, p->pos - start + 4);
	p->pos = start;
	for (;;) {
		c = peek(p);
		if (c < 0) {
			jr_fail(p, "unterminated string");
			return NULL;
		}
		if (c == '"')
			break;
		if (c < 0x20) {
			jr_fail(p, "control character in string");
			return NULL;
		}
		advance(p);
		if (c != '\\') {
			buf[n++] = (char)c;
			continue;
		}
		size_t k = escape(p, buf + n);
		if (!k)
			return NULL;
		n += k;
	}
	advance(p);
	buf[n] = 0;
	v->str = buf;
	v->len = n;
	return v;
}

static JrValue *value(Jr *p, int depth);

/* A growable list of children, moved into the arena when complete. */
typedef struct Kids {
	JrValue **item;
	const char **key;
	int n, cap;
} Kids;

static void
kids_push(Kids *k, const char *key, JrValue *v)
{
	if (k->n == k->cap) {
		k->cap = k->cap ? 2 * k->cap : 8;
		k->item = xrealloc(k->item, sizeof *k->item * (size_t)k->cap);
		k->key = xrealloc(k->key, sizeof *k->key * (size_t)k->cap);
	}
	k->key[k->n] = key;
	k->item[k->n++] = v;
}

static void
kids_move(Jr *p, Kids *k, JrValue *v, bool keys)
{
	v->n = k->n;
	v->item = ar_alloc(p->a, sizeof *v->item * (size_t)(k->n + 1));
	if (k->n)
		memcpy(v->item, k->item, sizeof *v->item * (size_t)k->n);
	if (keys && k->n) {
		v->key = ar_alloc(p->a, sizeof *v->key * (size_t)(k->n + 1));
		memcpy(v->key, k->key, sizeof *v->key * (size_t)k->n);
	}
	free(k->item);
	free(k->key);
}

/* After an element: ',' continues (true), the closer ends (false). */
static bool
more(Jr *p, int closer, bool *ok)
{
	skip_ws(p);
	if (peek(p) == ',') {
		advance(p);
		skip_ws(p);
		return true;
	}
	if (peek(p) == closer) {
		advance(p);
		return false;
	}
	jr_fail(p, "expected ',' or '%c'", closer);
	*ok = false;
	return false;
}

/* member -> string ':' value: the key and its ':', or NULL on an error. */
static const char *
member_key(Jr *p)
{
	JrValue *key;

	if (peek(p) != '"') {
		jr_fail(p, "object key (a string) expected");
		return NULL;
	}
	if (!(key = string(p)))
		return NULL;
	skip_ws(p);
	if (peek(p) != ':') {
		jr_fail(p, "expected ':' after object key");
		return NULL;
	}
	advance(p);
	return key->str;
}

/* array  -> '[' ( value ( ',' value )* )? ']'
 * object -> '{' ( member ( ',' member )* )? '}'
 * One loop for both: an object's elements are members. */
static JrValue *
list(Jr *p, int depth, JrType type)
{
	JrValue *v = new_value(p, type), *e;
	int closer = type == JR_OBJ ? '}' : ']';
	const char *key = NULL;
	Kids k = {0};
	bool ok = true;

	advance(p);
	skip_ws(p);
	if (peek(p) == closer)
		advance(p);
	else
		do {
			if ((type == JR_OBJ && !(key = member_key(p))) ||
			    !(e = value(p, depth + 1))) {
				ok = false;
				break;
			}
			kids_push(&k, key, e);
		} while (more(p, closer, &ok));
	kids_move(p, &k, v, type == JR_OBJ);
	return ok ? v : NULL;
}

static JrValue *
value(Jr *p, int depth)
{
	JrValue *v;
	int c;

	if (depth > JR_MAX_DEPTH) {
		jr_fail(p, "nesting deeper than %d", JR_MAX_DEPTH);
		return NULL;
	}
	skip_ws(p);
	c = peek(p);
	switch (c) {
	case '{':
		return list(p, depth, JR_OBJ);
	case '[':
		return list(p, depth, JR_ARR);
	case '"':
		return string(p);
	case 't':
	case 'f':
		v = new_value(p, JR_BOOL);
		v->b = c == 't';
		return literal(p, c == 't' ? "true" : "false") ? v : NULL;
	case 'n':
		v = new_value(p, JR_NULL);
		return literal(p, "null") ? v : NULL;
	case -1:
		jr_fail(p, "unexpected end of input");
		return NULL;
	default:
		if (c == '-' || (c >= '0' && c <= '9'))
			return number(p);
		jr_fail(p, "unexpected character '%c'", c >= 0x20 && c < 0x7f ? c : '?');
		return NULL;
	}
}

JrValue *
jr_parse(const char *text, size_t len, Arena *a, char *err, size_t errn)
{
	Jr p = {text, len, 0, 1, 0, a, err, errn, false};
	JrValue *v;

	if (errn)
		err[0] = 0;
	v = value(&p, 0);
	if (!v)
		return NULL;
	skip_ws(&p);
	if (p.pos != p.len) {
		jr_fail(&p, "trailing characters after the JSON value");
		return NULL;
	}
	return v;
}

const JrValue *
jr_get(const JrValue *obj, const char *key)
{
	if (!obj || obj->type != JR_OBJ)
		return NULL;
	for (int i = obj->n - 1; i >= 0; i--)
		if (!strcmp(obj->key[i], key))
			return obj->item[i];
	return NULL;
}

const char *
jr_type_name(JrType t)
{
	static const char *const names[] = {
		"null", "boolean", "number", "string", "array", "object",
	};
	return t >= JR_NULL && t <= JR_OBJ ? names[t] : "?";
}
