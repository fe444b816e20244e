/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "liveburst.h"

static long gcd(long a, long b)
{
	while (b) {
		long r = a % b;

		a = b;
		b = r;
	}
	return a;
}

/* A stride near n / phi that visits every one of n slots before repeating. */
static long spread(long n)
{
	long s = (long)((double)n * 0.618) | 1;

	if (n < 3)
		return 1;
	while (gcd(s, n) != 1)
		s += 2;
	return s % n;
}

void burst_init(struct burst *u, const struct gentree *t, long ops)
{
	u->t = t;
	u->groups = ops / 4 > 0 ? ops / 4 : 1;
	u->dstride = spread(t->ndirs);
	u->fstride = spread(t->nfiles);
}

static const char *dir_of_group(const struct burst *u, long k)
{
	return u->t->dirs[(k * u->dstride) % u->t->ndirs];
}

static int write_file(const char *path, int flags)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | flags, 0600);
	int err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, "0123456789abcdef", 16) != 16)
		err = -EIO;
	if (close(fd) < 0 && !err)
		err = -errno;
	return err;
}

static void new_path(const struct burst *u, long k, char *buf, size_t len)
{
	snprintf(buf, len, "%s/n%ld", dir_of_group(u, k), k);
}

static void sentinel_path(const struct burst *u, char *buf, size_t len)
{
	snprintf(buf, len, "%s/" BURST_SENTINEL, u->t->root);
}

/* Group k's last two operations, on the file group k - 1 made. */
static int finish_previous(const struct burst *u, long k, char *buf, size_t len)
{
	int err;

	new_path(u, k, buf, len);
	err = write_file(buf, O_APPEND);
	return err ? err : unlink(buf) < 0 ? -errno : 0;
}

int burst_run(const struct burst *u)
{
	char path[4200], prev[4200];
	int err = 0;

	for (long k = 0; k < u->groups && !err; k++) {
		new_path(u, k, path, sizeof(path));
		err = write_file(path, O_CREAT | O_EXCL);
		if (!err && k > 0) {
			new_path(u, k - 1, prev, sizeof(prev));
			err = write_file(prev, O_APPEND);
		}
		if (!err)
			err = burst_appends(u, k, 1);
		if (!err && k > 0)
			err = unlink(prev) < 0 ? -errno : 0;
	}
	if (!err)
		err = finish_previous(u, u->groups - 1, path, sizeof(path));
	sentinel_path(u, path, sizeof(path));
	if (mkfifo(path, 0600) < 0 && !err)
		err = -errno;
	return err;
}

void burst_clean(const struct burst *u)
{
	char path[4200];

	sentinel_path(u, path, sizeof(path));
	unlink(path);
}

int burst_appends(const struct burst *u, long first, long n)
{
	char path[4200];

	for (long i = 0; i < n; i++) {
		int err;

		gentree_file_path(u->t, ((first + i) * u->fstride) % u->t->nfiles, path,
				  sizeof(path));
		err = write_file(path, O_APPEND);
		if (err)
			return err;
	}
	return 0;
}

const char *burst_dir_of(const struct burst *u, const char *name)
{
	char *end;
	long i;

	if (!name)
		return NULL;
	if (name[0] == '.')
		return strcmp(name, BURST_SENTINEL) ? NULL : u->t->root;
	if (name[0] != 'n' && name[0] != 'f')
		return NULL;
	i = strtol(name + 1, &end, 10);
	if (*end || i < 0)
		return NULL;
	if (name[0] == 'f')
		return i < u->t->nfiles ? u->t->dirs[gentree_file_dir(u->t, i)] : NULL;
	return i < u->groups ? dir_of_group(u, i) : NULL;
}

void tally_check(struct tally *c, const char *dir, const char *name)
{
	const char *want = burst_dir_of(c->u, name);
	size_t n = want ? strlen(want) : 0;

	c->checked++;
	/* libinotifytools keeps its directories with a trailing slash. */
	if (!want || !dir || strncmp(dir, want, n) || (dir[n] && strcmp(dir + n, "/")))
		c->wrong++;
}
