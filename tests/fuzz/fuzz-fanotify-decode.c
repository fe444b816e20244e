/* SPDX-License-Identifier: MIT */
/*
 * fanotify_decode on bytes as read(2) of a fanotify group could return them
 * and on bytes it never would: event_len shorter than the metadata, longer
 * than the buffer, info records whose own lengths lie, file handles larger
 * than their record, names without a NUL, any alignment, any fd number.
 *
 * The checks hold for any correct decoder of lib/backend.h's shape:
 * - it reports as many events as it returns, and none when the buffer holds
 *   no whole record (event_len >= the metadata, within the buffer, the
 *   metadata version right);
 * - a key, and an entry's target key, is non-empty, at most KKEY_MAX bytes
 *   and readable; a target comes only with a name; only an
 *   overflow comes without one;
 * - a name is non-empty and NUL-terminated at namelen; one that points into
 *   the buffer ends inside it;
 * - the decoder never closes a file descriptor it read from the buffer that
 *   it did not get from the kernel: the fds of this process stay open.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <unistd.h>

#include "backend.h"
#include "fsnwatch.h"

#include "fuzz-check.h"

struct ref {
	const unsigned char *buf;
	size_t len;
	size_t nrec;      /* whole records in the buffer */
	size_t rec_end[4096];
	size_t n;         /* events reported */
	size_t last_rec;  /* index of the record the last event was in, + 1 */
};

/* Offsets at which each whole, well-versioned record ends. */
static void scan(struct ref *r)
{
	size_t off = 0;

	r->nrec = 0;
	while (r->len - off >= sizeof(struct fanotify_event_metadata) &&
	       r->nrec < sizeof(r->rec_end) / sizeof(r->rec_end[0])) {
		struct fanotify_event_metadata md;

		memcpy(&md, r->buf + off, sizeof(md));
		if (md.vers != FANOTIFY_METADATA_VERSION || md.event_len < sizeof(md) ||
		    md.event_len > r->len - off)
			break;
		off += md.event_len;
		r->rec_end[r->nrec++] = off;
	}
}

static bool inside(const struct ref *r, const void *p, size_t n)
{
	const unsigned char *c = p;

	return c >= r->buf && n <= r->len && c - r->buf <= (ptrdiff_t)(r->len - n);
}

static bool check_event(void *arg, const struct kevent *ev)
{
	struct ref *r = arg;
	volatile unsigned char sink = 0;

	r->n++;
	/* A record may yield two events (a rename: from and to), never none whole. */
	CHECK(r->nrec > 0);
	if (ev->mask & FSNW_OVERFLOW) {
		CHECK(ev->name == NULL);
	} else {
		CHECK(ev->key != NULL);
		CHECK(ev->keylen > 0 && ev->keylen <= KKEY_MAX);
		for (size_t i = 0; i < ev->keylen; i++)
			sink ^= ev->key[i]; /* readable, or a sanitizer report */
		if (ev->target) {
			CHECK(ev->name != NULL);
			CHECK(ev->targetlen > 0 && ev->targetlen <= KKEY_MAX);
			for (size_t i = 0; i < ev->targetlen; i++)
				sink ^= ev->target[i];
		}
	}
	if (ev->name) {
		CHECK(ev->namelen > 0);
		CHECK(ev->name[ev->namelen] == '\0');
		CHECK(strlen(ev->name) == ev->namelen);
		if (inside(r, ev->name, 1))
			CHECK(inside(r, ev->name, ev->namelen + 1));
	} else {
		CHECK(ev->namelen == 0);
	}
	(void)sink;
	return true;
}

static int open_fds(void)
{
	int n = 0;

	for (int fd = 0; fd < 64; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ref r;
	uint32_t cookie = 0; /* the decoder's rename cookie counter */
	unsigned char *mem;
	size_t shift, n;
	int fds;

	if (!size)
		return 0;
	shift = data[0] % 8;
	data++;
	size--;
	mem = malloc(shift + size + 1);
	CHECK(mem);
	memcpy(mem + shift, data, size);
	memset(&r, 0, sizeof(r));
	r.buf = mem + shift;
	r.len = size;
	scan(&r);
	fds = open_fds();
	n = fanotify_decode(mem + shift, size, &cookie, check_event, &r);
	CHECK(n == r.n);
	CHECK(open_fds() == fds);
	free(mem);
	return 0;
}
