/* SPDX-License-Identifier: MIT */
/*
 * fsnw-readcost: what fsnw_read costs an event in user space, without the
 * kernel.
 *
 * A developer's instrument beside fsnw-ab. On a shared guest the kernel's
 * part of a read (about 120 ns an event here) drifts by more than the
 * library's whole part, so a change of 1 ns an event cannot be seen with
 * the real read(2). This program defines read() itself: on the handle's
 * inotify group fd it hands back, from memory, the same buffer of 2,000
 * records (IN_ATTRIB on the watched directory, unique names f0..f1999) once
 * a round, and EAGAIN after it; every other fd goes to the C library's
 * read. The library calls read through the PLT, so it gets this one. Each
 * round reads the 2,000 events through fsnw_read (256 at a time, as quick's
 * event read row does) and, for the floor, the same buffer through the
 * same fake read and a walk of its records, as a raw program would parse
 * them. It reports the least ns an event of each over the rounds, and the
 * difference: the library's own work an event, merge check included.
 *
 *   fsnw-readcost [ROUNDS [OPEN_FLAGS [DIRS [COLD_KIB]]]]   (3000; flags as
 *                      fsnw_open's: 2 is FSNW_OPEN_NO_MERGE, 4 NO_STATS)
 *
 * DIRS (0, a plain watch) above 0 watches the directory as a tree that holds
 * DIRS empty subdirectories, and the records name the tree's directories in
 * turn (the root's wd and the subdirectories', 1 to DIRS + 1, as a fresh
 * group hands them out), a record's directory unlike the one before it: the
 * events of a tree in a directory each, as quick's tree read row has them.
 * COLD_KIB (0) above 0 writes that much memory before each round, untimed,
 * as the writer of a live tree does between a daemon's reads: what the
 * library and the floor touch comes from further down the caches (4096,
 * past this machine's L2, is what the batch rows see).
 *
 * The handle is opened with FSNW_OPEN_NO_RING | FSNW_OPEN_NONBLOCK added:
 * the ring's readiness would say (rightly) that the kernel queue is empty.
 * Not installed. Exit status 1 if the handle or a read went wrong, 2 on bad
 * arguments; the scratch directory goes at every exit.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <fsnwatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define EVENTS 2000
#define BATCH 256

static unsigned char records[EVENTS * (sizeof(struct inotify_event) + 16)]
	__attribute__((aligned(8)));
static size_t records_len;
static int group_fd = -1; /* the fd whose reads are answered from records */
static int pending;       /* a round's buffer not yet handed out */
/* The watched directory (mkdtemp), removed at every exit, a failed one's too. */
static char scratch[] = "/dev/shm/fsnw-readcost.XXXXXX";
static bool made;

static long ndirs_made;

static void subdir(char *buf, size_t len, long i)
{
	snprintf(buf, len, "%s/d%ld", scratch, i);
}

static void scratch_remove(void)
{
	char p[sizeof(scratch) + 32];

	for (long i = 0; i < ndirs_made; i++) {
		subdir(p, sizeof(p), i);
		rmdir(p);
	}
	if (made)
		rmdir(scratch);
}

/* The tree's subdirectories, d0 .. d(n-1); -errno. */
static int make_dirs(long n)
{
	char p[sizeof(scratch) + 32];

	for (; ndirs_made < n; ndirs_made++) {
		subdir(p, sizeof(p), ndirs_made);
		if (mkdir(p, 0700) < 0)
			return -errno;
	}
	return 0;
}

/* read(2), answered from memory on the group fd. */
ssize_t read(int fd, void *buf, size_t len)
{
	static ssize_t (*libc_read)(int, void *, size_t);

	if (fd == group_fd && group_fd >= 0) {
		if (!pending || len < records_len) {
			errno = EAGAIN;
			return -1;
		}
		pending = 0;
		memcpy(buf, records, records_len);
		return (ssize_t)records_len;
	}
	if (!libc_read)
		libc_read = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	return libc_read(fd, buf, len);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "fsnw-readcost: %s\n", what);
	exit(1);
}

/* The records of one round: on wds 1 to nwd in turn (a fresh group's first). */
static void make_records(int nwd)
{
	for (int i = 0; i < EVENTS; i++) {
		struct inotify_event *ev = (struct inotify_event *)(void *)(records + records_len);

		ev->wd = 1 + i % nwd;
		ev->mask = IN_ATTRIB;
		ev->cookie = 0;
		ev->len = 16;
		memset(ev->name, 0, 16);
		snprintf(ev->name, 16, "f%d", i);
		records_len += sizeof(*ev) + 16;
	}
}

