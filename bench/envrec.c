/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "envrec.h"
#include "fsnwatch.h"

#include "commit.h"

#ifndef FSNW_BENCH_VERSION
#define FSNW_BENCH_VERSION "unknown"
#endif
#ifndef FSNW_BENCH_BUILDTYPE
#define FSNW_BENCH_BUILDTYPE "unknown"
#endif
#ifdef __clang__
#define COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define COMPILER "gcc " __VERSION__
#else
#define COMPILER "unknown"
#endif

static const struct {
	unsigned long magic;
	const char *name;
} magics[] = {
	{ 0x01021994, "tmpfs" }, { 0xef53, "ext4" },      { 0x58465342, "xfs" },
	{ 0x9123683e, "btrfs" }, { 0x794c7630, "overlay" }, { 0x2fc12fc1, "zfs" },
	{ 0x6969, "nfs" },      { 0x65735546, "fuse" },    { 0x858458f6, "ramfs" },
	{ 0xf2f52010, "f2fs" }, { 0x62656572, "sysfs" },   { 0x9fa0, "proc" },
};

const char *fs_magic_name(unsigned long magic)
{
	for (size_t i = 0; i < sizeof(magics) / sizeof(magics[0]); i++)
		if (magics[i].magic == magic)
			return magics[i].name;
	return "unknown";
}

/* First line of a file, newline removed; "?" when unreadable. */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	snprintf(buf, len, "?");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "?");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		/* x86 says "model name", arm64 and others "CPU part" or "Processor". */
		if (colon && (!strncmp(line, "model name", 10) || !strncmp(line, "Processor", 9))) {
			colon++;
			while (*colon == ' ' || *colon == '\t')
				colon++;
			colon[strcspn(colon, "\n")] = '\0';
			snprintf(buf, len, "%s", colon);
			break;
		}
	}
	fclose(f);
}

static void cpu_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE && off < len; c++) {
		int end = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		off += (size_t)snprintf(buf + off, len - off, "%s%d", off ? "," : "", c);
		if (end > c && off < len)
			off += (size_t)snprintf(buf + off, len - off, "-%d", end);
		c = end;
	}
}

/* Look for a slab cache by name in /proc/slabinfo and /sys/kernel/slab. Merged
 * caches are missing from slabinfo but keep an alias link in sysfs. */
static int slab_find(const char *name, char *where, size_t len)
{
	char path[256], target[200], line[512];
	FILE *f = fopen("/proc/slabinfo", "r");
	size_t n = strlen(name);
	ssize_t tl;

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			if (!strncmp(line, name, n) && (line[n] == ' ' || line[n] == '\t')) {
				fclose(f);
				snprintf(where, len, "/proc/slabinfo");
				return 1;
			}
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/sys/kernel/slab/%s", name);
	tl = readlink(path, target, sizeof(target) - 1);
	if (tl > 0) {
		target[tl] = '\0';
		snprintf(where, len, "/sys/kernel/slab, merged into %s",
			 strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
		return 1;
	}
	if (access(path, F_OK) == 0) {
		snprintf(where, len, "/sys/kernel/slab");
		return 1;
	}
	return 0;
}

void connector_probe(char *buf, size_t len, char *verdict, size_t vlen)
{
	char w1[320], w2[320];
	int inode = slab_find("fsnotify_inode_mark_connector", w1, sizeof(w1));
	int plain = slab_find("fsnotify_mark_connector", w2, sizeof(w2));
	bool can_look = access("/proc/slabinfo", R_OK) == 0 ||
			access("/sys/kernel/slab", F_OK) == 0;

	snprintf(buf, len, "fsnotify_inode_mark_connector: %s%s%s; fsnotify_mark_connector: %s%s%s",
		 inode ? "present (" : "absent", inode ? w1 : "", inode ? ")" : "",
		 plain ? "present (" : "absent", plain ? w2 : "", plain ? ")" : "");
	if (!can_look)
		snprintf(verdict, vlen, "unknown (no /proc/slabinfo or /sys/kernel/slab)");
	else if (inode)
		snprintf(verdict, vlen, "yes");
	else
		snprintf(verdict, vlen, "no");
}

static void put(FILE *f, const char *key, const char *value)
{
	fprintf(f, "%s=", key);
	for (const char *p = value; *p; p++)
		fputc(*p == '\n' ? ' ' : *p, f);
	fputc('\n', f);
}

/*
 * Which scales ran with more busy threads than CPUs: "churn workers 4,8;
 * parent-write clients 4 (2 CPUs)", or "no". The rows carry it too.
 */
static void put_oversub(FILE *f, const struct bench *b)
{
	char buf[1024];
	size_t off = 0;
	const char *last = NULL;

	buf[0] = '\0';
	for (size_t i = 0; i < b->nrows && off < sizeof(buf); i++) {
		const struct row *r = &b->rows[i];
		bool seen = false;

		if (!r->oversub)
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = b->rows[j].oversub && b->rows[j].workers == r->workers &&
			       !strcmp(b->rows[j].scenario, r->scenario);
		if (seen)
			continue;
		if (last && !strcmp(last, r->scenario))
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, ",%ld", r->workers);
		else
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s at %ld",
						last ? "; " : "", r->scenario, r->workers);
		last = r->scenario;
	}
	if (!last) {
		put(f, "oversubscribed", "no");
		return;
	}
	if (off < sizeof(buf))
		snprintf(buf + off, sizeof(buf) - off, " (more busy threads than the %d CPUs)",
			 bench_cpus(b));
	put(f, "oversubscribed", buf);
}

