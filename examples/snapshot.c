/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <search.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot.h"

static int cmp_node(const void *a, const void *b)
{
	/* A node and a search key both start with the name pointer. */
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void snap_init(struct snapshot *s)
{
	s->top.entries = NULL;
	s->top.count = 0;
}

static void free_entry(void *n)
{
	snap_node_free(n);
}

void snap_node_free(struct snap_node *n)
{
	if (!n)
		return;
	tdestroy(n->below.entries, free_entry);
	free(n);
}

void snap_fini(struct snapshot *s)
{
	tdestroy(s->top.entries, free_entry);
	snap_init(s);
}

size_t snap_count(const struct snapshot *s)
{
	return s->top.count;
}

/* How many entries n stands for: itself, unless a placeholder, and all below it. */
static size_t weight(const struct snap_node *n)
{
	return n->below.count + (n->type != 0);
}

static struct snap_node *entry(const struct snap_dir *d, const char *name)
{
	struct snap_node *const *slot = tfind(&name, &d->entries, cmp_node);

	return slot ? *slot : NULL;
}

/* Add a new entry to d (which must not hold name); d's count is the caller's. */
static struct snap_node *insert(struct snap_dir *d, const char *name, size_t len, char type)
{
	struct snap_node *n = malloc(sizeof(*n) + len + 1);

	if (!n)
		return NULL;
	memcpy(n->buf, name, len);
	n->buf[len] = '\0';
	n->name = n->buf;
	n->below.entries = NULL;
	n->below.count = 0;
	n->type = type;
	if (!tsearch(n, &d->entries, cmp_node)) {
		free(n);
		return NULL;
	}
	return n;
}

/* The length of the next part of *p, which skips the slashes before it; 0 at the end. */
static size_t next_part(const char **p)
{
	while (**p == '/')
		(*p)++;
	return strcspn(*p, "/");
}

/*
 * The directory that holds the last part of path, which is copied to name.
 * With create, placeholders stand in for the directories s lacks. NULL, with
 * *err set, when path has no part or one too long; NULL with *err 0 when s
 * lacks a directory (without create).
 */
static struct snap_dir *parent_of(struct snap_dir *top, const char *path, bool create,
				  char name[NAME_MAX + 1], int *err)
{
	struct snap_dir *d = top;
	size_t len = next_part(&path);

	*err = len ? 0 : -EINVAL;
	while (len) {
		struct snap_node *n;
		size_t next;

		if (len > NAME_MAX) {
			*err = -ENAMETOOLONG;
			return NULL;
		}
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		next = next_part(&path);
		if (!next)
			return d;
		n = entry(d, name);
		if (!n && create && !(n = insert(d, name, len, 0)))
			*err = -ENOMEM;
		if (!n)
			return NULL;
		d = &n->below;
		len = next;
	}
	return NULL;
}

/*
 * Add delta to the count of every directory that holds a part of path (the
 * last part's own is the caller's), and drop a placeholder left empty, with
 * the placeholders below it, which can then only be empty too.
 */
static void adjust(struct snap_dir *top, const char *path, ptrdiff_t delta)
{
	struct snap_dir *d = top;
	char name[NAME_MAX + 1];
	size_t len = next_part(&path);

	while (len && len <= NAME_MAX) {
		struct snap_node *n;
		size_t next;

		d->count += (size_t)delta; /* wraps to a decrease for delta < 0 */
		memcpy(name, path, len);
		name[len] = '\0';
		path += len;
		next = next_part(&path);
		n = next ? entry(d, name) : NULL;
		if (!n)
			return;
		if (!n->type && n->below.count + (size_t)delta == 0) {
			tdelete(n, &d->entries, cmp_node);
			snap_node_free(n);
			return;
		}
		d = &n->below;
		len = next;
	}
}

static struct snap_node *find(const struct snapshot *s, const char *path)
{
	char name[NAME_MAX + 1];
	int err;
	struct snap_dir *d = parent_of((struct snap_dir *)&s->top, path, false, name, &err);

	return d ? entry(d, name) : NULL;
}

char snap_type(const struct snapshot *s, const char *path)
{
	const struct snap_node *n = find(s, path);

	return n ? n->type : 0;
}

int snap_put(struct snapshot *s, const char *path, char type)
{
	char name[NAME_MAX + 1];
	struct snap_node *n;
	ptrdiff_t delta;
	int err;
	struct snap_dir *d = parent_of(&s->top, path, true, name, &err);

	if (!d) {
		adjust(&s->top, path, 0); /* placeholders made for nothing */
		return err;
	}
	n = entry(d, name);
	if (n) {
		delta = (type != 0) - (n->type != 0);
		n->type = type;
	} else {
		n = insert(d, name, strlen(name), type);
		delta = n ? 1 : 0;
	}
	adjust(&s->top, path, delta);
	return n ? 0 : -ENOMEM;
}

int snap_detach(struct snapshot *s, const char *path, struct snap_node **out)
{
	char name[NAME_MAX + 1];
	struct snap_node *n;
	int err;
	struct snap_dir *d = parent_of(&s->top, path, false, name, &err);

	*out = NULL;
	n = d ? entry(d, name) : NULL;
	if (!n)
		return err;
	tdelete(n, &d->entries, cmp_node);
	adjust(&s->top, path, -(ptrdiff_t)weight(n));
	*out = n;
	return 0;
}

int snap_remove(struct snapshot *s, const char *path)
{
	struct snap_node *n;
	int ret = snap_detach(s, path, &n);

	snap_node_free(n);
	return ret;
}

/* n under the name name: n itself, or a copy that took over what n held. */
static struct snap_node *renamed(struct snap_node *n, const char *name)
{
	size_t len = strlen(name);
	struct snap_node *r;

	if (!strcmp(n->name, name))
		return n;
	r = malloc(sizeof(*r) + len + 1);
	if (!r) {
		snap_node_free(n);
		return NULL;
	}
	memcpy(r->buf, name, len + 1);
	r->name = r->buf;
	r->below = n->below;
	r->type = n->type;
	free(n);
	return r;
}

int snap_attach(struct snapshot *s, const char *path, struct snap_node *n)
{
	char name[NAME_MAX + 1];
	struct snap_node **slot;
	ptrdiff_t delta;
	int err;
	struct snap_dir *d = parent_of(&s->top, path, true, name, &err);

	if (d)
		n = renamed(n, name);
	else
		snap_node_free(n);
	if (!d || !n) {
		adjust(&s->top, path, 0);
		return d ? -ENOMEM : err;
	}
	delta = (ptrdiff_t)weight(n);
	slot = tsearch(n, &d->entries, cmp_node);
	if (!slot) {
		snap_node_free(n);
		adjust(&s->top, path, 0);
		return -ENOMEM;
	}
	if (*slot != n) {
		/* A rename over an entry replaces it, and what it held. Same
		 * name, same place in the tree: the slot can take n. */
		delta -= (ptrdiff_t)weight(*slot);
		snap_node_free(*slot);
		*slot = n;
	}
	adjust(&s->top, path, delta);
	return 0;
}

static char type_of(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFDIR:
		return 'd';
	case S_IFLNK:
		return 'l';
	case S_IFIFO:
		return 'p';
	case S_IFSOCK:
		return 's';
	case S_IFCHR:
		return 'c';
	case S_IFBLK:
		return 'b';
	default:
		return 'f';
	}
}

