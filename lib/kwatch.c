/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "compiler.h"
#include "handle.h"
#include "kwatch.h"
#include "mem.h"
#include "probes.h"
#include "stats.h"
#include "sys.h"

/* A mark whose key may be dead is made again; a storm of drops cannot keep
 * an add here for ever. */
#define MARK_TRIES 8
/* Unmarks made per dropping of the lock; the rest wait for the next round. */
#define FLUSH_BATCH 64
_Static_assert(KWATCH_DROPS_KEPT >= FLUSH_BATCH, "a flush's drops must fit in drop_hash");

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
	keytab_init(&t->by_key);
	list_init(&t->idle);
	list_init(&t->doomed);
	list_init(&t->pending);
	mem_cache_init(&t->kw_cache, offsetof(struct kwatch, key) + KWATCH_CACHED_KEY);
	mem_cache_init(&t->link_cache, sizeof(struct link));
	t->idle_max = idle_max;
}

size_t kwatch_count(const struct kwatches *t)
{
	return t->by_key.count - t->nfsmarks;
}

struct kwatch *kwatch_find(const struct kwatches *t, const unsigned char *key, size_t len)
{
	uint32_t tag = kwatch_tag(key, len);
	struct kwatch *kw;
	size_t pos;

	keytab_for_each_tag(kw, pos, &t->by_key, tag)
		if (kwatch_key_is(kw, key, len))
			return kw;
	return NULL;
}

struct kwatch *kwatch_find_cold(struct kwatches *t, const unsigned char *key, size_t len)
{
	struct kwatch *kw = kwatch_find(t, key, len);

	if (kw)
		t->hot = kw;
	return kw;
}

static void link_free(struct kwatches *t, struct link *l)
{
	if (!l->embedded)
		mem_cache_free(&t->link_cache, l);
}

static void kwatch_free(struct kwatches *t, struct kwatch *kw)
{
	if (kw->keylen > KWATCH_CACHED_KEY)
		mem_free(kw);
	else
		mem_cache_free(&t->kw_cache, kw);
}

static void free_kwatch(void *val, void *arg)
{
	struct kwatches *t = arg;
	struct kwatch *kw = val;
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, &kw->links)
		link_free(t, list_entry(pos, struct link, knode));
	kwatch_free(t, kw);
}

void kwatch_table_fini(struct kwatches *t)
{
	keytab_for_each(&t->by_key, free_kwatch, t);
	keytab_fini(&t->by_key);
	mem_cache_fini(&t->kw_cache);
	mem_cache_fini(&t->link_cache);
	kwatch_table_init(t, 0);
}

/* ----- the lock around kernel calls ----- */

/* Drop the handle's lock for a kernel call, unless a tree walk holds it.
 * Returns whether it was dropped, for relock. */
static bool unlock_for_call(struct fsnw *w)
{
	if (w->kwatches.hold_lock)
		return false;
	lock_give(&w->lock);
	return true;
}

static void relock(struct fsnw *w, bool dropped)
{
	if (dropped)
		lock_take(&w->lock);
}

static int mark_call(struct fsnw *w, int dirfd, const char *path, uint32_t kmask,
		     uint32_t flags, int replace, struct kkey *key)
{
	struct sys_tally tally = { 0 };
	bool dropped = unlock_for_call(w);
	int ret = w->be->mark(w, dirfd, path, kmask, flags, replace, key, &tally);

	relock(w, dropped);
	sys_tally_fold(w, &tally);
	return ret;
}

/* ----- states ----- */

static void cover_put(struct fsnw *w, struct kwatch *fs);

/* Records of small keys (inotify's wd) come from the table's cache, so that
 * add/remove churn on new objects costs no malloc. */
static struct kwatch *kwatch_alloc(struct kwatches *t, size_t keylen)
{
	if (keylen > KWATCH_CACHED_KEY)
		return mem_zalloc(kwatch_fs_offset(keylen) + sizeof(struct kwatch_fs));
	return mem_cache_zalloc(&t->kw_cache, offsetof(struct kwatch, key));
}

int kwatch_reserve(struct kwatches *t, size_t n, size_t keylen)
{
	int ret = keytab_reserve(&t->by_key, n);

	if (ret == 0 && keylen && keylen <= KWATCH_CACHED_KEY)
		ret = mem_cache_reserve(&t->kw_cache, n);
	return ret;
}

/* Out of the table and freed. */
static void kwatch_forget(struct fsnw *w, struct kwatch *kw)
{
	struct kwatches *t = &w->kwatches;
	struct kwatch *fs = kwatch_cover(kw);

	assert(!kw->nlinks && !kw->pins);
	if (t->hot == kw)
		t->hot = NULL;
	keytab_remove(&t->by_key, kwatch_tag(kw->key, kw->keylen), kw);
	kwatch_changed(t);
	if (kw->state == KW_PARKED) {
		list_del(&kw->lru);
		t->nparked--;
	} else if (kw->state == KW_DOOMED) {
		list_del(&kw->lru);
	}
	if (kw->fsmark)
		t->nfsmarks--;
	kwatch_free(t, kw);
	if (fs)
		cover_put(w, fs);
}

