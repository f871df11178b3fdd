/* SPDX-License-Identifier: MIT */
/*
 * Private to nccl/: the tracer's copy of the profiler plugin's state (ncclprof.c reads it,
 * ncclprofcmp.c compares the ranks of each communicator).
 */
#ifndef NT_NCCLPROF_PRIV_H
#define NT_NCCLPROF_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include "ntprof.h"
#include "util/pidix.h"

#define RECENT		8
#define HIST		64		  /* launches a rank's own pattern is read from */
#define MAX_PENDING	(4 * NTPROF_RING) /* records kept per rank until all ranks launched them */
#define RESCAN_NS	(2 * NT_NSEC_PER_SEC) /* processes without NCCL mapped: maps read this often */
#define SCANS_EACH_TICK 150 /* with NCCL mapped: each tick for 30 s, then as above */
#define ID_WORDS_LEN	NTPROF_COUNTERS_OFF
#define HEAD_LEN	sizeof(struct ntprof_comm_head)
#define STUCK_READS	5 /* ticks */

/* One communicator of a process, as last read */
struct pcomm {
	uint64_t gen;
	bool id_ok;
	uint64_t hash;
	int rank, nranks, nnodes, api;
	char name[NTPROF_NAME + 1];
	bool told; /* its dump record is written */
	/* the counters, as the last consistent copy had them */
	uint32_t state, flags;
	uint64_t ncoll, fcount[NTPROF_NFUNC], graph, np2p, coll_api, p2p_api, group_api;
	uint64_t group_start_ns, group_end_ns, launched_at_end, finalize_ns;
	/* the records */
	uint64_t read_upto; /* ordinals read so far (or lost) */
	uint64_t lost;
	int stuck; /* reads that stopped at the same record, the newer ones there */
	struct ntprof_rec recent[RECENT]; /* the newest, recent[(k - 1) % RECENT] holds ordinal k */
	struct ntprof_rec *pend;	  /* read, not yet compared: ordinals in increasing order */
	int npend, pcap;
	uint64_t pend_dropped;
	/* each function's signature at its last launch already compared (0: none yet) */
	uint64_t prev_sig[NTPROF_NFUNC];
	/* the signatures of the latest launches already compared, oldest first */
	uint64_t hist[HIST];
	int nhist;
	/* its launch of the group's first divergent collective, once latched */
	bool mm_ok, mm_changed;
	struct ntprof_rec mm;
};

struct pproc {
	int pid;
	uint64_t addr; /* of the state in the process, 0 until found */
	uint64_t next_scan_ns;
	int scans; /* of its maps, without finding the plugin */
	bool dead; /* its memory is not readable any more: keep what was read */
	char path[PATH_MAX];
	uint32_t api_max;
	uint64_t overflow;
	struct pcomm comm[NTPROF_MAX_COMMS];
	int ncomm;
};

/* A communicator across its ranks: how far they have been compared, the first divergence */
struct pgroup {
	uint64_t hash;
	uint64_t verified; /* ordinals compared on every rank */
	bool gap;	   /* some were lost since the last comparison */
	uint64_t gap_from;
	bool latched;
	uint64_t ord, from;
	uint64_t uncompared;
};

struct nprof {
	struct pproc *p;
	int n, cap;
	struct pidix pids; /* p's pids, in its order */
	struct pgroup *g;
	int ng, gcap;
	/* the symbol's address in the last plugin file examined */
	char sym_path[PATH_MAX];
	uint64_t sym_vaddr;
};

struct nccl_state;
/* pid's, NULL if none */
const struct pproc *nprof_find(const struct nccl_state *s, int pid);
/* Forget the pending records up to ordinal ord, remembering each function's last signature */
void pend_drop_upto(struct pcomm *m, uint64_t ord);
/* Compare every communicator's ranks on the collectives all of them have launched */
void nprof_compare_all(struct nprof *pf);

#endif /* NT_NCCLPROF_PRIV_H */
