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
#include "snapshot.h"

struct nccl_state;

/* seq_off(ctx, lib) gives comm->seqNumber's offset for a library slot, -1 if unknown */
struct nccl_state *nccl_state__new(int (*seq_off)(void *ctx, int lib), void *ctx);
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

/*
 * Read comm->seqNumber[] of every known communicator from the ranks' memory, and compare the
 * ranks of each communicator (who is behind).
 */
void nccl_state__sample(struct nccl_state *s, uint64_t now);

/* The communicators, destroyed ones too (with their final counts): valid until the next call. */
int nccl_state__comms(struct nccl_state *s, struct snap_comm **out);

/* The per-process part of a snapshot record: threads, comms, settings count... NULL if none */
json_t *nccl_state__proc_json(const struct nccl_state *s, int pid, uint64_t now);

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

/* pure: NCCL socket type number to name ("bootstrap", "proxy", "net", "ib", "ras") */
const char *nccl_socket_type_name(int type);

/*
 * The IB handshakes of the proxy threads, from the BPF side's phase stacks (stack: a tracer
 * lookup), for processes that use verbs. Each tick.
 */
void nccl_state__sample_ib(struct nccl_state *s, uint64_t now,
			   int (*stack)(void *ctx, int tid, struct nt_phase_stack *out), void *ctx);

#endif /* NT_NCCLSTATE_H */
