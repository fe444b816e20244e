/* SPDX-License-Identifier: MIT */
/*
 * report: compare runs made on different boots (for example parent A,
 * child, parent B), BENCH-METHOD.md "Comparing kernels". Per scenario,
 * variant, workers and metric: each run's median, then
 *   candidate vs each control      C / A - 1, C / B - 1
 *   candidate vs their midpoint    C / ((A + B) / 2) - 1
 *   control drift, both forms      |B - A| / ((A + B) / 2)  and  B / A - 1
 * and the gates, set before the runs (seed 000's by default): a change of at
 * least 5% against both controls in the same direction, drift below 5%, CV
 * at most 15% in every run, every round's checks passed. A metric that
 * misses a gate is labelled so and its changes are shown in parentheses:
 * they are not results. Runs made under emulation (the environment record
 * says emulated=yes, as fsnw-bench-vm --accel tcg writes) get no verdict:
 * their timings do not compare kernels, only their checks mean something.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "csv.h"
#include "envrec.h"
#include "summary.h"
#include "table.h"

struct report_opts {
	struct long_list controls;   /* 1-based run numbers */
	struct long_list candidates;
	double min_change, max_drift, max_cv; /* percent */
	const char *scenario;        /* report only this scenario */
};

static struct report_opts opt;

#define F(field) offsetof(struct report_opts, field)
static const struct bench_option options[] = {
	{ .flag = "controls", .arg = "I,J", .type = OPT_LIST, .off = F(controls), .min = 1,
	  .max = 1000, .max_items = 2,
	  .help = "the control runs (default: the first and the last)" },
	{ .flag = "candidate", .arg = "LIST", .type = OPT_LIST, .off = F(candidates), .min = 1,
	  .max = 1000, .help = "the candidate runs (default: every run between the controls)" },
	{ .flag = "min-change", .arg = "PCT", .type = OPT_PCT, .off = F(min_change),
	  .preset = { "5", "5", "5", "5" },
	  .help = "a signal changes at least this much against every control" },
	{ .flag = "max-drift", .arg = "PCT", .type = OPT_PCT, .off = F(max_drift),
	  .preset = { "5", "5", "5", "5" }, .help = "the controls' drift stays below this" },
	{ .flag = "max-cv", .arg = "PCT", .type = OPT_PCT, .off = F(max_cv),
	  .preset = { "15", "15", "15", "15" }, .help = "the CV in every run is at most this" },
	{ .flag = "scenario", .arg = "NAME", .type = OPT_STR, .off = F(scenario),
	  .help = "report this scenario only" },
	{ 0 },
};
#undef F

struct run {
	const char *path;
	struct row *rows;
	long nrows;
	struct envrec env;
	bool have_env;
};

static bool emulated(const struct run *r)
{
	return r->have_env && !strncmp(envrec_get(&r->env, "emulated"), "yes", 3);
}

struct stat_of {
	bool found;
	bool ok;
	struct summary s;
};

static bool same_key(const struct row *a, const struct row *b)
{
	return !strcmp(a->scenario, b->scenario) && !strcmp(a->variant, b->variant) &&
	       a->workers == b->workers && !strcmp(a->metric, b->metric) &&
	       !strcmp(a->unit, b->unit);
}

static void stat_key(const struct run *r, const struct row *key, struct stat_of *out)
{
	double *v = malloc(((size_t)r->nrows + 1) * sizeof(*v));
	size_t n = 0;

	out->found = false;
	out->ok = true;
	if (!v)
		return;
	for (long i = 0; i < r->nrows; i++)
		if (same_key(&r->rows[i], key)) {
			v[n++] = r->rows[i].value;
			out->ok &= r->rows[i].ok;
		}
	summary_of(v, n, &out->s);
	out->found = n > 0;
	free(v);
}

static void pct(char *buf, size_t len, double v, bool paren)
{
	if (isnan(v) || isinf(v))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, paren ? "(%+.2f%%)" : "%+.2f%%", v * 100);
}

static const char *short_boot(const struct run *r)
{
	const char *b = r->have_env ? envrec_get(&r->env, "boot_id") : "?";
	static char buf[4][16];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%.8s", b);
	return buf[k];
}

static void describe_runs(struct run *runs, int n)
{
	printf("runs (in boot order):\n");
	for (int i = 0; i < n; i++) {
		const struct run *r = &runs[i];

		printf("  %d: %s  kernel %s  boot %s  cpu %s  fs %s  connector tracking %s  "
		       "(%ld rows%s)\n", i + 1, r->path,
		       r->have_env ? envrec_get(&r->env, "kernel_release") :
				     (r->nrows ? r->rows[0].kernel : "?"),
		       short_boot(r), r->have_env ? envrec_get(&r->env, "cpu_model") : "?",
		       r->have_env ? envrec_get(&r->env, "fs_type") : "?",
		       r->have_env ? envrec_get(&r->env, "connector_tracking") : "?", r->nrows,
		       emulated(r) ? ", emulated" : "");
	}
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			const char *a, *b;

			if (!runs[i].have_env || !runs[j].have_env)
				continue;
			a = envrec_get(&runs[i].env, "boot_id");
			b = envrec_get(&runs[j].env, "boot_id");
			if (strcmp(a, "?") && !strcmp(a, b))
				printf("  warning: runs %d and %d come from the same boot (%.8s): this "
				       "is not a comparison across boots\n", i + 1, j + 1, a);
			if (strcmp(envrec_get(&runs[i].env, "cpu_model"),
				   envrec_get(&runs[j].env, "cpu_model")))
				printf("  warning: runs %d and %d ran on different CPU models\n", i + 1,
				       j + 1);
			if (strcmp(envrec_get(&runs[i].env, "size"),
				   envrec_get(&runs[j].env, "size")))
				printf("  warning: runs %d and %d used different sizes\n", i + 1,
				       j + 1);
		}
}

