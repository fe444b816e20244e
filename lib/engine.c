/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>

#include "compiler.h"
#include "handle.h"
#include "inotify-decode.h"
#include "lock.h"
#include "mem.h"
#include "queue-lane.h"
#include "ring.h"
#include "route.h"
#include "stats.h"
#include "testhook.h"
#include "sys.h"
#include "tree.h"

#define READ_BUF_SIZE (64 * 1024)
/* A bounded drain in fsnw_read: a writer storm must not keep a reader here. */
#define DRAIN_READS_MAX 8
/* Our own removes leave IN_IGNORED in the kernel queue; read them before
 * they could fill it for a caller that adds and removes but rarely reads. */
#define UNREAD_IGNORED_MAX 1024

int engine_init(struct fsnw *w)
{
	struct engine *e = &w->engine;

	e->evfd = e->epfd = e->timerfd = -1;
	e->rbuf_len = READ_BUF_SIZE;
	e->rbuf = mem_alloc(e->rbuf_len);
	return e->rbuf ? 0 : -ENOMEM;
}

int engine_open(struct fsnw *w)
{
	struct engine *e = &w->engine;
	int ret;

	e->evfd = sys_eventfd(&w->st.sys_other, 0, EFD_NONBLOCK);
	if (e->evfd < 0)
		return e->evfd;
	ret = ring_open(w);
	if (ret < 0)
		return ret;
	w->st.ring_active = (uint64_t)ret;
	return 0;
}

void engine_fini(struct fsnw *w)
{
	struct engine *e = &w->engine;

	ring_close(w);
	if (e->epfd >= 0)
		sys_close(&w->st.sys_other, e->epfd);
	if (e->evfd >= 0)
		sys_close(&w->st.sys_other, e->evfd);
	if (e->timerfd >= 0)
		sys_close(&w->st.sys_other, e->timerfd);
	mem_free(e->rbuf);
	mem_free(e->spare);
	e->rbuf = e->spare = NULL;
	e->epfd = e->evfd = e->timerfd = -1;
}

/* One non-blocking read of the group fd, counted: bytes, 0 when nothing is
 * pending, or -errno. */
static ssize_t read_group(struct fsnw *w)
{
	struct engine *e = &w->engine;
	ssize_t n;

	if (e->lent && e->lent == e->rbuf) {
		/* Nothing of the lent buffer is left to route (read_loop routes
		 * what is buffered before it reads): swap it out, untouched. */
		e->rbuf = e->spare;
		e->spare = e->lent;
	}
	TEST_POINT(TP_READ, NULL);
	if (e->sys_read)
		return e->sys_read(w, e->rbuf, e->rbuf_len);
	n = sys_read(&w->st.sys_read, w->kfd, e->rbuf, e->rbuf_len);
	return n == -EAGAIN ? 0 : n;
}

/*
 * One drain's state, on the stack of its caller: what outlives a drain (the
 * buffer and the records it still holds, readiness) is in struct engine.
 */
struct drain {
	struct fsnw *w;
	unsigned flags;          /* DRAIN_COMPLETE, DRAIN_TIMED */
	bool direct;             /* routing into the caller's array (queue_direct_begin) */
	size_t want;             /* a read's array: enough waits once the queue holds this */
	bool enough;             /* ... and reading stopped for it */
	bool reconcile;          /* a kernel overflow was read: check which watches live */
	/* One pass over the buffered records (route_buffered): */
	bool stop;               /* the decode was asked to stop ... */
	size_t consumed;         /* ... and this much of the buffer was routed */
	size_t room;             /* a direct read: pushes the array can still take (at most) */
	struct route_lane lane;  /* route_event's: whose records may take the lane */
	struct queue_lane ql;    /* the lane into the array, while open */
	bool ql_open;
};

/*
 * A drain set up to begin: every field but the lane's, which the decode
 * that opens the lane sets (ql counts only while ql_open). Not an
 * initializer, which would clear the lane's copy, most of the struct, on
 * every read.
 */
