/* SPDX-License-Identifier: MIT */
/*
 * The whole event path without a kernel: a handle whose backend is a small
 * model of an inotify group (objects that can be marked, deleted, unmounted,
 * a bounded event queue that ends in IN_Q_OVERFLOW, IN_IGNORED after every
 * removed or dropped mark, records laid out as read(2) returns them) drives
 * inotify_decode, the kernel-watch table, the logical watches, the queue and
 * fsnw_read, under random add, remove, batch, event, delete, unmount,
 * overflow, read and allocation-failure sequences. Checked:
 *
 * - an event names a live wid (0 only for FSNW_OVERFLOW) with that watch's
 *   path, and only bits the watch asked for (FSNW_ISDIR, FSNW_UNMOUNT aside);
 * - after fsnw_remove returns 0, or after FSNW_IGNORED was read, nothing more
 *   comes for the wid; FSNW_IGNORED comes at most once per wid, and comes for
 *   every wid whose mark the kernel dropped; a oneshot watch has one event;
 * - kernel_watches equals the marks the model kernel holds, once the kernel
 *   queue is drained (no mark leaked, none forgotten);
 * - stats and the JSON rendering are consistent; nothing leaks (LeakSanitizer).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>

#include "mem.h"
#include "handle.h"
#include "stats.h"

#include "fuzz-check.h"

static int trace = -1;
#define TRACE(...)                                                                       \
	do {                                                                             \
		if (trace < 0)                                                           \
			trace = getenv("FUZZ_TRACE") != NULL;                            \
		if (trace)                                                               \
			fprintf(stderr, __VA_ARGS__);                                    \
	} while (0)

#define NOBJ 6       /* o0..o5; o4 and o5 are directories */
#define NPATHS 9     /* o0..o5, h0 and h1 (hard links of o0, o1), a missing path */
#define MAX_WIDS 256
#define MAX_OPS 2048
#define KBUF (64 * 1024)

static const char *const paths[NPATHS] = {
	"/o0", "/o1", "/o2", "/o3", "/o4", "/o5", "/h0", "/h1", "/missing",
};
static const int path_obj[NPATHS] = { 0, 1, 2, 3, 4, 5, 0, 1, -1 };

/* ----- the model kernel ----- */

struct kobj {
	bool exists;
	int wd;        /* 0: not marked */
	uint32_t mask; /* the mark's event bits */
};

static struct {
	struct kobj o[NOBJ];
	int next_wd;
	size_t marks;       /* marks held */
	size_t mark_limit;  /* max_user_watches */
	unsigned char buf[KBUF];
	size_t len, nrec, qmax;
	bool overflowed;    /* the queue ends in IN_Q_OVERFLOW */
	bool lost_ignored;  /* an IN_IGNORED went in an overflow: table checks off */
} K;

static void kq_record(int wd, uint32_t mask, uint32_t cookie, const char *name, size_t pad)
{
	struct inotify_event hdr = { .wd = wd, .mask = mask, .cookie = cookie };
	size_t nl = name ? strlen(name) : 0;
	size_t len = name ? ((nl + 1 + pad + 15) & ~(size_t)15) : 0;

	if (K.nrec >= K.qmax) {
		/* Full: the kernel drops the event and queues one overflow. */
		if (mask & IN_IGNORED)
			K.lost_ignored = true;
		if (K.overflowed)
			return;
		K.overflowed = true;
		hdr = (struct inotify_event){ .wd = -1, .mask = IN_Q_OVERFLOW };
		len = 0;
		name = NULL;
	}
	if (K.len + sizeof(hdr) + len > KBUF) {
		if (mask & IN_IGNORED)
			K.lost_ignored = true;
		return;
	}
	hdr.len = (uint32_t)len;
	TRACE("  kernel: wd %d mask %#x cookie %u name %s\n", hdr.wd, hdr.mask, hdr.cookie,
	      name ? name : "-");
	memcpy(K.buf + K.len, &hdr, sizeof(hdr));
	memset(K.buf + K.len + sizeof(hdr), 0, len);
	if (name)
		memcpy(K.buf + K.len + sizeof(hdr), name, nl);
	K.len += sizeof(hdr) + len;
	K.nrec++;
}

static int obj_of_wd(int wd)
{
	for (int i = 0; i < NOBJ; i++)
		if (K.o[i].wd && K.o[i].wd == wd)
			return i;
	return -1;
}

