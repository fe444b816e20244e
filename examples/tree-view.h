/* SPDX-License-Identifier: MIT */
/*
 * fsnw-tree's view of its tree, kept up to date from the library's events,
 * and put right by a rescan when they cannot be trusted (an overflow, or an
 * event the view cannot place).
 */
#ifndef FSNW_EXAMPLES_TREE_VIEW_H
#define FSNW_EXAMPLES_TREE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "snapshot.h"

struct tree_view {
	char *root;            /* as given, trailing slashes dropped */
	size_t rootlen;
	int wid;               /* the tree's watch */
	struct snapshot view;
	/* The last entry moved away, kept until its MOVED_TO (same cookie) says
	 * where it went: a rename within the tree keeps its subtree. */
	struct snap_node *moved;
	uint32_t moved_cookie;
	size_t rescans;        /* of the whole tree, for the statistics */
	/*
	 * A tree the library does not walk (fanotify) reads no directory moved
	 * in, and a rename the reader has not read yet may overtake our listing
	 * of one. So each listed since the last empty read is listed again at
	 * every MOVED_TO that carries it (libfsnwatch(7), "Moves"). inotify
	 * trees read them under their new name themselves: relist is false.
	 */
	bool relist;
	char **listed;         /* relative to the root */
	size_t nlisted, cap_listed;
	char *moved_from;      /* the path of moved, kept only when relisting */
};

/*
 * Print one event read from the library as a JSON line and apply it to the
 * view, with the lines of any rescan it causes. Returns 0 to go on, 1 when
 * the root itself is gone or moved away, -errno on error.
 */
int tree_view_event(struct tree_view *t, const struct fsnw_event *ev);

/* Fill the view from a walk of the whole tree. Returns 0 or -errno. */
int tree_view_walk(struct tree_view *t);

/* Drop the entry kept since its MOVED_FROM. */
void tree_view_forget_moved(struct tree_view *t);

/* Are there listings that events not yet read may have overtaken? Then read until empty. */
static inline bool tree_view_relisting(const struct tree_view *t)
{
	return t->nlisted > 0;
}

/* A read came back empty: every event older than the listings has been applied. */
void tree_view_quiet(struct tree_view *t);

/* Release everything the view holds (not root). */
void tree_view_fini(struct tree_view *t);

#endif
