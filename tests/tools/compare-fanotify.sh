#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-wait -F and -S against fsnotifywait, and fsnw-watch -S against
# fsnotifywatch, byte for byte: the absolute directory and the name. -S
# watches a whole filesystem: a tmpfs of the test's own, in a mount
# namespace of its own. Each operation makes one event, and the next waits
# until both have printed it: fanotify merges the events of one object
# that wait in its queue, which the library reports one by one. Without
# privileges, both refuse in the same words.
if [ "${1:-}" != inside ]; then
	. "$(dirname "$0")/lib.sh"
	command -v fsnotifywait >/dev/null || skip "fsnotifywait (inotify-tools) is not installed"
	[ "$(id -u)" = 0 ] || skip "fanotify needs root"
	command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
	unshare --mount --propagation private true 2>/dev/null || skip "no mount namespace here"
	"$FSNW_WAIT" -F -q -t 0.1 "$TMP" 2>/dev/null
	[ $? = 2 ] || skip "fanotify is not available here"
	unshare --mount --propagation private bash "$0" inside
	exit
fi
. "$(dirname "$0")/lib.sh"

M=$TMP/mnt
mkdir "$M"
mount -t tmpfs tmpfs "$M" || fail "cannot mount a tmpfs"
MOUNTS+=("$M")
cd "$M" || fail "cd $M"

# fan_pair NAME ARGS...: fsnotifywait and fsnw-wait, monitoring with ARGS.
# fsnotifywait buffers its lines with -S: stdbuf makes them come a line at a time.
fan_pair() {
	PAIR=$1
	shift
	start IW "$TMP/$PAIR.iw.out" "$TMP/$PAIR.iw.err" stdbuf -oL fsnotifywait -m -q "$@"
	start FW "$TMP/$PAIR.fw.out" "$TMP/$PAIR.fw.err" "$FSNW_WAIT" -m -q "$@"
	# Nothing to wait for with -q: an event both must print says they are ready.
	ready=$((ready + 1))
	until grep -q "CREATE,ISDIR ready$ready\$" "$TMP/$PAIR.iw.out" 2>/dev/null &&
		grep -q "CREATE,ISDIR ready$ready\$" "$TMP/$PAIR.fw.out" 2>/dev/null; do
		rmdir "$READY/ready$ready" 2>/dev/null
		mkdir "$READY/ready$ready"
		sleep 0.05
	done
}
ready=0

# step ERE CMD...: run CMD, then wait until both have printed a line that matches.
step() {
	local re=$1
	shift
	"$@" || fail "$PAIR: $*"
	wait_for "$TMP/$PAIR.iw.out" "$re"
	wait_for "$TMP/$PAIR.fw.out" "$re"
}

# end_fan: stop both; the lines but the readiness probes' must be the same.
end_fan() {
	stop "$IW"
	stop "$FW"
	grep -av ' CREATE,ISDIR ready[0-9]*$' "$TMP/$PAIR.iw.out" >"$TMP/$PAIR.iw.lines"
	grep -av ' CREATE,ISDIR ready[0-9]*$' "$TMP/$PAIR.fw.out" >"$TMP/$PAIR.fw.lines"
	cmp -s "$TMP/$PAIR.iw.lines" "$TMP/$PAIR.fw.lines" ||
		{ diff -u "$TMP/$PAIR.iw.lines" "$TMP/$PAIR.fw.lines"; fail "$PAIR: lines differ"; }
	[ -s "$TMP/$PAIR.fw.lines" ] || fail "$PAIR: no lines"
	echo "$PAIR: $(wc -l <"$TMP/$PAIR.fw.lines") identical lines"
}

NAMES=('a,b' 'q"uote' ' lead' 'in ner' $'bad\377\303(' 'plain')

# 1. -F: a directory and a file in it, given relative to the working
# directory; an event on the file is one line, not one per watch.
mkdir -p d/sub other
touch d/f
READY=$M/d
fan_pair fanotify -F -e create,attrib,modify,moved_to d d/f
step " CREATE,ISDIR new\$" mkdir d/new
step " ATTRIB f\$" chmod 600 d/f
step " MODIFY f\$" sh -c 'echo x >>d/f'
for n in "${NAMES[@]}"; do
	step " CREATE $(ere_quote "$n")\$" mkfifo "d/$n"
done
step " MOVED_TO g\$" mv d/f d/g
step " ATTRIB,ISDIR \$" chmod 700 d
end_fan

# 2. -S: the filesystem of a file, events anywhere on it, each once.
READY=$M/other
fan_pair filesystem -S -e create,attrib,modify,moved_to d/g
step " CREATE,ISDIR x\$" mkdir other/x
step "other/ ATTRIB,ISDIR \$" chmod 700 other
step "other/x/ ATTRIB,ISDIR \$" chmod 700 other/x
step " ATTRIB g\$" chmod 644 d/g
step " MODIFY g\$" sh -c 'echo x >>d/g'
for n in "${NAMES[@]}"; do
	step " CREATE $(ere_quote "$n")\$" mkfifo "other/x/$n"
done
step "other/ MOVED_TO,ISDIR y\$" mv other/x other/y
end_fan
grep -q "^$M/other/ CREATE,ISDIR x\$" "$TMP/filesystem.fw.lines" || fail "-S: not absolute"

