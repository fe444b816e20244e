/* SPDX-License-Identifier: MIT */
/*
 * Tree watches: one wid over a directory and every directory below it.
 * The walk uses openat() relative to the parent's fd and getdents64(), never
 * chdir() nor a re-resolution per level, and shrugs off entries that vanish
 * under it. New directories are watched as they appear; what was created in
 * them before their watch landed is reported as synthetic FSNW_CREATE.
 *
 * tree.c owns struct trees (the work list of directories to follow, the
 * retry list, the walk window) and each tree's path index. It calls the
 * kernel-watch table and the queue; the engine calls it after each drain.
 */
#ifndef FSNW_TREE_H
#define FSNW_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "fantree.h"
#include "list.h"

struct fsnw;
struct watch;
struct link;
struct kevent;

struct trees {
	struct list all;    /* struct tree.node: every tree watch */
	struct list work;   /* directories to follow after the current drain */
	struct list retry;  /* directories a tree failed to follow: tried after each drain */
	bool rescan;        /* some tree directory must be read again for new subdirectories */
	/*
	 * The walk window: walks open it, and the complete drain that follows
	 * them closes it. While it is open, the echoes of the walks' own
	 * directory reads are dropped (tree_walk_echo). gen names the window.
	 */
	bool window_open;
	uint32_t window_gen;
	/* Trees on fanotify that need no walk: fantree.c's. */
	struct fantrees fan;
};

/* cache_max: directories the fanotify trees' cache holds (0: the default). */
void trees_init(struct trees *ts, size_t cache_max);
/* Free the work lists (the trees go with their watches). */
void trees_fini(struct trees *ts);

/* Walk lw->path and attach every directory (on fanotify, where it can, set
 * the tree up without a walk: fantree.h). On failure everything is undone. */
int tree_add(struct fsnw *w, struct watch *lw);
/* Take back a tree add exactly (batch rollback): see kwatch_undo. */
void tree_undo(struct fsnw *w, struct watch *lw);
/* Detach every directory of the tree (parking where the cache allows) and free it. */
void tree_remove(struct fsnw *w, struct watch *lw, bool park);
/* Free the tree without syscalls (the handle closes; links go with the table). */
void tree_free(struct watch *lw);

/* An echo of the library's own read of a directory during a walk: drop it. */
bool tree_walk_echo(const struct trees *ts, const struct link *l, const struct kevent *ev);
/* A kernel event reached a tree link: note new directories, apply renames
 * and departures. It may detach l (and only links of l's tree). */
void tree_note_event(struct fsnw *w, struct link *l, const struct kevent *ev);
/* The kernel dropped the directory of l. Returns true when the whole tree is gone. */
bool tree_link_dropped(struct fsnw *w, struct link *l);

/* Work waits that needs a complete drain first: a walk window, directories
 * to follow or to read again. */
bool trees_busy(const struct trees *ts);
/*
 * After a complete drain: close the walk window, and walk the directories
 * found meanwhile (opening a new window); with retry, also those that
 * failed for want of resources before. Returns true when it walked, so
 * another complete drain is due.
 */
bool trees_after_drain(struct fsnw *w, bool retry);

/* Kernel mask a tree needs besides the caller's, to follow its directories. */
#define TREE_KMASK (FSNW_CREATE | FSNW_MOVED_FROM | FSNW_MOVED_TO | FSNW_DELETE_SELF | \
		    FSNW_MOVE_SELF)

#endif
