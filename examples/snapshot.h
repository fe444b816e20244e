/* SPDX-License-Identifier: MIT */
/*
 * fsnw-tree's view of a tree: the relative path and type of every entry
 * below the root, kept sorted (a tsearch(3) tree), so that a parent always
 * comes before its children.
 */
#ifndef FSNW_EXAMPLES_SNAPSHOT_H
#define FSNW_EXAMPLES_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct snapshot {
	void *root;   /* tsearch tree of struct snap_entry */
	size_t count;
};

struct snap_entry {
	char type;    /* find -printf %y: d f l p s c b */
	char path[];  /* relative to the root: "a", "a/b" */
};

void snap_init(struct snapshot *s);
void snap_fini(struct snapshot *s);

/* The type of path in s, or 0 when s does not hold it. */
char snap_type(const struct snapshot *s, const char *path);

/* Insert path or change its type. Returns 0 or -ENOMEM. */
int snap_put(struct snapshot *s, const char *path, char type);

/*
 * Move path and everything below it (only what is below it when
 * below_only) from s into out, which keeps the same keys.
 * An empty path stands for the root: everything.
 */
int snap_extract(struct snapshot *s, const char *path, bool below_only, struct snapshot *out);

/* Move every entry of from into to, its leading `old` prefix replaced by `new`. */
int snap_move(struct snapshot *to, struct snapshot *from, const char *old, const char *new);

/* Add what is really below path (relative to rootfd; "" for the root itself). */
int snap_walk(struct snapshot *s, int rootfd, const char *path);

/* The type letter of what is at path (relative to dirfd) now; 'f' when gone. */
char snap_type_at(int dirfd, const char *path);

/*
 * Report what changed from old to new: deletions first, deepest first, then
 * creations, parents first. A change of type is a deletion and a creation.
 */
typedef void snap_diff_fn(void *arg, const struct snap_entry *e, bool created);
int snap_diff(const struct snapshot *old, const struct snapshot *new, snap_diff_fn *fn, void *arg);

/* One "TYPE<TAB>PATH" line per entry, sorted; what find -printf '%y\t%P\n' | sort gives. */
void snap_dump(const struct snapshot *s, FILE *f);

#endif
