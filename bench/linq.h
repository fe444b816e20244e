/* SPDX-License-Identifier: MIT */
/*
 * A plain linear-scan merging queue of bounded capacity: the fanotify
 * algorithm before Linux 5.13 (the fanotify merge series' "before"), written here as the baseline of
 * the merge scenario. Every new event is compared with every queued one,
 * newest first, until an equal one is found (same owner, mask and name) and
 * merged; otherwise it takes a slot, or is dropped and a single overflow
 * stands at the tail once the capacity is reached.
 *
 * It is kept as favourable to the baseline as is honest: entries are a
 * contiguous array (no pointer chasing) and each carries a 64-bit hash of
 * its key, so most comparisons are one integer compare.
 */
#ifndef FSNW_BENCH_LINQ_H
#define FSNW_BENCH_LINQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LINQ_NAME_MAX 47

struct linq_entry {
	const void *owner;
	uint64_t hash;
	uint32_t mask;
	uint32_t count;
	uint16_t namelen;
	char name[LINQ_NAME_MAX + 1];
};

struct linq {
	struct linq_entry *e;
	size_t n, cap;
	bool overflow;   /* an overflow stands at the tail */
	uint64_t queued, merged, dropped;
};

enum linq_result { LINQ_QUEUED, LINQ_MERGED, LINQ_DROPPED };

/* -ENOMEM, or 0. */
int linq_init(struct linq *q, size_t capacity);
void linq_fini(struct linq *q);
/* Names longer than LINQ_NAME_MAX are cut: the bench's names are short. */
enum linq_result linq_push(struct linq *q, const void *owner, uint32_t mask, const char *name,
			   size_t namelen);

#endif
