/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test-common.h"

struct fsnw *test_open(uint32_t flags, uint32_t capacity, uint32_t idle)
{
	struct fsnw_options o = {
		.size = sizeof(o),
		.backend = test_backend,
		.flags = flags,
		.queue_capacity = capacity,
		.idle_watches = idle,
	};
	struct fsnw *w = NULL;
	int ret = fsnw_open(&w, &o);

	ck_assert_msg(ret == 0, "fsnw_open: %s", strerror(-ret));
	return w;
}

/*
 * Scratch directories are named after the runner, the process that runs
 * the suites: /dev/shm/fsnw-test-PID-XXXXXX. A test that fails, times out
 * or crashes in the child Check forks for it, or in a child of its own,
 * leaves its directories behind; the runner removes every one with its
 * name when it exits (tmpdir_sweep).
 */
static pid_t runner;
static const char *const scratch_dirs[] = { "/dev/shm", "/tmp" };

char *tmpdir_make(void)
{
	char tmpl[PATH_MAX];
	char *d = NULL;

	for (size_t i = 0; i < sizeof(scratch_dirs) / sizeof(scratch_dirs[0]) && !d; i++) {
		snprintf(tmpl, sizeof(tmpl), "%s/fsnw-test-%ld-XXXXXX", scratch_dirs[i],
			 (long)(runner ? runner : getpid()));
		d = mkdtemp(tmpl);
	}
	ck_assert_msg(d != NULL, "mkdtemp: %s", strerror(errno));
	d = strdup(d);
	ck_assert_ptr_nonnull(d);
	return d;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP || flag == FTW_D)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

void tmpdir_remove(char *dir)
{
	if (!dir)
		return;
	nftw(dir, rm_one, 32, FTW_DEPTH | FTW_PHYS);
	free(dir);
}

/* At the runner's exit: what its tests left, unmounted and removed. */
static void tmpdir_sweep(void)
{
	char prefix[64];
	size_t plen;

	/* A test's child that calls exit() runs this too: not its to sweep. */
	if (getpid() != runner)
		return;
	plen = (size_t)snprintf(prefix, sizeof(prefix), "fsnw-test-%ld-", (long)runner);
	for (size_t i = 0; i < sizeof(scratch_dirs) / sizeof(scratch_dirs[0]); i++) {
		DIR *d = opendir(scratch_dirs[i]);
		struct dirent *de;

		if (!d)
			continue;
		while ((de = readdir(d)) != NULL) {
			char p[PATH_MAX];

			if (strncmp(de->d_name, prefix, plen))
				continue;
			snprintf(p, sizeof(p), "%s/%s", scratch_dirs[i], de->d_name);
			/* A private tmpfs, when the runner made it itself (CK_FORK=no). */
			(void)umount2(p, MNT_DETACH);
			nftw(p, rm_one, 32, FTW_DEPTH | FTW_PHYS);
		}
		closedir(d);
	}
}

/*
 * The runner's /dev/shm is a tmpfs of its own, in a mount namespace of its
 * own, which the tests it forks inherit: a fanotify tree's filesystem mark
 * hears this runner's files alone, and the mount table that trees follow
 * changes with its own mounts alone, so runners in parallel do not hear
 * each other. Without root, the host's /dev/shm, which a user without
 * root cannot mark as a whole either.
 */
static void scratch_isolate(void)
{
	if (geteuid() != 0)
		return;
	/* Source and type are ignored for a propagation change (valgrind
	 * objects to NULL). */
	if (unshare(CLONE_NEWNS) < 0 ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("fsnw-scratch", scratch_dirs[0], "tmpfs", 0, "mode=1777") < 0)
		fprintf(stderr, "scratch directories on the host's %s: %s\n", scratch_dirs[0],
			strerror(errno));
}

void tmpdir_init(void)
{
	runner = getpid();
	scratch_isolate();
	if (atexit(tmpdir_sweep) != 0)
		fprintf(stderr, "atexit failed: scratch directories of failed tests stay\n");
}

