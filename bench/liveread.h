/* SPDX-License-Identifier: MIT */
/*
 * The readers of the live scenario, one per contender, each watching every
 * directory of a tree the way its kind of program does and reading events
 * into a tally (liveburst.h):
 *   LIVE_RAW     one inotify group, a watch per directory, and an array of
 *                their paths indexed by wd; poll, then read, and read again
 *                only when the buffer came back too full to be sure the
 *                queue is empty;
 *   LIVE_LIB     one libfsnwatch handle, FSNW_WATCH_TREE on the root,
 *                fsnw_read into an array of 256 (live) or E (batches);
 *   LIVE_FAN     the same on the fanotify backend;
 *   LIVE_ITOOLS  inotifytools_watch_recursively, inotifytools_next_event and
 *                inotifytools_filename_from_wd;
 *   LIVE_UV      one uv_fs_event handle per directory on a libuv loop.
 * Every reader does the same with each event: it counts it by kind and
 * checks every 16th against the burst.
 */
#ifndef FSNW_BENCH_LIVEREAD_H
#define FSNW_BENCH_LIVEREAD_H

#include <stdbool.h>

#include "evio.h"
#include "gentree.h"
#include "liveburst.h"

struct uvpeer;

enum live_kind { LIVE_RAW, LIVE_LIB, LIVE_FAN, LIVE_ITOOLS, LIVE_UV, NLIVE };

struct live_reader {
	enum live_kind kind;
	const struct gentree *t;
	struct tally *tally;
	int ifd;                 /* raw */
	const char **wdpath;     /* raw: the directory of each wd */
	long nwd;
	struct fsnw *w;          /* lib, fan */
	struct fsnw_event *ev;   /* lib, fan: the read array */
	long nev;
	struct uvpeer *uv;       /* libuv */
	long polls, reads;       /* raw: its syscalls */
	long calls;              /* lib, fan: fsnw_read calls */
	uint64_t read_ns;        /* raw: thread CPU time in read(2) of batches (live_take) */
	char *buf;               /* raw: EVBUF_SIZE bytes */
};

/* What a reader has counted so far; -1 where its kind cannot say. */
struct live_counts {
	long syscalls;
	long sleeps;        /* waits for events: poll(2) calls, loop iterations */
	uint64_t read_ns;   /* raw: thread CPU time in read(2) of the group fd, in live_take */
};

/* Watch all of t; nev: the most events one read takes. 0 or -errno. */
int live_open(struct live_reader *r, enum live_kind kind, const struct gentree *t, long nev);
/* Read as a daemon does, waiting when nothing is queued, until the sentinel
 * or an overflow (which may have taken the sentinel: the round has failed). */
int live_follow(struct live_reader *r, struct tally *c);
/* Read n events that are queued already, without waiting for more (raw: each
 * read(2) timed in thread CPU time). */
int live_take(struct live_reader *r, struct tally *c, long n);
void live_counts(struct live_reader *r, struct live_counts *n);
void live_close(struct live_reader *r);

#endif
