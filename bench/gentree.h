/* SPDX-License-Identifier: MIT */
/*
 * The trees the bench watches: a root and D - 1 directories below it made
 * breadth first with a fan-out of 10 (d0 .. d9 in each), and F files of a
 * few bytes spread over them round robin (file j, named fj, in directory
 * j mod D). Every path is kept, so a scenario can name what it touches and
 * check what an event says.
 */
#ifndef FSNW_BENCH_GENTREE_H
#define FSNW_BENCH_GENTREE_H

#include <stdbool.h>
#include <stddef.h>

struct bench;

#define GENTREE_FANOUT 10

struct gentree {
	char root[4096];
	long ndirs;   /* the root included */
	long nfiles;
	char **dirs;  /* ndirs paths; dirs[0] is the root */
	size_t *dirlen;
};

/* Make it in the scratch directory, under a fresh directory name-N; 0 or -errno
 * (what was made is removed again). */
int gentree_make(struct bench *b, struct gentree *t, const char *name, long ndirs, long nfiles);
/* The directory of file j. */
static inline long gentree_file_dir(const struct gentree *t, long j)
{
	return j % t->ndirs;
}
/* "dir/fj" into buf; the length. */
int gentree_file_path(const struct gentree *t, long j, char *buf, size_t len);
/* Remove its files and directories (the bench's own, never a --tree-path tree)
 * and free it; safe on one never made. */
void gentree_free(struct gentree *t);

#endif
