/* tests/unit/test_arena.c -- arena allocation and the graph helpers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "net.h"

static void
test_alloc_is_zeroed_and_aligned(void **state)
{
	Arena a;
	(void)state;
	ar_init(&a);
	for (int i = 1; i < 5000; i += 37) {
		unsigned char *p = ar_alloc(&a, (size_t)i);
		assert_int_equal((uintptr_t)p % 16, 0);
		for (int j = 0; j < i; j++)
			assert_int_equal(p[j], 0);
		memset(p, 0xab, (size_t)i);
	}
	void *big = ar_alloc(&a, 1 << 20);
	assert_non_null(big);
	ar_free(&a);
}

/* A large chunk a freed arena leaves is the next arena's (no unmapping
 * and faulting in again), zeroed again; a much smaller request does not
 * take it; ar_trim gives it back. */
static void
test_chunk_cache(void **state)
{
	enum { BIG = 40 << 20 };
	Arena a, b, c;
	unsigned char *p, *q, *r;

	(void)state;
	ar_init(&a);
	p = ar_alloc(&a, BIG);
	memset(p, 0xab, BIG);
	ar_free(&a);
	ar_init(&c);
	r = ar_alloc(&c, 1 << 20);      /* a quarter of the kept chunk or less */
	ar_init(&b);
	q = ar_alloc(&b, BIG - 4096);
	assert_ptr_equal(q, p);
	assert_int_equal(q[0], 0);
	assert_int_equal(q[BIG / 2], 0);
	assert_int_equal(q[BIG - 4097], 0);
	assert_true(r < p || r >= p + BIG);
	ar_free(&b);
	ar_free(&c);
	ar_trim();
	ar_trim();      /* again is harmless */
}

static void
test_printf_and_strdup(void **state)
{
	Arena a;
	(void)state;
	ar_init(&a);
	assert_string_equal(ar_printf(&a, "%s.%d.", "block", 3), "block.3.");
	assert_string_equal(ar_strndup(&a, "abcdef", 3), "abc");
	ar_free(&a);
}

/* Strings are packed, and what follows one is aligned again; arrays take
 * the alignment their element size allows. */
static void
test_packed_strings_and_arrays(void **state)
{
	Arena a;
	(void)state;
	ar_init(&a);
	char *s1 = ar_strdup(&a, "ab"), *s2 = ar_strdup(&a, "cd");
	assert_ptr_equal(s2, s1 + 3);
	assert_int_equal((uintptr_t)ar_alloc(&a, 8) % 16, 0);
	(void)ar_strdup(&a, "x");
	int *ints = ar_array(&a, 3, sizeof(int));
	assert_int_equal((uintptr_t)ints % sizeof(int), 0);
	int *next = ar_array(&a, 1, sizeof(int));
	assert_ptr_equal(next, ints + 3);
	(void)ar_strdup(&a, "y");
	int64_t *wide = ar_array(&a, 2, sizeof(int64_t));
	assert_int_equal((uintptr_t)wide % 8, 0);
	assert_int_equal(wide[0] | wide[1] | next[0] | ints[2], 0);
	ar_free(&a);
}

/* A child arena can go early; freeing the parent frees it anyway (the
 * sanitizer build would report a leak or a double free). A large array
 * from ar_grow can be given back at once. */
static void
test_children_and_release(void **state)
{
	Arena a;
	(void)state;
	ar_init(&a);
	Arena *early = ar_child(&a), *late = ar_child(&a);
	memset(ar_alloc(early, 100000), 1, 100000);
	memset(ar_alloc(late, 100000), 1, 100000);
	ar_free(early);
	assert_null(early->head);
	char *big = ar_grow(&a, NULL, 0, 1 << 20);
	big[(1 << 20) - 1] = 1;
	ar_release(&a, big);
	char *again = ar_grow(&a, NULL, 0, 1 << 20);
	assert_int_equal(again[0], 0);
	ar_free(&a);    /* late's blocks go with it */
	ar_free(&a);    /* again: harmless */
}

static void
test_dtypes(void **state)
{
	(void)state;
	assert_int_equal(dtype_size(DT_BF16), 2);
	assert_int_equal(dtype_size(DT_I64), 8);
	assert_int_equal(dtype_from_name("f8e5m2"), DT_F8E5M2);
	assert_int_equal(dtype_from_name("f128"), DT_NONE);
	assert_true(dtype_is_float(DT_F8E4M3));
	assert_false(dtype_is_float(DT_BOOL));
	assert_int_equal(optimizer_states(OPT_ADAMW), 2);
	assert_int_equal(optimizer_from_name("lion"), OPT_LION);
}

