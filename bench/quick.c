/* SPDX-License-Identifier: MIT */
/*
 * quick: every scenario at a small size, then one summary table: scenario,
 * raw, libinotifytools (where it does the same job), libfsnwatch, and the
 * ratio libfsnwatch / raw (for times, below 1 means the library is faster).
 * The per-scenario tables are printed with --verbose.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "scenarios.h"
#include "table.h"

static void row(struct table *t, const char *scen, const char *unit, double raw, double it,
		double lib, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void row(struct table *t, const char *scen, const char *unit, double raw, double it,
		double lib, const char *fmt, ...)
{
	char a[32], c[32], d[32], e[32], note[400];
	va_list ap;

	if (isnan(raw) && isnan(lib))
		return;
	va_start(ap, fmt);
	vsnprintf(note, sizeof(note), fmt, ap);
	va_end(ap);
	table_cell(t, "%s", scen);
	table_cell(t, "%s", unit);
	table_cell(t, "%s", fmt_num(a, sizeof(a), raw));
	table_cell(t, "%s", fmt_num(c, sizeof(c), it));
	table_cell(t, "%s", fmt_num(d, sizeof(d), lib));
	table_cell(t, "%s", fmt_num(e, sizeof(e), lib / raw));
	table_cell(t, "%s", note);
}

static double med(struct bench *b, const char *scen, const char *variant, long w,
		  const char *metric)
{
	return bench_median(b, scen, variant, w, metric);
}

static void churn_rows(struct bench *b, struct table *t)
{
	static const char *const libs[] = { "lib", "lib-batch", "lib-idle" };
	static const char *const topos[] = { "distinct", "shared" };
	const struct long_list *wl = &b->o->workers;
	long wmax = wl->v[wl->n - 1];
	char label[96], sm[40];

	row(t, "churn 1:1 add+remove, 1 thread", "ns/watch",
	    med(b, "churn", "bulk-raw", 1, "add+remove"), NAN,
	    med(b, "churn", "bulk-lib", 1, "add+remove"),
	    "%ld dirs, one group; batch calls %.0f; target ratio <= 1.10", b->o->bulk,
	    med(b, "churn", "bulk-lib-batch", 1, "add+remove"));
	row(t, "  same, + reading the IN_IGNOREDs", "ns/watch",
	    med(b, "churn", "bulk-raw", 1, "add+remove+drain"), NAN,
	    med(b, "churn", "bulk-lib", 1, "add+remove+drain"),
	    "the library reads them during the removes; raw reads them after");
	for (int topo = 0; topo < 2; topo++)
		for (int k = 0; k < wl->n; k++)
			for (int v = 0; v < 3; v++) {
				long W = wl->v[k];
				/* Which floor bounds the variant: see churn.c. */
				const char *fl = topo == 1 || v == 2 ? "floor" : "floor-new";
				double raw = med(b, "churn", "raw", W, topos[topo]);
				double lib = med(b, "churn", libs[v], W, topos[topo]);
				double flo = med(b, "churn", fl, W, topos[topo]);

				snprintf(label, sizeof(label), "churn %s W=%ld %s", topos[topo], W,
					 libs[v]);
				snprintf(sm, sizeof(sm), "%s.syscalls", topos[topo]);
				row(t, label, "ns/watch", raw, NAN, lib,
				    "%s %.0f ns: gets %.2f of its speedup; syscalls/watch %.2f "
				    "(floor %.2f)", fl, flo, flo / lib,
				    med(b, "churn", libs[v], W, sm), med(b, "churn", fl, W, sm));
			}
	/* Timing on vs off, the two handles taking turns in blocks within each
	 * round (timing-ab): separate runs drift by more than the difference. */
	{
		double off = med(b, "churn", "timing-ab", 1, "shared.off");
		double on = med(b, "churn", "timing-ab", 1, "shared.on");

		row(t, "churn timing on vs off, W=1 distinct", "ns/watch",
		    med(b, "churn", "timing-ab", 1, "distinct.off"), NAN,
		    med(b, "churn", "timing-ab", 1, "distinct.on"),
		    "raw col. = FSNW_OPEN_NO_STATS, interleaved; shared: off %.0f, on %.0f "
		    "(%+.1f%%); target within 3%%", off, on, (on / off - 1) * 100);
	}
	snprintf(label, sizeof(label), "tree add, %ld dirs", b->o->tree_dirs);
	row(t, label, "ms", med(b, "churn", "tree-raw", 1, "add"),
	    med(b, "churn", "tree-inotifytools", 1, "add"), med(b, "churn", "tree-lib", 1, "add"),
	    "libinotifytools/lib %.2f (target >= 2); target lib/raw <= 1.15; fanotify: %s",
	    med(b, "churn", "tree-inotifytools", 1, "add") / med(b, "churn", "tree-lib", 1, "add"),
	    bench_skipped(b, "churn", "tree-lib-fan") ? "skipped" : "measured");
	snprintf(label, sizeof(label), "mask-update W=%ld (kernel control)", wmax);
	row(t, label, "ns/watch", med(b, "churn", "mask-update", wmax, "update"), NAN, NAN,
	    "no library equivalent");
}

