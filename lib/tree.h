/* SPDX-License-Identifier: MIT */
/*
 * Tree watches: one wid over a directory and everything below it. There
 * are two kinds, behind one interface that route.c and engine.c call:
 *
 *   walked   (tree.c, tree-model.c, tree-walk.c) every directory has a
 *            kernel watch of its own (inotify; fanotify where a filesystem
 *            mark cannot serve), found by reading the directories
 *   fan      (fantree.c) one fanotify filesystem mark for the whole
 *            tree, directories placed by the file handles events carry
 *
 * Both keep what libfsnwatch(7) calls the tree event contract: a consumer
 * that applies the events in order, mechanically, ends with the tree as it
 * is once changes stop, or was told FSNW_OVERFLOW. The operations:
 *
 *   tree_add           a new tree (its first step; the add settles the rest)
 *   tree_event         a kernel event for a walked tree's directory (route)
 *   tree_event_deferred  the same, for one that only needs reporting
 *   trees_hear         a kernel event a fanotify tree may hear (route)
 *   trees_overflow     the kernel's queue overflowed (route)
 *   tree_link_dropped  the kernel dropped a walked tree's directory (route)
 *   trees_settle       after a complete drain, before links go live (route)
 *   trees_after_drain  after a complete drain: the walks' steps (engine)
 *   trees_mount_fd / trees_check_mounts   the mount table (engine)
 *   trees_pop_ended    a tree that lost its root, for the router to end
 *
 * Each operation that may change what tree_event_path answers for a link,
 * or put a directory's path, moves kwatches.route_gen on (kwatch_changed),
 * so that the router's answers (route.h) go, and has the paths the tree
 * lane lent take a reference (queue_keep_lent); the rest change no
 * directory: tree_event_deferred (it builds the path of a directory whose
 * path is stale, never one that answered or was lent since it went
 * stale), trees_hear (a fanotify tree shuts the lane while it exists),
 * tree_add_result and trees_pop_ended (flags the check does not read),
 * tree_free (the handle closes, its queue freed first).
 */
#ifndef FSNW_TREE_H
#define FSNW_TREE_H

#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"
#include "fantree.h"
#include "list.h"
#include "mounts.h"
#include "procfd.h"

struct fsnw;
struct watch;
struct link;
struct kevent;

struct trees {
	struct list all;      /* struct tree.node: every tree watch */
	/*
	 * The walk window: a step of the walks opens it, and the complete
	 * drain that follows closes it (trees_after_drain). What a step read
	 * answers for the moment it was read; only once the drain has read
	 * every event older than that does the step's directories' listings
	 * stand (tree-walk.c). The echoes of the step's own reads of
	 * directories are dropped meanwhile. gen names the window.
	 */
	struct list stepped;  /* struct tdir.qnode: read in the open window */
	bool window_open;
	uint32_t window_gen;
	unsigned nending;     /* trees that lost their root */
	unsigned nwork;       /* walked trees with directories to read or moves to pair */
	uint64_t freed_seen;  /* kernel watches gone when the retries last ran */
	unsigned char *dents; /* the walks' getdents64 buffer */
	struct procfd procfd; /* the walks' descriptors by name */
	struct mounts mounts; /* followed while a tree exists */
	/* Trees on fanotify that need no walk: fantree.c's. */
	struct fantrees fan;
};

/* cache_max: directories the fanotify trees' cache holds (0: the default). */
void trees_init(struct trees *ts, size_t cache_max);
/* Free the walk buffer, the mount table and the fanotify trees' cache (the
 * trees go with their watches). */
void trees_fini(struct trees *ts, struct fsnw_stats *st);

/*
 * Start a tree add: on fanotify, where it can, the tree is set up without a
 * walk (fantree.h); otherwise the root is read. On failure everything is
 * undone. The rest of the walk runs after the drains that follow (the
 * caller settles), and tree_add_result says how it ended.
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

/*
 * A kernel event reached l, the link of a walked tree's directory: report
 * it (or drop it: the echo of a walk's read, an event of a directory that
 * left the tree) and apply what it says about directories. No link is
 * detached here. Returns true when the tree lost its root and must end
 * (FSNW_IGNORED).
 */
