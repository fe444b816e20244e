#!/bin/sh
# SPDX-License-Identifier: MIT
# The library exports exactly what lib/libfsnwatch.map lists, all of it
# fsnw_* (besides the version node), every exported function is declared in
# the public header and has man/<name>.3 whose SYNOPSIS shows the header's
# prototype, and no function page names something the library does not export.
# usage: symbols.sh LIBRARY MAP MANDIR HEADER
set -u
# Under `meson test --setup valgrind` memcheck would run this shell, not the
# library (whose own suites run there); the shell's leaks are not ours.
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
lib=$1
map=$2
mandir=$3
header=$4

if ! command -v nm >/dev/null 2>&1; then
	echo "SKIP: nm (binutils) is not installed"
	exit 77
fi
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
status=0
fail() {
	echo "FAIL: $*"
	status=1
}

# Version nodes (e.g. LIBFSNWATCH_0.1) and the names each one makes global.
sed -n 's/^[[:space:]]*\([A-Za-z_][A-Za-z0-9_.]*\)[[:space:]]*{.*/\1/p' "$map" | sort -u >"$tmp/nodes"
awk '
	/^[[:space:]]*global:/ { g = 1; next }
	/^[[:space:]]*local:/  { g = 0; next }
	/}/                    { g = 0; next }
	g && /;/ { s = $0; sub(/^[[:space:]]*/, "", s); sub(/;.*/, "", s); if (s != "") print s }
' "$map" | sort -u >"$tmp/map"
[ -s "$tmp/nodes" ] || fail "no version node in $map"
[ -s "$tmp/map" ] || fail "no global symbol in $map"
tr -d ' \t\n' <"$map" | grep -q 'local:\*;' || fail "$map has no 'local: *;'"

nm -D --defined-only "$lib" >"$tmp/nm" || { echo "FAIL: nm $lib"; exit 1; }
awk '{ print $NF }' "$tmp/nm" | sed 's/@.*//' | sort -u >"$tmp/all"
comm -23 "$tmp/all" "$tmp/nodes" >"$tmp/exported"

if grep -v '^fsnw_' "$tmp/exported" >"$tmp/stray"; then
	fail "exported outside fsnw_*:"
	sed 's/^/  /' "$tmp/stray"
fi
if ! cmp -s "$tmp/exported" "$tmp/map"; then
	fail "exports differ from $map (< exported only, > map only):"
	diff "$tmp/exported" "$tmp/map" | grep '^[<>]' | sed 's/^/  /'
fi

while read -r sym; do
	[ -f "$mandir/$sym.3" ] || fail "no man page $mandir/$sym.3 for exported $sym"
done <"$tmp/exported"
for page in "$mandir"/*.3; do
	[ -e "$page" ] || continue
	base=${page##*/}
	base=${base%.3}
	grep -qx "$base" "$tmp/exported" || fail "$page documents $base, which is not exported"
done

# SYNOPSIS against the header, when a formatter and perl are there.
render=
if command -v mandoc >/dev/null 2>&1; then
	render="mandoc -T ascii"
elif command -v groff >/dev/null 2>&1; then
	render="groff -Tascii -man -P-c"
fi
if [ -z "$render" ] || ! command -v perl >/dev/null 2>&1; then
	echo "note: no formatter or no perl: SYNOPSIS not compared with the header"
else
	while read -r sym; do
		[ -f "$mandir/$sym.3" ] || continue
		$render "$mandir/$sym.3" >"$tmp/page" 2>/dev/null
		perl - "$header" "$sym" "$tmp/page" <<'PERL' || status=1
use strict;
my ($header, $sym, $page) = @ARGV;
sub norm { my $s = shift; $s =~ s/\s+/ /g; $s =~ s/\(\s+/(/g; $s =~ s/\s+\)/)/g;
	   $s =~ s/^\s+|\s+$//g; return $s; }
local $/;
open(my $h, '<', $header) or die "$header: $!";
my $text = <$h>;
$text =~ s{/\*.*?\*/}{ }gs;
$text =~ s{^\s*#.*$}{}mg;
my @protos = grep { /\b\Q$sym\E\s*\(/ } map { norm($_) . ';' } split /;/, $text;
if (@protos != 1) {
	print "FAIL: $sym: ", scalar(@protos), " declarations in $header\n";
	exit 1;
}
open(my $p, '<', $page) or die "$page: $!";
my $out = <$p>;
$out =~ s/.\x08//g;     # overstrike (bold, underline)
my ($syn) = $out =~ /^SYNOPSIS\n(.*?)^\S/ms;
if (!defined $syn || index(norm($syn), $protos[0]) < 0) {
	print "FAIL: $sym.3: SYNOPSIS does not show the header's prototype:\n  $protos[0]\n";
	exit 1;
}
PERL
	done <"$tmp/exported"
fi

[ "$status" -eq 0 ] && echo "ok: $(wc -l <"$tmp/exported") exported symbols, all fsnw_*, all in the map, all with a page"
exit "$status"
