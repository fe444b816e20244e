/* SPDX-License-Identifier: MIT */
/*
 * Trees on fanotify without a walk (lib/fantree.h): an add that reads
 * nothing below the root, events placed by resolving their directory's
 * handle, renames and moves at any depth with a cold or a warm cache,
 * `rm -rf` of directories the library never met, the cache's bound, the fd
 * limit, pending trees, nested trees and mounts. Runs with --backend
 * fanotify (skipped where it cannot open); each case on a tmpfs of its own.
 * After its own changes a case reads what the handle has now (collect_now):
 * the kernel holds their events, and a read goes on until the trees have
 * placed them all (resolutions and listings of moved directories included).
 * After rm, another process, a sentinel says when (collect_sync).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mem.h"
#include "test-common.h"

#define ALL (FSNW_ALL_EVENTS)

#define at pjoin

/* rm -rf, as the shell's: it reads each directory before it removes it. */
static void rm_rf(const char *dir, const char *rel)
{
	char cmd[2 * PATH_MAX];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s/%s'", dir, rel);
	ck_assert_msg(system(cmd) == 0, "%s failed", cmd);
}

/* Run fn(root) in a child (no Check there): 0 passed, 77 its set-up (a
 * mount, a lower fd limit, another user) was refused, else the step that
 * failed. The suite runs as root, where none is refused: a refusal fails the
 * test rather than let it pass having checked nothing. */
/* Run fn in a forked child: its exit status, 0 when every step held (else
 * the number of the step that failed; 77: its set-up was refused). */
static int in_child(int (*fn)(const char *root), const char *root)
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(fn(root));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* The system calls of every kind a handle has made. */
static uint64_t syscalls(const struct fsnw_stats *s)
{
	return s->sys_fanotify_init + s->sys_fanotify_mark + s->sys_name_to_handle_at +
	       s->sys_open_by_handle_at + s->sys_read + s->sys_poll + s->sys_eventfd +
	       s->sys_walk + s->sys_other;
}

/* ---- the add ---- */

/* An add costs the same system calls for 10 directories as for 1110. */
START_TEST(add_reads_nothing_below)
{
	char *root = tmpfs_private();
	char p[PATH_MAX], name[64];
	uint64_t cost[2];
	struct ev *evs;
	int n;

	make_dirs(root, "small/a");
	for (int i = 0; i < 10; i++) {
		for (int j = 0; j < 110; j++) {
			snprintf(name, sizeof(name), "big/d%d/e%d", i, j);
			make_dirs(root, name);
		}
	}
	for (int k = 0; k < 2; k++) {
		struct fsnw *w = test_open(0, 0, 0);
		struct fsnw_stats s0 = stats_of(w), s1;
		int wid = fsnw_add(w, at(p, root, k ? "big" : "small"), ALL, FSNW_WATCH_TREE);

		ck_assert_int_gt(wid, 0);
		s1 = stats_of(w);
		cost[k] = syscalls(&s1) - syscalls(&s0);
		ck_assert_uint_eq(s1.sys_walk, 0);
		ck_assert_uint_eq(s1.sys_fanotify_mark - s0.sys_fanotify_mark, 1);
		ck_assert_uint_eq(s1.kernel_watches, 1);
		if (k) {
			/* And the deepest directory is watched all the same. */
			touch(root, "big/d9/e109/f");
			n = collect_now(w, &evs, 16);
			dump_evs(evs, n);
			ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE,
						 at(p, root, "big/d9/e109"), "f"), 0);
			evs_free(evs);
		}
		fsnw_close(w);
	}
	ck_assert_uint_eq(cost[0], cost[1]);
	tmpfs_private_remove(root);
}
END_TEST

/* Once a directory is known, its events cost no resolution. */
START_TEST(warm_directory_resolves_once)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char p[PATH_MAX], name[32];
	struct fsnw_stats s0;
	struct ev *evs;
	int wid, n;

	make_dirs(root, "t/a/b");
	wid = fsnw_add(w, at(p, root, "t"), FSNW_CREATE, FSNW_WATCH_TREE);
	touch(root, "t/a/b/first");
	n = collect_now(w, &evs, 8);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, root, "t/a/b"), "first"), 0);
	evs_free(evs);
	s0 = stats_of(w);
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t/a/b/f%d", i);
		touch(root, name);
	}
	n = collect_now(w, &evs, 200);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE, NULL), 100);
	ck_assert_uint_eq(stats_of(w).sys_open_by_handle_at, s0.sys_open_by_handle_at);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- deletes ---- */

/*
 * rm -rf of directories the library never met: by the time it reads, their
 * handles are stale and the kernel has merged each one's DELETE_SELF into
 * its first event. Every delete is reported where it happened.
 */
