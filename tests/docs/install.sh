#!/bin/sh
# SPDX-License-Identifier: MIT
# `meson install` into a DESTDIR, check the installed tree (header, the .so
# symlink chain with its SONAME, the .pc, every man page), then build a
# program outside the project with nothing but
# `pkg-config --cflags --libs libfsnwatch` and run it against the installed
# library.
# usage: install.sh MESON BUILDDIR MANDIR     env: CC, SANITIZE
set -u
# Under `meson test --setup valgrind` memcheck would run this shell, not the
# library (whose own suites run there); the shell's leaks are not ours.
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
meson=$1
builddir=$2
mandir=$3
cc=${CC:-cc}
san=
case ${SANITIZE:-none} in
none | '') ;;
*) san="-fsanitize=$SANITIZE" ;;
esac

for tool in pkg-config readelf; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool is not installed"
		exit 77
	fi
done
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
dest=$tmp/dest
status=0
fail() {
	echo "FAIL: $*"
	status=1
}

# The build is current: meson test built it before running us.
if ! $meson install -C "$builddir" --no-rebuild --destdir "$dest" >"$tmp/install.log" 2>&1; then
	echo "FAIL: meson install:"
	cat "$tmp/install.log"
	exit 1
fi

header=$(find "$dest" -path '*/include/fsnwatch.h' | head -n 1)
pc=$(find "$dest" -path '*/pkgconfig/libfsnwatch.pc' | head -n 1)
so=$(find "$dest" -name 'libfsnwatch.so' | head -n 1)
[ -n "$header" ] || fail "no include/fsnwatch.h installed"
[ -n "$pc" ] || fail "no pkgconfig/libfsnwatch.pc installed"
[ -n "$so" ] || fail "no libfsnwatch.so installed"
[ "$status" -eq 0 ] || exit 1
libdir=${so%/*}

# libfsnwatch.so -> libfsnwatch.so.0 -> libfsnwatch.so.0.x.y, SONAME .so.0.
link=$(readlink "$so")
if [ ! -L "$so" ] || [ "$link" != libfsnwatch.so.0 ]; then
	fail "libfsnwatch.so -> '$link', expected libfsnwatch.so.0"
fi
real=$(readlink "$libdir/libfsnwatch.so.0")
case $real in
libfsnwatch.so.0.*) ;;
*) fail "libfsnwatch.so.0 -> '$real', expected libfsnwatch.so.0.<minor>.<patch>" ;;
esac
if [ -f "$libdir/$real" ] && [ ! -L "$libdir/$real" ]; then
	readelf -d "$libdir/$real" | grep -q 'SONAME.*\[libfsnwatch\.so\.0\]' ||
		fail "$real has no SONAME libfsnwatch.so.0"
else
	fail "$libdir/$real is not a regular file"
fi

# Every page of man/ is installed in its section.
pages=0
for page in "$mandir"/*.[1-8]; do
	[ -e "$page" ] || continue
	name=${page##*/}
	sect=${name##*.}
	pages=$((pages + 1))
	found=$(find "$dest" -path "*/share/man/man$sect/$name" | head -n 1)
	[ -n "$found" ] || fail "man page $name is not installed in man$sect"
done
[ "$pages" -gt 0 ] || fail "no man page in $mandir"

# An outside program, built with pkg-config alone, against the DESTDIR.
cat >"$tmp/outside.c" <<'SRC'
#include <fsnwatch.h>
#include <stdio.h>
#include <string.h>

/* Print where libfsnwatch was loaded from, so the test can check it. */
static void print_origin(void)
{
	char line[4096];
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/');

		if (p && strstr(p, "/libfsnwatch.so")) {
			printf("loaded %s", p);
			break;
		}
	}
	if (f)
		fclose(f);
}

int main(void)
{
	struct fsnw *w;
	int ret = fsnw_open(&w, NULL), wid;

	if (ret < 0) {
		printf("fsnw_open: %d\n", ret);
		return 1;
	}
	wid = fsnw_add(w, ".", FSNW_CREATE, 0);
	if (wid <= 0 || fsnw_remove(w, wid) != 0) {
		printf("fsnw_add/remove: %d\n", wid);
		return 1;
	}
	print_origin();
	fsnw_close(w);
	return 0;
}
SRC
# Only this DESTDIR's .pc is seen; the sysroot prefixes its -I and -L.
flags=$(PKG_CONFIG_LIBDIR=${pc%/*} PKG_CONFIG_PATH='' PKG_CONFIG_SYSROOT_DIR=$dest \
	pkg-config --cflags --libs libfsnwatch) || fail "pkg-config --cflags --libs libfsnwatch"
echo "pkg-config: $flags"
case " $flags " in
*" -I$dest/"* | *" -L$dest/"*) ;;
*) fail "pkg-config flags do not point into the DESTDIR" ;;
esac
[ "$status" -eq 0 ] || exit 1
# shellcheck disable=SC2086
$cc $san "$tmp/outside.c" -o "$tmp/outside" $flags || exit 1
out=$(cd "$tmp" && LD_LIBRARY_PATH=$libdir ./outside) || { echo "$out"; fail "the outside program failed"; }
echo "$out"
case $out in
"loaded $libdir/libfsnwatch.so.0"*) ;;
*) fail "the outside program did not use the installed library" ;;
esac

[ "$status" -eq 0 ] && echo "ok: installed tree complete ($pages man pages), outside program built with pkg-config and ran"
exit "$status"
