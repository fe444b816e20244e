#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-watch against inotifywatch 3.22, byte for byte: the same file
# operations under both give the same table (rows, columns, counts, order),
# the same messages and the same exit status. Several pairs watch at once,
# each with other options; they do not read the directories they watch, so
# none sees another. Before the end, each is asked for its table (SIGUSR1)
# until it shows the sync directory's count: then it has counted
# everything before. (inotifywatch's stdout is a file here, which stdio
# buffers: stdbuf makes its tables come out as they are printed.)
. "$(dirname "$0")/lib.sh"

command -v inotifywatch >/dev/null || skip "inotifywatch (inotify-tools) is not installed"

NAMES=('a,b' 'q"uote' ' lead' 'trail ' 'in ner' $'bad\377\303(' '%s' 'plain')

S=$TMP/sync
mkdir "$S"
PAIRS=()
NSYNC=0

# watch_pair NAME PER-SYNC ARGS...: inotifywatch and fsnw-watch with ARGS
# and the sync directory, which counts PER-SYNC events at each sync.
watch_pair() {
	local name=$1 per=$2 iw fw
	shift 2
	start iw "$TMP/$name.iw.out" "$TMP/$name.iw.err" stdbuf -oL inotifywatch "$@" "$S"
	start fw "$TMP/$name.fw.out" "$TMP/$name.fw.err" "$FSNW_WATCH" "$@" "$S"
	PAIRS+=("$name $per $iw $fw")
}

# ready: until every pair has set up its watches.
ready() {
	local p name
	for p in "${PAIRS[@]}"; do
		read -r name _ <<<"$p"
		wait_for "$TMP/$name.iw.err" '^Finished establishing watches'
		wait_for "$TMP/$name.fw.err" '^Finished establishing watches'
	done
}

# wsync: an event or two in the sync directory; until every watcher counts them.
wsync() {
	local p name per iw fw re
	NSYNC=$((NSYNC + 1))
	mkdir "$S/s$NSYNC"
	chmod 700 "$S"
	for p in "${PAIRS[@]}"; do
		read -r name per iw fw <<<"$p"
		re="^$((NSYNC * per)) .* $(ere_quote "$S")/\$"
		usr1_until "$iw" "$TMP/$name.iw.out" "$re"
		usr1_until "$fw" "$TMP/$name.fw.out" "$re"
	done
}

# The table printed at the end: the last of the output's tables.
last_table() {
	awk 'BEGIN { RS = "\n\n" } { last = $0 } END { printf "%s", last }' "$1"
}

