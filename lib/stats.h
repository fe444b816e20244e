/* SPDX-License-Identifier: MIT */
/* Counters and latency histograms of a handle; see struct fsnw_stats. */
#ifndef FSNW_STATS_H
#define FSNW_STATS_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "compiler.h"
#include "handle.h"

static inline uint64_t stats_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Timing costs a clock read at each end of every timed operation, and an
 * add or remove is short beside two of them. Where the TSC runs at a
 * constant rate and the kernel keeps time with it (stats_clock_init), we
 * read the TSC: one instruction, where the vDSO's clock reads the TSC and
 * scales it, and after a syscall must find its code and data pages again.
 * Ticks are converted with a ratio measured at open and checked against
 * CLOCK_MONOTONIC about once a second (stats_clock_due). Elsewhere ticks
 * are CLOCK_MONOTONIC nanoseconds. It is kept because the two clock reads
 * of a timed add otherwise cost a fair share of the add.
 */
static inline uint64_t stats_ticks(const struct fsnw *w)
{
#if defined(__x86_64__)
	if (w->clock.tsc)
		return __rdtsc();
#endif
	return stats_now_ns();
}

/* Ticks to ns. A TSC difference below zero (a thread that moved, during
 * the call, to a CPU whose TSC lags a little) counts as 0. */
static inline uint64_t stats_ticks_to_ns(const struct fsnw *w, uint64_t ticks)
{
	if (!w->clock.tsc)
		return ticks;
	if ((int64_t)ticks < 0)
		return 0;
	return (uint64_t)(((unsigned __int128)ticks * w->clock.mult) >> 32);
}

/* Set up the handle's clock (fsnw_open). */
void stats_clock_init(struct fsnw *w);

/*
 * One check window of the TSC's rate ends at these readings: the window's
 * own ratio is adopted when it agrees with the window before it (so one
 * window spoilt by a jump of the TSC, as a VM restored elsewhere makes, is
 * never adopted, and a real change of rate is, a window later). Separate
 * from the handle for the tests.
 */
void stats_clock_window(struct stats_clock *c, uint64_t tsc, uint64_t ns);
FSNW_COLD void stats_clock_check(struct fsnw *w, uint64_t tsc);

/* A tick read at the end of a timed operation: time for a check? (lock held) */
static inline void stats_clock_due(struct fsnw *w, uint64_t t)
{
	if (w->clock.tsc && unlikely(t - w->clock.win_tsc > w->clock.win_ticks))
		stats_clock_check(w, t);
}

/* A start time for a timed operation, or 0 when timing is off. */
static inline uint64_t stats_start(const struct fsnw *w)
{
	return (w->open_flags & FSNW_OPEN_NO_STATS) ? 0 : stats_ticks(w);
}

void stats_hist_add(struct fsnw_histogram *h, uint64_t ns);

/* The histogram of k (lock held). */
static inline struct fsnw_histogram *stats_lat(struct fsnw *w, enum lat_kind k)
{
	return &w->lat[k];
}

/* Record the time since t0 (from stats_start) as a k; returns the end tick
 * (0 when timing is off), so another histogram can end at the same read. */
static inline uint64_t stats_end(struct fsnw *w, enum lat_kind k, uint64_t t0)
{
	uint64_t t1;

	if (!t0)
		return 0;
	t1 = stats_ticks(w);
	stats_clock_due(w, t1);
	stats_hist_add(stats_lat(w, k), stats_ticks_to_ns(w, t1 - t0));
	return t1;
}

/* Record t1 - t0 as a k, both ticks read already. */
static inline void stats_end_at(struct fsnw *w, enum lat_kind k, uint64_t t0, uint64_t t1)
{
	if (t0 && t1) {
		stats_clock_due(w, t1);
		stats_hist_add(stats_lat(w, k), stats_ticks_to_ns(w, t1 - t0));
	}
}

/* Add what a mark operation made (lock held). */
static inline void sys_tally_fold(struct fsnw *w, const struct sys_tally *t)
{
	w->st.sys_inotify_add_watch += t->inotify_add_watch;
	w->st.sys_inotify_rm_watch += t->inotify_rm_watch;
	w->st.sys_fanotify_mark += t->fanotify_mark;
	w->st.sys_name_to_handle_at += t->name_to_handle_at;
	w->st.sys_open_by_handle_at += t->open_by_handle_at;
	w->st.sys_other += t->other;
}

/* Fill a full snapshot (lock held). */
void stats_snapshot(const struct fsnw *w, struct fsnw_stats *out);
/* Write a snapshot as JSON with snprintf rules. */
int stats_format_json(const struct fsnw_stats *st, char *buf, size_t len);

#endif
