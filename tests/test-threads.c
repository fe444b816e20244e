/* SPDX-License-Identifier: MIT */
/*
 * One handle, eight threads adding and removing watches (single and batch,
 * shared and distinct inodes) while another thread reads events. Afterwards:
 * no wid was handed out twice while alive, every remove of an own wid
 * succeeded, and the counters add up. Built with -Db_sanitize=thread this is
 * the ThreadSanitizer suite.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test-common.h"

#define WORKERS 8
#define ROUNDS 300
#define FILES 16
#define MAX_WID 65536

struct shared {
	struct fsnw *w;
	const char *dir;
	atomic_uchar alive[MAX_WID];
	atomic_int errors;
	atomic_int adds;
	atomic_bool stop;
};

static void claim(struct shared *s, int wid)
{
	if (wid <= 0 || wid >= MAX_WID || atomic_exchange(&s->alive[wid], 1) != 0)
		atomic_fetch_add(&s->errors, 1);
	else
		atomic_fetch_add(&s->adds, 1);
}

static void release(struct shared *s, int wid)
{
	if (atomic_exchange(&s->alive[wid], 0) != 1)
		atomic_fetch_add(&s->errors, 1);
}

static void *worker(void *arg)
{
	struct shared *s = *(struct shared **)arg;
	char path[FILES][PATH_MAX];
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < FILES; i++)
		snprintf(path[i], PATH_MAX, "%s/f%d", s->dir, i);
	for (int r = 0; r < ROUNDS; r++) {
		int wids[4];
		/* Files 0-3 are shared by every thread; the rest spread out. */
		int f = (int)(rand_r(&seed) % FILES);

		if (r % 3 == 0) {
			struct fsnw_batch_item items[4];
			int results[4];

			for (int i = 0; i < 4; i++)
				items[i] = (struct fsnw_batch_item){ path[(f + i) % FILES],
								     FSNW_MODIFY | FSNW_ATTRIB, 0,
								     0 };
			if (fsnw_add_batch(s->w, items, 4, r % 2 ? FSNW_BATCH_ATOMIC : 0) != 4)
				atomic_fetch_add(&s->errors, 1);
			for (int i = 0; i < 4; i++) {
				claim(s, items[i].result);
				wids[i] = items[i].result;
			}
			sched_yield(); /* hold them while others add */
			for (int i = 0; i < 4; i++)
				release(s, wids[i]);
			if (fsnw_remove_batch(s->w, wids, 4, results) != 4)
				atomic_fetch_add(&s->errors, 1);
		} else {
			int wid = fsnw_add(s->w, path[f], FSNW_MODIFY, 0);

			claim(s, wid);
			sched_yield();
			release(s, wid);
			if (fsnw_remove(s->w, wid) != 0)
				atomic_fetch_add(&s->errors, 1);
		}
	}
	return NULL;
}

static void *reader(void *arg)
{
	struct shared *s = arg;
	struct fsnw_event ev[64];

	while (!atomic_load(&s->stop)) {
		int n = fsnw_read(s->w, ev, 64, 10);

		if (n < 0)
			atomic_fetch_add(&s->errors, 1);
		for (int i = 0; i < n; i++)
			if (ev[i].wid < 0 || (ev[i].mask & FSNW_OVERFLOW && ev[i].wid != 0))
				atomic_fetch_add(&s->errors, 1);
	}
	return NULL;
}

static void *writer(void *arg)
{
	struct shared *s = arg;
	char name[16];

	for (int i = 0; !atomic_load(&s->stop); i++) {
		snprintf(name, sizeof(name), "f%d", i % FILES);
		write_bytes(s->dir, name, "x");
		if (i % 64 == 0)
			usleep(1000);
	}
	return NULL;
}

static uint64_t hist_total(const struct fsnw_histogram *h)
{
	uint64_t n = 0;

	for (int b = 0; b < FSNW_HIST_BUCKETS; b++)
		n += h->buckets[b];
	return n;
}

/* Returns the handle's final stats; asserts the consistency checks. */
static struct fsnw_stats run(uint32_t idle)
{
	static struct shared s;
	struct shared *args[WORKERS];
	pthread_t t[WORKERS], rd, wr;
	char *dir = tmpdir_make();
	struct fsnw_stats st;

