/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "evio.h"

long raw_read(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	return (long)n;
}

void raw_drain(int fd, struct raw_drained *d)
{
	static __thread char buf[EVBUF_SIZE] __attribute__((aligned(8)));
	long n;

	memset(d, 0, sizeof(*d));
	while ((n = raw_read(fd, buf, sizeof(buf))) > 0) {
		for_each_inotify_event(ev, buf, n) {
			if (ev->mask & IN_IGNORED)
				d->ignored++;
			else if (ev->mask & IN_Q_OVERFLOW)
				d->overflows++;
			else
				d->other++;
		}
	}
	if (n < 0)
		d->err = (int)n;
}

int lib_open(struct fsnw **w, uint32_t backend, uint32_t flags, uint32_t capacity,
	     uint32_t idle)
{
	struct fsnw_options o;

	memset(&o, 0, sizeof(o));
	o.size = sizeof(o);
	o.backend = backend;
	o.flags = flags;
	o.queue_capacity = capacity;
	o.idle_watches = idle;
	return fsnw_open(w, &o);
}

uint64_t lib_syscalls(const struct fsnw_stats *st)
{
	return st->sys_inotify_init + st->sys_inotify_add_watch + st->sys_inotify_rm_watch +
	       st->sys_fanotify_init + st->sys_fanotify_mark + st->sys_name_to_handle_at +
	       st->sys_open_by_handle_at + st->sys_read + st->sys_poll + st->sys_eventfd +
	       st->sys_walk + st->sys_other + st->sys_io_uring;
}

int lib_stats(struct fsnw *w, struct fsnw_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	return fsnw_get_stats(w, st);
}

bool lib_fanotify_usable(char *why, size_t len)
{
	struct fsnw *w;
	int err = lib_open(&w, FSNW_BACKEND_FANOTIFY, 0, 0, 0);

	if (err < 0) {
		snprintf(why, len, "the library's fanotify backend is unavailable "
			 "(fsnw_open: %s)", strerror(-err));
		return false;
	}
	fsnw_close(w);
	return true;
}
