/* SPDX-License-Identifier: MIT */
/*
 * The directory cache of fanotify trees (fantree.c): what the library has
 * learnt of the directories of the filesystems its trees are on, so that an
 * event, which names its directory by file handle, finds the trees it is in
 * and the path it reports without a system call.
 *
 * Per filesystem there is a view: the paths seen through one mount of it
 * (an fd on that mount's root, which the fanotify backend holds). The cache
 * is a trie of those paths: a node is a directory, named by its parent node
 * and its entry name, and keyed by its file handle (fsid + handle, the bytes
 * events carry). Every node on the way from the view's root down to a
 * directory is itself a keyed node, so a directory is always found by the
 * handle an event names and moved with its whole subtree by one rename.
 *
 * The cache is kept at *stream time*: it describes the filesystem as it was
 * when the last event routed happened, not as it is now. Creates, deletes
 * and renames are applied (fcache_create, _delete, _move) as their events
 * are routed, and undone (fcache_uncreate, _undelete, and a move the other
 * way) when the router rewinds a batch of events to place them: see
 * fantree.h. fcache_place puts in what a resolution learnt about now.
 *
 * A node is linked (in the trie), detached (known by its handle, place
 * unknown: it moved where the cache cannot follow, or was displaced), dead
 * (deleted, kept with its last place while events about it can still come:
 * until its FSNW_DELETE_SELF) or out of view (a directory the view's mount
 * does not show). An anchor marks the node where a tree starts; what a
 * node's events report is the nearest anchor above it and the names below
 * it, kept as a memo that any move invalidates.
 *
 * Memory: at most `max` nodes besides those that anchors and their
 * ancestors hold; the least recently used leaf goes first, and costs only a
 * later resolution. Dead nodes are bounded separately (FCACHE_TOMBS).
 *
 * No system calls here: the caller resolves (fcache_place's keyat callback).
 * Nothing else touches a node's fields but through these functions, except
 * the anchors list and the reports, which fantree.c owns and changes only
 * after fcache_invalidate.
 */
#ifndef FSNW_FANCACHE_H
#define FSNW_FANCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "fankey.h"
#include "htab.h"
#include "list.h"
#include "strref.h"

#define FCACHE_DEFAULT 16384 /* nodes, when the caller says 0 */
#define FCACHE_TOMBS 1024    /* dead nodes kept for events that come late */

struct fnode;
struct fanjob;

/* Where a tree starts, in the node of its directory (fantree.c fills it). */
struct fanchor {
	struct fanchor *next;  /* another anchor on the same node */
	struct fnode *node;
	void *owner;           /* the tree */
	struct strref *report; /* the path events at node report */
	uint64_t mnt_id;       /* the mount below the tree it stands for; 0: the tree's own */
};

enum fnode_state {
	FN_LINKED,   /* in the trie */
	FN_DETACHED, /* place unknown */
	FN_DEAD,     /* deleted; parent kept for late events */
	FN_OUTVIEW,  /* resolved to a path outside the view's mount */
};

/* Which list of the cache a node's lru is in. */
enum { FN_LIST_NONE, FN_LIST_LRU, FN_LIST_TOMBS };

/* fcache_where */
enum fnode_where {
	FN_OUT,     /* under no anchor */
	FN_IN,      /* under an anchor: near and path are set */
	FN_UNKNOWN, /* its place is unknown, or the memo could not be made (ENOMEM) */
};

struct fview;

