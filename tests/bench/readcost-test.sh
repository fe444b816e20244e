#!/bin/sh
# SPDX-License-Identifier: MIT
# fsnw-readcost, a few rounds with merging and without it, and of a tree
# (with caches cold and not):
#   readcost-test.sh FSNW_READCOST
# Checks that the library's reads are answered from memory (every round
# reads its 2,000 events, or the program exits 1), the report line, and
# that bad arguments are refused, and that no run, failed or not, leaves its
# directory behind. Nothing is timed against a threshold.
set -u
rc=$1

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

for flags in 0 2; do
	line=$("$rc" 20 "$flags") || fail "fsnw-readcost 20 $flags exited $?"
	echo "$line"
	echo "$line" | grep -q "^fsnw-readcost: 20 rounds of 2000 events, open flags 0x$flags: library [0-9.]* ns an event, floor [0-9.]*, library's own -*[0-9.]*$" ||
		fail "flags $flags: no report line"
done
for cold in 0 64; do
	line=$("$rc" 20 0 30 "$cold") || fail "fsnw-readcost 20 0 30 $cold exited $?"
	echo "$line"
	tail="a tree"
	[ "$cold" -eq 0 ] || tail="a tree, caches cold"
	echo "$line" | grep -q "^fsnw-readcost: 20 rounds of 2000 events, open flags 0x0, $tail: library [0-9.]* ns an event, floor [0-9.]*, library's own -*[0-9.]*$" ||
		fail "a tree, cold $cold: no report line"
done
"$rc" 0 2>/dev/null && fail "0 rounds were taken"
[ $? -eq 2 ] || fail "0 rounds: exit status is not 2"
"$rc" 1 2 3 4 5 2>/dev/null && fail "five arguments were taken"
"$rc" 1 0 1001 2>/dev/null && fail "1001 directories were taken"
# Open flags the library refuses: a failed run, which removes its directory too.
"$rc" 1 0x8000 2>/dev/null && fail "open flags 0x8000 were taken"
[ $? -eq 1 ] || fail "a failed fsnw_open: exit status is not 1"
ls -d /dev/shm/fsnw-readcost.* 2>/dev/null && fail "a scratch directory was left"
exit 0
