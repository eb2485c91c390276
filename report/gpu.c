/* report/gpu.c -- "does it fit on my card" (--gpu NAME, --reserve
 * SIZE): the card presets, the schedule replayed through the caching
 * allocator's model (passes/eval/cuda_replay.c: "true peak" and
 * "reserved" beside "allocated"), PYTORCH_CUDA_ALLOC_CONF's options, and
 * the one-line verdict both reports print when --gpu is given
 * (docs/runtime-pytorch.md, "Fits on my card").
 *
 * Reads: Analysis (Dag, MemEval, the schedule's nodes and their ops).
 * Writes: report lines only. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
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
 *   H20 96GB:     NVIDIA H20 product brief (96GB HBM3)
 *   B200 180GB:   NVIDIA DGX B200 datasheet, nvidia.com/en-us/data-center/dgx-b200/
 *                 (1,440GB of GPU memory for 8 GPUs: 180GB usable each of the
 *                 192GB of HBM3e on the package)
 *   RTX 4090:     nvidia.com/en-us/geforce/graphics-cards/40-series/rtx-4090/ (24 GB GDDR6X)
 *   RTX 3090:     nvidia.com/en-us/geforce/graphics-cards/30-series/rtx-3090-3090ti/ (24 GB GDDR6X)
 *   RTX A6000:    nvidia.com/en-us/design-visualization/rtx-a6000/ (48 GB GDDR6)
 *   L40S:         nvidia.com/en-us/data-center/l40s/ (48GB GDDR6)
 *   L40:          nvidia.com/en-us/data-center/l40/ (48 GB GDDR6)
 *   A10:          nvidia.com/en-us/data-center/products/a10-gpu/ (24GB GDDR6)
 *   L4:           nvidia.com/en-us/data-center/l4/ (24GB)
 *   T4:           nvidia.com/en-us/data-center/tesla-t4/ (16 GB GDDR6)
 *   V100 16/32GB: nvidia.com/en-us/data-center/v100/ (datasheet: 16GB or 32GB HBM2)
 * Compute capabilities: developer.nvidia.com/cuda-gpus (A100 8.0, H100,
 * H200 and H20 9.0, B200 10.0, RTX 4090, L40S, L40 and L4 8.9, RTX 3090,
 * RTX A6000 and A10 8.6, T4 7.5, V100 7.0). docs/runtime-pytorch.md has
 * the same table; --help and the unknown-card error list these names. */
static const GpuPreset presets[] = {
	{"A100-40GB", 40 * GIB, 80}, {"A100-80GB", 80 * GIB, 80},
	{"H100-80GB", 80 * GIB, 90}, {"H200", 141 * GIB, 90},
	{"H20", 96 * GIB, 90}, {"B200", 180 * GIB, 100},
	{"RTX4090", 24 * GIB, 89}, {"RTX3090", 24 * GIB, 86},
	{"A6000", 48 * GIB, 86}, {"L40S", 48 * GIB, 89}, {"L40", 48 * GIB, 89},
	{"A10", 24 * GIB, 86}, {"L4", 24 * GIB, 89}, {"T4", 16 * GIB, 75},
	{"V100-16GB", 16 * GIB, 70}, {"V100-32GB", 32 * GIB, 70},
};
enum { NPRESETS = sizeof presets / sizeof presets[0] };

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
	for (size_t i = 0; i < NPRESETS; i++)
		if (same_name(name, presets[i].name))
			return &presets[i];
	return NULL;
}

const GpuPreset *
gpu_preset_at(int i)
{
	return i >= 0 && i < NPRESETS ? &presets[i] : NULL;
}

/* "A100-40GB A100-80GB ...": built from the table once, so that the
 * messages cannot miss a card. */
const char *
gpu_preset_names(void)
{
	static char names[NPRESETS * 12];

	if (!names[0])
		for (size_t i = 0; i < NPRESETS; i++)
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
			         i ? " " : "", presets[i].name);
	return names;
}

