/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <string.h>

#include "compiler.h"
#include "handle.h"
#include "inotify-decode.h"
#include "mem.h"
#include "route.h"

/*
 * The kernel dropped kw's mark (IN_IGNORED, or found gone by a reconcile):
 * every logical watch on it hears. Each active link goes (a tree only loses
 * that directory unless it is the root); a pending link stays for the add
 * that made it, whose settle fails it. kw arrives pinned (kwatch_dropped).
 */
static void tell_dropped(struct fsnw *w, struct kwatch *kw)
{
	struct list *pos, *tmp;

	/* Deferred pushes may name the paths of links about to go. */
	queue_flush(w->q);
	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);

		if (!l->active)
			continue;
		if (l->watch->tree && !tree_link_dropped(w, l))
			continue;
		/* A plain watch has one link; a tree that lost its root goes
		 * whole. Either way only links of l's watch are detached, and
		 * tmp, on another watch's link or the list head, stays. */
		watches_dropped(w, l->watch);
	}
	kwatch_unpin(w, kw, false);
}

void route_reconcile(struct fsnw *w)
{
	struct kwatch *kw = kwatch_reconcile(w);

	while (kw) {
		struct kwatch *next = kw->victim;

		tell_dropped(w, kw);
		kw = next;
	}
}

/*
 * Hand ev to each active link of kw; returns how many pushes it made. A
 * plain link only queues the event, deferred: the queue takes the pushes
 * of a whole read as one batch, and the engine flushes it before the
 * buffer the name lies in is read over. A tree link hands the event to its
 * tree (tree_event), which reports it and follows its directories by it,
 * and a oneshot watch ends; kw is pinned for those: its pushes go in at
 * once, after all deferred before them.
 */
static unsigned fan_out(struct fsnw *w, struct kwatch *kw, const struct kevent *ev)
{
	struct list *pos, *tmp;
	bool heard = false, pinned = false;
	unsigned pushes = 0;

	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);
		struct watch *lw = l->watch;
		uint32_t mask, wanted;

		if (!l->active)
			continue;
		heard = true;
		mask = ev->mask & (lw->mask | FSNW_ISDIR | FSNW_UNMOUNT);
		wanted = mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT);
		if (!lw->tree && !(wanted && (lw->flags & FSNW_WATCH_ONESHOT))) {
			if (wanted) {
				queue_defer(w->q, &lw->qo, lw->path, mask, ev->cookie, ev->name,
					    ev->namelen);
				pushes++;
			}
			continue;
		}
		if (lw->tree && tree_event_deferred(w, l, ev)) {
			pushes += wanted != 0;
			continue;
		}
		if (!pinned) {
			queue_flush(w->q); /* what was deferred came first */
			kwatch_pin(kw);
			pinned = true;
		}
		/*
		 * A tree detaches no link while it routes (tree.h), and a
		 * oneshot watch has a single link: tmp stays valid. A tree
		 * that lost its root ends whole.
		 */
		if (lw->tree) {
			pushes += wanted != 0;
			if (tree_event(w, l, ev))
				watches_dropped(w, lw);
			continue;
		}
		queue_push(w->q, &lw->qo, lw->path, mask, ev->cookie, ev->name, ev->namelen, 0);
		pushes++;
		watches_oneshot_fired(w, lw);
	}
	if (!heard)
		w->st.dropped_parked++;
	if (pinned)
		kwatch_unpin(w, kw, true);
	return pushes;
}

/* The single link of kw, if active and no fanotify tree is about; or NULL. */
static struct link *sole_link(struct fsnw *w, const struct kwatch *kw)
{
	struct list *first = kw->links.next;
	struct link *l;

	if (first == &kw->links || first->next != &kw->links ||
	    !list_empty(&w->trees.fan.all))
		return NULL;
	l = list_entry(first, struct link, knode);
	return l->active ? l : NULL;
}

/* The link whose events may take the plain lane (struct route_lane), or NULL. */
static struct link *lane_link(struct fsnw *w, struct kwatch *kw)
{
	struct link *l = sole_link(w, kw);

	if (!l || l->watch->tree || (l->watch->flags & FSNW_WATCH_ONESHOT))
		return NULL;
	return l;
}

/* The record the slot at pos names for wd's tag, or NULL: a guess (a wd is
 * its own tag, so nearly always right), read from the slot alone, so that
 * the stage's reads wait on no record's line. */
static const struct kwatch *lane_guess(const struct keytab *kt, int wd, size_t pos)
{
	return keytab_probe(kt, kwatch_tag((const unsigned char *)&wd, sizeof(wd)), &pos);
}

