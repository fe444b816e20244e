/* SPDX-License-Identifier: MIT */
/*
 * Tree watches against a live reader, one race at a time, made to happen
 * on purpose: a test point of the library (lib/testhook.h, test builds
 * only) runs the racing change at the moment a walk is about to read a
 * directory, has opened one, or a fanotify batch is about to resolve its
 * directories. Each case applies the events to a view the way the contract
 * says (examples/tree-view.c) and checks that, once the changes stop and
 * every event is read, the view is the tree: what find lists, each a
 * directory or not.
 *
 * The classes are those seen under a live reader before walks' listings
 * were merged with the stream (a directory moved while a walk read its new
 * parent, a new directory renamed, or its parent renamed, before its read,
 * a name reused, a swap inside a directory moved in, resolutions overtaken
 * by a rename), and the consumer's own (renames that overtake a listing, a
 * swap after an overflow).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test-common.h"
#include "fantree.h"
#include "testhook.h"
#include "tree-view.h"

#define MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE | FSNW_DELETE_SELF | FSNW_MOVE_SELF | \
	      FSNW_ATTRIB)

struct race {
	struct fsnw *w;
	char *top;               /* a private tmpfs */
	char W[PATH_MAX];        /* the tree */
	char O[PATH_MAX];        /* outside it */
	struct tree_view v;
	enum test_point when;
	const char *at;          /* act at the point whose path ends so (NULL: any) */
	uint32_t capacity;       /* of the handle's queue (0: the default) */
	bool overflow;           /* the case overflows on purpose: the view rescans */
	void (*act)(struct race *r);
	int fired;
	int sentinel;
	int placings;            /* TP_RESOLVE points met (outrun_then_remove) */
	bool fill;               /* outrun_then_remove fills the directory it moves */
};

static bool ends_with(const char *s, const char *tail)
{
	size_t a = strlen(s), b = strlen(tail);

	return a >= b && !strcmp(s + a - b, tail);
}

static void hook(enum test_point p, const char *path, void *arg)
{
	struct race *r = arg;

	if (!r->act || r->fired || p != r->when || (r->at && (!path || !ends_with(path, r->at))))
		return;
	r->fired++;
	r->act(r);
}

/* A path below the tree or outside it. */
static const char *at_w(struct race *r, char *buf, const char *rel)
{
	ck_assert(strlen(r->W) + strlen(rel) + 2 <= PATH_MAX);
	return pjoin(buf, r->W, rel);
}

static const char *at_o(struct race *r, char *buf, const char *rel)
{
	ck_assert(strlen(r->O) + strlen(rel) + 2 <= PATH_MAX);
	return pjoin(buf, r->O, rel);
}

static void mv(const char *a, const char *b)
{
	ck_assert_msg(rename(a, b) == 0, "rename %s %s: %s", a, b, strerror(errno));
}

static void mkd(const char *p)
{
	ck_assert_msg(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
}

static void mkf(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "create %s: %s", p, strerror(errno));
	close(fd);
}

/* d with n files and a subdirectory s holding one more. */
static void fill(const char *d, int n)
{
	char p[PATH_MAX];

	for (int i = 0; i < n; i++) {
		ck_assert(snprintf(p, sizeof(p), "%s/f%d", d, i) < (int)sizeof(p));
		mkf(p);
	}
	ck_assert(snprintf(p, sizeof(p), "%s/s", d) < (int)sizeof(p));
	mkd(p);
	ck_assert(snprintf(p, sizeof(p), "%s/s/g", d) < (int)sizeof(p));
	mkf(p);
}

static void race_start(struct race *r, enum test_point when, const char *at,
		       void (*act)(struct race *))
{
	memset(r, 0, sizeof(*r));
	r->top = tmpfs_private();
	pjoin(r->W, r->top, "W");
	pjoin(r->O, r->top, "O");
	mkd(r->W);
	mkd(r->O);
	r->when = when;
	r->at = at;
	r->act = act;
}

/* Read until a read comes back empty and the view's scan stands. */
static void settle(struct race *r)
{
	struct fsnw_event ev[64];
	int n, left = 1000;

	while (left--) {
		n = fsnw_read(r->w, ev, 64, 0);
		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++)
			ck_assert_int_ge(tree_view_event(&r->v, &ev[i]), 0);
		if (n == 0) {
			ck_assert_int_eq(tree_view_quiet(&r->v), 0);
			if (!tree_view_unsettled(&r->v))
				return;
		}
	}
	ck_abort_msg("the view never settled");
}

/* Watch the tree (the view starts from a scan, which stands before the
 * race: a scan after it would hide what the events got wrong), then arm
 * the race. */
static void race_watch(struct race *r)
{
	int wid;

	r->w = test_open(0, r->capacity, 0);
	wid = fsnw_add(r->w, r->W, MASK, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(tree_view_init(&r->v, r->W, wid, NULL), 0);
	ck_assert_int_eq(tree_view_scan(&r->v), 0);
	settle(r);
	test_hook_set(hook, r);
}

static void count_diff(void *arg, const char *path, char type, bool created)
{
	fprintf(stderr, "  %s %c %s\n", created ? "missing from the view:" :
		"in the view, not on disk:", type, path);
	++*(int *)arg;
}

/*
 * Read and apply until the sentinel (a new file at the root) has been
 * applied, a read came back empty and the view's scan stands; then the
 * view must be the tree.
 */
/* Catch up (a sentinel, then an empty read with the view's scan standing)
 * and compare the view with the disk: returns how many entries differ. The
 * events alone made the view: no overflow and no scan but the first
 * (unless the case overflows on purpose). */
static int race_check(struct race *r)
{
	char name[32], p[PATH_MAX];
	struct fsnw_event ev[64];
	struct snapshot disk;
	bool seen = false;
	int fd, n, left = 20000;

	snprintf(name, sizeof(name), ".sync%d", ++r->sentinel);
	mkf(at_w(r, p, name));
	while (left--) {
		size_t lost = r->v.overflows;

		n = fsnw_read(r->w, ev, 64, seen ? 0 : 5000);
		ck_assert_int_ge(n, 0);
		for (int i = 0; i < n; i++) {
			ck_assert_int_ge(tree_view_event(&r->v, &ev[i]), 0);
			if (ev[i].name && !strcmp(ev[i].name, name))
				seen = true;
		}
		if (!seen && r->v.overflows != lost) {
			/* The sentinel may have been lost with the rest: another. */
			snprintf(name, sizeof(name), ".sync%d", ++r->sentinel);
			mkf(at_w(r, p, name));
			continue;
		}
		if (n == 0) {
			ck_assert_msg(seen, "the sentinel never came");
			ck_assert_int_eq(tree_view_quiet(&r->v), 0);
			if (!tree_view_unsettled(&r->v))
				break;
		}
	}
	ck_assert_int_gt(left, 0);
	/* The interleaving the case is for happened. */
	ck_assert_int_eq(r->fired, r->act ? 1 : 0);
	snap_init(&disk);
	fd = open(r->W, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(snap_walk(&disk, fd, ""), 0);
	close(fd);
	n = 0;
	ck_assert_int_eq(snap_diff_below(&r->v.view, "", &disk, count_diff, &n), 0);
	if (n != 0) {
		fputs("the view:\n", stderr);
		snap_dump(&r->v.view, stderr);
		fputs("the tree:\n", stderr);
		snap_dump(&disk, stderr);
	}
	snap_fini(&disk);
	if (r->overflow) {
		ck_assert_int_ge(r->v.overflows, 1);
		ck_assert_int_ge(r->v.scans, 2);
	} else {
		ck_assert_int_eq(r->v.overflows, 0);
		ck_assert_int_eq(r->v.scans, 1);
	}
	return n;
}

static void race_end(struct race *r)
{
	test_hook_set(NULL, NULL);
	ck_assert_int_eq(r->fired, r->act ? 1 : 0); /* the race was run, once */
	tree_view_fini(&r->v);
	fsnw_close(r->w);
	tmpfs_private_remove(r->top);
}

/* ---- a directory moved into a new one while a walk was to read it ---- */

static void carry_into_new(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "K/include"), at_w(r, b, "new/inc"));
}

