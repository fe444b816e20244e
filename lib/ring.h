/* SPDX-License-Identifier: MIT */
/*
 * The readiness ring: an io_uring one-shot POLL_ADD on the kernel group fd,
 * which tells, without a syscall, whether anything was queued since the
 * kernel queue was last found empty. It lets an add onto an existing kernel
 * watch (dedup, idle revive) skip the drain read that keeps older events
 * from the new watch: one syscall for the add instead of two. It is kept
 * for that syscall, which costs an add more than the rest of its work.
 *
 * Why a peek is enough: an event queued in the kernel wakes the armed poll.
 * On kernels from 6.1 the ring defers its task work
 * (IORING_SETUP_DEFER_TASKRUN, with SINGLE_ISSUER and TASKRUN_FLAG): the
 * wake, in the call of whoever queued the event, sets IORING_SQ_TASKRUN in
 * the ring's shared flags and wakes nobody, and the completion waits until
 * the owner next arms. Before 6.1 the completion is posted by task work on
 * the owner, at the latest when it next returns from a syscall, which
 * wakes the owner if it sleeps. Either way, after its own mark syscall
 * returns, the owner sees the flag or a completion for every event queued
 * before the mark, or neither: the queue is as empty as it was. Another
 * thread's peek proves nothing, so only the owner trusts it; the others,
 * and every handle where io_uring is missing, refused (kernel.io_uring_disabled,
 * a seccomp filter) or turned off (FSNW_OPEN_NO_RING, FSNW_NO_IO_URING=1 in
 * the environment), read the group fd instead. Runs with the handle's lock.
 */
#ifndef FSNW_RING_H
#define FSNW_RING_H

#include <stdbool.h>

struct fsnw;

/*
 * Set up the calling thread's ring, armed (fsnw_open): 1; 0 where the
 * fallback is in use (refused, turned off, built without liburing);
 * -ENOMEM. Other threads get a ring of their own at their first add onto
 * an existing kernel watch, up to 16 at a time; later ones use the
 * fallback. A thread that starts after another exited never takes over
 * that one's ring, whose poll went with it (a ring with deferred task work
 * only its own thread may arm): the exited thread's ring is closed at the
 * next thread's first look (thread.h's token says it has exited), and the
 * new thread gets one of its own.
 */
int ring_open(struct fsnw *w);
void ring_close(struct fsnw *w);

/*
 * Nothing has been queued in the kernel since it was last found empty, as
 * far as the calling thread can tell without a syscall. Arms the poll first
 * (one counted io_uring_enter) when it is not armed: the queue is empty now
 * if the poll does not complete at once. False: drain to be sure.
 */
bool ring_quiet(struct fsnw *w);

/* A drain found the kernel queue empty: a completion posted for what it
 * read is stale, and is consumed on the next ring_quiet. */
void ring_drained(struct fsnw *w);

#endif
