/* SPDX-License-Identifier: MIT */
/* fsnw-wait's command line and the state it sets up. */
#ifndef FSNW_EXAMPLES_WAIT_H
#define FSNW_EXAMPLES_WAIT_H

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
	bool monitor, recursive, no_deref, json, stats, no_merge, no_newline;
	int quiet;
	double timeout;    /* seconds; 0: none */
	uint32_t events;   /* -e, FSNW_UNMOUNT and FSNW_IGNORED included; 0: all */
	uint32_t backend;
	const char *format, *timefmt, *fromfile;
};

struct wait_state {
	struct wait_opts o;
	struct wait_target *t; /* sorted by wid once the watches are set */
	size_t nt, capt;
	char **excl;           /* @paths, trailing slashes dropped */
	size_t nexcl, capexcl;
	struct fsnw *w;
	int sfd;               /* signalfd: SIGINT, SIGTERM, SIGHUP */
	uint32_t wanted;       /* events that are printed and count as "received" */
};

/*
 * Parse the options and gather the paths (arguments and --fromfile) into s.
 * Returns 0 to go on, 1 when done (--help), -1 after printing a usage error.
 */
int wait_parse_opts(struct wait_state *s, int argc, char **argv);

/* Free the paths gathered by wait_parse_opts. */
void wait_free_paths(struct wait_state *s);

#endif
