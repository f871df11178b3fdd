// SPDX-License-Identifier: MIT
/*
 * The tracing session that `run` drives: open -> signals -> (the job starts) -> loop -> footer
 * -> close. The tick reads the kernel's connection map and /proc into the model, adds what the
 * NCCL probes tell, diagnoses the snapshot, and tells what changed.
 *
 * One file over 700 lines on purpose: every step of the tick and the loop reads and writes the
 * same struct session in an order that matters (events into the model before the snapshot, the
 * snapshot before diagnose, findings before the dump's records); what stands apart already
 * lives beside it (sessionlog.c NCCL's log, sessionlisten.c --listen, attachsocks.c the
 * sockets of an attach, stackwatch.c the stacks, gpuwatch.c the GPUs, livetui.c the dashboard).
 */
#include <errno.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cmd/session.h"
#include "cmd/stackwatch.h"
#include "ntprof.h"
#include "nccl/ncclprof.h"
#include "nccl/verbsoffs.h"
#include "present/console.h"
#include "present/records.h"
#include "cmd/gpuwatch.h"
#include "trace/hostcheck.h"
#include "util/clock.h"
#include "util/fmt.h"
#include "util/log.h"

#define TICK_NS (200 * 1000000ULL)
/*
 * While a communicator's or a connection's p99 gap is this short (its threshold below -t's
 * default), tick at FAST_TICK_NS: a gap is measured at tick resolution, so a 200 ms tick could
 * never let the threshold below 2 s. The trace starts fast, so that a fast job's rhythm is
 * learned finely from its first steps, and slows after FAST_FIRST_NS if nothing is that fast.
 */
#define FAST_TICK_NS	(100 * 1000000ULL)
#define FAST_GAP_NS	(500 * 1000000ULL)
#define FAST_FIRST_NS	(10 * NT_NSEC_PER_SEC)
#define SWEEP_EVERY_NS	(10 * NT_NSEC_PER_SEC) /* rhythms of what has gone, dropped */
#define DRAW_EVERY_NS	(500 * 1000000ULL)     /* the dashboard at 2 Hz */
#define MAX_FINDINGS	64
#define DUMP_NAME_TRIES 1000 /* default dump names tried in one second (seq 1..N) */
/* quiet mode: every communicator moving for 2 s; back on after 0.5 s without a collective */
#define QUIET_HOLD_NS	(2 * NT_NSEC_PER_SEC)
#define QUIET_RECENT_NS (NT_NSEC_PER_SEC / 2)
/*
 * stripped builds: the collective calls are probed until a process has done this many after a
 * communicator's init (its lazy ring connect is in the first; more channels may connect later)
 */
#define FIRST_CALLS 8

/* CAP_BPF and CAP_PERFMON (Linux >= 5.8) are enough for everything nccltrace loads. */
bool session_privileged(void)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &hdr, data))
		return false;
#ifndef CAP_BPF
#define CAP_PERFMON 38
#define CAP_BPF	    39
#endif
	return (data[1].effective & (1u << (CAP_BPF - 32))) &&
	       (data[1].effective & (1u << (CAP_PERFMON - 32)));
}

int session_exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

void session_finding(void *ctx, enum finding_event ev, const struct tracked_finding *t)
{
	struct session *s = ctx;
	const struct finding *f = &t->f;
	uint64_t now = s->snap.now_ns;
	char conn[128] = "";
	json_t *rec;

	if (ev != FINDING_UPDATE)
		s->last_change_ns = now;

	if (f->conn >= 0 && f->conn < s->snap.nconns)
		fmt_tuple(&s->snap.conns[f->conn].c.t, conn, sizeof(conn));
	rec = finding_to_json(t, ev, now, conn[0] ? conn : NULL);
	json_object_set_new(rec, "realtime_ns", json_integer((json_int_t)clock_real_ns()));
	session_dump(s, rec);
	if (ev == FINDING_OPEN) {
		s->nfindings++;
		s->snapshot_now = true;
	}
	console_finding(stderr, ev, t, now);
}

