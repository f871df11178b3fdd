// SPDX-License-Identifier: MIT
/*
 * ringjob's launcher (RANK unset), like torchrun: a listening socket per rank, then the
 * workers forked and exec'd with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT;
 * it forwards signals, continues a stopped rank after --stall-for, and blames the first rank
 * that failed for the job's exit status.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ringjob.h"

/* --- launcher --- */

struct worker {
	pid_t pid;
	bool alive;
	bool stopped;
	double cont_at; /* when a stopped worker gets its SIGCONT */
};

struct launcher {
	const struct opts *o;
	struct worker w[MAX_RANKS];
	int n, live;
	int status;	/* the job's exit status; -1 until a failure decides it */
	bool stopping;	/* SIGTERM or a forwarded signal went out: further deaths are expected */
	bool by_signal; /* the job is ending because the launcher was told to end it */
	int pend;	/* a rank whose "lost connection" exit awaits its cause, or -1 */
	int pend_wstatus;
	double pend_at;
};

/* on addr (network order) at *port, or any port where *port is 0 */
static int listener_open(uint32_t addr, int *port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	char ip[INET_ADDRSTRLEN] = "?";

	if (fd < 0)
		job_fail(EXIT_FAIL, "socket: %s", strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = addr;
	sa.sin_port = htons((uint16_t)*port);
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 16) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) < 0) {
		inet_ntop(AF_INET, &addr, ip, sizeof(ip));
		job_fail(EXIT_FAIL, "listening socket on %s:%d: %s", ip, *port, strerror(errno));
	}
	*port = ntohs(sa.sin_port);
	return fd;
}

static void env_set(const char *name, long v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%ld", v);
	setenv(name, buf, 1);
}

__attribute__((noreturn)) static void worker_exec(int rank, int n, char **argv, const int *lfd,
						  const int *ports, const char *port_list,
						  const char *master, pid_t launcher,
						  const sigset_t *mask)
{
	char self[PATH_MAX];
	ssize_t plen;
	int i, fl;

	/* each worker holds exactly its own listener, as if it had opened it itself */
	for (i = 0; i < n; i++)
		if (i != rank && lfd[i] >= 0)
			close(lfd[i]);
	fl = fcntl(lfd[rank], F_GETFD);
	if (fl < 0 || fcntl(lfd[rank], F_SETFD, fl & ~FD_CLOEXEC) < 0)
		job_fail(EXIT_FAIL, "rank %d: fcntl(FD_CLOEXEC): %s", rank, strerror(errno));
	env_set("RANK", rank);
	env_set("LOCAL_RANK", rank);
	env_set("WORLD_SIZE", n);
	setenv("MASTER_ADDR", master, 1);
	env_set("MASTER_PORT", ports[0]);
	setenv("RINGJOB_PORTS", port_list, 1);
	env_set("RINGJOB_LISTEN_FD", lfd[rank]);
	/* a launcher killed by SIGKILL must not leave a ring of orphans spinning forever */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != launcher)
		_exit(EXIT_FAIL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	/*
	 * The binary /proc/self/exe points to, not argv[0] (relative or on PATH), and not the link
	 * itself, which would name every worker "exe" in ps and in the tracer's exec events.
	 */
	plen = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (plen <= 0)
		job_fail(EXIT_FAIL, "rank %d: readlink /proc/self/exe: %s", rank, strerror(errno));
	self[plen] = '\0';
	execv(self, argv);
	job_fail(127, "rank %d: exec %s: %s", rank, self, strerror(errno));
}

static struct worker *launcher_find(struct launcher *l, pid_t pid)
{
	int i;

	for (i = 0; i < l->n; i++)
		if (l->w[i].pid == pid && l->w[i].alive)
			return &l->w[i];
	return NULL;
}

static void launcher_signal(struct launcher *l, int sig)
{
	int i;

	for (i = 0; i < l->n; i++) {
		struct worker *w = &l->w[i];

		if (!w->alive)
			continue;
		kill(w->pid, sig);
		/* a stopped worker would sit on the signal until continued */
		kill(w->pid, SIGCONT);
		w->stopped = false;
	}
}

