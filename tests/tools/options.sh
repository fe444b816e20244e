#!/bin/bash
# SPDX-License-Identifier: MIT
# inotifywait's options that fsnw-wait took up later, against inotifywait
# itself, byte for byte: -c/--csv, --exclude, --excludei, --include,
# --includei, -o/--outfile, -d/--daemon, -t -1, and the messages of the
# combinations both refuse. Names carry commas, quotes, spaces, newlines and
# bytes that are not UTF-8. (-s/--syslog: syslog.sh.)
. "$(dirname "$0")/lib.sh"

command -v inotifywait >/dev/null || skip "inotifywait (inotify-tools) is not installed"

NAMES=('a,b' 'q"uote' '"' ' lead' 'trail ' ' ' 'in ner' $'nl\nx' $'bad\377\303(' $'tab\tx'
	'plain')

# 1. --csv: the watched directory's own path needs quoting too, and so does
# a watched file's.
W="$TMP/csv, \"dir\""
mkdir "$W"
touch "$W/file,1"
run_pair csv -c "$W" "$W/file,1"
for n in "${NAMES[@]}"; do
	touch "$W/$n"
done
mkdir "$W/sub, dir"
mv "$W/plain" "$W/pl ain"
echo x >>"$W/file,1"
rm "$W/pl ain" "$W/a,b"
rmdir "$W/sub, dir"
sync end '"CLOSE_WRITE,CLOSE",end$'
end_pair

# 2. The regular expressions, on %w%f of a tree (-r): POSIX extended, as
# inotifywait compiles them. Directories are not read or opened here (each
# watcher would see the other's walk), and --include makes no directory:
# inotifywait does not watch a new directory whose CREATE it hides.
EVENTS=create,modify,attrib,close_write,move,delete
regex_pair() {
	local name=$1 mkdirs=$2
	shift 2
	W=$TMP/$name
	mkdir -p "$W/skip" "$W/Keep"
	run_pair "$name" -r -e "$EVENTS" "$@" "$W"
	for n in "${NAMES[@]}" a.c b.o B.O; do
		touch "$W/$n" "$W/skip/$n" "$W/Keep/$n"
	done
	if [ "$mkdirs" = yes ]; then
		mkdir "$W/new dir"
		sync s1 "s1"
		touch "$W/new dir/c.c" "$W/new dir/x,y"
	fi
	echo 1 >>"$W/a.c"
	mv "$W/Keep/a.c" "$W/Keep/moved.c"
	rm "$W/b.o" "$W/skip/B.O"
	sync end '[^/]end$'
	end_pair
}
regex_pair exclude yes --exclude '/skip/|[[:space:]]|,'
regex_pair excludei yes --excludei 'KEEP|\.O$|\"'
regex_pair include no --include '\.c$|(^|/)[^/]*[^[:print:]][^/]*$|end$'
regex_pair includei no --includei '/keep/[^/]*$|LEAD|END$'
# Only the last --exclude counts, and both say so on stderr.
W=$TMP/last
mkdir "$W"
run_pair last --exclude nothing --exclude '/a$' "$W"
touch "$W/a" "$W/b"
sync end
end_pair

# 3. -o FILE: the lines are appended to FILE, stdout stays empty, messages
# stay on stderr.
W=$TMP/out
mkdir "$W"
echo "a line from before" >"$TMP/o.iw"
echo "a line from before" >"$TMP/o.fw"
PAIR=outfile
start IW "$TMP/$PAIR.iw.out" "$TMP/$PAIR.iw.err" inotifywait -m -o "$TMP/o.iw" "$W"
start FW "$TMP/$PAIR.fw.out" "$TMP/$PAIR.fw.err" "$FSNW_WAIT" -m -o "$TMP/o.fw" "$W"
wait_for "$TMP/$PAIR.iw.err" '^Watches established\.$'
wait_for "$TMP/$PAIR.fw.err" '^Watches established\.$'
IW_LINES=$TMP/o.iw FW_LINES=$TMP/o.fw
touch "$W/"$'nl\nx' "$W/b"
rm "$W/b"
sync end
end_pair
[ -s "$TMP/$PAIR.fw.out" ] && fail "-o: stdout has $(cat "$TMP/$PAIR.fw.out")"
[ "$(stat -c %a "$TMP/o.fw")" = "$(stat -c %a "$TMP/o.iw")" ] || fail "-o: file modes differ"
unset IW_LINES FW_LINES

# 4. -d: a daemon, lines to -o. fsnw-wait's parent returns once the watches
# are set: what happens next is seen. inotifywait's returns at once, and
# wants an -o file that exists; it is probed until it hears.
# writer FILE: the pid of the process whose standard output is FILE.
writer() {
	local p end=$((SECONDS + WAIT_LIMIT)) PAUSE_MS=5
	while ((SECONDS < end)); do
		for p in /proc/[0-9]*; do
			if [ "$p/fd/1" -ef "$1" ]; then
				echo "${p#/proc/}"
				return 0
			fi
		done
		pause
	done
	return 1
}

# gone PID: until the process (not a child of ours) has exited. A zombie
# has: it waits for whoever adopted it (init, which may reap it seconds
# later) to reap it.
gone() {
	local end=$((SECONDS + WAIT_LIMIT)) stat PAUSE_MS=5
	while read -r _ _ stat _ 2>/dev/null <"/proc/$1/stat" && [ "$stat" != Z ]; do
		((SECONDS < end)) || fail "process $1 did not exit"
		pause
	done
}

