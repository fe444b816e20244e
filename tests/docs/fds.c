/* SPDX-License-Identifier: MIT */
/*
 * How many file descriptors a handle holds after each step of the table in
 * FILE DESCRIPTORS of libfsnwatch(7), counted in /proc/self/fd: prints the
 * table's rows as measured, tab-separated, for fds.sh to compare with the
 * page. Columns: inotify, inotify without the ring (FSNW_NO_IO_URING=1,
 * checked against FSNW_OPEN_NO_RING), fanotify ("-" where it cannot be
 * opened). Each open is also checked against the system calls fsnw_open(3)
 * says it makes. usage: docs-fds DIR (an empty scratch directory)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsnwatch.h"

#define THREADS 20
#define ROWS 6

static const char *const row_names[ROWS] = {
	"fsnw_open(3)", "fsnw_get_fd(3)", "a first watch", "a first tree watch",
	"adds from 20 other threads", "fsnw_close(3)",
};

struct thread_arg {
	struct fsnw *w;
	const char *file;
	pthread_barrier_t *added; /* all threads have added: count now */
	pthread_barrier_t *counted;
	int wid;
};

static int fd_count(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' && atoi(e->d_name) != dirfd(d))
			n++;
	closedir(d);
	return n;
}

static void *adder(void *p)
{
	struct thread_arg *a = p;

	/* An add onto an object the handle watches: this thread's first such
	 * add is what gives it a readiness ring. */
	a->wid = fsnw_add(a->w, a->file, FSNW_ATTRIB, 0);
	pthread_barrier_wait(a->added);
	pthread_barrier_wait(a->counted);
	return NULL;
}

/* Adds from THREADS threads alive at once; counts while they all are. */
static int threads_count(struct fsnw *w, const char *file, int base)
{
	struct thread_arg args[THREADS];
	pthread_t t[THREADS];
	pthread_barrier_t added, counted;
	int n, i, bad = 0;

	pthread_barrier_init(&added, NULL, THREADS + 1);
	pthread_barrier_init(&counted, NULL, THREADS + 1);
	for (i = 0; i < THREADS; i++) {
		args[i] = (struct thread_arg){ w, file, &added, &counted, 0 };
		if (pthread_create(&t[i], NULL, adder, &args[i]) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			exit(1);
		}
	}
	pthread_barrier_wait(&added);
	n = fd_count() - base;
	pthread_barrier_wait(&counted);
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		bad |= args[i].wid <= 0;
	}
	pthread_barrier_destroy(&added);
	pthread_barrier_destroy(&counted);
	if (bad) {
		fprintf(stderr, "an add from a thread failed\n");
		exit(1);
	}
	return n;
}

/*
 * What fsnw_open(3) says opening costs: the group's init call (and capget
 * for fanotify), the eventfd, the ring's setup (io_uring_setup, its mmaps
 * and the arm; a kernel before 6.1 refuses the first setup, one more) and,
 * on x86-64 with timing on, the clock source's open, read and close.
 */
static void check_open_calls(struct fsnw *w, uint32_t backend)
{
	struct fsnw_stats st = { .size = sizeof(st) };
	uint64_t other = backend == FSNW_BACKEND_FANOTIFY ? 2 : 1;
	uint64_t init;

#if defined(__x86_64__)
	other += 3;
#endif
	fsnw_get_stats(w, &st);
	init = backend == FSNW_BACKEND_FANOTIFY ? st.sys_fanotify_init : st.sys_inotify_init;
	if (init != 1 || st.sys_other != other || st.sys_read || st.sys_eventfd ||
	    (st.ring_active ? st.sys_io_uring < 4 || st.sys_io_uring > 5 : st.sys_io_uring != 0)) {
		fprintf(stderr, "fsnw_open made init %llu, other %llu (expected %llu), read %llu, "
			"eventfd %llu, io_uring %llu (ring %d)\n", (unsigned long long)init,
			(unsigned long long)st.sys_other, (unsigned long long)other,
			(unsigned long long)st.sys_read, (unsigned long long)st.sys_eventfd,
			(unsigned long long)st.sys_io_uring, (int)st.ring_active);
		exit(1);
	}
}

