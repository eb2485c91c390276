/* tests/unit/test_checkmate.c -- the JSON reader and the benchmark
 * importer: the 11 published graphs (node and edge counts, reference peaks
 * exactly as in the README table; -O2's TDI at least as good as the
 * published results), small graphs written here, and malformed
 * files, which must give a clear error. The published graphs are read from
 * $SRCDIR/../shared/data/checkmate and skipped when that is absent. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>
#include <cmocka.h>

#include "driver.h"

static const struct {
	const char *file;
	int n, m;
	int64_t peak;
} published[] = {
	{"vgg16_b256_train.json", 45, 87, 15825108992},
	{"vgg19_b256_train.json", 51, 99, 17058234368},
	{"vgg_unet_b32_train.json", 71, 148, 20959461376},
	{"fcn8_vgg_b32_train.json", 73, 149, 13484795520},
	{"segnet_b32_train.json", 77, 151, 19943884288},
	{"mobilenet_b512_train.json", 185, 367, 34701056000},
	{"resnet50_b256_train.json", 353, 751, 38059356160},
	{"random_layered_n100.json", 100, 236, 46319},
	{"random_layered_n250.json", 250, 944, 146840},
	{"random_layered_n500.json", 500, 2461, 284439},
	{"random_layered_n1000.json", 1000, 5875, 608619},
};

static const char *
data_dir(char *buf, size_t n)
{
	const char *src = getenv("SRCDIR");

	snprintf(buf, n, "%s/../shared/data/checkmate", src ? src : ".");
	return access(buf, R_OK) == 0 ? buf : NULL;
}

static int
edges(const Dag *d)
{
	int m = 0;

	for (int v = 0; v < d->nnode; v++)
		m += d->node[v].nin;
	return m;
}

/* Imports dir/file into d (in a), failing the test on an error. */
static void
import_published(const char *dir, const char *file, Dag *d, Arena *a)
{
	char path[4200], err[512];

	snprintf(path, sizeof path, "%s/%s", dir, file);
	if (cm_import(path, d, a, err, sizeof err))
		fail_msg("%s", err);
}

static void
test_published_graphs(void **state)
{
	char dir[4096], why[512];
	(void)state;
	assert_true(data_dir(dir, sizeof dir));
	for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
		Arena a;
		Dag d;
		MemEval mine, theirs;
		ar_init(&a);
		import_published(dir, published[i].file, &d, &a);
		assert_int_equal(d.nnode, published[i].n);
		assert_int_equal(edges(&d), published[i].m);
		assert_int_equal(d.nbase, published[i].n);
		Schedule s = dag_base_schedule(&d, &a);
		vf_eval(&d, &s, &mine, &a);
		assert_true(mine.valid);
		if (mine.peak != published[i].peak)
			fail_msg("%s: reference peak %lld, README says %lld", published[i].file,
			         (long long)mine.peak, (long long)published[i].peak);
		lv_eval(&d, &s, &theirs, &a);
		if (!vf_check(&d, &s, &theirs, why, sizeof why))
			fail_msg("%s: %s", published[i].file, why);
		assert_int_equal(d.total_cost, d.forward_cost);
		ar_free(&a);
	}
}

/* The README's published results to beat: the best TDI (percent, to one
 * decimal) of Checkmate's MILP and Moccasin at budgets 0.9 and 0.8. -O2
 * must be at least as good at that precision, with a verified plan. */
static const struct {
	const char *file;
	int64_t budget[2];
	double best[2];
} to_beat[] = {
	{"fcn8_vgg_b32_train.json", {12136315968, 10787836416}, {0.0, 0.1}},
	{"resnet50_b256_train.json", {34253420544, 30447484928}, {0.1, 0.3}},
	{"random_layered_n250.json", {132156, 117472}, {0.9, 4.9}},
	{"random_layered_n1000.json", {547758, 486896}, {0.7, 3.4}},
};

