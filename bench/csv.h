/* SPDX-License-Identifier: MIT */
/*
 * The run CSV: one row per measured round and metric,
 *   scenario,variant,kernel,workers,round,metric,value,unit,semantic_ok
 * (a row whose threads outnumbered the CPUs has CSV_OVERSUB after its variant)
 * appended to the file named by --csv (the header is written when the file
 * is new), and read back by `fsnw-bench report`.
 */
#ifndef FSNW_BENCH_CSV_H
#define FSNW_BENCH_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define CSV_HEADER "scenario,variant,kernel,workers,round,metric,value,unit,semantic_ok"

struct row {
	char scenario[24];
	char variant[40];
	char kernel[72];
	long workers;  /* the scale of the round: workers, clients, queue depth, ... */
	int round;     /* measured round, from 1 */
	char metric[40];
	double value;
	char unit[20];
	bool ok;       /* the round's semantic checks passed */
	bool oversub;  /* more busy threads than CPUs: the CSV's variant says so */
};

/* What the CSV appends to the variant of an oversubscribed row, so that report
 * never compares it with a row whose workers each had a CPU. */
#define CSV_OVERSUB " (oversubscribed)"

/* Open path for appending rows; writes the header to an empty file. NULL + errno. */
FILE *csv_open(const char *path);
void csv_write(FILE *f, const struct row *r);

/* Load every row of path into *rows (malloc'd). Returns the count or -errno;
 * a malformed line is reported on stderr with its number and is an error. */
long csv_load(const char *path, struct row **rows);

#endif
