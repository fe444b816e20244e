/* SPDX-License-Identifier: MIT */
/*
 * What only the fanotify backend has: privilege fallback, filesystem marks
 * for trees, FAN_RENAME pairing, handle-keyed removal, fd hygiene, and the
 * record decoder (a pure function, driven here with crafted and truncated
 * buffers). Runs with --backend fanotify; skipped (77) where it cannot open.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend.h"
#include "test-common.h"

/* Kernel marks of every fanotify group in this process, from fdinfo. */
struct marks {
	int groups, inode, fs;
};

static struct marks kernel_marks(void)
{
	struct marks m = { 0, 0, 0 };
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char link[300], target[64], line[512];
		ssize_t n;
		FILE *f;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", e->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = '\0';
		if (strcmp(target, "anon_inode:[fanotify]"))
			continue;
		m.groups++;
		snprintf(link, sizeof(link), "/proc/self/fdinfo/%s", e->d_name);
		f = fopen(link, "r");
		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f)) {
			m.inode += !strncmp(line, "fanotify ino:", 13);
			m.fs += !strncmp(line, "fanotify sdev:", 14);
		}
		fclose(f);
	}
	closedir(d);
	return m;
}

/* ---- privileges ---- */

enum drop { DROP_USERNS, DROP_SYS_ADMIN, DROP_DAC_READ_SEARCH };

static int count_fds_raw(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;
}

static int drop_cap(int cap)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &hdr, data) < 0)
		return -1;
	for (int i = 0; i < _LINUX_CAPABILITY_U32S_3; i++)
		data[i].effective &= ~(i == CAP_TO_INDEX(cap) ? CAP_TO_MASK(cap) : 0);
	return (int)syscall(SYS_capset, &hdr, data);
}

/* In a child (no Check there): 0 passed, 77 could not drop, else the failed step. */
static int unprivileged_child(enum drop how)
{
	struct fsnw_options o = { .size = sizeof(o) };
	struct fsnw *w = NULL;
	int before, ret;

	if (how == DROP_USERNS && unshare(CLONE_NEWUSER) < 0)
		return 77; /* unprivileged user namespaces are off here */
	if (how == DROP_SYS_ADMIN && drop_cap(CAP_SYS_ADMIN) < 0)
		return 77;
	if (how == DROP_DAC_READ_SEARCH && drop_cap(CAP_DAC_READ_SEARCH) < 0)
		return 77;
	before = count_fds_raw();
	o.backend = FSNW_BACKEND_AUTO;
	o.flags = FSNW_OPEN_BIG_TREES; /* asks for fanotify where permitted */
	if (fsnw_open(&w, &o) < 0)
		return 2;
	if (fsnw_get_backend(w) != FSNW_BACKEND_INOTIFY)
		return 3;
	fsnw_close(w);
	w = NULL;
	o.flags = 0;
	o.backend = FSNW_BACKEND_FANOTIFY;
	ret = fsnw_open(&w, &o);
	if (ret != -EPERM)
		return 4;
	if (w)
		return 5; /* no out-parameter on failure */
	if (count_fds_raw() != before)
		return 6;
	return 0;
}

/* The child's verdict: 0 passed, 77 the drop is not possible here, else the failed step. */
static int check_unprivileged(enum drop how)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return 100;
	if (pid == 0)
		_exit(unprivileged_child(how));
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 101;
	if (WEXITSTATUS(status) == 77)
		fprintf(stderr, "drop %d: not possible here, not checked\n", how);
	return WEXITSTATUS(status) == 77 ? 0 : WEXITSTATUS(status);
}

START_TEST(unprivileged_gets_inotify)
{
	ck_assert_int_eq(check_unprivileged(DROP_USERNS), 0);
	ck_assert_int_eq(check_unprivileged(DROP_SYS_ADMIN), 0);
	ck_assert_int_eq(check_unprivileged(DROP_DAC_READ_SEARCH), 0);
}
END_TEST

