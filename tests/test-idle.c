/* SPDX-License-Identifier: MIT */
/* The idle cache: park, revive, evict, with exact syscall counts. */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "test-common.h"

static uint64_t marks(const struct fsnw_stats *s)
{
	return s->sys_inotify_add_watch + s->sys_fanotify_mark;
}

static uint64_t unmarks(const struct fsnw_stats *s)
{
	/* fanotify counts both directions in sys_fanotify_mark; the inotify
	 * counts are exact and the tests below check them on that backend. */
	return s->sys_inotify_rm_watch;
}

START_TEST(park_and_revive)
{
	struct fsnw *w = test_open(0, 0, 2);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats a, b;
	int wid;

	touch(dir, "f");
	wid = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	a = stats_of(w);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	b = stats_of(w);
	/* Parked: no syscall, the kernel watch stays. */
	ck_assert_uint_eq(b.kernel_watches, 1);
	ck_assert_uint_eq(b.parked_watches, 1);
	ck_assert_uint_eq(b.logical_watches, 0);
	ck_assert_uint_eq(b.idle_parks, 1);
	ck_assert_uint_eq(marks(&b), marks(&a));
	ck_assert_uint_eq(unmarks(&b), unmarks(&a));

	wid = fsnw_add(w, p, FSNW_MODIFY, 0);
	ck_assert_int_gt(wid, 0);
	a = stats_of(w);
	/* Revived, no new kernel watch: inotify learns the wd with one mark
	 * call, fanotify knows the object by its handle and makes none. */
	ck_assert_uint_eq(a.kernel_watches, 1);
	ck_assert_uint_eq(a.parked_watches, 0);
	ck_assert_uint_eq(a.idle_revives, 1);
	ck_assert_uint_eq(marks(&a), marks(&b) + (test_backend == FSNW_BACKEND_INOTIFY));
	if (test_backend == FSNW_BACKEND_FANOTIFY)
		ck_assert_uint_eq(a.sys_name_to_handle_at, b.sys_name_to_handle_at + 1);
	/* Nothing older may reach it: a look at the ring, or a read. */
	ck_assert_uint_eq(a.sys_read, b.sys_read + (a.ring_active ? 0 : 1));
	ck_assert_uint_eq(a.settles_ring + a.settles_read, b.settles_ring + b.settles_read + 1);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(parked_deliver_nothing)
{
	struct fsnw *w = test_open(0, 0, 4);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	uint64_t dropped;
	int wid, n;

	touch(dir, "f");
	wid = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	write_bytes(dir, "f", "while parked"); /* unread in the kernel at revive */
	wid = fsnw_add(w, p, FSNW_MODIFY, 0);
	/* An absence: the write's events were queued before the revive, and
	 * were read and dropped (dropped_parked) by the time collect_now is done. */
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 0);
	ck_assert_uint_ge(stats_of(w).dropped_parked, 1);
	evs_free(evs);
	write_bytes(dir, "f", "after");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(evs[0].wid, wid);
	evs_free(evs);

	/* Parked and nobody reads: events are dropped at the next read (an
	 * absence, proved as above). */
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	write_bytes(dir, "f", "x");
	dropped = stats_of(w).dropped_parked;
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 0);
	ck_assert_uint_gt(stats_of(w).dropped_parked, dropped);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(lru_eviction)
{
	struct fsnw *w = test_open(0, 0, 2);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	const char *names[] = { "a", "b", "c" };
	struct fsnw_stats s0, s1;
	int wids[3];

	for (int i = 0; i < 3; i++) {
		touch(dir, names[i]);
		wids[i] = fsnw_add(w, pjoin(p, dir, names[i]), FSNW_ATTRIB, 0);
	}
	s0 = stats_of(w);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(fsnw_remove(w, wids[i]), 0);
	s1 = stats_of(w);
	/* "a" was parked first, so it is the one evicted, with a real remove. */
	ck_assert_uint_eq(s1.idle_parks, 3);
	ck_assert_uint_eq(s1.idle_evictions, 1);
	ck_assert_uint_eq(s1.parked_watches, 2);
	ck_assert_uint_eq(s1.kernel_watches, 2);
	if (test_backend == FSNW_BACKEND_INOTIFY)
		ck_assert_uint_eq(s1.sys_inotify_rm_watch - s0.sys_inotify_rm_watch, 1);
	/* c and b revive; a needs a new kernel watch. */
	s0 = stats_of(w);
	fsnw_add(w, pjoin(p, dir, "c"), FSNW_ATTRIB, 0);
	fsnw_add(w, pjoin(p, dir, "b"), FSNW_ATTRIB, 0);
	fsnw_add(w, pjoin(p, dir, "a"), FSNW_ATTRIB, 0);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.idle_revives - s0.idle_revives, 2);
	ck_assert_uint_eq(s1.kernel_watches, 3);
	ck_assert_uint_eq(s1.parked_watches, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(parked_watch_dropped_by_kernel)
{
	struct fsnw *w = test_open(0, 0, 2);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	touch(dir, "f");
	wid = fsnw_add(w, pjoin(p, dir, "f"), FSNW_ATTRIB, 0);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	ck_assert_uint_eq(stats_of(w).parked_watches, 1);
	ck_assert_int_eq(unlink(p), 0);
	/* The unlink queued the drop before it returned: collect_now reads it
	 * (kernel_drops), and nothing of it must come out. */
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 0);
	ck_assert_uint_eq(stats_of(w).parked_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_drops, 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A parked watch whose IN_IGNORED a full kernel queue dropped: the
 * reconcile after the overflow finds it gone, from the idle cache, and
 * frees it without a word to anyone (its wid went with the remove).
 */
START_TEST(parked_watch_lost_in_kernel_overflow)
{
	struct fsnw *w = test_open(0, 0, 2);
	char *dir = tmpdir_make();
	char busy[PATH_MAX], p[PATH_MAX];
	struct ev *evs;
	int b, wid, n;

	if (test_backend != FSNW_BACKEND_INOTIFY) {
		/* fanotify has no IN_IGNORED to lose (and no reconcile). */
		fsnw_close(w);
		tmpdir_remove(dir);
		return;
	}
	touch(dir, "busy");
	touch(dir, "parked");
	b = fsnw_add(w, pjoin(busy, dir, "busy"), FSNW_MODIFY | FSNW_ACCESS, 0);
	wid = fsnw_add(w, pjoin(p, dir, "parked"), FSNW_ATTRIB, 0);
	ck_assert_int_gt(b, 0);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	ck_assert_uint_eq(stats_of(w).parked_watches, 1);
	modify_access(busy, kernel_queue_max(false) / 2 + 1);
	ck_assert_int_eq(unlink(p), 0); /* its IN_IGNORED finds the queue full */
	n = collect_now(w, &evs, 64);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, wid, 0, NULL), 0);
	ck_assert_uint_eq(stats_of(w).parked_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	ck_assert_uint_eq(stats_of(w).kernel_drops, 1);
	ck_assert_uint_eq(stats_of(w).logical_watches, 1);
	ck_assert_int_eq(fsnw_remove(w, b), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(tree_parks_its_directories)
{
	struct fsnw *w = test_open(0, 0, 16);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	int wid;

	make_dir(dir, "a");
	make_dir(pjoin(p, dir, "a"), "b");
	wid = fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE);
	s0 = stats_of(w);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.parked_watches, s0.kernel_watches);
	wid = fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.idle_revives, s0.kernel_watches);
	ck_assert_uint_eq(s1.kernel_watches, s0.kernel_watches);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(idle)
{
	Suite *s = suite_create("idle");

	ADD_TEST(s, park_and_revive);
	ADD_TEST(s, parked_deliver_nothing);
	ADD_TEST(s, lru_eviction);
	ADD_TEST(s, parked_watch_dropped_by_kernel);
	ADD_TEST(s, parked_watch_lost_in_kernel_overflow);
	ADD_TEST(s, tree_parks_its_directories);
	return s;
}
