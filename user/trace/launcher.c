// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "trace/launcher.h"
#include "trace/users.h"

static int parse_id(const char *s, unsigned long *out)
{
	char *end;

	if (!s || !*s)
		return -1;
	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || *end || *out > 0xfffffffeUL ? -1 : 0;
}

int launcher_resolve_creds(const char *user, struct launch_creds *cr, char *err, size_t errlen)
{
	unsigned long uid, gid;
	struct nt_user u;

	memset(cr, 0, sizeof(*cr));
	if (user) {
		if (users_by_name(user, &u) && (parse_id(user, &uid) || users_by_uid(uid, &u))) {
			snprintf(err, errlen, "--user '%s': no such user", user);
			return -1;
		}
		cr->drop = true;
		cr->uid = u.uid;
		cr->gid = u.gid;
		snprintf(cr->user, sizeof(cr->user), "%s", u.name);
		return 0;
	}
	if (getuid() != 0 || !getenv("SUDO_UID"))
		return 0; /* not through sudo: run as we are */
	if (parse_id(getenv("SUDO_UID"), &uid) || parse_id(getenv("SUDO_GID"), &gid)) {
		snprintf(err, errlen, "SUDO_UID/SUDO_GID are not numbers: use --user NAME");
		return -1;
	}
	cr->drop = uid != 0;
	cr->uid = uid;
	cr->gid = gid;
	if (users_by_uid(uid, &u) == 0)
		snprintf(cr->user, sizeof(cr->user), "%s", u.name);
	else
		snprintf(cr->user, sizeof(cr->user), "%s",
			 getenv("SUDO_USER") ? getenv("SUDO_USER") : "");
	return 0;
}

static int drop_privileges(const struct launch_creds *cr)
{
	if (!cr->drop)
		return 0;
	if (cr->user[0]) {
		int err = users_initgroups(cr->user, cr->gid);

		if (err)
			return err;
	} else if (setgroups(1, &cr->gid)) {
		return -errno;
	}
	if (setgid(cr->gid) || setuid(cr->uid))
		return -errno;
	/* as strace -u does: make sure there is no way back */
	if (cr->uid != 0 && setuid(0) == 0)
		return -EPERM;
	return 0;
}

static void child_fail(int fd, int err)
{
	ssize_t n = write(fd, &err, sizeof(err));

	(void)n;
	_exit(127);
}

int launcher_spawn(char *const argv[], const struct launch_creds *cr, int out_fd, struct job *job)
{
	int go[2], ep[2];
	sigset_t none;
	pid_t pid;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	if (pipe2(ep, O_CLOEXEC)) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(go[0]);
		close(go[1]);
		close(ep[0]);
		close(ep[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int err;

		close(go[1]);
		close(ep[0]);
		/* its own process group, so signals reach the whole job and nothing else */
		setpgid(0, 0);
		/* the tracer blocks signals for its signalfd: the job must not inherit that */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int s = 1; s < NSIG; s++)
			if (s != SIGKILL && s != SIGSTOP)
				signal(s, SIG_DFL);
		while (read(go[0], &c, 1) < 0 && errno == EINTR)
			;
		if (out_fd >= 0) {
			int nul = open("/dev/null", O_RDONLY);

			if (nul >= 0 && nul != STDIN_FILENO) {
				dup2(nul, STDIN_FILENO);
				close(nul);
			}
			dup2(out_fd, STDOUT_FILENO);
			dup2(out_fd, STDERR_FILENO);
			if (out_fd > STDERR_FILENO)
				close(out_fd);
		}
		err = drop_privileges(cr);
		if (err)
			child_fail(ep[1], LAUNCH_ERR_DROP + -err);
		execvp(argv[0], argv);
		child_fail(ep[1], errno);
	}
	setpgid(pid, pid); /* both sides set it: whichever runs first wins the race */
	close(go[0]);
	close(ep[1]);
	job->pid = pid;
	job->go_fd = go[1];
	job->err_fd = ep[0];
	return 0;
}

int launcher_start(struct job *job)
{
	int child_err = 0;
	ssize_t n;

	n = write(job->go_fd, "g", 1);
	close(job->go_fd);
	job->go_fd = -1;
	if (n != 1)
		return errno ? errno : EPIPE;
	do {
		n = read(job->err_fd, &child_err, sizeof(child_err));
	} while (n < 0 && errno == EINTR);
	close(job->err_fd);
	job->err_fd = -1;
	return n == sizeof(child_err) ? child_err : 0;
}

void launcher_signal(const struct job *job, int sig)
{
	if (kill(-job->pid, sig) && errno == ESRCH)
		kill(job->pid, sig);
}
