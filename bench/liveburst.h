/* SPDX-License-Identifier: MIT */
/*
 * The live burst: what a separate writer process does to a watched tree
 * (gentree.h), and the events it must produce. The burst is G groups of
 * four operations; group k, in directory D(k) spread over the tree:
 *   create and write  nk in D(k)          IN_CREATE, IN_CLOSE_WRITE
 *   append            to n(k-1)           IN_CLOSE_WRITE
 *   append            to an existing file IN_CLOSE_WRITE
 *   unlink            n(k-1)              IN_DELETE
 * (the last group's file gets its append and unlink after it), then the
 * sentinel: a FIFO made in the root, one IN_CREATE and nothing else, which
 * tells the reader the burst is over. No two events in a row are alike, so
 * the kernel merges none of them: 5G + 1 events under LIVE_MASK. A
 * watcher of IN_MODIFY (libuv) gets a modify for each write in place of
 * each close: as many events again. The tree is as it was after a burst.
 */
#ifndef FSNW_BENCH_LIVEBURST_H
#define FSNW_BENCH_LIVEBURST_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fsnwatch.h"
#include "gentree.h"

#define LIVE_MASK (FSNW_CREATE | FSNW_DELETE | FSNW_CLOSE_WRITE | FSNW_MOVED_FROM | FSNW_MOVED_TO)
#define BURST_SENTINEL ".sentinel"

struct burst {
	const struct gentree *t;
	long groups;   /* G */
	long dstride;  /* D(k) = k * dstride mod ndirs */
	long fstride;  /* the existing file of group k: k * fstride mod nfiles */
};

/* A burst of ops operations (rounded down to whole groups) over t. */
void burst_init(struct burst *u, const struct gentree *t, long ops);
/* The events of a burst, the sentinel's included. */
static inline long burst_events(const struct burst *u)
{
	return 5 * u->groups + 1;
}
/* Run it, then make the sentinel (also after a failed operation, so no reader
 * waits for ever): 0, or -errno of the first failure. */
int burst_run(const struct burst *u);
/* Remove the sentinel (after the watches are gone). */
void burst_clean(const struct burst *u);
/* n appends to existing files, the i-th to file (first + i) * fstride mod
 * nfiles: n IN_CLOSE_WRITE on different files while n <= nfiles. 0 or -errno. */
int burst_appends(const struct burst *u, long first, long n);
/* The directory an event with this name must name (the sentinel's: the root),
 * or NULL when the name is none of the burst's. */
const char *burst_dir_of(const struct burst *u, const char *name);

/* What a reader saw, by kind, counted as the events stand for (merged ones count
 * as many). Every 16th event is checked against the burst: its name one of the
 * burst's and its directory that name's. */
enum tally_kind {
	TK_CREATE, TK_CLOSE_WRITE, TK_DELETE,
	TK_RENAME, TK_CHANGE, /* libuv's two kinds */
	TK_OTHER, NTALLY
};
struct tally {
	const struct burst *u;
	long n[NTALLY];
	long events;    /* sum of the above */
	long checked;
	long wrong;     /* checked events whose name or directory was not the burst's */
	long overflows;
	bool done;      /* the sentinel came */
};

void tally_check(struct tally *c, const char *dir, const char *name);

/* One event (count: the kernel events it stands for). */
static inline void tally_event(struct tally *c, const char *dir, const char *name,
			       enum tally_kind kind, long count)
{
	c->n[kind] += count;
	c->events += count;
	if (name && name[0] == '.' && !strcmp(name, BURST_SENTINEL))
		c->done = true;
	if (!(c->events & 15) || c->done)
		tally_check(c, dir, name);
}

/* An event by its inotify (libfsnwatch) mask: one count for each bit of the burst's
 * (fanotify merges a create and a close of one file into one event). */
static inline void tally_mask(struct tally *c, const char *dir, const char *name, uint32_t mask,
			      long count)
{
	if (mask & FSNW_CREATE)
		tally_event(c, dir, name, TK_CREATE, count);
	if (mask & FSNW_CLOSE_WRITE)
		tally_event(c, dir, name, TK_CLOSE_WRITE, count);
	if (mask & FSNW_DELETE)
		tally_event(c, dir, name, TK_DELETE, count);
	if (!(mask & (FSNW_CREATE | FSNW_CLOSE_WRITE | FSNW_DELETE)))
		tally_event(c, dir, name, TK_OTHER, count);
}

#endif
