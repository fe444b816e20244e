/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot.h"

/* The entries of a snapshot, in order, as an array (tsearch cannot be
 * changed while it is walked). */
struct list {
	const struct snap_entry **v;
	size_t n, cap;
	bool nomem;
};

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct snap_entry *)a)->path, ((const struct snap_entry *)b)->path);
}

void snap_init(struct snapshot *s)
{
	s->root = NULL;
	s->count = 0;
}

void snap_fini(struct snapshot *s)
{
	tdestroy(s->root, free);
	snap_init(s);
}

static struct snap_entry *entry_new(const char *path, size_t len, char type)
{
	struct snap_entry *e = malloc(sizeof(*e) + len + 1);

	if (!e)
		return NULL;
	e->type = type;
	memcpy(e->path, path, len);
	e->path[len] = '\0';
	return e;
}

/* Insert e, which s then owns; an entry already there keeps its place and takes e's type. */
static int insert(struct snapshot *s, struct snap_entry *e)
{
	struct snap_entry **slot = tsearch(e, &s->root, cmp_entry);

	if (!slot) {
		free(e);
		return -ENOMEM;
	}
	if (*slot != e) {
		(*slot)->type = e->type;
		free(e);
	} else {
		s->count++;
	}
	return 0;
}

char snap_type(const struct snapshot *s, const char *path)
{
	size_t len = strlen(path);
	struct snap_entry *key = malloc(sizeof(*key) + len + 1);
	struct snap_entry **e;

	if (!key)
		return 0;
	memcpy(key->path, path, len + 1);
	e = tfind(key, &s->root, cmp_entry);
	free(key);
	return e ? (*e)->type : 0;
}

int snap_put(struct snapshot *s, const char *path, char type)
{
	struct snap_entry *e = entry_new(path, strlen(path), type);

	return e ? insert(s, e) : -ENOMEM;
}

static void collect(const void *node, VISIT which, void *arg)
{
	struct list *l = arg;

	if (which != postorder && which != leaf)
		return; /* in order: each node once, between its subtrees */
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		const struct snap_entry **v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->nomem = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *(const struct snap_entry *const *)node;
}

static int list_of(const struct snapshot *s, struct list *l)
{
	memset(l, 0, sizeof(*l));
	twalk_r(s->root, collect, l);
	if (!l->nomem)
		return 0;
	free(l->v);
	return -ENOMEM;
}

/* Is path at or below dir ("" is the root, above everything)? */
static bool under(const char *path, const char *dir, bool below_only)
{
	size_t len = strlen(dir);

	if (!len)
		return true;
	if (strncmp(path, dir, len))
		return false;
	return path[len] == '/' || (!below_only && !path[len]);
}

int snap_extract(struct snapshot *s, const char *path, bool below_only, struct snapshot *out)
{
	struct list l;
	int ret = list_of(s, &l);

	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		struct snap_entry *e = (struct snap_entry *)l.v[i];

		if (!under(e->path, path, below_only))
			continue;
		tdelete(e, &s->root, cmp_entry);
		s->count--;
		if (out)
			ret = insert(out, e);
		else
			free(e);
	}
	free(l.v);
	return ret;
}

int snap_move(struct snapshot *to, struct snapshot *from, const char *old, const char *new)
{
	size_t olen = strlen(old), nlen = strlen(new);
	bool same = !strcmp(old, new);
	struct list l;
	int ret = list_of(from, &l);

	for (size_t i = 0; ret == 0 && i < l.n; i++) {
		struct snap_entry *e = (struct snap_entry *)l.v[i], *n = e;
		size_t rest = strlen(e->path) - olen;

		if (strncmp(e->path, old, olen))
			continue; /* not under old: left in from */
		if (!same) {
			n = malloc(sizeof(*n) + nlen + rest + 1);
			if (!n) {
				ret = -ENOMEM;
				break;
			}
			n->type = e->type;
			memcpy(n->path, new, nlen);
			memcpy(n->path + nlen, e->path + olen, rest + 1);
		}
		tdelete(e, &from->root, cmp_entry);
		from->count--;
		if (n != e)
			free(e);
		ret = insert(to, n);
	}
	free(l.v);
	return ret;
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

static char dtype_of(int rootfd, const char *path, unsigned char dt)
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
		return snap_type_at(rootfd, path);
	}
}

