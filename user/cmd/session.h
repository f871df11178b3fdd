/* SPDX-License-Identifier: MIT */
/*
 * A tracing session: the BPF side, the job's model, the NCCL probes and their state, the
 * findings and the dump, driven by one epoll loop (ring buffer, signalfd, a 200 ms timer, the
 * dashboard's keys). Each tick turns the kernel's counters and /proc into a snapshot, runs
 * diagnose() on it and tells what it found on stderr, in the dump and on the dashboard.
 */
#ifndef NT_SESSION_H
#define NT_SESSION_H

#include <limits.h>
#include <stdbool.h>
#include "cmd/cli.h"
#include "cmd/listen.h"
#include "diagnose/diagnose.h"
#include "diagnose/findings.h"
#include "model/model.h"
#include "model/rhythm.h"
#include "model/sockseed.h"
#include "nccl/ncclattach.h"
#include "nccl/nccllogs.h"
#include "nccl/ncclstate.h"
#include "present/dashboard.h"
#include "present/dump.h"
#include "present/logtail.h"
#include "present/tui.h"
#include "trace/auditsock.h"
#include "trace/jobenv.h"
#include "trace/launcher.h"
#include "trace/tracer.h"

struct stackwatch;

struct session {
	struct run_opts opts;
	struct tracer *tracer;
	struct model *model;
	struct nccl_attach *nccl;
	struct nccl_state *nstate;
	struct dump *dump;
	struct findings findings;
	struct finding *found; /* what diagnose() says at a tick (MAX_FINDINGS) */
	struct diag_config diag;
	struct job job;
	struct jobenv env;	  /* what nccltrace adds to the job's environment */
	struct audit_sock *audit; /* the job's processes say which NCCL they load */
	struct launch_creds cr;	  /* the job's user */
	struct nccl_logs *logs;	  /* NCCL's own log files, NULL: none read */
	int nccl_log_dirfd;	  /* the directory nccltrace made for them, -1: none */
	char nccl_log_dir[PATH_MAX];
	bool job_exited;
	int job_status;
	int sfd, tfd; /* signalfd and the tick's timerfd */
	uint64_t last_snapshot_ns;
	uint64_t last_kept_ns;	 /* the last snapshot written, or held to be written */
	uint64_t last_change_ns; /* a finding opened or closed, 0: none yet */
	uint64_t last_state_ns;	 /* the last state record (record_state_due) */
	uint64_t stats[NT_STAT_MAX];
	uint64_t told_drops;
	uint64_t told_suppressed; /* records over the budget, as last warned */
	bool dump_failed;
	uint64_t dump_cpu_ns;		 /* the tracer's CPU on the dump's frames (sessiondump.c) */
	struct held_snapshot *last_held; /* the last second held, shared from (records.h) */
	uint64_t nfindings;
	struct snapshot snap;	    /* the latest, for the finding callback */
	struct snap_owned snap_own; /* what snap owns until the next tick (snapshot_own) */
	/* the dashboard, when stdout is a terminal */
	struct tui *tui;
	struct dashboard *dash;
	const struct tui_model *shown;
	struct logtail log;
	char log_path[PATH_MAX + 8];
	int log_fd;
	int saved_stderr;
	uint64_t start_ns, last_draw_ns;
	struct quiet quiet;	/* quiet mode: the per-call TCP hooks off while NCCL moves */
	struct rhythms rhythms; /* the job's rhythm, for the adaptive threshold */
	uint64_t tick_ns;	/* the tick now: 100 ms while a rhythm is that fast, else 200 */
	/*
	 * the timer's ticks as the loop took them, for the footer: how many, those that came
	 * over 1.5 periods after the one before (the loop was busy elsewhere), the longest gap;
	 * and the pages served (--listen) with the time spent making them
	 */
	uint64_t timer_last_ns, timer_ticks, timer_late, timer_gap_max_ns;
	uint64_t pages, page_ns, page_max_ns; /* pages made (not answers: see page_cache) */
	struct page_cache {
		char *body;   /* made from the snapshot of snap_ns, job_over as it was then */
		json_t *json; /* /state's, for the answers to ?since= (present/statedelta.h) */
		uint64_t snap_ns, seq;
		bool job_over;
	} page[2];		     /* /state, /metrics */
	struct state_deltas *deltas; /* NULL until a client sends ?since= */
	uint64_t last_sweep_ns;
	bool snapshot_now;	 /* a finding opened: a full snapshot record at this tick */
	uint64_t tcp_resumed_ns; /* when they last came back on */
	bool detached;
	/*
	 * attach: the job ran before nccltrace (job.pid is its launcher, no child of ours); its
	 * sockets' ages from sock_diag; once: stop tracing at stop_at_ns
	 */
	bool attached;
	struct sockseeds seeds;
	uint64_t stop_at_ns;
	struct stackwatch *stackw; /* stacks of waiting threads (stackwatch.c), NULL: none */
	char cmdline[256];
	char host[256];
	char dump_path[PATH_MAX];
	struct listener *listen; /* --listen: /metrics and /state, NULL: off */
	char loopback[128];	 /* host_loopback_id(), for merges across tracers */
	struct gpuwatch *gpu;	 /* the ranks' GPUs (trace/gpuwatch.c) */
	char gpu_told[200];	 /* its status, as last logged */
	int open_before;	 /* findings open at the last tick: more now, a GPU sample */
};

