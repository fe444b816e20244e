/* SPDX-License-Identifier: MIT */
/* fsnw-wait's output: inotifywait's line formats and our JSON lines. */
#ifndef FSNW_EXAMPLES_WAIT_PRINT_H
#define FSNW_EXAMPLES_WAIT_PRINT_H

#include <stdbool.h>
#include <stdio.h>

#include "fsnwatch.h"
#include "tool-names.h"

/* inotifywait's default line: the watched path, its events, the name. */
#define WAIT_DEFAULT_FORMAT "%w %,e %f"

struct wait_print {
	const char *format;  /* --format, or WAIT_DEFAULT_FORMAT */
	const char *timefmt; /* --timefmt, for %T */
	bool newline;        /* end each line with '\n' (not with --no-newline) */
	bool json;           /* one JSON object a line instead */
	bool csv;            /* inotifywait's CSV line instead */
	bool fanotify;       /* names as fsnotifywait shows them (for CSV quoting) */
	/* Set by wait_format_check: */
	bool uses_time;      /* the format has a %T */
	bool prints_nothing; /* it ends in a lone '%', which makes inotifywait print nothing */
};

/*
 * Print one event, named n, in the chosen form. Like inotifywait, a format
 * whose %T comes out empty prints nothing for the event.
 */
void wait_print_event(const struct wait_print *p, FILE *f, const struct fsnw_event *ev,
		      const struct tool_names *n);

/*
 * Check a --format string before any watch is set up, as inotifywait does,
 * and note what it needs. Returns 0, or -1 after saying what is wrong.
 */
int wait_format_check(struct wait_print *p);

#endif
