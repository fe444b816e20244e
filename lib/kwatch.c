/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "handle.h"
#include "kwatch.h"
#include "mem.h"
#include "probes.h"
#include "stats.h"

/* A wd is its own good hash input; handles are hashed whole. */
static uint64_t key_hash(const unsigned char *key, size_t len)
{
	if (len == sizeof(int)) {
		int wd;

		memcpy(&wd, key, sizeof(wd));
		return hash_u64((uint64_t)(unsigned)wd);
	}
	return hash_bytes(key, len, 0x6b77);
}

void kwatch_table_init(struct kwatches *t, size_t idle_max)
{
	memset(t, 0, sizeof(*t));
	htab_init(&t->by_key);
	list_init(&t->idle);
	list_init(&t->pending);
	t->idle_max = idle_max;
}

size_t kwatch_count(const struct kwatches *t)
{
	return t->by_key.count - t->nfsmarks;
}

struct kwatch *kwatch_find(const struct kwatches *t, const unsigned char *key, size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &t->by_key, key_hash(key, len)) {
		struct kwatch *kw = container_of(n, struct kwatch, node);

		if (kw->keylen == len && memcmp(kw->key, key, len) == 0)
			return kw;
	}
	return NULL;
}

static void link_free(struct link *l)
{
	strref_put(l->path);
	l->path = NULL;
	if (!l->embedded)
		mem_free(l);
}

static void free_kwatch(struct hnode *n, void *arg)
{
	struct kwatch *kw = container_of(n, struct kwatch, node);
	struct list *pos, *tmp;

	(void)arg;
	list_for_each_safe(pos, tmp, &kw->links)
		link_free(list_entry(pos, struct link, knode));
	mem_free(kw);
}

void kwatch_table_fini(struct kwatches *t)
{
	htab_for_each(&t->by_key, free_kwatch, NULL);
	htab_fini(&t->by_key);
	kwatch_table_init(t, 0);
}

static void cover_put(struct fsnw *w, struct kwatch *fs);

static void kwatch_forget(struct fsnw *w, struct kwatch *kw)
{
	struct kwatches *t = &w->kwatches;
	struct kwatch *fs = kw->cover;

	assert(!kw->nlinks && !kw->pins);
	htab_remove(&t->by_key, &kw->node);
	if (kw->parked) {
		list_del(&kw->lru);
		t->nparked--;
	}
	if (kw->fsmark)
		t->nfsmarks--;
	mem_free(kw);
	if (fs)
		cover_put(w, fs);
}

/* Remove the kernel mark (when it has one of its own) and the kernel watch. */
static void kwatch_remove(struct fsnw *w, struct kwatch *kw)
{
	if (kw->marked) {
		uint64_t t0 = stats_start(w);

		struct sys_tally tally = { 0 };

		/* A failure leaves a mark the kernel will drop at close; the
		 * table must forget the watch either way. */
		(void)w->be->unmark(w, kw, &tally);
		sys_tally_fold(w, &tally);
		stats_end(w, &w->st.lat_kernel_unmark, t0);
		PROBE2(unmark, kw->wd, kw->kmask);
		w->kwatches.unmarks++;
	}
	kwatch_forget(w, kw);
}

/* A covered kernel watch went: the last one takes the filesystem mark along. */
static void cover_put(struct fsnw *w, struct kwatch *fs)
{
	if (--fs->ncovered == 0)
		kwatch_remove(w, fs);
}

static void kwatch_park(struct fsnw *w, struct kwatch *kw)
{
	struct kwatches *t = &w->kwatches;

	kw->parked = true;
	list_add(&kw->lru, &t->idle);
	t->nparked++;
	w->st.idle_parks++;
	if (t->nparked > t->idle_max) {
		struct kwatch *old = list_last(&t->idle, struct kwatch, lru);

		w->st.idle_evictions++;
		kwatch_remove(w, old);
	}
}

static void kwatch_revive(struct fsnw *w, struct kwatch *kw)
{
	list_del(&kw->lru);
	kw->parked = false;
	w->kwatches.nparked--;
	w->st.idle_revives++;
}

