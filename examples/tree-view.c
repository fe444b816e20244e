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

#define NAMESPACE (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO)

int tree_view_init(struct tree_view *t, const char *root, int wid, FILE *out)
{
	size_t len = strlen(root);

	memset(t, 0, sizeof(*t));
	while (len > 1 && root[len - 1] == '/')
		len--;
	t->root = strndup(root, len);
	if (!t->root)
		return -ENOMEM;
	t->rootlen = len;
	t->wid = wid;
	t->out = out;
	snap_init(&t->view);
	return 0;
}

/* The path of rel under the root, as the library reports it. */
static int full_path(const struct tree_view *t, const char *rel, size_t len, char *buf)
{
	bool slash = t->root[t->rootlen - 1] != '/';

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

static void forget_moved(struct tree_view *t)
{
	snap_node_free(t->moved);
	t->moved = NULL;
	t->moving = false;
	t->moved_cookie = 0;
}

/* Print a difference a scan found, as a synthetic event of the tree's watch. */
static void print_change(void *arg, const char *path, char type, bool created)
{
	struct tree_view *t = arg;
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct fsnw_event ev = {
		.wid = t->wid,
		.mask = (created ? FSNW_CREATE : FSNW_DELETE) | FSNW_SYNTHETIC |
			(type == 'd' ? FSNW_ISDIR : 0),
		.count = 1,
		.path = dir,
		.name = slash ? slash + 1 : path,
	};

	if (created)
		t->created++;
	else
		t->deleted++;
	if (!t->out || full_path(t, path, slash ? (size_t)(slash - path) : 0, dir) < 0)
		return;
	json_print_event_open(t->out, &ev);
	fputs(",\"rescan\":true}\n", t->out);
}

/*
 * The root is opened for each scan and closed after it: a descriptor kept
 * open would keep a deleted root alive, and with it the DELETE_SELF and
 * IGNORED that tell us it is gone.
 */
int tree_view_scan(struct tree_view *t)
{
	struct snapshot fresh;
	int fd, ret;

	forget_moved(t);
	t->scans++;
	t->unsettled = true;
	t->dirty = false;
	t->created = t->deleted = 0;
	snap_init(&fresh);
	fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ret = fd < 0 ? -errno : snap_walk(&fresh, fd, "");
	if (fd >= 0)
		close(fd);
	if (ret == 0)
		ret = snap_diff_below(&t->view, "", &fresh, print_change, t);
	if (ret == 0)
		ret = snap_replace_below(&t->view, "", &fresh);
	snap_fini(&fresh);
	return ret;
}

int tree_view_quiet(struct tree_view *t)
{
	if (!t->unsettled)
		return 0;
	if (t->dirty)
		return tree_view_scan(t);
	t->unsettled = false;
	return 0;
}

/* A new entry at rel, in place of what was there: a directory starts empty. */
static int put_new(struct tree_view *t, const char *rel, bool dir)
{
	int ret = snap_remove(&t->view, rel);

	return ret < 0 ? ret : snap_put(&t->view, rel, dir ? 'd' : 'f');
}

/* Apply one event about a named entry (rel: its path from the root). */
static int apply_named(struct tree_view *t, const struct fsnw_event *ev, const char *rel)
{
	bool dir = ev->mask & FSNW_ISDIR;
	struct snap_node *n;
	int ret;

	if (t->moving && !((ev->mask & FSNW_MOVED_TO) && ev->cookie == t->moved_cookie))
		forget_moved(t); /* moved out of the tree */
	if (dir && (ev->mask & NAMESPACE))
		t->dirty = true;
	if (ev->mask & FSNW_CREATE)
		return put_new(t, rel, dir);
	if (ev->mask & FSNW_DELETE)
		return snap_remove(&t->view, rel);
	if (ev->mask & FSNW_MOVED_FROM) {
		forget_moved(t);
		ret = snap_detach(&t->view, rel, &t->moved);
		t->moving = ret == 0;
		t->moved_cookie = ev->cookie;
		return ret;
	}
	if (!(ev->mask & FSNW_MOVED_TO))
		return 0;
	if (!t->moving || !t->moved)
		ret = put_new(t, rel, dir); /* moved in */
	else {
		n = t->moved;
		t->moved = NULL;
		ret = snap_attach(&t->view, rel, n);
	}
	forget_moved(t);
	return ret;
}

/* The tree's own directory renamed, and the library followed it (fanotify):
 * its MOVE_SELF names the new path, and what the view holds is there now. */
static int follow_root(struct tree_view *t, const char *path)
{
	size_t len = strlen(path);
	char *root;

	while (len > 1 && path[len - 1] == '/')
		len--;
	root = strndup(path, len);
	if (!root)
		return -ENOMEM;
	free(t->root);
	t->root = root;
	t->rootlen = len;
	return 0;
}

int tree_view_event(struct tree_view *t, const struct fsnw_event *ev)
{
	char rel[PATH_MAX];

	if (t->out) {
		json_print_event_open(t->out, ev);
		fputs("}\n", t->out);
	}
	if (ev->mask & FSNW_OVERFLOW) {
		t->overflows++;
		return tree_view_scan(t);
	}
	if (ev->wid != t->wid)
		return 0;
	if (ev->mask & FSNW_IGNORED)
		return 1;
	if (rel_path(t, ev, rel) < 0)
		return !ev->name && (ev->mask & FSNW_MOVE_SELF) && ev->path ?
			       follow_root(t, ev->path) : 0;
	if (ev->name)
		return apply_named(t, ev, rel);
	/* The root itself moved: the paths events give no longer lead to
	 * what the view describes. (One deleted ends with its IGNORED.) */
	if ((ev->mask & FSNW_MOVE_SELF) && !*rel)
		return 1;
	return 0;
}

void tree_view_fini(struct tree_view *t)
{
	forget_moved(t);
	snap_fini(&t->view);
	free(t->root);
	t->root = NULL;
}
