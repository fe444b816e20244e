/* SPDX-License-Identifier: MIT */
/* The parts of the merge scenario (the fanotify merge series), one file each. */
#ifndef FSNW_BENCH_MERGE_H
#define FSNW_BENCH_MERGE_H

#include <stdint.h>

#include "cli.h"

struct bench;

/* Names prefix0 ... prefix{n-1}, packed: the event streams of merge. */
struct names {
	long n;
	char *buf;
	uint32_t *off;
	uint8_t *len;
};
int names_make(struct names *nm, long n, const char *prefix);
void names_free(struct names *nm);
#define NAME(nm, i) ((nm)->buf + (nm)->off[i])

/* queue and linear at each depth (mergequeue.c). */
void merge_queues(struct bench *b, const struct long_list *depths, long linear_max);
/* kernel-limited and kernel-unlimited: N files under fanotify (mergekernel.c). */
void merge_kernel(struct bench *b, long N, int warmup, int rounds);
/* dram: a dependent random load over mib MiB, in the same run (dram.c). */
void merge_dram(struct bench *b, long mib);

#endif
