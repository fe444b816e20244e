/* SPDX-License-Identifier: MIT */
/*
 * The library's system calls, in one place (as liburing's syscall.h keeps
 * its own): each wrapper counts the call in the counter its caller names,
 * a field of struct fsnw_stats (the handle's lock held) or of a mark
 * operation's struct sys_tally (backend.h), retries EINTR where the call
 * can simply be made again (each wrapper says), and returns -errno on
 * failure, never -1 with errno. The wrappers call the C library's
 * functions, not the raw syscall: a program may interpose them
 * (fsnw-readcost answers read(2) from memory). capget and futex, which
 * the C library does not wrap, go through syscall(2).
 *
 * Outside this header only these make syscalls: the backends' mark calls
 * (inotify_add_watch, inotify_rm_watch, fanotify_mark), counted in their
 * struct sys_tally; liburing's, counted in st.sys_io_uring by ring.c; and
 * the allocator's mmap, munmap and madvise (mem.c), which count nowhere,
 * as malloc's own do not. sys_yield and the futex calls of the handle's
 * lock count nowhere either: they are made without the lock that guards
 * the counters.
 */
#ifndef FSNW_SYS_H
#define FSNW_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <dirent.h>
#include <linux/capability.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/fanotify.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
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

/* openat(2) with O_CLOEXEC added: its fd, or -errno; EINTR retried, each try counted. */
static inline int sys_openat(uint64_t *count, int dirfd, const char *path, int flags)
{
	int fd;

	do {
		fd = openat(dirfd, path, flags | O_CLOEXEC);
		(*count)++;
	} while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

/* open_by_handle_at(2) with O_CLOEXEC added: its fd, or -errno; EINTR
 * retried, each try counted, as an open. */
static inline int sys_open_by_handle_at(uint64_t *count, int mntfd, struct file_handle *fh,
					int flags)
{
	int fd;

	do {
		fd = open_by_handle_at(mntfd, fh, flags | O_CLOEXEC);
		(*count)++;
	} while (fd < 0 && errno == EINTR);
	return fd < 0 ? -errno : fd;
}

/* A duplicate of fd (F_DUPFD_CLOEXEC), or -errno. Not retried: it never sleeps. */
static inline int sys_dup(uint64_t *count, int fd)
{
	int ret = fcntl(fd, F_DUPFD_CLOEXEC, 0);

	(*count)++;
	return ret < 0 ? -errno : ret;
}

/* The new offset, or -errno. Not retried: it never sleeps. */
static inline off_t sys_lseek(uint64_t *count, int fd, off_t off, int whence)
{
	off_t ret = lseek(fd, off, whence);

	(*count)++;
	return ret < 0 ? -errno : ret;
}

/*
 * The stat family: 0 or -errno. Not retried: every caller takes a failure,
 * whatever its errno, as an answer (the object is gone, or cannot be told),
 * and a local filesystem's stat does not sleep interruptibly.
 */
static inline int sys_fstat(uint64_t *count, int fd, struct stat *st)
{
	(*count)++;
	return fstat(fd, st) < 0 ? -errno : 0;
}

static inline int sys_fstatat(uint64_t *count, int dirfd, const char *path, struct stat *st,
			      int flags)
{
	(*count)++;
	return fstatat(dirfd, path, st, flags) < 0 ? -errno : 0;
}

static inline int sys_statx(uint64_t *count, int dirfd, const char *path, int flags,
			    unsigned int mask, struct statx *stx)
{
	(*count)++;
	return statx(dirfd, path, flags, mask, stx) < 0 ? -errno : 0;
}

static inline int sys_fstatfs(uint64_t *count, int fd, struct statfs *sfs)
{
	(*count)++;
	return fstatfs(fd, sfs) < 0 ? -errno : 0;
}

/* Bytes of directory entries, 0 at the end, or -errno. EINTR retried, each
 * try counted: a failed getdents64 has not moved the directory's offset. */
static inline ssize_t sys_getdents(uint64_t *count, int fd, void *buf, size_t len)
{
	ssize_t n;

	do {
		n = getdents64(fd, buf, len);
		(*count)++;
	} while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* The link's length (not NUL-terminated, truncated to len), or -errno. Not
 * retried: the callers read /proc's fd links, which never sleep. */
static inline ssize_t sys_readlink(uint64_t *count, const char *path, char *buf, size_t len)
{
	ssize_t n = readlink(path, buf, len);

	(*count)++;
	return n < 0 ? -errno : n;
}

/* 0 or -errno. Not retried: it never sleeps. */
static inline int sys_name_to_handle_at(uint64_t *count, int dirfd, const char *path,
					struct file_handle *fh, int *mnt_id, int flags)
{
	(*count)++;
	return name_to_handle_at(dirfd, path, fh, mnt_id, flags) < 0 ? -errno : 0;
}

/* The working directory in *out, from the C library's malloc (free(3) it):
 * 0 or -errno. Not retried: it never sleeps. */
static inline int sys_getcwd(uint64_t *count, char **out)
{
	*out = getcwd(NULL, 0);
	(*count)++;
	return *out ? 0 : -errno;
}

/* The group fds, close-on-exec: an fd or -errno. Not retried: they never sleep. */
static inline int sys_inotify_init(uint64_t *count, int flags)
{
	int fd = inotify_init1(flags | IN_CLOEXEC);

	(*count)++;
	return fd < 0 ? -errno : fd;
}

static inline int sys_fanotify_init(uint64_t *count, unsigned int flags, unsigned int f_flags)
{
	int fd = fanotify_init(flags | FAN_CLOEXEC, f_flags | O_CLOEXEC);

	(*count)++;
	return fd < 0 ? -errno : fd;
}

/* The calling thread's capabilities: 0 or -errno. glibc has no wrapper. */
static inline int sys_capget(uint64_t *count, struct __user_cap_header_struct *hdr,
			     struct __user_cap_data_struct *data)
{
	(*count)++;
	return syscall(SYS_capget, hdr, data) < 0 ? -errno : 0;
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

/* Let another thread run: a mark's caller waits for an unmark that another
 * thread makes without the lock. Counted nowhere, as the futex calls: it
 * is made without the lock that guards the counters. */
static inline void sys_yield(void)
{
	(void)sched_yield();
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
