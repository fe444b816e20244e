/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "evio.h"
#include "reader.h"

static void note_name(struct reader *r, const char *name)
{
	size_t pl = strlen(r->prefix);
	char *end;
	long i;

	if (!name || strncmp(name, r->prefix, pl)) {
		r->unexpected++;
		return;
	}
	if (!r->nnames) {
		if (name[pl])
			r->unexpected++;
		return;
	}
	i = strtol(name + pl, &end, 10);
	if (*end || end == name + pl || i < 0 || i >= r->nnames) {
		r->unexpected++;
		return;
	}
	if (r->seen)
		r->seen[i] = 1;
}

/* One pass over what is queued now; returns how many records it read. */
static long raw_pass(struct reader *r, char *buf)
{
	long n, total = 0;

	while ((n = raw_read(r->fd, buf, EVBUF_SIZE)) > 0) {
		for_each_inotify_event(ev, buf, n) {
			total++;
			if (ev->mask & IN_Q_OVERFLOW) {
				r->overflows++;
				continue;
			}
			r->events++;
			r->counted++;
			if (ev->mask & ~r->mask)
				r->unexpected++;
			note_name(r, ev->len ? ev->name : NULL);
		}
	}
	if (n < 0)
		r->err = (int)n;
	return total;
}

static long lib_pass(struct reader *r, struct fsnw_event *ev, int timeout)
{
	int n = fsnw_read(r->w, ev, 256, timeout);

	if (n < 0) {
		r->err = n;
		return 0;
	}
	for (int k = 0; k < n; k++) {
		if (ev[k].mask & FSNW_OVERFLOW) {
			r->overflows++;
			continue;
		}
		r->events++;
		r->counted += ev[k].count;
		if (ev[k].wid != r->wid || (ev[k].mask & ~r->mask))
			r->unexpected++;
		note_name(r, ev[k].name);
	}
	return n;
}

static void *reader_main(void *p)
{
	struct reader *r = p;
	static __thread char buf[EVBUF_SIZE] __attribute__((aligned(8)));
	struct fsnw_event ev[256];

	if (r->w) {
		while (!atomic_load(&r->stop) && !r->err)
			lib_pass(r, ev, 20);
		/* The load is over and every event it made is queued: drain. */
		while (!r->err && lib_pass(r, ev, 0) > 0)
			;
	} else {
		struct pollfd pfd = { .fd = r->fd, .events = POLLIN };

		while (!atomic_load(&r->stop) && !r->err) {
			if (poll(&pfd, 1, 20) > 0)
				raw_pass(r, buf);
		}
		raw_pass(r, buf);
	}
	return NULL;
}

void reader_start(struct bench *b, struct reader *r, int cpu_idx)
{
	pthread_attr_t attr;
	int cpu = bench_cpu(b, cpu_idx), err;

	atomic_store(&r->stop, 0);
	pthread_attr_init(&attr);
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	err = pthread_create(&r->tid, &attr, reader_main, r);
	pthread_attr_destroy(&attr);
	if (err)
		bench_fatal(b, "cannot start the reader thread%s: %s",
			    cpu >= 0 ? " on its CPU" : "", strerror(err));
}

void reader_stop(struct reader *r)
{
	atomic_store(&r->stop, 1);
	pthread_join(r->tid, NULL);
}

void reader_free(struct reader *r)
{
	free(r->seen);
	r->seen = NULL;
}
