/* SPDX-License-Identifier: MIT */
/*
 * Tree watches as fsnw-wait -r and fsnw-tree found them, against what
 * inotifywait -r does with the same operations:
 * - a tree applies a directory's rename or departure only after the whole
 *   drain, so the events read in the same drain as the move, for entries
 *   inside the moved directory, carry its old path (a path that no longer
 *   exists) or come from outside the tree; inotifywait renames as it reads;
 * - the walk that sets a tree up reads each directory after marking it, and
 *   the caller gets the walk's own ACCESS and CLOSE_NOWRITE (and the
 *   parent's OPEN) as events: "fsnw-wait -r DIR" exits at once on an event
 *   nobody caused, where "inotifywait -r DIR" waits.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "test-common.h"

#define MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE | FSNW_MODIFY | FSNW_MOVE_SELF)

/* Everything happens before the first fsnw_read, so one drain reads it all. */
START_TEST(rename_then_events_inside)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX], q[PATH_MAX], m2[PATH_MAX];
	struct ev *evs;
	int wid, n, i;

	make_dir(dir, "n");
	make_dir(pjoin(p, dir, "n"), "m");
	wid = fsnw_add(w, dir, MASK, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(rename(pjoin(p, dir, "n"), pjoin(q, dir, "n2")), 0);
	touch(pjoin(m2, q, "m"), "new");
	n = collect_now(w, &evs, 64);
	dump_evs(evs, n);
	i = find_ev(evs, n, 0, wid, FSNW_CREATE, "new");
	ck_assert_int_ge(i, 0);
	/* dir/n/m does not exist when the event is read: dir/n2/m does. */
	ck_assert_str_eq(evs[i].path, m2);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(move_out_then_events_inside)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make(), *out = tmpdir_make();
	char p[PATH_MAX], q[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dir(dir, "n");
	wid = fsnw_add(w, dir, MASK, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(rename(pjoin(p, dir, "n"), pjoin(q, out, "n")), 0);
	touch(q, "x");
	/* An absence: nothing of x comes, however late. */
	n = collect(w, &evs, 64, 300);
	dump_evs(evs, n);
	/* x was created outside the tree: no event of the tree's names it. */
	ck_assert_int_eq(find_ev(evs, n, 0, wid, FSNW_CREATE, "x"), -1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
	tmpdir_remove(out);
}
END_TEST

START_TEST(setup_walk_is_silent)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int wid, n;

	make_dir(dir, "a");
	make_dir(pjoin(p, dir, "a"), "b");
	wid = fsnw_add(w, dir, FSNW_ALL_EVENTS, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	/* Nothing happens to the tree after the add returns: an absence,
	 * waited for. */
	n = collect(w, &evs, 64, 300);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(lib_tree)
{
	Suite *s = suite_create("lib_tree");

	ADD_TEST(s, rename_then_events_inside);
	ADD_TEST(s, move_out_then_events_inside);
	ADD_TEST(s, setup_walk_is_silent);
	return s;
}