/* The kernel drops a mark on its own (delete, unmount): IN_IGNORED follows. */
static void k_drop(int obj);

static int fake_init(struct fsnw *w)
{
	(void)w;
	return 0;
}

static void fake_fini(struct fsnw *w)
{
	(void)w;
}

static int fake_mark(struct fsnw *w, int dirfd, const char *path, uint32_t mask, uint32_t flags,
		     int replace, struct kkey *key, struct sys_tally *t)
{
	int obj = -1;
	struct kobj *o;

	(void)w;
	t->inotify_add_watch++;
	if (dirfd != AT_FDCWD)
		return -EINVAL;
	for (int i = 0; i < NPATHS; i++)
		if (!strcmp(path, paths[i]))
			obj = path_obj[i];
	if (obj < 0 || !K.o[obj].exists)
		return -ENOENT;
	o = &K.o[obj];
	if ((flags & FSNW_WATCH_ONLYDIR) && obj < 4)
		return -ENOTDIR;
	if (!o->wd) {
		if (K.marks >= K.mark_limit)
			return -ENOSPC;
		o->wd = ++K.next_wd;
		o->mask = 0;
		K.marks++;
		TRACE("  kernel: mark %s wd %d\n", path, o->wd);
	}
	o->mask = replace ? (mask & FSNW_ALL_EVENTS) : (o->mask | (mask & FSNW_ALL_EVENTS));
	key->wd = o->wd;
	key->len = sizeof(int);
	memcpy(key->bytes, &o->wd, sizeof(int));
	return 0;
}

static int fake_unmark(struct fsnw *w, const struct kwatch *kw, struct sys_tally *t)
{
	int obj = obj_of_wd(kwatch_wd(kw));

	(void)w;
	t->inotify_rm_watch++;
	if (obj < 0)
		return 0; /* dropped first: EINVAL, tolerated */
	K.o[obj].wd = 0;
	K.marks--;
	TRACE("  kernel: unmark wd %d\n", kwatch_wd(kw));
	kq_record(kwatch_wd(kw), IN_IGNORED, 0, NULL, 0);
	return 0;
}

/* The engine's read(2) of the group fd, on the model kernel. */
static ssize_t fake_read(struct fsnw *w, void *buf, size_t len)
{
	size_t n = 0;

	w->st.sys_read++;
	/* Whole records only, as the kernel hands them out. */
	while (n < K.len) {
		struct inotify_event hdr;
		size_t rl;

		memcpy(&hdr, K.buf + n, sizeof(hdr));
		rl = sizeof(hdr) + hdr.len;
		if (n + rl > len)
			break;
		n += rl;
	}
	if (!n)
		return 0;
	memcpy(buf, K.buf, n);
	memmove(K.buf, K.buf + n, K.len - n);
	K.len -= n;
	/* Record count and overflow state restart with what is left. */
	K.nrec = 0;
	for (size_t off = 0; off < K.len;) {
		struct inotify_event hdr;

		memcpy(&hdr, K.buf + off, sizeof(hdr));
		off += sizeof(hdr) + hdr.len;
		K.nrec++;
	}
	K.overflowed = K.len != 0 && K.overflowed;
	return (ssize_t)n;
}

static size_t fake_decode(struct fsnw *w, const void *buf, size_t len, kevent_fn fn, void *arg)
{
	(void)w;
	return inotify_decode(buf, len, fn, arg);
}

static const struct backend fake_backend = {
	.id = FSNW_BACKEND_INOTIFY,
	.name = "model-inotify",
	.init = fake_init,
	.fini = fake_fini,
	.mark = fake_mark,
	.unmark = fake_unmark,
	.decode = fake_decode,
	.max_record = sizeof(struct inotify_event) + NAME_MAX + 1,
	.inotify_records = true,
};

/* A handle as fsnw_open makes one, on the model kernel and with no fds. */
static struct fsnw *fake_open(uint32_t flags, uint32_t capacity, uint32_t idle)
{
	struct fsnw_options o = {
		.size = sizeof(o),
		.flags = flags | FSNW_OPEN_NONBLOCK,
		.queue_capacity = capacity,
		.idle_watches = idle,
	};
	struct fsnw *w = handle_alloc(&o);

	CHECK(w);
	w->be = &fake_backend;
	w->engine.sys_read = fake_read;
	w->st.backend = FSNW_BACKEND_INOTIFY;
	return w;
}

