/* SPDX-License-Identifier: MIT */
/*
 * Batched add and remove: one lock acquisition, the same dedup as single
 * calls (duplicates inside a batch included), per-item results, and for
 * FSNW_BATCH_ATOMIC an exact rollback of the kernel state.
 */
#include <errno.h>
#include <limits.h>

#include "export.h"
#include "handle.h"
#include "tree.h"

/* Take back a watch this batch added, leaving the kernel as it found it. */
static void undo_add(struct fsnw *w, int wid)
{
	struct watch *lw = watches_find(&w->watches, wid);
	struct list *pos, *tmp;

	if (!lw)
		return;
	if (lw->tree) {
		tree_undo(w, lw);
	} else {
		list_for_each_safe(pos, tmp, &lw->links)
			inodes_undo(w, list_entry(pos, struct link, wnode));
	}
	queue_purge(w->q, &lw->qo);
	watches_release(&w->watches, lw);
}

FSNW_EXPORT int fsnw_add_batch(struct fsnw *w, struct fsnw_batch_item *items, size_t n,
			       uint32_t batch_flags)
{
	bool atomic = batch_flags & FSNW_BATCH_ATOMIC;
	size_t i, failed = n;
	int ok = 0;

	if (!w || (!items && n) || n > INT_MAX || (batch_flags & ~FSNW_BATCH_ATOMIC))
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	/* Events that predate the batch are read once, before the first item
	 * that shares a kernel watch; later items need not drain again. */
	w->batch_depth++;
	w->batch_drained = false;
	for (i = 0; i < n; i++) {
		items[i].result = handle_add(w, items[i].path, items[i].mask, items[i].flags);
		if (items[i].result >= 0) {
			ok++;
		} else if (atomic) {
			failed = i;
			break;
		}
	}
	if (failed < n) {
		for (i = failed; i-- > 0;) {
			undo_add(w, items[i].result);
			items[i].result = -ECANCELED;
		}
		for (i = failed + 1; i < n; i++)
			items[i].result = -ECANCELED;
		ok = 0;
	}
	w->batch_depth--;
	handle_end_call(w);
	pthread_mutex_unlock(&w->lock);
	return ok;
}

FSNW_EXPORT int fsnw_remove_batch(struct fsnw *w, const int *wids, size_t n, int *results)
{
	int ok = 0;

	if (!w || (!wids && n) || n > INT_MAX)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	for (size_t i = 0; i < n; i++) {
		int ret = handle_remove(w, wids[i]);

		if (results)
			results[i] = ret;
		if (ret == 0)
			ok++;
	}
	handle_end_call(w);
	pthread_mutex_unlock(&w->lock);
	return ok;
}
