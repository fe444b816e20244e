#!/bin/bash
# SPDX-License-Identifier: MIT
# A divergence the torture's CI slice met on fanotify (seed 1 of
# `torture --backend fanotify --seeds 6 --ops 200 --entries 600`, 57
# operations shrunk to 12), in a form fsnw-tree meets: two files swapped
# through a third name, then the directory of one renamed, from one
# process, back to back:
#   mv r/a/f1 r/b/x; mv r/c/f2 r/a/f1; mv r/b/x r/c/f2; mv r/c r/e/g
# Both names came back to places they had left, which fantree-merge.c
# checks once the queue is read empty. A check that looked for c/f2 after c
# moved (its rename still unread) took the file for gone: a synthetic
# DELETE of c/f2, and a view without e/g/f2, with no overflow. The checks
# now look again when events came while they looked.
# It needs the reader behind the renames: SOAK_LOAD busy loops (2)
# compete for the CPU.
# usage: repro-fan-swap.sh FSNW_TREE [TRIES]
# Exit: 0 the view was right every time, 1 it was not, 2 setup failed,
# 77 fanotify cannot run here.
set -u
FSNW_TREE=$(readlink -f "$1")
. "$(dirname "$0")/soak-lib.sh"
tries=${2:-100}
LOG=$(mktemp -d /tmp/fsnw-repro-XXXXXX) || exit 1
M=$(mktemp -d /dev/shm/fsnw-repro-XXXXXX) || exit 1
W=$M/w
mkdir "$W"
hogs=()
trap 'kill "${hogs[@]}" 2>/dev/null; soak_stop_all; rm -rf "$M"' EXIT
tree_start fanotify >"$LOG/rows"
case $? in
0) ;;
77) exit 77 ;;
*) exit 2 ;;
esac
for _ in $(seq "${SOAK_LOAD:-2}"); do
	sh -c 'while :; do :; done' &
	hogs+=($!)
done
hits=0
for i in $(seq "$tries"); do
	mkdir -p "$W/r$i/a" "$W/r$i/b" "$W/r$i/c" "$W/r$i/e"
	touch "$W/r$i/a/f1" "$W/r$i/c/f2"
	tree_sync || exit 2
	python3 -c 'import os, sys
r = sys.argv[1]
for a, b in (("a/f1", "b/x"), ("c/f2", "a/f1"), ("b/x", "c/f2"), ("c", "e/g")):
	os.rename(os.path.join(r, a), os.path.join(r, b))' "$W/r$i"
	tree_check "try-$i" >>"$LOG/rows"
	[ "$VERDICT" = equal ] && continue
	hits=$((hits + 1))
	grep -A3 "^FAIL" "$LOG/rows" | tail -n 3
done
echo "the view differed in $hits of $tries tries"
((hits == 0)) || echo "logs: $LOG"
[ "$hits" -eq 0 ]
