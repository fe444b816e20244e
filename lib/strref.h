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

struct strref {
	uint32_t refs;
	uint32_t len;
	char s[];
};

struct strref *strref_new(const char *s, size_t len);
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
