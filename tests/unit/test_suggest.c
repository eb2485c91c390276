/* tests/unit/test_suggest.c -- the "did you mean" chooser of
 * ir/util/suggest.c: distances, case, transpositions, ties, and words
 * too far away to suggest. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "util.h"

static const char *
best(const char *word, const char *const *cands)
{
	static char buf[96];
	Suggest sg;

	suggest_init(&sg, word);
	for (; *cands; cands++)
		suggest_add(&sg, *cands);
	return suggest_hint(&sg, buf, sizeof buf);
}

static void
test_near_words(void **state)
{
	static const char *const ops[] = {"relu", "gelu", "softmax", "log_softmax",
	                                  "layernorm", "attention", NULL};
	(void)state;
	assert_string_equal(best("sotfmax", ops), " (did you mean 'softmax'?)");
	assert_string_equal(best("Relu", ops), " (did you mean 'relu'?)");
	assert_string_equal(best("layer_norm", ops), " (did you mean 'layernorm'?)");
	assert_string_equal(best("atention", ops), " (did you mean 'attention'?)");
	/* ties go to the first candidate fed */
	assert_string_equal(best("xelu", ops), " (did you mean 'relu'?)");
}

static void
test_far_words(void **state)
{
	static const char *const ops[] = {"relu", "gelu", "softmax", NULL};
	static const char *const one[] = {"x", "y", NULL};
	(void)state;
	assert_string_equal(best("frob", ops), "");
	assert_string_equal(best("linear", ops), "");
	assert_string_equal(best("relu", ops + 1), " (did you mean 'gelu'?)");
	assert_string_equal(best("gelu", ops + 1), "");  /* itself: nothing to say */
	assert_string_equal(best("z", one), "");        /* one letter is no hint */
	assert_string_equal(best("", ops), "");
}

static void
test_limits(void **state)
{
	char big[200];
	Suggest sg;
	char buf[96];

	(void)state;
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = 0;
	suggest_init(&sg, big);
	suggest_add(&sg, big + 1);
	suggest_add(&sg, NULL);
	assert_string_equal(suggest_hint(&sg, buf, sizeof buf), "");
	suggest_init(&sg, "stide");
	suggest_addn(&sg, "stride padding", 6);
	assert_string_equal(suggest_hint(&sg, buf, sizeof buf), " (did you mean 'stride'?)");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_near_words),
		cmocka_unit_test(test_far_words),
		cmocka_unit_test(test_limits),
	};
	return cmocka_run_group_tests_name("suggest", tests, NULL, NULL);
}
