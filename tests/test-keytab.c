/* SPDX-License-Identifier: MIT */
/*
 * The tag table (lib/keytab.h) without a handle: against a model of which
 * records are in it, through growth, removals that shift entries back
 * across the end of the slots, and tags shared by several records.
 */
#include <errno.h>
#include <stdlib.h>

#include "keytab.h"
#include "test-common.h"

#define NREC 3000

struct rec {
	uint32_t tag;
	bool in;
};

/* Every record the model has in is found under its tag, and no other:
 * how many records or counts differ from the model. */
static size_t check_model(const struct keytab *t, struct rec *r, size_t n)
{
	size_t in = 0, bad = 0;

	for (size_t i = 0; i < n; i++) {
		size_t pos, seen = 0;
		void *v;

		keytab_for_each_tag(v, pos, t, r[i].tag) {
			struct rec *x = v;

			bad += x->tag != r[i].tag || !x->in;
			seen += x == &r[i];
		}
		bad += seen != (r[i].in ? 1u : 0u);
		in += r[i].in;
	}
	return bad + (t->count != in);
}

/* Random inserts and removes of n records; with few distinct tags, runs are
 * long. Returns how often the table differed from the model. */
static size_t churn(unsigned seed, uint32_t ntags, size_t n)
{
	static struct rec r[NREC];
	struct keytab t;
	size_t bad = 0;

	ck_assert_uint_le(n, NREC);
	srand(seed);
	keytab_init(&t);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct rec){ .tag = keytab_tag((uint32_t)rand() % ntags) };
	for (int step = 0; step < 20000; step++) {
		struct rec *x = &r[(size_t)rand() % n];

		if (x->in && step % 2) {
			keytab_remove(&t, x->tag, x);
			x->in = false;
		} else if (x->in) {
			size_t pos;
			void *v;

			/* Where a lookup found it, as watches_remove does. */
			keytab_for_each_tag(v, pos, &t, x->tag)
				if (v == x)
					break;
			ck_assert_ptr_eq(v, x);
			keytab_remove_at(&t, pos);
			x->in = false;
		} else {
			ck_assert_int_eq(keytab_reserve(&t, 1), 0);
			keytab_insert(&t, x->tag, x);
			x->in = true;
		}
		if (t.count * 4 > (t.mask + 1) * 3)
			ck_abort_msg("%zu entries in %zu slots", t.count, t.mask + 1);
		if (step % 1999 == 0)
			bad += check_model(&t, r, n);
	}
	bad += check_model(&t, r, n);
	keytab_fini(&t);
	return bad;
}

START_TEST(model_distinct_tags)
{
	ck_assert_uint_eq(churn(1, UINT32_MAX, NREC), 0);
}
END_TEST

START_TEST(model_shared_tags)
{
	ck_assert_uint_eq(churn(2, 7, 200), 0);
	ck_assert_uint_eq(churn(3, 300, NREC), 0);
}
END_TEST

static void count_one(void *val, void *arg)
{
	(void)val;
	(*(size_t *)arg)++;
}

/* Sequential keys (wids, wds) and the wrap of a probe past the last slot. */
START_TEST(sequential_keys)
{
	static struct rec r[NREC];
	struct keytab t;
	size_t visited = 0;

	keytab_init(&t);
	ck_assert_int_eq(keytab_reserve(&t, NREC), 0);
	for (uint32_t i = 0; i < NREC; i++) {
		r[i] = (struct rec){ .tag = keytab_tag(i + 1), .in = true };
		keytab_insert(&t, r[i].tag, &r[i]);
	}
	ck_assert_uint_eq(check_model(&t, r, NREC), 0);
	/* Remove every other one, then the rest in reverse. */
	for (uint32_t i = 0; i < NREC; i += 2) {
		keytab_remove(&t, r[i].tag, &r[i]);
		r[i].in = false;
	}
	ck_assert_uint_eq(check_model(&t, r, NREC), 0);
	keytab_for_each(&t, count_one, &visited);
	ck_assert_uint_eq(visited, NREC / 2);
	for (uint32_t i = NREC; i-- > 0;) {
		if (!r[i].in)
			continue;
		keytab_remove(&t, r[i].tag, &r[i]);
		r[i].in = false;
	}
	ck_assert_uint_eq(check_model(&t, r, NREC), 0);
	keytab_fini(&t);
}
END_TEST

