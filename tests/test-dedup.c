/* SPDX-License-Identifier: MIT */
/*
 * Shared-inode deduplication, asserted through the library's exact syscall
 * counters: repeats and hard links cost one kernel watch, a non-last remove
 * costs no syscall, the last remove costs one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "test-common.h"

/* Every syscall the library counts. */
static uint64_t syscalls(const struct fsnw_stats *s)
{
	return s->sys_inotify_init + s->sys_inotify_add_watch + s->sys_inotify_rm_watch +
	       s->sys_fanotify_init + s->sys_fanotify_mark + s->sys_name_to_handle_at +
	       s->sys_open_by_handle_at + s->sys_read + s->sys_poll + s->sys_eventfd +
	       s->sys_walk + s->sys_other + s->sys_io_uring;
}

/*
 * What settling an add onto an existing kernel watch cost between two
 * snapshots, when the kernel queue was idle: a look at the readiness ring
 * (no syscall), or without one (FSNW_NO_IO_URING=1, FSNW_OPEN_NO_RING, no
 * io_uring here) one read of the group fd.
 */
static void assert_idle_settles(const struct fsnw_stats *a, const struct fsnw_stats *b,
				uint64_t n)
{
	if (b->ring_active) {
		ck_assert_uint_eq(b->settles_ring - a->settles_ring, n);
		ck_assert_uint_eq(b->settles_read - a->settles_read, 0);
		ck_assert_uint_eq(b->sys_read - a->sys_read, 0);
	} else {
		ck_assert_uint_eq(b->settles_ring - a->settles_ring, 0);
		ck_assert_uint_eq(b->settles_read - a->settles_read, n);
		ck_assert_uint_eq(b->sys_read - a->sys_read, n);
	}
}

/* Kernel mark operations (add or remove). */
static uint64_t mark_ops(const struct fsnw_stats *s)
{
	return s->sys_inotify_add_watch + s->sys_inotify_rm_watch + s->sys_fanotify_mark;
}