START_TEST(rm_rf_unseen_subtree)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char r[PATH_MAX], p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(root, "r/a/b/c");
	touch(root, "r/a/b/c/f");
	at(r, root, "r");
	wid = fsnw_add(w, r, ALL, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	rm_rf(r, "a");
	n = collect_sync(w, &evs, 64, r);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE, at(p, r, "a/b/c"), "f"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, at(p, r, "a/b"), "c"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, at(p, r, "a"), "b"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, r, "a"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE_SELF, at(p, r, "a/b/c"), NULL), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE_SELF, at(p, r, "a"), NULL), 0);
	/* In order: f before c before b before a. */
	ck_assert_int_lt(find_ev_at(evs, n, wid, FSNW_DELETE, at(p, r, "a/b/c"), "f"),
			 find_ev_at(evs, n, wid, FSNW_DELETE, r, "a"));
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_IGNORED, NULL), 0);
	evs_free(evs);
	/* The gone directories left the cache. */
	ck_assert_uint_le(stats_of(w).tree_dirs_cached, 3);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* The same outside the tree, on its filesystem: dropped, and no overflow. */
START_TEST(rm_rf_outside_is_quiet)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(root, "r/in");
	make_dirs(root, "o/x/y/z");
	touch(root, "o/x/y/z/g");
	wid = fsnw_add(w, at(p, root, "r"), ALL, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	rm_rf(root, "o/x");
	/* An absence: nothing of what went outside the tree comes, however
	 * late. */
	n = collect(w, &evs, 64, 300);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 0);
	ck_assert_uint_eq(stats_of(w).overflows_unresolved, 0);
	ck_assert_uint_ge(stats_of(w).dropped_outside, 4);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* A write to the file at rel below root. */
static void write_at(const char *root, const char *rel)
{
	char p[PATH_MAX];
	int fd = open(at(p, root, rel), O_WRONLY | O_APPEND | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
}

/* A write to root/o/f, outside the trees: the stats around it, and the
 * events a read then returns. */
static int write_outside(struct fsnw *w, const char *root, struct fsnw_stats *s0,
			 struct fsnw_stats *s1)
{
	struct ev *evs;
	int n;

	*s0 = stats_of(w);
	write_at(root, "o/f");
	/* An absence: what the callers assert of a write outside the trees. */
	n = collect(w, &evs, 16, 100);
	evs_free(evs);
	*s1 = stats_of(w);
	return n;
}

/*
 * A wider tree removed: the filesystem mark narrows to what the trees left
 * ask for, so that writes outside them are not read at all. The tree left
 * hears what it asked for.
 */
START_TEST(wide_tree_gone_narrows_mark)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	struct ev *evs;
	int narrow, wide, n;

	make_dirs(root, "t");
	make_dirs(root, "o");
	touch(root, "o/f");
	narrow = fsnw_add(w, at(p, root, "t"), FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(narrow, 0);
	wide = fsnw_add(w, at(p, root, "t"), ALL, FSNW_WATCH_TREE);
	ck_assert_int_gt(wide, 0);
	ck_assert_int_eq(write_outside(w, root, &s0, &s1), 0);
	ck_assert_uint_gt(s1.dropped_outside, s0.dropped_outside);
	ck_assert_int_eq(fsnw_remove(w, wide), 0);
	n = collect_now(w, &evs, 16);
	evs_free(evs);
	ck_assert_int_eq(write_outside(w, root, &s0, &s1), 0);
	ck_assert_uint_eq(s1.events_read, s0.events_read);
	ck_assert_uint_eq(s1.sys_fanotify_mark, s0.sys_fanotify_mark);
	touch(root, "t/new");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, narrow, FSNW_CREATE, at(p, root, "t"), "new"), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* A directory held open while removed: its DELETE_SELF comes at the close. */
START_TEST(late_delete_self)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char r[PATH_MAX], p[PATH_MAX];
	struct ev *evs;
	int wid, n, fd;

	make_dirs(root, "r/d");
	at(r, root, "r");
	wid = fsnw_add(w, r, FSNW_DELETE | FSNW_DELETE_SELF, FSNW_WATCH_TREE);
	fd = open(at(p, r, "d"), O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(rmdir(p), 0);
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, r, "d"), 0);
	evs_free(evs);
	close(fd);
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE_SELF | FSNW_ISDIR, p, NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- renames and moves ---- */

/*
 * Read after the fact, with a cold cache: what happened to a directory
 * before it moved out is reported inside the tree, what happens after is
 * not; what one moved in holds is reported as synthetic creates, at its
 * place in the tree, and what happens in it after as it happens.
 */
START_TEST(cold_moves_in_and_out)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char r[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(root, "r/a/deep");
	make_dirs(root, "o/x/y");
	at(r, root, "r");
	wid = fsnw_add(w, r, FSNW_CREATE | FSNW_ATTRIB | FSNW_MOVE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(chmod(at(p, r, "a"), 0700), 0);
	touch(r, "a/deep/before");
	ck_assert_int_eq(rename(p, at(q, root, "o/a2")), 0);
	touch(root, "o/a2/deep/after");
	touch(root, "o/x/y/outside");
	ck_assert_int_eq(rename(at(p, root, "o/x"), at(q, r, "x")), 0);
	touch(r, "x/y/inside");
	n = collect_now(w, &evs, 64);
	dump_evs(evs, n);
	/* a's own change, at a's place then, also to its parent by name. */
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_ATTRIB | FSNW_ISDIR, at(p, r, "a"), NULL), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_ATTRIB | FSNW_ISDIR, r, "a"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, r, "a/deep"), "before"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_FROM | FSNW_ISDIR, r, "a"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_TO | FSNW_ISDIR, r, "x"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, r, "x/y"), "inside"), 0);
	/* An absence, proved by order: "after" was queued before "inside". */
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE, "after"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE | FSNW_ISDIR | FSNW_SYNTHETIC, at(p, r, "x"),
				 "y"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE | FSNW_SYNTHETIC, at(p, r, "x/y"),
				 "outside"), 0);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* The same with every directory known first (a warm cache). */
