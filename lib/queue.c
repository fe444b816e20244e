/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "alloc.h"
#include "htab.h"
#include "list.h"
#include "queue.h"

#define SLOT_INLINE_NAME 40
#define SLOTS_PER_CHUNK 64

struct slot {
	struct list fifo;  /* queue order, or the free / delivered list */
	struct list chain; /* hash bucket, newest first */
	struct qowner *owner;
	struct strref *path;
	uint64_t hash;
	uint32_t mask;
	uint32_t cookie;
	uint32_t count;
	uint16_t namelen;
	uint16_t namecap; /* bytes at name, NUL included; heap when > inline */
	bool has_name;
	bool mergeable;
	bool barrier;
	char *name;
	char inl[SLOT_INLINE_NAME];
};

struct chunk {
	struct chunk *next;
	struct slot slots[SLOTS_PER_CHUNK];
};

struct queue {
	struct list fifo;      /* waiting events, oldest first */
	struct list free;      /* reusable slots */
	struct list delivered; /* popped, strings still lent to the caller */
	struct list buckets[QUEUE_BUCKETS];
	struct chunk *chunks;
	struct slot overflow;  /* reserved: raising an overflow never allocates */
	bool overflow_pending;
	bool merge;
	uint32_t capacity;
	uint64_t waiting;      /* slots in fifo, the overflow slot excluded */
	struct queue_counters c;
};

struct queue *queue_new(uint32_t capacity, int merge)
{
	struct queue *q = fsnw_calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	list_init(&q->fifo);
	list_init(&q->free);
	list_init(&q->delivered);
	for (int i = 0; i < QUEUE_BUCKETS; i++)
		list_init(&q->buckets[i]);
	list_init(&q->overflow.fifo);
	list_init(&q->overflow.chain);
	q->overflow.mask = FSNW_OVERFLOW;
	q->capacity = capacity ? capacity : FSNW_QUEUE_DEFAULT;
	q->merge = merge != 0;
	return q;
}

static void slot_clear(struct slot *s)
{
	strref_put(s->path);
	s->path = NULL;
	s->owner = NULL;
}

/* Owners are not touched: delivered slots have none, and at queue_free the
 * logical watches may already be gone. */
static void release_list(struct list *l, struct list *to)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, l) {
		struct slot *s = list_entry(pos, struct slot, fifo);

		list_del(pos);
		slot_clear(s);
		if (to)
			list_add(pos, to);
	}
}

void queue_free(struct queue *q)
{
	struct chunk *c, *next;

	if (!q)
		return;
	queue_release_delivered(q);
	if (q->overflow_pending)
		list_del(&q->overflow.fifo);
	release_list(&q->fifo, NULL);
	for (c = q->chunks; c; c = next) {
		next = c->next;
		for (int i = 0; i < SLOTS_PER_CHUNK; i++)
			if (c->slots[i].name != c->slots[i].inl)
				fsnw_free(c->slots[i].name);
		fsnw_free(c);
	}
	fsnw_free(q);
}

static struct slot *slot_get(struct queue *q)
{
	struct chunk *c;

	if (list_empty(&q->free)) {
		c = fsnw_malloc(sizeof(*c));
		if (!c)
			return NULL;
		c->next = q->chunks;
		q->chunks = c;
		for (int i = 0; i < SLOTS_PER_CHUNK; i++) {
			struct slot *s = &c->slots[i];

			memset(s, 0, offsetof(struct slot, inl));
			s->name = s->inl;
			s->namecap = SLOT_INLINE_NAME;
			list_init(&s->chain);
			list_add(&s->fifo, &q->free);
		}
	}
	struct slot *s = list_first(&q->free, struct slot, fifo);

	list_del(&s->fifo);
	return s;
}

static int slot_set_name(struct slot *s, const char *name, size_t namelen)
{
	s->has_name = name != NULL;
	if (!name) {
		s->namelen = 0;
		return 0;
	}
	if (namelen >= UINT16_MAX)
		return -1;
	if (namelen + 1 > s->namecap) {
		char *heap = s->name == s->inl ? NULL : s->name;
		char *n = fsnw_realloc(heap, namelen + 1);

		if (!n)
			return -1;
		s->name = n;
		s->namecap = (uint16_t)(namelen + 1);
	}
	memcpy(s->name, name, namelen);
	s->name[namelen] = '\0';
	s->namelen = (uint16_t)namelen;
	return 0;
}

/*
 * The merge key deliberately leaves the mask out of the hash: every event
 * about one (owner, path, name) lands in one bucket, so walking it newest
 * first meets the most recent barrier for that name before any older
 * candidate. Mask equality is then checked per entry.
 */
static uint64_t key_hash(const struct qowner *owner, const struct strref *path,
			 const char *name, size_t namelen)
{
	uint64_t h = hash_u64((uint64_t)(uintptr_t)owner ^ hash_u64((uint64_t)(uintptr_t)path));

	return name ? hash_bytes(name, namelen, h) : h;
}

static bool same_key(const struct slot *s, uint64_t hash, const struct qowner *owner,
		     const struct strref *path, const char *name, size_t namelen)
{
	if (s->hash != hash || s->owner != owner || s->path != path)
		return false;
	if (s->has_name != (name != NULL))
		return false;
	return !name || (s->namelen == namelen && memcmp(s->name, name, namelen) == 0);
}

