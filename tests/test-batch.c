/* SPDX-License-Identifier: MIT */
/* fsnw_add_batch / fsnw_remove_batch. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test-common.h"

START_TEST(per_item_results)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[3][PATH_MAX];
	struct fsnw_batch_item items[4];
	int results[5], wids[5];

	touch(dir, "a");
	touch(dir, "b");
	items[0] = (struct fsnw_batch_item){ pjoin(p[0], dir, "a"), FSNW_MODIFY, 0, 0 };
	items[1] = (struct fsnw_batch_item){ pjoin(p[1], dir, "missing"), FSNW_MODIFY, 0, 0 };
	items[2] = (struct fsnw_batch_item){ pjoin(p[2], dir, "b"), 0, 0, 0 };
	items[3] = (struct fsnw_batch_item){ dir, FSNW_CREATE, 0, 0 };
	ck_assert_int_eq(fsnw_add_batch(w, items, 4, 0), 2);
	ck_assert_int_gt(items[0].result, 0);
	ck_assert_int_eq(items[1].result, -ENOENT);
	ck_assert_int_eq(items[2].result, -EINVAL);
	ck_assert_int_gt(items[3].result, 0);
	ck_assert_uint_eq(stats_of(w).logical_watches, 2);
	/* Calls that passed the argument checks: the -EINVAL item is not one. */
	ck_assert_uint_eq(stats_of(w).add_calls, 3);

	wids[0] = items[0].result;
	wids[1] = 99999;
	wids[2] = items[3].result;
	wids[3] = 0;
	wids[4] = items[0].result; /* twice in one batch: the second is gone */
	ck_assert_int_eq(fsnw_remove_batch(w, wids, 5, results), 2);
	ck_assert_int_eq(results[0], 0);
	ck_assert_int_eq(results[1], -ENOENT);
	ck_assert_int_eq(results[2], 0);
	ck_assert_int_eq(results[3], -EINVAL);
	ck_assert_int_eq(results[4], -ENOENT);
	ck_assert_int_eq(fsnw_remove_batch(w, wids, 1, NULL), 0);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);

	ck_assert_int_eq(fsnw_add_batch(w, NULL, 0, 0), 0);
	ck_assert_int_eq(fsnw_add_batch(w, NULL, 1, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add_batch(w, items, 1, 0x10), -EINVAL);
	ck_assert_int_eq(fsnw_remove_batch(w, NULL, 1, NULL), -EINVAL);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(atomic_rollback)
{
	struct fsnw *w = test_open(0, 0, 4);
	char *dir = tmpdir_make();
	char p[4][PATH_MAX];
	struct fsnw_batch_item items[5];
	struct fsnw_stats before, after;
	int keep, parked;

	touch(dir, "a");
	touch(dir, "b");
	touch(dir, "c");
	make_dir(dir, "t");
	/* Prior state: a is watched (shared by the batch), b is parked
	 * (revived by the batch), c is new. */
	keep = fsnw_add(w, pjoin(p[0], dir, "a"), FSNW_MODIFY, 0);
	parked = fsnw_add(w, pjoin(p[1], dir, "b"), FSNW_MODIFY, 0);
	ck_assert_int_eq(fsnw_remove(w, parked), 0);
	before = stats_of(w);
	ck_assert_uint_eq(before.parked_watches, 1);

	items[0] = (struct fsnw_batch_item){ p[0], FSNW_ATTRIB, 0, 0 };
	items[1] = (struct fsnw_batch_item){ p[1], FSNW_ATTRIB, 0, 0 };
	items[2] = (struct fsnw_batch_item){ pjoin(p[2], dir, "c"), FSNW_ATTRIB, 0, 0 };
	items[3] = (struct fsnw_batch_item){ dir, FSNW_CREATE, FSNW_WATCH_TREE, 0 };
	items[4] = (struct fsnw_batch_item){ pjoin(p[3], dir, "nope"), FSNW_ATTRIB, 0, 0 };
	ck_assert_int_eq(fsnw_add_batch(w, items, 5, FSNW_BATCH_ATOMIC), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(items[i].result, -ECANCELED);
	ck_assert_int_eq(items[4].result, -ENOENT);

	after = stats_of(w);
	ck_assert_uint_eq(after.logical_watches, before.logical_watches);
	ck_assert_uint_eq(after.kernel_watches, before.kernel_watches);
	ck_assert_uint_eq(after.parked_watches, before.parked_watches);

	/* The failing item first: nothing was tried after it. */
	items[0] = (struct fsnw_batch_item){ p[3], FSNW_ATTRIB, 0, 0 };
	items[1] = (struct fsnw_batch_item){ p[2], FSNW_ATTRIB, 0, 0 };
	ck_assert_int_eq(fsnw_add_batch(w, items, 2, FSNW_BATCH_ATOMIC), 0);
	ck_assert_int_eq(items[0].result, -ENOENT);
	ck_assert_int_eq(items[1].result, -ECANCELED);
	ck_assert_uint_eq(stats_of(w).kernel_watches, before.kernel_watches);

	/* The kept watch still works. */
	write_bytes(dir, "a", "x");
	{
		struct ev *evs;
		int n = collect_now(w, &evs, 16);

		ck_assert_int_eq(n, 1);
		ck_assert_int_eq(evs[0].wid, keep);
		evs_free(evs);
	}
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(duplicates_and_one_drain)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_batch_item items[10];
	struct fsnw_stats s0, s1;

	touch(dir, "f");
	pjoin(p, dir, "f");
	for (int i = 0; i < 10; i++)
		items[i] = (struct fsnw_batch_item){ p, FSNW_MODIFY, 0, 0 };
	s0 = stats_of(w);
	ck_assert_int_eq(fsnw_add_batch(w, items, 10, 0), 10);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.kernel_watches, 1);
	ck_assert_uint_eq(s1.logical_watches, 10);
	ck_assert_uint_eq(s1.dedup_hits - s0.dedup_hits, 9);
	if (test_backend == FSNW_BACKEND_INOTIFY) {
		ck_assert_uint_eq(s1.sys_inotify_add_watch - s0.sys_inotify_add_watch, 10);
		/* Nine items shared the kernel watch; the batch settled them
		 * once: a look at the ring, or a read. */
		ck_assert_uint_eq(s1.sys_read - s0.sys_read, s1.ring_active ? 0 : 1);
		ck_assert_uint_eq(s1.settles_ring + s1.settles_read -
					  s0.settles_ring - s0.settles_read, 1);
	}
	for (int i = 1; i < 10; i++)
		ck_assert_int_ne(items[i].result, items[i - 1].result);
	write_bytes(dir, "f", "x");
	{
		struct ev *evs;
		int n = collect_now(w, &evs, 32);

		ck_assert_int_eq(n, 10);
		evs_free(evs);
	}
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * A batch longer than the items whose marks are made together (batch.c),
 * with failures, a duplicate and a tree among them: per-item results as
 * single adds give, one mark call an item that passed its checks, and each
 * mark timed by itself (the marks' times fit in the batch's wall time).
 */
START_TEST(long_batch_like_single_adds)
{
	enum { N = 40 };
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	static char p[N][PATH_MAX];
	struct fsnw_batch_item items[N];
	struct fsnw_stats s0, s1;
	uint64_t t0, wall;
	int wids[N], n = 0, calls = 0;

	for (int i = 0; i < N; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		if (i % 10 != 7)
			touch(dir, name);
		pjoin(p[i], dir, name);
		items[i] = (struct fsnw_batch_item){ p[i], i % 10 == 9 ? 0 : FSNW_MODIFY, 0, 0 };
		calls += i % 10 != 9;
	}
	items[5].path = p[4];
	items[20] = (struct fsnw_batch_item){ dir, FSNW_CREATE, FSNW_WATCH_TREE, 0 };
	s0 = stats_of(w);
	t0 = mono_ns();
	ck_assert_int_eq(fsnw_add_batch(w, items, N, 0), N - 8);
	wall = mono_ns() - t0;
	s1 = stats_of(w);
	for (int i = 0; i < N; i++) {
		if (i % 10 == 9)
			ck_assert_int_eq(items[i].result, -EINVAL);
		else if (i % 10 == 7)
			ck_assert_int_eq(items[i].result, -ENOENT);
		else
			wids[n++] = items[i].result;
	}
	for (int i = 0; i < n; i++) {
		ck_assert_int_gt(wids[i], 0);
		for (int j = 0; j < i; j++)
			ck_assert_int_ne(wids[i], wids[j]);
	}
	ck_assert_uint_eq(s1.logical_watches, N - 8);
	ck_assert_uint_eq(s1.dedup_hits - s0.dedup_hits, 1);
	ck_assert_uint_eq(s1.add_calls - s0.add_calls, (uint64_t)calls);
	if (test_backend == FSNW_BACKEND_INOTIFY) {
		/* The tree's one directory is one mark, as a file's. */
		ck_assert_uint_eq(s1.sys_inotify_add_watch - s0.sys_inotify_add_watch,
				  (uint64_t)calls);
		ck_assert_uint_eq(s1.lat_kernel_mark.count - s0.lat_kernel_mark.count,
				  (uint64_t)calls);
		ck_assert_uint_le(s1.lat_kernel_mark.sum_ns - s0.lat_kernel_mark.sum_ns, wall);
	}
	ck_assert_int_eq(fsnw_remove_batch(w, wids, (size_t)n, NULL), n);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	fsnw_close(w);
	for (int i = 0; i < N; i++)
		if (i % 10 != 7)
			unlink(p[i]);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(batch)
{
	Suite *s = suite_create("batch");

	ADD_TEST(s, per_item_results);
	ADD_TEST(s, atomic_rollback);
	ADD_TEST(s, duplicates_and_one_drain);
	ADD_TEST(s, long_batch_like_single_adds);
	return s;
}
