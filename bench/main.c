/* SPDX-License-Identifier: MIT */
/*
 * fsnw-bench: the library against raw syscalls (and libinotifytools), and
 * published fsnotify experiments (kernel threads) reproduced so that kernels can be
 * compared. What each scenario measures: BENCH-METHOD.md and fsnw-bench(1).
 * The subcommands are the registered scenarios (scenario.h).
 *
 * Exit status: 0 when every round passed its checks (skipped variants are
 * not failures), 1 when a check failed or the run could not be made,
 * 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

int main(int argc, char **argv)
{
	struct bench_opts o;
	struct bench b;
	int ret;

	if (cli_parse(argc, argv, &o) < 0)
		return 2;
	if (!(o.scen->flags & SCEN_MEASURES)) {
		/* report reads runs: no scratch directory, no environment record. */
		memset(&b, 0, sizeof(b));
		b.o = &o;
		return o.scen->run(&b) < 0 ? 1 : 0;
	}
	if (bench_init(&b, &o) < 0)
		return 1;
	/* Line-buffered tables: progress on stderr must not interleave mid-line. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	ret = o.scen->run(&b);
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
