/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "scenario.h"

#define C(field) offsetof(struct bench_opts, field)

static const struct bench_option common_options[] = {
	{ .flag = "size", .arg = "tiny|small|default|seed", .type = OPT_SIZE, .off = C(size),
	  .help = "the size preset: sizes and rounds not given come from it",
	  .scen_flags = SCEN_MEASURES },
	{ .flag = "warmup", .arg = "N", .type = OPT_LONG, .off = C(warmup), .max = 1000,
	  .help = "warm-up rounds (discarded)", .scen_flags = SCEN_ROUNDS },
	{ .flag = "rounds", .arg = "N", .type = OPT_LONG, .off = C(rounds), .min = 1,
	  .max = 100000, .help = "measured rounds", .scen_flags = SCEN_ROUNDS },
	{ .flag = "csv", .arg = "FILE", .type = OPT_STR, .off = C(csv),
	  .help = "append a row per measured round; FILE.env gets the environment",
	  .scen_flags = SCEN_MEASURES },
	{ .flag = "svg", .arg = "FILE", .type = OPT_STR, .off = C(svg),
	  .help = "line charts of the scaling scenarios", .scen_flags = SCEN_CHARTS },
	{ .flag = "dir", .arg = "DIR", .type = OPT_STR, .off = C(dir),
	  .help = "where the scratch directory goes, any filesystem (default /dev/shm)",
	  .scen_flags = SCEN_MEASURES },
	{ .flag = "cpus", .arg = "LIST", .type = OPT_CPUS, .off = C(cpus), .max = 4095,
	  .help = "pin thread i to the i-th CPU of LIST (0,2,4 or 0-3)",
	  .scen_flags = SCEN_MEASURES },
	{ .flag = "variants", .arg = "LIST", .type = OPT_STR, .off = C(variants),
	  .help = "run only these variants (comma-separated)", .scen_flags = SCEN_ROUNDS },
	{ .flag = "quiet", .type = OPT_FLAG, .off = C(quiet), .help = "no progress on stderr",
	  .scen_flags = SCEN_MEASURES },
	{ .flag = "verbose", .type = OPT_FLAG, .off = C(verbose),
	  .help = "each scenario's own tables too", .scen_flags = SCEN_SUMMARY },
	{ .flag = "markdown", .type = OPT_FLAG, .off = C(markdown),
	  .help = "the summary as a Markdown table, with a caption line", .scen_flags = SCEN_SUMMARY },
	{ 0 },
};

static const char *const size_names[NSIZES] = { "tiny", "small", "default", "seed" };

/*
 * An option as this command line takes it: a row and where its value goes.
 * quick takes the options of every scenario it runs, so one flag may bind
 * several rows (--workers: churn's and addwatch-children's).
 */
struct binding {
	const struct bench_option *row;
	const struct bench_option *table; /* the row's table, for references by name */
	const struct scenario *sc;        /* NULL: a common option */
	void *base;
	const char *arg;                  /* from argv, or NULL */
	bool given;
	bool resolved;
};

#define BINDINGS_MAX 128

static struct binding bindings[BINDINGS_MAX];
static int nbindings;
static int ncpus;

static void *field(const struct binding *bd)
{
	return (char *)bd->base + bd->row->off;
}

static int bad_number(const struct bench_option *r, const char *s)
{
	fprintf(stderr, "fsnw-bench: --%s: '%s' is not a number in [%ld, %ld]\n", r->flag, s,
		r->min, r->max);
	return -1;
}

/* The value of an earlier option of bd's table, named by the len bytes at s. */
static const long *option_value(const struct binding *bd, const char *s, size_t len)
{
	for (int i = 0; i < nbindings; i++) {
		const struct binding *o = &bindings[i];

		if (o->table == bd->table && o->base == bd->base && o->resolved &&
		    o->row->type == OPT_LONG && strlen(o->row->flag) == len &&
		    !strncmp(o->row->flag, s, len))
			return field(o);
	}
	return NULL;
}

/*
 * One number at *s: digits with an optional k or M (binary multiples: depths
 * are given that way), or a word: cpus, cpus-N, an earlier option's name.
 * Advances *s past it. Bounds are checked by the caller.
 */
