/* SPDX-License-Identifier: MIT */
/* The tools take their signals from a signalfd, in their loop: no work in handlers. */
#ifndef FSNW_EXAMPLES_SIGNALS_H
#define FSNW_EXAMPLES_SIGNALS_H

#include <signal.h>

/*
 * Block the signals of *set and return a signalfd (close-on-exec,
 * non-blocking) that receives them, or -errno. A signal the process was
 * started with ignored is left alone and taken out of *set, as inotifywait
 * leaves it: a shell starts background jobs with SIGINT ignored and nohup
 * starts its command with SIGHUP ignored, and a blocked signal is queued
 * even when ignored, so catching it would undo what the parent asked for.
 */
int signals_open(sigset_t *set);

/*
 * The same for every signal of *set, ignored or not: for a tool that, like
 * inotifywatch, installs its handlers whatever it was started with.
 */
int signals_catch(const sigset_t *set);

#endif
