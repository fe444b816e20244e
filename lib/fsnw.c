/* SPDX-License-Identifier: MIT */
/*
 * The public entry points: validate, lock, call, unlock. The work is done
 * below: watches.c (add, remove), engine.c (reading), stats.c.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "handle.h"
#include "mem.h"
#include "stats.h"
#include "sys.h"

#define OPEN_FLAGS (FSNW_OPEN_NONBLOCK | FSNW_OPEN_NO_MERGE | FSNW_OPEN_NO_STATS | \
		    FSNW_OPEN_BIG_TREES | FSNW_OPEN_NO_RING)

static void lock(const struct fsnw *w)
{
	lock_take(&((struct fsnw *)w)->lock);
}

static void unlock(const struct fsnw *w)
{
	lock_give(&((struct fsnw *)w)->lock);
}

/*
 * AUTO gives the caller the best the kernel allows for what it asked. Only
 * inotify gives the whole event contract (FSNW_UNMOUNT, IN_EXCL_UNLINK,
 * events of subdirectories on their parent's watch, exact counts) at one
 * syscall a mark and without holding the filesystem busy; what fanotify
 * does better is trees, one filesystem mark instead of a mark a directory.
 * So AUTO takes fanotify when the caller says trees are what matter
 * (FSNW_OPEN_BIG_TREES) and the process may use it, and inotify otherwise.
 */
static int open_backend(struct fsnw *w, uint32_t which, uint32_t flags)
{
	switch (which) {
	case FSNW_BACKEND_INOTIFY:
		w->be = &inotify_backend;
		return w->be->init(w);
	case FSNW_BACKEND_FANOTIFY:
		w->be = &fanotify_backend;
		return w->be->init(w);
	default:
		if (flags & FSNW_OPEN_BIG_TREES) {
			w->be = &fanotify_backend;
			if (w->be->init(w) == 0)
				return 0;
		}
		w->be = &inotify_backend;
		return w->be->init(w);
	}
}

static int read_options(const struct fsnw_options *opts, struct fsnw_options *o)
{
	memset(o, 0, sizeof(*o));
	if (!opts)
		return 0;
	if (opts->size < offsetof(struct fsnw_options, flags))
		return -EINVAL;
	/* A newer caller may pass a larger struct; what we do not know of must be zero. */
	for (size_t i = sizeof(*o); i < opts->size; i++)
		if (((const unsigned char *)opts)[i])
			return -E2BIG;
	memcpy(o, opts, opts->size < sizeof(*o) ? opts->size : sizeof(*o));
	if (o->flags & ~OPEN_FLAGS)
		return -EINVAL;
	if (o->backend > FSNW_BACKEND_FANOTIFY)
		return -EINVAL;
	return 0;
}

struct fsnw *handle_alloc(const struct fsnw_options *o)
{
	struct fsnw *w = mem_zalloc(sizeof(*w));

	if (!w)
		return NULL;
	w->kfd = -1;
	w->open_flags = o->flags;
	w->st.size = sizeof(w->st);
	w->lock = (struct lock)LOCK_INIT;
	watches_init(&w->watches);
	kwatch_table_init(&w->kwatches, o->idle_watches);
	trees_init(&w->trees, o->tree_cache);
	w->q = queue_new(o->queue_capacity, !(o->flags & FSNW_OPEN_NO_MERGE));
	if (engine_init(w) < 0 || !w->q) {
		fsnw_close(w);
		return NULL;
	}
	stats_clock_init(w);
	return w;
}

FSNW_EXPORT int fsnw_open(struct fsnw **ret, const struct fsnw_options *opts)
{
	struct fsnw_options o;
	struct fsnw *w;
	int err;

	if (!ret)
		return -EINVAL;
	err = read_options(opts, &o);
	if (err < 0)
		return err;
	w = handle_alloc(&o);
	if (!w)
		return -ENOMEM;
	err = open_backend(w, o.backend, o.flags);
	if (err < 0)
		goto fail;
	w->st.backend = (uint32_t)w->be->id;
	err = engine_open(w);
	if (err < 0)
		goto fail;
	*ret = w;
	return 0;
fail:
	fsnw_close(w);
	return err;
}

