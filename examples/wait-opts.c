/* SPDX-License-Identifier: MIT */
/* fsnw-wait's command line: inotifywait's options and messages, and ours. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats-report.h"
#include "tool-args.h"
#include "wait.h"

static void usage(FILE *f)
{
	fputs("Usage: fsnw-wait [OPTION]... FILE...\n"
	      "Wait for filesystem events on FILEs. The options of inotifywait(1), the same\n"
	      "lines and exit status, and a few more:\n"
	      "  -m, --monitor          keep listening instead of exiting after one event\n"
	      "  -d, --daemon           -m in the background, lines to --outfile, messages\n"
	      "                         to syslog\n"
	      "  -o, --outfile FILE     append the lines to FILE instead of standard output\n"
	      "  -s, --syslog           messages to syslog(3) instead of standard error\n"
	      "  -r, --recursive        watch directories with everything below them\n"
	      "  -P, --no-dereference   do not follow symlinks\n"
	      "  -e, --event LIST       events to listen for (comma-separated, repeatable)\n"
	      "  -t, --timeout S        give up after S seconds without an event (exit 2);\n"
	      "                         0: never\n"
	      "  -q, --quiet            no setup messages; twice: no events either\n"
	      "      --exclude RE       no events for paths (%w%f) matching the extended\n"
	      "                         regular expression RE; --excludei ignores case\n"
	      "      --include RE       events only for paths matching RE; --includei\n"
	      "  -c, --csv              one CSV line per event\n"
	      "      --format FMT       %w %f %e %Xe %c %T %0 %n, and %{count} %{wid}\n"
	      "      --timefmt FMT      strftime(3) format for %T\n"
	      "      --no-newline       no newline after each --format line\n"
	      "      --fromfile FILE    paths to watch, one a line ('-': stdin; @path excludes)\n"
	      "  -I, --inotify          watch with inotify (the default)\n"
	      "  -F, --fanotify         watch with fanotify, as fsnotifywait does\n"
	      "  -S, --filesystem       watch the whole filesystem of each FILE with fanotify\n"
	      "Not in inotifywait:\n"
	      "      --json             one JSON object a line\n"
	      "      --backend B        auto, inotify or fanotify\n"
	      "      --merge            merge repeated events that wait to be read\n"
	      "      --no-merge         report every event (the default)\n"
	      "      --stats            the watcher's JSON statistics on exit, to stderr\n"
	      "      --stats-interval S the same every S seconds\n"
	      "  -h, --help             this text\n"
	      "Exit status: 0 an event was received, 1 error or an event not asked for,\n"
	      "2 timeout. See fsnw-wait(1).\n",
	      f);
}

static int parse_backend(const char *arg, uint32_t *out)
{
	if (!strcmp(arg, "auto"))
		*out = FSNW_BACKEND_AUTO;
	else if (!strcmp(arg, "inotify"))
		*out = FSNW_BACKEND_INOTIFY;
	else if (!strcmp(arg, "fanotify"))
		*out = FSNW_BACKEND_FANOTIFY;
	else {
		fprintf(stderr, "'%s' is not a backend: auto, inotify or fanotify.\n", arg);
		return -1;
	}
	return 0;
}

enum { OPT_FORMAT = 256, OPT_TIMEFMT, OPT_NO_NEWLINE, OPT_JSON, OPT_FROMFILE, OPT_BACKEND,
       OPT_MERGE, OPT_NO_MERGE, OPT_STATS, OPT_STATS_INTERVAL, OPT_EXCLUDE, OPT_EXCLUDEI,
       OPT_INCLUDE, OPT_INCLUDEI };

static const struct option longs[] = {
	{ "monitor", no_argument, NULL, 'm' },
	{ "daemon", no_argument, NULL, 'd' },
	{ "outfile", required_argument, NULL, 'o' },
	{ "syslog", no_argument, NULL, 's' },
	{ "recursive", no_argument, NULL, 'r' },
	{ "no-dereference", no_argument, NULL, 'P' },
	{ "event", required_argument, NULL, 'e' },
	{ "timeout", required_argument, NULL, 't' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "csv", no_argument, NULL, 'c' },
	{ "inotify", no_argument, NULL, 'I' },
	{ "fanotify", no_argument, NULL, 'F' },
	{ "filesystem", no_argument, NULL, 'S' },
	{ "filename", no_argument, NULL, 'f' },
	{ "help", no_argument, NULL, 'h' },
	{ "exclude", required_argument, NULL, OPT_EXCLUDE },
	{ "excludei", required_argument, NULL, OPT_EXCLUDEI },
	{ "include", required_argument, NULL, OPT_INCLUDE },
	{ "includei", required_argument, NULL, OPT_INCLUDEI },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "timefmt", required_argument, NULL, OPT_TIMEFMT },
	{ "no-newline", no_argument, NULL, OPT_NO_NEWLINE },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "fromfile", required_argument, NULL, OPT_FROMFILE },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "merge", no_argument, NULL, OPT_MERGE },
	{ "no-merge", no_argument, NULL, OPT_NO_MERGE },
	{ "stats", no_argument, NULL, OPT_STATS },
	{ "stats-interval", required_argument, NULL, OPT_STATS_INTERVAL },
	{ NULL, 0, NULL, 0 },
};

/* Combinations inotifywait refuses, in its order and words; and ours. */
static int check_combinations(const struct wait_opts *o)
{
	if (o->format && o->csv) {
		fprintf(stderr, "-c and --format cannot both be specified.\n");
		return -1;
	}
	if (!o->format && o->no_newline) {
		fprintf(stderr, "--no-newline cannot be specified without --format.\n");
		return -1;
	}
	if (o->timefmt && !o->format) {
		fprintf(stderr, "--timefmt cannot be specified without --format.\n");
		return -1;
	}
	if (o->format && strstr(o->format, "%T") && !o->timefmt) {
		fprintf(stderr, "%%T is in --format string, but --timefmt was not specified.\n");
		return -1;
	}
	if (o->daemon && !o->outfile) {
		fprintf(stderr, "-o must be specified with -d.\n");
		return -1;
	}
	if (o->json && (o->format || o->csv)) {
		fprintf(stderr, "--json and %s cannot both be specified.\n",
			o->csv ? "-c" : "--format");
		return -1;
	}
	return 0;
}

