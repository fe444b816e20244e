/* SPDX-License-Identifier: MIT */
/*
 * The torture's reader: a thread that reads the handle while the driver
 * changes the trees, and applies every event to the views of the trees
 * (examples/tree-view.c, the contract's mechanical applier), as a daemon
 * would. It reads a random number of events at a time and falls behind at
 * random, so that renames overtake the library's walks.
 *
 * Checkpoints: the driver creates a sentinel file in the first tree and
 * waits; the reader, once it has applied the sentinel's create, read the
 * queue empty and every view's scan stands, pauses and says so; the driver
 * compares the views with the disk and lets it go on.
 */
#ifndef FSNW_TORTURE_READER_H
#define FSNW_TORTURE_READER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "fsnwatch.h"
#include "fsops.h"
#include "tree-view.h"

#define READER_TREES 4
#define SENTINEL ".torture-sync-"

struct reader {
	struct fsnw *w;
	struct tree_view view[READER_TREES];
	unsigned ntrees;
	struct rng r;          /* its own stream: batch sizes and lags */
	unsigned lag_per_mille; /* how often it naps between reads */
	unsigned max_batch;
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t seen;         /* the highest sentinel applied */
	uint64_t synced;       /* caught up with it, and paused */
	uint64_t want;         /* the sentinel the driver waits for */
	bool paused, stop, running;
	int err;               /* a read or apply failed: -errno */
	uint64_t events, overflows;
	FILE *trace;           /* every event applied, as a line (--trace) */
};

/* Start reading (views set up and scanned already). -errno. */
int reader_start(struct reader *rd);
/* Stop and join. */
void reader_stop(struct reader *rd);

/*
 * A checkpoint: make sentinel n in tree root W0 (rootfd-relative), wait
 * until the reader has caught up with it (at most timeout_s), leaving it
 * paused with rd->mu held. 0, -ETIMEDOUT, or the reader's error.
 */
int reader_sync(struct reader *rd, int rootfd, uint64_t n, int timeout_s);
/* Let a reader paused by reader_sync go on (releases rd->mu). */
void reader_resume(struct reader *rd);

#endif