static int number(const struct binding *bd, const char **s, long *v)
{
	const char *p = *s;
	char *end;

	if (isalpha((unsigned char)*p)) {
		size_t len = 0;
		const long *ref;

		while (isalnum((unsigned char)p[len]) || p[len] == '_' ||
		       (p[len] == '-' && isalpha((unsigned char)p[len + 1])))
			len++;
		if (len == 4 && !strncmp(p, "cpus", 4)) {
			*v = ncpus;
			if (p[4] == '-' && isdigit((unsigned char)p[5])) {
				*v = ncpus - strtol(p + 5, &end, 10);
				*v = *v < 1 ? 1 : *v;
				len = (size_t)(end - p);
			}
		} else if ((ref = option_value(bd, p, len))) {
			*v = *ref;
		} else {
			return -1;
		}
		*s = p + len;
		return 0;
	}
	errno = 0;
	*v = strtol(p, &end, 10);
	if (errno || end == p || *v < 0)
		return -1;
	if (*end == 'k' || *end == 'K' || *end == 'm' || *end == 'M') {
		long mult = *end == 'k' || *end == 'K' ? 1024 : 1024 * 1024;

		if (*v > LONG_MAX / mult)
			return -1;
		*v *= mult;
		end++;
	}
	*s = end;
	return 0;
}

static int push(const struct bench_option *r, struct long_list *l, long v, const char *s)
{
	int max = r->max_items ? r->max_items : LIST_MAX;

	if (v < r->min || v > r->max)
		return bad_number(r, s);
	if (l->n == max) {
		if (max < LIST_MAX)
			fprintf(stderr, "fsnw-bench: --%s: at most %d value%s\n", r->flag, max,
				max == 1 ? "" : "s");
		else
			fprintf(stderr, "fsnw-bench: --%s: more than %d values\n", r->flag, max);
		return -1;
	}
	l->v[l->n++] = v;
	return 0;
}

/* "1,2,4", "1..cpus" (1, 2, 4, ... up to cpus), or for CPU lists "0-3,8". */
static int parse_list(const struct binding *bd, const char *s, struct long_list *l)
{
	const struct bench_option *r = bd->row;
	const char *p = s;

	l->n = 0;
	while (*p) {
		long a, b;

		if (number(bd, &p, &a) < 0)
			return bad_number(r, s);
		b = a;
		if (r->type == OPT_CPUS && *p == '-') {
			p++;
			if (number(bd, &p, &b) < 0)
				return bad_number(r, s);
		} else if (r->type == OPT_LIST && p[0] == '.' && p[1] == '.') {
			p += 2;
			if (number(bd, &p, &b) < 0 || a < 1)
				return bad_number(r, s);
		}
		if (*p && *p != ',')
			return bad_number(r, s);
		if (b < a) {
			fprintf(stderr, "fsnw-bench: --%s: empty range in '%s'\n", r->flag, s);
			return -1;
		}
		if (r->type == OPT_CPUS) {
			for (long v = a; v <= b; v++)
				if (push(r, l, v, s) < 0)
					return -1;
		} else {
			/* a..b: powers of two times a below b, then b itself. */
			for (long v = a; v < b; v *= 2)
				if (push(r, l, v, s) < 0)
					return -1;
			if (push(r, l, b, s) < 0)
				return -1;
		}
		if (*p == ',')
			p++;
	}
	if (!l->n) {
		fprintf(stderr, "fsnw-bench: --%s: empty list\n", r->flag);
		return -1;
	}
	return 0;
}

static int parse_value(struct binding *bd, const char *s)
{
	const struct bench_option *r = bd->row;
	void *f = field(bd);

	switch (r->type) {
	case OPT_FLAG:
		*(bool *)f = true;
		return 0;
	case OPT_STR:
		*(const char **)f = s;
		return 0;
	case OPT_LONG: {
		const char *p = s;
		long v;

		if (number(bd, &p, &v) < 0 || *p || v < r->min || v > r->max)
			return bad_number(r, s);
		*(long *)f = v;
		return 0;
	}
	case OPT_LIST:
	case OPT_CPUS:
		return parse_list(bd, s, f);
	case OPT_PCT: {
		char *end;
		double v = strtod(s, &end);

		if (end == s || (*end && strcmp(end, "%")) || v < 0 || v > 1000) {
			fprintf(stderr, "fsnw-bench: --%s: '%s' is not a percentage\n", r->flag, s);
			return -1;
		}
		*(double *)f = v;
		return 0;
	}
	case OPT_SIZE:
		for (int i = 0; i < NSIZES; i++)
			if (!strcmp(s, size_names[i])) {
				*(enum size_preset *)f = (enum size_preset)i;
				return 0;
			}
		fprintf(stderr, "fsnw-bench: --%s: tiny, small, default or seed\n", r->flag);
		return -1;
	}
	return -1;
}

