/* SPDX-License-Identifier: MIT */
/*
 * Shared-inode deduplication, asserted through the library's exact syscall
 * counters: repeats and hard links cost one kernel watch, a non-last remove
 * costs no syscall, the last remove costs one.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-common.h"

/* Every syscall the library counts. */
static uint64_t syscalls(const struct fsnw_stats *s)
{
	return s->sys_inotify_init + s->sys_inotify_add_watch + s->sys_inotify_rm_watch +
	       s->sys_fanotify_init + s->sys_fanotify_mark + s->sys_name_to_handle_at +
	       s->sys_open_by_handle_at + s->sys_read + s->sys_poll + s->sys_eventfd +
	       s->sys_walk + s->sys_other;
}

/* Kernel mark operations (add or remove). */
static uint64_t mark_ops(const struct fsnw_stats *s)
{
	return s->sys_inotify_add_watch + s->sys_inotify_rm_watch + s->sys_fanotify_mark;
}

START_TEST(same_path_twice)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1, s2, s3;
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	pjoin(p, dir, "f");
	s0 = stats_of(w);
	a = fsnw_add(w, p, FSNW_MODIFY, 0);
	s1 = stats_of(w);
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	s2 = stats_of(w);
	ck_assert_int_ne(a, b);
	ck_assert_uint_eq(s1.kernel_watches, 1);
	ck_assert_uint_eq(s2.kernel_watches, 1);
	ck_assert_uint_eq(s2.logical_watches, 2);
	ck_assert_uint_eq(s2.dedup_hits, 1);
	/* The repeat created no kernel watch. inotify learns the wd with one
	 * mark call; fanotify knows the object by its handle (one
	 * name_to_handle_at) and makes no mark. Then, on both, the one read
	 * that keeps older events from the new watch. */
	ck_assert_uint_eq(mark_ops(&s1) - mark_ops(&s0), 1);
	ck_assert_uint_eq(mark_ops(&s2) - mark_ops(&s1), test_backend == FSNW_BACKEND_INOTIFY);
	ck_assert_uint_eq(syscalls(&s2) - syscalls(&s1), 2);
	if (test_backend == FSNW_BACKEND_FANOTIFY)
		ck_assert_uint_eq(s2.sys_name_to_handle_at - s1.sys_name_to_handle_at, 1);

	write_bytes(dir, "f", "x");
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	evs_free(evs);

	/* Not the last: no syscall at all. */
	s1 = stats_of(w);
	ck_assert_int_eq(fsnw_remove(w, a), 0);
	s2 = stats_of(w);
	ck_assert_uint_eq(syscalls(&s2), syscalls(&s1));
	ck_assert_uint_eq(s2.kernel_watches, 1);

	/* The other keeps working. */
	write_bytes(dir, "f", "y");
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(evs[0].wid, b);
	evs_free(evs);

	/* The last: the kernel watch goes, with one mark operation. */
	s2 = stats_of(w);
	ck_assert_int_eq(fsnw_remove(w, b), 0);
	s3 = stats_of(w);
	ck_assert_uint_eq(s3.kernel_watches, 0);
	ck_assert_uint_eq(mark_ops(&s3) - mark_ops(&s2), 1);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(hard_links)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p1[PATH_MAX], p2[PATH_MAX];
	struct ev *evs;
	int a, b, n, i;

	touch(dir, "one");
	ck_assert_int_eq(link(pjoin(p1, dir, "one"), pjoin(p2, dir, "two")), 0);
	a = fsnw_add(w, p1, FSNW_MODIFY | FSNW_ATTRIB, 0);
	b = fsnw_add(w, p2, FSNW_MODIFY, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	write_bytes(dir, "two", "x");
	ck_assert_int_eq(chmod(p2, 0600), 0);
	n = collect(w, &evs, 16, 300);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 3);
	i = find_ev(evs, n, 0, a, FSNW_MODIFY, NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(evs[i].path, p1);
	i = find_ev(evs, n, 0, b, FSNW_MODIFY, NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(evs[i].path, p2);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_ATTRIB, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_ATTRIB, NULL), 0);
	evs_free(evs);

	ck_assert_int_eq(fsnw_remove(w, b), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	write_bytes(dir, "one", "y");
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(evs[0].wid, a);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(many_watchers_one_inode)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	int wids[200];
	struct ev *evs;
	int n;

	touch(dir, "f");
	pjoin(p, dir, "f");
	for (int i = 0; i < 200; i++) {
		wids[i] = fsnw_add(w, p, FSNW_ATTRIB, 0);
		ck_assert_int_gt(wids[i], 0);
	}
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	ck_assert_uint_eq(stats_of(w).dedup_hits, 199);
	ck_assert_int_eq(chmod(p, 0600), 0);
	n = collect(w, &evs, 400, 300);
	ck_assert_int_eq(n, 200);
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(count_ev(evs, n, wids[i], FSNW_ATTRIB, NULL), 1);
	evs_free(evs);
	s0 = stats_of(w);
	for (int i = 0; i < 199; i++)
		ck_assert_int_eq(fsnw_remove(w, wids[i]), 0);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.kernel_watches, 1);
	ck_assert_uint_eq(syscalls(&s1), syscalls(&s0));
	ck_assert_int_eq(fsnw_remove(w, wids[199]), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A watch added to a busy inode never receives what happened before it. */
START_TEST(no_event_older_than_watch)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	write_bytes(dir, "f", "old"); /* unread in the kernel */
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	n = collect(w, &evs, 16, 300);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, 0, NULL), 0);
	evs_free(evs);
	write_bytes(dir, "f", "new");
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* When the masks share no event bit, no older event can reach the new watch:
 * the add needs no read of the group fd. */
START_TEST(disjoint_masks_no_drain)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_ATTRIB, 0);
	ck_assert_int_eq(chmod(p, 0600), 0); /* unread in the kernel */
	s0 = stats_of(w);
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	s1 = stats_of(w);
	ck_assert_int_gt(b, 0);
	ck_assert_uint_eq(s1.dedup_hits, s0.dedup_hits + 1);
	ck_assert_uint_eq(s1.sys_read, s0.sys_read);
	write_bytes(dir, "f", "x");
	n = collect(w, &evs, 16, 300);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_ATTRIB, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(n, 2);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(dedup)
{
	Suite *s = suite_create("dedup");

	ADD_TEST(s, same_path_twice);
	ADD_TEST(s, hard_links);
	ADD_TEST(s, many_watchers_one_inode);
	ADD_TEST(s, no_event_older_than_watch);
	ADD_TEST(s, disjoint_masks_no_drain);
	return s;
}
