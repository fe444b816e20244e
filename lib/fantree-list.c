/* SPDX-License-Identifier: MIT */
/*
 * What a directory moved into a fanotify tree holds. The filesystem mark
 * hears everything in the directory from the move on, but what it held
 * before was outside the tree, and a consumer of the tree has the
 * directory as its MOVED_TO made it: empty. So the library lists it, as a
 * walked tree lists a new directory (tree-walk.c): opened by the file
 * handle the MOVED_TO named (the inode itself, wherever it is by then),
 * read, and held until the complete drain after the read has read every
 * event older than it; then merged name by name. A name an event touched
 * since the move is the events'; any other gets a synthetic FSNW_CREATE,
 * after those events, at the directory's place in the cache (which is at
 * stream time). Its subdirectories are placed in the cache, each under the
 * handle name_to_handle_at gave at the read, and listed in turn.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fankey.h"
#include "handle.h"
#include "mem.h"
#include "sys.h"
#include "testhook.h"

#define DENTS_BUF 32768
#define STEP_JOBS 256

struct fan_ent {
	uint32_t off;     /* name, then (subdirectories) key, in the job's buf */
	uint16_t len;
	uint16_t keylen;  /* 0: not a directory */
};

struct fan_name {
	struct hnode node;
	uint16_t len;
	char name[];
};

struct fanjob {
	struct list node;      /* fantrees.jobs (to read) or fantrees.listed */
	struct fantree *t;
	struct fnode *dir;
	struct htab touched;   /* struct fan_name */
	struct fan_ent *e;
	size_t n, cap;
	unsigned char *buf;
	size_t blen, bcap;
	uint32_t gen;          /* the window it was read in */
	bool listed;           /* read: in fantrees.listed */
	bool lost;             /* a touched name could not be kept: read it again */
};

static uint64_t name_hash(const char *name, size_t len)
{
	return hash_bytes(name, len, 0x66616e6cull);
}

static bool touched(const struct fanjob *j, const char *name, size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &j->touched, name_hash(name, len)) {
		struct fan_name *x = container_of(n, struct fan_name, node);

		if (x->len == len && !memcmp(x->name, name, len))
			return true;
	}
	return false;
}

static void free_name(struct hnode *n, void *arg)
{
	(void)arg;
	mem_free(container_of(n, struct fan_name, node));
}

static void job_free(struct fantrees *ft, struct fanjob *j)
{
	list_del(&j->node);
	if (j->dir && j->dir->job == j) {
		j->dir->job = NULL;
		fcache_pinned(&ft->cache, j->dir);
	}
	htab_for_each(&j->touched, free_name, NULL);
	htab_fini(&j->touched);
	mem_free(j->e);
	mem_free(j->buf);
	mem_free(j);
}

/* Forget what an earlier read found: the directory is read again. */
static void job_reset(struct fanjob *j)
{
	j->n = 0;
	j->blen = 0;
	j->lost = false;
}

void fanlist_moved_in(struct fsnw *w, struct fantree *t, struct fnode *dir)
{
	struct fantrees *ft = &w->trees.fan;
	struct fanjob *j = dir->job;

	if (j) { /* moved in again before its listing stood: read it anew, for t */
		job_reset(j);
		htab_for_each(&j->touched, free_name, NULL);
		htab_fini(&j->touched);
		htab_init(&j->touched);
		j->listed = false;
		j->t = t;
		list_del(&j->node);
		list_add_tail(&j->node, &ft->jobs);
		return;
	}
	j = mem_zalloc(sizeof(*j));
	if (!j) {
		handle_overflow(w, OVERFLOW_UNRESOLVED); /* what it holds goes unreported */
		return;
	}
	htab_init(&j->touched);
	j->t = t;
	j->dir = dir;
	dir->job = j;
	fcache_pinned(&ft->cache, dir);
	list_add_tail(&j->node, &ft->jobs);
}

struct fantree *fanlist_tree(const struct fanjob *j)
{
	return j->t;
}

bool fanlist_told(const struct fanjob *j, const char *name, size_t len)
{
	return touched(j, name, len);
}