/* A kernel watch nobody uses: park it, remove it, or (dropped) just free it. */
static void kwatch_unused(struct fsnw *w, struct kwatch *kw, bool park)
{
	if (kw->nlinks || kw->pins || kw->parked)
		return;
	if (kw->dropped)
		kwatch_forget(w, kw);
	else if (park && w->kwatches.idle_max)
		kwatch_park(w, kw);
	else
		kwatch_remove(w, kw);
}

void kwatch_unpin(struct fsnw *w, struct kwatch *kw, bool park)
{
	assert(kw->pins > 0);
	kw->pins--;
	kwatch_unused(w, kw, park);
}

static void link_unlink(struct fsnw *w, struct link *l)
{
	if (!l->active) {
		/* Pending: on the table's pending list unless popped already. */
		if (l->pnode.next != &l->pnode) {
			list_del(&l->pnode);
			w->kwatches.npending--;
		}
	}
	list_del(&l->knode);
	list_del(&l->wnode);
	l->kw->nlinks--;
	l->watch->nlinks--;
	link_free(l);
}

void kwatch_detach(struct fsnw *w, struct link *l, bool park)
{
	struct kwatch *kw = l->kw;

	link_unlink(w, l);
	kwatch_unused(w, kw, park);
}

void kwatch_undo(struct fsnw *w, struct link *l)
{
	struct kwatches *t = &w->kwatches;
	struct kwatch *kw = l->kw;
	bool was_parked = l->origin == LINK_REVIVED;

	link_unlink(w, l);
	if (kw->nlinks || kw->pins || kw->parked)
		return;
	if (!kw->dropped && was_parked && t->idle_max) {
		/* Back into the cache: the revive it made is taken back. */
		kw->parked = true;
		list_add(&kw->lru, &t->idle);
		t->nparked++;
		return;
	}
	kwatch_unused(w, kw, false);
}

/*
 * An existing kernel watch joined by a watch that does not want
 * IN_EXCL_UNLINK must lose the flag, which only a replacing add can do.
 */
static void clear_excl_unlink(struct fsnw *w, struct kwatch *kw, int dirfd, const char *path,
			      uint32_t kmask, uint32_t flags)
{
	struct sys_tally tally = { 0 };
	struct kkey again;
	uint64_t t0 = stats_start(w);
	int ret;

	ret = w->be->mark(w, dirfd, path, kw->kmask | kmask, flags & ~FSNW_WATCH_EXCL_UNLINK, 1,
			  &again, &tally);
	sys_tally_fold(w, &tally);
	stats_end(w, &w->st.lat_kernel_mark, t0);
	/* If the path moved to another object meanwhile, the flag stays: the
	 * cost is events from unlinked children, never a lost event. */
	if (ret == 0 && again.len == kw->keylen && memcmp(again.bytes, kw->key, kw->keylen) == 0)
		kw->excl_unlink = false;
}

/*
 * Where a key can be learnt without a mark (fanotify: a file handle), an
 * object we mark already for all of kmask needs no kernel call: a shared or
 * parked watch then costs one lookup, as inotify's one add_watch.
 */
static bool marked_already(struct fsnw *w, int dirfd, const char *path, uint32_t kmask,
			   uint32_t flags, struct kkey *key)
{
	struct sys_tally tally = { 0 };
	struct kwatch *kw;
	int ret;

	if (!w->be->identify)
		return false;
	ret = w->be->identify(w, dirfd, path, flags, key, &tally);
	sys_tally_fold(w, &tally);
	if (ret < 0)
		return false;
	kw = kwatch_find(&w->kwatches, key->bytes, key->len);
	if (!kw || !kw->marked || kw->dropped || (kw->kmask & kmask) != kmask ||
	    ((flags & FSNW_WATCH_ONLYDIR) && (kw->bflags & KKEY_NONDIR)))
		return false;
	key->bflags = kw->bflags;
	return true;
}

