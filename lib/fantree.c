/* SPDX-License-Identifier: MIT */
/* Tree watches on fanotify without a walk: see fantree.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fankey.h"
#include "fanotify.h"
#include "fantree.h"
#include "handle.h"
#include "mem.h"
#include "mountinfo.h"
#include "sys.h"
#include "testhook.h"

/* A batch longer than this is placed at once, complete drain or not: the
 * reader must not hold an unbounded copy of a storm. */
#define BATCH_MAX 65536
/* Complete drains a batch waits for a delete that may still be unread. */
#define DELETE_WAITS_MAX 2
#define NOT_ARMED UINT64_MAX

struct fentry {
	struct list node;
	struct fev ev;
	unsigned char data[]; /* key, target, name + NUL */
};

static bool is_from(const struct fev *e)
{
	return (e->mask & FSNW_MOVED_FROM) && e->name;
}

static bool is_to(const struct fev *e)
{
	return (e->mask & FSNW_MOVED_TO) && e->name;
}

/* ---- entries ---- */

static struct fentry *entry_copy(const struct fev *e)
{
	size_t len = (size_t)e->keylen + e->targetlen + e->namelen + 1;
	struct fentry *x = mem_alloc(sizeof(*x) + len);
	unsigned char *p;

	if (!x)
		return NULL;
	x->ev = *e;
	p = x->data;
	memcpy(p, e->key, e->keylen);
	x->ev.key = p;
	p += e->keylen;
	if (e->target) {
		memcpy(p, e->target, e->targetlen);
		x->ev.target = p;
		p += e->targetlen;
	}
	if (e->name) {
		memcpy(p, e->name, e->namelen);
		x->ev.name = (const char *)p;
		p += e->namelen;
	}
	*p = '\0';
	return x;
}

static void batch_free(struct fantrees *ft)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &ft->batch) {
		list_del(pos);
		mem_free(list_entry(pos, struct fentry, node));
	}
	ft->nbatch = 0;
	ft->nmoves = 0;
	ft->validating = false;
	fcache_log(&ft->cache, false);
	mem_free(ft->from);
	ft->from = NULL;
	ft->redos = 0;
	ft->delete_waits = 0;
}

void fantrees_init(struct fantrees *ft, size_t cache_max)
{
	memset(ft, 0, sizeof(*ft));
	list_init(&ft->all);
	list_init(&ft->batch);
	list_init(&ft->late);
	list_init(&ft->ended);
	list_init(&ft->jobs);
	list_init(&ft->listed);
	htab_init(&ft->journal);
	fcache_init(&ft->cache, cache_max);
}

static void late_free(struct fantrees *ft)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &ft->late) {
		list_del(pos);
		mem_free(list_entry(pos, struct fentry, node));
	}
}

void fantrees_fini(struct fantrees *ft)
{
	late_free(ft);
	batch_free(ft);
	fanlist_fini(ft);
	fanmerge_fini(ft);
	fcache_fini(&ft->cache);
}

/* ---- resolving ---- */

/* The handle of rel below the view's mount root, on that mount only. */
static int key_at(void *arg, struct fview *v, const char *rel, size_t len, struct kkey *key)
{
	struct fsnw *w = arg;
	char path[PATH_MAX];
	struct fh_buf h;
	int mid, ret;

	if (len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, rel, len);
	path[len] = '\0';
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	ret = sys_name_to_handle_at(&w->st.sys_name_to_handle_at, v->mntfd, len ? path : "",
				    &h.fh, &mid, len ? 0 : AT_EMPTY_PATH);
	if (ret < 0)
		return ret == -EOVERFLOW ? -EOPNOTSUPP : ret;
	/* Something is mounted on the way: the directory is hidden there. */
	if (mid != v->mnt_id)
		return -EXDEV;
	handle_to_key(v->fsid, &h, key);
	return 0;
}

/* What /proc says fd is: its path in this process, or -errno. */
static ssize_t fd_path(struct fsnw *w, int fd, char *buf, size_t len)
{
	char proc[32];
	ssize_t n;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = sys_readlink(&w->st.sys_other, proc, buf, len);
	if (n < 0)
		return n;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	buf[n] = '\0';
	return n;
}

/*
 * Where the directory key is now: found in (or added to) the cache.
 * -ESTALE: it is gone; -EAGAIN: the filesystem changed under the answer;
 * other -errno: it could not be resolved.
 */
static int resolve(struct fsnw *w, struct fview *v, const unsigned char *key, size_t keylen,
		   struct fnode **out)
{
	struct fcache *c = &w->trees.fan.cache;
	const struct strref *pre = v->prefix;
	char path[PATH_MAX];
	struct fh_buf h;
	const char *rel;
	ssize_t n;
	int fd, ret;

	if (!key_to_handle(key, keylen, &h))
		return -EINVAL;
	fd = sys_open_by_handle_at(&w->st.sys_open_by_handle_at, v->mntfd, &h.fh, O_PATH);
	if (fd < 0)
		return fd == -ESTALE || fd == -ENOENT ? -ESTALE : fd;
	n = fd_path(w, fd, path, sizeof(path));
	/* Open, unlinked (filesystems that still decode such a handle). */
	if (n > 10 && !strcmp(path + n - 10, " (deleted)")) {
		struct stat st;

		if (sys_fstat(&w->st.sys_other, fd, &st) == 0 && st.st_nlink == 0)
			n = -ESTALE;
	}
	sys_close(&w->st.sys_other, fd);
	if (n < 0)
		return (int)n;
	if (pre->len == 1) { /* the view's mount is "/" */
		rel = path + 1;
	} else if ((size_t)n >= pre->len && !memcmp(path, pre->s, pre->len) &&
		   (path[pre->len] == '/' || !path[pre->len])) {
		rel = path + pre->len + (path[pre->len] == '/');
	} else {
		return fcache_outview(c, v, key, keylen, out);
	}
	ret = fcache_place(c, v, rel, (size_t)(path + n - rel), key, keylen, key_at, w, out);
	if (ret == -EXDEV)
		return fcache_outview(c, v, key, keylen, out);
	/* A directory on the way went or moved since the readlink. */
	return ret == -ENOENT || ret == -ENOTDIR ? -EAGAIN : ret;
}

ssize_t fantree_path_now(struct fsnw *w, const unsigned char *key, size_t keylen, char *buf,
			 size_t len)
{
	struct fview *v = fcache_view(&w->trees.fan.cache, key, keylen);
	struct fh_buf h;
	ssize_t n;
	int fd;

	if (!v || !key_to_handle(key, keylen, &h))
		return -ENOENT;
	fd = sys_open_by_handle_at(&w->st.sys_open_by_handle_at, v->mntfd, &h.fh, O_PATH);
	if (fd < 0)
		return fd;
	n = fd_path(w, fd, buf, len);
	sys_close(&w->st.sys_other, fd);
	return n;
}

int fantree_resolve(struct fsnw *w, const unsigned char *key, size_t keylen,
		    struct fnode **out)
{
	struct fview *v = fcache_view(&w->trees.fan.cache, key, keylen);

	return v ? resolve(w, v, key, keylen, out) : -ENOENT;
}

