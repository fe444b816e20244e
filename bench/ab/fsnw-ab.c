/* SPDX-License-Identifier: MIT */
/*
 * fsnw-ab: two or more builds of libfsnwatch side by side in one process.
 *
 * A developer's instrument, not a scenario of fsnw-bench: it tells whether
 * a change to the library made a watch add+remove cheaper. On a shared host
 * the cost of a syscall drifts by 30-50% between minutes, which buries a
 * change of 50 ns in run-to-run noise. So every build is loaded into the
 * same process, each into a link-map namespace of its own (dlmopen), and
 * they take turns with a raw inotify group in rounds: each round runs N
 * pairs of every build and N of the raw floor, in an order turned each
 * round, and a build's overhead is its pair's cost minus the floor's in
 * the same round. The medians over the rounds are reported.
 *
 * Modes:
 *  shared    add+remove on a file the handle already watches (a dedup add,
 *            a non-last remove); the floor is one inotify_add_watch;
 *  idle      add+remove of a file whose kernel watch waits in the idle
 *            cache (a revive, a park); the floor is one inotify_add_watch;
 *  distinct  add+remove of a file nothing else watches (a kernel watch made
 *            and removed); the floor is inotify_add_watch + inotify_rm_watch;
 *  read      reading unique events (an attribute change of each of 2,000
 *            files in a watched directory, made untimed before the turns);
 *            the floor is read(2) of the group fd and a walk of its records.
 *            --pairs does not apply: a round reads the 2,000 events it
 *            made, and the costs are per event;
 *  tree      a tree add (FSNW_WATCH_TREE) of 2,000 directories, made
 *            breadth first with a fan-out of 10; the floor is a walk with
 *            openat + getdents64 and one inotify_add_watch per directory by
 *            its path. --pairs does not apply, the costs are per directory,
 *            and only the add is timed (the remove, or the raw group's
 *            close, comes after the clock stops).
 *
 * A build is named by the path of its shared library, with ":FLAGS" for
 * the fsnw_open flags of its handle (4: FSNW_OPEN_NO_STATS). Each copy has
 * its own libc in its namespace, whose malloc maps memory instead of
 * moving the program break: compare builds with each other, not with a
 * program that links the library.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <fsnwatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define BUILDS_MAX 8 /* glibc gives a process 16 namespaces */
#define ROUNDS_MAX 1000

enum mode { SHARED, IDLE, DISTINCT, READ, TREE };
#define READ_FILES 2000
#define TREE_DIRS 2000
#define TREE_FANOUT 10

struct build {
	const char *name;
	void *dl;
	int (*open)(struct fsnw **, const struct fsnw_options *);
	int (*close)(struct fsnw *);
	int (*add)(struct fsnw *, const char *, uint32_t, uint32_t);
	int (*remove)(struct fsnw *, int);
	int (*get_stats)(const struct fsnw *, struct fsnw_stats *);
	int (*read)(struct fsnw *, struct fsnw_event *, size_t, int);
	struct fsnw *w;
	double *pair, *over; /* ns, by round */
};

/* The scratch directory (mkdtemp), removed at exit, a failed one too. */
static char scratch[] = "/dev/shm/fsnw-ab.XXXXXX";

static void tree_path(char *buf, size_t len, long k);

static void scratch_remove(void)
{
	char path[128];

	for (long k = TREE_DIRS - 1; k >= 0; k--) {
		tree_path(path, sizeof(path), k);
		rmdir(path);
	}

	for (int f = 0; f < READ_FILES; f++) {
		snprintf(path, sizeof(path), "%s/d/f%d", scratch, f);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/d", scratch);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/kept", scratch);
	unlink(path);
	snprintf(path, sizeof(path), "%s/other", scratch);
	unlink(path);
	rmdir(scratch);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fsnw-ab: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr, "usage: fsnw-ab [--mode shared|idle|distinct|read|tree] [--rounds R]"
			" [--pairs N]\n"
			"               LIBRARY[:FLAGS] LIBRARY[:FLAGS]...\n");
	exit(2);
}

static void *sym(struct build *b, const char *name)
{
	void *p = dlsym(b->dl, name);

	if (!p)
		die("%s", dlerror());
	return p;
}

