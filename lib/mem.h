/* SPDX-License-Identifier: MIT */
/*
 * Every allocation of the library goes through these, so a test can make the
 * Nth one fail and check that each public call then returns -ENOMEM, leaves
 * the handle consistent and leaks nothing.
 */
#ifndef FSNW_MEM_H
#define FSNW_MEM_H

#include <stddef.h>

void *mem_alloc(size_t size);
void *mem_zalloc(size_t size);
void *mem_realloc(void *p, size_t size);
void mem_free(void *p);

/* Test hook: the allocation after the next `n` succeeds fails (n < 0: never). */
void mem_fail_after(long n);
/* Test hook: allocations made by this thread since the hook was last set. */
long mem_count(void);

#endif
