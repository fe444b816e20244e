/* SPDX-License-Identifier: MIT */
/* churn (seed 000) and its controls, which live in churnctl.c. */
#ifndef FSNW_BENCH_CHURN_H
#define FSNW_BENCH_CHURN_H

#include "cli.h"

struct bench;

struct churn_opts {
	long groups;
	struct long_list workers;
	long bulk;
	long tree_dirs;
};

/* churn's controls (timing-ab, bulk, mask-update, tree add), run after it;
 * dpaths: the G files of the distinct topology, or NULL when making them failed. */
void churn_controls(struct bench *b, const struct churn_opts *o, char **dpaths);

#endif
