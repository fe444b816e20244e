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
/* In the runner, before any test: it removes at exit what failed tests left. */
void tmpdir_init(void);
void tmpdir_remove(char *dir);
/*
 * A tmpfs of the test's own, mounted in a private mount namespace (the
 * process unshares it), so that a fanotify filesystem mark hears nobody
 * else's files; falls back to tmpdir_make where that cannot be had.
 */
char *tmpfs_private(void);
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
 * Read events until none has come for quiet_ms (or max are held); returns
 * how many. The array is allocated and freed with evs_free.
 */
int collect(struct fsnw *w, struct ev **out, int max, int quiet_ms);
void evs_free(struct ev *evs);
/* Index of the first event from `from` on that matches, or -1. name NULL: any. */
int find_ev(const struct ev *evs, int n, int from, int wid, uint32_t mask, const char *name);
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

/* Number of open file descriptors of this process. */
int fd_count(void);
/* Of those, io_uring instances (the handles' readiness rings). */
int io_uring_fds(void);

/*
 * What a caller knows of a tree from its events, the way fsnw-tree keeps
 * it: creates and deletes, renames within the tree (a MOVED_FROM and its
 * MOVED_TO), a directory moved in listed from disk, a rescan on overflow.
 * Entries are "d rel/path" or "f rel/path", relative to the root. A test
 * that compares it with the disk asserts what a tree promises, whatever
 * events a backend uses to keep it.
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
	/* Directories moved in, as listed. With relist (a backend that does
	 * not read them, libfsnwatch(7) "Moves"), each is listed again at
	 * every later MOVED_TO that carries it: the first listing answered
	 * for when it was made, and a rename may have overtaken it. */
	bool relist;
	char **listed;
	int nlisted;
};
/* Start from what the tree holds now. */
void view_init(struct view *v, const char *root);
void view_apply(struct view *v, const struct ev *evs, int n);
/* Compare with the disk; prints and counts the differences. */
int view_diff(const struct view *v);
void view_free(struct view *v);

#endif
