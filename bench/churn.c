/* SPDX-License-Identifier: MIT */
/*
 * churn (seed 000): G (watcher, file) pairs, W workers each owning a slice;
 * after a barrier each worker times adding one IN_ATTRIB watch per pair,
 * after another it times removing them. Metric: the sum of every worker's
 * add and remove time over G. Two topologies, alternated per round: G files
 * (`distinct`) and G hard links to one inode kept watched by a keeper
 * (`shared`, no connector is made or destroyed while timed).
 *
 * Variants: raw (G inotify groups), the library (one handle serving G
 * logical watchers: single calls, batch calls, idle cache, timing off,
 * fanotify backend), and the floor any correct library pays, measured
 * directly: `floor` is one inotify_add_watch per add on an inode the group
 * already watches and nothing per remove (dedup, idle cache); `floor-new`
 * is one group adding and removing marks (distinct inodes without a cache).
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "churn.h"
#include "evio.h"
#include "quick.h"
#include "svg.h"
#include "table.h"

static struct churn_opts opt;

#define F(field) offsetof(struct churn_opts, field)
static const struct bench_option options[] = {
	{ .flag = "groups", .arg = "G", .type = OPT_LONG, .off = F(groups), .min = 1,
	  .max = 65536, .preset = { "8", "32", "32", "96" },
	  .help = "(watcher, file) pairs and inotify groups" },
	{ .flag = "workers", .arg = "LIST", .type = OPT_LIST, .off = F(workers), .min = 1,
	  .max = 1024, .preset = { "1..cpus", "1,2,4,8", "1..cpus", "8" },
	  .help = "worker counts" },
	{ .flag = "bulk", .arg = "B", .type = OPT_LONG, .off = F(bulk), .min = 1, .max = 1 << 20,
	  .preset = { "64", "1024", "1024", "1024" },
	  .help = "directories of the bulk control" },
	{ .flag = "tree-dirs", .arg = "D", .type = OPT_LONG, .off = F(tree_dirs), .min = 1,
	  .max = 1 << 22, .preset = { "200", "10000", "10000", "10000" },
	  .help = "directories of the tree, the root included" },
	{ 0 },
};
#undef F

static const char *const variants[] = {
	"raw", "floor", "floor-new", "lib", "lib-batch", "lib-idle", "lib-batch-idle",
	"lib-nostats", "lib-fan", "bulk-raw", "bulk-lib", "bulk-lib-batch", "mask-update",
	"tree-raw", "tree-lib", "tree-inotifytools", "tree-lib-fan", "timing-ab", NULL,
};

enum kind { K_RAW, K_FLOOR, K_FLOOR_NEW, K_LIB, K_LIB_BATCH };

struct cvariant {
	const char *name;
	enum kind kind;
	bool idle;
	uint32_t flags;   /* FSNW_OPEN_* */
	uint32_t backend; /* FSNW_BACKEND_* */
};

static const struct cvariant cvariants[] = {
	{ "raw", K_RAW, false, 0, 0 },
	{ "floor", K_FLOOR, false, 0, 0 },
	{ "floor-new", K_FLOOR_NEW, false, 0, 0 },
	{ "lib", K_LIB, false, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-batch", K_LIB_BATCH, false, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-idle", K_LIB, true, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-batch-idle", K_LIB_BATCH, true, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-nostats", K_LIB, false, FSNW_OPEN_NO_STATS, FSNW_BACKEND_INOTIFY },
	{ "lib-fan", K_LIB, false, 0, FSNW_BACKEND_FANOTIFY },
};
#define NVARIANTS (sizeof(cvariants) / sizeof(cvariants[0]))

enum { DISTINCT, SHARED, NTOPO };
static const char *const topo_name[NTOPO] = { "distinct", "shared" };

/* The state of one (variant, topology), alive across the rounds. */
struct cstate {
	int topo;
	char **path;        /* G paths: files, or links to one inode */
	const char *target; /* shared: the inode the links name */
	int *groups;        /* raw: the G groups (one set for both topologies) */
	int keeper;         /* raw shared: the keeper group */
	int fg;             /* floor, floor-new: the one group */
	int *expect;        /* floor: the wd each add must return */
	int *wd;            /* raw, floor-new: this round's wds */
	struct fsnw *w;
	int keeper_wid;
	int *wid;
	int *res;
	struct fsnw_batch_item *items;
	uint64_t base_kernel;  /* kernel watches after a round */
	uint64_t base_logical; /* logical watches after a round */
	uint64_t base_parked;
};

