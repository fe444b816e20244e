/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "gentree.h"

int gentree_file_path(const struct gentree *t, long j, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/f%ld", t->dirs[gentree_file_dir(t, j)], j);
}

static int make_dirs(struct bench *b, struct gentree *t)
{
	long head = 0;

	t->dirs[0] = strdup(t->root);
	if (!t->dirs[0])
		return -ENOMEM;
	t->dirlen[0] = strlen(t->root);
	for (long made = 1; made < t->ndirs; head++) {
		for (int c = 0; c < GENTREE_FANOUT && made < t->ndirs; c++, made++) {
			char *p;
			int n = asprintf(&p, "%s/d%d", t->dirs[head], c);

			if (n < 0)
				return -ENOMEM;
			t->dirs[made] = p;
			t->dirlen[made] = (size_t)n;
			if (mkdir(p, 0700) < 0)
				return -errno;
		}
		if (!(head & 127))
			bench_progress(b, "making the tree: %ld/%ld directories", made, t->ndirs);
	}
	return 0;
}

static int make_files(struct bench *b, struct gentree *t)
{
	char path[4200];

	for (long j = 0; j < t->nfiles; j++) {
		int fd;

		gentree_file_path(t, j, path, sizeof(path));
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0)
			return -errno;
		if (write(fd, "0123456789abcdef", 16) != 16) {
			close(fd);
			return -EIO;
		}
		close(fd);
		if (!(j & 4095))
			bench_progress(b, "making the tree: %ld/%ld files", j, t->nfiles);
	}
	return 0;
}

int gentree_make(struct bench *b, struct gentree *t, const char *name, long ndirs, long nfiles)
{
	static unsigned serial;
	char n[64];
	int err;

	memset(t, 0, sizeof(*t));
	snprintf(n, sizeof(n), "%s-%u", name, serial++);
	err = bench_mkdir(b, n, t->root, sizeof(t->root));
	if (err)
		return err;
	t->ndirs = ndirs;
	t->dirs = calloc((size_t)ndirs, sizeof(*t->dirs));
	t->dirlen = calloc((size_t)ndirs, sizeof(*t->dirlen));
	err = t->dirs && t->dirlen ? make_dirs(b, t) : -ENOMEM;
	if (!err) {
		t->nfiles = nfiles;
		err = make_files(b, t);
	}
	if (err)
		gentree_free(t);
	return err;
}

void gentree_free(struct gentree *t)
{
	char path[4200];

	for (long j = 0; t->dirs && j < t->nfiles; j++) {
		gentree_file_path(t, j, path, sizeof(path));
		unlink(path);
	}
	/* Deepest first: breadth-first order reversed. */
	for (long i = t->ndirs - 1; t->dirs && i >= 0; i--) {
		if (t->dirs[i])
			rmdir(t->dirs[i]);
		free(t->dirs[i]);
	}
	free(t->dirs);
	free(t->dirlen);
	memset(t, 0, sizeof(*t));
}