/*
 * Each directory is read whole and closed before its subdirectories are
 * entered, so a deep tree costs one fd at a time. What vanishes meanwhile
 * is skipped: the events about it are on their way.
 */
int snap_walk(struct snapshot *s, int rootfd, const char *path)
{
	int fd = openat(rootfd, *path ? path : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
							   O_CLOEXEC);
	struct snapshot mine;
	struct list l;
	struct dirent *d;
	DIR *dir;
	int ret = 0;

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ? 0 : -errno;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	snap_init(&mine);
	while (ret == 0 && (errno = 0, d = readdir(dir)) != NULL) {
		size_t plen = strlen(path), nlen = strlen(d->d_name);
		struct snap_entry *e;

		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		e = malloc(sizeof(*e) + plen + 1 + nlen + 1);
		if (!e) {
			ret = -ENOMEM;
			break;
		}
		memcpy(e->path, path, plen);
		e->path[plen] = '/';
		memcpy(e->path + (plen ? plen + 1 : 0), d->d_name, nlen + 1);
		e->type = dtype_of(rootfd, e->path, d->d_type);
		ret = insert(&mine, e);
	}
	if (ret == 0 && errno && errno != ENOENT)
		ret = -errno;
	closedir(dir);
	if (ret == 0 && (ret = list_of(&mine, &l)) == 0) {
		for (size_t i = 0; ret == 0 && i < l.n; i++)
			if (l.v[i]->type == 'd')
				ret = snap_walk(s, rootfd, l.v[i]->path);
		free(l.v);
	}
	if (ret == 0)
		ret = snap_move(s, &mine, "", "");
	snap_fini(&mine);
	return ret;
}

int snap_diff(const struct snapshot *old, const struct snapshot *new, snap_diff_fn *fn, void *arg)
{
	const struct snap_entry **gone, **born;
	size_t i = 0, j = 0, ngone = 0, nborn = 0;
	struct list a, b;
	int ret = -ENOMEM;

	if (list_of(old, &a) < 0)
		return -ENOMEM;
	if (list_of(new, &b) < 0) {
		free(a.v);
		return -ENOMEM;
	}
	gone = malloc((a.n + 1) * sizeof(*gone));
	born = malloc((b.n + 1) * sizeof(*born));
	if (!gone || !born)
		goto out;
	/* A merge of two sorted lists; a change of type is both. */
	while (i < a.n || j < b.n) {
		int c = i == a.n ? 1 : j == b.n ? -1 : strcmp(a.v[i]->path, b.v[j]->path);

		if (c == 0 && a.v[i]->type == b.v[j]->type) {
			i++, j++;
			continue;
		}
		if (c <= 0)
			gone[ngone++] = a.v[i++];
		if (c >= 0)
			born[nborn++] = b.v[j++];
	}
	/* A child sorts after its parent: deletions from the end. */
	while (ngone)
		fn(arg, gone[--ngone], false);
	for (i = 0; i < nborn; i++)
		fn(arg, born[i], true);
	ret = 0;
out:
	free(gone);
	free(born);
	free(a.v);
	free(b.v);
	return ret;
}

void snap_dump(const struct snapshot *s, FILE *f)
{
	struct list l;

	if (list_of(s, &l) < 0) {
		fprintf(f, "# out of memory\n");
		return;
	}
	for (size_t i = 0; i < l.n; i++)
		fprintf(f, "%c\t%s\n", l.v[i]->type, l.v[i]->path);
	free(l.v);
}
