/* SPDX-License-Identifier: MIT */
/*
 * What NCCL's own log (NCCL_DEBUG=INFO, init-time subsystems, to a file per process) told about
 * one process: its communicators as NCCL reports them, the transport NCCL chose for each peer
 * and channel, GPU Direct RDMA, the settings NCCL says it read, the interfaces, and whether all
 * rings connected. Plain data for the pure parts; user/nccl/nccllogs.c fills it. The log exists
 * on every NCCL build, stripped ones included, but tells about init and setup only.
 */
#ifndef NT_SNAPLOG_H
#define NT_SNAPLOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SNAP_LOG_MAX_COMMS 8
#define SNAP_LOG_MAX_PATHS 64
#define SNAP_LOG_MAX_ENV   48
#define SNAP_LOG_MAX_IFS   8
#define SNAP_LOG_MAX_GDR   8

/* A communicator as its Init START / COMPLETE lines tell it (src/init.cc). */
struct snap_log_comm {
	uint64_t ptr;	 /* "comm %p": the ncclComm in this process */
	uint64_t id;	 /* "commId 0x%llx": the same on every rank; 0 for a split */
	uint64_t hash;	 /* comm->commHash where known (= id from NCCL 2.26; else the uprobes') */
	uint64_t parent; /* a split's parent communicator, 0 if none */
	uint64_t bus_id; /* "busId %lx" of its GPU */
	int rank, nranks, cuda_dev, nvml_dev;
	int color, key, split_count; /* a split's, -1 if not told */
	char api[24];		     /* "ncclCommInitRank", "ncclCommSplit", "" before 2.21 */
	bool complete;		     /* "Init COMPLETE" seen */
	bool rings;		     /* "Connected all rings" seen */
	int pxn, gdr;		     /* "use ring PXN %d GDR %d" (2.24+), -1 if not told */
	uint64_t start_ns, complete_ns, rings_ns; /* when nccltrace read those lines */
};

/*
 * The transport of one direction between two ranks of a communicator, over the channels its
 * "Channel" lines name (transport/p2p.cc, shm.cc, net.cc). P2P and SHM lines are logged by the
 * sender only; NET lines by both ends, [send] and [receive].
 */
struct snap_log_path {
	int comm;	      /* index in comm[], -1 if the process told no communicator it fits */
	int from, to;	      /* ranks in that communicator */
	int from_dev, to_dev; /* their GPUs (nvmlDev) */
	int side;	      /* SNAP_LOG_SENDER (P2P/SHM), SNAP_LOG_SEND or SNAP_LOG_RECV (NET) */
	int conn_index;	      /* "Channel %02d/%d": 0 rings and trees, -1 if not told (SHM) */
	char transport[40];   /* "NET/Socket/0", "P2P/IPC/read", "SHM/direct/direct" */
	bool net, p2p, shm;
	bool gdrdma;	   /* "/GDRDMA": the NIC reads or writes GPU memory directly */
	int proxy_rank;	   /* NET through another rank's NIC ("NET/IB/0(3)", PXN), -1 if none */
	uint64_t channels; /* bit c: channel c (0..63) */
};

enum { SNAP_LOG_SENDER = 0, SNAP_LOG_SEND, SNAP_LOG_RECV };

/* A GPU Direct RDMA decision (graph/paths.cc) or an HCA's support for it (graph/topo.cc). */
struct snap_log_gdr {
	bool enabled;
	char gpu[24];	     /* "GPU %d" (a rank from 2.24) or "%lx" (a bus id before) */
	char hca[24];	     /* "HCA %lx" */
	int distance, level; /* the path type and NCCL_NET_GDR_LEVEL's, -1 for an HCA's support */
	int read;	     /* -1 if not told */
};

/* A setting NCCL says it read: "NCCL_X set by environment to Y" (misc/param.cc, ...). */
struct snap_log_env {
	char name[48];
	char value[72];
};

/* An interface of a "Using" line: NET/Socket, NET/IB (and its OOB), Bootstrap. */
struct snap_log_if {
	char what[12]; /* "NET/Socket", "NET/IB", "IB OOB", "Bootstrap" */
	int index;     /* [%d], -1 if none */
	char name[24];
	char addr[64]; /* "10.0.0.1<0>", or "1/RoCE" (port and link layer) for an HCA */
};