static void on_identity(void *ctx, int pid, const struct model_proc_info *pi)
{
	struct session *s = ctx;

	for (int i = 0; i < pi->nenv; i++)
		/* CUDA_LAUNCH_BLOCKING: 2.18 reads it with getenv, unprobed (ncclshres.c) */
		if (!strncmp(pi->env[i].key, "NCCL_", 5) ||
		    !strcmp(pi->env[i].key, "CUDA_LAUNCH_BLOCKING"))
			nccl_state__env(s->nstate, pid, pi->env[i].key, pi->env[i].val);
	session_dump(s, record_identity(pid, pi, clock_mono_ns()));
	pr_info("pid %d is rank %d of %d (from %s)\n", pid, pi->ri.rank, pi->ri.world_size,
		pi->ri.source);
}

static void on_nccl_lib(void *ctx, int slot, const struct nccl_lib *lib, const char *err)
{
	struct session *s = ctx;

	if (slot < 0) {
		pr_warn("%s; NCCL phases are not traced, socket-level tracing continues\n", err);
		return;
	}
	session_dump(s, record_nccl_lib(slot, lib, clock_mono_ns()));
	if (lib->offs.lib_kind == NT_LIB_VERBS) {
		pr_info("libibverbs at %s: %d probes\n", lib->path, lib->resolved);
		return;
	}
	pr_info("NCCL %s at %s: %d probes, offsets from %s\n",
		lib->version[0] ? lib->version : "(version unknown)", lib->path, lib->resolved,
		nccl_offsets_source_name(lib->offs_src));
	if (lib->missing_core)
		pr_warn("%s: %d core NCCL probe%s missing (stripped library?); those phases are "
			"not "
			"traced ('nccltrace probes %s' lists them)\n",
			lib->path, lib->missing_core, lib->missing_core == 1 ? "" : "s", lib->path);
	if (lib->offs_src == OFFS_NONE)
		pr_warn("%s: no DWARF and an unknown build: struct fields are not read "
			"(arguments only)\n",
			lib->path);
}

static void on_nccl_attached(void *ctx, int pid, int slot, int nprobes, int nfailed)
{
	struct session *s = ctx;

	session_dump(s, record_nccl_attach(pid, slot, nprobes, nfailed, clock_mono_ns()));
	if (nfailed)
		pr_warn("pid %d: %d NCCL probe%s could not be attached (-vv says why)\n", pid,
			nfailed, nfailed == 1 ? "" : "s");
}

static const struct nt_nccl_offsets *lib_offsets(void *ctx, int slot)
{
	const struct nccl_lib *lib = nccl_attach__lib(((struct session *)ctx)->nccl, slot);

	return lib ? &lib->offs : NULL;
}

static int conn_from_map(void *ctx, uint64_t sk, const struct nt_conn *c)
{
	session_conn_update(ctx, sk, c, false);
	return 0;
}

static void check_losses(struct session *s)
{
	uint64_t lost;

	if (tracer__stats(s->tracer, s->stats))
		return;
	lost = s->stats[NT_STAT_RB_DROP] + s->stats[NT_STAT_CONN_FULL] +
	       s->stats[NT_STAT_TRACED_FULL];
	if (lost > s->told_drops) {
		pr_warn("lost events so far: %llu ring-buffer drops, %llu connections and %llu "
			"processes not tracked (maps full)\n",
			(unsigned long long)s->stats[NT_STAT_RB_DROP],
			(unsigned long long)s->stats[NT_STAT_CONN_FULL],
			(unsigned long long)s->stats[NT_STAT_TRACED_FULL]);
		s->told_drops = lost;
	}
	lost = s->stats[NT_STAT_SUPP_PROC] + s->stats[NT_STAT_SUPP_CONN] +
	       s->stats[NT_STAT_SUPP_NCCL];
	if (lost > s->told_suppressed) {
		pr_warn("records over the budget of %u NCCL records a second per process (a "
			"quarter "
			"of that for TCP and process ones) so far, counted, not written: %llu "
			"NCCL, "
			"%llu TCP, %llu process\n",
			s->opts.budget ? s->opts.budget : NT_BUDGET_DEFAULT,
			(unsigned long long)s->stats[NT_STAT_SUPP_NCCL],
			(unsigned long long)s->stats[NT_STAT_SUPP_CONN],
			(unsigned long long)s->stats[NT_STAT_SUPP_PROC]);
		s->told_suppressed = lost;
	}
}

/*
 * Quiet mode: the per-call TCP hooks (a few hundred ns per socket call) come off while NCCL's
 * counters say everything moves, and come back at the first tick that says otherwise.
 */
