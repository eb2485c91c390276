/* passes/eval/eval.h -- the evaluators of a schedule on the plain DAG:
 * the linear liveness evaluator every level uses (liveness.c), the
 * independent verifier behind --verify (verify.c), the memory planner
 * that gives every instance an arena offset (memplan.c), and a model of
 * PyTorch's CUDA caching allocator (cuda_alloc.c) that a schedule's
 * allocations can be replayed through (cuda_replay.c); the planner and
 * the allocator keep their free space in one ordered set (treap.c). DAG
 * only: nothing here knows .net.
 */
#ifndef REMAT_EVAL_H
#define REMAT_EVAL_H

#include "dag.h"

/* ---------------------------------------------------------------- passes/eval/liveness.c */
/* Evaluates a schedule in O(steps + uses). Fills *ev (arrays in a). */
void lv_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a);
/* An evaluation kept to resume from (the file's comment): lv_eval_from
 * gives lv_eval's result, running the first pass only from the last
 * snapshot within the steps its schedule shares with the anchor's. An
 * anchor lives in a; lv_anchor_free frees what it keeps (it may be set
 * again). An empty or invalid anchor, or another Dag's, resumes nothing. */
typedef struct LvAnchor LvAnchor;
LvAnchor *lv_anchor_new(Arena *a);
void lv_anchor_free(LvAnchor *A);
/* lv_eval, and s becomes A's schedule (when it is valid). Both leave
 * ev->breakdown zero: the planner, which scores with them, never reads it
 * (filling it was 1-4% of -O2); lv_breakdown fills it. */
void lv_eval_anchor(LvAnchor *A, const Dag *d, const Schedule *s, MemEval *ev, Arena *a);
/* ev's kinds, products and instances live in A until the next
 * lv_eval_from of A or A's next schedule (the rest in a). */
void lv_eval_from(LvAnchor *A, const Dag *d, const Schedule *s, MemEval *ev, Arena *a);
/* ev->breakdown from the rest of ev (lv_eval's, of a schedule on d). */
void lv_breakdown(const Dag *d, MemEval *ev);
/* Marks ev invalid with the message, unless it is invalid already: the
 * first error wins (lv_eval's and vf_eval's). */
