/* SPDX-License-Identifier: MIT */
/*
 * Allocation failure injection over every public call. For each call the
 * sweep makes allocation N fail, N = 0, 1, 2, ..., on a fresh handle set up
 * the same way each time, until the call runs without reaching allocation N.
 * Every failing call must return -ENOMEM, or, where the allocation was for an
 * event, succeed and raise FSNW_OVERFLOW instead of losing the event. After
 * it the handle must be consistent (its counts agree with each other and
 * with the marks the kernel really holds), the same call must succeed, and
 * once the handle is closed the heap and the fd table must be as they were.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mem.h"
#include "hardening.h"
#include "test-common.h"

#define SWEEP_MAX 20000
#define NFILES 70 /* events enough for two slot chunks, names past the inline size */

struct fx {
	struct fsnw *w;
	char *dir;
	uint32_t capacity, idle;
	int wid[4];      /* watches the setup made */
	struct ev *first; /* events the call under test returned */
	int nfirst;
	int nwid;
	struct fsnw_stats before;
	struct fsnw_batch_item items[5];
	size_t nitems;
	char paths[6][PATH_MAX];
};

/* Arm the hook: allocation n + 1 from now fails. */
static void arm(long n)
{
	mem_fail_after(n);
}

/* Disarm it; was the failing allocation reached? */
static bool disarm(long n)
{
	bool hit = mem_count() > n;

	mem_fail_after(-1);
	return hit;
}

/* The handle agrees with itself and with the kernel. */
static void check_consistent(struct fsnw *w, uint64_t logical)
{
	struct fsnw_stats st = stats_of(w);

	ck_assert_uint_eq(st.logical_watches, logical);
	ck_assert_int_eq(kernel_marks(w), (int)st.kernel_watches);
	ck_assert_uint_le(st.parked_watches, st.kernel_watches);
	ck_assert_uint_le(st.queue_depth, st.queue_high_water);
}

static const char *long_name(char *buf, int i)
{
	snprintf(buf, 64, "a-name-longer-than-forty-bytes-so-it-lives-on-the-heap-%03d", i);
	return buf;
}

static void touch_many(const char *dir)
{
	char name[64];

	for (int i = 0; i < NFILES; i++)
		touch(dir, long_name(name, i));
}

/* Every event of evs for a wid in `live` (or 0 with FSNW_OVERFLOW). */
static void check_wids(const struct ev *evs, int n, const int *live, int nlive)
{
	for (int i = 0; i < n; i++) {
		bool ok = evs[i].wid == 0 && evs[i].mask == FSNW_OVERFLOW;

		for (int j = 0; j < nlive; j++)
			ok |= evs[i].wid == live[j];
		if (!ok)
			dump_evs(evs, n);
		ck_assert_msg(ok, "event %d for wid %d, which is not a live watch", i, evs[i].wid);
	}
}

static bool overflowed(const struct ev *evs, int n)
{
	return count_ev(evs, n, 0, FSNW_OVERFLOW, NULL) > 0;
}

/* Each of the NFILES creates in the watch's directory arrived, or an overflow did. */
static void check_creates_covered(const struct ev *evs, int n, int wid)
{
	char name[64];

	if (overflowed(evs, n))
		return;
	for (int i = 0; i < NFILES; i++) {
		if (find_ev(evs, n, 0, wid, FSNW_CREATE, long_name(name, i)) < 0)
			dump_evs(evs, n);
		ck_assert_msg(find_ev(evs, n, 0, wid, FSNW_CREATE, name) >= 0,
			      "CREATE %s for wid %d lost without an overflow", name, wid);
	}
}

/* ---- the sweep ---- */

struct sweep {
	void (*setup)(struct fx *f);
	int (*call)(struct fx *f);
	/* Checks after the call; hit: the failing allocation was reached in it. */
	void (*after)(struct fx *f, int ret, bool hit);
	uint32_t capacity, idle;
	const char *name;
};

static void fx_open(struct fx *f, const struct sweep *s)
{
	memset(f, 0, sizeof(*f));
	f->capacity = s->capacity;
	f->idle = s->idle;
	f->w = test_open(0, s->capacity, s->idle);
	f->dir = tmpdir_make();
}