char snap_type_at(int dirfd, const char *path)
{
	struct stat st;

	if (fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 'f';
	return type_of(st.st_mode);
}

static char dtype_of(unsigned char dt)
{
	switch (dt) {
	case DT_DIR:
		return 'd';
	case DT_REG:
		return 'f';
	case DT_LNK:
		return 'l';
	case DT_FIFO:
		return 'p';
	case DT_SOCK:
		return 's';
	case DT_CHR:
		return 'c';
	case DT_BLK:
		return 'b';
	default:
		return 0;
	}
}

/* Append "/name" (or "name" to an empty path) to the path in buf; its new length, 0 if too long. */
static size_t path_push(char *buf, size_t len, const char *name)
{
	size_t nlen = strlen(name), slash = len ? 1 : 0;

	if (len + slash + nlen >= PATH_MAX)
		return 0;
	buf[len] = '/';
	memcpy(buf + len + slash, name, nlen + 1);
	return len + slash + nlen;
}

struct nodes {
	struct snap_node **v;
	size_t n, cap;
};

static int nodes_push(struct nodes *l, struct snap_node *n)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		struct snap_node **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = n;
	return 0;
}

/*
 * Read the directory at buf (len bytes, relative to rootfd) into d, then its
 * subdirectories. Each directory is read whole and closed before its
 * subdirectories are entered, so a deep tree costs one fd at a time. What
 * vanishes meanwhile is skipped: the events about it are on their way.
 */
