/* SPDX-License-Identifier: MIT */
/*
 * The decode of inotify records, inline: inotify_decode (backend.h) is this
 * with a callback, and the engine instantiates it with its own routing
 * callback inlined, so that the event path makes no call per record
 * (struct backend.inotify_records says when it may).
 */
#ifndef FSNW_INOTIFY_DECODE_H
#define FSNW_INOTIFY_DECODE_H

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

/* As inotify_decode (backend.h). One event, its fields set per record. */
static inline __attribute__((always_inline)) size_t
inotify_decode_inline(const void *buf, size_t len, kevent_fn fn, void *arg)
{
	const unsigned char *p = buf, *end = p + len;
	struct kevent ev = { 0 };
	size_t n = 0;
	int wd;

	while ((size_t)(end - p) >= sizeof(struct inotify_event)) {
		struct inotify_event hdr;

		/* The buffer may be unaligned (fuzzing): copy the header out. */
		memcpy(&hdr, p, sizeof(hdr));
		p += sizeof(hdr);
		if (hdr.len > (size_t)(end - p))
			break;
		ev.mask = hdr.mask;
		ev.cookie = hdr.cookie;
		ev.name = NULL;
		ev.namelen = 0;
		if (hdr.len) {
			size_t nl = inotify_name_len(p, hdr.len);

			/* The kernel NUL-pads names; one that fills its record
			 * without a NUL is not a name we can hand out. */
			if (nl && nl < hdr.len) {
				ev.name = (const char *)p;
				ev.namelen = nl;
			}
		}
		p += hdr.len;
		ev.end = (size_t)(p - (const unsigned char *)buf);
		wd = hdr.wd;
		ev.key = (hdr.mask & IN_Q_OVERFLOW) ? NULL : (const unsigned char *)&wd;
		ev.keylen = ev.key ? sizeof(wd) : 0;
		n++;
		if (!fn(arg, &ev))
			break;
	}
	return n;
}

#endif
