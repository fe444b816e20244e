/* SPDX-License-Identifier: MIT */
/*
 * A storm with nothing lost. Writer threads create, write, close, rename
 * (into another directory) and mostly delete FSNW_STORM_FILES files
 * (default 100000) in a tree of four directories under one tree watch,
 * while the reader is deliberately slow and the queue holds 256 events.
 *
 * The reader keeps a ledger per file and a model of the tree. It applies
 * every event to the model and, on FSNW_OVERFLOW, rescans the tree as
 * fsnw-tree does. In the end:
 * - every file is accounted for: each event of its life (create, modify,
 *   close, moved from, moved to, delete) arrived, in order, or an
 *   FSNW_OVERFLOW arrived between the neighbours of the gap; nothing else
 *   arrived for it; a move's halves share their cookie; merged modify
 *   counts add up to no more than the writes;
 * - the model equals the real final tree;
 * - the counts add up: the counts of the delivered events are exactly the
 *   events queued plus merged, and the overflow counts exactly the drops
 *   plus the kernel overflows (plus directories a tree could not follow);
 * - memory stays bounded: queue_high_water <= capacity + 1 + watches, and
 *   the resident set grows by little; the fd table is the same after close.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hardening.h"
#include "test-common.h"

#define NDIRS 4
#define NWRITERS 2
#define CAPACITY 256
#define WRITES 2      /* writes per file: MODIFY counts add up to at most this */
#define KEEP_EVERY 10 /* every tenth file survives */
#define MAXOBS 12
#define RSS_GROWTH_MAX (16 << 20)

enum kind { K_CREATE, K_MODIFY, K_CLOSE, K_MFROM, K_MTO, K_DELETE, K_NKINDS };

struct obs {
	uint8_t kind;
	uint8_t dir;
	uint32_t count;
	uint32_t cookie;
	uint64_t pos; /* index in the event stream */
};

struct file {
	struct obs obs[MAXOBS];
	uint8_t nobs;
	bool overfull;   /* more events than any life has: a failure */
	int8_t f_dir;    /* model: the directory holding f<i>, or -1 */
	int8_t g_dir;    /* model: the directory holding g<i>, or -1 */
};

struct storm {
	char *root;
	char dirs[NDIRS][PATH_MAX];
	long nfiles;
	struct file *files;
	uint64_t *ovf_pos; /* stream positions of the FSNW_OVERFLOW events */
	size_t novf, ovf_cap;
	uint64_t pos;
	uint64_t ovf_count;   /* sum of their counts */
	uint64_t count_sum;   /* sum of the counts of the other events */
	uint64_t rescans, events, bad;
	bool done_seen;
	atomic_int writer_error;
	atomic_long next;     /* the next file a writer takes */
	char errmsg[256];
};

static int dir_a(long i)
{
	return (int)(i % NDIRS);
}

static int dir_b(long i)
{
	return (int)((i + 1 + (i / NDIRS) % (NDIRS - 1)) % NDIRS);
}

static bool kept(long i)
{
	return i % KEEP_EVERY == 0;
}

/* ---- writers ---- */

static void writer_fail(struct storm *s, const char *what, long i)
{
	if (atomic_exchange(&s->writer_error, errno ? errno : -1) == 0)
		snprintf(s->errmsg, sizeof(s->errmsg), "%s of file %ld: %s", what, i,
			 strerror(errno));
}

static void *writer(void *arg)
{
	struct storm *s = arg;
	char a[PATH_MAX + 32], b[PATH_MAX + 32];

	for (;;) {
		long i = atomic_fetch_add(&s->next, 1);
		int fd;

		if (i >= s->nfiles || atomic_load(&s->writer_error))
			return NULL;
		snprintf(a, sizeof(a), "%s/f%ld", s->dirs[dir_a(i)], i);
		snprintf(b, sizeof(b), "%s/g%ld", s->dirs[dir_b(i)], i);
		fd = open(a, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd < 0) {
			writer_fail(s, "create", i);
			return NULL;
		}
		for (int k = 0; k < WRITES; k++) {
			if (write(fd, "x", 1) != 1) {
				writer_fail(s, "write", i);
				close(fd);
				return NULL;
			}
		}
		close(fd);
		if (rename(a, b) < 0) {
			writer_fail(s, "rename", i);
			return NULL;
		}
		if (!kept(i) && unlink(b) < 0) {
			writer_fail(s, "unlink", i);
			return NULL;
		}
	}
}

