/* SPDX-License-Identifier: MIT */
/*
 * merge (the fanotify merge series, after LTP's fanotify05). The stream: N events on N
 * unique names (the "create" pass: nothing can merge), then one more event
 * on each name in the same order (the "open" pass: each may merge).
 *
 *  queue / linear
 *          the library's queue driven through the public API against a
 *          linear-scan queue, at each depth (mergequeue.c).
 *  dram    one dependent random load from memory, the wall the queue meets
 *          at depth 1M, measured in the same run (dram.c).
 *  kernel-limited / kernel-unlimited
 *          the stream made by the kernel: files made once, then opened
 *          O_RDWR | O_CREAT and O_RDONLY each round under a fanotify
 *          FAN_CLASS_NOTIF mount mark, as LTP's second iteration
 *          (mergekernel.c).
 *  lib     the same passes over the same kind of files through the library
 *          (inotify backend, a directory watch, queue capacity N - 1):
 *          exactly one overflow, and the events in creation order. Events
 *          are counted as LTP counts them, the overflow included.
 *  read-*  event read throughput: a kernel queue of E unique events read
 *          raw, through fsnw_read with timing on and off, and through
 *          libinotifytools.
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
#include "itools.h"
#include "merge.h"
#include "quick.h"
#include "svg.h"
#include "table.h"

static struct merge_opts {
	struct long_list depths;
	long linear_max;
	long merge_files;
	long read_events;
	long dram_mib;
} opt;

#define F(field) offsetof(struct merge_opts, field)
static const struct bench_option options[] = {
	{ .flag = "depths", .arg = "LIST", .type = OPT_LIST, .off = F(depths), .min = 1,
	  .max = 1L << 26, .preset = { "256,1k", "1k,16k,1M", "1k,16k,1M", "1k,16k,1M" },
	  .help = "queue depths" },
	{ .flag = "linear-max-depth", .arg = "D", .type = OPT_LONG, .off = F(linear_max),
	  .max = 1L << 26, .preset = { "16384", "16384", "16384", "16384" },
	  .help = "deepest linear-scan queue run" },
	{ .flag = "merge-files", .arg = "N", .type = OPT_LONG, .off = F(merge_files), .min = 2,
	  .max = 1 << 22, .help = "files of the LTP stream (one more than "
	  "fs.fanotify.max_queued_events)" },
	{ .flag = "read-events", .arg = "E", .type = OPT_LONG, .off = F(read_events), .min = 1,
	  .max = 1 << 22, .preset = { "1000", "16000", "16000", "16000" },
	  .help = "unique events of the read throughput" },
	{ .flag = "dram-mib", .arg = "MIB", .type = OPT_LONG, .off = F(dram_mib), .min = 1,
	  .max = 1 << 16, .preset = { "16", "256", "256", "256" },
	  .help = "region of the random DRAM load" },
	{ 0 },
};
#undef F

static const char *const variants[] = {
	"queue", "linear", "dram", "lib", "kernel-limited", "kernel-unlimited", "read-raw",
	"read-lib", "read-lib-nostats", "read-inotifytools", NULL,
};

int names_make(struct names *nm, long n, const char *prefix)
{
	size_t cap = (size_t)n * 24, used = 0;

	nm->n = n;
	nm->buf = malloc(cap);
	nm->off = malloc((size_t)n * sizeof(*nm->off));
	nm->len = malloc((size_t)n);
	if (!nm->buf || !nm->off || !nm->len) {
		names_free(nm);
		return -ENOMEM;
	}
	for (long i = 0; i < n; i++) {
		int l = snprintf(nm->buf + used, cap - used, "%s%ld", prefix, i);

		nm->off[i] = (uint32_t)used;
		nm->len[i] = (uint8_t)l;
		used += (size_t)l + 1;
	}
	return 0;
}

void names_free(struct names *nm)
{
	free(nm->buf);
	free(nm->off);
	free(nm->len);
	memset(nm, 0, sizeof(*nm));
}

/* ---- LTP's stream through the library ---- */

static int touch_all(const char *dir, const struct names *nm, int flags, struct fsnw *w)
{
	char path[4096];

	for (long i = 0; i < nm->n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, NAME(nm, i));
		fd = open(path, flags | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		close(fd);
		/* Keep the kernel queue from overflowing: the library's queue is
		 * what is measured here, as a reader that keeps up would use it. */
		if (w && (i & 255) == 255)
			fsnw_pump(w);
	}
	return 0;
}