char *tmpfs_private(void)
{
	char *dir = tmpdir_make();

	/* Source and type are ignored for a propagation change (and NULL
	 * would do, but valgrind objects). */
	if (unshare(CLONE_NEWNS) == 0 &&
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) == 0 &&
	    mount("fsnw-test", dir, "tmpfs", 0, "size=64m") == 0)
		return dir;
	fprintf(stderr, "no private tmpfs (%s): using %s\n", strerror(errno), dir);
	return dir;
}

void tmpfs_private_remove(char *dir)
{
	char copy[PATH_MAX];

	snprintf(copy, sizeof(copy), "%s", dir);
	tmpdir_remove(dir);
	umount2(copy, MNT_DETACH);
	rmdir(copy);
}

const char *pjoin(char *buf, const char *dir, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", dir, name);
	return buf;
}

void touch(const char *dir, const char *name)
{
	char p[PATH_MAX];
	int fd = open(pjoin(p, dir, name), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "create %s: %s", p, strerror(errno));
	close(fd);
}

void write_bytes(const char *dir, const char *name, const char *s)
{
	char p[PATH_MAX];
	int fd = open(pjoin(p, dir, name), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	ck_assert_msg(fd >= 0, "open %s: %s", p, strerror(errno));
	ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	close(fd);
}

void make_dir(const char *dir, const char *name)
{
	char p[PATH_MAX];

	ck_assert_msg(mkdir(pjoin(p, dir, name), 0755) == 0, "mkdir %s: %s", p, strerror(errno));
}

void make_dirs(const char *root, const char *rel)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	ck_assert_msg(mkdir(p, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", p, strerror(errno));
}

/* The events of one collect, copied out of the library's. */
struct evbuf {
	struct ev *evs;
	int n, max;
	bool strict; /* more than max fail the test (else they are not read) */
};

static void evbuf_init(struct evbuf *b, int max, bool strict)
{
	b->evs = calloc((size_t)(max > 0 ? max : 1), sizeof(*b->evs));
	ck_assert_ptr_nonnull(b->evs);
	b->n = 0;
	b->max = max;
	b->strict = strict;
}

static bool sentinel_name(const char *name)
{
	return name && !strncmp(name, SENTINEL_PREFIX, strlen(SENTINEL_PREFIX));
}

bool is_sentinel(const struct fsnw_event *e)
{
	return sentinel_name(e->name);
}

static void evbuf_add(struct evbuf *b, const struct fsnw_event *fe)
{
	struct ev *e;

	if (is_sentinel(fe))
		return;
	if (b->n == b->max)
		dump_evs(b->evs, b->n);
	ck_assert_msg(b->n < b->max, "more than the %d events the test has room for", b->max);
	e = &b->evs[b->n++];
	e->wid = fe->wid;
	e->mask = fe->mask;
	e->cookie = fe->cookie;
	e->count = fe->count;
	if (fe->path)
		snprintf(e->path, sizeof(e->path), "%s", fe->path);
	e->has_name = fe->name != NULL;
	if (fe->name)
		snprintf(e->name, sizeof(e->name), "%s", fe->name);
}

/* How many events the next read may return: all a strict buffer reads, to
 * find the sentinel (or fail on too many); what is left of a lax one. */
static size_t evbuf_room(const struct evbuf *b, size_t cap)
{
	size_t left = (size_t)(b->max - b->n);

	return b->strict || left > cap ? cap : left;
}

/* One read into b; returns what fsnw_read did, -EAGAIN (a handle opened
 * FSNW_OPEN_NONBLOCK with nothing ready) as 0. */
static int evbuf_read(struct evbuf *b, struct fsnw *w, int timeout_ms, const char *sentinel,
		      bool *seen)
{
	struct fsnw_event buf[64];
	int got = fsnw_read(w, buf, evbuf_room(b, 64), timeout_ms);

	if (got == -EAGAIN)
		return 0;
	ck_assert_msg(got >= 0, "fsnw_read: %s", strerror(-got));
	for (int i = 0; i < got; i++) {
		if (sentinel && (buf[i].mask & FSNW_CREATE) && buf[i].name &&
		    !strcmp(buf[i].name, sentinel))
			*seen = true;
		evbuf_add(b, &buf[i]);
	}
	return got;
}

static void evbuf_drain(struct evbuf *b, struct fsnw *w)
{
	while ((b->strict || b->n < b->max) && evbuf_read(b, w, 0, NULL, NULL) > 0)
		;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int collect_sync(struct fsnw *w, struct ev **out, int max, const char *dir)
{
	static unsigned serial;
	char name[64], p[PATH_MAX];
	uint64_t deadline = now_ms() + SYNC_TIMEOUT_MS;
	struct evbuf b;
	bool seen = false;

	snprintf(name, sizeof(name), SENTINEL_PREFIX "%ld-%u", (long)getpid(), ++serial);
	ck_assert_msg(mknod(pjoin(p, dir, name), S_IFREG | 0644, 0) == 0, "sentinel %s: %s", p,
		      strerror(errno));
	evbuf_init(&b, max, true);
	while (!seen) {
		uint64_t now = now_ms();

		if (now >= deadline)
			dump_evs(b.evs, b.n);
		ck_assert_msg(now < deadline, "no sentinel event from %s in %d ms", p,
			      SYNC_TIMEOUT_MS);
		/* With nothing to read, a handle opened FSNW_OPEN_NONBLOCK
		 * returns at once: a millisecond before it tries again. */
		if (evbuf_read(&b, w, (int)(deadline - now), name, &seen) == 0 && !seen)
			(void)poll(NULL, 0, 1);
	}
	evbuf_drain(&b, w);
	*out = b.evs;
	return b.n;
}

int collect_now(struct fsnw *w, struct ev **out, int max)
{
	struct evbuf b;

	evbuf_init(&b, max, true);
	evbuf_drain(&b, w);
	*out = b.evs;
	return b.n;
}

int collect(struct fsnw *w, struct ev **out, int max, int quiet_ms)
{
	struct evbuf b;

	evbuf_init(&b, max, false);
	while (b.n < b.max && evbuf_read(&b, w, quiet_ms, NULL, NULL) > 0)
		;
	*out = b.evs;
	return b.n;
}

void evs_free(struct ev *evs)
{
	free(evs);
}

static bool matches(const struct ev *e, int wid, uint32_t mask, const char *name)
{
	if (wid >= 0 && e->wid != wid)
		return false;
	if ((e->mask & mask) != mask)
		return false;
	if (name && (!e->has_name || strcmp(e->name, name)))
		return false;
	return true;
}

int find_ev(const struct ev *evs, int n, int from, int wid, uint32_t mask, const char *name)
{
	for (int i = from; i < n; i++)
		if (matches(&evs[i], wid, mask, name))
			return i;
	return -1;
}

int kernel_queue_max(bool fanotify)
{
	FILE *f = fopen(fanotify ? "/proc/sys/fs/fanotify/max_queued_events" :
				   "/proc/sys/fs/inotify/max_queued_events", "r");
	int max = 16384;

	if (f) {
		ck_assert_int_eq(fscanf(f, "%d", &max), 1);
		fclose(f);
	}
	return max;
}

void modify_access(const char *path, int times)
{
	int fd = open(path, O_RDWR);
	char c;

	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < times; i++) {
		ck_assert_int_eq(pwrite(fd, "x", 1, 0), 1);
		ck_assert_int_eq(pread(fd, &c, 1, 0), 1);
	}
	close(fd);
}

int find_ev_at(const struct ev *evs, int n, int wid, uint32_t mask, const char *dir,
	       const char *name)
{
	for (int i = 0; i < n; i++) {
		if (evs[i].wid != wid || (evs[i].mask & mask) != mask || strcmp(evs[i].path, dir))
			continue;
		if (name ? evs[i].has_name && !strcmp(evs[i].name, name) : !evs[i].has_name)
			return i;
	}
	return -1;
}

int count_ev(const struct ev *evs, int n, int wid, uint32_t mask, const char *name)
{
	int c = 0;

	for (int i = 0; i < n; i++)
		c += matches(&evs[i], wid, mask, name);
	return c;
}

void dump_evs(const struct ev *evs, int n)
{
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  [%d] wid %d mask %#x cookie %u count %u path %s name %s\n", i,
			evs[i].wid, evs[i].mask, evs[i].cookie, evs[i].count, evs[i].path,
			evs[i].has_name ? evs[i].name : "(none)");
}

struct fsnw_stats stats_of(struct fsnw *w)
{
	struct fsnw_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	ck_assert_int_eq(fsnw_get_stats(w, &st), 0);
	return st;
}

void pump(struct fsnw *w)
{
	int ret = fsnw_pump(w);

	ck_assert_msg(ret >= 0, "fsnw_pump: %s", strerror(-ret));
}

static char thread_state(pid_t tid)
{
	char p[64], buf[512], *close_paren;
	FILE *f;
	size_t len;

	snprintf(p, sizeof(p), "/proc/self/task/%ld/stat", (long)tid);
	f = fopen(p, "r");
	ck_assert_msg(f != NULL, "%s: %s", p, strerror(errno));
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	/* "tid (comm) S ...": the name may hold anything, ')' included. */
	close_paren = strrchr(buf, ')');
	ck_assert_ptr_nonnull(close_paren);
	return close_paren[1] == ' ' ? close_paren[2] : '?';
}

void thread_wait_asleep(pid_t tid)
{
	uint64_t deadline = now_ms() + SYNC_TIMEOUT_MS;

	while (thread_state(tid) != 'S') {
		ck_assert_msg(now_ms() < deadline, "thread %ld not asleep in %d ms", (long)tid,
			      SYNC_TIMEOUT_MS);
		sched_yield();
	}
}

/* Open fds of this process whose /proc link is `kind` (all when NULL),
 * not counting the one the walk itself holds. */
static int fds_of(const char *kind)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0, self;

	ck_assert_ptr_nonnull(d);
	self = dirfd(d);
	while ((e = readdir(d))) {
		char p[300], link[64] = "";

		if (e->d_name[0] == '.' || atoi(e->d_name) == self)
			continue;
		snprintf(p, sizeof(p), "/proc/self/fd/%s", e->d_name);
		if (!kind || (readlink(p, link, sizeof(link) - 1) > 0 && !strcmp(link, kind)))
			n++;
	}
	closedir(d);
	return n;
}

