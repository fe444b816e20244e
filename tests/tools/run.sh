#!/bin/sh
# SPDX-License-Identifier: MIT
# Run one tools test script (bash) as meson asks.
# usage: run.sh SCRIPT
# Under `meson test --setup valgrind`, memcheck would run this shell, not the
# tools: skip (valgrind.sh runs the tools under memcheck in the plain setup).
# This small POSIX shell is what memcheck sees; bash replaces it on exec.
case ${LD_PRELOAD:-} in
*vgpreload*)
	echo "SKIP: not a memcheck test"
	exit 77
	;;
esac
command -v bash >/dev/null 2>&1 || {
	echo "SKIP: bash is not installed"
	exit 77
}
exec bash "$@"
