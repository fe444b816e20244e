/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "wait-output.h"

void wait_say(const struct wait_state *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (s->o.syslog)
		vsyslog(LOG_INFO, fmt, ap);
	else
		vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void wait_output_syslog(const struct wait_state *s)
{
	/* inotifywait's facility and priority; not LOG_CONS, which would
	 * write to the console of a machine that runs no syslog daemon. */
	if (s->o.syslog)
		openlog("fsnw-wait", LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

/*
 * The daemon leaves its working directory: the output file must not be
 * relative to it. Unlike inotifywait's realpath, a file that does not exist
 * yet is fine: only its directory is resolved.
 */
static char *absolute(const char *file)
{
	const char *slash = strrchr(file, '/');
	char *dir = slash ? strndup(file, slash == file ? 1 : (size_t)(slash - file)) : strdup(".");
	char *real = dir ? realpath(dir, NULL) : NULL;
	char *abs = NULL;
	int err = real ? 0 : dir ? errno : ENOMEM;

	if (real && asprintf(&abs, "%s/%s", strcmp(real, "/") ? real : "",
			     slash ? slash + 1 : file) < 0) {
		abs = NULL;
		err = ENOMEM;
	}
	if (!abs)
		fprintf(stderr, "%s: %s\n", strerror(err), file);
	free(real);
	free(dir);
	return abs;
}

static int open_outfile(const char *file)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		fprintf(stderr, "Failed to open output file %s\n", file);
	return fd;
}

/* The parent: wait for the daemon's word, and pass it on as the exit status. */
static _Noreturn void wait_for_daemon(int fd)
{
	unsigned char status = 1;
	ssize_t n;

	do
		n = read(fd, &status, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || status)
		fprintf(stderr, "fsnw-wait: the daemon could not set up its watches (see the "
			"system log)\n");
	_exit(n == 1 ? status : 1);
}

static int daemonize(struct wait_state *s, int out)
{
	int ready[2], null;
	pid_t pid;

	if (pipe2(ready, O_CLOEXEC) < 0) {
		fprintf(stderr, "Failed to daemonize!\n");
		return -1;
	}
	fflush(NULL); /* nothing buffered may be written twice */
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "Failed to daemonize!\n");
		close(ready[0]);
		close(ready[1]);
		return -1;
	}
	if (pid > 0) {
		close(ready[1]);
		wait_for_daemon(ready[0]);
	}
	close(ready[0]);
	s->ready_fd = ready[1];
	/* No controlling terminal, no job control signals from the shell. */
	setsid();
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0 || dup2(null, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 ||
	    dup2(null, STDERR_FILENO) < 0) {
		wait_say(s, "Failed to daemonize: %s\n", strerror(errno));
		return -1;
	}
	if (null > STDERR_FILENO)
		close(null);
	return 0;
}

int wait_output_open(struct wait_state *s)
{
	char *file = NULL;
	int fd, ret = 0;

	if (!s->o.outfile)
		return 0;
	if (s->o.daemon) {
		file = absolute(s->o.outfile);
		if (!file)
			return -1;
	}
	fd = open_outfile(file ? file : s->o.outfile);
	free(file);
	if (fd < 0)
		return -1;
	if (s->o.daemon)
		ret = daemonize(s, fd);
	else if (dup2(fd, STDOUT_FILENO) < 0)
		ret = -1, fprintf(stderr, "Failed to open output file %s\n", s->o.outfile);
	close(fd);
	return ret;
}

void wait_output_ready(struct wait_state *s, int status)
{
	unsigned char b = (unsigned char)status;

	if (s->ready_fd < 0)
		return;
	/* Not to keep a filesystem busy; the watches hold what they need. */
	if (status == 0 && chdir("/") < 0)
		wait_say(s, "Couldn't change to /: %s\n", strerror(errno));
	if (write(s->ready_fd, &b, 1) != 1)
		wait_say(s, "Couldn't tell the parent: %s\n", strerror(errno));
	close(s->ready_fd);
	s->ready_fd = -1;
}
