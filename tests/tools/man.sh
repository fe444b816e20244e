#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-wait(1), fsnw-watch(1) and fsnw-tree(1) render without a warning,
# and document every option their --help lists; the pages of the
# inotify-tools counterparts list their differences.
. "$(dirname "$0")/lib.sh"

: "${FSNW_MAN_DIR:?}"
pages=("$FSNW_MAN_DIR/fsnw-wait.1" "$FSNW_MAN_DIR/fsnw-tree.1" "$FSNW_MAN_DIR/fsnw-watch.1")

if command -v mandoc >/dev/null; then
	lint=(mandoc -T lint -W warning)
elif command -v groff >/dev/null; then
	lint=(groff -ww -z -man)
else
	skip "neither mandoc nor groff is installed"
fi
for page in "${pages[@]}"; do
	"${lint[@]}" "$page" >"$TMP/lint" 2>&1 || { cat "$TMP/lint"; fail "$page: lint failed"; }
	[ -s "$TMP/lint" ] && { cat "$TMP/lint"; fail "$page: warnings"; }
	for section in NAME SYNOPSIS DESCRIPTION OPTIONS OUTPUT 'EXIT STATUS' EXAMPLES 'SEE ALSO'; do
		grep -q "^\.SH \"\?$section\"\?\$" "$page" || fail "$page: no $section section"
	done
done

# --opt in --help must appear in the page as \-\-opt.
check_options() {
	local prog=$1 page=$2 opt
	"$prog" --help >"$TMP/help" || fail "$prog --help: exit $?"
	for opt in $(grep -o -- '--[a-z-]*' "$TMP/help" | sort -u); do
		grep -qF -- "${opt//-/\\-}" "$page" || fail "$page does not document $opt"
	done
}
check_options "$FSNW_WAIT" "${pages[0]}"
check_options "$FSNW_TREE" "${pages[1]}"
check_options "$FSNW_WATCH" "${pages[2]}"
grep -q '^\.SH DIFFERENCES FROM INOTIFYWAIT$' "${pages[0]}" || fail "fsnw-wait(1) lists no differences"
grep -q '^\.SH DIFFERENCES FROM INOTIFYWATCH$' "${pages[2]}" || fail "fsnw-watch(1) lists no differences"
# Every option of inotifywait and inotifywatch has its entry, beside its equivalent.
for pair in "inotifywait ${pages[0]}" "inotifywatch ${pages[2]}"; do
	read -r tool page <<<"$pair"
	command -v "$tool" >/dev/null || continue
	for opt in $("$tool" --help 2>/dev/null | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		grep -qF -- "${opt//-/\\-}" "$page" || fail "$page does not document $tool's $opt"
	done
	n=$(grep -c "^$tool: " "$page")
	((n >= 15)) || fail "$page: only $n options beside their $tool equivalent"
done
echo "man pages: no warnings, every option documented"
