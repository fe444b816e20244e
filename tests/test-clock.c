/* SPDX-License-Identifier: MIT */
/*
 * The clock of the latency histograms (stats.c): the TSC's rate check, and
 * what the histograms record against the wall time around the calls.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stats.h"
#include "test-common.h"

/* The TSC's rate check: a window is adopted when the one before agrees. */
START_TEST(clock_windows)
{
	const uint64_t half = 1ULL << 31, one = 1ULL << 32; /* 0.5 and 1 ns a tick */
	struct stats_clock c = { .tsc = true, .mult = half, .win_tsc = 1000, .win_ns = 5000,
				 .win_mult = half };

	/* The same rate: kept. */
	stats_clock_window(&c, 1000 + 2000000000ULL, 5000 + 1000000000ULL);
	ck_assert_uint_eq(c.mult, half);
	ck_assert_uint_eq(c.win_mult, half);
	/* One window at another rate (a jump, or a new host): not adopted... */
	stats_clock_window(&c, c.win_tsc + 1000000000ULL, c.win_ns + 1000000000ULL);
	ck_assert_uint_eq(c.mult, half);
	ck_assert_uint_eq(c.win_mult, one);
	/* ...until the next window agrees with it. */
	stats_clock_window(&c, c.win_tsc + 500000000ULL, c.win_ns + 500000000ULL);
	ck_assert_uint_eq(c.mult, one);
	/* The TSC went back: a new window, nothing measured. */
	stats_clock_window(&c, c.win_tsc - 5, c.win_ns + 1000);
	ck_assert_uint_eq(c.mult, one);
	ck_assert_uint_eq(c.win_mult, one);
	/* A ratio no TSC has (a billion ns in one tick) is refused, and the
	 * window after it is not compared with it: two good windows again. */
	stats_clock_window(&c, c.win_tsc + 1, c.win_ns + 1000000000ULL);
	ck_assert_uint_eq(c.mult, one);
	ck_assert_uint_eq(c.win_mult, 0);
	stats_clock_window(&c, c.win_tsc + 4000000000ULL, c.win_ns + 1000000000ULL);
	ck_assert_uint_eq(c.mult, one);
	stats_clock_window(&c, c.win_tsc + 4000000000ULL, c.win_ns + 1000000000ULL);
	ck_assert_uint_eq(c.mult, 1ULL << 30);
}
END_TEST

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * What the histograms recorded of 2000 adds and removes lies inside the
 * wall time around them, and covers a good part of it (the kernel calls):
 * a ratio too high by more than 5% would show, and one too low by a
 * factor of 50. With the TSC (where this
 * machine allows it), with CLOCK_MONOTONIC, and with the TSC's rate
 * checked at every timed operation instead of once a second.
 */
START_TEST(latencies_inside_wall_time)
{
	static const char *const clocks[] = { NULL, "monotonic", "tsc-checked" };
	char *dir = tmpdir_make();
	char path[PATH_MAX];

	touch(dir, "f");
	snprintf(path, sizeof(path), "%s/f", dir);
	for (int k = 0; k < 3; k++) {
		struct fsnw *w;
		struct fsnw_stats st;
		uint64_t t0, wall, timed;

		if (k == 1)
			setenv("FSNW_CLOCK", clocks[k], 1);
		else
			unsetenv("FSNW_CLOCK");
		w = test_open(0, 0, 0);
		if (k == 2)
			w->clock.win_ticks = 0;
		t0 = now_ns();
		for (int i = 0; i < 2000; i++)
			ck_assert_int_eq(fsnw_remove(w, fsnw_add(w, path, FSNW_ATTRIB, 0)), 0);
		wall = now_ns() - t0;
		st = stats_of(w);
		/* Disjoint parts of the calls: the add until its mark call
		 * returned, the remove, its unmark call. */
		timed = st.lat_add.sum_ns + st.lat_remove.sum_ns + st.lat_kernel_unmark.sum_ns;
		fprintf(stderr, "latencies_inside_wall_time: %s clock%s: %llu of %llu ns timed\n",
			st.timing_tsc ? "TSC" : "monotonic", k == 2 ? ", checked each time" : "",
			(unsigned long long)timed, (unsigned long long)wall);
		ck_assert_uint_eq(st.lat_add.count, 2000);
		ck_assert_uint_eq(st.lat_remove.count, 2000);
		if (k == 1)
			ck_assert_uint_eq(st.timing_tsc, 0);
		ck_assert_uint_le(timed, wall + wall / 20);
		ck_assert_uint_ge(timed, wall / 50);
		fsnw_close(w);
	}
	unsetenv("FSNW_CLOCK");
	tmpdir_remove(dir);
}
END_TEST

/*
 * An unmark is timed from the clock read that ended its remove's timing,
 * never from one of an earlier call: a oneshot's unmark, flushed by the
 * read that fired it after a non-last remove and a pause, is timed within
 * that read's wall time. (The pause is the gap a stale tick would count.)
 */
START_TEST(unmark_timed_within_its_call)
{
	char *dir = tmpdir_make();
	struct fsnw_event ev[8];
	char f[PATH_MAX], g[PATH_MAX];
	struct fsnw_stats st;
	struct fsnw *w = test_open(0, 0, 0);
	uint64_t t0, wall, timed;
	int n = 0, one, two;

	touch(dir, "f");
	touch(dir, "g");
	snprintf(f, sizeof(f), "%s/f", dir);
	snprintf(g, sizeof(g), "%s/g", dir);
	ck_assert_int_gt(fsnw_add(w, g, FSNW_ATTRIB, FSNW_WATCH_ONESHOT), 0);
	one = fsnw_add(w, f, FSNW_ATTRIB, 0);
	two = fsnw_add(w, f, FSNW_ATTRIB, 0);
	ck_assert_int_gt(one, 0);
	ck_assert_int_eq(fsnw_remove(w, two), 0); /* not the last: no unmark */
	usleep(20000);
	ck_assert_int_eq(chmod(g, 0600), 0);
	t0 = now_ns();
	while (n == 0)
		n = fsnw_read(w, ev, 8, 1000);
	wall = now_ns() - t0;
	ck_assert_int_gt(n, 0);
	st = stats_of(w);
	ck_assert_uint_eq(st.lat_kernel_unmark.count, 1);
	ck_assert_uint_le(st.lat_kernel_unmark.sum_ns, wall);
	/* A last remove's unmark, timed from the remove's end: the remove
	 * and its unmark are disjoint parts of the call. */
	timed = st.lat_remove.sum_ns + st.lat_kernel_unmark.sum_ns;
	t0 = now_ns();
	ck_assert_int_eq(fsnw_remove(w, one), 0);
	wall = now_ns() - t0;
	st = stats_of(w);
	ck_assert_uint_eq(st.lat_kernel_unmark.count, 2);
	ck_assert_uint_eq(st.lat_remove.count, 2);
	ck_assert_uint_le(st.lat_remove.sum_ns + st.lat_kernel_unmark.sum_ns - timed, wall);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

TEST_SUITE(timing_clock)
{
	Suite *s = suite_create("timing_clock");

	ADD_TEST(s, clock_windows);
	ADD_TEST(s, latencies_inside_wall_time);
	ADD_TEST(s, unmark_timed_within_its_call);
	return s;
}
