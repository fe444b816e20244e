/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define B(c) (1u << (c))
#define SCEN_ALL (B(CMD_CHURN) | B(CMD_XATTR) | B(CMD_PARENT_WRITE) | B(CMD_OPENCLOSE) | \
		  B(CMD_CHILDREN) | B(CMD_MERGE) | B(CMD_QUICK))

static const char *const cmd_names[CMD_COUNT] = {
	[CMD_CHURN] = "churn",
	[CMD_XATTR] = "xattr",
	[CMD_PARENT_WRITE] = "parent-write",
	[CMD_OPENCLOSE] = "openclose",
	[CMD_CHILDREN] = "addwatch-children",
	[CMD_MERGE] = "merge",
	[CMD_QUICK] = "quick",
	[CMD_REPORT] = "report",
};

enum opt_id {
	O_SIZE = 256, O_WARMUP, O_ROUNDS, O_CSV, O_SVG, O_DIR, O_CPUS, O_VARIANTS, O_QUIET,
	O_VERBOSE, O_GROUPS, O_WORKERS, O_BULK, O_TREE_DIRS, O_CALLS, O_FILES, O_CLIENTS,
	O_WRITES, O_OPS, O_CHILDREN, O_CYCLES, O_DEPTHS, O_LINEAR_MAX, O_MERGE_FILES,
	O_READ_EVENTS, O_CONTROLS, O_CANDIDATE, O_MIN_CHANGE, O_MAX_DRIFT, O_MAX_CV,
	O_SCENARIO, O_HELP,
};

/* Which subcommands take each option: a typo or a misplaced flag is an error,
 * not a silently ignored setting. */
static const struct {
	int id;
	unsigned cmds;
} applies[] = {
	{ O_SIZE, SCEN_ALL },
	{ O_WARMUP, SCEN_ALL & ~B(CMD_QUICK) },
	{ O_ROUNDS, SCEN_ALL & ~B(CMD_QUICK) },
	{ O_CSV, SCEN_ALL },
	{ O_SVG, B(CMD_CHURN) | B(CMD_PARENT_WRITE) | B(CMD_MERGE) | B(CMD_QUICK) },
	{ O_DIR, SCEN_ALL },
	{ O_CPUS, SCEN_ALL },
	{ O_VARIANTS, SCEN_ALL & ~B(CMD_QUICK) },
	{ O_QUIET, SCEN_ALL },
	{ O_VERBOSE, B(CMD_QUICK) },
	{ O_GROUPS, B(CMD_CHURN) | B(CMD_QUICK) },
	{ O_WORKERS, B(CMD_CHURN) | B(CMD_CHILDREN) | B(CMD_QUICK) },
	{ O_BULK, B(CMD_CHURN) | B(CMD_QUICK) },
	{ O_TREE_DIRS, B(CMD_CHURN) | B(CMD_QUICK) },
	{ O_CALLS, B(CMD_XATTR) | B(CMD_QUICK) },
	{ O_FILES, B(CMD_PARENT_WRITE) | B(CMD_QUICK) },
	{ O_CLIENTS, B(CMD_PARENT_WRITE) | B(CMD_QUICK) },
	{ O_WRITES, B(CMD_PARENT_WRITE) | B(CMD_QUICK) },
	{ O_OPS, B(CMD_OPENCLOSE) | B(CMD_QUICK) },
	{ O_CHILDREN, B(CMD_CHILDREN) | B(CMD_QUICK) },
	{ O_CYCLES, B(CMD_CHILDREN) | B(CMD_QUICK) },
	{ O_DEPTHS, B(CMD_MERGE) | B(CMD_QUICK) },
	{ O_LINEAR_MAX, B(CMD_MERGE) | B(CMD_QUICK) },
	{ O_MERGE_FILES, B(CMD_MERGE) | B(CMD_QUICK) },
	{ O_READ_EVENTS, B(CMD_MERGE) | B(CMD_QUICK) },
	{ O_CONTROLS, B(CMD_REPORT) },
	{ O_CANDIDATE, B(CMD_REPORT) },
	{ O_MIN_CHANGE, B(CMD_REPORT) },
	{ O_MAX_DRIFT, B(CMD_REPORT) },
	{ O_MAX_CV, B(CMD_REPORT) },
	{ O_SCENARIO, B(CMD_REPORT) },
	{ O_HELP, ~0u },
};

