/* SPDX-License-Identifier: MIT */
/*
 * Runs every suite linked into the executable. Exit status: 0 all passed,
 * 1 something failed, 77 skipped (the backend cannot be used here).
 * Options: --backend inotify|fanotify (default inotify), and suite names
 * to run only those.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test-common.h"

extern const struct test_suite_reg __start_fsnw_test_suites[];
extern const struct test_suite_reg __stop_fsnw_test_suites[];

uint32_t test_backend = FSNW_BACKEND_INOTIFY;

static int parse_backend(const char *s)
{
	if (!strcmp(s, "inotify"))
		return FSNW_BACKEND_INOTIFY;
	if (!strcmp(s, "fanotify"))
		return FSNW_BACKEND_FANOTIFY;
	if (!strcmp(s, "auto"))
		return FSNW_BACKEND_AUTO;
	fprintf(stderr, "unknown backend %s\n", s);
	exit(1);
}

static bool backend_usable(void)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend };
	struct fsnw *w;
	int ret = fsnw_open(&w, &o);

	if (ret < 0) {
		fprintf(stderr, "backend unusable here: %s\n", strerror(-ret));
		return false;
	}
	fsnw_close(w);
	return true;
}

static bool wanted(const char *name, int argc, char **argv, int first)
{
	if (first >= argc)
		return true;
	for (int i = first; i < argc; i++)
		if (!strcmp(argv[i], name))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	const char *env = getenv("FSNW_TEST_BACKEND");
	SRunner *sr = NULL;
	int first = 1, failed;

	if (env)
		test_backend = (uint32_t)parse_backend(env);
	if (argc > 2 && !strcmp(argv[1], "--backend")) {
		test_backend = (uint32_t)parse_backend(argv[2]);
		first = 3;
	}
	if (!backend_usable())
		return 77;
	tmpdir_init();
	for (const struct test_suite_reg *r = __start_fsnw_test_suites;
	     r < __stop_fsnw_test_suites; r++) {
		if (!wanted(r->name, argc, argv, first))
			continue;
		if (!sr)
			sr = srunner_create(r->make());
		else
			srunner_add_suite(sr, r->make());
	}
	if (!sr)
		return 77;
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
