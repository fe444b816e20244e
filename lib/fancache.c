/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "fancache.h"
#include "mem.h"

/* A chain of parents longer than this is a cache bug, never a real path
 * (PATH_MAX allows half as many components): treat the node as unknown. */
#define CHAIN_MAX 4096


static void log_placed(struct fcache *c, struct fnode *n);

static uint64_t key_hash(const unsigned char *key, size_t len)
{
	return hash_bytes(key, len, 0x6663);
}

static uint64_t child_hash(const struct fnode *parent, const char *name, size_t len)
{
	return hash_bytes(name, len, hash_u64((uint64_t)(uintptr_t)parent));
}

void fcache_init(struct fcache *c, size_t max)
{
	memset(c, 0, sizeof(*c));
	htab_init(&c->by_key);
	htab_init(&c->by_child);
	list_init(&c->lru);
	list_init(&c->tombs);
	list_init(&c->views);
	c->max = max ? max : FCACHE_DEFAULT;
	c->gen = 1;
}

static void free_one(struct hnode *hn, void *arg)
{
	struct fnode *n = container_of(hn, struct fnode, knode);

	(void)arg;
	strref_put(n->path);
	mem_free(n->name);
	mem_free(n);
}

void fcache_fini(struct fcache *c)
{
	struct list *pos, *tmp;

	htab_for_each(&c->by_key, free_one, NULL);
	htab_fini(&c->by_key);
	htab_fini(&c->by_child);
	mem_free(c->placed);
	c->placed = NULL;
	c->nplaced = c->capplaced = 0;
	list_for_each_safe(pos, tmp, &c->views) {
		struct fview *v = list_entry(pos, struct fview, node);

		strref_put(v->prefix);
		mem_free(v);
	}
	list_init(&c->views);
}

struct fview *fcache_view(const struct fcache *c, const unsigned char *key, size_t keylen)
{
	const struct list *pos;

	if (keylen < FSID_BYTES)
		return NULL;
	for (pos = c->views.next; pos != &c->views; pos = pos->next) {
		struct fview *v = list_entry(pos, struct fview, node);

		if (!memcmp(v->fsid, key, FSID_BYTES))
			return v;
	}
	return NULL;
}

struct fnode *fcache_find(const struct fcache *c, const unsigned char *key, size_t keylen)
{
	struct hnode *hn;

	htab_for_each_hash(hn, &c->by_key, key_hash(key, keylen)) {
		struct fnode *n = container_of(hn, struct fnode, knode);

		if (n->keylen == keylen && !memcmp(n->key, key, keylen))
			return n;
	}
	return NULL;
}

static struct fnode *child_of(const struct fcache *c, const struct fnode *parent,
			      const char *name, size_t len)
{
	struct hnode *hn;

	htab_for_each_hash(hn, &c->by_child, child_hash(parent, name, len)) {
		struct fnode *n = container_of(hn, struct fnode, cnode);

		if (n->parent == parent && n->namelen == len && !memcmp(n->name, name, len))
			return n;
	}
	return NULL;
}

/* Put n in the list its state calls for: the LRU (an unpinned leaf still in
 * place), the tombs (dead), or none. */
static void list_update(struct fcache *c, struct fnode *n)
{
	int want = FN_LIST_NONE;

	if (n->state == FN_DEAD)
		want = FN_LIST_TOMBS;
	else if (!n->view_root && !n->anchors && !n->nchildren && !n->job)
		want = FN_LIST_LRU;
	if (want == n->lru_in)
		return;
	if (n->lru_in == FN_LIST_TOMBS)
		c->ntombs--;
	list_del(&n->lru);
	n->lru_in = (uint8_t)want;
	if (want == FN_LIST_LRU) {
		list_add(&n->lru, &c->lru);
	} else if (want == FN_LIST_TOMBS) {
		list_add_tail(&n->lru, &c->tombs);
		c->ntombs++;
		c->sweep = true;
	}
}

