#!/bin/sh
# SPDX-License-Identifier: MIT
# Refresh the copy of examples/fsnw-epoll.c that man/libfsnwatch.7 quotes
# (between its "BEGIN/END examples/fsnw-epoll.c" comments). The man-examples
# test fails while the two differ.
# usage: sh tests/docs/quote-epoll.sh [SRCDIR]
set -eu
src=${1:-$(dirname "$0")/../..}
page=$src/man/libfsnwatch.7
code=$src/examples/fsnw-epoll.c
grep -q '^\.\\" BEGIN examples/fsnw-epoll\.c' "$page" || {
	echo "quote-epoll: no BEGIN marker in $page" >&2
	exit 1
}
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.code"' EXIT
# Backslash as \e, minus as \-, and \& before a line that roff would read
# as a request.
sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/" "$code" >"$tmp.code"
awk -v codefile="$tmp.code" '
	/^\.\\" BEGIN examples\/fsnw-epoll\.c/ {
		print; print ".in +4n"; print ".EX"
		while ((getline line < codefile) > 0) print line
		print ".EE"; print ".in"; skip = 1; next
	}
	/^\.\\" END examples\/fsnw-epoll\.c/ { skip = 0 }
	!skip { print }
' "$page" >"$tmp"
cat "$tmp" >"$page"
echo "quote-epoll: $page now quotes $code"
