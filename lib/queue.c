/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "mem.h"
#include "htab.h"
#include "list.h"
#include "probes.h"
#include "queue.h"

#define KEY_INLINE_NAME 40
#define PER_CHUNK 64

/*
 * A merge key: (owner, reported path, name). It lists its unread events,
 * newest first, and keeps the name bytes they all share. It is in the index
 * while it has unread events, and lives on while delivered events still lend
 * its name to the caller.
 */
struct mkey {
	struct hnode node;
	struct list unread; /* struct slot.chain, newest first */
	struct list pool;   /* on the free list */
	struct qowner *owner;
	const struct strref *path; /* identity only; the slots hold the references */
	uint32_t refs;             /* slots, unread and delivered */
	bool indexed;
	bool has_name;
	uint16_t namelen;
	uint16_t namecap; /* bytes at name, NUL included; heap when > inline */
	char *name;
	char inl[KEY_INLINE_NAME];
};

struct slot {
	struct list fifo;  /* queue order, or the free / delivered list */
	struct list chain; /* in its key's unread list */
	struct mkey *key;  /* NULL for the overflow slot */
	struct qowner *owner;
	struct strref *path;
	uint32_t mask;
	uint32_t cookie;
	uint32_t count;
	bool mergeable;
	bool barrier;
};

struct slot_chunk {
	struct slot_chunk *next;
	struct slot slots[PER_CHUNK];
};

struct key_chunk {
	struct key_chunk *next;
	struct mkey keys[PER_CHUNK];
};

struct queue {
	struct list fifo;      /* waiting events, oldest first */
	struct list free;      /* reusable slots */
	struct list delivered; /* popped, strings still lent to the caller */
	struct list free_keys;
	struct htab index;     /* struct mkey with unread events, by key */
	struct slot_chunk *slot_chunks;
	struct key_chunk *key_chunks;
	struct slot overflow;  /* reserved: raising an overflow never allocates */
	bool overflow_pending;
	bool merge;
	uint32_t capacity;
	uint64_t waiting;      /* slots in fifo, the overflow slot excluded */
	struct queue_counters c;
};

struct queue *queue_new(uint32_t capacity, int merge)
{
	struct queue *q = mem_zalloc(sizeof(*q));

	if (!q)
		return NULL;
	list_init(&q->fifo);
	list_init(&q->free);
	list_init(&q->delivered);
	list_init(&q->free_keys);
	htab_init(&q->index);
	list_init(&q->overflow.fifo);
	list_init(&q->overflow.chain);
	q->overflow.mask = FSNW_OVERFLOW;
	q->capacity = capacity ? capacity : FSNW_QUEUE_DEFAULT;
	q->merge = merge != 0;
	return q;
}

static void key_put(struct queue *q, struct mkey *k)
{
	if (--k->refs)
		return;
	list_add(&k->pool, &q->free_keys);
}

/* The last unread event of a key left: later events start a new key. */
static void key_unindex(struct queue *q, struct mkey *k)
{
	if (k->indexed && list_empty(&k->unread)) {
		htab_remove(&q->index, &k->node);
		k->indexed = false;
	}
}

/* Give back what a slot holds; owners are the caller's business. */
static void slot_clear(struct queue *q, struct slot *s)
{
	strref_put(s->path);
	s->path = NULL;
	s->owner = NULL;
	if (s->key) {
		key_put(q, s->key);
		s->key = NULL;
	}
}

void queue_free(struct queue *q)
{
	struct slot_chunk *sc, *snext;
	struct key_chunk *kc, *knext;
	struct list *pos, *tmp;

	if (!q)
		return;
	if (q->overflow_pending)
		list_del(&q->overflow.fifo);
	list_for_each_safe(pos, tmp, &q->fifo)
		strref_put(list_entry(pos, struct slot, fifo)->path);
	list_for_each_safe(pos, tmp, &q->delivered)
		strref_put(list_entry(pos, struct slot, fifo)->path);
	for (sc = q->slot_chunks; sc; sc = snext) {
		snext = sc->next;
		mem_free(sc);
	}
	for (kc = q->key_chunks; kc; kc = knext) {
		knext = kc->next;
		for (int i = 0; i < PER_CHUNK; i++)
			if (kc->keys[i].name != kc->keys[i].inl)
				mem_free(kc->keys[i].name);
		mem_free(kc);
	}
	htab_fini(&q->index);
	mem_free(q);
}