static const struct option longopts[] = {
	{ "size", required_argument, NULL, O_SIZE },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "rounds", required_argument, NULL, O_ROUNDS },
	{ "csv", required_argument, NULL, O_CSV },
	{ "svg", required_argument, NULL, O_SVG },
	{ "dir", required_argument, NULL, O_DIR },
	{ "cpus", required_argument, NULL, O_CPUS },
	{ "variants", required_argument, NULL, O_VARIANTS },
	{ "quiet", no_argument, NULL, O_QUIET },
	{ "verbose", no_argument, NULL, O_VERBOSE },
	{ "groups", required_argument, NULL, O_GROUPS },
	{ "workers", required_argument, NULL, O_WORKERS },
	{ "bulk", required_argument, NULL, O_BULK },
	{ "tree-dirs", required_argument, NULL, O_TREE_DIRS },
	{ "calls", required_argument, NULL, O_CALLS },
	{ "files", required_argument, NULL, O_FILES },
	{ "clients", required_argument, NULL, O_CLIENTS },
	{ "writes", required_argument, NULL, O_WRITES },
	{ "ops", required_argument, NULL, O_OPS },
	{ "children", required_argument, NULL, O_CHILDREN },
	{ "cycles", required_argument, NULL, O_CYCLES },
	{ "depths", required_argument, NULL, O_DEPTHS },
	{ "linear-max-depth", required_argument, NULL, O_LINEAR_MAX },
	{ "merge-files", required_argument, NULL, O_MERGE_FILES },
	{ "read-events", required_argument, NULL, O_READ_EVENTS },
	{ "controls", required_argument, NULL, O_CONTROLS },
	{ "candidate", required_argument, NULL, O_CANDIDATE },
	{ "min-change", required_argument, NULL, O_MIN_CHANGE },
	{ "max-drift", required_argument, NULL, O_MAX_DRIFT },
	{ "max-cv", required_argument, NULL, O_MAX_CV },
	{ "scenario", required_argument, NULL, O_SCENARIO },
	{ "help", no_argument, NULL, O_HELP },
	{ NULL, 0, NULL, 0 },
};

void cli_usage(FILE *f)
{
	fputs("usage: fsnw-bench SUBCOMMAND [OPTIONS]\n"
	      "  churn              watch add/remove churn (seed 000), bulk, mask-update, tree add\n"
	      "  xattr              flistxattr on tmpfs (seed 001), a kernel probe\n"
	      "  parent-write       1-byte pwrites under a parent watch (seed 002)\n"
	      "  openclose          open+close latency under a parent watch (seed 002)\n"
	      "  addwatch-children  inotify_add_watch on a directory with many children (seed 002)\n"
	      "  merge              merging event queues, kernel and user space (seed 004)\n"
	      "  quick              every scenario at a small size, one summary table\n"
	      "  report RUN.csv...  compare runs from different boots (gates)\n"
	      "common: --size tiny|small|default|seed --warmup N --rounds N --csv FILE\n"
	      "        --svg FILE --dir DIR --cpus LIST --variants LIST --quiet\n"
	      "see fsnw-bench(1) for the options of each subcommand.\n", f);
}

static long parse_long(const char *s, const char *opt, long min, long max, int *err)
{
	char *end;
	long v;
	long mult = 1;

	errno = 0;
	v = strtol(s, &end, 10);
	/* 16k and 1M read as binary multiples: depths and sizes are given that way. */
	if (end != s && (*end == 'k' || *end == 'K')) {
		mult = 1024;
		end++;
	} else if (end != s && (*end == 'm' || *end == 'M')) {
		mult = 1024 * 1024;
		end++;
	}
	if (errno || end == s || *end || v > LONG_MAX / mult || v * mult < min ||
	    v * mult > max) {
		fprintf(stderr, "fsnw-bench: %s: '%s' is not a number in [%ld, %ld]\n", opt, s,
			min, max);
		*err = 1;
		return 0;
	}
	return v * mult;
}