/* Out of the idle cache or off the doomed list: in use again. */
static void kwatch_take_back(struct fsnw *w, struct kwatch *kw)
{
	if (kw->state == KW_PARKED) {
		list_del(&kw->lru);
		w->kwatches.nparked--;
	} else if (kw->state == KW_DOOMED) {
		list_del(&kw->lru);
	}
	kw->state = KW_LIVE;
}

/* A filesystem mark parked or doomed, held again: as a revive of a parked
 * watch, it counts. */
static void fs_take_back(struct fsnw *w, struct kwatch *fs)
{
	if (fs->state == KW_PARKED)
		w->st.idle_revives++;
	kwatch_take_back(w, fs);
}

/* Remove the kernel watch: its mark (when it has one of its own) goes at
 * the next flush; a covered directory just goes. */
static void kwatch_doom(struct fsnw *w, struct kwatch *kw)
{
	if (kw->state == KW_PARKED)
		kwatch_take_back(w, kw);
	if (!kw->marked) {
		kwatch_forget(w, kw);
		return;
	}
	kw->state = KW_DOOMED;
	list_add_tail(&kw->lru, &w->kwatches.doomed);
}

/* A covered kernel watch went: the last one takes the filesystem mark along. */
static void cover_put(struct fsnw *w, struct kwatch *fs)
{
	if (--kwatch_fs_of(fs)->ncovered == 0)
		kwatch_doom(w, fs);
}

static void kwatch_park(struct fsnw *w, struct kwatch *kw)
{
	struct kwatches *t = &w->kwatches;

	kw->state = KW_PARKED;
	list_add(&kw->lru, &t->idle);
	t->nparked++;
	w->st.idle_parks++;
	if (t->nparked > t->idle_max) {
		struct kwatch *old = list_last(&t->idle, struct kwatch, lru);

		w->st.idle_evictions++;
		kwatch_doom(w, old);
	}
}

/* A kernel watch nobody uses: park it, doom it, or (dropped) just free it. */
static void kwatch_unused(struct fsnw *w, struct kwatch *kw, bool park)
{
	if (kw->nlinks || kw->pins || kw->state != KW_LIVE)
		return;
	if (kw->dropped)
		kwatch_forget(w, kw);
	else if (park && w->kwatches.idle_max)
		kwatch_park(w, kw);
	else
		kwatch_doom(w, kw);
}

void kwatch_unpin(struct fsnw *w, struct kwatch *kw, bool park)
{
	assert(kw->pins > 0);
	kw->pins--;
	kwatch_unused(w, kw, park);
}

/*
 * Unmark up to FLUSH_BATCH doomed kernel watches in one dropping of the
 * lock. Each unmark's time ends with a clock read that starts the next
 * one's; the first starts at t0 when it is given (kwatch_flush_after).
 */
static void flush_some(struct fsnw *w, uint64_t t0)
{
	struct kwatches *t = &w->kwatches;
	struct kwatch *batch[FLUSH_BATCH];
	uint64_t took[FLUSH_BATCH];
	struct sys_tally tally = { 0 };
	size_t n = 0;
	bool dropped;

	while (n < FLUSH_BATCH && !list_empty(&t->doomed)) {
		struct kwatch *kw = list_first(&t->doomed, struct kwatch, lru);

		list_del(&kw->lru);
		kw->state = KW_UNMARKING;
		atomic_store_explicit(&kw->unmark_done, false, memory_order_relaxed);
		kw->pins++; /* ours until the call is over */
		batch[n++] = kw;
	}
	dropped = unlock_for_call(w);
	if (!t0)
		t0 = stats_start(w);
	for (size_t i = 0; i < n; i++) {
		uint64_t t1;

		/* A failure leaves a mark the kernel drops at close, whose
		 * events are dropped as stale meanwhile; the table forgets
		 * the watch either way. */
		(void)w->be->unmark(w, batch[i], &tally);
		t1 = t0 ? stats_ticks(w) : 0;
		took[i] = t1 - t0;
		t0 = t1;
		atomic_store_explicit(&batch[i]->unmark_done, true, memory_order_release);
	}
	relock(w, dropped);
	sys_tally_fold(w, &tally);
	t->unmarks += n;
	for (size_t i = 0; i < n; i++) {
		struct kwatch *kw = batch[i];

		if (took[i])
			stats_hist_add(stats_lat(w, LAT_KERNEL_UNMARK),
				       stats_ticks_to_ns(w, took[i]));
		PROBE2(unmark, kwatch_wd(kw), kw->kmask);
		kw->pins--;
		/* An add took the record over with a new mark: it lives on.
		 * Otherwise it goes, and a mark some add made meanwhile may
		 * have landed on it: that add checks (drop_gen). */
		if (kw->state == KW_UNMARKING) {
			kwatch_note_drop(t, kw->key, kw->keylen);
			kwatch_forget(w, kw);
		} else
			kwatch_unused(w, kw, true);
	}
}

