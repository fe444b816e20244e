/* SPDX-License-Identifier: MIT */
/*
 * The kernel side of a handle. Only backend files make fsnotify mark
 * syscalls, and each counts them in the handle's stats; the engine makes the
 * one read(2) of the group fd and hands the bytes to the backend's decode.
 * A backend identifies a kernel watch by key bytes: the wd for inotify,
 * fsid + file handle for fanotify.
 */
#ifndef FSNW_BACKEND_H
#define FSNW_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fsnw;
struct kwatch;

#define KKEY_MAX 160

/* The identity of a kernel watch, as a mark operation reports it. */
struct kkey {
	uint32_t len;
	int wd;         /* inotify; -1 otherwise */
	uint8_t bflags; /* the backend's note about its mark, handed back to unmark */
	unsigned char bytes[KKEY_MAX];
};

/* struct kkey.bflags every module may read (the rest are the backend's). */
#define KKEY_NONDIR 0x1u /* the object is not a directory */

/* struct kevent.flags */
#define KEVENT_OPTIONAL 0x1u /* the key may name nothing we watch: that is no stale event */
/* fanotify: the kernel merged events into the record this came from (it
 * had more than one entry bit): their order is lost. */
#define KEVENT_MERGED 0x2u
/* fanotify: a delete merged into the create or move-in of the same object
 * (one inode: the create came first). It happened after some of the events
 * that follow its record, at a place the record no longer tells. */
#define KEVENT_LATE 0x4u

/* A decoded kernel event. */
struct kevent {
	uint32_t mask;              /* FSNW_* bits, FSNW_ISDIR included */
	uint32_t cookie;            /* pairs moves; 0 otherwise */
	uint32_t flags;             /* KEVENT_* */
	const char *name;           /* NUL-terminated entry name, or NULL */
	size_t namelen;
	const unsigned char *key;   /* the kernel watch it is for; NULL for overflow */
	size_t keylen;
	size_t end;                 /* bytes of the buffer through its record; 0: not said */
	/* fanotify, an event about an entry (create, delete, move): the key of
	 * the entry itself, or NULL. Trees learn a directory's handle from it
	 * without asking the kernel, even once the directory is gone. */
	const unsigned char *target;
	size_t targetlen;
};

/*
 * Called per decoded event. Returning false asks the decoder to stop after
 * the record the event came from; one that stops (inotify) says where
 * through kevent.end, one that goes on (fanotify) hands every event to fn
 * all the same.
 */
typedef bool (*kevent_fn)(void *arg, const struct kevent *ev);

/*
 * The syscalls one mark operation made. Mark operations run without the
 * handle's lock, so they count here, and the caller adds the tally to the
 * handle's stats once it holds the lock again (sys_tally_fold, stats.h).
 */
struct sys_tally {
	uint64_t inotify_add_watch;
	uint64_t inotify_rm_watch;
	uint64_t fanotify_mark;
	uint64_t name_to_handle_at;
	uint64_t open_by_handle_at;
	uint64_t other;
};

/*
 * init, fini, decode and live run with the handle's lock held. mark, unmark,
 * cover and identify may run without it, concurrently with each other: a
 * backend guards what they share itself, and they touch nothing of the
 * handle's but the group fd, counting their syscalls in *t.
 */