/* The kernel watch of wd, from its guess, whose line is in the cache now. */
static const struct kwatch *lane_kwatch(const struct kwatches *t, int wd,
					const struct kwatch *guess)
{
	const unsigned char *key = (const unsigned char *)&wd;

	/* The guess stands when its key is the wd's (kwatch_find's test). */
	if (guess && kwatch_key_is(guess, key, sizeof(wd)))
		return guess;
	return kwatch_find(t, key, sizeof(wd));
}

/* The first link of kw, if it may be the sole link of a tree lane's
 * record (the lane's tests of kw and of the record's mask); or NULL. */
static struct link *lane_first_link(const struct kwatch *kw, uint32_t mask)
{
	if (!kw || kw->dropped || kw->fsmark || (mask & (FSNW_IGNORED | FSNW_OVERFLOW)) ||
	    list_empty(&kw->links))
		return NULL;
	return list_entry(kw->links.next, struct link, knode);
}

/* Whether l, kw's first link, is its sole link, active, and of tree (any
 * tree: NULL); a fanotify tree about fails it too (sole_link), tested by
 * the caller. Given a tree, the watch's record is not read: the lane's
 * loop meets it cold. */
static bool lane_sole_link(const struct kwatch *kw, const struct link *l,
			   const struct watch *tree)
{
	assert(!tree || tree->tree);
	return l->knode.next == &kw->links && l->active &&
	       (tree ? l->watch == tree : l->watch->tree != NULL);
}

/* The tree lane's path for an event (mask, name) at kw: the path to report it
 * with if routing it would only push it for tree (any tree: NULL). */
static struct strref *tree_lane_path(struct fsnw *w, const struct kwatch *kw,
				     const struct watch *tree, uint32_t mask, const char *name)
{
	struct link *l = lane_first_link(kw, mask);

	if (!l || !list_empty(&w->trees.fan.all) || !lane_sole_link(kw, l, tree))
		return NULL;
	return tree_event_path(l, mask, name);
}

/*
 * The check of the records recs[at[0..m-1]]: each stage reads only lines
 * the stage before prefetched, for all m records, then prefetches what the
 * next stage reads: the slots, the kernel watches' routing lines
 * (kwatch.h), their first links, their directories, the paths those
 * report. A record's misses then wait once a stage, behind the m of the
 * stage, not behind each other. The tests are tree_lane_path's, each in
 * the stage that brought what it reads; the caller tested that no
 * fanotify tree is about (sole_link's test) and that the table has slots.
 */
static void check_records(struct fsnw *w, const struct watch *tree,
			  const struct inotify_rec *recs, const unsigned *at, unsigned m,
			  struct strref **paths)
{
	const struct keytab *kt = &w->kwatches.by_key;
	const struct kwatch *kws[ROUTE_LANE_LOOK];
	struct link *ls[ROUTE_LANE_LOOK];
	size_t pos[ROUTE_LANE_LOOK];

	for (unsigned j = 0; j < m; j++) {
		pos[j] = keytab_home(kt, kwatch_tag((const unsigned char *)&recs[at[j]].wd, sizeof(int)));
		__builtin_prefetch(&kt->slots[pos[j]]);
	}
	for (unsigned j = 0; j < m; j++) {
		kws[j] = lane_guess(kt, recs[at[j]].wd, pos[j]);
		if (kws[j])
			__builtin_prefetch(&kws[j]->links);
	}
	for (unsigned j = 0; j < m; j++) {
		kws[j] = lane_kwatch(&w->kwatches, recs[at[j]].wd, kws[j]);
		ls[j] = lane_first_link(kws[j], recs[at[j]].mask);
		if (ls[j]) { /* the line of knode, and of active if another */
			__builtin_prefetch(ls[j]);
			__builtin_prefetch(&ls[j]->active);
		}
	}
	for (unsigned j = 0; j < m; j++) {
		if (ls[j] && !lane_sole_link(kws[j], ls[j], tree))
			ls[j] = NULL;
		if (ls[j])
			tree_link_prefetch(ls[j]);
	}
	for (unsigned j = 0; j < m; j++) {
		const struct inotify_rec *r = &recs[at[j]];

		paths[at[j]] = ls[j] ? tree_event_path(ls[j], r->mask, r->name) : NULL;
		if (paths[at[j]])
			__builtin_prefetch(paths[at[j]]);
	}
}

/* The entries the answers want: one a kernel watch, within the bounds. */
static uint32_t answers_wanted(const struct fsnw *w)
{
	size_t n = w->kwatches.by_key.count;
	uint32_t size = ROUTE_ANSWERS_MIN;

	while (size < n && size < ROUTE_ANSWERS_MAX)
		size *= 2;
	return size;
}

/* A table of size entries in place of a's (kept if there is no memory). */
static void answers_resize(struct route_answers *a, uint32_t size)
{
	struct route_answer *tab = mem_zalloc(size * sizeof(*tab));

	if (!tab)
		return;
	mem_free(a->tab);
	a->tab = tab;
	a->mask = size - 1;
}

