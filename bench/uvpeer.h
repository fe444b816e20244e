/* SPDX-License-Identifier: MIT */
/*
 * libuv as a peer baseline, where it does the same job as the library:
 * one uv_fs_event handle per watched path on one loop (libuv shares a
 * kernel watch among the handles on one inode and keeps a path per kernel
 * watch), started, stopped, and the loop run to read events. Handles are
 * allocated one by one as they are first started, as a program that
 * watches a tree allocates them, so the heap they take counts where they
 * are made. Without libuv built in every call fails with -EOPNOTSUPP.
 */
#ifndef FSNW_BENCH_UVPEER_H
#define FSNW_BENCH_UVPEER_H

#include <stdbool.h>
#include <stddef.h>

struct uvpeer;

/* One event: the handle's path, the entry's name (the handle's own base
 * name when the event is about it), and whether libuv calls it a change
 * (UV_CHANGE: modified, attributes) rather than a rename (created,
 * deleted, moved). */
typedef void (*uvpeer_fn)(void *arg, const char *dir, const char *name, bool change);

/* Whether the baseline is built in; if not, why (one line). */
bool uvpeer_available(char *why, size_t len);
/* A loop whose events go to fn(arg, ...) (NULL: nowhere); -errno. */
int uvpeer_open(struct uvpeer **u, uvpeer_fn fn, void *arg);
/* uv_fs_event_start on handle i (made on its first start; i at most one
 * past the last made); -errno. */
int uvpeer_start(struct uvpeer *u, size_t i, const char *path);
/* uv_fs_event_stop on handle i; -errno. */
int uvpeer_stop(struct uvpeer *u, size_t i);
/* Run the loop: until uvpeer_halt is called from fn (wait), or once over
 * what is ready without waiting; -errno. */
int uvpeer_run(struct uvpeer *u, bool wait);
void uvpeer_halt(struct uvpeer *u);
/* Loop iterations so far (each a wakeup of the loop's poll). */
long uvpeer_wakeups(const struct uvpeer *u);
/* Close every handle and the loop, free everything; NULL is fine. */
void uvpeer_close(struct uvpeer *u);

#endif
