/* SPDX-License-Identifier: MIT */
/*
 * report: compare runs made on different boots (for example parent A,
 * child, parent B), BENCH-METHOD.md "Comparing kernels". Per scenario,
 * variant, workers and metric: each run's median, then
 *   candidate vs each control      C / A - 1, C / B - 1
 *   candidate vs their midpoint    C / ((A + B) / 2) - 1
 *   control drift, both forms      |B - A| / ((A + B) / 2)  and  B / A - 1
 * where the candidate may itself be the midpoint of two runs (as the
 * flistxattr report compares: --candidate I,J). Then a verdict, from gates
 * set before the runs (the 94bd01253c3d report's by default). The quality gates: every round's checks passed, CV at
 * most 15% in every run, two controls whose drift stays below 5%. A metric
 * that misses one is a GATE MISS, its changes shown in parentheses: they
 * are not results. A clean metric is a `signal` when it changed by at least
 * 5% against both controls in the same direction, and `no signal` when it
 * did not (the reports' "stayed below the pre-registered 5% threshold"): that
 * too is a result. Runs made under emulation (the environment record says
 * emulated=yes, as fsnw-bench-vm --accel tcg writes) get no verdict: their
 * timings do not compare kernels, only their checks mean something.
 */
#include <math.h>
#include <stdarg.h>
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
	{ .flag = "candidate", .arg = "I[,J]", .type = OPT_LIST, .off = F(candidates), .min = 1,
	  .max = 1000, .max_items = 2,
	  .help = "the candidate run, or I,J: the midpoint of runs I and J (default: every run "
		  "between the controls, one by one)" },
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

/*
 * v, with enough decimals (at least dec) that printed beside the limit
 * printed with %g it compares to it the way v does: never "CV 15.0% > 15%"
 * for a CV of 15.007%.
 */
static const char *beside(char *buf, size_t len, double v, double limit, int dec)
{
	for (; dec < 9; dec++) {
		double shown;

		snprintf(buf, len, "%.*f", dec, v);
		shown = strtod(buf, NULL);
		if ((shown > limit) == (v > limit) && (shown < limit) == (v < limit))
			break;
	}
	return buf;
}

/* frac as a percentage to 9 decimals: a change of exactly 5% must compare as
 * 5, not as 4.999999999999999 (and then print as 5.00 below the gate). */
static double pct_of(double frac)
{
	return round(frac * 1e11) / 1e9;
}

struct why {
	char text[400];
	size_t off;
};