START_TEST(warm_moves_in_and_out)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char r[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(root, "r/a/deep");
	make_dirs(root, "o/x/y");
	at(r, root, "r");
	wid = fsnw_add(w, r, FSNW_CREATE | FSNW_MOVE, FSNW_WATCH_TREE);
	touch(r, "a/deep/warm");
	touch(root, "o/x/y/warm");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 1);
	evs_free(evs);
	ck_assert_int_eq(rename(at(p, r, "a"), at(q, root, "o/a2")), 0);
	touch(root, "o/a2/deep/after");
	ck_assert_int_eq(rename(at(p, root, "o/x"), at(q, r, "x")), 0);
	touch(r, "x/y/inside");
	ck_assert_int_eq(rename(at(p, r, "x"), at(q, r, "x2")), 0);
	touch(r, "x2/y/renamed");
	n = collect_now(w, &evs, 64);
	dump_evs(evs, n);
	/* What x held was not known to the caller when "inside" and "renamed"
	 * were made in x/y: they come as what x2/y holds, after the rename.
	 * An absence, proved by order: "after" was queued before "inside". */
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE, "after"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, r, "x2/y"), "inside"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, r, "x2/y"), "renamed"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, r, "x2/y"), "warm"), 0);
	ck_assert_uint_eq(stats_of(w).overflows_unresolved, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/*
 * A new directory filled and renamed before anything is read (mkdir,
 * fill, rename): every step is reported where it happened, and what was
 * moved in keeps being heard at its new place.
 */
START_TEST(filled_then_renamed)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char t[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(root, "t/K/include/linux");
	at(t, root, "t");
	wid = fsnw_add(w, t, FSNW_CREATE | FSNW_MOVE, FSNW_WATCH_TREE);
	make_dir(t, "new");
	ck_assert_int_eq(rename(at(p, t, "K/include"), at(q, t, "new/inc")), 0);
	ck_assert_int_eq(rename(at(p, t, "new"), at(q, t, "K/new2")), 0);
	touch(t, "K/new2/inc/linux/late");
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, t, "new"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_FROM | FSNW_ISDIR, at(p, t, "K"),
				 "include"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_TO | FSNW_ISDIR, at(p, t, "new"), "inc"),
			 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_FROM | FSNW_ISDIR, t, "new"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_TO | FSNW_ISDIR, at(p, t, "K"), "new2"),
			 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, t, "K/new2/inc/linux"), "late"),
			 0);
	ck_assert_int_eq(count_ev(evs, n, 0, FSNW_OVERFLOW, NULL), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* The tree's directory renamed, or one above it: paths follow it. */
START_TEST(root_renamed)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wid, n, top, moved;

	make_dirs(root, "p/r/a");
	wid = fsnw_add(w, at(p, root, "p/r"), FSNW_CREATE | FSNW_MOVE_SELF, FSNW_WATCH_TREE);
	touch(root, "p/r/a/known");
	ck_assert_int_eq(rename(at(p, root, "p/r"), at(q, root, "p/r2")), 0);
	make_dirs(root, "p/r2/a/nd");
	touch(root, "p/r2/a/nd/late");
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, root, "p/r/a"), "known"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, at(p, root, "p/r2/a"),
				 "nd"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(p, root, "p/r2/a/nd"), "late"), 0);
	/* Its own rename: the kernel's MOVE_SELF, at the new path, and no other. */
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_MOVE_SELF, NULL), 1);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVE_SELF, at(p, root, "p/r2"), NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_SYNTHETIC, NULL), 0);
	evs_free(evs);
	/* A directory above it: a synthetic MOVE_SELF at the new path says so,
	 * before the events that report it. */
	ck_assert_int_eq(rename(at(p, root, "p"), at(q, root, "p2")), 0);
	touch(root, "p2/r2/top");
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	top = find_ev_at(evs, n, wid, FSNW_CREATE, at(p, root, "p2/r2"), "top");
	moved = find_ev_at(evs, n, wid, FSNW_MOVE_SELF | FSNW_SYNTHETIC, at(p, root, "p2/r2"), NULL);
	ck_assert_int_ge(top, 0);
	ck_assert_int_ge(moved, 0);
	ck_assert_int_lt(moved, top);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_MOVE_SELF, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_IGNORED, NULL), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- the cache ---- */