static void
test_published_tdi(void **state)
{
	char dir[4096], why[512];
	(void)state;
	assert_true(data_dir(dir, sizeof dir));
	for (size_t i = 0; i < sizeof to_beat / sizeof to_beat[0]; i++) {
		for (int k = 0; k < 2; k++) {
			Arena a;
			Dag d;
			MemEval ev;
			PlanGoal goal = {2, -1, to_beat[i].budget[k], false};
			ar_init(&a);
			import_published(dir, to_beat[i].file, &d, &a);
			PlanResult r = rm_plan(&d, &goal, &a);
			double tdi = 100.0 * (double)r.recompute_cost / (double)d.total_cost;
			assert_true(r.fits);
			assert_true(r.peak <= to_beat[i].budget[k]);
			if (tdi >= to_beat[i].best[k] + 0.05)
				fail_msg("%s at %lld: TDI %.3f%%, published %.1f%%",
				         to_beat[i].file, (long long)to_beat[i].budget[k],
				         tdi, to_beat[i].best[k]);
			lv_eval(&d, &r.sched, &ev, &a);
			if (!vf_check(&d, &r.sched, &ev, why, sizeof why))
				fail_msg("%s: %s", to_beat[i].file, why);
			assert_int_equal(ev.peak, r.peak);
			ar_free(&a);
		}
	}
}

/* What -O2 --budget reaches on graphs where the best known result (the
 * optimum Moccasin's CP-SAT model proves) is within reach: recompute cost
 * at budgets 0.9 and 0.8 of the reference peak, pinned so that it cannot
 * silently get worse (TDI 1.129 / 1.984 % on vgg_unet, 0.163 / 0.370 % on
 * mobilenet, both the optimum; 0.103 / 0.207 % on segnet, where 10,200 at
 * 0.8 is below the 10,211 the best known figure rounds; 0.108 / 0.279 % on
 * resnet50, where the best known is 0.293 % at 0.8 and the plans before
 * the knapsack cover of remat_cover.c stopped at 1,260, 0.311 %). */
static const struct {
	const char *file;
	int64_t budget;
	int64_t most;
} pinned[] = {
	{"vgg_unet_b32_train.json", 18863515239, 350},
	{"vgg_unet_b32_train.json", 16767569101, 615},
	{"mobilenet_b512_train.json", 31230950400, 265},
	{"mobilenet_b512_train.json", 27760844800, 600},
	{"segnet_b32_train.json", 17949495860, 5080},
	{"segnet_b32_train.json", 15955107431, 10200},
	{"resnet50_b256_train.json", 34253420544, 440},
	{"resnet50_b256_train.json", 30447484928, 1130},
};

static void
test_pinned_tdi(void **state)
{
	char dir[4096], why[512];
	(void)state;
	assert_true(data_dir(dir, sizeof dir));
	for (size_t i = 0; i < sizeof pinned / sizeof pinned[0]; i++) {
		Arena a;
		Dag d;
		MemEval ev;
		PlanGoal goal = {2, 1.0, pinned[i].budget, false};
		ar_init(&a);
		import_published(dir, pinned[i].file, &d, &a);
		PlanResult r = rm_plan(&d, &goal, &a);
		assert_true(r.fits);
		if (r.recompute_cost > pinned[i].most)
			fail_msg("%s at %lld: recompute %lld, was %lld", pinned[i].file,
			         (long long)pinned[i].budget, (long long)r.recompute_cost,
			         (long long)pinned[i].most);
		lv_eval(&d, &r.sched, &ev, &a);
		if (!vf_check(&d, &r.sched, &ev, why, sizeof why))
			fail_msg("%s: %s", pinned[i].file, why);
		assert_true(ev.peak <= pinned[i].budget);
		ar_free(&a);
	}
}

/* Writes text to a temporary file and imports it. */
static int
import_text(const char *text, Dag *d, Arena *a, char *err, size_t n)
{
	char path[] = "/tmp/test_checkmate_XXXXXX";
	int fd = mkstemp(path), rc;
	FILE *f;

	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	rc = cm_import(path, d, a, err, n);
	unlink(path);
	return rc;
}

/* String ids, a duplicate link, a node listed before its predecessor: the
 * order is networkx's (Kahn generations in node order). */
