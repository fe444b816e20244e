/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "stats-report.h"

int stats_json(const struct fsnw *w, char **out)
{
	int len = fsnw_stats_json(w, NULL, 0);
	char *buf;

	*out = NULL;
	if (len < 0)
		return len;
	buf = malloc((size_t)len + 1);
	if (!buf)
		return -ENOMEM;
	len = fsnw_stats_json(w, buf, (size_t)len + 1);
	if (len < 0) {
		free(buf);
		return len;
	}
	*out = buf;
	return 0;
}

void stats_report(const struct fsnw *w, FILE *f, const char *prog)
{
	char *json;
	int ret = stats_json(w, &json);

	if (ret == 0)
		fprintf(f, "%s\n", json);
	else
		fprintf(f, "%s: statistics: %s\n", prog, strerror(-ret));
	free(json);
	fflush(f);
}

int stats_interval_parse(const char *arg, double *seconds)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !isfinite(v) || v < 0.001 || v > 86400.0)
		return -EINVAL;
	*seconds = v;
	return 0;
}

int stats_timer_open(double seconds)
{
	struct itimerspec its;
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -errno;
	its.it_interval.tv_sec = (time_t)seconds;
	its.it_interval.tv_nsec = (long)((seconds - floor(seconds)) * 1e9);
	its.it_value = its.it_interval;
	if (timerfd_settime(fd, 0, &its, NULL) < 0) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

void stats_timer_ack(int fd)
{
	uint64_t expirations;

	/* EAGAIN: nothing expired; the count itself is of no use. */
	if (read(fd, &expirations, sizeof(expirations)) < 0)
		return;
}
