/* SPDX-License-Identifier: MIT */
/*
 * fsnw-epoll: libfsnwatch inside an epoll loop, beside a one-second timer
 * and the signals that end it. fsnw_get_fd() is one more fd in the set;
 * when it is readable, fsnw_read() with a zero timeout never sleeps.
 * Usage: fsnw-epoll PATH...
 */
#include <errno.h>
#include <fsnwatch.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

static int setup(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return fd < 0 ? -1 : epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

int main(int argc, char **argv)
{
	struct itimerspec second = { .it_interval.tv_sec = 1, .it_value.tv_sec = 1 };
	int ep = -1, tfd = -1, sfd = -1, ret, status = 1;
	struct fsnw *w = NULL;
	uint64_t ticks = 0;
	sigset_t sigs;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	sigprocmask(SIG_BLOCK, &sigs, NULL); /* delivered through sfd instead */
	ret = fsnw_open(&w, NULL);
	if (ret < 0) {
		fprintf(stderr, "fsnw_open: %s\n", strerror(-ret));
		return 1;
	}
	for (int i = 1; i < argc; i++) {
		ret = fsnw_add(w, argv[i], FSNW_ALL_EVENTS, 0);
		if (ret < 0) {
			fprintf(stderr, "fsnw_add %s: %s\n", argv[i], strerror(-ret));
			goto out;
		}
	}
	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	sfd = signalfd(-1, &sigs, SFD_CLOEXEC);
	if (ep < 0 || setup(ep, fsnw_get_fd(w)) < 0 || setup(ep, tfd) < 0 ||
	    setup(ep, sfd) < 0 || timerfd_settime(tfd, 0, &second, NULL) < 0) {
		perror("fsnw-epoll: setup");
		goto out;
	}
	printf("watching %d path(s)\n", argc - 1);
	for (;;) {
		struct epoll_event ev;
		struct fsnw_event evs[32];
		uint64_t n;

		fflush(stdout);
		ret = epoll_wait(ep, &ev, 1, -1);
		if (ret < 0 && errno == EINTR)
			continue; /* a stop and continue, say */
		if (ret < 0) {
			perror("fsnw-epoll: epoll_wait");
			goto out;
		}
		if (ev.data.fd == sfd)
			break;
		if (ev.data.fd == tfd) {
			if (read(tfd, &n, sizeof(n)) == sizeof(n))
				printf("tick %llu\n", (unsigned long long)(ticks += n));
			continue;
		}
		ret = fsnw_read(w, evs, 32, 0);
		if (ret < 0) {
			fprintf(stderr, "fsnw_read: %s\n", strerror(-ret));
			goto out;
		}
		for (int i = 0; i < ret; i++)
			printf("wid %d mask %#x count %u %s%s%s\n", evs[i].wid, evs[i].mask,
			       evs[i].count, evs[i].path ? evs[i].path : "",
			       evs[i].name ? "/" : "", evs[i].name ? evs[i].name : "");
	}
	status = 0;
out:
	fsnw_close(w);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	if (ep >= 0)
		close(ep);
	return status;
}