static struct fnode *node_new(struct fcache *c, struct fview *v, const unsigned char *key,
			      size_t keylen)
{
	struct fnode *n;

	if (keylen > KKEY_MAX)
		return NULL;
	n = htab_reserve(&c->by_key, 1) < 0 ? NULL : mem_zalloc(sizeof(*n) + keylen);
	if (!n) {
		c->nomem = true;
		return NULL;
	}
	n->view = v;
	n->state = FN_DETACHED;
	n->keylen = (uint16_t)keylen;
	memcpy(n->key, key, keylen);
	list_init(&n->lru);
	htab_insert(&c->by_key, &n->knode, key_hash(key, keylen));
	c->count++;
	list_update(c, n);
	return n;
}

/* n leaves its parent (linked or dead under it): the parent may become a leaf. */
static void leave_parent(struct fcache *c, struct fnode *n)
{
	struct fnode *p = n->parent;

	if (n->state == FN_LINKED && !n->view_root)
		htab_remove(&c->by_child, &n->cnode);
	n->parent = NULL;
	if (p) {
		p->nchildren--;
		list_update(c, p);
	}
}

static void detach(struct fcache *c, struct fnode *n)
{
	if (n->state == FN_DETACHED || n->view_root)
		return;
	leave_parent(c, n);
	n->state = FN_DETACHED;
	n->self_gone = false;
	list_update(c, n);
	c->gen++;
}

/* Is a at or above b? */
static bool is_above(const struct fnode *a, const struct fnode *b)
{
	for (int i = 0; b && i < CHAIN_MAX; i++, b = b->parent)
		if (a == b)
			return true;
	return false;
}

/*
 * Link n at parent/name, from wherever it was; whoever held that place is
 * detached. A move of a node already placed changes the paths below it.
 * -ENOMEM (n is then detached); -ELOOP if parent is below n.
 */
static int link_at(struct fcache *c, struct fnode *n, struct fnode *parent, const char *name,
		   size_t len)
{
	struct fnode *other;
	char *nm;

	if (n->state == FN_LINKED && n->parent == parent && n->namelen == len &&
	    !memcmp(n->name, name, len))
		return 0;
	if (n->view_root || is_above(n, parent))
		return -ELOOP;
	other = child_of(c, parent, name, len);
	if (other && other != n) {
		if (other->state == FN_LINKED) {
			c->ndisplaced++;
			c->displaced = other;
			c->displaced_at = parent;
		}
		detach(c, other);
	}
	/* Every memo that may say where n was (or was not) is stale. */
	c->gen++;
	leave_parent(c, n);
	n->state = FN_DETACHED;
	nm = len ? mem_alloc(len) : NULL;
	if ((len && !nm) || htab_reserve(&c->by_child, 1) < 0) {
		mem_free(nm);
		list_update(c, n);
		c->nomem = true;
		return -ENOMEM;
	}
	memcpy(nm, name, len);
	mem_free(n->name);
	n->name = nm;
	n->namelen = (uint16_t)len;
	n->parent = parent;
	n->state = FN_LINKED;
	n->self_gone = false;
	parent->nchildren++;
	htab_insert(&c->by_child, &n->cnode, child_hash(parent, name, len));
	list_update(c, parent);
	list_update(c, n);
	if (c->logging)
		log_placed(c, n);
	return 0;
}

/* Out of memory for the log: no place is trusted (the caller forgets them all). */
static void log_placed(struct fcache *c, struct fnode *n)
{
	if (c->nplaced == c->capplaced) {
		size_t cap = c->capplaced ? 2 * c->capplaced : 64;
		struct fnode **v = mem_realloc(c->placed, cap * sizeof(*v));

		if (!v) {
			c->nomem = true;
			return;
		}
		c->placed = v;
		c->capplaced = cap;
	}
	c->placed[c->nplaced++] = n;
}

void fcache_log(struct fcache *c, bool on)
{
	c->logging = on;
	if (!on)
		c->nplaced = 0;
}

void fcache_unplace_logged(struct fcache *c)
{
	for (size_t i = 0; i < c->nplaced; i++)
		detach(c, c->placed[i]);
	c->nplaced = 0;
}