struct cround {
	struct team team;
	const struct cvariant *v;
	struct cstate *s;
	int G, W;
	uint64_t *add_ns, *rm_ns;
	int *bad, *err;
};

static void churn_worker(struct team *t, int idx)
{
	struct cround *r = t->arg;
	struct cstate *s = r->s;
	int lo = (int)((long)idx * r->G / r->W), hi = (int)((long)(idx + 1) * r->G / r->W);
	int bad = 0, err = 0;
	uint64_t t0;

	team_sync(t); /* go: add */
	t0 = now_ns();
	switch (r->v->kind) {
	case K_RAW:
		for (int j = lo; j < hi; j++) {
			s->wd[j] = inotify_add_watch(s->groups[j], s->path[j], IN_ATTRIB);
			if (s->wd[j] < 0 && !bad++)
				err = errno;
		}
		break;
	case K_FLOOR:
		for (int j = lo; j < hi; j++) {
			int wd = inotify_add_watch(s->fg, s->path[j], IN_ATTRIB | IN_MASK_ADD);

			if (wd != s->expect[j] && !bad++)
				err = wd < 0 ? errno : EEXIST;
		}
		break;
	case K_FLOOR_NEW:
		for (int j = lo; j < hi; j++) {
			s->wd[j] = inotify_add_watch(s->fg, s->path[j], IN_ATTRIB);
			if (s->wd[j] < 0 && !bad++)
				err = errno;
		}
		break;
	case K_LIB:
		for (int j = lo; j < hi; j++) {
			s->wid[j] = fsnw_add(s->w, s->path[j], FSNW_ATTRIB, 0);
			if (s->wid[j] <= 0 && !bad++)
				err = -s->wid[j];
		}
		break;
	case K_LIB_BATCH: {
		int ok = fsnw_add_batch(s->w, s->items + lo, (size_t)(hi - lo), 0);

		for (int j = lo; j < hi; j++) {
			s->wid[j] = s->items[j].result;
			if (s->wid[j] <= 0 && !bad++)
				err = -s->wid[j];
		}
		if (ok != hi - lo && !bad++)
			err = ok < 0 ? -ok : EIO;
		break;
	}
	}
	r->add_ns[idx] = now_ns() - t0;
	team_sync(t); /* adds done */
	team_sync(t); /* go: remove */
	t0 = now_ns();
	switch (r->v->kind) {
	case K_RAW:
		for (int j = lo; j < hi; j++)
			if (s->wd[j] >= 0 && inotify_rm_watch(s->groups[j], s->wd[j]) < 0 && !bad++)
				err = errno;
		break;
	case K_FLOOR:
		break; /* a non-last remove, or a remove into the idle cache: no syscall */
	case K_FLOOR_NEW:
		for (int j = lo; j < hi; j++)
			if (s->wd[j] >= 0 && inotify_rm_watch(s->fg, s->wd[j]) < 0 && !bad++)
				err = errno;
		break;
	case K_LIB:
		for (int j = lo; j < hi; j++) {
			int ret = s->wid[j] > 0 ? fsnw_remove(s->w, s->wid[j]) : 0;

			if (ret < 0 && !bad++)
				err = -ret;
		}
		break;
	case K_LIB_BATCH: {
		int ok = fsnw_remove_batch(s->w, s->wid + lo, (size_t)(hi - lo), s->res + lo);

		if (ok != hi - lo && !bad++)
			err = ok < 0 ? -ok : EIO;
		break;
	}
	}
	r->rm_ns[idx] = now_ns() - t0;
	r->bad[idx] = bad;
	r->err[idx] = err;
	team_sync(t); /* removes done */
}

static bool is_lib(const struct cvariant *v)
{
	return v->kind == K_LIB || v->kind == K_LIB_BATCH;
}

