// SPDX-License-Identifier: MIT
/*
 * libnccltrace-audit.so: an rtld-audit module (LD_AUDIT, see rtld-audit(7)) that nccltrace puts
 * into the job so that NCCL is probed before any of its code runs, however it is loaded: linked
 * at exec (all_reduce_perf, MPI and C++ programs) or dlopen'ed (PyTorch). The dynamic loader
 * calls la_objopen() for each object it maps, before relocating it and before any constructor;
 * for libnccl.so* and libibverbs.so* this module tells the tracer (a unix socket in the
 * abstract namespace, named by $NCCLTRACE_AUDIT) and waits for its answer, at most
 * WAIT_MS: the tracer attaches its uprobes to the mapped file meanwhile.
 *
 * It never harms the job: any failure (no socket, no tracer, a tracer that dies, a timeout) ends
 * the wait at once and the load goes on as without it. A dead tracer's socket is closed by the
 * kernel, so a wait can never outlive nccltrace. It binds no symbols (no la_symbind), so the
 * loader keeps its fast paths; libc only, nothing newer than glibc 2.17.
 */
#include <errno.h>
#include <link.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define EXPORT	__attribute__((visibility("default")))
#define WAIT_MS 3000

EXPORT unsigned int la_version(unsigned int version)
{
	/* only la_objopen is used, the same in every version of the interface */
	return version < LAV_CURRENT ? version : LAV_CURRENT;
}

/* libnccl.so*, libibverbs.so*: what nccltrace probes */
static int wanted(const char *path)
{
	const char *b = strrchr(path, '/');

	b = b ? b + 1 : path;
	return !strncmp(b, "libnccl.so", 10) || !strncmp(b, "libibverbs.so", 13);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Tell the tracer and wait for its answer (a byte), or for the socket to close, or WAIT_MS. */
static void tell_tracer(const char *name, const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	size_t nl = strlen(name), pl = strlen(path);
	char msg[4200], ok;
	int64_t end = now_ms() + WAIT_MS;
	int fd, n, len;

	/* "@name": abstract, as ss(8) writes it; no file the job's user could not reach */
	if (nl < 2 || name[0] != '@' || nl > sizeof(a.sun_path) || pl > 4096)
		return;
	memcpy(a.sun_path + 1, name + 1, nl - 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	len = snprintf(msg, sizeof(msg), "%d %s\n", (int)getpid(), path);
	if (connect(fd, (struct sockaddr *)&a, offsetof(struct sockaddr_un, sun_path) + nl) ||
	    write(fd, msg, len) != len) {
		close(fd);
		return;
	}
	for (;;) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int64_t left = end - now_ms();

		if (left <= 0)
			break;
		n = poll(&p, 1, (int)left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			while (read(fd, &ok, 1) < 0 && errno == EINTR)
				;
		break;
	}
	close(fd);
}

EXPORT unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
	const char *name = getenv("NCCLTRACE_AUDIT");
	int saved = errno;

	(void)lmid;
	(void)cookie;
	/* the name as found: relative when the search path was (the tracer resolves it) */
	if (name && map && map->l_name && map->l_name[0] && wanted(map->l_name))
		tell_tracer(name, map->l_name);
	errno = saved;
	return 0; /* no symbol binding audit: the loader's fast paths stay */
}
