#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-tree keeps a right view of a tree through queue overflows: with a
# queue of 4 events, bursts of changes overflow it, fsnw-tree rescans, and
# its view (dumped on SIGUSR2 and on exit) must equal the real tree exactly.
. "$(dirname "$0")/lib.sh"

W=$TMP/w
OUT=$TMP/outside
mkdir -p "$W/a/b/c" "$W/keep" "$OUT/in/deep"
touch "$W/a/b/c/x" "$W/keep/y" "$W/top" "$OUT/in/deep/z" "$OUT/in/f"
ln -s top "$W/link"
mkfifo "$W/fifo"

start FT "$TMP/out" "$TMP/err" "$FSNW_TREE" --queue 4 --dump "$TMP/view" "$W"
wait_for "$TMP/err" "^fsnw-tree: watching $W \\(9 entries\\)\$"

# 1. A burst while fsnw-tree is stopped: the kernel queues everything, the
# first read overflows the 4-event queue, and only the rescan can tell what
# happened inside directories made and filled meanwhile.
kill -STOP "$FT"
(
	cd "$W" || exit 1
	touch $(seq -f f%g 1 500)
	mkdir -p n/m/o
	touch n/m/o/z n/y
	mv a a2
	rm top
	mkdir q
	mv q n/m/
	rm -r n/m/o
	mv "$OUT/in" moved-in
	mv keep "$OUT/kept"
	rm $(seq -f f%g 1 2 500)
) || fail "burst 1"
kill -CONT "$FT"
view_check "stopped burst"
grep -q '"events":\["Q_OVERFLOW"\]' "$TMP/out" || fail "the queue never overflowed"
grep -q '"rescan":true' "$TMP/out" || fail "no rescan was reported"

# 2. Changes while it runs, renames of directories with content included.
(
	cd "$W" || exit 1
	for i in $(seq 1 40); do
		mkdir "r$i"
		touch "r$i/a" "r$i/b"
		mkdir "r$i/sub"
		touch "r$i/sub/c"
		mv "r$i" "s$i"
		touch "s$i/sub/after"
		rm "s$i/a"
	done
	touch $(seq -f g%g 1 300)
	rm -r $(seq -f s%g 1 3 40)
	mv n/m n/m2
	mv moved-in/deep moved-in/deeper
	rm $(seq -f g%g 1 3 300)
) || fail "burst 2"
view_check "running burst"

# 3. Statistics on SIGUSR1; SIGTERM: exit 0 and a last view that is right.
kill -USR1 "$FT"
wait_for "$TMP/err" '"overflows_queue":[1-9]'
touch "$W/last"
wait_for "$TMP/out" '"name":"last"'
stop "$FT" || fail "fsnw-tree exited $? on SIGTERM"
real_tree "$W" >"$TMP/real"
LC_ALL=C sort "$TMP/view" | diff -u "$TMP/real" - || fail "the view at exit is not the tree"
echo "exit: view of $(wc -l <"$TMP/real") entries matches; $(grep -c '"rescan":true' "$TMP/out") rescan lines"

# 4. The root itself goes: fsnw-tree says so and exits 1.
mkdir -p "$TMP/doomed/sub"
start FT "$TMP/doomed.out" "$TMP/doomed.err" "$FSNW_TREE" "$TMP/doomed"
wait_for "$TMP/doomed.err" '^fsnw-tree: watching '
rm -r "$TMP/doomed"
wait_exit "$FT"
rc=$?
[ "$rc" = 1 ] || fail "root deleted: exit $rc, wanted 1"
grep -qx "fsnw-tree: $TMP/doomed is gone" "$TMP/doomed.err" || fail "root deleted: $(cat "$TMP/doomed.err")"
grep -q '"events":\["IGNORED"\]' "$TMP/doomed.out" || fail "root deleted: no IGNORED line"
echo "root deleted: reported, exit 1"

# 5. A big directory moved in and the sentinel right after it, then SIGUSR2,
# all while fsnw-tree is stopped: when it runs again, its first read brings
# the move, the sentinel and the first of the creates the library reports
# for what the directory holds (after the sentinel's, once its listing
# stands), and the signal waits. SIGUSR2 reads what is ready before it
# writes the view, so the view has the sentinel and the whole directory.
W=$TMP/w5
mkdir -p "$W" "$TMP/o5"
start FT "$TMP/out" "$TMP/err5" "$FSNW_TREE" --dump "$TMP/view" "$W"
wait_for "$TMP/err5" '^fsnw-tree: watching '
for i in 1 2 3; do
	mkdir -p "$TMP/o5/big$i/sub"
	(cd "$TMP/o5/big$i" && touch $(seq -f "f%g" 1 1500) && cd sub && touch $(seq -f "g%g" 1 1500))
	kill -STOP "$FT"
	mv "$TMP/o5/big$i" "$W/big$i"
	touch "$W/.moved$i"
	kill -USR2 "$FT"
	kill -CONT "$FT"
	wait_for "$TMP/view" "	\\.moved$i\$"
	real_tree "$W" >"$TMP/real"
	LC_ALL=C sort "$TMP/view" | diff -u "$TMP/real" - >/dev/null ||
		fail "big directory moved in ($i): the view dumped is not the tree"
	echo "big directory moved in ($i): view of $(wc -l <"$TMP/real") entries matches"
	view_check "big directory moved in, then a sentinel ($i)"
done
kill -TERM "$FT"
wait_exit "$FT" || fail "fsnw-tree exit $?"