/* One column of the table: 0, or -errno when the handle cannot be opened. */
static int column(const char *dir, uint32_t backend, uint32_t flags, int out[ROWS])
{
	struct fsnw_options o = { .size = sizeof(o), .backend = backend, .flags = flags };
	char file[4096], tree[4096];
	int base = fd_count(), ret;
	struct fsnw *w;

	snprintf(file, sizeof(file), "%s/file", dir);
	snprintf(tree, sizeof(tree), "%s/tree", dir);
	ret = fsnw_open(&w, &o);
	if (ret < 0)
		return ret;
	out[0] = fd_count() - base;
	check_open_calls(w, backend);
	if (fsnw_get_fd(w) < 0)
		goto fail;
	out[1] = fd_count() - base;
	if (fsnw_add(w, file, FSNW_MODIFY, 0) <= 0)
		goto fail;
	out[2] = fd_count() - base;
	if (fsnw_add(w, tree, FSNW_CREATE, FSNW_WATCH_TREE) <= 0)
		goto fail;
	out[3] = fd_count() - base;
	out[4] = threads_count(w, file, base);
	fsnw_close(w);
	out[5] = fd_count() - base;
	return 0;
fail:
	fprintf(stderr, "a step of the table failed\n");
	exit(1);
}

static void make_fixture(const char *dir)
{
	char p[4096];
	int fd;

	snprintf(p, sizeof(p), "%s/file", dir);
	fd = open(p, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0 || close(fd) < 0) {
		perror(p);
		exit(1);
	}
	snprintf(p, sizeof(p), "%s/tree", dir);
	if (mkdir(p, 0755) < 0) {
		perror(p);
		exit(1);
	}
	snprintf(p, sizeof(p), "%s/tree/a", dir);
	if (mkdir(p, 0755) < 0) {
		perror(p);
		exit(1);
	}
}

static int ring_of_default_handle(void)
{
	struct fsnw_stats st = { .size = sizeof(st) };
	struct fsnw *w;

	if (fsnw_open(&w, NULL) < 0)
		return -1;
	fsnw_get_stats(w, &st);
	fsnw_close(w);
	return (int)st.ring_active;
}

int main(int argc, char **argv)
{
	int ino[ROWS], noring[ROWS], noflag[ROWS], fan[ROWS], fan_ret;

	if (argc != 2) {
		fprintf(stderr, "usage: docs-fds DIR\n");
		return 2;
	}
	make_fixture(argv[1]);
	if (unsetenv("FSNW_NO_IO_URING") < 0 ||
	    column(argv[1], FSNW_BACKEND_INOTIFY, 0, ino) < 0)
		return 1;
	fan_ret = column(argv[1], FSNW_BACKEND_FANOTIFY, 0, fan);
	if (column(argv[1], FSNW_BACKEND_INOTIFY, FSNW_OPEN_NO_RING, noflag) < 0 ||
	    setenv("FSNW_NO_IO_URING", "1", 1) < 0 ||
	    column(argv[1], FSNW_BACKEND_INOTIFY, 0, noring) < 0)
		return 1;
	if (memcmp(noring, noflag, sizeof(noring))) {
		fprintf(stderr, "FSNW_OPEN_NO_RING and FSNW_NO_IO_URING=1 differ\n");
		return 1;
	}
	unsetenv("FSNW_NO_IO_URING");
	/* Where io_uring is missing or refused, the default handle has no ring:
	 * its column is the one without (fds.sh is told). */
	printf("ring\t%s\n", ring_of_default_handle() == 1 ? "yes" : "no");
	if (fan_ret < 0)
		printf("fanotify\t%s\n", strerror(-fan_ret));
	printf("after\tinotify\tno ring\tfanotify\n");
	for (int i = 0; i < ROWS; i++) {
		char f[16] = "-";

		if (fan_ret == 0)
			snprintf(f, sizeof(f), "%d", fan[i]);
		printf("%s\t%d\t%d\t%s\n", row_names[i], ino[i], noring[i], f);
	}
	return 0;
}
