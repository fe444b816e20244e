/* SPDX-License-Identifier: MIT */
/*
 * addwatch-children (the parent-watch thread's first table, scaled): a directory with C
 * cached child dentries while W workers unlink and recreate files in it;
 * measure adding a sole watch for child events on the directory, and taking
 * it away again, `cycles` times a round. raw: inotify_init1 + add + close;
 * lib: fsnw_add + fsnw_remove on one handle. Average and maximum of each,
 * and the worst unlink+recreate latency the workers saw meanwhile.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "evio.h"
#include "quick.h"

static struct children_opts {
	long children;
	long cycles;
	struct long_list workers;
} opt;

#define F(field) offsetof(struct children_opts, field)
static const struct bench_option options[] = {
	{ .flag = "children", .arg = "C", .type = OPT_LONG, .off = F(children), .max = 1L << 30,
	  .preset = { "1000", "20000", "100000", "12000000" },
	  .help = "cached child dentries of the directory" },
	{ .flag = "cycles", .arg = "N", .type = OPT_LONG, .off = F(cycles), .min = 1,
	  .max = 1 << 20, .preset = { "10", "50", "100", "100" },
	  .help = "watch adds and removals a round" },
	/* Mutators leave a CPU to the thread that measures. */
	{ .flag = "workers", .arg = "W", .type = OPT_LIST, .off = F(workers), .min = 1,
	  .max = 1024, .preset = { "cpus-1", "cpus-1", "cpus-1", "8" },
	  .help = "threads unlinking and recreating children" },
	{ 0 },
};
#undef F

static const char *const variants[] = { "raw", "lib", NULL };

struct mutators {
	struct team team;
	const char *dir;
	long C;
	atomic_int stop;
	uint64_t *max_ns;
	long *ops, *bad;
};

/* Unlink and recreate files of its own share of the directory until told to stop. */
static void mutator(struct team *t, int idx)
{
	struct mutators *mu = t->arg;
	long lo = (long)idx * mu->C / t->n, hi = (long)(idx + 1) * mu->C / t->n, i = lo;
	uint64_t worst = 0;
	long ops = 0, bad = 0;
	char path[4200];

	team_sync(t);
	while (!atomic_load_explicit(&mu->stop, memory_order_relaxed) && hi > lo) {
		uint64_t t0 = now_ns(), d;
		int fd;

		snprintf(path, sizeof(path), "%s/c%ld", mu->dir, i);
		bad += unlink(path) < 0;
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			bad++;
		else
			close(fd);
		d = now_ns() - t0;
		worst = d > worst ? d : worst;
		ops++;
		if (++i == hi)
			i = lo;
	}
	mu->max_ns[idx] = worst;
	mu->ops[idx] = ops;
	mu->bad[idx] = bad;
}

