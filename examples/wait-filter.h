/* SPDX-License-Identifier: MIT */
/* Which events fsnw-wait leaves out: @paths in a tree, --exclude and --include. */
#ifndef FSNW_EXAMPLES_WAIT_FILTER_H
#define FSNW_EXAMPLES_WAIT_FILTER_H

#include <stdbool.h>

#include "wait-print.h"
#include "wait.h"

/*
 * Compile --exclude/--include (POSIX extended, as inotifywait has them) and
 * drop the @paths that are also given to watch, which inotifywait watches.
 * Returns 0, or -1 after saying what is wrong.
 */
int wait_filter_init(struct wait_state *s);

void wait_filter_fini(struct wait_state *s);

/*
 * Whether ev is left out: it is under an @path of a -r tree, or its %w%f
 * matches --exclude, or does not match --include. Q_OVERFLOW is never left
 * out: it says events were lost, whichever they were.
 */
bool wait_filtered(const struct wait_state *s, const struct wait_print *p,
		   const struct fsnw_event *ev);

#endif
