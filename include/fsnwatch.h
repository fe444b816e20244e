/* SPDX-License-Identifier: MIT */
/*
 * libfsnwatch - many cheap logical watches over inotify and fanotify.
 *
 * Every function that can fail returns >= 0 on success and -errno on
 * failure; it never touches out-parameters on failure and never reports
 * through errno (fsnw_close, fsnw_histogram_quantile and fsnw_version
 * cannot fail).
 * A handle may be used from several threads at once. The reference is in
 * the man pages: libfsnwatch(7) and one page per function.
 *
 * This header compiles as C89 and as C++.
 */
#ifndef FSNWATCH_H
#define FSNWATCH_H

#include <stddef.h>
#include <stdint.h>

#include "fsnwatch-version.h" /* FSNW_VERSION_MAJOR, _MINOR, _PATCH, _STRING */

#ifdef __cplusplus
extern "C" {
#endif

struct fsnw; /* an opaque watcher handle */

/* Backends (fsnw_options.backend, fsnw_get_backend). */
#define FSNW_BACKEND_AUTO     0 /* fanotify for FSNW_OPEN_BIG_TREES where permitted, else inotify */
#define FSNW_BACKEND_INOTIFY  1
#define FSNW_BACKEND_FANOTIFY 2

/* fsnw_options.flags */
#define FSNW_OPEN_NONBLOCK  0x0001u /* fsnw_read never sleeps; -EAGAIN when nothing is ready */
#define FSNW_OPEN_NO_MERGE  0x0002u /* queue every event; never coalesce repeats */
#define FSNW_OPEN_NO_STATS  0x0004u /* skip latency timing (counters are always kept) */
#define FSNW_OPEN_BIG_TREES 0x0008u /* with AUTO: fanotify filesystem marks for trees where permitted */
#define FSNW_OPEN_NO_RING   0x0010u /* no io_uring readiness ring: adds read the group fd instead */

#define FSNW_QUEUE_DEFAULT   16384u      /* queue_capacity 0 means this */
#define FSNW_QUEUE_UNLIMITED 0xffffffffu /* queue_capacity: no bound */

struct fsnw_options {
	uint32_t size;           /* sizeof(struct fsnw_options), for ABI growth */
	uint32_t backend;        /* FSNW_BACKEND_* */
	uint32_t flags;          /* FSNW_OPEN_* */
	uint32_t queue_capacity; /* events; 0 = FSNW_QUEUE_DEFAULT */
	uint32_t idle_watches;   /* kernel watches kept parked for reuse; 0 = remove at once */
	uint32_t tree_cache;     /* fanotify trees: directories whose place is cached; 0 = 16384 */
};

/* Event and watch mask bits: the values of the IN_* bits of <sys/inotify.h>. */
#define FSNW_ACCESS        0x00000001u /* file read */
#define FSNW_MODIFY        0x00000002u /* file written */
#define FSNW_ATTRIB        0x00000004u /* metadata changed */
#define FSNW_CLOSE_WRITE   0x00000008u /* writable file closed */
#define FSNW_CLOSE_NOWRITE 0x00000010u /* read-only file closed */
#define FSNW_OPEN          0x00000020u /* file opened */
#define FSNW_MOVED_FROM    0x00000040u /* entry moved out of a directory */
#define FSNW_MOVED_TO      0x00000080u /* entry moved into a directory */
#define FSNW_CREATE        0x00000100u /* entry created */
#define FSNW_DELETE        0x00000200u /* entry deleted */
#define FSNW_DELETE_SELF   0x00000400u /* the watched object was deleted */
#define FSNW_MOVE_SELF     0x00000800u /* the watched object was moved */
#define FSNW_CLOSE         (FSNW_CLOSE_WRITE | FSNW_CLOSE_NOWRITE)
#define FSNW_MOVE          (FSNW_MOVED_FROM | FSNW_MOVED_TO)
#define FSNW_ALL_EVENTS    0x00000fffu

/* In events only. */
#define FSNW_UNMOUNT   0x00002000u /* the filesystem of the watched object was unmounted */
#define FSNW_OVERFLOW  0x00004000u /* events were lost (kernel or user queue): rescan */
#define FSNW_IGNORED   0x00008000u /* the watch is gone and its wid is released */
#define FSNW_SYNTHETIC 0x00100000u /* made by the library (tree catch-up), not read from the kernel */
#define FSNW_ISDIR     0x40000000u /* the subject of the event is a directory */

/* Watch flags (fsnw_add flags). The first four have the values of the IN_* flags
 * and are also accepted inside the mask, so an inotify mask passes unchanged. */
#define FSNW_WATCH_ONLYDIR     0x01000000u /* fail with -ENOTDIR unless a directory */
#define FSNW_WATCH_DONT_FOLLOW 0x02000000u /* do not follow a final symlink */
#define FSNW_WATCH_EXCL_UNLINK 0x04000000u /* no events from unlinked children */
#define FSNW_WATCH_ONESHOT     0x80000000u /* remove the watch after its first event */
#define FSNW_WATCH_TREE        0x00010000u /* the directory and every directory below it */
#define FSNW_WATCH_ONE_FS      0x00020000u /* with TREE: do not cross into other filesystems */

/* fsnw_add_batch batch_flags */
#define FSNW_BATCH_ATOMIC 0x0001u /* all items or none: a failure rolls every item back */

/* The version of the library loaded, "MAJOR.MINOR.PATCH" (since 0.4). */
const char *fsnw_version(void);

/* Open a watcher. opts may be NULL (inotify or fanotify as AUTO picks, defaults). */
int fsnw_open(struct fsnw **ret, const struct fsnw_options *opts);
/* Remove every watch, release every fd and byte. NULL is fine. */
void fsnw_close(struct fsnw *w);
/* A pollable fd, readable when fsnw_read has something to return (made on the
 * first call, which may fail with -EMFILE or -ENOMEM). */
int fsnw_get_fd(const struct fsnw *w);
/* The backend in use: FSNW_BACKEND_INOTIFY or FSNW_BACKEND_FANOTIFY. */
int fsnw_get_backend(const struct fsnw *w);

/* Add a logical watch; returns its wid (> 0). */
int fsnw_add(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags);
/* Remove a logical watch; after it returns, no event for wid is read. */
int fsnw_remove(struct fsnw *w, int wid);

struct fsnw_batch_item {
	const char *path;
	uint32_t mask;
	uint32_t flags;
	int result; /* out: wid or -errno */
};
/* Add n watches under one lock; returns how many succeeded. */
int fsnw_add_batch(struct fsnw *w, struct fsnw_batch_item *items, size_t n,
		   uint32_t batch_flags);
/* Remove n watches; results (may be NULL) gets 0 or -errno each; returns how many succeeded. */
int fsnw_remove_batch(struct fsnw *w, const int *wids, size_t n, int *results);
/* Allocate now what n more watches on new objects need, but their path strings,
 * so that those adds call no malloc (since 0.3). */
int fsnw_reserve(struct fsnw *w, size_t n);

struct fsnw_event {
	int wid;            /* logical watch; 0 for FSNW_OVERFLOW */
	uint32_t mask;      /* FSNW_* bits */
	uint32_t cookie;    /* pairs FSNW_MOVED_FROM with FSNW_MOVED_TO; 0 otherwise */
	uint32_t count;     /* kernel events merged into this one, >= 1 */
	const char *path;   /* the watched path (tree watch: the directory of the event) */
	const char *name;   /* entry name inside that directory, or NULL */
};
/* Read up to max events; 0 on timeout (-1 waits forever) or after fsnw_wake.
 * Strings stay valid until the next fsnw_read on the handle, from any thread. */
int fsnw_read(struct fsnw *w, struct fsnw_event *evs, size_t max, int timeout_ms);
/* Make the fsnw_read sleeping on the handle (or else the next one) return at
 * once, with the events it has or 0; safe from any thread (since 0.2). */
int fsnw_wake(struct fsnw *w);

/* Pull pending kernel events into the queue without returning any (keeps the
 * kernel queue from overflowing behind a busy reader); returns the queue depth. */
int fsnw_pump(struct fsnw *w);

/* Latency histogram: bucket i counts samples in [2^i, 2^(i+1)) ns (bucket 0: [0, 2)). */
#define FSNW_HIST_BUCKETS 40
struct fsnw_histogram {
	uint64_t count;
	uint64_t sum_ns;
	uint64_t max_ns;
	uint64_t buckets[FSNW_HIST_BUCKETS];
};
/* An upper bound, in ns, on the q-quantile (0 <= q <= 1) of h; 0 when h is empty. */
uint64_t fsnw_histogram_quantile(const struct fsnw_histogram *h, double q);

struct fsnw_stats {
	uint32_t size;    /* set by the caller: sizeof(struct fsnw_stats) */
	uint32_t backend; /* FSNW_BACKEND_* in use */

	/* Watches, now. */
	uint64_t logical_watches;  /* wids alive */
	uint64_t kernel_watches;   /* objects with a kernel watch (inotify wd, fanotify mark, tree
				    * directory under a fanotify filesystem mark), parked included */
	uint64_t parked_watches;   /* kernel watches in the idle cache */

	/* Watch operations since open. */
	uint64_t add_calls;        /* logical watches asked for (batch items included) */
	uint64_t remove_calls;     /* logical watches removed by the caller */
	uint64_t dedup_hits;       /* adds that shared an existing active kernel watch */
	uint64_t idle_parks;       /* kernel watches parked instead of removed */
	uint64_t idle_revives;     /* adds that revived a parked kernel watch */
	uint64_t idle_evictions;   /* parked watches removed to make room */
	uint64_t kernel_drops;     /* kernel watches the kernel dropped (delete, unmount) */

	/* Syscalls the library made, by kind. */
	uint64_t sys_inotify_init;
	uint64_t sys_inotify_add_watch;
	uint64_t sys_inotify_rm_watch;
	uint64_t sys_fanotify_init;
	uint64_t sys_fanotify_mark;
	uint64_t sys_name_to_handle_at;
	uint64_t sys_open_by_handle_at;
	uint64_t sys_read;         /* reads of the kernel group fd */
	uint64_t sys_poll;         /* sleeps in fsnw_read */
	uint64_t sys_eventfd;      /* eventfd reads and writes (readiness of queued events) */
	uint64_t sys_walk;         /* openat, getdents64, fstatat and close of tree walks */
	uint64_t sys_other;        /* everything else (epoll setup, readlink, ...) */

	/* Events. */
	uint64_t events_read;      /* kernel events decoded */
	uint64_t events_queued;    /* events that took a queue slot */
	uint64_t events_delivered; /* events handed to the caller */
	uint64_t events_merged;    /* events folded into an unread one (count grew) */
	uint64_t events_synthetic; /* events the library made (tree catch-up) */
	uint64_t dropped_removed;  /* for a wid removed while they waited */
	uint64_t dropped_parked;   /* for a parked kernel watch */
	uint64_t dropped_queue_full; /* no slot left: covered by FSNW_OVERFLOW */
	uint64_t dropped_stale;    /* for a kernel watch already gone (late IN_IGNORED and such) */
	uint64_t dropped_walk;     /* echoes of the library's own directory reads in tree walks */
	uint64_t overflows_kernel; /* IN_Q_OVERFLOW / FAN_Q_OVERFLOW read */
	uint64_t overflows_queue;  /* FSNW_OVERFLOW raised by the user-space queue */
	uint64_t overflows_unwatched; /* FSNW_OVERFLOW raised: a tree could not follow a new directory */
	uint64_t queue_depth;      /* events waiting now */
	uint64_t queue_high_water; /* most events ever waiting */

	/* Latency (ns). Not collected with FSNW_OPEN_NO_STATS. */
	struct fsnw_histogram lat_add;         /* fsnw_add and each batch item */
	struct fsnw_histogram lat_remove;      /* fsnw_remove and each batch item */
	struct fsnw_histogram lat_kernel_mark; /* inotify_add_watch / fanotify_mark add */
	struct fsnw_histogram lat_kernel_unmark; /* inotify_rm_watch / fanotify_mark remove */
	struct fsnw_histogram lat_kernel_read; /* each read of the kernel group fd */

	/* Since 0.2. Settling an add onto an existing kernel watch: making sure
	 * no event from before it waits in the kernel queue. */
	uint64_t ring_active;      /* 1: the io_uring readiness ring settles adds; 0: reads do */
	uint64_t sys_io_uring;     /* io_uring_setup, its mmaps, io_uring_enter (arming) */
	uint64_t settles_ring;     /* settled by a look at the ring, without a syscall */
	uint64_t settles_read;     /* settled by reading the kernel queue to its end */

	/* Since 0.2: trees. */
	uint64_t tree_retries;     /* walks run again after failing for want of resources */
	uint64_t overflows_mount;  /* FSNW_OVERFLOW raised: a mount appeared or went inside a tree */

	/* Since 0.2: trees on fanotify, directories resolved from their file handles. */
	uint64_t dropped_outside;      /* filesystem-mark events outside every tree */
	uint64_t tree_dirs_cached;     /* directories whose place is cached now */
	uint64_t tree_cache_evictions; /* cached directories evicted for room (resolved again when met) */
	uint64_t overflows_unresolved; /* FSNW_OVERFLOW raised: a directory could not be resolved */

	/* Since 0.3. */
	uint64_t timing_tsc;       /* 1: latencies are timed with the TSC; 0: CLOCK_MONOTONIC
				    * (or timing is off) */

	/* Since 0.4. */
	uint64_t syscalls;         /* every syscall counted above: the sys_* fields summed */
	uint64_t mem_mapped;       /* bytes of the handle's record slabs, which the library
				    * maps itself (malloc's statistics do not see them) */
};

/* Copy a consistent snapshot; fills at most st->size bytes and sets st->size
 * to what it filled. */
int fsnw_get_stats(const struct fsnw *w, struct fsnw_stats *st);
/* Write the stats as JSON with snprintf rules; returns the length needed. */
int fsnw_stats_json(const struct fsnw *w, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* FSNWATCH_H */
