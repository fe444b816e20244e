/* SPDX-License-Identifier: MIT */
/* Summaries of measured rounds: median, mean, sample CV, percentiles. */
#ifndef FSNW_BENCH_SUMMARY_H
#define FSNW_BENCH_SUMMARY_H

#include <stddef.h>
#include <stdint.h>

struct summary {
	size_t n;
	double median;
	double mean;
	double sd;  /* sample standard deviation (n - 1); NAN when n < 2 */
	double cv;  /* sd / mean * 100; NAN when n < 2 or mean is 0 */
	double min;
	double max;
};

/* Summarise v[0..n); v is not changed. n == 0 gives NANs. */
void summary_of(const double *v, size_t n, struct summary *s);

/* The q-quantile (0..1, nearest rank) of v[0..n); sorts v in place. */
uint64_t percentile_u64(uint64_t *v, size_t n, double q);

#endif
