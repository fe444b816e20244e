/* SPDX-License-Identifier: MIT */
/*
 * fsnw-wait: wait for filesystem events, the way inotifywait does, on
 * libfsnwatch. Same options, same lines, same exit status, so scripts can
 * switch; and a little more: --json, --stats, --stats-interval, --merge,
 * --backend.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "signals.h"
#include "stats-report.h"
#include "tool-args.h"
#include "wait-output.h"
#include "wait-print.h"
#include "wait.h"

enum { EXIT_EVENT = 0, EXIT_ERROR = 1, EXIT_TIMEOUT = 2, GO_ON = -1 };

#define READ_MAX 64

/* inotify-tools' words when its group cannot be had. */
static void say_init_error(const struct wait_state *s, int err)
{
	const char *backend = s->fanotify ? "fanotify" : "inotify";

	fprintf(stderr, "Couldn't initialize %s: %s\n", backend, strerror(err));
	if (err == EMFILE)
		fprintf(stderr, "Try increasing the value of /proc/sys/fs/%s/max_user_%s\n",
			backend, s->fanotify ? "groups" : "instances");
	if (s->fanotify && err == EPERM)
		fprintf(stderr, "fanotify watch requires admin privileges\n");
}

static int open_watcher(struct wait_state *s)
{
	struct fsnw_options fo = {
		.size = sizeof(fo),
		.backend = s->o.backend,
		.flags = s->o.merge ? 0 : FSNW_OPEN_NO_MERGE,
	};
	int ret;

	s->fanotify = s->o.backend == FSNW_BACKEND_FANOTIFY;
	ret = fsnw_open(&s->w, &fo);
	if (ret == -EPERM && s->o.filesystem) {
		/* Where fanotify_init is permitted but not a filesystem mark,
		 * fsnotifywait fails at the mark: so do we, in its words. */
		s->w = NULL;
		s->mark_error = EPERM;
		return 0;
	}
	if (ret < 0) {
		say_init_error(s, -ret);
		s->w = NULL;
		return ret;
	}
	s->fanotify = fsnw_get_backend(s->w) == FSNW_BACKEND_FANOTIFY;
	return 0;
}

/* What the kernel is asked for: inotifywait adds creates and moves to follow a tree. */
static void add_masks(struct wait_state *s, uint32_t *mask, uint32_t *flags)
{
	uint32_t events = s->o.events ? s->o.events : FSNW_ALL_EVENTS;

	*mask = events & FSNW_ALL_EVENTS;
	if (s->o.monitor && s->o.recursive)
		*mask |= FSNW_CREATE | FSNW_MOVE;
	/* Only events the kernel sends anyway (unmount, ignored) or none at all
	 * (isdir, q_overflow): a watch still needs one of its own. */
	if (!*mask) {
		*mask = FSNW_DELETE_SELF;
		s->padding = FSNW_DELETE_SELF;
	}
	*flags = s->o.no_deref ? FSNW_WATCH_DONT_FOLLOW : 0;
	if (events & TOOL_ONESHOT)
		*flags |= FSNW_WATCH_ONESHOT;
}

static void say_add_error(const struct wait_state *s, const struct tool_target *t, int err)
{
	if (s->o.filesystem) {
		/* fsnotifywait names the first path, whichever failed. */
		wait_say(s, "Couldn't add filesystem watch %s: %s\n", s->paths.t[0].path,
			 strerror(err));
	} else if (err == ENOSPC) {
		const char *backend = s->fanotify ? "fanotify" : "inotify";
		const char *what = s->fanotify ? "marks" : "watches";

		wait_say(s, "Failed to watch %s; upper limit on %s %s reached!\n", t->path,
			 backend, what);
		wait_say(s, "Please increase the amount of %s %s allowed per user via "
			 "`/proc/sys/fs/%s/max_user_%s'.\n", backend, what, backend, what);
	} else {
		wait_say(s, "Couldn't watch %s: %s\n", t->path, strerror(err));
	}
}

