/* SPDX-License-Identifier: MIT */
/*
 * A walked tree's directories (struct tdir) and what events say of them:
 * tree-int.h has the model and its states. The events of a tree are
 * reported from here, in kernel order, with one exception: a MOVED_FROM is
 * held until the tree's next event, so that a rename within the tree
 * reaches the caller as two adjacent events with the move applied between
 * them, and a MOVED_FROM whose other end is not next means the entry left.
 *
 * Nothing here detaches a link: an event is routed while its kernel watch's
 * links are being walked (route.c). A directory that leaves the tree goes
 * to limbo, still watched, and is freed by its drop notice, or by the sweep
 * after the tree's walks are done (tree.c).
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "mem.h"
#include "stats.h"
#include "sys.h"
#include "tree-int.h"

#define READ_BITS (FSNW_OPEN | FSNW_ACCESS | FSNW_CLOSE_NOWRITE)

/* ---- the index ---- */

static uint64_t child_hash(const struct tdir *parent, const char *name, size_t len)
{
	return hash_bytes(name, len, (uint64_t)(uintptr_t)parent);
}

struct tdir *tdir_child(const struct tree *t, const struct tdir *d, const char *name,
			size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &t->children, child_hash(d, name, len)) {
		struct tdir *c = container_of(n, struct tdir, cnode);

		if (c->parent == d && c->namelen == len && !memcmp(c->name, name, len))
			return c;
	}
	return NULL;
}

/* Link d in below parent, which has no child of its name (room reserved). */
static void link_in(struct tdir *d, struct tdir *parent)
{
	struct tree *t = d->t;

	assert(!tdir_child(t, parent, d->name, d->namelen));
	d->parent = parent;
	d->prev = NULL;
	d->next = parent->child;
	if (parent->child)
		parent->child->prev = d;
	parent->child = d;
	htab_insert(&t->children, &d->cnode, child_hash(parent, d->name, d->namelen));
}

/* Take d out of its parent's children (the root and limbo tops have none). */
static void link_out(struct tdir *d)
{
	if (!d->parent)
		return;
	htab_remove(&d->t->children, &d->cnode);
	if (d->prev)
		d->prev->next = d->next;
	else
		d->parent->child = d->next;
	if (d->next)
		d->next->prev = d->prev;
	d->parent = d->next = d->prev = NULL;
}

/* Give d its new name; false: ENOMEM. */
static bool rename_to(struct tdir *d, const char *name, size_t len)
{
	char *p = d->iname;

	if (len >= d->namecap) {
		p = mem_alloc(len + 1);
		if (!p)
			return false;
	}
	if (d->name != d->iname)
		mem_free(d->name);
	memcpy(p, name, len);
	p[len] = '\0';
	d->name = p;
	d->namelen = (uint16_t)len;
	return true;
}

struct tdir *tdir_new(struct tree *t, struct tdir *parent, const char *name, size_t len)
{
	/* The name from the record's tail padding on: malloc's sizes step by
	 * 16 bytes, and a tree has a record a directory. */
	size_t size = offsetof(struct tdir, iname) + len + 1;
	struct tdir *d;

	if (len > NAME_MAX || (parent && htab_reserve(&t->children, 1) < 0))
		return NULL;
	if (size < sizeof(*d))
		size = sizeof(*d);
	d = mem_zalloc(size);
	if (!d)
		return NULL;
	d->t = t;
	list_init(&d->qnode);
	d->name = d->iname;
	d->namecap = (uint16_t)(size - offsetof(struct tdir, iname));
	d->namelen = (uint16_t)len;
	memcpy(d->iname, name, len);
	d->state = TD_PENDING;
	t->ndirs++;
	if (parent)
		link_in(d, parent);
	return d;
}

bool tdir_within(const struct tdir *a, const struct tdir *d)
{
	for (; a; a = a->parent)
		if (a == d)
			return true;
	return false;
}

/* ---- paths ---- */

