/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "handle.h"
#include "hardening.h"
#include "test-common.h"

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef RUNNING_ON_VALGRIND
#define RUNNING_ON_VALGRIND 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define HAVE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HAVE_ASAN 1
#endif
#endif
#ifndef HAVE_ASAN
#define HAVE_ASAN 0
#endif

int kernel_marks(const struct fsnw *w)
{
	const char *tag = w->be->id == FSNW_BACKEND_FANOTIFY ? "fanotify " : "inotify wd:";
	char path[64], line[512];
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", w->kfd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/* One line per mark ("inotify wd:", "fanotify ino:"/"mnt_id:"/"sdev:");
	 * fanotify also has a line for the group itself. */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, tag, strlen(tag)) && strncmp(line, "fanotify flags:", 15))
			n++;
	fclose(f);
	return n;
}

bool on_valgrind(void)
{
	return RUNNING_ON_VALGRIND;
}

bool slow_runtime(void)
{
	return RUNNING_ON_VALGRIND || HAVE_ASAN;
}

size_t heap_in_use(void)
{
	const char *t = getenv("GLIBC_TUNABLES");

	/* glibc's per-thread cache holds freed chunks that mallinfo2 counts as
	 * in use: the figure is exact only with the cache off. */
	if (slow_runtime() || !t || !strstr(t, "tcache_count=0"))
		return 0;
	return mallinfo2().uordblks;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		ret = -errno;
	close(fd);
	return ret;
}

static int enter_userns(unsigned flags)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (unshare(CLONE_NEWUSER | ((flags & CHILD_MOUNTNS) ? CLONE_NEWNS : 0)) < 0)
		return -errno;
	/* Map ourselves to root inside: the limits there are root's to set. */
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
	if (write_file("/proc/self/uid_map", map) < 0)
		return -errno;
	snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return -errno;
	/* The kernel ignores source and type here; valgrind wants strings. */
	if ((flags & CHILD_MOUNTNS) && mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0)
		return -errno;
	return 0;
}

static void set_limit(const char *name, int value)
{
	char path[128], s[32];
	int ret;

	snprintf(path, sizeof(path), "/proc/sys/user/%s", name);
	snprintf(s, sizeof(s), "%d", value);
	ret = write_file(path, s);
	CHILD_CHECK(ret == 0, "set %s to %d: %s", path, value, strerror(-ret));
}

int run_child(unsigned flags, const struct child_limits *lim, int (*fn)(void *), void *arg)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	ck_assert_msg(pid >= 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		if (flags & CHILD_USERNS) {
			int ret = enter_userns(flags);

			if (ret < 0) {
				fprintf(stderr, "no user namespace: %s\n", strerror(-ret));
				exit(77);
			}
		}
		if (lim && lim->max_watches)
			set_limit("max_inotify_watches", lim->max_watches);
		if (lim && lim->max_instances)
			set_limit("max_inotify_instances", lim->max_instances);
		/* exit, not _exit: LeakSanitizer and valgrind check the child too. */
		exit(fn(arg));
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

bool userns_available(void)
{
	pid_t pid;
	int status;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return false;
	if (pid == 0)
		_exit(enter_userns(CHILD_USERNS | CHILD_MOUNTNS) == 0 ? 0 : 1);
	if (waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct fsnw_stats child_stats(struct fsnw *w)
{
	struct fsnw_stats st;

	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	CHILD_CHECK(fsnw_get_stats(w, &st) == 0, "fsnw_get_stats");
	return st;
}

struct fsnw *child_open(uint32_t idle)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = test_backend, .idle_watches = idle };
	struct fsnw *w = NULL;
	int ret = fsnw_open(&w, &o);

	CHILD_CHECK(ret == 0, "fsnw_open: %s", strerror(-ret));
	return w;
}

void child_touch(const char *dir, const char *name)
{
	char p[PATH_MAX + 256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	CHILD_CHECK(fd >= 0, "create %s: %s", p, strerror(errno));
	close(fd);
}

void child_mkdir(const char *dir, const char *name)
{
	char p[PATH_MAX + 256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	CHILD_CHECK(mkdir(p, 0755) == 0, "mkdir %s: %s", p, strerror(errno));
}
