/* SPDX-License-Identifier: MIT */
/*
 * A finding: what diagnose() says about a snapshot, the unit every later stage (findings over
 * time, the dump, the dashboard, report) handles. Plain data.
 */
#ifndef NT_FINDING_H
#define NT_FINDING_H

#include <stdbool.h>
#include <stdint.h>

#define DIAG_MAX_EVIDENCE 12
/* every waiter of a 4096-rank job; past that they are counted (nwaiters_total) */
#define DIAG_MAX_WAITERS  4096
#define DIAG_MAX_SETTINGS 14
#define DIAG_MAX_HYP	  4

/* A setting that governs a finding, as the ranks have it. */
struct finding_setting {
	char name[48];
	char value[72];	 /* "" with source "unset": NCCL decides at run time */
	char source[16]; /* "read" (NCCL read it), "environ", "default", "unset", "not read" */
	char ranks[128]; /* where the ranks differ: "rank 0 eth0, rank 1 eth1"; else "" */
};

/* A process that waits on the culprit, directly or not */
struct finding_waiter {
	int pid;
	int rank; /* -1 if none */
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
	FINDING_GPU_ERROR, /* a rank's GPU raised an Xid or an uncorrectable ECC error */
	FINDING_KIND_MAX,
};

struct finding {
	enum finding_kind kind;
	char key[96];  /* identity across snapshots: kind and culprit (pid or address) */
	int pid;       /* the culprit process (0 for an address nobody answers) */
	int rank;      /* its rank, -1 if none */
	int peer_pid;  /* the process waiting on it the longest, 0 if none */
	int peer_rank; /* its rank, -1 if none */
	/*
	 * An untraced peer's rank (another host's), where the waiter's NCCL log names it; named,
	 * it is who the wait is on, never the cause (remote_named false: not known)
	 */
	bool remote_named;
	int remote_rank;
	int conn;	   /* index in the snapshot's conns: what the longest waiter waits on, -1 */
	uint64_t since_ns; /* when the waiting started (oldest last progress) */
	char phase[112];
	char summary[512];
	char evidence[DIAG_MAX_EVIDENCE][200];
	int nevidence;
	struct finding_waiter waiters[DIAG_MAX_WAITERS];
	int nwaiters;
	int nwaiters_total; /* more than DIAG_MAX_WAITERS: all of them (else nwaiters) */
	bool cycle;	    /* every process in the chain waits on the next: nobody is outside */
	uint64_t comm_hash; /* the NCCL communicator it is about, 0 if none */
	struct finding_setting settings[DIAG_MAX_SETTINGS];
	int nsettings;
	/* likely causes, most likely first, each with the evidence it rests on */
	char hypotheses[DIAG_MAX_HYP][320];
	int nhyp;
	/*
	 * The stall threshold it was found with, and why ("1.0 s: collectives every 21 ms (p99 gap
	 * 100 ms) on comm 9f3c..."); early: that was below -t, and the wait is younger than -t
	 */
	uint64_t threshold_ns;
	char threshold_why[160];
	bool early;
};

const char *finding_kind_name(enum finding_kind k);
int finding_kind_parse(const char *s); /* -1 if unknown */

#endif /* NT_FINDING_H */
