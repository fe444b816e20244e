#!/bin/sh
# SPDX-License-Identifier: MIT
# The bench area's tests:
#   bench-test.sh CASE FSNW_BENCH FIXTURES_DIR [MAN_PAGE [INTERNAL_ARCHIVE]]
# Exit 0 pass, 1 fail, 77 skip. No test looks at how fast anything ran: the
# machine is shared, and a wall-clock threshold would test the machine.
set -u
case_=$1
bench=$2
fixtures=$3
manpage=${4:-}
internal=${5:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fsnw-bench-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# run ARGS...: the bench at its tiny size; its output goes to $tmp/out, $tmp/err.
run() {
	"$bench" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out"
	cat "$tmp/err" >&2
	return $rc
}

# row PATTERN: the one report line matching PATTERN.
row() {
	grep -E -- "$1" "$tmp/out" | head -n 1
}

# has LINE TEXT...: each TEXT is in LINE.
has() {
	line=$1
	shift
	[ -n "$line" ] || fail "no such row"
	for t in "$@"; do
		case "$line" in
		*"$t"*) ;;
		*) fail "expected '$t' in: $line" ;;
		esac
	done
}

# scenarios: the registered subcommands, as the general usage lists them.
scenarios() {
	"$bench" --help | sed -n '/^usage:/,/^common:/{/^  [a-z]/s/^  \([a-z-]*\).*/\1/p}'
}

# man_section NAME: the text of the page's section NAME (.SS or .SH), with
# roff's \- read as -.
man_section() {
	sed 's/\\-/-/g' "$manpage" | awk -v want="$1" '
		/^\.S[SH] / { sub(/^\.S[SH] +/, ""); gsub(/"/, ""); on = ($0 == want); next }
		on { print }'
}

# tiny SCENARIO: run it at its tiny size; every round's checks must pass.
tiny() {
	run "$1" --size tiny --quiet >/dev/null || fail "$1 exited $?"
	grep -q FAILED "$tmp/out" && fail "$1: a row is marked FAILED"
	if grep -q '^skip' "$tmp/err" && ! grep -q ' ok$\|every round passed' "$tmp/out"; then
		echo "$1: everything was skipped" >&2
		return 77
	fi
	return 0
}

case "$case_" in
report-seeds)
	# The reports' published medians give the reports' published percentages.
	f=$fixtures
	c=$f/churn-94bd01253c3d
	run report "$c-parentA.csv" "$c-child.csv" "$c-parentB.csv" || fail "report exited $?"
	has "$(row ' distinct  ')" 4182.614 4920.865 4274.895 +17.65% +15.11% 2.18% signal
	has "$(row 'distinct/shared')" 0.248777 0.292725 0.240657 +17.67% +21.64% 3.32% signal
	# The 94bd01253c3d report's controls and shared topology did not move: a
	# result, "no signal".
	has "$(row ' shared  ')" 17352.42 -0.97% -3.39% 2.47% "no signal" "0.97% < 5%"
	has "$(row ' update  ')" 390.677 +0.10% +0.15% "no signal"
	has "$(row ' lookup  ')" 594.964 +0.08% -0.27% "no signal"
	has "$(row 'add.remove')" 1126.821 +4.46% +3.39% "no signal" "4.46% < 5%"
	has "$(row '^2 signals, 4 no signal, 0 gate misses')"
	# The scaling sandwich: W16-SMT missed the CV gate with 15.006954% in the
	# child, which must not read "15.0% > 15%".
	run report "$c-scaling-parentA.csv" "$c-scaling-child.csv" "$c-scaling-parentB.csv" ||
		fail "report exited $?"
	has "$(row ' 16  distinct/shared')" "GATE MISS" "CV 15.01% > 15% in run 2" "(+19.22%)"
	has "$(row ' 6  distinct  ')" +9.03% +9.56% signal
	has "$(row ' 8  distinct/shared')" +17.62% +16.80% signal
	case "$(row 'CV 15.0%')" in ?*) fail "a CV printed equal to the gate it missed" ;; esac
	# The flistxattr report: six boots; every comparison of its table.
	x=$f/xattr-1e7cd8a53b72
	set -- "$x-7.0.14-A.csv" "$x-7.1.3.csv" "$x-parent-A.csv" "$x-child.csv" "$x-parent-B.csv" \
		"$x-7.0.14-B.csv"
	run report --controls 1,6 --candidate 2 "$@" || fail "report exited $?"
	has "$(row flistxattr)" 218.202 336.14 217.007 +54.47% -0.55% signal
	# The candidate may be the midpoint of two runs: parents vs 7.0.
	run report --controls 1,6 --candidate 3,5 "$@" || fail "report --candidate 3,5 exited $?"
	has "$(row flistxattr)" 325.3385 +49.51% signal
	has "$(row '^candidate:')" "the midpoint of runs 3 and 5" "run 1 and run 6"
	run report --controls 3,5 --candidate 4 "$@" || fail "report exited $?"
	has "$(row flistxattr)" -35.93% -1.04% signal
	run report --controls 1,6 --candidate 4 "$@" || fail "report exited $?"
	has "$(row flistxattr)" -4.21% "no signal"
	run report --candidate 2,3,4 "$@" >/dev/null 2>&1; [ $? -eq 2 ] ||
		fail "three candidates: not a usage error"
	# Without --controls: the first and last runs, each run between a candidate.
	run report "$x-7.0.14-A.csv" "$x-7.1.3.csv" "$x-7.0.14-B.csv" || fail "report exited $?"
	has "$(row flistxattr)" +54.47% signal
	;;