/* Gate verdict for one metric; `why` lists what missed. */
static bool gates(const struct report_opts *o, const struct stat_of *st, const int *idx, int nst,
		  int nctl, double vs_a, double vs_b, double drift, char *why, size_t len)
{
	size_t off = 0;
	bool ok = true;

#define MISS(...)                                                                           \
	do {                                                                               \
		ok = false;                                                                \
		if (off < len)                                                             \
			off += (size_t)snprintf(why + off, len - off, "%s", off ? "; " : ""); \
		if (off < len)                                                             \
			off += (size_t)snprintf(why + off, len - off, __VA_ARGS__);        \
	} while (0)

	why[0] = '\0';
	for (int i = 0; i < nst; i++)
		if (!st[i].ok)
			MISS("checks failed in run %d", idx[i]);
	for (int i = 0; i < nst; i++) {
		if (isnan(st[i].s.cv))
			MISS("CV unknown in run %d (%zu round)", idx[i], st[i].s.n);
		else if (st[i].s.cv > o->max_cv)
			MISS("CV %.1f%% > %.0f%% in run %d", st[i].s.cv, o->max_cv, idx[i]);
	}
	if (nctl < 2)
		MISS("one control: drift unknown");
	else if (isnan(drift))
		MISS("drift undefined (zero controls)");
	else if (drift * 100 >= o->max_drift)
		MISS("drift %.2f%% >= %.0f%%", drift * 100, o->max_drift);
	if (isnan(vs_a) || isinf(vs_a))
		MISS("change undefined (zero control)");
	else if (fabs(vs_a) * 100 < o->min_change)
		MISS("change vs run %d %.2f%% < %.0f%%", idx[1], fabs(vs_a) * 100, o->min_change);
	if (nctl == 2 && !isnan(vs_a) && !isnan(vs_b)) {
		if (fabs(vs_b) * 100 < o->min_change)
			MISS("change vs run %d %.2f%% < %.0f%%", idx[2], fabs(vs_b) * 100,
			     o->min_change);
		if ((vs_a > 0) != (vs_b > 0))
			MISS("the controls disagree on the direction");
	}
#undef MISS
	return ok;
}