/* The answers of tree's records while route_gen keeps its high half: on a
 * new tree they all go (route_gen moves on), when the high half moves the
 * table is cleared, so that a kept low half never meets its like again; a
 * table outgrown by the kernel watches is made anew, empty. NULL: no
 * memory for them. */
FSNW_COLD static struct route_answer *answers_reset(struct fsnw *w, const struct watch *tree)
{
	struct route_answers *a = &w->answers;
	uint32_t size = answers_wanted(w);

	if (!a->tab || a->mask + 1 < size) {
		answers_resize(a, size);
		if (!a->tab)
			return NULL;
		a->gen_hi = (uint32_t)(w->kwatches.route_gen >> 32);
	}
	if (a->tree != tree) {
		kwatch_changed(&w->kwatches);
		a->tree = tree;
	}
	if (a->gen_hi != (uint32_t)(w->kwatches.route_gen >> 32)) {
		memset(a->tab, 0, ((size_t)a->mask + 1) * sizeof(*a->tab));
		a->gen_hi = (uint32_t)(w->kwatches.route_gen >> 32);
	}
	return a->tab;
}

static inline struct route_answer *answers_of(struct fsnw *w, const struct watch *tree)
{
	const struct route_answers *a = &w->answers;

	if (unlikely(!a->tab || a->tree != tree ||
		     a->gen_hi != (uint32_t)(w->kwatches.route_gen >> 32) ||
		     (w->kwatches.by_key.count > (size_t)a->mask + 1 &&
		      a->mask + 1 < ROUTE_ANSWERS_MAX)))
		return answers_reset(w, tree);
	return a->tab;
}

/* The entry of wd's answer. */
static inline struct route_answer *answer_at(const struct route_answers *a, int wd)
{
	return &a->tab[(unsigned)wd & a->mask];
}

/* The path kept for r's wd, if r is of the kind it answers for (the
 * record's part of the check: lane_first_link's test of its mask, and
 * tree_event_plain); NULL: check r. */
static inline struct strref *answer_for(const struct route_answer *e, uint32_t gen,
					const struct inotify_rec *r)
{
	if (e->wd != r->wd || e->gen != gen || (r->mask & (FSNW_IGNORED | FSNW_OVERFLOW)) ||
	    !tree_event_plain(r->mask, r->name))
		return NULL;
	return e->path;
}

#ifdef FSNW_TEST_HOOKS
/* The race tests' build checks every answer given against the check. */
static void answer_verify(struct fsnw *w, const struct watch *tree, const struct inotify_rec *r,
			  const struct strref *path)
{
	const struct kwatch *kw = kwatch_find(&w->kwatches, (const unsigned char *)&r->wd,
					      sizeof(r->wd));

	assert(tree_lane_path(w, kw, tree, r->mask, r->name) == path);
}
#else
static inline void answer_verify(struct fsnw *w, const struct watch *tree,
				 const struct inotify_rec *r, const struct strref *path)
{
}
#endif

/*
 * A record whose wd has an answer takes it; the rest are checked
 * (check_records), and the answers found are kept, under the current
 * route_gen: nothing changes it between the check and the keeping.
 */
void route_tree_lane_paths(struct fsnw *w, const struct route_lane *lane,
			   const struct inotify_rec *recs, unsigned n, struct strref **paths)
{
	struct route_answer *tab;
	unsigned at[ROUTE_LANE_LOOK], m = 0;
	uint32_t gen;

	assert(lane->tree && n <= ROUTE_LANE_LOOK);
	if (!w->kwatches.by_key.slots || !list_empty(&w->trees.fan.all)) {
		memset(paths, 0, n * sizeof(*paths));
		return;
	}
	tab = answers_of(w, lane->tree);
	gen = (uint32_t)w->kwatches.route_gen;
	for (unsigned i = 0; i < n; i++) {
		paths[i] = tab ? answer_for(answer_at(&w->answers, recs[i].wd), gen, &recs[i]) : NULL;
		if (paths[i]) {
			answer_verify(w, lane->tree, &recs[i], paths[i]);
			__builtin_prefetch(paths[i]);
		} else
			at[m++] = i;
	}
	if (!m)
		return;
	check_records(w, lane->tree, recs, at, m, paths);
	assert(gen == (uint32_t)w->kwatches.route_gen);
	for (unsigned j = 0; tab && j < m; j++) {
		const struct inotify_rec *r = &recs[at[j]];

		if (paths[at[j]])
			*answer_at(&w->answers, r->wd) = (struct route_answer){ r->wd, gen, paths[at[j]] };
	}
}

void route_fini(struct route_answers *a)
{
	mem_free(a->tab);
	a->tab = NULL;
}

/* Open the lane after ev, if the records after it may take it: l (plain),
 * or a tree's link whose event took the tree lane's path (tpath). */
