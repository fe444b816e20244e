/* SPDX-License-Identifier: MIT */
/* Merging, capacity and overflow through the whole library. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-common.h"

/*
 * The kernel merges an event only with the last one queued, so writes to two
 * files in turn reach us unmerged; the queue folds them into one event per
 * name whose count is what the kernel reported.
 */
START_TEST(burst_read_late)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_stats st;
	struct ev *evs;
	int wid, n;

	touch(dir, "a");
	touch(dir, "b");
	wid = fsnw_add(w, dir, FSNW_MODIFY, 0);
	for (int i = 0; i < 500; i++) {
		write_bytes(dir, "a", "x");
		write_bytes(dir, "b", "x");
	}
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	st = stats_of(w);
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(evs[0].name, "a");
	ck_assert_str_eq(evs[1].name, "b");
	ck_assert_int_eq(evs[0].wid, wid);
	ck_assert_uint_eq(evs[0].count + evs[1].count, st.events_read);
	if (test_backend == FSNW_BACKEND_INOTIFY) {
		ck_assert_uint_eq(evs[0].count, 500);
		ck_assert_uint_eq(evs[1].count, 500);
		ck_assert_uint_eq(st.events_merged, 998);
	} else {
		/* fanotify merged them in the kernel first, and says not how
		 * many: what reached us is what count reports. */
		ck_assert_uint_eq(st.events_merged, st.events_read - 2);
	}
	evs_free(evs);

	/* A single watched file: alternate writes and reads. */
	fsnw_remove(w, wid);
	wid = fsnw_add(w, dir, FSNW_MODIFY | FSNW_ACCESS, 0);
	{
		char p[PATH_MAX], c;
		int fd = open(pjoin(p, dir, "a"), O_RDWR);

		for (int i = 0; i < 300; i++) {
			ck_assert_int_eq(pwrite(fd, "y", 1, 0), 1);
			ck_assert_int_eq(pread(fd, &c, 1, 0), 1);
		}
		close(fd);
	}
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 2);
	ck_assert_uint_eq(evs[0].mask, FSNW_MODIFY);
	ck_assert_uint_eq(evs[1].mask, FSNW_ACCESS);
	if (test_backend == FSNW_BACKEND_INOTIFY) {
		ck_assert_uint_eq(evs[0].count, 300);
		ck_assert_uint_eq(evs[1].count, 300);
	}
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * After LTP's fanotify05: 16385 files created, then opened, under a
 * directory watch with a 16384-event queue. fsnw_pump keeps the kernel
 * queue empty, so the loss is the user queue's: exactly one overflow, last,
 * after the creates in creation order. (A sentinel would be lost with the
 * opens: collect_now.)
 */
START_TEST(create_open_queue_limited)
{
	const int nfiles = 16385;
	struct fsnw *w = test_open(0, 16384, 0);
	char *dir = tmpdir_make();
	char name[32];
	struct fsnw_stats st;
	struct ev *evs;
	int wid, n, dfd;

	dfd = open(dir, O_DIRECTORY | O_RDONLY); /* before the watch: its OPEN is not ours */
	wid = fsnw_add(w, dir, FSNW_CREATE | FSNW_OPEN, 0);
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "fname_%d", i);
		ck_assert_int_eq(mknodat(dfd, name, S_IFREG | 0644, 0), 0);
		if (i % 1000 == 999)
			fsnw_pump(w);
	}
	for (int i = 0; i < nfiles; i++) {
		int fd;

		snprintf(name, sizeof(name), "fname_%d", i);
		fd = openat(dfd, name, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		close(fd);
		if (i % 1000 == 999)
			fsnw_pump(w);
	}
	close(dfd);
	n = collect_now(w, &evs, nfiles + 10);
	st = stats_of(w);
	ck_assert_int_eq(n, 16385);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 1);
	ck_assert_uint_eq(evs[n - 1].mask, FSNW_OVERFLOW);
	for (int i = 0; i < 16384; i++) {
		snprintf(name, sizeof(name), "fname_%d", i);
		ck_assert_int_eq(evs[i].wid, wid);
		ck_assert_uint_eq(evs[i].mask, FSNW_CREATE);
		ck_assert_str_eq(evs[i].name, name);
	}
	ck_assert_uint_eq(st.overflows_kernel, 0);
	ck_assert_uint_eq(st.overflows_queue, 1);
	ck_assert_uint_eq(st.dropped_queue_full, 1 + 16385);
	ck_assert_uint_eq(st.queue_high_water, 16385);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* The same with an unbounded queue: nothing lost. */
START_TEST(create_open_queue_unlimited)
{
	const int nfiles = 16385;
	struct fsnw *w = test_open(0, FSNW_QUEUE_UNLIMITED, 0);
	char *dir = tmpdir_make();
	char name[32];
	struct ev *evs;
	int n, dfd;

	dfd = open(dir, O_DIRECTORY | O_RDONLY);
	fsnw_add(w, dir, FSNW_CREATE | FSNW_OPEN, 0);
	for (int i = 0; i < nfiles; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		ck_assert_int_eq(mknodat(dfd, name, S_IFREG | 0644, 0), 0);
		if (i % 1000 == 999)
			fsnw_pump(w);
	}
	for (int i = 0; i < nfiles; i++) {
		int fd;

		snprintf(name, sizeof(name), "f%d", i);
		fd = openat(dfd, name, O_RDONLY);
		close(fd);
		if (i % 1000 == 999)
			fsnw_pump(w);
	}
	close(dfd);
	n = collect_sync(w, &evs, 2 * nfiles + 10, dir);
	ck_assert_int_eq(n, 2 * nfiles);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, -1, FSNW_OPEN, NULL), nfiles);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(no_merge_option)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	struct ev *evs;
	int n;

	touch(dir, "a");
	touch(dir, "b");
	fsnw_add(w, dir, FSNW_MODIFY, 0);
	/* Read after each write: the kernel must not merge them either
	 * (fanotify would, unread events on one object). */
	for (int i = 0; i < 10; i++) {
		write_bytes(dir, "a", "x");
		pump(w);
		write_bytes(dir, "b", "x");
		pump(w);
	}
	n = collect_now(w, &evs, 64);
	ck_assert_int_eq(n, 20);
	ck_assert_uint_eq(stats_of(w).events_merged, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(merge)
{
	Suite *s = suite_create("merge");

	ADD_TEST(s, burst_read_late);
	ADD_TEST(s, create_open_queue_limited);
	ADD_TEST(s, create_open_queue_unlimited);
	ADD_TEST(s, no_merge_option);
	return s;
}