report-gates)
	f=$fixtures
	run report "$f/gates-A.csv" "$f/gates-C.csv" "$f/gates-B.csv" || fail "report exited $?"
	# Drift of 7.69% between the controls: labelled, changes in parentheses.
	has "$(row ' drifting ')" "GATE MISS" "drift 7.69% >= 5%" "(+0.20%)"
	# CV of 30% in every run.
	has "$(row ' noisy ')" "GATE MISS" "CV 30.0% > 15%"
	# A round whose checks failed is never a result.
	has "$(row ' failed ')" "GATE MISS" "checks failed in run 2"
	case "$(row ' failed ')" in *signal*) fail "a failed run reported as a signal" ;; esac
	has "$(row ' clean ')" +20.00% +18.81% signal
	has "$(row '^1 signal, 0 no signal, 3 gate misses')"
	# The gates are flags; a clean change below the threshold is "no signal".
	run report --max-cv 40 "$f/gates-A.csv" "$f/gates-C.csv" "$f/gates-B.csv" >/dev/null ||
		fail "report exited $?"
	has "$(row ' noisy ')" "signal"
	run report --min-change 19 "$f/gates-A.csv" "$f/gates-C.csv" "$f/gates-B.csv" \
		>/dev/null || fail "report exited $?"
	has "$(row ' clean ')" "no signal: change vs run 3 18.81% < 19%" +18.81%
	case "$(row ' clean ')" in *"(+"*) fail "a no-signal change shown as a non-result" ;; esac
	run report --max-drift 0.5 "$f/gates-A.csv" "$f/gates-C.csv" "$f/gates-B.csv" \
		>/dev/null || fail "report exited $?"
	has "$(row ' clean ')" "GATE MISS" "drift 1.00% >= 0.5%"
	# Two runs: one control, so the drift is unknown and nothing is a result.
	run report "$f/gates-A.csv" "$f/gates-C.csv" >/dev/null || fail "report exited $?"
	has "$(row ' clean ')" "GATE MISS" "drift unknown"
	;;
csv)
	run xattr --size tiny --quiet --csv "$tmp/run.csv" >/dev/null || fail "xattr exited $?"
	run churn --size tiny --quiet --variants raw,lib --workers 1 --csv "$tmp/run.csv" \
		>/dev/null || fail "churn exited $?"
	[ "$(head -n 1 "$tmp/run.csv")" = \
		"scenario,variant,kernel,workers,round,metric,value,unit,semantic_ok" ] ||
		fail "header: $(head -n 1 "$tmp/run.csv")"
	# Appending to the file does not repeat the header.
	[ "$(grep -c '^scenario,' "$tmp/run.csv")" -eq 1 ] || fail "the header is repeated"
	kernel=$(uname -r)
	awk -F, -v k="$kernel" 'NR > 1 {
		if (NF != 9) { print "fields: " $0; bad = 1 }
		if ($3 != k) { print "kernel: " $0; bad = 1 }
		if ($4 !~ /^[0-9]+$/ || $5 !~ /^[0-9]+$/) { print "workers/round: " $0; bad = 1 }
		if ($7 !~ /^-?[0-9.]+(e[-+]?[0-9]+)?$/) { print "value: " $0; bad = 1 }
		if ($9 != "1") { print "semantic_ok: " $0; bad = 1 }
		n++
	} END { if (n < 10) { print "only " n " rows"; bad = 1 } exit bad }' "$tmp/run.csv" ||
		fail "malformed rows"
	grep -q '^xattr,raw,' "$tmp/run.csv" || fail "no xattr rows"
	grep -q '^churn,lib,.*,distinct,' "$tmp/run.csv" || fail "no churn lib rows"
	for key in kernel_release boot_id cmdline cpus_online cpu_model fs_type fs_magic \
		sysctl.fs.inotify.max_user_instances sysctl.fs.inotify.max_queued_events \
		sysctl.fs.fanotify.max_queued_events compiler connector_probe connector_tracking \
		oversubscribed; do
		grep -q "^$key=" "$tmp/run.csv.env" || fail "environment record lacks $key"
	done
	grep -q '^fs_type=tmpfs$' "$tmp/run.csv.env" || echo "note: the test dir is not tmpfs" >&2
	# report reads what a run wrote.
	run report "$tmp/run.csv" "$tmp/run.csv" >/dev/null || fail "report of a run exited $?"
	;;