int64_t
gpu_usable(const GpuCheck *g)
{
	return g->preset->bytes - g->reserve;
}

/* cuBLAS's workspace per handle and stream, which PyTorch allocates
 * through the caching allocator on a handle's first GEMM and keeps
 * (aten/src/ATen/cuda/CublasHandlePool.cpp, parseChosenWorkspaceSize,
 * CUBLAS_WORKSPACE_CONFIG unset): 32 MiB on Hopper and Blackwell (compute
 * capability 9.x, 10.x, 12.x), else ":4096:2:16:8", 4096 KiB twice and
 * 16 KiB eight times. A card given by its size (GPU_SM_UNKNOWN) gets the
 * larger one: an answer that errs, errs on the side of fitting less. */
static int64_t
cublas_workspace(int sm)
{
	if (sm >= 90 || sm == GPU_SM_UNKNOWN)
		return 32 * MIB;
	return (4096 * 2 + 16 * 8) * (int64_t)1024;
}

/* The first forward step and the first backward step that run a GEMM
 * (matmul): the autograd engine runs backward on a thread of its own,
 * so each of the two gets a cuBLAS handle and a workspace. */
static int
gemm_steps(const Analysis *an, int sm, CaLazy lazy[2])
{
	const Schedule *s = &an->plan.sched;
	int n = 0;
	bool fwd = false, bwd = false;

	for (int i = 0; i < s->n && i < an->ev.nsteps && !(fwd && bwd); i++) {
		const DagNode *nd = &an->d.node[s->step[i]];
		bool *seen = nd->is_backward ? &bwd : &fwd;
		if (nd->ir_op < 0 || an->g.op[nd->ir_op].kind != OP_MATMUL || *seen)
			continue;
		*seen = true;
		lazy[n++] = (CaLazy){i, cublas_workspace(sm)};
	}
	return n;
}

/* The schedule's allocations through the caching-allocator model: a
 * warm-up step, then the measured one; under --runtime pytorch with the
 * cuBLAS workspaces too. Beyond the card, once more with its memory as
 * the device's capacity, where PyTorch frees its cached segments and
 * retries before it runs out. */
void
gpu_simulate(const Analysis *an, GpuSim *sim)
{
	const GpuCheck *g = an->gpu;
	CaOptions o = g->alloc;
	CaLazy lazy[2];
	const Settings *st = &an->g.settings;
	int nlazy = st->pytorch && !st->pytorch_cpu ? gemm_steps(an, g->preset->sm, lazy) : 0;
	int64_t usable = gpu_usable(g);

	memset(sim, 0, sizeof *sim);
	o.capacity = 0;
	ca_replay(&an->d, &an->ev, &o, lazy, nlazy, &sim->run);
	sim->fits = sim->run.reserved <= usable;
	if (!sim->fits) {
		CaReplay capped;
		o.capacity = usable;
		ca_replay(&an->d, &an->ev, &o, lazy, nlazy, &capped);
		sim->fits_by_freeing = capped.ooms == 0;
	}
}

bool
gpu_fits(const Analysis *an, GpuSim *sim)
{
	gpu_simulate(an, sim);
	return sim->fits || sim->fits_by_freeing;
}

/* PYTORCH_CUDA_ALLOC_CONF: "key:value" pairs split by commas. The
 * options the model has (max_split_size_mb, expandable_segments) set o;
 * others PyTorch reads are accepted and left out of the model; an
 * unknown key or a bad value is an error, as in PyTorch. */
