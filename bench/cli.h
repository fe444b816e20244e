/* SPDX-License-Identifier: MIT */
/*
 * The command line of fsnw-bench, from tables. Every option is a row: its
 * flag, the type of its value, where the value goes, its bounds, its value
 * at each --size preset, and one line of help. The common options are a
 * table here; each scenario brings its own (scenario.h). Parsing, the
 * presets and the usage text all come from the same rows, so they cannot
 * disagree.
 */
#ifndef FSNW_BENCH_CLI_H
#define FSNW_BENCH_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define LIST_MAX 64

struct scenario;

struct long_list {
	int n;
	long v[LIST_MAX];
};

enum size_preset {
	SIZE_TINY,    /* for the test suite: every check, a fraction of a second */
	SIZE_SMALL,   /* what quick uses */
	SIZE_DEFAULT, /* seconds per scenario on a 2-core machine */
	SIZE_SEED,    /* the sizes of the published experiments */
	NSIZES,
};

enum opt_type {
	OPT_FLAG,  /* bool; takes no argument */
	OPT_STR,   /* const char * */
	OPT_LONG,  /* long; 16k and 1M are binary multiples */
	OPT_LIST,  /* struct long_list: "1,2,4" */
	OPT_CPUS,  /* struct long_list: "0-3,8" */
	OPT_PCT,   /* double: "5" or "5%" */
	OPT_SIZE,  /* enum size_preset, by name */
};

/*
 * One option. Its value goes to off bytes into the options of its table
 * (struct bench_opts for the common table, the scenario's opts for its
 * own). A preset is parsed like the flag's argument, where a number may
 * also be `cpus` (the CPUs --cpus lists, else those this process may use),
 * `cpus-N`, or the name of an earlier option of the same table, and a list
 * item `a..b` stands for a, 2a, 4a, ... below b, and b. A NULL preset
 * leaves the value unset (-1, an empty list, NULL) for the scenario to
 * decide; its help says how.
 */
struct bench_option {
	const char *flag;
	const char *arg;      /* what the argument is, for usage: "G", "LIST" */
	enum opt_type type;
	size_t off;
	long min, max;        /* bounds of each number */
	int max_items;        /* lists: at most this many values (0: LIST_MAX) */
	const char *preset[NSIZES];
	const char *help;     /* one line */
	unsigned scen_flags;  /* common options: the SCEN_* flag a subcommand needs to take it */
};

/* The options every run shares. */
struct bench_opts {
	const struct scenario *scen; /* the subcommand */
	const char *cmd_name;
	enum size_preset size;
	const char *size_name;
	long warmup;           /* -1: scenario default */
	long rounds;           /* measured rounds; -1: scenario default */
	const char *csv;
	const char *svg;
	const char *dir;       /* where the scratch directory goes */
	struct long_list cpus; /* empty: threads are not pinned */
	const char *variants;  /* comma list; NULL: all */
	bool quiet;            /* no progress on stderr */
	bool verbose;          /* quick: the per-scenario tables too */
	bool markdown;         /* quick: the summary as a Markdown table */

	int nargs;             /* positional arguments (report: the runs) */
	char **args;
	int argc;              /* the whole command line, for the environment record */
	char **argv;
};

/* Parse argv into o and the options of the subcommand's scenarios; returns
 * 0, or prints why and returns -1 (a usage error). --help prints and exits. */
int cli_parse(int argc, char **argv, struct bench_opts *o);
/* Give every option not on the command line its preset (ncpu: the CPUs
 * this process may use); -1 after saying why when a preset does not parse. */
int cli_resolve(struct bench_opts *o, int ncpu);
/* How many different values a list holds (--cpus: a CPU named twice is one). */
int cli_distinct(const struct long_list *l);
/* Whether variant name is selected by --variants. */
bool cli_variant_on(const struct bench_opts *o, const char *name);
/* The general usage (every subcommand, the common options). */
void cli_usage(FILE *f);
/* The usage of one subcommand: what it takes, each option with its presets. */
void cli_usage_of(FILE *f, const struct scenario *sc);

#endif
