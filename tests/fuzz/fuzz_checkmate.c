/* tests/fuzz/fuzz_checkmate.c -- libFuzzer target: any bytes as a
 * Checkmate / random-layered JSON graph through `remat --import
 * checkmate -O2 --verify --json` (importer, planner, verifier, report).
 * The bytes go to a per-process temporary file, as the importer reads a
 * path; graphs over 64 nodes are imported but not planned, to keep each
 * run short (the published graphs take seconds under the sanitizers). Also linked into tests/fuzz/replay_checkmate. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t n)
{
	static FILE *sink;
	static char path[64];
	PlanGoal goal = {2, 1.0, -1, false};
	char err[512];
	Arena a;
	Dag d;
	FILE *f;

	if (!sink) {
		sink = fopen("/dev/null", "w");
		snprintf(path, sizeof path, "/tmp/remat-fuzz-cm-%ld.json", (long)getpid());
	}
	if (!(f = fopen(path, "wb")))
		return 0;
	fwrite(data, 1, n, f);
	fclose(f);
	ar_init(&a);
	if (cm_import(path, &d, &a, err, sizeof err) == 0 && d.nnode <= 64)
		cm_run(&(Job){NULL, path, {0}, goal, true, {0, NULL, pass_checks_default(), NULL}},
		       n % 2 == 0, sink);
	ar_free(&a);
	return 0;
}