START_TEST(same_path_twice)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1, s2, s3;
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	pjoin(p, dir, "f");
	s0 = stats_of(w);
	a = fsnw_add(w, p, FSNW_MODIFY, 0);
	s1 = stats_of(w);
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	s2 = stats_of(w);
	ck_assert_int_ne(a, b);
	ck_assert_uint_eq(s1.kernel_watches, 1);
	ck_assert_uint_eq(s2.kernel_watches, 1);
	ck_assert_uint_eq(s2.logical_watches, 2);
	ck_assert_uint_eq(s2.dedup_hits, 1);
	/* The repeat created no kernel watch. inotify learns the wd with one
	 * mark call; fanotify knows the object by its handle (one
	 * name_to_handle_at) and makes no mark. That is the whole cost on an
	 * idle queue where the readiness ring works; otherwise one read keeps
	 * older events from the new watch. */
	ck_assert_uint_eq(mark_ops(&s1) - mark_ops(&s0), 1);
	ck_assert_uint_eq(mark_ops(&s2) - mark_ops(&s1), test_backend == FSNW_BACKEND_INOTIFY);
	ck_assert_uint_eq(syscalls(&s2) - syscalls(&s1), s2.ring_active ? 1 : 2);
	assert_idle_settles(&s1, &s2, 1);
	if (test_backend == FSNW_BACKEND_FANOTIFY)
		ck_assert_uint_eq(s2.sys_name_to_handle_at - s1.sys_name_to_handle_at, 1);

	write_bytes(dir, "f", "x");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	evs_free(evs);

	/* Not the last: no syscall at all. */
	s1 = stats_of(w);
	ck_assert_int_eq(fsnw_remove(w, a), 0);
	s2 = stats_of(w);
	ck_assert_uint_eq(syscalls(&s2), syscalls(&s1));
	ck_assert_uint_eq(s2.kernel_watches, 1);

	/* The other keeps working. */
	write_bytes(dir, "f", "y");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(evs[0].wid, b);
	evs_free(evs);

	/* The last: the kernel watch goes, with one mark operation. */
	s2 = stats_of(w);
	ck_assert_int_eq(fsnw_remove(w, b), 0);
	s3 = stats_of(w);
	ck_assert_uint_eq(s3.kernel_watches, 0);
	ck_assert_uint_eq(mark_ops(&s3) - mark_ops(&s2), 1);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(hard_links)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p1[PATH_MAX], p2[PATH_MAX];
	struct ev *evs;
	int a, b, n, i;

	touch(dir, "one");
	ck_assert_int_eq(link(pjoin(p1, dir, "one"), pjoin(p2, dir, "two")), 0);
	a = fsnw_add(w, p1, FSNW_MODIFY | FSNW_ATTRIB, 0);
	b = fsnw_add(w, p2, FSNW_MODIFY, 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	write_bytes(dir, "two", "x");
	ck_assert_int_eq(chmod(p2, 0600), 0);
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(n, 3);
	i = find_ev(evs, n, 0, a, FSNW_MODIFY, NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(evs[i].path, p1);
	i = find_ev(evs, n, 0, b, FSNW_MODIFY, NULL);
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(evs[i].path, p2);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_ATTRIB, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_ATTRIB, NULL), 0);
	evs_free(evs);

	ck_assert_int_eq(fsnw_remove(w, b), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	write_bytes(dir, "one", "y");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(n, 1);
	ck_assert_int_eq(evs[0].wid, a);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(many_watchers_one_inode)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	int wids[200];
	struct ev *evs;
	int n;

	touch(dir, "f");
	pjoin(p, dir, "f");
	for (int i = 0; i < 200; i++) {
		wids[i] = fsnw_add(w, p, FSNW_ATTRIB, 0);
		ck_assert_int_gt(wids[i], 0);
	}
	ck_assert_uint_eq(stats_of(w).kernel_watches, 1);
	ck_assert_uint_eq(stats_of(w).dedup_hits, 199);
	ck_assert_int_eq(chmod(p, 0600), 0);
	n = collect_now(w, &evs, 400);
	ck_assert_int_eq(n, 200);
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(count_ev(evs, n, wids[i], FSNW_ATTRIB, NULL), 1);
	evs_free(evs);
	s0 = stats_of(w);
	for (int i = 0; i < 199; i++)
		ck_assert_int_eq(fsnw_remove(w, wids[i]), 0);
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.kernel_watches, 1);
	ck_assert_uint_eq(syscalls(&s1), syscalls(&s0));
	ck_assert_int_eq(fsnw_remove(w, wids[199]), 0);
	ck_assert_uint_eq(stats_of(w).kernel_watches, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A watch added to a busy inode never receives what happened before it. */
START_TEST(no_event_older_than_watch)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct ev *evs;
	int a, b, n;

	struct fsnw_stats s0, s1;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_MODIFY, 0);
	write_bytes(dir, "f", "old"); /* unread in the kernel */
	s0 = stats_of(w);
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	s1 = stats_of(w);
	/* On both paths the queue is read: the ring saw the event come. */
	ck_assert_uint_eq(s1.settles_read - s0.settles_read, 1);
	ck_assert_uint_eq(s1.settles_ring, s0.settles_ring);
	ck_assert_uint_ge(s1.sys_read - s0.sys_read, 1);
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, 0, NULL), 0);
	evs_free(evs);
	write_bytes(dir, "f", "new");
	n = collect_now(w, &evs, 16);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* When the masks share no event bit, no older event can reach the new watch:
 * the add needs no read of the group fd. */
START_TEST(disjoint_masks_no_drain)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	struct ev *evs;
	int a, b, n;

	touch(dir, "f");
	a = fsnw_add(w, pjoin(p, dir, "f"), FSNW_ATTRIB, 0);
	ck_assert_int_eq(chmod(p, 0600), 0); /* unread in the kernel */
	s0 = stats_of(w);
	b = fsnw_add(w, p, FSNW_MODIFY, 0);
	s1 = stats_of(w);
	ck_assert_int_gt(b, 0);
	ck_assert_uint_eq(s1.dedup_hits, s0.dedup_hits + 1);
	ck_assert_uint_eq(s1.sys_read, s0.sys_read);
	write_bytes(dir, "f", "x");
	n = collect_now(w, &evs, 16);
	dump_evs(evs, n);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_ATTRIB, NULL), 1);
	ck_assert_int_eq(count_ev(evs, n, b, FSNW_MODIFY, NULL), 1);
	ck_assert_int_eq(n, 2);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A read that fills the caller's array leaves records read from the kernel
 * but not yet routed in the library's buffer: the kernel queue is empty
 * (the ring is quiet), yet they are older than an add made then, which must
 * not hear them.
 */
