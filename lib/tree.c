/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "handle.h"
#include "tree.h"

#define DENTS_BUF 32768
#define TREE_DEPTH_MAX 2048 /* PATH_MAX ends a tree before this does */

struct tree {
	struct list node;    /* in trees.all */
	struct watch *lw;    /* the tree watch */
	struct fantree *fan; /* a tree without a walk: everything else is unused */
	struct htab by_path; /* its links, by path */
	/* A relative root is resolved against the directory current at the
	 * add: new directories found later must not depend on a chdir since. */
	struct strref *abs_root; /* NULL when the root path is absolute */
	struct link *root;
	dev_t root_dev;      /* FSNW_WATCH_ONE_FS */
	uint32_t kmask;      /* the caller's mask and what following directories needs */
	unsigned moving;     /* links with a MOVED_FROM awaiting its MOVED_TO or MOVE_SELF */
};

/*
 * A new directory seen during a drain is walked once the drain is over:
 * attaching inside routing would walk while the read buffer is being
 * decoded, and a walk needs a drain of its own to end. Renames and
 * departures need no syscall and are applied as their events are read, so
 * the events that follow them already carry the right paths.
 */
enum job_kind {
	JOB_NEW,      /* created: watch it and report what it already holds */
	JOB_MOVED_IN, /* moved in from outside: watch it */
};

struct job {
	struct list node;
	struct watch *lw;
	enum job_kind kind;
	bool failed;         /* a walk of it failed: FSNW_OVERFLOW was raised */
	struct strref *path; /* the directory */
};

/* Scratch shared by one walk. */
struct walk {
	struct fsnw *w;
	struct watch *lw;
	struct tree *t;
	bool synthetic;
	unsigned char *dents;
};

static uint64_t path_hash(const char *s, size_t len)
{
	return hash_bytes(s, len, 0x7472);
}

static struct link *find_link(const struct tree *t, const char *s, size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &t->by_path, path_hash(s, len)) {
		struct link *l = container_of(n, struct link, tnode);

		if (l->path->len == len && memcmp(l->path->s, s, len) == 0)
			return l;
	}
	return NULL;
}

static void index_link(struct tree *t, struct link *l)
{
	htab_insert(&t->by_path, &l->tnode, path_hash(l->path->s, l->path->len));
}

/* A directory reachable twice (bind mounts) is watched once per tree. */
static bool kw_has_other_link(const struct link *l)
{
	struct list *pos;

	for (pos = l->kw->links.next; pos != &l->kw->links; pos = pos->next) {
		const struct link *o = list_entry(pos, struct link, knode);

		if (o != l && o->watch == l->watch)
			return true;
	}
	return false;
}

static bool vanished(int err)
{
	return err == -ENOENT || err == -ENOTDIR || err == -ELOOP;
}

/*
 * Attach one directory of the tree; *out is NULL when it is skipped: gone
 * already, or reachable twice (bind mounts) and watched once per tree. A
 * link left at the same path by a directory since replaced gives way.
 */
static int attach_dir(struct walk *wk, struct strref *path, const struct strref *real,
		      uint32_t flags, struct link **out)
{
	struct link *l, *stale;
	int ret;

	*out = NULL;
	ret = htab_reserve(&wk->t->by_path, 1);
	if (ret < 0)
		return ret;
	/* FSNW_WATCH_TREE: a backend with filesystem marks may cover it. */
	ret = kwatch_attach(wk->w, wk->lw, AT_FDCWD, real->s, wk->t->kmask,
			    flags | FSNW_WATCH_ONLYDIR | FSNW_WATCH_TREE, path, &l);
	if (ret < 0)
		return vanished(ret) ? 0 : ret;
	if (kw_has_other_link(l)) {
		kwatch_undo(wk->w, l);
		return 0;
	}
	stale = find_link(wk->t, path->s, path->len);
	if (stale && stale != wk->t->root) {
		htab_remove(&wk->t->by_path, &stale->tnode);
		kwatch_detach(wk->w, stale, false);
	}
	index_link(wk->t, l);
	*out = l;
	return 0;
}