/* Load one build into a namespace of its own and open its handle. */
static void load(struct build *b, const char *arg, enum mode mode, const char *kept,
		 const char *watched, int rounds)
{
	struct fsnw_options o = { .size = sizeof(o), .idle_watches = mode == IDLE ? 64 : 0 };
	char path[4096];
	char *colon;

	snprintf(path, sizeof(path), "%s", arg);
	colon = strrchr(path, ':');
	if (colon) {
		*colon = '\0';
		o.flags = (uint32_t)strtoul(colon + 1, NULL, 0);
	}
	b->name = arg;
	b->dl = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
	if (!b->dl)
		die("%s", dlerror());
	b->open = sym(b, "fsnw_open");
	b->close = sym(b, "fsnw_close");
	b->add = sym(b, "fsnw_add");
	b->remove = sym(b, "fsnw_remove");
	b->get_stats = sym(b, "fsnw_get_stats");
	b->read = sym(b, "fsnw_read");
	if (b->open(&b->w, &o) < 0)
		die("fsnw_open failed in %s", arg);
	if (mode == READ && b->add(b->w, watched, FSNW_ATTRIB, 0) <= 0)
		die("fsnw_add of the directory failed in %s", arg);
	/* The kept watch of shared mode; in idle mode a watch added and
	 * removed, so that its kernel watch waits in the cache. */
	if (mode == SHARED && b->add(b->w, kept, FSNW_ATTRIB, 0) <= 0)
		die("fsnw_add of the kept file failed in %s", arg);
	b->pair = calloc((size_t)rounds, sizeof(double));
	b->over = calloc((size_t)rounds, sizeof(double));
	if (!b->pair || !b->over)
		die("%s", "out of memory");
}

static void lib_pairs(struct build *b, const char *path, long n)
{
	for (long i = 0; i < n; i++) {
		int wid = b->add(b->w, path, FSNW_ATTRIB, 0);

		if (wid <= 0 || b->remove(b->w, wid) != 0)
			die("an add or remove failed in %s", b->name);
	}
}

static void raw_pairs(int fd, enum mode mode, const char *kept, const char *other, long n)
{
	for (long i = 0; i < n; i++) {
		int wd = inotify_add_watch(fd, mode == DISTINCT ? other : kept,
					   IN_ATTRIB | (mode == DISTINCT ? 0 : IN_MASK_ADD));

		if (wd < 0 || (mode == DISTINCT && inotify_rm_watch(fd, wd) < 0))
			die("raw inotify call: %s", strerror(errno));
	}
	/* The IN_IGNOREDs of the removes: read between turns, untimed. */
}

/* Read n events from the handle, checking that they are the ones made. */
static void lib_events(struct build *b, long n)
{
	struct fsnw_event evs[256];
	long got = 0;

	while (got < n) {
		int r = b->read(b->w, evs, 256, 0);

		if (r <= 0)
			die("%s: %ld of %ld events read", b->name, got, n);
		for (int i = 0; i < r; i++)
			if (!(evs[i].mask & FSNW_ATTRIB) || !evs[i].name)
				die("%s: an event other than a file's attribute change", b->name);
		got += r;
	}
}

/* The same with read(2), walking the records as a raw program parses them. */
static void raw_events(int fd, long n)
{
	char buf[65536] __attribute__((aligned(8)));
	long got = 0;

	while (got < n) {
		ssize_t len = read(fd, buf, sizeof(buf));

		if (len <= 0)
			die("raw: %ld events read, then %s", got, len ? strerror(errno) : "none");
		for (char *p = buf; p < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)(void *)p;

			if (!(ev->mask & IN_ATTRIB) || !ev->len || !ev->name[0])
				die("%s", "raw: an event other than a file's attribute change");
			got++;
			p += sizeof(*ev) + ev->len;
		}
	}
}

/* An attribute change of each file: one event in every group watching. */
static void make_events(const char *dir, int round)
{
	char path[128];

	for (int i = 0; i < READ_FILES; i++) {
		snprintf(path, sizeof(path), "%s/d/f%d", dir, i);
		if (chmod(path, (round + i) % 2 ? 0600 : 0640) < 0)
			die("chmod: %s", strerror(errno));
	}
}

/* Directory k of the tree: k's parent is (k - 1) / TREE_FANOUT; 0 is t. */
static void tree_path(char *buf, size_t len, long k)
{
	if (k == 0) {
		snprintf(buf, len, "%s/t", scratch);
		return;
	}
	tree_path(buf, len, (k - 1) / TREE_FANOUT);
	snprintf(buf + strlen(buf), len - strlen(buf), "/d%ld", (k - 1) % TREE_FANOUT);
}