struct fnode {
	struct hnode knode;      /* cache.by_key */
	struct hnode cnode;      /* cache.by_child, while linked */
	struct fnode *parent;    /* linked or dead; NULL otherwise */
	struct fview *view;
	struct list lru;         /* cache.lru (an unpinned leaf) or cache.tombs (dead) */
	struct fanchor *anchors; /* trees that start here */
	struct fanjob *job;      /* a listing of it waits (fantree-list.c): pinned */
	/* The memo, valid while gen equals the cache's. */
	struct fnode *near;      /* the nearest anchored node at or above */
	struct strref *path;     /* what events here report for near's first anchor */
	uint32_t gen;
	uint8_t where;           /* enum fnode_where */
	uint8_t state;           /* enum fnode_state */
	bool view_root;
	bool self_gone;          /* its FSNW_DELETE_SELF (or IGNORED) was seen */
	uint8_t lru_in;          /* FN_LIST_*: which of the cache's lists lru is in */
	uint32_t nchildren;      /* linked and dead nodes whose parent it is */
	uint16_t namelen;
	uint16_t keylen;
	char *name;              /* its entry name in parent */
	unsigned char key[];
};

/* A filesystem the trees are on, seen through one mount of it. */
struct fview {
	struct list node;       /* cache.views */
	unsigned char fsid[FSID_BYTES];
	int mntfd;              /* the mount's root (borrowed from the backend) */
	int mnt_id;             /* that mount's id, as name_to_handle_at reports it */
	struct strref *prefix;  /* the mount's path in this process */
	struct fnode *root;
};

struct fcache {
	struct htab by_key;
	struct htab by_child;
	struct list lru;        /* unpinned leaves, most recently used first */
	struct list tombs;      /* dead nodes, oldest first */
	struct list views;
	size_t count;           /* nodes, dead ones and view roots included */
	size_t ntombs;
	size_t max;
	uint32_t gen;           /* memo generation */
	bool sweep;             /* some dead node may be free to go */
	/* A dead node went before its FSNW_DELETE_SELF (the bound): an event
	 * about a gone directory the cache does not know may be one of ours. */
	bool ambiguous;
	/* Memory ran out while changing or reading the cache: some place may
	 * be unknown for no reason but that (the caller clears it). */
	bool nomem;
	uint64_t evictions;
	/* Places a directory held and another took (link_at), the last one
	 * to lose its place and that place's parent: the caller tells a
	 * rename over an empty directory from a place a resolution gave
	 * ahead of the stream. */
	uint64_t ndisplaced;
	struct fnode *displaced, *displaced_at;
	/* While logging, the nodes resolutions placed (fcache_place), to take
	 * their places back if what they learnt turns out to be ahead of the
	 * batch being placed (fantree.c). */
	bool logging;
	struct fnode **placed;
	size_t nplaced, capplaced;
};

void fcache_init(struct fcache *c, size_t max);
/* Free every node and view (anchors must be gone or be freed by the caller). */
void fcache_fini(struct fcache *c);

/* The view of the filesystem of key, or NULL. */
struct fview *fcache_view(const struct fcache *c, const unsigned char *key, size_t keylen);
/* A new view whose mount root has the given key; -ENOMEM. */
int fcache_view_new(struct fcache *c, const unsigned char *rootkey, size_t keylen, int mntfd,
		    int mnt_id, const char *prefix, size_t prefixlen, struct fview **out);

/* The node of key, whatever its state, or NULL. */
struct fnode *fcache_find(const struct fcache *c, const unsigned char *key, size_t keylen);

/* Make sure n's memo is current; returns enum fnode_where. */
int fcache_where_now(struct fcache *c, struct fnode *n);
static inline int fcache_where(struct fcache *c, struct fnode *n)
{
	return n->gen == c->gen ? n->where : fcache_where_now(c, n);
}

/* Every memo is stale: a report changed (anchors are fantree.c's). */
static inline void fcache_invalidate(struct fcache *c)
{
	c->gen++;
}

/* Pin n (an anchor or a listing was added) or unpin it (its last one went). */
void fcache_pinned(struct fcache *c, struct fnode *n);

/*
 * The path, in the view's mount, of n (linked up to its view's root):
 * prefix + names. NULL if n's place is unknown, or ENOMEM.
 */
struct strref *fcache_view_path(const struct fcache *c, const struct fnode *n);