/* AUTO takes fanotify only when asked for big trees; inotify otherwise. */
START_TEST(auto_policy)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_AUTO };
	struct fsnw *w;

	ck_assert_int_eq(fsnw_open(&w, &o), 0);
	ck_assert_int_eq(fsnw_get_backend(w), FSNW_BACKEND_INOTIFY);
	fsnw_close(w);
	ck_assert_int_eq(fsnw_open(&w, NULL), 0);
	ck_assert_int_eq(fsnw_get_backend(w), FSNW_BACKEND_INOTIFY);
	fsnw_close(w);
	o.flags = FSNW_OPEN_BIG_TREES;
	ck_assert_int_eq(fsnw_open(&w, &o), 0);
	ck_assert_int_eq(fsnw_get_backend(w), FSNW_BACKEND_FANOTIFY);
	fsnw_close(w);
	/* An explicit backend ignores the hint. */
	o.backend = FSNW_BACKEND_INOTIFY;
	ck_assert_int_eq(fsnw_open(&w, &o), 0);
	ck_assert_int_eq(fsnw_get_backend(w), FSNW_BACKEND_INOTIFY);
	fsnw_close(w);
}
END_TEST

/* ---- trees on a filesystem mark ---- */

START_TEST(tree_one_mark_sibling_silent)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *root = tmpfs_private();
	char tree[PATH_MAX], sib[PATH_MAX], name[64];
	struct fsnw_stats s0, s1;
	struct marks m;
	struct ev *evs;
	int wid, n;

	pjoin(tree, root, "tree");
	pjoin(sib, root, "sibling");
	for (int i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "tree/d%d/sub", i);
		make_dirs(root, name);
	}
	make_dirs(root, "sibling/deep");
	s0 = stats_of(w);
	wid = fsnw_add(w, tree, FSNW_CREATE | FSNW_MODIFY | FSNW_DELETE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	s1 = stats_of(w);
	/* 101 directories watched, through one kernel mark made by one syscall,
	 * and not one of them read: the tree's directory is its kernel watch. */
	ck_assert_uint_eq(s1.sys_fanotify_mark - s0.sys_fanotify_mark, 1);
	ck_assert_uint_eq(s1.sys_walk - s0.sys_walk, 0);
	ck_assert_uint_eq(s1.kernel_watches, 1);
	m = kernel_marks();
	ck_assert_int_eq(m.inode, 0);
	ck_assert_int_eq(m.fs, 1);

	touch(sib, "s");
	write_bytes(sib, "s", "x");
	touch(sib, "deep/t");
	make_dir(sib, "newdir");
	touch(tree, "d7/sub/f");
	write_bytes(tree, "d7/sub/f", "x");
	make_dir(tree, "d3/new");
	touch(tree, "d3/new/g");
	n = collect_sync(w, &evs, 64, tree);
	dump_evs(evs, n);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(evs[i].wid, wid);
		ck_assert_msg(!strncmp(evs[i].path, tree, strlen(tree)), "event from %s", evs[i].path);
	}
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE, "f"), 1);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_MODIFY, "f"), 1);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, "new"), 1);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE, "g"), 1);
	evs_free(evs);
	/* The new directory was followed without a mark either. */
	ck_assert_uint_eq(stats_of(w).sys_fanotify_mark - s0.sys_fanotify_mark, 1);
	ck_assert_int_eq(kernel_marks().fs, 1);
	fsnw_close(w);
	ck_assert_int_eq(kernel_marks().groups, 0);
	tmpfs_private_remove(root);
}
END_TEST

