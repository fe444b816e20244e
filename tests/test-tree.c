/* SPDX-License-Identifier: MIT */
/* Tree watches: nested events, new and moved directories, catch-up, removal. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-common.h"

/* Event of `wid` in directory `dir` about `name`, or -1. */
static int find_in(const struct ev *evs, int n, int wid, uint32_t mask, const char *dir,
		   const char *name)
{
	for (int i = 0; i < n; i++)
		if (evs[i].wid == wid && (evs[i].mask & mask) == mask && !strcmp(evs[i].path, dir) &&
		    evs[i].has_name && !strcmp(evs[i].name, name))
			return i;
	return -1;
}

/*
 * The kernel watches a tree of `dirs` directories holds: one a directory on
 * inotify; on fanotify one for the tree's directory (and one per mount
 * below it), whatever the size, as nothing below it is walked.
 */
static uint64_t tree_watches(uint64_t dirs)
{
	return test_backend == FSNW_BACKEND_FANOTIFY ? 1 : dirs;
}

START_TEST(nested_events)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], ab[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dir(dir, "a");
	make_dir(pjoin(a, dir, "a"), "b");
	pjoin(ab, a, "b");
	wid = fsnw_add(w, dir, FSNW_CREATE | FSNW_MODIFY | FSNW_DELETE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, tree_watches(3));
	ck_assert_uint_eq(stats_of(w).logical_watches, 1);
	touch(dir, "top");
	touch(a, "mid");
	touch(ab, "deep");
	write_bytes(ab, "deep", "x");
	n = collect(w, &evs, 32, 300);
	dump_evs(evs, n);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, dir, "top"), 0);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, a, "mid"), 0);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, ab, "deep"), 0);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_MODIFY, ab, "deep"), 0);
	evs_free(evs);

	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	touch(ab, "after");
	n = collect(w, &evs, 32, 200);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * mkdir -p + create races the watch of each new directory: whatever the
 * timing, every directory and file is reported (really or synthetically)
 * and the new directories end up watched.
 */
START_TEST(new_subtree_caught_up)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wid, n;

	wid = fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE);
	snprintf(p, sizeof(p), "%s/x/y/z", dir);
	ck_assert_int_eq(mkdir(pjoin(q, dir, "x"), 0755), 0);
	snprintf(q, sizeof(q), "%s/x/y", dir);
	ck_assert_int_eq(mkdir(q, 0755), 0);
	ck_assert_int_eq(mkdir(p, 0755), 0);
	touch(p, "file");
	n = collect(w, &evs, 64, 300);
	dump_evs(evs, n);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, dir, "x"), 0);
	snprintf(q, sizeof(q), "%s/x", dir);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, q, "y"), 0);
	snprintf(q, sizeof(q), "%s/x/y", dir);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, q, "z"), 0);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, p, "file"), 0);
	if (test_backend == FSNW_BACKEND_FANOTIFY) {
		/* The filesystem mark heard them all: nothing to catch up. */
		ck_assert_uint_eq(stats_of(w).events_synthetic, 0);
	} else {
		/* All made before we could watch them: reported by the catch-up. */
		ck_assert_uint_ge(stats_of(w).events_synthetic, 1);
		ck_assert(evs[find_in(evs, n, wid, FSNW_CREATE, p, "file")].mask &
			  FSNW_SYNTHETIC);
	}
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).kernel_watches, tree_watches(4));

	/* And they are watched now. */
	touch(p, "later");
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(evs[0].path, p);
	ck_assert(!(evs[0].mask & FSNW_SYNTHETIC));
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(moved_out_is_silent)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make(), *out = tmpdir_make();
	char from[PATH_MAX], to[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dir(dir, "sub");
	wid = fsnw_add(w, dir, FSNW_CREATE | FSNW_MOVE, FSNW_WATCH_TREE);
	ck_assert_int_eq(rename(pjoin(from, dir, "sub"), pjoin(to, out, "sub")), 0);
	n = collect(w, &evs, 16, 300);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_MOVED_FROM | FSNW_ISDIR, dir, "sub"), 0);
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).kernel_watches, tree_watches(1));
	touch(to, "outside");
	n = collect(w, &evs, 16, 200);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 0);
	evs_free(evs);

	/* Moved back in: watched again. */
	ck_assert_int_eq(rename(to, from), 0);
	n = collect(w, &evs, 16, 300);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_MOVED_TO | FSNW_ISDIR, dir, "sub"), 0);
	evs_free(evs);
	touch(from, "inside");
	n = collect(w, &evs, 16, 300);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, from, "inside"), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
	tmpdir_remove(out);
}
END_TEST

