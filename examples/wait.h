/* SPDX-License-Identifier: MIT */
/* fsnw-wait's command line and the state it sets up. */
#ifndef FSNW_EXAMPLES_WAIT_H
#define FSNW_EXAMPLES_WAIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "tool-filter.h"
#include "tool-paths.h"

struct wait_opts {
	bool monitor, recursive, no_deref, json, csv, stats, merge, no_newline;
	bool daemon, syslog, filesystem;
	int quiet;
	double timeout;        /* seconds; 0: none */
	double stats_interval; /* seconds; 0: none */
	uint32_t events;       /* -e, inotifytools' bits (TOOL_ONESHOT too); 0: all */
	uint32_t backend;
	const char *format, *timefmt, *fromfile, *outfile;
	/* --exclude, --excludei, --include, --includei: only one kind, the last given. */
	const char *regex;
	bool regex_include, regex_icase;
};

struct wait_state {
	struct wait_opts o;
	char **args;           /* the path arguments, gathered after --fromfile's */
	int nargs;
	struct tool_paths paths;
	struct tool_filter filter;
	struct fsnw *w;
	bool fanotify;         /* the backend in use: names as fsnotifywait gives them */
	int sfd;               /* signalfd: SIGINT, SIGTERM, SIGHUP */
	int tfd;               /* timerfd of --stats-interval, or -1 */
	int ready_fd;          /* -d: where the daemon tells its parent how the setup went */
	uint32_t wanted;       /* events that are printed (inotifywait's orig_events) */
	uint32_t accepted;     /* a single wait ends with 0 on one of these */
	uint32_t padding;      /* asked of the kernel only because a watch needs an event */
	int mark_error;        /* -S: why the filesystem cannot be marked, told after the setup message */
};

/*
 * Parse the options into s (the paths are left in s->args). Returns 0 to
 * go on, 1 when done (--help), -1 after printing a usage error.
 */
int wait_parse_opts(struct wait_state *s, int argc, char **argv);

/*
 * A message for the user: on standard error, or with --syslog to syslog(3),
 * as inotifywait sends it (the newline that ends fmt included).
 */
void wait_say(const struct wait_state *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