/* After a round: every removed watch left exactly one IN_IGNORED, nothing else came. */
static bool check_raw(struct bench *b, const struct cvariant *v, struct cstate *s, int G, int W,
		      int round)
{
	struct raw_drained d;
	long ignored = 0, other = 0, over = 0;

	if (v->kind == K_RAW) {
		for (int j = 0; j < G; j++) {
			raw_drain(s->groups[j], &d);
			ignored += d.ignored;
			other += d.other;
			over += d.overflows;
		}
		if (s->topo == SHARED) {
			raw_drain(s->keeper, &d);
			other += d.ignored + d.other;
			over += d.overflows;
		}
	} else {
		raw_drain(s->fg, &d);
		ignored = d.ignored;
		other = d.other;
		over = d.overflows;
	}
	long want = v->kind == K_FLOOR ? 0 : G;

	if (ignored != want || other || over) {
		bench_fail(b, v->name, W, round,
			   "%s: %ld IN_IGNORED (expected %ld), %ld other events, %ld overflows",
			   topo_name[s->topo], ignored, want, other, over);
		return false;
	}
	return true;
}

static bool check_lib(struct bench *b, const struct cvariant *v, struct cstate *s, int W,
		      int round, const struct fsnw_stats *st0)
{
	struct fsnw_stats st;
	struct fsnw_event ev[8];
	uint64_t read, removed;
	int n, pumped = fsnw_pump(s->w);

	if (pumped < 0 || lib_stats(s->w, &st) < 0) {
		bench_fail(b, v->name, W, round, "fsnw_pump/fsnw_get_stats failed");
		return false;
	}
	n = fsnw_read(s->w, ev, 8, 0);
	if (n != 0) {
		bench_fail(b, v->name, W, round, "%s: fsnw_read returned %d, expected no event",
			   topo_name[s->topo], n);
		return false;
	}
	if (st.logical_watches != s->base_logical || st.kernel_watches != s->base_kernel ||
	    st.parked_watches != s->base_parked) {
		bench_fail(b, v->name, W, round,
			   "%s: %llu logical, %llu kernel, %llu parked watches after the round "
			   "(expected %llu, %llu, %llu)",
			   topo_name[s->topo], (unsigned long long)st.logical_watches,
			   (unsigned long long)st.kernel_watches,
			   (unsigned long long)st.parked_watches,
			   (unsigned long long)s->base_logical, (unsigned long long)s->base_kernel,
			   (unsigned long long)s->base_parked);
		return false;
	}
	if (st.overflows_kernel != st0->overflows_kernel ||
	    st.overflows_queue != st0->overflows_queue) {
		bench_fail(b, v->name, W, round, "%s: overflow", topo_name[s->topo]);
		return false;
	}
	/* inotify: each of our removes leaves one IN_IGNORED, and nothing else
	 * may have come from the kernel. */
	read = st.events_read - st0->events_read;
	removed = st.sys_inotify_rm_watch - st0->sys_inotify_rm_watch;
	if (v->backend == FSNW_BACKEND_INOTIFY && read != removed) {
		bench_fail(b, v->name, W, round,
			   "%s: %llu kernel events read for %llu inotify_rm_watch calls",
			   topo_name[s->topo], (unsigned long long)read,
			   (unsigned long long)removed);
		return false;
	}
	return true;
}

struct cresult {
	double ns, add, rm, sys;
	bool ok;
};

