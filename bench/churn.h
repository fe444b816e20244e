/* SPDX-License-Identifier: MIT */
/* churn (after 94bd01253c3d) and its controls, which live in churnctl.c. */
#ifndef FSNW_BENCH_CHURN_H
#define FSNW_BENCH_CHURN_H

#include "cli.h"

struct bench;

struct churn_opts {
	long groups;
	struct long_list workers;
	bool oversubscribe;
	long bulk;
	long control_calls;
	long tree_dirs;
	const char *tree_path;
};

/* churn's controls (timing-ab, bulk, mask-update, path-lookup, tree add), run after it. */
void churn_controls(struct bench *b, const struct churn_opts *o);
/* The tree control (churntree.c): add time and heap a directory of each contender. */
void churn_tree(struct bench *b, const struct churn_opts *o);

#endif
