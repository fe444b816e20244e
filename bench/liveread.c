/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "itools.h"
#include "liveread.h"
#include "uvpeer.h"

/* A read that leaves less room than one record with the longest name may have
 * left records queued: read again. */
#define RECORD_MAX (sizeof(struct inotify_event) + NAME_MAX + 1)

static void on_uv_event(void *arg, const char *dir, const char *name, bool change)
{
	struct live_reader *r = arg;

	tally_event(r->tally, dir, name, change ? TK_CHANGE : TK_RENAME, 1);
	if (r->tally->done)
		uvpeer_halt(r->uv);
}

static int raw_open(struct live_reader *r)
{
	r->buf = aligned_alloc(8, EVBUF_SIZE);
	r->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (!r->buf || r->ifd < 0)
		return r->buf ? -errno : -ENOMEM;
	for (long i = 0; i < r->t->ndirs; i++) {
		int wd = inotify_add_watch(r->ifd, r->t->dirs[i], LIVE_MASK | IN_ONLYDIR);

		if (wd < 0)
			return -errno;
		if (wd >= r->nwd) {
			long n = 2 * (long)wd + 64;
			const char **p = realloc(r->wdpath, (size_t)n * sizeof(*p));

			if (!p)
				return -ENOMEM;
			memset(p + r->nwd, 0, (size_t)(n - r->nwd) * sizeof(*p));
			r->wdpath = p;
			r->nwd = n;
		}
		r->wdpath[wd] = r->t->dirs[i];
	}
	return 0;
}

static int lib_tree_open(struct live_reader *r)
{
	uint32_t be = r->kind == LIVE_FAN ? FSNW_BACKEND_FANOTIFY : FSNW_BACKEND_INOTIFY;
	int err = lib_open(&r->w, be, 0, 0, 0), wid;

	if (err)
		return err;
	r->ev = calloc((size_t)r->nev, sizeof(*r->ev));
	if (!r->ev)
		return -ENOMEM;
	wid = fsnw_add(r->w, r->t->root, LIVE_MASK, FSNW_WATCH_TREE);
	return wid < 0 ? wid : 0;
}

static int uv_tree_open(struct live_reader *r)
{
	int err = uvpeer_open(&r->uv, on_uv_event, r);

	for (long i = 0; !err && i < r->t->ndirs; i++)
		err = uvpeer_start(r->uv, (size_t)i, r->t->dirs[i]);
	return err;
}

int live_open(struct live_reader *r, enum live_kind kind, const struct gentree *t, long nev)
{
	int err;

	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->t = t;
	r->ifd = -1;
	r->nev = nev;
	switch (kind) {
	case LIVE_RAW:
		return raw_open(r);
	case LIVE_LIB:
	case LIVE_FAN:
		return lib_tree_open(r);
	case LIVE_ITOOLS:
		err = itools_init();
		return err ? err : itools_watch_tree(t->root, LIVE_MASK);
	case LIVE_UV:
		return uv_tree_open(r);
	default:
		return -EINVAL;
	}
}

