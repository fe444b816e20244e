/* SPDX-License-Identifier: MIT */
/*
 * Reading a walked tree's directories. A step reads directories one at a
 * time: open it (by its name below its parent, or by its path), watch it,
 * list it, close it. The watch comes before the listing: what is made
 * meanwhile is seen by one or the other. A directory whose inode its
 * parent's listing gave is watched by its path, which leads to what the
 * descriptor holds unless a directory was deleted or moved meanwhile (then
 * the merge checks it: watch_proven); any other is watched by what the
 * descriptor holds (its /proc name, procfd.h: the watch and the listing are
 * of one directory, whatever its path leads to by then).
 *
 * A listing answers for the moment it was made, ahead of the events still
 * unread, so it is held (PROVISIONAL) until the drain after the step has
 * read every event older than it, and then merged (walk_commit): a name an
 * event touched since the directory's watch landed is what the events made
 * it; any other name is what the listing found. The events were reported
 * as they came, so the synthetic FSNW_CREATE of a listed entry goes out only
 * for names no event touched, after them: a consumer applying both in order
 * ends with the directory as it is.
 *
 * Identity. The listing's "." is the directory's inode, and its ".." its
 * parent's, read under the directory's lock. A directory a listing found
 * must be the inode the listing said (the read meets another directory, or
 * none, when a rename overtook it: events still unread explain it, and the
 * read waits for them), and its parent must be the tree's. A directory
 * known only from a create or a move in has no inode to check: its watch is
 * taken as its own unless, before the watch's MOVE_SELF, something arrives
 * where it was (tree-model.c).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "stats.h"
#include "sys.h"
#include "testhook.h"
#include "tree-int.h"

#define DENTS_BUF 32768
/* Reads in a row that met the wrong directory, or none, before the tree
 * says it cannot follow (FSNW_OVERFLOW); the events that explain such a
 * read come within microseconds. */
#define WAIT_TRIES_MAX 8
#define RETRY_FIRST_NS 10000000ull
#define RETRY_MAX_NS 2000000000ull
/* Windows whose close checks a watch made by path before it is given up. */
#define PROOF_TRIES 4

struct tent {
	ino_t ino;
	uint32_t off;   /* in names */
	uint16_t len;
	bool dir;
};

struct tname {
	struct hnode node;
	uint16_t len;
	char name[];
};

struct tlisting {
	struct tent *e;
	size_t n, cap;
	char *names;
	size_t nlen, ncap;
	struct htab touched; /* struct tname: names events touched since the watch */
	ino_t self, parent;  /* "." and "..", 0 when the listing had none */
	uint32_t moves_at;   /* by_path: the tree's dir_moves when the watch was made */
	uint8_t checks;      /* by_path: windows whose close could not check it */
	bool by_path;        /* the watch was made by the directory's path (watch_by_path) */
	bool lost;           /* a touched name could not be recorded (ENOMEM) */
};

bool walk_transient(int err)
{
	return err == -ENOMEM || err == -ENOSPC || err == -EMFILE || err == -ENFILE;
}

static bool vanished(int err)
{
	return err == -ENOENT || err == -ENOTDIR || err == -ELOOP;
}

/* ---- listings ---- */

static void free_name(struct hnode *n, void *arg)
{
	(void)arg;
	mem_free(container_of(n, struct tname, node));
}

void walk_listing_free(struct tdir *d)
{
	struct tlisting *lst = d->lst;

	if (!lst)
		return;
	htab_for_each(&lst->touched, free_name, NULL);
	htab_fini(&lst->touched);
	mem_free(lst->e);
	mem_free(lst->names);
	mem_free(lst);
	d->lst = NULL;
}

static uint64_t name_hash(const char *name, size_t len)
{
	return hash_bytes(name, len, 0x746f756368ull);
}

static bool touched(const struct tlisting *lst, const char *name, size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &lst->touched, name_hash(name, len)) {
		struct tname *x = container_of(n, struct tname, node);

		if (x->len == len && !memcmp(x->name, name, len))
			return true;
	}
	return false;
}

