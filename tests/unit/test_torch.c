/* tests/unit/test_torch.c -- issue 16 units: the DagAcc.out_of_place rule
 * in lv_eval, the verifier and the memory planner (figures worked out in
 * the comments), and the --gpu helpers (preset names,
 * PYTORCH_CUDA_ALLOC_CONF). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <cmocka.h>

#include "driver.h"

/* x (input, 100) -> node "s" makes s; two backward nodes each read s and
 * contribute to ga (40), out of place. Persistent 1000. */
typedef struct Two {
	Arena a;
	Dag d;
	DagTensor t[3];
	DagNode n[3];
	DagAcc acc[2];
	int in0[1], in1[1], in2[1], out0[1];
} Two;

static Two *
two_new(int64_t sbytes, int view_src)
{
	Two *w = calloc(1, sizeof *w);

	ar_init(&w->a);
	w->t[0] = (DagTensor){"x", 100, -1, false, CAT_INPUTS, true, false, -1};
	w->t[1] = (DagTensor){"s", sbytes, -1, false, CAT_ACTIVATIONS, false, false, -1};
	w->t[2] = (DagTensor){"ga", 40, -1, false, CAT_GRADIENTS, false, false, -1};
	w->in0[0] = 0;
	w->in1[0] = w->in2[0] = 1;
	w->out0[0] = 1;
	w->n[0] = (DagNode){.name = "s", .cost = 10, .nin = 1, .in = w->in0,
	                    .nout = 1, .out = w->out0, .ir_op = -1};
	for (int k = 1; k <= 2; k++) {
		w->acc[k - 1] = (DagAcc){2, view_src, true};
		w->n[k] = (DagNode){.name = k == 1 ? "p" : "q", .cost = 1, .once = true,
		                    .is_backward = true, .nin = 1,
		                    .in = k == 1 ? w->in1 : w->in2, .nacc = 1,
		                    .acc = &w->acc[k - 1], .ir_op = -1, .fwd_plus1 = 1};
	}
	w->d.t = w->t;
	w->d.nt = 3;
	w->d.node = w->n;
	w->d.nnode = 3;
	w->d.persistent[CAT_PARAMS] = 1000;
	w->d.base_order = ar_alloc(&w->a, sizeof(int) * 3);
	for (int i = 0; i < 3; i++)
		w->d.base_order[i] = i;
	w->d.nbase = 3;
	dag_finish(&w->d);
	return w;
}

static void
check_all(Two *w, const int64_t *want)
{
	int steps[3] = {0, 1, 2};
	Schedule s = {3, steps};
	MemEval ev;
	char why[256];

	lv_eval(&w->d, &s, &ev, &w->a);
	assert_true(ev.valid);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ev.live_bytes[i], want[i]);
	assert_true(vf_check(&w->d, &s, &ev, why, sizeof why));
	assert_true(mp_plan(&w->d, &ev, &w->a) >= ev.peak);
	ar_free(&w->a);
	free(w);
}

/* Fresh contributions. step 0: x 100 + s 30 = 1130. step 1: s 30 + ga 40
 * = 1070. step 2, first phase: s 30 + old ga 40 + contribution 40 = 1110;
 * second phase (s, dying here, freed first): 1110 - 30 + sum 40 = 1120. */
static void
test_out_of_place_fresh(void **state)
{
	static const int64_t want[3] = {1130, 1070, 1120};
	(void)state;
	check_all(two_new(30, -1), want);
}

/* Aliased contributions (view_src s, 40 bytes): step 1 makes ga a view of
 * s: 1000 + 40 = 1040. Step 2: no contribution buffer; the old ga's base
 * is s, so s is not freed before the sum: 1040 + 40 = 1080. */
static void
test_out_of_place_alias(void **state)
{
	static const int64_t want[3] = {1140, 1040, 1080};
	(void)state;
	check_all(two_new(40, 1), want);
}

