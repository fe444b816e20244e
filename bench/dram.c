/* SPDX-License-Identifier: MIT */
/*
 * merge's `dram` variant: what one dependent random load from memory costs
 * on this machine, measured in the same run as the queue, so the cost of an
 * enqueue at depth 1M can be read against it (the memory wall).
 *
 * A region of mib MiB, far larger than any cache, is cut into 64-byte
 * lines; each line holds a pointer to the next line of one random cycle
 * through all of them (Sattolo's shuffle makes a uniformly random cyclic
 * permutation). Following the pointers is a chain of loads each of which
 * needs the one before: no prefetcher guesses it and no two overlap. The
 * region comes from malloc like the library's own tables, on the same
 * pages (no huge pages asked for), so TLB misses count alike.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "merge.h"

struct line {
	struct line *next;
	char pad[64 - sizeof(struct line *)];
};

/* Where a chase ends, so the compiler cannot drop the loads. */
static struct line *volatile chase_end;

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Link the n lines into one random cycle: 0 done, -ENOMEM, -EPROTO when the
 * permutation is not one cycle (checked on the index array, which is small). */
static int make_cycle(struct line *a, size_t n)
{
	uint32_t *next = malloc(n * sizeof(*next));
	uint64_t seed = 0x5eed;
	size_t i, steps = 0;

	if (!next)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		next[i] = (uint32_t)i;
	/* Sattolo: j < i (never i itself), so the permutation is one n-cycle. */
	for (i = n - 1; i > 0; i--) {
		size_t j = (size_t)(splitmix64(&seed) % i);
		uint32_t t = next[i];

		next[i] = next[j];
		next[j] = t;
	}
	i = 0;
	do {
		i = next[i];
		steps++;
	} while (i && steps <= n);
	/* Sequential writes: every page of the region is faulted in here. */
	for (i = 0; i < n; i++)
		a[i].next = &a[next[i]];
	free(next);
	return steps == n ? 0 : -EPROTO;
}

static struct line *chase(struct line *p, long loads)
{
	for (long i = 0; i < loads; i++)
		p = p->next;
	return p;
}

void merge_dram(struct bench *b, long mib)
{
	size_t n = ((size_t)mib << 20) / sizeof(struct line);
	struct line *a, *p;
	long loads = (long)(n / 8);
	int warmup, rounds, err;
	bool ok;

	if (!cli_variant_on(b->o, "dram"))
		return;
	if (n < 2 || n > UINT32_MAX) {
		bench_fail(b, "dram", mib, 0, "%ld MiB is not a region to chase through", mib);
		return;
	}
	a = malloc(n * sizeof(*a));
	err = a ? make_cycle(a, n) : -ENOMEM;
	if (err == -ENOMEM) {
		bench_skip(b, "dram", "cannot allocate %ld MiB", mib);
		free(a);
		return;
	}
	ok = err == 0;
	if (!ok)
		bench_fail(b, "dram", mib, 0, "the chase is not one cycle through %zu lines", n);
	bench_rounds(b, 0, (int)bench_pick(b, 2, 5, 5, 5), &warmup, &rounds);
	bench_pin_self(b, 0);
	p = a;
	for (int r = 0; r < warmup + rounds; r++) {
		int m = r - warmup + 1;
		uint64_t t0;

		bench_progress(b, "dram round %d/%d", r + 1, warmup + rounds);
		t0 = now_ns();
		p = chase(p, loads);
		if (m > 0)
			bench_record(b, "dram", mib, m, "load", (double)(now_ns() - t0) / loads,
				     "ns/load", ok);
	}
	chase_end = p;
	bench_unpin_self(b);
	free(a);
}
