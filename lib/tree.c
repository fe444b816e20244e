/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "stats.h"
#include "tree-int.h"

#define DENTS_BUF 32768
/*
 * Directories one step of the walks reads before the engine drains again.
 * Reading a directory makes up to eight events of ours (OPEN, ACCESS and
 * CLOSE_NOWRITE, on the directory and on its parent), and the kernel queues
 * 16384 by default: a walk that read a wide tree in one go overflowed it
 * with its own echoes.
 */
#define TREE_STEP_DIRS 512
/* Retries: at the next drain, then after 10 ms, doubling up to 2 s. */
#define RETRY_FIRST_NS 10000000ull
#define RETRY_MAX_NS 2000000000ull

/*
 * A directory that walks had still to read (created or moved in, not yet
 * walked) was moved away: if the MOVED_TO of the same cookie comes in this
 * drain, they read it at its new path.
 */
struct dir_move {
	struct list node;
	uint32_t cookie;
	struct strref *path;
};

static uint64_t path_hash(const char *s, size_t len)
{
	return hash_bytes(s, len, 0x7472);
}

struct link *tree_find_link(const struct tree *t, const char *s, size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &t->by_path, path_hash(s, len)) {
		struct link *l = container_of(n, struct link, tnode);

		if (l->path->len == len && memcmp(l->path->s, s, len) == 0)
			return l;
	}
	return NULL;
}

void tree_index_link(struct tree *t, struct link *l)
{
	htab_insert(&t->by_path, &l->tnode, path_hash(l->path->s, l->path->len));
}

/* The path that resolves a directory of the tree, whatever the current directory. */
struct strref *tree_real_path(const struct tree *t, struct strref *path)
{
	if (!t->abs_root)
		return strref_get(path);
	return strref_rebase(path, t->lw->path->len, t->abs_root);
}

static void unindex_and_detach(struct fsnw *w, struct tree *t, struct link *l, bool park)
{
	htab_remove(&t->by_path, &l->tnode);
	if (t->root == l)
		t->root = NULL;
	kwatch_detach(w, l, park);
}

/* ---- the walks of a tree ---- */

/* Call fn on every walk of t, running or waiting to retry; fn may free it. */
static void for_each_walk(struct trees *ts, const struct tree *t,
			  bool (*fn)(struct walk *wk, void *arg), void *arg)
{
	struct list *lists[] = { &ts->walks, &ts->retry };

	for (size_t i = 0; i < 2; i++) {
		struct list *pos, *tmp;

		list_for_each_safe(pos, tmp, lists[i]) {
			struct walk *wk = list_entry(pos, struct walk, node);

			if (wk->t == t && !fn(wk, arg))
				return;
		}
	}
}

static bool cancel_one(struct walk *wk, void *arg)
{
	(void)arg;
	if (wk->t->adding == wk)
		wk->t->adding = NULL;
	list_del(&wk->node);
	walk_free(wk);
	return true;
}

struct lookup {
	const struct strref *dir;
	bool found;
};

static bool has_under(struct walk *wk, void *arg)
{
	struct lookup *q = arg;

	q->found = walk_has_under(wk, q->dir);
	return !q->found;
}

/* Have walks of t a directory at or below dir still to read? */
static bool pending_under(struct trees *ts, const struct tree *t, const struct strref *dir)
{
	struct lookup q = { dir, false };

	for_each_walk(ts, t, has_under, &q);
	return q.found;
}

static bool cancel_under(struct walk *wk, void *arg)
{
	walk_cancel_under(wk, arg);
	return true;
}

struct rebase {
	const struct strref *from, *to;
	bool ok;
};

static bool rebase_one(struct walk *wk, void *arg)
{
	struct rebase *r = arg;

	if (!walk_has_under(wk, r->from))
		return true;
	/*
	 * A directory moved in is listed by the caller, under the name its
	 * MOVED_TO gave: renamed before the walk read it, it may be gone from
	 * there already, so what it holds is reported instead.
	 */
	if (!wk->started && wk->kind == WALK_MOVED_IN) {
		wk->kind = WALK_NEW;
		wk->stack[0].flags |= WDIR_SYNTH;
	}
	r->ok &= walk_rebase(wk, r->from, r->to);
	return true;
}

/* Directories walks still had to read under from are now under to. */
static void rebase_pending(struct fsnw *w, struct tree *t, const struct strref *from,
			   const struct strref *to)
{
	struct rebase r = { from, to, true };

	for_each_walk(&w->trees, t, rebase_one, &r);
	if (!r.ok)
		handle_overflow(w, OVERFLOW_UNWATCHED);
}

