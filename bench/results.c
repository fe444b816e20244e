/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>

#include "bench.h"
#include "envrec.h"
#include "svg.h"
#include "table.h"

int results_open(struct bench *b)
{
	const char *trace = getenv("FSNW_BENCH_TRACE");

	if (trace && *trace) {
		b->trace = fopen(trace, "a");
		if (!b->trace)
			return -errno;
		setvbuf(b->trace, NULL, _IOLBF, 0);
	}
	if (!b->o->csv)
		return 0;
	b->csv = csv_open(b->o->csv);
	return b->csv ? 0 : -errno;
}

void results_close(struct bench *b)
{
	int err;

	if (b->csv) {
		char env[4096];

		if (fclose(b->csv) != 0) {
			fprintf(stderr, "fsnw-bench: writing %s: %s\n", b->o->csv, strerror(errno));
			b->failures++;
		}
		b->csv = NULL;
		snprintf(env, sizeof(env), "%s.env", b->o->csv);
		err = envrec_write(env, b);
		if (err < 0) {
			fprintf(stderr, "fsnw-bench: writing %s: %s\n", env, strerror(-err));
			b->failures++;
		}
	}
	if (b->o->svg) {
		if (!b->ncharts) {
			fprintf(stderr, "fsnw-bench: --svg: this run measured nothing to draw\n");
		} else if ((err = svg_write(b->o->svg, b->charts, b->ncharts)) < 0) {
			fprintf(stderr, "fsnw-bench: writing %s: %s\n", b->o->svg, strerror(-err));
			b->failures++;
		}
	}
	if (b->trace)
		fclose(b->trace);
	b->trace = NULL;
	charts_free(b->charts, b->ncharts);
	b->charts = NULL;
	b->ncharts = 0;
	free(b->rows);
	free(b->skips);
	b->rows = NULL;
	b->skips = NULL;
	b->nrows = b->nskips = 0;
}

static void progress_clear(struct bench *b)
{
	if (b->progress_shown && b->tty)
		fputs("\r\033[K", stderr);
	b->progress_shown = false;
}

void bench_begin(struct bench *b, const char *scenario, const char *scale)
{
	b->scenario = scenario;
	b->scale = scale;
	b->busy_extra = !strcmp(scale, "workers") || !strcmp(scale, "clients") ? 0 : -1;
	b->scen_start = now_ns();
	b->last_progress = 0;
	b->progress_shown = false;
}

void bench_end(struct bench *b)
{
	progress_clear(b);
	if (!b->o->quiet && now_ns() - b->scen_start > 2000000000u)
		fprintf(stderr, "%s: done in %.1f s\n", b->scenario,
			(double)(now_ns() - b->scen_start) / 1e9);
	if (b->tables)
		bench_print_table(b, b->scenario);
	b->scenario = NULL;
}

void bench_busy(struct bench *b, int extra)
{
	b->busy_extra = extra;
}

bool bench_row_oversubscribed(const struct bench *b, long workers)
{
	return b->busy_extra >= 0 && bench_oversubscribed(b, workers + b->busy_extra);
}

const char *bench_note_fs(struct bench *b, const char *path)
{
	struct statfs sfs;
	struct fs_note *n = NULL;

	for (int i = 0; i < b->nfs_notes && !n; i++)
		if (!strcmp(b->fs_notes[i].scenario, b->scenario))
			n = &b->fs_notes[i];
	if (!n && b->nfs_notes < (int)(sizeof(b->fs_notes) / sizeof(b->fs_notes[0])))
		n = &b->fs_notes[b->nfs_notes++];
	if (!n)
		return "?";
	snprintf(n->scenario, sizeof(n->scenario), "%s", b->scenario);
	if (statfs(path, &sfs) == 0)
		snprintf(n->fs, sizeof(n->fs), "%s", fs_magic_name((unsigned long)sfs.f_type));
	else
		snprintf(n->fs, sizeof(n->fs), "?");
	return n->fs;
}

const char *bench_fs_of(const struct bench *b, const char *scenario)
{
	for (int i = 0; i < b->nfs_notes; i++)
		if (!strcmp(b->fs_notes[i].scenario, scenario))
			return b->fs_notes[i].fs;
	return NULL;
}

void bench_trace(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	if (!b->trace)
		return;
	fprintf(b->trace, "%s: ", b->scenario ? b->scenario : "-");
	va_start(ap, fmt);
	vfprintf(b->trace, fmt, ap);
	va_end(ap);
	fputc('\n', b->trace);
}

static void copy(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src);
}