struct snap_nccl_log {
	char version[40]; /* "2.28.9+cuda13.0", "" if not logged */
	char network[40]; /* "Using network %s": "Socket", "IB", a plugin's name */
	bool no_ib;	  /* "NET/IB : No device found." */
	struct snap_log_comm comm[SNAP_LOG_MAX_COMMS];
	int ncomm;
	struct snap_log_path path[SNAP_LOG_MAX_PATHS];
	int npath;
	struct snap_log_gdr gdr[SNAP_LOG_MAX_GDR];
	int ngdr;
	struct snap_log_env env[SNAP_LOG_MAX_ENV];
	int nenv;
	struct snap_log_if ifs[SNAP_LOG_MAX_IFS];
	int nifs;
	char last_warn[200]; /* NCCL's last WARN line, "" if none */
	int nwarn;
	uint64_t lines, facts, dropped; /* lines read, facts kept, facts with no room left */
};

/* name's value as NCCL logged it, NULL if it did not */
const char *snap_log_env_value(const struct snap_nccl_log *l, const char *name);

struct snap_proc;

/*
 * name's value as process p's NCCL logged it, NULL if it did not. NCCL before 2.23 logs
 * NCCL_P2P_DISABLE=1 as the level it sets, "NCCL_P2P_LEVEL set by environment to LOC"
 * (graph/paths.cc ncclGetLevel): where p has NCCL_P2P_DISABLE=1 and no NCCL_P2P_LEVEL, that line
 * is NCCL_P2P_DISABLE's.
 */
const char *snap_proc_log_env(const struct snap_proc *p, const char *name);
/* "channel 0", "channels 0-1", "channels 0,2,5-7" */
void snap_log_channels(uint64_t mask, char *buf, size_t len);
/* Do two processes' communicators have the same identity (commId or commHash)? */
bool snap_log_same_comm(const struct snap_log_comm *a, const struct snap_log_comm *b);

struct snapshot;

/* What the NCCL logs of two processes say about the connection between them. */
#define SNAP_LOG_LINK_PATHS 8
struct snap_log_link {
	const struct snap_proc *pa;	     /* process a */
	const struct snap_nccl_log *la, *lb; /* NULL: that process logged nothing */
	const struct snap_log_comm *ca, *cb; /* their communicator; cb NULL if b logged none */
	int ra, rb;			     /* their ranks in it, -1 if unknown */
	const struct snap_log_path *path[SNAP_LOG_LINK_PATHS];	   /* a's lines, then b's */
	const struct snap_nccl_log *path_log[SNAP_LOG_LINK_PATHS]; /* whose line each is */
	int npath;
};

/*
 * Process a's communicator with process b (the one of comm_hash if not 0, else the newest both
 * logged, else a's newest), their ranks in it and the Channel lines between them. b's rank is
 * taken from b's own Init line, else from its RANK when the communicator spans WORLD_SIZE.
 * False if a logged no communicator.
 */
bool snap_log_link(const struct snapshot *s, int pid_a, int pid_b, uint64_t comm_hash,
		   struct snap_log_link *out);
struct snap_conn;

/* The rank at the other end of a net-transport socket, as the owner's NCCL log names it */
struct snap_log_remote {
	int rank;			  /* in comm */
	const struct snap_log_comm *comm; /* the owner's communicator whose Channel lines say it */
	int side;			  /* SNAP_LOG_SEND or SNAP_LOG_RECV: the Channel lines' */
	uint64_t channels;		  /* theirs */
};

/*
 * Which rank a process's socket of NCCL's net transport reaches, where its NCCL log's NET
 * Channel lines leave one: the peers it receives from (an accepted socket) or sends to (one it
 * connected), or both where the socket does not say. False where none or several fit, for any
 * socket NCCL labelled otherwise, and without a log. For a peer no tracer here sees (another
 * host's): its rank, never that it is the cause.
 */
bool snap_log_remote_rank(const struct snapshot *s, const struct snap_conn *c,
			  struct snap_log_remote *out);
/* "NET/Socket/0" or "NET/Socket/0, P2P/IPC": the distinct transports of a link, "" if none */
void snap_log_link_transports(const struct snap_log_link *k, char *buf, size_t len);

#endif /* NT_SNAPLOG_H */
