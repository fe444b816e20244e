/* SPDX-License-Identifier: MIT */
/*
 * Kernel limits and faults, deterministic and without touching the
 * machine's settings: each case runs in a forked child in a new user
 * namespace (root mapped to root), where /proc/sys/user/max_inotify_watches
 * and max_inotify_instances are the namespace's own and can be made small,
 * and (for unmounts) a new mount namespace with a private tmpfs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hardening.h"
#include "test-common.h"

#define MAXEV 4096

/* ---- helpers for children (no Check assertions there) ---- */

struct cev {
	int wid;
	uint32_t mask;
	char path[PATH_MAX];
	char name[256];
};

static struct cev cevs[MAXEV];

/* Read everything there is now; returns how many. */
static int child_collect(struct fsnw *w)
{
	struct fsnw_event buf[64];
	int n = 0, got;

	while ((got = fsnw_read(w, buf, 64, 0)) > 0) {
		for (int i = 0; i < got && n < MAXEV; i++, n++) {
			cevs[n].wid = buf[i].wid;
			cevs[n].mask = buf[i].mask;
			snprintf(cevs[n].path, sizeof(cevs[n].path), "%s",
				 buf[i].path ? buf[i].path : "");
			snprintf(cevs[n].name, sizeof(cevs[n].name), "%s",
				 buf[i].name ? buf[i].name : "");
		}
	}
	CHILD_CHECK(got == 0, "fsnw_read: %s", strerror(-got));
	return n;
}

static void child_dump(int n)
{
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  [%d] wid %d mask %#x path %s name %s\n", i, cevs[i].wid,
			cevs[i].mask, cevs[i].path, cevs[i].name);
}

/* Counts agree with each other and with the marks the kernel holds. */
static void child_consistent(struct fsnw *w, uint64_t logical, uint64_t kernel)
{
	struct fsnw_stats st = child_stats(w);
	int marks = kernel_marks(w);

	CHILD_CHECK(st.logical_watches == logical, "logical_watches %llu, want %llu",
		    (unsigned long long)st.logical_watches, (unsigned long long)logical);
	CHILD_CHECK(st.kernel_watches == kernel, "kernel_watches %llu, want %llu",
		    (unsigned long long)st.kernel_watches, (unsigned long long)kernel);
	CHILD_CHECK(marks == (int)kernel, "the kernel holds %d marks, stats say %llu", marks,
		    (unsigned long long)kernel);
}

/* Every event is for one of the live wids (0 only for an overflow). */
static void child_only_wids(int n, const int *live, int nlive)
{
	for (int i = 0; i < n; i++) {
		bool ok = cevs[i].wid == 0 && cevs[i].mask == FSNW_OVERFLOW;

		for (int j = 0; j < nlive; j++)
			ok |= cevs[i].wid == live[j];
		if (!ok)
			child_dump(n);
		CHILD_CHECK(ok, "event %d for wid %d, not a live watch", i, cevs[i].wid);
	}
}

/*
 * The end of a watch, as the kernel dropped it: for wid, `first` (e.g.
 * FSNW_DELETE_SELF or FSNW_UNMOUNT) came, then exactly one FSNW_IGNORED,
 * then nothing.
 */
static void child_watch_ended(int n, int wid, uint32_t first)
{
	int seen_first = -1, ignored = -1, nignored = 0;

	for (int i = 0; i < n; i++) {
		if (cevs[i].wid != wid)
			continue;
		if (ignored >= 0) {
			child_dump(n);
			CHILD_CHECK(0, "event %d for wid %d after its IGNORED", i, wid);
		}
		if (cevs[i].mask & FSNW_IGNORED) {
			CHILD_CHECK(cevs[i].mask == FSNW_IGNORED, "IGNORED with %#x", cevs[i].mask);
			ignored = i;
			nignored++;
		} else if ((cevs[i].mask & first) && seen_first < 0) {
			seen_first = i;
		}
	}
	if (nignored != 1 || (first && seen_first < 0))
		child_dump(n);
	CHILD_CHECK(nignored == 1, "wid %d: %d IGNORED events", wid, nignored);
	CHILD_CHECK(!first || (seen_first >= 0 && seen_first < ignored),
		    "wid %d: no %#x before its IGNORED", wid, first);
}

struct dirarg {
	char *dir;
};

/* ---- -ENOSPC from fsnw_add ---- */

