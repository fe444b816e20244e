/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "mem.h"
#include "thread.h"

__thread uint64_t thread_num_tls __attribute__((tls_model("initial-exec")));
static atomic_uint_least64_t threads_seen;

static __thread struct thread_token *token_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t token_key;
static pthread_once_t token_once = PTHREAD_ONCE_INIT;
static bool token_key_ok;

uint64_t thread_num_take(void)
{
	thread_num_tls = atomic_fetch_add_explicit(&threads_seen, 1, memory_order_relaxed) + 1;
	return thread_num_tls;
}

/* The key's destructor: the thread is exiting. (The main thread's runs only
 * if it leaves by pthread_exit; a return from main ends the process.) The
 * library is linked with -z nodelete, so this code outlives a dlclose. */
static void token_exit(void *p)
{
	struct thread_token *t = p;

	atomic_store_explicit(&t->exited, true, memory_order_release);
	token_tls = NULL;
	thread_token_put(t);
}

static void token_key_make(void)
{
	token_key_ok = pthread_key_create(&token_key, token_exit) == 0;
}

int thread_token_get(struct thread_token **out)
{
	struct thread_token *t = token_tls;

	*out = NULL;
	if (!t) {
		(void)pthread_once(&token_once, token_key_make);
		if (!token_key_ok)
			return 0;
		t = mem_alloc(sizeof(*t));
		if (!t)
			return -ENOMEM;
		atomic_init(&t->refs, 1);
		atomic_init(&t->exited, false);
		if (pthread_setspecific(token_key, t) != 0) {
			mem_free(t);
			return -ENOMEM; /* its only failure besides a bad key */
		}
		token_tls = t;
	}
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
	*out = t;
	return 0;
}

void thread_token_put(struct thread_token *t)
{
	unsigned left;

	if (!t)
		return;
	left = atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) - 1;
	if (left == 0) {
		mem_free(t);
		return;
	}
	/* Our own thread's, and nothing holds it now but the thread: let go of
	 * it altogether (only this thread takes references to its token, so
	 * none can come meanwhile), and a program that closes its handles
	 * leaves no token behind. */
	if (left == 1 && t == token_tls) {
		(void)pthread_setspecific(token_key, NULL);
		token_tls = NULL;
		mem_free(t);
	}
}