/* Trees on one filesystem share its mark; it goes with the last of them. */
START_TEST(tree_fs_mark_shared)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *root = tmpfs_private();
	char a[PATH_MAX], b[PATH_MAX];
	struct fsnw_stats s0, s1;
	int wa, wb;

	make_dirs(root, "a/x/y");
	make_dirs(root, "b/z");
	pjoin(a, root, "a");
	pjoin(b, root, "b");
	s0 = stats_of(w);
	wa = fsnw_add(w, a, FSNW_CREATE, FSNW_WATCH_TREE);
	wb = fsnw_add(w, b, FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wa, 0);
	ck_assert_int_gt(wb, 0);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.sys_fanotify_mark - s0.sys_fanotify_mark, 1);
	ck_assert_uint_eq(s1.kernel_watches, 2);
	ck_assert_int_eq(kernel_marks().fs, 1);
	ck_assert_int_eq(fsnw_remove(w, wa), 0);
	s0 = stats_of(w);
	ck_assert_uint_eq(s0.sys_fanotify_mark, s1.sys_fanotify_mark);
	ck_assert_uint_eq(s0.kernel_watches, 1);
	ck_assert_int_eq(kernel_marks().fs, 1);
	ck_assert_int_eq(fsnw_remove(w, wb), 0);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.sys_fanotify_mark - s0.sys_fanotify_mark, 1);
	ck_assert_uint_eq(s1.kernel_watches, 0);
	ck_assert_int_eq(kernel_marks().fs, 0);
	fsnw_close(w);
	tmpfs_private_remove(root);
}
END_TEST

/* ---- renames ---- */