static void why_add(struct why *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void why_add(struct why *w, const char *fmt, ...)
{
	va_list ap;

	if (w->off >= sizeof(w->text))
		return;
	if (w->off)
		w->off += (size_t)snprintf(w->text + w->off, sizeof(w->text) - w->off, "; ");
	if (w->off >= sizeof(w->text))
		return;
	va_start(ap, fmt);
	w->off += (size_t)vsnprintf(w->text + w->off, sizeof(w->text) - w->off, fmt, ap);
	va_end(ap);
}

/* The quality gates: whether the numbers may be read at all. */
static bool quality(const struct report_opts *o, const struct stat_of *st, const int *idx,
		    int nst, int nctl, double drift, struct why *w)
{
	char x[32];
	bool ok = true;

	for (int i = 0; i < nst; i++)
		if (!st[i].ok) {
			why_add(w, "checks failed in run %d", idx[i]);
			ok = false;
		}
	for (int i = 0; i < nst; i++) {
		if (isnan(st[i].s.cv)) {
			why_add(w, "CV unknown in run %d (%zu round)", idx[i], st[i].s.n);
			ok = false;
		} else if (pct_of(st[i].s.cv / 100) > o->max_cv) {
			why_add(w, "CV %s%% > %g%% in run %d",
				beside(x, sizeof(x), pct_of(st[i].s.cv / 100), o->max_cv, 1),
				o->max_cv, idx[i]);
			ok = false;
		}
	}
	if (nctl < 2) {
		why_add(w, "one control: drift unknown");
		ok = false;
	} else if (isnan(drift)) {
		why_add(w, "drift undefined (zero controls)");
		ok = false;
	} else if (pct_of(drift) >= o->max_drift) {
		why_add(w, "drift %s%% >= %g%%", beside(x, sizeof(x), pct_of(drift), o->max_drift, 2),
			o->max_drift);
		ok = false;
	}
	return ok;
}

/* Given clean numbers: whether the change is a signal; if not, why not. */
static bool signal_of(const struct report_opts *o, const int *ctl, int nctl, double vs_a,
		      double vs_b, struct why *w)
{
	double vs[2] = { vs_a, vs_b };
	char x[32];
	bool ok = true;

	for (int k = 0; k < nctl; k++) {
		if (isnan(vs[k]) || isinf(vs[k])) {
			why_add(w, "change vs run %d undefined (zero control)", ctl[k]);
			ok = false;
		} else if (pct_of(fabs(vs[k])) < o->min_change) {
			why_add(w, "change vs run %d %s%% < %g%%", ctl[k],
				beside(x, sizeof(x), pct_of(fabs(vs[k])), o->min_change, 2),
				o->min_change);
			ok = false;
		}
	}
	if (nctl == 2 && ok && (vs_a > 0) != (vs_b > 0)) {
		why_add(w, "the controls disagree on the direction");
		ok = false;
	}
	return ok;
}

enum verdict { V_SIGNAL, V_NONE, V_MISS, V_EMULATED };

struct cand {
	int run[2];   /* 0-based; run[1] < 0: a single run */
};

static void compare(const struct report_opts *o, struct run *runs, struct cand cd, int ca, int cb)
{
	const char *heads[] = { "scenario", "variant", "workers", "metric", "unit", "ctl A",
				"candidate", "ctl B", "vs A", "vs B", "vs mid", "drift |B-A|/mid",
				"drift B/A-1", "verdict" };
	struct run *C = &runs[cd.run[0]], *C2 = cd.run[1] >= 0 ? &runs[cd.run[1]] : NULL;
	struct run *A = &runs[ca], *B = cb >= 0 ? &runs[cb] : NULL;
	struct table t;
	int count[4] = { 0 };
	bool emu = emulated(C) || (C2 && emulated(C2)) || emulated(A) || (B && emulated(B));
	char what[64], ctl[64];

	if (C2)
		snprintf(what, sizeof(what), "the midpoint of runs %d and %d", cd.run[0] + 1,
			 cd.run[1] + 1);
	else
		snprintf(what, sizeof(what), "run %d", cd.run[0] + 1);
	if (B)
		snprintf(ctl, sizeof(ctl), "controls run %d and run %d", ca + 1, cb + 1);
	else
		snprintf(ctl, sizeof(ctl), "control run %d", ca + 1);
	printf("\ncandidate: %s vs %s\n", what, ctl);
	printf("gates: CV <= %g%% in every run, drift |B-A|/mid < %g%%, all checks passed; a "
	       "signal changes >= %g%% against %s (same direction), else no signal\n", o->max_cv,
	       o->max_drift, o->min_change, B ? "both controls" : "the control");
	table_init(&t, "llrllrrrrrrrrl", heads);
	for (long i = 0; i < C->nrows; i++) {
		const struct row *key = &C->rows[i];
		/* The candidate's runs first, then the controls. */
		struct stat_of st[4];
		int idx[4], nst = 0, ctl_idx[2] = { ca + 1, cb + 1 };
		double c, vs_a, vs_b = NAN, mid = NAN, drift = NAN, drift_rel = NAN;
		char x[32], y[32], z[32];
		struct why why = { .off = 0 };
		enum verdict v;
		bool seen = false, found = true;

		if (o->scenario && strcmp(key->scenario, o->scenario))
			continue;
		for (long j = 0; j < i && !seen; j++)
			seen = same_key(&C->rows[j], key);
		if (seen)
			continue;
		why.text[0] = '\0';
		stat_key(C, key, &st[nst]);
		idx[nst++] = cd.run[0] + 1;
		if (C2) {
			stat_key(C2, key, &st[nst]);
			idx[nst++] = cd.run[1] + 1;
		}
		stat_key(A, key, &st[nst]);
		idx[nst++] = ca + 1;
		if (B) {
			stat_key(B, key, &st[nst]);
			idx[nst++] = cb + 1;
		}
		for (int k = 0; k < nst; k++)
			found &= st[k].found;
		if (!found)
			continue; /* not measured in every run */
		c = C2 ? (st[0].s.median + st[1].s.median) / 2 : st[0].s.median;
		{
			double a = st[C2 ? 2 : 1].s.median;

			vs_a = c / a - 1;
			if (B) {
				double bm = st[nst - 1].s.median, m = (a + bm) / 2;

				vs_b = c / bm - 1;
				mid = c / m - 1;
				drift = fabs(bm - a) / m;
				drift_rel = bm / a - 1;
			}
		}
		if (emu) {
			/* Only the checks count; the rest would be about timing. */
			v = V_EMULATED;
			why_add(&why, "emulated: functional only");
			for (int k = 0; k < nst; k++)
				if (!st[k].ok)
					why_add(&why, "checks failed in run %d", idx[k]);
		} else if (!quality(o, st, idx, nst, B ? 2 : 1, drift, &why)) {
			v = V_MISS;
		} else {
			v = signal_of(o, ctl_idx, B ? 2 : 1, vs_a, vs_b, &why) ? V_SIGNAL : V_NONE;
		}
		count[v]++;
		table_cell(&t, "%s", key->scenario);
		table_cell(&t, "%s", key->variant);
		table_cell(&t, "%ld", key->workers);
		table_cell(&t, "%s", key->metric);
		table_cell(&t, "%s", key->unit);
		/* Medians in full: they are what the percentages are computed from. */
		table_cell(&t, "%.7g", st[C2 ? 2 : 1].s.median);
		table_cell(&t, "%.7g", c);
		if (B)
			table_cell(&t, "%.7g", st[nst - 1].s.median);
		else
			table_cell(&t, "-");
		/* Numbers that are not results are shown in parentheses. */
		pct(x, sizeof(x), vs_a, v >= V_MISS);
		table_cell(&t, "%s", x);
		pct(y, sizeof(y), vs_b, v >= V_MISS);
		table_cell(&t, "%s", B ? y : "-");
		pct(z, sizeof(z), mid, v >= V_MISS);
		table_cell(&t, "%s", B ? z : "-");
		if (isnan(drift))
			table_cell(&t, "-");
		else
			table_cell(&t, "%.2f%%", drift * 100);
		pct(x, sizeof(x), drift_rel, false);
		table_cell(&t, "%s", B ? x : "-");
		switch (v) {
		case V_SIGNAL:
			table_cell(&t, "signal");
			break;
		case V_NONE:
			table_cell(&t, "no signal: %s", why.text);
			break;
		case V_MISS:
			table_cell(&t, "GATE MISS: %s", why.text);
			break;
		case V_EMULATED:
			table_cell(&t, "%s", why.text);
			break;
		}
	}
	if (t.nrows)
		table_print(&t, stdout);
	else
		printf("(no metric was measured in every run)\n");
	if (emu)
		printf("emulated runs: functional only, no verdicts (boot the kernels on "
		       "hardware or under KVM to compare them)\n");
	else
		printf("%d signal%s, %d no signal, %d gate miss%s (a gate miss is not a "
		       "result)\n", count[V_SIGNAL], count[V_SIGNAL] == 1 ? "" : "s",
		       count[V_NONE], count[V_MISS], count[V_MISS] == 1 ? "" : "es");
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
		struct cand cd = { { (int)o->candidates.v[0] - 1,
				     o->candidates.n > 1 ? (int)o->candidates.v[1] - 1 : -1 } };

		compare(o, runs, cd, ca, cb);
	} else {
		for (int i = 0; i < n; i++)
			if (i != ca && i != cb)
				compare(o, runs, (struct cand){ { i, -1 } }, ca, cb);
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
