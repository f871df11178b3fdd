/* SPDX-License-Identifier: MIT */
/*
 * Inside nccl/: the NCCL state's own data (processes, threads, communicators, sockets), shared
 * by the files that keep it (ncclstate.c, ncclevents.c, ncclverbs.c, ncclcomms.c). Other rooms
 * see ncclstate.h only.
 */
#ifndef NT_NCCLSTATE_PRIV_H
#define NT_NCCLSTATE_PRIV_H

#include <jansson.h>
#include "nccl/nccllib.h"
#include "nccl/ncclstate.h"
#include "model/snapshot.h"
#include "util/pidix.h"

#define MAX_THREADS  64
#define MAX_COMMS    16
#define MAX_SETTINGS 256
#define MAX_SOCKS    256
#define NSEQ	     SNAP_NSEQ
struct nthread {
	int tid;
	int role; /* enum nt_probe of the start routine, 0 if none */
	int depth;
	uint16_t probe[NT_PHASE_DEPTH];
	uint64_t since[NT_PHASE_DEPTH];
	char detail[NT_PHASE_DEPTH][24]; /* "ring", "peer 3 tag 257", "proxy rank 1" */
	/* ibv_modify_qp's attributes, from its entry until its return says whether they took */
	__typeof__(((struct nt_ev_nccl *)0)->d.ib) modify;
	uint32_t modify_mask;
	bool modify_pending;
	int group_depth; /* ncclGroupStart calls not yet ended by ncclGroupEnd (NP_FIRST probes) */
	/*
	 * probe[0..seeded) came from the thread's stack at attach (ncclseed.c), not from probe
	 * entries: entered before the attach, counted from it, and replaced by a later stack
	 */
	int seeded;
	uint64_t seed_ns;   /* when that stack was taken */
	char poll_addr[48]; /* the address its latest polled connect started to, "" if none */
};

struct ncomm {
	uint64_t addr;
	int lib;
	bool gone;	      /* destroyed: its memory is NCCL's no more, never read again */
	const char *unusable; /* why its comm->sharedRes->collOpCount is not its own count */
	uint64_t enq[NSEQ];   /* collectives seen launched (--collectives) */
	struct snap_comm sc;
};

struct nsock {
	uint64_t ino;
	char label[48];
};

struct nproc {
	int pid;
	struct nthread th[MAX_THREADS];
	int nth;
	struct ncomm comm[MAX_COMMS];
	int ncomm;
	struct snap_setting set[MAX_SETTINGS]; /* name and value strdup'ed */
	int nset;
	struct nsock sock[MAX_SOCKS];
	int nsock;
	uint64_t warnings;
	uint64_t suppressed;	 /* WARN calls NCCL downgraded to INFO */
	struct snap_ib_error ib; /* count 0: none */
	struct snap_ib ibv;	 /* verbs: QPs, MRs, async events */
	bool has_ibv;
	struct snap_ib_handshake ib_hs; /* sampled from the BPF phase stacks */
	struct snap_net_poll net_poll;	/* the same */
	uint64_t phase_fixes; /* threads' phases the BPF stacks corrected (records lost) */
	uint64_t retries;
	uint64_t last_retry_ns;
	char retry_addr[64];
	char last_warning[256];
	/* the first WARN of the failure that ended with last_warning, and how many it had */
	char first_warning[256];
	int burst_warnings;
	uint64_t last_warning_ns;
	/*
	 * Collective calls done (returns outside a group, and group ends), and how many had been
	 * when the latest communicator was made: none since means its first is still running.
	 */
	uint64_t coll_returns, coll_returns_at_init;
	uint64_t setup_seen_ns; /* the last tick that saw it inside a setup, 0: never */
	/* when its outermost call last entered a setup, by class (enum snap_setup), 0: never */
	uint64_t setup_entered_ns[SNAP_SETUP_TRANSPORT + 1];
	/*
	 * attach: when its stacks were first taken (0: followed from its start), when its main
	 * thread's was (0: not yet, the thread did not stop in time), and when that showed it
	 * waiting on its GPU (0: not so)
	 */
	uint64_t attached_ns, stack_at_attach_ns, gpu_wait_at_attach_ns;
};

struct nccl_state {
	struct nproc *p;
	int n, cap;
	struct pidix pids;	/* p's pids, in its order (nstate_find) */
	struct snap_comm *snap; /* what nccl_state__comms() hands out */
	int snapcap;
	const struct nt_nccl_offsets *(*offs)(void *, int);
	void *ctx;
	struct nprof *prof; /* the profiler plugin's state in each process (ncclprof.c) */
};

