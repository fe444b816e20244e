/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"

#define BATCH_MAX 256

static struct tree_view *view_of(struct reader *rd, int wid)
{
	for (unsigned i = 0; i < rd->ntrees; i++)
		if (rd->view[i].wid == wid)
			return &rd->view[i];
	return NULL;
}

/* A sentinel's create at the first tree's root: its number, or 0. */
static uint64_t sentinel_of(const struct reader *rd, const struct fsnw_event *ev)
{
	const struct tree_view *t = &rd->view[0];

	if (ev->wid != t->wid || !(ev->mask & FSNW_CREATE) || !ev->name ||
	    strncmp(ev->name, SENTINEL, strlen(SENTINEL)) || strcmp(ev->path, t->root))
		return 0;
	return strtoull(ev->name + strlen(SENTINEL), NULL, 10);
}

static int apply(struct reader *rd, const struct fsnw_event *ev)
{
	uint64_t s = sentinel_of(rd, ev);
	int ret = 0;

	rd->events++;
	if (rd->trace)
		fprintf(rd->trace, "%d %#x %u %s %s\n", ev->wid, ev->mask, ev->cookie,
			ev->path ? ev->path : "-", ev->name ? ev->name : "-");
	if (s > rd->seen)
		rd->seen = s;
	if (ev->mask & FSNW_OVERFLOW) {
		rd->overflows++;
		for (unsigned i = 0; i < rd->ntrees && ret >= 0; i++)
			ret = tree_view_event(&rd->view[i], ev);
		return ret < 0 ? ret : 0;
	}
	struct tree_view *t = view_of(rd, ev->wid);

	if (!t)
		return 0;
	ret = tree_view_event(t, ev);
	if (ret > 0) {
		fprintf(stderr, "torture: tree %s ended (event %#x at %s, name %s)\n", t->root,
			ev->mask, ev->path ? ev->path : "-", ev->name ? ev->name : "-");
		return -ENOENT;
	}
	return ret;
}

/*
 * The sentinel waited for is in the first tree's view without its event:
 * an FSNW_OVERFLOW dropped the event, and the scan it called for found the
 * file. A scan that stands answers for a moment after the sentinel was
 * made, so the view has caught up with it all the same.
 */
static void scanned_sentinel(struct reader *rd)
{
	char name[64];

	if (!rd->ntrees || rd->want <= rd->seen)
		return;
	snprintf(name, sizeof(name), SENTINEL "%llu", (unsigned long long)rd->want);
	if (snap_type(&rd->view[0].view, name))
		rd->seen = rd->want;
}

/* An empty read: scans that waited for one stand (or scan again). */
static int quiet(struct reader *rd, bool *settled)
{
	int ret = 0;

	*settled = true;
	for (unsigned i = 0; i < rd->ntrees && ret == 0; i++) {
		ret = tree_view_quiet(&rd->view[i]);
		*settled &= !tree_view_unsettled(&rd->view[i]);
	}
	return ret;
}

static void nap(struct reader *rd)
{
	struct timespec ts = { 0, 0 };

	if (rng_below(&rd->r, 1000) >= rd->lag_per_mille)
		return;
	ts.tv_nsec = (long)(rng_below(&rd->r, 3000) * 1000); /* up to 3 ms */
	nanosleep(&ts, NULL);
}

static void *run(void *arg)
{
	struct reader *rd = arg;
	struct fsnw_event ev[BATCH_MAX];

	pthread_mutex_lock(&rd->mu);
	while (!rd->stop) {
		size_t max = 1 + rng_below(&rd->r, rd->max_batch);
		bool settled;
		int n, ret = 0, timeout = 20;

		/* Reads sleep for events, as a daemon's do; but once the
		 * sentinel the driver waits for is applied, the driver makes no
		 * change until it is synced, and the kernel holds every event
		 * older than the sentinel: a read that does not sleep and finds
		 * nothing has read them all (collect_now's sync point). */
		if (rd->seen >= rd->want && rd->want > rd->synced)
			timeout = 0;
		pthread_mutex_unlock(&rd->mu);
		n = fsnw_read(rd->w, ev, max, timeout);
		pthread_mutex_lock(&rd->mu);
		if (n < 0) {
			rd->err = n;
			break;
		}
		for (int i = 0; i < n && ret == 0; i++)
			ret = apply(rd, &ev[i]);
		if (ret == 0 && n == 0)
			ret = quiet(rd, &settled);
		if (ret == 0 && n == 0 && settled)
			scanned_sentinel(rd);
		if (ret < 0) {
			rd->err = ret;
			break;
		}
		if (n == 0 && settled && rd->seen > rd->synced) {
			rd->synced = rd->seen;
			rd->paused = true;
			pthread_cond_broadcast(&rd->cv);
			while (rd->paused && !rd->stop)
				pthread_cond_wait(&rd->cv, &rd->mu);
		}
		if (n > 0) {
			pthread_mutex_unlock(&rd->mu);
			nap(rd);
			pthread_mutex_lock(&rd->mu);
		}
	}
	rd->running = false;
	pthread_cond_broadcast(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
	return NULL;
}

int reader_start(struct reader *rd)
{
	int ret;

	pthread_mutex_init(&rd->mu, NULL);
	pthread_cond_init(&rd->cv, NULL);
	if (rd->max_batch < 1 || rd->max_batch > BATCH_MAX)
		rd->max_batch = BATCH_MAX;
	rd->running = true;
	ret = pthread_create(&rd->thread, NULL, run, rd);
	if (ret) {
		rd->running = false;
		return -ret;
	}
	return 0;
}

void reader_stop(struct reader *rd)
{
	pthread_mutex_lock(&rd->mu);
	rd->stop = true;
	pthread_cond_broadcast(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
	(void)fsnw_wake(rd->w);
	pthread_join(rd->thread, NULL);
	pthread_cond_destroy(&rd->cv);
	pthread_mutex_destroy(&rd->mu);
}

int reader_sync(struct reader *rd, int rootfd, uint64_t n, int timeout_s)
{
	struct timespec until;
	char name[64];
	int fd;

	snprintf(name, sizeof(name), "W0/" SENTINEL "%llu", (unsigned long long)n);
	pthread_mutex_lock(&rd->mu);
	rd->want = n;
	pthread_mutex_unlock(&rd->mu);
	fd = openat(rootfd, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	close(fd);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_s;
	pthread_mutex_lock(&rd->mu);
	while (rd->synced < n && rd->running && !rd->err) {
		if (pthread_cond_timedwait(&rd->cv, &rd->mu, &until) == ETIMEDOUT) {
			pthread_mutex_unlock(&rd->mu);
			return -ETIMEDOUT;
		}
	}
	if (rd->err || rd->synced < n) {
		int err = rd->err ? rd->err : -EPIPE;

		pthread_mutex_unlock(&rd->mu);
		return err;
	}
	return 0;
}

void reader_resume(struct reader *rd)
{
	rd->paused = false;
	pthread_cond_broadcast(&rd->cv);
	pthread_mutex_unlock(&rd->mu);
}
