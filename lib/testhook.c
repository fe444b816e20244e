/* SPDX-License-Identifier: MIT */
/* The test points of test builds (testhook.h): one hook, process-wide,
 * for the race tests, which run one handle at a time. */
#include <stddef.h>

#include "testhook.h"

static test_hook_fn hook;
static void *hook_arg;
static unsigned queue_hidden;
static unsigned delete_waits_skipped;

void test_hook_set(test_hook_fn fn, void *arg)
{
	hook = fn;
	hook_arg = arg;
}

void test_hook_run(enum test_point p, const char *path)
{
	if (hook)
		hook(p, path, hook_arg);
}

void test_hook_hide_queue(unsigned n)
{
	queue_hidden = n;
}

/* One of the n left, if any. */
static bool take_one(unsigned *left)
{
	if (!*left)
		return false;
	--*left;
	return true;
}

bool test_hook_queue_hidden(void)
{
	return take_one(&queue_hidden);
}

void test_hook_skip_delete_waits(unsigned n)
{
	delete_waits_skipped = n;
}

bool test_hook_delete_wait_skipped(void)
{
	return take_one(&delete_waits_skipped);
}
