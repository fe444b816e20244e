/* SPDX-License-Identifier: MIT */
/*
 * Direct reads: while the queue is empty, a read lends it the caller's
 * event array, and the events of the drain go straight into it as if they
 * had been queued. The array is the head of the queue: it takes events
 * while nothing waits behind it, merges them through an index of its own
 * (small, so in cache), and counts against the capacity; what does not fit
 * waits in the ring after it, and merges into the array's events still
 * (queue_push_one looks in both). Names are lent (the engine keeps its read
 * buffer until the release) or copied into an arena of reused blocks.
 */
#include <string.h>

#include "mem.h"
#include "probes.h"
#include "queue-impl.h"
#include "queue-lane.h"

#define ARENA_BLOCK 16384

static void arena_reset(struct arena *a)
{
	struct ablock *b, *next;

	for (b = a->head; b; b = b->next)
		b->used = 0;
	a->cur = a->head;
	for (b = a->big; b; b = next) {
		next = b->next;
		mem_free(b);
	}
	a->big = NULL;
}

static void arena_fini(struct arena *a)
{
	struct ablock *b, *next;

	arena_reset(a);
	for (b = a->head; b; b = next) {
		next = b->next;
		mem_free(b);
	}
	a->head = a->cur = NULL;
}

static char *arena_alloc(struct arena *a, size_t len)
{
	struct ablock *b = a->cur;

	if (b && b->cap - b->used >= len)
		goto take;
	if (len > ARENA_BLOCK) {
		b = mem_alloc(sizeof(*b) + len);
		if (!b)
			return NULL;
		b->cap = b->used = len;
		b->next = a->big;
		a->big = b;
		return b->data;
	}
	if (b && b->next) {
		b = b->next; /* emptied by the last reset */
	} else {
		struct ablock *nb = mem_alloc(sizeof(*nb) + ARENA_BLOCK);

		if (!nb)
			return NULL;
		nb->cap = ARENA_BLOCK;
		nb->used = 0;
		nb->next = NULL;
		if (b)
			b->next = nb;
		else
			a->head = nb;
		b = nb;
	}
	a->cur = b;
take:
	b->used += len;
	return b->data + b->used - len;
}

/* ---- the direct index ---- */

/* ---- pushes ---- */

/* dpos, dnewest: direct_find's answer. */
int qdirect_add(struct queue *q, const struct queue_pend *p, uint8_t f, uint32_t hash,
		uint32_t dpos, uint32_t dnewest, unsigned flags)
{
	struct direct *d = &q->d;
	uint32_t i = d->n;
	struct fsnw_event *ev = &d->evs[i];
	struct dmeta *m = &d->meta[i];
	const char *name = p->name;

	if (p->name && !(flags & PUSH_LENT_NAME)) {
		char *copy = arena_alloc(&d->names, p->namelen + 1);

		if (!copy)
			return -1;
		memcpy(copy, p->name, p->namelen);
		copy[p->namelen] = '\0';
		name = copy;
	}
	ev->wid = p->owner ? p->owner->wid : 0;
	ev->mask = p->mask;
	ev->cookie = p->cookie;
	ev->count = 1;
	ev->path = path_str(p->path);
	ev->name = name;
	m->owner = p->owner;
	if (!d->nheld || d->held[d->nheld - 1] != p->path)
		d->held[d->nheld++] = strref_get(p->path);
	m->hash = hash;
	m->namelen = (uint16_t)p->namelen;
	m->flags = f;
	m->older = m->tpos = NONE;
	if (f & F_KEYED) {
		m->older = dnewest;
		m->tpos = dpos;
		d->tab[dpos] = DTAB_ENTRY(hash, i);
	}
	direct_note_owner(d, p->owner);
	d->ignored |= (p->mask & FSNW_IGNORED) != 0;
	d->n++;
	d->live++;
	return 0;
}

/* ---- the lane (queue-lane.h) ---- */

