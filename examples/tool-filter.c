/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool-filter.h"

int tool_filter_init(struct tool_filter *f, const char *re, bool include, bool icase,
		     bool recursive)
{
	int flags = REG_EXTENDED | REG_NOSUB | (icase ? REG_ICASE : 0);

	f->have_re = false;
	f->include = include;
	f->recursive = recursive;
	if (!re)
		return 0;
	if (regcomp(&f->re, re, flags)) {
		fprintf(stderr, "Error in `%s' regular expression.\n",
			include ? "include" : "exclude");
		return -1;
	}
	f->have_re = true;
	return 0;
}

void tool_filter_fini(struct tool_filter *f)
{
	if (f->have_re)
		regfree(&f->re);
	f->have_re = false;
}

bool tool_filtered(const struct tool_filter *f, const struct tool_paths *p,
		   const struct fsnw_event *ev, const struct tool_names *n)
{
	char buf[PATH_MAX + NAME_MAX + 2], *s = buf;
	size_t nlen;
	bool match;

	if (ev->mask & FSNW_OVERFLOW)
		return false;
	if (f->recursive && p->nexcl && ev->path && tool_paths_excluded(p, ev->path))
		return true;
	if (!f->have_re)
		return false;
	nlen = strlen(n->name);
	if (n->dirlen + nlen >= sizeof(buf)) {
		s = malloc(n->dirlen + nlen + 1);
		if (!s)
			return false; /* shown: better than lost */
	}
	memcpy(s, n->dir, n->dirlen);
	memcpy(s + n->dirlen, n->name, nlen + 1);
	match = regexec(&f->re, s, 0, NULL, 0) == 0;
	if (s != buf)
		free(s);
	return match != f->include;
}