START_TEST(cache_bounded)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend, .tree_cache = 16,
				  .flags = FSNW_OPEN_NO_MERGE };
	char *root = tmpfs_private();
	char p[PATH_MAX], d[PATH_MAX], name[64];
	struct fsnw_stats st;
	struct fsnw *w;
	struct ev *evs;
	int wid, n;

	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "t/d%d", i);
		make_dirs(root, name);
	}
	ck_assert_int_eq(fsnw_open(&w, &o), 0);
	wid = fsnw_add(w, at(p, root, "t"), FSNW_CREATE, FSNW_WATCH_TREE);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 100; i++) {
			snprintf(name, sizeof(name), "t/d%d/f%d", i, round);
			touch(root, name);
		}
		n = collect_now(w, &evs, 256);
		ck_assert_int_eq(n, 100);
		for (int i = 0; i < 100; i++) {
			snprintf(name, sizeof(name), "t/d%d", i);
			snprintf(p, sizeof(p), "f%d", round);
			ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE, at(d, root, name), p),
					 0);
		}
		evs_free(evs);
		st = stats_of(w);
		/* The bound, and the tree's directory and the view's root kept. */
		ck_assert_uint_le(st.tree_dirs_cached, 16 + 2);
		ck_assert_uint_ge(st.tree_cache_evictions, (round + 1) * 84);
	}
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* Directories that are gone leave the cache. */
START_TEST(deleted_leave_cache)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char p[PATH_MAX], name[64];
	uint64_t before;
	struct ev *evs;
	int n;

	make_dirs(root, "t");
	ck_assert_int_gt(fsnw_add(w, at(p, root, "t"), FSNW_CREATE, FSNW_WATCH_TREE), 0);
	before = stats_of(w).tree_dirs_cached;
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t/d%d/e", i);
		make_dirs(root, name);
	}
	n = collect_now(w, &evs, 64);
	ck_assert_int_eq(n, 40);
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).tree_dirs_cached, before + 40);
	for (int i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "t/d%d", i);
		rm_rf(root, name);
	}
	n = collect_sync(w, &evs, 64, at(p, root, "t"));
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).tree_dirs_cached, before);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- limits ---- */

/* In a child: no fd left to resolve with means FSNW_OVERFLOW, not silence. */
static int fd_limit_child(const char *root)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend };
	struct fsnw_stats st = { .size = sizeof(st) };
	struct fsnw_event ev[64];
	struct rlimit rl, low;
	struct fsnw *w;
	char p[PATH_MAX];
	int n, free_fd, overflow = 0, creates = 0;

	if (fsnw_open(&w, &o) < 0)
		return 1;
	snprintf(p, sizeof(p), "%s/t", root);
	if (fsnw_add(w, p, FSNW_CREATE, FSNW_WATCH_TREE) <= 0)
		return 2;
	getrlimit(RLIMIT_NOFILE, &rl);
	low = rl;
	/* The lowest free fd is the next one: a limit there leaves none. */
	free_fd = dup(0);
	close(free_fd);
	low.rlim_cur = (rlim_t)free_fd;
	if (free_fd < 0 || setrlimit(RLIMIT_NOFILE, &low) < 0)
		return 77;
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/t/d%d/f", root, i);
		if (mknod(p, S_IFREG | 0644, 0) < 0)
			return 3;
	}
	/* Reads of what the handle has now: the mknods queued their events
	 * before they returned (collect_now's sync point). */
	while ((n = fsnw_read(w, ev, 64, 0)) > 0)
		for (int i = 0; i < n; i++) {
			overflow += (ev[i].mask & FSNW_OVERFLOW) != 0;
			creates += (ev[i].mask & FSNW_CREATE) != 0;
		}
	fsnw_get_stats(w, &st);
	if (overflow != 1 || st.overflows_unresolved < 1 || creates) {
		fprintf(stderr, "overflows %d (unresolved %llu), creates %d\n", overflow,
			(unsigned long long)st.overflows_unresolved, creates);
		return 4;
	}
	/* With fds again, the same directories resolve. */
	setrlimit(RLIMIT_NOFILE, &rl);
	for (int i = 0; i < 5; i++) {
		snprintf(p, sizeof(p), "%s/t/d%d/g", root, i);
		if (mknod(p, S_IFREG | 0644, 0) < 0)
			return 5;
	}
	creates = 0;
	while ((n = fsnw_read(w, ev, 64, 0)) > 0)
		for (int i = 0; i < n; i++)
			creates += (ev[i].mask & FSNW_CREATE) != 0;
	fsnw_close(w);
	return creates == 5 ? 0 : 6;
}

START_TEST(fd_limit_is_an_overflow)
{
	char *root = tmpfs_private();
	char name[32];

	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "t/d%d", i);
		make_dirs(root, name);
	}
	ck_assert_int_eq(in_child(fd_limit_child, root), 0);
	tmpfs_private_remove(root);
}
END_TEST

/*
 * Without privilege: a tree asked for with FSNW_OPEN_BIG_TREES gets inotify
 * (and a walk) and works; an explicit fanotify handle is -EPERM.
 */
static int unprivileged_child(const char *root)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_AUTO,
				  .flags = FSNW_OPEN_BIG_TREES };
	struct fsnw_event ev[8];
	struct fsnw *w = NULL;
	char t[PATH_MAX], p[PATH_MAX];
	int wid, n;

	if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
	    setresuid(65534, 65534, 65534) < 0)
		return 77;
	snprintf(t, sizeof(t), "%s/t", root);
	if (fsnw_open(&w, &o) < 0 || fsnw_get_backend(w) != FSNW_BACKEND_INOTIFY)
		return 1;
	wid = fsnw_add(w, t, FSNW_CREATE, FSNW_WATCH_TREE);
	if (wid <= 0)
		return 2;
	snprintf(p, sizeof(p), "%s/t/a/f", root);
	if (mknod(p, S_IFREG | 0644, 0) < 0)
		return 3;
	n = fsnw_read(w, ev, 8, 1000);
	if (n != 1 || ev[0].wid != wid || strcmp(ev[0].name, "f"))
		return 4;
	fsnw_close(w);
	w = NULL;
	o.backend = FSNW_BACKEND_FANOTIFY;
	return fsnw_open(&w, &o) == -EPERM && !w ? 0 : 5;
}