static struct cresult churn_round(struct bench *b, const struct cvariant *v, struct cstate *s,
				  int G, int W, int round)
{
	struct cround r = { .v = v, .s = s, .G = G, .W = W };
	struct fsnw_stats st0, st1;
	struct cresult res = { .ok = true };
	uint64_t add = 0, rm = 0;
	int bad = 0, err = 0, moved;

	r.add_ns = calloc((size_t)W, sizeof(uint64_t));
	r.rm_ns = calloc((size_t)W, sizeof(uint64_t));
	r.bad = calloc((size_t)W, sizeof(int));
	r.err = calloc((size_t)W, sizeof(int));
	if (!r.add_ns || !r.rm_ns || !r.bad || !r.err)
		bench_fatal(b, "out of memory");
	if (is_lib(v))
		lib_stats(s->w, &st0);
	team_start(b, &r.team, W, 0, churn_worker, &r);
	team_sync(&r.team); /* go: add */
	team_sync(&r.team); /* adds done */
	team_sync(&r.team); /* go: remove */
	team_sync(&r.team); /* removes done */
	if (is_lib(v))
		lib_stats(s->w, &st1);
	moved = team_join(&r.team);
	for (int i = 0; i < W; i++) {
		add += r.add_ns[i];
		rm += r.rm_ns[i];
		if (r.bad[i] && !bad)
			err = r.err[i];
		bad += r.bad[i];
	}
	res.add = (double)add / G;
	res.rm = (double)rm / G;
	res.ns = (double)(add + rm) / G;
	switch (v->kind) {
	case K_RAW:
	case K_FLOOR_NEW:
		res.sys = 2;
		break;
	case K_FLOOR:
		res.sys = 1;
		break;
	default:
		res.sys = (double)(lib_syscalls(&st1) - lib_syscalls(&st0)) / G;
	}
	if (bad) {
		bench_fail(b, v->name, W, round, "%s: %d adds or removes failed (first: %s)",
			   topo_name[s->topo], bad, strerror(err));
		res.ok = false;
	}
	if (moved) {
		bench_fail(b, v->name, W, round, "affinity: %d workers ended off their CPU", moved);
		res.ok = false;
	}
	if (is_lib(v))
		res.ok &= check_lib(b, v, s, W, round, &st0);
	else
		res.ok &= check_raw(b, v, s, G, W, round);
	free(r.add_ns);
	free(r.rm_ns);
	free(r.bad);
	free(r.err);
	return res;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; fds && i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int *open_groups(int n)
{
	int *fds = malloc((size_t)n * sizeof(*fds));

	if (!fds)
		return NULL;
	for (int i = 0; i < n; i++) {
		fds[i] = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (fds[i] < 0) {
			int err = errno;

			close_fds(fds, i);
			free(fds);
			errno = err;
			return NULL;
		}
	}
	return fds;
}

/* The raw groups are not the state's: run_variant opens and closes them. */
static void state_free(struct cstate *s)
{
	if (s->keeper >= 0)
		close(s->keeper);
	if (s->fg >= 0)
		close(s->fg);
	fsnw_close(s->w);
	free(s->expect);
	free(s->wd);
	free(s->wid);
	free(s->res);
	free(s->items);
	memset(s, 0, sizeof(*s));
	s->keeper = s->fg = -1;
}

/* Set a state up; 1 ready, 0 skipped (reason recorded), -1 failed. */
static int state_init(struct bench *b, const struct cvariant *v, struct cstate *s, int topo,
		      char **path, const char *target, int *groups, int G)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->keeper = s->fg = -1;
	s->topo = topo;
	s->path = path;
	s->target = target;
	s->groups = groups;
	s->wd = calloc((size_t)G, sizeof(int));
	s->wid = calloc((size_t)G, sizeof(int));
	s->res = calloc((size_t)G, sizeof(int));
	s->expect = calloc((size_t)G, sizeof(int));
	s->items = calloc((size_t)G, sizeof(*s->items));
	if (!s->wd || !s->wid || !s->res || !s->expect || !s->items)
		return -1;
	for (int j = 0; j < G; j++) {
		s->items[j].path = path[j];
		s->items[j].mask = FSNW_ATTRIB;
	}
	switch (v->kind) {
	case K_RAW:
		if (topo == SHARED) {
			s->keeper = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
			if (s->keeper < 0 || inotify_add_watch(s->keeper, target, IN_ATTRIB) < 0)
				goto sys_fail;
		}
		return 1;
	case K_FLOOR:
	case K_FLOOR_NEW:
		s->fg = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		if (s->fg < 0)
			goto sys_fail;
		if (v->kind == K_FLOOR_NEW)
			return 1;
		/* The floor adds to inodes this group already watches. */
		for (int j = 0; j < G; j++) {
			s->expect[j] = inotify_add_watch(s->fg, topo == SHARED ? target : path[j],
							 IN_ATTRIB);
			if (s->expect[j] < 0)
				goto sys_fail;
		}
		return 1;
	case K_LIB:
	case K_LIB_BATCH:
		err = lib_open(&s->w, v->backend, v->flags, 0, v->idle ? (uint32_t)G : 0);
		if (err < 0) {
			if (v->backend == FSNW_BACKEND_FANOTIFY) {
				bench_skip(b, v->name, "the library's fanotify backend is unavailable "
					   "(fsnw_open: %s)", strerror(-err));
				return 0;
			}
			errno = -err;
			goto sys_fail;
		}
		if (topo == SHARED) {
			s->keeper_wid = fsnw_add(s->w, target, FSNW_ATTRIB, 0);
			if (s->keeper_wid <= 0) {
				errno = -s->keeper_wid;
				goto sys_fail;
			}
		}
		s->base_logical = topo == SHARED;
		s->base_kernel = topo == SHARED ? 1 : (v->idle ? (uint64_t)G : 0);
		s->base_parked = topo == SHARED ? 0 : (v->idle ? (uint64_t)G : 0);
		return 1;
	}
	return -1;
sys_fail:
	if (errno == EMFILE) {
		bench_skip(b, v->name, "out of inotify instances (EMFILE): raise "
			   "fs.inotify.max_user_instances or lower --groups");
		return 0;
	}
	bench_fail(b, v->name, 0, 0, "set-up: %s", strerror(errno));
	return -1;
}