static void quiet_step(struct session *s, uint64_t now)
{
	bool off = diagnose_quiet(&s->snap, &s->diag, findings_open_count(&s->findings), &s->quiet);

	if (off == !tracer__data_hooks_on(s->tracer))
		return;
	if (tracer__set_data_hooks(s->tracer, !off)) {
		s->quiet.off = !off; /* the hooks stay as they are */
		return;
	}
	if (!off)
		s->tcp_resumed_ns = now;
	pr_info("%s\n", off ? "quiet: every communicator moves; per-call TCP hooks off"
			    : "quiet ends: per-call TCP hooks back on");
	session_dump(s, record_tcp_hooks(now, !off,
					 off ? "every communicator's collectives moving, no rank "
					       "in setup"
					     : s->quiet.why_on));
}

static int each_stack(void *ctx, int (*fn)(void *, int, const struct nt_phase_stack *), void *fnctx)
{
	struct session *s = ctx;

	return tracer__each_stack(s->tracer, fn, fnctx);
}

static void dump_record(void *ctx, json_t *rec)
{
	session_dump(ctx, rec);
}

/* NCCL's name for a connection: from its socket call's record, else its creator's phase */
static const char *conn_label(const struct session *s, int pid, const struct nt_conn *c)
{
	const char *l = nccl_state__socket_label(s->nstate, pid, c->ino);

	return l ? l : nccl_conn_phase_label(c->nccl_phase);
}

/* What the NCCL probes tell, into the snapshot: phases, setup, settings, labels, counters. */
static void nccl_snapshot(struct session *s, uint64_t now)
{
	nccl_state__sample_stacks(s->nstate, now, each_stack, s);
	for (int i = 0; i < s->snap.nprocs; i++) {
		struct snap_proc *p = &s->snap.procs[i];

		if (!p->exited && !nccl_attach__has(s->nccl, p->pid))
			nccl_attach__scan(s->nccl, p->pid);
		p->nccl = nccl_attach__has(s->nccl, p->pid);
		if (p->nccl && !p->exited)
			nccl_attach__first(
				s->nccl, p->pid,
				nccl_state__first_window(s->nstate, p->pid, FIRST_CALLS));
	}
	/*
	 * The profiler plugin's counts first: the rank comparison below uses them, and a
	 * process's setup from the plugin ("nothing launched yet") must not be a tick older
	 * than its uprobes, which would keep a rank that has connected and launched in setup
	 */
	nccl_state__sample_prof(s->nstate, s->snap.procs, s->snap.nprocs, now, dump_record, s);
	for (int i = 0; i < s->snap.nprocs; i++) {
		struct snap_proc *p = &s->snap.procs[i];

		nccl_state__phase(s->nstate, p->pid, &p->nccl_since_ns, p->nccl_phase,
				  sizeof(p->nccl_phase));
		p->nccl_setup = nccl_state__setup(s->nstate, p->pid, &p->nccl_setup_since_ns);
		p->nccl_setup_at_attach =
			p->nccl_setup && nccl_state__setup_at_attach(s->nstate, p->pid);
		p->nccl_setup_seen_ns =
			nccl_state__setup_seen(s->nstate, p->pid, p->nccl_setup, now);
		nccl_state__proc_snap(s->nstate, p);
	}
	for (int i = 0; i < s->snap.nconns; i++) {
		struct snap_conn *c = &s->snap.conns[i];
		const char *label = conn_label(s, c->pid, &c->c);
		c->ras = label && strncmp(label, "ras", 3) == 0;
		c->nccl_label = label;
	}
	nccl_state__sample(s->nstate, now);
	s->snap.ncomms = nccl_state__comms(s->nstate, &s->snap.comms);
	session_log_tick(s, now);
}

/* The tick's period, now */
static void set_tick(struct session *s, uint64_t tick)
{
	struct itimerspec its = {
		.it_interval = {.tv_nsec = (long)tick},
		.it_value = {.tv_nsec = (long)tick},
	};

	if (tick != s->tick_ns && !timerfd_settime(s->tfd, 0, &its, NULL))
		s->tick_ns = tick;
}

/*
 * The job's rhythm, into the snapshot (the adaptive threshold reads it); and the tick at 100 ms
 * while anything moves that fast, so that its gaps are measured finely enough to give 1 s.
 */
