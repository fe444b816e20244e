/* SPDX-License-Identifier: MIT */
/*
 * Kernel watches: one per watched object (inode) in the kernel group, keyed
 * by the backend's identity. A kernel watch holds the links of every logical
 * watch on that object and the union of their masks. Adding a logical watch
 * to an object that already has one creates no kernel mark; removing one
 * that is not the last makes no syscall; removing the last removes the mark
 * or parks it in the idle cache. Only this module touches the table.
 */
#ifndef FSNW_INODES_H
#define FSNW_INODES_H

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
	size_t nlinks;      /* active or not */
	uint32_t kmask;     /* event bits the kernel mark has */
	bool excl_unlink;   /* the kernel mark has IN_EXCL_UNLINK */
	bool parked;
	bool dropped;       /* the kernel dropped the mark: never unmark nor park it */
	uint32_t walk_gen;  /* the walk window that last read this directory */
	uint32_t live_gen;  /* the last reconcile that found it in the kernel */
	struct kwatch *victim; /* reconcile: next kernel watch found gone */
	bool marked;        /* has a kernel mark of its own: unmark it when it goes */
	bool fsmark;        /* the mark of a whole filesystem, pinned by what it covers */
	uint8_t bflags;     /* struct kkey.bflags */
	struct kwatch *cover; /* the fsmark kernel watch this one holds a pin on, or NULL */
	size_t ncovered;    /* fsmark: kernel watches pinning it */
	struct list lru;    /* in the idle cache, most recently parked first */
	int wd;             /* inotify watch descriptor, -1 otherwise */
	uint32_t keylen;
	unsigned char key[];
};

struct inodes {
	struct htab by_key;
	struct list idle;   /* parked kernel watches, most recent first */
	size_t nparked;
	size_t idle_max;
	uint32_t live_gen;  /* reconcile generation */
	size_t nfsmarks;    /* filesystem-mark kernel watches (not objects watched) */
};

void inodes_init(struct inodes *t, size_t idle_max);
/* Free every kernel watch. No syscalls: closing the group fd drops the marks. */
void inodes_fini(struct inodes *t);
/* Objects with a kernel watch, covered directories included, filesystem marks not. */
size_t inodes_count(const struct inodes *t);

/*
 * The two halves of an attach, for callers that time the mark with their own
 * clock read (t0, from stats_start). inodes_mark makes the kernel call (one
 * syscall; an object already watched gets no new mark). inodes_link then
 * attaches lw to the kernel watch of key; if it fails, a mark that created no
 * kernel watch of ours is undone. inodes_unmark_new undoes such a mark when
 * the caller fails between the two.
 */
int inodes_mark(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		struct kkey *key, uint64_t t0);
int inodes_link(struct fsnw *w, struct watch *lw, const struct kkey *key, int dirfd,
		const char *path, uint32_t kmask, uint32_t flags, struct strref *linkpath,
		struct link **out);
void inodes_unmark_new(struct fsnw *w, const struct kkey *key);

/*
 * Attach lw to the object at path (relative to dirfd), reporting linkpath.
 * The mark costs one syscall; an object already watched gets no new mark.
 * With FSNW_WATCH_TREE in flags (a tree directory) a backend that can
 * covers the directory with its filesystem's mark instead.
 * When the kernel watch already existed (shared or parked), pending kernel
 * events are drained first so the new link sees nothing older than itself.
 * On failure nothing changed.
 */
int inodes_attach(struct fsnw *w, struct watch *lw, int dirfd, const char *path,
		  uint32_t kmask, uint32_t flags, struct strref *linkpath, struct link **out);

/*
 * Detach a link. The last link of a kernel watch parks it (park == true and
 * room in the idle cache, evicting the least recently parked) or removes it.
 */
void inodes_detach(struct fsnw *w, struct link *l, bool park);

/*
 * Take back an attach that must not stand (batch or tree rollback): the
 * kernel watch returns to what it was before it, created -> removed,
 * revived -> parked, shared -> untouched.
 */
void inodes_undo(struct fsnw *w, struct link *l);

/*
 * After a kernel overflow: a full kernel queue drops IN_IGNORED too, so ask
 * the kernel which watches it still holds and drop the others as if their
 * notice had come. A no-op where the backend cannot tell.
 */
void inodes_reconcile(struct fsnw *w);

/* Deliver one decoded kernel event to the logical watches it concerns. */
void inodes_dispatch(struct fsnw *w, const struct kevent *ev);

#endif
