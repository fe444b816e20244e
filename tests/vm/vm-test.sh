#!/bin/sh
# SPDX-License-Identifier: MIT
# Tests of fsnw-bench-vm: vm-test.sh CASE FSNW_BENCH_VM FSNW_BENCH FIXTURES CACHE STATIC
#   usage   command-line errors and the --accel kvm refusal (no QEMU needed)
#   report  `fsnw-bench report` gives emulated runs no verdict (no QEMU needed)
#   watch   a fake QEMU that panics, hits a KVM internal error, hangs or dies:
#           each boot stops with its reason, nothing hangs
#   aba     two Debian cloud kernels, A-B-A under TCG on `xattr --size tiny`:
#           three runs, two kernel releases, a report
#   panic   a real kernel that panics (no init) is stopped and named
# Kernel images are downloaded with `apt-get download` once, into CACHE; set
# FSNW_VM_KERNEL_A and FSNW_VM_KERNEL_B to vmlinuz files to use your own.
# Exit 0 pass, 1 fail, 77 skip. Nothing here looks at how fast anything ran.
set -u
case_=$1
vm=$2
bench=$3
fixtures=$4
cache=$5
static=$6
tmp=$(mktemp -d "${TMPDIR:-/tmp}/fsnw-bench-vm-test.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*"
	exit 77
}

# run ARGS...: fsnw-bench-vm, never for longer than 10 minutes; stdout in
# $tmp/out, stderr in $tmp/err, both shown; the exit status in $rc.
run() {
	timeout 600 "$vm" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	cat "$tmp/out"
	cat "$tmp/err" >&2
	[ "$rc" -ne 124 ] || fail "fsnw-bench-vm $* hung"
}

# expect TEXT FILE: FILE contains TEXT.
expect() {
	grep -qF -- "$1" "$2" || fail "expected '$1' in ${2##*/}"
}

# What hardware KVM needs: vmx or svm, and not PVM.
have_kvm() {
	[ ! -d /sys/module/kvm_pvm ] && grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ]
}

need_vm_tools() {
	command -v qemu-system-x86_64 >/dev/null 2>&1 ||
		skip "qemu-system-x86_64 is not installed (./dev test vm installs it)"
	qemu-system-x86_64 -accel help 2>/dev/null | grep -qx tcg ||
		skip "this QEMU has no TCG accelerator"
	if [ ! -x /bin/busybox ] || readelf -l /bin/busybox 2>/dev/null | grep -q interpreter; then
		skip "no static /bin/busybox (busybox-static; ./dev test vm installs it)"
	fi
}

