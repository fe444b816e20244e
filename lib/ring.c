/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compiler.h"
#include "handle.h"
#include "mem.h"
#include "ring.h"
#include "thread.h"

#ifdef FSNW_HAVE_IO_URING
#include <liburing.h>

/* Running threads that get a ring of their own; later ones read the group
 * fd. An exited thread's ring is let go when another thread needs one. */
#define RINGS_MAX 16
/* The user_data of a cancel; a poll's is its arm's number, from 1. */
#define CANCEL_DATA UINT64_MAX

struct one_ring {
	struct io_uring uring;
	/* The thread it belongs to (thread.h): never a later thread that got
	 * this one's TLS block, which would trust a poll that died with it. */
	uint64_t owner;
	struct thread_token *token; /* says when the owner has exited; may be NULL */
	unsigned unmap_calls; /* munmaps and close that io_uring_queue_exit makes */
	bool armed;        /* a POLL_ADD is in flight and has not completed */
	/* Deferred task work (below): a fired poll's completion is posted
	 * only when the owner enters the kernel for it, at the next arm. */
	bool deferred;
	uint64_t gen;      /* the user_data of the poll armed last */
};

struct ring {
	struct one_ring *r[RINGS_MAX];
	unsigned n;
	bool failed; /* setting up another ring failed: no more tries */
};

static bool disabled_by_env(void)
{
	const char *v = getenv("FSNW_NO_IO_URING");

	return v && *v && strcmp(v, "0") != 0;
}

/* Consume the completions there are; true if one is the poll armed last. */
static bool take_completions(struct one_ring *r)
{
	struct io_uring_cqe *cqe;
	unsigned head, n = 0;
	bool current = false;

	io_uring_for_each_cqe(&r->uring, head, cqe) {
		current |= cqe->user_data == r->gen;
		n++;
	}
	io_uring_cq_advance(&r->uring, n);
	return current;
}

/*
 * Whether the armed poll fired. A look at the ring's memory, inline: no
 * call into liburing, no syscall. With deferred task work the completion
 * is not posted yet, but the kernel set IORING_SQ_TASKRUN in the waker's
 * own call; the completion is collected by the next arm (which is why a
 * ring that is not armed has nothing new to say).
 */
static bool reap(struct one_ring *r)
{
	bool fired;

	if (io_uring_cq_ready(&r->uring))
		fired = take_completions(r) && r->armed;
	else
		fired = r->deferred && r->armed &&
			(IO_URING_READ_ONCE(*r->uring.sq.kflags) & IORING_SQ_TASKRUN);
	if (fired)
		r->armed = false;
	return fired;
}

/*
 * Arm the poll: if nothing is queued in the kernel it stays pending, and
 * the queue is empty now; if something is, it completes at once. Returns
 * whether the queue was found empty.
 */
static bool arm(struct fsnw *w, struct one_ring *r)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);
	int ret;

	if (!sqe)
		return false;
	io_uring_prep_poll_add(sqe, w->kfd, POLLIN);
	io_uring_sqe_set_data64(sqe, ++r->gen);
	/* One io_uring_enter: with deferred task work it also runs the
	 * fired poll's, posting the completion that the reap below takes
	 * along with any of the new poll. */
	ret = r->deferred ? io_uring_submit_and_get_events(&r->uring)
			  : io_uring_submit(&r->uring);
	w->st.sys_io_uring++;
	if (ret != 1) {
		(void)take_completions(r);
		return false;
	}
	r->armed = true;
	return !reap(r);
}

/* Let go of a ring: its poll, if still armed, goes with the ring's
 * teardown (or went with its thread). */
static void ring_free(struct one_ring *r)
{
	io_uring_queue_exit(&r->uring);
	thread_token_put(r->token);
	mem_free(r);
}

/* Close the rings of threads that have exited. Their polls went at the
 * threads' exits; no thread will look at these rings again (a thread's
 * number is never reused), and each holds a file descriptor. */
static void sweep_exited(struct fsnw *w, struct ring *rs)
{
	unsigned kept = 0;

	for (unsigned i = 0; i < rs->n; i++) {
		if (thread_token_exited(rs->r[i]->token)) {
			w->st.sys_io_uring += rs->r[i]->unmap_calls;
			ring_free(rs->r[i]);
		} else
			rs->r[kept++] = rs->r[i];
	}
	rs->n = kept;
}

/* A ring for the calling thread, armed: 0; 1 where the kernel refuses one;
 * -ENOMEM where we could not allocate its record or the thread's token. */
