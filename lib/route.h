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

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "fsnwatch.h"
#include "kwatch.h"
#include "queue.h"

struct fsnw;
struct inotify_rec;

/* route_event results: bits, and above them the number of queue pushes made */
#define ROUTE_OVERFLOW 0x1u /* the kernel lost events: reconcile the table */
#define ROUTE_PUSHES_ONE 0x100u
#define ROUTE_PUSHES(r) ((r) / ROUTE_PUSHES_ONE)

/*
 * The lane: a run of inotify records that the engine copies straight into
 * a direct read's array (queue-lane.h) instead of routing each. route_event
 * opens it after an event for which all routing does is one push, and
 * closes it on every other event, so the lane never outlives what it
 * caches; route_lane_begin opens it before such an event, which takes it
 * too. Its life is one decode: it starts closed. Two kinds:
 *   plain (kw set)   one plain watch's records: its kernel watch's only
 *                    link is an active plain watch (not oneshot, no
 *                    fanotify tree about);
 *   tree (tree set)  the records of a walked tree's directories, each
 *                    checked by route_tree_lane_paths: a file's event in a
 *                    directory whose kernel watch has the tree's link only,
 *                    that tree_event would only report.
 */
struct route_lane {
	const struct kwatch *kw; /* plain: its kernel watch; NULL: closed, or tree */
	struct watch *tree;      /* tree: the tree watch; NULL: closed, or plain */
	struct qowner *owner;
	struct strref *path;     /* the first event's */
	uint32_t pass;           /* event bits kept: the watch's mask, ISDIR, UNMOUNT */
};

/* Route ev; lane: the decode's (route_event closes it, and may open it). */
unsigned route_event(struct fsnw *w, const struct kevent *ev, struct route_lane *lane);

/*
 * Open the lane at an inotify record (wd, mask, name) that is not routed
 * yet, where route_event would open it after routing the record: true if
 * the record's routing would only push it for the lane's watch, so that
 * it takes the lane too (the plain lane's or the tree lane's check still
 * decides). False: the lane stays closed and the record is routed.
 */
bool route_lane_begin(struct fsnw *w, int wd, uint32_t mask, const char *name,
		      struct route_lane *lane);

/*
 * The tree lane's check of n parsed inotify records: paths[i] is the path
 * to report recs[i] with if routing it would only push it for lane->tree,
 * as tree_event_deferred does; NULL if it must be routed (route_event).
 * A record whose wd has an answer kept (struct route_answers) takes it;
 * for the others the kernel watches, links, directories and paths are
 * read in stages, so that the misses of n records overlap instead of each
 * record's queueing behind the one before, and the answers found are
 * kept. The paths stand while nothing but lane pushes happens.
 */
#define ROUTE_LANE_LOOK 16
void route_tree_lane_paths(struct fsnw *w, const struct route_lane *lane,
			   const struct inotify_rec *recs, unsigned n, struct strref **paths);

/*
 * The tree lane's answers: the path route_tree_lane_paths found for a
 * wd's records, kept for the next records of that wd, so that an event
 * of a walked tree's directory costs a look at one entry instead of its
 * kernel watch, link and directory. An answer is of one tree (the last
 * lane's) and stands while kwatches.route_gen (kwatch.h) is what it was
 * when the answer was kept: every change of what the check reads moves it
 * on (a key's kernel watch, its links and their states, in kwatch.c; a
 * tree's directories, at the tree module's entry points, tree.h). The
 * record's own part of the check (its mask and name) is made each time.
 * Direct-mapped by wd, 16 bytes an entry, allocated by the first tree
 * lane: as many entries as kernel watches (a walked tree's wds are mostly
 * consecutive, so each directory then has an entry of its own), a power
 * of two from ROUTE_ANSWERS_MIN to ROUTE_ANSWERS_MAX; the table grows at
 * a reset once the kernel watches outnumber it.
 */
#define ROUTE_ANSWERS_MIN 64u
#define ROUTE_ANSWERS_MAX 8192u
struct route_answer {
	int wd;
	uint32_t gen;        /* route_gen's low half when it was kept */
	struct strref *path; /* the directory's, borrowed as tree_event_path's */
};
struct route_answers {
	struct route_answer *tab; /* NULL: none yet (or no memory: every record is checked) */
	const struct watch *tree; /* whose answers tab holds */
	uint32_t gen_hi;          /* route_gen's high half they are of (tab is cleared when it moves) */
	uint32_t mask;            /* entries - 1 */
};
_Static_assert(sizeof(struct route_answer) == 16, "four answers a cache line");

/* Free the answers (the handle closes). */
void route_fini(struct route_answers *a);

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