	memset(&s, 0, sizeof(s));
	s.w = test_open(0, 0, idle);
	s.dir = dir;
	for (int i = 0; i < FILES; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		touch(dir, name);
	}
	ck_assert_int_eq(pthread_create(&rd, NULL, reader, &s), 0);
	ck_assert_int_eq(pthread_create(&wr, NULL, writer, &s), 0);
	for (int i = 0; i < WORKERS; i++) {
		args[i] = &s;
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker, &args[i]), 0);
	}
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	atomic_store(&s.stop, true);
	pthread_join(rd, NULL);
	pthread_join(wr, NULL);

	st = stats_of(s.w);
	ck_assert_int_eq(atomic_load(&s.errors), 0);
	ck_assert_int_eq(atomic_load(&s.adds), (int)st.add_calls);
	ck_assert_uint_eq(st.add_calls, st.remove_calls);
	ck_assert_uint_eq(st.logical_watches, 0);
	ck_assert_uint_eq(st.kernel_watches, st.parked_watches);
	ck_assert_uint_le(st.parked_watches, idle);
	/* Eleven threads timed into per-thread histograms (eight shards, so
	 * some share one): the snapshot adds them up, sample for sample. */
	ck_assert_uint_eq(st.lat_add.count, st.add_calls);
	ck_assert_uint_eq(st.lat_remove.count, st.remove_calls);
	ck_assert_uint_eq(hist_total(&st.lat_add), st.lat_add.count);
	ck_assert_uint_eq(hist_total(&st.lat_remove), st.lat_remove.count);
	ck_assert_uint_eq(hist_total(&st.lat_kernel_read), st.lat_kernel_read.count);
	for (int i = 0; i < MAX_WID; i++)
		ck_assert_int_eq(atomic_load(&s.alive[i]), 0);
	fsnw_close(s.w);
	tmpdir_remove(dir);
	return st;
}

START_TEST(add_remove_read_concurrently)
{
	struct fsnw_stats st = run(0);

	ck_assert_uint_eq(st.kernel_watches, 0);
	ck_assert_uint_eq(st.add_calls, WORKERS * (ROUNDS / 3 * 4 + (ROUNDS - ROUNDS / 3)));
}
END_TEST

START_TEST(with_idle_cache)
{
	struct fsnw_stats st = run(8);

	ck_assert_uint_gt(st.idle_revives, 0);
	ck_assert_uint_eq(st.sys_inotify_rm_watch + st.sys_fanotify_mark > 0, 1);
}
END_TEST

/*
 * Threads that come and go while others add: rings of exited threads are
 * closed under the feet of running ones (TSan and ASan run this), and the
 * handle ends where it began, its rings given back at close.
 */
struct churner {
	struct fsnw *w;
	const char *path;
	atomic_int stop;
	atomic_int bad;
};

static void *short_lived(void *arg)
{
	struct churner *c = arg;

	for (int i = 0; i < 5; i++) {
		int wid = fsnw_add(c->w, c->path, FSNW_ATTRIB, 0);

		if (wid <= 0 || fsnw_remove(c->w, wid) != 0)
			atomic_fetch_add(&c->bad, 1);
	}
	return NULL;
}

static void *long_lived(void *arg)
{
	struct churner *c = arg;

	while (!atomic_load(&c->stop))
		short_lived(c);
	return NULL;
}

START_TEST(threads_come_and_go_while_others_add)
{
	int before = io_uring_fds();
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct churner c = { .w = w, .path = p };
	pthread_t keep[2];

	touch(dir, "f");
	pjoin(p, dir, "f");
	ck_assert_int_gt(fsnw_add(w, p, FSNW_ATTRIB, 0), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&keep[i], NULL, long_lived, &c), 0);
	for (int i = 0; i < 60; i++) {
		pthread_t th[3];

		for (int k = 0; k < 3; k++)
			ck_assert_int_eq(pthread_create(&th[k], NULL, short_lived, &c), 0);
		for (int k = 0; k < 3; k++)
			pthread_join(th[k], NULL);
	}
	atomic_store(&c.stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(keep[i], NULL);
	ck_assert_int_eq(atomic_load(&c.bad), 0);
	ck_assert_uint_eq(stats_of(w).logical_watches, 1);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	/* At most the 16 a handle keeps at a time. */
	ck_assert_int_le(io_uring_fds() - before, 16);
	fsnw_close(w);
	ck_assert_int_eq(io_uring_fds(), before);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(threads)
{
	Suite *s = suite_create("threads");

	ADD_TEST(s, add_remove_read_concurrently);
	ADD_TEST(s, with_idle_cache);
	ADD_TEST(s, threads_come_and_go_while_others_add);
	return s;
}
