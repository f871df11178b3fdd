// SPDX-License-Identifier: MIT
/*
 * `nccltrace attach PID...`: the session `run` drives, on a job that was running before it.
 * The job is found from any of its pids (trace/jobtree.h); its processes are followed from now
 * (the BPF side's traced map, the NCCL probes at once), each thread's stack is taken once for
 * the NCCL phases it is inside, each socket's age comes from the kernel (sock_diag), and the
 * communicators made before the attach from each rank's memory (attachcomms.c). Then the
 * shared loop, until the job ends or tracing stops; with --once, one diagnosis.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "cmd/session.h"
#include "cmd/stackwatch.h"
#include "cmd/subcmds.h"
#include "trace/jobtree.h"
#include "trace/procfs.h"
#include "util/clock.h"
#include "util/log.h"

/*
 * --once: how long the loop runs after the attach. The BPF side needs a tick to see the
 * spinning calls on a connection that waits; a finding opens at the tick that sees it; the
 * culprit's and the longest waiter's stacks come a tick later (200 ms ticks)
 */
#define ONCE_WINDOW_NS (1500 * 1000000ULL)
#define MAX_JOB_PROCS  4096
/* a threshold's wait from the attach, and two ticks for the finding and its stacks */
#define ONCE_SETUP_SLACK_NS (400 * 1000000ULL)

struct job_procs {
	int root;
	char why[256];
	int pid[MAX_JOB_PROCS];
	int n;
	char *cmdv[64];		      /* the launcher's command line, for the dump's header */
	uint64_t max_proc_stopped_ns; /* the most one process's threads were stopped, together */
	uint64_t first_tick_ns;	      /* the attach's own tick: the counters' first reading */
	char cmdbuf[4096];
};

/* Is pid nccltrace itself or one of its ancestors? (their tree would hold nccltrace) */
static bool ours(const struct jobtree_proc *p, int n, int pid)
{
	for (int cur = getpid(), depth = 0; cur > 1 && depth < 64; depth++) {
		const struct jobtree_proc *e = jobtree_find(p, n, cur);

		if (cur == pid)
			return true;
		if (!e)
			break;
		cur = e->ppid;
	}
	return false;
}

static void read_cmdline(struct job_procs *j)
{
	char path[64];
	ssize_t len = 0;
	int fd, k = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", j->root);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		len = read(fd, j->cmdbuf, sizeof(j->cmdbuf) - 1);
		close(fd);
	}
	if (len <= 0)
		len = snprintf(j->cmdbuf, sizeof(j->cmdbuf), "pid %d", j->root) + 1;
	j->cmdbuf[len] = '\0';
	for (ssize_t i = 0; i < len && k < 63; i += strlen(j->cmdbuf + i) + 1)
		j->cmdv[k++] = j->cmdbuf + i;
	j->cmdv[k] = NULL;
}

/* The job of the pids given: 0, or an exit status with the reason printed. */
static int find_job(const struct attach_opts *o, struct job_procs *j)
{
	struct jobtree_proc *p;
	int n = jobtree_scan(&p), rc = 0;

	if (n < 0) {
		fprintf(stderr, "nccltrace: cannot read /proc: %s\n", strerror(-n));
		return EXIT_OSERR;
	}
	j->root = -1;
	for (int i = 0; i < o->npids && !rc; i++) {
		char why[256];
		int root = jobtree_root(p, n, o->pids[i], why, sizeof(why));

		if (root < 0) {
			fprintf(stderr, "nccltrace: no process with pid %d\n", o->pids[i]);
			rc = EXIT_NOINPUT;
		} else if (ours(p, n, root)) {
			fprintf(stderr,
				"nccltrace: pid %d is nccltrace's own or its ancestor's: give a "
				"pid of "
				"the job\n",
				root);
			rc = EXIT_USAGE;
		} else if (j->root >= 0 && root != j->root) {
			fprintf(stderr,
				"nccltrace: pids %d and %d belong to different jobs (launchers %d "
				"and "
				"%d): attach to one job at a time\n",
				o->pids[0], o->pids[i], j->root, root);
			rc = EXIT_USAGE;
		} else if (j->root < 0) {
			j->root = root;
			snprintf(j->why, sizeof(j->why), "%s", why);
		}
	}
	if (!rc)
		j->n = jobtree_members(p, n, j->root, j->pid, MAX_JOB_PROCS);
	free(p);
	return rc;
}

