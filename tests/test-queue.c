/* SPDX-License-Identifier: MIT */
/* The event queue alone (lib/queue.c), linked from the internal archive. */
#include <stdio.h>
#include <string.h>

#include "queue-fixture.h"
#include "test-common.h"

void fx_init(struct fixture *f, uint32_t capacity, int merge)
{
	memset(f, 0, sizeof(*f));
	f->q = queue_new(capacity, merge);
	ck_assert_ptr_nonnull(f->q);
	f->a.wid = 1;
	f->b.wid = 2;
	f->pa = strref_new("/a", 2);
	f->pb = strref_new("/b", 2);
}

void fx_fini(struct fixture *f)
{
	queue_release_delivered(f->q);
	queue_free(f->q);
	ck_assert_uint_eq(f->pa->refs, 1); /* every slot gave its reference back */
	ck_assert_uint_eq(f->pb->refs, 1);
	strref_put(f->pa);
	strref_put(f->pb);
}

static enum queue_result push(struct fixture *f, struct qowner *o, uint32_t mask, const char *name)
{
	return queue_push(f->q, o, o == &f->b ? f->pb : f->pa, mask, 0, name,
			  name ? strlen(name) : 0, 0);
}

static size_t pop(struct fixture *f)
{
	queue_release_delivered(f->q);
	return queue_pop(f->q, f->out, 64);
}

START_TEST(merge_counts)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "x"), QUEUE_QUEUED);
	for (int i = 0; i < 9; i++)
		ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "x"), QUEUE_MERGED);
	ck_assert_uint_eq(queue_depth(f.q), 1);
	ck_assert_uint_eq(pop(&f), 1);
	ck_assert_uint_eq(f.out[0].count, 10);
	ck_assert_str_eq(f.out[0].name, "x");
	ck_assert_str_eq(f.out[0].path, "/a");
	ck_assert_uint_eq(queue_counters(f.q)->merged, 9);
	ck_assert_uint_eq(queue_counters(f.q)->queued, 1);
	fx_fini(&f);
}
END_TEST

START_TEST(no_merge_across_keys)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	push(&f, &f.a, FSNW_MODIFY, "x");
	ck_assert_int_eq(push(&f, &f.b, FSNW_MODIFY, "x"), QUEUE_QUEUED);   /* wid */
	ck_assert_int_eq(push(&f, &f.a, FSNW_ATTRIB, "x"), QUEUE_QUEUED);   /* mask */
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "y"), QUEUE_QUEUED);   /* name */
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, NULL), QUEUE_QUEUED);  /* no name */
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY | FSNW_ISDIR, "x"), QUEUE_QUEUED);
	ck_assert_uint_eq(queue_depth(f.q), 6);
	ck_assert_uint_eq(queue_counters(f.q)->merged, 0);
	fx_fini(&f);
}
END_TEST

START_TEST(first_occurrence_order)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	push(&f, &f.a, FSNW_MODIFY, "1");
	push(&f, &f.a, FSNW_MODIFY, "2");
	push(&f, &f.a, FSNW_MODIFY, "3");
	push(&f, &f.a, FSNW_MODIFY, "1");
	push(&f, &f.a, FSNW_MODIFY, "2");
	ck_assert_uint_eq(pop(&f), 3);
	ck_assert_str_eq(f.out[0].name, "1");
	ck_assert_str_eq(f.out[1].name, "2");
	ck_assert_str_eq(f.out[2].name, "3");
	ck_assert_uint_eq(f.out[0].count, 2);
	ck_assert_uint_eq(f.out[1].count, 2);
	ck_assert_uint_eq(f.out[2].count, 1);
	fx_fini(&f);
}
END_TEST

START_TEST(name_barrier)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	push(&f, &f.a, FSNW_MODIFY, "a");
	push(&f, &f.a, FSNW_DELETE, "a");
	push(&f, &f.a, FSNW_CREATE, "a");
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "a"), QUEUE_QUEUED);
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "a"), QUEUE_MERGED); /* into the new one */
	/* The barrier is per name: b still merges across a's replacement. */
	push(&f, &f.a, FSNW_MODIFY, "b");
	push(&f, &f.a, FSNW_DELETE, "c");
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "b"), QUEUE_MERGED);
	ck_assert_uint_eq(pop(&f), 6);
	ck_assert_uint_eq(f.out[0].mask, FSNW_MODIFY);
	ck_assert_uint_eq(f.out[0].count, 1);
	ck_assert_uint_eq(f.out[1].mask, FSNW_DELETE);
	ck_assert_uint_eq(f.out[2].mask, FSNW_CREATE);
	ck_assert_uint_eq(f.out[3].mask, FSNW_MODIFY);
	ck_assert_uint_eq(f.out[3].count, 2);
	fx_fini(&f);
}
END_TEST

START_TEST(never_merged)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(queue_push(f.q, &f.a, f.pa, FSNW_MOVED_FROM, 7, "m", 1, 0),
				 QUEUE_QUEUED);
		ck_assert_int_eq(queue_push(f.q, &f.a, f.pa, FSNW_IGNORED, 0, NULL, 0, 0),
				 QUEUE_QUEUED);
		ck_assert_int_eq(queue_push(f.q, &f.a, f.pa, FSNW_UNMOUNT, 0, NULL, 0, 0),
				 QUEUE_QUEUED);
		ck_assert_int_eq(queue_push(f.q, &f.a, f.pa, FSNW_CREATE, 0, "c", 1, 0),
				 QUEUE_QUEUED);
	}
	ck_assert_uint_eq(queue_depth(f.q), 8);
	ck_assert_uint_eq(pop(&f), 8);
	ck_assert_uint_eq(f.out[0].cookie, 7);
	fx_fini(&f);
}
END_TEST

