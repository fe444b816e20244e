/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <string.h>

#include "eventfmt.h"

/* Bit order, which is the order inotifywait prints them in. */
static const struct {
	uint32_t bit;
	const char *name;
} names[] = {
	{ FSNW_ACCESS, "ACCESS" },
	{ FSNW_MODIFY, "MODIFY" },
	{ FSNW_ATTRIB, "ATTRIB" },
	{ FSNW_CLOSE_WRITE, "CLOSE_WRITE" },
	{ FSNW_CLOSE_NOWRITE, "CLOSE_NOWRITE" },
	{ FSNW_OPEN, "OPEN" },
	{ FSNW_MOVED_FROM, "MOVED_FROM" },
	{ FSNW_MOVED_TO, "MOVED_TO" },
	{ FSNW_CREATE, "CREATE" },
	{ FSNW_DELETE, "DELETE" },
	{ FSNW_DELETE_SELF, "DELETE_SELF" },
	{ FSNW_MOVE_SELF, "MOVE_SELF" },
	{ FSNW_UNMOUNT, "UNMOUNT" },
	{ FSNW_OVERFLOW, "Q_OVERFLOW" },
	{ FSNW_IGNORED, "IGNORED" },
	{ FSNW_ISDIR, "ISDIR" },
};

/* What -e accepts: inotifywait's names, lower case. */
static const struct {
	const char *name;
	uint32_t mask;
} inputs[] = {
	{ "access", FSNW_ACCESS },
	{ "modify", FSNW_MODIFY },
	{ "attrib", FSNW_ATTRIB },
	{ "close_write", FSNW_CLOSE_WRITE },
	{ "close_nowrite", FSNW_CLOSE_NOWRITE },
	{ "close", FSNW_CLOSE },
	{ "open", FSNW_OPEN },
	{ "moved_to", FSNW_MOVED_TO },
	{ "moved_from", FSNW_MOVED_FROM },
	{ "move", FSNW_MOVE },
	{ "move_self", FSNW_MOVE_SELF },
	{ "create", FSNW_CREATE },
	{ "delete", FSNW_DELETE },
	{ "delete_self", FSNW_DELETE_SELF },
	{ "unmount", FSNW_UNMOUNT },
	{ "ignored", FSNW_IGNORED },
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

int evnames_parse(const char *list, uint32_t *mask, const char **bad, size_t *badlen)
{
	const char *p = list;
	uint32_t m = 0;

	for (;;) {
		size_t len = strcspn(p, ",");
		size_t i;

		for (i = 0; i < ARRAY_SIZE(inputs); i++)
			if (strlen(inputs[i].name) == len && !strncasecmp(p, inputs[i].name, len))
				break;
		if (i == ARRAY_SIZE(inputs)) {
			*bad = p;
			*badlen = len;
			return -EINVAL;
		}
		m |= inputs[i].mask;
		if (!p[len])
			break;
		p += len + 1;
	}
	*mask |= m;
	return 0;
}

size_t evnames_format(char *buf, size_t size, uint32_t mask, char sep)
{
	size_t len = 0;

	/* Appends what fits, and counts it all, as snprintf(3) does. */
#define PUT(s, n) do { \
		if (len + (n) < size) \
			memcpy(buf + len, s, n); \
		len += (n); \
	} while (0)
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(mask & names[i].bit))
			continue;
		if (len)
			PUT(&sep, 1);
		PUT(names[i].name, strlen(names[i].name));
		/* inotifywait follows the last close half with the pair's name:
		 * CLOSE_WRITE,CLOSE. */
		if ((names[i].bit & FSNW_CLOSE) && !(mask & FSNW_CLOSE & ~(names[i].bit * 2 - 1))) {
			PUT(&sep, 1);
			PUT("CLOSE", 5);
		}
	}
#undef PUT
	if (size)
		buf[len < size ? len : size - 1] = '\0';
	return len;
}

void evnames_print(FILE *f, uint32_t mask, char sep)
{
	char buf[EVNAMES_MAX];
	size_t len = evnames_format(buf, sizeof(buf), mask, sep);

	fwrite(buf, 1, len < sizeof(buf) ? len : sizeof(buf) - 1, f);
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s)
{
	size_t len, i;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and code points past U+10FFFF. */
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

/*
 * File names are bytes, JSON strings are Unicode. Valid UTF-8 passes as is;
 * a byte that is not part of valid UTF-8 becomes the lone surrogate
 * \udcXX, the convention of Python's "surrogateescape", so a consumer can
 * get the exact bytes back (os.fsencode) and no name is lost or merged
 * with another.
 */
void json_print_string(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	while (*s) {
		size_t len = utf8_seq(s);

		if (!len) {
			fprintf(f, "\\udc%02x", *s++);
			continue;
		}
		if (len > 1) {
			fwrite(s, 1, len, f);
			s += len;
			continue;
		}
		switch (*s) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			if (*s < 0x20)
				fprintf(f, "\\u%04x", *s);
			else
				fputc(*s, f);
		}
		s++;
	}
	fputc('"', f);
}

void json_print_event_open(FILE *f, const struct fsnw_event *ev)
{
	bool first = true;

	fputs("{\"path\":", f);
	json_print_string(f, ev->path);
	fputs(",\"name\":", f);
	json_print_string(f, ev->name);
	/* The bits only: no CLOSE beside its half, no SYNTHETIC (a member of its own). */
	fputs(",\"events\":[", f);
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(ev->mask & names[i].bit))
			continue;
		fprintf(f, "%s\"%s\"", first ? "" : ",", names[i].name);
		first = false;
	}
	fprintf(f, "],\"cookie\":%u,\"count\":%u,\"wid\":%d,\"synthetic\":%s", ev->cookie,
		ev->count, ev->wid, ev->mask & FSNW_SYNTHETIC ? "true" : "false");
}
