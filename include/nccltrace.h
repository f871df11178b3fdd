/* SPDX-License-Identifier: MIT */
/*
 * The one header shared by the BPF programs and userspace: ring-buffer records, map keys and
 * values, enums. Fixed-width fields and explicit padding only, so that both sides agree on the
 * layout without relying on the compilers' padding rules.
 */
#ifndef NCCLTRACE_H
#define NCCLTRACE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Version of the trace dump format (first field of the header line). 2: snapshot and state
 * records as what changed since the last frame (present/dumpdelta.h); 1 is read too. */
#define NT_DUMP_FORMAT 2

#define NT_COMM_LEN   16
#define NT_MAX_TRACED 16384
#define NT_MAX_CONNS  65536

enum nt_event_type {
	NT_EV_FORK = 1,
	NT_EV_EXEC = 2,
	NT_EV_EXIT = 3,
	NT_EV_CONN_STATE = 4, /* TCP state change of a traced connection (carries its counters) */
	NT_EV_RETRANS = 5,
	NT_EV_RESET = 6, /* RST received */
	NT_EV_NCCL = 7,	 /* an NCCL probe fired (entry or return) */
	NT_EV_POLL = 8, /* a thread started or ended polling an NCCL function (struct nt_ev_poll) */
};

/* Indices of the per-CPU stats array: drops and full maps are counted, never silent. */
enum nt_stat {
	NT_STAT_RB_DROP = 0,  /* bpf_ringbuf_reserve failed */
	NT_STAT_CONN_FULL,    /* conns map full: a connection went untracked */
	NT_STAT_TRACED_FULL,  /* traced map full: a process went untracked */
	NT_STAT_SEND_EVENTS,  /* send calls seen on traced connections */
	NT_STAT_RECV_EVENTS,  /* receive calls seen on traced connections */
	NT_STAT_STATE_EVENTS, /* TCP state changes of traced connections */
	NT_STAT_PROBE_EVENTS, /* tcp_probe hits on traced connections */
	/* records over a process's budget (enum nt_budget_class), counted instead of sent */
	NT_STAT_SUPP_PROC,
	NT_STAT_SUPP_CONN,
	NT_STAT_SUPP_NCCL,
	NT_STAT_POLL_CALLS, /* calls of polled NCCL functions, counted in the phase stacks */
	NT_STAT_MAX,
};

/*
 * The tracer's intake is bounded by design: each traced process may send at most a budget of
 * records a second per class (a window of a second, counted in the kernel); what is over it
 * is counted as suppressed (per class in stats, per NCCL probe in supp_probe), never sent.
 */
enum nt_budget_class {
	NT_BUDGET_PROC = 0, /* fork, exec, exit */
	NT_BUDGET_CONN,	    /* TCP state changes, retransmits, resets */
	NT_BUDGET_NCCL,	    /* NCCL and verbs probes */
	NT_BUDGET_MAX,
};
/* NCCL records a second per process; TCP and process records a quarter of that each */
#define NT_BUDGET_DEFAULT 4096

/* How send/receive calls are observed; the first one that loads and attaches wins. */
enum nt_attach_mode {
	NT_MODE_AUTO = 0,
	NT_MODE_FENTRY = 1,
	NT_MODE_KPROBE = 2,
	NT_MODE_TRACEPOINT = 3,
};

enum nt_conn_flags {
	NT_CONN_ACTIVE = 1 << 0,   /* we saw the connect (SYN_SENT) */
	NT_CONN_LISTENER = 1 << 1, /* a listening socket */
};

struct nt_tuple {
	__u8 saddr[16]; /* IPv4 in the first 4 bytes, network order */
	__u8 daddr[16];
	__u16 sport; /* host order */
	__u16 dport; /* host order */
	__u16 family;
	__u16 pad;
};
_Static_assert(sizeof(struct nt_tuple) == 40, "nt_tuple layout");

/*
 * Per-connection accounting, keyed by the kernel's struct sock address. Counters are updated
 * with atomic adds (several threads may use one socket); timestamps are bpf_ktime_get_ns()
 * (CLOCK_MONOTONIC) and written plainly: the last writer wins, which is what "last" means.
 */
