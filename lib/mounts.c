/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsnwatch.h"
#include "mem.h"
#include "mounts.h"

#define MOUNTINFO "/proc/self/mountinfo"

void mounts_init(struct mounts *m)
{
	memset(m, 0, sizeof(*m));
	m->poll_fd = m->check_fd = -1;
}

static void free_points(struct mount_point *pts, size_t n)
{
	for (size_t i = 0; i < n; i++)
		mem_free(pts[i].path);
	mem_free(pts);
}

void mounts_close(struct mounts *m)
{
	if (m->poll_fd >= 0)
		close(m->poll_fd);
	if (m->check_fd >= 0)
		close(m->check_fd);
	free_points(m->pts, m->n);
	mounts_init(m);
}

/* The whole file, NUL-terminated, in a new buffer. */
static int read_all(int fd, char **out, struct fsnw_stats *st)
{
	size_t cap = 8192, len = 0;
	char *buf = mem_alloc(cap);

	if (!buf)
		return -ENOMEM;
	st->sys_other++;
	if (lseek(fd, 0, SEEK_SET) < 0)
		goto fail;
	for (;;) {
		ssize_t n;

		if (cap - len < 4096) {
			char *p = mem_realloc(buf, cap * 2);

			if (!p) {
				errno = ENOMEM;
				goto fail;
			}
			buf = p;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len - 1);
		st->sys_other++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			goto fail;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*out = buf;
	return 0;
fail:
	mem_free(buf);
	return -errno;
}

/* Undo mountinfo's octal escapes (\040 for a space, ...) in place. */
static void unescape(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
		    s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

static int by_id(const void *a, const void *b)
{
	const struct mount_point *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* "ID PARENT MAJ:MIN ROOT POINT OPTIONS ..." per line. */
static int parse(char *buf, struct mount_point **out, size_t *nout)
{
	struct mount_point *pts = NULL;
	size_t n = 0, cap = 0;
	char *line, *save = NULL;

	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *f[5], *fs = NULL, *tok = strtok_r(line, " ", &fs);
		int i;

		for (i = 0; i < 5 && tok; i++, tok = strtok_r(NULL, " ", &fs))
			f[i] = tok;
		if (i < 5)
			continue;
		if (n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct mount_point *p = mem_realloc(pts, ncap * sizeof(*p));

			if (!p)
				goto nomem;
			pts = p;
			cap = ncap;
		}
		unescape(f[4]);
		pts[n].id = strtoull(f[0], NULL, 10);
		pts[n].path = mem_alloc(strlen(f[4]) + 1);
		if (!pts[n].path)
			goto nomem;
		strcpy(pts[n].path, f[4]);
		n++;
	}
	if (n)
		qsort(pts, n, sizeof(*pts), by_id);
	*out = pts;
	*nout = n;
	return 0;
nomem:
	free_points(pts, n);
	return -ENOMEM;
}

static int take_reading(struct mounts *m, struct mount_point **pts, size_t *n,
			struct fsnw_stats *st)
{
	char *buf = NULL;
	int ret = read_all(m->check_fd, &buf, st);

	if (ret < 0)
		return ret;
	ret = parse(buf, pts, n);
	mem_free(buf);
	return ret;
}

int mounts_open(struct mounts *m, struct fsnw_stats *st)
{
	int ret;

	m->poll_fd = open(MOUNTINFO, O_RDONLY | O_CLOEXEC);
	m->check_fd = m->poll_fd < 0 ? -1 : open(MOUNTINFO, O_RDONLY | O_CLOEXEC);
	st->sys_other += 2;
	ret = m->check_fd < 0 ? -errno : take_reading(m, &m->pts, &m->n, st);
	if (ret < 0)
		mounts_close(m);
	return ret;
}

int mounts_check(struct mounts *m, mount_fn fn, void *arg, struct fsnw_stats *st)
{
	struct pollfd p = { .fd = m->check_fd, .events = POLLPRI };
	struct mount_point *pts;
	size_t n, i = 0, j = 0;
	int ret, changes = 0;

	if (m->check_fd < 0)
		return 0;
	/* The poll comes first: a change made while we read is seen next time. */
	ret = poll(&p, 1, 0);
	st->sys_other++;
	if (!m->stale && (ret <= 0 || !(p.revents & (POLLPRI | POLLERR))))
		return 0;
	ret = take_reading(m, &pts, &n, st);
	m->stale = ret < 0;
	if (ret < 0)
		return ret;
	/* Both sorted by id: a merge tells the mounts that came and went. */
	while (i < m->n || j < n) {
		if (j == n || (i < m->n && m->pts[i].id < pts[j].id)) {
			fn(arg, m->pts[i++].path);
			changes++;
		} else if (i == m->n || pts[j].id < m->pts[i].id) {
			fn(arg, pts[j++].path);
			changes++;
		} else {
			i++;
			j++;
		}
	}
	free_points(m->pts, m->n);
	m->pts = pts;
	m->n = n;
	return changes;
}
