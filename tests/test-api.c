/* SPDX-License-Identifier: MIT */
/* The public API's contract: argument checks, ownership, readiness. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-common.h"

static void assert_untouched(struct fsnw *w)
{
	struct fsnw_stats st = stats_of(w);

	ck_assert_uint_eq(st.logical_watches, 0);
	ck_assert_uint_eq(st.kernel_watches, 0);
}

START_TEST(open_bad_input)
{
	struct fsnw_options o = { .size = sizeof(o) };
	struct {
		struct fsnw_options o;
		uint32_t extra;
	} big = { { .size = sizeof(big) }, 0 };
	struct fsnw *w = (struct fsnw *)0x1;

	ck_assert_int_eq(fsnw_open(NULL, NULL), -EINVAL);
	o.size = 4;
	ck_assert_int_eq(fsnw_open(&w, &o), -EINVAL);
	ck_assert_ptr_eq(w, (struct fsnw *)0x1); /* out-parameter untouched on failure */
	o.size = sizeof(o);
	o.flags = 0x8000;
	ck_assert_int_eq(fsnw_open(&w, &o), -EINVAL);
	o.flags = 0;
	o.backend = 9;
	ck_assert_int_eq(fsnw_open(&w, &o), -EINVAL);
	ck_assert_ptr_eq(w, (struct fsnw *)0x1);

	/* A newer, larger options struct: fine while what we do not know is zero. */
	ck_assert_int_eq(fsnw_open(&w, &big.o), 0);
	fsnw_close(w);
	big.extra = 1;
	ck_assert_int_eq(fsnw_open(&w, &big.o), -E2BIG);

	/* An older, smaller one gets defaults for the rest. */
	o.backend = FSNW_BACKEND_INOTIFY;
	o.size = 8;
	ck_assert_int_eq(fsnw_open(&w, &o), 0);
	ck_assert_int_eq(fsnw_get_backend(w), FSNW_BACKEND_INOTIFY);
	fsnw_close(w);
}
END_TEST

START_TEST(null_handle)
{
	struct fsnw_event ev;
	struct fsnw_stats st = { .size = sizeof(st) };
	int wid = 1;

	fsnw_close(NULL);
	ck_assert_int_eq(fsnw_get_fd(NULL), -EINVAL);
	ck_assert_int_eq(fsnw_get_backend(NULL), -EINVAL);
	ck_assert_int_eq(fsnw_add(NULL, "/", FSNW_CREATE, 0), -EINVAL);
	ck_assert_int_eq(fsnw_remove(NULL, 1), -EINVAL);
	ck_assert_int_eq(fsnw_read(NULL, &ev, 1, 0), -EINVAL);
	ck_assert_int_eq(fsnw_pump(NULL), -EINVAL);
	ck_assert_int_eq(fsnw_get_stats(NULL, &st), -EINVAL);
	ck_assert_int_eq(fsnw_stats_json(NULL, NULL, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add_batch(NULL, NULL, 0, 0), -EINVAL);
	ck_assert_int_eq(fsnw_remove_batch(NULL, &wid, 1, NULL), -EINVAL);
	ck_assert_int_eq(fsnw_reserve(NULL, 1), -EINVAL);
}
END_TEST

START_TEST(add_bad_input)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	char *longpath = malloc(PATH_MAX + 10);

	touch(dir, "file");
	memset(longpath, 'a', PATH_MAX + 9);
	longpath[0] = '/';
	longpath[PATH_MAX + 9] = '\0';

	ck_assert_int_eq(fsnw_add(w, NULL, FSNW_MODIFY, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, "", FSNW_MODIFY, 0), -ENOENT);
	ck_assert_int_eq(fsnw_add(w, longpath, FSNW_MODIFY, 0), -ENAMETOOLONG);
	ck_assert_int_eq(fsnw_add(w, pjoin(p, dir, "nope"), FSNW_MODIFY, 0), -ENOENT);
	ck_assert_int_eq(fsnw_add(w, pjoin(p, dir, "file"), FSNW_MODIFY, FSNW_WATCH_ONLYDIR),
			 -ENOTDIR);
	ck_assert_int_eq(fsnw_add(w, pjoin(p, dir, "file"), FSNW_MODIFY, FSNW_WATCH_TREE),
			 -ENOTDIR);
	ck_assert_int_eq(fsnw_add(w, dir, 0, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_ISDIR, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_MODIFY | 0x1000, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_IGNORED, 0), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_MODIFY, 0x00400000), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_MODIFY, FSNW_WATCH_ONE_FS), -EINVAL);
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_MODIFY, FSNW_WATCH_TREE | FSNW_WATCH_ONESHOT),
			 -EINVAL);
	/* A flag bit that only means something inside the mask of inotify. */
	ck_assert_int_eq(fsnw_add(w, dir, FSNW_MODIFY | 0x20000000u /* IN_MASK_ADD */, 0),
			 -EINVAL);
	assert_untouched(w);

	/* inotify flag bits inside the mask are accepted as flags. */
	ck_assert_int_eq(fsnw_add(w, pjoin(p, dir, "file"), FSNW_MODIFY | FSNW_WATCH_ONLYDIR, 0),
			 -ENOTDIR);
	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE | FSNW_WATCH_ONLYDIR, 0), 0);

	free(longpath);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(remove_bad_input)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	int wid;

	ck_assert_int_eq(fsnw_remove(w, 0), -EINVAL);
	ck_assert_int_eq(fsnw_remove(w, -3), -EINVAL);
	ck_assert_int_eq(fsnw_remove(w, 4242), -ENOENT);
	wid = fsnw_add(w, dir, FSNW_CREATE, 0);
	ck_assert_int_gt(wid, 0);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	ck_assert_int_eq(fsnw_remove(w, wid), -ENOENT);
	assert_untouched(w);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(read_bad_input)
{
	struct fsnw *w = test_open(0, 0, 0);
	struct fsnw_event ev;

	ck_assert_int_eq(fsnw_read(w, NULL, 1, 0), -EINVAL);
	ck_assert_int_eq(fsnw_read(w, &ev, 0, 0), -EINVAL);
	ck_assert_int_eq(fsnw_read(w, &ev, 1, 0), 0);
	fsnw_close(w);
}
END_TEST

