/* ir/util/arena.c -- bump allocation with one lifetime per arena, and the
 * allocation wrappers that die on out-of-memory. */
#if defined(__linux__)
#define _DEFAULT_SOURCE         /* madvise's MADV_HUGEPAGE, a Linux hint */
#include <sys/mman.h>
#include <unistd.h>
#endif
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

struct ArenaChunk {
	ArenaChunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

enum { CHUNK_MIN = 64 * 1024 };

/* Large growing arrays (the graph's tensors and ops) live on the heap,
 * tracked by the arena, so that doubling them frees the old copy instead of
 * leaving it in a chunk: a million-op graph would otherwise keep every
 * generation. Small ones are copied within the arena. */
enum { GROW_HEAP_MIN = 256 * 1024 };

struct ArenaHeap {
	ArenaHeap *next;
	void *p;
};

/* Large blocks ask for 2 MiB pages where the kernel gives them on request
 * (transparent huge pages in "madvise" mode, Debian's default): a
 * million-op graph touches about 1 GB, and in 4 KiB pages that is 254k
 * page faults (110k with the hint; -O0's system time there 1.0-1.8 ->
 * 0.6-1.0 s, -O2's 4.6 -> 2.5 s). Only a hint: where it is refused
 * nothing changes. It covers the block's pages whole: malloc maps a large
 * block alone, and a mapping split into a hinted part and the rest could
 * not be moved by mremap, so realloc would copy it. Blocks below HUGE_MIN
 * are left: a huge page is filled in whole when first touched, and with
 * blocks from 32 MiB on the peak RSS of `make bench-repro`'s 300k unused
 * ops rose from 95,900 KiB to as much as 99,972 (issue 15: 97,656); from
 * 64 MiB on it stays within 100 KiB of it. */
enum { HUGE_MIN = 64 << 20 };

static void
huge_hint(void *p, size_t n)
{
#if defined(MADV_HUGEPAGE)
	static uintptr_t page;

	if (n < HUGE_MIN)
		return;
	if (!page) {
		long ps = sysconf(_SC_PAGESIZE);
		page = ps > 0 ? (uintptr_t)ps : 4096;
	}
	uintptr_t lo = (uintptr_t)p & ~(page - 1);
	uintptr_t hi = ((uintptr_t)p + n + page - 1) & ~(page - 1);
	(void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
	(void)p;
	(void)n;
#endif
}

static _Noreturn void
oom(size_t n)
{
	fprintf(stderr, "remat: out of memory (asking for %zu bytes)\n", n);
	exit(4);
}

void *
xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		oom(n);
	huge_hint(p, n);
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		oom(n * size);
	huge_hint(p, n * size);         /* calloc checked the product */
	return p;
}

void *
xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom(n);
	huge_hint(p, n);
	return p;
}

void
ar_init(Arena *a)
{
	a->head = NULL;
	a->heap = NULL;
	a->total = 0;
	a->kids = NULL;
	a->next_kid = NULL;
}

Arena *
ar_child(Arena *a)
{
	Arena *k = ar_alloc(a, sizeof *k);

	ar_init(k);
	k->next_kid = a->kids;
	a->kids = k;
	return k;
}

/* Large chunks an arena frees are kept for the next arena that needs one,
 * rather than given back: glibc maps each block of 32 MiB or more on its
 * own, so a planner that evaluates a million-op plan in a fresh scratch
 * arena, again and again, unmapped and faulted in its hundreds of
 * megabytes every time (a third of -O2's time at 1M ops in the kernel).
 * A chunk is taken only by a request it fits without wasting more than
 * three quarters of it, and a request no kept chunk fits first frees the
 * ones too small for it; ar_trim frees them all between passes (the
 * driver's heap_return), so the cache lives within one pass's loop.
 * Single-threaded, as remat is. */
enum { CACHE_MIN = 32u << 20, CACHE_SLOTS = 8 };
static ArenaChunk *chunk_cache[CACHE_SLOTS];

static bool
cache_put(ArenaChunk *b)
{
	if (b->cap < CACHE_MIN)
		return false;
	for (int i = 0; i < CACHE_SLOTS; i++)
		if (!chunk_cache[i]) {
			chunk_cache[i] = b;
			return true;
		}
	return false;
}

/* A kept chunk of at least cap bytes and at most four times that, the
 * smallest; else NULL, having freed every kept chunk smaller than cap. */
static ArenaChunk *
cache_take(size_t cap)
{
	int best = -1;

	if (cap < CACHE_MIN / 4)
		return NULL;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		ArenaChunk *b = chunk_cache[i];
		if (b && b->cap >= cap && b->cap / 4 <= cap &&
		    (best < 0 || b->cap < chunk_cache[best]->cap))
			best = i;
	}
	if (best >= 0) {
		ArenaChunk *b = chunk_cache[best];
		chunk_cache[best] = NULL;
		return b;
	}
	for (int i = 0; i < CACHE_SLOTS; i++)
		if (chunk_cache[i] && chunk_cache[i]->cap < cap) {
			free(chunk_cache[i]);
			chunk_cache[i] = NULL;
		}
	return NULL;
}

void
ar_trim(void)
{
	for (int i = 0; i < CACHE_SLOTS; i++) {
		free(chunk_cache[i]);
		chunk_cache[i] = NULL;
	}
}