static void end_tree(struct trees *ts, struct tree *t)
{
	if (t->ending)
		return;
	t->ending = true;
	ts->nending++;
	for_each_walk(ts, t, cancel_one, NULL);
}

/*
 * The tree's root directory was renamed. Its path, which every other path
 * of the tree extends, is not known any more: inotify tells no new name,
 * and nothing here holds the root open to ask (an open root would keep
 * its filesystem from being unmounted). So the tree cannot follow its
 * directories and ends, explicitly (FSNW_IGNORED after the MOVE_SELF). A
 * backend that can name the root again (fanotify, by its file handle)
 * would rebase the tree's paths here instead.
 */
static bool root_moved(struct fsnw *w, struct tree *t)
{
	(void)w;
	(void)t;
	return true;
}

/* Does the root path still lead to the tree's root directory? */
static bool root_still_there(struct fsnw *w, const struct tree *t)
{
	struct strref *real = tree_real_path(t, t->lw->path);
	struct stat st;
	int ret;

	if (!real)
		return true; /* cannot tell: keep it */
	ret = fstatat(AT_FDCWD, real->s, &st,
		      (t->lw->flags & FSNW_WATCH_DONT_FOLLOW) ? AT_SYMLINK_NOFOLLOW : 0);
	w->st.sys_walk++;
	strref_put(real);
	return ret == 0 && st.st_dev == t->root_dev && st.st_ino == t->root_ino;
}

/*
 * Out of memory for a new subdirectory of l before a walk could hold it:
 * the caller hears of the gap now, and l is read again for subdirectories
 * the tree does not know after a later drain.
 */
static void need_rescan(struct fsnw *w, struct link *l)
{
	l->rescan = true;
	w->trees.rescan = true;
	handle_overflow(w, OVERFLOW_UNWATCHED);
}

/* Follow the new subdirectory path of l (the walk takes the reference). */
static void add_walk(struct fsnw *w, struct link *l, enum walk_kind kind, struct strref *path)
{
	struct walk *wk = walk_new(l->watch->tree, kind, path,
				   kind == WALK_NEW ? WDIR_SYNTH : 0);

	if (!wk) {
		need_rescan(w, l);
		return;
	}
	list_add_tail(&wk->node, &w->trees.walks);
}

/* ---- life of a tree ---- */

static void free_moves(struct trees *ts, struct tree *t)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &t->moves) {
		struct dir_move *m = list_entry(pos, struct dir_move, node);

		list_del(&m->node);
		strref_put(m->path);
		mem_free(m);
		ts->nmoves--;
	}
}

static void tree_free_struct(struct trees *ts, struct watch *lw)
{
	struct tree *t = lw->tree;

	if (ts)
		free_moves(ts, t);
	if (t->ending && ts)
		ts->nending--;
	list_del(&t->node);
	htab_fini(&t->by_path);
	strref_put(t->abs_root);
	strref_put(t->canon_root);
	mem_free(t);
	lw->tree = NULL;
}

void tree_free(struct watch *lw)
{
	struct list *pos, *tmp;

	if (!lw->tree)
		return;
	if (lw->tree->fan)
		fantree_free(lw->tree->fan);
	/* Closing: the walks go with trees_fini, the rest here. */
	list_for_each_safe(pos, tmp, &lw->tree->moves) {
		struct dir_move *m = list_entry(pos, struct dir_move, node);

		strref_put(m->path);
		mem_free(m);
	}
	tree_free_struct(NULL, lw);
}

void tree_remove(struct fsnw *w, struct watch *lw, bool park)
{
	struct tree *t = lw->tree;
	struct list *pos, *tmp;

	if (!t)
		return;
	if (t->fan) {
		fantree_remove(w, t->fan, park);
		tree_free_struct(&w->trees, lw);
		return;
	}
	for_each_walk(&w->trees, t, cancel_one, NULL);
	list_for_each_safe(pos, tmp, &lw->links)
		unindex_and_detach(w, t, list_entry(pos, struct link, wnode), park);
	tree_free_struct(&w->trees, lw);
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
 * every event the step caused (trees_after_drain). A read by someone else
 * in the same instant is concurrent with the walk and may go too. A
 * directory the walk could not mark is never opened, so it makes none.
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
	child = tree_find_link(l->watch->tree, path, l->path->len + 1 + ev->namelen);
	return child && read_in_window(ts, child->kw);
}