void kwatch_flush(struct fsnw *w)
{
	uint64_t t0 = w->kwatches.flush_t0;

	/* The tick is this entry point's: never one a later flush could
	 * start from. */
	w->kwatches.flush_t0 = 0;
	while (!list_empty(&w->kwatches.doomed)) {
		flush_some(w, t0);
		t0 = 0;
	}
}

/*
 * A mark of ours returned the key of a record whose unmark runs now: the
 * mark may have landed on the one being removed. Wait until the unmark has
 * returned (the lock dropped meanwhile where allowed: the record may then
 * be freed, so it is looked up again). Returns the serial of the record
 * seen finished, or 0 if it went: a mark made after this returns is new,
 * and may take that record over.
 */
FSNW_COLD static uint32_t wait_unmarked(struct fsnw *w, const struct kkey *key)
{
	for (;;) {
		struct kwatch *kw = kwatch_find(&w->kwatches, key->bytes, key->len);
		bool dropped;

		if (!kw || kw->state != KW_UNMARKING)
			return 0;
		if (atomic_load_explicit(&kw->unmark_done, memory_order_acquire))
			return kw->serial;
		dropped = unlock_for_call(w);
		sys_yield();
		relock(w, dropped);
	}
}

/*
 * Whether a mark that returned key may stand: the record of key, if any, is
 * not an unmark in progress unless one we saw finish before the mark began
 * (*waited), which the link then takes over. Otherwise waits, and the
 * caller marks again.
 */
static bool mark_stands(struct fsnw *w, const struct kkey *key, uint32_t *waited,
			struct kwatch **found)
{
	/* Hot: a shared add looks its kernel watch up here and again when it
	 * links (kwatch_link), and the next add is often onto the same. */
	struct kwatch *kw = kwatch_find_hot(&w->kwatches, key->bytes, key->len);

	*found = kw;
	if (!kw || kw->state != KW_UNMARKING || (*waited && kw->serial == *waited))
		return true;
	*waited = wait_unmarked(w, key);
	return false;
}

/* ----- marking ----- */

/*
 * Where a key can be learnt without a mark (fanotify: a file handle), an
 * object we mark already for all of kmask needs no kernel call: a shared or
 * parked watch then costs one lookup, as inotify's one add_watch.
 */
FSNW_NOINLINE static bool marked_already(struct fsnw *w, int dirfd, const char *path,
					 uint32_t kmask, uint32_t flags, struct kkey *key)
{
	struct sys_tally tally = { 0 };
	struct kwatch *kw;
	bool dropped;
	int ret;

	dropped = unlock_for_call(w);
	ret = w->be->identify(w, dirfd, path, flags, key, &tally);
	relock(w, dropped);
	sys_tally_fold(w, &tally);
	if (ret < 0)
		return false;
	kw = kwatch_find(&w->kwatches, key->bytes, key->len);
	if (!kw || !kw->marked || kw->dropped || kw->state == KW_UNMARKING ||
	    (kw->kmask & kmask) != kmask ||
	    ((flags & FSNW_WATCH_ONLYDIR) && (kw->bflags & KKEY_NONDIR)))
		return false;
	key->bflags = kw->bflags;
	return true;
}

/* Make room under the kernel's watch limit: give back the oldest parked watch. */
FSNW_COLD static bool evict_one(struct fsnw *w)
{
	struct kwatches *t = &w->kwatches;

	if (!t->nparked)
		return false;
	w->st.idle_evictions++;
	kwatch_doom(w, list_last(&t->idle, struct kwatch, lru));
	kwatch_flush(w);
	return true;
}

void kwatch_note_drop(struct kwatches *t, const unsigned char *key, size_t len)
{
	uint64_t gen = t->drop_gen + 1;

	t->drop_hash[gen % KWATCH_DROPS_KEPT] = key_hash(key, len);
	__atomic_store_n(&t->drop_gen, gen, __ATOMIC_RELEASE);
}

/* Whether the kernel may have dropped the mark of key since drop_gen was gen
 * (a hash collision only makes the add mark once more). */