static void compare(const struct report_opts *o, struct run *runs, int cand, int ca, int cb)
{
	const char *heads[] = { "scenario", "variant", "workers", "metric", "unit", "ctl A",
				"candidate", "ctl B", "vs A", "vs B", "vs mid", "drift |B-A|/mid",
				"drift B/A-1", "verdict" };
	struct run *C = &runs[cand], *A = &runs[ca], *B = cb >= 0 ? &runs[cb] : NULL;
	struct table t;
	int signals = 0, misses = 0;
	bool emu = emulated(C) || emulated(A) || (B && emulated(B));

	printf("\ncandidate: run %d vs control%s run %d%s", cand + 1, B ? "s" : "", ca + 1,
	       B ? "" : "\n");
	if (B)
		printf(" and run %d\n", cb + 1);
	printf("gates: change >= %.0f%% against %s (same direction), drift |B-A|/mid < %.0f%%, "
	       "CV <= %.0f%% in every run, all checks passed\n", o->min_change,
	       B ? "both controls" : "the control", o->max_drift, o->max_cv);
	table_init(&t, "llrllrrrrrrrrl", heads);
	for (long i = 0; i < C->nrows; i++) {
		const struct row *key = &C->rows[i];
		struct stat_of st[3];
		int idx[3] = { cand + 1, ca + 1, cb + 1 };
		double vs_a, vs_b = NAN, mid = NAN, drift = NAN, drift_rel = NAN;
		char x[32], y[32], z[32], why[400];
		bool seen = false, ok;

		if (o->scenario && strcmp(key->scenario, o->scenario))
			continue;
		for (long j = 0; j < i && !seen; j++)
			seen = same_key(&C->rows[j], key);
		if (seen)
			continue;
		stat_key(C, key, &st[0]);
		stat_key(A, key, &st[1]);
		if (B)
			stat_key(B, key, &st[2]);
		if (!st[1].found || (B && !st[2].found))
			continue; /* not measured in every run */
		vs_a = st[0].s.median / st[1].s.median - 1;
		if (B) {
			double a = st[1].s.median, b = st[2].s.median, m = (a + b) / 2;

			vs_b = st[0].s.median / b - 1;
			mid = st[0].s.median / m - 1;
			drift = fabs(b - a) / m;
			drift_rel = b / a - 1;
		}
		ok = gates(o, st, idx, B ? 3 : 2, B ? 2 : 1, vs_a, vs_b, drift, why, sizeof(why));
		if (emu) {
			/* Only the checks count; the rest of `why` is about timing. */
			ok = false;
			snprintf(why, sizeof(why), "%s", "emulated: functional only");
			for (int k = 0; k < (B ? 3 : 2); k++)
				if (!st[k].ok)
					snprintf(why + strlen(why), sizeof(why) - strlen(why),
						 "; checks failed in run %d", idx[k]);
		} else {
			ok ? signals++ : misses++;
		}
		table_cell(&t, "%s", key->scenario);
		table_cell(&t, "%s", key->variant);
		table_cell(&t, "%ld", key->workers);
		table_cell(&t, "%s", key->metric);
		table_cell(&t, "%s", key->unit);
		/* Medians in full: they are what the percentages are computed from. */
		table_cell(&t, "%.7g", st[1].s.median);
		table_cell(&t, "%.7g", st[0].s.median);
		if (B)
			table_cell(&t, "%.7g", st[2].s.median);
		else
			table_cell(&t, "-");
		pct(x, sizeof(x), vs_a, !ok);
		table_cell(&t, "%s", x);
		pct(y, sizeof(y), vs_b, !ok);
		table_cell(&t, "%s", B ? y : "-");
		pct(z, sizeof(z), mid, !ok);
		table_cell(&t, "%s", B ? z : "-");
		if (isnan(drift))
			table_cell(&t, "-");
		else
			table_cell(&t, "%.2f%%", drift * 100);
		pct(x, sizeof(x), drift_rel, false);
		table_cell(&t, "%s", B ? x : "-");
		if (ok)
			table_cell(&t, "signal");
		else
			table_cell(&t, "%s%s", emu ? "" : "GATE MISS: ", why);
	}
	if (t.nrows)
		table_print(&t, stdout);
	else
		printf("(no metric was measured in every run)\n");
	if (emu)
		printf("emulated runs: functional only, no verdicts (boot the kernels on "
		       "hardware or under KVM to compare them)\n");
	else
		printf("%d signal%s, %d gate miss%s (a gate miss is not a result)\n", signals,
		       signals == 1 ? "" : "s", misses, misses == 1 ? "" : "es");
	table_free(&t);
}

static int report_run(struct bench *b)
{
	const struct report_opts *o = &opt;
	char **args = b->o->args;
	int n = b->o->nargs, ret = 0;
	struct run *runs = calloc((size_t)n, sizeof(*runs));
	int ca, cb;

	if (!runs)
		return -1;
	for (int i = 0; i < n; i++) {
		char env[4200];

		runs[i].path = args[i];
		runs[i].nrows = csv_load(args[i], &runs[i].rows);
		if (runs[i].nrows < 0) {
			fprintf(stderr, "fsnw-bench report: %s: %s\n", args[i],
				strerror((int)-runs[i].nrows));
			runs[i].nrows = 0;
			ret = -1;
			goto out;
		}
		snprintf(env, sizeof(env), "%s.env", args[i]);
		runs[i].have_env = envrec_read(env, &runs[i].env) == 0;
		if (!runs[i].have_env)
			fprintf(stderr, "fsnw-bench report: %s: no environment record; boots cannot "
				"be told apart\n", env);
	}
	for (int i = 0; i < o->controls.n; i++)
		if (o->controls.v[i] > n)
			goto bad_index;
	for (int i = 0; i < o->candidates.n; i++)
		if (o->candidates.v[i] > n)
			goto bad_index;
	/* Controls: --controls, else the first and the last run (only the first of two). */
	ca = o->controls.n ? (int)o->controls.v[0] - 1 : 0;
	cb = o->controls.n ? (o->controls.n > 1 ? (int)o->controls.v[1] - 1 : -1) :
			     (n > 2 ? n - 1 : -1);
	describe_runs(runs, n);
	if (o->candidates.n) {
		for (int i = 0; i < o->candidates.n; i++)
			compare(o, runs, (int)o->candidates.v[i] - 1, ca, cb);
	} else {
		for (int i = 0; i < n; i++)
			if (i != ca && i != cb)
				compare(o, runs, i, ca, cb);
	}
	goto out;
bad_index:
	fprintf(stderr, "fsnw-bench report: a run number is larger than the %d runs given\n", n);
	ret = -1;
out:
	for (int i = 0; i < n; i++) {
		free(runs[i].rows);
		if (runs[i].have_env)
			envrec_free(&runs[i].env);
	}
	free(runs);
	return ret;
}

BENCH_SCENARIO(report) = {
	.name = "report",
	.args = "RUN.csv...",
	.min_args = 2,
	.order = 100,
	.summary = "compare runs from different boots (gates)",
	.run = report_run,
	.options = options,
	.opts = &opt,
};