/* Deleted: out of the trie, its last place kept for events that come late. */
static void kill(struct fcache *c, struct fnode *n)
{
	if (n->state != FN_LINKED || n->view_root)
		return;
	htab_remove(&c->by_child, &n->cnode);
	n->state = FN_DEAD;
	list_update(c, n);
}

int fcache_view_new(struct fcache *c, const unsigned char *rootkey, size_t keylen, int mntfd,
		    int mnt_id, const char *prefix, size_t prefixlen, struct fview **out)
{
	struct fview *v = mem_zalloc(sizeof(*v));
	struct fnode *root;

	if (!v || keylen < FSID_BYTES)
		goto fail;
	v->prefix = strref_new(prefix, prefixlen);
	if (!v->prefix)
		goto fail;
	root = fcache_find(c, rootkey, keylen);
	if (root) /* met before, out of any view: it is this one's root now */
		detach(c, root);
	else
		root = node_new(c, v, rootkey, keylen);
	if (!root)
		goto fail;
	root->view = v;
	root->view_root = true;
	root->state = FN_LINKED;
	list_update(c, root);
	memcpy(v->fsid, rootkey, FSID_BYTES);
	v->mntfd = mntfd;
	v->mnt_id = mnt_id;
	v->root = root;
	list_add_tail(&v->node, &c->views);
	c->gen++;
	*out = v;
	return 0;
fail:
	if (v)
		strref_put(v->prefix);
	mem_free(v);
	return -ENOMEM;
}

/* ---- the memo ---- */

static bool memo_ok(const struct fcache *c, const struct fnode *n)
{
	return n->gen == c->gen;
}

/* The node n's memo is made from, or NULL. */
static struct fnode *memo_parent(const struct fnode *n)
{
	if (n->anchors || n->view_root || n->state == FN_DETACHED || n->state == FN_OUTVIEW)
		return NULL;
	return n->parent;
}

static void memo_make(struct fcache *c, struct fnode *n)
{
	struct fnode *p = memo_parent(n), *near = NULL;
	struct strref *path = NULL;
	int where = FN_OUT;

	if (n->anchors) {
		where = FN_IN;
		near = n;
		path = strref_get(n->anchors->report);
	} else if (n->state == FN_DETACHED || (!p && !n->view_root && n->state != FN_OUTVIEW)) {
		where = FN_UNKNOWN;
	} else if (p && p->where == FN_IN) {
		path = strref_join(p->path, n->name, n->namelen);
		if (!path) {
			c->nomem = true;
			return; /* no memo: tried again next time */
		}
		where = FN_IN;
		near = p->near;
	} else if (p) {
		where = p->where;
	}
	strref_put(n->path);
	n->path = path;
	n->near = near;
	n->where = (uint8_t)where;
	n->gen = c->gen;
}

int fcache_where_now(struct fcache *c, struct fnode *n)
{
	while (!memo_ok(c, n)) {
		struct fnode *m = n, *p;
		int depth = 0;

		while ((p = memo_parent(m)) && !memo_ok(c, p) && ++depth < CHAIN_MAX)
			m = p;
		if (depth >= CHAIN_MAX)
			return FN_UNKNOWN;
		memo_make(c, m);
		if (!memo_ok(c, m))
			return FN_UNKNOWN;
	}
	return n->where;
}

void fcache_pinned(struct fcache *c, struct fnode *n)
{
	list_update(c, n);
	if (n->state == FN_DEAD)
		c->sweep = true; /* a tomb a job let go may be done with */
	c->gen++;
}

/* Length of the names from below `at` down to n, with a '/' before each;
 * -1 if n is not (linked or dead) below at. */
static long names_len(const struct fnode *at, const struct fnode *n)
{
	long len = 0;

	for (int i = 0; n != at; i++, n = n->parent) {
		if (!n || i >= CHAIN_MAX || (n->state != FN_LINKED && n->state != FN_DEAD))
			return -1;
		len += 1 + n->namelen;
	}
	return len;
}

