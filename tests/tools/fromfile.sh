#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-wait --fromfile: every line is a watch (one batch), from a file or
# stdin; @lines exclude a part of a tree; a bad path is named and fails.
. "$(dirname "$0")/lib.sh"

W=$TMP/w
mkdir "$W"
list=$TMP/list
: >"$list"
for i in $(seq 1 40); do
	touch "$W/f$i"
	echo "$W/f$i" >>"$list"
done
for i in $(seq 1 10); do
	mkdir "$W/d$i"
	echo "$W/d$i" >>"$list"
done
# A repeated path is watched once, as by inotifywait; an empty line is no
# path.
{
	echo "$W/f1"
	echo
	echo "$W/f$((RANDOM % 40 + 1))"
} >>"$list"
lines=$(grep . "$list" | sort -u | wc -l)

# logical_watches counts what was added: one per distinct path.
check_count() {
	local n
	n=$(json_num "$TMP/err" logical_watches)
	[ "$n" = "$lines" ] || fail "$1: logical_watches $n, wanted $lines"
	[ "$(json_num "$TMP/err" add_calls)" = "$lines" ] || fail "$1: add_calls"
}
"$FSNW_WAIT" -q --stats -t 0.2 --fromfile "$list" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" = 2 ] || fail "--fromfile FILE: exit $rc ($(cat "$TMP/err"))"
check_count "--fromfile FILE"
"$FSNW_WAIT" -q --stats -t 0.2 --fromfile - <"$list" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" = 2 ] || fail "--fromfile -: exit $rc ($(cat "$TMP/err"))"
check_count "--fromfile -"
# Kernel watches: one per distinct object.
[ "$(json_num "$TMP/err" kernel_watches)" = 50 ] || fail "kernel_watches"

# Paths on the command line join the same batch.
"$FSNW_WAIT" -q --stats -t 0.2 --fromfile "$list" "$W" >"$TMP/out" 2>"$TMP/err"
[ "$(json_num "$TMP/err" logical_watches)" = $((lines + 1)) ] || fail "list and arguments"
# The same object under other names is watched once too.
"$FSNW_WAIT" -q --stats -t 0.2 --fromfile "$list" "$W/./f1" "$W//f2" >"$TMP/out" 2>"$TMP/err"
[ "$(json_num "$TMP/err" logical_watches)" = "$lines" ] || fail "other names for the same files"

# A path that cannot be watched is named; the exit status is 1.
echo "$TMP/missing" >>"$list"
"$FSNW_WAIT" -t 0.2 --fromfile "$list" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" = 1 ] || fail "bad path in the list: exit $rc"
grep -q "^Couldn't watch $TMP/missing: No such file or directory\$" "$TMP/err" ||
	fail "bad path in the list: $(cat "$TMP/err")"

# @path in a tree (-r): nothing from there or below is shown. A path both
# given and excluded is watched, as inotifywait does.
mkdir -p "$W/d1/deep" "$W/d2/deep"
printf '%s\n' "$W" "@$W/d1/" "@$W/d2" "$W/d2" >"$TMP/tree-list"
start FW "$TMP/tree.out" "$TMP/tree.err" "$FSNW_WAIT" -m -r -e create --fromfile "$TMP/tree-list"
wait_for "$TMP/tree.err" '^Watches established\.$'
touch "$W/d1/hidden" "$W/d1/deep/hidden" "$W/d2/shown" "$W/d3/shown" "$W/end"
wait_for "$TMP/tree.out" " CREATE end\$"
stop "$FW"
[ $? = 143 ] || fail "exclusions: fsnw-wait -m did not die of SIGTERM"
grep -q hidden "$TMP/tree.out" && fail "excluded events shown: $(grep hidden "$TMP/tree.out")"
grep -qx "$W/d2/ CREATE shown" "$TMP/tree.out" || fail "given and excluded: not watched"
grep -qx "$W/d3/ CREATE shown" "$TMP/tree.out" || fail "the rest of the tree: not watched"
echo "--fromfile: $lines watches in one batch, exclusions honoured"
