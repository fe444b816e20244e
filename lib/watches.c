/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "compiler.h"
#include "handle.h"
#include "mem.h"
#include "probes.h"
#include "stats.h"
#include "tree.h"
#include "watches.h"

/* Watch flags that inotify users may leave inside the mask. */
#define MASK_FLAGS (FSNW_WATCH_ONLYDIR | FSNW_WATCH_DONT_FOLLOW | FSNW_WATCH_EXCL_UNLINK | \
		    FSNW_WATCH_ONESHOT)
#define WATCH_FLAGS (MASK_FLAGS | FSNW_WATCH_TREE | FSNW_WATCH_ONE_FS)

int watches_check(const char *path, uint32_t *mask, uint32_t *flags)
{
	size_t len;

	if (!path)
		return -EINVAL;
	if (!*path)
		return -ENOENT;
	len = strnlen(path, PATH_MAX);
	if (len >= PATH_MAX)
		return -ENAMETOOLONG;
	*flags |= *mask & MASK_FLAGS;
	*mask &= ~MASK_FLAGS;
	if (!*mask || (*mask & ~FSNW_ALL_EVENTS))
		return -EINVAL;
	if (*flags & ~WATCH_FLAGS)
		return -EINVAL;
	if ((*flags & FSNW_WATCH_ONE_FS) && !(*flags & FSNW_WATCH_TREE))
		return -EINVAL;
	if ((*flags & FSNW_WATCH_TREE) && (*flags & FSNW_WATCH_ONESHOT))
		return -EINVAL;
	return (int)len;
}

void watches_init(struct watches *t)
{
	memset(t, 0, sizeof(*t));
	keytab_init(&t->by_wid);
	mem_cache_init(&t->cache, sizeof(struct watch));
	strpool_init(&t->paths);
	t->next_wid = 1;
}

static void free_watch(struct watches *t, struct watch *lw)
{
	strref_put(lw->path);
	mem_cache_free(&t->cache, lw);
}

static void fini_watch(void *val, void *arg)
{
	struct watch *lw = val;

	tree_free(lw);
	free_watch(arg, lw);
}

void watches_fini(struct fsnw *w)
{
	struct watches *t = &w->watches;

	keytab_for_each(&t->by_wid, fini_watch, t);
	keytab_fini(&t->by_wid);
	mem_cache_fini(&t->cache);
	/* Queued events hold paths: the queue is freed first (fsnw_close). */
	strpool_fini(&t->paths);
}

/* The watch of wid and its slot in the wid table. */
static struct watch *find_at(const struct watches *t, int wid, size_t *at)
{
	struct watch *lw;
	size_t pos;

	keytab_for_each_tag(lw, pos, &t->by_wid, keytab_tag((uint32_t)wid)) {
		if (lw->qo.wid == wid) {
			*at = pos;
			return lw;
		}
	}
	return NULL;
}

struct watch *watches_find(const struct watches *t, int wid)
{
	size_t pos;

	return find_at(t, wid, &pos);
}

size_t watches_count(const struct watches *t)
{
	return t->by_wid.count;
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

		if (wid == INT_MAX)
			t->wrapped = true;
		t->next_wid = wid == INT_MAX ? 1 : wid + 1;
		/* Before the first wrap every wid is new: no lookup. */
		if (likely(!t->wrapped) || !watches_find(t, wid))
			return wid;
	}
}

int watches_reserve(struct watches *t, size_t n)
{
	int ret = keytab_reserve(&t->by_wid, n);

	return ret < 0 ? ret : mem_cache_reserve(&t->cache, n);
}

