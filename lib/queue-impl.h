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

/* An event a direct read put in the caller's array, beside it. */
struct dmeta {
	struct qowner *owner;
	struct strref *path; /* the read holds a reference (direct.held) */
	uint32_t hash;
	uint32_t mask;
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
	/* A reference on each path the read's entries report, kept until the
	 * release: a run of entries with one path takes one. */
	struct strref **held;
	uint32_t nheld;
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

static inline uint32_t key_hash(const struct queue_pend *p)
{
	/* Two independent multiplies seed it; one finaliser mixes it all. */
	uint64_t h = (uint64_t)(uintptr_t)p->owner * 0x9e3779b97f4a7c15ULL ^
		     (uint64_t)(uintptr_t)p->path * 0xc2b2ae3d27d4eb4fULL;

	h = p->name ? hash_bytes(p->name, p->namelen, h) : hash_u64(h ^ 0x6e6f6e616d65ULL);
	return (uint32_t)(h ^ (h >> 32));
}

static inline void note_depth(struct queue *q)
{
	q->c.depth = q->waiting + q->d.live + (q->overflow_pending ? 1 : 0);
	if (q->c.depth > q->c.high_water)
		q->c.high_water = q->c.depth;
}

/* queue.c: one push, as queue_push; hashed: p->hash is the key's hash already. */
enum queue_result queue_push_one(struct queue *q, const struct queue_pend *p, unsigned flags,
				 bool hashed);

/* queue-direct.c */
/* The direct index place of p's key, with *newest its newest live entry (or NONE). */
uint32_t qdirect_find(const struct direct *d, uint32_t hash, const struct queue_pend *p,
		      uint32_t *newest);
/* As scan_slots, from entry i of the array. */
uint32_t qdirect_scan(const struct direct *d, uint32_t i, uint32_t mask, int *budget);
/* A new entry in the array; -1 (nothing changed) if its name cannot be copied. */
int qdirect_add(struct queue *q, const struct queue_pend *p, uint8_t f, uint32_t hash,
		uint32_t dpos, uint32_t dnewest, unsigned flags);
/* The deferred pushes of a direct read (queue_flush's, which took them off). */
void qdirect_flush(struct queue *q, uint32_t n);
size_t qdirect_purge(struct queue *q, struct qowner *owner);
void qdirect_release(struct queue *q);
void qdirect_fini(struct queue *q);

#endif
