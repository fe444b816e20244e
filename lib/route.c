/* SPDX-License-Identifier: MIT */
#include <assert.h>

#include "handle.h"
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

	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);

		if (!l->active)
			continue;
		if (l->watch->tree && !tree_link_dropped(w, l))
			continue;
		/* A plain watch has one link; a tree that lost its root goes
		 * whole. Either way only links of l's watch are detached, and
		 * tmp, on another watch's link or the list head, stays. */
		watches_gone(w, l->watch);
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

/* Hand ev to each active link of kw. */
static void fan_out(struct fsnw *w, struct kwatch *kw, const struct kevent *ev)
{
	struct list *pos, *tmp;
	bool heard = false;

	/* Pinned: a oneshot watch or a tree may detach the last link. */
	kwatch_pin(kw);
	list_for_each_safe(pos, tmp, &kw->links) {
		struct link *l = list_entry(pos, struct link, knode);
		struct watch *lw = l->watch;
		uint32_t mask, wanted;

		if (!l->active)
			continue;
		heard = true;
		if (lw->tree && tree_walk_echo(&w->trees, l, ev)) {
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
			watches_gone(w, lw);
	}
	if (!heard)
		w->st.dropped_parked++;
	kwatch_unpin(w, kw, true);
}

unsigned route_event(struct fsnw *w, const struct kevent *ev)
{
	struct kwatch *kw;
	bool plain;

	if (ev->mask & FSNW_OVERFLOW) {
		w->st.events_read++;
		/* Trees on fanotify place what they hold first: it came before. */
		fantree_overflow(w);
		handle_overflow(w, OVERFLOW_KERNEL);
		return ROUTE_OVERFLOW;
	}
	/* A handle with only trees on fanotify has no kernel watch an event's
	 * key could name (filesystem marks have keys of their own shape). */
	kw = ev->key && kwatch_count(&w->kwatches) ?
		     kwatch_find(&w->kwatches, ev->key, ev->keylen) : NULL;
	plain = kw && !kw->dropped && !kw->fsmark;
	/* A tree on fanotify hears what its filesystem mark reports, through
	 * no kernel watch of its own; a watch on the same object may too. */
	if (fantree_event(w, ev, plain) && !plain) {
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
	fan_out(w, kw, ev);
	return 0;
}

/* Trees on fanotify whose directory went end now that their events are in. */
static void end_fantrees(struct fsnw *w)
{
	struct watch *lw;
	bool pending;

	while ((lw = fantree_pop_ended(&w->trees.fan, &pending))) {
		if (pending) /* the add in progress fails, as a plain one would */
			lw->add_failed = true;
		else
			watches_gone(w, lw);
	}
}

void route_settle(struct fsnw *w)
{
	struct link *l;

	while ((l = kwatch_pop_pending(&w->kwatches))) {
		struct watch *lw = l->watch;

		if (!l->kw->dropped) {
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
	fantree_settle(w);
	end_fantrees(w);
}