static void drain_init(struct drain *d, struct fsnw *w, unsigned flags, size_t want)
{
	d->w = w;
	d->flags = flags;
	d->direct = false;
	d->want = want;
	d->enough = false;
	d->reconcile = false;
	d->stop = false;
	d->consumed = 0;
	d->room = 0;
	d->lane.kw = NULL;
	d->lane.tree = NULL;
	d->ql_open = false;
}

static void close_lane(struct drain *d)
{
	if (!d->ql_open)
		return;
	queue_lane_close(d->w->q, &d->ql);
	d->ql_open = false;
	d->room = queue_direct_room(d->w->q);
}

/*
 * The general path: one decoded event through route_event, into the queue
 * (or a direct read's array, through the queue). In a direct read, ask the
 * decode to stop once the caller's array could not take another event like
 * this one: the rest stays in the buffer, unrouted, instead of queueing
 * behind the array. Every push counts against the room, merges too: the
 * room is checked again when the decode has stopped. If route_event opened
 * the lane and the array can take the records that follow, the lane into
 * the array opens for them (inotify: route_inotify).
 */
static bool route_one(void *arg, const struct kevent *ev)
{
	struct drain *d = arg;
	struct fsnw *w = d->w;
	unsigned r, pushes;

	close_lane(d); /* nothing else may touch the queue while the lane is open */
	r = route_event(w, ev, &d->lane);
	pushes = ROUTE_PUSHES(r);
	if (r & ROUTE_OVERFLOW)
		d->reconcile = true;
	d->consumed = ev->end;
	if (!d->direct || (d->flags & DRAIN_COMPLETE))
		return true;
	d->room = pushes < d->room ? d->room - pushes : 0;
	if (d->room && d->room >= pushes) {
		if ((d->lane.kw || d->lane.tree) && w->be->inotify_records)
			d->ql_open = queue_lane_open(w->q, d->lane.owner, d->lane.path,
						     d->lane.tree != NULL, &d->ql);
		return true;
	}
	d->stop = true;
	return false;
}

/*
 * The fast path: while the lane is open, the records of its kernel watch
 * that follow rec (the first of them) go into the array here, parsed one
 * after the other, until one is another's or refused. Returns where it
 * stopped: at the first record not taken (*refused if the lane would not
 * take it), or past the last taken; *full if the array is. Out of line, so
 * the loop has the registers to itself, its state in locals.
 */
static __attribute__((noinline)) const unsigned char *
lane_run(struct drain *d, struct inotify_rec *rec, const unsigned char *p,
	 const unsigned char *end, bool *refused, bool *full)
{
	struct queue_lane ql = d->ql;
	struct inotify_rec r = *rec;
	uint32_t pass = d->lane.pass;
	uint64_t taken = 0;
	int wd = r.wd; /* the lane's key: the first record is the lane's */

	assert(d->ql_open && d->lane.kw);
	*refused = *full = false;
	for (;;) {
		uint32_t mask = r.mask & pass;

		if ((mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT)) &&
		    !queue_lane_push(&ql, mask, r.cookie, r.name, r.namelen, r.room)) {
			*refused = true;
			break;
		}
		taken++;
		p = r.next;
		if (queue_lane_full(&ql)) {
			*full = true;
			break;
		}
		if (!inotify_rec_parse(p, end, &r) || r.wd != wd ||
		    (r.mask & (FSNW_IGNORED | FSNW_OVERFLOW)))
			break;
	}
	*rec = r;
	d->ql = ql;
	d->w->st.events_read += taken;
	return p;
}

/* Records of the tree lane parsed ahead, with the paths they would take. */
struct staged {
	struct inotify_rec recs[ROUTE_LANE_LOOK];
	struct strref *paths[ROUTE_LANE_LOOK]; /* route_tree_lane_paths' */
	unsigned n;
};

/* The records from p on, parsed into st, as many as it holds. */
static void stage_records(const unsigned char *p, const unsigned char *end, struct staged *st)
{
	unsigned n = 0;

	while (n < ROUTE_LANE_LOOK && inotify_rec_parse(p, end, &st->recs[n]))
		p = st->recs[n++].next;
	st->n = n;
}