static bool is_barrier(uint32_t mask, const char *name)
{
	return name && (mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO));
}

static bool never_merged(uint32_t mask, uint32_t cookie)
{
	return cookie || (mask & (FSNW_IGNORED | FSNW_OVERFLOW | FSNW_UNMOUNT));
}

static struct slot *find_merge(struct queue *q, struct list *bucket, uint64_t hash,
			       const struct qowner *owner, const struct strref *path,
			       uint32_t mask, const char *name, size_t namelen)
{
	struct list *pos;
	int scanned = 0;

	for (pos = bucket->next; pos != bucket && scanned < QUEUE_MERGE_SCAN;
	     pos = pos->next, scanned++) {
		struct slot *s = list_entry(pos, struct slot, chain);

		if (!same_key(s, hash, owner, path, name, namelen))
			continue;
		if (s->barrier)
			return NULL;
		if (s->mask == mask && s->mergeable)
			return s;
	}
	(void)q;
	return NULL;
}

static void note_depth(struct queue *q)
{
	q->c.depth = q->waiting + (q->overflow_pending ? 1 : 0);
	if (q->c.depth > q->c.high_water)
		q->c.high_water = q->c.depth;
}

static void raise_overflow(struct queue *q)
{
	if (q->overflow_pending) {
		q->overflow.count++;
		return;
	}
	q->overflow.count = 1;
	q->overflow_pending = true;
	list_add_tail(&q->overflow.fifo, &q->fifo);
	note_depth(q);
}

void queue_overflow(struct queue *q)
{
	raise_overflow(q);
}

enum queue_result queue_push(struct queue *q, struct qowner *owner, struct strref *path,
			     uint32_t mask, uint32_t cookie, const char *name, size_t namelen,
			     unsigned flags)
{
	bool force = flags & QUEUE_FORCE;
	bool mergeable = q->merge && !never_merged(mask, cookie);
	bool barrier = is_barrier(mask, name);
	uint64_t hash = 0;
	struct list *bucket = NULL;
	struct slot *s;

	if (mask & FSNW_OVERFLOW) {
		raise_overflow(q);
		return QUEUE_QUEUED;
	}
	if (q->merge) {
		hash = key_hash(owner, path, name, namelen);
		bucket = &q->buckets[hash % QUEUE_BUCKETS];
	}
	if (mergeable && !barrier) {
		s = find_merge(q, bucket, hash, owner, path, mask, name, namelen);
		if (s) {
			s->count++;
			q->c.merged++;
			return QUEUE_MERGED;
		}
	}
	if (!force && (q->overflow_pending ||
		       (q->capacity != FSNW_QUEUE_UNLIMITED && q->waiting >= q->capacity)))
		goto drop;
	s = slot_get(q);
	if (!s)
		goto drop;
	if (slot_set_name(s, name, namelen) < 0) {
		list_add(&s->fifo, &q->free);
		goto drop;
	}
	s->owner = owner;
	s->path = strref_get(path);
	s->hash = hash;
	s->mask = mask;
	s->cookie = cookie;
	s->count = 1;
	s->mergeable = mergeable && !barrier;
	s->barrier = barrier;
	/* A forced slot goes before a pending overflow, which stays the tail. */
	if (q->overflow_pending)
		list_add_tail(&s->fifo, &q->overflow.fifo);
	else
		list_add_tail(&s->fifo, &q->fifo);
	if (bucket)
		list_add(&s->chain, bucket);
	if (owner)
		owner->queued++;
	q->waiting++;
	q->c.queued++;
	note_depth(q);
	return QUEUE_QUEUED;
drop:
	q->c.dropped_full++;
	if (!q->overflow_pending)
		q->c.overflows++;
	raise_overflow(q);
	return QUEUE_DROPPED;
}

size_t queue_pop(struct queue *q, struct fsnw_event *evs, size_t max)
{
	size_t n = 0;

	while (n < max && !list_empty(&q->fifo)) {
		struct slot *s = list_first(&q->fifo, struct slot, fifo);
		struct fsnw_event *ev = &evs[n++];

		list_del(&s->fifo);
		ev->wid = s->owner ? s->owner->wid : 0;
		ev->mask = s->mask;
		ev->cookie = s->cookie;
		ev->count = s->count;
		ev->path = s->path ? s->path->s : NULL;
		ev->name = s->has_name ? s->name : NULL;
		if (s == &q->overflow) {
			q->overflow_pending = false;
			continue;
		}
		list_del(&s->chain);
		if (s->owner) {
			s->owner->queued--;
			s->owner = NULL;
		}
		q->waiting--;
		list_add_tail(&s->fifo, &q->delivered);
	}
	q->c.delivered += n;
	note_depth(q);
	return n;
}

void queue_release_delivered(struct queue *q)
{
	release_list(&q->delivered, &q->free);
}

size_t queue_purge(struct queue *q, struct qowner *owner)
{
	struct list *pos, *tmp;
	size_t n = 0;

	list_for_each_safe(pos, tmp, &q->fifo) {
		struct slot *s;

		if (!owner->queued)
			break;
		s = list_entry(pos, struct slot, fifo);
		if (s->owner != owner)
			continue;
		list_del(&s->fifo);
		list_del(&s->chain);
		owner->queued--;
		slot_clear(s);
		list_add(&s->fifo, &q->free);
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
