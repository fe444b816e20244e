/* SPDX-License-Identifier: MIT */
/*
 * The races that mark syscalls made without the handle's lock open: threads
 * adding and removing watches (single and batch) on a few inodes (one object
 * under several names, hard links) while files are deleted and made again
 * under them, so the kernel drops marks that adds are landing on. After
 * every phase the whole truth is checked:
 *
 * - no wid was handed out twice while alive, and a remove that said -ENOENT
 *   was of a wid whose FSNW_IGNORED had been read;
 * - logical_watches equals the wids the test holds;
 * - the kernel-watch table equals the marks the kernel lists for the group
 *   (/proc/self/fdinfo of its fd), and, parked ones aside, the distinct
 *   inodes the held wids name: no mark leaked, none dead in the table.
 *
 * Built with -Db_sanitize=thread this is part of the ThreadSanitizer suite.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test-common.h"

#define THREADS 4
#define OPS 1500
#define PHASES 3
#define MAX_WID 65536
#define HELD_MAX 64

/* f0, f1 and their hard links h0, h1 are never deleted; f2 and f3 are
 * deleted and made again; d0 is a directory. */
static const char *const names[] = { "f0", "f1", "f2", "f3", "h0", "h1", "d0" };
#define NNAMES (sizeof(names) / sizeof(names[0]))

enum wstate { W_FREE, W_HELD, W_REMOVED };

struct race {
	struct fsnw *w;
	const char *dir;
	atomic_uchar state[MAX_WID];   /* enum wstate */
	atomic_uchar ignored[MAX_WID]; /* FSNW_IGNORED was read */
	atomic_uchar path_of[MAX_WID]; /* index in names */
	atomic_uchar gone_remove[MAX_WID]; /* fsnw_remove said -ENOENT */
	atomic_int errors;
	char err[256];
};

static void race_fail(struct race *r, const char *what, int a, int b)
{
	if (atomic_fetch_add(&r->errors, 1) == 0)
		snprintf(r->err, sizeof(r->err), "%s (%d, %d)", what, a, b);
}

static void claim(struct race *r, int wid, int name)
{
	unsigned char free_ = W_FREE;

	if (wid <= 0 || wid >= MAX_WID) {
		race_fail(r, "bad wid", wid, name);
		return;
	}
	atomic_store(&r->path_of[wid], (unsigned char)name);
	if (!atomic_compare_exchange_strong(&r->state[wid], &free_, W_HELD))
		race_fail(r, "wid handed out twice", wid, free_);
}

static void removed(struct race *r, int wid, int ret)
{
	atomic_store(&r->state[wid], W_REMOVED);
	if (ret == -ENOENT)
		atomic_store(&r->gone_remove[wid], 1);
	else if (ret != 0)
		race_fail(r, "remove", wid, ret);
}

static int read_some(struct race *r, int timeout)
{
	struct fsnw_event ev[64];
	int n = fsnw_read(r->w, ev, 64, timeout);

	if (n < 0 && n != -EAGAIN)
		race_fail(r, "read", n, 0);
	for (int i = 0; i < n; i++) {
		if (ev[i].mask & FSNW_OVERFLOW)
			race_fail(r, "overflow", ev[i].wid, 0);
		else if (ev[i].mask & FSNW_IGNORED)
			atomic_store(&r->ignored[ev[i].wid], 1);
	}
	return n;
}

static void recreate(struct race *r, const char *name)
{
	char p[PATH_MAX];

	unlink(pjoin(p, r->dir, name));
	touch(r->dir, name);
}

static int add_one(struct race *r, unsigned *seed, int *name)
{
	static const uint32_t masks[] = { FSNW_ATTRIB, FSNW_MODIFY | FSNW_ATTRIB,
					  FSNW_CLOSE_WRITE, FSNW_ALL_EVENTS };
	char p[PATH_MAX];

	*name = (int)(rand_r(seed) % NNAMES);
	return fsnw_add(r->w, pjoin(p, r->dir, names[*name]), masks[rand_r(seed) % 4], 0);
}

static void *worker(void *arg)
{
	struct race *r = *(struct race **)arg;
	unsigned seed = (unsigned)(uintptr_t)arg;
	int held[HELD_MAX], nheld = 0;

	for (int op = 0; op < OPS; op++) {
		unsigned pick = rand_r(&seed) % 100;
		int name, wid;

		if (pick < 35 && nheld < HELD_MAX) {
			wid = add_one(r, &seed, &name);
			if (wid > 0) {
				claim(r, wid, name);
				held[nheld++] = wid;
			} else if (wid != -ENOENT) {
				race_fail(r, "add", wid, name);
			}
		} else if (pick < 60 && nheld) {
			int k = (int)(rand_r(&seed) % (unsigned)nheld);

			wid = held[k];
			held[k] = held[--nheld];
			removed(r, wid, fsnw_remove(r->w, wid));
		} else if (pick < 70 && nheld + 3 <= HELD_MAX) {
			char p[3][PATH_MAX];
			struct fsnw_batch_item it[3];
			int idx[3];
			uint32_t flags = rand_r(&seed) % 2 ? FSNW_BATCH_ATOMIC : 0;

			for (int i = 0; i < 3; i++) {
				idx[i] = (int)(rand_r(&seed) % NNAMES);
				it[i] = (struct fsnw_batch_item){ pjoin(p[i], r->dir, names[idx[i]]),
								  FSNW_ATTRIB, 0, 0 };
			}
			(void)fsnw_add_batch(r->w, it, 3, flags);
			for (int i = 0; i < 3; i++) {
				if (it[i].result > 0) {
					claim(r, it[i].result, idx[i]);
					held[nheld++] = it[i].result;
				} else if (it[i].result != -ENOENT && it[i].result != -ECANCELED) {
					race_fail(r, "batch add", it[i].result, idx[i]);
				}
			}
		} else if (pick < 80 && nheld >= 2) {
			int wids[2], res[2];

			for (int i = 0; i < 2; i++) {
				int k = (int)(rand_r(&seed) % (unsigned)nheld);

				wids[i] = held[k];
				held[k] = held[--nheld];
			}
			(void)fsnw_remove_batch(r->w, wids, 2, res);
			for (int i = 0; i < 2; i++)
				removed(r, wids[i], res[i]);
		} else if (pick < 88) {
			recreate(r, names[2 + rand_r(&seed) % 2]);
		} else {
			(void)read_some(r, 0);
		}
	}
	/* What the thread still holds stays for the checks. */
	return NULL;
}