/* The view of the filesystem key is on, made on first need. */
static int view_of(struct fsnw *w, const struct kkey *k, struct fview **out)
{
	struct fcache *c = &w->trees.fan.cache;
	char prefix[PATH_MAX];
	struct fh_buf h;
	struct kkey root;
	ssize_t n;
	int fd, mid, ret;

	*out = fcache_view(c, k->bytes, k->len);
	if (*out)
		return 0;
	fd = w->be->mount_fd ? w->be->mount_fd(w, k->bytes, k->len) : -EOPNOTSUPP;
	if (fd < 0)
		return fd;
	n = fd_path(w, fd, prefix, sizeof(prefix));
	if (n < 0)
		return (int)n;
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	ret = sys_name_to_handle_at(&w->st.sys_name_to_handle_at, fd, "", &h.fh, &mid,
				    AT_EMPTY_PATH);
	if (ret < 0)
		return ret == -EOVERFLOW ? -EOPNOTSUPP : ret;
	handle_to_key(k->bytes, &h, &root);
	return fcache_view_new(c, root.bytes, root.len, fd, mid, prefix, (size_t)n, out);
}

/* ---- delivery ---- */

static uint32_t armed_masks(const struct fantrees *ft)
{
	const struct list *pos;
	uint32_t m = 0;

	for (pos = ft->all.next; pos != &ft->all; pos = pos->next) {
		const struct fantree *t = list_entry(pos, struct fantree, node);

		if (t->armed_seq != NOT_ARMED)
			m |= t->lw->mask;
	}
	return m;
}

/* Is the directory of n still there, anywhere (its handle opens, linked)? */
static bool still_there(struct fsnw *w, const struct fnode *n)
{
	struct fh_buf h;
	struct stat st;
	bool there;
	int fd;

	if (!n->view || !key_to_handle(n->key, n->keylen, &h))
		return true;
	fd = sys_open_by_handle_at(&w->st.sys_open_by_handle_at, n->view->mntfd, &h.fh, O_PATH);
	if (fd < 0)
		return fd != -ESTALE && fd != -ENOENT;
	there = sys_fstat(&w->st.sys_other, fd, &st) < 0 || st.st_nlink > 0;
	sys_close(&w->st.sys_other, fd);
	return there;
}

/*
 * An event whose directory cannot be placed: outside, or an overflow.
 * lost: the cache has a node for it, which lost its place within the batch
 * (a resolution put it where the stream later put another directory). If
 * the directory is still there, it may well have been in a tree; only one
 * gone is known to have been outside. Without a node, a directory gone
 * (E_STALE) is one whose delete the batch waited for and did not read: the
 * kernel removes the entry before it queues the delete, which may still
 * come, and say it was in a tree.
 */
static void unplaced(struct fsnw *w, const struct fev *e, const struct fnode *lost)
{
	struct fantrees *ft = &w->trees.fan;
	bool wanted = (e->mask & armed_masks(ft) & FSNW_ALL_EVENTS) != 0;
	bool gone = e->flags & E_STALE;

	if (wanted && ((e->flags & E_UNRESOLVED) || ft->cache.ambiguous || ft->cache.nomem ||
		       (!lost && gone) || (lost && !gone && still_there(w, lost)))) {
		handle_overflow(w, OVERFLOW_UNRESOLVED);
		return;
	}
	if (!(e->flags & E_PLAIN))
		w->st.dropped_outside++;
}

/*
 * Does t's consumer not know of n yet? n is below a directory moved into t
 * whose listing has not stood yet, by a name no event told. What happens
 * there is not reported: the listings that tell of those directories come
 * later, and answer for their own time (fantree-list.c).
 */
static bool hidden(const struct fantrees *ft, const struct fantree *t, const struct fnode *n)
{
	if (list_empty(&ft->jobs) && list_empty(&ft->listed))
		return false;
	for (const struct fnode *at = n->parent; at && n->state == FN_LINKED; at = at->parent) {
		if (at->job && fanlist_tree(at->job) == t &&
		    !fanlist_told(at->job, n->name, n->namelen))
			return true;
		if (n->anchors || at->state != FN_LINKED)
			break;
		n = at;
	}
	return false;
}

/*
 * A directory's MOVED_TO reached t: if t did not hear its MOVED_FROM (the
 * tree's event just before), it came from outside t, and what it holds is
 * listed for t once the move is applied (moved_in_flush).
 */
static void note_move(struct fantrees *ft, struct fantree *t, const struct fev *e,
		      struct fnode *n, const char *name, size_t len)
{
	if (!name)
		return;
	if (is_from(e)) {
		/* A name t's consumer was never told of (in a directory moved
		 * in, not listed yet) moves nothing for it: its MOVED_TO is a
		 * move in. */
		if (!n->job || fanlist_tree(n->job) != t || fanlist_told(n->job, name, len))
			t->from_seq = e->seq;
		return;
	}
	if (!is_to(e) || !(e->mask & FSNW_ISDIR) || !e->target || !(t->lw->mask & FSNW_CREATE))
		return;
	if (e->seq && t->from_seq == e->seq - 1 && (e->flags & E_MOVE_END))
		return;
	if (ft->nmovein < FANTREE_MOVEIN_MAX)
		ft->movein[ft->nmovein++] = t;
	else
		ft->movein_lost = true;
}

/* The moves in noted by the last delivery, now that the move is applied. */
static void moved_in_flush(struct fsnw *w, const struct fev *e)
{
	struct fantrees *ft = &w->trees.fan;
	struct fnode *n;

	if (!ft->nmovein && !ft->movein_lost)
		return;
	n = e->target ? fcache_find(&ft->cache, e->target, e->targetlen) : NULL;
	for (unsigned i = 0; n && i < ft->nmovein; i++)
		fanlist_moved_in(w, ft->movein[i], n);
	if (!n || ft->movein_lost)
		handle_overflow(w, OVERFLOW_UNRESOLVED); /* what it holds goes unreported */
	ft->nmovein = 0;
	ft->movein_lost = false;
}

/*
 * Deliver an event that happened in directory n (with name) or to n
 * itself (name NULL) to every armed tree n is in, with the path each
 * reports; the innermost anchor of a tree wins. Returns enum fnode_where.
 */
static int deliver_at(struct fsnw *w, struct fnode *n, const struct fev *e, uint32_t mask,
		      const char *name, size_t namelen)
{
	struct fantrees *ft = &w->trees.fan;
	struct fcache *c = &ft->cache;
	uint64_t d = ++ft->delivery;
	int where = fcache_where(c, n);
	struct fnode *x = n;

	for (int w_ = where; w_ == FN_IN; w_ = x ? fcache_where(c, x) : FN_OUT) {
		struct fnode *at = x->near;

		for (struct fanchor *a = at->anchors; a; a = a->next) {
			struct fantree *t = a->owner;
			struct watch *lw = t->lw;
			uint32_t m = mask & (lw->mask | FSNW_ISDIR | FSNW_SYNTHETIC);
			struct strref *path;

			if (t->mark == d)
				continue;
			t->mark = d;
			if (e->seq < t->armed_seq || hidden(ft, t, n))
				continue;
			note_move(ft, t, e, n, name, namelen);
			if (!(m & FSNW_ALL_EVENTS))
				continue;
			if (x == n && a == at->anchors)
				path = strref_get(n->path);
			else
				path = fcache_path_below(at, a->report, n);
			if (!path) {
				handle_overflow(w, OVERFLOW_UNRESOLVED); /* ENOMEM */
				continue;
			}
			if (queue_push(w->q, &lw->qo, path, m, e->cookie, name, namelen, 0) ==
			    QUEUE_MERGED)
				PROBE2(merge, lw->qo.wid, m);
			strref_put(path);
		}
		/* Trees further up (nested trees) hear it too; a single tree's
		 * anchors further up can only be its own. */
		x = (at->state == FN_LINKED || at->state == FN_DEAD) &&
		    ft->all.next != ft->all.prev ? at->parent : NULL;
	}
	return where;
}