static void lib_round(struct bench *b, const char *dir, const struct names *nm, int m)
{
	long N = nm->n, next = 0, delivered = 0, overflows = 0;
	struct fsnw_event ev[1024];
	struct fsnw_stats st;
	struct fsnw *w;
	uint64_t t0, t1, t2, sum = 0;
	bool order = true, late = false, ok;
	int err, n, wid;

	err = lib_open(&w, FSNW_BACKEND_INOTIFY, 0, (uint32_t)(N - 1), 0);
	if (err < 0) {
		bench_fail(b, "lib", N, m, "fsnw_open: %s", strerror(-err));
		return;
	}
	wid = fsnw_add(w, dir, FSNW_OPEN, 0);
	if (wid <= 0) {
		bench_fail(b, "lib", N, m, "fsnw_add: %s", strerror(-wid));
		fsnw_close(w);
		return;
	}
	/* LTP's two passes; the files exist (run_lib_stream made them). */
	t0 = now_ns();
	err = touch_all(dir, nm, O_RDWR | O_CREAT, w);
	t1 = now_ns();
	if (!err)
		err = touch_all(dir, nm, O_RDONLY, w);
	t2 = now_ns();
	fsnw_pump(w);
	while ((n = fsnw_read(w, ev, 1024, 0)) > 0) {
		for (int k = 0; k < n; k++) {
			if (ev[k].mask & FSNW_OVERFLOW) {
				overflows++;
				continue;
			}
			late |= overflows > 0;
			delivered++;
			sum += ev[k].count;
			if (ev[k].wid != wid || next >= N || !ev[k].name ||
			    strcmp(ev[k].name, NAME(nm, next)))
				order = false;
			next++;
		}
	}
	lib_stats(w, &st);
	ok = !err && n == 0 && order && !late && overflows == 1 && st.overflows_kernel == 0 &&
	     (uint64_t)delivered == (uint64_t)N - 1;
	if (!ok)
		bench_fail(b, "lib", N, m, "%ld events, %ld overflows (%s), %llu kernel "
			   "overflows, order %s%s%s", delivered, overflows,
			   late ? "not at the tail" : "expected 1 at the tail",
			   (unsigned long long)st.overflows_kernel, order ? "kept" : "BROKEN",
			   err ? ", " : "", err ? strerror(-err) : "");
	if (m > 0) {
		bench_record(b, "lib", N, m, "create", (double)(t1 - t0) / 1e6, "ms", ok);
		bench_record(b, "lib", N, m, "open", (double)(t2 - t1) / 1e6, "ms", ok);
		bench_record(b, "lib", N, m, "events", (double)(delivered + overflows), "events",
			     ok);
		bench_record(b, "lib", N, m, "merged", (double)st.events_merged, "events", ok);
		bench_record(b, "lib", N, m, "dropped", (double)st.dropped_queue_full, "events",
			     ok);
		bench_record(b, "lib", N, m, "overflows", (double)overflows, "events", ok);
	}
	fsnw_close(w);
	(void)sum;
}

static void run_lib_stream(struct bench *b, long N)
{
	char dir[4096];
	struct names nm;
	int warmup, rounds, err;

	if (!cli_variant_on(b->o, "lib") || !bench_inotify_room(b, "lib", 1))
		return;
	err = bench_mkdir(b, "merge-lib", dir, sizeof(dir));
	if (err || names_make(&nm, N, "fname_") < 0) {
		bench_fail(b, "lib", N, 0, "set-up: %s", strerror(err ? -err : ENOMEM));
		return;
	}
	/* Made once, before the watch: no round's first pass creates a file. */
	err = bench_make_files(b, dir, "fname_", N, 0);
	if (err) {
		bench_fail(b, "lib", N, 0, "making %ld files: %s", N, strerror(-err));
		names_free(&nm);
		return;
	}
	bench_trace(b, "lib: %ld files made before the rounds; each round opens them "
		    "O_RDWR|O_CREAT, then O_RDONLY", N);
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 1, 2, 3, 3), &warmup,
		     &rounds);
	for (int r = 0; r < warmup + rounds; r++) {
		bench_progress(b, "lib round %d/%d", r + 1, warmup + rounds);
		lib_round(b, dir, &nm, r - warmup + 1);
	}
	bench_unlink_files(b, dir, "fname_", N);
	names_free(&nm);
}

/* ---- read throughput ---- */

static bool name_is(const char *got, const struct names *nm, long i)
{
	return got && i < nm->n && !strcmp(got, NAME(nm, i));
}