struct strref *tdir_path(struct tdir *d)
{
	struct tree *t = d->t;
	struct tdir *stack[32];
	struct strref *p;
	size_t n = 0;

	if (d->path && d->pgen == t->pgen)
		return d->path;
	if (!d->parent) { /* the root (a limbo top reports nothing) */
		strref_put(d->path);
		d->path = strref_get(t->lw->path);
		d->pgen = t->pgen;
		return d->path;
	}
	/* Up to the nearest directory whose path is current, then down. */
	while (d->parent && !(d->path && d->pgen == t->pgen) && n < sizeof(stack) / sizeof(*stack)) {
		stack[n++] = d;
		d = d->parent;
	}
	p = tdir_path(d); /* deeper than the stack: the rest first */
	while (p && n) {
		struct tdir *c = stack[--n];

		strref_put(c->path);
		c->path = strref_join(p, c->name, c->namelen);
		c->pgen = t->pgen;
		p = c->path;
	}
	return p;
}

struct strref *tdir_real_path(struct tdir *d)
{
	struct tree *t = d->t;
	struct strref *p = tdir_path(d);

	if (!p)
		return NULL;
	if (!t->abs_root)
		return strref_get(p);
	return strref_rebase(p, t->lw->path->len, t->abs_root);
}

int tdir_real_path_into(const struct tdir *d, char *buf, size_t len)
{
	const struct tree *t = d->t;
	const struct strref *root = t->abs_root ? t->abs_root : t->lw->path;
	size_t rlen = root->len, total;
	const struct tdir *x;
	char *p;

	if (d->parent && rlen && root->s[rlen - 1] == '/')
		rlen--; /* "/" and its children: "/name" */
	total = rlen;
	for (x = d; x->parent; x = x->parent)
		total += 1 + x->namelen;
	if (x != t->root)
		return -ENOENT; /* below a directory in limbo */
	if (total >= len)
		return -ENAMETOOLONG;
	p = buf + total;
	*p = '\0';
	for (x = d; x->parent; x = x->parent) {
		p -= x->namelen;
		memcpy(p, x->name, x->namelen);
		*--p = '/';
	}
	assert(p == buf + rlen);
	memcpy(buf, root->s, rlen);
	return (int)total;
}

/* ---- states ---- */

void tree_count_work(struct trees *ts, struct tree *t)
{
	bool work = !t->ending && !t->add_err &&
		    (!list_empty(&t->visits) || !list_empty(&t->limbo) || t->from);

	if (work != t->counted) {
		t->counted = work;
		if (work)
			ts->nwork++;
		else
			ts->nwork--;
	}
}

void tdir_set_state(struct tdir *d, enum tdir_state s)
{
	struct tree *t = d->t;

	list_del(&d->qnode);
	list_init(&d->qnode);
	d->state = (uint8_t)s;
	switch (s) {
	case TD_PENDING:
	case TD_RELIST:
		list_add_tail(&d->qnode, &t->visits);
		break;
	case TD_WAITING:
		list_add_tail(&d->qnode, &t->waiting);
		break;
	case TD_PROVISIONAL:
		list_add_tail(&d->qnode, &t->ts->stepped);
		break;
	case TD_LIMBO:
		if (!d->parent)
			list_add_tail(&d->qnode, &t->limbo);
		break;
	default:
		break;
	}
	tree_count_work(t->ts, t);
}

/* The next directory of d's subtree after n, in preorder (NULL: done). */
static struct tdir *subtree_next(const struct tdir *d, const struct tdir *n)
{
	if (n->child)
		return n->child;
	while (n != d && !n->next)
		n = n->parent;
	return n == d ? NULL : n->next;
}

/* What is below d goes to limbo with it: read nothing, report nothing. */
static void subtree_to_limbo(struct tdir *d)
{
	for (struct tdir *n = d->child; n; n = subtree_next(d, n)) {
		walk_listing_free(n);
		tdir_set_state(n, TD_LIMBO);
	}
}

