/* SPDX-License-Identifier: MIT */
/*
 * The queue's insides, shared by queue.c (slots, the ring, the index, push,
 * pop, purge) and queue-direct.c (direct reads into the caller's array).
 * Nothing else includes this: the contract is queue.h.
 */
#ifndef FSNW_QUEUE_IMPL_H
#define FSNW_QUEUE_IMPL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "htab.h"
#include "queue.h"

#define NONE UINT32_MAX

/* Flags of a slot or a direct entry. */
#define F_NAME 0x1u      /* it has a name (maybe empty) */
#define F_MERGEABLE 0x2u /* a later equal event may merge into it */
#define F_BARRIER 0x4u   /* a create, delete or move of its name */
#define F_KEYED 0x8u     /* in its key's chain and an index */
#define F_DEAD 0x10u     /* a direct entry purged with its owner */

/* push flags besides QUEUE_FORCE */
#define PUSH_LENT_NAME 0x100u /* the name outlives the direct read: no copy */

struct slot;

/*
 * An event a direct read put in the caller's array, beside it: what the
 * array's entry (mask, path string, name) does not say already. 24 bytes.
 */
struct dmeta {
	struct qowner *owner;
	uint32_t hash;
	uint32_t older;      /* the next older entry of its key, or NONE */
	uint32_t tpos;       /* its key's place in the direct index, or NONE */
	uint16_t namelen;
	uint8_t flags;
};

/* Names of a direct read, kept until the release: blocks reused, never moved. */
struct ablock {
	struct ablock *next;
	size_t cap, used;
	char data[];
};

struct arena {
	struct ablock *head, *cur;
	struct ablock *big; /* one name each, freed at the reset */
};

struct direct {
	struct fsnw_event *evs; /* the caller's array */
	struct dmeta *meta;
	uint32_t *tab;          /* DTAB_ENTRY of the newest entry of each key; 0 free */
	uint32_t tmask;         /* this read's index size - 1 */
	uint32_t cap;           /* entries meta holds */
	uint32_t tcap;          /* entries tab holds: a power of two, at least 4 * cap */
	uint32_t max, n, live;
	/* The owner of every entry so far, unless mixed: the end then drops
	 * one count instead of walking the entries. */
	struct qowner *sole;
	bool mixed;
	bool ignored;           /* an entry is an FSNW_IGNORED (qdirect_add's) */
	/* A reference on each path the read's entries report, kept until the
	 * release: a run of entries with one path takes one, from the bottom
	 * (nheld). A lending lane's paths take none: they are noted from the
	 * top (held[max - 1 - i], i < nlent) until queue_keep_lent gives them
	 * one. Each note is of entries of its own: nheld + nlent <= n. */
	struct strref **held;
	uint32_t nheld;
	uint32_t nlent;
	bool on;
	bool lent;              /* the last direct read's strings are still lent */
	bool lend_names;        /* queue_direct_begin's */
	struct arena names;
};

struct queue {
	struct queue_deferred deferred; /* first: queue_defer reaches it inline */
	struct slot **chunk;
	void **chunk_raw;
	size_t nchunks;
	uint32_t *free; /* room for every slot */
	size_t nfree;
	uint32_t *ring; /* waiting slots in order; NONE where one was purged */
	size_t ringcap; /* a power of two */
	uint64_t head, tail;
	struct {
		uint64_t *e; /* (hash << 32) | (id + 1) of the newest slot of a key; 0 free */
		size_t mask;
		size_t count;
	} ix;
	uint32_t lent;  /* delivered slots, strings still lent to the caller */
	uint64_t waiting; /* live slots in the ring */
	bool overflow_pending; /* an FSNW_OVERFLOW stands at the tail */
	uint32_t overflow_count;
	bool merge;
	uint32_t capacity;
	struct direct d;
	struct queue_counters c;
};

/* Only an event that may merge, or stops merges, needs its key indexed. */
static inline bool is_barrier(uint32_t mask, const char *name)
{
	return name && (mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO));
}

