#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-wait against inotifywait 3.22, byte for byte: the same file
# operations under both print the same lines, in the same order, on stdout
# and on stderr, and both end with the same exit status (see run_pair and
# single_pair in lib.sh for how the order is kept deterministic). Names
# carry spaces, commas, quotes, newlines and bytes that are not UTF-8.
# (options.sh: -c, the regular expressions, -o, -d; syslog.sh: -s;
# compare-fanotify.sh: -F and -S against fsnotifywait.)
. "$(dirname "$0")/lib.sh"

command -v inotifywait >/dev/null || skip "inotifywait (inotify-tools) is not installed"

NAMES=('a,b' 'q"uote' '"' ' lead' 'trail ' ' ' 'in ner' $'nl\nx' $'bad\377\303(' $'tab\tx'
	'%w%c' 'plain')

# 1. A directory and a file in it, every event, the default line. The
# directory is given twice (with and without its slash) and the file three
# times (./ and a hard link): inotify watches an object once, and
# inotifywait prints its events once, under the first path.
W=$TMP/flat
mkdir "$W"
echo data >"$W/c"
ln "$W/c" "$W/hard"
run_pair flat "$W" "$W/c" "$W/" "$W/./c" "$W/hard" "$W/c"
echo hello >"$W/a"
chmod 600 "$W/a"
mv "$W/a" "$W/b"
mkdir "$W/sub"
rmdir "$W/sub"
rm "$W/b"
cat "$W/c" >/dev/null
echo more >>"$W/c"
echo via >>"$W/hard"
ln -s c "$W/l"
mv "$W/c" "$W/c2"
rm "$W/c2" "$W/l"
sync end
end_pair

# 2. Every conversion of inotifywait 3.22's --format: %c is the move
# cookie in hex (the kernel gives both watchers the same one), %ce the
# cookie and an 'e'; %i and %k are not conversions, %ie and %ke separate
# the events with i and k; a lone % at the end is printed.
W=$TMP/format
mkdir "$W"
run_pair format -e create,delete,attrib,close_write,move \
	--format '%w|%f|%e|%;e|%%|%x|%c|%ce|%ie|%ke|%i|%k|%{e|%' "$W"
touch "$W/a"
mkdir "$W/d"
mv "$W/a" "$W/d/a"
mv "$W/d/a" "$W/b"
mv "$W/b" "$W/b2"
chmod 700 "$W/d"
rm -r "$W/b2" "$W/d"
sync end '\|end\|CLOSE_WRITE,CLOSE\|'
end_pair

# 3. A tree (-r), given with a trailing slash, and a directory in it given
# again: watched once. Opening and reading directories is left out: both
# watchers walk new directories, and each would see the other's walk. A
# rename needs no sync: both name what comes after it by the new name.
W=$TMP/tree
mkdir -p "$W/x/y"
echo data >"$W/x/y/f"
mkdir "$TMP/outside"
run_pair tree -r -e create,delete,modify,attrib,close_write,move,delete_self,move_self \
	"$W/" "$W/x"
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

# 4. Names that need care, in the default line and in %w%f.
W=$TMP/names
mkdir "$W"
run_pair names "$W"
for n in "${NAMES[@]}"; do
	touch "$W/$n"
	mv "$W/$n" "$W/$n.2"
done
sync end
end_pair
W=$TMP/names2
mkdir "$W"
run_pair names2 -e create,moved_to,close_write --format '%w%f|%e' "$W"
for n in "${NAMES[@]}"; do
	touch "$W/$n"
done
mkdir "$W/"$'dir\377, "x"'
touch "$W/"$'dir\377, "x"/inner'
sync end 'end\|CLOSE_WRITE,CLOSE$'
end_pair

