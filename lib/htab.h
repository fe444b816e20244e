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
#include <string.h>

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

/*
 * The 64 x 64 -> 128-bit multiply folded to 64 bits (wyhash's "mum"): one
 * multiply mixes two words, where a multiply-xorshift chain needs several.
 */
static inline uint64_t hash_mum(uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
	__uint128_t r = (__uint128_t)a * b;

	return (uint64_t)r ^ (uint64_t)(r >> 64);
#else
	return hash_u64(a ^ hash_u64(b));
#endif
}

static inline uint64_t hash_load64(const unsigned char *s)
{
	uint64_t v;

	memcpy(&v, s, sizeof(v));
	return v;
}

static inline uint64_t hash_load32(const unsigned char *s)
{
	uint32_t v;

	memcpy(&v, s, sizeof(v));
	return v;
}

/*
 * Up to 16 bytes as two words, NUL-padded, in fixed-size loads that may
 * overlap (a memcpy of a variable length is a byte loop through the stack,
 * and a stall reading it back): the length must go into the hash as well,
 * so that equal words still mean equal bytes. NUL-padded, so that where
 * more bytes are readable two loads masked give the same words
 * (queue-impl.h's key_name_words_room).
 */
static inline void hash_load_short(const unsigned char *s, size_t len, uint64_t *a,
				   uint64_t *b)
{
	*b = 0;
	if (len > 8) {
		*a = hash_load64(s);
		*b = hash_load64(s + len - 8) >> (8 * (16 - len));
	} else if (len >= 4) {
		*a = hash_load32(s) | hash_load32(s + len - 4) << (8 * (len - 4));
	} else {
		*a = len ? (uint64_t)s[0] | (uint64_t)s[len / 2] << (8 * (len / 2)) |
				   (uint64_t)s[len - 1] << (8 * (len - 1)) :
			   0;
	}
}

/* Inline: it is on the path of every event. */
static inline uint64_t hash_bytes(const void *p, size_t len, uint64_t seed)
{
	const unsigned char *s = p;
	uint64_t a, b;

	/*
	 * Sixteen bytes a step, the tail in the loads of hash_load_short.
	 * Names and handles are short: most take one step.
	 */
	if (len <= 16) {
		hash_load_short(s, len, &a, &b);
	} else {
		size_t n = len;

		for (; n > 16; n -= 16, s += 16)
			seed = hash_mum(hash_load64(s) ^ 0xa0761d6478bd642fULL,
					hash_load64(s + 8) ^ seed);
		a = hash_load64(s + n - 16);
		b = hash_load64(s + n - 8);
	}
	return hash_mum(0xe7037ed1a0b428dbULL ^ len, hash_mum(a ^ 0xa0761d6478bd642fULL, b ^ seed));
}

#endif
