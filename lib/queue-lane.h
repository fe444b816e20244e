/* SPDX-License-Identifier: MIT */
/*
 * The queue's lane: a direct read's pushes of one owner and path (or of
 * one owner, a tree's, with the path of each event's directory: see
 * queue_lane_repath), taken inline into the caller's array by the engine's loop over the records of
 * a read, without the deferred batch. Each push has exactly queue_push's
 * result (queue.h), in the common case only; one the lane cannot take that
 * way (a drop, an overflow, a full array) it hands back, and the caller
 * closes the lane and pushes it as usual. Part of the queue module: it
 * opens struct queue (queue-impl.h), and test-queue-diff checks it against
 * the plain queue. It is kept because a run of one watch's records is
 * what most reads hold, and a route_event and a push for each record cost
 * more than the rest of the read's work on it.
 *
 * While a lane is open nothing else may touch the queue: its counts live in
 * the lane until queue_lane_close.
 */
#ifndef FSNW_QUEUE_LANE_H
#define FSNW_QUEUE_LANE_H

#include <assert.h>

#include "probes.h"
#include "queue-impl.h"

struct queue_lane {
	struct direct *d;
	struct fsnw_event *evs;
	struct dmeta *meta;
	uint32_t *tab;
	uint32_t tmask;
	uint32_t n;       /* entries in the array, as direct.n */
	uint32_t max;     /* entries the array holds */
	uint32_t limit;   /* entries the lane may fill: max, or less by the capacity */
	uint32_t n0;      /* n when it opened */
	uint32_t run0;    /* n when path became the lane's */
	uint32_t merged;
	struct qowner *owner;
	struct strref *path;
	const char *pstr; /* the path's string */
	uint64_t oseed;   /* key_seed_owner of owner */
	uint64_t seed;    /* key_seed of owner and path */
	int wid;
	bool merge;
	bool lend;        /* its paths are noted without a reference (queue_lane_open) */
};

/*
 * Open a lane for owner's events at path (owner not NULL) if a direct read
 * takes them: a direct read with names lent, nothing waiting behind the
 * array, no overflow pending, room left. Deferred pushes go in first.
 * lend: the paths the lane reports take no reference; their owner keeps
 * them until queue_release_delivered, and calls queue_keep_lent before it
 * puts one (a tree's directories' paths: a read reports many, each a cold
 * line whose reference would cost a miss to take and another to put).
 */
bool queue_lane_open(struct queue *q, struct qowner *owner, struct strref *path, bool lend,
		     struct queue_lane *ln);

/* Note path as reported by the entries from ln->run0 on: with a reference,
 * or, lending, without (queue_keep_lent gives it one). A run reports one.
 * A lent path noted twice costs a store, which no test for it would save. */
static inline void queue_lane_hold(struct queue_lane *ln, struct strref *path)
{
	struct direct *d = ln->d;

	/* Each note is of entries of its own: held has room. */
	assert(d->nheld + d->nlent < ln->n);
	if (ln->lend) {
		d->held[d->max - 1 - d->nlent++] = path;
	} else if (!d->nheld || d->held[d->nheld - 1] != path) {
		d->held[d->nheld++] = strref_get(path);
	}
}
/* Write the lane's counts back to the queue. */
void queue_lane_close(struct queue *q, struct queue_lane *ln);

/*
 * The lane's events from now on report path (of the same owner): a tree's
 * lane, whose records name its directories in any order. The path of the
 * entries taken so far is noted, as queue_lane_close's is.
 */
static inline void queue_lane_repath(struct queue_lane *ln, struct strref *path)
{
	if (path == ln->path)
		return;
	if (ln->n > ln->run0)
		queue_lane_hold(ln, ln->path);
	ln->path = path;
	ln->pstr = path_str(path);
	ln->seed = key_seed_path(ln->oseed, path);
	ln->run0 = ln->n;
}

/* Whether the array is full (a direct read stops there). */
static inline bool queue_lane_full(const struct queue_lane *ln)
{
	return ln->n >= ln->max;
}

/*
 * Push an event of the lane's owner and path, name lent (valid until the
 * read's strings are released), room the bytes readable at it (at least
 * namelen + 1, or 0 if unknown). False, having changed nothing, if the lane
 * cannot take it (an overflow or FSNW_IGNORED, a full array, the capacity
 * reached): close the lane and push it the usual way.
 */
static inline __attribute__((always_inline)) bool
queue_lane_push(struct queue_lane *ln, uint32_t mask, uint32_t cookie, const char *name,
		size_t namelen, size_t room)
{
	uint32_t dpos = 0, dnewest = NONE, hash = 0, i;
	struct fsnw_event *ev;
	struct dmeta *m;
	uint8_t f = name ? F_NAME : 0;

	/* An FSNW_IGNORED goes through queue_push_one, which notes it for the reap. */
	if ((mask & (FSNW_OVERFLOW | FSNW_IGNORED)) || namelen >= UINT16_MAX)
		return false;
	if (ln->merge) {
		if (is_barrier(mask, name))
			f |= F_BARRIER | F_KEYED;
		else if (!never_merged(mask, cookie))
			f |= F_MERGEABLE | F_KEYED;
	}
	if (f & F_KEYED) {
		hash = key_hash_seeded(ln->seed, name, namelen, room);
		dpos = dindex_find(ln->evs, ln->meta, ln->tab, ln->tmask, hash, ln->owner,
				   ln->pstr, name, namelen, &dnewest);
		if (f & F_MERGEABLE) {
			int budget = QUEUE_MERGE_SCAN;

			i = dindex_scan(ln->evs, ln->meta, dnewest, mask, &budget);
			if (i != NONE) {
				ln->evs[i].count++;
				ln->merged++;
				PROBE2(merge, ln->wid, mask);
				return true;
			}
		}
	}
	if (ln->n >= ln->limit)
		return false;
	i = ln->n++;
	ev = &ln->evs[i];
	ev->wid = ln->wid;
	ev->mask = mask;
	ev->cookie = cookie;
	ev->count = 1;
	ev->path = ln->pstr;
	ev->name = name;
	m = &ln->meta[i];
	m->owner = ln->owner;
	m->hash = hash;
	m->namelen = (uint16_t)namelen;
	m->flags = f;
	m->older = dnewest;
	m->tpos = NONE;
	if (f & F_KEYED) {
		m->tpos = dpos;
		ln->tab[dpos] = DTAB_ENTRY(hash, i);
	}
	return true;
}

#endif