static bool dropped_since(const struct kwatches *t, uint64_t gen, const struct kkey *key)
{
	uint64_t h;

	if (t->drop_gen == gen)
		return false;
	if (t->drop_gen - gen > KWATCH_DROPS_KEPT)
		return true;
	h = key_hash(key->bytes, key->len);
	for (uint64_t g = gen + 1; g <= t->drop_gen; g++)
		if (t->drop_hash[g % KWATCH_DROPS_KEPT] == h)
			return true;
	return false;
}

bool kwatch_marks_early(const struct fsnw *w)
{
	/* A backend that learns a key without a mark looks it up first,
	 * under the lock. */
	return !w->be->identify;
}

void kwatch_mark_early(struct fsnw *w, const char *path, uint32_t kmask, uint32_t flags,
		       struct kmark_call *mc)
{
	mc->made = false;
	/* A tree walk's marks keep the lock (hold_lock). */
	if (!kwatch_marks_early(w) || (flags & FSNW_WATCH_TREE))
		return;
	/* What is read here is set at open, but for drop_gen, which is read
	 * before the call as kwatch_mark reads it (a drop noted after this
	 * read may be of the new mark: the mark is checked). */
	mc->t0 = stats_start(w);
	mc->gen = __atomic_load_n(&w->kwatches.drop_gen, __ATOMIC_ACQUIRE);
	mc->key.bflags = 0;
	mc->tally = (struct sys_tally){ 0 };
	mc->ret = w->be->mark(w, AT_FDCWD, path, kmask, flags, 0, &mc->key, &mc->tally);
	/* The call is timed by reads at its two ends, whatever the caller
	 * does before it takes the lock (a batch makes more calls). */
	mc->t1 = mc->t0 ? stats_ticks(w) : 0;
	mc->made = true;
}

void kwatch_mark_early_stale(struct fsnw *w, struct kmark_call *mc)
{
	if (!mc->made)
		return;
	sys_tally_fold(w, &mc->tally);
	mc->made = false;
}

/* A mark call: the early one's result the first time, else one made now;
 * *gen gets drop_gen as it was before the call. */
static int next_call(struct fsnw *w, int dirfd, const char *path, uint32_t kmask,
		     uint32_t flags, struct kmark_call *mc, uint64_t *gen)
{
	if (mc->made) {
		mc->made = false;
		sys_tally_fold(w, &mc->tally);
		*gen = mc->gen;
		return mc->ret;
	}
	*gen = w->kwatches.drop_gen;
	return mark_call(w, dirfd, path, kmask, flags, 0, &mc->key);
}

int kwatch_mark(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		struct kmark_call *mc)
{
	struct kwatches *t = &w->kwatches;
	struct kkey *key = &mc->key;
	/* Where the early call stands, its time ends where the call did. */
	uint64_t early_end = mc->made ? mc->t1 : 0;
	uint32_t waited = 0;
	int ret, tries = 0;

	mc->t1 = 0;
	if (!mc->made) {
		/* The backend's notes start empty: identify may leave one for mark. */
		key->bflags = 0;
		if (w->be->identify && marked_already(w, dirfd, path, kmask, flags, key))
			return 0;
	}
	for (int calls = 0;; calls++) {
		struct kwatch *kw;
		uint64_t gen;

		if (calls)
			early_end = 0;
		ret = next_call(w, dirfd, path, kmask, flags, mc, &gen);
		/* Parked watches count against the kernel's watch limit. */
		if (ret == -ENOSPC && evict_one(w))
			continue;
		if (ret < 0)
			break;
		if (!mark_stands(w, key, &waited, &kw))
			continue;
		/* A dead mark's key, or an unknown key that may have been
		 * dropped meanwhile: mark again to learn whether ours lives. */
		if (((kw && kw->dropped) || (!kw && dropped_since(t, gen, key))) &&
		    ++tries < MARK_TRIES)
			continue;
		if (kw && kw->dropped)
			ret = -ENOENT;
		break;
	}
	if (early_end) {
		stats_end_at(w, LAT_KERNEL_MARK, mc->t0, early_end);
		mc->t1 = early_end;
	} else {
		mc->t1 = stats_end(w, LAT_KERNEL_MARK, mc->t0);
	}
	PROBE2(mark, ret, kmask);
	return ret;
}

FSNW_COLD void kwatch_unmark_new(struct fsnw *w, const struct kkey *key)
{
	struct kwatch *kw = kwatch_find(&w->kwatches, key->bytes, key->len);
	struct sys_tally tally = { 0 };
	union {
		struct kwatch kw;
		unsigned char bytes[sizeof(struct kwatch) + KKEY_MAX];
	} tmp;
	bool dropped;

	/* A mark on an object we already mark is somebody's: leave it. (A
	 * covered directory had none: this one is new.) */
	if (kw && kw->marked)
		return;
	memset(&tmp, 0, sizeof(tmp));
	tmp.kw.bflags = key->bflags;
	tmp.kw.keylen = (uint8_t)key->len;
	memcpy(tmp.kw.key, key->bytes, key->len);
	dropped = unlock_for_call(w);
	/* Failing, it leaves a mark nothing links to; the kernel drops it at
	 * close, and its events are dropped as stale meanwhile. */
	(void)w->be->unmark(w, &tmp.kw, &tally);
	relock(w, dropped);
	sys_tally_fold(w, &tally);
	w->kwatches.unmarks++;
}

