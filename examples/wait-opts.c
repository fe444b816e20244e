/* SPDX-License-Identifier: MIT */
/* fsnw-wait's command line: inotifywait's options and messages, and ours. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eventfmt.h"
#include "stats-report.h"
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
	      "                         0 or less: never\n"
	      "  -q, --quiet            no setup messages; twice: no events either\n"
	      "      --exclude RE       no events for paths (%w%f) matching the extended\n"
	      "                         regular expression RE; --excludei ignores case\n"
	      "      --include RE       events only for paths matching RE; --includei\n"
	      "  -c, --csv              one CSV line per event\n"
	      "      --format FMT       %w %f %e %Xe %T %0 %n, and %c count, %i wid, %k cookie\n"
	      "      --timefmt FMT      strftime(3) format for %T\n"
	      "      --no-newline       no newline after each --format line\n"
	      "      --fromfile FILE    paths to watch, one a line ('-': stdin; @path excludes)\n"
	      "  -I, --inotify          --backend inotify, as fsnotifywait has it\n"
	      "  -F, --fanotify         --backend fanotify, as fsnotifywait has it\n"
	      "Not in inotifywait:\n"
	      "      --json             one JSON object a line\n"
	      "      --backend B        auto, inotify or fanotify\n"
	      "      --no-merge         report every event, never merge repeats\n"
	      "      --stats            the watcher's JSON statistics on exit, to stderr\n"
	      "      --stats-interval S the same every S seconds\n"
	      "  -h, --help             this text\n"
	      "Exit status: 0 an event was received, 1 error or an event not asked for,\n"
	      "2 timeout. See fsnw-wait(1).\n",
	      f);
}

static int add_path(struct wait_state *s, const char *arg)
{
	if (arg[0] == '@') {
		size_t len = strlen(arg + 1);

		if (s->nexcl == s->capexcl) {
			size_t cap = s->capexcl ? 2 * s->capexcl : 16;
			char **v = realloc(s->excl, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->excl = v;
			s->capexcl = cap;
		}
		while (len > 1 && arg[len] == '/')
			len--;
		if (!len)
			return 0; /* a bare @ excludes nothing */
		s->excl[s->nexcl] = strndup(arg + 1, len);
		if (!s->excl[s->nexcl])
			return -ENOMEM;
		s->nexcl++;
		return 0;
	}
	if (s->nt == s->capt) {
		size_t cap = s->capt ? 2 * s->capt : 16;
		struct wait_target *v = realloc(s->t, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->t = v;
		s->capt = cap;
	}
	s->t[s->nt].path = strdup(arg);
	if (!s->t[s->nt].path)
		return -ENOMEM;
	s->t[s->nt].dir = false;
	s->t[s->nt].wid = 0;
	s->nt++;
	return 0;
}

static int read_fromfile(struct wait_state *s, const char *file)
{
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int ret = 0;

	if (!f) {
		fprintf(stderr, "Couldn't open %s: %s\n", file, strerror(errno));
		return -1;
	}
	while (ret == 0 && (len = getline(&line, &cap, f)) >= 0) {
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		if (len)
			ret = add_path(s, line);
	}
	if (ret == 0 && ferror(f))
		ret = -errno;
	if (ret < 0)
		fprintf(stderr, "Couldn't read %s: %s\n", file, strerror(-ret));
	free(line);
	if (f != stdin)
		fclose(f);
	return ret;
}

/*
 * inotifywait takes whole seconds and waits for ever on 0 and, by an
 * unsigned conversion, on a negative number: so do we, and we take
 * fractions too. So long a wait that it would overflow is for ever as well.
 */
static int parse_timeout(const char *arg, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno == ERANGE && isinf(v))
		v = 0;
	else if (errno || end == arg || *end || isnan(v)) {
		fprintf(stderr, "'%s' is not a valid timeout value.\n", arg);
		return -1;
	}
	*out = v < 0 || v > 86400.0 * 365 * 100 ? 0 : v;
	return 0;
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
       OPT_NO_MERGE, OPT_STATS, OPT_STATS_INTERVAL, OPT_EXCLUDE, OPT_EXCLUDEI, OPT_INCLUDE,
       OPT_INCLUDEI };

/* --exclude and its kin: inotifywait's rules for giving more than one. */
struct regex_opts {
	const char *exclude, *excludei, *include, *includei;
	unsigned nexclude, nexcludei;
};

static int check_regex(const struct regex_opts *r, struct wait_opts *o)
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
	if (r->nexclude > 1)
		fprintf(stderr, "--exclude: only the last option will be taken into "
			"consideration.\n");
	if (r->nexcludei > 1)
		fprintf(stderr, "--excludei: only the last option will be taken into "
			"consideration.\n");
	o->regex_include = r->include || r->includei;
	o->regex_icase = r->excludei || r->includei;
	o->regex = r->exclude ? r->exclude : r->excludei ? r->excludei :
		   r->include ? r->include : r->includei;
	return 0;
}

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

