/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fsnwatch.h"
#include "tool-args.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The names inotifytools knows, and the bits they stand for. */
static const struct {
	const char *name;
	uint32_t mask;
} event_names[] = {
	{ "access", FSNW_ACCESS },
	{ "modify", FSNW_MODIFY },
	{ "attrib", FSNW_ATTRIB },
	{ "close_write", FSNW_CLOSE_WRITE },
	{ "close_nowrite", FSNW_CLOSE_NOWRITE },
	{ "open", FSNW_OPEN },
	{ "moved_from", FSNW_MOVED_FROM },
	{ "moved_to", FSNW_MOVED_TO },
	{ "create", FSNW_CREATE },
	{ "delete", FSNW_DELETE },
	{ "delete_self", FSNW_DELETE_SELF },
	{ "unmount", FSNW_UNMOUNT },
	{ "q_overflow", FSNW_OVERFLOW },
	{ "ignored", FSNW_IGNORED },
	{ "close", FSNW_CLOSE },
	{ "move_self", FSNW_MOVE_SELF },
	{ "move", FSNW_MOVE },
	{ "isdir", FSNW_ISDIR },
	{ "oneshot", TOOL_ONESHOT },
	{ "all_events", FSNW_ALL_EVENTS },
};

/* What inotifytools prints, in its order. */
static const struct {
	uint32_t bit;
	const char *name;
} printed_names[] = {
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
	{ FSNW_UNMOUNT, "UNMOUNT" },
	{ FSNW_OVERFLOW, "Q_OVERFLOW" },
	{ FSNW_IGNORED, "IGNORED" },
	{ FSNW_CLOSE, "CLOSE" },
	{ FSNW_MOVE_SELF, "MOVE_SELF" },
	{ FSNW_ISDIR, "ISDIR" },
	{ TOOL_ONESHOT, "ONESHOT" },
};

size_t tool_events_format(char *buf, size_t size, uint32_t mask, char sep)
{
	size_t len = 0;
	int n;

	for (size_t i = 0; i < ARRAY_SIZE(printed_names); i++) {
		if (!(mask & printed_names[i].bit))
			continue;
		n = snprintf(buf + (len < size ? len : size), len < size ? size - len : 0,
			     "%.*s%s", len ? 1 : 0, &sep, printed_names[i].name);
		len += (size_t)n;
	}
	if (!len) {
		n = snprintf(buf, size, "0x%08x", mask);
		len = (size_t)n;
	}
	return len;
}

int tool_events_parse(const char *list, uint32_t *mask)
{
	uint32_t m = 0;

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		size_t i;

		if (!len) {
			*mask = 0; /* an empty name: no event at all */
			return 0;
		}
		for (i = 0; i < ARRAY_SIZE(event_names); i++)
			if (strlen(event_names[i].name) == len &&
			    !strncasecmp(p, event_names[i].name, len))
				break;
		if (i == ARRAY_SIZE(event_names))
			return -1;
		m |= event_names[i].mask;
		p += len;
		if (*p && !*++p) {
			*mask = 0; /* a trailing comma is an empty name too */
			return 0;
		}
	}
	*mask = m;
	return 0;
}

int tool_event_option(const char *arg, uint32_t *events)
{
	uint32_t m;

	if (tool_events_parse(arg, &m) < 0) {
		fprintf(stderr, "'%s' is not a valid event!  Run with the '--help' option to see "
			"a list of events.\n", arg);
		return -1;
	}
	*events |= m;
	return 0;
}

/* "5.25": digits, a point, digits (either side may be empty, not both). */
static bool is_fraction(const char *s)
{
	size_t before, after;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '+' || *s == '-')
		s++;
	before = strspn(s, "0123456789");
	if (s[before] != '.')
		return false;
	after = strspn(s + before + 1, "0123456789");
	return (before || after) && !s[before + 1 + after];
}

int tool_timeout_parse(const char *arg, double *seconds)
{
	char *end;
	long v;

	if (!*arg) {
		fprintf(stderr, "The provided value is not a valid timeout value.\n"
			"Please specify a long int value.\n");
		return -1;
	}
	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno) {
		fprintf(stderr, "Something went wrong with the timeout value you provided.\n"
			"%s\n", strerror(errno));
		return -1;
	}
	if (*end && is_fraction(arg)) {
		double d = strtod(arg, NULL);

		/* A negative one waits for ever, as a negative integer nearly does. */
		*seconds = d < 0 ? 0 : d;
		return 0;
	}
	if (*end) {
		fprintf(stderr, "'%s' is not a valid timeout value.\n"
			"Please specify a long int value.\n", arg);
		return -1;
	}
	/* inotify-tools keeps it in an unsigned int. */
	*seconds = (double)(unsigned int)v;
	return 0;
}

int tool_regex_check(const struct tool_regex_opts *r, const char **re, bool *include,
		     bool *icase)
{
	if (r->exclude && r->excludei) {
		fprintf(stderr, "--exclude and --excludei cannot both be specified.\n");
		return -1;
	}
	if (r->include && r->includei) {
		fprintf(stderr, "--include and --includei cannot both be specified.\n");
		return -1;
	}
	if ((r->include || r->includei) && (r->exclude || r->excludei)) {
		fprintf(stderr, "include and exclude regexp cannot both be specified.\n");
		return -1;
	}
	*include = r->include || r->includei;
	*icase = r->excludei || r->includei;
	*re = r->exclude ? r->exclude : r->excludei ? r->excludei :
	      r->include ? r->include : r->includei;
	return 0;
}

void tool_regex_warn(const struct tool_regex_opts *r)
{
	if (r->nexclude > 1)
		fprintf(stderr, "--exclude: only the last option will be taken into "
			"consideration.\n");
	if (r->nexcludei > 1)
		fprintf(stderr, "--excludei: only the last option will be taken into "
			"consideration.\n");
}
