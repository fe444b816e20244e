/* SPDX-License-Identifier: MIT */
/*
 * The tree lane's answers (lib/route.h): a walked tree's file events are
 * reported by an answer kept per kernel watch once a read has checked one
 * of its events. Each case warms the answers with reads of file events in
 * the tree's directories, changes what they must answer, and reads more:
 * every event is where it happened and reaches every watch it concerns.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-common.h"

/* Reads of file writes that make each directory's answer kept and then used. */
#define WARM_ROUNDS 3

/* Write name in each of dirs, read what that made (a read between rounds),
 * and check each write is reported for wid at its directory, once. */
static void writes_at(struct fsnw *w, int wid, const char *const *dirs, int ndirs, const char *name)
{
	struct ev *evs;
	int n;

	for (int i = 0; i < ndirs; i++)
		write_bytes(dirs[i], name, "x");
	n = collect_now(w, &evs, 2 * ndirs + 16); /* a CREATE too where the name is new */
	dump_evs(evs, n);
	for (int i = 0; i < ndirs; i++)
		ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CLOSE_WRITE, dirs[i], name), 0);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CLOSE_WRITE, name), ndirs);
	evs_free(evs);
}

static void warm(struct fsnw *w, int wid, const char *const *dirs, int ndirs)
{
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, dirs, ndirs, "warm");
}

/* A tree watch on root with mask, its lane's answers warmed for dirs. */
static int add_warm(struct fsnw *w, const char *root, uint32_t mask, const char *const *dirs,
		    int ndirs)
{
	int wid = fsnw_add(w, root, mask, FSNW_WATCH_TREE);

	ck_assert_int_gt(wid, 0);
	warm(w, wid, dirs, ndirs);
	return wid;
}

/* Remove wid and read what the remove left (its FSNW_IGNORED). */
static void remove_read(struct fsnw *w, int wid)
{
	struct ev *evs;

	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	collect_now(w, &evs, 16);
	evs_free(evs);
}

/*
 * A rename of a directory above others moves their paths: their answers
 * go. The new name is longer by far, so that the new paths take string
 * records of another size than the old ones, which then lie freed.
 */
START_TEST(parent_renamed)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], ab[PATH_MAX], c[PATH_MAX], a2[PATH_MAX], a2b[PATH_MAX];
	const char *before[] = { ab, c, a }, *after[] = { a2b, c, a2 };
	struct ev *evs;
	int wid, n;

	make_dir(dir, "a");
	make_dir(pjoin(a, dir, "a"), "b");
	make_dir(dir, "c");
	pjoin(ab, a, "b");
	pjoin(c, dir, "c");
	pjoin(a2, dir, "a-renamed-to-a-name-longer-by-far-than-the-one-it-had");
	pjoin(a2b, a2, "b");
	wid = add_warm(w, dir, FSNW_CLOSE_WRITE | FSNW_CREATE | FSNW_MOVE, before, 3);
	ck_assert_int_eq(rename(a, a2), 0);
	n = collect_now(w, &evs, 16);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_FROM | FSNW_ISDIR, dir, "a"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_MOVED_TO | FSNW_ISDIR, dir, strrchr(a2, '/') + 1),
			 0);
	evs_free(evs);
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, after, 3, r ? "again" : "moved");
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A plain watch joins a tree's directory: its events reach both watches,
 * not the tree's alone; once it goes, the tree's alone again. */
START_TEST(plain_watch_joins)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], c[PATH_MAX];
	const char *dirs[] = { c, a };
	struct ev *evs;
	int wid, pwid, n;

	make_dir(dir, "a");
	make_dir(dir, "c");
	pjoin(a, dir, "a");
	pjoin(c, dir, "c");
	wid = add_warm(w, dir, FSNW_CLOSE_WRITE, dirs, 2);
	pwid = fsnw_add(w, a, FSNW_CLOSE_WRITE, 0);
	ck_assert_int_gt(pwid, 0);
	for (int r = 0; r < WARM_ROUNDS; r++) {
		write_bytes(c, "both", "x"); /* opens the lane for the next */
		write_bytes(a, "both", "x");
		n = collect_now(w, &evs, 16);
		dump_evs(evs, n);
		ck_assert_int_eq(n, 3);
		ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CLOSE_WRITE, a, "both"), 0);
		ck_assert_int_ge(find_ev_at(evs, n, pwid, FSNW_CLOSE_WRITE, a, "both"), 0);
		ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CLOSE_WRITE, c, "both"), 0);
		evs_free(evs);
	}
	remove_read(w, pwid);
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, dirs, 2, "tree");
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * The tree removed and added again, its kernel watches (their wds too)
 * taken back from the idle cache, and then a tree of a subdirectory that
 * takes some of them again: each event is the new tree's, at its path.
 */
