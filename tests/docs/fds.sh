#!/bin/sh
# SPDX-License-Identifier: MIT
# The table of FILE DESCRIPTORS in libfsnwatch(7) says how many descriptors
# a handle holds after each step; docs-fds takes the steps and counts
# /proc/self/fd. The two tables must be the same.
# usage: fds.sh DOCS_FDS PAGE
set -u
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
prog=$1
page=$2

tmp=$(mktemp -d /dev/shm/fsnw-docs-fds.XXXXXX 2>/dev/null || mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
mkdir "$tmp/dir" || exit 1

# The page's table: the tbl block of the FILE DESCRIPTORS section, without
# its format line.
awk '
	/^\.SH/ { sect = ($0 ~ /^\.SH +"?FILE DESCRIPTORS"?$/); next }
	sect && /^\.TS/ { tbl = 1; fmt = 1; next }
	sect && /^\.TE/ { tbl = 0; next }
	tbl && fmt { if ($0 ~ /\.$/) fmt = 0; next }
	tbl { print }
' "$page" >"$tmp/page"
if [ ! -s "$tmp/page" ]; then
	echo "FAIL: no table in FILE DESCRIPTORS of $page"
	exit 1
fi

"$prog" "$tmp/dir" >"$tmp/out" || { cat "$tmp/out"; echo "FAIL: docs-fds"; exit 1; }
ring=$(sed -n 's/^ring\t//p' "$tmp/out")
fan=$(sed -n 's/^fanotify\t//p' "$tmp/out")
grep -v -e '^ring	' -e '^fanotify	' "$tmp/out" >"$tmp/measured"
cp "$tmp/page" "$tmp/expected"
if [ "$ring" != yes ]; then
	# No io_uring here: a default handle has the column without the ring.
	echo "note: no readiness ring on this system: the inotify column is checked against 'no ring'"
	awk -F '\t' -v OFS='\t' 'NR > 1 { $2 = $3 } { print }' "$tmp/page" >"$tmp/expected"
fi
if [ -n "$fan" ]; then
	echo "note: no fanotify handle ($fan): its column is not checked"
	awk -F '\t' -v OFS='\t' 'NR > 1 { $4 = "-" } { print }' "$tmp/expected" >"$tmp/e2"
	mv "$tmp/e2" "$tmp/expected"
fi
cat "$tmp/measured"
if ! diff "$tmp/expected" "$tmp/measured" >"$tmp/diff"; then
	echo "FAIL: the descriptors counted differ from $page (< page, > counted):"
	cat "$tmp/diff"
	exit 1
fi
echo "ok: a handle holds the descriptors $page says"
