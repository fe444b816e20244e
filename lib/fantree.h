/* SPDX-License-Identifier: MIT */
/*
 * Tree watches on fanotify without a walk.
 *
 * Adding a tree costs the same for ten directories as for a million: one
 * FAN_MARK_FILESYSTEM per filesystem, shared by every tree on it (made or
 * widened by the backend's cover, held through kwatch_fs_hold), the file
 * handle of the tree's directory, and a node for it in an empty directory
 * cache (fancache.h). Nothing below the root is read. A filesystem mark
 * reports everything that happens on the filesystem; each event names its
 * directory by file handle, and the cache says where that directory is:
 * inside a tree (deliver, with the path the cache rebuilds) or outside
 * (drop, counted in dropped_outside).
 *
 * Resolving. A directory the cache does not know is resolved: an
 * open_by_handle_at(O_PATH) through the view's mount fd, and readlink of
 * /proc/self/fd/N for its path in that mount. The directories on the way
 * down from the mount's root that the cache lacks get their handles from
 * name_to_handle_at, so every node is keyed and a rename moves a subtree by
 * the handle the event names. A new directory costs nothing: its create
 * carries its handle (FAN_REPORT_TARGET_FID) and the cache places it under
 * its parent.
 *
 * Stream time. The cache describes the filesystem as it was when the last
 * routed event happened, not as it is: creates, deletes and renames of
 * directories are applied as their events are routed, so every event finds
 * its directory where it was when it happened, and a directory moved out of
 * a tree stops reporting at the event that moved it (and one moved in
 * starts there). A resolution answers for *now*, which is ahead of the
 * stream by every event still unread. So an event whose directory the cache
 * does not know is not placed at once: it starts a batch, and every tree
 * event after it joins the batch, in order, until the kernel queue has been
 * read empty (the engine then calls fantree_settle). Now is then the end of
 * the batch, and the batch is placed in four passes:
 *   1. its structure events are applied to the cache (stream time -> end);
 *   2. the directories still unknown are resolved (the cache learns now);
 *   3. the structure events are undone newest first (end -> batch start);
 *   4. the batch is replayed: each event is delivered, then applied.
 * Events on cached directories with no batch open take the same last step
 * at once, without a copy: a warm tree costs a hash lookup per event.
 *
 * Gone directories. By the time `rm -rf r/a` is read, a, b and c of
 * r/a/b/c/f are deleted and their handles answer ESTALE, and the kernel has
 * merged each one's DELETE_SELF into its earlier OPEN. Each FAN_DELETE
 * record names the parent's handle, the entry name and the deleted child's
 * own handle (FAN_REPORT_TARGET_FID): pass 3, undoing "c deleted from b",
 * "b deleted from a", "a deleted from r", newest first, puts a back under r
 * (which resolves), then b under a and c under b, and pass 4 delivers f's
 * delete at r/a/b/c. A deleted directory stays in the cache, dead, with its
 * last place, until its FSNW_DELETE_SELF says nothing more can come for it
 * (a process may hold it open and close it later); at most FCACHE_TOMBS of
 * them.
 *
 * What cannot be placed. After pass 2 an event may still name a directory
 * the cache does not know, whose handle no longer resolves. If its delete
 * is not in the batch, the kernel may not have given it to us yet (it
 * removes the entry, then queues the delete): the batch waits for one more
 * complete drain (at most twice, however often it was placed again for
 * events that came meanwhile). The delete, once read, puts the directory
 * where it was (pass 3), inside a tree or not. If it is still unread, the
 * directory may have been in a tree, and its event raises FSNW_OVERFLOW
 * when a tree asked for its bits. A directory the cache has dead, its
 * delete read, is placed by it; only if a dead directory had to be evicted
 * before its DELETE_SELF (the bound) is it not (fcache.ambiguous): such
 * events raise FSNW_OVERFLOW too. A directory that cannot be resolved for
 * want of resources (EMFILE, ENFILE, ENOMEM, a path past PATH_MAX) raises
 * FSNW_OVERFLOW (overflows_unresolved) when a tree asked for the event's
 * bits: never a silent drop. A kernel overflow places the batch and then
 * forgets where every directory is (they are resolved again when met).
 *
 * Paths. An event reports the path of its tree's directory as the caller
 * gave it (relative paths stay relative), then the names below. When the
 * tree's directory itself is renamed (or a directory above it), its events
 * report its new absolute path from then on. Events a directory gets about
 * itself (ATTRIB, OPEN, ... with FSNW_ISDIR) are also reported to its parent
 * with its name, as inotify does, when the parent is in the tree.
 *
 * Mounts. A filesystem mark hears the whole filesystem, through every mount
 * of it, in this namespace and any other, and nothing of other filesystems.
 * Paths are those of one mount of each filesystem (the view). At the add,
 * the mounts below the tree's directory are read from /proc/self/mountinfo:
 * each gets an anchor (and, for another filesystem, that filesystem's mark)
 * that reports its events under its mount point in the tree, unless
 * FSNW_WATCH_ONE_FS leaves other filesystems out. Mounts made or taken away
 * below the directory later are followed as the trees' mount table reports
 * them (mounts.c): an anchor made or dropped, every place forgotten (the
 * view's mount shows other directories now), and FSNW_OVERFLOW, since what
 * the path holds changed without events. Where this cannot work (a filesystem without
 * filesystem marks, a tree the view's mount does not show) the add falls
 * back to the walk (tree.c), whose directories are covered one by one.
 *
 * A tree's directory deleted ends it after the complete drain that read the
 * FSNW_DELETE_SELF, not at it: the kernel merges that DELETE_SELF into the
 * directory's first unread event, ahead of the deletes inside it.
 *
 * A tree added while events older than it may still be unread for its
 * filesystem mark (another tree shares the mark) is pending: the add's
 * complete drain arms it, and events numbered before that never reach it.
 */
