# SPDX-License-Identifier: MIT
# Helpers for the tools tests; sourced by each script, run by bash.
# meson passes the programs in FSNW_WAIT, FSNW_WATCH, FSNW_TREE and FSNW_EPOLL.
# Exit status: 0 passed, 1 failed, 77 skipped.

set -u

: "${FSNW_WAIT:?}" "${FSNW_WATCH:?}" "${FSNW_TREE:?}" "${FSNW_EPOLL:?}"

# Generous, only so that a broken program cannot hang the suite.
WAIT_LIMIT=${WAIT_LIMIT:-60}

TMP=$(mktemp -d /dev/shm/fsnw-tools-XXXXXX) || exit 1
BG_PIDS=()
MOUNTS=() # mounted by the test, in its own mount namespace: unmounted first

cleanup() {
	local pid m
	for pid in "${BG_PIDS[@]}"; do
		kill -CONT "$pid" 2>/dev/null
		kill -TERM "$pid" 2>/dev/null
	done
	for pid in "${BG_PIDS[@]}"; do
		wait "$pid" 2>/dev/null
	done
	cd / || return
	for m in "${MOUNTS[@]}"; do
		umount "$m"
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
# KEEP_TMP=1: leave the scratch directory (and any process) for a post-mortem.
[ -n "${KEEP_TMP:-}" ] && trap - EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

# start VAR CMD...: run CMD in the background (stdout, stderr as redirected
# by the caller through OUT and ERR), remember its pid in VAR.
start() {
	local var=$1 out=$2 err=$3
	shift 3
	# Emptied here, not by the child: a wait_for right after must not read
	# what an earlier run left in the same files.
	: >"$out"
	: >"$err"
	"$@" >>"$out" 2>>"$err" &
	BG_PIDS+=($!)
	printf -v "$var" %s "$!"
}

# stop PID [SIGNAL]: signal it and return its exit status.
stop() {
	kill -"${2:-TERM}" "$1" 2>/dev/null
	wait_exit "$1"
}

# pause: the next sleep of a polling loop that set `local PAUSE_MS=5`:
# 5 ms, doubled each time up to 50 ms. What a loop waits for is most often
# there within a few milliseconds (a line a program prints as it reads, a
# process that exits on a signal): a first look soon costs a fork or two,
# and a slow one is still looked at only 20 times a second.
pause() {
	local s
	printf -v s '0.%03d' "$PAUSE_MS"
	sleep "$s"
	PAUSE_MS=$((PAUSE_MS < 25 ? PAUSE_MS * 2 : 50))
}

# wait_for FILE ERE: until a line of FILE matches, or fail after WAIT_LIMIT.
wait_for() {
	local file=$1 re=$2 end=$((SECONDS + WAIT_LIMIT)) PAUSE_MS=5
	# Bytes, not characters: names need not be UTF-8.
	while ! LC_ALL=C grep -Eq -- "$re" "$file" 2>/dev/null; do
		if ((SECONDS >= end)); then
			echo "--- $file:" >&2
			tail -n 20 "$file" >&2
			fail "timed out waiting for /$re/ in $file"
		fi
		pause
	done
}

# usr1_until PID FILE ERE: ask PID for its table (SIGUSR1) until FILE has a
# line that matches ERE, or fail after WAIT_LIMIT.
usr1_until() {
	local end=$((SECONDS + WAIT_LIMIT)) PAUSE_MS=5
	until grep -Eq -- "$3" "$2" 2>/dev/null; do
		((SECONDS < end)) || fail "timed out waiting for /$3/ in $2"
		kill -USR1 "$1"
		pause
	done
}

# same_messages A B: the standard errors A and B say the same, less the
# "No events occurred." lines: a table asked for (usr1_until) before the
# first event was counted prints one, and how many the polling asks for is
# the test's timing, not the tool's.
same_messages() {
	diff -u <(grep -vx 'No events occurred\.' "$1") <(grep -vx 'No events occurred\.' "$2")
}

# ere_quote TEXT: TEXT as an extended regular expression that matches it.
ere_quote() {
	printf '%s' "$1" | LC_ALL=C sed 's/[][\.*^$()+?{}|/]/\\&/g'
}

# wait_exit PID: its exit status, or fail when it does not end in WAIT_LIMIT.
wait_exit() {
	local pid=$1 end=$((SECONDS + WAIT_LIMIT)) stat PAUSE_MS=5
	while kill -0 "$pid" 2>/dev/null; do
		# A child that has exited stays a zombie until wait: that is done.
		read -r _ _ stat _ 2>/dev/null <"/proc/$pid/stat" || break
		[ "$stat" = Z ] && break
		((SECONDS >= end)) && fail "process $pid did not exit"
		pause
	done
	wait "$pid"
}

# The value of a numeric member in a JSON text: json_num FILE NAME.
json_num() {
	grep -o "\"$2\":[0-9]*" "$1" | tail -n 1 | cut -d: -f2
}

# The real tree under DIR, as fsnw-tree dumps its view: a directory (d) or
# not (f), as FSNW_ISDIR tells them apart.
real_tree() {
	(cd "$1" && find . -mindepth 1 -printf '%y\t%P\n' | sed 's/^[^d]\t/f\t/' | LC_ALL=C sort)
}

# view_check WHAT: make the fsnw-tree started as FT, watching $W and writing
# $TMP/out, catch up (a marker file, then SIGUSR2 for its dump in $TMP/view)
# and compare its view, sorted by path, with the real tree.
NSYNC=0
view_check() {
	NSYNC=$((NSYNC + 1))
	touch "$W/.sync$NSYNC"
	wait_for "$TMP/out" "\"name\":\"\\.sync$NSYNC\""
	kill -USR2 "$FT"
	wait_for "$TMP/view" "	\\.sync$NSYNC\$"
	real_tree "$W" >"$TMP/real"
	LC_ALL=C sort "$TMP/view" | diff -u "$TMP/real" - || fail "$1: the view is not the tree"
	LC_ALL=C sort -c -t "$(printf '\t')" -k 2 "$TMP/view" || fail "$1: the dump is not sorted by path"
	echo "$1: view of $(wc -l <"$TMP/real") entries matches"
}

# Side by side with inotifywait: the same operations, the same lines.
# Ordering is kept deterministic: both watchers are established before the
# first operation; a marker file (sync) is created wherever the next step
# needs both to have caught up (a new directory must be watched before
# anything is made in it); no operation makes two identical events in a row,
# which the kernel may or may not merge depending on when each reader reads.
# The watched directory is $W.

# run_pair NAME ARGS...: start both watchers with ARGS.
run_pair() {
	PAIR=$1
	shift
	start IW "$TMP/$PAIR.iw.out" "$TMP/$PAIR.iw.err" inotifywait -m "$@"
	start FW "$TMP/$PAIR.fw.out" "$TMP/$PAIR.fw.err" "$FSNW_WAIT" -m "$@"
	wait_for "$TMP/$PAIR.iw.err" '^Watches established\.$'
	wait_for "$TMP/$PAIR.fw.err" '^Watches established\.$'
}

# sync NAME [ERE]: create NAME in the watched root; wait until both
# watchers have printed its last event (a line matching ERE) where their
# lines go ($IW_LINES and $FW_LINES, stdout by default).
sync() {
	local re=${2:-"CLOSE_WRITE,CLOSE $1\$"}
	touch "$W/$1"
	wait_for "${IW_LINES:-$TMP/$PAIR.iw.out}" "$re"
	wait_for "${FW_LINES:-$TMP/$PAIR.fw.out}" "$re"
}

# dsync NAME: as sync, with a directory, for watchers that hear only those.
dsync() {
	mkdir "$W/$1"
	wait_for "${IW_LINES:-$TMP/$PAIR.iw.out}" "CREATE,ISDIR $1\$"
	wait_for "${FW_LINES:-$TMP/$PAIR.fw.out}" "CREATE,ISDIR $1\$"
}

# end_pair: stop both; their exit status (SIGTERM's), stderr and the lines
# must be byte for byte the same.
end_pair() {
	local iw=${IW_LINES:-$TMP/$PAIR.iw.out} fw=${FW_LINES:-$TMP/$PAIR.fw.out} rc1 rc2
	stop "$IW"
	rc1=$?
	stop "$FW"
	rc2=$?
	[ "$rc1" = "$rc2" ] || fail "$PAIR: fsnw-wait -m exited $rc2 on SIGTERM, inotifywait $rc1"
	diff -u "$TMP/$PAIR.iw.err" "$TMP/$PAIR.fw.err" || fail "$PAIR: stderr differs"
	cmp -s "$iw" "$fw" || { diff -u "$iw" "$fw"; fail "$PAIR: events differ"; }
	[ -s "$fw" ] || fail "$PAIR: no events at all"
	echo "$PAIR: $(wc -l <"$fw") identical lines"
}


# single_pair NAME ARGS...: start both watchers without -m and wait until
# both have set up their watches (ARGS must not hold -q).
single_pair() {
	PAIR=$1
	shift
	start IW "$TMP/$PAIR.iw.out" "$TMP/$PAIR.iw.err" inotifywait "$@"
	start FW "$TMP/$PAIR.fw.out" "$TMP/$PAIR.fw.err" "$FSNW_WAIT" "$@"
	wait_for "$TMP/$PAIR.iw.err" '^Watches established\.$'
	wait_for "$TMP/$PAIR.fw.err" '^Watches established\.$'
}

# end_single: wait until both have exited; the exit status, stdout and
# stderr must be the same.
end_single() {
	local rc1 rc2
	wait_exit "$IW"
	rc1=$?
	wait_exit "$FW"
	rc2=$?
	[ "$rc1" = "$rc2" ] || fail "$PAIR: fsnw-wait exited $rc2, inotifywait $rc1"
	cmp -s "$TMP/$PAIR.iw.err" "$TMP/$PAIR.fw.err" ||
		{ diff -u "$TMP/$PAIR.iw.err" "$TMP/$PAIR.fw.err"; fail "$PAIR: stderr differs"; }
	cmp -s "$TMP/$PAIR.iw.out" "$TMP/$PAIR.fw.out" ||
		{ diff -u "$TMP/$PAIR.iw.out" "$TMP/$PAIR.fw.out"; fail "$PAIR: stdout differs"; }
	echo "$PAIR: exit $rc1 and the same $(wc -c <"$TMP/$PAIR.fw.out") bytes from both"
}

# without_inotify NAME CMD...: a script at $TMP/NAME that runs CMD with its
# arguments where no inotify instance may be had (a user namespace whose
# limit is 0); false where there are no user namespaces.
without_inotify() {
	local name=$1
	shift
	unshare --user --map-root-user true 2>/dev/null || return 1
	printf '#!/bin/sh\nexec unshare --user --map-root-user sh -c %s sh %s "$@"\n' \
		"'echo 0 >/proc/sys/user/max_inotify_instances && exec \"\$@\"'" "$*" >"$TMP/$name"
	chmod +x "$TMP/$name"
}

# same_run NAME TOOL OURS ARGS...: run TOOL and OURS to the end with ARGS
# (which must not wait for anything); status, stdout and stderr must be
# the same, our program's name in getopt's messages read as TOOL's.
same_run() {
	local name=$1 tool=$2 ours=$3 rc1 rc2
	shift 3
	timeout "$WAIT_LIMIT" "$tool" "$@" >"$TMP/$name.t.out" 2>"$TMP/$name.t.err" </dev/null
	rc1=$?
	timeout "$WAIT_LIMIT" "$ours" "$@" >"$TMP/$name.o.out" 2>"$TMP/$name.o.err" </dev/null
	rc2=$?
	sed -i "s|^$ours:|$tool:|" "$TMP/$name.o.err"
	[ "$rc1" = "$rc2" ] || fail "$name: $ours $*: exit $rc2, $tool $rc1 ($(cat "$TMP/$name.o.err"))"
	cmp -s "$TMP/$name.t.err" "$TMP/$name.o.err" ||
		{ diff -u "$TMP/$name.t.err" "$TMP/$name.o.err"; fail "$name: stderr differs"; }
	cmp -s "$TMP/$name.t.out" "$TMP/$name.o.out" ||
		{ diff -u "$TMP/$name.t.out" "$TMP/$name.o.out"; fail "$name: stdout differs"; }
}
