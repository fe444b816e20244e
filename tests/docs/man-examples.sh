#!/bin/sh
# SPDX-License-Identifier: MIT
# The example programs of the man pages compile warning-free against the
# public header and link against the built library: what the pages show is
# the API as it is. Every .EX block of an EXAMPLES section that holds a main()
# is a program; the roff escapes used in code are undone first.
# libfsnwatch(7) quotes examples/fsnw-epoll.c: once that file exists, the
# page must hold it verbatim (tests/docs/quote-epoll.sh refreshes the copy).
# usage: man-examples.sh MANDIR INCDIRS LIBDIR [EXAMPLESDIR]     env: CC, SANITIZE
set -u
# Under `meson test --setup valgrind` memcheck would run this shell, not the
# library (whose own suites run there); the shell's leaks are not ours.
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
mandir=$1
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
examples=${4:-}
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
programs=0

for page in "$mandir"/*.[1-8]; do
	[ -e "$page" ] || continue
	name=${page##*/}
	# Number the .EX blocks of the EXAMPLES section into files.
	awk -v out="$tmp/$name" '
		/^\.SH/ { ex = ($0 ~ /^\.SH +"?EXAMPLES?"?$/); next }
		ex && /^\.EX/ { n++; f = out "." n ".c"; inblock = 1; next }
		ex && /^\.EE/ { inblock = 0; close(f); next }
		inblock { print > f }
	' "$page"
	for src in "$tmp/$name".*.c; do
		[ -e "$src" ] || continue
		grep -q 'main(' "$src" || continue
		programs=$((programs + 1))
		# \e is a backslash; \- a minus; \(aq and \(dq quotes; \& nothing.
		sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\(dq/"/g' -e 's/\\&//g' \
			-e 's/\\e/\\/g' "$src" >"$src.unescaped.c"
		# shellcheck disable=SC2086
		if ! $cc -Wall -Wextra -Werror $san $incflags "$src.unescaped.c" \
			-o "$src.bin" -L"$libdir" -lfsnwatch 2>"$src.log"; then
			echo "FAIL: an example program of $name does not build (${src##*/}):"
			cat "$src.log"
			status=1
		fi
	done
done

quoted=$examples/fsnw-epoll.c
if [ -n "$examples" ] && [ -f "$quoted" ]; then
	same=
	for block in "$tmp"/libfsnwatch.7.*.c.unescaped.c; do
		[ -e "$block" ] || continue
		cmp -s "$block" "$quoted" && same=1
	done
	if [ -z "$same" ]; then
		echo "FAIL: man/libfsnwatch.7 does not quote $quoted as it is now;"
		echo "  refresh it with: sh tests/docs/quote-epoll.sh"
		status=1
	fi
fi

if [ "$programs" -eq 0 ]; then
	echo "FAIL: no example program found in $mandir"
	exit 1
fi
[ "$status" -eq 0 ] && echo "ok: $programs example programs build"
exit "$status"
