/* SPDX-License-Identifier: MIT */
/*
 * The tracer's end of libnccltrace-audit.so (user/plugin/nccltrace-audit.c): a unix socket in
 * the abstract namespace on which the job's processes say which NCCL (or verbs) library the
 * dynamic loader has just mapped, and wait until the tracer has probed it.
 */
#ifndef NT_AUDITSOCK_H
#define NT_AUDITSOCK_H

#include <stddef.h>

struct audit_sock;

/* Listen; name gets the "@..." name for $NCCLTRACE_AUDIT. 0 or -errno. */
int audit_sock__open(struct audit_sock **out, char *name, size_t len);
void audit_sock__close(struct audit_sock *s);
/* For the loop's epoll set: readable when a process asks */
int audit_sock__fd(const struct audit_sock *s);

/*
 * Serve what is pending: for each request, loaded(ctx, pid, path) with the pid the kernel
 * vouches for (SO_PEERCRED, not what the process says), then the answer that lets it go on.
 */
void audit_sock__serve(struct audit_sock *s, void (*loaded)(void *ctx, int pid, const char *path),
		       void *ctx);

#endif /* NT_AUDITSOCK_H */
