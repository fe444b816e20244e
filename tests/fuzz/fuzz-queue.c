/* SPDX-License-Identifier: MIT */
/*
 * The event queue (lib/queue.c) driven by random operation sequences and
 * checked, after every operation, against a reference model written from
 * the contract in lib/queue.h rather than from the code:
 *
 * - every pushed event is delivered, merged into an unread event (whose
 *   count then grows by exactly one), dropped under an overflow event that
 *   is delivered, or purged with its owner; nothing else comes out;
 * - events come out in order of first occurrence, a pending overflow is
 *   always the tail and there is at most one;
 * - a merge only joins equal events (owner, path, mask, name, no cookie, not
 *   IGNORED/OVERFLOW/UNMOUNT) and never crosses a create/delete/move of the
 *   name; when the whole queue fits the merge scan, an allowed merge happens;
 * - a drop happens only when the queue is full, an overflow is pending, the
 *   name is too long, or an allocation failed (the fuzzer injects those);
 * - depth never exceeds capacity + forced events waiting + 1;
 * - every counter adds up, each owner's count of queued events is right,
 *   strings handed out stay valid until the next release, and freeing the
 *   queue gives every path reference back.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "queue.h"
#include "strref.h"

#define NOWNERS 4
#define NPATHS 3
#define MAX_OPS 1024
#define HUGE_NAME 65536

#include "fuzz-check.h"

static char huge[HUGE_NAME];

struct name {
	const char *s;
	size_t len;
};

/* Short, inline-sized, heap-sized, the longest that fits, one that does not. */
static struct name names[] = {
	{ NULL, 0 },
	{ "a", 1 },
	{ "b", 1 },
	{ "c", 1 },
	{ "a-name-longer-than-the-inline-buffer-of-a-slot-0123456789", 58 },
	{ huge, 300 },
	{ "", 0 }, /* an empty, non-NULL name */
	{ huge, 65534 }, /* these two last: picked rarely */
	{ huge, 65535 },
};
#define NNAMES (sizeof(names) / sizeof(names[0]))

static const uint32_t masks[] = {
	FSNW_MODIFY, FSNW_ATTRIB, FSNW_ACCESS, FSNW_CLOSE_WRITE, FSNW_CREATE, FSNW_DELETE,
	FSNW_MOVED_FROM, FSNW_MOVED_TO, FSNW_DELETE_SELF, FSNW_MOVE_SELF, FSNW_IGNORED,
	FSNW_UNMOUNT, FSNW_OVERFLOW, FSNW_MODIFY | FSNW_ISDIR, FSNW_CREATE | FSNW_ISDIR,
	FSNW_MODIFY | FSNW_SYNTHETIC, FSNW_CREATE | FSNW_SYNTHETIC,
};
#define NMASKS (sizeof(masks) / sizeof(masks[0]))

struct ment {
	int owner;   /* index */
	int path;    /* index, -1: NULL */
	int name;    /* index into names */
	uint32_t mask, cookie, count;
	bool barrier, mergeable, forced;
};

struct model {
	struct ment *e; /* waiting events, oldest first (the overflow apart) */
	size_t n, cap;
	bool ovf;
	uint32_t ovf_count;
	uint32_t capacity;
	bool merge;
	size_t forced_waiting;
	struct queue_counters c;
	uint64_t pushes;        /* queue_push calls */
	int huge_pushes;        /* of which with a 64 KiB name */
	uint64_t ovf_pushes;    /* of which FSNW_OVERFLOW itself */
	uint64_t ovf_raised;    /* raises: drops, queue_overflow, FSNW_OVERFLOW pushes */
	uint64_t ovf_delivered; /* overflow events popped */
	uint64_t ovf_count_out; /* sum of their counts */
	uint64_t count_out;     /* sum of the counts of the other events popped */
	uint64_t count_purged;  /* sum of the counts of purged events */
	/* Events popped and not yet released: their strings must stay readable. */
	struct ment lent[64 * 16];
	struct fsnw_event lent_ev[64 * 16];
	size_t nlent;
	bool lent_ovf[64 * 16];
};

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

static bool is_barrier(uint32_t mask, int name)
{
	return names[name].s && (mask & (FSNW_CREATE | FSNW_DELETE | FSNW_MOVED_FROM |
					 FSNW_MOVED_TO));
}

static bool never_merged(uint32_t mask, uint32_t cookie)
{
	return cookie || (mask & (FSNW_IGNORED | FSNW_OVERFLOW | FSNW_UNMOUNT));
}

