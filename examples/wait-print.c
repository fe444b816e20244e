/* SPDX-License-Identifier: MIT */
#include <string.h>
#include <time.h>

#include "eventfmt.h"
#include "wait-print.h"

/* %w: inotifywait shows a watched directory with a trailing slash. */
static bool slash_after_watched(const struct wait_print *p, const struct fsnw_event *ev)
{
	size_t len = strlen(ev->path);

	if (len && ev->path[len - 1] == '/')
		return false;
	/* Only a directory has named entries; otherwise ask who added the watch. */
	return ev->name || (p->wid_is_dir && p->wid_is_dir(p->arg, ev->wid));
}

static void print_watched(const struct wait_print *p, FILE *f, const struct fsnw_event *ev)
{
	if (!ev->path)
		return; /* FSNW_OVERFLOW belongs to no watch */
	fputs(ev->path, f);
	if (slash_after_watched(p, ev))
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

/*
 * inotifywait's CSV field, here the text a then b: quoted when it holds a
 * quote, a comma or a newline, or starts or ends with a space; a quote
 * inside is doubled. An empty field is nothing at all.
 */
static void print_csv_field(FILE *f, const char *a, size_t alen, const char *b, size_t blen)
{
	const char *part[2] = { a, b };
	size_t len[2] = { alen, blen };
	char first = alen ? a[0] : blen ? b[0] : '\0';
	char last = blen ? b[blen - 1] : alen ? a[alen - 1] : '\0';
	bool quote = first == ' ' || last == ' ';

	if (!alen && !blen)
		return;
	for (int i = 0; i < 2; i++)
		quote = quote || memchr(part[i], '"', len[i]) || memchr(part[i], ',', len[i]) ||
			memchr(part[i], '\n', len[i]);
	if (!quote) {
		fwrite(a, 1, alen, f);
		fwrite(b, 1, blen, f);
		return;
	}
	fputc('"', f);
	for (int i = 0; i < 2; i++) {
		for (size_t j = 0; j < len[i]; j++) {
			if (part[i][j] == '"')
				fputc('"', f);
			fputc(part[i][j], f);
		}
	}
	fputc('"', f);
}

/* WATCHED,EVENTS,NAME; WATCHED and its comma are left out when empty, as by inotifywait. */
static void print_csv(const struct wait_print *p, FILE *f, const struct fsnw_event *ev)
{
	char events[EVNAMES_MAX];
	size_t len;

	if (ev->path && ev->path[0]) {
		bool slash = slash_after_watched(p, ev);

		print_csv_field(f, ev->path, strlen(ev->path), "/", slash);
		fputc(',', f);
	}
	len = evnames_format(events, sizeof(events), ev->mask, ',');
	print_csv_field(f, events, len, "", 0);
	fputc(',', f);
	if (ev->name)
		print_csv_field(f, ev->name, strlen(ev->name), "", 0);
	fputc('\n', f);
}

void wait_print_event(const struct wait_print *p, FILE *f, const struct fsnw_event *ev)
{
	if (p->json) {
		json_print_event_open(f, ev);
		fputs("}\n", f);
		return;
	}
	if (p->csv) {
		print_csv(p, f, ev);
		return;
	}
	print_format(p, f, ev);
	if (p->newline)
		fputc('\n', f);
}

size_t wait_print_watched_name(const struct wait_print *p, const struct fsnw_event *ev,
			       char *buf, size_t size)
{
	size_t plen = ev->path ? strlen(ev->path) : 0;
	size_t slash = ev->path && slash_after_watched(p, ev);
	size_t nlen = ev->name ? strlen(ev->name) : 0;
	size_t len = plen + slash + nlen;

	if (len < size) {
		memcpy(buf, ev->path ? ev->path : "", plen);
		memcpy(buf + plen, "/", slash);
		memcpy(buf + plen + slash, ev->name ? ev->name : "", nlen);
		buf[len] = '\0';
	}
	return len;
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