START_TEST(tree_added_again)
{
	struct fsnw *w = test_open(0, 0, 64);
	char *dir = tmpdir_make();
	char a[PATH_MAX], ab[PATH_MAX], c[PATH_MAX];
	const char *dirs[] = { ab, c, a }, *below[] = { ab, a };
	struct ev *evs;
	int wid, n;

	make_dir(dir, "a");
	make_dir(pjoin(a, dir, "a"), "b");
	make_dir(dir, "c");
	pjoin(ab, a, "b");
	pjoin(c, dir, "c");
	wid = add_warm(w, dir, FSNW_CLOSE_WRITE, dirs, 3);
	remove_read(w, wid);
	wid = fsnw_add(w, dir, FSNW_CLOSE_WRITE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, dirs, 3, "again");
	remove_read(w, wid);
	wid = fsnw_add(w, a, FSNW_CLOSE_WRITE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, below, 2, "below");
	write_bytes(c, "outside", "x");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A directory deleted and made again under its name: the new one's events
 * are at the same path, the old one's answer never serves them. */
START_TEST(dir_made_again)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], c[PATH_MAX], f[PATH_MAX];
	const char *dirs[] = { a, c };
	struct ev *evs;
	int wid, n;

	make_dir(dir, "a");
	make_dir(dir, "c");
	pjoin(a, dir, "a");
	pjoin(c, dir, "c");
	wid = add_warm(w, dir, FSNW_CLOSE_WRITE | FSNW_CREATE | FSNW_DELETE, dirs, 2);
	ck_assert_int_eq(unlink(pjoin(f, a, "warm")), 0);
	ck_assert_int_eq(rmdir(a), 0);
	make_dir(dir, "a");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_DELETE | FSNW_ISDIR, dir, "a"), 0);
	ck_assert_int_ge(find_ev_at(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, dir, "a"), 0);
	evs_free(evs);
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, dirs, 2, r ? "again" : "new");
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * The events a read returned report their directories' paths until the
 * next read, whatever happens meanwhile: the tree removed (its paths put)
 * and another added whose paths are as long (their strings may take the
 * records the first tree's had).
 */
START_TEST(paths_outlive_remove)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char a[PATH_MAX], c[PATH_MAX], x[PATH_MAX], y[PATH_MAX];
	const char *dirs[] = { c, a };
	struct fsnw_event evs[16];
	struct ev *copy;
	int wid, n;

	make_dir(dir, "a");
	make_dir(dir, "c");
	make_dir(dir, "x");
	make_dir(pjoin(x, dir, "x"), "y");
	pjoin(a, dir, "a");
	pjoin(c, dir, "c");
	pjoin(y, x, "y");
	wid = add_warm(w, dir, FSNW_CLOSE_WRITE, dirs, 2);
	write_bytes(c, "held", "x");
	write_bytes(a, "held", "x");
	n = fsnw_read(w, evs, 16, 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	ck_assert_int_gt(fsnw_add(w, x, FSNW_CLOSE_WRITE, FSNW_WATCH_TREE), 0);
	write_bytes(y, "other", "x");
	ck_assert_str_eq(evs[0].path, c);
	ck_assert_str_eq(evs[1].path, a);
	ck_assert_str_eq(evs[0].name, "held");
	n = collect_now(w, &copy, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(copy[0].path, y);
	evs_free(copy);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A tree of more directories than the answers' first table, and then more
 * again: the table grows (route.h) and every event still reports its own
 * directory.
 */
#define GROW_DIRS 150
START_TEST(answers_grow)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	static char paths[3 * GROW_DIRS][PATH_MAX];
	const char *dirs[3 * GROW_DIRS];
	char name[32];
	struct ev *evs;
	int wid, n;

	for (int i = 0; i < GROW_DIRS; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		make_dir(dir, name);
		dirs[i] = pjoin(paths[i], dir, name);
	}
	wid = add_warm(w, dir, FSNW_CLOSE_WRITE | FSNW_CREATE, dirs, GROW_DIRS);
	for (int i = GROW_DIRS; i < 3 * GROW_DIRS; i++) {
		snprintf(name, sizeof(name), "d%d", i);
		make_dir(dir, name);
		dirs[i] = pjoin(paths[i], dir, name);
	}
	n = collect_now(w, &evs, 4 * GROW_DIRS);
	ck_assert_int_eq(count_ev(evs, n, wid, FSNW_CREATE | FSNW_ISDIR, NULL), 2 * GROW_DIRS);
	evs_free(evs);
	for (int r = 0; r < WARM_ROUNDS; r++)
		writes_at(w, wid, dirs, 3 * GROW_DIRS, r ? "again" : "grown");
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(tree_lane)
{
	Suite *s = suite_create("tree_lane");

	ADD_TEST(s, parent_renamed);
	ADD_TEST(s, plain_watch_joins);
	ADD_TEST(s, tree_added_again);
	ADD_TEST(s, dir_made_again);
	ADD_TEST(s, paths_outlive_remove);
	ADD_TEST(s, answers_grow);
	return s;
}