void ev_fail(MemEval *ev, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* ---------------------------------------------------------------- passes/eval/verify.c */
/* An independent, simple (linear) evaluator for --verify. Returns true
 * when it agrees with ev on validity, every step's live_bytes, the peak and
 * peak_step; otherwise writes the first disagreement to why. */
bool vf_check(const Dag *d, const Schedule *s, const MemEval *ev,
              char *why, size_t n);
/* The verifier's own evaluator: fills valid, error, nsteps, kind,
 * live_bytes, temp_bytes, peak, peak_step and recompute_cost of ev (arrays
 * in a); inst, step_prod and breakdown stay empty. */
void vf_eval(const Dag *d, const Schedule *s, MemEval *ev, Arena *a);
/* Evaluates s into ev with lv_eval; with verify, replays it through
 * vf_check. Reports an invalid schedule or a disagreement on stderr and
 * returns ST_INTERNAL; otherwise ST_OK. */
Status vf_evaluate(const Dag *d, const Schedule *s, MemEval *ev, bool verify,
                   Arena *a);

/* ---------------------------------------------------------------- passes/eval/memplan.c */
/* The placements the memory planner knows (docs/memory-model.md, "The
 * arena"): the linear scan runs on every graph, the others (placement.c)
 * on at most MP_SEARCH_MAX extents and within a count of work. */
typedef enum MpMethod {
	MP_LINEAR_SCAN,         /* by start, best fit: O(n log n) */
	MP_SIZE_BEST_FIT, MP_SIZE_FIRST_FIT,    /* greedy by size */
	MP_BREADTH_BEST_FIT, MP_BREADTH_FIRST_FIT,      /* greedy by breadth */
	MP_SKYLINE_AREA, MP_SKYLINE_SIZE, MP_SKYLINE_LENGTH,
	MP_SKYLINE_PERTURBED,   /* skyline restarts, priorities perturbed */
	MP_SKYLINE_BOUNDED,     /* the skyline under bounds below the best so far */
	MP_METHOD_COUNT,
	MP_ALL = MP_METHOD_COUNT        /* mp_plan_with: the smallest of them all */
} MpMethod;

enum {
	MP_ALIGN = 256,                 /* every offset and extent size */
	MP_SEARCH_MAX = 1 << 16,        /* most extents the search takes */
	MP_GREEDY_MAX = 1 << 14,        /* most extents on which greedy by size
	                                   (best fit) runs whatever the work it
	                                   costs, so that no arena is larger
	                                   than the scan-or-greedy plan before
	                                   the search */
};

/* What one plan tried. */
typedef struct MpStats {
	int64_t floor;          /* the aligned lower bound (MemEval.arena_floor) */
	int64_t arena[MP_METHOD_COUNT]; /* each method's best arena; -1 when it
	                           did not run or ran out of work */
	MpMethod chosen;        /* the one whose offsets were kept */
	int nextents;            /* instances and temporary extents placed */
	int runs;               /* placements tried, restarts included */
	int64_t work;           /* units of work the search spent */
} MpStats;

/* Assigns 256-byte-aligned offsets to every persistent buffer (first, for
 * the whole training step; d may be NULL for none), every owning instance and every
 * step's temporary extent, so that two extents overlap only when never live at
 * the same step. Returns arena bytes (largest end offset), which is at least
 * ev->arena_floor (set here: the persistent bytes and the most bytes live
 * at one step, each extent rounded up to 256), itself at least the peak of
 * ev. The linear scan is O(n log n) in the number of extents; the search
 * after it stops at the floor and is bounded by a count of work. */
int64_t mp_plan(const Dag *d, MemEval *ev, Arena *a);
/* mp_plan with share (in (0, 1]) of the search's work: a pipeline stage's. */
int64_t mp_plan_share(const Dag *d, MemEval *ev, double share, Arena *a);
/* Views keep their base alive: end[k] is instance k's last live step,
 * widened over the views of it (mp_plan's lifetimes, and the emitter's). */
void mp_widen_ends(const MemEval *ev, int64_t *end);
/* mp_plan with one method only (MP_ALL: the search as mp_plan runs it);
 * st, when not NULL, receives what was tried. A single method that cannot
 * run (too many extents, out of work) leaves the linear scan's offsets. */
int64_t mp_plan_with(const Dag *d, MemEval *ev, Arena *a, MpMethod only, MpStats *st);
const char *mp_method_name(MpMethod m);  /* "skyline by area", ... */

/* ---------------------------------------------------------------- passes/eval/placement.c */
/* An extent to place: size a multiple of MP_ALIGN, live at steps start..end. */
typedef struct MpExtent {
	int64_t size;
	int64_t off;            /* out */
	int start, end;
} MpExtent;
/* The placements' state for n extents (arrays sized once, in a, and used
 * again by every placement) and the units of work they may spend. */
typedef struct MpPlacer MpPlacer;
MpPlacer *mp_placer(MpExtent *b, int n, int64_t work, Arena *a);
/* Places the extents by method m (not MP_LINEAR_SCAN; seed picks the
 * perturbation of MP_SKYLINE_PERTURBED): sets every off so that extents
 * that share a step do not overlap, and returns the top (largest end), or
 * -1 when the work ran out before every extent was placed. Deterministic;
 * ties go to the lower index. MP_SKYLINE_BOUNDED starts from the placement
 * in b (the caller's best) and never returns -1: out of work, it keeps the
 * least top found, that one at worst. */
int64_t mp_place(MpPlacer *p, MpMethod m, uint64_t seed);
int64_t mp_work_left(const MpPlacer *p);
void mp_work_set(MpPlacer *p, int64_t work);     /* the units left, now */

/* passes/eval/memplan.c: the layout of step s's temporary extent, which holds
 * ev->temp_bytes[s] bytes exactly: the accumulation temporaries by element
 * size, largest first (so each is naturally aligned without padding), then
 * the workspace. off[j] (j < node.nacc) is acc j's offset in the extent, or
 * -1 when that entry produces its gradient; off[nacc] is the workspace's.
 * Returns the extent's bytes. mp_plan plans the extents too
 * (ev->temp_offset), so the arena covers every byte the MemEval counts. */
int64_t mp_temp_layout(const Dag *d, const MemEval *ev, const Schedule *s,
                       int step, int64_t *off);

/* ---------------------------------------------------------------- passes/eval/treap.c */
/* An ordered set of distinct keys (k1, k2) over nodes in the caller's array
 * (-1: none). The caller sets a node's keys and priority (a fixed hash, so
 * the same inserts build the same tree) before tp_insert, and may reuse it
 * after tp_erase; a key may change in place while it keeps its order. */
typedef struct TpNode {
	int64_t k1, k2;
	uint64_t pri;
	int kid[2];             /* set by tp_insert */
} TpNode;
void tp_insert(TpNode *n, int *root, int x);
int tp_erase(TpNode *n, int *root, int64_t k1, int64_t k2);    /* must be there */
/* Removes the smallest key >= (k1, k2) in one descent; returns its node,
 * or -1 when there is none. */
int tp_erase_ceil(TpNode *n, int *root, int64_t k1, int64_t k2);
int tp_ceil(const TpNode *n, int root, int64_t k1, int64_t k2);  /* smallest >=, or -1 */
int tp_below(const TpNode *n, int root, int64_t k1, int64_t k2); /* largest <, or -1 */

/* ---------------------------------------------------------------- passes/eval/cuda_alloc.c */
/* c10's CUDA caching allocator (PyTorch's CUDACachingAllocator.cpp), one
 * device and one stream: the pools, rounding, segment sizes, best fit,
 * splitting and merging, and the PYTORCH_CUDA_ALLOC_CONF options below
 * (docs/runtime-pytorch.md, "The caching allocator, simulated"). */
#define CA_MIN_BLOCK 512        /* every request rounds up to a multiple */
typedef struct CaOptions {
	int64_t max_split_size; /* max_split_size_mb, in bytes; 0: none */
	bool expandable_segments;
	int64_t capacity;       /* bytes of segments the device can hold; 0:
	                           unlimited. Past it a cudaMalloc fails, and
	                           the allocator frees cached segments and
	                           tries again before it gives up. */
} CaOptions;
typedef struct CaStats {
	int64_t allocated;      /* bytes of allocated blocks (memory_allocated) */
	int64_t reserved;       /* bytes of segments (memory_reserved) */
	int64_t requested;      /* bytes the callers asked for */
	int64_t peak_allocated, peak_reserved, peak_requested; /* since
	                           ca_new or ca_reset_peak */
	int64_t nsegments;      /* segments now (expandable: one each) */
	int64_t device_allocs;  /* cudaMalloc calls (expandable: mappings) */
	int64_t device_frees;
	int64_t retries;        /* cudaMallocs retried after freeing the cache */
	int64_t ooms;           /* requests that failed */
} CaStats;
typedef struct CudaAlloc CudaAlloc;
CudaAlloc *ca_new(const CaOptions *o);          /* o NULL: the defaults */
void ca_delete(CudaAlloc *c);
/* Serves a request of bytes (> 0): a handle >= 0 that stays valid until
 * ca_release, or -1 when the device is full (CaOptions.capacity). */
int ca_malloc(CudaAlloc *c, int64_t bytes);
void ca_release(CudaAlloc *c, int h);
int64_t ca_addr(const CudaAlloc *c, int h);     /* the block's address */
int64_t ca_size(const CudaAlloc *c, int h);     /* and its bytes */
const CaStats *ca_stats(const CudaAlloc *c);
void ca_reset_peak(CudaAlloc *c);       /* reset_peak_memory_stats */
void ca_empty_cache(CudaAlloc *c);      /* torch.cuda.empty_cache */
int64_t ca_round(int64_t bytes);        /* the block size of a request */
/* The segment a request of rounded bytes gets when no free block fits. */
int64_t ca_segment_size(int64_t rounded);
/* Rebuilding a recorded state (tests/unit/test_cuda_alloc.c): a free
 * segment at addr (false if it overlaps one, or with expandable
 * segments); a block allocated at [addr, addr + size) inside one free
 * block (its handle, or -1 when no free block holds it); the address the
 * next new segment gets (a recorded cudaMalloc). */
bool ca_add_segment(CudaAlloc *c, int64_t addr, int64_t size, bool small);
int ca_claim(CudaAlloc *c, int64_t addr, int64_t size);
void ca_next_address(CudaAlloc *c, int64_t addr);

/* ---------------------------------------------------------------- passes/eval/cuda_replay.c */
/* A buffer a library makes the first time a step runs and keeps (cuBLAS's
 * workspace of a handle and stream). */
typedef struct CaLazy {
	int step;
	int64_t bytes;
} CaLazy;
/* What the allocator holds over the measured step of a training loop. */
typedef struct CaReplay {
	int64_t true_peak;      /* most bytes in allocated blocks
	                           (max_memory_allocated) */
	int64_t reserved;       /* most bytes in segments (max_memory_reserved) */
	int64_t warmup_reserved; /* the same over the warm-up step */
	int64_t base;           /* allocated when the measured step starts */
	int64_t segments;       /* segments at the end */
	int64_t retries, ooms;  /* cudaMallocs retried after freeing the cache;
	                           requests that failed (CaOptions.capacity) */
	int oom_step;           /* the first step a request failed at, or -1 */
} CaReplay;
/* Replays schedule ev of d through a fresh allocator (options o, NULL for
 * the defaults): persistent buffers, a warm-up step (which also makes the
 * lazy buffers at their steps), then the measured step; fills *r. The
 * first request that fails ends the replay. */
void ca_replay(const Dag *d, const MemEval *ev, const CaOptions *o, const CaLazy *lazy,
               int nlazy, CaReplay *r);

#endif
