/* SPDX-License-Identifier: MIT */
/*
 * fsnw-tree: watch a directory tree, print its events as JSON lines, and
 * keep a view of the tree (every path and its type) that stays right:
 * events keep it up to date, and when events were lost (FSNW_OVERFLOW) the
 * tree is walked again and the difference is printed as synthetic creates
 * and deletes, so whoever reads the lines has a right view again too.
 *
 * One epoll loop over the watcher's fd, a signalfd and, with
 * --stats-interval, a timerfd; no work in signal handlers. SIGUSR1 (and the
 * timer): statistics to stderr. SIGUSR2: the view to --dump (or stderr).
 * SIGINT, SIGTERM, SIGHUP: release everything and exit 0.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "eventfmt.h"
#include "signals.h"
#include "stats-report.h"
#include "tree-view.h"

#define READ_MAX 256
#define READS_MAX 16 /* reads in a row while a scan waits for an empty one */
#define CATCH_UP_MAX 64 /* read_events in a row before a dump, if the tree never rests */
/* Everything that changes which paths exist, and writes being finished. */
#define TREE_MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE | FSNW_DELETE_SELF | FSNW_MOVE_SELF | \
		   FSNW_CLOSE_WRITE)

struct tree {
	struct tree_view v;
	struct fsnw *w;
	const char *dump;      /* --dump FILE */
	double interval;       /* --stats-interval, seconds; 0: none */
	int ep, sfd, tfd;      /* the loop: the watcher's fd, a signalfd, a timerfd */
	bool read_empty;       /* the last read found nothing */
};

static void usage(FILE *f)
{
	fputs("Usage: fsnw-tree [OPTION]... DIR\n"
	      "Watch the tree under DIR, print its events as JSON lines, keep a view of it\n"
	      "that a rescan puts right after an overflow.\n"
	      "      --queue N      event queue capacity (0: the library's default)\n"
	      "      --idle N       kernel watches kept parked for reuse\n"
	      "      --backend B    auto, inotify or fanotify\n"
	      "      --dump FILE    write the view to FILE on SIGUSR2 and on exit\n"
	      "      --stats-interval S  statistics to stderr every S seconds\n"
	      "  -h, --help         this text\n"
	      "Signals: USR1 statistics to stderr, USR2 the view, INT/TERM/HUP exit.\n"
	      "See fsnw-tree(1).\n",
	      f);
}

static void dump_view(const struct tree *t)
{
	char tmp[PATH_MAX];
	FILE *f;

	if (!t->dump) {
		snap_dump(&t->v.view, stderr);
		return;
	}
	/* Readers never see half a view: write aside, then rename over. */
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", t->dump) >= (int)sizeof(tmp)) {
		fprintf(stderr, "fsnw-tree: %s: %s\n", t->dump, strerror(ENAMETOOLONG));
		return;
	}
	f = fopen(tmp, "w");
	if (!f) {
		fprintf(stderr, "fsnw-tree: %s: %s\n", tmp, strerror(errno));
		return;
	}
	snap_dump(&t->v.view, f);
	if (fclose(f) == EOF || rename(tmp, t->dump) < 0) {
		fprintf(stderr, "fsnw-tree: %s: %s\n", t->dump, strerror(errno));
		unlink(tmp);
	}
}

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* The library's statistics, then ours: the view, the rescans, our CPU time. */
static void print_stats(const struct tree *t)
{
	struct rusage ru;

	stats_report(t->w, stderr, "fsnw-tree");
	if (getrusage(RUSAGE_SELF, &ru) < 0)
		memset(&ru, 0, sizeof(ru));
	fprintf(stderr, "fsnw-tree: %zu entries, %zu rescans, CPU %.6f s user %.6f s system\n",
		snap_count(&t->v.view), t->v.scans ? t->v.scans - 1 : 0, seconds(ru.ru_utime), seconds(ru.ru_stime));
}

static int read_events(struct tree *t);

/*
 * Before a dump, read what is ready: a sentinel's event may come in a read
 * ahead of the creates the library reports, at the next drain, for a
 * directory moved in before it. Returns 0 to go on, 1 to stop.
 */
static int catch_up(struct tree *t)
{
	t->read_empty = false;
	for (int i = 0; i < CATCH_UP_MAX && !t->read_empty; i++)
		if (read_events(t))
			return 1;
	return 0;
}

