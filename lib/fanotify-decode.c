/* SPDX-License-Identifier: MIT */
/*
 * The fanotify record walker. Pure (no syscalls, no state but the cookie
 * counter it is handed) so a fuzzer can drive it: every length read from
 * the buffer is checked against what the buffer holds before it is used.
 */
#include <stdbool.h>
#include <string.h>
#include <sys/fanotify.h>

#include "backend.h"
#include "fanotify.h"
#include "fsnwatch.h"

/* The FAN_* event bits have the IN_* values, hence the FSNW_* ones. We go
 * through the table all the same: it is the one place that says so. */
_Static_assert(FAN_ACCESS == FSNW_ACCESS, "FAN_ACCESS");
_Static_assert(FAN_MODIFY == FSNW_MODIFY, "FAN_MODIFY");
_Static_assert(FAN_ATTRIB == FSNW_ATTRIB, "FAN_ATTRIB");
_Static_assert(FAN_CLOSE_WRITE == FSNW_CLOSE_WRITE, "FAN_CLOSE_WRITE");
_Static_assert(FAN_CLOSE_NOWRITE == FSNW_CLOSE_NOWRITE, "FAN_CLOSE_NOWRITE");
_Static_assert(FAN_OPEN == FSNW_OPEN, "FAN_OPEN");
_Static_assert(FAN_MOVED_FROM == FSNW_MOVED_FROM, "FAN_MOVED_FROM");
_Static_assert(FAN_MOVED_TO == FSNW_MOVED_TO, "FAN_MOVED_TO");
_Static_assert(FAN_CREATE == FSNW_CREATE, "FAN_CREATE");
_Static_assert(FAN_DELETE == FSNW_DELETE, "FAN_DELETE");
_Static_assert(FAN_DELETE_SELF == FSNW_DELETE_SELF, "FAN_DELETE_SELF");
_Static_assert(FAN_MOVE_SELF == FSNW_MOVE_SELF, "FAN_MOVE_SELF");
_Static_assert(FAN_Q_OVERFLOW == FSNW_OVERFLOW, "FAN_Q_OVERFLOW");
_Static_assert(FAN_ONDIR == FSNW_ISDIR, "FAN_ONDIR");

const struct fan_bit fan_bits[FAN_NBITS] = {
	{ FAN_CREATE, FSNW_CREATE },
	{ FAN_MOVED_TO, FSNW_MOVED_TO },
	{ FAN_OPEN, FSNW_OPEN },
	{ FAN_MODIFY, FSNW_MODIFY },
	{ FAN_ACCESS, FSNW_ACCESS },
	{ FAN_CLOSE_WRITE, FSNW_CLOSE_WRITE },
	{ FAN_CLOSE_NOWRITE, FSNW_CLOSE_NOWRITE },
	{ FAN_ATTRIB, FSNW_ATTRIB },
	{ FAN_MOVED_FROM, FSNW_MOVED_FROM },
	{ FAN_DELETE, FSNW_DELETE },
	{ FAN_MOVE_SELF, FSNW_MOVE_SELF },
	{ FAN_DELETE_SELF, FSNW_DELETE_SELF },
};

/* fsid, then struct file_handle's two fields: the fixed part of a fid record. */
#define FID_FIXED (sizeof(struct fanotify_event_info_header) + 8 + 2 * sizeof(uint32_t))

/* One fid info record: the key (fsid + file handle) and, for the named kinds, a name. */
struct fid {
	const unsigned char *key;
	size_t keylen;
	const char *name;
	size_t namelen;
};

/* What one record says. */
struct record {
	uint64_t mask;
	struct fid dir;    /* DFID_NAME (or DFID): the directory, and the entry's name */
	struct fid olddir; /* FAN_RENAME: where the entry was */
	struct fid newdir; /* FAN_RENAME: where it is now */
	struct fid obj;    /* FID: the object itself */
};

static bool parse_fid(const unsigned char *p, size_t len, bool named, struct fid *f)
{
	uint32_t hbytes;
	size_t room;

	if (len < FID_FIXED)
		return false;
	memcpy(&hbytes, p + sizeof(struct fanotify_event_info_header) + 8, sizeof(hbytes));
	if (hbytes > KKEY_MAX - (FID_FIXED - sizeof(struct fanotify_event_info_header)) ||
	    hbytes > len - FID_FIXED)
		return false;
	f->key = p + sizeof(struct fanotify_event_info_header);
	f->keylen = FID_FIXED - sizeof(struct fanotify_event_info_header) + hbytes;
	f->name = NULL;
	f->namelen = 0;
	if (!named)
		return true;
	/* The name follows the handle, NUL-terminated inside the record. */
	room = len - FID_FIXED - hbytes;
	f->name = (const char *)p + FID_FIXED + hbytes;
	f->namelen = strnlen(f->name, room);
	return f->namelen > 0 && f->namelen < room;
}

