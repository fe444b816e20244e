/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "linq.h"

int linq_init(struct linq *q, size_t capacity)
{
	memset(q, 0, sizeof(*q));
	q->e = malloc(capacity * sizeof(*q->e));
	if (!q->e)
		return -ENOMEM;
	q->cap = capacity;
	return 0;
}

void linq_fini(struct linq *q)
{
	free(q->e);
	memset(q, 0, sizeof(*q));
}

/* FNV-1a over the name, mixed with the owner. */
static uint64_t key_hash(const void *owner, const char *name, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ (uint64_t)(uintptr_t)owner;

	for (size_t i = 0; i < len; i++) {
		h ^= (unsigned char)name[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

enum linq_result linq_push(struct linq *q, const void *owner, uint32_t mask, const char *name,
			   size_t namelen)
{
	uint64_t h;
	struct linq_entry *e;

	if (namelen > LINQ_NAME_MAX)
		namelen = LINQ_NAME_MAX;
	h = key_hash(owner, name, namelen);
	for (size_t i = q->n; i-- > 0;) {
		e = &q->e[i];
		if (e->hash == h && e->owner == owner && e->mask == mask &&
		    e->namelen == namelen && !memcmp(e->name, name, namelen)) {
			e->count++;
			q->merged++;
			return LINQ_MERGED;
		}
	}
	if (q->n == q->cap) {
		q->dropped++;
		q->overflow = true;
		return LINQ_DROPPED;
	}
	e = &q->e[q->n++];
	e->owner = owner;
	e->hash = h;
	e->mask = mask;
	e->count = 1;
	e->namelen = (uint16_t)namelen;
	memcpy(e->name, name, namelen);
	e->name[namelen] = '\0';
	q->queued++;
	return LINQ_QUEUED;
}