static void learn_rhythm(struct session *s, uint64_t now)
{
	bool fast = false;

	rhythms_learn(&s->rhythms, &s->snap, s->tick_ns);
	if (now - s->last_sweep_ns >= SWEEP_EVERY_NS) {
		rhythms_sweep(&s->rhythms);
		s->last_sweep_ns = now;
	}
	if (!s->diag.adapt_k) {
		set_tick(s, TICK_NS);
		return;
	}
	fast = now - s->start_ns < FAST_FIRST_NS;
	for (int i = 0; i < s->snap.ncomms && !fast; i++)
		fast = s->snap.comms[i].gap_p99_ns && s->snap.comms[i].gap_p99_ns <= FAST_GAP_NS;
	for (int i = 0; i < s->snap.nconns && !fast; i++)
		fast = s->snap.conns[i].gap_p99_ns && s->snap.conns[i].gap_p99_ns <= FAST_GAP_NS;
	set_tick(s, fast ? FAST_TICK_NS : TICK_NS);
}

/* the ranks' GPUs into the snapshot; sampled at once when a finding has opened */
static void session_gpu_tick(struct session *s, uint64_t now)
{
	int open = findings_open_count(&s->findings);
	const char *st = gpuwatch_status(s->gpu);

	gpuwatch_tick(s->gpu, &s->snap, now, open > s->open_before);
	s->open_before = open;
	if (*st && strcmp(st, s->gpu_told)) {
		pr_info("GPUs: %s\n", st);
		snprintf(s->gpu_told, sizeof(s->gpu_told), "%s", st);
	}
}

void session_tick(struct session *s, bool force_snapshot)
{
	uint64_t now;
	int n;

	tracer__poll(s->tracer);
	model__conns_walk_begin(s->model);
	tracer__each_conn(s->tracer, conn_from_map, s);
	now = clock_mono_ns();
	model__conns_walk_end(s->model, now);
	if (s->attached)
		session_seeds_tick(s, now);
	model__refresh(s->model, now, on_identity, s);
	model__snapshot(s->model, now, &s->snap);
	s->snap.tcp_quiet = !tracer__data_hooks_on(s->tracer);
	s->snap.tcp_resumed_ns = s->tcp_resumed_ns;
	s->snap.job_over = s->job_exited;
	if (!tracer__stats(s->tracer, s->stats)) {
		s->snap.records_lost = s->stats[NT_STAT_RB_DROP];
		s->snap.records_suppressed = s->stats[NT_STAT_SUPP_PROC] +
					     s->stats[NT_STAT_SUPP_CONN] +
					     s->stats[NT_STAT_SUPP_NCCL];
	}
	nccl_snapshot(s, now);
	/* read until the next tick, between whose records NCCL's tables move */
	snapshot_own(&s->snap, &s->snap_own);
	session_gpu_tick(s, now);
	/*
	 * the phase stacks (BPF) and the ranks' memory were read after now: no time of theirs is
	 * later (the connection map was read before it)
	 */
	snapshot_clamp_procs(&s->snap);
	learn_rhythm(s, now);
	stackwatch_attach(s->stackw, &s->snap);
	n = diagnose(&s->snap, &s->diag, s->found, s->found ? MAX_FINDINGS : 0);
	if (stackwatch_step(s, s->found, n))
		n = diagnose(&s->snap, &s->diag, s->found, s->found ? MAX_FINDINGS : 0);
	findings_update(&s->findings, s->found, n, now, session_finding, s);
	/*
	 * all that diagnose() read, for a merged report of several hosts' dumps and a replay: at the
	 * tick a finding opened too (snapshot_now), so that either sees what this tracer saw then,
	 * not up to a second later
	 */
	if (force_snapshot || s->snapshot_now ||
	    record_state_due(&s->snap, findings_open_count(&s->findings), s->last_state_ns)) {
		session_state(s, force_snapshot);
		s->last_state_ns = now;
	}
	quiet_step(s, now);
	/* each second; while the job is calm into the dump's ring (sessiondump.c) */
	if (session_snapshot(s, now, force_snapshot))
		check_losses(s);
	session_dump_tick(s, now);
	if (s->tui && now - s->last_draw_ns >= DRAW_EVERY_NS)
		livetui_draw(s, true);
	/* its connections' timeouts */
	listener__serve(s->listen);
}