START_TEST(renamed_within_tree)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char from[PATH_MAX], to[PATH_MAX], deep[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dir(dir, "old");
	make_dir(pjoin(from, dir, "old"), "inner");
	wid = fsnw_add(w, dir, FSNW_CREATE | FSNW_MOVE, FSNW_WATCH_TREE);
	ck_assert_int_eq(rename(from, pjoin(to, dir, "new")), 0);
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_MOVED_FROM, "old"), 1);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_MOVED_TO, "new"), 1);
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).kernel_watches, tree_watches(3));
	touch(to, "a");
	touch(pjoin(deep, to, "inner"), "b");
	n = collect(w, &evs, 16, 300);
	dump_evs(evs, n);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, to, "a"), 0);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, deep, "b"), 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(deleted_subdir_released)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dir(dir, "gone");
	wid = fsnw_add(w, dir, FSNW_DELETE, FSNW_WATCH_TREE);
	ck_assert_uint_eq(stats_of(w).kernel_watches, tree_watches(2));
	ck_assert_int_eq(rmdir(pjoin(p, dir, "gone")), 0);
	n = collect(w, &evs, 16, 300);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, "gone"), 1);
	/* The tree lives on: no IGNORED for its wid. */
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_IGNORED, NULL), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	evs_free(evs);

	/* The root going ends the tree. */
	ck_assert_int_eq(rmdir(dir), 0);
	n = collect(w, &evs, 16, 300);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_IGNORED, NULL), 1);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	evs_free(evs);
	fsnw_close(w);
	mkdir(dir, 0700);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(symlinks_not_followed)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make(), *other = tmpdir_make();
	char p[PATH_MAX];
	int wid;

	ck_assert_int_eq(symlink(other, pjoin(p, dir, "link")), 0);
	wid = fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	fsnw_close(w);
	tmpdir_remove(dir);
	tmpdir_remove(other);
}
END_TEST

/* A tmpfs mounted below the root is included unless FSNW_WATCH_ONE_FS. */
static int one_fs_child(const char *dir)
{
	char mnt[PATH_MAX - 16], p[PATH_MAX];
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend };
	struct fsnw *w;
	int n_all, n_one;
	struct fsnw_stats st = { .size = sizeof(st) };

	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		return 77;
	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	if (mkdir(mnt, 0755) < 0 || mount("t", mnt, "tmpfs", 0, NULL) < 0)
		return 77;
	snprintf(p, sizeof(p), "%s/inner", mnt);
	mkdir(p, 0755);
	if (fsnw_open(&w, &o) < 0)
		return 1;
	if (fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE) < 0)
		return 2;
	fsnw_get_stats(w, &st);
	n_all = (int)st.kernel_watches;
	fsnw_close(w);
	if (fsnw_open(&w, &o) < 0)
		return 3;
	if (fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE | FSNW_WATCH_ONE_FS) < 0)
		return 4;
	fsnw_get_stats(w, &st);
	n_one = (int)st.kernel_watches;
	fsnw_close(w);
	umount(mnt);
	/* dir, mnt (the mount point's covering root), mnt/inner; then dir only.
	 * The mount point directory below the mount is hidden by it. Without
	 * a walk (fanotify): dir, and the mount below it; then dir only. */
	if (n_all != (test_backend == FSNW_BACKEND_FANOTIFY ? 2 : 3) || n_one != 1) {
		fprintf(stderr, "kernel watches: all %d, one-fs %d\n", n_all, n_one);
		return 5;
	}
	return 0;
}

