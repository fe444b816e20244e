/* SPDX-License-Identifier: MIT */
/*
 * parent-write (Jan Kara's load, from the parent-watch thread): a directory of F files of 4 KiB;
 * X client threads, client i opens file i and does N one-byte pwrites at
 * offset 0, then closes it. Modes: none (no watch), other (an IN_MODIFY
 * watch on another directory of the filesystem), parent (an IN_MODIFY watch
 * on the directory itself and nothing else, as Jan Kara set it: no reader runs,
 * the kernel queue is drained after the round), and parent-reader-raw /
 * parent-reader-lib (the same watch drained during the run by a reader
 * thread, raw or through the library: the library must not slow the
 * writers). Metric: ns per write per X, the clients' wall time (as the thread
 * measures it, preemption included) and their CPU time (without it), and
 * writes/s; for the parent modes the events that came and overflows.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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

static const char *const variants[] = {
	"none", "other", "parent", "parent-reader-raw", "parent-reader-lib", NULL,
};

struct pw {
	struct team team;
	const char *dir;
	long N;
	uint64_t *t0, *t1;
	uint64_t *cpu;   /* each client's CPU time for its writes */
	long *bad;
	int *err;
};

/* CPU time of the calling thread: what a client spent writing, without the
 * time it waited for a CPU. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void client(struct team *t, int idx)
{
	struct pw *p = t->arg;
	char path[4200];
	uint64_t c0;
	long bad = 0;
	int fd;

	snprintf(path, sizeof(path), "%s/f%d", p->dir, idx);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		p->err[idx] = errno;
	team_sync(t);
	c0 = cpu_ns();
	p->t0[idx] = now_ns();
	for (long i = 0; fd >= 0 && i < p->N; i++)
		bad += pwrite(fd, "x", 1, 0) != 1;
	p->t1[idx] = now_ns();
	p->cpu[idx] = cpu_ns() - c0;
	if (fd >= 0)
		close(fd);
	p->bad[idx] = bad;
	team_sync(t);
}

/* What came on the parent watch of Jan Kara's mode, read after the round. */
struct pw_drained {
	long events, overflows, unexpected, missing;
	int err;
};

/* Read the kernel queue dry (the round is over): only IN_MODIFY on the X
 * clients' files may be there, and each file once at least unless an
 * overflow lost its events. */
static void drain_parent(int fd, int X, struct pw_drained *d)
{
	static char buf[EVBUF_SIZE] __attribute__((aligned(8)));
	unsigned char *seen = calloc((size_t)X, 1);
	long n;

	memset(d, 0, sizeof(*d));
	if (!seen) {
		d->err = -ENOMEM;
		return;
	}
	while ((n = raw_read(fd, buf, sizeof(buf))) > 0)
		for_each_inotify_event(ev, buf, n) {
			char *end;
			long i;

			if (ev->mask & IN_Q_OVERFLOW) {
				d->overflows++;
				continue;
			}
			d->events++;
			i = ev->len && ev->name[0] == 'f' ? strtol(ev->name + 1, &end, 10) : -1;
			if (ev->mask != IN_MODIFY || i < 0 || i >= X || *end)
				d->unexpected++;
			else
				seen[i] = 1;
		}
	if (n < 0)
		d->err = (int)n;
	for (int i = 0; i < X; i++)
		d->missing += !seen[i];
	free(seen);
}

