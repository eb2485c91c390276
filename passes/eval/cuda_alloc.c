/* passes/eval/cuda_alloc.c -- a model of c10's CUDA caching allocator
 * (PyTorch's c10/cuda/CUDACachingAllocator.cpp; one device, one stream, no
 * CUDA graphs), so that a sequence of allocations and frees tells what
 * torch.cuda.max_memory_allocated and max_memory_reserved would report
 * (docs/runtime-pytorch.md, "The caching allocator, simulated").
 *
 * The rules, as c10 states them:
 * - a request is rounded up to a multiple of 512 B (CA_MIN_BLOCK);
 * - up to 1 MiB it is served from the small pool, else the large pool;
 * - best fit: the smallest free block of the pool that holds it, the lowest
 *   address among equal sizes;
 * - no block fits: a new segment (cudaMalloc) of 2 MiB for a small request,
 *   20 MiB for a request under 10 MiB, else the request rounded up to 2 MiB;
 * - the block is split when the remainder is at least 512 B (small pool) or
 *   more than 1 MiB (large pool), else the remainder stays in the block;
 * - a freed block merges with free neighbours of its segment.
 * Options (PYTORCH_CUDA_ALLOC_CONF): max_split_size_mb (blocks that large
 * are never split, serve only requests that large, and then only when they
 * waste under 20 MiB), expandable_segments (one segment per pool that grows
 * by mapping 2 MiB (small) or 20 MiB (large) pages, and splits any
 * remainder of 512 B or more), and a device capacity: a cudaMalloc past it
 * fails, then the allocator frees cached blocks and tries again, as c10
 * does, before it reports out of memory.
 *
 * Free blocks sit in one treap per pool ordered by (size, address), so
 * best fit is a lower bound; blocks are indices into one array, and a block
 * a caller holds keeps its index until it is freed. */
#include <stdlib.h>
#include <string.h>

#include "eval.h"

#define CA_SMALL_SIZE ((int64_t)1 << 20)        /* largest small request */
#define CA_SMALL_BUFFER ((int64_t)2 << 20)      /* a small segment */
#define CA_MIN_LARGE_ALLOC ((int64_t)10 << 20)  /* under it: a 20 MiB segment */
#define CA_ROUND_LARGE ((int64_t)2 << 20)       /* large segments round to it */
#define CA_LARGE_BUFFER ((int64_t)20 << 20)     /* the shared large segment */
/* Where the model's own segments start: an address no recorded segment of
 * a 64-bit process has (they sit near 0x7f..), so state rebuilt from a
 * record and new segments never overlap. */
#define CA_FIRST_ADDRESS ((int64_t)1 << 40)
/* An expandable segment's address space without a capacity: c10 reserves
 * 1 1/8 of the device's memory; unlimited, 2^46 bytes (64 TiB). */
#define CA_UNLIMITED_SPACE ((int64_t)1 << 46)

enum { B_FREE, B_USED, B_UNMAPPED, B_DEAD };

typedef struct Blk {
	int64_t addr, size;
	int64_t req;            /* what the caller asked for (B_USED) */
	int prev, next;         /* neighbours in the segment, or -1 */
	int seg;
	uint8_t state;
} Blk;

typedef struct Seg {
	int64_t addr, size;     /* an expandable segment: its address space */
	int64_t page;           /* expandable: the mapping unit; else 0 */
	int head, tail;         /* its first and last blocks */
	int nunmapped;          /* expandable: its unmapped blocks */
	bool small;
	bool live;              /* not yet given back */
} Seg;

struct CudaAlloc {
	CaOptions o;
	int64_t max_split;      /* o.max_split_size, or INT64_MAX for none */
	Blk *b;
	TpNode *tn;             /* b[x]'s node in a free treap while free */
	int nb, capb;
	int dead;               /* a chain (through next) of recycled blocks */
	Seg *s;
	int ns, caps;
	int root[2];            /* free treaps: [0] large pool, [1] small */
	int64_t nwhole;         /* free blocks that are whole segments: what
	                           release_cached could give back */
	int64_t next_addr;      /* where the next own segment goes */
	int64_t fixed_addr;     /* ca_next_address's, or -1 */
	CaStats st;
};

/* ---------------------------------------------------------------- rounding */

