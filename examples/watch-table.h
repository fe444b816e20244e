/* SPDX-License-Identifier: MIT */
/*
 * fsnw-watch's table: a row per watched file or directory, as inotifywatch
 * keeps one per watch descriptor, with a count per event, the order the
 * kernel would have numbered its watches in (which breaks ties when
 * sorting), and the renames inotifywatch applies to its names.
 */
#ifndef FSNW_EXAMPLES_WATCH_TABLE_H
#define FSNW_EXAMPLES_WATCH_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The events inotifywatch counts, in the order of its columns. */
#define WATCH_COLUMNS 13

struct watch_row {
	char *path;      /* its name in the table: %w, or %w%f on fanotify */
	uint64_t order;  /* the wd inotify would have given it: the order of first watching */
	dev_t dev;       /* the object, when known (inotify gives one wd per inode) */
	ino_t ino;
	bool have_inode;
	bool alias;      /* another name for the object of row `of`: no row of its own */
	size_t of;
	bool gone;       /* taken out of the table (moved out of a tree) */
	uint32_t total;  /* every event counted, IGNORED included */
	uint32_t hits[WATCH_COLUMNS];
};

struct watch_table {
	struct watch_row *rows;
	size_t n, cap;
	size_t *slots;   /* open addressing by path: row index + 1, 0 free */
	size_t *islots;  /* the same by device and inode, for the rows that have them */
	size_t nslots;   /* of each */
	uint64_t next_order;
	uint32_t total;  /* over every row, ever (inotifywatch's stat totals) */
	uint32_t totals[WATCH_COLUMNS];
};

void watch_table_init(struct watch_table *t);
void watch_table_free(struct watch_table *t);

/*
 * The row named path (len bytes), made when missing: for an object seen
 * before (same device and inode, when have_inode), an alias of its row, as
 * inotify gives it the same wd. Returns the row's index, or -ENOMEM.
 */
long watch_table_add(struct watch_table *t, const char *path, size_t len, bool have_inode,
		     dev_t dev, ino_t ino);

/* The index of the row named path (len bytes), or -1. */
long watch_table_find(const struct watch_table *t, const char *path, size_t len);

/*
 * Count one event (count times) of mask on row i, and in the totals. An
 * alias counts on its object's row, as its events come through one wd.
 */
void watch_table_count(struct watch_table *t, size_t i, uint32_t mask, uint32_t count);

/* inotifytools' replace_filename: every name that starts with from starts with to. */
int watch_table_rename(struct watch_table *t, const char *from, const char *to);

/* Take row i (a directory moved out of the tree) out of the table. */
void watch_table_drop(struct watch_table *t, size_t i);

/* How many names the table knows (inotifywatch -v's "Total of N watches"). */
size_t watch_table_names(const struct watch_table *t);

/*
 * How to sort, as inotifywatch encodes -a and -d: 0 ascending by total, -1
 * descending by total, a bit ascending by that event, its negation
 * descending (so -d access, -1, is descending by total there too).
 */
struct watch_report {
	uint32_t events; /* the columns that may be shown */
	bool zero;       /* -z: rows and columns of zeros too */
	long sort;
};

/* Whether bit is an event the table has a column for. */
bool watch_table_column(uint32_t bit);

/* Print the table as inotifywatch does (or "No events occurred." on err). Returns 0 or -ENOMEM. */
int watch_table_print(const struct watch_table *t, const struct watch_report *r, FILE *out,
		      FILE *err);

/* The same rows and columns as one JSON object on a line. Returns 0 or -ENOMEM. */
int watch_table_json(const struct watch_table *t, const struct watch_report *r, FILE *out);

#endif
