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
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/inotify.h>

#include "backend.h"

#define INOTIFY_ONES 0x0101010101010101ULL
#define INOTIFY_HIGHS 0x8080808080808080ULL

/* The first NUL of a word, as a flag in its byte's high bit (0: none). */
static inline uint64_t inotify_zero_bytes(uint64_t v)
{
	return (v - INOTIFY_ONES) & ~v & INOTIFY_HIGHS;
}

/*
 * strnlen for the padded name of a record, a word at a time: names are
 * short, and a call to strnlen costs more than the scan.
 */
static inline size_t inotify_name_len(const unsigned char *p, size_t max)
{
	size_t n = 0;

	for (; max - n >= 8; n += 8) {
		uint64_t v, zero;

		memcpy(&v, p + n, 8);
		zero = inotify_zero_bytes(v);
		if (zero)
			return n + (size_t)__builtin_ctzll(zero) / 8;
	}
	while (n < max && p[n])
		n++;
	return n;
}

/*
 * The same for a record of 16 name bytes, what the kernel gives a name of
 * up to 15 (it pads to a multiple of the header's size): its NUL is in one
 * of two words, found without the loop.
 */
static inline size_t inotify_name_len16(const unsigned char *p)
{
	uint64_t lo, hi, zero;

	memcpy(&lo, p, 8);
	zero = inotify_zero_bytes(lo);
	if (zero)
		return (size_t)__builtin_ctzll(zero) / 8;
	memcpy(&hi, p + 8, 8);
	zero = inotify_zero_bytes(hi);
	return zero ? 8 + (size_t)__builtin_ctzll(zero) / 8 : 16;
}

/* One record, parsed: its first four fields are the header's, in its order,
 * so that they are copied as one. */
struct inotify_rec {
	int wd;
	uint32_t mask;
	uint32_t cookie;
	uint32_t room;                 /* bytes the record holds from name on */
	const char *name;              /* NUL-terminated inside the record, or NULL */
	size_t namelen;
	const unsigned char *next;     /* the record after it */
};
_Static_assert(offsetof(struct inotify_rec, room) == offsetof(struct inotify_event, len) &&
		       offsetof(struct inotify_rec, cookie) == offsetof(struct inotify_event, cookie) &&
		       offsetof(struct inotify_rec, mask) == offsetof(struct inotify_event, mask) &&
		       offsetof(struct inotify_rec, wd) == offsetof(struct inotify_event, wd) &&
		       offsetof(struct inotify_rec, name) == sizeof(struct inotify_event),
	       "a record's header is an inotify_event's");

/* Parse the record at p, before end; false if it does not fit there. */
static inline __attribute__((always_inline)) bool
inotify_rec_parse(const unsigned char *p, const unsigned char *end, struct inotify_rec *r)
{
	const char *name = NULL;
	size_t nl = 0;
	uint32_t len;

	if ((size_t)(end - p) < sizeof(struct inotify_event))
		return false;
	/* The buffer may be unaligned (fuzzing): copy the header out. */
	memcpy(&len, p + offsetof(struct inotify_event, len), sizeof(len));
	if (len > (size_t)(end - p) - sizeof(struct inotify_event))
		return false;
	memcpy(r, p, sizeof(struct inotify_event));
	p += sizeof(struct inotify_event);
	if (len) {
		nl = len == 16 ? inotify_name_len16(p) : inotify_name_len(p, len);
		/* The kernel NUL-pads names; one that fills its record without
		 * a NUL is not a name we can hand out. */
		if (nl && nl < len)
			name = (const char *)p;
		else
			nl = 0;
	}
	r->name = name;
	r->namelen = nl;
	r->next = p + len;
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
