/* SPDX-License-Identifier: MIT */
/*
 * merge (seed 004, after LTP's fanotify05). The stream: N events on N
 * unique names (the "create" pass: nothing can merge), then one more event
 * on each name in the same order (the "open" pass: each may merge).
 *
 *  queue   the library's user-space queue (lib/queue.c) fed that stream at
 *          depth D (capacity D, D unique names), against
 *  linear  a plain linear-scan queue of the same capacity (linq.c, the
 *          pre-2021 kernel algorithm): ns per enqueue, merged, dropped.
 *  kernel-limited / kernel-unlimited
 *          the stream made by the kernel: files created then opened under a
 *          fanotify FAN_CLASS_NOTIF mount mark (mergekernel.c).
 *  lib     the same files through the library (inotify backend, a
 *          directory watch, queue capacity N - 1): exactly one overflow, and
 *          the events in creation order.
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
#include "linq.h"
#include "queue.h"
#include "scenarios.h"
#include "strref.h"
#include "svg.h"
#include "table.h"

const char *const merge_variant_names[] = {
	"queue", "linear", "lib", "kernel-limited", "kernel-unlimited", "read-raw", "read-lib",
	"read-lib-nostats", "read-inotifytools", NULL,
};

void merge_kernel(struct bench *b, long N, int warmup, int rounds);

/* Names fname_0 ... fname_{n-1}, packed. */
struct names {
	long n;
	char *buf;
	uint32_t *off;
	uint8_t *len;
};

static int names_make(struct names *nm, long n, const char *prefix)
{
	size_t cap = (size_t)n * 24, used = 0;

	nm->n = n;
	nm->buf = malloc(cap);
	nm->off = malloc((size_t)n * sizeof(*nm->off));
	nm->len = malloc((size_t)n);
	if (!nm->buf || !nm->off || !nm->len)
		return -ENOMEM;
	for (long i = 0; i < n; i++) {
		int l = snprintf(nm->buf + used, cap - used, "%s%ld", prefix, i);

		nm->off[i] = (uint32_t)used;
		nm->len[i] = (uint8_t)l;
		used += (size_t)l + 1;
	}
	return 0;
}

static void names_free(struct names *nm)
{
	free(nm->buf);
	free(nm->off);
	free(nm->len);
	memset(nm, 0, sizeof(*nm));
}

#define NAME(nm, i) ((nm)->buf + (nm)->off[i])

struct qresult {
	double fill, merge, all;
	uint64_t queued, merged, dropped, overflows;
	bool ok;
};

static void record_q(struct bench *b, const char *variant, long D, int m, const struct qresult *r)
{
	if (m <= 0)
		return;
	bench_record(b, variant, D, m, "enqueue", r->all, "ns/event", r->ok);
	bench_record(b, variant, D, m, "fill", r->fill, "ns/event", r->ok);
	bench_record(b, variant, D, m, "merge", r->merge, "ns/event", r->ok);
	bench_record(b, variant, D, m, "merged", (double)r->merged, "events", r->ok);
	bench_record(b, variant, D, m, "dropped", (double)r->dropped, "events", r->ok);
	bench_record(b, variant, D, m, "overflows", (double)r->overflows, "events", r->ok);
}

/*
 * The library's queue at depth D; its order and counts are checked after.
 * The queue lives across the rounds, as a daemon's does: the warm-up round
 * pays for growing it, measured rounds run in the steady state the library
 * is built for (slots and name buffers reused, no allocation per event).
 */
static struct qresult queue_round(struct bench *b, struct queue *q, const struct names *nm,
				  long D, int m)
{
	struct qresult r = { .ok = true };
	struct qowner owner = { .wid = 1 };
	struct strref *path = strref_new("/bench", 6);
	struct fsnw_event *ev = malloc(4096 * sizeof(*ev));
	struct queue_counters c0 = *queue_counters(q);
	const struct queue_counters *c;
	uint64_t t0, t1, t2, sum = 0;
	long next = 0, popped = 0, overflows = 0;
	bool late = false, order = true;
	size_t n;

	if (!path || !ev)
		bench_fatal(b, "out of memory");
	t0 = now_ns();
	for (long i = 0; i < D; i++)
		queue_push(q, &owner, path, FSNW_OPEN, 0, NAME(nm, i), nm->len[i], 0);
	t1 = now_ns();
	for (long i = 0; i < D; i++)
		queue_push(q, &owner, path, FSNW_OPEN, 0, NAME(nm, i), nm->len[i], 0);
	t2 = now_ns();
	c = queue_counters(q);
	r.queued = c->queued - c0.queued;
	r.merged = c->merged - c0.merged;
	r.dropped = c->dropped_full - c0.dropped_full;
	while ((n = queue_pop(q, ev, 4096)) > 0) {
		for (size_t k = 0; k < n; k++) {
			if (ev[k].mask & FSNW_OVERFLOW) {
				overflows++;
				continue;
			}
			late |= overflows > 0;
			popped++;
			sum += ev[k].count;
			if (next >= D || !ev[k].name || strcmp(ev[k].name, NAME(nm, next)))
				order = false;
			next++;
		}
		queue_release_delivered(q);
	}
	r.overflows = (uint64_t)overflows;
	r.fill = (double)(t1 - t0) / D;
	r.merge = (double)(t2 - t1) / D;
	r.all = (double)(t2 - t0) / (2.0 * D);
	if (r.queued + r.merged + r.dropped != 2 * (uint64_t)D || (uint64_t)popped != r.queued ||
	    sum != r.queued + r.merged || !order || late || overflows != (r.dropped ? 1 : 0) ||
	    queue_depth(q) != 0) {
		bench_fail(b, "queue", D, m, "%llu queued + %llu merged + %llu dropped of %ld; "
			   "%ld popped, counts sum %llu, order %s, %ld overflows%s",
			   (unsigned long long)r.queued, (unsigned long long)r.merged,
			   (unsigned long long)r.dropped, 2 * D, popped, (unsigned long long)sum,
			   order ? "kept" : "BROKEN", overflows, late ? " (not at the tail)" : "");
		r.ok = false;
	}
	strref_put(path);
	free(ev);
	return r;
}

