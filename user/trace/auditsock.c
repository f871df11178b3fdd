// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "trace/auditsock.h"

struct audit_sock {
	int fd;
};

int audit_sock__open(struct audit_sock **out, char *name, size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct audit_sock *s = calloc(1, sizeof(*s));
	struct timespec ts;
	int n, err;

	if (!s)
		return -ENOMEM;
	/* unguessable, so another tracer's job cannot talk to this one by mistake */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "nccltrace-audit-%d-%lx",
		     (int)getpid(), (unsigned long)(ts.tv_nsec ^ ts.tv_sec << 20));
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (s->fd < 0 ||
	    bind(s->fd, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path) + 1 + n) ||
	    listen(s->fd, 64)) {
		err = -errno;
		if (s->fd >= 0)
			close(s->fd);
		free(s);
		return err;
	}
	snprintf(name, len, "@%s", a.sun_path + 1);
	*out = s;
	return 0;
}

void audit_sock__close(struct audit_sock *s)
{
	if (!s)
		return;
	close(s->fd);
	free(s);
}

int audit_sock__fd(const struct audit_sock *s)
{
	return s ? s->fd : -1;
}

/*
 * One request: "PID PATH\n", written by the module at once after its connect, so it is there
 * or comes within moments; a process that says nothing in 100 ms is dropped (it goes on).
 */
static void serve_one(int fd, void (*loaded)(void *, int, const char *), void *ctx)
{
	struct ucred cr;
	socklen_t cl = sizeof(cr);
	char buf[PATH_MAX + 32], abs[PATH_MAX], *path, *nl;
	size_t got = 0;

	while (got < sizeof(buf) - 1) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		ssize_t n;

		if (poll(&p, 1, 100) <= 0)
			return;
		n = read(fd, buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			return;
		got += n;
		buf[got] = '\0';
		if (strchr(buf, '\n'))
			break;
	}
	nl = strchr(buf, '\n');
	path = strchr(buf, ' ');
	if (!nl || !path || path > nl || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl))
		return;
	*nl = '\0';
	path++;
	/*
	 * The path is the job's word: the tracer examines it as it would a path in its maps. A
	 * relative one (a relative LD_LIBRARY_PATH) is relative to the process's directory.
	 */
	if (path[0] != '/') {
		char rel[PATH_MAX + 64];

		snprintf(rel, sizeof(rel), "/proc/%d/cwd/%s", (int)cr.pid, path);
		path = realpath(rel, abs) ? abs : NULL;
	}
	if (path && cr.pid > 0)
		loaded(ctx, cr.pid, path);
	(void)!write(fd, "1", 1);
}

void audit_sock__serve(struct audit_sock *s, void (*loaded)(void *, int, const char *), void *ctx)
{
	int fd;

	while (s && (fd = accept4(s->fd, NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		serve_one(fd, loaded, ctx);
		close(fd);
	}
}
