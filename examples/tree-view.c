/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eventfmt.h"
#include "tree-view.h"

/* The path of rel under the root, as the library reports it. */
static int full_path(const struct tree_view *t, const char *rel, size_t len, char *buf)
{
	bool slash = t->rootlen && t->root[t->rootlen - 1] != '/';

	if (t->rootlen + 1 + len + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, t->root, t->rootlen);
	if (len && slash)
		buf[t->rootlen] = '/';
	memcpy(buf + t->rootlen + (len && slash), rel, len);
	buf[t->rootlen + (len && slash) + len] = '\0';
	return 0;
}

/* The path of an event's entry relative to the root, or -EINVAL when outside it. */
static int rel_path(const struct tree_view *t, const struct fsnw_event *ev, char *buf)
{
	const char *dir = ev->path;
	size_t dlen;

	if (!dir || strncmp(dir, t->root, t->rootlen))
		return -EINVAL;
	dir += t->rootlen;
	/* "/a/bc" is not below "/a/b"; everything is below "/". */
	if (*dir && *dir != '/' && t->root[t->rootlen - 1] != '/')
		return -EINVAL;
	while (*dir == '/')
		dir++;
	dlen = strlen(dir);
	if (dlen + 1 + (ev->name ? strlen(ev->name) : 0) + 1 > PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(buf, dir, dlen);
	buf[dlen] = '\0';
	if (ev->name) {
		if (dlen)
			buf[dlen++] = '/';
		strcpy(buf + dlen, ev->name);
	}
	return 0;
}

/* The type letter of what is at rel now. */
static char type_at(const struct tree_view *t, const char *rel)
{
	char path[PATH_MAX];

	if (full_path(t, rel, strlen(rel), path) < 0)
		return 'f';
	return snap_type_at(AT_FDCWD, path);
}

/*
 * The root is opened for each walk and closed after it: a descriptor kept
 * open would keep a deleted root alive, and with it the DELETE_SELF and
 * IGNORED that tell us it is gone.
 */
static int walk(const struct tree_view *t, struct snapshot *out, const char *rel)
{
	int fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = snap_walk(out, fd, rel);
	close(fd);
	return ret;
}

int tree_view_walk(struct tree_view *t)
{
	return walk(t, &t->view, "");
}

struct rescan {
	struct tree_view *t;
	size_t created, deleted;
};

/* Print a change the rescan found as an event of the tree's watch. */
static void print_change(void *arg, const char *path, char type, bool created)
{
	struct rescan *r = arg;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct fsnw_event ev = {
		.wid = r->t->wid,
		.mask = (created ? FSNW_CREATE : FSNW_DELETE) | FSNW_SYNTHETIC |
			(type == 'd' ? FSNW_ISDIR : 0),
		.count = 1,
		.path = dir,
		.name = slash ? slash + 1 : path,
	};

	if (full_path(r->t, path, slash ? (size_t)(slash - path) : 0, dir) < 0)
		return;
	json_print_event_open(stdout, &ev);
	fputs(",\"rescan\":true}\n", stdout);
	if (created)
		r->created++;
	else
		r->deleted++;
}

/*
 * Walk what is below rel ("" for the whole tree), print how it differs from
 * the view and take it as the view. Events that come after the walk are
 * applied on top, so the view converges even when the tree keeps changing.
 */
static int rescan(struct tree_view *t, const char *rel, const char *why)
{
	struct rescan r = { .t = t };
	struct snapshot fresh;
	int ret;

	snap_init(&fresh);
	ret = walk(t, &fresh, rel);
	if (ret == 0)
		ret = snap_diff_below(&t->view, rel, &fresh, print_change, &r);
	if (ret == 0)
		ret = snap_replace_below(&t->view, rel, &fresh);
	snap_fini(&fresh);
	if (why)
		t->rescans++;
	if (ret < 0)
		fprintf(stderr, "fsnw-tree: rescan of %s: %s\n", *rel ? rel : t->root,
			strerror(-ret));
	else if (why)
		fprintf(stderr, "fsnw-tree: rescan after %s: %zu created, %zu deleted\n", why,
			r.created, r.deleted);
	return ret;
}

void tree_view_forget_moved(struct tree_view *t)
{
	snap_node_free(t->moved);
	t->moved = NULL;
	t->moved_cookie = 0;
	free(t->moved_from);
	t->moved_from = NULL;
}

void tree_view_quiet(struct tree_view *t)
{
	for (size_t i = 0; i < t->nlisted; i++)
		free(t->listed[i]);
	t->nlisted = 0;
}

void tree_view_fini(struct tree_view *t)
{
	tree_view_forget_moved(t);
	tree_view_quiet(t);
	free(t->listed);
	t->listed = NULL;
	t->cap_listed = 0;
	snap_fini(&t->view);
}

/* Remember a directory moved in and listed, to list it again if a rename carries it. */
static int listed_add(struct tree_view *t, const char *rel)
{
	char *l = strdup(rel);

	if (!l)
		return -ENOMEM;
	if (t->nlisted == t->cap_listed) {
		size_t cap = t->cap_listed ? 2 * t->cap_listed : 16;
		char **v = realloc(t->listed, cap * sizeof(*v));

		if (!v) {
			free(l);
			return -ENOMEM;
		}
		t->listed = v;
		t->cap_listed = cap;
	}
	t->listed[t->nlisted++] = l;
	return 0;
}

/*
 * A rename of from to to carried the listed directories below from (or from
 * itself): the listing may have found them gone, or found another
 * directory. List each again under its new name, in place of what the view
 * has there; the rescan prints the differences.
 */
static int relist_carried(struct tree_view *t, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);

	for (size_t i = 0; i < t->nlisted; i++) {
		char *l = t->listed[i], *nl;
		size_t ll = strlen(l);
		int ret;

		if (strncmp(l, from, fl) || (l[fl] && l[fl] != '/'))
			continue;
		nl = malloc(tl + ll - fl + 1);
		if (!nl)
			return -ENOMEM;
		memcpy(nl, to, tl);
		memcpy(nl + tl, l + fl, ll - fl + 1);
		free(l);
		t->listed[i] = nl;
		ret = rescan(t, nl, NULL);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * An event in a directory the view does not hold means the view and the
 * events disagree: an event the library reported under a directory's old
 * name, say, or one from a directory already moved out. The walk settles it.
 */
static bool out_of_step(const struct tree_view *t, const char *rel)
{
	const char *slash = strrchr(rel, '/');
	char parent[PATH_MAX];

	if (!slash)
		return false;
	memcpy(parent, rel, (size_t)(slash - rel));
	parent[slash - rel] = '\0';
	return snap_type(&t->view, parent) != 'd';
}

/* Bring the view in line with one event about a named entry. */
static int apply_change(struct tree_view *t, const struct fsnw_event *ev, const char *rel)
{
	bool dir = ev->mask & FSNW_ISDIR;
	int ret = 0;

	if (ev->mask & FSNW_CREATE)
		/* A new directory's content comes as (synthetic) creates of its own. */
		return snap_put(&t->view, rel, dir ? 'd' : type_at(t, rel));
	if (ev->mask & FSNW_DELETE)
		return snap_remove(&t->view, rel);
	if (ev->mask & FSNW_MOVED_FROM) {
		tree_view_forget_moved(t);
		ret = snap_detach(&t->view, rel, &t->moved);
		t->moved_cookie = t->moved ? ev->cookie : 0;
		if (ret == 0 && t->moved && t->nlisted) {
			t->moved_from = strdup(rel);
			if (!t->moved_from)
				ret = -ENOMEM;
		}
		return ret;
	}
	if (!(ev->mask & FSNW_MOVED_TO))
		return 0;
	if (ev->cookie && ev->cookie == t->moved_cookie) {
		ret = snap_attach(&t->view, rel, t->moved);
		t->moved = NULL;
		if (ret == 0 && t->moved_from)
			ret = relist_carried(t, t->moved_from, rel);
		tree_view_forget_moved(t);
		return ret;
	}
	/* From outside the tree: nobody told us what it holds. */
	ret = snap_put(&t->view, rel, dir ? 'd' : type_at(t, rel));
	if (ret == 0 && dir)
		ret = rescan(t, rel, NULL);
	if (ret == 0 && dir && t->relist)
		ret = listed_add(t, rel);
	return ret;
}

/*
 * The event is applied even when out of step, so that the view holds what
 * the reader was told, and the rescan's differences take both back to what
 * is really there.
 */
static int apply_named(struct tree_view *t, const struct fsnw_event *ev, const char *rel)
{
	bool stale = (ev->mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE)) && out_of_step(t, rel);
	int ret = apply_change(t, ev, rel);

	if (ret < 0 || !stale)
		return ret;
	tree_view_forget_moved(t);
	return rescan(t, "", "an event under a directory not in the view");
}

int tree_view_event(struct tree_view *t, const struct fsnw_event *ev)
{
	char rel[PATH_MAX];

	json_print_event_open(stdout, ev);
	fputs("}\n", stdout);
	if (ev->mask & FSNW_OVERFLOW) {
		tree_view_forget_moved(t);
		return rescan(t, "", "overflow");
	}
	if (ev->mask & FSNW_IGNORED) {
		fprintf(stderr, "fsnw-tree: %s is gone\n", t->root);
		return 1;
	}
	if (rel_path(t, ev, rel) < 0)
		return 0;
	if (ev->name)
		return apply_named(t, ev, rel);
	if ((ev->mask & FSNW_MOVE_SELF) && !*rel) {
		/* The library reports under the old name; our view would be stale. */
		fprintf(stderr, "fsnw-tree: %s was moved away\n", t->root);
		return 1;
	}
	return 0;
}
