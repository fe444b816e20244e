#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-tree on a fanotify tree, which the library does not walk: a directory
# moved in and renamed before the library lists it. The library reports the
# renames, then what the directory holds, as synthetic creates where it is by
# then (libfsnwatch(7), "The tree event contract"); fsnw-tree's view (dumped
# on SIGUSR2) must then equal the real tree. fsnw-tree is stopped while the
# renames are made, so that it reads them all only afterwards.
# Needs fanotify (root); skips where the backend is unavailable.
. "$(dirname "$0")/lib.sh"

W=$TMP/w
OUT=$TMP/outside
mkdir -p "$W/d" "$OUT"
touch "$W/top"

start FT "$TMP/out" "$TMP/err" "$FSNW_TREE" --backend fanotify --dump "$TMP/view" "$W"
wait_for "$TMP/err" "^fsnw-tree: (watching|cannot)"
grep -q "^fsnw-tree: cannot" "$TMP/err" && skip "no fanotify tree: $(cat "$TMP/err")"

# fill DIR: a directory's worth of content, two levels deep.
fill() {
	mkdir -p "$1/s/t"
	touch "$1/f" "$1/s/g" "$1/s/t/h"
}

# 1. Moved in, then renamed before it is listed.
fill "$OUT/m"
kill -STOP "$FT"
mv "$OUT/m" "$W/m"
mv "$W/m" "$W/m2"
kill -CONT "$FT"
view_check "moved in, renamed"

# 2. Moved in, then its parent renamed: the rename carries the listed directory.
fill "$OUT/n"
kill -STOP "$FT"
mv "$OUT/n" "$W/d/n"
mv "$W/d" "$W/d2"
kill -CONT "$FT"
view_check "moved in, parent renamed"

# 3. Moved in, renamed twice, the second time into another directory.
fill "$OUT/o"
mkdir "$W/e"
kill -STOP "$FT"
mv "$OUT/o" "$W/o"
mv "$W/o" "$W/o2"
mv "$W/o2" "$W/e/o3"
kill -CONT "$FT"
view_check "moved in, renamed twice"

# 4. A rename long after the listing.
mv "$W/e/o3" "$W/o4"
view_check "renamed later"

# 5. The tree's own directory renamed: the library follows it, and so does
# fsnw-tree (the root's MOVE_SELF names the new path).
mv "$W" "$W.renamed"
W=$W.renamed
mkdir "$W/after"
touch "$W/after/f"
view_check "root renamed"

stop "$FT" || fail "fsnw-tree exited $? on SIGTERM"
grep -q '"rescan":true' "$TMP/out" && echo "listings reported as rescan lines"

# 6. A directory above the tree's renamed: the library says so with a
# synthetic MOVE_SELF of the tree's directory at its new path, and fsnw-tree
# follows it as it follows the directory's own rename.
mkdir -p "$TMP/up/w6/d"
W=$TMP/up/w6
start FT "$TMP/out" "$TMP/err6" "$FSNW_TREE" --backend fanotify --dump "$TMP/view" "$W"
wait_for "$TMP/err6" "^fsnw-tree: watching "
mv "$TMP/up" "$TMP/up2"
W=$TMP/up2/w6
touch "$W/d/after"
view_check "a directory above renamed"
grep -qF '{"path":"'"$W"'","name":null,"events":["MOVE_SELF","ISDIR"]' "$TMP/out" &&
	grep -F '{"path":"'"$W"'","name":null,"events":["MOVE_SELF"' "$TMP/out" |
	grep -qF '"synthetic":true' ||
	fail "no synthetic MOVE_SELF at $W: $(grep MOVE_SELF "$TMP/out")"
stop "$FT" || fail "fsnw-tree exited $? on SIGTERM"
exit 0
