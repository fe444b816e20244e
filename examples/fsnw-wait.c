/* SPDX-License-Identifier: MIT */
/*
 * fsnw-wait: wait for filesystem events, the way inotifywait does, on
 * libfsnwatch. Same options, same lines, same exit status, so scripts can
 * switch; and a little more: --json, --stats, --stats-interval, --no-merge,
 * --backend.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "eventfmt.h"
#include "signals.h"
#include "stats-report.h"
#include "wait-filter.h"
#include "wait-output.h"
#include "wait-print.h"
#include "wait.h"

enum { EXIT_EVENT = 0, EXIT_ERROR = 1, EXIT_TIMEOUT = 2 };

#define READ_MAX 64

static int open_watcher(struct wait_state *s)
{
	struct fsnw_options fo = {
		.size = sizeof(fo),
		.backend = s->o.backend,
		.flags = s->o.no_merge ? FSNW_OPEN_NO_MERGE : 0,
	};
	int ret = fsnw_open(&s->w, &fo);

	const char *which = s->o.backend == FSNW_BACKEND_INOTIFY  ? " (inotify)" :
			    s->o.backend == FSNW_BACKEND_FANOTIFY ? " (fanotify)" : "";

	if (ret < 0) {
		wait_say(s, "Couldn't open a watcher%s: %s%s\n", which, strerror(-ret),
			 ret == -EMFILE ? " (see the sysctl fs.inotify.max_user_instances)" : "");
		s->w = NULL;
	}
	return ret;
}

static int cmp_wid(const void *a, const void *b)
{
	const struct wait_target *x = a, *y = b;

	return (x->wid > y->wid) - (x->wid < y->wid);
}

/* Every path in one fsnw_add_batch; a tree watch for each directory with -r. */
static int add_watches(struct wait_state *s)
{
	uint32_t kmask = s->o.events & FSNW_ALL_EVENTS;
	struct fsnw_batch_item *items = calloc(s->nt, sizeof(*items));
	int ok, ret = 0;

	if (!items) {
		wait_say(s, "fsnw-wait: %s\n", strerror(ENOMEM));
		return -ENOMEM;
	}
	if (!s->o.events)
		kmask = FSNW_ALL_EVENTS;
	else if (!kmask)
		/* Only unmount or ignored asked for, which the kernel sends anyway;
		 * a watch needs one event of its own. */
		kmask = FSNW_DELETE_SELF;
	for (size_t i = 0; i < s->nt; i++) {
		struct stat st;
		int r = s->o.no_deref ? lstat(s->t[i].path, &st) : stat(s->t[i].path, &st);

		s->t[i].dir = r == 0 && S_ISDIR(st.st_mode);
		items[i].path = s->t[i].path;
		items[i].mask = kmask;
		items[i].flags = (s->o.no_deref ? FSNW_WATCH_DONT_FOLLOW : 0) |
				 (s->o.recursive && s->t[i].dir ? FSNW_WATCH_TREE : 0);
	}
	ok = fsnw_add_batch(s->w, items, s->nt, 0);
	if (ok < 0) {
		wait_say(s, "Couldn't add the watches: %s\n", strerror(-ok));
		ret = ok;
	}
	for (size_t i = 0; ok >= 0 && i < s->nt; i++) {
		s->t[i].wid = items[i].result;
		if (items[i].result >= 0)
			continue;
		ret = items[i].result;
		if (ret == -ENOSPC) {
			wait_say(s, "Failed to watch %s; upper limit on inotify watches "
				 "reached!\n", s->t[i].path);
			wait_say(s, "Please increase the amount of inotify watches allowed per "
				 "user via `/proc/sys/fs/inotify/max_user_watches'.\n");
		} else {
			wait_say(s, "Couldn't watch %s: %s\n", s->t[i].path, strerror(-ret));
		}
	}
	free(items);
	if (ret == 0)
		qsort(s->t, s->nt, sizeof(*s->t), cmp_wid);
	return ret;
}

static const struct wait_target *find_target(const struct wait_state *s, int wid)
{
	struct wait_target key = { .wid = wid };

	return bsearch(&key, s->t, s->nt, sizeof(*s->t), cmp_wid);
}

static bool wid_is_dir(void *arg, int wid)
{
	const struct wait_target *t = find_target(arg, wid);

	return t && t->dir;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void print_stats(const struct wait_state *s)
{
	char *json;
	int ret = stats_json(s->w, &json);

	if (ret == 0)
		wait_say(s, "%s\n", json);
	else
		wait_say(s, "Couldn't format the statistics: %s\n", strerror(-ret));
	free(json);
}

/* Take a signal from the signalfd into *signo; false when there was none after all. */
static bool take_signal(const struct wait_state *s, int *signo)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return false;
	*signo = (int)si.ssi_signo;
	return true;
}