int kwatch_mark(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		struct kkey *key, uint64_t t0)
{
	struct kwatches *t = &w->kwatches;
	int ret;

	if (marked_already(w, dirfd, path, kmask, flags, key))
		return 0;
	for (;;) {
		struct sys_tally tally = { 0 };

		ret = w->be->mark(w, dirfd, path, kmask, flags, 0, key, &tally);
		sys_tally_fold(w, &tally);
		if (ret != -ENOSPC || !t->nparked)
			break;
		/* Parked watches count against the kernel's watch limit: give
		 * the oldest back rather than fail the caller. */
		w->st.idle_evictions++;
		kwatch_remove(w, list_last(&t->idle, struct kwatch, lru));
	}
	stats_end(w, &w->st.lat_kernel_mark, t0);
	PROBE2(mark, ret, kmask);
	return ret;
}

void kwatch_unmark_new(struct fsnw *w, const struct kkey *key)
{
	struct kwatch *kw = kwatch_find(&w->kwatches, key->bytes, key->len);
	struct sys_tally tally = { 0 };
	union {
		struct kwatch kw;
		unsigned char bytes[sizeof(struct kwatch) + KKEY_MAX];
	} tmp;

	/* A mark on an object we already mark is somebody's: leave it. (A
	 * covered directory had none: this one is new.) */
	if (kw && kw->marked)
		return;
	memset(&tmp, 0, sizeof(tmp));
	tmp.kw.wd = key->wd;
	tmp.kw.bflags = key->bflags;
	tmp.kw.keylen = key->len;
	memcpy(tmp.kw.key, key->bytes, key->len);
	/* Failing, it leaves a mark nothing links to; the kernel drops it at
	 * close, and its events are dropped as stale meanwhile. */
	(void)w->be->unmark(w, &tmp.kw, &tally);
	sys_tally_fold(w, &tally);
	w->kwatches.unmarks++;
}

/* A new kernel watch in the table; the caller has reserved room. */
static struct kwatch *kwatch_new(struct fsnw *w, const struct kkey *key, uint32_t flags)
{
	struct kwatch *kw = mem_zalloc(sizeof(*kw) + key->len);

	if (!kw)
		return NULL;
	list_init(&kw->links);
	list_init(&kw->lru);
	kw->wd = key->wd;
	kw->bflags = key->bflags;
	kw->keylen = key->len;
	memcpy(kw->key, key->bytes, key->len);
	kw->excl_unlink = w->be->excl_unlink && (flags & FSNW_WATCH_EXCL_UNLINK);
	htab_insert(&w->kwatches.by_key, &kw->node, key_hash(kw->key, kw->keylen));
	return kw;
}

/* A link for lw: its own for a plain watch's first, else allocated. */
static struct link *link_new(struct watch *lw)
{
	struct link *l;

	if (lw->tree || lw->nlinks)
		return mem_zalloc(sizeof(*l));
	l = &lw->own;
	memset(l, 0, sizeof(*l));
	l->embedded = true;
	return l;
}

static void link_free_unused(struct link *l)
{
	if (l && !l->embedded)
		mem_free(l);
}

