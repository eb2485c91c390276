/* driver/max_batch.c -- `remat --max-batch SIZE`: the largest batch whose
 * peak fits in SIZE. Each probe is a whole analysis of a copy of the job
 * at one batch (analyze_probe; with --stages, the largest stage's peak),
 * searched by doubling then bisection over multiples of the accumulation
 * steps. Reads the Job and the analysis at the source's batch; writes one
 * line (and notes) on its stream. */
#include <stdlib.h>
#include <string.h>

#include "driver.h"

/* Peak at batch b, or -1 when the analysis fails at that batch; then why[]
 * holds its first diagnostic line (the messages are not printed). */
static int64_t
peak_at(const Job *job, const char *bname, int64_t b, char *why, size_t nwhy)
{
	Job j = *job;
	Arena a;
	Analysis an;
	int64_t peak;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	Status st;

	progress_begin("--max-batch: analyzing %s=%lld", bname, (long long)b);
	j.goal.budget = -1;
	st = analyze_probe(&j, bname, b, mem, &an, &a);
	peak = st == ST_OK ? an.ev.peak : -1;
	ar_free(&a);
	if (mem)
		fclose(mem);
	snprintf(why, nwhy, "%.*s", text ? (int)strcspn(text, "\n") : 0, text ? text : "");
	if (!why[0] && st != ST_OK)     /* the reason went to stderr */
		snprintf(why, nwhy, "%s, reported above",
		         st == ST_INTERNAL ? "an internal error" : "an error");
	free(text);
	return peak;
}

/* The peak grows with the batch in every graph we know; probes that
 * contradict it are reported. A batch the analysis rejects (sizes past
 * 2^62 bytes, FLOPs past 2^63) bounds the search: the answer states it as
 * an upper limit. */
Status
max_batch(const Job *job, int64_t size, const Analysis *an, FILE *out)
{
	const char *bname = an->g.batch_dim;
	int64_t step = an->g.settings.accumulate, lo = 0, hi, p, last = -1, failed = -1;
	bool monotone = true;
	char buf[32], why[512], firstwhy[512] = "";

	if (!bname) {
		fprintf(stderr, "remat: --max-batch: %s declares no `batch` dimension\n", job->file);
		return ST_ERROR;
	}
	for (hi = step;; ) {
		p = peak_at(job, bname, hi, why, sizeof why);
		if (p < 0 && failed < 0) {
			failed = hi;
			snprintf(firstwhy, sizeof firstwhy, "%s", why);
		}
		if (p < 0 || p > size)
			break;
		if (p < last)
			monotone = false;
		last = p;
		lo = hi;
		if (!ck_mul(hi, 2, &hi)) {
			hi = lo;        /* every batch up to 2^63 fits */
			break;
		}
	}
	while (hi - lo > step) {
		int64_t mid = lo + (hi - lo) / step / 2 * step;
		p = peak_at(job, bname, mid, why, sizeof why);
		if (p < 0 && (failed < 0 || mid < failed)) {
			failed = mid;
			snprintf(firstwhy, sizeof firstwhy, "%s", why);
		}
		if (p >= 0 && p <= size)
			lo = mid;
		else
			hi = mid;
	}
	p = peak_at(job, bname, lo ? lo : step, why, sizeof why);
	progress_end();          /* before printing on the same terminal */
	if (lo == 0) {
		if (failed == step) {   /* the analysis fails at the smallest batch */
			fprintf(stderr, "remat: --max-batch: batch %lld cannot be analyzed: %s\n",
			        (long long)step, firstwhy);
			return ST_ERROR;
		}
		fprintf(out, "no batch fits in %s (%lld bytes): batch %lld needs %lld bytes\n",
		        report_size(size, buf), (long long)size, (long long)step, (long long)p);
		return ST_NO_FIT;
	}
	fprintf(out, "max batch %s = %lld: peak %s (%lld bytes) fits in %lld bytes\n",
	        bname, (long long)lo, report_size(p, buf), (long long)p, (long long)size);
	if (failed >= 0 && failed == hi)
		fprintf(out, "note: an upper limit: batch %lld cannot be analyzed (%s)\n",
		        (long long)failed, firstwhy);
	if (!monotone)
		fprintf(out, "note: the peak was not monotone in the batch at the probed sizes\n");
	return ST_OK;
}
