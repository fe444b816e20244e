/* SPDX-License-Identifier: MIT */
/*
 * Tree watches: one wid over a directory and every directory below it.
 * The walk uses openat() relative to the parent's fd and getdents64(), never
 * chdir() nor a re-resolution per level, and shrugs off entries that vanish
 * under it. New directories are watched as they appear; what was created in
 * them before their watch landed is reported as synthetic FSNW_CREATE.
 */
#ifndef FSNW_TREE_H
#define FSNW_TREE_H

#include <stdbool.h>

struct fsnw;
struct watch;
struct link;
struct kevent;

/* Walk lw->path and attach every directory. On failure everything is undone. */
int tree_add(struct fsnw *w, struct watch *lw);
/* Take back a tree add exactly (batch rollback): see inodes_undo. */
void tree_undo(struct fsnw *w, struct watch *lw);
/* Detach every directory of the tree (parking where the cache allows). */
void tree_remove(struct fsnw *w, struct watch *lw, bool park);
/* An echo of the library's own read of a directory during a walk: drop it. */
bool tree_walk_echo(const struct fsnw *w, const struct link *l, const struct kevent *ev);
/* A kernel event reached a tree link: note new directories, apply renames
 * and departures. It may detach l (and only links of l's tree). */
void tree_note_event(struct fsnw *w, struct link *l, const struct kevent *ev);
/* The kernel dropped the directory of l. Returns true when the whole tree is gone. */
bool tree_link_dropped(struct fsnw *w, struct link *l);
/* After a drain: watch the new directories, forget the ones moved away. */
void tree_process_pending(struct fsnw *w);
/* Kernel mask a tree needs besides the caller's, to follow its directories. */
#define TREE_KMASK (FSNW_CREATE | FSNW_MOVED_FROM | FSNW_MOVED_TO | FSNW_DELETE_SELF | \
		    FSNW_MOVE_SELF)

#endif
