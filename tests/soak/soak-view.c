/* SPDX-License-Identifier: MIT */
/*
 * soak-view: watch a tree with one FSNW_WATCH_TREE watch and keep a view of
 * it (every path below the root and whether it is a directory), the way
 * fsnw-tree does: events keep it, a directory moved in is listed, and an
 * overflow, or an event the view cannot place, makes it list the whole tree
 * again. A directory moved in is listed again at every later rename that
 * carries it until a read comes back empty: the listing answered for when
 * it was made, and a rename the reader had not read yet may have overtaken
 * it (a fanotify tree reads no directory to put that right;
 * libfsnwatch(7), "Moves"). The view is a tree of nodes, so that removing or moving a subtree
 * costs the subtree, not the view.
 *
 * Commands on stdin, one a line:
 *   sync NAME FILE   read until the tree has been quiet for --quiet ms, write
 *                    the view to FILE (sorted "d path" / "f path" lines, as
 *                    find -printf '%y %P\n' | sort prints), and print on
 *                    stdout "NAME events=.. overflows=.. rescans=.. walks=..
 *                    user_ms=.. sys_ms=.. rss_kb=.. entries=.." for what
 *                    happened since the last sync
 *   quit
 * Usage: soak-view [--backend inotify|fanotify] [--quiet MS] ROOT
 */
#include <dirent.h>
#include <errno.h>
#include <fsnwatch.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define MASK (FSNW_CREATE | FSNW_DELETE | FSNW_MOVE | FSNW_DELETE_SELF | FSNW_MOVE_SELF)

struct node {
	struct node *parent;
	struct node *child, *next, *prev; /* children, doubly linked */
	struct node *hnext;               /* hash chain, keyed by (parent, name) */
	bool dir;
	uint32_t listed;                  /* moved in and listed in this generation */
	char name[];
};

static struct node **table;
static size_t nbuckets = 1 << 16, nnodes;
static struct node *root;
/* Listings of directories moved in that a rename may have overtaken: those
 * made since the last empty read (a new generation starts there). */
static uint32_t listed_gen = 1;
static size_t nlisted;
static const char *root_path;
static size_t root_len;

/* What happened since the last sync. */
static struct {
	uint64_t events, overflows, rescans, walks;
} phase;

static void die(const char *what)
{
	fprintf(stderr, "soak-view: %s: %s\n", what, strerror(errno));
	exit(1);
}

static size_t bucket(const struct node *parent, const char *name)
{
	uint64_t h = (uint64_t)(uintptr_t)parent * 0x9e3779b97f4a7c15ull;

	for (; *name; name++)
		h = (h ^ (unsigned char)*name) * 0x100000001b3ull;
	return (size_t)(h ^ (h >> 29)) & (nbuckets - 1);
}

static void grow(void)
{
	size_t old = nbuckets;
	struct node **t = table;

	nbuckets *= 2;
	table = calloc(nbuckets, sizeof(*table));
	if (!table)
		die("calloc");
	for (size_t i = 0; i < old; i++) {
		struct node *n = t[i], *next;

		for (; n; n = next) {
			size_t b = bucket(n->parent, n->name);

			next = n->hnext;
			n->hnext = table[b];
			table[b] = n;
		}
	}
	free(t);
}

static struct node *lookup(const struct node *parent, const char *name)
{
	struct node *n = table[bucket(parent, name)];

	while (n && (n->parent != parent || strcmp(n->name, name)))
		n = n->hnext;
	return n;
}

static void hash_out(struct node *n)
{
	struct node **pp = &table[bucket(n->parent, n->name)];

	while (*pp != n)
		pp = &(*pp)->hnext;
	*pp = n->hnext;
}

static void link_in(struct node *n, struct node *parent)
{
	size_t b = bucket(parent, n->name);

	n->parent = parent;
	n->hnext = table[b];
	table[b] = n;
	n->prev = NULL;
	n->next = parent->child;
	if (parent->child)
		parent->child->prev = n;
	parent->child = n;
}

