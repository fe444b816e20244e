/* SPDX-License-Identifier: MIT */
/*
 * Logical watches: what the caller asked for. A logical watch owns a wid,
 * its mask and flags, the path it was given, and its links: one link per
 * kernel watch it uses (one for a plain watch, one per directory for a tree).
 * A link carries the path that events through it report.
 *
 * This module owns the wid table and the life of a logical watch: add,
 * remove, rollback, and the FSNW_IGNORED that ends a watch the kernel
 * dropped. It calls the kernel-watch table (kwatch.c), trees (tree.c) and
 * the queue, never the engine: an add whose links are pending returns, and
 * the caller drains and settles (see kwatch.h) before it reports the wid.
 */
#ifndef FSNW_WATCHES_H
#define FSNW_WATCHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "fsnwatch.h"
#include "htab.h"
#include "keytab.h"
#include "list.h"
#include "mem.h"
#include "queue.h"
#include "strref.h"

struct fsnw;
struct kmark_call;
struct kwatch;
struct tree;
struct tdir;

/*
 * The join of a logical watch and a kernel watch. kwatch.c makes and frees
 * links and keeps watch, kw, knode, pnode, active and origin; the field
 * marked "tree" is the tree modules'. A plain watch's one link is its own
 * (watch.own); a tree's links are the tree's to find (tree_remove, tree_undo).
 */
struct link {
	/* What an event's routing reads first (route.c's sole_link, the tree
	 * lane), in its first 35 bytes. */
	struct list knode;   /* in kw->links */
	struct tdir *tnode;  /* tree: the directory it watches (tree-int.h), tree.c's */
	struct watch *watch;
	bool active;         /* hears events: not pending */
	uint8_t origin;      /* enum link_origin: how the attach found its kernel watch */
	bool embedded;       /* the watch's own link (plain watches): not freed alone */
	struct kwatch *kw;
	struct list pnode;   /* in the table's pending list while pending */
};
/* 64 bytes: a link slab's records lie one to a cache line. A plain watch's
 * events report its path (watch.path); a tree's, its directories'. */
_Static_assert(sizeof(struct link) == 64, "a link takes one cache line");

enum link_origin {
	LINK_NEW,     /* the attach created the kernel watch */
	LINK_REVIVED, /* the attach took it out of the idle cache */
	LINK_SHARED,  /* it was in use already */
};

struct watch {
	struct qowner qo;    /* qo.wid is the wid */
	uint32_t mask;       /* FSNW_ALL_EVENTS bits the caller asked for */
	uint32_t flags;      /* FSNW_WATCH_* */
	struct strref *path; /* as the caller gave it */
	struct tree *tree;   /* set for FSNW_WATCH_TREE */
	uint32_t nlinks;     /* a plain watch: 1 while attached through own */
	/* Gone in the kernel (or oneshot fired): FSNW_IGNORED is queued and the
	 * wid is held until the caller reads it, so it cannot be reused under
	 * events still waiting for the old watch. */
	bool zombie;
	/* Being added: its wid is not the caller's yet (fsnw_remove says
	 * -ENOENT), and the add may still fail. */
	bool adding;
	/* ... and the kernel dropped its object before the add was settled:
	 * the add fails with -ENOENT. */
	bool add_failed;
	/* An item of a batch still adding: its links wait for the batch's
	 * own settle, not another thread's (see kwatch_batch). */
	bool in_batch;
	struct link own;     /* the single link of a plain watch, saving an allocation */
};

struct watches {
	struct keytab by_wid;  /* by keytab_tag(wid) */
	int next_wid;
	bool wrapped;          /* next_wid has wrapped: a wid may be in use */
	struct mem_cache cache; /* watch records */
	struct strpool paths;  /* the watches' path strings */
};

void watches_init(struct watches *t);
/* Free every watch with its links and tree. No syscalls (the handle closes). */
void watches_fini(struct fsnw *w);

struct watch *watches_find(const struct watches *t, int wid);
size_t watches_count(const struct watches *t);
/* Records and wid-table room for n more watches (fsnw_reserve): 0, -ENOMEM. */
int watches_reserve(struct watches *t, size_t n);

/* Check an add's arguments and normalise them: inotify flag bits may come
 * inside the mask. The path's length (> 0), or -EINVAL, -ENOENT,
 * -ENAMETOOLONG. */
int watches_check(const char *path, uint32_t *mask, uint32_t *flags);

/*
 * The body of fsnw_add, arguments checked (len: watches_check's): a new
 * logical watch, attached. Returns the watch, whose links may be pending:
 * drain and settle, then watches_finish_add. -errno on failure, nothing
 * changed.
 */
int watches_add(struct fsnw *w, const char *path, size_t len, uint32_t mask, uint32_t flags,
		struct kmark_call *early, struct watch **out);
/* Before fsnw_add takes the lock (the lock not held): its first mark call,
 * where the backend can make it so, for watches_add (early) to take. */
void watches_mark_early(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags,
			struct kmark_call *mc);
/* Whether watches_mark_early makes calls with this backend. */
bool watches_marks_early(const struct fsnw *w);
/* After the settle: the wid; -ENOENT (the watch is gone) if the object went,
 * or why a tree's walk failed (the add is undone). */
int watches_finish_add(struct fsnw *w, struct watch *lw);
/* The body of fsnw_remove: -EINVAL, -ENOENT, or 0. */
int watches_remove(struct fsnw *w, int wid);
/* Take back a watch this call added, leaving the kernel as it found it. */
FSNW_COLD void watches_undo(struct fsnw *w, struct watch *lw);

/*
 * The kernel dropped lw's object: queue FSNW_IGNORED and hold the wid until
 * it is read. A watch still being added fails its add instead (-ENOENT): the
 * caller never learns its wid.
 */
FSNW_COLD void watches_dropped(struct fsnw *w, struct watch *lw);
/* A oneshot watch heard its event: it ends as a dropped one does, but a
 * watch still being added keeps its wid, as its event is on its way. */
void watches_oneshot_fired(struct fsnw *w, struct watch *lw);
/* Read events were popped: a delivered FSNW_IGNORED releases its wid. */
void watches_reap(struct fsnw *w, const struct fsnw_event *evs, size_t n);

#endif
