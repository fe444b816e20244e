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
/* inotifytools_remove_watch_by_filename (a directory's name ends in '/': it
 * keeps them so, and a name it does not know it takes for removed); -errno. */
int itools_remove(const char *path);
long itools_num_watches(void);
/* The next queued event: 1 (mask, name set), 0 when none, -errno. Only when one
 * is queued: libinotifytools 3.22 waits for the next event even with a timeout
 * of 0, for as long as it takes. */
int itools_next(uint32_t *mask, const char **name);
/* The next event, waiting for it as long as it takes, with the path of its
 * watch (inotifytools_filename_from_wd): 1, or -errno. */
int itools_wait(uint32_t *mask, const char **name, const char **dir);
void itools_cleanup(void);

#endif
