/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <time.h>

#include "eventfmt.h"
#include "tool-args.h"
#include "wait-print.h"

/* inotifywait's longest line; the format may be no longer either. */
#define FORMAT_MAX 4096

static void print_events(FILE *f, uint32_t mask, char sep)
{
	char buf[TOOL_EVENTS_MAX];
	size_t len = tool_events_format(buf, sizeof(buf), mask, sep);

	fwrite(buf, 1, len < sizeof(buf) ? len : sizeof(buf) - 1, f);
}

/* %T, in buf; false when it comes out empty or too long (inotifywait gives strftime(3)
 * a byte less than its buffer). */
static bool format_time(const struct wait_print *p, char *buf, size_t size)
{
	time_t now = time(NULL);
	struct tm tm;

	if (!localtime_r(&now, &tm))
		return false;
	/* The format is the user's, by design. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	return strftime(buf, size - 1, p->timefmt, &tm) != 0;
#pragma GCC diagnostic pop
}

/* Ours, where inotifywait prints the text as written: %{count}, %{wid}. */
static size_t print_braced(FILE *f, const char *s, const struct fsnw_event *ev)
{
	if (!strncmp(s, "{count}", 7)) {
		fprintf(f, "%u", ev->count);
		return 7;
	}
	if (!strncmp(s, "{wid}", 5)) {
		fprintf(f, "%d", ev->wid);
		return 5;
	}
	return 0;
}

/*
 * inotifywait 3.22's conversions, in the order it tries them: %% %0 %n %w
 * %f %c (the move cookie, hex) %e %T, then %Xe (events separated by X);
 * anything else is printed as written, except our %{count} and %{wid}.
 */
static void print_format(const struct wait_print *p, FILE *f, const struct fsnw_event *ev,
			 const struct tool_names *n, const char *when)
{
	for (const char *s = p->format; *s; s++) {
		size_t used;

		if (*s != '%' || !s[1]) {
			fputc(*s, f);
			continue;
		}
		switch (*++s) {
		case '%':
			fputc('%', f);
			break;
		case '0':
			fputc('\0', f);
			break;
		case 'n':
			fputc('\n', f);
			break;
		case 'w':
			fwrite(n->dir, 1, n->dirlen, f);
			break;
		case 'f':
			fputs(n->name, f);
			break;
		case 'c':
			fprintf(f, "%x", ev->cookie);
			break;
		case 'e':
			print_events(f, ev->mask, ',');
			break;
		case 'T':
			fputs(when, f);
			break;
		default:
			if (s[1] == 'e') {
				print_events(f, ev->mask, *s);
				s++;
			} else if ((used = print_braced(f, s, ev))) {
				s += used - 1;
			} else {
				fputc('%', f);
				fputc(*s, f);
			}
		}
	}
}

/*
 * inotifywait's CSV field: quoted when it holds a quote, a comma or a
 * newline, or starts or ends with a space; a quote inside is doubled; an
 * empty field is nothing at all. On fanotify, fsnotifywait looks for those
 * characters in the whole path, name included (also), and prints the
 * directory part only.
 */
static void print_csv_field(FILE *f, const char *s, size_t len, const char *also)
{
	bool quote;

	if (!len)
		return;
	quote = s[0] == ' ' || s[len - 1] == ' ';
	for (const char *c = "\",\n"; *c && !quote; c++)
		quote = memchr(s, *c, len) || strchr(also, *c);
	if (!quote) {
		fwrite(s, 1, len, f);
		return;
	}
	fputc('"', f);
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"')
			fputc('"', f);
		fputc(s[i], f);
	}
	fputc('"', f);
}

/* WATCHED,EVENTS,NAME; WATCHED and its comma are left out when empty, as by inotifywait. */
static void print_csv(const struct wait_print *p, FILE *f, const struct fsnw_event *ev,
		      const struct tool_names *n)
{
	char events[TOOL_EVENTS_MAX];
	size_t len;

	if (n->dirlen) {
		print_csv_field(f, n->dir, n->dirlen, p->fanotify ? n->name : "");
		fputc(',', f);
	}
	len = tool_events_format(events, sizeof(events), ev->mask, ',');
	print_csv_field(f, events, len < sizeof(events) ? len : sizeof(events) - 1, "");
	fputc(',', f);
	print_csv_field(f, n->name, strlen(n->name), "");
	fputc('\n', f);
}

void wait_print_event(const struct wait_print *p, FILE *f, const struct fsnw_event *ev,
		      const struct tool_names *n)
{
	char when[FORMAT_MAX] = "";

	if (p->json) {
		json_print_event_open(f, ev);
		fputs("}\n", f);
		return;
	}
	if (p->csv) {
		print_csv(p, f, ev, n);
		return;
	}
	if (p->prints_nothing || (p->uses_time && !format_time(p, when, sizeof(when))))
		return;
	print_format(p, f, ev, n, when);
	if (p->newline)
		fputc('\n', f);
}

/*
 * Walk the format as print_format does: whether a %T is converted, and
 * whether it ends in a lone '%' (after the newline, which inotifywait
 * appends to the format itself).
 */
static void scan_format(struct wait_print *p)
{
	const char *s = p->format;

	p->uses_time = false;
	p->prints_nothing = false;
	for (; *s; s++) {
		if (*s != '%')
			continue;
		if (!s[1]) {
			p->prints_nothing = !p->newline;
			return;
		}
		s++;
		if (*s == 'T')
			p->uses_time = true;
		else if (!strchr("%0nwfce", *s) && s[1] == 'e')
			s++;
	}
}

int wait_format_check(struct wait_print *p)
{
	size_t len;

	if (p->json || p->csv)
		return 0;
	len = strlen(p->format) + p->newline;
	/* inotifywait formats a made-up event to see whether the format works. */
	if (!len || len > FORMAT_MAX) {
		fprintf(stderr, "Something is wrong with your format string.\n");
		return -1;
	}
	scan_format(p);
	return 0;
}
