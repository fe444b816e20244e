/* SPDX-License-Identifier: MIT */
/*
 * The queue's fast paths against the plain queue, differentially: one
 * stream of operations drives two queues. The plain one gets every event
 * through queue_push and every read through queue_pop. The fast one gets
 * the same events deferred (queue_defer, flushed when a batch fills or
 * anything else is called), or during a direct read through the queue's
 * lane for their owner, its path changed by queue_lane_repath as a tree's
 * lane changes it (queue_lane_push; one it refuses pushed the usual way
 * once the lane is closed), and its reads as the engine does
 * them: a direct read (queue_direct_begin, the events of a drain,
 * queue_direct_end, then queue_pop for what did not fit), its names lent
 * or copied. Both
 * must deliver the same events (wid, mask, cookie, count, path, name), in
 * the same order, and agree on every counter and every owner's count; what
 * the fast one delivered must read the same until it is released.
 *
 * The includer defines DIFF_CHECK(cond) and calls diff_run() with the
 * bytes that pick the operations.
 */
#ifndef FSNW_TEST_QUEUE_DIFF_H
#define FSNW_TEST_QUEUE_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "queue-lane.h"
#include "queue.h"
#include "strref.h"

#define DIFF_OWNERS 4
#define DIFF_PATHS 3
#define DIFF_MAX 48 /* the largest array a read passes */

/* Names of each way a key's hash loads them (queue-impl.h): none, empty,
 * up to three bytes, four to eight, nine to sixteen, longer; those of one
 * prefix differ past a word's end. */
static const char *const diff_names[] = {
	NULL, "a", "b", "c", "", "a-name-longer-than-the-inline-part-of-a-slot-0123456789-abcdefgh",
	"abcd", "abcdefg", "abcdefgh", "abcdefghi", "abcdefghijklmno", "abcdefghijklmnop",
};
#define DIFF_NNAMES (sizeof(diff_names) / sizeof(diff_names[0]))

static const uint32_t diff_masks[] = {
	FSNW_MODIFY, FSNW_ATTRIB, FSNW_OPEN, FSNW_CREATE, FSNW_DELETE, FSNW_MOVED_FROM,
	FSNW_MOVED_TO, FSNW_IGNORED, FSNW_UNMOUNT, FSNW_MODIFY | FSNW_ISDIR, FSNW_OVERFLOW,
};
#define DIFF_NMASKS (sizeof(diff_masks) / sizeof(diff_masks[0]))

struct diff_side {
	struct queue *q;
	struct qowner owners[DIFF_OWNERS];
};

struct diff {
	const uint8_t *p;
	size_t left;
	struct diff_side plain, fast;
	struct strref *paths[DIFF_PATHS];
	/* What the fast queue delivered last, with copies of its strings. */
	struct fsnw_event lent[2 * DIFF_MAX];
	char lent_path[2 * DIFF_MAX][16];
	char lent_name[2 * DIFF_MAX][80];
	size_t nlent;
	bool narrow;
	uint64_t reads, direct_reads, lane_pushes;
	/* The fast queue's lane, while open: nothing else touches that queue. */
	struct queue_lane lane;
	bool lane_open;
	bool in_direct; /* a direct read is on: the lane may open */
	/* The names as an inotify record holds them, padded past their NUL to
	 * a multiple of 16 bytes, the padding not NUL (the lane's hash must
	 * not rely on it): the lane takes these, their room given, or the
	 * names alone. */
	char padded[DIFF_NNAMES][96];
	size_t room[DIFF_NNAMES];
};

static void diff_lane_close(struct diff *d)
{
	if (!d->lane_open)
		return;
	queue_lane_close(d->fast.q, &d->lane);
	d->lane_open = false;
}

/* The fast side of an event through the lane of its owner and path; false:
 * refused, or no lane (the lane is closed then). */