static struct watch *watch_new(struct watches *t, const char *path, size_t len, uint32_t mask,
			       uint32_t flags)
{
	struct watch *lw;

	if (keytab_reserve(&t->by_wid, 1) < 0)
		return NULL;
	lw = mem_cache_zalloc(&t->cache, sizeof(struct watch));
	if (!lw)
		return NULL;
	lw->path = strref_new_in(&t->paths, path, len);
	if (!lw->path) {
		lw->path = NULL;
		free_watch(t, lw);
		return NULL;
	}
	lw->mask = mask;
	lw->flags = flags;
	lw->adding = true;
	lw->qo.wid = next_free_wid(t);
	keytab_insert(&t->by_wid, keytab_tag((uint32_t)lw->qo.wid), lw);
	return lw;
}

/* A wid table slot not known: looked up. */
#define NO_SLOT SIZE_MAX

/* Out of the table (from slot pos, where find_at found it, or looked up)
 * and freed: no links left, nothing queued. */
static void watch_release_at(struct fsnw *w, struct watch *lw, size_t pos)
{
	struct keytab *t = &w->watches.by_wid;

	assert(!lw->nlinks && !lw->tree && !lw->qo.queued);
	if (pos == NO_SLOT) {
		keytab_remove(t, keytab_tag((uint32_t)lw->qo.wid), lw);
	} else {
		assert(keytab_val(&t->slots[pos]) == lw);
		keytab_remove_at(t, pos);
	}
	free_watch(&w->watches, lw);
}

static void watch_release(struct fsnw *w, struct watch *lw)
{
	watch_release_at(w, lw, NO_SLOT);
}

static void detach_all(struct fsnw *w, struct watch *lw, bool park)
{
	if (lw->tree)
		tree_remove(w, lw, park);
	else if (lw->nlinks)
		kwatch_detach(w, &lw->own, park);
}

/* Detach a logical watch from the kernel, drop what it has queued, free it. */
static void remove_watch(struct fsnw *w, struct watch *lw, bool park, size_t pos)
{
	if (!lw->zombie)
		detach_all(w, lw, park);
	w->st.dropped_removed += queue_purge(w->q, &lw->qo);
	watch_release_at(w, lw, pos);
}

/*
 * A plain add marks first and allocates after: the kernel call then starts
 * the timed section, so one clock read serves both the add and the mark.
 */
static int add_plain(struct fsnw *w, const char *path, size_t len, uint32_t mask,
		     uint32_t flags, struct kmark_call *mc, struct watch **out)
{
	struct watch *lw;
	struct link *l;
	int ret;

	ret = kwatch_mark(w, AT_FDCWD, path, mask, flags, mc);
	if (unlikely(ret < 0))
		return ret;
	/* One clock read pair a call: the add is timed until its mark call
	 * returned (or, with no mark call, until now). The bookkeeping after
	 * it is well under a microsecond. */
	if (mc->t0)
		stats_end_at(w, LAT_ADD, mc->t0, mc->t1 ? mc->t1 : stats_ticks(w));
	lw = watch_new(&w->watches, path, len, mask, flags);
	if (unlikely(!lw)) {
		kwatch_unmark_new(w, &mc->key);
		return -ENOMEM;
	}
	ret = kwatch_link(w, lw, &mc->key, AT_FDCWD, path, mask, flags, &l);
	if (unlikely(ret < 0)) {
		watch_release(w, lw);
		return ret;
	}
	*out = lw;
	return 0;
}

FSNW_COLD static int add_tree(struct fsnw *w, const char *path, size_t len, uint32_t mask,
			      uint32_t flags, struct watch **out)
{
	struct watch *lw = watch_new(&w->watches, path, len, mask, flags);
	int ret;

	if (!lw)
		return -ENOMEM;
	ret = tree_add(w, lw);
	if (ret < 0) {
		/* Nothing can have been queued for it: its links were
		 * undone, and no drain ran since they were made. */
		watch_release(w, lw);
		return ret;
	}
	*out = lw;
	return 0;
}

void watches_mark_early(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags,
			struct kmark_call *mc)
{
	kwatch_mark_early(w, path, mask, flags, mc);
}

bool watches_marks_early(const struct fsnw *w)
{
	return kwatch_marks_early(w);
}

