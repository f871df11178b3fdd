/* SPDX-License-Identifier: MIT */
/*
 * The records of a live trace dump, built from what the engine holds: each a new JSON object
 * (docs/usage.md, "The trace dump", lists the types and fields).
 */
#ifndef NT_RECORDS_H
#define NT_RECORDS_H

#include <jansson.h>
#include <stdbool.h>
#include "model/model.h"
#include "model/snapshot.h"
#include "nccl/nccllib.h"
#include "nccl/ncclstate.h"
#include "trace/jobenv.h"

struct record_header {
	char **cmd;
	int ncmd;
	const char *host;
	uint64_t mono_ns, realtime_ns; /* now, on both clocks */
	int tracer_pid;
	const char *attach_mode, *attach_notes, *missing_hooks;
	double stall_threshold_s;
	double setup_cpu_s;
	const struct jobenv *env; /* what nccltrace added to the job's environment, NULL: none */
	const char *ifaces;	  /* this host's interfaces, "lo,eth0" (doctor's per-host check) */
	const char *loopback;	  /* host_loopback_id(): whose 127.0.0.1 this is (merges) */
};

json_t *record_header(const struct record_header *h);
/* supp: the records over the budget per NCCL probe (NT_P_MAX of them), NULL if unknown */
json_t *record_footer(const uint64_t stats[NT_STAT_MAX], const uint64_t *supp, uint64_t nfindings,
		      double cpu_s, int exit_status, uint64_t now);
/* {"total", "proc", "conn", "nccl", "by_probe": {"net_socket_accept": N, ...}} */
json_t *record_suppressed(const uint64_t stats[NT_STAT_MAX], const uint64_t *supp);
/* fork, exec or exit (what) of a process */
json_t *record_proc_event(const struct nt_ev_proc *e, const char *what);
/*
 * a connection's figures; label: NCCL's name for it, NULL if none. The counts that are 0, listener
 * and closed when false and blocked when neither way are left out (format 2)
 */
json_t *record_conn(const struct snap_conn *sc, uint64_t now, const char *label);
/* a TCP state change, retransmit or reset */
json_t *record_conn_event(const struct nt_ev_conn *e, const char *label);
/*
 * Whether a connection event (type NT_EV_*) goes to the dump. Every state change and reset does,
 * and every retransmit of a connection not established (SYNs); an established connection's
 * first 8 retransmits, then every 64th (each carries the count so far): a lossy link retransmits
 * for hours, and its count is in every snapshot. The model hears them all.
 */
bool record_conn_event_kept(unsigned int type, const struct nt_ev_conn *e);
/*
 * A snapshot is taken each second. Is this second's written at once? While something happens:
 * the first minute since start_ns, 30 s after a finding opened or closed (last_change_ns, 0:
 * none), busy (a finding open, the job over, a rank in NCCL setup). Otherwise the job is calm,
 * and the snapshot waits in the dump's pre-trigger ring (dump__hold), which goes to the file
 * whole when it is busy again.
 */
bool record_snapshot_busy(uint64_t now, uint64_t start_ns, uint64_t last_change_ns, bool busy);
/*
 * Of a calm job's snapshots, those that stay when the ring moves on: one in 30 s (the last kept
 * at last_kept_ns), and one that says a connection closed since the last taken (last_ns).
 * A healthy day's dump grows 30 times slower; nothing a finding needs is coarser.
 */
bool record_snapshot_kept(const struct snapshot *s, uint64_t last_kept_ns, uint64_t last_ns);
/*
 * The calm rate's times from the ring's span (dumpring.h), the default 60 s: calm from a minute
 * after the start and 30 s after a change, one kept in 30 s (NCCLTRACE_RING_S, for the tests)
 */
void record_rate_scale(unsigned ring_s);
/* a live rank inside NCCL's communicator init or transport setup */
bool snapshot_in_setup(const struct snapshot *s);
/*
 * A snapshot record as what it is built from, copied: every process (pid, rank, state, its GPU,
 * what NCCL's state holds of it: threads, communicators, last collectives), and the connections
 * open or closed since last_ns (their figures, NCCL's name for each); ns may be NULL. A calm
 * second waits in the dump's ring so, and most are dropped there without ever becoming JSON.
 * *last: the one held before (NULL: none), whose copy of a connection the new one shares where
 * nothing written of it changed; replaced by the new one (held_snapshot_free(*last) at the end).
 * bytes: about what it holds of memory. NULL: out of memory (*last unchanged).
 */
struct held_snapshot;
struct held_snapshot *record_snapshot_hold(const struct snapshot *snap, const struct nccl_state *ns,
					   uint64_t last_ns, struct held_snapshot **last,
					   size_t *bytes);
/*
 * Its record (h stays the caller's). Each connection carries its identity for the dump's delta
 * frames (dumpdelta.h DELTA_ID), from its figures: no connection's JSON is compared as text.
 */
json_t *record_snapshot_held(const struct held_snapshot *h);
/* h released (NULL: nothing); its memory freed once no later held second shares it */
void held_snapshot_free(void *h);
/*
 * Is a state record due, the last written at last_ns (0: none)? Every second while something
 * may be wrong: a finding open, a rank whose NCCL counters have not moved for a second, or
 * whose connections have moved bytes but none for a second (a rank asleep on its host is the
 * cause of waits on others, which only a merged report sees; RAS keep-alives do not count),
 * or a connection new since the last record (a merge joins hosts by them); every 30 s while
 * each rank's counters and bytes keep moving, or NCCL's counters do (quiet mode). A merged
 * report needs the first kind; the second keeps a healthy hour's dump small.
 */
bool record_state_due(const struct snapshot *s, int open_findings, uint64_t last_ns);
/* the whole snapshot as diagnose() reads it (model/snapjson.h): {"type":"state", "ts_ns", "state"} */
json_t *record_state(const struct snapshot *snap);
/* a process's rank identity and allow-listed environment */
json_t *record_identity(int pid, const struct model_proc_info *pi, uint64_t now);
json_t *record_nccl_lib(int slot, const struct nccl_lib *lib, uint64_t now);
json_t *record_nccl_attach(int pid, int slot, int nprobes, int nfailed, uint64_t now);
/* quiet mode: the per-call TCP hooks went off or came back on, and why */
json_t *record_tcp_hooks(uint64_t now, bool on, const char *why);

#endif /* NT_RECORDS_H */
