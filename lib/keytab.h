/* SPDX-License-Identifier: MIT */
/*
 * A table of record pointers by 32-bit tag: open addressing with linear
 * probing, each slot its tag and its pointer in 12 bytes. It serves the
 * lookups that follow a syscall (a wid on remove, a kernel watch's key
 * after a mark or with an event), whose table lines are seldom in cache: a
 * probe reads slots, five a cache line, and touches a record only where
 * its tag matches, and the pointer of a match is on the tag's line; a
 * chained table reads a bucket and then the records along its chain, each
 * on a line and a page of its own. Tags may collide (a key's hash): the caller checks
 * the record a matching tag points to. Inserting allocates only when the
 * table grows, which keytab_reserve does ahead of time, so an insert after
 * a successful reserve cannot fail. Removal shifts the entries after the
 * slot back, so a probe never meets a tombstone.
 */
#ifndef FSNW_KEYTAB_H
#define FSNW_KEYTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* A slot: tag 0 is empty; the pointer is unaligned (memcpy) so a slot is 12 bytes. */
struct keytab_slot {
	uint32_t tag;
	unsigned char val[sizeof(void *)];
};

struct keytab {
	struct keytab_slot *slots;
	size_t mask;    /* slots - 1: a power of two less one, or 0 before the first reserve */
	size_t count;
	unsigned shift; /* 32 - log2(slots): a tag's home is its Fibonacci hash's top bits */
};

void keytab_init(struct keytab *t);
void keytab_fini(struct keytab *t); /* the slots, not the records */
/* Whether `more` inserts fit: at most three quarters full, so that a miss
 * reads about eight slots. */
static inline int keytab_has_room(const struct keytab *t, size_t more)
{
	return t->slots && t->count + more >= t->count &&
	       t->count + more <= (t->mask + 1) / 4 * 3;
}

/* The slow path of keytab_reserve: a larger table. */
int keytab_grow(struct keytab *t, size_t more);

/* Room for `more` inserts; -ENOMEM leaves the table as it was. */
static inline int keytab_reserve(struct keytab *t, size_t more)
{
	return keytab_has_room(t, more) ? 0 : keytab_grow(t, more);
}
/* val not NULL; room reserved. A tag may be in the table more than once. */
void keytab_insert(struct keytab *t, uint32_t tag, void *val);
/* Take out the entry (tag, val), which must be in the table. */
void keytab_remove(struct keytab *t, uint32_t tag, const void *val);
/* Take out the entry at pos, where keytab_probe found it (no lookup again). */
void keytab_remove_at(struct keytab *t, size_t pos);
/* Visit every record; fn may free the record it is given (the table is
 * being torn down) but must not change the table. */
void keytab_for_each(const struct keytab *t, void (*fn)(void *val, void *arg), void *arg);

/* The tag of a 32-bit key or of the low half of a 64-bit hash: never 0. */
static inline uint32_t keytab_tag(uint64_t x)
{
	uint32_t tag = (uint32_t)x;

	return tag ? tag : 1;
}

/*
 * Tags in runs of KEYTAB_RUN consecutive values share one group of as many
 * slots: wids and inotify wds are handed out in order, and an add or remove
 * loop over them then reads its slots a line after another instead of a
 * line each. The group is the Fibonacci hash of the run, so strides keep
 * their spread: a stride that is a multiple of the run fills a slot of each
 * group it meets, and its probes are at most a run long.
 */
#define KEYTAB_RUN 8u

static inline size_t keytab_home(const struct keytab *t, uint32_t tag)
{
	uint32_t group = (uint32_t)((tag / KEYTAB_RUN) * 0x9e3779b9u) >> t->shift;

	return (size_t)((group & ~(KEYTAB_RUN - 1)) | (tag & (KEYTAB_RUN - 1))) & t->mask;
}

/*
 * The group of the run after tag's, fetched ahead: a loop over tags in
 * sequence meets it within a run. The hash spreads the runs, so that group
 * is a line the loop has not read since it last met that run, and in a
 * loop of adds (a syscall each) or over more tags than the cache holds, a
 * miss to memory; the fetch runs meanwhile. Where tags come in no order it
 * is a line read for nothing, which is all it costs.
 */
static inline void keytab_prefetch_next(const struct keytab *t, uint32_t tag)
{
	__builtin_prefetch(&t->slots[keytab_home(t, tag + KEYTAB_RUN)]);
}

/*
 * Walk the records of tag: start with *pos = keytab_start(t, tag), call
 * keytab_probe until it returns NULL (the run ended), moving *pos on by one
 * after each record that is not the one wanted.
 */
static inline size_t keytab_start(const struct keytab *t, uint32_t tag)
{
	if (!t->slots)
		return SIZE_MAX;
	keytab_prefetch_next(t, tag);
	return keytab_home(t, tag);
}

static inline void *keytab_val(const struct keytab_slot *s)
{
	void *v;

	memcpy(&v, s->val, sizeof(v));
	return v;
}

static inline void *keytab_probe(const struct keytab *t, uint32_t tag, size_t *pos)
{
	size_t i;

	if (*pos == SIZE_MAX)
		return NULL;
	for (i = *pos & t->mask; t->slots[i].tag; i = (i + 1) & t->mask) {
		if (t->slots[i].tag == tag) {
			*pos = i;
			return keytab_val(&t->slots[i]);
		}
	}
	return NULL;
}

#define keytab_for_each_tag(val, pos, t, tag) \
	for ((pos) = keytab_start((t), (tag)); ((val) = keytab_probe((t), (tag), &(pos))); \
	     (pos)++)

#endif
