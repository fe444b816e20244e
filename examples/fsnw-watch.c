/* SPDX-License-Identifier: MIT */
/*
 * fsnw-watch: count filesystem events and print a table of them, the way
 * inotifywatch does, on libfsnwatch. Same options, same table, same exit
 * status; and --json.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "signals.h"
#include "tool-names.h"
#include "watch.h"

#define READ_MAX 256

static void say_init_error(const struct watch_state *s, int err)
{
	const char *backend = s->fanotify ? "fanotify" : "inotify";

	fprintf(stderr, "Couldn't initialize %s: %s\n", backend, strerror(err));
	if (err == EMFILE)
		fprintf(stderr, "Try increasing the value of /proc/sys/fs/%s/max_user_%s\n",
			backend, s->fanotify ? "groups" : "instances");
	if (s->fanotify && err == EPERM)
		fprintf(stderr, "fanotify watch requires admin privileges\n");
}

static int open_watcher(struct watch_state *s)
{
	/* Counting wants no order of events kept apart: a merged event
	 * carries how many it stands for. */
	struct fsnw_options fo = { .size = sizeof(fo), .backend = s->o.backend };
	int ret;

	s->fanotify = s->o.backend == FSNW_BACKEND_FANOTIFY;
	ret = fsnw_open(&s->w, &fo);
	if (ret == -EPERM && s->o.filesystem) {
		/* fsnotifywatch fails at the filesystem mark: see set_up. */
		s->w = NULL;
		s->mark_error = EPERM;
		return 0;
	}
	if (ret < 0) {
		say_init_error(s, -ret);
		s->w = NULL;
		return -1;
	}
	s->fanotify = fsnw_get_backend(s->w) == FSNW_BACKEND_FANOTIFY;
	return 0;
}

