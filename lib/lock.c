/* SPDX-License-Identifier: MIT */
#include "lock.h"
#include "sys.h"

/* Tries while spinning: about as long as the longest stretch the lock
 * guards, as glibc's adaptive mutex spins. */
#define SPINS 100

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

void lock_wait(struct lock *l)
{
	int c;

	for (int i = 0; i < SPINS; i++) {
		c = LOCK_FREE;
		if (atomic_load_explicit(&l->state, memory_order_relaxed) == LOCK_FREE &&
		    atomic_compare_exchange_weak_explicit(&l->state, &c, LOCK_HELD,
							  memory_order_acquire,
							  memory_order_relaxed))
			return;
		cpu_relax();
	}
	/* Sleep with the state at WAITERS, so that the holder's release wakes
	 * one of us; whoever takes the lock this way keeps WAITERS, as others
	 * may sleep still. */
	while (atomic_exchange_explicit(&l->state, LOCK_WAITERS, memory_order_acquire) !=
	       LOCK_FREE)
		sys_futex_wait(&l->state, LOCK_WAITERS);
}

void lock_wake(struct lock *l)
{
	sys_futex_wake_one(&l->state);
}
