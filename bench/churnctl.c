/* SPDX-License-Identifier: MIT */
/*
 * churn's controls, set up as the 94bd01253c3d report's reproducer sets them up:
 *  - bulk: one group, B fresh directories watched for IN_CREATE | IN_DELETE |
 *    IN_MOVED_FROM | IN_MOVED_TO by one thread, added then removed, every wd
 *    unique; raw against the library's single and batch calls (the 1:1
 *    add+remove cost of the library);
 *  - mask-update: one group, one fresh file, N re-adds of its watch
 *    alternating IN_MODIFY and IN_ATTRIB without IN_MASK_ADD, each returning
 *    the same wd; one thread (a kernel control: no connector work);
 *  - path-lookup: open(O_PATH) + close of one fresh file N times after 16
 *    warm-ups (the reproducer's negative control: no fsnotify at all);
 *    both, like churn's rounds, a process per round, as the reproducer runs them;
 *  - tree: a watch on every directory of a tree (churntree.c);
 *  - timing-ab: the cost of the library's latency timing, A/B interleaved.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "churn.h"
#include "evio.h"
#include "table.h"

/* ---- fresh directories and files for one round ---- */

/* A directory of its own in the scratch directory: name-serial. */
static int fresh_dir(struct bench *b, const char *name, char *path, size_t len)
{
	static unsigned serial;
	char n[64];

	snprintf(n, sizeof(n), "%s-%u", name, serial++);
	return bench_mkdir(b, n, path, len);
}

/* B directories dir/d0.. made and stat'ed once (warm dentries, as the reproducer). */
static char **make_dirs(struct bench *b, const char *dir, int B)
{
	char **dirs = calloc((size_t)B, sizeof(char *));

	if (!dirs)
		bench_fatal(b, "out of memory");
	for (int i = 0; i < B; i++) {
		struct stat st;

		if (asprintf(&dirs[i], "%s/d%d", dir, i) < 0 || mkdir(dirs[i], 0700) < 0 ||
		    stat(dirs[i], &st) < 0)
			bench_fatal(b, "making %d directories in %s: %s", B, dir, strerror(errno));
	}
	return dirs;
}

static void free_dirs(char **dirs, int B, const char *dir)
{
	for (int i = 0; i < B; i++) {
		rmdir(dirs[i]);
		free(dirs[i]);
	}
	free(dirs);
	rmdir(dir);
}

static int by_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Whether the n ids are all different (the reproducer checks its wds so). */
static bool all_unique(const int *ids, int n)
{
	int *c = malloc((size_t)n * sizeof(*c));
	bool ok = c != NULL;

	if (!c)
		return false;
	memcpy(c, ids, (size_t)n * sizeof(*c));
	qsort(c, (size_t)n, sizeof(*c), by_int);
	for (int i = 1; i < n && ok; i++)
		ok = c[i] != c[i - 1];
	free(c);
	return ok;
}

/* ---- bulk ---- */

#define BULK_MASK (IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO)

struct bulk_arg {
	const char *variant;
	int B, m;
};

struct bulk_out {
	uint64_t add, remove, drain; /* ns for all B */
	double sys;
	double faults; /* page faults a watch, adds and removes */
	double heap;   /* the library: malloc'd bytes a watch after the adds */
	bool ran, ok;
};

