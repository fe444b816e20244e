/* SPDX-License-Identifier: MIT */
/*
 * churn's fixture: a directory of G files (distinct: G inodes) or of G hard
 * links to one file (shared: one inode), made, stat'ed once so the timed
 * path lookups find warm dentries, checked to have the inode shape its
 * topology promises, and removed again. The 94bd01253c3d report's reproducer makes one per
 * process, that is per round; churn does the same in process (raw-warm keeps
 * one across rounds: the method before the bench followed the reproducer).
 */
#ifndef FSNW_BENCH_CHURNFIX_H
#define FSNW_BENCH_CHURNFIX_H

#include <sys/types.h>

struct bench;

enum { DISTINCT, SHARED, NTOPO };
extern const char *const topo_name[NTOPO];

struct fixture {
	int topo;
	int G;
	char dir[4096];
	char target[4200]; /* shared: the one file the links name */
	char **path;       /* G paths */
	ino_t first_ino;   /* of path[0]: tells one fixture from the next */
};

/* Make a fresh fixture in the scratch directory; 0 or -errno (-EUCLEAN: the
 * inodes do not have the topology's shape). */
int fixture_make(struct bench *b, struct fixture *fx, int topo, int G);
/* Remove its files and directory; safe on a fixture that was never made. */
void fixture_free(struct fixture *fx);

#endif