static void
test_small_checkmate_layout(void **state)
{
	const char *text =
		"{\"directed\": true, \"graph\": {\"name\": \"tiny\"}, \"nodes\": ["
		"{\"id\": \"c\", \"name\": \"C\", \"backward\": true, \"cost_cpu\": 3, \"cost_ram\": 30},"
		"{\"id\": \"a\", \"name\": \"A\", \"backward\": false, \"cost_cpu\": 1, \"cost_ram\": 10},"
		"{\"id\": \"b\", \"cost_cpu\": 2, \"cost_ram\": 20}],"
		"\"links\": [{\"source\": \"a\", \"target\": \"b\"}, {\"source\": \"b\", \"target\": \"c\"},"
		"{\"source\": \"a\", \"target\": \"c\"}, {\"source\": \"a\", \"target\": \"b\"}]}";
	char err[512];
	Arena a;
	Dag d;
	(void)state;
	ar_init(&a);
	if (import_text(text, &d, &a, err, sizeof err))
		fail_msg("%s", err);
	assert_int_equal(d.nnode, 3);
	assert_int_equal(edges(&d), 3);
	assert_int_equal(d.base_order[0], 1);
	assert_int_equal(d.base_order[1], 2);
	assert_int_equal(d.base_order[2], 0);
	assert_string_equal(d.node[0].name, "C");
	assert_string_equal(d.node[2].name, "b");
	assert_true(d.node[0].is_backward);
	assert_false(d.node[0].once);
	assert_int_equal(d.node[0].nin, 2);
	assert_int_equal(d.t[0].bytes, 30);
	assert_int_equal(d.total_cost, 6);
	ar_free(&a);
}

static void
test_small_random_layout(void **state)
{
	const char *text =
		"{\"directed\": true, \"graph\": {\"order\": [0, 2, 1]}, \"nodes\": ["
		"{\"name\": 0, \"duration\": 0, \"out_cost\": 5, \"param_cost\": 0},"
		"{\"name\": 1, \"duration\": 4, \"out_cost\": 7, \"param_cost\": 0},"
		"{\"name\": 2, \"duration\": 2, \"out_cost\": 9, \"param_cost\": 0}],"
		"\"links\": [{\"0\": 0, \"1\": 1}, {\"0\": 0, \"1\": 2}]}";
	char err[512];
	Arena a;
	Dag d;
	(void)state;
	ar_init(&a);
	if (import_text(text, &d, &a, err, sizeof err))
		fail_msg("%s", err);
	assert_int_equal(d.base_order[1], 2);
	assert_string_equal(d.node[2].name, "2");
	assert_int_equal(d.t[1].bytes, 7);
	ar_free(&a);
}

static void
expect_error(const char *text, const char *what)
{
	char err[512];
	Arena a;
	Dag d;

	ar_init(&a);
	if (import_text(text, &d, &a, err, sizeof err) != -1)
		fail_msg("accepted: %s", text);
	if (!strstr(err, what))
		fail_msg("error '%s' does not mention '%s'", err, what);
	ar_free(&a);
}

#define NODE(id, cpu, ram) "{\"id\": " #id ", \"name\": \"n" #id "\", \"cost_cpu\": " \
	#cpu ", \"cost_ram\": " #ram "}"
#define LINK(s, t) "{\"source\": " #s ", \"target\": " #t "}"

static void
test_malformed(void **state)
{
	(void)state;
	expect_error("", "unexpected end");
	expect_error("{\"nodes\": [", "unexpected end");
	expect_error("{\"nodes\": [1,]}", "unexpected character");
	expect_error("{\"nodes\": [] } x", "trailing");
	expect_error("{\"a\": \"\\q\"}", "invalid escape");
	expect_error("{\"a\": \"\\ud800\"}", "surrogate");
	expect_error("{\"a\": 01}", "expected ','");
	expect_error("{\"a\": 1e999}", "out of range");
	expect_error("{\"a\" 1}", "expected ':'");
	expect_error("[1, 2]", "not a JSON object");
	expect_error("{\"nodes\": {}}", "'nodes' must be an array");
	expect_error("{\"nodes\": [], \"links\": []}", "no nodes");
	expect_error("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1}], \"links\": []}",
	             "missing field 'cost_ram'");
	expect_error("{\"nodes\": [" NODE(0, -1, 5) "], \"links\": []}", "non-negative");
	expect_error("{\"nodes\": [" NODE(0, 1, 2.5) "], \"links\": []}", "non-negative integer");
	expect_error("{\"nodes\": [" NODE(0, 1, 1) "," NODE(0, 1, 1) "], \"links\": []}",
	             "appears twice");
	expect_error("{\"nodes\": [" NODE(0, 1, 1) "], \"links\": [" LINK(0, 7) "]}",
	             "unknown node id");
	expect_error("{\"nodes\": [" NODE(0, 1, 1) "], \"links\": [{\"source\": 0}]}",
	             "missing 'target'");
	expect_error("{\"nodes\": [" NODE(0, 1, 1) "], \"links\": [" LINK(0, 0) "]}", "cycle");
	expect_error("{\"nodes\": [" NODE(0, 1, 1) "," NODE(1, 1, 1) "," NODE(2, 1, 1) "],"
	             " \"links\": [" LINK(0, 1) "," LINK(1, 2) "," LINK(2, 1) "]}", "cycle");
	expect_error("{\"graph\": {\"order\": [1, 0]}, \"nodes\": [" NODE(0, 1, 1) ","
	             NODE(1, 1, 1) "], \"links\": [" LINK(0, 1) "]}", "predecessor");
	expect_error("{\"graph\": {\"order\": [0]}, \"nodes\": [" NODE(0, 1, 1) ","
	             NODE(1, 1, 1) "], \"links\": []}", "entries");
	expect_error("{\"directed\": false, \"nodes\": [], \"links\": []}", "not directed");
}