static void other_rows(struct bench *b, struct table *t)
{
	const struct long_list *cl = &b->o->clients;
	char label[96];

	row(t, "xattr flistxattr (kernel probe)", "ns/op", med(b, "xattr", "raw", 1, "flistxattr"),
	    NAN, NAN, "%ld calls a round", b->o->calls);
	for (int k = 0; k < cl->n; k++) {
		long X = cl->v[k];

		snprintf(label, sizeof(label), "parent-write X=%ld, writer cost", X);
		row(t, label, "ns/write", med(b, "parent-write", "parent-raw", X, "write"), NAN,
		    med(b, "parent-write", "parent-lib", X, "write"),
		    "no watch %.0f; events read raw %.0f, lib delivered %.0f (merged %.0f); "
		    "overflows %.0f/%.0f", med(b, "parent-write", "none", X, "write"),
		    med(b, "parent-write", "parent-raw", X, "events"),
		    med(b, "parent-write", "parent-lib", X, "events"),
		    med(b, "parent-write", "parent-lib", X, "merged"),
		    med(b, "parent-write", "parent-raw", X, "overflows"),
		    med(b, "parent-write", "parent-lib", X, "overflows"));
	}
	row(t, "openclose p50, parent watch", "ns", med(b, "openclose", "parent-raw", 1, "p50"),
	    NAN, med(b, "openclose", "parent-lib", 1, "p50"),
	    "p99 %.0f / %.0f; no watch p50 %.0f; events raw %.0f, lib %.0f (merged)",
	    med(b, "openclose", "parent-raw", 1, "p99"),
	    med(b, "openclose", "parent-lib", 1, "p99"), med(b, "openclose", "none", 1, "p50"),
	    med(b, "openclose", "parent-raw", 1, "events"),
	    med(b, "openclose", "parent-lib", 1, "events"));
	{
		long W = b->o->workers.v[0];

		snprintf(label, sizeof(label), "addwatch-children %ld, add", b->o->children);
		row(t, label, "ns", med(b, "addwatch-children", "raw", W, "add-avg"), NAN,
		    med(b, "addwatch-children", "lib", W, "add-avg"),
		    "max %.0f / %.0f; then close(group) %.0f ns vs fsnw_remove %.0f ns",
		    med(b, "addwatch-children", "raw", W, "add-max"),
		    med(b, "addwatch-children", "lib", W, "add-max"),
		    med(b, "addwatch-children", "raw", W, "remove-avg"),
		    med(b, "addwatch-children", "lib", W, "remove-avg"));
	}
}

static void merge_rows(struct bench *b, struct table *t, long N, long E)
{
	char label[96];

	for (int k = 0; k < b->o->depths.n; k++) {
		long D = b->o->depths.v[k];

		snprintf(label, sizeof(label), "merge queue, depth %ld", D);
		row(t, label, "ns/event", med(b, "merge", "linear", D, "enqueue"), NAN,
		    med(b, "merge", "queue", D, "enqueue"),
		    "raw col. = linear scan (pre-5.13 kernel); lib merged %.0f, dropped %.0f",
		    med(b, "merge", "queue", D, "merged"), med(b, "merge", "queue", D, "dropped"));
	}
	snprintf(label, sizeof(label), "merge seed stream, %ld files x2", N);
	row(t, label, "events", med(b, "merge", "kernel-limited", N, "events"), NAN,
	    med(b, "merge", "lib", N, "events"),
	    "raw col. = fanotify limited queue (+%.0f overflow); lib +%.0f overflow; "
	    "fanotify unlimited %.0f events", med(b, "merge", "kernel-limited", N, "overflows"),
	    med(b, "merge", "lib", N, "overflows"),
	    med(b, "merge", "kernel-unlimited", N, "events"));
	{
		double on = med(b, "merge", "read-lib", E, "read");
		double off = med(b, "merge", "read-lib-nostats", E, "read");

		row(t, "event read throughput", "ns/event", med(b, "merge", "read-raw", E, "read"),
		    med(b, "merge", "read-inotifytools", E, "read"), on,
		    "%ld unique events; timing off %.1f ns (on/off %+.1f%%, target within 3%%)",
		    E, off, (on / off - 1) * 100);
	}
}

int scen_quick(struct bench *b)
{
	const char *heads[] = { "scenario", "unit", "raw", "libinotifytools", "libfsnwatch",
				"ratio", "notes" };
	static int (*const all[])(struct bench *) = {
		scen_churn, scen_xattr, scen_parent_write,
		scen_openclose, scen_children, scen_merge,
	};
	uint64_t t0 = now_ns();
	struct table t;
	long N, E, kmax;

	b->tables = b->o->verbose;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		all[i](b);
	/* The sizes merge picked: see scen_merge and run_read. */
	N = read_sysctl("/proc/sys/fs/fanotify/max_queued_events");
	N = b->o->merge_files > 0 ? b->o->merge_files : (N > 0 ? N : 16384) + 1;
	kmax = read_sysctl("/proc/sys/fs/inotify/max_queued_events");
	E = kmax > 0 && b->o->read_events >= kmax ? kmax - 1 : b->o->read_events;
	table_init(&t, "llrrrrl", heads);
	churn_rows(b, &t);
	other_rows(b, &t);
	merge_rows(b, &t, N, E);
	printf("\nfsnw-bench quick: one run on %s, %d CPUs, %.0f s (medians; ratio = libfsnwatch "
	       "/ raw, below 1 is faster)\n", b->kernel, b->ncpu, (double)(now_ns() - t0) / 1e9);
	table_print(&t, stdout);
	table_free(&t);
	for (size_t i = 0; i < b->nskips; i++)
		printf("skipped %s %s: %s\n", b->skips[i].scenario, b->skips[i].variant,
		       b->skips[i].reason);
	if (b->failures)
		printf("%d checks FAILED: see the FAIL lines on stderr\n", b->failures);
	else
		printf("every round passed its checks\n");
	return 0;
}
