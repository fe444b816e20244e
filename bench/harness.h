/* SPDX-License-Identifier: MIT */
/*
 * What every scenario shares: the results of the run (rows, skips, failed
 * checks), the scratch directory, progress on stderr, CPU pinning and teams
 * of worker threads, and the inotify instance budget.
 */
#ifndef FSNW_BENCH_HARNESS_H
#define FSNW_BENCH_HARNESS_H

#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "cli.h"
#include "csv.h"
#include "summary.h"

struct chart;

struct skip {
	char scenario[24];
	char variant[40];
	char reason[320];
};

struct bench {
	const struct bench_opts *o;
	const char *scenario;  /* the scenario running now */
	const char *scale;     /* what its workers column means: workers, clients, depth */
	char kernel[72];       /* uname -r */
	int ncpu;              /* CPUs this process may run on */
	char *dir;             /* the scratch directory of the run */
	struct row *rows;
	size_t nrows, cap;
	struct skip *skips;
	size_t nskips;
	FILE *csv;
	int failures;          /* failed checks and set-up errors: the exit status */
	bool tables;           /* print each scenario's table (quick prints one summary) */
	uint64_t scen_start;
	uint64_t last_progress;
	bool progress_shown;
	bool tty;
	struct chart **charts;
	size_t ncharts;
	cpu_set_t affinity;    /* as started, restored after a single-thread pin */
	char loadavg[64];      /* /proc/loadavg when the run began: a busy machine shows */
	long inotify_used;     /* instances of this user, as last counted */
	uint64_t inotify_seen_ns;
};

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Set up the run: scratch directory, CSV, CPU list check. -1 after saying why. */
int bench_init(struct bench *b, const struct bench_opts *o);
/* Write the CSV and environment record, remove the scratch directory. */
void bench_fini(struct bench *b);
/* Stop the run now (a pin failure): clean up and exit 1. */
void bench_fatal(struct bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Keep a chart for --svg (the run owns it from now on; NULL is ignored). */
void bench_add_chart(struct bench *b, struct chart *c);

void bench_begin(struct bench *b, const char *scenario, const char *scale);
void bench_end(struct bench *b);

/* Rounds of a scenario: its defaults unless --warmup / --rounds say otherwise. */
void bench_rounds(const struct bench *b, int def_warmup, int def_rounds, int *warmup,
		  int *rounds);

void bench_record(struct bench *b, const char *variant, long workers, int round,
		  const char *metric, double value, const char *unit, bool ok);
/* A failed check: printed at once; the run will exit non-zero. */
void bench_fail(struct bench *b, const char *variant, long workers, int round,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* A variant the machine cannot run: one line, not a failure. */
void bench_skip(struct bench *b, const char *variant, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool bench_skipped(const struct bench *b, const char *scenario, const char *variant);
/* Progress on stderr, shown once a scenario has run for a second. */
void bench_progress(struct bench *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Summary of the measured rounds of one key; false when there are none. */
bool bench_summary(const struct bench *b, const char *scenario, const char *variant,
		   long workers, const char *metric, struct summary *s);
/* Median of one key, or NAN. */
double bench_median(const struct bench *b, const char *scenario, const char *variant,
		    long workers, const char *metric);
/* Whether every round of the key passed its checks. */
bool bench_key_ok(const struct bench *b, const char *scenario, const char *variant,
		  long workers, const char *metric);
void bench_print_table(const struct bench *b, const char *scenario);

/* Make dir/name inside the scratch directory; path gets the result. */
int bench_mkdir(struct bench *b, const char *name, char *path, size_t len);
/* Create n files prefix0..prefix{n-1} of size bytes in dir (progress shown). */
int bench_make_files(struct bench *b, const char *dir, const char *prefix, long n,
		     size_t size);
int bench_unlink_files(struct bench *b, const char *dir, const char *prefix, long n);

/* The CPU for thread idx of a pinned run, or -1 when --cpus was not given. */
int bench_cpu(const struct bench *b, int idx);
/* Pin the calling thread to bench_cpu(idx) (nothing without --cpus); fatal on failure. */
void bench_pin_self(struct bench *b, int idx);
void bench_unpin_self(struct bench *b);

/* A team of worker threads, each pinned to bench_cpu(cpu_offset + idx). */
struct team;
typedef void (*team_fn)(struct team *t, int idx);
struct team {
	struct bench *b;
	int n;
	pthread_t *tid;
	pthread_barrier_t bar; /* the workers and the calling thread */
	team_fn fn;
	void *arg;
	int cpu_offset;
	void *args;            /* per-worker start arguments */
	int *cpu;              /* where each worker is pinned, -1: not pinned */
	int *ran_on;           /* sched_getcpu() when the worker finished */
};
void team_start(struct bench *b, struct team *t, int n, int cpu_offset, team_fn fn, void *arg);
/* A barrier of all workers and the thread that started them. */
void team_sync(struct team *t);
/* Join; returns how many pinned workers ended on another CPU (affinity check). */
int team_join(struct team *t);

/* Whether `need` more inotify instances fit under fs.inotify.max_user_instances
 * with room left for the other processes of this user; if not, the variant is
 * skipped with a reason that names the sysctl. */
bool bench_inotify_room(struct bench *b, const char *variant, long need);
/* The first line of /proc/loadavg, or "?". */
void read_loadavg(char *buf, size_t len);
/* Back to the default SIGINT/SIGTERM (a forked child: the parent cleans up). */
void bench_default_signals(void);
/* Read a number from a /proc/sys file; -1 when absent. */
long read_sysctl(const char *path);

#endif