#define WATCH_LIMIT 5

static int enospc_add_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(0);
	char p[PATH_MAX], name[16];
	int wids[WATCH_LIMIT], ret, fds = fd_count();

	(void)fds;
	for (int i = 0; i <= WATCH_LIMIT; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		child_touch(dir, name);
	}
	for (int i = 0; i < WATCH_LIMIT; i++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		wids[i] = fsnw_add(w, p, FSNW_MODIFY, 0);
		CHILD_CHECK(wids[i] > 0, "add %d: %s", i, strerror(-wids[i]));
	}
	snprintf(p, sizeof(p), "%s/f%d", dir, WATCH_LIMIT);
	ret = fsnw_add(w, p, FSNW_MODIFY, 0);
	CHILD_CHECK(ret == -ENOSPC, "watch %d of %d: %d", WATCH_LIMIT + 1, WATCH_LIMIT, ret);
	child_consistent(w, WATCH_LIMIT, WATCH_LIMIT);
	/* A watch on an object already marked needs no new mark: it works. */
	snprintf(p, sizeof(p), "%s/f0", dir);
	ret = fsnw_add(w, p, FSNW_MODIFY | FSNW_ATTRIB, 0);
	CHILD_CHECK(ret > 0, "shared add at the limit: %s", strerror(-ret));
	child_consistent(w, WATCH_LIMIT + 1, WATCH_LIMIT);
	/* Room again after a remove. */
	CHILD_CHECK(fsnw_remove(w, wids[1]) == 0, "remove");
	snprintf(p, sizeof(p), "%s/f%d", dir, WATCH_LIMIT);
	ret = fsnw_add(w, p, FSNW_MODIFY, 0);
	CHILD_CHECK(ret > 0, "add after remove: %s", strerror(-ret));
	child_consistent(w, WATCH_LIMIT + 1, WATCH_LIMIT);
	fsnw_close(w);
	return 0;
}

/* The child's exit status: 0 passed (run_child says what else means what). */
static int run_in_userns(int (*fn)(void *), unsigned flags, int watches, int instances)
{
	struct child_limits lim = { watches, instances };
	struct dirarg a = { tmpdir_make() };
	int status = run_child(CHILD_USERNS | flags, &lim, fn, &a);

	tmpdir_remove(a.dir);
	return status;
}

START_TEST(enospc_add)
{
	ck_assert_int_eq(run_in_userns(enospc_add_child, 0, WATCH_LIMIT, 0), 0);
}
END_TEST

/* ---- -ENOSPC in a batch: per item, and atomic rollback ---- */