inject)
	# A failed check marks its rows and makes the exit status non-zero.
	FSNW_BENCH_FAIL_VARIANT=xattr/raw run xattr --size tiny --quiet --csv "$tmp/f.csv" \
		>/dev/null && fail "a failed check exited 0"
	grep -q ',0$' "$tmp/f.csv" || fail "no row marked semantic_ok=0"
	grep -q ',1$' "$tmp/f.csv" && fail "a failed round marked ok"
	grep -q '^failed_checks=[1-9]' "$tmp/f.csv.env" || fail "env record: failed_checks"
	grep -q 'FAIL xattr raw' "$tmp/err" || fail "no FAIL line on stderr"
	;;
pin)
	# A pin that cannot be made fails the run before it starts.
	run xattr --size tiny --cpus 1023 >/dev/null && fail "a failed pin exited 0"
	grep -q 'cannot pin' "$tmp/err" || fail "no reason given"
	# A pin that can be made is checked by the workers (affinity check).
	run churn --size tiny --quiet --variants raw --cpus 0 >/dev/null ||
		fail "pinned churn exited $?"
	;;
usage)
	run churn --writes 5 >/dev/null 2>&1; [ $? -eq 2 ] || fail "a misplaced option: not 2"
	run churn --variants nosuch >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown variant: not 2"
	run frobnicate >/dev/null 2>&1; [ $? -eq 2 ] || fail "unknown subcommand: not 2"
	run report only-one.csv >/dev/null 2>&1; [ $? -eq 2 ] || fail "report of one run: not 2"
	run churn --workers 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "a number out of range: not 2"
	run churn --size huge >/dev/null 2>&1; [ $? -eq 2 ] || fail "an unknown size: not 2"
	run quick --rounds 3 >/dev/null 2>&1; [ $? -eq 2 ] || fail "quick --rounds: not 2"
	run report --controls 1,2,3 a.csv b.csv >/dev/null 2>&1; [ $? -eq 2 ] ||
		fail "three controls: not 2"
	run --help >/dev/null || fail "--help exited $?"
	run churn --help >/dev/null || fail "churn --help exited $?"
	has "$(row -- '--groups G')" "[8 / 32 / 32 / 96]"
	# Presets and the command line share one grammar: 1..4 is 1, 2, 4.
	run churn --size tiny --quiet --variants raw --workers 1..4 --csv "$tmp/w.csv" \
		>/dev/null || fail "churn --workers 1..4 exited $?"
	ran=$(cut -d, -f4 "$tmp/w.csv" | sed 1d | sort -un | tr '\n' ' ')
	[ "$ran" = "1 2 4 " ] || fail "--workers 1..4 ran $ran"
	;;
registry)
	# Every registered scenario is in the usage, has --help, and is described
	# in fsnw-bench(1) with each of its options, presets and variants.
	[ -r "$manpage" ] || fail "no man page given"
	list=$(scenarios)
	for s in churn xattr parent-write openclose addwatch-children merge quick report; do
		echo "$list" | grep -qx -- "$s" || fail "$s is not registered"
	done
	man_section SYNOPSIS >"$tmp/syn"
	for s in $list; do
		man_section "$s" >"$tmp/sec"
		[ -s "$tmp/sec" ] || fail "fsnw-bench(1) has no section $s"
		grep -qx -- ".B fsnw-bench $s" "$tmp/syn" || fail "$s is not in the SYNOPSIS"
		"$bench" "$s" --help >"$tmp/help" || fail "$s --help exited $?"
		sed -n 's/^variants: //p' "$tmp/help" | tr ' ' '\n' | while read -r v; do
			[ -n "$v" ] || continue
			grep -Eq "^\.B[IR]? (.* )?\"?$v([ \",]|\$)" "$tmp/sec" ||
				fail "variant $s $v is not in fsnw-bench(1)"
		done || exit 1
		# Own options: --flag ARG  help [presets]; quick lists the others'.
		sed -n '/^options/,/^common options/{/^  --/p}' "$tmp/help" | while read -r line; do
			flag=$(echo "$line" | sed 's/^\(--[a-z-]*\).*/\1/')
			presets=$(echo "$line" | sed -n 's/.*\[\(.*\)\]$/\1/p')
			if [ "$s" = quick ]; then
				sed 's/\\-/-/g' "$manpage" | grep -Eq -- "$flag([^a-z-]|\$)" ||
					fail "quick's $flag is nowhere in fsnw-bench(1)"
				continue
			fi
			grep -Eq -- "$flag([^a-z-]|\$)" "$tmp/sec" ||
				fail "$s $flag is not in its section"
			[ -z "$presets" ] || grep -qF -- "$presets" "$tmp/sec" ||
				fail "$s $flag: presets '$presets' are not in its section"
		done || exit 1
	done
	man_section "COMMON OPTIONS" >"$tmp/common"
	"$bench" --help | sed -n '/^common:/,/^fsnw-bench/p' | grep -o -- '--[a-z-]*' |
		while read -r flag; do
			grep -Eq -- "$flag([^a-z-]|\$)" "$tmp/common" ||
				fail "common $flag is not in fsnw-bench(1)"
		done || exit 1
	;;