static bool diff_lane_push(struct diff *d, struct qowner *owner, struct strref *path,
			   uint32_t mask, uint32_t cookie, const char *name, size_t len,
			   size_t room)
{
	/* A lane of one owner takes any path (a tree's lane, queue_lane_repath). */
	if (d->lane_open && d->lane.owner != owner)
		diff_lane_close(d);
	if (d->lane_open)
		queue_lane_repath(&d->lane, path);
	/* Odd owners' lanes lend their paths, as a tree's lane does. */
	if (!d->lane_open)
		d->lane_open = queue_lane_open(d->fast.q, owner, path,
					       (owner - d->fast.owners) & 1, &d->lane);
	if (d->lane_open && queue_lane_push(&d->lane, mask, cookie, name, len, room)) {
		d->lane_pushes++;
		return true;
	}
	diff_lane_close(d);
	return false;
}

static uint8_t diff_take(struct diff *d)
{
	if (!d->left)
		return 0;
	d->left--;
	return *d->p++;
}

/*
 * One event to both queues: plain pushed, fast deferred where it can be.
 * A narrow stream keeps to a few keys, so merges and barriers are common.
 */
static void diff_event(struct diff *d)
{
	uint8_t b0 = diff_take(d), b1 = diff_take(d), b2 = diff_take(d), b3 = diff_take(d);
	int owner = b0 % (d->narrow ? 2 : DIFF_OWNERS);
	int path = d->narrow ? 0 : (int)((b0 >> 2) % (DIFF_PATHS + 1)) - 1;
	/* A narrow stream's names: two short, two that take the second word. */
	static const size_t narrow_names[] = { 1, 2, 9, 11 };
	size_t ni = d->narrow ? narrow_names[b1 % 4u] : b1 % DIFF_NNAMES;
	const char *name = diff_names[ni];
	bool padded = name && (b3 & 0x40);
	uint32_t mask = diff_masks[b2 % DIFF_NMASKS];
	uint32_t cookie = (b3 & 0x3) == 0x3 ? (b3 >> 2 & 0x3) + 1 : 0;
	bool force = (b3 & 0x30) == 0x30;
	struct strref *ps = path < 0 ? NULL : d->paths[path];
	size_t len = name ? strlen(name) : 0;
	struct qowner *fo = (mask & FSNW_OVERFLOW) ? NULL : &d->fast.owners[owner];
	struct qowner *po = (mask & FSNW_OVERFLOW) ? NULL : &d->plain.owners[owner];

	(void)queue_push(d->plain.q, po, ps, mask, cookie, name, len, force ? QUEUE_FORCE : 0);
	/* The library defers, or takes through the lane, only what it routes:
	 * never a forced push. */
	if (!force && fo && d->in_direct && (b1 & 0x40) &&
	    diff_lane_push(d, fo, ps, mask, cookie, padded ? d->padded[ni] : name, len,
			   padded ? d->room[ni] : 0))
		return;
	diff_lane_close(d);
	if (force || !fo || (b3 & 0x80))
		(void)queue_push(d->fast.q, fo, ps, mask, cookie, name, len,
				 force ? QUEUE_FORCE : 0);
	else
		queue_defer(d->fast.q, fo, ps, mask, cookie, name, len);
}

static bool diff_same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void diff_check_counters(struct diff *d)
{
	const struct queue_counters *a, *b;

	diff_lane_close(d);
	queue_flush(d->fast.q);
	a = queue_counters(d->plain.q);
	b = queue_counters(d->fast.q);
	DIFF_CHECK(a->queued == b->queued);
	DIFF_CHECK(a->merged == b->merged);
	DIFF_CHECK(a->dropped_full == b->dropped_full);
	DIFF_CHECK(a->overflows == b->overflows);
	DIFF_CHECK(a->delivered == b->delivered);
	DIFF_CHECK(a->purged == b->purged);
	DIFF_CHECK(a->depth == b->depth);
	DIFF_CHECK(a->high_water == b->high_water);
	DIFF_CHECK(queue_depth(d->plain.q) == queue_depth(d->fast.q));
	for (int i = 0; i < DIFF_OWNERS; i++)
		DIFF_CHECK(d->plain.owners[i].queued == d->fast.owners[i].queued);
}