static int dents_buffer(struct trees *ts)
{
	if (!ts->dents)
		ts->dents = mem_alloc(DENTS_BUF);
	return ts->dents ? 0 : -ENOMEM;
}

int tree_add(struct fsnw *w, struct watch *lw)
{
	struct trees *ts = &w->trees;
	struct tree *t = mem_zalloc(sizeof(*t));
	unsigned budget = TREE_STEP_DIRS;
	struct walk *wk;
	int ret;

	if (!t)
		return -ENOMEM;
	htab_init(&t->by_path);
	list_init(&t->moves);
	t->kmask = lw->mask | TREE_KMASK;
	list_add_tail(&t->node, &ts->all);
	t->lw = lw;
	lw->tree = t;
	/* On fanotify, where it can, a tree needs no walk (fantree.h): 0, it
	 * is set up; 1, it walks as on inotify. */
	/* Mounts made from now on are followed (before the table is read for
	 * the tree). Without /proc, they are not (libfsnwatch(7)). */
	if (ts->mounts.check_fd < 0)
		(void)mounts_open(&ts->mounts, &w->st);
	kwatch_hold_lock(&w->kwatches, true); /* as a walk: the tree is half made */
	ret = fantree_add(w, lw, &t->fan);
	kwatch_hold_lock(&w->kwatches, false);
	if (ret <= 0) {
		if (ret < 0)
			tree_remove(w, lw, false);
		return ret;
	}
	t->fan = NULL;
	ret = dents_buffer(ts);
	if (ret == 0 && lw->path->s[0] != '/')
		ret = absolute_root(t, lw->path);
	wk = ret < 0 ? NULL : walk_new(t, WALK_ADD, strref_get(lw->path), WDIR_ROOT);
	if (!wk) {
		tree_remove(w, lw, false);
		return ret < 0 ? ret : -ENOMEM;
	}
	t->adding = wk;
	list_add_tail(&wk->node, &ts->walks);
	/*
	 * The first step now: the root must be watched for the add to stand.
	 * The caller settles (drains completely) before it returns the wid,
	 * which closes the window and runs the rest of the walk in steps.
	 */
	window_open(ts);
	switch (walk_run(w, wk, &budget)) {
	case WALK_FAILED:
		ret = wk->err;
		tree_undo(w, lw);
		return ret;
	case WALK_DONE:
		cancel_one(wk, NULL);
		break;
	case WALK_PAUSED:
		break;
	}
	return 0;
}

int tree_add_result(struct watch *lw)
{
	struct tree *t = lw->tree;

	if (!t)
		return 0; /* gone already: the caller reads its FSNW_IGNORED */
	/* A settle cut short (a failed read): the walk goes on as any other,
	 * its failures reported as overflows. */
	if (t->adding) {
		t->adding->kind = WALK_MOVED_IN;
		t->adding = NULL;
	}
	return t->add_err;
}

bool tree_link_dropped(struct fsnw *w, struct link *l)
{
	struct tree *t = l->watch->tree;

	if (t->root == l)
		return true;
	unindex_and_detach(w, t, l, false);
	return false;
}

/* ---- what events say ---- */

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

/* An unwatched directory with walks pending below it moved away (path: ours now). */
static void note_dir_move(struct fsnw *w, struct tree *t, uint32_t cookie, struct strref *path)
{
	struct dir_move *m = mem_zalloc(sizeof(*m));

	if (!m) {
		/* Its MOVED_TO will walk it as moved in: what it holds that the
		 * walks owed the caller may go unreported. */
		handle_overflow(w, OVERFLOW_UNWATCHED);
		strref_put(path);
		return;
	}
	m->cookie = cookie;
	m->path = path;
	list_add_tail(&m->node, &t->moves);
	w->trees.nmoves++;
}

static struct dir_move *take_dir_move(struct trees *ts, struct tree *t, uint32_t cookie)
{
	struct list *pos;

	for (pos = t->moves.next; pos != &t->moves; pos = pos->next) {
		struct dir_move *m = list_entry(pos, struct dir_move, node);

		if (m->cookie == cookie) {
			list_del(&m->node);
			ts->nmoves--;
			return m;
		}
	}
	return NULL;
}

