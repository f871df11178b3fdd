/* SPDX-License-Identifier: MIT */
/*
 * A snapshot of the traced job: plain data, built by the engine from the BPF maps, the ring
 * buffer and /proc, consumed by the pure parts (diagnose, dump, report). Times are
 * CLOCK_MONOTONIC nanoseconds, like bpf_ktime_get_ns().
 */
#ifndef NT_SNAPSHOT_H
#define NT_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include "nccltrace.h"

#define NT_NSEC_PER_SEC 1000000000ULL

/* What a thread is blocked in, from /proc/PID/task/TID/syscall. */
enum snap_block {
	SNAP_BLOCK_NONE = 0,
	SNAP_BLOCK_SEND,
	SNAP_BLOCK_RECV,
	SNAP_BLOCK_CONNECT,
	SNAP_BLOCK_ACCEPT,
	SNAP_BLOCK_POLL,
};

/* Which blocking NCCL setup a process is inside (the outermost NCCL call of a thread). */
enum snap_setup {
	SNAP_SETUP_NONE = 0,
	SNAP_SETUP_INIT,      /* ncclCommInitRank*, bootstrap, transport init */
	SNAP_SETUP_TRANSPORT, /* ring/tree connect, P2P setup, proxy connect (lazy, 1st collective) */
};

/* An InfiniBand/RoCE completion error NCCL reported (its WARN), the first of a process. */
struct snap_ib_error {
	uint64_t ts_ns;
	int count; /* how many such WARNs */
	char text[256];
	char peer[64]; /* "10.0.0.2<43517>" */
	char hca[32];
	int status; /* enum ibv_wc_status */
	int opcode;
	unsigned vendor_err;
	bool roce;
	uint64_t colls_before; /* collectives the rank had launched by then (comm->seqNumber) */
};

/* A queue pair, from the verbs probes (ibv_create_qp/modify_qp/destroy_qp). */
#define SNAP_MAX_QPS 32
struct snap_qp {
	uint64_t obj; /* struct ibv_qp * in the process */
	uint32_t qp_num, dest_qp_num;
	uint8_t state; /* enum ibv_qp_state */
	uint8_t mtu, timeout, retry_cnt, rnr_retry, sgid_index, port;
	bool destroyed;
	int err; /* errno of the last failed ibv_modify_qp, 0 if none */
	uint64_t created_ns, changed_ns;
	char dev[24];
};

/* An IB connection handshake (ncclIbConnect/ncclIbAccept) a proxy thread is in. */
struct snap_ib_handshake {
	int probe;	   /* NT_P_IB_CONNECT or NT_P_IB_ACCEPT, 0 if none */
	bool inside;	   /* one call for longer than a second: blocked inside it */
	uint64_t since_ns; /* the call's start if inside, else the polling's */
	int stage;	   /* enum ncclIbCommState, -1 if unknown */
	int tid;
};

/* A process's verbs: its QPs, memory registrations and the last asynchronous event. */
struct snap_ib {
	struct snap_qp qp[SNAP_MAX_QPS];
	int nqp;
	char dev[24]; /* the last device opened */
	int nmr;
	uint64_t mr_bytes;
	int nasync;
	int async_type; /* enum ibv_event_type of the last one */
	uint32_t async_qp;
	int async_port;
	uint64_t async_ns;
	char async_dev[24];
};

/* An NCCL setting of a process: as NCCL read it (uprobe), or from its environment. */
struct snap_setting {
	const char *name;  /* "NCCL_SOCKET_RETRY_CNT" */
	const char *value; /* NULL: unset, NCCL's default applies */
	bool read;	   /* NCCL read it (nccl.conf included); else /proc/PID/environ only */
};