/* The names of the table differ pairwise (by NULL-ness, length or bytes). */
static bool same_name(int a, int b)
{
	return a == b;
}

static bool same_key(const struct ment *m, int owner, int path, int name)
{
	return m->owner == owner && m->path == path && same_name(m->name, name);
}

/* The event an equal push must merge into: the newest equal one, unless a
 * barrier for the name stands between. -1 when none. */
static long merge_target(const struct model *m, int owner, int path, uint32_t mask, int name)
{
	for (size_t i = m->n; i-- > 0;) {
		const struct ment *e = &m->e[i];

		if (!same_key(e, owner, path, name))
			continue;
		if (e->barrier)
			return -1;
		if (e->mask == mask && e->mergeable)
			return (long)i;
	}
	return -1;
}

static void model_raise(struct model *m)
{
	m->ovf_raised++;
	if (m->ovf) {
		m->ovf_count++;
		return;
	}
	m->ovf = true;
	m->ovf_count = 1;
}

static void model_append(struct model *m, const struct ment *e)
{
	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 64;
		m->e = realloc(m->e, m->cap * sizeof(*m->e));
		CHECK(m->e);
	}
	m->e[m->n++] = *e;
	if (e->forced)
		m->forced_waiting++;
}

static void model_remove(struct model *m, size_t i)
{
	if (m->e[i].forced)
		m->forced_waiting--;
	memmove(&m->e[i], &m->e[i + 1], (m->n - i - 1) * sizeof(*m->e));
	m->n--;
}

static void note_depth(struct model *m)
{
	m->c.depth = m->n + (m->ovf ? 1 : 0);
	if (m->c.depth > m->c.high_water)
		m->c.high_water = m->c.depth;
}

static void check_state(const struct model *m, struct queue *q, struct qowner *owners)
{
	const struct queue_counters *c = queue_counters(q);
	uint32_t per_owner[NOWNERS] = { 0 };

	CHECK(c->queued == m->c.queued);
	CHECK(c->merged == m->c.merged);
	CHECK(c->dropped_full == m->c.dropped_full);
	CHECK(c->overflows == m->c.overflows);
	CHECK(c->delivered == m->c.delivered);
	CHECK(c->purged == m->c.purged);
	CHECK(c->depth == m->c.depth);
	CHECK(c->high_water == m->c.high_water);
	CHECK(queue_depth(q) == m->n + (m->ovf ? 1 : 0));
	if (m->capacity != FSNW_QUEUE_UNLIMITED)
		CHECK(queue_depth(q) <= (size_t)m->capacity + m->forced_waiting + 1);
	for (size_t i = 0; i < m->n; i++)
		per_owner[m->e[i].owner]++;
	for (int i = 0; i < NOWNERS; i++)
		CHECK(owners[i].queued == per_owner[i]);
	/* Every event that took a slot is waiting, was delivered or was purged. */
	CHECK(m->c.queued == m->n + (m->c.delivered - m->ovf_delivered) + m->c.purged);
	/* Every push is in a slot, merged, or covered by an overflow. */
	CHECK(m->pushes == m->c.queued + m->c.merged + m->c.dropped_full + m->ovf_pushes);
}

/* The strings of every lent event are still what they were. */
static void check_lent(const struct model *m, struct strref **paths)
{
	for (size_t i = 0; i < m->nlent; i++) {
		const struct fsnw_event *ev = &m->lent_ev[i];
		const struct ment *e = &m->lent[i];

		if (m->lent_ovf[i]) {
			CHECK(ev->path == NULL && ev->name == NULL);
			continue;
		}
		if (e->path < 0)
			CHECK(ev->path == NULL);
		else
			CHECK(ev->path && !strcmp(ev->path, paths[e->path]->s));
		if (!names[e->name].s) {
			CHECK(ev->name == NULL);
		} else {
			CHECK(ev->name != NULL);
			CHECK(!memcmp(ev->name, names[e->name].s, names[e->name].len));
			CHECK(ev->name[names[e->name].len] == '\0');
		}
	}
}

