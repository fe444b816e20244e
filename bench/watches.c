/* SPDX-License-Identifier: MIT */
/*
 * watches: the watch table's own operations on objects that exist already,
 * as a long-running daemon meets them, against raw inotify, libinotifytools
 * and libuv where they do the same job. N files, N directories and N hard
 * links to the files, made once before the rounds.
 *
 * exist-*: one watch on each of the N files (then the N directories) added,
 *          all removed, and the IN_IGNOREDs read, with default options (no
 *          idle cache): a new kernel mark for every add. The group, handle or
 *          loop has churned once before, untimed (its records and handles
 *          are made), as a daemon's has. Raw is one group that counts the
 *          users of each wd (what a program that shares watches needs).
 *          exist-lib-batch makes the same calls as one batch each way.
 * dup-*:   with a watch on every file already (untimed), a second watch on
 *          each file's path, then each of those removed (removes that are
 *          not the last: nothing for the kernel), then the same through the
 *          hard links. Raw adds with IN_MASK_ADD, which returns the wd it
 *          has, and counts; libuv puts a second handle on its kernel watch.
 *          libinotifytools keeps one watch per wd and loses the first on a
 *          second add, so it does not do this job.
 *
 * Each round is a fresh process pinned to the first CPU; contenders take
 * turns round by round. Times are the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), which a preemption by another process of this
 * shared machine does not inflate; syscalls are counted (the library's by
 * fsnw_get_stats, raw's by construction).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "evio.h"
#include "itools.h"
#include "quick.h"
#include "uvpeer.h"

/* libuv's mask, which it does not let its caller choose: every contender asks
 * the kernel for the same. */
#define WATCH_MASK (IN_ATTRIB | IN_CREATE | IN_MODIFY | IN_DELETE | IN_DELETE_SELF | \
		    IN_MOVE_SELF | IN_MOVED_FROM | IN_MOVED_TO)

/* A round still running by then waits for an event that will not come. */
#define WATCHES_TIMEOUT_S 120

static struct watches_opts {
	long objects;
} opt;

#define F(field) offsetof(struct watches_opts, field)
static const struct bench_option options[] = {
	{ .flag = "objects", .arg = "N", .type = OPT_LONG, .off = F(objects), .min = 1,
	  .max = 1 << 20, .preset = { "200", "10000", "10000", "10000" },
	  .help = "files, directories and hard links" },
	{ 0 },
};
#undef F

enum wkind { W_RAW, W_LIB, W_BATCH, W_ITOOLS, W_UV, NWKIND };
static const char *const exist_names[NWKIND] = { "exist-raw", "exist-lib", "exist-lib-batch",
						 "exist-inotifytools", "exist-libuv" };
/* The duplicate rows' contenders: raw, lib and libuv (dup_names[k] of kind k). */
static const char *const dup_names[NWKIND] = { "dup-raw", "dup-lib", NULL, NULL, "dup-libuv" };

static const char *const variants[] = {
	"exist-raw", "exist-lib", "exist-lib-batch", "exist-inotifytools", "exist-libuv",
	"dup-raw", "dup-lib", "dup-libuv", NULL,
};

struct fixture {
	char dir[4096];
	long n;
	char **files, **dirs, **links;
	char **dirs_slash; /* the directories as libinotifytools names them, "d/" */
};

