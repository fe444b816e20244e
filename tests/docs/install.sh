#!/bin/sh
# SPDX-License-Identifier: MIT
# `meson install` into a DESTDIR, check the installed tree (headers, the .so
# symlink chain with its SONAME, the .pc, every man page with the version on
# its title line, a page for every tool), then build a program outside the
# project with nothing but `pkg-config --cflags --libs libfsnwatch` and run
# it against the installed library. Then a newcomer's way, as README.md has
# it: meson setup --prefix of the source into a scratch prefix, ninja,
# ninja install, and the README's example built with pkg-config against that
# prefix and run on a directory, until the directory goes.
# usage: install.sh MESON BUILDDIR MANDIR SRCDIR     env: CC, SANITIZE
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
srcdir=$4
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
[ -n "$(find "$dest" -path '*/include/fsnwatch-version.h')" ] ||
	fail "no include/fsnwatch-version.h installed"
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

# Every page of man/ is installed in its section (a tool's page with the
# tool), its title line carrying the version, and every tool has its page.
pages=0
for page in "$mandir"/*.[1-8]; do
	[ -e "$page" ] || continue
	name=${page##*/}
	sect=${name##*.}
	if [ "$sect" = 1 ] && [ -z "$(find "$dest" -path "*/bin/${name%.1}")" ]; then
		continue
	fi
	pages=$((pages + 1))
	found=$(find "$dest" -path "*/share/man/man$sect/$name" | head -n 1)
	if [ -z "$found" ]; then
		fail "man page $name is not installed in man$sect"
	elif grep -q '^\.TH .*@VERSION@' "$found"; then
		fail "installed $name still says @VERSION@ on its title line"
	fi
done
[ "$pages" -gt 0 ] || fail "no man page in $mandir"
for tool in $(find "$dest" -path '*/bin/*' -name 'fsnw*'); do
	name=${tool##*/}
	[ -n "$(find "$dest" -path "*/share/man/man1/$name.1")" ] ||
		fail "the tool $name is installed without a page"
done

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

[ "$status" -eq 0 ] || exit 1
echo "ok: installed tree complete ($pages man pages), outside program built with pkg-config and ran"

# The README's way, from the source. A sanitized build of the project runs
# this test too; the plain one does this part.
case ${SANITIZE:-none} in
none | '') ;;
*)
	echo "note: a $SANITIZE build: the README's build and example are left to the plain build"
	exit 0
	;;
esac
if ! command -v ninja >/dev/null 2>&1; then
	echo "note: no ninja: the README's build is not tried"
	exit 0
fi
readme=$srcdir/README.md
prefix=$tmp/prefix
fresh=$tmp/fresh
if ! { $meson setup "$fresh" "$srcdir" --prefix="$prefix" -Dtests=disabled -Dbench=false \
	-Dexamples=false && ninja -C "$fresh" && ninja -C "$fresh" install; } >"$tmp/fresh.log" 2>&1; then
	cat "$tmp/fresh.log"
	echo "FAIL: meson setup --prefix, ninja, ninja install"
	exit 1
fi
pcdir=$(find "$prefix" -name libfsnwatch.pc)
pcdir=${pcdir%/*}
plib=$(find "$prefix" -name 'libfsnwatch.so.0' | head -n 1)
plib=${plib%/*}
[ -n "$pcdir" ] && [ -n "$plib" ] || { echo "FAIL: nothing installed in $prefix"; exit 1; }

# The first C block of the README's "## Example" section.
awk '/^## /{ ex = ($0 == "## Example") } ex && /^```c$/{ c = 1; next }
	c && /^```$/{ exit } c' "$readme" >"$tmp/example.c"
[ -s "$tmp/example.c" ] || { echo "FAIL: no C block under ## Example in $readme"; exit 1; }
flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs libfsnwatch) || exit 1
echo "README example: cc -Wall -Wextra -Werror example.c $flags"
# shellcheck disable=SC2086
cc_out=$($cc -Wall -Wextra -Werror "$tmp/example.c" -o "$tmp/example" $flags 2>&1) ||
	{ echo "$cc_out"; echo "FAIL: the README's example does not build"; exit 1; }

# wait_for PATTERN: until the example's output has a line matching it (it
# prints as it goes), or it exits, or 60 s pass.
wait_for() {
	i=0
	while ! grep -q "$1" "$tmp/out"; do
		kill -0 "$pid" 2>/dev/null || return 1
		i=$((i + 1))
		[ "$i" -le 1200 ] || return 1
		sleep 0.05
	done
}
mkdir "$tmp/watched" || exit 1
LD_LIBRARY_PATH=$plib "$tmp/example" "$tmp/watched" >"$tmp/out" 2>&1 &
pid=$!
if ! wait_for '^watching '; then
	kill "$pid" 2>/dev/null
	cat "$tmp/out"
	echo "FAIL: the README's example did not start watching"
	exit 1
fi
grep -q "$plib/libfsnwatch.so.0" "/proc/$pid/maps" ||
	fail "the README's example does not run with the library of $prefix"
mkdir "$tmp/watched/sub" && : >"$tmp/watched/sub/sentinel"
wait_for 'sub sentinel ' || fail "the README's example did not report sub/sentinel"
# The tree's own directory goes: its FSNW_IGNORED ends the example.
rm -rf "$tmp/watched"
i=0
while kill -0 "$pid" 2>/dev/null && [ "$i" -lt 1200 ]; do
	i=$((i + 1))
	sleep 0.05
done
if kill -0 "$pid" 2>/dev/null; then
	kill "$pid"
	fail "the README's example did not stop when its directory went"
fi
wait "$pid" || fail "the README's example exited with status $?"
cat "$tmp/out"
[ "$status" -eq 0 ] && echo "ok: the README's build, install and example work from a scratch prefix"
exit "$status"
