/* driver/zero_table.c -- `remat --zero-table`: the per-rank peak
 * for every ZeRO stage and a ladder of rank counts, like DeepSpeed's
 * estimate_zero2/3_model_states_mem_needs tables but with everything the
 * step holds (activations, gradients, buckets, gathers), at the chosen -O
 * level. Each cell is a whole analysis of the same program (with --stages,
 * of every stage, and the cell is the largest stage's). Reads the Job;
 * writes the table. */
#include <inttypes.h>

#include "driver.h"

/* The per-rank peak for ranks and ZeRO stage, or -1 when the analysis failed. */
static int64_t
cell(const Job *job, int ranks, int zero)
{
	Job j = *job;
	DistOptions *dist = &j.net.dist;
	Analysis an;
	Arena a;
	int64_t peak;

	dist->ranks = ranks;
	dist->zero = zero;
	dist->offload_params = dist->offload_params && zero == 3;
	j.goal.budget = -1;
	peak = analyze_probe(&j, NULL, 0, NULL, &an, &a) == ST_OK ? an.ev.peak : -1;
	ar_free(&a);
	return peak;
}

Status
zero_table(const Job *job, FILE *out)
{
	const NetOptions *net = &job->net;
	int top = net->dist.ranks > 8 ? net->dist.ranks : 8;
	char buf[32];

	fprintf(out, "per-rank peak at -O%d (every byte the step holds)", job->goal.level);
	if (net->pipe.stages > 1)       /* each cell is analyze_stages' largest */
		fprintf(out, " of the largest of %d pipeline stages",
		        net->pipe.stages);
	fputc('\n', out);
	fprintf(out, "%8s %14s %14s %14s %14s\n", "ranks", "ZeRO 0", "ZeRO 1", "ZeRO 2", "ZeRO 3");
	for (int r = 1; r <= top; r = r < top && 2 * r > top ? top : 2 * r) {
		fprintf(out, "%8d", r);
		for (int z = 0; z <= 3; z++) {
			int64_t p = cell(job, r, z);
			if (p < 0)
				return ST_ERROR;
			fprintf(out, " %14s", report_size(p, buf));
		}
		fputc('\n', out);
		if (r == top)
			break;
	}
	return ST_OK;
}