static void put_sysctl(FILE *f, const char *name)
{
	char path[256], key[128], value[64];

	snprintf(path, sizeof(path), "/proc/sys/%s", name);
	for (size_t i = 0; name[i]; i++)
		path[10 + i] = name[i] == '.' ? '/' : name[i];
	read_line(path, value, sizeof(value));
	snprintf(key, sizeof(key), "sysctl.%s", name);
	put(f, key, value);
}

int envrec_write(const char *path, const struct bench *b)
{
	FILE *f = fopen(path, "w");
	char buf[4096], verdict[128];
	struct utsname u;
	struct statfs sfs;
	time_t t = time(NULL);
	struct tm tm;
	size_t off = 0;
	int err;

	if (!f)
		return -errno;
	put(f, "fsnw_bench_version", FSNW_BENCH_VERSION);
	put(f, "commit", FSNW_BENCH_COMMIT);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
	put(f, "date", buf);
	buf[0] = '\0';
	for (int i = 0; i < b->o->argc && off < sizeof(buf); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%s", i ? " " : "",
					b->o->argv[i]);
	put(f, "command", buf);
	put(f, "size", b->o->size_name);
	if (uname(&u) == 0) {
		put(f, "kernel_release", u.release);
		put(f, "kernel_version", u.version);
		put(f, "machine", u.machine);
	}
	read_line("/proc/sys/kernel/random/boot_id", buf, sizeof(buf));
	put(f, "boot_id", buf);
	read_line("/proc/cmdline", buf, sizeof(buf));
	put(f, "cmdline", buf);
	read_line("/sys/devices/system/cpu/online", buf, sizeof(buf));
	put(f, "cpus_online", buf);
	cpu_list(&b->affinity, buf, sizeof(buf));
	put(f, "cpus_allowed", buf);
	snprintf(buf, sizeof(buf), "%d", b->ncpu);
	put(f, "cpu_count", buf);
	cpu_model(buf, sizeof(buf));
	put(f, "cpu_model", buf);
	read_line("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", buf, sizeof(buf));
	put(f, "cpu_governor", buf);
	off = 0;
	buf[0] = '\0';
	for (int i = 0; i < b->o->cpus.n && off < sizeof(buf); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s%ld", i ? "," : "",
					b->o->cpus.v[i]);
	put(f, "cpus_pinned", b->o->cpus.n ? buf : "none");
	put(f, "loadavg_start", b->loadavg);
	read_loadavg(buf, sizeof(buf));
	put(f, "loadavg_end", buf);
	put(f, "test_dir", b->dir ? b->dir : "?");
	if (b->dir && statfs(b->dir, &sfs) == 0) {
		put(f, "fs_type", fs_magic_name((unsigned long)sfs.f_type));
		snprintf(buf, sizeof(buf), "0x%08lx", (unsigned long)sfs.f_type);
		put(f, "fs_magic", buf);
	}
	/* Where a scenario measured on another filesystem than the scratch
	 * directory's (merge's private tmpfs), its own line says so. */
	for (int i = 0; i < b->nfs_notes; i++) {
		char key[64];

		snprintf(key, sizeof(key), "fs.%s", b->fs_notes[i].scenario);
		put(f, key, b->fs_notes[i].fs);
	}
	put_oversub(f, b);
	put_sysctl(f, "fs.inotify.max_user_instances");
	put_sysctl(f, "fs.inotify.max_user_watches");
	put_sysctl(f, "fs.inotify.max_queued_events");
	put_sysctl(f, "fs.fanotify.max_user_groups");
	put_sysctl(f, "fs.fanotify.max_user_marks");
	put_sysctl(f, "fs.fanotify.max_queued_events");
	put(f, "compiler", COMPILER);
	put(f, "buildtype", FSNW_BENCH_BUILDTYPE);
	snprintf(buf, sizeof(buf), "%d.%d", FSNW_VERSION_MAJOR, FSNW_VERSION_MINOR);
	put(f, "libfsnwatch_api", buf);
	/* The library loaded, which LD_LIBRARY_PATH may make another build's. */
	put(f, "libfsnwatch", fsnw_version());
#ifdef HAVE_INOTIFYTOOLS
	put(f, "libinotifytools", "yes");
#else
	put(f, "libinotifytools", "no");
#endif
#ifdef HAVE_LIBUV
	put(f, "libuv", "yes");
#else
	put(f, "libuv", "no");
#endif
	connector_probe(buf, sizeof(buf), verdict, sizeof(verdict));
	put(f, "connector_probe", buf);
	put(f, "connector_tracking", verdict);
	snprintf(buf, sizeof(buf), "%d", b->failures);
	put(f, "failed_checks", buf);
	err = ferror(f) ? -EIO : 0;
	if (fclose(f) != 0 && !err)
		err = -errno;
	return err;
}

int envrec_read(const char *path, struct envrec *e)
{
	FILE *f = fopen(path, "r");
	char line[4096];

	memset(e, 0, sizeof(*e));
	if (!f)
		return -errno;
	while (e->n < ENVREC_MAX && fgets(line, sizeof(line), f)) {
		char *eq = strchr(line, '=');

		if (!eq)
			continue;
		*eq = '\0';
		eq[1 + strcspn(eq + 1, "\n")] = '\0';
		e->key[e->n] = strdup(line);
		e->value[e->n] = strdup(eq + 1);
		if (!e->key[e->n] || !e->value[e->n]) {
			free(e->key[e->n]);
			free(e->value[e->n]);
			break;
		}
		e->n++;
	}
	fclose(f);
	return 0;
}

const char *envrec_get(const struct envrec *e, const char *key)
{
	for (size_t i = 0; i < e->n; i++)
		if (!strcmp(e->key[i], key))
			return e->value[i];
	return "?";
}

void envrec_free(struct envrec *e)
{
	for (size_t i = 0; i < e->n; i++) {
		free(e->key[i]);
		free(e->value[i]);
	}
	e->n = 0;
}
