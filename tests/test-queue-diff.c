/* SPDX-License-Identifier: MIT */
/*
 * The differential test of queue-diff.h on random streams of a fixed set of
 * seeds (tests/fuzz/fuzz-queue-diff.c runs the same on fuzzer input), and
 * the direct read's own promises, case by case.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-common.h"

/* Check's assertions mark every pass (a write to its pipe): only failures here. */
#define DIFF_CHECK(cond)                                                          \
	do {                                                                      \
		if (!(cond))                                                      \
			ck_abort_msg("%s:%d: differential check failed: %s", __FILE__, \
				     __LINE__, #cond);                            \
	} while (0)
#include "queue-diff.h"
#include "queue-fixture.h"

#define STREAMS 1500
#define STREAM_BYTES 4096

/* xorshift64*: the same streams on every run. */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

START_TEST(fast_path_equals_plain_queue)
{
	static uint8_t bytes[STREAM_BYTES];
	uint64_t reads = 0, direct = 0, lane = 0;

	for (uint64_t seed = 1; seed <= STREAMS; seed++) {
		uint64_t s = seed * 0x9e3779b97f4a7c15ULL;
		size_t len = (size_t)(next_random(&s) % STREAM_BYTES) + 1;
		struct diff *d;

		for (size_t i = 0; i < len; i++)
			bytes[i] = (uint8_t)(next_random(&s) >> 56);
		/* Streams with fewer reads and more events, to reach deep queues. */
		if (seed % 3 == 0)
			for (size_t i = 1; i < len; i += 2)
				bytes[i] &= 0x9f;
		d = calloc(1, sizeof(*d));
		ck_assert_ptr_nonnull(d);
		d->p = bytes;
		d->left = len;
		diff_stream(d);
		reads += d->reads;
		direct += d->direct_reads;
		lane += d->lane_pushes;
		free(d);
	}
	/* The test is about the fast paths: many reads must take them. */
	ck_assert_uint_gt(direct, reads / 8);
	ck_assert_uint_gt(lane, reads / 8);
}
END_TEST

/* The array takes events and merges them; past it they wait, after it. */
START_TEST(direct_read_merges_and_spills)
{
	struct fixture f;
	size_t n;

	fx_init(&f, 0, 1);
	ck_assert(queue_direct_begin(f.q, f.out, 3));
	queue_direct_lend(f.q, true);
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "x", 1);
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "y", 1);
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "x", 1);
	ck_assert_uint_eq(queue_direct_room(f.q), 0); /* deferred pushes count */
	queue_flush(f.q);
	ck_assert_uint_eq(queue_direct_room(f.q), 1); /* one merged */
	queue_defer(f.q, &f.b, f.pb, FSNW_MODIFY, 0, "x", 1);
	queue_defer(f.q, &f.b, f.pb, FSNW_ATTRIB, 0, "x", 1); /* past the array */
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "y", 1); /* merges into the array */
	ck_assert_uint_eq(queue_depth(f.q), 2);              /* deferred: not yet */
	queue_flush(f.q);
	ck_assert_uint_eq(queue_depth(f.q), 4);
	ck_assert_uint_eq(f.a.queued, 2);
	n = queue_direct_end(f.q);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(f.a.queued, 0);
	ck_assert_uint_eq(f.b.queued, 1);
	ck_assert_str_eq(f.out[0].name, "x");
	ck_assert_uint_eq(f.out[0].count, 2);
	ck_assert_str_eq(f.out[1].name, "y");
	ck_assert_uint_eq(f.out[1].count, 2);
	ck_assert_int_eq(f.out[2].wid, 2);
	ck_assert_uint_eq(queue_pop(f.q, f.out + n, 16 - n), 1);
	ck_assert_uint_eq(f.out[3].mask, FSNW_ATTRIB);
	ck_assert_uint_eq(queue_counters(f.q)->delivered, 4);
	ck_assert_uint_eq(queue_counters(f.q)->merged, 2);
	fx_fini(&f);
}
END_TEST

