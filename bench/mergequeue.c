/* SPDX-License-Identifier: MIT */
/*
 * merge's queue variants: the cost of one enqueue into a merging queue as
 * it grows, on a merge-heavy stream, through the public API only.
 *
 *  queue   the library's queue, driven by fsnw_* calls. K logical watches
 *          on one directory share one kernel watch (dedup), so one kernel
 *          event fans out to K queue entries with distinct keys (wid, mask,
 *          name). Touching M files once each (utimensat: one IN_ATTRIB)
 *          fills the queue to depth D = K * M with unique events; touching
 *          them all again makes D repeats, each of which the library merges
 *          into its unread twin (inotify merges only an event equal to its
 *          own tail, so none of these). The handle's queue is unbounded
 *          (FSNW_QUEUE_UNLIMITED); what is timed is fsnw_pump(), which
 *          drains the kernel queue into it, called after every batch of
 *          at most half the kernel's max_queued_events touches. ns per
 *          enqueue = pump time / (events queued + events merged), from
 *          fsnw_get_stats. The kernel read and decode are shared by the K
 *          entries of an event (K is 64 for depths that allow it): at depth
 *          1024, perf puts about 90% of the library's time in the pump in
 *          the queue (queue_push, its hashing and its index).
 *  linear  a plain linear-scan queue of capacity D (linq.c, the pre-5.13
 *          kernel algorithm) fed the same keys in the same order.
 *
 * Both are checked after each round: every event queued or merged, the
 * events out in order of first occurrence with count 2, no drop.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"
#include "evio.h"
#include "linq.h"
#include "merge.h"

#define FANOUT_MAX 64

/* The library's side of one depth, alive across its rounds as a daemon's
 * queue is: the warm-up round pays for growing it. */
struct qfix {
	struct fsnw *w;
	int dfd;           /* the directory, for utimensat */
	long K, M;         /* watches x names = depth */
	int wid[FANOUT_MAX];
	const struct names *nm;
	long batch;        /* touches between pumps */
	struct fsnw_event *ev;
};

struct qresult {
	double fill, merge, all;
	uint64_t queued, merged, dropped, overflows, kernel;
	bool ok;
};

static void record_q(struct bench *b, const char *variant, long D, int m, const struct qresult *r)
{
	if (m <= 0)
		return;
	bench_record(b, variant, D, m, "enqueue", r->all, "ns/event", r->ok);
	bench_record(b, variant, D, m, "fill", r->fill, "ns/event", r->ok);
	bench_record(b, variant, D, m, "merge", r->merge, "ns/event", r->ok);
	bench_record(b, variant, D, m, "merged", (double)r->merged, "events", r->ok);
	bench_record(b, variant, D, m, "dropped", (double)r->dropped, "events", r->ok);
	bench_record(b, variant, D, m, "overflows", (double)r->overflows, "events", r->ok);
	if (r->kernel)
		bench_record(b, variant, D, m, "kernel-events", (double)r->kernel, "events", r->ok);
}

/* The largest fan-out up to FANOUT_MAX that divides D: the depth is exact. */
static long fanout(long D)
{
	for (long k = D < FANOUT_MAX ? D : FANOUT_MAX; k > 1; k--)
		if (D % k == 0)
			return k;
	return 1;
}

/* Touch every name once, pumping after each batch; the pumps' time is added to *ns. */
static int touch_pass(struct qfix *f, uint64_t *ns)
{
	for (long i = 0; i < f->M; i++) {
		if (utimensat(f->dfd, NAME(f->nm, i), NULL, 0) < 0)
			return -errno;
		if ((i + 1) % f->batch == 0 || i == f->M - 1) {
			uint64_t t0 = now_ns();
			int n = fsnw_pump(f->w);

			*ns += now_ns() - t0;
			if (n < 0)
				return n;
		}
	}
	return 0;
}

static int wid_index(const struct qfix *f, int wid)
{
	for (int k = 0; k < f->K; k++)
		if (f->wid[k] == wid)
			return k;
	return -1;
}

/* Read the queue out (not timed): entry i is name i / K, count 2, each wid M times. */
static bool drain_check(struct qfix *f, long *delivered, long *overflows, uint64_t *sum)
{
	long per_wid[FANOUT_MAX] = { 0 };
	bool order = true;
	int n;

	*delivered = *overflows = 0;
	*sum = 0;
	while ((n = fsnw_read(f->w, f->ev, 4096, 0)) > 0)
		for (int j = 0; j < n; j++) {
			const struct fsnw_event *e = &f->ev[j];
			long i = *delivered;
			int k = wid_index(f, e->wid);

			if (e->mask & FSNW_OVERFLOW) {
				(*overflows)++;
				continue;
			}
			(*delivered)++;
			*sum += e->count;
			if (k < 0 || i / f->K >= f->M || !e->name || e->count != 2 ||
			    strcmp(e->name, NAME(f->nm, i / f->K)))
				order = false;
			else
				per_wid[k]++;
		}
	for (int k = 0; k < f->K; k++)
		order &= per_wid[k] == f->M;
	return order && n == 0;
}