/*
 * Test aids, named scenario/variant in the environment:
 * FSNW_BENCH_FAIL_VARIANT marks every round of that variant failed, so the
 * test suite can see a failed check reach the CSV and the exit status
 * without breaking the kernel on purpose; FSNW_BENCH_DROP_VARIANT keeps
 * none of its rows, as if it had never been measured, so the tests can see
 * quick refuse a row it cannot fill.
 */
static bool named_in_env(const struct bench *b, const char *env, const char *variant)
{
	const char *v = getenv(env);
	size_t n = strlen(b->scenario);

	return v && !strncmp(v, b->scenario, n) && v[n] == '/' && !strcmp(v + n + 1, variant);
}

void bench_record(struct bench *b, const char *variant, long workers, int round,
		  const char *metric, double value, const char *unit, bool ok)
{
	struct row *r;

	if (named_in_env(b, "FSNW_BENCH_DROP_VARIANT", variant))
		return;
	if (b->nrows == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		struct row *n = realloc(b->rows, cap * sizeof(*n));

		if (!n)
			bench_fatal(b, "out of memory");
		b->rows = n;
		b->cap = cap;
	}
	r = &b->rows[b->nrows++];
	memset(r, 0, sizeof(*r));
	copy(r->scenario, sizeof(r->scenario), b->scenario);
	copy(r->variant, sizeof(r->variant), variant);
	copy(r->kernel, sizeof(r->kernel), b->kernel);
	copy(r->metric, sizeof(r->metric), metric);
	copy(r->unit, sizeof(r->unit), unit);
	r->workers = workers;
	r->round = round;
	r->value = value;
	r->oversub = bench_row_oversubscribed(b, workers);
	if (ok && named_in_env(b, "FSNW_BENCH_FAIL_VARIANT", variant)) {
		bench_fail(b, variant, workers, round, "%s: failure injected by "
			   "FSNW_BENCH_FAIL_VARIANT", metric);
		ok = false;
	}
	r->ok = ok;
	if (b->csv)
		csv_write(b->csv, r);
}

