/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stddef.h>
#include <sys/signalfd.h>

#include "signals.h"

int signals_catch(const sigset_t *set)
{
	int fd;

	if (sigprocmask(SIG_BLOCK, set, NULL) < 0)
		return -errno;
	fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

int signals_open(sigset_t *set)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;

		if (sigismember(set, sig) == 1 && sigaction(sig, NULL, &sa) == 0 &&
		    sa.sa_handler == SIG_IGN)
			sigdelset(set, sig);
	}
	return signals_catch(set);
}
