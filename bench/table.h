/* SPDX-License-Identifier: MIT */
/* Aligned text tables for stdout: cells are formatted into owned strings. */
#ifndef FSNW_BENCH_TABLE_H
#define FSNW_BENCH_TABLE_H

#include <stdio.h>

#define TABLE_COLS 16

struct table {
	int ncols;
	const char *head[TABLE_COLS];
	char align[TABLE_COLS]; /* 'l' or 'r' */
	char **cells;           /* nrows * ncols */
	size_t nrows, cap;
	int col;                /* next cell of the row being filled */
};

/* align: one 'l' or 'r' per column; heads: ncols header strings. */
void table_init(struct table *t, const char *align, const char *const *heads);
/* Append a cell to the current row; a row ends after its last column. */
void table_cell(struct table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_print(const struct table *t, FILE *f);
/* The same as a Markdown (GitHub) table: a header row, the alignment row, a
 * row per row; '|' in a cell is escaped. */
void table_print_markdown(const struct table *t, FILE *f);
void table_free(struct table *t);

/* Format a number for humans: 3 significant digits or more, no exponent. */
const char *fmt_num(char *buf, size_t len, double v);

#endif