void walk_touch(struct tdir *d, const char *name, size_t len)
{
	struct tlisting *lst = d->lst;
	struct tname *x;

	if (touched(lst, name, len))
		return;
	x = mem_alloc(sizeof(*x) + len);
	if (!x || htab_reserve(&lst->touched, 1) < 0) {
		mem_free(x);
		lst->lost = true;
		return;
	}
	x->len = (uint16_t)len;
	memcpy(x->name, name, len);
	htab_insert(&lst->touched, &x->node, name_hash(name, len));
}

void walk_lost(struct tdir *d)
{
	d->lst->lost = true;
}

static int listing_add(struct tlisting *lst, const char *name, size_t len, bool dir, ino_t ino)
{
	if (lst->n == lst->cap) {
		size_t cap = lst->cap ? 2 * lst->cap : 32;
		struct tent *e = mem_realloc(lst->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		lst->e = e;
		lst->cap = cap;
	}
	if (lst->nlen + len > lst->ncap) {
		size_t cap = lst->ncap ? 2 * lst->ncap : 512;
		char *p;

		while (cap < lst->nlen + len)
			cap *= 2;
		p = mem_realloc(lst->names, cap);
		if (!p)
			return -ENOMEM;
		lst->names = p;
		lst->ncap = cap;
	}
	memcpy(lst->names + lst->nlen, name, len);
	lst->e[lst->n++] = (struct tent){ ino, (uint32_t)lst->nlen, (uint16_t)len, dir };
	lst->nlen += len;
	return 0;
}

/*
 * List fd into lst: every entry when all is set (what it holds is to be
 * reported), its subdirectories otherwise; "." and ".." into self and
 * parent.
 */
static int list_fd(struct fsnw *w, int fd, struct tlisting *lst, bool all)
{
	unsigned char *dents = w->trees.dents;

	for (;;) {
		ssize_t n = sys_getdents(&w->st.sys_walk, fd, dents, DENTS_BUF);

		if (n < 0)
			return n == -ENOENT ? 0 : (int)n; /* removed while we read */
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(dents + off);
			const char *name = e->d_name;
			size_t len = strlen(name);
			bool dir = e->d_type == DT_DIR;
			int ret;

			off += e->d_reclen;
			if (len <= 2 && name[0] == '.' && (len == 1 || name[1] == '.')) {
				if (len == 1)
					lst->self = e->d_ino;
				else
					lst->parent = e->d_ino;
				continue;
			}
			if (e->d_type == DT_UNKNOWN) {
				struct stat st;

				if (sys_fstatat(&w->st.sys_walk, fd, name, &st,
						AT_SYMLINK_NOFOLLOW) < 0)
					continue; /* vanished */
				dir = S_ISDIR(st.st_mode);
			}
			if (!dir && !all)
				continue;
			ret = listing_add(lst, name, len, dir, e->d_ino);
			if (ret < 0)
				return ret;
		}
	}
}

/* ---- one directory ---- */

/*
 * The root's identity, to tell later whether its path still leads to it,
 * and (when mounts are followed) its path as mount points are spelt.
 */
