/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "table.h"

void table_init(struct table *t, const char *align, const char *const *heads)
{
	memset(t, 0, sizeof(*t));
	t->ncols = (int)strlen(align);
	if (t->ncols > TABLE_COLS)
		t->ncols = TABLE_COLS;
	for (int i = 0; i < t->ncols; i++) {
		t->head[i] = heads[i];
		t->align[i] = align[i];
	}
}

void table_cell(struct table *t, const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	if (t->col == 0) {
		if (t->nrows == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 16;
			char **c = realloc(t->cells, cap * (size_t)t->ncols * sizeof(*c));

			if (!c)
				return; /* out of memory: the row is lost, the table still prints */
			t->cells = c;
			t->cap = cap;
		}
		t->nrows++;
	}
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	t->cells[(t->nrows - 1) * (size_t)t->ncols + (size_t)t->col] = s;
	t->col = (t->col + 1) % t->ncols;
}

void table_print(const struct table *t, FILE *f)
{
	size_t w[TABLE_COLS] = { 0 };
	size_t total = 0;

	for (int c = 0; c < t->ncols; c++)
		w[c] = strlen(t->head[c]);
	for (size_t r = 0; r < t->nrows; r++)
		for (int c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];

			if (s && strlen(s) > w[c])
				w[c] = strlen(s);
		}
	/* The rule spans the headers; a long last column may run past it. */
	for (int c = 0; c < t->ncols; c++)
		total += (c == t->ncols - 1 ? strlen(t->head[c]) : w[c]) + (c ? 2 : 0);
	for (int c = 0; c < t->ncols; c++) {
		if (c)
			fputs("  ", f);
		if (t->align[c] == 'r')
			fprintf(f, "%*s", (int)w[c], t->head[c]);
		else if (c == t->ncols - 1)
			fputs(t->head[c], f);
		else
			fprintf(f, "%-*s", (int)w[c], t->head[c]);
	}
	fputc('\n', f);
	for (size_t i = 0; i < total; i++)
		fputc('-', f);
	fputc('\n', f);
	for (size_t r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++) {
			const char *s = t->cells[r * (size_t)t->ncols + (size_t)c];

			if (!s)
				s = "";
			if (c)
				fputs("  ", f);
			if (t->align[c] == 'r')
				fprintf(f, "%*s", (int)w[c], s);
			else if (c == t->ncols - 1)
				fputs(s, f);
			else
				fprintf(f, "%-*s", (int)w[c], s);
		}
		fputc('\n', f);
	}
}

/* One cell: '|' escaped; an indented cell (a row under the one before) keeps
 * its indent as an em space, which Markdown does not trim. */
static void markdown_cell(FILE *f, const char *s)
{
	fputs("| ", f);
	if (s && s[0] == ' ') {
		fputs("&emsp;", f);
		while (*s == ' ')
			s++;
	}
	for (; s && *s; s++) {
		if (*s == '|')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc(' ', f);
}

void table_print_markdown(const struct table *t, FILE *f)
{
	for (int c = 0; c < t->ncols; c++)
		markdown_cell(f, t->head[c]);
	fputs("|\n", f);
	for (int c = 0; c < t->ncols; c++)
		fputs(t->align[c] == 'r' ? "| ---: " : "| --- ", f);
	fputs("|\n", f);
	for (size_t r = 0; r < t->nrows; r++) {
		for (int c = 0; c < t->ncols; c++)
			markdown_cell(f, t->cells[r * (size_t)t->ncols + (size_t)c]);
		fputs("|\n", f);
	}
}

void table_free(struct table *t)
{
	for (size_t i = 0; i < t->nrows * (size_t)t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

const char *fmt_num(char *buf, size_t len, double v)
{
	double a = fabs(v);

	if (isnan(v))
		snprintf(buf, len, "-");
	else if (a == 0 || a >= 1000)
		snprintf(buf, len, "%.0f", v);
	else if (a >= 100)
		snprintf(buf, len, "%.1f", v);
	else if (a >= 1)
		snprintf(buf, len, "%.2f", v);
	else
		snprintf(buf, len, "%.3g", v);
	return buf;
}