START_TEST(unprivileged_tree_gets_inotify)
{
	char *root = tmpfs_private();
	char p[PATH_MAX];

	make_dirs(root, "t/a");
	ck_assert_int_eq(chown(at(p, root, "t"), 65534, 65534), 0);
	ck_assert_int_eq(chown(at(p, root, "t/a"), 65534, 65534), 0);
	ck_assert_int_eq(in_child(unprivileged_child, root), 0);
	tmpfs_private_remove(root);
}
END_TEST

START_TEST(no_file_handles)
{
	struct fsnw *w = test_open(0, 0, 0);

	ck_assert_int_eq(fsnw_add(w, "/proc/sys", FSNW_CREATE, FSNW_WATCH_TREE), -EOPNOTSUPP);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	fsnw_close(w);
}
END_TEST

/* Any one allocation failing in a tree add: -ENOMEM and nothing left. */
START_TEST(alloc_fails_in_add)
{
	char *root = tmpfs_private();
	char p[PATH_MAX];
	bool hit = true;

	make_dirs(root, "t/a");
	for (long n = 0; hit; n++) {
		struct fsnw *w = test_open(0, 0, 0);
		struct fsnw_stats st;
		int wid;

		mem_fail_after(n);
		wid = fsnw_add(w, at(p, root, "t"), FSNW_CREATE, FSNW_WATCH_TREE);
		hit = mem_count() > n;
		mem_fail_after(-1);
		st = stats_of(w);
		if (wid < 0) {
			ck_assert_int_eq(wid, -ENOMEM);
			ck_assert_uint_eq(st.logical_watches, 0);
			ck_assert_uint_eq(st.kernel_watches, 0);
		} else {
			ck_assert_uint_eq(st.kernel_watches, 1);
		}
		fsnw_close(w);
	}
	tmpfs_private_remove(root);
}
END_TEST

/*
 * Any one allocation failing while events of directories met for the
 * first time are read: each event comes, or FSNW_OVERFLOW says it may not.
 */
START_TEST(alloc_fails_in_read_never_silent)
{
	char *root = tmpfs_private();
	char p[PATH_MAX], name[64];
	bool hit = true;

	make_dirs(root, "t/a/b");
	make_dirs(root, "t/c");
	for (long n = 0; hit; n++) {
		struct fsnw *w = test_open(0, 0, 0);
		struct ev *evs;
		int wid, got;

		wid = fsnw_add(w, at(p, root, "t"), FSNW_CREATE, FSNW_WATCH_TREE);
		ck_assert_int_gt(wid, 0);
		snprintf(name, sizeof(name), "t/a/b/f%ld", n);
		touch(root, name);
		snprintf(name, sizeof(name), "t/c/g%ld", n);
		touch(root, name);
		mem_fail_after(n);
		got = collect_now(w, &evs, 16);
		hit = mem_count() > n;
		mem_fail_after(-1);
		if (!count_ev(evs, got, 0, FSNW_OVERFLOW, NULL)) {
			snprintf(name, sizeof(name), "f%ld", n);
			ck_assert_int_ge(find_ev_at(evs, got, wid, FSNW_CREATE, at(p, root, "t/a/b"),
						 name), 0);
			snprintf(name, sizeof(name), "g%ld", n);
			ck_assert_int_ge(find_ev_at(evs, got, wid, FSNW_CREATE, at(p, root, "t/c"),
						 name), 0);
		}
		evs_free(evs);
		fsnw_close(w);
	}
	tmpfs_private_remove(root);
}
END_TEST

/* ---- several trees ---- */

/* A tree added after events of its filesystem were queued hears none of them. */
START_TEST(new_tree_hears_nothing_older)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char a[PATH_MAX], b[PATH_MAX];
	struct ev *evs;
	int wa, wb, n;

	make_dirs(root, "a");
	make_dirs(root, "b/sub");
	wa = fsnw_add(w, at(a, root, "a"), FSNW_CREATE, FSNW_WATCH_TREE);
	touch(root, "b/sub/old");
	touch(root, "a/seen");
	wb = fsnw_add(w, at(b, root, "b"), FSNW_CREATE, FSNW_WATCH_TREE);
	touch(root, "b/sub/new");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	/* An absence, proved by order: "old" was queued before "new". */
	ck_assert_int_eq(count_ev(evs, n, wb, FSNW_CREATE, "old"), 0);
	ck_assert_int_eq(count_ev(evs, n, wb, FSNW_CREATE, "new"), 1);
	ck_assert_int_eq(count_ev(evs, n, wa, FSNW_CREATE, "seen"), 1);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* Trees inside trees: each reports with its own path. */
