#!/bin/bash
# SPDX-License-Identifier: MIT
# What the soak's "early" column counts, in its smallest form: a directory
# of N entries (directories of 20 files) moved into the tree, then a file
# created at the root. The library reports what the directory holds
# (synthetic creates) after the events it read while its listings waited
# to stand, so the file's create comes first: a consumer that takes that
# create as "caught up" (tests/tools/lib.sh view_check, a sync on one
# sentinel) sees the directory (nearly) empty. The view converges
# (tree-view.h: once every event has been read); the order is not the
# disk's. Both backends.
# usage: repro-sentinel-order.sh FSNW_TREE [BACKEND] [N] [TRIES]
# Exit: 0 never seen, 1 seen.
set -u
FSNW_TREE=$(readlink -f "$1")
. "$(dirname "$0")/soak-lib.sh"
backend=${2:-inotify}
n=${3:-10000}
tries=${4:-5}
LOG=$(mktemp -d /tmp/fsnw-repro-XXXXXX) || exit 1
M=$(mktemp -d /dev/shm/fsnw-repro-XXXXXX) || exit 1
trap 'soak_stop_all; rm -rf "$M" "$LOG"' EXIT
W=$M/w O=$M/o
mkdir "$W" "$O"
tree_start "$backend" >/dev/null || exit 2
hits=0
for i in $(seq "$tries"); do
	mkdir "$O/big$i"
	python3 -c 'import os, sys
for i in range(int(sys.argv[2]) // 21):
	d = os.path.join(sys.argv[1], "d%04d" % i)
	os.mkdir(d)
	for j in range(20):
		open(os.path.join(d, "e%02d" % j), "w").close()' "$O/big$i" "$n"
	off=$(size "$LOG/tree.out")
	mv "$O/big$i" "$W/big$i"
	touch "$W/after$i"
	sentinel || exit 2
	# Everything is reported once a second sentinel is (tree_sync).
	sentinel || exit 2
	later=$(tail -c +"$((off + 1))" "$LOG/tree.out" | awk -v a="\"name\":\"after$i\"" \
		-v b="\"path\":\"$W/big$i" 'index($0, a) { seen = 1 } seen && index($0, b) { n++ }
		END { print n + 0 }')
	echo "try $i: $later of $((n / 21 * 21)) entries of big$i reported after the create of after$i"
	((later == 0)) || hits=$((hits + 1))
done
echo "seen in $hits of $tries tries"
[ "$hits" -eq 0 ]
