/* SPDX-License-Identifier: MIT */
/*
 * Tree watches: one wid over a directory and every directory below it.
 * Directories are read by walks (tree-walk.c): each directory is marked,
 * then opened by its path and listed, one file descriptor at a time, from
 * an explicit stack, a bounded number per step. New directories are
 * watched as they appear; what was created in them before their watch
 * landed is reported as synthetic FSNW_CREATE.
 *
 * tree.c owns struct trees (the walks to run and to retry, the walk window,
 * the mount table) and each tree's path index. It calls the kernel-watch
 * table and the queue; the engine calls it after each complete drain, and
 * route.c with each event of a tree. What must happen above it (a tree that
 * lost its root ends) comes back as a result.
 */
#ifndef FSNW_TREE_H
#define FSNW_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"
#include "fantree.h"
#include "list.h"
#include "mounts.h"

struct fsnw;
struct watch;
struct link;
struct kevent;

struct trees {
	struct list all;    /* struct tree.node: every tree watch */
	struct list walks;  /* struct walk.node: to run, oldest first */
	struct list retry;  /* walks stopped for want of resources: run again when due */
	bool rescan;        /* some tree directory must be read again for new subdirectories */
	/*
	 * The walk window: a step of the walks opens it, and the complete
	 * drain that follows closes it. While it is open, the echoes of the
	 * walks' own directory reads are dropped (tree_walk_echo). gen names
	 * the window.
	 */
	bool window_open;
	uint32_t window_gen;
	unsigned nmoves;    /* unwatched directories moved from, in this drain */
	unsigned nending;   /* trees that lost their root */
	uint64_t freed_seen; /* kernel watches gone when the retries last ran */
	unsigned char *dents; /* the walks' getdents64 buffer */
	struct mounts mounts; /* followed while a tree exists */
	/* Trees on fanotify that need no walk: fantree.c's. */
	struct fantrees fan;
};

/* cache_max: directories the fanotify trees' cache holds (0: the default). */
void trees_init(struct trees *ts, size_t cache_max);
/* Free the walks, the mount table and the fanotify trees' cache (the trees
 * go with their watches). */
void trees_fini(struct trees *ts);

/*
 * Start a tree add: on fanotify, where it can, the tree is set up without a
 * walk (fantree.h); otherwise the root and the first step of the walk. On
 * failure everything is undone. The rest of the walk runs after the drains
 * that follow (the caller settles), and tree_add_result says how it ended.
 */
FSNW_COLD int tree_add(struct fsnw *w, struct watch *lw);
/* After the settle: 0, or why the add's walk failed (then undo the add). */
int tree_add_result(struct watch *lw);
/* Take back a tree add exactly (batch rollback): see kwatch_undo. */
void tree_undo(struct fsnw *w, struct watch *lw);
/* Detach every directory of the tree (parking where the cache allows) and free it. */
FSNW_COLD void tree_remove(struct fsnw *w, struct watch *lw, bool park);
/* Free the tree without syscalls (the handle closes; links go with the table). */
void tree_free(struct watch *lw);

/* An echo of the library's own read of a directory during a walk: drop it. */
bool tree_walk_echo(const struct trees *ts, const struct link *l, const struct kevent *ev);
/*
 * A kernel event reached a tree link: note new directories, apply renames
 * and departures. It may detach l (and only links of l's tree). Returns
 * true when the tree lost its root and must end (FSNW_IGNORED).
 */
bool tree_note_event(struct fsnw *w, struct link *l, const struct kevent *ev);
/* The kernel dropped the directory of l. Returns true when the whole tree is gone. */
FSNW_COLD bool tree_link_dropped(struct fsnw *w, struct link *l);

/* Work waits that needs a complete drain first: a walk window, walks to
 * run, directories to read again, moves to pair. */
bool trees_busy(const struct trees *ts);
/*
 * After a complete drain: close the walk window, and run a step of the
 * walks (opening a new window); with retry, walks that failed for want of
 * resources run again when due. Returns true when it walked, so another
 * complete drain is due.
 */
bool trees_after_drain(struct fsnw *w, bool retry);
/* A tree that lost its root (the caller ends it: watches_dropped), or NULL. */
struct watch *trees_pop_ended(struct trees *ts);
/* When the next retry is due (CLOCK_MONOTONIC ns), or 0: none waits. */
uint64_t trees_retry_due(const struct trees *ts);

/* The fd to poll (POLLPRI) for changes of the mount table, or -1. */
static inline int trees_mount_fd(const struct trees *ts)
{
	return ts->mounts.poll_fd;
}
/* Follow mounts and unmounts inside trees since the last call (fsnw_read). */
void trees_check_mounts(struct fsnw *w);

/* Kernel mask a tree needs besides the caller's, to follow its directories. */
#define TREE_KMASK (FSNW_CREATE | FSNW_MOVED_FROM | FSNW_MOVED_TO | FSNW_DELETE_SELF | \
		    FSNW_MOVE_SELF)

#endif
