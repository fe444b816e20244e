#!/bin/bash
# SPDX-License-Identifier: MIT
# fsnw-epoll: events and timer ticks come out of one epoll loop; SIGTERM
# ends it with 0.
. "$(dirname "$0")/lib.sh"

W=$TMP/w
mkdir "$W"
start FE "$TMP/out" "$TMP/err" "$FSNW_EPOLL" "$W"
wait_for "$TMP/out" '^watching 1 path\(s\)$'
touch "$W/x"
wait_for "$TMP/out" "^wid 1 mask 0x100 count 1 $W/x\$"
wait_for "$TMP/out" '^tick 1$'
stop "$FE" || fail "fsnw-epoll exited $? on SIGTERM"
[ -s "$TMP/err" ] && fail "fsnw-epoll complained: $(cat "$TMP/err")"
"$FSNW_EPOLL" "$TMP/nope" >/dev/null 2>"$TMP/err" && fail "a missing path was accepted"
grep -q "No such file or directory" "$TMP/err" || fail "no reason given: $(cat "$TMP/err")"
echo "fsnw-epoll: events, ticks and a clean exit"