static int walk_dir(struct snap_dir *d, int rootfd, char *buf, size_t len)
{
	int fd = openat(rootfd, len ? buf : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct nodes subdirs = { 0 };
	struct dirent *de;
	DIR *dir;
	int ret = 0;

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while (ret == 0 && (errno = 0, de = readdir(dir)) != NULL) {
		char type = dtype_of(de->d_type);
		struct snap_node *n;
		size_t sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = path_push(buf, len, de->d_name);
		if (!sub) {
			ret = -ENAMETOOLONG;
			break;
		}
		if (!type)
			type = snap_type_at(rootfd, buf);
		buf[len] = '\0';
		/* A view tells directories from the rest, as FSNW_ISDIR does. */
		if (type != 'd')
			type = 'f';
		n = insert(d, de->d_name, strlen(de->d_name), type);
		if (!n) {
			ret = -ENOMEM;
			break;
		}
		d->count++;
		if (type == 'd')
			ret = nodes_push(&subdirs, n);
	}
	if (ret == 0 && errno && errno != ENOENT)
		ret = -errno;
	closedir(dir);
	for (size_t i = 0; ret == 0 && i < subdirs.n; i++) {
		struct snap_node *n = subdirs.v[i];
		size_t sub = path_push(buf, len, n->name); /* fits: it did above */

		ret = sub ? walk_dir(&n->below, rootfd, buf, sub) : -ENAMETOOLONG;
		buf[len] = '\0';
		d->count += n->below.count;
	}
	free(subdirs.v);
	return ret;
}

int snap_walk(struct snapshot *s, int rootfd, const char *path)
{
	char buf[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	return walk_dir(&s->top, rootfd, buf, len);
}

static void collect(const void *node, VISIT which, void *arg)
{
	struct nodes *l = arg;

	/* In order: each node once, between its subtrees. */
	if ((which == postorder || which == leaf) &&
	    nodes_push(l, *(struct snap_node *const *)node) < 0)
		l->cap = SIZE_MAX; /* remembered: out of memory */
}

/* The entries of d in order of their names. */
static int entries_of(const struct snap_dir *d, struct nodes *l)
{
	memset(l, 0, sizeof(*l));
	twalk_r(d->entries, collect, l);
	if (l->cap != SIZE_MAX)
		return 0;
	free(l->v);
	return -ENOMEM;
}

struct diff {
	snap_diff_fn *fn;
	void *arg;
	bool born;          /* this pass reports creations, or else deletions */
	char path[PATH_MAX];
};

/* Report n and all below it at path (len bytes): parents first when born, else last. */
static int report_all(struct diff *c, const struct snap_node *n, size_t len)
{
	struct nodes l;
	int ret;

	if (c->born && n->type)
		c->fn(c->arg, c->path, n->type, true);
	ret = entries_of(&n->below, &l);
	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		size_t sub = path_push(c->path, len, l.v[i]->name);

		/* A name too long for a path cannot be reported, nor be below it. */
		if (sub)
			ret = report_all(c, l.v[i], sub);
		c->path[len] = '\0';
	}
	free(l.v);
	if (!c->born && n->type)
		c->fn(c->arg, c->path, n->type, false);
	return ret;
}

/* One pass of the comparison of old and new, the directory at c->path (len bytes). */
static int diff_dir(struct diff *c, const struct snap_dir *old, const struct snap_dir *new,
		    size_t len)
{
	struct nodes a, b;
	size_t i = 0, j = 0;
	int ret = entries_of(old, &a);

	if (ret == 0 && (ret = entries_of(new, &b)) < 0)
		free(a.v);
	if (ret < 0)
		return ret;
	/* A merge of two sorted lists. */
	while (ret == 0 && (i < a.n || j < b.n)) {
		int cmp = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i]->name, b.v[j]->name);
		struct snap_node *x = cmp <= 0 ? a.v[i++] : NULL, *y = cmp >= 0 ? b.v[j++] : NULL;
		size_t sub = path_push(c->path, len, (x ? x : y)->name);

		if (!sub)
			continue;
		if (x && y && (x->type == y->type || !x->type)) {
			/* The same entry, or one the view only had a placeholder for. */
			if (c->born && x->type != y->type)
				c->fn(c->arg, c->path, y->type, true);
			ret = diff_dir(c, &x->below, &y->below, sub);
		} else if (c->born ? y != NULL : x != NULL) {
			ret = report_all(c, c->born ? y : x, sub);
		}
		c->path[len] = '\0';
	}
	free(a.v);
	free(b.v);
	return ret;
}

