#!/bin/bash
# SPDX-License-Identifier: MIT
# -s/--syslog, and -d which implies it: fsnw-wait's messages go to syslog(3)
# with inotifywait's facility (daemon) and priority (info), under its own
# name, and say what inotifywait's say, each with its newline, as
# inotifywait sends them; nothing is left on stderr. Heard on
# a private /dev/log: a socket of the test's, on a tmpfs mounted over /dev
# in a mount namespace of its own.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "a private /dev/log needs root"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
command -v python3 >/dev/null || skip "python3 is needed to listen on /dev/log"
unshare --mount --propagation private true 2>/dev/null || skip "no mount namespace here"

W=$TMP/w
mkdir "$W"
export TMP W FSNW_WAIT

# Runs in the namespace. The log has one line per datagram, its newlines
# written as \n.
unshare --mount --propagation private bash -s <<'EOF' || fail "in the mount namespace: exit $?"
set -eu
D=$TMP/dev
mkdir "$D"
mount -t tmpfs tmpfs "$D"
touch "$D/null"
mount --bind /dev/null "$D/null"
mkdir "$D/shm"
mount --rbind /dev/shm "$D/shm"
python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
with open(sys.argv[2], "ab", buffering=0) as f:
    f.write(b"listening\n")
    while True:
        f.write(s.recv(65536).replace(b"\n", b"\\n") + b"\n")
' "$D/log" "$TMP/log" &
listener=$!
trap 'kill $listener' EXIT
until grep -q listening "$TMP/log" 2>/dev/null; do sleep 0.05; done
mount --rbind "$D" /dev

set +e
"$FSNW_WAIT" -s -t 0.2 "$W" >"$TMP/fw.out" 2>"$TMP/fw.err"
echo "fw $?" >>"$TMP/status"
inotifywait -s -t 1 "$W" >"$TMP/iw.out" 2>"$TMP/iw.err"
echo "iw $?" >>"$TMP/status"
"$FSNW_WAIT" --syslog -r -t 0.2 "$W" "$TMP/missing" >>"$TMP/fw.out" 2>>"$TMP/fw.err"
echo "fw-missing $?" >>"$TMP/status"
inotifywait --syslog -r -t 1 "$W" "$TMP/missing" >>"$TMP/iw.out" 2>>"$TMP/iw.err"
echo "iw-missing $?" >>"$TMP/status"
"$FSNW_WAIT" -s -q --stats -t 0.2 "$W" >>"$TMP/fw.out" 2>>"$TMP/fw.err"
echo "fw-stats $?" >>"$TMP/status"
"$FSNW_WAIT" -d -o "$TMP/d.log" "$W" >>"$TMP/fw.out" 2>>"$TMP/fw.err"
echo "fw-daemon $?" >>"$TMP/status"
# The daemon's messages were sent before its parent returned: until the
# listener has written its "Watches established." (the first run's is the
# other), or 60 s.
for ((i = 0; i < 6000; i++)); do
	[ "$(grep -c 'fsnw-wait\[[0-9]*\]: Watches established' "$TMP/log")" -ge 2 ] && break
	sleep 0.01
done
EOF

PID=$(grep -F ' fsnw-wait[' "$TMP/log" | tail -n 1 | sed -E 's/.*\[([0-9]+)\].*/\1/')
[ -n "$PID" ] && [ -e "/proc/$PID" ] || fail "-d: no daemon running"
BG_PIDS+=("$PID")
grep -qx 'fw 2' "$TMP/status" || fail "-s -t: $(cat "$TMP/status")"
grep -qx 'fw-missing 1' "$TMP/status" || fail "-s on a missing path: $(cat "$TMP/status")"
grep -qx 'fw-stats 2' "$TMP/status" || fail "-s --stats: $(cat "$TMP/status")"
grep -qx 'fw-daemon 0' "$TMP/status" || fail "-d: $(cat "$TMP/status")"
[ -s "$TMP/fw.out" ] || [ -s "$TMP/fw.err" ] && fail "fsnw-wait printed $(cat "$TMP/fw.out" "$TMP/fw.err")"

# <30>: LOG_DAEMON (3) * 8 + LOG_INFO (6).
grep -v '^listening$' "$TMP/log" >"$TMP/all"
grep -Ev '^<30>[A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} (fsnw-wait|inotifywait)\[[0-9]+\]: ' "$TMP/all" &&
	fail "lines of another form"
# What each said, in order, without the header.
said() {
	grep -F " $1[" "$TMP/all" | sed -E 's/^[^]]*\]: //'
}
said fsnw-wait >"$TMP/fw.said"
said inotifywait >"$TMP/iw.said"
cat "$TMP/fw.said"
# The first two runs of each say the same things.
head -n 4 "$TMP/fw.said" >"$TMP/fw.head"
diff -u "$TMP/iw.said" "$TMP/fw.head" || fail "the messages differ from inotifywait's"
sed -n 5p "$TMP/fw.said" | grep -q '^{"backend":"inotify",.*"logical_watches":1,' ||
	fail "--stats did not go to syslog"
[ "$(sed -n '6,$p' "$TMP/fw.said")" = 'Setting up watches.\n
Watches established.\n' ] || fail "-d: the daemon's messages"
kill "$PID"
echo "syslog: $(wc -l <"$TMP/fw.said") messages, as inotifywait's"