/*
 * The path events at n report for a tree whose anchor (report) sits at
 * `at`, an anchored node at or above n: report + the names below at. NULL
 * on ENOMEM or if `at` is not above n.
 */
struct strref *fcache_path_below(const struct fnode *at, const struct strref *report,
				 const struct fnode *n);

/* Is n at or below `at` (linked or dead all the way)? */
bool fcache_below(const struct fnode *at, const struct fnode *n);

/* The node is in use: keep it from eviction for a while. */
static inline void fcache_touch(struct fcache *c, struct fnode *n)
{
	if (n->lru_in == FN_LIST_LRU && n->lru.prev != &c->lru) {
		list_del(&n->lru);
		list_add(&n->lru, &c->lru);
	}
}

/*
 * What a resolution learnt: the directory key is at rel now (its path below
 * the view's root, components without a leading '/'; "" for the root). A
 * node on the way the cache lacks gets its key from keyat (rel cut to that
 * node's length), which returns 0 or -errno. What the trie said before
 * about these places gives way. A node on the way the cache has by name
 * is checked by its key (keyat) before anything is linked below it.
 * -EAGAIN: the answers contradict each other (the filesystem changed under
 * the resolution, a name the cache holds leads to another directory now, or
 * a directory on the way is one the cache has elsewhere); -errno from keyat.
 */
typedef int (*fcache_keyat_fn)(void *arg, struct fview *v, const char *rel, size_t len,
			       struct kkey *key);
int fcache_place(struct fcache *c, struct fview *v, const char *rel, size_t len,
		 const unsigned char *key, size_t keylen, fcache_keyat_fn keyat, void *arg,
		 struct fnode **out);
/* Log the nodes fcache_place places from now on, adding to the log (on),
 * or stop and forget the log; fcache_unplace_logged makes every logged
 * node's place unknown and empties the log. */
void fcache_log(struct fcache *c, bool on);
void fcache_unplace_logged(struct fcache *c);

/* The directory key resolved to a path its view's mount does not show. */
int fcache_outview(struct fcache *c, struct fview *v, const unsigned char *key, size_t keylen,
		   struct fnode **out);

/*
 * The structure events. dir is the node of the directory the entry is
 * (was) in, NULL when unknown; key is the entry's own (the event's target),
 * NULL when the record had none. Each is undone by its counterpart, so a
 * batch of events can be rewound and replayed. -ENOMEM leaves the node
 * unknown (detached or not made), which only costs a later resolution.
 */
void fcache_create(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		   const unsigned char *key, size_t keylen);
void fcache_uncreate(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		     const unsigned char *key, size_t keylen);
void fcache_delete(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		   const unsigned char *key, size_t keylen);
void fcache_undelete(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		     const unsigned char *key, size_t keylen);
/* Moved from from/fname to to/tname (either dir may be NULL: unknown). */
void fcache_move(struct fcache *c, struct fview *v, struct fnode *from, const char *fname,
		 size_t flen, struct fnode *to, const char *tname, size_t tlen,
		 const unsigned char *key, size_t keylen);
/* FSNW_DELETE_SELF (or the IGNORED after it) of n was seen, or is taken back. */
void fcache_self_gone(struct fcache *c, struct fnode *n, bool gone);

/*
 * Keep the bounds: free dead nodes nothing more can come for, and the least
 * recently used leaves past max. Not while the caller holds node pointers,
 * nor while placements are logged (fcache_log): the log holds them, for a
 * batch that waits to be placed again, across drains.
 */
void fcache_trim_now(struct fcache *c);
static inline void fcache_trim(struct fcache *c)
{
	if (c->logging)
		return;
	if (c->sweep || c->ntombs > FCACHE_TOMBS || c->count > c->max)
		fcache_trim_now(c);
}

/* Forget where everything is (events were lost, mounts changed): every
 * linked node but the views' roots, and every node outside its view, is
 * detached, to be placed again when met. */
void fcache_forget(struct fcache *c);

#endif
