#!/bin/bash
# SPDX-License-Identifier: MIT
# A real workload for tree watches: a Linux source tree (Debian's
# linux-source package, fetched once into SOAK_CACHE) in a watched
# directory W on a tmpfs of its own, with three watchers reading live:
# fsnw-tree (whose view is checked), fsnw-wait -m -r and Debian's
# inotifywait -m -r. Phases:
#   extract                 the tarball extracted into W (K: the kernel dir)
#   moves                   eight moves, back to back:
#                             mkdir W/new; mv K/include W/new/inc; mv W/new K/new2
#                             mkdir W/a; fill it (cp -a K/lib); mv W/a W/a2
#                             mv K/drivers O/drivers; mv O/drivers K/new2/drivers-back
#                             O/filled filled outside (cp -a K/sound), mv O/filled K/filled
#                             mkdir K/fs/new; fill it (cp -a K/crypto); mv K/fs K/fs2
#                             mv K/net K/new2/inc/net-moved
#                           (O is outside W, on the same filesystem)
#   remove                  rm -rf of everything in W
#   extract-again           the tarball extracted again
#   extract-while-removing  rm -rf of that copy while a new one is extracted
# After each phase a sentinel file is created in W; once fsnw-tree has read
# its create (and the others have printed it), fsnw-tree's view, dumped on
# SIGUSR2, is compared with find(1). One row per phase (soak-lib.sh), and a
# summary per backend and phase over the runs. Exit 1 when a view differed.
#
# usage: linux.sh FSNW_TREE FSNW_WAIT [BACKEND...]   (default: inotify fanotify)
# env: SOAK_RUNS (runs per backend, 3), SOAK_CACHE (/var/cache/fsnw-soak),
#      SOAK_LINUX_PKG (the package; default linux-source-6.1 if the archive
#      has it, else the newest linux-source-N.M), SOAK_CHECK_EACH=1 (check
#      after each of the moves too), SOAK_TIMEOUT (seconds, 900),
#      SOAK_KEEP=1 (keep every log), SOAK_QUEUE (fsnw-tree --queue: the
#      library's queue; with its default, a big subtree moved in overflows
#      it, and the rescan that follows hides what the events got wrong)
set -u
FSNW_TREE=$(readlink -f "$1")
FSNW_WAIT=$(readlink -f "$2")
. "$(dirname "$0")/soak-lib.sh"
[ "$(id -u)" = 0 ] || { echo "linux.sh: needs root (a private tmpfs, fanotify, sysctls)" >&2; exit 77; }
command -v inotifywait >/dev/null || { echo "linux.sh: needs inotifywait (inotify-tools)" >&2; exit 77; }
in_private_tmpfs "$0" "$@"
[ -n "${SOAK_IN_NS:-}" ] || { echo "linux.sh: no mount namespace here" >&2; exit 77; }
shift 2
backends=${*:-inotify fanotify}
runs=${SOAK_RUNS:-3}
cache=${SOAK_CACHE:-/var/cache/fsnw-soak}

# linux_tar: the source tarball, uncompressed (extracting it is then the
# filesystem's work, not xz's), in the cache; fetched and unpacked once.
linux_tar() {
	local xz pkg tar
	xz=$(ls "$cache"/usr/src/linux-source-*.tar.xz 2>/dev/null | sort -V | tail -n 1)
	if [ -z "$xz" ]; then
		pkg=${SOAK_LINUX_PKG:-}
		if [ -z "$pkg" ]; then
			if apt-cache show linux-source-6.1 >/dev/null 2>&1; then
				pkg=linux-source-6.1
			else
				pkg=$(apt-cache search --names-only '^linux-source-[0-9.]+$' |
					awk '{ print $1 }' | sort -V | tail -n 1)
			fi
		fi
		[ -n "$pkg" ] || { echo "linux.sh: no linux-source package in the archive" >&2; return 1; }
		echo "linux.sh: fetching $pkg into $cache" >&2
		mkdir -p "$cache" && (cd "$cache" && apt-get download -q "$pkg" >&2) || return 1
		dpkg-deb -x "$cache/${pkg}"_*.deb "$cache" && rm -f "$cache/${pkg}"_*.deb || return 1
		xz=$(ls "$cache"/usr/src/linux-source-*.tar.xz | sort -V | tail -n 1)
	fi
	tar=$cache/$(basename "$xz" .xz)
	if [ ! -s "$tar" ]; then
		xz -dc "$xz" >"$tar.tmp" && mv "$tar.tmp" "$tar" || return 1
	fi
	echo "$tar"
}