int cli_distinct(const struct long_list *l)
{
	int n = 0;

	for (int i = 0; i < l->n; i++) {
		bool dup = false;

		for (int j = 0; j < i && !dup; j++)
			dup = l->v[j] == l->v[i];
		n += !dup;
	}
	return n;
}

/* The value of an option nobody set: unset (see cli.h). */
static void unset(struct binding *bd)
{
	void *f = field(bd);

	switch (bd->row->type) {
	case OPT_FLAG:
		*(bool *)f = false;
		break;
	case OPT_STR:
		*(const char **)f = NULL;
		break;
	case OPT_LONG:
		*(long *)f = -1;
		break;
	case OPT_LIST:
	case OPT_CPUS:
		((struct long_list *)f)->n = 0;
		break;
	case OPT_PCT:
		*(double *)f = NAN;
		break;
	case OPT_SIZE:
		*(enum size_preset *)f = SIZE_DEFAULT;
		break;
	}
}

static bool common_applies(const struct bench_option *r, const struct scenario *sc)
{
	return (r->scen_flags & sc->flags) != 0;
}

static int bind(const struct bench_option *table, const struct scenario *sc, void *base,
		const struct scenario *owner)
{
	for (const struct bench_option *r = table; r && r->flag; r++) {
		if (!owner && !common_applies(r, sc))
			continue;
		if (nbindings == BINDINGS_MAX) {
			fprintf(stderr, "fsnw-bench: too many options\n");
			return -1;
		}
		bindings[nbindings++] = (struct binding){ .row = r, .table = table, .sc = owner,
							  .base = base };
	}
	return 0;
}

/* The rows the subcommand takes: common ones, its own, and for quick those
 * of every scenario it runs. */
static int bind_all(const struct scenario *sc, struct bench_opts *o)
{
	nbindings = 0;
	if (bind(common_options, sc, o, NULL) < 0 || bind(sc->options, sc, sc->opts, sc) < 0)
		return -1;
	if (sc->flags & SCEN_SUMMARY) {
		size_t n;
		const struct scenario *const *all = scenarios(&n);

		for (size_t i = 0; i < n; i++)
			if (all[i]->quick && bind(all[i]->options, sc, all[i]->opts, all[i]) < 0)
				return -1;
	}
	return 0;
}

/* One getopt entry per distinct flag; val is VAL0 + the first binding's index. */
#define VAL0 256

static struct option *make_longopts(void)
{
	struct option *lo = calloc((size_t)nbindings + 2, sizeof(*lo));
	int n = 0;

