/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "svg.h"

#define PANEL_W 820
#define PANEL_H 440
#define M_LEFT 90
#define M_RIGHT 230 /* the legend */
#define M_TOP 50
#define M_BOTTOM 70

static const char *const palette[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
	"#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};

struct chart *chart_new(const char *title, const char *xlabel, const char *ylabel, bool logx,
			bool logy)
{
	struct chart *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	snprintf(c->title, sizeof(c->title), "%s", title);
	snprintf(c->xlabel, sizeof(c->xlabel), "%s", xlabel);
	snprintf(c->ylabel, sizeof(c->ylabel), "%s", ylabel);
	c->logx = logx;
	c->logy = logy;
	return c;
}

void chart_point(struct chart *c, const char *name, double x, double y)
{
	struct series *s = NULL;

	if (!c || isnan(y) || isnan(x))
		return;
	for (size_t i = 0; i < c->nseries; i++)
		if (!strcmp(c->series[i].name, name))
			s = &c->series[i];
	if (!s) {
		struct series *n = realloc(c->series, (c->nseries + 1) * sizeof(*n));

		if (!n)
			return;
		c->series = n;
		s = &c->series[c->nseries++];
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s", name);
	}
	if (s->n < SERIES_POINTS) {
		s->x[s->n] = x;
		s->y[s->n] = y;
		s->n++;
	}
}

void chart_free(struct chart *c)
{
	if (c)
		free(c->series);
	free(c);
}

void charts_free(struct chart **c, size_t n)
{
	for (size_t i = 0; c && i < n; i++)
		chart_free(c[i]);
	free(c);
}

static void put_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else
			fputc(*s, f);
	}
}

/* 1024 -> 1k, 1048576 -> 1M: depths and sizes are powers of two. */
static void fmt_tick(char *buf, size_t len, double v)
{
	if (v >= 1048576 && fmod(v, 1048576) == 0)
		snprintf(buf, len, "%gM", v / 1048576);
	else if (v >= 1024 && fmod(v, 1024) == 0)
		snprintf(buf, len, "%gk", v / 1024);
	else if (fabs(v) >= 1e6 || (fabs(v) < 0.01 && v != 0))
		snprintf(buf, len, "%.3g", v);
	else
		snprintf(buf, len, "%g", v);
}

