/* passes/eval/cuda_replay.c -- a schedule's allocations replayed through
 * the caching-allocator model (cuda_alloc.c): what PyTorch's allocator
 * would hold over a warm-up step and a measured step of a training loop
 * (docs/runtime-pytorch.md, "Fits on my card").
 *
 * Reads: Dag persistent buffers and tensors' to_end, MemEval instances
 * (start, end, owned, replaces), temporaries. The sequence, step by step:
 * the step's new instances, then the libraries' first-use buffers of that
 * step (warm-up only; kept), then the step's temporary block; then the
 * instances whose last step it is are freed; then the out-of-place sums
 * (DagAcc.out_of_place: autograd adds after it freed the step's dying
 * inputs); then the temporary block and the gradients summed are freed.
 * Persistent buffers come first, once; instances from before step 0 are
 * made before each step that lacks them and held between steps (the
 * caller's inputs); what else is live at a step's end (param gradients,
 * the loss) is freed there (zero_grad(set_to_none=True)). The first
 * request that fails (CaOptions.capacity) ends the replay. */
#include <stdlib.h>
#include <string.h>

#include "eval.h"

typedef struct Rp {
	const Dag *d;
	const MemEval *ev;
	CudaAlloc *c;
	int *h;                 /* [ninst] handle of a live instance, or -1 */
	int *prev;              /* [ninst] the instance an out-of-place sum
	                           replaces (its root), or -1 */
	int *end_head;          /* [nsteps] first instance ending there, or -1 */
	int *end_next;          /* [ninst] */
	bool *held;             /* [ninst] replaced by a sum of this step */
	CaReplay *r;
} Rp;

/* Allocates instance k, noting the first failure. */
static void
rp_alloc(Rp *p, int k, int step)
{
	if (p->h[k] >= 0 || p->ev->inst[k].owned <= 0)
		return;
	p->h[k] = ca_malloc(p->c, p->ev->inst[k].owned);
	if (p->h[k] < 0 && p->r->oom_step < 0)
		p->r->oom_step = step;
}

static void
rp_free(Rp *p, int k)
{
	if (p->h[k] >= 0)
		ca_release(p->c, p->h[k]);
	p->h[k] = -1;
}

/* Does instance k take memory at some step? (A from-start instance that
 * serves nothing and is not to_end has end -1.) */
static bool
rp_lives(const MemEval *ev, int k)
{
	const Instance *in = &ev->inst[k];

	return in->owned > 0 && in->end >= (in->start < 0 ? 0 : in->start);
}

/* One step s: see the file's comment. */
static void
rp_step(Rp *p, int s, const CaLazy *lazy, int nlazy, bool warm)
{
	const MemEval *ev = p->ev;
	int lo = ev->step_prod[s + 1], hi = ev->step_prod[s + 2];
	int64_t temp = ev_temp(ev, s);
	int th = -1;

	for (int k = lo; k < hi; k++)
		if (!ev->inst[k].replaces && rp_lives(ev, k))
			rp_alloc(p, k, s);
	for (int j = 0; warm && j < nlazy; j++)
		if (lazy[j].step == s && lazy[j].bytes > 0 && ca_malloc(p->c, lazy[j].bytes) < 0 &&
		    p->r->oom_step < 0)
			p->r->oom_step = s;
	if (temp > 0 && (th = ca_malloc(p->c, temp)) < 0 && p->r->oom_step < 0)
		p->r->oom_step = s;
	for (int k = lo; k < hi; k++)
		if (ev->inst[k].replaces && p->prev[k] >= 0)
			p->held[p->prev[k]] = true;
	for (int k = p->end_head[s]; k >= 0; k = p->end_next[k])
		if (!p->held[k] && !(k < ev->step_prod[1] && s == ev->nsteps - 1))
			rp_free(p, k);  /* an input live to the end stays held */
	for (int k = lo; k < hi; k++)
		if (ev->inst[k].replaces && rp_lives(ev, k))
			rp_alloc(p, k, s);
	if (th >= 0)
		ca_release(p->c, th);
	for (int k = lo; k < hi; k++)
		if (ev->inst[k].replaces && p->prev[k] >= 0 && p->held[p->prev[k]]) {
			p->held[p->prev[k]] = false;
			if (ev->inst[p->prev[k]].end <= s)
				rp_free(p, p->prev[k]);
		}
}