/* The handle's inotify group fd: the one fd of this process that is one. */
static int find_group_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int found = -1;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		char link[300], target[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/self/fd/%s", de->d_name);
		n = readlink(link, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		if (strstr(target, "inotify"))
			found = atoi(de->d_name);
	}
	closedir(d);
	return found;
}

/* Write len bytes of buf: what the caches held before is pushed out. */
static void evict_caches(unsigned char *buf, size_t len)
{
	static unsigned char v;

	if (!buf)
		return;
	memset(buf, ++v, len);
	__asm__ volatile("" : : "r"(buf) : "memory");
}

static double lib_round(struct fsnw *w)
{
	struct fsnw_event evs[BATCH];
	uint64_t t0;
	long got = 0;

	pending = 1;
	t0 = now_ns();
	while (got < EVENTS) {
		int n = fsnw_read(w, evs, BATCH, 0);

		if (n <= 0)
			die("fsnw_read returned no events before the round's last");
		for (int i = 0; i < n; i++)
			if (!(evs[i].mask & FSNW_ATTRIB) || !evs[i].name)
				die("fsnw_read returned an event that was not read");
		got += n;
	}
	if (got != EVENTS)
		die("fsnw_read returned more events than were read");
	return (double)(now_ns() - t0) / EVENTS;
}

static double raw_round(void)
{
	static unsigned char buf[sizeof(records)] __attribute__((aligned(8)));
	uint64_t t0;
	long got = 0;

	pending = 1;
	t0 = now_ns();
	while (got < EVENTS) {
		ssize_t len = read(group_fd, buf, sizeof(buf));

		if (len <= 0)
			die("the floor's read returned nothing");
		for (unsigned char *p = buf; p < buf + len;) {
			struct inotify_event *ev = (struct inotify_event *)(void *)p;

			if (!(ev->mask & IN_ATTRIB) || !ev->len || !ev->name[0])
				die("the floor read a record that was not made");
			got++;
			p += sizeof(*ev) + ev->len;
		}
	}
	pending = 0;
	return (double)(now_ns() - t0) / EVENTS;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? strtol(argv[1], NULL, 10) : 3000;
	long flags = argc > 2 ? strtol(argv[2], NULL, 0) : 0;
	long dirs = argc > 3 ? strtol(argv[3], NULL, 10) : 0;
	long cold = argc > 4 ? strtol(argv[4], NULL, 10) : 0;
	struct fsnw_options o = { .size = sizeof(o) };
	double lib = 1e30, raw = 1e30;
	unsigned char *evict = NULL;
	struct fsnw *w;
	int wid, err;

	if (argc > 5 || rounds < 1 || rounds > 10000000 || flags < 0 || flags > 0xffff ||
	    dirs < 0 || dirs > 1000 || cold < 0 || cold > 1 << 20) {
		fprintf(stderr, "usage: fsnw-readcost [ROUNDS [OPEN_FLAGS [DIRS [COLD_KIB]]]]\n");
		return 2;
	}
	if (!mkdtemp(scratch))
		die("mkdtemp in /dev/shm failed");
	made = true;
	atexit(scratch_remove);
	if (make_dirs(dirs) < 0)
		die("making the tree's directories failed");
	o.flags = (uint32_t)flags | FSNW_OPEN_NO_RING | FSNW_OPEN_NONBLOCK;
	err = fsnw_open(&w, &o);
	if (err < 0)
		die("fsnw_open failed");
	wid = fsnw_add(w, scratch, FSNW_ATTRIB, dirs ? FSNW_WATCH_TREE : 0);
	group_fd = find_group_fd();
	if (wid <= 0 || group_fd < 0)
		die("no watch, or no inotify group fd found");
	/* A fresh group's first watch descriptor is 1; a tree's go on from there. */
	make_records(1 + (int)dirs);
	if (cold && !(evict = malloc((size_t)cold * 1024)))
		die("no memory to evict the caches with");
	for (long r = 0; r < rounds; r++) {
		double l, f;

		evict_caches(evict, (size_t)cold * 1024);
		l = lib_round(w);
		evict_caches(evict, (size_t)cold * 1024);
		f = raw_round();

		lib = l < lib ? l : lib;
		raw = f < raw ? f : raw;
	}
	printf("fsnw-readcost: %ld rounds of %d events, open flags 0x%lx%s%s: library %.1f ns "
	       "an event, floor %.1f, library's own %.1f\n", rounds, EVENTS, flags,
	       dirs ? ", a tree" : "", cold ? ", caches cold" : "", lib, raw, lib - raw);
	free(evict);
	group_fd = -1;
	fsnw_close(w);
	return 0;
}
