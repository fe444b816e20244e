/* SPDX-License-Identifier: MIT */
/*
 * The kernel-watch table: one kernel watch per watched object (inode) in the
 * kernel group, keyed by the backend's identity (inotify: the wd; fanotify:
 * fsid + file handle). A kernel watch holds the links of every logical watch
 * on that object and the union of their masks. Adding a logical watch to an
 * object that already has one creates no kernel mark; removing one that is
 * not the last makes no syscall; removing the last removes the mark or parks
 * it in the idle cache.
 *
 * Ownership: kwatch.c alone creates, changes and frees kernel watches and
 * links, and calls nothing above itself (only the backend's mark ops). Others
 * holding the handle's lock may read a kernel watch and walk its link list,
 * holding a pin (kwatch_pin) if what they do may detach links meanwhile.
 *
 * Life cycle of a kernel watch:
 *   marked -> linked (active) -> last link detached -> parked -> revived ...
 *                                                  \-> removed (unmark)
 *   the kernel drops it (IN_IGNORED, a delete or unmount) at any point:
 *   dropped; it is freed once its links are gone and nobody pins it.
 *
 * Life cycle of a link: kwatch_link makes it *pending* when events older than
 * the add may still wait in the kernel queue for its kernel watch; the caller
 * then drains the kernel queue completely and settles it (route_settle):
 * active, or detached if the kernel dropped the watch meanwhile. A pending
 * link hears nothing, so a new watch never sees an event from before it.
 */
#ifndef FSNW_KWATCH_H
#define FSNW_KWATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "htab.h"
#include "list.h"

struct fsnw;
struct watch;
struct link;
struct strref;

/*
 * A kernel watch has a mark of its own (marked), or is covered: a tree
 * directory whose events come through the mark of its whole filesystem
 * (fanotify), which is itself a kernel watch (fsmark) without links that
 * lives while directories it covers do.
 */
struct kwatch {
	struct hnode node;
	struct list links;  /* struct link.knode */
	size_t nlinks;      /* active or pending */
	unsigned pins;      /* walks of links in progress: not freed while > 0 */
	uint32_t kmask;     /* event bits the kernel mark has */
	bool excl_unlink;   /* the kernel mark has IN_EXCL_UNLINK */
	bool parked;
	bool dropped;       /* the kernel dropped the mark: never unmark nor park it */
	bool marked;        /* has a kernel mark of its own: unmark it when it goes */
	bool fsmark;        /* the mark of a whole filesystem, pinned by what it covers */
	uint8_t bflags;     /* struct kkey.bflags */
	uint32_t live_gen;  /* the last reconcile that found it in the kernel */
	struct kwatch *victim; /* reconcile: next kernel watch found gone */
	struct kwatch *cover; /* the fsmark kernel watch this one holds a pin on, or NULL */
	size_t ncovered;    /* fsmark: kernel watches pinning it */
	struct list lru;    /* in the idle cache, most recently parked first */
	int wd;             /* inotify watch descriptor, -1 otherwise */
	uint32_t keylen;
	unsigned char key[];
};

struct kwatches {
	struct htab by_key;
	struct list idle;     /* parked kernel watches, most recent first */
	struct list pending;  /* pending links (struct link.pnode), oldest first */
	size_t npending;
	size_t nparked;
	size_t idle_max;
	uint32_t live_gen;    /* reconcile generation */
	size_t nfsmarks;      /* filesystem-mark kernel watches (not objects watched) */
	/* Marks removed, and how many had been when the kernel queue was last
	 * found empty: the difference may have IN_IGNORED (inotify) or late
	 * events (fanotify, whose keys recur) still queued. */
	uint64_t unmarks;
	uint64_t unmarks_at_empty;
};

void kwatch_table_init(struct kwatches *t, size_t idle_max);
/* Free every kernel watch and link. No syscalls: closing the group fd drops
 * the marks. */