static void open_lane(struct route_lane *lane, struct kwatch *kw, struct link *l,
		      struct strref *tpath)
{
	struct watch *lw;

	if (!l)
		return;
	lw = l->watch;
	if (tpath)
		lane->tree = lw;
	else
		lane->kw = kw;
	lane->owner = &lw->qo;
	lane->path = tpath ? tpath : lw->path;
	lane->pass = lw->mask | FSNW_ISDIR | FSNW_UNMOUNT;
}

bool route_lane_begin(struct fsnw *w, int wd, uint32_t mask, const char *name,
		      struct route_lane *lane)
{
	struct kwatch *kw;
	struct link *l;
	struct strref *tpath = NULL;

	lane->kw = NULL;
	lane->tree = NULL;
	/* route_event's tests for a push of a live kernel watch's event. */
	if (mask & (FSNW_IGNORED | FSNW_OVERFLOW))
		return false;
	kw = kwatch_find_hot(&w->kwatches, (const unsigned char *)&wd, sizeof(wd));
	if (!kw || kw->dropped || kw->fsmark)
		return false;
	l = lane_link(w, kw);
	if (!l && (tpath = tree_lane_path(w, kw, NULL, mask, name)))
		l = sole_link(w, kw);
	open_lane(lane, kw, l, tpath);
	return l != NULL;
}

unsigned route_event(struct fsnw *w, const struct kevent *ev, struct route_lane *lane)
{
	struct kwatch *kw;
	struct link *l;
	struct strref *tpath = NULL;
	unsigned pushes;
	bool plain;

	lane->kw = NULL;
	lane->tree = NULL;
	if (ev->mask & FSNW_OVERFLOW) {
		w->st.events_read++;
		/* Trees place what they hold first (it came before), and learn
		 * again what the lost events would have told them. */
		trees_overflow(w);
		handle_overflow(w, OVERFLOW_KERNEL);
		return ROUTE_OVERFLOW;
	}
	/* A handle with only trees on fanotify has no kernel watch an event's
	 * key could name (filesystem marks have keys of their own shape). */
	kw = ev->key && kwatch_count(&w->kwatches) ?
		     kwatch_find_hot(&w->kwatches, ev->key, ev->keylen) : NULL;
	if (!kw && ev->key && (ev->mask & FSNW_IGNORED))
		/* maybe of a mark an add has yet to record */
		kwatch_note_drop(&w->kwatches, ev->key, ev->keylen);
	plain = kw && !kw->dropped && !kw->fsmark;
	/* A tree on fanotify hears what its filesystem mark reports, through
	 * no kernel watch of its own; a watch on the same object may too. */
	if (trees_hear(w, ev, plain) && !plain) {
		w->st.events_read++;
		return 0;
	}
	if (!plain) {
		/* fanotify names every object an event concerns, and a
		 * filesystem mark reports the whole filesystem: a key we do
		 * not watch is no late event of ours. */
		if (ev->flags & KEVENT_OPTIONAL)
			return 0;
		w->st.events_read++;
		w->st.dropped_stale++;
		return 0;
	}
	w->st.events_read++;
	if (ev->mask & FSNW_IGNORED) {
		if (kwatch_dropped(w, kw))
			tell_dropped(w, kw);
		return 0;
	}
	/* Found before the fan-out, which for such a link changes nothing: a
	 * plain watch's push, or a tree event that tree_event_deferred takes. */
	l = lane_link(w, kw);
	if (!l && (tpath = tree_lane_path(w, kw, NULL, ev->mask, ev->name)))
		l = sole_link(w, kw);
	pushes = fan_out(w, kw, ev);
	open_lane(lane, kw, l, tpath);
	return ROUTE_PUSHES_ONE * pushes;
}

void route_end_trees(struct fsnw *w)
{
	struct watch *lw;
	bool failed;

	while ((lw = trees_pop_ended(&w->trees, &failed))) {
		if (failed) /* the add in progress fails, as a plain one would */
			lw->add_failed = true;
		else
			watches_dropped(w, lw);
	}
}

void route_settle(struct fsnw *w)
{
	struct list later;
	struct link *l;

	list_init(&later);
	while ((l = kwatch_pop_pending(&w->kwatches))) {
		struct watch *lw = l->watch;

		if (unlikely(lw->in_batch)) {
			/* Another thread's batch, still adding: its own settle. */
			list_add_tail(&l->pnode, &later);
			continue;
		}
		if (likely(!l->kw->dropped)) {
			l->active = true;
			continue;
		}
		/* The object went during the add. */
		if (!lw->tree) {
			lw->add_failed = true;
			kwatch_detach(w, l, false);
		} else if (tree_link_dropped(w, l)) {
			lw->add_failed = true;
		}
	}
	kwatch_repend(&w->kwatches, &later);
	trees_settle(w);
	route_end_trees(w);
}
