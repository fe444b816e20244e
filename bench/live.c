/* SPDX-License-Identifier: MIT */
/*
 * live: what a daemon pays to consume the events of a watched tree. A tree
 * of D directories and F files (gentree.h) is watched as a tree by each
 * contender (liveread.h): raw inotify, the library on inotify and on
 * fanotify, libinotifytools, libuv.
 *
 * live-*: a separate writer process runs a burst of operations spread over
 * the tree (liveburst.h) while the reader, in a process of its own, reads
 * as a daemon does: it sleeps until events come, so on a machine with a CPU
 * for each it wakes for a few at a time. The figure is the reader's CPU
 * time, user and system (getrusage), from the burst's start to the
 * sentinel's event: the cost of keeping up. Also CPU and user time an event,
 * syscalls and events a wakeup, and each contender's CPU over the
 * library's on inotify in the same round.
 *
 * batch-*: reads of E events queued at once (E appends to different files
 * spread over the tree, made untimed by the reader itself), B batches a
 * round: ns an event of the read, thread CPU an event, and the user-space
 * part, which getrusage's tick-sampled split cannot give for reads this
 * short: the thread CPU time less what raw's read(2) of the same events
 * took in the same round (timed in thread CPU time, which the other
 * processes of a busy machine do not inflate as they do a wall-clock time:
 * the library's read histogram is one). The kernel's work to hand over E
 * events is the same whoever reads them.
 *
 * Contenders take turns round by round, in an order that turns; each round
 * is a fresh process that sets its watches up untimed.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "itools.h"
#include "liveread.h"
#include "quick.h"
#include "table.h"
#include "uvpeer.h"

/* A round that has not seen its sentinel by then has lost it (overflow). */
#ifndef LIVE_TIMEOUT_S
#define LIVE_TIMEOUT_S 300
#endif

static struct live_opts {
	long dirs;
	long files;
	long ops;
	long batch_events;
	long batches;
} opt;

#define F(field) offsetof(struct live_opts, field)
static const struct bench_option options[] = {
	{ .flag = "live-dirs", .arg = "D", .type = OPT_LONG, .off = F(dirs), .min = 1,
	  .max = 1 << 20, .preset = { "50", "1000", "10111", "10111" },
	  .help = "directories of the tree, the root included" },
	{ .flag = "live-files", .arg = "F", .type = OPT_LONG, .off = F(files), .min = 1,
	  .max = 1 << 22, .preset = { "200", "5000", "50000", "50000" },
	  .help = "files of the tree" },
	{ .flag = "live-ops", .arg = "N", .type = OPT_LONG, .off = F(ops), .min = 4,
	  .max = 1 << 26, .preset = { "400", "20000", "200000", "200000" },
	  .help = "operations of a burst (whole groups of four)" },
	{ .flag = "batch-events", .arg = "E", .type = OPT_LONG, .off = F(batch_events),
	  .min = 1, .max = 1 << 20, .preset = { "100", "1000", "1000", "1000" },
	  .help = "events of one batch read (at most F)" },
	{ .flag = "batches", .arg = "B", .type = OPT_LONG, .off = F(batches), .min = 1,
	  .max = 1 << 20, .preset = { "4", "20", "100", "100" },
	  .help = "batch reads a round" },
	{ 0 },
};
#undef F

static const char *const live_names[NLIVE] = { "live-raw", "live-lib", "live-lib-fan",
					       "live-inotifytools", "live-libuv" };
static const char *const batch_names[NLIVE] = { "batch-raw", "batch-lib", "batch-lib-fan" };
#define NBATCH 3

static const char *const variants[] = {
	"live-raw", "live-lib", "live-lib-fan", "live-inotifytools", "live-libuv",
	"batch-raw", "batch-lib", "batch-lib-fan", NULL,
};

struct live_arg {
	enum live_kind kind;
	const char *name;
	const struct burst *u;
	int m;
};