/*
 * One reading of comm->sharedRes (NCCL 2.18-2.22), sampled or at ncclCommDestroy; shres 0:
 * not set yet. prev: the count kept so far, if any (have_prev).
 */
struct nccl_shres {
	uint64_t comm, shres, owner, collops, prev;
	int32_t refcount, persistent;
	bool launch_blocking; /* CUDA_LAUNCH_BLOCKING set, as NCCL's cudawrap.cc reads it */
	bool have_prev;
};

/* Pure: NULL when collops counts this communicator's collectives alone, at launch; else why not */
const char *nccl_shres_unusable(const struct nccl_shres *r);
/* ncclcomms.c: reading r of c in p, at now: the count kept, or c's counts given up for good */
void nstate_collops(struct nproc *p, struct ncomm *c, struct nccl_shres *r, uint64_t now);
/* The same, read from p's memory now (offsets o) */
void nstate_sample_collops(struct nproc *p, struct ncomm *c, const struct nt_nccl_offsets *o,
			   uint64_t now);
/*
 * The live communicator at addr in p (its hash filled in if it had none), else a new one made
 * of these (add): NULL if neither.
 */
struct ncomm *nstate_comm_seen(struct nproc *p, uint64_t addr, int lib, uint64_t hash, int rank,
			       int nranks, bool add);
/* The offsets of library slot lib, NULL if unknown */
const struct nt_nccl_offsets *nstate_offs(const struct nccl_state *s, int lib);

/* The process pid, added if new (NULL when out of memory); found only (NULL if unknown). */
struct nproc *nstate_proc(struct nccl_state *s, int pid);
const struct nproc *nstate_find(const struct nccl_state *s, int pid);
/* Thread tid of p, added if new; NULL when p has too many. */
struct nthread *nstate_thread(struct nproc *p, int tid);
/* The class of the setup (enum snap_setup) a process is in with probe its thread's outermost frame */
int nstate_setup_class(const struct nproc *p, int probe);
/* "10.0.0.2:43517" of a struct sockaddr_in or _in6 as raw bytes, "unknown" if neither */
void nstate_addr_string(const uint8_t *raw, char *buf, size_t len);
/* "ring setup": a probe's phase, else its name */
const char *nstate_probe_label(int probe);
/* "p2p setup (ring)": frame d of thread t */
void nstate_frame_label(const struct nthread *t, int d, char *buf, size_t len);
/* A dump record of type for event e: type, ts_ns, pid, tid, probe */
json_t *nstate_record(const struct nt_ev_nccl *e, const char *type);
/* Record a setting; NCCL's own read wins over the environment. False if it adds nothing. */
bool nstate_set_setting(struct nproc *p, const char *name, const char *value, bool read);
/* qp_num, state and device of q into o */
void nstate_qp_json(json_t *o, const struct snap_qp *q);
/* A verbs probe's event (NT_P_IBV_*): the state updated, and its dump record or NULL */
json_t *nstate_verbs_event(struct nproc *p, struct nthread *t, const struct nt_ev_nccl *e);
/* ncclprof.c: its state freed; a process's API call in progress as setup; its dump part */
void nprof_free(struct nprof *pf);
void nprof_proc_snap(const struct nccl_state *s, struct snap_proc *sp);
/*
 * Is a process's setup only what its public collective call's probe implies (the first after
 * init holds the lazy connect), with no internal frame to say where in it?
 */
bool nstate_setup_by_api(const struct nccl_state *s, int pid);
/* pid's plugin state read again now (ncclCommDestroy: its final counts, before it exits) */
void nprof_read_now(struct nccl_state *s, int pid, uint64_t now);
/* the profiler's part of a process's dump record (nprof_copy_json), copied out of the state */
struct nprof_copy {
	char *path; /* NULL: the plugin not found in it (then nothing is written) */
	uint32_t api_max;
	uint64_t overflow;
	struct held_pcomm *comm; /* those whose identity was read (ncclprofjson.c) */
	int ncomm;
};
/* the bytes of a block (util/block.h) pid's copy takes: 0, nothing of it is written */
size_t nprof_proc_copy_size(const struct nccl_state *s, int pid);
/* pid's copy into out, its parts taken from the block at *cur (that many bytes) */
void nprof_proc_copy(const struct nccl_state *s, int pid, struct nprof_copy *out, char **cur);
json_t *nprof_copy_json(const struct nprof_copy *c, uint64_t now);

#endif /* NT_NCCLSTATE_PRIV_H */
