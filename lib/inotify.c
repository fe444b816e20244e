/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "backend.h"
#include "inotify-decode.h"
#include "handle.h"
#include "kwatch.h"
#include "sys.h"

/* The public bits are the inotify bits, so masks cross without translation. */
_Static_assert(FSNW_ACCESS == IN_ACCESS, "FSNW_ACCESS");
_Static_assert(FSNW_MODIFY == IN_MODIFY, "FSNW_MODIFY");
_Static_assert(FSNW_ATTRIB == IN_ATTRIB, "FSNW_ATTRIB");
_Static_assert(FSNW_CLOSE_WRITE == IN_CLOSE_WRITE, "FSNW_CLOSE_WRITE");
_Static_assert(FSNW_CLOSE_NOWRITE == IN_CLOSE_NOWRITE, "FSNW_CLOSE_NOWRITE");
_Static_assert(FSNW_OPEN == IN_OPEN, "FSNW_OPEN");
_Static_assert(FSNW_MOVED_FROM == IN_MOVED_FROM, "FSNW_MOVED_FROM");
_Static_assert(FSNW_MOVED_TO == IN_MOVED_TO, "FSNW_MOVED_TO");
_Static_assert(FSNW_CREATE == IN_CREATE, "FSNW_CREATE");
_Static_assert(FSNW_DELETE == IN_DELETE, "FSNW_DELETE");
_Static_assert(FSNW_DELETE_SELF == IN_DELETE_SELF, "FSNW_DELETE_SELF");
_Static_assert(FSNW_MOVE_SELF == IN_MOVE_SELF, "FSNW_MOVE_SELF");
_Static_assert(FSNW_CLOSE == IN_CLOSE, "FSNW_CLOSE");
_Static_assert(FSNW_MOVE == IN_MOVE, "FSNW_MOVE");
_Static_assert(FSNW_ALL_EVENTS == IN_ALL_EVENTS, "FSNW_ALL_EVENTS");
_Static_assert(FSNW_UNMOUNT == IN_UNMOUNT, "FSNW_UNMOUNT");
_Static_assert(FSNW_OVERFLOW == IN_Q_OVERFLOW, "FSNW_OVERFLOW");
_Static_assert(FSNW_IGNORED == IN_IGNORED, "FSNW_IGNORED");
_Static_assert(FSNW_ISDIR == IN_ISDIR, "FSNW_ISDIR");
_Static_assert(FSNW_WATCH_ONLYDIR == IN_ONLYDIR, "FSNW_WATCH_ONLYDIR");
_Static_assert(FSNW_WATCH_DONT_FOLLOW == IN_DONT_FOLLOW, "FSNW_WATCH_DONT_FOLLOW");
_Static_assert(FSNW_WATCH_EXCL_UNLINK == IN_EXCL_UNLINK, "FSNW_WATCH_EXCL_UNLINK");
_Static_assert(FSNW_WATCH_ONESHOT == IN_ONESHOT, "FSNW_WATCH_ONESHOT");
_Static_assert(!(FSNW_SYNTHETIC & (IN_ALL_EVENTS | IN_UNMOUNT | IN_Q_OVERFLOW | IN_IGNORED |
				   IN_ISDIR | IN_ONLYDIR | IN_DONT_FOLLOW | IN_EXCL_UNLINK |
				   IN_MASK_ADD | IN_MASK_CREATE | IN_ONESHOT)),
	       "FSNW_SYNTHETIC is not an inotify bit");

static int inotify_init_group(struct fsnw *w)
{
	int fd = sys_inotify_init(&w->st.sys_inotify_init, IN_NONBLOCK);

	if (fd < 0)
		return fd;
	w->kfd = fd;
	return 0;
}

static void inotify_fini(struct fsnw *w)
{
	(void)w;
}

static int inotify_mark(struct fsnw *w, int dirfd, const char *path, uint32_t mask,
			uint32_t flags, int replace, struct kkey *key, struct sys_tally *t)
{
	uint32_t m = (mask & FSNW_ALL_EVENTS) |
		     (flags & (FSNW_WATCH_ONLYDIR | FSNW_WATCH_DONT_FOLLOW | FSNW_WATCH_EXCL_UNLINK));
	int wd;

	/* inotify has no *at() form: callers hand it full paths. */
	if (dirfd != AT_FDCWD)
		return -EINVAL;
	if (!replace)
		m |= IN_MASK_ADD;
	wd = inotify_add_watch(w->kfd, path, m);
	t->inotify_add_watch++;
	if (wd < 0)
		return -errno;
	key->wd = wd;
	key->len = sizeof(wd);
	memcpy(key->bytes, &wd, sizeof(wd));
	return 0;
}

static int inotify_unmark(struct fsnw *w, const struct kwatch *kw, struct sys_tally *t)
{
	int ret = inotify_rm_watch(w->kfd, kwatch_wd(kw));

	t->inotify_rm_watch++;
	/* EINVAL: the kernel dropped the watch first (its IN_IGNORED is on the
	 * way). Not an error to anyone. */
	if (ret < 0 && errno != EINVAL)
		return -errno;
	return 0;
}

size_t inotify_decode(const void *buf, size_t len, kevent_fn fn, void *arg)
{
	return inotify_decode_inline(buf, len, fn, arg);
}

static size_t inotify_decode_op(struct fsnw *w, const void *buf, size_t len, kevent_fn fn,
				void *arg)
{
	(void)w;
	return inotify_decode(buf, len, fn, arg);
}

/*
 * The kernel lists every watch of the group in the fd's fdinfo, a line
 * "inotify wd:<hex> ino:... " each.
 */
static int inotify_live(struct fsnw *w, void (*fn)(struct fsnw *w, const unsigned char *key,
						   size_t len))
{
	char path[64], buf[4096];
	size_t have = 0;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", w->kfd);
	fd = sys_open(&w->st.sys_other, path, O_RDONLY);
	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t n = sys_read(&w->st.sys_other, fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (n <= 0) {
			sys_close(&w->st.sys_other, fd);
			return n < 0 ? -EIO : 0;
		}
		have += (size_t)n;
		buf[have] = '\0';
		while ((nl = strchr(line, '\n'))) {
			int wd;

			*nl = '\0';
			if (sscanf(line, "inotify wd:%x ", (unsigned *)&wd) == 1)
				fn(w, (const unsigned char *)&wd, sizeof(wd));
			line = nl + 1;
		}
		have -= (size_t)(line - buf);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0; /* no line is this long: skip it */
	}
}

const struct backend inotify_backend = {
	.id = FSNW_BACKEND_INOTIFY,
	.name = "inotify",
	.init = inotify_init_group,
	.fini = inotify_fini,
	.mark = inotify_mark,
	.unmark = inotify_unmark,
	.decode = inotify_decode_op,
	.max_record = sizeof(struct inotify_event) + NAME_MAX + 1,
	.excl_unlink = true,
	.inotify_records = true,
	.key_len = sizeof(int),
	.live = inotify_live,
};