void tdir_to_limbo(struct tdir *d)
{
	assert(d != d->t->root);
	link_out(d);
	walk_listing_free(d);
	if (!d->l && !d->child && !d->amb) {
		tdir_forget(NULL, d, false); /* nothing to keep: no watch, no syscall */
		return;
	}
	subtree_to_limbo(d);
	tdir_set_state(d, TD_LIMBO);
	d->t->pgen++;
}

int tdir_move(struct tdir *d, struct tdir *parent, const char *name, size_t len)
{
	struct tree *t = d->t;
	struct tdir *old = tdir_child(t, parent, name, len);

	if (old == d)
		return 0;
	if (htab_reserve(&t->children, 1) < 0)
		return -ENOMEM;
	if (old)
		tdir_to_limbo(old); /* replaced (an empty directory renamed over) */
	link_out(d);
	if (!rename_to(d, name, len)) {
		tdir_to_limbo(d);
		return -ENOMEM;
	}
	link_in(d, parent);
	t->pgen++;
	return 0;
}

void tdir_relist_all(struct tree *t)
{
	for (struct tdir *n = t->root; n; n = subtree_next(t->root, n))
		if (n->state == TD_LIVE)
			tdir_set_state(n, TD_RELIST);
}

void tdir_relist_subtree(struct tdir *d)
{
	for (struct tdir *n = d; n; n = subtree_next(d, n)) {
		n->synth = true;
		if (n->state == TD_LIVE)
			tdir_set_state(n, TD_RELIST);
	}
}

/* Free one directory without children: its watch goes (w NULL: no watch). */
static void free_dir(struct fsnw *w, struct tdir *d, bool park)
{
	struct tree *t = d->t;

	assert(!d->child);
	if (t->from && t->from->dir == d)
		t->from->dir = NULL; /* reported at the root's path */
	link_out(d);
	list_del(&d->qnode);
	list_init(&d->qnode);
	walk_listing_free(d);
	if (d->l) {
		d->l->tnode = NULL;
		kwatch_detach(w, d->l, park);
	}
	if (t->root == d)
		t->root = NULL;
	strref_put(d->path);
	mem_free(d->amb);
	if (d->name != d->iname)
		mem_free(d->name);
	t->ndirs--;
	mem_free(d);
}

void tdir_forget(struct fsnw *w, struct tdir *d, bool park)
{
	struct tree *t = d->t;

	/* Postorder: each directory once its children are gone. */
	for (;;) {
		struct tdir *n = d;

		while (n->child)
			n = n->child;
		if (n == d)
			break;
		free_dir(w, n, park);
	}
	free_dir(w, d, park);
	tree_count_work(t->ts, t);
}

/* Take every watch of d's subtree off its directory; fn(w, l) disposes of it. */
static void unwatch_subtree(struct fsnw *w, struct tdir *d, void (*fn)(struct fsnw *, struct link *))
{
	for (struct tdir *n = d; n; n = subtree_next(d, n)) {
		if (!n->l)
			continue;
		if (fn) { /* without fn the links are gone already (the handle closes) */
			n->l->tnode = NULL;
			fn(w, n->l);
		}
		n->l = NULL;
	}
}

void tdir_undo(struct fsnw *w, struct tdir *d)
{
	unwatch_subtree(w, d, kwatch_undo);
	tdir_forget(w, d, false);
}

void tdir_drop(struct tdir *d)
{
	unwatch_subtree(NULL, d, NULL);
	tdir_forget(NULL, d, false);
}

/* ---- reporting ---- */

/* Push one event of t at path (NULL: ENOMEM, said as an overflow). */
static void report_at(struct fsnw *w, struct tree *t, struct strref *path, uint32_t mask,
		      uint32_t cookie, const char *name, size_t len)
{
	struct watch *lw = t->lw;

	mask &= lw->mask | FSNW_ISDIR | FSNW_UNMOUNT | FSNW_SYNTHETIC;
	if (!(mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT)))
		return;
	if (!path) {
		handle_overflow(w, OVERFLOW_UNWATCHED);
		return;
	}
	queue_push(w->q, &lw->qo, path, mask, cookie, name, len, 0);
}

