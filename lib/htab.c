/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "compiler.h"
#include "mem.h"
#include "htab.h"

void htab_init(struct htab *t)
{
	t->buckets = NULL;
	t->nbuckets = 0;
	t->count = 0;
}

void htab_fini(struct htab *t)
{
	mem_free(t->buckets);
	htab_init(t);
}

FSNW_COLD static int htab_resize(struct htab *t, size_t nbuckets)
{
	struct hnode **nb;

	if (nbuckets > SIZE_MAX / sizeof(*nb))
		return -ENOMEM;
	nb = mem_zalloc(nbuckets * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct hnode *n = t->buckets[i], *next;

		for (; n; n = next) {
			size_t b = n->hash & (nbuckets - 1);

			next = n->next;
			n->next = nb[b];
			nb[b] = n;
		}
	}
	mem_free(t->buckets);
	t->buckets = nb;
	t->nbuckets = nbuckets;
	return 0;
}

int htab_reserve(struct htab *t, size_t more)
{
	size_t want = t->count + more, n = t->nbuckets ? t->nbuckets : 16;

	if (want < t->count)
		return -ENOMEM;
	/* Keep the load factor at or below one. */
	while (n < want) {
		if (n > SIZE_MAX / 2)
			return -ENOMEM;
		n *= 2;
	}
	if (n == t->nbuckets)
		return 0;
	return htab_resize(t, n);
}

void htab_insert(struct htab *t, struct hnode *n, uint64_t hash)
{
	size_t b = hash & (t->nbuckets - 1);

	n->hash = hash;
	n->next = t->buckets[b];
	t->buckets[b] = n;
	t->count++;
}

void htab_remove(struct htab *t, struct hnode *n)
{
	struct hnode **pp = &t->buckets[n->hash & (t->nbuckets - 1)];

	for (; *pp; pp = &(*pp)->next) {
		if (*pp == n) {
			*pp = n->next;
			n->next = NULL;
			t->count--;
			return;
		}
	}
}

struct hnode *htab_first(const struct htab *t, uint64_t hash)
{
	struct hnode *n;

	if (!t->nbuckets)
		return NULL;
	for (n = t->buckets[hash & (t->nbuckets - 1)]; n; n = n->next)
		if (n->hash == hash)
			return n;
	return NULL;
}

struct hnode *htab_next(const struct hnode *n, uint64_t hash)
{
	for (n = n->next; n; n = n->next)
		if (n->hash == hash)
			return (struct hnode *)n;
	return NULL;
}

void htab_for_each(const struct htab *t, void (*fn)(struct hnode *n, void *arg), void *arg)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct hnode *n = t->buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			fn(n, arg);
		}
	}
}
