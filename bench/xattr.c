/* SPDX-License-Identifier: MIT */
/*
 * xattr (the flistxattr report, fixed by 1e7cd8a53b72): one file on tmpfs with one user.* xattr, flistxattr(fd,
 * buf, 8192) called N times per round on one CPU. A kernel probe: it has no
 * library variant; it tells kernels apart.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "bench.h"
#include "quick.h"

#define XATTR_NAME "user.fsnw-bench"

static struct xattr_opts {
	long calls;
} opt;

static const struct bench_option options[] = {
	{ .flag = "calls", .arg = "N", .type = OPT_LONG, .off = offsetof(struct xattr_opts, calls),
	  .min = 1, .max = 1L << 34, .preset = { "4096", "65536", "262144", "1048576" },
	  .help = "flistxattr calls a round" },
	{ 0 },
};

static const char *const variants[] = { "raw", NULL };

static int xattr_run(struct bench *b)
{
	char dir[4096], path[4200], buf[8192];
	long N = opt.calls;
	ssize_t want = (ssize_t)sizeof(XATTR_NAME);
	int warmup, rounds, fd, err;

	bench_begin(b, "xattr", "workers");
	if (!cli_variant_on(b->o, "raw"))
		goto out;
	err = bench_mkdir(b, "xattr", dir, sizeof(dir));
	if (err) {
		bench_fail(b, "raw", 1, 0, "mkdir: %s", strerror(-err));
		goto out;
	}
	snprintf(path, sizeof(path), "%s/file", dir);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		bench_fail(b, "raw", 1, 0, "open %s: %s", path, strerror(errno));
		goto out;
	}
	if (fsetxattr(fd, XATTR_NAME, "1", 1, 0) < 0) {
		bench_skip(b, "raw", "the test directory does not take user xattrs (%s); "
			   "tmpfs needs Linux 6.6 or later", strerror(errno));
		close(fd);
		goto out;
	}
	bench_rounds(b, bench_pick(b, 1, 1, 3, 3), (int)bench_pick(b, 3, 10, 15, 15), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int r = 0; r < warmup + rounds; r++) {
		int m = r - warmup + 1;
		long bad = 0;
		ssize_t last = 0;
		uint64_t t0;
		double ns;

		bench_progress(b, "round %d/%d", r + 1, warmup + rounds);
		t0 = now_ns();
		for (long i = 0; i < N; i++) {
			ssize_t n = flistxattr(fd, buf, sizeof(buf));

			if (n != want) {
				bad++;
				last = n;
			}
		}
		ns = (double)(now_ns() - t0) / (double)N;
		if (bad)
			bench_fail(b, "raw", 1, m, "%ld of %ld calls did not return %zd (one returned "
				   "%zd)", bad, N, want, last);
		if (m > 0)
			bench_record(b, "raw", 1, m, "flistxattr", ns, "ns/op", !bad);
	}
	bench_unpin_self(b);
	close(fd);
out:
	bench_end(b);
	return 0;
}

static void xattr_quick(struct bench *b, struct quick *q)
{
	quick_row(q, "xattr flistxattr (kernel probe)", "ns/op",
		  quick_need(q, "raw", 1, "flistxattr"), NAN, NAN, NAN, "%ld calls a round",
		  opt.calls);
}

BENCH_SCENARIO(xattr) = {
	.name = "xattr",
	.order = 10,
	.summary = "flistxattr on tmpfs (flistxattr report), a kernel probe",
	.flags = SCEN_MEASURES | SCEN_ROUNDS,
	.run = xattr_run,
	.variants = variants,
	.options = options,
	.opts = &opt,
	.quick = xattr_quick,
};
