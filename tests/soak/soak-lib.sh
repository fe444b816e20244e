# SPDX-License-Identifier: MIT
# What the soak scripts share (sourced by soak.sh and linux.sh, run by bash):
# fsnw-tree followed live on a watched directory, a sync on a sentinel file,
# and the comparison of fsnw-tree's view with find(1), one row per phase.
#
# The caller sets FSNW_TREE (the program), W (the watched directory, on a
# tmpfs) and LOG (a directory for the logs, on another filesystem: a
# fanotify mark on W's must not hear them), then calls tree_start.

: "${FSNW_TREE:?}"

# Seconds a phase may take to be read to its sentinel, by fsnw-tree and by
# the other watchers, once fsnw-tree has read it.
SOAK_TIMEOUT=${SOAK_TIMEOUT:-900}
SOAK_WATCHER_TIMEOUT=${SOAK_WATCHER_TIMEOUT:-300}
SOAK_STATUS=0
SOAK_SYNCS=0
FT=         # fsnw-tree's pid
WATCHERS=() # "NAME PID FILE": other watchers that print SENTINEL's create line
BG_PIDS=()
ROW='%-8s %-22s %-7s %7s %6s %6s %6s %6s %8s %4s %4s %7s %7s %7s %5s\n'

soak_fail() {
	echo "FAIL [$BACKEND] $*"
	SOAK_STATUS=1
}

# in_private_tmpfs SCRIPT ARGS...: re-run SCRIPT in a mount namespace of its
# own (as root, where there are mount namespaces), so that it can mount a
# tmpfs only its watchers see. Returns where it cannot; does not return
# where it can.
in_private_tmpfs() {
	[ -n "${SOAK_IN_NS:-}" ] && return 0
	[ "$(id -u)" = 0 ] || return 0
	command -v unshare >/dev/null || return 0
	unshare --mount --propagation private true 2>/dev/null || return 0
	SOAK_IN_NS=1 exec unshare --mount --propagation private bash "$@"
}

# private_tmpfs DIR SIZE: DIR made, and a tmpfs of its own mounted on it when
# in a namespace of our own (else DIR is where it is: /dev/shm or /tmp).
private_tmpfs() {
	mkdir -p "$1" || return 1
	[ -n "${SOAK_IN_NS:-}" ] || return 0
	mount -t tmpfs -o "size=$2" fsnw-soak "$1"
}