START_TEST(no_merge_flag)
{
	struct fixture f;

	fx_init(&f, 0, 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "x"), QUEUE_QUEUED);
	ck_assert_uint_eq(queue_depth(f.q), 5);
	fx_fini(&f);
}
END_TEST

START_TEST(overflow_at_tail)
{
	struct fixture f;
	char name[16];

	fx_init(&f, 4, 1);
	for (int i = 0; i < 4; i++) {
		snprintf(name, sizeof(name), "%d", i);
		ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, name), QUEUE_QUEUED);
	}
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "new"), QUEUE_DROPPED);
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "new2"), QUEUE_DROPPED);
	/* Merging is tried before the capacity check. */
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "2"), QUEUE_MERGED);
	/* IGNORED is never lost: it goes past the capacity, before the overflow. */
	ck_assert_int_eq(queue_push(f.q, &f.b, f.pb, FSNW_IGNORED, 0, NULL, 0, QUEUE_FORCE),
			 QUEUE_QUEUED);
	ck_assert_uint_eq(queue_depth(f.q), 6);
	ck_assert_uint_eq(queue_counters(f.q)->dropped_full, 2);
	ck_assert_uint_eq(queue_counters(f.q)->overflows, 1);

	/* Read part: the overflow still stands at the tail, and new events
	 * keep being dropped until it is read. */
	queue_release_delivered(f.q);
	ck_assert_uint_eq(queue_pop(f.q, f.out, 2), 2);
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "later"), QUEUE_DROPPED);
	ck_assert_uint_eq(pop(&f), 4);
	ck_assert_str_eq(f.out[1].name, "3");
	ck_assert_uint_eq(f.out[2].mask, FSNW_IGNORED);
	ck_assert_int_eq(f.out[2].wid, 2);
	ck_assert_uint_eq(f.out[3].mask, FSNW_OVERFLOW);
	ck_assert_int_eq(f.out[3].wid, 0);
	ck_assert_uint_eq(f.out[3].count, 3);
	ck_assert_ptr_null(f.out[3].path);

	/* Read, it clears. */
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "again"), QUEUE_QUEUED);
	ck_assert_uint_eq(pop(&f), 1);
	ck_assert_uint_eq(queue_counters(f.q)->overflows, 1);
	ck_assert_uint_eq(queue_counters(f.q)->high_water, 6);
	fx_fini(&f);
}
END_TEST

START_TEST(external_overflow_once)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	push(&f, &f.a, FSNW_MODIFY, "x");
	queue_overflow(f.q);
	queue_overflow(f.q);
	ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, "x"), QUEUE_MERGED);
	ck_assert_uint_eq(pop(&f), 2);
	ck_assert_uint_eq(f.out[1].mask, FSNW_OVERFLOW);
	ck_assert_uint_eq(f.out[1].count, 2);
	ck_assert_uint_eq(queue_counters(f.q)->overflows, 0); /* not the queue's own */
	fx_fini(&f);
}
END_TEST

START_TEST(unlimited_never_overflows)
{
	struct fixture f;
	char name[16];

	fx_init(&f, FSNW_QUEUE_UNLIMITED, 1);
	for (int i = 0; i < 100000; i++) {
		snprintf(name, sizeof(name), "%d", i);
		ck_assert_int_eq(push(&f, &f.a, FSNW_MODIFY, name), QUEUE_QUEUED);
	}
	ck_assert_uint_eq(queue_depth(f.q), 100000);
	ck_assert_uint_eq(queue_counters(f.q)->overflows, 0);
	fx_fini(&f);
}
END_TEST

START_TEST(purge_owner)
{
	struct fixture f;

	fx_init(&f, 0, 1);
	push(&f, &f.a, FSNW_MODIFY, "1");
	push(&f, &f.b, FSNW_MODIFY, "1");
	push(&f, &f.a, FSNW_MODIFY, "2");
	ck_assert_uint_eq(f.a.queued, 2);
	ck_assert_uint_eq(queue_purge(f.q, &f.a), 2);
	ck_assert_uint_eq(f.a.queued, 0);
	ck_assert_uint_eq(queue_depth(f.q), 1);
	ck_assert_uint_eq(pop(&f), 1);
	ck_assert_int_eq(f.out[0].wid, 2);
	ck_assert_uint_eq(f.b.queued, 0);
	fx_fini(&f);
}
END_TEST

START_TEST(long_names_reuse_slots)
{
	struct fixture f;
	char name[256];

	fx_init(&f, 0, 0);
	memset(name, 'n', 255);
	name[255] = '\0';
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 100; i++)
			push(&f, &f.a, FSNW_MODIFY, name);
		ck_assert_uint_eq(pop(&f), 64);
		ck_assert_str_eq(f.out[63].name, name);
		ck_assert_uint_eq(pop(&f), 36);
	}
	fx_fini(&f);
}
END_TEST

TEST_SUITE(queue)
{
	Suite *s = suite_create("queue");

	ADD_TEST(s, merge_counts);
	ADD_TEST(s, no_merge_across_keys);
	ADD_TEST(s, first_occurrence_order);
	ADD_TEST(s, name_barrier);
	ADD_TEST(s, never_merged);
	ADD_TEST(s, no_merge_flag);
	ADD_TEST(s, overflow_at_tail);
	ADD_TEST(s, external_overflow_once);
	ADD_TEST(s, unlimited_never_overflows);
	ADD_TEST(s, purge_owner);
	ADD_TEST(s, long_names_reuse_slots);
	return s;
}
