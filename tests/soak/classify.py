#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What fsnw-tree was told about each entry a soak phase found differing:
for the files a phase kept (PHASE.find, PHASE.view, PHASE.events, see
soak-lib.sh), the entries missing from the view and those in it not on
disk, grouped by the events the phase printed at their path (or, for one not
met there, at a path ending in the same directory and name: a directory
above it was renamed since).

usage: classify.py LOGDIR/PHASE [LOGDIR/PHASE...]"""
import collections
import json
import sys


def entries(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return {line.rstrip("\n").split("\t", 1)[1] for line in f if "\t" in line}


def key(path):
    """The name and its parent's name: what survives a rename above them."""
    parts = path.rstrip("/").split("/")
    return "/".join(parts[-2:])


def classify(prefix):
    disk, view = entries(prefix + ".find"), entries(prefix + ".view")
    exact, loose = collections.defaultdict(list), collections.defaultdict(list)
    root = None
    with open(prefix + ".events", encoding="utf-8", errors="surrogateescape") as f:
        evs = [json.loads(line) for line in f]
    for ev in evs:
        if ev.get("name", "").startswith(".soak-sync-"):
            root = ev["path"]
            break
    for ev in evs:
        if not ev.get("path") or not ev.get("name"):
            continue
        what = ",".join(ev["events"]) + ("/synthetic" if ev["synthetic"] else "")
        if ev.get("rescan"):
            what += "/rescan"
        full = ev["path"] + "/" + ev["name"]
        if root and full.startswith(root + "/"):
            exact[full[len(root) + 1:]].append(what)
        loose[key(full)].append(what)
    for label, names in (("missing from the view", disk - view),
                         ("in the view, not on disk", view - disk)):
        groups = collections.Counter()
        for p in names:
            told = exact.get(p) or ["(renamed since)"] + loose.get(key(p), ["(no event)"])
            groups[" ".join(told)] += 1
        for events, n in groups.most_common():
            print("%s: %d %s: %s" % (prefix, n, label, events))


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    for prefix in sys.argv[1:]:
        classify(prefix)
    return 0


if __name__ == "__main__":
    sys.exit(main())