static struct qresult queue_round(struct bench *b, struct qfix *f, long D, int m)
{
	struct qresult r = { .ok = true };
	struct fsnw_stats s0, s1, s2;
	uint64_t tfill = 0, tmerge = 0, sum, q1, m1, q2, m2;
	long delivered, overflows;
	bool order;
	int err;

	lib_stats(f->w, &s0);
	err = touch_pass(f, &tfill);
	lib_stats(f->w, &s1);
	if (!err)
		err = touch_pass(f, &tmerge);
	lib_stats(f->w, &s2);
	q1 = s1.events_queued - s0.events_queued;
	m1 = s1.events_merged - s0.events_merged;
	q2 = s2.events_queued - s1.events_queued;
	m2 = s2.events_merged - s1.events_merged;
	r.queued = q1 + q2;
	r.merged = m1 + m2;
	r.dropped = s2.dropped_queue_full - s0.dropped_queue_full;
	r.kernel = s2.events_read - s0.events_read;
	r.fill = (double)tfill / (double)(q1 + m1 ? q1 + m1 : 1);
	r.merge = (double)tmerge / (double)(q2 + m2 ? q2 + m2 : 1);
	r.all = (double)(tfill + tmerge) / (double)(r.queued + r.merged ? r.queued + r.merged : 1);
	order = drain_check(f, &delivered, &overflows, &sum);
	r.overflows = (uint64_t)overflows;
	if (err || r.kernel != 2 * (uint64_t)f->M || q1 != (uint64_t)D || m1 || q2 ||
	    m2 != (uint64_t)D || r.dropped || overflows || delivered != D || !order ||
	    sum != 2 * (uint64_t)D) {
		bench_fail(b, "queue", D, m, "%llu kernel events for %ld touches; queued %llu + "
			   "%llu, merged %llu + %llu (expected %ld + 0, 0 + %ld); %llu dropped, "
			   "%ld overflows; %ld read out, counts sum %llu, order %s%s%s",
			   (unsigned long long)r.kernel, 2 * f->M, (unsigned long long)q1,
			   (unsigned long long)q2, (unsigned long long)m1, (unsigned long long)m2,
			   D, D, (unsigned long long)r.dropped, overflows, delivered,
			   (unsigned long long)sum, order ? "kept" : "BROKEN", err ? ", " : "",
			   err ? strerror(-err) : "");
		r.ok = false;
	}
	return r;
}

/* The linear queue, emptied before each round; the same keys in the same order. */
static struct qresult linear_round(struct bench *b, struct linq *q, const struct qfix *f,
				   long D, int m)
{
	struct qresult r = { .ok = true };
	uint64_t t[3], sum = 0;
	bool order = true;

	q->n = 0;
	q->overflow = false;
	q->queued = q->merged = q->dropped = 0;
	t[0] = now_ns();
	for (int pass = 0; pass < 2; pass++) {
		for (long i = 0; i < f->M; i++) {
			for (long k = 0; k < f->K; k++)
				linq_push(q, &f->wid[k], FSNW_ATTRIB, NAME(f->nm, i),
					  f->nm->len[i]);
			if (!(i & 63))
				bench_progress(b, "linear D=%ld: pass %d, %ld/%ld", D, pass + 1,
					       i * f->K, D);
		}
		t[pass + 1] = now_ns();
	}
	for (size_t j = 0; j < q->n; j++) {
		sum += q->e[j].count;
		order &= !strcmp(q->e[j].name, NAME(f->nm, (long)j / f->K)) &&
			 q->e[j].owner == &f->wid[(long)j % f->K];
	}
	r.queued = q->queued;
	r.merged = q->merged;
	r.dropped = q->dropped;
	r.overflows = q->overflow;
	r.fill = (double)(t[1] - t[0]) / D;
	r.merge = (double)(t[2] - t[1]) / D;
	r.all = (double)(t[2] - t[0]) / (2.0 * D);
	/* A full scan finds every earlier event: all of the second pass merges. */
	if (r.queued != (uint64_t)D || r.merged != (uint64_t)D || r.dropped || !order ||
	    sum != 2 * (uint64_t)D) {
		bench_fail(b, "linear", D, m, "%llu queued, %llu merged, %llu dropped of %ld; "
			   "order %s", (unsigned long long)r.queued, (unsigned long long)r.merged,
			   (unsigned long long)r.dropped, 2 * D, order ? "kept" : "BROKEN");
		r.ok = false;
	}
	return r;
}

