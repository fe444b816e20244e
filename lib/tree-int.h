/* SPDX-License-Identifier: MIT */
/*
 * What the tree modules share, and nobody else: tree.c (trees, their path
 * index, what their events say) and tree-walk.c (the walks that read their
 * directories). Other modules use tree.h.
 */
#ifndef FSNW_TREE_INT_H
#define FSNW_TREE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "handle.h"

struct tree {
	struct list node;    /* in trees.all */
	struct watch *lw;    /* the tree watch */
	struct fantree *fan; /* a tree without a walk (fantree.c): the rest is unused */
	struct htab by_path; /* its links, by path */
	/* A relative root is resolved against the directory current at the
	 * add: new directories found later must not depend on a chdir since. */
	struct strref *abs_root; /* NULL when the root path is absolute */
	/* The root as /proc/self/mountinfo spells mount points (symlinks and
	 * dot-dots resolved), to tell which mounts are inside; NULL: unknown. */
	struct strref *canon_root;
	struct link *root;
	dev_t root_dev;      /* FSNW_WATCH_ONE_FS, and the root's identity */
	ino_t root_ino;
	uint32_t kmask;      /* the caller's mask and what following directories needs */
	unsigned moving;     /* links with a MOVED_FROM awaiting its MOVED_TO or MOVE_SELF */
	struct list moves;   /* struct dir_move: unwatched directories moved from */
	struct walk *adding; /* the add's own walk, until it ends */
	int add_err;         /* why the add's walk failed, or 0 */
	bool ending;         /* lost its root: ends (FSNW_IGNORED) after this drain */
};

/*
 * A directory a walk is still to read. Its path is the one events report;
 * the path that resolves it is real_path() of it.
 */
struct wdir {
	struct strref *path;
	unsigned flags;
};

#define WDIR_ROOT   0x1u /* the tree's own directory (the add) */
#define WDIR_SYNTH  0x2u /* report what it holds as synthetic FSNW_CREATE */
#define WDIR_REREAD 0x4u /* linked already (a rescan, or a read that failed): read it */

enum walk_kind {
	WALK_ADD,      /* the tree add: any failure fails the add */
	WALK_NEW,      /* a created directory: what it holds is reported (synthetic) */
	WALK_MOVED_IN, /* moved in from outside: the caller lists it */
	WALK_RESCAN,   /* linked directories read again for subdirectories we lack */
	WALK_MOUNT,    /* a mount appeared or went: the caller was told to rescan */
};

/*
 * A walk reads directories one at a time, each by its path, from an
 * explicit stack: it holds one file descriptor whatever the depth, and it
 * can stop after any directory and go on after the next drain (steps).
 */
struct walk {
	struct list node;    /* in trees.walks (to run) or trees.retry */
	struct tree *t;
	enum walk_kind kind;
	bool started;        /* its first directory was taken from the stack */
	bool failed;         /* it raised FSNW_OVERFLOW for a directory it could not read */
	bool top_vanished;   /* its first directory was not there */
	int err;             /* the failure that stopped it */
	unsigned tries;      /* retries so far (back-off) */
	uint64_t due_ns;     /* retry: not before (CLOCK_MONOTONIC) */
	struct wdir redo;    /* the directory whose read failed, first on the next run */
	struct wdir *stack;
	size_t n, cap;
};

enum walk_result {
	WALK_DONE,   /* nothing left to read */
	WALK_PAUSED, /* the step's budget is spent */
	WALK_FAILED, /* stopped by wk->err; redo holds the directory */
};

/* tree.c, for tree-walk.c */
struct link *tree_find_link(const struct tree *t, const char *s, size_t len);
void tree_index_link(struct tree *t, struct link *l);
struct strref *tree_real_path(const struct tree *t, struct strref *path);

/* tree-walk.c */
/* A walk of path (the reference is taken, and put on failure); NULL: ENOMEM. */
struct walk *walk_new(struct tree *t, enum walk_kind kind, struct strref *path,
		      unsigned flags);
void walk_free(struct walk *wk);
/* Read directories until none is left, *budget is spent or one fails. */
enum walk_result walk_run(struct fsnw *w, struct walk *wk, unsigned *budget);
/* Has the walk a directory at or below dir still to read? */
bool walk_has_under(const struct walk *wk, const struct strref *dir);
/* Give directories at or below from their path under to; false: ENOMEM. */
bool walk_rebase(struct walk *wk, const struct strref *from, const struct strref *to);
/* Forget the directories at or below dir. */
void walk_cancel_under(struct walk *wk, const struct strref *dir);
/* Failures a later try may not meet: resources, not permissions. */
bool walk_transient(int err);

/* Is p dir, or below it? */
static inline bool path_under(const struct strref *p, const struct strref *dir)
{
	return p->len >= dir->len && memcmp(p->s, dir->s, dir->len) == 0 &&
	       (p->len == dir->len || p->s[dir->len] == '/' ||
		(dir->len && dir->s[dir->len - 1] == '/'));
}

#endif