static struct strref *join_below(const struct fnode *at, const char *head, size_t hlen,
				 const struct fnode *n)
{
	long rest = names_len(at, n);
	struct strref *p;
	size_t end;

	if (rest < 0)
		return NULL;
	/* A head ending in '/' (the root directory, a path given so) gives no
	 * doubled slash. */
	if (hlen && head[hlen - 1] == '/' && rest > 0)
		hlen--;
	end = hlen + (size_t)rest;
	p = strref_alloc(end);
	if (!p)
		return NULL;
	for (; n != at; n = n->parent) {
		end -= n->namelen;
		memcpy(p->s + end, n->name, n->namelen);
		p->s[--end] = '/';
	}
	memcpy(p->s, head, hlen);
	return p;
}

struct strref *fcache_view_path(const struct fcache *c, const struct fnode *n)
{
	(void)c;
	if (!n->view)
		return NULL;
	return join_below(n->view->root, n->view->prefix->s, n->view->prefix->len, n);
}

struct strref *fcache_path_below(const struct fnode *at, const struct strref *report,
				 const struct fnode *n)
{
	return join_below(at, report->s, report->len, n);
}

bool fcache_below(const struct fnode *at, const struct fnode *n)
{
	return names_len(at, n) >= 0;
}


/* ---- what resolutions learn ---- */

/*
 * A node the walk of a resolution found by its name, before anything is
 * linked below it: is it the directory at that path now? Names in the
 * cache are at stream time and the path is now, so a name the stream has
 * not yet seen change (a swap read late) can lead to another directory:
 * what is linked below it would then report under the wrong path. One
 * handle (keyat) says; the view's root is known.
 */
static int named_holds(struct fview *v, const struct fnode *cur, const char *rel, size_t end,
		       fcache_keyat_fn keyat, void *arg)
{
	struct kkey k;
	int ret;

	if (cur == v->root)
		return 0;
	ret = keyat(arg, v, rel, end, &k);
	if (ret < 0)
		return ret;
	return k.len == cur->keylen && !memcmp(k.bytes, cur->key, k.len) ? 0 : -EAGAIN;
}

/* The node of key (made if the cache has none) linked at cur/name. */
static int link_key(struct fcache *c, struct fview *v, const unsigned char *key, size_t keylen,
		    struct fnode *cur, const char *name, size_t len, struct fnode **out)
{
	struct fnode *n = fcache_find(c, key, keylen);
	int ret;

	if (!n)
		n = node_new(c, v, key, keylen);
	if (!n)
		return -ENOMEM;
	n->view = v;
	if (n->state == FN_OUTVIEW)
		n->state = FN_DETACHED;
	ret = link_at(c, n, cur, name, len);
	if (ret < 0)
		return ret == -ELOOP ? -EAGAIN : ret;
	*out = n;
	return 0;
}

/* The node of the component rel[pos..end) the cache lacks, below cur. */
static int place_fresh(struct fcache *c, struct fview *v, struct fnode *cur, const char *rel,
		       size_t pos, size_t end, fcache_keyat_fn keyat, void *arg,
		       struct fnode **out)
{
	struct fnode *n;
	struct kkey k;
	int ret = keyat(arg, v, rel, end, &k);

	if (ret < 0)
		return ret;
	/* A directory the cache places elsewhere at stream time: the path now
	 * has it moved by a rename the stream has yet to show. */
	n = fcache_find(c, k.bytes, k.len);
	if (n && n->state == FN_LINKED && fcache_where(c, n) != FN_UNKNOWN &&
	    (n->parent != cur || n->namelen != end - pos || memcmp(n->name, rel + pos, end - pos)))
		return -EAGAIN;
	return link_key(c, v, k.bytes, k.len, cur, rel + pos, end - pos, out);
}

