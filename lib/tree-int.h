/* SPDX-License-Identifier: MIT */
/*
 * What the walked-tree modules share, and nobody else: tree.c (the life of
 * trees, the steps after a drain, mounts), tree-model.c (a tree's
 * directories and what events say of them) and tree-walk.c (reading a
 * directory and making what it held stand). Other modules use tree.h.
 *
 * The model. A walked tree knows each of its directories as a struct tdir:
 * its name and parent (so a rename moves a subtree in one step, and a path
 * is built from the names when an event needs it), its kernel watch (a
 * link), and its identity (its inode, from the directory's own
 * listing). The model is at *stream time*: it says what the events read so
 * far say, so that each event is reported where it happened. A read of a
 * directory answers for *now*, ahead of the events still unread; what it
 * finds is held (PROVISIONAL) until the drain after it has read every
 * event older than the read, and then merged name by name: a name some
 * event touched since the directory's watch landed is the events'; any
 * other is the listing's (tree-walk.c).
 *
 * States (enum tdir_state) and the list qnode is in:
 *   PENDING      to be read: no watch yet (a new directory, one moved in,
 *                or one a listing found); tree.visits
 *   WAITING      its read found another directory or none at its path,
 *                which events still unread explain; tree.waiting
 *   PROVISIONAL  watched and read in the open window; trees.stepped
 *   LIVE         watched, its listing merged; in no list
 *   RELIST       LIVE, to be read again; tree.visits
 *   LIMBO        left the tree (moved out, deleted, displaced) but still
 *                watched: a read may find it again elsewhere in the tree
 *                (a move whose other end the tree could not see), or its
 *                drop notice comes; tree.limbo. Its events are dropped.
 *   FAILED       unreadable (EACCES, ...): FSNW_OVERFLOW said so; in no list
 */
#ifndef FSNW_TREE_INT_H
#define FSNW_TREE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "handle.h"
#include "path.h"

enum tdir_state {
	TD_PENDING,
	TD_WAITING,
	TD_PROVISIONAL,
	TD_LIVE,
	TD_RELIST,
	TD_LIMBO,
	TD_FAILED,
};

struct tlisting;

/* Where a directory that left its place while its identity was unproven
 * was: an arrival there before its watch's MOVE_SELF takes the watch. */
struct tdir_amb {
	struct tdir *parent;
	uint16_t len;
	char name[];
};

struct tdir {
	/* What an event's path takes (tree_event_path) comes first, within
	 * 29 bytes: a malloc'd record is 16-byte aligned, so these span one
	 * cache line three times in four, where a read of 1,000 events on
	 * cold records finds each line a miss. The rest is packed: a tree
	 * keeps one a directory. */
	struct tree *t;
	struct strref *path;     /* what its events report, while pgen is the tree's */
	struct tlisting *lst;    /* PROVISIONAL: what its read found */
	uint32_t pgen;
	uint8_t state;           /* enum tdir_state */
	uint8_t tries;           /* WAITING: timed reads that failed in a row */
	uint16_t namelen;
	struct link *l;          /* its watch, or NULL */
	struct tdir *parent;     /* NULL: the root, or in limbo */
	struct tdir *child;      /* its first subdirectory */
	struct tdir *next, *prev; /* its siblings */
	struct hnode cnode;      /* tree.children, while it has a parent */
	struct list qnode;       /* by state: see above */
	struct tdir_amb *amb;    /* left its place while its identity was unproven */
	ino_t ino;               /* known: from a listing (its own or its parent's) */
	uint64_t due_ns;         /* WAITING: not before */
	char *name;              /* iname, or a longer name a rename gave */
	union {
		/* WAITING, unless for a resource: the low bits of the count
		 * of events read when its read failed (a wrap at most delays
		 * the read until it is due) */
		uint32_t seen;
		uint32_t out_cookie; /* LIMBO, self_due: its move's cookie */
	};
	uint32_t walk_gen;       /* the window that last read it */
	uint16_t namecap;        /* bytes iname holds, NUL included */
	bool ino_known : 1;      /* ino was known before its read (its parent's listing) */
	bool unproven : 1;       /* its watch is whatever its path led to at its read */
	bool synth : 1;          /* report what it holds as synthetic FSNW_CREATE */
	bool conflict : 1;       /* its read met the watch of another directory of the tree */
	bool listed : 1;         /* walk_commit: its parent's listing has it */
	bool starved : 1;        /* its read lacked a resource (FSNW_OVERFLOW said so) */
	bool self_due : 1;       /* LIMBO, moved out: kept until its MOVE_SELF, reported at path */
	bool wants_room : 1;     /* WAITING for a resource, not for events */
	char iname[];
};
_Static_assert(offsetof(struct tdir, state) < 32, "tree_event_path's fields lead struct tdir");

/*
 * A MOVED_FROM of a tree directory's entry, held until the tree's next
 * event: its MOVED_TO (the same cookie) goes out right after it, and the
 * move is applied between them; anything else means it left the tree.
 */
struct held_from {
	struct tdir *dir;        /* where it was */
	uint32_t mask, cookie;
	uint16_t namelen;
	char name[256];
};

