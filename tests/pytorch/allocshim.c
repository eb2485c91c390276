/* tests/pytorch/allocshim.c -- an LD_PRELOAD allocation counter for the
 * PyTorch peer harness. PyTorch's CPU allocator takes every tensor buffer
 * from c10::alloc_cpu and returns it to c10::free_cpu (libc10.so); this
 * shim interposes both, so shim_bytes() is the bytes of live tensor storage
 * at any moment (what the profiler's memory events count), without the
 * oneDNN scratchpads or Python objects that malloc-level hooks would see.
 * The harness reads it through ctypes after every aten op (operator
 * boundaries); shim_max() is the most bytes live at any moment since
 * shim_reset_max() (a run whose ops the harness cannot see one by one). An
 * open-addressing table maps each live pointer to its size
 * (free_cpu does not pass it); a lock keeps intra-op threads safe. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CAP (1u << 22)                  /* live allocations, a power of 2 */
#define TOMB ((void *)1)

static void *(*real_alloc)(size_t);
static void (*real_free)(void *);
static void *keys[CAP];
static size_t vals[CAP];
static long long cur, most;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

long long shim_bytes(void);
long long shim_max(void);
void shim_reset_max(void);
void *_ZN3c109alloc_cpuEm(size_t n);
void _ZN3c108free_cpuEPv(void *p);

long long
shim_bytes(void)
{
	return cur;
}

long long
shim_max(void)
{
	return most;
}

void
shim_reset_max(void)
{
	pthread_mutex_lock(&mu);
	most = cur;
	pthread_mutex_unlock(&mu);
}

static unsigned
slot(const void *p)
{
	uint64_t x = (uint64_t)(uintptr_t)p >> 4;

	x ^= x >> 17;
	x *= 0x9E3779B97F4A7C15ull;
	return (unsigned)(x >> 40) & (CAP - 1);
}

/* The real functions: libc10.so is loaded (RTLD_LOCAL, by torch's
 * extension module) before the first tensor is made, so RTLD_NEXT cannot
 * see it; its already-loaded handle can. */
static void
resolve(void)
{
	void *h;

	if (real_alloc && real_free)
		return;
	h = dlopen("libc10.so", RTLD_LAZY | RTLD_NOLOAD);
	if (h) {
		real_alloc = (void *(*)(size_t))dlsym(h, "_ZN3c109alloc_cpuEm");
		real_free = (void (*)(void *))dlsym(h, "_ZN3c108free_cpuEPv");
	}
	if (!real_alloc || !real_free) {
		fputs("allocshim: c10::alloc_cpu/free_cpu not found\n", stderr);
		abort();
	}
}

/* c10::alloc_cpu(size_t) */
void *
_ZN3c109alloc_cpuEm(size_t n)
{
	void *p;
	unsigned i;

	resolve();
	p = real_alloc(n);
	if (!p)
		return p;
	pthread_mutex_lock(&mu);
	for (i = slot(p); keys[i] && keys[i] != TOMB; i = (i + 1) & (CAP - 1))
		;
	keys[i] = p;
	vals[i] = n;
	cur += (long long)n;
	if (cur > most)
		most = cur;
	pthread_mutex_unlock(&mu);
	return p;
}

/* c10::free_cpu(void *) */
void
_ZN3c108free_cpuEPv(void *p)
{
	unsigned i;

	resolve();
	if (p) {
		pthread_mutex_lock(&mu);
		for (i = slot(p); keys[i] && keys[i] != p; i = (i + 1) & (CAP - 1))
			;
		if (keys[i] == p) {
			cur -= (long long)vals[i];
			keys[i] = TOMB;
		}
		pthread_mutex_unlock(&mu);
	}
	real_free(p);
}
