/* SPDX-License-Identifier: MIT */
/*
 * merge, kernel variants (the fanotify merge series, LTP fanotify05): N files opened twice
 * under a fanotify FAN_CLASS_NOTIF group with a mount mark for FAN_OPEN:
 * first with O_RDWR | O_CREAT (events on unique files: the "create" pass),
 * then with O_RDONLY (events that may merge: the "open" pass). The files are
 * made once, before the rounds, so every round is LTP's second iteration,
 * the one the series' timings come from: "create" does not create.
 *
 * With the default queue (fs.fanotify.max_queued_events) and N one more than
 * it holds, exactly one overflow event must come, last, and the events on
 * unique files in creation order; the row counts every event read, the
 * overflow included, as LTP and the series do (16385 = 16384 + 1 overflow).
 * With FAN_UNLIMITED_QUEUE no overflow may come; how many second-pass
 * events merged depends on the kernel's hash and is reported, not asserted.
 *
 * A mount mark sees every open on its mount, and other programs use
 * /dev/shm: the test runs in a child process with a private mount namespace
 * and a tmpfs of its own, which nobody else can see.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fanotify.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "merge.h"

enum msg_type { MSG_RESULT, MSG_SKIP, MSG_FAIL, MSG_PROGRESS, MSG_TRACE };

static const char *const kvariant[2] = { "kernel-limited", "kernel-unlimited" };

struct kmsg {
	int type;
	int variant;
	int round;    /* measured round, <= 0 while warming up */
	int ok;
	double create_ms, open_ms;
	long events, overflows; /* events: every record read but the overflow */
	char text[256];
};

static void send_msg(int fd, const struct kmsg *m)
{
	/* A pipe write of this size is atomic; the parent reads whole records. */
	if (write(fd, m, sizeof(*m)) != (ssize_t)sizeof(*m))
		_exit(3);
}

static void send_text(int fd, int type, int variant, int round, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void send_text(int fd, int type, int variant, int round, const char *fmt, ...)
{
	struct kmsg m = { .type = type, .variant = variant, .round = round };
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m.text, sizeof(m.text), fmt, ap);
	va_end(ap);
	send_msg(fd, &m);
}

struct kctx {
	int wfd;
	const char *mnt;
	long N;
	long max;     /* the kernel queue's capacity */
	char **path;
	ino_t *ino;
};

static int touch_pass(struct kctx *k, int flags, int variant, const char *what)
{
	for (long i = 0; i < k->N; i++) {
		int fd = open(k->path[i], flags | O_CLOEXEC, 0600);

		if (fd < 0)
			return -errno;
		close(fd);
		if (!(i & 4095))
			send_text(k->wfd, MSG_PROGRESS, variant, 0, "%s: %s %ld/%ld", kvariant[variant],
				  what, i, k->N);
	}
	return 0;
}

/* Read every event; check order and overflow; close the event fds. */
static void read_all(struct kctx *k, int fan, struct kmsg *m, bool *order, bool *late,
		     long *wrong)
{
	char buf[8192] __attribute__((aligned(8)));
	long cursor = 0;
	ssize_t n;

	*order = true;
	*late = false;
	*wrong = 0;
	while ((n = read(fan, buf, sizeof(buf))) > 0) {
		struct fanotify_event_metadata *md = (void *)buf;

		for (; FAN_EVENT_OK(md, n); md = FAN_EVENT_NEXT(md, n)) {
			struct stat st;

			if (md->mask & FAN_Q_OVERFLOW) {
				m->overflows++;
				continue;
			}
			*late |= m->overflows > 0;
			m->events++;
			if (md->mask != FAN_OPEN)
				(*wrong)++;
			if (md->fd < 0 || fstat(md->fd, &st) < 0) {
				(*wrong)++;
			} else if (m->events <= k->N) {
				/* The first pass: one event per file, in creation order. */
				if (st.st_ino != k->ino[m->events - 1])
					*order = false;
				cursor = 0;
			} else {
				/* Second-pass events that did not merge: files in order. */
				while (cursor < k->N && k->ino[cursor] != st.st_ino)
					cursor++;
				if (cursor == k->N)
					*order = false;
				else
					cursor++;
			}
			if (md->fd >= 0)
				close(md->fd);
		}
	}
	if (n < 0 && errno != EAGAIN)
		(*wrong)++;
}

