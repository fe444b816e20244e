/* SPDX-License-Identifier: MIT */
/*
 * The handle's lock: a futex mutex (Drepper's three states) that spins a
 * little before it sleeps.
 *
 * It guards short stretches of bookkeeping between syscalls, never a
 * syscall, and every public call takes it once or twice (a single inotify
 * add makes its mark before it takes the lock; other adds that mark drop
 * and retake it around the mark), so the lock's own cost is a share
 * of every call: this one costs one atomic a lock or unlock when nobody
 * waits. A waiter spins first: a futex sleep and wake cost more than the
 * stretch it waits for. It is kept for threads that share a handle, where
 * glibc's default mutex, which sleeps at once, makes each add wait for a
 * wake. TSan understands it through its acquire and release atomics.
 */
#ifndef FSNW_LOCK_H
#define FSNW_LOCK_H

#include <stdatomic.h>

#include "compiler.h"

enum { LOCK_FREE, LOCK_HELD, LOCK_WAITERS };

struct lock {
	atomic_int state;
};

#define LOCK_INIT { LOCK_FREE }

/* The contended paths (lock.c). */
void lock_wait(struct lock *l);
void lock_wake(struct lock *l);

static inline void lock_take(struct lock *l)
{
	int free = LOCK_FREE;

	if (likely(atomic_compare_exchange_strong_explicit(&l->state, &free, LOCK_HELD,
							   memory_order_acquire, memory_order_relaxed)))
		return;
	lock_wait(l);
}

static inline void lock_give(struct lock *l)
{
	if (unlikely(atomic_exchange_explicit(&l->state, LOCK_FREE, memory_order_release) ==
		     LOCK_WAITERS))
		lock_wake(l);
}

#endif
