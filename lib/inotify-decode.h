/* SPDX-License-Identifier: MIT */
/*
 * The decode of inotify records, inline: inotify_decode (backend.h) is
 * inotify_decode_inline with a callback, and the engine parses records
 * itself with inotify_rec_parse, so that the event path makes no call per
 * record (struct backend.inotify_records says when it may).
 */
#ifndef FSNW_INOTIFY_DECODE_H
#define FSNW_INOTIFY_DECODE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>

#include "backend.h"

/*
 * strnlen for the padded name of a record, a word at a time: names are
 * short, and a call to strnlen costs more than the scan.
 */
static inline size_t inotify_name_len(const unsigned char *p, size_t max)
{
	const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
	size_t n = 0;

	for (; max - n >= 8; n += 8) {
		uint64_t v, zero;

		memcpy(&v, p + n, 8);
		zero = (v - ones) & ~v & highs;
		if (zero)
			return n + (size_t)__builtin_ctzll(zero) / 8;
	}
	while (n < max && p[n])
		n++;
	return n;
}

/* One record, parsed. */
struct inotify_rec {
	int wd;
	uint32_t mask;
	uint32_t cookie;
	const char *name;              /* NUL-terminated inside the record, or NULL */
	size_t namelen;
	const unsigned char *next;     /* the record after it */
};

/* Parse the record at p, before end; false if it does not fit there. */
static inline __attribute__((always_inline)) bool
inotify_rec_parse(const unsigned char *p, const unsigned char *end, struct inotify_rec *r)
{
	struct inotify_event hdr;

	if ((size_t)(end - p) < sizeof(hdr))
		return false;
	/* The buffer may be unaligned (fuzzing): copy the header out. */
	memcpy(&hdr, p, sizeof(hdr));
	p += sizeof(hdr);
	if (hdr.len > (size_t)(end - p))
		return false;
	r->wd = hdr.wd;
	r->mask = hdr.mask;
	r->cookie = hdr.cookie;
	r->name = NULL;
	r->namelen = 0;
	if (hdr.len) {
		size_t nl = inotify_name_len(p, hdr.len);

		/* The kernel NUL-pads names; one that fills its record without
		 * a NUL is not a name we can hand out. */
		if (nl && nl < hdr.len) {
			r->name = (const char *)p;
			r->namelen = nl;
		}
	}
	r->next = p + hdr.len;
	return true;
}

/* The event of a parsed record; its key points at r->wd, its end is from base. */
static inline void inotify_rec_event(const struct inotify_rec *r, const unsigned char *base,
				     struct kevent *ev)
{
	*ev = (struct kevent){
		.mask = r->mask,
		.cookie = r->cookie,
		.name = r->name,
		.namelen = r->namelen,
		.end = (size_t)(r->next - base),
	};
	if (!(r->mask & IN_Q_OVERFLOW)) {
		ev->key = (const unsigned char *)&r->wd;
		ev->keylen = sizeof(r->wd);
	}
}

/* As inotify_decode (backend.h). */
static inline __attribute__((always_inline)) size_t
inotify_decode_inline(const void *buf, size_t len, kevent_fn fn, void *arg)
{
	const unsigned char *p = buf, *end = p + len;
	struct inotify_rec r;
	size_t n = 0;

	while (inotify_rec_parse(p, end, &r)) {
		struct kevent ev;

		inotify_rec_event(&r, buf, &ev);
		n++;
		if (!fn(arg, &ev))
			break;
		p = r.next;
	}
	return n;
}

#endif