static void do_push(struct model *m, struct queue *q, struct qowner *owners,
		    struct strref **paths, struct input *in, long fail_at)
{
	uint8_t b0 = take(in), b1 = take(in), b2 = take(in);
	int owner = b0 % NOWNERS;
	int path = (int)((b0 >> 2) % (NPATHS + 1)) - 1;
	/* The two huge names (hashing 64 KiB is slow) only now and then, and
	 * a few times per input at most. */
	int name = b1 < 0xfe || m->huge_pushes >= 2 ? (int)(b1 % (NNAMES - 2))
						      : (int)(NNAMES - 2 + (b1 & 1));
	uint32_t mask = masks[((b0 >> 4) + ((b2 >> 2) & 0x7)) % NMASKS] |
			((b2 & 0x80) ? FSNW_ISDIR : 0);
	uint32_t cookie = (b2 & 0x40) ? (b2 & 0x3) + 1 : 0;
	bool force = b2 & 0x20;
	bool mergeable = m->merge && !never_merged(mask, cookie);
	bool barrier = is_barrier(mask, name);
	long before = mem_count(), after;
	enum queue_result r;
	long target = -1;

	m->pushes++;
	m->huge_pushes += name >= (int)NNAMES - 2;
	r = queue_push(q, &owners[owner], path < 0 ? NULL : paths[path], mask, cookie,
		       names[name].s, names[name].len, force ? QUEUE_FORCE : 0);
	after = mem_count();

	if (mask & FSNW_OVERFLOW) {
		CHECK(r == QUEUE_QUEUED);
		m->ovf_pushes++;
		model_raise(m);
		note_depth(m);
		return;
	}
	if (mergeable && !barrier)
		target = merge_target(m, owner, path, mask, name);
	if (r == QUEUE_MERGED) {
		CHECK(target >= 0);
		m->e[target].count++;
		m->c.merged++;
		return;
	}
	/* The scan is bounded (QUEUE_MERGE_SCAN unread events of the same
	 * owner, path and name, newest first): a merge may be missed only
	 * when the target lies beyond it. */
	if (target >= 0) {
		size_t newer = 0;

		for (size_t i = (size_t)target + 1; i < m->n; i++)
			newer += same_key(&m->e[i], owner, path, name);
		CHECK(newer >= QUEUE_MERGE_SCAN);
	}
	if (r == QUEUE_DROPPED) {
		bool full = !force && (m->ovf || (m->capacity != FSNW_QUEUE_UNLIMITED &&
						  m->n >= m->capacity));
		bool failed = fail_at > before && fail_at <= after;
		bool toolong = names[name].s && names[name].len >= UINT16_MAX;

		CHECK(full || failed || toolong);
		m->c.dropped_full++;
		if (!m->ovf)
			m->c.overflows++;
		model_raise(m);
		note_depth(m);
		return;
	}
	CHECK(r == QUEUE_QUEUED);
	/* Nothing takes a slot past the capacity or behind an overflow unless forced. */
	if (!force) {
		CHECK(!m->ovf);
		if (m->capacity != FSNW_QUEUE_UNLIMITED)
			CHECK(m->n < m->capacity);
	}
	CHECK(!(names[name].s && names[name].len >= UINT16_MAX));
	struct ment e = {
		.owner = owner, .path = path, .name = name, .mask = mask, .cookie = cookie,
		.count = 1, .barrier = barrier, .mergeable = mergeable && !barrier,
		.forced = force,
	};
	model_append(m, &e);
	m->c.queued++;
	note_depth(m);
}

static void do_pop(struct model *m, struct queue *q, struct qowner *owners,
		   struct strref **paths, size_t max)
{
	struct fsnw_event evs[64];
	size_t want = m->n + (m->ovf ? 1 : 0), n;

	if (want > max)
		want = max;
	n = queue_pop(q, evs, max);
	CHECK(n == want);
	for (size_t i = 0; i < n; i++) {
		const struct fsnw_event *ev = &evs[i];

		CHECK(m->nlent < sizeof(m->lent) / sizeof(m->lent[0]));
		m->lent_ev[m->nlent] = *ev;
		if (m->n == 0) {
			/* The overflow, last of all. */
			CHECK(m->ovf);
			CHECK(i == n - 1);
			CHECK(ev->wid == 0);
			CHECK(ev->mask == FSNW_OVERFLOW);
			CHECK(ev->count == m->ovf_count);
			CHECK(ev->cookie == 0);
			m->lent_ovf[m->nlent++] = true;
			m->ovf = false;
			m->ovf_delivered++;
			m->ovf_count_out += ev->count;
			continue;
		}
		const struct ment *e = &m->e[0];

		CHECK(ev->wid == owners[e->owner].wid);
		CHECK(ev->mask == e->mask);
		CHECK(ev->cookie == e->cookie);
		CHECK(ev->count == e->count);
		CHECK(ev->count >= 1);
		m->lent[m->nlent] = *e;
		m->lent_ovf[m->nlent++] = false;
		m->count_out += ev->count;
		model_remove(m, 0);
	}
	m->c.delivered += n;
	note_depth(m);
	check_lent(m, paths);
}

