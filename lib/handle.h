/* SPDX-License-Identifier: MIT */
/*
 * The watcher handle. Each part has one owner, the module that changes it;
 * the public entry points (fsnw.c, batch.c) take the lock and every other
 * function runs with it held, except where its header says otherwise.
 *
 *   fsnw.c, batch.c   the life cycle, the lock, the open flags
 *   engine.c          engine: the read buffer, drain state, readiness fds
 *   watches.c         watches: logical watches by wid
 *   kwatch.c          kwatches: kernel watches, links, idle cache
 *   tree.c            trees: tree work lists and the walk window
 *   queue.c           q: the event queue
 *   route.c           answers: the tree lane's answers by wd
 *   the backend       be_state and the marks behind kfd
 *   every module      st: the counters of what it does
 */
#ifndef FSNW_HANDLE_H
#define FSNW_HANDLE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "engine.h"
#include "fsnwatch.h"
#include "kwatch.h"
#include "list.h"
#include "lock.h"
#include "probes.h"
#include "queue.h"
#include "route.h"
#include "tree.h"
#include "watches.h"

/* The latency histograms of struct fsnw_stats (stats.h: stats_lat). */
enum lat_kind { LAT_ADD, LAT_REMOVE, LAT_KERNEL_MARK, LAT_KERNEL_UNMARK, LAT_KERNEL_READ, LAT_KINDS };

/*
 * The clock of the latency histograms (stats.c): TSC ticks at a ratio
 * checked about once a second against CLOCK_MONOTONIC, or that clock's ns.
 */
struct stats_clock {
	bool tsc;            /* ticks are TSC reads: set at open, then only read */
	uint64_t mult;       /* ns per tick, 32.32 (lock held, as all below) */
	uint64_t win_tsc;    /* the current check window began at this tick */
	uint64_t win_ns;     /* and at this CLOCK_MONOTONIC time */
	uint64_t win_mult;   /* the ratio the last window measured */
	uint64_t win_ticks;  /* a window's length in ticks: about a second */
};

struct fsnw {
	struct lock lock;       /* lock.h */
	const struct backend *be;
	void *be_state;         /* backend private */
	int kfd;                /* the kernel group fd */
	uint32_t open_flags;    /* FSNW_OPEN_* */
	struct engine engine;
	struct watches watches;
	struct kwatches kwatches;
	struct trees trees;
	struct queue *q;
	struct route_answers answers;
	struct fsnw_stats st;   /* counters; queue figures are folded in at snapshot */
	struct stats_clock clock;
	struct fsnw_histogram lat[LAT_KINDS];
};

/*
 * A handle with everything but its kernel side (no backend, no group fd),
 * as fsnw_open starts one; fsnw_close frees it. NULL on ENOMEM. The fuzzers
 * give it a model backend.
 */
struct fsnw *handle_alloc(const struct fsnw_options *o);

/* Why FSNW_OVERFLOW was raised other than by the queue itself. */
enum overflow_source {
	OVERFLOW_KERNEL = 1,    /* IN_Q_OVERFLOW / FAN_Q_OVERFLOW */
	OVERFLOW_UNWATCHED = 2, /* a tree could not follow a new directory */
	OVERFLOW_MOUNT = 3,     /* a mount appeared or went inside a tree */
	OVERFLOW_UNRESOLVED = 4, /* a fanotify tree could not resolve a directory */
};

/* Raise FSNW_OVERFLOW for a loss the queue did not see itself. */
static inline void handle_overflow(struct fsnw *w, enum overflow_source source)
{
	if (source == OVERFLOW_KERNEL)
		w->st.overflows_kernel++;
	else if (source == OVERFLOW_MOUNT)
		w->st.overflows_mount++;
	else if (source == OVERFLOW_UNRESOLVED)
		w->st.overflows_unresolved++;
	else
		w->st.overflows_unwatched++;
	queue_overflow(w->q);
	PROBE1(overflow, (int)source);
}

#endif