START_TEST(rename_pairing)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], b[PATH_MAX], out[PATH_MAX], p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wa, wb, n, i;

	make_dirs(dir, "a/sub");
	make_dirs(dir, "b");
	make_dirs(dir, "out");
	pjoin(a, dir, "a");
	pjoin(b, dir, "b");
	pjoin(out, dir, "out");
	touch(a, "x");
	touch(out, "in");
	wa = fsnw_add(w, a, FSNW_MOVE, 0);
	wb = fsnw_add(w, b, FSNW_MOVE, 0);
	ck_assert_int_eq(rename(pjoin(p, a, "x"), pjoin(q, b, "y")), 0);      /* a -> b */
	ck_assert_int_eq(rename(pjoin(p, a, "sub"), pjoin(q, a, "sub2")), 0); /* within a */
	ck_assert_int_eq(rename(pjoin(p, b, "y"), pjoin(q, out, "y")), 0);   /* b -> unwatched */
	ck_assert_int_eq(rename(pjoin(p, out, "in"), pjoin(q, a, "in")), 0); /* unwatched -> a */
	n = collect_now(w, &evs, 32);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 6);
	/* Each pair is adjacent, MOVED_FROM first, with one non-zero cookie. */
	ck_assert(evs[0].wid == wa && evs[0].mask == FSNW_MOVED_FROM && !strcmp(evs[0].name, "x"));
	ck_assert(evs[1].wid == wb && evs[1].mask == FSNW_MOVED_TO && !strcmp(evs[1].name, "y"));
	ck_assert(evs[2].wid == wa && evs[2].mask == (FSNW_MOVED_FROM | FSNW_ISDIR) &&
		  !strcmp(evs[2].name, "sub"));
	ck_assert(evs[3].wid == wa && evs[3].mask == (FSNW_MOVED_TO | FSNW_ISDIR) &&
		  !strcmp(evs[3].name, "sub2"));
	ck_assert(evs[4].wid == wb && evs[4].mask == FSNW_MOVED_FROM && !strcmp(evs[4].name, "y"));
	ck_assert(evs[5].wid == wa && evs[5].mask == FSNW_MOVED_TO && !strcmp(evs[5].name, "in"));
	ck_assert_uint_ne(evs[0].cookie, 0);
	ck_assert_uint_eq(evs[0].cookie, evs[1].cookie);
	ck_assert_uint_ne(evs[2].cookie, 0);
	ck_assert_uint_eq(evs[2].cookie, evs[3].cookie);
	for (i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			ck_assert((evs[i].cookie == evs[j].cookie) ==
				  (i == j || (i / 2 == j / 2 && i < 4)));
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* ---- marks keyed by handle ---- */

/* The path has moved by the time of the remove: the handle still finds the mark. */
START_TEST(remove_after_move)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wf, wd, n;

	make_dirs(dir, "d");
	touch(dir, "f");
	wf = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	wd = fsnw_add(w, pjoin(p, dir, "d"), FSNW_CREATE, 0);
	ck_assert_int_eq(kernel_marks().inode, 2);
	ck_assert_int_eq(rename(pjoin(p, dir, "f"), pjoin(q, dir, "f2")), 0);
	ck_assert_int_eq(rename(pjoin(p, dir, "d"), pjoin(q, dir, "d2")), 0);
	ck_assert_int_eq(fsnw_remove(w, wf), 0);
	ck_assert_int_eq(fsnw_remove(w, wd), 0);
	ck_assert_int_eq(kernel_marks().inode, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	write_bytes(dir, "f2", "x");
	/* An absence: with no mark left the write queues nothing, and
	 * collect_now takes whatever the renames and removes left. */
	n = collect_now(w, &evs, 8);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * On a mount the handle has seen, a new object is marked by its path: its
 * handle before and after the mark, one mark for a directory, two for a
 * file (a directory's mask is refused for it), and no fd opened.
 */
START_TEST(marks_by_name)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1, s2;
	struct ev *evs;
	int first, wf, wd, n;

	touch(dir, "f");
	make_dirs(dir, "d");
	first = fsnw_add(w, dir, FSNW_ATTRIB, 0); /* the mount is seen */
	ck_assert_int_gt(first, 0);
	s0 = stats_of(w);
	wf = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	s1 = stats_of(w);
	wd = fsnw_add(w, pjoin(p, dir, "d"), FSNW_CREATE, 0);
	s2 = stats_of(w);
	ck_assert_int_gt(wf, 0);
	ck_assert_int_gt(wd, 0);
	ck_assert_uint_eq(s1.sys_fanotify_mark - s0.sys_fanotify_mark, 2);
	ck_assert_uint_eq(s1.sys_name_to_handle_at - s0.sys_name_to_handle_at, 2);
	ck_assert_uint_eq(s1.sys_other, s0.sys_other);
	ck_assert_uint_eq(s2.sys_fanotify_mark - s1.sys_fanotify_mark, 1);
	ck_assert_uint_eq(s2.sys_name_to_handle_at - s1.sys_name_to_handle_at, 2);
	ck_assert_uint_eq(s2.sys_other, s1.sys_other);
	ck_assert_int_eq(kernel_marks().inode, 3);
	/* Marked as what they are: the file's own events, the directory's
	 * children's. */
	write_bytes(dir, "f", "x");
	touch(dir, "d/g");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, wf, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, wd, FSNW_CREATE, "g"), 1);
	evs_free(evs);
	/* FSNW_WATCH_ONLYDIR on the file: refused. */
	ck_assert_int_eq(fsnw_add(w, pjoin(p, dir, "f"), FSNW_ATTRIB, FSNW_WATCH_ONLYDIR),
			 -ENOTDIR);
	ck_assert_int_eq(fsnw_remove(w, wf), 0);
	ck_assert_int_eq(fsnw_remove(w, wd), 0);
	ck_assert_int_eq(fsnw_remove(w, first), 0);
	ck_assert_int_eq(kernel_marks().inode, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A key comes back when its object is watched again: older events must not. */
START_TEST(readd_hears_nothing_older)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	write_bytes(dir, "f", "old"); /* queued in the kernel for a's key */
	ck_assert_int_eq(fsnw_remove(w, a), 0);
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	/* An absence: "old" is in the kernel's queue when collect_now starts,
	 * so its reads meet it, and must not hand it to b. */
	n = collect_now(w, &evs, 8);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	write_bytes(dir, "f", "new");
	n = collect_now(w, &evs, 8);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(dir_delete_self)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dirs(dir, "d");
	wid = fsnw_add(w, pjoin(p, dir, "d"), FSNW_DELETE_SELF | FSNW_ATTRIB, 0);
	ck_assert_int_eq(chmod(p, 0700), 0);
	pump(w);
	ck_assert_int_eq(rmdir(p), 0);
	n = collect_now(w, &evs, 8);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 3);
	ck_assert_uint_eq(evs[0].mask, FSNW_ATTRIB | FSNW_ISDIR);
	ck_assert(!evs[0].has_name);
	ck_assert_uint_eq(evs[1].mask, FSNW_DELETE_SELF | FSNW_ISDIR);
	ck_assert_uint_eq(evs[2].mask, FSNW_IGNORED);
	ck_assert_int_eq(evs[2].wid, wid);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_drops, 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* Unread events on one object merge in the kernel; they come out one per bit. */
START_TEST(merged_record_split)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n, fd;

	wid = fsnw_add(w, dir, FSNW_ALL_EVENTS, 0);
	fd = open(pjoin(p, dir, "tmp"), O_CREAT | O_RDWR, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	ck_assert_int_eq(unlink(p), 0);
	n = collect_sync(w, &evs, 16, dir);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 5);
	ck_assert_uint_eq(evs[0].mask, FSNW_CREATE);
	ck_assert_uint_eq(evs[1].mask, FSNW_OPEN);
	ck_assert_uint_eq(evs[2].mask, FSNW_MODIFY);
	ck_assert_uint_eq(evs[3].mask, FSNW_CLOSE_WRITE);
	ck_assert_uint_eq(evs[4].mask, FSNW_DELETE);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(evs[i].wid, wid);
		ck_assert_str_eq(evs[i].name, "tmp");
	}
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* ---- fds ---- */

