/* SPDX-License-Identifier: MIT */
/*
 * The calling thread's number: taken at its first use, from 1, and never
 * given to another thread of the process. Not the address of a thread
 * variable: a new thread often gets the TLS block of one that exited, and
 * would pass for it. The readiness rings know their thread by it; the
 * latency histograms pick their shard with it.
 */
#ifndef FSNW_THREAD_H
#define FSNW_THREAD_H

#include <stdint.h>

extern __thread uint64_t thread_num_tls __attribute__((tls_model("initial-exec")));
/* The slow path of thread_num: the first use in this thread. */
uint64_t thread_num_take(void);

static inline uint64_t thread_num(void)
{
	uint64_t n = thread_num_tls;

	return __builtin_expect(n != 0, 1) ? n : thread_num_take();
}

#endif
