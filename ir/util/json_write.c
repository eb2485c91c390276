/* ir/util/json_write.c -- JSON string literals for every writer of JSON
 * (reports, Checkmate runs). Reads a C string; writes text. */
#include "util.h"

/* Writes the characters of s escaped for a JSON string. */
static void
put_escaped(FILE *out, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
}

void
json_put_str(FILE *out, const char *s)
{
	fputc('"', out);
	put_escaped(out, s);
	fputc('"', out);
}

