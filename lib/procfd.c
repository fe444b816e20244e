/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "procfd.h"
#include "sys.h"

/* Bumped in the child of every fork: a prefix read before it names the
 * parent. The library is never unloaded (-z nodelete), so the handler
 * outlives every handle. */
static atomic_uint forks;
static pthread_once_t forks_once = PTHREAD_ONCE_INIT;

static void in_child(void)
{
	atomic_fetch_add_explicit(&forks, 1, memory_order_relaxed);
}

static void watch_forks(void)
{
	(void)pthread_atfork(NULL, NULL, in_child);
}

/* Digits of v at the end of buf[0..end): where they start. */
static char *put_digits(char *end, unsigned v)
{
	do {
		*--end = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return end;
}

static void read_prefix(struct procfd *pf, uint64_t *count)
{
	static const char self[] = "/proc/self/fd/";
	char pid[16];
	ssize_t n = sys_readlink(count, "/proc/self", pid, sizeof(pid) - 1);
	bool digits = n > 0;

	for (ssize_t i = 0; i < n; i++)
		digits = digits && pid[i] >= '0' && pid[i] <= '9';
	if (digits) {
		memcpy(pf->prefix, "/proc/", 6);
		memcpy(pf->prefix + 6, pid, (size_t)n);
		memcpy(pf->prefix + 6 + n, "/fd/", 4);
		pf->len = (uint32_t)(10 + n);
	} else { /* no /proc/self link to read: the symlink it is */
		memcpy(pf->prefix, self, sizeof(self) - 1);
		pf->len = sizeof(self) - 1;
	}
}

const char *procfd_path(struct procfd *pf, uint64_t *count, int fd, char buf[PROCFD_MAX])
{
	char digits[12], *d;
	unsigned now;

	(void)pthread_once(&forks_once, watch_forks);
	now = atomic_load_explicit(&forks, memory_order_relaxed);
	if (!pf->len || pf->forks != now) {
		read_prefix(pf, count);
		pf->forks = now;
	}
	d = put_digits(digits + sizeof(digits), (unsigned)fd);
	memcpy(buf, pf->prefix, pf->len);
	memcpy(buf + pf->len, d, (size_t)(digits + sizeof(digits) - d));
	buf[pf->len + (digits + sizeof(digits) - d)] = '\0';
	return buf;
}
