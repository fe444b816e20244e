/* SPDX-License-Identifier: MIT */
/*
 * Batched add and remove, public entry points like fsnw.c's: one lock
 * acquisition, the same dedup as single calls (duplicates inside a batch
 * included), per-item results, and for FSNW_BATCH_ATOMIC an exact rollback
 * of the kernel state. Events that predate the batch are read once, by the
 * one settle after every item is attached, not once per shared item.
 */
#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "export.h"
#include "handle.h"
#include "mem.h"

/* Items of a batch whose first mark calls are made together. */
#define EARLY_ITEMS 16

/* One item, its arguments checked (len, or why they are wrong). */
static int add_item(struct fsnw *w, struct fsnw_batch_item *it, int len, uint32_t mask,
		    uint32_t flags, struct kmark_call *mc, struct watch **added)
{
	int ret = len;

	if (ret > 0)
		ret = watches_add(w, it->path, (size_t)ret, mask, flags, mc, added);
	if (ret == 0)
		(*added)->in_batch = true;
	it->result = ret;
	return ret;
}

/*
 * An item failed after its early mark, which its add may have taken back
 * (a mark that made no kernel watch of ours is undone). A later item of the
 * group whose early call returned the same key (a hard link, the same path
 * twice) would link to a mark that is gone: it marks again, as it would
 * have one item at a time.
 */
static void stale_marks(struct fsnw *w, struct kmark_call *mc, size_t n, const struct kkey *key)
{
	for (size_t j = 0; j < n; j++)
		if (mc[j].made && mc[j].ret >= 0 && mc[j].key.len == key->len &&
		    !memcmp(mc[j].key.bytes, key->bytes, key->len))
			kwatch_mark_early_stale(w, &mc[j]);
}

/*
 * Up to EARLY_ITEMS items of a batch that does not stop at a failure:
 * their first mark calls are made with the lock dropped once for all of
 * them (watches_mark_early), not once each; each item then goes on as a
 * single add. Every item is tried, so the calls are those one at a time
 * would make.
 */
static void add_early(struct fsnw *w, struct fsnw_batch_item *items, size_t n,
		      struct watch **added)
{
	struct kmark_call mc[EARLY_ITEMS];
	uint32_t mask[EARLY_ITEMS], flags[EARLY_ITEMS];
	int len[EARLY_ITEMS];

	assert(n <= EARLY_ITEMS);
	for (size_t i = 0; i < n; i++) {
		mask[i] = items[i].mask;
		flags[i] = items[i].flags;
		len[i] = watches_check(items[i].path, &mask[i], &flags[i]);
		mc[i].made = false;
	}
	lock_give(&w->lock);
	for (size_t i = 0; i < n; i++)
		if (len[i] > 0)
			watches_mark_early(w, items[i].path, mask[i], flags[i], &mc[i]);
	lock_take(&w->lock);
	for (size_t i = 0; i < n; i++) {
		struct kkey key = mc[i].key;
		bool marked = mc[i].made && mc[i].ret >= 0;

		if (add_item(w, &items[i], len[i], mask[i], flags[i], &mc[i], &added[i]) < 0 &&
		    marked)
			stale_marks(w, mc + i + 1, n - i - 1, &key);
	}
}

/* Add every item; the first failure of an atomic batch stops it. Returns
 * the index of that failure, or n. */
static size_t add_items(struct fsnw *w, struct fsnw_batch_item *items, size_t n,
			struct watch **added, bool atomic)
{
	for (size_t i = 0; i < n; i++)
		added[i] = NULL;
	/* An atomic batch marks nothing after its failure: one at a time. */
	if (!atomic && watches_marks_early(w)) {
		for (size_t i = 0; i < n; i += EARLY_ITEMS)
			add_early(w, items + i, n - i < EARLY_ITEMS ? n - i : EARLY_ITEMS,
				  added + i);
		return n;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t mask = items[i].mask, flags = items[i].flags;
		int ret = watches_check(items[i].path, &mask, &flags);

		if (add_item(w, &items[i], ret, mask, flags, NULL, &added[i]) < 0 && atomic)
			return i;
	}
	return n;
}

FSNW_EXPORT int fsnw_add_batch(struct fsnw *w, struct fsnw_batch_item *items, size_t n,
			       uint32_t batch_flags)
{
	bool atomic = batch_flags & FSNW_BATCH_ATOMIC;
	struct watch *stack[64], **added = stack;
	size_t i, failed;
	int ok = 0;

	if (!w || (!items && n) || n > INT_MAX || (batch_flags & ~FSNW_BATCH_ATOMIC))
		return -EINVAL;
	if (n > sizeof(stack) / sizeof(stack[0])) {
		added = mem_alloc(n * sizeof(*added));
		if (!added)
			return -ENOMEM;
	}
	lock_take(&w->lock);
	kwatch_batch(true);
	failed = add_items(w, items, n, added, atomic);
	kwatch_batch(false);
	/* Items with pending links are settled by the batch's settle, which
	 * leaves those of batches still adding for their own. */
	if (w->kwatches.npending)
		for (i = 0; i < n; i++)
			if (added[i])
				added[i]->in_batch = false;
	engine_settle(w);
	/* An object that went during the add fails its item, and an atomic
	 * batch at that item, as if the add itself had failed there. */
	for (i = 0; i < failed; i++) {
		if (!added[i])
			continue;
		added[i]->in_batch = false;
		kwatch_release_held(w, added[i]);
		items[i].result = watches_finish_add(w, added[i]);
		if (items[i].result >= 0)
			continue;
		added[i] = NULL;
		if (atomic)
			failed = i;
	}
	if (failed < n) {
		/* Atomic: every item goes back, newest first so that a kernel
		 * watch an item revived is parked again by that item's undo,
		 * and only the failure says why. */
		for (i = n; i-- > 0;) {
			if (added[i])
				watches_undo(w, added[i]);
			if (i != failed)
				items[i].result = -ECANCELED;
		}
	} else {
		for (i = 0; i < n; i++)
			ok += items[i].result >= 0;
	}
	engine_end_call(w);
	lock_give(&w->lock);
	if (added != stack)
		mem_free(added);
	return ok;
}

FSNW_EXPORT int fsnw_remove_batch(struct fsnw *w, const int *wids, size_t n, int *results)
{
	int ok = 0;

	if (!w || (!wids && n) || n > INT_MAX)
		return -EINVAL;
	lock_take(&w->lock);
	for (size_t i = 0; i < n; i++) {
		int ret = watches_remove(w, wids[i]);

		if (results)
			results[i] = ret;
		if (ret == 0)
			ok++;
	}
	engine_end_call(w);
	lock_give(&w->lock);
	return ok;
}
