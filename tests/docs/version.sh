#!/bin/sh
# SPDX-License-Identifier: MIT
# One version: meson's project version M.m.p is the version of the map's
# last node (LIBFSNWATCH_M.m), of the header's FSNW_VERSION_* macros, of
# fsnw_version() in the built library, of the pkg-config file, of the title
# line of every man page built (the source pages say @VERSION@ there), of
# fsnw-bench's environment record, and of the newest entry in NEWS, which
# has an entry for every node of the map. Every function of the map has a
# page among those built.
# usage: version.sh VERSION MAP MANSRC MANBUILT PCFILE INCDIRS LIBDIR NEWS [FSNW_BENCH]
#        (INCDIRS separated by ':')     env: CC, SANITIZE
set -u
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
version=$1
map=$2
mansrc=$3
manbuilt=$4
pcfile=$5
incdirs=$6
libdir=$7
news=$8
bench=${9:-}
cc=${CC:-cc}
san=
case ${SANITIZE:-none} in
none | '') ;;
*) san="-fsanitize=$SANITIZE" ;;
esac

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
status=0
fail() {
	echo "FAIL: $*"
	status=1
}

case $version in
[0-9]*.[0-9]*.[0-9]*) ;;
*)
	echo "FAIL: project version '$version' is not MAJOR.MINOR.PATCH"
	exit 1
	;;
esac
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
patch=${version##*.}

# The map: its nodes in order; the last is this release's.
nodes=$(sed -n 's/^[[:space:]]*LIBFSNWATCH_\([0-9.]*\)[[:space:]]*{.*/\1/p' "$map")
last=$(printf '%s\n' "$nodes" | tail -n 1)
[ "$last" = "$major.$minor" ] ||
	fail "the map's last node is LIBFSNWATCH_$last, the project version $version"

# NEWS: one entry per node, newest first, the newest this version.
# An entry starts with a line "libfsnwatch M.m.p (...)" or "libfsnwatch M.m.p".
entries=$(sed -n 's/^libfsnwatch \([0-9][0-9.]*\)\( .*\)\{0,1\}$/\1/p' "$news")
newest=$(printf '%s\n' "$entries" | head -n 1)
[ "$newest" = "$version" ] || fail "NEWS's newest entry is '$newest', the project version $version"
for n in $nodes; do
	printf '%s\n' "$entries" | grep -q "^$n\." || fail "NEWS has no entry for LIBFSNWATCH_$n"
done

# The header and the library.
incflags=
old_ifs=$IFS
IFS=:
for d in $incdirs; do
	incflags="$incflags -I$d"
done
IFS=$old_ifs
cat >"$tmp/v.c" <<'SRC'
#include <fsnwatch.h>
#include <stdio.h>

int main(void)
{
	printf("%d.%d.%d %s %s\n", FSNW_VERSION_MAJOR, FSNW_VERSION_MINOR,
	       FSNW_VERSION_PATCH, FSNW_VERSION_STRING, fsnw_version());
	return 0;
}
SRC
# shellcheck disable=SC2086
if $cc $san $incflags "$tmp/v.c" -o "$tmp/v" -L"$libdir" -lfsnwatch; then
	got=$(LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$tmp/v")
	[ "$got" = "$version $version $version" ] ||
		fail "macros, FSNW_VERSION_STRING and fsnw_version() say '$got', expected $version"
else
	fail "a program printing the version does not build"
fi

# pkg-config.
pcv=$(sed -n 's/^Version: *//p' "$pcfile")
[ "$pcv" = "$version" ] || fail "$pcfile says Version: '$pcv'"

# The man pages: each source page has @VERSION@ on its title line, and is
# built with the version there.
pages=0
for src in "$mansrc"/*.[1-8]; do
	[ -e "$src" ] || continue
	name=${src##*/}
	pages=$((pages + 1))
	th=$(sed -n '/^\.TH /{p;q;}' "$src")
	case $th in
	*'"libfsnwatch @VERSION@"'*) ;;
	*) fail "$name: title line '$th' does not say \"libfsnwatch @VERSION@\"" ;;
	esac
	if [ ! -f "$manbuilt/$name" ]; then
		case $name in
		*.1) echo "note: $name is not built (its tool is not)" ;;
		*) fail "$name is not built (not listed in man/meson.build?)" ;;
		esac
		continue
	fi
	th=$(sed -n '/^\.TH /{p;q;}' "$manbuilt/$name")
	case $th in
	*"\"libfsnwatch $version\""*) ;;
	*) fail "built $name: title line '$th' does not say \"libfsnwatch $version\"" ;;
	esac
done
[ "$pages" -gt 0 ] || fail "no man page in $mansrc"
awk '
	/^[[:space:]]*global:/ { g = 1; next }
	/^[[:space:]]*local:/  { g = 0; next }
	/}/                    { g = 0; next }
	g && /;/ { s = $0; sub(/^[[:space:]]*/, "", s); sub(/;.*/, "", s); if (s != "") print s }
' "$map" >"$tmp/syms"
while read -r sym; do
	[ -f "$manbuilt/$sym.3" ] || fail "no page $sym.3 among the pages built"
done <"$tmp/syms"

# fsnw-bench's environment record (a one-round run of its smallest scenario).
if [ -n "$bench" ] && [ -x "$bench" ]; then
	mkdir "$tmp/bench"
	if (cd "$tmp/bench" && "$bench" xattr --size tiny --rounds 1 --warmup 0 --quiet \
		--dir "$tmp/bench" --csv "$tmp/run.csv" >/dev/null 2>"$tmp/bench.err"); then
		api=$(sed -n 's/^libfsnwatch_api=//p' "$tmp/run.csv.env")
		lib=$(sed -n 's/^libfsnwatch=//p' "$tmp/run.csv.env")
		[ "$api" = "$major.$minor" ] || fail "the environment record says libfsnwatch_api=$api"
		[ "$lib" = "$version" ] || fail "the environment record says libfsnwatch=$lib"
	else
		cat "$tmp/bench.err"
		fail "fsnw-bench xattr --size tiny did not run"
	fi
else
	echo "note: fsnw-bench not built: its environment record is not checked"
fi

[ "$status" -eq 0 ] && echo "ok: version $version everywhere ($pages pages, nodes $(echo $nodes))"
exit "$status"