int64_t
ca_round(int64_t bytes)
{
	if (bytes < CA_MIN_BLOCK)
		return CA_MIN_BLOCK;
	return (bytes + CA_MIN_BLOCK - 1) / CA_MIN_BLOCK * CA_MIN_BLOCK;
}

int64_t
ca_segment_size(int64_t rounded)
{
	if (rounded <= CA_SMALL_SIZE)
		return CA_SMALL_BUFFER;
	if (rounded < CA_MIN_LARGE_ALLOC)
		return CA_LARGE_BUFFER;
	return (rounded + CA_ROUND_LARGE - 1) / CA_ROUND_LARGE * CA_ROUND_LARGE;
}

/* ---------------------------------------------------------------- blocks */

static int
blk_new(CudaAlloc *c, int64_t addr, int64_t size, int seg, int state)
{
	int x;
	Blk *b;

	if (c->dead >= 0) {
		x = c->dead;
		c->dead = c->b[x].next;
	} else {
		if (c->nb == c->capb) {
			c->capb = c->capb ? 2 * c->capb : 64;
			c->b = xrealloc(c->b, sizeof *c->b * (size_t)c->capb);
			c->tn = xrealloc(c->tn, sizeof *c->tn * (size_t)c->capb);
		}
		x = c->nb++;
	}
	b = &c->b[x];
	memset(b, 0, sizeof *b);
	b->addr = addr;
	b->size = size;
	b->prev = b->next = -1;
	b->seg = seg;
	b->state = (uint8_t)state;
	c->s[seg].nunmapped += state == B_UNMAPPED;
	return x;
}

static void
blk_kill(CudaAlloc *c, int x)
{
	c->s[c->b[x].seg].nunmapped -= c->b[x].state == B_UNMAPPED;
	c->b[x].state = B_DEAD;
	c->b[x].next = c->dead;
	c->dead = x;
}

static bool
blk_small(const CudaAlloc *c, int x)
{
	return c->s[c->b[x].seg].small;
}

static bool
blk_expandable(const CudaAlloc *c, int x)
{
	return c->s[c->b[x].seg].page > 0;
}

/* ---------------------------------------------------------------- free treaps */

static void
tr_insert(CudaAlloc *c, int x)
{
	/* keyed (size, addr); the priority a fixed hash of the index: the same
	 * sequence always builds the same treaps */
	c->tn[x] = (TpNode){c->b[x].size, c->b[x].addr, (uint32_t)x * 2654435761u ^ 0x5bd1e995u,
	                    {-1, -1}};
	tp_insert(c->tn, &c->root[blk_small(c, x)], x);
	/* a block in a treap keeps its neighbours (both merge and split take
	 * it out first), so being whole is settled here and at tr_erase */
	c->nwhole += c->b[x].prev < 0 && c->b[x].next < 0;
}

static void
tr_erase(CudaAlloc *c, int x)
{
	int m = tp_erase(c->tn, &c->root[blk_small(c, x)], c->b[x].size, c->b[x].addr);

	ir_assert(m == x);
	c->nwhole -= c->b[x].prev < 0 && c->b[x].next < 0;
}

/* The first free block of the pool at or after (size, addr), or -1. */
static int
tr_ceil(const CudaAlloc *c, bool small, int64_t size, int64_t addr)
{
	return tp_ceil(c->tn, c->root[small], size, addr);
}

/* The largest free block of the pool before (size, addr), or -1. */
static int
tr_floor(const CudaAlloc *c, bool small, int64_t size, int64_t addr)
{
	return tp_below(c->tn, c->root[small], size, addr);
}

/* ---------------------------------------------------------------- statistics */

static void
st_reserve(CudaAlloc *c, int64_t bytes)
{
	c->st.reserved += bytes;
	if (c->st.reserved > c->st.peak_reserved)
		c->st.peak_reserved = c->st.reserved;
}

static void
st_use(CudaAlloc *c, int x, int sign)
{
	c->st.allocated += sign * c->b[x].size;
	c->st.requested += sign * c->b[x].req;
	if (c->st.allocated > c->st.peak_allocated)
		c->st.peak_allocated = c->st.allocated;
	if (c->st.requested > c->st.peak_requested)
		c->st.peak_requested = c->st.requested;
}

/* ---------------------------------------------------------------- segments */

