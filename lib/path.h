/* SPDX-License-Identifier: MIT */
/*
 * The two questions every module that handles paths asks, answered once:
 * how long a path is without its trailing slashes, and whether one path is
 * another or below it. Paths are byte strings with a length (not
 * necessarily NUL-terminated); "/" keeps its slash, and everything absolute
 * is below "/".
 */
#ifndef FSNW_PATH_H
#define FSNW_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* len without the trailing slashes of p, keeping a lone "/". */
static inline size_t path_trim(const char *p, size_t len)
{
	while (len > 1 && p[len - 1] == '/')
		len--;
	return len;
}

/* Is p (plen bytes) dir itself, or below it? Trailing slashes do not count. */
static inline bool path_at_or_below(const char *p, size_t plen, const char *dir, size_t dlen)
{
	plen = path_trim(p, plen);
	dlen = path_trim(dir, dlen);
	if (dlen == 1 && dir[0] == '/')
		return plen >= 1 && p[0] == '/';
	return plen >= dlen && !memcmp(p, dir, dlen) && (plen == dlen || p[dlen] == '/');
}

/* Is p strictly below dir? */
static inline bool path_below(const char *p, size_t plen, const char *dir, size_t dlen)
{
	return path_at_or_below(p, plen, dir, dlen) &&
	       path_trim(p, plen) != path_trim(dir, dlen);
}

#endif
