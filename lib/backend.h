/* SPDX-License-Identifier: MIT */
/*
 * The kernel side of a handle. Only backend files make fsnotify syscalls,
 * and each counts them in the handle's stats. A backend identifies a kernel
 * watch by key bytes: the wd for inotify, fsid + file handle for fanotify.
 */
#ifndef FSNW_BACKEND_H
#define FSNW_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct fsnw;
struct kwatch;

#define KKEY_MAX 160

/* The identity of a kernel watch, as a mark operation reports it. */
struct kkey {
	uint32_t len;
	int wd; /* inotify; -1 otherwise */
	unsigned char bytes[KKEY_MAX];
};

/* A decoded kernel event. */
struct kevent {
	uint32_t mask;              /* FSNW_* bits, FSNW_ISDIR included */
	uint32_t cookie;            /* pairs moves; 0 otherwise */
	const char *name;           /* NUL-terminated entry name, or NULL */
	size_t namelen;
	const unsigned char *key;   /* the kernel watch it is for; NULL for overflow */
	size_t keylen;
};

typedef void (*kevent_fn)(void *arg, const struct kevent *ev);

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
		    int replace, struct kkey *key);
	/* Remove the kernel watch; one the kernel already dropped is success. */
	int (*unmark)(struct fsnw *w, const struct kwatch *kw);
	/*
	 * One non-blocking read of the group fd, decoded; fn is called per
	 * event. Returns bytes read, 0 when nothing was pending, or -errno.
	 */
	ssize_t (*read)(struct fsnw *w, void *buf, size_t len, kevent_fn fn, void *arg);
	/* The largest record one read can return: a read shorter than the
	 * buffer by this much emptied the kernel queue. */
	size_t max_record;
};

extern const struct backend inotify_backend;
extern const struct backend fanotify_backend;

/*
 * Decode a buffer of struct inotify_event records as read(2) returns them.
 * Records that are truncated or claim more than the buffer holds end the
 * decode. Returns the number of events passed to fn.
 */
size_t inotify_decode(const void *buf, size_t len, kevent_fn fn, void *arg);

#endif