/* One round of one bulk variant, in a process of its own (bench_in_child). */
static void bulk_child(struct bench *b, void *argp, void *outp)
{
	const struct bulk_arg *arg = argp;
	struct bulk_out *o = outp;
	const char *variant = arg->variant;
	int B = arg->B, m = arg->m;
	struct fsnw_stats st0 = { 0 }, st1 = { 0 }, st2;
	struct fsnw_batch_item *items = NULL;
	struct fsnw *w = NULL;
	int *ids = calloc((size_t)B, sizeof(int));
	uint64_t t0, t1, t2, t3;
	struct mallinfo2 heap0 = { 0 }, heap1 = { 0 };
	long faults0;
	double faults;
	int fd = -1, bad = 0, err = 0;
	bool ok = true, raw = !strcmp(variant, "bulk-raw");
	bool batch = !strcmp(variant, "bulk-lib-batch");
	bool reserve = !strcmp(variant, "bulk-lib-reserve");
	char dir[4096], **dirs;
	double sys;

	if (!ids)
		bench_fatal(b, "out of memory");
	bench_pin_self(b, 0);
	if (fresh_dir(b, "churn-bulk", dir, sizeof(dir)) < 0)
		bench_fatal(b, "mkdir in %s: %s", b->dir, strerror(errno));
	dirs = make_dirs(b, dir, B);
	bench_trace(b, "%s round %d: %d fresh directories, mask IN_CREATE|IN_DELETE|"
		    "IN_MOVED_FROM|IN_MOVED_TO", variant, m, B);
	if (raw) {
		fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fd < 0) {
			bench_fail(b, variant, 1, m, "inotify_init1: %s", strerror(errno));
			goto out;
		}
	} else {
		err = lib_open(&w, FSNW_BACKEND_INOTIFY, 0, 0, 0);
		if (err < 0) {
			bench_fail(b, variant, 1, m, "fsnw_open: %s", strerror(-err));
			goto out;
		}
		items = calloc((size_t)B, sizeof(*items));
		if (!items)
			bench_fatal(b, "out of memory");
		for (int i = 0; i < B; i++) {
			items[i].path = dirs[i];
			items[i].mask = BULK_MASK;
		}
		/* Untimed: what the adds would allocate, allocated now. */
		err = reserve ? fsnw_reserve(w, (size_t)B) : 0;
		if (err < 0) {
			bench_fail(b, variant, 1, m, "fsnw_reserve: %s", strerror(-err));
			goto out;
		}
		lib_stats(w, &st0);
		heap0 = mallinfo2();
	}
	faults0 = thread_faults();
	t0 = now_ns();
	if (raw) {
		for (int i = 0; i < B; i++)
			if ((ids[i] = inotify_add_watch(fd, dirs[i], BULK_MASK)) < 0 && !bad++)
				err = errno;
	} else if (batch) {
		if (fsnw_add_batch(w, items, (size_t)B, 0) != B && !bad++)
			err = EIO;
		for (int i = 0; i < B; i++)
			ids[i] = items[i].result;
	} else {
		for (int i = 0; i < B; i++)
			if ((ids[i] = fsnw_add(w, dirs[i], BULK_MASK, 0)) <= 0 && !bad++)
				err = -ids[i];
	}
	t1 = now_ns();
	if (w)
		heap1 = mallinfo2();
	/* Every directory got a watch of its own: unique wds (wids), and for
	 * the library one kernel watch each. */
	if (!bad && !all_unique(ids, B)) {
		bench_fail(b, variant, 1, m, "two directories got the same %s",
			   raw ? "wd" : "wid");
		ok = false;
	}
	if (w) {
		uint64_t made;

		lib_stats(w, &st1);
		made = st1.kernel_watches - st0.kernel_watches;
		if (made != (uint64_t)B) {
			bench_fail(b, variant, 1, m, "%llu kernel watches for %d directories",
				   (unsigned long long)made, B);
			ok = false;
		}
	}
	if (raw) {
		for (int i = 0; i < B; i++)
			if (ids[i] >= 0 && inotify_rm_watch(fd, ids[i]) < 0 && !bad++)
				err = errno;
	} else if (batch) {
		if (fsnw_remove_batch(w, ids, (size_t)B, NULL) != B && !bad++)
			err = EIO;
	} else {
		for (int i = 0; i < B; i++) {
			int ret = ids[i] > 0 ? fsnw_remove(w, ids[i]) : 0;

			if (ret < 0 && !bad++)
				err = -ret;
		}
	}
	t2 = now_ns();
	faults = (double)(thread_faults() - faults0) / B;
	if (bad) {
		bench_fail(b, variant, 1, m, "%d adds or removes failed (first: %s)", bad,
			   strerror(err));
		ok = false;
	}
	/*
	 * Every removed watch leaves an IN_IGNORED the program must read some
	 * time. The library reads its own in batches (during the removes once
	 * enough wait); raw leaves them all to this drain. add+remove is the
	 * 1:1 metric, add+remove+drain puts both on the same footing.
	 */
	if (raw) {
		struct raw_drained d;

		raw_drain(fd, &d);
		t3 = now_ns();
		if (d.ignored != B || d.other || d.overflows) {
			bench_fail(b, variant, 1, m, "%ld IN_IGNORED (expected %d), %ld other, "
				   "%ld overflows", d.ignored, B, d.other, d.overflows);
			ok = false;
		}
		sys = 2;
	} else {
		lib_stats(w, &st2);
		sys = (double)(lib_syscalls(&st2) - lib_syscalls(&st0)) / B;
		fsnw_pump(w);
		t3 = now_ns();
		lib_stats(w, &st2);
		if (st2.logical_watches || st2.kernel_watches || st2.overflows_kernel ||
		    st2.events_read != st2.sys_inotify_rm_watch) {
			bench_fail(b, variant, 1, m, "after removing every watch: %llu logical, "
				   "%llu kernel watches, %llu events read for %llu removes",
				   (unsigned long long)st2.logical_watches,
				   (unsigned long long)st2.kernel_watches,
				   (unsigned long long)st2.events_read,
				   (unsigned long long)st2.sys_inotify_rm_watch);
			ok = false;
		}
	}
	*o = (struct bulk_out){ .add = t1 - t0, .remove = t2 - t1, .drain = t3 - t2, .sys = sys,
				.faults = faults,
				/* the library's own slabs too: malloc does not see them */
				.heap = (double)heap1.uordblks - (double)heap0.uordblks +
					(double)st1.mem_mapped - (double)st0.mem_mapped,
				.ran = true, .ok = ok };
