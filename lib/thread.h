/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's number: taken at its first use, from 1, and never
 * given to another thread of the process. Not the address of a thread
 * variable: a new thread often gets the TLS block of one that exited, and
 * would pass for it. The readiness rings know their thread by it.
 *
 * A thread token says whether a thread still runs: what it owns in a handle
 * (a readiness ring) holds a reference, and the thread's exit, through a
 * pthread key's destructor, marks it gone. The handle then lets go of what
 * the thread left, at its leisure, under its own lock; the token goes with
 * its last reference. The rings need it: a ring only its thread may arm
 * would otherwise hold a file descriptor for each thread that ever added.
 */
#ifndef FSNW_THREAD_H
#define FSNW_THREAD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "compiler.h"

extern __thread uint64_t thread_num_tls __attribute__((tls_model("initial-exec")));
/* The slow path of thread_num: the first use in this thread. */
uint64_t thread_num_take(void);

static inline uint64_t thread_num(void)
{
	uint64_t n = thread_num_tls;

	return likely(n != 0) ? n : thread_num_take();
}

struct thread_token {
	atomic_uint refs;   /* the thread's own, while it runs, and one per holder */
	atomic_bool exited; /* set at the thread's exit, never cleared */
};

/*
 * The calling thread's token, with a reference for the caller: 0, with
 * *out NULL where the process has no pthread key left for it (the caller
 * takes that for a thread that never exits); -ENOMEM.
 */
int thread_token_get(struct thread_token **out);
void thread_token_put(struct thread_token *t);

/* Whether the token's thread has exited (false for NULL). */
static inline bool thread_token_exited(const struct thread_token *t)
{
	return t && atomic_load_explicit(&t->exited, memory_order_acquire);
}

#endif