bool
gpu_alloc_conf(const char *conf, CaOptions *o, char *why, size_t n)
{
	static const char *const ignored[] = {"roundup_power2_divisions",
		"garbage_collection_threshold", "max_non_split_rounding_mb",
		"release_lock_on_cudamalloc", "pinned_use_cuda_host_register",
		"pinned_num_register_threads", "backend", NULL};
	const char *p = conf;

	memset(o, 0, sizeof *o);
	while (p && *p) {
		const char *end = strchr(p, ','), *colon;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char key[64], val[64];
		colon = memchr(p, ':', len);
		if (!colon || (size_t)(colon - p) >= sizeof key ||
		    len - (size_t)(colon - p) - 1 >= sizeof val)
			return why_fail(why, n, "'%.*s' is not key:value", (int)len, p);
		memcpy(key, p, (size_t)(colon - p));
		key[colon - p] = 0;
		memcpy(val, colon + 1, len - (size_t)(colon - p) - 1);
		val[len - (size_t)(colon - p) - 1] = 0;
		if (!strcmp(key, "max_split_size_mb")) {
			char *e;
			long long mb = strtoll(val, &e, 10);
			/* PyTorch: more than the 20 MiB large segment */
			if (*e || e == val || mb <= 20 || mb > ((int64_t)1 << 40))
				return why_fail(why, n, "max_split_size_mb '%s': a number of MiB above 20", val);
			o->max_split_size = (int64_t)mb * MIB;
		} else if (!strcmp(key, "expandable_segments")) {
			if (strcmp(val, "True") && strcmp(val, "False"))
				return why_fail(why, n, "expandable_segments '%s': True or False", val);
			o->expandable_segments = !strcmp(val, "True");
		} else {
			int i = 0;
			while (ignored[i] && strcmp(ignored[i], key))
				i++;
			if (!ignored[i])
				return why_fail(why, n, "unknown option '%s'", key);
		}
		p = end ? end + 1 : NULL;
	}
	return true;
}

/* "fits on H100-80GB with 12.3 GiB to spare" / "does not fit on ...". */
static void
verdict(const Analysis *an, const GpuSim *sim, char *buf, size_t n)
{
	const GpuCheck *g = an->gpu;
	int64_t spare = gpu_usable(g) - sim->run.reserved;

	if (spare >= 0)
		snprintf(buf, n, "fits on %s with %.1f GiB to spare", g->preset->name,
		         (double)spare / (double)GIB);
	else if (sim->fits_by_freeing)
		snprintf(buf, n, "fits on %s only by freeing cached segments "
		         "(%.1f GiB short of caching it all)", g->preset->name,
		         (double)-spare / (double)GIB);
	else
		snprintf(buf, n, "does not fit on %s: %.1f GiB over", g->preset->name,
		         (double)-spare / (double)GIB);
}

void
gpu_report_human(const Analysis *an, FILE *out)
{
	const GpuCheck *g = an->gpu;
	GpuSim sim;
	char buf[32], v[160];

	gpu_fits(an, &sim);
	verdict(an, &sim, v, sizeof v);
	/* continues the "arena:" line; the caller ends the last one */
	fprintf(out, "\n  allocated %s", report_size(an->ev.peak, buf));
	fprintf(out, ", true peak %s", report_size(sim.run.true_peak, buf));
	fprintf(out, ", reserved %s (caching allocator, simulated)\n",
	        report_size(sim.run.reserved, buf));
	fprintf(out, "  %s: %s total", g->preset->name, report_size(g->preset->bytes, buf));
	fprintf(out, " - %s reserve (CUDA context, workspaces)\n", report_size(g->reserve, buf));
	fprintf(out, "  %s", v);
}

void
gpu_report_json(const Analysis *an, FILE *out)
{
	const GpuCheck *g = an->gpu;
	GpuSim sim;
	char v[160];
	bool fits = gpu_fits(an, &sim);

	verdict(an, &sim, v, sizeof v);
	fprintf(out, "  \"gpu\": {\"name\": \"%s\", \"total_bytes\": %" PRId64
	        ", \"reserve_bytes\": %" PRId64 ", \"allocated_bytes\": %" PRId64
	        ", \"true_peak_bytes\": %" PRId64 ", \"reserved_bytes\": %" PRId64
	        ", \"fits\": %s, \"verdict\": \"%s\"},\n",
	        g->preset->name, g->preset->bytes, g->reserve, an->ev.peak,
	        sim.run.true_peak, sim.run.reserved,
	        fits ? "true" : "false", v);
}
