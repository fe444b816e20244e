#!/bin/bash
# SPDX-License-Identifier: MIT
# repro-close-write.sh's window with a directory: a subdirectory S of a
# directory moved into the tree gets an event of its own (an ATTRIB, touch
# -c) after the library's watch on its parent landed and before the
# parent's listing stands. Before 4b3d09c that marked S as a name the
# events speak for (walk_touch): the listing neither reported S nor
# followed it, S was never watched, and nothing made in it was ever
# reported, with no overflow. A tree whose mask holds more than CREATE,
# DELETE and the moves meets the window: fsnw-wait -m -r asks for all.
# (A fanotify tree places what happens in S by its handle either way.)
#
# Here: fsnw-wait -m -r on W; O/big (N files, and S) moved in; S touched
# (on inotify once fsnw-wait's inotify fd holds a watch on big's inode, on
# fanotify at once); a sentinel; then a file made in S, and another
# sentinel. S must have been reported (CREATE,ISDIR S) and the file in it
# (CREATE probe).
# usage: repro-attrib-dir.sh FSNW_WAIT [BACKEND] [N] [TRIES]
# Exit: 0 both reported every time, 1 not, 2 setup failed, 77 the backend
# cannot run here.
set -u
fw=$(readlink -f "$1")
backend=${2:-inotify}
n=${3:-15000}
tries=${4:-5}
[ "$backend" = fanotify ] && [ "$(id -u)" != 0 ] && { echo "SKIP: fanotify needs root"; exit 77; }
M=$(mktemp -d /dev/shm/fsnw-repro-XXXXXX) || exit 1
W=$M/w O=$M/o
mkdir "$W" "$O"
"$fw" --backend "$backend" -m -r "$W" >"$M/out" 2>"$M/err" &
pid=$!
trap 'kill "$pid"; wait "$pid"; rm -rf "$M"' EXIT

# until_line ERE: until fsnw-wait prints a line that matches (60 s at most).
until_line() {
	local end=$((SECONDS + 60))
	until grep -Eq -- "$1" "$M/out" "$M/err"; do
		((SECONDS < end)) && kill -0 "$pid" 2>/dev/null ||
			{ echo "no /$1/ from fsnw-wait: $(cat "$M/err")" >&2; exit 2; }
		sleep 0.05
	done
}

until_line '^Watches established\.$'
ifd=$(ls -l "/proc/$pid/fd" | awk '/inotify/ { print $9 }' | head -n 1)
hits=0
for i in $(seq "$tries"); do
	mkdir -p "$O/big$i/S"
	python3 -c 'import os, sys
for i in range(int(sys.argv[2])):
	open(os.path.join(sys.argv[1], "e%06d" % i), "w").close()' "$O/big$i" "$n"
	ino=$(printf %x "$(stat -c %i "$O/big$i")")
	mv "$O/big$i" "$W/big$i"
	# The race itself: S touched once the watch is there (a spin, not a sleep).
	if [ "$backend" = inotify ]; then
		until grep -q "ino:$ino " "/proc/$pid/fdinfo/$ifd"; do :; done
	fi
	touch -c "$W/big$i/S"
	touch "$W/sync$i-a"
	until_line " CREATE sync$i-a\$"
	touch "$W/big$i/S/probe" "$W/sync$i-b"
	until_line " CREATE sync$i-b\$"
	s=$(grep -c "^$W/big$i/ CREATE,ISDIR S\$" "$M/out")
	p=$(grep -c "^$W/big$i/S/ CREATE probe\$" "$M/out")
	echo "try $i: CREATE,ISDIR S reported $s times, CREATE S/probe $p times"
	((s && p)) || hits=$((hits + 1))
done
echo "S or its file unreported in $hits of $tries tries"
[ "$hits" -eq 0 ]