START_TEST(nested_trees)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int outer, inner, n;

	make_dirs(root, "r/a/b");
	ck_assert_int_eq(symlink("a", at(p, root, "r/link")), 0);
	outer = fsnw_add(w, at(p, root, "r"), FSNW_CREATE, FSNW_WATCH_TREE);
	inner = fsnw_add(w, at(p, root, "r/link"), FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(inner, 0);
	touch(root, "r/a/b/f");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 2);
	ck_assert_int_ge(find_ev_at(evs, n, outer, FSNW_CREATE, at(q, root, "r/a/b"), "f"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, inner, FSNW_CREATE, at(q, root, "r/link/b"), "f"), 0);
	evs_free(evs);
	ck_assert_int_eq(fsnw_remove(w, outer), 0);
	touch(root, "r/a/b/g");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_ge(find_ev_at(evs, n, inner, FSNW_CREATE, at(q, root, "r/link/b"), "g"), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- mounts ---- */

/* A tmpfs and a bind mount below the tree; with FSNW_WATCH_ONE_FS only the bind. */
static int mounts_child(const char *root)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend };
	struct fsnw_event ev[16];
	char t[PATH_MAX], p[PATH_MAX], want[2][PATH_MAX];
	struct fsnw *w;
	int n, got[2] = { 0, 0 };

	snprintf(t, sizeof(t), "%s/t", root);
	snprintf(p, sizeof(p), "%s/t/m", root);
	if (mount("fsnw-sub", p, "tmpfs", 0, NULL) < 0)
		return 77;
	snprintf(p, sizeof(p), "%s/t/b", root);
	snprintf(want[1], sizeof(want[1]), "%s/elsewhere", root);
	if (mount(want[1], p, "none", MS_BIND, NULL) < 0)
		return 77;
	for (int one_fs = 0; one_fs < 2; one_fs++) {
		got[0] = got[1] = 0;
		if (fsnw_open(&w, &o) < 0 ||
		    fsnw_add(w, t, FSNW_CREATE, FSNW_WATCH_TREE |
			     (one_fs ? FSNW_WATCH_ONE_FS : 0)) <= 0)
			return 1;
		snprintf(p, sizeof(p), "%s/t/m/x%d", root, one_fs);
		if (mknod(p, S_IFREG | 0644, 0) < 0)
			return 2;
		snprintf(p, sizeof(p), "%s/t/b/y%d", root, one_fs);
		if (mknod(p, S_IFREG | 0644, 0) < 0) {
			fprintf(stderr, "mknod %s: %s\n", p, strerror(errno));
			return 3;
		}
		snprintf(want[0], sizeof(want[0]), "%s/t/m", root);
		snprintf(want[1], sizeof(want[1]), "%s/t/b", root);
		/* What the handle has now holds both files' events (the mknods
		 * queued them before they returned); with FSNW_WATCH_ONE_FS the
		 * tmpfs's must not come: an absence, waited for. */
		while ((n = fsnw_read(w, ev, 16, one_fs ? 200 : 0)) > 0)
			for (int i = 0; i < n; i++)
				for (int k = 0; k < 2; k++)
					got[k] += !strcmp(ev[i].path, want[k]);
		fsnw_close(w);
		if (got[0] != !one_fs || got[1] != 1) {
			fprintf(stderr, "one_fs %d: tmpfs %d, bind %d\n", one_fs, got[0], got[1]);
			return 4;
		}
	}
	return 0;
}

START_TEST(mounts_below)
{
	char *root = tmpfs_private();

	make_dirs(root, "t/m");
	make_dirs(root, "t/b");
	make_dirs(root, "elsewhere");
	ck_assert_int_eq(in_child(mounts_child, root), 0);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- the root goes ---- */

START_TEST(root_removed_ends_tree)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char r[PATH_MAX], p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(root, "r/a/b");
	touch(root, "r/a/b/f");
	at(r, root, "r");
	wid = fsnw_add(w, r, FSNW_DELETE | FSNW_DELETE_SELF, FSNW_WATCH_TREE);
	rm_rf(root, "r");
	/* No directory of the tree is left for a sentinel: collect_now, for rm
	 * has exited, and the kernel queued its events before its calls
	 * returned. */
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	/* Everything inside first, then the end of the tree. */
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE, at(p, r, "a/b"), "f"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, r, "a"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE_SELF | FSNW_ISDIR, r, NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_IGNORED, NULL), 1);
	ck_assert_uint_eq(evs[n - 1].mask, FSNW_IGNORED);
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- a random workload, read at random moments ---- */

/* The tree as the events told it: relative paths, 'd' or 'f'. */
struct fview {
	char (*path)[PATH_MAX / 2];
	char *kind;
	int n, cap;
};

static int view_find(const struct fview *v, const char *p)
{
	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->path[i], p))
			return i;
	return -1;
}

static void view_add(struct fview *v, const char *p, char kind)
{
	if (view_find(v, p) >= 0)
		return;
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 256;
		v->path = realloc(v->path, (size_t)v->cap * sizeof(*v->path));
		v->kind = realloc(v->kind, (size_t)v->cap);
		ck_assert(v->path && v->kind);
	}
	snprintf(v->path[v->n], sizeof(v->path[0]), "%s", p);
	v->kind[v->n++] = kind;
}