static int on_event(void *ctx, const void *data, size_t size)
{
	struct session *s = ctx;
	const struct nt_ev_hdr *h = data;

	if (h->type == NT_EV_FORK || h->type == NT_EV_EXEC || h->type == NT_EV_EXIT) {
		const struct nt_ev_proc *e = data;
		char comm[NT_COMM_LEN + 1] = "";

		if (size < sizeof(*e))
			return 0;
		memcpy(comm, e->comm, NT_COMM_LEN);
		if (h->type == NT_EV_FORK) {
			model__proc_add(s->model, e->pid, e->ppid, comm, h->ts_ns);
			session_dump(s, record_proc_event(e, "fork"));
			nccl_attach__proc(s->nccl, e->pid);
		} else if (h->type == NT_EV_EXEC) {
			model__proc_exec(s->model, e->pid, comm);
			session_dump(s, record_proc_event(e, "exec"));
			if (s->logs)
				nccl_logs__exec(s->logs, e->pid);
		} else {
			model__proc_exit(s->model, e->pid, e->exit_code, h->ts_ns);
			session_dump(s, record_proc_event(e, "exit"));
			if (s->logs)
				nccl_logs__exit(s->logs, e->pid);
			nccl_attach__exit(s->nccl, e->pid);
		}
	} else if (h->type == NT_EV_NCCL) {
		if (size >= sizeof(struct nt_ev_nccl))
			session_dump(s, nccl_state__event(s->nstate, data));
	} else if (h->type == NT_EV_POLL) {
		if (size >= sizeof(struct nt_ev_poll))
			session_dump(s, nccl_state__poll_event(s->nstate, data));
	} else if (h->type == NT_EV_CONN_STATE || h->type == NT_EV_RETRANS ||
		   h->type == NT_EV_RESET) {
		const struct nt_ev_conn *e = data;

		if (size < sizeof(*e))
			return 0;
		session_conn_update(s, e->sk, &e->c,
				    h->type == NT_EV_CONN_STATE && e->newstate == 7 /* CLOSE */);
		if (!record_conn_event_kept(h->type, e))
			return 0;
		session_dump(s, record_conn_event(e, conn_label(s, e->c.tgid, &e->c)));
	}
	return 0;
}

/* Reap the job if it is done; true once it is. */
static bool reap_job(struct session *s)
{
	int status;
	pid_t r;

	/* attach: the job is no child of ours; it is over when none of its processes lives */
	if (s->attached) {
		s->job_exited = model__live_procs(s->model) == 0;
		return s->job_exited;
	}
	do {
		r = waitpid(s->job.pid, &status, WNOHANG);
	} while (r < 0 && errno == EINTR);
	/* a stop, not an exit: the job's process is a thread whose stack is being taken */
	if (r == s->job.pid && WIFSTOPPED(status)) {
		stackwatch_note_stop(s->stackw, r, status);
		return false;
	}
	if (r == s->job.pid) {
		s->job_exited = true;
		s->job_status = status;
		return true;
	}
	if (r < 0 && errno == ECHILD) {
		s->job_exited = true;
		return true;
	}
	return false;
}

