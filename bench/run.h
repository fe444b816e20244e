/* SPDX-License-Identifier: MIT */
/*
 * The run around the measurements: the scratch directory and its removal
 * (also on SIGINT/SIGTERM), sizes and rounds from the preset, CPU pinning,
 * teams of worker threads, and the inotify instance budget.
 */
#ifndef FSNW_BENCH_RUN_H
#define FSNW_BENCH_RUN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct bench;
struct bench_opts;

/* Set up the run: scratch directory, CSV, CPU list check. -1 after saying why. */
int bench_init(struct bench *b, const struct bench_opts *o);
/* Write the CSV and environment record, remove the scratch directory. */
void bench_fini(struct bench *b);
/* Stop the run now (a pin failure): clean up and exit 1. */
void bench_fatal(struct bench *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* The preset's value: tiny, small, default or seed. */
long bench_pick(const struct bench *b, long tiny, long small, long def, long seed);
/* Rounds of a scenario: its defaults unless --warmup / --rounds say otherwise. */
void bench_rounds(const struct bench *b, int def_warmup, int def_rounds, int *warmup,
		  int *rounds);

/* Make dir/name inside the scratch directory; path gets the result. */
int bench_mkdir(struct bench *b, const char *name, char *path, size_t len);
/* Create n files prefix0..prefix{n-1} of size bytes in dir (progress shown). */
int bench_make_files(struct bench *b, const char *dir, const char *prefix, long n,
		     size_t size);
int bench_unlink_files(struct bench *b, const char *dir, const char *prefix, long n);

/* The CPU for thread idx of a pinned run, or -1 when --cpus was not given. */
int bench_cpu(const struct bench *b, int idx);
/* The CPUs worker threads can spread over: --cpus, else those this process may use. */
int bench_cpus(const struct bench *b);
/* Whether n busy threads are more than bench_cpus(): then they take turns. */
bool bench_oversubscribed(const struct bench *b, long n);
/* "W=4", or "W=4 (2 CPUs, oversubscribed)": a row label that says so. */
const char *bench_workers_label(const struct bench *b, const char *sym, long n, char *buf,
				size_t len);
/* Where n workers started at cpu_offset run: "CPUs 0,2" (pinned, round robin when
 * n is more than --cpus lists) or "unpinned (2 CPUs allowed)". */
const char *bench_placement(const struct bench *b, int cpu_offset, long n, char *buf,
			    size_t len);
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
	pthread_barrier_t bar;   /* the workers and the calling thread: team_sync */
	pthread_barrier_t peers; /* the workers only: team_sync_peers */
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
/* A barrier of the workers only: the thread that started them is not in it
 * (the 94bd01253c3d report's reproducer), so no unpinned thread has to wake to release them. */
void team_sync_peers(struct team *t);
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
/* fork(2) for a child that measures and reports back (churn's rounds, merge's
 * kernel queue): stdio is flushed first, and the child gets the default
 * signals and never removes the scratch directory, even from bench_fatal;
 * it must end with _exit. Returns as fork does. */
pid_t bench_fork(struct bench *b);
/*
 * Run fn(b, arg, out) in a process of its own (bench_fork) and copy the len
 * bytes it leaves in out back: a round measured as the reports' reproducers
 * measure one, in a fresh process. The child records nothing; its failed
 * checks (on stderr already) count in b, and a variant it skipped is skipped
 * here with its reason. 0, or -1 when the child died without reporting.
 */
int bench_in_child(struct bench *b, void (*fn)(struct bench *b, void *arg, void *out), void *arg,
		   void *out, size_t len);
/* Read a number from a /proc/sys file; -1 when absent. */
long read_sysctl(const char *path);

#endif