/* Only an empty queue reads directly, and only once its strings are back. */
START_TEST(direct_read_needs_empty_queue)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	queue_push(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "x", 1, 0);
	ck_assert(!queue_direct_begin(f.q, f.out, 4));
	ck_assert_uint_eq(queue_direct_room(f.q), 0);
	ck_assert_uint_eq(queue_pop(f.q, f.out, 4), 1);
	ck_assert(queue_direct_begin(f.q, f.out, 4));
	ck_assert_uint_eq(queue_direct_end(f.q), 0);
	queue_overflow(f.q);
	ck_assert(!queue_direct_begin(f.q, f.out, 4));
	ck_assert_uint_eq(queue_pop(f.q, f.out, 4), 1);
	ck_assert_uint_eq(f.out[0].mask, FSNW_OVERFLOW);
	fx_fini(&f);
}
END_TEST

/* Capacity, the overflow at the tail and purges hold for the array too. */
START_TEST(direct_read_capacity_overflow_purge)
{
	struct fixture f;
	size_t n;

	fx_init(&f, 2, 1);
	ck_assert(queue_direct_begin(f.q, f.out, 8));
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "1", 1);
	queue_defer(f.q, &f.b, f.pb, FSNW_MODIFY, 0, "2", 1);
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "3", 1); /* dropped: full */
	queue_flush(f.q);
	ck_assert_uint_eq(queue_counters(f.q)->dropped_full, 1);
	/* Forced, it goes before the overflow, which stays the tail. */
	ck_assert_int_eq(queue_push(f.q, &f.b, f.pb, FSNW_IGNORED, 0, NULL, 0, QUEUE_FORCE),
			 QUEUE_QUEUED);
	ck_assert_uint_eq(queue_purge(f.q, &f.a), 1);
	ck_assert_uint_eq(f.a.queued, 0);
	ck_assert_uint_eq(queue_depth(f.q), 3);
	n = queue_direct_end(f.q);
	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(f.out[0].name, "2");
	ck_assert_uint_eq(f.out[1].mask, FSNW_IGNORED);
	ck_assert_uint_eq(queue_pop(f.q, f.out + n, 8 - n), 1);
	ck_assert_uint_eq(f.out[2].mask, FSNW_OVERFLOW);
	ck_assert_uint_eq(queue_counters(f.q)->purged, 1);
	ck_assert_uint_eq(queue_depth(f.q), 0);
	fx_fini(&f);
}
END_TEST

/* Copied names outlive what was pushed; lent ones are the caller's. */
START_TEST(direct_read_names)
{
	struct fixture f;
	char buf[8];

	fx_init(&f, 0, 1);
	ck_assert(queue_direct_begin(f.q, f.out, 4));
	strcpy(buf, "copy");
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, buf, 4);
	queue_flush(f.q);
	queue_direct_lend(f.q, true);
	queue_defer(f.q, &f.a, f.pa, FSNW_MODIFY, 0, "lent", 4);
	queue_flush(f.q);
	strcpy(buf, "gone");
	ck_assert_uint_eq(queue_direct_end(f.q), 2);
	ck_assert_str_eq(f.out[0].name, "copy");
	ck_assert_str_eq(f.out[1].name, "lent");
	ck_assert_ptr_ne(f.out[0].name, buf);
	ck_assert_str_eq(f.out[0].path, "/a");
	fx_fini(&f);
}
END_TEST

TEST_SUITE(queue_diff)
{
	Suite *s = suite_create("queue-diff");

	ADD_TEST(s, fast_path_equals_plain_queue);
	ADD_TEST(s, direct_read_merges_and_spills);
	ADD_TEST(s, direct_read_needs_empty_queue);
	ADD_TEST(s, direct_read_capacity_overflow_purge);
	ADD_TEST(s, direct_read_names);
	return s;
}