START_TEST(fds_stable_over_10000_events)
{
	int before = fd_count(), during = -1;
	struct fsnw *w = test_open(0, 0, 0);
	/* Its own tmpfs: the tree's filesystem mark would hear every process
	 * on /dev/shm, and a slow run (valgrind) could overflow on them. */
	char *dir = tmpfs_private();
	char p[PATH_MAX], name[32];
	struct fsnw_event ev[256];
	int wid, got = 0;

	make_dirs(dir, "t/a");
	wid = fsnw_add(w, dir, FSNW_CREATE | FSNW_DELETE | FSNW_MODIFY, 0);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_gt(fsnw_add(w, pjoin(p, dir, "t"), FSNW_CREATE, FSNW_WATCH_TREE), 0);
	for (int i = 0; got < 10000; i++) {
		int f, n;

		snprintf(name, sizeof(name), "f%d", i % 64);
		touch(dir, name);
		write_bytes(dir, name, "x");
		ck_assert_int_eq(unlink(pjoin(p, dir, name)), 0);
		/* Add and remove through handles now and then: open_by_handle_at. */
		if (i % 16 == 0) {
			touch(dir, "w");
			f = fsnw_add(w, pjoin(p, dir, "w"), FSNW_ATTRIB, 0);
			ck_assert_int_gt(f, 0);
			ck_assert_int_eq(fsnw_remove(w, f), 0);
		}
		while ((n = fsnw_read(w, ev, 256, 0)) > 0)
			got += n;
		ck_assert_int_ge(n, 0);
		if (i == 100)
			during = fd_count();
	}
	ck_assert_int_eq(fd_count(), during);
	ck_assert_uint_eq(stats_of(w).overflows_kernel, 0);
	ck_assert_uint_ge(stats_of(w).sys_open_by_handle_at, 1);
	fsnw_close(w);
	ck_assert_int_eq(fd_count(), before);
	tmpfs_private_remove(dir);
}
END_TEST

/* ---- the decoder ---- */

#define HB 8 /* handle bytes in the crafted records */

static size_t put_fid(unsigned char *p, uint8_t type, unsigned char tag, const char *name)
{
	size_t len = 4 + 8 + 8 + HB + (name ? strlen(name) + 1 : 0);
	uint32_t hb = HB;
	int32_t ht = 1;

	len = (len + 3) & ~(size_t)3;
	memset(p, 0, len);
	p[0] = type;
	p[2] = (unsigned char)len;
	memset(p + 4, 0x5f, 8);
	memcpy(p + 12, &hb, 4);
	memcpy(p + 16, &ht, 4);
	memset(p + 20, tag, HB);
	if (name)
		memcpy(p + 20 + HB, name, strlen(name) + 1);
	return len;
}