static inline bool never_merged(uint32_t mask, uint32_t cookie)
{
	return cookie || (mask & (FSNW_IGNORED | FSNW_OVERFLOW | FSNW_UNMOUNT));
}

static inline uint8_t event_flags(const struct queue *q, const struct queue_pend *p)
{
	uint8_t f = p->name ? F_NAME : 0;

	if (!q->merge)
		return f;
	if (is_barrier(p->mask, p->name))
		return f | F_BARRIER | F_KEYED;
	if (!never_merged(p->mask, p->cookie))
		return f | F_MERGEABLE | F_KEYED;
	return f;
}

/* A key's hash in steps, so a run of one owner and path seeds it once, and
 * a lane of one owner (queue-lane.h) seeds each path from the owner's part. */
static inline uint64_t key_seed_owner(const struct qowner *owner)
{
	return (uint64_t)(uintptr_t)owner * 0x9e3779b97f4a7c15ULL;
}

static inline uint64_t key_seed_path(uint64_t owner_seed, const struct strref *path)
{
	/* Two independent multiplies seed it; one finaliser mixes it all. */
	return owner_seed ^ (uint64_t)(uintptr_t)path * 0xc2b2ae3d27d4eb4fULL;
}

static inline uint64_t key_seed(const struct qowner *owner, const struct strref *path)
{
	return key_seed_path(key_seed_owner(owner), path);
}

/* hash_load_short's words where 16 bytes are readable at the name (an
 * inotify record's name and its padding): two loads, the bytes past the
 * name masked off, whatever they hold. */
static inline void key_name_words_room(const unsigned char *s, size_t len, uint64_t *a,
				       uint64_t *b)
{
	uint64_t lo = hash_load64(s), hi = hash_load64(s + 8);

	*a = len >= 8 ? lo : lo & ((1ULL << (8 * len)) - 1);
	*b = len > 8 ? hi & (~0ULL >> (8 * (16 - len))) : 0;
}

/*
 * The name on top of the seed; room: bytes readable at the name, 0 if
 * unknown. A name of up to 16 bytes (most are) takes two words and one
 * multiply instead of hash_bytes' two: the seed has mixed owner and path
 * already, and the product's high half mixes every bit of both words,
 * which the fold brings down to the index's low bits. The length goes in
 * too, so that equal words still mean equal names.
 */
static inline __attribute__((always_inline)) uint32_t
key_hash_seeded(uint64_t seed, const char *name, size_t namelen, size_t room)
{
	const unsigned char *s = (const unsigned char *)name;
	uint64_t a, b, h;

	if (!name) {
		h = hash_u64(seed ^ 0x6e6f6e616d65ULL);
	} else if (namelen > 16) {
		h = hash_bytes(name, namelen, seed);
	} else {
		if (room >= 16)
			key_name_words_room(s, namelen, &a, &b);
		else
			hash_load_short(s, namelen, &a, &b);
		h = hash_mum(a ^ seed ^ 0xa0761d6478bd642fULL, b ^ namelen ^ 0xe7037ed1a0b428dbULL);
	}
	return (uint32_t)(h ^ (h >> 32));
}

static inline uint32_t key_hash(const struct queue_pend *p)
{
	return key_hash_seeded(key_seed(p->owner, p->path), p->name, p->namelen, 0);
}

static inline void note_depth(struct queue *q)
{
	q->c.depth = q->waiting + q->d.live + (q->overflow_pending ? 1 : 0);
	if (q->c.depth > q->c.high_water)
		q->c.high_water = q->c.depth;
}

/* An entry of owner joins the direct read's array. */
static inline void direct_note_owner(struct direct *d, struct qowner *owner)
{
	if (d->sole != owner) {
		d->mixed |= d->sole != NULL;
		d->sole = owner;
	}
}

/* ---- the direct index (queue-direct.c, queue-lane.h) ---- */

/*
 * A direct index entry: the entry's place + 1 in its low bits, the high
 * bits of its key's hash above, so a probe past another key rarely reads
 * that key's entry.
 */
