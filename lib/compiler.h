/* SPDX-License-Identifier: MIT */
/*
 * Hints that keep the hot paths short in the instruction stream.
 *
 * Why it pays: each add, remove and read makes a syscall, and on a kernel
 * with page-table isolation but no PCID the return to user space starts
 * with an empty TLB and cold branch predictors. The library's work after
 * the syscall is then paid per code page and cache line it runs through
 * more than per instruction, so the hot paths' code is kept together.
 *
 * FSNW_COLD marks a function that runs rarely (error handling, races,
 * trees, fallbacks): gcc keeps it out of line, optimises it for size,
 * places it apart from the hot text, and treats the paths that call it
 * as unlikely, so its callers' hot blocks stay together. unlikely()
 * marks a rare branch in a hot function the same way.
 */
#ifndef FSNW_COMPILER_H
#define FSNW_COMPILER_H

#define FSNW_COLD __attribute__((cold, noinline))
/* Out of line but not rare: a path one backend takes on every call and
 * another never (it would otherwise be inlined into the other's hot path). */
#define FSNW_NOINLINE __attribute__((noinline))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#endif
