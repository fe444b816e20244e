/* SPDX-License-Identifier: MIT */
/*
 * An unprivileged process: a forked child drops to nobody (setresuid, which
 * also drops every capability) and opens handles. AUTO must settle on
 * inotify and work; FANOTIFY must fail with -EPERM and leave nothing behind.
 *
 * The FANOTIFY suite runs as `--backend fanotify privilege_fanotify`, so
 * the shared main skips it (77) while fanotify cannot be opened even by
 * root (the backend is not there yet); it turns on when it lands.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hardening.h"
#include "test-common.h"

#define NOBODY 65534

static void drop_privileges(void)
{
	CHILD_CHECK(setgroups(0, NULL) == 0, "setgroups: %s", strerror(errno));
	CHILD_CHECK(setresgid(NOBODY, NOBODY, NOBODY) == 0, "setresgid: %s", strerror(errno));
	CHILD_CHECK(setresuid(NOBODY, NOBODY, NOBODY) == 0, "setresuid: %s", strerror(errno));
	CHILD_CHECK(geteuid() == NOBODY, "still uid %u", (unsigned)geteuid());
}

static int auto_child(void *arg)
{
	char tmpl[] = "/dev/shm/fsnw-unpriv-XXXXXX", p[PATH_MAX];
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_AUTO };
	struct fsnw_event ev;
	struct fsnw *w = NULL;
	int fds, ret, wid;
	size_t heap;
	FILE *f;

	(void)arg;
	drop_privileges();
	CHILD_CHECK(mkdtemp(tmpl) != NULL, "mkdtemp: %s", strerror(errno));
	fds = fd_count();
	heap = heap_in_use();
	for (int round = 0; round < 2; round++) {
		ret = fsnw_open(&w, &o);
		CHILD_CHECK(ret == 0, "AUTO, unprivileged: %s", strerror(-ret));
		CHILD_CHECK(fsnw_get_backend(w) == FSNW_BACKEND_INOTIFY, "AUTO picked backend %d",
			    fsnw_get_backend(w));
		wid = fsnw_add(w, tmpl, FSNW_CREATE, 0);
		CHILD_CHECK(wid > 0, "add: %s", strerror(-wid));
		snprintf(p, sizeof(p), "%s/x%d", tmpl, round);
		f = fopen(p, "w");
		CHILD_CHECK(f != NULL, "create: %s", strerror(errno));
		fclose(f);
		ret = fsnw_read(w, &ev, 1, 1000);
		CHILD_CHECK(ret == 1 && ev.wid == wid && (ev.mask & FSNW_CREATE), "read: %d", ret);
		fsnw_close(w);
		unlink(p);
		if (round == 0)
			heap = heap_in_use();
	}
	CHILD_CHECK(fd_count() == fds, "fds %d -> %d", fds, fd_count());
	CHILD_CHECK(heap_in_use() == heap, "heap %zu -> %zu", heap, heap_in_use());
	rmdir(tmpl);
	return 0;
}

START_TEST(auto_opens_inotify)
{
	ck_assert_int_eq(run_child(0, NULL, auto_child, NULL), 0);
}
END_TEST

static int fanotify_child(void *arg)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_FANOTIFY };
	struct fsnw *sentinel = (struct fsnw *)&o, *w = sentinel;
	int fds, ret;
	size_t heap;

	(void)arg;
	drop_privileges();
	fds = fd_count();
	/* Once to warm up what the process keeps, then the heap must hold. */
	ret = fsnw_open(&w, &o);
	heap = heap_in_use();
	ret = fsnw_open(&w, &o);
	CHILD_CHECK(ret == -EPERM, "FANOTIFY, unprivileged: %d (%s)", ret, strerror(-ret));
	CHILD_CHECK(w == sentinel, "out-parameter touched on failure");
	CHILD_CHECK(fd_count() == fds, "fds %d -> %d", fds, fd_count());
	CHILD_CHECK(heap_in_use() == heap, "heap %zu -> %zu", heap, heap_in_use());
	return 0;
}

START_TEST(fanotify_needs_privilege)
{
	ck_assert_int_eq(run_child(0, NULL, fanotify_child, NULL), 0);
}
END_TEST

TEST_SUITE(privilege)
{
	Suite *s = suite_create("privilege");

	ADD_TEST(s, auto_opens_inotify);
	return s;
}

TEST_SUITE(privilege_fanotify)
{
	Suite *s = suite_create("privilege_fanotify");

	ADD_TEST(s, fanotify_needs_privilege);
	return s;
}
