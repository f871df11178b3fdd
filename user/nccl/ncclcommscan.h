/* SPDX-License-Identifier: MIT */
/*
 * attach: the communicators a rank made before nccltrace came, found in its memory. NCCL
 * (2.21+) brackets each struct ncclComm with NCCL_MAGIC, startMagic its first member and
 * endMagic its last, set at init and zeroed by commFree (include/comm.h, init.cc): the rank's
 * private anonymous mappings and [heap] are read (process_vm_readv, within caps of bytes and
 * time) for the magic, and a candidate is kept only where endMagic, rank, nRanks and
 * commHash agree with a live communicator.
 */
#ifndef NT_NCCLCOMMSCAN_H
#define NT_NCCLCOMMSCAN_H

#include <stdbool.h>
#include <stdint.h>
#include "nccltrace.h"

#define NCCL_COMM_MAGIC 0x0280028002800280ULL
/*
 * Per process: the mappings searched whole, smallest first, up to this much memory or this
 * long; what is left then only at its page starts (probe_map), until the whole scan's time
 */
#define COMM_SCAN_BYTES_MAX (1ULL << 30)
#define COMM_SCAN_FULL_NS   (300 * 1000000ULL)
#define COMM_SCAN_NS_MAX    (500 * 1000000ULL)

/* What a candidate's fields read back as */
struct comm_cand {
	uint64_t start_magic, end_magic, hash;
	int32_t rank, nranks;
};

struct comm_found {
	uint64_t addr, hash;
	int rank, nranks;
};

struct comm_scan_stats {
	uint64_t bytes;		/* read and searched, every word */
	uint64_t probed_bytes;	/* searched at the page starts only */
	uint64_t skipped_bytes; /* in mappings left out: past the time cap */
	uint64_t ns;
	int maps, probed, skipped; /* mappings searched whole, at page starts, not at all */
	int candidates;		   /* startMagic hits */
	bool capped;		   /* the full search stopped at its byte or time cap */
};

/* Pure: NULL when c is a live communicator's, else why not ("endMagic differs"...) */
const char *comm_cand_reject(const struct comm_cand *c);

/*
 * Pure: is this line of /proc/PID/maps a mapping the scan searches (private, read-write,
 * anonymous or [heap], not a stack)? Its range in lo..hi.
 */
bool comm_scan_map_wanted(const char *line, uint64_t *lo, uint64_t *hi);

/*
 * Search pid's memory for communicators (offsets o of its NCCL: endMagic, rank, nRanks,
 * commHash). Returns how many were put in out (at most max), or -errno (-ENOTSUP: o has no
 * endMagic, an NCCL before 2.21 or one without DWARF). st says what it cost.
 */
int comm_scan(int pid, const struct nt_nccl_offsets *o, struct comm_found *out, int max,
	      struct comm_scan_stats *st);

#endif /* NT_NCCLCOMMSCAN_H */
