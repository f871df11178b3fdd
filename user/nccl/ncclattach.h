/* SPDX-License-Identifier: MIT */
/*
 * Putting the NCCL probes on the traced processes. A library is found in a process's
 * /proc/PID/maps (or given with --nccl-lib), examined once (symbols, offsets), given a slot, and
 * then attached per process: to every traced process that maps it, and to every process the job
 * starts afterwards, at its fork, before it loads NCCL (uprobes follow the file, so they go live
 * when the library is mapped later).
 */
#ifndef NT_NCCLATTACH_H
#define NT_NCCLATTACH_H

#include <stdbool.h>
#include "nccl/nccllib.h"
#include "trace/tracer.h"

struct nccl_attach;

struct nccl_attach_cb {
	/* a library was examined (slot >= 0), or could not be used (slot -1, err says why) */
	void (*lib)(void *ctx, int slot, const struct nccl_lib *lib, const char *err);
	/* the probes of slot went live in pid: how many attached, how many failed */
	void (*attached)(void *ctx, int pid, int slot, int nprobes, int nfailed);
	void *ctx;
};

struct nccl_attach *nccl_attach__new(struct tracer *t, bool collectives,
				     const struct nccl_attach_cb *cb);
void nccl_attach__free(struct nccl_attach *a);

/* --nccl-lib: examine path now; 0 or -errno with the reason in err. */
int nccl_attach__add_lib(struct nccl_attach *a, const char *path, char *err, size_t errlen);

/* A traced process appeared (fork, or the job itself): attach the known libraries. */
void nccl_attach__proc(struct nccl_attach *a, int pid);
/*
 * pid's dynamic loader has just mapped the NCCL (or verbs) library at path, and waits (the
 * audit module): examine it and attach it now, in pid and every process of the job.
 */
void nccl_attach__loaded(struct nccl_attach *a, int pid, const char *path);
/* Look for NCCL in the maps of pid (called each tick until it has one). */
void nccl_attach__scan(struct nccl_attach *a, int pid);
/*
 * The public collective-call probes (NP_FIRST, only on libraries without internal transport
 * symbols): off once pid's first collectives are done, on again for a new communicator.
 */
void nccl_attach__first(struct nccl_attach *a, int pid, bool on);
/* The process exited: drop its links. */
void nccl_attach__exit(struct nccl_attach *a, int pid);
/* Does pid have slot's probes? */
bool nccl_attach__has(const struct nccl_attach *a, int pid);
const struct nccl_lib *nccl_attach__lib(const struct nccl_attach *a, int slot);
/* The slot of the NCCL library attached in pid (not libibverbs), -1 if none */
int nccl_attach__nccl_slot(const struct nccl_attach *a, int pid);

#endif /* NT_NCCLATTACH_H */