static int enospc_batch_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(2);
	struct fsnw_batch_item items[WATCH_LIMIT + 2];
	char paths[WATCH_LIMIT + 2][PATH_MAX];
	int ret, wid;

	for (int i = 0; i < WATCH_LIMIT + 2; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		child_touch(dir, name);
		snprintf(paths[i], sizeof(paths[i]), "%s/%s", dir, name);
		items[i] = (struct fsnw_batch_item){ .path = paths[i], .mask = FSNW_MODIFY };
	}
	/* Per item: the first five get marks, the last two -ENOSPC. */
	ret = fsnw_add_batch(w, items, WATCH_LIMIT + 2, 0);
	CHILD_CHECK(ret == WATCH_LIMIT, "batch: %d", ret);
	for (int i = 0; i < WATCH_LIMIT + 2; i++) {
		if (i < WATCH_LIMIT)
			CHILD_CHECK(items[i].result > 0, "item %d: %d", i, items[i].result);
		else
			CHILD_CHECK(items[i].result == -ENOSPC, "item %d: %d", i, items[i].result);
	}
	child_consistent(w, WATCH_LIMIT, WATCH_LIMIT);
	for (int i = 0; i < WATCH_LIMIT; i++)
		CHILD_CHECK(fsnw_remove(w, items[i].result) == 0, "remove %d", i);
	/* Two of the removed marks stay parked (idle cache of 2). */
	child_consistent(w, 0, 2);

	/*
	 * Atomic: f6 gets a watch; f3 and f4 are the two parked marks (the
	 * cache kept the last two removed). The batch makes f0 and f2 anew,
	 * revives f3 and f4, and f5 hits the limit: everything goes back, the
	 * same marks as before, f3 and f4 parked again, one logical watch.
	 */
	wid = fsnw_add(w, paths[6], FSNW_MODIFY, 0);
	CHILD_CHECK(wid > 0, "add f6: %s", strerror(-wid));
	{
		struct fsnw_stats b = child_stats(w);
		struct fsnw_batch_item at[5];
		int order[5] = { 0, 2, 3, 4, 5 }, nospc = 0;

		for (int i = 0; i < 5; i++)
			at[i] = (struct fsnw_batch_item){ .path = paths[order[i]],
							  .mask = FSNW_MODIFY };
		ret = fsnw_add_batch(w, at, 5, FSNW_BATCH_ATOMIC);
		CHILD_CHECK(ret == 0, "atomic batch: %d", ret);
		for (int i = 0; i < 5; i++) {
			nospc += at[i].result == -ENOSPC;
			CHILD_CHECK(at[i].result == -ENOSPC || at[i].result == -ECANCELED,
				    "atomic item %d: %d", i, at[i].result);
		}
		CHILD_CHECK(nospc == 1, "%d items failed with ENOSPC", nospc);
		child_consistent(w, 1, b.kernel_watches);
		CHILD_CHECK(child_stats(w).parked_watches == b.parked_watches, "parked %llu -> %llu",
			    (unsigned long long)b.parked_watches,
			    (unsigned long long)child_stats(w).parked_watches);
	}
	/*
	 * At the limit with parked marks, a mark gives back the oldest parked
	 * one and retries: f0, f1 new, f2 and f5 each evict a parked mark, f3
	 * finds none left. The rollback cannot bring evicted marks back, but
	 * every mark in use is as before and no new one stays.
	 */
	{
		struct fsnw_stats b = child_stats(w);
		struct fsnw_batch_item at[5];
		int order[5] = { 0, 1, 2, 5, 3 };

		CHILD_CHECK(b.parked_watches == 2, "parked %llu", (unsigned long long)b.parked_watches);
		for (int i = 0; i < 5; i++)
			at[i] = (struct fsnw_batch_item){ .path = paths[order[i]],
							  .mask = FSNW_MODIFY };
		ret = fsnw_add_batch(w, at, 5, FSNW_BATCH_ATOMIC);
		CHILD_CHECK(ret == 0, "atomic batch with evictions: %d", ret);
		for (int i = 0; i < 5; i++)
			CHILD_CHECK(at[i].result == (i == 4 ? -ENOSPC : -ECANCELED), "item %d: %d", i,
				    at[i].result);
		child_consistent(w, 1, b.kernel_watches - b.parked_watches);
		CHILD_CHECK(child_stats(w).parked_watches == 0, "parked %llu",
			    (unsigned long long)child_stats(w).parked_watches);
	}
	fsnw_close(w);
	return 0;
}

START_TEST(enospc_batch)
{
	ck_assert_int_eq(run_in_userns(enospc_batch_child, 0, WATCH_LIMIT, 0), 0);
}
END_TEST

/* ---- -ENOSPC from a tree add: undone, nothing left, no events ---- */

static int enospc_tree_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(0);
	char root[PATH_MAX], p[PATH_MAX + 16];
	int plain, ret, n;

	/* root/{s0..s3}/t: nine directories, over the limit of five. */
	snprintf(root, sizeof(root), "%s/root", dir);
	CHILD_CHECK(mkdir(root, 0755) == 0, "mkdir");
	for (int i = 0; i < 4; i++) {
		char s[8];

		snprintf(s, sizeof(s), "s%d", i);
		child_mkdir(root, s);
		snprintf(p, sizeof(p), "%s/%s", root, s);
		child_mkdir(p, "t");
	}
	/* A watch of its own on every s: the walk shares their marks and drains
	 * on each, while the tree's first directories are already live. */
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/s%d", root, i);
		plain = fsnw_add(w, p, FSNW_CREATE | FSNW_ACCESS, 0);
		CHILD_CHECK(plain > 0, "plain add: %s", strerror(-plain));
	}
	child_consistent(w, 4, 4);
	ret = fsnw_add(w, root, FSNW_CREATE | FSNW_ACCESS | FSNW_OPEN | FSNW_CLOSE,
		       FSNW_WATCH_TREE);
	CHILD_CHECK(ret == -ENOSPC, "tree over the limit: %d", ret);
	child_consistent(w, 4, 4);
	n = child_collect(w);
	{
		int live[4] = { plain - 3, plain - 2, plain - 1, plain };

		child_only_wids(n, live, 4);
	}
	fsnw_close(w);
	return 0;
}