/*
 * The BPF side loaded and attached, the dump created (owned by cr's user) with its header, the
 * NCCL probes ready. 0, or an exit status with the one-line reason printed.
 */
int session_open(struct session *s, const struct launch_creds *cr);
/* Everything released; the dump is closed as it stands. */
void session_close(struct session *s);
/* Block the signals the loop reads, make the signalfd and the tick's timer. 0 or -errno. */
int session_signals(struct session *s);
/*
 * Block the session's signals before anything else (the BPF load and attach take a second, more
 * under the sanitizers): a SIGTERM then waits for the signalfd instead of killing the tracer
 * with the dump unfinished. 0 or -errno.
 */
int session_block_signals(void);
/* the tracer's CPU time so far (user + system), in seconds */
double session_cpu_seconds(void);
/* A signal that stops tracing (INT, TERM, HUP, QUIT) already pending, or 0 */
int session_stop_pending(void);
/* One record into the dump (taken over, NULL is ignored). */
void session_dump(struct session *s, json_t *rec);
/*
 * This tick's snapshot record, if one is due (a second since the last; force: now), written
 * at once or held in the dump's ring (sessiondump.c); true when one was taken
 */
bool session_snapshot(struct session *s, uint64_t now, bool force);
/* the state record (records.h record_state): a calm stretch's unless force or a finding is open */
void session_state(struct session *s, bool force);
/* a compressed dump's frame of the last second's records (dump__tick) */
void session_dump_tick(struct session *s, uint64_t now);
/*
 * the dump's ring written out before the footer: whole, or where the job ended clean (its
 * processes' exit status 0, no finding open) only the frames its calm rate keeps
 */
void session_ring_end(struct session *s);
/* NCCLTRACE_RING_S: the tests' shorter ring and calm rate */
void session_ring_scale(struct session *s);
/* A finding opened, changed or closed: the dump, stderr, the count. */
void session_finding(void *ctx, enum finding_event ev, const struct tracked_finding *t);
/* Read everything, diagnose, tell; force_snapshot: a snapshot record now. */
void session_tick(struct session *s, bool force_snapshot);
/* The loop, until the job exits or tracing is stopped (s->detached). */
void session_loop(struct session *s);
/* The footer: lost events, totals, the exit status (-1: the job still runs). */
void session_footer(struct session *s, int exit_status);

/* A wait(2) status as an exit status: its code, or 128+N for signal N */
int session_exit_code(int status);
/* CAP_BPF and CAP_PERFMON (or root): what loading nccltrace's programs needs */
bool session_privileged(void);

/* attachsocks.c: the sockets a job had before the attach (sock_diag) */
/* The connections of processes pids[0..n) from the kernel's view, seeded; how many, or -errno. */
int session_seed_sockets(struct session *s, const int *pids, int n);
/*
 * attachcomms.c: the communicators of processes pids[0..n) from before the attach, found in
 * their memory; how many were new, and in *took_ns the longest one process's scan took.
 */
int session_scan_comms(struct session *s, const int *pids, int n, uint64_t *took_ns);
/* A connection from the conns map or an event, with its seed applied, into the model. */
void session_conn_update(struct session *s, uint64_t sk, const struct nt_conn *c, bool closed);
/* Each tick: the seeded connections no call has touched yet, as sock_diag sees them now. */
void session_seeds_tick(struct session *s, uint64_t now);
/* sessionlisten.c: --listen's pages; 0 (also when it is off) or an exit status, said why */
int session_listen_open(struct session *s);
/* the pages kept for the answers until the next tick, freed */
void session_listen_free(struct session *s);

/* sessionlog.c: NCCL's own log as an evidence source */
/* Turn it on for the job (from job_env()), where the job sets none of its own. */
void session_log_env(struct session *s);
/* attach: only the log files the job's processes set themselves (NCCL_DEBUG_FILE) are read. */
void session_log_own(struct session *s);
/* Follow the processes' log files; their facts into the snapshot (from nccl_snapshot()). */
void session_log_tick(struct session *s, uint64_t now);
void session_log_close(struct session *s);

/* livetui.c: the dashboard, when stdout is a terminal */
/* The job's output (and nccltrace's messages) to a log file next to the dump; plain if not. */
void livetui_start(struct session *s, const struct launch_creds *cr);
/* The terminal back; the findings again on it. */
void livetui_stop(struct session *s);
/* fresh: build the picture from the latest snapshot, else draw the one shown again */
void livetui_draw(struct session *s, bool fresh);
/* The keys typed; false once tracing should stop. */
bool livetui_keys(struct session *s);

#endif /* NT_SESSION_H */