void fantree_synthetic(struct fsnw *w, struct fnode *dir, uint32_t mask, uint32_t cookie,
		       const char *name, size_t len)
{
	struct fantrees *ft = &w->trees.fan;
	struct fev e = {
		.seq = ft->seq++,
		.mask = mask | FSNW_SYNTHETIC,
		.cookie = cookie,
		.key = dir->key,
		.keylen = dir->keylen,
		.name = name,
		.namelen = (uint16_t)len,
		.flags = (mask & FSNW_MOVED_TO) ? E_MOVE_END : 0,
	};

	(void)deliver_at(w, dir, &e, e.mask, name, len);
	w->st.events_synthetic++;
}

void fantree_synthetic_move(struct fsnw *w, struct fnode *was, const char *name, size_t len,
			    struct fnode *n)
{
	struct fantrees *ft = &w->trees.fan;
	/* Cookies of the library's own moves have the top bit: the kernel's
	 * (inotify's) and the decoder's never reach it in a handle's life. */
	uint32_t cookie = 0x80000000u | (++ft->cookie & 0x7fffffffu);

	fantree_synthetic(w, was, FSNW_MOVED_FROM | FSNW_ISDIR, cookie, name, len);
	fantree_synthetic(w, n->parent, FSNW_MOVED_TO | FSNW_ISDIR, cookie, n->name, n->namelen);
}

/* The tree's directory went: the router ends the tree after this drain. */
static void root_gone(struct fantrees *ft, struct fnode *n)
{
	for (struct fanchor *a = n->anchors; a; a = a->next) {
		struct fantree *t = a->owner;

		if (a != &t->anchors[0] || t->ended)
			continue;
		t->ended = true;
		list_add_tail(&t->ended_node, &ft->ended);
	}
}

/*
 * A directory leaves (dir, name) by e while the cache has it elsewhere:
 * the cache was wrong about it (a resolution placed it ahead of the
 * stream, or a rename went unseen), and events at it may have been
 * reported under the wrong path. Said as FSNW_OVERFLOW; the cache takes
 * the place the event says, so that the event applies.
 */
/* Does the cache have x at (dir, e's name)? */
static bool node_at(const struct fnode *x, const struct fnode *dir, const struct fev *e)
{
	return x->parent == dir && x->namelen == e->namelen &&
	       !memcmp(x->name, e->name, e->namelen);
}

static void misplaced(struct fsnw *w, const struct fev *e, struct fnode *dir)
{
	struct fcache *c = &w->trees.fan.cache;
	struct fnode *x = fcache_find(c, e->target, e->targetlen);

	if (!x || x->state != FN_LINKED || !x->parent || node_at(x, dir, e))
		return;
	if (fcache_where(c, x) == FN_IN || fcache_where(c, dir) == FN_IN)
		handle_overflow(w, OVERFLOW_UNRESOLVED);
	fcache_move(c, dir->view, x->parent, x->name, x->namelen, dir, e->name, e->namelen,
		    e->target, e->targetlen);
}

/*
 * An echo of the library's own read of a directory it lists
 * (fantree-list.c): OPEN, ACCESS or CLOSE_NOWRITE of it, while the window
 * that read it is open.
 */
static bool listing_echo(struct fsnw *w, const struct fev *e, struct fnode *n)
{
	const uint32_t reads = FSNW_OPEN | FSNW_ACCESS | FSNW_CLOSE_NOWRITE;
	struct fnode *c = n;

	if (!(e->mask & FSNW_ISDIR) || (e->mask & ~(reads | FSNW_ISDIR)) || !w->trees.window_open)
		return false;
	if (e->name)
		c = e->target ? fcache_find(&w->trees.fan.cache, e->target, e->targetlen) : NULL;
	return c && fanlist_echo(&w->trees, c);
}

/* n: the node of e's key, or NULL if the cache has none. */
static void deliver(struct fsnw *w, const struct fev *e, struct fnode *n)
{
	struct fcache *c = &w->trees.fan.cache;
	int where;

	if (e->mask & FSNW_IGNORED)
		return;
	if (!n) {
		unplaced(w, e, NULL);
		return;
	}
	fcache_touch(c, n);
	if (listing_echo(w, e, n)) {
		w->st.dropped_walk++;
		return;
	}
	if (e->name && e->target && (e->mask & FSNW_ISDIR) &&
	    (e->mask & (FSNW_MOVED_FROM | FSNW_DELETE)))
		misplaced(w, e, n);
	if (e->name) {
		where = deliver_at(w, n, e, e->mask, e->name, e->namelen);
		/* After: whether the name was told before this event matters.
		 * Only a create, delete or move tells it; the listing still
		 * answers for a name another event only names. */
		if (n->job && (e->mask & FSNW_DIRENT_BITS))
			fanlist_touch(n, e->name, e->namelen);
		if (where == FN_IN)
			fanmerge_note(w, e);
	} else {
		uint32_t named = e->mask & ~(uint32_t)FSNW_SELF_BITS;

		/* As inotify: the parent hears of its subdirectory, by name. */
		if ((named & FSNW_ALL_EVENTS) && n->parent && n->name &&
		    (n->state == FN_LINKED || n->state == FN_DEAD))
			(void)deliver_at(w, n->parent, e, named, n->name, n->namelen);
		where = deliver_at(w, n, e, e->mask, NULL, 0);
		if ((e->mask & FSNW_DELETE_SELF) && n->anchors)
			root_gone(&w->trees.fan, n);
	}
	if (where == FN_UNKNOWN)
		unplaced(w, e, n);
	else if (where == FN_OUT && !(e->flags & E_PLAIN))
		w->st.dropped_outside++;
}

/* ---- structure ---- */

static struct fnode *dir_of(struct fcache *c, const struct fev *e)
{
	return fcache_find(c, e->key, e->keylen);
}

/*
 * A directory above t's moved (moved: the key of the directory renamed),
 * not t's own: its root had no rename of its own to say that its events
 * now report another path. A synthetic FSNW_MOVE_SELF of the root at its
 * new path says it, as the kernel's says the root's own rename.
 */
