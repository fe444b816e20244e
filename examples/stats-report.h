/* SPDX-License-Identifier: MIT */
/* The library's statistics on stderr: on demand, and every --stats-interval. */
#ifndef FSNW_EXAMPLES_STATS_REPORT_H
#define FSNW_EXAMPLES_STATS_REPORT_H

#include <stdio.h>

#include "fsnwatch.h"

/* fsnw_stats_json(3) of w in a string of its own (the caller frees it). Returns 0 or -errno. */
int stats_json(const struct fsnw *w, char **out);

/* Print fsnw_stats_json(3) of w as one line on f; prog names the tool in a failure. */
void stats_report(const struct fsnw *w, FILE *f, const char *prog);

/*
 * Parse a --stats-interval argument: seconds, fractions allowed, more than
 * 0 and at most a day. Returns 0, or -EINVAL.
 */
int stats_interval_parse(const char *arg, double *seconds);

/* A timerfd (close-on-exec, non-blocking) that expires every `seconds`, or -errno. */
int stats_timer_open(double seconds);

/* Take the expirations from the timer fd, so that poll waits for the next. */
void stats_timer_ack(int fd);

#endif
