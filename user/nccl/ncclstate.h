/* SPDX-License-Identifier: MIT */
/*
 * What the NCCL probes tell, per process: each thread's phase stack and role, the
 * communicators (rank, nranks, hash, collective counts sampled from comm->seqNumber[]), the
 * settings NCCL read, its warnings, and which TCP socket is which NCCL socket.
 */
#ifndef NT_NCCLSTATE_H
#define NT_NCCLSTATE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "nccltrace.h"
#include "model/snapshot.h"

struct nccl_state;

/* offs(ctx, lib) gives the struct offsets of a library slot (comm->seqNumber...), NULL if none */
struct nccl_state *nccl_state__new(const struct nt_nccl_offsets *(*offs)(void *ctx, int lib),
				   void *ctx);
void nccl_state__free(struct nccl_state *s);

/* Feed one probe event; returns a dump record for it (or NULL if not worth one). */
json_t *nccl_state__event(struct nccl_state *s, const struct nt_ev_nccl *e);

/* A setting from pid's environment (NCCL's own read of it, when it comes, wins). */
void nccl_state__env(struct nccl_state *s, int pid, const char *name, const char *value);

/*
 * Fill sp (by sp->pid) with its NCCL settings (read by NCCL, else from its environment), its
 * connect retries and NCCL's last WARN text. The pointers are valid until the next event.
 */
void nccl_state__proc_snap(const struct nccl_state *s, struct snap_proc *sp);
/* The last tick (now if inside is true) at which pid was inside a setup; 0: never */
uint64_t nccl_state__setup_seen(struct nccl_state *s, int pid, bool inside, uint64_t now);

/*
 * Read comm->seqNumber[] (or on NCCL 2.18-2.22 comm->sharedRes->collOpCount) of every known
 * communicator from the ranks' memory, and compare the ranks of each communicator (who is
 * behind).
 */
void nccl_state__sample(struct nccl_state *s, uint64_t now);

/*
 * attach: a communicator of pid found in its memory (ncclcommscan.h), made before the attach,
 * its counters sampled from now as for one an init probe returned. 1 if new, 0 if known
 * already, -ENOSPC.
 */
int nccl_state__comm_found(struct nccl_state *s, int pid, int lib, uint64_t addr, uint64_t hash,
			   int rank, int nranks);

/* The communicators, destroyed ones too (with their final counts): valid until the next call. */
int nccl_state__comms(struct nccl_state *s, struct snap_comm **out);

/* The per-process part of a snapshot record: threads, comms, settings count... NULL if none */
json_t *nccl_state__proc_json(const struct nccl_state *s, int pid, uint64_t now);
/*
 * The same in two steps: what it writes of pid copied out of the state, and later, while the
 * state has moved on, its JSON as of now (a calm second's snapshot, held in the dump's ring as
 * what its record is built from). The copy is a part of the caller's block (util/block.h):
 * its size (0: nothing of pid), then the copy taken from the block at *cur, which has at least
 * that many bytes (NULL: nothing of pid); the caller frees the block, nothing else.
 */
struct nccl_proc_copy;
size_t nccl_state__proc_copy_size(const struct nccl_state *s, int pid);
struct nccl_proc_copy *nccl_state__proc_copy(const struct nccl_state *s, int pid, char **cur);
json_t *nccl_proc_json(const struct nccl_proc_copy *c, uint64_t now);

/* "ring setup" etc.: the NCCL label of the socket with inode ino in pid, NULL if unknown */
const char *nccl_state__socket_label(const struct nccl_state *s, int pid, uint64_t ino);

/*
 * The innermost phase of pid's main thread (or of its thread in a phase the longest), with
 * what it is about where known: "p2p setup (ring)", "bootstrap recv (peer 3 tag 257)". False,
 * and "" in buf, if none.
 */
bool nccl_state__phase(const struct nccl_state *s, int pid, uint64_t *since_ns, char *buf,
		       size_t len);

/*
 * Is pid inside a blocking NCCL setup (communicator init, transport setup)? The outermost NCCL
 * call of its main thread, else of its thread in one the longest: SNAP_SETUP_* and since when.
 */
int nccl_state__setup(const struct nccl_state *s, int pid, uint64_t *since_ns);

/* Was that setup's outermost call entered before the attach (seeded from a stack)? */
bool nccl_state__setup_at_attach(const struct nccl_state *s, int pid);

/*
 * Are pid's first collective calls (after its latest communicator init) fewer than calls? The
 * public collective-call probes stay on until they are not (nccl_attach__first).
 */
bool nccl_state__first_window(const struct nccl_state *s, int pid, int calls);

/*
 * pure: the label of a connection the socket calls' records never labelled, from the NCCL
 * phase of the thread that made it (BPF's nt_conn.nccl_phase): a net plugin's asynchronous
 * connect or accept makes its socket inside ncclSocketReady, which is not probed, after
 * ncclSocketConnect/Accept returned. NULL: none
 */
const char *nccl_conn_phase_label(unsigned int probe);
/* pure: NCCL socket type number to name ("bootstrap", "proxy", "net", "ib", "ras") */
const char *nccl_socket_type_name(int type);

/* A visit of every thread's BPF phase stack (tracer__each_stack's shape) */
typedef int (*nccl_stacks_fn)(void *ctx, int (*fn)(void *, int, const struct nt_phase_stack *),
			      void *fnctx);

/*
 * Each tick, from the BPF side's phase stacks (the state, where the records are history):
 * every known process's threads' phases made the stacks' (a record lost or over the budget
 * leaves none behind), and the polling runs of its proxy threads: the IB handshakes (of
 * processes that use verbs) and the socket net's connects and accepts.
 */
void nccl_state__sample_stacks(struct nccl_state *s, uint64_t now, nccl_stacks_fn each, void *ctx);
/* A polling run's start or end (NT_EV_POLL): the dump's record of it */
json_t *nccl_state__poll_event(struct nccl_state *s, const struct nt_ev_poll *e);

/*
 * attach: thread tid of pid is inside these frames (innermost first) of its stack taken at
 * at_ns. The NCCL calls among them become its phases, entered at at_ns (a call entered before
 * the attach counts as entered at it), and its role where a start routine says it; a later
 * stack of a thread seeded so replaces its seeded phases. A thread the probes already follow
 * is left as it is.
 */
void nccl_state__seed_stack(struct nccl_state *s, int pid, int tid, const struct stack_frame *f,
			    int n, uint64_t at_ns);
/*
 * attach: pid's main thread was not stopped for its stack on purpose (a zombie, in
 * uninterruptible sleep, in a call a stop would break): where it is, /proc says, so it is seen
 * as a stack would have it (model/snapshot.h: snap_proc_unseen)
 */
void nccl_state__seed_refused(struct nccl_state *s, int pid, uint64_t at_ns);
/*
 * After the stacks of pid's threads were seeded: a collective call none of them shows a
 * transport setup in is a later collective, not the first one's lazy ring connect.
 */
void nccl_state__seed_done(struct nccl_state *s, int pid);

#endif /* NT_NCCLSTATE_H */
