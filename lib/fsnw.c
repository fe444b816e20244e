/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "alloc.h"
#include "export.h"
#include "handle.h"
#include "probes.h"
#include "stats.h"
#include "tree.h"

#define OPEN_FLAGS (FSNW_OPEN_NONBLOCK | FSNW_OPEN_NO_MERGE | FSNW_OPEN_NO_STATS | \
		    FSNW_OPEN_BIG_TREES)
/* Watch flags that inotify users may leave inside the mask. */
#define MASK_FLAGS (FSNW_WATCH_ONLYDIR | FSNW_WATCH_DONT_FOLLOW | FSNW_WATCH_EXCL_UNLINK | \
		    FSNW_WATCH_ONESHOT)
#define WATCH_FLAGS (MASK_FLAGS | FSNW_WATCH_TREE | FSNW_WATCH_ONE_FS)
#define READ_BUF_SIZE (64 * 1024)
/* A bounded drain in fsnw_read: a writer storm must not keep a reader here. */
#define DRAIN_READS_MAX 8
/* Our own removes leave IN_IGNORED in the kernel queue; read them before
 * they could fill it for a caller that adds and removes but rarely reads. */
#define UNREAD_IGNORED_MAX 1024

static void lock(const struct fsnw *w)
{
	pthread_mutex_lock(&((struct fsnw *)w)->lock);
}

static void unlock(const struct fsnw *w)
{
	pthread_mutex_unlock(&((struct fsnw *)w)->lock);
}

ssize_t handle_read_group(struct fsnw *w, void *buf, size_t len)
{
	ssize_t n;

	do {
		n = read(w->kfd, buf, len);
		w->st.sys_read++;
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	return n;
}

static void dispatch_cb(void *arg, const struct kevent *ev)
{
	inodes_dispatch(arg, ev);
}

int handle_drain(struct fsnw *w, unsigned flags)
{
	int reads = 0;
	ssize_t n = 0;

	if (w->draining)
		return 0;
	w->draining = 1;
	for (;;) {
		uint64_t t0 = (flags & DRAIN_TIMED) ? stats_start(w) : 0;

		n = w->be->read(w, w->rbuf, w->rbuf_len, dispatch_cb, w);
		stats_end(w, &w->st.lat_kernel_read, t0);
		if (n <= 0)
			break;
		reads++;
		if ((size_t)n + w->be->max_record <= w->rbuf_len) {
			n = 0; /* a short read: the kernel queue was empty */
			break;
		}
		if (!(flags & DRAIN_COMPLETE) && reads >= DRAIN_READS_MAX)
			break;
	}
	if (n == 0)
		w->unread_ignored = 0;
	if (w->reconcile) {
		w->reconcile = false;
		inodes_reconcile(w);
	}
	w->draining = 0;
	PROBE2(read, reads, queue_depth(w->q));
	tree_process_pending(w);
	return n < 0 ? (int)n : reads;
}

/* Make the eventfd readable exactly while events wait in the queue. Only a
 * change of state costs a syscall. */
static void sync_ready(struct fsnw *w)
{
	bool want = queue_depth(w->q) > 0;
	uint64_t v = 1;

	if (want == w->ev_ready)
		return;
	if (want) {
		if (write(w->evfd, &v, sizeof(v)) == sizeof(v))
			w->ev_ready = true;
	} else {
		if (read(w->evfd, &v, sizeof(v)) == sizeof(v) || errno == EAGAIN)
			w->ev_ready = false;
	}
	w->st.sys_eventfd++;
}

static void detach_all(struct fsnw *w, struct watch *lw, bool park)
{
	struct list *pos, *tmp;

	if (lw->tree) {
		tree_remove(w, lw, park);
		return;
	}
	list_for_each_safe(pos, tmp, &lw->links)
		inodes_detach(w, list_entry(pos, struct link, wnode), park);
}

void handle_remove_watch(struct fsnw *w, struct watch *lw, bool park)
{
	if (!lw->zombie)
		detach_all(w, lw, park);
	w->st.dropped_removed += queue_purge(w->q, &lw->qo);
	watches_release(&w->watches, lw);
}

void handle_overflow(struct fsnw *w, enum overflow_source source)
{
	switch (source) {
	case OVERFLOW_KERNEL:
		w->st.overflows_kernel++;
		break;
	case OVERFLOW_UNWATCHED:
		w->st.overflows_unwatched++;
		break;
	}
	queue_overflow(w->q);
	PROBE1(overflow, (int)source);
}

void handle_watch_gone(struct fsnw *w, struct watch *lw)
{
	if (lw->zombie)
		return;
	detach_all(w, lw, true);
	lw->zombie = true;
	if (queue_push(w->q, &lw->qo, lw->path, FSNW_IGNORED, 0, NULL, 0, QUEUE_FORCE) ==
	    QUEUE_DROPPED) {
		/* No memory for the slot: the overflow event stands for it, and
		 * the wid cannot wait for a read that will never come. */
		queue_purge(w->q, &lw->qo);
		watches_release(&w->watches, lw);
	}
}

/* A popped FSNW_IGNORED releases its wid. */
static void reap_zombies(struct fsnw *w, const struct fsnw_event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct watch *lw;

		if (!(evs[i].mask & FSNW_IGNORED))
			continue;
		lw = watches_find(&w->watches, evs[i].wid);
		if (lw && lw->zombie && lw->qo.queued == 0)
			watches_release(&w->watches, lw);
	}
}

