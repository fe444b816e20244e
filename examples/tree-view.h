/* SPDX-License-Identifier: MIT */
/*
 * A view of a watched tree (every entry below the root: a directory or
 * not), kept by applying the library's tree events mechanically, as
 * libfsnwatch(7) ("The tree event contract") says a consumer does:
 *
 *   CREATE          the entry is new; a directory starts empty, and what
 *                   it holds comes as (synthetic) creates of its own
 *   DELETE          the entry and what is below it go
 *   MOVED_FROM, then MOVED_TO of the same cookie as the tree's next event:
 *                   the entry moves, with what is below it
 *   MOVED_FROM alone  moved out: as DELETE
 *   MOVED_TO alone  moved in: as CREATE
 *   FSNW_OVERFLOW   scan again
 *   MOVE_SELF of the root: at the root's path, the tree ends (its IGNORED
 *                   follows); at another path, the library followed the
 *                   rename (fanotify): the root is that path now
 *
 * The type is FSNW_ISDIR; nothing is looked up on disk to apply an event.
 * A scan (at the start, and after an overflow) reads the tree itself, and
 * answers for the moment it was made only once a read came back empty with
 * no directory created, deleted or moved since it began: until then it may
 * have met a rename that events not yet read repeat, so such an event makes
 * the view scan again. Once the tree rests and every event has been read,
 * the view equals the tree.
 */
#ifndef FSNW_EXAMPLES_TREE_VIEW_H
#define FSNW_EXAMPLES_TREE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fsnwatch.h"
#include "snapshot.h"

struct tree_view {
	char *root;            /* as given, trailing slashes dropped */
	size_t rootlen;
	int wid;               /* the tree's watch */
	FILE *out;             /* JSON lines of its events and rescans; NULL: none */
	struct snapshot view;
	/* A MOVED_FROM applied: the entry, taken out, waits for the MOVED_TO of
	 * its cookie, which is the tree's next event if it comes at all. */
	bool moving;
	uint32_t moved_cookie;
	struct snap_node *moved;
	/* The last scan waits for an empty read to stand (unsettled); dirty: a
	 * directory was created, deleted or moved since it began. */
	bool unsettled;
	bool dirty;
	size_t scans;          /* of the whole tree, the first one included */
	size_t overflows;
	size_t created, deleted; /* what the last scan found changed */
};

/* Start an empty view of root (a copy is kept). Returns 0 or -errno. */
int tree_view_init(struct tree_view *t, const char *root, int wid, FILE *out);

/*
 * Apply one event read from the library (printing it, with the lines of a
 * scan it causes, when out is set). Returns 0 to go on, 1 when the root
 * itself is gone or moved away, -errno on error.
 */
int tree_view_event(struct tree_view *t, const struct fsnw_event *ev);

/* Scan the whole tree (after the add: the view's start). Returns 0 or -errno. */
int tree_view_scan(struct tree_view *t);

/*
 * A read came back empty: the last scan stands, unless a directory changed
 * since it began, in which case the tree is scanned again (and another
 * empty read is needed). Returns 0 or -errno.
 */
int tree_view_quiet(struct tree_view *t);

/* Does the view wait for an empty read before its scan stands? */
static inline bool tree_view_unsettled(const struct tree_view *t)
{
	return t->unsettled;
}

/* Release everything the view holds. */
void tree_view_fini(struct tree_view *t);

#endif
