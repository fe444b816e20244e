/* SPDX-License-Identifier: MIT */
/* fanotify backend: replaced by the full implementation (issue 5). Until then
 * it reports itself unusable so AUTO falls back to inotify. */
#include <errno.h>

#include "backend.h"
#include "fsnwatch.h"
#include "handle.h"

static int fan_init(struct fsnw *w)
{
	(void)w;
	return -EOPNOTSUPP;
}

const struct backend fanotify_backend = {
	.id = FSNW_BACKEND_FANOTIFY,
	.name = "fanotify",
	.init = fan_init,
};
