/* SPDX-License-Identifier: MIT */
/*
 * torture: tree watches under a live reader. For each seed, a tree of
 * --entries entries is made on a private tmpfs, watched with
 * FSNW_WATCH_TREE (--trees trees on one handle), and a reader thread keeps
 * a view of each from the events (reader.h) while this thread applies
 * --ops random operations (fsops.h) in bursts. At checkpoints (after every
 * burst, and at the end) the views must equal the disk. A failure prints
 * the seed, the differences and the operations; --shrink cuts the list of
 * operations down to what still fails, and prints a command that replays
 * it.
 *
 * usage: torture [--backend inotify|fanotify] [--seed S] [--seeds N]
 *                [--entries N] [--ops N] [--burst N] [--trees N] [--mounts]
 *                [--shrink] [--replay FILE] [--quiet] [--trace FILE]
 * Exit: 0 every seed held, 1 a view differed, 2 a usage or setup error,
 * 77 the backend cannot run here.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsops.h"
#include "reader.h"

#define TREE_MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE | FSNW_DELETE_SELF | FSNW_MOVE_SELF)
#define SYNC_TIMEOUT_S 120

struct opts {
	uint32_t backend;
	uint64_t seed;
	unsigned seeds;
	size_t entries;
	unsigned ops;
	unsigned burst;
	unsigned trees;
	bool mounts, shrink, quiet;
	const char *replay;
	const char *trace;     /* write the events of the last run here */
};

/* What one run found. */
struct outcome {
	unsigned checkpoints;
	unsigned differences;  /* at the first checkpoint that had any */
	uint64_t events, overflows;
	size_t scans;
	int err;               /* setup or reader failure */
};

static char scratch[] = "/dev/shm/fsnw-torture-XXXXXX";
static bool private_mount;

/* A tmpfs of our own for each run: a fanotify filesystem mark hears nobody else. */
static int scratch_mount(void)
{
	if (!private_mount)
		return 0;
	return mount("torture", scratch, "tmpfs", 0, "size=512m") < 0 ? -errno : 0;
}

static int rmrf_children(int fd);

static void scratch_clean(void)
{
	if (private_mount) {
		(void)umount2(scratch, MNT_DETACH);
		return;
	}
	int fd = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		(void)rmrf_children(fd);
		close(fd);
	}
}

static int rmrf_children(int fd)
{
	char cmd[PATH_MAX + 32];

	(void)fd;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'/* '%s'/.[!.]* 2>/dev/null", scratch, scratch);
	return system(cmd);
}

/* Print the differences between a view and a fresh walk of the disk. */
struct diffs {
	const struct tree_view *t;
	unsigned n;
	bool quiet;
};

static void print_diff(void *arg, const char *path, char type, bool created)
{
	struct diffs *d = arg;

	if (d->n++ < 20 && !d->quiet)
		fprintf(stderr, "  %s %c %s/%s\n", created ? "missing from the view:" :
			"in the view, not on disk:", type, d->t->root, path);
}

static unsigned compare(const struct reader *rd, bool quiet)
{
	unsigned total = 0;

	for (unsigned i = 0; i < rd->ntrees; i++) {
		const struct tree_view *t = &rd->view[i];
		struct diffs d = { t, 0, quiet };
		struct snapshot disk;
		int fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		snap_init(&disk);
		if (fd < 0 || snap_walk(&disk, fd, "") < 0 ||
		    snap_diff_below(&t->view, "", &disk, print_diff, &d) < 0)
			d.n++;
		if (fd >= 0)
			close(fd);
		snap_fini(&disk);
		total += d.n;
	}
	return total;
}

static int checkpoint(struct reader *rd, int rootfd, uint64_t *n, struct outcome *o, bool quiet)
{
	int ret = reader_sync(rd, rootfd, ++*n, SYNC_TIMEOUT_S);
	unsigned d;

	if (ret < 0) {
		if (!quiet) {
			char js[8192];

			fprintf(stderr, "torture: checkpoint %llu: %s (reader: seen %llu, synced "
				"%llu, first view %s)\n", (unsigned long long)*n, strerror(-ret),
				(unsigned long long)rd->seen, (unsigned long long)rd->synced,
				rd->ntrees && tree_view_unsettled(&rd->view[0]) ? "unsettled" :
										  "settled");
			if (fsnw_stats_json(rd->w, js, sizeof(js)) > 0)
				fprintf(stderr, "torture: stats %s\n", js);
		}
		o->err = ret;
		return ret;
	}
	o->checkpoints++;
	d = compare(rd, quiet);
	reader_resume(rd);
	if (d && !o->differences)
		o->differences = d;
	return d ? 1 : 0;
}