struct live_out {
	bool ran, ok;
	double cpu, user;      /* ns, getrusage of the reader's process */
	double wall;           /* ns, the burst's start to the sentinel */
	long syscalls, sleeps; /* -1: not counted */
};

static double rusage_ns(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e9 + (double)tv->tv_usec * 1e3;
}

/* The writer: waits for the reader's word on go, runs the burst, exits. */
static pid_t start_writer(struct bench *b, const struct burst *u, int go[2])
{
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -1;
	pid = bench_fork(b);
	if (pid == 0) {
		char c;

		close(go[1]);
		bench_pin_self(b, 1);
		if (read(go[0], &c, 1) != 1)
			_exit(2);
		_exit(burst_run(u) ? 1 : 0);
	}
	close(go[0]);
	return pid;
}

/* What the reader must have counted: LIVE_MASK's kinds, or libuv's. */
static bool live_counted(const struct tally *c, enum live_kind k, long G)
{
	if (c->wrong || c->overflows || !c->done || c->n[TK_OTHER])
		return false;
	if (k == LIVE_UV)
		return c->n[TK_RENAME] == 2 * G + 1 && c->n[TK_CHANGE] == 3 * G;
	/* fanotify merges events on one file that wait unread: as many creates and
	 * deletes, as many closes or fewer, never none of a group's. */
	if (k == LIVE_FAN)
		return c->n[TK_CREATE] == G + 1 && c->n[TK_DELETE] == G &&
		       c->n[TK_CLOSE_WRITE] <= 3 * G && c->n[TK_CLOSE_WRITE] >= G;
	return c->n[TK_CREATE] == G + 1 && c->n[TK_CLOSE_WRITE] == 3 * G && c->n[TK_DELETE] == G;
}

static void live_fail(struct bench *b, const struct live_arg *a, const struct tally *c,
		      int err, int status)
{
	bench_fail(b, a->name, 4 * a->u->groups, a->m,
		   "%s; writer %s; sentinel %s; creates %ld, closes %ld, deletes %ld, renames %ld, "
		   "changes %ld, other %ld; %ld of %ld checked wrong; %ld overflows",
		   err ? strerror(-err) : "read ok", status ? "failed" : "ok",
		   c->done ? "seen" : "not seen", c->n[TK_CREATE], c->n[TK_CLOSE_WRITE],
		   c->n[TK_DELETE], c->n[TK_RENAME], c->n[TK_CHANGE], c->n[TK_OTHER], c->wrong,
		   c->checked, c->overflows);
}

static void live_child(struct bench *b, void *argp, void *outp)
{
	const struct live_arg *a = argp;
	struct live_out *o = outp;
	struct tally c = { .u = a->u };
	struct live_reader r;
	struct live_counts n0, n1;
	struct rusage ru0, ru1;
	uint64_t t0;
	int go[2], status = 1, err;
	pid_t writer;

	alarm(LIVE_TIMEOUT_S);
	err = live_open(&r, a->kind, a->u->t, 256);
	if (err) {
		if (a->kind == LIVE_FAN)
			bench_skip(b, a->name, "the library's fanotify backend cannot watch the "
				   "tree (%s)", strerror(-err));
		else
			bench_fail(b, a->name, 4 * a->u->groups, a->m, "watching the tree: %s",
				   strerror(-err));
		live_close(&r);
		return;
	}
	writer = start_writer(b, a->u, go);
	if (writer < 0)
		bench_fatal(b, "starting the writer: %s", strerror(errno));
	bench_trace(b, "%s round %d: %ld dirs, %ld files; reader process %d, writer process %d: "
		    "%ld groups of 4 operations, then the sentinel", a->name, a->m, a->u->t->ndirs,
		    a->u->t->nfiles, (int)getpid(), (int)writer, a->u->groups);
	bench_pin_self(b, 0);
	live_counts(&r, &n0);
	getrusage(RUSAGE_SELF, &ru0);
	t0 = now_ns();
	if (write(go[1], "g", 1) != 1)
		bench_fatal(b, "starting the writer: %s", strerror(errno));
	close(go[1]);
	err = live_follow(&r, &c);
	o->wall = (double)(now_ns() - t0);
	getrusage(RUSAGE_SELF, &ru1);
	live_counts(&r, &n1);
	while (waitpid(writer, &status, 0) < 0 && errno == EINTR)
		;
	live_close(&r);
	burst_clean(a->u);
	o->ok = !err && !status && live_counted(&c, a->kind, a->u->groups);
	if (!o->ok)
		live_fail(b, a, &c, err, status);
	o->user = rusage_ns(&ru1.ru_utime) - rusage_ns(&ru0.ru_utime);
	o->cpu = o->user + rusage_ns(&ru1.ru_stime) - rusage_ns(&ru0.ru_stime);
	o->syscalls = n0.syscalls < 0 ? -1 : n1.syscalls - n0.syscalls;
	o->sleeps = n0.sleeps < 0 ? -1 : n1.sleeps - n0.sleeps;
	o->ran = true;
}