# 5. Event lists as inotifytools reads them: any case, repeated -e; a list
# with an empty name ("create,") is every event; isdir prints only events
# on directories (with -m -r, whose creates and moves the kernel sends to
# follow the tree); oneshot ends each watch after its first event.
W=$TMP/case
mkdir "$W"
run_pair case -e 'CREATE,Delete' -e moved_to "$W"
touch "$W/a"
mv "$W/a" "$W/b"
rm "$W/b"
sync end 'CREATE end$'
end_pair
W=$TMP/empty-name
mkdir "$W"
run_pair empty-name -e 'create,' "$W"
touch "$W/a"
rm "$W/a"
sync end
end_pair
W=$TMP/isdir
mkdir "$W"
run_pair isdir -r -e isdir "$W"
mkdir "$W/d1"
touch "$W/f1"
mv "$W/d1" "$W/d2"
mv "$W/f1" "$W/f2"
dsync s1
mkdir "$W/d2/inner"
dsync end
end_pair
# The first create in A ends A's watch; B's line comes after what A would
# print, were it still watched.
W=$TMP/oneshot
mkdir -p "$W/A" "$W/B"
run_pair oneshot -e create,oneshot "$W/A" "$W/B"
touch "$W/A/first"
wait_for "$TMP/oneshot.iw.out" ' CREATE first$'
touch "$W/A/second" "$W/B/sentinel"
wait_for "$TMP/oneshot.iw.out" ' CREATE sentinel$'
wait_for "$TMP/oneshot.fw.out" ' CREATE sentinel$'
end_pair
# Waiting for one event: only ignored is printed when the watch goes, and
# only it ends the wait with 0; q_overflow and isdir end it with 1.
for list in ignored q_overflow isdir all_events; do
	W=$TMP/single-$list
	mkdir "$W"
	single_pair "single-$list" -e "$list" "$W"
	rmdir "$W"
	end_single
done

# 6. A symbolic link to a directory: watched through it, shown without the
# slash (lstat(2) does not call it a directory); with -P, the link itself.
mkdir "$TMP/linked"
ln -s linked "$TMP/link"
ln -s linked/file "$TMP/flink"
touch "$TMP/linked/file"
W=$TMP/linked
run_pair link "$TMP/link"
touch "$W/x"
sync end
end_pair
single_pair link-P -P -e attrib "$TMP/flink"
touch -h "$TMP/flink"
end_single

# 7. Behind a slow reader, every event is printed (merging is --merge's):
# both are stopped while two files are written in turn, which the kernel
# cannot merge, then read it all.
W=$TMP/slow
mkdir "$W"
run_pair slow -e modify,close_write "$W"
kill -STOP "$IW" "$FW"
exec 3>>"$W/a" 4>>"$W/b"
for ((i = 0; i < 500; i++)); do
	echo 1 >&3
	echo 1 >&4
done
exec 3>&- 4>&-
kill -CONT "$IW" "$FW"
sync end
end_pair
[ "$(grep -c ' MODIFY ' "$TMP/slow.fw.out")" = 1000 ] || fail "slow: not 1000 MODIFY lines"
start FW "$TMP/merge.out" "$TMP/merge.err" "$FSNW_WAIT" -m --merge -e modify,close_write \
	--format '%f %e %{count}' "$W"
wait_for "$TMP/merge.err" '^Watches established\.$'
kill -STOP "$FW"
exec 3>>"$W/a" 4>>"$W/b"
for ((i = 0; i < 500; i++)); do
	echo 1 >&3
	echo 1 >&4
done
exec 3>&- 4>&-
kill -CONT "$FW"
touch "$W/end"
wait_for "$TMP/merge.out" '^end CLOSE_WRITE,CLOSE 1$'
stop "$FW"
lines=$(grep -c ' MODIFY ' "$TMP/merge.out")
sum=$(awk '$2 == "MODIFY" { s += $3 } END { print s }' "$TMP/merge.out")
((lines < 1000)) && [ "$sum" = 1000 ] || fail "--merge: $lines lines, counts add up to $sum"
echo "merge: 1000 modifies in $lines lines with --merge, %{count} adds up"

