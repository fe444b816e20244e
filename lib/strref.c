/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "mem.h"
#include "strref.h"

struct strref *strref_new(const char *s, size_t len)
{
	struct strref *p;

	if (len > UINT32_MAX - 1)
		return NULL;
	p = mem_alloc(sizeof(*p) + len + 1);
	if (!p)
		return NULL;
	p->refs = 1;
	p->len = (uint32_t)len;
	memcpy(p->s, s, len);
	p->s[len] = '\0';
	return p;
}

struct strref *strref_join(const struct strref *dir, const char *name, size_t namelen)
{
	size_t dlen = dir->len;
	int slash = !(dlen > 0 && dir->s[dlen - 1] == '/');
	struct strref *p;

	p = mem_alloc(sizeof(*p) + dlen + (size_t)slash + namelen + 1);
	if (!p)
		return NULL;
	p->refs = 1;
	p->len = (uint32_t)(dlen + (size_t)slash + namelen);
	memcpy(p->s, dir->s, dlen);
	if (slash)
		p->s[dlen] = '/';
	memcpy(p->s + dlen + (size_t)slash, name, namelen);
	p->s[p->len] = '\0';
	return p;
}

void strref_put(struct strref *p)
{
	if (p && --p->refs == 0)
		mem_free(p);
}

struct strref *strref_rebase(const struct strref *p, size_t keep_from, const struct strref *to)
{
	size_t rest = p->len - keep_from;
	struct strref *n = mem_alloc(sizeof(*n) + to->len + rest + 1);

	if (!n)
		return NULL;
	n->refs = 1;
	n->len = (uint32_t)(to->len + rest);
	memcpy(n->s, to->s, to->len);
	memcpy(n->s + to->len, p->s + keep_from, rest);
	n->s[n->len] = '\0';
	return n;
}
