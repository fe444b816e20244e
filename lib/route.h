/* SPDX-License-Identifier: MIT */
/*
 * The router: a decoded kernel event goes to the logical watches it concerns
 * (through the kernel-watch table), into the queue, and to trees, which
 * follow their directories by it. It also carries out what the kernel says
 * by dropping a mark, and settles pending links after a complete drain. It
 * calls the modules below it (kwatch, watches, tree, queue); what the engine
 * must act on comes back as ROUTE_* bits.
 */
#ifndef FSNW_ROUTE_H
#define FSNW_ROUTE_H

#include <stdint.h>

#include "backend.h"
#include "fsnwatch.h"
#include "kwatch.h"
#include "queue.h"

struct fsnw;

/* route_event results: bits, and above them the number of queue pushes made */
#define ROUTE_OVERFLOW 0x1u /* the kernel lost events: reconcile the table */
#define ROUTE_PUSHES_ONE 0x100u
#define ROUTE_PUSHES(r) ((r) / ROUTE_PUSHES_ONE)

/*
 * The lane: while one decode runs, the kernel watch route_event last sent an
 * event to, when all it does with an event is defer one push for its single
 * logical watch (active, plain, not oneshot, no fanotify tree about). The
 * engine tries it first, inline; route_event closes it on every event it
 * handles, and opens it again only after one that changed nothing, so it
 * never outlives what it caches. Its life is one decode: it starts closed.
 */
struct route_lane {
	const struct kwatch *kw; /* NULL: closed */
	struct qowner *owner;
	struct strref *path;
	uint32_t pass;           /* event bits kept: the watch's mask, ISDIR, UNMOUNT */
	uint64_t *events_read;   /* the handle's counter */
};

/* Route ev; lane: the decode's (route_event closes it, and may open it). */
unsigned route_event(struct fsnw *w, const struct kevent *ev, struct route_lane *lane);

/* Whether ev is the lane's: route_event would hand it to the lane's watch alone. */
static inline bool route_lane_is(const struct route_lane *ln, const struct kevent *ev)
{
	return ln->kw && ev->key && !(ev->mask & (FSNW_IGNORED | FSNW_OVERFLOW)) &&
	       kwatch_key_is(ln->kw, ev->key, ev->keylen);
}

/*
 * ev through the lane, exactly as route_event would route it: the pushes
 * made (0 or 1), or -1 if it is not the lane's (then route_event must).
 */
static inline int route_lane_take(struct route_lane *ln, struct queue *q,
				  const struct kevent *ev)
{
	uint32_t mask;

	if (!route_lane_is(ln, ev))
		return -1;
	(*ln->events_read)++;
	mask = ev->mask & ln->pass;
	if (!(mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT)))
		return 0;
	queue_defer(q, ln->owner, ln->path, mask, ev->cookie, ev->name, ev->namelen);
	return 1;
}

/* After a kernel overflow: watches whose drop notice the full queue lost go now. */
void route_reconcile(struct fsnw *w);

/*
 * After a complete drain: every pending link goes live, or, if the kernel
 * dropped its watch meanwhile, is detached (a plain watch's add then fails,
 * a tree forgets the directory).
 */
void route_settle(struct fsnw *w);

/* After the trees' work: trees that lost their root end (FSNW_IGNORED). */
void route_end_trees(struct fsnw *w);

#endif