static void tell_root_moved(struct fsnw *w, struct fantree *t, const unsigned char *moved,
			    size_t movedlen)
{
	const struct fnode *root = t->anchors[0].node;
	struct watch *lw = t->lw;

	/* Without the moved directory's key, it may be the root (whose own
	 * MOVE_SELF comes): nothing is said twice. */
	if (!(lw->mask & FSNW_MOVE_SELF) || !moved ||
	    (root->keylen == movedlen && !memcmp(root->key, moved, movedlen)))
		return;
	(void)queue_push(w->q, &lw->qo, t->anchors[0].report,
			 FSNW_MOVE_SELF | FSNW_ISDIR | FSNW_SYNTHETIC, 0, NULL, 0, 0);
	w->st.events_synthetic++;
}

/*
 * A directory moved: a tree whose directory is now elsewhere reports its
 * new path from here on (its mounts' anchors with it), and says so when
 * the directory moved was one above it.
 */
static void roots_moved(struct fsnw *w, const unsigned char *moved, size_t movedlen)
{
	struct fantrees *ft = &w->trees.fan;
	struct list *pos;

	for (pos = ft->all.next; pos != &ft->all; pos = pos->next) {
		struct fantree *t = list_entry(pos, struct fantree, node);
		struct strref *vp = fcache_view_path(&ft->cache, t->anchors[0].node);
		struct strref *old = t->anchors[0].report;
		bool ok = true;

		if (!vp || (vp->len == t->view_path->len &&
			    !memcmp(vp->s, t->view_path->s, vp->len))) {
			strref_put(vp);
			continue;
		}
		for (size_t i = 1; ok && i < t->nanchors; i++) {
			struct strref *r = strref_rebase(t->anchors[i].report, old->len, vp);

			ok = r != NULL;
			if (ok) {
				strref_put(t->anchors[i].report);
				t->anchors[i].report = r;
			}
		}
		if (!ok) {
			handle_overflow(w, OVERFLOW_UNRESOLVED); /* ENOMEM: paths are stale */
			strref_put(vp);
			continue;
		}
		t->anchors[0].report = strref_get(vp);
		strref_put(old);
		strref_put(t->view_path);
		t->view_path = vp;
		fcache_invalidate(&ft->cache);
		tell_root_moved(w, t, moved, movedlen);
	}
}

/*
 * Apply what e says about directories (undo: take it back). A rename is
 * applied at its MOVED_TO, with from its MOVED_FROM (NULL when alone).
 * live: the stream is at e (not a rewind's first pass), so a tree whose
 * directory moved takes its new path.
 */
static void apply_one(struct fsnw *w, const struct fev *e, const struct fev *from, bool undo,
		      bool live)
{
	struct fcache *c = &w->trees.fan.cache;
	struct fview *v;
	const unsigned char *tk = e->target;
	size_t tl = e->targetlen;
	struct fnode *n;

	if (e->mask & (FSNW_IGNORED | FSNW_DELETE_SELF)) {
		if (!e->name && (n = fcache_find(c, e->key, e->keylen)))
			fcache_self_gone(c, n, !undo);
		if (!e->name)
			return;
	}
	if (!(e->mask & FSNW_ISDIR) || !e->name)
		return;
	v = fcache_view(c, e->key, e->keylen);
	if (e->mask & FSNW_CREATE) {
		if (undo)
			fcache_uncreate(c, dir_of(c, e), e->name, e->namelen, tk, tl);
		else
			fcache_create(c, dir_of(c, e), e->name, e->namelen, tk, tl);
	} else if (e->mask & FSNW_DELETE) {
		if (undo)
			fcache_undelete(c, dir_of(c, e), e->name, e->namelen, tk, tl);
		else
			fcache_delete(c, dir_of(c, e), e->name, e->namelen, tk, tl);
	} else if (is_to(e)) {
		struct fnode *src = from ? dir_of(c, from) : NULL, *dst = dir_of(c, e);
		const char *sn = from ? from->name : NULL;
		size_t sl = from ? from->namelen : 0;

		if (undo)
			fcache_move(c, v, dst, e->name, e->namelen, src, sn, sl, tk, tl);
		else
			fcache_move(c, v, src, sn, sl, dst, e->name, e->namelen, tk, tl);
		if (live)
			roots_moved(w, tk, tl);
	} else if (is_from(e) && !(e->flags & E_PAIRED)) {
		/* Moved where nothing reported it: its place is unknown after. */
		if (undo)
			fcache_move(c, v, NULL, NULL, 0, dir_of(c, e), e->name, e->namelen, tk, tl);
		else
			fcache_move(c, v, dir_of(c, e), e->name, e->namelen, NULL, NULL, 0, tk, tl);
	}
}

/*
 * apply, and what it tells going forward (live, or a first placing's pass
 * 1, whose cache holds no resolution of its own yet): the stream gave a
 * directory a place the cache had another directory at. If that one is
 * gone, it was there and a rename replaced it (an empty directory may be
 * renamed over). If it is still there, a resolution put it at that place
 * ahead of the stream, and events reported since at it or below it may
 * have had a path from the future: FSNW_OVERFLOW when the place is in a
 * tree. A redo's pass 1 may take places its first try's resolutions gave:
 * those are resolved again (place_batch).
 */
static void apply(struct fsnw *w, const struct fev *e, const struct fev *from, bool undo,
		  bool live)
{
	struct fantrees *ft = &w->trees.fan;
	struct fcache *c = &ft->cache;
	uint64_t displaced = c->ndisplaced;

	apply_one(w, e, from, undo, live);
	if (undo || (!live && ft->validating) || c->ndisplaced == displaced)
		return;
	if (fcache_where(c, c->displaced_at) == FN_IN && still_there(w, c->displaced))
		handle_overflow(w, OVERFLOW_UNRESOLVED);
}

/* ---- the batch ---- */

static struct fev *entry_ev(struct list *pos)
{
	return &list_entry(pos, struct fentry, node)->ev;
}

/* The MOVED_FROM that pairs with the MOVED_TO at pos, or NULL. */
static const struct fev *pair_of(struct fantrees *ft, struct list *pos)
{
	struct fev *prev;

	if (pos->prev == &ft->batch)
		return NULL;
	prev = entry_ev(pos->prev);
	return (prev->flags & E_PAIRED) ? prev : NULL;
}

/* Events that report a place: not the drop notice, not a bare DELETE_SELF. */
static bool needs_place(const struct fev *e)
{
	if (e->mask & FSNW_IGNORED)
		return false;
	return e->name || (e->mask & ~(uint32_t)(FSNW_DELETE_SELF | FSNW_ISDIR));
}

/* Keys already tried in this pass, and what they gave. */
struct tried {
	struct hnode node;
	int err;
	size_t keylen;
	unsigned char key[];
};

static struct tried *tried_find(struct htab *t, const unsigned char *key, size_t len)
{
	struct hnode *hn;

	htab_for_each_hash(hn, t, hash_bytes(key, len, 0x7472)) {
		struct tried *x = container_of(hn, struct tried, node);

		if (x->keylen == len && !memcmp(x->key, key, len))
			return x;
	}
	return NULL;
}

static void tried_free(struct hnode *hn, void *arg)
{
	(void)arg;
	mem_free(container_of(hn, struct tried, node));
}

