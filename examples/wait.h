/* SPDX-License-Identifier: MIT */
/* fsnw-wait's command line and the state it sets up. */
#ifndef FSNW_EXAMPLES_WAIT_H
#define FSNW_EXAMPLES_WAIT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsnwatch.h"

struct wait_target {
	char *path;
	bool dir;
	int wid;
};

struct wait_opts {
	bool monitor, recursive, no_deref, json, csv, stats, no_merge, no_newline;
	bool daemon, syslog;
	int quiet;
	double timeout;        /* seconds; 0: none */
	double stats_interval; /* seconds; 0: none */
	uint32_t events;       /* -e, FSNW_UNMOUNT and FSNW_IGNORED included; 0: all */
	uint32_t backend;
	const char *format, *timefmt, *fromfile, *outfile;
	/* --exclude, --excludei, --include, --includei: only one kind, the last given. */
	const char *regex;
	bool regex_include, regex_icase;
};

struct wait_state {
	struct wait_opts o;
	struct wait_target *t; /* sorted by wid once the watches are set */
	size_t nt, capt;
	char **excl;           /* @paths, trailing slashes dropped */
	size_t nexcl, capexcl;
	regex_t re;            /* the compiled o.regex */
	bool have_re;
	struct fsnw *w;
	int sfd;               /* signalfd: SIGINT, SIGTERM, SIGHUP */
	int tfd;               /* timerfd of --stats-interval, or -1 */
	int ready_fd;          /* -d: where the daemon tells its parent how the setup went */
	uint32_t wanted;       /* events that are printed and count as "received" */
};

/*
 * Parse the options and gather the paths (arguments and --fromfile) into s.
 * Returns 0 to go on, 1 when done (--help), -1 after printing a usage error.
 */
int wait_parse_opts(struct wait_state *s, int argc, char **argv);

/* Free the paths gathered by wait_parse_opts. */
void wait_free_paths(struct wait_state *s);

/*
 * A message for the user: on standard error, or with --syslog to syslog(3)
 * (and then without the newline that ends fmt, if any).
 */
void wait_say(const struct wait_state *s, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
