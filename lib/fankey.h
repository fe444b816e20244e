/* SPDX-License-Identifier: MIT */
/*
 * The layout of a fanotify key, defined once: the filesystem id (8 bytes),
 * then the struct file_handle an event or name_to_handle_at gives
 * (handle_bytes, handle_type, f_handle). Events carry these bytes as they
 * are; the cache keys its directories by them, and open_by_handle_at takes
 * the handle part back.
 */
#ifndef FSNW_FANKEY_H
#define FSNW_FANKEY_H

#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "backend.h"

#define FSID_BYTES 8
#define FH_FIXED 8 /* handle_bytes + handle_type */

struct fh_buf {
	struct file_handle fh;
	unsigned char bytes[MAX_HANDLE_SZ];
};

/* The handle part of key into h; false if key is not a well-formed key. */
static inline bool key_to_handle(const unsigned char *key, size_t keylen, struct fh_buf *h)
{
	unsigned int hbytes;

	if (keylen < FSID_BYTES + FH_FIXED || keylen - FSID_BYTES > sizeof(*h))
		return false;
	memcpy(&hbytes, key + FSID_BYTES, sizeof(hbytes));
	if (hbytes != keylen - FSID_BYTES - FH_FIXED)
		return false;
	memcpy(h, key + FSID_BYTES, keylen - FSID_BYTES);
	return true;
}

/* The key of handle h on the filesystem fsid. */
static inline void handle_to_key(const unsigned char *fsid, const struct fh_buf *h,
				 struct kkey *key)
{
	memset(key, 0, offsetof(struct kkey, bytes));
	key->wd = -1;
	memcpy(key->bytes, fsid, FSID_BYTES);
	memcpy(key->bytes + FSID_BYTES, &h->fh, FH_FIXED + h->fh.handle_bytes);
	key->len = (uint32_t)(FSID_BYTES + FH_FIXED + h->fh.handle_bytes);
}

#endif
