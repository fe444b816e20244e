/* SPDX-License-Identifier: MIT */
/* Instrumentation: exact counters, histograms, JSON, the size rule. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include "test-common.h"

START_TEST(scripted_counters)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_event ev[4];
	struct fsnw_stats st;
	int wid;

	touch(dir, "a");
	touch(dir, "b");
	wid = fsnw_add(w, dir, FSNW_MODIFY, 0);
	for (int i = 0; i < 5; i++) {
		write_bytes(dir, i % 2 ? "b" : "a", "x");
		/* fanotify would merge the unread writes to a file in the
		 * kernel: read each one (inotify counts its reads below). */
		if (test_backend == FSNW_BACKEND_FANOTIFY)
			pump(w);
	}
	ck_assert_int_eq(fsnw_pump(w), 2);
	st = stats_of(w);
	ck_assert_uint_eq(st.add_calls, 1);
	ck_assert_uint_eq(st.logical_watches, 1);
	ck_assert_uint_eq(st.kernel_watches, 1);
	ck_assert_uint_eq(st.events_read, 5);
	ck_assert_uint_eq(st.events_queued, 2);
	ck_assert_uint_eq(st.events_merged, 3);
	ck_assert_uint_eq(st.queue_depth, 2);
	ck_assert_uint_eq(st.queue_high_water, 2);

	ck_assert_int_eq(fsnw_read(w, ev, 1, 0), 1);
	ck_assert_uint_eq(ev[0].count, 3);
	ck_assert_int_eq(fsnw_remove(w, wid), 0);
	st = stats_of(w);
	ck_assert_uint_eq(st.events_delivered, 1);
	ck_assert_uint_eq(st.dropped_removed, 1);
	ck_assert_uint_eq(st.queue_depth, 0);
	ck_assert_uint_eq(st.remove_calls, 1);
	ck_assert_uint_eq(st.overflows_kernel + st.overflows_queue, 0);
	if (test_backend == FSNW_BACKEND_INOTIFY) {
		ck_assert_uint_eq(st.sys_inotify_init, 1);
		ck_assert_uint_eq(st.sys_inotify_add_watch, 1);
		ck_assert_uint_eq(st.sys_inotify_rm_watch, 1);
		/* pump: one short read; fsnw_read takes an event the queue
		 * holds, and does not read: its array is full without. */
		ck_assert_uint_eq(st.sys_read, 1);
		/* No fsnw_get_fd and no reader asleep: nobody could see the
		 * eventfd, so queued events cost it no syscall (test-wake). */
		ck_assert_uint_eq(st.sys_eventfd, 0);
		ck_assert_uint_eq(st.lat_kernel_mark.count, 1);
		ck_assert_uint_eq(st.lat_kernel_unmark.count, 1);
		ck_assert_uint_eq(st.lat_kernel_read.count, 1);
	}
	/* The total is every counter, the ring's included. */
	ck_assert_uint_eq(st.syscalls,
			  st.sys_inotify_init + st.sys_inotify_add_watch + st.sys_inotify_rm_watch +
				  st.sys_fanotify_init + st.sys_fanotify_mark +
				  st.sys_name_to_handle_at + st.sys_open_by_handle_at +
				  st.sys_read + st.sys_poll + st.sys_eventfd + st.sys_walk +
				  st.sys_other + st.sys_io_uring);
	ck_assert_uint_gt(st.syscalls, st.sys_other + st.sys_read);
	ck_assert_uint_eq(st.lat_add.count, 1);
	ck_assert_uint_eq(st.lat_remove.count, 1);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(queue_full_counters)
{
	struct fsnw *w = test_open(0, 2, 0);
	char *dir = tmpdir_make();
	struct fsnw_stats st;

	fsnw_add(w, dir, FSNW_CREATE, 0);
	touch(dir, "1");
	touch(dir, "2");
	touch(dir, "3");
	touch(dir, "4");
	ck_assert_int_eq(fsnw_pump(w), 3);
	st = stats_of(w);
	ck_assert_uint_eq(st.events_queued, 2);
	ck_assert_uint_eq(st.dropped_queue_full, 2);
	ck_assert_uint_eq(st.overflows_queue, 1);
	ck_assert_uint_eq(st.queue_high_water, 3);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(no_stats_keeps_counters)
{
	struct fsnw *w = test_open(FSNW_OPEN_NO_STATS, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_stats st;
	int wid;

	wid = fsnw_add(w, dir, FSNW_CREATE, 0);
	fsnw_remove(w, wid);
	st = stats_of(w);
	ck_assert_uint_eq(st.add_calls, 1);
	ck_assert_uint_eq(st.remove_calls, 1);
	ck_assert_uint_eq(st.lat_add.count, 0);
	ck_assert_uint_eq(st.lat_remove.count, 0);
	ck_assert_uint_eq(st.lat_kernel_mark.count, 0);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

START_TEST(quantiles)
{
	struct fsnw_histogram h;

	memset(&h, 0, sizeof(h));
	ck_assert_uint_eq(fsnw_histogram_quantile(NULL, 0.5), 0);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.5), 0);
	h.buckets[3] = 10;  /* 8..15 ns */
	h.buckets[10] = 90; /* 1024..2047 ns */
	h.count = 100;
	h.max_ns = 2000;
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.0), 15);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.10), 15);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.11), 2000); /* capped by max */
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.5), 2000);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 1.0), 2000);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 7.0), 2000);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, -1.0), 15);
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, NAN), 15);
	h.max_ns = 5000;
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.5), 2047);
	/* An upper bound: never below the true quantile of the samples. */
	memset(&h, 0, sizeof(h));
	h.buckets[0] = 1;
	h.count = 1;
	h.max_ns = 1;
	ck_assert_uint_eq(fsnw_histogram_quantile(&h, 0.99), 1);
}
END_TEST

