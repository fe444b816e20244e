/* SPDX-License-Identifier: MIT */
/*
 * fsnw-tree's view of a tree: the type of every entry below the root, kept
 * as a tree of nodes, one per entry, each directory holding its entries in
 * a tsearch(3) tree by name. Finding, adding or removing an entry costs the
 * depth of its path; removing or moving a whole subtree costs its size at
 * most, never the size of the view.
 */
#ifndef FSNW_EXAMPLES_SNAPSHOT_H
#define FSNW_EXAMPLES_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The entries of a directory, and how many there are below it, all levels. */
struct snap_dir {
	void *entries; /* tsearch tree of struct snap_node, by name */
	size_t count;
};

/*
 * One entry. A node of type 0 is a placeholder: a directory the view does
 * not hold, made only to hold an entry put below it (an event about a
 * directory the view does not know, which a rescan then settles). It is
 * neither reported nor counted, and goes when it holds nothing.
 */
struct snap_node {
	const char *name; /* first: the search key */
	struct snap_dir below;
	char type;        /* find -printf %y: d f l p s c b; 0 for a placeholder */
	char buf[];
};

struct snapshot {
	struct snap_dir top;
};

void snap_init(struct snapshot *s);
void snap_fini(struct snapshot *s);

/* How many entries s holds. */
size_t snap_count(const struct snapshot *s);

/* The type of path ("a/b", relative to the root) in s, or 0 when s does not hold it. */
char snap_type(const struct snapshot *s, const char *path);

/* Insert path or change its type; what it holds stays. Returns 0 or -errno. */
int snap_put(struct snapshot *s, const char *path, char type);

/* Remove path and everything below it. Returns 0 or -errno. */
int snap_remove(struct snapshot *s, const char *path);

/*
 * Take path and everything below it out of s into *out (NULL when s does
 * not hold it). Returns 0 or -errno.
 */
int snap_detach(struct snapshot *s, const char *path, struct snap_node **out);

/*
 * Put n, taken out by snap_detach, at path, in place of what was there;
 * s owns it from then on, also on failure. Returns 0 or -errno.
 */
int snap_attach(struct snapshot *s, const char *path, struct snap_node *n);

/* Free a node taken out by snap_detach, with everything below it. NULL is fine. */
void snap_node_free(struct snap_node *n);

/* Fill s, empty, with what is really below path (relative to rootfd; "" for the root itself). */
int snap_walk(struct snapshot *s, int rootfd, const char *path);

/* The type letter of what is at path (relative to dirfd) now; 'f' when gone. */
char snap_type_at(int dirfd, const char *path);

/*
 * Report how what s holds below dir differs from fresh, a walk of dir:
 * deletions first, children before their parents, then creations, parents
 * before their children. A change of type is a deletion and a creation.
 * path is the entry's, relative to the root of s.
 */
typedef void snap_diff_fn(void *arg, const char *path, char type, bool created);
int snap_diff_below(const struct snapshot *s, const char *dir, const struct snapshot *fresh,
		    snap_diff_fn *fn, void *arg);

/* Replace what s holds below dir by the content of fresh, which is left empty. */
int snap_replace_below(struct snapshot *s, const char *dir, struct snapshot *fresh);

/* One "TYPE<TAB>PATH" line per entry, sorted; what find -printf '%y\t%P\n' | sort gives. */
void snap_dump(const struct snapshot *s, FILE *f);

#endif