/* ---- the reader's model ---- */

/* f<i> or g<i>: the file index, and which of the two names. */
static long parse_name(const struct storm *s, const char *name, bool *is_g)
{
	char *end;
	long i;

	if (!name || (name[0] != 'f' && name[0] != 'g') || !name[1])
		return -1;
	i = strtol(name + 1, &end, 10);
	if (*end || i < 0 || i >= s->nfiles)
		return -1;
	*is_g = name[0] == 'g';
	return i;
}

static int parse_dir(const struct storm *s, const char *path)
{
	for (int k = 0; k < NDIRS; k++)
		if (path && !strcmp(path, s->dirs[k]))
			return k;
	return -1;
}

/* files[] becomes what is on disk now: a rescan, as fsnw-tree does it. */
static void scan(struct storm *s, struct file *files)
{
	for (long i = 0; i < s->nfiles; i++)
		files[i].f_dir = files[i].g_dir = -1;
	for (int k = 0; k < NDIRS; k++) {
		DIR *d = opendir(s->dirs[k]);
		struct dirent *e;

		ck_assert_ptr_nonnull(d);
		while ((e = readdir(d))) {
			bool is_g;
			long i = parse_name(s, e->d_name, &is_g);

			if (i < 0)
				continue;
			if (is_g)
				files[i].g_dir = (int8_t)k;
			else
				files[i].f_dir = (int8_t)k;
		}
		closedir(d);
	}
}

static void rescan(struct storm *s)
{
	scan(s, s->files);
	if (!s->done_seen) {
		char p[PATH_MAX + 8];

		snprintf(p, sizeof(p), "%s/done", s->root);
		s->done_seen = access(p, F_OK) == 0;
	}
	s->rescans++;
}

static void bad(struct storm *s, const struct fsnw_event *ev, const char *why)
{
	if (s->bad++ < 10)
		fprintf(stderr, "storm: %s: wid %d mask %#x path %s name %s\n", why, ev->wid,
			ev->mask, ev->path ? ev->path : "-", ev->name ? ev->name : "-");
}