/* Returns 0 to go on, 1 to stop. */
static int handle_signal(struct tree *t)
{
	struct signalfd_siginfo si;

	if (read(t->sfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	switch (si.ssi_signo) {
	case SIGUSR1:
		print_stats(t);
		return 0;
	case SIGUSR2:
		if (catch_up(t))
			return 1;
		dump_view(t);
		return 0;
	default:
		return 1;
	}
}

/*
 * Read and apply what is there. Once, as a rule: the loop comes back while
 * more is ready. But while a scan waits for an empty read to stand, read on
 * until one comes back empty (tree_view_quiet may scan again). A few reads
 * at most, so that a tree that never rests does not keep the signals
 * waiting; an empty read then wakes nobody, so the loop polls with a short
 * timeout meanwhile (loop). Returns 0 to go on, 1 to stop.
 */
static int read_events(struct tree *t)
{
	struct fsnw_event evs[READ_MAX];
	int n, reads = 0;

	do {
		n = fsnw_read(t->w, evs, READ_MAX, 0);
		t->read_empty = n == 0;
		if (n < 0) {
			fprintf(stderr, "fsnw-tree: reading events: %s\n", strerror(-n));
			return 1;
		}
		for (int i = 0; i < n; i++) {
			int ret = tree_view_event(&t->v, &evs[i]);

			if (ret < 0)
				fprintf(stderr, "fsnw-tree: %s: %s\n", t->v.root, strerror(-ret));
			else if (ret)
				fprintf(stderr, "fsnw-tree: %s %s\n", t->v.root,
					evs[i].mask & FSNW_MOVE_SELF ? "was moved away" : "is gone");
			else if (evs[i].mask & FSNW_OVERFLOW)
				fprintf(stderr, "fsnw-tree: rescan after overflow: %zu created, "
					"%zu deleted\n", t->v.created, t->v.deleted);
			if (ret)
				return 1;
		}
		if (n == 0) {
			size_t scans = t->v.scans;
			int ret = tree_view_quiet(&t->v);

			if (ret < 0) {
				fprintf(stderr, "fsnw-tree: scanning %s: %s\n", t->v.root,
					strerror(-ret));
				return 1;
			}
			if (t->v.scans != scans)
				fprintf(stderr, "fsnw-tree: rescan after a directory changed "
					"during the last: %zu created, %zu deleted\n",
					t->v.created, t->v.deleted);
		}
		if (fflush(stdout) == EOF) {
			fprintf(stderr, "fsnw-tree: writing events: %s\n", strerror(errno));
			return 1;
		}
	} while (tree_view_unsettled(&t->v) && ++reads < READS_MAX);
	return 0;
}

static int loop(struct tree *t)
{
	for (;;) {
		struct epoll_event ee;
		/* A scan that has not stood yet needs an empty read soon. */
		int n = epoll_wait(t->ep, &ee, 1, tree_view_unsettled(&t->v) ? 10 : -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "fsnw-tree: epoll_wait: %s\n", strerror(errno));
			return 1;
		}
		if (n == 0) {
			if (read_events(t))
				return 1;
			continue;
		}
		if (ee.data.fd == t->sfd) {
			if (handle_signal(t))
				return 0;
			continue;
		}
		if (ee.data.fd == t->tfd) {
			stats_timer_ack(t->tfd);
			print_stats(t);
			continue;
		}
		if (read_events(t))
			return 1;
	}
}

static int parse_u32(const char *arg, const char *what, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || v > UINT32_MAX) {
		fprintf(stderr, "fsnw-tree: '%s' is not a valid %s\n", arg, what);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

static int parse_opts(int argc, char **argv, struct tree *t, struct fsnw_options *fo)
{
	static const struct option longs[] = {
		{ "queue", required_argument, NULL, 'Q' },
		{ "idle", required_argument, NULL, 'I' },
		{ "backend", required_argument, NULL, 'B' },
		{ "dump", required_argument, NULL, 'D' },
		{ "stats-interval", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		switch (c) {
		case 'Q':
			if (parse_u32(optarg, "queue capacity", &fo->queue_capacity) < 0)
				return -1;
			break;
		case 'I':
			if (parse_u32(optarg, "idle watch count", &fo->idle_watches) < 0)
				return -1;
			break;
		case 'B':
			if (!strcmp(optarg, "auto") || !strcmp(optarg, "inotify") ||
			    !strcmp(optarg, "fanotify")) {
				fo->backend = optarg[0] == 'a' ? FSNW_BACKEND_AUTO :
					      optarg[0] == 'i' ? FSNW_BACKEND_INOTIFY :
								 FSNW_BACKEND_FANOTIFY;
				break;
			}
			fprintf(stderr, "fsnw-tree: '%s' is not a backend: auto, inotify or "
				"fanotify\n", optarg);
			return -1;
		case 'D':
			t->dump = optarg;
			break;
		case 'S':
			if (stats_interval_parse(optarg, &t->interval) < 0) {
				fprintf(stderr, "fsnw-tree: '%s' is not a valid interval: seconds, "
					"from 0.001 to 86400\n", optarg);
				return -1;
			}
			break;
		case 'h':
			usage(stdout);
			return 1;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (optind != argc - 1) {
		usage(stderr);
		return -1;
	}
	if (tree_view_init(&t->v, argv[optind], -1, stdout) < 0) {
		fprintf(stderr, "fsnw-tree: %s\n", strerror(ENOMEM));
		return -1;
	}
	return 0;
}

static int epoll_add(int ep, int fd)
{
	struct epoll_event ee = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ee);
}

static int setup(struct tree *t, const struct fsnw_options *fo)
{
	sigset_t set;
	int ret;

	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	/* Blocked, they wait in the signalfd for the loop to take them. */
	t->sfd = signals_open(&set);
	if (t->sfd < 0) {
		fprintf(stderr, "fsnw-tree: setting up signals: %s\n", strerror(-t->sfd));
		return -1;
	}
	if (t->interval > 0) {
		t->tfd = stats_timer_open(t->interval);
		if (t->tfd < 0) {
			fprintf(stderr, "fsnw-tree: setting up the timer: %s\n",
				strerror(-t->tfd));
			return -1;
		}
	}
	t->ep = epoll_create1(EPOLL_CLOEXEC);
	if (t->ep < 0 || epoll_add(t->ep, t->sfd) < 0 ||
	    (t->tfd >= 0 && epoll_add(t->ep, t->tfd) < 0)) {
		fprintf(stderr, "fsnw-tree: setting up the loop: %s\n", strerror(errno));
		return -1;
	}
	ret = fsnw_open(&t->w, fo);
	if (ret < 0) {
		t->w = NULL;
		fprintf(stderr, "fsnw-tree: cannot open a watcher: %s%s\n", strerror(-ret),
			ret == -EMFILE ? " (see the sysctl fs.inotify.max_user_instances)" : "");
		return -1;
	}
	if (epoll_add(t->ep, fsnw_get_fd(t->w)) < 0) {
		fprintf(stderr, "fsnw-tree: setting up the loop: %s\n", strerror(errno));
		return -1;
	}
	/* The watch first, then the scan, which stands once a read comes back
	 * empty with no directory changed since it began (tree-view.h). */
	t->v.wid = fsnw_add(t->w, t->v.root, TREE_MASK, FSNW_WATCH_TREE);
	if (t->v.wid < 0) {
		fprintf(stderr, "fsnw-tree: cannot watch %s: %s\n", t->v.root, strerror(-t->v.wid));
		return -1;
	}
	ret = tree_view_scan(&t->v);
	if (ret < 0) {
		fprintf(stderr, "fsnw-tree: walking %s: %s\n", t->v.root, strerror(-ret));
		return -1;
	}
	fprintf(stderr, "fsnw-tree: watching %s (%zu entries)\n", t->v.root,
		snap_count(&t->v.view));
	return 0;
}

int main(int argc, char **argv)
{
	struct fsnw_options fo = { .size = sizeof(fo) };
	struct tree t = { .ep = -1, .sfd = -1, .tfd = -1 };
	int ret, status = 1;
	bool walked = false;

	ret = parse_opts(argc, argv, &t, &fo);
	if (ret > 0)
		status = 0;
	else if (ret == 0 && setup(&t, &fo) == 0) {
		walked = true;
		status = loop(&t);
	}
	if (t.dump && walked)
		dump_view(&t);
	fsnw_close(t.w);
	tree_view_fini(&t.v);
	if (t.ep >= 0)
		close(t.ep);
	if (t.sfd >= 0)
		close(t.sfd);
	if (t.tfd >= 0)
		close(t.tfd);
	return status;
}
