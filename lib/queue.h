/* SPDX-License-Identifier: MIT */
/*
 * The user-space event queue: a FIFO of undelivered events plus a hash index
 * used to merge a new event into an equal unread one (after the kernel's
 * fanotify merge queue: Amir Goldstein's series "Performance improvement
 * for fanotify merge", Linux 5.13).
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
 *   by the overflow event, whose place is reserved when the queue is made.
 * - Slots and name buffers are reused: no allocation per event once the
 *   queue has reached its working depth.
 *
 * The index: the kernel hashes events into 128 lists shared by all keys and
 * scans at most 128 entries of one, so past a few thousand queued events a
 * repeat is often not found and every unique event pays the full scan. Here
 * the index is keyed by the exact (owner, path, name), grows with the queue,
 * and each key chains only its own unread events, newest first: a lookup is
 * O(1) at any depth, the scan (still bounded by QUEUE_MERGE_SCAN) meets only
 * that name's events, and a merge is never missed for being far back.
 *
 * Two ways in besides queue_push, both with exactly its result:
 * - Deferred pushes (queue_defer) are kept until queue_flush or the next
 *   other call, then handled as one batch: all hashed and their index
 *   entries and slots prefetched before any is inserted, so at a depth far
 *   past the caches their memory misses overlap instead of queueing one
 *   behind the other.
 * - A direct read (queue_direct_begin .. queue_direct_end) lends the queue
 *   the caller's event array while the queue is empty: events go straight
 *   into it, merged there through a small index of its own, and what does
 *   not fit waits in the queue behind them as usual. It is kept because
 *   a reader that keeps up finds the queue empty: without it every event
 *   would take a slot and an index entry only to be copied out again.
 */
#ifndef FSNW_QUEUE_H
#define FSNW_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "strref.h"

/* Embedded in each logical watch: the queue's bookkeeping of its events. */
struct qowner {
	int wid;
	uint32_t queued; /* unread events it has in the queue (a direct read's included) */
};

enum queue_result {
	QUEUE_QUEUED,
	QUEUE_MERGED,
	QUEUE_DROPPED,
};

#define QUEUE_FORCE 0x1u

#define QUEUE_MERGE_SCAN 128 /* unread events of one key searched, newest first */

/* Deferred pushes handled together by queue_flush. */
#define QUEUE_BATCH 64
/* The most events a direct read takes into the caller's array. */
#define QUEUE_DIRECT_MAX 4096

struct queue_counters {
	uint64_t queued;       /* events that took a slot */
	uint64_t merged;       /* events folded into an unread one */
	uint64_t dropped_full; /* events dropped for want of a slot */
	uint64_t overflows;    /* FSNW_OVERFLOW events raised by drops (not queue_overflow) */
	uint64_t delivered;    /* events popped (or handed out by a direct read) */
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
 * gains a reference if a slot is taken. name may be NULL; it is copied.
 */
enum queue_result queue_push(struct queue *q, struct qowner *owner, struct strref *path,
			     uint32_t mask, uint32_t cookie, const char *name, size_t namelen,
			     unsigned flags);

/* The deferred pushes, as a batch (queue_flush when some wait). */
void queue_flush_batch(struct queue *q);

/* A deferred push. The batch opens struct queue, so deferring is a few
 * stores, not a call (it is done per event and per watch). */
struct queue_pend {
	struct qowner *owner;
	struct strref *path;
	const char *name;
	size_t namelen;
	uint32_t mask;
	uint32_t cookie;
	uint32_t hash; /* the queue's */
};

struct queue_deferred {
	uint32_t n;
	struct queue_pend p[QUEUE_BATCH];
};

/*
 * Handle every deferred push, in order. Every queue call starts with it,
 * and most find none deferred: the check is inline, a load and a branch.
 */
static inline void queue_flush(struct queue *q)
{
	if (((const struct queue_deferred *)(const void *)q)->n)
		queue_flush_batch(q);
}

/*
 * queue_push without its result, for a batch: owner (not NULL), path and
 * name must stay valid until queue_flush or the next other queue call,
 * which handles every deferred push first, in order.
 */
static inline void queue_defer(struct queue *q, struct qowner *owner, struct strref *path,
			       uint32_t mask, uint32_t cookie, const char *name, size_t namelen)
{
	struct queue_deferred *b = (struct queue_deferred *)(void *)q;
	struct queue_pend *p;

	if (b->n == QUEUE_BATCH)
		queue_flush(q);
	p = &b->p[b->n++];
	p->owner = owner;
	p->path = path;
	p->name = name;
	p->namelen = namelen;
	p->mask = mask;
	p->cookie = cookie;
}

/* Raise FSNW_OVERFLOW for a loss the caller saw (a kernel overflow). */
void queue_overflow(struct queue *q);

/*
 * Move up to max events from the head into evs. Their strings stay valid
 * until queue_release_delivered() (called at the start of the next read).
 */
size_t queue_pop(struct queue *q, struct fsnw_event *evs, size_t max);
void queue_release_delivered(struct queue *q);
/*
 * The paths a lending lane reported (queue_lane_open) take a reference now,
 * kept until queue_release_delivered: their owner is about to put some.
 * Not while a lane is open.
 */
void queue_keep_lent(struct queue *q);

/*
 * A direct read. begin: if nothing waits (and the last read's strings were
 * released), the next events pushed go into evs (at most max, and at most
 * QUEUE_DIRECT_MAX) as if they had been queued; returns false and changes
 * nothing otherwise. lend: from now on the names of deferred pushes stay
 * valid until queue_release_delivered, so evs may point at them instead of
 * a copy (off at begin). room: how many more evs can take. end: the number
 * of events in evs, now delivered (strings valid until
 * queue_release_delivered); what did not fit waits in the queue and pops
 * after them. room counts each deferred push as taking a place.
 */
bool queue_direct_begin(struct queue *q, struct fsnw_event *evs, size_t max);
void queue_direct_lend(struct queue *q, bool lend);
size_t queue_direct_room(const struct queue *q);
size_t queue_direct_end(struct queue *q);
/* Whether the last direct read's array holds an FSNW_IGNORED (until the next begins). */
bool queue_direct_ignored(const struct queue *q);

/* Drop every unread event of owner; returns how many. */
size_t queue_purge(struct queue *q, struct qowner *owner);

/* Both count deferred pushes only once flushed. */
size_t queue_depth(const struct queue *q);
const struct queue_counters *queue_counters(const struct queue *q);

#endif