/* ----- the caller's ledger ----- */

enum wstate { W_LIVE, W_REMOVED, W_GONE };

struct wrec {
	int wid;
	int path;
	uint32_t mask;
	uint32_t flags;
	int wd;            /* the model kernel's wd it landed on */
	enum wstate state;
	bool doomed;       /* its mark was dropped by the kernel: IGNORED is owed */
	int events;        /* non-IGNORED events read */
};

static struct wrec recs[MAX_WIDS];
static int nrecs;
static bool alloc_failed; /* an injected failure was hit: losses may be covered by overflow */
static long fail_k = -1;  /* the failure injected last, until it is hit */
static bool overflow_read;

static void note_failure(void)
{
	if (fail_k >= 0 && mem_count() > fail_k) {
		alloc_failed = true;
		fail_k = -1;
	}
}

static struct wrec *rec_of(int wid)
{
	for (int i = 0; i < nrecs; i++)
		if (recs[i].wid == wid)
			return &recs[i];
	return NULL;
}

static void k_drop(int obj)
{
	int wd = K.o[obj].wd;

	if (!wd)
		return;
	K.o[obj].wd = 0;
	K.marks--;
	kq_record(wd, IN_IGNORED, 0, NULL, 0);
	for (int i = 0; i < nrecs; i++)
		if (recs[i].wd == wd && recs[i].state == W_LIVE)
			recs[i].doomed = true;
}

static void note_added(int wid, int path, uint32_t mask, uint32_t flags)
{
	struct wrec *r;

	CHECK(wid > 0);
	CHECK(!rec_of(wid));
	if (nrecs == MAX_WIDS)
		return;
	r = &recs[nrecs++];
	*r = (struct wrec){ .wid = wid, .path = path, .mask = mask & FSNW_ALL_EVENTS,
			    .flags = flags | (mask & ~FSNW_ALL_EVENTS),
			    .wd = K.o[path_obj[path]].wd };
	CHECK(r->wd != 0);
}

static void check_event(const struct fsnw_event *ev)
{
	struct wrec *r;

	TRACE("  read: wid %d mask %#x count %u path %s name %s\n", ev->wid, ev->mask, ev->count,
	      ev->path ? ev->path : "-", ev->name ? ev->name : "-");
	CHECK(ev->count >= 1);
	if (ev->mask & FSNW_OVERFLOW) {
		CHECK(ev->wid == 0);
		CHECK(ev->mask == FSNW_OVERFLOW);
		CHECK(ev->path == NULL && ev->name == NULL);
		overflow_read = true;
		return;
	}
	CHECK(ev->wid > 0);
	r = rec_of(ev->wid);
	if (!r)
		return; /* a wid past the ledger's size */
	CHECK(r->state == W_LIVE);
	CHECK(ev->path && !strcmp(ev->path, paths[r->path]));
	if (ev->mask & FSNW_IGNORED) {
		CHECK(ev->mask == FSNW_IGNORED);
		CHECK(ev->name == NULL);
		CHECK(ev->count == 1);
		/* Only a dropped mark or a fired oneshot ends a watch. */
		CHECK(r->doomed || (r->flags & FSNW_WATCH_ONESHOT));
		r->state = W_GONE;
		return;
	}
	CHECK(!(ev->mask & ~(r->mask | FSNW_ISDIR | FSNW_UNMOUNT)));
	CHECK(ev->mask & (FSNW_ALL_EVENTS | FSNW_UNMOUNT));
	if (ev->name)
		CHECK(strlen(ev->name) > 0 && strlen(ev->name) <= NAME_MAX);
	r->events++;
	if (r->flags & FSNW_WATCH_ONESHOT)
		CHECK(r->events == 1);
}

/*
 * The last read's strings, and copies of them: they must read the same until
 * the next fsnw_read, whatever the handle does meanwhile (adds, removes and
 * pumps read the kernel queue too, and a direct read lends names from the
 * read buffer).
 */
static struct {
	const char *path, *name;
	char path_copy[16], name_copy[NAME_MAX + 1];
} lent[32];
static int nlent;

static void check_lent(void)
{
	for (int i = 0; i < nlent; i++) {
		CHECK(!lent[i].path || !strcmp(lent[i].path, lent[i].path_copy));
		CHECK(!lent[i].name || !strcmp(lent[i].name, lent[i].name_copy));
	}
}

