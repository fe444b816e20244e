/* SPDX-License-Identifier: MIT */
/*
 * Trees at the kernel's limits and across mounts, each case in a forked child:
 *   tree_limits   a user namespace whose max_inotify_watches is small
 *                 (inotify: fanotify has no watch limit);
 *   tree_mounts   a private mount namespace with tmpfs and bind mounts made
 *                 after and before the add (root; both backends).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hardening.h"
#include "test-common.h"

#define READS (FSNW_OPEN | FSNW_ACCESS | FSNW_CLOSE_NOWRITE)

/* A kernel watch per directory (see tests/test-tree.c): counts are exact. */
static bool walks(void)
{
	return test_backend == FSNW_BACKEND_INOTIFY;
}

/* What a child read, by kind. */
struct tally {
	int events, creates, reads, overflows, ignored;
	int wid;              /* events for other wids are counted in `strays` */
	int strays;
	const char *name;     /* a name to look for, and where it was reported */
	char where[PATH_MAX];
	int found;
};

static void tally_add(struct tally *c, const struct fsnw_event *ev)
{
	c->events++;
	c->creates += (ev->mask & FSNW_CREATE) != 0;
	c->reads += (ev->mask & READS) != 0;
	c->overflows += (ev->mask & FSNW_OVERFLOW) != 0;
	c->ignored += (ev->mask & FSNW_IGNORED) != 0;
	c->strays += ev->wid != c->wid && ev->wid != 0;
	if (c->name && ev->name && !strcmp(ev->name, c->name) && (ev->mask & FSNW_CREATE)) {
		c->found++;
		snprintf(c->where, sizeof(c->where), "%s", ev->path);
	}
}

/* Far more than any case here makes: reads that never run dry are a failure. */
#define EVENTS_MAX 100000

/*
 * Read until a read of ms finds nothing; returns how many events, or
 * -errno. ms 0 reads what the handle has now: the sync point of
 * collect_now for the child's own changes to files. (Not for a mount: a
 * read looks at the mount table before it reads the kernel queue, and only
 * once an earlier read found that queue empty.) A wait of ms > 0 asserts
 * an absence.
 */
