/* SPDX-License-Identifier: MIT */
/*
 * Line charts of the scaling scenarios (churn over workers, parent-write over
 * clients, merge over depth), written as plain SVG: axes with ticks and
 * units, a legend, one line per variant. Several charts stack in one file.
 */
#ifndef FSNW_BENCH_SVG_H
#define FSNW_BENCH_SVG_H

#include <stdbool.h>
#include <stddef.h>

#define SERIES_POINTS 64

struct series {
	char name[48];
	size_t n;
	double x[SERIES_POINTS];
	double y[SERIES_POINTS];
};

struct chart {
	char title[160];
	char xlabel[64];
	char ylabel[64];
	bool logx, logy;
	size_t nseries;
	struct series *series;
};

struct chart *chart_new(const char *title, const char *xlabel, const char *ylabel, bool logx,
			bool logy);
/* Add (x, y) to the named series (made on first use); NAN y is left out. */
void chart_point(struct chart *c, const char *series, double x, double y);
/* Free one chart; NULL is fine. */
void chart_free(struct chart *c);
/* Free an array of charts and the array. */
void charts_free(struct chart **c, size_t n);
/* Write the charts to path; -errno on failure. */
int svg_write(const char *path, struct chart *const *c, size_t n);

#endif