START_TEST(enospc_tree)
{
	ck_assert_int_eq(run_in_userns(enospc_tree_child, 0, WATCH_LIMIT, 0), 0);
}
END_TEST

/* ---- -EMFILE from fsnw_open ---- */

#define INSTANCE_LIMIT 3

/* The limit is inotify's: every handle here is on inotify, AUTO or not. */
static int emfile_child(void *arg)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_INOTIFY };
	struct fsnw *w[INSTANCE_LIMIT], *sentinel = (struct fsnw *)arg, *x = sentinel;
	int fds, ret;

	for (int i = 0; i < INSTANCE_LIMIT; i++) {
		ret = fsnw_open(&w[i], &o);
		CHILD_CHECK(ret == 0, "instance %d: %s", i + 1, strerror(-ret));
	}
	fds = fd_count();
	ret = fsnw_open(&x, &o);
	CHILD_CHECK(ret == -EMFILE, "instance %d of %d: %d", INSTANCE_LIMIT + 1, INSTANCE_LIMIT,
		    ret);
	CHILD_CHECK(x == sentinel, "out-parameter touched on failure");
	CHILD_CHECK(fd_count() == fds, "fds %d -> %d", fds, fd_count());
	fsnw_close(w[0]);
	ret = fsnw_open(&x, &o);
	CHILD_CHECK(ret == 0, "open after close: %s", strerror(-ret));
	fsnw_close(x);
	for (int i = 1; i < INSTANCE_LIMIT; i++)
		fsnw_close(w[i]);
	return 0;
}

START_TEST(emfile_open)
{
	struct child_limits lim = { 0, INSTANCE_LIMIT };

	ck_assert_int_eq(run_child(CHILD_USERNS, &lim, emfile_child, &lim), 0);
}
END_TEST

/* ---- a private tmpfs unmounted under the watcher ---- */

static int unmount_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	char mnt[PATH_MAX], p[PATH_MAX + 16];
	struct fsnw *w;
	int wids[5], n;

	snprintf(mnt, sizeof(mnt), "%s/mnt", dir);
	CHILD_CHECK(mkdir(mnt, 0755) == 0, "mkdir");
	CHILD_CHECK(mount("fsnw-test", mnt, "tmpfs", 0, "size=1m") == 0, "mount: %s",
		    strerror(errno));
	child_touch(mnt, "f");
	child_mkdir(mnt, "t");
	snprintf(p, sizeof(p), "%s/t", mnt);
	child_mkdir(p, "a");
	child_mkdir(p, "b");

	w = child_open(0);
	snprintf(p, sizeof(p), "%s/f", mnt);
	wids[0] = fsnw_add(w, p, FSNW_MODIFY, 0);
	wids[1] = fsnw_add(w, p, FSNW_ATTRIB, 0); /* the same mark */
	wids[2] = fsnw_add(w, mnt, FSNW_CREATE, 0);
	snprintf(p, sizeof(p), "%s/t", mnt);
	wids[3] = fsnw_add(w, p, FSNW_CREATE, FSNW_WATCH_TREE);
	wids[4] = fsnw_add(w, dir, FSNW_CREATE, 0); /* outside: stays */
	for (int i = 0; i < 5; i++)
		CHILD_CHECK(wids[i] > 0, "add %d: %s", i, strerror(-wids[i]));
	child_consistent(w, 5, 6); /* f, mnt, t, t/a, t/b, dir */

	CHILD_CHECK(umount2(mnt, 0) == 0, "umount: %s", strerror(errno));
	n = child_collect(w);
	for (int i = 0; i < 4; i++)
		child_watch_ended(n, wids[i], FSNW_UNMOUNT);
	child_only_wids(n, wids, 5);
	child_consistent(w, 1, 1);
	for (int i = 0; i < 4; i++)
		CHILD_CHECK(fsnw_remove(w, wids[i]) == -ENOENT, "wid %d still there", wids[i]);
	/* The watch outside the mount still works. */
	child_touch(dir, "after");
	n = child_collect(w);
	CHILD_CHECK(n == 1 && cevs[0].wid == wids[4] && !strcmp(cevs[0].name, "after"),
		    "the outside watch after the unmount (%d events)", n);
	fsnw_close(w);
	return 0;
}

