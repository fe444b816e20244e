/* SPDX-License-Identifier: MIT */
/*
 * A subcommand of fsnw-bench is one descriptor, registered by the file that
 * defines it: BENCH_SCENARIO puts a pointer to it in the linker section
 * fsnw_bench_scenarios (as the tests' TEST_SUITE does), so main, the command
 * line, usage, quick and the tests find it without a central list. Adding a
 * scenario is one file plus one line in bench/meson.build (and its section in
 * fsnw-bench(1), which the tests hold to its usage):
 *
 *	static struct example_opts { long things; } opt;
 *	static const struct bench_option options[] = {
 *		{ .flag = "things", .arg = "N", .type = OPT_LONG,
 *		  .off = offsetof(struct example_opts, things), .min = 1, .max = 1 << 20,
 *		  .preset = { "10", "1000", "1000", "1000000" }, .help = "things a round" },
 *		{ 0 },
 *	};
 *	static const char *const variants[] = { "raw", "lib", NULL };
 *	static int example_run(struct bench *b)
 *	{
 *		bench_begin(b, "example", "workers");
 *		... bench_record(b, "raw", 1, round, "op", ns, "ns/op", ok) ...
 *		bench_end(b);
 *		return 0;
 *	}
 *	static void example_quick(struct bench *b, struct quick *q)
 *	{
 *		quick_row(q, "example op", "ns/op", quick_need(q, "raw", 1, "op"), NAN,
 *			  quick_need(q, "lib", 1, "op"), NAN, "%ld things", opt.things);
 *	}
 *	BENCH_SCENARIO(example) = {
 *		.name = "example", .order = 60, .summary = "one line for usage",
 *		.flags = SCEN_MEASURES | SCEN_ROUNDS, .run = example_run,
 *		.variants = variants, .options = options, .opts = &opt,
 *		.quick = example_quick,
 *	};
 */
#ifndef FSNW_BENCH_SCENARIO_H
#define FSNW_BENCH_SCENARIO_H

#include <stddef.h>

#include "cli.h"

struct bench;
struct quick;

enum scen_flags {
	SCEN_MEASURES = 1u << 0, /* measures: scratch dir, --size --csv --dir --cpus --quiet */
	SCEN_ROUNDS = 1u << 1,   /* --warmup --rounds --variants */
	SCEN_CHARTS = 1u << 2,   /* --svg */
	SCEN_SUMMARY = 1u << 3,  /* quick: runs the others, takes their options, --verbose */
};

struct scenario {
	const char *name;      /* the subcommand */
	const char *args;      /* positional arguments for usage ("RUN.csv..."), or NULL */
	int min_args;          /* how many positional arguments it needs (0: none taken) */
	int order;             /* place in usage and in quick (the published experiments' order) */
	const char *summary;   /* one line of usage */
	unsigned flags;        /* SCEN_* */
	const char *size;      /* the --size preset when none is given; NULL: "default" */
	/* Run it: 0, or -1 when it could not run at all. Failed checks are
	 * counted in the bench and decide the exit status. */
	int (*run)(struct bench *b);
	const char *const *variants;          /* NULL-terminated, for --variants; or NULL */
	const struct bench_option *options;   /* its own options, ended by { 0 }; or NULL */
	void *opts;                           /* where their values go (off counts from here) */
	/* Its rows of quick's summary table (NULL: quick does not run it). */
	void (*quick)(struct bench *b, struct quick *q);
	/* The variants quick runs, those its rows need ("a,b,c"; NULL: all). */
	const char *quick_variants;
	/* Refuse options that cannot run as asked before anything runs (quick
	 * asks every scenario it runs): 0, or -1 after saying why, a usage error.
	 * NULL: everything its table accepts runs. */
	int (*check)(const struct bench_opts *o);
};

#define BENCH_SCENARIO(var)                                                               \
	static const struct scenario var;                                                 \
	static const struct scenario *const var##_reg                                     \
		__attribute__((used, section("fsnw_bench_scenarios"), aligned(sizeof(void *)))) = \
			&var;                                                             \
	static const struct scenario var

/* Every registered scenario, in order; *n gets the count. */
const struct scenario *const *scenarios(size_t *n);
/* The scenario named name, or NULL. */
const struct scenario *scenario_find(const char *name);

#endif
