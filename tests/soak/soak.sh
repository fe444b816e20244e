#!/bin/bash
# SPDX-License-Identifier: MIT
# The soak test of tree watches: fsnw-tree follows a watched directory live
# (it reads while the changes happen, as a daemon does) while a generated
# tree of SOAK_ENTRIES entries (make-tree.py, no download) is extracted into
# it, subtrees are moved out and back in, carried into a new directory that
# is renamed at once, filled outside and moved in, made, filled and renamed
# at once, filled below a parent renamed at once, renamed, and removed,
# SOAK_ROUNDS times. After each phase a sentinel file is created, and once
# fsnw-tree has read its create, its view (dumped on SIGUSR2) must equal
# what find(1) lists. A view that differs is reported and fsnw-tree started
# again, so that each phase is measured on its own. Prints, per backend and
# phase: whether the view was equal, the entries differing, the events,
# overflows and rescans, and fsnw-tree's CPU time and RSS.
# usage: soak.sh FSNW_TREE MAKE_TREE [BACKEND...]
# env: SOAK_ENTRIES (60000), SOAK_FILL (entries of each fill, 600),
#      SOAK_ROUNDS (2), SOAK_TIMEOUT (seconds a phase may take to be read, 900),
#      SOAK_QUEUE (fsnw-tree --queue, 262144: the phases' events fit, so that
#      no phase ends in an overflow, whose rescan would hide what the events
#      got wrong; 0 is the library's default, which the move-in overflows)
set -u
FSNW_TREE=$(readlink -f "$1")
. "$(dirname "$0")/soak-lib.sh"
in_private_tmpfs "$0" "$@"
maketree=$2
shift 2
backends=${*:-inotify fanotify}
entries=${SOAK_ENTRIES:-60000}
fill=${SOAK_FILL:-600}
rounds=${SOAK_ROUNDS:-2}
SOAK_QUEUE=${SOAK_QUEUE:-262144}

LOG=$(mktemp -d /dev/shm/fsnw-soak-log-XXXXXX 2>/dev/null || mktemp -d) || exit 1
scratch=$(mktemp -d /dev/shm/fsnw-soak-XXXXXX 2>/dev/null || mktemp -d) || exit 1
private_tmpfs "$scratch" 4g || exit 1
cleanup() {
	soak_stop_all
	[ -n "${SOAK_IN_NS:-}" ] && umount "$scratch"
	rm -rf "$scratch"
	if [ "$SOAK_STATUS" -eq 0 ]; then
		rm -rf "$LOG"
	else
		rm -f "$LOG"/tree.out "$LOG"/tree.err
		echo "logs of the phases that differed: $LOG"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

python3 "$maketree" "$scratch/gen" "$entries" >/dev/null || exit 1
tar -C "$scratch/gen" -cf "$scratch/tree.tar" src || exit 1
rm -rf "$scratch/gen"
python3 "$maketree" "$scratch/gen" "$fill" 7 >/dev/null || exit 1
tar -C "$scratch/gen" -cf "$scratch/fill.tar" src || exit 1
rm -rf "$scratch/gen"

# fill DIR: DIR made and filled with SOAK_FILL entries, subdirectories and files.
fill() {
	mkdir "$1" && tar -C "$1" -xf "$scratch/fill.tar"
}

# round N: the phases, each followed by a check of the view.
round() {
	local n=$1 top deep p d i
	tar -C "$W" -xf "$scratch/tree.tar"
	tree_check "extract-$n"
	# Three top-level subtrees out, then back in, deeper, renamed.
	top=$(cd "$W/src" && ls -d d* | head -n 3)
	for d in $top; do
		mv "$W/src/$d" "$out/$d"
	done
	tree_check "move-out-$n"
	deep=$(cd "$W/src" && find . -mindepth 2 -type d | LC_ALL=C sort | head -n 1)
	i=0
	for d in $top; do
		i=$((i + 1))
		mv "$out/$d" "$W/src/$deep/moved-in-$i"
	done
	tree_check "move-in-$n"
	# A directory made, a subtree carried into it, and the new one renamed at once.
	mkdir "$W/new"
	mv "$W/src/$deep/moved-in-1" "$W/new/inc"
	mv "$W/new" "$W/src/new2"
	tree_check "carry-into-new-$n"
	# A subtree moved out, back in, and renamed at once.
	mv "$W/src/$deep/moved-in-2" "$out/back"
	mv "$out/back" "$W/src/back"
	mv "$W/src/back" "$W/src/back-renamed"
	tree_check "in-rename-$n"
	# A directory made, filled with subdirectories and files, renamed at once.
	fill "$W/a" && mv "$W/a" "$W/a2"
	tree_check "make-fill-rename-$n"
	# A directory filled outside the tree, on the same filesystem, moved in.
	fill "$out/filled" && mv "$out/filled" "$W/src/filled"
	tree_check "moved-in-$n"
	# A new directory filled, and its parent renamed at once.
	p=$(cd "$W/src" && ls -d d* | head -n 1)
	fill "$W/src/$p/new" && mv "$W/src/$p" "$W/src/$p-renamed"
	tree_check "rename-parent-of-new-$n"
	mv "$W/src" "$W/src-renamed"
	tree_check "rename-$n"
	rm -rf "$W/src-renamed" "$W/a2"
	tree_check "remove-$n"
}

ran=0
for BACKEND in $backends; do
	if [ "$BACKEND" = fanotify ] && [ "$(id -u)" -ne 0 ]; then
		echo "skip [fanotify]: needs root"
		continue
	fi
	W=$scratch/w-$BACKEND
	out=$scratch/out-$BACKEND
	mkdir "$W" "$out"
	tree_start "$BACKEND"
	case $? in
	0) ;;
	77) rm -rf "$W" "$out"; continue ;;
	*) exit 1 ;;
	esac
	ran=$((ran + 1))
	for n in $(seq "$rounds"); do
		round "$n"
	done
	kill -TERM "$FT"
	wait "$FT" || soak_fail "fsnw-tree exited $? on SIGTERM: $(tail -n 3 "$LOG/tree.err")"
	BG_PIDS=()
	rm -rf "$W" "$out"
done
[ "$ran" -gt 0 ] || exit 77
[ "$SOAK_STATUS" -eq 0 ] && echo "ok: $ran backend(s), $rounds round(s) of $entries entries"
exit "$SOAK_STATUS"
