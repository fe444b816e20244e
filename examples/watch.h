/* SPDX-License-Identifier: MIT */
/* fsnw-watch's command line and the state it sets up. */
#ifndef FSNW_EXAMPLES_WATCH_H
#define FSNW_EXAMPLES_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "tool-filter.h"
#include "tool-names.h"
#include "tool-paths.h"
#include "watch-table.h"

struct watch_opts {
	bool recursive, no_deref, json, filesystem;
	int verbose, zero;
	double timeout;      /* seconds; 0: until a signal */
	uint32_t events;     /* -e, inotifytools' bits; 0: all */
	uint32_t backend;
	long sort;           /* see struct watch_report */
	const char *sort_arg;
	const char *fromfile;
	const char *regex;
	bool regex_include, regex_icase;
};

struct watch_state {
	struct watch_opts o;
	char **args;
	int nargs;
	struct tool_paths paths;
	struct tool_filter filter;
	struct watch_table table;
	struct fsnw *w;
	bool fanotify;
	int sfd;             /* signalfd: INT, TERM, HUP, USR1 */
	int tfd;             /* timerfd of -t, or -1 */
	uint32_t events;     /* what is counted and may have a column */
	char *moved_from;    /* a watched directory's MOVED_FROM, waiting for its MOVED_TO */
	struct tool_seen seen; /* the last event counted, on fanotify */
	int mark_error;      /* -S: why the filesystem cannot be marked, told in its place */
};

/* Parse the options into s. Returns 0 to go on, 1 when done (--help), -1 on a usage error. */
int watch_parse_opts(struct watch_state *s, int argc, char **argv);

/*
 * inotifywatch's watch_recursively, for the table: a row for every
 * directory at or below path, in the order it would watch them (the
 * entries of a directory as readdir(3) lists them, each directory after
 * what is below it), @paths left out. path names a directory with a '/'
 * at its end. Returns 0 or -ENOMEM.
 */
int watch_walk(struct watch_state *s, const char *path);

/*
 * inotifywatch's bookkeeping of a tree after each event (n names it): a new
 * directory gets a row, a renamed one renames the rows below it, and one
 * moved out of the tree loses its own row. A new directory is not read
 * here: the library has read it, and reports what was in it; reading it
 * again would make events of our own on it. Returns 0 or -ENOMEM.
 */
int watch_follow_tree(struct watch_state *s, const struct fsnw_event *ev,
		      const struct tool_names *n);

#endif