int fcache_place(struct fcache *c, struct fview *v, const char *rel, size_t len,
		 const unsigned char *key, size_t keylen, fcache_keyat_fn keyat, void *arg,
		 struct fnode **out)
{
	struct fnode *cur = v->root, *n;
	size_t pos = 0, cur_end = 0;
	bool by_name = false; /* cur was found by its name, not yet checked */
	int ret;

	if (!len) {
		/* The view's root itself: its key is known. */
		if (cur->keylen != keylen || memcmp(cur->key, key, keylen))
			return -EAGAIN;
		*out = cur;
		return 0;
	}
	for (;;) {
		const char *slash = memchr(rel + pos, '/', len - pos);
		size_t end = slash ? (size_t)(slash - rel) : len;
		size_t clen = end - pos;

		if (!clen || clen > 255)
			return -EAGAIN;
		if (end == len)
			break;
		n = child_of(c, cur, rel + pos, clen);
		if (n && n->state == FN_LINKED) {
			by_name = true;
		} else {
			if (by_name && (ret = named_holds(v, cur, rel, cur_end, keyat, arg)) < 0)
				return ret;
			ret = place_fresh(c, v, cur, rel, pos, end, keyat, arg, &n);
			if (ret < 0)
				return ret;
			by_name = false;
		}
		cur = n;
		cur_end = end;
		pos = end + 1;
	}
	if (by_name && (ret = named_holds(v, cur, rel, cur_end, keyat, arg)) < 0)
		return ret;
	return link_key(c, v, key, keylen, cur, rel + pos, len - pos, out);
}

int fcache_outview(struct fcache *c, struct fview *v, const unsigned char *key, size_t keylen,
		   struct fnode **out)
{
	struct fnode *n = fcache_find(c, key, keylen);

	if (n && n->view_root)
		return -EAGAIN;
	if (!n)
		n = node_new(c, v, key, keylen);
	if (!n)
		return -ENOMEM;
	detach(c, n);
	n->state = FN_OUTVIEW;
	*out = n;
	return 0;
}

/* A directory node that can hold entries now. */
static bool placed(const struct fnode *dir)
{
	return dir && dir->state == FN_LINKED;
}

/* The entry's node: by its own key, else by its place. */
static struct fnode *entry_node(const struct fcache *c, const struct fnode *dir,
				const char *name, size_t len, const unsigned char *key,
				size_t keylen)
{
	struct fnode *n = key ? fcache_find(c, key, keylen) : NULL;

	if (!n && placed(dir))
		n = child_of(c, dir, name, len);
	return n;
}

void fcache_create(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		   const unsigned char *key, size_t keylen)
{
	struct fnode *n;

	if (!placed(dir) || !key)
		return;
	n = fcache_find(c, key, keylen);
	if (!n)
		n = node_new(c, dir->view, key, keylen);
	if (n)
		(void)link_at(c, n, dir, name, len); /* ENOMEM: unknown till met */
}

void fcache_uncreate(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		     const unsigned char *key, size_t keylen)
{
	struct fnode *n = entry_node(c, dir, name, len, key, keylen);

	/* Before it was made it was nowhere: the replay makes it again. */
	if (n && n->state == FN_LINKED && n->parent == dir)
		detach(c, n);
}

void fcache_delete(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		   const unsigned char *key, size_t keylen)
{
	struct fnode *n = entry_node(c, dir, name, len, key, keylen);

	if (!n && placed(dir) && key) {
		/* Never met alive: a tombstone, where late events find it. */
		n = node_new(c, dir->view, key, keylen);
		if (!n || link_at(c, n, dir, name, len) < 0)
			return;
	} else if (n && n->state != FN_LINKED && placed(dir)) {
		if (link_at(c, n, dir, name, len) < 0)
			return;
	}
	if (n)
		kill(c, n);
}

void fcache_undelete(struct fcache *c, struct fnode *dir, const char *name, size_t len,
		     const unsigned char *key, size_t keylen)
{
	struct fnode *n = key ? fcache_find(c, key, keylen) : NULL;

	if (!placed(dir)) {
		/* Where it was before is not known: nowhere, till resolved. */
		if (n && n->state == FN_DEAD)
			detach(c, n);
		return;
	}
	if (!n && key)
		n = node_new(c, dir->view, key, keylen);
	if (n)
		(void)link_at(c, n, dir, name, len);
}