/* One contender's watches. Handle or slot i of base + i. */
struct side {
	enum wkind k;
	long n;                 /* slots: 2N (a keeper and a second watch per object) */
	int fd;                 /* raw */
	int *wd;                /* raw: the wd of each slot */
	int *refs;              /* raw: users of each wd */
	long nrefs;
	struct fsnw *w;         /* lib */
	int *wid;               /* lib: the wid of each slot */
	struct fsnw_batch_item *items;
	struct uvpeer *uv;
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int side_open(struct side *s, enum wkind k, long n)
{
	memset(s, 0, sizeof(*s));
	s->k = k;
	s->n = n;
	s->fd = -1;
	s->wd = calloc((size_t)n, sizeof(*s->wd));
	s->wid = calloc((size_t)n, sizeof(*s->wid));
	s->items = calloc((size_t)n, sizeof(*s->items));
	if (!s->wd || !s->wid || !s->items)
		return -ENOMEM;
	switch (k) {
	case W_RAW:
		s->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		return s->fd < 0 ? -errno : 0;
	case W_LIB:
	case W_BATCH:
		return lib_open(&s->w, FSNW_BACKEND_INOTIFY, 0, 0, 0);
	case W_ITOOLS:
		return itools_init();
	case W_UV:
		return uvpeer_open(&s->uv, NULL, NULL);
	default:
		return -EINVAL;
	}
}

static void side_close(struct side *s)
{
	if (s->fd >= 0)
		close(s->fd);
	fsnw_close(s->w);
	uvpeer_close(s->uv);
	if (s->k == W_ITOOLS)
		itools_cleanup();
	free(s->wd);
	free(s->refs);
	free(s->wid);
	free(s->items);
}

/* Raw: one more user of wd (the array grows as the kernel's wds do). */
static int raw_ref(struct side *s, int wd)
{
	if (wd >= s->nrefs) {
		long n = 2 * (long)wd + 64;
		int *p = realloc(s->refs, (size_t)n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		memset(p + s->nrefs, 0, (size_t)(n - s->nrefs) * sizeof(*p));
		s->refs = p;
		s->nrefs = n;
	}
	s->refs[wd]++;
	return 0;
}

/* A watch on each of the n paths, into slots base..: 0, or -errno of the first failure. */
static int side_add(struct side *s, char **paths, long n, long base)
{
	int err = 0, r;

	switch (s->k) {
	case W_RAW:
		for (long i = 0; i < n; i++) {
			int wd = inotify_add_watch(s->fd, paths[i], WATCH_MASK | IN_MASK_ADD);

			s->wd[base + i] = wd;
			r = wd < 0 ? -errno : raw_ref(s, wd);
			err = err ? err : r;
		}
		return err;
	case W_LIB:
		for (long i = 0; i < n; i++) {
			s->wid[base + i] = r = fsnw_add(s->w, paths[i], WATCH_MASK, 0);
			err = err ? err : r < 0 ? r : 0;
		}
		return err;
	case W_BATCH:
		for (long i = 0; i < n; i++)
			s->items[i] = (struct fsnw_batch_item){ .path = paths[i], .mask = WATCH_MASK };
		r = fsnw_add_batch(s->w, s->items, (size_t)n, 0);
		for (long i = 0; i < n; i++) {
			s->wid[base + i] = s->items[i].result;
			err = err ? err : s->items[i].result < 0 ? s->items[i].result : 0;
		}
		return err ? err : r == n ? 0 : -EIO;
	case W_ITOOLS:
		for (long i = 0; i < n; i++)
			err = err ? err : itools_watch(paths[i], WATCH_MASK);
		return err;
	case W_UV:
		for (long i = 0; i < n; i++)
			err = err ? err : uvpeer_start(s->uv, (size_t)(base + i), paths[i]);
		return err;
	default:
		return -EINVAL;
	}
}

/* Remove the watches of slots base..base+n (paths: libinotifytools removes by name). */
static int side_remove(struct side *s, char **paths, long n, long base)
{
	int err = 0, r;

	switch (s->k) {
	case W_RAW:
		for (long i = 0; i < n; i++) {
			int wd = s->wd[base + i];

			/* The last user of a wd gives it back to the kernel. */
			r = wd < 0 || wd >= s->nrefs || s->refs[wd] <= 0 ? -EINVAL :
			    --s->refs[wd] ? 0 : inotify_rm_watch(s->fd, wd) < 0 ? -errno : 0;
			err = err ? err : r;
		}
		return err;
	case W_LIB:
		for (long i = 0; i < n; i++) {
			r = fsnw_remove(s->w, s->wid[base + i]);
			err = err ? err : r;
		}
		return err;
	case W_BATCH:
		r = fsnw_remove_batch(s->w, s->wid + base, (size_t)n, NULL);
		return r == n ? 0 : r < 0 ? r : -EIO;
	case W_ITOOLS:
		for (long i = 0; i < n; i++)
			err = err ? err : itools_remove(paths[i]);
		return err;
	case W_UV:
		for (long i = 0; i < n; i++)
			err = err ? err : uvpeer_stop(s->uv, (size_t)(base + i));
		return err;
	default:
		return -EINVAL;
	}
}

/* Read what the removes of n watches left queued (their IN_IGNOREDs); raw and
 * libinotifytools: how many came. */
static long side_drain(struct side *s, long n_removed)
{
	struct raw_drained d;
	uint32_t mask;
	const char *name;
	long n = 0;

	switch (s->k) {
	case W_RAW:
		raw_drain(s->fd, &d);
		return d.err ? d.err : d.ignored;
	case W_LIB:
	case W_BATCH:
		return fsnw_pump(s->w);
	case W_ITOOLS:
		/* It cannot look without waiting: it reads the IN_IGNOREDs it is owed. */
		while (n < n_removed && itools_next(&mask, &name) > 0)
			n++;
		return n;
	case W_UV:
		return uvpeer_run(s->uv, false);
	default:
		return -EINVAL;
	}
}

static long side_syscalls(const struct side *s)
{
	struct fsnw_stats st;

	if (!s->w || lib_stats(s->w, &st) < 0)
		return -1;
	return (long)lib_syscalls(&st);
}

/* ---- exist ---- */

struct exist_arg {
	enum wkind k;
	const struct fixture *fx;
	bool dirs;
	int m;
};

struct exist_out {
	bool ran, ok;
	double add, remove, drain; /* CPU ns an object */
	double syscalls;           /* a pair, the drain's included; NAN: not counted */
};

static void exist_child(struct bench *b, void *argp, void *outp)
{
	const struct exist_arg *a = argp;
	struct exist_out *o = outp;
	const char *name = exist_names[a->k];
	char **dirs = a->k == W_ITOOLS ? a->fx->dirs_slash : a->fx->dirs;
	char **paths = a->dirs ? dirs : a->fx->files;
	long N = a->fx->n, drained = 0, sys0;
	struct side s;
	uint64_t c0, c1, c2, c3;
	int err;

	alarm(WATCHES_TIMEOUT_S);
	bench_pin_self(b, 0);
	err = side_open(&s, a->k, N);
	/* Churned once before, untimed: records, handles and tables are made. */
	if (!err)
		err = side_add(&s, paths, N, 0);
	if (!err)
		err = side_remove(&s, paths, N, 0);
	if (!err)
		side_drain(&s, N);
	sys0 = side_syscalls(&s);
	c0 = cpu_ns();
	if (!err)
		err = side_add(&s, paths, N, 0);
	c1 = cpu_ns();
	if (!err)
		err = side_remove(&s, paths, N, 0);
	c2 = cpu_ns();
	if (!err)
		drained = side_drain(&s, N);
	c3 = cpu_ns();
	o->ok = !err && drained >= 0 && (a->k != W_RAW || drained == N) &&
		(a->k != W_ITOOLS || drained == N) &&
		(a->k != W_ITOOLS || itools_num_watches() == 0);
	if (s.w) {
		struct fsnw_stats st;

		lib_stats(s.w, &st);
		o->ok &= !st.logical_watches && !st.kernel_watches &&
			 st.events_read == st.sys_inotify_rm_watch;
		o->syscalls = (double)(side_syscalls(&s) - sys0) / (double)N;
	} else {
		o->syscalls = a->k == W_RAW ? 2 : NAN; /* an add, a remove (and a drain's read) */
	}
	if (!o->ok)
		bench_fail(b, name, N, a->m, "%s: %s; %ld IN_IGNORED drained (raw: expected %ld)",
			   a->dirs ? "dirs" : "files", err ? strerror(-err) : "no error", drained,
			   N);
	side_close(&s);
	o->add = (double)(c1 - c0) / (double)N;
	o->remove = (double)(c2 - c1) / (double)N;
	o->drain = (double)(c3 - c2) / (double)N;
	o->ran = true;
}

static void exist_record(struct bench *b, enum wkind k, long N, int m, bool dirs,
			 const struct exist_out *o)
{
	const char *t = dirs ? "dirs" : "files";
	char key[40];

	bench_record(b, exist_names[k], N, m, t, o->add + o->remove + o->drain, "ns/pair", o->ok);
	snprintf(key, sizeof(key), "%s.add", t);
	bench_record(b, exist_names[k], N, m, key, o->add, "ns/watch", o->ok);
	snprintf(key, sizeof(key), "%s.remove", t);
	bench_record(b, exist_names[k], N, m, key, o->remove, "ns/watch", o->ok);
	snprintf(key, sizeof(key), "%s.drain", t);
	bench_record(b, exist_names[k], N, m, key, o->drain, "ns/watch", o->ok);
	if (!isnan(o->syscalls)) {
		snprintf(key, sizeof(key), "%s.syscalls", t);
		bench_record(b, exist_names[k], N, m, key, o->syscalls, "syscalls/pair", o->ok);
	}
}

/* ---- dup ---- */

struct dup_arg {
	enum wkind k;
	const struct fixture *fx;
	int m;
};

/* Two kinds of second watch: the same path, a hard link. */
enum { VIA_PATH, VIA_LINK, NVIA };
static const char *const via_name[NVIA] = { "path", "link" };

struct dup_out {
	bool ran, ok;
	int ring;                           /* the library's readiness ring: 1 on, 0 off, -1 */
	double add[NVIA], remove[NVIA];     /* CPU ns a call */
	double add_sys[NVIA], rm_sys[NVIA]; /* syscalls a call */
};

/* Raw: every second watch came back with its keeper's wd. */
static bool same_wds(const struct side *s, long N)
{
	for (long i = 0; s->k == W_RAW && i < N; i++)
		if (s->wd[N + i] != s->wd[i])
			return false;
	return true;
}

/* One kind of second watch: added onto every object's keeper, then removed. */
static int dup_phase(struct side *s, char **paths, long N, int via, struct dup_out *o)
{
	long sys0 = side_syscalls(s), sys1;
	uint64_t c0 = cpu_ns(), c1, c2;
	int err = side_add(s, paths, N, N);

	c1 = cpu_ns();
	sys1 = side_syscalls(s);
	if (!err && !same_wds(s, N))
		err = -EEXIST;
	if (!err)
		err = side_remove(s, paths, N, N);
	c2 = cpu_ns();
	o->add[via] = (double)(c1 - c0) / (double)N;
	o->remove[via] = (double)(c2 - c1) / (double)N;
	o->add_sys[via] = s->w ? (double)(sys1 - sys0) / (double)N : s->k == W_RAW ? 1 : NAN;
	o->rm_sys[via] = s->w ? (double)(side_syscalls(s) - sys1) / (double)N :
			 s->k == W_RAW ? 0 : NAN;
	return err;
}

static void dup_child(struct bench *b, void *argp, void *outp)
{
	const struct dup_arg *a = argp;
	struct dup_out *o = outp;
	long N = a->fx->n;
	struct fsnw_stats st0, st1;
	struct side s;
	int err;

	bench_pin_self(b, 0);
	err = side_open(&s, a->k, 2 * N);
	if (!err)
		err = side_add(&s, a->fx->files, N, 0); /* the keepers */
	/* A second watch on each made and removed once, untimed: records and
	 * handles are made, as in a daemon that has done this before. */
	if (!err)
		err = side_add(&s, a->fx->files, N, N);
	if (!err)
		err = side_remove(&s, a->fx->files, N, N);
	if (s.w)
		lib_stats(s.w, &st0);
	for (int via = 0; via < NVIA && !err; via++)
		err = dup_phase(&s, via == VIA_PATH ? a->fx->files : a->fx->links, N, via, o);
	o->ok = !err;
	/* The library: every timed second add shared its keeper's kernel watch. */
	o->ring = -1;
	if (s.w) {
		lib_stats(s.w, &st1);
		o->ring = (int)st1.ring_active;
		o->ok &= st1.dedup_hits - st0.dedup_hits == (uint64_t)(NVIA * N) &&
			 st1.kernel_watches == (uint64_t)N && st1.logical_watches == (uint64_t)N;
	}
	if (!o->ok)
		bench_fail(b, dup_names[a->k], N, a->m, "%s", err == -EEXIST ? "a second watch "
			   "got another wd than its keeper's" : err ? strerror(-err) :
			   "not one kernel watch a file, shared by each second watch");
	if (!err)
		side_remove(&s, a->fx->files, N, 0);
	side_close(&s);
	o->ran = true;
}

static void dup_record(struct bench *b, enum wkind k, long N, int m, const struct dup_out *o)
{
	char key[40];

	/* Whether the library settles an add with a look at its ring (1 syscall an
	 * add) or by reading the group fd (2). */
	if (o->ring >= 0)
		bench_record(b, dup_names[k], N, m, "ring", o->ring, "on", o->ok);
	for (int via = 0; via < NVIA; via++) {
		snprintf(key, sizeof(key), "add.%s", via_name[via]);
		bench_record(b, dup_names[k], N, m, key, o->add[via], "ns/call", o->ok);
		snprintf(key, sizeof(key), "remove.%s", via_name[via]);
		bench_record(b, dup_names[k], N, m, key, o->remove[via], "ns/call", o->ok);
		if (isnan(o->add_sys[via]))
			continue;
		snprintf(key, sizeof(key), "add.%s.syscalls", via_name[via]);
		bench_record(b, dup_names[k], N, m, key, o->add_sys[via], "syscalls/call", o->ok);
		snprintf(key, sizeof(key), "remove.%s.syscalls", via_name[via]);
		bench_record(b, dup_names[k], N, m, key, o->rm_sys[via], "syscalls/call", o->ok);
	}
}

/* ---- the run ---- */

static char **make_paths(const char *dir, const char *prefix, long n)
{
	char **p = calloc((size_t)n, sizeof(*p));

	for (long i = 0; p && i < n; i++)
		if (asprintf(&p[i], "%s/%s%ld", dir, prefix, i) < 0)
			return NULL;
	return p;
}

static int fixture_make(struct bench *b, struct fixture *fx, long n)
{
	char sub[4200];
	int err = bench_mkdir(b, "watches", fx->dir, sizeof(fx->dir));

	fx->n = n;
	for (int i = 0; !err && i < 3; i++) {
		snprintf(sub, sizeof(sub), "%s/%c", fx->dir, "fdl"[i]);
		err = mkdir(sub, 0700) < 0 ? -errno : 0;
	}
	if (err)
		return err;
	snprintf(sub, sizeof(sub), "%s/f", fx->dir);
	fx->files = make_paths(sub, "f", n);
	snprintf(sub, sizeof(sub), "%s/d", fx->dir);
	fx->dirs = make_paths(sub, "d", n);
	snprintf(sub, sizeof(sub), "%s/l", fx->dir);
	fx->links = make_paths(sub, "l", n);
	fx->dirs_slash = calloc((size_t)n, sizeof(*fx->dirs_slash));
	for (long i = 0; fx->dirs && fx->dirs_slash && i < n; i++)
		if (asprintf(&fx->dirs_slash[i], "%s/", fx->dirs[i]) < 0)
			return -ENOMEM;
	if (!fx->files || !fx->dirs || !fx->links || !fx->dirs_slash)
		return -ENOMEM;
	snprintf(sub, sizeof(sub), "%s/f", fx->dir);
	err = bench_make_files(b, sub, "f", n, 0);
	for (long i = 0; !err && i < n; i++) {
		if (mkdir(fx->dirs[i], 0700) < 0 || link(fx->files[i], fx->links[i]) < 0)
			err = -errno;
		if (!(i & 4095))
			bench_progress(b, "watches: making %ld directories and links", n);
	}
	return err;
}

static void fixture_free(struct fixture *fx)
{
	char sub[4200];

	for (long i = 0; i < fx->n; i++) {
		if (fx->files && fx->files[i])
			unlink(fx->files[i]);
		if (fx->links && fx->links[i])
			unlink(fx->links[i]);
		if (fx->dirs && fx->dirs[i])
			rmdir(fx->dirs[i]);
		free(fx->files ? fx->files[i] : NULL);
		free(fx->links ? fx->links[i] : NULL);
		free(fx->dirs ? fx->dirs[i] : NULL);
		free(fx->dirs_slash ? fx->dirs_slash[i] : NULL);
	}
	free(fx->dirs_slash);
	free(fx->files);
	free(fx->dirs);
	free(fx->links);
	for (int i = 0; i < 3; i++) {
		snprintf(sub, sizeof(sub), "%s/%c", fx->dir, "fdl"[i]);
		rmdir(sub);
	}
	rmdir(fx->dir);
}

/* Whether contender k of names runs: selected, and able to here (else skipped). */
static bool runs(struct bench *b, const char *const *names, enum wkind k)
{
	char why[256];

	if (!names[k] || !cli_variant_on(b->o, names[k]) || bench_skipped(b, "watches", names[k]))
		return false;
	if ((k == W_ITOOLS && !itools_available(why, sizeof(why))) ||
	    (k == W_UV && !uvpeer_available(why, sizeof(why)))) {
		bench_skip(b, names[k], "%s", why);
		return false;
	}
	return bench_inotify_room(b, names[k], 1);
}

/* One round of contender k: its exist rounds (files, dirs) and its dup round. */
static void watches_round(struct bench *b, const struct fixture *fx, enum wkind k, int m)
{
	long N = fx->n;

	for (int t = 0; t < 2 && runs(b, exist_names, k); t++) {
		struct exist_arg ea = { .k = k, .fx = fx, .dirs = t == 1, .m = m };
		struct exist_out eo = { .ran = false };

		bench_progress(b, "%s round %d", exist_names[k], m);
		if (bench_in_child(b, exist_child, &ea, &eo, sizeof(eo)) < 0)
			bench_fail(b, exist_names[k], N, m, "the round's process died");
		else if (eo.ran && m > 0)
			exist_record(b, k, N, m, t == 1, &eo);
	}
	if (runs(b, dup_names, k)) {
		struct dup_arg da = { .k = k, .fx = fx, .m = m };
		struct dup_out d = { .ran = false };

		bench_progress(b, "%s round %d", dup_names[k], m);
		if (bench_in_child(b, dup_child, &da, &d, sizeof(d)) < 0)
			bench_fail(b, dup_names[k], N, m, "the round's process died");
		else if (d.ran && m > 0)
			dup_record(b, k, N, m, &d);
	}
}

static int watches_run(struct bench *b)
{
	struct fixture fx = { .n = 0 };
	int warmup, rounds, err;

	bench_begin(b, "watches", "objects");
	err = fixture_make(b, &fx, opt.objects);
	if (err) {
		bench_fail(b, "exist-raw", opt.objects, 0, "making %ld files, directories and "
			   "links: %s", opt.objects, strerror(-err));
		fixture_free(&fx);
		bench_end(b);
		return 0;
	}
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 5, 10, 10), &warmup,
		     &rounds);
	for (int r = 0; r < warmup + rounds; r++)
		for (int i = 0; i < NWKIND; i++)
			watches_round(b, &fx, (enum wkind)((i + r) % NWKIND), r - warmup + 1);
	fixture_free(&fx);
	bench_end(b);
	return 0;
}