/*
 * Push the staged records that the lane takes, from the first on, until
 * one it does not (its path NULL, or refused: route_one routes it) or the
 * array is full (*full): how many it took.
 */
static unsigned push_staged(struct queue_lane *ql, uint32_t pass, const struct staged *st, bool *full)
{
	unsigned k;

	for (k = 0; k < st->n; k++) {
		const struct inotify_rec *r = &st->recs[k];
		uint32_t mask = r->mask & pass;

		if (!st->paths[k])
			break;
		if (mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT)) {
			queue_lane_repath(ql, st->paths[k]);
			if (!queue_lane_push(ql, mask, r->cookie, r->name, r->namelen, r->room))
				break;
		}
		if (queue_lane_full(ql)) {
			*full = true;
			return k + 1;
		}
	}
	return k;
}

/*
 * The tree lane's loop, as lane_run: records of the lane's tree whose
 * routing would only push them (route_tree_lane_paths) go into the array
 * with their directory's path, until one is not such a record or refused.
 * The records are parsed and checked ROUTE_LANE_LOOK at a time, each
 * parsed once. The lane stays in the drain, not copied into locals: a
 * wakeup's run of a record or two paid more for the copy in and out than
 * the loop saved.
 */
static __attribute__((noinline)) const unsigned char *
tree_lane_run(struct drain *d, const unsigned char *p, const unsigned char *end, bool *full)
{
	struct fsnw *w = d->w;
	struct staged st;
	uint64_t taken = 0;
	unsigned k;

	assert(d->ql_open && d->lane.tree);
	*full = false;
	do {
		stage_records(p, end, &st);
		route_tree_lane_paths(w, &d->lane, st.recs, st.n, st.paths);
		k = push_staged(&d->ql, d->lane.pass, &st, full);
		if (k)
			p = st.recs[k - 1].next;
		taken += k;
	} while (k == ROUTE_LANE_LOOK && !*full);
	w->st.events_read += taken;
	return p;
}

/*
 * The first record of a decode opens the lane itself (route_lane_begin),
 * where route_one would open it only after routing the record: the record
 * then takes the lane as those after it do. A reader that keeps up reads
 * a few records a wakeup, and the first of them would cost a route_event
 * and a deferred push more than the rest together.
 */
static void begin_lane(struct drain *d, const struct inotify_rec *rec)
{
	struct fsnw *w = d->w;

	/* route_one's conditions for opening the lane into the array. */
	if (!d->direct || (d->flags & DRAIN_COMPLETE) || !d->room)
		return;
	if (route_lane_begin(w, rec->wd, rec->mask, rec->name, &d->lane))
		d->ql_open = queue_lane_open(w->q, d->lane.owner, d->lane.path,
					     d->lane.tree != NULL, &d->ql);
}

/*
 * The records of an inotify read: runs of the lane's watch through
 * lane_run, or of the lane's tree through tree_lane_run, every other
 * record through route_one, which may open the lane.
 */
static void route_inotify(struct drain *d, const unsigned char *buf, size_t len)
{
	const unsigned char *p = buf, *end = buf + len;
	struct inotify_rec rec;
	struct kevent ev;

	if (!inotify_rec_parse(p, end, &rec))
		return;
	begin_lane(d, &rec);
	do {
		if (d->ql_open && d->lane.tree) {
			const unsigned char *at = p;
			bool full;

			p = tree_lane_run(d, p, end, &full);
			d->consumed = (size_t)(p - buf);
			if (full) {
				d->stop = true;
				return;
			}
			if (p == end)
				return;
			if (p != at)
				continue; /* rec, the record at p, is parsed again */
			/* route_one closes the lane and routes it the usual way. */
		} else if (d->ql_open && !(rec.mask & (FSNW_IGNORED | FSNW_OVERFLOW)) &&
		    kwatch_key_is(d->lane.kw, (const unsigned char *)&rec.wd, sizeof(rec.wd))) {
			bool refused, full;

			p = lane_run(d, &rec, p, end, &refused, &full);
			d->consumed = (size_t)(p - buf);
			if (full) {
				d->stop = true;
				return;
			}
			if (!refused)
				continue;
			/* route_one closes the lane and routes it the usual way. */
		}
		inotify_rec_event(&rec, buf, &ev);
		if (!route_one(d, &ev))
			return;
		p = rec.next;
	} while (inotify_rec_parse(p, end, &rec));
}

