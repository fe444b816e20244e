/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tool-paths.h"

static int add_exclusion(struct tool_paths *p, const char *path)
{
	size_t len = strlen(path);

	while (len > 1 && path[len - 1] == '/')
		len--;
	if (p->nexcl == p->capexcl) {
		size_t cap = p->capexcl ? 2 * p->capexcl : 16;
		char **v = realloc(p->excl, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->excl = v;
		p->capexcl = cap;
	}
	p->excl[p->nexcl] = strndup(path, len);
	if (!p->excl[p->nexcl])
		return -ENOMEM;
	p->nexcl++;
	return 0;
}

int tool_paths_arg(struct tool_paths *p, const char *arg)
{
	/* inotify-tools skips both, and so does a script that relies on it. */
	if (!arg[0] || !strcmp(arg, "@"))
		return 0;
	if (arg[0] == '@')
		return add_exclusion(p, arg + 1);
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		struct tool_target *v = realloc(p->t, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		p->t = v;
		p->cap = cap;
	}
	memset(&p->t[p->n], 0, sizeof(p->t[p->n]));
	p->t[p->n].path = strdup(arg);
	if (!p->t[p->n].path)
		return -ENOMEM;
	p->n++;
	return 0;
}

int tool_paths_fromfile(struct tool_paths *p, const char *file)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!f) {
		fprintf(stderr, "Couldn't open %s: %s\n", file, strerror(errno));
		return 0;
	}
	while (ret == 0 && (len = getline(&line, &cap, f)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[len - 1] = '\0';
		ret = tool_paths_arg(p, line);
	}
	if (ret < 0)
		fprintf(stderr, "Couldn't read %s: %s\n", file, strerror(-ret));
	free(line);
	if (f != stdin)
		fclose(f);
	return ret;
}

/*
 * The canonical path of the object a target watches: realpath(3), except
 * that with -P a final symbolic link is the object itself.
 */
static char *canonical(const char *path, bool link_itself)
{
	char *dir, *base, *copy1, *copy2, *rdir, *out = NULL;

	if (!link_itself)
		return realpath(path, NULL);
	copy1 = strdup(path);
	copy2 = strdup(path);
	if (!copy1 || !copy2)
		goto out;
	dir = dirname(copy1);
	base = basename(copy2);
	rdir = realpath(dir, NULL);
	if (rdir && asprintf(&out, "%s/%s", strcmp(rdir, "/") ? rdir : "", base) < 0)
		out = NULL;
	free(rdir);
out:
	free(copy1);
	free(copy2);
	return out;
}

static void look_at(struct tool_target *t, bool recursive, bool no_deref)
{
	struct stat st, lst;
	bool have_lst = lstat(t->path, &lst) == 0;
	size_t len = strlen(t->path);

	t->exists = no_deref ? have_lst : stat(t->path, &st) == 0;
	if (!t->exists)
		return;
	if (no_deref)
		st = lst;
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->dir = S_ISDIR(st.st_mode);
	t->tree = recursive && t->dir;
	/* inotifywait adds the slash to what lstat calls a directory, and
	 * with -r to any directory it walks (a link to one too). */
	t->slash = t->path[len - 1] != '/' && (t->tree || (have_lst && S_ISDIR(lst.st_mode)));
	errno = 0;
	t->real = canonical(t->path, no_deref && have_lst && S_ISLNK(lst.st_mode));
}

/* inotifywait watches a path given both plain and with @: it is no exclusion. */
static void drop_targeted_exclusions(struct tool_paths *p)
{
	size_t i = 0;

	while (i < p->nexcl) {
		size_t elen = strlen(p->excl[i]);
		bool targeted = false;

		for (size_t j = 0; j < p->n && !targeted; j++) {
			size_t len = strlen(p->t[j].path);

			while (len > 1 && p->t[j].path[len - 1] == '/')
				len--;
			targeted = len == elen && !memcmp(p->t[j].path, p->excl[i], len);
		}
		if (targeted) {
			free(p->excl[i]);
			p->excl[i] = p->excl[--p->nexcl];
		} else {
			i++;
		}
	}
}

/* By object, then by place in the list: the first of each object leads. */
static int cmp_object(const void *a, const void *b)
{
	const struct tool_target *x = *(struct tool_target *const *)a;
	const struct tool_target *y = *(struct tool_target *const *)b;

	if (x->dev != y->dev)
		return x->dev < y->dev ? -1 : 1;
	if (x->ino != y->ino)
		return x->ino < y->ino ? -1 : 1;
	return (x > y) - (x < y);
}