static void synthetic_create(struct walk *wk, struct link *l, const char *name, bool isdir)
{
	uint32_t mask = FSNW_CREATE | FSNW_SYNTHETIC | (isdir ? FSNW_ISDIR : 0);

	if (!(wk->lw->mask & FSNW_CREATE))
		return;
	queue_push(wk->w->q, &wk->lw->qo, l->path, mask, 0, name, strlen(name), 0);
	wk->w->st.events_synthetic++;
}

/* Names of the subdirectories of fd, NUL-separated; reports the rest if synthetic. */
static int read_dir(struct walk *wk, int fd, struct link *l, char **names, size_t *len)
{
	size_t cap = 0;

	*names = NULL;
	*len = 0;
	for (;;) {
		ssize_t n = getdents64(fd, wk->dents, DENTS_BUF);

		wk->w->st.sys_walk++;
		if (n < 0)
			return errno == ENOENT ? 0 : -errno; /* removed while we read */
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(void *)(wk->dents + off);
			const char *name = d->d_name;
			bool isdir = d->d_type == DT_DIR;

			off += d->d_reclen;
			if (!strcmp(name, ".") || !strcmp(name, ".."))
				continue;
			if (d->d_type == DT_UNKNOWN) {
				struct stat st;

				wk->w->st.sys_walk++;
				if (fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
					continue; /* vanished */
				isdir = S_ISDIR(st.st_mode);
			}
			if (wk->synthetic)
				synthetic_create(wk, l, name, isdir);
			if (!isdir)
				continue;
			size_t nl = strlen(name) + 1;

			if (*len + nl > cap) {
				size_t ncap = cap ? cap * 2 : 256;
				char *p;

				while (ncap < *len + nl)
					ncap *= 2;
				p = mem_realloc(*names, ncap);
				if (!p)
					return -ENOMEM;
				*names = p;
				cap = ncap;
			}
			memcpy(*names + *len, name, nl);
			*len += nl;
		}
	}
}

/*
 * Watch the directory `name` under parentfd and, depth first, everything
 * below it. path is what its events report, real the path that resolves it
 * (the same unless the root was relative). Entries that vanish are skipped.
 */
static int walk(struct walk *wk, int parentfd, const char *name, struct strref *path,
		struct strref *real, uint32_t flags, int depth)
{
	char *names = NULL;
	size_t len = 0;
	struct link *l;
	int fd, ret;

	if (depth > TREE_DEPTH_MAX)
		return -ELOOP;
	fd = openat(parentfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
				    (depth || (flags & FSNW_WATCH_DONT_FOLLOW) ? O_NOFOLLOW : 0));
	wk->w->st.sys_walk++;
	if (fd < 0)
		return depth && vanished(-errno) ? 0 : -errno;
	if (wk->lw->flags & FSNW_WATCH_ONE_FS) {
		struct stat st;

		wk->w->st.sys_walk++;
		if (fstat(fd, &st) < 0) {
			ret = -errno;
			goto out;
		}
		if (!depth)
			wk->t->root_dev = st.st_dev;
		else if (st.st_dev != wk->t->root_dev) {
			ret = 0;
			goto out;
		}
	}
	/* Below the root, symlinks are never followed. */
	ret = attach_dir(wk, path, real,
			 depth ? FSNW_WATCH_DONT_FOLLOW | (flags & FSNW_WATCH_EXCL_UNLINK) : flags,
			 &l);
	if (ret < 0 || !l) {
		/* The root must be watched; a subdirectory may vanish. */
		if (!depth && !ret)
			ret = -ENOENT;
		goto out;
	}
	if (!depth)
		wk->t->root = l;
	l->walk_gen = wk->w->trees.window_gen;
	ret = read_dir(wk, fd, l, &names, &len);
	for (size_t off = 0; ret == 0 && off < len; off += strlen(names + off) + 1) {
		const char *sname = names + off;
		struct strref *sub = strref_join(path, sname, strlen(sname));
		struct strref *subreal = real == path ? strref_get(sub) :
				sub ? strref_join(real, sname, strlen(sname)) : NULL;

		ret = sub && subreal ? walk(wk, fd, sname, sub, subreal, flags, depth + 1) : -ENOMEM;
		strref_put(sub);
		strref_put(subreal);
	}
out:
	mem_free(names);
	close(fd);
	wk->w->st.sys_walk++;
	return ret;
}