static void on_signal(struct session *s)
{
	struct signalfd_siginfo si;

	if (read(s->sfd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGCHLD) {
		reap_job(s);
		stackwatch_poll(s->stackw);
	} else if (si.ssi_signo == SIGWINCH) {
		if (s->tui) {
			tui__resize(s->tui);
			livetui_draw(s, false);
		}
	} else if (si.ssi_signo == SIGUSR1) {
		session_tick(s, true);
	} else if (s->attached) {
		/* never the job's: a job nccltrace did not start is not nccltrace's to signal */
		pr_info("signal %d: detaching\n", si.ssi_signo);
		s->detached = true;
	} else {
		pr_info("forwarding signal %d to the job\n", si.ssi_signo);
		launcher_signal(&s->job, si.ssi_signo);
	}
}

/* The audit module in pid: the loader mapped an NCCL or verbs library at path, and waits. */
static void on_loaded(void *ctx, int pid, const char *path)
{
	struct session *s = ctx;

	/* its fork is in the ring buffer: the model must know it to be one of the job's */
	tracer__poll(s->tracer);
	if (!model__proc_info(s->model, pid)) {
		pr_debug("pid %d asked to have %s probed, but is not traced\n", pid, path);
		return;
	}
	pr_debug("pid %d is loading %s: probing it now\n", pid, path);
	session_dump(s, json_pack("{s:s, s:I, s:i, s:s}", "type", "nccl_load", "ts_ns",
				  (json_int_t)clock_mono_ns(), "pid", pid, "path", path));
	nccl_attach__loaded(s->nccl, pid, path);
}

/* a timer tick taken: how late after the one before (the footer's tick figures) */
static void timer_seen(struct session *s)
{
	uint64_t now = clock_mono_ns(), gap = s->timer_last_ns ? now - s->timer_last_ns : 0;

	s->timer_ticks++;
	if (gap > s->tick_ns + s->tick_ns / 2)
		s->timer_late++;
	if (gap > s->timer_gap_max_ns)
		s->timer_gap_max_ns = gap;
	s->timer_last_ns = now;
}

void session_loop(struct session *s)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = {.events = EPOLLIN};

	if (ep < 0)
		return;
	ev.data.fd = s->sfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, s->sfd, &ev);
	ev.data.fd = s->tfd;
	epoll_ctl(ep, EPOLL_CTL_ADD, s->tfd, &ev);
	ev.data.fd = tracer__ringbuf_fd(s->tracer);
	epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	if (s->tui) {
		ev.data.fd = tui__input_fd(s->tui);
		epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	if (s->audit) {
		ev.data.fd = audit_sock__fd(s->audit);
		epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}
	if (s->listen) {
		ev.data.fd = listener__fd(s->listen);
		epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev);
	}

	while (!s->job_exited && !s->detached) {
		struct epoll_event evs[4];
		int n;

		if (s->stop_at_ns && clock_mono_ns() >= s->stop_at_ns)
			break;
		n = epoll_wait(ep, evs, 4, 1000);

		if (n < 0 && errno != EINTR)
			break;
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == s->tfd) {
				uint64_t exp;

				if (read(s->tfd, &exp, sizeof(exp)) > 0) {
					timer_seen(s);
					session_tick(s, false);
				}
			} else if (fd == s->sfd) {
				on_signal(s);
			} else if (s->tui && fd == tui__input_fd(s->tui)) {
				if (!livetui_keys(s))
					break;
			} else if (fd == audit_sock__fd(s->audit)) {
				audit_sock__serve(s->audit, on_loaded, s);
			} else if (s->listen && fd == listener__fd(s->listen)) {
				listener__serve(s->listen);
			} else {
				tracer__poll(s->tracer);
			}
		}
		if (!s->job_exited)
			reap_job(s);
	}
	close(ep);
}

/* The signals the session reads from its signalfd, blocked from the start */
static void session_sigset(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGCHLD);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
	sigaddset(mask, SIGQUIT);
	sigaddset(mask, SIGUSR1);
	sigaddset(mask, SIGWINCH);
}

int session_block_signals(void)
{
	sigset_t mask;

	session_sigset(&mask);
	return sigprocmask(SIG_BLOCK, &mask, NULL) ? -errno : 0;
}

int session_stop_pending(void)
{
	static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	sigset_t pending;

	if (sigpending(&pending))
		return 0;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		if (sigismember(&pending, stops[i]) == 1)
			return stops[i];
	return 0;
}

int session_signals(struct session *s)
{
	struct itimerspec its = {
		.it_interval = {.tv_nsec = TICK_NS},
		.it_value = {.tv_nsec = TICK_NS},
	};
	sigset_t mask;

	session_sigset(&mask);
	if (sigprocmask(SIG_BLOCK, &mask, NULL))
		return -errno;
	s->sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	if (s->sfd < 0)
		return -errno;
	s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	if (s->tfd < 0 || timerfd_settime(s->tfd, 0, &its, NULL))
		return -errno;
	s->tick_ns = TICK_NS;
	set_tick(s, FAST_TICK_NS); /* learn_rhythm slows it where nothing is fast */
	return 0;
}

