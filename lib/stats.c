/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "export.h"
#include "stats.h"
#include "sys.h"

/* About one check of the TSC's rate a second; two windows agree within 1/32. */
#define CLOCK_WINDOW_NS 1000000000u
#define CLOCK_AGREE 32
/* Ratios beyond these are not a TSC's: 1 MHz to 64 GHz. */
#define CLOCK_MULT_MAX (1000ULL << 32)
#define CLOCK_MULT_MIN (1ULL << 26)

#if defined(__x86_64__)
/*
 * Whether latencies may be timed with the TSC: the CPU says its rate is
 * constant and it counts on in idle (CPUID's invariant TSC), and the
 * kernel's clock source is the TSC or made from it (kvm-clock scales the
 * TSC). A hypervisor may still keep the guest's kernel off the TSC as its
 * clock source (tsc=unstable, for migration): for a latency within one
 * call what matters is the rate, which is checked once a second. The
 * environment's FSNW_CLOCK=monotonic refuses it.
 */
static bool tsc_usable(struct fsnw *w)
{
	char buf[32] = "";
	const char *env = getenv("FSNW_CLOCK");
	unsigned a, b, c, d;
	int fd;
	ssize_t n;

	if (env && !strcmp(env, "monotonic"))
		return false;
	fd = sys_open(&w->st.sys_other,
		      "/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY);
	if (fd < 0)
		return false;
	n = sys_read(&w->st.sys_other, fd, buf, sizeof(buf) - 1);
	sys_close(&w->st.sys_other, fd);
	if (n <= 0)
		return false;
	buf[strcspn(buf, "\n")] = '\0';
	if (!strcmp(buf, "tsc"))
		return true;
	return !strcmp(buf, "kvm-clock") && __get_cpuid(0x80000007, &a, &b, &c, &d) &&
	       (d & (1u << 8));
}

/* A TSC reading paired with a clock reading taken between two TSC reads
 * close together (a clock read alone takes far fewer than 512 ticks), so
 * that no preemption sits between the pair. */
static bool tsc_pair(uint64_t *tsc, uint64_t *ns)
{
	for (int i = 0; i < 16; i++) {
		uint64_t c0 = __rdtsc(), n = stats_now_ns(), c1 = __rdtsc();

		if (c1 > c0 && c1 - c0 < 512) {
			*tsc = c0 + (c1 - c0) / 2;
			*ns = n;
			return true;
		}
	}
	return false;
}
#endif

void stats_clock_window(struct stats_clock *c, uint64_t tsc, uint64_t ns)
{
	uint64_t dt = tsc - c->win_tsc, dn = ns - c->win_ns;
	unsigned __int128 m;
	uint64_t diff;

	c->win_tsc = tsc;
	c->win_ns = ns;
	/* The TSC or the clock went back: a new window. */
	if ((int64_t)dt <= 0 || (int64_t)dn <= 0)
		return;
	m = ((unsigned __int128)dn << 32) / dt;
	if (m > CLOCK_MULT_MAX || m < CLOCK_MULT_MIN) {
		c->win_mult = 0;
		return;
	}
	diff = (uint64_t)m > c->win_mult ? (uint64_t)m - c->win_mult : c->win_mult - (uint64_t)m;
	if (diff <= c->win_mult / CLOCK_AGREE)
		c->mult = (uint64_t)m;
	c->win_mult = (uint64_t)m;
}

void stats_clock_check(struct fsnw *w, uint64_t tsc)
{
	stats_clock_window(&w->clock, tsc, stats_now_ns());
}

void stats_clock_init(struct fsnw *w)
{
	struct stats_clock *c = &w->clock;

	*c = (struct stats_clock){ .tsc = false };
#if defined(__x86_64__)
	uint64_t c0, n0, c1, n1, m;

	if ((w->open_flags & FSNW_OPEN_NO_STATS) || !tsc_usable(w) || !tsc_pair(&c0, &n0))
		return;
	/* 20 us against the monotonic clock: each pair is within 256 ticks
	 * (about 0.1 us), under 1 % of error, far inside a log2 bucket; the
	 * checks once a second refine it. */
	do {
		if (!tsc_pair(&c1, &n1))
			return;
	} while (n1 - n0 < 20000);
	if (c1 <= c0)
		return;
	m = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (c1 - c0));
	if (m > CLOCK_MULT_MAX || m < CLOCK_MULT_MIN)
		return;
	*c = (struct stats_clock){
		.tsc = true,
		.mult = m,
		.win_tsc = c1,
		.win_ns = n1,
		.win_mult = m,
		.win_ticks = (uint64_t)(((unsigned __int128)CLOCK_WINDOW_NS << 32) / m),
	};
#endif
}

