/* SPDX-License-Identifier: MIT */
/*
 * The layout is chosen for depth, where every random access is a miss:
 * - a slot is two cache lines, the first holding all a merge looks at (and
 *   a short name), so a merge into an event found through the index costs
 *   two lines: the index entry and the slot;
 * - slots live in fixed chunks (a delivered name must not move) and are
 *   named by 32-bit ids; the FIFO is a ring of ids, the index an
 *   open-addressing table of (hash, id) words, free slots a stack of ids.
 * Nothing on the push or pop path follows a chain of unknown length, so a
 * batch (queue_flush) can prefetch what each push will touch before it
 * does any of them.
 */
#include <assert.h>
#include <stdbool.h>
#include <string.h>

#include "mem.h"
#include "probes.h"
#include "queue-impl.h"

#define CHUNK_SHIFT 10
#define CHUNK_SLOTS (1u << CHUNK_SHIFT)
#define MAX_CHUNKS ((NONE >> CHUNK_SHIFT) - 1)
#define SLOT_BYTES 128
#define INLINE_NAME (SLOT_BYTES - 53)
#define INDEX_MIN 64
/* Pops prefetch the slot this far ahead, and its index entry half as far. */
#define POP_AHEAD 8

struct slot {
	uint32_t hash;
	uint32_t mask;
	struct qowner *owner;
	struct strref *path;
	char *heap;     /* buffer for a name too long for inl, kept for reuse */
	uint32_t cookie;
	uint32_t count;
	uint32_t older; /* the next older unread slot of its key; delivered: the next lent one */
	uint32_t newer; /* the next newer unread slot of its key */
	uint16_t namelen;
	uint16_t heapcap;
	uint8_t flags;
	char inl[INLINE_NAME]; /* its first 11 bytes share the first line */
};
_Static_assert(sizeof(struct slot) == SLOT_BYTES, "a slot is two cache lines");


static inline struct slot *slot_at(const struct queue *q, uint32_t id)
{
	return &q->chunk[id >> CHUNK_SHIFT][id & (CHUNK_SLOTS - 1)];
}

static inline char *slot_name(struct slot *s)
{
	return s->namelen + 1u > INLINE_NAME ? s->heap : s->inl;
}

static inline uint64_t ix_entry(uint32_t hash, uint32_t id)
{
	return ((uint64_t)hash << 32) | ((uint64_t)id + 1);
}

struct queue *queue_new(uint32_t capacity, int merge)
{
	struct queue *q = mem_zalloc(sizeof(*q));

	if (!q)
		return NULL;
	q->ix.e = mem_zalloc(INDEX_MIN * sizeof(*q->ix.e));
	if (!q->ix.e) {
		mem_free(q);
		return NULL;
	}
	q->ix.mask = INDEX_MIN - 1;
	q->lent = NONE;
	q->capacity = capacity ? capacity : FSNW_QUEUE_DEFAULT;
	q->merge = merge != 0;
	return q;
}

void queue_free(struct queue *q)
{
	if (!q)
		return;
	q->deferred.n = 0; /* deferred pushes hold nothing */
	queue_release_delivered(q);
	for (uint64_t i = q->head; i != q->tail; i++) {
		uint32_t id = q->ring[i & (q->ringcap - 1)];

		if (id != NONE)
			strref_put(slot_at(q, id)->path);
	}
	for (size_t c = 0; c < q->nchunks; c++) {
		for (uint32_t i = 0; i < CHUNK_SLOTS; i++)
			mem_free(q->chunk[c][i].heap);
		mem_free(q->chunk_raw[c]);
	}
	mem_free(q->chunk);
	mem_free(q->chunk_raw);
	mem_free(q->free);
	mem_free(q->ring);
	mem_free(q->ix.e);
	qdirect_fini(q);
	mem_free(q);
}

/* ---- slots ---- */