# 8. Exit statuses, and what each prints.
W=$TMP/exit
mkdir "$W"
touch "$W/f"
single_pair asked -e create "$W"
touch "$W/"$'new, "one"\n'
end_single
single_pair gone -e modify "$W/f"
rm "$W/f"
end_single
single_pair nul --format '%w%0%f%0%e%n%T' --timefmt '%%' -e create "$W"
touch "$W/nul"
end_single
# An empty %T prints nothing, as does a format ending in a lone %: the
# event still counts.
single_pair empty-T --format '%T %f' --timefmt '' -e create "$W"
touch "$W/t1"
end_single
single_pair lone --format 'x%' --no-newline -e create "$W"
touch "$W/t2"
end_single
same_run missing inotifywait "$FSNW_WAIT" "$W" "$TMP/nope"
same_run no-list inotifywait "$FSNW_WAIT" --fromfile "$TMP/nolist" "$TMP/nope"
same_run no-files inotifywait "$FSNW_WAIT" --fromfile /dev/null @"$W"
for args in '--bogus' '-x' '-e create,bogus' '-e close_writ' '-t soon' '-t' '-t 9999999999999999999999' \
	'--format %T' '--no-newline' '--timefmt %s' '-c --format %w' '-f' '-o' '-d'; do
	# shellcheck disable=SC2086 # the words are the options
	same_run "refused $args" inotifywait "$FSNW_WAIT" $args "$W"
done
same_run empty-timeout inotifywait "$FSNW_WAIT" -t '' "$W"
same_run empty-format inotifywait "$FSNW_WAIT" --format '' --no-newline "$W"
if without_inotify iw-noinst inotifywait && without_inotify fw-noinst "$FSNW_WAIT"; then
	same_run no-instance "$TMP/iw-noinst" "$TMP/fw-noinst" "$W"
	grep -q 'max_user_instances$' "$TMP/no-instance.o.err" || fail "no instance: $(cat "$TMP/no-instance.o.err")"
fi
echo "refusals and errors: the same words and status"

# Signals end both the same way: they die of it, monitoring or not. A
# shell starts a background job with SIGINT ignored, and nohup leaves SIGHUP
# ignored; env puts back the default of each signal sent.
env --default-signal=INT,HUP,TERM true 2>/dev/null || skip "env --default-signal (coreutils 8.31) is needed"
for sig in TERM HUP INT; do
	for m in -m ''; do
		PAIR="sig$sig$m"
		start IW "$TMP/$PAIR.iw.out" "$TMP/$PAIR.iw.err" env --default-signal=INT,HUP,TERM \
			inotifywait $m "$W"
		start FW "$TMP/$PAIR.fw.out" "$TMP/$PAIR.fw.err" env --default-signal=INT,HUP,TERM \
			"$FSNW_WAIT" $m "$W"
		wait_for "$TMP/$PAIR.iw.err" '^Watches established\.$'
		wait_for "$TMP/$PAIR.fw.err" '^Watches established\.$'
		kill -"$sig" "$IW" "$FW"
		end_single
	done
done

# Every event read restarts -t, one that a filter leaves out too: filtered
# creates come more often than the timeout for longer than it, then one
# that is not filtered. (Paced by sleeps: the test is about time.)
W=$TMP/restart
mkdir "$W"
single_pair restart -t 1 -e create --exclude skip "$W"
start IWM "$TMP/restart-m.iw.out" "$TMP/restart-m.iw.err" inotifywait -m -t 1 -e create \
	--exclude skip "$W"
start FWM "$TMP/restart-m.fw.out" "$TMP/restart-m.fw.err" "$FSNW_WAIT" -m -t 1 -e create \
	--exclude skip "$W"
wait_for "$TMP/restart-m.iw.err" '^Watches established\.$'
wait_for "$TMP/restart-m.fw.err" '^Watches established\.$'
for i in 1 2 3 4 5 6; do
	touch "$W/skip$i"
	sleep 0.3
done
touch "$W/real"
end_single
wait_exit "$IWM"
rc1=$?
wait_exit "$FWM"
rc2=$?
[ "$rc1" = 2 ] && [ "$rc2" = 2 ] || fail "restart -m: exit $rc2, inotifywait $rc1 (wanted 2)"
cmp "$TMP/restart-m.iw.out" "$TMP/restart-m.fw.out" || fail "restart -m: lines differ"
grep -q ' CREATE real$' "$TMP/restart-m.fw.out" || fail "restart -m: timed out before real"
echo "restart: filtered events restart -t in both"
