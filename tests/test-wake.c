/* SPDX-License-Identifier: MIT */
/* fsnw_wake: a thread asleep in fsnw_read returns; the wake is taken once.
 * The readiness of queued events: kept for whoever can see it, only. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "test-common.h"

struct reader {
	struct fsnw *w;
	int ret;
	size_t max; /* events a read may return, at most 8 */
	atomic_int tid;
};

static void *read_forever(void *arg)
{
	struct reader *r = arg;
	struct fsnw_event ev[8];

	atomic_store(&r->tid, (int)syscall(SYS_gettid));
	r->ret = fsnw_read(r->w, ev, r->max, -1);
	return NULL;
}

/*
 * Twenty rounds of a reader started in a thread of its own (max events a
 * read), poked from here at once or, every other round, once it is asleep
 * in its read; its read must return `expect`.
 */
static void poke_sleeping_reader(struct fsnw *w, size_t max, int expect,
				 void (*poke)(struct fsnw *w, const char *dir, int round),
				 const char *dir)
{
	struct reader r = { w, -1, max, 0 };
	pthread_t t;

	for (int round = 0; round < 20; round++) {
		r.ret = -1;
		atomic_store(&r.tid, 0);
		ck_assert_int_eq(pthread_create(&t, NULL, read_forever, &r), 0);
		if (round % 2) {
			while (!atomic_load(&r.tid))
				sched_yield();
			/* Nothing but its read sleeps: asleep in the poll. */
			thread_wait_asleep(atomic_load(&r.tid));
		}
		poke(w, dir, round);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(r.ret, expect);
	}
}

static void poke_wake(struct fsnw *w, const char *dir, int round)
{
	(void)dir;
	(void)round;
	ck_assert_int_eq(fsnw_wake(w), 0);
}

/* Whichever comes first, the sleep or the wake, the read returns 0. */
START_TEST(wake_sleeping_reader)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	poke_sleeping_reader(w, 8, 0, poke_wake, dir);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A wake with nobody reading makes the next read return at once, and only it. */
START_TEST(wake_taken_once)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[8];
	uint64_t polls;

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	ck_assert_int_eq(fsnw_wake(w), 0);
	ck_assert_int_eq(fsnw_wake(w), 0); /* two before a read: one wake */
	polls = stats_of(w).sys_poll;
	ck_assert_int_eq(fsnw_read(w, ev, 8, -1), 0);
	ck_assert_uint_eq(stats_of(w).sys_poll, polls); /* without sleeping */
	/* This one slept, once: the wake taken left no readiness behind to
	 * wake it early (it is cleared as the reader goes to sleep). */
	ck_assert_int_eq(fsnw_read(w, ev, 8, 30), 0);
	ck_assert_uint_eq(stats_of(w).sys_poll, polls + 1);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A read that has events returns them, and takes the wake. */
START_TEST(wake_with_events)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[8];
	uint64_t polls;

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	touch(dir, "f");
	ck_assert_int_eq(fsnw_wake(w), 0);
	ck_assert_int_eq(fsnw_read(w, ev, 8, -1), 1);
	ck_assert_str_eq(ev[0].name, "f");
	polls = stats_of(w).sys_poll;
	ck_assert_int_eq(fsnw_read(w, ev, 8, 30), 0);
	ck_assert_uint_gt(stats_of(w).sys_poll, polls);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* The descriptor of fsnw_get_fd is readable while a wake waits, not after. */
START_TEST(wake_readiness)
{
	struct fsnw *w = test_open(FSNW_OPEN_NONBLOCK, 0, 0);
	struct fsnw_event ev[8];
	struct pollfd p = { .events = POLLIN };

	p.fd = fsnw_get_fd(w);
	ck_assert_int_ge(p.fd, 0);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(fsnw_read(w, ev, 8, 0), -EAGAIN);
	ck_assert_int_eq(fsnw_wake(w), 0);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	ck_assert_int_eq(fsnw_read(w, ev, 8, 0), 0); /* not -EAGAIN: woken */
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_int_eq(fsnw_read(w, ev, 8, 0), -EAGAIN);
	ck_assert_int_eq(fsnw_wake(NULL), -EINVAL);
	fsnw_close(w);
}
END_TEST

/*
 * Events queued by a pump and read in parts cost the eventfd nothing while
 * nobody can see it; fsnw_get_fd brings its readiness up to date at once,
 * and from then on it follows the queue.
 */
START_TEST(readiness_kept_only_when_seen)
{
	struct fsnw *w = test_open(FSNW_OPEN_NONBLOCK, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[8];
	struct pollfd p = { .events = POLLIN };

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	touch(dir, "a");
	touch(dir, "b");
	touch(dir, "c");
	ck_assert_int_eq(fsnw_pump(w), 3);
	ck_assert_int_eq(fsnw_read(w, ev, 1, 0), 1);
	ck_assert_uint_eq(stats_of(w).sys_eventfd, 0);

	p.fd = fsnw_get_fd(w); /* two still queued: readable from now */
	ck_assert_int_ge(p.fd, 0);
	ck_assert_uint_eq(stats_of(w).sys_eventfd, 1);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	ck_assert_int_eq(fsnw_read(w, ev, 1, 0), 1);
	ck_assert_int_eq(poll(&p, 1, 0), 1);
	ck_assert_int_eq(fsnw_read(w, ev, 8, 0), 1);
	ck_assert_int_eq(poll(&p, 1, 0), 0);
	ck_assert_uint_eq(stats_of(w).sys_eventfd, 2);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* An event made, and pumped into the library's queue from this thread. */
static void poke_pump(struct fsnw *w, const char *dir, int round)
{
	char name[32];

	snprintf(name, sizeof(name), "f%d", round);
	touch(dir, name);
	ck_assert_int_ge(fsnw_pump(w), 0);
}

/*
 * A reader asleep in poll while another thread pumps the kernel queue into
 * the library's: the pump takes the group fd's readiness away, so the
 * eventfd must be raised for the sleeper, or it sleeps for ever (the test's
 * timeout). Whichever comes first, the sleep or the pump, it gets the event.
 */
START_TEST(pump_wakes_sleeping_reader)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	poke_sleeping_reader(w, 1, 1, poke_pump, dir);
	ck_assert_int_eq(fsnw_pump(w), 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(wake)
{
	Suite *s = suite_create("wake");

	ADD_TEST(s, wake_sleeping_reader);
	ADD_TEST(s, wake_taken_once);
	ADD_TEST(s, wake_with_events);
	ADD_TEST(s, wake_readiness);
	ADD_TEST(s, readiness_kept_only_when_seen);
	ADD_TEST(s, pump_wakes_sleeping_reader);
	return s;
}
