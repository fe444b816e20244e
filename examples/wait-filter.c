/* SPDX-License-Identifier: MIT */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wait-filter.h"

static bool is_target(const struct wait_state *s, const char *path)
{
	for (size_t j = 0; j < s->nt; j++) {
		size_t len = strlen(s->t[j].path);

		while (len > 1 && s->t[j].path[len - 1] == '/')
			len--;
		if (strlen(path) == len && !memcmp(path, s->t[j].path, len))
			return true;
	}
	return false;
}

int wait_filter_init(struct wait_state *s)
{
	size_t i = 0;
	int flags = REG_EXTENDED | REG_NOSUB | (s->o.regex_icase ? REG_ICASE : 0);

	if (s->o.regex) {
		if (regcomp(&s->re, s->o.regex, flags)) {
			fprintf(stderr, "Error in `%s' regular expression.\n",
				s->o.regex_include ? "include" : "exclude");
			return -1;
		}
		s->have_re = true;
	}
	/* inotifywait watches a path given both plain and with @. */
	while (i < s->nexcl) {
		if (is_target(s, s->excl[i])) {
			free(s->excl[i]);
			s->excl[i] = s->excl[--s->nexcl];
		} else {
			i++;
		}
	}
	return 0;
}

void wait_filter_fini(struct wait_state *s)
{
	if (s->have_re)
		regfree(&s->re);
	s->have_re = false;
}

/* An @path given with -r: its events are not shown (see fsnw-wait(1)). */
static bool excluded(const struct wait_state *s, const struct fsnw_event *ev)
{
	size_t plen = ev->path ? strlen(ev->path) : 0;

	if (!s->o.recursive || !plen)
		return false;
	while (plen > 1 && ev->path[plen - 1] == '/')
		plen--;
	for (size_t i = 0; i < s->nexcl; i++) {
		size_t len = strlen(s->excl[i]);

		if (plen >= len && !memcmp(ev->path, s->excl[i], len) &&
		    (plen == len || ev->path[len] == '/'))
			return true;
	}
	return false;
}

bool wait_filtered(const struct wait_state *s, const struct wait_print *p,
		   const struct fsnw_event *ev)
{
	char buf[PATH_MAX + NAME_MAX + 2], *name = buf;
	size_t len;
	bool match;

	if (ev->mask & FSNW_OVERFLOW)
		return false;
	if (excluded(s, ev))
		return true;
	if (!s->have_re)
		return false;
	len = wait_print_watched_name(p, ev, buf, sizeof(buf));
	if (len >= sizeof(buf)) {
		name = malloc(len + 1);
		if (!name)
			return false; /* shown: better than lost */
		wait_print_watched_name(p, ev, name, len + 1);
	}
	match = regexec(&s->re, name, 0, NULL, 0) == 0;
	if (name != buf)
		free(name);
	return match != s->o.regex_include;
}
