/* SPDX-License-Identifier: MIT */
/*
 * Inside diagnose/: the rule families diagnose() runs in order, and the helpers they share to
 * build findings. Not for other rooms: they see diagnose.h and finding.h only.
 */
#ifndef NT_RULES_H
#define NT_RULES_H

#include "diagnose/diagnose.h"

#define TCP_SYN_SENT   2
#define TCP_CLOSE_WAIT 8

/*
 * Each family adds its findings to out[0..*n) (at most max in all), and may drop or take over
 * the ones an earlier family made about the same process.
 */

/* waits.c: socket wait-for chains to their culprit */
void wait_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		   int *n, int max);
/* exits.c: the first abnormal exit; a death with the job's teardown, or too recent to tell */
void exit_findings(const struct snapshot *s, struct finding *out, int *n, int max);
bool torn_down(const struct snapshot *s, const struct snap_proc *p);
/*
 * threshold.c: the threshold of a wait on connection c, on communicator hash (the longest of
 * its members': the slowest rhythm among them decides), and what a finding's was and why
 */
uint64_t conn_threshold(const struct diag_config *cfg, const struct snap_conn *c);
uint64_t members_threshold(const struct snapshot *s, const struct diag_config *cfg, const int *mem,
			   int nm);
void threshold_evidence(const struct snapshot *s, const struct diag_config *cfg, struct finding *f);
/* colls.c: NCCL's collective counters; straggler.c: the rank last at each step */
void counters_outrank(const struct snapshot *s, struct finding *out, int *n);
/* wait cycles among members of a communicator that launched within its threshold: removed */
void cycles_moving(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		   int *n);
void coll_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		   int *n, int max);
void straggler_findings(const struct snapshot *s, const struct diag_config *cfg,
			struct finding *out, int *n, int max);

/* colls.c, for collmm.c and straggler.c: a communicator's members described */
#define COLL_DESC_LEN 80
/* "count 65536 float32", with the root (or peer) where the collective has one */
void coll_args(int coll, uint64_t count, int dtype, int root, char *buf, size_t len);
/*
 * What the members mem[0..nm) launched (per function or in all) and since when, as evidence:
 * one line per state shared, first_pid's first, the others as ranges
 */
void comm_evidence(const struct snapshot *s, struct finding *f, const int *mem, int nm,
		   int first_pid);
/* "rank 1" or "comm rank 1 (pid 4711)" */
void comm_member_name(const struct snapshot *s, const struct snap_comm *c, char *buf, size_t len);
/* of sig[0..nm), the rarest signature (ties: the smallest weight) */
int odd_signature(const int *sig, const uint64_t *weight, int nm);
/* when the members' counts last moved */
uint64_t members_moved(const struct snapshot *s, const int *mem, int nm);
/*
 * One mismatch finding for the communicator of members mem[0..nm): the odd ones (sig[k] ==
 * odd) against the others, what each is in (desc), since since; tail ends the summary
 */
struct finding *mismatch_finding(const struct snapshot *s, const int *mem, int nm, const int *sig,
				 int odd, char (*desc)[COLL_DESC_LEN], uint64_t since,
				 const char *tail, struct finding *out, int *n, int max);
/* collmm.c: the profiler plugin's latched mismatch among members all[0..nall); false if none */
bool latched_mismatch(const struct snapshot *s, const struct diag_config *cfg, const int *all,
		      int nall, struct finding *out, int *n, int max);
/* gpu.c: a rank's GPU that raised an Xid or an uncorrectable ECC error; outranks the rest */
void gpu_findings(const struct snapshot *s, struct finding *out, int *n, int max);
/* ib.c: InfiniBand/RoCE errors and blocked handshakes */
void ib_findings(const struct snapshot *s, struct finding *out, int *n, int max);
void ib_handshake_findings(const struct snapshot *s, const struct diag_config *cfg,
			   struct finding *out, int *n, int max);
/* setup.c: NCCL setup blocking, and connects NCCL retries silently */
void retry_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		    int *n, int max);
void setup_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		    int *n, int max);