static void reap_unread_ignored(struct fsnw *w)
{
	if (w->unread_ignored >= UNREAD_IGNORED_MAX)
		handle_drain(w, 0);
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

static int open_evfd(struct fsnw *w)
{
	w->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->st.sys_other++;
	return w->evfd < 0 ? -errno : 0;
}

/*
 * The epoll fd is made on the first fsnw_get_fd: a group fd in an epoll set
 * runs epoll's wakeup for every event the kernel queues (our own IN_IGNORED
 * included), a cost a caller that never polls should not pay. fsnw_read
 * sleeps in poll() on the group fd and the eventfd, without it.
 */
static int make_epoll(struct fsnw *w)
{
	struct epoll_event ev = { .events = EPOLLIN };
	int fd = epoll_create1(EPOLL_CLOEXEC);

	w->st.sys_other++;
	if (fd < 0)
		return -errno;
	w->st.sys_other += 2;
	if (epoll_ctl(fd, EPOLL_CTL_ADD, w->kfd, &ev) < 0 ||
	    epoll_ctl(fd, EPOLL_CTL_ADD, w->evfd, &ev) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	w->epfd = fd;
	return 0;
}

struct fsnw *handle_alloc(const struct fsnw_options *o)
{
	struct fsnw *w = fsnw_calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->kfd = w->evfd = w->epfd = -1;
	w->open_flags = o->flags;
	w->st.size = sizeof(w->st);
	watches_init(&w->watches);
	inodes_init(&w->inodes, o->idle_watches);
	list_init(&w->tree_work);
	list_init(&w->tree_retry);
	pthread_mutex_init(&w->lock, NULL);
	w->rbuf_len = READ_BUF_SIZE;
	w->rbuf = fsnw_malloc(w->rbuf_len);
	w->q = queue_new(o->queue_capacity, !(o->flags & FSNW_OPEN_NO_MERGE));
	if (!w->rbuf || !w->q) {
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
	err = open_evfd(w);
	if (err < 0)
		goto fail;
	*ret = w;
	return 0;
fail:
	fsnw_close(w);
	return err;
}

static void close_watch(struct watch *lw, void *arg)
{
	if (!lw->zombie)
		detach_all(arg, lw, false);
}

FSNW_EXPORT void fsnw_close(struct fsnw *w)
{
	if (!w)
		return;
	/* Closing the group fd drops every kernel mark at once: no per-watch
	 * syscalls. Memory goes in an order where nothing points to freed data. */
	w->inodes.idle_max = 0;
	w->closing = true;
	watches_for_each(&w->watches, close_watch, w);
	queue_free(w->q);
	inodes_fini(&w->inodes);
	watches_fini(&w->watches);
	if (w->kfd >= 0)
		w->be->fini(w);
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->evfd >= 0)
		close(w->evfd);
	if (w->kfd >= 0)
		close(w->kfd);
	fsnw_free(w->rbuf);
	pthread_mutex_destroy(&w->lock);
	fsnw_free(w);
}

FSNW_EXPORT int fsnw_get_fd(const struct fsnw *w)
{
	struct fsnw *mw = (struct fsnw *)w; /* the lazy fd is not caller-visible state */
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = mw->epfd >= 0 ? 0 : make_epoll(mw);
	unlock(w);
	return ret < 0 ? ret : w->epfd;
}

FSNW_EXPORT int fsnw_get_backend(const struct fsnw *w)
{
	return w ? w->be->id : -EINVAL;
}

/* Validate and normalise an add; inotify flag bits may come inside the mask. */
static int check_add(const char *path, uint32_t *mask, uint32_t *flags)
{
	if (!path)
		return -EINVAL;
	if (!*path)
		return -ENOENT;
	if (strnlen(path, PATH_MAX) >= PATH_MAX)
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
	return 0;
}

/*
 * A plain add marks first and allocates after: the kernel call then starts
 * the timed section, so one clock read serves both the add and the mark.
 */
static int add_plain(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags,
		     uint64_t t0, struct watch **out)
{
	struct kkey key;
	struct watch *lw;
	struct link *l;
	int ret;

	ret = inodes_mark(w, AT_FDCWD, path, mask, flags, &key, t0);
	if (ret < 0)
		return ret;
	lw = watches_new(&w->watches, path, mask, flags);
	if (!lw) {
		inodes_unmark_new(w, &key);
		return -ENOMEM;
	}
	ret = inodes_link(w, lw, &key, AT_FDCWD, path, mask, flags, lw->path, &l);
	if (ret < 0) {
		watches_release(&w->watches, lw);
		return ret;
	}
	*out = lw;
	return 0;
}

static int add_tree(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags,
		    struct watch **out)
{
	struct watch *lw = watches_new(&w->watches, path, mask, flags);
	int ret;

	if (!lw)
		return -ENOMEM;
	ret = tree_add(w, lw);
	if (ret < 0) {
		/* A walk that shared a kernel watch drained, and what it read
		 * for the directories linked so far was queued for this wid. */
		queue_purge(w->q, &lw->qo);
		watches_release(&w->watches, lw);
		return ret;
	}
	*out = lw;
	return 0;
}

int handle_add(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags)
{
	struct watch *lw;
	uint64_t t0;
	int ret;

	ret = check_add(path, &mask, &flags);
	if (ret < 0)
		return ret;
	w->st.add_calls++;
	t0 = stats_start(w);
	if (flags & FSNW_WATCH_TREE)
		ret = add_tree(w, path, mask, flags, &lw);
	else
		ret = add_plain(w, path, mask, flags, t0, &lw);
	if (ret < 0)
		return ret;
	stats_end(w, &w->st.lat_add, t0);
	PROBE3(add, lw->qo.wid, mask, flags);
	return lw->qo.wid;
}

int handle_remove(struct fsnw *w, int wid)
{
	uint64_t t0 = stats_start(w);
	struct watch *lw;

	if (wid <= 0)
		return -EINVAL;
	lw = watches_find(&w->watches, wid);
	if (!lw)
		return -ENOENT;
	w->st.remove_calls++;
	handle_remove_watch(w, lw, true);
	stats_end(w, &w->st.lat_remove, t0);
	PROBE1(remove, wid);
	return 0;
}

void handle_end_call(struct fsnw *w)
{
	reap_unread_ignored(w);
	sync_ready(w);
}

FSNW_EXPORT int fsnw_add(struct fsnw *w, const char *path, uint32_t mask, uint32_t flags)
{
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = handle_add(w, path, mask, flags);
	handle_end_call(w);
	unlock(w);
	return ret;
}

FSNW_EXPORT int fsnw_remove(struct fsnw *w, int wid)
{
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = handle_remove(w, wid);
	handle_end_call(w);
	unlock(w);
	return ret;
}

static int wait_ready(struct fsnw *w, int timeout_ms)
{
	struct pollfd p[2] = {
		{ .fd = w->kfd, .events = POLLIN },
		{ .fd = w->evfd, .events = POLLIN },
	};
	int ret = poll(p, 2, timeout_ms);

	return ret < 0 ? -errno : ret;
}

FSNW_EXPORT int fsnw_read(struct fsnw *w, struct fsnw_event *evs, size_t max, int timeout_ms)
{
	uint64_t deadline = 0;
	uint64_t polls = 0;

	if (!w || !evs || !max)
		return -EINVAL;
	if (max > INT_MAX)
		max = INT_MAX;
	if (timeout_ms > 0)
		deadline = stats_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		size_t n;
		int ret, left;

		lock(w);
		w->st.sys_poll += polls;
		polls = 0;
		queue_release_delivered(w->q);
		ret = handle_drain(w, DRAIN_TIMED);
		n = queue_pop(w->q, evs, max);
		reap_zombies(w, evs, n);
		sync_ready(w);
		unlock(w);
		if (n)
			return (int)n;
		if (ret < 0)
			return ret;
		if (w->open_flags & FSNW_OPEN_NONBLOCK)
			return -EAGAIN;
		if (timeout_ms == 0)
			return 0;
		left = -1;
		if (timeout_ms > 0) {
			uint64_t now = stats_now_ns();

			if (now >= deadline)
				return 0;
			left = (int)((deadline - now + 999999u) / 1000000u);
		}
		polls++; /* counted when the lock is next held */
		ret = wait_ready(w, left);
		if (ret < 0) {
			lock(w);
			w->st.sys_poll += polls;
			unlock(w);
			return ret;
		}
	}
}

FSNW_EXPORT int fsnw_pump(struct fsnw *w)
{
	size_t depth;
	int ret;

	if (!w)
		return -EINVAL;
	lock(w);
	ret = handle_drain(w, DRAIN_COMPLETE | DRAIN_TIMED);
	depth = queue_depth(w->q);
	sync_ready(w);
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