static int
seg_new(CudaAlloc *c, int64_t addr, int64_t size, bool small, int64_t page)
{
	Seg *s;

	if (c->ns == c->caps) {
		c->caps = c->caps ? 2 * c->caps : 16;
		c->s = xrealloc(c->s, sizeof *c->s * (size_t)c->caps);
	}
	s = &c->s[c->ns];
	s->addr = addr;
	s->size = size;
	s->page = page;
	s->small = small;
	s->live = true;
	s->head = s->tail = -1;
	s->nunmapped = 0;
	return c->ns++;
}

/* The address of the next segment the model makes: a recorded one
 * (ca_next_address) or the next free one of its own range. */
static int64_t
seg_address(CudaAlloc *c, int64_t size)
{
	int64_t at = c->next_addr;

	if (c->fixed_addr >= 0) {
		at = c->fixed_addr;
		c->fixed_addr = -1;
		return at;
	}
	c->next_addr += (size + CA_SMALL_BUFFER - 1) / CA_SMALL_BUFFER * CA_SMALL_BUFFER;
	return at;
}

static bool
fits_device(const CudaAlloc *c, int64_t bytes)
{
	return c->o.capacity <= 0 || c->st.reserved + bytes <= c->o.capacity;
}

/* cudaMalloc of a segment for a request of size bytes (rounded): a
 * block covering it, not in any treap; -1 when the device is full. */
static int
seg_malloc(CudaAlloc *c, int64_t size, bool small)
{
	int64_t bytes = ca_segment_size(size);
	int seg;

	if (!fits_device(c, bytes))
		return -1;
	seg = seg_new(c, seg_address(c, bytes), bytes, small, 0);
	st_reserve(c, bytes);
	c->st.nsegments++;
	c->st.device_allocs++;
	c->s[seg].head = c->s[seg].tail = blk_new(c, c->s[seg].addr, bytes, seg, B_USED);
	return c->s[seg].head;
}

/* cudaFree of free block x, a whole segment. */
static void
seg_release(CudaAlloc *c, int x)
{
	tr_erase(c, x);
	c->s[c->b[x].seg].live = false;
	c->st.reserved -= c->b[x].size;
	c->st.nsegments--;
	c->st.device_frees++;
	blk_kill(c, x);
}

/* ---------------------------------------------------------------- merging */

/* Merges src, a neighbour of dst, into dst when src is in the same state
 * (free or unmapped) as dst. src leaves its treap; dst is in none. */
static void
merge_into(CudaAlloc *c, int dst, int src)
{
	Blk *d = &c->b[dst], *s;

	if (src < 0 || c->b[src].state != d->state)
		return;
	s = &c->b[src];
	if (s->state == B_FREE)
		tr_erase(c, src);
	if (d->prev == src) {
		if (c->s[d->seg].head == src)
			c->s[d->seg].head = dst;
		d->addr = s->addr;
		d->prev = s->prev;
		if (d->prev >= 0)
			c->b[d->prev].next = dst;
	} else {
		if (c->s[d->seg].tail == src)
			c->s[d->seg].tail = dst;
		d->next = s->next;
		if (d->next >= 0)
			c->b[d->next].prev = dst;
	}
	d->size += s->size;
	blk_kill(c, src);
}

/* Cuts the first size bytes off block x: x keeps them, a new block of
 * state rest_state takes the remainder right after. Returns the new one. */
static int
split_front(CudaAlloc *c, int x, int64_t size, int rest_state)
{
	int r = blk_new(c, c->b[x].addr + size, c->b[x].size - size, c->b[x].seg,
	                rest_state);

	c->b[r].prev = x;
	c->b[r].next = c->b[x].next;
	if (c->b[r].next >= 0)
		c->b[c->b[r].next].prev = r;
	else
		c->s[c->b[x].seg].tail = r;
	c->b[x].next = r;
	c->b[x].size = size;
	return r;
}

/* ---------------------------------------------------------------- expandable segments */

/* A new expandable segment for the pool: all of it unmapped, one block
 * (returned). */
static int
es_new(CudaAlloc *c, bool small)
{
	int64_t page = small ? CA_SMALL_BUFFER : CA_LARGE_BUFFER;
	int64_t space = c->o.capacity > 0 ? c->o.capacity + c->o.capacity / 8
	                                  : CA_UNLIMITED_SPACE;
	int seg;

	space = (space + page - 1) / page * page;
	seg = seg_new(c, seg_address(c, space), space, small, page);
	c->s[seg].head = c->s[seg].tail = blk_new(c, c->s[seg].addr, space, seg, B_UNMAPPED);
	c->st.nsegments++;
	return c->s[seg].head;
}

