/* SPDX-License-Identifier: MIT */
#include <stdatomic.h>

#include "thread.h"

__thread uint64_t thread_num_tls __attribute__((tls_model("initial-exec")));
static atomic_uint_least64_t threads_seen;

uint64_t thread_num_take(void)
{
	thread_num_tls = atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed) + 1;
	return thread_num_tls;
}
