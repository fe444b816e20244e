/* SPDX-License-Identifier: MIT */
/*
 * Every allocation of the library goes through these, so a test can make the
 * Nth one fail and check that each public call then returns -ENOMEM, leaves
 * the handle consistent and leaks nothing.
 */
#ifndef FSNW_ALLOC_H
#define FSNW_ALLOC_H

#include <stddef.h>

void *fsnw_malloc(size_t size);
void *fsnw_calloc(size_t n, size_t size);
void *fsnw_realloc(void *p, size_t size);
void fsnw_free(void *p);

/* Test hook: the allocation after the next `n` succeeds fails (n < 0: never). */
void alloc_fail_after(long n);
/* Test hook: allocations made by this thread since the hook was last set. */
long alloc_count(void);

#endif