static void fx_close(struct fx *f)
{
	free(f->first);
	fsnw_close(f->w);
	tmpdir_remove(f->dir);
}

/* Returns how many runs had an allocation fail inside the call. */
static long run_sweep(const struct sweep *s)
{
	int fds = fd_count();
	size_t heap = 0;
	long n;

	for (n = 0; n < SWEEP_MAX; n++) {
		struct fx f;
		bool hit;
		int ret;

		fx_open(&f, s);
		if (s->setup)
			s->setup(&f);
		f.before = stats_of(f.w);
		arm(n);
		ret = s->call(&f);
		hit = disarm(n);
		s->after(&f, ret, hit);
		fx_close(&f);
		ck_assert_int_eq(fd_count(), fds);
		/* The first run warms up what the process keeps (stdio, Check). */
		if (n == 0)
			heap = heap_in_use();
		else
			ck_assert_uint_eq(heap_in_use(), heap);
		if (!hit)
			break;
	}
	ck_assert_int_lt(n, SWEEP_MAX);
	fprintf(stderr, "alloc sweep %s: %ld runs with a failed allocation\n", s->name, n);
	return n;
}

/* ---- fsnw_open ---- */

START_TEST(open_sweep)
{
	struct fsnw_options o = {
		.size = sizeof(o), .backend = test_backend, .queue_capacity = 64, .idle_watches = 4,
	};
	int fds = fd_count();
	size_t heap = heap_in_use();
	long n;

	for (n = 0; n < SWEEP_MAX; n++) {
		struct fsnw *sentinel = (struct fsnw *)&o, *w = sentinel;
		bool hit;
		int ret;

		arm(n);
		ret = fsnw_open(&w, &o);
		hit = disarm(n);
		if (!hit) {
			ck_assert_int_eq(ret, 0);
			fsnw_close(w);
			break;
		}
		ck_assert_int_eq(ret, -ENOMEM);
		ck_assert_ptr_eq(w, sentinel); /* out-parameter untouched */
		ck_assert_int_eq(fd_count(), fds);
	}
	ck_assert_int_gt(n, 0);
	ck_assert_int_eq(fd_count(), fds);
	ck_assert_uint_eq(heap_in_use(), heap);
	fprintf(stderr, "alloc sweep open_sweep: %ld runs with a failed allocation\n", n);
}
END_TEST

/* ---- fsnw_add: plain, onto a shared kernel watch, reviving a parked one ---- */

static void setup_file(struct fx *f)
{
	touch(f->dir, "f");
	pjoin(f->paths[0], f->dir, "f");
}

static int call_add_file(struct fx *f)
{
	return fsnw_add(f->w, f->paths[0], FSNW_MODIFY, 0);
}

static void usable_on_file(struct fx *f, int wid)
{
	struct ev *evs;
	int n;

	write_bytes(f->dir, "f", "x");
	n = collect_now(f->w, &evs, 64);
	ck_assert_int_ge(find_ev(evs, n, 0, wid, FSNW_MODIFY, NULL), 0);
	evs_free(evs);
}

static void after_add_plain(struct fx *f, int ret, bool hit)
{
	if (hit && ret < 0) {
		ck_assert_int_eq(ret, -ENOMEM);
		check_consistent(f->w, 0);
		ck_assert_int_eq(kernel_marks(f->w), 0); /* the mark was taken back */
		ret = call_add_file(f);
	}
	ck_assert_int_gt(ret, 0);
	check_consistent(f->w, 1);
	usable_on_file(f, ret);
}