/* A chunk of fresh slots on the free stack, the lowest id on top. */
static int chunk_add(struct queue *q)
{
	size_t n = q->nchunks;
	struct slot **chunk;
	uint32_t *freeids;
	void **raw;
	void *mem;

	if (n >= MAX_CHUNKS)
		return -1;
	chunk = mem_realloc(q->chunk, (n + 1) * sizeof(*chunk));
	if (!chunk)
		return -1;
	q->chunk = chunk;
	raw = mem_realloc(q->chunk_raw, (n + 1) * sizeof(*raw));
	if (!raw)
		return -1;
	q->chunk_raw = raw;
	freeids = mem_realloc(q->free, (n + 1) * CHUNK_SLOTS * sizeof(*freeids));
	if (!freeids)
		return -1;
	q->free = freeids;
	/* Aligned to a line, so a slot's first line is a whole line. */
	mem = mem_zalloc(CHUNK_SLOTS * SLOT_BYTES + 63);
	if (!mem)
		return -1;
	raw[n] = mem;
	chunk[n] = (struct slot *)(((uintptr_t)mem + 63) & ~(uintptr_t)63);
	q->nchunks = n + 1;
	for (uint32_t i = CHUNK_SLOTS; i-- > 0;)
		q->free[q->nfree++] = (uint32_t)(n << CHUNK_SHIFT) + i;
	return 0;
}

static uint32_t slot_new(struct queue *q)
{
	if (!q->nfree && chunk_add(q) < 0)
		return NONE;
	return q->free[--q->nfree];
}

/* Give back what a slot holds; owners are the caller's business. */
static void slot_free(struct queue *q, uint32_t id)
{
	struct slot *s = slot_at(q, id);

	strref_put(s->path);
	s->path = NULL;
	s->owner = NULL;
	q->free[q->nfree++] = id;
}

static int slot_set_name(struct slot *s, const char *name, size_t len)
{
	char *dst = s->inl;

	s->namelen = 0;
	if (!name)
		return 0;
	if (len + 1 > INLINE_NAME) {
		if (s->heapcap < len + 1) {
			char *n = mem_realloc(s->heap, len + 1);

			if (!n)
				return -1;
			s->heap = n;
			s->heapcap = (uint16_t)(len + 1);
		}
		dst = s->heap;
	}
	memcpy(dst, name, len);
	dst[len] = '\0';
	s->namelen = (uint16_t)len;
	return 0;
}

/* ---- the ring ---- */

/* Room for one more id; purged holes are squeezed out when it is full. */
static int ring_reserve(struct queue *q)
{
	size_t used = (size_t)(q->tail - q->head), cap = q->ringcap ? q->ringcap : 64, j = 0;
	uint32_t *ring;

	if (used < q->ringcap)
		return 0;
	while (cap < 2 * (q->waiting + 1))
		cap *= 2;
	ring = mem_alloc(cap * sizeof(*ring));
	if (!ring)
		return -1;
	for (uint64_t i = q->head; i != q->tail; i++) {
		uint32_t id = q->ring[i & (q->ringcap - 1)];

		if (id != NONE)
			ring[j++] = id;
	}
	mem_free(q->ring);
	q->ring = ring;
	q->ringcap = cap;
	q->head = 0;
	q->tail = j;
	return 0;
}

/* ---- the index ---- */

static bool slot_is_key(struct slot *s, const struct queue_pend *p)
{
	if (s->owner != p->owner || s->path != p->path || !(s->flags & F_NAME) != !p->name)
		return false;
	return !p->name || (s->namelen == p->namelen && !memcmp(slot_name(s), p->name, p->namelen));
}

/*
 * The index place of p's key: where its entry is, with *newest its newest
 * slot, or the free place where it would go, with *newest NONE.
 */
static size_t index_find(const struct queue *q, uint32_t hash, const struct queue_pend *p,
			 uint32_t *newest)
{
	size_t m = q->ix.mask, pos = hash & m;

	for (;; pos = (pos + 1) & m) {
		uint64_t e = q->ix.e[pos];

		if (!e)
			break;
		if ((uint32_t)(e >> 32) == hash && slot_is_key(slot_at(q, (uint32_t)e - 1), p)) {
			*newest = (uint32_t)e - 1;
			return pos;
		}
	}
	*newest = NONE;
	return pos;
}

/* Room for `more` new keys at a load of at most one half: 1 if the table
 * grew (places found before are stale), 0, or -1 on ENOMEM. */