struct nt_conn {
	struct nt_tuple t;
	__u32 tgid; /* process that last used it (the connecting one until then) */
	__u32 tid;
	__u64 ino; /* socket inode: joins /proc/PID/fd and /proc/PID/task/TID/syscall */
	__u64 bytes_sent;
	__u64 bytes_recv;
	__u64 send_calls; /* calls that did not return EAGAIN */
	__u64 recv_calls;
	__u64 send_eagain;
	__u64 recv_eagain;
	__u64 recv_eof; /* receive returned 0: the peer closed */
	__u64 send_err; /* other errors */
	__u64 recv_err;
	__u64 first_ns;
	__u64 state_ns;
	__u64 last_send_ns; /* last byte progress, each way */
	__u64 last_recv_ns;
	__u64 last_send_try_ns; /* last call, successful or not */
	__u64 last_recv_try_ns;
	__u64 last_eagain_ns;
	/* the first EAGAIN after the last byte progress (either way) this program saw, 0 before
	 * any: since when the owner has been trying it; a waiter that slept first (a pause of its
	 * own) waited only since then */
	__u64 eagain_since_ns;
	__u64 figures_ns; /* when RTT/cwnd/windows/queues were last read */
	__u32 state;	  /* TCP_* */
	__s32 last_err;
	__u32 retrans;
	__u32 syn_retrans;
	__u32 srtt_us;
	__u32 snd_cwnd;
	__u32 snd_wnd;
	__u32 rcv_wnd;
	__u32 send_q; /* write_seq - snd_una: bytes the peer has not acknowledged */
	__u32 recv_q; /* rcv_nxt - copied_seq: bytes the owner has not read */
	__u32 flags;
	__u32 resets;
	__u32 nccl_phase; /* NCCL probe on top of the phase stack of the thread that created it
			   * or last moved bytes on it (sampled every 10 ms), 0 if none */
	__u32 pad;
};
_Static_assert(sizeof(struct nt_conn) == 256, "nt_conn layout");

/* Every ring-buffer record starts with this. */
struct nt_ev_hdr {
	__u16 type;
	__u16 size;
	__u32 cpu;
	__u64 ts_ns;
};
_Static_assert(sizeof(struct nt_ev_hdr) == 16, "nt_ev_hdr layout");

struct nt_ev_proc {
	struct nt_ev_hdr h;
	__u32 pid; /* tgid */
	__u32 ppid;
	__u32 tid;
	__s32 exit_code; /* wait(2) status for NT_EV_EXIT */
	char comm[NT_COMM_LEN];
};
_Static_assert(sizeof(struct nt_ev_proc) == 48, "nt_ev_proc layout");

struct nt_ev_conn {
	struct nt_ev_hdr h;
	__u64 sk;
	__u32 oldstate;
	__u32 newstate;
	__u32 retrans_state; /* TCP state at a retransmit */
	__u32 pad;
	struct nt_conn c; /* counters at the time of the event */
};
_Static_assert(sizeof(struct nt_ev_conn) == 16 + 24 + 256, "nt_ev_conn layout");

/*
 * NCCL probes. One entry and one return program serve them all: the uprobe's BPF cookie is
 * (library slot << 16) | probe id. Arguments in comments are NCCL 2.28's.
 */