/* Maps the first want bytes (rounded up to pages) of unmapped block u and
 * merges them with free neighbours; returns the free block that holds
 * them, in the treap, or -1 when the device is full. */
static int
es_map(CudaAlloc *c, int u, int64_t want)
{
	int64_t page = c->s[c->b[u].seg].page;
	int64_t bytes = (want + page - 1) / page * page;
	int p, n;

	if (bytes > c->b[u].size)
		bytes = c->b[u].size;
	if (!fits_device(c, bytes))
		return -1;
	if (bytes < c->b[u].size)
		split_front(c, u, bytes, B_UNMAPPED);
	c->b[u].state = B_FREE;
	c->s[c->b[u].seg].nunmapped--;
	p = c->b[u].prev;
	n = c->b[u].next;
	merge_into(c, u, p);
	merge_into(c, u, n);
	tr_insert(c, u);
	st_reserve(c, bytes);
	c->st.device_allocs++;
	return u;
}

/* Bytes that free and unmapped blocks from x on make together, up to need. */
static int64_t
es_room(const CudaAlloc *c, int x, int64_t need)
{
	int64_t room = 0;

	while (x >= 0 && room < need &&
	       (c->b[x].state == B_FREE || c->b[x].state == B_UNMAPPED)) {
		room += c->b[x].size;
		x = c->b[x].next;
	}
	return room;
}

/* c10's find_expandable_block: the lowest unmapped block of the pool's
 * expandable segments (with the free block just before it, if any) that
 * has size bytes of room; a new segment when none has. */
static int
es_find(CudaAlloc *c, bool small, int64_t size)
{
	for (int s = 0; s < c->ns; s++) {
		int x0;
		if (!c->s[s].live || !c->s[s].page || c->s[s].small != small)
			continue;
		/* usually the segment's only unmapped block is its tail: start
		 * there rather than walk every block */
		x0 = c->s[s].nunmapped == 1 && c->b[c->s[s].tail].state == B_UNMAPPED
		         ? c->s[s].tail : c->s[s].head;
		for (int x = x0; x >= 0; x = c->b[x].next) {
			int from = x;
			if (c->b[x].state != B_UNMAPPED)
				continue;
			if (c->b[x].prev >= 0 && c->b[c->b[x].prev].state == B_FREE)
				from = c->b[x].prev;
			if (es_room(c, from, size) >= size)
				return from;
		}
	}
	return es_new(c, small);
}

/* c10's try_allocate_expandable_block: maps pages until a free block of
 * size bytes exists; returns it out of its treap, or -1 (device full). */
static int
es_malloc(CudaAlloc *c, int64_t size, bool small)
{
	int x = es_find(c, small, size);

	if (c->b[x].state == B_UNMAPPED) {
		int64_t want = c->b[x].size < size ? c->b[x].size : size;
		if ((x = es_map(c, x, want)) < 0)
			return -1;
	}
	while (c->b[x].size < size) {
		/* x is free and unmapped space follows it: es_map merges x
		 * into the pages it maps, as c10's map_block does */
		int u = c->b[x].next;
		int64_t want = size - c->b[x].size;
		if (want > c->b[u].size)
			want = c->b[u].size;
		if ((x = es_map(c, u, want)) < 0)
			return -1;
	}
	tr_erase(c, x);
	return x;
}

/* Unmaps the whole pages inside free block x of an expandable segment. */
static void
es_unmap(CudaAlloc *c, int x)
{
	const Seg *s = &c->s[c->b[x].seg];
	int64_t lo = c->b[x].addr - s->addr, hi = lo + c->b[x].size;
	int64_t first = (lo + s->page - 1) / s->page * s->page;
	int64_t last = hi / s->page * s->page;
	int p, n;

	if (first >= last)
		return;
	tr_erase(c, x);
	if (first > lo) {
		int r = split_front(c, x, first - lo, B_FREE);
		tr_insert(c, x);
		x = r;
	}
	if (last < hi)
		tr_insert(c, split_front(c, x, last - first, B_FREE));
	c->b[x].state = B_UNMAPPED;
	c->s[c->b[x].seg].nunmapped++;
	p = c->b[x].prev;
	n = c->b[x].next;
	merge_into(c, x, p);
	merge_into(c, x, n);
	c->st.reserved -= last - first;
	c->st.device_frees++;
}