/* The directory of G files and the directory of G links to one file. */
static int make_topologies(struct bench *b, int G, char ***dpath, char ***spath, char *target,
			   size_t tlen)
{
	char ddir[4000], sdir[4000];
	int err = bench_mkdir(b, "churn-distinct", ddir, sizeof(ddir));

	if (!err)
		err = bench_mkdir(b, "churn-shared", sdir, sizeof(sdir));
	if (err)
		return err;
	err = bench_make_files(b, ddir, "f", G, 0);
	if (err)
		return err;
	snprintf(target, tlen, "%s/target", sdir);
	{
		int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);

		if (fd < 0)
			return -errno;
		close(fd);
	}
	*dpath = calloc((size_t)G, sizeof(char *));
	*spath = calloc((size_t)G, sizeof(char *));
	if (!*dpath || !*spath)
		return -ENOMEM;
	for (int j = 0; j < G; j++) {
		if (asprintf(&(*dpath)[j], "%s/f%d", ddir, j) < 0 ||
		    asprintf(&(*spath)[j], "%s/l%d", sdir, j) < 0)
			return -ENOMEM;
		if (link(target, (*spath)[j]) < 0)
			return -errno;
	}
	return err;
}

static void free_paths(char **p, int n)
{
	for (int j = 0; p && j < n; j++)
		free(p[j]);
	free(p);
}

/* One pass of one variant at one worker count: set up, warm up, `rounds`
 * measured rounds numbered from first + 1, tear down. */
static void run_variant(struct bench *b, const struct cvariant *v, int G, int W, char **dpath,
			char **spath, const char *target, int warmup, int rounds, int first)
{
	struct cstate st[NTOPO];
	bool have[NTOPO] = { false, false };
	int *groups = NULL;
	int ready;

	if (v->kind == K_RAW) {
		if (!bench_inotify_room(b, v->name, G + 1))
			return;
		groups = open_groups(G);
		if (!groups) {
			if (errno == EMFILE)
				bench_skip(b, v->name, "out of inotify instances (EMFILE): raise "
					   "fs.inotify.max_user_instances or lower --groups");
			else
				bench_fail(b, v->name, W, 0, "inotify_init1: %s", strerror(errno));
			return;
		}
	} else if (!bench_inotify_room(b, v->name, 2)) {
		return;
	}
	for (int t = 0; t < NTOPO; t++) {
		if (v->kind == K_FLOOR_NEW && t == SHARED)
			continue; /* the shared floor is `floor`: marks stay */
		ready = state_init(b, v, &st[t], t, t == SHARED ? spath : dpath, target, groups, G);
		if (ready <= 0) {
			state_free(&st[t]);
			for (int u = 0; u < t; u++)
				if (have[u])
					state_free(&st[u]);
			close_fds(groups, G);
			free(groups);
			return;
		}
		have[t] = true;
	}
	for (int round = 0; round < warmup + rounds; round++) {
		/* The measured round's number, <= 0 while warming up. */
		int m = round < warmup ? round - warmup + 1 : first + round - warmup + 1;
		struct cresult res[NTOPO];

		bench_progress(b, "%s W=%d round %d", v->name, W, m);
		/* Alternate which topology goes first, as the seed does. */
		for (int k = 0; k < NTOPO; k++) {
			int t = round % 2 ? NTOPO - 1 - k : k;

			if (have[t])
				res[t] = churn_round(b, v, &st[t], G, W, m);
		}
		if (m <= 0)
			continue;
		for (int t = 0; t < NTOPO; t++) {
			char metric[40];

			if (!have[t])
				continue;
			bench_record(b, v->name, W, m, topo_name[t], res[t].ns, "ns/watch",
				     res[t].ok);
			snprintf(metric, sizeof(metric), "%s.add", topo_name[t]);
			bench_record(b, v->name, W, m, metric, res[t].add, "ns/watch", res[t].ok);
			snprintf(metric, sizeof(metric), "%s.remove", topo_name[t]);
			bench_record(b, v->name, W, m, metric, res[t].rm, "ns/watch", res[t].ok);
			snprintf(metric, sizeof(metric), "%s.syscalls", topo_name[t]);
			bench_record(b, v->name, W, m, metric, res[t].sys, "syscalls/watch",
				     res[t].ok);
		}
		if (have[DISTINCT] && have[SHARED])
			bench_record(b, v->name, W, m, "distinct/shared",
				     res[DISTINCT].ns / res[SHARED].ns, "ratio",
				     res[DISTINCT].ok && res[SHARED].ok);
	}
	for (int t = 0; t < NTOPO; t++)
		if (have[t])
			state_free(&st[t]);
	close_fds(groups, G);
	free(groups);
}