/* One training step: the inputs it lacks, its steps, then the frees of
 * whatever it made that is still live. */
static void
rp_run(Rp *p, const CaLazy *lazy, int nlazy, bool warm)
{
	const MemEval *ev = p->ev;

	for (int k = ev->step_prod[0]; k < ev->step_prod[1]; k++)
		if (rp_lives(ev, k))
			rp_alloc(p, k, 0);
	/* a failed request ends the run, as PyTorch's OutOfMemoryError would */
	for (int s = 0; s < ev->nsteps && p->r->oom_step < 0; s++)
		rp_step(p, s, lazy, nlazy, warm);
	for (int k = ev->step_prod[1]; k < ev->ninst; k++)
		rp_free(p, k);
}

/* prev[]: for each out-of-place sum, the root of the instance it
 * replaces (the tensor's instance before it, in production order). */
static void
rp_link(Rp *p)
{
	const MemEval *ev = p->ev;
	int *cur = xmalloc(sizeof *cur * (size_t)(p->d->nt > 0 ? p->d->nt : 1));

	for (int t = 0; t < p->d->nt; t++)
		cur[t] = -1;
	for (int k = 0; k < ev->ninst; k++) {
		int t = ev->inst[k].tensor;
		p->prev[k] = ev->inst[k].replaces && cur[t] >= 0 ? ev->inst[cur[t]].base : -1;
		cur[t] = k;
	}
	free(cur);
}

void
ca_replay(const Dag *d, const MemEval *ev, const CaOptions *o, const CaLazy *lazy,
          int nlazy, CaReplay *r)
{
	Rp p = {.d = d, .ev = ev, .r = r};
	size_t ni = (size_t)(ev->ninst > 0 ? ev->ninst : 1);
	size_t ns = (size_t)(ev->nsteps > 0 ? ev->nsteps : 1);

	memset(r, 0, sizeof *r);
	r->oom_step = -1;
	p.c = ca_new(o);
	p.h = xmalloc(sizeof *p.h * ni);
	p.prev = xmalloc(sizeof *p.prev * ni);
	p.end_next = xmalloc(sizeof *p.end_next * ni);
	p.end_head = xmalloc(sizeof *p.end_head * ns);
	p.held = xcalloc(ni, sizeof *p.held);
	for (int k = 0; k < ev->ninst; k++)
		p.h[k] = -1;
	for (size_t s = 0; s < ns; s++)
		p.end_head[s] = -1;
	/* bucket by last step, in reverse so each list runs in index order */
	for (int k = ev->ninst - 1; k >= 0; k--) {
		int e = ev->inst[k].end;
		p.end_next[k] = -1;
		if (rp_lives(ev, k) && e >= 0 && e < ev->nsteps) {
			p.end_next[k] = p.end_head[e];
			p.end_head[e] = k;
		}
	}
	rp_link(&p);
	if (d->npersistent > 0) {
		for (int i = 0; i < d->npersistent; i++)
			if (d->persistent_buf[i] > 0 && ca_malloc(p.c, d->persistent_buf[i]) < 0)
				r->oom_step = 0;
	} else {
		for (int c = 0; c < CAT_COUNT; c++)
			if (d->persistent[c] > 0 && ca_malloc(p.c, d->persistent[c]) < 0)
				r->oom_step = 0;
	}
	if (r->oom_step < 0)
		rp_run(&p, lazy, nlazy, true);
	r->warmup_reserved = ca_stats(p.c)->peak_reserved;
	ca_reset_peak(p.c);
	r->base = ca_stats(p.c)->allocated;
	if (r->oom_step < 0)
		rp_run(&p, lazy, nlazy, false);
	r->true_peak = ca_stats(p.c)->peak_allocated;
	r->reserved = ca_stats(p.c)->peak_reserved;
	r->segments = ca_stats(p.c)->nsegments;
	r->retries = ca_stats(p.c)->retries;
	r->ooms = ca_stats(p.c)->ooms;
	ca_delete(p.c);
	free(p.h);
	free(p.prev);
	free(p.end_next);
	free(p.end_head);
	free(p.held);
}
