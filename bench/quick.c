/* SPDX-License-Identifier: MIT */
/*
 * quick: every scenario that has quick rows, at the small size, then one
 * summary table: scenario, raw, libinotifytools and libuv (where they do
 * the same job), libfsnwatch, the ratio libfsnwatch / raw (for times, below 1 means
 * the library is faster) and, for churn, libfsnwatch over its floor. The
 * per-scenario tables are printed with --verbose.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "commit.h"
#include "envrec.h"
#include "quick.h"
#include "table.h"

struct quick {
	struct bench *b;
	const char *scenario;  /* whose rows are being added */
	struct table t;
	int refused;           /* rows that could not be filled */
	/* the row being put together */
	char missing[160];     /* the first needed key that was not measured */
	char skipped[160];     /* needed variants skipped for a stated reason */
	double libuv;          /* its libuv cell (quick_libuv), NAN: none */
};

static double lookup(struct quick *q, const char *variant, long scale, const char *metric,
		     bool need)
{
	double v = bench_median(q->b, q->scenario, variant, scale, metric);
	size_t n;

	if (!isnan(v) || !need)
		return v;
	if (bench_skipped(q->b, q->scenario, variant)) {
		n = strlen(q->skipped);
		if (!strstr(q->skipped, variant) && n < sizeof(q->skipped))
			snprintf(q->skipped + n, sizeof(q->skipped) - n, "%s%s", n ? ", " : "",
				 variant);
	} else if (!q->missing[0]) {
		snprintf(q->missing, sizeof(q->missing), "%s/%s %s at %ld", q->scenario, variant,
			 metric, scale);
	}
	return v;
}

double quick_need(struct quick *q, const char *variant, long scale, const char *metric)
{
	return lookup(q, variant, scale, metric, true);
}

double quick_may(struct quick *q, const char *variant, long scale, const char *metric)
{
	return lookup(q, variant, scale, metric, false);
}

void quick_libuv(struct quick *q, double v)
{
	q->libuv = v;
}

void quick_row(struct quick *q, const char *label, const char *unit, double raw, double it,
	       double lib, double floor, const char *fmt, ...)
{
	char a[32], c[32], d[32], e[32], f[32], u[32], note[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	table_cell(&q->t, "%s", label);
	table_cell(&q->t, "%s", unit);
	if (q->missing[0]) {
		/* Refused: no number in this row is printed, the reason is. */
		q->refused++;
		fprintf(stderr, "fsnw-bench quick: cannot fill the row '%s': %s was not "
			"measured\n", label, q->missing);
		for (int i = 0; i < 6; i++)
			table_cell(&q->t, "?");
		table_cell(&q->t, "NOT FILLED: no measured round of %s", q->missing);
	} else {
		table_cell(&q->t, "%s", fmt_num(a, sizeof(a), raw));
		table_cell(&q->t, "%s", fmt_num(c, sizeof(c), it));
		table_cell(&q->t, "%s", fmt_num(u, sizeof(u), q->libuv));
		table_cell(&q->t, "%s", fmt_num(d, sizeof(d), lib));
		table_cell(&q->t, "%s", fmt_num(e, sizeof(e), lib / raw));
		table_cell(&q->t, "%s", fmt_num(f, sizeof(f), floor));
		table_cell(&q->t, "%s%s%s%s", q->skipped[0] ? "skipped " : "", q->skipped,
			   q->skipped[0] ? " (see below); " : "", note);
	}
	q->missing[0] = q->skipped[0] = '\0';
	q->libuv = NAN;
}

/* The caption of the Markdown table: the machine and the commit it came from. */
static void quick_caption(struct bench *b, double seconds)
{
	char cpu[128];

	cpu_model(cpu, sizeof(cpu));
	printf("\n*fsnw-bench quick on Linux %s, %d CPUs (%s), fsnw-bench %s built from %s; "
	       "one run of %.0f s, medians; ratio = libfsnwatch / raw, below 1 is faster; "
	       "lib/floor: churn's libfsnwatch over the floor that bounds it.*\n\n", b->kernel,
	       b->ncpu, cpu, FSNW_BENCH_VERSION, FSNW_BENCH_COMMIT, seconds);
}

static int quick_run(struct bench *b)
{
	const char *heads[] = { "scenario", "unit", "raw", "libinotifytools", "libuv",
				"libfsnwatch", "ratio", "lib/floor", "notes" };
	uint64_t t0 = now_ns();
	const struct scenario *const *all;
	struct quick q = { .b = b, .libuv = NAN };
	size_t n;

	all = scenarios(&n);
	b->tables = b->o->verbose;
	for (size_t i = 0; i < n; i++) {
		const struct bench_opts *o = b->o;
		struct bench_opts only = *o;

		if (!all[i]->quick)
			continue;
		/* Only what its rows need: the rest is the scenario's own run. */
		only.variants = all[i]->quick_variants;
		b->o = &only;
		if (all[i]->run(b) < 0)
			b->failures++;
		b->o = o;
	}
	table_init(&q.t, "llrrrrrrl", heads);
	for (size_t i = 0; i < n; i++) {
		if (!all[i]->quick)
			continue;
		/* Rows look their values up among the rows of their own scenario. */
		q.scenario = all[i]->name;
		all[i]->quick(b, &q);
	}
	if (b->o->markdown) {
		quick_caption(b, (double)(now_ns() - t0) / 1e9);
		table_print_markdown(&q.t, stdout);
	} else {
		printf("\nfsnw-bench quick: one run on %s, %d CPUs, %.0f s (medians; ratio = "
		       "libfsnwatch / raw, below 1 is faster; lib/floor: churn's libfsnwatch over "
		       "the floor that bounds it, same W)\n", b->kernel, b->ncpu,
		       (double)(now_ns() - t0) / 1e9);
		table_print(&q.t, stdout);
	}
	table_free(&q.t);
	for (size_t i = 0; i < b->nskips; i++)
		printf("skipped %s %s: %s\n", b->skips[i].scenario, b->skips[i].variant,
		       b->skips[i].reason);
	if (q.refused) {
		printf("%d row%s could not be filled: see stderr\n", q.refused,
		       q.refused == 1 ? "" : "s");
		b->failures += q.refused;
	}
	if (b->failures > q.refused)
		printf("%d checks FAILED: see the FAIL lines on stderr\n", b->failures - q.refused);
	else if (!q.refused)
		printf("every round passed its checks\n");
	return 0;
}

BENCH_SCENARIO(quick) = {
	.name = "quick",
	.order = 90,
	.summary = "every scenario at a small size, one summary table",
	.flags = SCEN_MEASURES | SCEN_CHARTS | SCEN_SUMMARY,
	.size = "small",
	.run = quick_run,
};