static const struct snap_dir *dir_at(const struct snapshot *s, const char *path)
{
	static const struct snap_dir none;
	const struct snap_node *n;

	if (!next_part(&path))
		return &s->top;
	n = find(s, path);
	return n ? &n->below : &none;
}

int snap_diff_below(const struct snapshot *s, const char *dir, const struct snapshot *fresh,
		    snap_diff_fn *fn, void *arg)
{
	const struct snap_dir *old = dir_at(s, dir);
	struct diff *c = malloc(sizeof(*c));
	size_t len = strlen(dir);
	int ret = -ENOMEM;

	if (len >= sizeof(c->path))
		ret = -ENAMETOOLONG;
	else if (c) {
		c->fn = fn;
		c->arg = arg;
		memcpy(c->path, dir, len + 1);
		/* Two passes: every deletion before any creation. */
		c->born = false;
		ret = diff_dir(c, old, &fresh->top, len);
		c->born = true;
		if (ret == 0)
			ret = diff_dir(c, old, &fresh->top, len);
	}
	free(c);
	return ret;
}

int snap_replace_below(struct snapshot *s, const char *dir, struct snapshot *fresh)
{
	const char *p = dir;
	struct snap_node *n;
	size_t old;
	int ret;

	if (!next_part(&p)) {
		snap_fini(s);
		s->top = fresh->top;
		snap_init(fresh);
		return 0;
	}
	n = find(s, dir);
	if (!n) {
		ret = snap_put(s, dir, 'd');
		if (ret < 0)
			return ret;
		n = find(s, dir);
	}
	old = n->below.count;
	tdestroy(n->below.entries, free_entry);
	n->below = fresh->top;
	snap_init(fresh);
	adjust(&s->top, dir, (ptrdiff_t)n->below.count - (ptrdiff_t)old);
	return 0;
}

struct lines {
	char **v;
	size_t n, cap;
	char path[PATH_MAX];
};

/* Gather "TYPE<TAB>PATH" for each entry of d and below; path is c->path (len bytes). */
static int gather(struct lines *c, const struct snap_dir *d, size_t len)
{
	struct nodes l;
	int ret = entries_of(d, &l);

	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		const struct snap_node *n = l.v[i];
		size_t sub = path_push(c->path, len, n->name);

		if (sub && n->type) {
			if (c->n == c->cap) {
				size_t cap = c->cap ? 2 * c->cap : 256;
				char **v = realloc(c->v, cap * sizeof(*v));

				if (!v) {
					ret = -ENOMEM;
					break;
				}
				c->v = v;
				c->cap = cap;
			}
			if (asprintf(&c->v[c->n], "%c\t%s", n->type, c->path) < 0)
				ret = -ENOMEM;
			else
				c->n++;
		}
		if (sub && ret == 0)
			ret = gather(c, &n->below, sub);
		c->path[len] = '\0';
	}
	free(l.v);
	return ret;
}

static int cmp_line(const void *a, const void *b)
{
	/* Past "T\t": by path. */
	return strcmp(*(char *const *)a + 2, *(char *const *)b + 2);
}

void snap_dump(const struct snapshot *s, FILE *f)
{
	struct lines *c = calloc(1, sizeof(*c));

	bool ok = c && gather(c, &s->top, 0) == 0;

	/* The view is a tree, the dump is find's order: sort once, here. */
	if (ok)
		qsort(c->v, c->n, sizeof(*c->v), cmp_line);
	else
		fprintf(f, "# out of memory\n");
	for (size_t i = 0; c && i < c->n; i++) {
		if (ok)
			fprintf(f, "%s\n", c->v[i]);
		free(c->v[i]);
	}
	if (c)
		free(c->v);
	free(c);
}
