/* SPDX-License-Identifier: MIT */
/*
 * Shared test scaffolding. A test file registers its suites with
 * TEST_SUITE(fn) and needs no central list; test-main.c runs whatever the
 * executable holds. Behaviour suites take the backend from --backend (or
 * FSNW_TEST_BACKEND), so one suite runs against inotify and fanotify alike.
 */
#ifndef FSNW_TEST_COMMON_H
#define FSNW_TEST_COMMON_H

#include <check.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fsnwatch.h"

struct test_suite_reg {
	const char *name;
	Suite *(*make)(void);
};

#define TEST_SUITE(fn)                                                                   \
	static Suite *fn(void);                                                          \
	static const struct test_suite_reg reg_##fn                                      \
		__attribute__((used, section("fsnw_test_suites"), aligned(sizeof(void *)))) = \
			{ #fn, fn };                                                     \
	static Suite *fn(void)

/* Convenience for the usual one-case suite shape. */
#define ADD_TEST(suite, fn)                                      \
	do {                                                     \
		TCase *tc_ = tcase_create(#fn);                  \
		tcase_set_timeout(tc_, 60);                      \
		tcase_add_test(tc_, fn);                         \
		suite_add_tcase((suite), tc_);                   \
	} while (0)

/* The backend behaviour suites run against (FSNW_BACKEND_*). */
extern uint32_t test_backend;

/* Open a handle on the test backend; fails the test on error. */
struct fsnw *test_open(uint32_t flags, uint32_t capacity, uint32_t idle);

/* A private scratch directory on tmpfs, removed by tmpdir_remove. */
char *tmpdir_make(void);
/*
 * In the runner, before any test: a /dev/shm of the runner's own, in a
 * mount namespace of its own (as root), so that runners in parallel do not
 * hear each other's files, not even through a fanotify filesystem mark;
 * and at exit, the removal of what failed tests left.
 */
void tmpdir_init(void);
void tmpdir_remove(char *dir);
/*
 * A tmpfs of the test's own, mounted in a private mount namespace (the
 * process unshares it), so that a fanotify filesystem mark hears nobody
 * else's files; falls back to tmpdir_make where that cannot be had.
 */
char *tmpfs_private(void);

/* Does the test run under valgrind (its preload is in the environment)? */
bool test_under_valgrind(void);
void tmpfs_private_remove(char *dir);

/* Small file helpers; they fail the test on error. Paths are dir + "/" + name. */
const char *pjoin(char *buf, const char *dir, const char *name);
void touch(const char *dir, const char *name);
void write_bytes(const char *dir, const char *name, const char *s);
void make_dir(const char *dir, const char *name);
/* mkdir -p root/rel (root exists). */
void make_dirs(const char *root, const char *rel);

/* A copy of an event, whose strings outlive the next fsnw_read. */
struct ev {
	int wid;
	uint32_t mask;
	uint32_t cookie;
	uint32_t count;
	char path[PATH_MAX];
	char name[256];
	bool has_name;
};

/*
 * Reading what a test's changes made: sync, don't sleep. Each of these
 * returns how many events it read into *out, an array freed with
 * evs_free, and leaves out the sentinels' events (see below) whatever
 * watch they came through.
 *
 * collect_sync(w, &evs, max, dir) makes a sentinel change after the test's
 * and reads until the sentinel's event arrives. A group's events come out
 * in the order the kernel queued them, and the library keeps that order, so
 * by then every event of a change made before the sentinel, by any thread or
 * process, has been read. The sentinel is a new file in dir, made with
 * mknod (one FSNW_CREATE: no open, no close), named SENTINEL_PREFIX, the
 * pid and a number; dir must be covered by a watch of w that asks for
 * FSNW_CREATE, a plain watch of dir or a tree that holds it. What the
 * kernel queued with the sentinel (its copies for other watches of dir) is
 * read after it, with a timeout of 0; the events returned are all those
 * read, up to that point. More than max events, or no sentinel within
 * SYNC_TIMEOUT_MS, fail the test. The file stays (removing it would make
 * an event of its own): tmpdir_remove takes it, and a struct view leaves
 * such names out. The handle counts the sentinel's event in its stats
 * like any other (events_read), and loses it as it loses others when its
 * kernel queue or a bounded library queue is full: a test that counts
 * events read, or that overflows a queue, uses collect_now.
 *
 * collect_now(w, &evs, max) reads what the handle has now: reads with a
 * timeout of 0 until one returns none (more than max events fail the
 * test). That is a sync point without a sentinel for changes the test made
 * itself: inotify and fanotify queue an event before the system call that
 * causes it returns (a close's too: the last fput runs before the return to
 * user space), so the kernel holds them all when it starts, and the read
 * that finds none has routed them all. fsnw_wake and a read with a timeout
 * would do the same, at the cost of eventfd calls that tests counting
 * syscalls see. Not for changes made by another thread or process, nor
 * for a change of the mount table: a read that does not sleep looks at
 * the mount table only after a read that found the kernel queue empty, so
 * a test of a mount reads until the event that mount change brings.
 *
 * collect(w, &evs, max, quiet_ms) reads until no event has come for
 * quiet_ms, or max are held. A quiet wait proves nothing and costs time:
 * only a test that asserts an absence no sentinel can prove uses it, and
 * says so where it does.
 */
#define SENTINEL_PREFIX "fsnw-sentinel-"
#define SYNC_TIMEOUT_MS 30000
int collect_sync(struct fsnw *w, struct ev **out, int max, const char *dir);
int collect_now(struct fsnw *w, struct ev **out, int max);
int collect(struct fsnw *w, struct ev **out, int max, int quiet_ms);
/* Is this event about a sentinel (a name that starts with SENTINEL_PREFIX)? */
bool is_sentinel(const struct fsnw_event *e);
void evs_free(struct ev *evs);
/* Index of the first event from `from` on that matches, or -1. name NULL: any. */
int find_ev(const struct ev *evs, int n, int from, int wid, uint32_t mask, const char *name);
/* Index of the first event of wid with all of mask in directory dir about
 * name (NULL: an event with no name), or -1. */
/* The kernel's max_queued_events for the backend (fanotify's or
 * inotify's), 16384 where the sysctl cannot be read. */
int kernel_queue_max(bool fanotify);
/* times pwrite+pread pairs on the file at path: a MODIFY and an ACCESS
 * each, which the kernel does not merge, to fill an inotify queue. */
void modify_access(const char *path, int times);
int find_ev_at(const struct ev *evs, int n, int wid, uint32_t mask, const char *dir,
	       const char *name);
/* How many events match. */
int count_ev(const struct ev *evs, int n, int wid, uint32_t mask, const char *name);
void dump_evs(const struct ev *evs, int n);

struct fsnw_stats stats_of(struct fsnw *w);

/*
 * Read what the kernel holds into the library's queue. fanotify merges an
 * unread event into an earlier one on the same object whatever the types
 * (inotify merges only identical neighbours), so a test that asserts the
 * order of different events on one object reads between its steps.
 */
void pump(struct fsnw *w);

/*
 * Wait until the thread tid of this process sleeps (its state in
 * /proc/self/task is S): a sync on a thread having gone to sleep in a call,
 * where the test knows it has no other place to sleep. Under valgrind,
 * whose threads sleep in turn, it may return before. Fails the test after
 * SYNC_TIMEOUT_MS.
 */
void thread_wait_asleep(pid_t tid);

/* Number of open file descriptors of this process. */
int fd_count(void);
/* Of those, io_uring instances (the handles' readiness rings). */
int io_uring_fds(void);

/*
 * What a caller knows of a tree from its events, applied the way
 * libfsnwatch(7) says a consumer does ("The tree event contract"): a create
 * or a move in makes a new entry (a directory empty; what it holds comes as
 * creates of its own), a delete or a move out removes one with what is below
 * it, a MOVED_FROM and the MOVED_TO of its cookie move it, the type is
 * FSNW_ISDIR's, and an overflow rescans. Entries are "d rel/path" or
 * "f rel/path", relative to the root. A test that compares it with the disk
 * asserts what a tree promises, whatever events a backend uses to keep it.
 * Sentinels (collect_sync) are in neither: their names are left out of
 * listings and events alike.
 */
struct view {
	char root[PATH_MAX];
	char **ents;
	int n, cap;
	char **moved;      /* the entries of the last MOVED_FROM, until its MOVED_TO */
	int nmoved;
	uint32_t cookie;
	char from[PATH_MAX];
	int rescans;
};
/* Start from what the tree holds now. */
void view_init(struct view *v, const char *root);
void view_apply(struct view *v, const struct ev *evs, int n);
/* Compare with the disk; prints and counts the differences. */
int view_diff(const struct view *v);
void view_free(struct view *v);

#endif