quick-refuses)
	# A row quick cannot fill is refused out loud, never dropped.
	FSNW_BENCH_DROP_VARIANT=xattr/raw run quick --size tiny --quiet >/dev/null &&
		fail "quick with an unfillable row exited 0"
	grep -q "cannot fill the row 'xattr flistxattr (kernel probe)'" "$tmp/err" ||
		fail "no message on stderr"
	has "$(row '^xattr flistxattr')" "NOT FILLED"
	grep -q 'could not be filled' "$tmp/out" || fail "no summary line"
	;;
churn-method)
	# The 94bd01253c3d report's method: every round of raw is a process of its
	# own with a fresh fixture, and its W workers meet at one barrier of their
	# own; raw-warm keeps one fixture per topology, in one process, for the pass.
	FSNW_BENCH_TRACE=$tmp/trace run churn --size tiny --quiet --groups 4 --workers 1,2 \
		--warmup 1 --rounds 2 --variants raw,raw-warm --csv "$tmp/c.csv" >/dev/null ||
		fail "churn exited $?"
	for W in 1 2; do
		grep "^churn: raw W=$W round" "$tmp/trace" >"$tmp/fresh"
		[ "$(wc -l <"$tmp/fresh")" -eq 6 ] || fail "raw W=$W: not 3 rounds x 2 topologies"
		grep -v ": fresh fixture " "$tmp/fresh" && fail "raw W=$W: a round without a fresh fixture"
		grep -v "one barrier of $W workers\$" "$tmp/fresh" && fail "raw W=$W: the barrier"
		[ "$(sed 's/.*fixture \([^ ]*\) .*/\1/' "$tmp/fresh" | sort -u | wc -l)" -eq 6 ] ||
			fail "raw W=$W: a fixture was used twice"
		[ "$(sed 's/.* in process \([0-9]*\),.*/\1/' "$tmp/fresh" | sort -u | wc -l)" -eq 6 ] ||
			fail "raw W=$W: two rounds in one process"
		grep "^churn: raw-warm W=$W round" "$tmp/trace" >"$tmp/warm"
		[ "$(wc -l <"$tmp/warm")" -eq 6 ] || fail "raw-warm W=$W: not 6 rounds"
		[ "$(sed 's/.*fixture \([^ ]*\) .*/\1/' "$tmp/warm" | sort -u | wc -l)" -eq 2 ] ||
			fail "raw-warm W=$W: not one fixture per topology"
		[ "$(sed 's/.* in process \([0-9]*\),.*/\1/' "$tmp/warm" | sort -u | wc -l)" -eq 1 ] ||
			fail "raw-warm W=$W: not one process"
	done
	grep -q '^churn,raw-warm,.*,distinct\.remove,' "$tmp/c.csv" || fail "no raw-warm rows"
	# The controls as the report's reproducer sets them up: one worker, its masks, N calls.
	FSNW_BENCH_TRACE=$tmp/trace2 run churn --size tiny --quiet --workers 1,2 \
		--variants bulk-raw,bulk-lib,mask-update,path-lookup --control-calls 100 \
		--csv "$tmp/k.csv" >/dev/null || fail "churn controls exited $?"
	awk -F, '$2 == "mask-update" && ($4 != 1 || $6 != "update" || $8 != "ns/call") { bad = 1 }
		$2 == "path-lookup" && ($4 != 1 || $6 != "lookup" || $8 != "ns/call") { bad = 1 }
		$2 == "mask-update" { m++ } $2 == "path-lookup" { p++ }
		END { exit bad || !m || !p }' "$tmp/k.csv" ||
		fail "mask-update/path-lookup rows: $(grep -e mask-update -e path-lookup "$tmp/k.csv")"
	grep -q '^churn: bulk-raw round 1: 64 fresh directories, mask IN_CREATE|IN_DELETE|IN_MOVED_FROM|IN_MOVED_TO$' \
		"$tmp/trace2" || fail "bulk: not the reproducer's set-up"
	;;