/* Are events waiting in the kernel queue (one poll)? */
bool fantree_queue_ready(struct fsnw *w)
{
	struct pollfd p = { .fd = w->kfd, .events = POLLIN };

	if (TEST_QUEUE_HIDDEN())
		return false;
	return sys_poll(&w->st.sys_poll, &p, 1, 0) > 0;
}

/* Pass 2: resolve every directory the batch needs and the cache lacks.
 * Returns whether it resolved any. */
static bool resolve_batch(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;
	struct fcache *c = &ft->cache;
	struct htab seen;
	struct list *pos;
	bool resolved;

	htab_init(&seen);
	ft->contradicted = false;
	TEST_POINT(TP_RESOLVE, NULL);
	for (pos = ft->batch.next; pos != &ft->batch; pos = pos->next) {
		struct fev *e = entry_ev(pos);
		struct fview *v = fcache_view(c, e->key, e->keylen);
		struct fnode *n = fcache_find(c, e->key, e->keylen);
		struct tried *t;
		int err;

		e->flags &= (uint8_t)~(E_STALE | E_UNRESOLVED);
		if (!v || !needs_place(e) || (n && fcache_where(c, n) != FN_UNKNOWN))
			continue;
		t = tried_find(&seen, e->key, e->keylen);
		if (t) {
			err = t->err;
		} else {
			err = resolve(w, v, e->key, e->keylen, &n);
			if (err == -EAGAIN) /* raced a rename: once more */
				err = resolve(w, v, e->key, e->keylen, &n);
			if (err == -EAGAIN)
				ft->contradicted = true;
			t = htab_reserve(&seen, 1) == 0 ? mem_alloc(sizeof(*t) + e->keylen) : NULL;
			if (t) {
				t->err = err;
				t->keylen = e->keylen;
				memcpy(t->key, e->key, e->keylen);
				htab_insert(&seen, &t->node, hash_bytes(e->key, e->keylen, 0x7472));
			}
		}
		if (err == -ESTALE)
			e->flags |= E_STALE;
		else if (err < 0)
			e->flags |= E_UNRESOLVED;
	}
	resolved = seen.count > 0;
	htab_for_each(&seen, tried_free, NULL);
	htab_fini(&seen);
	return resolved;
}

/* After pass 3: an event whose gone directory may yet be explained by a
 * delete the kernel still holds, and that a tree may care for. */
static bool waits_for_delete(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;
	uint32_t masks = armed_masks(ft);
	struct list *pos;

	for (pos = ft->batch.next; pos != &ft->batch; pos = pos->next) {
		struct fev *e = entry_ev(pos);
		struct fnode *n;

		if (!(e->flags & E_STALE) || !(e->mask & masks & FSNW_ALL_EVENTS))
			continue;
		n = fcache_find(&ft->cache, e->key, e->keylen);
		if (!n || fcache_where(&ft->cache, n) == FN_UNKNOWN)
			return true;
	}
	return false;
}

/*
 * Pass 1 of a batch's first placing, before e (a directory's MOVED_TO,
 * from its MOVED_FROM) is applied: does the cache have the directory at
 * the destination already? Then a resolution learned of the rename before
 * its events were read: vfs_rename moves the dentry (d_move) and only
 * then queues the events (fsnotify_move), so a resolution can see the new
 * path while the kernel queue still reads empty, and events placed since
 * may have been reported at paths from after the rename. Said as
 * FSNW_OVERFLOW, as misplaced() says it at delivery; here it must be said
 * before pass 3, which takes the rename back and hides it.
 */
static void learned_ahead(struct fsnw *w, const struct fev *e, const struct fev *from)
{
	struct fcache *c = &w->trees.fan.cache;
	struct fnode *dst, *x;

	if (!from || !is_to(e) || !(e->mask & FSNW_ISDIR) || !e->target)
		return;
	dst = dir_of(c, e);
	x = fcache_find(c, e->target, e->targetlen);
	if (!dst || !x || x->state != FN_LINKED || !node_at(x, dst, e))
		return;
	if (fcache_where(c, x) == FN_IN)
		handle_overflow(w, OVERFLOW_UNRESOLVED);
}

/* Place the batch after another complete drain, as a redo: the cache holds
 * the batch's own resolutions, resolved again if a directory moved or went
 * meanwhile. */
static void place_again(struct fantrees *ft)
{
	ft->validating = true;
	ft->moves_at_check = ft->nmoves;
	ft->drain_again = true;
}

/* Passes 1 to 3 of fantree.h: the batch applied forward (learning what it
 * tells ahead), its places resolved, and the cache taken back to the
 * batch's start. Whether a resolution was made (or this is a redo). */
static bool resolve_places(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;
	struct fcache *c = &ft->cache;
	struct list *pos;
	bool resolved;

	for (pos = ft->batch.next; pos != &ft->batch; pos = pos->next) {
		struct fev *e = entry_ev(pos);
		const struct fev *from = pair_of(ft, pos);

		/* A redo's cache holds its own first try's resolutions. */
		if (!ft->validating)
			learned_ahead(w, e, from);
		apply(w, e, from, false, false);
	}
	/* A directory moved or went since the last resolutions: where they
	 * put directories may be of a later filesystem than the batch's end
	 * was then. Resolve them again. */
	if (ft->validating && ft->nmoves != ft->moves_at_check)
		fcache_unplace_logged(c);
	fcache_log(c, true);
	resolved = resolve_batch(w) || ft->validating;
	for (pos = ft->batch.prev; pos != &ft->batch; pos = pos->prev) {
		struct fev *e = entry_ev(pos);

		apply(w, e, pair_of(ft, pos), true, false);
	}
	return resolved;
}

/*
 * Whether to place the batch again after another complete drain instead
 * of now. A resolution answers for now. If events came meanwhile, now is
 * past the batch's end, and the resolutions may know of a rename the
 * batch does not have yet: read on, and place the batch with those events
 * in it (the places are resolved again if one of them moved or deleted a
 * directory). Events that keep coming make the library place it anyway; a
 * directory it placed ahead of the stream is then met by its own rename or
 * delete where the cache does not have it, and that says FSNW_OVERFLOW
 * (misplaced). A resolution that found a name of the cache leading
 * elsewhere now is ahead too, though the kernel queue may still read
 * empty (d_move before fsnotify_move); placed anyway, its events are
 * unresolved: FSNW_OVERFLOW.
 */
static bool place_later(struct fsnw *w, bool resolved, bool may_defer)
{
	struct fantrees *ft = &w->trees.fan;
	bool ahead = resolved && (fantree_queue_ready(w) || ft->contradicted);

	if (!may_defer)
		return false;
	if (ahead && ft->redos < FANTREE_REDOS_MAX) {
		ft->redos++;
		place_again(ft);
		return true;
	}
	/* The cache is back at the batch's start: wait for one more complete
	 * drain and place it all then. A budget of its own: a writer that kept
	 * the batch placed again gave the kernel no more time to queue a
	 * delete. */
	if (ft->delete_waits < DELETE_WAITS_MAX && waits_for_delete(w) &&
	    !TEST_DELETE_WAIT_SKIPPED()) {
		ft->delete_waits++;
		place_again(ft);
		return true;
	}
	return false;
}

/* The four passes of fantree.h. may_defer: the kernel queue was just read
 * empty, and another complete drain can follow. */