enum nt_probe {
	NT_P_NONE = 0,
	NT_P_COMM_INIT,	      /* ncclCommInitRankFunc(job) */
	NT_P_BOOTSTRAP_INIT,  /* bootstrapInit(nHandles, handles, comm) */
	NT_P_BOOTSTRAP_SPLIT, /* bootstrapSplit(magic, comm, parent, color, key, parentRanks) */
	NT_P_ALLGATHER,	      /* bootstrapAllGather(state, data, size) */
	NT_P_BOOTSTRAP_SEND,  /* bootstrapSend(state, peer, tag, data, size) */
	NT_P_BOOTSTRAP_RECV,  /* bootstrapRecv(state, peer, tag, data, size) */
	NT_P_INIT_TRANSPORTS, /* initTransportsRank(comm, parent, timers) */
	NT_P_TOPO_GET,	      /* ncclTopoGetSystem(comm, system, dumpXmlFile) */
	NT_P_TOPO_COMPUTE,    /* ncclTopoCompute(system, graph) */
	NT_P_RING_CONNECT,    /* ncclTransportRingConnect(comm) */
	NT_P_TREE_CONNECT,    /* ncclTransportTreeConnect(comm) */
	NT_P_P2P_SETUP,	      /* ncclTransportP2pSetup(comm, graph, connIndex) */
	NT_P_PROXY_CONNECT,   /* ncclProxyConnect(comm, transport, send, proxyRank, conn) */
	NT_P_PROXY_CALL, /* ncclProxyCallBlocking(comm, conn, type, req, reqSize, resp, respSize) */
	NT_P_SOCKET_CONNECT, /* ncclSocketConnect(sock) */
	NT_P_SOCKET_ACCEPT,  /* ncclSocketAccept(sock, listenSock) */
	NT_P_CONNECT_RETRY,  /* socketConnectCheck.part.2(sock, errno, funcName): every retry */
	NT_P_NET_CONNECT,    /* ncclNetSocketConnect(ctx, dev, handle, sendComm*, devHandle*) */
	NT_P_NET_ACCEPT,     /* ncclNetSocketAccept(listenComm, recvComm*, devHandle*) */
	NT_P_ENV,	     /* ncclEnvPluginGetEnv(name) -> value: every NCCL setting read */
	NT_P_DEBUG_LOG,	     /* ncclDebugLog(level, flags, filefunc, line, fmt, ...) */
	NT_P_ENQUEUE,	     /* ncclEnqueueCheck(info): only with --collectives */
	NT_P_COMM_DESTROY,   /* ncclCommDestroy(comm), ncclCommAbort(comm): final counts */
	NT_P_COMM_ABORT,
	/*
	 * The public API (.dynsym of every build, stripped or not): communicator init, with the
	 * comm through a pointer in the 1st argument (its rank and nranks in the arguments)
	 */
	NT_P_API_INIT_RANK,	/* ncclCommInitRank(comm*, nranks, ncclUniqueId, rank) */
	NT_P_API_INIT_CONFIG,	/* ncclCommInitRankConfig(comm*, nranks, id, rank, config*) */
	NT_P_API_INIT_SCALABLE, /* ncclCommInitRankScalable(comm*, nranks, rank, nId, ids*, cfg*) */
	NT_P_API_INIT_ALL,	/* ncclCommInitAll(comm*, ndev, devlist*) */
	NT_P_API_SPLIT,		/* ncclCommSplit(comm, color, key, newcomm*, config*) */
	NT_P_API_LAST_ERROR,	/* ncclGetLastError(comm) -> NCCL's last error text */
	/*
	 * The collective calls, only until a process's first collectives are done (where the
	 * library has no internal transport-setup symbols): the lazy ring connect of the first
	 * collective happens inside them
	 */
	NT_P_API_ALLREDUCE,
	NT_P_API_BROADCAST,
	NT_P_API_REDUCE,
	NT_P_API_ALLGATHER,
	NT_P_API_REDUCE_SCATTER,
	NT_P_API_ALLTOALL,
	NT_P_API_SEND,
	NT_P_API_RECV,
	NT_P_API_GROUP_END,
	NT_P_API_GROUP_START, /* entry only: a collective inside a group returns at once */
	NT_P_IB_CONNECT, /* ncclIbConnect(ctx, dev, handle, sendComm*, devHandle*): re-entrant */
	NT_P_IB_ACCEPT,	 /* ncclIbAccept(listenComm, recvComm*, devHandle*): re-entrant */
	/*
	 * Verbs, in libnccl (its wrap_ibv_* wrappers: ncclResult_t, the object through a pointer
	 * in the 1st argument) or in libibverbs (the object returned); nt_nccl_offsets.lib_kind
	 * says which
	 */
	NT_P_IBV_OPEN_DEVICE,	 /* (ctx**,) device */
	NT_P_IBV_CREATE_QP,	 /* (qp**,) pd, init_attr */
	NT_P_IBV_MODIFY_QP,	 /* qp, attr, mask */
	NT_P_IBV_DESTROY_QP,	 /* qp */
	NT_P_IBV_REG_MR,	 /* (mr**,) pd, addr, length, access */
	NT_P_IBV_ASYNC_EVENT,	 /* ibv_get_async_event(ctx, event): blocks until the HCA has one */
	NT_P_ROLE_PROXY_SERVICE, /* thread start routines: the thread's role */
	NT_P_ROLE_PROXY_PROGRESS,
	NT_P_ROLE_BOOTSTRAP_ROOT,
	NT_P_ROLE_IB_ASYNC,
	NT_P_ROLE_NET_SOCKET,
	NT_P_MAX,
};

