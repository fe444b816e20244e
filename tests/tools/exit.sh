#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-wait's exit status is inotifywait's: 0 an event asked for was
# received, 1 an error or another event (the watch went away), 2 timeout.
# Signals end it as they end inotifywait: it dies of them, after releasing
# everything. Messages name what went wrong. (compare.sh runs the same
# cases against inotifywait itself.)
. "$(dirname "$0")/lib.sh"

W=$TMP/w
mkdir "$W"

# expect STATUS ERE CMD...: run fsnw-wait with CMD, check status and stderr.
expect() {
	local want=$1 re=$2 rc
	shift 2
	"$FSNW_WAIT" "$@" >"$TMP/out" 2>"$TMP/err"
	rc=$?
	[ "$rc" = "$want" ] || fail "fsnw-wait $*: exit $rc, wanted $want ($(cat "$TMP/err"))"
	[ -z "$re" ] || grep -Eq -- "$re" "$TMP/err" || fail "fsnw-wait $*: stderr lacks /$re/: $(cat "$TMP/err")"
}

# Errors: 1, with a message.
expect 1 "^Couldn't watch $TMP/nope: No such file or directory\$" "$TMP/nope"
expect 1 "^'create,bogus' is not a valid event!" -e create,bogus "$W"
expect 1 "'sideways' is not a backend" --backend sideways "$W"
expect 1 '^--timefmt cannot be specified without --format\.$' --timefmt %s "$W"
expect 1 '^%T is in --format string, but --timefmt was not specified\.$' --format %T "$W"
expect 1 'cannot both be specified' --json --format %w "$W"
expect 1 '^No files specified to watch!$'
expect 1 "'soon' is not a valid timeout" -t soon "$W"
expect 1 "unrecognized option '--no-such-option'\$" --no-such-option "$W"
grep -q Usage "$TMP/err" && fail "an unknown option printed the usage, which inotifywait does not"
expect 1 "^Couldn't open $TMP/nolist: No such file or directory\$" --fromfile "$TMP/nolist"
expect 0 '' --help
grep -q -- '--fromfile' "$TMP/out" || fail "--help does not list the options"

# Timeouts: 2, waiting for one event or monitoring.
expect 2 '^Watches established\.$' -t 0.3 "$W"
expect 2 '^Watches established\.$' -m -t 0.3 "$W"
[ -s "$TMP/out" ] && fail "a timeout printed events: $(cat "$TMP/out")"

# One event: 0, the line printed, and nothing after it.
start FW "$TMP/one.out" "$TMP/one.err" "$FSNW_WAIT" -e create "$W"
wait_for "$TMP/one.err" '^Watches established\.$'
touch "$W/x"
wait_exit "$FW" || fail "an event asked for: exit $?"
[ "$(cat "$TMP/one.out")" = "$W/ CREATE x" ] || fail "line: $(cat "$TMP/one.out")"

# The watched file goes away: IGNORED is not asked for, so 1 and no line.
start FW "$TMP/gone.out" "$TMP/gone.err" "$FSNW_WAIT" -e modify "$W/x"
wait_for "$TMP/gone.err" '^Watches established\.$'
rm "$W/x"
wait_exit "$FW"
rc=$?
[ "$rc" = 1 ] || fail "watch gone: exit $rc, wanted 1"
[ -s "$TMP/gone.out" ] && fail "watch gone printed $(cat "$TMP/gone.out")"

# A shell starts a background job with SIGINT ignored, and nohup leaves SIGHUP
# ignored; env puts back the default of each signal sent.
env --default-signal=INT,HUP,TERM true 2>/dev/null || skip "env --default-signal (coreutils 8.31) is needed"
DFL=(env --default-signal=INT,HUP,TERM)

# A monitor stays through events and dies of SIGTERM, SIGINT, SIGHUP.
for sig in TERM:143 INT:130 HUP:129; do
	start FW "$TMP/mon.out" "$TMP/mon.err" "${DFL[@]}" "$FSNW_WAIT" -m "$W"
	wait_for "$TMP/mon.err" '^Watches established\.$'
	touch "$W/m-${sig%:*}"
	wait_for "$TMP/mon.out" "CLOSE_WRITE,CLOSE m-${sig%:*}\$"
	stop "$FW" "${sig%:*}"
	rc=$?
	[ "$rc" = "${sig#*:}" ] || fail "monitor: exit $rc on SIG${sig%:*}, wanted ${sig#*:}"