/* A small validating JSON reader: returns the end of one value or NULL. */
static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\n' || *s == '\t' || *s == '\r')
		s++;
	return s;
}

static const char *json_value(const char *s, int depth);

static const char *json_string(const char *s)
{
	if (*s++ != '"')
		return NULL;
	while (*s && *s != '"') {
		if ((unsigned char)*s < 0x20)
			return NULL;
		if (*s == '\\')
			s++;
		if (*s)
			s++;
	}
	return *s == '"' ? s + 1 : NULL;
}

static const char *json_value(const char *s, int depth)
{
	if (depth > 32)
		return NULL;
	s = skip_ws(s);
	if (*s == '{' || *s == '[') {
		char close = *s == '{' ? '}' : ']';

		s = skip_ws(s + 1);
		if (*s == close)
			return s + 1;
		for (;;) {
			if (close == '}') {
				s = json_string(skip_ws(s));
				if (!s)
					return NULL;
				s = skip_ws(s);
				if (*s++ != ':')
					return NULL;
			}
			s = json_value(s, depth + 1);
			if (!s)
				return NULL;
			s = skip_ws(s);
			if (*s == ',') {
				s++;
				continue;
			}
			return *s == close ? s + 1 : NULL;
		}
	}
	if (*s == '"')
		return json_string(s);
	if (!strncmp(s, "true", 4) || !strncmp(s, "null", 4))
		return s + 4;
	if (!strncmp(s, "false", 5))
		return s + 5;
	if (*s == '-' || isdigit((unsigned char)*s)) {
		char *end;

		strtod(s, &end);
		return end == s ? NULL : end;
	}
	return NULL;
}

static uint64_t json_u64(const char *json, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	ck_assert_msg(p != NULL, "key %s missing", key);
	return strtoull(p + strlen(pat), NULL, 10);
}

