/* SPDX-License-Identifier: MIT */
/*
 * Points where a test build lets a test act, so that a race between the
 * library and the filesystem happens on purpose: a walk about to read a
 * directory, a walk that has opened one (its watch not made yet), watched
 * one (not listed yet) or listed one, a fanotify batch about to resolve its
 * directories or check its merge, and a read of the kernel queue; and a
 * look at the fanotify queue that a test can make find it empty.
 * Only test builds (FSNW_TEST_HOOKS, tests/meson.build) have them; in the
 * shipped library TEST_POINT is nothing.
 */
#ifndef FSNW_TESTHOOK_H
#define FSNW_TESTHOOK_H

#include <stdbool.h>

enum test_point {
	TP_VISIT,   /* path: the directory a walk reads next */
	TP_OPENED,  /* path: the directory just opened */
	TP_WATCHED, /* path: the directory just opened and watched, not listed */
	TP_LISTED,  /* path: the directory just listed and closed */
	TP_RESOLVE, /* path: NULL; a fanotify batch is about to be resolved */
	TP_VERIFY,  /* path: NULL; fanotify's merge checks are about to look */
	TP_READ,    /* path: NULL; a read(2) of the kernel queue comes next */
};

#ifdef FSNW_TEST_HOOKS
typedef void (*test_hook_fn)(enum test_point p, const char *path, void *arg);
/* Call fn at every point (NULL: none). */
void test_hook_set(test_hook_fn fn, void *arg);
void test_hook_run(enum test_point p, const char *path);
#define TEST_POINT(p, path) test_hook_run((p), (path))
/*
 * The kernel queues a rename's events after it has moved the dentry, so a
 * path resolved in between is the new one while the queue still looks
 * empty. A test makes that window happen: the next n looks at the fanotify
 * queue (fantree_queue_ready) find it empty.
 */
void test_hook_hide_queue(unsigned n);
bool test_hook_queue_hidden(void);
#define TEST_QUEUE_HIDDEN() test_hook_queue_hidden()
/*
 * The kernel removes an entry before it queues the delete, and a fanotify
 * batch waits a few complete drains for such a delete. Where the delete
 * comes later still, the batch is placed without it: a test makes that
 * happen, the next n times a batch could wait for a delete it does not.
 */
void test_hook_skip_delete_waits(unsigned n);
bool test_hook_delete_wait_skipped(void);
#define TEST_DELETE_WAIT_SKIPPED() test_hook_delete_wait_skipped()
#else
#define TEST_POINT(p, path) ((void)0)
#define TEST_QUEUE_HIDDEN() false
#define TEST_DELETE_WAIT_SKIPPED() false
#endif

#endif
