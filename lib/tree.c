/* SPDX-License-Identifier: MIT */
/*
 * The life of tree watches, the steps of the walks after each complete
 * drain, and mounts inside trees. A tree on fanotify that needs no walk is
 * fantree.c's; the rest of a walked tree is tree-model.c's (its
 * directories, its events) and tree-walk.c's (reading directories).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "stats.h"
#include "sys.h"
#include "tree-int.h"

#define DENTS_BUF 32768
/*
 * Directories one step of the walks reads before the engine drains again.
 * Reading a directory may make echoes of ours (OPEN, ACCESS and
 * CLOSE_NOWRITE, on the directory and on its parent, when the caller asks
 * for them), and the kernel queues 16384 events by default: a walk that
 * read a wide tree in one go would overflow it with its own echoes.
 */
#define TREE_STEP_DIRS 512

/* ---- ending ---- */

void tree_end(struct trees *ts, struct tree *t)
{
	if (t->ending)
		return;
	t->ending = true;
	ts->nending++;
	tree_count_work(ts, t);
}

/* Does the root path still lead to the tree's root directory? */
bool tree_root_still_there(struct fsnw *w, const struct tree *t)
{
	struct strref *real = t->abs_root ? strref_get(t->abs_root) : strref_get(t->lw->path);
	struct stat st;
	int ret;

	if (!real)
		return true; /* cannot tell: keep it */
	ret = sys_fstatat(&w->st.sys_walk, AT_FDCWD, real->s, &st,
			  (t->lw->flags & FSNW_WATCH_DONT_FOLLOW) ? AT_SYMLINK_NOFOLLOW : 0);
	strref_put(real);
	return ret == 0 && st.st_dev == t->root_dev && st.st_ino == t->root_ino;
}

void tree_need_relist(struct fsnw *w, struct tdir *d)
{
	struct tree *t = d->t;

	if (t->adding) { /* the add fails instead, and leaves nothing behind */
		if (!t->add_err)
			t->add_err = -ENOMEM;
		return;
	}
	handle_overflow(w, OVERFLOW_UNWATCHED);
	if (d->lst)
		walk_lost(d);
	else if (d->state == TD_LIVE)
		tdir_set_state(d, TD_RELIST);
}

/* ---- life of a tree ---- */

static void tree_free_struct(struct trees *ts, struct watch *lw)
{
	struct tree *t = lw->tree;

	if (t->counted && ts)
		ts->nwork--;
	if (t->ending && ts)
		ts->nending--;
	list_del(&t->node);
	htab_fini(&t->children);
	strref_put(t->abs_root);
	strref_put(t->canon_root);
	mem_free(t->from);
	mem_free(t);
	lw->tree = NULL;
}

/* Every directory of t, in the tree or in limbo, to fn (which frees it). */
static void for_each_top(struct tree *t, void (*fn)(struct fsnw *, struct tdir *, bool),
			 struct fsnw *w, bool park)
{
	while (!list_empty(&t->limbo))
		fn(w, list_first(&t->limbo, struct tdir, qnode), park);
	if (t->root)
		fn(w, t->root, park);
}

static void forget_top(struct fsnw *w, struct tdir *d, bool park)
{
	tdir_forget(w, d, park);
}

static void drop_top(struct fsnw *w, struct tdir *d, bool park)
{
	(void)w;
	(void)park;
	tdir_drop(d);
}

static void undo_top(struct fsnw *w, struct tdir *d, bool park)
{
	(void)park;
	tdir_undo(w, d);
}

void tree_free(struct watch *lw)
{
	struct tree *t = lw->tree;

	if (!t)
		return;
	if (t->fan) {
		fantree_free(t->fan);
	} else {
		for_each_top(t, drop_top, NULL, false);
	}
	tree_free_struct(NULL, lw);
}

void tree_remove(struct fsnw *w, struct watch *lw, bool park)
{
	struct tree *t = lw->tree;

	if (!t)
		return;
	tree_changing(w);
	if (t->fan)
		fantree_remove(w, t->fan, park);
	else
		for_each_top(t, forget_top, w, park);
	tree_free_struct(&w->trees, lw);
}

/* Undo a tree add exactly: created marks go, revived ones park again. */
void tree_undo(struct fsnw *w, struct watch *lw)
{
	struct tree *t = lw->tree;

	if (t->fan) { /* no link of its own to take back */
		tree_remove(w, lw, false);
		return;
	}
	tree_changing(w);
	for_each_top(t, undo_top, w, false);
	tree_free_struct(&w->trees, lw);
}

