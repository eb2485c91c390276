/* tests/unit/test_escape.c -- the escapers of ir/util/escape.c, one per
 * output language: exact bytes for quotes, line ends, comment closers,
 * control bytes and invalid UTF-8 (docs/limits.md, "Names and paths in
 * the outputs"). tests/hostile.sh parses whole outputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"

/* What f(s) writes, NUL-terminated (freed by the next call). */
static const char *
run(void (*f)(FILE *, const char *), const char *s)
{
	static char *buf;
	size_t n;
	FILE *m;

	free(buf);
	buf = NULL;
	m = open_memstream(&buf, &n);
	assert_non_null(m);
	f(m, s);
	fclose(m);
	return buf;
}

static void
test_utf8(void **state)
{
	(void)state;
	assert_int_equal(utf8_len("a"), 1);
	assert_int_equal(utf8_len("\xc3\xa9"), 2);
	assert_int_equal(utf8_len("\xe2\x82\xac"), 3);
	assert_int_equal(utf8_len("\xf0\x9f\x98\x80"), 4);
	assert_int_equal(utf8_len("\xe9t"), 0);             /* Latin-1 */
	assert_int_equal(utf8_len("\xc0\xaf"), 0);          /* overlong '/' */
	assert_int_equal(utf8_len("\xed\xa0\x80"), 0);      /* a surrogate */
	assert_int_equal(utf8_len("\xf4\x90\x80\x80"), 0);  /* past U+10FFFF */
	assert_int_equal(utf8_len("\xe2\x82"), 0);          /* cut short */
	assert_int_equal(utf8_len(""), 0);
}

/* One case of a writer: what it makes of in. */
typedef struct Case {
	void (*put)(FILE *, const char *);
	const char *in, *want;
} Case;

static const Case cases[] = {
	/* JSON: quotes, backslashes, control bytes; invalid UTF-8 as U+FFFD */
	{json_put_str, "a\"b\\c\n\x01</x>", "\"a\\\"b\\\\c\\u000a\\u0001</x>\""},
	{json_put_str, "caf\xe9 \xc3\xa9", "\"caf\\ufffd \xc3\xa9\""},
	/* in a <script> CDATA: no "</", no "]]>" */
	{json_put_script_str, "</script>]]>&", "\"\\u003c/script\\u003e]]\\u003e\\u0026\""},
	/* XML: entities; tab and LF kept, CR as a reference; other control
	 * bytes, U+FFFE and invalid UTF-8 as U+FFFD */
	{esc_xml, "<a href=\"x\">&'</a>", "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;"},
	{esc_xml, "a\tb\nc\rd\x01" "e\xe9\xef\xbf\xbe\xc3\xa9",
	 "a\tb\nc&#13;d\xef\xbf\xbd" "e\xef\xbf\xbd\xef\xbf\xbd\xc3\xa9"},
	/* DOT: no \N expands, a newline is the label's */
	{dot_put_str, "a\"b\\N\nc\x02\xe9", "\"a\\\"b\\\\N\\nc\xef\xbf\xbd\xef\xbf\xbd\""},
	/* CSV: RFC 4180 quoting, no formula */
	{csv_put_field, "plain name", "plain name"},
	{csv_put_field, "a,b", "\"a,b\""},
	{csv_put_field, "say \"hi\"\r\n", "\"say \"\"hi\"\"\r\n\""},
	{csv_put_field, "=HYPERLINK(1)", "\"'=HYPERLINK(1)\""},
	{csv_put_field, "-x", "\"'-x\""},
	{csv_put_field, "@x", "\"'@x\""},
	{csv_put_field, "caf\xe9", "\"caf\xef\xbf\xbd\""},
	{csv_put_field, "", ""},
	/* Python: no end of the docstring, no \N{...}; surrogateescape */
	{py_put_str, "\"\"\"'\\N{x}\n\x01\x7f\xe9\xc3\xa9",
	 "\"\\\"\\\"\\\"\\'\\\\N{x}\\n\\x01\\x7f\\udce9\xc3\xa9\""},
};

static void
test_writers(void **state)
{
	(void)state;
	for (size_t k = 0; k < sizeof cases / sizeof *cases; k++)
		assert_string_equal(run(cases[k].put, cases[k].in), cases[k].want);
	assert_int_equal(json_plain_len("abc\"d"), 3);
	assert_int_equal(json_plain_len("ab\xc3\xa9"), 2);
}

static void
test_c(void **state)
{
	Arena a;

	(void)state;
	ar_init(&a);
	assert_string_equal(esc_c_str(&a, "a\"b\\?\?/\n\xe9"),
	                    "a\\\"b\\\\\\077\\077/\\012\\351");
	assert_string_equal(esc_c_comment(&a, "x*/ int y; /*z\n\xe9"), "x* / int y; / *z??");
	assert_string_equal(esc_line(&a, "p\nparam q;\x7f"), "p?param q;?");
	assert_string_equal(esc_line(&a, "plain"), "plain");
	assert_string_equal(esc_line(&a, "caf\xe9 \xc3\xa9\x1b"), "caf? \xc3\xa9?");
	ar_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_writers),
		cmocka_unit_test(test_c),
	};
	return cmocka_run_group_tests_name("escape", tests, NULL, NULL);
}