static const char *backend_name(uint32_t b)
{
	return b == FSNW_BACKEND_FANOTIFY ? "fanotify" : "inotify";
}

/*
 * An abort (an assertion of the library's, in either thread) still leaves
 * the seed and the operations applied so far, as a failure does: the
 * handler writes them with write(2), from what run_once set up before the
 * run, and dies of the signal. Best effort: this thread may be adding a
 * line to the log as the other one aborts.
 */
static struct {
	const struct oplog *log;
	char file[64];
	char msg[512];
} crash;

static void put(int fd, const char *s, size_t len)
{
	while (len) {
		ssize_t n = write(fd, s, len);

		if (n <= 0)
			return;
		s += n;
		len -= (size_t)n;
	}
}

static void on_abort(int sig)
{
	int fd = open(crash.file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd >= 0 && crash.log) {
		for (size_t i = 0, n = crash.log->n; i < n; i++) {
			put(fd, crash.log->line[i], strlen(crash.log->line[i]));
			put(fd, "\n", 1);
		}
	}
	if (fd >= 0)
		close(fd);
	put(STDERR_FILENO, crash.msg, strlen(crash.msg));
	raise(sig); /* SA_RESETHAND: the default action now */
}

static void crash_arm(const struct opts *op, uint64_t seed, const struct oplog *log)
{
	struct sigaction sa = { .sa_handler = on_abort, .sa_flags = SA_RESETHAND };

	crash.log = log;
	snprintf(crash.file, sizeof(crash.file), "torture-%s-%llu.ops", backend_name(op->backend),
		 (unsigned long long)seed);
	snprintf(crash.msg, sizeof(crash.msg),
		 "torture: ABORTED seed %llu: the operations so far in %s; replay with:\n"
		 "  torture --backend %s --entries %zu --trees %u --seed %llu --replay %s\n",
		 (unsigned long long)seed, crash.file, backend_name(op->backend), op->entries,
		 op->trees, (unsigned long long)seed, crash.file);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGABRT, &sa, NULL);
}

static void crash_disarm(void)
{
	signal(SIGABRT, SIG_DFL);
	crash.log = NULL;
}

static int watch_trees(struct reader *rd, const struct opts *op)
{
	for (unsigned i = 0; i < op->trees; i++) {
		char root[PATH_MAX];
		int wid, ret;

		snprintf(root, sizeof(root), "%s/W%u", scratch, i);
		wid = fsnw_add(rd->w, root, TREE_MASK, FSNW_WATCH_TREE);
		if (wid < 0)
			return wid;
		ret = tree_view_init(&rd->view[i], root, wid, NULL);
		if (ret == 0)
			ret = tree_view_scan(&rd->view[i]);
		if (ret < 0)
			return ret;
		rd->ntrees++;
	}
	return 0;
}

/*
 * One run: the start made from seed, then `lines` replayed (when given)
 * or op->ops random operations. The log of what was applied is left in
 * *log for the caller.
 */
static int run_once(const struct opts *op, uint64_t seed, const struct oplog *lines,
		    struct outcome *o, struct oplog *log)
{
	struct fsnw_options fo = { .size = sizeof(fo), .backend = op->backend };
	struct reader rd = { 0 };
	struct fsmodel m;
	struct rng r = { seed }, ops = { seed ^ 0x6f7073ull };
	uint64_t sync = 0;
	int rootfd = -1, ret;