bool queue_lane_open(struct queue *q, struct qowner *owner, struct strref *path, bool lend,
		     struct queue_lane *ln)
{
	struct direct *d = &q->d;

	queue_flush(q);
	if (!d->on || q->waiting || q->overflow_pending || !d->lend_names || d->n >= d->max)
		return false;
	*ln = (struct queue_lane){
		.d = d,
		.evs = d->evs,
		.meta = d->meta,
		.tab = d->tab,
		.tmask = d->tmask,
		.n = d->n,
		.max = d->max,
		.limit = d->max,
		.n0 = d->n,
		.run0 = d->n,
		.owner = owner,
		.path = path,
		.pstr = path_str(path),
		.oseed = key_seed_owner(owner),
		.seed = key_seed(owner, path),
		.wid = owner->wid,
		.merge = q->merge,
		.lend = lend,
	};
	/* d->n counts purged entries too: past the capacity by it, queue_push_one decides. */
	if (q->capacity != FSNW_QUEUE_UNLIMITED && q->capacity < d->max)
		ln->limit = q->capacity;
	return true;
}

void queue_lane_close(struct queue *q, struct queue_lane *ln)
{
	struct direct *d = &q->d;
	uint32_t added = ln->n - ln->n0;

	if (added) {
		/* One note of the path covers every entry that reports it
		 * (queue_lane_repath made those of the paths before it). */
		if (ln->n > ln->run0)
			queue_lane_hold(ln, ln->path);
		direct_note_owner(d, ln->owner);
		ln->owner->queued += added;
		d->live += added;
		q->c.queued += added;
		if (d->live > q->c.high_water)
			q->c.high_water = d->live;
		q->c.depth = d->live;
	}
	d->n = ln->n;
	q->c.merged += ln->merged;
	ln->n0 = ln->run0 = ln->n;
	ln->merged = 0;
}

/* ---- a read ---- */

bool queue_direct_begin(struct queue *q, struct fsnw_event *evs, size_t max)
{
	struct direct *d = &q->d;
	uint32_t tsize;

	queue_flush(q);
	if (d->on || d->lent || q->waiting || q->overflow_pending || !max)
		return false;
	assert(!d->nheld && !d->nlent); /* released with the last read's strings */
	if (max > QUEUE_DIRECT_MAX)
		max = QUEUE_DIRECT_MAX;
	/* The index at most half full: the least power of two at or above
	 * 2 * max (within DTAB_SLOTS_MAX, as max is). Every event with a new
	 * name probes it at a random slot, and on a read of cold records
	 * (events spread over a tree, read after a sleep) each line it spans
	 * is a miss: a smaller index misses on fewer lines than a sparser one
	 * saves on probes. */
	tsize = max == 1 ? 2 : 2u << (32 - __builtin_clz((uint32_t)max - 1));
	if (max > d->cap) {
		struct dmeta *meta = mem_alloc(max * sizeof(*meta));
		struct strref **held = mem_alloc(max * sizeof(*held));
		uint32_t *tab = mem_zalloc(tsize * sizeof(*tab));

		if (!meta || !held || !tab) {
			mem_free(meta);
			mem_free(held);
			mem_free(tab);
			return false;
		}
		mem_free(d->meta);
		mem_free(d->held);
		mem_free(d->tab);
		d->meta = meta;
		d->held = held;
		d->tab = tab;
		d->cap = (uint32_t)max;
		d->tcap = tsize;
	}
	d->tmask = tsize - 1;
	d->evs = evs;
	d->lend_names = false;
	d->max = (uint32_t)max;
	d->n = d->live = 0;
	d->sole = NULL;
	d->mixed = false;
	d->ignored = false;
	d->on = true;
	return true;
}

bool queue_direct_ignored(const struct queue *q)
{
	return q->d.ignored;
}

void queue_direct_lend(struct queue *q, bool lend)
{
	q->d.lend_names = lend;
}

