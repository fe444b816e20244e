/* SPDX-License-Identifier: MIT */
/*
 * Event behaviour through the library. These suites run once per backend
 * (meson passes --backend), so the same expectations hold for both.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-common.h"

START_TEST(file_events)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX], buf[4];
	struct ev *evs;
	int wid, n, fd;

	touch(dir, "f");
	wid = fsnw_add(w, pjoin(p, dir, "f"), FSNW_ALL_EVENTS, 0);
	ck_assert_int_gt(wid, 0);
	fd = open(p, O_RDWR);
	ck_assert_int_ge(fd, 0);
	pump(w);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	pump(w);
	ck_assert_int_eq(pread(fd, buf, 1, 0), 1);
	pump(w);
	close(fd);
	pump(w);
	ck_assert_int_eq(chmod(p, 0600), 0);
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 5);
	ck_assert_uint_eq(evs[0].mask, FSNW_OPEN);
	ck_assert_uint_eq(evs[1].mask, FSNW_MODIFY);
	ck_assert_uint_eq(evs[2].mask, FSNW_ACCESS);
	ck_assert_uint_eq(evs[3].mask, FSNW_CLOSE_WRITE);
	ck_assert_uint_eq(evs[4].mask, FSNW_ATTRIB);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(evs[i].wid, wid);
		ck_assert_str_eq(evs[i].path, p);
		ck_assert(!evs[i].has_name);
		ck_assert_uint_eq(evs[i].count, 1);
	}
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(dir_events)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], b[PATH_MAX];
	struct ev *evs;
	int wid, n, i;

	wid = fsnw_add(w, dir, FSNW_CREATE | FSNW_DELETE | FSNW_MOVE | FSNW_ATTRIB, 0);
	ck_assert_int_gt(wid, 0);
	touch(dir, "a");
	pump(w);
	make_dir(dir, "sub");
	pump(w);
	ck_assert_int_eq(rename(pjoin(a, dir, "a"), pjoin(b, dir, "b")), 0);
	pump(w);
	ck_assert_int_eq(unlink(b), 0);
	pump(w);
	ck_assert_int_eq(rmdir(pjoin(a, dir, "sub")), 0);
	n = collect_sync(w, &evs, 32, dir);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 6);
	i = find_ev(evs, n, 0, wid, FSNW_CREATE, "a");
	ck_assert_int_eq(i, 0);
	ck_assert_int_eq(find_ev(evs, n, 0, wid, FSNW_CREATE | FSNW_ISDIR, "sub"), 1);
	ck_assert_uint_eq(evs[2].mask, FSNW_MOVED_FROM);
	ck_assert_str_eq(evs[2].name, "a");
	ck_assert_uint_eq(evs[3].mask, FSNW_MOVED_TO);
	ck_assert_str_eq(evs[3].name, "b");
	ck_assert_uint_ne(evs[2].cookie, 0);
	ck_assert_uint_eq(evs[2].cookie, evs[3].cookie);
	ck_assert_int_eq(find_ev(evs, n, 0, wid, FSNW_DELETE, "b"), 4);
	ck_assert_int_eq(find_ev(evs, n, 0, wid, FSNW_DELETE | FSNW_ISDIR, "sub"), 5);
	for (i = 0; i < n; i++) {
		ck_assert_str_eq(evs[i].path, dir);
		ck_assert_uint_eq(evs[i].cookie != 0, (evs[i].mask & FSNW_MOVE) != 0);
	}
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(delete_self_then_ignored)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_DELETE_SELF | FSNW_ATTRIB, 0);
	b = fsnw_add(w, p, FSNW_MODIFY, 0); /* same inode, does not ask for DELETE_SELF */
	ck_assert_int_gt(a, 0);
	ck_assert_int_gt(b, 0);
	ck_assert_int_eq(unlink(p), 0);
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	/* a: ATTRIB (link count), DELETE_SELF, IGNORED. b: IGNORED only. */
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_DELETE_SELF, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_IGNORED, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_IGNORED, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, 0, NULL), 1);
	ck_assert_int_lt(find_ev(evs, n, 0, a, FSNW_DELETE_SELF, NULL),
			 find_ev(evs, n, 0, a, FSNW_IGNORED, NULL));
	/* IGNORED was the last event of each wid, and the wids are released. */
	ck_assert_int_eq(find_ev(evs, n, find_ev(evs, n, 0, a, FSNW_IGNORED, NULL) + 1, a, 0, NULL),
			 -1);
	ck_assert_int_eq(fsnw_remove(w, a), -ENOENT);
	ck_assert_int_eq(fsnw_remove(w, b), -ENOENT);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(own_mask_only)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	b = fsnw_add(w, p, FSNW_ATTRIB, 0);
	write_bytes(dir, "f", "x");
	ck_assert_int_eq(chmod(p, 0600), 0);
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_ATTRIB, NULL), 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(nothing_after_remove)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct ev *evs;
	struct fsnw_event ev[4];
	int a, b, n;

	a = fsnw_add(w, dir, FSNW_CREATE, 0);
	b = fsnw_add(w, dir, FSNW_CREATE, 0);
	touch(dir, "before");
	/* Pull the event into user space, then remove: it must not come out. */
	ck_assert_int_eq(fsnw_pump(w), 2);
	ck_assert_int_eq(fsnw_remove(w, a), 0);
	touch(dir, "after"); /* still in the kernel when a goes... */
	ck_assert_int_eq(fsnw_remove(w, b), 0);
	/* An absence, with no watch left to carry a sentinel: "after" is in the
	 * kernel's queue when collect_now starts, and its read takes it out
	 * (dropped_removed counts it), so nothing of it is still to come. */
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(fsnw_read(w, ev, 4, 0), 0);
	ck_assert_uint_eq(stats_of(w).dropped_removed, 2);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(remove_after_kernel_drop)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	touch(dir, "f");
	wid = fsnw_add(w, pjoin(p, dir, "f"), FSNW_ALL_EVENTS, 0);
	ck_assert_int_eq(unlink(p), 0);
	/* The kernel has dropped the watch; its IN_IGNORED is unread. Removing
	 * it races that drop and must still succeed. */
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	/* An absence: the unlink queued the IGNORED before it returned, so
	 * collect_now's reads meet it, and must not deliver it. */
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(count_ev(evs, n, wid, 0, NULL), 0);
	/* Pumped first, then removed: the queued IGNORED goes too. */
	touch(dir, "g");
	wid = fsnw_add(w, pjoin(p, dir, "g"), FSNW_ALL_EVENTS, 0);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_gt(fsnw_pump(w), 0);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	evs_free(evs);
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 0);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(oneshot)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int once, keep, n;

	touch(dir, "f");
	once = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, FSNW_WATCH_ONESHOT);
	keep = fsnw_add(w, p, FSNW_MODIFY | FSNW_ATTRIB, 0);
	/* An event the oneshot watch did not ask for does not end it. */
	ck_assert_int_eq(chmod(p, 0600), 0);
	ck_assert_int_gt(fsnw_pump(w), 0);
	write_bytes(dir, "f", "1");
	ck_assert_int_gt(fsnw_pump(w), 0);
	write_bytes(dir, "f", "2");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, once, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, once, FSNW_IGNORED, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, keep, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, keep, FSNW_ATTRIB, NULL), 1);
	ck_assert_uint_eq(evs[find_ev(evs, n, 0, keep, FSNW_MODIFY, NULL)].count, 2);
	ck_assert_int_eq(fsnw_remove(w, once), -ENOENT);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * Fill the kernel queue without reading. inotify: alternating writes and
 * reads make MODIFY, ACCESS, MODIFY, ... which it cannot merge. fanotify
 * merges every unread event on one object into one, so there it takes
 * creates of distinct names (and an unbounded user queue, so that the loss
 * is the kernel's alone).
 */
START_TEST(kernel_overflow)
{
	bool fan = test_backend == FSNW_BACKEND_FANOTIFY;
	struct fsnw *w = test_open(0, fan ? FSNW_QUEUE_UNLIMITED : 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n, fd, max_events = kernel_queue_max(fan);

	if (fan) {
		wid = fsnw_add(w, dir, FSNW_CREATE, 0);
		fd = open(dir, O_DIRECTORY | O_RDONLY);
		for (int i = 0; i < max_events + 10; i++) {
			snprintf(p, sizeof(p), "f%d", i);
			ck_assert_int_eq(mknodat(fd, p, S_IFREG | 0644, 0), 0);
		}
		close(fd);
		n = collect_now(w, &evs, max_events + 64);
		ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE, NULL), max_events);
	} else {
		touch(dir, "f");
		wid = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY | FSNW_ACCESS, 0);
		modify_access(p, max_events);
		n = collect_now(w, &evs, 64);
		dump_evs(evs, n);
		ck_assert_int_eq(count_ev(evs, n, wid, FSNW_MODIFY, NULL), 1);
		ck_assert_int_eq(count_ev(evs, n, wid, FSNW_ACCESS, NULL), 1);
	}
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 1);
	ck_assert_uint_eq(evs[n - 1].mask, FSNW_OVERFLOW);
	ck_assert_int_eq(evs[n - 1].wid, 0);
	ck_assert_uint_eq(stats_of(w).overflows_kernel, 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * inotify keeps one IN_EXCL_UNLINK per inode: a watch that asks for it must
 * not take events of unlinked children away from one that does not.
 */
START_TEST(excl_unlink_does_not_spread)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int plain, excl, n, fd;

	if (test_backend != FSNW_BACKEND_INOTIFY) {
		/* fanotify has no such flag; the library documents that. */
		ck_assert_int_gt(fsnw_add(w, dir, FSNW_MODIFY, FSNW_WATCH_EXCL_UNLINK), 0);
		goto out;
	}
	for (int order = 0; order < 2; order++) {
		if (order == 0) {
			plain = fsnw_add(w, dir, FSNW_MODIFY, 0);
			excl = fsnw_add(w, dir, FSNW_MODIFY, FSNW_WATCH_EXCL_UNLINK);
		} else {
			excl = fsnw_add(w, dir, FSNW_MODIFY, FSNW_WATCH_EXCL_UNLINK);
			plain = fsnw_add(w, dir, FSNW_MODIFY, 0);
		}
		ck_assert_int_gt(plain, 0);
		ck_assert_int_gt(excl, 0);
		fd = open(pjoin(p, dir, "f"), O_CREAT | O_WRONLY, 0644);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(unlink(p), 0);
		ck_assert_int_eq(write(fd, "x", 1), 1);
		close(fd);
		n = collect_now(w, &evs, 16);
		dump_evs(evs, n);
		ck_assert_int_eq(count_ev(evs, n, plain, FSNW_MODIFY, "f"), 1);
		evs_free(evs);
		fsnw_remove(w, plain);
		fsnw_remove(w, excl);
	}
out:
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A full kernel queue drops IN_IGNORED too. After the overflow the library
 * asks the kernel which watches it still holds, so the watch of a file
 * deleted meanwhile still ends with FSNW_IGNORED and releases its wid.
 */
START_TEST(ignored_lost_in_kernel_overflow)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char busy[PATH_MAX], doomed[PATH_MAX];
	struct ev *evs;
	int b, d, n;

	if (test_backend != FSNW_BACKEND_INOTIFY) {
		/* fanotify merges repeats on one object in the kernel, so this
		 * load does not fill its queue; it has no IN_IGNORED to lose. */
		fsnw_close(w);
		tmpdir_remove(dir);
		return;
	}
	touch(dir, "busy");
	touch(dir, "doomed");
	b = fsnw_add(w, pjoin(busy, dir, "busy"), FSNW_MODIFY | FSNW_ACCESS, 0);
	d = fsnw_add(w, pjoin(doomed, dir, "doomed"), FSNW_DELETE_SELF, 0);
	ck_assert_int_gt(b, 0);
	ck_assert_int_gt(d, 0);
	modify_access(busy, kernel_queue_max(false) / 2 + 1);
	ck_assert_int_eq(unlink(doomed), 0); /* its notices find the queue full */
	n = collect_now(w, &evs, 64);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, d, FSNW_IGNORED, NULL), 1);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	ck_assert_uint_eq(stats_of(w).logical_watches, 1);
	ck_assert_int_eq(fsnw_remove(w, d), -ENOENT);
	ck_assert_int_eq(fsnw_remove(w, b), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A reader that takes fewer events a call than the kernel holds, behind a
 * queue that holds some already (a pump, a tree's complete drain): each
 * call takes what waits, and reads the kernel only when the queue cannot
 * fill its array, so the queue does not grow past its capacity while the
 * kernel's queue has room. 44 events wait in a 64-event queue and 48 in the
 * kernel; reads of 8 take all 92, in order, without an overflow.
 */
START_TEST(small_reads_behind_a_queue)
{
	struct fsnw *w = test_open(0, 64, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[8];
	char name[16];
	int wid, n, seen = 0;

	wid = fsnw_add(w, dir, FSNW_CREATE, 0);
	ck_assert_int_gt(wid, 0);
	for (int i = 0; i < 44; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		touch(dir, name);
	}
	ck_assert_int_eq(fsnw_pump(w), 44);
	for (int i = 0; i < 48; i++) {
		snprintf(name, sizeof(name), "g%d", i);
		touch(dir, name);
	}
	while ((n = fsnw_read(w, ev, 8, 0)) > 0) {
		for (int k = 0; k < n; k++, seen++) {
			ck_assert_msg(!(ev[k].mask & FSNW_OVERFLOW), "overflow after %d events",
				      seen);
			snprintf(name, sizeof(name), seen < 44 ? "f%d" : "g%d",
				 seen < 44 ? seen : seen - 44);
			ck_assert_int_eq(ev[k].wid, wid);
			ck_assert_str_eq(ev[k].name, name);
		}
	}
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(seen, 92);
	ck_assert_uint_eq(stats_of(w).overflows_queue, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * The test helpers' sync point: what another process made before the
 * sentinel has all been read when collect_sync returns, and the sentinel's
 * copies (one for each watch of its directory) are read with it, not after.
 */
START_TEST(sentinel_follows_other_process)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[4];
	struct ev *evs;
	int a, b, n, status;
	pid_t pid;

	a = fsnw_add(w, dir, FSNW_CREATE, 0);
	b = fsnw_add(w, dir, FSNW_CREATE | FSNW_DELETE, 0);
	ck_assert_int_gt(a, 0);
	ck_assert_int_gt(b, 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (int i = 0; i < 50; i++) {
			char p[PATH_MAX];

			snprintf(p, sizeof(p), "%s/c%d", dir, i);
			if (mknod(p, S_IFREG | 0644, 0) < 0)
				_exit(1);
		}
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	n = collect_sync(w, &evs, 128, dir);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 100);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_CREATE, NULL), 50);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_CREATE, NULL), 50);
	for (int i = 0; i < n; i++)
		ck_assert_msg(strncmp(evs[i].name, SENTINEL_PREFIX, strlen(SENTINEL_PREFIX)),
			      "a sentinel's event returned");
	evs_free(evs);
	/* Nothing of the sentinel is left for the next read. */
	ck_assert_int_eq(fsnw_read(w, ev, 4, 0), 0);
	/* A second one in the same directory: a name of its own. */
	n = collect_sync(w, &evs, 8, dir);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	ck_assert_int_eq(fsnw_read(w, ev, 4, 0), 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(events)
{
	Suite *s = suite_create("events");

	ADD_TEST(s, file_events);
	ADD_TEST(s, dir_events);
	ADD_TEST(s, delete_self_then_ignored);
	ADD_TEST(s, own_mask_only);
	ADD_TEST(s, nothing_after_remove);
	ADD_TEST(s, remove_after_kernel_drop);
	ADD_TEST(s, oneshot);
	ADD_TEST(s, kernel_overflow);
	ADD_TEST(s, excl_unlink_does_not_spread);
	ADD_TEST(s, ignored_lost_in_kernel_overflow);
	ADD_TEST(s, sentinel_follows_other_process);
	ADD_TEST(s, small_reads_behind_a_queue);
	return s;
}