/* Remove p and everything below it; move it under q instead when q is set. */
static void view_take(struct fview *v, const char *p, const char *q)
{
	size_t len = strlen(p);

	for (int i = 0; i < v->n; i++) {
		char *s = v->path[i];

		if (strncmp(s, p, len) || (s[len] && s[len] != '/'))
			continue;
		if (q) {
			char moved[PATH_MAX];
			int ml = snprintf(moved, sizeof(moved), "%s%s", q, s + len);

			ck_assert_int_lt(ml, (int)sizeof(v->path[0]));
			memcpy(s, moved, (size_t)ml + 1);
		} else {
			v->n--;
			memmove(v->path[i], v->path[v->n], sizeof(v->path[0]));
			v->kind[i] = v->kind[v->n];
			i--;
		}
	}
}

/* Apply what fsnw_read returns to the view (paths relative to root). */
static int view_read(struct fsnw *w, struct fview *v, const char *root, int timeout)
{
	size_t rlen = strlen(root);
	struct fsnw_event ev[64];
	char from[PATH_MAX / 2] = "";
	uint32_t cookie = 0;
	int n, total = 0;

	while ((n = fsnw_read(w, ev, 64, timeout)) > 0) {
		for (int i = 0; i < n; i++) {
			char p[PATH_MAX / 2];

			ck_assert(!(ev[i].mask & FSNW_OVERFLOW));
			if (!ev[i].name)
				continue;
			ck_assert_msg(!strncmp(ev[i].path, root, rlen), "path %s", ev[i].path);
			snprintf(p, sizeof(p), "%s%s%s", ev[i].path + rlen,
				 ev[i].path[rlen] ? "/" : "/", ev[i].name);
			if (cookie && !(ev[i].mask & FSNW_MOVED_TO && ev[i].cookie == cookie)) {
				view_take(v, from, NULL); /* moved out */
				cookie = 0;
			}
			if (ev[i].mask & FSNW_CREATE)
				view_add(v, p, ev[i].mask & FSNW_ISDIR ? 'd' : 'f');
			if (ev[i].mask & FSNW_DELETE) {
				/* Whatever was inside was deleted first, and said so. */
				int k = view_find(v, p);

				ck_assert_msg(k >= 0, "deleted %s, never seen", p);
				view_take(v, p, NULL);
				for (k = 0; k < v->n; k++)
					ck_assert_msg(strncmp(v->path[k], p, strlen(p)) ||
						      v->path[k][strlen(p)] != '/',
						      "%s left inside deleted %s", v->path[k], p);
			}
			if (ev[i].mask & FSNW_MOVED_FROM) {
				snprintf(from, sizeof(from), "%s", p);
				cookie = ev[i].cookie;
			}
			if (ev[i].mask & FSNW_MOVED_TO) {
				if (cookie && ev[i].cookie == cookie)
					view_take(v, from, p);
				else
					view_add(v, p, ev[i].mask & FSNW_ISDIR ? 'd' : 'f');
				cookie = 0;
			}
			total++;
		}
		timeout = 0;
	}
	if (cookie)
		view_take(v, from, NULL);
	ck_assert_int_ge(n, 0);
	return total;
}

/* What is really there (relative paths), by a walk of our own. */
static void listing(const char *dir, const char *rel, struct fview *out)
{
	char p[PATH_MAX], r[PATH_MAX];
	struct dirent *d;
	DIR *dh;

	snprintf(p, sizeof(p), "%s%s", dir, rel);
	dh = opendir(p);
	ck_assert_ptr_nonnull(dh);
	while ((d = readdir(dh))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(r, sizeof(r), "%s/%s", rel, d->d_name);
		view_add(out, r, d->d_type == DT_DIR ? 'd' : 'f');
		if (d->d_type == DT_DIR)
			listing(dir, r, out);
	}
	closedir(dh);
}

/* A random existing path of the listing, of a kind, or "" for the root. */
static const char *pick(const struct fview *v, char kind, bool root_ok)
{
	int tries = 0, i;

	for (;;) {
		if (root_ok && (v->n == 0 || rand() % 8 == 0))
			return "";
		if (v->n == 0 || ++tries > 50)
			return NULL;
		i = rand() % v->n;
		if (v->kind[i] == kind)
			return v->path[i];
	}
}


/*
 * Random creates, renames, moves in and out and rm -rf, read at random
 * moments, with a cache so small that most directories are met cold (odd
 * runs) or one that keeps them all (even runs): the view a caller builds
 * from the events equals the tree.
 */