/* ---------------------------------------------------------------- freeing the cache */

/* c10's release_cached_blocks: every free block that is a whole segment
 * goes back to the device; expandable segments unmap their free pages. */
static void
release_cached(CudaAlloc *c)
{
	if (!c->o.expandable_segments && c->nwhole == 0)
		return;         /* nothing to give back: skip the scan */
	for (int small = 0; small < 2; small++) {
		int x;
		/* in ascending order; each release changes the treap, so look
		 * the next one up by key */
		int64_t size = 0, addr = 0;
		while ((x = tr_ceil(c, small, size, addr)) >= 0) {
			size = c->b[x].size;
			addr = c->b[x].addr + 1;
			if (blk_expandable(c, x))
				es_unmap(c, x);
			else if (c->b[x].prev < 0 && c->b[x].next < 0)
				seg_release(c, x);
		}
	}
	for (int s = 0; c->o.expandable_segments && s < c->ns; s++) {
		/* an expandable segment with nothing mapped goes too */
		int h = c->s[s].head;
		if (c->s[s].live && c->s[s].page && c->b[h].state == B_UNMAPPED &&
		    c->b[h].next < 0) {
			c->s[s].live = false;
			c->st.nsegments--;
			blk_kill(c, h);
		}
	}
}

/* c10's release_available_cached_blocks (only with max_split_size): frees
 * the smallest whole oversize segment that is as large as the request, or
 * else oversize ones from the largest down until that much is freed.
 * True when something was freed. */
static bool
release_oversize(CudaAlloc *c, int64_t size, bool small)
{
	int64_t want = size < c->max_split ? c->max_split : size, freed = 0;
	int x = tr_ceil(c, small, want, 0);

	while (x >= 0 && (c->b[x].prev >= 0 || c->b[x].next >= 0))
		x = tr_ceil(c, small, c->b[x].size, c->b[x].addr + 1);
	if (x >= 0) {
		seg_release(c, x);
		return true;
	}
	x = tr_floor(c, small, INT64_MAX, 0);
	while (x >= 0 && freed < want && c->b[x].size >= c->max_split) {
		int below = tr_floor(c, small, c->b[x].size, c->b[x].addr);
		if (c->b[x].prev < 0 && c->b[x].next < 0) {
			freed += c->b[x].size;
			seg_release(c, x);
		}
		x = below;
	}
	return freed >= want;
}

/* ---------------------------------------------------------------- malloc and free */

/* Expandable blocks are compared by what they can grow to (c10: a free
 * block followed by unmapped space counts that space). */
static int64_t
grow_size(const CudaAlloc *c, int x)
{
	int n = c->b[x].next;

	return c->b[x].size + (n >= 0 && c->b[n].state == B_UNMAPPED ? c->b[n].size : 0);
}

/* c10's get_free_block: best fit with the max_split_size rules; the block
 * out of its treap, or -1. */
static int
find_free(CudaAlloc *c, int64_t size, bool small)
{
	int x = tr_ceil(c, small, size, 0);

	if (x < 0)
		return -1;
	if (blk_expandable(c, x)) {
		int n = tr_ceil(c, small, c->b[x].size, c->b[x].addr + 1);
		while (n >= 0 && blk_expandable(c, x) && grow_size(c, n) < grow_size(c, x)) {
			x = n;
			n = tr_ceil(c, small, c->b[x].size, c->b[x].addr + 1);
		}
	}
	if (size < c->max_split && c->b[x].size >= c->max_split)
		return -1;
	if (size >= c->max_split && c->b[x].size >= size + CA_LARGE_BUFFER)
		return -1;
	tr_erase(c, x);
	return x;
}

/* A new segment (or mapped pages), with c10's two retries. */
static int
grow(CudaAlloc *c, int64_t size, bool small)
{
	int x;

	for (int attempt = 0; attempt < 3; attempt++) {
		if (attempt == 1 && (c->max_split == INT64_MAX ||
		                     !release_oversize(c, size, small)))
			continue;
		if (attempt == 2) {
			release_cached(c);
			c->st.retries++;
		}
		x = c->o.expandable_segments ? es_malloc(c, size, small)
		                             : seg_malloc(c, size, small);
		if (x >= 0)
			return x;
	}
	return -1;
}