/* Follow pid from now: the model, the BPF side's traced map, the NCCL probes at once */
static void take_proc(struct session *s, const struct jobtree_proc *e)
{
	struct proc_stat st;
	int rc;

	model__proc_add(s->model, e->pid, e->ppid, e->comm, clock_mono_ns());
	/* its rank identity and environment, as at an exec */
	model__proc_exec(s->model, e->pid, e->comm);
	rc = tracer__track_pid(s->tracer, e->pid);
	if (rc)
		pr_warn("cannot follow pid %d: %s\n", e->pid, strerror(-rc));
	nccl_attach__proc(s->nccl, e->pid);
	nccl_attach__scan(s->nccl, e->pid);
	/*
	 * Gone (or a zombie) before the traced map had it: its exit was never seen, and the
	 * model would wait for it forever
	 */
	if (procfs_read_stat(e->pid, &st) || st.state == 'Z')
		model__proc_exit(s->model, e->pid, 0, clock_mono_ns());
}

/*
 * Every process of the job, followed; then the tree read again, for the children forked
 * before their parent was in the traced map (the BPF side follows forks from then on).
 */
static void take_job(struct session *s, struct job_procs *j)
{
	for (int pass = 0; pass < 2; pass++) {
		struct jobtree_proc *p;
		int n = jobtree_scan(&p);

		if (n < 0)
			return;
		if (pass)
			j->n = jobtree_members(p, n, j->root, j->pid, MAX_JOB_PROCS);
		for (int i = 0; i < j->n; i++) {
			const struct jobtree_proc *e = jobtree_find(p, n, j->pid[i]);

			if (e && !model__proc_info(s->model, e->pid))
				take_proc(s, e);
		}
		free(p);
	}
}

/* Which processes were taken and why: on stderr and in the dump */
static void tell_job(struct session *s, const struct job_procs *j, int nsock, int nthreads,
		     int ncomm, uint64_t scan_ns, uint64_t took_ns)
{
	const struct stacks_stats *st = stackwatch_stats(s->stackw);
	json_t *pids = json_array();
	char list[512] = "";
	size_t off = 0;
	json_t *rec;

	for (int i = 1; i < j->n; i++) {
		json_array_append_new(pids, json_integer(j->pid[i]));
		if (off < sizeof(list) - 16)
			off += snprintf(list + off, sizeof(list) - off, "%s%d", i > 1 ? "," : "",
					j->pid[i]);
	}
	fprintf(stderr,
		"nccltrace: attached to the job of launcher pid %d: %s; %d process%s of its tree "
		"(%s%s), %d threads' stacks, %d sockets from before (sock_diag), %d "
		"communicators from before (memory scan, at most %.0f ms a process), in %.0f ms\n",
		j->root, j->why, j->n, j->n == 1 ? "" : "es",
		j->n > 1 ? "descendants "
			 : "the "
			   "launcher alone",
		list, nthreads, nsock, ncomm, scan_ns / 1e6, took_ns / 1e6);
	rec = json_pack("{s:s, s:I, s:I, s:i, s:s, s:o, s:i, s:i, s:f}", "type", "attach", "ts_ns",
			(json_int_t)clock_mono_ns(), "realtime_ns", (json_int_t)clock_real_ns(),
			"root", j->root, "why", j->why, "descendants", pids, "threads", nthreads,
			"sockets", nsock, "took_s", took_ns / 1e9);
	json_object_set_new(rec, "comms", json_integer(ncomm));
	json_object_set_new(rec, "comm_scan_max_s", json_real(scan_ns / 1e9));
	/* what the stacks cost the job (docs/benchmarks.md) */
	json_object_set_new(rec, "stack_takes", json_integer((json_int_t)(st ? st->takes : 0)));
	json_object_set_new(rec, "stopped_ns", json_integer((json_int_t)(st ? st->stopped_ns : 0)));
	json_object_set_new(rec, "max_stopped_ns",
			    json_integer((json_int_t)(st ? st->max_stopped_ns : 0)));
	json_object_set_new(rec, "max_proc_stopped_ns",
			    json_integer((json_int_t)j->max_proc_stopped_ns));
	session_dump(s, rec);
}

