/* SPDX-License-Identifier: MIT */
#include <stdatomic.h>
#include <stdlib.h>

#include "alloc.h"

/*
 * The failure hook is process-wide on purpose: it exists for the fault
 * injection tests only, which run one handle at a time. In normal use it
 * costs a relaxed load of a negative number (a cache line nobody writes)
 * and a thread-local increment per allocation.
 */
static atomic_long fail_countdown = -1;
static __thread long allocations;

static int should_fail(void)
{
	allocations++;
	long left = atomic_load_explicit(&fail_countdown, memory_order_relaxed);

	if (left < 0)
		return 0;
	if (left == 0) {
		atomic_store_explicit(&fail_countdown, -1, memory_order_relaxed);
		return 1;
	}
	atomic_store_explicit(&fail_countdown, left - 1, memory_order_relaxed);
	return 0;
}

void *fsnw_malloc(size_t size)
{
	return should_fail() ? NULL : malloc(size);
}

void *fsnw_calloc(size_t n, size_t size)
{
	return should_fail() ? NULL : calloc(n, size);
}

void *fsnw_realloc(void *p, size_t size)
{
	return should_fail() ? NULL : realloc(p, size);
}

void fsnw_free(void *p)
{
	free(p);
}

void alloc_fail_after(long n)
{
	allocations = 0;
	atomic_store(&fail_countdown, n);
}

long alloc_count(void)
{
	return allocations;
}
