/* SPDX-License-Identifier: MIT */
/*
 * USDT probes (provider "fsnwatch") for bpftrace and perf. Without
 * <sys/sdt.h> they compile to nothing; with it, each is a single nop until
 * traced.
 */
#ifndef FSNW_PROBES_H
#define FSNW_PROBES_H

#ifdef FSNW_HAVE_SDT
#include <sys/sdt.h>
#define PROBE1(name, a) DTRACE_PROBE1(fsnwatch, name, a)
#define PROBE2(name, a, b) DTRACE_PROBE2(fsnwatch, name, a, b)
#define PROBE3(name, a, b, c) DTRACE_PROBE3(fsnwatch, name, a, b, c)
#else
#define PROBE1(name, a) do { } while (0)
#define PROBE2(name, a, b) do { } while (0)
#define PROBE3(name, a, b, c) do { } while (0)
#endif

#endif
