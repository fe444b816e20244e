/* SPDX-License-Identifier: MIT */
/*
 * What the memory checkers are told about records in slabs (mem.h), so
 * that memcheck and ASan see each record as a block of its own, and a free
 * record, or a slab's unused tail, as memory nobody may touch: a use after
 * free or an overrun into the next record is reported as with malloc, and
 * memcheck's leak check counts live records. Where neither checker is
 * built in, these are empty. memcheck's requests are made only where the
 * process runs under valgrind (mem_check_on, read once at load): a client
 * request is a dozen instructions and stores even where nobody answers
 * it, and a record taken and given back makes five of them.
 */
#ifndef FSNW_MEM_CHECK_H
#define FSNW_MEM_CHECK_H

#include <stddef.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FSNW_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FSNW_ASAN 1
#endif

#if defined(FSNW_ASAN)
#include <sanitizer/asan_interface.h>
#define mem_check_noaccess(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define mem_check_block(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#define mem_check_unblock(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define mem_check_open(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
/* A region about to be unmapped: ASan's shadow would outlive the mapping
 * and poison whatever is mapped there next. */
#define mem_check_unmap(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#elif defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define FSNW_MEMCHECK 1
#endif
#endif

#if defined(FSNW_MEMCHECK)
#include <stdbool.h>

#include "compiler.h"

/* Whether the process runs under valgrind (mem.c sets it at load). */
extern bool mem_check_on;
#define MEM_CHECK(request) do { if (unlikely(mem_check_on)) request; } while (0)

/* Unaddressable (a new slab's records). */
#define mem_check_noaccess(p, n) MEM_CHECK((void)VALGRIND_MAKE_MEM_NOACCESS((p), (n)))
/* A record handed out: a heap block, undefined. */
#define mem_check_block(p, n) MEM_CHECK(VALGRIND_MALLOCLIKE_BLOCK((p), (n), 0, 0))
/* A record given back: freed, unaddressable. */
#define mem_check_unblock(p, n) \
	do { (void)(n); MEM_CHECK(VALGRIND_FREELIKE_BLOCK((p), 0)); } while (0)
/* The free-list link in a free record, read or written by the cache itself. */
#define mem_check_open(p, n) MEM_CHECK((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
/* memcheck forgets an unmapped region itself. */
#define mem_check_unmap(p, n) ((void)(p), (void)(n))
#elif !defined(FSNW_ASAN)
#define mem_check_noaccess(p, n) ((void)(p), (void)(n))
#define mem_check_block(p, n) ((void)(p), (void)(n))
#define mem_check_unblock(p, n) ((void)(p), (void)(n))
#define mem_check_open(p, n) ((void)(p), (void)(n))
#define mem_check_unmap(p, n) ((void)(p), (void)(n))
#endif

#endif