/* The BPF side, loaded and attached in the first mode that works here. 0 or an exit status. */
static int open_tracer(struct session *s)
{
	struct tracer_opts topts = {.mode = s->opts.mode,
				    .on_event = on_event,
				    .ctx = s,
				    .budget_per_s = s->opts.budget,
				    .ringbuf_bytes = s->opts.ringbuf_kb * 1024};
	struct nccl_attach_cb cb = {.lib = on_nccl_lib, .attached = on_nccl_attached, .ctx = s};
	struct nt_verbs_offsets vo;
	char err[512];
	int rc;

	verbs_offsets_fill(&vo);
	topts.verbs = &vo;
	rc = tracer__open(&topts, &s->tracer, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "nccltrace: %s\n", err);
		return rc == -EPERM ? EXIT_NOPERM : EXIT_UNAVAILABLE;
	}
	pr_info("attach mode: %s\n", tracer_mode_name(tracer__mode(s->tracer)));
	if (tracer__mode_notes(s->tracer)[0])
		pr_info("modes tried first: %s\n", tracer__mode_notes(s->tracer));
	if (tracer__missing_hooks(s->tracer)[0])
		pr_info("optional hooks not available: %s\n", tracer__missing_hooks(s->tracer));
	s->nccl = nccl_attach__new(s->tracer, s->opts.collectives, &cb);
	s->nstate = nccl_state__new(lib_offsets, s);
	if (!s->nccl || !s->nstate) {
		fprintf(stderr, "nccltrace: out of memory\n");
		return EXIT_OSERR;
	}
	return 0;
}

/*
 * What the job's environment gets from nccltrace, where the job does not set it itself: each
 * evidence source that needs the job's cooperation (NCCL's profiler plugin, NCCL's own log)
 * adds its variables here.
 */
static void job_env(struct session *s, const struct launch_creds *cr)
{
	const char *own = jobenv_job_value(s->opts.cmd, "NCCL_PROFILER_PLUGIN");
	char lib[PATH_MAX], name[112];
	int rc;

	/*
	 * The dynamic loader's audit interface: NCCL probed when it is mapped, before any of its
	 * code runs, whether linked at exec or dlopen'ed (else: found in the maps at a tick)
	 */
	rc = jobenv_lib("libnccltrace-audit.so", lib, sizeof(lib));
	if (!rc && cr->drop && !jobenv_readable_by(lib, cr->uid, cr->gid))
		rc = -EACCES;
	if (!rc)
		rc = audit_sock__open(&s->audit, name, sizeof(name));
	if (rc)
		pr_info("no loader audit (%s): NCCL is probed when a tick finds it mapped\n",
			strerror(-rc));
	else if (!jobenv_default(&s->env, s->opts.cmd, "LD_AUDIT", lib,
				 "probe NCCL as the dynamic loader maps it") ||
		 !jobenv_default(&s->env, s->opts.cmd, "NCCLTRACE_AUDIT", name,
				 "where the audit module asks"))
		pr_info("the job sets LD_AUDIT itself: NCCL is probed when a tick finds it "
			"mapped\n");
	/* NCCL loads one profiler plugin: the job's own wins, and the other sources remain */
	if (own)
		jobenv_note(&s->env,
			    "NCCL_PROFILER_PLUGIN=%.120s is the job's own: nccltrace's profiler "
			    "plugin is not loaded; collective counts come from the other sources",
			    own);
	else if (jobenv_lib(NTPROF_LIB, lib, sizeof(lib)))
		jobenv_note(&s->env,
			    "no NCCL profiler plugin at %.140s (keep it next to nccltrace, or set "
			    "NCCLTRACE_LIBDIR): collective counts come from the other sources",
			    lib);
	else if (jobenv_default(&s->env, s->opts.cmd, "NCCL_PROFILER_PLUGIN", lib,
				"NCCL's profiler plugin: collective counts and arguments on every "
				"NCCL build") &&
		 cr->drop && !jobenv_readable_by(lib, cr->uid, cr->gid))
		jobenv_note(&s->env,
			    "%.150s may not be readable by user %s: NCCL then runs without it", lib,
			    cr->user);
	/* NCCL's own log, where the job asks for none */
	session_log_env(s);
}