# Stop what soak_start_bg started (in reverse), fsnw-tree with them.
soak_stop_all() {
	local i
	for ((i = ${#BG_PIDS[@]} - 1; i >= 0; i--)); do
		kill -TERM "${BG_PIDS[i]}" 2>/dev/null
		wait "${BG_PIDS[i]}" 2>/dev/null
	done
	BG_PIDS=()
	WATCHERS=()
	FT=
}

# soak_start_bg VAR OUT ERR CMD...: CMD in the background, its pid in VAR.
soak_start_bg() {
	local var=$1 out=$2 err=$3
	shift 3
	: >"$out"
	: >"$err"
	"$@" >"$out" 2>"$err" &
	BG_PIDS+=($!)
	printf -v "$var" %s "$!"
}

# size FILE: its size in bytes.
size() {
	stat -c %s "$1"
}

# wait_line FILE OFFSET FIXED LIMIT: until FILE, from byte OFFSET on, holds a
# line that is FIXED (grep -F -x), or LIMIT seconds; nonzero then.
wait_line() {
	local end=$((SECONDS + $4))
	until tail -c +"$(($2 + 1))" "$1" 2>/dev/null | LC_ALL=C grep -Fxq -- "$3"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# wait_match FILE OFFSET FIXED LIMIT: as wait_line, FIXED anywhere in a line.
wait_match() {
	local end=$((SECONDS + $4))
	until tail -c +"$(($2 + 1))" "$1" 2>/dev/null | LC_ALL=C grep -Fq -- "$3"; do
		((SECONDS < end)) || return 1
		sleep 0.2
	done
}

# tree_start BACKEND: fsnw-tree on W, its view dumped to $LOG/view on
# SIGUSR2. Returns 77 where the backend cannot watch here.
tree_start() {
	BACKEND=$1
	tree_launch || return
	printf "$ROW" backend phase view entries miss extra early late events ovfl resc \
		user_ms sys_ms rss_kb secs
}

# tree_launch: start fsnw-tree (tree_start).
tree_launch() {
	soak_start_bg FT "$LOG/tree.out" "$LOG/tree.err" "$FSNW_TREE" --backend "$BACKEND" \
		${SOAK_QUEUE:+--queue "$SOAK_QUEUE"} --dump "$LOG/view" "$W"
	wait_match "$LOG/tree.err" 0 "fsnw-tree: " 60 || {
		soak_fail "fsnw-tree did not start"
		return 1
	}
	if grep -q "^fsnw-tree: cannot" "$LOG/tree.err"; then
		echo "skip [$BACKEND]: $(cat "$LOG/tree.err")"
		soak_stop_all
		return 77
	fi
	T_OUT=0 T_ERR=0 T_CPU=$(cpu_ticks "$FT") T_START=$SECONDS
	TICK_MS=$((1000 / $(getconf CLK_TCK)))
}

# tree_restart: a new fsnw-tree, with a view of its own scan, in place of one
# whose view went wrong, so that the next phase is measured on its own. Its
# logs are kept as $LOG/PHASE.tree.{out,err}.
tree_restart() {
	local i
	kill -TERM "$FT" 2>/dev/null
	wait "$FT" 2>/dev/null
	for i in "${!BG_PIDS[@]}"; do
		[ "${BG_PIDS[i]}" = "$FT" ] && unset 'BG_PIDS[i]'
	done
	BG_PIDS=("${BG_PIDS[@]}")
	mv "$LOG/tree.out" "$LOG/$1.tree.out"
	mv "$LOG/tree.err" "$LOG/$1.tree.err"
	tree_launch
}

# watcher_add NAME PID FILE: another watcher whose FILE gets, for the
# sentinel's create, a line "$W/ CREATE NAME" (inotifywait's format).
watcher_add() {
	WATCHERS+=("$1 $2 $3")
}

cpu_ticks() {
	local f
	read -r -a f <"/proc/$1/stat" 2>/dev/null || { echo "0 0"; return; }
	echo "${f[13]} ${f[14]}"
}

rss_kb() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null
}

# The tree under DIR as find lists it, types as FSNW_ISDIR tells them: d or
# f (tests/tools/lib.sh, real_tree).
real_tree() {
	(cd "$1" && find . -mindepth 1 -printf '%y\t%P\n') | sed 's/^[^d]\t/f\t/' | LC_ALL=C sort
}

# sentinel: create the next sentinel file (SENT, its name) in W and wait
# until fsnw-tree has printed its create. Nonzero when it does not.
sentinel() {
	SOAK_SYNCS=$((SOAK_SYNCS + 1))
	SENT=.soak-sync-$SOAK_SYNCS
	touch "$W/$SENT"
	wait_match "$LOG/tree.out" "$T_OUT" "\"name\":\"$SENT\"" "$SOAK_TIMEOUT" && return 0
	if kill -0 "$FT" 2>/dev/null; then
		soak_fail "fsnw-tree did not read $SENT in ${SOAK_TIMEOUT}s"
	else
		soak_fail "fsnw-tree died: $(tail -n 3 "$LOG/tree.err")"
	fi
	return 1
}

# trailing A B: the lines fsnw-tree printed after sentinel A's create and
# before sentinel B's, the sentinels' own lines not counted.
trailing() {
	tail -c +"$((T_OUT + 1))" "$LOG/tree.out" | LC_ALL=C awk -v a="\"name\":\"$1\"" \
		-v b="\"name\":\"$2\"" -v s='"name":".soak-sync-' '
		index($0, b) { exit }
		seen && !index($0, s) { n++ }
		index($0, a) { seen = 1 }
		END { print n + 0 }'
}

# dump NAME: have fsnw-tree write its view ($LOG/view), and wait until the
# view it wrote holds sentinel NAME.
dump() {
	rm -f "$LOG/view"
	kill -USR2 "$FT"
	wait_match "$LOG/view" 0 "	$1" 60 || { soak_fail "no view dumped for $1"; return 1; }
}

# tree_sync: a sentinel, and fsnw-tree's view once it has printed its
# create (VIEW1: what a sync on one sentinel sees). What a walk finds is
# reported after the events read before it settles, and those may be newer
# than what it found (a file created in the tree since): so more sentinels,
# one after another has been printed, until fsnw-tree prints nothing between
# two of them (LATE: the lines it printed after the first). Then every other
# watcher must have printed the last one, and the view is dumped again.
# Nonzero when fsnw-tree does not get there.
tree_sync() {
	local first prev n i w wname pid file
	SYNC_OUT0=$T_OUT SYNC_ERR0=$T_ERR LATE=0
	sentinel || return 1
	first=$SENT
	dump "$first" && mv "$LOG/view" "$LOG/view1" || return 1
	for ((i = 0; i < 100; i++)); do
		prev=$SENT
		sentinel || return 1
		n=$(trailing "$prev" "$SENT")
		LATE=$((LATE + n))
		((n == 0)) && break
	done
	for w in "${WATCHERS[@]}"; do
		read -r wname pid file <<<"$w"
		# Only a watcher that lost events misses it (an overflow): say so, go on.
		wait_line "$file" 0 "$W/ CREATE $SENT" "$SOAK_WATCHER_TIMEOUT" ||
			echo "note [$BACKEND] $wname: no line for $SENT ($(grep -c Q_OVERFLOW "$file") overflow lines)"
	done
	dump "$SENT" || return 1
	T_OUT=$(size "$LOG/tree.out") T_ERR=$(size "$LOG/tree.err")
}

# overflows: the library's overflow counters so far (fsnw_stats_json, on
# SIGUSR1), those that are not 0, as "kernel=N queue=N ..."; "none".
overflows() {
	local off
	off=$(size "$LOG/tree.err")
	kill -USR1 "$FT"
	wait_match "$LOG/tree.err" "$off" " rescans, CPU " 60 || return
	tail -c +"$((off + 1))" "$LOG/tree.err" | grep '^{' | tail -n 1 |
		grep -o '"overflows_[a-z]*":[1-9][0-9]*' | sed 's/"overflows_\([a-z]*\)":/\1=/' |
		tr '\n' ' ' | sed 's/ $//; s/^$/none/'
}

# segment FILE FROM TO: bytes FROM to TO of FILE.
segment() {
	tail -c +"$(($2 + 1))" "$1" | head -c "$(($3 - $2))"
}

# tree_check PHASE: sync, then compare fsnw-tree's view with find, and print
# the phase's row: the view "equal" or "DIFFERS", entries, entries missing
# from the view and in the view not on disk, entries differing in the view
# at the first sentinel (early) and the lines printed after it (late,
# tree_sync), events read, overflows and rescans in the phase, fsnw-tree's
# CPU time in it and its RSS, seconds.
# A difference is printed (the first lines) with what came before it, its
# files are kept in $LOG/PHASE.*, and fsnw-tree is started again. Sets
# VERDICT, DIFF (entries differing), EARLY and OVFL (overflows) for the caller.
tree_check() {
	local phase=$1 miss extra early ev ovfl resc cpu u s verdict=equal
	tree_sync || return 1
	real_tree "$W" >"$LOG/find"
	sed 's/^[^d]\t/f\t/' "$LOG/view" | LC_ALL=C sort >"$LOG/view.sorted"
	miss=$(LC_ALL=C comm -23 "$LOG/find" "$LOG/view.sorted" | wc -l)
	extra=$(LC_ALL=C comm -13 "$LOG/find" "$LOG/view.sorted" | wc -l)
	# The view at the first sentinel, the later sentinels left out.
	early=$(sed 's/^[^d]\t/f\t/' "$LOG/view1" | LC_ALL=C sort | LC_ALL=C comm -3 - "$LOG/find" |
		grep -vc '	\.soak-sync-[0-9]*$')
	segment "$LOG/tree.out" "$SYNC_OUT0" "$T_OUT" >"$LOG/segment"
	ev=$(grep -vc '"rescan":true' "$LOG/segment")
	ovfl=$(grep -c '"Q_OVERFLOW"' "$LOG/segment")
	resc=$(segment "$LOG/tree.err" "$SYNC_ERR0" "$T_ERR" | grep -c "rescan after")
	read -r u s <<<"$(cpu_ticks "$FT")"
	read -r -a cpu <<<"$T_CPU"
	((miss + extra == 0)) || verdict=DIFFERS
	printf "$ROW" "$BACKEND" "$phase" "$verdict" "$(wc -l <"$LOG/find")" "$miss" "$extra" \
		"$early" "$LATE" "$ev" "$ovfl" "$resc" \
		$(((u - cpu[0]) * TICK_MS)) $(((s - cpu[1]) * TICK_MS)) "$(rss_kb "$FT")" \
		$((SECONDS - T_START))
	T_CPU="$u $s" T_START=$SECONDS
	VERDICT=$verdict DIFF=$((miss + extra)) OVFL=$ovfl EARLY=$early
	((ovfl == 0)) || echo "note [$BACKEND] $phase: the library's overflows so far: $(overflows)"
	if [ "$verdict" != equal ]; then
		soak_fail "$phase: the view differs from find ($miss missing, $extra extra;" \
			"$(grep -c '"Q_OVERFLOW"' "$LOG/tree.out") overflow lines so far, $ovfl in" \
			"this phase); the first lines (< find only, > view only):"
		diff "$LOG/find" "$LOG/view.sorted" | grep '^[<>]' | head -n 12
		cp "$LOG/find" "$LOG/$phase.find"
		cp "$LOG/view.sorted" "$LOG/$phase.view"
		cp "$LOG/segment" "$LOG/$phase.events"
		tree_restart "$phase"
	fi
	rm -f "$LOG/segment"
}