/* The linear queue, also reused across rounds (emptied after each). */
static struct qresult linear_round(struct bench *b, struct linq *lq, const struct names *nm,
				   long D, int m)
{
	struct qresult r = { .ok = true };
	static const char owner;
	struct linq q = *lq;
	uint64_t t0, t1, t2, sum = 0;
	bool order = true;

	q.n = 0;
	q.overflow = false;
	q.queued = q.merged = q.dropped = 0;
	t0 = now_ns();
	for (long i = 0; i < D; i++) {
		linq_push(&q, &owner, FSNW_OPEN, NAME(nm, i), nm->len[i]);
		if (!(i & 1023))
			bench_progress(b, "linear D=%ld: fill %ld/%ld", D, i, D);
	}
	t1 = now_ns();
	for (long i = 0; i < D; i++) {
		linq_push(&q, &owner, FSNW_OPEN, NAME(nm, i), nm->len[i]);
		if (!(i & 1023))
			bench_progress(b, "linear D=%ld: merge %ld/%ld", D, i, D);
	}
	t2 = now_ns();
	for (size_t k = 0; k < q.n; k++) {
		sum += q.e[k].count;
		order &= !strcmp(q.e[k].name, NAME(nm, (long)k));
	}
	r.queued = q.queued;
	r.merged = q.merged;
	r.dropped = q.dropped;
	r.overflows = q.overflow;
	r.fill = (double)(t1 - t0) / D;
	r.merge = (double)(t2 - t1) / D;
	r.all = (double)(t2 - t0) / (2.0 * D);
	/* A full scan finds every earlier event: all of the second pass merges. */
	if (r.queued != (uint64_t)D || r.merged != (uint64_t)D || r.dropped || !order ||
	    sum != 2 * (uint64_t)D) {
		bench_fail(b, "linear", D, m, "%llu queued, %llu merged, %llu dropped of %ld; "
			   "order %s", (unsigned long long)r.queued, (unsigned long long)r.merged,
			   (unsigned long long)r.dropped, 2 * D, order ? "kept" : "BROKEN");
		r.ok = false;
	}
	*lq = q;
	return r;
}

static void run_queues(struct bench *b)
{
	int warmup, rounds;

	bench_rounds(b, cli_pick(b->o, 0, 1, 1, 1), (int)cli_pick(b->o, 2, 5, 5, 5), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int k = 0; k < b->o->depths.n; k++) {
		long D = b->o->depths.v[k];
		struct names nm;

		if (!cli_variant_on(b->o, "queue") && !cli_variant_on(b->o, "linear"))
			break;
		if (names_make(&nm, D, "fname_") < 0)
			bench_fatal(b, "out of memory");
		for (int v = 0; v < 2; v++) {
			const char *name = v ? "linear" : "queue";
			struct queue *q = NULL;
			struct linq lq = { 0 };

			if (!cli_variant_on(b->o, name))
				continue;
			if (v && D > b->o->linear_max) {
				bench_progress(b, "linear D=%ld skipped", D);
				fprintf(stderr, "merge: linear at depth %ld not run: a full scan per "
					"event costs ~%.0e comparisons; --linear-max-depth %ld to "
					"force\n", D, (double)D * (double)D, D);
				continue;
			}
			if (v ? linq_init(&lq, (size_t)D) < 0 : !(q = queue_new((uint32_t)D, 1)))
				bench_fatal(b, "out of memory");
			for (int r = 0; r < warmup + rounds; r++) {
				struct qresult res;

				bench_progress(b, "%s D=%ld round %d/%d", name, D, r + 1,
					       warmup + rounds);
				res = v ? linear_round(b, &lq, &nm, D, r - warmup + 1) :
					  queue_round(b, q, &nm, D, r - warmup + 1);
				record_q(b, name, D, r - warmup + 1, &res);
			}
			queue_free(q);
			linq_fini(&lq);
		}
		names_free(&nm);
	}
	bench_unpin_self(b);
}

