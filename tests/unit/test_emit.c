/* tests/unit/test_emit.c -- generated programs: compile them in host mode,
 * run them in both memory modes, and check that the measured peak is the
 * predicted one, that a schedule with recomputation gives bit-identical
 * checksums, and that the gradients agree with finite differences. With
 * $NVCC set, one program is also compiled as CUDA (compile only). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <math.h>
#include <unistd.h>
#include <sys/wait.h>
#include <cmocka.h>

#include "emitkit.h"

static const char *mlp_net =
	"batch B = 2; dim D = 4, C = 3;\n"
	"input x : f32[B, D]; input y : i64[B];\n"
	"param w1 : f32[D, 8]; param b1 : f32[8]; param w2 : f32[8, C];\n"
	"param g : f32[8]; param bb : f32[8];\n"
	"h = gelu(x @ w1 + b1);\n"
	"h = layernorm(h, g, bb);\n"
	"h = dropout(h, p=0.25);\n"
	"logits = h @ w2;\n"
	"loss = cross_entropy(logits, y);\n"
	"output loss;\n";

static const char *attn_net =
	"batch B = 2; dim S = 4, D = 8, H = 2, V = 11;\n"
	"input tok : i64[B, S]; input lab : i64[B, S];\n"
	"param wte : f64[V, D]; param wqkv : f64[D, 3*D]; param wo : f64[D, D];\n"
	"param g1 : f64[D];\n"
	"x = embedding(tok, wte);\n"
	"h = rmsnorm(x, g1);\n"
	"q, k, v = split(h @ wqkv, 3, axis=-1);\n"
	"q = transpose(reshape(q, [B, S, H, D/H]), 1, 2);\n"
	"k = transpose(reshape(k, [B, S, H, D/H]), 1, 2);\n"
	"v = permute(reshape(v, [B, S, H, D/H]), [0, 2, 1, 3]);\n"
	"a = attention(q, k, v, causal=true);\n"
	"a = reshape(transpose(a, 1, 2), [B, S, D]);\n"
	"x = x + silu(a @ wo) * sigmoid(a);\n"
	"c = concat(slice(x, axis=-1, start=0, end=4), tanh(slice(x, axis=-1, start=4, end=8)), axis=-1);\n"
	"logits = c @ transpose(wte, 0, 1);\n"
	"loss = cross_entropy(logits, lab);\n"
	"output loss;\n";

static const char *conv_net =
	"batch N = 2; dim C = 3, H = 6;\n"
	"input img : f64[N, C, H, H]; input tgt : f64[N, 4];\n"
	"param w1 : f64[4, C, 3, 3]; param gb : f64[4]; param bb : f64[4];\n"
	"param w2 : f64[4, 2, 3, 3];\n"
	"y = conv2d(img, w1, padding=1);\n"
	"y = batchnorm(y, gb, bb);\n"
	"y = tanh(y);\n"
	"z = maxpool2d(y, k=2);\n"
	"z = upsample2d(z, scale=2);\n"
	"z = avgpool2d(z, k=2, stride=1, padding=1);\n"
	"z = conv2d(z, w2, stride=2, padding=1, dilation=1, groups=2);\n"
	"p = global_avgpool(z);\n"
	"loss = mse_loss(p, tgt);\n"
	"output loss;\n";

static const char *misc_net =
	"batch B = 2; dim D = 6;\n"
	"input x : f32[B, D];\n"
	"param w : f16[D, D]; param s : f32[D];\n"
	"h = cast(cast(x, dtype=f16) @ w, dtype=f32);\n"
	"c = log(exp(h) + sqrt(exp(s))) - scale(neg(h), c=0.5);\n"
	"m = div(softmax(c, axis=0) * log_softmax(c), exp(s));\n"
	"r = relu(flatten(reshape(m, [B, 2, 3])));\n"
	"loss = mean(sum(r + m, axis=1));\n"
	"output loss;\n";

static void test_mlp(void **st) { (void)st; check_net(mlp_net, "mlp"); }
static void test_attention(void **st) { (void)st; check_net(attn_net, "attn"); }
static void test_conv(void **st) { (void)st; check_net(conv_net, "conv"); }
static void test_misc(void **st) { (void)st; check_net(misc_net, "misc"); }
static void test_fd_attention(void **st) { (void)st; check_fd(attn_net, "attn_fd", 1e-3, 5e-3, 2e-5); }
static void test_fd_conv(void **st) { (void)st; check_fd(conv_net, "conv_fd", 1e-3, 5e-3, 2e-5); }

/* A program that miscounts must fail: a wrong prediction is caught. */
static void
test_mismatch_fails(void **st)
{
	Net n;
	char out[1 << 14], src[512], cmd[2048];
	(void)st;
	build(&n, mlp_net);
	Schedule base = dag_base_schedule(&n.d, &n.a);
	MemEval ev;
	lv_eval(&n.d, &base, &ev, &n.a);
	int64_t arena = mp_plan(&n.d, &ev, &n.a);
	ev.live_bytes[1] += 4;
	ev.peak += 4;
	snprintf(src, sizeof src, "%s/bad.c", tmpdir);
	FILE *f = fopen(src, "w");
	assert_int_equal(cg_emit(&n.g, &n.d, &base, &ev, arena, f), 0);
	fclose(f);
	const char *cc = getenv("CC");
	snprintf(cmd, sizeof cmd, "%s -x c -std=c11 -O1 -DREMAT_HOST %s -o %s/bad -lm",
	         cc && *cc ? cc : "cc", src, tmpdir);
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof cmd, "%s/bad", tmpdir);
	assert_int_equal(run(cmd, "", out, sizeof out), 1);
	assert_non_null(strstr(out, "MISMATCH"));
	ar_free(&n.a);
}

/* The same source compiles as CUDA (compile only: no GPU needed). */
static void
test_nvcc(void **st)
{
	char cmd[2048];
	const char *nvcc = getenv("NVCC");
	(void)st;
	snprintf(cmd, sizeof cmd, "%s -fmad=false -x cu -c %s/attn_o0.c -o %s/attn.o",
	         nvcc, tmpdir, tmpdir);
	assert_int_equal(system(cmd), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mlp),
		cmocka_unit_test(test_attention),
		cmocka_unit_test(test_conv),
		cmocka_unit_test(test_misc),
		cmocka_unit_test(test_fd_attention),
		cmocka_unit_test(test_fd_conv),
		cmocka_unit_test(test_mismatch_fails),
		cmocka_unit_test(test_nvcc),
	};
	snprintf(tmpdir, sizeof tmpdir, "%s", "/tmp/remat-emit-XXXXXX");
	if (!mkdtemp(tmpdir))
		return 1;
	/* test_nvcc comes last; without nvcc it is left out, not failed (the
	 * TAP driver counts cmocka's "not ok # SKIP" as a failure) */
	size_t n = sizeof tests / sizeof tests[0];
	const char *nvcc = getenv("NVCC");
	if (!nvcc || !*nvcc) {
		printf("# skipped test_nvcc: configure found no nvcc\n");
		n--;
	}
	int rc = _cmocka_run_group_tests("emit", tests, n, NULL, NULL);
	char cmd[512];
	snprintf(cmd, sizeof cmd, "%s %s", getenv("REMAT_KEEP") ? "echo" : "rm -rf", tmpdir);
	if (system(cmd) != 0)
		return 1;
	return rc;
}