static int drain_for(struct fsnw *w, int ms, struct tally *c)
{
	struct fsnw_event ev[64];
	int n, total = 0;

	while ((n = fsnw_read(w, ev, 64, ms)) > 0) {
		CHILD_CHECK(total < EVENTS_MAX, "reads never run dry (%d events)", total);
		for (int i = 0; i < n; i++) {
			if (getenv("FSNW_TEST_VERBOSE"))
				fprintf(stderr, "  wid %d mask %#x %s %s\n", ev[i].wid, ev[i].mask,
					ev[i].path ? ev[i].path : "", ev[i].name ? ev[i].name : "");
			tally_add(c, &ev[i]);
		}
		total += n;
	}
	return n < 0 ? n : total;
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * One read that may sleep until what the trees wait for comes: the kernel
 * queue, the trees' retry timer and the mount table all wake it. 0, or
 * -ETIMEDOUT once deadline (ms_now's) has passed, or fsnw_read's error.
 */
static int read_waiting(struct fsnw *w, struct tally *c, uint64_t deadline)
{
	struct fsnw_event ev[64];
	int n;

	if (ms_now() >= deadline)
		return -ETIMEDOUT;
	n = fsnw_read(w, ev, 64, 100);
	for (int i = 0; i < n; i++)
		tally_add(c, &ev[i]);
	return n < 0 ? n : 0;
}

/* Read until the handle holds `watches` kernel watches (the retries of
 * walks that failed have run), then what it has now. */
static int drain_until_watched(struct fsnw *w, uint64_t watches, struct tally *c)
{
	uint64_t deadline = ms_now() + SYNC_TIMEOUT_MS;
	int ret = 0;

	while (ret == 0 && child_stats(w).kernel_watches < watches)
		ret = read_waiting(w, c, deadline);
	return ret < 0 ? ret : drain_for(w, 0, c);
}

/* Read until c counts `overflows` FSNW_OVERFLOW events (a mount change
 * has been seen), then what the handle has now. */
static int drain_until_overflows(struct fsnw *w, int overflows, struct tally *c)
{
	uint64_t deadline = ms_now() + SYNC_TIMEOUT_MS;
	int ret = 0;

	while (ret == 0 && c->overflows < overflows)
		ret = read_waiting(w, c, deadline);
	return ret < 0 ? ret : drain_for(w, 0, c);
}

struct dirarg {
	char *dir;
};

/* ---- past the watch limit ---- */

#define OLD_DIRS 40
#define NEW_DIRS 40
#define WATCHES 60

/*
 * A tree of 40 directories (41 watches with its root) under a limit of 60,
 * then 40 new ones: 19 are followed, 21 fail with ENOSPC. The caller reads
 * the 40 creates and one FSNW_OVERFLOW, and then nothing: no echo of the
 * library's attempts (each an open, a failed watch and a close, with a
 * back-off), and reads with a timeout sleep. When room comes back
 * (directories of the tree deleted), the retries follow the rest and say
 * FSNW_OVERFLOW again.
 */
static int watch_limit_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(0);
	struct tally c = { 0 };
	struct fsnw_stats st, st2;
	char p[PATH_MAX], name[16];

	for (int i = 0; i < OLD_DIRS; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		child_mkdir(dir, name);
	}
	c.wid = fsnw_add(w, dir, FSNW_ALL_EVENTS, FSNW_WATCH_TREE);
	CHILD_CHECK(c.wid > 0, "tree add: %s", strerror(-c.wid));
	for (int i = 0; i < NEW_DIRS; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		child_mkdir(dir, name);
	}
	CHILD_CHECK(drain_for(w, 0, &c) >= 0, "read");
	CHILD_CHECK(c.creates == NEW_DIRS && c.overflows == 1 && c.reads == 0 && !c.strays,
		    "creates %d overflows %d reads %d strays %d", c.creates, c.overflows, c.reads,
		    c.strays);
	st = child_stats(w);
	CHILD_CHECK(st.kernel_watches == WATCHES, "kernel watches %llu",
		    (unsigned long long)st.kernel_watches);
	CHILD_CHECK(kernel_marks(w) == WATCHES, "the kernel holds %d", kernel_marks(w));
	/* Quiet, an absence: nothing to read, again and again; a timeout sleeps. */
	for (int i = 0; i < 100; i++)
		CHILD_CHECK(drain_for(w, 0, &c) == 0, "read %d returned events", i);
	st = child_stats(w);
	CHILD_CHECK(drain_for(w, 200, &c) == 0, "events after a sleep");
	st2 = child_stats(w);
	CHILD_CHECK(st2.sys_poll > st.sys_poll, "the read did not sleep");
	/* Each attempt opens the directory, fails to watch it and closes it:
	 * two walk syscalls, and no echo of them reached the caller. */
	CHILD_CHECK(st2.sys_walk - st.sys_walk == 2 * (st2.tree_retries - st.tree_retries),
		    "sys_walk %llu -> %llu for %llu retries", (unsigned long long)st.sys_walk,
		    (unsigned long long)st2.sys_walk,
		    (unsigned long long)(st2.tree_retries - st.tree_retries));
	CHILD_CHECK(c.events == NEW_DIRS + 1, "%d events", c.events);
	/* Room again: the retries follow the other 21. */
	for (int i = 0; i < 25; i++) {
		snprintf(p, sizeof(p), "%s/d%d", dir, i);
		CHILD_CHECK(rmdir(p) == 0, "rmdir %s", p);
	}
	CHILD_CHECK(drain_until_watched(w, 1 + OLD_DIRS - 25 + NEW_DIRS, &c) >= 0, "read");
	CHILD_CHECK(c.overflows == 2 && c.reads == 0, "overflows %d reads %d", c.overflows, c.reads);
	st = child_stats(w);
	CHILD_CHECK(st.kernel_watches == 1 + OLD_DIRS - 25 + NEW_DIRS, "kernel watches %llu",
		    (unsigned long long)st.kernel_watches);
	CHILD_CHECK(st.tree_retries > 0, "no retries");
	for (int i = 0; i < NEW_DIRS; i++) {
		snprintf(p, sizeof(p), "%s/n%d", dir, i);
		child_touch(p, "late");
	}
	c.creates = 0;
	CHILD_CHECK(drain_for(w, 0, &c) >= 0, "read");
	CHILD_CHECK(c.creates == NEW_DIRS, "creates %d", c.creates);
	fsnw_close(w);
	return 0;
}

START_TEST(tree_past_watch_limit)
{
	struct child_limits lim = { WATCHES, 0 };
	struct dirarg a = { tmpdir_make() };

	int status = run_child(CHILD_USERNS, &lim, watch_limit_child, &a);

	ck_assert_msg(status == 0, "watch limit: child exited %d", status);
	tmpdir_remove(a.dir);
}
END_TEST

TEST_SUITE(tree_limits)
{
	Suite *s = suite_create("tree_limits");

	ADD_TEST(s, tree_past_watch_limit);
	return s;
}

/* ---- mounts ---- */

/* A forked child in a private mount namespace (root, not a user namespace:
 * fanotify needs the initial one). */
static int run_in_mountns(int (*fn)(void *), const char *dir)
{
	struct dirarg a = { (char *)dir };
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) < 0 ||
		    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
			fprintf(stderr, "no private mount namespace: %s\n", strerror(errno));
			exit(77);
		}
		exit(fn(&a));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void child_mount(const char *dir, const char *name)
{
	char p[PATH_MAX + 256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	CHILD_CHECK(mount("fsnw-test", p, "tmpfs", 0, "size=1m") == 0, "mount %s: %s", p,
		    strerror(errno));
}

/*
 * A tmpfs mounted on a directory of the tree after the add: the caller is
 * told (FSNW_OVERFLOW: what that path holds changed without events), and
 * what is made on the new filesystem is reported.
 */
static int mounted_after_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(0);
	struct tally c = { 0 };
	char t[PATH_MAX], m[PATH_MAX + 8], p[PATH_MAX + 16];

	child_mkdir(dir, "t");
	child_mkdir(dir, "outside");
	snprintf(t, sizeof(t), "%s/t", dir);
	child_mkdir(t, "m");
	snprintf(m, sizeof(m), "%s/m", t);
	child_mkdir(m, "under");
	c.wid = fsnw_add(w, t, FSNW_CREATE | FSNW_DELETE, FSNW_WATCH_TREE);
	CHILD_CHECK(c.wid > 0, "tree add: %s", strerror(-c.wid));
	/* A mount outside the tree is none of its business: an absence,
	 * waited for. */
	child_mount(dir, "outside");
	CHILD_CHECK(drain_for(w, 100, &c) == 0, "%d events for a mount outside", c.events);
	child_mount(t, "m");
	CHILD_CHECK(drain_until_overflows(w, 1, &c) >= 0, "read");
	CHILD_CHECK(c.overflows == 1, "overflows %d", c.overflows);
	CHILD_CHECK(child_stats(w).overflows_mount == 1, "overflows_mount");
	/* A fanotify tree marks the new filesystem. */
	CHILD_CHECK(walks() || child_stats(w).kernel_watches == 2, "kernel watches %llu",
		    (unsigned long long)child_stats(w).kernel_watches);
	child_mkdir(m, "x");
	snprintf(p, sizeof(p), "%s/x", m);
	c.name = "f";
	child_touch(p, "f");
	CHILD_CHECK(drain_for(w, 0, &c) >= 0, "read");
	CHILD_CHECK(c.creates == 2 && c.found == 1 && !strcmp(c.where, p),
		    "creates %d, f found %d at %s", c.creates, c.found, c.where);
	CHILD_CHECK(!c.strays && !c.ignored, "strays %d ignored %d", c.strays, c.ignored);
	fsnw_close(w);
	umount2(m, MNT_DETACH);
	snprintf(p, sizeof(p), "%s/outside", dir);
	umount2(p, MNT_DETACH);
	return 0;
}