out:
	if (fd >= 0)
		close(fd);
	fsnw_close(w);
	free(items);
	free(ids);
	free_dirs(dirs, B, dir);
}

static void bulk_round(struct bench *b, const char *variant, int B, int m)
{
	struct bulk_arg arg = { .variant = variant, .B = B, .m = m };
	struct bulk_out o = { .ran = false };
	bool ok;

	if (bench_in_child(b, bulk_child, &arg, &o, sizeof(o)) < 0) {
		bench_fail(b, variant, 1, m, "the round's process died");
		return;
	}
	if (!o.ran || m <= 0)
		return;
	ok = o.ok;
	bench_record(b, variant, 1, m, "add+remove", (double)(o.add + o.remove) / B, "ns/watch",
		     ok);
	bench_record(b, variant, 1, m, "add", (double)o.add / B, "ns/watch", ok);
	bench_record(b, variant, 1, m, "remove", (double)o.remove / B, "ns/watch", ok);
	bench_record(b, variant, 1, m, "drain", (double)o.drain / B, "ns/watch", ok);
	bench_record(b, variant, 1, m, "add+remove+drain",
		     (double)(o.add + o.remove + o.drain) / B, "ns/watch", ok);
	bench_record(b, variant, 1, m, "syscalls", o.sys, "syscalls/watch", ok);
	bench_record(b, variant, 1, m, "faults", o.faults, "faults/watch", ok);
	if (strcmp(variant, "bulk-raw"))
		bench_record(b, variant, 1, m, "heap", o.heap / B, "bytes/watch", ok);
}

