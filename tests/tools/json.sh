#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-wait --json: every line is one JSON object with the documented
# members and types; names come back byte for byte; moves carry a shared
# cookie; repeats merged (--merge) carry their count; synthetic creates say so.
. "$(dirname "$0")/lib.sh"

command -v python3 >/dev/null || skip "python3 is needed to parse JSON"

W=$TMP/w
mkdir "$W"
start FW "$TMP/out" "$TMP/err" "$FSNW_WAIT" -m -r --merge --json "$W"
wait_for "$TMP/err" '^Watches established\.$'

# While it is stopped, everything waits in the kernel queue, so what follows
# is read in one go: the new directory's content can only be reported by the
# library's catch-up walk, and the interleaved writes meet in its queue.
kill -STOP "$FW"
mkdir "$W/new"
touch "$W/new/inner"
exec 3>>"$W/a" 4>>"$W/b"
echo 1 >&3
echo 1 >&4
echo 2 >&3
echo 2 >&4
exec 3>&- 4>&-
kill -CONT "$FW"
touch "$W/q\"uote\\back" "$W/$(printf 'nl\nx\ttab\001')" "$W/$(printf 'bad\377\303(\303\251')"
mv "$W/a" "$W/moved"
touch "$W/end"
wait_for "$TMP/out" '"name":"end","events":\["CLOSE_WRITE"\]'
stop "$FW"
[ $? = 143 ] || fail "fsnw-wait -m did not die of SIGTERM"

python3 - "$TMP/out" "$W" <<'EOF' || fail "JSON lines are not as documented"
import json, os, sys

out, root = sys.argv[1], sys.argv[2]
known = {"ACCESS", "MODIFY", "ATTRIB", "CLOSE_WRITE", "CLOSE_NOWRITE", "OPEN",
         "MOVED_FROM", "MOVED_TO", "CREATE", "DELETE", "DELETE_SELF", "MOVE_SELF",
         "UNMOUNT", "Q_OVERFLOW", "IGNORED", "ISDIR"}
types = {"path": str, "name": (str, type(None)), "events": list, "cookie": int,
         "count": int, "wid": int, "synthetic": bool}
evs = []
with open(out, "rb") as f:
    for n, raw in enumerate(f, 1):
        line = raw.decode("utf-8")  # strict: the output is valid UTF-8
        o = json.loads(line)
        assert set(o) == set(types), f"line {n}: members {sorted(o)}"
        for k, t in types.items():
            assert isinstance(o[k], t), f"line {n}: {k} is {o[k]!r}"
        assert o["events"] and set(o["events"]) <= known, f"line {n}: {o['events']}"
        assert o["count"] >= 1 and o["wid"] == 1, f"line {n}: {line}"
        assert o["path"] == root or o["path"].startswith(root + "/"), f"line {n}: {line}"
        evs.append(o)

def find(name, events, **kw):
    return [e for e in evs if e["name"] == name and e["events"] == events
            and all(e[k] == v for k, v in kw.items())]

names = {os.fsencode(e["name"]) for e in evs if e["name"] is not None}
for want in (b'q"uote\\back', b"nl\nx\ttab\x01", b"bad\xff\xc3(\xc3\xa9"):
    assert want in names, f"{want!r} not among {names!r}"
assert find("new", ["CREATE", "ISDIR"], synthetic=False), "no CREATE,ISDIR new"
assert find("inner", ["CREATE"], synthetic=True, path=root + "/new"), "no synthetic create"
assert find("a", ["MODIFY"], count=2) and find("b", ["MODIFY"], count=2), "repeats not merged"
frm, to = find("a", ["MOVED_FROM"]), find("moved", ["MOVED_TO"])
assert frm and to and frm[0]["cookie"] and frm[0]["cookie"] == to[0]["cookie"], "cookies"
assert all(e["cookie"] == 0 for e in evs if not {"MOVED_FROM", "MOVED_TO"} & set(e["events"]))
print(f"{len(evs)} JSON lines as documented")
EOF

# fsnw-watch --json: the table as one object, each row's path byte for byte,
# the same rows and counts as the text table of a watcher beside it.
W2=$TMP/w2
mkdir -p "$W2/sub"
# Each walks the tree at its start, and the other would count that.
E=(-r -e create,attrib,close_write,modify)
start FT "$TMP/table.out" "$TMP/table.err" "$FSNW_WATCH" "${E[@]}" "$W2"
start FJ "$TMP/json2.out" "$TMP/json2.err" "$FSNW_WATCH" "${E[@]}" --json "$W2"
wait_for "$TMP/table.err" '^Finished establishing watches'
wait_for "$TMP/json2.err" '^Finished establishing watches'
mkdir "$W2/$(printf 'bad\377 "q"')"
touch "$W2/$(printf 'bad\377 "q"')/f" "$W2/sub/g"
usr1_until "$FT" "$TMP/table.out" "sub/\$"
usr1_until "$FJ" "$TMP/json2.out" 'sub/"'
stop "$FT" TERM || fail "fsnw-watch exited $?"
stop "$FJ" TERM || fail "fsnw-watch --json exited $?"
python3 - "$TMP/table.out" "$TMP/json2.out" <<'PY' || fail "fsnw-watch --json is not the table"
import json, os, sys

def last_table(path):
    text = open(path, "rb").read().split(b"\n\n")[-1]
    lines = text.rstrip(b"\n").split(b"\n")
    head = lines[0].split()
    rows = {}
    for line in lines[1:]:
        cells = line.split(None, len(head) - 1)
        rows[cells[-1]] = dict(zip([h.decode() for h in head[:-1]], map(int, cells[:-1])))
    return rows

table = last_table(sys.argv[1])
last = open(sys.argv[2], "rb").read().splitlines()[-1]
obj = json.loads(last.decode("utf-8"))
assert set(obj) == {"total", "events", "rows"}, sorted(obj)
assert obj["total"] == sum(r["total"] for r in obj["rows"]), obj
paths = {os.fsencode(r["path"]) for r in obj["rows"]}
assert paths == set(table), (paths, set(table))
for r in obj["rows"]:
    t = table[os.fsencode(r["path"])]
    for k, v in t.items():
        assert r[k] == v, (r, t)
assert any(b"bad\xff \"q\"" in p for p in paths), paths
print(f"fsnw-watch --json: {len(obj['rows'])} rows, as the table")
PY