/* Returns the exit status; *signo is set when a signal ended the wait. */
static int run(struct wait_state *s, const struct wait_print *p, int *signo)
{
	int64_t timeout_ms = (int64_t)ceil(s->o.timeout * 1000.0);
	int64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;
	uint32_t shown = s->wanted | FSNW_OVERFLOW;
	struct fsnw_event evs[READ_MAX];

	/* JSON is for programs: they also hear of watches that went away. */
	if (s->o.json)
		shown |= FSNW_IGNORED | FSNW_UNMOUNT;
	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = fsnw_get_fd(s->w), .events = POLLIN },
			{ .fd = s->sfd, .events = POLLIN },
			{ .fd = s->tfd, .events = POLLIN }, /* -1: poll skips it */
		};
		int wait = -1, n, ret;
		bool heard = false;

		if (deadline) {
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return EXIT_TIMEOUT;
			wait = left > 1000000 ? 1000000 : (int)left;
		}
		ret = poll(pfd, 3, wait);
		if (ret < 0 && errno != EINTR) {
			wait_say(s, "poll: %s\n", strerror(errno));
			return EXIT_ERROR;
		}
		if (ret <= 0)
			continue;
		if (pfd[1].revents && take_signal(s, signo))
			return EXIT_EVENT;
		if (pfd[2].revents) {
			stats_timer_ack(s->tfd);
			print_stats(s);
		}
		if (!pfd[0].revents)
			continue;
		n = fsnw_read(s->w, evs, READ_MAX, 0);
		if (n < 0) {
			wait_say(s, "Couldn't read events: %s\n", strerror(-n));
			return EXIT_ERROR;
		}
		for (int i = 0; i < n; i++) {
			if (wait_filtered(s, p, &evs[i]))
				continue;
			heard = true;
			if (s->o.quiet < 2 && (evs[i].mask & shown))
				wait_print_event(p, stdout, &evs[i]);
			if (!s->o.monitor) {
				fflush(stdout);
				return evs[i].mask & s->wanted ? EXIT_EVENT : EXIT_ERROR;
			}
		}
		if (fflush(stdout) == EOF) {
			wait_say(s, "Couldn't write events: %s\n", strerror(errno));
			return EXIT_ERROR;
		}
		/* Like inotifywait, a monitor's timeout counts from the last event. */
		if (heard && deadline)
			deadline = now_ms() + timeout_ms;
	}
}

static int block_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	/* Blocked, they wait in the signalfd: no work in handlers, no races. */
	return signals_open(set);
}

static void release(struct wait_state *s)
{
	fsnw_close(s->w);
	wait_filter_fini(s);
	wait_free_paths(s);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->tfd >= 0)
		close(s->tfd);
}

/* Signals, the statistics timer, the watcher and its watches. Returns 0 or -1. */
static int set_up(struct wait_state *s)
{
	sigset_t set;

	s->sfd = block_signals(&set);
	if (s->sfd < 0) {
		wait_say(s, "Couldn't set up signals: %s\n", strerror(-s->sfd));
		return -1;
	}
	if (s->o.stats_interval > 0) {
		s->tfd = stats_timer_open(s->o.stats_interval);
		if (s->tfd < 0) {
			wait_say(s, "Couldn't set up the statistics timer: %s\n",
				 strerror(-s->tfd));
			return -1;
		}
	}
	if (open_watcher(s) < 0)
		return -1;
	if (!s->o.quiet)
		wait_say(s, s->o.recursive ? "Setting up watches.  Beware: since -r was given, "
					     "this may take a while!\n"
					   : "Setting up watches.\n");
	if (add_watches(s) < 0)
		return -1;
	if (!s->o.quiet)
		wait_say(s, "Watches established.\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct wait_state s = { .sfd = -1, .tfd = -1, .ready_fd = -1 };
	struct wait_print p = { .format = WAIT_DEFAULT_FORMAT, .newline = true,
				.wid_is_dir = wid_is_dir, .arg = &s };
	int ret, status = EXIT_ERROR, signo = 0;

	ret = wait_parse_opts(&s, argc, argv);
	if (ret)
		goto out;
	s.wanted = s.o.events ? s.o.events : FSNW_ALL_EVENTS;
	p.json = s.o.json;
	p.csv = s.o.csv;
	p.timefmt = s.o.timefmt;
	if (s.o.format) {
		p.format = s.o.format;
		p.newline = !s.o.no_newline;
	}
	/* What can be wrong with the command line is said before -d detaches. */
	if (wait_filter_init(&s) < 0 || wait_format_check(&p) < 0 || wait_output_open(&s) < 0)
		goto out;
	wait_output_syslog(&s);
	if (set_up(&s) < 0)
		goto out;
	wait_output_ready(&s, 0);
	status = run(&s, &p, &signo);
out:
	wait_output_ready(&s, 1);
	/* Also after a failed add: the counters say how far it went. */
	if (s.o.stats && s.w)
		print_stats(&s);
	release(&s);
	if (s.o.syslog)
		closelog();
	if (ret > 0)
		return EXIT_EVENT;
	/* Waiting for one event, a signal ends us as it ends inotifywait. */
	if (signo && !s.o.monitor) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, signo);
		signal(signo, SIG_DFL);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(signo);
	}
	return status;
}