	memset(o, 0, sizeof(*o));
	ret = scratch_mount();
	rootfd = ret < 0 ? -1 : open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		o->err = ret < 0 ? ret : -errno;
		scratch_clean();
		return o->err;
	}
	ret = fsmodel_init(&m, rootfd, op->trees, op->mounts);
	if (ret == 0)
		ret = fsmodel_populate(&m, &r, op->entries);
	if (ret == 0)
		ret = fsnw_open(&rd.w, &fo);
	if (ret == 0 && op->trace)
		rd.trace = fopen(op->trace, "w");
	if (ret == 0) {
		rd.r.s = seed ^ 0x72656164ull;
		rd.max_batch = (unsigned[]){ 1, 3, 16, 64, 256 }[rng_below(&rd.r, 5)];
		rd.lag_per_mille = (unsigned[]){ 0, 5, 50, 300 }[rng_below(&rd.r, 4)];
		ret = watch_trees(&rd, op);
	}
	if (ret == 0)
		ret = reader_start(&rd);
	if (ret == 0)
		ret = checkpoint(&rd, rootfd, &sync, o, op->quiet);
	if (!lines) /* a replay's lines are in its file already */
		crash_arm(op, seed, &m.log);
	if (lines) {
		for (size_t i = 0; ret == 0 && i < lines->n; i++)
			ret = fsmodel_apply_line(&m, lines->line[i]);
	} else {
		for (unsigned i = 0; ret == 0 && i < op->ops; i++) {
			ret = fsmodel_random_op(&m, &ops);
			if (ret == 0 && (rng_below(&ops, op->burst) == 0 || i + 1 == op->ops))
				ret = checkpoint(&rd, rootfd, &sync, o, op->quiet);
		}
	}
	if (ret == 0 && lines)
		ret = checkpoint(&rd, rootfd, &sync, o, op->quiet);
	if (ret < 0 && !o->err)
		o->err = ret;
	if (rd.running)
		reader_stop(&rd);
	crash_disarm();
	if (o->differences && !op->quiet && rd.w) {
		char js[8192];

		if (fsnw_stats_json(rd.w, js, sizeof(js)) > 0)
			fprintf(stderr, "torture: stats %s\n", js);
	}
	o->events = rd.events;
	o->overflows = rd.overflows;
	for (unsigned i = 0; i < rd.ntrees; i++) {
		o->scans += rd.view[i].scans;
		tree_view_fini(&rd.view[i]);
	}
	fsnw_close(rd.w);
	if (rd.trace)
		fclose(rd.trace);
	fsmodel_unmount_all(&m);
	*log = m.log;
	m.log = (struct oplog){ 0 };
	fsmodel_fini(&m);
	close(rootfd);
	scratch_clean();
	return o->err ? o->err : o->differences ? 1 : 0;
}

/* Does this list of lines still fail, in any of `tries` runs? */
static bool still_fails(const struct opts *op, uint64_t seed, const struct oplog *l, int tries)
{
	for (int i = 0; i < tries; i++) {
		struct outcome o;
		struct oplog log;
		int ret = run_once(op, seed, l, &o, &log);

		oplog_clear(&log);
		if (ret == 1)
			return true;
	}
	return false;
}

/* Cut the log down (ddmin, chunks halving), keeping it failing. */
static void shrink(const struct opts *op, uint64_t seed, struct oplog *l)
{
	struct opts q = *op;

	q.quiet = true;
	for (size_t chunk = l->n / 2; chunk >= 1; chunk /= 2) {
		for (size_t start = 0; start < l->n;) {
			struct oplog cut = { 0 };
			size_t end = start + chunk < l->n ? start + chunk : l->n;

			cut.line = malloc(l->n * sizeof(*cut.line));
			if (!cut.line)
				return;
			for (size_t i = 0; i < l->n; i++)
				if (i < start || i >= end)
					cut.line[cut.n++] = l->line[i];
			if (cut.n && still_fails(&q, seed, &cut, 4)) {
				for (size_t i = start; i < end; i++)
					free(l->line[i]);
				memmove(l->line, cut.line, cut.n * sizeof(*cut.line));
				l->n = cut.n;
				fprintf(stderr, "torture: shrunk to %zu lines\n", l->n);
			} else {
				start = end;
			}
			free(cut.line);
		}
		if (chunk == 1)
			break;
	}
}

static int read_lines(const char *file, struct oplog *l)
{
	FILE *f = fopen(file, "r");
	char buf[2 * PATH_MAX + 16];

	if (!f)
		return -errno;
	while (fgets(buf, sizeof(buf), f)) {
		char **v;

		buf[strcspn(buf, "\n")] = '\0';
		if (!buf[0] || buf[0] == '#')
			continue;
		v = realloc(l->line, (l->n + 1) * sizeof(*v));
		if (!v || !(v[l->n] = strdup(buf))) {
			fclose(f);
			return -ENOMEM;
		}
		l->line = v;
		l->n++;
	}
	fclose(f);
	return 0;
}

/* Report a failing seed: the log to a file, and a command that replays it. */
static void report_failure(const struct opts *op, uint64_t seed, struct oplog *log)
{
	char file[64];
	FILE *f;

	if (op->shrink && !op->replay)
		shrink(op, seed, log);
	snprintf(file, sizeof(file), "torture-%s-%llu.ops", backend_name(op->backend),
		 (unsigned long long)seed);
	f = fopen(file, "w");
	if (f) {
		oplog_print(log, f, 0);
		fclose(f);
	}
	fprintf(stderr, "torture: FAIL seed %llu: %zu operations in %s; replay with:\n"
		"  torture --backend %s --entries %zu --trees %u --seed %llu --replay %s\n",
		(unsigned long long)seed, log->n, file, backend_name(op->backend), op->entries,
		op->trees, (unsigned long long)seed, file);
	if (log->n <= 40)
		oplog_print(log, stderr, 0);
}