static int index_reserve(struct queue *q, size_t more)
{
	size_t cap = q->ix.mask + 1, ncap = cap, want = q->ix.count + more;
	uint64_t *e;

	while (want > ncap / 2) {
		if (ncap > SIZE_MAX / 2 / sizeof(*e))
			return -1;
		ncap *= 2;
	}
	if (ncap == cap)
		return 0;
	e = mem_zalloc(ncap * sizeof(*e));
	if (!e)
		return -1;
	for (size_t i = 0; i < cap; i++) {
		uint64_t v = q->ix.e[i];
		size_t pos;

		if (!v)
			continue;
		for (pos = (uint32_t)(v >> 32) & (ncap - 1); e[pos]; pos = (pos + 1) & (ncap - 1))
			;
		e[pos] = v;
	}
	mem_free(q->ix.e);
	q->ix.e = e;
	q->ix.mask = ncap - 1;
	return 1;
}

static size_t index_place_of(const struct queue *q, uint32_t hash, uint32_t id)
{
	uint64_t want = ix_entry(hash, id);
	size_t pos;

	for (pos = hash & q->ix.mask; q->ix.e[pos] != want; pos = (pos + 1) & q->ix.mask)
		;
	return pos;
}

/* Linear probing without tombstones: close the hole by moving back each
 * following entry whose probe path crosses it. */
static void index_delete_at(struct queue *q, size_t hole)
{
	size_t m = q->ix.mask, j = hole;

	for (;;) {
		uint64_t e;
		size_t home;

		j = (j + 1) & m;
		e = q->ix.e[j];
		if (!e)
			break;
		home = (uint32_t)(e >> 32) & m;
		if (((j - home) & m) >= ((j - hole) & m)) {
			q->ix.e[hole] = e;
			hole = j;
		}
	}
	q->ix.e[hole] = 0;
	q->ix.count--;
}

/* Take an unread slot out of its key's chain (and the index, if it was the last). */
static void unkey(struct queue *q, struct slot *s, uint32_t id)
{
	size_t pos;

	if (s->older != NONE)
		slot_at(q, s->older)->newer = s->newer;
	if (s->newer != NONE) {
		slot_at(q, s->newer)->older = s->older;
		return;
	}
	pos = index_place_of(q, s->hash, id);
	if (s->older != NONE)
		q->ix.e[pos] = ix_entry(s->hash, s->older);
	else
		index_delete_at(q, pos);
}

/* ---- push ---- */

/*
 * The newest unread event of the key with this mask, unless a barrier (a
 * create, delete or move of the name) stands between. Scans at most *budget
 * events, newest first, from `id` in the ring (direct_scan goes on in a
 * direct read's array, which holds older ones); *budget keeps what is left:
 * 0 after a barrier.
 */
static uint32_t scan_slots(const struct queue *q, uint32_t id, uint32_t mask, int *budget)
{
	while (id != NONE && *budget > 0) {
		const struct slot *s = slot_at(q, id);

		(*budget)--;
		if (s->flags & F_BARRIER) {
			*budget = 0;
			return NONE;
		}
		if (s->mask == mask && (s->flags & F_MERGEABLE))
			return id;
		id = s->older;
	}
	return NONE;
}

static void raise_overflow(struct queue *q)
{
	if (q->overflow_pending) {
		q->overflow_count++;
		return;
	}
	q->overflow_count = 1;
	q->overflow_pending = true;
	note_depth(q);
}

/* A new slot at the tail of the ring. pos and newest: the index place of its
 * key as index_find gave it (looked), before any growth. */
static int ring_add(struct queue *q, const struct queue_pend *p, uint8_t f, uint32_t hash,
		    size_t pos, uint32_t newest, bool looked)
{
	struct slot *s;
	uint32_t id;

	if (f & F_KEYED) {
		int grew = index_reserve(q, 1);

		if (grew < 0)
			return -1;
		if (grew || !looked)
			pos = index_find(q, hash, p, &newest);
	}
	if (ring_reserve(q) < 0)
		return -1;
	id = slot_new(q);
	if (id == NONE)
		return -1;
	s = slot_at(q, id);
	if (slot_set_name(s, p->name, p->namelen) < 0) {
		q->free[q->nfree++] = id;
		return -1;
	}
	s->hash = hash;
	s->mask = p->mask;
	s->owner = p->owner;
	s->path = strref_get(p->path);
	s->cookie = p->cookie;
	s->count = 1;
	s->flags = f;
	s->older = s->newer = NONE;
	if (f & F_KEYED) {
		if (newest != NONE) {
			s->older = newest;
			slot_at(q, newest)->newer = id;
		} else {
			q->ix.count++;
		}
		q->ix.e[pos] = ix_entry(hash, id);
	}
	q->ring[q->tail++ & (q->ringcap - 1)] = id;
	q->waiting++;
	return 0;
}

