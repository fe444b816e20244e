#!/bin/sh
# Every probe the library promises is present as a stapsdt note of provider
# fsnwatch in the built shared library.
set -eu
lib=$1
command -v readelf >/dev/null || exit 77
notes=$(readelf -n "$lib")
for probe in add remove mark unmark merge overflow read; do
	if ! printf '%s\n' "$notes" | grep -A3 'stapsdt' | grep -q "Name: $probe\$"; then
		echo "missing USDT probe fsnwatch:$probe" >&2
		exit 1
	fi
done
printf '%s\n' "$notes" | grep -q 'Provider: fsnwatch' || { echo "no provider fsnwatch" >&2; exit 1; }
echo "all probes present"
