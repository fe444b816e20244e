#!/bin/bash
# SPDX-License-Identifier: MIT
# The same file operations under inotifywait -m and fsnw-wait -m --no-merge
# print the same lines, in the same order, on stdout and on stderr (see
# run_pair in lib.sh for how the order is kept deterministic).
. "$(dirname "$0")/lib.sh"

command -v inotifywait >/dev/null || skip "inotifywait (inotify-tools) is not installed"

# 1. A directory and a file in it, every event, the default line.
W=$TMP/flat
mkdir "$W"
echo data >"$W/c"
run_pair flat "$W" "$W/c"
echo hello >"$W/a"
chmod 600 "$W/a"
mv "$W/a" "$W/b"
mkdir "$W/sub"
rmdir "$W/sub"
rm "$W/b"
cat "$W/c" >/dev/null
echo more >>"$W/c"
ln -s c "$W/l"
mv "$W/c" "$W/c2"
rm "$W/c2" "$W/l"
sync end
end_pair

# 2. Some events, a --format with every inotifywait conversion but %T.
W=$TMP/format
mkdir "$W"
run_pair format -e create,delete,attrib,close_write,moved_to \
	--format '%w|%f|%e|%;e|%%|%x|%' "$W"
touch "$W/a"
mkdir "$W/d"
mv "$W/a" "$W/d/a"
mv "$W/d/a" "$W/b"
chmod 700 "$W/d"
rm -r "$W/b" "$W/d"
sync end '\|end\|CLOSE_WRITE,CLOSE\|'
end_pair

# 3. A tree (-r), given with a trailing slash. Opening and reading
# directories is left out: both watchers walk new directories, and each
# would see the other's walk. A rename needs no sync: both name what comes
# after it by the new name.
W=$TMP/tree
mkdir -p "$W/x/y"
echo data >"$W/x/y/f"
mkdir "$TMP/outside"
run_pair tree -r -e create,delete,modify,attrib,close_write,move,delete_self,move_self "$W/"
echo hello >"$W/x/a"
mkdir "$W/n"
sync s1
echo 1 >"$W/n/f"
mkdir "$W/n/m"
sync s2
touch "$W/n/m/g"
mv "$W/n" "$W/n2"
echo x >>"$W/n2/m/g"
rm -rf "$W/n2"
mv "$W/x/y" "$W/y2"
sync s4
chmod 700 "$W/y2/f"
mv "$W/y2" "$TMP/outside/"
sync s5
touch "$TMP/outside/y2/unseen"
rm "$W/x/a"
sync end
end_pair