int session_open(struct session *s, const struct launch_creds *cr)
{
	struct record_header h = {.cmd = s->opts.cmd, .ncmd = s->opts.ncmd, .host = s->host};
	char ifaces[1024];
	char path[PATH_MAX];
	int rc;

	s->sfd = s->tfd = s->log_fd = s->saved_stderr = s->nccl_log_dirfd = -1;
	s->log.fd = -1;
	s->cr = *cr;
	s->model = model__new();
	s->stackw = stackwatch_new(s);
	if (!s->model || !s->stackw)
		return EXIT_OSERR;
	diag_config_init(&s->diag, s->opts.stall_threshold_s);
	s->diag.min_threshold_ns = (uint64_t)(s->opts.min_threshold_s * 1e9);
	if (s->opts.fixed_threshold)
		s->diag.adapt_k = 0;
	if (s->opts.tcp_always)
		s->diag.quiet_hold_ns = 0;
	findings_init(&s->findings, NT_NSEC_PER_SEC, 5 * NT_NSEC_PER_SEC);
	/* a finding lists every waiter of thousands of ranks: too big for the stack */
	s->found = calloc(MAX_FINDINGS, sizeof(*s->found));
	if (!s->found)
		return EXIT_OSERR;
	rc = open_tracer(s);
	if (rc)
		return rc;
	if (s->opts.dump_path) {
		snprintf(path, sizeof(path), "%s", s->opts.dump_path);
		rc = dump__create(path, cr->drop, cr->uid, cr->gid, &s->dump);
	} else {
		char job[64];
		time_t t0 = time(NULL);

		dump_job_id(job, sizeof(job), getenv("SLURM_JOB_ID"), getenv("TORCHELASTIC_RUN_ID"),
			    s->opts.cmd, s->opts.ncmd);
		/* a name of its own: runs in the same second and directory count up (O_EXCL) */
		rc = -EEXIST;
		for (int seq = 1; rc == -EEXIST && seq <= DUMP_NAME_TRIES; seq++) {
			dump_default_name(path, sizeof(path), s->host, job, t0, seq);
			rc = dump__create(path, cr->drop, cr->uid, cr->gid, &s->dump);
		}
	}
	if (rc) {
		fprintf(stderr, "nccltrace: cannot create trace dump %s: %s%s\n", path,
			strerror(-rc),
			rc == -EEXIST ? " (it is never overwritten: choose another --dump)" : "");
		return EXIT_CANTCREAT;
	}
	snprintf(s->dump_path, sizeof(s->dump_path), "%s", path);
	dump__set_budget(s->dump, s->opts.max_dump_bytes);
	session_ring_scale(s);
	rc = session_listen_open(s);
	if (rc)
		return rc;
	h.mono_ns = clock_mono_ns();
	h.realtime_ns = clock_real_ns();
	h.tracer_pid = getpid();
	h.attach_mode = tracer_mode_name(tracer__mode(s->tracer));
	h.attach_notes = tracer__mode_notes(s->tracer);
	h.missing_hooks = tracer__missing_hooks(s->tracer);
	h.stall_threshold_s = s->opts.stall_threshold_s;
	host_iface_list(ifaces, sizeof(ifaces));
	h.ifaces = ifaces;
	host_loopback_id(s->loopback, sizeof(s->loopback));
	h.loopback = s->loopback;
	h.setup_cpu_s = session_cpu_seconds();
	/* a job already running keeps the environment it has: its own log files are read */
	if (!s->attached)
		job_env(s, cr);
	else
		session_log_own(s);
	h.env = &s->env;
	session_dump(s, record_header(&h));
	/* the GPUs' helper once the dump is there: a signal now still leaves a whole dump */
	s->gpu = gpuwatch_open(jobenv_lib("nccltrace-nvml", path, sizeof(path)) ? NULL : path,
			       clock_mono_ns());
	for (int i = 0; i < s->env.n; i++)
		pr_info("job environment: %s=%s (%s)\n", s->env.v[i].name, s->env.v[i].value,
			s->env.v[i].why);
	for (int i = 0; i < s->env.nnotes; i++)
		pr_warn("%s\n", s->env.notes[i]);
	if (s->opts.nccl_lib &&
	    nccl_attach__add_lib(s->nccl, s->opts.nccl_lib, path, sizeof(path))) {
		fprintf(stderr, "nccltrace: --nccl-lib: %s\n", path);
		return EXIT_NOINPUT;
	}
	return 0;
}

void session_close(struct session *s)
{
	livetui_stop(s);
	listener__close(s->listen);
	session_listen_free(s);
	audit_sock__close(s->audit);
	if (s->sfd >= 0)
		close(s->sfd);
	if (s->tfd >= 0)
		close(s->tfd);
	session_log_close(s);
	dump__close(s->dump);
	held_snapshot_free(s->last_held);
	nccl_attach__free(s->nccl);
	nccl_state__free(s->nstate);
	tracer__close(s->tracer);
	findings_free(&s->findings);
	rhythms_free(&s->rhythms);
	free(s->found);
	stackwatch_free(s->stackw);
	snap_owned_free(&s->snap_own);
	gpuwatch_close(s->gpu);
	sockseeds_free(&s->seeds);
	model__free(s->model);
}