static void place_batch(struct fsnw *w, bool may_defer)
{
	struct fantrees *ft = &w->trees.fan;
	struct fcache *c = &ft->cache;
	struct list *pos;

	if (ft->from) { /* a MOVED_FROM whose MOVED_TO never came */
		list_add_tail(&ft->from->node, &ft->batch);
		ft->nbatch++;
		ft->from = NULL;
	}
	if (!ft->nbatch)
		return;
	if (place_later(w, resolve_places(w), may_defer))
		return;
	ft->validating = false;
	fcache_log(c, false);
	for (pos = ft->batch.next; pos != &ft->batch; pos = pos->next) {
		struct fev *e = entry_ev(pos);

		deliver(w, e, fcache_find(c, e->key, e->keylen));
		apply(w, e, pair_of(ft, pos), false, true);
		moved_in_flush(w, e);
	}
	batch_free(ft);
	c->nomem = false;
	fcache_trim(c);
}

/*
 * Late deletes. A delete the kernel merged into the create (or move-in) of
 * the same object happened after that, but its record stands where the
 * create did: "mkdir d; mkdir d/e; rm -r d" read late is one record for d,
 * CREATE|DELETE, and then e's create in d. Delivered at the record, the
 * delete would come before events in d that happened while d was there.
 * So it is held, and taken before the first event that needs it done (a
 * new entry at its name, or the object's own events without a name), or
 * once the kernel queue has been read empty: the latest it can have been.
 */
static void take(struct fsnw *w, const struct fev *from, const struct fev *e);

static bool late_before(const struct fev *late, const struct fev *e)
{
	if (!e->name)
		return late->target && e->keylen == late->targetlen &&
		       !memcmp(e->key, late->target, e->keylen);
	return e->keylen == late->keylen && e->namelen == late->namelen &&
	       !memcmp(e->key, late->key, e->keylen) && !memcmp(e->name, late->name, e->namelen);
}

static void late_take(struct fsnw *w, struct fentry *x)
{
	list_del(&x->node);
	x->ev.flags &= (uint8_t)~E_LATE;
	take(w, NULL, &x->ev);
	mem_free(x);
}

/* Before e: the held deletes e must follow. */
static void late_release(struct fsnw *w, const struct fev *e)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &w->trees.fan.late) {
		struct fentry *x = list_entry(pos, struct fentry, node);

		if (late_before(&x->ev, e))
			late_take(w, x);
	}
}

/* The kernel queue was read empty: every held delete, in order, after a
 * MOVED_FROM still waiting (it came before them). */
static void late_flush(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;

	if (list_empty(&ft->late))
		return;
	if (ft->from) {
		struct fentry *lone = ft->from;

		ft->from = NULL;
		take(w, NULL, &lone->ev);
		mem_free(lone);
	}
	while (!list_empty(&ft->late))
		late_take(w, list_first(&ft->late, struct fentry, node));
}

void fantree_settle(struct fsnw *w)
{
	late_flush(w);
	place_batch(w, true);
}


void fantree_overflow(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;

	if (list_empty(&ft->all) && !ft->nbatch && !ft->from && list_empty(&ft->late))
		return;
	late_flush(w);
	place_batch(w, false);
	fcache_forget(&ft->cache);
}

/* Hold e at the end of the batch; false (and an overflow) without memory. */
static void hold(struct fsnw *w, const struct fev *e)
{
	struct fantrees *ft = &w->trees.fan;
	struct fentry *x = entry_copy(e);

	if (!x) {
		/* The event is lost: say so if a tree may have wanted it. */
		if (e->mask & armed_masks(ft) & FSNW_ALL_EVENTS)
			handle_overflow(w, OVERFLOW_UNRESOLVED);
		return;
	}
	list_add_tail(&x->node, &ft->batch);
	ft->nbatch++;
	if ((e->mask & FSNW_ISDIR) && e->name && (e->mask & (FSNW_MOVE | FSNW_DELETE)))
		ft->nmoves++;
	if (ft->nbatch >= BATCH_MAX)
		place_batch(w, false);
}

/* Does e change what the cache knows (apply has work)? */
static bool structural(const struct fev *e)
{
	if (!e->name)
		return e->mask & (FSNW_IGNORED | FSNW_DELETE_SELF);
	return (e->mask & FSNW_ISDIR) && (e->mask & FSNW_DIRENT_BITS);
}

/* Can e be placed now, without a resolution? *n: its node, if any. */
static bool known(struct fcache *c, const struct fev *e, struct fnode **n)
{
	*n = fcache_find(c, e->key, e->keylen);
	return !needs_place(e) || (*n && fcache_where(c, *n) != FN_UNKNOWN);
}

/* One event, or a rename's two ends: at once if the cache knows their
 * directories and no batch is open, else into the batch. */
static void take(struct fsnw *w, const struct fev *from, const struct fev *e)
{
	struct fantrees *ft = &w->trees.fan;
	struct fcache *c = &ft->cache;
	struct fnode *n, *fn = NULL;

	if (!ft->nbatch && known(c, e, &n) && (!from || known(c, from, &fn))) {
		if (from)
			deliver(w, from, fn);
		deliver(w, e, n);
		if (structural(e))
			apply(w, e, from, false, true);
		moved_in_flush(w, e);
		c->nomem = false;
		fcache_trim(c);
		return;
	}
	if (from)
		hold(w, from);
	hold(w, e);
}

bool fantree_event(struct fsnw *w, const struct kevent *ev, bool plain)
{
	struct fantrees *ft = &w->trees.fan;
	struct fev e;

	if (list_empty(&ft->all) || !ev->key || ev->keylen > KKEY_MAX)
		return false;
	/* A file's own event: its directory's, with the name, is the one. */
	if (!ev->name && !(ev->mask & (FSNW_ISDIR | FSNW_IGNORED)))
		return false;
	if (!fcache_view(&ft->cache, ev->key, ev->keylen))
		return false;
	e = (struct fev){
		.seq = ft->seq++,
		.mask = ev->mask,
		.cookie = ev->cookie,
		.key = ev->key,
		.keylen = (uint16_t)ev->keylen,
		.target = ev->targetlen <= KKEY_MAX ? ev->target : NULL,
		.targetlen = ev->targetlen <= KKEY_MAX ? (uint16_t)ev->targetlen : 0,
		.name = ev->name,
		.namelen = (uint16_t)ev->namelen,
		.flags = (plain ? E_PLAIN : 0) | (ev->flags & KEVENT_MERGED ? E_MERGED : 0) |
			 (ev->flags & KEVENT_LATE ? E_LATE : 0),
	};
	if (!list_empty(&ft->late))
		late_release(w, &e);
	if (e.flags & E_LATE) {
		struct fentry *x = entry_copy(&e);

		if (x) {
			list_add_tail(&x->node, &ft->late);
			return true;
		}
		e.flags &= (uint8_t)~E_LATE; /* no memory: at the record, as read */
	}
	if (ft->from && !(is_to(&e) && e.cookie == ft->from->ev.cookie)) {
		/* A MOVED_FROM alone: its other end went unreported. */
		struct fentry *lone = ft->from;

		ft->from = NULL;
		take(w, NULL, &lone->ev);
		mem_free(lone);
	}
	if (is_from(&e)) {
		/* Its MOVED_TO comes next, from the same record. */
		ft->from = entry_copy(&e);
		if (!ft->from)
			take(w, NULL, &e);
		return true;
	}
	if (ft->from) {
		struct fentry *from = ft->from;

		ft->from = NULL;
		from->ev.flags |= E_PAIRED;
		e.flags |= E_MOVE_END;
		take(w, &from->ev, &e);
		mem_free(from);
		return true;
	}
	take(w, NULL, &e);
	return true;
}

