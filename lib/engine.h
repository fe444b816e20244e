/* SPDX-License-Identifier: MIT */
/*
 * The engine owns the one read(2) of the kernel group fd and everything
 * about when it happens: the drain policy, the kernel overflow that makes
 * it reconcile the table, the settling of pending links, the tree work
 * that follows a drain, and readiness (the eventfd that is readable while
 * events wait in the queue, and the epoll fd fsnw_get_fd returns). Every
 * function runs with the handle's lock held except engine_read.
 *
 *   read(2) -> backend decode -> route_event -> kwatch / watches / tree / queue
 */
#ifndef FSNW_ENGINE_H
#define FSNW_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fsnw;
struct fsnw_event;

/* What outlives one drain; a drain's own state is on its stack (engine.c). */
struct engine {
	unsigned char *rbuf;   /* kernel read buffer */
	size_t rbuf_len;
	/* A direct read hands out names in the buffer it began routing from
	 * (lent) until the next fsnw_read; reads meanwhile go to the spare
	 * buffer, made on the first direct read, whose names are copied. */
	unsigned char *spare;
	unsigned char *lent;
	/* Records read but not yet routed, rbuf[rpos, rlen): a direct read stops
	 * when the caller's array is full and leaves the rest for the next read
	 * (or drain), as if still in the kernel queue. */
	size_t rpos, rlen;
	bool more;             /* the last read filled the buffer: the kernel may hold more */
	bool kernel_empty;     /* the last read came back short: the kernel queue was empty */
	bool draining;         /* a drain runs; nothing below the engine starts one */
	bool mounts_due;       /* a reader's poll saw the trees' mount table signal */
	/* eventfd: readable while events wait in the queue, kept so only while
	 * someone can see it (epfd exists, or a reader sleeps: sleepers). */
	int evfd;
	int epfd;              /* what fsnw_get_fd returns (kfd and evfd), made on its first call */
	bool ev_ready;         /* evfd is signalled (its real state, kept up or not) */
	unsigned sleepers;     /* fsnw_read calls asleep in poll on evfd */
	struct ring *ring;     /* the readiness ring (ring.c), or NULL */
	bool wake;             /* fsnw_wake: the next fsnw_read returns, events or not */
	/* Wakes a sleeping reader when the trees' next retry is due (made
	 * the first time one waits), and when it is set to fire. */
	int timerfd;
	uint64_t timer_due;
	bool timer_in_ep;      /* timerfd is in epfd */
	bool mounts_in_ep;     /* the trees' mount table fd is in epfd */
	/* Tests only: a model kernel in place of read(2) on the group fd. */
	ssize_t (*sys_read)(struct fsnw *w, void *buf, size_t len);
};

/* The read buffer (handle_alloc); -ENOMEM. */
int engine_init(struct fsnw *w);
/* The eventfd (fsnw_open, once the backend is up); -errno. */
int engine_open(struct fsnw *w);
/* Close the fds and free the buffer. */
void engine_fini(struct fsnw *w);

/*
 * Read the kernel group fd and route what it holds into the queue; after a
 * complete drain, settle pending links and do the trees' work.
 * DRAIN_COMPLETE: keep reading until a read comes back short (everything
 * pending when the call began has been read); otherwise a bounded number.
 * DRAIN_TIMED: record each read in lat_kernel_read.
 * Returns the number of reads, or -errno from read(2).
 */
#define DRAIN_COMPLETE 0x1u
#define DRAIN_TIMED 0x2u
int engine_drain(struct fsnw *w, unsigned flags);

/* Settle pending links: a complete drain if any wait (an add's last step). */
void engine_settle(struct fsnw *w);

/*
 * fsnw_read (arguments checked): takes the lock itself and drops it to
 * sleep. Each pass releases what the last read lent, follows mount
 * changes, drains (bounded) and pops up to max events; when nothing waits
 * in the queue the drain routes straight into evs (a direct read) and
 * stops reading once they are full. A pass that finds nothing sleeps in
 * poll(2) on the group fd, the eventfd, the trees' retry timer and mount
 * table, unless timeout_ms or FSNW_OPEN_NONBLOCK says not to. The events,
 * 0 (timeout, fsnw_wake) or -errno.
 */
int engine_read(struct fsnw *w, struct fsnw_event *evs, size_t max, int timeout_ms);

/* fsnw_wake: make the sleeping (or next) fsnw_read return; -errno. */
int engine_wake(struct fsnw *w);

/* End of a locked entry point: keep the kernel queue and readiness in order. */
void engine_end_call(struct fsnw *w);

/* The fd fsnw_get_fd returns, made on the first call; -errno. */
int engine_get_fd(struct fsnw *w);

#endif