enum queue_result queue_push_one(struct queue *q, const struct queue_pend *p, unsigned flags,
				 bool hashed)
{
	struct direct *d = &q->d;
	uint8_t f = event_flags(q, p);
	uint32_t hash = 0, newest = NONE, dnewest = NONE, dpos = 0, id;
	size_t pos = 0;
	bool looked = false;

	if (p->mask & FSNW_OVERFLOW) {
		raise_overflow(q);
		return QUEUE_QUEUED;
	}
	if (f & F_KEYED) {
		int budget = QUEUE_MERGE_SCAN;

		hash = hashed ? p->hash : key_hash(p);
		/* The ring's events are newer than the direct read's. */
		if (q->waiting) {
			pos = index_find(q, hash, p, &newest);
			looked = true;
			if ((f & F_MERGEABLE) &&
			    (id = scan_slots(q, newest, p->mask, &budget)) != NONE) {
				slot_at(q, id)->count++;
				goto merged;
			}
		}
		if (d->on) {
			dpos = direct_find(d, hash, p, &dnewest);
			if ((f & F_MERGEABLE) &&
			    (id = direct_scan(d, dnewest, p->mask, &budget)) != NONE) {
				d->evs[id].count++;
				goto merged;
			}
		}
	}
	if (!(flags & QUEUE_FORCE) &&
	    (q->overflow_pending ||
	     (q->capacity != FSNW_QUEUE_UNLIMITED && q->waiting + d->live >= q->capacity)))
		goto drop;
	if (p->name && p->namelen >= UINT16_MAX)
		goto drop;
	/* The array takes events while nothing waits behind it: it stays the head. */
	if (d->on && !q->waiting && d->n < d->max) {
		if (qdirect_add(q, p, f, hash, dpos, dnewest, flags) < 0)
			goto drop;
	} else if (ring_add(q, p, f, hash, pos, newest, looked) < 0) {
		goto drop;
	}
	if (p->owner)
		p->owner->queued++;
	q->c.queued++;
	note_depth(q);
	return QUEUE_QUEUED;
merged:
	q->c.merged++;
	PROBE2(merge, p->owner ? p->owner->wid : 0, p->mask);
	return QUEUE_MERGED;
drop:
	q->c.dropped_full++;
	if (!q->overflow_pending) {
		q->c.overflows++;
		PROBE1(overflow, 0);
	}
	raise_overflow(q);
	return QUEUE_DROPPED;
}

enum queue_result queue_push(struct queue *q, struct qowner *owner, struct strref *path,
			     uint32_t mask, uint32_t cookie, const char *name, size_t namelen,
			     unsigned flags)
{
	struct queue_pend p = {
		.owner = owner, .path = path, .name = name, .namelen = namelen, .mask = mask,
		.cookie = cookie,
	};

	queue_flush(q);
	return queue_push_one(q, &p, flags, false);
}

/*
 * The deferred pushes in three passes: hash each and prefetch its index
 * line; read each line and prefetch the slot it names (a likely merge) or
 * the free slot it will take (a likely insert); then push each, in order,
 * exactly as queue_push would. The first two passes only guess: an insert
 * earlier in the batch may change what a later push finds, which the
 * third pass sees, at the cost of a miss. Into a direct read's array
 * (nothing waiting behind it) the pushes go at once: its index is small
 * and in cache, with nothing to prefetch.
 */