/* A record's serial: never 0, which wait_unmarked's callers read as none. */
static uint32_t next_serial(struct kwatches *t)
{
	uint32_t s;

	do
		s = (uint32_t)++t->serial;
	while (!s);
	return s;
}

/* A new kernel watch in the table; the caller has reserved room. */
static struct kwatch *kwatch_new(struct fsnw *w, const struct kkey *key, uint32_t flags)
{
	struct kwatch *kw = kwatch_alloc(&w->kwatches, key->len);

	if (!kw)
		return NULL;
	list_init(&kw->links);
	list_init(&kw->lru);
	kw->state = KW_LIVE;
	kw->bflags = key->bflags;
	assert(key->len <= KKEY_MAX);
	kw->keylen = (uint8_t)key->len;
	memcpy(kw->key, key->bytes, key->len);
	kw->excl_unlink = w->be->excl_unlink && (flags & FSNW_WATCH_EXCL_UNLINK);
	kw->serial = next_serial(&w->kwatches);
	keytab_insert(&w->kwatches.by_key, kwatch_tag(kw->key, kw->keylen), kw);
	kwatch_changed(&w->kwatches);
	return kw;
}

/*
 * The record of an unmark that has returned, whose key a new mark of ours
 * came back with (fanotify: keys name objects): it is that new mark's now.
 * The unmarker, taking the lock again, finds it no longer UNMARKING.
 */
FSNW_COLD static void take_over(struct fsnw *w, struct kwatch *kw, uint32_t flags)
{
	assert(kw->state == KW_UNMARKING && atomic_load(&kw->unmark_done));
	kw->serial = next_serial(&w->kwatches);
	kw->state = KW_LIVE;
	kw->dropped = false;
	kwatch_changed(&w->kwatches);
	kw->kmask = 0;
	kw->excl_unlink = w->be->excl_unlink && (flags & FSNW_WATCH_EXCL_UNLINK);
}

/* A link for lw: its own for a plain watch's first, else allocated. */
static struct link *link_new(struct kwatches *t, struct watch *lw)
{
	struct link *l;

	if (lw->tree || lw->nlinks)
		return mem_cache_zalloc(&t->link_cache, sizeof(struct link));
	/* Zero already: the watch record was zeroed when made, and this is
	 * its first link. */
	l = &lw->own;
	assert(!l->kw && !l->embedded);
	l->embedded = true;
	return l;
}

static void link_free_unused(struct kwatches *t, struct link *l)
{
	if (l && !l->embedded)
		mem_cache_free(&t->link_cache, l);
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
	kwatch_changed(&w->kwatches);
	l->kw->nlinks--;
	l->watch->nlinks--;
	link_free(&w->kwatches, l);
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
	if (kw->nlinks || kw->pins || kw->state != KW_LIVE)
		return;
	if (!kw->dropped && was_parked && t->idle_max) {
		/* Back into the cache: the revive it made is taken back. */
		kw->state = KW_PARKED;
		list_add(&kw->lru, &t->idle);
		t->nparked++;
		return;
	}
	kwatch_unused(w, kw, false);
}

/*
 * An existing kernel watch joined by a watch that does not want
 * IN_EXCL_UNLINK must lose the flag, which only a replacing add can do.
 * The replace sets the whole mask: bits another thread's add brought
 * meanwhile are added back after it. kw is pinned by the caller.
 */
FSNW_COLD static void clear_excl_unlink(struct fsnw *w, struct kwatch *kw, int dirfd,
					const char *path, uint32_t kmask, uint32_t flags)
{
	uint32_t want = kw->kmask | kmask;
	struct kkey again;
	uint64_t t0 = stats_start(w);
	int ret;

	ret = mark_call(w, dirfd, path, want, flags & ~FSNW_WATCH_EXCL_UNLINK, 1, &again);
	for (int i = 0; ret == 0 && (kw->kmask & ~want) && i < MARK_TRIES; i++) {
		want |= kw->kmask;
		ret = mark_call(w, dirfd, path, want, flags & ~FSNW_WATCH_EXCL_UNLINK, 0, &again);
	}
	stats_end(w, LAT_KERNEL_MARK, t0);
	/* If the path moved to another object meanwhile, the flag stays: the
	 * cost is events from unlinked children, never a lost event. */
	if (ret == 0 && again.len == kw->keylen && memcmp(again.bytes, kw->key, kw->keylen) == 0)
		kw->excl_unlink = false;
}

