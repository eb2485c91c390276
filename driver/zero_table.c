/* driver/zero_table.c -- `remat --zero-table`: the per-rank peak
 * for every ZeRO stage and a ladder of rank counts, like DeepSpeed's
 * estimate_zero2/3_model_states_mem_needs tables but with everything the
 * step holds (activations, gradients, buckets, gathers), at the chosen -O
 * level. Each cell is a whole analysis of the same program (with --stages,
 * of every stage, and the cell is the largest stage's). Reads the
 * Program and options; writes the table. */
#include <inttypes.h>

#include "driver.h"

/* The per-rank peak for ranks and stage, or -1 when the analysis failed. */
static int64_t
cell(const Program *prog, const char *file, NetOptions net, const PlanGoal *goal,
     bool check, int ranks, int zero)
{
	PlanGoal g = *goal;
	Analysis an;
	Arena a;
	int64_t peak;

	net.dist.ranks = ranks;
	net.dist.zero = zero;
	net.dist.offload_params = net.dist.offload_params && zero == 3;
	g.budget = -1;
	peak = analyze_probe(prog, file, &net, NULL, 0, &g, check, NULL, &an, &a) == 0
	       ? an.ev.peak : -1;
	ar_free(&a);
	return peak;
}

int
zero_table(const Program *prog, const char *file, const NetOptions *net,
           const PlanGoal *goal, bool check, FILE *out)
{
	int top = net->dist.ranks > 8 ? net->dist.ranks : 8;
	char buf[32];

	fprintf(out, "per-rank peak at -O%d (every byte the step holds)", goal->level);
	if (net->pipe.stages > 1)       /* each cell is analyze_stages' largest */
		fprintf(out, " of the largest of %d pipeline stages",
		        net->pipe.stages);
	fputc('\n', out);
	fprintf(out, "%8s %14s %14s %14s %14s\n", "ranks", "ZeRO 0", "ZeRO 1", "ZeRO 2", "ZeRO 3");
	for (int r = 1; r <= top; r = r < top && 2 * r > top ? top : 2 * r) {
		fprintf(out, "%8d", r);
		for (int z = 0; z <= 3; z++) {
			int64_t p = cell(prog, file, *net, goal, check, r, z);
			if (p < 0)
				return 1;
			fprintf(out, " %14s", report_size(p, buf));
		}
		fputc('\n', out);
		if (r == top)
			break;
	}
	return 0;
}