/* The strings of evs, just read, checked until the next read. */
static void lend(const struct fsnw_event *evs, int n)
{
	nlent = n > 0 ? n : 0;
	for (int i = 0; i < nlent; i++) {
		lent[i].path = evs[i].path;
		lent[i].name = evs[i].name;
		if (evs[i].path)
			snprintf(lent[i].path_copy, sizeof(lent[i].path_copy), "%s", evs[i].path);
		if (evs[i].name)
			snprintf(lent[i].name_copy, sizeof(lent[i].name_copy), "%s", evs[i].name);
	}
}

static void read_some(struct fsnw *w, size_t max)
{
	struct fsnw_event evs[32];
	int n;

	check_lent();
	n = fsnw_read(w, evs, max, 0);
	nlent = 0;
	if (n == -EAGAIN)
		return;
	CHECK(n > 0 && (size_t)n <= max);
	for (int i = 0; i < n; i++)
		check_event(&evs[i]);
	lend(evs, n);
}

static struct fsnw_stats snap(struct fsnw *w)
{
	struct fsnw_stats st = { .size = sizeof(st) };

	CHECK(fsnw_get_stats(w, &st) == 0);
	return st;
}

static void check_stats(struct fsnw *w)
{
	struct fsnw_stats st = snap(w);
	char small[16], *big;
	int len;

	size_t live = 0;

	CHECK(st.parked_watches <= st.kernel_watches);
	CHECK(st.queue_depth <= st.queue_high_water);
	CHECK(st.backend == FSNW_BACKEND_INOTIFY);
	/* Every wid the ledger holds live is in the table (IGNORED not read
	 * yet included), unless memory ran out and released it early. */
	for (int i = 0; i < nrecs; i++)
		live += recs[i].state == W_LIVE;
	if (nrecs < MAX_WIDS) {
		CHECK(st.logical_watches <= live);
		if (!alloc_failed)
			CHECK(st.logical_watches == live);
	}
	len = fsnw_stats_json(w, small, sizeof(small));
	CHECK(len > (int)sizeof(small));
	CHECK(small[sizeof(small) - 1] == '\0' && strlen(small) == sizeof(small) - 1);
	big = malloc((size_t)len + 1);
	CHECK(big);
	CHECK(fsnw_stats_json(w, big, (size_t)len + 1) == len);
	CHECK(strlen(big) == (size_t)len && big[0] == '{' && big[len - 1] == '}');
	free(big);
}

/* Read everything the model kernel holds and everything queued. */
static void drain_all(struct fsnw *w)
{
	for (int guard = 0; guard < 100000; guard++) {
		struct fsnw_event evs[32];
		int n;

		CHECK(fsnw_pump(w) >= 0);
		check_lent();
		n = fsnw_read(w, evs, 32, 0);
		nlent = 0;
		if (n == -EAGAIN && K.len == 0)
			return;
		CHECK(n > 0 || n == -EAGAIN);
		for (int i = 0; i < n; i++)
			check_event(&evs[i]);
		lend(evs, n);
	}
	CHECK(!"drain did not end");
}

static void check_table(struct fsnw *w)
{
	struct fsnw_stats st = snap(w);

	CHECK(K.len == 0);
	if (!K.lost_ignored)
		CHECK(st.kernel_watches == K.marks);
}

struct input {
	const uint8_t *p;
	size_t left;
};

static uint8_t take(struct input *in)
{
	if (!in->left)
		return 0;
	in->left--;
	return *in->p++;
}

static const char *const names[] = { NULL, "a", "b", "sub", "a-name-that-does-not-fit-inline-0123456789" };