seed-size)
	# --size seed runs one worker per CPU, not the report machine's 8.
	cpus=$(nproc)
	G=$cpus
	[ "$G" -ge 8 ] || G=8
	run churn --size seed --quiet --groups "$G" --variants raw --warmup 0 --rounds 1 \
		--csv "$tmp/s.csv" >/dev/null || fail "churn --size seed exited $?"
	ran=$(cut -d, -f4 "$tmp/s.csv" | sed 1d | sort -u | tr '\n' ' ')
	[ "$ran" = "$cpus " ] || fail "--size seed on $cpus CPUs ran workers $ran"
	run churn --size seed --quiet --groups 8 --variants raw --warmup 0 --rounds 1 \
		--cpus 0 --csv "$tmp/s1.csv" >/dev/null || fail "churn --size seed --cpus 0 exited $?"
	ran=$(cut -d, -f4 "$tmp/s1.csv" | sed 1d | sort -u | tr '\n' ' ')
	[ "$ran" = "1 " ] || fail "--size seed --cpus 0 ran workers $ran"
	has "$(row '^churn W=1: workers CPU 0, one per CPU')"
	# A CPU list that does not hold a CPU per worker is refused, as the
	# report's reproducer refuses it...
	run churn --size tiny --variants raw --cpus 0 --workers 1,2 >/dev/null 2>&1
	[ $? -eq 2 ] || fail "2 workers on --cpus 0: not refused"
	grep -q 'one per worker' "$tmp/err" || fail "no reason given"
	# ...unless asked for; then every row, the CSV and the record say so.
	run churn --size tiny --quiet --variants raw,floor-new,lib --cpus 0 --workers 1,2 \
		--oversubscribe --csv "$tmp/o.csv" >/dev/null || fail "churn exited $?"
	grep -q '^workers 2: more busy threads than the 1 CPU ' "$tmp/out" ||
		fail "no oversubscription note"
	grep -q '^workers 1:' "$tmp/out" && fail "W=1 called oversubscribed on one CPU"
	has "$(row '^raw +2 \(oversubscribed\) +distinct ')"
	grep -q '^churn,raw (oversubscribed),[^,]*,2,' "$tmp/o.csv" || fail "CSV: W=2 not labelled"
	grep -q '^churn,raw (oversubscribed),[^,]*,1,' "$tmp/o.csv" && fail "CSV: W=1 labelled"
	grep -q '^churn,raw,[^,]*,1,' "$tmp/o.csv" || fail "CSV: no W=1 rows"
	grep -q '^oversubscribed=churn at 2 ' "$tmp/o.csv.env" || fail "env: $(grep oversub "$tmp/o.csv.env")"
	has "$(row '^churn W=2: workers CPUs 0,0, oversubscribed')"
	# report keeps the labelled rows apart from the others.
	run report "$tmp/o.csv" "$tmp/o.csv" >/dev/null || fail "report exited $?"
	has "$(row 'raw \(oversubscribed\) +2 ')"
	;;
merge-seed)
	# LTP's second iteration: the files exist before the round, the second
	# pass opens them O_RDONLY, and the limited queue's row counts the
	# overflow among its events.
	FSNW_BENCH_TRACE=$tmp/trace run merge --size tiny --quiet \
		--variants lib,kernel-limited,kernel-unlimited --csv "$tmp/m.csv" >/dev/null ||
		fail "merge exited $?"
	grep -q '^merge: lib: [0-9]* files made before the rounds; each round opens them O_RDWR|O_CREAT, then O_RDONLY$' \
		"$tmp/trace" || fail "lib: not LTP's passes"
	N=$(awk -F, '$2 == "lib" { print $4; exit }' "$tmp/m.csv")
	awk -F, -v n="$N" '$2 == "lib" && $6 == "events" && $7 != n { bad = 1 }
		$2 == "lib" && $6 == "overflows" && $7 != 1 { bad = 1 }
		END { exit bad }' "$tmp/m.csv" || fail "lib: not $N events with the overflow"
	if grep -q '^skip merge kernel-limited' "$tmp/err"; then
		echo "kernel variants skipped: $(grep '^skip merge kernel' "$tmp/err" | head -n 1)" >&2
	else
		grep -q '^merge: kernel: [0-9]* files made before the rounds; each round opens them O_RDWR|O_CREAT, then O_RDONLY$' \
			"$tmp/trace" || fail "kernel: not LTP's passes"
		max=$(cat /proc/sys/fs/fanotify/max_queued_events 2>/dev/null || echo 16384)
		awk -F, -v n=$((max + 1)) '$2 == "kernel-limited" && $6 == "events" && $7 != n { bad = 1 }
			$2 == "kernel-limited" && $6 == "overflows" && $7 != 1 { bad = 1 }
			$2 == "kernel-limited" { k++ }
			END { exit bad || !k }' "$tmp/m.csv" ||
			fail "kernel-limited: $(grep kernel-limited "$tmp/m.csv")"
		has "$(row '^kernel, limited queue: ')" "$((max + 1)) events ($max + 1 overflow)"
	fi
	;;
parent-write-seed)
	# Jan Kara's load as the default: a watch on the directory, no reader.
	FSNW_BENCH_TRACE=$tmp/trace run parent-write --size tiny --quiet --clients 1 \
		--csv "$tmp/p.csv" >/dev/null || fail "parent-write exited $?"
	grep -q '^parent-write: parent X=1 round 1: IN_MODIFY on the directory, no reader, queue drained after the round$' \
		"$tmp/trace" || fail "parent: not Jan Kara's shape"
	# Nobody read during the run, so the kernel merged one client's writes
	# into the one event at the tail of its queue.
	awk -F, '$2 == "parent" && $6 == "events" && $7 != 1 { bad = 1 }
		$2 == "parent" && $6 == "events" { n++ }
		END { exit bad || !n }' "$tmp/p.csv" ||
		fail "parent X=1: events $(awk -F, '$2 == "parent" && $6 == "events"' "$tmp/p.csv")"
	for v in parent-reader-raw parent-reader-lib; do
		grep -q "^parent-write,$v,.*,events," "$tmp/p.csv" || fail "no $v rows"
	done
	grep -q '^parent-write,parent,.*,write-cpu,' "$tmp/p.csv" || fail "no write-cpu"
	;;