/*
 * untraced.c: a wait on another host's rank that is the same stop as a culprit named here joins
 * its finding (issue 51); one that stays its own says what the counters show of this host
 */
void untraced_findings(const struct snapshot *s, const struct diag_config *cfg, struct finding *out,
		       int *n);

/* stackev.c: the culprit's and the longest waiter's stacks as evidence */
void stack_evidence(const struct snapshot *s, struct finding *f);
/* pyev.c: the culprit's top Python frame in the summary, the waiters', the divergence */
void py_evidence(const struct snapshot *s, struct finding *f);
/* p's main thread is inside NCCL now, as its latest stack says */
bool stack_in_nccl(const struct snapshot *s, const struct snap_proc *p);
/* p's main thread waits on its GPU now (a CUDA synchronize), as its latest stack says */
bool stack_on_gpu(const struct snapshot *s, const struct snap_proc *p);
/* logfacts.c: NCCL's own log (model/snaplog.h) on a finding's connection and setup */
void log_evidence(const struct snapshot *s, struct finding *f);
/* The transports NCCL's log names between a finding's culprit and its longest waiter */
enum {
	LOG_T_P2P = 1 << 0,
	LOG_T_SHM = 1 << 1,
	LOG_T_SOCKET = 1 << 2, /* NET/Socket */
	LOG_T_NET = 1 << 3,    /* NET over anything else: IB, a plugin */
	LOG_T_GDR = 1 << 4,    /* GPU Direct RDMA used, or a decision about it logged */
};
int log_transport_kinds(const struct snapshot *s, const struct finding *f);

/* finding.c: building findings */
__attribute__((format(printf, 2, 3))) void add_evidence(struct finding *f, const char *fmt, ...);
/* "exited with status 3", "killed by signal 9" */
void describe_status(int status, char *buf, size_t len);
/* the culprit's state into f->phase: stopped, sleeping in X, running..., in or outside NCCL */
void describe_culprit(const struct snap_proc *p, struct finding *f);
/* the culprit's /proc state, syscall and CPU; or how it exited (f->phase) */
void state_evidence(const struct snap_proc *p, struct finding *f);
/* "ranks 0,2,3", "pids 11,12", or "rank 0, pid 12" when mixed; in rank order */
void waiter_list(const struct snapshot *s, const struct finding *f, char *buf, size_t len);
/* a zeroed finding at the end of out (rank, peer_rank and conn -1); NULL when out is full */
struct finding *new_finding(struct finding *out, int *n, int max);
/* a new finding about process p (its rank), waiting since since_ns; NULL when out is full */
struct finding *proc_finding(struct finding *out, int *n, int max, enum finding_kind kind,
			     const struct snap_proc *p, uint64_t since_ns);
void remove_finding(struct finding *out, int *n, int i);
/* pid is a culprit or a waiter of one of out[0..n) */
bool named_in(const struct finding *out, int n, int pid);
/*
 * The same for every process at once, by position in s->procs: O(findings x waiters) once
 * instead of per process. malloc'ed (the caller frees it); NULL when out of memory.
 */
bool *named_set(const struct snapshot *s, const struct finding *out, int n);
/* pid as a waiter of f (with its rank); add_waiter only if not there already */
void push_waiter(const struct snapshot *s, struct finding *f, int pid);
void add_waiter(const struct snapshot *s, struct finding *f, int pid);
/* "communicator init" or "transport setup" */
const char *setup_name(int cls);

/* chains.c: where a chain of waits ends */
struct culprit {
	int pid;  /* > 0: a traced process; 0: an untraced address */
	int conn; /* for an address: the connection that waits on it */
	bool cycle;
};
/*
 * The end of the chain from procs[start], wait[i] the connection procs[i] waits on (-1 none);
 * memo and cyc: zeroed arrays of s->nprocs, shared by every start of one snapshot
 */
struct culprit wait_chain_end(const struct snapshot *s, const int *wait, int *memo, int *cyc,
			      int start);

#endif /* NT_RULES_H */