static void handle_event(struct storm *s, int tree, const struct fsnw_event *ev)
{
	uint32_t mask = ev->mask & ~FSNW_SYNTHETIC;
	uint64_t pos = s->pos++;
	struct file *f;
	enum kind kind;
	bool is_g;
	long i;
	int dir;

	s->events++;
	if (mask == FSNW_OVERFLOW) {
		if (ev->wid != 0)
			bad(s, ev, "overflow with a wid");
		if (s->novf == s->ovf_cap) {
			s->ovf_cap = s->ovf_cap ? 2 * s->ovf_cap : 1024;
			s->ovf_pos = realloc(s->ovf_pos, s->ovf_cap * sizeof(*s->ovf_pos));
			ck_assert_ptr_nonnull(s->ovf_pos);
		}
		s->ovf_pos[s->novf++] = pos;
		s->ovf_count += ev->count;
		rescan(s);
		return;
	}
	s->count_sum += ev->count;
	if (ev->wid != tree || ev->count < 1) {
		bad(s, ev, "event for another wid");
		return;
	}
	if (ev->name && !strcmp(ev->name, "done") && ev->path && !strcmp(ev->path, s->root)) {
		s->done_seen = true;
		return;
	}
	i = parse_name(s, ev->name, &is_g);
	dir = parse_dir(s, ev->path);
	if (i < 0 || dir < 0) {
		bad(s, ev, "event about nothing the writers made");
		return;
	}
	f = &s->files[i];
	switch (mask) {
	case FSNW_CREATE:
		kind = K_CREATE;
		break;
	case FSNW_MODIFY:
		kind = K_MODIFY;
		break;
	case FSNW_CLOSE_WRITE:
		kind = K_CLOSE;
		break;
	case FSNW_MOVED_FROM:
		kind = K_MFROM;
		break;
	case FSNW_MOVED_TO:
		kind = K_MTO;
		break;
	case FSNW_DELETE:
		kind = K_DELETE;
		break;
	default:
		bad(s, ev, "unexpected mask");
		return;
	}
	/* The model: a name appears or goes. */
	if (kind == K_CREATE || kind == K_MTO) {
		if (is_g)
			f->g_dir = (int8_t)dir;
		else
			f->f_dir = (int8_t)dir;
	} else if (kind == K_MFROM || kind == K_DELETE) {
		if (is_g && f->g_dir == dir)
			f->g_dir = -1;
		else if (!is_g && f->f_dir == dir)
			f->f_dir = -1;
	}
	/* The ledger: the name tells which life stage it is about. */
	if (is_g != (kind == K_MTO || kind == K_DELETE)) {
		bad(s, ev, "event for the wrong name of its file");
		return;
	}
	if (f->nobs == MAXOBS) {
		f->overfull = true;
		return;
	}
	f->obs[f->nobs++] = (struct obs){ (uint8_t)kind, (uint8_t)dir, ev->count, ev->cookie, pos };
}

/* Is there an overflow in the stream strictly between positions lo and hi? */
static bool overflow_between(const struct storm *s, int64_t lo, int64_t hi)
{
	size_t a = 0, b = s->novf;

	while (a < b) { /* the first overflow after lo */
		size_t m = (a + b) / 2;

		if ((int64_t)s->ovf_pos[m] <= lo)
			a = m + 1;
		else
			b = m;
	}
	return a < s->novf && (int64_t)s->ovf_pos[a] < hi;
}

/* The ledger of one file against its life; returns a reason, or NULL. */
static const char *check_file(const struct storm *s, long i, bool *complete)
{
	static const enum kind life[] = { K_CREATE, K_MODIFY, K_CLOSE, K_MFROM, K_MTO, K_DELETE };
	const struct file *f = &s->files[i];
	int nlife = kept(i) ? 5 : 6, e = 0;
	int64_t prev = -1;
	uint32_t modifies = 0, cookie_from = 0;
	bool have_from = false;

	*complete = true;
	if (f->overfull)
		return "more events than its life has";
	for (int k = 0; k < f->nobs; k++) {
		const struct obs *o = &f->obs[k];
		int want_dir = o->kind == K_MTO || o->kind == K_DELETE ? dir_b(i) : dir_a(i);

		if (o->dir != want_dir)
			return "event in the wrong directory";
		if (o->kind == K_MODIFY && e > 0 && life[e - 1] == K_MODIFY) {
			/* Another modify event: the first was read before this one came. */
			modifies += o->count;
			prev = (int64_t)o->pos;
			continue;
		}
		while (e < nlife && life[e] != o->kind) {
			/* A gap: it must be covered by an overflow. */
			*complete = false;
			if (!overflow_between(s, prev, (int64_t)o->pos))
				return "an event missing with no overflow before the gap";
			e++;
		}
		if (e == nlife)
			return "an event out of order or twice";
		e++;
		if (o->kind == K_MODIFY)
			modifies += o->count;
		if (o->kind == K_MFROM) {
			have_from = true;
			cookie_from = o->cookie;
			if (!o->cookie)
				return "a move without a cookie";
		}
		if (o->kind == K_MTO && have_from && o->cookie != cookie_from)
			return "the halves of a move with different cookies";
		prev = (int64_t)o->pos;
	}
	if (e < nlife) {
		*complete = false;
		if (!overflow_between(s, prev, INT64_MAX))
			return "its last events missing with no overflow after the last one";
	}
	if (modifies > WRITES)
		return "modify counts add up to more than the writes";
	return NULL;
}

