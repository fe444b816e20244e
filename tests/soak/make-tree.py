#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make a deterministic tree shaped like a source tree: nested directories
with a dozen or so files each, ENTRIES entries in all (files and
directories), under DIR/src. No download: the same seed gives the same tree.

usage: make-tree.py DIR [ENTRIES] [SEED]"""
import os
import random
import sys


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    top = os.path.join(sys.argv[1], "src")
    want = int(sys.argv[2]) if len(sys.argv) > 2 else 60000
    rnd = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 16)
    os.makedirs(top)
    made = 0
    queue = [(top, 0)]
    exts = [".c", ".h", ".S", ".txt", ".rst", "", ".py", ".sh"]
    while queue and made < want:
        d, depth = queue.pop(0)
        for i in range(rnd.randint(4, 24)):
            if made >= want:
                break
            name = "f%03d-%s%s" % (i, rnd.choice(["core", "io", "util", "mm", "net"]),
                                   rnd.choice(exts))
            with open(os.path.join(d, name), "w") as f:
                f.write("x" * rnd.randint(0, 64))
            made += 1
        subs = rnd.randint(2, 9) if depth < 2 else rnd.randint(0, 4)
        if depth > 7:
            subs = 0
        for i in range(subs):
            if made >= want:
                break
            sub = os.path.join(d, "d%02d-%s" % (i, rnd.choice(["arch", "drivers", "fs", "lib"])))
            os.mkdir(sub)
            made += 1
            queue.append((sub, depth + 1))
        if not queue and made < want:
            queue.append((d, depth))  # widen the last directory until done
    print(made)
    return 0


if __name__ == "__main__":
    sys.exit(main())