START_TEST(buffered_records_older_than_add)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event one;
	struct ev *evs;
	int a, b, n;

	a = fsnw_add(w, dir, FSNW_CREATE, 0);
	ck_assert_int_gt(a, 0);
	for (int i = 0; i < 20; i++) {
		char name[16];

		snprintf(name, sizeof(name), "f%d", i);
		touch(dir, name);
	}
	ck_assert_int_eq(fsnw_read(w, &one, 1, 1000), 1);
	ck_assert_int_eq(one.wid, a);
	b = fsnw_add(w, dir, FSNW_CREATE, 0);
	ck_assert_int_gt(b, 0);
	n = collect_sync(w, &evs, 64, dir);
	ck_assert_int_eq(count_ev(evs, n, b, 0, NULL), 0);
	ck_assert_int_eq(count_ev(evs, n, a, FSNW_CREATE, NULL), 19);
	evs_free(evs);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A dedup add on an idle queue costs its mark call alone (ring path), every
 * time; a non-last remove costs nothing. */
START_TEST(idle_dedup_adds_one_syscall_each)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct fsnw_stats s0, s1;
	int keep, wid;

	touch(dir, "f");
	keep = fsnw_add(w, pjoin(p, dir, "f"), FSNW_ATTRIB, 0);
	ck_assert_int_gt(keep, 0);
	s0 = stats_of(w);
	for (int i = 0; i < 50; i++) {
		wid = fsnw_add(w, p, FSNW_ATTRIB, 0);
		ck_assert_int_gt(wid, 0);
		ck_assert_int_eq(fsnw_remove(w, wid), 0);
	}
	s1 = stats_of(w);
	ck_assert_uint_eq(s1.dedup_hits - s0.dedup_hits, 50);
	ck_assert_uint_eq(syscalls(&s1) - syscalls(&s0), s1.ring_active ? 50 : 100);
	assert_idle_settles(&s0, &s1, 50);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

struct toucher {
	const char *path;
	atomic_int go, done;
	atomic_bool stop;
};

static void *toucher(void *arg)
{
	struct toucher *t = arg;

	while (!atomic_load(&t->stop)) {
		/* A spin that never yields starves the other thread under
		 * valgrind, which runs one thread at a time. */
		if (!atomic_exchange(&t->go, 0)) {
			sched_yield();
			continue;
		}
		ck_assert_int_eq(chmod(t->path, 0644), 0);
		atomic_store(&t->done, 1);
	}
	return NULL;
}

/*
 * Events another thread queued just before a dedup add never reach the new
 * watch, the ring seeing them come (or the read finding them), over many
 * tries: the race the readiness ring must win every time.
 */
START_TEST(other_threads_event_before_add)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct toucher t = { 0 };
	pthread_t th;
	int keep;

	touch(dir, "f");
	t.path = pjoin(p, dir, "f");
	keep = fsnw_add(w, p, FSNW_ATTRIB, 0);
	ck_assert_int_gt(keep, 0);
	ck_assert_int_eq(pthread_create(&th, NULL, toucher, &t), 0);
	for (int i = 0; i < 300; i++) {
		struct fsnw_event ev[8];
		int wid, n, keeps = 0;

		atomic_store(&t.done, 0);
		atomic_store(&t.go, 1);
		while (!atomic_load(&t.done))
			sched_yield();
		wid = fsnw_add(w, p, FSNW_ATTRIB, 0);
		ck_assert_int_gt(wid, 0);
		while ((n = fsnw_read(w, ev, 8, 0)) > 0) {
			for (int k = 0; k < n; k++) {
				ck_assert_msg(ev[k].wid != wid, "try %d: an older event reached the new watch", i);
				keeps += ev[k].wid == keep;
			}
		}
		ck_assert_int_eq(keeps, 1);
		ck_assert_int_eq(fsnw_remove(w, wid), 0);
	}
	atomic_store(&t.stop, true);
	pthread_join(th, NULL);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/* A thread other than the opener gets a ring of its own at its first dedup
 * add; from then on its idle dedup adds cost the mark call alone. */
struct adder {
	struct fsnw *w;
	const char *path;
	struct fsnw_stats s0, s1, s2;
};

static void *adder(void *arg)
{
	struct adder *a = arg;
	int wid;

	a->s0 = stats_of(a->w);
	wid = fsnw_add(a->w, a->path, FSNW_ATTRIB, 0);
	ck_assert_int_eq(fsnw_remove(a->w, wid), 0);
	a->s1 = stats_of(a->w);
	for (int i = 0; i < 20; i++) {
		wid = fsnw_add(a->w, a->path, FSNW_ATTRIB, 0);
		ck_assert_int_gt(wid, 0);
		ck_assert_int_eq(fsnw_remove(a->w, wid), 0);
	}
	a->s2 = stats_of(a->w);
	return NULL;
}

