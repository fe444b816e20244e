/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <string.h>

#include "alloc.h"
#include "watches.h"

void watches_init(struct watches *t)
{
	htab_init(&t->by_wid);
	t->next_wid = 1;
}

static void free_watch(struct watch *lw)
{
	strref_put(lw->path);
	fsnw_free(lw);
}

void watches_fini(struct watches *t)
{
	for (size_t i = 0; i < t->by_wid.nbuckets; i++) {
		struct hnode *n = t->by_wid.buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			free_watch(container_of(n, struct watch, node));
		}
	}
	htab_fini(&t->by_wid);
}

int watches_reserve(struct watches *t, size_t n)
{
	return htab_reserve(&t->by_wid, n);
}

struct watch *watches_find(const struct watches *t, int wid)
{
	struct hnode *n;

	htab_for_each_hash(n, &t->by_wid, hash_u64((uint64_t)wid)) {
		struct watch *lw = container_of(n, struct watch, node);

		if (lw->qo.wid == wid)
			return lw;
	}
	return NULL;
}

/*
 * wids are handed out cyclically, like inotify's wds, so a caller holding a
 * stale wid meets -ENOENT rather than somebody else's watch for as long as
 * possible.
 */
static int next_free_wid(struct watches *t)
{
	for (;;) {
		int wid = t->next_wid;

		t->next_wid = wid == INT_MAX ? 1 : wid + 1;
		if (!watches_find(t, wid))
			return wid;
	}
}

struct watch *watches_new(struct watches *t, const char *path, uint32_t mask, uint32_t flags)
{
	struct watch *lw;

	if (htab_reserve(&t->by_wid, 1) < 0)
		return NULL;
	lw = fsnw_calloc(1, sizeof(*lw));
	if (!lw)
		return NULL;
	lw->path = strref_new(path, strlen(path));
	if (!lw->path) {
		fsnw_free(lw);
		return NULL;
	}
	lw->mask = mask;
	lw->flags = flags;
	list_init(&lw->links);
	lw->qo.wid = next_free_wid(t);
	htab_insert(&t->by_wid, &lw->node, hash_u64((uint64_t)lw->qo.wid));
	return lw;
}

void watches_release(struct watches *t, struct watch *lw)
{
	htab_remove(&t->by_wid, &lw->node);
	free_watch(lw);
}

size_t watches_count(const struct watches *t)
{
	return t->by_wid.count;
}

void watches_for_each(struct watches *t, void (*fn)(struct watch *lw, void *arg), void *arg)
{
	for (size_t i = 0; i < t->by_wid.nbuckets; i++) {
		struct hnode *n = t->by_wid.buckets[i], *next;

		for (; n; n = next) {
			next = n->next;
			fn(container_of(n, struct watch, node), arg);
		}
	}
}
