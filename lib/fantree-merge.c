/* SPDX-License-Identifier: MIT */
/*
 * Events the kernel merged away. fanotify merges an event into an unread
 * one it equals (fanotify_merge: the same object, directory, name and
 * kind), ORing the bits: "mv d r; mv r d; mv d r" by one process leaves
 * the stream two renames that cancel out, and "create f; mv f g; mv g f;
 * rm f" a create and a delete in one record, its order lost. A merge
 * needs the earlier event unread, and something in between that made the
 * same event possible again: an entry that comes back to a place it left,
 * or a record with more than one entry bit (KEVENT_MERGED).
 *
 * So, between two empty reads of the kernel queue (a merge can only join
 * events of such a stretch), the places each moved entry left and reached
 * are noted, by its file handle. An entry that came back to a place it
 * left, or that a merged record named, is checked once the queue has been
 * read empty: a directory is resolved, and moved where it really is if the
 * cache has it elsewhere (a synthetic MOVED_FROM and MOVED_TO); for a file,
 * each name it had is looked at, and a synthetic FSNW_CREATE or FSNW_DELETE
 * says what is there. Both are what the events would have said. What a
 * merge hides in a stretch of more than JOURNAL_MAX moved entries goes
 * unseen.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "fanotify.h"
#include "handle.h"
#include "mem.h"
#include "sys.h"
#include "testhook.h"

#define JOURNAL_MAX 4096
#define PLACES_MAX 8

struct mplace {
	uint16_t dkeylen, namelen;
	bool left;               /* a MOVED_FROM (or DELETE) left it */
	int8_t what;             /* what a look found there (what_is_at) */
	unsigned char data[];    /* the directory's key, then the name */
};

struct mentry {
	struct hnode node;
	struct mplace *place[PLACES_MAX];
	uint8_t nplaces;
	bool isdir;
	bool suspect;
	bool differs;            /* the last look found it other than told */
	bool doubted;            /* ... and one before it too, with no event since */
	uint16_t keylen;
	unsigned char key[];
};

static uint64_t key_hash(const unsigned char *key, size_t len)
{
	return hash_bytes(key, len, 0x6d657267ull);
}

static struct mentry *entry_of(struct fantrees *ft, const unsigned char *key, size_t len,
			       bool make)
{
	struct hnode *n;
	struct mentry *m;

	htab_for_each_hash(n, &ft->journal, key_hash(key, len)) {
		m = container_of(n, struct mentry, node);
		if (m->keylen == len && !memcmp(m->key, key, len))
			return m;
	}
	if (!make || ft->journal.count >= JOURNAL_MAX || htab_reserve(&ft->journal, 1) < 0)
		return NULL;
	m = mem_zalloc(sizeof(*m) + len);
	if (!m)
		return NULL;
	m->keylen = (uint16_t)len;
	memcpy(m->key, key, len);
	htab_insert(&ft->journal, &m->node, key_hash(key, len));
	return m;
}

static bool same_place(const struct mplace *p, const struct fev *e)
{
	return p->dkeylen == e->keylen && p->namelen == e->namelen &&
	       !memcmp(p->data, e->key, e->keylen) &&
	       !memcmp(p->data + p->dkeylen, e->name, e->namelen);
}

void fanmerge_note(struct fsnw *w, const struct fev *e)
{
	struct fantrees *ft = &w->trees.fan;
	bool left = (e->mask & (FSNW_MOVED_FROM | FSNW_DELETE)) != 0;
	struct mentry *m;
	struct mplace *p;

	if (!e->target || !e->name || !(e->mask & FSNW_DIRENT_BITS))
		return;
	/* Creates and deletes are noted only of entries already noted: what
	 * the caller was told last of a name is what a check compares with. */
	m = entry_of(ft, e->target, e->targetlen,
		     (e->flags & E_MERGED) || (e->mask & FSNW_MOVE));
	if (!m)
		return; /* nothing to note, or past the bound: unseen (see the top) */
	m->isdir |= (e->mask & FSNW_ISDIR) != 0;
	m->suspect |= (e->flags & E_MERGED) != 0;
	m->doubted = false;
	for (uint8_t i = 0; i < m->nplaces; i++) {
		if (!same_place(m->place[i], e))
			continue;
		/* Back where it was, or gone from where it came: a repeat of an
		 * earlier event may have merged into it. */
		m->suspect |= m->place[i]->left != left;
		m->place[i]->left = left;
		return;
	}
	if (m->nplaces == PLACES_MAX) {
		m->suspect = true;
		return;
	}
	p = mem_alloc(sizeof(*p) + e->keylen + e->namelen);
	if (!p) {
		m->suspect = true;
		return;
	}
	p->dkeylen = e->keylen;
	p->namelen = e->namelen;
	p->left = left;
	memcpy(p->data, e->key, e->keylen);
	memcpy(p->data + e->keylen, e->name, e->namelen);
	m->place[m->nplaces++] = p;
}