#define DTAB_BITS 13
#define DTAB_SLOTS_MAX 8192
_Static_assert(DTAB_SLOTS_MAX >= 2 * QUEUE_DIRECT_MAX, "the index at most half full");
_Static_assert(QUEUE_DIRECT_MAX < (1u << DTAB_BITS), "a place + 1 fits DTAB_BITS");
#define DTAB_ENTRY(hash, i) (((hash) & ~((1u << DTAB_BITS) - 1)) | ((i) + 1))
#define DTAB_PLACE(e) (((e) & ((1u << DTAB_BITS) - 1)) - 1)

static inline const char *path_str(const struct strref *path)
{
	return path ? path->s : NULL;
}

/*
 * Whether entry i of the array is of the key (owner, path string, name). A
 * path is the same strref exactly when it is the same string in memory.
 */
static inline bool dmeta_is_key(const struct fsnw_event *evs, const struct dmeta *meta,
				uint32_t i, const struct qowner *owner, const char *pstr,
				const char *name, size_t namelen)
{
	const struct dmeta *m = &meta[i];

	if (m->owner != owner || evs[i].path != pstr || !(m->flags & F_NAME) != !name)
		return false;
	return !name || (m->namelen == namelen && !memcmp(evs[i].name, name, namelen));
}

/*
 * As index_find, in a direct index (tab, tmask) over the array (evs, meta):
 * the place of the key's entry, with *newest its newest live entry (or
 * NONE). A key whose entries were purged has none: a new entry takes its
 * place.
 */
static inline uint32_t dindex_find(const struct fsnw_event *evs, const struct dmeta *meta,
				   const uint32_t *tab, uint32_t tmask, uint32_t hash,
				   const struct qowner *owner, const char *pstr,
				   const char *name, size_t namelen, uint32_t *newest)
{
	uint32_t pos = hash & tmask, tag = DTAB_ENTRY(hash, 0) - 1;

	for (;; pos = (pos + 1) & tmask) {
		uint32_t e = tab[pos], i = DTAB_PLACE(e);

		if (!e)
			break;
		if ((e & ~((1u << DTAB_BITS) - 1)) == tag && meta[i].hash == hash &&
		    dmeta_is_key(evs, meta, i, owner, pstr, name, namelen)) {
			*newest = (meta[i].flags & F_DEAD) ? NONE : i;
			return pos;
		}
	}
	*newest = NONE;
	return pos;
}

static inline uint32_t direct_find(const struct direct *d, uint32_t hash,
				   const struct queue_pend *p, uint32_t *newest)
{
	return dindex_find(d->evs, d->meta, d->tab, d->tmask, hash, p->owner,
			   path_str(p->path), p->name, p->namelen, newest);
}

/* As scan_slots, from entry i of the array. */
static inline uint32_t dindex_scan(const struct fsnw_event *evs, const struct dmeta *meta,
				   uint32_t i, uint32_t mask, int *budget)
{
	while (i != NONE && *budget > 0) {
		const struct dmeta *m = &meta[i];

		(*budget)--;
		if (m->flags & F_BARRIER) {
			*budget = 0;
			return NONE;
		}
		if (evs[i].mask == mask && (m->flags & F_MERGEABLE))
			return i;
		i = m->older;
	}
	return NONE;
}

static inline uint32_t direct_scan(const struct direct *d, uint32_t i, uint32_t mask,
				   int *budget)
{
	return dindex_scan(d->evs, d->meta, i, mask, budget);
}

/* queue.c: one push, as queue_push; hashed: p->hash is the key's hash already. */
enum queue_result queue_push_one(struct queue *q, const struct queue_pend *p, unsigned flags,
				 bool hashed);

/* queue-direct.c */
/* A new entry in the array; -1 (nothing changed) if its name cannot be copied. */
int qdirect_add(struct queue *q, const struct queue_pend *p, uint8_t f, uint32_t hash,
		uint32_t dpos, uint32_t dnewest, unsigned flags);
size_t qdirect_purge(struct queue *q, struct qowner *owner);
void qdirect_release(struct queue *q);
void qdirect_fini(struct queue *q);

#endif
