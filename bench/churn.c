/* SPDX-License-Identifier: MIT */
/*
 * churn (the report of a slowdown after 94bd01253c3d, "fsnotify: Track inode
 * connectors for a superblock"): G (watcher, file) pairs, W workers each owning a slice.
 * As in the report's reproducer, every round (and topology) is a process of
 * its own that builds a fresh fixture (files or links, groups, keeper:
 * churnfix.h); its W pinned workers meet at one barrier of their own (the
 * thread that started them is not in it), each times adding one IN_ATTRIB
 * watch per pair, meets the others at the same barrier, times removing
 * them, and meets them once more before it ends. Metric: the sum of every
 * worker's add and remove time over G. Two topologies per round in
 * alternating order: G files (`distinct`) and G hard links to one inode
 * kept watched by a keeper (`shared`, no connector is made or destroyed
 * while timed).
 *
 * A library worker first makes one untimed add and remove onto a watch the
 * handle already holds (the keeper's inode, or the fixture's directory), as
 * a daemon's long-lived thread has: a new thread's first library call pays
 * for a malloc arena, first-touch heap pages and its io_uring ring (100-300
 * us here), which would otherwise be most of a small round. That call is
 * timed on its own (`first`, ns a worker), and the syscall count starts
 * after it. Before the workers start, the handle is primed as one that has
 * churned before (prime_handle): its record caches hold the round's records.
 *
 * Variants: raw (G inotify groups); raw-warm (the same in one process, with
 * the fixture, groups and keeper kept across the rounds of a pass: the
 * method before the bench followed the reproducer, whose removes come out cheaper); the library
 * (one handle serving G logical watchers: single calls, batch calls, idle
 * cache, timing off, fanotify backend), and the floor any correct library
 * pays, measured
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
#include "churnfix.h"
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
	/* One worker per CPU, as the reproducer: more only when asked (quick asks). */
	{ .flag = "workers", .arg = "LIST", .type = OPT_LIST, .off = F(workers), .min = 1,
	  .max = 1024, .preset = { "1..cpus", "1,2,4,8", "1..cpus", "cpus" },
	  .help = "worker counts" },
	{ .flag = "oversubscribe", .type = OPT_FLAG, .off = F(oversubscribe),
	  .help = "with --cpus, run more workers than it lists (round robin, labelled)" },
	{ .flag = "bulk", .arg = "B", .type = OPT_LONG, .off = F(bulk), .min = 1, .max = 1 << 20,
	  .preset = { "64", "1024", "1024", "1024" },
	  .help = "directories of the bulk control" },
	{ .flag = "control-calls", .arg = "N", .type = OPT_LONG, .off = F(control_calls),
	  .min = 1, .max = 1 << 24, .preset = { "64", "1024", "1024", "1024" },
	  .help = "calls a round of mask-update and path-lookup" },
	{ .flag = "tree-dirs", .arg = "D", .type = OPT_LONG, .off = F(tree_dirs), .min = 1,
	  .max = 1 << 22, .preset = { "200", "10000", "10000", "10000" },
	  .help = "directories of the tree, the root included" },
	{ .flag = "tree-path", .arg = "DIR", .type = OPT_STR, .off = F(tree_path),
	  .help = "a tree of your own to add and weigh too (only read)" },
	{ 0 },
};
#undef F

static const char *const variants[] = {
	"raw", "raw-warm", "floor", "floor-new", "lib", "lib-batch", "lib-idle",
	"lib-batch-idle", "lib-nostats", "lib-fan", "bulk-raw", "bulk-lib", "bulk-lib-batch", "bulk-lib-reserve",
	"mask-update", "path-lookup", "tree-raw", "tree-lib", "tree-inotifytools",
	"tree-lib-fan", "tree-libuv", "tree-raw-fd", "timing-ab", NULL,
};

enum kind { K_RAW, K_FLOOR, K_FLOOR_NEW, K_LIB, K_LIB_BATCH };

struct cvariant {
	const char *name;
	enum kind kind;
	bool warm;        /* the fixture and groups live across the rounds of a pass */
	bool idle;
	uint32_t flags;   /* FSNW_OPEN_* */
	uint32_t backend; /* FSNW_BACKEND_* */
};