/* The table's first rows: each target, and with -r every directory of its tree. */
static int table_targets(struct watch_state *s)
{
	for (size_t i = 0; i < s->paths.n; i++) {
		const struct tool_target *t = &s->paths.t[i];
		char *name;
		long row;
		int ret;

		if (!t->exists)
			continue;
		if (asprintf(&name, "%s%s", t->path, t->slash ? "/" : "") < 0)
			return -ENOMEM;
		if (t->tree && !s->o.filesystem)
			ret = watch_walk(s, name);
		else
			ret = (row = watch_table_add(&s->table, name, strlen(name), true, t->dev,
						     t->ino)) < 0 ? (int)row : 0;
		free(name);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int add_watches(struct watch_state *s)
{
	struct fsnw_batch_item *items = calloc(s->paths.n, sizeof(*items));
	uint32_t mask = s->events & FSNW_ALL_EVENTS;
	size_t n = 0;
	int ret;

	if (!items)
		return -ENOMEM;
	for (size_t i = 0; i < s->paths.n; i++) {
		const struct tool_target *t = &s->paths.t[i];

		if (t->skip)
			continue;
		items[n].path = s->o.filesystem ? t->root : t->path;
		items[n].mask = mask ? mask : FSNW_DELETE_SELF;
		items[n++].flags = (s->o.no_deref ? FSNW_WATCH_DONT_FOLLOW : 0) |
				   (t->tree ? FSNW_WATCH_TREE : 0) |
				   (s->o.filesystem ? FSNW_WATCH_ONE_FS : 0);
	}
	ret = fsnw_add_batch(s->w, items, n, 0);
	n = 0;
	for (size_t i = 0; ret >= 0 && i < s->paths.n; i++)
		if (!s->paths.t[i].skip)
			s->paths.t[i].wid = items[n++].result;
	free(items);
	return ret < 0 ? ret : 0;
}

/* The failure inotifywatch reports for target t, the first that failed. */
static void say_add_error(const struct watch_state *s, const struct tool_target *t, int err)
{
	if (s->o.filesystem) {
		fprintf(stderr, "Couldn't add filesystem watch %s: %s\n", s->paths.t[0].path,
			strerror(err));
	} else if (err == ENOSPC) {
		const char *backend = s->fanotify ? "fanotify" : "inotify";
		const char *what = s->fanotify ? "marks" : "watches";

		fprintf(stderr, "Failed to watch %s; upper limit on %s %s reached!\n", t->path,
			backend, what);
		fprintf(stderr, "Please increase the amount of %s %s allowed per user via "
			"`/proc/sys/fs/%s/max_user_%s'.\n", backend, what, backend, what);
	} else {
		fprintf(stderr, "Failed to watch %s: %s\n", t->path, strerror(err));
	}
}

/* inotifywatch's messages about each target, up to the first that failed. */
static int report_targets(const struct watch_state *s)
{
	for (size_t i = 0; i < s->paths.n; i++) {
		const struct tool_target *t = &s->paths.t[i];
		int err = !t->exists ? ENOENT : t->wid < 0 ? -t->wid : 0;

		if (s->o.filesystem) {
			fprintf(stderr, "Setting up filesystem watch on %s\n", t->path);
			for (size_t j = 0; j < s->paths.n; j++)
				if (s->paths.t[j].wid < 0) {
					say_add_error(s, t, -s->paths.t[j].wid);
					return -1;
				}
			return 0;
		}
		if (s->o.recursive && s->o.verbose)
			fprintf(stderr, "Setting up watch(es) on %s\n", t->path);
		if (err) {
			say_add_error(s, t, err);
			return -1;
		}
		if (s->o.recursive && s->o.verbose)
			fprintf(stderr, "OK, %s is now being watched.\n", t->path);
	}
	return 0;
}

static int set_up(struct watch_state *s)
{
	int ret = 0;

	if (s->o.fromfile)
		ret = tool_paths_fromfile(&s->paths, s->o.fromfile);
	for (int i = 0; ret == 0 && i < s->nargs; i++)
		ret = tool_paths_arg(&s->paths, s->args[i]);
	if (ret == 0 && !s->paths.n) {
		fprintf(stderr, "No files specified to watch!\n");
		return -1;
	}
	fprintf(stderr, "Establishing watches...\n");
	if (ret == 0)
		ret = tool_paths_resolve(&s->paths, s->o.recursive, s->o.no_deref);
	if (ret == 0 && s->mark_error) {
		fprintf(stderr, "Setting up filesystem watch on %s\n", s->paths.t[0].path);
		say_add_error(s, NULL, s->mark_error);
		return -1;
	}
	if (ret == 0 && s->o.filesystem)
		ret = tool_paths_mount_roots(&s->paths);
	if (ret == -ENOENT) {
		say_add_error(s, &s->paths.t[0], ENOENT);
		return -1;
	}
	/* Walked before it is watched, as inotifywatch walks: no event of the walk is counted. */
	if (ret == 0)
		ret = table_targets(s);
	if (ret == 0)
		ret = add_watches(s);
	if (ret == 0)
		ret = tool_paths_index(&s->paths);
	if (ret < 0) {
		fprintf(stderr, "fsnw-watch: %s\n", strerror(-ret));
		return -1;
	}
	if (report_targets(s) < 0)
		return -1;
	if (s->o.verbose)
		fprintf(stderr, "Total of %zu watches.\n", watch_table_names(&s->table));
	fprintf(stderr, "Finished establishing watches, now collecting statistics.\n");
	if (s->o.timeout && s->o.verbose)
		fprintf(stderr, "Will listen for events for %g seconds.\n", s->o.timeout);
	return 0;
}

static int open_timer(struct watch_state *s)
{
	struct itimerspec its = { 0 };

	if (!s->o.timeout)
		return 0;
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (s->tfd < 0)
		return -errno;
	its.it_value.tv_sec = (time_t)s->o.timeout;
	its.it_value.tv_nsec = (long)((s->o.timeout - floor(s->o.timeout)) * 1e9);
	return timerfd_settime(s->tfd, 0, &its, NULL) < 0 ? -errno : 0;
}

static int print_table(const struct watch_state *s)
{
	struct watch_report r = { .events = s->events, .zero = s->o.zero, .sort = s->o.sort };
	int ret = s->o.json ? watch_table_json(&s->table, &r, stdout) :
			      watch_table_print(&s->table, &r, stdout, stderr);

	if (ret < 0)
		fprintf(stderr, "fsnw-watch: %s\n", strerror(-ret));
	fflush(stdout);
	return ret;
}

/* Whether a and b name the same path, trailing slashes aside. */
static bool same_path(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la > 1 && a[la - 1] == '/')
		la--;
	while (lb > 1 && b[lb - 1] == '/')
		lb--;
	return la == lb && !memcmp(a, b, la);
}

/* The row an event counts on: its %w (its %w%f on fanotify, per name, as fsnotifywatch). */
static long row_of(struct watch_state *s, const struct tool_names *n)
{
	char key[PATH_MAX + NAME_MAX + 2];
	size_t nlen = s->fanotify ? strlen(n->name) : 0;
	long row;

	if (n->dirlen + nlen >= sizeof(key))
		return -ENAMETOOLONG;
	memcpy(key, n->dir, n->dirlen);
	memcpy(key + n->dirlen, n->name, nlen);
	row = watch_table_find(&s->table, key, n->dirlen + nlen);
	return row >= 0 ? row : watch_table_add(&s->table, key, n->dirlen + nlen, false, 0, 0);
}

static int take_event(struct watch_state *s, const struct fsnw_event *ev)
{
	const struct tool_target *t = tool_paths_find(&s->paths, ev->wid);
	struct tool_names n;
	long row;

	if (ev->mask & FSNW_OVERFLOW) {
		fprintf(stderr, "fsnw-watch: events were lost (Q_OVERFLOW): the counts are "
			"too low\n");
		return 0;
	}
	/* The counts are of what the kernel reported, as inotifywatch's are:
	 * not the creates the library makes to report what a directory new to
	 * a tree held. */
	if (ev->mask & FSNW_SYNTHETIC)
		return 0;
	tool_names_get(&s->paths, s->fanotify, ev, &n);
	if (tool_filtered(&s->filter, &s->paths, ev, &n))
		return 0;
	if (s->fanotify && tool_fanotify_copy(&s->seen, s->o.filesystem || (t && t->tree), ev,
					      &n))
		return 0;
	row = row_of(s, &n);
	if (row < 0)
		return row == -ENAMETOOLONG ? 0 : (int)row;
	watch_table_count(&s->table, (size_t)row, ev->mask, ev->count);
	/* inotify ends the watch of a deleted directory with IN_IGNORED, which
	 * inotifywatch counts; the library reports it for the tree's root only. */
	if (t && t->tree && !ev->name && (ev->mask & FSNW_DELETE_SELF) &&
	    !same_path(ev->path, s->o.filesystem ? t->root : t->path))
		watch_table_count(&s->table, (size_t)row, FSNW_IGNORED, ev->count);
	return s->o.recursive && !s->o.filesystem ? watch_follow_tree(s, ev, &n) : 0;
}

/* A signal: 1 to stop counting, 0 to go on. */
static int take_signal(struct watch_state *s)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return 0;
	if (si.ssi_signo != SIGUSR1)
		return 1;
	print_table(s);
	/* A JSON line stands alone; inotifywatch's tables are parted by a blank line. */
	if (!s->o.json)
		putchar('\n');
	fflush(stdout);
	return 0;
}

