/* SPDX-License-Identifier: MIT */
/*
 * Command line of fsnw-bench: the subcommand, the options every run shares,
 * and the sizes of each scenario. A size left at -1 (or an empty list) takes
 * the value of the --size preset; see cli_resolve().
 */
#ifndef FSNW_BENCH_CLI_H
#define FSNW_BENCH_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define LIST_MAX 64

struct long_list {
	int n;
	long v[LIST_MAX];
};

enum size_preset {
	SIZE_TINY,    /* for the test suite: every check, a fraction of a second */
	SIZE_SMALL,   /* what quick uses */
	SIZE_DEFAULT, /* seconds per scenario on a 2-core machine */
	SIZE_SEED,    /* the sizes of the seed experiments */
};

enum cmd {
	CMD_CHURN,
	CMD_XATTR,
	CMD_PARENT_WRITE,
	CMD_OPENCLOSE,
	CMD_CHILDREN,
	CMD_MERGE,
	CMD_QUICK,
	CMD_REPORT,
	CMD_COUNT,
};

struct bench_opts {
	enum cmd cmd;
	const char *cmd_name;
	enum size_preset size;
	const char *size_name;
	int warmup;            /* -1: scenario default */
	int rounds;            /* measured rounds; -1: scenario default */
	const char *csv;
	const char *svg;
	const char *dir;       /* where the scratch directory goes */
	struct long_list cpus; /* empty: threads are not pinned */
	const char *variants;  /* comma list; NULL: all */
	bool quiet;            /* no progress on stderr */
	bool verbose;          /* quick: the per-scenario tables too */

	/* churn */
	long groups;
	struct long_list workers;
	long bulk;
	long tree_dirs;
	/* xattr */
	long calls;
	/* parent-write */
	long files;
	struct long_list clients;
	long writes;
	/* openclose */
	long ops;
	/* addwatch-children */
	long children;
	long cycles;
	/* merge */
	struct long_list depths;
	long linear_max;
	long merge_files;
	long read_events;

	/* report */
	struct long_list controls; /* 1-based run numbers */
	struct long_list candidates;
	double min_change, max_drift, max_cv; /* percent */
	const char *scenario;      /* report only this scenario */

	int nargs;                 /* positional arguments (report: the runs) */
	char **args;
	int argc;                  /* the whole command line, for the environment record */
	char **argv;
};

/* Parse argv into o; returns 0, or prints why and returns -1 (usage error). */
int cli_parse(int argc, char **argv, struct bench_opts *o);
/* Fill sizes still unset from the preset and the machine (CPU count). */
void cli_resolve(struct bench_opts *o, int ncpu);
/* The preset's value for a scenario default: tiny, small, default, seed. */
long cli_pick(const struct bench_opts *o, long tiny, long small, long def, long seed);
/* Whether variant name is selected by --variants. */
bool cli_variant_on(const struct bench_opts *o, const char *name);
/* Check every name of --variants is one of known (NULL-terminated); -1 if not. */
int cli_check_variants(const struct bench_opts *o, const char *const *known);
void cli_usage(FILE *f);

#endif