/* The path that resolves a directory of the tree, whatever the current directory. */
static struct strref *real_path(const struct watch *lw, struct strref *path)
{
	if (!lw->tree->abs_root)
		return strref_get(path);
	return strref_rebase(path, lw->path->len, lw->tree->abs_root);
}

static int walk_from(struct fsnw *w, struct watch *lw, struct strref *path, bool synthetic,
		     int depth)
{
	struct walk wk = { w, lw, lw->tree, synthetic, NULL };
	struct strref *real = real_path(lw, path);
	int ret = -ENOMEM;

	wk.dents = mem_alloc(DENTS_BUF);
	if (wk.dents && real)
		ret = walk(&wk, AT_FDCWD, real->s, path, real,
			   lw->flags & (FSNW_WATCH_DONT_FOLLOW | FSNW_WATCH_EXCL_UNLINK), depth);
	mem_free(wk.dents);
	strref_put(real);
	return ret;
}

static void unindex_and_detach(struct fsnw *w, struct tree *t, struct link *l, bool park)
{
	htab_remove(&t->by_path, &l->tnode);
	if (t->root == l)
		t->root = NULL;
	kwatch_detach(w, l, park);
}

static void cancel_jobs_in(struct list *jobs, const struct watch *lw)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, jobs) {
		struct job *j = list_entry(pos, struct job, node);

		if (j->lw != lw)
			continue;
		list_del(&j->node);
		strref_put(j->path);
		mem_free(j);
	}
}

static void cancel_jobs(struct fsnw *w, const struct watch *lw)
{
	cancel_jobs_in(&w->trees.work, lw);
	cancel_jobs_in(&w->trees.retry, lw);
}

static void tree_free_struct(struct watch *lw)
{
	struct tree *t = lw->tree;

	list_del(&t->node);
	htab_fini(&t->by_path);
	strref_put(t->abs_root);
	mem_free(t);
	lw->tree = NULL;
}

void tree_free(struct watch *lw)
{
	if (!lw->tree)
		return;
	if (lw->tree->fan)
		fantree_free(lw->tree->fan);
	tree_free_struct(lw);
}

void tree_remove(struct fsnw *w, struct watch *lw, bool park)
{
	struct tree *t = lw->tree;
	struct list *pos, *tmp;

	if (!t)
		return;
	if (t->fan) {
		fantree_remove(w, t->fan, park);
		tree_free_struct(lw);
		return;
	}
	cancel_jobs(w, lw);
	list_for_each_safe(pos, tmp, &lw->links)
		unindex_and_detach(w, t, list_entry(pos, struct link, wnode), park);
	tree_free_struct(lw);
}

/* Undo a tree add exactly: created marks go, revived ones park again. */
void tree_undo(struct fsnw *w, struct watch *lw)
{
	struct tree *t = lw->tree;
	struct list *pos, *tmp;

	if (t->fan) { /* no link of its own to take back */
		tree_remove(w, lw, false);
		return;
	}
	list_for_each_safe(pos, tmp, &lw->links) {
		struct link *l = list_entry(pos, struct link, wnode);

		htab_remove(&t->by_path, &l->tnode);
		kwatch_undo(w, l);
	}
	t->root = NULL;
	tree_remove(w, lw, false);
}

static int absolute_root(struct tree *t, const struct strref *path)
{
	char *cwd = getcwd(NULL, 0);
	struct strref *c;

	if (!cwd)
		return -errno;
	c = strref_new(cwd, strlen(cwd));
	free(cwd);
	t->abs_root = c ? strref_join(c, path->s, path->len) : NULL;
	strref_put(c);
	return t->abs_root ? 0 : -ENOMEM;
}

/*
 * A walk opens, reads and closes directories it has just watched (the mark
 * must come first, or entries made meanwhile go unseen), and the kernel
 * reports those reads as OPEN, ACCESS and CLOSE_NOWRITE with ISDIR, on the
 * directory and on its parent. They are the library's, not the caller's:
 * while a walk window is open, such read-only events for a directory read
 * in it are dropped, and the window closes after a complete drain has read
 * every event the walk caused (trees_after_drain). A read by someone else
 * in the same instant is concurrent with the add and may go too.
 */