static void carry_into_new_then_move(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	carry_into_new(r);
	mv(at_w(r, a, "new"), at_w(r, b, "K/new2"));
}

/* Returns how many entries the view differs by. */
static int carry_case(void (*act)(struct race *))
{
	struct race r;
	int differ;
	char p[PATH_MAX];

	race_start(&r, TP_VISIT, "/new", act);
	mkd(at_w(&r, p, "K"));
	mkd(at_w(&r, p, "K/include"));
	fill(p, 20);
	race_watch(&r);
	mkd(at_w(&r, p, "new"));
	differ = race_check(&r);
	race_end(&r);
	return differ;
}

START_TEST(dir_carried_into_new_dir)
{
	ck_assert_int_eq(carry_case(carry_into_new), 0);
}
END_TEST

START_TEST(dir_carried_into_new_dir_moved_on)
{
	ck_assert_int_eq(carry_case(carry_into_new_then_move), 0);
}
END_TEST

/* ---- a new directory renamed (or its parent) before its read ---- */

static void fill_then_rename(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mkd(at_w(r, a, "a/b"));
	mkf(at_w(r, a, "a/f"));
	mv(at_w(r, a, "a"), at_w(r, b, "a2"));
}

START_TEST(new_dir_filled_and_renamed)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_VISIT, "/a", fill_then_rename);
	race_watch(&r);
	mkd(at_w(&r, p, "a"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

static void fill_then_rename_parent(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mkf(at_w(r, a, "p/b/f"));
	mv(at_w(r, a, "p"), at_w(r, b, "p2"));
}

START_TEST(new_dir_parent_renamed)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_VISIT, "/p/b", fill_then_rename_parent);
	mkd(at_w(&r, p, "p"));
	race_watch(&r);
	mkd(at_w(&r, p, "p/b"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

static void rename_walked_parent(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "t"), at_w(r, b, "t2"));
}

/* A large directory moved into a new one, whose parent is renamed while
 * the walk is inside it. */
START_TEST(moved_in_below_new_then_renamed)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, "/t/src/s", rename_walked_parent);
	mkd(at_o(&r, p, "src"));
	fill(p, 300);
	race_watch(&r);
	mkd(at_w(&r, p, "t"));
	mv(at_o(&r, p, "src"), at_w(&r, q, "t/src"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- a name reused: the read meets the new directory ---- */

static void reuse_name(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "n"), at_w(r, b, "m"));
	mkd(at_w(r, a, "n"));
	mkf(at_w(r, a, "n/f2"));
}

/* Returns how many entries the view differs by. */
static int reuse_case(enum test_point when)
{
	struct race r;
	int differ;
	char p[PATH_MAX];

	race_start(&r, when, "/n", reuse_name);
	race_watch(&r);
	mkd(at_w(&r, p, "n"));
	mkf(at_w(&r, p, "n/f1"));
	differ = race_check(&r);
	race_end(&r);
	return differ;
}

START_TEST(name_reused_before_read)
{
	ck_assert_int_eq(reuse_case(TP_VISIT), 0);
}
END_TEST

/* Opened the old directory, watched after the rename: the watch is of
 * what moved to m. */
START_TEST(name_reused_after_open)
{
	ck_assert_int_eq(reuse_case(TP_OPENED), 0);
}
END_TEST

/* ---- a swap inside a directory moved in, while it is read ---- */

static void swap_inside(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "x/p"), at_w(r, b, "x/t"));
	mv(at_w(r, a, "x/q"), at_w(r, b, "x/p"));
	mv(at_w(r, a, "x/t"), at_w(r, b, "x/q"));
}

START_TEST(swap_inside_moved_in)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	/* inotify reads x when its MOVED_TO comes; fanotify lists it. */
	race_start(&r, test_backend == FSNW_BACKEND_INOTIFY ? TP_OPENED : TP_VISIT,
		   test_backend == FSNW_BACKEND_INOTIFY ? "/x" : NULL, swap_inside);
	mkd(at_o(&r, p, "x"));
	mkd(at_o(&r, p, "x/p"));
	fill(p, 3);
	mkd(at_o(&r, p, "x/q"));
	mkf(at_o(&r, p, "x/q/only-in-q"));
	race_watch(&r);
	mv(at_o(&r, p, "x"), at_w(&r, q, "x"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* Entries of x named by events that do not create, delete or move them
 * (an ATTRIB of a file and of a subdirectory) while x's listing waits to
 * stand: the listing still answers for them. */
static void attrib_inside(struct race *r)
{
	char a[PATH_MAX];

	ck_assert_int_eq(utimensat(AT_FDCWD, at_w(r, a, "x/f0"), NULL, 0), 0);
	ck_assert_int_eq(chmod(at_w(r, a, "x/s"), 0700), 0);
}

START_TEST(attrib_inside_moved_in)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, test_backend == FSNW_BACKEND_INOTIFY ? TP_LISTED : TP_VISIT,
		   test_backend == FSNW_BACKEND_INOTIFY ? "/x" : NULL, attrib_inside);
	mkd(at_o(&r, p, "x"));
	fill(p, 3);
	race_watch(&r);
	mv(at_o(&r, p, "x"), at_w(&r, q, "x"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- resolutions overtaken by a swap (fanotify) ---- */

static void swap_parents(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "a"), at_w(r, b, "t"));
	mv(at_w(r, a, "z"), at_w(r, b, "a"));
	mv(at_w(r, a, "t"), at_w(r, b, "z"));
}

START_TEST(resolutions_overtaken)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, swap_parents);
	for (int i = 0; i < 100; i++) {
		ck_assert(snprintf(p, sizeof(p), "%s/a/d%d", r.W, i) < (int)sizeof(p));
		make_dirs(r.W, p + strlen(r.W) + 1);
		snprintf(p, sizeof(p), "%s/z/e%d", r.W, i);
		make_dirs(r.W, p + strlen(r.W) + 1);
	}
	race_watch(&r);
	for (int i = 0; i < 100; i++) {
		snprintf(p, sizeof(p), "%s/a/d%d/new", r.W, i);
		mkf(p);
		snprintf(p, sizeof(p), "%s/z/e%d/new", r.W, i);
		mkf(p);
	}
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * The kernel moves a renamed dentry before it queues the rename's events
 * (vfs_rename: d_move, then fsnotify_move), so a resolution can read the
 * new path while the queue still looks empty. Here the rename comes at the
 * resolution and the look after it is made to find the queue empty: the
 * create below is placed at the path from after the rename. The rename's
 * own events then come in a batch of their own (the directory it left is
 * not in the cache), whose first pass finds the directory at its
 * destination already: FSNW_OVERFLOW, and the view, rescanned, is right.
 */