static int absolute_root(struct fsnw *w, struct tree *t, const struct strref *path)
{
	struct strref *c;
	char *cwd;
	int ret = sys_getcwd(&w->st.sys_other, &cwd);

	if (ret < 0)
		return ret;
	c = strref_new(cwd, strlen(cwd));
	free(cwd);
	t->abs_root = c ? strref_join(c, path->s, path->len) : NULL;
	strref_put(c);
	return t->abs_root ? 0 : -ENOMEM;
}

static int dents_buffer(struct trees *ts)
{
	if (!ts->dents)
		ts->dents = mem_alloc(DENTS_BUF);
	return ts->dents ? 0 : -ENOMEM;
}

static void window_open(struct trees *ts)
{
	if (!ts->window_open) {
		ts->window_open = true;
		ts->window_gen++;
	}
}

/* The walked kind's add: the root, read now; the rest after the drains. */
static int walked_add(struct fsnw *w, struct tree *t)
{
	struct trees *ts = &w->trees;
	unsigned budget = 1;
	int ret = dents_buffer(ts);

	if (ret == 0 && t->lw->path->s[0] != '/')
		ret = absolute_root(w, t, t->lw->path);
	t->root = ret < 0 ? NULL : tdir_new(t, NULL, "", 0);
	if (!t->root)
		return ret < 0 ? ret : -ENOMEM;
	t->adding = true;
	tdir_set_state(t->root, TD_PENDING);
	window_open(ts);
	walk_step(w, t, &budget);
	return t->add_err;
}

int tree_add(struct fsnw *w, struct watch *lw)
{
	struct trees *ts = &w->trees;
	struct tree *t = mem_zalloc(sizeof(*t));
	int ret;

	if (!t)
		return -ENOMEM;
	tree_changing(w);
	htab_init(&t->children);
	list_init(&t->visits);
	list_init(&t->waiting);
	list_init(&t->limbo);
	t->ts = ts;
	t->kmask = lw->mask | TREE_KMASK;
	list_add_tail(&t->node, &ts->all);
	t->lw = lw;
	lw->tree = t;
	/* Mounts made from now on are followed (before the table is read for
	 * the tree). Without /proc, they are not (libfsnwatch(7)). */
	if (ts->mounts.check_fd < 0)
		(void)mounts_open(&ts->mounts, &w->st);
	/* On fanotify, where it can, a tree needs no walk (fantree.h): 0, it
	 * is set up; 1, it walks as on inotify. The lock stays held for the
	 * marks: the tree is half made. */
	kwatch_hold_lock(&w->kwatches, true);
	ret = fantree_add(w, lw, &t->fan);
	if (ret == 1) {
		t->fan = NULL;
		ret = walked_add(w, t);
	}
	kwatch_hold_lock(&w->kwatches, false);
	if (ret < 0)
		tree_undo(w, lw);
	tree_changing(w); /* its walk made directories and links */
	return ret < 0 ? ret : 0;
}

int tree_add_result(struct watch *lw)
{
	struct tree *t = lw->tree;

	if (!t)
		return 0; /* gone already: the caller reads its FSNW_IGNORED */
	t->adding = false;
	return t->add_err;
}

bool tree_link_dropped(struct fsnw *w, struct link *l)
{
	struct tdir *d = l->tnode;
	struct tree *t = l->watch->tree;

	if (!d || !t)
		return false;
	if (d == t->root)
		return true;
	tree_changing(w);
	tree_flush_from(w, t);
	tdir_forget(w, d, false);
	return false;
}

/* ---- after a drain ---- */

/* The window closes: what its step read stands (or waits for its proof). */
static void close_window(struct fsnw *w)
{
	struct trees *ts = &w->trees;
	struct list done;

	ts->window_open = false;
	list_init(&done);
	/* Commits add to stepped only nodes that wait for proof: take them out
	 * first. A directory of the tree waits for no arrival (only one in
	 * limbo does: tdir_found_again). */
	list_splice_tail_init(&ts->stepped, &done);
	while (!list_empty(&done)) {
		struct tdir *d = list_first(&done, struct tdir, qnode);

		assert(!d->amb);
		walk_commit(w, d);
	}
	if (!list_empty(&ts->stepped))
		window_open(ts); /* their echoes may still come */
}

/*
 * Directories waiting for events that explain their read go again after a
 * drain that read some, or when due; with retry, also those that lacked
 * resources, once kernel watches went (the limit may have room) or when due.
 */
static void start_waiting(struct fsnw *w, struct tree *t, bool retry)
{
	uint64_t freed = w->kwatches.unmarks + w->st.kernel_drops, now = 0;
	bool all = retry && freed != w->trees.freed_seen;
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &t->waiting) {
		struct tdir *d = list_entry(pos, struct tdir, qnode);
		bool due;

		if (!now)
			now = stats_now_ns();
		due = now >= d->due_ns;
		if (!due && !all && (d->wants_room || d->seen == (uint32_t)w->st.events_read))
			continue;
		if (due)
			d->tries++;
		if (d->starved)
			w->st.tree_retries++;
		tdir_set_state(d, d->l ? TD_RELIST : TD_PENDING);
	}
}