static int run(struct watch_state *s)
{
	struct fsnw_event evs[READ_MAX];

	for (;;) {
		struct pollfd pfd[3] = {
			{ .fd = fsnw_get_fd(s->w), .events = POLLIN },
			{ .fd = s->sfd, .events = POLLIN },
			{ .fd = s->tfd, .events = POLLIN },
		};
		int n;

		if (poll(pfd, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "poll: %s\n", strerror(errno));
			return -1;
		}
		if (pfd[1].revents && take_signal(s))
			return 0;
		if (pfd[2].revents)
			return 0;
		if (!pfd[0].revents)
			continue;
		n = fsnw_read(s->w, evs, READ_MAX, 0);
		if (n < 0) {
			fprintf(stderr, "%s\n", strerror(-n));
			return -1;
		}
		for (int i = 0; i < n; i++) {
			int ret = take_event(s, &evs[i]);

			if (ret < 0) {
				fprintf(stderr, "fsnw-watch: %s\n", strerror(-ret));
				return -1;
			}
		}
	}
}

/*
 * Signals that came while the watches were being set up, when inotifywatch
 * has no handlers yet but its SIGINT one: that one only says that nothing
 * was counted yet; the others end it as they would end any program.
 */
static int early_signals(struct watch_state *s)
{
	struct signalfd_siginfo si;

	while (read(s->sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGINT) {
			fprintf(stderr, "No statistics have been collected because I haven't "
				"finished establishing\ninotify watches yet.  If you are sure you "
				"want me to exit, interrupt me again.\n");
			continue;
		}
		return (int)si.ssi_signo;
	}
	return 0;
}

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

static void release(struct watch_state *s)
{
	fsnw_close(s->w);
	tool_filter_fini(&s->filter);
	tool_paths_free(&s->paths);
	watch_table_free(&s->table);
	free(s->moved_from);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->tfd >= 0)
		close(s->tfd);
}

int main(int argc, char **argv)
{
	struct watch_state s = { .sfd = -1, .tfd = -1 };
	int ret, status = 1, signo = 0;
	sigset_t set;

	watch_table_init(&s.table);
	ret = watch_parse_opts(&s, argc, argv);
	if (ret)
		goto out;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGUSR1);
	/* inotifywatch sets its handlers whatever it was started with. */
	s.sfd = signals_catch(&set);
	if (s.sfd < 0) {
		fprintf(stderr, "Couldn't set up signals: %s\n", strerror(-s.sfd));
		goto out;
	}
	s.events = s.o.events ? s.o.events : FSNW_ALL_EVENTS;
	/* inotifywatch's order: the filter, the group, then the paths. */
	if (tool_filter_init(&s.filter, s.o.regex, s.o.regex_include, s.o.regex_icase,
			     s.o.recursive) < 0 ||
	    open_watcher(&s) < 0 || set_up(&s) < 0)
		goto out;
	signo = early_signals(&s);
	if (signo)
		goto out;
	ret = open_timer(&s);
	if (ret < 0) {
		fprintf(stderr, "Couldn't set up the timeout: %s\n", strerror(-ret));
		goto out;
	}
	if (run(&s) == 0 && print_table(&s) == 0)
		status = 0;
out:
	release(&s);
	if (ret > 0)
		return 0;
	if (signo)
		die_of(signo);
	return status;
}