struct snap_proc {
	int pid;
	int ppid;
	int rank; /* -1: no rank in its environment */
	int local_rank;
	int world_size;
	char comm[NT_COMM_LEN];
	char state; /* /proc/PID/stat state: R S D T t Z; 'X' once it exited */
	bool exited;
	int exit_status; /* wait(2) status */
	uint64_t exit_ns;
	uint64_t cpu_ns;      /* utime+stime */
	uint64_t cpu_busy_ns; /* CPU time used over the last second */
	char where[32];	      /* syscall the main thread sits in, "" when running */
	bool nccl;	      /* NCCL probes are live in it */
	char nccl_phase[64];  /* innermost NCCL phase (main thread first), "" outside */
	uint64_t nccl_since_ns;
	int nccl_setup; /* enum snap_setup: inside communicator init or transport setup */
	uint64_t nccl_setup_since_ns;	/* since when (the outermost such call) */
	const struct snap_setting *set; /* its NCCL_* settings (valid for this snapshot) */
	int nset;
	uint64_t nccl_retries; /* connect retries NCCL made (socketConnectCheck) */
	uint64_t nccl_last_retry_ns;
	const char *nccl_retry_addr;	    /* where the last one went, NULL if none */
	const char *nccl_warning;	    /* NCCL's last WARN text, NULL if none */
	const struct snap_ib_error *ib_err; /* NULL: none */
	const struct snap_ib *ib;	    /* verbs seen in it, NULL: none */
	struct snap_ib_handshake ib_hs;
};

struct snap_conn {
	uint64_t id; /* kernel struct sock address */
	struct nt_conn c;
	int pid;      /* owner tgid */
	int peer_pid; /* traced process on the other end, -1 if none or unknown */
	bool closed;  /* seen going to CLOSE */
	uint64_t closed_ns;
	const char *nccl_label; /* NCCL's name for it ("bootstrap (bootstrap)"), NULL if none */
	int blocked_tid;	/* a thread blocked in a call on this socket, 0 if none */
	enum snap_block blocked;
	uint64_t blocked_since_ns;
	/*
	 * NCCL RAS keep-alive socket: idle by design between its 1 s keep-alives, so never a
	 * reason to call anything stalled
	 */
	bool ras;
};

#define SNAP_NSEQ 5 /* NCCL_NUM_FUNCTIONS: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce */

/*
 * One rank's view of a communicator: NCCL's own collective counters (comm->seqNumber[], one per
 * function, counted at launch) sampled from its memory, and what the sampling saw over time.
 */
struct snap_comm {
	int pid;
	uint64_t hash; /* commHash: the same on every rank of the communicator */
	int rank, nranks;
	uint64_t seq[SNAP_NSEQ];
	bool seq_ok;	     /* read at least once */
	bool destroyed;	     /* ncclCommDestroy/Abort: seq holds its final counts */
	uint64_t changed_ns; /* when a count last moved (or was first read) */
	/* the last collective it launched (--collectives only): coll -1 if unknown */
	int last_coll, last_dtype, last_root;
	uint64_t last_count;
	/* the last 64 samples in which the communicator progressed: bit set where ... */
	uint64_t differ_bits; /* ... its ranks had launched different numbers of collectives */
	uint64_t behind_bits; /* ... this rank alone had launched the fewest */
	int nsamples;	      /* such samples so far (saturates at 64) */
	uint64_t
		behind_since_ns; /* the first of the behind samples still in the window, 0 if none */
};

struct snapshot {
	uint64_t now_ns;
	/*
	 * Quiet mode: while the per-call hooks are off, connections count nothing; when they come
	 * back (tcp_resumed_ns) no connection's progress is older than that.
	 */
	bool tcp_quiet;
	uint64_t tcp_resumed_ns;
	struct snap_proc *procs;
	int nprocs;
	struct snap_conn *conns;
	int nconns;
	struct snap_comm *comms;
	int ncomms;
};

/* "AllReduce" for seqNumber index / ncclFunc_t value f; "coll N" past the known ones */
const char *snap_coll_name(int f);

/* Lookups by pid; NULL when absent. */
const struct snap_proc *snapshot_proc(const struct snapshot *s, int pid);

/* "rank 2 (pid 4711)" or "pid 4711 (python3)" */
void snap_proc_name(const struct snap_proc *p, int pid, char *buf, size_t len);

#endif /* NT_SNAPSHOT_H */
