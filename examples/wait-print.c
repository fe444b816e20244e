/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <time.h>

#include "eventfmt.h"
#include "wait-print.h"

/* %w: inotifywait shows a watched directory with a trailing slash. */
static void print_watched(const struct wait_print *p, FILE *f, const struct fsnw_event *ev)
{
	size_t len;
	bool dir;

	if (!ev->path)
		return; /* FSNW_OVERFLOW belongs to no watch */
	len = strlen(ev->path);
	fputs(ev->path, f);
	/* Only a directory has named entries; otherwise ask who added the watch. */
	dir = ev->name || (p->wid_is_dir && p->wid_is_dir(p->arg, ev->wid));
	if (dir && (len == 0 || ev->path[len - 1] != '/'))
		fputc('/', f);
}

static void print_time(const struct wait_print *p, FILE *f)
{
	char buf[256];
	time_t now = time(NULL);
	struct tm tm;

	if (!p->timefmt || !localtime_r(&now, &tm))
		return;
	/* The format is the user's, by design. strftime returns 0 both for
	 * "too long" and for an empty result: either way there is nothing to print. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	if (strftime(buf, sizeof(buf), p->timefmt, &tm))
		fputs(buf, f);
#pragma GCC diagnostic pop
}

/*
 * inotifywait's conversions (%w %f %e %Xe %T %0 %n %%) and ours: %c the
 * merge count, %i the wid, %k the move cookie. Anything else is printed as
 * written, as inotifywait does.
 */
static void print_format(const struct wait_print *p, FILE *f, const struct fsnw_event *ev)
{
	for (const char *s = p->format; *s; s++) {
		if (*s != '%' || !s[1]) {
			fputc(*s, f);
			continue;
		}
		switch (*++s) {
		case 'w':
			print_watched(p, f, ev);
			break;
		case 'f':
			if (ev->name)
				fputs(ev->name, f);
			break;
		case 'e':
			evnames_print(f, ev->mask, ',');
			break;
		case 'T':
			print_time(p, f);
			break;
		case '0':
			fputc('\0', f);
			break;
		case 'n':
			fputc('\n', f);
			break;
		case 'c':
			fprintf(f, "%u", ev->count);
			break;
		case 'i':
			fprintf(f, "%d", ev->wid);
			break;
		case 'k':
			fprintf(f, "%u", ev->cookie);
			break;
		case '%':
			fputc('%', f);
			break;
		default:
			if (s[1] == 'e') {
				evnames_print(f, ev->mask, *s);
				s++;
			} else {
				fputc('%', f);
				fputc(*s, f);
			}
		}
	}
}

void wait_print_event(const struct wait_print *p, FILE *f, const struct fsnw_event *ev)
{
	if (p->json) {
		json_print_event_open(f, ev);
		fputs("}\n", f);
		return;
	}
	print_format(p, f, ev);
	if (p->newline)
		fputc('\n', f);
}

int wait_format_check(const struct wait_print *p)
{
	if (p->json)
		return 0;
	if (strstr(p->format, "%T") && !p->timefmt) {
		fprintf(stderr, "%%T is in --format string, but --timefmt was not specified.\n");
		return -1;
	}
	return 0;
}