static void window_open(struct trees *ts)
{
	if (!ts->window_open) {
		ts->window_open = true;
		ts->window_gen++;
	}
}

/* A tree directory of kw was read in the open window. */
static bool read_in_window(const struct trees *ts, const struct kwatch *kw)
{
	const struct list *pos;

	for (pos = kw->links.next; pos != &kw->links; pos = pos->next) {
		const struct link *o = list_entry(pos, struct link, knode);

		if (o->watch->tree && o->walk_gen == ts->window_gen)
			return true;
	}
	return false;
}

bool tree_walk_echo(const struct trees *ts, const struct link *l, const struct kevent *ev)
{
	const uint32_t reads = FSNW_OPEN | FSNW_ACCESS | FSNW_CLOSE_NOWRITE;
	char path[PATH_MAX + NAME_MAX + 2];
	const struct link *child;

	if (!ts->window_open || !(ev->mask & FSNW_ISDIR) || (ev->mask & ~(reads | FSNW_ISDIR)))
		return false;
	if (!ev->name)
		return read_in_window(ts, l->kw);
	if (l->path->len + 1 + ev->namelen >= sizeof(path))
		return false;
	memcpy(path, l->path->s, l->path->len);
	path[l->path->len] = '/';
	memcpy(path + l->path->len + 1, ev->name, ev->namelen);
	child = find_link(l->watch->tree, path, l->path->len + 1 + ev->namelen);
	return child && read_in_window(ts, child->kw);
}