static struct slot *slot_get(struct queue *q)
{
	struct slot *s;

	if (list_empty(&q->free)) {
		struct slot_chunk *c = mem_alloc(sizeof(*c));

		if (!c)
			return NULL;
		memset(c, 0, sizeof(*c));
		c->next = q->slot_chunks;
		q->slot_chunks = c;
		for (int i = 0; i < PER_CHUNK; i++) {
			list_init(&c->slots[i].chain);
			list_add(&c->slots[i].fifo, &q->free);
		}
	}
	s = list_first(&q->free, struct slot, fifo);
	list_del(&s->fifo);
	return s;
}

static struct mkey *key_get(struct queue *q)
{
	struct mkey *k;

	if (list_empty(&q->free_keys)) {
		struct key_chunk *c = mem_alloc(sizeof(*c));

		if (!c)
			return NULL;
		memset(c, 0, sizeof(*c));
		c->next = q->key_chunks;
		q->key_chunks = c;
		for (int i = 0; i < PER_CHUNK; i++) {
			c->keys[i].name = c->keys[i].inl;
			c->keys[i].namecap = KEY_INLINE_NAME;
			list_add(&c->keys[i].pool, &q->free_keys);
		}
	}
	k = list_first(&q->free_keys, struct mkey, pool);
	list_del(&k->pool);
	return k;
}

static int key_set_name(struct mkey *k, const char *name, size_t namelen)
{
	k->has_name = name != NULL;
	k->namelen = 0;
	if (!name)
		return 0;
	if (namelen >= UINT16_MAX)
		return -1;
	if (namelen + 1 > k->namecap) {
		char *heap = k->name == k->inl ? NULL : k->name;
		char *n = mem_realloc(heap, namelen + 1);

		if (!n)
			return -1;
		k->name = n;
		k->namecap = (uint16_t)(namelen + 1);
	}
	memcpy(k->name, name, namelen);
	k->name[namelen] = '\0';
	k->namelen = (uint16_t)namelen;
	return 0;
}

static uint64_t key_hash(const struct qowner *owner, const struct strref *path, const char *name,
			 size_t namelen)
{
	uint64_t h = hash_u64((uint64_t)(uintptr_t)owner ^ hash_u64((uint64_t)(uintptr_t)path));

	return name ? hash_bytes(name, namelen, h) : h;
}

static struct mkey *key_find(struct queue *q, uint64_t hash, const struct qowner *owner,
			     const struct strref *path, const char *name, size_t namelen)
{
	struct hnode *n;

	htab_for_each_hash(n, &q->index, hash) {
		struct mkey *k = container_of(n, struct mkey, node);

		if (k->owner != owner || k->path != path || k->has_name != (name != NULL))
			continue;
		if (!name || (k->namelen == namelen && !memcmp(k->name, name, namelen)))
			return k;
	}
	return NULL;
}

/* The key of an event: found in the index, or made and indexed. NULL on ENOMEM. */
static struct mkey *key_lookup(struct queue *q, struct qowner *owner, const struct strref *path,
			       const char *name, size_t namelen)
{
	uint64_t hash = key_hash(owner, path, name, namelen);
	struct mkey *k = key_find(q, hash, owner, path, name, namelen);

	if (k)
		return k;
	if (htab_reserve(&q->index, 1) < 0)
		return NULL;
	k = key_get(q);
	if (!k)
		return NULL;
	if (key_set_name(k, name, namelen) < 0) {
		list_add(&k->pool, &q->free_keys);
		return NULL;
	}
	k->owner = owner;
	k->path = path;
	k->refs = 0;
	list_init(&k->unread);
	k->indexed = true;
	htab_insert(&q->index, &k->node, hash);
	return k;
}

static bool is_barrier(uint32_t mask, const char *name)
{
	return name && (mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO));
}

static bool never_merged(uint32_t mask, uint32_t cookie)
{
	return cookie || (mask & (FSNW_IGNORED | FSNW_OVERFLOW | FSNW_UNMOUNT));
}