static const struct cvariant *cvariant(const char *name)
{
	for (size_t i = 0; i < NVARIANTS; i++)
		if (!strcmp(cvariants[i].name, name))
			return &cvariants[i];
	return NULL;
}

/* Which measured floor bounds a library variant on a topology. */
static const char *floor_for(const struct cvariant *v, int topo)
{
	if (topo == SHARED || v->idle)
		return "floor";
	return "floor-new";
}

static void churn_summary(struct bench *b, int G)
{
	const char *heads[] = { "variant", "topology", "workers", "raw ns/w", "lib ns/w",
				"lib/raw", "floor", "floor ns/w", "raw/lib", "raw/floor",
				"of floor", "lib sys/w", "floor sys/w" };
	const struct long_list *wl = &opt.workers;
	struct table t;
	char a[32], c[32], d[32];

	table_init(&t, "lllrrrlrrrrrr", heads);
	for (size_t i = 0; i < NVARIANTS; i++) {
		const struct cvariant *v = &cvariants[i];

		if (!is_lib(v))
			continue;
		for (int topo = 0; topo < NTOPO; topo++)
			for (int k = 0; k < wl->n; k++) {
				long W = wl->v[k];
				char sm[40];
				const char *fl = floor_for(v, topo);
				double raw = bench_median(b, "churn", "raw", W, topo_name[topo]);
				double lib = bench_median(b, "churn", v->name, W, topo_name[topo]);
				double flo = bench_median(b, "churn", fl, W, topo_name[topo]);

				snprintf(sm, sizeof(sm), "%s.syscalls", topo_name[topo]);
				if (isnan(lib))
					continue;
				table_cell(&t, "%s", v->name);
				table_cell(&t, "%s", topo_name[topo]);
				table_cell(&t, "%ld", W);
				table_cell(&t, "%s", fmt_num(a, sizeof(a), raw));
				table_cell(&t, "%s", fmt_num(c, sizeof(c), lib));
				table_cell(&t, "%s", fmt_num(d, sizeof(d), lib / raw));
				table_cell(&t, "%s", fl);
				table_cell(&t, "%s", fmt_num(a, sizeof(a), flo));
				table_cell(&t, "%s", fmt_num(c, sizeof(c), raw / lib));
				table_cell(&t, "%s", fmt_num(d, sizeof(d), raw / flo));
				/* (raw/lib) / (raw/floor): how much of the floor's speedup the
				 * library gets; 1.0 is as good as any correct library can be. */
				table_cell(&t, "%s", fmt_num(a, sizeof(a), flo / lib));
				lib = bench_median(b, "churn", v->name, W, sm);
				flo = bench_median(b, "churn", fl, W, sm);
				table_cell(&t, "%s", fmt_num(c, sizeof(c), lib));
				table_cell(&t, "%s", fmt_num(d, sizeof(d), flo));
			}
	}
	if (t.nrows) {
		printf("\n-- churn: library vs raw vs floor (medians, G=%d; ns/w = aggregate worker "
		       "ns per watch; of floor = (raw/lib)/(raw/floor)) --\n", G);
		table_print(&t, stdout);
	}
	table_free(&t);
	for (int k = 0; k < wl->n; k++)
		if (bench_oversubscribed(b, wl->v[k]))
			printf("workers %ld: more than the %d CPU%s the workers may use: they take "
			       "turns (oversubscribed)\n", wl->v[k], bench_cpus(b),
			       bench_cpus(b) == 1 ? "" : "s");
	for (int k = 0; k < wl->n; k++) {
		long W = wl->v[k];
		double on = bench_median(b, "churn", "lib", W, "distinct");
		double off = bench_median(b, "churn", "lib-nostats", W, "distinct");
		double son = bench_median(b, "churn", "lib", W, "shared");
		double soff = bench_median(b, "churn", "lib-nostats", W, "shared");

		if (!isnan(on) && !isnan(off))
			printf("timing on vs off (lib / lib-nostats), W=%ld: distinct %+.2f%%, "
			       "shared %+.2f%% (target within 3%%)\n", W, (on / off - 1) * 100,
			       (son / soff - 1) * 100);
	}
}

