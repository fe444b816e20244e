#!/bin/bash
# SPDX-License-Identifier: MIT
# A measurement, not a test (meson does not run it): the CPU time that
# watchers spend on a big tree that is extracted, has subtrees moved out
# and in, is removed, then extracted and deleted at once, as in issues 16
# and 17. The tree is generated (ENTRIES entries, about 4% directories, up
# to 8 deep, files of 0-400 bytes), tarred once, and reused.
#
# usage: bigtree.sh DIR WATCHER...
#   DIR      scratch directory; its filesystem is the one watched
#   WATCHER  a command line in one word, the watched directory appended:
#            'fsnw-wait -m -r --backend fanotify', 'inotifywait -m -r', ...
# env: ENTRIES (80000), OUT (where the watchers' output goes: DIR/out; put
#      it on another filesystem to keep their writes out of a fanotify mark)
# Prints, after each phase, each watcher's user+system CPU seconds so far
# (from /proc/PID/stat, in clock ticks), then the lines each printed.
set -u
[ $# -ge 2 ] || { sed -n '3,/^$/s/^# \{0,1\}//p' "$0" >&2; exit 2; }
command -v python3 >/dev/null || { echo "bigtree.sh: python3 makes the tree" >&2; exit 77; }

BASE=$1
shift
ENTRIES=${ENTRIES:-80000}
W=$BASE/w
O=$BASE/outside
OUT=${OUT:-$BASE/out}
TAR=$BASE/tree-$ENTRIES.tar
mkdir -p "$BASE" || exit 1
rm -rf "$W" "$O" "$OUT"
mkdir -p "$W" "$O" "$OUT"

if [ ! -s "$TAR" ]; then
	python3 - "$BASE/src" "$ENTRIES" <<'EOF' || exit 1
import os, random, sys
root, target = sys.argv[1], int(sys.argv[2])
random.seed(17)
dirs = [root]
os.makedirs(root)
for n in range(target):
    # Mostly near the directories made last, as a source tree grows.
    near = len(dirs) > 200 and random.random() < 0.7
    parent = random.choice(dirs[-200:] if near else dirs)
    if random.random() < 0.04 and parent.count("/") - root.count("/") < 8:
        d = os.path.join(parent, "dir%05d" % n)
        os.mkdir(d)
        dirs.append(d)
    else:
        with open(os.path.join(parent, "file%05d.c" % n), "w") as f:
            f.write("x" * random.randint(0, 400))
print(f"bigtree.sh: {len(dirs)} directories, {target} entries", file=sys.stderr)
EOF
	tar -C "$BASE" -cf "$TAR" src && rm -rf "$BASE/src" || exit 1
fi

PIDS=()
NAMES=()
for cmd in "$@"; do
	i=${#PIDS[@]}
	# shellcheck disable=SC2086 # a command line in one word, split on purpose
	$cmd "$W" >"$OUT/$i.out" 2>"$OUT/$i.err" &
	PIDS+=($!)
	NAMES+=("$cmd")
done
trap 'kill "${PIDS[@]}" 2>/dev/null' EXIT
sleep 2

# quiet: until no watcher has printed anything for two seconds.
quiet() {
	local now last=
	while now=$(stat -c %s "$OUT"/*.out | tr '\n' ' '); [ "$now" != "$last" ]; do
		last=$now
		sleep 2
	done
}

T0=$SECONDS
phase() {
	local i
	quiet
	echo "$1 (done at $((SECONDS - T0)) s):"
	for i in "${!PIDS[@]}"; do
		awk -v n="${NAMES[$i]}" '{ printf "  %-50s %6.2f user %6.2f system\n", n, $14 / 100, $15 / 100 }' \
			"/proc/${PIDS[$i]}/stat"
	done
}

tar -C "$W" -xf "$TAR"
phase extract
for d in $(ls "$W/src" | grep dir | head -n 8); do
	mv "$W/src/$d" "$O/"
done
phase "move 8 subtrees out"
tar -C "$O" -xf "$TAR"
for d in $(ls "$O/src" | grep dir | head -n 8); do
	mv "$O/src/$d" "$W/src/in-$d"
done
phase "extract outside, move 8 subtrees in"
rm -rf "$W/src"
phase remove
tar -C "$W" -xf "$TAR"
rm -rf "$W/src"
phase "extract, then delete at once"
for i in "${!PIDS[@]}"; do
	echo "  ${NAMES[$i]}: $(wc -l <"$OUT/$i.out") lines"
done
rm -rf "$W" "$O"