/*
 * A tmpfs inside the tree is unmounted: the directory underneath is the
 * one at that path now, and it is watched (FSNW_OVERFLOW says the content
 * changed). fanotify holds the filesystem busy (a plain umount fails with
 * EBUSY, as libfsnwatch(7) says); a lazy one goes through.
 */
static int unmounted_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(0);
	struct tally c = { 0 };
	char m[PATH_MAX];
	int ret;

	child_mkdir(dir, "m");
	snprintf(m, sizeof(m), "%s/m", dir);
	child_mount(dir, "m");
	child_mkdir(m, "inside");
	c.wid = fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE);
	CHILD_CHECK(c.wid > 0, "tree add: %s", strerror(-c.wid));
	ret = umount2(m, 0);
	if (test_backend == FSNW_BACKEND_FANOTIFY) {
		CHILD_CHECK(ret < 0 && errno == EBUSY, "plain umount under fanotify: %d", ret);
		ret = umount2(m, MNT_DETACH);
	}
	CHILD_CHECK(ret == 0, "umount: %s", strerror(errno));
	CHILD_CHECK(drain_until_overflows(w, 1, &c) >= 0, "read");
	CHILD_CHECK(c.overflows == 1 && !c.ignored, "overflows %d ignored %d", c.overflows,
		    c.ignored);
	CHILD_CHECK(child_stats(w).overflows_mount == 1, "overflows_mount");
	/* A fanotify tree lets the gone filesystem's mark go. */
	CHILD_CHECK(walks() || child_stats(w).kernel_watches == 1, "kernel watches %llu",
		    (unsigned long long)child_stats(w).kernel_watches);
	c.name = "after";
	child_touch(m, "after");
	CHILD_CHECK(drain_for(w, 0, &c) >= 0, "read");
	CHILD_CHECK(c.found == 1 && !strcmp(c.where, m), "after found %d at %s", c.found, c.where);
	CHILD_CHECK(!c.strays, "strays %d", c.strays);
	fsnw_close(w);
	return 0;
}