START_TEST(each_thread_its_ring)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct adder a = { w, NULL, { 0 }, { 0 }, { 0 } };
	pthread_t th;

	touch(dir, "f");
	a.path = pjoin(p, dir, "f");
	ck_assert_int_gt(fsnw_add(w, p, FSNW_ATTRIB, 0), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, adder, &a), 0);
	pthread_join(th, NULL);
	if (a.s0.ring_active) {
		/* The first: its ring is set up and armed (io_uring calls). */
		ck_assert_uint_gt(a.s1.sys_io_uring - a.s0.sys_io_uring, 0);
		ck_assert_uint_eq(a.s1.settles_ring - a.s0.settles_ring, 1);
	}
	ck_assert_uint_eq(syscalls(&a.s2) - syscalls(&a.s1), a.s2.ring_active ? 20 : 40);
	assert_idle_settles(&a.s1, &a.s2, 20);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A thread whose ring is armed sleeps through events: the ring takes them
 * as deferred task work (kernel 6.1 on), setting a flag the thread looks at
 * when it next adds, and wakes nobody. The sleeper's poll is its only
 * voluntary switch. (Before 6.1 the plain ring's task work woke it once:
 * two switches, which fail this.)
 */
struct sleeper {
	struct fsnw *w;
	const char *path;
	int pipe_rd;
	atomic_int armed;
	pid_t tid;
	long switches;
};

static void *sleeper(void *arg)
{
	struct sleeper *s = arg;
	struct pollfd p = { .fd = s->pipe_rd, .events = POLLIN };
	struct rusage r0, r1;
	int wid = fsnw_add(s->w, s->path, FSNW_ATTRIB, 0); /* arms this thread's ring */
	int ret;

	ck_assert_int_gt(wid, 0);
	s->tid = (pid_t)syscall(SYS_gettid);
	atomic_store(&s->armed, 1);
	/* No Check assertion in between: in a forked test each takes a lock
	 * the main thread's take too, and waiting for it is a switch. */
	getrusage(RUSAGE_THREAD, &r0);
	ret = poll(&p, 1, -1);
	getrusage(RUSAGE_THREAD, &r1);
	ck_assert_int_eq(ret, 1);
	s->switches = r1.ru_nvcsw - r0.ru_nvcsw;
	ck_assert_int_eq(fsnw_remove(s->w, wid), 0);
	return NULL;
}

static bool kernel_before(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;

	return uname(&u) == 0 && sscanf(u.release, "%d.%d", &ma, &mi) == 2 &&
	       (ma < major || (ma == major && mi < minor));
}

START_TEST(ring_leaves_sleepers_asleep)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	int pfd[2];
	struct sleeper s = { 0 };
	pthread_t th;

	touch(dir, "f");
	ck_assert_int_eq(pipe(pfd), 0);
	s = (struct sleeper){ .w = w, .path = pjoin(p, dir, "f"), .pipe_rd = pfd[0] };
	ck_assert_int_gt(fsnw_add(w, p, FSNW_ATTRIB, 0), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, sleeper, &s), 0);
	while (!atomic_load(&s.armed))
		sched_yield();
	thread_wait_asleep(s.tid); /* in its poll: nothing else it does sleeps */
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(chmod(p, i & 1 ? 0640 : 0600), 0);
		usleep(20000); /* apart: five chances to wake it, not one burst */
	}
	ck_assert_int_eq(write(pfd[1], "x", 1), 1);
	pthread_join(th, NULL);
	/* Its poll's alone: it was asleep there before the first event. Not
	 * under valgrind, whose scheduler puts threads to sleep in turn. */
	if (!(stats_of(w).ring_active && kernel_before(6, 1)) && !test_under_valgrind())
		ck_assert_int_eq(s.switches, 1);
	close(pfd[0]);
	close(pfd[1]);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A thread that comes after one that exited often gets that thread's TLS
 * block. It must not take over the old thread's ring, whose poll died with
 * its thread: trusting it, an add made the new thread's own events before
 * the add reach the new watch (3 rounds of 5 before the fix).
 */
struct late {
	struct fsnw *w;
	const char *path;
	int keep, to_new, to_keep;
};

static void *arm_and_exit(void *arg)
{
	struct late *l = arg;

	ck_assert_int_eq(fsnw_remove(l->w, fsnw_add(l->w, l->path, FSNW_ATTRIB, 0)), 0);
	return NULL;
}