/* In place (the remat runtime), for contrast: step 2 = s 30 + ga 40 +
 * temporary 40 = 1110, and no new instance. */
static void
test_in_place(void **state)
{
	static const int64_t want[3] = {1130, 1070, 1110};
	Two *w = two_new(30, -1);
	(void)state;
	w->acc[0].out_of_place = w->acc[1].out_of_place = false;
	check_all(w, want);
}

/* PYTORCH_CUDA_ALLOC_CONF as PyTorch reads it: the modelled options set,
 * the others accepted, anything else refused. */
static void
test_gpu_alloc_conf(void **state)
{
	CaOptions o;
	char why[160];
	(void)state;
	assert_true(gpu_alloc_conf(NULL, &o, why, sizeof why));
	assert_int_equal(o.max_split_size, 0);
	assert_false(o.expandable_segments);
	assert_true(gpu_alloc_conf("max_split_size_mb:128,expandable_segments:True", &o, why,
	                           sizeof why));
	assert_int_equal(o.max_split_size, (int64_t)128 << 20);
	assert_true(o.expandable_segments);
	assert_true(gpu_alloc_conf("garbage_collection_threshold:0.6", &o, why, sizeof why));
	assert_false(gpu_alloc_conf("max_split_size_mb:20", &o, why, sizeof why));
	assert_non_null(strstr(why, "above 20"));
	assert_false(gpu_alloc_conf("max_split_size_mb:x", &o, why, sizeof why));
	assert_false(gpu_alloc_conf("expandable_segments:yes", &o, why, sizeof why));
	assert_false(gpu_alloc_conf("expandable:True", &o, why, sizeof why));
	assert_non_null(strstr(why, "unknown option 'expandable'"));
	assert_false(gpu_alloc_conf("expandable_segments", &o, why, sizeof why));
}

static void
test_gpu_presets(void **state)
{
	(void)state;
	assert_string_equal(gpu_preset("h100-80")->name, "H100-80GB");
	assert_string_equal(gpu_preset("H100_80GB")->name, "H100-80GB");
	assert_string_equal(gpu_preset("rtx 4090")->name, "RTX4090");
	assert_string_equal(gpu_preset("a100-40gb")->name, "A100-40GB");
	assert_int_equal(gpu_preset("V100-32")->bytes, (int64_t)32 << 30);
	assert_int_equal(gpu_preset("h200")->bytes, (int64_t)141 << 30);
	assert_int_equal(gpu_preset("h200")->sm, 90);
	assert_int_equal(gpu_preset("t4")->sm, 75);
	/* issue 28's presets; B200 is the 180 GB NVIDIA lists as usable */
	assert_int_equal(gpu_preset("A6000")->bytes, (int64_t)48 << 30);
	assert_int_equal(gpu_preset("l40s")->bytes, (int64_t)48 << 30);
	assert_int_equal(gpu_preset("L40")->sm, 89);
	assert_int_equal(gpu_preset("a10")->bytes, (int64_t)24 << 30);
	assert_int_equal(gpu_preset("a10")->sm, 86);
	assert_int_equal(gpu_preset("H20")->bytes, (int64_t)96 << 30);
	assert_int_equal(gpu_preset("b200")->bytes, (int64_t)180 << 30);
	assert_int_equal(gpu_preset("B200")->sm, 100);
	/* the names of the messages are the table's, every one found again */
	for (int i = 0; gpu_preset_at(i); i++) {
		assert_ptr_equal(gpu_preset(gpu_preset_at(i)->name), gpu_preset_at(i));
		assert_non_null(strstr(gpu_preset_names(), gpu_preset_at(i)->name));
	}
	assert_null(gpu_preset_at(-1));
	assert_null(gpu_preset("H2000"));
	assert_null(gpu_preset("A100"));
	assert_null(gpu_preset(""));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_out_of_place_fresh),
		cmocka_unit_test(test_out_of_place_alias),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_gpu_alloc_conf),
		cmocka_unit_test(test_gpu_presets),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
