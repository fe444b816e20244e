#!/bin/sh
# SPDX-License-Identifier: MIT
# The public header compiles warning-free as strict C89 or C++98, and a
# trivial program in that language links against the built library and runs
# (opens a handle, watches a directory, closes).
# usage: header.sh c89|cxx INCDIRS LIBDIR
# env:   CC (c89), CXX (cxx; empty: skip), SANITIZE (meson's b_sanitize)
set -u
# Under `meson test --setup valgrind` memcheck would run this shell, not the
# library (whose own suites run there); the shell's leaks are not ours.
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
mode=$1
incdirs=$2
libdir=$3
# INCDIRS: the include directories, separated by ':'.
incflags=
old_ifs=$IFS
IFS=:
for d in $incdirs; do
	incflags="$incflags -I$d"
done
IFS=$old_ifs
san=
case ${SANITIZE:-none} in
none | '') ;;
*) san="-fsanitize=$SANITIZE" ;;
esac

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

case $mode in
c89)
	compiler=${CC:-cc}
	std="-std=c89"
	src=$tmp/prog.c
	;;
cxx)
	compiler=${CXX:-}
	if [ -z "$compiler" ] || ! command -v "${compiler%% *}" >/dev/null 2>&1; then
		echo "SKIP: no C++ compiler"
		exit 77
	fi
	std="-std=c++98"
	src=$tmp/prog.cc
	;;
*)
	echo "usage: header.sh c89|cxx INCDIRS LIBDIR" >&2
	exit 2
	;;
esac
flags="$std -pedantic -Werror -Wall -Wextra"

# Every declaration of the header is used, so each one is compiled in that
# language's strictest mode; C89 has no // comments and no mixed declarations.
cat >"$src" <<'SRC'
#include <fsnwatch.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

typedef int (*open_fn)(struct fsnw **, const struct fsnw_options *);
typedef void (*close_fn)(struct fsnw *);
typedef int (*fd_fn)(const struct fsnw *);
typedef int (*add_fn)(struct fsnw *, const char *, uint32_t, uint32_t);
typedef int (*remove_fn)(struct fsnw *, int);
typedef int (*add_batch_fn)(struct fsnw *, struct fsnw_batch_item *, size_t, uint32_t);
typedef int (*remove_batch_fn)(struct fsnw *, const int *, size_t, int *);
typedef int (*read_fn)(struct fsnw *, struct fsnw_event *, size_t, int);
typedef int (*pump_fn)(struct fsnw *);
typedef uint64_t (*quantile_fn)(const struct fsnw_histogram *, double);
typedef int (*stats_fn)(const struct fsnw *, struct fsnw_stats *);
typedef int (*json_fn)(const struct fsnw *, char *, size_t);
typedef const char *(*version_fn)(void);
typedef int (*reserve_fn)(struct fsnw *, size_t);

int main(void)
{
	open_fn o = fsnw_open;
	close_fn c = fsnw_close;
	fd_fn f = fsnw_get_fd, b = fsnw_get_backend;
	add_fn a = fsnw_add;
	remove_fn r = fsnw_remove;
	add_batch_fn ab = fsnw_add_batch;
	remove_batch_fn rb = fsnw_remove_batch;
	read_fn rd = fsnw_read;
	pump_fn p = fsnw_pump;
	quantile_fn q = fsnw_histogram_quantile;
	stats_fn s = fsnw_get_stats;
	json_fn j = fsnw_stats_json;
	version_fn v = fsnw_version;
	reserve_fn rs = fsnw_reserve;
	pump_fn wk = fsnw_wake;
	struct fsnw_options opts;
	struct fsnw_stats st;
	struct fsnw_event ev[4];
	struct fsnw_batch_item item;
	struct fsnw *w;
	char json[64];
	int wid, ret;

	if (strcmp(v(), FSNW_VERSION_STRING) != 0) {
		printf("fsnw_version: %s, header %s\n", v(), FSNW_VERSION_STRING);
		return 1;
	}
	memset(&opts, 0, sizeof(opts));
	opts.size = sizeof(opts);
	opts.backend = FSNW_BACKEND_INOTIFY;
	opts.flags = FSNW_OPEN_NONBLOCK | FSNW_OPEN_NO_MERGE | FSNW_OPEN_NO_STATS;
	opts.queue_capacity = FSNW_QUEUE_DEFAULT;
	opts.idle_watches = 0;
	ret = o(&w, &opts);
	if (ret < 0) {
		printf("fsnw_open: %d\n", ret);
		return 1;
	}
	if (f(w) < 0 || b(w) != FSNW_BACKEND_INOTIFY)
		return 1;
	if (rs(w, 2) != 0)
		return 1;
	wid = a(w, ".", FSNW_ALL_EVENTS | FSNW_MOVE | FSNW_CLOSE, FSNW_WATCH_ONLYDIR);
	if (wid <= 0) {
		printf("fsnw_add: %d\n", wid);
		return 1;
	}
	item.path = ".";
	item.mask = FSNW_CREATE;
	item.flags = FSNW_WATCH_TREE | FSNW_WATCH_ONE_FS;
	item.result = 0;
	if (ab(w, &item, 1, FSNW_BATCH_ATOMIC) != 1 || rb(w, &item.result, 1, NULL) != 1)
		return 1;
	ret = wk(w) == 0 ? rd(w, ev, 4, 0) : -1;
	if ((ret < 0 && ret != -EAGAIN) || p(w) < 0)
		return 1;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (s(w, &st) < 0 || st.logical_watches != 1 || q(&st.lat_add, 0.5) != 0)
		return 1;
	if (j(w, json, sizeof(json)) <= 0 || r(w, wid) != 0)
		return 1;
	c(w);
	(void)(FSNW_UNMOUNT | FSNW_OVERFLOW | FSNW_IGNORED | FSNW_SYNTHETIC | FSNW_ISDIR |
	       FSNW_WATCH_DONT_FOLLOW | FSNW_WATCH_EXCL_UNLINK | FSNW_WATCH_ONESHOT |
	       FSNW_QUEUE_UNLIMITED | FSNW_HIST_BUCKETS | FSNW_BACKEND_AUTO |
	       FSNW_BACKEND_FANOTIFY | FSNW_VERSION_MAJOR | FSNW_VERSION_MINOR |
	       FSNW_VERSION_PATCH);
	printf("ok\n");
	return 0;
}
SRC
echo "compiling the header alone: $compiler $flags"
printf '#include <fsnwatch.h>\n' >"$tmp/only.${src##*.}"
# shellcheck disable=SC2086
$compiler $flags $incflags -fsyntax-only "$tmp/only.${src##*.}" || exit 1
echo "compiling, linking and running a program: $compiler $flags $san"
# shellcheck disable=SC2086
$compiler $flags $san $incflags "$src" -o "$tmp/prog" -L"$libdir" -lfsnwatch || exit 1
cd "$tmp" && LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ./prog
