/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

#if defined(FSNW_MEMCHECK)
bool mem_check_on;

/* Before any handle exists, and valgrind, if it runs us, ran us from the
 * start: the answer holds for the life of the process. */
__attribute__((constructor)) static void mem_check_init(void)
{
	mem_check_on = RUNNING_ON_VALGRIND;
}
#endif

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

/*
 * A slab: this header, then records from MEM_SLAB_OFFSET to its end. Its
 * free list and counts are kept here while another slab is active; the
 * active one's are in the cache.
 */
struct mem_slab {
	struct mem_cache *cache;
	struct mem_slab *prev, *next; /* in the cache's partial list */
	struct mem_slab *next_all;    /* in the cache's list of every slab */
	void *free;                   /* free records (while not active) */
	char *fresh;                  /* its first record never handed out */
	size_t used;                  /* records in use (while not active) */
	bool partial;                 /* on the partial list */
};

#define MEM_SLAB_OFFSET 64
_Static_assert(sizeof(struct mem_slab) <= MEM_SLAB_OFFSET, "a slab header fits its offset");

static char *slab_end(const struct mem_cache *c, struct mem_slab *s)
{
	return (char *)s + MEM_SLAB_OFFSET + (size_t)c->per_slab * c->size;
}

/*
 * A region of MEM_SLAB_SIZE bytes aligned to its size. The kernel places
 * a new mapping just below the last one, so after the first slab a plain
 * mapping is usually aligned already; otherwise one of twice the size is
 * cut down to the aligned part.
 */
static void *map_aligned(void)
{
	const size_t size = MEM_SLAB_SIZE;
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	size_t head;

	if (p == MAP_FAILED)
		return NULL;
	if (((uintptr_t)p & (size - 1)) == 0)
		return p;
	munmap(p, size);
	p = mmap(NULL, 2 * size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	head = (size - ((uintptr_t)p & (size - 1))) & (size - 1);
	if (head)
		munmap(p, head);
	munmap(p + head + size, size - head);
	return p + head;
}

void mem_cache_init(struct mem_cache *c, size_t size)
{
	/* Records are whole words: the free-list link is one. */
	size = (size + sizeof(void *) - 1) & ~(sizeof(void *) - 1);
	assert(size <= (MEM_SLAB_SIZE - MEM_SLAB_OFFSET) / 16);
	*c = (struct mem_cache){
		.size = (uint32_t)size,
		.per_slab = (uint32_t)((MEM_SLAB_SIZE - MEM_SLAB_OFFSET) / size),
	};
}

struct mem_cache *mem_cache_of(const void *p)
{
	return mem_slab_of(p)->cache;
}

static size_t free_records(const struct mem_cache *c)
{
	return c->nslabs * c->per_slab - c->used;
}

static void partial_add(struct mem_cache *c, struct mem_slab *s)
{
	s->prev = NULL;
	s->next = c->partial;
	if (c->partial)
		c->partial->prev = s;
	c->partial = s;
	s->partial = true;
}

static void partial_del(struct mem_cache *c, struct mem_slab *s)
{
	if (s->prev)
		s->prev->next = s->next;
	else
		c->partial = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->partial = false;
}

static struct mem_slab *slab_new(struct mem_cache *c)
{
	struct mem_slab *s;

	if (should_fail())
		return NULL;
	s = map_aligned();
	if (!s)
		return NULL;
	*s = (struct mem_slab){ .cache = c, .next_all = c->all,
				.fresh = (char *)s + MEM_SLAB_OFFSET };
	mem_check_noaccess(s->fresh, (size_t)c->per_slab * c->size);
	c->all = s;
	c->nslabs++;
	return s;
}

/* The active slab's state back into its header; on the partial list if it has room. */
static void deactivate(struct mem_cache *c)
{
	struct mem_slab *s = c->active;

	if (!s)
		return;
	s->free = c->free;
	s->fresh = c->fresh;
	s->used = c->active_used;
	if (s->free || s->fresh != slab_end(c, s))
		partial_add(c, s);
	c->active = NULL;
	c->free = NULL;
	c->fresh = c->fresh_end = NULL;
	c->active_used = 0;
}

static void activate(struct mem_cache *c, struct mem_slab *s)
{
	if (s->partial)
		partial_del(c, s);
	c->active = s;
	c->free = s->free;
	c->fresh = s->fresh;
	c->fresh_end = slab_end(c, s);
	c->active_used = s->used;
	s->free = NULL;
}

void *mem_cache_grow(struct mem_cache *c)
{
	struct mem_slab *s;

	deactivate(c);
	s = c->partial ? c->partial : slab_new(c);
	if (!s)
		return NULL;
	activate(c, s);
	return mem_cache_alloc(c);
}

static void slab_unmap(struct mem_slab *s)
{
	mem_check_unmap(s, MEM_SLAB_SIZE);
	munmap(s, MEM_SLAB_SIZE);
}

void mem_cache_free_other(struct mem_cache *c, void *p)
{
	struct mem_slab *s = mem_slab_of(p);

	assert(s->cache == c && s->used > 0);
	mem_cache_link(&s->free, p, c->size);
	s->used--;
	c->used--;
	if (!s->partial)
		partial_add(c, s);
}

/* Fault in the pages of [p, p + len) now (Linux 5.14; before it, they
 * fault at first use). */
static void populate(char *p, size_t len)
{
	uintptr_t from = (uintptr_t)p & ~(uintptr_t)4095;

	if (len)
		(void)madvise((void *)from, (uintptr_t)p + len - from, MADV_POPULATE_WRITE);
}

int mem_cache_reserve(struct mem_cache *c, size_t n)
{
	size_t left = n;

	while (free_records(c) < n) {
		struct mem_slab *s = slab_new(c);

		if (!s)
			return -ENOMEM;
		partial_add(c, s);
	}
	if (!c->active)
		activate(c, c->partial);
	/* The pages of the never used records the next adds take, touched
	 * now: the active slab's first, then the other slabs'. Free-listed
	 * records were in use before, their pages touched then. */
	for (struct mem_slab *s = c->active; s && left;
	     s = s == c->active ? c->partial : s->next) {
		char *from = s == c->active ? c->fresh : s->fresh;
		size_t have = (size_t)(slab_end(c, s) - from) / c->size;
		size_t take = have < left ? have : left;

		populate(from, take * c->size);
		left -= take;
	}
	return 0;
}

void mem_cache_fini(struct mem_cache *c)
{
	/* A record still in use is a leak: its slab stays mapped for the
	 * checkers to find it. */
	assert(c->used == 0);
	if (c->used == 0) {
		while (c->all) {
			struct mem_slab *s = c->all;

			c->all = s->next_all;
			slab_unmap(s);
		}
	}
	mem_cache_init(c, c->size);
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
