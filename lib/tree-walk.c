/* SPDX-License-Identifier: MIT */
/*
 * The walks of tree watches. A walk takes a directory from its stack,
 * marks it, opens it by its path, lists it and closes it before the next:
 * one file descriptor, whatever the depth. The mark comes before the read
 * (what is made meanwhile is then seen by one or the other), and a
 * directory whose mark fails is never opened, so a failing directory
 * makes no event of ours (no OPEN or CLOSE_NOWRITE echo on its parent).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "tree-int.h"

#define DENTS_BUF 32768

bool walk_transient(int err)
{
	return err == -ENOMEM || err == -ENOSPC || err == -EMFILE || err == -ENFILE;
}

static bool vanished(int err)
{
	return err == -ENOENT || err == -ENOTDIR || err == -ELOOP;
}

static int push(struct walk *wk, struct strref *path, unsigned flags)
{
	if (wk->n == wk->cap) {
		size_t ncap = wk->cap ? wk->cap * 2 : 16;
		struct wdir *p = mem_realloc(wk->stack, ncap * sizeof(*p));

		if (!p) {
			strref_put(path);
			return -ENOMEM;
		}
		wk->stack = p;
		wk->cap = ncap;
	}
	wk->stack[wk->n].path = path;
	wk->stack[wk->n].flags = flags;
	wk->n++;
	return 0;
}

struct walk *walk_new(struct tree *t, enum walk_kind kind, struct strref *path,
		      unsigned flags)
{
	struct walk *wk = mem_zalloc(sizeof(*wk));

	if (!wk || push(wk, path, flags) < 0) {
		if (!wk)
			strref_put(path);
		mem_free(wk);
		return NULL;
	}
	list_init(&wk->node);
	wk->t = t;
	wk->kind = kind;
	return wk;
}

void walk_free(struct walk *wk)
{
	for (size_t i = 0; i < wk->n; i++)
		strref_put(wk->stack[i].path);
	strref_put(wk->redo.path);
	mem_free(wk->stack);
	mem_free(wk);
}

/* A directory reachable twice (bind mounts) is watched once per tree. */
static struct link *other_link(const struct link *l)
{
	struct list *pos;

	for (pos = l->kw->links.next; pos != &l->kw->links; pos = pos->next) {
		struct link *o = list_entry(pos, struct link, knode);

		if (o != l && o->watch == l->watch)
			return o;
	}
	return NULL;
}

/*
 * Attach one directory of the tree; *out is NULL when it is skipped: gone
 * already, or reachable twice (bind mounts) and watched once per tree. A
 * directory read again keeps its link. A link left at the same path by a
 * directory since replaced gives way.
 */
static int attach_dir(struct fsnw *w, struct walk *wk, const struct wdir *d,
		      const struct strref *real, uint32_t flags, struct link **out)
{
	struct tree *t = wk->t;
	struct link *l, *o, *stale;
	int ret;

	*out = NULL;
	ret = htab_reserve(&t->by_path, 1);
	if (ret < 0)
		return ret;
	/* FSNW_WATCH_TREE: a backend with filesystem marks may cover it. */
	ret = kwatch_attach(w, t->lw, AT_FDCWD, real->s, t->kmask,
			    flags | FSNW_WATCH_ONLYDIR | FSNW_WATCH_TREE, d->path, &l);
	if (ret < 0)
		return ret;
	o = other_link(l);
	if (o) {
		kwatch_undo(w, l);
		if ((d->flags & WDIR_REREAD) && o->path->len == d->path->len &&
		    !memcmp(o->path->s, d->path->s, d->path->len))
			*out = o;
		return 0;
	}
	stale = tree_find_link(t, d->path->s, d->path->len);
	if (stale && stale != t->root) {
		htab_remove(&t->by_path, &stale->tnode);
		kwatch_detach(w, stale, false);
	}
	tree_index_link(t, l);
	*out = l;
	return 0;
}