/*
 * A directory reachable twice in the tree (a bind mount) has one kernel
 * watch, and none of the add's reads reaches the caller. A walked tree
 * reports its events at both places, as find lists it at both; a fanotify
 * tree at the place its cache has.
 */
static int bind_child(void *arg)
{
	const char *dir = ((struct dirarg *)arg)->dir;
	struct fsnw *w = child_open(0);
	struct tally c = { 0 };
	char a[PATH_MAX], b[PATH_MAX];

	child_mkdir(dir, "a");
	child_mkdir(dir, "b");
	snprintf(a, sizeof(a), "%s/a", dir);
	snprintf(b, sizeof(b), "%s/b", dir);
	child_mkdir(a, "s1");
	child_mkdir(a, "s2");
	/* The kernel ignores the type of a bind mount; valgrind wants a string. */
	CHILD_CHECK(mount(a, b, "none", MS_BIND, NULL) == 0, "bind: %s", strerror(errno));
	c.wid = fsnw_add(w, dir, FSNW_ALL_EVENTS, FSNW_WATCH_TREE);
	CHILD_CHECK(c.wid > 0, "tree add: %s", strerror(-c.wid));
	/* An absence, waited for: the add's reads make no event. */
	CHILD_CHECK(drain_for(w, 100, &c) == 0, "%d events after an idle add (%d reads)", c.events,
		    c.reads);
	CHILD_CHECK(!walks() || child_stats(w).kernel_watches == 4, /* dir, a, s1, s2 */
		    "kernel watches %llu", (unsigned long long)child_stats(w).kernel_watches);
	c.name = "x";
	child_touch(b, "x");
	CHILD_CHECK(drain_for(w, 0, &c) >= 0, "read");
	CHILD_CHECK(c.found == (walks() ? 2 : 1) && (!strcmp(c.where, a) || !strcmp(c.where, b)),
		    "x found %d at %s", c.found, c.where);
	fsnw_close(w);
	umount2(b, MNT_DETACH);
	return 0;
}

/* fn in a mount namespace of its own, on a fresh directory: the child's
 * exit status (0 when every step held). */
static int in_mountns(int (*fn)(void *))
{
	char *dir = tmpdir_make();
	int status = run_in_mountns(fn, dir);

	tmpdir_remove(dir);
	return status;
}

START_TEST(tree_mounted_after)
{
	ck_assert_int_eq(in_mountns(mounted_after_child), 0);
}
END_TEST

START_TEST(tree_unmounted)
{
	ck_assert_int_eq(in_mountns(unmounted_child), 0);
}
END_TEST

START_TEST(tree_bind_mount)
{
	ck_assert_int_eq(in_mountns(bind_child), 0);
}
END_TEST

TEST_SUITE(tree_mounts)
{
	Suite *s = suite_create("tree_mounts");

	ADD_TEST(s, tree_mounted_after);
	ADD_TEST(s, tree_unmounted);
	ADD_TEST(s, tree_bind_mount);
	return s;
}