/* Fill r from the info records of one event; false if any is malformed. */
static bool parse_record(const unsigned char *p, const unsigned char *end, struct record *r)
{
	while (p < end) {
		struct fanotify_event_info_header h;
		struct fid *slot;
		bool named = true;

		if ((size_t)(end - p) < sizeof(h))
			return false;
		memcpy(&h, p, sizeof(h));
		if (h.len < sizeof(h) || h.len > (size_t)(end - p))
			return false;
		switch (h.info_type) {
		case FAN_EVENT_INFO_TYPE_FID:
			slot = &r->obj;
			named = false;
			break;
		case FAN_EVENT_INFO_TYPE_DFID:
			slot = &r->dir;
			named = false;
			break;
		case FAN_EVENT_INFO_TYPE_DFID_NAME:
			slot = &r->dir;
			break;
		case FAN_EVENT_INFO_TYPE_OLD_DFID_NAME:
			slot = &r->olddir;
			break;
		case FAN_EVENT_INFO_TYPE_NEW_DFID_NAME:
			slot = &r->newdir;
			break;
		default:
			slot = NULL; /* pidfd, error, ...: not ours to read */
			break;
		}
		if (slot && (slot->key || !parse_fid(p, h.len, named, slot)))
			return false;
		p += h.len;
	}
	return true;
}

/* An event on f; named: with f's entry name, and the entry's own key as target. */
static size_t emit(const struct fid *f, uint32_t mask, uint32_t cookie, bool named,
		   const struct fid *target, uint32_t flags, kevent_fn fn, void *arg)
{
	struct kevent ev = {
		.mask = mask,
		.cookie = cookie,
		.flags = KEVENT_OPTIONAL | flags,
		.key = f->key,
		.keylen = f->keylen,
	};

	if (named) {
		ev.name = f->name;
		ev.namelen = f->namelen;
		if (target && (mask & FSNW_DIRENT_BITS)) {
			ev.target = target->key;
			ev.targetlen = target->keylen;
		}
	}
	fn(arg, &ev);
	return 1;
}

/* The delete of a record that also created or moved in the same object. */
static uint32_t late_bit(uint32_t bit, uint32_t ent)
{
	return bit == FSNW_DELETE && (ent & (FAN_CREATE | FAN_MOVED_TO)) ? KEVENT_LATE : 0;
}

static size_t emit_record(const struct record *r, uint32_t *cookie, kevent_fn fn, void *arg)
{
	uint32_t isdir = (r->mask & FAN_ONDIR) ? FSNW_ISDIR : 0;
	const struct fid *dir = r->dir.name ? &r->dir : NULL;
	const struct fid *obj = r->obj.key ? &r->obj : NULL;
	uint32_t ent = r->mask & (FAN_CREATE | FAN_DELETE | FAN_MOVED_FROM | FAN_MOVED_TO | FAN_RENAME);
	/* More than one entry bit: the kernel merged events (fanotify_merge). */
	uint32_t merged = ent & (ent - 1) ? KEVENT_MERGED : 0;
	size_t n = 0;

	/* An event on a directory itself names it with ".", or (without
	 * names) bare: the directory is then the object, not a parent. */
	if (r->dir.key && (!r->dir.name || (r->dir.namelen == 1 && r->dir.name[0] == '.'))) {
		dir = NULL;
		if (!obj && isdir)
			obj = &r->dir;
	}
	if (r->mask & FAN_RENAME) {
		/* One record for both ends: inotify's pair, with a cookie of ours. */
		uint32_t c;

		if (++*cookie == 0)
			++*cookie;
		c = *cookie;
		if (r->olddir.key)
			n += emit(&r->olddir, FSNW_MOVED_FROM | isdir, c, true, obj, merged, fn,
				  arg);
		if (r->newdir.key)
			n += emit(&r->newdir, FSNW_MOVED_TO | isdir, c, true, obj, merged, fn, arg);
	}
	for (size_t i = 0; i < FAN_NBITS; i++) {
		uint32_t bit = fan_bits[i].fsnw;

		if (!(r->mask & fan_bits[i].fan))
			continue;
		/* Like inotify: the parent's event (with the name) first, then
		 * the object's own; self events only to the object. */
		if (dir && !(bit & FSNW_SELF_BITS))
			n += emit(dir, bit | isdir, 0, true, obj, merged | late_bit(bit, ent), fn,
				  arg);
		if (obj && !(bit & FSNW_DIRENT_BITS))
			n += emit(obj, bit | isdir, 0, false, NULL, 0, fn, arg);
		/* The kernel has dropped the mark of a deleted object and says
		 * nothing more: this is inotify's IN_IGNORED. */
		if (obj && bit == FSNW_DELETE_SELF)
			n += emit(obj, FSNW_IGNORED, 0, false, NULL, 0, fn, arg);
	}
	return n;
}

size_t fanotify_decode(const void *buf, size_t len, uint32_t *cookie, kevent_fn fn, void *arg)
{
	const unsigned char *p = buf, *end = p + len;
	size_t n = 0;

	while ((size_t)(end - p) >= sizeof(struct fanotify_event_metadata)) {
		struct fanotify_event_metadata md;
		struct record r;

		/* The buffer may be unaligned (fuzzing): copy the header out. */
		memcpy(&md, p, sizeof(md));
		if (md.vers != FANOTIFY_METADATA_VERSION || md.metadata_len < sizeof(md) ||
		    md.event_len < md.metadata_len || md.event_len > (size_t)(end - p))
			break;
		if (md.mask & FAN_Q_OVERFLOW) {
			struct kevent ev = { .mask = FSNW_OVERFLOW };

			fn(arg, &ev);
			n++;
		} else {
			memset(&r, 0, sizeof(r));
			r.mask = md.mask;
			if (parse_record(p + md.metadata_len, p + md.event_len, &r))
				n += emit_record(&r, cookie, fn, arg);
		}
		p += md.event_len;
	}
	return n;
}