int tree_add(struct fsnw *w, struct watch *lw)
{
	struct tree *t = mem_zalloc(sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	htab_init(&t->by_path);
	t->kmask = lw->mask | TREE_KMASK;
	list_add_tail(&t->node, &w->trees.all);
	t->lw = lw;
	lw->tree = t;
	ret = fantree_add(w, lw, &t->fan);
	if (ret <= 0) {
		if (ret < 0)
			tree_remove(w, lw, false);
		return ret;
	}
	t->fan = NULL;
	if (lw->path->s[0] != '/') {
		ret = absolute_root(t, lw->path);
		if (ret < 0) {
			tree_remove(w, lw, false);
			return ret;
		}
	}
	/* The caller drains completely before it returns the wid, which
	 * closes the window. */
	window_open(&w->trees);
	ret = walk_from(w, lw, lw->path, false, 0);
	if (ret < 0) {
		tree_undo(w, lw);
		return ret;
	}
	return 0;
}

bool tree_link_dropped(struct fsnw *w, struct link *l)
{
	struct tree *t = l->watch->tree;

	if (t->root == l)
		return true;
	unindex_and_detach(w, t, l, false);
	return false;
}

/*
 * Out of memory for a new subdirectory of l before a job could hold it: the
 * caller hears of the gap now, and l is read again for subdirectories the
 * tree does not know after a later drain.
 */
static void need_rescan(struct fsnw *w, struct link *l)
{
	l->rescan = true;
	w->trees.rescan = true;
	handle_overflow(w, OVERFLOW_UNWATCHED);
}

/* Follow the new subdirectory path of l (the job takes the reference). */
static void add_job(struct fsnw *w, struct link *l, enum job_kind kind, struct strref *path)
{
	struct job *j = mem_zalloc(sizeof(*j));

	if (!j) {
		strref_put(path);
		need_rescan(w, l);
		return;
	}
	j->lw = l->watch;
	j->kind = kind;
	j->path = path;
	list_add_tail(&j->node, &w->trees.work);
}

static void forget_subtree(struct fsnw *w, struct watch *lw, const struct strref *dir);
static void rename_subtree(struct fsnw *w, struct watch *lw, const struct strref *from,
			   const struct strref *to);

/* The link of this tree whose MOVED_FROM carried cookie, if one waits. */
static struct link *moving_link(struct watch *lw, uint32_t cookie)
{
	struct list *pos;

	if (!lw->tree->moving)
		return NULL;
	for (pos = lw->links.next; pos != &lw->links; pos = pos->next) {
		struct link *l = list_entry(pos, struct link, wnode);

		if (l->move_cookie == cookie)
			return l;
	}
	return NULL;
}

static void settle_move(struct tree *t, struct link *l)
{
	l->move_cookie = 0;
	t->moving--;
}

/*
 * A rename makes MOVED_FROM on the old parent, MOVED_TO on the new one if it
 * is watched, then MOVE_SELF on the directory itself, in that order in our
 * queue. So a MOVED_FROM marks the child; a MOVED_TO with its cookie renames
 * it within the tree; a MOVE_SELF that finds the mark still there means the
 * MOVED_TO went elsewhere: the directory left the tree. l may be freed.
 */
void tree_note_event(struct fsnw *w, struct link *l, const struct kevent *ev)
{
	struct watch *lw = l->watch;
	struct tree *t = lw->tree;
	struct strref *path;
	struct link *child;

	if ((ev->mask & FSNW_MOVE_SELF) && !ev->name) {
		if (l->move_cookie && l != t->root) {
			settle_move(t, l);
			forget_subtree(w, lw, l->path);
		}
		return;
	}
	if (!ev->name || !(ev->mask & FSNW_ISDIR) ||
	    !(ev->mask & (FSNW_CREATE | FSNW_MOVED_FROM | FSNW_MOVED_TO)))
		return;
	path = strref_join(l->path, ev->name, ev->namelen);
	if (!path) {
		if (!(ev->mask & FSNW_MOVED_FROM))
			need_rescan(w, l);
		return;
	}
	if (ev->mask & FSNW_CREATE) {
		add_job(w, l, JOB_NEW, path);
		return;
	}
	if (ev->mask & FSNW_MOVED_FROM) {
		child = find_link(t, path->s, path->len);
		if (child && child != t->root) {
			if (!child->move_cookie)
				t->moving++;
			child->move_cookie = ev->cookie ? ev->cookie : 1;
		}
		strref_put(path);
		return;
	}
	child = ev->cookie ? moving_link(lw, ev->cookie) : NULL;
	if (child) {
		settle_move(t, child);
		rename_subtree(w, lw, child->path, path);
		strref_put(path);
	} else {
		add_job(w, l, JOB_MOVED_IN, path);
	}
}

static bool under(const struct strref *p, const struct strref *dir)
{
	return p->len >= dir->len && memcmp(p->s, dir->s, dir->len) == 0 &&
	       (p->len == dir->len || p->s[dir->len] == '/');
}

static void forget_subtree(struct fsnw *w, struct watch *lw, const struct strref *dir)
{
	struct strref *gone = strref_get((struct strref *)dir); /* dir may be a link's path */
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &lw->links) {
		struct link *l = list_entry(pos, struct link, wnode);

		if (l == lw->tree->root || !under(l->path, gone))
			continue;
		if (l->move_cookie)
			settle_move(lw->tree, l);
		unindex_and_detach(w, lw->tree, l, true);
	}
	strref_put(gone);
}

/* Give every link at or below `from` its path under `to`. */
static void rename_subtree(struct fsnw *w, struct watch *lw, const struct strref *from_path,
			   const struct strref *to)
{
	struct strref *from = strref_get((struct strref *)from_path); /* a link's, replaced below */
	struct tree *t = lw->tree;
	struct list *pos;

	for (pos = lw->links.next; pos != &lw->links; pos = pos->next) {
		struct link *l = list_entry(pos, struct link, wnode);
		struct strref *np;

		if (l == t->root || !under(l->path, from))
			continue;
		np = strref_rebase(l->path, from->len, to);
		if (!np) {
			handle_overflow(w, OVERFLOW_UNWATCHED);
			continue;
		}
		htab_remove(&t->by_path, &l->tnode);
		strref_put(l->path);
		l->path = np;
		index_link(t, l);
	}
	strref_put(from);
}

/* Failures that a later try may not meet: resources, not permissions. */
static bool transient(int err)
{
	return err == -ENOMEM || err == -ENOSPC || err == -EMFILE || err == -ENFILE;
}

/*
 * Walk a job's directory. A walk that fails (other than because the
 * directory went) leaves events below it unseen, and raises FSNW_OVERFLOW.
 * A transient failure keeps the job on the retry list for the next drain;
 * the walk that finally succeeds raises FSNW_OVERFLOW again, as what
 * happened in between is lost and only a rescan from now on sees it all. A
 * directory the process may not read is not tried again on every read.
 */