static int cmp_string(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether one of the proper ancestors of path is among the sorted trees. */
static bool below_tree(char *const *trees, size_t n, const char *path)
{
	char dir[PATH_MAX];
	char *slash, *key = dir;

	if (strlen(path) >= sizeof(dir))
		return false;
	strcpy(dir, path);
	while (strcmp(dir, "/") && (slash = strrchr(dir, '/'))) {
		slash[slash == dir] = '\0';
		if (bsearch(&key, trees, n, sizeof(*trees), cmp_string))
			return true;
	}
	return false;
}

/* Skip a target whose object an earlier one has, and a tree inside another. */
static int mark_covered(struct tool_paths *p)
{
	struct tool_target **v = malloc((p->n ? p->n : 1) * sizeof(*v));
	char **trees = malloc((p->n ? p->n : 1) * sizeof(*trees));
	size_t n = 0, ntrees = 0;

	if (!v || !trees) {
		free(v);
		free(trees);
		return -ENOMEM;
	}
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].exists)
			v[n++] = &p->t[i];
	qsort(v, n, sizeof(*v), cmp_object);
	for (size_t i = 1; i < n; i++)
		v[i]->skip = v[i]->dev == v[i - 1]->dev && v[i]->ino == v[i - 1]->ino;
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].tree && !p->t[i].skip && p->t[i].real)
			trees[ntrees++] = p->t[i].real;
	qsort(trees, ntrees, sizeof(*trees), cmp_string);
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].tree && !p->t[i].skip && p->t[i].real)
			p->t[i].skip = below_tree(trees, ntrees, p->t[i].real);
	free(v);
	free(trees);
	return 0;
}

int tool_paths_resolve(struct tool_paths *p, bool recursive, bool no_deref)
{
	for (size_t i = 0; i < p->n; i++) {
		look_at(&p->t[i], recursive, no_deref);
		if (p->t[i].exists && !p->t[i].real && errno == ENOMEM)
			return -ENOMEM;
	}
	drop_targeted_exclusions(p);
	if (mark_covered(p) < 0)
		return -ENOMEM;
	if (!p->cwd)
		p->cwd = getcwd(NULL, 0);
	return p->cwd ? 0 : -errno;
}

/* The mount root above dir (canonical): the first directory, going up, that is one. */
static char *mount_root_of(const char *dir)
{
	char *d = strdup(dir);

	while (d && strcmp(d, "/")) {
		struct statx stx;
		char *slash;

		if (statx(AT_FDCWD, d, AT_SYMLINK_NOFOLLOW, 0, &stx) == 0 &&
		    (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
		    (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT))
			break;
		slash = strrchr(d, '/');
		assert(slash); /* d is absolute */
		slash[slash == d] = '\0';
	}
	return d;
}

int tool_paths_mount_roots(struct tool_paths *p)
{
	for (size_t i = 0; i < p->n; i++) {
		struct tool_target *t = &p->t[i];
		char *dir;

		if (!t->exists || !t->real)
			return -ENOENT;
		dir = t->dir ? strdup(t->real) : strndup(t->real, (size_t)(strrchr(t->real, '/') -
							       t->real));
		t->root = dir ? mount_root_of(*dir ? dir : "/") : NULL;
		free(dir);
		if (!t->root)
			return -ENOMEM;
		t->skip = false;
		t->tree = true;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(p->t[j].root, t->root))
				t->skip = true;
	}
	return 0;
}

static int cmp_wid(const void *a, const void *b)
{
	const struct tool_target *x = *(struct tool_target *const *)a;
	const struct tool_target *y = *(struct tool_target *const *)b;

	return (x->wid > y->wid) - (x->wid < y->wid);
}

int tool_paths_index(struct tool_paths *p)
{
	free(p->by_wid);
	p->nwid = 0;
	p->by_wid = calloc(p->n ? p->n : 1, sizeof(*p->by_wid));
	if (!p->by_wid)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++)
		if (p->t[i].wid > 0)
			p->by_wid[p->nwid++] = &p->t[i];
	qsort(p->by_wid, p->nwid, sizeof(*p->by_wid), cmp_wid);
	return 0;
}

const struct tool_target *tool_paths_find(const struct tool_paths *p, int wid)
{
	size_t lo = 0, hi = p->nwid;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->by_wid[mid]->wid == wid)
			return p->by_wid[mid];
		if (p->by_wid[mid]->wid < wid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

bool tool_paths_excluded(const struct tool_paths *p, const char *path)
{
	size_t plen = strlen(path);

	while (plen > 1 && path[plen - 1] == '/')
		plen--;
	for (size_t i = 0; i < p->nexcl; i++) {
		size_t len = strlen(p->excl[i]);

		if (plen >= len && !memcmp(path, p->excl[i], len) &&
		    (plen == len || path[len] == '/'))
			return true;
	}
	return false;
}

void tool_paths_free(struct tool_paths *p)
{
	for (size_t i = 0; i < p->n; i++) {
		free(p->t[i].path);
		free(p->t[i].real);
		free(p->t[i].root);
	}
	for (size_t i = 0; i < p->nexcl; i++)
		free(p->excl[i]);
	free(p->t);
	free(p->excl);
	free(p->by_wid);
	free(p->cwd);
	memset(p, 0, sizeof(*p));
}