/* An option that takes a value; returns 0, or -1 after saying what is wrong. */
static int value_option(struct wait_opts *o, struct tool_regex_opts *r, int c)
{
	switch (c) {
	case 'e':
		return tool_event_option(optarg, &o->events);
	case 't':
		return tool_timeout_parse(optarg, &o->timeout);
	case 'o':
		if (o->outfile) {
			fprintf(stderr, "Multiple --outfile options given.\n");
			return -1;
		}
		o->outfile = optarg;
		return 0;
	case OPT_FROMFILE:
		if (o->fromfile) {
			fprintf(stderr, "Multiple --fromfile options given.\n");
			return -1;
		}
		o->fromfile = optarg;
		return 0;
	case OPT_EXCLUDE:
		r->exclude = optarg;
		r->nexclude++;
		return 0;
	case OPT_EXCLUDEI:
		r->excludei = optarg;
		r->nexcludei++;
		return 0;
	case OPT_INCLUDE:
		r->include = optarg;
		return 0;
	case OPT_INCLUDEI:
		r->includei = optarg;
		return 0;
	case OPT_FORMAT:
		o->format = optarg;
		return 0;
	case OPT_TIMEFMT:
		o->timefmt = optarg;
		return 0;
	case OPT_BACKEND:
		return parse_backend(optarg, &o->backend);
	case OPT_STATS_INTERVAL:
		if (stats_interval_parse(optarg, &o->stats_interval) < 0) {
			fprintf(stderr, "'%s' is not a valid interval: seconds, from 0.001 to "
				"86400.\n", optarg);
			return -1;
		}
		return 0;
	}
	return -1; /* not reached: flag_option and this take every letter getopt knows */
}

/* An option without a value: 0 taken, 1 to stop (--help), -1 refused, 2 not one of these. */
static int flag_option(struct wait_opts *o, int c)
{
	switch (c) {
	case 'm':
		o->monitor = true;
		return 0;
	case 'd':
		/* As in inotifywait: a daemon monitors, and says things to syslog. */
		o->daemon = o->monitor = o->syslog = true;
		return 0;
	case 's':
		o->syslog = true;
		return 0;
	case 'r':
		o->recursive = true;
		return 0;
	case 'P':
		o->no_deref = true;
		return 0;
	case 'q':
		o->quiet++;
		return 0;
	case 'c':
		o->csv = true;
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
	case OPT_NO_NEWLINE:
		o->no_newline = true;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_MERGE:
		o->merge = true;
		return 0;
	case OPT_NO_MERGE:
		o->merge = false;
		return 0;
	case OPT_STATS:
		o->stats = true;
		return 0;
	case 'f':
		fprintf(stderr, "The '--filename' option no longer exists.  The option it enabled "
			"in earlier\nversions of inotifywait is now turned on by default.\n");
		return -1;
	case 'h':
		usage(stdout);
		return 1;
	}
	return 2;
}

/* Returns 0 to go on, 1 when done (--help), -1 on a usage error. */
int wait_parse_opts(struct wait_state *s, int argc, char **argv)
{
	struct wait_opts *o = &s->o;
	struct tool_regex_opts r = { 0 };
	int c, ret;

	while ((c = getopt_long(argc, argv, "mdo:srPe:t:qcIFSfh", longs, NULL)) != -1) {
		/* getopt has said what is unknown; inotifywait adds nothing. */
		if (c == '?')
			return -1;
		ret = flag_option(o, c);
		if (ret == 2)
			ret = value_option(o, &r, c);
		if (ret)
			return ret < 0 ? -1 : 1;
	}
	if (tool_regex_check(&r, &o->regex, &o->regex_include, &o->regex_icase) < 0 ||
	    check_combinations(o) < 0)
		return -1;
	tool_regex_warn(&r);
	s->args = argv + optind;
	s->nargs = argc - optind;
	return 0;
}
