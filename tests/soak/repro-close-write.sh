#!/bin/bash
# SPDX-License-Identifier: MIT
# The smallest form of a divergence the live soak found: a file in a
# directory moved into the tree, created before the move and closed after
# it, its CLOSE_WRITE read while the library's listing of the directory
# waits to stand. Only a create, a delete or a move speaks for a name then
# (walk_touch, fanlist_touch; before 4b3d09c any named event did, and the
# listing's synthetic CREATE of the file was not reported: no event
# created it, and fsnw-tree's view never had it, with no overflow). On
# inotify a new directory's listing meets the same window: the soak's
# extracts, files tar made just before their directory's watch.
#
# Here: a directory of N entries (its listing takes long enough, and its
# synthetic creates fit the library's queue) is filled outside the tree, a
# file in it is held open, the directory is moved in, and the file is
# closed: on inotify as soon as fsnw-tree's inotify fd holds a watch on the
# directory's inode (/proc/PID/fdinfo; before it, the close makes no
# event), on fanotify at once. Then sentinels (tree_sync), and fsnw-tree's
# view must equal find.
# usage: repro-close-write.sh FSNW_TREE [BACKEND] [N] [TRIES]
# Exit: 0 the view was right every time, 1 it was not, 2 setup failed,
# 77 the backend cannot run here.
set -u
FSNW_TREE=$(readlink -f "$1")
. "$(dirname "$0")/soak-lib.sh"
backend=${2:-inotify}
n=${3:-15000}
tries=${4:-5}
LOG=$(mktemp -d /tmp/fsnw-repro-XXXXXX) || exit 1
M=$(mktemp -d /dev/shm/fsnw-repro-XXXXXX) || exit 1
trap 'soak_stop_all; rm -rf "$M"; [ "$SOAK_STATUS" = 0 ] && rm -rf "$LOG"' EXIT
W=$M/w O=$M/o
mkdir "$W" "$O"
tree_start "$backend"
case $? in
0) ;;
77) exit 77 ;;
*) exit 2 ;;
esac
hits=0
for i in $(seq "$tries"); do
	mkdir "$O/big$i"
	python3 -c 'import os, sys
for i in range(int(sys.argv[2])):
	open(os.path.join(sys.argv[1], "e%06d" % i), "w").close()' "$O/big$i" "$((n - 1))"
	exec 3>"$O/big$i/f"
	ino=$(printf %x "$(stat -c %i "$O/big$i")")
	ifd=$(ls -l "/proc/$FT/fd" | awk '/inotify/ { print $9 }' | head -n 1)
	mv "$O/big$i" "$W/big$i"
	# The race itself: closed once the watch is there (a spin, not a sleep).
	if [ "$backend" = inotify ]; then
		until grep -q "ino:$ino " "/proc/$FT/fdinfo/$ifd"; do :; done
	fi
	exec 3>&-
	tree_check "try-$i"
	[ "$VERDICT" = equal ] || hits=$((hits + 1))
	grep -hF "\"path\":\"$W/big$i\",\"name\":\"f\"" "$LOG"/*tree.out | grep -v '"rescan"'
done
echo "the view differed in $hits of $tries tries"
((hits == 0)) || echo "logs: $LOG"
[ "$hits" -eq 0 ]