static void
test_diag_caret(void **state)
{
	Source src = {"m.net", "dim N = 4;\nx = relu(y);\n", 0};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	Diag d;
	(void)state;
	src.len = strlen(src.text);
	diag_init(&d, &src, f);
	diag_error(&d, loc_make("m.net", 2, 10), "undefined name '%s'", "y");
	fclose(f);
	assert_string_equal(buf, "m.net:2:10: error: undefined name 'y'\n"
	                         "x = relu(y);\n"
	                         "         ^\n");
	assert_int_equal(d.nerrors, 1);
	free(buf);
}

/* A Loc is eight bytes; its file comes back by name, a column past
 * LOC_COL_MAX saturates, and names past the table's room share one entry
 * that says so rather than another file's name. */
static void
test_loc_interning(void **state)
{
	char name[32];
	Loc a, b, c;
	(void)state;
	assert_int_equal(sizeof(Loc), 8);
	a = loc_make("a.net", 3, 7);
	b = loc_make("b.net", 1, (long)LOC_COL_MAX + 5);
	c = loc_make("a.net", 2147483647L + 10, -1);
	assert_string_equal(loc_file(a), "a.net");
	assert_string_equal(loc_file(b), "b.net");
	assert_int_equal(a.fid, c.fid);
	assert_int_equal(a.line, 3);
	assert_int_equal(a.col, 7);
	assert_int_equal(b.col, LOC_COL_MAX);
	assert_int_equal(c.line, 2147483647);
	assert_int_equal(c.col, 0);
	assert_null(loc_file(loc_make(NULL, 1, 1)));
	for (int i = 0; i < LOC_FILES_MAX + 3; i++) {
		snprintf(name, sizeof name, "f%d.net", i);
		a = loc_make(name, 1, 1);
	}
	assert_string_equal(loc_file(a), LOC_FILE_OTHER);
	assert_string_equal(loc_file(b), "b.net");
	assert_string_equal(loc_file(loc_make("f0.net", 1, 1)), "f0.net");
}

/* ar_fit doubles from its minimum only when the next element would not
 * fit, and keeps what the array held. */
static void
test_fit(void **state)
{
	Arena a;
	int *v = NULL, cap = 0;
	(void)state;
	ar_init(&a);
	for (int n = 0; n < 100; n++) {
		int before = cap;
		v = ar_fit(&a, v, n, &cap, sizeof *v, 4);
		assert_true(n < cap);
		assert_int_equal(cap, n < before ? before : before ? 2 * before : 4);
		v[n] = 3 * n;
	}
	assert_int_equal(cap, 128);
	for (int n = 0; n < 100; n++)
		assert_int_equal(v[n], 3 * n);
	cap = 10;           /* a capacity below the minimum goes to the minimum */
	v = ar_fit(&a, v, 10, &cap, sizeof *v, 64);
	assert_int_equal(cap, 64);
	ar_free(&a);
}

static void
fmt(char *buf, size_t n, const char *file, int line, int col, const char *f, ...)
	__attribute__((format(printf, 6, 7)));

static void
fmt(char *buf, size_t n, const char *file, int line, int col, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	err_vformat(buf, n, file, line, col, f, ap);
	va_end(ap);
}

/* err_vformat's four prefixes, and truncation inside the prefix and the
 * message. */
static void
test_err_vformat(void **state)
{
	char b[32];
	(void)state;
	fmt(b, sizeof b, "f.json", 3, 7, "bad %s", "key");
	assert_string_equal(b, "f.json:3:7: bad key");
	fmt(b, sizeof b, "f.json", 0, 0, "bad %d", 1);
	assert_string_equal(b, "f.json: bad 1");
	fmt(b, sizeof b, NULL, 12, 1, "x");
	assert_string_equal(b, "12:1: x");
	fmt(b, sizeof b, NULL, 0, 0, "plain");
	assert_string_equal(b, "plain");
	fmt(b, 10, "a-long-file-name", 1, 1, "m");
	assert_string_equal(b, "a-long-fi");
	fmt(b, 12, "f", 1, 1, "message");
	assert_string_equal(b, "f:1:1: mess");
	b[0] = 'z';
	fmt(b, 0, "f", 1, 1, "m");     /* n 0: nothing written */
	assert_int_equal(b[0], 'z');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_alloc_is_zeroed_and_aligned),
		cmocka_unit_test(test_chunk_cache),
		cmocka_unit_test(test_printf_and_strdup),
		cmocka_unit_test(test_packed_strings_and_arrays),
		cmocka_unit_test(test_children_and_release),
		cmocka_unit_test(test_dtypes),
		cmocka_unit_test(test_diag_caret),
		cmocka_unit_test(test_loc_interning),
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_err_vformat),
	};
	return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