static void churn_charts(struct bench *b)
{
	const struct long_list *wl = &opt.workers;

	for (int topo = 0; topo < NTOPO; topo++) {
		char title[128];
		struct chart *c;

		snprintf(title, sizeof(title), "churn, %s %s: aggregate worker time per watch",
			 topo_name[topo], topo == SHARED ? "(hard links to one inode)" : "inodes");
		c = chart_new(title, "worker threads", "ns per watch (add + remove)", false, false);
		for (size_t i = 0; i < NVARIANTS; i++)
			for (int k = 0; k < wl->n; k++)
				chart_point(c, cvariants[i].name, (double)wl->v[k],
					    bench_median(b, "churn", cvariants[i].name, wl->v[k],
							 topo_name[topo]));
		if (c && c->nseries)
			bench_add_chart(b, c);
		else
			chart_free(c);
	}
}

static int churn_run(struct bench *b)
{
	int G = (int)opt.groups;
	char **dpath = NULL, **spath = NULL, target[4096];
	int err, warmup, rounds, passes;

	bench_begin(b, "churn", "workers");
	err = make_topologies(b, G, &dpath, &spath, target, sizeof(target));
	if (err) {
		bench_fail(b, "setup", 0, 0, "making %d files and links: %s", G, strerror(-err));
		goto out;
	}
	bench_rounds(b, bench_pick(b, 1, 2, 2, 2), (int)bench_pick(b, 3, 24, 25, 25), &warmup,
		     &rounds);
	/* The rounds of each variant are spread over passes through all the
	 * variants, so a busy stretch of the machine does not land on one. */
	passes = rounds >= 9 ? 3 : 1;
	for (int k = 0; k < opt.workers.n; k++) {
		int W = (int)opt.workers.v[k];

		if (W > G) {
			fprintf(stderr, "churn: skipping W=%d: more workers than groups (%d)\n", W,
				G);
			continue;
		}
		for (int p = 0, done = 0; p < passes; p++) {
			int n = (rounds - done) / (passes - p);

			for (size_t i = 0; i < NVARIANTS; i++)
				if (cli_variant_on(b->o, cvariants[i].name) &&
				    !bench_skipped(b, "churn", cvariants[i].name))
					run_variant(b, &cvariants[i], G, W, dpath, spath, target,
						    warmup, n, done);
			done += n;
		}
	}
	churn_controls(b, &opt, dpath);
out:
	free_paths(dpath, G);
	free_paths(spath, G);
	churn_charts(b);
	{
		bool tables = b->tables;

		bench_end(b);
		if (tables)
			churn_summary(b, G);
	}
	return 0;
}

/* The largest worker count that is not oversubscribed (the smallest if all are). */
static long widest_fit(const struct bench *b)
{
	long w = opt.workers.v[0];

	for (int k = 0; k < opt.workers.n; k++)
		if (!bench_oversubscribed(b, opt.workers.v[k]) && opt.workers.v[k] > w)
			w = opt.workers.v[k];
	return w;
}

