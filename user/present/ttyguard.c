// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "present/ttyguard.h"

static int guard_fd = -1;
static pid_t guard_pid = -1;

void ttyguard_restore(int fd, const struct termios *saved)
{
	static const char reset[] = "\033[0m\033[?25h\033[?1049l\r\n";

	if (saved)
		tcsetattr(fd, TCSANOW, saved);
	if (write(fd, reset, sizeof(reset) - 1) < 0) {
		/* nothing more to do on the way down */
	}
}

/* The watcher: nothing but the terminal and the pipe, until the pipe ends. */
static void watch(int tty, int rd, const struct termios *saved)
{
	static const int sigs[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGTSTP, SIGTTOU, SIGPIPE};
	long max = sysconf(_SC_OPEN_MAX);
	char c;
	ssize_t n;

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_IGN);
	prctl(PR_SET_NAME, "nccltrace-tty");
	/* no BPF program, map or job pipe is kept alive by the watcher */
	for (int fd = 0; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
		if (fd != tty && fd != rd)
			close(fd);
	while ((n = read(rd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n == 0)
		ttyguard_restore(tty, saved);
	_exit(0);
}

int ttyguard_start(int fd, const struct termios *saved)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0)
		watch(fd, p[0], saved);
	close(p[0]);
	guard_fd = p[1];
	guard_pid = pid;
	return 0;
}

void ttyguard_stop(void)
{
	if (guard_fd < 0)
		return;
	/* one byte before the end: the watcher knows it was not a kill */
	if (write(guard_fd, "q", 1) < 0) {
		/* it is gone: nothing to tell */
	}
	close(guard_fd);
	guard_fd = -1;
	while (waitpid(guard_pid, NULL, 0) < 0 && errno == EINTR)
		;
	guard_pid = -1;
}
