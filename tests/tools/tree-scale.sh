#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-tree applies a delete at a cost that does not grow with its view:
# the CPU time it spends (getrusage, which it reports on SIGUSR1) on the
# deletes of 4N entries is at most 8 times that of N. Linear is 4x; the
# old view, which listed itself whole for every delete, took 16x and more.
# CPU time, not wall time, and the median of three rounds of each size.
. "$(dirname "$0")/lib.sh"

# Big enough for tens of milliseconds at N, small enough to make and delete
# 15N entries (three rounds of each size) in a few seconds.
N=${TREE_SCALE_N:-10000}
PER_DIR=100 # a directory and 99 files
BATCH=40    # directories removed at once: 4,000 entries, well under the
	    # kernel's 16,384 queued events, so no overflow (and rescan) blurs it

W=$TMP/w
mkdir -p "$W" "$TMP/stage"
start FT "$TMP/out" "$TMP/err" "$FSNW_TREE" "$W"
wait_for "$TMP/err" "^fsnw-tree: watching $W \\(0 entries\\)\$"

# cpu: ask fsnw-tree for its statistics; sets CPU to its CPU time (user +
# system) in microseconds, ENTRIES and RESCANS from the same line.
NSTATS=0
cpu() {
	local line end=$((SECONDS + WAIT_LIMIT))
	NSTATS=$((NSTATS + 1))
	kill -USR1 "$FT"
	while (($(grep -c '^fsnw-tree: .* entries, ' "$TMP/err") < NSTATS)); do
		((SECONDS < end)) || fail "no statistics line: $(tail -n 3 "$TMP/err")"
		sleep 0.02
	done
	line=$(grep '^fsnw-tree: .* entries, ' "$TMP/err" | tail -n 1)
	[[ $line =~ ^fsnw-tree:\ ([0-9]+)\ entries,\ ([0-9]+)\ rescans,\ CPU\ ([0-9]+)\.([0-9]{6})\ s\ user\ ([0-9]+)\.([0-9]{6})\ s\ system$ ]] ||
		fail "statistics line: $line"
	ENTRIES=${BASH_REMATCH[1]}
	RESCANS=${BASH_REMATCH[2]}
	CPU=$(((BASH_REMATCH[3] + BASH_REMATCH[5]) * 1000000 + 10#${BASH_REMATCH[4]} + \
		10#${BASH_REMATCH[6]}))
}

# until_seen NAME: until fsnw-tree has printed the close of the file NAME,
# made in the root after everything it must have read first. (What a
# directory moved in holds may be printed after it: the library reports it
# once the events older than its listing are read.)
NMARK=0
until_seen() {
	local end=$((SECONDS + WAIT_LIMIT)) name=.mark$((++NMARK))
	touch "$W/$name"
	until grep -qF "\"name\":\"$name\",\"events\":[\"CLOSE_WRITE\"]" "$TMP/out"; do
		((SECONDS < end)) || fail "fsnw-tree never reported $name"
		sleep 0.02
	done
}

# until_entries N: until fsnw-tree's view has N entries (what a directory
# moved in holds may come after the mark that follows the move).
until_entries() {
	local end=$((SECONDS + WAIT_LIMIT))
	cpu
	while [ "$ENTRIES" != "$1" ]; do
		((SECONDS < end)) || fail "the view has $ENTRIES entries, not $1"
		sleep 0.05
		cpu
	done
}

# deletes COUNT: sets USED to the CPU time, in microseconds, fsnw-tree
# takes to follow the deletion of a tree of COUNT entries. The tree is
# made outside and moved in: fsnw-tree walks it once.
deletes() {
	local count=$1 t=t$1 before i
	mkdir "$TMP/stage/$t"
	(cd "$TMP/stage/$t" && seq -f d%g 1 $((count / PER_DIR)) | xargs mkdir &&
		seq 1 $((count / PER_DIR)) | awk -v n=$((PER_DIR - 1)) \
			'{ for (i = 1; i <= n; i++) print "d" $1 "/f" i }' | xargs touch) ||
		fail "making $count entries"
	mv "$TMP/stage/$t" "$W/$t"
	until_seen
	until_entries $((count + 1 + NMARK))
	before=$CPU
	for ((i = 1; i <= count / PER_DIR; i += BATCH)); do
		(cd "$W/$t" && rm -rf $(seq -f d%g "$i" $((i + BATCH - 1)))) || fail "rm"
		until_seen
	done
	rmdir "$W/$t"
	until_seen
	cpu
	USED=$((CPU - before))
	[ "$ENTRIES" = "$NMARK" ] || fail "$count: the view has $ENTRIES entries after the deletes"
	[ "$RESCANS" = 0 ] || echo "note: $RESCANS rescans so far" >&2
	echo "deleting $count entries: $USED us of CPU time"
}

# median COUNT: MEDIAN is the middle of three rounds' CPU times. Other work
# can only add CPU time, but this guest also under-counts it at times (a
# CI run measured 22 ms for 10,000 deletes that take 40-50 ms in every
# other round), so neither the least nor the most of a size is safe.
median() {
	local a b c
	deletes "$1"
	a=$USED
	deletes "$1"
	b=$USED
	deletes "$1"
	c=$USED
	MEDIAN=$(printf '%s\n' "$a" "$b" "$c" | sort -n | sed -n 2p)
}

median "$N"
small=$MEDIAN
median $((4 * N))
large=$MEDIAN
stop "$FT" || fail "fsnw-tree exited $?"
echo "deletes: ratio $(awk -v a="$small" -v b="$large" 'BEGIN { printf "%.2f", b / a }')" \
	"for 4x the entries (linear: 4, quadratic: 16)"
((small > 0)) || fail "no CPU time measured for $N deletes"
((large <= 8 * small)) || fail "4x the deletes cost more than 8x the CPU time"