int fd_count(void)
{
	return fds_of(NULL);
}

int io_uring_fds(void)
{
	return fds_of("anon_inode:[io_uring]");
}

/* ---- the view of a caller ---- */

static void ents_free(char **e, int n)
{
	for (int i = 0; i < n; i++)
		free(e[i]);
	free(e);
}

static void view_put(struct view *v, char type, const char *rel)
{
	char *e;

	for (int i = 0; i < v->n; i++)
		if (!strcmp(v->ents[i] + 2, rel)) {
			v->ents[i][0] = type;
			return;
		}
	if (v->n == v->cap) {
		v->cap = v->cap ? v->cap * 2 : 64;
		v->ents = realloc(v->ents, (size_t)v->cap * sizeof(*v->ents));
		ck_assert_ptr_nonnull(v->ents);
	}
	e = malloc(strlen(rel) + 3);
	ck_assert_ptr_nonnull(e);
	sprintf(e, "%c %s", type, rel);
	v->ents[v->n++] = e;
}

static bool rel_under(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(p, dir, n) && (p[n] == '\0' || p[n] == '/');
}

/* Take rel and what is below it out of the view; into *out if out. */
static void view_take(struct view *v, const char *rel, char ***out, int *nout)
{
	int k = 0;

	for (int i = 0; i < v->n; i++) {
		if (!rel_under(v->ents[i] + 2, rel)) {
			v->ents[k++] = v->ents[i];
			continue;
		}
		if (out) {
			*out = realloc(*out, (size_t)(*nout + 1) * sizeof(**out));
			ck_assert_ptr_nonnull(*out);
			(*out)[(*nout)++] = v->ents[i];
		} else {
			free(v->ents[i]);
		}
	}
	v->n = k;
}