START_TEST(stats_bad_input)
{
	struct fsnw *w = test_open(0, 0, 0);
	struct fsnw_stats st;
	char small[4];
	int need;

	memset(&st, 0, sizeof(st));
	ck_assert_int_eq(fsnw_get_stats(w, NULL), -EINVAL);
	ck_assert_int_eq(fsnw_get_stats(w, &st), -EINVAL); /* size 0 */
	ck_assert_int_eq(fsnw_stats_json(w, NULL, 5), -EINVAL);
	need = fsnw_stats_json(w, NULL, 0);
	ck_assert_int_gt(need, 10);
	ck_assert_int_eq(fsnw_stats_json(w, small, sizeof(small)), need);
	ck_assert_int_eq(small[3], '\0');
	fsnw_close(w);
}
END_TEST

START_TEST(fds_released)
{
	int before = fd_count();

	for (int i = 0; i < 20; i++) {
		struct fsnw *w = test_open(0, 0, 0);
		char *dir = tmpdir_make();

		ck_assert_int_gt(fsnw_add(w, dir, FSNW_ALL_EVENTS, 0), 0);
		touch(dir, "x");
		fsnw_close(w); /* with events pending */
		tmpdir_remove(dir);
	}
	ck_assert_int_eq(fd_count(), before);
}
END_TEST

static bool readable(struct fsnw *w)
{
	struct pollfd p = { .fd = fsnw_get_fd(w), .events = POLLIN };

	ck_assert_int_ge(poll(&p, 1, 0), 0);
	return p.revents & POLLIN;
}

static bool readable_within(struct fsnw *w, int ms)
{
	struct pollfd p = { .fd = fsnw_get_fd(w), .events = POLLIN };

	ck_assert_int_ge(poll(&p, 1, ms), 0);
	return p.revents & POLLIN;
}

START_TEST(fd_readiness)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_MERGE, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[4];

	ck_assert_int_ge(fsnw_get_fd(w), 0);
	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	ck_assert(!readable(w));
	ck_assert_int_eq(fsnw_read(w, ev, 4, 0), 0);

	touch(dir, "a");
	touch(dir, "b");
	touch(dir, "c");
	ck_assert(readable_within(w, 2000));
	/* Read one: the other two are now in user space, the kernel fd is
	 * empty, and the handle must still poll readable. */
	ck_assert_int_eq(fsnw_read(w, ev, 1, 1000), 1);
	ck_assert(readable(w));
	ck_assert_int_eq(fsnw_read(w, ev, 1, 0), 1);
	ck_assert(readable(w));
	ck_assert_int_eq(fsnw_read(w, ev, 4, 0), 1);
	ck_assert(!readable(w));
	ck_assert_int_eq(fsnw_read(w, ev, 4, 0), 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(nonblock_and_timeout)
{
	struct fsnw *w = test_open(FSNW_OPEN_NONBLOCK, 0, 0);
	struct fsnw_event ev;

	ck_assert_int_eq(fsnw_read(w, &ev, 1, -1), -EAGAIN);
	fsnw_close(w);
	w = test_open(0, 0, 0);
	ck_assert_int_eq(fsnw_read(w, &ev, 1, 30), 0);
	fsnw_close(w);
}
END_TEST

START_TEST(two_handles_independent)
{
	struct fsnw *a = test_open(0, 0, 0);
	struct fsnw *b = test_open(0, 0, 0);
	char *da = tmpdir_make(), *db = tmpdir_make();
	struct ev *evs;
	int wa, wb, n;

	wa = fsnw_add(a, da, FSNW_CREATE, 0);
	wb = fsnw_add(b, db, FSNW_CREATE, 0);
	ck_assert_int_eq(wa, 1);
	ck_assert_int_eq(wb, 1); /* wids are per handle */
	touch(da, "only-a");
	n = collect_sync(a, &evs, 16, da);
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(evs[0].name, "only-a");
	evs_free(evs);
	/* An absence, proved by b's own sentinel, made after the touch: a
	 * "only-a" queued for b would have come before it. */
	n = collect_sync(b, &evs, 16, db);
	ck_assert_int_eq(n, 0);
	evs_free(evs);
	ck_assert_int_eq(fsnw_remove(b, wb), 0);
	ck_assert_int_eq(fsnw_remove(a, wb), 0); /* a's wid 1 is a's own */
	ck_assert_uint_eq(stats_of(a).logical_watches, 0);
	fsnw_close(a);
	fsnw_close(b);
	tmpdir_remove(da);
	tmpdir_remove(db);
}
END_TEST

TEST_SUITE(api)
{
	Suite *s = suite_create("api");

	ADD_TEST(s, open_bad_input);
	ADD_TEST(s, null_handle);
	ADD_TEST(s, add_bad_input);
	ADD_TEST(s, remove_bad_input);
	ADD_TEST(s, read_bad_input);
	ADD_TEST(s, stats_bad_input);
	ADD_TEST(s, fds_released);
	ADD_TEST(s, fd_readiness);
	ADD_TEST(s, nonblock_and_timeout);
	ADD_TEST(s, two_handles_independent);
	return s;
}
