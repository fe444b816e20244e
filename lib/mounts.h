/* SPDX-License-Identifier: MIT */
/*
 * The mount table, as far as trees need it: which mount points appeared or
 * went since the last look. inotify and fanotify say nothing when something
 * is mounted on a watched directory, and inotify's IN_UNMOUNT leaves the
 * directory underneath unwatched; /proc/self/mountinfo is pollable (POLLPRI
 * when the table changes), so trees follow it.
 *
 * Two opens of the file: poll_fd is for sleeping (fsnw_read's poll, the
 * epoll set of fsnw_get_fd), and check_fd is polled here alone. A poll of
 * mountinfo consumes the change it reports, and a caller's epoll set that
 * holds ours polls poll_fd on its own, so poll_fd cannot tell us anything
 * reliably; check_fd can.
 */
#ifndef FSNW_MOUNTS_H
#define FSNW_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mountinfo.h"

struct fsnw_stats;

struct mounts {
	int poll_fd;   /* -1 until mounts_open */
	int check_fd;
	bool stale;    /* the last reading failed: read again at the next check */
	struct mount_table tab; /* the last reading, sorted by mount id */
};

void mounts_init(struct mounts *m);
/* Open the table and take the first reading (syscalls counted in st); -errno. */
int mounts_open(struct mounts *m, struct fsnw_stats *st);
/* Close it (the closes counted in st). */
void mounts_close(struct mounts *m, struct fsnw_stats *st);

/* A mount that appeared (or went, appeared false). */
typedef void (*mount_fn)(void *arg, const struct mount_entry *m, bool appeared);

/*
 * If the table changed since the last call, read it and call fn for each
 * mount that appeared or went. Returns how many there were, or -errno when
 * the table could not be read (it is read again at the next call).
 */
int mounts_check(struct mounts *m, mount_fn fn, void *arg, struct fsnw_stats *st);

#endif
