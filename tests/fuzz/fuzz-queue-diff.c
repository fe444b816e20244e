/* SPDX-License-Identifier: MIT */
/*
 * The queue's fast paths (deferred batches, direct reads) against the plain
 * queue on fuzzer-chosen operations: see tests/queue-diff.h.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz-check.h"

#define DIFF_CHECK(cond) CHECK(cond)
#include "queue-diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diff *d = calloc(1, sizeof(*d));

	CHECK(d);
	d->p = data;
	d->left = size;
	diff_stream(d);
	free(d);
	return 0;
}
