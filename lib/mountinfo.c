/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mem.h"
#include "mountinfo.h"

/* The whole file: /proc files have no size to ask for, so read until EOF. */
static int read_all(char **out, size_t *len, uint64_t *calls)
{
	size_t cap = 16384, n = 0;
	char *buf = mem_alloc(cap), *p;
	int fd, err = 0;

	if (!buf)
		return -ENOMEM;
	fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	++*calls;
	if (fd < 0) {
		mem_free(buf);
		return -errno;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			p = mem_realloc(buf, cap * 2);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		++*calls;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	++*calls;
	if (err) {
		mem_free(buf);
		return err;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

/* Undo mountinfo's octal escapes (\040 for a space, ...) in place. */
static size_t unescape(char *s, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' &&
		    s[i + 2] >= '0' && s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
			s[o++] = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
			i += 3;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

/* The nth space-separated field of line (0-based), cut out in place. */
static char *field(char *line, int nth, size_t *len)
{
	char *p = line;

	for (int i = 0; i < nth; i++) {
		p = strchr(p, ' ');
		if (!p)
			return NULL;
		p++;
	}
	*len = strcspn(p, " ");
	return p;
}

int mountinfo_below(const char *dir, size_t len, int (*fn)(void *arg,
			const struct mountinfo_entry *m), void *arg, uint64_t *calls)
{
	char *buf = NULL, *line, *next;
	size_t n = 0;
	int ret;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	ret = read_all(&buf, &n, calls);
	if (ret < 0)
		return ret;
	for (line = buf; ret == 0 && line < buf + n; line = next) {
		struct mountinfo_entry m;
		unsigned maj, min;
		size_t flen;
		char *f;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = buf + n;
		/* id parent major:minor root mount-point ... */
		f = field(line, 2, &flen);
		if (!f || sscanf(f, "%u:%u", &maj, &min) != 2)
			continue;
		f = field(line, 4, &flen);
		if (!f)
			continue;
		flen = unescape(f, flen);
		/* Strictly below dir ("/" holds every other mount point). */
		if (flen <= len || memcmp(f, dir, len) || (len > 1 && f[len] != '/'))
			continue;
		f[flen] = '\0';
		m.path = f;
		m.len = flen;
		m.dev = makedev(maj, min);
		ret = fn(arg, &m);
	}
	mem_free(buf);
	return ret;
}
