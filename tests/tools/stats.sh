#!/bin/bash
# SPDX-License-Identifier: MIT
# --stats-interval S: fsnw-wait and fsnw-tree write the library's JSON
# statistics to stderr every S seconds while they run (fsnw-tree adds a
# line of its own: entries, rescans, CPU time), and still do their work.
. "$(dirname "$0")/lib.sh"

W=$TMP/w
mkdir "$W"

# count FILE ERE: how many lines of FILE match.
count() {
	grep -Ec -- "$2" "$1"
}

# until_count FILE ERE N: until N lines of FILE match.
until_count() {
	local end=$((SECONDS + WAIT_LIMIT))
	while (($(count "$1" "$2") < $3)); do
		((SECONDS < end)) || fail "fewer than $3 lines /$2/ in $1: $(tail -n 3 "$1")"
		sleep 0.05
	done
}

JSON='^\{"backend":"inotify",.*"logical_watches":1,.*"queue_high_water":'
start FW "$TMP/fw.out" "$TMP/fw.err" "$FSNW_WAIT" -m --backend inotify --stats-interval 0.1 "$W"
start FT "$TMP/ft.out" "$TMP/ft.err" "$FSNW_TREE" --backend inotify --stats-interval 0.1 "$W"
until_count "$TMP/fw.err" "$JSON" 3
until_count "$TMP/ft.err" "$JSON" 3
until_count "$TMP/ft.err" '^fsnw-tree: [0-9]+ entries, [0-9]+ rescans, CPU [0-9.]+ s user [0-9.]+ s system$' 3
touch "$W/a"
wait_for "$TMP/fw.out" "CLOSE_WRITE,CLOSE a\$"
wait_for "$TMP/ft.out" '"name":"a","events":\["CLOSE_WRITE"\]'
# The next statistics have seen the event.
until_count "$TMP/fw.err" '"events_delivered":[1-9]' 1
until_count "$TMP/ft.err" '^fsnw-tree: 1 entries, ' 1
stop "$FW"
[ $? = 143 ] || fail "fsnw-wait did not die of SIGTERM"
stop "$FT" || fail "fsnw-tree exited $?"
echo "fsnw-wait: $(count "$TMP/fw.err" "$JSON") statistics lines;" \
	"fsnw-tree: $(count "$TMP/ft.err" "$JSON")"

# Bad intervals are refused, with status 1.
for bad in 0 -1 x 1e9 0.0001; do
	"$FSNW_WAIT" --stats-interval "$bad" "$W" >/dev/null 2>"$TMP/err" &&
		fail "fsnw-wait took --stats-interval $bad"
	grep -q "'$bad' is not a valid interval" "$TMP/err" || fail "fsnw-wait: $(cat "$TMP/err")"
	"$FSNW_TREE" --stats-interval "$bad" "$W" >/dev/null 2>"$TMP/err" &&
		fail "fsnw-tree took --stats-interval $bad"
	grep -q "'$bad' is not a valid interval" "$TMP/err" || fail "fsnw-tree: $(cat "$TMP/err")"
done
echo "bad intervals refused"
