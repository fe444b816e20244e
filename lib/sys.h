/* SPDX-License-Identifier: MIT */
/*
 * The library's system calls, in one place (as liburing's syscall.h keeps
 * its own): each wrapper counts the call in the counter its caller names, a
 * field of struct fsnw_stats (the handle's lock held), retries EINTR where
 * the call can simply be made again, and returns -errno on failure, never
 * -1 with errno. The wrappers call the C library's functions, not the raw
 * syscall: a program may interpose them (fsnw-readcost answers read(2)
 * from memory).
 *
 * Outside this header only the backends' mark calls (inotify_add_watch,
 * fanotify_mark, name_to_handle_at, ...) make syscalls, counted in their
 * struct sys_tally, and liburing's, counted in st.sys_io_uring by ring.c.
 * The futex calls of the handle's lock count nowhere: they are made to
 * take the lock that guards the counters.
 */
#ifndef FSNW_SYS_H
#define FSNW_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <unistd.h>

/* Bytes read, 0 at the end, or -errno; EINTR retried, each try counted. */
static inline ssize_t sys_read(uint64_t *count, int fd, void *buf, size_t len)
{
	ssize_t n;

	do {
		n = read(fd, buf, len);
		(*count)++;
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

static inline ssize_t sys_write(uint64_t *count, int fd, const void *buf, size_t len)
{
	ssize_t n;

	do {
		n = write(fd, buf, len);
		(*count)++;
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* A file opened O_CLOEXEC: its fd, or -errno. */
static inline int sys_open(uint64_t *count, const char *path, int flags)
{
	int fd;

	do {
		fd = open(path, flags | O_CLOEXEC);
		(*count)++;
	} while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

/* Never retried: Linux has let go of the fd even when close reports EINTR,
 * and a retry could close one another thread has just opened. */
static inline void sys_close(uint64_t *count, int fd)
{
	(void)close(fd);
	(*count)++;
}

/* The number of ready fds, 0 on timeout, or -errno. Not retried: a signal
 * ends a sleep, as fsnw_read(3) says (-EINTR). */
static inline int sys_poll(uint64_t *count, struct pollfd *p, nfds_t n, int timeout_ms)
{
	int ret = poll(p, n, timeout_ms);

	(*count)++;
	return ret < 0 ? -errno : ret;
}

static inline int sys_eventfd(uint64_t *count, unsigned int initval, int flags)
{
	int fd = eventfd(initval, flags | EFD_CLOEXEC);

	(*count)++;
	return fd < 0 ? -errno : fd;
}

static inline int sys_epoll_create(uint64_t *count)
{
	int fd = epoll_create1(EPOLL_CLOEXEC);

	(*count)++;
	return fd < 0 ? -errno : fd;
}

static inline int sys_epoll_add(uint64_t *count, int epfd, int fd, uint32_t events)
{
	struct epoll_event ev = { .events = events };

	(*count)++;
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static inline int sys_timerfd(uint64_t *count, int clock, int flags)
{
	int fd = timerfd_create(clock, flags | TFD_CLOEXEC);

	(*count)++;
	return fd < 0 ? -errno : fd;
}

static inline int sys_timerfd_set(uint64_t *count, int fd, int flags,
				  const struct itimerspec *its)
{
	(*count)++;
	return timerfd_settime(fd, flags, its, NULL) < 0 ? -errno : 0;
}

/* Sleep while *addr is val (or until a wake); the caller checks again. */
static inline void sys_futex_wait(atomic_int *addr, int val)
{
	(void)syscall(SYS_futex, addr, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static inline void sys_futex_wake_one(atomic_int *addr)
{
	(void)syscall(SYS_futex, addr, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

#endif
