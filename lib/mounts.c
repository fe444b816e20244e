/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsnwatch.h"
#include "mounts.h"
#include "sys.h"

#define MOUNTINFO "/proc/self/mountinfo"

void mounts_init(struct mounts *m)
{
	memset(m, 0, sizeof(*m));
	m->poll_fd = m->check_fd = -1;
}

void mounts_close(struct mounts *m, struct fsnw_stats *st)
{
	if (m->poll_fd >= 0)
		sys_close(&st->sys_other, m->poll_fd);
	if (m->check_fd >= 0)
		sys_close(&st->sys_other, m->check_fd);
	mountinfo_free(&m->tab);
	mounts_init(m);
}

static int by_id(const void *a, const void *b)
{
	const struct mount_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int take_reading(struct mounts *m, struct mount_table *t, struct fsnw_stats *st)
{
	int ret = mountinfo_read(m->check_fd, t, &st->sys_other);

	if (ret == 0 && t->n)
		qsort(t->e, t->n, sizeof(*t->e), by_id);
	return ret;
}

int mounts_open(struct mounts *m, struct fsnw_stats *st)
{
	int ret;

	m->poll_fd = sys_open(&st->sys_other, MOUNTINFO, O_RDONLY);
	m->check_fd = m->poll_fd < 0 ? m->poll_fd : sys_open(&st->sys_other, MOUNTINFO, O_RDONLY);
	ret = m->check_fd < 0 ? m->check_fd : take_reading(m, &m->tab, st);
	if (ret < 0)
		mounts_close(m, st);
	return ret;
}

int mounts_check(struct mounts *m, mount_fn fn, void *arg, struct fsnw_stats *st)
{
	struct pollfd p = { .fd = m->check_fd, .events = POLLPRI };
	const struct mount_table *old = &m->tab;
	struct mount_table t;
	size_t i = 0, j = 0;
	int ret, changes = 0;

	if (m->check_fd < 0)
		return 0;
	/* The poll comes first: a change made while we read is seen next time. */
	ret = sys_poll(&st->sys_other, &p, 1, 0);
	if (!m->stale && (ret <= 0 || !(p.revents & (POLLPRI | POLLERR))))
		return 0;
	ret = take_reading(m, &t, st);
	m->stale = ret < 0;
	if (ret < 0)
		return ret;
	/* Both sorted by id: a merge tells the mounts that came and went. */
	while (i < old->n || j < t.n) {
		if (j == t.n || (i < old->n && old->e[i].id < t.e[j].id)) {
			fn(arg, &old->e[i++], false);
			changes++;
		} else if (i == old->n || t.e[j].id < old->e[i].id) {
			fn(arg, &t.e[j++], true);
			changes++;
		} else {
			i++;
			j++;
		}
	}
	mountinfo_free(&m->tab);
	m->tab = t;
	return changes;
}