int watches_add(struct fsnw *w, const char *path, size_t len, uint32_t mask, uint32_t flags,
		struct kmark_call *early, struct watch **out)
{
	struct kmark_call now;
	int ret;

	w->st.add_calls++;
	if (!early || !early->made) {
		now.made = false;
		now.t0 = stats_start(w);
		early = &now;
	}
	if (flags & FSNW_WATCH_TREE) {
		ret = add_tree(w, path, len, mask, flags, out);
		if (ret == 0)
			stats_end(w, LAT_ADD, early->t0);
	} else {
		ret = add_plain(w, path, len, mask, flags, early, out);
	}
	if (ret < 0)
		return ret;
	PROBE3(add, (*out)->qo.wid, mask, flags);
	return 0;
}

int watches_finish_add(struct fsnw *w, struct watch *lw)
{
	int err = lw->tree ? tree_add_result(lw) : 0;
	int wid = lw->qo.wid;

	lw->adding = false;
	if (err < 0) {
		/* The tree's walk failed after its first step: what the drains
		 * since queued for it goes with it. */
		watches_undo(w, lw);
		return err;
	}
	if (lw->add_failed) {
		/* Its object went while it was being added: its links are
		 * detached, and what it heard is dropped. */
		remove_watch(w, lw, false, NO_SLOT);
		return -ENOENT;
	}
	/* A oneshot that fired during its add, whose FSNW_IGNORED a reader
	 * took already: the wid is released as that read would have. */
	if (lw->zombie && lw->qo.queued == 0)
		watch_release(w, lw);
	return wid;
}

int watches_remove(struct fsnw *w, int wid)
{
	uint64_t t0 = stats_start(w);
	struct watch *lw;
	size_t pos;

	if (wid <= 0)
		return -EINVAL;
	lw = find_at(&w->watches, wid, &pos);
	if (!lw || lw->adding)
		return -ENOENT;
	w->st.remove_calls++;
	/* A plain watch's detach changes no wid: its slot stays where the
	 * lookup found it. */
	remove_watch(w, lw, true, lw->tree ? NO_SLOT : pos);
	/* The unmark a last remove leaves to the flush is timed from here. */
	kwatch_flush_after(&w->kwatches, stats_end(w, LAT_REMOVE, t0));
	PROBE1(remove, wid);
	return 0;
}

void watches_undo(struct fsnw *w, struct watch *lw)
{
	if (lw->tree)
		tree_undo(w, lw);
	else if (lw->nlinks)
		kwatch_undo(w, &lw->own);
	queue_purge(w->q, &lw->qo);
	watch_release(w, lw);
}

FSNW_COLD static void watch_ends(struct fsnw *w, struct watch *lw)
{
	if (lw->zombie)
		return;
	detach_all(w, lw, true);
	lw->zombie = true;
	if (queue_push(w->q, &lw->qo, lw->path, FSNW_IGNORED, 0, NULL, 0, QUEUE_FORCE) ==
	    QUEUE_DROPPED && !lw->adding) {
		/* No memory for the slot: the overflow event stands for it, and
		 * the wid cannot wait for a read that will never come. */
		queue_purge(w->q, &lw->qo);
		watch_release(w, lw);
	}
}

void watches_dropped(struct fsnw *w, struct watch *lw)
{
	if (lw->adding) {
		lw->add_failed = true;
		detach_all(w, lw, false);
		return;
	}
	watch_ends(w, lw);
}

void watches_oneshot_fired(struct fsnw *w, struct watch *lw)
{
	watch_ends(w, lw);
}

void watches_reap(struct fsnw *w, const struct fsnw_event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct watch *lw;

		if (!(evs[i].mask & FSNW_IGNORED))
			continue;
		lw = watches_find(&w->watches, evs[i].wid);
		/* A watch still being added is its adder's to release. */
		if (lw && lw->zombie && lw->qo.queued == 0 && !lw->adding)
			watch_release(w, lw);
	}
}