void stats_hist_add(struct fsnw_histogram *h, uint64_t ns)
{
	int b = ns < 2 ? 0 : 63 - __builtin_clzll(ns);

	if (b >= FSNW_HIST_BUCKETS)
		b = FSNW_HIST_BUCKETS - 1;
	h->buckets[b]++;
	h->count++;
	h->sum_ns += ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

FSNW_EXPORT uint64_t fsnw_histogram_quantile(const struct fsnw_histogram *h, double q)
{
	uint64_t rank, seen = 0;

	if (!h || !h->count)
		return 0;
	if (!(q > 0.0)) /* also NaN */
		q = 0.0;
	if (q > 1.0)
		q = 1.0;
	/* The smallest rank r with r >= q * count, at least the first sample. */
	rank = (uint64_t)(q * (double)h->count);
	if ((double)rank < q * (double)h->count)
		rank++;
	if (rank == 0)
		rank = 1;
	for (int b = 0; b < FSNW_HIST_BUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank) {
			/* Every sample of bucket b is below 2^(b+1); none is above max. */
			uint64_t upper = b == FSNW_HIST_BUCKETS - 1 ? UINT64_MAX : (2ULL << b) - 1;

			return upper < h->max_ns ? upper : h->max_ns;
		}
	}
	return h->max_ns;
}

void stats_snapshot(const struct fsnw *w, struct fsnw_stats *out)
{
	const struct queue_counters *c = queue_counters(w->q);
	struct fsnw_histogram *lat[LAT_KINDS] = {
		&out->lat_add, &out->lat_remove, &out->lat_kernel_mark, &out->lat_kernel_unmark,
		&out->lat_kernel_read,
	};

	*out = w->st;
	for (int k = 0; k < LAT_KINDS; k++)
		*lat[k] = w->lat[k];
	out->size = sizeof(*out);
	out->backend = (uint32_t)w->be->id;
	out->logical_watches = watches_count(&w->watches);
	out->kernel_watches = kwatch_count(&w->kwatches) + w->trees.fan.nanchors;
	out->parked_watches = w->kwatches.nparked;
	out->events_queued = c->queued;
	out->events_delivered = c->delivered;
	out->events_merged = c->merged;
	out->dropped_queue_full = c->dropped_full;
	out->overflows_queue = c->overflows;
	out->queue_depth = c->depth;
	out->queue_high_water = c->high_water;
	out->tree_dirs_cached = w->trees.fan.cache.count;
	out->tree_cache_evictions = w->trees.fan.cache.evictions;
	out->timing_tsc = w->clock.tsc;
	out->syscalls = out->sys_inotify_init + out->sys_inotify_add_watch +
			out->sys_inotify_rm_watch + out->sys_fanotify_init + out->sys_fanotify_mark +
			out->sys_name_to_handle_at + out->sys_open_by_handle_at + out->sys_read +
			out->sys_poll + out->sys_eventfd + out->sys_walk + out->sys_other +
			out->sys_io_uring;
	out->mem_mapped = mem_cache_mapped(&w->kwatches.kw_cache) +
			  mem_cache_mapped(&w->kwatches.link_cache) +
			  mem_cache_mapped(&w->watches.cache);
	for (size_t i = 0; i < STRPOOL_CLASSES; i++)
		out->mem_mapped += mem_cache_mapped(&w->watches.paths.class[i]);
}

