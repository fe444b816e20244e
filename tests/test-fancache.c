/* SPDX-License-Identifier: MIT */
/*
 * The directory cache of fanotify trees (lib/fancache.h), without a handle
 * or a kernel: a made-up filesystem whose directories are keyed by number.
 * What a rewind needs: every structure change is undone by its counterpart;
 * moves carry subtrees; dead directories keep their place until their
 * DELETE_SELF; the bounds hold.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fancache.h"
#include "test-common.h"

/* A key: fsid "fsidfsid", then a file handle of 4 bytes holding id. */
static size_t mkkey(unsigned char *k, uint32_t id)
{
	uint32_t hb = 4, type = 1;

	memcpy(k, "fsidfsid", 8);
	memcpy(k + 8, &hb, 4);
	memcpy(k + 12, &type, 4);
	memcpy(k + 16, &id, 4);
	return 20;
}

/* The made-up filesystem: a directory's id is a hash of its path now. */
static uint32_t id_of(const char *path, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)path[i]) * 16777619u;
	return h | 1;
}

static int keyat(void *arg, struct fview *v, const char *rel, size_t len, struct kkey *key)
{
	(void)arg;
	(void)v;
	key->len = (uint32_t)mkkey(key->bytes, id_of(rel, len));
	return 0;
}

static struct fnode *place(struct fcache *c, struct fview *v, const char *rel)
{
	unsigned char k[32];
	struct fnode *n = NULL;

	ck_assert_int_eq(fcache_place(c, v, rel, strlen(rel), k, mkkey(k, id_of(rel, strlen(rel))),
				      keyat, NULL, &n), 0);
	return n;
}

static struct fnode *node(struct fcache *c, const char *rel)
{
	unsigned char k[32];

	return fcache_find(c, k, mkkey(k, id_of(rel, strlen(rel))));
}

static struct fview *view(struct fcache *c)
{
	unsigned char k[32];
	struct fview *v;

	ck_assert_int_eq(fcache_view_new(c, k, mkkey(k, 0), -1, 1, "/mnt", 4, &v), 0);
	return v;
}

static void anchor(struct fcache *c, struct fanchor *a, struct fnode *n, const char *report)
{
	a->node = n;
	a->owner = a;
	a->report = strref_new(report, strlen(report));
	a->next = n->anchors;
	n->anchors = a;
	fcache_pinned(c, n);
}

static void unanchor(struct fcache *c, struct fanchor *a)
{
	a->node->anchors = a->next;
	fcache_pinned(c, a->node);
	strref_put(a->report);
}

static const char *path_of(struct fcache *c, struct fnode *n)
{
	ck_assert_int_eq(fcache_where(c, n), FN_IN);
	return n->path->s;
}

START_TEST(paths_from_anchor)
{
	struct fcache c;
	struct fanchor a;
	struct fview *v;
	struct fnode *r, *deep, *out;
	struct strref *vp;

	fcache_init(&c, 0);
	v = view(&c);
	r = place(&c, v, "home/r");
	deep = place(&c, v, "home/r/a/b");
	out = place(&c, v, "home/o");
	anchor(&c, &a, r, "rel");
	ck_assert_str_eq(path_of(&c, deep), "rel/a/b");
	ck_assert_str_eq(path_of(&c, r), "rel");
	ck_assert_int_eq(fcache_where(&c, out), FN_OUT);
	/* Every node on the way is keyed: found by its handle. */
	ck_assert_ptr_eq(node(&c, "home/r/a"), deep->parent);
	vp = fcache_view_path(&c, deep);
	ck_assert_str_eq(vp->s, "/mnt/home/r/a/b");
	strref_put(vp);
	unanchor(&c, &a);
	ck_assert_int_eq(fcache_where(&c, deep), FN_OUT);
	fcache_fini(&c);
}
END_TEST