/*
 * The newest unread event of the key with this mask, unless a barrier (a
 * create, delete or move of the name) stands between: then none.
 */
static struct slot *find_merge(const struct mkey *k, uint32_t mask)
{
	const struct list *pos;
	int scanned = 0;

	for (pos = k->unread.next; pos != &k->unread && scanned < QUEUE_MERGE_SCAN;
	     pos = pos->next, scanned++) {
		struct slot *s = list_entry(pos, struct slot, chain);

		if (s->barrier)
			return NULL;
		if (s->mask == mask && s->mergeable)
			return s;
	}
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
	bool mergeable = q->merge && !never_merged(mask, cookie);
	bool barrier = is_barrier(mask, name);
	struct mkey *k;
	struct slot *s;

	if (mask & FSNW_OVERFLOW) {
		raise_overflow(q);
		return QUEUE_QUEUED;
	}
	k = key_lookup(q, owner, path, name, namelen);
	if (k && mergeable && !barrier) {
		s = find_merge(k, mask);
		if (s) {
			s->count++;
			q->c.merged++;
			return QUEUE_MERGED;
		}
	}
	if (!(flags & QUEUE_FORCE) &&
	    (q->overflow_pending ||
	     (q->capacity != FSNW_QUEUE_UNLIMITED && q->waiting >= q->capacity)))
		goto drop;
	if (!k)
		goto drop;
	s = slot_get(q);
	if (!s)
		goto drop;
	s->key = k;
	k->refs++;
	s->owner = owner;
	s->path = strref_get(path);
	s->mask = mask;
	s->cookie = cookie;
	s->count = 1;
	s->mergeable = mergeable && !barrier;
	s->barrier = barrier;
	list_add(&s->chain, &k->unread);
	/* A forced slot goes before a pending overflow, which stays the tail. */
	if (q->overflow_pending)
		list_add_tail(&s->fifo, &q->overflow.fifo);
	else
		list_add_tail(&s->fifo, &q->fifo);
	if (owner)
		owner->queued++;
	q->waiting++;
	q->c.queued++;
	note_depth(q);
	return QUEUE_QUEUED;
drop:
	if (k && !k->refs) {
		/* Made for this event, which is not kept. */
		htab_remove(&q->index, &k->node);
		k->indexed = false;
		list_add(&k->pool, &q->free_keys);
	}
	q->c.dropped_full++;
	if (!q->overflow_pending) {
		q->c.overflows++;
		PROBE1(overflow, 0);
	}
	raise_overflow(q);
	return QUEUE_DROPPED;
}

/* Take a slot out of the waiting part: fifo, its key's unread list, its owner. */
static void slot_unqueue(struct queue *q, struct slot *s)
{
	list_del(&s->fifo);
	list_del(&s->chain);
	key_unindex(q, s->key);
	if (s->owner)
		s->owner->queued--;
	q->waiting--;
}

size_t queue_pop(struct queue *q, struct fsnw_event *evs, size_t max)
{
	size_t n = 0;

	while (n < max && !list_empty(&q->fifo)) {
		struct slot *s = list_first(&q->fifo, struct slot, fifo);
		struct fsnw_event *ev = &evs[n++];

		ev->wid = s->owner ? s->owner->wid : 0;
		ev->mask = s->mask;
		ev->cookie = s->cookie;
		ev->count = s->count;
		ev->path = s->path ? s->path->s : NULL;
		ev->name = s->key && s->key->has_name ? s->key->name : NULL;
		if (s == &q->overflow) {
			list_del(&s->fifo);
			q->overflow_pending = false;
			continue;
		}
		slot_unqueue(q, s);
		s->owner = NULL;
		list_add_tail(&s->fifo, &q->delivered);
	}
	q->c.delivered += n;
	note_depth(q);
	return n;
}

void queue_release_delivered(struct queue *q)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &q->delivered) {
		struct slot *s = list_entry(pos, struct slot, fifo);

		list_del(pos);
		slot_clear(q, s);
		list_add(pos, &q->free);
	}
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
		slot_unqueue(q, s);
		slot_clear(q, s);
		list_add(&s->fifo, &q->free);
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