/* Is the object at path another than m? Unknown counts as m. */
static bool another_at(struct fsnw *w, const char *path, const struct mentry *m)
{
	struct fh_buf h;
	size_t len;
	int mid;

	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (sys_name_to_handle_at(&w->st.sys_name_to_handle_at, AT_FDCWD, path, &h.fh, &mid,
				  0) < 0)
		return false;
	len = FH_FIXED + h.fh.handle_bytes;
	return m->keylen != FSID_BYTES + len || memcmp(m->key + FSID_BYTES, &h.fh, len);
}

/*
 * What is at name in dir now: 1 m, a directory; 2 m, something else; 0
 * nothing; 3 another object (its own events speak for the name); -1
 * unknown.
 */
static int what_is_at(struct fsnw *w, struct fnode *dir, const char *name, size_t len,
		      const struct mentry *m)
{
	struct strref *dp = fcache_view_path(&w->trees.fan.cache, dir);
	char path[PATH_MAX];
	struct stat st;
	int ret = -1, err;

	if (dp && dp->len + 1 + len < sizeof(path)) {
		memcpy(path, dp->s, dp->len);
		path[dp->len] = '/';
		memcpy(path + dp->len + 1, name, len);
		path[dp->len + 1 + len] = '\0';
		err = sys_fstatat(&w->st.sys_walk, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
		if (err == 0)
			ret = another_at(w, path, m) ? 3 : S_ISDIR(st.st_mode) ? 1 : 2;
		else if (err == -ENOENT)
			ret = 0;
	}
	strref_put(dp);
	return ret;
}

/* A file's names: look at what is at each now. */
static void look_names(struct fsnw *w, struct mentry *m)
{
	struct fcache *c = &w->trees.fan.cache;

	for (uint8_t i = 0; i < m->nplaces; i++) {
		struct mplace *p = m->place[i];
		struct fnode *dir = fcache_find(c, p->data, p->dkeylen);

		p->what = (int8_t)(dir ? what_is_at(w, dir, (const char *)p->data + p->dkeylen,
						    p->namelen, m) : -1);
	}
}

/* Does what the look found at p differ from what the caller was told last?
 * Not if its directory went (its events say so) or another took the name. */
static bool told_otherwise(const struct mplace *p, const struct fnode *dir)
{
	return dir && p->what >= 0 && p->what != 3 && (p->what != 0) != !p->left;
}

static bool names_differ(struct fsnw *w, const struct mentry *m)
{
	struct fcache *c = &w->trees.fan.cache;

	for (uint8_t i = 0; i < m->nplaces; i++) {
		const struct mplace *p = m->place[i];

		if (told_otherwise(p, fcache_find(c, p->data, p->dkeylen)))
			return true;
	}
	return false;
}

/* Where what a look found differs from what the caller was told last, say
 * what is there. */
static void tell_names(struct fsnw *w, struct mentry *m)
{
	struct fcache *c = &w->trees.fan.cache;

	for (uint8_t i = 0; i < m->nplaces; i++) {
		struct mplace *p = m->place[i];
		const char *name = (const char *)p->data + p->dkeylen;
		struct fnode *dir = fcache_find(c, p->data, p->dkeylen);
		int what = p->what;

		if (!told_otherwise(p, dir))
			continue;
		fantree_synthetic(w, dir, what ? FSNW_CREATE | (what == 1 ? FSNW_ISDIR : 0) :
						 FSNW_DELETE, 0, name, p->namelen);
	}
}

/* Is the directory now elsewhere than the cache has it? A look: the cache
 * stays as it is. */
static bool dir_elsewhere(struct fsnw *w, const struct mentry *m)
{
	struct fcache *c = &w->trees.fan.cache;
	struct fnode *n = fcache_find(c, m->key, m->keylen);
	char now[PATH_MAX];
	struct strref *was;
	ssize_t len;
	bool moved;

	if (!n || n->state != FN_LINKED || !n->parent)
		return false;
	len = fantree_path_now(w, m->key, m->keylen, now, sizeof(now));
	if (len < 0)
		return false;
	was = fcache_view_path(c, n);
	moved = was && ((size_t)len != was->len || memcmp(now, was->s, was->len));
	strref_put(was);
	return moved;
}

/* A directory: where the cache has it against where it is. */
static void check_dir(struct fsnw *w, struct mentry *m)
{
	struct fcache *c = &w->trees.fan.cache;
	struct fnode *n = fcache_find(c, m->key, m->keylen), *was, *now;
	char name[NAME_MAX + 1];
	size_t len;

	if (!n || n->state != FN_LINKED || !n->parent)
		return;
	was = n->parent;
	len = n->namelen;
	memcpy(name, n->name, len);
	if (fantree_resolve(w, m->key, m->keylen, &now) < 0 || now != n)
		return;
	if (n->state != FN_LINKED || (n->parent == was && n->namelen == len &&
				      !memcmp(n->name, name, len)))
		return;
	fantree_synthetic_move(w, was, name, len, n);
}

static void free_entry(struct hnode *hn, void *arg)
{
	struct mentry *m = container_of(hn, struct mentry, node);

	(void)arg;
	for (uint8_t i = 0; i < m->nplaces; i++)
		mem_free(m->place[i]);
	mem_free(m);
}

static void look_entry(struct hnode *hn, void *arg)
{
	struct mentry *m = container_of(hn, struct mentry, node);
	struct fsnw *w = arg;

	if (!m->suspect) {
		m->differs = false;
	} else if (m->isdir) {
		m->differs = dir_elsewhere(w, m);
	} else {
		look_names(w, m);
		m->differs = names_differ(w, m);
	}
}

/* A difference the look before did not find: *(bool *)arg, and doubted. */
static void doubt_entry(struct hnode *hn, void *arg)
{
	struct mentry *m = container_of(hn, struct mentry, node);

	if (m->differs && !m->doubted) {
		m->doubted = true;
		*(bool *)arg = true;
	}
}

static void check_entry(struct hnode *hn, void *arg)
{
	struct mentry *m = container_of(hn, struct mentry, node);
	struct fsnw *w = arg;

	if (!m->differs)
		return;
	if (m->isdir)
		check_dir(w, m);
	else
		tell_names(w, m);
}

bool fanmerge_verify(struct fsnw *w)
{
	struct fantrees *ft = &w->trees.fan;
	bool wait = false;

	if (!ft->journal.count)
		return false;
	/*
	 * A look answers for now, and finds a name by the place the cache has
	 * for its directory. If events came since the queue was read empty,
	 * one may have moved that directory (mv c e/g, still unread): the
	 * look found nothing where the directory was. Then the journal waits
	 * for the next empty read, with those events in it, and looks again.
	 * And a look may fall between a rename's move of the entry and the
	 * queueing of its events (d_move, then fsnotify_move), the queue still
	 * empty: a difference the look before did not find waits for one more
	 * complete drain, which reads such events, and a look after it.
	 */
	TEST_POINT(TP_VERIFY, NULL);
	htab_for_each(&ft->journal, look_entry, w);
	if (fantree_queue_ready(w))
		return false;
	htab_for_each(&ft->journal, doubt_entry, &wait);
	if (wait)
		return true;
	htab_for_each(&ft->journal, check_entry, w);
	fanmerge_fini(ft);
	return false;
}

void fanmerge_fini(struct fantrees *ft)
{
	htab_for_each(&ft->journal, free_entry, NULL);
	htab_fini(&ft->journal);
	htab_init(&ft->journal);
}
