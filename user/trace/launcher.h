/* SPDX-License-Identifier: MIT */
/*
 * Starting the traced command: fork, wait until the tracer follows the child's pid, drop
 * privileges to the invoking user, exec. Signals are forwarded to the job's process group.
 */
#ifndef NT_LAUNCHER_H
#define NT_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct launch_creds {
	bool drop; /* false: stay as we are (root invoking root without sudo) */
	uid_t uid;
	gid_t gid;
	char user[64];
};

struct job {
	pid_t pid;
	int go_fd;  /* write end: the child execs once it reads a byte */
	int err_fd; /* read end: errno of a failed exec, EOF on success */
};

/*
 * Whom to run the command as: --user NAME, else SUDO_UID/SUDO_GID when we are root through
 * sudo, else ourselves. 0 or -1 with a one-line reason.
 */
int launcher_resolve_creds(const char *user, struct launch_creds *cr, char *err, size_t errlen);

/*
 * Fork the child, stopped before exec. out_fd >= 0: its stdout and stderr go there and its
 * stdin is /dev/null (the dashboard owns the terminal). 0 or -errno.
 */
int launcher_spawn(char *const argv[], const struct launch_creds *cr, int out_fd, struct job *job);
/* Added to the errno of a failed privilege drop, to tell it from a failed exec. */
#define LAUNCH_ERR_DROP 10000

/* Let it exec. 0, or the child's errno (positive) if exec or the privilege drop failed. */
int launcher_start(struct job *job);
void launcher_signal(const struct job *job, int sig);

#endif /* NT_LAUNCHER_H */
