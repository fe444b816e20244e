/* SPDX-License-Identifier: MIT */
/*
 * churn's controls:
 *  - bulk: one group, B directory watches added then removed by one thread;
 *    raw against the library's single and batch calls (the 1:1 add+remove
 *    cost of the library);
 *  - mask-update: re-adding an existing watch with another mask, G groups
 *    and W workers as in churn (a kernel control: no connector work);
 *  - tree: adding a watch on every directory of a tree of D directories:
 *    a raw walk + inotify_add_watch, the library's FSNW_WATCH_TREE (inotify
 *    and fanotify), and libinotifytools' inotifytools_watch_recursively.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "evio.h"
#include "harness.h"
#include "itools.h"
#include "scenarios.h"
#include "table.h"

#define TREE_MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO | FSNW_MODIFY | \
		   FSNW_CLOSE_WRITE)
#define TREE_FANOUT 10

/* ---- bulk ---- */

static void bulk_round(struct bench *b, const char *variant, char **dirs, int B, int m)
{
	struct fsnw_stats st0, st1, st2;
	struct fsnw_batch_item *items = NULL;
	struct fsnw *w = NULL;
	int *ids = calloc((size_t)B, sizeof(int));
	uint64_t t0, t1, t2, t3;
	int fd = -1, bad = 0, err = 0;
	bool ok = true, raw = !strcmp(variant, "bulk-raw");
	bool batch = !strcmp(variant, "bulk-lib-batch");
	double sys;

	if (!ids)
		bench_fatal(b, "out of memory");
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
			items[i].mask = FSNW_ATTRIB;
		}
		lib_stats(w, &st0);
	}
	t0 = now_ns();
	if (raw) {
		for (int i = 0; i < B; i++)
			if ((ids[i] = inotify_add_watch(fd, dirs[i], IN_ATTRIB)) < 0 && !bad++)
				err = errno;
	} else if (batch) {
		if (fsnw_add_batch(w, items, (size_t)B, 0) != B && !bad++)
			err = EIO;
		for (int i = 0; i < B; i++)
			ids[i] = items[i].result;
	} else {
		for (int i = 0; i < B; i++)
			if ((ids[i] = fsnw_add(w, dirs[i], FSNW_ATTRIB, 0)) <= 0 && !bad++)
				err = -ids[i];
	}
	t1 = now_ns();
	if (w)
		lib_stats(w, &st1);
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
	if (bad) {
		bench_fail(b, variant, 1, m, "%d adds or removes failed (first: %s)", bad,
			   strerror(err));
		ok = false;
	}
	/*
	 * Every removed watch leaves an IN_IGNORED the program must read some
	 * time. The library reads its own in batches (during the removes once
	 * enough wait); raw leaves them all to this drain. add+remove is the
	 * issue's 1:1 metric, add+remove+drain puts both on the same footing.
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
		(void)st1;
	}
	if (m > 0) {
		bench_record(b, variant, 1, m, "add+remove", (double)(t2 - t0) / B, "ns/watch", ok);
		bench_record(b, variant, 1, m, "add", (double)(t1 - t0) / B, "ns/watch", ok);
		bench_record(b, variant, 1, m, "remove", (double)(t2 - t1) / B, "ns/watch", ok);
		bench_record(b, variant, 1, m, "drain", (double)(t3 - t2) / B, "ns/watch", ok);
		bench_record(b, variant, 1, m, "add+remove+drain", (double)(t3 - t0) / B, "ns/watch",
			     ok);
		bench_record(b, variant, 1, m, "syscalls", sys, "syscalls/watch", ok);
	}
out:
	if (fd >= 0)
		close(fd);
	fsnw_close(w);
	free(items);
	free(ids);
}

static void run_bulk(struct bench *b)
{
	static const char *const names[] = { "bulk-raw", "bulk-lib", "bulk-lib-batch" };
	int B = (int)b->o->bulk, warmup, rounds;
	char dir[4096], **dirs;

	bool any = false;

	for (int v = 0; v < 3; v++)
		any |= cli_variant_on(b->o, names[v]);
	if (!any)
		return;
	if (bench_mkdir(b, "churn-bulk", dir, sizeof(dir)) < 0) {
		bench_fail(b, "bulk-raw", 1, 0, "mkdir %s: %s", dir, strerror(errno));
		return;
	}
	dirs = calloc((size_t)B, sizeof(char *));
	if (!dirs)
		bench_fatal(b, "out of memory");
	for (int i = 0; i < B; i++)
		if (asprintf(&dirs[i], "%s/d%d", dir, i) < 0 || mkdir(dirs[i], 0700) < 0)
			bench_fatal(b, "making %d directories: %s", B, strerror(errno));
	bench_rounds(b, cli_pick(b->o, 1, 2, 2, 2), (int)cli_pick(b->o, 3, 30, 30, 30), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	/* Variants interleave by round: a busy moment of the machine hits all alike. */
	for (int r = 0; r < warmup + rounds; r++)
		for (int v = 0; v < 3; v++) {
			if (!cli_variant_on(b->o, names[v]) || !bench_inotify_room(b, names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", names[v], r + 1, warmup + rounds);
			bulk_round(b, names[v], dirs, B, r - warmup + 1);
		}
	bench_unpin_self(b);
	for (int i = 0; i < B; i++)
		free(dirs[i]);
	free(dirs);
}

/* ---- mask-update ---- */

struct mu_round {
	struct team team;
	int *groups, *wd, G, W;
	char **paths;
	uint32_t mask;
	uint64_t *ns;
	int *bad;
};

static void mu_worker(struct team *t, int idx)
{
	struct mu_round *r = t->arg;
	int lo = (int)((long)idx * r->G / r->W), hi = (int)((long)(idx + 1) * r->G / r->W);
	uint64_t t0;
	int bad = 0;

	team_sync(t);
	t0 = now_ns();
	for (int j = lo; j < hi; j++)
		bad += inotify_add_watch(r->groups[j], r->paths[j], r->mask) != r->wd[j];
	r->ns[idx] = now_ns() - t0;
	r->bad[idx] = bad;
	team_sync(t);
}

static void run_mask_update(struct bench *b, char **paths, int G)
{
	const char *name = "mask-update";
	int warmup, rounds;

	if (!cli_variant_on(b->o, name))
		return;
	bench_rounds(b, cli_pick(b->o, 1, 2, 2, 2), (int)cli_pick(b->o, 3, 15, 25, 25), &warmup,
		     &rounds);
	for (int k = 0; k < b->o->workers.n; k++) {
		struct mu_round r = { .G = G, .W = (int)b->o->workers.v[k], .paths = paths };

		if (r.W > G || !bench_inotify_room(b, name, G))
			continue;
		r.groups = calloc((size_t)G, sizeof(int));
		r.wd = calloc((size_t)G, sizeof(int));
		r.ns = calloc((size_t)r.W, sizeof(uint64_t));
		r.bad = calloc((size_t)r.W, sizeof(int));
		if (!r.groups || !r.wd || !r.ns || !r.bad)
			bench_fatal(b, "out of memory");
		for (int j = 0; j < G; j++) {
			r.groups[j] = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
			r.wd[j] = r.groups[j] < 0 ? -1 : inotify_add_watch(r.groups[j], paths[j],
									   IN_ATTRIB);
			if (r.groups[j] < 0 || r.wd[j] < 0) {
				if (errno == EMFILE)
					bench_skip(b, name, "out of inotify instances (EMFILE): raise "
						   "fs.inotify.max_user_instances or lower --groups");
				else
					bench_fail(b, name, r.W, 0, "set-up: %s", strerror(errno));
				for (int i = 0; i <= j; i++)
					if (r.groups[i] >= 0)
						close(r.groups[i]);
				goto next;
			}
		}
		for (int round = 0; round < warmup + rounds; round++) {
			int m = round - warmup + 1, bad = 0, moved;
			uint64_t ns = 0;
			long other = 0;

			/* Alternate the mask so every call really changes it. */
			r.mask = round % 2 ? IN_ATTRIB : IN_ATTRIB | IN_MODIFY;
			team_start(b, &r.team, r.W, 0, mu_worker, &r);
			team_sync(&r.team);
			team_sync(&r.team);
			moved = team_join(&r.team);
			for (int i = 0; i < r.W; i++) {
				ns += r.ns[i];
				bad += r.bad[i];
			}
			for (int j = 0; j < G; j++) {
				struct raw_drained d;

				raw_drain(r.groups[j], &d);
				other += d.ignored + d.other + d.overflows;
			}
			if (bad || moved || other)
				bench_fail(b, name, r.W, m, "%d updates did not return the watch's wd, "
					   "%d workers off their CPU, %ld events", bad, moved, other);
			if (m > 0)
				bench_record(b, name, r.W, m, "update", (double)ns / G, "ns/watch",
					     !bad && !moved && !other);
		}
		for (int j = 0; j < G; j++)
			close(r.groups[j]);
next:
		free(r.groups);
		free(r.wd);
		free(r.ns);
		free(r.bad);
	}
}

/* ---- tree add ---- */

/* Make a tree of n directories (the root included), breadth first, fanout 10. */
static int make_tree(struct bench *b, const char *root, long n)
{
	char **q = calloc((size_t)n, sizeof(char *));
	long head = 0, tail = 0, made = 1;
	int err = 0;

	if (!q)
		return -ENOMEM;
	q[tail++] = strdup(root);
	while (head < tail && made < n && !err) {
		const char *dir = q[head++];

		for (int c = 0; c < TREE_FANOUT && made < n; c++, made++) {
			char *p;

			if (asprintf(&p, "%s/d%d", dir, c) < 0) {
				err = -ENOMEM;
				break;
			}
			if (mkdir(p, 0700) < 0) {
				err = -errno;
				free(p);
				break;
			}
			q[tail++] = p;
		}
		if (!(made & 1023))
			bench_progress(b, "making the tree: %ld/%ld directories", made, n);
	}
	for (long i = 0; i < tail; i++)
		free(q[i]);
	free(q);
	return err;
}

struct walk {
	int ifd;
	uint32_t mask;
	long watches;
	long syscalls;
	int err;
	char path[4096];
};

/*
 * What a careful program does without a library: openat + getdents (via
 * readdir) per directory, d_type to spot directories, one inotify_add_watch
 * per directory with its full path. No chdir, no stat per entry.
 */
static void walk_add(struct walk *wk, int fd0, size_t len)
{
	DIR *d;
	struct dirent *de;

	wk->syscalls++;
	if (inotify_add_watch(wk->ifd, wk->path, wk->mask | IN_ONLYDIR | IN_DONT_FOLLOW) < 0) {
		if (!wk->err)
			wk->err = errno;
		close(fd0);
		return;
	}
	wk->watches++;
	d = fdopendir(fd0);
	if (!d) {
		close(fd0);
		return;
	}
	while ((de = readdir(d))) {
		bool isdir = de->d_type == DT_DIR;
		size_t nl = strlen(de->d_name);
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			wk->syscalls++;
			isdir = fstatat(fd0, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				S_ISDIR(st.st_mode);
		}
		if (!isdir || len + 1 + nl >= sizeof(wk->path))
			continue;
		wk->syscalls++;
		fd = openat(fd0, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue; /* vanished */
		wk->path[len] = '/';
		memcpy(wk->path + len + 1, de->d_name, nl + 1);
		walk_add(wk, fd, len + 1 + nl);
		wk->path[len] = '\0';
	}
	wk->syscalls += 2; /* getdents64 until empty (at least), close */
	closedir(d);
}

static void tree_round(struct bench *b, const char *variant, const char *root, long D, int m)
{
	struct fsnw_stats st;
	struct fsnw *w = NULL;
	long watches = -1;
	double sys = NAN;
	uint64_t t0, t1;
	int err = 0;
	bool ok;

	if (!strcmp(variant, "tree-raw")) {
		struct walk *wk = calloc(1, sizeof(*wk));
		int fd;

		if (!wk)
			bench_fatal(b, "out of memory");
		wk->mask = TREE_MASK;
		snprintf(wk->path, sizeof(wk->path), "%s", root);
		wk->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (wk->ifd < 0) {
			bench_fail(b, variant, 1, m, "inotify_init1: %s", strerror(errno));
			free(wk);
			return;
		}
		t0 = now_ns();
		fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			walk_add(wk, fd, strlen(wk->path));
		else
			wk->err = errno;
		t1 = now_ns();
		watches = wk->watches;
		err = wk->err;
		sys = (double)(wk->syscalls + 1) / D;
		close(wk->ifd);
		free(wk);
	} else if (!strcmp(variant, "tree-inotifytools")) {
		err = -itools_init();
		if (err) {
			bench_fail(b, variant, 1, m, "inotifytools_initialize: %s", strerror(err));
			return;
		}
		t0 = now_ns();
		err = -itools_watch_tree(root, TREE_MASK);
		t1 = now_ns();
		watches = itools_num_watches();
		itools_cleanup();
	} else {
		uint32_t be = strcmp(variant, "tree-lib-fan") ? FSNW_BACKEND_INOTIFY :
							       FSNW_BACKEND_FANOTIFY;
		int wid;

		err = -lib_open(&w, be, 0, 0, 0);
		if (err) {
			if (be == FSNW_BACKEND_FANOTIFY)
				bench_skip(b, variant, "the library's fanotify backend is unavailable "
					   "(fsnw_open: %s)", strerror(err));
			else
				bench_fail(b, variant, 1, m, "fsnw_open: %s", strerror(err));
			return;
		}
		t0 = now_ns();
		wid = fsnw_add(w, root, TREE_MASK, FSNW_WATCH_TREE);
		t1 = now_ns();
		err = wid < 0 ? -wid : 0;
		lib_stats(w, &st);
		watches = (long)st.kernel_watches;
		sys = (double)lib_syscalls(&st) / D;
		fsnw_close(w);
	}
	/* A fanotify tree reads nothing below its root: one kernel watch. */
	ok = !err && (watches == D || (!strcmp(variant, "tree-lib-fan") && watches == 1));
	if (!ok)
		bench_fail(b, variant, 1, m, "%ld watches for %ld directories (%s)", watches, D,
			   err ? strerror(err) : "no error");
	if (m > 0) {
		bench_record(b, variant, 1, m, "add", (double)(t1 - t0) / 1e6, "ms", ok);
		bench_record(b, variant, 1, m, "per-dir", (double)(t1 - t0) / D, "ns/dir", ok);
		if (!isnan(sys))
			bench_record(b, variant, 1, m, "syscalls", sys, "syscalls/dir", ok);
	}
}

static void run_tree(struct bench *b)
{
	static const char *const names[] = { "tree-raw", "tree-lib", "tree-inotifytools",
					     "tree-lib-fan" };
	char root[4096], why[256];
	long D = b->o->tree_dirs;
	int warmup, rounds, err;
	bool any = false;

	for (int v = 0; v < 4; v++)
		any |= cli_variant_on(b->o, names[v]);
	if (!any)
		return;
	err = bench_mkdir(b, "churn-tree", root, sizeof(root));
	if (!err)
		err = make_tree(b, root, D);
	if (err) {
		bench_fail(b, "tree-raw", 1, 0, "making a tree of %ld directories: %s", D,
			   strerror(-err));
		return;
	}
	bench_rounds(b, cli_pick(b->o, 0, 1, 1, 1), (int)cli_pick(b->o, 2, 5, 5, 5), &warmup,
		     &rounds);
	if (cli_variant_on(b->o, names[2]) && !itools_available(why, sizeof(why)))
		bench_skip(b, names[2], "%s", why);
	if (cli_variant_on(b->o, names[3]) && !lib_fanotify_usable(why, sizeof(why)))
		bench_skip(b, names[3], "%s", why);
	bench_pin_self(b, 0);
	for (int r = 0; r < warmup + rounds; r++)
		for (int v = 0; v < 4; v++) {
			if (!cli_variant_on(b->o, names[v]) ||
			    bench_skipped(b, "churn", names[v]) ||
			    !bench_inotify_room(b, names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", names[v], r + 1, warmup + rounds);
			tree_round(b, names[v], root, D, r - warmup + 1);
		}
	bench_unpin_self(b);
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
	bench_rounds(b, cli_pick(b->o, 1, 1, 2, 2), (int)cli_pick(b->o, 2, 5, 10, 10), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int r = 0; r < warmup + rounds; r++) {
		bench_progress(b, "timing-ab round %d/%d", r + 1, warmup + rounds);
		timing_ab_round(b, file, r - warmup + 1);
	}
	bench_unpin_self(b);
}

void churn_controls(struct bench *b, char **dpaths, long groups)
{
	run_timing_ab(b);
	run_bulk(b);
	if (dpaths)
		run_mask_update(b, dpaths, (int)groups);
	run_tree(b);
}