/* The slot of record x under tag, and how far it lies past its home. */
static size_t slot_of(const struct keytab *t, const struct rec *x, size_t *displaced)
{
	size_t pos;
	void *v;

	keytab_for_each_tag(v, pos, t, x->tag) {
		if (v == x) {
			*displaced = (pos - keytab_home(t, x->tag)) & t->mask;
			return pos & t->mask;
		}
	}
	ck_abort_msg("tag %u not found", x->tag);
	return 0;
}

/* Tags in sequence (wids, wds) sit side by side, so that a loop over them
 * reads a slot line after another rather than a line each. */
START_TEST(sequential_tags_adjacent)
{
	static struct rec r[NREC];
	struct keytab t;
	size_t far = 0, prev = 0, d;

	keytab_init(&t);
	ck_assert_int_eq(keytab_reserve(&t, NREC), 0);
	for (uint32_t i = 0; i < NREC; i++) {
		r[i] = (struct rec){ .tag = keytab_tag(1000 + i), .in = true };
		keytab_insert(&t, r[i].tag, &r[i]);
	}
	for (uint32_t i = 0; i < NREC; i++) {
		size_t pos = slot_of(&t, &r[i], &d);

		/* More than a cache line (five slots) from the one before. */
		far += i && ((pos - prev) & t.mask) > 5 && ((prev - pos) & t.mask) > 5;
		prev = pos;
	}
	/* A jump at most at each run's start (a run of 8 tags). */
	ck_assert_uint_le(far, NREC / KEYTAB_RUN + 1);
	keytab_fini(&t);
}
END_TEST

/* Tags a power of two apart (one kept of each 64 added) still spread over
 * the table: no probe runs long. */
START_TEST(strided_tags_short_probes)
{
	static const uint32_t strides[] = { 2, 8, 64, 4096, 65536 };
	static struct rec r[NREC];

	for (size_t k = 0; k < sizeof(strides) / sizeof(strides[0]); k++) {
		struct keytab t;
		size_t worst = 0, d;

		keytab_init(&t);
		ck_assert_int_eq(keytab_reserve(&t, NREC), 0);
		for (uint32_t i = 0; i < NREC; i++) {
			r[i] = (struct rec){ .tag = keytab_tag(1 + i * strides[k]), .in = true };
			keytab_insert(&t, r[i].tag, &r[i]);
		}
		for (uint32_t i = 0; i < NREC; i++) {
			slot_of(&t, &r[i], &d);
			worst = d > worst ? d : worst;
		}
		ck_assert_msg(worst <= 4 * KEYTAB_RUN, "stride %u: a probe of %zu slots",
			      strides[k], worst);
		keytab_fini(&t);
	}
}
END_TEST

/* Tag 0 means an empty slot: the key 0 gets a tag of its own. */
START_TEST(tag_never_zero)
{
	ck_assert_uint_ne(keytab_tag(0), 0);
	ck_assert_uint_ne(keytab_tag(1ull << 32), 0);
	ck_assert_uint_eq(keytab_tag(42), 42);
}
END_TEST

/* An empty table finds nothing and takes nothing to fini. */
START_TEST(empty_table)
{
	struct keytab t;
	size_t pos;
	void *v;
	int n = 0;

	keytab_init(&t);
	keytab_for_each_tag(v, pos, &t, 5)
		n++;
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(keytab_reserve(&t, SIZE_MAX), -ENOMEM);
	keytab_fini(&t);
}
END_TEST

TEST_SUITE(keytab)
{
	Suite *s = suite_create("keytab");

	ADD_TEST(s, model_distinct_tags);
	ADD_TEST(s, model_shared_tags);
	ADD_TEST(s, sequential_keys);
	ADD_TEST(s, sequential_tags_adjacent);
	ADD_TEST(s, strided_tags_short_probes);
	ADD_TEST(s, tag_never_zero);
	ADD_TEST(s, empty_table);
	return s;
}