/* "1,2,4" or "0-3,8" (ranges for CPU lists). */
static int parse_list(const char *s, const char *opt, long min, long max, bool ranges,
		      struct long_list *l)
{
	char *copy = strdup(s), *save = NULL, *tok;
	int err = 0;

	if (!copy)
		return -1;
	l->n = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !err; tok = strtok_r(NULL, ",", &save)) {
		char *dash = ranges ? strchr(tok, '-') : NULL;
		long a, b;

		if (dash) {
			*dash = '\0';
			a = parse_long(tok, opt, min, max, &err);
			b = parse_long(dash + 1, opt, min, max, &err);
		} else {
			a = b = parse_long(tok, opt, min, max, &err);
		}
		if (err)
			break;
		if (b < a) {
			fprintf(stderr, "fsnw-bench: %s: empty range in '%s'\n", opt, s);
			err = 1;
			break;
		}
		for (long v = a; v <= b; v++) {
			if (l->n == LIST_MAX) {
				fprintf(stderr, "fsnw-bench: %s: more than %d values\n", opt,
					LIST_MAX);
				err = 1;
				break;
			}
			l->v[l->n++] = v;
		}
	}
	free(copy);
	if (!err && !l->n) {
		fprintf(stderr, "fsnw-bench: %s: empty list\n", opt);
		err = 1;
	}
	return err ? -1 : 0;
}

static double parse_pct(const char *s, const char *opt, int *err)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || (*end && strcmp(end, "%")) || v < 0 || v > 1000) {
		fprintf(stderr, "fsnw-bench: %s: '%s' is not a percentage\n", opt, s);
		*err = 1;
	}
	return v;
}

static void defaults(struct bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->size = SIZE_DEFAULT;
	o->size_name = "default";
	o->warmup = o->rounds = -1;
	o->groups = o->bulk = o->tree_dirs = o->calls = o->files = o->writes = o->ops = -1;
	o->children = o->cycles = o->linear_max = o->merge_files = o->read_events = -1;
	o->min_change = 5;
	o->max_drift = 5;
	o->max_cv = 15;
}

static int option_name_index(int id)
{
	for (int i = 0; longopts[i].name; i++)
		if (longopts[i].val == id)
			return i;
	return -1;
}

static bool option_applies(int id, enum cmd cmd)
{
	for (size_t i = 0; i < sizeof(applies) / sizeof(applies[0]); i++)
		if (applies[i].id == id)
			return applies[i].cmds & B(cmd);
	return false;
}