START_TEST(unmounted)
{
	ck_assert_int_eq(run_in_userns(unmount_child, CHILD_MOUNTNS, 0, 0), 0);
}
END_TEST

/* ---- faults that need no namespace ---- */

START_TEST(watched_file_deleted)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX], l[PATH_MAX];
	struct ev *evs;
	int wids[3], n;

	touch(dir, "f");
	ck_assert_int_eq(link(pjoin(p, dir, "f"), pjoin(l, dir, "link")), 0);
	wids[0] = fsnw_add(w, p, FSNW_MODIFY | FSNW_DELETE_SELF, 0);
	wids[1] = fsnw_add(w, p, FSNW_DELETE_SELF, 0); /* shares the mark */
	wids[2] = fsnw_add(w, l, FSNW_ATTRIB | FSNW_DELETE_SELF, 0); /* a hard link: the same */
	for (int i = 0; i < 3; i++)
		ck_assert_int_gt(wids[i], 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(unlink(l), 0);
	n = collect_now(w, &evs, 64);
	for (int i = 0; i < 3; i++) {
		int del = find_ev(evs, n, 0, wids[i], FSNW_DELETE_SELF, NULL);
		int ign = find_ev(evs, n, 0, wids[i], FSNW_IGNORED, NULL);

		if (del < 0 || ign < del || count_ev(evs, n, wids[i], FSNW_IGNORED, NULL) != 1 ||
		    find_ev(evs, n, ign + 1, wids[i], 0, NULL) >= 0)
			dump_evs(evs, n);
		ck_assert_int_ge(del, 0);
		ck_assert_int_gt(ign, del);
		ck_assert_int_eq(count_ev(evs, n, wids[i], FSNW_IGNORED, NULL), 1);
		ck_assert_int_lt(find_ev(evs, n, ign + 1, wids[i], 0, NULL), 0);
		ck_assert_int_eq(fsnw_remove(w, wids[i]), -ENOENT);
	}
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).logical_watches, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_int_eq(kernel_marks(w), 0);
	ck_assert_uint_eq(stats_of(w).kernel_drops, 1);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(directory_renamed_away)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char root[PATH_MAX], d[PATH_MAX], away[PATH_MAX], p[PATH_MAX];
	struct ev *evs;
	int plain, tree, n;

	make_dir(dir, "root");
	pjoin(root, dir, "root");
	make_dir(root, "d");
	pjoin(d, root, "d");
	make_dir(d, "e");
	plain = fsnw_add(w, d, FSNW_CREATE | FSNW_MOVE_SELF, 0);
	tree = fsnw_add(w, root, FSNW_CREATE | FSNW_MOVE, FSNW_WATCH_TREE);
	ck_assert_int_gt(plain, 0);
	ck_assert_int_gt(tree, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 3); /* root, d (shared), d/e */

	ck_assert_int_eq(rename(d, pjoin(away, dir, "away")), 0);
	n = collect_now(w, &evs, 64);
	ck_assert_int_ge(find_ev(evs, n, 0, tree, FSNW_MOVED_FROM | FSNW_ISDIR, "d"), 0);
	ck_assert_int_ge(find_ev(evs, n, 0, plain, FSNW_MOVE_SELF, NULL), 0);
	evs_free(evs);
	/* The tree let go of d and d/e; the plain watch follows its inode. */
	ck_assert_uint_eq(stats_of(w).kernel_watches, 2);
	ck_assert_int_eq(kernel_marks(w), 2);

	touch(away, "x");
	touch(pjoin(p, away, "e"), "y");
	n = collect_now(w, &evs, 64);
	ck_assert_int_ge(find_ev(evs, n, 0, plain, FSNW_CREATE, "x"), 0);
	ck_assert_int_eq(count_ev(evs, n, tree, 0, NULL), 0); /* moved out: silent */
	ck_assert_int_eq(n, 1);
	evs_free(evs);
	ck_assert_int_eq(fsnw_remove(w, plain), 0);
	ck_assert_int_eq(fsnw_remove(w, tree), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_int_eq(kernel_marks(w), 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * fsnw_remove after the kernel dropped the mark but before its IN_IGNORED
 * was read (and once after it was read into the queue but not delivered):
 * remove returns 0 and nothing for the wid is read afterwards.
 */
/* Returns the logical watches left (none, or a wid leaked). */
static uint64_t remove_racing_drop(uint32_t idle, bool pumped)
{
	struct fsnw *w = test_open(0, 0, idle);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int a, b, n;
	uint64_t left;

	touch(dir, "f");
	pjoin(p, dir, "f");
	a = fsnw_add(w, p, FSNW_MODIFY | FSNW_DELETE_SELF, 0);
	b = fsnw_add(w, p, FSNW_DELETE_SELF, 0);
	ck_assert_int_gt(a, 0);
	ck_assert_int_gt(b, 0);
	write_bytes(dir, "f", "x");
	ck_assert_int_eq(unlink(p), 0);
	if (pumped)
		ck_assert_int_gt(fsnw_pump(w), 0); /* IGNORED queued for a and b, unread */
	ck_assert_int_eq(fsnw_remove(w, a), 0);
	n = collect_now(w, &evs, 64);
	ck_assert_int_eq(count_ev(evs, n, a, 0, NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_IGNORED, NULL), 1);
	evs_free(evs);
	ck_assert_int_eq(fsnw_remove(w, b), -ENOENT);
	left = stats_of(w).logical_watches;
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_int_eq(kernel_marks(w), 0);
	/* The last watch on a dropped mark, removed before the drop is read. */
	touch(dir, "g");
	a = fsnw_add(w, pjoin(p, dir, "g"), FSNW_MODIFY, 0);
	ck_assert_int_gt(a, 0);
	ck_assert_int_eq(unlink(p), 0);
	if (pumped)
		fsnw_pump(w);
	ck_assert_int_eq(fsnw_remove(w, a), 0);
	n = collect_now(w, &evs, 64);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	ck_assert_uint_eq(stats_of(w).parked_watches, 0);
	ck_assert_int_eq(kernel_marks(w), 0);
	fsnw_close(w);
	tmpdir_remove(dir);
	return left;
}

START_TEST(remove_races_drop)
{
	ck_assert_uint_eq(remove_racing_drop(0, false), 0);
	ck_assert_uint_eq(remove_racing_drop(0, true), 0);
	ck_assert_uint_eq(remove_racing_drop(4, false), 0);
	ck_assert_uint_eq(remove_racing_drop(4, true), 0);
}
END_TEST

START_TEST(close_with_events_pending)
{
	int fds = fd_count();
	size_t heap = 0;
	char *dir = tmpdir_make();

	for (int round = 0; round < 3; round++) {
		struct fsnw *w = test_open(0, 64, 4);
		char p[PATH_MAX], name[64];
		int wid;

		make_dir(dir, "t");
		wid = fsnw_add(w, pjoin(p, dir, "t"), FSNW_ALL_EVENTS, FSNW_WATCH_TREE);
		ck_assert_int_gt(wid, 0);
		ck_assert_int_gt(fsnw_add(w, dir, FSNW_ALL_EVENTS, 0), 0);
		for (int i = 0; i < 200; i++) {
			snprintf(name, sizeof(name), "file-%d-with-a-longish-name-here", i);
			touch(p, name);
		}
		make_dir(p, "sub");
		/* Some in the queue (an overflow among them), the rest in the kernel. */
		ck_assert_int_gt(fsnw_pump(w), 0);
		for (int i = 0; i < 50; i++) {
			snprintf(name, sizeof(name), "more-%d", i);
			touch(dir, name);
		}
		ck_assert_int_eq(fsnw_remove(w, wid), 0); /* parked, with events of its own */
		fsnw_close(w);
		tmpdir_remove(dir);
		/* The first round warms up what the process keeps. */
		if (round == 0)
			heap = heap_in_use();
		else
			ck_assert_uint_eq(heap_in_use(), heap);
		dir = tmpdir_make();
	}
	tmpdir_remove(dir);
	ck_assert_int_eq(fd_count(), fds);
}
END_TEST

TEST_SUITE(limits)
{
	Suite *s = suite_create("limits");

	ADD_TEST(s, enospc_add);
	ADD_TEST(s, enospc_batch);
	ADD_TEST(s, enospc_tree);
	ADD_TEST(s, emfile_open);
	ADD_TEST(s, unmounted);
	return s;
}

TEST_SUITE(faults)
{
	Suite *s = suite_create("faults");

	ADD_TEST(s, watched_file_deleted);
	ADD_TEST(s, directory_renamed_away);
	ADD_TEST(s, remove_races_drop);
	ADD_TEST(s, close_with_events_pending);
	return s;
}