/*
 * The tree reads nothing more for now: what is in limbo was not found
 * again anywhere in it, so it left the tree. Its watches go, but for those
 * that moved out and whose MOVE_SELF has not come yet: the kernel queues
 * it right after the MOVED_FROM, in the same rename (its mark has the bit:
 * TREE_KMASK), and only a kernel overflow loses it (trees_overflow).
 */
static void sweep_limbo(struct fsnw *w, struct tree *t)
{
	struct list *pos, *tmp;

	if (!list_empty(&t->visits))
		return;
	for (pos = w->trees.stepped.next; pos != &w->trees.stepped; pos = pos->next)
		if (list_entry(pos, struct tdir, qnode)->t == t)
			return;
	list_for_each_safe(pos, tmp, &t->limbo) {
		struct tdir *d = list_entry(pos, struct tdir, qnode);

		if (!d->self_due)
			tdir_forget(w, d, true);
	}
}

/* Kernel watches freed so far: a retry of all that wait is due once more go. */
static void note_freed(struct fsnw *w)
{
	w->trees.freed_seen = w->kwatches.unmarks + w->st.kernel_drops;
}

/*
 * Whether trees_after_drain has nothing to do but note the drain: no walk
 * window open (nor a step's listings in it), no walk due, no walked tree
 * holding a MOVED_FROM, a directory that waits or one in limbo, and no
 * fanotify tree about, nor anything one left for fantrees_after_drain.
 * The usual drain of a reader that keeps up, after every wakeup.
 */
static bool after_drain_idle(const struct trees *ts)
{
	const struct fantrees *ft = &ts->fan;
	const struct list *pos;

	if (ts->window_open || ts->nwork || !list_empty(&ts->stepped))
		return false;
	if (!list_empty(&ft->all) || fantrees_busy(ft) || ft->drain_again || ft->journal.count)
		return false;
	for (pos = ts->all.next; pos != &ts->all; pos = pos->next) {
		const struct tree *t = list_entry(pos, struct tree, node);

		if (t->from || !list_empty(&t->waiting) || !list_empty(&t->limbo))
			return false;
	}
	return true;
}

bool trees_after_drain(struct fsnw *w, bool retry)
{
	struct trees *ts = &w->trees;
	unsigned budget = TREE_STEP_DIRS;
	bool walked, stepped = false;
	struct list *pos;

	if (after_drain_idle(ts)) {
		if (retry)
			note_freed(w);
		return false;
	}
	tree_changing(w);
	for (pos = ts->all.next; pos != &ts->all; pos = pos->next)
		tree_flush_from(w, list_entry(pos, struct tree, node));
	close_window(w);
	walked = fantrees_after_drain(w);
	for (pos = ts->all.next; pos != &ts->all; pos = pos->next) {
		struct tree *t = list_entry(pos, struct tree, node);

		if (t->fan)
			continue;
		start_waiting(w, t, retry);
		sweep_limbo(w, t);
	}
	if (retry)
		note_freed(w);
	/* Directories that wait for the proof of their identity keep the
	 * window open, but call for no drain of their own: the events that
	 * prove it wake the reader. */
	if (!ts->nwork || dents_buffer(ts) < 0)
		return walked;
	for (pos = ts->all.next; pos != &ts->all && budget; pos = pos->next) {
		struct tree *t = list_entry(pos, struct tree, node);

		if (t->fan || list_empty(&t->visits) || t->ending || t->add_err)
			continue;
		window_open(ts);
		stepped = true;
		walk_step(w, t, &budget);
	}
	return walked || stepped;
}

void trees_overflow(struct fsnw *w)
{
	struct list *pos;

	tree_changing(w);
	fantree_overflow(w);
	for (pos = w->trees.all.next; pos != &w->trees.all; pos = pos->next) {
		struct tree *t = list_entry(pos, struct tree, node);

		if (t->fan || !t->root)
			continue;
		tree_flush_from(w, t);
		tdir_relist_all(t);
		for (struct list *l = t->limbo.next; l != &t->limbo; l = l->next)
			list_entry(l, struct tdir, qnode)->self_due = false; /* maybe lost */
	}
}

void trees_settle(struct fsnw *w)
{
	if (unlikely(fantrees_busy(&w->trees.fan))) {
		tree_changing(w);
		fantree_settle(w);
	}
}

struct watch *trees_pop_ended(struct trees *ts, bool *failed)
{
	struct list *pos;