int cli_parse(int argc, char **argv, struct bench_opts *o)
{
	bool size_given = false;
	int c, err = 0;

	defaults(o);
	o->argc = argc;
	o->argv = argv;
	if (argc < 2) {
		cli_usage(stderr);
		return -1;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		cli_usage(stdout);
		exit(0);
	}
	for (c = 0; c < CMD_COUNT; c++)
		if (!strcmp(argv[1], cmd_names[c]))
			break;
	if (c == CMD_COUNT) {
		fprintf(stderr, "fsnw-bench: unknown subcommand '%s'\n", argv[1]);
		cli_usage(stderr);
		return -1;
	}
	o->cmd = (enum cmd)c;
	o->cmd_name = cmd_names[c];
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		const char *name;
		int idx;

		if (c == '?')
			return -1;
		if (c == 'h')
			c = O_HELP;
		idx = option_name_index(c);
		name = idx >= 0 ? longopts[idx].name : "?";
		if (!option_applies(c, o->cmd)) {
			fprintf(stderr, "fsnw-bench: --%s is not an option of %s\n", name,
				o->cmd_name);
			return -1;
		}
		switch (c) {
		case O_HELP:
			cli_usage(stdout);
			exit(0);
		case O_SIZE:
			size_given = true;
			o->size_name = optarg;
			if (!strcmp(optarg, "tiny"))
				o->size = SIZE_TINY;
			else if (!strcmp(optarg, "small"))
				o->size = SIZE_SMALL;
			else if (!strcmp(optarg, "default"))
				o->size = SIZE_DEFAULT;
			else if (!strcmp(optarg, "seed"))
				o->size = SIZE_SEED;
			else {
				fprintf(stderr, "fsnw-bench: --size: tiny, small, default or seed\n");
				return -1;
			}
			break;
		case O_WARMUP:
			o->warmup = (int)parse_long(optarg, "--warmup", 0, 1000, &err);
			break;
		case O_ROUNDS:
			o->rounds = (int)parse_long(optarg, "--rounds", 1, 100000, &err);
			break;
		case O_CSV:
			o->csv = optarg;
			break;
		case O_SVG:
			o->svg = optarg;
			break;
		case O_DIR:
			o->dir = optarg;
			break;
		case O_CPUS:
			err |= parse_list(optarg, "--cpus", 0, 4095, true, &o->cpus) < 0;
			break;
		case O_VARIANTS:
			o->variants = optarg;
			break;
		case O_QUIET:
			o->quiet = true;
			break;
		case O_VERBOSE:
			o->verbose = true;
			break;
		case O_GROUPS:
			o->groups = parse_long(optarg, "--groups", 1, 65536, &err);
			break;
		case O_WORKERS:
			err |= parse_list(optarg, "--workers", 1, 1024, false, &o->workers) < 0;
			break;
		case O_BULK:
			o->bulk = parse_long(optarg, "--bulk", 1, 1 << 20, &err);
			break;
		case O_TREE_DIRS:
			o->tree_dirs = parse_long(optarg, "--tree-dirs", 1, 1 << 22, &err);
			break;
		case O_CALLS:
			o->calls = parse_long(optarg, "--calls", 1, 1L << 34, &err);
			break;
		case O_FILES:
			o->files = parse_long(optarg, "--files", 1, 1 << 16, &err);
			break;
		case O_CLIENTS:
			err |= parse_list(optarg, "--clients", 1, 1 << 16, false, &o->clients) < 0;
			break;
		case O_WRITES:
			o->writes = parse_long(optarg, "--writes", 1, 1L << 34, &err);
			break;
		case O_OPS:
			o->ops = parse_long(optarg, "--ops", 1, 1L << 26, &err);
			break;
		case O_CHILDREN:
			o->children = parse_long(optarg, "--children", 0, 1L << 30, &err);
			break;
		case O_CYCLES:
			o->cycles = parse_long(optarg, "--cycles", 1, 1 << 20, &err);
			break;
		case O_DEPTHS:
			err |= parse_list(optarg, "--depths", 1, 1L << 26, false, &o->depths) < 0;
			break;
		case O_LINEAR_MAX:
			o->linear_max = parse_long(optarg, "--linear-max-depth", 0, 1L << 26, &err);
			break;
		case O_MERGE_FILES:
			o->merge_files = parse_long(optarg, "--merge-files", 2, 1 << 22, &err);
			break;
		case O_READ_EVENTS:
			o->read_events = parse_long(optarg, "--read-events", 1, 1 << 22, &err);
			break;
		case O_CONTROLS:
			err |= parse_list(optarg, "--controls", 1, 1000, false, &o->controls) < 0;
			if (!err && o->controls.n > 2) {
				fprintf(stderr, "fsnw-bench: --controls: one or two runs\n");
				err = 1;
			}
			break;
		case O_CANDIDATE:
			err |= parse_list(optarg, "--candidate", 1, 1000, false,
					  &o->candidates) < 0;
			break;
		case O_MIN_CHANGE:
			o->min_change = parse_pct(optarg, "--min-change", &err);
			break;
		case O_MAX_DRIFT:
			o->max_drift = parse_pct(optarg, "--max-drift", &err);
			break;
		case O_MAX_CV:
			o->max_cv = parse_pct(optarg, "--max-cv", &err);
			break;
		case O_SCENARIO:
			o->scenario = optarg;
			break;
		}
		if (err)
			return -1;
	}
	/* quick is the short demo: small sizes unless --size says otherwise. */
	if (o->cmd == CMD_QUICK && !size_given) {
		o->size = SIZE_SMALL;
		o->size_name = "small";
	}
	o->nargs = argc - optind;
	o->args = argv + optind;
	if (o->cmd == CMD_REPORT && o->nargs < 2) {
		fprintf(stderr, "fsnw-bench report: give at least two runs (CSV files)\n");
		return -1;
	}
	if (o->cmd != CMD_REPORT && o->nargs) {
		fprintf(stderr, "fsnw-bench %s: unexpected argument '%s'\n", o->cmd_name,
			o->args[0]);
		return -1;
	}
	return 0;
}

