/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsops.h"

/* ---- the log ---- */

static int log_line(struct oplog *l, const char *fmt, ...)
{
	char buf[2 * PATH_MAX + 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 256;
		char **v = realloc(l->line, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->line = v;
		l->cap = cap;
	}
	l->line[l->n] = strdup(buf);
	if (!l->line[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

void oplog_print(const struct oplog *l, FILE *f, size_t from)
{
	for (size_t i = from; i < l->n; i++)
		fprintf(f, "%s\n", l->line[i]);
}

void oplog_clear(struct oplog *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->line[i]);
	free(l->line);
	l->line = NULL;
	l->n = l->cap = 0;
}

/* ---- the model ---- */

static bool below(const char *p, const char *dir)
{
	size_t n = strlen(dir);

	return !strncmp(p, dir, n) && (p[n] == '/' || !p[n]);
}

static int model_add(struct fsmodel *m, const char *path, bool dir)
{
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 1024;
		struct entry *e = realloc(m->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		m->e = e;
		m->cap = cap;
	}
	m->e[m->n].path = strdup(path);
	if (!m->e[m->n].path)
		return -ENOMEM;
	m->e[m->n].dir = dir;
	m->n++;
	return 0;
}

static void model_remove_under(struct fsmodel *m, const char *path)
{
	size_t k = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (below(m->e[i].path, path))
			free(m->e[i].path);
		else
			m->e[k++] = m->e[i];
	}
	m->n = k;
}

static int model_rename(struct fsmodel *m, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);

	model_remove_under(m, to); /* what the rename replaced */
	for (size_t i = 0; i < m->n; i++) {
		char *p = m->e[i].path, *np;

		if (!below(p, from))
			continue;
		np = malloc(tl + strlen(p) - fl + 1);
		if (!np)
			return -ENOMEM;
		memcpy(np, to, tl);
		strcpy(np + tl, p + fl);
		free(p);
		m->e[i].path = np;
	}
	return 0;
}

static struct entry *model_find(struct fsmodel *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->e[i].path, path))
			return &m->e[i];
	return NULL;
}

static bool is_area(const char *p)
{
	return !strchr(p, '/');
}

static bool is_dir(struct fsmodel *m, const char *p)
{
	struct entry *e;

	if (is_area(p))
		return true;
	e = model_find(m, p);
	return e && e->dir;
}

static bool has_children(struct fsmodel *m, const char *p)
{
	size_t n = strlen(p);

	for (size_t i = 0; i < m->n; i++)
		if (!strncmp(m->e[i].path, p, n) && m->e[i].path[n] == '/')
			return true;
	return false;
}

