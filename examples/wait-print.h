/* SPDX-License-Identifier: MIT */
/* fsnw-wait's output: inotifywait's line formats and our JSON lines. */
#ifndef FSNW_EXAMPLES_WAIT_PRINT_H
#define FSNW_EXAMPLES_WAIT_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "fsnwatch.h"

/* inotifywait's default line: the watched path, its events, the name. */
#define WAIT_DEFAULT_FORMAT "%w %,e %f"

struct wait_print {
	const char *format;  /* --format, or WAIT_DEFAULT_FORMAT */
	const char *timefmt; /* --timefmt, for %T */
	bool newline;        /* end each line with '\n' (not with --no-newline) */
	bool json;           /* one JSON object a line instead */
	bool csv;            /* inotifywait's CSV line instead */
	/* Whether the watch of an event without a name is a directory, which
	 * inotifywait shows with a trailing slash on %w. */
	bool (*wid_is_dir)(void *arg, int wid);
	void *arg;
};

/* Print one event in the chosen form. */
void wait_print_event(const struct wait_print *p, FILE *f, const struct fsnw_event *ev);

/*
 * What inotifywait matches --exclude and --include against: %w%f, the
 * watched path (with its slash) and the name. Written to buf when its
 * length is less than size; returns the length, as snprintf(3) does.
 */
size_t wait_print_watched_name(const struct wait_print *p, const struct fsnw_event *ev,
			       char *buf, size_t size);

/* Check a --format string before any watch is set up; returns 0 or prints why not. */
int wait_format_check(const struct wait_print *p);

#endif
