/* SPDX-License-Identifier: MIT */
/*
 * The /proc name of one of our descriptors, for the calls that take a path
 * where the object is already open (inotify_add_watch has no descriptor
 * form; readlink names what a descriptor holds). It is "/proc/PID/fd/N",
 * PID as this /proc spells our process: the kernel then resolves one
 * symlink fewer on each call than through "/proc/self". PID is read from
 * /proc/self once a handle (a readlink, right in any pid namespace), and
 * again in a child after fork, whose descriptors are its own.
 */
#ifndef FSNW_PROCFD_H
#define FSNW_PROCFD_H

#include <stdint.h>

/* "/proc/" digits "/fd/" digits, NUL. */
#define PROCFD_MAX 48

struct procfd {
	char prefix[32];   /* "/proc/PID/fd/", or "/proc/self/fd/" */
	uint32_t len;      /* of prefix; 0: not read yet */
	unsigned forks;    /* procfd_forks() when prefix was read */
};

/*
 * fd's name into buf; returns buf. The first call of a handle, and the
 * first after a fork, read PID (one readlink, counted in *count).
 */
const char *procfd_path(struct procfd *pf, uint64_t *count, int fd, char buf[PROCFD_MAX]);

#endif
