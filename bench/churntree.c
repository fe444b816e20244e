/* SPDX-License-Identifier: MIT */
/*
 * churn's tree control: a watch on every directory of a tree, made by each
 * contender the way a program makes it, timed and weighed:
 *   tree-raw           a walk with openat + getdents64 (d_type), one
 *                      inotify_add_watch per directory, and its path kept
 *                      in an array indexed by wd, which a program needs to
 *                      name the events it reads;
 *   tree-raw-fd        the same walk, each watch made through the opened
 *                      directory's /proc/self/fd name (as the library
 *                      makes it: the watch and the listing are then of one
 *                      directory, whatever renames run meanwhile);
 *   tree-lib           fsnw_add with FSNW_WATCH_TREE;
 *   tree-lib-fan       the same on the fanotify backend (a filesystem mark,
 *                      no walk);
 *   tree-inotifytools  inotifytools_watch_recursively;
 *   tree-libuv         the raw walk with one uv_fs_event handle per
 *                      directory in place of the inotify_add_watch.
 * On a generated tree of D directories (gentree.h), and with --tree-path on
 * a tree of the caller's too (an extracted Linux source tree, say), which
 * is only read. Metrics: ms a tree, ns and syscalls a directory, and heap
 * bytes a directory: what malloc has handed out after the add less before
 * it (heap_in_use), that is what the contender keeps for the tree; for the
 * library, with the slabs it maps itself (fsnw_stats.mem_mapped).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "churn.h"
#include "evio.h"
#include "gentree.h"
#include "itools.h"
#include "uvpeer.h"

#define TREE_MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM | FSNW_MOVED_TO | FSNW_MODIFY | \
		   FSNW_CLOSE_WRITE)

enum { T_RAW, T_LIB, T_ITOOLS, T_FAN, T_UV, T_RAWFD, NTREE };
static const char *const tree_names[NTREE] = { "tree-raw", "tree-lib", "tree-inotifytools",
					       "tree-lib-fan", "tree-libuv", "tree-raw-fd" };

struct walk {
	/* Watch the directory at path[0..len): 0 or -errno. */
	int (*watch)(struct walk *wk, size_t len);
	long watches;
	long syscalls;
	int err;
	int fd;           /* the directory being watched, open */
	bool by_fd;       /* tree-raw-fd: watch through fd's /proc name */
	int ifd;          /* tree-raw: the group */
	char **wdpath;    /* tree-raw: the path of each wd */
	size_t wdcap;
	struct uvpeer *uv; /* tree-libuv: the loop */
	char path[4096];
};

static void walk_add(struct walk *wk, int fd0, size_t len);

