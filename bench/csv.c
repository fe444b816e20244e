/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csv.h"

FILE *csv_open(const char *path)
{
	FILE *f = fopen(path, "a");
	struct stat st;

	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) == 0 && st.st_size == 0)
		fprintf(f, "%s\n", CSV_HEADER);
	return f;
}

/* Fields never hold a comma: names are ours, and the kernel release is cleaned. */
static void put_field(FILE *f, const char *s)
{
	for (; *s; s++)
		fputc(*s == ',' || *s == '\n' ? ';' : *s, f);
}

void csv_write(FILE *f, const struct row *r)
{
	put_field(f, r->scenario);
	fputc(',', f);
	put_field(f, r->variant);
	if (r->oversub)
		fputs(CSV_OVERSUB, f);
	fputc(',', f);
	put_field(f, r->kernel);
	fprintf(f, ",%ld,%d,", r->workers, r->round);
	put_field(f, r->metric);
	/* %.17g: the report recomputes medians from exactly what was measured. */
	fprintf(f, ",%.17g,", r->value);
	put_field(f, r->unit);
	fprintf(f, ",%d\n", r->ok ? 1 : 0);
}

static int copy_field(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (n >= cap)
		return -1;
	memcpy(dst, src, n + 1);
	return 0;
}

static int parse_line(char *line, struct row *r)
{
	char *f[9], *end;
	int n = 0;

	line[strcspn(line, "\r\n")] = '\0';
	for (char *p = line;;) {
		if (n == 9)
			return -1; /* a tenth field */
		f[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p++ = '\0';
	}
	if (n != 9)
		return -1;
	memset(r, 0, sizeof(*r));
	if (copy_field(r->scenario, sizeof(r->scenario), f[0]) ||
	    copy_field(r->variant, sizeof(r->variant), f[1]) ||
	    copy_field(r->kernel, sizeof(r->kernel), f[2]) ||
	    copy_field(r->metric, sizeof(r->metric), f[5]) ||
	    copy_field(r->unit, sizeof(r->unit), f[7]))
		return -1;
	r->workers = strtol(f[3], &end, 10);
	if (*end)
		return -1;
	r->round = (int)strtol(f[4], &end, 10);
	if (*end)
		return -1;
	r->value = strtod(f[6], &end);
	if (*end || end == f[6])
		return -1;
	if (strcmp(f[8], "0") && strcmp(f[8], "1"))
		return -1;
	r->ok = f[8][0] == '1';
	/* The label stays in the variant: such rows are a key of their own. */
	r->oversub = strlen(r->variant) > strlen(CSV_OVERSUB) &&
		     !strcmp(r->variant + strlen(r->variant) - strlen(CSV_OVERSUB), CSV_OVERSUB);
	return 0;
}

long csv_load(const char *path, struct row **rows)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t n = 0, cap = 0, lineno = 0;
	struct row *v = NULL;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		lineno++;
		if (lineno == 1 || !strncmp(line, "scenario,", 9)) {
			/* The header (repeated if several runs appended to one file). */
			if (strncmp(line, CSV_HEADER, strlen(CSV_HEADER))) {
				fprintf(stderr, "%s:%zu: not an fsnw-bench CSV header\n", path,
					lineno);
				goto bad;
			}
			continue;
		}
		if (line[0] == '\n')
			continue;
		if (n == cap) {
			struct row *nv;

			cap = cap ? cap * 2 : 256;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
		}
		if (parse_line(line, &v[n]) < 0) {
			fprintf(stderr, "%s:%zu: malformed row\n", path, lineno);
			goto bad;
		}
		n++;
	}
	fclose(f);
	*rows = v;
	return (long)n;
bad:
	free(v);
	fclose(f);
	return -EINVAL;
}