/* The group fd of the one handle open in this process, found by its link. */
static int group_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int fd = -1;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		char p[300], link[64] = "";

		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		if (readlink(p, link, sizeof(link) - 1) > 0 &&
		    (!strcmp(link, "anon_inode:inotify") || !strcmp(link, "anon_inode:[fanotify]")))
			fd = atoi(e->d_name);
	}
	closedir(d);
	ck_assert_int_ge(fd, 0);
	return fd;
}

/* Marks on objects the kernel lists for the group (filesystem marks not). */
static int kernel_marks(void)
{
	char p[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", group_fd());
	f = fopen(p, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "inotify wd:", 11) || !strncmp(line, "fanotify ino:", 13))
			n++;
	fclose(f);
	return n;
}

static void check(struct race *r)
{
	ino_t inos[NNAMES];
	size_t ninos = 0;
	int held = 0;
	struct fsnw_stats st;

	ck_assert_msg(atomic_load(&r->errors) == 0, "%s", r->err);
	/* Everything the kernel has is read: every IGNORED owed has come. */
	for (int i = 0; i < 3; i++) {
		ck_assert_int_ge(fsnw_pump(r->w), 0);
		while (read_some(r, 0) > 0)
			;
	}
	for (int wid = 1; wid < MAX_WID; wid++) {
		if (atomic_load(&r->gone_remove[wid]))
			ck_assert_msg(atomic_load(&r->ignored[wid]),
				      "remove of wid %d said ENOENT with no IGNORED read", wid);
	}
	st = stats_of(r->w);
	for (int wid = 1; wid < MAX_WID; wid++) {
		char p[PATH_MAX];
		struct stat sb;
		size_t k;

		if (atomic_load(&r->state[wid]) != W_HELD || atomic_load(&r->ignored[wid]))
			continue;
		held++;
		ck_assert_int_eq(stat(pjoin(p, r->dir, names[atomic_load(&r->path_of[wid])]),
				      &sb), 0);
		for (k = 0; k < ninos && inos[k] != sb.st_ino; k++)
			;
		if (k == ninos)
			inos[ninos++] = sb.st_ino;
	}
	ck_assert_uint_eq(st.logical_watches, (uint64_t)held);
	ck_assert_uint_eq(st.kernel_watches, (uint64_t)kernel_marks());
	ck_assert_uint_eq(st.kernel_watches - st.parked_watches, ninos);
}

/* The race on a handle with an idle cache of `idle`: the handle's stats once
 * every worker stopped and every wid still held was removed. */
static struct fsnw_stats run(uint32_t idle)
{
	static struct race r;
	struct race *args[THREADS];
	pthread_t t[THREADS];
	char *dir = tmpdir_make();
	char a[PATH_MAX], b[PATH_MAX];
	struct fsnw_stats st;

	memset(&r, 0, sizeof(r));
	r.dir = dir;
	for (size_t i = 0; i < 4; i++)
		touch(dir, names[i]);
	ck_assert_int_eq(link(pjoin(a, dir, "f0"), pjoin(b, dir, "h0")), 0);
	ck_assert_int_eq(link(pjoin(a, dir, "f1"), pjoin(b, dir, "h1")), 0);
	make_dir(dir, "d0");
	r.w = test_open(FSNW_OPEN_NONBLOCK, FSNW_QUEUE_UNLIMITED, idle);
	for (int phase = 0; phase < PHASES; phase++) {
		for (int i = 0; i < THREADS; i++) {
			args[i] = &r;
			ck_assert_int_eq(pthread_create(&t[i], NULL, worker,
							(void *)&args[i]), 0);
		}
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		check(&r);
	}
	/* Every wid still held goes: only parked kernel watches stay. */
	for (int wid = 1; wid < MAX_WID; wid++)
		if (atomic_load(&r.state[wid]) == W_HELD)
			removed(&r, wid, fsnw_remove(r.w, wid));
	check(&r);
	st = stats_of(r.w);
	fsnw_close(r.w);
	tmpdir_remove(dir);
	return st;
}

/* Afterwards no wid is left, and only parked kernel watches (none without
 * an idle cache). */
START_TEST(race_add_remove_delete)
{
	struct fsnw_stats st = run(0);

	ck_assert_uint_eq(st.logical_watches, 0);
	ck_assert_uint_eq(st.kernel_watches, 0);
	ck_assert_uint_eq(st.parked_watches, 0);
}
END_TEST

START_TEST(race_with_idle_cache)
{
	struct fsnw_stats st = run(4);

	ck_assert_uint_eq(st.logical_watches, 0);
	ck_assert_uint_eq(st.kernel_watches, st.parked_watches);
	ck_assert_uint_le(st.parked_watches, 4);
}
END_TEST

TEST_SUITE(race)
{
	Suite *s = suite_create("race");

	ADD_TEST(s, race_add_remove_delete);
	ADD_TEST(s, race_with_idle_cache);
	return s;
}
