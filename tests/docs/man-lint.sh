#!/bin/sh
# SPDX-License-Identifier: MIT
# Render every man page with every warning on; any warning fails the test.
# Function pages (section 3) must also carry the house sections, in order,
# and name themselves consistently.
# usage: man-lint.sh MANDIR
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

have_mandoc=
have_groff=
command -v mandoc >/dev/null 2>&1 && have_mandoc=1
command -v groff >/dev/null 2>&1 && have_groff=1
if [ -z "$have_mandoc$have_groff" ]; then
	echo "SKIP: neither mandoc nor groff is installed"
	exit 77
fi
[ -n "$have_mandoc" ] || echo "note: mandoc not installed, groff only"
[ -n "$have_groff" ] || echo "note: groff not installed, mandoc only"

expected='NAME|SYNOPSIS|DESCRIPTION|RETURN VALUE|ERRORS|NOTES|EXAMPLES|SEE ALSO|'
status=0
pages=0

fail() {
	echo "FAIL $name: $*"
	status=1
}

for page in "$mandir"/*.[1-8]; do
	[ -e "$page" ] || continue
	pages=$((pages + 1))
	name=${page##*/}

	# groff 1.22 reads Latin-1: anything beyond ASCII must be a roff escape.
	if LC_ALL=C grep -n '[^[:print:][:space:]]' "$page" >/dev/null; then
		fail "non-ASCII bytes (use roff escapes):"
		LC_ALL=C grep -n '[^[:print:][:space:]]' "$page"
	fi
	if [ -n "$have_mandoc" ]; then
		out=$(mandoc -T lint -W warning "$page" 2>&1)
		rc=$?
		if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
			fail "mandoc -T lint -W warning (exit $rc):"
			printf '%s\n' "$out"
		fi
	fi
	if [ -n "$have_groff" ]; then
		# -mandoc picks man or mdoc by the page's first macros.
		out=$(groff -ww -z -b -Tutf8 -mandoc "$page" 2>&1)
		rc=$?
		if [ "$rc" -ne 0 ] || [ -n "$out" ]; then
			fail "groff -ww (exit $rc):"
			printf '%s\n' "$out"
		fi
	fi

	case $name in
	*.3) ;;
	*) continue ;;
	esac
	base=${name%.3}
	# The title line names the page and its section.
	th=$(sed -n 's/^\.TH  *\([^ ]*\)  *\([^ ]*\).*/\1 \2/p' "$page" | head -n 1)
	[ "$th" = "$base 3" ] || fail ".TH says '$th', expected '$base 3'"
	# NAME starts with the function's own name.
	nameline=$(sed -n '/^\.SH NAME/{n;p;q;}' "$page")
	case $nameline in
	"$base "*) ;;
	*) fail "NAME line '$nameline' does not start with $base" ;;
	esac
	sections=$(sed -n 's/^\.SH  *//p' "$page" | tr -d '"' | tr '\n' '|')
	[ "$sections" = "$expected" ] ||
		fail "sections are '$sections', expected '$expected'"
done

if [ "$pages" -eq 0 ]; then
	echo "FAIL: no man pages in $mandir"
	exit 1
fi
[ "$status" -eq 0 ] && echo "ok: $pages pages render without warnings"
exit "$status"