static void qfix_close(struct qfix *f)
{
	fsnw_close(f->w);
	if (f->dfd >= 0)
		close(f->dfd);
	free(f->ev);
}

/* The stream of depth D: K watches x M names, pumped every batch touches. */
static void qfix_init(struct qfix *f, long D, const struct names *nm)
{
	long kmax = read_sysctl("/proc/sys/fs/inotify/max_queued_events");

	memset(f, 0, sizeof(*f));
	f->dfd = -1;
	f->K = fanout(D);
	f->M = D / f->K;
	f->nm = nm;
	f->batch = kmax > 1 ? kmax / 2 : 8192;
}

/* One handle, K watches on dir: 0, or -errno (-EPROTO: a check failed, said). */
static int qfix_open(struct bench *b, struct qfix *f, const char *dir, long D)
{
	struct fsnw_stats st;
	int err;

	f->dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	f->ev = malloc(4096 * sizeof(*f->ev));
	if (f->dfd < 0 || !f->ev)
		return f->dfd < 0 ? -errno : -ENOMEM;
	err = lib_open(&f->w, FSNW_BACKEND_INOTIFY, 0, FSNW_QUEUE_UNLIMITED, 0);
	for (long k = 0; !err && k < f->K; k++) {
		f->wid[k] = fsnw_add(f->w, dir, FSNW_ATTRIB, 0);
		err = f->wid[k] > 0 ? 0 : f->wid[k];
	}
	if (err)
		return err;
	/* One kernel watch for all of them, or the fan-out is not the library's. */
	lib_stats(f->w, &st);
	if (st.kernel_watches != 1 || st.logical_watches != (uint64_t)f->K) {
		bench_fail(b, "queue", D, 0, "%llu kernel watches for %llu logical ones on one "
			   "directory (expected 1 for %ld)", (unsigned long long)st.kernel_watches,
			   (unsigned long long)st.logical_watches, f->K);
		return -EPROTO;
	}
	return 0;
}

static void run_depth(struct bench *b, const char *dir, long D, long linear_max, int warmup,
		      int rounds)
{
	struct names nm;
	struct qfix f;
	int err;

	if (names_make(&nm, D / fanout(D), "q") < 0)
		bench_fatal(b, "out of memory");
	qfix_init(&f, D, &nm);
	err = bench_make_files(b, dir, "q", nm.n, 0);
	if (!err && cli_variant_on(b->o, "queue") && bench_inotify_room(b, "queue", 1))
		err = qfix_open(b, &f, dir, D);
	if (err) {
		if (err != -EPROTO)
			bench_fail(b, "queue", D, 0, "set-up: %s", strerror(-err));
		goto out;
	}
	for (int v = 0; v < 2; v++) {
		const char *name = v ? "linear" : "queue";
		struct linq lq = { 0 };

		if (!cli_variant_on(b->o, name) || (!v && !f.w))
			continue;
		if (v && D > linear_max) {
			fprintf(stderr, "merge: linear at depth %ld not run: a full scan per "
				"event costs ~%.0e comparisons; --linear-max-depth %ld to force\n",
				D, (double)D * (double)D, D);
			continue;
		}
		if (v && linq_init(&lq, (size_t)D) < 0)
			bench_fatal(b, "out of memory");
		for (int r = 0; r < warmup + rounds; r++) {
			struct qresult res;

			bench_progress(b, "%s D=%ld round %d/%d", name, D, r + 1, warmup + rounds);
			res = v ? linear_round(b, &lq, &f, D, r - warmup + 1) :
				  queue_round(b, &f, D, r - warmup + 1);
			record_q(b, name, D, r - warmup + 1, &res);
		}
		linq_fini(&lq);
	}
out:
	qfix_close(&f);
	names_free(&nm);
}

void merge_queues(struct bench *b, const struct long_list *depths, long linear_max)
{
	char dir[4096];
	long most = 0;
	int warmup, rounds, err;

	if (!cli_variant_on(b->o, "queue") && !cli_variant_on(b->o, "linear"))
		return;
	err = bench_mkdir(b, "merge-queue", dir, sizeof(dir));
	if (err) {
		bench_fail(b, "queue", 0, 0, "mkdir: %s", strerror(-err));
		return;
	}
	bench_rounds(b, bench_pick(b, 0, 1, 1, 1), (int)bench_pick(b, 2, 5, 5, 5), &warmup,
		     &rounds);
	bench_pin_self(b, 0);
	for (int k = 0; k < depths->n; k++) {
		long M = depths->v[k] / fanout(depths->v[k]);

		run_depth(b, dir, depths->v[k], linear_max, warmup, rounds);
		most = M > most ? M : most;
	}
	bench_unpin_self(b);
	bench_unlink_files(b, dir, "q", most);
}