/* Returns 0 to go on, 1 when done (--help), -1 on a usage error. */
int wait_parse_opts(struct wait_state *s, int argc, char **argv)
{
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
		{ "no-merge", no_argument, NULL, OPT_NO_MERGE },
		{ "stats", no_argument, NULL, OPT_STATS },
		{ "stats-interval", required_argument, NULL, OPT_STATS_INTERVAL },
		{ NULL, 0, NULL, 0 },
	};
	struct wait_opts *o = &s->o;
	struct regex_opts r = { 0 };
	const char *bad;
	size_t badlen;
	int c;

	while ((c = getopt_long(argc, argv, "mdo:srPe:t:qcIFSfh", longs, NULL)) != -1) {
		switch (c) {
		case 'm':
			o->monitor = true;
			break;
		case 'd':
			/* As in inotifywait: a daemon monitors, and says things to syslog. */
			o->daemon = o->monitor = o->syslog = true;
			break;
		case 'o':
			if (o->outfile) {
				fprintf(stderr, "Multiple --outfile options given.\n");
				return -1;
			}
			o->outfile = optarg;
			break;
		case 's':
			o->syslog = true;
			break;
		case 'r':
			o->recursive = true;
			break;
		case 'P':
			o->no_deref = true;
			break;
		case 'q':
			o->quiet++;
			break;
		case 'c':
			o->csv = true;
			break;
		case 'I':
			o->backend = FSNW_BACKEND_INOTIFY;
			break;
		case 'F':
			o->backend = FSNW_BACKEND_FANOTIFY;
			break;
		case 'S':
			fprintf(stderr, "-S (--filesystem) is not supported: the library watches "
				"trees, not whole filesystems; see fsnw-wait(1).\n");
			return -1;
		case 'f':
			fprintf(stderr, "The '--filename' option no longer exists.  The option it "
				"enabled in earlier\nversions of inotifywait is now turned on by "
				"default.\n");
			return -1;
		case 'h':
			usage(stdout);
			return 1;
		case OPT_EXCLUDE:
			r.exclude = optarg;
			r.nexclude++;
			break;
		case OPT_EXCLUDEI:
			r.excludei = optarg;
			r.nexcludei++;
			break;
		case OPT_INCLUDE:
			r.include = optarg;
			break;
		case OPT_INCLUDEI:
			r.includei = optarg;
			break;
		case OPT_FORMAT:
			o->format = optarg;
			break;
		case OPT_TIMEFMT:
			o->timefmt = optarg;
			break;
		case OPT_NO_NEWLINE:
			o->no_newline = true;
			break;
		case OPT_JSON:
			o->json = true;
			break;
		case OPT_NO_MERGE:
			o->no_merge = true;
			break;
		case OPT_STATS:
			o->stats = true;
			break;
		case OPT_STATS_INTERVAL:
			if (stats_interval_parse(optarg, &o->stats_interval) < 0) {
				fprintf(stderr, "'%s' is not a valid interval: seconds, from 0.001 "
					"to 86400.\n", optarg);
				return -1;
			}
			break;
		case 'e':
			if (evnames_parse(optarg, &o->events, &bad, &badlen) < 0) {
				fprintf(stderr, "'%.*s' is not a valid event!  Run with the '--help' "
					"option to see a list of events.\n", (int)badlen, bad);
				return -1;
			}
			break;
		case 't':
			if (parse_timeout(optarg, &o->timeout) < 0)
				return -1;
			break;
		case OPT_FROMFILE:
			if (o->fromfile) {
				fprintf(stderr, "Multiple --fromfile options given.\n");
				return -1;
			}
			o->fromfile = optarg;
			break;
		case OPT_BACKEND:
			if (parse_backend(optarg, &o->backend) < 0)
				return -1;
			break;
		default:
			usage(stderr);
			return -1;
		}
	}
	if (check_regex(&r, o) < 0 || check_combinations(o) < 0)
		return -1;
	for (int i = optind; i < argc; i++)
		if (add_path(s, argv[i]) < 0) {
			fprintf(stderr, "fsnw-wait: %s\n", strerror(ENOMEM));
			return -1;
		}
	if (o->fromfile && read_fromfile(s, o->fromfile) < 0)
		return -1;
	if (!s->nt) {
		fprintf(stderr, "No files specified to watch!\n");
		return -1;
	}
	return 0;
}

void wait_free_paths(struct wait_state *s)
{
	for (size_t i = 0; i < s->nt; i++)
		free(s->t[i].path);
	for (size_t i = 0; i < s->nexcl; i++)
		free(s->excl[i]);
	free(s->t);
	free(s->excl);
}
