/* SPDX-License-Identifier: MIT */
/*
 * Logical watches: what the caller asked for. A logical watch owns a wid,
 * its mask and flags, the path it was given, and its links: one link per
 * kernel watch it uses (one for a plain watch, one per directory for a tree).
 * A link carries the path that events through it report.
 */
#ifndef FSNW_WATCHES_H
#define FSNW_WATCHES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "htab.h"
#include "list.h"
#include "queue.h"
#include "strref.h"

struct kwatch;
struct tree;

struct link {
	struct watch *watch;
	struct kwatch *kw;
	struct strref *path; /* reported as fsnw_event.path */
	struct list wnode;   /* in watch->links */
	struct list knode;   /* in kw->links */
	/* An add onto a kernel watch that already existed drains the kernel
	 * before the link goes live, so it never sees an older event. */
	bool active;
	uint8_t origin;      /* enum link_origin: how the attach found its kernel watch */
	bool embedded;       /* the watch's own link (plain watches): not freed alone */
	struct hnode tnode;  /* tree: in the tree's path index */
	uint32_t move_cookie; /* tree: a MOVED_FROM of this directory awaits its pair */
	bool rescan;         /* tree: a new subdirectory may have gone unrecorded */
};

struct watch {
	struct hnode node;   /* in the wid table */
	struct qowner qo;    /* qo.wid is the wid */
	uint32_t mask;       /* FSNW_ALL_EVENTS bits the caller asked for */
	uint32_t flags;      /* FSNW_WATCH_* */
	struct strref *path; /* as the caller gave it */
	struct list links;   /* struct link.wnode */
	size_t nlinks;
	struct tree *tree;   /* set for FSNW_WATCH_TREE */
	struct link own;     /* the single link of a plain watch, saving an allocation */
	/* Gone in the kernel (or oneshot fired): FSNW_IGNORED is queued and the
	 * wid is held until the caller reads it, so it cannot be reused under
	 * events still waiting for the old watch. */
	bool zombie;
};



enum link_origin {
	LINK_NEW,     /* the attach created the kernel watch */
	LINK_REVIVED, /* the attach took it out of the idle cache */
	LINK_SHARED,  /* it was in use already */
};

struct watches {
	struct htab by_wid;
	int next_wid;
};

void watches_init(struct watches *t);
void watches_fini(struct watches *t); /* frees every watch; links must be gone */

/* Make room for n more watches so watches_new cannot fail on the table. */
int watches_reserve(struct watches *t, size_t n);
/* A new watch with a fresh wid, in the table. NULL on ENOMEM. */
struct watch *watches_new(struct watches *t, const char *path, uint32_t mask, uint32_t flags);
struct watch *watches_find(const struct watches *t, int wid);
/* Take the watch out of the table and free it: no links, nothing queued. */
void watches_release(struct watches *t, struct watch *lw);
size_t watches_count(const struct watches *t);

/* Visit every watch; fn may release the watch it is given. */
void watches_for_each(struct watches *t, void (*fn)(struct watch *lw, void *arg), void *arg);

#endif