/* The calling thread is adding the items of a batch (a thread makes one
 * library call at a time, so this is per thread, not per handle). */
static __thread bool batching __attribute__((tls_model("initial-exec")));

void kwatch_batch(bool on)
{
	batching = on;
}

/* Attach lw to kw through l: kw existed before this attach, or was just made. */
static int link_kwatch(struct fsnw *w, struct watch *lw, struct kwatch *kw, bool existed,
		       struct link *l, int dirfd, const char *path, uint32_t kmask,
		       uint32_t flags)
{
	struct kwatches *t = &w->kwatches;
	bool older_events;

	if (!existed) {
		l->origin = LINK_NEW;
	} else if (kw->state == KW_PARKED) {
		w->st.idle_revives++;
		l->origin = LINK_REVIVED;
	} else if (kw->state == KW_DOOMED) {
		l->origin = LINK_NEW; /* an undo dooms it again */
	} else {
		w->st.dedup_hits++;
		l->origin = LINK_SHARED;
	}
	kwatch_take_back(w, kw);
	/* The kernel keeps one IN_EXCL_UNLINK per inode, and an adding mark can
	 * only set it. When this watch and the kernel watch disagree the inode
	 * goes without: a watch that wanted it sees extra events, where the
	 * other way round a watch would lose some. */
	if (existed && w->be->excl_unlink &&
	    kw->excl_unlink != ((flags & FSNW_WATCH_EXCL_UNLINK) != 0)) {
		kwatch_pin(kw);
		clear_excl_unlink(w, kw, dirfd, path, kmask, flags);
		kw->pins--;
		if (kw->dropped) {
			/* The object went while the lock was dropped. */
			link_free_unused(&w->kwatches, l);
			kwatch_unused(w, kw, false);
			return -ENOENT;
		}
	}
	/* Events still unread in the kernel were asked for by the mask the
	 * kernel watch had before this add: only if it shares a bit with the
	 * new watch's can one of them reach it. Where keys recur (fanotify), a
	 * new kernel watch may find events queued for a removed one of the
	 * same object, whose mask is not known any more. */
	older_events = existed ? (kw->kmask & kmask & FSNW_ALL_EVENTS) != 0 :
				 w->be->stable_keys && kwatch_unread_unmarks(t);
	/* In a batch a tree's links wait for its settle too; a plain watch's
	 * with nothing older to wait for are the batch's to release. */
	older_events |= batching && lw->tree;
	kw->kmask |= kmask;

	l->watch = lw;
	l->kw = kw;
	l->active = !older_events && !batching;
	list_init(&l->pnode);
	if (older_events) {
		list_add_tail(&l->pnode, &t->pending);
		t->npending++;
	}
	list_add_tail(&l->knode, &kw->links);
	kwatch_changed(t);
	kw->nlinks++;
	lw->nlinks++;
	return 0;
}

int kwatch_link(struct fsnw *w, struct watch *lw, const struct kkey *key, int dirfd,
		const char *path, uint32_t kmask, uint32_t flags, struct link **out)
{
	struct link *l = link_new(&w->kwatches, lw);
	struct kwatch *kw;
	bool existed;
	int ret;

	kw = kwatch_find_hot(&w->kwatches, key->bytes, key->len);
	if (kw && kw->state == KW_UNMARKING) {
		/* kwatch_mark waited for the unmark and marked again. */
		take_over(w, kw, flags);
		existed = false;
	} else {
		existed = kw != NULL;
	}
	if (!kw && l && keytab_reserve(&w->kwatches.by_key, 1) == 0)
		kw = kwatch_new(w, key, flags);
	if (!l || !kw) {
		link_free_unused(&w->kwatches, l);
		kwatch_unmark_new(w, key);
		return -ENOMEM;
	}
	kw->marked = true;
	ret = link_kwatch(w, lw, kw, existed, l, dirfd, path, kmask, flags);
	if (ret == 0)
		*out = l;
	return ret;
}

/*
 * A tree directory covered by its filesystem's mark (key names the
 * directory, fskey the mark, which the backend has made or widened): no
 * kernel mark of its own, a pin on the filesystem's kernel watch instead.
 */