void fanlist_touch(struct fnode *dir, const char *name, size_t len)
{
	struct fanjob *j = dir->job;
	struct fan_name *x;

	if (touched(j, name, len))
		return;
	x = mem_alloc(sizeof(*x) + len);
	if (!x || htab_reserve(&j->touched, 1) < 0) {
		mem_free(x);
		j->lost = true;
		return;
	}
	x->len = (uint16_t)len;
	memcpy(x->name, name, len);
	htab_insert(&j->touched, &x->node, name_hash(name, len));
}

bool fanlist_echo(const struct trees *ts, const struct fnode *n)
{
	return n->job && n->job->listed && ts->window_open && n->job->gen == ts->window_gen;
}

/* Room for one entry of name and key in j. */
static int ent_add(struct fanjob *j, const char *name, size_t len, const struct kkey *key)
{
	size_t need = len + (key ? key->len : 0);

	if (j->n == j->cap) {
		size_t cap = j->cap ? 2 * j->cap : 32;
		struct fan_ent *e = mem_realloc(j->e, cap * sizeof(*e));

		if (!e)
			return -ENOMEM;
		j->e = e;
		j->cap = cap;
	}
	if (j->blen + need > j->bcap) {
		size_t cap = j->bcap ? 2 * j->bcap : 1024;
		unsigned char *b;

		while (cap < j->blen + need)
			cap *= 2;
		b = mem_realloc(j->buf, cap);
		if (!b)
			return -ENOMEM;
		j->buf = b;
		j->bcap = cap;
	}
	memcpy(j->buf + j->blen, name, len);
	if (key)
		memcpy(j->buf + j->blen + len, key->bytes, key->len);
	j->e[j->n++] = (struct fan_ent){ (uint32_t)j->blen, (uint16_t)len,
					 (uint16_t)(key ? key->len : 0) };
	j->blen += need;
	return 0;
}

/* The key of the subdirectory name of fd: a syscall. */
static int sub_key(struct fsnw *w, int fd, const char *name, const struct fview *v,
		   struct kkey *key)
{
	struct fh_buf h;
	int mid, ret;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	ret = sys_name_to_handle_at(&w->st.sys_name_to_handle_at, fd, name, &h.fh, &mid, 0);
	if (ret < 0)
		return ret;
	handle_to_key(v->fsid, &h, key);
	return 0;
}

/* List fd into j: every entry, each subdirectory with its key. */
static int list_fd(struct fsnw *w, struct fanjob *j, int fd, const struct fview *v)
{
	unsigned char *dents = w->trees.dents;

	for (;;) {
		ssize_t n = sys_getdents(&w->st.sys_walk, fd, dents, DENTS_BUF);

		if (n <= 0)
			return n < 0 && n != -ENOENT ? (int)n : 0;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(void *)(dents + off);
			size_t len = strlen(e->d_name);
			bool dir = e->d_type == DT_DIR;
			struct kkey key;
			int ret;

			off += e->d_reclen;
			if (len <= 2 && e->d_name[0] == '.' && (len == 1 || e->d_name[1] == '.'))
				continue;
			if (e->d_type == DT_UNKNOWN) {
				struct stat st;

				if (sys_fstatat(&w->st.sys_walk, fd, e->d_name, &st,
						AT_SYMLINK_NOFOLLOW) < 0)
					continue;
				dir = S_ISDIR(st.st_mode);
			}
			/* A subdirectory gone before its handle was had: its
			 * events say so. */
			if (dir && sub_key(w, fd, e->d_name, v, &key) < 0)
				continue;
			ret = ent_add(j, e->d_name, len, dir ? &key : NULL);
			if (ret < 0)
				return ret;
		}
	}
}

/* Read one job's directory. false: it goes (gone, or unreadable: said). */
static bool read_job(struct fsnw *w, struct fanjob *j)
{
	struct fcache *c = &w->trees.fan.cache;
	struct fview *v = j->dir->view;
	struct fh_buf h;
	int fd, ret;

	if (!v || !key_to_handle(j->dir->key, j->dir->keylen, &h))
		return false;
	TEST_POINT(TP_VISIT, NULL);
	fd = sys_open_by_handle_at(&w->st.sys_open_by_handle_at, v->mntfd, &h.fh,
				   O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		/* Gone: its deletes say so. Else what it holds goes unreported. */
		if (fd != -ESTALE && fd != -ENOENT)
			handle_overflow(w, OVERFLOW_UNRESOLVED);
		return false;
	}
	job_reset(j);
	ret = list_fd(w, j, fd, v);
	sys_close(&w->st.sys_walk, fd);
	if (ret < 0) {
		handle_overflow(w, OVERFLOW_UNRESOLVED);
		return false;
	}
	(void)c;
	return true;
}

