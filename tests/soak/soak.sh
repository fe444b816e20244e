#!/bin/sh
# SPDX-License-Identifier: MIT
# The soak test of tree watches (issue 16): a generated tree of SOAK_ENTRIES
# entries (make-tree.py, no download) is extracted into a watched directory,
# subtrees are moved out and back in under other names, renamed, filled
# through a directory renamed before it was read, moved in and renamed
# before they were read, and removed, SOAK_ROUNDS
# times, while soak-view keeps its view of the tree from the library's
# events (rescanning on every overflow). In odd rounds the watcher reads as
# the changes happen; in even rounds it is stopped (SIGSTOP) while they
# happen, as a busy reader would be, so that the kernel's queue overflows
# and renames overtake the directories they move. After each phase its view must
# equal what find(1) lists. Prints, per backend and phase: events,
# overflows, rescans, CPU (user, sys) and RSS of the watcher.
# usage: soak.sh SOAK_VIEW MAKE_TREE [BACKEND...]
# env: SOAK_ENTRIES (60000), SOAK_ROUNDS (2), SOAK_QUIET_MS (1000),
#      SOAK_TIMEOUT (seconds a phase may take to settle, 900)
set -u
view=$1
maketree=$2
shift 2
backends=${*:-inotify fanotify}
entries=${SOAK_ENTRIES:-60000}
rounds=${SOAK_ROUNDS:-2}
quiet=${SOAK_QUIET_MS:-1000}
limit=${SOAK_TIMEOUT:-900}

scratch=$(mktemp -d /dev/shm/fsnw-soak-XXXXXX 2>/dev/null || mktemp -d) || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$scratch"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

python3 "$maketree" "$scratch/gen" "$entries" >/dev/null || exit 1
tar -C "$scratch/gen" -cf "$scratch/tree.tar" src || exit 1
rm -rf "$scratch/gen"

status=0
ran=0
lines=0

fail() {
	echo "FAIL [$backend] $*"
	status=1
}

# hold: in a stopped round, stop the watcher while the next changes happen.
hold() {
	[ -n "$stop" ] && kill -STOP "$pid"
}

# check PHASE: let the watcher go on, wait until it has read everything,
# then compare.
check() {
	[ -n "$stop" ] && kill -CONT "$pid"
	echo "sync $1 $scratch/view" >&3
	lines=$((lines + 1))
	t=0
	while [ "$(wc -l <"$scratch/res")" -le "$lines" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			fail "$1: the watcher died:"
			cat "$scratch/err"
			return 1
		fi
		sleep 0.2
		t=$((t + 1))
		if [ "$t" -gt $((limit * 5)) ]; then
			fail "$1: no answer in ${limit}s"
			return 1
		fi
	done
	result=$(sed -n "$((lines + 1))p" "$scratch/res")
	printf '%-9s %s\n' "$backend" "$result"
	(cd "$w" && find . -mindepth 1 -printf '%y %P\n') | LC_ALL=C sort >"$scratch/find"
	if ! cmp -s "$scratch/view" "$scratch/find"; then
		fail "$1: the view differs from find (< view, > find):"
		diff "$scratch/view" "$scratch/find" | head -20
	fi
	# Every overflow was followed by a rescan.
	o=$(echo "$result" | sed -n 's/.* overflows=\([0-9]*\).*/\1/p')
	r=$(echo "$result" | sed -n 's/.* rescans=\([0-9]*\).*/\1/p')
	[ "${r:-0}" -ge "${o:-0}" ] || fail "$1: $o overflows, $r rescans"
}

for backend in $backends; do
	if [ "$backend" = fanotify ] && [ "$(id -u)" -ne 0 ]; then
		echo "skip [fanotify]: needs root"
		continue
	fi
	w=$scratch/w-$backend
	out=$scratch/out-$backend
	mkdir "$w" "$out"
	rm -f "$scratch/cmd"
	mkfifo "$scratch/cmd"
	: >"$scratch/res"
	"$view" --backend "$backend" --quiet "$quiet" "$w" <"$scratch/cmd" >"$scratch/res" \
		2>"$scratch/err" &
	pid=$!
	exec 3>"$scratch/cmd"
	lines=0
	t=0
	while [ "$(wc -l <"$scratch/res")" -lt 1 ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			wait "$pid"
			rc=$?
			pid=
			exec 3>&-
			if [ "$rc" -eq 77 ]; then
				echo "skip [$backend]: $(cat "$scratch/err")"
				continue 2
			fi
			fail "the watcher did not start: $(cat "$scratch/err")"
			continue 2
		fi
		sleep 0.1
		t=$((t + 1))
	done
	ran=$((ran + 1))
	printf '%-9s %s\n' backend phase
	for round in $(seq "$rounds"); do
		stop=
		[ $((round % 2)) -eq 0 ] && stop=1
		hold
		tar -C "$w" -xf "$scratch/tree.tar"
		check "extract-$round"
		# Three top-level subtrees out, then back in, deeper, renamed.
		top=$(cd "$w/src" && ls -d d* | head -n 3)
		hold
		for d in $top; do
			mv "$w/src/$d" "$out/$d"
		done
		check "move-out-$round"
		deep=$(cd "$w/src" && find . -mindepth 2 -type d | LC_ALL=C sort | head -n 1)
		i=0
		hold
		for d in $top; do
			i=$((i + 1))
			mv "$out/$d" "$w/src/$deep/moved-in-$i"
		done
		check "move-in-$round"
		# A directory made, filled by a move and renamed before it is read.
		hold
		mkdir "$w/new"
		mv "$w/src/$deep/moved-in-1" "$w/new/inc"
		mv "$w/new" "$w/src/new2"
		check "fill-rename-$round"
		# A subtree moved out, back in, and renamed before it is read.
		hold
		mv "$w/src/$deep/moved-in-2" "$out/back"
		mv "$out/back" "$w/src/back"
		mv "$w/src/back" "$w/src/back-renamed"
		check "in-rename-$round"
		hold
		mv "$w/src" "$w/src-renamed"
		check "rename-$round"
		hold
		rm -rf "$w/src-renamed"
		check "remove-$round"
	done
	echo quit >&3
	exec 3>&-
	wait "$pid" || fail "the watcher exited $?: $(cat "$scratch/err")"
	pid=
	rm -rf "$w" "$out"
done
[ "$ran" -gt 0 ] || exit 77
[ "$status" -eq 0 ] && echo "ok: $ran backend(s), $rounds round(s) of $entries entries"
exit "$status"
