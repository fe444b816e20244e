/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "alloc.h"
#include "handle.h"
#include "inodes.h"
#include "probes.h"
#include "stats.h"
#include "tree.h"

/*
 * Kernel watch life cycle:
 *   attach (new) -> active -> last link detached -> parked -> revived -> ...
 *                                                \-> removed (unmark)
 *   the kernel drops it (IN_IGNORED) at any point -> every link goes.
 * A kernel watch with a link still being attached (inactive) is never freed
 * under that link: the attach finishes or undoes it.
 */

static uint64_t key_hash(const unsigned char *key, size_t len)
{
	return hash_bytes(key, len, 0x6b77);
}

void inodes_init(struct inodes *t, size_t idle_max)
{
	htab_init(&t->by_key);
	list_init(&t->idle);
	t->nparked = 0;
	t->idle_max = idle_max;
	t->nfsmarks = 0;
}

size_t inodes_count(const struct inodes *t)
{
	return t->by_key.count - t->nfsmarks;
}

static struct kwatch *find(const struct inodes *t, const unsigned char *key, size_t len)
{
	struct hnode *n;

	htab_for_each_hash(n, &t->by_key, key_hash(key, len)) {
		struct kwatch *kw = container_of(n, struct kwatch, node);

		if (kw->keylen == len && memcmp(kw->key, key, len) == 0)
			return kw;
	}
	return NULL;
}

static void free_links_of(struct hnode *n, void *arg)
{
	struct kwatch *kw = container_of(n, struct kwatch, node);
	struct list *pos, *tmp;

	(void)arg;
	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);

		strref_put(l->path);
		if (!l->embedded)
			fsnw_free(l);
	}
}

static void free_kwatch(struct hnode *n, void *arg)
{
	(void)arg;
	fsnw_free(container_of(n, struct kwatch, node));
}

void inodes_fini(struct inodes *t)
{
	htab_for_each(&t->by_key, free_links_of, NULL);
	htab_for_each(&t->by_key, free_kwatch, NULL);
	htab_fini(&t->by_key);
	list_init(&t->idle);
	t->nparked = 0;
	t->nfsmarks = 0;
}

static void cover_put(struct fsnw *w, struct kwatch *fs);

static void kwatch_forget(struct fsnw *w, struct kwatch *kw)
{
	struct kwatch *fs = kw->cover;

	htab_remove(&w->inodes.by_key, &kw->node);
	if (kw->parked) {
		list_del(&kw->lru);
		w->inodes.nparked--;
	}
	if (kw->fsmark)
		w->inodes.nfsmarks--;
	fsnw_free(kw);
	if (fs)
		cover_put(w, fs);
}

