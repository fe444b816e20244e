/* SPDX-License-Identifier: MIT */
/*
 * An intrusive chained hash table keyed by a 64-bit hash. The caller embeds a
 * struct hnode, computes the hash, and compares full keys itself while
 * walking a chain: this serves wids and inotify wds (the key is the number)
 * and fanotify file handles (the key is a hash of the bytes) alike.
 * Inserting allocates only when the table grows, and growth is done ahead
 * of time by htab_reserve() so that an insert after a successful reserve
 * cannot fail.
 */
#ifndef FSNW_HTAB_H
#define FSNW_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct hnode {
	struct hnode *next;
	uint64_t hash;
};

struct htab {
	struct hnode **buckets;
	size_t nbuckets; /* a power of two, or 0 before the first reserve */
	size_t count;
};

void htab_init(struct htab *t);
void htab_fini(struct htab *t); /* frees the bucket array, not the nodes */
/* Make room for `more` inserts; -ENOMEM leaves the table as it was. */
int htab_reserve(struct htab *t, size_t more);
void htab_insert(struct htab *t, struct hnode *n, uint64_t hash);
void htab_remove(struct htab *t, struct hnode *n);

/* The first node of the chain that holds `hash`; walk on with htab_next. */
struct hnode *htab_first(const struct htab *t, uint64_t hash);
struct hnode *htab_next(const struct hnode *n, uint64_t hash);

#define htab_for_each_hash(pos, t, h) \
	for ((pos) = htab_first((t), (h)); (pos); (pos) = htab_next((pos), (h)))

/* Visit every node; fn may free the node it is given (the table is being
 * torn down) but must not otherwise change the table. */
void htab_for_each(const struct htab *t, void (*fn)(struct hnode *n, void *arg), void *arg);

static inline uint64_t hash_u64(uint64_t x)
{
	/* splitmix64's finaliser: cheap and mixes every input bit. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

uint64_t hash_bytes(const void *p, size_t len, uint64_t seed);

#endif