static void link_out(struct node *n)
{
	hash_out(n);
	if (n->prev)
		n->prev->next = n->next;
	else
		n->parent->child = n->next;
	if (n->next)
		n->next->prev = n->prev;
	n->parent = NULL;
}

static void free_subtree(struct node *n)
{
	while (n->child) {
		struct node *c = n->child;

		link_out(c);
		free_subtree(c);
	}
	free(n);
	nnodes--;
}

static struct node *new_node(const char *name, bool dir)
{
	struct node *n = calloc(1, sizeof(*n) + strlen(name) + 1);

	if (!n)
		die("calloc");
	strcpy(n->name, name);
	n->dir = dir;
	if (++nnodes > nbuckets)
		grow();
	return n;
}

/* Add (or retype) name under parent. */
static struct node *put(struct node *parent, const char *name, bool dir)
{
	struct node *n = lookup(parent, name);

	if (n) {
		if (n->dir && !dir) {
			while (n->child) {
				struct node *c = n->child;

				link_out(c);
				free_subtree(c);
			}
		}
		n->dir = dir;
		return n;
	}
	n = new_node(name, dir);
	link_in(n, parent);
	return n;
}

static void remove_child(struct node *parent, const char *name)
{
	struct node *n = lookup(parent, name);

	if (n) {
		link_out(n);
		free_subtree(n);
	}
}

/* The node of the directory at path (the root's path joined with names). */
static struct node *dir_node(const char *path)
{
	char buf[PATH_MAX], *save = NULL, *c;
	struct node *n = root;

	if (strncmp(path, root_path, root_len) || (path[root_len] && path[root_len] != '/'))
		return NULL;
	snprintf(buf, sizeof(buf), "%s", path + root_len);
	for (c = strtok_r(buf, "/", &save); c && n; c = strtok_r(NULL, "/", &save))
		n = lookup(n, c);
	return n && n->dir ? n : NULL;
}

/* List the directory at path into n, recursively. */
static void scan(struct node *n, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;

	phase.walks++;
	if (!d)
		return; /* gone: its events say so */
	while ((e = readdir(d))) {
		char sub[PATH_MAX];
		struct stat st;
		bool dir;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
		if (e->d_type == DT_UNKNOWN)
			dir = lstat(sub, &st) == 0 && S_ISDIR(st.st_mode);
		else
			dir = e->d_type == DT_DIR;
		if (put(n, e->d_name, dir)->dir)
			scan(lookup(n, e->d_name), sub);
	}
	closedir(d);
}

/* Does n, or a directory below it, hold a listing a rename may have overtaken? */
static bool holds_listed(const struct node *n)
{
	if (n->listed == listed_gen)
		return true;
	for (const struct node *c = n->child; c; c = c->next)
		if (c->dir && holds_listed(c))
			return true;
	return false;
}

/* List n at path again, in place of what the view had there. */
static void relist(struct node *n, const char *path)
{
	while (n->child) {
		struct node *c = n->child;

		link_out(c);
		free_subtree(c);
	}
	scan(n, path);
	n->listed = listed_gen;
}

static void rescan(void)
{
	phase.rescans++;
	while (root->child) {
		struct node *c = root->child;

		link_out(c);
		free_subtree(c);
	}
	scan(root, root_path);
}

/* The last entry moved away, until its MOVED_TO says where it went. */
static struct node *moved;
static uint32_t moved_cookie;

static void drop_moved(void)
{
	if (moved)
		free_subtree(moved);
	moved = NULL;
}