/* Route the buffered records; false if some stay for later. */
static bool route_buffered(struct drain *d)
{
	struct fsnw *w = d->w;
	struct engine *e = &w->engine;
	size_t len = e->rlen - e->rpos;

	d->stop = false;
	d->consumed = 0;
	d->room = 0;
	d->lane.kw = NULL; /* a lane lives within one decode */
	if (d->direct) {
		/* One buffer's names are lent at a time: the first one routed. */
		bool lend = e->spare && (!e->lent || e->lent == e->rbuf);

		if (lend)
			e->lent = e->rbuf;
		queue_direct_lend(w->q, lend);
		d->room = queue_direct_room(w->q);
	}
	if (w->be->inotify_records)
		route_inotify(d, e->rbuf + e->rpos, len);
	else
		w->be->decode(w, e->rbuf + e->rpos, len, route_one, d);
	close_lane(d);
	assert(!d->ql_open);
	/* Deferred pushes name names in rbuf: they go in before it changes. */
	queue_flush(w->q);
	/* A decode that did not stop, or did not say where, used it all. */
	if (d->stop && d->consumed && d->consumed < len) {
		e->rpos += d->consumed;
		return false;
	}
	e->rpos = e->rlen = 0;
	return true;
}

/* One read into the buffer: bytes, 0 when the kernel queue was empty, -errno. */
static ssize_t fill(struct drain *d)
{
	struct fsnw *w = d->w;
	struct engine *e = &w->engine;
	uint64_t t0 = (d->flags & DRAIN_TIMED) ? stats_start(w) : 0;
	ssize_t n = read_group(w);

	stats_end(w, LAT_KERNEL_READ, t0);
	/* A read shorter than the buffer by a whole record emptied the queue. */
	e->more = n > 0 && (size_t)n + w->be->max_record > e->rbuf_len;
	e->kernel_empty = n >= 0 && !e->more;
	if (n <= 0)
		return n;
	e->rpos = 0;
	e->rlen = (size_t)n;
	return n;
}

/*
 * Route what the buffer holds, then read and route until a read comes back
 * short (the kernel queue was emptied: *emptied) or, without
 * DRAIN_COMPLETE, DRAIN_READS_MAX reads, or a direct read's array is full.
 */
static int read_loop(struct drain *d, bool *emptied)
{
	struct fsnw *w = d->w;
	struct engine *e = &w->engine;
	bool complete = d->flags & DRAIN_COMPLETE;
	int reads = 0;
	ssize_t n;

	*emptied = false;
	for (;;) {
		/* A read whose array the queue fills already reads no further
		 * (a direct read stops at its own array, below): the caller
		 * takes fewer events a call than a read brings, so reading on
		 * would move the kernel's records into a queue that grows
		 * until it overflows, while the kernel's had room. The records
		 * wait in the buffer or the kernel, newer than the queue's. */
		if (!complete && !d->direct && d->want && queue_depth(w->q) >= d->want) {
			d->enough = true;
			return reads;
		}
		/* A direct read stops when the array is full, or may be: merges
		 * can leave room, so then it goes on. */
		while (e->rpos < e->rlen && !route_buffered(d))
			if (!queue_direct_room(w->q))
				return reads;
		if (reads && !e->more) {
			*emptied = true;
			return reads;
		}
		if (!complete && reads >= DRAIN_READS_MAX)
			return reads;
		if (d->direct && !complete && !queue_direct_room(w->q))
			break;
		n = fill(d);
		if (n <= 0) {
			*emptied = n == 0;
			return n < 0 ? (int)n : reads;
		}
		reads++;
	}
	/*
	 * The array is full and the buffer used up. If the kernel may hold
	 * more, read it now: the records wait in the buffer for the next read,
	 * and fsnw_get_fd's readiness stays up instead of going down and up
	 * again (a syscall each).
	 */
	if (e->more) {
		n = fill(d);
		if (n < 0)
			return (int)n;
		*emptied = n == 0;
		reads += n > 0;
	}
	return reads;
}