	*failed = false;
	if (ts->nending) {
		for (pos = ts->all.next; pos != &ts->all; pos = pos->next) {
			struct tree *t = list_entry(pos, struct tree, node);

			if (t->ending) {
				t->ending = false;
				ts->nending--;
				return t->lw;
			}
		}
	}
	return fantree_pop_ended(&ts->fan, failed);
}

uint64_t trees_retry_due(const struct trees *ts)
{
	uint64_t due = 0;

	for (const struct list *tp = ts->all.next; tp != &ts->all; tp = tp->next) {
		const struct tree *t = list_entry(tp, struct tree, node);

		for (const struct list *pos = t->waiting.next; pos != &t->waiting; pos = pos->next) {
			const struct tdir *d = list_entry(pos, struct tdir, qnode);
			uint64_t dd = d->due_ns ? d->due_ns : 1;

			if (!due || dd < due)
				due = dd;
		}
	}
	return due;
}

/* ---- mounts ---- */

/* The directory at path p of t (p below its root path), or NULL; *parent:
 * the deepest directory on the way the tree has. */
static struct tdir *dir_at(struct tree *t, const char *p, size_t len, struct tdir **parent)
{
	struct tdir *d = t->root;
	size_t off = path_trim(t->lw->path->s, t->lw->path->len);

	*parent = NULL;
	while (d && off < len) {
		size_t end;

		while (off < len && p[off] == '/')
			off++;
		end = off;
		while (end < len && p[end] != '/')
			end++;
		if (end == off)
			break;
		*parent = d;
		d = tdir_child(t, d, p + off, end - off);
		off = end;
	}
	return d;
}

/*
 * A mount appeared or went at point. Inside a tree, what that path holds
 * changed wholesale, without events: the tree forgets what it had there,
 * reads it again (or, when it has nothing there, reads the parent's
 * listing again), and says FSNW_OVERFLOW so that the caller rescans. At or
 * above a tree's root, the root path may now lead elsewhere: a tree whose
 * root is not there any more ends.
 */
static void mount_changed(void *arg, const struct mount_entry *m, bool appeared)
{
	struct fsnw *w = arg;
	struct trees *ts = &w->trees;
	struct list *pos;

	tree_changing(w);
	for (pos = ts->all.next; pos != &ts->all; pos = pos->next) {
		struct tree *t = list_entry(pos, struct tree, node);
		const struct strref *c = t->canon_root;
		struct tdir *d, *parent;
		struct strref *p;
		size_t clen;

		if (t->fan) {
			fantree_mount(w, t->fan, m, appeared);
			continue;
		}
		if (!c || t->ending || !t->root)
			continue;
		t->dir_moves++; /* paths may lead elsewhere (watch_by_path) */
		if (!path_below(m->path, m->len, c->s, c->len)) {
			if (path_at_or_below(c->s, c->len, m->path, m->len) && !tree_root_still_there(w, t))
				tree_end(ts, t);
			continue;
		}
		clen = path_trim(c->s, c->len);
		clen = clen == 1 ? 0 : clen; /* below the root "/" */
		p = strref_join(t->lw->path, m->path + clen + 1, m->len - clen - 1);
		d = p ? dir_at(t, p->s, p->len, &parent) : NULL;
		/* Only an entry of a directory the tree watches matters: not one
		 * in a part it does not follow (another filesystem under
		 * FSNW_WATCH_ONE_FS, a directory it may not read). */
		if (!p || !parent || !parent->l) {
			if (!p)
				handle_overflow(w, OVERFLOW_MOUNT);
			strref_put(p);
			continue;
		}
		handle_overflow(w, OVERFLOW_MOUNT);
		tree_flush_from(w, t);
		if (d) {
			struct tdir *n;
			char name[NAME_MAX + 1];
			size_t nlen = d->namelen;

			memcpy(name, d->name, nlen);
			tdir_forget(w, d, true);
			n = tdir_new(t, parent, name, nlen);
			if (n)
				tdir_set_state(n, TD_PENDING);
			else
				tree_need_relist(w, parent);
		} else {
			/* The tree has nothing there: for an unmount, its
			 * IN_UNMOUNT and IN_IGNORED, read before the table,
			 * took the mount's root away, and the directory under
			 * it is back. The listing of the deepest directory on
			 * the way finds what the path holds now. */
			tree_need_relist(w, parent);
		}
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
	list_init(&ts->stepped);
	mounts_init(&ts->mounts);
	fantrees_init(&ts->fan, cache_max);
}

void trees_fini(struct trees *ts, struct fsnw_stats *st)
{
	mounts_close(&ts->mounts, st);
	fantrees_fini(&ts->fan);
	mem_free(ts->dents);
	ts->dents = NULL;
}