static size_t put_meta(unsigned char *p, uint64_t mask, size_t infolen)
{
	struct fanotify_event_metadata md = {
		.event_len = (uint32_t)(sizeof(md) + infolen),
		.vers = FANOTIFY_METADATA_VERSION,
		.metadata_len = sizeof(md),
		.mask = mask,
		.fd = FAN_NOFD,
		.pid = 1,
	};

	memcpy(p, &md, sizeof(md));
	return sizeof(md);
}

struct got {
	int n;
	struct kevent ev[16];
	unsigned char tag[16];  /* first handle byte of the key */
	unsigned char ttag[16]; /* and of the target, 0 if none */
	char name[16][16];
};

static bool got_fn(void *arg, const struct kevent *ev)
{
	struct got *g = arg;

	if (g->n < 16) {
		g->ev[g->n] = *ev;
		g->tag[g->n] = ev->key ? ev->key[16] : 0;
		g->ttag[g->n] = ev->target ? ev->target[16] : 0;
		if (ev->target)
			ck_assert_uint_eq(ev->targetlen, 16 + HB);
		snprintf(g->name[g->n], sizeof(g->name[0]), "%s", ev->name ? ev->name : "");
		/* A name is NUL-terminated and as long as it says. */
		if (ev->name)
			ck_assert_uint_eq(strlen(ev->name), ev->namelen);
		if (ev->key)
			ck_assert_uint_eq(ev->keylen, 16 + HB);
	}
	g->n++;
	return true;
}

/* One record: metadata then the given info records. */
static size_t record(unsigned char *p, uint64_t mask, int ninfo, const uint8_t *types,
		     const unsigned char *tags, const char *const *names)
{
	unsigned char info[1024];
	size_t len = 0;

	for (int i = 0; i < ninfo; i++)
		len += put_fid(info + len, types[i], tags[i], names[i]);
	put_meta(p, mask, len);
	memcpy(p + sizeof(struct fanotify_event_metadata), info, len);
	return sizeof(struct fanotify_event_metadata) + len;
}