static void move_unseen(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "a/p"), at_w(r, b, "p2"));
	test_hook_hide_queue(1);
}

START_TEST(rename_seen_before_its_events)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, move_unseen);
	r.overflow = true;
	make_dirs(r.W, "a/p/q");
	race_watch(&r);
	mkf(at_w(&r, p, "a/p/q/new"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A swap read late, met by a resolution that walks a name: the cache knows
 * a (from an event in it) and not t, inside b. At the resolution of t, a
 * and b are swapped, and the look at the queue after it is made to find it
 * empty. The path of t now is a/t, and the cache's a is the other
 * directory: t must not be placed under it (its create would then be
 * reported at a/t/new, and a, carrying t, would later move to b's place).
 * The resolution checks the directory it finds by name against its handle
 * now, and the batch waits for the swap's events.
 */
static void swap_late(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "a"), at_w(r, b, "x"));
	mv(at_w(r, a, "b"), at_w(r, b, "a"));
	mv(at_w(r, a, "x"), at_w(r, b, "b"));
	test_hook_hide_queue(1);
}

START_TEST(swap_behind_a_name_at_resolution)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, NULL);
	make_dirs(r.W, "a/in");
	make_dirs(r.W, "b/t");
	race_watch(&r);
	mkf(at_w(&r, p, "a/in/known"));
	ck_assert_int_eq(race_check(&r), 0);
	r.act = swap_late;
	mkf(at_w(&r, p, "b/t/new"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A resolution puts a directory where the stream, later in the same
 * batch, puts another: u/g opens a batch, then p/n is made and q/f
 * created. At the resolution n leaves and q takes its name, and the look
 * at the queue after it finds it empty. q, resolved, is linked at p/n;
 * placing the batch, the create of n takes that place back, and q has
 * none when its own event comes. That event is not known to be outside
 * (q never went): FSNW_OVERFLOW, and the view, rescanned, is right.
 */
static void take_the_name(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "p/n"), at_w(r, b, "o"));
	mv(at_w(r, a, "q"), at_w(r, b, "p/n"));
	test_hook_hide_queue(1);
}

