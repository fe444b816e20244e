/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

/*
 * Interrupted runs must not leave the scratch directory (it may hold
 * 100,000 files) in /dev/shm. Removing a tree is not async-signal-safe, but
 * execve is: the handler becomes a shell that removes it, then dies of the
 * same signal so the caller still sees how the run ended.
 */
static char *cleanup_argv[2][7];

static void on_signal(int sig)
{
	execv("/bin/sh", cleanup_argv[sig == SIGTERM]);
	_exit(128 + sig);
}

static void catch_signals(const char *dir)
{
	static const char *const names[2] = { "INT", "TERM" };
	struct sigaction sa;

	for (int i = 0; i < 2; i++) {
		char **a = cleanup_argv[i];

		a[0] = "sh";
		a[1] = "-c";
		a[2] = "rm -rf -- \"$1\"; trap - \"$2\"; kill -s \"$2\" $$";
		a[3] = "fsnw-bench";
		a[4] = (char *)dir;
		a[5] = (char *)names[i];
		a[6] = NULL;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void bench_default_signals(void)
{
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
}

/* What bench_in_child's process reports before its out bytes. */
struct child_report {
	int failures;
	bool skipped;
	char variant[sizeof(((struct skip *)0)->variant)];
	char reason[sizeof(((struct skip *)0)->reason)];
};

/* All len bytes through the pipe (read(2), or write(2) when out); false on an
 * error or an early end. */
static bool transfer(int fd, void *buf, size_t len, bool out)
{
	for (char *p = buf; len;) {
		ssize_t n = out ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

int bench_in_child(struct bench *b, void (*fn)(struct bench *b, void *arg, void *out), void *arg,
		   void *out, size_t len)
{
	struct child_report rep;
	int p[2], status;
	bool got;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		bench_fatal(b, "pipe: %s", strerror(errno));
	pid = bench_fork(b);
	if (pid < 0)
		bench_fatal(b, "fork: %s", strerror(errno));
	if (pid == 0) {
		int failures = b->failures;
		size_t nskips = b->nskips;

		close(p[0]);
		memset(&rep, 0, sizeof(rep));
		fn(b, arg, out);
		rep.failures = b->failures - failures;
		if (b->nskips > nskips) {
			rep.skipped = true;
			snprintf(rep.variant, sizeof(rep.variant), "%s", b->skips[nskips].variant);
			snprintf(rep.reason, sizeof(rep.reason), "%s", b->skips[nskips].reason);
		}
		_exit(transfer(p[1], &rep, sizeof(rep), true) && transfer(p[1], out, len, true) ?
			      0 : 3);
	}
	close(p[1]);
	got = transfer(p[0], &rep, sizeof(rep), false) && transfer(p[0], out, len, false);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!got || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	b->failures += rep.failures;
	if (rep.skipped)
		bench_skip(b, rep.variant, "%s", rep.reason);
	return 0;
}

pid_t bench_fork(struct bench *b)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		b->child = true;
		bench_default_signals();
	}
	return pid;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void remove_scratch(struct bench *b)
{
	if (!b->dir || b->child)
		return;
	bench_default_signals();
	nftw(b->dir, rm_entry, 64, FTW_DEPTH | FTW_PHYS);
	free(b->dir);
	b->dir = NULL;
}

static const char *default_dir(void)
{
	struct stat st;
	const char *t;

	/* tmpfs is what most published experiments measure; /dev/shm is tmpfs almost everywhere. */
	if (stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0)
		return "/dev/shm";
	t = getenv("TMPDIR");
	return t && *t ? t : "/tmp";
}

/* Every CPU of --cpus must take a pinned thread now, or the run fails before it starts. */
static int check_cpus(struct bench *b)
{
	const struct long_list *l = &b->o->cpus;

	for (int i = 0; i < l->n; i++) {
		cpu_set_t set;

		CPU_ZERO(&set);
		if (l->v[i] >= CPU_SETSIZE) {
			fprintf(stderr, "fsnw-bench: --cpus: CPU %ld is out of range\n", l->v[i]);
			return -1;
		}
		CPU_SET((int)l->v[i], &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			fprintf(stderr, "fsnw-bench: cannot pin a thread to CPU %ld: %s\n", l->v[i],
				strerror(errno));
			sched_setaffinity(0, sizeof(b->affinity), &b->affinity);
			return -1;
		}
	}
	sched_setaffinity(0, sizeof(b->affinity), &b->affinity);
	return 0;
}

void read_loadavg(char *buf, size_t len)
{
	FILE *f = fopen("/proc/loadavg", "r");

	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

int bench_init(struct bench *b, const struct bench_opts *o)
{
	struct utsname u;
	char tmpl[4096];
	const char *parent = o->dir ? o->dir : default_dir();
	int err;

	memset(b, 0, sizeof(*b));
	b->o = o;
	b->tables = true;
	b->tty = isatty(STDERR_FILENO);
	if (uname(&u) == 0)
		snprintf(b->kernel, sizeof(b->kernel), "%s", u.release);
	if (sched_getaffinity(0, sizeof(b->affinity), &b->affinity) < 0)
		CPU_ZERO(&b->affinity);
	b->ncpu = CPU_COUNT(&b->affinity);
	if (b->ncpu < 1)
		b->ncpu = 1;
	if (check_cpus(b) < 0)
		return -1;
	read_loadavg(b->loadavg, sizeof(b->loadavg));
	snprintf(tmpl, sizeof(tmpl), "%s/fsnw-bench.XXXXXX", parent);
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "fsnw-bench: cannot make a scratch directory in %s: %s\n", parent,
			strerror(errno));
		return -1;
	}
	b->dir = strdup(tmpl);
	if (!b->dir)
		return -1;
	catch_signals(b->dir);
	err = results_open(b);
	if (err < 0) {
		fprintf(stderr, "fsnw-bench: --csv %s: %s\n", o->csv, strerror(-err));
		remove_scratch(b);
		return -1;
	}
	return 0;
}

void bench_fini(struct bench *b)
{
	results_close(b);
	remove_scratch(b);
}

void bench_fatal(struct bench *b, const char *fmt, ...)
{
	va_list ap;

	fputs("fsnw-bench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (b && b->csv)
		fflush(b->csv);
	if (b)
		remove_scratch(b);
	_exit(1);
}

long bench_pick(const struct bench *b, long tiny, long small, long def, long seed)
{
	switch (b->o->size) {
	case SIZE_TINY:
		return tiny;
	case SIZE_SMALL:
		return small;
	case SIZE_SEED:
		return seed;
	default:
		return def;
	}
}

void bench_rounds(const struct bench *b, int def_warmup, int def_rounds, int *warmup,
		  int *rounds)
{
	*warmup = b->o->warmup >= 0 ? (int)b->o->warmup : def_warmup;
	*rounds = b->o->rounds >= 1 ? (int)b->o->rounds : def_rounds;
}

int bench_mkdir(struct bench *b, const char *name, char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s/%s", b->dir, name) >= len)
		return -ENAMETOOLONG;
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int bench_make_files(struct bench *b, const char *dir, const char *prefix, long n, size_t size)
{
	static const char zero[4096];
	char path[4096];

	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/%s%ld", dir, prefix, i);
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		for (size_t done = 0; done < size;) {
			size_t chunk = size - done < sizeof(zero) ? size - done : sizeof(zero);
			ssize_t w = write(fd, zero, chunk);

			if (w <= 0) {
				int err = w < 0 ? -errno : -EIO;

				close(fd);
				return err;
			}
			done += (size_t)w;
		}
		close(fd);
		if (!(i & 4095))
			bench_progress(b, "creating files in %s: %ld/%ld", dir, i, n);
	}
	return 0;
}

int bench_unlink_files(struct bench *b, const char *dir, const char *prefix, long n)
{
	char path[4096];
	int ret = 0;

	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s%ld", dir, prefix, i);
		if (unlink(path) < 0 && errno != ENOENT)
			ret = -errno;
		if (!(i & 4095))
			bench_progress(b, "removing files in %s: %ld/%ld", dir, i, n);
	}
	return ret;
}

int bench_cpu(const struct bench *b, int idx)
{
	const struct long_list *l = &b->o->cpus;

	if (!l->n)
		return -1;
	return (int)l->v[(idx % l->n + l->n) % l->n];
}

int bench_cpus(const struct bench *b)
{
	const struct long_list *l = &b->o->cpus;
	cpu_set_t set;

	if (!l->n)
		return b->ncpu;
	CPU_ZERO(&set);
	for (int i = 0; i < l->n; i++)
		CPU_SET((int)l->v[i], &set);
	return CPU_COUNT(&set);
}

bool bench_oversubscribed(const struct bench *b, long n)
{
	return n > bench_cpus(b);
}

const char *bench_workers_label(const struct bench *b, const char *sym, long n, char *buf,
				size_t len)
{
	int cpus = bench_cpus(b);

	if (bench_oversubscribed(b, n))
		snprintf(buf, len, "%s=%ld (%d CPU%s, oversubscribed)", sym, n, cpus,
			 cpus == 1 ? "" : "s");
	else
		snprintf(buf, len, "%s=%ld", sym, n);
	return buf;
}

const char *bench_placement(const struct bench *b, int cpu_offset, long n, char *buf,
			    size_t len)
{
	size_t off = 0;

	if (!b->o->cpus.n) {
		snprintf(buf, len, "unpinned (%d CPU%s allowed)", b->ncpu, b->ncpu == 1 ? "" : "s");
		return buf;
	}
	off = (size_t)snprintf(buf, len, "CPU%s ", n == 1 ? "" : "s");
	for (long i = 0; i < n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d", i ? "," : "",
					bench_cpu(b, cpu_offset + (int)i));
	return buf;
}

void bench_pin_self(struct bench *b, int idx)
{
	int cpu = bench_cpu(b, idx);
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0)
		bench_fatal(b, "cannot pin the thread to CPU %d: %s", cpu, strerror(errno));
}

void bench_unpin_self(struct bench *b)
{
	if (b->o->cpus.n)
		sched_setaffinity(0, sizeof(b->affinity), &b->affinity);
}

struct team_arg {
	struct team *t;
	int idx;
};

static void *team_main(void *p)
{
	struct team_arg *a = p;
	struct team *t = a->t;
	int idx = a->idx;

	t->fn(t, idx);
	t->ran_on[idx] = sched_getcpu();
	return NULL;
}

void team_start(struct bench *b, struct team *t, int n, int cpu_offset, team_fn fn, void *arg)
{
	struct team_arg *args;

	t->b = b;
	t->n = n;
	t->fn = fn;
	t->arg = arg;
	t->cpu_offset = cpu_offset;
	t->tid = calloc((size_t)n, sizeof(*t->tid));
	t->cpu = calloc((size_t)n, sizeof(*t->cpu));
	t->ran_on = calloc((size_t)n, sizeof(*t->ran_on));
	args = calloc((size_t)n, sizeof(*args));
	t->args = args;
	if (!t->tid || !t->cpu || !t->ran_on || !args)
		bench_fatal(b, "out of memory");
	pthread_barrier_init(&t->bar, NULL, (unsigned)n + 1);
	pthread_barrier_init(&t->peers, NULL, (unsigned)n);
	for (int i = 0; i < n; i++) {
		pthread_attr_t attr;
		cpu_set_t set;
		int err;

		args[i].t = t;
		args[i].idx = i;
		t->cpu[i] = bench_cpu(b, cpu_offset + i);
		pthread_attr_init(&attr);
		if (t->cpu[i] >= 0) {
			CPU_ZERO(&set);
			CPU_SET(t->cpu[i], &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		err = pthread_create(&t->tid[i], &attr, team_main, &args[i]);
		pthread_attr_destroy(&attr);
		/* Threads already started wait at a barrier sized for all of them:
		 * nothing can be undone cleanly, and the run is void anyway. */
		if (err)
			bench_fatal(b, "cannot start worker %d%s%.0d: %s", i,
				    t->cpu[i] >= 0 ? " pinned to CPU " : "",
				    t->cpu[i] >= 0 ? t->cpu[i] : 0, strerror(err));
	}
}

void team_sync(struct team *t)
{
	pthread_barrier_wait(&t->bar);
}

void team_sync_peers(struct team *t)
{
	pthread_barrier_wait(&t->peers);
}

int team_join(struct team *t)
{
	int moved = 0;

	for (int i = 0; i < t->n; i++) {
		pthread_join(t->tid[i], NULL);
		if (t->cpu[i] >= 0 && t->ran_on[i] != t->cpu[i])
			moved++;
	}
	pthread_barrier_destroy(&t->bar);
	pthread_barrier_destroy(&t->peers);
	free(t->tid);
	free(t->cpu);
	free(t->ran_on);
	free(t->args);
	t->tid = NULL;
	t->cpu = t->ran_on = NULL;
	t->args = NULL;
	return moved;
}

long read_sysctl(const char *path)
{
	FILE *f = fopen(path, "r");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* inotify instances held by processes of our effective uid, as /proc shows them. */
static long inotify_in_use(void)
{
	DIR *proc = opendir("/proc");
	struct dirent *de;
	uid_t me = geteuid();
	long n = 0;

	if (!proc)
		return 0;
	while ((de = readdir(proc))) {
		char fdpath[300], link[64], target[64];
		struct stat st;
		DIR *fds;
		struct dirent *fe;

		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (fstatat(dirfd(proc), de->d_name, &st, 0) < 0 || st.st_uid != me)
			continue;
		snprintf(fdpath, sizeof(fdpath), "/proc/%s/fd", de->d_name);
		fds = opendir(fdpath);
		if (!fds)
			continue;
		while ((fe = readdir(fds))) {
			ssize_t len;

			if (fe->d_name[0] == '.')
				continue;
			snprintf(link, sizeof(link), "%.40s", fe->d_name);
			len = readlinkat(dirfd(fds), link, target, sizeof(target) - 1);
			if (len <= 0)
				continue;
			target[len] = '\0';
			if (!strcmp(target, "anon_inode:inotify"))
				n++;
		}
		closedir(fds);
	}
	closedir(proc);
	return n;
}

bool bench_inotify_room(struct bench *b, const char *variant, long need)
{
	long max = read_sysctl("/proc/sys/fs/inotify/max_user_instances");
	long used, headroom;

	if (max < 0)
		return true; /* no such sysctl: let inotify_init1 say */
	/* Scanning every fd of every process costs milliseconds; rounds ask
	 * often and the count moves slowly: look again every two seconds. */
	if (!b->inotify_seen_ns || now_ns() - b->inotify_seen_ns > 2000000000u) {
		b->inotify_used = inotify_in_use();
		b->inotify_seen_ns = now_ns();
	}
	used = b->inotify_used;
	/* Other test runs of this user share the limit: leave them an eighth. */
	headroom = max / 8 > 8 ? max / 8 : 8;
	if (used + need + headroom <= max)
		return true;
	bench_skip(b, variant,
		   "needs %ld inotify instances; fs.inotify.max_user_instances=%ld, %ld in use by "
		   "this user, %ld left free for others: sysctl -w "
		   "fs.inotify.max_user_instances=%ld, or fewer instances (churn: --groups)",
		   need, max, used, headroom, (used + need + headroom) * 2);
	return false;
}