static void *events_then_add(void *arg)
{
	struct late *l = arg;
	struct fsnw_event ev[16];
	int wid, n;

	ck_assert_int_eq(chmod(l->path, 0640), 0);
	ck_assert_int_eq(chmod(l->path, 0600), 0);
	wid = fsnw_add(l->w, l->path, FSNW_ATTRIB, 0);
	ck_assert_int_gt(wid, 0);
	while ((n = fsnw_read(l->w, ev, 16, 0)) > 0)
		for (int k = 0; k < n; k++) {
			l->to_new += ev[k].wid == wid;
			l->to_keep += ev[k].wid == l->keep;
		}
	ck_assert_int_eq(fsnw_remove(l->w, wid), 0);
	return NULL;
}

START_TEST(new_thread_trusts_no_dead_ring)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];
	struct late l = { .w = w };

	touch(dir, "f");
	l.path = pjoin(p, dir, "f");
	l.keep = fsnw_add(w, p, FSNW_ATTRIB, 0);
	ck_assert_int_gt(l.keep, 0);
	for (int round = 0; round < 12; round++) {
		pthread_t a, b;

		l.to_new = l.to_keep = 0;
		ck_assert_int_eq(pthread_create(&a, NULL, arm_and_exit, &l), 0);
		pthread_join(a, NULL);
		ck_assert_int_eq(pthread_create(&b, NULL, events_then_add, &l), 0);
		pthread_join(b, NULL);
		ck_assert_msg(l.to_new == 0, "round %d: an older event reached the new watch", round);
		ck_assert_int_ge(l.to_keep, 1);
	}
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * An exited thread's ring is let go when a later thread needs one: more
 * threads, one after another, than a handle has rings for, each get a ring
 * of their own (their dedup adds cost the mark call alone), and the
 * process holds no more than a few io_uring descriptors at the end. (Rings
 * used to stay until the handle closed, and threads after the eighth read
 * the group fd at every add.)
 */
START_TEST(exited_threads_give_rings_back)
{
	int before = io_uring_fds();
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	char p[PATH_MAX];

	touch(dir, "f");
	pjoin(p, dir, "f");
	ck_assert_int_gt(fsnw_add(w, p, FSNW_ATTRIB, 0), 0);
	for (int i = 0, first = 0; i < 40; i++) {
		struct adder a = { w, p, { 0 }, { 0 }, { 0 } };
		pthread_t th;
		int setup;

		ck_assert_int_eq(pthread_create(&th, NULL, adder, &a), 0);
		pthread_join(th, NULL);
		/* The first call's io_uring calls: the ring's setup and arm, and
		 * from the second thread on the teardown of the one before: a
		 * munmap for each of its 2 or 3 mmaps (one before the kernel
		 * mapped both rings at once), and the close. */
		setup = (int)(a.s1.sys_io_uring - a.s0.sys_io_uring);
		if (i == 0)
			first = setup;
		else if (a.s2.ring_active)
			ck_assert_msg(setup - first == 3 || setup - first == 4,
				      "thread %d: %d io_uring calls, the first thread %d", i, setup,
				      first);
		ck_assert_msg(syscalls(&a.s2) - syscalls(&a.s1) == (a.s2.ring_active ? 20u : 40u),
			      "thread %d: %llu syscalls for 20 idle dedup adds", i,
			      (unsigned long long)(syscalls(&a.s2) - syscalls(&a.s1)));
		assert_idle_settles(&a.s1, &a.s2, 20);
	}
	/* The opener's ring and the last thread's, not yet let go. */
	ck_assert_int_le(io_uring_fds() - before, 2);
	fsnw_close(w);
	ck_assert_int_eq(io_uring_fds(), before);
	tmpdir_remove(dir);
}
END_TEST


TEST_SUITE(dedup)
{
	Suite *s = suite_create("dedup");

	ADD_TEST(s, same_path_twice);
	ADD_TEST(s, hard_links);
	ADD_TEST(s, many_watchers_one_inode);
	ADD_TEST(s, no_event_older_than_watch);
	ADD_TEST(s, disjoint_masks_no_drain);
	ADD_TEST(s, idle_dedup_adds_one_syscall_each);
	ADD_TEST(s, buffered_records_older_than_add);
	ADD_TEST(s, other_threads_event_before_add);
	ADD_TEST(s, each_thread_its_ring);
	ADD_TEST(s, ring_leaves_sleepers_asleep);
	ADD_TEST(s, new_thread_trusts_no_dead_ring);
	ADD_TEST(s, exited_threads_give_rings_back);
	return s;
}
