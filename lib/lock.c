/* SPDX-License-Identifier: MIT */
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock.h"

/* Tries while spinning: about as long as the longest stretch the lock
 * guards (a few hundred nanoseconds), as glibc's adaptive mutex spins. */
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
		syscall(SYS_futex, &l->state, FUTEX_WAIT_PRIVATE, LOCK_WAITERS, NULL, NULL, 0);
}

void lock_wake(struct lock *l)
{
	syscall(SYS_futex, &l->state, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