static int wstatus_code(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void wstatus_describe(int st, char *buf, size_t len)
{
	if (WIFEXITED(st))
		snprintf(buf, len, "exit %d", WEXITSTATUS(st));
	else
		snprintf(buf, len, "signal %d", WTERMSIG(st));
}

static void launcher_blame(struct launcher *l, int rank, int st)
{
	char what[32];

	wstatus_describe(st, what, sizeof(what));
	msg_err("rank %d (pid %d) failed (%s); stopping the job", rank, (int)l->w[rank].pid, what);
	l->status = wstatus_code(st);
	l->pend = -1;
	l->stopping = true;
	launcher_signal(l, SIGTERM);
}

static void launcher_failed(struct launcher *l, int rank, int st)
{
	char what[32];

	if (l->by_signal) {
		/*
		 * The job's status is what the forwarded signal did to the workers; a rank that
		 * merely lost its neighbour first tells less about that.
		 */
		if (l->status < 0 || l->status == EXIT_LOST)
			l->status = wstatus_code(st);
		return;
	}
	if (l->status >= 0) {
		wstatus_describe(st, what, sizeof(what));
		msg_info("rank %d (pid %d) ended (%s)", rank, (int)l->w[rank].pid, what);
		return;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == EXIT_LOST) {
		if (l->pend < 0) {
			l->pend = rank;
			l->pend_wstatus = st;
			l->pend_at = clock_mono() + SYMPTOM_GRACE_S;
		}
		return;
	}
	launcher_blame(l, rank, st);
}

static void launcher_reap(struct launcher *l)
{
	for (;;) {
		struct worker *w;
		int st, rank;
		pid_t pid = waitpid(-1, &st, WNOHANG | WUNTRACED);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0 && errno == ECHILD && l->live) {
			msg_err("lost track of %d workers", l->live);
			l->live = 0;
		}
		if (pid <= 0)
			return;
		w = launcher_find(l, pid);
		if (!w)
			continue;
		rank = (int)(w - l->w);
		if (WIFSTOPPED(st)) {
			if (l->stopping) {
				kill(pid, SIGCONT);
				continue;
			}
			w->stopped = true;
			w->cont_at = clock_mono() + l->o->stall_for;
			msg_info("rank %d (pid %d) stopped; SIGCONT in %.1f s", rank, (int)pid,
				 l->o->stall_for);
			continue;
		}
		if (!WIFEXITED(st) && !WIFSIGNALED(st))
			continue;
		w->alive = false;
		w->stopped = false;
		l->live--;
		if (wstatus_code(st) != 0)
			launcher_failed(l, rank, st);
	}
}

/* returns the next deadline, or a negative number if there is none */
static double launcher_tick(struct launcher *l)
{
	double now = clock_mono(), next = -1;
	int i;

	if (l->pend >= 0 && now >= l->pend_at)
		launcher_blame(l, l->pend, l->pend_wstatus);
	if (l->pend >= 0)
		next = l->pend_at;
	for (i = 0; i < l->n; i++) {
		struct worker *w = &l->w[i];

		if (!w->alive || !w->stopped)
			continue;
		if (now >= w->cont_at) {
			kill(w->pid, SIGCONT);
			w->stopped = false;
			msg_info("sent SIGCONT to rank %d (pid %d)", i, (int)w->pid);
			continue;
		}
		if (next < 0 || w->cont_at < next)
			next = w->cont_at;
	}
	return next;
}

/*
 * The launcher, top to bottom: fork the ranks, wait for them (a stop to resume, an exit that
 * ends the job), forward signals, report. 110 lines kept in one piece: its locals (the workers,
 * the deadline, the job's status) are the state every step shares.
 */
