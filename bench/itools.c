/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>

#include "itools.h"

#ifdef HAVE_INOTIFYTOOLS
#include <inotifytools/inotifytools.h>
#include <sys/inotify.h>

bool itools_available(char *why, size_t len)
{
	(void)why;
	(void)len;
	return true;
}

/* libinotifytools keeps an errno-like value of its own. */
static int itools_err(void)
{
	int e = inotifytools_error();

	return e > 0 ? -e : -EIO;
}

int itools_init(void)
{
	return inotifytools_initialize() ? 0 : itools_err();
}

int itools_watch_tree(const char *path, uint32_t mask)
{
	return inotifytools_watch_recursively(path, (int)mask) ? 0 : itools_err();
}

int itools_watch(const char *path, uint32_t mask)
{
	return inotifytools_watch_file(path, (int)mask) ? 0 : itools_err();
}

int itools_remove(const char *path)
{
	return inotifytools_remove_watch_by_filename(path) ? 0 : itools_err();
}

long itools_num_watches(void)
{
	return inotifytools_get_num_watches();
}

int itools_next(uint32_t *mask, const char **name)
{
	/* Debian's 3.22 gives select() no timeout for 0 either: it waits. */
	struct inotify_event *ev = inotifytools_next_event(0);

	if (!ev)
		return inotifytools_error() ? itools_err() : 0;
	*mask = ev->mask;
	*name = ev->len ? ev->name : NULL;
	return 1;
}

int itools_wait(uint32_t *mask, const char **name, const char **dir)
{
	/* A negative timeout: select() waits for as long as it takes. */
	struct inotify_event *ev = inotifytools_next_event(-1);

	if (!ev)
		return itools_err();
	*mask = ev->mask;
	*name = ev->len ? ev->name : NULL;
	*dir = inotifytools_filename_from_wd(ev->wd);
	return 1;
}

void itools_cleanup(void)
{
	inotifytools_cleanup();
}

#else

bool itools_available(char *why, size_t len)
{
	snprintf(why, len, "fsnw-bench was built without libinotifytools "
		 "(install libinotifytools0-dev; meson option -Dlibinotifytools=enabled)");
	return false;
}

int itools_init(void)
{
	return -EOPNOTSUPP;
}

int itools_watch_tree(const char *path, uint32_t mask)
{
	(void)path;
	(void)mask;
	return -EOPNOTSUPP;
}

int itools_watch(const char *path, uint32_t mask)
{
	(void)path;
	(void)mask;
	return -EOPNOTSUPP;
}

int itools_remove(const char *path)
{
	(void)path;
	return -EOPNOTSUPP;
}

long itools_num_watches(void)
{
	return -EOPNOTSUPP;
}

int itools_next(uint32_t *mask, const char **name)
{
	(void)mask;
	(void)name;
	return -EOPNOTSUPP;
}

int itools_wait(uint32_t *mask, const char **name, const char **dir)
{
	(void)mask;
	(void)name;
	(void)dir;
	return -EOPNOTSUPP;
}

void itools_cleanup(void)
{
}

#endif
