/* SPDX-License-Identifier: MIT */
/*
 * Immutable, reference-counted path strings. A watched path is shared by the
 * logical watch, its kernel-watch links and every queued event that reports
 * it, so an event can outlive the watch it came from without a copy.
 * Reference counts change only under the handle's lock.
 */
#ifndef FSNW_STRREF_H
#define FSNW_STRREF_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

/* Eight bytes before the string and its NUL: a path of 39 bytes fits a
 * 48-byte record. */
struct strref {
	uint32_t refs;
	uint32_t len : 31;
	uint32_t pooled : 1; /* a pool's record (mem_cache_of finds it), else malloc'd */
	char s[];
};

/* The longest string: len has 31 bits. */
#define STRREF_MAX ((1u << 31) - 1)

/*
 * Recycled strings for paths that come and go with watches (add/remove
 * churn), so that an add and a remove cost no malloc and free: a record
 * cache (mem.h) per size class, kept by the handle. Used under its lock.
 * The classes are 16 bytes apart up to 64 and a half apart after it, so a
 * string wastes a fifth of its record at most past 64 bytes.
 */
#define STRPOOL_CLASSES 7  /* 32, 48, 64, 96, 128, 192 and 256 bytes, header included */
#define STRPOOL_MAX 256
struct strpool {
	struct mem_cache class[STRPOOL_CLASSES];
};

struct strref *strref_new(const char *s, size_t len);
/* A string of len bytes for the caller to fill (s[len] is set to NUL). */
struct strref *strref_alloc(size_t len);
/* As strref_new, from the pool where the string fits a class. */
struct strref *strref_new_in(struct strpool *pool, const char *s, size_t len);
void strpool_init(struct strpool *pool);
/* Free what the pool keeps (its strings must all be back). */
void strpool_fini(struct strpool *pool);
/* dir + "/" + name (no doubled slash when dir is "/"). */
struct strref *strref_join(const struct strref *dir, const char *name, size_t namelen);

/* to + the part of p after its first `keep_from` bytes (a path moved to a new prefix). */
struct strref *strref_rebase(const struct strref *p, size_t keep_from, const struct strref *to);

static inline struct strref *strref_get(struct strref *p)
{
	if (p)
		p->refs++;
	return p;
}

void strref_put(struct strref *p);

#endif
