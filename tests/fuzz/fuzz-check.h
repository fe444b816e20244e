/* SPDX-License-Identifier: MIT */
/* The fuzz targets' assertion: report where and abort, so libFuzzer keeps the input. */
#ifndef FSNW_FUZZ_CHECK_H
#define FSNW_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                           \
		}                                                                          \
	} while (0)

#endif