void
ar_free(Arena *a)
{
	ArenaChunk *b, *next;

	/* the children's records live in this arena's chunks: them first */
	for (Arena *k = a->kids; k; k = k->next_kid)
		ar_free(k);
	a->kids = NULL;

	for (ArenaHeap *h = a->heap; h; h = h->next)
		free(h->p);
	a->heap = NULL;
	for (b = a->head; b; b = next) {
		next = b->next;
		if (!cache_put(b))
			free(b);
	}
	a->head = NULL;
	a->total = 0;
}

/* n bytes at the given alignment (a power of two, at most 16), not
 * zeroed. Strings take alignment 1: rounding each name up to 16 bytes
 * cost a 300k-statement file a fifth of its syntax tree. */
static void *
bump_raw(Arena *a, size_t n, size_t align)
{
	ArenaChunk *b = a->head;
	size_t cap, at = b ? (b->used + align - 1) & ~(align - 1) : 0;
	void *p;

	if (!b || at > b->cap || b->cap - at < n) {
		cap = n > CHUNK_MIN ? n : CHUNK_MIN;
		if (b && cap < b->cap * 2 && b->cap < (64u << 20))
			cap = b->cap * 2 > n ? b->cap * 2 : n;
		if (!(b = cache_take(cap))) {
			b = xmalloc(sizeof *b + cap);
			b->cap = cap;
		}
		b->used = 0;
		b->next = a->head;
		a->head = b;
		at = 0;
	}
	p = b->data + at;
	b->used = at + n;
	a->total += n;
	return p;
}

static void *
bump(Arena *a, size_t n, size_t align)
{
	return memset(bump_raw(a, n, align), 0, n);
}

void *
ar_alloc(Arena *a, size_t n)
{
	return bump(a, (n + 15) & ~(size_t)15, 16);
}

void *
ar_array(Arena *a, size_t n, size_t size)
{
	return memset(ar_array_raw(a, n, size), 0, n * size);
}

void *
ar_array_raw(Arena *a, size_t n, size_t size)
{
	size_t align = size & -size;    /* an alignment always divides the size */

	ir_assert(size && n <= SIZE_MAX / size);
	return bump_raw(a, n * size, align < 16 ? align : 16);
}

static ArenaHeap **
find_heap(Arena *a, void *p)
{
	ArenaHeap **h;

	for (h = &a->heap; *h; h = &(*h)->next)
		if ((*h)->p == p)
			return h;
	return NULL;
}

void *
ar_grow(Arena *a, void *old, size_t oldn, size_t newn)
{
	ArenaHeap **h = old ? find_heap(a, old) : NULL, *n;
	void *p;

	if (h) {
		/* the new tail is left as realloc gives it: callers fill each
		 * element as they append it, and zeroing the whole capacity
		 * would fault in pages that are never used */
		p = xrealloc(old, newn);
		(*h)->p = p;
		return p;
	}
	if (newn < GROW_HEAP_MIN) {
		/* aligned as the size allows, as ar_array: the one-element
		 * name and argument lists of a big tree would take 32 bytes
		 * for 24 */
		size_t align = newn & -newn;

		p = newn ? bump(a, newn, align < 16 ? align : 16) : ar_alloc(a, 0);
	} else {
		p = xcalloc(1, newn);
		n = ar_alloc(a, sizeof *n);
		n->p = p;
		n->next = a->heap;
		a->heap = n;
	}
	if (old && oldn)
		memcpy(p, old, oldn < newn ? oldn : newn);
	return p;
}

void *
ar_fit(Arena *a, void *v, int n, int *cap, size_t size, int min)
{
	int k;

	if (n < *cap)
		return v;
	ir_assert(*cap <= INT_MAX / 2);
	k = 2 * *cap > min ? 2 * *cap : min;
	v = ar_grow(a, v, size * (size_t)*cap, size * (size_t)k);
	*cap = k;
	return v;
}

void
ar_release(Arena *a, void *p)
{
	ArenaHeap **h = p ? find_heap(a, p) : NULL;

	if (h) {
		free(p);
		*h = (*h)->next;        /* its record stays in a chunk until ar_free */
	}
}

char *
ar_strndup(Arena *a, const char *s, size_t n)
{
	char *p = bump(a, n + 1, 1);

	memcpy(p, s, n);
	p[n] = 0;
	return p;
}

char *
ar_strdup(Arena *a, const char *s)
{
	return ar_strndup(a, s, strlen(s));
}

char *
ar_cat(Arena *a, const char *s1, const char *s2, const char *s3)
{
	size_t n1 = strlen(s1), n2 = strlen(s2), n3 = strlen(s3);
	char *p = bump(a, n1 + n2 + n3 + 1, 1);

	memcpy(p, s1, n1);
	memcpy(p + n1, s2, n2);
	memcpy(p + n1 + n2, s3, n3);
	return p;
}

char *
ar_printf(Arena *a, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *p, buf[256];

	/* one formatting pass when it fits (ids, a few million of them) */
	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	ir_assert(n >= 0);
	if ((size_t)n < sizeof buf)
		return ar_strndup(a, buf, (size_t)n);
	p = bump(a, (size_t)n + 1, 1);
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

void
ir_die(const char *file, int line, const char *what)
{
	fprintf(stderr, "remat: internal error at %s:%d: %s\n", file, line, what);
	exit(4);
}
