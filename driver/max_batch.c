/* driver/max_batch.c -- `remat --max-batch [SIZE]`: the largest batch
 * that fits, where "fits" is the --gpu verdict's test (report/gpu.c,
 * gpu_fits: the caching allocator's reserved memory, simulated, within the
 * card less its reserve). fit_target makes the card every way of asking
 * judges by: --gpu's card, that card holding only SIZE for tensors, or
 * without --gpu a card of SIZE with no reserve. --sweep's column uses it
 * too. Each probe is a whole analysis of a copy of the job at one batch
 * (analyze_probe; with --stages, the stage the reports describe),
 * searched by doubling then bisection over multiples of the accumulation
 * steps. Reads the Job and the analysis at the source's batch; writes one
 * line (and notes) on its stream. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

void
fit_target(const GpuCheck *gpu, int64_t size, FitTarget *t)
{
	memset(t, 0, sizeof *t);
	t->g = *gpu;
	if (gpu->preset) {
		t->card = *gpu->preset;
		if (size > 0)   /* cli.c: within what the card leaves */
			t->card.bytes = size + gpu->reserve;
	} else {
		report_size(size, t->name);
		t->card = (GpuPreset){t->name, size, GPU_SM_UNKNOWN};
		t->g.reserve = 0;
	}
	t->g.preset = &t->card;
}

/* Analyzes the job at batch b and judges it by t: *fits, and the reserved
 * bytes, or -1 when the analysis fails at that batch; then why[] holds its
 * first diagnostic line (the messages are not printed). */
static int64_t
reserved_at(const Job *job, const FitTarget *t, const char *bname, int64_t b,
            bool *fits, char *why, size_t nwhy)
{
	Job j = *job;
	Arena a;
	Analysis an;
	GpuSim sim;
	int64_t reserved = -1;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	Status st;

	progress_begin("--max-batch: analyzing %s=%lld", bname, (long long)b);
	j.goal.budget = -1;
	st = analyze_probe(&j, bname, b, mem, &an, &a);
	*fits = false;
	if (st == ST_OK) {
		an.gpu = &t->g;
		*fits = gpu_fits(&an, &sim);
		reserved = sim.run.reserved;
	}
	ar_free(&a);
	if (mem)
		fclose(mem);
	snprintf(why, nwhy, "%.*s", text ? (int)strcspn(text, "\n") : 0, text ? text : "");
	if (!why[0] && st != ST_OK)     /* the reason went to stderr */
		snprintf(why, nwhy, "%s, reported above",
		         st == ST_INTERNAL ? "an internal error" : "an error");
	free(text);
	return reserved;
}

/* "23.00 GiB (24696061952 bytes) on RTX4090 (24.00 GiB less a 1.00 GiB
 * reserve)"; with a size, "20.00 GiB (21474836480 bytes) on RTX4090";
 * without a card, "20.00 GiB (21474836480 bytes)". */
static void
limit_text(const FitTarget *t, const GpuCheck *gpu, int64_t size, char *buf, size_t n)
{
	char b1[32], b2[32], b3[32];
	int64_t usable = gpu_usable(&t->g);
	int k = snprintf(buf, n, "%s (%lld bytes)", report_size(usable, b1), (long long)usable);

	if (gpu->preset && size > 0)
		snprintf(buf + k, n - (size_t)k, " on %s", t->card.name);
	else if (gpu->preset)
		snprintf(buf + k, n - (size_t)k, " on %s (%s less a %s reserve)", t->card.name,
		         report_size(t->card.bytes, b2), report_size(t->g.reserve, b3));
}

/* The reserved memory grows with the batch in every graph we know;
 * probes that contradict it are reported. A batch the analysis rejects
 * (sizes past 2^62 bytes, FLOPs past 2^63) bounds the search: the answer
 * states it as an upper limit. */
Status
max_batch(const Job *job, const GpuCheck *gpu, int64_t size, const Analysis *an, FILE *out)
{
	const char *bname = an->g.batch_dim;
	int64_t step = an->g.settings.accumulate, lo = 0, hi, p, last = -1, failed = -1;
	int64_t plo = -1;      /* reserved at lo */
	bool monotone = true, fits;
	char buf[32], limit[160], why[512], firstwhy[512] = "";
	FitTarget t;

	if (!bname) {
		fprintf(stderr, "remat: --max-batch: %s declares no `batch` dimension\n", job->file);
		return ST_ERROR;
	}
	fit_target(gpu, size, &t);
	for (hi = step;; ) {
		p = reserved_at(job, &t, bname, hi, &fits, why, sizeof why);
		if (p < 0 && failed < 0) {
			failed = hi;
			snprintf(firstwhy, sizeof firstwhy, "%s", why);
		}
		if (!fits)
			break;
		if (p < last)
			monotone = false;
		last = plo = p;
		lo = hi;
		if (!ck_mul(hi, 2, &hi)) {
			hi = lo;        /* every batch up to 2^63 fits */
			break;
		}
	}
	while (hi - lo > step) {
		int64_t mid = lo + (hi - lo) / step / 2 * step;
		p = reserved_at(job, &t, bname, mid, &fits, why, sizeof why);
		if (p < 0 && (failed < 0 || mid < failed)) {
			failed = mid;
			snprintf(firstwhy, sizeof firstwhy, "%s", why);
		}
		if (fits) {
			lo = mid;
			plo = p;
		} else {
			hi = mid;
		}
	}
	/* the answer's reserved bytes, probed already; with no answer, p is
	 * still the first probe's, the smallest batch's */
	if (lo)
		p = plo;
	progress_end();          /* before printing on the same terminal */
	limit_text(&t, gpu, size, limit, sizeof limit);
	if (lo == 0) {
		if (failed == step) {   /* the analysis fails at the smallest batch */
			fprintf(stderr, "remat: --max-batch: batch %lld cannot be analyzed: %s\n",
			        (long long)step, firstwhy);
			return ST_ERROR;
		}
		fprintf(out, "no batch fits in %s: batch %lld reserves %s (%lld bytes)\n",
		        limit, (long long)step, report_size(p, buf), (long long)p);
		return ST_NO_FIT;
	}
	fprintf(out, "max batch %s = %lld: reserved %s (%lld bytes, caching allocator, "
	        "simulated) %s %s\n", bname, (long long)lo, report_size(p, buf), (long long)p,
	        p <= gpu_usable(&t.g) ? "fits in" : "fits only by freeing cached segments in",
	        limit);
	if (failed >= 0 && failed == hi)
		fprintf(out, "note: an upper limit: batch %lld cannot be analyzed (%s)\n",
		        (long long)failed, firstwhy);
	if (!monotone)
		fprintf(out, "note: the reserved memory was not monotone in the batch at the "
		        "probed sizes\n");
	return ST_OK;
}