#ifndef FSNW_FANTREE_H
#define FSNW_FANTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "compiler.h"
#include "fancache.h"
#include "list.h"

struct fsnw;
struct watch;
struct kevent;
struct kwatch;
struct fentry;
struct mount_entry;

#define FANTREE_MOVEIN_MAX 8

/* An event as the trees see it: pointers into a kevent, or into a batch entry. */
struct fev {
	uint64_t seq;
	uint32_t mask;
	uint32_t cookie;
	const unsigned char *key;
	const unsigned char *target;
	const char *name;
	uint16_t keylen;
	uint16_t targetlen;
	uint16_t namelen;
	uint8_t flags; /* E_* */
};

#define E_PLAIN 0x1u      /* a watch of its own heard it */
#define E_PAIRED 0x2u     /* a MOVED_FROM whose MOVED_TO follows */
#define E_STALE 0x4u      /* its directory no longer resolves */
#define E_UNRESOLVED 0x8u /* its directory could not be resolved (resources) */
#define E_MOVE_END 0x10u  /* a MOVED_TO whose MOVED_FROM came just before */
#define E_MERGED 0x20u    /* from a record the kernel merged (KEVENT_MERGED) */
#define E_LATE 0x40u      /* a delete held back (KEVENT_LATE) */


/* Times a batch is placed again for the events that came while its
 * directories were resolved: then it is placed anyway, so that a writer
 * that never stops cannot hold it. */
#define FANTREE_REDOS_MAX 8

/* Kernel mask a tree needs besides the caller's, to keep its cache right. */
#define FANTREE_KMASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO | \
		       FSNW_DELETE_SELF)

struct fantree {
	struct list node;         /* fantrees.all */
	struct watch *lw;
	struct fanchor *anchors;  /* [0]: the tree's directory; then mounts below it */
	struct kwatch **holds;    /* the filesystem mark each anchor holds */
	size_t nanchors;
	struct strref *view_path; /* the directory's path in its view at the add */
	uint64_t armed_seq;       /* events numbered below this are older than the tree */
	uint64_t mark;            /* the last delivery that reached it */
	uint64_t from_seq;        /* the last MOVED_FROM that reached it */
	dev_t dev;                /* the device of its directory (FSNW_WATCH_ONE_FS) */
	bool linked;              /* its anchors are in their nodes */
	bool ended;               /* its directory went: ended after the drain */
	struct list ended_node;
};

struct fantrees {
	struct list all;          /* struct fantree.node */
	struct fcache cache;
	struct list batch;        /* struct fentry.node, in kernel order */
	size_t nbatch;
	struct fentry *from;      /* a MOVED_FROM waiting for its MOVED_TO */
	struct list late;         /* struct fentry.node: deletes held back (fantree_event) */
	unsigned redos;           /* placings done again (FANTREE_REDOS_MAX) */
	unsigned delete_waits;    /* complete drains it waited for a delete */
	size_t nmoves;            /* directories the batch moves or deletes */
	size_t moves_at_check;    /* ... when its resolutions were last made */
	bool validating;          /* they wait for the events that came meanwhile */
	/* A resolution met a name the cache holds leading elsewhere now: a
	 * rename the stream has yet to show (fcache_place's -EAGAIN). */
	bool contradicted;
	bool drain_again;
	uint64_t seq;             /* tree events taken */
	uint64_t delivery;        /* deliveries made (struct fantree.mark) */
	size_t npending;          /* trees not armed yet */
	size_t nanchors;
	struct list ended;        /* struct fantree.ended_node */
	/* Directories moved into a tree, whose content is listed
	 * (fantree-list.c): to read, and read in the open window. */
	struct list jobs;
	struct list listed;
	/* The trees the event being delivered moved a directory into. */
	struct fantree *movein[FANTREE_MOVEIN_MAX];
	unsigned nmovein;
	bool movein_lost;
	/* Entries moved since the kernel queue was last read empty
	 * (fantree-merge.c), by file handle. */
	struct htab journal;
	uint32_t cookie;          /* the last cookie of a synthetic move */
};