/*
 * A rename makes MOVED_FROM on the old parent, MOVED_TO on the new one if it
 * is watched, then MOVE_SELF on the directory itself, in that order in our
 * queue. So a MOVED_FROM marks the child; a MOVED_TO with its cookie renames
 * it within the tree; a MOVE_SELF that finds the mark still there means the
 * MOVED_TO went elsewhere: the directory left the tree. l may be freed.
 * Walks that had directories still to read at the old path follow them.
 */
bool tree_note_event(struct fsnw *w, struct link *l, const struct kevent *ev)
{
	struct watch *lw = l->watch;
	struct tree *t = lw->tree;
	struct strref *path;
	struct dir_move *m;
	struct link *child;

	if ((ev->mask & FSNW_MOVE_SELF) && !ev->name) {
		if (l == t->root)
			return root_moved(w, t);
		if (l->move_cookie) {
			settle_move(t, l);
			forget_subtree(w, lw, l->path);
		}
		return false;
	}
	if (!ev->name || !(ev->mask & FSNW_ISDIR) ||
	    !(ev->mask & (FSNW_CREATE | FSNW_MOVED_FROM | FSNW_MOVED_TO)))
		return false;
	path = strref_join(l->path, ev->name, ev->namelen);
	if (!path) {
		if (!(ev->mask & FSNW_MOVED_FROM))
			need_rescan(w, l);
		return false;
	}
	if (ev->mask & FSNW_CREATE) {
		add_walk(w, l, WALK_NEW, path);
		return false;
	}
	if (ev->mask & FSNW_MOVED_FROM) {
		child = tree_find_link(t, path->s, path->len);
		if (child && child != t->root) {
			if (!child->move_cookie)
				t->moving++;
			child->move_cookie = ev->cookie ? ev->cookie : 1;
		} else if (!child && ev->cookie && pending_under(&w->trees, t, path)) {
			note_dir_move(w, t, ev->cookie, path);
			return false;
		}
		strref_put(path);
		return false;
	}
	child = ev->cookie ? moving_link(lw, ev->cookie) : NULL;
	if (child) {
		settle_move(t, child);
		rename_subtree(w, lw, child->path, path);
		strref_put(path);
	} else if (ev->cookie && (m = take_dir_move(&w->trees, t, ev->cookie))) {
		rebase_pending(w, t, m->path, path);
		strref_put(m->path);
		mem_free(m);
		strref_put(path);
	} else {
		add_walk(w, l, WALK_MOVED_IN, path);
	}
	return false;
}

static void forget_subtree(struct fsnw *w, struct watch *lw, const struct strref *dir)
{
	struct strref *gone = strref_get((struct strref *)dir); /* dir may be a link's path */
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &lw->links) {
		struct link *l = list_entry(pos, struct link, wnode);

		if (l == lw->tree->root || !path_under(l->path, gone))
			continue;
		if (l->move_cookie)
			settle_move(lw->tree, l);
		unindex_and_detach(w, lw->tree, l, true);
	}
	for_each_walk(&w->trees, lw->tree, cancel_under, gone);
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

		if (l == t->root || !path_under(l->path, from))
			continue;
		np = strref_rebase(l->path, from->len, to);
		if (!np) {
			handle_overflow(w, OVERFLOW_UNWATCHED);
			continue;
		}
		htab_remove(&t->by_path, &l->tnode);
		strref_put(l->path);
		l->path = np;
		tree_index_link(t, l);
	}
	rebase_pending(w, t, from, to);
	strref_put(from);
}

/* ---- after a drain: the steps of the walks ---- */

static uint64_t retry_delay(unsigned tries)
{
	uint64_t d;

	if (tries <= 1)
		return 0;
	if (tries - 2 >= 8)
		return RETRY_MAX_NS;
	d = RETRY_FIRST_NS << (tries - 2);
	return d < RETRY_MAX_NS ? d : RETRY_MAX_NS;
}

/*
 * A walk finished. One that failed for want of resources before said so
 * with FSNW_OVERFLOW; it says so again now that it succeeded, as what
 * happened in between is lost and only a rescan from now on sees it all.
 * A walk whose first directory was not there may have met a tree whose
 * root was renamed away (or a directory above it): inotify says nothing of
 * those, so the root is checked, and a tree that lost it ends.
 */
static void walk_done(struct fsnw *w, struct walk *wk)
{
	struct tree *t = wk->t;

	if (wk->tries)
		handle_overflow(w, OVERFLOW_UNWATCHED);
	if (wk->top_vanished && wk->kind != WALK_ADD && !root_still_there(w, t)) {
		cancel_one(wk, NULL);
		end_tree(&w->trees, t);
		return;
	}
	cancel_one(wk, NULL);
}

