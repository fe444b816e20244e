/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <string.h>

#include "mem.h"
#include "strref.h"

/* A string of refs 1 holding s, in p (room for it checked by the caller). */
static struct strref *fill(struct strref *p, bool pooled, const char *s, size_t len)
{
	p->refs = 1;
	p->len = (uint32_t)len;
	p->pooled = pooled;
	memcpy(p->s, s, len);
	p->s[len] = '\0';
	return p;
}

struct strref *strref_alloc(size_t len)
{
	struct strref *p;

	if (len > STRREF_MAX)
		return NULL;
	p = mem_alloc(sizeof(*p) + len + 1);
	if (!p)
		return NULL;
	p->refs = 1;
	p->len = (uint32_t)len;
	p->pooled = false;
	p->s[len] = '\0';
	return p;
}

struct strref *strref_new(const char *s, size_t len)
{
	struct strref *p;

	if (len > STRREF_MAX)
		return NULL;
	p = mem_alloc(sizeof(*p) + len + 1);
	return p ? fill(p, false, s, len) : NULL;
}

static const uint16_t class_size[STRPOOL_CLASSES] = { 32, 48, 64, 96, 128, 192, 256 };

/* The size class of a string of len bytes, or -1 when it fits none. */
static int pool_class(size_t len)
{
	size_t need = sizeof(struct strref) + len + 1;

	for (int c = 0; c < STRPOOL_CLASSES; c++)
		if (need <= class_size[c])
			return c;
	return -1;
}

struct strref *strref_new_in(struct strpool *pool, const char *s, size_t len)
{
	int c = pool_class(len);
	struct strref *p;

	if (c < 0)
		return strref_new(s, len);
	p = mem_cache_alloc(&pool->class[c]);
	return p ? fill(p, true, s, len) : NULL;
}

void strpool_init(struct strpool *pool)
{
	for (int c = 0; c < STRPOOL_CLASSES; c++)
		mem_cache_init(&pool->class[c], class_size[c]);
}

void strpool_fini(struct strpool *pool)
{
	for (int c = 0; c < STRPOOL_CLASSES; c++)
		mem_cache_fini(&pool->class[c]);
}

struct strref *strref_join(const struct strref *dir, const char *name, size_t namelen)
{
	size_t dlen = dir->len;
	int slash = !(dlen > 0 && dir->s[dlen - 1] == '/');
	struct strref *p;

	if (dlen + (size_t)slash + namelen > STRREF_MAX)
		return NULL;
	p = mem_alloc(sizeof(*p) + dlen + (size_t)slash + namelen + 1);
	if (!p)
		return NULL;
	p->refs = 1;
	p->pooled = false;
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
	if (!p || --p->refs)
		return;
	if (p->pooled)
		mem_cache_free(mem_cache_of(p), p);
	else
		mem_free(p);
}

struct strref *strref_rebase(const struct strref *p, size_t keep_from, const struct strref *to)
{
	size_t rest = p->len - keep_from;
	struct strref *n;

	if (to->len + rest > STRREF_MAX)
		return NULL;
	n = mem_alloc(sizeof(*n) + to->len + rest + 1);
	if (!n)
		return NULL;
	n->refs = 1;
	n->pooled = false;
	n->len = (uint32_t)(to->len + rest);
	memcpy(n->s, to->s, to->len);
	memcpy(n->s + to->len, p->s + keep_from, rest);
	n->s[n->len] = '\0';
	return n;
}