static void tree_make(void)
{
	char path[128];

	for (long k = 0; k < TREE_DIRS; k++) {
		tree_path(path, sizeof(path), k);
		if (mkdir(path, 0700) < 0)
			die("mkdir %s: %s", path, strerror(errno));
	}
}

/* The floor's walk below fd0 (path[0..len) names it): watched, then read. */
static long raw_walk(int ifd, int fd0, char *path, size_t len)
{
	enum { DENTS = 32768 };
	unsigned char *dents = malloc(DENTS); /* a level's, as readdir's DIR */
	long watched = 1;
	ssize_t n;

	if (!dents)
		die("%s", "out of memory");
	if (inotify_add_watch(ifd, path, IN_CREATE | IN_DELETE | IN_MOVE | IN_ONLYDIR) < 0)
		die("raw inotify_add_watch: %s", strerror(errno));
	while ((n = syscall(SYS_getdents64, fd0, dents, DENTS)) > 0) {
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(dents + off);
			size_t nl = strlen(e->d_name);
			int fd;

			off += e->d_reclen;
			if (e->d_type != DT_DIR || e->d_name[0] == '.')
				continue;
			fd = openat(fd0, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				die("raw openat: %s", strerror(errno));
			path[len] = '/';
			memcpy(path + len + 1, e->d_name, nl + 1);
			watched += raw_walk(ifd, fd, path, len + 1 + nl);
			path[len] = '\0';
		}
	}
	free(dents);
	close(fd0);
	return watched;
}

static int raw_tree(void)
{
	char path[4096];
	int ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), fd;

	tree_path(path, sizeof(path), 0);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ifd < 0 || fd < 0)
		die("raw tree: %s", strerror(errno));
	long n = raw_walk(ifd, fd, path, strlen(path));

	if (n != TREE_DIRS)
		die("raw tree: %ld directories of %d watched", n, TREE_DIRS);
	return ifd;
}

static int lib_tree(struct build *b)
{
	char path[128];
	int wid;

	tree_path(path, sizeof(path), 0);
	wid = b->add(b->w, path, FSNW_CREATE | FSNW_DELETE | FSNW_MOVE, FSNW_WATCH_TREE);
	if (wid <= 0)
		die("the tree add failed in %s: %d", b->name, wid);
	return wid;
}

/* After the clock: the tree goes, and what its remove queued is read. */
static void lib_tree_undo(struct build *b, int wid)
{
	struct fsnw_event evs[16];

	if (b->remove(b->w, wid) != 0)
		die("the tree remove failed in %s", b->name);
	while (b->read(b->w, evs, 16, 0) > 0)
		;
}

static void drain(int fd)
{
	char buf[65536];

	while (read(fd, buf, sizeof(buf)) > 0)
		;
}