/* The fast queue's last delivery still reads as it did. */
static void diff_check_lent(const struct diff *d)
{
	for (size_t i = 0; i < d->nlent; i++) {
		const struct fsnw_event *e = &d->lent[i];

		DIFF_CHECK(!e->path || !strcmp(e->path, d->lent_path[i]));
		DIFF_CHECK(!e->name || !strcmp(e->name, d->lent_name[i]));
	}
}

/* Whether the fast queue references path once more than the stream does. */
static bool diff_kept(const struct diff *d, const char *path)
{
	for (int p = 0; p < DIFF_PATHS; p++)
		if (path == d->paths[p]->s)
			return d->paths[p]->refs >= 2;
	return true;
}

/*
 * The paths' owner is about to put some (queue_keep_lent): from then on
 * every path the fast queue's entries report, in the direct read so far
 * or delivered, is referenced by it.
 */
static void diff_keep_lent(struct diff *d)
{
	const struct direct *dr = &d->fast.q->d;

	queue_keep_lent(d->fast.q);
	for (uint32_t i = 0; dr->on && i < dr->n; i++)
		DIFF_CHECK(!dr->evs[i].path || diff_kept(d, dr->evs[i].path));
	for (size_t i = 0; i < d->nlent; i++)
		DIFF_CHECK(!d->lent[i].path || diff_kept(d, d->lent[i].path));
}

static void diff_release(struct diff *d)
{
	diff_check_lent(d);
	queue_release_delivered(d->plain.q);
	queue_release_delivered(d->fast.q);
	d->nlent = 0;
}

/*
 * A read of up to max events. The fast queue reads directly when it can:
 * the events of the "drain" (the next few operations) go into the array.
 */
static void diff_read(struct diff *d, size_t max)
{
	struct fsnw_event pe[DIFF_MAX], fe[DIFF_MAX];
	size_t np, nf = 0;
	int burst = diff_take(d) % 24;
	bool direct;

	/* The engine releases the last read's strings first. */
	diff_release(d);
	direct = queue_direct_begin(d->fast.q, fe, max);
	if (direct)
		queue_direct_lend(d->fast.q, diff_take(d) & 1);
	d->in_direct = direct;
	d->reads++;
	d->direct_reads += direct;
	for (int i = 0; i < burst; i++) {
		uint8_t op = diff_take(d);

		if (op < 0xf0) {
			diff_event(d);
			continue;
		}
		diff_lane_close(d);
		if (op < 0xf4) {
			int o = diff_take(d) % DIFF_OWNERS;

			DIFF_CHECK(queue_purge(d->plain.q, &d->plain.owners[o]) ==
				   queue_purge(d->fast.q, &d->fast.owners[o]));
		} else if (op < 0xf8) {
			queue_overflow(d->plain.q);
			queue_overflow(d->fast.q);
		} else if (op < 0xfc) {
			DIFF_CHECK(queue_direct_room(d->fast.q) <= max);
			queue_flush(d->fast.q);
		} else {
			diff_keep_lent(d);
			queue_flush(d->fast.q);
		}
	}
	diff_lane_close(d);
	d->in_direct = false;
	if (direct) {
		nf = queue_direct_end(d->fast.q);
		/* The engine reaps the array only when it says it holds one. */
		for (size_t i = 0; i < nf; i++)
			DIFF_CHECK(!(fe[i].mask & FSNW_IGNORED) || queue_direct_ignored(d->fast.q));
	}
	nf += queue_pop(d->fast.q, fe + nf, max - nf);
	np = queue_pop(d->plain.q, pe, max);
	DIFF_CHECK(nf == np);
	for (size_t i = 0; i < np; i++) {
		DIFF_CHECK(pe[i].wid == fe[i].wid);
		DIFF_CHECK(pe[i].mask == fe[i].mask);
		DIFF_CHECK(pe[i].cookie == fe[i].cookie);
		DIFF_CHECK(pe[i].count == fe[i].count);
		DIFF_CHECK(diff_same_str(pe[i].path, fe[i].path));
		DIFF_CHECK(diff_same_str(pe[i].name, fe[i].name));
		d->lent[i] = fe[i];
		if (fe[i].path)
			memcpy(d->lent_path[i], fe[i].path, strlen(fe[i].path) + 1);
		if (fe[i].name)
			memcpy(d->lent_name[i], fe[i].name, strlen(fe[i].name) + 1);
	}
	d->nlent = np;
	diff_check_counters(d);
}