TAR=$(linux_tar) || exit 1
TOP=$(tar -tf "$TAR" | head -n 1)
TOP=${TOP%%/*}

# Three inotify watchers of up to two copies' directories (about 5,100 each):
# raise the per-user limit if it is lower, and put it back at the end.
watches_was=$(sysctl -n fs.inotify.max_user_watches)
watches_need=${SOAK_WATCHES:-131072}
if [ "$watches_was" -lt "$watches_need" ]; then
	sysctl -qw fs.inotify.max_user_watches="$watches_need" || exit 1
else
	watches_was=
fi

M=$(mktemp -d /dev/shm/fsnw-linux-XXXXXX) || exit 1
private_tmpfs "$M" 8g || exit 1
LOGS=$(mktemp -d /dev/shm/fsnw-linux-log-XXXXXX) || exit 1
cleanup() {
	soak_stop_all
	cd /
	umount "$M" && rmdir "$M"
	[ -n "$watches_was" ] && sysctl -qw fs.inotify.max_user_watches="$watches_was"
	if [ "$SOAK_STATUS" -eq 0 ] && [ -z "${SOAK_KEEP:-}" ]; then
		rm -rf "$LOGS"
	else
		echo "logs: $LOGS"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# step NAME CMD...: one of the moves; with SOAK_CHECK_EACH, checked alone.
step() {
	local name=$1
	shift
	"$@" || soak_fail "moves: $name failed"
	[ -n "${SOAK_CHECK_EACH:-}" ] && check "moves/$name"
}

carry_into_new() {
	mkdir "$W/new" && mv "$K/include" "$W/new/inc" && mv "$W/new" "$K/new2"
}

make_fill_rename() {
	mkdir "$W/a" && cp -a "$K/lib" "$W/a/lib" && mv "$W/a" "$W/a2"
}

out_and_back() {
	mv "$K/drivers" "$O/drivers" && mv "$O/drivers" "$K/new2/drivers-back"
}

moved_in() {
	mkdir "$O/filled" && cp -a "$K/sound" "$O/filled/" && mv "$O/filled" "$K/filled"
}

rename_parent_of_new() {
	mkdir "$K/fs/new" && cp -a "$K/crypto" "$K/fs/new/" && mv "$K/fs" "$K/fs2"
}

into_carried() {
	mv "$K/net" "$K/new2/inc/net-moved"
}

# check PHASE: compare the view (soak-lib.sh), and count the overflow lines
# the other watchers printed so far.
check() {
	tree_check "$1"
	ROWS+=("$BACKEND $1 $VERDICT $DIFF $OVFL")
	printf '%-8s %-22s fsnw-wait %s, inotifywait %s overflow lines\n' "$BACKEND" "$1" \
		"$(grep -c Q_OVERFLOW "$LOG/wait.out")" "$(grep -c Q_OVERFLOW "$LOG/iw.out")"
}

# one_run: the phases on a fresh W with fresh watchers.
one_run() {
	local iw fw
	W=$M/w O=$M/out K=$M/w/$TOP
	mkdir "$W" "$O"
	tree_start "$BACKEND"
	case $? in
	0) ;;
	77) return 77 ;;
	*) return 1 ;;
	esac
	soak_start_bg fw "$LOG/wait.out" "$LOG/wait.err" "$FSNW_WAIT" -m -r "$W"
	soak_start_bg iw "$LOG/iw.out" "$LOG/iw.err" inotifywait -m -r "$W"
	wait_line "$LOG/wait.err" 0 "Watches established." 60 || soak_fail "fsnw-wait did not start"
	wait_line "$LOG/iw.err" 0 "Watches established." 60 || soak_fail "inotifywait did not start"
	watcher_add fsnw-wait "$fw" "$LOG/wait.out"
	watcher_add inotifywait "$iw" "$LOG/iw.out"

	tar -C "$W" -xf "$TAR"
	check extract
	step carry-into-new carry_into_new
	step make-fill-rename make_fill_rename
	step out-and-back out_and_back
	step moved-in moved_in
	step rename-parent-of-new rename_parent_of_new
	step into-carried into_carried
	check moves
	rm -rf "${W:?}"/* "$W"/.[!.]*
	check remove
	tar -C "$W" -xf "$TAR"
	check extract-again
	mkdir "$W/again"
	rm -rf "$K" &
	tar -C "$W/again" -xf "$TAR"
	wait $!
	check extract-while-removing
	soak_stop_all
	rm -rf "$W" "$O"
}

ROWS=()
echo "linux.sh: $TOP ($(tar -tf "$TAR" | wc -l) entries), runs: $runs per backend"
for BACKEND in $backends; do
	for run in $(seq "$runs"); do
		LOG=$LOGS/$BACKEND-$run
		mkdir "$LOG"
		echo "== $BACKEND run $run"
		one_run
		rc=$?
		[ "$rc" = 77 ] && break
		[ -n "${SOAK_KEEP:-}" ] || rm -f "$LOG"/*.out "$LOG"/*.err "$LOG"/view* "$LOG"/find
	done
done

# The summary: per backend and phase, the runs whose view was equal, and the
# entries differing and the overflows, each run's separated by a slash.
echo
echo "summary (backend phase: equal/runs; entries differing per run; overflows per run)"
printf '%s\n' "${ROWS[@]}" | awk '
	{ k = $1 " " $2; if (!(k in runs)) order[n++] = k
	  runs[k]++; eq[k] += ($3 == "equal"); d[k] = d[k] (d[k] == "" ? "" : "/") $4
	  o[k] = o[k] (o[k] == "" ? "" : "/") $5 }
	END { for (i = 0; i < n; i++) { k = order[i]
		printf "%-8s %-34s %d/%d  differing %s  overflows %s\n", substr(k, 1, index(k, " ") - 1),
			substr(k, index(k, " ") + 1), eq[k], runs[k], d[k], o[k] } }'
exit "$SOAK_STATUS"