W=$TMP/daemon
mkdir "$W"
"$FSNW_WAIT" -d -o "$TMP/d.fw" "$W" >"$TMP/d.out" 2>"$TMP/d.err"
rc=$?
[ "$rc" = 0 ] || fail "-d: exit $rc: $(cat "$TMP/d.err")"
touch "$W/first"
FWD=$(writer "$TMP/d.fw") || fail "-d: no process writes to the -o file"
BG_PIDS+=("$FWD")
wait_for "$TMP/d.fw" "^$W/ CREATE first\$"
[ -s "$TMP/d.out" ] || [ -s "$TMP/d.err" ] && fail "-d: the parent printed $(cat "$TMP/d.out" "$TMP/d.err")"
read -r -a stat <"/proc/$FWD/stat"
[ "${stat[5]}" = "$FWD" ] || fail "-d: the daemon leads no session of its own"
[ "$(readlink "/proc/$FWD/cwd")" = / ] || fail "-d: the daemon is not in /"
[ "$(readlink "/proc/$FWD/fd/0")" = /dev/null ] || fail "-d: stdin is not /dev/null"
[ "$(readlink "/proc/$FWD/fd/2")" = /dev/null ] || fail "-d: stderr is not /dev/null"
touch "$TMP/d.iw"
inotifywait -d -o "$TMP/d.iw" "$W" || fail "inotifywait -d failed"
IWD=$(writer "$TMP/d.iw") || fail "inotifywait -d: no daemon"
BG_PIDS+=("$IWD")
for ((i = 0; i < WAIT_LIMIT * 20; i++)); do
	touch "$W/probe"
	grep -q ' probe$' "$TMP/d.iw" && break
	sleep 0.05
done
PAIR=daemon IW_LINES=$TMP/d.iw FW_LINES=$TMP/d.fw
sync start 'CLOSE_WRITE,CLOSE start$'
touch "$W/x,y" "$W/"$'bad\377'
rm "$W/x,y"
sync end
unset IW_LINES FW_LINES
kill "$FWD" "$IWD"
gone "$FWD"
gone "$IWD"
sed -n '/ CREATE start$/,$p' "$TMP/d.iw" >"$TMP/d.iw.tail"
sed -n '/ CREATE start$/,$p' "$TMP/d.fw" >"$TMP/d.fw.tail"
cmp -s "$TMP/d.iw.tail" "$TMP/d.fw.tail" || { diff -u "$TMP/d.iw.tail" "$TMP/d.fw.tail"; fail "-d: lines differ"; }
echo "daemon: $(wc -l <"$TMP/d.fw.tail") identical lines, ready when the parent returns"

# A relative -o is the caller's, though the daemon leaves for /.
(cd "$TMP" && "$FSNW_WAIT" -d -q -o rel.log "$W") || fail "-d -o relative: exit $?"
touch "$W/rel"
FWD=$(writer "$TMP/rel.log") || fail "-d -o relative: no daemon"
BG_PIDS+=("$FWD")
wait_for "$TMP/rel.log" ' CREATE rel$'
kill "$FWD"
gone "$FWD"
# A daemon that cannot watch: its parent says so and exits 1.
"$FSNW_WAIT" -d -o "$TMP/bad.log" "$TMP/missing" >/dev/null 2>"$TMP/bad.err"
rc=$?
[ "$rc" = 1 ] || fail "-d on a missing path: exit $rc"
grep -q 'daemon could not set up its watches' "$TMP/bad.err" || fail "-d: $(cat "$TMP/bad.err")"

# 5. -t -1 waits for ever, like -t 0 (inotifywait turns it into 136 years).
W=$TMP/forever
mkdir "$W"
start IW "$TMP/t.iw.out" "$TMP/t.iw.err" inotifywait -t -1 "$W"
start FW "$TMP/t.fw.out" "$TMP/t.fw.err" "$FSNW_WAIT" -t -1 "$W"
wait_for "$TMP/t.iw.err" '^Watches established\.$'
wait_for "$TMP/t.fw.err" '^Watches established\.$'
# An absence, waited for: -t -1 does not end the wait, here for 1.2 s.
sleep 1.2
kill -0 "$FW" 2>/dev/null || fail "-t -1 ended without an event"
touch "$W/late"
wait_exit "$FW" || fail "-t -1: exit $?"
wait_exit "$IW"
cmp "$TMP/t.iw.out" "$TMP/t.fw.out" || fail "-t -1: lines differ"
cmp "$TMP/t.iw.err" "$TMP/t.fw.err" || fail "-t -1: messages differ"

# 6. What both refuse, in the same words, with status 1.
W=$TMP/refuse
mkdir "$W"
refused() {
	local rc1 rc2
	# A timeout only so that one not refused cannot hang the suite.
	timeout "$WAIT_LIMIT" inotifywait "$@" >/dev/null 2>"$TMP/r.iw"
	rc1=$?
	timeout "$WAIT_LIMIT" "$FSNW_WAIT" "$@" >/dev/null 2>"$TMP/r.fw"
	rc2=$?
	[ "$rc1" = "$rc2" ] || fail "$*: exit $rc2, inotifywait $rc1"
	diff -u "$TMP/r.iw" "$TMP/r.fw" || fail "$*: messages differ"
}
refused --exclude a --excludei b "$W"
refused --include a --includei b "$W"
refused --include a --exclude b "$W"
refused --excludei a --includei b "$W"
refused --exclude '(' "$W"
refused --includei 'a{1' "$W"
refused -c --format %w "$W"
refused --no-newline "$W"
refused -d "$W"
refused -o a -o b "$W"
refused -o "$TMP/no/such/dir/x" "$W"
refused -f "$W"
refused -t 1 --exclude a --exclude b --excludei c "$W"
echo "refusals: the same words and status as inotifywait"
