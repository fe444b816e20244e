#!/bin/bash
# SPDX-License-Identifier: MIT
# The tools release everything: run under memcheck, through overflows,
# rescans, statistics and dumps, they end on a signal (fsnw-tree and
# fsnw-watch with status 0, fsnw-wait dying of it as inotifywait does) with
# no memory error, no leak of any kind and no file descriptor of their own.
. "$(dirname "$0")/lib.sh"

command -v valgrind >/dev/null || skip "valgrind is not installed"
case ${FSNW_SANITIZE:-none} in
none | '') ;;
*) skip "built with -Db_sanitize=$FSNW_SANITIZE, which memcheck cannot run" ;;
esac
WAIT_LIMIT=300 # memcheck is slow to start

# vg NAME CMD...: the valgrind command line for CMD, its log in $TMP/NAME.vg.
vg() {
	local name=$1
	shift
	VG=(valgrind --error-exitcode=3 --leak-check=full --show-leak-kinds=all
		--errors-for-leak-kinds=all --track-fds=yes --log-file="$TMP/$name.vg" "$@")
}

# vg_check NAME STATUS [WANTED]: the run ended with WANTED (0), no error,
# and left nothing open.
vg_check() {
	[ "$2" = "${3:-0}" ] || { cat "$TMP/$1.vg" >&2; fail "$1: exit $2 under valgrind"; }
	grep -q 'ERROR SUMMARY: 0 errors' "$TMP/$1.vg" || { cat "$TMP/$1.vg" >&2; fail "$1: errors"; }
	# Every fd still open at exit must be one the test harness gave it.
	awk '/Open (file descriptor|AF_)/ { getline next_line
		if (next_line !~ /inherited from parent/) { print; bad = 1 } }
		END { exit bad }' "$TMP/$1.vg" || fail "$1: file descriptors left open"
	echo "$1: clean under valgrind"
}

W=$TMP/w
mkdir -p "$W/a/b"
touch "$W/a/b/x"

# fsnw-tree: overflow, rescan, stats, dump, SIGTERM.
vg fsnw-tree "$FSNW_TREE" --queue 4 --idle 8 --dump "$TMP/view" "$W"
start FT "$TMP/tree.out" "$TMP/tree.err" "${VG[@]}"
wait_for "$TMP/tree.err" '^fsnw-tree: watching '
kill -STOP "$FT"
(cd "$W" && touch $(seq -f f%g 1 100) && mkdir -p n/m && touch n/m/z && mv a a2 &&
	rm $(seq -f f%g 1 2 100)) || fail "tree operations"
kill -CONT "$FT"
touch "$W/sync"
wait_for "$TMP/tree.out" '"name":"sync"'
kill -USR1 "$FT"
wait_for "$TMP/tree.err" '"overflows_queue":[1-9]'
kill -USR2 "$FT"
wait_for "$TMP/view" 'sync$'
(cd "$W" && mv n n2 && rm -r a2) || fail "tree operations"
touch "$W/end"
wait_for "$TMP/tree.out" '"name":"end"'
stop "$FT"
vg_check fsnw-tree $?
grep -q 'rescan after overflow' "$TMP/tree.err" || fail "fsnw-tree never rescanned"

# fsnw-wait: a monitor of a tree, in JSON, with stats at exit.
vg fsnw-wait-monitor "$FSNW_WAIT" -m -r --json --stats "$W"
start FW "$TMP/wait.out" "$TMP/wait.err" "${VG[@]}"
wait_for "$TMP/wait.err" '^Watches established\.$'
mkdir "$W/new"
touch "$W/new/x" "$W/end2"
wait_for "$TMP/wait.out" '"name":"end2","events":\["CLOSE_WRITE"\]'
stop "$FW"
vg_check fsnw-wait-monitor $? 143
wait_for "$TMP/wait.err" '"logical_watches":1'

# fsnw-wait: CSV to an output file, a regular expression, statistics on a timer.
vg fsnw-wait-csv "$FSNW_WAIT" -m -r -c --exclude 'skip' --stats-interval 0.05 \
	-o "$TMP/csv.out" "$W"
start FW "$TMP/csv.stdout" "$TMP/csv.err" "${VG[@]}"
wait_for "$TMP/csv.err" '^Watches established\.$'
wait_for "$TMP/csv.err" '"logical_watches":1'
touch "$W/skip" "$W/a,b"
wait_for "$TMP/csv.out" '"CLOSE_WRITE,CLOSE","a,b"$'
stop "$FW"
vg_check fsnw-wait-csv $? 143
grep -q skip "$TMP/csv.out" && fail "fsnw-wait-csv: --exclude let skip through"

# fsnw-wait: one event, then out; and an error path.
vg fsnw-wait-one "$FSNW_WAIT" --format '%T %w%f %e %c %{count} %{wid} %ie' --timefmt %s "$W"
start FW "$TMP/one.out" "$TMP/one.err" "${VG[@]}"
wait_for "$TMP/one.err" '^Watches established\.$'
touch "$W/one"
wait_exit "$FW"
vg_check fsnw-wait-one $?
vg fsnw-wait-error "$FSNW_WAIT" -t 1 "$W" "$TMP/missing"
"${VG[@]}" >/dev/null 2>"$TMP/err.err"
rc=$?
[ "$rc" = 1 ] || fail "fsnw-wait with a missing path: exit $rc under valgrind"
vg_check fsnw-wait-error 0

# fsnw-watch: a tree with renames, a directory moved out and one deleted, a
# table on SIGUSR1, then SIGINT and the table.
mkdir -p "$W/wt/a/b" "$W/wt/c"
vg fsnw-watch "$FSNW_WATCH" -r -z "$W/wt"
start FWT "$TMP/watch.out" "$TMP/watch.err" "${VG[@]}"
wait_for "$TMP/watch.err" '^Finished establishing watches'
mv "$W/wt/a/b" "$W/wt/c/b2"
mv "$W/wt/c" "$W/c-out"
mkdir "$W/wt/n"
rmdir "$W/wt/n"
touch "$W/wt/end"
# The root's row has all 7 of its events: the move out, n's create and
# delete, and end's create, open, attrib and close.
usr1_until "$FWT" "$TMP/watch.out" "^7 .* $W/wt/\$"
stop "$FWT" INT
vg_check fsnw-watch $?
vg fsnw-watch-json "$FSNW_WATCH" --json -t 0.5 "$W/wt"
"${VG[@]}" >"$TMP/watch-json.out" 2>"$TMP/watch-json.err"
vg_check fsnw-watch-json $?

# fsnw-epoll: a tick, then SIGTERM.
vg fsnw-epoll "$FSNW_EPOLL" "$W"
start FE "$TMP/epoll.out" "$TMP/epoll.err" "${VG[@]}"
wait_for "$TMP/epoll.out" '^tick 1$'
stop "$FE"
vg_check fsnw-epoll $?
