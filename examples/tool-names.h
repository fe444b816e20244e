/* SPDX-License-Identifier: MIT */
/*
 * What inotify-tools prints as %w and %f for an event: with inotify, the
 * path as given (a directory's with a '/' added) and the entry name; with
 * fanotify, as fsnotifywait resolves them, the absolute directory of the
 * object and its name.
 */
#ifndef FSNW_EXAMPLES_TOOL_NAMES_H
#define FSNW_EXAMPLES_TOOL_NAMES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "tool-paths.h"

struct tool_names {
	const char *dir;  /* %w (not NUL-terminated: dirlen bytes) */
	size_t dirlen;
	const char *name; /* %f, "" for none */
	char buf[PATH_MAX + 2];
};

/*
 * Fill n for ev, whose wid p knows (an unknown wid is taken for a
 * directory's). The strings live in n, ev and p.
 */
void tool_names_get(const struct tool_paths *p, bool fanotify, const struct fsnw_event *ev,
		    struct tool_names *n);

/* The last event shown on fanotify, for tool_fanotify_copy. */
struct tool_seen {
	int wid;
	uint32_t mask;
	size_t len;
	char key[PATH_MAX + NAME_MAX + 4];
};

/*
 * Whether ev, named n, is a copy fsnotifywait would not print: fanotify
 * reports an event once to a group, however many of its marks see it,
 * where the library gives it to each watch (a file and its directory),
 * one after the other; and where every directory is marked (a tree, -S),
 * it reports an event on a directory once, as the directory's own, where
 * the library also reports it to the parent, as inotify does.
 */
bool tool_fanotify_copy(struct tool_seen *last, bool all_dirs, const struct fsnw_event *ev,
			const struct tool_names *n);

#endif