static void live_record(struct bench *b, const char *name, long N, int m, long events,
			const struct live_out *o)
{
	bench_record(b, name, N, m, "cpu", o->cpu / 1e6, "ms", o->ok);
	bench_record(b, name, N, m, "cpu/event", o->cpu / (double)events, "ns/event", o->ok);
	bench_record(b, name, N, m, "user/event", o->user / (double)events, "ns/event", o->ok);
	bench_record(b, name, N, m, "wall", o->wall / 1e6, "ms", o->ok);
	if (o->sleeps >= 0) {
		/* A reader that never had to sleep (a loaded host) woke once. */
		double wakeups = o->sleeps > 0 ? (double)o->sleeps : 1.0;

		bench_record(b, name, N, m, "events/wakeup", (double)events / wakeups,
			     "events/wakeup", o->ok);
		if (o->syscalls >= 0)
			bench_record(b, name, N, m, "syscalls/wakeup", (double)o->syscalls / wakeups,
				     "syscalls/wakeup", o->ok);
	}
}

/* Which contenders of a mode run: selected, and able to here (else skipped, with why). */
static void contenders(struct bench *b, const char *const *names, int n, bool *on)
{
	char why[256];

	for (int v = 0; v < n; v++) {
		on[v] = cli_variant_on(b->o, names[v]);
		if (!on[v])
			continue;
		if (v == LIVE_ITOOLS && !itools_available(why, sizeof(why)))
			on[v] = false;
		else if (v == LIVE_UV && !uvpeer_available(why, sizeof(why)))
			on[v] = false;
		else if (v == LIVE_FAN && !lib_fanotify_usable(why, sizeof(why)))
			on[v] = false;
		if (!on[v])
			bench_skip(b, names[v], "%s", why);
	}
}

