/* SPDX-License-Identifier: MIT */
/* The subcommands. Each returns 0, or -1 when it could not run at all;
 * failed checks are counted in the bench and decide the exit status. */
#ifndef FSNW_BENCH_SCENARIOS_H
#define FSNW_BENCH_SCENARIOS_H

struct bench;
struct bench_opts;

int scen_churn(struct bench *b);
int scen_xattr(struct bench *b);
int scen_parent_write(struct bench *b);
int scen_openclose(struct bench *b);
int scen_children(struct bench *b);
int scen_merge(struct bench *b);
int scen_quick(struct bench *b);
int cmd_report(const struct bench_opts *o);

/* churn's controls (bulk, mask-update, tree add), run by scen_churn. */
void churn_controls(struct bench *b, char **dpaths, long groups);

/* Variant names of each scenario, for --variants. */
extern const char *const churn_variant_names[];
extern const char *const xattr_variant_names[];
extern const char *const pw_variant_names[];
extern const char *const oc_variant_names[];
extern const char *const children_variant_names[];
extern const char *const merge_variant_names[];

#endif