fs)
	# openclose and parent-write say where they measured.
	run openclose --size tiny --quiet --csv "$tmp/o.csv" >/dev/null || fail "openclose exited $?"
	fs=$(sed -n 's/^fs_type=//p' "$tmp/o.csv.env")
	grep -q "^fs.openclose=$fs\$" "$tmp/o.csv.env" || fail "env record: no fs.openclose=$fs"
	has "$(row '^== openclose ')" "on $fs"
	run parent-write --size tiny --quiet --clients 1 --csv "$tmp/p.csv" >/dev/null ||
		fail "parent-write exited $?"
	grep -q "^fs.parent-write=$fs\$" "$tmp/p.csv.env" || fail "env record: no fs.parent-write"
	has "$(row '^== parent-write ')" "on $fs"
	;;
loopfs)
	# --dir on XFS and ext4, each a loop-mounted image, as fsnw-bench(1) says.
	if [ "$(id -u)" -ne 0 ]; then
		echo "skip: loop-mounting an image needs root" >&2
		exit 77
	fi
	made=0
	for fs in xfs ext4; do
		if ! command -v "mkfs.$fs" >/dev/null; then
			echo "skip $fs: no mkfs.$fs (Debian: apt install $([ $fs = xfs ] && echo xfsprogs || echo e2fsprogs))" >&2
			continue
		fi
		img=$tmp/$fs.img
		mnt=$tmp/$fs
		mkdir -p "$mnt"
		truncate -s 512M "$img" && "mkfs.$fs" -q "$img" >/dev/null 2>&1 ||
			{ echo "skip $fs: mkfs.$fs failed" >&2; continue; }
		if ! mount -o loop "$img" "$mnt" 2>"$tmp/mount.err"; then
			echo "skip $fs: cannot loop-mount: $(cat "$tmp/mount.err")" >&2
			continue
		fi
		# Never leave a mount behind, whatever ends the test.
		trap 'umount "$mnt" 2>/dev/null; rm -rf "$tmp"' EXIT INT TERM
		run openclose --size tiny --quiet --dir "$mnt" --csv "$tmp/$fs.csv" >/dev/null
		rc=$?
		run parent-write --size tiny --quiet --clients 1 --dir "$mnt" \
			--csv "$tmp/$fs-pw.csv" >/dev/null
		rc2=$?
		umount "$mnt"
		trap 'rm -rf "$tmp"' EXIT INT TERM
		[ $rc -eq 0 ] || fail "openclose on $fs exited $rc"
		[ $rc2 -eq 0 ] || fail "parent-write on $fs exited $rc2"
		grep -q "^fs.openclose=$fs\$" "$tmp/$fs.csv.env" || fail "openclose: not on $fs"
		grep -q "^fs.parent-write=$fs\$" "$tmp/$fs-pw.csv.env" || fail "parent-write: not on $fs"
		made=$((made + 1))
	done
	[ $made -gt 0 ] || exit 77
	;;
queue-abi)
	# The queue round goes through the kernel and the public API: at depth
	# 256 the fan-out is 64 watches x 4 files, touched twice: 8 kernel events,
	# 256 merged, nothing dropped.
	run merge --size tiny --quiet --variants queue --depths 256 --csv "$tmp/q.csv" \
		>/dev/null || fail "merge exited $?"
	awk -F, '$2 == "queue" && $6 == "kernel-events" && $7 != 8 { bad = 1 }
		$2 == "queue" && $6 == "merged" && $7 != 256 { bad = 1 }
		$2 == "queue" && $6 == "dropped" && $7 != 0 { bad = 1 }
		$2 == "queue" && $6 == "kernel-events" { n++ }
		END { exit bad || !n }' "$tmp/q.csv" ||
		fail "queue counts: $(grep queue "$tmp/q.csv")"
	;;
svg)
	run churn --size tiny --quiet --variants raw,lib,floor --svg "$tmp/c.svg" >/dev/null ||
		fail "churn exited $?"
	run merge --size tiny --quiet --variants queue,linear --svg "$tmp/m.svg" >/dev/null ||
		fail "merge exited $?"
	for f in "$tmp/c.svg" "$tmp/m.svg"; do
		grep -q '<svg ' "$f" || fail "$f: not SVG"
		grep -q '<polyline' "$f" || fail "$f: no line"
		grep -q 'worker threads\|queue depth' "$f" || fail "$f: no axis label"
		if command -v python3 >/dev/null; then
			python3 -c 'import sys, xml.dom.minidom as m; m.parse(sys.argv[1])' "$f" ||
				fail "$f: not well-formed XML"
		fi
	done
	grep -q '>raw<' "$tmp/c.svg" && grep -q '>lib<' "$tmp/c.svg" || fail "legend"
	grep -q 'log scale' "$tmp/m.svg" || fail "merge depth axis is not log"
	;;
