/* SPDX-License-Identifier: MIT */
/*
 * The torture's side of the filesystem: a model of what it made below its
 * scratch directory (paths relative to it: "W0/...", "W1/..." for the
 * watched trees, "O/..." outside them), random operations drawn from a
 * seeded generator, each applied with its system calls and logged as a
 * primitive line that a replay reads back:
 *
 *   mkdir P | create P | append P | unlink P | rmdir P | rmrf P
 *   mv A B | link A B | mount P | umount P
 *
 * Only this program writes below the scratch directory, so the model is
 * exact; a replayed line that fails (a shrunk list left out what made its
 * path) is skipped.
 */
#ifndef FSNW_TORTURE_FSOPS_H
#define FSNW_TORTURE_FSOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	/* splitmix64: small, and as good as the test needs */
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A number in [0, n). */
static inline size_t rng_below(struct rng *r, size_t n)
{
	return n ? (size_t)(rng_next(r) % n) : 0;
}

struct entry {
	char *path;
	bool dir;
};

/* The lines applied so far (the log a failure prints and a shrink cuts). */
struct oplog {
	char **line;
	size_t n, cap;
};

struct fsmodel {
	int rootfd;            /* the scratch directory */
	struct entry *e;       /* every entry but the areas' own directories */
	size_t n, cap;
	unsigned trees;        /* W0 .. W(trees-1) */
	bool mounts;           /* may mount a tmpfs inside a tree */
	char **mounted;        /* mount points made, to take away at the end */
	size_t nmounted;
	uint64_t serial;       /* names made so far */
	struct oplog log;
	unsigned failed;       /* lines that failed (replays only) */
};

/* A model of rootfd's areas (made empty) for `trees` trees; -errno. */
int fsmodel_init(struct fsmodel *m, int rootfd, unsigned trees, bool mounts);
void fsmodel_fini(struct fsmodel *m);

/* Fill the areas with about `entries` entries (the trees' start). */
int fsmodel_populate(struct fsmodel *m, struct rng *r, size_t entries);

/* Apply one random operation (a few lines); -errno on a failure the
 * model did not expect. */
int fsmodel_random_op(struct fsmodel *m, struct rng *r);

/* Apply one logged line; 0 when it applied or failed harmlessly. */
int fsmodel_apply_line(struct fsmodel *m, const char *line);

/* Take away the mounts made. */
void fsmodel_unmount_all(struct fsmodel *m);

void oplog_print(const struct oplog *l, FILE *f, size_t from);
void oplog_clear(struct oplog *l);

#endif