/*
 * Every target in one fsnw_add_batch; a tree for each directory with -r,
 * and with -S for each mount. Like inotifywait, the first that fails is
 * reported and ends the run.
 */
static int add_watches(struct wait_state *s)
{
	struct fsnw_batch_item *items = calloc(s->paths.n, sizeof(*items));
	size_t n = 0;
	uint32_t mask, flags;
	int ret;

	if (!items)
		return -ENOMEM;
	add_masks(s, &mask, &flags);
	for (size_t i = 0; i < s->paths.n; i++) {
		const struct tool_target *t = &s->paths.t[i];
		uint32_t f = flags;

		if (t->skip)
			continue;
		if (t->tree)
			f = (f & ~FSNW_WATCH_ONESHOT) | FSNW_WATCH_TREE;
		if (s->o.filesystem)
			f |= FSNW_WATCH_ONE_FS;
		items[n].path = s->o.filesystem ? t->root : t->path;
		items[n].mask = mask;
		items[n++].flags = f;
	}
	ret = fsnw_add_batch(s->w, items, n, 0);
	if (ret < 0)
		wait_say(s, "Couldn't add the watches: %s\n", strerror(-ret));
	n = 0;
	for (size_t i = 0; ret >= 0 && i < s->paths.n; i++) {
		struct tool_target *t = &s->paths.t[i];

		if (t->skip)
			continue;
		t->wid = items[n++].result;
		if (t->wid < 0) {
			say_add_error(s, t, -t->wid);
			ret = t->wid;
		}
	}
	free(items);
	return ret < 0 ? ret : tool_paths_index(&s->paths);
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

/*
 * One event read: GO_ON, or the exit status of a single wait. *heard
 * says whether inotifywait would have read it too: then it restarts -t,
 * filtered or not.
 */
static int take_event(struct wait_state *s, const struct wait_print *p,
		      const struct fsnw_event *ev, struct tool_seen *last, bool *heard)
{
	const struct tool_target *t = tool_paths_find(&s->paths, ev->wid);
	uint32_t shown = s->wanted | FSNW_OVERFLOW;
	struct tool_names n;

	/* The event a watch had to ask for to ask for nothing else. */
	if (!(ev->mask & ~(s->padding | FSNW_ISDIR)))
		return GO_ON;
	*heard = true;

	/* JSON is for programs: they also hear of watches that went away. */
	if (s->o.json)
		shown |= FSNW_IGNORED | FSNW_UNMOUNT;
	tool_names_get(&s->paths, s->fanotify, ev, &n);
	if (tool_filtered(&s->filter, &s->paths, ev, &n))
		return GO_ON;
	if (s->fanotify && tool_fanotify_copy(last, s->o.filesystem || (t && t->tree), ev, &n))
		return GO_ON;
	if (s->o.quiet < 2 && (ev->mask & shown))
		wait_print_event(p, stdout, ev, &n);
	if (s->o.monitor)
		return GO_ON;
	return ev->mask & s->accepted ? EXIT_EVENT : EXIT_ERROR;
}

/* Returns the exit status; *signo is set when a signal ended the wait. */
static int run(struct wait_state *s, const struct wait_print *p, int *signo)
{
	int64_t timeout_ms = (int64_t)ceil(s->o.timeout * 1000.0);
	int64_t deadline = timeout_ms ? now_ms() + timeout_ms : 0;
	struct fsnw_event evs[READ_MAX];
	struct tool_seen last = { .wid = 0 };

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
			wait_say(s, "%s\n", strerror(-n));
			return EXIT_ERROR;
		}
		for (int i = 0; i < n; i++) {
			ret = take_event(s, p, &evs[i], &last, &heard);
			if (ret != GO_ON) {
				fflush(stdout);
				return ret;
			}
		}
		if (fflush(stdout) == EOF) {
			wait_say(s, "Couldn't write events: %s\n", strerror(errno));
			return EXIT_ERROR;
		}
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
	s->w = NULL;
	tool_filter_fini(&s->filter);
	tool_paths_free(&s->paths);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->tfd >= 0)
		close(s->tfd);
}

