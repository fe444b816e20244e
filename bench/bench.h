/* SPDX-License-Identifier: MIT */
/*
 * What every scenario works with: one struct bench per run. Its results
 * (rows, skips, failed checks, charts: results.h) and the run around them
 * (scratch directory, signals, CPU pinning, worker teams: run.h).
 */
#ifndef FSNW_BENCH_BENCH_H
#define FSNW_BENCH_BENCH_H

#include <malloc.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/resource.h>
#include <time.h>

#include "cli.h"
#include "csv.h"
#include "results.h"
#include "run.h"
#include "scenario.h"

struct chart;
struct skip;

struct bench {
	const struct bench_opts *o;

	/* results.c: the scenario running now and what the run measured */
	const char *scenario;
	const char *scale;     /* what its workers column means: workers, clients, depth */
	int busy_extra;        /* busy threads beside the scale's; -1: it counts no threads */
	char kernel[72];       /* uname -r */
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
	struct chart **charts;
	size_t ncharts;
	FILE *trace;           /* FSNW_BENCH_TRACE: what each round set up (a test aid) */
	struct fs_note {
		char scenario[24];
		char fs[48];
	} fs_notes[8];         /* the filesystem each scenario measured on */
	int nfs_notes;

	/* run.c: where and how it runs */
	bool child;            /* a process bench_fork made: the scratch is not its own */
	int ncpu;              /* CPUs this process may use */
	char *dir;             /* the scratch directory of the run */
	bool tty;
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

/* Page faults the calling thread has taken (minor and major): on a guest
 * where a first touch costs microseconds, one fault inside a timed phase
 * of 32 calls shows in its mean, so the rows that time such phases count them. */
static inline long thread_faults(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return ru.ru_minflt + ru.ru_majflt;
}

/* Bytes of heap that malloc has handed out and not had back, every arena and
 * the chunks it mmap'd included: what a contender keeps for its watches
 * shows as the change across the calls that made them. Chunks glibc's
 * per-thread cache holds count as in use, so the few it hands out again
 * (at most 7 of each size) are not seen: a few KiB at most, noise over
 * thousands of watches, not over five. */
static inline double heap_in_use(void)
{
	struct mallinfo2 m = mallinfo2();

	return (double)(m.uordblks + m.hblkhd);
}

#endif
