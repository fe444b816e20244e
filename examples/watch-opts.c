/* SPDX-License-Identifier: MIT */
/* fsnw-watch's command line: inotifywatch's options and messages, and ours. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tool-args.h"
#include "watch.h"

static void usage(FILE *f)
{
	fputs("Usage: fsnw-watch [OPTION]... FILE...\n"
	      "Count filesystem events on FILEs and print a table of them at the end. The\n"
	      "options of inotifywatch(1), the same table and exit status, and --json:\n"
	      "  -v, --verbose          say more while setting up\n"
	      "  -r, --recursive        watch directories with everything below them\n"
	      "  -P, --no-dereference   do not follow symlinks\n"
	      "  -e, --event LIST       events to count (comma-separated, repeatable)\n"
	      "  -t, --timeout S        count for S seconds, then print; 0: until a signal\n"
	      "  -a, --ascending EVENT  sort ascending by EVENT, or by `total'\n"
	      "  -d, --descending EVENT sort descending by EVENT, or by `total' (the default)\n"
	      "  -z, --zero             rows and columns of zeros too\n"
	      "      --exclude RE       leave out paths (%w%f) matching the extended regular\n"
	      "                         expression RE; --excludei ignores case\n"
	      "      --include RE       count only paths matching RE; --includei\n"
	      "      --fromfile FILE    paths to watch, one a line ('-': stdin; @path excludes)\n"
	      "  -I, --inotify          watch with inotify (the default)\n"
	      "  -F, --fanotify         watch with fanotify, as fsnotifywatch does\n"
	      "  -S, --filesystem       watch the whole filesystem of each FILE with fanotify\n"
	      "Not in inotifywatch:\n"
	      "      --json             the table as one JSON object\n"
	      "  -h, --help             this text\n"
	      "SIGINT, SIGTERM, SIGHUP or the timeout end the count; SIGUSR1 prints the table\n"
	      "so far. Exit status: 0, or 1 on an error. See fsnw-watch(1).\n",
	      f);
}

enum { OPT_FROMFILE = 256, OPT_EXCLUDE, OPT_EXCLUDEI, OPT_INCLUDE, OPT_INCLUDEI, OPT_JSON };

static const struct option longs[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "event", required_argument, NULL, 'e' },
	{ "timeout", required_argument, NULL, 't' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "zero", no_argument, NULL, 'z' },
	{ "ascending", required_argument, NULL, 'a' },
	{ "descending", required_argument, NULL, 'd' },
	{ "recursive", no_argument, NULL, 'r' },
	{ "inotify", no_argument, NULL, 'I' },
	{ "fanotify", no_argument, NULL, 'F' },
	{ "filesystem", no_argument, NULL, 'S' },
	{ "no-dereference", no_argument, NULL, 'P' },
	{ "fromfile", required_argument, NULL, OPT_FROMFILE },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "excludei", required_argument, NULL, OPT_EXCLUDEI },
	{ "include", required_argument, NULL, OPT_INCLUDE },
	{ "includei", required_argument, NULL, OPT_INCLUDEI },
	{ "json", no_argument, NULL, OPT_JSON },
	{ NULL, 0, NULL, 0 },
};

/*
 * -a and -d, in inotifywatch's words. Only -a looks at whether one was
 * given already (and only -a counts as given), so -d x -a y is taken.
 */
static int sort_option(struct watch_opts *o, bool ascending, bool *sort_set)
{
	uint32_t bit;

	if (*sort_set) {
		fprintf(stderr, "Please specify -a or -d once only!\n");
		return -1;
	}
	o->sort_arg = optarg;
	if (!strcasecmp(optarg, "total")) {
		o->sort = ascending ? 0 : -1;
	} else if (ascending && !strcasecmp(optarg, "move")) {
		fprintf(stderr, "Cannot sort by `move' event; please use `moved_from' or "
			"`moved_to'.\n");
		return -1;
	} else if (ascending && !strcasecmp(optarg, "close")) {
		fprintf(stderr, "Cannot sort by `close' event; please use `close_write' or "
			"`close_nowrite'.\n");
		return -1;
	} else if (tool_events_parse(optarg, &bit) < 0) {
		fprintf(stderr, "'%s' is not a valid key for sorting!\n", optarg);
		return -1;
	} else {
		o->sort = ascending ? (long)bit : -(long)bit;
	}
	*sort_set = *sort_set || ascending;
	return 0;
}

/* inotifywatch's checks after the options, in its order. */
static int check_options(struct watch_opts *o, const struct tool_regex_opts *r)
{
	long key = o->sort < 0 ? -o->sort : o->sort;

	if (o->sort != 0 && o->sort != -1 &&
	    !((uint32_t)key & (o->events ? o->events : FSNW_ALL_EVENTS))) {
		fprintf(stderr, "Can't sort by an event which isn't being watched for!\n");
		return -1;
	}
	if (tool_regex_check(r, &o->regex, &o->regex_include, &o->regex_icase) < 0)
		return -1;
	/* inotifywatch takes these and then crashes on the first event counted. */
	if (o->sort != 0 && o->sort != -1 && !watch_table_column((uint32_t)key)) {
		fprintf(stderr, "'%s' is not a key fsnw-watch can sort by: one event with a "
			"column, or `total'.\n", o->sort_arg);
		return -1;
	}
	return 0;
}

/* An option: 0 taken, 1 to stop (--help), -1 refused. */
static int one_option(struct watch_opts *o, struct tool_regex_opts *r, int c, bool *sort_set)
{
	switch (c) {
	case 'h':
		usage(stdout);
		return 1;
	case 'v':
		o->verbose++;
		return 0;
	case 'r':
		o->recursive = true;
		return 0;
	case 'I':
		o->backend = FSNW_BACKEND_INOTIFY;
		o->filesystem = false;
		return 0;
	case 'F':
		o->backend = FSNW_BACKEND_FANOTIFY;
		return 0;
	case 'S':
		o->backend = FSNW_BACKEND_FANOTIFY;
		o->filesystem = true;
		return 0;
	case 'P':
		o->no_deref = true;
		return 0;
	case 'z':
		o->zero++;
		return 0;
	case OPT_EXCLUDE:
		r->exclude = optarg;
		return 0;
	case OPT_EXCLUDEI:
		r->excludei = optarg;
		return 0;
	case OPT_INCLUDE:
		r->include = optarg;
		return 0;
	case OPT_INCLUDEI:
		r->includei = optarg;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_FROMFILE:
		if (o->fromfile) {
			fprintf(stderr, "Multiple --fromfile options given.\n");
			return -1;
		}
		o->fromfile = optarg;
		return 0;
	case 't':
		return tool_timeout_parse(optarg, &o->timeout);
	case 'e':
		return tool_event_option(optarg, &o->events);
	case 'a':
	case 'd':
		return sort_option(o, c == 'a', sort_set);
	}
	return -1; /* '?': getopt has said what is unknown, and inotifywatch adds nothing */
}

int watch_parse_opts(struct watch_state *s, int argc, char **argv)
{
	struct watch_opts *o = &s->o;
	struct tool_regex_opts r = { 0 };
	bool sort_set = false;
	int c, ret;

	o->sort = -1;
	while ((c = getopt_long(argc, argv, "hrPa:d:zve:t:IFS", longs, NULL)) != -1) {
		ret = one_option(o, &r, c, &sort_set);
		if (ret)
			return ret;
	}
	if (check_options(o, &r) < 0)
		return -1;
	s->args = argv + optind;
	s->nargs = argc - optind;
	return 0;
}