/*
 * Attach: processes, their stacks (and phases), their sockets' ages, their communicators; one
 * tick at once.
 */
static void attach_job(struct session *s, struct job_procs *j)
{
	uint64_t t0 = clock_mono_ns(), scan_ns;
	int nthreads = 0, nsock, ncomm;

	/* a connection the BPF side meets from here on may be older: its seed says */
	s->seeds.attach_ns = t0;
	take_job(s, j);
	/* the probes are live in every process first: no phase entered from here on is lost */
	for (int i = 0; i < j->n; i++) {
		const struct stacks_stats *st = stackwatch_stats(s->stackw);
		uint64_t before = st ? st->stopped_ns : 0;
		int k = stackwatch_take_all(s, j->pid[i]);

		nthreads += k > 0 ? k : 0;
		/* its threads' pauses together: each stopped alone, the others ran on */
		if (st && st->stopped_ns - before > j->max_proc_stopped_ns)
			j->max_proc_stopped_ns = st->stopped_ns - before;
	}
	nsock = session_seed_sockets(s, j->pid, j->n);
	/* read from memory, the job not stopped: after the stacks, whose pauses it would lengthen */
	ncomm = session_scan_comms(s, j->pid, j->n, &scan_ns);
	tell_job(s, j, nsock > 0 ? nsock : 0, nthreads, ncomm, scan_ns, clock_mono_ns() - t0);
	session_tick(s, true);
	j->first_tick_ns = clock_mono_ns();
}

/* The root's exit status, if the job ended while traced; 0 if it goes on */
static int job_exit(const struct session *s)
{
	const struct snap_proc *p = snapshot_proc(&s->snap, s->job.pid);

	return s->job_exited && p && p->exited ? session_exit_code(p->exit_status) : 0;
}

/*
 * A communicator found by the memory scan whose ranks' counts differ and have not moved since
 * their first reading (the attach's tick): the wait it may be is seen from the attach on, as
 * a setup's (setup_since_attach)
 */
static bool counters_since_attach(const struct session *s, uint64_t first_tick_ns)
{
	const struct snapshot *sn = &s->snap;

	for (int i = 0; i < sn->ncomms; i++) {
		const struct snap_comm *c = &sn->comms[i];

		if (!c->scanned || !c->seq_ok || c->changed_ns > first_tick_ns)
			continue;
		for (int k = 0; k < sn->ncomms; k++)
			if (k != i && sn->comms[k].seq_ok && sn->comms[k].hash == c->hash &&
			    sn->comms[k].changed_ns <= first_tick_ns &&
			    snap_comm_total(&sn->comms[k]) != snap_comm_total(c))
				return true;
	}
	return false;
}

/*
 * --once: a rank inside NCCL's setup since before the attach is in it from the attach on (its
 * entry was never seen), so a setup that blocks reaches the threshold only that long after the
 * attach: the window is extended to it, once, where no finding opened yet
 */
static bool setup_since_attach(struct session *s, uint64_t first_tick_ns)
{
	const uint64_t wait = (uint64_t)(s->opts.stall_threshold_s * 1e9) + ONCE_SETUP_SLACK_NS;
	uint64_t until;
	const struct snap_proc *first = NULL;

	if (s->nfindings || s->job_exited || s->detached)
		return false;
	/*
	 * the first in it counts from its own stack's take, which may come a while after the
	 * attach began (its processes taken one after another, on a busy machine 0.5 s in all)
	 */
	for (int i = 0; i < s->snap.nprocs; i++) {
		const struct snap_proc *p = &s->snap.procs[i];

		if (!p->exited && p->nccl_setup && p->nccl_setup_since_ns >= s->seeds.attach_ns &&
		    (!first || p->nccl_setup_since_ns < first->nccl_setup_since_ns))
			first = p;
	}
	if (first && first->nccl_setup_since_ns + wait > s->stop_at_ns) {
		pr_info("rank %d (pid %d) is in NCCL's setup since before the attach: its time in "
			"it counts from the attach; tracing until the threshold\n",
			first->rank, first->pid);
		s->stop_at_ns = first->nccl_setup_since_ns + wait;
		return true;
	}
	/*
	 * the counters' wait counts from their first reading, the attach's tick: after every
	 * process's stacks and memory scan (1.6 s for 8 real ranks), not from the attach's start
	 */
	until = first_tick_ns + wait;
	if (until <= s->stop_at_ns)
		return false;
	if (counters_since_attach(s, first_tick_ns)) {
		pr_info("a communicator found by the memory scan has ranks with different counts, "
			"unchanged since the attach: its wait counts from the attach; tracing "
			"until the threshold\n");
		s->stop_at_ns = until;
		return true;
	}
	return false;
}