void kwatch_table_fini(struct kwatches *t);
/* Objects with a kernel watch, covered directories included, filesystem marks not. */
size_t kwatch_count(const struct kwatches *t);
/* Unmarks whose IN_IGNORED or late events may still wait in the kernel queue. */
static inline uint64_t kwatch_unread_unmarks(const struct kwatches *t)
{
	return t->unmarks - t->unmarks_at_empty;
}
/* The kernel queue was found empty: nothing of a removed mark waits there. */
static inline void kwatch_queue_emptied(struct kwatches *t)
{
	t->unmarks_at_empty = t->unmarks;
}

struct kwatch *kwatch_find(const struct kwatches *t, const unsigned char *key, size_t len);

/*
 * The two halves of an attach, for callers that time the mark with their own
 * clock read (t0, from stats_start). kwatch_mark makes the kernel call (one
 * syscall; an object already watched gets no new mark). kwatch_link then
 * attaches lw to the kernel watch of key, reporting linkpath; if it fails, a
 * mark that created no kernel watch of ours is undone. kwatch_unmark_new
 * undoes such a mark when the caller fails between the two.
 */
int kwatch_mark(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		struct kkey *key, uint64_t t0);
int kwatch_link(struct fsnw *w, struct watch *lw, const struct kkey *key, int dirfd,
		const char *path, uint32_t kmask, uint32_t flags, struct strref *linkpath,
		struct link **out);
void kwatch_unmark_new(struct fsnw *w, const struct kkey *key);

/*
 * Mark and link in one: attach lw to the object at path (relative to dirfd).
 * With FSNW_WATCH_TREE in flags (a tree directory) a backend that can covers
 * the directory with its filesystem's mark instead. On failure nothing
 * changed. The link may be pending (see the top).
 */
int kwatch_attach(struct fsnw *w, struct watch *lw, int dirfd, const char *path,
		  uint32_t kmask, uint32_t flags, struct strref *linkpath, struct link **out);

/*
 * A hold on the filesystem mark of the directory at path, without a kernel
 * watch of the directory's own (fanotify trees without a walk: fantree.c).
 * The backend makes or widens the mark to report kmask (cover); *fs is its
 * kernel watch, which lives while holds or covered directories need it.
 * key gets the directory's key. *older: events queued before this hold may
 * still be unread for the mark (it was there already with some of kmask's
 * bits, or a removed mark's events may be): the caller drains before it
 * believes an event is newer than the hold. -EOPNOTSUPP where the backend
 * has no filesystem marks (or this filesystem refuses one).
 */
int kwatch_fs_hold(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		   struct kkey *key, struct kwatch **fs, bool *older);
/* Give a hold back; the last user of the mark parks it (park, and room in
 * the idle cache) or removes it. */
void kwatch_fs_release(struct fsnw *w, struct kwatch *fs, bool park);

/* The oldest pending link, taken off the pending list (still inactive), or NULL. */
struct link *kwatch_pop_pending(struct kwatches *t);

/*
 * Detach a link. The last link of a kernel watch parks it (park == true and
 * room in the idle cache, evicting the least recently parked) or removes it.
 */
void kwatch_detach(struct fsnw *w, struct link *l, bool park);

/*
 * Take back an attach that must not stand (batch or tree rollback): the
 * kernel watch returns to what it was before it, created -> removed,
 * revived -> parked, shared -> untouched.
 */
void kwatch_undo(struct fsnw *w, struct link *l);

/* Hold kw while its links are walked; unpinning frees or parks it if unused. */
static inline void kwatch_pin(struct kwatch *kw)
{
	kw->pins++;
}
void kwatch_unpin(struct fsnw *w, struct kwatch *kw, bool park);

/*
 * The kernel dropped kw's mark. A parked kernel watch is freed at once and
 * false returned; otherwise kw is pinned for the caller, who tells its links
 * and then unpins it (kwatch_unpin frees it when the last link is gone).
 */
bool kwatch_dropped(struct fsnw *w, struct kwatch *kw);

/*
 * After a kernel overflow: a full kernel queue drops IN_IGNORED too, so ask
 * the kernel which watches it still holds. Returns the kernel watches it no
 * longer holds, chained through ->victim, each already marked dropped and
 * pinned as kwatch_dropped does (parked ones are freed at once). NULL where
 * the backend cannot tell.
 */
struct kwatch *kwatch_reconcile(struct fsnw *w);

#endif
