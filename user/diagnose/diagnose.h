/* SPDX-License-Identifier: MIT */
/*
 * The diagnosis: a pure function from a snapshot (and config) to findings. No I/O, no globals,
 * so the unit tests drive it with synthetic snapshots.
 */
#ifndef NT_DIAGNOSE_H
#define NT_DIAGNOSE_H

#include "diagnose/finding.h"
#include "model/snapshot.h"

struct diag_config {
	/*
	 * The stall threshold: -t, the ceiling. Where a communicator's or a connection's rhythm is
	 * known (snap_comm/snap_conn gap_p99_ns), a wait counts after adapt_k x its p99 gap, never
	 * less than min_threshold_ns nor more than the ceiling; adapt_k 0 (--fixed-threshold):
	 * the ceiling always.
	 */
	uint64_t stall_threshold_ns;
	uint64_t min_threshold_ns;
	unsigned int adapt_k;
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

/* the longest stall threshold, in seconds: -t's bound, and that of a threshold read from a dump */
#define DIAG_MAX_THRESHOLD_S 86400

/*
 * The tracer's settings for a stall threshold (the ceiling; adaptive, k = 10, from 1 s): a
 * connection tried within 1 s is being tried, a straggler is behind in 16 of 64 samples, quiet
 * mode after 2 s of every communicator moving within 0.5 s. What `run` diagnoses with, and
 * `watch` and a merged `report` the same way. The threshold may come from another host's dump
 * or /state: one beyond DIAG_MAX_THRESHOLD_S is that, and one not above 0 (or NaN) 1 s.
 */
void diag_config_init(struct diag_config *cfg, double stall_threshold_s);

/* The threshold of a wait on a rhythm whose p99 gap is p99_ns (0: not known yet) */
uint64_t diag_threshold(const struct diag_config *cfg, uint64_t p99_ns);

/* Quiet mode, from tick to tick. */
struct quiet {
	bool off;	      /* the per-call hooks are (to be) detached */
	uint64_t eligible_ns; /* since when the job has been quiet-eligible, 0 if it is not */
	char why_on[96];      /* why they came back on (the last change), for the dump */
};

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