static void read_round(struct bench *b, const char *variant, const char *dir,
		       const struct names *nm, int m)
{
	static char buf[EVBUF_SIZE] __attribute__((aligned(8)));
	long E = nm->n, got = 0, bad = 0, over = 0;
	struct fsnw_event ev[256];
	struct fsnw *w = NULL;
	uint64_t t0 = 0, t1 = 0;
	int fd = -1, err = 0;
	bool lib = !strncmp(variant, "read-lib", 8), itools = !strcmp(variant, "read-inotifytools");

	if (lib) {
		err = lib_open(&w, FSNW_BACKEND_INOTIFY,
			       strstr(variant, "nostats") ? FSNW_OPEN_NO_STATS : 0,
			       (uint32_t)E + 16, 0);
		if (!err) {
			err = fsnw_add(w, dir, FSNW_OPEN, 0);
			err = err > 0 ? 0 : err;
		}
	} else if (itools) {
		err = itools_init();
		if (!err)
			err = itools_watch(dir, IN_OPEN);
	} else {
		fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		err = fd < 0 || inotify_add_watch(fd, dir, IN_OPEN) < 0 ? -errno : 0;
	}
	if (!err)
		err = touch_all(dir, nm, O_RDONLY, NULL);
	if (err) {
		bench_fail(b, variant, E, m, "set-up: %s", strerror(-err));
		goto out;
	}
	/* Every variant compares each name with the expected one: the same work
	 * on top of reading, so the difference is the reading. */
	t0 = now_ns();
	if (lib) {
		int n;

		while (got < E && (n = fsnw_read(w, ev, 256, 0)) > 0)
			for (int k = 0; k < n; k++) {
				if (ev[k].mask & FSNW_OVERFLOW)
					over++;
				else if (!name_is(ev[k].name, nm, got++) || ev[k].count != 1)
					bad++;
			}
	} else if (itools) {
		uint32_t mask;
		const char *name;

		while (got < E && itools_next(&mask, &name) > 0) {
			if (mask & IN_Q_OVERFLOW)
				over++;
			else if (!name_is(name, nm, got++))
				bad++;
		}
	} else {
		long n;

		while (got < E && (n = raw_read(fd, buf, sizeof(buf))) > 0)
			for_each_inotify_event(e, buf, n) {
				if (e->mask & IN_Q_OVERFLOW)
					over++;
				else if (!name_is(e->len ? e->name : NULL, nm, got++))
					bad++;
			}
	}
	t1 = now_ns();
	if (got != E || bad || over)
		bench_fail(b, variant, E, m, "%ld of %ld events, %ld wrong, %ld overflows", got, E,
			   bad, over);
	if (m > 0)
		bench_record(b, variant, E, m, "read", (double)(t1 - t0) / E, "ns/event",
			     got == E && !bad && !over);
out:
	if (fd >= 0)
		close(fd);
	fsnw_close(w);
	if (itools)
		itools_cleanup();
}

/* Events for the read throughput: what was asked, if the kernel queue holds it. */
static long read_size(void)
{
	long E = opt.read_events;
	long kmax = read_sysctl("/proc/sys/fs/inotify/max_queued_events");

	return kmax > 0 && E >= kmax ? kmax - 1 : E;
}