static void run_bulk(struct bench *b, long bulk)
{
	static const char *const names[] = { "bulk-raw", "bulk-lib", "bulk-lib-batch",
					     "bulk-lib-reserve" };
	int B = (int)bulk, warmup, rounds;
	bool any = false;

	for (int v = 0; v < 4; v++)
		any |= cli_variant_on(b->o, names[v]);
	if (!any)
		return;
	bench_rounds(b, bench_pick(b, 1, 2, 2, 2), (int)bench_pick(b, 3, 30, 30, 30), &warmup,
		     &rounds);
	/* Variants interleave by round: a busy moment of the machine hits all alike. */
	for (int r = 0; r < warmup + rounds; r++)
		for (int v = 0; v < 4; v++) {
			if (!cli_variant_on(b->o, names[v]) || !bench_inotify_room(b, names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", names[v], r + 1, warmup + rounds);
			bulk_round(b, names[v], B, r - warmup + 1);
		}
}

/* ---- mask-update and path-lookup: one thread, one fresh file a round ---- */

/* Make dir/target in a fresh directory of the scratch directory. */
static int fresh_file(struct bench *b, const char *name, char *dir, size_t dlen, char *path,
		      size_t plen)
{
	int fd, err = fresh_dir(b, name, dir, dlen);

	if (err)
		return err;
	snprintf(path, plen, "%s/target", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

struct ctl_arg {
	long N;
	int m;
};

struct ctl_out {
	double ns; /* per call */
	bool ok;
};

/* N re-adds of one watch, IN_MODIFY and IN_ATTRIB in turn, no IN_MASK_ADD. */
static void mask_update_child(struct bench *b, void *arg, void *out)
{
	const struct ctl_arg *a = arg;
	struct ctl_out *o = out;
	const char *name = "mask-update";
	char dir[4096] = "", path[4200] = "";
	struct raw_drained d = { 0 };
	long bad = 0;
	uint64_t t0, t1;
	int fd = -1, wd, err;

	bench_pin_self(b, 0);
	err = fresh_file(b, "churn-mask", dir, sizeof(dir), path, sizeof(path));
	if (err) {
		bench_fail(b, name, 1, a->m, "set-up: %s", strerror(-err));
		goto out;
	}
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	wd = fd < 0 ? -1 : inotify_add_watch(fd, path, IN_ATTRIB);
	/* The reproducer's two warm-up updates, which must keep the wd too. */
	if (wd < 0 || inotify_add_watch(fd, path, IN_MODIFY) != wd ||
	    inotify_add_watch(fd, path, IN_ATTRIB) != wd) {
		bench_fail(b, name, 1, a->m, "set-up: %s", wd < 0 ? strerror(errno) :
			   "a warm-up update returned another wd");
		goto out;
	}
	t0 = now_ns();
	for (long i = 0; i < a->N; i++)
		bad += inotify_add_watch(fd, path, i & 1 ? IN_ATTRIB : IN_MODIFY) != wd;
	t1 = now_ns();
	bad += inotify_rm_watch(fd, wd) < 0;
	raw_drain(fd, &d);
	/* Updating a mask queues nothing; the removal exactly one IN_IGNORED. */
	o->ok = !bad && d.ignored == 1 && !d.other && !d.overflows;
	if (!o->ok)
		bench_fail(b, name, 1, a->m, "%ld updates did not return the watch's wd; %ld "
			   "IN_IGNORED (expected 1), %ld other events, %ld overflows", bad,
			   d.ignored, d.other, d.overflows);
	o->ns = (double)(t1 - t0) / a->N;
out:
	if (fd >= 0)
		close(fd);
	unlink(path);
	rmdir(dir);
}

/* N path lookups that involve no fsnotify at all, after 16 warm-ups. */
static void path_lookup_child(struct bench *b, void *arg, void *out)
{
	const struct ctl_arg *a = arg;
	struct ctl_out *o = out;
	char dir[4096] = "", path[4200] = "";
	long bad = 0;
	uint64_t t0, t1;
	int err;

	bench_pin_self(b, 0);
	err = fresh_file(b, "churn-lookup", dir, sizeof(dir), path, sizeof(path));
	if (err) {
		bench_fail(b, "path-lookup", 1, a->m, "set-up: %s", strerror(-err));
		goto out;
	}
	for (int i = 0; i < 16; i++) {
		int fd = open(path, O_PATH | O_CLOEXEC);

		if (fd < 0)
			bad++;
		else
			close(fd);
	}
	t0 = now_ns();
	for (long i = 0; i < a->N; i++) {
		int fd = open(path, O_PATH | O_CLOEXEC);

		if (fd < 0 || close(fd) < 0)
			bad++;
	}
	t1 = now_ns();
	o->ok = !bad;
	if (bad)
		bench_fail(b, "path-lookup", 1, a->m, "%ld of %ld opens or closes failed", bad,
			   a->N + 16);
	o->ns = (double)(t1 - t0) / a->N;
out:
	unlink(path);
	rmdir(dir);
}

/* One round of a single-thread control in a fresh process, as the reproducer runs it. */
static void control_round(struct bench *b, const char *name, const char *metric,
			  void (*fn)(struct bench *, void *, void *), long N, int m)
{
	struct ctl_arg arg = { .N = N, .m = m };
	struct ctl_out o = { .ns = NAN, .ok = false };

	if (bench_in_child(b, fn, &arg, &o, sizeof(o)) < 0)
		bench_fail(b, name, 1, m, "the round's process died");
	else if (m > 0 && !isnan(o.ns))
		bench_record(b, name, 1, m, metric, o.ns, "ns/call", o.ok);
}

static void run_single_controls(struct bench *b, long N)
{
	bool mu = cli_variant_on(b->o, "mask-update"), pl = cli_variant_on(b->o, "path-lookup");
	int warmup, rounds;

	if (!mu && !pl)
		return;
	bench_rounds(b, bench_pick(b, 1, 2, 2, 2), (int)bench_pick(b, 3, 15, 25, 25), &warmup,
		     &rounds);
	for (int r = 0; r < warmup + rounds; r++) {
		bench_progress(b, "mask-update, path-lookup round %d/%d", r + 1, warmup + rounds);
		if (mu && bench_inotify_room(b, "mask-update", 1))
			control_round(b, "mask-update", "update", mask_update_child, N,
				      r - warmup + 1);
		if (pl)
			control_round(b, "path-lookup", "lookup", path_lookup_child, N,
				      r - warmup + 1);
	}
}

/* ---- timing-ab: the cost of latency timing, A/B interleaved ---- */

/*
 * Run separately, lib and lib-nostats differ by more than timing costs on a
 * shared VM (rounds drift by 10-20%). Here two handles, one timing and one
 * not (FSNW_OPEN_NO_STATS), take turns in blocks of a few hundred add+remove
 * pairs within one round, so a busy moment hits both alike; the metric is
 * the ratio on/off per round.
 */
static double ab_block(struct fsnw *w, const char *path, int n, bool *ok)
{
	uint64_t t0 = now_ns();

	for (int i = 0; i < n; i++) {
		int wid = fsnw_add(w, path, FSNW_ATTRIB, 0);

		if (wid <= 0 || fsnw_remove(w, wid) != 0)
			*ok = false;
	}
	return (double)(now_ns() - t0) / n;
}

static void timing_ab_round(struct bench *b, const char *file, int m)
{
	static const char *const topo[] = { "distinct", "shared" };
	const int blocks = 40, per_block = 200;

	for (int t = 0; t < 2; t++) {
		struct fsnw *w[2] = { NULL, NULL };
		double sum[2] = { 0, 0 };
		bool ok = true;
		char metric[32];

		for (int k = 0; k < 2; k++) {
			if (lib_open(&w[k], FSNW_BACKEND_INOTIFY, k ? FSNW_OPEN_NO_STATS : 0, 0, 0) < 0)
				ok = false;
			/* shared: a keeper watch, so each add lands on a kernel watch in use */
			else if (t == 1 && fsnw_add(w[k], file, FSNW_ATTRIB, 0) <= 0)
				ok = false;
		}
		for (int i = 0; ok && i < blocks; i++)
			for (int j = 0; j < 2; j++) {
				int k = (i & 1) ? 1 - j : j; /* alternate who goes first */

				sum[k] += ab_block(w[k], file, per_block, &ok);
			}
		fsnw_close(w[0]);
		fsnw_close(w[1]);
		if (!ok) {
			bench_fail(b, "timing-ab", 1, m, "%s: an add or remove failed", topo[t]);
			continue;
		}
		snprintf(metric, sizeof(metric), "%s.on", topo[t]);
		bench_record(b, "timing-ab", 1, m, metric, sum[0] / blocks, "ns/watch", true);
		snprintf(metric, sizeof(metric), "%s.off", topo[t]);
		bench_record(b, "timing-ab", 1, m, metric, sum[1] / blocks, "ns/watch", true);
		bench_record(b, "timing-ab", 1, m, topo[t], sum[0] / sum[1], "ratio", true);
	}
}

static void run_timing_ab(struct bench *b)
{
	char dir[4096], file[4200];
	int warmup, rounds, fd;

	if (!cli_variant_on(b->o, "timing-ab") || !bench_inotify_room(b, "timing-ab", 2))
		return;
	if (bench_mkdir(b, "churn-timing", dir, sizeof(dir)) < 0) {
		bench_fail(b, "timing-ab", 1, 0, "mkdir %s: %s", dir, strerror(errno));
		return;
	}
	snprintf(file, sizeof(file), "%s/f", dir);
	fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
	if (fd < 0) {
		bench_fail(b, "timing-ab", 1, 0, "create %s: %s", file, strerror(errno));
		return;
	}
	close(fd);
	bench_rounds(b, bench_pick(b, 1, 1, 2, 2), (int)bench_pick(b, 2, 5, 10, 10), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int r = 0; r < warmup + rounds; r++) {
		bench_progress(b, "timing-ab round %d/%d", r + 1, warmup + rounds);
		timing_ab_round(b, file, r - warmup + 1);
	}
	bench_unpin_self(b);
}

void churn_controls(struct bench *b, const struct churn_opts *o)
{
	run_timing_ab(b);
	run_bulk(b, o->bulk);
	run_single_controls(b, o->control_calls);
	churn_tree(b, o);
}