/* ---- the seed's stream through the library ---- */

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
	t0 = now_ns();
	err = touch_all(dir, nm, O_RDWR | O_CREAT, w);
	t1 = now_ns();
	if (!err)
		err = touch_all(dir, nm, O_RDWR, w);
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
		bench_record(b, "lib", N, m, "events", (double)delivered, "events", ok);
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
	bench_rounds(b, cli_pick(b->o, 0, 1, 1, 1), (int)cli_pick(b->o, 1, 2, 3, 3), &warmup,
		     &rounds);
	for (int r = 0; r < warmup + rounds; r++) {
		bench_progress(b, "lib round %d/%d", r + 1, warmup + rounds);
		lib_round(b, dir, &nm, r - warmup + 1);
		bench_unlink_files(b, dir, "fname_", N);
	}
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
static long read_size(const struct bench *b)
{
	long E = b->o->read_events;
	long kmax = read_sysctl("/proc/sys/fs/inotify/max_queued_events");

	return kmax > 0 && E >= kmax ? kmax - 1 : E;
}

static void run_read(struct bench *b, long E)
{
	static const char *const names[] = { "read-raw", "read-lib", "read-lib-nostats",
					     "read-inotifytools" };
	char dir[4096], why[256];
	struct names nm;
	int warmup, rounds, err;
	bool any = false;

	for (int v = 0; v < 4; v++)
		any |= cli_variant_on(b->o, names[v]);
	if (!any)
		return;
	if (E != b->o->read_events)
		fprintf(stderr, "merge: read throughput uses %ld events: "
			"fs.inotify.max_queued_events holds no more\n", E);
	err = bench_mkdir(b, "merge-read", dir, sizeof(dir));
	if (!err)
		err = names_make(&nm, E, "r") < 0 ? -ENOMEM : 0;
	if (!err)
		err = bench_make_files(b, dir, "r", E, 0);
	if (err) {
		bench_fail(b, "read-raw", E, 0, "set-up: %s", strerror(-err));
		return;
	}
	bench_rounds(b, cli_pick(b->o, 0, 1, 1, 1), (int)cli_pick(b->o, 2, 20, 20, 20), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	/* Interleaved by round, so a slow minute of the machine hits every variant alike. */
	for (int r = 0; r < warmup + rounds; r++)
		for (int v = 0; v < 4; v++) {
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

static void merge_summary(struct bench *b, long N, long E)
{
	const char *heads[] = { "depth", "queue ns/ev", "linear ns/ev", "linear/queue",
				"queue merged", "queue dropped", "linear merged" };
	struct table t;
	char x[32], y[32], z[32];
	double lo, hi, raw, lib, off, it;

	table_init(&t, "rrrrrrr", heads);
	for (int k = 0; k < b->o->depths.n; k++) {
		long D = b->o->depths.v[k];
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
	printf("\n-- merge: the library's queue vs a linear scan (medians; both passes, "
	       "capacity = depth) --\n");
	table_print(&t, stdout);
	table_free(&t);
	lo = bench_median(b, "merge", "queue", b->o->depths.v[0], "enqueue");
	hi = bench_median(b, "merge", "queue", b->o->depths.v[b->o->depths.n - 1], "enqueue");
	if (b->o->depths.n > 1 && !isnan(lo) && !isnan(hi))
		printf("queue: depth %ld costs %.2fx depth %ld per enqueue (target at most 1.5x)\n",
		       b->o->depths.v[b->o->depths.n - 1], hi / lo, b->o->depths.v[0]);
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
	struct chart *c = chart_new("merge: enqueue cost on a merge-heavy stream (capacity = "
				    "depth)", "queue depth (events)", "ns per enqueue", true, true);

	for (int k = 0; k < b->o->depths.n; k++) {
		long D = b->o->depths.v[k];

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

int scen_merge(struct bench *b)
{
	long N = b->o->merge_files;
	int warmup, rounds;

	if (N < 0) {
		long max = read_sysctl("/proc/sys/fs/fanotify/max_queued_events");

		/* The seed's N: one more than the kernel queue holds. */
		N = (max > 0 ? max : 16384) + 1;
	}
	bench_begin(b, "merge", "depth");
	run_queues(b);
	run_lib_stream(b, N);
	bench_rounds(b, cli_pick(b->o, 0, 0, 1, 1), (int)cli_pick(b->o, 1, 1, 3, 3), &warmup,
		     &rounds);
	if (cli_variant_on(b->o, "kernel-limited") || cli_variant_on(b->o, "kernel-unlimited"))
		merge_kernel(b, N, warmup, rounds);
	run_read(b, read_size(b));
	merge_chart(b);
	{
		bool tables = b->tables;

		bench_end(b);
		if (tables)
			merge_summary(b, N, read_size(b));
	}
	return 0;
}