static long rss_bytes(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%ld %ld", &pages, &rss), 2);
	fclose(f);
	return rss * sysconf(_SC_PAGESIZE);
}

static long storm_files(void)
{
	const char *env = getenv("FSNW_STORM_FILES");

	if (env)
		return atol(env);
	/* memcheck runs this some fifty times slower: a smaller storm there. */
	return on_valgrind() ? 20000 : 100000;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(storm_nothing_lost)
{
	static struct storm s;
	pthread_t writers[NWRITERS];
	struct fsnw_event evs[64];
	struct fsnw_stats st;
	struct fsnw *w;
	long rss0, rss1, complete = 0, covered = 0;
	bool joined = false;
	int fds, tree, n;
	double t0, t1;

	memset(&s, 0, sizeof(s));
	s.nfiles = storm_files();
	ck_assert_int_gt(s.nfiles, 0);
	s.root = tmpdir_make();
	for (int k = 0; k < NDIRS; k++) {
		char name[8];

		snprintf(name, sizeof(name), "d%d", k);
		make_dir(s.root, name);
		pjoin(s.dirs[k], s.root, name);
	}
	/* The ledger is touched now, so it is not counted as growth below. */
	s.files = calloc((size_t)s.nfiles, sizeof(*s.files));
	ck_assert_ptr_nonnull(s.files);
	memset(s.files, 0, (size_t)s.nfiles * sizeof(*s.files));
	for (long i = 0; i < s.nfiles; i++)
		s.files[i].f_dir = s.files[i].g_dir = -1;
	s.ovf_cap = 1 << 16;
	s.ovf_pos = malloc(s.ovf_cap * sizeof(*s.ovf_pos));
	ck_assert_ptr_nonnull(s.ovf_pos);
	memset(s.ovf_pos, 0, s.ovf_cap * sizeof(*s.ovf_pos));

	fds = fd_count();
	w = test_open(0, CAPACITY, 0);
	tree = fsnw_add(w, s.root,
			FSNW_CREATE | FSNW_MODIFY | FSNW_CLOSE_WRITE | FSNW_MOVE | FSNW_DELETE,
			FSNW_WATCH_TREE);
	ck_assert_int_gt(tree, 0);
	rss0 = rss_bytes();

	t0 = now_s();
	for (int t = 0; t < NWRITERS; t++)
		ck_assert_int_eq(pthread_create(&writers[t], NULL, writer, &s), 0);
	/* The slow reader: a few events at a time, a pause after each read, and
	 * now and then a long one in which the kernel queue overflows too. */
	for (long reads = 1; !s.done_seen; reads++) {
		struct timespec pause = { 0, reads % 1000 ? 20 * 1000 : 150 * 1000 * 1000 };

		n = fsnw_read(w, evs, 64, 100);
		ck_assert_int_ge(n, 0);
		for (int k = 0; k < n; k++)
			handle_event(&s, tree, &evs[k]);
		nanosleep(&pause, NULL);
		if (!joined && (atomic_load(&s.next) >= s.nfiles + NWRITERS ||
				atomic_load(&s.writer_error))) {
			/* Every writer has taken its last file: join them and say so. */
			for (int t = 0; t < NWRITERS; t++)
				pthread_join(writers[t], NULL);
			joined = true;
			ck_assert_msg(!atomic_load(&s.writer_error), "writer: %s", s.errmsg);
			touch(s.root, "done");
		}
	}
	/* Quiet now: read what is left until nothing is. */
	for (;;) {
		ck_assert_int_ge(fsnw_pump(w), 0);
		n = fsnw_read(w, evs, 16, 0);
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		for (int k = 0; k < n; k++)
			handle_event(&s, tree, &evs[k]);
	}
	t1 = now_s();
	rss1 = rss_bytes();
	st = stats_of(w);

	/* Every file accounted for. */
	ck_assert_uint_eq(s.bad, 0);
	for (long i = 0; i < s.nfiles; i++) {
		bool whole;
		const char *why = check_file(&s, i, &whole);

		if (why) {
			fprintf(stderr, "storm: file %ld: %s; its events:\n", i, why);
			for (int k = 0; k < s.files[i].nobs; k++)
				fprintf(stderr, "  kind %d dir %d count %u cookie %u pos %llu\n",
					s.files[i].obs[k].kind, s.files[i].obs[k].dir,
					s.files[i].obs[k].count, s.files[i].obs[k].cookie,
					(unsigned long long)s.files[i].obs[k].pos);
		}
		ck_assert_msg(why == NULL, "file %ld: %s", i, why);
		if (whole)
			complete++;
		else
			covered++;
	}
	/* The model is the real final tree. */
	for (long i = 0; i < s.nfiles; i++) {
		const struct file *f = &s.files[i];

		ck_assert_msg(f->f_dir == -1, "model: f%ld still in d%d", i, f->f_dir);
		ck_assert_msg(f->g_dir == (kept(i) ? dir_b(i) : -1), "model: g%ld in %d, want %d",
			      i, f->g_dir, kept(i) ? dir_b(i) : -1);
	}
	{
		/* And the real tree is what the writers left (a scan of it). */
		struct file *real = calloc((size_t)s.nfiles, sizeof(*real));

		ck_assert_ptr_nonnull(real);
		scan(&s, real);
		for (long i = 0; i < s.nfiles; i++) {
			ck_assert_int_eq(real[i].f_dir, s.files[i].f_dir);
			ck_assert_int_eq(real[i].g_dir, s.files[i].g_dir);
		}
		free(real);
	}
	/* The counts add up, exactly. */
	ck_assert_uint_eq(st.queue_depth, 0);
	ck_assert_uint_eq(s.count_sum, st.events_queued + st.events_merged);
	ck_assert_uint_eq(s.ovf_count,
			  st.dropped_queue_full + st.overflows_kernel + st.overflows_unwatched);
	ck_assert_uint_eq(st.events_delivered, st.events_queued + s.novf);
	/* Memory bounded by the capacity. */
	ck_assert_uint_le(st.queue_high_water, CAPACITY + 1 + st.logical_watches);
	/* The resident set says little under ASan (quarantine, shadow) or
	 * memcheck; there the high-water bound above and their leak checks do. */
	if (!slow_runtime())
		ck_assert_int_le(rss1 - rss0, RSS_GROWTH_MAX);

	fprintf(stderr,
		"storm: %ld files in %.1f s; %ld with every event, %ld covered by overflow; "
		"events read %llu, queued %llu, merged %llu, delivered %llu (%llu reads of "
		"the caller), dropped (queue full) %llu, overflows: queue %llu, kernel %llu, "
		"overflow events read %zu, rescans %llu; queue high water %llu; RSS +%ld KiB\n",
		s.nfiles, t1 - t0, complete, covered, (unsigned long long)st.events_read,
		(unsigned long long)st.events_queued, (unsigned long long)st.events_merged,
		(unsigned long long)st.events_delivered, (unsigned long long)s.events,
		(unsigned long long)st.dropped_queue_full, (unsigned long long)st.overflows_queue,
		(unsigned long long)st.overflows_kernel, s.novf, (unsigned long long)s.rescans,
		(unsigned long long)st.queue_high_water, (rss1 - rss0) / 1024);

	fsnw_close(w);
	ck_assert_int_eq(fd_count(), fds);
	free(s.files);
	free(s.ovf_pos);
	tmpdir_remove(s.root);
}
END_TEST

TEST_SUITE(storm)
{
	Suite *s = suite_create("storm");
	TCase *tc = tcase_create("storm_nothing_lost");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, storm_nothing_lost);
	suite_add_tcase(s, tc);
	return s;
}
