/* SPDX-License-Identifier: MIT */
/*
 * fsnw-bench: the library against raw syscalls (and libinotifytools), and
 * the fsnotify experiments of seeds/ reproduced so that kernels can be
 * compared. What each scenario measures: BENCH-METHOD.md and fsnw-bench(1).
 *
 * Exit status: 0 when every round passed its checks (skipped variants are
 * not failures), 1 when a check failed or the run could not be made,
 * 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "cli.h"
#include "scenarios.h"

static int (*const runners[CMD_COUNT])(struct bench *) = {
	[CMD_CHURN] = scen_churn,
	[CMD_XATTR] = scen_xattr,
	[CMD_PARENT_WRITE] = scen_parent_write,
	[CMD_OPENCLOSE] = scen_openclose,
	[CMD_CHILDREN] = scen_children,
	[CMD_MERGE] = scen_merge,
	[CMD_QUICK] = scen_quick,
};

static const char *const *const variants[CMD_COUNT] = {
	[CMD_CHURN] = churn_variant_names,
	[CMD_XATTR] = xattr_variant_names,
	[CMD_PARENT_WRITE] = pw_variant_names,
	[CMD_OPENCLOSE] = oc_variant_names,
	[CMD_CHILDREN] = children_variant_names,
	[CMD_MERGE] = merge_variant_names,
};

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench b;
	int ret;

	if (cli_parse(argc, argv, &o) < 0)
		return 2;
	if (o.variants && variants[o.cmd] && cli_check_variants(&o, variants[o.cmd]) < 0)
		return 2;
	if (o.cmd == CMD_REPORT)
		return cmd_report(&o) < 0 ? 1 : 0;
	if (bench_init(&b, &o) < 0)
		return 1;
	cli_resolve(&o, b.ncpu);
	/* Line-buffered tables: progress on stderr must not interleave mid-line. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = runners[o.cmd](&b);
	if (ret < 0)
		b.failures++;
	if (b.failures)
		fprintf(stderr, "fsnw-bench %s: %d failed check%s\n", o.cmd_name, b.failures,
			b.failures == 1 ? "" : "s");
	ret = b.failures ? 1 : 0;
	bench_fini(&b);
	if (b.failures && !ret)
		ret = 1;
	return ret;
}
