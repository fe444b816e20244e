/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "churnfix.h"

const char *const topo_name[NTOPO] = { "distinct", "shared" };

static int by_ino(const void *a, const void *b)
{
	ino_t x = *(const ino_t *)a, y = *(const ino_t *)b;

	return (x > y) - (x < y);
}

/* Stat every path (the lookups the timed adds make then hit warm dentries)
 * and check the shape: G different inodes, or one inode G times. */
static int warm_and_check(struct fixture *fx)
{
	ino_t *ino = calloc((size_t)fx->G, sizeof(*ino));
	int err = 0;

	if (!ino)
		return -ENOMEM;
	for (int j = 0; j < fx->G && !err; j++) {
		struct stat st;

		if (stat(fx->path[j], &st) < 0)
			err = -errno;
		ino[j] = st.st_ino;
	}
	if (!err) {
		fx->first_ino = ino[0];
		qsort(ino, (size_t)fx->G, sizeof(*ino), by_ino);
		for (int j = 1; j < fx->G && !err; j++)
			if ((ino[j] == ino[j - 1]) != (fx->topo == SHARED))
				err = -EUCLEAN;
	}
	free(ino);
	return err;
}

static int make_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

int fixture_make(struct bench *b, struct fixture *fx, int topo, int G)
{
	static unsigned serial;
	char name[32];
	int err;

	memset(fx, 0, sizeof(*fx));
	fx->topo = topo;
	fx->G = G;
	/* The pid too: each round's process counts from where its parent was. */
	snprintf(name, sizeof(name), "churn-%d-%u", (int)getpid(), serial++);
	err = bench_mkdir(b, name, fx->dir, sizeof(fx->dir));
	if (err) {
		fx->dir[0] = '\0';
		return err;
	}
	fx->path = calloc((size_t)G, sizeof(char *));
	if (!fx->path)
		return -ENOMEM;
	if (topo == SHARED) {
		snprintf(fx->target, sizeof(fx->target), "%s/keeper", fx->dir);
		err = make_file(fx->target);
	}
	for (int j = 0; j < G && !err; j++) {
		if (asprintf(&fx->path[j], "%s/%c%d", fx->dir, topo == SHARED ? 'l' : 'f', j) < 0) {
			fx->path[j] = NULL;
			return -ENOMEM;
		}
		if (topo == SHARED)
			err = link(fx->target, fx->path[j]) < 0 ? -errno : 0;
		else
			err = make_file(fx->path[j]);
	}
	return err ? err : warm_and_check(fx);
}

void fixture_free(struct fixture *fx)
{
	for (int j = 0; fx->path && j < fx->G; j++) {
		if (fx->path[j])
			unlink(fx->path[j]);
		free(fx->path[j]);
	}
	free(fx->path);
	fx->path = NULL;
	if (fx->target[0])
		unlink(fx->target);
	if (fx->dir[0])
		rmdir(fx->dir);
	fx->dir[0] = fx->target[0] = '\0';
}