/* The trace, until the job ends or tracing stops (--once: its window); the exit status */
static int trace_attached(struct session *s, const struct attach_opts *o, const struct job_procs *j)
{
	int rc;

	if (o->once)
		s->stop_at_ns = clock_mono_ns() + ONCE_WINDOW_NS;
	session_loop(s);
	if (o->once && setup_since_attach(s, j->first_tick_ns))
		session_loop(s);
	tracer__drain(s->tracer);
	session_tick(s, true);
	if (s->job_exited)
		findings_close_all(&s->findings, clock_mono_ns(), session_finding, s);
	rc = job_exit(s);
	session_footer(s, s->job_exited ? rc : -1);
	livetui_stop(s);
	fprintf(stderr, "nccltrace: %llu finding%s; trace dump: %s\n",
		(unsigned long long)s->nfindings, s->nfindings == 1 ? "" : "s", s->dump_path);
	if (!s->job_exited)
		fprintf(stderr, "nccltrace: detached; the job (launcher pid %d) goes on\n",
			s->job.pid);
	return rc;
}

/* The options checked and the job found: 0, or an exit status with the reason printed. */
static int prepare(int argc, char **argv, struct attach_opts *o, struct job_procs *j)
{
	char err[512];
	int rc;

	if (cli_parse_attach(argc, argv, o, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return EXIT_USAGE;
	}
	if (o->run.help)
		return 0;
	log_set_level(o->run.verbose);
	if (!session_privileged()) {
		fprintf(stderr, "nccltrace: attaching needs root or CAP_BPF+CAP_PERFMON (try: sudo "
				"nccltrace attach PID)\n");
		return EXIT_NOPERM;
	}
	rc = find_job(o, j);
	if (rc)
		return rc;
	read_cmdline(j);
	o->run.cmd = j->cmdv;
	for (o->run.ncmd = 0; j->cmdv[o->run.ncmd]; o->run.ncmd++)
		;
	return 0;
}

int attach_main(int argc, char **argv)
{
	struct session s = {0};
	struct attach_opts o;
	struct job_procs *j = calloc(1, sizeof(*j));
	struct launch_creds cr;
	char err[256];
	struct utsname un;
	bool traced;
	int rc;

	if (!j)
		return EXIT_OSERR;
	rc = prepare(argc, argv, &o, j);
	if (rc || o.run.help) {
		if (o.run.help)
			fputs(cli_attach_help, stdout);
		free(j);
		return rc;
	}
	if (launcher_resolve_creds(NULL, &cr, err, sizeof(err))) {
		fprintf(stderr, "nccltrace: %s\n", err);
		free(j);
		return EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	session_block_signals();
	s.opts = o.run;
	s.attached = true;
	s.job.pid = j->root;
	s.job.go_fd = s.job.err_fd = -1;
	snprintf(s.host, sizeof(s.host), "%s", uname(&un) == 0 ? un.nodename : "localhost");
	snprintf(s.cmdline, sizeof(s.cmdline), "%s", j->cmdv[0] ? j->cmdv[0] : "?");
	rc = session_open(&s, &cr);
	if (!rc)
		rc = session_signals(&s) ? EXIT_OSERR : 0;
	traced = !rc;
	if (traced) {
		s.start_ns = clock_mono_ns();
		if (!o.once && !o.run.no_tui && isatty(STDOUT_FILENO))
			livetui_start(&s, &cr);
		attach_job(&s, j);
		rc = trace_attached(&s, &o, j);
	}
	session_close(&s);
	free(j);
	if (traced && o.once) {
		/* detached by now: the diagnosis, as `report` tells it, and its verdict */
		int r = report_dump(s.dump_path, o.json, NULL);

		rc = r ? r : s.nfindings ? 1 : 0;
	}
	return rc;
}