static void kernel_round(struct kctx *k, int variant, int round)
{
	struct kmsg m = { .type = MSG_RESULT, .variant = variant, .round = round, .ok = 1 };
	unsigned flags = FAN_CLASS_NOTIF | FAN_NONBLOCK | FAN_CLOEXEC;
	uint64_t t0, t1, t2;
	bool order, late;
	long wrong;
	int fan, err;

	if (variant == 1)
		flags |= FAN_UNLIMITED_QUEUE;
	fan = fanotify_init(flags, O_RDONLY | O_LARGEFILE | O_CLOEXEC);
	if (fan < 0) {
		send_text(k->wfd, MSG_FAIL, variant, round, "fanotify_init: %s", strerror(errno));
		return;
	}
	if (fanotify_mark(fan, FAN_MARK_ADD | FAN_MARK_MOUNT, FAN_OPEN, AT_FDCWD, k->mnt) < 0) {
		send_text(k->wfd, MSG_FAIL, variant, round, "fanotify_mark: %s", strerror(errno));
		close(fan);
		return;
	}
	/* LTP's two passes over files that exist already. */
	t0 = now_ns();
	err = touch_pass(k, O_RDWR | O_CREAT, variant, "first pass");
	t1 = now_ns();
	if (!err)
		err = touch_pass(k, O_RDONLY, variant, "second pass");
	t2 = now_ns();
	read_all(k, fan, &m, &order, &late, &wrong);
	close(fan);
	m.create_ms = (double)(t1 - t0) / 1e6;
	m.open_ms = (double)(t2 - t1) / 1e6;
	if (err) {
		snprintf(m.text, sizeof(m.text), "creating or opening %ld files: %s", k->N,
			 strerror(-err));
		m.ok = 0;
	} else if (wrong || !order || late) {
		snprintf(m.text, sizeof(m.text), "%ld unexpected events, creation order %s, "
			 "overflow %s", wrong, order ? "kept" : "BROKEN",
			 late ? "not last" : "last or none");
		m.ok = 0;
	} else if (variant == 0 && k->N > k->max &&
		   (m.overflows != 1 || m.events != k->max)) {
		snprintf(m.text, sizeof(m.text), "%ld events and %ld overflows; expected %ld "
			 "events (the queue's capacity) and exactly one overflow",
			 m.events, m.overflows, k->max);
		m.ok = 0;
	} else if ((variant == 1 || k->N <= k->max) && (m.overflows || m.events < k->N)) {
		snprintf(m.text, sizeof(m.text), "%ld events and %ld overflows; expected at "
			 "least %ld events and no overflow", m.events, m.overflows, k->N);
		m.ok = 0;
	}
	send_msg(k->wfd, &m);
}