# 3. -F -r: a tree, new directories in it followed, the names absolute.
mkdir -p t/a/b
READY=$M/t
fan_pair tree -F -r -e create,attrib,moved_to t
step "t/a/ CREATE,ISDIR c\$" mkdir t/a/c
step "t/a/c/ CREATE,ISDIR d\$" mkdir t/a/c/d
step "t/a/c/d/ CREATE e\$" mkfifo t/a/c/d/e
step "t/a/b/ CREATE f\$" mkfifo t/a/b/f
step "t/ MOVED_TO,ISDIR b2\$" mv t/a/b t/b2
step "t/b2/ CREATE g\$" mkfifo t/b2/g
step "t/a/ ATTRIB,ISDIR $" chmod 700 t/a
end_fan

# 4. fsnw-watch -S against fsnotifywatch -S: a row per name, absolute. Each
# operation makes one event, and the next waits until both have counted it
# (a table on SIGUSR1 shows its row).
watch_step() {
	local re=$1
	shift
	"$@" || fail "watch: $*"
	usr1_until "$IW" "$TMP/watch.iw.out" "$re"
	usr1_until "$FW" "$TMP/watch.fw.out" "$re"
}
mkdir -p s/a s/b
touch s/f
PAIR=watch
start IW "$TMP/watch.iw.out" "$TMP/watch.iw.err" stdbuf -oL fsnotifywatch -S -e create,attrib,modify s/f
start FW "$TMP/watch.fw.out" "$TMP/watch.fw.err" "$FSNW_WATCH" -S -e create,attrib,modify s/f
wait_for "$TMP/watch.iw.err" '^Finished establishing watches'
wait_for "$TMP/watch.fw.err" '^Finished establishing watches'
watch_step " $M/s/a/x\$" mkdir s/a/x
watch_step " $M/s/b/\$" chmod 700 s/b
watch_step "^1 .* $M/s/f\$" chmod 600 s/f
watch_step "^2 .* $M/s/f\$" sh -c 'echo x >>s/f'
for n in "${NAMES[@]}"; do
	watch_step " $(ere_quote "$M/s/b/$n")\$" mkfifo "s/b/$n"
done
watch_step " $M/other/y/\$" chmod 700 other/y
stop "$IW" INT
rc1=$?
stop "$FW" INT
rc2=$?
[ "$rc1" = "$rc2" ] || fail "watch: fsnw-watch exited $rc2, fsnotifywatch $rc1"
# The last table of each: the one printed at the end. fsnotifywatch puts
# rows with the same count in the order of their addresses in its memory
# (see fsnw-watch(1)): the rows are compared in an order of their own.
for t in iw fw; do
	awk 'BEGIN { RS = "\n\n" } { last = $0 } END { printf "%s\n", last }' \
		"$TMP/watch.$t.out" | { IFS= read -r head; echo "$head"; LC_ALL=C sort; } \
		>"$TMP/watch.$t.last"
done
cmp -s "$TMP/watch.iw.last" "$TMP/watch.fw.last" ||
	{ diff -u "$TMP/watch.iw.last" "$TMP/watch.fw.last"; fail "watch: tables differ"; }
same_messages "$TMP/watch.iw.err" "$TMP/watch.fw.err" || fail "watch: messages differ"
echo "watch: $(wc -l <"$TMP/watch.fw.last") identical lines of the table"

# 5. Without privileges (CAP_SYS_ADMIN) a filesystem cannot be marked:
# both refuse -S in the same words, and fail. fsnotifywait -F marks inodes,
# which needs none since Linux 5.13; the library's fanotify backend wants
# both of them, and fsnw-wait -F says so.
command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
chmod 755 "$TMP" "$M" "$M/d"
for pair in "fsnotifywait $FSNW_WAIT" "fsnotifywatch $FSNW_WATCH"; do
	read -r tool ours <<<"$pair"
	"${nobody[@]}" "$tool" -S "$M/d" >"$TMP/np.t.out" 2>"$TMP/np.t.err"
	rc1=$?
	"${nobody[@]}" "$ours" -S "$M/d" >"$TMP/np.o.out" 2>"$TMP/np.o.err"
	rc2=$?
	[ "$rc1" = 1 ] && [ "$rc2" = 1 ] || fail "unprivileged $ours -S: exit $rc2, $tool $rc1"
	cmp -s "$TMP/np.t.err" "$TMP/np.o.err" ||
		{ diff -u "$TMP/np.t.err" "$TMP/np.o.err"; fail "unprivileged -S: messages differ"; }
	grep -q "filesystem watch $M/d: Operation not permitted" "$TMP/np.o.err" ||
		fail "unprivileged $ours -S: $(cat "$TMP/np.o.err")"
	"${nobody[@]}" "$ours" -F "$M/d" >"$TMP/np.o.out" 2>"$TMP/np.o.err"
	rc2=$?
	[ "$rc2" = 1 ] && [ "$(cat "$TMP/np.o.err")" = "Couldn't initialize fanotify: Operation not permitted
fanotify watch requires admin privileges" ] || fail "unprivileged $ours -F: exit $rc2, $(cat "$TMP/np.o.err")"
done
echo "unprivileged: -S refused as by fsnotifywait and fsnotifywatch, -F refused plainly"
