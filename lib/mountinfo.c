/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mem.h"
#include "mountinfo.h"
#include "sys.h"

#define MOUNTINFO "/proc/self/mountinfo"

/* The whole file: /proc files have no size to ask for, so read until EOF. */
static int read_all(int fd, char **out, size_t *len, uint64_t *calls)
{
	size_t cap = 16384, n = 0;
	char *buf = mem_alloc(cap), *p;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	r = sys_lseek(calls, fd, 0, SEEK_SET);
	while (r >= 0) {
		if (n + 1 >= cap) {
			p = mem_realloc(buf, cap * 2);
			if (!p) {
				r = -ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		r = sys_read(calls, fd, buf + n, cap - n - 1);
		if (r == 0) {
			buf[n] = '\0';
			*out = buf;
			*len = n;
			return 0;
		}
		if (r > 0)
			n += (size_t)r;
	}
	mem_free(buf);
	return (int)r;
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

/* The nth space-separated field of line (0-based), and its length. */
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

/* "ID PARENT MAJ:MIN ROOT POINT ..." per line; the line is cut up in place. */
static bool parse_line(char *line, struct mount_entry *m)
{
	unsigned maj, min;
	size_t flen;
	char *f;

	if (sscanf(line, "%llu", (unsigned long long *)&m->id) != 1)
		return false;
	f = field(line, 2, &flen);
	if (!f || sscanf(f, "%u:%u", &maj, &min) != 2)
		return false;
	f = field(line, 4, &flen);
	if (!f)
		return false;
	m->len = unescape(f, flen);
	f[m->len] = '\0';
	m->path = f;
	m->dev = makedev(maj, min);
	return true;
}

static int parse(char *buf, size_t n, struct mount_table *t)
{
	size_t cap = 0;
	char *line, *next;

	for (line = buf; line < buf + n; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		else
			next = buf + n;
		if (t->n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct mount_entry *e = mem_realloc(t->e, ncap * sizeof(*e));

			if (!e)
				return -ENOMEM;
			t->e = e;
			cap = ncap;
		}
		if (parse_line(line, &t->e[t->n]))
			t->n++;
	}
	return 0;
}

int mountinfo_read(int fd, struct mount_table *t, uint64_t *calls)
{
	int own = fd < 0 ? sys_open(calls, MOUNTINFO, O_RDONLY) : -1;
	size_t n = 0;
	int ret;

	memset(t, 0, sizeof(*t));
	if (fd < 0) {
		if (own < 0)
			return own;
		fd = own;
	}
	ret = read_all(fd, &t->buf, &n, calls);
	if (own >= 0)
		sys_close(calls, own);
	if (ret == 0)
		ret = parse(t->buf, n, t);
	if (ret < 0)
		mountinfo_free(t);
	return ret;
}

void mountinfo_free(struct mount_table *t)
{
	mem_free(t->e);
	mem_free(t->buf);
	memset(t, 0, sizeof(*t));
}

bool mountinfo_below(const char *p, size_t plen, const char *dir, size_t dlen)
{
	while (dlen > 1 && dir[dlen - 1] == '/')
		dlen--;
	if (dlen == 1 && dir[0] == '/')
		return plen > 1 && p[0] == '/';
	return plen > dlen && !memcmp(p, dir, dlen) && p[dlen] == '/';
}