static void do_purge(struct model *m, struct queue *q, struct qowner *owners, int owner)
{
	size_t expect = 0, n;

	for (size_t i = m->n; i-- > 0;) {
		if (m->e[i].owner == owner) {
			m->count_purged += m->e[i].count;
			model_remove(m, i);
			expect++;
		}
	}
	n = queue_purge(q, &owners[owner]);
	CHECK(n == expect);
	m->c.purged += n;
	note_depth(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct qowner owners[NOWNERS];
	struct strref *paths[NPATHS];
	static struct model m;
	struct queue *q;
	uint8_t b;
	long fail_at = 0;

	if (!huge[0])
		memset(huge, 'x', sizeof(huge));
	free(m.e);
	memset(&m, 0, sizeof(m));
	b = take(&in);
	switch (b % 10) {
	case 0:
		m.capacity = FSNW_QUEUE_UNLIMITED;
		break;
	case 9:
		m.capacity = FSNW_QUEUE_DEFAULT;
		break;
	default:
		m.capacity = b % 10;
	}
	m.merge = b & 0x10;
	q = queue_new(m.capacity == FSNW_QUEUE_DEFAULT ? 0 : m.capacity, m.merge);
	CHECK(q);
	for (int i = 0; i < NOWNERS; i++)
		owners[i] = (struct qowner){ .wid = i + 1 };
	paths[0] = strref_new("/w", 2);
	paths[1] = strref_new("/w/sub", 6);
	paths[2] = strref_new("/other", 6);
	for (int i = 0; i < NPATHS; i++)
		CHECK(paths[i]);

	for (int ops = 0; in.left && ops < MAX_OPS; ops++) {
		uint8_t op = take(&in);

		switch (op % 16) {
		case 0 ... 8:
			do_push(&m, q, owners, paths, &in, fail_at);
			break;
		case 9:
		case 10:
			do_pop(&m, q, owners, paths, (size_t)(take(&in) % 64) + 1);
			break;
		case 11:
			check_lent(&m, paths);
			queue_release_delivered(q);
			m.nlent = 0;
			break;
		case 12:
			do_purge(&m, q, owners, take(&in) % NOWNERS);
			break;
		case 13:
			queue_overflow(q);
			model_raise(&m);
			note_depth(&m);
			break;
		case 14: {
			/* Fail one of the next few allocations (slot chunks, names). */
			long k = take(&in) % 4;

			mem_fail_after(k);
			fail_at = k + 1;
			break;
		}
		default: {
			/* A burst of equal pushes: merge chains and capacity edges. */
			int reps = take(&in) % 16;

			for (int i = 0; i < reps; i++) {
				struct input again = in;

				do_push(&m, q, owners, paths, &again, fail_at);
			}
			for (int i = 0; i < 3; i++)
				take(&in);
			break;
		}
		}
		/* Popped events hold the lent area; release before it fills. */
		if (m.nlent > sizeof(m.lent) / sizeof(m.lent[0]) - 64) {
			queue_release_delivered(q);
			m.nlent = 0;
		}
		check_state(&m, q, owners);
	}
	mem_fail_after(-1);

	/* Drain: what is left comes out exactly as the model says. */
	check_lent(&m, paths);
	queue_release_delivered(q);
	m.nlent = 0;
	while (m.n || m.ovf) {
		do_pop(&m, q, owners, paths, 64);
		queue_release_delivered(q);
		m.nlent = 0;
		check_state(&m, q, owners);
	}
	/* Conservation, by counts: every push that took a slot or merged came
	 * out in a delivered event's count or went with a purge, and every
	 * raise of the overflow is in a delivered overflow's count. */
	CHECK(m.count_out + m.count_purged == m.c.queued + m.c.merged);
	CHECK(m.ovf_count_out == m.ovf_raised);
	CHECK(m.c.queued == m.c.delivered - m.ovf_delivered + m.c.purged);
	queue_free(q);
	for (int i = 0; i < NPATHS; i++) {
		CHECK(paths[i]->refs == 1);
		strref_put(paths[i]);
	}
	free(m.e);
	m.e = NULL;
	return 0;
}
