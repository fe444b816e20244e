/* SPDX-License-Identifier: MIT */
/*
 * Event names and JSON output shared by fsnw-wait and fsnw-tree. The names
 * are inotifywait's, so scripts written for it read our output unchanged.
 */
#ifndef FSNW_EXAMPLES_EVENTFMT_H
#define FSNW_EXAMPLES_EVENTFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "fsnwatch.h"

/*
 * Parse a comma-separated list of inotifywait event names (lower case, as
 * given to -e) into FSNW_* bits; "close" and "move" stand for both of their
 * halves, "unmount" and "ignored" for the bits that only appear in events.
 * Returns 0, or -EINVAL with *bad pointing into list at the unknown name.
 */
int evnames_parse(const char *list, uint32_t *mask, const char **bad, size_t *badlen);

/*
 * The names of the bits of mask, upper case, separated by sep, the way
 * inotifywait prints them: a close also gives CLOSE, FSNW_SYNTHETIC gives
 * nothing (JSON carries it). evnames_format writes what fits in buf and
 * returns the whole length, as snprintf(3) does; EVNAMES_MAX always fits.
 */
#define EVNAMES_MAX 256
size_t evnames_format(char *buf, size_t size, uint32_t mask, char sep);
void evnames_print(FILE *f, uint32_t mask, char sep);

/* Print s as a JSON string (null for NULL); a byte that is not UTF-8 becomes \udcXX. */
void json_print_string(FILE *f, const char *s);

/*
 * Print one event as a JSON object, without the closing brace and newline,
 * so a caller may add its own members: {"path":...,"name":...,"events":[...],
 * "cookie":N,"count":N,"wid":N,"synthetic":bool
 */
void json_print_event_open(FILE *f, const struct fsnw_event *ev);

#endif