static void run_job(struct fsnw *w, struct job *j)
{
	int ret = walk_from(w, j->lw, j->path, j->kind == JOB_NEW, 1);

	if (ret < 0 && !vanished(ret)) {
		if (!j->failed)
			handle_overflow(w, OVERFLOW_UNWATCHED);
		j->failed = true;
		if (transient(ret)) {
			list_add_tail(&j->node, &w->trees.retry);
			return;
		}
	}
	if (ret == 0 && j->failed)
		handle_overflow(w, OVERFLOW_UNWATCHED);
	strref_put(j->path);
	mem_free(j);
}

/* Read l's directory again and follow the subdirectories the tree lacks. */
static void rescan_link(struct fsnw *w, struct watch *lw, struct link *l)
{
	struct walk wk = { w, lw, lw->tree, false, NULL };
	struct strref *real = real_path(lw, l->path);
	char *names = NULL;
	size_t len = 0;
	int fd = -1, ret = -ENOMEM;

	wk.dents = mem_alloc(DENTS_BUF);
	if (wk.dents && real) {
		fd = openat(AT_FDCWD, real->s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		w->st.sys_walk++;
		ret = fd < 0 ? -errno : read_dir(&wk, fd, l, &names, &len);
	}
	for (size_t off = 0; ret == 0 && off < len; off += strlen(names + off) + 1) {
		struct strref *sub = strref_join(l->path, names + off, strlen(names + off));

		if (!sub)
			ret = -ENOMEM;
		else if (find_link(lw->tree, sub->s, sub->len))
			strref_put(sub);
		else
			add_job(w, l, JOB_NEW, sub);
	}
	if (ret == 0 || vanished(ret))
		l->rescan = false;
	else
		w->trees.rescan = true;
	if (fd >= 0) {
		close(fd);
		w->st.sys_walk++;
	}
	mem_free(names);
	mem_free(wk.dents);
	strref_put(real);
}

static void rescan_tree(struct fsnw *w, struct tree *t)
{
	struct watch *lw = t->lw;
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &lw->links) {
		struct link *l = list_entry(pos, struct link, wnode);

		if (l->rescan)
			rescan_link(w, lw, l);
	}
}

void trees_init(struct trees *ts, size_t cache_max)
{
	memset(ts, 0, sizeof(*ts));
	list_init(&ts->all);
	list_init(&ts->work);
	list_init(&ts->retry);
	fantrees_init(&ts->fan, cache_max);
}

void trees_fini(struct trees *ts)
{
	struct list *lists[] = { &ts->work, &ts->retry };

	for (size_t i = 0; i < 2; i++) {
		struct list *pos, *tmp;

		list_for_each_safe(pos, tmp, lists[i]) {
			struct job *j = list_entry(pos, struct job, node);

			list_del(&j->node);
			strref_put(j->path);
			mem_free(j);
		}
	}
	fantrees_fini(&ts->fan);
}

bool trees_busy(const struct trees *ts)
{
	return ts->window_open || ts->rescan || !list_empty(&ts->work) ||
	       !list_empty(&ts->retry) || fantrees_busy(&ts->fan);
}

bool trees_after_drain(struct fsnw *w, bool retry)
{
	struct trees *ts = &w->trees;
	struct list *pos;
	bool walked;

	ts->window_open = false;
	walked = fantrees_after_drain(w);
	/* What failed before gets one more try, once per drain call. */
	while (retry && !list_empty(&ts->retry)) {
		struct job *j = list_first(&ts->retry, struct job, node);

		list_del(&j->node);
		list_add_tail(&j->node, &ts->work);
	}
	if (ts->rescan) {
		ts->rescan = false;
		for (pos = ts->all.next; pos != &ts->all; pos = pos->next)
			rescan_tree(w, list_entry(pos, struct tree, node));
	}
	if (list_empty(&ts->work))
		return walked;
	window_open(ts);
	while (!list_empty(&ts->work)) {
		struct job *j = list_first(&ts->work, struct job, node);

		list_del(&j->node);
		run_job(w, j);
	}
	return true;
}
