/* driver/zero_table.c -- `remat --zero-table`: the per-rank peak
 * for every ZeRO stage and a ladder of rank counts, like DeepSpeed's
 * estimate_zero2/3_model_states_mem_needs tables but with everything the
 * step holds (activations, gradients, buckets, gathers), at the chosen -O
 * level. Each cell is a whole analysis of the same program (with --stages,
 * of every stage, and the cell is the largest stage's). Reads the Job;
 * writes the table. */
#include <inttypes.h>

#include "driver.h"

/* The data-parallel options of one cell. */
static DistOptions
cell_dist(const Job *job, int ranks, int zero)
{
	DistOptions dist = job->net.dist;

	dist.ranks = ranks;
	dist.zero = zero;
	dist.offload_params = dist.offload_params && zero == 3;
	return dist;
}

/* The per-rank peak for ranks and ZeRO stage, or -1 when the analysis failed. */
static int64_t
cell(const Job *job, int ranks, int zero)
{
	Job j = *job;
	Analysis an;
	Arena a;
	int64_t peak;

	j.net.dist = cell_dist(job, ranks, zero);
	j.goal.budget = -1;
	peak = analyze_probe(&j, NULL, 0, NULL, &an, &a) == ST_OK ? an.ev.peak : -1;
	ar_free(&a);
	return peak;
}

/* A cell already computed that is the same analysis, or -1: the same
 * program and options give the same DAG (passes/graph/distribute.c reads
 * the rank count only for shard sizes and for ranks > 1). At 1 rank with
 * nothing offloaded no stage changes the DAG (distribution is off), so
 * the row is ZeRO-0's (row1); ZeRO-0 shards nothing, so from 2 ranks up
 * its column is the 2-rank cell (zero0). 5 of the 16 cells of the
 * default ladder, a third of --zero-table's time. */
static int64_t
same_cell(const Job *job, int ranks, int zero, int64_t row1, int64_t zero0)
{
	DistOptions dist = cell_dist(job, ranks, zero);

	if (ranks == 1 && zero > 0 && !dist_active(&dist))
		return row1;
	if (ranks > 1 && zero == 0)
		return zero0;
	return -1;
}

Status
zero_table(const Job *job, FILE *out)
{
	const NetOptions *net = &job->net;
	int top = net->dist.ranks > 8 ? net->dist.ranks : 8;
	int64_t row1 = -1, zero0 = -1;
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
			int64_t p = same_cell(job, r, z, row1, zero0);
			if (p < 0)
				p = cell(job, r, z);
			if (p < 0)
				return ST_ERROR;
			if (r == 1 && z == 0)
				row1 = p;
			if (r > 1 && z == 0)
				zero0 = p;
			fprintf(out, " %14s", report_size(p, buf));
		}
		fputc('\n', out);
		if (r == top)
			break;
	}
	return ST_OK;
}
