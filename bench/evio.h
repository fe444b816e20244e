/* SPDX-License-Identifier: MIT */
/* Small helpers over raw inotify and the library that several scenarios use. */
#ifndef FSNW_BENCH_EVIO_H
#define FSNW_BENCH_EVIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/inotify.h>

#include "fsnwatch.h"

#define EVBUF_SIZE (64 * 1024)

/* read() of an inotify fd, EINTR retried: bytes, 0 when nothing is queued
 * (the fd is non-blocking), -errno on error. */
long raw_read(int fd, void *buf, size_t len);

/* Walk the records of one read. */
#define for_each_inotify_event(ev, buf, n)                                             \
	for (struct inotify_event *ev = (struct inotify_event *)(void *)(buf);            \
	     (char *)ev < (char *)(buf) + (n);                                              \
	     ev = (struct inotify_event *)(void *)((char *)ev + sizeof(*ev) + ev->len))

/* Read everything queued on a non-blocking inotify fd; counts what came:
 * IN_IGNORED records, IN_Q_OVERFLOW records and everything else. */
struct raw_drained {
	long ignored;
	long overflows;
	long other;
	int err; /* -errno of a failed read, 0 */
};
void raw_drain(int fd, struct raw_drained *d);

/* fsnw_open with the options spelled out; -errno. */
int lib_open(struct fsnw **w, uint32_t backend, uint32_t flags, uint32_t capacity,
	     uint32_t idle);
/* Every syscall the handle made, all kinds summed (fsnw_stats, exact): the one
 * place in the bench that adds the sys_* fields up. */
uint64_t lib_syscalls(const struct fsnw_stats *st);
int lib_stats(struct fsnw *w, struct fsnw_stats *st);
/* Whether the library's fanotify backend opens on this machine; why not in why. */
bool lib_fanotify_usable(char *why, size_t len);

#endif