static void run_read(struct bench *b, long E)
{
	static const char *const names[] = { "read-raw", "read-lib", "read-lib-nostats",
					     "read-inotifytools" };
	char dir[4096], why[256];
	struct names nm = { 0 };
	int warmup, rounds, err;
	bool any = false;

	for (int v = 0; v < 4; v++)
		any |= cli_variant_on(b->o, names[v]);
	if (!any)
		return;
	if (E != opt.read_events)
		fprintf(stderr, "merge: read throughput uses %ld events: "
			"fs.inotify.max_queued_events holds no more\n", E);
	err = bench_mkdir(b, "merge-read", dir, sizeof(dir));
	if (!err)
		err = names_make(&nm, E, "r") < 0 ? -ENOMEM : 0;
	if (!err)
		err = bench_make_files(b, dir, "r", E, 0);
	if (err) {
		bench_fail(b, "read-raw", E, 0, "set-up: %s", strerror(-err));
		names_free(&nm);
		return;
	}
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 20, 20, 20), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	/* Interleaved by round, so a slow minute of the machine hits every
	 * variant alike, and in an order that turns each round: the variant
	 * after another pays for that one's teardown (the kernel's, in its
	 * workers), which in a fixed order made the third look 5% slower. */
	for (int r = 0; r < warmup + rounds; r++)
		for (int k = 0; k < 4; k++) {
			int v = (k + r) % 4;

			if (!cli_variant_on(b->o, names[v]) || bench_skipped(b, "merge", names[v]))
				continue;
			if (v == 3 && !itools_available(why, sizeof(why))) {
				bench_skip(b, names[v], "%s", why);
				continue;
			}
			if (!bench_inotify_room(b, names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", names[v], r + 1, warmup + rounds);
			read_round(b, names[v], dir, &nm, r - warmup + 1);
		}
	bench_unpin_self(b);
	names_free(&nm);
}

/* LTP's N: one more than the kernel queue holds, unless --merge-files says. */
static long seed_files(void)
{
	long max = read_sysctl("/proc/sys/fs/fanotify/max_queued_events");

	if (opt.merge_files > 0)
		return opt.merge_files;
	return (max > 0 ? max : 16384) + 1;
}

static void merge_summary(struct bench *b, long N, long E)
{
	const char *heads[] = { "depth", "queue ns/ev", "linear ns/ev", "linear/queue",
				"queue merged", "queue dropped", "linear merged" };
	const struct long_list *dl = &opt.depths;
	struct table t;
	char x[32], y[32], z[32];
	double lo, hi, raw, lib, off, it;

	table_init(&t, "rrrrrrr", heads);
	for (int k = 0; k < dl->n; k++) {
		long D = dl->v[k];
		double q = bench_median(b, "merge", "queue", D, "enqueue");
		double l = bench_median(b, "merge", "linear", D, "enqueue");

		table_cell(&t, "%ld", D);
		table_cell(&t, "%s", fmt_num(x, sizeof(x), q));
		table_cell(&t, "%s", fmt_num(y, sizeof(y), l));
		table_cell(&t, "%s", fmt_num(z, sizeof(z), l / q));
		table_cell(&t, "%s", fmt_num(x, sizeof(x), bench_median(b, "merge", "queue", D,
									 "merged")));
		table_cell(&t, "%s", fmt_num(y, sizeof(y), bench_median(b, "merge", "queue", D,
									 "dropped")));
		table_cell(&t, "%s", fmt_num(z, sizeof(z), bench_median(b, "merge", "linear", D,
									 "merged")));
	}
	printf("\n-- merge: the library's queue (through fsnw_pump) vs a linear scan of capacity "
	       "= depth (medians; both passes) --\n");
	table_print(&t, stdout);
	table_free(&t);
	lo = bench_median(b, "merge", "queue", dl->v[0], "enqueue");
	hi = bench_median(b, "merge", "queue", dl->v[dl->n - 1], "enqueue");
	if (dl->n > 1 && !isnan(lo) && !isnan(hi))
		printf("queue: depth %ld costs %.2fx depth %ld per enqueue (target at most 1.5x)\n",
		       dl->v[dl->n - 1], hi / lo, dl->v[0]);
	lo = bench_median(b, "merge", "dram", opt.dram_mib, "load");
	if (!isnan(lo) && !isnan(hi))
		printf("random DRAM load (%ld MiB chase): %.1f ns; an enqueue at depth %ld costs "
		       "%.2f of them (target at most 0.5)\n", opt.dram_mib, lo, dl->v[dl->n - 1],
		       hi / lo);
	lo = bench_median(b, "merge", "kernel-limited", N, "events");
	hi = bench_median(b, "merge", "kernel-limited", N, "overflows");
	if (!isnan(lo))
		printf("kernel, limited queue: %.0f events (%.0f + %.0f overflow) for %ld files "
		       "opened twice\n", lo, lo - hi, hi, N);
	lo = bench_median(b, "merge", "kernel-unlimited", N, "events");
	if (!isnan(lo))
		printf("kernel, unlimited queue: %.0f events for %ld files opened twice "
		       "(%.0f merged)\n", lo, N, 2.0 * N - lo);
	raw = bench_median(b, "merge", "read-raw", E, "read");
	lib = bench_median(b, "merge", "read-lib", E, "read");
	off = bench_median(b, "merge", "read-lib-nostats", E, "read");
	it = bench_median(b, "merge", "read-inotifytools", E, "read");
	if (!isnan(raw) && !isnan(lib))
		printf("event read: raw %.1f, libinotifytools %.1f, library %.1f ns/event "
		       "(library/raw %.2f); timing on vs off %+.2f%% (target within 3%%)\n",
		       raw, it, lib, lib / raw, (lib / off - 1) * 100);
}

static void merge_chart(struct bench *b)
{
	struct chart *c = chart_new("merge: enqueue cost on a merge-heavy stream",
				    "queue depth (events)", "ns per enqueue", true, true);

	for (int k = 0; k < opt.depths.n; k++) {
		long D = opt.depths.v[k];

		chart_point(c, "queue (hashed, lib)", (double)D,
			    bench_median(b, "merge", "queue", D, "enqueue"));
		chart_point(c, "linear scan (pre-5.13)", (double)D,
			    bench_median(b, "merge", "linear", D, "enqueue"));
	}
	if (c && c->nseries)
		bench_add_chart(b, c);
	else
		chart_free(c);
}

static int merge_run(struct bench *b)
{
	long N = seed_files();
	int warmup, rounds;

	bench_begin(b, "merge", "depth");
	merge_queues(b, &opt.depths, opt.linear_max);
	merge_dram(b, opt.dram_mib);
	run_lib_stream(b, N);
	bench_rounds(b, bench_pick(b, 0, 0, 1, 1), (int)bench_pick(b, 1, 1, 3, 3), &warmup,
		     &rounds);
	if (cli_variant_on(b->o, "kernel-limited") || cli_variant_on(b->o, "kernel-unlimited"))
		merge_kernel(b, N, warmup, rounds);
	run_read(b, read_size());
	merge_chart(b);
	{
		bool tables = b->tables;

		bench_end(b);
		if (tables)
			merge_summary(b, N, read_size());
	}
	return 0;
}

static void merge_quick(struct bench *b, struct quick *q)
{
	const struct long_list *dl = &opt.depths;
	long N = seed_files(), E = read_size(), deepest = dl->v[dl->n - 1];
	double dram, deep;
	char label[96];

	for (int k = 0; k < dl->n; k++) {
		long D = dl->v[k];
		double linear = D > opt.linear_max ? quick_may(q, "linear", D, "enqueue") :
						     quick_need(q, "linear", D, "enqueue");

		snprintf(label, sizeof(label), "merge queue, depth %ld", D);
		quick_row(q, label, "ns/event", linear, NAN, quick_need(q, "queue", D, "enqueue"),
			  NAN, "raw col. = linear scan (pre-5.13 kernel); lib merged %.0f, dropped "
			  "%.0f, through fsnw_pump", quick_need(q, "queue", D, "merged"),
			  quick_need(q, "queue", D, "dropped"));
	}
	/* Beside the deepest queue: this machine's memory wall, from the same run. */
	dram = quick_need(q, "dram", opt.dram_mib, "load");
	deep = quick_may(q, "queue", deepest, "enqueue");
	quick_row(q, "random DRAM load", "ns/load", dram, NAN, NAN, NAN,
		  "dependent pointer chase over %ld MiB; an enqueue at depth %ld costs %.2f "
		  "loads (target <= 0.5)", opt.dram_mib, deepest, deep / dram);
	snprintf(label, sizeof(label), "merge LTP stream, %ld files x2", N);
	{
		double kev = quick_need(q, "kernel-limited", N, "events");
		double kov = quick_need(q, "kernel-limited", N, "overflows");
		double lev = quick_need(q, "lib", N, "events");
		double lov = quick_need(q, "lib", N, "overflows");

		quick_row(q, label, "events", kev, NAN, lev, NAN,
			  "events incl. the overflow, as LTP: raw col. = fanotify limited queue "
			  "%.0f + %.0f overflow, lib %.0f + %.0f; fanotify unlimited %.0f events",
			  kev - kov, kov, lev - lov, lov,
			  quick_need(q, "kernel-unlimited", N, "events"));
	}
	{
		double on = quick_need(q, "read-lib", E, "read");
		double off = quick_need(q, "read-lib-nostats", E, "read");

		quick_row(q, "event read throughput", "ns/event",
			  quick_need(q, "read-raw", E, "read"),
			  quick_need(q, "read-inotifytools", E, "read"), on, NAN,
			  "%ld unique events; timing off %.1f ns (on/off %+.1f%%, target within "
			  "3%%)", E, off, (on / off - 1) * 100);
	}
}

BENCH_SCENARIO(merge) = {
	.name = "merge",
	.order = 50,
	.summary = "merging event queues, kernel and user space (fanotify merge series)",
	.flags = SCEN_MEASURES | SCEN_ROUNDS | SCEN_CHARTS,
	.run = merge_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = merge_quick,
};
