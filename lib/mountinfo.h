/* SPDX-License-Identifier: MIT */
/*
 * /proc/self/mountinfo, parsed: the one reader of the mount table, for the
 * trees that follow mounts (mounts.c) and the fanotify trees that anchor
 * the filesystems mounted inside them (fantree.c).
 */
#ifndef FSNW_MOUNTINFO_H
#define FSNW_MOUNTINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* One mount. */
struct mount_entry {
	uint64_t id;      /* the mount's id: a point mounted again is a new mount */
	dev_t dev;        /* the device of its filesystem */
	const char *path; /* the mount point, unescaped, NUL-terminated */
	size_t len;
};

struct mount_table {
	struct mount_entry *e; /* in the file's order: the top of a stack last */
	size_t n;
	char *buf;             /* the text the paths point into */
};

/*
 * Read the table: from fd (from its start), or from a fresh open of
 * /proc/self/mountinfo when fd < 0. Returns 0 or -errno; *calls counts the
 * system calls made.
 */
int mountinfo_read(int fd, struct mount_table *t, uint64_t *calls);
void mountinfo_free(struct mount_table *t);

/* Is the path p (plen bytes) strictly below the directory dir? */
bool mountinfo_below(const char *p, size_t plen, const char *dir, size_t dlen);

#endif
