/* tests/unit/emitkit.h -- the harness of the generated-program tests:
 * one network through the passes, its program emitted, compiled in host
 * mode into tmpdir and run. */
#ifndef REMAT_EMITKIT_H
#define REMAT_EMITKIT_H

#include "driver.h"

/* Everything the passes make for one network. */
typedef struct Net {
	Arena a;
	Graph g;
	Dag d;
} Net;

extern char tmpdir[256];         /* made by the test's main (mkdtemp) */

/* Parses, instantiates, infers shapes, differentiates and lowers text. */
void build(Net *n, const char *text);
/* The base schedule with every forward node run again just before the
 * first backward step. */
Schedule recompute_all(Net *n);
/* Emits s to tmpdir/NAME.c and compiles it; returns the binary's path. */
const char *emit_compile(Net *n, const Schedule *s, const char *name);
/* Runs exe with args; returns its exit status, output in buf. */
int run(const char *exe, const char *args, char *buf, size_t n);
/* The number after key in buf. */
double field(const char *buf, const char *key);
/* Both memory modes pass the memory check; recomputation changes no result. */
void check_net(const char *text, const char *name);
/* The directional gradient against central finite differences with step h,
 * within rtol * |gradient| + atol. */
void check_fd(const char *text, const char *name, double h, double rtol, double atol);

#endif
