/* SPDX-License-Identifier: MIT */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "eventfmt.h"
#include "fsnwatch.h"
#include "watch-table.h"

/* inotifywatch's columns: each as wide as its name, two spaces after. */
static const struct {
	uint32_t bit;
	const char *name;
} columns[WATCH_COLUMNS] = {
	{ FSNW_ACCESS, "access" },
	{ FSNW_MODIFY, "modify" },
	{ FSNW_ATTRIB, "attrib" },
	{ FSNW_CLOSE_WRITE, "close_write" },
	{ FSNW_CLOSE_NOWRITE, "close_nowrite" },
	{ FSNW_OPEN, "open" },
	{ FSNW_MOVED_FROM, "moved_from" },
	{ FSNW_MOVED_TO, "moved_to" },
	{ FSNW_MOVE_SELF, "move_self" },
	{ FSNW_CREATE, "create" },
	{ FSNW_DELETE, "delete" },
	{ FSNW_DELETE_SELF, "delete_self" },
	{ FSNW_UNMOUNT, "unmount" },
};

void watch_table_init(struct watch_table *t)
{
	memset(t, 0, sizeof(*t));
	t->next_order = 1;
}

void watch_table_free(struct watch_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->rows[i].path);
	free(t->rows);
	free(t->slots);
	free(t->islots);
	memset(t, 0, sizeof(*t));
}

static size_t hash(const char *s, size_t len)
{
	uint64_t h = 14695981039346656037ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return (size_t)h;
}

static size_t hash_inode(dev_t dev, ino_t ino)
{
	uint64_t key[2] = { (uint64_t)dev, (uint64_t)ino };

	return hash((const char *)key, sizeof(key));
}

static void index_row(struct watch_table *t, size_t i)
{
	const struct watch_row *r = &t->rows[i];
	size_t mask = t->nslots - 1;
	size_t at = hash(r->path, strlen(r->path)) & mask;

	while (t->slots[at])
		at = (at + 1) & mask;
	t->slots[at] = i + 1;
	if (!r->have_inode || r->alias)
		return;
	for (at = hash_inode(r->dev, r->ino) & mask; t->islots[at]; at = (at + 1) & mask)
		;
	t->islots[at] = i + 1;
}

/* The index again, from the rows that are still in the table, at least twice their number. */
static int reindex(struct watch_table *t, size_t want)
{
	size_t nslots = 64;
	size_t *slots, *islots;

	while (nslots < 2 * want)
		nslots *= 2;
	slots = calloc(nslots, sizeof(*slots));
	islots = calloc(nslots, sizeof(*islots));
	if (!slots || !islots) {
		free(slots);
		free(islots);
		return -ENOMEM;
	}
	free(t->slots);
	free(t->islots);
	t->slots = slots;
	t->islots = islots;
	t->nslots = nslots;
	for (size_t i = 0; i < t->n; i++)
		if (!t->rows[i].gone)
			index_row(t, i);
	return 0;
}

long watch_table_find(const struct watch_table *t, const char *path, size_t len)
{
	size_t mask = t->nslots - 1;

	if (!t->nslots)
		return -1;
	for (size_t at = hash(path, len) & mask; t->slots[at]; at = (at + 1) & mask) {
		const struct watch_row *r = &t->rows[t->slots[at] - 1];

		if (!strncmp(r->path, path, len) && !r->path[len])
			return (long)(t->slots[at] - 1);
	}
	return -1;
}

/* The row that has the object's order already, if any. */
static long row_of_inode(const struct watch_table *t, dev_t dev, ino_t ino)
{
	size_t mask = t->nslots - 1;

	if (!t->nslots)
		return -1;
	for (size_t at = hash_inode(dev, ino) & mask; t->islots[at]; at = (at + 1) & mask) {
		const struct watch_row *r = &t->rows[t->islots[at] - 1];

		if (r->dev == dev && r->ino == ino)
			return (long)(t->islots[at] - 1);
	}
	return -1;
}

long watch_table_add(struct watch_table *t, const char *path, size_t len, bool have_inode,
		     dev_t dev, ino_t ino)
{
	long i = watch_table_find(t, path, len);
	long same = have_inode ? row_of_inode(t, dev, ino) : -1;
	struct watch_row *r;

	if (i >= 0)
		return i;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct watch_row *v = realloc(t->rows, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		t->rows = v;
		t->cap = cap;
	}
	if (2 * (t->n + 1) > t->nslots && reindex(t, t->n + 1) < 0)
		return -ENOMEM;
	r = &t->rows[t->n];
	memset(r, 0, sizeof(*r));
	r->path = strndup(path, len);
	if (!r->path)
		return -ENOMEM;
	r->have_inode = have_inode;
	r->dev = dev;
	r->ino = ino;
	r->alias = same >= 0;
	r->of = same >= 0 ? (size_t)same : t->n;
	r->order = same >= 0 ? t->rows[same].order : t->next_order++;
	index_row(t, t->n);
	return (long)t->n++;
}

void watch_table_count(struct watch_table *t, size_t i, uint32_t mask, uint32_t count)
{
	struct watch_row *r;

	assert(i < t->n);
	r = &t->rows[t->rows[i].of];
	for (size_t c = 0; c < WATCH_COLUMNS; c++) {
		if (!(mask & columns[c].bit))
			continue;
		r->hits[c] += count;
		t->totals[c] += count;
	}
	r->total += count;
	t->total += count;
}