START_TEST(decode_records)
{
	unsigned char buf[4096];
	uint32_t cookie = UINT32_MAX; /* the next one wraps: 0 is never handed out */
	struct got g;
	size_t len = 0;

	/* A file written in a directory: the directory (with name), then the file. */
	len += record(buf + len, FAN_MODIFY, 2, (const uint8_t[]){ 2, 1 },
		      (const unsigned char[]){ 0xd1, 0xf1 }, (const char *const[]){ "f", NULL });
	/* Created, merged with open and close: one event per bit, create first. */
	len += record(buf + len, FAN_CREATE | FAN_OPEN | FAN_CLOSE_WRITE, 2,
		      (const uint8_t[]){ 2, 1 }, (const unsigned char[]){ 0xd1, 0xf2 },
		      (const char *const[]){ "g", NULL });
	/* A directory renamed from d1 to d2: one pair, one cookie. */
	len += record(buf + len, FAN_RENAME | FAN_ONDIR, 3, (const uint8_t[]){ 10, 12, 1 },
		      (const unsigned char[]){ 0xd1, 0xd2, 0xf3 },
		      (const char *const[]){ "old", "new", NULL });
	/* A directory's own attribute change: "." means itself, no name. */
	len += record(buf + len, FAN_ATTRIB | FAN_ONDIR, 1, (const uint8_t[]){ 2 },
		      (const unsigned char[]){ 0xd2 }, (const char *const[]){ "." });
	/* Deleted: DELETE_SELF, then the drop. */
	len += record(buf + len, FAN_ATTRIB | FAN_DELETE_SELF, 1, (const uint8_t[]){ 1 },
		      (const unsigned char[]){ 0xf1 }, (const char *const[]){ NULL });
	len += put_meta(buf + len, FAN_Q_OVERFLOW, 0);

	memset(&g, 0, sizeof(g));
	ck_assert_uint_eq(fanotify_decode(buf, len, &cookie, got_fn, &g), 14);
	ck_assert_int_eq(g.n, 14);
	ck_assert(g.ev[0].mask == FSNW_MODIFY && g.tag[0] == 0xd1 && !strcmp(g.name[0], "f"));
	ck_assert(g.ev[1].mask == FSNW_MODIFY && g.tag[1] == 0xf1 && !g.ev[1].name);
	ck_assert(g.ev[2].mask == FSNW_CREATE && g.tag[2] == 0xd1 && !strcmp(g.name[2], "g"));
	ck_assert(g.ev[3].mask == FSNW_OPEN && g.tag[3] == 0xd1);
	ck_assert(g.ev[4].mask == FSNW_OPEN && g.tag[4] == 0xf2);
	ck_assert(g.ev[5].mask == FSNW_CLOSE_WRITE && g.tag[5] == 0xd1);
	ck_assert(g.ev[6].mask == FSNW_CLOSE_WRITE && g.tag[6] == 0xf2);
	ck_assert(g.ev[7].mask == (FSNW_MOVED_FROM | FSNW_ISDIR) && g.tag[7] == 0xd1 &&
		  !strcmp(g.name[7], "old"));
	ck_assert(g.ev[8].mask == (FSNW_MOVED_TO | FSNW_ISDIR) && g.tag[8] == 0xd2 &&
		  !strcmp(g.name[8], "new"));
	ck_assert_uint_eq(g.ev[7].cookie, 1);
	ck_assert_uint_eq(g.ev[8].cookie, 1);
	/* An entry's create and both ends of its rename name the entry itself;
	 * other events have no target. */
	ck_assert_uint_eq(g.ttag[2], 0xf2);
	ck_assert_uint_eq(g.ttag[7], 0xf3);
	ck_assert_uint_eq(g.ttag[8], 0xf3);
	for (int i = 0; i < 14; i++)
		if (i != 2 && i != 7 && i != 8)
			ck_assert_uint_eq(g.ttag[i], 0);
	ck_assert(g.ev[9].mask == (FSNW_ATTRIB | FSNW_ISDIR) && g.tag[9] == 0xd2 && !g.ev[9].name);
	ck_assert(g.ev[10].mask == FSNW_ATTRIB && g.tag[10] == 0xf1);
	ck_assert(g.ev[11].mask == FSNW_DELETE_SELF && g.tag[11] == 0xf1);
	ck_assert(g.ev[12].mask == FSNW_IGNORED && g.tag[12] == 0xf1);
	ck_assert(g.ev[13].mask == FSNW_OVERFLOW && !g.ev[13].key);
	for (int i = 0; i < 13; i++)
		ck_assert_uint_eq(g.ev[i].flags, KEVENT_OPTIONAL);
	ck_assert_uint_eq(cookie, 1);

	/* Every truncation decodes only whole records, and never reads past len
	 * (the copy makes ASan and valgrind see an overrun). */
	for (size_t cut = 0; cut <= len; cut++) {
		unsigned char *copy = malloc(cut ? cut : 1);

		memcpy(copy, buf, cut);
		memset(&g, 0, sizeof(g));
		fanotify_decode(copy, cut, &cookie, got_fn, &g);
		ck_assert_int_le(g.n, 14);
		free(copy);
	}
}
END_TEST

/* Whatever the bytes, what comes out lies inside the buffer. */
struct bounds {
	const unsigned char *lo, *hi;
	size_t n;
};

static bool bounded_fn(void *arg, const struct kevent *ev)
{
	struct bounds *b = arg;

	b->n++;
	if (ev->key)
		ck_assert(ev->key >= b->lo && ev->key + ev->keylen <= b->hi &&
			  ev->keylen <= KKEY_MAX);
	if (ev->name) {
		const unsigned char *nm = (const unsigned char *)ev->name;

		ck_assert(nm >= b->lo && nm + ev->namelen < b->hi);
		ck_assert_int_eq(nm[ev->namelen], 0);
	}
	return true;
}