static void do_add(struct fsnw *w, struct input *in)
{
	uint8_t b0 = take(in), b1 = take(in), b2 = take(in);
	int path = b0 % NPATHS;
	uint32_t mask = ((uint32_t)b1 | ((uint32_t)(b2 & 0x0f) << 8)) & FSNW_ALL_EVENTS;
	uint32_t flags = 0;
	long before = mem_count();
	int obj = path_obj[path];
	int wid;

	if (!mask)
		mask = FSNW_MODIFY;
	if (b2 & 0x10)
		flags |= FSNW_WATCH_ONESHOT;
	if (b2 & 0x20)
		flags |= FSNW_WATCH_EXCL_UNLINK;
	if (b2 & 0x40)
		flags |= FSNW_WATCH_ONLYDIR;
	if (b2 & 0x80)
		mask |= FSNW_WATCH_DONT_FOLLOW; /* inotify style: a flag inside the mask */
	wid = fsnw_add(w, paths[path], mask, flags);
	TRACE("add %s mask %#x flags %#x -> %d\n", paths[path], mask, flags, wid);
	if (wid > 0) {
		note_added(wid, path, mask, flags);
		return;
	}
	if (obj < 0 || !K.o[obj].exists) {
		CHECK(wid == -ENOENT);
	} else if ((flags & FSNW_WATCH_ONLYDIR) && obj < 4) {
		CHECK(wid == -ENOTDIR);
	} else {
		CHECK(wid == -ENOSPC || wid == -ENOMEM || wid == -ENOENT);
		if (wid == -ENOMEM)
			CHECK(mem_count() > before);
	}
}

static void do_batch(struct fsnw *w, struct input *in)
{
	struct fsnw_batch_item items[4];
	uint8_t b = take(in);
	size_t n = (size_t)(b % 4) + 1;
	bool atomic = b & 0x80;
	size_t before = K.marks;
	int wd_before = K.next_wd;
	int ok, succeeded = 0;

	for (size_t i = 0; i < n; i++) {
		uint8_t p = take(in);

		items[i] = (struct fsnw_batch_item){ .path = paths[p % NPATHS],
						     .mask = ((uint32_t)(p >> 4) + 1) & FSNW_ALL_EVENTS,
						     .result = 12345 };
	}
	ok = fsnw_add_batch(w, items, n, atomic ? FSNW_BATCH_ATOMIC : 0);
	TRACE("batch%s n %zu -> %d:", atomic ? " atomic" : "", n, ok);
	for (size_t i = 0; i < n; i++)
		TRACE(" %s=%d", items[i].path, items[i].result);
	TRACE(" (marks %zu -> %zu)\n", before, K.marks);
	CHECK(ok >= 0 && (size_t)ok <= n);
	for (size_t i = 0; i < n; i++) {
		CHECK(items[i].result != 12345);
		if (items[i].result > 0) {
			int path = 0;

			for (int j = 0; j < NPATHS; j++)
				if (items[i].path == paths[j])
					path = j;
			note_added(items[i].result, path, items[i].mask, 0);
			succeeded++;
		}
	}
	CHECK(succeeded == ok);
	if (atomic && (size_t)ok != n) {
		CHECK(ok == 0);
		/* Rolled back: every mark the batch made is gone again, and none
		 * is left that was not there before (an event read during the
		 * batch may have ended a watch, and with it an older mark). */
		for (int i = 0; i < NOBJ; i++)
			CHECK(K.o[i].wd <= wd_before);
		CHECK(K.marks <= before);
	}
}

static void do_remove(struct fsnw *w, struct input *in)
{
	uint8_t b = take(in);
	struct wrec *r;
	int ret;

	if (!nrecs || (b & 0x80)) {
		CHECK(fsnw_remove(w, (b & 0x40) ? -(int)b : 100000 + b) < 0);
		return;
	}
	r = &recs[b % nrecs];
	ret = fsnw_remove(w, r->wid);
	TRACE("remove %d -> %d\n", r->wid, ret);
	if (r->state == W_LIVE) {
		/* A watch released under memory pressure (its IGNORED covered
		 * by an overflow) is already gone. */
		CHECK(ret == 0 || (ret == -ENOENT && alloc_failed));
		r->state = W_REMOVED;
	} else {
		CHECK(ret == -ENOENT);
	}
}

static void do_event(struct input *in)
{
	uint8_t b0 = take(in), b1 = take(in), b2 = take(in);
	struct kobj *o = &K.o[b0 % NOBJ];
	uint32_t mask = ((uint32_t)b1 | ((uint32_t)(b2 & 0x0f) << 8)) & FSNW_ALL_EVENTS;
	const char *name = names[(b0 >> 3) % (sizeof(names) / sizeof(names[0]))];
	uint32_t cookie = (mask & FSNW_MOVE) ? (uint32_t)(b2 >> 6) : 0;

	if (!o->wd || !mask)
		return;
	/* The kernel queues only what the mark asks for; now and then a stale
	 * mask lets one more through, which the library must filter. */
	if (!(b2 & 0x10))
		mask &= o->mask;
	if (!mask)
		return;
	if (b2 & 0x20)
		mask |= IN_ISDIR;
	kq_record(o->wd, mask, cookie, name, b0 & 0x4);
}

