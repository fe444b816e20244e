/* SPDX-License-Identifier: MIT */
/*
 * libinotifytools as a peer baseline, where it does the same job as the
 * library: recursive tree add and reading events. The library keeps one
 * global session; these calls wrap it so the rest of the bench does not
 * depend on it being present (without it every call fails with -EOPNOTSUPP).
 */
#ifndef FSNW_BENCH_ITOOLS_H
#define FSNW_BENCH_ITOOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether the baseline is built in; if not, why (one line). */
bool itools_available(char *why, size_t len);
/* Start a session (one inotify instance); -errno. */
int itools_init(void);
/* inotifytools_watch_recursively; -errno. */
int itools_watch_tree(const char *path, uint32_t mask);
/* inotifytools_watch_file; -errno. */
int itools_watch(const char *path, uint32_t mask);
long itools_num_watches(void);
/* The next queued event without waiting: 1 (mask, name set), 0 when none, -errno. */
int itools_next(uint32_t *mask, const char **name);
void itools_cleanup(void);

#endif