static void quick_exist(struct quick *q, const char *t, long N)
{
	char label[96], sys[40], batch[40];

	snprintf(sys, sizeof(sys), "%s.syscalls", t);
	snprintf(label, sizeof(label), "add+remove, %ld existing %s", N, t);
	snprintf(batch, sizeof(batch), "%s", t);
	quick_libuv(q, quick_need(q, "exist-libuv", N, t));
	quick_row(q, label, "ns/pair", quick_need(q, "exist-raw", N, t),
		  quick_need(q, "exist-inotifytools", N, t), quick_need(q, "exist-lib", N, t), NAN,
		  "thread CPU, IN_IGNOREDs read; default options, churned once before; batch "
		  "calls %.0f (%.2f x single); syscalls a pair lib %.2f, raw 2; target lib/raw "
		  "<= 1.10", quick_need(q, "exist-lib-batch", N, batch),
		  quick_need(q, "exist-lib-batch", N, batch) / quick_need(q, "exist-lib", N, t),
		  quick_need(q, "exist-lib", N, sys));
}

static void watches_quick(struct bench *b, struct quick *q)
{
	long N = opt.objects;

	(void)b;
	quick_exist(q, "files", N);
	quick_exist(q, "dirs", N);
	quick_libuv(q, quick_need(q, "dup-libuv", N, "add.path"));
	quick_row(q, "duplicate add, path already watched", "ns/add",
		  quick_need(q, "dup-raw", N, "add.path"), NAN, quick_need(q, "dup-lib", N, "add.path"),
		  NAN, "raw: IN_MASK_ADD and a count a wd; hard link: raw %.0f, libuv %.0f, lib %.0f; "
		  "syscalls an add lib %.2f (raw 1); libinotifytools cannot (one watch a wd)",
		  quick_need(q, "dup-raw", N, "add.link"), quick_need(q, "dup-libuv", N, "add.link"),
		  quick_need(q, "dup-lib", N, "add.link"),
		  quick_need(q, "dup-lib", N, "add.path.syscalls"));
	quick_libuv(q, quick_need(q, "dup-libuv", N, "remove.path"));
	quick_row(q, "remove of a watch not the last", "ns/remove",
		  quick_need(q, "dup-raw", N, "remove.path"), NAN,
		  quick_need(q, "dup-lib", N, "remove.path"), NAN,
		  "raw: a count a wd; hard link: raw %.0f, libuv %.0f, lib %.0f; syscalls lib %.2f "
		  "(raw 0)", quick_need(q, "dup-raw", N, "remove.link"),
		  quick_need(q, "dup-libuv", N, "remove.link"),
		  quick_need(q, "dup-lib", N, "remove.link"),
		  quick_need(q, "dup-lib", N, "remove.path.syscalls"));
}

BENCH_SCENARIO(watches) = {
	.name = "watches",
	.order = 5,
	.summary = "watches on existing files and directories, duplicate adds, non-last removes",
	.flags = SCEN_MEASURES | SCEN_ROUNDS,
	.run = watches_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = watches_quick,
};
