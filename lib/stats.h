/* SPDX-License-Identifier: MIT */
/* Counters and latency histograms of a handle; see struct fsnw_stats. */
#ifndef FSNW_STATS_H
#define FSNW_STATS_H

#include <stdint.h>
#include <time.h>

#include "handle.h"

static inline uint64_t stats_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A start time for a timed operation, or 0 when timing is off. */
static inline uint64_t stats_start(const struct fsnw *w)
{
	return (w->open_flags & FSNW_OPEN_NO_STATS) ? 0 : stats_now_ns();
}

void stats_hist_add(struct fsnw_histogram *h, uint64_t ns);

/* Record the time since t0 (from stats_start) into h. */
static inline void stats_end(struct fsnw_histogram *h, uint64_t t0)
{
	if (t0)
		stats_hist_add(h, stats_now_ns() - t0);
}

/* Fill a full snapshot (lock held). */
void stats_snapshot(const struct fsnw *w, struct fsnw_stats *out);
/* Write a snapshot as JSON with snprintf rules. */
int stats_format_json(const struct fsnw_stats *st, char *buf, size_t len);

#endif
