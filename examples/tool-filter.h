/* SPDX-License-Identifier: MIT */
/* Which events the tools leave out: --exclude and --include, and @paths in a tree. */
#ifndef FSNW_EXAMPLES_TOOL_FILTER_H
#define FSNW_EXAMPLES_TOOL_FILTER_H

#include <regex.h>
#include <stdbool.h>

#include "fsnwatch.h"
#include "tool-names.h"
#include "tool-paths.h"

struct tool_filter {
	regex_t re;
	bool have_re;
	bool include;   /* --include: leave out what does not match */
	bool recursive; /* @paths count in trees only */
};

/*
 * Compile re (NULL: none) as a POSIX extended regular expression, as
 * inotify-tools does. Returns 0, or -1 after inotify-tools' message.
 */
int tool_filter_init(struct tool_filter *f, const char *re, bool include, bool icase,
		     bool recursive);

void tool_filter_fini(struct tool_filter *f);

/*
 * Whether ev is left out: %w%f (n) matches --exclude or does not match
 * --include, or the event is in a tree below an @path. Q_OVERFLOW never
 * is: it says events were lost, whichever they were.
 */
bool tool_filtered(const struct tool_filter *f, const struct tool_paths *p,
		   const struct fsnw_event *ev, const struct tool_names *n);

#endif
