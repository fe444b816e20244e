/* SPDX-License-Identifier: MIT */
/*
 * Helpers of the hardening suites: what the kernel really holds for a handle,
 * how much heap the process holds, and children run in their own user, mount
 * and fd world so that limits and mounts can be played with without touching
 * the machine.
 */
#ifndef FSNW_HARDENING_H
#define FSNW_HARDENING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fsnwatch.h"

/* Marks the kernel holds for the handle's group, from /proc/self/fdinfo. */
int kernel_marks(const struct fsnw *w);

/* Bytes of heap in use (glibc mallinfo2), or 0 where it cannot be known
 * (sanitizer or valgrind allocators): leak checks then rest with them. */
size_t heap_in_use(void);

/* Running under valgrind, or under AddressSanitizer: heap and RSS figures
 * are theirs, not glibc's. */
bool slow_runtime(void);
/* Running under valgrind (some fifty times slower). */
bool on_valgrind(void);

/*
 * Checks inside a forked child cannot use Check's assertions (the child is
 * not the one Check waits for): CHILD_CHECK prints and exits 1.
 */
#define CHILD_CHECK(cond, ...)                                                          \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
				#cond);                                                 \
			fprintf(stderr, __VA_ARGS__);                                   \
			fprintf(stderr, "\n");                                          \
			exit(1);                                                        \
		}                                                                       \
	} while (0)

/* What a child gets before its body runs. */
#define CHILD_USERNS   0x1u /* a new user namespace, root mapped to root */
#define CHILD_MOUNTNS  0x2u /* and a new mount namespace (private tmpfs mounts) */

struct child_limits {
	int max_watches;   /* /proc/sys/user/max_inotify_watches; 0: leave */
	int max_instances; /* /proc/sys/user/max_inotify_instances; 0: leave */
};

/*
 * Run fn in a forked child set up as flags and limits say; returns its exit
 * status (0 passed, 77 skipped, other failed). A child that cannot get what
 * it needs (no user namespaces here) exits 77.
 */
int run_child(unsigned flags, const struct child_limits *lim, int (*fn)(void *), void *arg);

/* Is unshare(CLONE_NEWUSER) possible here (tried in a throwaway child)? */
bool userns_available(void);

/* Helpers for children; they exit through CHILD_CHECK on failure. */
struct fsnw *child_open(uint32_t idle);          /* on the test backend */
struct fsnw_stats child_stats(struct fsnw *w);
void child_touch(const char *dir, const char *name);
void child_mkdir(const char *dir, const char *name);

#endif