START_TEST(json_matches_struct)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpdir_make();
	struct fsnw_stats st;
	char *buf, small[32], path[PATH_MAX];
	int need, wid;
	const char *end;
	FILE *f;

	wid = fsnw_add(w, dir, FSNW_CREATE, 0);
	touch(dir, "x");
	fsnw_pump(w);
	st = stats_of(w);
	need = fsnw_stats_json(w, NULL, 0);
	ck_assert_int_gt(need, 0);
	buf = malloc((size_t)need + 1);
	ck_assert_int_eq(fsnw_stats_json(w, buf, (size_t)need + 1), need);
	ck_assert_uint_eq(strlen(buf), (size_t)need);
	/* snprintf rules: a short buffer gets the same prefix, NUL-terminated. */
	ck_assert_int_eq(fsnw_stats_json(w, small, sizeof(small)), need);
	ck_assert_uint_eq(strlen(small), sizeof(small) - 1);
	ck_assert(!strncmp(small, buf, sizeof(small) - 1));

	end = json_value(buf, 0);
	ck_assert_msg(end && *skip_ws(end) == '\0', "invalid JSON: %s", buf);
	ck_assert_ptr_nonnull(strstr(buf, test_backend == FSNW_BACKEND_FANOTIFY ?
						  "\"backend\":\"fanotify\"" :
						  "\"backend\":\"inotify\""));
	ck_assert_uint_eq(json_u64(buf, "add_calls"), st.add_calls);
	ck_assert_uint_eq(json_u64(buf, "logical_watches"), st.logical_watches);
	ck_assert_uint_eq(json_u64(buf, "kernel_watches"), st.kernel_watches);
	ck_assert_uint_eq(json_u64(buf, "events_read"), st.events_read);
	ck_assert_uint_eq(json_u64(buf, "queue_depth"), st.queue_depth);
	ck_assert_uint_eq(json_u64(buf, "sys_read"), st.sys_read);
	ck_assert_uint_eq(json_u64(buf, "syscalls"), st.syscalls);
	ck_assert_uint_eq(json_u64(strstr(buf, "\"lat_add\""), "count"), st.lat_add.count);

	/* And a real parser agrees, when there is one. */
	snprintf(path, sizeof(path), "%s/stats.json", dir);
	f = fopen(path, "w");
	fputs(buf, f);
	fclose(f);
	if (access("/usr/bin/python3", X_OK) == 0) {
		char cmd[PATH_MAX + 256];

		snprintf(cmd, sizeof(cmd),
			 "/usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); "
			 "sys.exit(0 if d[\"add_calls\"]==%llu and d[\"lat_add\"][\"count\"]==%llu "
			 "and isinstance(d[\"lat_kernel_read\"][\"buckets\"], list) else 1)' %s",
			 (unsigned long long)st.add_calls, (unsigned long long)st.lat_add.count,
			 path);
		ck_assert_int_eq(system(cmd), 0);
	}
	free(buf);
	fsnw_remove(w, wid);
	fsnw_close(w);
	tmpdir_remove(dir);
}
END_TEST

/*
 * A reader that keeps up, as a daemon reads: each fsnw_read sleeps in
 * poll(2) and reads what woke it. That is a poll and a read a wakeup, as
 * raw inotify's: the read before the sleep would find the kernel queue
 * empty again, and is not made; the mount table of the tree is watched by
 * that poll, and not looked at otherwise.
 */
START_TEST(live_read_syscalls)
{
	struct fsnw *w = test_open(0, 0, 0);
	char *dir = tmpfs_private();
	struct fsnw_event ev[8];
	struct fsnw_stats a, b;
	char name[16];

	ck_assert_int_gt(fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE), 0);
	touch(dir, "first");
	ck_assert_int_eq(fsnw_read(w, ev, 8, -1), 1);
	a = stats_of(w);
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		touch(dir, name);
		ck_assert_int_eq(fsnw_read(w, ev, 8, -1), 1);
		ck_assert_str_eq(ev[0].name, name);
	}
	b = stats_of(w);
	ck_assert_uint_eq(b.sys_poll - a.sys_poll, 10);
	ck_assert_uint_eq(b.sys_read - a.sys_read, 10);
	ck_assert_uint_eq(b.syscalls - a.syscalls, 20);
	/* A read that does not sleep reads, whatever the last one found. */
	ck_assert_int_eq(fsnw_read(w, ev, 8, 0), 0);
	a = stats_of(w);
	ck_assert_uint_eq(a.sys_read - b.sys_read, 1);
	ck_assert_uint_eq(a.sys_poll, b.sys_poll);
	fsnw_close(w);
	tmpfs_private_remove(dir);
}
END_TEST

/* A read of up to 8 events with a timeout: how many, and FSNW_OVERFLOWs among them. */
static int read_overflows(struct fsnw *w, int timeout_ms, int *overflows)
{
	struct fsnw_event ev[8];
	int n = fsnw_read(w, ev, 8, timeout_ms);

	for (int i = 0; i < n; i++)
		*overflows += (ev[i].mask & FSNW_OVERFLOW) != 0;
	return n;
}

static void mount_tmpfs(const char *dir, const char *name)
{
	char p[PATH_MAX];

	ck_assert_int_eq(mount("fsnw-test", pjoin(p, dir, name), "tmpfs", 0, "size=1m"), 0);
}

/*
 * The mount table is read when it signals: a mount inside a tree wakes a
 * reader asleep in fsnw_read (its poll has the table) and is reported
 * (FSNW_OVERFLOW); a read with a timeout of 0 does not sleep, and looks at
 * the table itself; a caller's poll of fsnw_get_fd wakes for it and takes
 * the signal, and the read that follows looks; without a change, a
 * reader's sleep costs no look.
 */
