/* driver/times.c -- --times FILE.json: reads what a generated program
 * measured (its `--times FILE.json`, docs/codegen.md) for the report to
 * show beside the plan's FLOPs. The file is small and written by our own
 * program, but it is still input: every field is checked, and an error
 * names the file, the line and the column. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "driver.h"

enum { TIMES_MAX_FILE = 1 << 20 };

typedef struct TimesReader {
	const char *path;
	const JrValue *root;
	bool failed;
} TimesReader;

static void
times_error(TimesReader *t, const JrValue *at, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (t->failed)
		return;
	if (at && at->line > 0)
		fprintf(stderr, "%s:%d:%d: error: %s\n", t->path, at->line, at->col, msg);
	else
		fprintf(stderr, "%s: error: %s\n", t->path, msg);
	t->failed = true;
}

/* The field `key` of the root object, of type type; NULL after an error. */
static const JrValue *
field(TimesReader *t, const char *key, JrType type)
{
	const JrValue *v = jr_get(t->root, key);

	if (!v)
		times_error(t, t->root, "missing field '%s'", key);
	else if (v->type != type)
		times_error(t, v, "'%s' is %s, not %s", key, jr_type_name(v->type),
		            jr_type_name(type));
	else
		return v;
	return NULL;
}

static int64_t
count_field(TimesReader *t, const char *key)
{
	const JrValue *v = field(t, key, JR_NUM);

	if (v && (!v->is_int || v->i < 0)) {
		times_error(t, v, "'%s' must be a whole number of at least 0", key);
		return 0;
	}
	return v ? v->i : 0;
}

static double
ms_field(TimesReader *t, const char *key)
{
	const JrValue *v = field(t, key, JR_NUM);

	if (v && !(v->num >= 0 && isfinite(v->num))) {
		times_error(t, v, "'%s' must be a time of at least 0 ms", key);
		return 0;
	}
	return v ? v->num : 0;
}

static const char *
str_field(TimesReader *t, const char *key, Arena *a)
{
	const JrValue *v = field(t, key, JR_STR);

	if (v && (v->len != strlen(v->str) || v->len > 64)) {
		times_error(t, v, "'%s' must be a short text without NUL bytes", key);
		return NULL;
	}
	return v ? ar_strndup(a, v->str, v->len) : NULL;
}

Status
times_read(const char *path, size_t max, Arena *a, Measured *m)
{
	TimesReader t = {path, NULL, false};
	FILE *f = fopen(path, "rb");
	char err[256];
	size_t len;
	char *text;

	if (!f) {
		fprintf(stderr, "remat: cannot open '%s': %s\n", path, strerror(errno));
		return ST_ERROR;
	}
	if (!max || max > TIMES_MAX_FILE)
		max = TIMES_MAX_FILE;
	text = read_all(f, max, &len);
	fclose(f);
	if (!text) {
		read_fail(path, max);
		return ST_ERROR;
	}
	t.root = jr_parse(text, len, a, err, sizeof err);
	free(text);
	if (!t.root) {
		/* err is "line:col: message" */
		const char *msg = strstr(err, ": ");
		int at = msg ? (int)(msg - err) : 0;
		fprintf(stderr, "%s:%.*s: error: %s\n", path, at, err, msg ? msg + 2 : err);
		return ST_ERROR;
	}
	if (t.root->type != JR_OBJ || !jr_get(t.root, "remat_times")) {
		times_error(&t, t.root, "not the --times file of a program remat wrote "
		            "(no \"remat_times\" key)");
		return ST_ERROR;
	}
	*m = (Measured){.file = path};
	if (count_field(&t, "remat_times") != 1 && !t.failed)
		times_error(&t, jr_get(t.root, "remat_times"), "format %lld is not known "
		            "(this remat reads format 1)", (long long)jr_get(t.root, "remat_times")->i);
	m->clock = str_field(&t, "clock", a);
	m->mode = str_field(&t, "mode", a);
	m->predicted_peak = count_field(&t, "predicted_peak");
	m->measured_peak = count_field(&t, "measured_peak");
	m->arena = count_field(&t, "arena");
	m->forward_ms = ms_field(&t, "forward_ms");
	m->backward_ms = ms_field(&t, "backward_ms");
	m->recompute_ms = ms_field(&t, "recompute_ms");
	m->gemm_calls = count_field(&t, "gemm_calls");
	const JrValue *ok = field(&t, "ok", JR_BOOL);
	m->ok = ok && ok->b;
	return t.failed ? ST_ERROR : ST_OK;
}

/* A measured file of another plan (other dims, level, budget) would put
 * wrong times beside these FLOPs: say so, the figures stay shown. */
void
times_check(const Measured *m, const Analysis *an)
{
	if (m->predicted_peak != an->ev.peak)
		fprintf(stderr, "remat: warning: %s: measured for another plan (its predicted "
		        "peak is %lld bytes, this plan's %lld)\n", m->file,
		        (long long)m->predicted_peak, (long long)an->ev.peak);
	if (!m->ok)
		fprintf(stderr, "remat: warning: %s: the program reported a MISMATCH\n", m->file);
}