static void synthetic_create(struct fsnw *w, struct tree *t, struct link *l, const char *name,
			     size_t len, bool isdir)
{
	uint32_t mask = FSNW_CREATE | FSNW_SYNTHETIC | (isdir ? FSNW_ISDIR : 0);

	if (!(t->lw->mask & FSNW_CREATE))
		return;
	queue_push(w->q, &t->lw->qo, l->path, mask, 0, name, len, 0);
	w->st.events_synthetic++;
}

/* List fd (the directory of l): report its entries if synth, push its subdirectories. */
static int list_dir(struct fsnw *w, struct walk *wk, int fd, struct link *l, bool synth,
		    unsigned child_flags)
{
	unsigned char *dents = w->trees.dents;

	for (;;) {
		ssize_t n = getdents64(fd, dents, DENTS_BUF);

		w->st.sys_walk++;
		if (n < 0)
			return errno == ENOENT ? 0 : -errno; /* removed while we read */
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(dents + off);
			const char *name = e->d_name;
			size_t len = strlen(name);
			bool isdir = e->d_type == DT_DIR;
			struct strref *sub;

			off += e->d_reclen;
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			if (e->d_type == DT_UNKNOWN) {
				struct stat st;

				w->st.sys_walk++;
				if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
					continue; /* vanished */
				isdir = S_ISDIR(st.st_mode);
			}
			if (synth)
				synthetic_create(w, wk->t, l, name, len, isdir);
			if (!isdir)
				continue;
			sub = strref_join(l->path, name, len);
			if (!sub || push(wk, sub, child_flags) < 0)
				return -ENOMEM;
		}
	}
}

/*
 * The root's identity, to tell later whether its path still leads to it,
 * and (when mounts are followed) its path as mount points are spelt.
 */
static void root_opened(struct fsnw *w, struct tree *t, int fd)
{
	char proc[32], buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	w->st.sys_walk++;
	if (fstat(fd, &st) == 0) {
		t->root_dev = st.st_dev;
		t->root_ino = st.st_ino;
	}
	if (w->trees.mounts.check_fd < 0 || t->canon_root)
		return;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	n = readlink(proc, buf, sizeof(buf));
	w->st.sys_other++;
	/* Without it, mounts below this tree are not followed. */
	if (n > 0 && n < (ssize_t)sizeof(buf) && buf[0] == '/')
		t->canon_root = strref_new(buf, (size_t)n);
}

/* Flags of the subdirectories of a walk's directories. */
static unsigned child_flags(const struct walk *wk)
{
	return wk->kind == WALK_NEW || wk->kind == WALK_RESCAN ? WDIR_SYNTH : 0;
}

/*
 * Read one directory of the walk. 0 when it is done or skipped (gone, or
 * another filesystem under FSNW_WATCH_ONE_FS); -errno otherwise, with
 * d->flags telling whether it is linked already.
 */
