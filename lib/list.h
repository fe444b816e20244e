/* SPDX-License-Identifier: MIT */
/* A circular, intrusive, doubly linked list (the kernel's list_head shape). */
#ifndef FSNW_LIST_H
#define FSNW_LIST_H

#include <stddef.h>

struct list {
	struct list *next, *prev;
};

#define LIST_INIT(name) { &(name), &(name) }
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)
#define list_first(head, type, member) list_entry((head)->next, type, member)
#define list_last(head, type, member) list_entry((head)->prev, type, member)

/* Iterate while the body may unlink the current entry. */
#define list_for_each_safe(pos, tmp, head) \
	for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); \
	     (pos) = (tmp), (tmp) = (pos)->next)

static inline void list_init(struct list *l)
{
	l->next = l->prev = l;
}

static inline int list_empty(const struct list *l)
{
	return l->next == l;
}

static inline void list_insert_between(struct list *n, struct list *prev, struct list *next)
{
	n->prev = prev;
	n->next = next;
	prev->next = n;
	next->prev = n;
}

/* Insert at the head (after the list anchor). */
static inline void list_add(struct list *n, struct list *head)
{
	list_insert_between(n, head, head->next);
}

/* Insert at the tail (before the list anchor). */
static inline void list_add_tail(struct list *n, struct list *head)
{
	list_insert_between(n, head->prev, head);
}

static inline void list_del(struct list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

/* Move every entry of from to the tail of to, in order; from is left empty. */
static inline void list_splice_tail_init(struct list *from, struct list *to)
{
	if (list_empty(from))
		return;
	from->next->prev = to->prev;
	to->prev->next = from->next;
	from->prev->next = to;
	to->prev = from->prev;
	list_init(from);
}

#endif