FSNW_EXPORT void fsnw_close(struct fsnw *w)
{
	if (!w)
		return;
	/* Closing the group fd drops every kernel mark at once: no per-watch
	 * syscalls. Memory goes in an order where nothing points to freed
	 * data: queued events hold paths, links (kernel-watch table) hold
	 * paths and live inside plain watches, and walks and the fanotify
	 * trees' cache hold paths from the watches' pool, which must have
	 * them all back before it is freed. */
	queue_free(w->q);
	route_fini(&w->answers);
	kwatch_table_fini(&w->kwatches);
	trees_fini(&w->trees, &w->st);
	watches_fini(w);
	if (w->kfd >= 0) {
		w->be->fini(w);
		sys_close(&w->st.sys_other, w->kfd);
	}
	engine_fini(w);
	mem_free(w);
}

FSNW_EXPORT int fsnw_get_fd(const struct fsnw *w)
{
	struct fsnw *mw = (struct fsnw *)w; /* the lazy fd is not caller-visible state */
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = engine_get_fd(mw);
	unlock(w);
	return ret;
}

FSNW_EXPORT int fsnw_get_backend(const struct fsnw *w)
{
	return w ? w->be->id : -EINVAL;
}

FSNW_EXPORT int fsnw_add(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags)
{
	struct kmark_call mc;
	struct watch *lw;
	int ret;

	if (!w)
		return -EINVAL;
	ret = watches_check(path, &mask, &flags);
	if (ret < 0)
		return ret;
	/* The mark syscall is never made with the lock held: where it can be,
	 * it is made before the lock is taken rather than with it dropped. */
	watches_mark_early(w, path, mask, flags, &mc);
	lock(w);
	ret = watches_add(w, path, (size_t)ret, mask, flags, &mc, &lw);
	if (ret == 0) {
		engine_settle(w);
		ret = watches_finish_add(w, lw);
	}
	engine_end_call(w);
	unlock(w);
	return ret;
}

FSNW_EXPORT int fsnw_remove(struct fsnw *w, int wid)
{
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = watches_remove(w, wid);
	engine_end_call(w);
	unlock(w);
	return ret;
}

FSNW_EXPORT int fsnw_read(struct fsnw *w, struct fsnw_event *evs, size_t max, int timeout_ms)
{
	if (!w || !evs || !max)
		return -EINVAL;
	if (max > INT_MAX)
		max = INT_MAX;
	/* The engine takes the lock: it drops it to sleep. */
	return engine_read(w, evs, max, timeout_ms);
}

FSNW_EXPORT int fsnw_wake(struct fsnw *w)
{
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = engine_wake(w);
	unlock(w);
	return ret;
}

FSNW_EXPORT int fsnw_reserve(struct fsnw *w, size_t n)
{
	int ret;

	/* More watches than wids is no room anyone can use. */
	if (!w || n > INT_MAX)
		return -EINVAL;
	if (!n)
		return 0;
	lock(w);
	ret = watches_reserve(&w->watches, n);
	if (ret == 0)
		ret = kwatch_reserve(&w->kwatches, n, w->be->key_len);
	unlock(w);
	return ret;
}

FSNW_EXPORT int fsnw_pump(struct fsnw *w)
{
	size_t depth;
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = engine_drain(w, DRAIN_COMPLETE | DRAIN_TIMED);
	depth = queue_depth(w->q);
	engine_end_call(w);
	unlock(w);
	if (ret < 0)
		return ret;
	return depth > INT_MAX ? INT_MAX : (int)depth;
}

FSNW_EXPORT int fsnw_get_stats(const struct fsnw *w, struct fsnw_stats *st)
{
	struct fsnw_stats snap;
	size_t n;

	if (!w || !st)
		return -EINVAL;
	if (st->size < offsetof(struct fsnw_stats, logical_watches))
		return -EINVAL;
	lock(w);
	stats_snapshot(w, &snap);
	unlock(w);
	/* An older caller gets its prefix; a newer one learns, from size, how
	 * much this library knows how to fill. */
	n = st->size < sizeof(snap) ? st->size : sizeof(snap);
	snap.size = (uint32_t)n;
	memcpy(st, &snap, n);
	return 0;
}

FSNW_EXPORT int fsnw_stats_json(const struct fsnw *w, char *buf, size_t len)
{
	struct fsnw_stats snap;

	if (!w || (!buf && len))
		return -EINVAL;
	lock(w);
	stats_snapshot(w, &snap);
	unlock(w);
	return stats_format_json(&snap, buf, len);
}