static int walk_dir(struct fsnw *w, struct walk *wk, struct wdir *d)
{
	struct tree *t = wk->t;
	struct watch *lw = t->lw;
	bool root = d->flags & WDIR_ROOT;
	/* Below the root, symlinks are never followed. */
	bool nofollow = !root || (lw->flags & FSNW_WATCH_DONT_FOLLOW);
	uint32_t flags = (lw->flags & FSNW_WATCH_EXCL_UNLINK) |
			 (nofollow ? FSNW_WATCH_DONT_FOLLOW : 0);
	struct strref *real = tree_real_path(t, d->path);
	struct link *l;
	struct stat st;
	int fd, ret;

	if (!real)
		return -ENOMEM;
	if (!root && (lw->flags & FSNW_WATCH_ONE_FS)) {
		w->st.sys_walk++;
		if (fstatat(AT_FDCWD, real->s, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = -errno;
			goto out;
		}
		ret = 0;
		if (!S_ISDIR(st.st_mode) || st.st_dev != t->root_dev)
			goto out;
	}
	ret = attach_dir(w, wk, d, real, flags, &l);
	if (ret == 0 && !l)
		ret = root ? -ENOENT : 0;
	if (ret < 0 || !l)
		goto out;
	if (root)
		t->root = l;
	l->walk_gen = w->trees.window_gen;
	d->flags |= WDIR_REREAD;
	fd = openat(AT_FDCWD, real->s, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
				       (nofollow ? O_NOFOLLOW : 0));
	w->st.sys_walk++;
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	if (root)
		root_opened(w, t, fd);
	ret = list_dir(w, wk, fd, l, d->flags & WDIR_SYNTH, child_flags(wk));
	close(fd);
	w->st.sys_walk++;
out:
	strref_put(real);
	return ret;
}

static enum walk_result walk_steps(struct fsnw *w, struct walk *wk, unsigned *budget)
{
	while (wk->redo.path || wk->n) {
		struct wdir d;
		int ret;

		if (!*budget)
			return WALK_PAUSED;
		(*budget)--;
		if (wk->redo.path) {
			d = wk->redo;
			wk->redo.path = NULL;
		} else {
			d = wk->stack[--wk->n];
		}
		ret = walk_dir(w, wk, &d);
		if (!wk->started && vanished(ret))
			wk->top_vanished = true;
		wk->started = true;
		/* The root must be there; a directory below it may go. */
		if (ret < 0 && !(d.flags & WDIR_ROOT) && vanished(ret))
			ret = 0;
		if (ret == 0) {
			strref_put(d.path);
			continue;
		}
		if (wk->kind == WALK_ADD || walk_transient(ret)) {
			wk->redo = d;
			wk->err = ret;
			return WALK_FAILED;
		}
		/*
		 * A directory we may not read (EACCES, a path too long, ...):
		 * events below it would go unseen, which FSNW_OVERFLOW says. It
		 * is not tried again on every read; its siblings still are read.
		 */
		if (!wk->failed)
			handle_overflow(w, OVERFLOW_UNWATCHED);
		wk->failed = true;
		strref_put(d.path);
	}
	return WALK_DONE;
}

/*
 * A step holds the handle's lock throughout, mark calls included
 * (kwatch_hold_lock): the walk's state (its stack, the tree's path index, the
 * links it has made) must not change under it.
 */
enum walk_result walk_run(struct fsnw *w, struct walk *wk, unsigned *budget)
{
	enum walk_result res;

	kwatch_hold_lock(&w->kwatches, true);
	res = walk_steps(w, wk, budget);
	kwatch_hold_lock(&w->kwatches, false);
	return res;
}

static bool entry_under(const struct wdir *d, const struct strref *dir)
{
	return d->path && path_under(d->path, dir);
}

bool walk_has_under(const struct walk *wk, const struct strref *dir)
{
	if (entry_under(&wk->redo, dir))
		return true;
	for (size_t i = 0; i < wk->n; i++)
		if (entry_under(&wk->stack[i], dir))
			return true;
	return false;
}

static bool rebase_entry(struct wdir *d, const struct strref *from, const struct strref *to)
{
	struct strref *np;

	if (!entry_under(d, from))
		return true;
	np = strref_rebase(d->path, from->len, to);
	if (!np)
		return false;
	strref_put(d->path);
	d->path = np;
	return true;
}

bool walk_rebase(struct walk *wk, const struct strref *from, const struct strref *to)
{
	bool ok = rebase_entry(&wk->redo, from, to);

	for (size_t i = 0; i < wk->n; i++)
		ok &= rebase_entry(&wk->stack[i], from, to);
	return ok;
}

void walk_cancel_under(struct walk *wk, const struct strref *dir)
{
	size_t k = 0;

	if (entry_under(&wk->redo, dir)) {
		strref_put(wk->redo.path);
		wk->redo.path = NULL;
	}
	for (size_t i = 0; i < wk->n; i++) {
		if (entry_under(&wk->stack[i], dir))
			strref_put(wk->stack[i].path);
		else
			wk->stack[k++] = wk->stack[i];
	}
	wk->n = k;
}
