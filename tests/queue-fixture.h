/* SPDX-License-Identifier: MIT */
/*
 * A queue with two owners and their paths, for the queue's unit tests
 * (test-queue.c defines the functions; test-queue-diff.c uses them too).
 */
#ifndef FSNW_TESTS_QUEUE_FIXTURE_H
#define FSNW_TESTS_QUEUE_FIXTURE_H

#include <stdint.h>

#include "queue.h"

struct fixture {
	struct queue *q;
	struct qowner a, b;
	struct strref *pa, *pb;
	struct fsnw_event out[64];
};

/* merge: as queue_new's. */
void fx_init(struct fixture *f, uint32_t capacity, int merge);
/* Frees the queue and checks that every slot gave its path references back. */
void fx_fini(struct fixture *f);

#endif