long cli_pick(const struct bench_opts *o, long tiny, long small, long def, long seed)
{
	switch (o->size) {
	case SIZE_TINY:
		return tiny;
	case SIZE_SMALL:
		return small;
	case SIZE_SEED:
		return seed;
	default:
		return def;
	}
}

static void set_if(long *v, long preset)
{
	if (*v < 0)
		*v = preset;
}

/* 1, 2, 4, ... up to n, and n itself. */
static void powers_up_to(struct long_list *l, long n)
{
	l->n = 0;
	for (long v = 1; v < n && l->n < LIST_MAX - 1; v *= 2)
		l->v[l->n++] = v;
	l->v[l->n++] = n;
}

void cli_resolve(struct bench_opts *o, int ncpu)
{
	set_if(&o->groups, cli_pick(o, 8, 32, 32, 96));
	set_if(&o->bulk, cli_pick(o, 64, 1024, 1024, 1024));
	set_if(&o->tree_dirs, cli_pick(o, 200, 10000, 10000, 10000));
	set_if(&o->calls, cli_pick(o, 4096, 65536, 262144, 1048576));
	set_if(&o->files, cli_pick(o, 4, 16, 64, 1024));
	set_if(&o->writes, cli_pick(o, 2000, 50000, 200000, 1000000));
	set_if(&o->ops, cli_pick(o, 2000, 20000, 100000, 100000));
	set_if(&o->children, cli_pick(o, 1000, 20000, 100000, 12000000));
	set_if(&o->cycles, cli_pick(o, 10, 50, 100, 100));
	set_if(&o->linear_max, 16384);
	set_if(&o->read_events, cli_pick(o, 1000, 16000, 16000, 16000));
	/* merge_files stays -1: the merge scenario reads fs.fanotify.max_queued_events. */
	if (!o->workers.n) {
		if (o->cmd == CMD_CHILDREN) {
			/* Mutators leave a CPU to the thread that measures. */
			o->workers.n = 1;
			o->workers.v[0] = o->size == SIZE_SEED ? 8 : (ncpu > 1 ? ncpu - 1 : 1);
		} else if (o->size == SIZE_SEED) {
			o->workers.n = 1;
			o->workers.v[0] = 8;
		} else {
			powers_up_to(&o->workers, ncpu);
		}
	}
	if (!o->clients.n) {
		if (o->size == SIZE_SEED)
			powers_up_to(&o->clients, o->files);
		else
			powers_up_to(&o->clients, ncpu);
	}
	if (!o->depths.n) {
		if (o->size == SIZE_TINY) {
			o->depths.n = 2;
			o->depths.v[0] = 256;
			o->depths.v[1] = 1024;
		} else {
			o->depths.n = 3;
			o->depths.v[0] = 1024;
			o->depths.v[1] = 16384;
			o->depths.v[2] = 1024 * 1024;
		}
	}
}

bool cli_variant_on(const struct bench_opts *o, const char *name)
{
	const char *p = o->variants;
	size_t len = strlen(name);

	if (!p)
		return true;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		if (n == len && !strncmp(p, name, n))
			return true;
		if (!end)
			break;
		p = end + 1;
	}
	return false;
}

int cli_check_variants(const struct bench_opts *o, const char *const *known)
{
	const char *p = o->variants;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		bool found = false;

		for (int i = 0; known[i]; i++)
			if (strlen(known[i]) == n && !strncmp(p, known[i], n))
				found = true;
		if (!found) {
			fprintf(stderr, "fsnw-bench %s: unknown variant '%.*s'; known:", o->cmd_name,
				(int)n, p);
			for (int i = 0; known[i]; i++)
				fprintf(stderr, " %s", known[i]);
			fputc('\n', stderr);
			return -1;
		}
		if (!end)
			break;
		p = end + 1;
	}
	return 0;
}