struct tree {
	struct list node;        /* in trees.all */
	struct trees *ts;        /* the handle's */
	struct watch *lw;        /* the tree watch */
	struct fantree *fan;     /* a tree without a walk (fantree.c): the rest is unused */
	struct htab children;    /* struct tdir.cnode, by parent and name */
	struct tdir *root;
	struct list visits;      /* struct tdir.qnode: PENDING and RELIST, oldest first */
	struct list waiting;     /* WAITING */
	struct list limbo;       /* LIMBO (the tops of what left; subtrees below them) */
	/* A relative root is resolved against the directory current at the
	 * add: new directories found later must not depend on a chdir since. */
	struct strref *abs_root; /* NULL when the root path is absolute */
	/* The root as /proc/self/mountinfo spells mount points (symlinks and
	 * dot-dots resolved), to tell which mounts are inside; NULL: unknown. */
	struct strref *canon_root;
	dev_t root_dev;          /* FSNW_WATCH_ONE_FS, and the root's identity */
	ino_t root_ino;
	uint32_t kmask;          /* the caller's mask and what following directories needs */
	uint32_t pgen;           /* a directory was renamed: paths built before are stale */
	uint32_t dir_moves;      /* directories deleted or moved (events read), mounts changed */
	uint32_t root_gen;       /* the window whose root_ok is known, plus 1 (0: none) */
	bool root_ok;            /* then, its root's path led to it */
	struct held_from *from;  /* a MOVED_FROM awaiting the next event */
	size_t ndirs;
	int add_err;             /* why the add's walk failed, or 0 */
	bool adding;             /* the add's walk still runs: a failure fails the add */
	bool ending;             /* lost its root: ends (FSNW_IGNORED) after this drain */
	bool counted;            /* counted in trees.nwork */
};

/*
 * What a tree entry point does before it may change a directory (its
 * state, listing, link or path; a directory made or freed, a MOVED_FROM
 * held or let go): the router's answers go (route.h), and the paths a read
 * lent without a reference (the tree lane's, queue_lane_open) take one, as
 * a directory's path may be put from here on.
 */
static inline void tree_changing(struct fsnw *w)
{
	kwatch_changed(&w->kwatches);
	queue_keep_lent(w->q);
}

/* ---- tree-model.c ---- */

/* A new directory below parent (NULL: the root); NULL: ENOMEM. */
struct tdir *tdir_new(struct tree *t, struct tdir *parent, const char *name, size_t len);
/* The subdirectory name of d the model has, or NULL. */
struct tdir *tdir_child(const struct tree *t, const struct tdir *d, const char *name,
			size_t len);
/* What events at d report as their path (borrowed); NULL: ENOMEM. */
struct strref *tdir_path(struct tdir *d);
/* The path that resolves d, whatever the current directory (a reference). */
struct strref *tdir_real_path(struct tdir *d);
/* The same into buf (len bytes), kept nowhere: for a read of d, whose
 * events may never need its path. Its length, -ENAMETOOLONG, or -ENOENT
 * (d is below a directory in limbo). */
int tdir_real_path_into(const struct tdir *d, char *buf, size_t len);
/* Put d in state s (and the list that goes with it). */
void tdir_set_state(struct tdir *d, enum tdir_state s);
/* Move d (with its subtree) below parent as name, in place of what was there. */
int tdir_move(struct tdir *d, struct tdir *parent, const char *name, size_t len);
/* x, in limbo, found again at (parent, name) by a read: it takes the place. */
int tdir_found_again(struct tdir *x, struct tdir *parent, const char *name, size_t len);
/* d left the tree: it and its subtree go to limbo (still watched). */
void tdir_to_limbo(struct tdir *d);
/* Free d and its subtree: links detached (parked where the cache allows). */
void tdir_forget(struct fsnw *w, struct tdir *d, bool park);
/* Free d and its subtree, every watch taken back exactly (kwatch_undo). */
void tdir_undo(struct fsnw *w, struct tdir *d);
/* Free d and its subtree's records only (the handle closes: no syscalls). */
void tdir_drop(struct tdir *d);
/* Is a below d (or d)? */
bool tdir_within(const struct tdir *a, const struct tdir *d);
/* Mark d and its watched subtree to be read again, synthetic (a relocation). */
void tdir_relist_subtree(struct tdir *d);
/* Read every directory of t again, not synthetic (events were lost). */
void tdir_relist_all(struct tree *t);
/* Update the tree's place in trees.nwork after a change of its lists. */
void tree_count_work(struct trees *ts, struct tree *t);
/* Flush t's held MOVED_FROM: the entry left the tree. */
void tree_flush_from(struct fsnw *w, struct tree *t);
/* Push one event of t at d (mask filtered by the caller's). */
void tree_report(struct fsnw *w, struct tree *t, struct tdir *d, uint32_t mask,
		 uint32_t cookie, const char *name, size_t len);

/* ---- tree-walk.c ---- */

/* Read up to *budget directories of t's visits (the step's window is open). */
void walk_step(struct fsnw *w, struct tree *t, unsigned *budget);
/* The window closed: d's listing stands (or d is read again). */
void walk_commit(struct fsnw *w, struct tdir *d);
/* Note that name of d (PROVISIONAL) was touched by an event. */
void walk_touch(struct tdir *d, const char *name, size_t len);
/* A touched name of d could not be recorded: d is read again at the commit. */
void walk_lost(struct tdir *d);
/* Free d's listing. */
void walk_listing_free(struct tdir *d);
/* Failures a later try may not meet: resources, not permissions. */
bool walk_transient(int err);

/* ---- tree.c ---- */

/* The tree lost its root: it ends after this drain. */
void tree_end(struct trees *ts, struct tree *t);
/* Does the root path still lead to the tree's root directory (a stat)? */
bool tree_root_still_there(struct fsnw *w, const struct tree *t);
/* Out of memory for a new subdirectory of d: FSNW_OVERFLOW, and d is read again. */
void tree_need_relist(struct fsnw *w, struct tdir *d);

#endif
