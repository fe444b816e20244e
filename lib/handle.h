/* SPDX-License-Identifier: MIT */
/*
 * The watcher handle, shared by the modules that act on it. fsnw.c owns its
 * life cycle and the lock; every other module runs with the lock held.
 */
#ifndef FSNW_HANDLE_H
#define FSNW_HANDLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "fsnwatch.h"
#include "inodes.h"
#include "list.h"
#include "queue.h"
#include "watches.h"

struct fsnw {
	pthread_mutex_t lock;
	const struct backend *be;
	void *be_state;         /* backend private */
	int kfd;                /* the kernel group fd */
	int evfd;               /* eventfd: readable while events wait in the queue */
	int epfd;               /* what fsnw_get_fd returns (kfd and evfd), made on its first call */
	bool ev_ready;          /* evfd is signalled */
	uint32_t open_flags;    /* FSNW_OPEN_* */
	struct watches watches;
	struct inodes inodes;
	struct queue *q;
	struct fsnw_stats st;   /* counters; queue figures are folded in at snapshot */
	uint64_t clock_mult;    /* ns per TSC tick (32.32); 0: timing ticks are ns */
	unsigned char *rbuf;    /* kernel read buffer */
	size_t rbuf_len;
	int draining;           /* a drain is running: dispatch must not start another */
	struct list tree_work;  /* directories to watch once the current drain ends */
	struct list tree_retry; /* directories a tree failed to follow: tried after each drain */
	bool tree_rescan;       /* some tree directory must be read again for new subdirectories */
	int tree_busy;          /* a walk or the job loop runs: new jobs wait for it */
	int walk_open;          /* a walk window is open (see tree_walk_echo) */
	uint32_t walk_gen;      /* its generation, stamped on the directories it reads */
	/* Our own removes since the kernel queue was last emptied: inotify
	 * has their IN_IGNORED to read, fanotify may hold events for them. */
	uint32_t unread_ignored;
	int batch_depth;        /* inside fsnw_add_batch */
	bool batch_drained;     /* ... and the kernel was drained for it already */
	bool closing;           /* fsnw_close: closing the fd drops the marks, no syscalls */
	bool reconcile;         /* a kernel overflow was read: check which watches live */
};

/*
 * A handle with everything but its kernel side (no backend, no fds), as
 * fsnw_open starts one; fsnw_close frees it. NULL on ENOMEM. The fuzzers
 * give it a model backend.
 */
struct fsnw *handle_alloc(const struct fsnw_options *o);

/*
 * Read the kernel group fd and dispatch what it holds into the queue, then
 * watch the directories trees found meanwhile. The lock is held.
 * DRAIN_COMPLETE: keep reading until a read comes back short (everything
 * pending when the call began has been read); otherwise a bounded number.
 * DRAIN_TIMED: record each read in lat_kernel_read (fsnw_read, fsnw_pump).
 */
#define DRAIN_COMPLETE 0x1u
#define DRAIN_TIMED 0x2u
int handle_drain(struct fsnw *w, unsigned flags);

/* One non-blocking read of the group fd, counted: bytes, 0 when nothing is
 * pending, or -errno. For the backends' read op. */
ssize_t handle_read_group(struct fsnw *w, void *buf, size_t len);

/* The bodies of fsnw_add and fsnw_remove (lock held); batch calls them per item. */
int handle_add(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags);
int handle_remove(struct fsnw *w, int wid);
/* End of a locked entry point: keep the kernel queue and readiness in order. */
void handle_end_call(struct fsnw *w);

/* Detach a logical watch from the kernel, drop what it has queued, free it. */
void handle_remove_watch(struct fsnw *w, struct watch *lw, bool park);

/* Raise FSNW_OVERFLOW for a loss the queue did not see itself. */
enum overflow_source {
	OVERFLOW_KERNEL = 1,    /* IN_Q_OVERFLOW / FAN_Q_OVERFLOW */
	OVERFLOW_UNWATCHED = 2, /* a tree could not follow a new directory */
};
void handle_overflow(struct fsnw *w, enum overflow_source source);

/* Queue FSNW_IGNORED for lw and hold its wid until the caller reads it. */
void handle_watch_gone(struct fsnw *w, struct watch *lw);

#endif