/* List what the disk holds at rel (the root: "") into the view. */
static void view_scan(struct view *v, const char *rel)
{
	char path[2 * PATH_MAX + 2], sub[PATH_MAX + 256];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s%s", v->root, *rel ? "/" : "", rel);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || sentinel_name(e->d_name))
			continue;
		if (snprintf(sub, sizeof(sub), "%s%s%s", rel, *rel ? "/" : "", e->d_name) >=
			    (int)sizeof(sub) ||
		    snprintf(path, sizeof(path), "%s/%s", v->root, sub) >= (int)sizeof(path) ||
		    lstat(path, &st) < 0)
			continue;
		view_put(v, S_ISDIR(st.st_mode) ? 'd' : 'f', sub);
		if (S_ISDIR(st.st_mode))
			view_scan(v, sub);
	}
	closedir(d);
}

void view_init(struct view *v, const char *root)
{
	memset(v, 0, sizeof(*v));
	snprintf(v->root, sizeof(v->root), "%s", root);
	view_scan(v, "");
}

static void drop_moved(struct view *v)
{
	ents_free(v->moved, v->nmoved);
	v->moved = NULL;
	v->nmoved = 0;
}

static void view_rescan(struct view *v)
{
	v->rescans++;
	drop_moved(v);
	for (int i = 0; i < v->n; i++)
		free(v->ents[i]);
	v->n = 0;
	view_scan(v, "");
}

