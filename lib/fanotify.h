/* SPDX-License-Identifier: MIT */
/*
 * What the fanotify backend (fanotify.c) and its record decoder
 * (fanotify-decode.c) share: the one table that maps event bits.
 */
#ifndef FSNW_FANOTIFY_H
#define FSNW_FANOTIFY_H

#include <stdint.h>

struct fan_bit {
	uint64_t fan;  /* FAN_* */
	uint32_t fsnw; /* FSNW_* */
};

/*
 * Every event bit, in the order a kernel record that merged several of
 * them is split back into events (fanotify merges unread events on one
 * object whatever their type, so the true order is lost; this is the
 * order a file's life usually has).
 */
#define FAN_NBITS 12
extern const struct fan_bit fan_bits[FAN_NBITS];

/* Events about a directory entry: they concern the directory, with a name. */
#define FSNW_DIRENT_BITS (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO)
/* Events about the object itself: never reported to its parent's watch. */
#define FSNW_SELF_BITS (FSNW_DELETE_SELF | FSNW_MOVE_SELF)

#endif