/* Probes that get a struct ncclComm * (2nd argument for bootstrapSplit, 1st or 3rd else) */
static inline int nt_probe_has_comm(unsigned int p)
{
	return p == NT_P_BOOTSTRAP_INIT || p == NT_P_BOOTSTRAP_SPLIT || p == NT_P_INIT_TRANSPORTS ||
	       p == NT_P_RING_CONNECT || p == NT_P_TREE_CONNECT || p == NT_P_P2P_SETUP ||
	       p == NT_P_PROXY_CONNECT || p == NT_P_PROXY_CALL;
}

/* The public collective calls probed until a process's first collectives are done */
static inline int nt_probe_api_coll(unsigned int p)
{
	return p >= NT_P_API_ALLREDUCE && p <= NT_P_API_GROUP_START;
}

/* The public init calls: their comm comes back through the pointer in the 1st argument */
static inline int nt_probe_api_init(unsigned int p)
{
	return p >= NT_P_API_INIT_RANK && p <= NT_P_API_SPLIT;
}

#define NT_MAX_LIBS    16
#define NT_PHASE_DEPTH 8

/*
 * The setup an outermost call puts its process in: 1 communicator init, 2 transport setup, 3
 * a public collective call (the first after an init holds the lazy ring connect: userspace
 * decides), 0 none
 */
#define NT_SETUP_CLASSES 4
static inline int nt_probe_setup_class(unsigned int p)
{
	if (nt_probe_api_coll(p))
		return 3;
	if (nt_probe_api_init(p) || p == NT_P_COMM_INIT || p == NT_P_BOOTSTRAP_INIT ||
	    p == NT_P_BOOTSTRAP_SPLIT || p == NT_P_INIT_TRANSPORTS)
		return 1;
	if (p == NT_P_RING_CONNECT || p == NT_P_TREE_CONNECT || p == NT_P_P2P_SETUP ||
	    p == NT_P_PROXY_CONNECT)
		return 2;
	return 0;
}

