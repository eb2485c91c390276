/* tests/fuzz/fuzz_pipeline.c -- libFuzzer target: any bytes through all
 * the passes, as `remat -O2 -o` runs it: parse, instantiate, shapes,
 * autodiff, lower, -O2 planning, liveness, memory plan, reports and the
 * generated program, with small resource limits (a 20000-tensor cap, so
 * at most 5000 expansion units; -O2 on Dags of at most 100 nodes) so that
 * each input runs in milliseconds.
 * Errors are expected and go to a sink. Also linked into
 * tests/fuzz/replay_pipeline, which replays the kept inputs. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t n);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t n)
{
	static FILE *sink;
	char *text = xmalloc(n + 1);
	Source src = {"fuzz.net", text, n, false};
	NetOptions o = {.max_tensors = 20000};
	/* the input's length picks the data-parallel options, so that byte
	 * mutations reach distribute.c, the sharded lower bound and the
	 * collectives of the generated program: a quarter of the inputs run on
	 * 1 rank, the rest on 2, 4 or 8 ranks at ZeRO-0..3 with buckets of 64
	 * bytes to 4 KiB, every fifth with the optimizer (and from ZeRO-3 every
	 * seventh the weights) offloaded, every third with a prefetch of one
	 * unit (which ZeRO-3 alone reads); --grad-sync auto, each and last in
	 * turn (read where the input's train block accumulates); every
	 * thirteenth with --shard-weights always, the rest auto (which ZeRO-3
	 * reads where the weights are one gathered unit: most fuzz inputs) */
	o.dist = (DistOptions){.ranks = 1 << (n & 3), .zero = (int)(n >> 2) & 3,
	                       .bucket = (int64_t)64 << (n % 7), .offload_optimizer = n % 5 == 0,
	                       .prefetch = (int)(n % 3 == 0), .grad_sync = (GradSync)(n % 11 % 3)};
	o.dist.offload_params = o.dist.zero == 3 && n % 7 == 0;
	o.dist.shard_weights = n % 13 == 0 ? SHARD_ALWAYS : SHARD_AUTO;
	PlanGoal goal = {.level = 2, .max_recompute = 1.0, .budget = -1},
	         base = {.level = 0, .max_recompute = 1.0, .budget = -1};
	ReportOptions ro = {10, false};
	PassOptions po = {0, NULL, true, NULL};  /* the invariant checks too */
	Analysis an;
	Arena a;
	Diag d;
	Program *p;

	if (!sink)
		sink = fopen("/dev/null", "w");
	memcpy(text, data, n);
	text[n] = 0;
	ar_init(&a);
	diag_init(&d, &src, sink);
	p = net_parse(&src, &a, &d);
	Job j0 = {p, src.name, o, base, true, po}, j2 = {p, src.name, o, goal, true, po};
	/* -O2 only on graphs small enough to plan in milliseconds (the real
	 * examples take seconds under the sanitizers): the rest at -O0 */
	if (p && !d.nerrors && analyze(&j0, &an, &a, &d) == ST_OK &&
	    (an.d.nnode > 100 || analyze(&j2, &an, &a, &d) == ST_OK)) {
		report_human(&an, &ro, sink);
		report_json(&an, sink);
		cg_emit(&an.g, &an.d, &an.plan.sched, &an.ev, an.arena_bytes, sink);
	}
	ar_free(&a);
	free(text);
	return 0;
}