# end_watch SIGNAL: stop every pair; status, last table and messages must agree.
end_watch() {
	local p name iw fw rc1 rc2
	for p in "${PAIRS[@]}"; do
		read -r _ _ iw fw <<<"$p"
		kill -"$1" "$iw" "$fw"
	done
	for p in "${PAIRS[@]}"; do
		read -r name _ iw fw <<<"$p"
		wait_exit "$iw"
		rc1=$?
		wait_exit "$fw"
		rc2=$?
		[ "$rc1" = "$rc2" ] || fail "$name: fsnw-watch exited $rc2, inotifywatch $rc1"
		last_table "$TMP/$name.iw.out" >"$TMP/$name.iw.last"
		last_table "$TMP/$name.fw.out" >"$TMP/$name.fw.last"
		cmp -s "$TMP/$name.iw.last" "$TMP/$name.fw.last" ||
			{ diff -u "$TMP/$name.iw.last" "$TMP/$name.fw.last"; fail "$name: tables differ"; }
		same_messages "$TMP/$name.iw.err" "$TMP/$name.fw.err" || fail "$name: messages differ"
		echo "$name: exit $rc1, $(wc -l <"$TMP/$name.fw.last") identical lines of the table"
	done
	PAIRS=()
	NSYNC=0
	rm -rf "${S:?}"/*
}

# 1. A directory and files, each kind of event, the default table and the
# options that shape it. The file is given three times (./, a hard link):
# one row, as inotify gives it one wd.
W=$TMP/flat
mkdir "$W"
echo data >"$W/f"
ln "$W/f" "$W/hard"
touch "$W/gone"
F=("$W" "$W/f" "$W/./f" "$W/hard" "$W/gone")
watch_pair default 2 "${F[@]}"
watch_pair zero 2 -z "${F[@]}"
watch_pair asc-modify 2 -a modify "${F[@]}"
watch_pair desc-cw 2 -d close_write "${F[@]}"
watch_pair asc-total 2 -a total "${F[@]}"
watch_pair desc-access 2 -d access "${F[@]}"
watch_pair last-sort 2 -d delete -d attrib "${F[@]}"
watch_pair attrib 1 -e modify,attrib -a attrib "${F[@]}"
watch_pair create-zero 1 -z -e create,delete "${F[@]}"
watch_pair exclude 2 --exclude '/(b|hard)$' "${F[@]}"
watch_pair includei 2 --includei 'F$|/SYNC' "${F[@]}"
ready
echo hello >"$W/a"
chmod 600 "$W/a"
mv "$W/a" "$W/b"
mkdir "$W/sub"
rmdir "$W/sub"
cat "$W/f" >/dev/null
echo more >>"$W/f"
echo via >>"$W/hard"
rm "$W/b" "$W/gone"
for n in "${NAMES[@]}"; do
	touch "$W/$n"
done
wsync
end_watch INT

# 2. A tree (-r): rows for its directories, renamed with them, one for each
# new directory, none for one moved out; a deleted directory's row counts
# its IGNORED. Opening and reading directories is left out: inotifywatch
# counts its own reading of each new directory. Nothing happens below a
# directory once it has moved out: inotifywatch would count it under the
# old name. The sync directory's two events are one create and one attrib.
W=$TMP/tree
mkdir -p "$W/a/b" "$W/c/e" "$W/x" "$W/skip/in" "$TMP/out/m"
E=(-r -e create,delete,modify,attrib,close_write,move,delete_self,move_self)
watch_pair tree 2 "${E[@]}" "$W"
watch_pair tree-zero 2 -z "${E[@]}" "$W"
watch_pair tree-asc 2 -a create "${E[@]}" "$W"
watch_pair tree-excl 2 "${E[@]}" "$W" "@$W/skip"
watch_pair tree-names 2 "${E[@]}" "$TMP/out"
ready
touch "$W/a/b/f1" "$W/skip/in/hidden"
mkdir "$W/n" "$W/"$'new, "dir"\377'
wsync
touch "$W/n/g" "$W/"$'new, "dir"\377/inner'
mv "$W/a" "$W/a2"
touch "$W/a2/b/f2"
mv "$W/c" "$TMP/out/"
rmdir "$W/x"
mv "$TMP/out/m" "$W/m"
wsync
touch "$W/m/h"
# The directories first, and both tools watching them, then their files:
# a file made before a tool watches its new directory is a race of its own,
# which this case is not about (it is about the names in the table).
for n in "${NAMES[@]}"; do
	mkdir "$TMP/out/$n"
done
wsync
for n in "${NAMES[@]}"; do
	touch "$TMP/out/$n/in"
done
wsync
end_watch TERM

# 3. -t: the table after the timeout, exit 0; with nothing counted, no
# table, and a word on stderr (with -v, what it is doing).
W=$TMP/timed
mkdir -p "$W/quiet"
start iw "$TMP/t.iw.out" "$TMP/t.iw.err" inotifywatch -t 1 "$W"
start fw "$TMP/t.fw.out" "$TMP/t.fw.err" "$FSNW_WATCH" -t 1 "$W"
start iwn "$TMP/tn.iw.out" "$TMP/tn.iw.err" inotifywatch -t 1 -v "$W/quiet"
start fwn "$TMP/tn.fw.out" "$TMP/tn.fw.err" "$FSNW_WATCH" -t 1 -v "$W/quiet"
wait_for "$TMP/t.iw.err" '^Finished establishing watches'
wait_for "$TMP/t.fw.err" '^Finished establishing watches'
touch "$W/in-time"
for p in "iw fw t" "iwn fwn tn"; do
	read -r a b t <<<"$p"
	wait_exit "${!a}" || fail "-t: inotifywatch exited $?"
	wait_exit "${!b}" || fail "-t: fsnw-watch exited $?"
	cmp "$TMP/$t.iw.out" "$TMP/$t.fw.out" || fail "-t: tables differ"
	diff -u "$TMP/$t.iw.err" "$TMP/$t.fw.err" || fail "-t: messages differ"
done
grep -q '^No events occurred\.$' "$TMP/tn.fw.err" || fail "-t, no event: $(cat "$TMP/tn.fw.err")"
echo "timeout: the same table, and the same nothing"

# 4. What both refuse, and other errors, in the same words and status.
W=$TMP/refuse
mkdir "$W"
same_run missing inotifywatch "$FSNW_WATCH" "$W" "$TMP/nope"
same_run missing-v inotifywatch "$FSNW_WATCH" -v -r "$W" "$TMP/nope"
same_run no-files inotifywatch "$FSNW_WATCH" --fromfile /dev/null
same_run no-list inotifywatch "$FSNW_WATCH" --fromfile "$TMP/nolist" "$TMP/nope"
for args in '--bogus' '-x' '-e create,bogus' '-t soon' '-t 1.x' '-a move' '-a close' \
	'-a bogus' '-d bogus' '-a create -d delete' '-a create -a delete' '-e modify -a attrib' \
	'-e modify -d attrib' '--exclude a --excludei b' '--include a --includei b' \
	'--include a --exclude b' '--exclude (' '--includei a{1' '-a isdir'; do
	# shellcheck disable=SC2086 # the words are the options
	same_run "refused $args" inotifywatch "$FSNW_WATCH" $args "$W"
done
if without_inotify iw-noinst inotifywatch && without_inotify fw-noinst "$FSNW_WATCH"; then
	same_run no-instance "$TMP/iw-noinst" "$TMP/fw-noinst" "$W"
	grep -q 'max_user_instances$' "$TMP/no-instance.o.err" || fail "no instance: $(cat "$TMP/no-instance.o.err")"
fi
echo "refusals and errors: the same words and status"