static void run_live(struct bench *b, const struct burst *u, int warmup, int rounds)
{
	long N = 4 * u->groups, events = burst_events(u);
	bool on[NLIVE];

	contenders(b, live_names, NLIVE, on);
	for (int r = 0; r < warmup + rounds; r++) {
		int m = r - warmup + 1;
		struct live_out out[NLIVE] = { { 0 } };

		for (int k = 0; k < NLIVE; k++) {
			int v = (k + r) % NLIVE;
			struct live_arg arg = { .kind = (enum live_kind)v, .name = live_names[v],
						.u = u, .m = m };

			if (!on[v] || bench_skipped(b, "live", live_names[v]) ||
			    !bench_inotify_room(b, live_names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", live_names[v], r + 1, warmup + rounds);
			if (bench_in_child(b, live_child, &arg, &out[v], sizeof(out[v])) < 0) {
				bench_fail(b, live_names[v], N, m, "the round's process died (no "
					   "sentinel in %d s?)", LIVE_TIMEOUT_S);
				/* Its sentinel would stop the next round's writer. */
				burst_clean(u);
				out[v].ran = false;
			}
			if (out[v].ran && m > 0)
				live_record(b, live_names[v], N, m, events, &out[v]);
		}
		/* Each contender over the library on inotify, in the same round. */
		for (int v = 0; m > 0 && out[LIVE_LIB].ran && v < NLIVE; v++)
			if (v != LIVE_LIB && out[v].ran)
				bench_record(b, live_names[v], N, m, "cpu/lib",
					     out[v].cpu / out[LIVE_LIB].cpu, "ratio",
					     out[v].ok && out[LIVE_LIB].ok);
	}
}

/* ---- batch reads ---- */

struct batch_arg {
	enum live_kind kind;
	const char *name;
	const struct burst *u;
	long E, B;
	int m;
};

struct batch_out {
	bool ran, ok;
	double read, cpu, in_read, syscalls; /* ns an event (in_read: raw's); syscalls a batch */
};

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void batch_child(struct bench *b, void *argp, void *outp)
{
	const struct batch_arg *a = argp;
	struct batch_out *o = outp;
	struct tally c = { .u = a->u };
	struct live_reader r;
	struct live_counts n0, n1;
	uint64_t wall = 0, cpu = 0, in_read = 0;
	long sys = 0;
	int err;

	bench_pin_self(b, 0);
	err = live_open(&r, a->kind, a->u->t, a->E);
	for (long i = 0; !err && i < a->B; i++) {
		uint64_t t0, c0;

		err = burst_appends(a->u, i * a->E, a->E);
		if (err)
			break;
		live_counts(&r, &n0);
		c0 = thread_cpu_ns();
		t0 = now_ns();
		err = live_take(&r, &c, a->E);
		wall += now_ns() - t0;
		cpu += thread_cpu_ns() - c0;
		live_counts(&r, &n1);
		in_read += n1.read_ns - n0.read_ns;
		sys += n1.syscalls - n0.syscalls;
	}
	live_close(&r);
	o->ok = !err && c.n[TK_CLOSE_WRITE] == a->E * a->B && c.events == a->E * a->B &&
		!c.wrong && !c.overflows;
	if (!o->ok)
		bench_fail(b, a->name, a->E, a->m, "%s; %ld closes of %ld events, %ld events in "
			   "all; %ld of %ld checked wrong; %ld overflows",
			   err ? strerror(-err) : "read ok", c.n[TK_CLOSE_WRITE], a->E * a->B,
			   c.events, c.wrong, c.checked, c.overflows);
	o->read = (double)wall / (double)(a->E * a->B);
	o->cpu = (double)cpu / (double)(a->E * a->B);
	o->in_read = (double)in_read / (double)(a->E * a->B);
	o->syscalls = (double)sys / (double)a->B;
	o->ran = true;
}

/* Each contender's user-space part of a round, raw's read(2) taken away, and its
 * ratio to raw's (none where raw's is too small to see). */
static void batch_user(struct bench *b, const struct batch_out *out, long E, int m)
{
	double raw = out[LIVE_RAW].cpu - out[LIVE_RAW].in_read;

	for (int v = 0; v < NBATCH; v++) {
		double user = out[v].cpu - out[LIVE_RAW].in_read;
		bool ok = out[v].ok && out[LIVE_RAW].ok;

		if (!out[v].ran)
			continue;
		bench_record(b, batch_names[v], E, m, "user", user, "ns/event", ok);
		if (v != LIVE_RAW && raw > 0)
			bench_record(b, batch_names[v], E, m, "user/raw", user / raw, "ratio", ok);
	}
}

static void run_batch(struct bench *b, const struct burst *u, long E, int warmup, int rounds)
{
	bool on[NBATCH];

	contenders(b, batch_names, NBATCH, on);
	for (int r = 0; r < warmup + rounds; r++) {
		int m = r - warmup + 1;
		struct batch_out out[NBATCH] = { { 0 } };

		for (int k = 0; k < NBATCH; k++) {
			int v = (k + r) % NBATCH;
			struct batch_arg arg = { .kind = (enum live_kind)v, .name = batch_names[v],
						 .u = u, .E = E, .B = opt.batches, .m = m };

			if (!on[v] || bench_skipped(b, "live", batch_names[v]) ||
			    !bench_inotify_room(b, batch_names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", batch_names[v], r + 1, warmup + rounds);
			if (bench_in_child(b, batch_child, &arg, &out[v], sizeof(out[v])) < 0)
				bench_fail(b, batch_names[v], E, m, "the round's process died");
			if (!out[v].ran || m <= 0)
				continue;
			bench_record(b, batch_names[v], E, m, "read", out[v].read, "ns/event",
				     out[v].ok);
			bench_record(b, batch_names[v], E, m, "cpu", out[v].cpu, "ns/event",
				     out[v].ok);
			bench_record(b, batch_names[v], E, m, "syscalls", out[v].syscalls,
				     "syscalls/batch", out[v].ok);
		}
		if (m > 0 && out[LIVE_RAW].ran)
			batch_user(b, out, E, m);
	}
}

/* The batch size: E, unless the tree has fewer files (each appended once a batch). */
static long batch_size(void)
{
	return opt.batch_events < opt.files ? opt.batch_events : opt.files;
}

static bool any_on(struct bench *b, const char *const *names, int n)
{
	for (int v = 0; v < n; v++)
		if (cli_variant_on(b->o, names[v]))
			return true;
	return false;
}

static int live_run(struct bench *b)
{
	struct gentree t;
	struct burst u;
	int warmup, rounds, err;

	bench_begin(b, "live", "size");
	if (!any_on(b, live_names, NLIVE) && !any_on(b, batch_names, NBATCH)) {
		bench_end(b);
		return 0;
	}
	err = gentree_make(b, &t, "live-tree", opt.dirs, opt.files);
	if (err) {
		bench_fail(b, "live-raw", opt.ops, 0, "making a tree of %ld directories and %ld "
			   "files: %s", opt.dirs, opt.files, strerror(-err));
		bench_end(b);
		return 0;
	}
	bench_note_fs(b, t.root);
	burst_init(&u, &t, opt.ops);
	if (batch_size() != opt.batch_events)
		fprintf(stderr, "live: batches of %ld events: the tree has %ld files\n",
			batch_size(), opt.files);
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 5, 5, 5), &warmup,
		     &rounds);
	run_live(b, &u, warmup, rounds);
	run_batch(b, &u, batch_size(), warmup, rounds);
	gentree_free(&t);
	bench_end(b);
	return 0;
}

/*
 * The user time an event over all measured rounds of a contender. getrusage
 * splits a process's CPU time into user and system by where the tick found
 * it, and a small round's reader runs for a few ticks only, so one round's
 * split can be all system; the rounds' mean is the pooled sample (every
 * round has the same events). NAN where the key is missing (quick_need says).
 */
static double pooled_user(const struct bench *b, struct quick *q, const char *variant, long N)
{
	struct summary s;
	double median = quick_need(q, variant, N, "user/event");

	if (isnan(median) || !bench_summary(b, "live", variant, N, "user/event", &s))
		return median;
	return s.mean;
}

/* The burst's rows: CPU to consume, a event, user time a event, syscalls a wakeup. */
static void burst_quick(struct bench *b, struct quick *q)
{
	long G = opt.ops / 4 > 0 ? opt.ops / 4 : 1, N = 4 * G;
	char label[128], fan[160] = "fanotify skipped";
	bool has_fan = !bench_skipped(b, "live", "live-lib-fan");

	if (has_fan)
		snprintf(fan, sizeof(fan), "fanotify %.3g ms, /lib %.2f",
			 quick_need(q, "live-lib-fan", N, "cpu"),
			 quick_need(q, "live-lib-fan", N, "cpu/lib"));
	snprintf(label, sizeof(label), "tree, live burst: CPU to consume");
	quick_libuv(q, quick_need(q, "live-libuv", N, "cpu"));
	quick_row(q, label, "ms", quick_need(q, "live-raw", N, "cpu"),
		  quick_need(q, "live-inotifytools", N, "cpu"), quick_need(q, "live-lib", N, "cpu"),
		  NAN, "%ld dirs, %ld files, %ld ops by another process, %ld events, read live; "
		  "CPU/lib inotify: raw %.2f, libinotifytools %.2f, libuv %.2f; %s",
		  opt.dirs, opt.files, N, 5 * G + 1, quick_need(q, "live-raw", N, "cpu/lib"),
		  quick_need(q, "live-inotifytools", N, "cpu/lib"),
		  quick_need(q, "live-libuv", N, "cpu/lib"), fan);
	if (has_fan)
		snprintf(fan, sizeof(fan), "fanotify %.0f", quick_need(q, "live-lib-fan", N,
								       "cpu/event"));
	quick_libuv(q, quick_need(q, "live-libuv", N, "cpu/event"));
	quick_row(q, "  same, CPU an event", "ns/event", quick_need(q, "live-raw", N, "cpu/event"),
		  quick_need(q, "live-inotifytools", N, "cpu/event"),
		  quick_need(q, "live-lib", N, "cpu/event"), NAN, "user + system; %s", fan);
	if (has_fan)
		snprintf(fan, sizeof(fan), "fanotify %.0f", pooled_user(b, q, "live-lib-fan", N));
	quick_libuv(q, pooled_user(b, q, "live-libuv", N));
	quick_row(q, "  same, user time an event", "ns/event", pooled_user(b, q, "live-raw", N),
		  pooled_user(b, q, "live-inotifytools", N), pooled_user(b, q, "live-lib", N), NAN,
		  "getrusage's split, sampled at the tick: the rounds' mean; %s", fan);
	if (has_fan)
		snprintf(fan, sizeof(fan), "fanotify %.2f", quick_need(q, "live-lib-fan", N,
								       "syscalls/wakeup"));
	quick_row(q, "  same, syscalls a wakeup", "syscalls", quick_need(q, "live-raw", N,
									   "syscalls/wakeup"),
		  NAN, quick_need(q, "live-lib", N, "syscalls/wakeup"), NAN,
		  "events a wakeup: raw %.2f, libuv %.2f, lib %.2f; %s",
		  quick_need(q, "live-raw", N, "events/wakeup"),
		  quick_may(q, "live-libuv", N, "events/wakeup"),
		  quick_need(q, "live-lib", N, "events/wakeup"), fan);
}

/* The batch row: reads of E queued events. */
static void batch_quick(struct bench *b, struct quick *q)
{
	long E = batch_size();
	char label[128], fanb[96] = "fanotify skipped";

	if (!bench_skipped(b, "live", "batch-lib-fan"))
		snprintf(fanb, sizeof(fanb), "fanotify %.0f (%.2f x raw)",
			 quick_need(q, "batch-lib-fan", E, "user"),
			 quick_need(q, "batch-lib-fan", E, "user/raw"));
	snprintf(label, sizeof(label), "tree, reads of %ld events: user time", E);
	quick_row(q, label, "ns/event", quick_need(q, "batch-raw", E, "user"), NAN,
		  quick_need(q, "batch-lib", E, "user"), NAN,
		  "thread CPU less raw's read(2) of the same events; whole read raw %.0f, lib "
		  "%.0f; syscalls a batch raw %.1f, lib %.1f; %s; target lib/raw <= 2",
		  quick_need(q, "batch-raw", E, "read"), quick_need(q, "batch-lib", E, "read"),
		  quick_need(q, "batch-raw", E, "syscalls"),
		  quick_need(q, "batch-lib", E, "syscalls"), fanb);
}

static void live_quick(struct bench *b, struct quick *q)
{
	burst_quick(b, q);
	batch_quick(b, q);
}

BENCH_SCENARIO(live) = {
	.name = "live",
	.order = 60,
	.summary = "consuming a tree's events live, and in batches, against the peers",
	.flags = SCEN_MEASURES | SCEN_ROUNDS,
	.run = live_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = live_quick,
};