/* Run the stream d->p[0 .. d->left) (d otherwise zeroed). */
static void diff_stream(struct diff *dp)
{
	static const char *const pnames[DIFF_PATHS] = { "/w", "/w/sub", "/other" };
	struct diff d = *dp;
	uint8_t cfg = diff_take(&d);
	uint32_t capacity;
	int merge = !(cfg & 0x10);

	d.narrow = cfg & 0x20;
	switch (cfg % 8) {
	case 0:
		capacity = FSNW_QUEUE_UNLIMITED;
		break;
	case 7:
		capacity = 0; /* the default */
		break;
	default:
		capacity = (cfg % 8) * 3;
		break;
	}
	d.plain.q = queue_new(capacity, merge);
	d.fast.q = queue_new(capacity, merge);
	DIFF_CHECK(d.plain.q && d.fast.q);
	for (int i = 0; i < DIFF_OWNERS; i++)
		d.plain.owners[i].wid = d.fast.owners[i].wid = i + 1;
	for (int i = 0; i < DIFF_PATHS; i++) {
		d.paths[i] = strref_new(pnames[i], strlen(pnames[i]));
		DIFF_CHECK(d.paths[i]);
	}
	for (size_t i = 0; i < DIFF_NNAMES; i++) {
		size_t len = diff_names[i] ? strlen(diff_names[i]) : 0;

		d.room[i] = (len + 16) / 16 * 16;
		DIFF_CHECK(d.room[i] <= sizeof(d.padded[i]));
		memset(d.padded[i], 0xa5, d.room[i]);
		if (diff_names[i])
			memcpy(d.padded[i], diff_names[i], len + 1);
	}
	while (d.left) {
		uint8_t op = diff_take(&d);

		if (op < 0xa0) {
			diff_event(&d);
		} else if (op < 0xe0) {
			diff_read(&d, (size_t)(diff_take(&d) % DIFF_MAX) + 1);
		} else if (op < 0xe8) {
			if (op & 1)
				diff_keep_lent(&d);
			diff_release(&d);
		} else if (op < 0xf0) {
			int o = diff_take(&d) % DIFF_OWNERS;

			DIFF_CHECK(queue_purge(d.plain.q, &d.plain.owners[o]) ==
				   queue_purge(d.fast.q, &d.fast.owners[o]));
		} else if (op < 0xf8) {
			queue_overflow(d.plain.q);
			queue_overflow(d.fast.q);
		} else {
			diff_check_counters(&d);
		}
	}
	/* Everything left comes out alike. */
	for (int guard = 0; queue_depth(d.plain.q) || queue_depth(d.fast.q); guard++) {
		DIFF_CHECK(guard < 100000);
		d.left = 0;
		diff_read(&d, DIFF_MAX);
	}
	diff_release(&d);
	diff_check_counters(&d);
	queue_free(d.plain.q);
	queue_free(d.fast.q);
	for (int i = 0; i < DIFF_PATHS; i++) {
		DIFF_CHECK(d.paths[i]->refs == 1);
		strref_put(d.paths[i]);
	}
	dp->reads = d.reads;
	dp->direct_reads = d.direct_reads;
	dp->lane_pushes = d.lane_pushes;
}

#endif
