/* SPDX-License-Identifier: MIT */
/*
 * quick's summary table. quick runs every scenario whose descriptor has a
 * `quick` function, then calls each to add its rows here. A row takes its
 * values with quick_need (or quick_may) and is added with quick_row; a
 * value it needs that was not measured, and not skipped for a stated
 * reason, makes quick refuse the row: a message on stderr, the row marked
 * in the table, and a non-zero exit. Nothing is dropped silently.
 */
#ifndef FSNW_BENCH_QUICK_H
#define FSNW_BENCH_QUICK_H

struct quick;

/* The median of a key of the scenario adding rows, which the next row
 * needs; NAN when missing (see above). */
double quick_need(struct quick *q, const char *variant, long scale, const char *metric);
/* The same for a value the row may show without: NAN shows as "-". */
double quick_may(struct quick *q, const char *variant, long scale, const char *metric);

/* The libuv cell of the next row (NAN, the default: "-"). */
void quick_libuv(struct quick *q, double v);

/*
 * Add a row: the raw baseline, libinotifytools, libfsnwatch, and the
 * library's time over the floor that bounds it (churn), NAN where a column
 * does not apply. The ratio column is lib / raw.
 */
void quick_row(struct quick *q, const char *label, const char *unit, double raw, double it,
	       double lib, double floor, const char *fmt, ...)
	__attribute__((format(printf, 8, 9)));

#endif