START_TEST(mounts_on_readiness)
{
	struct pollfd pfd = { .events = POLLIN };
	struct fsnw *w;
	struct fsnw_stats a, b;
	char *dir, p[PATH_MAX];
	int wid, overflows = 0;
	struct ev *evs;

	if (geteuid() != 0)
		return;
	dir = tmpfs_private(); /* our own mount namespace, where we may mount */
	w = test_open(0, 0, 0);
	make_dir(dir, "m1");
	make_dir(dir, "m2");
	make_dir(dir, "m3");
	wid = fsnw_add(w, dir, FSNW_CREATE, FSNW_WATCH_TREE);
	ck_assert_int_gt(wid, 0);
	collect_now(w, &evs, 64);
	evs_free(evs);
	a = stats_of(w);
	/* An absence: nothing comes, and the sleep is all the read costs. */
	ck_assert_int_eq(read_overflows(w, 20, &overflows), 0);
	b = stats_of(w);
	ck_assert_uint_eq(b.sys_poll - a.sys_poll, 1);
	ck_assert_uint_eq(b.syscalls - a.syscalls, 1);
	mount_tmpfs(dir, "m1");
	while (!overflows)
		ck_assert_int_gt(read_overflows(w, SYNC_TIMEOUT_MS, &overflows), 0);
	ck_assert_uint_eq(stats_of(w).overflows_mount, 1);
	mount_tmpfs(dir, "m2");
	for (int i = 0; i < 1000 && overflows < 2; i++)
		ck_assert_int_ge(read_overflows(w, 0, &overflows), 0);
	ck_assert_int_eq(overflows, 2);
	ck_assert_uint_eq(stats_of(w).overflows_mount, 2);
	pfd.fd = fsnw_get_fd(w);
	ck_assert_int_ge(pfd.fd, 0);
	mount_tmpfs(dir, "m3");
	/* This poll takes the table's signal: the read that may sleep next
	 * must look at the table itself. */
	ck_assert_int_eq(poll(&pfd, 1, SYNC_TIMEOUT_MS), 1);
	while (overflows < 3)
		ck_assert_int_gt(read_overflows(w, SYNC_TIMEOUT_MS, &overflows), 0);
	ck_assert_uint_eq(stats_of(w).overflows_mount, 3);
	fsnw_close(w);
	umount2(pjoin(p, dir, "m1"), MNT_DETACH);
	umount2(pjoin(p, dir, "m2"), MNT_DETACH);
	umount2(pjoin(p, dir, "m3"), MNT_DETACH);
	tmpfs_private_remove(dir);
}
END_TEST

/* An older caller's smaller struct is filled only up to its size. */
START_TEST(size_rule)
{
	struct fsnw *w = test_open(0, 0, 0);
	union {
		struct fsnw_stats st;
		unsigned char bytes[sizeof(struct fsnw_stats)];
	} u;
	size_t old = offsetof(struct fsnw_stats, kernel_watches);

	fsnw_add(w, "/", FSNW_CREATE, 0);
	memset(&u, 0xaa, sizeof(u));
	u.st.size = (uint32_t)old;
	ck_assert_int_eq(fsnw_get_stats(w, &u.st), 0);
	ck_assert_uint_eq(u.st.size, old);
	ck_assert_uint_eq(u.st.logical_watches, 1);
	for (size_t i = old; i < sizeof(u); i++)
		ck_assert_uint_eq(u.bytes[i], 0xaa);
	/* A newer caller's larger struct: we fill what we know, and say so. */
	u.st.size = sizeof(u.st) + 64;
	ck_assert_int_eq(fsnw_get_stats(w, &u.st), 0);
	ck_assert_uint_eq(u.st.kernel_watches, 1);
	ck_assert_uint_eq(u.st.size, sizeof(u.st));
	fsnw_close(w);
}
END_TEST

TEST_SUITE(stats)
{
	Suite *s = suite_create("stats");

	ADD_TEST(s, scripted_counters);
	ADD_TEST(s, live_read_syscalls);
	ADD_TEST(s, mounts_on_readiness);
	ADD_TEST(s, queue_full_counters);
	ADD_TEST(s, no_stats_keeps_counters);
	ADD_TEST(s, quantiles);
	ADD_TEST(s, json_matches_struct);
	ADD_TEST(s, size_rule);
	return s;
}