/* A "nice" step (1, 2 or 5 times a power of ten) for about n ticks up to max. */
static double nice_step(double max, int n)
{
	double raw = max / n, p = pow(10, floor(log10(raw))), m = raw / p;

	return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

struct scale {
	double lo, hi;
	bool log;
	double px0, px1;
};

static double map(const struct scale *s, double v)
{
	double a = s->log ? log10(v) : v, lo = s->log ? log10(s->lo) : s->lo;
	double hi = s->log ? log10(s->hi) : s->hi;

	if (hi <= lo)
		return (s->px0 + s->px1) / 2;
	return s->px0 + (a - lo) / (hi - lo) * (s->px1 - s->px0);
}

static void draw_chart(FILE *f, const struct chart *c, int y0)
{
	double xmin = INFINITY, xmax = -INFINITY, ymin = INFINITY, ymax = -INFINITY;
	double xs[SERIES_POINTS * 4];
	size_t nxs = 0;
	int left = M_LEFT, right = PANEL_W - M_RIGHT, top = y0 + M_TOP;
	int bottom = y0 + PANEL_H - M_BOTTOM;
	struct scale sx, sy;
	char buf[64];

	for (size_t i = 0; i < c->nseries; i++)
		for (size_t j = 0; j < c->series[i].n; j++) {
			double x = c->series[i].x[j], y = c->series[i].y[j];
			bool dup = false;

			if ((c->logx && x <= 0) || (c->logy && y <= 0))
				continue;
			xmin = fmin(xmin, x);
			xmax = fmax(xmax, x);
			ymin = fmin(ymin, y);
			ymax = fmax(ymax, y);
			for (size_t k = 0; k < nxs; k++)
				dup |= xs[k] == x;
			if (!dup && nxs < sizeof(xs) / sizeof(xs[0]))
				xs[nxs++] = x;
		}
	fprintf(f, "<g>\n<text x=\"%d\" y=\"%d\" font-size=\"16\" font-weight=\"bold\">", left,
		y0 + 28);
	put_text(f, c->title);
	fputs("</text>\n", f);
	if (!nxs) {
		fprintf(f, "<text x=\"%d\" y=\"%d\">no data</text>\n</g>\n", left, top + 40);
		return;
	}
	sx = (struct scale){ xmin, xmax, c->logx, left + 20, right - 20 };
	if (c->logy) {
		sy = (struct scale){ pow(10, floor(log10(ymin))), pow(10, ceil(log10(ymax))), true,
				     bottom, top };
		if (sy.hi <= sy.lo)
			sy.hi = sy.lo * 10;
	} else {
		double step = nice_step(ymax > 0 ? ymax * 1.05 : 1, 5);

		sy = (struct scale){ 0, ceil((ymax > 0 ? ymax * 1.05 : 1) / step) * step, false,
				     bottom, top };
	}
	/* Frame and axes. */
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" "
		   "stroke=\"#444\"/>\n", left, top, right - left, bottom - top);
	/* Y ticks and grid. */
	if (c->logy) {
		for (double v = sy.lo; v <= sy.hi * 1.0001; v *= 10) {
			double py = map(&sy, v);

			fmt_tick(buf, sizeof(buf), v);
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
				   "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s"
				   "</text>\n", left, py, right, py, left - 6, py + 4, buf);
		}
	} else {
		double step = nice_step(sy.hi, 5);

		for (double v = 0; v <= sy.hi * 1.0001; v += step) {
			double py = map(&sy, v);

			fmt_tick(buf, sizeof(buf), v);
			fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
				   "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%s"
				   "</text>\n", left, py, right, py, left - 6, py + 4, buf);
		}
	}
	/* X ticks at every measured x: the scale points are few and chosen. */
	for (size_t k = 0; k < nxs; k++) {
		double px = map(&sx, xs[k]);

		fmt_tick(buf, sizeof(buf), xs[k]);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#444\"/>"
			   "<text x=\"%.1f\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n",
			px, bottom, px, bottom + 5, px, bottom + 20, buf);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"13\" text-anchor=\"middle\">",
		(left + right) / 2, bottom + 45);
	put_text(f, c->xlabel);
	fputs(c->logx ? " (log scale)</text>\n" : "</text>\n", f);
	fprintf(f, "<text transform=\"translate(%d,%d) rotate(-90)\" font-size=\"13\" "
		   "text-anchor=\"middle\">", left - 60, (top + bottom) / 2);
	put_text(f, c->ylabel);
	fputs(c->logy ? " (log scale)</text>\n" : "</text>\n", f);
	/* One line per series, then its legend entry. */
	for (size_t i = 0; i < c->nseries; i++) {
		const struct series *s = &c->series[i];
		const char *col = palette[i % (sizeof(palette) / sizeof(palette[0]))];
		int ly = top + 10 + (int)i * 22;

		fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col);
		for (size_t j = 0; j < s->n; j++)
			if (!((c->logx && s->x[j] <= 0) || (c->logy && s->y[j] <= 0)))
				fprintf(f, "%.1f,%.1f ", map(&sx, s->x[j]), map(&sy, s->y[j]));
		fputs("\"/>\n", f);
		for (size_t j = 0; j < s->n; j++)
			if (!((c->logx && s->x[j] <= 0) || (c->logy && s->y[j] <= 0)))
				fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
					map(&sx, s->x[j]), map(&sy, s->y[j]), col);
		fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" "
			   "stroke-width=\"3\"/><text x=\"%d\" y=\"%d\" font-size=\"13\">",
			right + 15, ly, right + 45, ly, col, right + 52, ly + 4);
		put_text(f, s->name);
		fputs("</text>\n", f);
	}
	fputs("</g>\n", f);
}

int svg_write(const char *path, struct chart *const *c, size_t n)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
		   "viewBox=\"0 0 %d %zu\" font-family=\"sans-serif\">\n"
		   "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		PANEL_W, n * PANEL_H, PANEL_W, n * PANEL_H);
	for (size_t i = 0; i < n; i++)
		draw_chart(f, c[i], (int)(i * PANEL_H));
	fputs("</svg>\n", f);
	if (ferror(f))
		err = -EIO;
	if (fclose(f) != 0 && !err)
		err = -errno;
	return err;
}