/* Attach lw to kw through l: kw existed before this attach, or was just made. */
static void link_kwatch(struct fsnw *w, struct watch *lw, struct kwatch *kw, bool existed,
			struct link *l, int dirfd, const char *path, uint32_t kmask,
			uint32_t flags, struct strref *linkpath)
{
	struct kwatches *t = &w->kwatches;
	bool older_events;

	if (!existed) {
		l->origin = LINK_NEW;
	} else if (kw->parked) {
		kwatch_revive(w, kw);
		l->origin = LINK_REVIVED;
	} else {
		w->st.dedup_hits++;
		l->origin = LINK_SHARED;
	}
	/* The kernel keeps one IN_EXCL_UNLINK per inode, and an adding mark can
	 * only set it. When this watch and the kernel watch disagree the inode
	 * goes without: a watch that wanted it sees extra events, where the
	 * other way round a watch would lose some. */
	if (existed && w->be->excl_unlink &&
	    kw->excl_unlink != ((flags & FSNW_WATCH_EXCL_UNLINK) != 0))
		clear_excl_unlink(w, kw, dirfd, path, kmask, flags);
	/* Events still unread in the kernel were asked for by the mask the
	 * kernel watch had before this add: only if it shares a bit with the
	 * new watch's can one of them reach it. Where keys recur (fanotify), a
	 * new kernel watch may find events queued for a removed one of the
	 * same object, whose mask is not known any more. */
	older_events = existed ? (kw->kmask & kmask & FSNW_ALL_EVENTS) != 0 :
				 w->be->stable_keys && kwatch_unread_unmarks(t);
	kw->kmask |= kmask;

	l->watch = lw;
	l->kw = kw;
	l->path = strref_get(linkpath);
	l->active = !older_events;
	list_init(&l->pnode);
	if (older_events) {
		list_add_tail(&l->pnode, &t->pending);
		t->npending++;
	}
	list_add_tail(&l->knode, &kw->links);
	list_add_tail(&l->wnode, &lw->links);
	kw->nlinks++;
	lw->nlinks++;
}

int kwatch_link(struct fsnw *w, struct watch *lw, const struct kkey *key, int dirfd,
		const char *path, uint32_t kmask, uint32_t flags, struct strref *linkpath,
		struct link **out)
{
	struct link *l = link_new(lw);
	struct kwatch *kw;
	bool existed;

	kw = kwatch_find(&w->kwatches, key->bytes, key->len);
	existed = kw != NULL;
	if (!kw && l && htab_reserve(&w->kwatches.by_key, 1) == 0)
		kw = kwatch_new(w, key, flags);
	if (!l || !kw) {
		link_free_unused(l);
		kwatch_unmark_new(w, key);
		return -ENOMEM;
	}
	kw->marked = true;
	link_kwatch(w, lw, kw, existed, l, dirfd, path, kmask, flags, linkpath);
	*out = l;
	return 0;
}

/*
 * A tree directory covered by its filesystem's mark (key names the
 * directory, fskey the mark, which the backend has made or widened): no
 * kernel mark of its own, a pin on the filesystem's kernel watch instead.
 */
static int link_covered(struct fsnw *w, struct watch *lw, const struct kkey *key,
			const struct kkey *fskey, int dirfd, const char *path, uint32_t kmask,
			uint32_t flags, struct strref *linkpath, struct link **out)
{
	struct kwatches *t = &w->kwatches;
	struct kwatch *fs = kwatch_find(t, fskey->bytes, fskey->len);
	struct kwatch *kw = kwatch_find(t, key->bytes, key->len);
	struct link *l = link_new(lw);
	bool existed = kw != NULL;

	if (l && htab_reserve(&t->by_key, 2) == 0) {
		if (!fs && (fs = kwatch_new(w, fskey, 0)) != NULL) {
			fs->fsmark = true;
			fs->marked = true;
			t->nfsmarks++;
		}
		if (fs && !kw)
			kw = kwatch_new(w, key, 0);
	}
	if (!l || !kw) {
		link_free_unused(l);
		/* A filesystem kernel watch covers something, or goes. */
		if (fs && !fs->ncovered)
			kwatch_remove(w, fs);
		else if (!fs)
			kwatch_unmark_new(w, fskey);
		return -ENOMEM;
	}
	if (!kw->cover) {
		if (fs->parked) /* a tree's hold parked it (kwatch_fs_release) */
			kwatch_revive(w, fs);
		kw->cover = fs;
		fs->ncovered++;
	}
	fs->kmask |= kmask;
	link_kwatch(w, lw, kw, existed, l, dirfd, path, kmask, flags, linkpath);
	*out = l;
	return 0;
}