/* engine_drain, for a drain set up by its caller (a direct read's, or not). */
static int drain_run(struct drain *d)
{
	struct fsnw *w = d->w;
	struct engine *e = &w->engine;
	bool emptied, more, retry = true;
	int reads = 0, ret;

	/* Nothing below the engine drains: a nested drain is a bug. */
	assert(!e->draining);
	e->draining = true;
	for (;;) {
		ret = read_loop(d, &emptied);
		if (ret >= 0)
			reads += ret;
		if (d->reconcile) {
			d->reconcile = false;
			route_reconcile(w);
		}
		if (ret < 0)
			break;
		if (!emptied) {
			/* Trees wait for a complete drain; the rest can wait
			 * for the next read, and so can they while the queue
			 * holds what the caller takes (they stay busy: no
			 * read sleeps before they are done). */
			if (d->enough || (!trees_busy(&w->trees) && !w->kwatches.npending))
				break;
			d->flags |= DRAIN_COMPLETE;
			continue;
		}
		kwatch_queue_emptied(&w->kwatches);
		ring_drained(w);
		/* A reader that keeps up drains this way each wakeup, with no
		 * link pending and no tree busy: settling, and ending trees,
		 * would find nothing to do then. */
		if (w->kwatches.npending || trees_busy(&w->trees))
			route_settle(w);
		more = trees_after_drain(w, retry);
		if (trees_busy(&w->trees))
			route_end_trees(w);
		if (!more)
			break;
		/* The walks made events (and maybe pending links) of their own. */
		retry = false;
		d->flags |= DRAIN_COMPLETE;
	}
	e->draining = false;
	PROBE2(read, reads, queue_depth(w->q));
	return ret < 0 ? ret : reads;
}

int engine_drain(struct fsnw *w, unsigned flags)
{
	struct drain d;

	drain_init(&d, w, flags, 0);
	return drain_run(&d);
}

/* A failed read leaves links pending; the next drain settles them, and
 * until then they hear nothing, which is the safe side. */
FSNW_COLD static void settle_by_read(struct fsnw *w)
{
	w->st.settles_read++;
	(void)engine_drain(w, DRAIN_COMPLETE);
}

void engine_settle(struct fsnw *w)
{
	struct engine *e = &w->engine;

	if (!w->kwatches.npending && !trees_busy(&w->trees))
		return;
	/* Nothing queued since the kernel queue was last empty, and nothing
	 * read but not yet routed (a direct read leaves records in rbuf): no
	 * event older than the pending links can wait (ring.h). Trees also
	 * need the echoes of their walks read. */
	if (likely(!trees_busy(&w->trees) && e->rpos >= e->rlen && ring_quiet(w))) {
		w->st.settles_ring++;
		route_settle(w);
		return;
	}
	settle_by_read(w);
}

/*
 * Make the eventfd readable exactly while events wait in the queue (or a
 * wake waits for a read). Only a change of state costs a syscall, and only
 * while someone can see it: an epoll set of fsnw_get_fd, or another reader
 * asleep in poll. A caller that reads with fsnw_read alone (or pumps) and
 * never sleeps beside another reader pays none; a reader about to sleep
 * brings the state up to date first (sleep_begin), so it neither
 * misses events waiting here nor wakes for ones already read.
 */
static void sync_ready(struct fsnw *w)
{
	struct engine *e = &w->engine;
	uint64_t v = 1;
	bool want;

	if (e->epfd < 0 && !e->sleepers)
		return;
	want = queue_depth(w->q) > 0 || e->rpos < e->rlen || e->wake;
	if (want == e->ev_ready)
		return;
	if (want) {
		if (sys_write(&w->st.sys_eventfd, e->evfd, &v, sizeof(v)) == sizeof(v))
			e->ev_ready = true;
	} else {
		ssize_t n = sys_read(&w->st.sys_eventfd, e->evfd, &v, sizeof(v));

		if (n == sizeof(v) || n == -EAGAIN)
			e->ev_ready = false;
	}
}