/* The records of one read. */
static void raw_records(struct live_reader *r, struct tally *c, long n)
{
	for_each_inotify_event(ev, r->buf, n) {
		if (ev->mask & IN_Q_OVERFLOW)
			c->overflows++;
		else
			tally_mask(c, ev->wd >= 0 && ev->wd < r->nwd ? r->wdpath[ev->wd] : NULL,
				   ev->len ? ev->name : NULL, ev->mask, 1);
	}
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Read once; the bytes, 0 when nothing was queued, or -errno. timed: add the
 * read's thread CPU time to read_ns (two more syscalls: not in live reads). */
static long raw_read_once(struct live_reader *r, struct tally *c, bool timed)
{
	uint64_t t0 = timed ? thread_cpu_ns() : 0;
	long n = raw_read(r->ifd, r->buf, EVBUF_SIZE);

	if (timed)
		r->read_ns += thread_cpu_ns() - t0;
	r->reads++;
	if (n > 0)
		raw_records(r, c, n);
	return n;
}

static int raw_follow(struct live_reader *r, struct tally *c)
{
	struct pollfd p = { .fd = r->ifd, .events = POLLIN };

	while (!c->done && !c->overflows) {
		long n;

		r->polls++;
		if (poll(&p, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		do
			n = raw_read_once(r, c, false);
		while (n > (long)(EVBUF_SIZE - RECORD_MAX));
		if (n < 0)
			return (int)n;
	}
	return 0;
}

/* fsnw_read once into the array: its return. */
static int lib_read_once(struct live_reader *r, struct tally *c, long max, int timeout)
{
	int n = fsnw_read(r->w, r->ev, (size_t)max, timeout);

	r->calls++;
	for (int k = 0; k < n; k++) {
		const struct fsnw_event *e = &r->ev[k];

		if (e->mask & FSNW_OVERFLOW)
			c->overflows++;
		else
			tally_mask(c, e->path, e->name, e->mask, e->count);
	}
	return n;
}

static int itools_follow(struct tally *c)
{
	while (!c->done && !c->overflows) {
		const char *name, *dir;
		uint32_t mask;
		int err = itools_wait(&mask, &name, &dir);

		if (err < 0)
			return err;
		if (mask & IN_Q_OVERFLOW)
			c->overflows++;
		else
			tally_mask(c, dir, name, mask, 1);
	}
	return 0;
}

int live_follow(struct live_reader *r, struct tally *c)
{
	r->tally = c;
	switch (r->kind) {
	case LIVE_RAW:
		return raw_follow(r, c);
	case LIVE_LIB:
	case LIVE_FAN:
		while (!c->done && !c->overflows) {
			int n = lib_read_once(r, c, r->nev, -1);

			if (n < 0)
				return n;
		}
		return 0;
	case LIVE_ITOOLS:
		return itools_follow(c);
	case LIVE_UV:
		return uvpeer_run(r->uv, true);
	default:
		return -EINVAL;
	}
}

int live_take(struct live_reader *r, struct tally *c, long n)
{
	long want = c->events + n;

	r->tally = c;
	while (c->events < want) {
		long got;

		switch (r->kind) {
		case LIVE_RAW:
			got = raw_read_once(r, c, true);
			break;
		case LIVE_LIB:
		case LIVE_FAN:
			/* The events are queued already: a wait would be a lost event. */
			got = lib_read_once(r, c, want - c->events < r->nev ? want - c->events :
					    r->nev, 1000);
			break;
		default:
			return -EOPNOTSUPP;
		}
		if (got < 0)
			return (int)got;
		if (!got)
			return -ETIMEDOUT;
	}
	return 0;
}

void live_counts(struct live_reader *r, struct live_counts *n)
{
	struct fsnw_stats st;

	n->syscalls = n->sleeps = -1;
	n->read_ns = 0;
	switch (r->kind) {
	case LIVE_RAW:
		n->syscalls = r->polls + r->reads;
		n->sleeps = r->polls;
		n->read_ns = r->read_ns;
		break;
	case LIVE_LIB:
	case LIVE_FAN:
		lib_stats(r->w, &st);
		n->syscalls = (long)lib_syscalls(&st);
		n->sleeps = (long)st.sys_poll;
		break;
	case LIVE_UV:
		n->sleeps = uvpeer_wakeups(r->uv);
		break;
	default:
		break;
	}
}

void live_close(struct live_reader *r)
{
	if (r->ifd >= 0)
		close(r->ifd);
	free(r->wdpath);
	free(r->buf);
	fsnw_close(r->w);
	free(r->ev);
	uvpeer_close(r->uv);
	if (r->kind == LIVE_ITOOLS)
		itools_cleanup();
	memset(r, 0, sizeof(*r));
	r->ifd = -1;
}