struct backend {
	int id; /* FSNW_BACKEND_* */
	const char *name;
	/* Create the group fd in w->kfd; -EPERM / -EOPNOTSUPP when unusable. */
	int (*init)(struct fsnw *w);
	void (*fini)(struct fsnw *w);
	/*
	 * Mark path (relative to dirfd) for the FSNW_* event bits in mask.
	 * replace: set the kernel mask to exactly mask (and the flags to
	 * flags) instead of adding to it. flags: FSNW_WATCH_ONLYDIR,
	 * _DONT_FOLLOW, _EXCL_UNLINK. Fills key. -errno as the kernel says.
	 */
	int (*mark)(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		    int replace, struct kkey *key, struct sys_tally *t);
	/* Remove the kernel watch; one the kernel already dropped is success. */
	int (*unmark)(struct fsnw *w, const struct kwatch *kw, struct sys_tally *t);
	/*
	 * Optional (tree directories). Name the directory at path in key
	 * without a mark of its own, and make sure the mark of its whole
	 * filesystem, named by fskey, reports the FSNW_* bits of mask. The
	 * caller keeps a kernel watch for each key and removes the
	 * filesystem one (unmark) when no directory needs it any more. Any
	 * error: this directory cannot be covered, mark it instead.
	 */
	int (*cover)(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		     struct kkey *key, struct kkey *fskey, struct sys_tally *t);
	/*
	 * Optional (with cover). The filesystem mark fs reports no more than
	 * the FSNW_* bits of mask (nonzero) from now on: what no directory
	 * needs any more, which would wake the reader for events it drops.
	 */
	int (*narrow)(struct fsnw *w, const struct kwatch *fs, uint32_t mask, struct sys_tally *t);
	/*
	 * Optional: the key of the object at path, without marking it, so an
	 * add onto an object already marked for all it asks makes no mark.
	 * Any error: use mark.
	 */
	int (*identify)(struct fsnw *w, int dirfd, const char *path, uint32_t flags,
			struct kkey *key, struct sys_tally *t);
	/*
	 * Decode what one read(2) of the group fd returned (the engine reads):
	 * fn is called per event (see kevent_fn for stopping early). Returns
	 * the number of events.
	 */
	size_t (*decode)(struct fsnw *w, const void *buf, size_t len, kevent_fn fn, void *arg);
	/* The largest record one read can return: a read shorter than the
	 * buffer by this much emptied the kernel queue. */
	size_t max_record;
	/* A key names the object, so an object watched again gets its old key
	 * back (fanotify); inotify hands out a new wd instead. */
	bool stable_keys;
	/* Every object's key has this many bytes (inotify: a wd), or 0 when
	 * keys vary (fanotify: file handles); fsnw_reserve sizes records by it. */
	size_t key_len;
	/* The kernel honours FSNW_WATCH_EXCL_UNLINK (inotify only). */
	bool excl_unlink;
	/* read(2) returns struct inotify_event records and decode is
	 * inotify_decode: the engine runs it inline (inotify-decode.h). */
	bool inotify_records;
	/*
	 * Optional: call fn with the key of every kernel watch the kernel
	 * still holds. After a kernel overflow it finds the watches whose
	 * drop notice (IN_IGNORED) the full queue lost. -errno if it cannot.
	 */
	int (*live)(struct fsnw *w, void (*fn)(struct fsnw *w, const unsigned char *key,
					       size_t len));
	/*
	 * Optional (trees without a walk, fantree.c): an fd on the root of a
	 * mount of the filesystem of key (fsid first), opened for reading, to
	 * resolve its file handles with open_by_handle_at and name its
	 * directories relative to it. Borrowed: valid until fini. -ENOENT
	 * when no mark of ours is on that filesystem.
	 */
	int (*mount_fd)(struct fsnw *w, const unsigned char *key, size_t keylen);
};

extern const struct backend inotify_backend;
extern const struct backend fanotify_backend;

/*
 * Decode a buffer of struct inotify_event records as read(2) returns them.
 * Records that are truncated or claim more than the buffer holds end the
 * decode, and so does fn returning false (after that event). Returns the
 * number of events passed to fn.
 */
size_t inotify_decode(const void *buf, size_t len, kevent_fn fn, void *arg);

/*
 * Decode a buffer of fanotify records as read(2) returns them for a group
 * made with FAN_REPORT_DFID_NAME | FAN_REPORT_FID | FAN_REPORT_TARGET_FID.
 * A record yields an event per key it concerns (the directory with the
 * entry name, and the object itself) and per event bit the kernel merged
 * into it; a FAN_RENAME yields FSNW_MOVED_FROM then FSNW_MOVED_TO with a
 * cookie taken from *cookie (never 0); FAN_DELETE_SELF is followed by
 * FSNW_IGNORED for that key. An event about an entry (create, delete, the
 * two ends of a rename) carries the entry's own key as its target when the
 * record has one (FAN_REPORT_TARGET_FID). Keys are fsid + struct
 * file_handle bytes, pointing into buf. A header that is truncated or claims more than the
 * buffer holds ends the decode; a malformed record is skipped whole.
 * Returns the number of events passed to fn.
 */
size_t fanotify_decode(const void *buf, size_t len, uint32_t *cookie, kevent_fn fn, void *arg);

#endif
