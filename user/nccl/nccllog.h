/* SPDX-License-Identifier: MIT */
/*
 * NCCL's own log, one line at a time (pure): NCCL_DEBUG=INFO output of NCCL 2.18-2.30 (src/
 * debug.cc's prefix "host:pid:tid [dev] NCCL INFO ", WARN's "[%F %T] " timestamp from 2.26) in,
 * one fact out: a communicator's Init START/COMPLETE, a channel's transport, a ring, "Connected
 * all rings", GPU Direct RDMA, a setting NCCL read, the interfaces it uses, a WARN (2.30: with
 * its function) or an ATTN (2.32). The text is
 * the job's (it can write anything into that file): every copy is bounded, every number checked,
 * and only printable ASCII leaves the parser. Also the policy of turning the log on for a job.
 */
#ifndef NT_NCCLLOG_H
#define NT_NCCLLOG_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model/snaplog.h"

/* NCCL's own line buffer is 1024 bytes (src/debug.cc); anything much longer is not NCCL's */
#define NLOG_LINE_MAX 2048
#define NLOG_MAX_IFS  8
#define NLOG_RING_MAX 16

enum nccllog_kind {
	NLOG_NONE = 0, /* not NCCL's, or nothing nccltrace uses */
	NLOG_VERSION,  /* "NCCL version 2.28.9+cuda13.0" */
	NLOG_INIT,     /* "... comm 0x... rank 0 nranks 4 ... - Init START" / COMPLETE */
	NLOG_CHANNEL,  /* "Channel 00/0 : 0[0] -> 1[1] [send] via NET/Socket/0" */
	NLOG_RING,     /* "Channel 00/02 : 0 1 2 3": a ring's order, rank 0 only */
	NLOG_RINGS,    /* "Connected all rings[, use ring PXN %d GDR %d]" */
	NLOG_GDR,      /* "GPU Direct RDMA Enabled for GPU ..." or an HCA's support */
	NLOG_ENV,      /* "NCCL_X set by environment to Y" */
	NLOG_IFACE,    /* "NET/Socket : Using ...", "NET/IB : Using ...", "Bootstrap: Using ..." */
	NLOG_NETWORK,  /* "Using network IB" */
	NLOG_NO_IB,    /* "NET/IB : No device found." */
	NLOG_WARN,     /* any WARN line */
	/*
	 * an ATTN line (2.32's NCCL_DEBUG=ATTN: "notices", between WARN and INFO): where and text
	 * as a WARN's, not counted as one
	 */
	NLOG_ATTN,
	NLOG_KIND_MAX,
};

struct nccllog_init {
	bool complete, split, has_id;
	char api[24];
	uint64_t comm, parent, bus_id, id;
	int rank, nranks, cuda_dev, nvml_dev, color, key, split_count;
};

struct nccllog_chan {
	int channel, conn_index; /* conn_index -1: not told (SHM) */
	int from, from_dev, to, to_dev;
	int side; /* SNAP_LOG_SENDER, SNAP_LOG_SEND, SNAP_LOG_RECV */
	int proxy_rank;
	bool net, p2p, shm, gdrdma;
	char transport[40];
};

struct nccllog_ring {
	int channel, nrings, n; /* n ranks told (at most NLOG_RING_MAX kept) */
	int ranks[NLOG_RING_MAX];
	bool more; /* NCCL cut the line ("...") or it had more ranks than kept */
};

struct nccllog_fact {
	enum nccllog_kind kind;
	/* the prefix: 0 and "" where the line has none (a bare "NCCL version" line) */
	char host[64];
	int pid, tid, dev;
	union {
		struct nccllog_init init;
		struct nccllog_chan chan;
		struct nccllog_ring ring;
		struct {
			int pxn, gdr; /* -1: not told */
		} rings;
		struct snap_log_gdr gdr;
		struct snap_log_env env;
		struct {
			int n;
			struct snap_log_if v[NLOG_MAX_IFS];
		} iface;
		char name[40]; /* NLOG_VERSION, NLOG_NETWORK */
		struct {
			char where[48]; /* "net_socket.cc:123" */
			char text[200];
		} warn; /* NLOG_WARN, NLOG_ATTN */
	} u;
};

/* One line (without its newline, len bytes) into out: out->kind, NLOG_NONE if nothing. */
enum nccllog_kind nccllog_parse(const char *line, size_t len, struct nccllog_fact *out);

/* "init", "channel", ...: the dump record's "what" */
const char *nccllog_kind_name(enum nccllog_kind k);

/*
 * Fact f, read at now, into a process's summary. Returns the index of the communicator it was
 * attributed to (Init lines by their comm pointer; Channel lines and "Connected all rings",
 * which name none, to the newest communicator where the logging rank fits whose rings are not
 * yet connected), -1 if none.
 */
int nccllog_apply(struct snap_nccl_log *l, const struct nccllog_fact *f, uint64_t now);

/* The dump record of f: {"type":"nccl_log","what":..., its fields} (no pid or time) */
json_t *nccllog_fact_json(const struct nccllog_fact *f);

/*
 * NCCL_DEBUG_FILE as NCCL expands it (src/debug.cc): %h the host name up to its first '.', %p
 * the pid, %% a '%', anything else kept. False if it does not fit.
 */
bool nccllog_expand_path(const char *pattern, const char *host, int pid, char *out, size_t len);

/*
 * Would NCCL open NCCL_DEBUG_FILE at this NCCL_DEBUG? Only above VERSION (src/debug.cc):
 * WARN, ATTN (2.32), INFO, ABORT, TRACE.
 */
bool nccllog_level_writes_file(const char *nccl_debug);

/*
 * Is a user's NCCL_DEBUG_SUBSYS init-time only (INIT, ENV, BOOTSTRAP, NET: none of them logs
 * per collective at INFO)? Only then may nccltrace turn the log on under it.
 */
bool nccllog_subsys_init_only(const char *subsys);

#endif /* NT_NCCLLOG_H */