links)
	# fsnw-bench is a client of the public ABI: every fsnw_* call resolves
	# to libfsnwatch.so, and no internal module of the library is linked in.
	command -v nm >/dev/null || exit 77
	nm -D "$bench" | grep -q ' U fsnw_open@' || fail "fsnw_open is not taken from the .so"
	nm "$bench" | grep -q ' [Tt] fsnw_open$' && fail "fsnw_open linked in statically"
	nm --defined-only "$bench" | awk '{ print $3 }' | sort -u >"$tmp/bench.syms"
	grep -E '^(queue_|htab_|strref_|fsnw_(malloc|calloc|realloc|free)$|should_fail$)' \
		"$tmp/bench.syms" && fail "private copies of the library's internals"
	if [ -n "$internal" ] && [ -r "$internal" ]; then
		nm -g --defined-only "$internal" 2>/dev/null | awk 'NF == 3 { print $3 }' |
			sort -u >"$tmp/internal.syms"
		[ -s "$tmp/internal.syms" ] || fail "no symbols in $internal"
		comm -12 "$tmp/internal.syms" "$tmp/bench.syms" >"$tmp/both"
		[ -s "$tmp/both" ] &&
			fail "defined in the bench and the library: $(cat "$tmp/both")"
	fi
	exit 0
	;;
scenarios)
	# Every registered scenario that measures, at its tiny size.
	skipped=0
	for s in $(scenarios); do
		case $s in quick | report) continue ;; esac
		tiny "$s" || skipped=$((skipped + 1))
	done
	[ "$skipped" -eq 0 ] || echo "$skipped scenarios skipped everything" >&2
	;;
quick)
	tiny quick || exit 77
	# Its rows: churn's library rows over their floor, the memory wall.
	has "$(row '^scenario ')" libinotifytools libuv libfsnwatch lib/floor
	# The tree's heap a directory, each contender's own, in bytes.
	has "$(row '^  same, heap a directory ')" bytes/dir "wd->path array"
	awk -F'  +' '/^churn (distinct|shared) W=[0-9]+.* lib/ && $8 !~ /^[0-9.]+$/ { bad = 1 }
		END { exit bad }' "$tmp/out" || fail "a churn library row has no lib/floor"
	has "$(row '^random DRAM load ')" ns/load "dependent pointer chase"
	has "$(row '^merge queue, depth 1024 ')" ns/event
	has "$(row '^tree, live burst: CPU to consume ')" ms "CPU/lib inotify"
	has "$(row '^  same, syscalls a wakeup ')" "events a wakeup"
	has "$(row '^tree, reads of 100 events: user time ')" "less raw's read(2)"
	has "$(row '^add\+remove, 200 existing files ')" ns/pair "batch calls"
	has "$(row '^add\+remove, 200 existing dirs ')" ns/pair
	has "$(row '^duplicate add, path already watched ')" "hard link"
	has "$(row '^remove of a watch not the last ')" "syscalls lib"
	grep -q 'NOT FILLED' "$tmp/out" && fail "a row was not filled"
	;;
quick-markdown)
	# --markdown: a caption that names the machine and the commit, then a
	# table whose every row has the header's columns.
	run quick --size tiny --quiet --markdown >/dev/null || fail "quick --markdown exited $?"
	has "$(grep -m 1 '^\*fsnw-bench quick on Linux ' "$tmp/out")" "$(uname -r)" CPUs "built from"
	has "$(grep -m 1 '^| scenario |' "$tmp/out")" "| libuv |" "| lib/floor |" "| notes |"
	grep -q '^| --- | --- | ---: |' "$tmp/out" || fail "no alignment row"
	sed 's/\\|//g' "$tmp/out" | awk -F'|' '/^\|/ { n++; if (NF != 11) bad = 1 }
		END { exit bad || n < 20 }' || fail "a row with other columns than the header's"
	grep -q '^| &emsp;same, heap a directory |' "$tmp/out" || fail "an indented row lost its indent"
	;;
churn-tree)
	# Every tree contender watches every directory of the generated tree and
	# of the caller's (--tree-path): as many as the test made, and the heap
	# each keeps is recorded for both (the caller's tree here is too small for
	# its heap to show past what glibc's thread cache hands back: >= 0).
	mkdir -p "$tmp/own/a/b" "$tmp/own/a/c" "$tmp/own/d" || fail "mkdir"
	touch "$tmp/own/a/file" "$tmp/own/d/file"
	run churn --size tiny --quiet --variants tree-raw,tree-lib,tree-inotifytools,tree-libuv \
		--tree-path "$tmp/own" --csv "$tmp/t.csv" >/dev/null || fail "churn exited $?"
	for v in tree-raw tree-lib tree-inotifytools tree-libuv; do
		grep -q "^skip churn $v" "$tmp/err" && continue
		awk -F, -v v="$v" '$2 == v && $6 == "dirs" && $7 != 200 { bad = 1 }
			$2 == v && $6 == "path.dirs" && $7 != 5 { bad = 1 }
			$2 == v && $6 == "heap" && $7 <= 0 { bad = 1 }
			$2 == v && $6 == "path.heap" && $7 < 0 { bad = 1 }
			$2 == v && $6 == "path.heap" { n++ }
			END { exit bad || !n }' "$tmp/t.csv" ||
			fail "$v: $(grep "^churn,$v," "$tmp/t.csv" | grep -e dirs -e heap)"
	done
	# The tree of the caller's is only read.
	[ "$(find "$tmp/own" | wc -l)" -eq 7 ] || fail "--tree-path changed the tree"
	;;
