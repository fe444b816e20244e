/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

/* The linker collects the BENCH_SCENARIO pointers between these two symbols. */
extern const struct scenario *const __start_fsnw_bench_scenarios[];
extern const struct scenario *const __stop_fsnw_bench_scenarios[];

static int by_order(const void *a, const void *b)
{
	const struct scenario *x = *(const struct scenario *const *)a;
	const struct scenario *y = *(const struct scenario *const *)b;

	return (x->order > y->order) - (x->order < y->order);
}

#define SCENARIOS_MAX 32

const struct scenario *const *scenarios(size_t *n)
{
	static const struct scenario *sorted[SCENARIOS_MAX];
	static size_t count;

	/* Link order is the build's business; the order field is ours. */
	if (!count) {
		count = (size_t)(__stop_fsnw_bench_scenarios - __start_fsnw_bench_scenarios);
		assert(count > 0 && count <= SCENARIOS_MAX);
		memcpy(sorted, __start_fsnw_bench_scenarios, count * sizeof(*sorted));
		qsort(sorted, count, sizeof(*sorted), by_order);
	}
	*n = count;
	return sorted;
}

const struct scenario *scenario_find(const char *name)
{
	size_t n;
	const struct scenario *const *all = scenarios(&n);

	for (size_t i = 0; i < n; i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}
