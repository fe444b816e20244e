/* SPDX-License-Identifier: MIT */
/*
 * parent-write (seed 002, Jan Kara's load): a tmpfs directory of F files of
 * 4 KiB; X client threads, client i opens file i and does N one-byte pwrites
 * at offset 0, then closes it. Modes: none (no watch), other (an IN_MODIFY
 * watch on another directory of the filesystem), parent (an IN_MODIFY watch
 * on the directory itself) with a reader draining it during the run, raw or
 * through the library. Metric: ns per write and writes/s per X; for parent,
 * events received, merged, overflows. The library must not slow the writers.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "evio.h"
#include "quick.h"
#include "reader.h"
#include "svg.h"
#include "table.h"

static struct pw_opts {
	long files;
	struct long_list clients;
	long writes;
} opt;

#define F(field) offsetof(struct pw_opts, field)
static const struct bench_option options[] = {
	{ .flag = "files", .arg = "F", .type = OPT_LONG, .off = F(files), .min = 1,
	  .max = 1 << 16, .preset = { "4", "16", "64", "1024" },
	  .help = "files of 4 KiB in the directory" },
	{ .flag = "clients", .arg = "LIST", .type = OPT_LIST, .off = F(clients), .min = 1,
	  .max = 1 << 16, .preset = { "1..cpus", "1..cpus", "1..cpus", "1..files" },
	  .help = "writer threads, client i on file i" },
	{ .flag = "writes", .arg = "N", .type = OPT_LONG, .off = F(writes), .min = 1,
	  .max = 1L << 34, .preset = { "2000", "50000", "200000", "1000000" },
	  .help = "one-byte pwrites per client a round" },
	{ 0 },
};
#undef F

static const char *const variants[] = { "none", "other", "parent-raw", "parent-lib", NULL };

struct pw {
	struct team team;
	const char *dir;
	long N;
	uint64_t *t0, *t1;
	long *bad;
	int *err;
};

static void client(struct team *t, int idx)
{
	struct pw *p = t->arg;
	char path[4200];
	long bad = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/f%d", p->dir, idx);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		p->err[idx] = errno;
	team_sync(t);
	p->t0[idx] = now_ns();
	for (long i = 0; fd >= 0 && i < p->N; i++)
		bad += pwrite(fd, "x", 1, 0) != 1;
	p->t1[idx] = now_ns();
	if (fd >= 0)
		close(fd);
	p->bad[idx] = bad;
	team_sync(t);
}

static void pw_round(struct bench *b, const char *variant, const char *dir, const char *other,
		     int X, long N, int m)
{
	struct pw p = { .dir = dir, .N = N };
	struct reader r;
	struct fsnw_stats st;
	bool parent = !strncmp(variant, "parent", 6), lib = !strcmp(variant, "parent-lib");
	uint64_t sum = 0, first = UINT64_MAX, last = 0;
	long bad = 0, missing = 0;
	int fd = -1, err = 0, moved;
	bool ok = true;

	memset(&r, 0, sizeof(r));
	r.fd = -1;
	p.t0 = calloc((size_t)X, sizeof(uint64_t));
	p.t1 = calloc((size_t)X, sizeof(uint64_t));
	p.bad = calloc((size_t)X, sizeof(long));
	p.err = calloc((size_t)X, sizeof(int));
	if (!p.t0 || !p.t1 || !p.bad || !p.err)
		bench_fatal(b, "out of memory");
	if (lib) {
		err = lib_open(&r.w, FSNW_BACKEND_INOTIFY, 0, 0, 0);
		if (!err) {
			r.wid = fsnw_add(r.w, dir, FSNW_MODIFY, 0);
			err = r.wid > 0 ? 0 : r.wid;
		}
	} else if (strcmp(variant, "none")) {
		fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fd < 0 || inotify_add_watch(fd, parent ? dir : other, IN_MODIFY) < 0)
			err = -errno;
		r.fd = fd;
	}
	if (err) {
		bench_fail(b, variant, X, m, "set-up: %s", strerror(-err));
		goto out;
	}
	if (parent) {
		r.mask = FSNW_MODIFY;
		r.prefix = "f";
		r.nnames = X;
		r.seen = calloc((size_t)X, 1);
		if (!r.seen)
			bench_fatal(b, "out of memory");
		reader_start(b, &r, X);
	}
	team_start(b, &p.team, X, 0, client, &p);
	team_sync(&p.team);
	team_sync(&p.team);
	moved = team_join(&p.team);
	if (parent)
		reader_stop(&r);
	for (int i = 0; i < X; i++) {
		sum += p.t1[i] - p.t0[i];
		first = p.t0[i] < first ? p.t0[i] : first;
		last = p.t1[i] > last ? p.t1[i] : last;
		bad += p.bad[i];
		if (p.err[i] && !err)
			err = p.err[i];
	}
	if (bad || err || moved) {
		bench_fail(b, variant, X, m, "%ld writes failed, open: %s, %d clients off their CPU",
			   bad, err ? strerror(err) : "ok", moved);
		ok = false;
	}
	if (parent) {
		for (int i = 0; i < X; i++)
			missing += !r.seen[i];
		/* An overflow may lose a file's events; without one, each must show. */
		if (r.err || r.unexpected || !r.events || (missing && !r.overflows)) {
			bench_fail(b, variant, X, m, "reader: %ld events, %ld unexpected, %ld files "
				   "never reported, %ld overflows%s%s", r.events, r.unexpected,
				   missing, r.overflows, r.err ? ", " : "",
				   r.err ? strerror(-r.err) : "");
			ok = false;
		}
	}
	if (lib) {
		lib_stats(r.w, &st);
		/* The merged counts must add up to what the kernel sent. */
		uint64_t lost = st.dropped_queue_full + st.dropped_removed + st.dropped_parked +
				st.dropped_stale + st.overflows_kernel;

		if ((uint64_t)r.counted + lost != st.events_read) {
			bench_fail(b, variant, X, m, "library: counts of delivered events sum to %ld, "
				   "kernel sent %llu (%llu dropped or overflow records)", r.counted,
				   (unsigned long long)st.events_read, (unsigned long long)lost);
			ok = false;
		}
	}
	if (!strcmp(variant, "other")) {
		struct raw_drained d;

		raw_drain(fd, &d);
		if (d.ignored || d.other || d.overflows) {
			bench_fail(b, variant, X, m, "%ld events on the other directory",
				   d.ignored + d.other + d.overflows);
			ok = false;
		}
	}
	if (m > 0) {
		double writes = (double)X * (double)N;

		bench_record(b, variant, X, m, "write", (double)sum / writes, "ns/write", ok);
		bench_record(b, variant, X, m, "writes/s", writes / ((double)(last - first) / 1e9),
			     "writes/s", ok);
		if (parent) {
			bench_record(b, variant, X, m, "events", (double)r.events, "events", ok);
			bench_record(b, variant, X, m, "kernel-events",
				     lib ? (double)st.events_read : (double)r.events, "events", ok);
			if (lib)
				bench_record(b, variant, X, m, "merged", (double)st.events_merged,
					     "events", ok);
			bench_record(b, variant, X, m, "overflows", (double)r.overflows, "events",
				     ok);
		}
	}
