/* SPDX-License-Identifier: MIT */
/*
 * The user-space event queue: a FIFO of undelivered events plus a hash index
 * used to merge a new event into an equal unread one (after the kernel's
 * fanotify merge queue, seeds/004).
 *
 * Contract:
 * - Equal means same owner (logical watch), same reported path, same mask,
 *   same name, and no cookie. Moves (cookie), FSNW_IGNORED, FSNW_OVERFLOW
 *   and FSNW_UNMOUNT are never merged.
 * - A create, delete or move of a name is a barrier: no later event merges
 *   into one queued before it for the same (owner, path, name).
 * - Events leave in order of first occurrence.
 * - At most `capacity` events wait. An event that needs a slot when none is
 *   left is dropped and a single FSNW_OVERFLOW (wid 0) is queued at the tail;
 *   while it is unread every event that needs a slot is dropped, so it stays
 *   the tail and there is only ever one. Merging is tried before the check.
 * - QUEUE_FORCE takes a slot past the capacity (it is placed before a pending
 *   overflow). The library uses it for FSNW_IGNORED, which a caller must
 *   never miss and of which there is at most one per logical watch.
 * - push never fails: when memory runs out the event is dropped and covered
 *   by the overflow event, whose slot is reserved when the queue is made.
 * - Slots, keys and name buffers are reused: no allocation per event once
 *   the queue has reached its working depth.
 *
 * The index: the kernel hashes events into 128 lists shared by all keys and
 * scans at most 128 entries of one, so past a few thousand queued events a
 * repeat is often not found and every unique event pays the full scan. Here
 * the index is keyed by the exact (owner, path, name), grows with the queue,
 * and each key lists only its own unread events, newest first: a lookup is
 * O(1) at any depth, the scan (still bounded by QUEUE_MERGE_SCAN) meets only
 * that name's events, and a merge is never missed for being far back.
 */
#ifndef FSNW_QUEUE_H
#define FSNW_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "strref.h"

/* Embedded in each logical watch: the queue's bookkeeping of its events. */
struct qowner {
	int wid;
	uint32_t queued; /* slots this owner holds */
};

enum queue_result {
	QUEUE_QUEUED,
	QUEUE_MERGED,
	QUEUE_DROPPED,
};

#define QUEUE_FORCE 0x1u

#define QUEUE_MERGE_SCAN 128 /* unread events of one key searched, newest first */

struct queue_counters {
	uint64_t queued;       /* events that took a slot */
	uint64_t merged;       /* events folded into an unread one */
	uint64_t dropped_full; /* events dropped for want of a slot */
	uint64_t overflows;    /* FSNW_OVERFLOW events raised by drops (not queue_overflow) */
	uint64_t delivered;    /* events popped */
	uint64_t purged;       /* events removed unread (their owner went away) */
	uint64_t depth;        /* events waiting now, a pending overflow included */
	uint64_t high_water;   /* most events ever waiting */
};

struct queue;

/* capacity: FSNW_QUEUE_UNLIMITED for no bound. NULL on ENOMEM. */
struct queue *queue_new(uint32_t capacity, int merge);
void queue_free(struct queue *q);

/*
 * Queue an event. owner is NULL only for FSNW_OVERFLOW. path (may be NULL)
 * gains a reference if a slot is taken. name may be NULL.
 */
enum queue_result queue_push(struct queue *q, struct qowner *owner, struct strref *path,
			     uint32_t mask, uint32_t cookie, const char *name, size_t namelen,
			     unsigned flags);

/* Raise FSNW_OVERFLOW for a loss the caller saw (a kernel overflow). */
void queue_overflow(struct queue *q);

/*
 * Move up to max events from the head into evs. Their strings stay valid
 * until queue_release_delivered() (called at the start of the next read).
 */
size_t queue_pop(struct queue *q, struct fsnw_event *evs, size_t max);
void queue_release_delivered(struct queue *q);

/* Drop every unread event of owner; returns how many. */
size_t queue_purge(struct queue *q, struct qowner *owner);

size_t queue_depth(const struct queue *q);
const struct queue_counters *queue_counters(const struct queue *q);

#endif