/* Remove the kernel mark (when it has one of its own) and the kernel watch. */
static void kwatch_remove(struct fsnw *w, struct kwatch *kw)
{
	if (!w->closing && kw->marked) {
		uint64_t t0 = stats_start(w);

		w->be->unmark(w, kw);
		stats_end(w, &w->st.lat_kernel_unmark, t0);
		PROBE2(unmark, kw->wd, kw->kmask);
		w->unread_ignored++;
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
	struct inodes *t = &w->inodes;

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
	w->inodes.nparked--;
	w->st.idle_revives++;
}

/* A kernel watch whose last link is gone: park it, remove it, or (dropped) just free it. */
static void kwatch_unused(struct fsnw *w, struct kwatch *kw, bool park)
{
	if (kw->nlinks || kw->parked)
		return;
	if (kw->dropped)
		kwatch_forget(w, kw);
	else if (park && w->inodes.idle_max)
		kwatch_park(w, kw);
	else
		kwatch_remove(w, kw);
}

static void link_unlink(struct link *l)
{
	list_del(&l->knode);
	list_del(&l->wnode);
	l->kw->nlinks--;
	l->watch->nlinks--;
	strref_put(l->path);
	l->path = NULL;
	if (!l->embedded)
		fsnw_free(l);
}

void inodes_detach(struct fsnw *w, struct link *l, bool park)
{
	struct kwatch *kw = l->kw;

	link_unlink(l);
	kwatch_unused(w, kw, park);
}

void inodes_undo(struct fsnw *w, struct link *l)
{
	struct kwatch *kw = l->kw;
	bool was_parked = l->origin == LINK_REVIVED;

	link_unlink(l);
	if (kw->nlinks || kw->parked)
		return;
	if (!kw->dropped && was_parked && w->inodes.idle_max) {
		/* Back into the cache: the revive it made is taken back. */
		kw->parked = true;
		list_add(&kw->lru, &w->inodes.idle);
		w->inodes.nparked++;
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
	struct kkey again;
	uint64_t t0 = stats_start(w);
	int ret;

	ret = w->be->mark(w, dirfd, path, kw->kmask | kmask, flags & ~FSNW_WATCH_EXCL_UNLINK, 1,
			  &again);
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
	struct kwatch *kw;

	if (!w->be->identify || w->be->identify(w, dirfd, path, flags, key) < 0)
		return false;
	kw = find(&w->inodes, key->bytes, key->len);
	if (!kw || !kw->marked || kw->dropped || (kw->kmask & kmask) != kmask ||
	    ((flags & FSNW_WATCH_ONLYDIR) && (kw->bflags & KKEY_NONDIR)))
		return false;
	key->bflags = kw->bflags;
	return true;
}

int inodes_mark(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		struct kkey *key, uint64_t t0)
{
	int ret;

	if (marked_already(w, dirfd, path, kmask, flags, key))
		return 0;
	for (;;) {
		ret = w->be->mark(w, dirfd, path, kmask, flags, 0, key);
		if (ret != -ENOSPC || !w->inodes.nparked)
			break;
		/* Parked watches count against the kernel's watch limit: give
		 * the oldest back rather than fail the caller. */
		w->st.idle_evictions++;
		kwatch_remove(w, list_last(&w->inodes.idle, struct kwatch, lru));
	}
	stats_end(w, &w->st.lat_kernel_mark, t0);
	PROBE2(mark, ret, kmask);
	return ret;
}

void inodes_unmark_new(struct fsnw *w, const struct kkey *key)
{
	struct kwatch *kw = find(&w->inodes, key->bytes, key->len);
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
	w->be->unmark(w, &tmp.kw);
	w->unread_ignored++;
}

static struct kwatch *kwatch_new(struct fsnw *w, const struct kkey *key, uint32_t flags)
{
	struct kwatch *kw = fsnw_calloc(1, sizeof(*kw) + key->len);

	if (!kw)
		return NULL;
	list_init(&kw->links);
	list_init(&kw->lru);
	kw->wd = key->wd;
	kw->bflags = key->bflags;
	kw->keylen = key->len;
	memcpy(kw->key, key->bytes, key->len);
	kw->excl_unlink = w->be->excl_unlink && (flags & FSNW_WATCH_EXCL_UNLINK);
	htab_insert(&w->inodes.by_key, &kw->node, key_hash(kw->key, kw->keylen));
	return kw;
}

/* A link for lw: its own for a plain watch's first, else allocated. */
static struct link *link_new(struct watch *lw)
{
	struct link *l;

	if (lw->tree || lw->nlinks)
		return fsnw_calloc(1, sizeof(*l));
	l = &lw->own;
	memset(l, 0, sizeof(*l));
	l->embedded = true;
	return l;
}

static void link_free_unused(struct link *l)
{
	if (l && !l->embedded)
		fsnw_free(l);
}

/* Attach lw to kw through l: kw existed before this attach, or was just made. */
static int link_kwatch(struct fsnw *w, struct watch *lw, struct kwatch *kw, bool existed,
		       struct link *l, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		       struct strref *linkpath, struct link **out)
{
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
				 w->be->stable_keys && w->unread_ignored;
	kw->kmask |= kmask;

	l->watch = lw;
	l->kw = kw;
	l->path = strref_get(linkpath);
	l->active = !older_events;
	list_add_tail(&l->knode, &kw->links);
	list_add_tail(&l->wnode, &lw->links);
	kw->nlinks++;
	lw->nlinks++;

	if (older_events && !(w->batch_depth && w->batch_drained)) {
		/* Everything the kernel queued before our mark call predates this
		 * watch: read it now, while the link is not yet live. In a batch
		 * once is enough: what comes later is concurrent with the call. */
		handle_drain(w, DRAIN_COMPLETE);
		if (w->batch_depth)
			w->batch_drained = true;
	}
	if (older_events) {
		if (kw->dropped) {
			/* The object went away during the add. */
			inodes_detach(w, l, false);
			return -ENOENT;
		}
		l->active = true;
	}
	*out = l;
	return 0;
}

int inodes_link(struct fsnw *w, struct watch *lw, const struct kkey *key, int dirfd,
		const char *path, uint32_t kmask, uint32_t flags, struct strref *linkpath,
		struct link **out)
{
	struct link *l = link_new(lw);
	struct kwatch *kw;
	bool existed;

	kw = find(&w->inodes, key->bytes, key->len);
	existed = kw != NULL;
	if (!kw && l && htab_reserve(&w->inodes.by_key, 1) == 0)
		kw = kwatch_new(w, key, flags);
	if (!l || !kw) {
		link_free_unused(l);
		inodes_unmark_new(w, key);
		return -ENOMEM;
	}
	kw->marked = true;
	return link_kwatch(w, lw, kw, existed, l, dirfd, path, kmask, flags, linkpath, out);
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
	struct kwatch *fs = find(&w->inodes, fskey->bytes, fskey->len);
	struct kwatch *kw = find(&w->inodes, key->bytes, key->len);
	struct link *l = link_new(lw);
	bool existed = kw != NULL;

	if (l && htab_reserve(&w->inodes.by_key, 2) == 0) {
		if (!fs && (fs = kwatch_new(w, fskey, 0)) != NULL) {
			fs->fsmark = true;
			fs->marked = true;
			w->inodes.nfsmarks++;
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
			inodes_unmark_new(w, fskey);
		return -ENOMEM;
	}
	if (!kw->cover) {
		kw->cover = fs;
		fs->ncovered++;
	}
	fs->kmask |= kmask;
	return link_kwatch(w, lw, kw, existed, l, dirfd, path, kmask, flags, linkpath, out);
}

int inodes_attach(struct fsnw *w, struct watch *lw, int dirfd, const char *path,
		  uint32_t kmask, uint32_t flags, struct strref *linkpath, struct link **out)
{
	struct kkey key, fskey;
	int ret;

	/* A backend that cannot cover this directory has it marked instead. */
	if ((flags & FSNW_WATCH_TREE) && w->be->cover &&
	    w->be->cover(w, dirfd, path, kmask, flags, &key, &fskey) == 0)
		return link_covered(w, lw, &key, &fskey, dirfd, path, kmask, flags, linkpath, out);
	ret = inodes_mark(w, dirfd, path, kmask, flags, &key, stats_start(w));
	if (ret < 0)
		return ret;
	return inodes_link(w, lw, &key, dirfd, path, kmask, flags, linkpath, out);
}

/*
 * The kernel dropped the mark (IN_IGNORED): every logical watch on it hears.
 * Each active link goes (a tree only loses that directory unless it is the
 * root); a link still being attached stays and its attach fails.
 */
static void kwatch_dropped(struct fsnw *w, struct kwatch *kw)
{
	struct list *pos, *tmp;

	w->st.kernel_drops++;
	kw->dropped = true;
	if (kw->parked) {
		kwatch_forget(w, kw);
		return;
	}
	kw->nlinks++; /* pinned while its links go */
	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);

		if (!l->active)
			continue;
		if (l->watch->tree && !tree_link_dropped(w, l))
			continue;
		handle_watch_gone(w, l->watch);
	}
	kw->nlinks--;
	kwatch_unused(w, kw, false);
}

static void mark_live(struct fsnw *w, const unsigned char *key, size_t len)
{
	struct kwatch *kw = find(&w->inodes, key, len);

	if (kw)
		kw->live_gen = w->inodes.live_gen;
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

void inodes_reconcile(struct fsnw *w)
{
	struct gone g = { NULL, 0 };
	struct kwatch *victims = NULL, *kw;

	if (!w->be->live)
		return;
	g.gen = ++w->inodes.live_gen;
	if (w->be->live(w, mark_live) < 0)
		return;
	htab_for_each(&w->inodes.by_key, collect_gone, &g);
	/* Parked ones have no links: they just go. The others are pinned, so
	 * dropping one (a whole tree, say) frees none still on the list. */
	for (kw = g.victims; kw;) {
		struct kwatch *next = kw->victim;

		if (kw->parked) {
			w->st.kernel_drops++;
			kwatch_forget(w, kw);
		} else {
			kw->nlinks++;
			kw->victim = victims;
			victims = kw;
		}
		kw = next;
	}
	while ((kw = victims)) {
		victims = kw->victim;
		kw->nlinks--;
		kwatch_dropped(w, kw);
	}
}

void inodes_dispatch(struct fsnw *w, const struct kevent *ev)
{
	struct list *pos, *tmp;
	struct kwatch *kw;
	bool heard = false;

	if (ev->mask & FSNW_OVERFLOW) {
		w->st.events_read++;
		w->reconcile = true;
		handle_overflow(w, OVERFLOW_KERNEL);
		return;
	}
	kw = ev->key ? find(&w->inodes, ev->key, ev->keylen) : NULL;
	if (!kw || kw->dropped || kw->fsmark) {
		/* fanotify names every object an event concerns, and a
		 * filesystem mark reports the whole filesystem: a key we do
		 * not watch is no late event of ours. */
		if (ev->flags & KEVENT_OPTIONAL)
			return;
		w->st.events_read++;
		w->st.dropped_stale++;
		return;
	}
	w->st.events_read++;
	if (ev->mask & FSNW_IGNORED) {
		kwatch_dropped(w, kw);
		return;
	}
	/* Pinned: a oneshot watch may detach the last link while we walk. */
	kw->nlinks++;
	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);
		struct watch *lw = l->watch;
		uint32_t mask, wanted;

		if (!l->active)
			continue;
		heard = true;
		if (lw->tree && w->walk_open && tree_walk_echo(w, l, ev)) {
			w->st.dropped_walk++;
			continue;
		}
		mask = ev->mask & (lw->mask | FSNW_ISDIR | FSNW_UNMOUNT);
		wanted = mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT);
		if (wanted && queue_push(w->q, &lw->qo, l->path, mask, ev->cookie, ev->name,
					 ev->namelen, 0) == QUEUE_MERGED)
			PROBE2(merge, lw->qo.wid, mask);
		/* After the push: the event reports the path it happened at, and a
		 * tree may now rename or drop l. */
		if (lw->tree)
			tree_note_event(w, l, ev);
		/* A oneshot watch has a single link: l goes, tmp stays valid. */
		else if (wanted && (lw->flags & FSNW_WATCH_ONESHOT))
			handle_watch_gone(w, lw);
	}
	kw->nlinks--;
	if (!heard)
		w->st.dropped_parked++;
	kwatch_unused(w, kw, true);
}