/* One turn of tree mode: who's add (nb: the floor's walk), timed alone. */
static void turn_tree(struct build *builds, int nb, int who, int r, double *floor_ns)
{
	uint64_t t0 = now_ns();

	if (who == nb) {
		int ifd = raw_tree();

		floor_ns[r] = (double)(now_ns() - t0) / TREE_DIRS;
		close(ifd);
	} else {
		int wid = lib_tree(&builds[who]);

		builds[who].pair[r] = (double)(now_ns() - t0) / TREE_DIRS;
		lib_tree_undo(&builds[who], wid);
	}
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double quantile(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), by_value);
	return v[(int)(q * (n - 1) + 0.5)];
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "shared", "idle", "distinct", "read", "tree" };
	static const char *const unit[] = { "pairs", "pairs", "pairs", "events", "directories" };
	static const char *const unit_one[] = { "a pair", "a pair", "a pair", "an event",
						"a directory" };
	struct build builds[BUILDS_MAX];
	const char *dir = scratch;
	char kept[64], other[64], watched[64];
	enum mode mode = SHARED;
	int nb = 0, rounds = 41, fd, i;
	long pairs = 4000;
	double *floor_ns;

	for (i = 1; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--mode")) {
			for (mode = SHARED; mode <= TREE && strcmp(argv[i + 1], modes[mode]);)
				mode++;
			if (mode > TREE)
				usage();
		} else if (!strcmp(argv[i], "--rounds")) {
			rounds = atoi(argv[i + 1]);
		} else if (!strcmp(argv[i], "--pairs")) {
			pairs = atol(argv[i + 1]);
		} else {
			usage();
		}
		i++;
	}
	if (argc - i < 1 || argc - i > BUILDS_MAX || rounds < 1 || rounds > ROUNDS_MAX ||
	    pairs < 1)
		usage();
	if (!mkdtemp(scratch))
		die("mkdtemp: %s", strerror(errno));
	atexit(scratch_remove);
	snprintf(kept, sizeof(kept), "%s/kept", dir);
	snprintf(other, sizeof(other), "%s/other", dir);
	close(open(kept, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	close(open(other, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	snprintf(watched, sizeof(watched), "%s/d", dir);
	if (mkdir(watched, 0700) < 0)
		die("mkdir: %s", strerror(errno));
	for (int f = 0; mode == READ && f < READ_FILES; f++) {
		char path[128];

		snprintf(path, sizeof(path), "%s/f%d", watched, f);
		close(open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	}
	if (mode == READ)
		pairs = READ_FILES;
	if (mode == TREE) {
		tree_make();
		pairs = TREE_DIRS;
	}
	for (; i < argc; i++)
		load(&builds[nb++], argv[i], mode, kept, watched, rounds);
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	floor_ns = calloc((size_t)rounds, sizeof(double));
	if (fd < 0 || !floor_ns || inotify_add_watch(fd, mode == READ ? watched : kept,
						   IN_ATTRIB) < 0)
		die("the raw group: %s", strerror(errno));
	/* One untimed round warms every copy (and, in idle mode, parks the
	 * watch of `other` in each handle's cache). */
	for (int b = 0; b < nb && mode != READ && mode != TREE; b++)
		lib_pairs(&builds[b], mode == SHARED ? kept : other, 16);
	for (int b = 0; b < nb && mode == TREE; b++)
		lib_tree_undo(&builds[b], lib_tree(&builds[b]));
	for (int r = 0; r < rounds; r++) {
		if (mode == READ)
			make_events(dir, r);
		for (int k = 0; k <= nb; k++) {
			int who = (k + r) % (nb + 1);
			uint64_t t0 = now_ns();

			if (mode == TREE) {
				turn_tree(builds, nb, who, r, floor_ns);
				continue;
			}
			if (who == nb && mode == READ)
				raw_events(fd, pairs);
			else if (who == nb)
				raw_pairs(fd, mode, kept, other, pairs);
			else if (mode == READ)
				lib_events(&builds[who], pairs);
			else
				lib_pairs(&builds[who], mode == SHARED ? kept : other, pairs);
			if (who == nb)
				floor_ns[r] = (double)(now_ns() - t0) / (double)pairs;
			else
				builds[who].pair[r] = (double)(now_ns() - t0) / (double)pairs;
			if (mode != READ && mode != TREE) /* the IN_IGNOREDs of raw removes */
				drain(fd);
		}
		for (int b = 0; b < nb; b++)
			builds[b].over[r] = builds[b].pair[r] - floor_ns[r];
	}
	printf("fsnw-ab: mode %s, %d rounds of %ld %s; floor (raw) median %.0f ns\n",
	       modes[mode], rounds, pairs, unit[mode],
	       quantile(floor_ns, rounds, 0.5));
	for (int b = 0; b < nb; b++) {
		struct build *x = &builds[b];
		struct fsnw_stats st = { .size = sizeof(st) };
		const char *clock = "?";

		if (x->get_stats(x->w, &st) == 0 &&
		    st.size >= offsetof(struct fsnw_stats, timing_tsc) + sizeof(st.timing_tsc))
			clock = st.timing_tsc ? "tsc" : "monotonic";
		printf("%s: median %.0f ns %s, over the floor median %.0f (quartiles %.0f, %.0f);"
		       " timing clock %s\n",
		       x->name, quantile(x->pair, rounds, 0.5), unit_one[mode],
		       quantile(x->over, rounds, 0.5),
		       quantile(x->over, rounds, 0.25), quantile(x->over, rounds, 0.75), clock);
		x->close(x->w);
		free(x->pair);
		free(x->over);
	}
	free(floor_ns);
	close(fd);
	return 0;
}
