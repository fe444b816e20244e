#!/bin/sh
# SPDX-License-Identifier: MIT
# fsnw-ab on two copies of this build, in every mode, a few short rounds:
#   ab-test.sh FSNW_AB LIBRARY
# Checks that each copy loads in its own namespace, every add and remove
# succeeds (fsnw-ab exits 1 otherwise), each copy gets its report line with
# its timing clock, and bad arguments are refused. Nothing is timed against
# a threshold.
set -u
ab=$1
lib=$2
out=$(mktemp "${TMPDIR:-/tmp}/fsnw-ab-test.XXXXXX") || exit 1
trap 'rm -f "$out"' EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

for mode in shared idle distinct read; do
	"$ab" --mode "$mode" --rounds 3 --pairs 50 "$lib" "$lib:4" >"$out" ||
		fail "fsnw-ab --mode $mode exited $?"
	cat "$out"
	[ "$(wc -l <"$out")" -eq 3 ] || fail "$mode: expected a floor line and two build lines"
	# Reads are of the 2,000 events made each round, whatever --pairs says.
	what="50 pairs" unit="a pair"
	[ "$mode" = read ] && what="2000 events" unit="an event"
	grep -q "^fsnw-ab: mode $mode, 3 rounds of $what; floor (raw) median [0-9]* ns$" "$out" ||
		fail "$mode: no floor line"
	# The copy with FSNW_OPEN_NO_STATS times nothing, so says monotonic.
	grep -q "^$lib: median [0-9]* ns $unit, over the floor median -*[0-9]* .*timing clock \(tsc\|monotonic\)$" "$out" ||
		fail "$mode: no line for the first copy"
	grep -q "^$lib:4: median .*timing clock monotonic$" "$out" ||
		fail "$mode: no line for the copy opened with flags 4"
done
"$ab" --mode bogus "$lib" 2>/dev/null && fail "an unknown mode was taken"
[ $? -eq 2 ] || fail "an unknown mode: exit status is not 2"
"$ab" /nonexistent/libfsnwatch.so 2>/dev/null && fail "a missing library was taken"
"$ab" 2>/dev/null && fail "no library at all was taken"
exit 0