static const struct cvariant cvariants[] = {
	{ "raw", K_RAW, false, false, 0, 0 },
	{ "raw-warm", K_RAW, true, false, 0, 0 },
	{ "floor", K_FLOOR, false, false, 0, 0 },
	{ "floor-new", K_FLOOR_NEW, false, false, 0, 0 },
	{ "lib", K_LIB, false, false, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-batch", K_LIB_BATCH, false, false, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-idle", K_LIB, false, true, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-batch-idle", K_LIB_BATCH, false, true, 0, FSNW_BACKEND_INOTIFY },
	{ "lib-nostats", K_LIB, false, false, FSNW_OPEN_NO_STATS, FSNW_BACKEND_INOTIFY },
	{ "lib-fan", K_LIB, false, false, 0, FSNW_BACKEND_FANOTIFY },
};
#define NVARIANTS (sizeof(cvariants) / sizeof(cvariants[0]))

/* The state of one (variant, topology): one round, or the rounds of a pass (warm). */
struct cstate {
	int topo;
	struct fixture fx;
	char **path;        /* G paths: files, or links to one inode (fx's) */
	const char *target; /* shared: the inode the links name */
	int *groups;        /* raw: the G groups */
	bool own_groups;    /* opened for this state (raw-warm shares one set) */
	int keeper;         /* raw shared: the keeper group */
	int keeper_wd;
	int fg;             /* floor, floor-new: the one group */
	int *expect;        /* floor: the wd each add must return */
	int *wd;            /* raw, floor-new: this round's wds */
	struct fsnw *w;
	int keeper_wid;     /* lib: shared, the target's; distinct, the fixture directory's */
	const char *warm;   /* lib: the path of the workers' untimed first call */
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
	uint64_t *add_ns, *rm_ns, *first_ns;
	long *faults; /* page faults each worker took from its adds to its removes' end */
	int *bad, *err;
	struct fsnw_stats st0; /* lib: taken by worker 0 after the first calls */
};

/*
 * A library worker's untimed first call: an add onto the keeper's watch
 * and its remove (no kernel mark made or destroyed), then, once all have
 * made theirs, worker 0 takes the stats the round counts from.
 */
static void lib_first_call(struct team *t, struct cround *r, int idx)
{
	struct cstate *s = r->s;
	uint64_t t0 = now_ns();
	int wid = fsnw_add(s->w, s->warm, FSNW_ATTRIB, 0);

	if (wid <= 0 || (wid = fsnw_remove(s->w, wid)) < 0) {
		r->bad[idx]++;
		r->err[idx] = wid < 0 ? -wid : EIO;
	}
	r->first_ns[idx] = now_ns() - t0;
	team_sync_peers(t);
	if (idx == 0)
		lib_stats(s->w, &r->st0);
}

static void churn_worker(struct team *t, int idx)
{
	struct cround *r = t->arg;
	struct cstate *s = r->s;
	int lo = (int)((long)idx * r->G / r->W), hi = (int)((long)(idx + 1) * r->G / r->W);
	int bad = 0, err = 0;
	uint64_t t0;

	if (r->v->kind == K_LIB || r->v->kind == K_LIB_BATCH)
		lib_first_call(t, r, idx);
	/* One barrier of the workers only, waited before, between and after the
	 * two timed phases (the reproducer's topology_worker). */
	team_sync_peers(t);
	r->faults[idx] = -thread_faults();
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
	team_sync_peers(t);
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
	r->faults[idx] += thread_faults();
	r->bad[idx] += bad;
	if (bad)
		r->err[idx] = err;
	team_sync_peers(t);
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
		/* A fresh keeper goes with its round: its removal leaves exactly
		 * one IN_IGNORED, as in the reproducer (a warm one stays). */
		if (s->topo == SHARED && !v->warm) {
			if (inotify_rm_watch(s->keeper, s->keeper_wd) < 0)
				other++;
			raw_drain(s->keeper, &d);
			if (d.ignored != 1 || d.other || d.overflows) {
				bench_fail(b, v->name, W, round, "shared: the keeper's removal "
					   "left %ld IN_IGNORED, %ld other events, %ld "
					   "overflows", d.ignored, d.other, d.overflows);
				return false;
			}
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
	double ns, add, rm, sys, first, faults;
	bool ok;
};

static struct cresult churn_round(struct bench *b, const struct cvariant *v, struct cstate *s,
				  int G, int W, int round)
{
	struct cround r = { .v = v, .s = s, .G = G, .W = W };
	struct fsnw_stats st1;
	struct cresult res = { .ok = true };
	uint64_t add = 0, rm = 0, first = 0;
	long faults = 0;
	int bad = 0, err = 0, moved;

	r.add_ns = calloc((size_t)W, sizeof(uint64_t));
	r.rm_ns = calloc((size_t)W, sizeof(uint64_t));
	r.first_ns = calloc((size_t)W, sizeof(uint64_t));
	r.faults = calloc((size_t)W, sizeof(long));
	r.bad = calloc((size_t)W, sizeof(int));
	r.err = calloc((size_t)W, sizeof(int));
	if (!r.add_ns || !r.rm_ns || !r.first_ns || !r.faults || !r.bad || !r.err)
		bench_fatal(b, "out of memory");
	/* This thread only starts and joins them: it waits in no barrier. */
	team_start(b, &r.team, W, 0, churn_worker, &r);
	moved = team_join(&r.team);
	if (is_lib(v))
		lib_stats(s->w, &st1);
	for (int i = 0; i < W; i++) {
		add += r.add_ns[i];
		rm += r.rm_ns[i];
		first += r.first_ns[i];
		faults += r.faults[i];
		if (r.bad[i] && !bad)
			err = r.err[i];
		bad += r.bad[i];
	}
	res.add = (double)add / G;
	res.rm = (double)rm / G;
	res.ns = (double)(add + rm) / G;
	res.first = (double)first / W;
	res.faults = (double)faults / G;
	switch (v->kind) {
	case K_RAW:
	case K_FLOOR_NEW:
		res.sys = 2;
		break;
	case K_FLOOR:
		res.sys = 1;
		break;
	default:
		res.sys = (double)(lib_syscalls(&st1) - lib_syscalls(&r.st0)) / G;
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
		res.ok &= check_lib(b, v, s, W, round, &r.st0);
	else
		res.ok &= check_raw(b, v, s, G, W, round);
	free(r.add_ns);
	free(r.rm_ns);
	free(r.first_ns);
	free(r.faults);
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

static void state_free(struct cstate *s)
{
	if (s->own_groups) {
		close_fds(s->groups, s->fx.G);
		free(s->groups);
	}
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
	fixture_free(&s->fx);
	memset(s, 0, sizeof(*s));
	s->keeper = s->fg = -1;
}

static int skip_emfile(struct bench *b, const struct cvariant *v)
{
	bench_skip(b, v->name, "out of inotify instances (EMFILE): raise "
		   "fs.inotify.max_user_instances or lower --groups");
	return 0;
}

/*
 * Set a state up: a fresh fixture of the topology, and the groups, keeper or
 * handle of the variant. groups: raw groups to share (raw-warm), or NULL to
 * open the state's own. 1 ready, 0 skipped (reason recorded), -1 failed.
 */
static int state_init(struct bench *b, const struct cvariant *v, struct cstate *s, int topo,
		      int *groups, int G, int W)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->keeper = s->fg = -1;
	s->topo = topo;
	err = fixture_make(b, &s->fx, topo, G);
	if (err) {
		bench_fail(b, v->name, W, 0, "making the %s fixture of %d %s: %s", topo_name[topo],
			   G, topo == SHARED ? "links" : "files", strerror(-err));
		return -1;
	}
	s->path = s->fx.path;
	s->target = s->fx.target;
	s->wd = calloc((size_t)G, sizeof(int));
	s->wid = calloc((size_t)G, sizeof(int));
	s->res = calloc((size_t)G, sizeof(int));
	s->expect = calloc((size_t)G, sizeof(int));
	s->items = calloc((size_t)G, sizeof(*s->items));
	if (!s->wd || !s->wid || !s->res || !s->expect || !s->items)
		bench_fatal(b, "out of memory");
	for (int j = 0; j < G; j++) {
		s->items[j].path = s->path[j];
		s->items[j].mask = FSNW_ATTRIB;
	}
	switch (v->kind) {
	case K_RAW:
		s->groups = groups;
		if (!groups) {
			s->groups = open_groups(G);
			if (!s->groups)
				goto sys_fail;
			s->own_groups = true;
		}
		if (topo == SHARED) {
			s->keeper = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
			if (s->keeper < 0)
				goto sys_fail;
			s->keeper_wd = inotify_add_watch(s->keeper, s->target, IN_ATTRIB);
			if (s->keeper_wd < 0)
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
			const char *p = topo == SHARED ? s->target : s->path[j];

			s->expect[j] = inotify_add_watch(s->fg, p, IN_ATTRIB);
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
		/* The keeper: of the shared inode, or a watch on the fixture's
		 * directory that only the workers' first calls share. */
		s->warm = topo == SHARED ? s->target : s->fx.dir;
		s->keeper_wid = fsnw_add(s->w, s->warm, FSNW_ATTRIB, 0);
		if (s->keeper_wid <= 0) {
			errno = -s->keeper_wid;
			goto sys_fail;
		}
		s->base_logical = 1;
		s->base_kernel = 1 + (topo == DISTINCT && v->idle ? (uint64_t)G : 0);
		s->base_parked = topo == SHARED ? 0 : (v->idle ? (uint64_t)G : 0);
		return 1;
	}
	return -1;
sys_fail:
	if (errno == EMFILE)
		return skip_emfile(b, v);
	bench_fail(b, v->name, W, 0, "set-up: %s", strerror(errno));
	return -1;
}

/*
 * A library handle in its timed round is one that has churned before, as a
 * daemon's has: one untimed add of every pair, then their removes, leave in
 * its record caches the watch records and path strings the round takes (in
 * a fresh process each new one would cost a first touch of its page, 6-20
 * us on a PVM guest), and for an idle-cache variant the parked watches, as
 * the round before would have left them. The adds go onto the keeper's
 * watch (no kernel mark is made or destroyed: the kernel side of the round
 * stays fresh), an idle variant's onto the pairs' own files. 0, or -errno.
 * (Reserving the kernel watch records too, fsnw_reserve(G), made no
 * difference we could measure: 15 rounds, 3 interleaved runs each way.)
 */
static int prime_handle(struct cstate *s, const struct cvariant *v, int G)
{
	int ret = 0;

	for (int j = 0; j < G; j++) {
		s->wid[j] = fsnw_add(s->w, v->idle ? s->path[j] : s->warm, FSNW_ATTRIB, 0);
		if (s->wid[j] <= 0 && !ret)
			ret = s->wid[j] < 0 ? s->wid[j] : -EIO;
	}
	for (int j = 0; j < G; j++) {
		int r = s->wid[j] > 0 ? fsnw_remove(s->w, s->wid[j]) : 0;

		if (r < 0 && !ret)
			ret = r;
		s->wid[j] = 0;
	}
	return ret;
}

static void record_round(struct bench *b, const struct cvariant *v, int W, int m,
			 const bool have[NTOPO], const struct cresult res[NTOPO])
{
	for (int t = 0; t < NTOPO; t++) {
		char metric[40];

		if (!have[t])
			continue;
		bench_record(b, v->name, W, m, topo_name[t], res[t].ns, "ns/watch", res[t].ok);
		snprintf(metric, sizeof(metric), "%s.add", topo_name[t]);
		bench_record(b, v->name, W, m, metric, res[t].add, "ns/watch", res[t].ok);
		snprintf(metric, sizeof(metric), "%s.remove", topo_name[t]);
		bench_record(b, v->name, W, m, metric, res[t].rm, "ns/watch", res[t].ok);
		snprintf(metric, sizeof(metric), "%s.faults", topo_name[t]);
		bench_record(b, v->name, W, m, metric, res[t].faults, "faults/watch", res[t].ok);
		snprintf(metric, sizeof(metric), "%s.syscalls", topo_name[t]);
		bench_record(b, v->name, W, m, metric, res[t].sys, "syscalls/watch", res[t].ok);
		if (is_lib(v)) {
			snprintf(metric, sizeof(metric), "%s.first", topo_name[t]);
			bench_record(b, v->name, W, m, metric, res[t].first, "ns/worker",
				     res[t].ok);
		}
	}
	if (have[DISTINCT] && have[SHARED])
		bench_record(b, v->name, W, m, "distinct/shared", res[DISTINCT].ns / res[SHARED].ns,
			     "ratio", res[DISTINCT].ok && res[SHARED].ok);
}

/* The topologies a variant runs: the shared floor of floor-new is `floor`. */
static bool runs_topo(const struct cvariant *v, int t)
{
	return !(v->kind == K_FLOOR_NEW && t == SHARED);
}

static void trace_round(struct bench *b, const struct cvariant *v, int W, int m,
			const struct cstate *s)
{
	char where[256];

	bench_trace(b, "%s W=%d round %d %s: %s fixture %s (first inode %llu) in process %d, %d "
		    "workers %s, one barrier of %d workers", v->name, W, m, topo_name[s->topo],
		    v->warm ? "warm" : "fresh", strrchr(s->fx.dir, '/') + 1,
		    (unsigned long long)s->fx.first_ino, (int)getpid(), W,
		    bench_placement(b, 0, W, where, sizeof(where)), W);
}

/* The measured round's number, <= 0 while warming up. */
static int round_no(int round, int warmup, int first)
{
	return round < warmup ? round - warmup + 1 : first + round - warmup + 1;
}

struct round_arg {
	const struct cvariant *v;
	int t, G, W, m;
};

struct round_out {
	int ready; /* state_init's: 1 measured, 0 skipped, -1 failed */
	struct cresult res;
};

/*
 * One topology of one round in a process of its own, as the report's
 * reproducer runs each: fresh fixture, groups or handle, workers, checks,
 * teardown, exit. On a busy machine a long-lived process measures distinct
 * removes up to half as expensive as fresh processes do, even with a fresh
 * fixture every round; a forked process matches an exec'd one.
 */
static void round_child(struct bench *b, void *arg, void *out)
{
	const struct round_arg *a = arg;
	struct round_out *o = out;
	struct cstate st;

	o->ready = state_init(b, a->v, &st, a->t, NULL, a->G, a->W);
	if (o->ready > 0 && is_lib(a->v) && prime_handle(&st, a->v, a->G) < 0) {
		bench_fail(b, a->v->name, a->W, a->m, "%s: priming the handle failed",
			   topo_name[a->t]);
		o->ready = -1;
	}
	if (o->ready > 0) {
		trace_round(b, a->v, a->W, a->m, &st);
		o->res = churn_round(b, a->v, &st, a->G, a->W, a->m);
	}
	state_free(&st);
}

/* One pass of the reproducer's method: every topology of every round is a fresh
 * process with its own fixture (their order alternates from round to round). */
static void run_fresh(struct bench *b, const struct cvariant *v, int G, int W, int warmup,
		      int rounds, int first)
{
	if (!bench_inotify_room(b, v->name, v->kind == K_RAW ? G + 1 : 2))
		return;
	for (int round = 0; round < warmup + rounds; round++) {
		int m = round_no(round, warmup, first);
		struct cresult res[NTOPO];
		bool have[NTOPO] = { false, false };

		bench_progress(b, "%s W=%d round %d", v->name, W, m);
		for (int k = 0; k < NTOPO; k++) {
			int t = round % 2 ? NTOPO - 1 - k : k;

			if (!runs_topo(v, t))
				continue;
			struct round_arg arg = { .v = v, .t = t, .G = G, .W = W, .m = m };
			struct round_out out = { .ready = -1 };

			if (bench_in_child(b, round_child, &arg, &out, sizeof(out)) < 0)
				bench_fail(b, v->name, W, m, "%s: the round's process died",
					   topo_name[t]);
			if (out.ready <= 0)
				return;
			res[t] = out.res;
			have[t] = true;
		}
		if (m > 0)
			record_round(b, v, W, m, have, res);
	}
}

/* One pass of raw-warm: one fixture per topology and one set of groups for
 * both, kept from the first warm-up round to the last measured one. */
static void run_warm(struct bench *b, const struct cvariant *v, int G, int W, int warmup,
		     int rounds, int first)
{
	struct cstate st[NTOPO];
	bool have[NTOPO] = { false, false };
	int *groups;

	if (!bench_inotify_room(b, v->name, G + 1))
		return;
	groups = open_groups(G);
	if (!groups) {
		if (errno == EMFILE)
			skip_emfile(b, v);
		else
			bench_fail(b, v->name, W, 0, "inotify_init1: %s", strerror(errno));
		return;
	}
	for (int t = 0; t < NTOPO; t++) {
		int ready = state_init(b, v, &st[t], t, groups, G, W);

		have[t] = ready > 0;
		if (ready <= 0) {
			state_free(&st[t]);
			goto out;
		}
	}
	for (int round = 0; round < warmup + rounds; round++) {
		int m = round_no(round, warmup, first);
		struct cresult res[NTOPO];

		bench_progress(b, "%s W=%d round %d", v->name, W, m);
		for (int k = 0; k < NTOPO; k++) {
			int t = round % 2 ? NTOPO - 1 - k : k;

			trace_round(b, v, W, m, &st[t]);
			res[t] = churn_round(b, v, &st[t], G, W, m);
		}
		if (m > 0)
			record_round(b, v, W, m, have, res);
	}
out:
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

/* Say where each worker count runs: "one per CPU" is the reproducer's shape. */
static void churn_placement(struct bench *b)
{
	char where[256];

	for (int k = 0; k < opt.workers.n; k++) {
		long W = opt.workers.v[k];

		printf("churn W=%ld: workers %s%s\n", W, bench_placement(b, 0, W, where,
		       sizeof(where)), bench_oversubscribed(b, W) ? ", oversubscribed" :
		       b->o->cpus.n ? ", one per CPU" : "");
	}
}

static int churn_run(struct bench *b)
{
	int G = (int)opt.groups;
	int warmup, rounds, passes;

	bench_begin(b, "churn", "workers");
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

			for (size_t i = 0; i < NVARIANTS; i++) {
				const struct cvariant *v = &cvariants[i];

				if (!cli_variant_on(b->o, v->name) ||
				    bench_skipped(b, "churn", v->name))
					continue;
				if (v->warm)
					run_warm(b, v, G, W, warmup, n, done);
				else
					run_fresh(b, v, G, W, warmup, n, done);
			}
			done += n;
		}
	}
	churn_controls(b, &opt);
	churn_charts(b);
	{
		bool tables = b->tables;

		bench_end(b);
		if (tables) {
			churn_placement(b);
			churn_summary(b, G);
		}
	}
	return 0;
}

/*
 * The report's reproducer refuses a CPU list that does not hold one CPU per
 * worker. So does churn, unless --oversubscribe asks for workers to share
 * the CPUs listed (round robin; every such row says so). Fewer workers than
 * CPUs take the first ones of the list, which the output names.
 */
static int churn_check(const struct bench_opts *o)
{
	long cpus = cli_distinct(&o->cpus), most = 0;

	if (!o->cpus.n || opt.oversubscribe)
		return 0;
	for (int k = 0; k < opt.workers.n; k++)
		most = opt.workers.v[k] > most ? opt.workers.v[k] : most;
	if (most <= cpus)
		return 0;
	fprintf(stderr, "fsnw-bench: churn: %ld workers need %ld CPUs in --cpus, one per worker "
		"as the 94bd01253c3d report's reproducer does; it lists %ld. List more CPUs, lower --workers, or add "
		"--oversubscribe to pin them round robin (labelled oversubscribed).\n", most, most,
		cpus);
	return -1;
}

/* The tree rows: add time, heap a directory, and the caller's tree (--tree-path). */
static void churn_quick_tree(struct bench *b, struct quick *q)
{
	double it = quick_need(q, "tree-inotifytools", 1, "add");
	double uv = quick_need(q, "tree-libuv", 1, "add");
	double lib = quick_need(q, "tree-lib", 1, "add");
	char fan[80] = "skipped", label[4200];

	if (!bench_skipped(b, "churn", "tree-lib-fan"))
		snprintf(fan, sizeof(fan), "%.3g ms, no walk, %.0f KiB of heap",
			 quick_need(q, "tree-lib-fan", 1, "add"),
			 quick_need(q, "tree-lib-fan", 1, "heap") * (double)opt.tree_dirs / 1024);
	snprintf(label, sizeof(label), "tree add, %ld dirs", opt.tree_dirs);
	quick_libuv(q, uv);
	quick_row(q, label, "ms", quick_need(q, "tree-raw", 1, "add"), it, lib, NAN,
		  "libinotifytools/lib %.2f (target >= 2), libuv/lib %.2f; target lib/raw <= 1.15; "
		  "fanotify tree %s", it / lib, uv / lib, fan);
	quick_row(q, "  same, raw watching by descriptor", "ms",
		  quick_need(q, "tree-raw-fd", 1, "add"), NAN, lib, NAN,
		  "raw: each watch through its directory's /proc/self/fd name, as the library "
		  "makes it (the watch and the listing are of one directory)");
	quick_libuv(q, quick_need(q, "tree-libuv", 1, "heap"));
	quick_row(q, "  same, heap a directory", "bytes/dir", quick_need(q, "tree-raw", 1, "heap"),
		  quick_need(q, "tree-inotifytools", 1, "heap"), quick_need(q, "tree-lib", 1, "heap"),
		  NAN, "what each keeps for the tree (mallinfo2); raw: its wd->path array; "
		  "libuv: a handle a directory");
	if (!opt.tree_path)
		return;
	snprintf(label, sizeof(label), "  heap a directory, %s", opt.tree_path);
	quick_libuv(q, quick_need(q, "tree-libuv", 1, "path.heap"));
	quick_row(q, label, "bytes/dir", quick_need(q, "tree-raw", 1, "path.heap"),
		  quick_need(q, "tree-inotifytools", 1, "path.heap"),
		  quick_need(q, "tree-lib", 1, "path.heap"), NAN,
		  "%.0f dirs; add: raw %.3g ms, libinotifytools %.3g (%.0f dirs), libuv %.3g, lib %.3g",
		  quick_need(q, "tree-raw", 1, "path.dirs"),
		  quick_need(q, "tree-raw", 1, "path.add"),
		  quick_need(q, "tree-inotifytools", 1, "path.add"),
		  quick_need(q, "tree-inotifytools", 1, "path.dirs"),
		  quick_need(q, "tree-libuv", 1, "path.add"),
		  quick_need(q, "tree-lib", 1, "path.add"));
}

static void churn_quick(struct bench *b, struct quick *q)
{
	static const char *const libs[] = { "lib", "lib-batch", "lib-idle" };
	const struct long_list *wl = &opt.workers;
	char label[128], wl_label[64], sm[40];

	quick_row(q, "churn 1:1 add+remove, 1 thread", "ns/watch",
		  quick_need(q, "bulk-raw", 1, "add+remove"), NAN,
		  quick_need(q, "bulk-lib", 1, "add+remove"), NAN,
		  "%ld fresh dirs, one group, the reproducer's mask; batch calls %.0f; after "
		  "fsnw_reserve %.0f; target ratio <= 1.10; page faults per 1024 watches raw "
		  "%.0f, lib %.0f (heap %.0f B a watch), after fsnw_reserve %.0f", opt.bulk,
		  quick_need(q, "bulk-lib-batch", 1, "add+remove"),
		  quick_need(q, "bulk-lib-reserve", 1, "add+remove"),
		  1024 * quick_need(q, "bulk-raw", 1, "faults"),
		  1024 * quick_need(q, "bulk-lib", 1, "faults"),
		  quick_need(q, "bulk-lib", 1, "heap"),
		  1024 * quick_need(q, "bulk-lib-reserve", 1, "faults"));
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
	quick_row(q, "churn: a new thread's first library call", "ns", NAN, NAN,
		  quick_need(q, "lib", 1, "distinct.first"), NAN,
		  "untimed in the rows above: add+remove onto a held watch (malloc arena, "
		  "first-touch pages, io_uring ring); shared %.0f, W=2 %.0f",
		  quick_need(q, "lib", 1, "shared.first"),
		  quick_need(q, "lib", wl->n > 1 ? wl->v[1] : 1, "distinct.first"));
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
	churn_quick_tree(b, q);
	quick_row(q, "mask-update (kernel control)", "ns/call",
		  quick_need(q, "mask-update", 1, "update"), NAN, NAN, NAN,
		  "one group, %ld re-adds of one watch, IN_MODIFY/IN_ATTRIB alternating; no "
		  "library equivalent", opt.control_calls);
	quick_row(q, "path-lookup (kernel control)", "ns/call",
		  quick_need(q, "path-lookup", 1, "lookup"), NAN, NAN, NAN,
		  "open(O_PATH) + close, %ld calls after 16 warm-ups (the 94bd01253c3d report: 595 ns on bare "
		  "metal)", opt.control_calls);
}

BENCH_SCENARIO(churn) = {
	.name = "churn",
	.order = 0,
	.summary = "watch add/remove churn (after 94bd01253c3d), bulk, mask-update, path-lookup, tree add",
	.flags = SCEN_MEASURES | SCEN_ROUNDS | SCEN_CHARTS,
	.run = churn_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = churn_quick,
	.quick_variants = "raw,floor,floor-new,lib,lib-batch,lib-idle,bulk-raw,bulk-lib,"
			  "bulk-lib-batch,bulk-lib-reserve,mask-update,path-lookup,tree-raw,tree-lib,"
			  "tree-inotifytools,tree-lib-fan,tree-libuv,tree-raw-fd,timing-ab",
	.check = churn_check,
};