int kwatch_attach(struct fsnw *w, struct watch *lw, int dirfd, const char *path,
		  uint32_t kmask, uint32_t flags, struct strref *linkpath, struct link **out)
{
	struct kkey key, fskey;
	int ret;

	/* A backend that cannot cover this directory has it marked instead. */
	if ((flags & FSNW_WATCH_TREE) && w->be->cover) {
		struct sys_tally tally = { 0 };

		ret = w->be->cover(w, dirfd, path, kmask, flags, &key, &fskey, &tally);
		sys_tally_fold(w, &tally);
		if (ret == 0)
			return link_covered(w, lw, &key, &fskey, dirfd, path, kmask, flags,
					    linkpath, out);
	}
	ret = kwatch_mark(w, dirfd, path, kmask, flags, &key, stats_start(w));
	if (ret < 0)
		return ret;
	return kwatch_link(w, lw, &key, dirfd, path, kmask, flags, linkpath, out);
}

int kwatch_fs_hold(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		   struct kkey *key, struct kwatch **out, bool *older)
{
	struct kwatches *t = &w->kwatches;
	struct sys_tally tally = { 0 };
	struct kkey fskey;
	struct kwatch *fs;
	int ret;

	if (!w->be->cover)
		return -EOPNOTSUPP;
	ret = w->be->cover(w, dirfd, path, kmask, flags | FSNW_WATCH_ONLYDIR, key, &fskey,
			   &tally);
	sys_tally_fold(w, &tally);
	if (ret < 0)
		return ret;
	fs = kwatch_find(t, fskey.bytes, fskey.len);
	if (fs) {
		*older = (fs->kmask & kmask & FSNW_ALL_EVENTS) != 0;
		if (fs->parked)
			kwatch_revive(w, fs);
	} else {
		*older = w->be->stable_keys && kwatch_unread_unmarks(t);
		if (htab_reserve(&t->by_key, 1) < 0 || !(fs = kwatch_new(w, &fskey, 0))) {
			kwatch_unmark_new(w, &fskey);
			return -ENOMEM;
		}
		fs->fsmark = true;
		fs->marked = true;
		t->nfsmarks++;
	}
	fs->kmask |= kmask;
	fs->ncovered++;
	*out = fs;
	return 0;
}

void kwatch_fs_release(struct fsnw *w, struct kwatch *fs, bool park)
{
	if (--fs->ncovered == 0)
		kwatch_unused(w, fs, park);
}

struct link *kwatch_pop_pending(struct kwatches *t)
{
	struct link *l;

	if (list_empty(&t->pending))
		return NULL;
	l = list_first(&t->pending, struct link, pnode);
	list_del(&l->pnode);
	t->npending--;
	return l;
}

bool kwatch_dropped(struct fsnw *w, struct kwatch *kw)
{
	w->st.kernel_drops++;
	kw->dropped = true;
	if (kw->parked) {
		kwatch_forget(w, kw);
		return false;
	}
	kwatch_pin(kw);
	return true;
}

static void mark_live(struct fsnw *w, const unsigned char *key, size_t len)
{
	struct kwatch *kw = kwatch_find(&w->kwatches, key, len);

	if (kw)
		kw->live_gen = w->kwatches.live_gen;
}

struct gone {
	struct kwatch *victims;
	uint32_t gen;
};

static void collect_gone(struct hnode *n, void *arg)
{
	struct kwatch *kw = container_of(n, struct kwatch, node);
	struct gone *g = arg;

	if (kw->dropped || kw->wd < 0 || kw->live_gen == g->gen)
		return;
	kw->victim = g->victims;
	g->victims = kw;
}

struct kwatch *kwatch_reconcile(struct fsnw *w)
{
	struct gone g = { NULL, 0 };
	struct kwatch *victims = NULL, *kw;

	if (!w->be->live)
		return NULL;
	g.gen = ++w->kwatches.live_gen;
	if (w->be->live(w, mark_live) < 0)
		return NULL;
	/* Collected first: freeing while the table is walked is not allowed. */
	htab_for_each(&w->kwatches.by_key, collect_gone, &g);
	for (kw = g.victims; kw;) {
		struct kwatch *next = kw->victim;

		if (kwatch_dropped(w, kw)) {
			kw->victim = victims;
			victims = kw;
		}
		kw = next;
	}
	return victims;
}
