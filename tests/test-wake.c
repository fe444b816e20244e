/* SPDX-License-Identifier: MIT */
/* fsnw_wake: a thread asleep in fsnw_read returns; the wake is taken once. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "test-common.h"

struct reader {
	struct fsnw *w;
	int ret;
};

static void *read_forever(void *arg)
{
	struct reader *r = arg;
	struct fsnw_event ev[8];

	r->ret = fsnw_read(r->w, ev, 8, -1);
	return NULL;
}

/* Whichever comes first, the sleep or the wake, the read returns 0. */
START_TEST(wake_sleeping_reader)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct reader r = { w, -1 };
	pthread_t t;

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, 0), 0);
	for (int round = 0; round < 20; round++) {
		r.ret = -1;
		ck_assert_int_eq(pthread_create(&t, NULL, read_forever, &r), 0);
		if (round % 2)
			usleep(2000); /* asleep by now, most likely */
		ck_assert_int_eq(fsnw_wake(w), 0);
		ck_assert_int_eq(pthread_join(t, NULL), 0);
		ck_assert_int_eq(r.ret, 0);
	}
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
	ck_assert_int_eq(fsnw_read(w, ev, 8, 30), 0);
	ck_assert_uint_gt(stats_of(w).sys_poll, polls); /* this one slept */
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

TEST_SUITE(wake)
{
	Suite *s = suite_create("wake");

	ADD_TEST(s, wake_sleeping_reader);
	ADD_TEST(s, wake_taken_once);
	ADD_TEST(s, wake_with_events);
	ADD_TEST(s, wake_readiness);
	return s;
}