/* inotifywait's start: the group, the filter, the format, then the paths. */
static int prepare(struct wait_state *s, struct wait_print *p)
{
	int ret = 0;

	/* A daemon opens its group once it has forked (see set_up). */
	if (!s->o.daemon && open_watcher(s) < 0)
		return -1;
	if (tool_filter_init(&s->filter, s->o.regex, s->o.regex_include, s->o.regex_icase,
			     s->o.recursive) < 0 ||
	    wait_format_check(p) < 0)
		return -1;
	if (s->o.fromfile)
		ret = tool_paths_fromfile(&s->paths, s->o.fromfile);
	for (int i = 0; ret == 0 && i < s->nargs; i++)
		ret = tool_paths_arg(&s->paths, s->args[i]);
	if (ret < 0) {
		fprintf(stderr, "fsnw-wait: %s\n", strerror(-ret));
		return -1;
	}
	if (!s->paths.n) {
		fprintf(stderr, "No files specified to watch!\n");
		return -1;
	}
	return 0;
}

/* Signals, the statistics timer, the watcher and its watches. Returns 0 or -1. */
static int set_up(struct wait_state *s)
{
	sigset_t set;
	int ret;

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
	if (!s->w && !s->mark_error && open_watcher(s) < 0)
		return -1;
	if (!s->o.quiet)
		wait_say(s, s->o.filesystem ? "Setting up filesystem watches.\n" :
			    s->o.recursive ? "Setting up watches.  Beware: since -r was given, "
					     "this may take a while!\n" :
					     "Setting up watches.\n");
	if (s->mark_error) {
		say_add_error(s, NULL, s->mark_error);
		return -1;
	}
	ret = tool_paths_resolve(&s->paths, s->o.recursive, s->o.no_deref);
	if (ret == 0 && s->o.filesystem) {
		ret = tool_paths_mount_roots(&s->paths);
		if (ret < 0 && ret != -ENOMEM)
			say_add_error(s, NULL, -ret);
	}
	if (ret < 0 && (ret == -ENOMEM || !s->o.filesystem))
		wait_say(s, "fsnw-wait: %s\n", strerror(-ret));
	if (ret < 0 || add_watches(s) < 0)
		return -1;
	if (!s->o.quiet)
		wait_say(s, "Watches established.\n");
	return 0;
}

/* inotifywait has no handlers: a signal ends it, and ends us the same way. */
static void die_of(int signo)
{
	sigset_t set;

	/* What is printed is written, and stdio's buffer freed with it. */
	fclose(stdout);
	sigemptyset(&set);
	sigaddset(&set, signo);
	signal(signo, SIG_DFL);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(signo);
}

int main(int argc, char **argv)
{
	struct wait_state s = { .sfd = -1, .tfd = -1, .ready_fd = -1 };
	struct wait_print p = { .format = WAIT_DEFAULT_FORMAT, .newline = true };
	int ret, status = EXIT_ERROR, signo = 0;

	ret = wait_parse_opts(&s, argc, argv);
	if (ret)
		goto out;
	s.wanted = s.o.events ? s.o.events : FSNW_ALL_EVENTS;
	s.accepted = s.wanted | (s.o.backend == FSNW_BACKEND_FANOTIFY ? FSNW_ISDIR : 0);
	p.json = s.o.json;
	p.csv = s.o.csv;
	p.timefmt = s.o.timefmt;
	if (s.o.format) {
		p.format = s.o.format;
		p.newline = !s.o.no_newline;
	}
	/* What can be wrong with the command line is said before -d detaches. */
	if (prepare(&s, &p) < 0 || wait_output_open(&s) < 0)
		goto out;
	p.fanotify = s.o.backend == FSNW_BACKEND_FANOTIFY;
	wait_output_syslog(&s);
	if (set_up(&s) < 0)
		goto out;
	p.fanotify = s.fanotify;
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
	if (signo)
		die_of(signo);
	return status;
}