static void do_garbage(struct input *in)
{
	/* A record the kernel would never send: any wd, any bits. */
	uint8_t b0 = take(in), b1 = take(in), b2 = take(in), b3 = take(in);
	/* A wd the kernel gave out already, or one it never will (wds are not
	 * reused soon, so no record names a wd before the mark that gets it). */
	int wd = (b0 & 0x80) ? 1000000 + (b0 & 0x7f) : (int)(b0 % (K.next_wd + 2)) - 1;
	uint32_t mask = (uint32_t)b1 | ((uint32_t)b2 << 8) | ((uint32_t)b3 << 24);
	int obj = obj_of_wd(wd);

	/* The library takes IN_IGNORED at its word: so does the model. */
	if ((mask & IN_IGNORED) && !(mask & IN_Q_OVERFLOW) && obj >= 0) {
		K.o[obj].wd = 0;
		K.marks--;
		for (int i = 0; i < nrecs; i++)
			if (recs[i].wd == wd && recs[i].state == W_LIVE)
				recs[i].doomed = true;
	}
	kq_record(wd, mask, b2, (b3 & 1) ? "g" : NULL, 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	uint8_t cfg = take(&in), cfg2 = take(&in);
	uint32_t capacity = (cfg & 0x7) ? (cfg & 0x7) * 3 : FSNW_QUEUE_UNLIMITED;
	struct fsnw *w;

	memset(&K, 0, sizeof(K));
	for (int i = 0; i < NOBJ; i++)
		K.o[i].exists = true;
	K.mark_limit = (cfg2 & 0x7) + 1;
	K.qmax = (size_t)((cfg2 >> 3) & 0x1f) + 4;
	nrecs = 0;
	alloc_failed = false;
	fail_k = -1;
	overflow_read = false;
	nlent = 0;
	w = fake_open((cfg & 0x8) ? FSNW_OPEN_NO_MERGE : 0, capacity, (cfg >> 4) & 0x3);

	for (int ops = 0; in.left && ops < MAX_OPS; ops++) {
		uint8_t op = take(&in);

		note_failure();
		switch (op % 16) {
		case 0:
		case 1:
			do_add(w, &in);
			break;
		case 2:
			do_remove(w, &in);
			break;
		case 3:
			do_batch(w, &in);
			break;
		case 4:
		case 5:
		case 6:
			do_event(&in);
			break;
		case 7: {
			int obj = take(&in) % NOBJ;

			/* Deleted: DELETE_SELF, then the kernel drops the mark. */
			if (K.o[obj].wd)
				kq_record(K.o[obj].wd, IN_DELETE_SELF, 0, NULL, 0);
			k_drop(obj);
			K.o[obj].exists = false;
			break;
		}
		case 8:
			K.o[take(&in) % NOBJ].exists = true;
			break;
		case 9:
			/* Unmounted: IN_UNMOUNT and IN_IGNORED for every mark. */
			for (int i = 0; i < NOBJ; i++) {
				if (K.o[i].wd)
					kq_record(K.o[i].wd, IN_UNMOUNT, 0, NULL, 0);
				k_drop(i);
			}
			break;
		case 10:
			kq_record(-1, IN_Q_OVERFLOW, 0, NULL, 0);
			break;
		case 11:
			read_some(w, (size_t)(take(&in) % 32) + 1);
			break;
		case 12:
			CHECK(fsnw_pump(w) >= 0);
			break;
		case 13:
			fail_k = take(&in) % 8;
			TRACE("fail allocation %ld from now\n", fail_k + 1);
			mem_fail_after(fail_k);
			break;
		case 14:
			do_garbage(&in);
			break;
		default:
			check_stats(w);
			break;
		}
		check_lent();
		note_failure();
	}
	note_failure();
	mem_fail_after(-1);
	fail_k = -1;

	drain_all(w);
	check_table(w);
	/* Every wid whose mark the kernel dropped heard FSNW_IGNORED, unless
	 * the IN_IGNORED itself was lost or memory ran out (overflow read). */
	for (int i = 0; i < nrecs; i++) {
		struct wrec *r = &recs[i];

		if (r->state == W_LIVE && r->doomed && !K.lost_ignored)
			CHECK(alloc_failed && overflow_read);
	}
	fsnw_close(w);
	return 0;
}
