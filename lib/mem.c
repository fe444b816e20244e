/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

/*
 * The failure hook is process-wide on purpose: it exists for the fault
 * injection tests only, which run one handle at a time. In normal use it
 * costs a relaxed load of a negative number (a cache line nobody writes)
 * and a thread-local increment per allocation. The counter uses the
 * initial-exec TLS model: the general-dynamic default of a shared library
 * calls __tls_get_addr on every access, and adds allocate.
 */
static atomic_long fail_countdown = -1;
static __thread long allocations __attribute__((tls_model("initial-exec")));

static int should_fail(void)
{
	long left;

	allocations++;
	left = atomic_load_explicit(&fail_countdown, memory_order_relaxed);
	if (likely(left < 0))
		return 0;
	if (left == 0) {
		atomic_store_explicit(&fail_countdown, -1, memory_order_relaxed);
		return 1;
	}
	atomic_store_explicit(&fail_countdown, left - 1, memory_order_relaxed);
	return 0;
}

void *mem_alloc(size_t size)
{
	return should_fail() ? NULL : malloc(size);
}

/* malloc and memset, not calloc: glibc's calloc skips the thread cache.
 * The empty asm keeps the compiler from folding the pair into calloc. */
void *mem_zalloc(size_t size)
{
	void *p = should_fail() ? NULL : malloc(size);

	__asm__("" : "+r"(p));
	if (p)
		memset(p, 0, size);
	return p;
}

void *mem_zalloc_aligned(size_t align, size_t size)
{
	void *p = NULL;

	if (should_fail() || posix_memalign(&p, align, size) != 0)
		return NULL;
	memset(p, 0, size);
	return p;
}

void *mem_realloc(void *p, size_t size)
{
	return should_fail() ? NULL : realloc(p, size);
}

void mem_free(void *p)
{
	free(p);
}

void mem_cache_init(struct mem_cache *c, size_t size)
{
	*c = (struct mem_cache){ .size = size < sizeof(void *) ? sizeof(void *) : size };
}

void *mem_cache_grow(struct mem_cache *c)
{
	void *p = mem_alloc(c->size);

	if (p && ++c->used > c->peak)
		c->peak = c->used;
	return p;
}

int mem_cache_reserve(struct mem_cache *c, size_t n)
{
	while (c->nfree < n) {
		void *p = mem_alloc(c->size);

		if (!p)
			return -ENOMEM;
		mem_cache_push(c, p);
	}
	/* Kept when they come back, as records a handle once used are. */
	if (c->used + c->nfree > c->peak)
		c->peak = c->used + c->nfree;
	return 0;
}

void mem_cache_fini(struct mem_cache *c)
{
	while (c->free) {
		void *p = c->free;

		memcpy(&c->free, p, sizeof(void *));
		mem_free(p);
	}
	c->nfree = 0;
}

void mem_fail_after(long n)
{
	allocations = 0;
	atomic_store(&fail_countdown, n);
}

long mem_count(void)
{
	return allocations;
}