struct watch *fantree_pop_ended(struct fantrees *ft, bool *pending)
{
	struct fantree *t;

	/* Not while its events may wait in the batch. */
	if (list_empty(&ft->ended) || ft->nbatch || ft->from || !list_empty(&ft->late))
		return NULL;
	t = list_first(&ft->ended, struct fantree, ended_node);
	list_del(&t->ended_node);
	*pending = t->armed_seq == NOT_ARMED;
	return t->lw;
}

bool fantrees_after_drain(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;
	bool again = ft->drain_again;
	struct list *pos;

	ft->drain_again = false;
	if (!ft->nbatch && !ft->from)
		again |= fanmerge_verify(w);
	again |= fanlist_after_drain(w);
	if (ft->npending) {
		for (pos = ft->all.next; pos != &ft->all; pos = pos->next) {
			struct fantree *t = list_entry(pos, struct fantree, node);

			if (t->armed_seq == NOT_ARMED)
				t->armed_seq = ft->seq;
		}
		ft->npending = 0;
	}
	return again;
}

/* ---- adding and removing trees ---- */

/* Put t's anchors in their nodes, or take them out (link false). */
static void anchors_link(struct fantrees *ft, struct fantree *t, bool link)
{
	for (size_t i = 0; i < t->nanchors; i++) {
		struct fanchor *a = &t->anchors[i], **pp;

		if (link) {
			a->next = a->node->anchors;
			a->node->anchors = a;
		} else {
			for (pp = &a->node->anchors; *pp != a; pp = &(*pp)->next)
				;
			*pp = a->next;
		}
		fcache_pinned(&ft->cache, a->node);
	}
	if (link)
		ft->nanchors += t->nanchors;
	else
		ft->nanchors -= t->nanchors;
	t->linked = link;
}

static void anchors_drop(struct fsnw *w, struct fantree *t, bool park)
{
	if (t->linked)
		anchors_link(&w->trees.fan, t, false);
	for (size_t i = 0; i < t->nanchors; i++) {
		strref_put(t->anchors[i].report);
		kwatch_fs_release(w, t->holds[i], park);
	}
	t->nanchors = 0;
}

static void tree_free_mem(struct fantree *t)
{
	strref_put(t->view_path);
	mem_free(t->anchors);
	mem_free(t->holds);
	mem_free(t);
}

/*
 * One anchor of t: hold the filesystem mark of (dirfd, path), and place
 * the directory in its view. 1: not possible here (the walk must do it).
 */
static int anchor_make(struct fsnw *w, struct fantree *t, int dirfd, const char *path,
		       uint32_t flags, struct strref *report, bool *older)
{
	struct fanchor *a = &t->anchors[t->nanchors];
	struct fview *v;
	struct fnode *n;
	struct kkey key;
	bool o = false;
	int ret;

	ret = kwatch_fs_hold(w, dirfd, path, t->lw->mask | FANTREE_KMASK, flags, &key,
			     &t->holds[t->nanchors], &o);
	if (ret == -EOPNOTSUPP)
		return 1;
	if (ret < 0)
		return ret;
	ret = view_of(w, &key, &v);
	if (ret == 0)
		ret = resolve(w, v, key.bytes, key.len, &n);
	if (ret == 0 && n->state != FN_LINKED)
		ret = 1; /* its view's mount does not show it */
	if (ret < 0 && ret != -ENOMEM)
		ret = 1;
	if (ret) {
		kwatch_fs_release(w, t->holds[t->nanchors], false);
		return ret;
	}
	*older |= o;
	a->node = n;
	a->owner = t;
	a->report = strref_get(report);
	a->next = NULL;
	t->nanchors++;
	return 0;
}

/* Room for one more anchor (t's anchors not in their nodes). */
static int anchors_grow(struct fantree *t)
{
	struct fanchor *a = mem_realloc(t->anchors, (t->nanchors + 1) * sizeof(*a));
	struct kwatch **h;

	if (!a)
		return -ENOMEM;
	t->anchors = a;
	h = mem_realloc(t->holds, (t->nanchors + 1) * sizeof(*h));
	if (!h)
		return -ENOMEM;
	t->holds = h;
	return 0;
}

/*
 * An anchor for the mount m below the tree's directory, whose path is root
 * (rlen bytes) in this process. 1: a mount this cannot watch.
 */
static int anchor_mount(struct fsnw *w, struct fantree *t, const char *root, size_t rlen,
			const struct mount_entry *m, bool *older)
{
	const struct strref *base = t->anchors[0].report;
	size_t skip;
	struct strref *report;
	int ret;

	while (rlen > 1 && root[rlen - 1] == '/')
		rlen--;
	skip = rlen == 1 ? 0 : rlen;
	if ((t->lw->flags & FSNW_WATCH_ONE_FS) && m->dev != t->dev)
		return 0;
	for (size_t i = 1; i < t->nanchors; i++)
		if (t->anchors[i].mnt_id == m->id)
			return 0; /* met already */
	ret = anchors_grow(t);
	report = ret ? NULL : strref_join(base, m->path + skip + 1, m->len - skip - 1);
	if (!report)
		return -ENOMEM;
	ret = anchor_make(w, t, AT_FDCWD, m->path, FSNW_WATCH_DONT_FOLLOW, report, older);
	strref_put(report);
	if (ret < 0 && ret != -ENOMEM)
		ret = 1;
	if (ret)
		return ret;
	t->anchors[t->nanchors - 1].mnt_id = m->id;
	/* A bind mount of a directory already in the tree: it is reported
	 * once, at its own place. */
	if (fcache_below(t->anchors[0].node, t->anchors[t->nanchors - 1].node)) {
		strref_put(t->anchors[t->nanchors - 1].report);
		kwatch_fs_release(w, t->holds[--t->nanchors], false);
	}
	return 0;
}

/* Is the mount at i hidden by one stacked on the same point after it? */
static bool stacked_over(const struct mount_table *tab, size_t i)
{
	for (size_t j = i + 1; j < tab->n; j++)
		if (tab->e[j].len == tab->e[i].len && !memcmp(tab->e[j].path, tab->e[i].path,
							      tab->e[i].len))
			return true;
	return false;
}

/* Anchors for the filesystems mounted below the tree's directory. */
static int anchor_mounts(struct fsnw *w, struct fantree *t, const char *abs, size_t len,
			 bool *older)
{
	struct mount_table tab;
	int ret = mountinfo_read(-1, &tab, &w->st.sys_other);

	for (size_t i = 0; ret == 0 && i < tab.n; i++) {
		const struct mount_entry *m = &tab.e[i];

		if (mountinfo_below(m->path, m->len, abs, len) && !stacked_over(&tab, i))
			ret = anchor_mount(w, t, abs, len, m, older);
	}
	mountinfo_free(&tab);
	return ret;
}