void queue_flush_batch(struct queue *q)
{
	uint32_t n = q->deferred.n;
	unsigned flags = q->d.on && q->d.lend_names ? PUSH_LENT_NAME : 0;
	bool hashed = false;
	size_t ahead = 0;

	assert(n);
	q->deferred.n = 0;
	if (!q->merge || (q->d.on && !q->waiting))
		goto push;
	hashed = true;
	(void)index_reserve(q, n); /* no growth inside the batch, where it can be helped */
	for (uint32_t i = 0; i < n; i++) {
		struct queue_pend *p = &q->deferred.p[i];

		p->hash = key_hash(p);
		__builtin_prefetch(&q->ix.e[p->hash & q->ix.mask]);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct queue_pend *p = &q->deferred.p[i];
		size_t pos = p->hash & q->ix.mask;
		uint64_t e;

		for (int probes = 0; (e = q->ix.e[pos]) && probes < 4; probes++) {
			if ((uint32_t)(e >> 32) == p->hash) {
				const char *s = (const char *)slot_at(q, (uint32_t)e - 1);

				__builtin_prefetch(s, 1);
				__builtin_prefetch(s + 64);
				goto next;
			}
			pos = (pos + 1) & q->ix.mask;
		}
		if (ahead < q->nfree)
			__builtin_prefetch(slot_at(q, q->free[q->nfree - 1 - ahead++]), 1);
next:;
	}
push:
	for (uint32_t i = 0; i < n; i++)
		(void)queue_push_one(q, &q->deferred.p[i], flags, hashed);
}

void queue_overflow(struct queue *q)
{
	queue_flush(q);
	raise_overflow(q);
}

/* ---- pop, purge ---- */

static void pop_prefetch(const struct queue *q)
{
	uint64_t far = q->head + POP_AHEAD, near = q->head + POP_AHEAD / 2;
	size_t m = q->ringcap - 1;

	if (far < q->tail && q->ring[far & m] != NONE)
		__builtin_prefetch(slot_at(q, q->ring[far & m]));
	if (near < q->tail && q->ring[near & m] != NONE) {
		const struct slot *s = slot_at(q, q->ring[near & m]);

		if ((s->flags & F_KEYED) && s->newer == NONE)
			__builtin_prefetch(&q->ix.e[s->hash & q->ix.mask], 1);
	}
}

size_t queue_pop(struct queue *q, struct fsnw_event *evs, size_t max)
{
	size_t n = 0;

	queue_flush(q);
	while (n < max && q->head != q->tail) {
		uint32_t id = q->ring[q->head++ & (q->ringcap - 1)];
		struct fsnw_event *ev;
		struct slot *s;

		if (id == NONE)
			continue;
		pop_prefetch(q);
		s = slot_at(q, id);
		ev = &evs[n++];
		ev->wid = s->owner ? s->owner->wid : 0;
		ev->mask = s->mask;
		ev->cookie = s->cookie;
		ev->count = s->count;
		ev->path = s->path ? s->path->s : NULL;
		ev->name = (s->flags & F_NAME) ? slot_name(s) : NULL;
		if (s->flags & F_KEYED)
			unkey(q, s, id);
		if (s->owner)
			s->owner->queued--;
		q->waiting--;
		s->older = q->lent;
		q->lent = id;
	}
	if (n < max && q->head == q->tail && q->overflow_pending) {
		struct fsnw_event *ev = &evs[n++];

		ev->wid = 0;
		ev->mask = FSNW_OVERFLOW;
		ev->cookie = 0;
		ev->count = q->overflow_count;
		ev->path = ev->name = NULL;
		q->overflow_pending = false;
	}
	q->c.delivered += n;
	note_depth(q);
	return n;
}

void queue_release_delivered(struct queue *q)
{
	queue_flush(q);
	while (q->lent != NONE) {
		uint32_t id = q->lent;

		q->lent = slot_at(q, id)->older;
		slot_free(q, id);
	}
	qdirect_release(q);
}

size_t queue_purge(struct queue *q, struct qowner *owner)
{
	size_t n;

	queue_flush(q);
	/* queued counts its events everywhere, a direct read's included: a
	 * watch removed with none waiting (the common case) costs nothing. */
	if (!owner->queued)
		return 0;
	n = qdirect_purge(q, owner);
	for (uint64_t i = q->head; i != q->tail && owner->queued; i++) {
		uint32_t *r = &q->ring[i & (q->ringcap - 1)];
		struct slot *s;

		if (*r == NONE)
			continue;
		s = slot_at(q, *r);
		if (s->owner != owner)
			continue;
		if (s->flags & F_KEYED)
			unkey(q, s, *r);
		slot_free(q, *r);
		*r = NONE;
		owner->queued--;
		q->waiting--;
		n++;
	}
	q->c.purged += n;
	note_depth(q);
	return n;
}

size_t queue_depth(const struct queue *q)
{
	return (size_t)q->c.depth;
}

const struct queue_counters *queue_counters(const struct queue *q)
{
	return &q->c;
}