START_TEST(one_fs)
{
	char *dir = tmpdir_make();
	int status;
	pid_t pid;

	if (geteuid() != 0) {
		tmpdir_remove(dir);
		return;
	}
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(one_fs_child(dir));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77, "child said %d",
		      WEXITSTATUS(status));
	tmpdir_remove(dir);
}
END_TEST

/* A relative root keeps following new directories after the caller's chdir. */
START_TEST(relative_root_after_chdir)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX], cwd[PATH_MAX];
	struct ev *evs;
	int wid, n;

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	make_dir(dir, "rel");
	ck_assert_int_eq(chdir(dir), 0);
	wid = fsnw_add(w, "rel", FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(chdir("/"), 0);
	make_dir(pjoin(p, dir, "rel"), "new");
	touch(pjoin(p, dir, "rel/new"), "f");
	n = collect(w, &evs, 16, 300);
	dump_evs(evs, n);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, "rel", "new"), 0);
	ck_assert_int_ge(find_in(evs, n, wid, FSNW_CREATE, "rel/new", "f"), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, tree_watches(2));
	ck_assert_uint_eq(stats_of(w).overflows_unwatched, 0);
	evs_free(evs);
	ck_assert_int_eq(chdir(cwd), 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A new directory the watcher may not read: one FSNW_OVERFLOW, and no retry
 * on every later read. Root reads everything, so the watcher is a child
 * running as nobody. Returns a step number on failure.
 */
static int unreadable_child(const char *dir, int ready, int go)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_INOTIFY };
	struct fsnw_stats st = { .size = sizeof(st) };
	struct fsnw_event ev[16];
	struct fsnw *w;
	uint64_t walks;
	int n, overflows = 0;
	char c = 0;

	if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
		return 77;
	if (fsnw_open(&w, &o) < 0 || fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE) <= 0)
		return 1;
	if (write(ready, "r", 1) != 1 || read(go, &c, 1) != 1)
		return 2;
	for (int i = 0; i < 5; i++)
		while ((n = fsnw_read(w, ev, 16, i ? 0 : 300)) > 0)
			for (int k = 0; k < n; k++)
				overflows += (ev[k].mask & FSNW_OVERFLOW) != 0;
	fsnw_get_stats(w, &st);
	walks = st.sys_walk;
	if (overflows != 1 || st.overflows_unwatched != 1)
		return 3;
	for (int i = 0; i < 5; i++)
		fsnw_read(w, ev, 16, 0);
	fsnw_get_stats(w, &st);
	fsnw_close(w);
	return st.sys_walk == walks ? 0 : 4;
}

START_TEST(unreadable_dir_not_retried)
{
	char *dir = tmpdir_make();
	char p[PATH_MAX], c;
	int ready[2], go[2], status;
	pid_t pid;

	if (geteuid() != 0) {
		ck_assert_ptr_nonnull(dir);
		tmpdir_remove(dir);
		return;
	}
	ck_assert_int_eq(chown(dir, 65534, 65534), 0);
	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(unreadable_child(dir, ready[1], go[0]));
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	ck_assert_int_eq(mkdir(pjoin(p, dir, "private"), 0700), 0); /* root's, closed */
	ck_assert_int_eq(write(go[1], "g", 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_msg(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 77, "child step %d",
		      WEXITSTATUS(status));
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(tree)
{
	Suite *s = suite_create("tree");

	ADD_TEST(s, nested_events);
	ADD_TEST(s, new_subtree_caught_up);
	ADD_TEST(s, moved_out_is_silent);
	ADD_TEST(s, renamed_within_tree);
	ADD_TEST(s, deleted_subdir_released);
	ADD_TEST(s, symlinks_not_followed);
	ADD_TEST(s, one_fs);
	ADD_TEST(s, relative_root_after_chdir);
	ADD_TEST(s, unreadable_dir_not_retried);
	return s;
}