/* The anchor at i goes (t's anchors not in their nodes). */
static void anchor_unmake(struct fsnw *w, struct fantree *t, size_t i)
{
	strref_put(t->anchors[i].report);
	kwatch_fs_release(w, t->holds[i], false);
	t->nanchors--;
	memmove(&t->anchors[i], &t->anchors[i + 1], (t->nanchors - i) * sizeof(*t->anchors));
	memmove(&t->holds[i], &t->holds[i + 1], (t->nanchors - i) * sizeof(*t->holds));
}

void fantree_mount(struct fsnw *w, struct fantree *t, const struct mount_entry *m,
		   bool appeared)
{
	struct fantrees *ft = &w->trees.fan;
	const struct strref *root = t->view_path;
	bool older = false;

	if (t->ended || !t->linked || !mountinfo_below(m->path, m->len, root->s, root->len))
		return;
	/* What that path holds changed wholesale, without events; where the
	 * directories near it are, as the view's mount shows them, too. */
	place_batch(w, false);
	handle_overflow(w, OVERFLOW_MOUNT);
	fcache_forget(&ft->cache);
	anchors_link(ft, t, false);
	if (appeared) {
		/* A mount this cannot watch is left out: the overflow said so.
		 * The lock stays held for the mark: the tree is half made. */
		kwatch_hold_lock(&w->kwatches, true);
		(void)anchor_mount(w, t, root->s, root->len, m, &older);
		kwatch_hold_lock(&w->kwatches, false);
	} else {
		for (size_t i = 1; i < t->nanchors; i++) {
			if (t->anchors[i].mnt_id == m->id) {
				anchor_unmake(w, t, i);
				break;
			}
		}
	}
	anchors_link(ft, t, true);
	fcache_invalidate(&ft->cache);
}

int fantree_add(struct fsnw *w, struct watch *lw, struct fantree **out)
{
	struct fantrees *ft = &w->trees.fan;
	char abs[PATH_MAX];
	struct fantree *t;
	struct stat st;
	bool older = false;
	ssize_t n;
	int fd, ret;

	if (!w->be->mount_fd || !w->be->cover)
		return 1;
	/* The directory itself, once: everything below is learnt through it,
	 * not through its path, which may change. */
	fd = sys_openat(&w->st.sys_other, AT_FDCWD, lw->path->s,
			O_PATH | O_DIRECTORY |
			(lw->flags & FSNW_WATCH_DONT_FOLLOW ? O_NOFOLLOW : 0));
	if (fd < 0)
		return fd;
	n = fd_path(w, fd, abs, sizeof(abs));
	/* No /proc to name directories with: the walk can do without. */
	ret = n < 0 ? 1 : sys_fstat(&w->st.sys_other, fd, &st);
	t = ret ? NULL : mem_zalloc(sizeof(*t));
	if (!ret && t) {
		t->lw = lw;
		t->anchors = mem_zalloc(sizeof(*t->anchors));
		t->holds = mem_zalloc(sizeof(*t->holds));
	}
	if (!ret && (!t || !t->anchors || !t->holds))
		ret = -ENOMEM;
	if (!ret)
		ret = anchor_make(w, t, fd, ".", 0, lw->path, &older);
	sys_close(&w->st.sys_other, fd);
	if (!ret) {
		t->dev = st.st_dev;
		ret = anchor_mounts(w, t, abs, (size_t)n, &older);
	}
	if (!ret) {
		t->view_path = fcache_view_path(&ft->cache, t->anchors[0].node);
		if (!t->view_path)
			ret = -ENOMEM;
	}
	if (ret) {
		if (t) {
			anchors_drop(w, t, false);
			tree_free_mem(t);
		}
		return ret;
	}
	anchors_link(ft, t, true);
	list_init(&t->ended_node);
	t->from_seq = UINT64_MAX; /* no MOVED_FROM heard yet */
	list_add_tail(&t->node, &ft->all);
	if (older) {
		t->armed_seq = NOT_ARMED;
		ft->npending++;
	} else {
		t->armed_seq = ft->seq;
	}
	*out = t;
	return 0;
}

static void tree_unlink(struct fantrees *ft, struct fantree *t)
{
	list_del(&t->node);
	list_del(&t->ended_node);
	if (t->armed_seq == NOT_ARMED)
		ft->npending--;
}

/* The last tree went: what the cache knew serves nobody. */
static void maybe_reset(struct fantrees *ft)
{
	if (!list_empty(&ft->all))
		return;
	late_free(ft);
	batch_free(ft);
	fanlist_fini(ft);
	fanmerge_fini(ft);
	fcache_fini(&ft->cache);
	fcache_init(&ft->cache, ft->cache.max);
}

/*
 * The trees left hold fs: if they alone do (no walked tree's directory is
 * covered by it), its mask need be no wider than theirs. A wider tree gone
 * would otherwise leave every outside event of its kinds waking the reader.
 */
static void narrow_mark(struct fsnw *w, struct kwatch *fs)
{
	struct fantrees *ft = &w->trees.fan;
	uint32_t mask = 0;
	size_t holds = 0;
	struct list *pos;

	for (pos = ft->all.next; pos != &ft->all; pos = pos->next) {
		struct fantree *t = list_entry(pos, struct fantree, node);

		for (size_t i = 0; i < t->nanchors; i++) {
			if (t->holds[i] == fs) {
				holds++;
				mask |= t->lw->mask | FANTREE_KMASK;
			}
		}
	}
	if (holds && holds == kwatch_fs_of(fs)->ncovered)
		kwatch_fs_narrow(w, fs, mask);
}

void fantree_remove(struct fsnw *w, struct fantree *t, bool park)
{
	struct fantrees *ft = &w->trees.fan;
	struct kwatch *left[4];
	size_t nleft = 0;

	tree_unlink(ft, t);
	fanlist_forget_tree(ft, t);
	/* The marks that outlive the tree (others hold them): at most a few. */
	for (size_t i = 0; i < t->nanchors && nleft < 4; i++) {
		size_t mine = 0, k;

		for (k = 0; k < nleft && left[k] != t->holds[i]; k++)
			;
		for (size_t j = 0; j < t->nanchors; j++)
			mine += t->holds[j] == t->holds[i];
		if (k == nleft && kwatch_fs_of(t->holds[i])->ncovered > mine)
			left[nleft++] = t->holds[i];
	}
	anchors_drop(w, t, park);
	tree_free_mem(t);
	for (size_t k = 0; k < nleft; k++)
		narrow_mark(w, left[k]);
	maybe_reset(ft);
}

void fantree_free(struct fantree *t)
{
	/* The kernel-watch table is gone already: the holds are not ours to
	 * give back; the cache, whose nodes pointed to the anchors, went
	 * before (fantrees_fini), so nothing looks at them. */
	for (size_t i = 0; i < t->nanchors; i++)
		strref_put(t->anchors[i].report);
	tree_free_mem(t);
}
