/* SPDX-License-Identifier: MIT */
/*
 * The results of a run: one row per measured round and metric (kept, and
 * appended to --csv), failed checks, skipped variants, medians, the tables
 * on stdout, charts for --svg, and progress on stderr while a scenario runs.
 */
#ifndef FSNW_BENCH_RESULTS_H
#define FSNW_BENCH_RESULTS_H

#include <stdbool.h>

#include "summary.h"

struct bench;
struct chart;

struct skip {
	char scenario[24];
	char variant[40];
	char reason[320];
};

/* Open --csv (the header goes into a new file); -errno. */
int results_open(struct bench *b);
/* Close the CSV and write the environment record and --svg; free the rows. */
void results_close(struct bench *b);

/* scale: what the workers column counts; "workers" and "clients" count busy
 * threads, so a row with more of them than CPUs is labelled oversubscribed. */
void bench_begin(struct bench *b, const char *scenario, const char *scale);
/* Busy threads beside the scale's in the rows recorded from now on (a reader,
 * a measuring thread); they count toward oversubscription. */
void bench_busy(struct bench *b, int extra);
/* Whether a row of this scale would be labelled oversubscribed now. */
bool bench_row_oversubscribed(const struct bench *b, long workers);
/* Note the filesystem the running scenario measures on (the table header and
 * the environment record say it); returns its name, "tmpfs" for example. */
const char *bench_note_fs(struct bench *b, const char *path);
/* The filesystem noted for a scenario, or NULL. */
const char *bench_fs_of(const struct bench *b, const char *scenario);
/* One line of what was set up, to the file named by FSNW_BENCH_TRACE (test aid). */
void bench_trace(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Print the scenario's table (unless quick collects them). */
void bench_end(struct bench *b);

void bench_record(struct bench *b, const char *variant, long workers, int round,
		  const char *metric, double value, const char *unit, bool ok);
/* A failed check: printed at once; the run will exit non-zero. */
void bench_fail(struct bench *b, const char *variant, long workers, int round,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A variant the machine cannot run: one line, not a failure. */
void bench_skip(struct bench *b, const char *variant, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool bench_skipped(const struct bench *b, const char *scenario, const char *variant);
/* Progress on stderr, shown once a scenario has run for a second. */
void bench_progress(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Summary of the measured rounds of one key; false when there are none. */
bool bench_summary(const struct bench *b, const char *scenario, const char *variant,
		   long workers, const char *metric, struct summary *s);
/* Median of one key, or NAN. */
double bench_median(const struct bench *b, const char *scenario, const char *variant,
		    long workers, const char *metric);
/* Whether every round of the key passed its checks. */
bool bench_key_ok(const struct bench *b, const char *scenario, const char *variant,
		  long workers, const char *metric);
void bench_print_table(const struct bench *b, const char *scenario);

/* Keep a chart for --svg (the run owns it from now on; NULL is ignored). */
void bench_add_chart(struct bench *b, struct chart *c);

#endif