/* Offsets into NCCL's structs for one library (from its DWARF or a verified table); -1: unknown */
struct nt_nccl_offsets {
	__s32 sock_fd;
	__s32 sock_addr;
	__s32 sock_state;
	__s32 sock_type;
	__s32 comm_hash;
	__s32 comm_rank;
	__s32 comm_nranks;
	__s32 comm_seq;
	__s32 info_coll;
	__s32 info_count;
	__s32 info_datatype;
	__s32 info_root;
	__s32 info_comm;
	__s32 bstate_rank;
	__s32 bstate_nranks;
	__s32 graph_id;
	__s32 ibh_stage;  /* ncclIbHandle.stage (its state first): ncclIbConnect's progress */
	__s32 iblc_stage; /* ncclIbListenComm.stage: ncclIbAccept's (a pointer: iblc_stage_ptr) */
	/* 2.18-2.22 (no seqNumber): the collectives launched, comm->sharedRes->collOpCount */
	__s32 comm_shres;      /* ncclComm.sharedRes */
	__s32 comm_persistent; /* ncclComm.persistentRefs: CUDA graphs capturing it */
	__s32 shres_refcount;  /* ncclSharedResources.refCount: >1 shared by a split */
	__s32 shres_owner;     /* ncclSharedResources.owner: the comm that made it */
	__s32 shres_collops;   /* ncclSharedResources.collOpCount */
	/* ncclComm.endMagic (2.21+; startMagic is at 0): finding comms by a memory scan at attach */
	__s32 comm_endmagic;
	__s64 lasterr_delta; /* &ncclLastError - &ncclDebugLog, 0 if unknown */
	__s32 lib_kind;	     /* NT_LIB_NCCL or NT_LIB_VERBS */
	/* where this version's signatures put what the probes read (argument indices) */
	__u8 bsinit_comm_arg;	   /* bootstrapInit's comm: 1 until 2.22, then 2 */
	__u8 connect_sendcomm_arg; /* ncclNetSocketConnect's/ncclIbConnect's sendComm**: 2 or 3 */
	/*
	 * 1: iblc_stage holds a pointer to the stage, NULL between handshakes (2.29+, its DWARF
	 * says so); 0: the stage itself
	 */
	__u8 iblc_stage_ptr;
	__u8 pad;
};
_Static_assert(sizeof(struct nt_nccl_offsets) == 112, "nt_nccl_offsets layout");

enum nt_lib_kind {
	NT_LIB_NCCL = 0,
	NT_LIB_VERBS, /* libibverbs.so.1 */
};

/*
 * Offsets in <infiniband/verbs.h>'s structs (a stable ABI), filled by userspace from the real
 * header before the programs load.
 */
struct nt_verbs_offsets {
	__s32 qp_num;	  /* struct ibv_qp */
	__s32 qp_context; /* struct ibv_qp: struct ibv_context * */
	__s32 ctx_device; /* struct ibv_context: struct ibv_device * */
	__s32 dev_name;	  /* struct ibv_device: char name[] */
	__s32 attr_state; /* struct ibv_qp_attr */
	__s32 attr_mtu;
	__s32 attr_dest_qp_num;
	__s32 attr_timeout;
	__s32 attr_retry_cnt;
	__s32 attr_rnr_retry;
	__s32 attr_min_rnr_timer;
	__s32 attr_sgid_index; /* ah_attr.grh.sgid_index */
	__s32 attr_port_num;   /* ah_attr.port_num */
	__s32 attr_dlid;       /* ah_attr.dlid */
	__s32 attr_dgid;       /* ah_attr.grh.dgid */
	__s32 ev_element;      /* struct ibv_async_event: union { qp*, cq*, srq*, port_num } */
	__s32 ev_type;
	__s32 pad;
};

/* A thread's stack of NCCL phases (probes with a return), innermost last. */
struct nt_phase_frame {
	__u16 probe;
	__u16 lib;
	__u32 pad;
	__u64 since_ns;
	__u64 ip; /* address of the probed function in this process */
	__u64 args[3];
	/*
	 * The caller's return address, read at the entry: the uretprobe replaces it on the stack
	 * with its trampoline, and an unwinder from outside needs the original (trace/stacks.c)
	 */
	__u64 ret;
};

struct nt_phase_stack {
	__u32 depth;
	__u32 pad;
	struct nt_phase_frame f[NT_PHASE_DEPTH];
	/*
	 * The polled probes (nt_probe_polled: the net plugins' connect and accept, re-entrant,
	 * called in a loop by the proxy thread until the connection is up, ~10^5 times a second):
	 * far too often for an event each. The thread's polling run, read by userspace each tick;
	 * one NT_EV_POLL record when a run starts and one when it ends.
	 */
	__u64 poll_first_ns; /* the first call of this polling run */
	__u64 poll_last_ns;  /* the latest call */
	__u16 poll_probe;
	__u8 poll_done; /* the run ended: the out-pointer was set, or the call failed */
	__u8 pad2;
	__s32 poll_stage;  /* the handshake's stage at the latest call, -1 if unknown */
	__u64 poll_calls;  /* calls in this run */
	__u64 poll_obj;	   /* what the latest call polls: a connect handle or a listen comm */
	__s32 poll_result; /* the latest call's ncclResult_t */
	__u32 tgid;	   /* the thread's process */
	/*
	 * When the thread last entered a setup as its outermost call, by nt_probe_setup_class:
	 * state, where the entry's record may be lost (a rank that got through a setup took part)
	 */
	__u64 entered_ns[NT_SETUP_CLASSES];
};
_Static_assert(sizeof(struct nt_phase_frame) == 56, "nt_phase_frame layout");
_Static_assert(sizeof(struct nt_phase_stack) == 8 + 56 * NT_PHASE_DEPTH + 48 + 8 * NT_SETUP_CLASSES,
	       "nt_phase_stack layout");

