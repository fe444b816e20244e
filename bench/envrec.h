/* SPDX-License-Identifier: MIT */
/*
 * The environment record written beside a run's CSV (FILE.csv.env): one
 * `key=value` per line. It says which kernel, boot, machine and filesystem
 * the numbers came from, so `report` can tell runs and boots apart.
 */
#ifndef FSNW_BENCH_ENVREC_H
#define FSNW_BENCH_ENVREC_H

#include <stddef.h>

struct bench;

#define ENVREC_MAX 96

struct envrec {
	size_t n;
	char *key[ENVREC_MAX];
	char *value[ENVREC_MAX];
};

int envrec_write(const char *path, const struct bench *b);
/* Read path; -errno when it cannot be opened. */
int envrec_read(const char *path, struct envrec *e);
/* The value of key, or "?" when the record lacks it. */
const char *envrec_get(const struct envrec *e, const char *key);
void envrec_free(struct envrec *e);

/* The CPU's model name from /proc/cpuinfo, or "?". */
void cpu_model(char *buf, size_t len);
/* Name of a filesystem magic number (statfs f_type), or "unknown". */
const char *fs_magic_name(unsigned long magic);
/* What the slab caches say about fsnotify connector tracking (94bd01253c3d). */
void connector_probe(char *buf, size_t len, char *verdict, size_t vlen);

#endif