size_t queue_direct_room(const struct queue *q)
{
	const struct direct *d = &q->d;

	/* Each deferred push may take a place. */
	if (!d->on || q->waiting || d->n + q->deferred.n >= d->max)
		return 0;
	return d->max - d->n - q->deferred.n;
}

/* The direct index emptied for the next read: by entry when few were keyed. */
static void direct_clear_index(struct direct *d)
{
	if ((size_t)d->n * 16 >= (size_t)d->tmask + 1) {
		memset(d->tab, 0, ((size_t)d->tmask + 1) * sizeof(*d->tab));
		return;
	}
	for (uint32_t i = 0; i < d->n; i++)
		if (d->meta[i].tpos != NONE)
			d->tab[d->meta[i].tpos] = 0;
}

/* Each owner's count drops by its live entries: at once in the usual read
 * (one owner, nothing purged), else by runs of one owner. */
static void direct_drop_counts(struct direct *d)
{
	struct qowner *owner = NULL;
	uint32_t run = 0;

	if (!d->mixed && d->live == d->n) {
		if (d->sole)
			d->sole->queued -= d->n;
		return;
	}
	/* A run of dead entries only may name a watch removed during the read,
	 * whose record is gone: it is not touched. */
	for (uint32_t i = 0; i < d->n; i++) {
		const struct dmeta *m = &d->meta[i];

		if (m->owner != owner) {
			if (owner && run)
				owner->queued -= run;
			owner = m->owner;
			run = 0;
		}
		run += !(m->flags & F_DEAD);
	}
	if (owner && run)
		owner->queued -= run;
}

/* Purged entries leave holes: the rest move up (rare). Returns the entries left. */
static uint32_t direct_compact(struct direct *d)
{
	uint32_t j = 0;

	if (d->live == d->n)
		return d->n;
	for (uint32_t i = 0; i < d->n; i++) {
		if (d->meta[i].flags & F_DEAD)
			continue;
		if (i != j) {
			d->evs[j] = d->evs[i];
			d->meta[j] = d->meta[i];
		}
		j++;
	}
	return j;
}

size_t queue_direct_end(struct queue *q)
{
	struct direct *d = &q->d;
	uint32_t n;

	queue_flush(q);
	if (!d->on)
		return 0;
	direct_clear_index(d);
	direct_drop_counts(d);
	n = direct_compact(d);
	d->on = false;
	d->lent = true;
	d->n = d->live = 0;
	q->c.delivered += n;
	note_depth(q);
	return n;
}

size_t qdirect_purge(struct queue *q, struct qowner *owner)
{
	struct direct *d = &q->d;
	size_t n = 0;

	if (!d->on)
		return 0;
	for (uint32_t i = 0; i < d->n; i++) {
		struct dmeta *m = &d->meta[i];

		if ((m->flags & F_DEAD) || m->owner != owner)
			continue;
		m->flags |= F_DEAD;
		owner->queued--;
		d->live--;
		n++;
	}
	return n;
}

void queue_keep_lent(struct queue *q)
{
	struct direct *d = &q->d;
	uint32_t top = d->max - d->nlent;

	/* The notes move down in the order they lie, each to an index at or
	 * below its own (nheld <= top), so none is written over unread. */
	assert(d->nheld <= top);
	for (uint32_t i = 0; i < d->nlent; i++)
		d->held[d->nheld++] = strref_get(d->held[top + i]);
	d->nlent = 0;
}

void qdirect_release(struct queue *q)
{
	struct direct *d = &q->d;

	for (uint32_t i = 0; i < d->nheld; i++)
		strref_put(d->held[i]);
	d->nheld = d->nlent = 0;
	d->lent = false;
	arena_reset(&d->names);
}

void qdirect_fini(struct queue *q)
{
	qdirect_release(q);
	mem_free(q->d.meta);
	mem_free(q->d.held);
	mem_free(q->d.tab);
	arena_fini(&q->d.names);
}