static int link_covered(struct fsnw *w, struct watch *lw, const struct kkey *key,
			const struct kkey *fskey, int dirfd, const char *path, uint32_t kmask,
			uint32_t flags, struct link **out)
{
	struct kwatches *t = &w->kwatches;
	struct kwatch *fs = kwatch_find(t, fskey->bytes, fskey->len);
	struct kwatch *kw = kwatch_find(t, key->bytes, key->len);
	struct link *l = link_new(&w->kwatches, lw);
	bool existed = kw != NULL;
	int ret;

	if (l && keytab_reserve(&t->by_key, 2) == 0) {
		if (!fs && (fs = kwatch_new(w, fskey, 0)) != NULL) {
			fs->fsmark = true;
			fs->marked = true;
			t->nfsmarks++;
		}
		if (fs && !kw)
			kw = kwatch_new(w, key, 0);
	}
	if (!l || !kw) {
		link_free_unused(&w->kwatches, l);
		/* A filesystem kernel watch covers something, or goes. */
		if (fs && !kwatch_fs_of(fs)->ncovered)
			kwatch_doom(w, fs);
		else if (!fs)
			kwatch_unmark_new(w, fskey);
		return -ENOMEM;
	}
	if (fs->state == KW_UNMARKING)
		take_over(w, fs, 0); /* kwatch_attach waited, and covered again */
	else if (fs->state != KW_LIVE)
		fs_take_back(w, fs); /* a tree's hold parked it (kwatch_fs_release) */
	if (!kwatch_fs_of(kw)->cover) {
		kwatch_fs_of(kw)->cover = fs;
		kwatch_fs_of(fs)->ncovered++;
	}
	fs->kmask |= kmask;
	ret = link_kwatch(w, lw, kw, existed, l, dirfd, path, kmask, flags);
	if (ret == 0)
		*out = l;
	return ret;
}

/*
 * Cover a tree directory with its filesystem's mark (0), or say it cannot
 * be (-errno: mark it instead). As with a mark, a filesystem mark being
 * removed at the same time is waited for and made again.
 */
static int cover_call(struct fsnw *w, int dirfd, const char *path, uint32_t kmask,
		      uint32_t flags, struct kkey *key, struct kkey *fskey)
{
	uint32_t waited = 0;
	struct kwatch *fs;
	int ret;

	do {
		struct sys_tally tally = { 0 };
		bool dropped = unlock_for_call(w);

		ret = w->be->cover(w, dirfd, path, kmask, flags, key, fskey, &tally);
		relock(w, dropped);
		sys_tally_fold(w, &tally);
	} while (ret == 0 && !mark_stands(w, fskey, &waited, &fs));
	return ret;
}

int kwatch_attach(struct fsnw *w, struct watch *lw, int dirfd, const char *path,
		  uint32_t kmask, uint32_t flags, struct link **out)
{
	struct kkey key, fskey;
	int ret;

	/* A backend that cannot cover this directory has it marked instead. */
	if ((flags & FSNW_WATCH_TREE) && w->be->cover &&
	    cover_call(w, dirfd, path, kmask, flags, &key, &fskey) == 0)
		return link_covered(w, lw, &key, &fskey, dirfd, path, kmask, flags, out);
	struct kmark_call mc = { .t0 = stats_start(w) };

	ret = kwatch_mark(w, dirfd, path, kmask, flags, &mc);
	if (ret < 0)
		return ret;
	return kwatch_link(w, lw, &mc.key, dirfd, path, kmask, flags, out);
}

int kwatch_fs_hold(struct fsnw *w, int dirfd, const char *path, uint32_t kmask, uint32_t flags,
		   struct kkey *key, struct kwatch **out, bool *older)
{
	struct kwatches *t = &w->kwatches;
	struct kkey fskey;
	struct kwatch *fs;
	int ret;

	if (!w->be->cover)
		return -EOPNOTSUPP;
	/* An unmark of this filesystem's mark running meanwhile is waited for
	 * and the mark made again, as for any mark (cover_call). */
	ret = cover_call(w, dirfd, path, kmask, flags | FSNW_WATCH_ONLYDIR, key, &fskey);
	if (ret < 0)
		return ret;
	fs = kwatch_find(t, fskey.bytes, fskey.len);
	if (fs && fs->state == KW_UNMARKING) {
		take_over(w, fs, 0); /* the mark is new: as below */
		*older = w->be->stable_keys && kwatch_unread_unmarks(t);
	} else if (fs) {
		*older = (fs->kmask & kmask & FSNW_ALL_EVENTS) != 0;
		if (fs->state != KW_LIVE)
			fs_take_back(w, fs);
	} else {
		*older = w->be->stable_keys && kwatch_unread_unmarks(t);
		if (keytab_reserve(&t->by_key, 1) < 0 || !(fs = kwatch_new(w, &fskey, 0))) {
			kwatch_unmark_new(w, &fskey);
			return -ENOMEM;
		}
		fs->fsmark = true;
		fs->marked = true;
		t->nfsmarks++;
	}
	fs->kmask |= kmask;
	kwatch_fs_of(fs)->ncovered++;
	*out = fs;
	return 0;
}

void kwatch_fs_release(struct fsnw *w, struct kwatch *fs, bool park)
{
	if (--kwatch_fs_of(fs)->ncovered == 0)
		kwatch_unused(w, fs, park);
}