void view_apply(struct view *v, const struct ev *evs, int n)
{
	size_t rl = strlen(v->root);

	for (int i = 0; i < n; i++) {
		const struct ev *e = &evs[i];
		char rel[PATH_MAX + 256];
		char type = (e->mask & FSNW_ISDIR) ? 'd' : 'f';

		if (e->mask & FSNW_OVERFLOW) {
			view_rescan(v);
			continue;
		}
		if (!e->has_name || !(e->mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE)) ||
		    sentinel_name(e->name))
			continue;
		if (!(e->mask & FSNW_MOVED_TO) || e->cookie != v->cookie)
			drop_moved(v);
		if (strncmp(e->path, v->root, rl) || (e->path[rl] && e->path[rl] != '/')) {
			view_rescan(v); /* an event it cannot place */
			continue;
		}
		snprintf(rel, sizeof(rel), "%s%s%s", e->path[rl] ? e->path + rl + 1 : "",
			 e->path[rl] ? "/" : "", e->name);
		if (e->mask & FSNW_DELETE) {
			view_take(v, rel, NULL, NULL);
		} else if (e->mask & FSNW_MOVED_FROM) {
			view_take(v, rel, &v->moved, &v->nmoved);
			v->cookie = e->cookie;
			ck_assert_int_lt(snprintf(v->from, sizeof(v->from), "%s", rel),
					 (int)sizeof(v->from));
		} else if ((e->mask & FSNW_MOVED_TO) && v->moved && e->cookie == v->cookie) {
			view_take(v, rel, NULL, NULL);
			for (int k = 0; k < v->nmoved; k++) {
				char to[2 * PATH_MAX + 256];

				snprintf(to, sizeof(to), "%s%s", rel, v->moved[k] + 2 + strlen(v->from));
				view_put(v, v->moved[k][0], to);
			}
			drop_moved(v);
		} else {
			/* Created, or moved in: new, and a directory starts empty
			 * (what it holds comes as creates of its own). */
			view_take(v, rel, NULL, NULL);
			view_put(v, type, rel);
		}
	}
}

int view_diff(const struct view *v)
{
	struct view disk;
	int diffs = 0;

	view_init(&disk, v->root);
	for (int i = 0; i < v->n; i++) {
		int k = 0;

		while (k < disk.n && strcmp(disk.ents[k], v->ents[i]))
			k++;
		if (k == disk.n) {
			fprintf(stderr, "  view has %s, the disk not\n", v->ents[i]);
			diffs++;
		}
	}
	for (int k = 0; k < disk.n; k++) {
		int i = 0;

		while (i < v->n && strcmp(disk.ents[k], v->ents[i]))
			i++;
		if (i == v->n) {
			fprintf(stderr, "  the disk has %s, the view not\n", disk.ents[k]);
			diffs++;
		}
	}
	view_free(&disk);
	return diffs;
}

void view_free(struct view *v)
{
	ents_free(v->ents, v->n);
	drop_moved(v);
	v->ents = NULL;
	v->n = v->cap = 0;
}


bool test_under_valgrind(void)
{
	const char *p = getenv("LD_PRELOAD");

	return p && strstr(p, "vgpreload");
}