static int raw_watch(struct walk *wk, size_t len)
{
	uint32_t mask = TREE_MASK | IN_ONLYDIR | IN_DONT_FOLLOW;
	char proc[32];
	int wd;

	if (wk->by_fd)
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", wk->fd);
	if (wk->by_fd) /* the magic link is to be followed */
		mask &= ~(uint32_t)IN_DONT_FOLLOW;
	wd = inotify_add_watch(wk->ifd, wk->by_fd ? proc : wk->path, mask);

	wk->syscalls++;
	if (wd < 0)
		return -errno;
	if ((size_t)wd >= wk->wdcap) {
		size_t cap = wk->wdcap ? 2 * wk->wdcap : 64;
		char **p;

		while (cap <= (size_t)wd)
			cap *= 2;
		p = realloc(wk->wdpath, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		memset(p + wk->wdcap, 0, (cap - wk->wdcap) * sizeof(*p));
		wk->wdpath = p;
		wk->wdcap = cap;
	}
	free(wk->wdpath[wd]); /* a directory met twice (a hard link cannot be one) */
	wk->wdpath[wd] = malloc(len + 1);
	if (!wk->wdpath[wd])
		return -ENOMEM;
	memcpy(wk->wdpath[wd], wk->path, len + 1);
	return 0;
}

static int uv_watch(struct walk *wk, size_t len)
{
	(void)len;
	return uvpeer_start(wk->uv, (size_t)wk->watches, wk->path);
}

/*
 * What a careful program does without a library: openat + getdents64 per
 * directory (a 32 KiB buffer, as glibc's readdir has), d_type to spot
 * directories, one watch per directory with its full path. No chdir, no
 * stat per entry. Every syscall is counted, the getdents64 that finds the
 * end included.
 */
#define WALK_DENTS 32768

static void walk_entry(struct walk *wk, int fd0, size_t len, const struct dirent64 *de)
{
	const char *name = de->d_name;
	size_t nl = strlen(name);
	bool isdir = de->d_type == DT_DIR;
	int fd;

	if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
		return;
	if (de->d_type == DT_UNKNOWN) {
		struct stat st;

		wk->syscalls++;
		isdir = fstatat(fd0, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
	}
	if (!isdir || len + 1 + nl >= sizeof(wk->path))
		return;
	wk->syscalls++;
	fd = openat(fd0, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return; /* vanished */
	wk->path[len] = '/';
	memcpy(wk->path + len + 1, name, nl + 1);
	walk_add(wk, fd, len + 1 + nl);
	wk->path[len] = '\0';
}

static void walk_add(struct walk *wk, int fd0, size_t len)
{
	unsigned char *buf;
	ssize_t n;
	int err;

	wk->fd = fd0;
	err = wk->watch(wk, len);

	if (err) {
		if (!wk->err)
			wk->err = -err;
		close(fd0);
		wk->syscalls++;
		return;
	}
	wk->watches++;
	buf = malloc(WALK_DENTS); /* one a level, as each readdir's DIR has */
	if (!buf) {
		close(fd0);
		wk->syscalls++;
		return;
	}
	while ((n = getdents64(fd0, buf, WALK_DENTS)) > 0) {
		wk->syscalls++;
		for (ssize_t off = 0; off < n;) {
			const struct dirent64 *de = (const void *)(buf + off);

			off += de->d_reclen;
			walk_entry(wk, fd0, len, de);
		}
	}
	wk->syscalls += 2; /* the getdents64 that found the end (or failed), close */
	free(buf);
	close(fd0);
}

/* What one contender's add of one tree came to. */
struct tree_out {
	double ns;      /* the add */
	double heap;    /* bytes kept for the tree */
	long watches;   /* directories watched (kernel watches, handles) */
	double sys;     /* syscalls; NAN where not counted */
	int err;        /* errno of the first failure, 0 */
	bool skipped;
};

static void walk_tree(struct walk *wk, const char *root, struct tree_out *o)
{
	double h0 = heap_in_use();
	uint64_t t0 = now_ns();
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	snprintf(wk->path, sizeof(wk->path), "%s", root);
	if (fd >= 0)
		walk_add(wk, fd, strlen(wk->path));
	else
		wk->err = errno;
	o->ns = (double)(now_ns() - t0);
	o->heap = heap_in_use() - h0;
	o->watches = wk->watches;
	o->err = wk->err;
}

static void tree_raw(const char *root, bool by_fd, struct tree_out *o)
{
	struct walk *wk = calloc(1, sizeof(*wk));

	if (!wk) {
		o->err = ENOMEM;
		return;
	}
	wk->watch = raw_watch;
	wk->by_fd = by_fd;
	wk->ifd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (wk->ifd < 0) {
		o->err = errno;
		free(wk);
		return;
	}
	walk_tree(wk, root, o);
	o->sys = (double)(wk->syscalls + 1);
	close(wk->ifd);
	for (size_t i = 0; i < wk->wdcap; i++)
		free(wk->wdpath[i]);
	free(wk->wdpath);
	free(wk);
}

static void tree_uv(const char *root, struct tree_out *o)
{
	struct walk *wk = calloc(1, sizeof(*wk));
	int err;

	if (!wk) {
		o->err = ENOMEM;
		return;
	}
	wk->watch = uv_watch;
	err = uvpeer_open(&wk->uv, NULL, NULL);
	if (err) {
		o->err = -err;
		free(wk);
		return;
	}
	walk_tree(wk, root, o);
	uvpeer_close(wk->uv);
	free(wk);
}

static void tree_itools(const char *root, struct tree_out *o)
{
	double h0;
	uint64_t t0;
	int err = -itools_init();

	if (err) {
		o->err = err;
		return;
	}
	h0 = heap_in_use();
	t0 = now_ns();
	o->err = -itools_watch_tree(root, TREE_MASK);
	o->ns = (double)(now_ns() - t0);
	o->heap = heap_in_use() - h0;
	o->watches = itools_num_watches();
	itools_cleanup();
}

static void tree_lib(struct bench *b, const char *variant, const char *root, struct tree_out *o)
{
	uint32_t be = strcmp(variant, "tree-lib-fan") ? FSNW_BACKEND_INOTIFY : FSNW_BACKEND_FANOTIFY;
	struct fsnw_stats st;
	struct fsnw *w = NULL;
	double h0;
	uint64_t t0;
	int wid, err = -lib_open(&w, be, 0, 0, 0);

	if (err) {
		if (be == FSNW_BACKEND_FANOTIFY) {
			bench_skip(b, variant, "the library's fanotify backend is unavailable "
				   "(fsnw_open: %s)", strerror(err));
			o->skipped = true;
		}
		o->err = err;
		return;
	}
	lib_stats(w, &st);
	h0 = heap_in_use() + (double)st.mem_mapped;
	t0 = now_ns();
	wid = fsnw_add(w, root, TREE_MASK, FSNW_WATCH_TREE);
	o->ns = (double)(now_ns() - t0);
	lib_stats(w, &st);
	o->heap = heap_in_use() + (double)st.mem_mapped - h0;
	o->err = wid < 0 ? -wid : 0;
	o->watches = (long)st.kernel_watches;
	o->sys = (double)lib_syscalls(&st);
	fsnw_close(w);
}

static struct tree_out tree_add(struct bench *b, int v, const char *root)
{
	struct tree_out o = { .sys = NAN };

	switch (v) {
	case T_RAW:
	case T_RAWFD:
		tree_raw(root, v == T_RAWFD, &o);
		break;
	case T_UV:
		tree_uv(root, &o);
		break;
	case T_ITOOLS:
		tree_itools(root, &o);
		break;
	default:
		tree_lib(b, tree_names[v], root, &o);
	}
	return o;
}

/* metric, or "path.metric" for the caller's tree. */
static const char *key(char *buf, size_t len, bool given, const char *metric)
{
	snprintf(buf, len, "%s%s", given ? "path." : "", metric);
	return buf;
}

/*
 * One add of one tree by contender v, checked and recorded. D: the
 * directories it must watch (the caller's tree: as many as tree-raw's walk
 * found, 0 before it ran). The fanotify tree holds one kernel watch, its
 * filesystem mark, whatever the size.
 */
static long tree_round(struct bench *b, int v, const char *root, long D, bool given, int m)
{
	struct tree_out o = tree_add(b, v, root);
	const char *name = tree_names[v];
	long want = v == T_FAN ? 1 : D;
	char k[48];
	bool ok;

	if (o.skipped)
		return 0;
	/* libinotifytools decides by itself what to follow in a tree it did not
	 * make; the bench's own tree has nothing it could read otherwise. */
	ok = !o.err && (o.watches == want || !want || (given && v == T_ITOOLS));
	if (!ok)
		bench_fail(b, name, 1, m, "%s: %ld watches for %ld directories (%s)", root,
			   o.watches, D, o.err ? strerror(o.err) : "no error");
	if (m <= 0)
		return o.watches;
	if (v != T_FAN)
		bench_record(b, name, 1, m, key(k, sizeof(k), given, "dirs"), (double)o.watches,
			     "dirs", ok);
	bench_record(b, name, 1, m, key(k, sizeof(k), given, "add"), o.ns / 1e6, "ms", ok);
	if (!o.watches || v == T_FAN)
		o.watches = D; /* per directory of the tree, its filesystem mark's too */
	if (!o.watches)
		return 0;
	bench_record(b, name, 1, m, key(k, sizeof(k), given, "per-dir"), o.ns / (double)o.watches,
		     "ns/dir", ok);
	bench_record(b, name, 1, m, key(k, sizeof(k), given, "heap"), o.heap / (double)o.watches,
		     "bytes/dir", ok);
	if (!isnan(o.sys))
		bench_record(b, name, 1, m, key(k, sizeof(k), given, "syscalls"),
			     o.sys / (double)o.watches, "syscalls/dir", ok);
	return o.watches;
}

/* Which contenders run: selected, and able to run here (else skipped, with why). */
static void tree_contenders(struct bench *b, bool on[NTREE])
{
	char why[256];

	for (int v = 0; v < NTREE; v++)
		on[v] = cli_variant_on(b->o, tree_names[v]);
	if (on[T_ITOOLS] && !itools_available(why, sizeof(why))) {
		bench_skip(b, tree_names[T_ITOOLS], "%s", why);
		on[T_ITOOLS] = false;
	}
	if (on[T_UV] && !uvpeer_available(why, sizeof(why))) {
		bench_skip(b, tree_names[T_UV], "%s", why);
		on[T_UV] = false;
	}
	if (on[T_FAN] && !lib_fanotify_usable(why, sizeof(why))) {
		bench_skip(b, tree_names[T_FAN], "%s", why);
		on[T_FAN] = false;
	}
}

void churn_tree(struct bench *b, const struct churn_opts *o)
{
	struct gentree t;
	bool on[NTREE], any = false;
	long given_dirs = 0;
	int warmup, rounds, err;

	tree_contenders(b, on);
	for (int v = 0; v < NTREE; v++)
		any |= on[v];
	if (!any)
		return;
	err = gentree_make(b, &t, "churn-tree", o->tree_dirs, 0);
	if (err) {
		bench_fail(b, "tree-raw", 1, 0, "making a tree of %ld directories: %s",
			   o->tree_dirs, strerror(-err));
		return;
	}
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 5, 5, 5), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	/* Contenders interleave round by round, on both trees. */
	for (int r = 0; r < warmup + rounds; r++)
		for (int v = 0; v < NTREE; v++) {
			int m = r - warmup + 1;

			if (!on[v] || bench_skipped(b, "churn", tree_names[v]) ||
			    !bench_inotify_room(b, tree_names[v], 1))
				continue;
			bench_progress(b, "%s round %d/%d", tree_names[v], r + 1, warmup + rounds);
			tree_round(b, v, t.root, t.ndirs, false, m);
			if (!o->tree_path)
				continue;
			if (v == T_RAW)
				given_dirs = tree_round(b, v, o->tree_path, 0, true, m);
			else
				tree_round(b, v, o->tree_path, given_dirs, true, m);
		}
	bench_unpin_self(b);
	gentree_free(&t);
}
