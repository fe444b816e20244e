/* SPDX-License-Identifier: MIT */
/*
 * A thread that drains events while a load runs: raw (read() on an inotify
 * fd) or through the library (fsnw_read). It checks what it reads: only the
 * expected mask bits, only the expected names (prefix + index below nnames,
 * or exactly prefix when nnames is 0), and counts what came.
 */
#ifndef FSNW_BENCH_READER_H
#define FSNW_BENCH_READER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "fsnwatch.h"

struct bench;

struct reader {
	/* set by the caller */
	int fd;               /* raw: the inotify fd (non-blocking) */
	struct fsnw *w;       /* library: the handle */
	int wid;              /* library: the watch events must carry */
	uint32_t mask;        /* event bits that may come */
	const char *prefix;
	long nnames;
	/* results */
	long events;          /* records read (library: events delivered) */
	long counted;         /* kernel events they stand for (library: sum of count) */
	long overflows;
	long unexpected;
	unsigned char *seen;  /* per name index: at least one event came */
	int err;              /* -errno of a failed read */
	/* internal */
	pthread_t tid;
	atomic_int stop;
};

/* Start draining on the thread pinned like worker cpu_idx; fatal when it cannot start. */
void reader_start(struct bench *b, struct reader *r, int cpu_idx);
/* Tell it the load is over; it drains what is left, then is joined. */
void reader_stop(struct reader *r);
void reader_free(struct reader *r);

#endif
