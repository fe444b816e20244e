#!/bin/bash
# SPDX-License-Identifier: MIT
# The same file operations under inotifywait -m and fsnw-wait -m --no-merge
# print the same lines, in the same order, on stdout and on stderr.
#
# Ordering is kept deterministic: both watchers are established before the
# first operation; a marker file (sync) is created wherever the next step
# needs both to have caught up (a new directory must be watched before
# anything is made in it); no operation makes two identical events in a row,
# which the kernel may or may not merge depending on when each reader reads.
. "$(dirname "$0")/lib.sh"

command -v inotifywait >/dev/null || skip "inotifywait (inotify-tools) is not installed"

# run_pair NAME ARGS...: start both watchers with ARGS.
run_pair() {
	PAIR=$1
	shift
	start IW "$TMP/$PAIR.iw.out" "$TMP/$PAIR.iw.err" inotifywait -m "$@"
	start FW "$TMP/$PAIR.fw.out" "$TMP/$PAIR.fw.err" "$FSNW_WAIT" -m --no-merge "$@"
	wait_for "$TMP/$PAIR.iw.err" '^Watches established\.$'
	wait_for "$TMP/$PAIR.fw.err" '^Watches established\.$'
}

# sync NAME [ERE]: create NAME in the watched root; wait until both
# watchers have printed its last event (a line matching ERE).
sync() {
	local re=${2:-"CLOSE_WRITE,CLOSE $1\$"}
	touch "$W/$1"
	wait_for "$TMP/$PAIR.iw.out" "$re"
	wait_for "$TMP/$PAIR.fw.out" "$re"
}

end_pair() {
	stop "$FW" || fail "$PAIR: fsnw-wait -m exited $? on SIGTERM"
	stop "$IW"
	diff -u "$TMP/$PAIR.iw.err" "$TMP/$PAIR.fw.err" || fail "$PAIR: stderr differs"
	diff -u "$TMP/$PAIR.iw.out" "$TMP/$PAIR.fw.out" || fail "$PAIR: events differ"
	[ -s "$TMP/$PAIR.fw.out" ] || fail "$PAIR: no events at all"
	echo "$PAIR: $(wc -l <"$TMP/$PAIR.fw.out") identical lines"
}

# 1. A directory and a file in it, every event, the default line.
W=$TMP/flat
mkdir "$W"
echo data >"$W/c"
run_pair flat "$W" "$W/c"
echo hello >"$W/a"
chmod 600 "$W/a"
mv "$W/a" "$W/b"
mkdir "$W/sub"
rmdir "$W/sub"
rm "$W/b"
cat "$W/c" >/dev/null
echo more >>"$W/c"
ln -s c "$W/l"
mv "$W/c" "$W/c2"
rm "$W/c2" "$W/l"
sync end
end_pair

# 2. Some events, a --format with every inotifywait conversion but %T.
W=$TMP/format
mkdir "$W"
run_pair format -e create,delete,attrib,close_write,moved_to \
	--format '%w|%f|%e|%;e|%%|%x|%' "$W"
touch "$W/a"
mkdir "$W/d"
mv "$W/a" "$W/d/a"
mv "$W/d/a" "$W/b"
chmod 700 "$W/d"
rm -r "$W/b" "$W/d"
sync end '\|end\|CLOSE_WRITE,CLOSE\|'
end_pair

# 3. A tree (-r), given with a trailing slash. Opening and reading
# directories is left out: both watchers walk new directories, and each
# would see the other's walk. A rename needs no sync: both name what comes
# after it by the new name.
W=$TMP/tree
mkdir -p "$W/x/y"
echo data >"$W/x/y/f"
mkdir "$TMP/outside"
run_pair tree -r -e create,delete,modify,attrib,close_write,move,delete_self,move_self "$W/"
echo hello >"$W/x/a"
mkdir "$W/n"
sync s1
echo 1 >"$W/n/f"
mkdir "$W/n/m"
sync s2
touch "$W/n/m/g"
mv "$W/n" "$W/n2"
echo x >>"$W/n2/m/g"
rm -rf "$W/n2"
mv "$W/x/y" "$W/y2"
sync s4
chmod 700 "$W/y2/f"
mv "$W/y2" "$TMP/outside/"
sync s5
touch "$TMP/outside/y2/unseen"
rm "$W/x/a"
sync end
end_pair
