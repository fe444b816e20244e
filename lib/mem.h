/* SPDX-License-Identifier: MIT */
/*
 * Every allocation of the library goes through these, so a test can make the
 * Nth one fail and check that each public call then returns -ENOMEM, leaves
 * the handle consistent and leaks nothing.
 */
#ifndef FSNW_MEM_H
#define FSNW_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "compiler.h"
#include "mem-check.h"

void *mem_alloc(size_t size);
void *mem_zalloc(size_t size);
/* Zeroed, at an address that is a multiple of align (a power of two). */
void *mem_zalloc_aligned(size_t align, size_t size);
void *mem_realloc(void *p, size_t size);
void mem_free(void *p);

/*
 * Records of one size that come and go with watches, from slabs: 64 KiB
 * regions, aligned to their size, holding records of one cache end to end
 * with no header of their own (malloc's is 16 bytes, and rounds a record
 * up to its size classes). A new slab's records are handed out in address
 * order and touched only then, so a fresh process touches as many pages
 * as its records fill; a record freed is kept in its slab for a later add,
 * which then costs no malloc and touches no new page (a first touch is a
 * page fault, and the kernel zeroes the page). Memory follows the peak:
 * the slabs stay until the cache goes (the handle closes), so that a
 * handle that removes its watches and adds them again (a rescan) touches
 * no new page, as malloc's heap kept what it freed before. One allocator,
 * not one per thread, so records freed by one thread serve another's adds.
 * Used under the handle's lock. Only a take that needs a new slab can fail
 * (and counts for the failure hook).
 *
 * The hot state is the cache's: the free records and never used tail of
 * one slab, the active one, so a take or a give back of its records reads
 * no slab header. A record of another slab goes back through its header,
 * found by masking the record's address.
 */
#define MEM_SLAB_SIZE (64u * 1024)

struct mem_slab;

struct mem_cache {
	/* The active slab's free records, linked through their first word. */
	void *free;
	char *fresh, *fresh_end;  /* the active slab's records never handed out */
	struct mem_slab *active;  /* NULL before the first take */
	struct mem_slab *partial; /* the other slabs with free records */
	struct mem_slab *all;     /* every slab */
	size_t active_used;       /* records of the active slab in use */
	size_t used;              /* records in use */
	size_t nslabs;
	uint32_t size;            /* of a record */
	uint32_t per_slab;        /* records a slab holds */
};

void mem_cache_init(struct mem_cache *c, size_t size);
/* Give every slab back: every record must be back (asserted). */
void mem_cache_fini(struct mem_cache *c);
/* The slow path of mem_cache_alloc: another slab. */
FSNW_NOINLINE void *mem_cache_grow(struct mem_cache *c);
/* The slow path of mem_cache_free: a record of another slab than the active one. */
FSNW_NOINLINE void mem_cache_free_other(struct mem_cache *c, void *p);
/* At least n free records from now on, their pages touched (they wait for
 * adds, not freed before the cache is); 0 or -ENOMEM, with what was
 * allocated kept. */
int mem_cache_reserve(struct mem_cache *c, size_t n);

/* Bytes the cache holds mapped. */
static inline size_t mem_cache_mapped(const struct mem_cache *c)
{
	return c->nslabs * (size_t)MEM_SLAB_SIZE;
}

/* The slab of a record: slabs are aligned to their size. */
static inline struct mem_slab *mem_slab_of(const void *p)
{
	return (struct mem_slab *)((uintptr_t)p & ~(uintptr_t)(MEM_SLAB_SIZE - 1));
}

/* The cache a record of some cache came from. */
struct mem_cache *mem_cache_of(const void *p);

/* A record, or NULL. Inline: an add and a remove take and give back three. */
static inline void *mem_cache_alloc(struct mem_cache *c)
{
	void *p = c->free;

	if (likely(p)) {
		mem_check_open(p, sizeof(void *));
		memcpy(&c->free, p, sizeof(void *));
		/* The next take reads the link in the next free record, which
		 * was freed as long ago as this one and is out of cache: after
		 * an add's syscall, a miss to memory that take would wait for.
		 * It is fetched now, while the caller goes on. */
		__builtin_prefetch(c->free, 1);
	} else if (likely(c->fresh != c->fresh_end)) {
		p = c->fresh;
		c->fresh += c->size;
	} else {
		return mem_cache_grow(c);
	}
	mem_check_block(p, c->size);
	c->active_used++;
	c->used++;
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

/* Put a free record on a free list (the cache's, or a slab's). */
static inline void mem_cache_link(void **head, void *p, size_t size)
{
	mem_check_unblock(p, size);
	mem_check_open(p, sizeof(void *));
	memcpy(p, head, sizeof(void *));
	mem_check_noaccess(p, sizeof(void *));
	*head = p;
}

static inline void mem_cache_free(struct mem_cache *c, void *p)
{
	if (!p)
		return;
	if (unlikely(mem_slab_of(p) != c->active)) {
		mem_cache_free_other(c, p);
		return;
	}
	mem_cache_link(&c->free, p, c->size);
	c->active_used--;
	c->used--;
}

/* Test hook: the allocation after the next `n` succeeds fails (n < 0: never). */
void mem_fail_after(long n);
/* Test hook: allocations made by this thread since the hook was last set. */
long mem_count(void);

#endif