/*
 * A walk stopped on a failure. The add's fails the add. Another failed for
 * want of resources (memory, fds, the watch limit): FSNW_OVERFLOW says that
 * events below the directory go unseen, and the walk goes on from there
 * later, at the next drain and then with a back-off, so that a reader is
 * not kept busy by a limit that stays.
 */
static void walk_failed(struct fsnw *w, struct walk *wk)
{
	struct trees *ts = &w->trees;
	struct tree *t = wk->t;

	list_del(&wk->node);
	if (wk->kind == WALK_ADD) {
		t->add_err = wk->err;
		t->adding = NULL;
		walk_free(wk);
		return;
	}
	if (!wk->failed)
		handle_overflow(w, OVERFLOW_UNWATCHED);
	wk->failed = true;
	wk->tries++;
	wk->due_ns = stats_now_ns() + retry_delay(wk->tries);
	list_add_tail(&wk->node, &ts->retry);
}

/*
 * Walks that failed run again when due, or at once when kernel watches
 * went since the last time (the watch limit may have room again).
 */
static void start_retries(struct fsnw *w)
{
	struct trees *ts = &w->trees;
	uint64_t freed = w->kwatches.unmarks + w->st.kernel_drops, now;
	bool all = freed != ts->freed_seen;
	struct list *pos, *tmp;

	ts->freed_seen = freed;
	if (list_empty(&ts->retry))
		return;
	now = stats_now_ns();
	list_for_each_safe(pos, tmp, &ts->retry) {
		struct walk *wk = list_entry(pos, struct walk, node);

		if (!all && wk->due_ns > now)
			continue;
		list_del(&wk->node);
		list_add_tail(&wk->node, &ts->walks);
		w->st.tree_retries++;
	}
}

static void start_rescans(struct fsnw *w)
{
	struct trees *ts = &w->trees;
	struct list *tp;

	ts->rescan = false;
	for (tp = ts->all.next; tp != &ts->all; tp = tp->next) {
		struct tree *t = list_entry(tp, struct tree, node);
		struct list *pos;

		for (pos = t->lw->links.next; pos != &t->lw->links; pos = pos->next) {
			struct link *l = list_entry(pos, struct link, wnode);
			struct walk *wk;

			if (!l->rescan)
				continue;
			wk = walk_new(t, WALK_RESCAN, strref_get(l->path), WDIR_REREAD);
			if (!wk) {
				ts->rescan = true;
				continue;
			}
			l->rescan = false;
			list_add_tail(&wk->node, &ts->walks);
		}
	}
	fantrees_fini(&ts->fan);
}

/* A rename's two halves are read by one complete drain: the moves not
 * paired by now went out of the tree. */
static void clear_moves(struct trees *ts)
{
	struct list *tp;

	if (!ts->nmoves)
		return;
	for (tp = ts->all.next; tp != &ts->all; tp = tp->next)
		free_moves(ts, list_entry(tp, struct tree, node));
}

bool trees_after_drain(struct fsnw *w, bool retry)
{
	struct trees *ts = &w->trees;
	unsigned budget = TREE_STEP_DIRS;
	bool walked;

	ts->window_open = false;
	walked = fantrees_after_drain(w);
	clear_moves(ts);
	if (retry)
		start_retries(w);
	if (ts->rescan)
		start_rescans(w);
	if (list_empty(&ts->walks))
		return walked;
	if (dents_buffer(ts) < 0) {
		/* Not even a step: the walks wait for the next drain. */
		return walked;
	}
	window_open(ts);
	while (budget && !list_empty(&ts->walks)) {
		struct walk *wk = list_first(&ts->walks, struct walk, node);

		switch (walk_run(w, wk, &budget)) {
		case WALK_DONE:
			walk_done(w, wk);
			break;
		case WALK_FAILED:
			walk_failed(w, wk);
			break;
		case WALK_PAUSED:
			break;
		}
	}
	return true;
}

bool trees_busy(const struct trees *ts)
{
	return ts->window_open || ts->rescan || ts->nmoves || ts->nending ||
	       !list_empty(&ts->walks) || fantrees_busy(&ts->fan);
}

struct watch *trees_pop_ended(struct trees *ts)
{
	struct list *pos;