static void
test_missing_file(void **state)
{
	char err[512];
	Arena a;
	Dag d;
	(void)state;
	ar_init(&a);
	assert_int_equal(cm_import("/nonexistent/x.json", &d, &a, err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot open"));
	ar_free(&a);
}

/* Deep nesting is refused, not recursed into. */
static void
test_json_depth_and_strings(void **state)
{
	char err[256];
	size_t n = 100000;
	char *deep = malloc(n + 1);
	Arena a;
	JrValue *v;
	(void)state;
	ar_init(&a);
	memset(deep, '[', n);
	deep[n] = 0;
	assert_null(jr_parse(deep, n, &a, err, sizeof err));
	assert_non_null(strstr(err, "nesting"));
	free(deep);
	const char *s = "{\"k\": \"a\\u00e9\\ud83d\\ude00\\n\", \"k\": [true, null, -0.5e1, 12]}";
	v = jr_parse(s, strlen(s), &a, err, sizeof err);
	assert_non_null(v);
	assert_int_equal(v->n, 2);
	assert_string_equal(v->item[0]->str, "a\xc3\xa9\xf0\x9f\x98\x80\n");
	const JrValue *arr = jr_get(v, "k");
	assert_int_equal(arr->type, JR_ARR);
	assert_true(arr->item[0]->b);
	assert_int_equal(arr->item[1]->type, JR_NULL);
	assert_true(arr->item[2]->num == -5.0);
	assert_false(arr->item[2]->is_int);
	assert_int_equal(arr->item[3]->i, 12);
	/* a length shorter than the text: nothing past it is read */
	assert_null(jr_parse("[1, 2]", 4, &a, err, sizeof err));
	assert_null(jr_parse("\"abc", 4, &a, err, sizeof err));
	assert_non_null(strstr(err, "unterminated"));
	assert_null(jr_parse("\"a\x01\"", 4, &a, err, sizeof err));
	v = jr_parse("9223372036854775808", 19, &a, err, sizeof err);
	assert_non_null(v);
	assert_false(v->is_int);
	ar_free(&a);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_published_graphs),
		cmocka_unit_test(test_published_tdi),
		cmocka_unit_test(test_pinned_tdi),
		cmocka_unit_test(test_small_checkmate_layout),
		cmocka_unit_test(test_small_random_layout),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_json_depth_and_strings),
	};
	/* The published graphs' tests come first; where ../shared/data/checkmate
	 * is absent (a user's machine) they are left out, not failed: the TAP
	 * driver counts cmocka's "not ok # SKIP" as a failure. */
	char dir[4096];
	size_t skip_n = data_dir(dir, sizeof dir) ? 0 : 3;
	if (skip_n)
		printf("# skipped test_published_graphs, test_published_tdi, "
		       "test_pinned_tdi: no shared/data/checkmate\n");
	return _cmocka_run_group_tests("checkmate", tests + skip_n,
	                               sizeof tests / sizeof tests[0] - skip_n, NULL, NULL);
}
