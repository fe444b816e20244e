/* SPDX-License-Identifier: MIT */
/* The library is built with -fvisibility=hidden; only these are exported. */
#ifndef FSNW_EXPORT_H
#define FSNW_EXPORT_H

#define FSNW_EXPORT __attribute__((visibility("default")))

#endif