/* The counters, by name, in struct order: the JSON keys are the field names. */
#define COUNTER(f) { #f, offsetof(struct fsnw_stats, f) }
static const struct {
	const char *name;
	size_t off;
} counters[] = {
	COUNTER(logical_watches), COUNTER(kernel_watches), COUNTER(parked_watches),
	COUNTER(add_calls), COUNTER(remove_calls), COUNTER(dedup_hits), COUNTER(idle_parks),
	COUNTER(idle_revives), COUNTER(idle_evictions), COUNTER(kernel_drops),
	COUNTER(sys_inotify_init), COUNTER(sys_inotify_add_watch), COUNTER(sys_inotify_rm_watch),
	COUNTER(sys_fanotify_init), COUNTER(sys_fanotify_mark), COUNTER(sys_name_to_handle_at),
	COUNTER(sys_open_by_handle_at), COUNTER(sys_read), COUNTER(sys_poll), COUNTER(sys_eventfd),
	COUNTER(sys_walk), COUNTER(sys_other),
	COUNTER(events_read), COUNTER(events_queued), COUNTER(events_delivered),
	COUNTER(events_merged), COUNTER(events_synthetic), COUNTER(dropped_removed),
	COUNTER(dropped_parked), COUNTER(dropped_queue_full), COUNTER(dropped_stale),
	COUNTER(dropped_walk),
	COUNTER(overflows_kernel), COUNTER(overflows_queue), COUNTER(overflows_unwatched),
	COUNTER(queue_depth),
	COUNTER(queue_high_water),
	COUNTER(ring_active), COUNTER(sys_io_uring), COUNTER(settles_ring), COUNTER(settles_read),
	COUNTER(tree_retries), COUNTER(overflows_mount),
	COUNTER(dropped_outside), COUNTER(tree_dirs_cached), COUNTER(tree_cache_evictions),
	COUNTER(overflows_unresolved), COUNTER(timing_tsc), COUNTER(syscalls),
	COUNTER(mem_mapped),
};

#define HISTOGRAM(f) { #f, offsetof(struct fsnw_stats, f) }
static const struct {
	const char *name;
	size_t off;
} histograms[] = {
	HISTOGRAM(lat_add), HISTOGRAM(lat_remove), HISTOGRAM(lat_kernel_mark),
	HISTOGRAM(lat_kernel_unmark), HISTOGRAM(lat_kernel_read),
};

/* An appender with snprintf rules: it counts what it could not store. */
struct jbuf {
	char *buf;
	size_t len;
	size_t pos;
};

__attribute__((format(printf, 2, 3)))
static void jprintf(struct jbuf *j, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(j->pos < j->len ? j->buf + j->pos : NULL,
		      j->pos < j->len ? j->len - j->pos : 0, fmt, ap);
	va_end(ap);
	if (n > 0)
		j->pos += (size_t)n;
}

static void json_histogram(struct jbuf *j, const char *name, const struct fsnw_histogram *h)
{
	int last = FSNW_HIST_BUCKETS - 1;

	while (last > 0 && !h->buckets[last])
		last--;
	jprintf(j, ",\"%s\":{\"count\":%llu,\"sum_ns\":%llu,\"max_ns\":%llu", name,
		(unsigned long long)h->count, (unsigned long long)h->sum_ns,
		(unsigned long long)h->max_ns);
	jprintf(j, ",\"p50_ns\":%llu,\"p90_ns\":%llu,\"p99_ns\":%llu,\"buckets\":[",
		(unsigned long long)fsnw_histogram_quantile(h, 0.50),
		(unsigned long long)fsnw_histogram_quantile(h, 0.90),
		(unsigned long long)fsnw_histogram_quantile(h, 0.99));
	for (int b = 0; b <= last; b++)
		jprintf(j, "%s%llu", b ? "," : "", (unsigned long long)h->buckets[b]);
	jprintf(j, "]}");
}

int stats_format_json(const struct fsnw_stats *st, char *buf, size_t len)
{
	struct jbuf j = { buf, len, 0 };
	const char *backend = st->backend == FSNW_BACKEND_FANOTIFY ? "fanotify" : "inotify";

	jprintf(&j, "{\"backend\":\"%s\"", backend);
	for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
		uint64_t v;

		memcpy(&v, (const char *)st + counters[i].off, sizeof(v));
		jprintf(&j, ",\"%s\":%llu", counters[i].name, (unsigned long long)v);
	}
	for (size_t i = 0; i < sizeof(histograms) / sizeof(histograms[0]); i++)
		json_histogram(&j, histograms[i].name,
			       (const struct fsnw_histogram *)(const void *)((const char *)st +
									     histograms[i].off));
	jprintf(&j, "}");
	if (len && j.pos >= len)
		buf[len - 1] = '\0';
	return j.pos > INT_MAX ? -EOVERFLOW : (int)j.pos;
}
