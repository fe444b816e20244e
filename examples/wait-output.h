/* SPDX-License-Identifier: MIT */
/* Where fsnw-wait's lines and messages go: -o, -s, and -d, its life as a daemon. */
#ifndef FSNW_EXAMPLES_WAIT_OUTPUT_H
#define FSNW_EXAMPLES_WAIT_OUTPUT_H

#include "wait.h"

/*
 * Point standard output at --outfile, appending. With -d, become a daemon
 * first: the output file is opened here, then a child carries on in a
 * session of its own, its standard input and error on /dev/null, and the
 * caller (the parent) waits until wait_output_ready and exits with the
 * status it is given. Returns 0 (in the child, with -d), or -1 after saying
 * what is wrong.
 */
int wait_output_open(struct wait_state *s);

/*
 * The watches are set (status 0) or could not be (1): a daemon tells its
 * parent, which exits with status, and leaves its working directory for /.
 * Nothing without -d.
 */
void wait_output_ready(struct wait_state *s, int status);

/* With --syslog, open the connection to syslog(3) (ident fsnw-wait, facility daemon). */
void wait_output_syslog(const struct wait_state *s);

#endif