/* Apply one event; false: the view cannot place it (rescan). */
static bool apply(const struct fsnw_event *ev)
{
	struct node *dir;
	char p[PATH_MAX];

	if (ev->mask & (FSNW_IGNORED | FSNW_DELETE_SELF | FSNW_MOVE_SELF)) {
		if (!ev->name && !strcmp(ev->path, root_path)) {
			fprintf(stderr, "soak-view: the root went (%#x)\n", ev->mask);
			exit(1);
		}
		return true; /* a directory below: its parent's event says it */
	}
	if (!ev->name)
		return true;
	if (!(ev->mask & FSNW_MOVED_TO) || ev->cookie != moved_cookie)
		drop_moved();
	dir = dir_node(ev->path);
	if (!dir)
		return false;
	if (ev->mask & (FSNW_CREATE | FSNW_MOVED_TO)) {
		if ((ev->mask & FSNW_MOVED_TO) && moved && ev->cookie == moved_cookie) {
			remove_child(dir, ev->name);
			link_in(moved, dir); /* renamed() gave it the new name */
			if (nlisted && holds_listed(moved)) {
				snprintf(p, sizeof(p), "%s/%s", ev->path, ev->name);
				relist(moved, p);
			}
			moved = NULL;
			return true;
		}
		put(dir, ev->name, ev->mask & FSNW_ISDIR);
		if ((ev->mask & FSNW_MOVED_TO) && (ev->mask & FSNW_ISDIR)) {
			snprintf(p, sizeof(p), "%s/%s", ev->path, ev->name);
			relist(lookup(dir, ev->name), p);
			nlisted++;
		}
	} else if (ev->mask & FSNW_MOVED_FROM) {
		struct node *n = lookup(dir, ev->name);

		if (n) {
			link_out(n);
			moved = n;
			moved_cookie = ev->cookie;
		}
	} else if (ev->mask & FSNW_DELETE) {
		remove_child(dir, ev->name);
	}
	return true;
}

/* A moved node renamed: its name is stored inline, so make it anew. */
static struct node *renamed(struct node *n, const char *name)
{
	struct node *m = calloc(1, sizeof(*m) + strlen(name) + 1);

	if (!m)
		die("calloc");
	*m = *n;
	strcpy(m->name, name);
	for (struct node *c = m->child; c; c = c->next) {
		hash_out(c);
		c->parent = m;
		c->hnext = table[bucket(m, c->name)];
		table[bucket(m, c->name)] = c;
	}
	free(n);
	return m;
}

static void handle(const struct fsnw_event *ev)
{
	phase.events++;
	if (ev->mask & FSNW_OVERFLOW) {
		phase.overflows++;
		drop_moved();
		rescan();
		return;
	}
	if ((ev->mask & FSNW_MOVED_TO) && moved && ev->cookie == moved_cookie && ev->name &&
	    strcmp(moved->name, ev->name))
		moved = renamed(moved, ev->name);
	if (!apply(ev)) {
		drop_moved();
		rescan();
	}
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void collect_lines(struct node *n, char *prefix, size_t plen, char ***lines, size_t *nl,
			  size_t *cap)
{
	for (struct node *c = n->child; c; c = c->next) {
		size_t len = strlen(c->name);
		char *line;

		if (*nl == *cap) {
			*cap = *cap ? *cap * 2 : 1024;
			*lines = realloc(*lines, *cap * sizeof(**lines));
			if (!*lines)
				die("realloc");
		}
		line = malloc(plen + len + 4);
		if (!line)
			die("malloc");
		sprintf(line, "%c %s%s", c->dir ? 'd' : 'f', prefix, c->name);
		(*lines)[(*nl)++] = line;
		if (c->dir && plen + len + 2 < PATH_MAX) {
			memcpy(prefix + plen, c->name, len);
			prefix[plen + len] = '/';
			prefix[plen + len + 1] = '\0';
			collect_lines(c, prefix, plen + len + 1, lines, nl, cap);
			prefix[plen] = '\0';
		}
	}
}

static void dump(const char *file)
{
	char prefix[PATH_MAX] = "";
	char **lines = NULL;
	size_t n = 0, cap = 0;
	FILE *f = fopen(file, "w");

	if (!f)
		die(file);
	collect_lines(root, prefix, 0, &lines, &n, &cap);
	if (n) /* qsort's base must not be NULL, even for none */
		qsort(lines, n, sizeof(*lines), cmp_lines);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s\n", lines[i]);
		free(lines[i]);
	}
	free(lines);
	if (fclose(f) == EOF)
		die(file);
}