void fantrees_init(struct fantrees *ft, size_t cache_max);
/* Free the batch and the cache (the trees go with their watches). */
void fantrees_fini(struct fantrees *ft);

/*
 * A tree watch on lw without a walk. Returns 0 (*out set), 1 when this
 * tree cannot be had here and the walk must do it, or -errno.
 */
int fantree_add(struct fsnw *w, struct watch *lw, struct fantree **out);
/* Take the tree away: its anchors, its holds on filesystem marks (parked
 * where the idle cache allows). */
void fantree_remove(struct fsnw *w, struct fantree *t, bool park);
/* Free it without system calls, as the handle closes: the marks go with the
 * group, the kernel-watch table and the cache (trees_fini) with the handle. */
void fantree_free(struct fantree *t);

/*
 * A decoded kernel event (route.c): deliver it to the trees it is in, or
 * hold it in the batch. plain: a watch of its own also hears it (it is not
 * dropped when outside every tree). Returns false when it is no tree event.
 */
bool fantree_event(struct fsnw *w, const struct kevent *ev, bool plain);
/* After a complete drain: place the batch; then the trees whose directory
 * went are ended by the router (route.c), after all their events. */
FSNW_COLD void fantree_settle(struct fsnw *w);
/* A kernel overflow was read: place the batch, then forget every place. */
void fantree_overflow(struct fsnw *w);
/*
 * A mount appeared at m (or went: appeared false), as the trees' mount
 * table says (tree.c). Below t's directory: FSNW_OVERFLOW (what the path
 * holds changed without events), every place forgotten, and an anchor made
 * for the new mount, or the gone one's taken away.
 */
void fantree_mount(struct fsnw *w, struct fantree *t, const struct mount_entry *m,
		   bool appeared);
/* A tree whose directory went, for the router to end; *pending: it was
 * never armed (its add fails). NULL when none. */
struct watch *fantree_pop_ended(struct fantrees *ft, bool *pending);

/* Work that needs a complete drain: a batch, a tree to arm or to end, a
 * directory moved in to list. */
static inline bool fantrees_busy(const struct fantrees *ft)
{
	return ft->nbatch || ft->from || ft->npending || !list_empty(&ft->ended) ||
	       !list_empty(&ft->jobs) || !list_empty(&ft->listed);
}

/* fantree-list.c: what a directory moved into a tree holds. */
struct trees;
void fanlist_moved_in(struct fsnw *w, struct fantree *t, struct fnode *dir);
struct fantree *fanlist_tree(const struct fanjob *j);
/* Did an event tell of the name in j's directory since it moved in? */
bool fanlist_told(const struct fanjob *j, const char *name, size_t len);
void fanlist_touch(struct fnode *dir, const char *name, size_t len);
bool fanlist_echo(const struct trees *ts, const struct fnode *n);
bool fanlist_after_drain(struct fsnw *w);
void fanlist_forget_tree(struct fantrees *ft, struct fantree *t);
void fanlist_fini(struct fantrees *ft);

/* fantree-merge.c: events the kernel merged away. */
void fanmerge_note(struct fsnw *w, const struct fev *e);
/* After a complete drain: true to have another (a look waits for it). */
bool fanmerge_verify(struct fsnw *w);
void fanmerge_fini(struct fantrees *ft);

/* For those two: a synthetic event at dir (deliver_at's rules), a
 * synthetic move of n from (was, name) to where the cache has it now, and
 * a resolution of key. */
/* Are events waiting in the kernel queue (one poll)? */
bool fantree_queue_ready(struct fsnw *w);
void fantree_synthetic(struct fsnw *w, struct fnode *dir, uint32_t mask, uint32_t cookie,
		       const char *name, size_t len);
void fantree_synthetic_move(struct fsnw *w, struct fnode *was, const char *name, size_t len,
			    struct fnode *n);
int fantree_resolve(struct fsnw *w, const unsigned char *key, size_t keylen,
		    struct fnode **out);
/* The path of directory key now, into buf (a look: the cache stays as it
 * is): its length, or -errno. */
ssize_t fantree_path_now(struct fsnw *w, const unsigned char *key, size_t keylen, char *buf,
			 size_t len);
/* After a complete drain: arm pending trees. True: drain once more first
 * (the batch waits for a delete that may not have been read, or a look of
 * fantree-merge.c for a rename's events). */
bool fantrees_after_drain(struct fsnw *w);

#endif