START_TEST(placed_where_the_stream_puts_another)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, NULL);
	make_dirs(r.W, "p/known");
	make_dirs(r.W, "q");
	make_dirs(r.W, "u");
	race_watch(&r);
	mkf(at_w(&r, p, "p/known/f"));
	ck_assert_int_eq(race_check(&r), 0);
	r.overflow = true;
	r.act = take_the_name;
	mkf(at_w(&r, p, "u/g"));
	mkd(at_w(&r, p, "p/n"));
	mkf(at_w(&r, p, "q/f"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * As above, with q's event first: placing the batch, q/f is reported at
 * p/n/f, where q is at the resolution, and then the create of n takes that
 * place from q, which is still there: the report came from ahead of the
 * stream. FSNW_OVERFLOW, and the view, rescanned, is right.
 */
START_TEST(reported_ahead_then_displaced)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, NULL);
	make_dirs(r.W, "p/known");
	make_dirs(r.W, "q");
	race_watch(&r);
	mkf(at_w(&r, p, "p/known/f"));
	ck_assert_int_eq(race_check(&r), 0);
	r.overflow = true;
	r.act = take_the_name;
	mkf(at_w(&r, p, "q/f"));
	mkd(at_w(&r, p, "p/n"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A resolution meets, by its handle, a directory the cache has elsewhere:
 * the cache knows p/m, and sub, inside it, is resolved after m moved to
 * q/m2, the look at the queue after it finding it empty. The path now has
 * m moved by a rename not read yet: the batch waits for it, and the create
 * in sub is reported at p/m/sub, where it happened, with no FSNW_OVERFLOW.
 */
static void move_m(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "p/m"), at_w(r, b, "q/m2"));
	test_hook_hide_queue(1);
}

START_TEST(resolution_meets_a_moved_directory)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, NULL);
	make_dirs(r.W, "p/m/sub");
	make_dirs(r.W, "q");
	race_watch(&r);
	mkf(at_w(&r, p, "p/m/known"));
	ck_assert_int_eq(race_check(&r), 0);
	r.act = move_m;
	mkf(at_w(&r, p, "p/m/sub/f"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A directory renamed over an empty one the cache knows takes its place:
 * the other is gone, not placed ahead of the stream, and nothing was lost
 * (no FSNW_OVERFLOW).
 */
START_TEST(renamed_over_an_empty_directory)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_RESOLVE, NULL, NULL);
	make_dirs(r.W, "a/in");
	make_dirs(r.W, "b/c");
	race_watch(&r);
	mkf(at_w(&r, p, "b/c/f"));
	ck_assert_int_eq(race_check(&r), 0);
	ck_assert_int_eq(unlink(at_w(&r, p, "b/c/f")), 0);
	ck_assert_int_eq(rmdir(at_w(&r, p, "b/c")), 0);
	mv(at_w(&r, p, "a"), at_w(&r, q, "b"));
	mkf(at_w(&r, p, "b/in/g"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A directory the cache never met goes while the batch that needs it is
 * placed again and again: a writer keeps the kernel queue busy at every
 * placing until the batch is placed anyway. The last drain again reads the
 * create of p/f/d (and of what d holds), and right before the last
 * placing's resolutions, d moves to the tree's root and p goes. f's handle
 * is stale then, and its delete is not read yet: the kernel removes an
 * entry before it queues the delete.
 */
static void outrun_then_remove(enum test_point p, const char *path, void *arg)
{
	struct race *r = arg;
	char a[PATH_MAX], b[PATH_MAX];

	(void)path;
	if (p != TP_RESOLVE || r->fired)
		return;
	if (++r->placings < FANTREE_REDOS_MAX) {
		snprintf(b, sizeof(b), "busy%d", r->placings);
		mkf(at_o(r, a, b));
		return;
	}
	if (r->placings == FANTREE_REDOS_MAX) {
		mkd(at_w(r, a, "p/f/d"));
		if (r->fill) {
			mkd(at_w(r, a, "p/f/d/e"));
			mkf(at_w(r, a, "p/f/d/x"));
		}
		return;
	}
	r->fired++;
	mv(at_w(r, a, "p/f/d"), at_w(r, b, "d2"));
	ck_assert_int_eq(rmdir(at_w(r, a, "p/f")), 0);
	ck_assert_int_eq(rmdir(at_w(r, a, "p")), 0);
	if (r->overflow)
		test_hook_skip_delete_waits(1);
}

static void no_act(struct race *r)
{
	(void)r;
}

/* The race above; the batch opens with an event in q, which it resolves.
 * The view must be the tree (race_check); returns the FSNW_OVERFLOWs it
 * read. */
static size_t outrun_case(bool fill, bool delete_unread)
{
	struct race r;
	char p[PATH_MAX];
	size_t overflows;

	race_start(&r, TP_RESOLVE, NULL, NULL);
	r.fill = fill;
	r.overflow = delete_unread;
	make_dirs(r.W, "p/f");
	make_dirs(r.W, "q");
	race_watch(&r);
	r.act = no_act; /* outrun_then_remove acts, once (race_check) */
	test_hook_set(outrun_then_remove, &r);
	mkf(at_w(&r, p, "q/g"));
	ck_assert_int_eq(race_check(&r), 0);
	overflows = r.v.overflows;
	race_end(&r);
	return overflows;
}

/*
 * The create of d in f waits for f's delete, which puts f at p/f: it is
 * reported there, and so are d's content and its rename out, with no
 * FSNW_OVERFLOW. Placed at once, the create was dropped as outside, and
 * what d holds was reported at d2, from after the rename.
 */
START_TEST(gone_while_the_batch_is_outrun)
{
	ck_assert_uint_eq(outrun_case(true, false), 0);
}
END_TEST

/*
 * As above, with f's delete read only after the batch is placed: nothing
 * says where f was, and it may have been in the tree (it was), so the
 * create of d in it is FSNW_OVERFLOW. Dropped as outside, it went
 * unreported without a word.
 */
START_TEST(gone_with_its_delete_unread)
{
	ck_assert_uint_ge(outrun_case(false, true), 1);
}
END_TEST

/*
 * A tmpfs mounted inside the tree goes while the reader reads: the umount
 * comes right before a read of the kernel queue, so the read brings the
 * mount root's IN_UNMOUNT and IN_IGNORED before the mount table is looked
 * at. The directory under the mount is the one at that path now, and it
 * must be watched: a file made in it afterwards is in the view.
 */
static void unmount_m(struct race *r)
{
	char p[PATH_MAX];

	ck_assert_int_eq(umount2(at_w(r, p, "m"), MNT_DETACH), 0);
}

START_TEST(unmounted_under_live_reader)
{
	struct race r;
	char p[PATH_MAX];

	race_start(&r, TP_READ, NULL, NULL);
	r.overflow = true; /* the mount and the unmount each say FSNW_OVERFLOW */
	mkd(at_w(&r, p, "m"));
	race_watch(&r);
	ck_assert_int_eq(mount("torture", at_w(&r, p, "m"), "tmpfs", 0, "size=1m"), 0);
	mkd(at_w(&r, p, "m/in"));
	ck_assert_int_eq(race_check(&r), 0);
	r.act = unmount_m;
	ck_assert_int_eq(race_check(&r), 0);
	mkf(at_w(&r, p, "m/after"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- a reader that reads only afterwards: renames overtake listings ---- */

/* A directory moved in, renamed, and another moved over its first name. */
START_TEST(moved_in_then_renamed_and_replaced)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	mkd(at_o(&r, p, "x"));
	fill(p, 4);
	mkd(at_w(&r, p, "y"));
	fill(p, 2);
	race_watch(&r);
	mv(at_o(&r, p, "x"), at_w(&r, q, "c"));
	mv(at_w(&r, p, "c"), at_w(&r, q, "r"));
	mv(at_w(&r, p, "y"), at_w(&r, q, "c"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* The type comes from the event: a file created, its directory renamed,
 * then a directory of that name made where it was. */
START_TEST(type_from_the_event)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	mkd(at_w(&r, p, "a"));
	race_watch(&r);
	mkf(at_w(&r, p, "a/x"));
	mv(at_w(&r, p, "a"), at_w(&r, q, "b"));
	mkd(at_w(&r, p, "a"));
	mkd(at_w(&r, p, "a/x"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* A swap inside a directory moved in, all before the reader reads. */
START_TEST(swap_after_move_in)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	mkd(at_o(&r, p, "x"));
	mkd(at_o(&r, p, "x/p"));
	fill(p, 2);
	mkd(at_o(&r, p, "x/q"));
	mkf(at_o(&r, p, "x/q/only-in-q"));
	race_watch(&r);
	mv(at_o(&r, p, "x"), at_w(&r, q, "x"));
	swap_inside(&r);
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* The queue overflows, then two directories change places: the view's
 * scan after the overflow converges. */
START_TEST(overflow_then_swap)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	r.capacity = 16;
	r.overflow = true;
	mkd(at_w(&r, p, "m"));
	fill(p, 3);
	mkd(at_w(&r, p, "n"));
	fill(p, 5);
	race_watch(&r);
	for (int i = 0; i < 40; i++) {
		ck_assert(snprintf(q, sizeof(q), "%s/many%d", r.W, i) < (int)sizeof(q));
		mkf(q);
	}
	mv(at_w(&r, p, "m"), at_w(&r, q, "t"));
	mv(at_w(&r, p, "n"), at_w(&r, q, "m"));
	mv(at_w(&r, p, "t"), at_w(&r, q, "n"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- events the kernel merges (fanotify, one process, reader behind) ---- */

START_TEST(rename_repeated)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	mkd(at_w(&r, p, "d"));
	fill(p, 2);
	race_watch(&r);
	mv(at_w(&r, p, "d"), at_w(&r, q, "r"));
	mv(at_w(&r, p, "r"), at_w(&r, q, "d"));
	mv(at_w(&r, p, "d"), at_w(&r, q, "r"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

START_TEST(create_renamed_back_deleted)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	race_watch(&r);
	mkf(at_w(&r, p, "f"));
	mv(at_w(&r, p, "f"), at_w(&r, q, "g"));
	mv(at_w(&r, p, "g"), at_w(&r, q, "f"));
	ck_assert_int_eq(unlink(at_w(&r, p, "f")), 0);
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* A file renamed twice leaves a name that a new directory then takes: what
 * is there now is another object, whose own events speak for the name. */
START_TEST(name_taken_after_renames)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	race_watch(&r);
	mkf(at_w(&r, p, "a"));
	mv(at_w(&r, p, "a"), at_w(&r, q, "b"));
	mv(at_w(&r, p, "b"), at_w(&r, q, "c"));
	mkd(at_w(&r, p, "a"));
	mkf(at_w(&r, p, "a/f"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* Two files swapped through a third name: the merge check looks at their
 * names once the queue is read empty. The directory of one is renamed just
 * then, before its event is read: the look must not take the name for gone. */
static void move_c(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "c"), at_w(r, b, "e/g"));
}

START_TEST(swap_then_parent_renamed_at_check)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VERIFY, NULL, move_c);
	mkd(at_w(&r, p, "a"));
	mkd(at_w(&r, p, "b"));
	mkd(at_w(&r, p, "c"));
	mkd(at_w(&r, p, "e"));
	mkf(at_w(&r, p, "a/f1"));
	mkf(at_w(&r, p, "c/f2"));
	race_watch(&r);
	mv(at_w(&r, p, "a/f1"), at_w(&r, q, "b/x"));
	mv(at_w(&r, p, "c/f2"), at_w(&r, q, "a/f1"));
	mv(at_w(&r, p, "b/x"), at_w(&r, q, "c/f2"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A directory renamed twice within a stretch (y reached, then left) is
 * looked at once the queue is read empty. A third rename comes just then,
 * its entry moved before its events are queued (d_move, then
 * fsnotify_move): the look finds z at q/z2 with the queue still empty. That
 * is a rename in flight, not one merged away: the look waits for one more
 * complete drain, which reads it. Moved there at once, a synthetic rename
 * came ahead of the real one, which then met the directory elsewhere:
 * FSNW_OVERFLOW.
 */
static void rename_in_flight(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "z"), at_w(r, b, "q/z2"));
	test_hook_hide_queue(1);
}

START_TEST(look_meets_a_rename_in_flight)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VERIFY, NULL, rename_in_flight);
	mkd(at_w(&r, p, "q"));
	mkd(at_w(&r, p, "x"));
	mkf(at_w(&r, p, "x/f"));
	race_watch(&r);
	mv(at_w(&r, p, "x"), at_w(&r, q, "y"));
	mv(at_w(&r, p, "y"), at_w(&r, q, "z"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* d's create and delete are one record, ahead of e's create in d and of
 * the move of e out of d: the delete must come after them. */
START_TEST(created_filled_deleted)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_VISIT, NULL, NULL);
	race_watch(&r);
	mkd(at_w(&r, p, "d"));
	mkd(at_w(&r, p, "d/e"));
	mkd(at_w(&r, p, "d/e/f"));
	mkf(at_w(&r, p, "d/e/f/g"));
	mv(at_w(&r, p, "d/e"), at_w(&r, q, "m"));
	ck_assert_int_eq(rmdir(at_w(&r, p, "d")), 0);
	mkd(at_w(&r, p, "d"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- a walk's watch by path, overtaken by a swap ---- */

/* At the open of src/x, before its watch: x and y trade places, so x's path
 * leads to y when the watch is made by it. */
static void swap_x_y(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX];

	mv(at_w(r, a, "src/x"), at_w(r, b, "src/t"));
	mv(at_w(r, a, "src/y"), at_w(r, b, "src/x"));
	mv(at_w(r, a, "src/t"), at_w(r, b, "src/y"));
}

/* The subdirectory of dir a listing has first: the walk reads it first. */
static const char *first_subdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	const char *first = NULL;

	ck_assert_ptr_nonnull(d);
	while (!first && (e = readdir(d)))
		if (e->d_type == DT_DIR && e->d_name[0] != '.')
			first = e->d_name[0] == 'x' ? "/src/x" : "/src/y";
	closedir(d);
	ck_assert_ptr_nonnull(first);
	return first;
}

START_TEST(watch_by_path_overtaken)
{
	struct race r;
	char p[PATH_MAX], q[PATH_MAX];

	race_start(&r, TP_OPENED, NULL, swap_x_y);
	r.overflow = true; /* the watch was another directory's: said, and read again */
	mkd(at_o(&r, p, "src"));
	mkd(at_o(&r, p, "src/x"));
	fill(p, 3);
	mkd(at_o(&r, p, "src/y"));
	fill(p, 4);
	/* The swap comes between the open and the watch of the first one
	 * read, whose path then leads to the other, not yet watched. */
	r.at = first_subdir(at_o(&r, p, "src"));
	race_watch(&r);
	mv(at_o(&r, p, "src"), at_w(&r, q, "src"));
	settle(&r);
	/* Each directory's own watch hears what is made in it now. */
	mkf(at_w(&r, p, "src/x/after"));
	mkd(at_w(&r, p, "src/y/later"));
	mkf(at_w(&r, p, "src/y/later/f"));
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- moved out, read live ---- */

/*
 * The kernel queues a move's MOVED_FROM and the moved directory's
 * MOVE_SELF one after the other, and a reader that keeps up may read
 * between them; the MOVE_SELF of each directory moved out is still
 * reported, where it was. No test point splits the two records: a child
 * process moves directories out while this one reads, and every run that
 * read between the two shows it (the counts say how often it happened).
 */
#define MOVED_OUT 400

static void move_all_out(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX], name[32];

	for (int i = 0; i < MOVED_OUT; i++) {
		snprintf(name, sizeof(name), "x%d", i);
		if (rename(at_w(r, a, name), at_o(r, b, name)) < 0)
			_exit(1);
	}
	snprintf(name, sizeof(name), ".moved");
	close(open(at_w(r, a, name), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	_exit(0);
}

START_TEST(moved_out_under_live_reader)
{
	struct fsnw_event ev[64];
	bool self[MOVED_OUT] = { false };
	struct race r;
	char p[PATH_MAX], name[32];
	int selves = 0, status, n;
	bool done = false;
	pid_t pid;

	race_start(&r, TP_VISIT, NULL, NULL);
	for (int i = 0; i < MOVED_OUT; i++) {
		snprintf(name, sizeof(name), "x%d", i);
		mkd(at_w(&r, p, name));
	}
	race_watch(&r);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		move_all_out(&r);
	while (!done) {
		n = fsnw_read(r.w, ev, 2, 10000);
		ck_assert_int_gt(n, 0);
		for (int i = 0; i < n; i++) {
			const char *x = strrchr(ev[i].path, '/');
			int k;

			ck_assert_int_ge(tree_view_event(&r.v, &ev[i]), 0);
			if (ev[i].name && !strcmp(ev[i].name, ".moved"))
				done = true;
			if (!(ev[i].mask & FSNW_MOVE_SELF) || !x || sscanf(x, "/x%d", &k) != 1)
				continue;
			ck_assert(k >= 0 && k < MOVED_OUT && !self[k]);
			self[k] = true;
			selves++;
		}
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The sentinel came after every move's two records. */
	ck_assert_int_eq(selves, MOVED_OUT);
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/*
 * A rename inside the tree whose MOVED_FROM a reader reads alone: the
 * kernel queues MOVED_FROM, MOVED_TO and the directory's MOVE_SELF one
 * after the other, and a read may land between the first two. The stream
 * then tells a move out and a move in with the same cookie; the MOVE_SELF
 * that follows is reported where the directory is now, as it is when the
 * three come in one read.
 */
#define RENAMED 400

static void rename_all(struct race *r)
{
	char a[PATH_MAX], b[PATH_MAX], from[32], to[32];

	for (int i = 0; i < RENAMED; i++) {
		snprintf(from, sizeof(from), "x%d", i);
		snprintf(to, sizeof(to), "y%d", i);
		if (rename(at_w(r, a, from), at_w(r, b, to)) < 0)
			_exit(1);
	}
	close(open(at_w(r, a, ".renamed"), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
	_exit(0);
}

START_TEST(renamed_under_live_reader)
{
	struct fsnw_event ev[64];
	bool self[RENAMED] = { false };
	struct race r;
	char p[PATH_MAX], name[32];
	int selves = 0, status, n;
	bool done = false;
	pid_t pid;

	race_start(&r, TP_VISIT, NULL, NULL);
	for (int i = 0; i < RENAMED; i++) {
		snprintf(name, sizeof(name), "x%d", i);
		mkd(at_w(&r, p, name));
	}
	race_watch(&r);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		rename_all(&r);
	while (!done) {
		n = fsnw_read(r.w, ev, 2, 10000);
		ck_assert_int_gt(n, 0);
		for (int i = 0; i < n; i++) {
			const char *x = strrchr(ev[i].path, '/');
			int k;

			ck_assert_int_ge(tree_view_event(&r.v, &ev[i]), 0);
			if (ev[i].name && !strcmp(ev[i].name, ".renamed"))
				done = true;
			if (!(ev[i].mask & FSNW_MOVE_SELF) || !x)
				continue;
			ck_assert_msg(sscanf(x, "/y%d", &k) == 1, "MOVE_SELF at %s", ev[i].path);
			ck_assert(k >= 0 && k < RENAMED && !self[k]);
			self[k] = true;
			selves++;
		}
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(selves, RENAMED);
	ck_assert_int_eq(race_check(&r), 0);
	race_end(&r);
}
END_TEST

/* ---- sequences of changes spread over the points a live reader meets ---- */

/*
 * A short sequence of changes, applied one by one at points a seed
 * chooses: at a test point (a walk about to read a directory, that opened,
 * watched or listed one, a read(2) of the kernel queue, a fanotify batch
 * about to resolve or check), or between two reads of one to three events.
 * Every seed is another interleaving of the same changes with the stream
 * and the walks, and each must end with the view equal to the tree. A
 * failure prints where each change went: a script (struct sched_at) that
 * replays it.
 */
struct step {
	char op;                 /* 'm' rename a to b, 'd' mkdir a, 'f' create a,
				  * 'u' unlink a, 'r' rmdir a, 'l' link a to b,
				  * 'F' mkdir a and fill it (fill) */
	const char *a, *b;       /* below the top: "W/..." or "O/..." */
};

#define SCHED_STEPS 16
#define AT_BETWEEN (-1)          /* between two reads */

/* Where a scripted step goes: the first such point after the step before. */
struct sched_at {
	int point;               /* enum test_point, or AT_BETWEEN */
	const char *at;          /* a test point's path ends so (NULL: any) */
};

struct sched {
	const char *top;
	const struct step *steps;
	int n, next;
	const struct sched_at *script; /* NULL: random */
	uint64_t rng;
	unsigned pct;            /* random: the chance, at each point, of the next step */
	struct sched_at done[SCHED_STEPS]; /* where each step went */
	char done_at[SCHED_STEPS][64];
};

static unsigned sched_rand(struct sched *s, unsigned n)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return (unsigned)((s->rng * 0x2545f4914f6cdd1dull) >> 33) % n;
}

static void apply_step(const char *top, const struct step *st)
{
	char a[PATH_MAX], b[PATH_MAX];

	pjoin(a, top, st->a);
	switch (st->op) {
	case 'm':
		mv(a, pjoin(b, top, st->b));
		break;
	case 'l':
		ck_assert_int_eq(link(a, pjoin(b, top, st->b)), 0);
		break;
	case 'd':
		mkd(a);
		break;
	case 'F':
		mkd(a);
		fill(a, 12);
		break;
	case 'f':
		mkf(a);
		break;
	case 'u':
		ck_assert_int_eq(unlink(a), 0);
		break;
	case 'r':
		ck_assert_int_eq(rmdir(a), 0);
		break;
	default:
		ck_abort_msg("step %c", st->op);
	}
}

/* The next step, at point (path: where a test point is). */
static void sched_step(struct sched *s, int point, const char *path)
{
	const char *tail = path ? strrchr(path, '/') : NULL;
	int i = s->next++;

	s->done[i].point = point;
	snprintf(s->done_at[i], sizeof(s->done_at[i]), "%s", tail ? tail : "");
	apply_step(s->top, &s->steps[i]);
}

static bool sched_due(struct sched *s, int point, const char *path)
{
	const struct sched_at *at;

	if (s->next >= s->n)
		return false;
	if (!s->script)
		return sched_rand(s, 100) < s->pct;
	at = &s->script[s->next];
	return at->point == point && (!at->at || (path && ends_with(path, at->at)));
}

static void sched_hook(enum test_point p, const char *path, void *arg)
{
	struct sched *s = arg;

	if (sched_due(s, (int)p, path))
		sched_step(s, (int)p, path);
}

static void sched_print(const struct sched *s)
{
	static const char *const names[] = { "TP_VISIT", "TP_OPENED", "TP_WATCHED",
					     "TP_LISTED", "TP_RESOLVE", "TP_VERIFY", "TP_READ" };

	for (int i = 1; i < s->n; i++) {
		int p = s->done[i].point;

		fprintf(stderr, "  { %s, \"%s\" }, /* %c %s */\n",
			p == AT_BETWEEN ? "AT_BETWEEN" : names[p], s->done_at[i],
			s->steps[i].op, s->steps[i].a);
	}
}

/* Run the steps once (the first before any read) over the tree start
 * made; returns how many entries the view differs by. */
static int sched_run(struct sched *s, const struct step *start, int nstart)
{
	struct fsnw_event ev[4];
	struct race r;
	int differ, k;

	ck_assert_int_le(s->n, SCHED_STEPS);
	race_start(&r, TP_VISIT, NULL, NULL);
	s->top = r.top;
	for (int i = 0; i < nstart; i++)
		apply_step(r.top, &start[i]);
	race_watch(&r);
	test_hook_set(sched_hook, s);
	sched_step(s, AT_BETWEEN, NULL);
	while (s->next < s->n) {
		k = fsnw_read(r.w, ev, 1 + (int)sched_rand(s, 3), 0);
		ck_assert_int_ge(k, 0);
		for (int i = 0; i < k; i++)
			ck_assert_int_ge(tree_view_event(&r.v, &ev[i]), 0);
		/* With nothing to read, the next change comes now. */
		if (k == 0 || sched_due(s, AT_BETWEEN, NULL))
			sched_step(s, AT_BETWEEN, NULL);
	}
	test_hook_set(NULL, NULL);
	differ = race_check(&r);
	race_end(&r);
	if (differ)
		sched_print(s);
	return differ;
}

struct sequence {
	const char *what;
	const struct step *start, *steps;
	int nstart, nsteps;
};

#define SEQUENCE(what, start, steps) \
	{ what, start, steps, sizeof(start) / sizeof(*start), sizeof(steps) / sizeof(*steps) }

/* The seeds each sequence runs with; each run takes about a millisecond. */
#define SCHED_SEEDS 300

/* Run q under every seed: the first seed whose view differed, or 0. */
static uint64_t sched_seeds(const struct sequence *q)
{
	for (uint64_t seed = 1; seed <= SCHED_SEEDS; seed++) {
		struct sched s = { .steps = q->steps, .n = q->nsteps,
				   .rng = seed * 0x9e3779b97f4a7c15ull + 1 };

		s.pct = 10 + sched_rand(&s, 60);
		if (sched_run(&s, q->start, q->nstart) != 0)
			return seed;
	}
	return 0;
}

static const struct step carry_start[] = { { 'd', "W/K" }, { 'F', "W/K/include" } };
static const struct step carry_steps[] = {
	{ 'd', "W/new" }, { 'm', "W/K/include", "W/new/inc" }, { 'm', "W/new", "W/K/new2" },
};

static const struct step none[] = { { 'd', "O/unused" } };
static const struct step fill_rename_steps[] = {
	{ 'd', "W/a" }, { 'd', "W/a/b" }, { 'f', "W/a/f" }, { 'm', "W/a", "W/a2" },
	{ 'f', "W/a2/b/g" },
};

static const struct step parent_start[] = { { 'd', "W/p" } };
static const struct step parent_steps[] = {
	{ 'd', "W/p/b" }, { 'f', "W/p/b/f" }, { 'm', "W/p", "W/p2" }, { 'f', "W/p2/b/g" },
};

static const struct step below_new_start[] = { { 'F', "O/src" }, { 'F', "O/src/s/deep" } };
static const struct step below_new_steps[] = {
	{ 'd', "W/t" }, { 'm', "O/src", "W/t/src" }, { 'm', "W/t", "W/t2" },
	{ 'f', "W/t2/src/s/deep/late" },
};

static const struct step reuse_steps[] = {
	{ 'd', "W/n" }, { 'f', "W/n/f1" }, { 'm', "W/n", "W/m" }, { 'd', "W/n" },
	{ 'f', "W/n/f2" }, { 'f', "W/m/f3" },
};

static const struct step replaced_start[] = { { 'F', "O/x" }, { 'F', "W/y" } };
static const struct step replaced_steps[] = {
	{ 'm', "O/x", "W/c" }, { 'm', "W/c", "W/r" }, { 'm', "W/y", "W/c" },
};

static const struct step type_start[] = { { 'd', "W/a" } };
static const struct step type_steps[] = {
	{ 'f', "W/a/x" }, { 'm', "W/a", "W/b" }, { 'd', "W/a" }, { 'd', "W/a/x" },
};

static const struct step swap_start[] = { { 'd', "O/x" }, { 'F', "O/x/p" }, { 'F', "O/x/q" } };
static const struct step swap_steps[] = {
	{ 'm', "O/x", "W/x" }, { 'm', "W/x/p", "W/x/t" }, { 'm', "W/x/q", "W/x/p" },
	{ 'm', "W/x/t", "W/x/q" },
};

/* A directory moved in with a subdirectory, which goes up out of it and
 * trades places with a directory just moved in and filled. */
static const struct step trade_start[] = {
	{ 'd', "W/T" }, { 'd', "O/src" }, { 'F', "O/src/xy" }, { 'd', "O/d" },
};
static const struct step trade_steps[] = {
	{ 'm', "O/src", "W/T/t" }, { 'm', "O/d", "W/n" }, { 'd', "W/n/sub" },
	{ 'd', "W/n/sub/t" }, { 'm', "W/T/t/xy", "W/xy2" }, { 'm', "W/n", "W/T/t/xy" },
	{ 'm', "W/xy2", "W/n" }, { 'f', "W/T/t/xy/g" }, { 'd', "W/T/t/xy/e" },
	{ 'd', "W/T/t/xy/e/e2" }, { 'f', "W/n/h" },
};

static const struct step outback_start[] = { { 'F', "W/a" }, { 'd', "W/b" } };
static const struct step outback_steps[] = {
	{ 'm', "W/a", "O/a" }, { 'f', "O/a/out" }, { 'm', "O/a", "W/b/a" }, { 'u', "W/b/a/f0" },
	{ 'm', "W/b", "W/c" }, { 'f', "W/c/a/s/in" },
};

/* A directory moved out with a subdirectory, which comes back on its own,
 * and then the directory too: the subdirectory's watch waits in limbo
 * below its parent. */
static const struct step child_back_start[] = { { 'd', "W/p" }, { 'F', "W/p/c" } };
static const struct step child_back_steps[] = {
	{ 'm', "W/p", "O/p" }, { 'm', "O/p/c", "W/d" }, { 'f', "W/d/new" },
	{ 'm', "O/p", "W/p" }, { 'm', "W/d", "W/p/c" }, { 'f', "W/p/c/late" },
};

static const struct step links_start[] = { { 'd', "W/a" }, { 'd', "W/b" }, { 'f', "W/a/f" } };
static const struct step links_steps[] = {
	{ 'l', "W/a/f", "W/b/g" }, { 'm', "W/a", "W/a2" }, { 'u', "W/a2/f" },
	{ 'l', "W/b/g", "W/a2/h" }, { 'd', "W/a2/n" }, { 'm', "W/b", "W/a2/n/b" },
};

static const struct step gone_steps[] = {
	{ 'd', "W/g" }, { 'd', "W/g/h" }, { 'f', "W/g/h/f" }, { 'u', "W/g/h/f" },
	{ 'r', "W/g/h" }, { 'd', "W/g/h" }, { 'f', "W/g/h/f2" }, { 'm', "W/g", "W/g2" },
};

static const struct sequence sequences[] = {
	SEQUENCE("a directory carried into a new one, moved on", carry_start, carry_steps),
	SEQUENCE("a new directory filled and renamed", none, fill_rename_steps),
	SEQUENCE("a new directory's parent renamed", parent_start, parent_steps),
	SEQUENCE("moved in below a new directory, renamed", below_new_start, below_new_steps),
	SEQUENCE("a name reused", none, reuse_steps),
	SEQUENCE("moved in, renamed and replaced", replaced_start, replaced_steps),
	SEQUENCE("a file's name taken by a directory", type_start, type_steps),
	SEQUENCE("a swap inside a directory moved in", swap_start, swap_steps),
	SEQUENCE("moved in, then out of it and traded", trade_start, trade_steps),
	SEQUENCE("moved out and back, its parent renamed", outback_start, outback_steps),
	SEQUENCE("moved out, its subdirectory back alone", child_back_start, child_back_steps),
	SEQUENCE("hard links across renames", links_start, links_steps),
	SEQUENCE("made, emptied, removed and made again", none, gone_steps),
};

START_TEST(sequences_over_points)
{
	for (size_t i = 0; i < sizeof(sequences) / sizeof(*sequences); i++) {
		uint64_t seed = sched_seeds(&sequences[i]);

		ck_assert_msg(seed == 0, "%s: the view differed at seed %llu (script above)",
			      sequences[i].what, (unsigned long long)seed);
	}
}
END_TEST

/*
 * One interleaving of the trade above, as a script: the subdirectory goes
 * up between the open of its moved-in parent and that parent's watch; the
 * directory just moved in goes into its place after the listing; and the
 * subdirectory takes that one's first name before its walk. The read of
 * the first name then meets the subdirectory, whose watch the directory
 * moved away had (held in limbo, for an arrival where it was): found
 * again, it is read and reported as new.
 */
static const struct sched_at trade_script[] = {
	{ 0, NULL }, /* the first step comes before any read */
	{ TP_READ, NULL },
	{ TP_READ, NULL },
	{ TP_VISIT, "/T/t" },
	{ TP_OPENED, "/T/t" },
	{ TP_LISTED, "/T/t" },
	{ TP_VISIT, "/n" },
	{ TP_OPENED, "/n" },
	{ TP_LISTED, "/n" },
	{ TP_READ, NULL },
	{ TP_OPENED, "/n" },
};

START_TEST(found_again_where_it_was_awaited)
{
	struct sched s = { .steps = trade_steps, .n = sizeof(trade_steps) / sizeof(*trade_steps),
			   .script = trade_script, .rng = 1 };

	ck_assert_int_eq(sizeof(trade_script) / sizeof(*trade_script), s.n);
	ck_assert_int_eq(sched_run(&s, trade_start, sizeof(trade_start) / sizeof(*trade_start)), 0);
}
END_TEST

TEST_SUITE(tree_race)
{
	Suite *s = suite_create("tree_race");

	/* A walked tree reads directories; a fanotify tree resolves them,
	 * and lists only what moves in. */
	if (test_backend == FSNW_BACKEND_INOTIFY) {
		ADD_TEST(s, dir_carried_into_new_dir);
		ADD_TEST(s, dir_carried_into_new_dir_moved_on);
		ADD_TEST(s, new_dir_filled_and_renamed);
		ADD_TEST(s, new_dir_parent_renamed);
		ADD_TEST(s, moved_in_below_new_then_renamed);
		ADD_TEST(s, name_reused_before_read);
		ADD_TEST(s, name_reused_after_open);
		ADD_TEST(s, watch_by_path_overtaken);
	} else {
		ADD_TEST(s, resolutions_overtaken);
	}
	ADD_TEST(s, swap_inside_moved_in);
	ADD_TEST(s, moved_in_then_renamed_and_replaced);
	ADD_TEST(s, type_from_the_event);
	ADD_TEST(s, swap_after_move_in);
	ADD_TEST(s, overflow_then_swap);
	ADD_TEST(s, rename_repeated);
	ADD_TEST(s, create_renamed_back_deleted);
	ADD_TEST(s, created_filled_deleted);
	ADD_TEST(s, name_taken_after_renames);
	if (test_backend == FSNW_BACKEND_FANOTIFY) {
		ADD_TEST(s, swap_then_parent_renamed_at_check);
		ADD_TEST(s, look_meets_a_rename_in_flight);
		ADD_TEST(s, rename_seen_before_its_events);
		ADD_TEST(s, swap_behind_a_name_at_resolution);
		ADD_TEST(s, placed_where_the_stream_puts_another);
		ADD_TEST(s, reported_ahead_then_displaced);
		ADD_TEST(s, resolution_meets_a_moved_directory);
		ADD_TEST(s, gone_while_the_batch_is_outrun);
		ADD_TEST(s, gone_with_its_delete_unread);
	}
	ADD_TEST(s, attrib_inside_moved_in);
	/* A fanotify tree hears its subdirectories' moves as its parent's
	 * entries only (a filesystem mark): no MOVE_SELF. */
	if (test_backend == FSNW_BACKEND_INOTIFY)
		ADD_TEST(s, moved_out_under_live_reader);
	if (test_backend == FSNW_BACKEND_INOTIFY)
		ADD_TEST(s, renamed_under_live_reader);
	ADD_TEST(s, sequences_over_points);
	ADD_TEST(s, renamed_over_an_empty_directory);
	ADD_TEST(s, unmounted_under_live_reader);
	if (test_backend == FSNW_BACKEND_INOTIFY)
		ADD_TEST(s, found_again_where_it_was_awaited);
	return s;
}
