/* SPDX-License-Identifier: MIT */
/*
 * The mounts below a directory, from /proc/self/mountinfo: what a tree that
 * does not walk needs to know about the filesystems mounted inside it.
 */
#ifndef FSNW_MOUNTINFO_H
#define FSNW_MOUNTINFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One mount, as fn sees it: its mount point (unescaped) and device. */
struct mountinfo_entry {
	const char *path;
	size_t len;
	dev_t dev;
};

/*
 * Call fn for every mount point strictly below dir (an absolute path as
 * /proc shows it), in mount order, the topmost of a stack last. fn returns
 * 0 to go on, or -errno to stop with it. Returns 0 or -errno; *reads counts
 * the system calls made.
 */
int mountinfo_below(const char *dir, size_t len, int (*fn)(void *arg,
			const struct mountinfo_entry *m), void *arg, uint64_t *calls);

#endif