int launcher_main(const struct opts *o, char **argv)
{
	static const int fwd_sigs[] = {SIGINT, SIGTERM, SIGHUP};
	struct launcher l;
	int lfd[MAX_RANKS], ports[MAX_RANKS], i;
	char port_list[MAX_RANKS * 6 + 1], master[INET_ADDRSTRLEN] = "127.0.0.1";
	sigset_t set, old;
	size_t off = 0;
	pid_t self = getpid();

	memset(&l, 0, sizeof(l));
	l.o = o;
	l.n = o->ranks;
	l.status = -1;
	l.pend = -1;
	/*
	 * listening before forking means the ports are ours and no connect can be refused (on
	 * other hosts a listener may come later: connects are retried)
	 */
	inet_ntop(AF_INET, &o->addr[0], master, sizeof(master));
	for (i = 0; i < l.n; i++) {
		ports[i] = o->port ? o->port + i : 0;
		lfd[i] = i >= o->local_lo && i <= o->local_hi ? listener_open(o->addr[i], &ports[i])
							      : -1;
		off += (size_t)snprintf(port_list + off, sizeof(port_list) - off, "%s%d",
					i ? "," : "", ports[i]);
	}

	/*
	 * Signals are taken synchronously with sigtimedwait(): no handler can then interrupt
	 * waitpid() half-way, and the SIGCONT timers share the same wait.  Blocked before fork()
	 * so that none slips through before the loop runs.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (i = 0; i < (int)(sizeof(fwd_sigs) / sizeof(fwd_sigs[0])); i++) {
		struct sigaction sa;

		/*
		 * An inherited SIG_IGN (nohup, "cmd &" in a script) is honoured, not forwarded:
		 * the workers inherit it too and would shrug the signal off anyway.
		 */
		if (sigaction(fwd_sigs[i], NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&set, fwd_sigs[i]);
	}
	sigprocmask(SIG_BLOCK, &set, &old);

	if (o->local_lo == 0 && o->local_hi == l.n - 1)
		msg_info("launching %d rank%s on %s ports %s (launcher pid %d)", l.n,
			 l.n == 1 ? "" : "s", o->port ? "their hosts" : "127.0.0.1", port_list,
			 (int)self);
	else
		msg_info("launching ranks %d-%d of %d, ports %s (launcher pid %d)", o->local_lo,
			 o->local_hi, l.n, port_list, (int)self);
	for (i = o->local_lo; i <= o->local_hi; i++) {
		pid_t pid = fork();

		if (pid == 0)
			worker_exec(i, l.n, argv, lfd, ports, port_list, master, self, &old);
		if (pid < 0) {
			msg_err("fork: %s; stopping the job", strerror(errno));
			l.status = EXIT_FAIL;
			l.stopping = true;
			launcher_signal(&l, SIGTERM);
			break;
		}
		l.w[i].pid = pid;
		l.w[i].alive = true;
		l.live++;
	}
	for (i = 0; i < l.n; i++)
		if (lfd[i] >= 0)
			close(lfd[i]);

	for (;;) {
		struct timespec ts;
		siginfo_t si;
		double next;
		int sig;

		launcher_reap(&l);
		if (!l.live)
			break;
		next = launcher_tick(&l);
		if (next < 0) {
			sig = sigwaitinfo(&set, &si);
		} else {
			ts = ts_from_sec(next - clock_mono());
			sig = sigtimedwait(&set, &si, &ts);
		}
		if (sig < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			job_fail(EXIT_FAIL, "sigtimedwait: %s", strerror(errno));
		}
		if (sig == SIGCHLD)
			continue;
		msg_info("got %s; passing it on to the workers", strsignal(sig));
		if (l.pend >= 0)
			launcher_blame(&l, l.pend, l.pend_wstatus);
		if (l.status < 0)
			l.by_signal = true;
		l.stopping = true;
		launcher_signal(&l, sig);
	}
	if (l.pend >= 0)
		launcher_blame(&l, l.pend, l.pend_wstatus);
	if (l.status < 0)
		msg_info("all %d rank%s finished", l.n, l.n == 1 ? "" : "s");
	return l.status < 0 ? 0 : l.status;
}