static void churn_quick(struct bench *b, struct quick *q)
{
	static const char *const libs[] = { "lib", "lib-batch", "lib-idle" };
	const struct long_list *wl = &opt.workers;
	char label[128], wl_label[64], sm[40];

	quick_row(q, "churn 1:1 add+remove, 1 thread", "ns/watch",
		  quick_need(q, "bulk-raw", 1, "add+remove"), NAN,
		  quick_need(q, "bulk-lib", 1, "add+remove"), NAN,
		  "%ld dirs, one group; batch calls %.0f; target ratio <= 1.10", opt.bulk,
		  quick_need(q, "bulk-lib-batch", 1, "add+remove"));
	quick_row(q, "  same, + reading the IN_IGNOREDs", "ns/watch",
		  quick_need(q, "bulk-raw", 1, "add+remove+drain"), NAN,
		  quick_need(q, "bulk-lib", 1, "add+remove+drain"), NAN,
		  "the library reads them during the removes; raw reads them after");
	for (int topo = 0; topo < NTOPO; topo++)
		for (int k = 0; k < wl->n; k++)
			for (int v = 0; v < 3; v++) {
				long W = wl->v[k];
				const char *fl = floor_for(cvariant(libs[v]), topo);
				double raw = quick_need(q, "raw", W, topo_name[topo]);
				double lib = quick_need(q, libs[v], W, topo_name[topo]);
				double flo = quick_need(q, fl, W, topo_name[topo]);

				snprintf(label, sizeof(label), "churn %s %s %s", topo_name[topo],
					 bench_workers_label(b, "W", W, wl_label, sizeof(wl_label)),
					 libs[v]);
				snprintf(sm, sizeof(sm), "%s.syscalls", topo_name[topo]);
				quick_row(q, label, "ns/watch", raw, NAN, lib, lib / flo,
					  "%s %.0f ns: gets %.2f of its speedup; syscalls/watch "
					  "%.2f (floor %.2f)", fl, flo, flo / lib,
					  quick_need(q, libs[v], W, sm), quick_need(q, fl, W, sm));
			}
	/* Timing on vs off, the two handles taking turns in blocks within each
	 * round (timing-ab): separate runs drift by more than the difference. */
	{
		double off = quick_need(q, "timing-ab", 1, "shared.off");
		double on = quick_need(q, "timing-ab", 1, "shared.on");

		quick_row(q, "churn timing on vs off, W=1 distinct", "ns/watch",
			  quick_need(q, "timing-ab", 1, "distinct.off"), NAN,
			  quick_need(q, "timing-ab", 1, "distinct.on"), NAN,
			  "raw col. = FSNW_OPEN_NO_STATS, interleaved; shared: off %.0f, on %.0f "
			  "(%+.1f%%); target within 3%%", off, on, (on / off - 1) * 100);
	}
	{
		double it = quick_need(q, "tree-inotifytools", 1, "add");
		double lib = quick_need(q, "tree-lib", 1, "add");

		snprintf(label, sizeof(label), "tree add, %ld dirs", opt.tree_dirs);
		quick_row(q, label, "ms", quick_need(q, "tree-raw", 1, "add"), it, lib, NAN,
			  "libinotifytools/lib %.2f (target >= 2); target lib/raw <= 1.15; "
			  "fanotify: %s", it / lib,
			  bench_skipped(b, "churn", "tree-lib-fan") ? "skipped" : "measured");
	}
	snprintf(label, sizeof(label), "mask-update %s (kernel control)",
		 bench_workers_label(b, "W", widest_fit(b), wl_label, sizeof(wl_label)));
	quick_row(q, label, "ns/watch", quick_need(q, "mask-update", widest_fit(b), "update"), NAN,
		  NAN, NAN, "no library equivalent");
}

BENCH_SCENARIO(churn) = {
	.name = "churn",
	.order = 0,
	.summary = "watch add/remove churn (seed 000), bulk, mask-update, tree add",
	.flags = SCEN_MEASURES | SCEN_ROUNDS | SCEN_CHARTS,
	.run = churn_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = churn_quick,
};
