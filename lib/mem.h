/* SPDX-License-Identifier: MIT */
/*
 * Every allocation of the library goes through these, so a test can make the
 * Nth one fail and check that each public call then returns -ENOMEM, leaves
 * the handle consistent and leaks nothing.
 */
#ifndef FSNW_MEM_H
#define FSNW_MEM_H

#include <stddef.h>
#include <string.h>

#include "compiler.h"

void *mem_alloc(size_t size);
void *mem_zalloc(size_t size);
/* Zeroed, at an address that is a multiple of align (a power of two). */
void *mem_zalloc_aligned(size_t align, size_t size);
void *mem_realloc(void *p, size_t size);
void mem_free(void *p);

/*
 * Records of one size that come and go with watches, kept for reuse: an add
 * after a remove then costs no malloc and, in a fresh thread, touches no new
 * page (a first touch is a page fault, and the kernel zeroes the page). A cache
 * keeps as many free records as the handle once had in use, up to
 * MEM_CACHE_KEEP: memory follows the peak, as a kernel slab's does, and goes
 * back to malloc when the handle closes. One allocator, not one per
 * thread, so records freed by one thread serve another's adds. Used under
 * the handle's lock. Only a take that calls malloc can fail (and counts for
 * the failure hook): one that reuses a record cannot.
 */
#define MEM_CACHE_KEEP 4096

struct mem_cache {
	void *free;   /* the free records, linked through their first word */
	size_t nfree;
	size_t size;  /* of a record */
	size_t used;  /* taken and not given back */
	size_t peak;  /* the most ever used at once */
};

void mem_cache_init(struct mem_cache *c, size_t size);
/* Free the records kept (those in use are the owner's to give back first). */
void mem_cache_fini(struct mem_cache *c);
/* The slow path of mem_cache_alloc: malloc. */
FSNW_NOINLINE void *mem_cache_grow(struct mem_cache *c);
/* At least n free records kept from now on (mallocs what is missing);
 * 0 or -ENOMEM, with what was allocated kept. */
int mem_cache_reserve(struct mem_cache *c, size_t n);

/* A record, or NULL. Inline: an add and a remove take and give back three. */
static inline void *mem_cache_alloc(struct mem_cache *c)
{
	void *p = c->free;

	if (unlikely(!p))
		return mem_cache_grow(c);
	memcpy(&c->free, p, sizeof(void *));
	c->nfree--;
	if (++c->used > c->peak)
		c->peak = c->used;
	return p;
}

/* A record with its first `zero` bytes zeroed, or NULL. `zero` is the
 * caller's sizeof, a constant, so the memset is inlined. */
static inline void *mem_cache_zalloc(struct mem_cache *c, size_t zero)
{
	void *p = mem_cache_alloc(c);

	if (p)
		memset(p, 0, zero);
	return p;
}

/* Onto the free list (mem_cache_free, mem_cache_reserve). */
static inline void mem_cache_push(struct mem_cache *c, void *p)
{
	memcpy(p, &c->free, sizeof(void *));
	c->free = p;
	c->nfree++;
}

static inline void mem_cache_free(struct mem_cache *c, void *p)
{
	if (!p)
		return;
	c->used--;
	if (unlikely(c->nfree >= c->peak || c->nfree >= MEM_CACHE_KEEP)) {
		mem_free(p);
		return;
	}
	mem_cache_push(c, p);
}

/* Test hook: the allocation after the next `n` succeeds fails (n < 0: never). */
void mem_fail_after(long n);
/* Test hook: allocations made by this thread since the hook was last set. */
long mem_count(void);

#endif