/* Add fd to the epoll set of fsnw_get_fd; false if it could not be. */
static bool epoll_join(struct fsnw *w, int fd, uint32_t events)
{
	return sys_epoll_add(&w->st.sys_other, w->engine.epfd, fd, events) == 0;
}

/*
 * The trees' retry timer: armed for the next retry that waits, so that a
 * reader asleep in fsnw_read, or in an epoll set holding fsnw_get_fd, wakes
 * for it; disarmed (which also makes it unreadable) when none waits.
 */
FSNW_COLD static void sync_timer(struct fsnw *w)
{
	struct engine *e = &w->engine;
	uint64_t due = trees_retry_due(&w->trees);
	struct itimerspec its = { 0 };

	/* A timer that fired stays readable until it is set again. */
	if (due == e->timer_due && (!due || stats_now_ns() < due))
		return;
	if (due && e->timerfd < 0) {
		e->timerfd = sys_timerfd(&w->st.sys_other, CLOCK_MONOTONIC, TFD_NONBLOCK);
		if (e->timerfd < 0) {
			e->timerfd = -1;
			return; /* retries then wait for the reads the caller makes */
		}
	}
	if (e->timerfd < 0)
		return;
	its.it_value.tv_sec = (time_t)(due / 1000000000u);
	its.it_value.tv_nsec = (long)(due % 1000000000u);
	if (sys_timerfd_set(&w->st.sys_other, e->timerfd, due ? TFD_TIMER_ABSTIME : 0, &its) == 0)
		e->timer_due = due;
}

/* The fds that wake a reader besides the group fd and the eventfd join
 * the epoll set once they exist. */
FSNW_COLD static void sync_epoll(struct fsnw *w)
{
	struct engine *e = &w->engine;
	int mfd = trees_mount_fd(&w->trees);

	if (e->epfd < 0)
		return;
	if (e->timerfd >= 0 && !e->timer_in_ep)
		e->timer_in_ep = epoll_join(w, e->timerfd, EPOLLIN);
	if (mfd >= 0 && !e->mounts_in_ep)
		e->mounts_in_ep = epoll_join(w, mfd, EPOLLPRI);
}

static void sync_wakers(struct fsnw *w)
{
	struct engine *e = &w->engine;

	/* sync_ready's own test, before the call: every call ends here, and
	 * one that reads with fsnw_read alone has nobody to see the eventfd. */
	if (e->epfd >= 0 || e->sleepers)
		sync_ready(w);
	/* No tree has ever had a retry or a mount table: nothing to do (the
	 * common case, checked here as every call ends with it). */
	if (unlikely(e->timerfd >= 0 || trees_retry_due(&w->trees)))
		sync_timer(w);
	if (unlikely(e->epfd >= 0))
		sync_epoll(w);
}

/*
 * Whether the mount table is looked at before this pass reads. A reader
 * about to sleep in engine_read's poll has the mount fd in its set, and
 * the poll says when it signals (mounts_due): nothing to do until then.
 * But a poll of the mount table takes its signal for whoever polled, and
 * a caller's epoll set that holds the fd of fsnw_get_fd polls it on its
 * own; and a call that does not sleep polls nothing. Those look (a poll of
 * the trees' own check fd, trees_check_mounts) after each read that found
 * the kernel queue empty: mount changes then wait at most until the reader
 * has caught up with the kernel queue, as the trees' other work does.
 */
static bool mounts_look(const struct fsnw *w, bool may_sleep)
{
	const struct engine *e = &w->engine;

	if (trees_mount_fd(&w->trees) < 0)
		return false;
	return e->mounts_due || (e->kernel_empty && (!may_sleep || e->epfd >= 0));
}

/*
 * Whether a pass that may sleep next can go to sleep without reading: the
 * last read found the kernel queue empty, nothing waits here, and nothing
 * needs a drain (trees' work, pending links, retries). The poll then tells
 * whether the kernel queued anything since, as raw inotify readers do: a
 * read that would find nothing costs no syscall.
 */
