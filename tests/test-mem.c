/* SPDX-License-Identifier: MIT */
/*
 * The record caches (lib/mem.h) without a handle: records that do not
 * overlap and come back from their slab, reuse without new slabs, slabs
 * kept for a later peak, reservations, and a slab that cannot be had.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "mem.h"
#include "test-common.h"

#define REC 48

/* n records, each filled with its index; every one checked afterwards. */
static void **take(struct mem_cache *c, size_t n)
{
	void **p = calloc(n, sizeof(*p));

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < n; i++) {
		p[i] = mem_cache_alloc(c);
		ck_assert_ptr_nonnull(p[i]);
		ck_assert_ptr_eq(mem_cache_of(p[i]), c);
		memset(p[i], (int)(i & 0xff), REC);
	}
	for (size_t i = 0; i < n; i++) {
		size_t bad = 0;

		for (size_t b = 0; b < REC; b++)
			bad += ((unsigned char *)p[i])[b] != (i & 0xff);
		ck_assert_uint_eq(bad, 0);
	}
	return p;
}

static void give_back(struct mem_cache *c, void **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mem_cache_free(c, p[i]);
	free(p);
}

START_TEST(records_apart)
{
	struct mem_cache c;
	size_t n = 3 * ((MEM_SLAB_SIZE) / REC);
	void **p;

	mem_cache_init(&c, REC);
	p = take(&c, n);
	ck_assert_uint_eq(c.used, n);
	ck_assert_uint_ge(c.nslabs, 3);
	for (size_t i = 0; i < n; i++)
		ck_assert_uint_eq((uintptr_t)p[i] % sizeof(void *), 0);
	give_back(&c, p, n);
	ck_assert_uint_eq(c.used, 0);
	mem_cache_fini(&c);
	ck_assert_uint_eq(c.nslabs, 0);
}
END_TEST

/* Records freed in any order serve the next takes without a new slab. */
START_TEST(reuse_without_slabs)
{
	struct mem_cache c;
	size_t n = 2 * ((MEM_SLAB_SIZE) / REC) + 17;
	void **p;

	mem_cache_init(&c, REC);
	p = take(&c, n);
	for (size_t i = 0; i < n; i += 2) /* every other one, from all slabs */
		mem_cache_free(&c, p[i]);
	for (size_t i = 1; i < n; i += 2)
		mem_cache_free(&c, p[i]);
	free(p);
	mem_fail_after(-1);
	p = take(&c, n);
	ck_assert_int_eq(mem_count(), 0);
	give_back(&c, p, n);
	mem_cache_fini(&c);
}
END_TEST

/* Memory follows the peak: what a cache once held, it keeps, so that
 * taking as many records again makes no new slab. */
START_TEST(slabs_kept)
{
	struct mem_cache c;
	size_t n = 5 * ((MEM_SLAB_SIZE) / REC), before;
	void **p;

	mem_cache_init(&c, REC);
	p = take(&c, n);
	before = c.nslabs;
	give_back(&c, p, n);
	ck_assert_uint_eq(c.used, 0);
	ck_assert_uint_eq(c.nslabs, before);
	mem_fail_after(-1);
	p = take(&c, n);
	ck_assert_int_eq(mem_count(), 0);
	ck_assert_uint_eq(c.nslabs, before);
	give_back(&c, p, n);
	mem_cache_fini(&c);
	ck_assert_uint_eq(c.nslabs, 0);
}
END_TEST

/* A reservation is there for the takes after it, and survives failures. */
START_TEST(reserve_holds)
{
	struct mem_cache c;
	size_t n = 3 * ((MEM_SLAB_SIZE) / REC);
	void **p;

	mem_cache_init(&c, REC);
	mem_fail_after(1); /* the second slab cannot be had */
	ck_assert_int_eq(mem_cache_reserve(&c, n), -ENOMEM);
	mem_fail_after(-1);
	ck_assert_int_eq(mem_cache_reserve(&c, n), 0);
	ck_assert_int_eq(mem_cache_reserve(&c, n), 0);
	mem_fail_after(-1);
	p = take(&c, n);
	ck_assert_int_eq(mem_count(), 0);
	give_back(&c, p, n);
	mem_cache_fini(&c);
}
END_TEST

/* No slab: NULL, and the cache goes on once one can be had. */
START_TEST(no_slab)
{
	struct mem_cache c;
	void *a, *b;

	mem_cache_init(&c, REC);
	mem_fail_after(0);
	ck_assert_ptr_null(mem_cache_alloc(&c));
	mem_fail_after(-1);
	a = mem_cache_alloc(&c);
	b = mem_cache_alloc(&c);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(c.used, 2);
	mem_cache_free(&c, a);
	mem_cache_free(&c, b);
	mem_cache_fini(&c);
}
END_TEST

TEST_SUITE(mem)
{
	Suite *s = suite_create("mem");

	ADD_TEST(s, records_apart);
	ADD_TEST(s, reuse_without_slabs);
	ADD_TEST(s, slabs_kept);
	ADD_TEST(s, reserve_holds);
	ADD_TEST(s, no_slab);
	return s;
}
