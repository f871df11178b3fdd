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
#include "trace/pystack.h"
#include "trace/stacks.h"
#include "model/snaplog.h"

#define NT_NSEC_PER_SEC 1000000000ULL
/*
 * attach: how long after its first stacks a process whose main thread did not stop in time
 * is tried again (once a second), and its first main-thread stack still counts as the attach's
 */
#define NT_ATTACH_RETAKE_NS (5 * NT_NSEC_PER_SEC)

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

/*
 * A rank's GPU (trace/gpuwatch): NVML's figures, sampled at a slow tick and when a finding
 * opens, and the errors it raised during the trace (NVML's Xid events, the kernel's NVRM Xid
 * lines). Figures not known are -1 (ints) or 0.
 */
struct snap_gpu {
	int index;     /* NVML's index (nvidia-smi's), -1 unknown */
	char uuid[48]; /* "GPU-8a3b..." */
	char bus[16];  /* "0000:3b:00.0" */
	char name[40]; /* "NVIDIA H100 80GB HBM3" */
	char how[16];  /* how its rank was put on it: "nvml" (its processes), "nccl log" */
	int numa;      /* its NUMA node, -1 none */
	int util;      /* % of the last sample period with a kernel running */
	int sm_mhz, sm_max_mhz;
	uint64_t throttle; /* NVML's clocks event reasons, 0 none */
	int pcie_gen, pcie_width, pcie_gen_max, pcie_width_max;
	int nvlink_up, nvlink_known;
	uint64_t nvlink_err_new; /* NVLink replay, recovery, CRC and ECC errors since the start */
	uint64_t ecc_new;	 /* uncorrected ECC errors since the trace began */
	bool remap_pending, remap_failed;
	int persistence; /* persistence mode: 1 on, 0 off, -1 unknown */
	int xid;	 /* the last Xid raised during the trace, 0 none */
	uint64_t xid_ns;
	char xid_src[8];     /* "nvml" (its event), "kmsg" (the kernel's log) */
	char xid_text[160];  /* the kernel's line, or "" */
	char host_note[240]; /* ACS redirect or a degraded link on its PCI path (pcilint), "" */
	uint64_t sampled_ns;
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

/*
 * A socket net connect or accept a proxy thread polls (ncclNetSocketConnect/Accept: NCCL calls
 * them again and again until the peer is there), counted in the kernel.
 */
struct snap_net_poll {
	int probe;	   /* NT_P_NET_CONNECT or NT_P_NET_ACCEPT, 0 if none */
	uint64_t since_ns; /* the polling run's first call */
	uint64_t calls;	   /* calls so far */
	int tid;
	char addr[48]; /* connect: where to ("10.0.0.2:43517"), "" if unknown */
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

/*
 * The latest stack of a thread that waits, unwound from outside (trace/stacks.c), and what its
 * frames say about NCCL (nccl/ncclstack.c): the API call it is inside, even in a library
 * stripped to its exported names, where the phase probes cannot resolve.
 */
#define SNAP_MAX_NCCL_FRAMES 8
struct snap_stack {
	struct thread_stack st;
	/* "inside ncclTransportP2pSetup <- ncclAllReduce, blocked in accept"; "" outside NCCL */
	char nccl_call[160];
	char nccl_api[48]; /* the outermost public NCCL function ("ncclAllReduce"), "" if none */
	int nccl_frames[SNAP_MAX_NCCL_FRAMES]; /* indices in st.frames of NCCL's, innermost first */
	int nnccl;
	/* outside NCCL, waiting on the GPU: a CUDA synchronize (nccl_stack_cuda_wait) on it */
	bool gpu_wait;
	/*
	 * Its Python and native frames as one stack (trace/pystack.h, py_merge_text), from the top
	 * user frame in; "" when the process runs no CPython or its stack could not be read
	 */
	char py_text[320];
	bool py_merged; /* false: py_text holds both, labelled */
};

struct snap_proc {
	int pid;
	int ppid;
	int rank; /* -1: no rank in its environment */
	int local_rank;
	/* the NUMA node all the CPUs it may run on belong to; -1: several, or not known */
	int cpu_numa;
	int world_size;
	char comm[NT_COMM_LEN];
	char state; /* /proc/PID/stat state: R S D T t Z; 'X' once it exited */
	bool exited;
	int exit_status; /* wait(2) status */
	uint64_t exit_ns;
	uint64_t cpu_ns;      /* utime+stime */
	uint64_t cpu_busy_ns; /* CPU time used over the last second */
	/*
	 * CPU starvation, from schedstat where a connection has gone quiet: of its most starved
	 * thread over the last second or so, the time runnable but waiting for a CPU, per second
	 * (0: none, or not known), and that thread
	 */
	uint64_t runnable_ns;
	int runnable_tid;
	char where[32];	     /* syscall the main thread sits in, "" when running */
	bool nccl;	     /* NCCL probes are live in it */
	char nccl_phase[64]; /* innermost NCCL phase (main thread first), "" outside */
	uint64_t nccl_since_ns;
	int nccl_setup; /* enum snap_setup: inside communicator init or transport setup */
	uint64_t nccl_setup_since_ns; /* since when (the outermost such call) */
	bool nccl_setup_at_attach;    /* entered before nccltrace attached: since the attach */
	uint64_t nccl_setup_seen_ns;  /* the last tick that saw it inside a setup, 0: never */
	/*
	 * when it last entered a communicator init, and a transport setup (its outermost call,
	 * from the probe's entry: exact however short the setup was), 0: never
	 */
	uint64_t nccl_init_entered_ns, nccl_transport_entered_ns;
	/*
	 * attach: when its stacks were first taken (0: followed from its start); when its main
	 * thread's was (0: not yet, the thread did not stop in time: what it does, inside NCCL
	 * or out, is unknown, and retaken for NT_ATTACH_RETAKE_NS); and when that stack showed it
	 * waiting on its GPU (a CUDA synchronize, no NCCL call on it; 0: not so). Waiting so, it
	 * had launched work: NCCL calls it made had returned, a first collective's setup among
	 * them
	 */
	uint64_t attached_ns, stack_at_attach_ns, gpu_wait_at_attach_ns;
	const struct snap_setting *set; /* its NCCL_* settings (valid for this snapshot) */
	int nset;
	uint64_t nccl_retries; /* connect retries NCCL made (socketConnectCheck) */
	uint64_t nccl_last_retry_ns;
	const char *nccl_retry_addr; /* where the last one went, NULL if none */
	const char *nccl_warning;    /* NCCL's last WARN text, NULL if none */
	/* the first WARN of the failure that ended with nccl_warning: NULL if it had one */
	const char *nccl_first_warning;
	int nccl_burst_warnings;	    /* the WARNs of that failure */
	const struct snap_ib_error *ib_err; /* NULL: none */
	const struct snap_ib *ib;	    /* verbs seen in it, NULL: none */
	const struct snap_gpu *gpu;	    /* its GPU, NULL: not known */
	/*
	 * the NVML index of the GPU its CUDA_VISIBLE_DEVICES and LOCAL_RANK point at (-1: they do
	 * not say, or no NVML); the other GPUs NVML lists it on ("0", "0,2": stray contexts)
	 */
	int gpu_env;
	char gpu_also[24];
	/* the NIC its NCCL's network uses ("mlx5_0", "eth0"; NCCL's log) and its NUMA node (-1) */
	char nic[24];
	int nic_numa;
	struct snap_ib_handshake ib_hs;
	struct snap_net_poll net_poll;	 /* the longest unfinished one of its proxy threads */
	const struct snap_stack *stacks; /* its waiting threads' latest stacks, NULL: none taken */
	int nstacks;
	/* its threads' latest Python stacks, read with the native ones; NULL: none read */
	const struct py_stacks *py;
	const struct snap_nccl_log *nccl_log; /* what NCCL's own log told, NULL: nothing */
	/*
	 * A job of several hosts merged into one snapshot (snapmerge): the host this process runs
	 * on (NULL: this one), and its pid there where two hosts had the same pid (0: pid is it)
	 */
	const char *host;
	int host_pid;
};

struct snap_conn {
	uint64_t id; /* kernel struct sock address */
	struct nt_conn c;
	int pid;       /* owner tgid */
	int peer_pid;  /* traced process on the other end, -1 if none or unknown */
	bool closed;   /* seen going to CLOSE, or gone from the kernel's conns map */
	uint32_t walk; /* the model's: the last walk of the conns map that saw it */
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
	/* its rhythm: the 99th percentile gap between progress seen (0 while learning) */
	uint64_t gap_p99_ns, every_ns;
};

/*
 * Attached to while running, and its main thread's stack not taken yet (it did not stop in
 * time): whether it is inside NCCL or out, waiting or not, nothing says. Never a culprit so.
 */
static inline bool snap_proc_unseen(const struct snap_proc *p)
{
	return p->attached_ns && !p->stack_at_attach_ns && !p->exited && p->state != 'T' &&
	       p->state != 't' && p->state != 'Z';
}

/* a connection whose silence can say a rank waits: not a listener, not RAS's keep-alive */
static inline bool snap_conn_is_data(const struct snap_conn *c)
{
	return !(c->c.flags & NT_CONN_LISTENER) && !c->ras;
}

#define SNAP_NSEQ 5 /* NCCL_NUM_FUNCTIONS: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce */

/* Where a fact about a communicator came from, named in the findings' evidence */
enum snap_src {
	SNAP_SRC_NONE = 0,
	SNAP_SRC_SEQNUMBER, /* comm->seqNumber[] read from the rank's memory (DWARF offsets) */
	SNAP_SRC_PROFILER,  /* nccltrace's NCCL profiler plugin, in the rank */
	SNAP_SRC_ENQUEUE,   /* the ncclEnqueueCheck probe (--collectives) */
	/*
	 * NCCL 2.18-2.22, which have no seqNumber: comm->sharedRes->collOpCount, the collectives
	 * launched in all (no per-function split), read from the rank's memory (DWARF offsets)
	 */
	SNAP_SRC_COLLOPCOUNT,
};

/*
 * One rank's view of a communicator: NCCL's own collective counters (comm->seqNumber[], one per
 * function, counted at launch) sampled from its memory, and what the sampling saw over time.
 */
struct snap_comm {
	int pid;
	uint64_t hash; /* commHash: the same on every rank of the communicator */
	int rank, nranks;
	uint64_t seq[SNAP_NSEQ];
	/*
	 * Only the collectives launched in all are known (SNAP_SRC_COLLOPCOUNT): seq[] is all 0
	 * and total holds them. It can name a rank behind the others, never a function mismatch.
	 */
	bool total_only;
	uint64_t total;
	bool seq_ok;	/* read at least once */
	bool destroyed; /* ncclCommDestroy/Abort: seq holds its final counts */
	/* found by a memory scan at attach: made before it, its counts before it unknown */
	bool scanned;
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
	int seq_src, args_src;	 /* enum snap_src of seq[] and of last_* */
	/*
	 * The first collective its ranks launched with different arguments (NCCL profiler plugin),
	 * latched once every rank had launched it, so that it stays when the job goes on: its
	 * ordinal among the communicator's collectives (1-based; 0: none) and this rank's launch
	 * of it. mm_coll -1: the ranks' signatures diverged somewhere in mm_from..mm_ord, records
	 * the tracer could not read in time.
	 */
	uint64_t mm_ord, mm_from;
	int mm_coll, mm_dtype, mm_root;
	uint64_t mm_count, mm_seq, mm_ns;
	bool mm_changed;   /* its arguments differ from its own previous launch of that function */
	uint64_t launched; /* collectives launched in all (plugin), 0 if unknown */
	/*
	 * Its rhythm (model/rhythm.h): the 99th percentile of the gaps between the ticks that saw
	 * its counts move (0 while learning), and the time per collective, averaged
	 */
	uint64_t gap_p99_ns, every_ns;
};

/*
 * Lookups over one snapshot, built once (snapshot_index): by pid, and each process's
 * connections, so that diagnosing thousands of ranks never scans every process or connection
 * per process.
 */
struct snap_index {
	int *by_pid; /* proc indices, sorted by pid */
	int *hash;   /* open addressing: proc index + 1 by pid, 0 empty; hmask + 1 slots */
	unsigned int hmask;
	int *conn_of; /* conn indices grouped by owner: procs[i]'s are conn_of[conn_at[i]..[i+1]) */
	int *conn_at; /* nprocs + 1 */
};

struct snapshot {
	uint64_t now_ns;
	/*
	 * Quiet mode: while the per-call hooks are off, connections count nothing; when they come
	 * back (tcp_resumed_ns) no connection's progress is older than that.
	 */
	bool tcp_quiet;
	uint64_t tcp_resumed_ns;
	bool job_over; /* the job has exited: every death there is to see is in */
	/*
	 * Records the tracer did not get so far: lost (the ring buffer was full) and suppressed
	 * (over a process's budget). The phases come from the kernel's stacks whatever is lost;
	 * what else a finding rests on from records says so.
	 */
	uint64_t records_lost, records_suppressed;
	struct snap_proc *procs;
	int nprocs;
	struct snap_conn *conns;
	int nconns;
	struct snap_comm *comms;
	int ncomms;
	const struct snap_index *ix; /* NULL: lookups scan (snapshot_index builds one) */
};

/*
 * Every time of s's processes, communicators and connections that is after s->now_ns made
 * now_ns. A stamp read after the snapshot took its time (a BPF map read live, a rank's memory
 * through the profiler plugin) or from another host (`/state`, a dump's state record) may be
 * later, and an age now - t of unsigned times would be centuries: a rank "in setup for 584
 * years" is a waiter past any threshold, and a wrong culprit follows. diagnose() gets none.
 */
void snapshot_clamp(struct snapshot *s);
/*
 * The processes' and communicators' times only: the tracer's tick reads the connection map
 * before it takes its time, and nothing else after, so its connections need no pass each tick.
 */
void snapshot_clamp_procs(struct snapshot *s);

/*
 * What a snapshot points to, and who keeps it alive until the next tick's snapshot replaces it.
 * A tracer's loop reads the last snapshot between ticks (/state, /metrics, the dashboard's
 * keys) while ring-buffer records change the tracer's tables: so whatever those records
 * change is copied into the snapshot's own block at the tick (snapshot_own): the processes'
 * NCCL settings, retry address, warnings, verbs (ib_err, ib) and host, the connections'
 * labels. The processes and connections are the model's copies, made at the tick
 * (model__snapshot). The rest is changed at the tick alone and kept until the next: the
 * stacks and Python stacks (cmd/stackwatch.c), the GPU (cmd/gpuwatch.c), NCCL's log
 * (nccl/nccllogs.c, its per-process block never moves), the communicators (nccl_state__comms).
 */
struct snap_owned {
	void *block;
	size_t bytes;
};

/*
 * Copies what s points to that records change between ticks into a new block and points s at
 * it; o's last block is freed. 0, or -ENOMEM with those pointers of s set to NULL.
 */
int snapshot_own(struct snapshot *s, struct snap_owned *o);
void snap_owned_free(struct snap_owned *o);

/* The index of s (s->ix is not set: the caller points a copy at it). 0 or -ENOMEM. */
int snapshot_index(const struct snapshot *s, struct snap_index *ix);
void snapshot_index_free(struct snap_index *ix);
/* The position of pid in s->procs, -1 if absent */
int snapshot_proc_at(const struct snapshot *s, int pid);
/* The connections of process procs[i], as indices in s->conns (n set); needs s->ix */
const int *snapshot_conns_of(const struct snapshot *s, int i, int *n);

/* "AllReduce" for seqNumber index / ncclFunc_t value f; "coll N" past the known ones */
const char *snap_coll_name(int f);
/* "comm->seqNumber", "NCCL profiler plugin", "ncclEnqueueCheck", "comm->sharedRes->collOpCount" */
const char *snap_src_name(int src);

/* The collectives a rank launched on a communicator, all functions together (total_only: total) */
uint64_t snap_comm_total(const struct snap_comm *c);

/* Lookups by pid; NULL when absent. */
const struct snap_proc *snapshot_proc(const struct snapshot *s, int pid);
/* A process's setting name (what NCCL read, else its environment's); NULL when not listed */
const struct snap_setting *snap_proc_setting(const struct snap_proc *p, const char *name);

/* "rank 2 (pid 4711)" or "pid 4711 (python3)"; "rank 2 (pid 4711, host-b)" when merged */
void snap_proc_name(const struct snap_proc *p, int pid, char *buf, size_t len);

#endif /* NT_SNAPSHOT_H */