static int ring_new(struct fsnw *w, struct one_ring **out)
{
	struct ring *rs = w->engine.ring;
	struct io_uring_params p;
	struct one_ring *r;
	int ret;

	r = mem_zalloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	if (thread_token_get(&r->token) < 0) {
		mem_free(r);
		return -ENOMEM;
	}
	/* Two entries: one poll at a time. Deferred task work where the
	 * kernel has it (6.1), as ring.h explains; else the plain ring. */
	memset(&p, 0, sizeof(p));
	p.flags = IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER |
		  IORING_SETUP_TASKRUN_FLAG;
	ret = io_uring_queue_init_params(2, &r->uring, &p);
	r->deferred = ret == 0;
	if (ret == -EINVAL) {
		w->st.sys_io_uring++;
		memset(&p, 0, sizeof(p));
		ret = io_uring_queue_init_params(2, &r->uring, &p);
	}
	if (ret < 0) {
		/* ENOSYS, EPERM (kernel.io_uring_disabled, seccomp), a memlock
		 * or fd limit: the fallback serves. */
		w->st.sys_io_uring++;
		thread_token_put(r->token);
		mem_free(r);
		return 1;
	}
	/* io_uring_setup and the mmaps of the rings and the SQE array; the
	 * teardown makes as many calls, a munmap each and the close. */
	r->unmap_calls = (p.features & IORING_FEAT_SINGLE_MMAP) ? 3 : 4;
	w->st.sys_io_uring += r->unmap_calls;
	r->owner = thread_num();
	rs->r[rs->n++] = r;
	(void)arm(w, r); /* a failed arm is tried again at the next look */
	*out = r;
	return 0;
}

int ring_open(struct fsnw *w)
{
	struct one_ring *r;
	int ret;

	if ((w->open_flags & FSNW_OPEN_NO_RING) || disabled_by_env())
		return 0;
	w->engine.ring = mem_zalloc(sizeof(struct ring));
	if (!w->engine.ring)
		return -ENOMEM;
	ret = ring_new(w, &r);
	if (ret == 0)
		return 1;
	mem_free(w->engine.ring);
	w->engine.ring = NULL;
	return ret < 0 ? ret : 0;
}

void ring_close(struct fsnw *w)
{
	struct ring *rs = w->engine.ring;
	uint64_t me = thread_num();

	if (!rs)
		return;
	/*
	 * An armed poll holds a reference to the group's file, and a closed
	 * ring lets go of its requests later, from a kernel worker: the
	 * inotify instance would outlive fsnw_close, and a new handle could
	 * meet max_user_instances. So the closing thread cancels its own
	 * ring's poll first, which completes at once. Another thread's ring
	 * only its own thread may submit to (IORING_SETUP_SINGLE_ISSUER); its
	 * poll goes when that thread exits, or with the ring's teardown, in a
	 * kernel worker, soon after the close. (A plain ring, on kernels
	 * before 6.1, takes the cancel from any thread, but its poll's
	 * completion still runs as task work of its own thread.)
	 */
	for (unsigned i = 0; i < rs->n; i++) {
		struct one_ring *r = rs->r[i];

		(void)reap(r);
		/* A fired poll of our own whose completion waits in deferred
		 * task work holds the file until that runs: run it now. */
		if (r->deferred && !r->armed && r->owner == me &&
		    (IO_URING_READ_ONCE(*r->uring.sq.kflags) & IORING_SQ_TASKRUN)) {
			(void)io_uring_get_events(&r->uring);
			w->st.sys_io_uring++;
		}
		if (r->armed && (!r->deferred || r->owner == me)) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(&r->uring);

			if (sqe) {
				io_uring_prep_poll_remove(sqe, r->gen);
				io_uring_sqe_set_data64(sqe, CANCEL_DATA);
				(void)io_uring_submit_and_wait(&r->uring, 1);
			}
		}
		ring_free(r);
	}
	mem_free(rs);
	w->engine.ring = NULL;
}

/* A thread's first look: a ring of its own, if it may have one. */
FSNW_COLD static bool first_look(struct fsnw *w, struct ring *rs)
{
	struct one_ring *r;

	if (rs->failed)
		return false;
	sweep_exited(w, rs);
	if (rs->n == RINGS_MAX)
		return false;
	if (ring_new(w, &r) != 0) {
		rs->failed = true;
		return false;
	}
	return r->armed && !reap(r);
}

bool ring_quiet(struct fsnw *w)
{
	struct ring *rs = w->engine.ring;
	struct one_ring *r = NULL;
	uint64_t me;

	if (unlikely(!rs))
		return false;
	me = thread_num();
	for (unsigned i = 0; i < rs->n && !r; i++)
		if (rs->r[i]->owner == me)
			r = rs->r[i];
	if (unlikely(!r))
		return first_look(w, rs);
	if (reap(r))
		return false; /* something was queued: read it */
	return r->armed || arm(w, r);
}

void ring_drained(struct fsnw *w)
{
	struct ring *rs = w->engine.ring;

	/* A completion now may be for an event after the drain's last read;
	 * consuming it is safe all the same, as the next look arms the poll
	 * again, which sees the queue as it is then. A ring not armed has
	 * nothing to say (reap): what it holds is stale, and its next arm
	 * takes it. A reader that keeps up finds its ring so each drain. */
	for (unsigned i = 0; rs && i < rs->n; i++)
		if (rs->r[i]->armed)
			(void)reap(rs->r[i]);
}

#else /* !FSNW_HAVE_IO_URING */

int ring_open(struct fsnw *w)
{
	(void)w;
	return 0;
}

void ring_close(struct fsnw *w)
{
	(void)w;
}

bool ring_quiet(struct fsnw *w)
{
	(void)w;
	return false;
}

void ring_drained(struct fsnw *w)
{
	(void)w;
}

#endif
