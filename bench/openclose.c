/* SPDX-License-Identifier: MIT */
/*
 * openclose (the parent-watch thread's event-path check): one worker opens and closes one
 * file N times, modes none / other / parent, with a listener on another CPU
 * draining the parent watch (raw or through the library). Metric: p50 and
 * p99 ns per open+close, and ops/s. The thread's table came from XFS: the filesystem of
 * the scratch directory (--dir) is named in the table and the environment
 * record.
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
#include "summary.h"

static struct oc_opts {
	long ops;
} opt;

static const struct bench_option options[] = {
	{ .flag = "ops", .arg = "N", .type = OPT_LONG, .off = offsetof(struct oc_opts, ops),
	  .min = 1, .max = 1L << 26, .preset = { "2000", "20000", "100000", "100000" },
	  .help = "opens and closes a round" },
	{ 0 },
};

static const char *const variants[] = { "none", "other", "parent-raw", "parent-lib", NULL };

#define OC_MASK (IN_OPEN | IN_CLOSE_NOWRITE)

static void oc_round(struct bench *b, const char *variant, const char *dir, const char *other,
		     long N, uint64_t *lat, int m)
{
	char path[4200];
	struct reader r;
	bool parent = !strncmp(variant, "parent", 6), lib = !strcmp(variant, "parent-lib");
	uint64_t start, end;
	long bad = 0;
	int fd = -1, err = 0;
	bool ok = true;

	memset(&r, 0, sizeof(r));
	r.fd = -1;
	snprintf(path, sizeof(path), "%s/target", dir);
	if (lib) {
		err = lib_open(&r.w, FSNW_BACKEND_INOTIFY, 0, 0, 0);
		if (!err) {
			r.wid = fsnw_add(r.w, dir, OC_MASK, 0);
			err = r.wid > 0 ? 0 : r.wid;
		}
	} else if (strcmp(variant, "none")) {
		fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fd < 0 || inotify_add_watch(fd, parent ? dir : other, OC_MASK) < 0)
			err = -errno;
		r.fd = fd;
	}
	if (err) {
		bench_fail(b, variant, 1, m, "set-up: %s", strerror(-err));
		goto out;
	}
	if (parent) {
		r.mask = OC_MASK;
		r.prefix = "target";
		reader_start(b, &r, 1);
	}
	bench_busy(b, parent); /* the listener is a busy thread too */
	start = now_ns();
	for (long i = 0; i < N; i++) {
		uint64_t t0 = now_ns();
		int f = open(path, O_RDONLY | O_CLOEXEC);

		if (f < 0)
			bad++;
		else
			close(f);
		lat[i] = now_ns() - t0;
	}
	end = now_ns();
	if (parent)
		reader_stop(&r);
	if (bad) {
		bench_fail(b, variant, 1, m, "%ld opens failed", bad);
		ok = false;
	}
	/* inotify merges only identical consecutive events, and opens and
	 * closes alternate: every one of the 2N events must arrive. */
	if (parent && (r.counted != 2 * N || r.unexpected || r.overflows || r.err)) {
		bench_fail(b, variant, 1, m, "listener: %ld events for %ld opens+closes, %ld "
			   "unexpected, %ld overflows", r.counted, 2 * N, r.unexpected, r.overflows);
		ok = false;
	}
	if (!strcmp(variant, "other")) {
		struct raw_drained d;

		raw_drain(fd, &d);
		if (d.ignored || d.other || d.overflows) {
			bench_fail(b, variant, 1, m, "%ld events on the other directory",
				   d.ignored + d.other + d.overflows);
			ok = false;
		}
	}
	if (m > 0) {
		double ops = (double)N / ((double)(end - start) / 1e9);

		bench_record(b, variant, 1, m, "p50", (double)percentile_u64(lat, (size_t)N, 0.50),
			     "ns", ok);
		bench_record(b, variant, 1, m, "p99", (double)percentile_u64(lat, (size_t)N, 0.99),
			     "ns", ok);
		bench_record(b, variant, 1, m, "ops/s", ops, "ops/s", ok);
		if (parent)
			bench_record(b, variant, 1, m, "events", (double)r.events, "events", ok);
	}
out:
	bench_busy(b, 0);
	if (fd >= 0)
		close(fd);
	fsnw_close(r.w);
	reader_free(&r);
}

static int oc_run(struct bench *b)
{
	char dir[4096], other[4096];
	long N = opt.ops;
	uint64_t *lat;
	int warmup, rounds, err;

	bench_begin(b, "openclose", "workers");
	err = bench_mkdir(b, "oc-files", dir, sizeof(dir));
	if (!err)
		err = bench_mkdir(b, "oc-other", other, sizeof(other));
	if (!err)
		err = bench_make_files(b, dir, "target", 1, 0);
	if (!err) {
		char from[4200], to[4200];

		/* bench_make_files numbers its files: name the one file plainly. */
		snprintf(from, sizeof(from), "%s/target0", dir);
		snprintf(to, sizeof(to), "%s/target", dir);
		err = rename(from, to) < 0 ? -errno : 0;
	}
	if (!err)
		bench_note_fs(b, dir);
	lat = malloc((size_t)N * sizeof(*lat));
	if (err || !lat) {
		bench_fail(b, "none", 1, 0, "set-up: %s", strerror(err ? -err : ENOMEM));
		free(lat);
		bench_end(b);
		return 0;
	}
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 5, 5, 5), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int r = 0; r < warmup + rounds; r++)
		for (int v = 0; variants[v]; v++) {
			const char *name = variants[v];

			if (!cli_variant_on(b->o, name) ||
			    (strcmp(name, "none") && !bench_inotify_room(b, name, 1)))
				continue;
			bench_progress(b, "%s round %d/%d", name, r + 1, warmup + rounds);
			oc_round(b, name, dir, other, N, lat, r - warmup + 1);
		}
	bench_unpin_self(b);
	free(lat);
	bench_end(b);
	return 0;
}

static void oc_quick(struct bench *b, struct quick *q)
{
	const char *fs = bench_fs_of(b, "openclose");
	char label[96];

	snprintf(label, sizeof(label), "openclose p50, parent watch (%s)", fs ? fs : "?");
	quick_row(q, label, "ns", quick_need(q, "parent-raw", 1, "p50"),
		  NAN, quick_need(q, "parent-lib", 1, "p50"), NAN,
		  "p99 %.0f / %.0f; no watch p50 %.0f; events raw %.0f, lib %.0f (merged)",
		  quick_need(q, "parent-raw", 1, "p99"), quick_need(q, "parent-lib", 1, "p99"),
		  quick_need(q, "none", 1, "p50"), quick_need(q, "parent-raw", 1, "events"),
		  quick_need(q, "parent-lib", 1, "events"));
}

BENCH_SCENARIO(openclose) = {
	.name = "openclose",
	.order = 30,
	.summary = "open+close latency under a parent watch (parent-watch thread)",
	.flags = SCEN_MEASURES | SCEN_ROUNDS,
	.run = oc_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = oc_quick,
};