void tree_report(struct fsnw *w, struct tree *t, struct tdir *d, uint32_t mask,
		 uint32_t cookie, const char *name, size_t len)
{
	report_at(w, t, d ? tdir_path(d) : t->lw->path, mask, cookie, name, len);
}

/* ---- what events say ---- */

/*
 * Identity. A directory known only from a create or a move in (unproven)
 * is watched as whatever its path led to when it was read; events older
 * than the read may say that the name left before (and something else
 * arrived there, which the read met), or after (the read met the
 * directory itself). When such a name leaves, a stat tells which: the
 * watch goes with the directory when the inode it watches is at the new
 * place, and otherwise stays at the old place, in limbo, for what arrives
 * there (arrival), checked by a stat again.
 */
static bool unproven(const struct tdir *d)
{
	return d->state == TD_PROVISIONAL && d->unproven && d->l;
}

/* Is the inode d's path leads to now ino? */
static bool ino_at(struct fsnw *w, struct tdir *d, ino_t ino)
{
	struct strref *real = tdir_real_path(d);
	struct stat st;
	bool ret;

	if (!real)
		return false;
	ret = sys_fstatat(&w->st.sys_walk, AT_FDCWD, real->s, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	      st.st_ino == ino;
	strref_put(real);
	return ret;
}

static void clear_ambiguous(struct tdir *d)
{
	mem_free(d->amb);
	d->amb = NULL;
}

/* d's watch may belong to what arrives at (parent, name): remember the place. */
static void note_ambiguous(struct tdir *d, struct tdir *parent, const char *name, size_t len)
{
	clear_ambiguous(d);
	d->amb = mem_alloc(sizeof(*d->amb) + len);
	if (!d->amb)
		return;
	d->amb->parent = parent;
	d->amb->len = (uint16_t)len;
	memcpy(d->amb->name, name, len);
}

/* What waits in limbo for an arrival at (parent, name). */
static struct tdir *ambiguous_at(struct tree *t, const struct tdir *parent, const char *name,
				 size_t len)
{
	for (struct list *pos = t->limbo.next; pos != &t->limbo; pos = pos->next) {
		struct tdir *x = list_entry(pos, struct tdir, qnode);

		if (x->amb && x->amb->parent == parent && x->amb->len == len &&
		    !memcmp(x->amb->name, name, len))
			return x;
	}
	return NULL;
}

/*
 * x, in limbo, is what a read found at (parent, name): the read's
 * descriptor has x's watch. x takes the place, read as new, and its watch
 * is its own from now on: whatever waited for proof of that (an arrival
 * where it was) has it, and its MOVE_SELF is reported where it is now. Its
 * subtree stays in limbo, for the reads below it to find again.
 */
int tdir_found_again(struct tdir *x, struct tdir *parent, const char *name, size_t len)
{
	assert(x->state == TD_LIMBO); /* a limbo subtree keeps its parent */
	if (tdir_move(x, parent, name, len) < 0)
		return -ENOMEM;
	while (x->child)
		tdir_to_limbo(x->child);
	clear_ambiguous(x);
	x->synth = true;
	x->ino_known = false;
	x->unproven = false;
	x->self_due = false;
	return 0;
}

/* n takes x's watch and what its read found; x is read again, or goes. */
static void take_watch(struct tdir *n, struct tdir *x)
{
	n->l = x->l;
	n->l->tnode = n;
	x->l = NULL;
	n->lst = x->lst;
	x->lst = NULL;
	n->ino = x->ino;
	n->ino_known = true;
	n->walk_gen = x->walk_gen;
	clear_ambiguous(x);
	x->ino_known = false;
	x->unproven = false;
	tdir_set_state(n, n->lst ? TD_PROVISIONAL : TD_RELIST);
	if (x->parent)
		tdir_set_state(x, TD_PENDING);
	else if (!x->child)
		tdir_forget(NULL, x, false);
}

/*
 * c moved within the tree from (from, name) while unproven, and the inode
 * its watch has is not at its new place: the watch stays at the old
 * place, held in limbo with what the read found, and c is read anew.
 */
static void split_watch(struct tdir *c, struct tdir *from, const char *name, size_t len)
{
	struct tdir *y = tdir_new(c->t, NULL, name, len);

	if (!y) { /* ENOMEM: c keeps the watch; a later read of c checks it */
		c->unproven = false;
		return;
	}
	take_watch(y, c);
	y->synth = true;
	note_ambiguous(y, from, name, len);
	tdir_set_state(y, TD_LIMBO);
}

/* A directory appeared at (d, name), created or moved in: read what it holds. */
static void arrival(struct fsnw *w, struct tree *t, struct tdir *d, const char *name,
		    size_t len)
{
	struct tdir *old = tdir_child(t, d, name, len), *n, *x;

	if (old)
		tdir_to_limbo(old);
	n = tdir_new(t, d, name, len);
	if (!n) {
		tree_need_relist(w, d);
		return;
	}
	n->synth = true;
	x = ambiguous_at(t, d, name, len);
	if (x && ino_at(w, n, x->ino))
		take_watch(n, x);
	else
		tdir_set_state(n, TD_PENDING);
}

/* The entry name of d, a directory, is gone (deleted or moved out). */
static void departure(struct tree *t, struct tdir *d, const char *name, size_t len)
{
	struct tdir *c = tdir_child(t, d, name, len);

	if (!c)
		return;
	if (unproven(c))
		note_ambiguous(c, d, name, len);
	tdir_to_limbo(c);
}

/*
 * The directory name of d moved out of the tree, and its MOVED_FROM went
 * out. Its watch's MOVE_SELF follows in the kernel's queue, but a reader
 * may drain in between (the kernel queues the two one after the other),
 * and then it finds the directory in limbo: it is still reported, where
 * the directory was, whatever read it comes in.
 */
static void moved_out(struct tree *t, const struct held_from *f)
{
	struct tdir *c = tdir_child(t, f->dir, f->name, f->namelen);
	bool watched = c && c->l && tdir_path(c);

	departure(t, f->dir, f->name, f->namelen);
	if (watched) {
		assert(c->state == TD_LIMBO && c->path);
		c->self_due = true;
		c->out_cookie = f->cookie;
	}
}

/*
 * A MOVED_TO whose MOVED_FROM went out alone: a read landed between the
 * two. If that MOVED_FROM took a watched directory to limbo, this is the
 * same rename, and its MOVE_SELF, next in the kernel's queue, is reported
 * where the stream just said it went (the walk of the new name takes the
 * directory back later).
 */
static void rejoined(struct tree *t, struct tdir *d, const struct kevent *ev)
{
	struct list *pos;

	if (!ev->cookie)
		return;
	for (pos = t->limbo.next; pos != &t->limbo; pos = pos->next) {
		struct tdir *c = list_entry(pos, struct tdir, qnode);
		struct strref *at, *p;

		if (!c->self_due || c->out_cookie != ev->cookie)
			continue;
		at = tdir_path(d);
		p = at ? strref_join(at, ev->name, ev->namelen) : NULL;
		if (p) {
			strref_put(c->path);
			c->path = p;
		}
		return;
	}
}

void tree_flush_from(struct fsnw *w, struct tree *t)
{
	struct held_from *f = t->from;

	if (!f)
		return;
	t->from = NULL;
	tree_report(w, t, f->dir, f->mask, f->cookie, f->name, f->namelen);
	if ((f->mask & FSNW_ISDIR) && f->dir)
		moved_out(t, f);
	mem_free(f);
	tree_count_work(t->ts, t);
}

static void hold_from(struct fsnw *w, struct tree *t, struct tdir *d, const struct kevent *ev)
{
	struct held_from *f = mem_alloc(sizeof(*f));

	if (!f || ev->namelen >= sizeof(f->name)) {
		mem_free(f);
		/* Out of memory: it goes alone, as a move out would. */
		tree_report(w, t, d, ev->mask, ev->cookie, ev->name, ev->namelen);
		if (ev->mask & FSNW_ISDIR)
			departure(t, d, ev->name, ev->namelen);
		return;
	}
	f->dir = d;
	f->mask = ev->mask;
	f->cookie = ev->cookie;
	f->namelen = (uint16_t)ev->namelen;
	memcpy(f->name, ev->name, ev->namelen);
	t->from = f;
	tree_count_work(t->ts, t);
}

/* A MOVED_TO at d: the end of a move within the tree, or a move in. */
static void moved_to(struct fsnw *w, struct tree *t, struct tdir *d, const struct kevent *ev)
{
	struct held_from *f = t->from;
	struct tdir *c = NULL;

	if (f) {
		t->from = NULL;
		tree_report(w, t, f->dir, f->mask, f->cookie, f->name, f->namelen);
		if ((f->mask & FSNW_ISDIR) && f->dir)
			c = tdir_child(t, f->dir, f->name, f->namelen);
	}
	tree_report(w, t, d, ev->mask, ev->cookie, ev->name, ev->namelen);
	if (ev->mask & FSNW_ISDIR) {
		if (c) {
			struct tdir *from = c->parent;
			bool check = unproven(c);

			if (tdir_move(c, d, ev->name, ev->namelen) < 0)
				tree_need_relist(w, d);
			else if (check && !ino_at(w, c, c->ino))
				split_watch(c, from, f->name, f->namelen);
			else
				c->unproven = false; /* its watch is of what moved */
		} else {
			rejoined(t, d, ev);
			arrival(w, t, d, ev->name, ev->namelen);
		}
	}
	mem_free(f);
	tree_count_work(t->ts, t);
}

/*
 * An echo of a walk's own read of a directory (OPEN, ACCESS, CLOSE_NOWRITE
 * with ISDIR, on it or, by name, on its parent) while the window that read
 * it is open: the library's, not the caller's. A read by someone else in
 * the same instant is concurrent with the walk and may go too.
 */
static bool is_echo(const struct trees *ts, struct tree *t, struct tdir *d,
		    const struct kevent *ev)
{
	const struct tdir *c;

	if (!ts->window_open || !(ev->mask & FSNW_ISDIR) || (ev->mask & ~(READ_BITS | FSNW_ISDIR)))
		return false;
	c = ev->name ? tdir_child(t, d, ev->name, ev->namelen) : d;
	return c && c->walk_gen == ts->window_gen;
}

/* An event about d itself (no name). Returns true when the tree lost its root. */
static bool self_event(struct fsnw *w, struct tree *t, struct tdir *d, const struct kevent *ev)
{
	tree_report(w, t, d, ev->mask, ev->cookie, NULL, 0);
	if (!(ev->mask & (FSNW_MOVE_SELF | FSNW_DELETE_SELF)))
		return false;
	if (d->amb)
		clear_ambiguous(d); /* its watch is its own: it moved (or went) itself */
	/*
	 * The root renamed: inotify tells no new name, and nothing here holds
	 * the root open to ask (an open root would keep its filesystem from
	 * being unmounted). The tree cannot follow its directories and ends,
	 * explicitly (FSNW_IGNORED after the MOVE_SELF).
	 */
	return d == t->root && (ev->mask & FSNW_MOVE_SELF);
}

/* Whether all tree_event does with an event (mask, name) at d is report it. */
static inline bool only_reported(const struct tdir *d, uint32_t mask, const char *name)
{
	/* What tree_event does more than report: a self event, a move, a
	 * directory's entry, a listing to touch, a MOVED_FROM held, limbo. */
	return d && tree_event_plain(mask, name) && !d->lst && !d->t->from &&
	       d->state != TD_LIMBO;
}

struct strref *tree_event_path(struct link *l, uint32_t mask, const char *name)
{
	struct tdir *d = l->tnode;

	if (!only_reported(d, mask, name) || !d->path || d->pgen != d->t->pgen)
		return NULL;
	return d->path;
}

void tree_link_prefetch(const struct link *l)
{
	const char *d = (const char *)l->tnode;

	/* What tree_event_path reads leads struct tdir: one line, or two
	 * where the record starts late in one. */
	if (!d)
		return;
	__builtin_prefetch(d);
	__builtin_prefetch(d + offsetof(struct tdir, state));
}

bool tree_event_deferred(struct fsnw *w, struct link *l, const struct kevent *ev)
{
	struct tdir *d = l->tnode;
	struct watch *lw;
	struct strref *path;
	uint32_t mask;

	if (!only_reported(d, ev->mask, ev->name))
		return false;
	lw = d->t->lw;
	mask = ev->mask & (lw->mask | FSNW_ISDIR | FSNW_UNMOUNT);
	if (!(mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT)))
		return true;
	path = tdir_path(d);
	if (!path)
		return false; /* tree_event says what is lost */
	/* The path stays d's until a directory moves, and every event that
	 * moves one goes through tree_event, after a queue_flush. */
	queue_defer(w->q, &lw->qo, path, mask, ev->cookie, ev->name, ev->namelen);
	return true;
}

