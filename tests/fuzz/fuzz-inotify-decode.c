/* SPDX-License-Identifier: MIT */
/*
 * inotify_decode on bytes as read(2) could return them, and on bytes it
 * never would: truncated headers, lengths that claim more than the buffer
 * holds, names without a NUL, any alignment. Each decoded event is checked
 * against an independent parse of the same record: the decoder stops at the
 * first record that does not fit, reports every whole record before it once
 * and in order, never points outside the buffer, and hands out only names
 * that are NUL-terminated inside their record.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#include "backend.h"

#include "fuzz-check.h"

struct ref {
	const unsigned char *buf;
	size_t len;
	size_t off; /* the next record the decoder must report */
	size_t n;
	size_t stop_after; /* the callback asks to stop after this many events (0: never) */
};

static bool check_event(void *arg, const struct kevent *ev)
{
	struct ref *r = arg;
	struct inotify_event hdr;
	const unsigned char *body;
	size_t namelen;

	CHECK(r->len - r->off >= sizeof(hdr));
	memcpy(&hdr, r->buf + r->off, sizeof(hdr));
	body = r->buf + r->off + sizeof(hdr);
	CHECK(hdr.len <= r->len - r->off - sizeof(hdr));

	CHECK(ev->mask == hdr.mask);
	CHECK(ev->cookie == hdr.cookie);
	namelen = hdr.len ? strnlen((const char *)body, hdr.len) : 0;
	if (namelen == 0 || namelen == hdr.len) {
		/* No name, or one without its NUL: not handed out. */
		CHECK(ev->name == NULL);
		CHECK(ev->namelen == 0);
	} else {
		CHECK(ev->name == (const char *)body);
		CHECK(ev->namelen == namelen);
		CHECK(ev->name[ev->namelen] == '\0');
		CHECK(strlen(ev->name) == ev->namelen);
	}
	if (hdr.mask & IN_Q_OVERFLOW) {
		CHECK(ev->key == NULL);
	} else {
		CHECK(ev->key != NULL);
		CHECK(ev->keylen == sizeof(int));
		CHECK(!memcmp(ev->key, &hdr.wd, sizeof(int)));
	}
	r->off += sizeof(hdr) + hdr.len;
	CHECK(ev->end == r->off);
	r->n++;
	return r->n != r->stop_after;
}

/* How many whole records lead the buffer: where decoding must stop. */
static size_t whole_records(const unsigned char *buf, size_t len)
{
	size_t off = 0, n = 0;

	while (len - off >= sizeof(struct inotify_event)) {
		struct inotify_event hdr;

		memcpy(&hdr, buf + off, sizeof(hdr));
		off += sizeof(hdr);
		if (hdr.len > len - off)
			break;
		off += hdr.len;
		n++;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *mem;
	struct ref r;
	size_t shift, n, stop, whole;

	if (!size)
		return 0;
	/* The first byte picks the alignment; the copy ends exactly at the
	 * buffer's end, so a read past it is a sanitizer report. */
	shift = data[0] % 8;
	data++;
	size--;
	mem = malloc(shift + size + 1);
	CHECK(mem);
	memcpy(mem + shift, data, size);
	r = (struct ref){ mem + shift, size, 0, 0, 0 };
	{
		/* A heap block of exactly the input: nothing beyond it is readable. */
		unsigned char *exact = malloc(size ? size : 1);

		CHECK(exact);
		memcpy(exact, data, size);
		r.buf = exact;
		n = inotify_decode(exact, size, check_event, &r);
		CHECK(n == r.n);
		CHECK(n == whole_records(exact, size));
		free(exact);
	}
	r = (struct ref){ mem + shift, size, 0, 0, 0 };
	n = inotify_decode(mem + shift, size, check_event, &r);
	CHECK(n == r.n);
	CHECK(n == whole_records(mem + shift, size));
	/* Asked to stop, the decoder ends after that event, and the event's
	 * end is where the next decode resumes: it then reports the rest. */
	stop = (size_t)(data[-1] >> 3) + 1;
	whole = whole_records(mem + shift, size);
	r = (struct ref){ mem + shift, size, 0, 0, stop };
	n = inotify_decode(mem + shift, size, check_event, &r);
	CHECK(n == (stop < whole ? stop : whole));
	if (n < whole) {
		size_t resume = r.off;

		r = (struct ref){ mem + shift + resume, size - resume, 0, 0, 0 };
		n += inotify_decode(mem + shift + resume, size - resume, check_event, &r);
		CHECK(n == whole);
	}
	free(mem);
	return 0;
}
