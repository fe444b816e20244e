/* SPDX-License-Identifier: MIT */
/*
 * The paths fsnw-wait and fsnw-watch watch, gathered as inotify-tools
 * gathers them (--fromfile first, then the arguments; @path excludes;
 * empty ones skipped), and what each turns out to be: a file, a directory,
 * a tree, the same object as an earlier one.
 */
#ifndef FSNW_EXAMPLES_TOOL_PATHS_H
#define FSNW_EXAMPLES_TOOL_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct tool_target {
	char *path;  /* as given */
	char *real;  /* the object's canonical path, or NULL when it does not resolve */
	char *root;  /* -S: the root of the mount it is on */
	dev_t dev;
	ino_t ino;
	bool exists; /* stat(2) (lstat(2) with -P) found it */
	bool dir;    /* and it is a directory */
	bool tree;   /* a directory with -r: watched with FSNW_WATCH_TREE */
	bool slash;  /* inotifywait shows the path with a '/' added */
	bool skip;   /* covered by an earlier target (same object, or below a tree): not added */
	int wid;     /* the add's result: a wid, or -errno; 0 until then */
};

struct tool_paths {
	struct tool_target *t; /* in the order inotify-tools watches them */
	size_t n, cap;
	char **excl;           /* the @paths, trailing slashes dropped */
	size_t nexcl, capexcl;
	struct tool_target **by_wid; /* the added targets, sorted by wid */
	size_t nwid;
	char *cwd;             /* where relative paths start, for fanotify's absolute names */
};

/* One path argument: a target, an @exclusion, or nothing (empty, a bare @). Returns 0 or -ENOMEM. */
int tool_paths_arg(struct tool_paths *p, const char *arg);

/*
 * The paths of --fromfile FILE ("-": standard input), one a line. A file
 * that cannot be opened is reported and skipped, as by inotify-tools.
 * Returns 0 or -ENOMEM (after saying so).
 */
int tool_paths_fromfile(struct tool_paths *p, const char *file);

/*
 * Look at each target (following symbolic links unless no_deref) and mark
 * the ones an earlier target covers: the same object (a path given twice,
 * as f and ./f, a hard link), or with -r a directory inside another tree.
 * inotify watches an object once, so inotifywait reports it once, under
 * the first path. Returns 0 or -ENOMEM.
 */
int tool_paths_resolve(struct tool_paths *p, bool recursive, bool no_deref);

/*
 * -S: the root of the mount each target is on, where a tree watch stands for
 * fsnotifywait's filesystem mark; targets on one mount share it. Returns 0,
 * -ENOENT when a target does not resolve, or -ENOMEM.
 */
int tool_paths_mount_roots(struct tool_paths *p);

/* Index the added targets by wid, for tool_paths_find. Returns 0 or -ENOMEM. */
int tool_paths_index(struct tool_paths *p);

/* The target a wid was added for, or NULL. */
const struct tool_target *tool_paths_find(const struct tool_paths *p, int wid);

/* Whether path (of an event in a tree) is an @path or below one. */
bool tool_paths_excluded(const struct tool_paths *p, const char *path);

void tool_paths_free(struct tool_paths *p);

#endif