/* Probes NCCL calls again and again until something happens: counted, never told per call */
static inline int nt_probe_polled(unsigned int p)
{
	return p == NT_P_NET_CONNECT || p == NT_P_NET_ACCEPT || p == NT_P_IB_CONNECT ||
	       p == NT_P_IB_ACCEPT;
}

/* A polling run started (end 0) or ended (end 1): the run as the phase stack holds it */
struct nt_ev_poll {
	struct nt_ev_hdr h;
	__u32 pid;
	__u32 tid;
	__u16 probe;
	__u8 end;
	__u8 done; /* ended with the out-pointer set (connected); 0: failed (result) */
	__u32 lib;
	__u64 obj;
	__u64 calls;
	__u64 first_ns;
	__s32 result;
	__s32 stage;
	__u8 addr[28]; /* the connect handle's address (socket net), zeros if none */
	__u32 pad;
};
_Static_assert(sizeof(struct nt_ev_poll) == 16 + 16 + 24 + 8 + 32, "nt_ev_poll layout");

struct nt_ev_nccl {
	struct nt_ev_hdr h;
	__u32 pid;
	__u32 tid;
	__u16 probe;
	__u8 ret;   /* 0 entry, 1 return */
	__u8 depth; /* of the phase stack after the entry / before the return */
	__u32 lib;
	__u64 args[5];
	__s64 retval;
	__u64 since_ns; /* returns: when the function was entered */
	union {
		struct {
			__s32 fd;
			__s32 state;
			__s32 type;
			__u32 pad;
			__u8 addr[28]; /* struct sockaddr_in or sockaddr_in6 */
			__u32 pad2;
		} sock;
		struct {
			__u64 comm;
			__u64 hash;
			__s32 rank;
			__s32 nranks;
		} comm;
		struct {
			char name[64];
			char value[192];
		} env;
		struct {
			__u64 comm;
			__u64 seq[5]; /* comm->seqNumber[], read before NCCL frees the comm */
			/* where it has none (2.18-2.22): comm->sharedRes and what it holds */
			__u64 shres;
			__u64 owner;
			__u64 collops;
			__s32 refcount;
			__s32 persistent; /* comm->persistentRefs */
		} fin;
		struct {
			__s32 coll;
			__s32 datatype;
			__s32 root;
			__u32 pad;
			__u64 count;
			__u64 comm;
		} info;
		struct {
			__u64 obj; /* the QP, context or MR, NULL if the call failed */
			__u32 qp_num;
			__u32 mask; /* ibv_modify_qp's attribute mask */
			__u32 dest_qp_num;
			__s32 event_type; /* ibv_get_async_event */
			__u8 state;
			__u8 mtu;
			__u8 timeout;
			__u8 retry_cnt;
			__u8 rnr_retry;
			__u8 min_rnr_timer;
			__u8 sgid_index;
			__u8 port;
			__u16 dlid;
			__u16 pad;
			__u32 pad2;
			__u8 dgid[16];
			char dev[64];
		} ib;
		char text[256];
	} d;
};
_Static_assert(sizeof(struct nt_ev_nccl) == 16 + 16 + 40 + 16 + 256, "nt_ev_nccl layout");

#endif /* NCCLTRACE_H */