int fsmodel_init(struct fsmodel *m, int rootfd, unsigned trees, bool mounts)
{
	char name[16];

	memset(m, 0, sizeof(*m));
	m->rootfd = rootfd;
	m->trees = trees;
	m->mounts = mounts;
	for (unsigned i = 0; i < trees; i++) {
		snprintf(name, sizeof(name), "W%u", i);
		if (mkdirat(rootfd, name, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	if (mkdirat(rootfd, "O", 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

void fsmodel_fini(struct fsmodel *m)
{
	fsmodel_unmount_all(m);
	for (size_t i = 0; i < m->n; i++)
		free(m->e[i].path);
	free(m->e);
	free(m->mounted);
	oplog_clear(&m->log);
	memset(m, 0, sizeof(*m));
}

/* ---- primitive operations: one syscall or so each, logged, modelled ---- */

static int rmrf_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return (flag == FTW_DP ? rmdir(p) : unlink(p)) < 0 && errno != ENOENT ? -1 : 0;
}

/* Run one line's system calls. Returns 0 or -errno. */
static int do_line(struct fsmodel *m, const char *op, const char *a, const char *b)
{
	char abs[PATH_MAX + 32];
	int fd;

	if (!strcmp(op, "mkdir"))
		return mkdirat(m->rootfd, a, 0755) < 0 ? -errno : 0;
	if (!strcmp(op, "create") || !strcmp(op, "append")) {
		fd = openat(m->rootfd, a, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW |
			    (op[0] == 'c' ? O_CREAT : 0), 0644);
		if (fd < 0)
			return -errno;
		if (write(fd, "x", 1) < 0) {
			close(fd);
			return -errno;
		}
		close(fd);
		return 0;
	}
	if (!strcmp(op, "unlink"))
		return unlinkat(m->rootfd, a, 0) < 0 ? -errno : 0;
	if (!strcmp(op, "rmdir"))
		return unlinkat(m->rootfd, a, AT_REMOVEDIR) < 0 ? -errno : 0;
	if (!strcmp(op, "mv"))
		return renameat(m->rootfd, a, m->rootfd, b) < 0 ? -errno : 0;
	if (!strcmp(op, "link"))
		return linkat(m->rootfd, a, m->rootfd, b, 0) < 0 ? -errno : 0;
	if (!strcmp(op, "rmrf") || !strcmp(op, "mount") || !strcmp(op, "umount")) {
		char cwd[PATH_MAX];

		snprintf(abs, sizeof(abs), "/proc/self/fd/%d", m->rootfd);
		ssize_t n = readlink(abs, cwd, sizeof(cwd) - 1);

		if (n < 0)
			return -errno;
		cwd[n] = '\0';
		snprintf(abs, sizeof(abs), "%s/%s", cwd, a);
		if (op[0] == 'r')
			return nftw(abs, rmrf_cb, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
		if (op[0] == 'm')
			return mount("torture", abs, "tmpfs", 0, "size=8m") < 0 ? -errno : 0;
		return umount2(abs, MNT_DETACH) < 0 ? -errno : 0;
	}
	return -EINVAL;
}

static int model_line(struct fsmodel *m, const char *op, const char *a, const char *b)
{
	if (!strcmp(op, "mkdir"))
		return model_add(m, a, true);
	if (!strcmp(op, "create"))
		return model_find(m, a) ? 0 : model_add(m, a, false);
	if (!strcmp(op, "link"))
		return model_add(m, b, false);
	if (!strcmp(op, "unlink") || !strcmp(op, "rmdir") || !strcmp(op, "rmrf")) {
		model_remove_under(m, a);
		return 0;
	}
	if (!strcmp(op, "mv"))
		return model_rename(m, a, b);
	if (!strcmp(op, "mount") || !strcmp(op, "umount")) {
		/* What the mount hides (or the unmount shows again) is empty. */
		size_t n = strlen(a), k = 0;

		for (size_t i = 0; i < m->n; i++) {
			if (!strncmp(m->e[i].path, a, n) && m->e[i].path[n] == '/')
				free(m->e[i].path);
			else
				m->e[k++] = m->e[i];
		}
		m->n = k;
	}
	return 0;
}

/* Apply and log one line; a failure the model did not foresee is an error. */
static int line(struct fsmodel *m, const char *op, const char *a, const char *b)
{
	int ret = do_line(m, op, a, b);

	/* Across a mount made inside a tree: not an operation this can make. */
	if (ret == -EXDEV || ret == -EBUSY)
		return 0;
	if (ret < 0) {
		fprintf(stderr, "torture: %s %s%s%s: %s\n", op, a, b ? " " : "", b ? b : "",
			strerror(-ret));
		return ret;
	}
	ret = b ? log_line(&m->log, "%s\t%s\t%s", op, a, b) : log_line(&m->log, "%s\t%s", op, a);
	return ret < 0 ? ret : model_line(m, op, a, b);
}

int fsmodel_apply_line(struct fsmodel *m, const char *l)
{
	char op[16], a[PATH_MAX], b[PATH_MAX];
	const char *t1 = strchr(l, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
	int n = t2 ? 3 : t1 ? 2 : 1;

	if (n < 2 || (size_t)(t1 - l) >= sizeof(op))
		return -EINVAL;
	snprintf(op, sizeof(op), "%.*s", (int)(t1 - l), l);
	snprintf(a, sizeof(a), "%.*s", (int)((t2 ? t2 : t1 + strlen(t1)) - t1 - 1), t1 + 1);
	if (t2)
		snprintf(b, sizeof(b), "%s", t2 + 1);
	if (do_line(m, op, a, n == 3 ? b : NULL) < 0) {
		m->failed++;
		return 0;
	}
	if (!strcmp(op, "mount")) {
		char **v = realloc(m->mounted, (m->nmounted + 1) * sizeof(*v));

		if (v) {
			m->mounted = v;
			v[m->nmounted++] = strdup(a);
		}
	}
	log_line(&m->log, "%s", l);
	return model_line(m, op, a, n == 3 ? b : NULL);
}

void fsmodel_unmount_all(struct fsmodel *m)
{
	while (m->nmounted) {
		char *p = m->mounted[--m->nmounted];

		if (p) {
			(void)do_line(m, "umount", p, NULL);
			free(p);
		}
	}
}

/* ---- choosing ---- */

/* A new name below dir ("" for the scratch root: never). */
static void new_name(struct fsmodel *m, struct rng *r, const char *dir, char *buf)
{
	static const char *const stems[] = { "d", "f", "sub", "x y", "inc", "new", "t" };

	snprintf(buf, PATH_MAX, "%s/%s%llu", dir, stems[rng_below(r, 7)],
		 (unsigned long long)++m->serial);
}

static const char *area(struct fsmodel *m, struct rng *r, bool outside)
{
	static char name[16];

	if (outside)
		return "O";
	snprintf(name, sizeof(name), "W%u", (unsigned)rng_below(r, m->trees));
	return name;
}

/*
 * A random entry (dirs: directories only, or files only) in a tree
 * (outside: in O). NULL when there is none. Mount points and what is
 * above them are never moved or removed wholesale (want_movable).
 */
static const char *pick(struct fsmodel *m, struct rng *r, int dirs, bool outside,
			bool want_movable)
{
	size_t start = rng_below(r, m->n ? m->n : 1);

	for (size_t k = 0; k < m->n; k++) {
		struct entry *e = &m->e[(start + k) % m->n];
		bool in_o = e->path[0] == 'O';

		if (in_o != outside || (dirs >= 0 && e->dir != (dirs == 1)))
			continue;
		if (want_movable) {
			bool hold = false;

			for (size_t i = 0; i < m->nmounted && !hold; i++)
				hold = m->mounted[i] && below(m->mounted[i], e->path);
			if (hold)
				continue;
		}
		return e->path;
	}
	return NULL;
}

/* A random directory in a tree (or O), its area's own included. */
static const char *pick_dir(struct fsmodel *m, struct rng *r, bool outside)
{
	const char *d = rng_below(r, 4) ? pick(m, r, 1, outside, false) : NULL;

	return d ? d : area(m, r, outside);
}

/* A small tree of k entries made below dir (which exists). */
static int fill(struct fsmodel *m, struct rng *r, const char *dir, size_t k)
{
	char (*dirs)[PATH_MAX] = malloc(8 * PATH_MAX);
	size_t nd = 1;
	int ret = 0;

	if (!dirs)
		return -ENOMEM;
	snprintf(dirs[0], PATH_MAX, "%s", dir);
	for (size_t i = 0; i < k && ret == 0; i++) {
		char p[PATH_MAX];
		const char *parent = dirs[rng_below(r, nd)];
		bool d = rng_below(r, 3) == 0;

		new_name(m, r, parent, p);
		ret = line(m, d ? "mkdir" : "create", p, NULL);
		if (d && nd < 8)
			snprintf(dirs[nd++], PATH_MAX, "%s", p);
	}
	free(dirs);
	return ret;
}

int fsmodel_populate(struct fsmodel *m, struct rng *r, size_t entries)
{
	size_t per = entries / (m->trees + 1) + 1;
	int ret = 0;

	for (unsigned t = 0; t <= m->trees && ret == 0; t++) {
		char top[16];
		size_t made = 0;

		if (t == m->trees)
			snprintf(top, sizeof(top), "O");
		else
			snprintf(top, sizeof(top), "W%u", t);
		while (made < per && ret == 0) {
			const char *d = rng_below(r, 5) ? pick(m, r, 1, t == m->trees, false) : NULL;
			char base[PATH_MAX];
			size_t k = 1 + rng_below(r, 24);

			snprintf(base, sizeof(base), "%s", d && d[0] == top[0] &&
				 !strncmp(d, top, strlen(top)) ? d : top);
			ret = fill(m, r, base, k);
			made += k;
		}
	}
	oplog_clear(&m->log); /* the start is made again from the seed, not replayed */
	return ret;
}

/* ---- the random operations ---- */

static int op_rename_dir(struct fsmodel *m, struct rng *r, bool from_out, bool to_out)
{
	const char *src = pick(m, r, 1, from_out, true), *dst;
	char a[PATH_MAX], b[PATH_MAX];

	if (!src)
		return 0;
	snprintf(a, sizeof(a), "%s", src);
	for (int tries = 0; tries < 8; tries++) {
		dst = pick_dir(m, r, to_out);
		if (!below(dst, a))
			break;
		dst = NULL;
	}
	if (!dst)
		return 0;
	new_name(m, r, dst, b);
	return line(m, "mv", a, b);
}

static int op_rename_file(struct fsmodel *m, struct rng *r, bool from_out, bool to_out)
{
	const char *src = pick(m, r, 0, from_out, true), *over;
	char a[PATH_MAX], b[PATH_MAX];

	if (!src)
		return 0;
	snprintf(a, sizeof(a), "%s", src);
	over = rng_below(r, 4) == 0 ? pick(m, r, 0, to_out, true) : NULL;
	if (over && strcmp(over, a))
		snprintf(b, sizeof(b), "%s", over); /* replaces a file */
	else
		new_name(m, r, pick_dir(m, r, to_out), b);
	return line(m, "mv", a, b);
}

/* Is p at or below a mount made inside a tree? */
static bool under_mount(const struct fsmodel *m, const char *p)
{
	for (size_t i = 0; i < m->nmounted; i++)
		if (m->mounted[i] && below(p, m->mounted[i]))
			return true;
	return false;
}

/* Three renames through a spare name: a and b change places. None of the
 * three may be on a mount of its own: a rename across it fails (EXDEV, let
 * pass by line()), and the renames after it would then not be a swap. */
static int op_swap(struct fsmodel *m, struct rng *r, int dirs)
{
	const char *x = pick(m, r, dirs, false, true), *y;
	char a[PATH_MAX], b[PATH_MAX], t[PATH_MAX];
	int ret;

	if (!x)
		return 0;
	snprintf(a, sizeof(a), "%s", x);
	y = pick(m, r, dirs, false, true);
	if (!y || !strcmp(y, a) || below(y, a) || below(a, y))
		return 0;
	snprintf(b, sizeof(b), "%s", y);
	new_name(m, r, pick_dir(m, r, false), t);
	if (below(t, a) || below(t, b) || under_mount(m, a) || under_mount(m, b) ||
	    under_mount(m, t))
		return 0;
	ret = line(m, "mv", a, t);
	if (ret == 0)
		ret = line(m, "mv", b, a);
	return ret ? ret : line(m, "mv", t, b);
}

/* mkdir d; fill it; move it: in from outside, or renamed inside. */
static int op_fill_then_move(struct fsmodel *m, struct rng *r, bool outside)
{
	char d[PATH_MAX], to[PATH_MAX];
	int ret;

	new_name(m, r, pick_dir(m, r, outside), d);
	ret = line(m, "mkdir", d, NULL);
	if (ret == 0)
		ret = fill(m, r, d, 1 + rng_below(r, rng_below(r, 8) ? 12 : 300));
	if (ret)
		return ret;
	new_name(m, r, pick_dir(m, r, false), to);
	return below(to, d) ? 0 : line(m, "mv", d, to);
}

/* mkdir -p p/q/new [and a file in it]; then p is renamed. */
static int op_rename_parent_of_new(struct fsmodel *m, struct rng *r)
{
	const char *p0 = pick(m, r, 1, false, true);
	char p[PATH_MAX], q[PATH_MAX], n[PATH_MAX], f[PATH_MAX], to[PATH_MAX];
	int ret;

	if (!p0)
		return 0;
	snprintf(p, sizeof(p), "%s", p0);
	new_name(m, r, p, q);
	new_name(m, r, q, n);
	ret = line(m, "mkdir", q, NULL);
	if (ret == 0)
		ret = line(m, "mkdir", n, NULL);
	if (ret == 0 && rng_below(r, 2)) {
		new_name(m, r, n, f);
		ret = line(m, "create", f, NULL);
	}
	if (ret)
		return ret;
	new_name(m, r, pick_dir(m, r, false), to);
	return below(to, p) ? 0 : line(m, "mv", p, to);
}

/* mkdir n; create n/f1; mv n m; mkdir n; create n/f2 */
static int op_name_reused(struct fsmodel *m, struct rng *r)
{
	const char *dir = pick_dir(m, r, false);
	char n[PATH_MAX], mm[PATH_MAX], f[PATH_MAX];
	int ret;

	new_name(m, r, dir, n);
	new_name(m, r, dir, mm);
	ret = line(m, "mkdir", n, NULL);
	if (ret == 0) {
		new_name(m, r, n, f);
		ret = line(m, "create", f, NULL);
	}
	if (ret == 0)
		ret = line(m, "mv", n, mm);
	if (ret == 0)
		ret = line(m, "mkdir", n, NULL);
	if (ret == 0) {
		new_name(m, r, n, f);
		ret = line(m, "create", f, NULL);
	}
	return ret;
}

/* mkdir new; mv K/sub new/inc; mv new K/new2 */
static int op_carry_into_new(struct fsmodel *m, struct rng *r)
{
	const char *s = pick(m, r, 1, false, true);
	char sub[PATH_MAX], nw[PATH_MAX], inc[PATH_MAX], to[PATH_MAX];
	int ret;

	if (!s)
		return 0;
	snprintf(sub, sizeof(sub), "%s", s);
	new_name(m, r, pick_dir(m, r, false), nw);
	if (below(nw, sub))
		return 0;
	new_name(m, r, nw, inc);
	ret = line(m, "mkdir", nw, NULL);
	if (ret == 0)
		ret = line(m, "mv", sub, inc);
	if (ret || rng_below(r, 3) == 0)
		return ret;
	new_name(m, r, pick_dir(m, r, false), to);
	return below(to, nw) ? 0 : line(m, "mv", nw, to);
}

static int op_mount(struct fsmodel *m, struct rng *r)
{
	const char *d;
	char **v;

	if (m->nmounted && rng_below(r, 2)) {
		char *p = m->mounted[--m->nmounted];
		int ret = line(m, "umount", p, NULL);

		free(p);
		return ret;
	}
	/* On an empty directory only: the unmount shows nothing again. */
	d = pick(m, r, 1, false, true);
	if (!d || m->nmounted >= 2 || has_children(m, d))
		return 0;
	v = realloc(m->mounted, (m->nmounted + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	m->mounted = v;
	v[m->nmounted] = strdup(d);
	if (!v[m->nmounted])
		return -ENOMEM;
	m->nmounted++;
	return line(m, "mount", d, NULL);
}

static int op_simple(struct fsmodel *m, struct rng *r, unsigned k)
{
	char p[PATH_MAX], q[PATH_MAX];
	const char *e;

	switch (k) {
	case 0: /* mkdir */
		new_name(m, r, pick_dir(m, r, false), p);
		return line(m, "mkdir", p, NULL);
	case 1: /* mkdir -p, 2 to 4 levels */
		new_name(m, r, pick_dir(m, r, false), p);
		for (size_t i = 0, n = 2 + rng_below(r, 3); i < n; i++) {
			int ret = line(m, "mkdir", p, NULL);

			if (ret)
				return ret;
			snprintf(q, sizeof(q), "%s", p);
			new_name(m, r, q, p);
		}
		return 0;
	case 2: /* create */
		new_name(m, r, pick_dir(m, r, false), p);
		return line(m, "create", p, NULL);
	case 3: /* append */
		e = pick(m, r, 0, false, false);
		return e ? line(m, "append", e, NULL) : 0;
	case 4: /* unlink */
		e = pick(m, r, 0, false, true);
		if (!e)
			return 0;
		snprintf(p, sizeof(p), "%s", e);
		return line(m, "unlink", p, NULL);
	case 5: /* rm -rf */
		e = pick(m, r, 1, false, true);
		if (!e)
			return 0;
		snprintf(p, sizeof(p), "%s", e);
		return line(m, "rmrf", p, NULL);
	case 6: /* hard link, in a tree or from outside */
		e = pick(m, r, 0, rng_below(r, 3) == 0, false);
		if (!e)
			return 0;
		snprintf(p, sizeof(p), "%s", e);
		new_name(m, r, pick_dir(m, r, false), q);
		return line(m, "link", p, q);
	case 7: /* rmdir of an empty directory */
		e = pick(m, r, 1, false, true);
		if (!e || has_children(m, e))
			return 0;
		snprintf(p, sizeof(p), "%s", e);
		return line(m, "rmdir", p, NULL);
	default: /* a directory renamed over an empty one */
		e = pick(m, r, 1, false, true);
		if (!e || has_children(m, e))
			return 0;
		snprintf(q, sizeof(q), "%s", e);
		e = pick(m, r, 1, false, true);
		if (!e || below(q, e) || below(e, q) || !is_dir(m, e))
			return 0;
		snprintf(p, sizeof(p), "%s", e);
		return line(m, "mv", p, q);
	}
}

int fsmodel_random_op(struct fsmodel *m, struct rng *r)
{
	/* weights, in the order of the cases below */
	static const unsigned w[] = { 10, 4, 14, 5, 6, 3, 3, 2, 2, /* simple */
				      8, 8, 4, 4, 4, 5, 4, 3, 3, 3, 2, 1 };
	unsigned total = 0, x, k = 0;

	for (size_t i = 0; i < sizeof(w) / sizeof(w[0]); i++)
		total += w[i];
	x = (unsigned)rng_below(r, total);
	while (x >= w[k])
		x -= w[k++];
	if (k <= 8)
		return op_simple(m, r, k);
	switch (k) {
	case 9:
		return op_rename_file(m, r, false, false);
	case 10:
		return op_rename_dir(m, r, false, false);
	case 11:
		return rng_below(r, 2) ? op_rename_dir(m, r, false, true) :
					 op_rename_file(m, r, false, true);
	case 12:
		return rng_below(r, 2) ? op_rename_dir(m, r, true, false) :
					 op_rename_file(m, r, true, false);
	case 13:
		return op_fill_then_move(m, r, true);
	case 14:
		return op_fill_then_move(m, r, false);
	case 15:
		return op_swap(m, r, 1);
	case 16:
		return op_swap(m, r, 0);
	case 17:
		return op_rename_parent_of_new(m, r);
	case 18:
		return op_name_reused(m, r);
	case 19:
		return op_carry_into_new(m, r);
	default:
		return m->mounts ? op_mount(m, r) : 0;
	}
}