int watch_table_rename(struct watch_table *t, const char *from, const char *to)
{
	size_t flen = strlen(from);
	bool changed = false;

	for (size_t i = 0; i < t->n; i++) {
		struct watch_row *r = &t->rows[i];
		char *name;

		if (r->gone || strncmp(from, r->path, flen) || !strcmp(r->path, to))
			continue;
		if (asprintf(&name, "%s%s", to, r->path + flen) < 0)
			return -ENOMEM;
		free(r->path);
		r->path = name;
		changed = true;
	}
	return changed ? reindex(t, t->n) : 0;
}

void watch_table_drop(struct watch_table *t, size_t i)
{
	assert(i < t->n);
	t->rows[i].gone = true;
	/* Its name may come back with a new directory: it leaves the index. */
	if (reindex(t, t->n) < 0)
		t->rows[i].path[0] = '\0'; /* no memory for the index: at least not found */
}

size_t watch_table_names(const struct watch_table *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n; i++)
		n += !t->rows[i].gone;
	return n;
}

bool watch_table_column(uint32_t bit)
{
	for (size_t c = 0; c < WATCH_COLUMNS; c++)
		if (columns[c].bit == bit)
			return true;
	return false;
}

static uint32_t sort_value(const struct watch_row *r, uint32_t bit)
{
	for (size_t c = 0; c < WATCH_COLUMNS; c++)
		if (columns[c].bit == bit)
			return r->hits[c];
	return r->total; /* 0: the total */
}

/* inotifytools' event_compare: by the key, then by wd, ascending. */
static int compare_rows(const void *a, const void *b, void *arg)
{
	const struct watch_table *t = ((const void *const *)arg)[0];
	const struct watch_report *rep = ((const void *const *)arg)[1];
	const struct watch_row *x = &t->rows[*(const size_t *)a];
	const struct watch_row *y = &t->rows[*(const size_t *)b];
	long sort = rep->sort;
	bool asc = true;
	uint32_t vx, vy;

	if (sort == -1) {
		sort = 0;
		asc = false;
	} else if (sort < 0) {
		sort = -sort;
		asc = false;
	}
	vx = sort_value(x, (uint32_t)sort);
	vy = sort_value(y, (uint32_t)sort);
	if (vx != vy)
		return (asc ? vx < vy : vx > vy) ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

/* The rows to show, sorted; *n of them. The caller frees the array. */
static size_t *sorted_rows(const struct watch_table *t, const struct watch_report *r, size_t *n)
{
	size_t *v = malloc((t->n ? t->n : 1) * sizeof(*v));
	const void *arg[2] = { t, r };

	*n = 0;
	if (!v)
		return NULL;
	for (size_t i = 0; i < t->n; i++)
		if (!t->rows[i].alias && !t->rows[i].gone && (r->zero || t->rows[i].total))
			v[(*n)++] = i;
	qsort_r(v, *n, sizeof(*v), compare_rows, arg);
	return v;
}

static bool shown_column(const struct watch_table *t, const struct watch_report *r, size_t c)
{
	return (r->events & columns[c].bit) && (r->zero || t->totals[c]);
}

int watch_table_print(const struct watch_table *t, const struct watch_report *r, FILE *out,
		      FILE *err)
{
	size_t n, *rows;

	if (!t->total) {
		fprintf(err, "No events occurred.\n");
		return 0;
	}
	rows = sorted_rows(t, r, &n);
	if (!rows)
		return -ENOMEM;
	fputs("total  ", out);
	for (size_t c = 0; c < WATCH_COLUMNS; c++)
		if (shown_column(t, r, c))
			fprintf(out, "%s  ", columns[c].name);
	fputs("filename\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct watch_row *row = &t->rows[rows[i]];

		fprintf(out, "%-5u  ", row->total);
		for (size_t c = 0; c < WATCH_COLUMNS; c++)
			if (shown_column(t, r, c))
				fprintf(out, "%-*u  ", (int)strlen(columns[c].name), row->hits[c]);
		fprintf(out, "%s\n", row->path);
	}
	free(rows);
	return 0;
}

int watch_table_json(const struct watch_table *t, const struct watch_report *r, FILE *out)
{
	size_t n, *rows = sorted_rows(t, r, &n);

	if (!rows)
		return -ENOMEM;
	fprintf(out, "{\"total\":%u,\"events\":{", t->total);
	for (size_t c = 0, first = 1; c < WATCH_COLUMNS; c++) {
		if (!(r->events & columns[c].bit))
			continue;
		fprintf(out, "%s\"%s\":%u", first ? "" : ",", columns[c].name, t->totals[c]);
		first = 0;
	}
	fputs("},\"rows\":[", out);
	for (size_t i = 0; i < n; i++) {
		const struct watch_row *row = &t->rows[rows[i]];

		fputs(i ? ",{\"path\":" : "{\"path\":", out);
		json_print_string(out, row->path);
		fprintf(out, ",\"total\":%u", row->total);
		for (size_t c = 0; c < WATCH_COLUMNS; c++)
			if (r->events & columns[c].bit)
				fprintf(out, ",\"%s\":%u", columns[c].name, row->hits[c]);
		fputc('}', out);
	}
	fputs("]}\n", out);
	free(rows);
	return 0;
}