watches)
	# Every contender's rounds pass their checks (the bench's: every add and
	# remove succeeded, one IN_IGNORED a removed watch, the second watches on
	# their keepers' kernel watches); the syscall counts are exact (the
	# library's churn: an add and a remove a pair, and the few reads of the
	# IN_IGNOREDs).
	run watches --size tiny --quiet --csv "$tmp/w.csv" >/dev/null || fail "watches exited $?"
	for v in exist-raw exist-lib exist-lib-batch exist-inotifytools exist-libuv dup-raw \
		dup-lib dup-libuv; do
		grep -q "^skip watches $v" "$tmp/err" && continue
		grep -q "^watches,$v," "$tmp/w.csv" || fail "no $v rows"
	done
	grep -q ',0$' "$tmp/w.csv" && fail "a round failed its checks"
	ring=$(awk -F, '$2 == "dup-lib" && $6 == "ring" { print $7; exit }' "$tmp/w.csv")
	awk -F, -v add=$((ring ? 1 : 2)) '
		$2 == "exist-raw" && $6 ~ /syscalls$/ && $7 != 2 { bad = 1 }
		$2 == "exist-lib" && $6 ~ /syscalls$/ && ($7 < 2 || $7 > 2.05) { bad = 1 }
		$2 == "dup-raw" && $6 ~ /^add\..*syscalls$/ && $7 != 1 { bad = 1 }
		$2 ~ /^dup-(raw|lib)$/ && $6 ~ /^remove\..*syscalls$/ && $7 != 0 { bad = 1 }
		$2 == "dup-lib" && $6 ~ /^add\..*syscalls$/ { n++; if ($7 != add) bad = 1 }
		END { exit bad || n != 4 }' "$tmp/w.csv" ||
		fail "syscalls: $(grep syscalls "$tmp/w.csv" | cut -d, -f2,6,7 | sort -u)"
	;;
live)
	# The burst comes from a process other than the reader, every round from
	# a fresh reader; every contender's rounds pass their checks (the
	# sentinel came, the counts by kind are the burst's, the checked events
	# named the right file in the right directory).
	FSNW_BENCH_TRACE=$tmp/trace run live --size tiny --quiet --csv "$tmp/l.csv" >/dev/null ||
		fail "live exited $?"
	for v in live-raw live-lib live-lib-fan live-inotifytools live-libuv batch-raw batch-lib \
		batch-lib-fan; do
		grep -q "^skip live $v" "$tmp/err" && continue
		grep -q "^live,$v," "$tmp/l.csv" || fail "no $v rows"
	done
	grep -q ',0$' "$tmp/l.csv" && fail "a round failed its checks"
	grep '^live: live-' "$tmp/trace" >"$tmp/rounds"
	[ -s "$tmp/rounds" ] || fail "no live rounds traced"
	grep -q ': 50 dirs, 200 files; reader process [0-9]*, writer process [0-9]*: 100 groups of 4 operations, then the sentinel$' \
		"$tmp/rounds" || fail "not the burst: $(head -n 1 "$tmp/rounds")"
	awk '{ for (i = 1; i <= NF; i++) { if ($i == "process") p[++n] = $(i + 1) }
		if (p[n - 1] == p[n]) bad = 1 } END { exit bad }' "$tmp/rounds" ||
		fail "the writer is the reader's process"
	[ "$(sed 's/.*reader process \([0-9]*\),.*/\1/' "$tmp/rounds" | sort -u | wc -l)" -eq \
		"$(wc -l <"$tmp/rounds")" ] || fail "two rounds in one reader process"
	# Raw: one poll and one read a wakeup; one read a batch; per-round ratios.
	awk -F, '$2 == "live-raw" && $6 == "syscalls/wakeup" && $7 != 2 { bad = 1 }
		$2 == "batch-raw" && $6 == "syscalls" && $7 != 1 { bad = 1 }
		$2 == "live-raw" && $6 == "cpu/lib" { n++ }
		END { exit bad || !n }' "$tmp/l.csv" ||
		fail "raw: $(grep -e 'live-raw.*syscalls' -e 'batch-raw.*syscalls' "$tmp/l.csv")"
	;;
churn | xattr | parent-write | openclose | addwatch-children | merge)
	tiny "$case_" || exit 77
	;;
*)
	fail "unknown case $case_"
	;;
esac
exit 0
