/* SPDX-License-Identifier: MIT */
/*
 * The hardening executables run the shared Check main (tests/test-main.c,
 * compiled here as fsnw_test_main) once what their suites need is there:
 *   --require root     effective uid 0 (mounts, limits, dropping privileges)
 *   --require userns   unshare(CLONE_NEWUSER | CLONE_NEWNS) works
 * Otherwise they exit 77, which meson reports as skipped. The usual options
 * (--backend, suite names) follow.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hardening.h"

int fsnw_test_main(int argc, char **argv);

int main(int argc, char **argv)
{
	while (argc > 2 && !strcmp(argv[1], "--require")) {
		const char *what = argv[2];

		if (!strcmp(what, "root") && geteuid() != 0) {
			fprintf(stderr, "skipped: needs root\n");
			return 77;
		}
		if (!strcmp(what, "userns") && !userns_available()) {
			fprintf(stderr, "skipped: no user namespaces here\n");
			return 77;
		}
		argv[2] = argv[0];
		argv += 2;
		argc -= 2;
	}
	return fsnw_test_main(argc, argv);
}