START_TEST(move_carries_subtree)
{
	unsigned char k[32];
	struct fcache c;
	struct fanchor a;
	struct fview *v;
	struct fnode *r, *o, *x;

	fcache_init(&c, 0);
	v = view(&c);
	r = place(&c, v, "r");
	o = place(&c, v, "o");
	x = place(&c, v, "r/x/y/z");
	anchor(&c, &a, r, "/t");
	ck_assert_str_eq(path_of(&c, x), "/t/x/y/z");
	/* x moves out with y and z below it; then back in under another name. */
	fcache_move(&c, v, r, "x", 1, o, "x2", 2, k, mkkey(k, id_of("r/x", 3)));
	ck_assert_int_eq(fcache_where(&c, x), FN_OUT);
	fcache_move(&c, v, o, "x2", 2, r, "x3", 2, k, mkkey(k, id_of("r/x", 3)));
	ck_assert_str_eq(path_of(&c, x), "/t/x3/y/z");
	/* Moved to a directory nobody knows: its place is unknown after. */
	fcache_move(&c, v, r, "x3", 2, NULL, "q", 1, k, mkkey(k, id_of("r/x", 3)));
	ck_assert_int_eq(fcache_where(&c, x), FN_UNKNOWN);
	unanchor(&c, &a);
	fcache_fini(&c);
}
END_TEST

/* Apply a script, undo it newest first: the cache is back where it was. */
START_TEST(undo_is_exact)
{
	unsigned char kn[32], ka[32], kb[32];
	size_t ln = mkkey(kn, 7), la = mkkey(ka, id_of("r/a", 3)), lb = mkkey(kb, id_of("r/a/b", 5));
	struct fcache c;
	struct fanchor a;
	struct fview *v;
	struct fnode *r, *a1, *b1, *n;

	fcache_init(&c, 0);
	v = view(&c);
	r = place(&c, v, "r");
	a1 = place(&c, v, "r/a");
	b1 = place(&c, v, "r/a/b");
	anchor(&c, &a, r, "/t");
	/* Made r/n; moved r/a to r/n/a2; deleted r/n/a2/b. */
	fcache_create(&c, r, "n", 1, kn, ln);
	n = fcache_find(&c, kn, ln);
	ck_assert_ptr_nonnull(n);
	fcache_move(&c, v, r, "a", 1, n, "a2", 2, ka, la);
	ck_assert_str_eq(path_of(&c, b1), "/t/n/a2/b");
	fcache_delete(&c, a1, "b", 1, kb, lb);
	ck_assert_int_eq(b1->state, FN_DEAD);
	/* Dead, it keeps its last place for events that come late. */
	ck_assert_str_eq(path_of(&c, b1), "/t/n/a2/b");
	/* Undone, newest first. */
	fcache_undelete(&c, a1, "b", 1, kb, lb);
	ck_assert_int_eq(b1->state, FN_LINKED);
	fcache_move(&c, v, n, "a2", 2, r, "a", 1, ka, la);
	fcache_uncreate(&c, r, "n", 1, kn, ln);
	ck_assert_str_eq(path_of(&c, b1), "/t/a/b");
	ck_assert_int_eq(fcache_where(&c, n), FN_UNKNOWN);
	/* And replayed. */
	fcache_create(&c, r, "n", 1, kn, ln);
	fcache_move(&c, v, r, "a", 1, n, "a2", 2, ka, la);
	ck_assert_str_eq(path_of(&c, a1), "/t/n/a2");
	unanchor(&c, &a);
	fcache_fini(&c);
}
END_TEST