	if (!ts->nending)
		return NULL;
	for (pos = ts->all.next; pos != &ts->all; pos = pos->next) {
		struct tree *t = list_entry(pos, struct tree, node);

		if (t->ending) {
			t->ending = false;
			ts->nending--;
			return t->lw;
		}
	}
	return NULL;
}

uint64_t trees_retry_due(const struct trees *ts)
{
	uint64_t due = 0;
	struct list *pos;

	for (pos = ts->retry.next; pos != &ts->retry; pos = pos->next) {
		const struct walk *wk = list_entry(pos, struct walk, node);
		uint64_t d = wk->due_ns ? wk->due_ns : 1;

		if (!due || d < due)
			due = d;
	}
	return due;
}

/* ---- mounts ---- */

/* Is the directory that holds p watched by the tree? */
static bool parent_linked(const struct tree *t, const struct strref *p)
{
	const char *slash = memrchr(p->s, '/', p->len);
	size_t len;

	if (!slash)
		return false;
	len = slash == p->s ? 1 : (size_t)(slash - p->s);
	return tree_find_link(t, p->s, len) != NULL;
}

/*
 * A mount appeared or went at point. Inside a tree, what that path holds
 * changed wholesale, without events: the tree forgets what it had there,
 * walks it again, and says FSNW_OVERFLOW so that the caller rescans. At or
 * above a tree's root, the root path may now lead elsewhere: a tree whose
 * root is not there any more ends.
 */
static void mount_changed(void *arg, const struct mount_entry *m, bool appeared)
{
	struct fsnw *w = arg;
	struct trees *ts = &w->trees;
	const char *point = m->path;
	size_t plen = m->len;
	struct list *pos;

	for (pos = ts->all.next; pos != &ts->all; pos = pos->next) {
		struct tree *t = list_entry(pos, struct tree, node);
		const struct strref *c = t->canon_root;
		size_t clen;
		struct strref *p;

		if (t->fan) {
			fantree_mount(w, t->fan, m, appeared);
			continue;
		}
		if (!c || t->ending)
			continue;
		if (!mountinfo_below(point, plen, c->s, c->len)) {
			bool above = mountinfo_below(c->s, c->len, point, plen) ||
				     (plen == c->len && !memcmp(point, c->s, plen));

			if (above && !root_still_there(w, t))
				end_tree(ts, t);
			continue;
		}
		clen = c->len == 1 ? 0 : c->len; /* below the root "/" */
		p = strref_join(t->lw->path, point + clen + 1, plen - clen - 1);
		if (!p) {
			handle_overflow(w, OVERFLOW_MOUNT);
			continue; /* the overflow stands for it */
		}
		/* Only an entry of a directory the tree watches matters: not one
		 * in a part it does not follow (another filesystem under
		 * FSNW_WATCH_ONE_FS, a directory it may not read). */
		if (!parent_linked(t, p)) {
			strref_put(p);
			continue;
		}
		handle_overflow(w, OVERFLOW_MOUNT);
		forget_subtree(w, t->lw, p);
		if (t->root)
			add_walk(w, t->root, WALK_MOUNT, p);
		else
			strref_put(p);
	}
}

void trees_check_mounts(struct fsnw *w)
{
	struct trees *ts = &w->trees;

	if (ts->mounts.check_fd < 0 || list_empty(&ts->all))
		return;
	/* Unreadable now: something may have changed that we cannot see. */
	if (mounts_check(&ts->mounts, mount_changed, w, &w->st) < 0)
		handle_overflow(w, OVERFLOW_MOUNT);
}

/* ---- the handle's part ---- */

void trees_init(struct trees *ts, size_t cache_max)
{
	memset(ts, 0, sizeof(*ts));
	list_init(&ts->all);
	list_init(&ts->walks);
	list_init(&ts->retry);
	mounts_init(&ts->mounts);
	fantrees_init(&ts->fan, cache_max);
}

void trees_fini(struct trees *ts)
{
	struct list *lists[] = { &ts->walks, &ts->retry };

	for (size_t i = 0; i < 2; i++) {
		struct list *pos, *tmp;

		list_for_each_safe(pos, tmp, lists[i]) {
			struct walk *wk = list_entry(pos, struct walk, node);

			list_del(&wk->node);
			walk_free(wk);
		}
	}
	mounts_close(&ts->mounts);
	fantrees_fini(&ts->fan);
	mem_free(ts->dents);
	ts->dents = NULL;
}