static bool read_can_wait(const struct fsnw *w)
{
	const struct engine *e = &w->engine;

	return e->kernel_empty && e->rpos >= e->rlen && !e->wake && !queue_depth(w->q) &&
	       !w->kwatches.npending && !trees_busy(&w->trees) && !trees_retry_due(&w->trees);
}

/* What one pass of engine_read returns. */
struct pass {
	size_t n;     /* events in evs */
	int err;      /* a read error */
	bool woken;   /* fsnw_wake asked this read to return */
};

/*
 * fsnw_read's step under the lock: release what the last read lent, follow
 * mount changes, drain (bounded), and pop up to max events. When nothing
 * waits in the queue the drain routes straight into evs (a direct read) and
 * stops reading once they are full. may_sleep: the caller sleeps if this
 * finds nothing; woke: it has just slept (read what woke it).
 */
static struct pass collect(struct fsnw *w, struct fsnw_event *evs, size_t max, bool may_sleep,
			   bool woke)
{
	struct engine *e = &w->engine;
	struct drain d;
	struct pass ps = { 0 };
	size_t reap_from = 0;
	int ret = 0;

	drain_init(&d, w, DRAIN_TIMED, max);
	queue_release_delivered(w->q);
	if (unlikely(mounts_look(w, may_sleep))) {
		e->mounts_due = false;
		trees_check_mounts(w);
	}
	e->lent = NULL;
	/* Names straight from rbuf need a spare buffer for reads meanwhile;
	 * without one the queue copies them. */
	if (!e->spare)
		e->spare = mem_alloc(e->rbuf_len);
	if (!may_sleep || woke || !read_can_wait(w)) {
		d.direct = queue_direct_begin(w->q, evs, max);
		ret = drain_run(&d);
		if (d.direct) {
			ps.n = queue_direct_end(w->q);
			/* Only an FSNW_IGNORED releases a watch: skip an array without one. */
			if (!queue_direct_ignored(w->q))
				reap_from = ps.n;
		}
	}
	ps.n += queue_pop(w->q, evs + ps.n, max - ps.n);
	watches_reap(w, evs + reap_from, ps.n - reap_from);
	kwatch_flush(w); /* a oneshot or dropped watch may have doomed a mark */
	ps.woken = e->wake;
	e->wake = false;
	sync_wakers(w);
	ps.err = ret < 0 ? ret : 0;
	return ps;
}

void engine_end_call(struct fsnw *w)
{
	kwatch_flush(w);
	if (unlikely(kwatch_unread_unmarks(&w->kwatches) >= UNREAD_IGNORED_MAX)) {
		(void)engine_drain(w, 0); /* an error here is the next read's to report */
		kwatch_flush(w);
	}
	sync_wakers(w);
}

int engine_wake(struct fsnw *w)
{
	struct engine *e = &w->engine;
	uint64_t v = 1;

	/* The eventfd wakes a reader asleep in poll or in an epoll set, and
	 * stays readable until a read has returned. */
	if (!e->ev_ready) {
		ssize_t n = sys_write(&w->st.sys_eventfd, e->evfd, &v, sizeof(v));

		if (n < 0)
			return (int)n;
		e->ev_ready = true;
	}
	e->wake = true;
	return 0;
}

/* What a reader sleeps on: taken under the lock, used without it. */
struct sleep {
	struct pollfd p[4];
	unsigned n;
	int mounts;      /* the index of the mount table fd in p, or -1 */
	uint64_t polls;  /* sys_poll's count, added to the stats under the lock */
};

/*
 * A reader is about to sleep (lock held): it counts as one who sees the
 * eventfd from now on, whose readiness is brought up to date, and sl gets
 * the group fd, the eventfd, the trees' retry timer and mount table.
 */