# fetch PKG: the vmlinuz of a Debian kernel package, cached; its path in $vmlinuz.
fetch() {
	vmlinuz=$cache/$1/vmlinuz
	[ -s "$vmlinuz" ] && return 0
	rm -rf "$cache/$1.part"
	mkdir -p "$cache/$1.part" || fail "mkdir $cache"
	if ! (cd "$cache/$1.part" && apt-get download "$1") >"$tmp/apt.log" 2>&1; then
		cat "$tmp/apt.log"
		skip "apt-get download $1 failed"
	fi
	dpkg-deb --fsys-tarfile "$cache/$1.part"/*.deb |
		tar -x -O --wildcards './boot/vmlinuz-*' >"$cache/$1.part/vmlinuz" ||
		fail "no boot/vmlinuz-* in $1"
	rm -f "$cache/$1.part"/*.deb
	rm -rf "${cache:?}/$1"
	mv "$cache/$1.part" "$cache/$1" || fail "mv into $cache"
}

# kernels: two kernel images, A (parent) and B (child), in $ka and $kb. The
# two newest Debian cloud images of 6.6 or later: tmpfs takes the xattr
# scenario's user.* xattr only from 6.6 on.
kernels() {
	if [ -n "${FSNW_VM_KERNEL_A:-}" ] && [ -n "${FSNW_VM_KERNEL_B:-}" ]; then
		ka=$FSNW_VM_KERNEL_A
		kb=$FSNW_VM_KERNEL_B
		return 0
	fi
	for tool in apt-cache apt-get dpkg-deb; do
		command -v $tool >/dev/null 2>&1 || skip "$tool is not here (not Debian?)"
	done
	pkgs=$(apt-cache search --names-only '^linux-image-[0-9].*-cloud-amd64-unsigned$' |
		cut -d' ' -f1 | sort -V)
	pick=$(for p in $pkgs; do
		v=${p#linux-image-}
		major=${v%%.*}
		minor=${v#*.}
		minor=${minor%%[!0-9]*}
		if [ "$major" -gt 6 ] || { [ "$major" -eq 6 ] && [ "$minor" -ge 6 ]; }; then
			echo "$p"
		fi
	done | tail -n 2)
	# shellcheck disable=SC2086 # package names: no spaces, no globs
	set -- $pick
	[ $# -eq 2 ] || skip "apt-cache offers fewer than two linux-image-*-cloud-amd64-unsigned" \
		"of 6.6 or later (found: $(echo "$pkgs" | tr '\n' ' ')); run apt-get update"
	echo "kernels: A = $1, B = $2"
	fetch "$1"
	ka=$vmlinuz
	fetch "$2"
	kb=$vmlinuz
}

# release FILE: the kernel release in an environment record.
release() {
	sed -n 's/^kernel_release=//p' "$1"
}

case "$case_" in
usage)
	k=$tmp/vmlinuz
	: >"$k"
	run --out "$tmp/o" --kernel "A=$k"
	[ "$rc" -eq 2 ] || fail "no scenario: exit $rc, expected 2"
	expect "no scenario" "$tmp/err"
	run --out "$tmp/o" --kernel "A=$k" --order ABA -- xattr
	[ "$rc" -eq 2 ] || fail "unknown label: exit $rc, expected 2"
	expect "no --kernel B=VMLINUZ" "$tmp/err"
	run --out "$tmp/o" --kernel "A=$tmp/none" --order AA -- xattr
	[ "$rc" -eq 2 ] || fail "missing image: exit $rc, expected 2"
	expect "is not a readable file" "$tmp/err"
	run --out "$tmp/o" --kernel "A=$k" --order AA -- xattr --csv x.csv
	[ "$rc" -eq 2 ] || fail "--csv: exit $rc, expected 2"
	expect "--csv is set by fsnw-bench-vm" "$tmp/err"
	mkdir "$tmp/full" && : >"$tmp/full/old"
	run --accel tcg --out "$tmp/full" --kernel "A=$k" --order AA -- xattr
	[ "$rc" -eq 2 ] || fail "non-empty --out: exit $rc, expected 2"
	expect "not empty" "$tmp/err"
	[ -e "$tmp/o" ] && fail "a refused command line created its --out"
	if have_kvm; then
		echo "note: this machine has hardware KVM; the refusal is not tested here"
	else
		run --accel kvm --out "$tmp/o" --kernel "A=$k" --order AA -- xattr
		[ "$rc" -eq 1 ] || fail "--accel kvm without KVM: exit $rc, expected 1"
		expect "no hardware KVM here" "$tmp/err"
		expect "Use --accel tcg" "$tmp/err"
	fi
	;;
report)
	# The flistxattr report's points give a signal; marked emulated, the same
	# numbers give none.
	x=xattr-1e7cd8a53b72
	for r in $x-7.0.14-A $x-7.1.3 $x-7.0.14-B; do
		cp "$fixtures/$r.csv" "$tmp/$r.csv" || fail "fixture $r"
		printf 'boot_id=%s\nkernel_release=%s\n' "$r" "$r" >"$tmp/$r.csv.env"
	done
	set -- "$tmp/$x-7.0.14-A.csv" "$tmp/$x-7.1.3.csv" "$tmp/$x-7.0.14-B.csv"
	"$bench" report "$@" >"$tmp/plain" || fail "report exited $?"
	grep flistxattr "$tmp/plain" | grep -q ' signal' || fail "the control run gave no signal"
	echo "emulated=yes (QEMU TCG): functional only" >>"$tmp/$x-7.1.3.csv.env"
	"$bench" report "$@" >"$tmp/emu" || fail "report exited $?"
	cat "$tmp/emu"
	row=$(grep flistxattr "$tmp/emu")
	case $row in
	*"emulated: functional only"*) ;;
	*) fail "no 'emulated: functional only' in: $row" ;;
	esac
	case $row in
	*signal* | *"GATE MISS"*) fail "a verdict on emulated runs: $row" ;;
	esac
	case $row in
	*"(+54.47%)"*) ;;
	*) fail "the change is not shown in parentheses: $row" ;;
	esac
	expect "2: $tmp/$x-7.1.3.csv" "$tmp/emu"
	grep -q '^  2: .*, emulated)$' "$tmp/emu" || fail "run 2 is not marked emulated"
	expect "functional only, no verdicts" "$tmp/emu"
	;;
watch)
	need_vm_tools
	# A fake QEMU: --version, then per mode a console line and a hang, or an exit.
	cat >"$tmp/qemu" <<'EOF'
#!/bin/sh
[ "$1" = --version ] && { echo "QEMU emulator version 0 (fake)"; exit 0; }
case $FAKE in
panic) echo "[    1.0] Kernel panic - not syncing: fake panic" ;;
kvm) echo "KVM internal error. Suberror: 1" >&2; echo "emulation failure" >&2 ;;
hang) echo "booting..." ;;
die) echo "qemu-system-x86_64: fake: cannot set up guest memory"; exit 1 ;;
esac
exec sleep 300
EOF
	chmod +x "$tmp/qemu"
	: >"$tmp/vmlinuz"
	for mode in panic kvm hang die; do
		rm -rf "$tmp/o"
		FAKE=$mode run --accel tcg --qemu "$tmp/qemu" --bench "$bench" --timeout 5 \
			--kernel "A=$tmp/vmlinuz" --order AA --out "$tmp/o" -- xattr --size tiny
		[ "$rc" -eq 1 ] || fail "$mode: exit $rc, expected 1"
		case $mode in
		panic) expect "stopped: kernel panic: Kernel panic - not syncing: fake panic" "$tmp/err" ;;
		kvm) expect "stopped: KVM internal error: KVM internal error. Suberror: 1" "$tmp/err" ;;
		hang) expect "stopped: the guest did not finish within 5 s (per-boot timeout)" "$tmp/err" ;;
		die)
			expect "QEMU exited (status 1) before the guest sent its results" "$tmp/err"
			expect "after: qemu-system-x86_64: fake: cannot set up guest memory" "$tmp/err"
			;;
		esac
		expect "the console is in $tmp/o/1-A/console.log" "$tmp/err"
		[ -e "$tmp/o/2-A" ] && fail "$mode: a second boot after a failed one"
	done
	;;
aba)
	need_vm_tools
	kernels
	start=$(date +%s)
	run --accel tcg --bench "$bench" --kernel "A=$ka" --kernel "B=$kb" --order ABA \
		--out "$tmp/o" -- xattr --size tiny
	echo "A-B-A took $(($(date +%s) - start)) s (TCG)"
	[ "$rc" -eq 0 ] || fail "fsnw-bench-vm exited $rc"
	if [ "$static" = true ]; then
		grep -q "dynamically linked" "$tmp/err" && fail "-Dstatic_bench=true gave a dynamic fsnw-bench"
	fi
	# Three runs, each with its rows and environment record.
	n=0
	for d in 1-A 2-B 3-A; do
		[ -s "$tmp/o/$d/run.csv" ] || fail "no $d/run.csv"
		grep -q '^xattr,raw,.*,flistxattr,.*,ns/op,' "$tmp/o/$d/run.csv" ||
			fail "no flistxattr row in $d/run.csv"
		grep -q ',false$' "$tmp/o/$d/run.csv" && fail "a failed check in $d/run.csv"
		expect "emulated=yes" "$tmp/o/$d/run.csv.env"
		expect "vm_accel=tcg" "$tmp/o/$d/run.csv.env"
		grep -q '^vm_clocksource=[a-z_]' "$tmp/o/$d/run.csv.env" ||
			fail "no clock source recorded in $d"
		expect "tsc=reliable" "$tmp/o/$d/run.csv.env"
		[ -s "$tmp/o/$d/console.log" ] || fail "no $d/console.log"
		n=$((n + 1))
	done
	echo "$n runs"
	# Two kernel releases: A twice, B once, fresh boots each time.
	ra=$(release "$tmp/o/1-A/run.csv.env")
	rb=$(release "$tmp/o/2-B/run.csv.env")
	ra2=$(release "$tmp/o/3-A/run.csv.env")
	echo "releases: $ra, $rb, $ra2"
	[ -n "$ra" ] || fail "no kernel release recorded for A"
	[ -n "$rb" ] || fail "no kernel release recorded for B"
	[ "$ra" = "$ra2" ] || fail "A booted as $ra, then as $ra2"
	[ "$ra" != "$rb" ] || fail "A and B are both $ra"
	b1=$(sed -n 's/^boot_id=//p' "$tmp/o/1-A/run.csv.env")
	b3=$(sed -n 's/^boot_id=//p' "$tmp/o/3-A/run.csv.env")
	[ "$b1" != "$b3" ] || fail "runs 1 and 3 share boot $b1"
	# The report, over the three runs, with no verdict.
	[ -s "$tmp/o/report.txt" ] || fail "no report.txt"
	for d in 1-A 2-B 3-A; do
		expect "$tmp/o/$d/run.csv" "$tmp/o/report.txt"
	done
	row=$(grep flistxattr "$tmp/o/report.txt")
	case $row in
	*"emulated: functional only") ;;
	*) fail "report row: $row" ;;
	esac
	expect "functional only, no verdicts" "$tmp/o/report.txt"
	;;
panic)
	need_vm_tools
	kernels
	# No init to run: the kernel panics trying to mount a root.
	run --accel tcg --bench "$bench" --kernel "A=$ka" --order AA --append rdinit=/nonexistent \
		--timeout 300 --out "$tmp/o" -- xattr --size tiny
	[ "$rc" -eq 1 ] || fail "exit $rc, expected 1"
	expect "boot 1 (A, $ka) stopped: kernel panic: Kernel panic - not syncing" "$tmp/err"
	expect "Kernel panic" "$tmp/o/1-A/console.log"
	[ -e "$tmp/o/2-A" ] && fail "a second boot after a panic"
	;;
*)
	fail "unknown case $case_"
	;;
esac
echo "ok: $case_"
exit 0
