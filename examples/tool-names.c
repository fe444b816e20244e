/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "tool-names.h"

/* Append len bytes of s to n's buffer at *at, as far as they fit. */
static void put(struct tool_names *n, size_t *at, const char *s, size_t len)
{
	if (*at + len >= sizeof(n->buf))
		len = *at < sizeof(n->buf) - 1 ? sizeof(n->buf) - 1 - *at : 0;
	memcpy(n->buf + *at, s, len);
	*at += len;
}

/*
 * rel resolved against cwd without touching the filesystem: "." and empty
 * components dropped, ".." taking one off, as the kernel's name for the
 * directory would read.
 */
static size_t join(struct tool_names *n, const char *cwd, const char *rel)
{
	size_t at = 0;

	put(n, &at, cwd, strlen(cwd));
	if (at == 1)
		at = 0; /* "/": components bring their own slash */
	while (*rel) {
		size_t len = strcspn(rel, "/");

		if (len == 2 && !memcmp(rel, "..", 2)) {
			while (at && n->buf[at - 1] != '/')
				at--;
			if (at)
				at--;
		} else if (len && !(len == 1 && rel[0] == '.')) {
			put(n, &at, "/", 1);
			put(n, &at, rel, len);
		}
		rel += len + (rel[len] == '/');
	}
	if (!at)
		put(n, &at, "/", 1);
	return at;
}

/* fsnotifywait's %w: the absolute directory, and a '/' after it (even after "/"). */
static void absolute_dir(struct tool_names *n, const struct tool_paths *p,
			 const struct tool_target *t, const char *path, size_t len)
{
	size_t at = 0;

	if (t && t->real && !strncmp(path, t->path, len) && !t->path[len])
		put(n, &at, t->real, strlen(t->real));
	else if (path[0] == '/' || !p->cwd)
		put(n, &at, path, len);
	else
		at = join(n, p->cwd, path);
	put(n, &at, "/", 1);
	n->buf[at] = '\0';
	n->dir = n->buf;
	n->dirlen = at;
}

static void fanotify_names(const struct tool_paths *p, const struct tool_target *t,
			   const struct fsnw_event *ev, struct tool_names *n)
{
	/* A watched file's own events: its directory and its name. */
	if (!ev->name && t && !t->dir && !t->tree && t->real) {
		const char *slash = strrchr(t->real, '/');

		n->dir = t->real;
		n->dirlen = (size_t)(slash - t->real) + 1;
		n->name = slash + 1;
		return;
	}
	absolute_dir(n, p, t, ev->path, strlen(ev->path));
	n->name = ev->name ? ev->name : "";
}

void tool_names_get(const struct tool_paths *p, bool fanotify, const struct fsnw_event *ev,
		    struct tool_names *n)
{
	const struct tool_target *t = tool_paths_find(p, ev->wid);
	size_t len = ev->path ? strlen(ev->path) : 0;
	bool slash;

	n->name = "";
	n->dir = "";
	n->dirlen = 0;
	if (!len)
		return; /* FSNW_OVERFLOW belongs to no watch */
	if (fanotify) {
		fanotify_names(p, t, ev, n);
		return;
	}
	n->name = ev->name ? ev->name : "";
	/* A tree's paths are all directories; a plain watch's, what lstat said. */
	slash = ev->path[len - 1] != '/' && (!t || t->tree || t->slash);
	if (!slash) {
		n->dir = ev->path;
		n->dirlen = len;
		return;
	}
	len = 0;
	put(n, &len, ev->path, strlen(ev->path));
	put(n, &len, "/", 1);
	n->buf[len] = '\0';
	n->dir = n->buf;
	n->dirlen = len;
}

bool tool_fanotify_copy(struct tool_seen *last, bool all_dirs, const struct fsnw_event *ev,
			const struct tool_names *n)
{
	const uint32_t entry = FSNW_CREATE | FSNW_DELETE | FSNW_MOVE;
	size_t nlen = strlen(n->name);
	size_t len = n->dirlen + 1 + nlen;
	bool copy;

	if (all_dirs && (ev->mask & FSNW_ISDIR) && ev->name && !(ev->mask & entry))
		return true;
	if (len > sizeof(last->key))
		return false;
	copy = last->len == len && last->wid != ev->wid && last->mask == ev->mask &&
	       !memcmp(last->key, n->dir, n->dirlen) && !last->key[n->dirlen] &&
	       !memcmp(last->key + n->dirlen + 1, n->name, nlen);
	memcpy(last->key, n->dir, n->dirlen);
	last->key[n->dirlen] = '\0';
	memcpy(last->key + n->dirlen + 1, n->name, nlen);
	last->len = len;
	last->wid = ev->wid;
	last->mask = ev->mask;
	return copy;
}