/* The files, made once before any round, and their inode numbers. */
static int make_files(struct kctx *k)
{
	for (long i = 0; i < k->N; i++) {
		struct stat st;
		int fd = open(k->path[i], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		if (fd < 0)
			return -errno;
		close(fd);
		if (stat(k->path[i], &st) < 0)
			return -errno;
		k->ino[i] = st.st_ino;
		if (!(i & 4095))
			send_text(k->wfd, MSG_PROGRESS, 0, 0, "making %ld files: %ld", k->N, i);
	}
	return 0;
}

static void child(int wfd, const char *mnt, long N, long max, int warmup, int rounds,
		  const bool want[2])
{
	struct kctx k = { .wfd = wfd, .mnt = mnt, .N = N, .max = max };
	struct rlimit rl;
	int fan;

	/* Events carry open fds until we close them: room for a read's worth. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	fan = fanotify_init(FAN_CLASS_NOTIF, O_RDONLY);
	if (fan < 0) {
		for (int v = 0; v < 2; v++)
			send_text(wfd, MSG_SKIP, v, 0, "fanotify_init: %s%s", strerror(errno),
				  errno == EPERM ? " (needs CAP_SYS_ADMIN)" : "");
		_exit(0);
	}
	close(fan);
	if (unshare(CLONE_NEWNS) < 0 || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("fsnw-bench", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") < 0) {
		for (int v = 0; v < 2; v++)
			send_text(wfd, MSG_SKIP, v, 0, "cannot make a private tmpfs for the mount "
				  "mark: %s (needs CAP_SYS_ADMIN)", strerror(errno));
		_exit(0);
	}
	k.path = calloc((size_t)N, sizeof(char *));
	k.ino = calloc((size_t)N, sizeof(ino_t));
	if (!k.path || !k.ino)
		_exit(4);
	for (long i = 0; i < N; i++)
		if (asprintf(&k.path[i], "%s/fname_%ld", mnt, i) < 0)
			_exit(4);
	fan = make_files(&k);
	if (fan < 0) {
		for (int v = 0; v < 2; v++)
			send_text(wfd, MSG_FAIL, v, 0, "making %ld files: %s", N, strerror(-fan));
		_exit(0);
	}
	send_text(wfd, MSG_TRACE, 0, 0, "kernel: %ld files made before the rounds; each round "
		  "opens them O_RDWR|O_CREAT, then O_RDONLY", N);
	for (int v = 0; v < 2; v++)
		for (int r = 0; want[v] && r < warmup + rounds; r++)
			kernel_round(&k, v, r - warmup + 1);
	for (long i = 0; i < N; i++)
		free(k.path[i]);
	free(k.path);
	free(k.ino);
	/* The namespace and its tmpfs go with the process. */
	_exit(0);
}

static void handle(struct bench *b, const struct kmsg *m, long N)
{
	const char *v = kvariant[m->variant & 1];

	switch (m->type) {
	case MSG_PROGRESS:
		bench_progress(b, "%s", m->text);
		break;
	case MSG_TRACE:
		bench_trace(b, "%s", m->text);
		break;
	case MSG_SKIP:
		bench_skip(b, v, "%s", m->text);
		break;
	case MSG_FAIL:
		bench_fail(b, v, N, m->round, "%s", m->text);
		break;
	case MSG_RESULT:
		if (!m->ok)
			bench_fail(b, v, N, m->round, "%s", m->text);
		if (m->round <= 0)
			break;
		bench_record(b, v, N, m->round, "create", m->create_ms, "ms", m->ok);
		bench_record(b, v, N, m->round, "open", m->open_ms, "ms", m->ok);
		/* Every event read, the overflow included, as LTP counts them. */
		bench_record(b, v, N, m->round, "events", (double)(m->events + m->overflows),
			     "events", m->ok);
		bench_record(b, v, N, m->round, "overflows", (double)m->overflows, "events", m->ok);
		if (m->variant == 1)
			bench_record(b, v, N, m->round, "merged", (double)(2 * N - m->events),
				     "events", m->ok);
		break;
	}
}

void merge_kernel(struct bench *b, long N, int warmup, int rounds)
{
	bool want[2] = { cli_variant_on(b->o, kvariant[0]), cli_variant_on(b->o, kvariant[1]) };
	long max = read_sysctl("/proc/sys/fs/fanotify/max_queued_events");
	char mnt[4096];
	struct kmsg m;
	int p[2], status, err;
	pid_t pid;
	ssize_t n;

	if (max <= 0)
		max = 16384; /* before Linux 5.13 the limit was fixed at this */
	err = bench_mkdir(b, "merge-kernel", mnt, sizeof(mnt));
	if (err) {
		bench_fail(b, kvariant[0], N, 0, "mkdir: %s", strerror(-err));
		return;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		bench_fail(b, kvariant[0], N, 0, "pipe: %s", strerror(errno));
		return;
	}
	pid = bench_fork(b);
	if (pid < 0) {
		bench_fail(b, kvariant[0], N, 0, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		bench_pin_self(b, 0);
		child(p[1], mnt, N, max, warmup, rounds, want);
	}
	close(p[1]);
	while ((n = read(p[0], &m, sizeof(m))) == (ssize_t)sizeof(m) || (n < 0 && errno == EINTR))
		if (n > 0)
			handle(b, &m, N);
	close(p[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		bench_fail(b, kvariant[0], N, 0, "the kernel test process failed (status %d)",
			   status);
	rmdir(mnt);
}