out:
	if (fd >= 0)
		close(fd);
	fsnw_close(r.w);
	reader_free(&r);
	free(p.t0);
	free(p.t1);
	free(p.bad);
	free(p.err);
}

static double pw_med(struct bench *b, const char *variant, long X, const char *metric)
{
	return bench_median(b, "parent-write", variant, X, metric);
}

static void pw_summary(struct bench *b)
{
	const char *heads[] = { "clients", "none ns/w", "raw ns/w", "lib ns/w", "lib/raw",
				"raw events", "lib events", "lib merged", "raw ovf", "lib ovf" };
	const double nan = NAN;
	struct table t;
	char x[32];

	table_init(&t, "rrrrrrrrrr", heads);
	for (int k = 0; k < opt.clients.n; k++) {
		long X = opt.clients.v[k];
		double v[9] = {
			pw_med(b, "none", X, "write"),
			pw_med(b, "parent-raw", X, "write"),
			pw_med(b, "parent-lib", X, "write"),
			nan,
			pw_med(b, "parent-raw", X, "events"),
			pw_med(b, "parent-lib", X, "events"),
			pw_med(b, "parent-lib", X, "merged"),
			pw_med(b, "parent-raw", X, "overflows"),
			pw_med(b, "parent-lib", X, "overflows"),
		};

		if (isnan(v[1]) && isnan(v[2]))
			continue;
		v[3] = v[2] / v[1];
		table_cell(&t, "%ld", X);
		for (int i = 0; i < 9; i++)
			table_cell(&t, "%s", fmt_num(x, sizeof(x), v[i]));
	}
	if (t.nrows) {
		printf("\n-- parent-write: writers under a parent watch, raw reader vs library "
		       "reader (medians) --\n");
		table_print(&t, stdout);
	}
	table_free(&t);
}