static void sleep_begin(struct fsnw *w, struct sleep *sl)
{
	struct engine *e = &w->engine;
	int mfd = trees_mount_fd(&w->trees);

	e->sleepers++;
	sync_ready(w);
	sl->n = 0;
	sl->mounts = -1;
	sl->polls = 0;
	sl->p[sl->n++] = (struct pollfd){ .fd = w->kfd, .events = POLLIN };
	sl->p[sl->n++] = (struct pollfd){ .fd = e->evfd, .events = POLLIN };
	if (e->timerfd >= 0)
		sl->p[sl->n++] = (struct pollfd){ .fd = e->timerfd, .events = POLLIN };
	if (mfd >= 0) {
		sl->mounts = (int)sl->n;
		sl->p[sl->n++] = (struct pollfd){ .fd = mfd, .events = POLLPRI };
	}
}

/* The reader is awake again (lock held): the mount table signalled, or not. */
static void sleep_end(struct fsnw *w, struct sleep *sl)
{
	assert(w->engine.sleepers > 0);
	w->engine.sleepers--;
	w->st.sys_poll += sl->polls;
	if (sl->mounts >= 0 && (sl->p[sl->mounts].revents & (POLLPRI | POLLERR)))
		w->engine.mounts_due = true;
}

/* How long a read may still sleep: -1 for ever, 0 not at all, else ms. */
static int sleep_left(int timeout_ms, uint64_t deadline)
{
	uint64_t now;

	if (timeout_ms <= 0)
		return timeout_ms < 0 ? -1 : 0;
	now = stats_now_ns();
	if (now >= deadline)
		return 0;
	return (int)((deadline - now + 999999u) / 1000000u);
}

int engine_read(struct fsnw *w, struct fsnw_event *evs, size_t max, int timeout_ms)
{
	bool nonblock = w->open_flags & FSNW_OPEN_NONBLOCK, slept = false;
	uint64_t deadline = 0;
	struct sleep sl;

	if (timeout_ms > 0)
		deadline = stats_now_ns() + (uint64_t)timeout_ms * 1000000u;
	for (;;) {
		struct pass ps;
		int left, ret;

		lock_take(&w->lock);
		if (slept)
			sleep_end(w, &sl);
		left = nonblock ? 0 : sleep_left(timeout_ms, deadline);
		ps = collect(w, evs, max, left != 0, slept);
		/* left, from before the pass, may be a few microseconds long: a
		 * pass that went to sleep without reading must sleep at least
		 * once, and the kernel's timeout is rounded up to ms anyway. */
		if (!ps.n && !ps.err && !ps.woken && left)
			sleep_begin(w, &sl);
		else
			left = 0;
		lock_give(&w->lock);
		if (ps.n)
			return (int)ps.n;
		if (ps.err < 0)
			return ps.err;
		if (ps.woken)
			return 0;
		if (nonblock)
			return -EAGAIN;
		if (!left)
			return 0;
		ret = sys_poll(&sl.polls, sl.p, sl.n, left);
		slept = true;
		/* A poll that timed out saw nothing ready, the mount table
		 * included: no read would find anything. */
		if (ret <= 0) {
			lock_take(&w->lock);
			sleep_end(w, &sl);
			lock_give(&w->lock);
			return ret;
		}
	}
}

/*
 * The epoll fd is made on the first fsnw_get_fd: a group fd in an epoll set
 * runs epoll's wakeup for every event the kernel queues (our own IN_IGNORED
 * included), a cost a caller that never polls should not pay. fsnw_read
 * sleeps in poll() on the group fd and the eventfd, without it.
 */
int engine_get_fd(struct fsnw *w)
{
	struct engine *e = &w->engine;
	int fd, err;

	if (e->epfd >= 0)
		return e->epfd;
	fd = sys_epoll_create(&w->st.sys_other);
	if (fd < 0)
		return fd;
	err = sys_epoll_add(&w->st.sys_other, fd, w->kfd, EPOLLIN);
	if (err == 0)
		err = sys_epoll_add(&w->st.sys_other, fd, e->evfd, EPOLLIN);
	if (err < 0) {
		sys_close(&w->st.sys_other, fd);
		return err;
	}
	e->epfd = fd;
	sync_epoll(w);
	sync_ready(w); /* not kept while nobody could see it */
	return fd;
}