static int parse(int argc, char **argv, struct opts *op)
{
	static const struct option longs[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "seeds", required_argument, NULL, 'n' },
		{ "entries", required_argument, NULL, 'e' },
		{ "ops", required_argument, NULL, 'o' },
		{ "burst", required_argument, NULL, 'u' },
		{ "trees", required_argument, NULL, 't' },
		{ "mounts", no_argument, NULL, 'm' },
		{ "shrink", no_argument, NULL, 'k' },
		{ "replay", required_argument, NULL, 'r' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "trace", required_argument, NULL, 'T' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	*op = (struct opts){ FSNW_BACKEND_INOTIFY, 1, 1, 500, 300, 20, 1, false, false, false,
			     NULL, NULL };
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		switch (c) {
		case 'b':
			op->backend = !strcmp(optarg, "fanotify") ? FSNW_BACKEND_FANOTIFY :
				      FSNW_BACKEND_INOTIFY;
			break;
		case 's': op->seed = strtoull(optarg, NULL, 0); break;
		case 'n': op->seeds = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'e': op->entries = strtoull(optarg, NULL, 0); break;
		case 'o': op->ops = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'u': op->burst = (unsigned)strtoul(optarg, NULL, 0); break;
		case 't': op->trees = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm': op->mounts = true; break;
		case 'k': op->shrink = true; break;
		case 'r': op->replay = optarg; break;
		case 'q': op->quiet = true; break;
		case 'T': op->trace = optarg; break;
		default: return -1;
		}
	}
	if (op->trees < 1 || op->trees > READER_TREES || !op->burst || optind != argc)
		return -1;
	return 0;
}

/* A mount namespace of our own, where tmpfs mounts are nobody else's. */
static void setup_scratch(void)
{
	if (!mkdtemp(scratch)) {
		perror("torture: mkdtemp");
		exit(2);
	}
	private_mount = unshare(CLONE_NEWNS) == 0 &&
			mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
			mount("torture", scratch, "tmpfs", 0, "size=512m") == 0 &&
			umount2(scratch, MNT_DETACH) == 0;
}

int main(int argc, char **argv)
{
	struct opts op;
	struct oplog replay = { 0 };
	unsigned failed = 0, errors = 0;
	uint64_t events = 0, overflows = 0, ops = 0;

	if (parse(argc, argv, &op) < 0) {
		fprintf(stderr, "usage: torture [--backend inotify|fanotify] [--seed S] [--seeds N]"
			" [--entries N] [--ops N] [--burst N] [--trees N] [--mounts] [--shrink]"
			" [--replay FILE] [--quiet]\n");
		return 2;
	}
	if (op.replay && read_lines(op.replay, &replay) < 0) {
		perror(op.replay);
		return 2;
	}
	setup_scratch();
	for (unsigned i = 0; i < op.seeds; i++) {
		uint64_t seed = op.seed + i;
		struct outcome o;
		struct oplog log;
		int ret = run_once(&op, seed, op.replay ? &replay : NULL, &o, &log);

		if (ret == -EPERM || ret == -EOPNOTSUPP || ret == -ENOSYS) {
			fprintf(stderr, "torture: the %s backend cannot run here: %s\n",
				backend_name(op.backend), strerror(-ret));
			rmdir(scratch);
			return 77;
		}
		events += o.events;
		overflows += o.overflows;
		ops += log.n;
		printf("%s seed %llu: %s, %zu lines, %u checkpoints, %llu events, "
		       "%llu overflows, %zu scans\n", backend_name(op.backend),
		       (unsigned long long)seed, ret == 0 ? "ok" : ret == 1 ? "DIVERGED" : "ERROR",
		       log.n, o.checkpoints, (unsigned long long)o.events,
		       (unsigned long long)o.overflows, o.scans);
		fflush(stdout);
		if (ret < 0)
			errors++;
		if (ret != 0) {
			failed += ret == 1;
			report_failure(&op, seed, &log);
		}
		oplog_clear(&log);
	}
	printf("%s: %u seeds, %llu operation lines, %llu events, %llu overflows, %u diverged, "
	       "%u errors\n", backend_name(op.backend), op.seeds, (unsigned long long)ops,
	       (unsigned long long)events, (unsigned long long)overflows, failed, errors);
	oplog_clear(&replay);
	rmdir(scratch);
	return failed || errors ? 1 : 0;
}