static void pw_round(struct bench *b, const char *variant, const char *dir, const char *other,
		     int X, long N, int m)
{
	struct pw p = { .dir = dir, .N = N };
	struct reader r;
	struct fsnw_stats st;
	struct pw_drained dr = { 0 };
	bool parent = !strncmp(variant, "parent", 6), lib = !strcmp(variant, "parent-reader-lib");
	bool reader = !strncmp(variant, "parent-reader", 13);
	uint64_t sum = 0, cpu = 0, first = UINT64_MAX, last = 0;
	long bad = 0, missing = 0;
	int fd = -1, err = 0, moved;
	bool ok = true;

	memset(&r, 0, sizeof(r));
	r.fd = -1;
	p.t0 = calloc((size_t)X, sizeof(uint64_t));
	p.t1 = calloc((size_t)X, sizeof(uint64_t));
	p.cpu = calloc((size_t)X, sizeof(uint64_t));
	p.bad = calloc((size_t)X, sizeof(long));
	p.err = calloc((size_t)X, sizeof(int));
	if (!p.t0 || !p.t1 || !p.cpu || !p.bad || !p.err)
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
	if (reader) {
		r.mask = FSNW_MODIFY;
		r.prefix = "f";
		r.nnames = X;
		r.seen = calloc((size_t)X, 1);
		if (!r.seen)
			bench_fatal(b, "out of memory");
		reader_start(b, &r, X);
	}
	bench_busy(b, reader);
	team_start(b, &p.team, X, 0, client, &p);
	team_sync(&p.team);
	team_sync(&p.team);
	moved = team_join(&p.team);
	if (reader)
		reader_stop(&r);
	for (int i = 0; i < X; i++) {
		sum += p.t1[i] - p.t0[i];
		cpu += p.cpu[i];
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
	if (!strcmp(variant, "parent")) {
		/* Jan Kara's load: nobody read during the run; drain now, untimed. */
		drain_parent(fd, X, &dr);
		if (dr.err || dr.unexpected || !dr.events || (dr.missing && !dr.overflows)) {
			bench_fail(b, variant, X, m, "queue after the round: %ld events, %ld "
				   "unexpected, %ld files never reported, %ld overflows%s%s",
				   dr.events, dr.unexpected, dr.missing, dr.overflows,
				   dr.err ? ", " : "", dr.err ? strerror(-dr.err) : "");
			ok = false;
		}
	}
	if (reader) {
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
		bench_record(b, variant, X, m, "write-cpu", (double)cpu / writes, "ns/write", ok);
		bench_record(b, variant, X, m, "writes/s", writes / ((double)(last - first) / 1e9),
			     "writes/s", ok);
		if (!strcmp(variant, "parent")) {
			bench_record(b, variant, X, m, "events", (double)dr.events, "events", ok);
			bench_record(b, variant, X, m, "overflows", (double)dr.overflows, "events",
				     ok);
		}
		if (reader) {
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
	bench_busy(b, 0);
	if (fd >= 0)
		close(fd);
	fsnw_close(r.w);
	reader_free(&r);
	free(p.t0);
	free(p.t1);
	free(p.cpu);
	free(p.bad);
	free(p.err);
}

static double pw_med(struct bench *b, const char *variant, long X, const char *metric)
{
	return bench_median(b, "parent-write", variant, X, metric);
}

static void pw_summary(struct bench *b)
{
	const char *heads[] = { "clients", "none ns/w", "parent ns/w", "parent/none",
				"parent cpu ns/w", "events", "ovf", "reader raw ns/w",
				"reader lib ns/w", "lib/raw", "lib merged" };
	struct table t;
	char x[32];

	table_init(&t, "rrrrrrrrrrr", heads);
	for (int k = 0; k < opt.clients.n; k++) {
		long X = opt.clients.v[k];
		double none = pw_med(b, "none", X, "write"), par = pw_med(b, "parent", X, "write");
		double rr = pw_med(b, "parent-reader-raw", X, "write");
		double rl = pw_med(b, "parent-reader-lib", X, "write");
		double v[10] = {
			none, par, par / none, pw_med(b, "parent", X, "write-cpu"),
			pw_med(b, "parent", X, "events"), pw_med(b, "parent", X, "overflows"),
			rr, rl, rl / rr, pw_med(b, "parent-reader-lib", X, "merged"),
		};

		if (isnan(par) && isnan(rr) && isnan(rl))
			continue;
		table_cell(&t, "%ld", X);
		for (int i = 0; i < 10; i++)
			table_cell(&t, "%s", fmt_num(x, sizeof(x), v[i]));
	}
	if (t.nrows) {
		printf("\n-- parent-write on %s: Jan Kara's load (no reader, events drained after "
		       "the round) and the reader variants (medians) --\n",
		       bench_fs_of(b, "parent-write") ? bench_fs_of(b, "parent-write") : "?");
		table_print(&t, stdout);
	}
	table_free(&t);
}

static int pw_run(struct bench *b)
{
	char dir[4096], other[4096], title[128];
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
	bench_note_fs(b, dir);
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
				bench_trace(b, "%s X=%d round %d: %s", name, X, r - warmup + 1,
					    !strcmp(name, "parent") ? "IN_MODIFY on the directory, no "
					    "reader, queue drained after the round" :
					    !strncmp(name, "parent-reader", 13) ? "IN_MODIFY on the "
					    "directory, a reader thread during the run" : "no parent watch");
				pw_round(b, name, dir, other, X, N, r - warmup + 1);
			}
	}
	snprintf(title, sizeof(title), "parent-write: 1-byte pwrite cost under a watch (%s)",
		 bench_fs_of(b, "parent-write"));
	c = chart_new(title, "clients", "ns per write", false, false);
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
	const char *fs = bench_fs_of(b, "parent-write");
	char label[128], wl[64];

	for (int k = 0; k < opt.clients.n; k++) {
		long X = opt.clients.v[k];

		snprintf(label, sizeof(label), "parent-write %s, writer cost (%s)",
			 bench_workers_label(b, "X", X, wl, sizeof(wl)), fs ? fs : "?");
		quick_row(q, label, "ns/write", quick_need(q, "parent-reader-raw", X, "write"), NAN,
			  quick_need(q, "parent-reader-lib", X, "write"), NAN,
			  "with a reader; Jan Kara's load (no reader): no watch %.0f, parent watch %.0f; "
			  "events read raw %.0f, lib delivered %.0f (merged %.0f); overflows "
			  "%.0f/%.0f", quick_need(q, "none", X, "write"),
			  quick_need(q, "parent", X, "write"),
			  quick_need(q, "parent-reader-raw", X, "events"),
			  quick_need(q, "parent-reader-lib", X, "events"),
			  quick_need(q, "parent-reader-lib", X, "merged"),
			  quick_need(q, "parent-reader-raw", X, "overflows"),
			  quick_need(q, "parent-reader-lib", X, "overflows"));
	}
}

BENCH_SCENARIO(parent_write) = {
	.name = "parent-write",
	.order = 20,
	.summary = "1-byte pwrites under a parent watch (Jan Kara's load)",
	.flags = SCEN_MEASURES | SCEN_ROUNDS | SCEN_CHARTS,
	.run = pw_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = pw_quick,
	.quick_variants = "none,parent,parent-reader-raw,parent-reader-lib",
};