START_TEST(random_workload_view_matches)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend,
				  .queue_capacity = FSNW_QUEUE_UNLIMITED,
				  .tree_cache = _i % 2 ? 4 : 0 };
	struct fsnw *w;
	char *top = tmpfs_private();
	char root[PATH_MAX / 2], out[PATH_MAX / 2], p[2 * PATH_MAX], q[PATH_MAX];
	struct fview seen = { 0 }, real = { 0 };
	int wid, names = 1000;

	ck_assert_int_eq(fsnw_open(&w, &o), 0);
	srand(1234 + _i);
	at(root, top, "t");
	at(out, top, "out");
	make_dirs(top, "t/a/b");
	make_dirs(top, "t/c");
	make_dirs(top, "out");
	touch(root, "a/b/f0");
	listing(root, "", &seen); /* the caller's scan at the add */
	wid = fsnw_add(w, root, FSNW_CREATE | FSNW_DELETE | FSNW_MOVE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	for (int op = 0; op < 400; op++) {
		const char *d, *e;
		int r = rand() % 100;

		real.n = 0;
		listing(root, "", &real);
		/* Nested moves make paths long: keep them well inside PATH_MAX. */
		if (r < 92 && (d = pick(&real, 'd', true)) && strlen(d) > 1000)
			continue;
		if (r < 25 && (d = pick(&real, 'd', true))) {
			snprintf(p, sizeof(p), "%s%s/n%d", root, d, names++);
			ck_assert_int_eq(mkdir(p, 0755), 0);
		} else if (r < 50 && (d = pick(&real, 'd', true))) {
			snprintf(p, sizeof(p), "%s%s/f%d", root, d, names++);
			ck_assert_msg(mknod(p, S_IFREG | 0644, 0) == 0, "mknod %s: %s", p,
				      strerror(errno));
		} else if (r < 65 && (d = pick(&real, 'd', false)) && (e = pick(&real, 'd', true)) &&
			   strncmp(e, d, strlen(d))) {
			/* A directory moved within the tree, never into itself. */
			snprintf(p, sizeof(p), "%s%s", root, d);
			snprintf(q, sizeof(q), "%s%s/m%d", root, e, names++);
			ck_assert_int_eq(rename(p, q), 0);
		} else if (r < 72 && (d = pick(&real, 'f', false)) && (e = pick(&real, 'd', true))) {
			snprintf(p, sizeof(p), "%s%s", root, d);
			snprintf(q, sizeof(q), "%s%s/g%d", root, e, names++);
			ck_assert_int_eq(rename(p, q), 0);
		} else if (r < 80 && (d = pick(&real, 'd', false))) {
			rm_rf(root, d + 1);
		} else if (r < 86 && (d = pick(&real, 'd', false))) {
			/* Out of the tree, and something done there. */
			snprintf(p, sizeof(p), "%s%s", root, d);
			snprintf(q, sizeof(q), "%s/o%d", out, names++);
			ck_assert_int_eq(rename(p, q), 0);
			snprintf(p, sizeof(p), "%s/x%d", q, names++);
			ck_assert_int_eq(mkdir(p, 0755), 0);
		} else if (r < 92 && (e = pick(&real, 'd', true))) {
			/* Into the tree: a directory made outside, empty. */
			snprintf(p, sizeof(p), "%s/i%d", out, names++);
			ck_assert_int_eq(mkdir(p, 0755), 0);
			snprintf(q, sizeof(q), "%s%s/i%d", root, e, names++);
			ck_assert_int_eq(rename(p, q), 0);
		} else {
			view_read(w, &seen, root, 0);
		}
	}
	/* This thread's changes and rm's, which has exited: all queued now. */
	view_read(w, &seen, root, 0);
	real.n = 0;
	listing(root, "", &real);
	for (int i = 0; i < real.n; i++)
		ck_assert_msg(view_find(&seen, real.path[i]) >= 0, "missed %s", real.path[i]);
	for (int i = 0; i < seen.n; i++)
		ck_assert_msg(view_find(&real, seen.path[i]) >= 0, "invented %s", seen.path[i]);
	ck_assert_uint_eq(stats_of(w).overflows_unresolved, 0);
	free(seen.path);
	free(seen.kind);
	free(real.path);
	free(real.kind);
	fsnw_close(w);
	tmpfs_private_remove(top);
}
END_TEST

TEST_SUITE(fantree)
{
	Suite *s = suite_create("fantree");

	ADD_TEST(s, add_reads_nothing_below);
	ADD_TEST(s, warm_directory_resolves_once);
	ADD_TEST(s, rm_rf_unseen_subtree);
	ADD_TEST(s, rm_rf_outside_is_quiet);
	ADD_TEST(s, late_delete_self);
	ADD_TEST(s, cold_moves_in_and_out);
	ADD_TEST(s, warm_moves_in_and_out);
	ADD_TEST(s, filled_then_renamed);
	ADD_TEST(s, root_renamed);
	ADD_TEST(s, cache_bounded);
	ADD_TEST(s, deleted_leave_cache);
	ADD_TEST(s, fd_limit_is_an_overflow);
	ADD_TEST(s, unprivileged_tree_gets_inotify);
	ADD_TEST(s, no_file_handles);
	ADD_TEST(s, alloc_fails_in_add);
	ADD_TEST(s, alloc_fails_in_read_never_silent);
	ADD_TEST(s, new_tree_hears_nothing_older);
	ADD_TEST(s, nested_trees);
	ADD_TEST(s, mounts_below);
	ADD_TEST(s, wide_tree_gone_narrows_mark);
	ADD_TEST(s, root_removed_ends_tree);
	{
		TCase *tc = tcase_create("random_workload_view_matches");

		tcase_set_timeout(tc, 120);
		tcase_add_loop_test(tc, random_workload_view_matches, 0, 6);
		suite_add_tcase(s, tc);
	}
	return s;
}