void kwatch_fs_narrow(struct fsnw *w, struct kwatch *fs, uint32_t kmask)
{
	struct sys_tally tally = { 0 };

	if (!w->be->narrow || fs->state != KW_LIVE || !(fs->kmask & ~kmask & FSNW_ALL_EVENTS))
		return;
	/* Under the lock, as a walk's marks: rare, and it only takes bits away. */
	if (w->be->narrow(w, fs, kmask, &tally) == 0)
		fs->kmask = kmask;
	sys_tally_fold(w, &tally);
}

void kwatch_activate(struct kwatches *t, struct link *l)
{
	if (l->active)
		return;
	if (l->pnode.next != &l->pnode) {
		list_del(&l->pnode);
		t->npending--;
	}
	l->active = true;
	kwatch_changed(t);
}

void kwatch_release_held(struct fsnw *w, struct watch *lw)
{
	struct link *l = &lw->own;

	/* Held: a plain watch's link, inactive, not on the pending list. */
	if (lw->tree || !lw->nlinks || l->active || l->pnode.next != &l->pnode)
		return;
	if (unlikely(l->kw->dropped)) {
		/* The object went during the batch: the add fails. */
		lw->add_failed = true;
		kwatch_detach(w, l, false);
		return;
	}
	l->active = true;
	kwatch_changed(&w->kwatches);
}

struct link *kwatch_pop_pending(struct kwatches *t)
{
	struct link *l;

	if (list_empty(&t->pending))
		return NULL;
	l = list_first(&t->pending, struct link, pnode);
	list_del(&l->pnode);
	t->npending--;
	kwatch_changed(t); /* the caller makes it live, or detaches it */
	return l;
}

void kwatch_repend(struct kwatches *t, struct list *links)
{
	while (!list_empty(links)) {
		struct link *l = list_first(links, struct link, pnode);

		list_del(&l->pnode);
		list_add_tail(&l->pnode, &t->pending);
		t->npending++;
	}
}

bool kwatch_dropped(struct fsnw *w, struct kwatch *kw)
{
	w->st.kernel_drops++;
	kw->dropped = true;
	kwatch_changed(&w->kwatches);
	kwatch_note_drop(&w->kwatches, kw->key, kw->keylen);
	switch (kw->state) {
	case KW_PARKED:
	case KW_DOOMED:
		/* Nothing to tell and nothing to unmark. */
		if (!kw->pins)
			kwatch_forget(w, kw);
		return false;
	case KW_UNMARKING:
		return false; /* its unmarker frees it */
	default:
		kwatch_pin(kw);
		return true;
	}
}

static void mark_live(struct fsnw *w, const unsigned char *key, size_t len)
{
	struct kwatch *kw = kwatch_find(&w->kwatches, key, len);

	if (kw)
		kw->live_gen = w->kwatches.live_gen;
}

struct gone {
	struct kwatch *victims; /* LIVE ones, chained through victim */
	size_t nlisted;         /* PARKED or DOOMED ones, marked gone */
	uint32_t gen;
};

static void collect_gone(void *val, void *arg)
{
	struct kwatch *kw = val;
	struct gone *g = arg;

	if (kw->dropped || kwatch_wd(kw) < 0 || kw->live_gen == g->gen ||
	    kw->state == KW_UNMARKING)
		return;
	if (kw->state == KW_LIVE) {
		/* A live kernel watch's lru is on no list: it holds the chain. */
		kw->victim = g->victims;
		g->victims = kw;
	} else {
		kw->gone = true;
		g->nlisted++;
	}
}

/* The kernel watches on list (by lru) marked gone: dropped, which frees
 * those nobody pins. */
static void drop_listed(struct fsnw *w, struct list *head, struct gone *g)
{
	struct list *pos, *tmp;

	list_for_each_safe(pos, tmp, head) {
		struct kwatch *kw = list_entry(pos, struct kwatch, lru);

		if (!kw->gone)
			continue;
		kw->gone = false;
		assert(g->nlisted > 0);
		g->nlisted--;
		(void)kwatch_dropped(w, kw); /* parked or doomed: nobody to tell */
	}
}

struct kwatch *kwatch_reconcile(struct fsnw *w)
{
	struct gone g = { NULL, 0, 0 };
	struct kwatch *victims = NULL, *kw;

	if (!w->be->live)
		return NULL;
	g.gen = ++w->kwatches.live_gen;
	if (w->be->live(w, mark_live) < 0)
		return NULL;
	/* Collected first: freeing while the table is walked is not allowed. */
	keytab_for_each(&w->kwatches.by_key, collect_gone, &g);
	drop_listed(w, &w->kwatches.idle, &g);
	drop_listed(w, &w->kwatches.doomed, &g);
	assert(g.nlisted == 0);
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