/* rm -rf of directories never met: undoing the deletes newest first puts them back. */
START_TEST(undelete_rebuilds_chain)
{
	unsigned char k[3][32];
	size_t l[3];
	struct fcache c;
	struct fanchor a;
	struct fview *v;
	struct fnode *r, *n[3];

	for (int i = 0; i < 3; i++)
		l[i] = mkkey(k[i], 10 + (uint32_t)i);
	fcache_init(&c, 0);
	v = view(&c);
	r = place(&c, v, "r");
	anchor(&c, &a, r, "/t");
	/* Deleted in this order: c from b, b from a, a from r; undone newest first. */
	fcache_undelete(&c, r, "a", 1, k[0], l[0]);
	n[0] = fcache_find(&c, k[0], l[0]);
	fcache_undelete(&c, n[0], "b", 1, k[1], l[1]);
	n[1] = fcache_find(&c, k[1], l[1]);
	fcache_undelete(&c, n[1], "c", 1, k[2], l[2]);
	n[2] = fcache_find(&c, k[2], l[2]);
	ck_assert_ptr_nonnull(n[2]);
	ck_assert_str_eq(path_of(&c, n[2]), "/t/a/b/c");
	/* Replayed: dead, and gone once each DELETE_SELF is in. */
	fcache_delete(&c, n[1], "c", 1, k[2], l[2]);
	fcache_delete(&c, n[0], "b", 1, k[1], l[1]);
	fcache_delete(&c, r, "a", 1, k[0], l[0]);
	ck_assert_uint_eq(c.ntombs, 3);
	fcache_trim(&c);
	ck_assert_uint_eq(c.ntombs, 3); /* no DELETE_SELF yet: events may come */
	for (int i = 0; i < 3; i++)
		fcache_self_gone(&c, n[i], true);
	fcache_trim(&c);
	ck_assert_uint_eq(c.ntombs, 0);
	ck_assert_ptr_null(fcache_find(&c, k[0], l[0]));
	ck_assert(!c.ambiguous);
	unanchor(&c, &a);
	fcache_fini(&c);
}
END_TEST

START_TEST(bounds)
{
	unsigned char k[32];
	struct fcache c;
	struct fanchor a;
	struct fview *v;
	struct fnode *r;
	char name[32];

	fcache_init(&c, 10);
	v = view(&c);
	r = place(&c, v, "r");
	anchor(&c, &a, r, "/t");
	for (int i = 0; i < 100; i++) {
		snprintf(name, sizeof(name), "r/d%d", i);
		place(&c, v, name);
		fcache_trim(&c);
		ck_assert_uint_le(c.count, 10);
	}
	ck_assert_uint_ge(c.evictions, 88);
	/* The most recent survive; the anchor and its way up stay. */
	ck_assert_ptr_nonnull(node(&c, "r/d99"));
	ck_assert_ptr_null(node(&c, "r/d0"));
	ck_assert_ptr_eq(node(&c, "r"), r);
	/* Dead directories past FCACHE_TOMBS: the oldest go, and the cache
	 * says it can no longer tell a gone directory of a tree. */
	for (uint32_t i = 0; i < FCACHE_TOMBS + 5; i++)
		fcache_delete(&c, r, "x", 1, k, mkkey(k, 1000 + i));
	fcache_trim(&c);
	ck_assert_uint_le(c.ntombs, FCACHE_TOMBS);
	ck_assert(c.ambiguous);
	unanchor(&c, &a);
	fcache_fini(&c);
}
END_TEST

/* A place the filesystem now gives another directory: the old one gives way. */
START_TEST(place_displaces)
{
	unsigned char k[32];
	struct fcache c;
	struct fview *v;
	struct fnode *old, *n = NULL;

	fcache_init(&c, 0);
	v = view(&c);
	old = place(&c, v, "a/b");
	ck_assert_int_eq(fcache_place(&c, v, "a/b", 3, k, mkkey(k, 42), keyat, NULL, &n), 0);
	ck_assert_ptr_ne(n, old);
	ck_assert_int_eq(old->state, FN_DETACHED);
	ck_assert_int_eq(fcache_where(&c, old), FN_UNKNOWN);
	/* The view's root has a key of its own: anything else there is a lie. */
	ck_assert_int_eq(fcache_place(&c, v, "", 0, k, mkkey(k, 43), keyat, NULL, &n), -EAGAIN);
	fcache_forget(&c);
	ck_assert_int_eq(fcache_where(&c, n), FN_UNKNOWN);
	fcache_fini(&c);
}
END_TEST

TEST_SUITE(fancache)
{
	Suite *s = suite_create("fancache");

	ADD_TEST(s, paths_from_anchor);
	ADD_TEST(s, move_carries_subtree);
	ADD_TEST(s, undo_is_exact);
	ADD_TEST(s, undelete_rebuilds_chain);
	ADD_TEST(s, bounds);
	ADD_TEST(s, place_displaces);
	return s;
}