void fcache_move(struct fcache *c, struct fview *v, struct fnode *from, const char *fname,
		 size_t flen, struct fnode *to, const char *tname, size_t tlen,
		 const unsigned char *key, size_t keylen)
{
	struct fnode *n = entry_node(c, from, fname, flen, key, keylen);

	if (!n && key && placed(to))
		n = node_new(c, v, key, keylen);
	if (!n)
		return;
	if (!placed(to) || link_at(c, n, to, tname, tlen) < 0)
		detach(c, n);
}

void fcache_self_gone(struct fcache *c, struct fnode *n, bool gone)
{
	n->self_gone = gone;
	if (gone && n->state == FN_DEAD)
		c->sweep = true;
}

/* ---- bounds ---- */

static void free_node(struct fcache *c, struct fnode *n)
{
	assert(!n->nchildren && !n->anchors && !n->view_root && !n->job);
	htab_remove(&c->by_key, &n->knode);
	leave_parent(c, n);
	if (n->lru_in == FN_LIST_TOMBS)
		c->ntombs--;
	list_del(&n->lru);
	strref_put(n->path);
	mem_free(n->name);
	mem_free(n);
	c->count--;
}

/* A dead node nothing more can come for: its directory is gone for good
 * (FSNW_DELETE_SELF), or it was outside every tree. */
static bool done_with(struct fcache *c, struct fnode *n)
{
	return !n->nchildren && !n->anchors && !n->job &&
	       (n->self_gone || fcache_where(c, n) == FN_OUT);
}

static void sweep(struct fcache *c)
{
	struct list *pos, *tmp;
	bool again = true;

	c->sweep = false;
	/* Freeing a node changes no other node's place in the tombs (a dead
	 * parent stays where it is), so the walk may go on. Children die
	 * before their parents and come first; a parent met before its
	 * children went is taken on the next pass. */
	while (again) {
		again = false;
		list_for_each_safe(pos, tmp, &c->tombs) {
			struct fnode *n = list_entry(pos, struct fnode, lru);

			if (!done_with(c, n))
				continue;
			if (n->parent && n->parent->state == FN_DEAD)
				again = true;
			free_node(c, n);
		}
	}
}

void fcache_trim_now(struct fcache *c)
{
	assert(!c->logging);
	if (c->sweep)
		sweep(c);
	while (c->ntombs > FCACHE_TOMBS) {
		struct list *pos;
		struct fnode *victim = NULL;

		for (pos = c->tombs.next; pos != &c->tombs && !victim; pos = pos->next) {
			struct fnode *n = list_entry(pos, struct fnode, lru);

			if (!n->nchildren && !n->anchors && !n->job)
				victim = n;
		}
		if (!victim)
			break;
		if (!victim->self_gone && fcache_where(c, victim) != FN_OUT)
			c->ambiguous = true;
		free_node(c, victim);
	}
	while (c->count > c->max && !list_empty(&c->lru)) {
		free_node(c, list_last(&c->lru, struct fnode, lru));
		c->evictions++;
	}
}

static void forget_one(struct hnode *hn, void *arg)
{
	struct fnode *n = container_of(hn, struct fnode, knode);
	struct fcache *c = arg;

	if (n->state == FN_LINKED && !n->view_root) {
		leave_parent(c, n);
		n->state = FN_DETACHED;
	} else if (n->state == FN_OUTVIEW) {
		/* What the view's mount shows may have changed too. */
		n->state = FN_DETACHED;
	}
}

static void relist_one(struct hnode *hn, void *arg)
{
	list_update(arg, container_of(hn, struct fnode, knode));
}

void fcache_forget(struct fcache *c)
{
	htab_for_each(&c->by_key, forget_one, c);
	htab_for_each(&c->by_key, relist_one, c);
	c->gen++;
}