static bool
should_split(const CudaAlloc *c, int x, int64_t size)
{
	int64_t rest = c->b[x].size - size;

	if (blk_small(c, x) || c->o.expandable_segments)
		return rest >= CA_MIN_BLOCK;
	return size < c->max_split && rest > CA_SMALL_SIZE;
}

int
ca_malloc(CudaAlloc *c, int64_t bytes)
{
	int64_t size = ca_round(bytes);
	bool small = size <= CA_SMALL_SIZE;
	int x = find_free(c, size, small);

	if (x < 0 && (x = grow(c, size, small)) < 0) {
		c->st.ooms++;
		return -1;
	}
	if (should_split(c, x, size))
		tr_insert(c, split_front(c, x, size, B_FREE));
	c->b[x].state = B_USED;
	c->b[x].req = bytes;
	st_use(c, x, 1);
	return x;
}

static void
check_handle(const CudaAlloc *c, int h)
{
	ir_assert(h >= 0 && h < c->nb && c->b[h].state == B_USED);
}

void
ca_release(CudaAlloc *c, int h)
{
	int p, n;

	check_handle(c, h);
	st_use(c, h, -1);
	c->b[h].state = B_FREE;
	c->b[h].req = 0;
	p = c->b[h].prev;
	n = c->b[h].next;
	merge_into(c, h, p);
	merge_into(c, h, n);
	tr_insert(c, h);
}

int64_t
ca_addr(const CudaAlloc *c, int h)
{
	check_handle(c, h);
	return c->b[h].addr;
}

int64_t
ca_size(const CudaAlloc *c, int h)
{
	check_handle(c, h);
	return c->b[h].size;
}

/* ---------------------------------------------------------------- state */

CudaAlloc *
ca_new(const CaOptions *o)
{
	CudaAlloc *c = xcalloc(1, sizeof *c);

	if (o)
		c->o = *o;
	c->max_split = c->o.max_split_size > 0 ? c->o.max_split_size : INT64_MAX;
	c->dead = -1;
	c->root[0] = c->root[1] = -1;
	c->next_addr = CA_FIRST_ADDRESS;
	c->fixed_addr = -1;
	return c;
}

void
ca_delete(CudaAlloc *c)
{
	if (!c)
		return;
	free(c->b);
	free(c->tn);
	free(c->s);
	free(c);
}

const CaStats *
ca_stats(const CudaAlloc *c)
{
	return &c->st;
}

void
ca_reset_peak(CudaAlloc *c)
{
	c->st.peak_allocated = c->st.allocated;
	c->st.peak_reserved = c->st.reserved;
	c->st.peak_requested = c->st.requested;
}

void
ca_empty_cache(CudaAlloc *c)
{
	release_cached(c);
}

void
ca_next_address(CudaAlloc *c, int64_t addr)
{
	c->fixed_addr = addr;
}

bool
ca_add_segment(CudaAlloc *c, int64_t addr, int64_t size, bool small)
{
	int seg;

	if (c->o.expandable_segments || size <= 0 || addr < 0)
		return false;
	for (int s = 0; s < c->ns; s++)
		if (c->s[s].live && addr < c->s[s].addr + c->s[s].size &&
		    c->s[s].addr < addr + size)
			return false;
	seg = seg_new(c, addr, size, small, 0);
	st_reserve(c, size);
	c->st.nsegments++;
	c->s[seg].head = c->s[seg].tail = blk_new(c, addr, size, seg, B_FREE);
	tr_insert(c, c->s[seg].head);
	return true;
}

int
ca_claim(CudaAlloc *c, int64_t addr, int64_t size)
{
	int x = -1;

	if (size <= 0)
		return -1;
	for (int i = 0; i < c->nb && x < 0; i++)
		if (c->b[i].state == B_FREE && c->b[i].addr <= addr &&
		    addr + size <= c->b[i].addr + c->b[i].size)
			x = i;
	if (x < 0)
		return -1;
	tr_erase(c, x);
	if (c->b[x].addr < addr) {
		int r = split_front(c, x, addr - c->b[x].addr, B_FREE);
		tr_insert(c, x);
		x = r;
	}
	if (c->b[x].size > size)
		tr_insert(c, split_front(c, x, size, B_FREE));
	c->b[x].state = B_USED;
	c->b[x].req = size;
	st_use(c, x, 1);
	return x;
}
