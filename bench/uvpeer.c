/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "uvpeer.h"

#ifdef HAVE_LIBUV
#include <uv.h>

struct uvpeer {
	uv_loop_t loop;
	uv_check_t check;     /* runs once per loop iteration: counts wakeups */
	uv_fs_event_t **h;
	size_t n, cap;
	uvpeer_fn fn;
	void *arg;
	long wakeups;
};

bool uvpeer_available(char *why, size_t len)
{
	(void)why;
	(void)len;
	return true;
}

static void on_check(uv_check_t *c)
{
	struct uvpeer *u = c->data;

	u->wakeups++;
}

int uvpeer_open(struct uvpeer **ret, uvpeer_fn fn, void *arg)
{
	struct uvpeer *u = calloc(1, sizeof(*u));
	int err;

	if (!u)
		return -ENOMEM;
	err = uv_loop_init(&u->loop);
	if (err) {
		free(u);
		return err;
	}
	uv_check_init(&u->loop, &u->check);
	u->check.data = u;
	uv_check_start(&u->check, on_check);
	/* The check handle alone must not keep a loop that watches nothing running. */
	uv_unref((uv_handle_t *)&u->check);
	u->fn = fn;
	u->arg = arg;
	*ret = u;
	return 0;
}

static void on_event(uv_fs_event_t *h, const char *name, int events, int status)
{
	struct uvpeer *u = h->data;

	if (status == 0 && u->fn)
		u->fn(u->arg, h->path, name, !(events & UV_RENAME));
}

int uvpeer_start(struct uvpeer *u, size_t i, const char *path)
{
	if (i > u->n)
		return -EINVAL;
	if (i == u->n) {
		if (u->n == u->cap) {
			size_t cap = u->cap ? 2 * u->cap : 64;
			uv_fs_event_t **h = realloc(u->h, cap * sizeof(*h));

			if (!h)
				return -ENOMEM;
			u->h = h;
			u->cap = cap;
		}
		u->h[i] = malloc(sizeof(*u->h[i]));
		if (!u->h[i])
			return -ENOMEM;
		uv_fs_event_init(&u->loop, u->h[i]);
		u->h[i]->data = u;
		u->n++;
	}
	return uv_fs_event_start(u->h[i], on_event, path, 0);
}

int uvpeer_stop(struct uvpeer *u, size_t i)
{
	if (i >= u->n)
		return -EINVAL;
	return uv_fs_event_stop(u->h[i]);
}

int uvpeer_run(struct uvpeer *u, bool wait)
{
	int r;

	/* A loop whose handles are all stopped is not alive and would return
	 * without looking: the check handle keeps it so for one look. */
	if (!wait)
		uv_ref((uv_handle_t *)&u->check);
	r = uv_run(&u->loop, wait ? UV_RUN_DEFAULT : UV_RUN_NOWAIT);
	if (!wait)
		uv_unref((uv_handle_t *)&u->check);
	return r < 0 ? r : 0;
}

void uvpeer_halt(struct uvpeer *u)
{
	uv_stop(&u->loop);
}

long uvpeer_wakeups(const struct uvpeer *u)
{
	return u->wakeups;
}

static void on_closed(uv_handle_t *h)
{
	free(h);
}

void uvpeer_close(struct uvpeer *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++)
		uv_close((uv_handle_t *)u->h[i], on_closed);
	uv_close((uv_handle_t *)&u->check, NULL);
	uv_run(&u->loop, UV_RUN_DEFAULT);
	/* Every handle is closed, so the loop closes: nothing is left to say. */
	(void)uv_loop_close(&u->loop);
	free(u->h);
	free(u);
}

#else

bool uvpeer_available(char *why, size_t len)
{
	snprintf(why, len, "fsnw-bench was built without libuv (install libuv1-dev; meson "
		 "option -Dlibuv=enabled)");
	return false;
}

int uvpeer_open(struct uvpeer **u, uvpeer_fn fn, void *arg)
{
	(void)u;
	(void)fn;
	(void)arg;
	return -EOPNOTSUPP;
}

int uvpeer_start(struct uvpeer *u, size_t i, const char *path)
{
	(void)u;
	(void)i;
	(void)path;
	return -EOPNOTSUPP;
}

int uvpeer_stop(struct uvpeer *u, size_t i)
{
	(void)u;
	(void)i;
	return -EOPNOTSUPP;
}

int uvpeer_run(struct uvpeer *u, bool wait)
{
	(void)u;
	(void)wait;
	return -EOPNOTSUPP;
}

void uvpeer_halt(struct uvpeer *u)
{
	(void)u;
}

long uvpeer_wakeups(const struct uvpeer *u)
{
	(void)u;
	return -EOPNOTSUPP;
}

void uvpeer_close(struct uvpeer *u)
{
	(void)u;
}

#endif
