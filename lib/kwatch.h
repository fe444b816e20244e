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
 * Locking: no kernel mark call is made with the handle's lock held, so that
 * threads sharing a handle do not queue behind each other's syscalls.
 * kwatch_mark, kwatch_link, kwatch_attach and kwatch_flush drop the lock
 * around each kernel call and take it again; on return the table may have
 * changed. kwatch_mark_early runs before the caller takes the lock. The exception is a tree walk, which holds the lock throughout
 * (kwatch_hold_lock): its walk state must not change under it.
 *
 * States of a kernel watch (enum kw_state), all in the table by key:
 *   LIVE       in use: it has links or pins.
 *   PARKED     no links; in the idle cache, its mark kept for a later add.
 *   DOOMED     no links; its unmark waits on the doomed list for the flush
 *              at the end of the entry point. An add onto it takes it back.
 *   UNMARKING  its unmark syscall runs now, the lock dropped. An add whose
 *              mark lands on it waits for the syscall to end and marks again:
 *              inotify then hands out a new wd; fanotify the same key, and
 *              the add takes the record over as a new kernel watch.
 *   plus the flag dropped: the kernel dropped the mark (IN_IGNORED, a delete
 *   or unmount); never unmarked nor parked, freed once unused. A mark that
 *   returns the key of a dropped watch is dead, and is made again.
 *
 *   mark -> LIVE -> last link gone -> PARKED -> add -> LIVE ...
 *                                 \-> DOOMED -> flush: UNMARKING -> freed
 *
 * Races the states resolve: two adds of one new object (the kernel returns
 * one wd twice: the second links to the first's record); the last remove
 * racing an add (DOOMED taken back, UNMARKING waited for); an add racing a
 * kernel drop (a dropped record, or an IN_IGNORED read for a key not yet in
 * the table, bumps drop_gen and notes the key: a mark that returned a key the
 * table does not know, dropped since the mark began, or while more drops
 * came than the table keeps, is made again to learn whether it still lives).
 *
 * Life cycle of a link: kwatch_link makes it *pending* when events older than
 * the add may still wait in the kernel queue for its kernel watch; the caller
 * then settles it (engine_settle) before it returns the wid: active, or
 * detached if the kernel dropped the watch meanwhile. A pending link hears
 * nothing, so a new watch never sees an event from before it.
 */
#ifndef FSNW_KWATCH_H
#define FSNW_KWATCH_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backend.h"
#include "compiler.h"
#include "htab.h"
#include "keytab.h"
#include "mem.h"
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
enum kw_state {
	KW_LIVE,
	KW_PARKED,
	KW_DOOMED,
	KW_UNMARKING,
};

struct kwatch {
	/* 64 bytes with an inotify key. The cache's records lie 64 bytes
	 * apart from 64 bytes into a slab (mem.c), so what an event's routing
	 * reads (its links, its flags and its key) lies in one cache line,
	 * where a read of many cold records finds each line a miss. */
	union {
		struct list lru;       /* PARKED: in the idle cache; DOOMED: on the doomed list */
		struct kwatch *victim; /* reconcile, LIVE: next kernel watch found gone */
	};
	struct list links;  /* struct link.knode */
	uint32_t serial;    /* which record this is, should one be freed and another
			     * made at the same address (the low bits of the table's count) */
	uint32_t nlinks;    /* active or pending */
	unsigned pins;      /* walks of links, unmark calls in progress: not freed while > 0 */
	uint32_t kmask;     /* event bits the kernel mark has */
	uint32_t live_gen;  /* the last reconcile that found it in the kernel */
	uint8_t state;      /* enum kw_state */
	bool excl_unlink : 1; /* the kernel mark has IN_EXCL_UNLINK */
	bool dropped : 1;   /* the kernel dropped the mark: never unmark nor park it */
	bool marked : 1;    /* has a kernel mark of its own: unmark it when it goes */
	bool fsmark : 1;    /* the mark of a whole filesystem, pinned by what it covers */
	bool gone : 1;      /* reconcile: PARKED or DOOMED, found gone */
	atomic_bool unmark_done; /* UNMARKING: the syscall has returned (read unlocked) */
	uint8_t bflags;     /* struct kkey.bflags */
	uint8_t keylen;     /* at most KKEY_MAX */
	unsigned char key[];
};
_Static_assert(offsetof(struct kwatch, key) + sizeof(int) <= 64,
	       "an inotify kernel watch takes one cache line");
_Static_assert(KKEY_MAX <= UINT8_MAX, "a key's length fits kwatch.keylen");

/* Kernel watch records with keys of up to this many bytes (inotify's wd) are
 * recycled through the table's cache. */
#define KWATCH_CACHED_KEY sizeof(int)

/*
 * What a kernel watch with a longer key (fanotify's: an fsid, and a file
 * handle for an object) holds besides, after its key: the filesystem mark
 * that covers a directory, and the count of directories a filesystem mark
 * covers.
 */
struct kwatch_fs {
	struct kwatch *cover; /* the fsmark kernel watch this one holds a pin on, or NULL */
	uint32_t ncovered;    /* fsmark: kernel watches pinning it */
};

/* Where a record with a key of keylen bytes keeps its struct kwatch_fs. */
static inline size_t kwatch_fs_offset(size_t keylen)
{
	size_t end = offsetof(struct kwatch, key) + keylen;

	return (end + _Alignof(struct kwatch_fs) - 1) & ~(_Alignof(struct kwatch_fs) - 1);
}

static inline struct kwatch_fs *kwatch_fs_of(struct kwatch *kw)
{
	assert(kw->keylen > KWATCH_CACHED_KEY);
	return (struct kwatch_fs *)(void *)((char *)kw + kwatch_fs_offset(kw->keylen));
}

/* The filesystem mark covering kw, or NULL. */
static inline struct kwatch *kwatch_cover(struct kwatch *kw)
{
	return kw->keylen > KWATCH_CACHED_KEY ? kwatch_fs_of(kw)->cover : NULL;
}

/* An inotify kernel watch's wd (its key), -1 for others. */
static inline int kwatch_wd(const struct kwatch *kw)
{
	int wd;

	if (kw->keylen != sizeof(int))
		return -1;
	memcpy(&wd, kw->key, sizeof(wd));
	return wd;
}

/* Keys of the last drops kept, as many as one flush unmarks (kwatch.c's
 * FLUSH_BATCH): a concurrent remove elsewhere in the handle does not make an
 * add mark twice. */
#define KWATCH_DROPS_KEPT 64

struct kwatches {
	struct keytab by_key; /* by kwatch_tag of the key */
	struct list idle;     /* parked kernel watches, most recent first */
	struct list doomed;   /* kernel watches whose unmark waits for kwatch_flush */
	struct list pending;  /* pending links (struct link.pnode), oldest first */
	size_t npending;
	size_t nparked;
	size_t idle_max;
	uint32_t live_gen;    /* reconcile generation */
	uint64_t drop_gen;    /* kernel drops seen: a mark made meanwhile is checked
			       * (stored atomically: kwatch_mark_early reads it unlocked) */
	uint64_t drop_hash[KWATCH_DROPS_KEPT]; /* key hashes of the last drops, by drop_gen */
	uint64_t serial;      /* the last kernel watch record made */
	struct mem_cache kw_cache;   /* records with keys of up to KWATCH_CACHED_KEY bytes */
	struct mem_cache link_cache; /* links that are not a watch's own */
	unsigned hold_lock;   /* a tree walk runs: kernel calls keep the lock */
	size_t nfsmarks;      /* filesystem-mark kernel watches (not objects watched) */
	/* Marks removed, and how many had been when the kernel queue was last
	 * found empty: the difference may have IN_IGNORED (inotify) or late
	 * events (fanotify, whose keys recur) still queued. */
	uint64_t unmarks;
	uint64_t unmarks_at_empty;
	struct kwatch *hot;   /* the last one kwatch_find_hot found (cleared when freed) */
	/* Moves on at every change of what routing an event reads: a key's
	 * kernel watch, its links, their states, and (kwatch_changed, from
	 * the trees) a tree's directories. Answers kept while it stays (the
	 * router's, route.h) stand. */
	uint64_t route_gen;
	/* The clock read that ended a remove's timing, where the next flush
	 * starts timing its first unmark (kwatch_flush_after); 0: none. */
	uint64_t flush_t0;
};

void kwatch_table_init(struct kwatches *t, size_t idle_max);
/* What routing finds for some kernel watch may differ from now on. */
static inline void kwatch_changed(struct kwatches *t)
{
	t->route_gen++;
}
/* Free every kernel watch and link. No syscalls: closing the group fd drops
 * the marks. */
void kwatch_table_fini(struct kwatches *t);
/* Table room for n more kernel watches, and their records where every key
 * has keylen bytes (the backend's key_len; 0: they vary) and fits the
 * cache: 0, -ENOMEM. */
int kwatch_reserve(struct kwatches *t, size_t n, size_t keylen);
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
/* A key's tag in the table: an inotify wd is its own; a handle is hashed. */
static inline uint32_t kwatch_tag(const unsigned char *key, size_t len)
{
	uint32_t wd;

	if (len == sizeof(int)) {
		memcpy(&wd, key, sizeof(wd));
		return keytab_tag(wd);
	}
	return keytab_tag(hash_bytes(key, len, 0x6b77));
}

/* An inotify key is a wd: compared inline, not by a call. */
static inline bool kwatch_key_is(const struct kwatch *kw, const unsigned char *key, size_t len)
{
	int a, b;

	if (kw->keylen != len)
		return false;
	if (len != sizeof(int))
		return memcmp(kw->key, key, len) == 0;
	memcpy(&a, kw->key, sizeof(a));
	memcpy(&b, key, sizeof(b));
	return a == b;
}

/* kwatch_find that remembers what it found (kwatch_find_hot's miss). */
struct kwatch *kwatch_find_cold(struct kwatches *t, const unsigned char *key, size_t len);

/* kwatch_find for the event path, where one kernel watch usually sends many
 * events in a row: the last one found is tried first. */
static inline struct kwatch *kwatch_find_hot(struct kwatches *t, const unsigned char *key,
					     size_t len)
{
	struct kwatch *kw = t->hot;

	return kw && kwatch_key_is(kw, key, len) ? kw : kwatch_find_cold(t, key, len);
}

/* A tree walk starts or ends: kernel calls keep the handle's lock meanwhile. */
static inline void kwatch_hold_lock(struct kwatches *t, bool hold)
{
	if (hold)
		t->hold_lock++;
	else
		t->hold_lock--;
}

/*
 * The calling thread starts or ends a batch. Its adds drop the lock
 * between items, so a reader could otherwise hear an item's events before
 * the batch returns its wid (or rolls it back): no link the batch makes
 * hears events until the batch is done. A tree's links, and links with
 * older events to wait for, are pending until the batch's settle; a plain
 * watch's other link is held, inactive and on no list, until the batch
 * releases it (kwatch_release_held), so a batch of new objects needs no
 * settle. Other threads' adds meanwhile are as ever.
 */
void kwatch_batch(bool on);

/* After the batch's settle: lw's held link, if it has one, hears events from
 * now on, or, if the kernel dropped its object meanwhile, is detached and
 * lw's add fails (add_failed). */
void kwatch_release_held(struct fsnw *w, struct watch *lw);

/* The kernel dropped the mark of this key, which the table may not know
 * (yet): see drop_gen. */
void kwatch_note_drop(struct kwatches *t, const unsigned char *key, size_t len);

/*
 * Make the unmark syscalls of the doomed kernel watches, the lock dropped
 * around them (unless a tree walk holds it), and free the watches. Every
 * entry point ends with it (engine_end_call), so the kernel's view and the
 * table agree whenever no call is in progress.
 */
void kwatch_flush(struct fsnw *w);

/* The caller's timing ended at tick t, and the flush that ends its entry
 * point follows: that flush's first unmark is timed from t, a clock read
 * fewer (0, timing off: nothing). */
static inline void kwatch_flush_after(struct kwatches *t, uint64_t tick)
{
	t->flush_t0 = tick;
}

/*
 * One mark of an add: the key it returned, its timing (t0, from
 * stats_start, 0: untimed; t1 gets the clock read that ended the mark's
 * timing, or 0, for the caller's histogram to end at: the read right after
 * the early call where that call's result stands) and, where the caller
 * made it before taking the lock (kwatch_mark_early), the first call's
 * result.
 */
struct kmark_call {
	struct kkey key;
	uint64_t t0, t1;
	bool made;              /* the first call was made early: */
	int ret;                /* its result, */
	uint64_t gen;           /* drop_gen read before it, */
	struct sys_tally tally; /* its syscalls, folded in under the lock */
};

/*
 * Without the handle's lock (the one function here that runs so): the
 * first mark call of a plain add, where the backend marks by path alone
 * (inotify), so that the add takes the lock once instead of dropping it
 * for the call. Elsewhere (fanotify looks its key up first) it makes no
 * call and kwatch_mark makes them all.
 */
void kwatch_mark_early(struct fsnw *w, const char *path, uint32_t kmask, uint32_t flags,
		       struct kmark_call *mc);
/* Whether kwatch_mark_early makes calls with this backend (plain adds). */
bool kwatch_marks_early(const struct fsnw *w);
/* An early call whose result no longer holds (another add took back the
 * mark it returned): its syscalls are counted, and kwatch_mark calls anew. */
void kwatch_mark_early_stale(struct fsnw *w, struct kmark_call *mc);

/*
 * The two halves of an attach, for callers that time the mark themselves
 * (mc). kwatch_mark makes the kernel call (one syscall; an object already
 * watched gets no new mark), or takes the result of the early one.
 * kwatch_link then attaches lw to the kernel watch of key (its events
 * report lw's path); if it fails, a mark that created no kernel watch of
 * ours is undone. kwatch_unmark_new undoes such a mark when the caller
 * fails between the two.
 */
int kwatch_mark(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		struct kmark_call *mc);
int kwatch_link(struct fsnw *w, struct watch *lw, const struct kkey *key, int dirfd,
		const char *path, uint32_t kmask, uint32_t flags, struct link **out);
FSNW_COLD void kwatch_unmark_new(struct fsnw *w, const struct kkey *key);

/*
 * Mark and link in one: attach lw to the object at path (relative to dirfd).
 * With FSNW_WATCH_TREE in flags (a tree directory) a backend that can covers
 * the directory with its filesystem's mark instead. On failure nothing
 * changed. The link may be pending (see the top).
 */
int kwatch_attach(struct fsnw *w, struct watch *lw, int dirfd, const char *path,
		  uint32_t kmask, uint32_t flags, struct link **out);

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
/* The holders of the live filesystem mark fs need no more than kmask: the
 * mark drops the rest where the backend can (it stays as it was if not). */
void kwatch_fs_narrow(struct fsnw *w, struct kwatch *fs, uint32_t kmask);

/*
 * l hears events from now on, those of its kernel watch still unread
 * included: a tree's directory, whose tree merges what events say with
 * what its listing found by name, and must not lose what happens between
 * its watch and the next settle.
 */
void kwatch_activate(struct kwatches *t, struct link *l);
/* The oldest pending link, taken off the pending list (still inactive), or NULL. */
struct link *kwatch_pop_pending(struct kwatches *t);
/* Put popped links (a list of struct link.pnode) back on the pending list. */
void kwatch_repend(struct kwatches *t, struct list *links);

/*
 * Detach a link. The last link of a kernel watch parks it (park == true and
 * room in the idle cache, evicting the least recently parked) or dooms it
 * (its unmark waits for kwatch_flush).
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
 * The kernel dropped kw's mark. A kernel watch without links (parked,
 * doomed, unmarking) needs nobody told: false, and it is freed (or left to
 * its unmarker). Otherwise kw is pinned for the caller, who tells its links
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
