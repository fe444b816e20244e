/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "compiler.h"
#include "keytab.h"
#include "mem.h"

#define KEYTAB_MIN 16
_Static_assert(KEYTAB_MIN >= KEYTAB_RUN, "a table holds a whole group of slots");

void keytab_init(struct keytab *t)
{
	*t = (struct keytab){ .shift = 32 };
}

void keytab_fini(struct keytab *t)
{
	mem_free(t->slots);
	keytab_init(t);
}

static void set(struct keytab_slot *s, uint32_t tag, const void *val)
{
	s->tag = tag;
	memcpy(s->val, &val, sizeof(val));
}

/* Into a slot of a table known to have room, no count kept. */
static void place(struct keytab *t, uint32_t tag, void *val)
{
	size_t i = keytab_home(t, tag);

	while (t->slots[i].tag)
		i = (i + 1) & t->mask;
	set(&t->slots[i], tag, val);
}

FSNW_COLD static int keytab_resize(struct keytab *t, size_t slots, unsigned bits)
{
	struct keytab old = *t;
	struct keytab_slot *mem;

	if (slots > SIZE_MAX / sizeof(*mem))
		return -ENOMEM;
	mem = mem_zalloc(slots * sizeof(*mem));
	if (!mem)
		return -ENOMEM;
	t->slots = mem;
	t->mask = slots - 1;
	t->shift = 32 - bits;
	for (size_t i = 0; old.slots && i <= old.mask; i++)
		if (old.slots[i].tag)
			place(t, old.slots[i].tag, keytab_val(&old.slots[i]));
	mem_free(old.slots);
	return 0;
}

int keytab_grow(struct keytab *t, size_t more)
{
	size_t want = t->count + more, n = KEYTAB_MIN;
	unsigned bits = 4;

	if (want < t->count)
		return -ENOMEM;
	if (keytab_has_room(t, more))
		return 0;
	while (want > n / 4 * 3) {
		/* Home slots are 32-bit hashes' top bits. */
		if (bits == 31)
			return -ENOMEM;
		n *= 2;
		bits++;
	}
	return keytab_resize(t, n, bits);
}

void keytab_insert(struct keytab *t, uint32_t tag, void *val)
{
	assert(tag && val && t->count < t->mask);
	keytab_prefetch_next(t, tag);
	place(t, tag, val);
	t->count++;
}

/* Whether home h lies in the cyclic range (from, to]. */
static bool in_range(size_t h, size_t from, size_t to)
{
	return from <= to ? h > from && h <= to : h > from || h <= to;
}

void keytab_remove_at(struct keytab *t, size_t pos)
{
	size_t i = pos & t->mask, j;

	assert(t->slots && t->slots[i].tag);
	/* Shift back every entry after i that may not be moved past its home. */
	for (j = (i + 1) & t->mask; t->slots[j].tag; j = (j + 1) & t->mask) {
		if (in_range(keytab_home(t, t->slots[j].tag), i, j))
			continue;
		t->slots[i] = t->slots[j];
		i = j;
	}
	t->slots[i].tag = 0;
	t->count--;
}

void keytab_remove(struct keytab *t, uint32_t tag, const void *val)
{
	size_t i = keytab_start(t, tag);
	void *v;

	while ((v = keytab_probe(t, tag, &i)) && v != val)
		i++;
	assert(v == val);
	if (v)
		keytab_remove_at(t, i);
}

void keytab_for_each(const struct keytab *t, void (*fn)(void *val, void *arg), void *arg)
{
	for (size_t i = 0; t->slots && i <= t->mask; i++)
		if (t->slots[i].tag)
			fn(keytab_val(&t->slots[i]), arg);
}
