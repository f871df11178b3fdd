/* SPDX-License-Identifier: MIT */
/*
 * The diagnosis: a pure function from a snapshot (and config) to findings. No I/O, no globals,
 * so the unit tests drive it with synthetic snapshots.
 */
#ifndef NT_DIAGNOSE_H
#define NT_DIAGNOSE_H

#include "snapshot.h"

#define DIAG_MAX_EVIDENCE 8
#define DIAG_MAX_WAITERS  16
#define DIAG_MAX_SETTINGS 14
#define DIAG_MAX_HYP	  4

/* A setting that governs a finding, as the ranks have it. */
struct finding_setting {
	char name[48];
	char value[72];	 /* "" with source "unset": NCCL decides at run time */
	char source[16]; /* "read" (NCCL read it), "environ", "default", "unset", "not read" */
	char ranks[128]; /* where the ranks differ: "rank 0 eth0, rank 1 eth1"; else "" */
};

enum finding_kind {
	FINDING_STALL = 0,
	FINDING_RING_SETUP_BLOCKED,
	FINDING_INIT_BLOCKED,
	FINDING_COLLECTIVE_MISMATCH,
	FINDING_PEER_DEAD,
	FINDING_PEER_STOPPED,
	FINDING_STRAGGLER,
	FINDING_CONN_ERROR,
	FINDING_IB_ERROR,
	FINDING_CONFIG,
	FINDING_KIND_MAX,
};

struct diag_config {
	uint64_t stall_threshold_ns;
	/*
	 * straggler: of the last 64 samples in which a communicator moved, at least this many
	 * found the same rank alone behind the others (0: never)
	 */
	int straggler_samples;
	/* a connection whose owner called send/recv within this window is still being tried */
	uint64_t active_window_ns;
	/*
	 * Quiet mode: the per-call TCP hooks come off once every communicator has moved within
	 * quiet_recent_ns at each tick for quiet_hold_ns (0: never off, --tcp-hooks always).
	 */
	uint64_t quiet_hold_ns, quiet_recent_ns;
};

/* Quiet mode, from tick to tick. */
struct quiet {
	bool off;	      /* the per-call hooks are (to be) detached */
	uint64_t eligible_ns; /* since when the job has been quiet-eligible, 0 if it is not */
	char why_on[96];      /* why they came back on (the last change), for the dump */
};

struct finding {
	enum finding_kind kind;
	char key[96];	   /* identity across snapshots: kind and culprit (pid or address) */
	int pid;	   /* the culprit process (0 for an address nobody answers) */
	int rank;	   /* its rank, -1 if none */
	int peer_pid;	   /* the process waiting on it the longest, 0 if none */
	int peer_rank;	   /* its rank, -1 if none */
	int conn;	   /* index in the snapshot's conns: what the longest waiter waits on, -1 */
	uint64_t since_ns; /* when the waiting started (oldest last progress) */
	char phase[112];
	char summary[512];
	char evidence[DIAG_MAX_EVIDENCE][200];
	int nevidence;
	int waiters[DIAG_MAX_WAITERS]; /* pids that wait on the culprit, directly or not */
	int nwaiters;
	bool cycle;	    /* every process in the chain waits on the next: nobody is outside */
	uint64_t comm_hash; /* the NCCL communicator it is about, 0 if none */
	struct finding_setting settings[DIAG_MAX_SETTINGS];
	int nsettings;
	/* likely causes, most likely first, each with the evidence it rests on */
	char hypotheses[DIAG_MAX_HYP][320];
	int nhyp;
};

const char *finding_kind_name(enum finding_kind k);
int finding_kind_parse(const char *s); /* -1 if unknown */

/*
 * Should the per-call TCP hooks be off now? Off only while every live communicator's counters
 * keep moving (NCCL's own progress, read from memory), no rank is in NCCL setup and nothing is
 * open: then the counters tell everything the sockets would. Any communicator that stops for
 * quiet_recent_ns, a rank in setup, or a finding turns them back on at once. Returns q->off.
 */
bool diagnose_quiet(const struct snapshot *s, const struct diag_config *cfg, int open_findings,
		    struct quiet *q);

/* Fills up to max findings; returns how many. */
int diagnose(const struct snapshot *s, const struct diag_config *cfg, struct finding *out, int max);

/*
 * Which connection, if any, the process pid waits on: no byte progress on any of its
 * connections for longer than the threshold while it keeps trying one of them. Returns the
 * index in s->conns or -1.
 */
int diagnose_waiting_conn(const struct snapshot *s, const struct diag_config *cfg, int pid);

#endif /* NT_DIAGNOSE_H */