done

# A single wait dies of SIGINT, as inotifywait would.
start FW "$TMP/int.out" "$TMP/int.err" "${DFL[@]}" "$FSNW_WAIT" "$W"
wait_for "$TMP/int.err" '^Watches established\.$'
stop "$FW" INT
rc=$?
[ "$rc" = 130 ] || fail "single wait: exit $rc on SIGINT, wanted 130 (killed by it)"

# A signal the tools were started with ignored stays ignored, as with
# inotifywait: SIGINT for a job started with & (here), SIGHUP under nohup.
# They go on, and still print what comes after it (only closes: the
# watchers would see each other read the directory).
command -v inotifywait >/dev/null && iw=(inotifywait) || iw=()
start FW "$TMP/ign.out" "$TMP/ign.err" env --ignore-signal=HUP "$FSNW_WAIT" -m -e close_write "$W"
start FT "$TMP/ignt.out" "$TMP/ignt.err" env --ignore-signal=HUP "$FSNW_TREE" "$W"
((${#iw[@]})) && start IW "$TMP/igni.out" "$TMP/igni.err" env --ignore-signal=HUP "${iw[@]}" -m -e close_write "$W"
wait_for "$TMP/ign.err" '^Watches established\.$'
wait_for "$TMP/ignt.err" '^fsnw-tree: watching '
((${#iw[@]})) && wait_for "$TMP/igni.err" '^Watches established\.$'
for pid in "$FW" "$FT" ${IW:+"$IW"}; do
	kill -INT "$pid"
	kill -HUP "$pid"
done
touch "$W/after-ign"
wait_for "$TMP/ign.out" "CLOSE_WRITE,CLOSE after-ign\$"
wait_for "$TMP/ignt.out" '"name":"after-ign"'
if ((${#iw[@]})); then
	wait_for "$TMP/igni.out" "CLOSE_WRITE,CLOSE after-ign\$"
	stop "$IW"
	diff -u "$TMP/igni.out" "$TMP/ign.out" || fail "ignored signals: lines differ from inotifywait's"
fi
stop "$FW"
rc=$?
[ "$rc" = 143 ] || fail "ignored signals: fsnw-wait -m exit $rc on SIGTERM"
stop "$FT" || fail "ignored signals: fsnw-tree exit $? on SIGTERM"

# -q: no setup messages; -qq: no events either, the status still says.
# Nothing tells when a quiet wait is ready, so delete until it has seen one.
start FW "$TMP/q.out" "$TMP/q.err" "$FSNW_WAIT" -q -e delete "$W"
for ((i = 0; i < WAIT_LIMIT * 20; i++)); do
	touch "$W/q"
	rm "$W/q"
	kill -0 "$FW" 2>/dev/null || break
	sleep 0.05
done
wait_exit "$FW" || fail "-q: exit $?"
[ -s "$TMP/q.err" ] && fail "-q printed $(cat "$TMP/q.err")"
[ "$(cat "$TMP/q.out")" = "$W/ DELETE q" ] || fail "-q line: $(cat "$TMP/q.out")"
expect 2 '' -qq -m -t 0.2 "$W"
[ -s "$TMP/err" ] && fail "-qq printed $(cat "$TMP/err")"

# --stats: the handle's JSON on stderr at exit, whatever the exit.
expect 2 '^\{"backend":"inotify",.*"logical_watches":1,' --stats -q -t 0.2 --backend inotify "$W"
# -I and -F choose the backend, as fsnotifywait's do (compare-fanotify.sh: -S).
expect 2 '^\{"backend":"inotify",' --stats -q -t 0.2 -I "$W"
"$FSNW_WAIT" -F --stats -q -t 0.2 "$W" >"$TMP/out" 2>"$TMP/err"
rc=$?
case $rc in
2) grep -q '^{"backend":"fanotify",' "$TMP/err" || fail "-F: $(cat "$TMP/err")" ;;
1) grep -q "^Couldn't initialize fanotify: " "$TMP/err" || fail "-F: $(cat "$TMP/err")" ;;
*) fail "-F: exit $rc" ;;
esac
echo "exit statuses and messages as documented"