/* The path events at n report for tree t, or NULL (not in t, or ENOMEM). */
static struct strref *path_in(struct fantree *t, struct fnode *n)
{
	for (struct fnode *at = n; at; at = at->parent) {
		for (struct fanchor *a = at->anchors; a; a = a->next)
			if (a->owner == t)
				return fcache_path_below(at, a->report, n);
		if (at->state != FN_LINKED)
			break;
	}
	return NULL;
}

/* The listing stands: what no event touched is reported, and read in turn. */
static void commit(struct fsnw *w, struct fanjob *j)
{
	struct fcache *c = &w->trees.fan.cache;
	struct watch *lw = j->t->lw;
	struct strref *path = fcache_where(c, j->dir) == FN_IN ? path_in(j->t, j->dir) : NULL;

	for (size_t i = 0; path && i < j->n; i++) {
		const struct fan_ent *e = &j->e[i];
		const char *name = (const char *)j->buf + e->off;
		uint32_t mask = FSNW_CREATE | FSNW_SYNTHETIC | (e->keylen ? FSNW_ISDIR : 0);
		struct fnode *sub;

		if (touched(j, name, e->len))
			continue;
		if (lw->mask & FSNW_CREATE) {
			queue_push(w->q, &lw->qo, path, mask, 0, name, e->len, 0);
			w->st.events_synthetic++;
		}
		if (!e->keylen)
			continue;
		fcache_create(c, j->dir, name, e->len, j->buf + e->off + e->len, e->keylen);
		sub = fcache_find(c, j->buf + e->off + e->len, e->keylen);
		if (sub && sub->state == FN_LINKED && sub->parent == j->dir)
			fanlist_moved_in(w, j->t, sub);
	}
	strref_put(path);
}

bool fanlist_after_drain(struct fsnw *w)
{
	struct trees *ts = &w->trees;
	struct fantrees *ft = &ts->fan;
	unsigned budget = STEP_JOBS;
	bool read = false;

	/* The batch places events first: the cache is at the drain's end then. */
	if (ft->nbatch || ft->from)
		return false;
	while (!list_empty(&ft->listed)) {
		struct fanjob *j = list_first(&ft->listed, struct fanjob, node);

		if (j->lost) {
			j->listed = false;
			list_del(&j->node);
			list_add_tail(&j->node, &ft->jobs);
			continue;
		}
		commit(w, j);
		job_free(ft, j);
	}
	if (!list_empty(&ft->jobs) && !ts->dents)
		ts->dents = mem_alloc(DENTS_BUF);
	if (list_empty(&ft->jobs) || !ts->dents)
		return false;
	if (!ts->window_open) {
		ts->window_open = true;
		ts->window_gen++;
	}
	while (budget-- && !list_empty(&ft->jobs)) {
		struct fanjob *j = list_first(&ft->jobs, struct fanjob, node);

		list_del(&j->node);
		if (!read_job(w, j)) {
			list_add(&j->node, &ft->listed); /* job_free unlinks it */
			job_free(ft, j);
			continue;
		}
		j->gen = ts->window_gen;
		j->listed = true;
		list_add_tail(&j->node, &ft->listed);
		read = true;
	}
	fcache_trim(&ft->cache);
	return read;
}

void fanlist_forget_tree(struct fantrees *ft, struct fantree *t)
{
	struct list *lists[] = { &ft->jobs, &ft->listed };

	for (size_t i = 0; i < 2; i++) {
		struct list *pos, *tmp;

		list_for_each_safe(pos, tmp, lists[i]) {
			struct fanjob *j = list_entry(pos, struct fanjob, node);

			if (j->t == t)
				job_free(ft, j);
		}
	}
}

void fanlist_fini(struct fantrees *ft)
{
	while (!list_empty(&ft->jobs))
		job_free(ft, list_first(&ft->jobs, struct fanjob, node));
	while (!list_empty(&ft->listed))
		job_free(ft, list_first(&ft->listed, struct fanjob, node));
}