	if (!lo)
		return NULL;
	for (int i = 0; i < nbindings; i++) {
		bool dup = false;

		for (int j = 0; j < n && !dup; j++)
			dup = !strcmp(lo[j].name, bindings[i].row->flag);
		if (dup)
			continue;
		lo[n].name = bindings[i].row->flag;
		lo[n].has_arg = bindings[i].row->type == OPT_FLAG ? no_argument : required_argument;
		lo[n].val = VAL0 + i;
		n++;
	}
	lo[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	return lo;
}

static const struct scenario *find_subcommand(const char *name)
{
	const struct scenario *sc = scenario_find(name);

	if (!sc) {
		fprintf(stderr, "fsnw-bench: unknown subcommand '%s'\n", name);
		cli_usage(stderr);
	}
	return sc;
}

/*
 * What argv did not set takes its preset, in table order (a preset may name
 * an earlier option). --size first, from argv or the scenario's own default:
 * it picks the preset of everything else.
 */
static int resolve(const struct scenario *sc, struct bench_opts *o)
{
	o->size = SIZE_DEFAULT;
	for (int i = 0; i < nbindings; i++)
		if (bindings[i].row->type == OPT_SIZE && !bindings[i].given && sc->size) {
			bindings[i].given = true;
			bindings[i].arg = sc->size;
		}
	for (int i = 0; i < nbindings; i++) {
		struct binding *bd = &bindings[i];
		const char *v = bd->given ? bd->arg : bd->row->preset[o->size];

		unset(bd);
		if (bd->given && bd->row->type == OPT_FLAG)
			v = "";
		if (v && parse_value(bd, v) < 0) {
			if (!bd->given)
				fprintf(stderr, "fsnw-bench: the %s preset of --%s does not "
					"parse\n", size_names[o->size], bd->row->flag);
			return -1;
		}
		bd->resolved = true;
		/* From here on `cpus` in a preset is the CPUs the workers go to:
		 * those --cpus lists (common options come first). */
		if (bd->row->type == OPT_CPUS && ((struct long_list *)field(bd))->n)
			ncpus = cli_distinct((struct long_list *)field(bd));
	}
	o->size_name = size_names[o->size];
	return 0;
}

/* Read the flags of argv into the bindings; -1 on an unknown one. --help exits. */
static int read_flags(const struct scenario *sc, int argc, char **argv)
{
	struct option *lo = make_longopts();
	int c;

	if (!lo)
		return -1;
	optind = 2;
	while ((c = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		if (c == '?') {
			fprintf(stderr, "fsnw-bench %s --help lists its options\n", sc->name);
			free(lo);
			return -1;
		}
		if (c == 'h') {
			cli_usage_of(stdout, sc);
			free(lo);
			exit(0);
		}
		/* Every row the flag binds takes the argument (quick: --workers). */
		for (int i = c - VAL0; i < nbindings; i++)
			if (!strcmp(bindings[i].row->flag, bindings[c - VAL0].row->flag)) {
				bindings[i].given = true;
				bindings[i].arg = optarg;
			}
	}
	free(lo);
	return 0;
}

static int check_args(const struct scenario *sc, const struct bench_opts *o)
{
	if (o->nargs < sc->min_args) {
		fprintf(stderr, "fsnw-bench %s: give at least %d %s\n", sc->name, sc->min_args,
			sc->args ? sc->args : "arguments");
		return -1;
	}
	if (!sc->min_args && o->nargs) {
		fprintf(stderr, "fsnw-bench %s: unexpected argument '%s'\n", sc->name, o->args[0]);
		return -1;
	}
	return 0;
}

/* Every name of --variants is one of the scenario's. */
static int check_variants(const struct scenario *sc, const struct bench_opts *o)
{
	for (const char *p = o->variants; p && *p && sc->variants;) {
		size_t n = strcspn(p, ",");
		bool found = false;

		for (int i = 0; sc->variants[i]; i++)
			found |= strlen(sc->variants[i]) == n && !strncmp(p, sc->variants[i], n);
		if (!found) {
			fprintf(stderr, "fsnw-bench %s: unknown variant '%.*s'; known:", sc->name,
				(int)n, p);
			for (int i = 0; sc->variants[i]; i++)
				fprintf(stderr, " %s", sc->variants[i]);
			fputc('\n', stderr);
			return -1;
		}
		p += n + (p[n] == ',');
	}
	return 0;
}

/* The scenario's own refusals, and for quick those of every scenario it runs. */
static int check_scenarios(const struct scenario *sc, const struct bench_opts *o)
{
	size_t n;
	const struct scenario *const *all = scenarios(&n);

	if (sc->check && sc->check(o) < 0)
		return -1;
	if (sc->flags & SCEN_SUMMARY)
		for (size_t i = 0; i < n; i++)
			if (all[i] != sc && all[i]->quick && all[i]->check && all[i]->check(o) < 0)
				return -1;
	return 0;
}

static int count_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	return CPU_COUNT(&set) > 0 ? CPU_COUNT(&set) : 1;
}

int cli_parse(int argc, char **argv, struct bench_opts *o)
{
	const struct scenario *sc;

	memset(o, 0, sizeof(*o));
	o->argc = argc;
	o->argv = argv;
	ncpus = count_cpus();
	if (argc < 2) {
		cli_usage(stderr);
		return -1;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		cli_usage(stdout);
		exit(0);
	}
	sc = find_subcommand(argv[1]);
	if (!sc)
		return -1;
	o->scen = sc;
	o->cmd_name = sc->name;
	if (bind_all(sc, o) < 0 || read_flags(sc, argc, argv) < 0 || resolve(sc, o) < 0)
		return -1;
	o->nargs = argc - optind;
	o->args = argv + optind;
	if (check_args(sc, o) < 0 || check_variants(sc, o) < 0)
		return -1;
	return check_scenarios(sc, o);
}

bool cli_variant_on(const struct bench_opts *o, const char *name)
{
	size_t len = strlen(name);

	if (!o->variants)
		return true;
	for (const char *p = o->variants; *p;) {
		size_t n = strcspn(p, ",");

		if (n == len && !strncmp(p, name, n))
			return true;
		p += n + (p[n] == ',');
	}
	return false;
}

/* ---- usage, from the same tables ---- */

/* "8 / 32 / 32 / 96", or one value when every size has it; "" when none. */
static void presets(const struct bench_option *r, char *buf, size_t len)
{
	bool same = true;

	buf[0] = '\0';
	for (int i = 1; i < NSIZES; i++)
		same &= r->preset[i] && r->preset[0] && !strcmp(r->preset[i], r->preset[0]);
	if (!r->preset[0])
		return;
	if (same) {
		snprintf(buf, len, "%s", r->preset[0]);
		return;
	}
	snprintf(buf, len, "%s / %s / %s / %s", r->preset[0], r->preset[1], r->preset[2],
		 r->preset[3]);
}

static void option_line(FILE *f, const char *owner, const struct bench_option *r, int width)
{
	char flag[64], p[160];

	snprintf(flag, sizeof(flag), "--%s%s%s", r->flag, r->arg ? " " : "", r->arg ? r->arg : "");
	presets(r, p, sizeof(p));
	fprintf(f, "  %-*s  %s%s%s%s%s%s\n", width, flag, owner ? owner : "", owner ? ": " : "",
		r->help, *p ? " [" : "", p, *p ? "]" : "");
}

/* The width of the widest "--flag ARG" of the bindings (own or common). */
static int flag_width(bool own)
{
	int w = 0;

	for (int i = 0; i < nbindings; i++) {
		const struct bench_option *r = bindings[i].row;
		int n = 2 + (int)strlen(r->flag) + (r->arg ? 1 + (int)strlen(r->arg) : 0);

		if ((bindings[i].sc != NULL) == own && n > w)
			w = n;
	}
	return w;
}

void cli_usage(FILE *f)
{
	size_t n, col;
	const struct scenario *const *all = scenarios(&n);

	fputs("usage: fsnw-bench SUBCOMMAND [OPTIONS]\n", f);
	for (size_t i = 0; i < n; i++) {
		char name[48];

		snprintf(name, sizeof(name), "%s%s%s", all[i]->name, all[i]->args ? " " : "",
			 all[i]->args ? all[i]->args : "");
		fprintf(f, "  %-18s %s\n", name, all[i]->summary);
	}
	fputs("common:", f);
	col = 7;
	for (const struct bench_option *r = common_options; r->flag; r++) {
		size_t w = strlen(r->flag) + 3 + (r->arg ? strlen(r->arg) + 1 : 0);

		if (col + w > 78) {
			fputs("\n       ", f);
			col = 7;
		}
		fprintf(f, " --%s%s%s", r->flag, r->arg ? " " : "", r->arg ? r->arg : "");
		col += w;
	}
	fputs("\nfsnw-bench SUBCOMMAND --help lists its options; fsnw-bench(1) says what each "
	      "measures.\n", f);
}

void cli_usage_of(FILE *f, const struct scenario *sc)
{
	struct bench_opts o;
	bool words = false;
	int own = 0, common = 0;

	fprintf(f, "usage: fsnw-bench %s [OPTIONS]%s%s\n  %s\n", sc->name, sc->args ? " " : "",
		sc->args ? sc->args : "", sc->summary);
	if (sc->variants) {
		fputs("variants:", f);
		for (int i = 0; sc->variants[i]; i++)
			fprintf(f, " %s", sc->variants[i]);
		fputc('\n', f);
	}
	if (bind_all(sc, &o) < 0)
		return;
	for (int i = 0; i < nbindings; i++) {
		const struct binding *bd = &bindings[i];

		if (!bd->sc)
			continue;
		if (!own++)
			fprintf(f, "options%s:\n", sc->flags & SCEN_MEASURES ?
				" [presets: tiny / small / default / seed]" : "");
		option_line(f, sc->flags & SCEN_SUMMARY ? bd->sc->name : NULL, bd->row,
			    flag_width(true));
		for (int s = 0; s < NSIZES; s++)
			words |= bd->row->preset[s] && (strstr(bd->row->preset[s], "cpus") ||
							  strstr(bd->row->preset[s], ".."));
	}
	for (int i = 0; i < nbindings; i++) {
		if (bindings[i].sc)
			continue;
		if (!common++)
			fputs("common options:\n", f);
		option_line(f, NULL, bindings[i].row, flag_width(false));
	}
	if (sc->size)
		fprintf(f, "without --size, %s runs at the %s size\n", sc->name, sc->size);
	if (words)
		fputs("in presets, cpus is the number of CPUs of --cpus (else of those this "
		      "process may use), and a..b is a, 2a, 4a, ... below b, then b\n", f);
}