static int pw_run(struct bench *b)
{
	char dir[4096], other[4096];
	long F = opt.files, N = opt.writes;
	int warmup, rounds, err;
	struct chart *c;

	bench_begin(b, "parent-write", "clients");
	err = bench_mkdir(b, "pw-files", dir, sizeof(dir));
	if (!err)
		err = bench_mkdir(b, "pw-other", other, sizeof(other));
	if (!err)
		err = bench_make_files(b, dir, "f", F, 4096);
	if (err) {
		bench_fail(b, "none", 0, 0, "making %ld files: %s", F, strerror(-err));
		bench_end(b);
		return 0;
	}
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 3, 5, 5), &warmup,
		     &rounds);
	for (int k = 0; k < opt.clients.n; k++) {
		int X = (int)opt.clients.v[k];

		if (X > F) {
			fprintf(stderr, "parent-write: skipping %d clients: only %ld files\n", X,
				F);
			continue;
		}
		/* Modes interleave by round: a slow moment of the machine hits all alike. */
		for (int r = 0; r < warmup + rounds; r++)
			for (int v = 0; variants[v]; v++) {
				const char *name = variants[v];

				if (!cli_variant_on(b->o, name) ||
				    (strcmp(name, "none") && !bench_inotify_room(b, name, 1)))
					continue;
				bench_progress(b, "%s X=%d round %d/%d", name, X, r + 1,
					       warmup + rounds);
				pw_round(b, name, dir, other, X, N, r - warmup + 1);
			}
	}
	c = chart_new("parent-write: 1-byte pwrite cost under a watch (tmpfs)", "clients",
		      "ns per write", false, false);
	for (int v = 0; variants[v]; v++)
		for (int k = 0; k < opt.clients.n; k++)
			chart_point(c, variants[v], (double)opt.clients.v[k],
				    bench_median(b, "parent-write", variants[v],
						 opt.clients.v[k], "write"));
	if (c && c->nseries)
		bench_add_chart(b, c);
	else
		chart_free(c);
	{
		bool tables = b->tables;

		bench_end(b);
		if (tables)
			pw_summary(b);
	}
	return 0;
}

static void pw_quick(struct bench *b, struct quick *q)
{
	char label[96];

	for (int k = 0; k < opt.clients.n; k++) {
		long X = opt.clients.v[k];

		snprintf(label, sizeof(label), "parent-write X=%ld, writer cost", X);
		quick_row(q, label, "ns/write", quick_need(q, "parent-raw", X, "write"), NAN,
			  quick_need(q, "parent-lib", X, "write"), NAN,
			  "no watch %.0f; events read raw %.0f, lib delivered %.0f (merged %.0f); "
			  "overflows %.0f/%.0f", quick_need(q, "none", X, "write"),
			  quick_need(q, "parent-raw", X, "events"),
			  quick_need(q, "parent-lib", X, "events"),
			  quick_need(q, "parent-lib", X, "merged"),
			  quick_need(q, "parent-raw", X, "overflows"),
			  quick_need(q, "parent-lib", X, "overflows"));
	}
}

BENCH_SCENARIO(parent_write) = {
	.name = "parent-write",
	.order = 20,
	.summary = "1-byte pwrites under a parent watch (seed 002)",
	.flags = SCEN_MEASURES | SCEN_ROUNDS | SCEN_CHARTS,
	.run = pw_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = pw_quick,
};
