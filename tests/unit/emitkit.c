/* tests/unit/emitkit.c -- the harness of the generated-program tests
 * (test_emit.c, test_emit_ops.c): build a network through the passes,
 * emit and compile it in host mode, run it, and compare its outputs
 * across memory modes, recomputation and finite differences. */
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

void
build(Net *n, const char *text)
{
	Source src = {"t.net", text, strlen(text)};
	Diag dg;
	NetOptions o;
	memset(&o, 0, sizeof o);
	ar_init(&n->a);
	diag_init(&dg, &src, stderr);
	Program *p = net_parse(&src, &n->a, &dg);
	assert_non_null(p);
	ir_graph_init(&n->g, &n->a, "t.net");
	assert_int_equal(net_instantiate(p, &o, &n->g, &dg), 0);
	assert_int_equal(shape_infer(&n->g, &dg), 0);
	if (n->g.train)
		assert_int_equal(autodiff(&n->g, &dg), 0);
	lower_graph(&n->g, &n->d, &n->a);
}

/* The base schedule with every forward node run again just before the
 * first backward step: each later use reads a recomputed copy. */
Schedule
recompute_all(Net *n)
{
	Schedule b = dag_base_schedule(&n->d, &n->a), s;
	int nf = 0;
	while (nf < b.n && !n->d.node[b.step[nf]].once)
		nf++;
	s.n = b.n + nf;
	s.step = ar_alloc(&n->a, sizeof(int) * (size_t)s.n);
	memcpy(s.step, b.step, sizeof(int) * (size_t)nf);
	memcpy(s.step + nf, b.step, sizeof(int) * (size_t)nf);
	memcpy(s.step + 2 * nf, b.step + nf, sizeof(int) * (size_t)(b.n - nf));
	return s;
}

char tmpdir[256];

/* Emits s to NAME.c, compiles it in host mode; returns the binary's path. */
const char *
emit_compile(Net *n, const Schedule *s, const char *name)
{
	static char exe[512];
	char src[512], cmd[2048];
	MemEval ev;
	lv_eval(&n->d, s, &ev, &n->a);
	assert_true(ev.valid);
	int64_t arena = mp_plan(&n->d, &ev, &n->a);
	assert_true(arena >= ev.peak);          /* the arena holds every counted byte */
	snprintf(src, sizeof src, "%s/%s.c", tmpdir, name);
	snprintf(exe, sizeof exe, "%s/%s", tmpdir, name);
	FILE *f = fopen(src, "w");
	assert_non_null(f);
	assert_int_equal(cg_emit(&n->g, &n->d, s, &ev, arena, f), 0);
	fclose(f);
	const char *cc = getenv("CC");
	snprintf(cmd, sizeof cmd, "%s -x c -std=c11 -O1 -Wall -Werror -DREMAT_HOST %s -o %s -lm",
	         cc && *cc ? cc : "cc", src, exe);
	assert_int_equal(system(cmd), 0);
	return exe;
}

/* Runs exe with args; returns its exit status, output in buf. */
int
run(const char *exe, const char *args, char *buf, size_t n)
{
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s %s", exe, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t got = fread(buf, 1, n - 1, p);
	buf[got] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The lines that must not depend on the schedule. */
static void
results(const char *buf, char *res, size_t n)
{
	size_t k = 0;
	res[0] = 0;
	for (const char *l = buf; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l))
		if (!strncmp(l, "checksum", 8) || !strncmp(l, "loss:", 5)) {
			size_t len = strcspn(l, "\n") + 1;
			if (k + len < n) {
				memcpy(res + k, l, len);
				k += len;
				res[k] = 0;
			}
		}
}

double
field(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);
	assert_non_null(p);
	return atof(p + strlen(key));
}

/* Both modes pass the memory check; recomputation changes no result. */
void
check_net(const char *text, const char *name)
{
	Net n;
	char out1[1 << 14], out2[1 << 14], r1[1 << 13], r2[1 << 13], nm[64];
	build(&n, text);
	Schedule base = dag_base_schedule(&n.d, &n.a), rc = recompute_all(&n);
	snprintf(nm, sizeof nm, "%s_o0", name);
	const char *exe = emit_compile(&n, &base, nm);
	assert_int_equal(run(exe, "--tracked", out1, sizeof out1), 0);
	assert_non_null(strstr(out1, "OK"));
	assert_int_equal(run(exe, "--arena", out2, sizeof out2), 0);
	results(out1, r1, sizeof r1);
	results(out2, r2, sizeof r2);
	assert_string_equal(r1, r2);
	assert_non_null(strstr(r1, "checksum"));
	assert_true(strstr(out1, "loss: nan") == NULL);
	snprintf(nm, sizeof nm, "%s_rc", name);
	exe = emit_compile(&n, &rc, nm);
	assert_int_equal(run(exe, "--arena", out2, sizeof out2), 0);
	results(out2, r2, sizeof r2);
	assert_string_equal(r1, r2);
	ar_free(&n.a);
}

/* (loss(+h) - loss(-h)) / 2h against the gradient along the same
 * direction, within rtol * |gradient| + atol. */
void
check_fd(const char *text, const char *name, double h, double rtol, double atol)
{
	Net n;
	char out[1 << 14], arg[64];
	build(&n, text);
	Schedule base = dag_base_schedule(&n.d, &n.a);
	const char *exe = emit_compile(&n, &base, name);
	snprintf(arg, sizeof arg, "--fd %g", h);
	assert_int_equal(run(exe, arg, out, sizeof out), 0);
	double lp = field(out, "loss: ");
	snprintf(arg, sizeof arg, "--fd %g", -h);
	assert_int_equal(run(exe, arg, out, sizeof out), 0);
	double lm = field(out, "loss: ");
	assert_int_equal(run(exe, "", out, sizeof out), 0);
	double dg = field(out, "dirgrad: ");
	double fd = (lp - lm) / (2 * h);
	assert_true(fabs(dg) > 1e-6);
	if (fabs(fd - dg) > rtol * fabs(dg) + atol) {
		fprintf(stderr, "%s: finite difference %.10g, gradient %.10g\n", name, fd, dg);
		fail();
	}
	ar_free(&n.a);
}
