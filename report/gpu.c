/* report/gpu.c -- "does it fit on my card" (--gpu NAME, --reserve
 * SIZE): the card presets, the caching allocator's rounding estimate
 * ("reserved" beside "allocated") and the one-line verdict both reports
 * print when --gpu is given (docs/runtime-pytorch.md, "Fits on my card").
 *
 * Reads: Analysis (Dag persistent buffers, MemEval instances and
 * temporaries). Writes: report lines only. */
#include <inttypes.h>
#include <stdlib.h>
#include <strings.h>

#include "report.h"

#define GIB ((int64_t)1 << 30)
#define MIB ((int64_t)1 << 20)

/* Total memory per card, the vendors' figures read as binary gigabytes
 * (the boards carry 2^30-byte HBM/GDDR stacks; e.g. an A100 40GB reports
 * 40960 MiB). Sources, NVIDIA product pages and datasheets:
 *   A100 40/80GB: nvidia.com/en-us/data-center/a100/ (datasheet table)
 *   H100 80GB:    nvidia.com/en-us/data-center/h100/ (SXM and PCIe: 80GB)
 *   H200 141GB:   nvidia.com/en-us/data-center/h200/ (141GB HBM3e)
 *   RTX 4090:     nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/ (24 GB GDDR6X)
 *   RTX 3090:     nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3090-3090ti/ (24 GB GDDR6X)
 *   L4:           nvidia.com/en-us/data-center/l4/ (24GB)
 *   T4:           nvidia.com/en-us/data-center/tesla-t4/ (16 GB GDDR6)
 *   V100 16/32GB: nvidia.com/en-us/data-center/v100/ (datasheet: 16GB or 32GB HBM2) */
static const GpuPreset presets[] = {
	{"A100-40GB", 40 * GIB}, {"A100-80GB", 80 * GIB}, {"H100-80GB", 80 * GIB},
	{"H200", 141 * GIB}, {"RTX4090", 24 * GIB}, {"RTX3090", 24 * GIB},
	{"L4", 24 * GIB}, {"T4", 16 * GIB}, {"V100-16GB", 16 * GIB},
	{"V100-32GB", 32 * GIB},
};

/* "a100-40", "A100-40GB", "rtx 4090", "RTX-4090": case and the separators
 * '-', ' ', '_' are ignored, and a trailing "GB" is optional. */
static bool
same_name(const char *a, const char *b)
{
	for (;;) {
		while (*a == '-' || *a == ' ' || *a == '_')
			a++;
		while (*b == '-' || *b == ' ' || *b == '_')
			b++;
		if (!strcasecmp(a, "gb") || !*a)
			return !*b || !strcasecmp(b, "gb");
		if (!*b)
			return !strcasecmp(a, "gb");
		if ((*a | 32) != (*b | 32))
			return false;
		a++;
		b++;
	}
}

const GpuPreset *
gpu_preset(const char *name)
{
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
		if (same_name(name, presets[i].name))
			return &presets[i];
	return NULL;
}

const char *
gpu_preset_names(void)
{
	return "A100-40GB A100-80GB H100-80GB H200 RTX4090 RTX3090 L4 T4 "
	       "V100-16GB V100-32GB";
}

/* The CUDA caching allocator's block size for a request of b bytes: up to
 * 1 MiB, a multiple of 512 B; larger, a multiple of 2 MiB. */
int64_t
gpu_round(int64_t b)
{
	if (b <= 0)
		return 0;
	if (b <= MIB)
		return (b + 511) / 512 * 512;
	return (b + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
}

/* The largest, over steps, of every live buffer rounded on its own. */
int64_t
gpu_reserved(const Dag *d, const MemEval *ev)
{
	int n = ev->nsteps;
	int64_t pers = 0, run = 0, best = 0;
	int64_t *diff = xcalloc((size_t)n + 1, sizeof *diff);

	if (d->npersistent > 0)
		for (int i = 0; i < d->npersistent; i++)
			pers += gpu_round(d->persistent_buf[i]);
	else
		for (int c = 0; c < CAT_COUNT; c++)
			pers += gpu_round(d->persistent[c]);
	for (int k = 0; k < ev->ninst; k++) {
		const Instance *in = &ev->inst[k];
		int lo = in->start < 0 ? 0 : in->start;
		if (in->owned == 0 || in->end < lo)
			continue;
		diff[lo] += gpu_round(in->owned);
		diff[in->end + 1] -= gpu_round(in->owned);
	}
	for (int i = 0; i < n; i++) {
		int64_t at;
		run += diff[i];
		at = pers + run + gpu_round(ev_temp(ev, i));
		if (at > best)
			best = at;
	}
	free(diff);
	return n > 0 ? best : pers;
}

/* "fits on H100-80GB with 12.3 GiB to spare" / "does not fit on ...". */
static void
verdict(const GpuCheck *g, int64_t reserved, char *buf, size_t n)
{
	int64_t usable = g->preset->bytes - g->reserve;
	int64_t spare = usable - reserved;

	if (spare >= 0)
		snprintf(buf, n, "fits on %s with %.1f GiB to spare", g->preset->name,
		         (double)spare / (double)GIB);
	else
		snprintf(buf, n, "does not fit on %s: %.1f GiB over", g->preset->name,
		         (double)-spare / (double)GIB);
}

void
gpu_report_human(const Analysis *an, FILE *out)
{
	const GpuCheck *g = an->gpu;
	int64_t res = gpu_reserved(&an->d, &an->ev);
	char buf[32], v[128];

	verdict(g, res, v, sizeof v);
	/* continues the "arena:" line; the caller ends the last one */
	fprintf(out, "\n  allocated %s", report_size(an->ev.peak, buf));
	fprintf(out, ", reserved %s (caching allocator estimate)\n", report_size(res, buf));
	fprintf(out, "  %s: %s total", g->preset->name, report_size(g->preset->bytes, buf));
	fprintf(out, " - %s reserve (CUDA context, workspaces)\n", report_size(g->reserve, buf));
	fprintf(out, "  %s", v);
}

void
gpu_report_json(const Analysis *an, FILE *out)
{
	const GpuCheck *g = an->gpu;
	int64_t res = gpu_reserved(&an->d, &an->ev);
	char v[128];

	verdict(g, res, v, sizeof v);
	fprintf(out, "  \"gpu\": {\"name\": \"%s\", \"total_bytes\": %" PRId64
	        ", \"reserve_bytes\": %" PRId64 ", \"allocated_bytes\": %" PRId64
	        ", \"reserved_bytes\": %" PRId64 ", \"fits\": %s, \"verdict\": \"%s\"},\n",
	        g->preset->name, g->preset->bytes, g->reserve, an->ev.peak, res,
	        res <= g->preset->bytes - g->reserve ? "true" : "false", v);
}