static void root_opened(struct fsnw *w, struct tree *t, struct tdir *d, int fd)
{
	char proc[PROCFD_MAX], buf[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (sys_fstat(&w->st.sys_walk, fd, &st) == 0) {
		t->root_dev = st.st_dev;
		t->root_ino = st.st_ino;
	}
	if (w->trees.mounts.check_fd < 0 || t->canon_root)
		return;
	n = sys_readlink(&w->st.sys_other, procfd_path(&w->trees.procfd, &w->st.sys_other, fd, proc),
			 buf, sizeof(buf));
	/* Without it, mounts below this tree are not followed. */
	if (n > 0 && n < (ssize_t)sizeof(buf) && buf[0] == '/')
		t->canon_root = strref_new(buf, (size_t)n);
}

/* A link of this tree on l's kernel watch other than l, or NULL. */
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

/* Does x's path still lead to x (a stat)? */
static bool still_there(struct fsnw *w, struct tdir *x)
{
	struct strref *real = tdir_real_path(x);
	struct stat st;
	bool ret;

	if (!real)
		return false;
	ret = sys_fstatat(&w->st.sys_walk, AT_FDCWD, real->s, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	      st.st_ino == x->ino;
	strref_put(real);
	return ret;
}

/* What a walk's watch of t's directories asks of the kernel watch. */
static uint32_t walk_flags(const struct tree *t)
{
	return (t->lw->flags & FSNW_WATCH_EXCL_UNLINK) | FSNW_WATCH_ONLYDIR | FSNW_WATCH_TREE;
}

/* Attach t's watch to what fd holds (its /proc name). */
static int attach_fd(struct fsnw *w, struct tree *t, int fd, struct link **l)
{
	char proc[PROCFD_MAX];

	procfd_path(&w->trees.procfd, &w->st.sys_other, fd, proc);
	return kwatch_attach(w, t->lw, AT_FDCWD, proc, t->kmask, walk_flags(t), l);
}

/* l is d's watch from now on, its events unread included. */
static void take_link(struct fsnw *w, struct tdir *d, struct link *l)
{
	kwatch_activate(&w->kwatches, l);
	l->tnode = d;
	d->l = l;
}

/*
 * The walk's cheap watch: by d's path, as a raw walk makes it, where naming
 * the descriptor (its /proc name) costs the kernel a lookup of /proc as
 * long as the rest of the read. The path may lead elsewhere than the
 * descriptor opened a moment apart, but only if a directory of the tree
 * (or one above its root) was deleted or moved in between, which the
 * window's events say (tree.dir_moves) or the root's stat, and then
 * walk_commit checks the watch against the listing (watch_proven). Only a
 * first read of a directory whose inode its parent's listing gave, and only
 * a kernel watch no other directory of the tree has: the rest is watched
 * by its descriptor.
 */
static struct link *watch_by_path(struct fsnw *w, struct tree *t, struct tdir *d)
{
	uint32_t flags = walk_flags(t) | FSNW_WATCH_DONT_FOLLOW;
	char path[PATH_MAX];
	struct link *l;

	if (w->be->cover || d == t->root || !d->ino_known || d->tries || d->starved ||
	    tdir_real_path_into(d, path, sizeof(path)) < 0)
		return NULL;
	if (kwatch_attach(w, t->lw, AT_FDCWD, path, t->kmask, flags, &l) < 0)
		return NULL; /* gone, or not a directory: the descriptor tells */
	if (l->origin == LINK_SHARED) {
		kwatch_undo(w, l); /* whose it is, the descriptor tells */
		return NULL;
	}
	return l;
}

/*
 * Watch what fd holds. The watch found may be one the tree has for
 * another directory: one in limbo is this one come back (a move whose
 * other end the tree could not see), and d takes its place; one in the
 * tree elsewhere is a move not read yet, if its path leads to it no more
 * (the read waits for the events), or else the same directory reachable
 * twice (a bind mount), watched at both places. Returns 0 (*x: the
 * directory read, d or the one it became), 1 to wait, or -errno.
 */
static int watch_fd(struct fsnw *w, struct tree *t, struct tdir *d, int fd, bool *by_path,
		    struct tdir **x)
{
	struct link *l, *o;
	struct tdir *other;
	int ret;

	*x = d;
	*by_path = false;
	if (d->l)
		return 0;
	l = watch_by_path(w, t, d);
	if (l) {
		*by_path = true;
		take_link(w, d, l);
		return 0;
	}
	ret = attach_fd(w, t, fd, &l);
	if (ret < 0)
		return ret;
	o = other_link(l);
	other = o ? o->tnode : NULL;
	if (other && other->state != TD_LIMBO && (tdir_within(d, other) || !still_there(w, other))) {
		kwatch_undo(w, l);
		if (tdir_within(d, other))
			return -ELOOP; /* a bind mount of a directory above it */
		d->conflict = true; /* a move the events will say */
		return 1;
	}
	if (other && other->state == TD_LIMBO) {
		struct tdir *parent = d->parent;
		char name[NAME_MAX + 1];
		size_t len = d->namelen;

		/* Back from limbo: other takes d's place (d, pending, has no
		 * watch nor children and goes), its subtree stays behind. */
		kwatch_undo(w, l);
		memcpy(name, d->name, len);
		tdir_forget(w, d, false);
		if (tdir_found_again(other, parent, name, len) < 0)
			return -ENOMEM;
		*x = other;
		return 0;
	}
	take_link(w, d, l);
	return 0;
}

/* Is fd the mount root of another filesystem (or of a bind mount)? */
static bool mount_root(struct fsnw *w, int fd)
{
	struct statx stx;

	if (sys_statx(&w->st.sys_walk, fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO,
		      &stx) < 0)
		return false;
	return (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	       (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/*
 * Is the listing of the directory the tree means? "." must be the inode a
 * listing of its parent found, and ".." the parent the tree has (checked
 * again with a stat where a filesystem's listing says otherwise); a mount
 * root is taken as it is (the mount table follows mounts).
 */
static bool identity_holds(struct fsnw *w, struct tdir *d, int fd, const struct tlisting *lst)
{
	bool self = !d->ino_known || lst->self == d->ino;
	bool parent = !d->parent || lst->parent == d->parent->ino;
	struct stat st;

	if (self && parent)
		return true;
	if (mount_root(w, fd))
		return true;
	if (!parent)
		parent = sys_fstatat(&w->st.sys_walk, fd, "..", &st, 0) == 0 &&
			 st.st_ino == d->parent->ino;
	if (!self)
		self = sys_fstat(&w->st.sys_walk, fd, &st) == 0 && st.st_ino == d->ino;
	return self && parent;
}

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
 * d's read found nothing, or another directory, or lacked a resource: it
 * waits for the events that explain it (read again after a drain that read
 * some), or for the resource, and in any case is read again when due, with
 * a back-off. One whose timed tries keep failing is given up, with
 * FSNW_OVERFLOW: the tree cannot follow it.
 */
static void wait_again(struct fsnw *w, struct tdir *d, bool transient)
{
	if (transient && !d->starved) {
		handle_overflow(w, OVERFLOW_UNWATCHED);
		d->starved = true;
	}
	if (!transient && d->tries >= WAIT_TRIES_MAX) {
		handle_overflow(w, OVERFLOW_UNWATCHED);
		tdir_set_state(d, TD_FAILED);
		return;
	}
	d->wants_room = transient;
	d->seen = (uint32_t)w->st.events_read;
	/* The first try again is at the next drain, then after 10 ms, doubling. */
	d->due_ns = stats_now_ns() + retry_delay(d->tries + 1);
	tdir_set_state(d, TD_WAITING);
}

/* A read that failed: the add fails, or the directory waits, or is given up. */
static void read_failed(struct fsnw *w, struct tree *t, struct tdir *d, int err)
{
	if (t->adding && (d == t->root || !vanished(err))) {
		if (!t->add_err)
			t->add_err = err;
		tdir_set_state(d, TD_FAILED);
		return;
	}
	if (vanished(err) || err == 1) {
		/*
		 * inotify says nothing when a directory above the root is
		 * renamed: a read that finds nothing may be the first sign
		 * that the root's path leads nowhere, and the tree ends.
		 */
		if (vanished(err) && !d->tries && !tree_root_still_there(w, t)) {
			tree_end(t->ts, t);
			return;
		}
		wait_again(w, d, false);
		return;
	}
	if (walk_transient(err)) {
		wait_again(w, d, true);
		return;
	}
	/*
	 * A directory we may not read (EACCES, a path too long, a bind mount
	 * of a directory above it): events below it go unseen, which
	 * FSNW_OVERFLOW says. It is not tried again.
	 */
	handle_overflow(w, OVERFLOW_UNWATCHED);
	tdir_set_state(d, TD_FAILED);
}

/* A test point at directory d, named by the path it has now (testhook.h). */
static inline void dir_point(enum test_point p, struct tdir *d)
{
#ifdef FSNW_TEST_HOOKS
	struct strref *real = tdir_real_path(d);

	TEST_POINT(p, real ? real->s : NULL);
	strref_put(real);
#else
	(void)p;
	(void)d;
#endif
}

/*
 * The step's open parent. Visits come in the order their parents' listings
 * were merged, so subdirectories of one directory come in a row: their
 * parent is opened once by its path (O_PATH: it makes no events of its own)
 * and each of them by its name below it, one component to look up where
 * its path has them all. The parent's descriptor is whatever its path
 * leads to now, as a path of the child's own would be; the child's listing
 * checks ".." against the tree's parent either way. A step frees no
 * directory but a pending one, which has no subdirectories, so the parent
 * stays valid for the step.
 */
struct walk_parent {
	struct tdir *d;
	int fd;
};

static void parent_close(struct fsnw *w, struct walk_parent *wp)
{
	if (wp->fd >= 0)
		sys_close(&w->st.sys_walk, wp->fd);
	wp->d = NULL;
	wp->fd = -1;
}

static int open_flags(const struct tree *t, const struct tdir *d)
{
	bool nofollow = d != t->root || (t->lw->flags & FSNW_WATCH_DONT_FOLLOW);

	return O_DIRECTORY | (nofollow ? O_NOFOLLOW : 0);
}

/* Is the visit after d of another subdirectory of d's parent? */
static bool sibling_follows(const struct tree *t, const struct tdir *d)
{
	const struct tdir *n;

	if (d->qnode.next == &t->visits)
		return false;
	n = list_entry(d->qnode.next, struct tdir, qnode);
	return n->parent == d->parent;
}

/*
 * Open d's parent for d and the siblings that follow, if any do. Only for a
 * first read: what a walk reads first comes in runs of siblings, while a
 * read again after a failed one goes alone, by its path, and costs the
 * try's own open and close.
 */
static void parent_open(struct fsnw *w, struct tree *t, struct tdir *d, struct walk_parent *wp)
{
	char real[PATH_MAX];

	parent_close(w, wp);
	if (!d->parent || d->tries || d->starved || !sibling_follows(t, d) ||
	    tdir_real_path_into(d->parent, real, sizeof(real)) < 0)
		return;
	wp->fd = sys_openat(&w->st.sys_walk, AT_FDCWD, real, O_PATH | open_flags(t, d->parent));
	wp->d = wp->fd >= 0 ? d->parent : NULL;
}

/* Open d, below the step's parent or by its path: a descriptor, or -errno. */
static int open_dir(struct fsnw *w, struct tree *t, struct tdir *d, struct walk_parent *wp)
{
	int flags = O_RDONLY | open_flags(t, d), fd;

	if (wp->d != d->parent || !d->parent)
		parent_open(w, t, d, wp);
	dir_point(TP_VISIT, d);
	if (wp->d && wp->d == d->parent) {
		fd = sys_openat(&w->st.sys_walk, wp->fd, d->name, flags);
	} else {
		char path[PATH_MAX];
		int n = tdir_real_path_into(d, path, sizeof(path));

		fd = n < 0 ? n : sys_openat(&w->st.sys_walk, AT_FDCWD, path, flags);
	}
	if (fd >= 0)
		dir_point(TP_OPENED, d);
	return fd;
}

/* Another filesystem, not followed under FSNW_WATCH_ONE_FS? */
static bool other_fs(struct fsnw *w, struct tree *t, struct tdir *d, int fd)
{
	struct stat st;

	if (d == t->root || !(t->lw->flags & FSNW_WATCH_ONE_FS))
		return false;
	return sys_fstat(&w->st.sys_walk, fd, &st) == 0 && st.st_dev != t->root_dev;
}

/* Take back the watch d's read made. */
static void unwatch(struct fsnw *w, struct tdir *d)
{
	d->l->tnode = NULL;
	kwatch_undo(w, d->l);
	d->l = NULL;
}

/* Read d: watch it, list it, check that it is d. 0, 1 (wait), -errno. */
static int read_dir(struct fsnw *w, struct tree *t, struct tdir *d, int fd, struct tdir **out)
{
	struct tlisting *lst;
	bool by_path;
	int ret = watch_fd(w, t, d, fd, &by_path, out);

	if (ret)
		return ret;
	d = *out;
	dir_point(TP_WATCHED, d);
	lst = mem_zalloc(sizeof(*lst));
	if (!lst) {
		if (by_path)
			unwatch(w, d);
		return -ENOMEM;
	}
	htab_init(&lst->touched);
	lst->by_path = by_path;
	lst->moves_at = t->dir_moves;
	d->walk_gen = t->ts->window_gen;
	if (d == t->root)
		root_opened(w, t, d, fd);
	ret = list_fd(w, fd, lst, d->synth);
	if (ret == 0 && !identity_holds(w, d, fd, lst))
		ret = 1;
	if (ret) {
		mem_free(lst->e);
		mem_free(lst->names);
		mem_free(lst);
		if (d->state != TD_LIVE && d->state != TD_RELIST && d->l)
			unwatch(w, d); /* what the path led to is not d: its watch is not d's */
		return ret;
	}
	walk_listing_free(d);
	d->unproven = !d->ino_known && d != t->root;
	d->ino = lst->self;
	d->ino_known = lst->self != 0;
	d->lst = lst;
	return 0;
}

static void visit(struct fsnw *w, struct tree *t, struct tdir *d, struct walk_parent *wp)
{
	struct tdir *x = d;
	int fd = open_dir(w, t, d, wp), ret;

	if (fd < 0) {
		read_failed(w, t, d, fd);
		return;
	}
	/* Its echoes (OPEN, CLOSE_NOWRITE on its parent) are ours, even if
	 * its watch fails. */
	d->walk_gen = t->ts->window_gen;
	if (other_fs(w, t, d, fd)) {
		sys_close(&w->st.sys_walk, fd);
		tdir_set_state(d, TD_FAILED); /* not followed: nothing is lost */
		return;
	}
	ret = read_dir(w, t, d, fd, &x);
	sys_close(&w->st.sys_walk, fd);
	if (!ret)
		dir_point(TP_LISTED, x);
	if (ret) {
		read_failed(w, t, x, ret);
		return;
	}
	/* After a want of resources, what happened meanwhile is lost: say so
	 * again now that the tree follows it. */
	if (x->starved)
		handle_overflow(w, OVERFLOW_UNWATCHED);
	x->starved = false;
	x->tries = 0;
	x->conflict = false;
	tdir_set_state(x, TD_PROVISIONAL);
}

void walk_step(struct fsnw *w, struct tree *t, unsigned *budget)
{
	struct walk_parent wp = { NULL, -1 };

	while (*budget && !list_empty(&t->visits) && !t->ending) {
		struct tdir *d = list_first(&t->visits, struct tdir, qnode);

		(*budget)--;
		visit(w, t, d, &wp);
		if (t->add_err)
			break;
	}
	parent_close(w, &wp);
}

/* ---- making a listing stand ---- */

/* Did the root's path lead to it when this window closed (a stat a window)? */
static bool root_unmoved(struct fsnw *w, struct tree *t)
{
	uint32_t gen = t->ts->window_gen + 1;

	if (t->root_gen != gen) {
		t->root_gen = gen;
		t->root_ok = tree_root_still_there(w, t);
	}
	return t->root_ok;
}

/*
 * Is the watch d's read made by its path the listed directory's? Asked
 * only when the window read a delete or move of a directory, or the root
 * moved: the path is opened again, and where it still leads to the listed
 * inode, its descriptor's watch is compared with d's (another watch found
 * replaces d's, with FSNW_OVERFLOW: what the other reported as d's, and
 * what d's own missed meanwhile, is lost). false: it cannot be told.
 */
static bool watch_checked(struct fsnw *w, struct tdir *d)
{
	char path[PATH_MAX];
	struct link *l = NULL;
	struct stat st;
	int fd, ret = -ENOENT;

	if (tdir_real_path_into(d, path, sizeof(path)) < 0)
		return false;
	fd = sys_openat(&w->st.sys_walk, AT_FDCWD, path, O_PATH | O_DIRECTORY | O_NOFOLLOW);
	if (fd < 0)
		return false;
	if (sys_fstat(&w->st.sys_walk, fd, &st) == 0 && st.st_ino == d->lst->self)
		ret = attach_fd(w, d->t, fd, &l);
	sys_close(&w->st.sys_walk, fd);
	if (ret < 0)
		return false;
	if (l->kw == d->l->kw) {
		kwatch_undo(w, l);
		return true;
	}
	if (other_link(l)) {
		kwatch_undo(w, l); /* the listed inode is another directory's */
		return false;
	}
	unwatch(w, d);
	take_link(w, d, l);
	handle_overflow(w, OVERFLOW_UNWATCHED);
	return true;
}

enum proof { PROVEN, UNPROVEN, PROOF_LATER };

/*
 * Is d's watch the listed directory's? One whose path leads elsewhere by
 * now (it moved again, or went) is checked again when the next window
 * closes, after the events that say where it went: a few times.
 */
static enum proof watch_proven(struct fsnw *w, struct tdir *d)
{
	struct tlisting *lst = d->lst;
	struct tree *t = d->t;

	if (!lst->by_path)
		return PROVEN;
	if (!lst->checks && t->dir_moves == lst->moves_at && root_unmoved(w, t))
		return PROVEN;
	if (watch_checked(w, d))
		return PROVEN;
	return ++lst->checks < PROOF_TRIES ? PROOF_LATER : UNPROVEN;
}

/* A subdirectory the listing found, under a name no event touched. */
static void listed_dir(struct fsnw *w, struct tree *t, struct tdir *d, const struct tent *e,
		       const char *name)
{
	struct tdir *c = tdir_child(t, d, name, e->len);

	if (c && c->ino_known && c->ino == e->ino) {
		c->listed = true; /* known, and the same */
		return;
	}
	if (c)
		tdir_to_limbo(c); /* another directory than the tree had there */
	c = tdir_new(t, d, name, e->len);
	if (!c) {
		tree_need_relist(w, d);
		return;
	}
	c->ino = e->ino;
	c->ino_known = true;
	c->synth = d->synth;
	c->listed = true;
	tdir_set_state(c, TD_PENDING);
}

/* The tree has subdirectories of d the listing lacks, under names no event
 * touched: they went without an event this tree read. */
static void unlisted_dirs(struct tdir *d, const struct tlisting *lst)
{
	struct tdir *c = d->child, *next;

	for (; c; c = next) {
		next = c->next;
		if (!c->listed && !touched(lst, c->name, c->namelen))
			tdir_to_limbo(c);
		c->listed = false;
	}
}

void walk_commit(struct fsnw *w, struct tdir *d)
{
	struct tree *t = d->t;
	struct tlisting *lst = d->lst;
	bool synth = d->synth && (t->lw->mask & FSNW_CREATE);

	switch (watch_proven(w, d)) {
	case PROVEN:
		break;
	case PROOF_LATER:
		tdir_set_state(d, TD_PROVISIONAL); /* the window stays open for it */
		return;
	case UNPROVEN:
		/* Its watch may be of another directory, whose events were
		 * reported as d's: FSNW_OVERFLOW, and d is read again, watched
		 * by its descriptor, once the events say where it is. */
		handle_overflow(w, OVERFLOW_UNWATCHED);
		walk_listing_free(d);
		unwatch(w, d);
		wait_again(w, d, false);
		return;
	}
	if (lst->lost) {
		/* A touched name could not be recorded: read it all again. */
		walk_listing_free(d);
		tdir_set_state(d, TD_RELIST);
		return;
	}
	for (size_t i = 0; i < lst->n; i++) {
		const struct tent *e = &lst->e[i];
		const char *name = lst->names + e->off;

		if (touched(lst, name, e->len))
			continue;
		if (synth) {
			tree_report(w, t, d, FSNW_CREATE | FSNW_SYNTHETIC | (e->dir ? FSNW_ISDIR : 0),
				    0, name, e->len);
			w->st.events_synthetic++;
		}
		if (e->dir)
			listed_dir(w, t, d, e, name);
	}
	unlisted_dirs(d, lst);
	walk_listing_free(d);
	d->unproven = false;
	d->synth = false;
	tdir_set_state(d, TD_LIVE);
}