void bench_fail(struct bench *b, const char *variant, long workers, int round,
		const char *fmt, ...)
{
	va_list ap;

	progress_clear(b);
	b->failures++;
	if (round > 0)
		fprintf(stderr, "FAIL %s %s %s=%ld round %d: ", b->scenario, variant,
			b->scale ? b->scale : "workers", workers, round);
	else
		fprintf(stderr, "FAIL %s %s %s=%ld (set-up or warm-up): ", b->scenario, variant,
			b->scale ? b->scale : "workers", workers);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void bench_skip(struct bench *b, const char *variant, const char *fmt, ...)
{
	struct skip *s, *n;
	va_list ap;

	if (bench_skipped(b, b->scenario, variant))
		return;
	n = realloc(b->skips, (b->nskips + 1) * sizeof(*n));
	if (!n)
		bench_fatal(b, "out of memory");
	b->skips = n;
	s = &b->skips[b->nskips++];
	copy(s->scenario, sizeof(s->scenario), b->scenario);
	copy(s->variant, sizeof(s->variant), variant);
	va_start(ap, fmt);
	vsnprintf(s->reason, sizeof(s->reason), fmt, ap);
	va_end(ap);
	progress_clear(b);
	fprintf(stderr, "skip %s %s: %s\n", s->scenario, s->variant, s->reason);
}

bool bench_skipped(const struct bench *b, const char *scenario, const char *variant)
{
	for (size_t i = 0; i < b->nskips; i++)
		if (!strcmp(b->skips[i].scenario, scenario) &&
		    !strcmp(b->skips[i].variant, variant))
			return true;
	return false;
}

void bench_progress(struct bench *b, const char *fmt, ...)
{
	uint64_t now = now_ns();
	va_list ap;

	if (b->o->quiet)
		return;
	/* Quiet for the first second; then at most 5 updates a second on a
	 * terminal, one line every 2 s into a log. */
	if (now - b->scen_start < 1000000000u)
		return;
	if (now - b->last_progress < (b->tty ? 200000000u : 2000000000u))
		return;
	b->last_progress = now;
	fputs(b->tty ? "\r\033[K" : "", stderr);
	fprintf(stderr, "%s %5.1fs: ", b->scenario, (double)(now - b->scen_start) / 1e9);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (!b->tty)
		fputc('\n', stderr);
	b->progress_shown = true;
}

static bool row_matches(const struct row *r, const char *scenario, const char *variant,
			long workers, const char *metric)
{
	return !strcmp(r->scenario, scenario) && !strcmp(r->variant, variant) &&
	       r->workers == workers && !strcmp(r->metric, metric);
}

bool bench_summary(const struct bench *b, const char *scenario, const char *variant,
		   long workers, const char *metric, struct summary *s)
{
	double *v = malloc((b->nrows + 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return false;
	for (size_t i = 0; i < b->nrows; i++)
		if (row_matches(&b->rows[i], scenario, variant, workers, metric))
			v[n++] = b->rows[i].value;
	summary_of(v, n, s);
	free(v);
	return n > 0;
}

double bench_median(const struct bench *b, const char *scenario, const char *variant,
		    long workers, const char *metric)
{
	struct summary s;

	return bench_summary(b, scenario, variant, workers, metric, &s) ? s.median : NAN;
}

bool bench_key_ok(const struct bench *b, const char *scenario, const char *variant,
		  long workers, const char *metric)
{
	for (size_t i = 0; i < b->nrows; i++)
		if (row_matches(&b->rows[i], scenario, variant, workers, metric) && !b->rows[i].ok)
			return false;
	return true;
}

/* "workers 4: more than the 2 CPUs ...", once per scale value that was. */
static void oversub_notes(const struct bench *b, const char *scenario)
{
	for (size_t i = 0; i < b->nrows; i++) {
		const struct row *r = &b->rows[i];
		bool seen = false;

		if (!r->oversub || strcmp(r->scenario, scenario))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = b->rows[j].oversub && b->rows[j].workers == r->workers &&
			       !strcmp(b->rows[j].scenario, scenario);
		if (!seen)
			printf("%s %ld: more busy threads than the %d CPU%s they may use: they take "
			       "turns (oversubscribed; the CSV says so after the variant)\n",
			       b->scale ? b->scale : "workers", r->workers, bench_cpus(b),
			       bench_cpus(b) == 1 ? "" : "s");
	}
}

void bench_print_table(const struct bench *b, const char *scenario)
{
	const char *fs;
	const char *heads[] = { "variant", b->scale ? b->scale : "workers", "metric", "median",
				"mean", "cv%", "unit", "n", "checks" };
	struct table t;
	bool any = false;

	table_init(&t, "lrlrrrlrl", heads);
	for (size_t i = 0; i < b->nrows; i++) {
		const struct row *r = &b->rows[i];
		struct summary s;
		char m[32], a[32], c[32];
		bool seen = false, ok;
		int bad = 0;

		if (strcmp(r->scenario, scenario))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = row_matches(&b->rows[j], scenario, r->variant, r->workers,
					   r->metric);
		if (seen)
			continue;
		bench_summary(b, scenario, r->variant, r->workers, r->metric, &s);
		for (size_t j = i; j < b->nrows; j++)
			if (row_matches(&b->rows[j], scenario, r->variant, r->workers, r->metric) &&
			    !b->rows[j].ok)
				bad++;
		ok = bad == 0;
		table_cell(&t, "%s", r->variant);
		table_cell(&t, r->oversub ? "%ld (oversubscribed)" : "%ld", r->workers);
		table_cell(&t, "%s", r->metric);
		table_cell(&t, "%s", fmt_num(m, sizeof(m), s.median));
		table_cell(&t, "%s", fmt_num(a, sizeof(a), s.mean));
		table_cell(&t, "%s", isnan(s.cv) ? "-" : (snprintf(c, sizeof(c), "%.1f", s.cv), c));
		table_cell(&t, "%s", r->unit);
		table_cell(&t, "%zu", s.n);
		table_cell(&t, ok ? "ok" : "FAILED %d", bad);
		any = true;
	}
	fs = bench_fs_of(b, scenario);
	printf("\n== %s (one run: %s, %d CPUs%s%s) ==\n", scenario, b->kernel, b->ncpu,
	       fs ? ", on " : "", fs ? fs : "");
	if (any)
		table_print(&t, stdout);
	else
		printf("(nothing measured)\n");
	oversub_notes(b, scenario);
	for (size_t i = 0; i < b->nskips; i++)
		if (!strcmp(b->skips[i].scenario, scenario))
			printf("skipped %s: %s\n", b->skips[i].variant, b->skips[i].reason);
	table_free(&t);
	fflush(stdout);
}

void bench_add_chart(struct bench *b, struct chart *c)
{
	struct chart **n;

	if (!c)
		return;
	n = realloc(b->charts, (b->ncharts + 1) * sizeof(*n));
	if (!n) {
		chart_free(c);
		return;
	}
	b->charts = n;
	b->charts[b->ncharts++] = c;
}