static long rss_kb(void)
{
	long pages = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A read came back empty: every event older than the listings was read. */
static void listed_overtaken_no_more(void)
{
	listed_gen++;
	nlisted = 0;
}

static void sync_phase(struct fsnw *w, int quiet_ms, const char *name, const char *file)
{
	static struct rusage last;
	struct fsnw_event evs[256];
	struct rusage ru;
	int n;

	while ((n = fsnw_read(w, evs, 256, quiet_ms)) > 0)
		for (int i = 0; i < n; i++)
			handle(&evs[i]);
	listed_overtaken_no_more();
	if (n < 0) {
		errno = -n;
		die("fsnw_read");
	}
	dump(file);
	getrusage(RUSAGE_SELF, &ru);
	printf("%s events=%llu overflows=%llu rescans=%llu walks=%llu user_ms=%ld sys_ms=%ld "
	       "rss_kb=%ld entries=%zu\n",
	       name, (unsigned long long)phase.events, (unsigned long long)phase.overflows,
	       (unsigned long long)phase.rescans, (unsigned long long)phase.walks,
	       (ru.ru_utime.tv_sec - last.ru_utime.tv_sec) * 1000 +
		       (ru.ru_utime.tv_usec - last.ru_utime.tv_usec) / 1000,
	       (ru.ru_stime.tv_sec - last.ru_stime.tv_sec) * 1000 +
		       (ru.ru_stime.tv_usec - last.ru_stime.tv_usec) / 1000,
	       rss_kb(), nnodes - 1);
	fflush(stdout);
	last = ru;
	memset(&phase, 0, sizeof(phase));
}

int main(int argc, char **argv)
{
	struct fsnw_options o = { .size = sizeof(o), .backend = FSNW_BACKEND_INOTIFY };
	struct pollfd p[2];
	char line[2 * PATH_MAX];
	struct fsnw *w;
	int quiet = 1000, i, ret;

	for (i = 1; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "--backend"))
			o.backend = !strcmp(argv[i + 1], "fanotify") ? FSNW_BACKEND_FANOTIFY :
								      FSNW_BACKEND_INOTIFY;
		else if (!strcmp(argv[i], "--quiet"))
			quiet = atoi(argv[i + 1]);
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: soak-view [--backend B] [--quiet MS] ROOT\n");
		return 2;
	}
	root_path = argv[i];
	root_len = strlen(root_path);
	table = calloc(nbuckets, sizeof(*table));
	if (!table)
		die("calloc");
	root = new_node("", true);
	ret = fsnw_open(&w, &o);
	if (ret < 0) {
		fprintf(stderr, "soak-view: fsnw_open: %s\n", strerror(-ret));
		return ret == -EPERM || ret == -EOPNOTSUPP ? 77 : 1;
	}
	ret = fsnw_add(w, root_path, MASK, FSNW_WATCH_TREE);
	if (ret < 0) {
		fprintf(stderr, "soak-view: fsnw_add %s: %s\n", root_path, strerror(-ret));
		return 1;
	}
	scan(root, root_path);
	printf("ready entries=%zu\n", nnodes - 1);
	fflush(stdout);
	/* Events are applied as they come, not only at a sync: a reader that
	 * stops reading overflows, which is not what this measures. */
	p[0] = (struct pollfd){ .fd = 0, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = fsnw_get_fd(w), .events = POLLIN };
	for (;;) {
		struct fsnw_event evs[256];
		char name[256], file[PATH_MAX];

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			die("poll");
		if (p[1].revents) {
			int n = fsnw_read(w, evs, 256, 0);

			for (int k = 0; k < n; k++)
				handle(&evs[k]);
			if (n == 0)
				listed_overtaken_no_more();
		}
		if (!p[0].revents)
			continue;
		if (!fgets(line, sizeof(line), stdin) || !strncmp(line, "quit", 4))
			break;
		if (sscanf(line, "sync %255s %4095s", name, file) == 2)
			sync_phase(w, quiet, name, file);
	}
	drop_moved();
	fsnw_close(w);
	free_subtree(root);
	free(table);
	return 0;
}