START_TEST(add_plain_sweep)
{
	struct sweep s = { setup_file, call_add_file, after_add_plain, 0, 0, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

/* A watch on the directory with NFILES creates waiting in the kernel: the
 * second add shares its kernel watch and drains them first. */
static void setup_dir_pending(struct fx *f)
{
	strcpy(f->paths[0], f->dir);
	f->wid[0] = fsnw_add(f->w, f->dir, FSNW_CREATE | FSNW_MODIFY, 0);
	ck_assert_int_gt(f->wid[0], 0);
	f->nwid = 1;
	touch_many(f->dir);
}

static int call_add_dir(struct fx *f)
{
	return fsnw_add(f->w, f->paths[0], FSNW_CREATE | FSNW_MODIFY, 0);
}

static void after_add_dedup(struct fx *f, int ret, bool hit)
{
	struct ev *evs;
	int live[2] = { f->wid[0], ret }, n;

	if (ret < 0) {
		ck_assert(hit);
		ck_assert_int_eq(ret, -ENOMEM);
		check_consistent(f->w, 1);
		ck_assert_uint_eq(stats_of(f->w).kernel_watches, 1);
	} else {
		check_consistent(f->w, 2);
	}
	n = collect_now(f->w, &evs, 4 * NFILES);
	check_wids(evs, n, live, ret > 0 ? 2 : 1);
	/* Events older than the new watch are the old watch's alone. */
	if (ret > 0)
		ck_assert_int_eq(count_ev(evs, n, ret, FSNW_CREATE, NULL), 0);
	check_creates_covered(evs, n, f->wid[0]);
	evs_free(evs);
	if (ret < 0) {
		ret = call_add_dir(f);
		ck_assert_int_gt(ret, 0);
		check_consistent(f->w, 2);
	}
	touch(f->dir, "after");
	n = collect_now(f->w, &evs, 16);
	ck_assert_int_ge(find_ev(evs, n, 0, ret, FSNW_CREATE, "after"), 0);
	ck_assert_int_ge(find_ev(evs, n, 0, f->wid[0], FSNW_CREATE, "after"), 0);
	evs_free(evs);
}

START_TEST(add_dedup_sweep)
{
	struct sweep s = { setup_dir_pending, call_add_dir, after_add_dedup, 0, 0, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

static void setup_parked(struct fx *f)
{
	int wid;

	setup_file(f);
	wid = fsnw_add(f->w, f->paths[0], FSNW_MODIFY, 0);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(fsnw_remove(f->w, wid), 0);
	ck_assert_uint_eq(stats_of(f->w).parked_watches, 1);
}

static void after_add_revive(struct fx *f, int ret, bool hit)
{
	if (ret < 0) {
		ck_assert(hit);
		ck_assert_int_eq(ret, -ENOMEM);
		check_consistent(f->w, 0);
		/* Still parked, still one mark. */
		ck_assert_uint_eq(stats_of(f->w).parked_watches, 1);
		ck_assert_uint_eq(stats_of(f->w).kernel_watches, 1);
		ret = call_add_file(f);
	}
	ck_assert_int_gt(ret, 0);
	check_consistent(f->w, 1);
	ck_assert_uint_eq(stats_of(f->w).parked_watches, 0);
	usable_on_file(f, ret);
}

START_TEST(add_revive_sweep)
{
	struct sweep s = { setup_parked, call_add_file, after_add_revive, 0, 2, __func__ };

	/* The remove that parked the kernel watch left its watch record and
	 * path string to the handle's record caches: a revive takes them, and
	 * allocates nothing that could fail. */
	ck_assert_int_eq(run_sweep(&s), 0);
}
END_TEST

/*
 * A tree over d/{s0..s3}/t where s1 and s2 already have watches of their
 * own: the walk shares their kernel watches, so it drains in the middle,
 * and what it drains includes the tree's own early events (IN_ACCESS of
 * the directories it has read so far).
 */
static void setup_tree(struct fx *f)
{
	char p[PATH_MAX], s[8];

	pjoin(f->paths[0], f->dir, "d");
	make_dir(f->dir, "d");
	for (int i = 0; i < 4; i++) {
		snprintf(s, sizeof(s), "s%d", i);
		make_dir(f->paths[0], s);
		make_dir(pjoin(p, f->paths[0], s), "t");
	}
	for (int i = 1; i <= 2; i++) {
		snprintf(s, sizeof(s), "s%d", i);
		f->wid[f->nwid] = fsnw_add(f->w, pjoin(p, f->paths[0], s),
					   FSNW_CREATE | FSNW_ACCESS, 0);
		ck_assert_int_gt(f->wid[f->nwid], 0);
		f->nwid++;
	}
	pjoin(p, f->paths[0], "s1");
	touch_many(p);
}

static int call_add_tree(struct fx *f)
{
	return fsnw_add(f->w, f->paths[0], FSNW_CREATE | FSNW_ACCESS | FSNW_MODIFY,
			FSNW_WATCH_TREE);
}

static void after_add_tree(struct fx *f, int ret, bool hit)
{
	struct ev *evs;
	int live[3] = { f->wid[0], f->wid[1], ret }, n;
	char p[PATH_MAX];

	if (ret < 0) {
		ck_assert(hit);
		ck_assert_int_eq(ret, -ENOMEM);
		/* Undone: the marks are those of the two plain watches. */
		check_consistent(f->w, 2);
		ck_assert_uint_eq(stats_of(f->w).kernel_watches, f->before.kernel_watches);
	} else {
		check_consistent(f->w, 3);
		ck_assert_uint_eq(stats_of(f->w).kernel_watches, 9); /* d, s0..s3, their t */
	}
	n = collect_now(f->w, &evs, 8 * NFILES);
	/* Nothing for a wid that was never handed out. */
	check_wids(evs, n, live, ret > 0 ? 3 : 2);
	check_creates_covered(evs, n, f->wid[0]);
	evs_free(evs);
	if (ret < 0) {
		ret = call_add_tree(f);
		ck_assert_int_gt(ret, 0);
		check_consistent(f->w, 3);
		ck_assert_uint_eq(stats_of(f->w).kernel_watches, 9);
	}
	touch(pjoin(p, f->paths[0], "s3/t"), "after");
	n = collect_now(f->w, &evs, 64);
	ck_assert_int_ge(find_ev(evs, n, 0, ret, FSNW_CREATE, "after"), 0);
	evs_free(evs);
}

START_TEST(add_tree_sweep)
{
	struct sweep s = { setup_tree, call_add_tree, after_add_tree, 0, 0, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

/* ---- fsnw_add_batch ---- */

/* f1 new, f2 parked (revived), f1 again (shared), a tree, and (non-atomic
 * only) a path that does not exist. */
static void setup_batch(struct fx *f, bool with_bad)
{
	int wid;

	touch(f->dir, "f1");
	touch(f->dir, "f2");
	make_dir(f->dir, "d");
	make_dir(pjoin(f->paths[4], f->dir, "d"), "sub");
	pjoin(f->paths[0], f->dir, "f1");
	pjoin(f->paths[1], f->dir, "f2");
	pjoin(f->paths[2], f->dir, "f1");
	pjoin(f->paths[3], f->dir, "d");
	pjoin(f->paths[4], f->dir, "missing");
	wid = fsnw_add(f->w, f->paths[1], FSNW_MODIFY, 0);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(fsnw_remove(f->w, wid), 0);
	ck_assert_uint_eq(stats_of(f->w).parked_watches, 1);
	f->nitems = with_bad ? 5 : 4;
	for (size_t i = 0; i < f->nitems; i++) {
		f->items[i].path = f->paths[i];
		f->items[i].mask = i == 2 ? FSNW_ATTRIB : FSNW_MODIFY | FSNW_CREATE;
		f->items[i].flags = i == 3 ? FSNW_WATCH_TREE : 0;
		f->items[i].result = 0;
	}
}

static void setup_batch_plain(struct fx *f)
{
	setup_batch(f, true);
}

static void setup_batch_atomic(struct fx *f)
{
	setup_batch(f, false);
}

static int call_batch(struct fx *f)
{
	return fsnw_add_batch(f->w, f->items, f->nitems, 0);
}

static int call_batch_atomic(struct fx *f)
{
	return fsnw_add_batch(f->w, f->items, f->nitems, FSNW_BATCH_ATOMIC);
}

/* 1 (f1, shared by items 0 and 2) + 1 (f2) + 2 (d, d/sub). */
#define BATCH_MARKS 4

static void after_batch(struct fx *f, int ret, bool hit)
{
	int ok = 0;

	ck_assert_int_ge(ret, 0);
	for (size_t i = 0; i < 4; i++) {
		if (f->items[i].result > 0) {
			ok++;
			continue;
		}
		ck_assert(hit);
		ck_assert_int_eq(f->items[i].result, -ENOMEM);
	}
	ck_assert_int_eq(f->items[4].result, -ENOENT);
	ck_assert_int_eq(ret, ok);
	check_consistent(f->w, (uint64_t)ok);
	/* The failed items, once more: they succeed. */
	for (size_t i = 0; i < 4; i++) {
		if (f->items[i].result > 0)
			continue;
		f->items[i].result = fsnw_add(f->w, f->items[i].path, f->items[i].mask,
					      f->items[i].flags);
		ck_assert_int_gt(f->items[i].result, 0);
	}
	check_consistent(f->w, 4);
	ck_assert_uint_eq(stats_of(f->w).kernel_watches, BATCH_MARKS);
	ck_assert_uint_eq(stats_of(f->w).parked_watches, 0);
}

START_TEST(batch_sweep)
{
	struct sweep s = { setup_batch_plain, call_batch, after_batch, 0, 2, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

static void after_batch_atomic(struct fx *f, int ret, bool hit)
{
	if (ret == 0) {
		int nomem = 0;

		ck_assert(hit);
		for (size_t i = 0; i < f->nitems; i++) {
			nomem += f->items[i].result == -ENOMEM;
			ck_assert(f->items[i].result == -ENOMEM ||
				  f->items[i].result == -ECANCELED);
		}
		ck_assert_int_eq(nomem, 1);
		/* Rolled back exactly: the parked watch is parked again. */
		check_consistent(f->w, 0);
		ck_assert_uint_eq(stats_of(f->w).kernel_watches, f->before.kernel_watches);
		ck_assert_uint_eq(stats_of(f->w).parked_watches, 1);
		ret = call_batch_atomic(f);
	}
	ck_assert_int_eq(ret, (int)f->nitems);
	for (size_t i = 0; i < f->nitems; i++)
		ck_assert_int_gt(f->items[i].result, 0);
	check_consistent(f->w, f->nitems);
	ck_assert_uint_eq(stats_of(f->w).kernel_watches, BATCH_MARKS);
}

START_TEST(batch_atomic_sweep)
{
	struct sweep s = { setup_batch_atomic, call_batch_atomic, after_batch_atomic, 0, 2, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

/* ---- fsnw_remove ---- */

static int call_remove_first(struct fx *f)
{
	return fsnw_remove(f->w, f->wid[0]);
}

static void setup_one_watch(struct fx *f)
{
	setup_file(f);
	f->wid[0] = fsnw_add(f->w, f->paths[0], FSNW_MODIFY, 0);
	ck_assert_int_gt(f->wid[0], 0);
	write_bytes(f->dir, "f", "x");
	ck_assert_int_eq(fsnw_pump(f->w), 1); /* an event waits for the wid */
}

static void after_remove(struct fx *f, int ret, bool hit)
{
	struct ev *evs;
	int n;

	(void)hit;
	ck_assert_int_eq(ret, 0);
	check_consistent(f->w, 0);
	write_bytes(f->dir, "f", "y");
	n = collect_now(f->w, &evs, 16);
	ck_assert_int_eq(n, 0); /* nothing for the removed wid, not even the old event */
	evs_free(evs);
	ck_assert_int_eq(fsnw_remove(f->w, f->wid[0]), -ENOENT);
}

START_TEST(remove_sweep)
{
	struct sweep s = { setup_one_watch, call_remove_first, after_remove, 0, 0, __func__ };

	/* A remove that is not the last on its kernel watch allocates nothing. */
	ck_assert_int_eq(run_sweep(&s), 0);
}
END_TEST

/*
 * The library reads its own IN_IGNORED back once 1024 of them wait in the
 * kernel (UNREAD_IGNORED_MAX in lib/fsnw.c), and with them whatever else
 * waits: the 1024th remove drains NFILES creates for another watch.
 */
#define UNREAD_IGNORED_MAX 1024

static void setup_remove_drains(struct fx *f)
{
	char p[PATH_MAX];

	make_dir(f->dir, "d");
	f->wid[1] = fsnw_add(f->w, pjoin(f->paths[1], f->dir, "d"), FSNW_CREATE, 0);
	ck_assert_int_gt(f->wid[1], 0);
	setup_file(f);
	for (int i = 0; i < UNREAD_IGNORED_MAX - 1; i++) {
		int wid = fsnw_add(f->w, f->paths[0], FSNW_MODIFY, 0);

		ck_assert_int_gt(wid, 0);
		ck_assert_int_eq(fsnw_remove(f->w, wid), 0);
	}
	f->wid[0] = fsnw_add(f->w, f->paths[0], FSNW_MODIFY, 0);
	ck_assert_int_gt(f->wid[0], 0);
	touch_many(pjoin(p, f->dir, "d"));
}

static void after_remove_drains(struct fx *f, int ret, bool hit)
{
	struct ev *evs;
	int n;

	(void)hit;
	ck_assert_int_eq(ret, 0);
	/* The remove did read the kernel (else this test tests nothing). */
	ck_assert_uint_gt(stats_of(f->w).sys_read, f->before.sys_read);
	check_consistent(f->w, 1);
	n = collect_now(f->w, &evs, 4 * NFILES);
	check_wids(evs, n, &f->wid[1], 1);
	check_creates_covered(evs, n, f->wid[1]);
	evs_free(evs);
}

START_TEST(remove_drain_sweep)
{
	struct sweep s = { setup_remove_drains, call_remove_first, after_remove_drains, 0, 0, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

/* ---- fsnw_read and fsnw_pump with events waiting ---- */

/*
 * A plain watch on a/ with NFILES creates waiting, and a tree on b/ in which
 * two directories appeared, each with files made before the tree could
 * watch it (the catch-up reports them as synthetic creates).
 */
static void setup_events(struct fx *f)
{
	char p[PATH_MAX];

	make_dir(f->dir, "a");
	make_dir(f->dir, "b");
	pjoin(f->paths[0], f->dir, "a");
	pjoin(f->paths[1], f->dir, "b");
	f->wid[0] = fsnw_add(f->w, f->paths[0], FSNW_CREATE, 0);
	f->wid[1] = fsnw_add(f->w, f->paths[1], FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(f->wid[0], 0);
	ck_assert_int_gt(f->wid[1], 0);
	f->nwid = 2;
	f->first = calloc(16 * NFILES, sizeof(*f->first));
	ck_assert_ptr_nonnull(f->first);
	touch_many(f->paths[0]);
	for (int i = 0; i < 2; i++) {
		char sub[8];

		snprintf(sub, sizeof(sub), "n%d", i);
		make_dir(f->paths[1], sub);
		for (int j = 0; j < 3; j++) {
			char name[8];

			snprintf(name, sizeof(name), "x%d", j);
			touch(pjoin(p, f->paths[1], sub), name);
		}
	}
}

static int call_read(struct fx *f)
{
	struct fsnw_event evs[256];
	int n = fsnw_read(f->w, evs, 256, 0);

	/* Strings die at the next read: keep copies for after_events. */
	for (int i = 0; i < n; i++) {
		struct ev *e = &f->first[f->nfirst++];

		e->wid = evs[i].wid;
		e->mask = evs[i].mask;
		e->cookie = evs[i].cookie;
		e->count = evs[i].count;
		if (evs[i].path)
			snprintf(e->path, sizeof(e->path), "%s", evs[i].path);
		e->has_name = evs[i].name != NULL;
		if (evs[i].name)
			snprintf(e->name, sizeof(e->name), "%s", evs[i].name);
	}
	return n;
}

static int call_pump(struct fx *f)
{
	return fsnw_pump(f->w);
}

/*
 * Suite alloc_tree_follow: when following a new directory of a tree fails
 * (no memory for the job, its path or the walk; or ENOSPC), the library
 * raises FSNW_OVERFLOW and tries again after later drains, so the directory
 * does not stay unwatched: what is made in it afterwards is reported.
 */
static bool strict_tree_follow;

static void after_events(struct fx *f, int ret, bool hit)
{
	struct ev *evs, *rest;
	char p[PATH_MAX];
	int n, nrest;

	(void)hit;
	ck_assert_int_ge(ret, 0);
	check_consistent(f->w, 2);
	/* The whole stream: what the call returned (fsnw_read) and the rest. */
	nrest = collect_now(f->w, &rest, 8 * NFILES);
	evs = f->first;
	memcpy(evs + f->nfirst, rest, (size_t)nrest * sizeof(*rest));
	n = f->nfirst + nrest;
	evs_free(rest);
	f->first = NULL;
	check_wids(evs, n, f->wid, 2);
	if (!overflowed(evs, n)) {
		/* All of it here: every create of a/, the two new directories and
		 * what they held before they were watched. */
		check_creates_covered(evs, n, f->wid[0]);
		ck_assert_int_ge(find_ev(evs, n, 0, f->wid[1], FSNW_CREATE | FSNW_ISDIR, "n0"), 0);
		ck_assert_int_ge(find_ev(evs, n, 0, f->wid[1], FSNW_CREATE | FSNW_ISDIR, "n1"), 0);
		ck_assert_int_eq(count_ev(evs, n, f->wid[1], FSNW_CREATE, "x1"), 2);
	}
	evs_free(evs);
	if (!strict_tree_follow) {
		touch(f->paths[0], "later");
		n = collect_now(f->w, &evs, 64);
		check_wids(evs, n, f->wid, 2);
		ck_assert_int_ge(find_ev(evs, n, 0, f->wid[0], FSNW_CREATE, "later"), 0);
		evs_free(evs);
		check_consistent(f->w, 2);
		return;
	}
	/* Usable, and the tree follows its new directories: what is made in
	 * them now is reported (the walk that failed under memory pressure is
	 * not a directory left unwatched for good). */
	for (int i = 0; i < 2; i++) {
		char sub[8];

		snprintf(sub, sizeof(sub), "n%d", i);
		touch(pjoin(p, f->paths[1], sub), "later");
	}
	touch(f->paths[0], "later");
	n = collect_now(f->w, &evs, 64);
	check_wids(evs, n, f->wid, 2);
	ck_assert_int_ge(find_ev(evs, n, 0, f->wid[0], FSNW_CREATE, "later"), 0);
	if (count_ev(evs, n, f->wid[1], FSNW_CREATE, "later") != 2)
		dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, f->wid[1], FSNW_CREATE, "later"), 2);
	evs_free(evs);
	check_consistent(f->w, 2);
	ck_assert_uint_eq(stats_of(f->w).kernel_watches, 4); /* a, b, b/n0, b/n1 */
}

START_TEST(read_sweep)
{
	struct sweep s = { setup_events, call_read, after_events, 0, 0, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

START_TEST(pump_sweep)
{
	struct sweep s = { setup_events, call_pump, after_events, 0, 0, __func__ };

	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

/* ---- stats and close: they must not need memory at all ---- */

static void setup_busy(struct fx *f)
{
	setup_events(f);
	ck_assert_int_gt(fsnw_pump(f->w), 0);
}

static int call_stats(struct fx *f)
{
	struct fsnw_stats st = { .size = sizeof(st) };

	return fsnw_get_stats(f->w, &st);
}

static int call_json(struct fx *f)
{
	char buf[8192];
	int n = fsnw_stats_json(f->w, buf, sizeof(buf));

	if (n > 0)
		ck_assert_uint_eq(strlen(buf), (size_t)n);
	return n;
}

static void after_no_alloc(struct fx *f, int ret, bool hit)
{
	ck_assert_msg(!hit, "a stats call allocated");
	ck_assert_int_ge(ret, 0);
	check_consistent(f->w, 2);
}

START_TEST(stats_sweep)
{
	struct sweep s = { setup_busy, call_stats, after_no_alloc, 0, 0, __func__ };

	ck_assert_int_eq(run_sweep(&s), 0);
	s.call = call_json;
	ck_assert_int_eq(run_sweep(&s), 0);
}
END_TEST

static int call_close(struct fx *f)
{
	fsnw_close(f->w);
	f->w = NULL;
	return 0;
}

static void after_close(struct fx *f, int ret, bool hit)
{
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(!hit, "fsnw_close allocated");
	(void)f;
}

/*
 * Churn reuses what it freed: after one round of adds and removes of 200
 * watches, a second round allocates nothing (the record caches of mem.h
 * keep the slabs of the watch and kernel watch records and of the path
 * strings).
 */
START_TEST(churn_reuses_records)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	int wid[200];

	for (int i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "f%d", i);
		touch(dir, p);
	}
	for (int round = 0; round < 2; round++) {
		mem_fail_after(-1); /* and count this thread's allocations from 0 */
		for (int i = 0; i < 200; i++) {
			snprintf(p, sizeof(p), "%s/f%d", dir, i);
			wid[i] = fsnw_add(w, p, FSNW_ATTRIB, 0);
			ck_assert_int_gt(wid[i], 0);
		}
		for (int i = 0; i < 200; i++)
			ck_assert_int_eq(fsnw_remove(w, wid[i]), 0);
		fsnw_pump(w);
		if (round == 0)
			ck_assert_int_ge(mem_count(), 1);
		else
			ck_assert_int_eq(mem_count(), 0);
	}
	check_consistent(w, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * fsnw_reserve pays for the next adds: after reserving 200, 200 adds on new
 * files allocate a slab for their path strings and nothing else (with
 * fanotify, whose kernel-watch records are not cached, those records too:
 * at most a few more). A reservation that runs out of memory keeps what it
 * got and leaves the handle sound.
 */
START_TEST(reserve_pays_for_adds)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	bool fan = fsnw_get_backend(w) == FSNW_BACKEND_FANOTIFY;
	char p[PATH_MAX];
	int wid[200];

	for (int i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "f%d", i);
		touch(dir, p);
	}
	ck_assert_int_eq(fsnw_reserve(w, (size_t)INT_MAX + 1), -EINVAL);
	mem_fail_after(-1);
	ck_assert_int_eq(fsnw_reserve(w, 0), 0);
	ck_assert_int_eq(mem_count(), 0);
	/* Every allocation of a reservation can fail, and a retry completes it. */
	for (long k = 0;; k++) {
		mem_fail_after(k);
		if (fsnw_reserve(w, 200) == 0)
			break;
		check_consistent(w, 0);
	}
	mem_fail_after(-1);
	for (int i = 0; i < 200; i++) {
		snprintf(p, sizeof(p), "%s/f%d", dir, i);
		wid[i] = fsnw_add(w, p, FSNW_ATTRIB, 0);
		ck_assert_int_gt(wid[i], 0);
	}
	if (fan) /* and the first fanotify mark's own few */
		ck_assert_int_le(mem_count(), 2 * 200 + 8);
	else /* the paths' lengths fall in one or two size classes */
		ck_assert_int_le(mem_count(), 2);
	check_consistent(w, 200);
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(fsnw_remove(w, wid[i]), 0);
	fsnw_pump(w);
	check_consistent(w, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(close_sweep)
{
	/* Closing with events queued, a tree, and parked watches. */
	struct sweep s = { setup_busy, call_close, after_close, 16, 4, __func__ };

	ck_assert_int_eq(run_sweep(&s), 0);
}
END_TEST

START_TEST(read_tree_follow_sweep)
{
	struct sweep s = { setup_events, call_read, after_events, 0, 0, __func__ };

	strict_tree_follow = true;
	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

START_TEST(pump_tree_follow_sweep)
{
	struct sweep s = { setup_events, call_pump, after_events, 0, 0, __func__ };

	strict_tree_follow = true;
	ck_assert_int_gt(run_sweep(&s), 0);
}
END_TEST

TEST_SUITE(alloc_tree_follow)
{
	Suite *s = suite_create("alloc_tree_follow");

	ADD_TEST(s, read_tree_follow_sweep);
	ADD_TEST(s, pump_tree_follow_sweep);
	return s;
}

TEST_SUITE(alloc_failures)
{
	Suite *s = suite_create("alloc_failures");

	ADD_TEST(s, open_sweep);
	ADD_TEST(s, add_plain_sweep);
	ADD_TEST(s, add_dedup_sweep);
	ADD_TEST(s, add_revive_sweep);
	ADD_TEST(s, add_tree_sweep);
	ADD_TEST(s, batch_sweep);
	ADD_TEST(s, batch_atomic_sweep);
	ADD_TEST(s, remove_sweep);
	ADD_TEST(s, remove_drain_sweep);
	ADD_TEST(s, read_sweep);
	ADD_TEST(s, pump_sweep);
	ADD_TEST(s, stats_sweep);
	ADD_TEST(s, close_sweep);
	ADD_TEST(s, churn_reuses_records);
	ADD_TEST(s, reserve_pays_for_adds);
	return s;
}
