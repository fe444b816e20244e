/* SPDX-License-Identifier: MIT */
/* fsnw-watch's rows for trees: the walk at the start, the bookkeeping after each event. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tool-names.h"
#include "watch.h"

/* inotifywatch compares an @path with the directory's name, one trailing '/' off. */
static bool excluded(const struct tool_paths *p, const char *dir)
{
	size_t len = strlen(dir) - 1;

	for (size_t i = 0; i < p->nexcl; i++)
		if (strlen(p->excl[i]) == len && !strncmp(p->excl[i], dir, len))
			return true;
	return false;
}

static int walk_below(struct watch_state *s, const char *path, DIR *d)
{
	struct dirent *e;
	int ret = 0;

	while (ret == 0 && (e = readdir(d))) {
		struct stat st;
		char *next;
		int len;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		len = asprintf(&next, "%s%s/", path, e->d_name);
		if (len < 0)
			return -ENOMEM;
		/* Not through a symbolic link; what went meanwhile is not watched. */
		next[len - 1] = '\0';
		if (lstat(next, &st) == 0 && S_ISDIR(st.st_mode)) {
			next[len - 1] = '/';
			if (!excluded(&s->paths, next))
				ret = watch_walk(s, next);
		}
		free(next);
	}
	return ret;
}

int watch_walk(struct watch_state *s, const char *path)
{
	DIR *d = opendir(path);
	struct stat st;
	long row;
	int ret;

	if (!d)
		return 0;
	ret = walk_below(s, path, d);
	closedir(d);
	if (ret < 0)
		return ret;
	/* Watched last: inotify numbers it after everything below it. */
	if (stat(path, &st) < 0)
		return 0;
	row = watch_table_add(&s->table, path, strlen(path), true, st.st_dev, st.st_ino);
	return row < 0 ? (int)row : 0;
}

/* A row for a directory that came into the tree, numbered as inotify would number it. */
static int new_directory(struct watch_state *s, const char *path)
{
	struct stat st;
	long row;

	if (stat(path, &st) < 0 || !S_ISDIR(st.st_mode))
		return 0; /* gone again, or a link: inotifywatch watches neither */
	row = watch_table_add(&s->table, path, strlen(path), true, st.st_dev, st.st_ino);
	return row < 0 ? (int)row : 0;
}

/* The name inotifywatch gives a directory entry's own watch: %w, the name, '/'. */
static char *dir_path(const struct tool_names *n)
{
	char *p;

	return asprintf(&p, "%.*s%s/", (int)n->dirlen, n->dir, n->name) < 0 ? NULL : p;
}

int watch_follow_tree(struct watch_state *s, const struct fsnw_event *ev,
		      const struct tool_names *n)
{
	bool isdir = (ev->mask & FSNW_ISDIR) && n->name[0];
	char *path = NULL;
	int ret = 0;

	if (s->moved_from && !(ev->mask & FSNW_MOVED_TO)) {
		long row = watch_table_find(&s->table, s->moved_from, strlen(s->moved_from));

		if (row >= 0)
			watch_table_drop(&s->table, (size_t)row);
		free(s->moved_from);
		s->moved_from = NULL;
	}
	if (isdir && !(path = dir_path(n)))
		return -ENOMEM;
	if (ev->mask & FSNW_CREATE || (!s->moved_from && ev->mask & FSNW_MOVED_TO)) {
		if (path)
			ret = new_directory(s, path);
	} else if (ev->mask & FSNW_MOVED_FROM) {
		if (path && watch_table_find(&s->table, path, strlen(path)) >= 0) {
			s->moved_from = path;
			path = NULL;
		}
	} else if (ev->mask & FSNW_MOVED_TO && s->moved_from) {
		if (path)
			ret = watch_table_rename(&s->table, s->moved_from, path);
		free(s->moved_from);
		s->moved_from = NULL;
	}
	free(path);
	return ret;
}
