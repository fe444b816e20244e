/* SPDX-License-Identifier: MIT */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "summary.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

void summary_of(const double *v, size_t n, struct summary *s)
{
	double *sorted;
	double sum = 0, sq = 0;

	s->n = n;
	s->median = s->mean = s->sd = s->cv = s->min = s->max = NAN;
	if (!n)
		return;
	sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return;
	memcpy(sorted, v, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_double);
	s->min = sorted[0];
	s->max = sorted[n - 1];
	s->median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
	free(sorted);
	for (size_t i = 0; i < n; i++)
		sum += v[i];
	s->mean = sum / (double)n;
	if (n < 2)
		return;
	for (size_t i = 0; i < n; i++)
		sq += (v[i] - s->mean) * (v[i] - s->mean);
	s->sd = sqrt(sq / (double)(n - 1));
	if (s->mean != 0)
		s->cv = s->sd / fabs(s->mean) * 100.0;
}

uint64_t percentile_u64(uint64_t *v, size_t n, double q)
{
	size_t rank;

	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u64);
	if (q <= 0)
		return v[0];
	/* Nearest rank: the smallest value with at least q of the samples at or below it. */
	rank = (size_t)ceil(q * (double)n);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return v[rank - 1];
}