START_TEST(decode_lies)
{
	unsigned char buf[1024], *u;
	struct fanotify_event_metadata md;
	uint32_t cookie = 0, v;
	struct got g;
	size_t one, len;

	one = record(buf, FAN_CREATE, 1, (const uint8_t[]){ 2 }, (const unsigned char[]){ 0xd1 },
		     (const char *const[]){ "n" });
	memcpy(buf + one, buf, one); /* two good records */
	len = 2 * one;
#define DECODE(b, l) (memset(&g, 0, sizeof(g)), fanotify_decode((b), (l), &cookie, got_fn, &g))

	ck_assert_uint_eq(DECODE(buf, len), 2);
	/* event_len beyond the buffer, or below the header: the walk ends. */
	memcpy(&md, buf, sizeof(md));
	md.event_len = 4096;
	memcpy(buf, &md, sizeof(md));
	ck_assert_uint_eq(DECODE(buf, len), 0);
	md.event_len = 8;
	memcpy(buf, &md, sizeof(md));
	ck_assert_uint_eq(DECODE(buf, len), 0);
	md.event_len = (uint32_t)one;
	md.metadata_len = 4;
	memcpy(buf, &md, sizeof(md));
	ck_assert_uint_eq(DECODE(buf, len), 0);
	md.metadata_len = sizeof(md);
	md.vers = 99;
	memcpy(buf, &md, sizeof(md));
	ck_assert_uint_eq(DECODE(buf, len), 0);
	md.vers = FANOTIFY_METADATA_VERSION;
	memcpy(buf, &md, sizeof(md));
	/* A bad info record inside a well-bounded event skips that event only. */
	buf[sizeof(md) + 2] = 0; /* info len 0 */
	ck_assert_uint_eq(DECODE(buf, len), 1);
	buf[sizeof(md) + 2] = 200; /* info len past the event */
	ck_assert_uint_eq(DECODE(buf, len), 1);
	buf[sizeof(md) + 2] = (unsigned char)(one - sizeof(md));
	v = 100000; /* handle_bytes past the record */
	memcpy(buf + sizeof(md) + 12, &v, 4);
	ck_assert_uint_eq(DECODE(buf, len), 1);
	v = HB;
	memcpy(buf + sizeof(md) + 12, &v, 4);
	memset(buf + sizeof(md) + 20 + HB, 'n', one - sizeof(md) - 20 - HB); /* name without NUL */
	ck_assert_uint_eq(DECODE(buf, len), 1);
	/* Unaligned, and random bytes: no crash, no overrun. */
	u = malloc(len + 1);
	memcpy(u + 1, buf + one, one);
	ck_assert_uint_eq(DECODE(u + 1, one), 1);
	srand(5);
	for (int i = 0; i < 20000; i++) {
		size_t l = (size_t)(rand() % (int)len) + 1;
		struct bounds b = { u, u + l, 0 };

		memcpy(u, buf + one, one);
		memcpy(u + one, buf + one, l > one ? l - one : 0);
		for (int k = 0; k < 4; k++)
			u[rand() % (int)l] = (unsigned char)rand();
		fanotify_decode(u, l, &cookie, bounded_fn, &b);
	}
	free(u);
#undef DECODE
}
END_TEST

TEST_SUITE(fanotify)
{
	Suite *s = suite_create("fanotify");

	ADD_TEST(s, unprivileged_gets_inotify);
	ADD_TEST(s, auto_policy);
	ADD_TEST(s, tree_one_mark_sibling_silent);
	ADD_TEST(s, tree_fs_mark_shared);
	ADD_TEST(s, rename_pairing);
	ADD_TEST(s, remove_after_move);
	ADD_TEST(s, marks_by_name);
	ADD_TEST(s, readd_hears_nothing_older);
	ADD_TEST(s, dir_delete_self);
	ADD_TEST(s, merged_record_split);
	ADD_TEST(s, fds_stable_over_10000_events);
	ADD_TEST(s, decode_records);
	ADD_TEST(s, decode_lies);
	return s;
}