bool tree_event(struct fsnw *w, struct link *l, const struct kevent *ev);
/*
 * The same for an event that only needs reporting (a file's, in a
 * directory with nothing pending): deferred, as a plain watch's, with the
 * directory's lent path. Returns false, having done nothing, for any other
 * event: then tree_event takes it.
 */
bool tree_event_deferred(struct fsnw *w, struct link *l, const struct kevent *ev);
/*
 * The path an event (mask, name) at l, a walked tree's link, is reported
 * with if reporting it is all tree_event would do, in tree_event_deferred's
 * case, and the directory's path is built already; NULL otherwise (the
 * router's lane, route.h, then routes it the usual way). Borrowed, as
 * tdir_path's: it stays the directory's until an event that moves a
 * directory, which is never such an event.
 */
struct strref *tree_event_path(struct link *l, uint32_t mask, const char *name);
/* The event's own part of tree_event_path's test: a file's event, not a
 * move (the rest is its directory's). */
static inline bool tree_event_plain(uint32_t mask, const char *name)
{
	return name && !(mask & (FSNW_ISDIR | FSNW_MOVE));
}
/* Bring what tree_event_path reads of l's directory into the cache (a read
 * of l->tnode, prefetches of the rest). */
void tree_link_prefetch(const struct link *l);
/*
 * A kernel event that a tree without a walk may hear through its
 * filesystem mark (fantree_event); plain: a watch of its own also hears
 * it. Returns false when it is no tree event.
 */
static inline bool trees_hear(struct fsnw *w, const struct kevent *ev, bool plain)
{
	return fantree_event(w, ev, plain);
}
/*
 * The kernel lost events (its queue overflowed): trees place what they
 * held first, a fanotify tree forgets where its directories are, and a
 * walked tree reads every directory again for the new ones it may have
 * missed. The caller raises FSNW_OVERFLOW.
 */
void trees_overflow(struct fsnw *w);
/* The kernel dropped the directory of l. Returns true when the whole tree is gone. */
FSNW_COLD bool tree_link_dropped(struct fsnw *w, struct link *l);

/* Work waits that needs a complete drain first: a walk window, directories
 * to read, a move to pair, a tree to end, a fanotify batch. */
static inline bool trees_busy(const struct trees *ts)
{
	return ts->window_open || ts->nwork || ts->nending || fantrees_busy(&ts->fan);
}
/* After a complete drain, before pending links go live: the fanotify
 * trees place their batch. */
void trees_settle(struct fsnw *w);
/*
 * After a complete drain: close the walk window (the listings of its step
 * stand, or are read again), and run a step of the walks (opening a new
 * window); with retry, directories that failed for want of resources are
 * read again when due. Returns true when another complete drain is due.
 */
bool trees_after_drain(struct fsnw *w, bool retry);
/* A tree that lost its root (the caller ends it: watches_dropped), or NULL;
 * *failed: it was still being added (its add fails instead). */
struct watch *trees_pop_ended(struct trees *ts, bool *failed);
/* When the next retry is due (CLOCK_MONOTONIC ns), or 0: none waits. */
uint64_t trees_retry_due(const struct trees *ts);

/* The fd to poll (POLLPRI) for changes of the mount table, or -1. */
static inline int trees_mount_fd(const struct trees *ts)
{
	return ts->mounts.poll_fd;
}
/* Follow mounts and unmounts inside trees since the last call (fsnw_read). */
void trees_check_mounts(struct fsnw *w);

/*
 * Kernel mask a walked tree needs besides the caller's, to follow its
 * directories: a directory deleted says so itself (DELETE_SELF, then the
 * kernel drops its watch), so DELETE is read only when the caller asks.
 */
#define TREE_KMASK (FSNW_CREATE | FSNW_MOVED_FROM | FSNW_MOVED_TO | FSNW_DELETE_SELF | \
		    FSNW_MOVE_SELF)

#endif