bool tree_event(struct fsnw *w, struct link *l, const struct kevent *ev)
{
	struct tdir *d = l->tnode;
	struct tree *t;

	if (!d)
		return false;
	tree_changing(w);
	t = d->t;
	if (ev->name ? (ev->mask & FSNW_ISDIR) && (ev->mask & (FSNW_DELETE | FSNW_MOVE)) :
		       (ev->mask & (FSNW_MOVE_SELF | FSNW_DELETE_SELF)) != 0)
		t->dir_moves++; /* a path may lead elsewhere (watch_by_path) */
	/*
	 * First what came before: a MOVED_FROM whose other end is not this
	 * event left the tree (and may have taken d along: then d's own
	 * MOVE_SELF, which comes next, is still reported, where d was).
	 */
	if (t->from && !((ev->mask & FSNW_MOVED_TO) && ev->name && ev->cookie == t->from->cookie))
		tree_flush_from(w, t);
	if (d->state == TD_LIMBO) {
		bool self = !ev->name && (ev->mask & (FSNW_MOVE_SELF | FSNW_DELETE_SELF));

		/* Left the tree: nothing of it is reported but the MOVE_SELF of
		 * its move out (moved_out); and a watch whose identity waited
		 * for proof has it now. */
		if (self && d->amb)
			clear_ambiguous(d);
		if (self && d->self_due && (ev->mask & FSNW_MOVE_SELF)) {
			d->self_due = false;
			report_at(w, t, d->path, ev->mask, ev->cookie, NULL, 0);
			return false;
		}
		w->st.dropped_stale++;
		return false;
	}
	if (is_echo(t->ts, t, d, ev)) {
		w->st.dropped_walk++;
		return false;
	}
	if (!ev->name)
		return self_event(w, t, d, ev);
	/* Only an entry's create, delete or move tells whether it is there:
	 * the listing still answers for a name another event only names. */
	if (d->lst && (ev->mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE)))
		walk_touch(d, ev->name, ev->namelen);
	if (ev->mask & FSNW_MOVED_FROM) {
		hold_from(w, t, d, ev);
		return false;
	}
	if (ev->mask & FSNW_MOVED_TO) {
		moved_to(w, t, d, ev);
		return false;
	}
	tree_report(w, t, d, ev->mask, ev->cookie, ev->name, ev->namelen);
	if (!(ev->mask & FSNW_ISDIR))
		return false;
	if (ev->mask & FSNW_CREATE)
		arrival(w, t, d, ev->name, ev->namelen);
	else if (ev->mask & FSNW_DELETE)
		departure(t, d, ev->name, ev->namelen);
	return false;
}