static void children_round(struct bench *b, const char *variant, const char *dir, long C, int W,
			   long cycles, int m)
{
	struct mutators mu = { .dir = dir, .C = C };
	struct fsnw *w = NULL;
	uint64_t add_sum = 0, add_max = 0, rm_sum = 0, rm_max = 0, mut_max = 0;
	long bad = 0, mut_ops = 0, mut_bad = 0;
	bool lib = !strcmp(variant, "lib"), ok = true;
	int err = 0, moved;

	mu.max_ns = calloc((size_t)W, sizeof(uint64_t));
	mu.ops = calloc((size_t)W, sizeof(long));
	mu.bad = calloc((size_t)W, sizeof(long));
	if (!mu.max_ns || !mu.ops || !mu.bad)
		bench_fatal(b, "out of memory");
	if (lib && (err = lib_open(&w, FSNW_BACKEND_INOTIFY, 0, 0, 0)) < 0) {
		bench_fail(b, variant, W, m, "fsnw_open: %s", strerror(-err));
		goto out;
	}
	atomic_store(&mu.stop, 0);
	/* Mutators go on the CPUs after the measuring thread's. */
	team_start(b, &mu.team, W, 1, mutator, &mu);
	team_sync(&mu.team);
	for (long c = 0; c < cycles; c++) {
		uint64_t t0, t1, t2;
		int fd = -1, id;

		if (!lib)
			fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		t0 = now_ns();
		/* IN_MODIFY is a child event: the kernel marks the cached children. */
		id = lib ? fsnw_add(w, dir, FSNW_MODIFY, 0) : inotify_add_watch(fd, dir, IN_MODIFY);
		t1 = now_ns();
		if (lib && id > 0)
			bad += fsnw_remove(w, id) < 0;
		else if (!lib && fd >= 0)
			close(fd);
		t2 = now_ns();
		if ((lib && id <= 0) || (!lib && (fd < 0 || id < 0))) {
			if (!bad++)
				err = lib ? -id : errno;
		}
		add_sum += t1 - t0;
		rm_sum += t2 - t1;
		add_max = t1 - t0 > add_max ? t1 - t0 : add_max;
		rm_max = t2 - t1 > rm_max ? t2 - t1 : rm_max;
	}
	atomic_store(&mu.stop, 1);
	moved = team_join(&mu.team);
	for (int i = 0; i < W; i++) {
		mut_max = mu.max_ns[i] > mut_max ? mu.max_ns[i] : mut_max;
		mut_ops += mu.ops[i];
		mut_bad += mu.bad[i];
	}
	if (lib) {
		struct fsnw_event ev[16];
		int n;

		/* No event may reach the caller: the mutations make none in the mask. */
		fsnw_pump(w);
		n = fsnw_read(w, ev, 16, 0);
		if (n != 0) {
			bench_fail(b, variant, W, m, "%d unexpected events", n);
			ok = false;
		}
	}
	if (bad || mut_bad || moved) {
		bench_fail(b, variant, W, m, "%ld watch adds or removes failed (%s), %ld of %ld "
			   "mutations failed, %d workers off their CPU", bad,
			   bad ? strerror(err) : "ok", mut_bad, mut_ops, moved);
		ok = false;
	}
	if (m > 0) {
		bench_record(b, variant, W, m, "add-avg", (double)add_sum / cycles, "ns", ok);
		bench_record(b, variant, W, m, "add-max", (double)add_max, "ns", ok);
		bench_record(b, variant, W, m, "remove-avg", (double)rm_sum / cycles, "ns", ok);
		bench_record(b, variant, W, m, "remove-max", (double)rm_max, "ns", ok);
		bench_record(b, variant, W, m, "mutation-max", (double)mut_max, "ns", ok);
		bench_record(b, variant, W, m, "mutations", (double)mut_ops, "ops", ok);
	}
out:
	fsnw_close(w);
	free(mu.max_ns);
	free(mu.ops);
	free(mu.bad);
}

static int children_run(struct bench *b)
{
	char dir[4096];
	long C = opt.children;
	int warmup, rounds, err;

	bench_begin(b, "addwatch-children", "workers");
	bench_busy(b, 1); /* the thread that adds the watches works beside the mutators */
	err = bench_mkdir(b, "children", dir, sizeof(dir));
	/* Creating the files leaves their dentries cached, which is the point. */
	if (!err)
		err = bench_make_files(b, dir, "c", C, 0);
	if (err) {
		bench_fail(b, "raw", 0, 0, "making %ld files: %s", C, strerror(-err));
		goto out;
	}
	bench_rounds(b, bench_pick(b, 0, 0, 1, 1), (int)bench_pick(b, 2, 2, 3, 2), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int k = 0; k < opt.workers.n; k++) {
		int W = (int)opt.workers.v[k];

		for (int r = 0; r < warmup + rounds; r++)
			for (int v = 0; variants[v]; v++) {
				const char *name = variants[v];

				if (!cli_variant_on(b->o, name) || !bench_inotify_room(b, name, 1))
					continue;
				bench_progress(b, "%s W=%d round %d/%d", name, W, r + 1,
					       warmup + rounds);
				children_round(b, name, dir, C, W, opt.cycles, r - warmup + 1);
			}
	}
	bench_unpin_self(b);
	bench_unlink_files(b, dir, "c", C);
out:
	bench_end(b);
	return 0;
}

static void children_quick(struct bench *b, struct quick *q)
{
	long W = opt.workers.v[0];
	char label[96];

	snprintf(label, sizeof(label), "addwatch-children %ld, add", opt.children);
	quick_row(q, label, "ns", quick_need(q, "raw", W, "add-avg"), NAN,
		  quick_need(q, "lib", W, "add-avg"), NAN,
		  "max %.0f / %.0f; then close(group) %.0f ns vs fsnw_remove %.0f ns",
		  quick_need(q, "raw", W, "add-max"), quick_need(q, "lib", W, "add-max"),
		  quick_need(q, "raw", W, "remove-avg"), quick_need(q, "lib", W, "remove-avg"));
}

BENCH_SCENARIO(children) = {
	.name = "addwatch-children",
	.order = 40,
	.summary = "inotify_add_watch on a directory with many children (parent-watch thread)",
	.flags = SCEN_MEASURES | SCEN_ROUNDS,
	.run = children_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = children_quick,
};
