/* SPDX-License-Identifier: MIT */
/*
 * The option values fsnw-wait and fsnw-watch take as inotify-tools takes
 * them: event lists, timeouts, the regular expression options. The same
 * strings are accepted and refused, and refused in the same words.
 */
#ifndef FSNW_EXAMPLES_TOOL_ARGS_H
#define FSNW_EXAMPLES_TOOL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* In inotifywait's -e lists only: not a bit of struct fsnw_event's mask. */
#define TOOL_ONESHOT 0x80000000u

/*
 * Parse a comma-separated event list, in any case, into *mask: the names
 * of inotifytools (access ... unmount, close, move, and q_overflow, ignored,
 * isdir, oneshot, all_events). As there, an empty list, or one with an
 * empty name in it ("create," or "a,,b"), stands for no event at all (0).
 * Returns 0, or -1 for a list with an unknown name.
 */
int tool_events_parse(const char *list, uint32_t *mask);

/*
 * The names of the bits of mask, separated by sep, as inotify-tools prints
 * them: its order (CLOSE after IGNORED), "0x%08x" for a mask with none of
 * its bits. Writes what fits in buf and returns the whole length, as
 * snprintf(3) does; TOOL_EVENTS_MAX always fits.
 */
#define TOOL_EVENTS_MAX 256
size_t tool_events_format(char *buf, size_t size, uint32_t mask, char sep);

/* Parse -e's argument into *events (or'ed in); prints inotifywait's message and returns -1. */
int tool_event_option(const char *arg, uint32_t *events);

/*
 * Parse -t's argument into *seconds, as inotifywait does: a decimal integer
 * taken as unsigned int, so -1 is 136 years and 2^32 none (0, for ever).
 * Fractions of a second ("0.5") are accepted too. Prints inotifywait's
 * message and returns -1 when it is not a number.
 */
int tool_timeout_parse(const char *arg, double *seconds);

/* --exclude, --excludei, --include, --includei as given (the last of each counts). */
struct tool_regex_opts {
	const char *exclude, *excludei, *include, *includei;
	unsigned nexclude, nexcludei;
};

/*
 * Refuse the combinations inotify-tools refuses, in its words; returns -1
 * after saying why, else 0. Chosen in *re (NULL: none), *include, *icase.
 */
int tool_regex_check(const struct tool_regex_opts *r, const char **re, bool *include,
		     bool *icase);

/* inotifywait's warnings about --exclude and --excludei given more than once. */
void tool_regex_warn(const struct tool_regex_opts *r);

#endif
